//! Writes that many runs and agents can trust: a `--task` key bound to its
//! request, the Idempotency-Key draft's 409 and 422, `--check` settling a
//! write whose effect is unknown, NEEDS_HUMAN with `--task-attempts`, the
//! `--escalate` record and the `--log` story; judged by what the servers
//! recorded.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};

use abide::lab::Step;
use serde_json::Value;

use crate::util::*;

on_both_backends!(
    a_check_that_finds_nothing_replays_the_write_once_with_the_same_key,
    a_task_belongs_to_the_request_it_was_made_for,
    a_task_spends_its_attempts_across_reruns_then_needs_a_human,
    a_killed_run_leaves_its_requests_counted_for_the_task,
    two_runs_of_one_task_at_once_share_its_attempts,
    the_log_says_what_the_retry_budget_weighed_when_it_refused,
    the_log_says_what_a_full_queue_weighed,
);

/// One request the orders server saw.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    method: String,
    path: String,
    key: Option<String>,
}

/// A small orders API that records every request. `POST /orders` answers
/// from `posts` in turn (the last repeats), `GET /orders/…` always with
/// `check`: a status, or `drop` to close the connection unanswered once the
/// request is read. A 201 names the order in `Location`; a 200 to a GET
/// is the order itself.
struct Orders {
    server: Raw,
    seen: Arc<Mutex<Vec<Seen>>>,
}

const ORDER: &str = r#"{"id":"ord_42","state":"paid"}"#;

fn orders(posts: &[&'static str], check: &'static str) -> Orders {
    let seen = Arc::new(Mutex::new(Vec::<Seen>::new()));
    let posts = posts.to_vec();
    let record = Arc::clone(&seen);
    let server = raw(move |stream| {
        // Keep-alive: one connection may carry several requests.
        while let Some(request) = read_request(&stream) {
            let answer = {
                let mut seen = record.lock().unwrap();
                let posted = seen.iter().filter(|s| s.method == "POST").count();
                seen.push(request.clone());
                match request.method.as_str() {
                    "POST" => posts[posted.min(posts.len() - 1)],
                    _ => check,
                }
            };
            if answer == "drop" {
                let _ = stream.shutdown(Shutdown::Both);
                return;
            }
            let status: u16 = answer.parse().unwrap();
            let (extra, body) = match (request.method.as_str(), status) {
                ("POST", 201) => ("location: /orders/ord_42\r\n", r#"{"id":"ord_42"}"#),
                ("GET", 200) => ("", ORDER),
                _ => ("", r#"{"error":"try later"}"#),
            };
            let _ = write!(
                &stream,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\n\r\n{body}",
                body.len()
            );
        }
    });
    Orders { server, seen }
}

/// The next request of a connection (its body read and dropped), or `None`
/// when the client went away.
fn read_request(mut stream: &TcpStream) -> Option<Seen> {
    let head = read_head(stream);
    let mut lines = head.lines();
    let mut first = lines.next()?.split_whitespace();
    let (method, path) = (first.next()?.to_string(), first.next()?.to_string());
    let header = |name: &str| {
        head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    };
    let length: usize = header("content-length").map_or(0, |n| n.parse().unwrap());
    let mut body = vec![0; length];
    stream.read_exact(&mut body).ok()?;
    Some(Seen {
        method,
        path,
        key: header("idempotency-key"),
    })
}

impl Orders {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.url())
    }

    fn seen(&self) -> Vec<(String, String)> {
        let seen = self.seen.lock().unwrap();
        seen.iter()
            .map(|s| (s.method.clone(), s.path.clone()))
            .collect()
    }

    fn keys(&self) -> Vec<Option<String>> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|s| s.key.clone())
            .collect()
    }
}

fn pair(method: &str, path: &str) -> (String, String) {
    (method.to_string(), path.to_string())
}

/// The JSON lines of a file.
fn lines_of(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_check_that_finds_the_write_reconciles_it_without_a_replay() {
    for post in ["503", "drop"] {
        let api = orders(&[post], "200");
        let dir = temp_dir(&format!("check-found-{post}"));
        let run = run(&[
            "--state-dir",
            dir.to_str().unwrap(),
            "-X",
            "POST",
            "--json",
            r#"{"item":1}"#,
            "--check",
            &api.url("/orders/latest"),
            &api.url("/orders"),
        ]);
        assert_eq!(run.code, 0, "{post}: {}", run.stderr);
        let o = run.outcome();
        assert_eq!(o["outcome"], "SUCCEEDED");
        assert_eq!(o["reconciled"], true);
        assert_eq!(o["attempts"], 1);
        assert!(
            o["reason"].as_str().unwrap().contains("the write happened"),
            "{o}"
        );
        // The body is the check's answer: the order as the server has it.
        assert_eq!(run.stdout_text(), ORDER);
        assert_eq!(
            api.seen(),
            [pair("POST", "/orders"), pair("GET", "/orders/latest")],
            "{post}: never sent again"
        );
    }
}

fn a_check_that_finds_nothing_replays_the_write_once_with_the_same_key(b: &Backend) {
    let api = orders(&["drop", "201", "503"], "404");
    let check = api.url("/orders/{idempotency_key}");
    let task = |extra: &[&str]| {
        let mut args = vec![
            "-X",
            "POST",
            "--json",
            r#"{"item":2}"#,
            "--backoff",
            "10ms",
            "--idempotency-key",
            "auto",
            "--task",
            "order-7",
        ];
        args.extend_from_slice(extra);
        let url = api.url("/orders");
        args.push(&url);
        finish(b.abide(&args), b"")
    };
    let first = task(&["--check", &check]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let o = first.outcome();
    assert_eq!(o["reconciled"], false);
    assert_eq!(o["status"], 201);
    assert_eq!(o["operation_id"], "/orders/ord_42");
    let key = o["idempotency_key"].as_str().unwrap().to_string();
    assert_eq!(
        api.seen(),
        [
            pair("POST", "/orders"),
            pair("GET", &format!("/orders/{key}")),
            pair("POST", "/orders"),
        ]
    );
    let keys = api.keys();
    assert_eq!(keys[0].as_deref(), Some(key.as_str()));
    assert_eq!(keys[0], keys[2], "replayed with the same key");
    // A rerun of the task reports what the first one created, though its
    // own answer (a 503, attempts used) did not say it.
    let rerun = task(&["--attempts", "1"]);
    assert_eq!(rerun.code, 4, "{}", rerun.stderr);
    assert_eq!(rerun.outcome()["operation_id"], "/orders/ord_42");
    assert_eq!(api.keys()[3].as_deref(), Some(key.as_str()));
}

#[test]
fn a_check_that_cannot_tell_needs_a_human_and_never_replays() {
    for check in ["500", "drop"] {
        let api = orders(&["503", "503", "201"], check);
        let dir = temp_dir(&format!("check-unclear-{check}"));
        let escalate = dir.join("escalations.jsonl");
        let log = dir.join("audit.jsonl");
        let args = |check_url: Option<&str>| {
            let mut args = vec![
                "--state-dir".to_string(),
                dir.join("state").to_str().unwrap().to_string(),
                "-X".into(),
                "POST".into(),
                "--json".into(),
                r#"{"card":"4242-secret-pan"}"#.into(),
                "--escalate".into(),
                escalate.to_str().unwrap().into(),
                "--log".into(),
                log.to_str().unwrap().into(),
            ];
            if let Some(url) = check_url {
                args.extend(["--check".to_string(), url.to_string()]);
            }
            args.push(api.url("/orders"));
            args
        };
        let with_check = args(Some(&api.url("/orders/latest")));
        let refs: Vec<&str> = with_check.iter().map(String::as_str).collect();
        let unclear = run(&refs);
        assert_eq!(unclear.code, 10, "{check}: {}", unclear.stderr);
        let o = unclear.outcome();
        assert_eq!(o["outcome"], "NEEDS_HUMAN");
        assert!(
            o["instruction"].as_str().unwrap().contains("a person"),
            "{o}"
        );
        assert_eq!(
            api.seen(),
            [pair("POST", "/orders"), pair("GET", "/orders/latest")],
            "{check}: the write is never replayed on an unclear check"
        );
        // Without --check, as before: SIDE_EFFECT_UNKNOWN, sent once.
        let without = args(None);
        let refs: Vec<&str> = without.iter().map(String::as_str).collect();
        let blind = run(&refs);
        assert_eq!(blind.code, 7, "{}", blind.stderr);
        assert_eq!(api.seen().len(), 3);
        // A success is not escalated.
        let fine = run(&refs);
        assert_eq!(fine.code, 0, "{}", fine.stderr);

        let records = lines_of(&escalate);
        let outcomes: Vec<&str> = records
            .iter()
            .map(|r| r["outcome"].as_str().unwrap())
            .collect();
        assert_eq!(outcomes, ["NEEDS_HUMAN", "SIDE_EFFECT_UNKNOWN"]);
        let first = &records[0];
        assert_eq!(first["method"], "POST");
        assert_eq!(first["attempts"][0]["status"], 503);
        assert_eq!(first["fingerprint"].as_str().unwrap().len(), 64);
        assert!(first["options"].as_array().unwrap().len() >= 2);
        let text = std::fs::read_to_string(&escalate).unwrap();
        assert!(!text.contains("4242-secret-pan"), "no request body: {text}");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&escalate).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // The log tells the check and what it said.
        let events: Vec<Value> = lines_of(&log);
        let settled: Vec<&Value> = events
            .iter()
            .filter(|e| e["event"] == "check_result")
            .collect();
        assert_eq!(settled.len(), 1, "{events:?}");
        assert_eq!(settled[0]["settled"], "unclear");
    }
}

fn a_task_belongs_to_the_request_it_was_made_for(b: &Backend) {
    let lab = scripted(vec![Step::new(201)]);
    let task = |body: &str| {
        finish(
            b.abide(&[
                "-X",
                "POST",
                "--json",
                body,
                "--idempotency-key",
                "auto",
                "--task",
                "pay-17",
                &lab.url(),
            ]),
            b"",
        )
    };
    assert_eq!(task(r#"{"amount":100}"#).code, 0);
    // Another payment under the same task id: refused unsent, not replayed.
    let other = task(r#"{"amount":250}"#);
    assert_eq!(other.code, 2, "{}", other.stderr);
    let o = other.outcome();
    assert_eq!(o["outcome"], "USAGE_ERROR");
    assert_eq!(o["attempts"], 0);
    let reason = o["reason"].as_str().unwrap();
    assert!(
        reason.contains("--task pay-17") && reason.contains("another request"),
        "{reason}"
    );
    assert_eq!(lab.records().len(), 1);
    // The same payment again: the same key, as before.
    assert_eq!(task(r#"{"amount":100}"#).code, 0);
    let records = lab.records();
    assert_eq!(records.len(), 2);
    let key = |i: usize| {
        records[i]
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("idempotency-key"))
            .map(|(_, v)| v.clone())
    };
    assert!(key(0).is_some());
    assert_eq!(key(0), key(1));
}

#[test]
fn a_keyed_409_is_retried_with_the_same_key_and_a_keyed_422_is_not() {
    let lab = scripted(vec![Step::new(409), Step::new(201)]);
    let post = |url: &str, key: Option<&str>| {
        let mut args = vec!["-X", "POST", "--json", "{}", "--backoff", "10ms"];
        if let Some(key) = key {
            args.extend(["--idempotency-key", key]);
        }
        args.push(url);
        run(&args)
    };
    let still = post(&lab.url(), Some("k-409"));
    assert_eq!(still.code, 0, "{}", still.stderr);
    let records = lab.records();
    assert_eq!(records.len(), 2);
    for r in &records {
        assert!(
            r.headers
                .iter()
                .any(|(n, v)| n.eq_ignore_ascii_case("idempotency-key") && v == "k-409")
        );
    }
    // Without a key a 409 is a conflict, not a request being processed.
    let lab = scripted(vec![Step::new(409), Step::new(201)]);
    assert_eq!(post(&lab.url(), None).code, 3);
    assert_eq!(lab.records().len(), 1);

    let lab = scripted(vec![Step::new(422), Step::new(201)]);
    let reused = post(&lab.url(), Some("k-422"));
    assert_eq!(reused.code, 3, "{}", reused.stderr);
    let o = reused.outcome();
    assert_eq!(o["outcome"], "NON_RETRYABLE");
    assert!(
        o["reason"]
            .as_str()
            .unwrap()
            .contains("k-422 was already used with another payload"),
        "{o}"
    );
    assert!(
        o["instruction"].as_str().unwrap().contains("new --task id"),
        "{o}"
    );
    assert_eq!(lab.records().len(), 1);
}

fn a_task_spends_its_attempts_across_reruns_then_needs_a_human(b: &Backend) {
    let lab = scripted(vec![Step::new(503)]);
    let dir = temp_dir(&format!("task-spent-{}", matches!(b, Backend::Redis(_))));
    let escalate = dir.join("escalations.jsonl");
    let rerun = || {
        finish(
            b.abide(&[
                "-X",
                "PUT",
                "--json",
                "{}",
                "--attempts",
                "2",
                "--backoff",
                "10ms",
                "--idempotency-key",
                "auto",
                "--task",
                "sync-482",
                "--task-attempts",
                "3",
                "--escalate",
                escalate.to_str().unwrap(),
                &lab.url(),
            ]),
            b"",
        )
    };
    let first = rerun();
    assert_eq!(first.code, 4, "{}", first.stderr);
    assert_eq!(first.outcome()["attempts"], 2);
    // One request left for the task: sent, and the task is spent.
    let second = rerun();
    assert_eq!(second.code, 10, "{}", second.stderr);
    let o = second.outcome();
    assert_eq!(o["outcome"], "NEEDS_HUMAN");
    assert_eq!(o["attempts"], 1);
    assert!(
        o["reason"].as_str().unwrap().contains("--task-attempts 3"),
        "{o}"
    );
    // And every rerun after it is refused unsent.
    let third = rerun();
    assert_eq!(third.code, 10, "{}", third.stderr);
    assert_eq!(third.outcome()["attempts"], 0);
    assert_eq!(lab.records().len(), 3, "the task's three requests, no more");
    let records = lines_of(&escalate);
    assert_eq!(records.len(), 2, "RETRY_EXHAUSTED is not escalated");
    assert_eq!(records[0]["task"], "sync-482");
    let actions: Vec<&str> = records[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["action"].as_str().unwrap())
        .collect();
    assert!(actions.contains(&"give the task more"), "{actions:?}");
    // The task's record keeps its count and its request's fingerprint, and
    // never the task id in clear.
    if let Backend::Files(state) = b {
        let texts = state_files(state);
        assert!(!texts.is_empty());
        let text = texts.concat();
        assert!(!text.contains("sync-482"), "{text}");
        let record: Value = texts
            .iter()
            .filter_map(|t| serde_json::from_str::<Value>(t).ok())
            .find(|v| v["tasks"].as_array().is_some_and(|t| !t.is_empty()))
            .expect("a record with the task");
        assert_eq!(record["tasks"][0]["sent"], 3);
        assert_eq!(
            record["tasks"][0]["fingerprint"].as_str().unwrap().len(),
            64
        );
    }
}

/// `--task-attempts 5`: a run killed by SIGKILL while its third request is
/// in flight (after two quick 503s) has counted all three in the task's
/// record, so its rerun sends the 2 left, counted at the server, not 5.
fn a_killed_run_leaves_its_requests_counted_for_the_task(b: &Backend) {
    let lab = scripted(vec![
        Step::new(503),
        Step::new(503),
        Step::new(503).hang(),
        Step::new(503),
    ]);
    let args = task_put("killed", "5", &lab.url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut killed = Live::spawn(b.abide(&args));
    until("the third request", || lab.records().len() == 3);
    killed.signal(libc::SIGKILL);
    assert!(killed.ends());
    let rerun = finish(b.abide(&args), b"");
    assert_eq!(rerun.code, 10, "{}", rerun.stderr);
    let o = rerun.outcome();
    assert_eq!(o["outcome"], "NEEDS_HUMAN");
    assert_eq!(o["attempts"], 2, "{o}");
    let records = lab.records();
    assert_eq!(
        records.len(),
        5,
        "the task's five requests, however its runs ended"
    );
    // One write: the same key on every request, the killed run's and the rerun's.
    let keys: std::collections::BTreeSet<_> = records
        .iter()
        .map(|r| r.header("idempotency-key"))
        .collect();
    assert_eq!(keys.len(), 1, "{keys:?}");
    assert!(keys.iter().all(Option::is_some));
}

/// A keyed PUT of one task on a fresh scope named after `what`, with
/// `attempts` for the run and for the task, quick backoff and no breaker.
fn task_put(what: &str, attempts: &str, url: &str) -> Vec<String> {
    let scope = format!("{what}-{}-{}", std::process::id(), rand_suffix());
    [
        "--scope",
        &scope,
        "-X",
        "PUT",
        "--json",
        "{}",
        "--attempts",
        attempts,
        "--backoff",
        "10ms",
        "--breaker",
        "0",
        "--idempotency-key",
        "auto",
        "--task",
        what,
        "--task-attempts",
        attempts,
        url,
    ]
    .map(String::from)
    .to_vec()
}

/// Two runs of one task started together (an agent that called again
/// while its first call still ran): each read a count of 0 at its start
/// and would have sent its 4; the count is taken per request, under the
/// record's lock, so the two send 4 between them.
fn two_runs_of_one_task_at_once_share_its_attempts(b: &Backend) {
    let lab = scripted(vec![
        Step::new(503).delay(std::time::Duration::from_millis(40)),
    ]);
    // Two runs of one scope retrying: the retry budget would refuse some.
    let mut args = task_put("together", "4", &lab.url());
    args.splice(0..0, ["--retry-budget".to_string(), "0".to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let first = Live::spawn(b.abide(&args));
    let second = Live::spawn(b.abide(&args));
    let runs = [first.finish(), second.finish()];
    let records = lab.records();
    assert_eq!(records.len(), 4, "the task's four requests, not eight");
    let attempts: u64 = runs
        .iter()
        .map(|run| run.outcome()["attempts"].as_u64().unwrap())
        .sum();
    assert_eq!(
        attempts,
        4,
        "{:?}",
        runs.iter().map(|r| &r.stderr).collect::<Vec<_>>()
    );
    // The run that found the task spent needs a human, as a rerun would.
    assert!(
        runs.iter()
            .any(|run| run.outcome()["outcome"] == "NEEDS_HUMAN"),
        "{:?}",
        runs.iter().map(|r| &r.stderr).collect::<Vec<_>>()
    );
}

/// A run that keeps retrying (its seventh request held unanswered) has
/// emptied the scope's retry budget; another run of the scope is refused
/// its retry, and its log says what the budget weighed: its level, its
/// capacity, the other run that spent within 10 s, and when to come back.
fn the_log_says_what_the_retry_budget_weighed_when_it_refused(b: &Backend) {
    let spender = scripted(vec![
        Step::new(500),
        Step::new(500),
        Step::new(500),
        Step::new(500),
        Step::new(500),
        Step::new(500),
        Step::new(500).hang(),
    ]);
    let lab = scripted(vec![Step::new(500)]);
    let scope = format!("refused-{}-{}", std::process::id(), rand_suffix());
    let dir = temp_dir(&format!("log-budget-{}", matches!(b, Backend::Redis(_))));
    let log = dir.join("audit.jsonl");
    let common = ["--scope", &scope, "--backoff", "10ms", "--breaker", "0"];
    let mut busy =
        Live::spawn(b.abide(&[&common[..], &["--attempts", "10", &spender.url()]].concat()));
    until("six retries spent", || spender.records().len() == 7);
    let refused = finish(
        b.abide(
            &[
                &common[..],
                &[
                    "--attempts",
                    "3",
                    "--log",
                    log.to_str().unwrap(),
                    &lab.url(),
                ],
            ]
            .concat(),
        ),
        b"",
    );
    busy.signal(libc::SIGTERM);
    assert_eq!(refused.code, 4, "{}", refused.stderr);
    let o = refused.outcome();
    assert!(
        o["reason"]
            .as_str()
            .unwrap()
            .contains("the scope's retry budget is spent"),
        "{o}"
    );
    assert_eq!(lab.records().len(), 1, "the retry was refused unsent");
    let entries = lines_of(&log);
    let events: Vec<&str> = entries
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        events,
        ["start", "request", "response", "retry_refused", "outcome"]
    );
    let e = &entries[3];
    assert_eq!(e["scope"], scope.as_str());
    assert_eq!(e["before_attempt"], 2);
    assert!(e["retries_left"].as_f64().unwrap() < 1.0, "{e}");
    assert_eq!(e["capacity"], 5.0);
    assert_eq!(e["others_spent"], 1, "{e}");
    assert_eq!(e["crowd_s"], 10);
    assert!(e["refills_in_ms"].as_u64().unwrap() <= 10_000, "{e}");
    assert_eq!(e["next_allowed_at"], o["next_allowed_at"], "{e}");
    assert!(
        rfc3339_time(e["next_allowed_at"].as_str().unwrap())
            > rfc3339_time(e["time"].as_str().unwrap())
    );
}

/// A Retry-After closes the scope's gate for 2 s; with `--max-delayed 1`,
/// one run waits on it and the next ends at once, its log saying how many
/// waited, the limit, and when the gate opens.
fn the_log_says_what_a_full_queue_weighed(b: &Backend) {
    let lab = scripted(vec![
        Step::new(429).header("Retry-After", "2"),
        Step::new(200),
    ]);
    let scope = format!("queue-{}-{}", std::process::id(), rand_suffix());
    let dir = temp_dir(&format!("log-queue-{}", matches!(b, Backend::Redis(_))));
    let (waiter_log, log) = (dir.join("waiter.jsonl"), dir.join("audit.jsonl"));
    let first = finish(
        b.abide(&["--scope", &scope, "--attempts", "1", &lab.url()]),
        b"",
    );
    assert_eq!(first.code, 4, "{}", first.stderr);
    let queued = |log: &Path| {
        b.abide(&[
            "--scope",
            &scope,
            "--max-delayed",
            "1",
            "--log",
            log.to_str().unwrap(),
            &lab.url(),
        ])
    };
    let mut waiter = Live::spawn(queued(&waiter_log));
    until("the waiter waits on the gate", || {
        lines_of(&waiter_log).iter().any(|e| e["event"] == "wait")
    });
    let full = finish(queued(&log), b"");
    assert_eq!(full.code, 5, "{}", full.stderr);
    let o = full.outcome();
    assert_eq!(o["attempts"], 0);
    let entries = lines_of(&log);
    let events: Vec<&str> = entries
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["start", "queue_full", "outcome"]);
    let e = &entries[1];
    assert_eq!(e["scope"], scope.as_str());
    assert_eq!(e["waiting"], 1, "{e}");
    assert_eq!(e["max_delayed"], 1);
    let opens_in = e["gate_opens_in_ms"].as_u64().unwrap();
    assert!(opens_in > 0 && opens_in <= 2000, "{e}");
    assert_eq!(e["next_allowed_at"], o["next_allowed_at"], "{e}");
    assert!(waiter.ends());
    assert_eq!(waiter.finish().code, 0);
    assert_eq!(lab.records().len(), 2, "the first run and the waiter");
}

#[test]
fn the_log_tells_the_whole_story() {
    let dir = temp_dir("log-story");
    let log = dir.join("audit.jsonl");
    let lab = scripted(vec![
        Step::new(429).header("Retry-After", "1"),
        Step::new(201).header("Location", "/records/r_893"),
    ]);
    let run = run(&[
        "--state-dir",
        dir.join("state").to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
        "-X",
        "POST",
        "--json",
        "{}",
        "--idempotency-key",
        "auto",
        "--task",
        "sync-482",
        "--scope",
        "account:ops",
        &lab.url(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let entries = lines_of(&log);
    let events: Vec<&str> = entries
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        events,
        [
            "start", "request", "response", "wait", "request", "response", "outcome"
        ]
    );
    for e in &entries {
        assert_eq!(e["task"], "sync-482", "{e}");
        assert_eq!(e["scope"], "account:ops", "{e}");
    }
    let fingerprint = entries[0]["fingerprint"].as_str().unwrap();
    assert_eq!(fingerprint.len(), 64);
    let wait = &entries[3];
    let due = rfc3339_time(wait["due"].as_str().unwrap());
    let at = rfc3339_time(wait["time"].as_str().unwrap());
    let ahead = due.duration_since(at).unwrap();
    assert!(
        ahead >= std::time::Duration::from_millis(1000),
        "due {ahead:?} after the entry"
    );
    let left = wait["budget_left_ms"].as_u64().unwrap();
    assert!(left > 55_000 && left < 60_000, "{left}");
    assert_eq!(entries[6]["operation_id"], "/records/r_893");
}

#[test]
fn breaker_entries_name_open_half_open_and_closed() {
    let dir = temp_dir("log-breaker");
    let log = dir.join("audit.jsonl");
    let lab = scripted(vec![Step::new(503), Step::new(200)]);
    let run_once = || {
        run(&[
            "--state-dir",
            dir.join("state").to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
            "--breaker",
            "1",
            "--attempts",
            "1",
            "--backoff",
            "200ms",
            &lab.url(),
        ])
    };
    assert_eq!(run_once().code, 6);
    // The next run waits for the half-open moment and is the probe.
    assert_eq!(run_once().code, 0);
    let states: Vec<String> = lines_of(&log)
        .iter()
        .filter(|e| e["event"] == "breaker")
        .map(|e| e["state"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(states, ["open", "half_open", "closed"]);
    let opened = lines_of(&log)
        .into_iter()
        .find(|e| e["event"] == "breaker")
        .unwrap();
    assert!(opened["until"].is_string(), "{opened}");
}

/// An RFC 3339 UTC time as abide writes it (`2026-12-01T12:00:00.123Z`).
fn rfc3339_time(text: &str) -> std::time::SystemTime {
    humantime::parse_rfc3339(text).unwrap()
}

#[test]
fn a_request_that_keeps_failing_alike_is_escalated_once_refused() {
    let dir = temp_dir("escalate-no-progress");
    let escalate = dir.join("escalations.jsonl");
    let lab = scripted(vec![Step::new(400)]);
    let call = || {
        run(&[
            "--state-dir",
            dir.join("state").to_str().unwrap(),
            "--no-progress",
            "2",
            "--escalate",
            escalate.to_str().unwrap(),
            &lab.url(),
        ])
    };
    let codes: Vec<i32> = (0..3).map(|_| call().code).collect();
    assert_eq!(codes, [3, 3, 9]);
    assert_eq!(lab.records().len(), 2);
    let records = lines_of(&escalate);
    assert_eq!(records.len(), 1, "NON_RETRYABLE is not escalated");
    assert_eq!(records[0]["outcome"], "NO_PROGRESS");
    assert_eq!(records[0]["options"][0]["action"], "fix the request");
}
