#!/usr/bin/env python3
"""`--rate` against a real server limiter set to the same rate.

Debian's nginx with `limit_req rate=2r/s` and no burst (the most common
limiter: a request sooner than 500 ms after the last one it let through is
answered 429). abide runs at `--rate 2/s` with one scope: 12 runs one after
the other, and 6 runs started together, each case repeated `--trials` times
with a fresh scope. The figure is the count of 429s nginx logged, beside a
shell loop that paces curl with `sleep 0.5` (the usual hand-written pacing).

    python3 bench/pacing.py [--trials N]

Not part of `cargo test`: it builds the release binary and installs
nginx-light when it is missing; about a minute with the defaults.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ABIDE, Nginx, build, machine  # noqa: E402


def abide(nginx, state, tag, n):
    return [ABIDE, "--rate", "2/s", "--attempts", "1", "--outcome", "none",
            "-o", "/dev/null", "--state-dir", state, f"{nginx.url}/{tag}/{n}"]


def refused(nginx, tag):
    rows = [r for r in nginx.lines() if r[3].startswith(f"/{tag}/")]
    return sum(1 for r in rows if r[1] == 429), len(rows), rows


def gaps(rows):
    times = sorted(r[0] for r in rows)
    return [b - a for a, b in zip(times, times[1:])]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()
    build()
    nginx = Nginx(2)
    results = {"sequential": [], "parallel": [], "curl": []}
    all_gaps = {"sequential": [], "parallel": [], "curl": []}
    try:
        for trial in range(args.trials):
            state = tempfile.mkdtemp(prefix="abide-bench-pacing-")
            tag = f"seq{trial}"
            for n in range(12):
                subprocess.run(abide(nginx, state, tag, n), stderr=subprocess.DEVNULL)
            bad, total, rows = refused(nginx, tag)
            results["sequential"].append((bad, total))
            all_gaps["sequential"] += gaps(rows)
            time.sleep(1)

            state = tempfile.mkdtemp(prefix="abide-bench-pacing-")
            tag = f"par{trial}"
            procs = [subprocess.Popen(abide(nginx, state, tag, n), stderr=subprocess.DEVNULL)
                     for n in range(6)]
            for p in procs:
                p.wait()
            bad, total, rows = refused(nginx, tag)
            results["parallel"].append((bad, total))
            all_gaps["parallel"] += gaps(rows)
            time.sleep(1)

            tag = f"curl{trial}"
            loop = (f'for n in $(seq 12); do curl -s -o /dev/null {nginx.url}/{tag}/$n; '
                    'sleep 0.5; done')
            subprocess.run(["bash", "-c", loop])
            bad, total, rows = refused(nginx, tag)
            results["curl"].append((bad, total))
            all_gaps["curl"] += gaps(rows)
            time.sleep(1)
    finally:
        nginx.close()

    print(f"machine: {machine()}")
    print(f"nginx limit_req rate=2r/s, no burst; {args.trials} trials per case\n")
    print("| case | requests | answered 429 | shortest gap (ms) | median gap (ms) |")
    print("|---|---:|---:|---:|---:|")
    names = {
        "sequential": "abide --rate 2/s, 12 runs one after another",
        "parallel": "abide --rate 2/s, 6 runs started together",
        "curl": "curl; sleep 0.5 loop, 12 runs",
    }
    for case, rows in results.items():
        bad = sum(b for b, _ in rows)
        total = sum(t for _, t in rows)
        g = all_gaps[case]
        print(f"| {names[case]} | {total} | {bad} | {min(g) * 1000:.0f} | "
              f"{statistics.median(g) * 1000:.0f} |")


if __name__ == "__main__":
    main()
