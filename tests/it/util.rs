//! Running the binary hermetically, and reading what it and the lab saw.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use abide::lab::{Lab, LabConfig, Record, Script, Step};
use serde_json::Value;

/// A lab that answers with `steps` (the last one repeating).
pub fn scripted(steps: Vec<Step>) -> Lab {
    Lab::start(
        0,
        LabConfig {
            script: Some(Script::new(steps)),
            ..LabConfig::default()
        },
    )
    .expect("the lab starts")
}

/// What one run of the binary left behind.
pub struct Run {
    /// -1 when a signal ended the process.
    pub code: i32,
    /// The signal that ended the process, if one did.
    pub signal: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Run {
    pub fn new(status: ExitStatus, stdout: Vec<u8>, stderr: String) -> Run {
        Run {
            code: status.code().unwrap_or(-1),
            signal: status.signal(),
            stdout,
            stderr,
        }
    }

    pub fn of(out: Output) -> Run {
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        Run::new(out.status, out.stdout, stderr)
    }

    /// The outcome line: the last line of stderr, parsed.
    pub fn outcome(&self) -> Value {
        let line = self.stderr.lines().last().unwrap_or_default();
        serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("no outcome line ({e}) in stderr:\n{}", self.stderr))
    }

    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// The binary with a clean environment: no ABIDE_* settings or proxies from
/// the machine running the tests.
pub fn abide(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_abide"));
    cmd.args(args).env_clear();
    if let Some(path) = std::env::var_os("PATH") {
        cmd.env("PATH", path);
    }
    cmd
}

pub fn run(args: &[&str]) -> Run {
    run_with_stdin(args, b"")
}

pub fn run_with_stdin(args: &[&str], stdin: &[u8]) -> Run {
    finish(abide(args), stdin)
}

pub fn finish(mut cmd: Command, stdin: &[u8]) -> Run {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("abide starts");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    Run::of(child.wait_with_output().unwrap())
}

/// Time between consecutive requests the lab recorded.
pub fn gaps(records: &[Record]) -> Vec<Duration> {
    records.windows(2).map(|w| w[1].at - w[0].at).collect()
}

/// A fresh, empty, private directory for one test. Private whatever the
/// umask: abide refuses a state directory others may write to.
pub fn temp_dir(name: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("abide-it-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

pub fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Where a test's abide processes keep their shared scope state.
pub enum Backend {
    Files(PathBuf),
    Redis(String),
}

impl Backend {
    pub fn files(test: &str) -> Backend {
        Backend::Files(temp_dir(test))
    }

    /// The shared test Redis. The tests that call this are ignored where
    /// there is none (see build.rs), so a missing one here is a failure.
    pub fn redis() -> Backend {
        let url = shared_redis().unwrap_or_else(|| {
            panic!("no Redis: set ABIDE_TEST_REDIS=redis://… or install redis-server")
        });
        Backend::Redis(url.clone())
    }

    /// The binary with `args`, on this backend.
    pub fn abide(&self, args: &[&str]) -> Command {
        let mut cmd = abide(args);
        match self {
            Backend::Files(dir) => cmd.arg("--state-dir").arg(dir),
            Backend::Redis(url) => cmd.arg("--state").arg(url),
        };
        cmd
    }
}

/// A throwaway redis-server on a free port, stopped when dropped (and, via
/// its watchdog, when the test process ends however it ends).
pub struct RedisServer {
    pub url: String,
    port: u16,
    child: std::process::Child,
}

impl RedisServer {
    /// A private server, for the tests that are ignored where redis-server
    /// is not installed (see build.rs): a missing one here is a failure.
    pub fn private() -> RedisServer {
        RedisServer::start().expect("redis-server is installed and starts")
    }

    fn start() -> Option<RedisServer> {
        let found = Command::new("redis-server")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .ok()?
            .local_addr()
            .ok()?
            .port();
        // The shell stops the server when our end of its stdin closes.
        let script = format!(
            "redis-server --port {port} --bind 127.0.0.1 --save '' --appendonly no \
             --enable-debug-command yes >/dev/null 2>&1 & pid=$!; cat >/dev/null; kill $pid"
        );
        let child = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::piped())
            .spawn()
            .ok()?;
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if std::time::Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Some(RedisServer {
            url: format!("redis://127.0.0.1:{port}"),
            port,
            child,
        })
    }

    /// Runs redis-cli against this server.
    pub fn cli(&self, args: &[&str]) -> std::process::Child {
        Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-cli runs")
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
        // Gone means refusing connections, not just signalled.
        let deadline = std::time::Instant::now() + Duration::from_secs(3);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok()
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// The Redis all backend tests share: `ABIDE_TEST_REDIS`, else one started
/// for this test binary.
fn shared_redis() -> Option<&'static String> {
    static REDIS: std::sync::OnceLock<Option<(String, Option<RedisServer>)>> =
        std::sync::OnceLock::new();
    REDIS
        .get_or_init(|| match std::env::var("ABIDE_TEST_REDIS") {
            Ok(url) if !url.is_empty() => Some((url, None)),
            _ => RedisServer::start().map(|server| (server.url.clone(), Some(server))),
        })
        .as_ref()
        .map(|(url, _)| url)
}

/// A server for faults the lab cannot script: every connection is handed,
/// on a thread of its own, to `serve`, which may write anything at all.
pub struct Raw {
    port: u16,
    accepted: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

pub fn raw(serve: impl Fn(TcpStream) + Send + Sync + 'static) -> Raw {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let serve = Arc::new(serve);
    std::thread::spawn({
        let (accepted, stop) = (Arc::clone(&accepted), Arc::clone(&stop));
        move || {
            for stream in listener.incoming() {
                if stop.load(SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                accepted.fetch_add(1, SeqCst);
                let serve = Arc::clone(&serve);
                std::thread::spawn(move || serve(stream));
            }
        }
    });
    Raw {
        port,
        accepted,
        stop,
    }
}

impl Raw {
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(SeqCst)
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        self.stop.store(true, SeqCst);
        // Wakes the accept loop so that it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Reads a request head (up to the blank line), a byte at a time so that
/// nothing after it is consumed, and returns it as text; an empty string if
/// the client went away first.
pub fn read_head(mut stream: &TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return String::new(),
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// Holds a connection open without answering until the client goes away.
pub fn hold(mut stream: TcpStream) {
    let _ = stream.read_to_end(&mut Vec::new());
    let _ = stream.shutdown(Shutdown::Both);
}

/// A listener whose accept queue is full: connecting to it hangs until the
/// client's connect timeout, like a host that drops SYNs, for as long as
/// this value lives.
pub struct BlackHole {
    pub url: String,
    port: u16,
    _listener: TcpListener,
    _queued: Vec<TcpStream>,
}

pub fn black_hole() -> BlackHole {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    // SAFETY: listen(2) on a socket we own; calling it again only changes the backlog.
    assert_eq!(unsafe { libc::listen(listener.as_raw_fd(), 0) }, 0);
    let addr = listener.local_addr().unwrap();
    let mut queued = Vec::new();
    while let Ok(stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(100)) {
        queued.push(stream);
        assert!(queued.len() < 64, "the accept queue never filled");
    }
    BlackHole {
        url: format!("http://{addr}/"),
        port: addr.port(),
        _listener: listener,
        _queued: queued,
    }
}

impl BlackHole {
    /// Whether some process is trying to connect (its SYN unanswered), as
    /// /proc/net/tcp shows: `st` 02 is SYN_SENT.
    pub fn connecting(&self) -> bool {
        let port = format!(":{:04X}", self.port);
        std::fs::read_to_string("/proc/net/tcp")
            .unwrap_or_default()
            .lines()
            .any(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                fields.len() > 3 && fields[2].ends_with(&port) && fields[3] == "02"
            })
    }
}

/// Polls until `done` holds; panics after five seconds.
pub fn until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A running `abide` whose stderr is read line by line as it comes.
pub struct Live {
    pub child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
    /// Drained as it comes, so that a large body never blocks the child.
    stdout: std::thread::JoinHandle<Vec<u8>>,
}

impl Live {
    pub fn spawn(mut cmd: Command) -> Live {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("abide starts");
        let mut out = child.stdout.take().unwrap();
        let stdout = std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = out.read_to_end(&mut bytes);
            bytes
        });
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Live {
            child,
            lines,
            seen: Vec::new(),
            stdout,
        }
    }

    /// Waits (at most `patience`) for a stderr line containing `text`.
    pub fn wait_for(&mut self, text: &str, patience: Duration) {
        let deadline = Instant::now() + patience;
        while !self.seen.iter().any(|l| l.contains(text)) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(_) => panic!("no `{text}` on stderr:\n{}", self.seen.join("\n")),
            }
        }
    }

    /// Sends `signal` and returns how long the process took to exit after it.
    pub fn signal(&mut self, signal: i32) -> Duration {
        let pid = i32::try_from(self.child.id()).unwrap();
        let sent = Instant::now();
        // SAFETY: kill(2) on our own child's pid; it has not been waited for, so
        // the pid cannot have been reused.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
        self.child.wait().unwrap();
        sent.elapsed()
    }

    /// Whether the process ends within five seconds; if not, it is killed,
    /// so that a test that fails leaves nothing hanging.
    pub fn ends(&mut self) -> bool {
        let start = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            if start.elapsed() > Duration::from_secs(5) {
                let _ = self.child.kill();
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        true
    }

    /// The finished run: exit code, stdout, and all of stderr.
    pub fn finish(mut self) -> Run {
        let status = self.child.wait().unwrap();
        self.seen.extend(self.lines.iter());
        Run::new(status, self.stdout.join().unwrap(), self.seen.join("\n"))
    }
}

/// How a [`Ranged`] server ends the body of one answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// It sends the whole body.
    Never,
    /// It sends this many bytes of the body, then closes cleanly (FIN).
    Close(u64),
    /// It sends this many bytes, then resets the connection (RST).
    Reset(u64),
}

/// What a [`Ranged`] server says about its one file.
#[derive(Debug, Clone)]
pub struct Served {
    pub body: Arc<Vec<u8>>,
    /// Accept-Ranges: bytes and ETag "v1"; without, neither is sent.
    pub ranges: bool,
    /// Honour a Range header (else always answer 200 with the whole body).
    pub honour_range: bool,
    /// HTTP/1.0 without Content-Length: the body ends when the connection does.
    pub close_delimited: bool,
    /// How each answer ends, by connection (the last one repeats).
    pub cuts: Vec<Cut>,
}

impl Served {
    pub fn file(body: Vec<u8>) -> Served {
        Served {
            body: Arc::new(body),
            ranges: true,
            honour_range: true,
            close_delimited: false,
            cuts: vec![Cut::Never],
        }
    }
}

/// A server of one file that can answer range requests, cut bodies short,
/// and counts every byte of body it sends.
pub struct Ranged {
    pub raw: Raw,
    sent: Arc<std::sync::atomic::AtomicU64>,
    heads: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Ranged {
    pub fn start(served: Served) -> Ranged {
        let sent = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let heads = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (count, log) = (Arc::clone(&sent), Arc::clone(&heads));
        let raw = raw(move |stream| {
            let head = read_head(&stream);
            let cut = {
                let mut heads = log.lock().unwrap();
                heads.push(head.clone());
                served.cuts[(heads.len() - 1).min(served.cuts.len() - 1)]
            };
            serve_range(stream, &head, &served, cut, &count);
        });
        Ranged { raw, sent, heads }
    }

    pub fn url(&self) -> String {
        self.raw.url()
    }

    /// Bytes of body sent so far, over all connections.
    pub fn sent(&self) -> u64 {
        self.sent.load(SeqCst)
    }

    /// The request heads received, lower-cased.
    pub fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

fn serve_range(
    mut stream: TcpStream,
    head: &str,
    served: &Served,
    cut: Cut,
    count: &std::sync::atomic::AtomicU64,
) {
    let size = served.body.len() as u64;
    let asked = head.lines().find_map(|l| {
        let l = l.to_ascii_lowercase();
        l.strip_prefix("range: bytes=")?
            .trim()
            .strip_suffix('-')?
            .parse::<u64>()
            .ok()
    });
    let if_range = head.lines().find_map(|l| {
        l.to_ascii_lowercase()
            .strip_prefix("if-range: ")
            .map(str::to_string)
    });
    let current = if_range.is_none_or(|v| v.trim() == "\"v1\"");
    let start = asked.filter(|&n| served.honour_range && current && n < size);
    if asked == Some(size) && served.honour_range {
        let out = format!(
            "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */{size}\r\nContent-Length: 0\r\n\r\n"
        );
        let _ = stream.write_all(out.as_bytes());
        return;
    }
    let mut out = match start {
        Some(n) => format!(
            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {n}-{}/{size}\r\nContent-Length: {}\r\n",
            size - 1,
            size - n
        ),
        None if served.close_delimited => "HTTP/1.0 200 OK\r\n".to_string(),
        None => format!("HTTP/1.1 200 OK\r\nContent-Length: {size}\r\n"),
    };
    if served.ranges {
        out.push_str("Accept-Ranges: bytes\r\nETag: \"v1\"\r\n");
    }
    out.push_str("\r\n");
    if stream.write_all(out.as_bytes()).is_err() {
        return;
    }
    let from = start.unwrap_or(0) as usize;
    let until = match cut {
        Cut::Never => served.body.len(),
        Cut::Close(n) | Cut::Reset(n) => (from + n as usize).min(served.body.len()),
    };
    for chunk in served.body[from..until].chunks(64 * 1024) {
        if stream.write_all(chunk).is_err() {
            return;
        }
        count.fetch_add(chunk.len() as u64, SeqCst);
    }
    if let Cut::Reset(_) = cut {
        // Let the client read what was sent, then reset: SO_LINGER 0 makes
        // close(2) send RST instead of FIN.
        std::thread::sleep(Duration::from_millis(50));
        reset(&stream);
    }
}

/// Closes `stream` with a TCP reset.
pub fn reset(stream: &TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt(2) on a socket we own, with a correctly sized value.
    let done = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(done, 0);
}

/// Bytes that do not repeat in any short period, so that a piece put at the
/// wrong offset changes the digest.
pub fn noise(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

pub fn sha256(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// An HTTPS server on 127.0.0.1 (python3's ssl module) with a fresh
/// self-signed certificate (`openssl req -x509`, so CA:TRUE) for 127.0.0.1,
/// answering every GET with 200 `ok`; stopped when dropped.
pub struct TlsServer {
    pub url: String,
    /// The server's certificate, PEM.
    pub cert: PathBuf,
    child: Child,
}

/// A self-signed certificate and its key in `dir`, as `openssl req -x509` makes them.
pub fn self_signed(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let (cert, key) = (
        dir.join(format!("{name}.pem")),
        dir.join(format!("{name}.key")),
    );
    let made = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args([
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl runs (the TLS tests need it)");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    (cert, key)
}

pub fn tls_server(dir: &Path) -> TlsServer {
    let (cert, key) = self_signed(dir, "server");
    let script = r#"
import http.server, ssl, sys
class Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", 0), Ok)
tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
tls.load_cert_chain(sys.argv[1], sys.argv[2])
server.socket = tls.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;
    python_tls(script, &[&cert, &key], cert.clone())
}

/// Runs a python3 HTTPS `script` with `args`; the script prints its port
/// once it listens. `cert` is the server's certificate.
pub fn python_tls(script: &str, args: &[&Path], cert: PathBuf) -> TlsServer {
    let mut child = Command::new("python3")
        .args(["-c", script])
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs (the TLS tests need it)");
    let mut port = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    TlsServer {
        url: format!("https://127.0.0.1:{}/", port.trim()),
        cert,
        child,
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of every file in a state directory (and its subdirectories),
/// so that a test that checks them all cannot pass on an empty set
/// unnoticed: callers assert the list is not empty.
pub fn state_files(dir: &std::path::Path) -> Vec<String> {
    let mut texts = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            texts.extend(state_files(&path));
        } else {
            texts.push(std::fs::read_to_string(&path).unwrap());
        }
    }
    texts
}

/// A number that tells apart the scopes of tests sharing one Redis.
pub fn rand_suffix() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos()
}

/// Runs each scenario on both backends: `files::name` and `redis::name`
/// (the latter ignored, saying why, when there is no Redis; see build.rs).
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod files {
            $(#[test]
            fn $name() {
                super::$name(&crate::util::Backend::files(concat!("files-", stringify!($name))));
            })*
        }
        mod redis {
            $(#[test]
            #[cfg_attr(no_redis, ignore = "no Redis: install redis-server or set ABIDE_TEST_REDIS")]
            fn $name() {
                super::$name(&crate::util::Backend::redis());
            })*
        }
    };
}
