//! Agent tool mode, response contracts, the no-progress guard, task-scoped
//! idempotency keys and the audit log.

use abide::lab::Step;
use serde_json::Value;

use crate::util::*;

/// An agent call with its own state directory: stdout must be one JSON object.
fn agent_call(dir: &std::path::Path, args: &[&str]) -> (Run, Value) {
    let mut cmd = abide(&["--agent"]);
    cmd.args(args).arg("--state-dir").arg(dir);
    let run = finish(cmd, b"");
    let text = run.stdout_text();
    assert_eq!(
        text.lines().count(),
        1,
        "exactly one line on stdout: {text}"
    );
    assert!(run.stderr.is_empty(), "nothing on stderr: {}", run.stderr);
    let object: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(object["exit_code"], run.code);
    (run, object)
}

#[test]
fn success_comes_as_one_object_with_body_and_headers() {
    let dir = temp_dir("agent-ok");
    let lab = scripted(vec![
        Step::new(200)
            .header("Content-Type", "application/json")
            .header("X-RateLimit-Remaining", "9")
            .header("Set-Cookie", "session=s3cr3t")
            .body(r#"{"items":[1,2],"next":null}"#),
    ]);
    let (run, o) = agent_call(&dir, &["-v", &lab.url()]);
    assert_eq!(run.code, 0);
    assert_eq!(o["outcome"], "SUCCEEDED");
    assert_eq!(
        o["body"],
        serde_json::json!({"items": [1, 2], "next": null})
    );
    assert_eq!(o["body_truncated"], false);
    assert_eq!(o["headers"]["content-type"], "application/json");
    assert_eq!(o["headers"]["x-ratelimit-remaining"], "9");
    assert!(o["headers"].get("set-cookie").is_none());
    assert!(o["history"].is_array());
}

#[test]
fn a_long_retry_after_answers_at_once_with_the_time_to_come_back() {
    let dir = temp_dir("agent-429");
    let lab = scripted(vec![
        Step::new(429).header("Retry-After", "120"),
        Step::new(200),
    ]);
    let (run, o) = agent_call(&dir, &[&lab.url()]);
    assert_eq!(run.code, 5);
    assert_eq!(lab.records().len(), 1);
    let at = o["next_allowed_at"].as_str().unwrap();
    let instruction = o["instruction"].as_str().unwrap();
    assert!(
        instruction.contains("120 s") && instruction.contains(at),
        "{instruction}"
    );
    assert_eq!(o["headers"]["retry-after"], "120");
    assert!(o["elapsed_ms"].as_u64().unwrap() < 1000);
}

#[test]
fn unauthorized_says_fix_the_credentials() {
    let dir = temp_dir("agent-401");
    let lab = scripted(vec![Step::new(401).body(r#"{"error":"bad key"}"#)]);
    let (run, o) = agent_call(&dir, &[&lab.url()]);
    assert_eq!(run.code, 3);
    assert_eq!(o["body"]["error"], "bad key");
    assert!(
        o["instruction"]
            .as_str()
            .unwrap()
            .contains("fix the credentials")
    );
}

#[test]
fn a_large_text_body_is_cut_at_max_body() {
    let dir = temp_dir("agent-big");
    let lab = scripted(vec![Step::new(200).body("x".repeat(5000))]);
    let (run, o) = agent_call(&dir, &["--max-body", "1KiB", &lab.url()]);
    assert_eq!(run.code, 0);
    assert_eq!(o["body"].as_str().unwrap().len(), 1024);
    assert_eq!(o["body_truncated"], true);
    let lab = scripted(vec![Step::new(404).body("y".repeat(3000))]);
    let (_, o) = agent_call(&dir, &["--max-body", "2KiB", &lab.url()]);
    assert_eq!(o["body"].as_str().unwrap().len(), 2048);
    assert_eq!(o["body_truncated"], true);
}

#[test]
fn usage_errors_are_objects_too() {
    let dir = temp_dir("agent-usage");
    for args in [
        &["--budget", "soon", "h"][..],
        &["--require", "no-slash", "h"],
        &["ftp://x/"],
    ] {
        let (run, o) = agent_call(&dir, args);
        assert_eq!(run.code, 2, "{args:?}");
        assert_eq!(o["outcome"], "USAGE_ERROR");
        assert!(
            o["reason"].as_str().unwrap().starts_with("Usage error: "),
            "{o}"
        );
    }
}

#[test]
fn require_checks_the_contract() {
    let body = r#"{"data":{"items":[],"cursor":null}}"#;
    let lab = scripted(vec![Step::new(200).body(body)]);
    let ok = run(&[
        "--require",
        "/data/items",
        "--require",
        "/data/cursor",
        &lab.url(),
    ]);
    assert_eq!(
        ok.code, 0,
        "empty array and null count as present: {}",
        ok.stderr
    );
    assert_eq!(ok.stdout_text(), body);
    let missing = run(&["--require", "/data/total", &lab.url()]);
    assert_eq!(missing.code, 8);
    assert!(
        missing.stdout.is_empty(),
        "a broken contract writes no body"
    );
    let o = missing.outcome();
    assert_eq!(o["outcome"], "INVALID_RESPONSE");
    assert!(o["reason"].as_str().unwrap().contains("/data/total"), "{o}");
    assert_eq!(lab.records().len(), 2, "not retried");

    let html = scripted(vec![Step::new(200).body("<html>maintenance</html>")]);
    let dir = temp_dir("contract");
    let out = dir.join("out.json");
    std::fs::write(&out, "old").unwrap();
    let run = run(&[
        "--require",
        "/data",
        "-o",
        out.to_str().unwrap(),
        &html.url(),
    ]);
    assert_eq!(run.code, 8);
    assert!(
        run.outcome()["reason"]
            .as_str()
            .unwrap()
            .contains("not JSON")
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "old");
}

#[test]
fn the_fourth_identical_failure_is_refused_unsent_and_a_changed_one_goes() {
    let dir = temp_dir("noprogress");
    let lab = scripted(vec![Step::new(400).body(r#"{"error":"missing field"}"#)]);
    let url = format!("{}/v1/search", lab.url());
    for i in 1..=3 {
        let key = format!("Idempotency-Key: k{i}");
        let (run, o) = agent_call(&dir, &["-H", &key, "--json", "{\"q\":1}", &url]);
        assert_eq!(run.code, 3, "call {i}");
        assert_eq!(o["outcome"], "NON_RETRYABLE");
    }
    let (run, o) = agent_call(&dir, &["--json", "{\"q\":1}", &url]);
    assert_eq!(run.code, 9);
    assert_eq!(o["outcome"], "NO_PROGRESS");
    assert_eq!(o["attempts"], 0);
    assert!(
        o["instruction"]
            .as_str()
            .unwrap()
            .contains("change the request")
    );
    assert_eq!(lab.records().len(), 3, "refused without sending");
    let (run, _) = agent_call(&dir, &["--json", "{\"q\":2}", &url]);
    assert_eq!(run.code, 3, "a changed request is sent");
    assert_eq!(lab.records().len(), 4);
    // The state keeps hashes, never the request.
    let files = super::util::state_files(&dir);
    assert!(!files.is_empty(), "no state file was written to check");
    for text in files {
        assert!(
            !text.contains("search") && !text.contains("\"q\""),
            "{text}"
        );
    }
}

#[test]
fn a_task_key_survives_a_rerun() {
    let dir = temp_dir("task");
    let lab = scripted(vec![Step::new(500)]);
    let call = |task: &str| {
        let mut cmd = abide(&[
            "--attempts",
            "1",
            "--task",
            task,
            "--idempotency-key",
            "auto",
            "-d",
            "pay=1",
            &lab.url(),
        ]);
        cmd.arg("--state-dir").arg(&dir);
        finish(cmd, b"")
    };
    let first = call("order-17");
    assert_eq!(first.code, 4, "{}", first.stderr);
    let again = call("order-17");
    let other = call("order-18");
    let keys: Vec<String> = lab
        .records()
        .iter()
        .map(|r| r.header("Idempotency-Key").unwrap().to_string())
        .collect();
    assert_eq!(keys.len(), 3);
    assert_eq!(keys[0], keys[1], "the rerun reuses the task's key");
    assert_ne!(keys[0], keys[2], "another task gets another key");
    assert_eq!(first.outcome()["idempotency_key"], keys[0]);
    assert_eq!(again.outcome()["idempotency_key"], keys[0]);
    assert_eq!(other.outcome()["idempotency_key"], keys[2]);
}

#[test]
fn the_audit_log_tells_the_run_in_order_and_redacted() {
    let dir = temp_dir("audit");
    let log = dir.join("audit.jsonl");
    let lab = scripted(vec![
        Step::new(429).header("retry-after-ms", "50"),
        Step::new(200),
    ]);
    let url = format!("{}/p?api_key=s3cr3t-q", lab.url());
    for _ in 0..2 {
        let run = run(&[
            "--floor",
            "0",
            "--log",
            log.to_str().unwrap(),
            "-H",
            "Authorization: Bearer s3cr3t-h",
            "--idempotency-key",
            "k-1",
            &url,
        ]);
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains("s3cr3t"), "{text}");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let first_run: Vec<&Value> = lines
        .iter()
        .filter(|l| l["run"] == lines[0]["run"])
        .collect();
    let events: Vec<&str> = first_run
        .iter()
        .map(|l| l["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        events,
        [
            "start", "request", "response", "wait", "request", "response", "outcome"
        ]
    );
    let seqs: Vec<u64> = first_run
        .iter()
        .map(|l| l["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(first_run[1]["idempotency_key"], "k-1");
    assert_eq!(first_run[1]["url"], format!("{}/p?api_key=***", lab.url()));
    assert_eq!(first_run[2]["status"], 429);
    assert!(
        first_run[3]["reason"]
            .as_str()
            .unwrap()
            .contains("retry-after-ms")
    );
    assert_eq!(first_run[6]["outcome"], "SUCCEEDED");
    assert!(
        first_run
            .iter()
            .all(|l| l["time"].as_str().unwrap().ends_with('Z'))
    );
    // The second run found the lab past its 429: start, request, response,
    // outcome.
    assert_eq!(lines.len(), 11, "two runs appended");
}

#[test]
fn a_task_without_state_is_refused_unsent() {
    let lab = scripted(vec![Step::new(200)]);
    let dir = temp_dir("task-no-state");
    // A state directory that cannot be created: a file stands in the way.
    let blocker = dir.join("file");
    std::fs::write(&blocker, "").unwrap();
    let state = blocker.join("state");
    let mut cmd = abide(&[
        "--task",
        "t1",
        "--idempotency-key",
        "auto",
        "-d",
        "pay=1",
        &lab.url(),
    ]);
    cmd.arg("--state-dir").arg(&state);
    let run = finish(cmd, b"");
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        lab.records().len(),
        0,
        "a key that would not survive a rerun is not used"
    );
    assert!(run.outcome()["reason"].as_str().unwrap().contains("--task"));
}

#[test]
fn a_closed_stdout_does_not_crash_agent_mode() {
    let lab = scripted(vec![Step::new(200).body("{}")]);
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = abide(&["--agent", "--no-state", &lab.url()])
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A credential shorter than 8 characters is masked where abide put it, and
/// nowhere else: it must not corrupt the URL or the body an agent reads.
#[test]
fn a_short_credential_never_corrupts_the_answer() {
    let dir = temp_dir("agent-short-secret");
    let lab = scripted(vec![
        Step::new(200)
            .header("Content-Type", "application/json")
            .body(r#"{"user":"admin","id":1}"#),
    ]);
    let url = format!("{}/v1/items/1", lab.url());
    let (_, o) = agent_call(&dir, &["-H", "X-Api-Key: 1", "-u", "admin:admin", &url]);
    assert_eq!(o["url"], url.as_str());
    assert_eq!(o["body"], serde_json::json!({"user": "admin", "id": 1}));
    assert_eq!(lab.records()[0].header("x-api-key"), Some("1"));
}

#[test]
fn cut_and_binary_bodies_are_said_for_what_they_are() {
    let dir = temp_dir("agent-bodies");
    let lab = scripted(vec![Step::new(200).body("x".repeat(1000))]);
    let (_, o) = agent_call(&dir, &["--max-body", "100", &lab.url()]);
    assert_eq!(o["body_truncated"], true);
    assert_eq!(o["body"].as_str().unwrap().len(), 100);
    let instruction = o["instruction"].as_str().unwrap();
    for words in ["1000", "--max-body", "-o FILE"] {
        assert!(instruction.contains(words), "{words}: {instruction}");
    }
    // Not UTF-8: base64, and said so, never mojibake.
    let png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe".to_vec();
    let lab = scripted(vec![
        Step::new(200)
            .header("Content-Type", "image/png")
            .body(png.clone()),
    ]);
    let (_, o) = agent_call(&dir, &[&lab.url()]);
    assert_eq!(o["body_encoding"], "base64");
    use base64::Engine as _;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(o["body"].as_str().unwrap())
        .unwrap();
    assert_eq!(decoded, png);
    // A redirect without -L says where it goes.
    let lab = scripted(vec![Step::new(301).header("Location", "/v2/items")]);
    let (_, o) = agent_call(&dir, &[&lab.url()]);
    let instruction = o["instruction"].as_str().unwrap();
    assert!(
        instruction.contains("/v2/items") && instruction.contains("-L"),
        "{instruction}"
    );
}
