//! SIGINT, SIGTERM, SIGHUP and SIGQUIT end a run at once wherever it is
//! (waiting, connecting, awaiting an answer, downloading), with the outcome
//! line written, no partial output file, the scope state left usable, and
//! then the process ended by that same signal.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use abide::lab::Step;

use crate::util::*;

/// From the signal to the process's exit.
const PROMPT: Duration = Duration::from_millis(200);
const PATIENCE: Duration = Duration::from_secs(5);
/// What a Redis that never answers may cost, uninterruptibly.
const STATE_TIMEOUT: Duration = Duration::from_millis(500);

const SIGNALS: [(i32, &str); 4] = [
    (libc::SIGINT, "SIGINT"),
    (libc::SIGTERM, "SIGTERM"),
    (libc::SIGHUP, "SIGHUP"),
    (libc::SIGQUIT, "SIGQUIT"),
];

/// The outcome line says CANCELLED with the status a shell reports for the
/// signal, and the process did end by the signal.
fn assert_cancelled(run: &Run, took: Duration, signal: i32, name: &str) {
    assert!(took < PROMPT, "{name}: the run took {took:?} to end");
    assert_eq!(run.signal, Some(signal), "{name}: {}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    let o = run.outcome();
    assert_eq!(o["outcome"], "CANCELLED", "{o}");
    assert_eq!(o["exit_code"], 128 + signal);
    assert!(o["reason"].as_str().unwrap().contains(name), "{o}");
}

/// The binary with no core dump: SIGQUIT's default action writes one.
fn coreless(args: &[&str]) -> Command {
    let mut cmd = abide(args);
    // SAFETY: setrlimit(2) is async-signal-safe and touches only the child.
    unsafe {
        cmd.pre_exec(|| {
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            Ok(())
        });
    }
    cmd
}

fn with(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = coreless(args);
    cmd.arg("--state-dir").arg(dir);
    cmd
}

#[test]
fn a_signal_during_a_wait_ends_the_run_and_keeps_the_servers_delay() {
    for (signal, name) in SIGNALS {
        let lab = scripted(vec![
            Step::new(429).header("Retry-After", "5"),
            Step::new(200),
        ]);
        let state = temp_dir(&format!("sig-wait-state-{signal}"));
        let out = temp_dir(&format!("sig-wait-out-{signal}"));
        let body = out.join("body");
        let mut live = Live::spawn(with(
            &state,
            &[
                "-v",
                "--jitter",
                "0",
                "-o",
                body.to_str().unwrap(),
                &lab.url(),
            ],
        ));
        live.wait_for("waiting ", PATIENCE);
        let took = live.signal(signal);
        let run = live.finish();
        assert_cancelled(&run, took, signal, name);
        let o = run.outcome();
        assert_eq!(o["attempts"], 1);
        assert_eq!(o["history"][0]["status"], 429);
        assert_eq!(lab.records().len(), 1, "nothing sent after the signal");
        assert!(files_in(&out).is_empty(), "{:?}", files_in(&out));
        // The instruction names the time the server gave.
        let at = o["next_allowed_at"]
            .as_str()
            .expect("the server's delay is kept");
        assert!(o["instruction"].as_str().unwrap().contains(at), "{o}");

        // The delay was published before the wait: the next run waits for
        // the scope's gate, and a signal ends that wait too, nothing sent.
        let mut next = Live::spawn(with(&state, &["-v", &lab.url()]));
        next.wait_for("the gate of the API at", PATIENCE);
        let took = next.signal(signal);
        let next = next.finish();
        assert_cancelled(&next, took, signal, name);
        assert_eq!(next.outcome()["attempts"], 0);
        assert_eq!(lab.records().len(), 1);
    }
}

#[test]
fn a_signal_while_awaiting_the_answer_cuts_the_request_and_frees_its_slot() {
    let faults = [
        ("hang", Step::new(200).hang()),
        ("delay", Step::new(200).delay(Duration::from_secs(5))),
    ];
    for ((signal, name), (fault, step)) in SIGNALS.into_iter().zip(faults.iter().cycle()) {
        let lab = scripted(vec![step.clone()]);
        let state = temp_dir(&format!("sig-request-{fault}-{signal}"));
        let scope = format!("sig-request-{fault}-{signal}");
        let args = ["--scope", &scope, "--max-concurrent", "1"];
        let mut live = Live::spawn(with(&state, &[&args[..], &["-v", &lab.url()]].concat()));
        until("the request to arrive", || lab.records().len() == 1);
        let took = live.signal(signal);
        let run = live.finish();
        assert_cancelled(&run, took, signal, name);
        assert_eq!(run.outcome()["history"][0]["error"], "interrupted");

        // Its concurrency slot is free: the next run of the scope goes at once.
        let next_lab = scripted(vec![Step::new(200)]);
        let next = finish(with(&state, &[&args[..], &[&next_lab.url()]].concat()), b"");
        assert_eq!(next.code, 0, "{fault}: {}", next.stderr);
        assert_eq!(next.outcome()["waited_ms"], 0);
    }
}

#[test]
fn a_signal_while_connecting_ends_the_run_without_waiting_for_the_connect_timeout() {
    let hole = black_hole();
    for (signal, name) in SIGNALS {
        let mut live = Live::spawn(coreless(&["--connect-timeout", "20s", &hole.url]));
        until("the connect to start", || hole.connecting());
        let took = live.signal(signal);
        let run = live.finish();
        assert_cancelled(&run, took, signal, name);
    }
}

/// Serves a 1 GiB body: the first MiB at once, then nothing more.
fn stalled_download(length: Option<u64>) -> Raw {
    raw(move |mut stream| {
        read_head(&stream);
        let head = match length {
            Some(n) => format!("HTTP/1.1 200 OK\r\nContent-Length: {n}\r\n\r\n"),
            None => "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".to_string(),
        };
        let _ = stream.write_all(head.as_bytes());
        let _ = stream.write_all(&vec![b'x'; 1 << 20]);
        hold(stream);
    })
}

#[test]
fn a_signal_during_a_download_leaves_no_partial_file() {
    let lengths = [Some(1 << 30), None];
    for ((signal, name), length) in SIGNALS.into_iter().zip(lengths.into_iter().cycle()) {
        let server = stalled_download(length);
        let out = temp_dir(&format!("sig-download-{signal}"));
        let body = out.join("body");
        std::fs::write(&body, "old").unwrap();
        let mut live = Live::spawn(coreless(&["-o", body.to_str().unwrap(), &server.url()]));
        until("a temporary file with the first MiB", || {
            std::fs::read_dir(&out).unwrap().any(|e| {
                let e = e.unwrap();
                e.file_name() != "body" && e.metadata().unwrap().len() == 1 << 20
            })
        });
        let took = live.signal(signal);
        let run = live.finish();
        assert_cancelled(&run, took, signal, name);
        assert_eq!(files_in(&out), ["body"], "no temporary file left");
        assert_eq!(std::fs::read_to_string(&body).unwrap(), "old");
    }
}

/// A cut body is a cancellation, not a failure to retry or report.
#[test]
fn a_signal_during_a_download_to_stdout_or_on_the_last_attempt_is_a_cancellation() {
    let server = stalled_download(Some(1 << 30));
    for (i, args) in [vec![], vec!["--attempts", "1", "-o", "/dev/null"]]
        .into_iter()
        .enumerate()
    {
        let (signal, name) = SIGNALS[0];
        let mut live = Live::spawn(abide(&[&args[..], &[&server.url()]].concat()));
        until("the request", || server.accepted() == i + 1);
        // The first MiB is on its way; the rest never comes.
        std::thread::sleep(Duration::from_millis(100));
        let took = live.signal(signal);
        let run = live.finish();
        assert_cancelled(&run, took, signal, name);
    }
}

/// Ctrl-C in a terminal signals the whole foreground process group: the
/// shell and abide. bash stops a loop only if its child died of SIGINT.
#[test]
fn one_sigint_to_the_process_group_stops_a_shell_loop_around_abide() {
    for shape in [
        "while :; do \"$0\" --no-state \"$1\"; done",
        "for i in 1 2 3 4 5; do \"$0\" --no-state \"$1\"; done",
    ] {
        let lab = scripted(vec![Step::new(200).hang()]);
        let mut shell = Command::new("bash");
        shell
            .args(["-c", shape, env!("CARGO_BIN_EXE_abide"), &lab.url()])
            .env_clear()
            .process_group(0);
        let mut live = Live::spawn(shell);
        until("the first request", || lab.records().len() == 1);
        let pgid = i32::try_from(live.child.id()).unwrap();
        // SAFETY: kill(2) on the process group our own child leads.
        assert_eq!(unsafe { libc::kill(-pgid, libc::SIGINT) }, 0);
        assert!(live.ends(), "{shape}: the loop goes on");
        let run = live.finish();
        assert_eq!(run.signal, Some(libc::SIGINT), "{shape}: {}", run.stderr);
        assert_eq!(run.outcome()["outcome"], "CANCELLED");
        assert_eq!(lab.records().len(), 1, "{shape}: no second run");
    }
}

/// `nohup abide …` must survive the hangup it is there for.
#[test]
fn a_signal_ignored_at_start_stays_ignored() {
    let lab = scripted(vec![Step::new(200).hang()]);
    let mut cmd = Command::new("sh");
    cmd.args([
        "-c",
        "trap '' HUP; exec \"$0\" --no-state \"$1\"",
        env!("CARGO_BIN_EXE_abide"),
        &lab.url(),
    ])
    .env_clear();
    let mut live = Live::spawn(cmd);
    until("the request", || lab.records().len() == 1);
    let pid = i32::try_from(live.child.id()).unwrap();
    // SAFETY: kill(2) on our own child's pid, not yet waited for.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGHUP) }, 0);
    std::thread::sleep(Duration::from_millis(100));
    assert!(live.child.try_wait().unwrap().is_none(), "SIGHUP ended it");
    let took = live.signal(libc::SIGTERM);
    assert_cancelled(&live.finish(), took, libc::SIGTERM, "SIGTERM");
}

/// A run killed outright (SIGKILL, a crash) leaves its temporary file; the
/// next run writing into that directory removes it, and only it.
#[test]
fn a_later_run_removes_the_temporary_files_of_dead_runs() {
    let server = stalled_download(Some(1 << 30));
    let out = temp_dir("sig-stale");
    let body = out.join("body");
    let mut killed = Live::spawn(abide(&["-o", body.to_str().unwrap(), &server.url()]));
    until("a temporary file", || files_in(&out).len() == 1);
    killed.child.kill().unwrap();
    killed.child.wait().unwrap();
    let left = files_in(&out);
    assert!(left[0].starts_with(".body.abide-"), "{left:?}");
    let gone = {
        let mut child = Command::new("true").spawn().unwrap();
        child.wait().unwrap();
        child.id()
    };
    // Other names, and the file of a live process (ours), stay.
    let kept = [
        format!(".other.abide-{}-0123abcd", std::process::id()),
        format!("body.abide-{gone}-0123abcd"),
        format!(".body.abide-{gone}-0123abcdz"),
        format!(".body.abide-{gone}-0123ABCD"),
        format!(".body.abide-x{gone}-0123abcd"),
    ];
    for name in &kept {
        std::fs::write(out.join(name), "x").unwrap();
    }
    std::fs::write(out.join(format!(".x.abide-{gone}-0123abcd")), "x").unwrap();
    let lab = scripted(vec![Step::new(200).body("new")]);
    let run = run(&["-o", out.join("other").to_str().unwrap(), &lab.url()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut expected: Vec<String> = kept.to_vec();
    expected.push("other".into());
    expected.sort();
    assert_eq!(files_in(&out), expected);
}

/// Signals are watched from before the state is opened: one that comes
/// while a Redis is being connected to (at most its timeout) still gets an
/// outcome line, and nothing is sent after it.
#[test]
fn a_signal_while_the_state_opens_is_a_cancellation_with_nothing_sent() {
    let hole = black_hole();
    let redis = format!("redis://{}", hole.url.trim_start_matches("http://"));
    let lab = scripted(vec![Step::new(200)]);
    let mut live = Live::spawn(coreless(&["--state", &redis, &lab.url()]));
    until("the connect to Redis to start", || hole.connecting());
    let took = live.signal(libc::SIGINT);
    let run = live.finish();
    assert_cancelled(
        &run,
        took.saturating_sub(STATE_TIMEOUT),
        libc::SIGINT,
        "SIGINT",
    );
    assert_eq!(run.outcome()["attempts"], 0);
    assert_eq!(lab.records().len(), 0, "nothing sent after the signal");
}
