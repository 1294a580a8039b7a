"""Shared helpers for abide's benchmarks: build, start a lab, time commands."""

import json
import os
import platform
import statistics
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ABIDE = os.path.join(ROOT, "target", "release", "abide")


def build():
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)


def start_lab(*args):
    """Starts `abide lab` on a free port; returns (process, url)."""
    lab = subprocess.Popen(
        [ABIDE, "lab", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    url = json.loads(lab.stdout.readline())["url"]
    # Drain the per-request lines so the lab never blocks on a full pipe.
    import threading

    threading.Thread(target=lambda: [None for _ in lab.stdout], daemon=True).start()
    return lab, url


def timed(cmd, env=None):
    """Wall time of one run of `cmd`, in milliseconds."""
    start = time.perf_counter()
    result = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    elapsed = (time.perf_counter() - start) * 1000
    if result.returncode != 0:
        raise SystemExit(f"{cmd} exited {result.returncode}")
    return elapsed


def interleaved_medians(cmds, runs, warmup=5):
    """Median wall time of each command, run in turn (A B C A B C …) so that
    a change in the machine's load touches every command alike."""
    for cmd in cmds:
        for _ in range(warmup):
            timed(cmd)
    times = [[] for _ in cmds]
    for _ in range(runs):
        for i, cmd in enumerate(cmds):
            times[i].append(timed(cmd))
    return [statistics.median(t) for t in times]


def median_of(cmd, runs, env=None, warmup=5):
    for _ in range(warmup):
        timed(cmd, env)
    return statistics.median(timed(cmd, env) for _ in range(runs))


def machine():
    cpu = "unknown cpu"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, {cpu}"
