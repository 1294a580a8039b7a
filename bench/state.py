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
from common import ABIDE, build, machine, median_of, start_lab, timed  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    build()
    lab, url = start_lab("--script", "200")
    state = tempfile.mkdtemp(prefix="abide-bench-state-")
    base = [ABIDE, "-o", "/dev/null", "--outcome", "none"]
    try:
        without = median_of(base + ["--no-state", url], args.runs)
        with_state = median_of(base + ["--state-dir", state, url], args.runs)
        # 16 processes at once, each running a loop of GETs against one scope.
        per_worker = max(args.runs // 16, 10)
        cmd = base + ["--state-dir", state, url]

        def worker(_):
            return [timed(cmd) for _ in range(per_worker)]

        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            contended = statistics.median(t for ts in pool.map(worker, range(16)) for t in ts)
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            base_cmd = base + ["--no-state", url]
            contended_without = statistics.median(
                t for ts in pool.map(lambda _: [timed(base_cmd) for _ in range(per_worker)], range(16)) for t in ts
            )
    finally:
        lab.terminate()
    print(f"machine: {machine()}")
    print(f"runs: {args.runs} per row (16 x {per_worker} when contended)")
    print("| case | median ms | added by state |")
    print("|---|---|---|")
    print(f"| one process, --no-state | {without:.2f} | |")
    print(f"| one process, file state | {with_state:.2f} | {with_state - without:+.2f} ms |")
    print(f"| 16 processes, --no-state | {contended_without:.2f} | |")
    print(f"| 16 processes, one scope, file state | {contended:.2f} | {contended - contended_without:+.2f} ms |")


if __name__ == "__main__":
    main()
