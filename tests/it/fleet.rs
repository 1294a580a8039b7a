//! The Redis backend's own failure modes, each on a private redis-server
//! (ignored, saying why, where redis-server is not installed; see build.rs).

use std::process::Stdio;
use std::time::{Duration, Instant};

use abide::lab::Step;

use crate::util::*;

fn wait_for_requests(lab: &abide::lab::Lab, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while lab.records().len() < n {
        assert!(Instant::now() < deadline, "the lab never saw {n} requests");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
#[cfg_attr(no_redis_server, ignore = "redis-server is not installed")]
fn a_redis_that_goes_away_mid_run_does_not_stop_the_traffic() {
    let redis = RedisServer::private();
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
#[cfg_attr(no_redis_server, ignore = "redis-server is not installed")]
fn state_required_turns_an_outage_into_an_internal_error() {
    let redis = RedisServer::private();
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

/// The documented bound: one timeout of 500 ms (a quarter of the budget at
/// most), however many replies an exchange awaits. It cost two (1.03 s).
#[test]
#[cfg_attr(no_redis_server, ignore = "redis-server is not installed")]
fn a_slow_redis_costs_one_timeout() {
    let redis = RedisServer::private();
    let lab = scripted(vec![Step::new(200)]);
    for (budget, bound) in [("30s", 500), ("1s", 250)] {
        let mut sleeper = redis.cli(&["DEBUG", "SLEEP", "2"]);
        std::thread::sleep(Duration::from_millis(100));
        let started = Instant::now();
        let run = run(&["--state", &redis.url, "--budget", budget, &lab.url()]);
        let took = started.elapsed();
        assert_eq!(run.code, 0, "{}", run.stderr);
        // What a run costs with no state at all stays well under the margin.
        assert!(
            took < Duration::from_millis(bound + 350),
            "a 2 s stall held a run with --budget {budget} for {took:?}"
        );
        assert!(
            run.outcome()["reason"]
                .as_str()
                .unwrap()
                .contains("State: unavailable")
        );
        let _ = sleeper.wait();
    }
}

/// A record no abide wrote (far-future times) reaches every machine of a
/// fleet: it must not crash any of them.
#[test]
#[cfg_attr(no_redis_server, ignore = "redis-server is not installed")]
fn a_record_with_times_past_year_9999_in_redis_crashes_no_run() {
    let redis = RedisServer::private();
    let key = format!("abide:v1:{{{}}}:state", abide::state::scope_hash("far"));
    let huge = 18_000_000_000_000_000_000u64;
    let record = serde_json::json!({ "next_allowed_at": huge, "rate_tat": huge });
    let mut con = redis::Client::open(redis.url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    redis::cmd("SET")
        .arg(&key)
        .arg(record.to_string())
        .exec(&mut con)
        .unwrap();
    let lab = scripted(vec![Step::new(200)]);
    let run = run(&[
        "--state",
        &redis.url,
        "--scope",
        "far",
        "--agent",
        &lab.url(),
    ]);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert_eq!(run.code, 5, "{}", run.stderr);
    let object: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(object["next_allowed_at"], "9999-12-31T23:59:59.999Z");
    assert_eq!(lab.records().len(), 0);
}

#[test]
#[cfg_attr(no_redis_server, ignore = "redis-server is not installed")]
fn a_slot_held_by_a_killed_process_frees_itself_at_its_lease_expiry() {
    let redis = RedisServer::private();
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
