//! SIGINT and SIGTERM end a run at once wherever it is (waiting, connecting,
//! awaiting an answer, downloading), with the outcome line written, exit 130
//! or 143, no partial output file, and the scope state left usable.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use abide::lab::Step;

use crate::util::*;

/// From the signal to the process's exit.
const PROMPT: Duration = Duration::from_millis(200);
const PATIENCE: Duration = Duration::from_secs(5);

const SIGNALS: [(i32, i32, &str); 2] = [
    (libc::SIGINT, 130, "SIGINT"),
    (libc::SIGTERM, 143, "SIGTERM"),
];

fn assert_cancelled(run: &Run, took: Duration, code: i32, name: &str) {
    assert!(took < PROMPT, "{name}: the run took {took:?} to end");
    assert_eq!(run.code, code, "{name}: {}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    let o = run.outcome();
    assert_eq!(o["outcome"], "CANCELLED", "{o}");
    assert_eq!(o["exit_code"], code);
    assert!(o["reason"].as_str().unwrap().contains(name), "{o}");
}

fn with(dir: &Path, args: &[&str]) -> std::process::Command {
    let mut cmd = abide(args);
    cmd.arg("--state-dir").arg(dir);
    cmd
}

#[test]
fn a_signal_during_a_wait_ends_the_run_and_keeps_the_servers_delay() {
    for (signal, code, name) in SIGNALS {
        let lab = scripted(vec![
            Step::new(429).header("Retry-After", "5"),
            Step::new(200),
        ]);
        let state = temp_dir(&format!("sig-wait-state-{code}"));
        let out = temp_dir(&format!("sig-wait-out-{code}"));
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
        assert_cancelled(&run, took, code, name);
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
        next.wait_for("the scope's gate", PATIENCE);
        let took = next.signal(signal);
        let next = next.finish();
        assert_cancelled(&next, took, code, name);
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
    for ((signal, code, name), (fault, step)) in SIGNALS.into_iter().zip(faults) {
        let lab = scripted(vec![step]);
        let state = temp_dir(&format!("sig-request-{fault}"));
        let scope = format!("sig-request-{fault}");
        let args = ["--scope", &scope, "--max-concurrent", "1"];
        let mut live = Live::spawn(with(&state, &[&args[..], &["-v", &lab.url()]].concat()));
        until("the request to arrive", || lab.records().len() == 1);
        let took = live.signal(signal);
        let run = live.finish();
        assert_cancelled(&run, took, code, name);
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
    for (signal, code, name) in SIGNALS {
        let mut live = Live::spawn(abide(&["--connect-timeout", "20s", &hole.url]));
        until("the connect to start", || hole.connecting());
        let took = live.signal(signal);
        let run = live.finish();
        assert_cancelled(&run, took, code, name);
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
    for ((signal, code, name), length) in SIGNALS.into_iter().zip([Some(1 << 30), None]) {
        let server = stalled_download(length);
        let out = temp_dir(&format!("sig-download-{code}"));
        let body = out.join("body");
        std::fs::write(&body, "old").unwrap();
        let mut live = Live::spawn(abide(&["-o", body.to_str().unwrap(), &server.url()]));
        until("a temporary file with the first MiB", || {
            std::fs::read_dir(&out).unwrap().any(|e| {
                let e = e.unwrap();
                e.file_name() != "body" && e.metadata().unwrap().len() == 1 << 20
            })
        });
        let took = live.signal(signal);
        let run = live.finish();
        assert_cancelled(&run, took, code, name);
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
        let (signal, code, name) = SIGNALS[0];
        let mut live = Live::spawn(abide(&[&args[..], &[&server.url()]].concat()));
        until("the request", || server.accepted() == i + 1);
        // The first MiB is on its way; the rest never comes.
        std::thread::sleep(Duration::from_millis(100));
        let took = live.signal(signal);
        let run = live.finish();
        assert_cancelled(&run, took, code, name);
    }
}
