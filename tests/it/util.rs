//! Running the binary hermetically, and reading what it and the lab saw.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

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
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Run {
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
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Time between consecutive requests the lab recorded.
pub fn gaps(records: &[Record]) -> Vec<Duration> {
    records.windows(2).map(|w| w[1].at - w[0].at).collect()
}

/// A fresh, empty directory for one test.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("abide-it-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
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

    /// The shared test Redis, or `None` (with a note) when there is none.
    pub fn redis() -> Option<Backend> {
        match shared_redis() {
            Some(url) => Some(Backend::Redis(url.clone())),
            None => {
                eprintln!(
                    "skipped: no Redis for the Redis backend tests (set ABIDE_TEST_REDIS=redis://… \
                     or install redis-server)"
                );
                None
            }
        }
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
    pub fn start() -> Option<RedisServer> {
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
