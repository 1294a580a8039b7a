//! `--policy FILE`: ceilings per scope that flags may lower but never raise,
//! judged by what the lab received; and `--max-delayed`, on both backends.

use std::path::Path;
use std::time::{Duration, Instant};

use abide::lab::Step;

use crate::util::*;

on_both_backends!(at_most_max_delayed_runs_wait_on_the_gate);

fn unique(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{what}-{}-{nanos}", std::process::id())
}

fn write_policy(dir: &Path, text: &str) -> String {
    let path = dir.join("policy.toml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn a_flag_that_asks_for_more_is_lowered_and_says_so() {
    let dir = temp_dir("policy-ceilings");
    let lab = scripted(vec![Step::new(503)]);
    let name = unique("policy");
    let policy = write_policy(
        &dir,
        &format!(
            "[[scope]]\nmatch = \"{}\"\nname = \"{name}\"\n\n[scope.read]\nattempts = 2\nmax_wait = \"5s\"\n",
            lab.url()
        ),
    );
    let state = dir.join("state");
    let run = run(&[
        "--policy",
        &policy,
        "--state-dir",
        state.to_str().unwrap(),
        "--attempts",
        "10",
        "--backoff",
        "10ms",
        &lab.url(),
    ]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert_eq!(lab.records().len(), 2, "the policy's 2 attempts, not 10");
    let o = run.outcome();
    assert_eq!(o["scope"], name.as_str(), "the policy names the scope");
    let reason = o["reason"].as_str().unwrap();
    assert!(
        reason.contains(&format!(
            "The policy of scope {name} allows reads at most 2, so --attempts 10 was lowered to it."
        )),
        "{reason}"
    );
    // The default it lowers silently; asking for less is kept.
    let run = super::util::run(&[
        "--policy",
        &policy,
        "--state-dir",
        state.to_str().unwrap(),
        "--attempts",
        "1",
        &lab.url(),
    ]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert_eq!(lab.records().len(), 3);
    assert!(
        !run.outcome()["reason"].as_str().unwrap().contains("olicy"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_default_policy_file_and_abide_policy_are_read() {
    let dir = temp_dir("policy-default");
    let lab = scripted(vec![Step::new(503)]);
    let config = dir.join("config");
    std::fs::create_dir_all(config.join("abide")).unwrap();
    let text = format!(
        "[[scope]]\nmatch = \"{}\"\n[scope.read]\nattempts = 1\n",
        lab.url()
    );
    std::fs::write(config.join("abide/policy.toml"), &text).unwrap();
    let state = dir.join("state");
    let mut cmd = abide(&["--state-dir", state.to_str().unwrap(), &lab.url()]);
    cmd.env("XDG_CONFIG_HOME", &config);
    let run = finish(cmd, b"");
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert_eq!(lab.records().len(), 1, "the default file's one attempt");

    let elsewhere = write_policy(&dir, &text.replace("attempts = 1", "attempts = 2"));
    let mut cmd = abide(&[
        "--state-dir",
        state.to_str().unwrap(),
        "--backoff",
        "10ms",
        &lab.url(),
    ]);
    cmd.env("XDG_CONFIG_HOME", &config)
        .env("ABIDE_POLICY", &elsewhere);
    let run = finish(cmd, b"");
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert_eq!(lab.records().len(), 3, "ABIDE_POLICY wins over the default");
}

#[test]
fn a_malformed_policy_is_a_usage_error_naming_file_line_and_key() {
    let dir = temp_dir("policy-bad");
    let lab = scripted(vec![Step::new(200)]);
    for (text, key, line) in [
        (
            "[[scope]]\nmatch = \"http://127.0.0.1:1\"\natempts = 3\n",
            "atempts",
            3,
        ),
        (
            "[[scope]]\nmatch = \"http://127.0.0.1:1\"\nrate = \"fast\"\n",
            "rate",
            3,
        ),
    ] {
        let policy = write_policy(&dir, text);
        let run = run(&["--policy", &policy, &lab.url()]);
        assert_eq!(run.code, 2, "{}", run.stderr);
        let reason = run.outcome()["reason"].as_str().unwrap().to_string();
        assert!(
            reason.contains(&policy)
                && reason.contains(&format!("line {line}"))
                && reason.contains(key),
            "{reason}"
        );
    }
    let run = run(&[
        "--policy",
        &dir.join("missing.toml").to_string_lossy(),
        &lab.url(),
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(lab.records().len(), 0, "nothing sent");
}

/// A run's Retry-After closes the gate for 2 s; of four runs that come
/// during it with `--max-delayed 2`, two wait and succeed, and two end at
/// once, BUDGET_EXHAUSTED with next_allowed_at, unsent.
fn at_most_max_delayed_runs_wait_on_the_gate(b: &Backend) {
    let lab = scripted(vec![
        Step::new(429).header("Retry-After", "2"),
        Step::new(200),
    ]);
    let scope = unique("delayed");
    let first = finish(
        b.abide(&["--scope", &scope, "--attempts", "1", &lab.url()]),
        b"",
    );
    assert_eq!(first.code, 4, "{}", first.stderr);
    let started = Instant::now();
    let children: Vec<_> = (0..4)
        .map(|_| {
            b.abide(&["--scope", &scope, "--max-delayed", "2", &lab.url()])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let runs: Vec<Run> = children
        .into_iter()
        .map(|c| Run::of(c.wait_with_output().unwrap()))
        .collect();
    let mut codes: Vec<i32> = runs.iter().map(|r| r.code).collect();
    codes.sort();
    assert_eq!(
        codes,
        [0, 0, 5, 5],
        "{:?}",
        runs.iter().map(|r| &r.stderr).collect::<Vec<_>>()
    );
    for run in runs.iter().filter(|r| r.code == 5) {
        let o = run.outcome();
        assert_eq!(o["attempts"], 0);
        assert!(o["next_allowed_at"].is_string(), "{o}");
        assert!(
            o["reason"]
                .as_str()
                .unwrap()
                .contains("the scope's queue is full"),
            "{o}"
        );
        assert!(
            o["elapsed_ms"].as_u64().unwrap() < 1000,
            "ended at once: {o}"
        );
    }
    assert!(started.elapsed() >= Duration::from_millis(1500));
    assert_eq!(
        lab.records().len(),
        3,
        "the first run and the two that waited"
    );
}
