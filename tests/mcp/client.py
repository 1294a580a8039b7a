"""A real MCP client (the official Python SDK) driving `abide mcp`.

    python client.py ABIDE LIMITED_URL HANGING_URL STATE_DIR

Starts `abide mcp` over stdio, lists its tools and calls `http_request`:
against a lab that answers 429 with a long Retry-After (twice: the second
call must not reach the lab), with a POST and a host the server does not
allow, and against a lab that never answers (the call is cancelled after
half a second). Prints one JSON report on stdout for the Rust test to judge.
"""

import json
import os
import sys
import time

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def structured(result):
    return {"is_error": bool(result.is_error), "object": result.structured_content,
            "text": [c.text for c in result.content if getattr(c, "type", "") == "text"]}


def processes_with(needle):
    """Processes whose command line holds `needle` (ours is not one)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if needle in cmdline:
            found.append(cmdline)
    return found


async def main():
    abide, limited, hanging, state = sys.argv[1:5]
    server = StdioServerParameters(
        command=abide,
        args=["mcp", "--allow-host", "127.0.0.1", "--budget", "5s", "--state-dir", state],
        env={"PATH": os.environ.get("PATH", "")},
    )
    report = {}
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            started = time.monotonic()
            init = await session.initialize()
            report["initialize_ms"] = (time.monotonic() - started) * 1000
            report["protocol"] = init.protocol_version
            report["server"] = init.server_info.name
            tools = await session.list_tools()
            report["tools"] = [
                {"name": t.name, "input": t.input_schema, "output": t.output_schema}
                for t in tools.tools
            ]
            await session.send_ping()
            first = await session.call_tool("http_request", {"url": f"{limited}/v1/items"})
            report["first"] = structured(first)
            second = await session.call_tool("http_request", {"url": f"{limited}/v1/items"})
            report["second"] = structured(second)
            post = await session.call_tool(
                "http_request", {"url": f"{limited}/v1/items", "json": {"a": 1}})
            report["post"] = structured(post)
            port = limited.rsplit(":", 1)[1]
            elsewhere = await session.call_tool(
                "http_request", {"url": f"http://localhost:{port}/v1/items"})
            report["elsewhere"] = structured(elsewhere)

            needle = "/hang-" + str(os.getpid())
            with anyio.move_on_after(0.5) as scope:
                await session.call_tool("http_request", {"url": f"{hanging}{needle}"})
            report["cancel_reached"] = scope.cancelled_caught
            report["running_at_cancel"] = len(processes_with(needle))
            left = processes_with(needle)
            deadline = time.monotonic() + 3
            while left and time.monotonic() < deadline:
                await anyio.sleep(0.05)
                left = processes_with(needle)
            report["running_after_cancel"] = left
            # The server still answers after a cancellation.
            await session.send_ping()
            report["alive_after_cancel"] = True
    print(json.dumps(report))


anyio.run(main)
