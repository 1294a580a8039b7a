//! Shared scope state: several real `abide` processes against one lab, on
//! one temporary state directory, judged by the lab's timeline.

use std::process::{Child, Command, Stdio};

use crate::util::Backend;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use abide::lab::Step;

use crate::util::*;

const MS: fn(u64) -> Duration = Duration::from_millis;

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

on_both_backends!(
    a_second_process_honours_the_first_ones_retry_after,
    a_gate_beyond_the_budget_answers_at_once_without_sending,
    a_herd_released_together_stays_out_of_the_window_and_spreads,
    rate_limit_headers_pace_the_next_run,
    rate_holds_for_ten_processes_started_at_once,
    max_concurrent_is_never_exceeded,
    the_breaker_opens_refuses_unsent_lets_one_probe_through_and_closes,
    a_named_scope_groups_different_urls,
    the_gate_holds_after_a_rate_wait,
    the_gate_holds_after_a_slot_wait,
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
        second.stderr.contains("the scope's gate"),
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

fn the_breaker_opens_refuses_unsent_lets_one_probe_through_and_closes(b: &Backend) {
    let lab = scripted(vec![
        Step::new(503),
        Step::new(503),
        Step::new(503),
        Step::new(200).delay(MS(300)),
        Step::new(200),
    ]);
    let args = [
        "--breaker",
        "3",
        "--breaker-cooldown",
        "1s",
        "--backoff",
        "10ms",
        "--attempts",
        "6",
    ];
    let url = lab.url();
    let with = |extra: &[&str]| {
        let mut all: Vec<&str> = args.to_vec();
        all.extend_from_slice(extra);
        all.push(&url);
        b.abide(&all)
    };
    // Its own failures reach the threshold: the run ends CIRCUIT_OPEN.
    let first = finish(with(&[]), b"");
    assert_eq!(first.code, 6, "{}", first.stderr);
    assert_eq!(first.outcome()["attempts"], 3);
    assert_eq!(lab.records().len(), 3);
    // While open: nothing sent, an immediate answer with the half-open time.
    let refused = finish(with(&[]), b"");
    assert_eq!(refused.code, 6);
    let o = refused.outcome();
    assert_eq!(o["attempts"], 0);
    assert_eq!(o["outcome"], "CIRCUIT_OPEN");
    assert!(o["next_allowed_at"].is_string());
    assert_eq!(lab.records().len(), 3);
    std::thread::sleep(MS(1100));
    // Half-open: of five at once, exactly one probes.
    let runs = wait_all((0..5).map(|_| spawn(with(&[]))).collect());
    let sent: Vec<u64> = runs
        .iter()
        .map(|r| r.outcome()["attempts"].as_u64().unwrap())
        .collect();
    assert_eq!(sent.iter().sum::<u64>(), 1, "{sent:?}");
    assert_eq!(runs.iter().filter(|r| r.code == 0).count(), 1);
    assert_eq!(runs.iter().filter(|r| r.code == 6).count(), 4);
    assert_eq!(lab.records().len(), 4);
    // The probe succeeded: closed for everyone.
    let after = finish(with(&[]), b"");
    assert_eq!(after.code, 0, "{}", after.stderr);
    assert_eq!(lab.records().len(), 5);
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

fn rand_suffix() -> u32 {
    std::time::SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos()
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
