//! Defaults never overrule what was asked: `--attempts N` gets its N
//! attempts against a service that is not up yet, however the scope's
//! breaker opens on the way; a budget that was given still cuts. Tiny
//! backoffs (1 to 5 ms) stand in for the real 500 ms to 8 s.

use std::net::TcpListener;

use abide::lab::Step;
use serde_json::Value;

use crate::util::*;

on_both_backends!(
    twenty_attempts_against_a_refused_port_are_twenty,
    a_service_failing_nineteen_times_is_polled_until_it_answers,
    a_given_budget_still_cuts_and_a_long_server_delay_still_ends_at_once,
    a_rerun_right_after_keeps_its_attempts,
);

const TINY: [&str; 4] = ["--backoff", "1ms", "--backoff-max", "5ms"];

/// A port nothing listens on (bound, then let go).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A scope of the test's own, on a Redis other tests share.
fn scope(name: &str) -> String {
    format!("defaults-{name}-{}-{}", std::process::id(), rand_suffix())
}

/// The events of an audit log named `event`.
fn events(log: &std::path::Path, event: &str) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] == event)
        .collect()
}

/// The breaker opened, and every wait the run chose, its own backoff or
/// the scope's open breaker, was at most --backoff-max plus the jitter of a
/// shared wait (10 %): the breaker never waited longer than the run would
/// have without it.
fn no_wait_beyond_the_backoff_ceiling(log: &std::path::Path) {
    assert!(
        events(log, "breaker").iter().any(|e| e["state"] == "open"),
        "the breaker opened"
    );
    let waits = events(log, "wait");
    assert!(!waits.is_empty());
    for w in &waits {
        assert!(w["wait_ms"].as_u64().unwrap() <= 5, "{w}");
    }
}

/// A run of `--attempts 20` on `url` with tiny waits, in a fresh scope
/// named after `what`, and its `--log`.
fn twenty_attempts(b: &Backend, what: &str, url: &str) -> (Run, std::path::PathBuf) {
    let log = temp_dir(&format!("defaults-{what}-{}", rand_suffix())).join("log");
    let name = scope(what);
    let args = [
        &["--scope", &name, "--attempts", "20", "--log"][..],
        &[log.to_str().unwrap()],
        &TINY,
        &[url],
    ]
    .concat();
    (finish(b.abide(&args), b""), log)
}

fn twenty_attempts_against_a_refused_port_are_twenty(b: &Backend) {
    let url = format!("http://127.0.0.1:{}/", free_port());
    let (run, log) = twenty_attempts(b, "refused", &url);
    let o = run.outcome();
    assert_eq!(o["attempts"], 20, "{}", run.stderr);
    assert_eq!(o["history"].as_array().unwrap().len(), 20);
    // Its own failures left the breaker open: the caller learns when to come back.
    assert_eq!(
        (run.code, &o["outcome"]),
        (6, &"CIRCUIT_OPEN".into()),
        "{o}"
    );
    assert!(o["next_allowed_at"].is_string(), "{o}");
    no_wait_beyond_the_backoff_ceiling(&log);
    // The default budget stretched to the 20 attempts: 200.1 s (10 s to
    // connect each, 87 ms of backoff ceilings and their jitter), not 60 s.
    let left = events(&log, "wait")[0]["budget_left_ms"].as_u64().unwrap();
    assert!((190_000..=200_096).contains(&left), "{left} ms left");
}

fn a_service_failing_nineteen_times_is_polled_until_it_answers(b: &Backend) {
    let mut steps = vec![Step::new(503); 19];
    steps.push(Step::new(200));
    let lab = scripted(steps);
    let (run, log) = twenty_attempts(b, "503", &lab.url());
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(lab.records().len(), 20);
    assert_eq!(run.outcome()["attempts"], 20);
    no_wait_beyond_the_backoff_ceiling(&log);
}

fn a_given_budget_still_cuts_and_a_long_server_delay_still_ends_at_once(b: &Backend) {
    // Attempts at 0, 100 and 200 ms; a fourth would start at the budget's
    // end. On the command line or from the environment alike.
    for from_env in [false, true] {
        let lab = scripted(vec![Step::new(503)]);
        let name = scope("cut");
        let mut args = vec!["--scope", &name, "--attempts", "20", "--retry-delay", "0.1"];
        if !from_env {
            args.extend(["--budget", "250ms"]);
        }
        let url = lab.url();
        args.push(&url);
        let mut cmd = b.abide(&args);
        if from_env {
            cmd.env("ABIDE_BUDGET", "250ms");
        }
        let run = finish(cmd, b"");
        let o = run.outcome();
        assert_eq!(
            (run.code, &o["outcome"]),
            (5, &"BUDGET_EXHAUSTED".into()),
            "{o}"
        );
        let sent = lab.records().len();
        assert!(
            (1..=3).contains(&sent),
            "ABIDE_BUDGET {from_env}: {sent} requests"
        );
        assert_eq!(o["attempts"], sent);
    }
    // A server's delay beyond even the stretched budget (20 attempts: about
    // 340 s): at once, with the time to come back.
    let lab = scripted(vec![
        Step::new(503).header("Retry-After", "3600"),
        Step::new(200),
    ]);
    let run = finish(
        b.abide(&["--scope", &scope("long"), "--attempts", "20", &lab.url()]),
        b"",
    );
    let o = run.outcome();
    assert_eq!(
        (run.code, &o["outcome"]),
        (5, &"BUDGET_EXHAUSTED".into()),
        "{o}"
    );
    assert_eq!(lab.records().len(), 1);
    assert!(o["next_allowed_at"].is_string(), "{o}");
}

/// The retry budget is for crowds: a run that ended is none, so the same
/// command run again at once (a shell loop's next turn) is alone and keeps
/// its attempts, though the first one emptied the bucket.
fn a_rerun_right_after_keeps_its_attempts(b: &Backend) {
    let lab = scripted(vec![Step::new(503)]);
    let name = scope("rerun");
    let url = lab.url();
    let args = [
        &["--scope", &name, "--attempts", "8", "--breaker", "0"][..],
        &TINY,
        &[&url],
    ]
    .concat();
    for turn in 1..=3 {
        let run = finish(b.abide(&args), b"");
        let o = run.outcome();
        assert_eq!(
            (run.code, &o["attempts"]),
            (4, &8.into()),
            "turn {turn}: {o}"
        );
        assert_eq!(lab.records().len(), 8 * turn);
    }
}
