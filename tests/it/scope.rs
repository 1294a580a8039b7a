//! Shared scope state: several real `abide` processes against one lab, on
//! one temporary state directory, judged by the lab's timeline.

use std::io::Write;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use abide::lab::{Lab, LabConfig, Script, Step};

use crate::util::*;

const MS: fn(u64) -> Duration = Duration::from_millis;

on_both_backends!(
    a_second_process_honours_the_first_ones_retry_after,
    a_gate_beyond_the_budget_answers_at_once_without_sending,
    a_herd_released_together_stays_out_of_the_window_and_spreads,
    rate_limit_headers_pace_the_next_run,
    rate_holds_for_ten_processes_started_at_once,
    max_concurrent_is_never_exceeded,
    the_breaker_opens_for_the_servers_delay_lets_one_probe_through_and_closes,
    a_run_waits_out_an_open_breaker_and_succeeds,
    twenty_runs_send_one_probe_per_interval,
    a_failed_probe_ends_circuit_open_with_the_next_half_open_time,
    a_failing_endpoint_does_not_hold_back_the_others,
    an_unreachable_host_holds_back_the_whole_scope,
    a_runs_own_retry_after_is_not_blamed_on_another_request,
    a_named_scope_groups_different_urls,
    the_gate_holds_after_a_rate_wait,
    the_gate_holds_after_a_slot_wait,
    a_failing_fleet_retries_within_the_scopes_budget,
    a_429_without_a_delay_holds_the_scope_for_the_backoff,
    a_run_alone_makes_every_attempt_it_asked_for,
);

fn spawn(mut cmd: Command) -> Child {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn wait_all(children: Vec<Child>) -> Vec<Run> {
    children
        .into_iter()
        .map(|c| Run::of(c.wait_with_output().unwrap()))
        .collect()
}

fn a_second_process_honours_the_first_ones_retry_after(b: &Backend) {
    let lab = scripted(vec![
        Step::new(429).header("Retry-After", "2"),
        Step::new(200),
    ]);
    let first = finish(b.abide(&["--attempts", "1", &lab.url()]), b"");
    assert_eq!(first.code, 4, "{}", first.stderr);
    let second = finish(b.abide(&["-v", &lab.url()]), b"");
    assert_eq!(second.code, 0, "{}", second.stderr);
    let records = lab.records();
    assert_eq!(records.len(), 2);
    let gap = gaps(&records)[0];
    assert!(
        gap >= Duration::from_secs(2),
        "the second process came back after {gap:?}"
    );
    assert!(
        second
            .stderr
            .contains("the gate of the API at http://127.0.0.1:"),
        "{}",
        second.stderr
    );
    assert_eq!(second.outcome()["attempts"], 1);
    let reason = second.outcome()["reason"].as_str().unwrap().to_string();
    assert!(
        reason.contains("for a Retry-After the server gave to another request"),
        "{reason}"
    );
    assert!(second.outcome()["waited_ms"].as_u64().unwrap() >= 1900);
}

fn a_gate_beyond_the_budget_answers_at_once_without_sending(b: &Backend) {
    let lab = scripted(vec![
        Step::new(429).header("Retry-After", "30"),
        Step::new(200),
    ]);
    assert_eq!(
        finish(b.abide(&["--attempts", "1", &lab.url()]), b"").code,
        4
    );
    let run = finish(b.abide(&["--max-wait", "5s", &lab.url()]), b"");
    assert_eq!(run.code, 5, "{}", run.stderr);
    assert_eq!(lab.records().len(), 1, "nothing sent");
    let o = run.outcome();
    assert_eq!(o["attempts"], 0);
    assert!(o["elapsed_ms"].as_u64().unwrap() < 1000);
    assert!(o["next_allowed_at"].is_string(), "{o}");
    assert!(o["reason"].as_str().unwrap().contains("Retry-After"), "{o}");
}

fn a_herd_released_together_stays_out_of_the_window_and_spreads(b: &Backend) {
    let lab = scripted(vec![
        Step::new(429).header("Retry-After", "1"),
        Step::new(200),
    ]);
    assert_eq!(
        finish(b.abide(&["--attempts", "1", &lab.url()]), b"").code,
        4
    );
    let herd: Vec<Child> = (0..20).map(|_| spawn(b.abide(&[&lab.url()]))).collect();
    let runs = wait_all(herd);
    assert!(
        runs.iter().all(|r| r.code == 0),
        "{:?}",
        runs.iter().map(|r| &r.stderr).collect::<Vec<_>>()
    );
    let records = lab.records();
    assert_eq!(records.len(), 21);
    let first = records[0].at;
    let arrivals: Vec<Duration> = records[1..].iter().map(|r| r.at - first).collect();
    let earliest = *arrivals.iter().min().unwrap();
    let latest = *arrivals.iter().max().unwrap();
    assert!(
        earliest >= Duration::from_secs(1),
        "a request inside the window: {earliest:?}"
    );
    assert!(latest - earliest >= MS(20), "no spread: {arrivals:?}");
}

fn holds_the_next_run(b: &Backend, headers: Vec<(&'static str, String)>, at_least: Duration) {
    let mut step = Step::new(200);
    for (name, value) in &headers {
        step = step.header(*name, value.as_str());
    }
    let lab = scripted(vec![step, Step::new(200)]);
    let first = finish(b.abide(&[&lab.url()]), b"");
    assert_eq!(
        first.code, 0,
        "a success that says the quota is used up: {}",
        first.stderr
    );
    assert_eq!(finish(b.abide(&[&lab.url()]), b"").code, 0);
    let gap = gaps(&lab.records())[0];
    assert!(
        gap >= at_least,
        "{headers:?}: the next run came after {gap:?}"
    );
}

fn rate_limit_headers_pace_the_next_run(b: &Backend) {
    let reset_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 2;
    let styles = vec![
        (
            vec![("RateLimit", "\"lab\";r=0;t=1".to_string())],
            Duration::from_secs(1),
        ),
        (
            vec![
                ("RateLimit-Remaining", "0".to_string()),
                ("RateLimit-Reset", "1".to_string()),
            ],
            Duration::from_secs(1),
        ),
        (
            vec![
                ("X-RateLimit-Remaining", "0".to_string()),
                ("X-RateLimit-Reset", reset_epoch.to_string()),
            ],
            Duration::from_millis(900),
        ),
    ];
    std::thread::scope(|threads| {
        for (headers, at_least) in styles {
            threads.spawn(move || holds_the_next_run(b, headers, at_least));
        }
    });
}

fn rate_holds_for_ten_processes_started_at_once(b: &Backend) {
    let lab = scripted(vec![Step::new(200)]);
    let runs = wait_all(
        (0..10)
            .map(|_| spawn(b.abide(&["--rate", "5/s", &lab.url()])))
            .collect(),
    );
    assert!(runs.iter().all(|r| r.code == 0));
    let at: Vec<Duration> = lab.records().iter().map(|r| r.at).collect();
    assert_eq!(at.len(), 10);
    // No burst: the ten slots are 200 ms apart, so the requests span 1.8 s
    // and no six of them fall within much less than a second. The slack is
    // for a process that sends a little after its slot on a busy machine;
    // a burst would put them within milliseconds.
    assert!(
        at[9] - at[0] >= MS(1700),
        "ten requests within {:?}: {at:?}",
        at[9] - at[0]
    );
    for w in at.windows(6) {
        assert!(
            w[5] - w[0] >= MS(900),
            "six requests within {:?}: {at:?}",
            w[5] - w[0]
        );
    }
}

fn max_concurrent_is_never_exceeded(b: &Backend) {
    let lab = scripted(vec![Step::new(200).delay(MS(200))]);
    let runs = wait_all(
        (0..6)
            .map(|_| spawn(b.abide(&["--max-concurrent", "2", &lab.url()])))
            .collect(),
    );
    assert!(
        runs.iter().all(|r| r.code == 0),
        "{:?}",
        runs.iter().map(|r| &r.stderr).collect::<Vec<_>>()
    );
    assert_eq!(lab.records().len(), 6);
    assert_eq!(lab.max_in_flight(), 2);
}

/// How long after `since` (the lab's clock) the outcome says the caller may come back.
fn next_allowed_after(run: &Run, since: SystemTime) -> Duration {
    let at = run.outcome()["next_allowed_at"]
        .as_str()
        .map(|t| humantime::parse_rfc3339(t).unwrap())
        .unwrap_or_else(|| panic!("no next_allowed_at: {}", run.stderr));
    at.duration_since(since).unwrap_or_default()
}

fn the_breaker_opens_for_the_servers_delay_lets_one_probe_through_and_closes(b: &Backend) {
    let lab = scripted(vec![
        Step::new(503),
        Step::new(503),
        Step::new(503).header("Retry-After", "2"),
        Step::new(200).delay(MS(300)),
        Step::new(200),
    ]);
    let url = lab.url();
    let with = |extra: &[&str]| {
        let mut all = vec!["--breaker", "3", "--backoff", "10ms"];
        all.extend_from_slice(extra);
        all.push(&url);
        b.abide(&all)
    };
    // Its last attempt opened the breaker: CIRCUIT_OPEN, for the server's
    // 2 s and not for the cooldown (--backoff-max, 8 s).
    let first = finish(with(&["--attempts", "3"]), b"");
    assert_eq!(first.code, 6, "{}", first.stderr);
    assert_eq!(first.outcome()["attempts"], 3);
    let answered = lab.records()[2].time;
    let half_open = next_allowed_after(&first, answered);
    assert!(
        half_open >= MS(2000) && half_open < MS(2500),
        "half-opens {half_open:?} after the answer"
    );
    // A half-open moment beyond --max-wait: at once, nothing sent.
    let refused = finish(with(&["--max-wait", "1s"]), b"");
    assert_eq!(refused.code, 6, "{}", refused.stderr);
    let o = refused.outcome();
    assert_eq!(o["attempts"], 0);
    assert!(o["elapsed_ms"].as_u64().unwrap() < 500, "{o}");
    // The same moment, give or take the rounding of two clocks' milliseconds
    // and the moments each run turns its wait into a time: never later than
    // when it ends, which on a loaded machine is a few tens of ms after it
    // decided. Far from the 8 s cooldown either way.
    let same = next_allowed_after(&refused, answered);
    assert!(
        same.abs_diff(half_open) <= MS(100),
        "{same:?} vs {half_open:?}"
    );
    assert_eq!(lab.records().len(), 3);
    // Five runs that may wait: they wait for the moment, one probes, the
    // others wait behind its 300 ms, then find the breaker closed.
    let runs = wait_all((0..5).map(|_| spawn(with(&[]))).collect());
    for r in &runs {
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let records = lab.records();
    assert_eq!(records.len(), 8);
    let answered = records[2].at;
    assert!(
        records[3].at - answered >= MS(2000),
        "probed {:?} after the Retry-After",
        records[3].at - answered
    );
    for r in &records[4..] {
        assert!(
            r.at - records[3].at >= MS(300),
            "a request beside the probe, {:?} after it",
            r.at - records[3].at
        );
    }
}

fn a_run_waits_out_an_open_breaker_and_succeeds(b: &Backend) {
    let mut steps = vec![Step::new(503); 7];
    steps.push(Step::new(200));
    let lab = scripted(steps);
    let dir = temp_dir("breaker-log");
    let log = dir.join("log.jsonl");
    // The README's "replacing a curl loop" flags, with backoff steps short
    // enough that the breaker's own waits show.
    let run = finish(
        b.abide(&[
            "--budget",
            "5m",
            "--attempts",
            "20",
            "--backoff",
            "100ms",
            "--backoff-max",
            "100ms",
            "-v",
            "--log",
            log.to_str().unwrap(),
            &lab.url(),
        ]),
        b"",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.outcome()["attempts"], 8);
    let records = lab.records();
    assert_eq!(records.len(), 8);
    // Opened by the fifth failure for 100 ms, and again for 100 ms after
    // each failed probe (twice as long, but never beyond the run's own
    // --backoff-max): a backoff, not a refusal.
    let gaps = gaps(&records);
    for i in 4..7 {
        assert!(gaps[i] >= MS(100), "gap {i}: {:?}", gaps);
    }
    assert!(
        run.stderr.contains("circuit breaker of this endpoint") && run.stderr.contains("closed"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(
            "open circuit breaker of this request's endpoint, until it lets a probe through"
        ),
        "{}",
        run.stderr
    );
    let logged = std::fs::read_to_string(&log).unwrap();
    let breaker_waits: Vec<serde_json::Value> = logged
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["event"] == "wait")
        .filter(|e| {
            e["reason"]
                .as_str()
                .unwrap()
                .contains("open circuit breaker")
        })
        .collect();
    assert!(!breaker_waits.is_empty(), "{logged}");
    // Its wait and its jitter (10 %) together.
    for w in &breaker_waits {
        assert!(w["wait_ms"].as_u64().unwrap() <= 110, "{w}");
    }
    assert!(run.outcome()["waited_ms"].as_u64().unwrap() >= 300);
}

/// One process and its own breaker: the file backend is enough.
#[test]
fn a_service_that_starts_later_is_reached() {
    let b = &Backend::files("later");
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/");
    let started = Instant::now();
    // Its backoff starts at 100 ms, so that five refused connections come
    // well before the service does: more retries than the scope's budget
    // holds, which a run alone still makes.
    let run = spawn(b.abide(&[
        "--attempts",
        "100",
        "--budget",
        "30s",
        "--backoff",
        "100ms",
        &url,
    ]));
    std::thread::sleep(Duration::from_secs(4).saturating_sub(started.elapsed()));
    let lab = Lab::start(
        port,
        LabConfig {
            script: Some(Script::new(vec![Step::new(200)])),
            ..LabConfig::default()
        },
    )
    .expect("the port is still free");
    let listening = Instant::now();
    let run = wait_all(vec![run]).remove(0);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let reached = listening.elapsed().saturating_sub(run_tail(&run));
    assert!(
        reached < Duration::from_secs(10),
        "reached {reached:?} after it started"
    );
    assert!(run.outcome()["attempts"].as_u64().unwrap() > 5);
    assert_eq!(lab.records().len(), 1);
    // The next run is not refused either.
    assert_eq!(finish(b.abide(&[&url]), b"").code, 0);
}

/// How long a successful run went on after its last request's answer.
fn run_tail(run: &Run) -> Duration {
    let o = run.outcome();
    let last = o["history"].as_array().unwrap().last().unwrap()["elapsed_ms"]
        .as_u64()
        .unwrap();
    MS(o["elapsed_ms"].as_u64().unwrap().saturating_sub(last))
}

fn twenty_runs_send_one_probe_per_interval(b: &Backend) {
    let lab = scripted(vec![Step::new(503)]);
    // One failure opens it (for the first backoff step, 500 ms).
    let first = finish(
        b.abide(&["--breaker", "1", "--attempts", "1", &lab.url()]),
        b"",
    );
    assert_eq!(first.code, 6, "{}", first.stderr);
    let runs = wait_all(
        (0..20)
            .map(|_| spawn(b.abide(&["--budget", "10s", &lab.url()])))
            .collect(),
    );
    let records = lab.records();
    let sent = records.len() - 1;
    // Probes 500 ms, 1, 2 and 4 s apart; then the next is beyond the budget.
    assert!(
        (2..=15).contains(&sent),
        "{sent} requests: {:?}",
        gaps(&records)
    );
    for gap in gaps(&records) {
        assert!(gap >= MS(400), "two probes {gap:?} apart");
    }
    for r in &runs {
        assert_eq!(r.code, 6, "{}", r.stderr);
        assert!(r.outcome()["next_allowed_at"].is_string());
    }
}

fn a_failed_probe_ends_circuit_open_with_the_next_half_open_time(b: &Backend) {
    let lab = scripted(vec![Step::new(503)]);
    let with = |extra: &[&str]| {
        let mut all = vec!["--breaker", "1", "--attempts", "1", "--backoff", "200ms"];
        all.extend_from_slice(extra);
        b.abide(&all)
    };
    let first = finish(with(&[&lab.url()]), b"");
    assert_eq!(first.code, 6, "{}", first.stderr);
    std::thread::sleep(MS(250));
    // Half-open: this run is the probe, and it fails.
    let probe = finish(with(&[&lab.url()]), b"");
    assert_eq!(probe.code, 6, "{}", probe.stderr);
    assert_eq!(probe.outcome()["attempts"], 1);
    assert_eq!(lab.records().len(), 2);
    // Open again, twice as long.
    let next = next_allowed_after(&probe, lab.records()[1].time);
    assert!(next >= MS(400) && next < MS(800), "{next:?}");
}

/// A server whose `/status/500` answers 500 and every other path 200; it
/// counts what it was asked, by path.
fn status_server() -> (Raw, Arc<Mutex<Vec<String>>>) {
    let paths = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&paths);
    let server = raw(move |mut stream| {
        let head = read_head(&stream);
        let path = head
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_string();
        let status = if path == "/status/500" { 500 } else { 200 };
        seen.lock().unwrap().push(path);
        let _ = write!(
            stream,
            "HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        );
    });
    (server, paths)
}

fn a_failing_endpoint_does_not_hold_back_the_others(b: &Backend) {
    let (server, paths) = status_server();
    let failing = format!("{}/status/500", server.url());
    // One attempt a run, and a breaker that opens for its first backoff step, 3 s.
    let with =
        |extra: &[&str]| b.abide(&[&["--attempts", "1", "--backoff", "3s"][..], extra].concat());
    let codes: Vec<i32> = (0..5)
        .map(|_| finish(with(&[&failing]), b"").code)
        .collect();
    // The fifth failure opens the breaker, for that endpoint only.
    assert_eq!(codes, [4, 4, 4, 4, 6]);
    let again = finish(with(&["--max-wait", "1s", &failing]), b"");
    assert_eq!(again.code, 6, "{}", again.stderr);
    assert_eq!(again.outcome()["attempts"], 0);
    let healthy = format!("{}/status/200", server.url());
    let run = finish(b.abide(&["--max-wait", "1ms", &healthy]), b"");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.outcome()["waited_ms"], 0);
    assert_eq!(paths.lock().unwrap().last().unwrap(), "/status/200");
}

fn an_unreachable_host_holds_back_the_whole_scope(b: &Backend) {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // Refused five times: the scope's breaker opens for 3 s (its first step).
    let url = format!("http://127.0.0.1:{port}/a");
    let codes: Vec<i32> = (0..5)
        .map(|_| finish(b.abide(&["--attempts", "1", "--backoff", "3s", &url]), b"").code)
        .collect();
    assert_eq!(codes, [4, 4, 4, 4, 6]);
    let other = finish(
        b.abide(&["--max-wait", "1s", &format!("http://127.0.0.1:{port}/b")]),
        b"",
    );
    assert_eq!(other.code, 6, "{}", other.stderr);
    let o = other.outcome();
    assert_eq!(o["attempts"], 0);
    assert!(
        o["instruction"].as_str().unwrap().starts_with(&format!(
            "The circuit breaker of the API at http://127.0.0.1:{port} is open."
        )),
        "{o}"
    );
}

fn a_runs_own_retry_after_is_not_blamed_on_another_request(b: &Backend) {
    let lab = scripted(vec![
        Step::new(429).header("Retry-After", "1"),
        Step::new(200),
    ]);
    let run = finish(b.abide(&["--jitter", "0", &lab.url()]), b"");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.outcome()["reason"], "200 OK after 2 attempt(s).");
}

#[test]
fn a_garbage_state_file_is_survived() {
    let b = Backend::files("garbage");
    let Backend::Files(dir) = &b else {
        unreachable!()
    };
    let lab = scripted(vec![
        Step::new(429).header("Retry-After", "30"),
        Step::new(200),
    ]);
    assert_eq!(
        finish(b.abide(&["--attempts", "1", &lab.url()]), b"").code,
        4
    );
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            std::fs::write(&path, b"\x00{{garbage").unwrap();
        }
    }
    let run = finish(b.abide(&["-v", &lab.url()]), b"");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("treating it as empty"),
        "{}",
        run.stderr
    );
}

#[test]
fn no_state_writes_nothing() {
    let dir = temp_dir("nostate").join("state");
    let lab = scripted(vec![
        Step::new(429).header("retry-after-ms", "1"),
        Step::new(200),
    ]);
    let mut cmd = abide(&["--no-state", "--floor", "0", &lab.url()]);
    cmd.arg("--state-dir").arg(&dir);
    let run = finish(cmd, b"");
    assert_eq!(run.code, 0);
    assert!(!dir.exists());
    let mut cmd = abide(&["--floor", "0", &lab.url()]);
    cmd.env("ABIDE_STATE_DIR", &dir)
        .env("ABIDE_NO_STATE", "true");
    assert_eq!(finish(cmd, b"").code, 0);
    assert!(!dir.exists());
}

fn a_named_scope_groups_different_urls(b: &Backend) {
    // Unique per run, so that a long-lived test Redis holds nothing from before.
    let name = format!("acme:token-{}-{}", std::process::id(), rand_suffix());
    let closed = scripted(vec![Step::new(429).header("Retry-After", "30")]);
    let open = scripted(vec![Step::new(200)]);
    let first = finish(
        b.abide(&["--scope", &name, "--attempts", "1", &closed.url()]),
        b"",
    );
    assert_eq!(first.outcome()["scope"], name.as_str());
    let other = finish(
        b.abide(&["--scope", &name, "--max-wait", "2s", &open.url()]),
        b"",
    );
    assert_eq!(other.code, 5, "the same scope is closed: {}", other.stderr);
    assert_eq!(open.records().len(), 0);
    let own = finish(b.abide(&[&open.url()]), b"");
    assert_eq!(own.code, 0, "another scope is open");
    assert_eq!(own.outcome()["scope"], open.url());
}

/// Process A's request is answered `429 Retry-After: 1` after 300 ms; B,
/// started 50 ms after A, waits for something else (`extra`) first, and must
/// still not send before A's Retry-After has passed.
fn second_waits_for_the_firsts_gate(b: &Backend, extra: &[&str]) {
    let lab = scripted(vec![
        Step::new(429).header("Retry-After", "1").delay(MS(300)),
        Step::new(200),
    ]);
    let scope = format!("gate-after-wait-{}-{}", std::process::id(), rand_suffix());
    let args = |path: &str| {
        let mut all = vec![
            "--scope",
            scope.as_str(),
            "--attempts",
            "1",
            "--jitter",
            "0",
        ];
        all.extend_from_slice(extra);
        let url = format!("{}{path}", lab.url());
        let mut cmd = b.abide(&all);
        cmd.arg(url);
        cmd
    };
    let first = spawn(args("/a"));
    std::thread::sleep(MS(50));
    let second = spawn(args("/b"));
    let runs = wait_all(vec![first, second]);
    assert_eq!(runs[1].code, 0, "{}", runs[1].stderr);
    let records = lab.records();
    assert_eq!(records.len(), 2);
    let gap = records[1].at - records[0].at;
    // 300 ms to the answer, then the 1 s the server asked for.
    assert!(gap >= MS(1300), "B went {gap:?} after A");
    assert_eq!(records[1].early_by_ms, None);
}

fn the_gate_holds_after_a_rate_wait(b: &Backend) {
    second_waits_for_the_firsts_gate(b, &["--rate", "2/s"]);
}

fn the_gate_holds_after_a_slot_wait(b: &Backend) {
    second_waits_for_the_firsts_gate(b, &["--max-concurrent", "1"]);
}

/// The figure: ten processes of `--attempts 4` started together
/// against a server that answers every request 429 without any delay make
/// at most 20 requests between them (10 first attempts and the 5 retries
/// the scope's budget holds), not 40; one process alone gets all 4.
fn a_failing_fleet_retries_within_the_scopes_budget(b: &Backend) {
    let lab = scripted(vec![Step::new(429)]);
    let scope = format!("fleet-{}-{}", std::process::id(), rand_suffix());
    let fleet = |n: usize| {
        wait_all(
            (0..n)
                .map(|_| {
                    spawn(b.abide(&[
                        "--scope",
                        &scope,
                        "--attempts",
                        "4",
                        "--backoff",
                        "100ms",
                        &lab.url(),
                    ]))
                })
                .collect(),
        )
    };
    let runs = fleet(10);
    let sent = lab.records().len();
    eprintln!("10 processes x --attempts 4 against 429: {sent} requests");
    assert!((10..=20).contains(&sent), "{sent} requests");
    assert!(runs.iter().all(|r| r.code == 4), "all RETRY_EXHAUSTED");
    let refused: Vec<&Run> = runs
        .iter()
        .filter(|r| {
            r.outcome()["reason"]
                .as_str()
                .unwrap()
                .contains("the scope's retry budget is spent")
        })
        .collect();
    assert!(!refused.is_empty(), "some runs were refused a retry");
    for run in &refused {
        assert!(
            run.outcome()["next_allowed_at"].is_string(),
            "{}",
            run.stderr
        );
    }

    // One process alone, in a scope of its own, keeps all its attempts.
    let alone = scripted(vec![Step::new(429)]);
    let run = finish(
        b.abide(&[
            "--scope",
            &format!("{scope}-alone"),
            "--attempts",
            "4",
            "--backoff",
            "100ms",
            &alone.url(),
        ]),
        b"",
    );
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert_eq!(alone.records().len(), 4);
    assert_eq!(run.outcome()["attempts"], 4);
}

/// A "wait for the service" loop: one run alone against an always-503 makes
/// all 12 attempts it asked for, more than the 5 retries the scope's budget
/// holds; the budget refuses only a run that has company.
fn a_run_alone_makes_every_attempt_it_asked_for(b: &Backend) {
    let lab = scripted(vec![Step::new(503)]);
    let scope = format!("alone-{}-{}", std::process::id(), rand_suffix());
    let run = finish(
        b.abide(&[
            "--scope",
            &scope,
            "--attempts",
            "12",
            "--backoff",
            "10ms",
            "--backoff-max",
            "20ms",
            &lab.url(),
        ]),
        b"",
    );
    assert_eq!(lab.records().len(), 12, "{}", run.stderr);
    let outcome = run.outcome();
    assert_eq!(outcome["attempts"], 12);
    // Its own failures opened the breaker, which it waited out each time.
    assert_eq!(outcome["outcome"], "CIRCUIT_OPEN");
    let reason = outcome["reason"].as_str().unwrap();
    assert!(!reason.contains("retry budget"), "{reason}");
}

/// A 429 without any delay closes the scope's gate for the backoff its
/// run chose: a second run started during it sends only after it.
fn a_429_without_a_delay_holds_the_scope_for_the_backoff(b: &Backend) {
    let lab = scripted(vec![Step::new(429), Step::new(200)]);
    let scope = format!("backoff-gate-{}-{}", std::process::id(), rand_suffix());
    let args = [
        "--scope",
        scope.as_str(),
        "--backoff",
        "2s",
        "--backoff-max",
        "2s",
        "--jitter",
        "0",
    ];
    let first = spawn(b.abide(&[&args[..], &["-v", &lab.url()]].concat()));
    until("the first answer", || lab.records().len() == 1);
    let second = spawn(b.abide(&[&args[..], &["--attempts", "1", &lab.url()]].concat()));
    let runs = wait_all(vec![first, second]);
    assert_eq!(runs[0].code, 0, "{}", runs[0].stderr);
    assert_eq!(runs[1].code, 0, "{}", runs[1].stderr);
    let records = lab.records();
    assert_eq!(records.len(), 3);
    // The first run's backoff is full jitter up to 2 s; whatever it drew,
    // its own retry and the second run's request both come after it.
    let chosen = runs[0].outcome()["history"][0]["wait_ms"].as_u64().unwrap();
    for later in &records[1..] {
        assert!(
            later.at - records[0].at >= MS(chosen),
            "sent {:?} after the 429, within the {chosen} ms backoff",
            later.at - records[0].at
        );
    }
    // A backoff long enough that the second run surely started within it
    // (the draw is random): the second run says what held it.
    if chosen >= 500 {
        assert!(
            runs[1].outcome()["reason"]
                .as_str()
                .unwrap()
                .contains("the backoff after a 429 or 503 without a delay"),
            "{}",
            runs[1].stderr
        );
    }
}
