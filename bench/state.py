#!/usr/bin/env python3
"""What the shared scope state costs a run.

Median wall time (process start to exit) of a successful loopback GET with
and without state, and with 16 processes contending for one scope.

    python3 bench/state.py [--runs N]
"""

import argparse
import concurrent.futures
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ABIDE, build, interleaved_medians, machine, start_lab, timed  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    build()
    lab, url = start_lab("--script", "200")
    state = tempfile.mkdtemp(prefix="abide-bench-state-")
    base = [ABIDE, "-o", "/dev/null", "--outcome", "none"]
    redis = start_redis()
    per_worker = max(args.runs // 16, 10)

    def contended(cmd):
        """Median run time with 16 processes looping on one scope at once."""
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            runs = pool.map(lambda _: [timed(cmd) for _ in range(per_worker)], range(16))
            return statistics.median(t for ts in runs for t in ts)

    backends = [("file state", ["--state-dir", state])]
    if redis:
        backends.append(("Redis state", ["--state", redis[1]]))
    rows = []
    try:
        cmds = [base + ["--no-state", url]] + [base + flags + [url] for _, flags in backends]
        without, *ones = interleaved_medians(cmds, args.runs)
        without_16 = contended(base + ["--no-state", url])
        rows.append(("one process, --no-state", without, None))
        for (name, _), one in zip(backends, ones):
            rows.append((f"one process, {name}", one, one - without))
        rows.append(("16 processes, --no-state", without_16, None))
        for name, flags in backends:
            many = contended(base + flags + [url])
            rows.append((f"16 processes, one scope, {name}", many, many - without_16))
    finally:
        lab.terminate()
        if redis:
            redis[0].terminate()
    print(f"machine: {machine()}")
    print(f"runs: {args.runs} per row (16 x {per_worker} when contended)")
    if not redis:
        print("(redis-server not found: Redis rows skipped)")
    print("| case | median ms | added by state |")
    print("|---|---|---|")
    for name, ms, added in rows:
        print(f"| {name} | {ms:.2f} | {'' if added is None else f'{added:+.2f} ms'} |")


def start_redis():
    """A throwaway redis-server on a free port: (process, url), or None."""
    import shutil
    import socket
    import subprocess
    import time

    if not shutil.which("redis-server"):
        return None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return proc, f"redis://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    proc.terminate()
    return None


if __name__ == "__main__":
    main()
