"""Shared helpers for abide's benchmarks: build, start a lab, time commands."""

import json
import os
import platform
import statistics
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Where cargo puts the build: CARGO_TARGET_DIR when set, as cargo does.
TARGET = os.path.join(ROOT, os.environ.get("CARGO_TARGET_DIR", "target"))
ABIDE = os.path.join(TARGET, "release", "abide")


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


class Origin:
    """A plain loopback HTTP/1.1 server for comparing clients on equal terms.

    One thread per connection, one request per connection (`Connection:
    close`), and nothing in it that favours one client:

    - `/ok`: 200 with a 3-byte body;
    - `/bytes/N`: 200 with N bytes (Content-Length), streamed from a fixed
      1 MiB buffer so that the server holds constant memory;
    - `/ra/KEY`: 429 with `Retry-After: 1` the first time KEY is asked for,
      200 after that; `arrivals[KEY]` keeps when each request's head arrived
      (time.monotonic()), so the gap the client waited is measured here.
    """

    CHUNK = bytes(range(256)) * 4096

    def __init__(self):
        import socket
        import threading

        self.arrivals = {}
        self._lock = threading.Lock()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(128)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        import threading

        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        import socket

        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            head = b""
            while b"\r\n\r\n" not in head:
                data = conn.recv(65536)
                if not data:
                    return
                head += data
            arrived = time.monotonic()
            path = head.split(b" ", 2)[1].decode()
            try:
                if path.startswith("/bytes/"):
                    size = int(path[len("/bytes/"):])
                    conn.sendall(self._head(200, size))
                    view = memoryview(self.CHUNK)
                    while size > 0:
                        n = min(size, len(view))
                        conn.sendall(view[:n])
                        size -= n
                elif path.startswith("/ra/"):
                    with self._lock:
                        seen = self.arrivals.setdefault(path[len("/ra/"):], [])
                        seen.append(arrived)
                        first = len(seen) == 1
                    if first:
                        conn.sendall(self._head(429, 0, "Retry-After: 1\r\n"))
                    else:
                        conn.sendall(self._head(200, 3) + b"ok\n")
                else:
                    conn.sendall(self._head(200, 3) + b"ok\n")
                conn.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    @staticmethod
    def _head(status, length, extra=""):
        reason = {200: "OK", 429: "Too Many Requests"}[status]
        return (
            f"HTTP/1.1 {status} {reason}\r\nContent-Length: {length}\r\n"
            f"Connection: close\r\n{extra}\r\n"
        ).encode()

    def close(self):
        self._sock.close()


class Nginx:
    """Debian's nginx (`nginx-light`) on a free loopback port, with
    `limit_req` at `rate` requests a second and no burst (nginx's default:
    a request sooner than 1/rate after the last one it let through is
    refused), answering 429 when it refuses. `/` serves a 3-byte file, and
    so does `/free/`, without the limit. A connection serves any number of
    requests (`keepalive_requests`), so that a count of connections shows
    the client's reuse, not nginx's default cut at 1,000.
    `counts()` reads nginx's own access log: the reference for "never too
    fast" is the server's limiter, not the client's clock."""

    def __init__(self, rate):
        import shutil
        import socket
        import tempfile

        if shutil.which("nginx") is None:
            subprocess.run(["apt-get", "install", "-y", "-qq", "nginx-light"], check=True,
                           stdout=subprocess.DEVNULL)
        self.dir = tempfile.mkdtemp(prefix="abide-bench-nginx-")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        # nginx's workers run as another user when started by root: they
        # must be able to read the file, or every answer is a 404.
        os.chmod(self.dir, 0o755)
        os.makedirs(os.path.join(self.dir, "www"))
        with open(os.path.join(self.dir, "www", "index.html"), "w") as f:
            f.write("ok\n")
        self.log = os.path.join(self.dir, "access.log")
        conf = os.path.join(self.dir, "nginx.conf")
        d = self.dir
        with open(conf, "w") as f:
            f.write(f"""
worker_processes 1;
daemon off;
error_log {d}/error.log;
pid {d}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
  log_format t '$msec $status $connection $request_uri';
  access_log {self.log} t;
  limit_req_zone $binary_remote_addr zone=z:1m rate={rate}r/s;
  limit_req_status 429;
  keepalive_requests 1000000;
  client_body_temp_path {d}/body; proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fcgi; uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
  server {{
    listen 127.0.0.1:{port};
    location / {{ limit_req zone=z; root {d}/www; try_files /index.html =404; }}
    location /free/ {{ root {d}/www; try_files /index.html =404; }}
  }}
}}
""")
        self.proc = subprocess.Popen(["nginx", "-c", conf, "-p", d],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                    break
            except OSError:
                time.sleep(0.025)
        # nginx's first limit_req entry for this client starts now; let it age.
        time.sleep(1.1)

    def lines(self):
        """(time, status, connection, path) of every request logged so far."""
        with open(self.log) as f:
            rows = [line.split() for line in f if line.strip()]
        return [(float(r[0]), int(r[1]), r[2], r[3]) for r in rows]

    def close(self):
        import shutil

        self.proc.terminate()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
