//! `abide state`: what the scopes remember, and `abide state clear`, on
//! both backends, judged by what the next run sends.

use abide::lab::Step;
use serde_json::Value;

use crate::util::*;

on_both_backends!(state_shows_why_runs_are_held_and_clear_forgets_it);

/// `abide state ARGS` on backend `b`.
fn state(b: &Backend, args: &[&str]) -> Run {
    let mut cmd = abide(&["state"]);
    cmd.args(args);
    match b {
        Backend::Files(dir) => cmd.arg("--state-dir").arg(dir),
        Backend::Redis(url) => cmd.arg("--state").arg(url),
    };
    finish(cmd, b"")
}

/// The `--json` object of `scope` (a shared Redis holds other scopes too).
fn shown(b: &Backend, scope: &str) -> Option<Value> {
    let run = state(b, &["--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.stdout_text()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|o| o["scope"] == scope)
}

fn state_shows_why_runs_are_held_and_clear_forgets_it(b: &Backend) {
    let lab = scripted(vec![
        Step::new(429).header("Retry-After", "30"),
        Step::new(200),
    ]);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let scope = format!("inspect-{}-{nanos}", std::process::id());
    let run = finish(
        b.abide(&["--scope", &scope, "--attempts", "1", &lab.url()]),
        b"",
    );
    assert_eq!(run.code, 4, "{}", run.stderr);
    // A task's key is kept before anything is sent; the gate holds it unsent.
    let task = [
        "--scope",
        scope.as_str(),
        "--max-wait",
        "1s",
        "-X",
        "POST",
        "--idempotency-key",
        "auto",
        "--task",
        "order-1",
    ];
    let run = finish(b.abide(&[&task[..], &[&lab.url()]].concat()), b"");
    assert_eq!(run.code, 5, "{}", run.stderr);
    assert_eq!(lab.records().len(), 1);

    let o = shown(b, &scope).expect("the scope is listed by its name");
    assert_eq!(o["gate"]["cause"], "retry_after", "{o}");
    assert!(o["gate"]["next_allowed_at"].is_string(), "{o}");
    assert_eq!(o["breaker"]["state"], "closed");
    assert_eq!(o["tasks_kept"], 1);
    assert_eq!(o["slots_in_use"], 0);
    assert_eq!(o["retry_budget"]["retries_left"], 5.0);
    assert_eq!(o["hash"], abide::state::scope_hash(&scope));
    let text = state(b, &[]).stdout_text();
    assert!(text.contains(&scope), "{text}");
    assert!(text.contains("closed until"), "{text}");

    // Clearing forgets the gate, not the task's key: the next run goes.
    let cleared = state(b, &["clear", &scope]);
    assert_eq!(cleared.code, 0, "{}", cleared.stderr);
    let o = shown(b, &scope).expect("the task key keeps the record");
    assert_eq!(o["gate"]["next_allowed_at"], Value::Null, "{o}");
    assert_eq!(o["tasks_kept"], 1);
    let run = finish(b.abide(&["--scope", &scope, &lab.url()]), b"");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(lab.records().len(), 2, "sent at once");

    // Task keys go only when confirmed: off a terminal, with --yes.
    let refused = state(b, &["clear", &scope, "--tasks"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("--yes"), "{}", refused.stderr);
    assert_eq!(shown(b, &scope).unwrap()["tasks_kept"], 1);
    let cleared = state(
        b,
        &[
            "clear",
            &abide::state::scope_hash(&scope),
            "--tasks",
            "--yes",
        ],
    );
    assert_eq!(cleared.code, 0, "{}", cleared.stderr);
    assert!(shown(b, &scope).is_none(), "nothing left to remember");

    let unknown = state(b, &["clear", &format!("{scope}-none")]);
    assert_eq!(unknown.code, 2);
    assert!(unknown.stderr.contains("no scope"), "{}", unknown.stderr);
}

/// Looking at a state directory that does not exist creates nothing.
#[test]
fn looking_creates_no_state_directory() {
    let dir = temp_dir("inspect-none").join("state");
    let run = finish(abide(&["state", "--state-dir", dir.to_str().unwrap()]), b"");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "No scope is remembered.\n");
    let all = finish(
        abide(&[
            "state",
            "clear",
            "--all",
            "--state-dir",
            dir.to_str().unwrap(),
        ]),
        b"",
    );
    assert_eq!(all.code, 0, "{}", all.stderr);
    let one = finish(
        abide(&["state", "clear", "x", "--state-dir", dir.to_str().unwrap()]),
        b"",
    );
    assert_eq!(one.code, 2, "{}", one.stderr);
    assert!(!dir.exists());
}
