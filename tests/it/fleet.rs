//! The Redis backend's own failure modes, each on a private redis-server
//! (skipped, saying why, where redis-server is not installed).

use std::process::Stdio;
use std::time::{Duration, Instant};

use abide::lab::Step;

use crate::util::*;

fn private_redis() -> Option<RedisServer> {
    let server = RedisServer::start();
    if server.is_none() {
        eprintln!("skipped: redis-server is not installed");
    }
    server
}

fn wait_for_requests(lab: &abide::lab::Lab, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while lab.records().len() < n {
        assert!(Instant::now() < deadline, "the lab never saw {n} requests");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_redis_that_goes_away_mid_run_does_not_stop_the_traffic() {
    let Some(redis) = private_redis() else { return };
    let lab = scripted(vec![
        Step::new(429).header("Retry-After", "1"),
        Step::new(200),
    ]);
    let mut cmd = abide(&["--state", &redis.url, &lab.url()]);
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_requests(&lab, 1);
    drop(redis);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(lab.records().len(), 2);
    assert!(
        stderr.contains("warning: the shared state is unavailable"),
        "{stderr}"
    );
    let outcome: serde_json::Value = serde_json::from_str(stderr.lines().last().unwrap()).unwrap();
    assert!(
        outcome["reason"]
            .as_str()
            .unwrap()
            .contains("State: unavailable"),
        "{outcome}"
    );
}

#[test]
fn state_required_turns_an_outage_into_an_internal_error() {
    let Some(redis) = private_redis() else { return };
    let url = redis.url.clone();
    drop(redis);
    let lab = scripted(vec![Step::new(200)]);
    let run = run(&["--state", &url, "--state-required", &lab.url()]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(lab.records().len(), 0, "nothing sent");
    assert!(
        run.outcome()["reason"]
            .as_str()
            .unwrap()
            .contains("--state-required")
    );
    // Without it, the same outage is a warning.
    let run = super::util::run(&["--state", &url, &lab.url()]);
    assert_eq!(run.code, 0);
    assert_eq!(lab.records().len(), 1);
}

#[test]
fn a_slow_redis_costs_a_bounded_delay() {
    let Some(redis) = private_redis() else { return };
    let mut sleeper = redis.cli(&["DEBUG", "SLEEP", "3"]);
    std::thread::sleep(Duration::from_millis(100));
    let lab = scripted(vec![Step::new(200)]);
    let started = Instant::now();
    let run = run(&["--state", &redis.url, &lab.url()]);
    let took = started.elapsed();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        took < Duration::from_millis(2500),
        "a 3 s stall held the run {took:?}"
    );
    assert!(
        run.outcome()["reason"]
            .as_str()
            .unwrap()
            .contains("State: unavailable")
    );
    let _ = sleeper.wait();
}

#[test]
fn a_slot_held_by_a_killed_process_frees_itself_at_its_lease_expiry() {
    let Some(redis) = private_redis() else { return };
    let scope = format!("lease-{}", std::process::id());
    let hanging = scripted(vec![Step::new(200).hang()]);
    let mut holder = abide(&[
        "--state",
        &redis.url,
        "--scope",
        &scope,
        "--max-concurrent",
        "1",
        "-m",
        "1s",
        &hanging.url(),
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    wait_for_requests(&hanging, 1);
    let killed_at = Instant::now();
    holder.kill().unwrap();
    let _ = holder.wait();
    let lab = scripted(vec![Step::new(200)]);
    let run = run(&[
        "--state",
        &redis.url,
        "--scope",
        &scope,
        "--max-concurrent",
        "1",
        &lab.url(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let waited = killed_at.elapsed();
    // The lease is the attempt's limit (1 s) plus 1 s.
    assert!(
        waited >= Duration::from_millis(1500),
        "the dead holder's slot was taken after {waited:?}"
    );
    assert!(
        waited < Duration::from_secs(4),
        "the slot was stuck for {waited:?}"
    );
}
