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
