#!/usr/bin/env python3
"""abide next to curl, against the same loopback server.

Medians of whole-process wall time (start to exit) for one successful GET,
a download, and a run that waits through one `Retry-After: 1` (abide with
`--jitter 0` against a `curl --retry` loop), with the ratio abide/curl, plus
the gap the server saw between the 429 and the retry.

    python3 bench/compare.py [--runs N] [--download-runs N] [--ra-runs N] [--size MiB]

Not part of `cargo test`: it builds the release binary and takes about a
minute with the defaults.
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ABIDE, Origin, build, machine  # noqa: E402


def run(cmd):
    """Wall time and CPU time (user + system) of one run of `cmd`, in
    seconds; any exit but 0 is fatal."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    code = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {code}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def wall(cmd):
    return run(cmd)[0]


def medians(cmds, runs, warmup=3):
    """Median wall and CPU time of each command, runs interleaved so that
    drift in the machine's load affects all of them alike."""
    for cmd in cmds.values():
        for _ in range(warmup):
            run(cmd)
    times = {name: [] for name in cmds}
    for _ in range(runs):
        for name, cmd in cmds.items():
            times[name].append(run(cmd))
    return {
        name: (statistics.median(w for w, _ in ts), statistics.median(c for _, c in ts))
        for name, ts in times.items()
    }


def peak_rss_mib(cmd):
    """Peak resident set of one run, from its own VmHWM polled in /proc (the
    rusage of a child also counts its parent's memory up to its exec)."""
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = 0
    while child.poll() is None:
        try:
            with open(f"/proc/{child.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.001)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {child.returncode}")
    return peak / 1024


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200, help="GET runs per client")
    parser.add_argument("--download-runs", type=int, default=15)
    parser.add_argument("--ra-runs", type=int, default=10, help="Retry-After runs per client")
    parser.add_argument("--size", type=int, default=100, help="download size in MiB")
    parser.add_argument("--abide", default=None, help="a built abide binary to use instead of building one")
    args = parser.parse_args()
    if shutil.which("curl") is None:
        raise SystemExit("curl is not installed")
    abide = args.abide or ABIDE
    if args.abide is None:
        build()
    origin = Origin()
    state = tempfile.mkdtemp(prefix="abide-bench-compare-")
    curl = ["curl", "-sS", "-o", "/dev/null"]
    rows = []
    try:
        # One GET, defaults (file state, outcome line to stderr) and without state.
        get = medians(
            {
                "abide": [abide, "--state-dir", state, "-o", "/dev/null", f"{origin.url}/ok"],
                "abide_nostate": [abide, "--no-state", "-o", "/dev/null", f"{origin.url}/ok"],
                "curl": curl + [f"{origin.url}/ok"],
            },
            args.runs,
        )
        rows.append(("GET, median ms", get["abide"][0] * 1e3, get["curl"][0] * 1e3))
        rows.append(("GET with `--no-state`, median ms", get["abide_nostate"][0] * 1e3, get["curl"][0] * 1e3))
        rows.append(("GET, median CPU ms", get["abide"][1] * 1e3, get["curl"][1] * 1e3))

        # A download, body to stdout (a pipe to /dev/null), and to `-o FILE`.
        size = args.size << 20
        url = f"{origin.url}/bytes/{size}"
        piped = medians(
            {"abide": [abide, "--no-state", url], "curl": ["curl", "-sS", url]},
            args.download_runs,
            warmup=1,
        )
        mib = args.size
        rows.append((f"{mib} MiB to stdout, MiB/s", mib / piped["abide"][0], mib / piped["curl"][0]))
        rows.append((f"{mib} MiB to stdout, median CPU ms", piped["abide"][1] * 1e3, piped["curl"][1] * 1e3))
        out = tempfile.mkdtemp(prefix="abide-bench-out-")
        try:
            to_file = medians(
                {
                    "abide": [abide, "--no-state", "-o", os.path.join(out, "a"), url],
                    "curl": ["curl", "-sS", "-o", os.path.join(out, "c"), url],
                },
                args.download_runs,
                warmup=1,
            )
        finally:
            shutil.rmtree(out)
        rows.append((f"{mib} MiB to `-o FILE`, MiB/s", mib / to_file["abide"][0], mib / to_file["curl"][0]))
        big = f"{origin.url}/bytes/{512 << 20}"
        rows.append(
            (
                "512 MiB to stdout, peak RSS MiB",
                peak_rss_mib([abide, "--no-state", big]),
                peak_rss_mib(["curl", "-sS", big]),
            )
        )

        # One 429 with Retry-After: 1, then 200.
        walls = {"abide": [], "curl": []}
        for i in range(args.ra_runs):
            walls["abide"].append(wall([abide, "--no-state", "--jitter", "0", "-o", "/dev/null", f"{origin.url}/ra/abide-{i}"]))
            walls["curl"].append(wall(curl + ["--retry", "3", f"{origin.url}/ra/curl-{i}"]))
        ra = {name: statistics.median(ts) for name, ts in walls.items()}
        rows.append(("wait through `Retry-After: 1`, median ms", ra["abide"] * 1e3, ra["curl"] * 1e3))
        gaps = {
            name: [origin.arrivals[f"{name}-{i}"][1] - origin.arrivals[f"{name}-{i}"][0] for i in range(args.ra_runs)]
            for name in walls
        }
    finally:
        origin.close()
        shutil.rmtree(state, ignore_errors=True)

    print(f"machine: {machine()}")
    print(
        f"runs: {args.runs} GETs, {args.download_runs} downloads of {args.size} MiB, "
        f"{args.ra_runs} Retry-After runs per client; curl: {curl_version()}"
    )
    print()
    print("| case | abide | curl | abide/curl |")
    print("|---|---|---|---|")
    for name, a, c in rows:
        print(f"| {name} | {a:.2f} | {c:.2f} | {a / c:.3f} |")
    print()
    print("abide/curl is abide's number over curl's: below 1 is better for times, above 1 for MiB/s.")
    print()
    print("| gap the server saw, 429 to retry (`Retry-After: 1`) | min s | median s | max s | median overshoot ms |")
    print("|---|---|---|---|---|")
    for name, gs in gaps.items():
        median = statistics.median(gs)
        print(f"| {name} | {min(gs):.4f} | {median:.4f} | {max(gs):.4f} | {(median - 1) * 1e3:.1f} |")
    early = [g for g in gaps["abide"] if g < 1.0]
    if early:
        raise SystemExit(f"abide retried early: {early}")


def curl_version():
    first = subprocess.run(["curl", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    return " ".join(first.split()[:2])


if __name__ == "__main__":
    main()
