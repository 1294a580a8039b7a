#!/usr/bin/env python3
"""`abide --batch` against curl and xargs: the four figures of batch mode.

Debian's nginx on 127.0.0.1 (`limit_req` at 20 r/s without burst on `/`,
answering 429 when it refuses; no limit on `/free/`; a 3-byte file), its
access log the reference for what arrived (`$status`, `$connection`):

- paced: 400 items, `--parallel 8 --rate 20/s`, beside curl's own pacing
  (`curl --rate 20/s`, one process, serial): 429s, and the completion time
  against the ideal 20 s;
- learned: the same items with `--rate auto`, beside `xargs -P 8 -n 1
  curl`, which does not pace at all;
- unlimited: 2,000 small GETs on `/free/` with `--parallel 8`, beside
  `xargs -P 8 -n 1 curl -s -o /dev/null` and `curl --parallel
  --parallel-max 8`: requests per second, and the connections nginx counted;
- memory: 100,000 URL lines on `/free/`: peak RSS (the kernel's
  `ru_maxrss` of the process), beside `curl --parallel --parallel-max 8`
  with the same URLs in a config file.

Each case runs `--runs` times, the tools in turn (A B C A B C …), and the
table gives medians. A build of abide without `--batch` still gives the
peer rows (the abide rows say they were skipped).

    python3 bench/batch.py [--runs N] [--no-build] [--abide PATH] [--only CASE,...]

Not part of `cargo test`: it builds the release binary (unless
`--no-build`) and installs nginx-light when it is missing; with the
defaults, about five minutes.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import Nginx, machine  # noqa: E402

RATE = 20
PACED_ITEMS = 400
UNLIMITED_ITEMS = 2000
MEMORY_ITEMS = 100_000
CASES = ("paced", "learned", "unlimited", "memory")


def has_batch(abide):
    try:
        help_text = subprocess.run([abide, "--help"], capture_output=True, text=True).stdout
    except OSError:
        return False
    return "--batch" in help_text


class Work:
    """A set of URLs under one fresh path prefix, written as a batch file
    (one URL a line, also xargs' input) and as a curl config file."""

    def __init__(self, base, tag, count, tmp):
        self.tag = tag
        self.urls = [f"{base}/{tag}/{n}" for n in range(count)]
        self.lines = os.path.join(tmp, f"{tag}.txt")
        self.config = os.path.join(tmp, f"{tag}.curl")
        with open(self.lines, "w") as f:
            f.writelines(u + "\n" for u in self.urls)
        with open(self.config, "w") as f:
            f.writelines(f'url = "{u}"\noutput = "/dev/null"\n' for u in self.urls)


def run(cmd, stdin=None):
    """Wall time (s) and peak RSS (KiB) of one run of `cmd`. The peak comes
    from GNU time, which starts the command from its own small process: a
    child forked straight from this one counts this script's memory (the
    access log's rows, the URLs) in its `ru_maxrss`, which survives exec."""
    start = time.perf_counter()
    with tempfile.NamedTemporaryFile("r") as peak, open(stdin or os.devnull, "rb") as given:
        proc = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", peak.name, *cmd],
                                stdin=given, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        _, status, _ = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        rss = int(peak.read().split()[-1])
    proc.returncode = os.waitstatus_to_exitcode(status)
    return elapsed, rss, proc.returncode


def measure(nginx, work, cmd, stdin=None):
    elapsed, rss, code = run(cmd, stdin)
    # nginx writes its log line as each request ends; they are all in.
    rows = [r for r in nginx.lines() if f"/{work.tag}/" in r[3]]
    return {
        "elapsed": elapsed,
        "rss_mib": rss / 1024,
        "requests": len(rows),
        "r429": sum(1 for r in rows if r[1] == 429),
        "connections": len({r[2] for r in rows}),
        "exit": code,
    }


def tools(case, abide):
    """(name, command of a Work and a state directory, whether the command
    reads the URLs on stdin) of each tool of `case`."""

    def batch(*extra):
        return lambda w, state: [abide, "--batch", w.lines, "--parallel", "8", "--outcome",
                                 "none", "--state-dir", state, *extra]

    xargs = (lambda w, _: ["xargs", "-P", "8", "-n", "1", "curl", "-s", "-o", "/dev/null"], True)
    curl_parallel = (lambda w, _: ["curl", "-s", "--parallel", "--parallel-max", "8",
                                   "-K", w.config], False)
    rows = {
        "paced": [
            ("abide --batch --parallel 8 --rate 20/s", (batch("--rate", f"{RATE}/s"), False)),
            ("curl --rate 20/s (serial)",
             (lambda w, _: ["curl", "-s", "--rate", f"{RATE}/s", "-K", w.config], False)),
        ],
        "learned": [
            ("abide --batch --parallel 8 --rate auto", (batch("--rate", "auto"), False)),
            ("xargs -P 8 -n 1 curl (no pacing)", xargs),
        ],
        "unlimited": [
            ("abide --batch --parallel 8", (batch(), False)),
            ("xargs -P 8 -n 1 curl -s -o /dev/null", xargs),
            ("curl --parallel --parallel-max 8", curl_parallel),
        ],
        "memory": [
            ("abide --batch --parallel 8", (batch(), False)),
            ("curl --parallel --parallel-max 8", curl_parallel),
        ],
    }[case]
    return [(name, cmd, on_stdin) for name, (cmd, on_stdin) in rows]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-build", action="store_true", help="use the binary as it is")
    parser.add_argument("--abide", default=common.ABIDE, help="the abide binary")
    parser.add_argument("--only", default=",".join(CASES), help="cases, comma-separated")
    args = parser.parse_args()
    cases = [c for c in args.only.split(",") if c]
    unknown = set(cases) - set(CASES)
    if unknown:
        parser.error(f"unknown case(s): {', '.join(sorted(unknown))}")
    if not args.no_build:
        common.build()
    with_abide = has_batch(args.abide)
    if not with_abide:
        print(f"{args.abide} has no --batch: the abide rows are skipped", file=sys.stderr)
    tmp = tempfile.mkdtemp(prefix="abide-bench-batch-")
    nginx = Nginx(RATE)
    results = {}
    serial = 0
    try:
        for case in cases:
            count = {"paced": PACED_ITEMS, "learned": PACED_ITEMS,
                     "unlimited": UNLIMITED_ITEMS, "memory": MEMORY_ITEMS}[case]
            base = nginx.url if case in ("paced", "learned") else f"{nginx.url}/free"
            rows = [(n, c, s) for n, c, s in tools(case, args.abide)
                    if with_abide or not n.startswith("abide")]
            for _ in range(args.runs):
                for name, make, on_stdin in rows:
                    serial += 1
                    work = Work(base, f"{case}{serial}", count, tmp)
                    state = tempfile.mkdtemp(prefix="state-", dir=tmp)
                    got = measure(nginx, work, make(work, state), work.lines if on_stdin else None)
                    results.setdefault((case, name), []).append(got)
                    os.remove(work.config)
                    os.remove(work.lines)
                    # Let nginx's limiter forget this run before the next one.
                    time.sleep(1.1)
    finally:
        nginx.close()
        shutil.rmtree(tmp, ignore_errors=True)
    report(results, with_abide, args.runs)


def report(results, with_abide, runs):
    def med(rows, key):
        return statistics.median(r[key] for r in rows)

    print(f"# {machine()}; medians of {runs} interleaved runs")
    print(f"{'case':<10} {'tool':<42} {'time s':>8} {'req/s':>8} {'429s':>6} "
          f"{'requests':>8} {'conns':>6} {'RSS MiB':>8}")
    for (case, name), rows in results.items():
        elapsed = med(rows, "elapsed")
        requests = med(rows, "requests")
        print(f"{case:<10} {name:<42} {elapsed:>8.2f} {requests / elapsed:>8.1f} "
              f"{med(rows, 'r429'):>6.0f} {requests:>8.0f} {med(rows, 'connections'):>6.0f} "
              f"{med(rows, 'rss_mib'):>8.1f}")
        failed = [r["exit"] for r in rows if r["exit"] != 0]
        if failed:
            print(f"{'':<10} (exit codes other than 0: {failed})")
    for case in ("paced", "learned"):
        rows = [rs for (c, _), rs in results.items() if c == case]
        if rows:
            print(f"{case}: the ideal is {PACED_ITEMS / RATE:.0f} s ({PACED_ITEMS} items at {RATE}/s)")
    ideal = PACED_ITEMS / RATE
    for (case, name), rows in results.items():
        if case == "learned" and name.startswith("abide"):
            runs = ", ".join(f"{r['elapsed'] / ideal:.2f}× {100 * r['r429'] / r['requests']:.1f} %"
                             for r in rows)
            print(f"learned, each run (time to the ideal, share of 429s): {runs}")
    if not with_abide:
        print("abide rows skipped: this abide has no --batch")


if __name__ == "__main__":
    main()
