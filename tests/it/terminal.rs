//! What a person at a terminal sees, for real: the binary runs in a tmux
//! pane (a real terminal emulator), and the pane's screen is read during a
//! wait, during a slow download and after the run. Off a terminal, stderr
//! must carry the outcome line alone.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::thread;
use std::time::{Duration, Instant};

use abide::lab::Step;
use serde_json::Value;

use crate::util::*;

/// A tmux server of its own (its socket in the test's directory) running
/// one command in a detached 100×20 pane; killed when dropped.
struct Pane {
    socket: PathBuf,
    exit_file: PathBuf,
}

fn sh_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

impl Pane {
    /// Runs abide with `args` in a new pane. The pane's shell records the
    /// exit code, then sleeps so that the screen survives the exit. It traps
    /// SIGINT (a handler, so abide still gets the default disposition):
    /// otherwise a Ctrl-C, which abide ends by, would end the shell too.
    fn run(dir: &Path, args: &[&str]) -> Pane {
        let exit_file = dir.join("exit");
        let mut line = format!("trap : INT; {}", sh_quote(env!("CARGO_BIN_EXE_abide")));
        for arg in args {
            line.push(' ');
            line.push_str(&sh_quote(arg));
        }
        line.push_str(&format!(
            "; echo $? > {}; sleep 600",
            sh_quote(&exit_file.to_string_lossy())
        ));
        let pane = Pane {
            socket: dir.join("tmux.sock"),
            exit_file,
        };
        pane.tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            "100",
            "-y",
            "50",
            &line,
        ]);
        pane
    }

    fn tmux(&self, args: &[&str]) -> Output {
        // A clean environment, as for every run of the binary in these tests.
        let mut cmd = Command::new("tmux");
        cmd.env_clear().arg("-S").arg(&self.socket).args(args);
        if let Some(path) = std::env::var_os("PATH") {
            cmd.env("PATH", path);
        }
        let out = cmd
            .output()
            .expect("tmux runs (the terminal tests need it: apt-get install tmux)");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Types `key` (tmux's name for it) into the pane, as a person would.
    fn press(&self, key: &str) {
        self.tmux(&["send-keys", key]);
    }

    /// The visible screen, wrapped lines joined, trailing blanks dropped.
    fn screen(&self) -> Vec<String> {
        let out = self.tmux(&["capture-pane", "-p", "-J"]);
        let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim_end().to_string())
            .collect();
        while lines.last().is_some_and(String::is_empty) {
            lines.pop();
        }
        lines
    }

    /// Polls the screen until `want` holds for it.
    fn screen_when(&self, what: &str, want: impl Fn(&[String]) -> bool) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let screen = self.screen();
            if want(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "waited 10s for {what}; the screen:\n{}",
                screen.join("\n")
            );
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for the binary to exit, then returns its code and final screen.
    fn finished(&self) -> (i32, Vec<String>) {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(code) = std::fs::read_to_string(&self.exit_file)
                .ok()
                .and_then(|text| text.trim().parse().ok())
            {
                return (code, self.screen());
            }
            assert!(
                Instant::now() < deadline,
                "abide did not finish; the screen:\n{}",
                self.screen().join("\n")
            );
            thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

/// The seconds in "attempt 2/4 in 2.4s" on the screen.
fn countdown(screen: &[String]) -> Option<f64> {
    let line = screen.iter().find(|l| l.contains("attempt 2/4 in "))?;
    let rest = line.split("attempt 2/4 in ").nth(1)?;
    rest.split('s').next()?.parse().ok()
}

/// The screen holds the outcome line and nothing else.
fn only_the_outcome(screen: &[String]) -> Value {
    assert_eq!(
        screen.len(),
        1,
        "the screen should hold the outcome line alone:\n{}",
        screen.join("\n")
    );
    serde_json::from_str(&screen[0]).expect("the one line left is the outcome line")
}

#[test]
fn a_wait_shows_a_ticking_countdown_then_leaves_the_outcome_line_alone() {
    let lab = scripted(vec![
        Step::new(429).header("Retry-After", "3"),
        Step::new(200).body("done"),
    ]);
    let dir = temp_dir("terminal-wait");
    let out = dir.join("body");
    let url = format!("{}/v1/items", lab.url());
    let pane = Pane::run(&dir, &["--jitter", "0", "-o", &out.to_string_lossy(), &url]);

    let first = pane.screen_when("the countdown", |s| countdown(s).is_some());
    let line = first.iter().find(|l| l.contains("attempt 2/4")).unwrap();
    let host = lab.url().replace("http://", "");
    assert!(
        line.contains(&format!(
            "429 from {host} · Retry-After 3s · attempt 2/4 in "
        )),
        "{line}"
    );
    assert!(
        line.contains(" · budget ") && line.ends_with(" left"),
        "{line}"
    );
    let before = countdown(&first).unwrap();
    // The loop sleeps on a condition variable meanwhile: only the steady
    // tick can move the countdown.
    let later = pane.screen_when("the countdown to tick", |s| {
        countdown(s).is_some_and(|left| left <= before - 0.3)
    });
    assert!(countdown(&later).unwrap() > 0.0);

    let (code, last) = pane.finished();
    assert_eq!(code, 0, "{}", last.join("\n"));
    let outcome = only_the_outcome(&last);
    assert_eq!(outcome["outcome"], "SUCCEEDED");
    assert_eq!(outcome["attempts"], 2);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "done");
    let records = lab.records();
    assert_eq!(records.len(), 2);
    assert!(gaps(&records)[0] >= Duration::from_secs(3));
}

#[test]
fn ctrl_c_during_the_countdown_leaves_the_outcome_line_alone() {
    let lab = scripted(vec![
        Step::new(429).header("Retry-After", "5"),
        Step::new(200),
    ]);
    let dir = temp_dir("terminal-ctrl-c");
    let pane = Pane::run(&dir, &["-o", "/dev/null", &lab.url()]);
    pane.screen_when("the countdown", |s| countdown(s).is_some());
    // The terminal echoes `^C` where the cursor is: the countdown must leave
    // room for it, or the final clear misses the countdown's line.
    pane.press("C-c");
    let (code, last) = pane.finished();
    assert_eq!(
        code, 130,
        "the shell's status for a child that SIGINT ended"
    );
    assert_eq!(only_the_outcome(&last)["outcome"], "CANCELLED");
    assert_eq!(lab.records().len(), 1);
}

#[test]
fn verbose_lines_stay_and_the_countdown_goes() {
    let lab = scripted(vec![
        Step::new(503).header("Retry-After", "1"),
        Step::new(200),
    ]);
    let dir = temp_dir("terminal-verbose");
    let pane = Pane::run(
        &dir,
        &["-v", "--jitter", "0", "-o", "/dev/null", &lab.url()],
    );
    // The heads' `>` and `<` lines (see curl.rs) aside: abide's own lines.
    let own = |screen: Vec<String>| -> Vec<String> {
        let head = |l: &String| l.starts_with("> ") || l.starts_with("< ");
        assert!(screen.iter().any(head), "-v shows the heads");
        screen.into_iter().filter(|l| !head(l)).collect()
    };
    let during = own(pane.screen_when("the countdown", |s| countdown(s).is_some()));
    assert!(during[0].starts_with("abide: attempt 1/4: GET to "));
    assert!(during[1].starts_with("abide: attempt 1/4: 503 Service Unavailable from "));
    let (code, last) = pane.finished();
    let last = own(last);
    assert_eq!(code, 0);
    assert_eq!(last.len(), 6, "{}", last.join("\n"));
    assert!(last[2].starts_with("abide: waiting 1.00s before attempt 2/4: the server asked 1s"));
    assert!(last[3].starts_with("abide: attempt 2/4: GET to "));
    assert!(last[4].starts_with("abide: attempt 2/4: 200 OK from "));
    assert_eq!(only_the_outcome(&last[5..])["outcome"], "SUCCEEDED");
}

#[test]
fn silent_draws_nothing_on_a_terminal() {
    let lab = scripted(vec![
        Step::new(429).header("Retry-After", "2"),
        Step::new(200),
    ]);
    let dir = temp_dir("terminal-silent");
    let pane = Pane::run(
        &dir,
        &["-s", "--jitter", "0", "-o", "/dev/null", &lab.url()],
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while lab.records().is_empty() {
        assert!(Instant::now() < deadline, "no request reached the lab");
        thread::sleep(Duration::from_millis(20));
    }
    // Well inside the two-second wait, where a countdown would be drawn.
    thread::sleep(Duration::from_millis(400));
    assert_eq!(lab.records().len(), 1, "still waiting");
    assert_eq!(pane.screen(), Vec::<String>::new());
    let (code, last) = pane.finished();
    assert_eq!(code, 0);
    only_the_outcome(&last);
}

/// Serves one answer of `chunks` × `chunk` bytes, one chunk every `every`.
fn trickle(chunks: usize, chunk: usize, every: Duration) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/big", listener.local_addr().unwrap());
    thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap() > 2 {
            line.clear();
        }
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            chunks * chunk
        );
        stream.write_all(head.as_bytes()).unwrap();
        for _ in 0..chunks {
            thread::sleep(every);
            if stream.write_all(&vec![b'x'; chunk]).is_err() {
                return;
            }
        }
    });
    url
}

#[test]
fn a_slow_download_shows_a_byte_bar_until_the_end() {
    let url = trickle(16, 4096, Duration::from_millis(100));
    let dir = temp_dir("terminal-download");
    let out = dir.join("big");
    let pane = Pane::run(&dir, &["-o", &out.to_string_lossy(), &url]);
    let during = pane.screen_when("the download bar", |s| {
        s.iter().any(|l| l.contains("body from 127.0.0.1"))
    });
    let bar = during.iter().find(|l| l.contains("body from")).unwrap();
    assert!(bar.contains("/64.00 KiB"), "{bar}");
    assert!(bar.contains("/s"), "the rate: {bar}");
    let (code, last) = pane.finished();
    assert_eq!(code, 0);
    assert_eq!(only_the_outcome(&last)["outcome"], "SUCCEEDED");
    assert_eq!(std::fs::metadata(&out).unwrap().len(), 16 * 4096);
}

#[test]
fn off_a_terminal_stderr_is_the_outcome_line_alone() {
    let lab = scripted(vec![
        Step::new(429).header("Retry-After", "1"),
        Step::new(200).body("done"),
    ]);
    let waited = run(&["--jitter", "0", &lab.url()]);
    let slow = run(&[
        "-o",
        "/dev/null",
        &trickle(8, 4096, Duration::from_millis(100)),
    ]);
    // A usage error too: its message is in the line's reason.
    let usage = run(&["--budget", "soon", &lab.url()]);
    assert_eq!(usage.code, 2);
    assert_eq!(usage.stderr.lines().count(), 1, "{}", usage.stderr);
    assert_eq!(usage.outcome()["outcome"], "USAGE_ERROR");
    for run in [waited, slow] {
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(
            run.stderr.lines().count(),
            1,
            "stderr holds more than the outcome line:\n{}",
            run.stderr
        );
        assert_eq!(run.outcome()["outcome"], "SUCCEEDED");
    }
    assert_eq!(lab.records().len(), 2);
}

#[test]
fn the_outcome_line_starts_on_its_own_line_after_an_open_body() {
    let lab = scripted(vec![Step::new(200).body("no newline at the end")]);
    let dir = temp_dir("terminal-open-line");
    let pane = Pane::run(&dir, &[&lab.url()]);
    let (code, screen) = pane.finished();
    assert_eq!(code, 0, "{}", screen.join("\n"));
    assert_eq!(screen[0], "no newline at the end", "{}", screen.join("\n"));
    let outcome: Value = serde_json::from_str(&screen[1]).expect("the outcome line, whole");
    assert_eq!(outcome["outcome"], "SUCCEEDED");
}

#[test]
fn a_usage_error_at_a_terminal_is_said_then_leaves_its_outcome_line() {
    let dir = temp_dir("terminal-usage");
    let pane = Pane::run(&dir, &["--budget", "soon", "http://127.0.0.1:1/"]);
    let (code, screen) = pane.finished();
    assert_eq!(code, 2, "{}", screen.join("\n"));
    assert!(
        screen[0].starts_with("error: invalid value 'soon'"),
        "{}",
        screen.join("\n")
    );
    let outcome: Value = serde_json::from_str(screen.last().unwrap()).expect("the outcome line");
    assert_eq!(outcome["outcome"], "USAGE_ERROR");
}
