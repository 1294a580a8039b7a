#!/usr/bin/env python3
"""How far past --budget and -m a run ends while waiting for an answer's head.

A loopback server accepts every connection, reads the request and never
answers. abide runs against it with `--budget B` (one attempt cut at the
budget) and with `-m B --attempts 1`; the overshoot of a run is its
whole-process wall time (start to exit) minus B, so it includes starting
the process. Prints the median, 90th percentile and maximum of each.

    python3 bench/overshoot.py [--runs N] [--limit SECONDS] [--abide PATH]

`--abide PATH` measures another build (say, an older one) instead of
building this one.

Not part of `cargo test`: it builds the release binary and takes about
runs x limit x 2 seconds.
"""

import argparse
import os
import socket
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ABIDE, build, machine  # noqa: E402


def silent_server():
    """A server that reads requests and never answers; returns its URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    held = []

    def accept():
        while True:
            conn, _ = sock.accept()
            held.append(conn)  # kept open, never answered
            threading.Thread(target=lambda c=conn: drain(c), daemon=True).start()

    def drain(conn):
        try:
            while conn.recv(65536):
                pass
        except OSError:
            pass

    threading.Thread(target=accept, daemon=True).start()
    return f"http://127.0.0.1:{sock.getsockname()[1]}/"


def overshoots(cmd, limit, runs):
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out.append((time.perf_counter() - start - limit) * 1000)
    return out


def report(name, values):
    values = sorted(values)
    p90 = values[min(len(values) - 1, int(len(values) * 0.9))]
    print(
        f"{name:<28} median {statistics.median(values):6.1f} ms   "
        f"p90 {p90:6.1f} ms   max {values[-1]:6.1f} ms   (n={len(values)})"
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--limit", type=float, default=2.0)
    parser.add_argument("--abide", help="a built abide to measure instead of this one")
    args = parser.parse_args()
    if not args.abide:
        build()
    url = silent_server()
    limit = f"{args.limit}s"
    base = [args.abide or ABIDE, "--no-state", "--outcome", "none"]
    print(machine())
    print(f"overshoot past a {limit} limit, waiting for a head that never comes:")
    report("--budget", overshoots(base + ["--budget", limit, url], args.limit, args.runs))
    report(
        "-m --attempts 1",
        overshoots(base + ["-m", limit, "--attempts", "1", url], args.limit, args.runs),
    )


if __name__ == "__main__":
    main()
