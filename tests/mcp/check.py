"""A real MCP client (the official Python SDK) settling a lost write through
`abide mcp` with the tool's `check` argument.

    python check.py ABIDE ORDERS_URL STATE_DIR

Lists the tools, then POSTs an order with a task, a generated key and a
check URL (the lab answers the POST 503, then the check GET 200), and makes
one call whose check is no http(s) URL, with a password in it. Prints one
JSON report on stdout for the Rust test to judge.
"""

import json
import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def structured(result):
    return {"is_error": bool(result.is_error), "object": result.structured_content}


async def main():
    abide, orders, state = sys.argv[1:4]
    server = StdioServerParameters(
        command=abide,
        args=["mcp", "--allow-writes", "--allow-host", "127.0.0.1", "--budget", "5s",
              "--backoff", "10ms", "--state-dir", state],
        env={"PATH": os.environ.get("PATH", "")},
    )
    report = {}
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            report["input"] = tools.tools[0].input_schema
            report["description"] = tools.tools[0].description
            order = {
                "url": f"{orders}/orders",
                "method": "POST",
                "json": {"sku": "A1", "qty": 2},
                "idempotency_key": "auto",
                "task": "order-17",
                "check": orders + "/orders/by-key/{idempotency_key}",
            }
            report["order"] = structured(await session.call_tool("http_request", order))
            bad = dict(order, task="order-18", check="ftp://u:hunter2-secret@127.0.0.1/x")
            report["bad"] = structured(await session.call_tool("http_request", bad))
    print(json.dumps(report))


anyio.run(main)
