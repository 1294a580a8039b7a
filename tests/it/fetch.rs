//! The core retry loop, end to end: what was sent, when, and what was said.

use std::time::Duration;

use abide::lab::Step;

use crate::util::*;

const MS: fn(u64) -> Duration = Duration::from_millis;

#[test]
fn honours_retry_after_then_succeeds() {
    let lab = scripted(vec![
        Step::new(429).header("Retry-After", "1"),
        Step::new(200).body("done"),
    ]);
    let run = run(&["--jitter", "0", &format!("{}/v1/x", lab.url())]);
    let records = lab.records();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "done");
    assert_eq!(records.len(), 2);
    let gap = gaps(&records)[0];
    assert!(
        gap >= Duration::from_secs(1),
        "retried {gap:?} after Retry-After: 1"
    );
    assert!(gap < MS(1500), "waited {gap:?} for Retry-After: 1");
    let o = run.outcome();
    assert_eq!(o["outcome"], "SUCCEEDED");
    assert_eq!(o["attempts"], 2);
    assert_eq!(o["status"], 200);
    assert_eq!(o["retry_after_s"], 1.0);
    assert_eq!(o["history"][0]["status"], 429);
    assert_eq!(o["history"][0]["wait_ms"], 1000);
    assert!(o["waited_ms"].as_u64().unwrap() >= 1000);
}

#[test]
fn the_longest_delay_header_counts_and_the_floor_holds() {
    let lab = scripted(vec![
        // retry-after-ms is the longer of the two here; the floor is longer still.
        Step::new(503)
            .header("Retry-After", "0")
            .header("retry-after-ms", "200"),
        // A date in the past waits the floor.
        Step::new(429).header("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT"),
        Step::new(200),
    ]);
    let run = run(&["--jitter", "0", "--floor", "300ms", &lab.url()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let g = gaps(&lab.records());
    assert!(
        g[0] >= MS(300) && g[0] < MS(1000),
        "retry-after-ms 200 with floor 300ms: {g:?}"
    );
    assert!(
        g[1] >= MS(300) && g[1] < MS(1000),
        "past date waits the floor: {g:?}"
    );
}

#[test]
fn not_retryable_is_sent_once() {
    let lab = scripted(vec![Step::new(401).body("bad key"), Step::new(200)]);
    let run = run(&[&lab.url()]);
    assert_eq!(run.code, 3);
    assert_eq!(lab.records().len(), 1);
    assert!(
        run.stdout.is_empty(),
        "a failed body is never written to stdout"
    );
    let o = run.outcome();
    assert_eq!(o["outcome"], "NON_RETRYABLE");
    assert_eq!(o["error"], "bad key");
    assert!(
        o["instruction"]
            .as_str()
            .unwrap()
            .contains("fix the credentials")
    );
}

#[test]
fn curls_fail_and_show_error_flags_port_unchanged() {
    // `curl -fsS URL`: no error body on stdout, and a word on why; abide's
    // default already, so the flags are accepted, alone and bundled.
    let lab = scripted(vec![Step::new(404).body("no such report")]);
    let failed = run(&["-fsS", &lab.url()]);
    assert_eq!(failed.code, 3, "{}", failed.stderr);
    assert!(failed.stdout.is_empty(), "an error body reached stdout");
    assert_eq!(failed.outcome()["error"], "no such report");
    let lab = scripted(vec![Step::new(200).body("a,b\n")]);
    let split = run(&["-f", "-s", "-S", "-L", &lab.url()]);
    assert_eq!(split.code, 0, "{}", split.stderr);
    assert_eq!(split.stdout_text(), "a,b\n");
    let long = run(&["--fail", "--show-error", "-sL", &lab.url()]);
    assert_eq!(long.code, 0, "{}", long.stderr);
    assert_eq!(lab.records().len(), 2);
}

#[test]
fn http2_and_http3_are_refused_with_a_reason() {
    for flag in ["--http2", "--http3"] {
        let run = run(&[flag, "http://127.0.0.1:1/"]);
        assert_eq!(run.code, 2, "{}", run.stderr);
        let reason = run.outcome()["reason"].as_str().unwrap().to_string();
        assert!(reason.contains("abide speaks HTTP/1.1 only"), "{reason}");
    }
}

#[test]
fn stops_when_attempts_run_out() {
    let lab = scripted(vec![Step::new(503)]);
    let run = run(&["--attempts", "3", "--backoff", "10ms", &lab.url()]);
    assert_eq!(run.code, 4);
    assert_eq!(lab.records().len(), 3);
    assert_eq!(run.outcome()["outcome"], "RETRY_EXHAUSTED");
    // curl's spelling: --retry 1 is two attempts.
    let lab = scripted(vec![Step::new(503)]);
    assert_eq!(
        super::util::run(&["--retry", "1", "--backoff", "10ms", &lab.url()]).code,
        4
    );
    assert_eq!(lab.records().len(), 2);
}

#[test]
fn a_delay_beyond_the_budget_answers_at_once() {
    let lab = scripted(vec![
        Step::new(429).header("Retry-After", "120"),
        Step::new(200),
    ]);
    let before = std::time::SystemTime::now();
    let run = run(&[&lab.url()]);
    assert_eq!(run.code, 5);
    assert_eq!(lab.records().len(), 1);
    let o = run.outcome();
    assert_eq!(o["outcome"], "BUDGET_EXHAUSTED");
    assert!(
        o["elapsed_ms"].as_u64().unwrap() < 1000,
        "no partial sleep: {o}"
    );
    let at = humantime::parse_rfc3339(o["next_allowed_at"].as_str().unwrap()).unwrap();
    let ahead = at.duration_since(before).unwrap();
    assert!(
        ahead >= Duration::from_secs(120) && ahead < Duration::from_secs(125),
        "{ahead:?}"
    );
    assert!(
        o["instruction"]
            .as_str()
            .unwrap()
            .contains("do not call this endpoint again before")
    );

    let lab = scripted(vec![
        Step::new(429).header("Retry-After", "5"),
        Step::new(200),
    ]);
    let run = super::util::run(&["--max-wait", "2s", &lab.url()]);
    assert_eq!(run.code, 5);
    assert_eq!(lab.records().len(), 1);
    assert!(
        run.outcome()["reason"]
            .as_str()
            .unwrap()
            .contains("--max-wait")
    );
}

#[test]
fn the_attempt_in_flight_is_cut_at_the_budget() {
    let lab = scripted(vec![Step::new(200).delay(Duration::from_secs(5))]);
    let run = run(&["--budget", "700ms", &lab.url()]);
    assert_eq!(run.code, 5, "{}", run.stderr);
    let o = run.outcome();
    assert!(o["elapsed_ms"].as_u64().unwrap() < 1500, "{o}");
    assert_eq!(lab.records().len(), 1);
}

#[test]
fn max_time_limits_each_attempt() {
    let lab = scripted(vec![Step::new(200).delay(Duration::from_secs(5))]);
    let run = run(&[
        "-m",
        "200ms",
        "--attempts",
        "2",
        "--backoff",
        "10ms",
        &lab.url(),
    ]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert_eq!(lab.records().len(), 2);
    assert!(run.outcome()["error"].as_str().unwrap().contains("timeout"));
}

#[test]
fn writes_are_never_replayed_blindly() {
    // 503 to a POST: it may have been applied.
    let lab = scripted(vec![Step::new(503), Step::new(201)]);
    let run = run(&["-d", "x=1", &lab.url()]);
    assert_eq!(run.code, 7);
    assert_eq!(lab.records().len(), 1);
    let o = run.outcome();
    assert_eq!(o["outcome"], "SIDE_EFFECT_UNKNOWN");
    assert!(
        o["instruction"]
            .as_str()
            .unwrap()
            .contains("POST may have been applied")
    );

    // The connection dropped after the POST was sent: same.
    let lab = scripted(vec![Step::new(200).close(), Step::new(201)]);
    let run = super::util::run(&["-X", "PATCH", "--data-binary", "y", &lab.url()]);
    assert_eq!(run.code, 7, "{}", run.stderr);
    assert_eq!(lab.records().len(), 1);

    // A 429 says it was not processed: retried even for a POST.
    let lab = scripted(vec![
        Step::new(429).header("retry-after-ms", "10"),
        Step::new(201),
    ]);
    let run = super::util::run(&["--floor", "0", "-d", "x=1", &lab.url()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(lab.records().len(), 2);
}

#[test]
fn an_idempotency_key_makes_a_write_repeatable_and_stays_the_same() {
    let lab = scripted(vec![Step::new(503), Step::new(200).close(), Step::new(201)]);
    let run = run(&[
        "--backoff",
        "10ms",
        "--idempotency-key",
        "auto",
        "--json",
        "{\"amount\":1}",
        &lab.url(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let records = lab.records();
    assert_eq!(records.len(), 3);
    let keys: Vec<&str> = records
        .iter()
        .map(|r| r.header("Idempotency-Key").unwrap())
        .collect();
    assert_eq!(keys[0].len(), 36, "a UUID");
    assert!(keys.iter().all(|k| *k == keys[0]), "{keys:?}");
    assert_eq!(run.outcome()["idempotency_key"], keys[0]);
    for r in &records {
        assert_eq!(r.method, "POST");
        assert_eq!(r.body, b"{\"amount\":1}");
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(r.header("accept"), Some("application/json"));
    }
}

#[test]
fn stdin_is_replayed_byte_for_byte() {
    let lab = scripted(vec![Step::new(503), Step::new(200)]);
    let body = b"\x00binary\r\nline two\xff";
    let run = run_with_stdin(
        &[
            "-X",
            "PUT",
            "--data-binary",
            "@-",
            "--backoff",
            "10ms",
            &lab.url(),
        ],
        body,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let records = lab.records();
    assert_eq!(records.len(), 2);
    assert!(records.iter().all(|r| r.body == body));
}

#[test]
fn a_body_file_is_sent_on_every_attempt() {
    let dir = temp_dir("bodyfile");
    let file = dir.join("body.bin");
    std::fs::write(&file, vec![7u8; 100_000]).unwrap();
    let lab = scripted(vec![
        Step::new(429).header("retry-after-ms", "1"),
        Step::new(200),
    ]);
    let run = run(&[
        "--floor",
        "0",
        "-X",
        "PUT",
        "--data-binary",
        &format!("@{}", file.display()),
        &lab.url(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let records = lab.records();
    assert_eq!(records.len(), 2);
    assert!(
        records
            .iter()
            .all(|r| r.body.len() == 100_000 && r.body.iter().all(|&b| b == 7))
    );
}

#[test]
fn a_failed_run_never_clobbers_the_output_file() {
    let dir = temp_dir("output");
    let out = dir.join("result.json");
    std::fs::write(&out, "old").unwrap();
    let lab = scripted(vec![Step::new(503).body("partial garbage")]);
    let run = run(&[
        "--attempts",
        "2",
        "--backoff",
        "10ms",
        "-o",
        out.to_str().unwrap(),
        &lab.url(),
    ]);
    assert_eq!(run.code, 4);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "old");
    assert_eq!(files_in(&dir), ["result.json"], "no temporary file left");

    // A body that breaks off is retried into a clean file, then put in place.
    let lab = scripted(vec![
        Step::new(200).body("x".repeat(5000)).truncate(),
        Step::new(200).body("new"),
    ]);
    let run = super::util::run(&["--backoff", "10ms", "-o", out.to_str().unwrap(), &lab.url()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(lab.records().len(), 2);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "new");
    assert_eq!(files_in(&dir), ["result.json"]);
    assert!(run.stdout.is_empty());
}

#[test]
fn refused_connections_are_retried_for_every_method() {
    // Bind and drop a listener to find a port that refuses.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let run = run(&[
        "-d",
        "x",
        "--attempts",
        "2",
        "--backoff",
        "10ms",
        &format!("127.0.0.1:{port}"),
    ]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    let o = run.outcome();
    assert_eq!(o["attempts"], 2);
    assert_eq!(o["status"], serde_json::Value::Null);
    assert_eq!(o["error"], "connection refused");
}

#[test]
fn the_server_can_say_whether_to_retry() {
    let lab = scripted(vec![
        Step::new(503).header("x-should-retry", "false"),
        Step::new(200),
    ]);
    assert_eq!(run(&[&lab.url()]).code, 3);
    assert_eq!(lab.records().len(), 1);
    let lab = scripted(vec![
        Step::new(409).header("X-Should-Retry", "true"),
        Step::new(200),
    ]);
    assert_eq!(run(&["--backoff", "10ms", &lab.url()]).code, 0);
    assert_eq!(lab.records().len(), 2);
}

#[test]
fn redirects_are_final_unless_followed() {
    let lab = scripted(vec![
        Step::new(302).header("Location", "/next"),
        Step::new(200).body("there"),
    ]);
    let run = run(&[&lab.url()]);
    assert_eq!(run.code, 0);
    assert_eq!(run.outcome()["status"], 302);
    assert_eq!(lab.records().len(), 1);
    let lab = scripted(vec![
        Step::new(302).header("Location", "/next"),
        Step::new(200).body("there"),
    ]);
    let run = super::util::run(&["-L", &lab.url()]);
    assert_eq!(run.outcome()["status"], 200);
    assert_eq!(run.stdout_text(), "there");
    assert_eq!(lab.records().last().unwrap().path, "/next");
}

#[test]
fn empty_success_is_success() {
    let lab = scripted(vec![Step::new(204).body("")]);
    let run = run(&[&lab.url()]);
    assert_eq!(run.code, 0);
    assert!(run.stdout.is_empty());
    assert_eq!(run.outcome()["status"], 204);
}

#[test]
fn credentials_never_appear_in_any_output() {
    let lab = scripted(vec![
        Step::new(503).body("echo: Bearer s3cr3t-bearer"),
        Step::new(401),
    ]);
    let url = format!(
        "{}/p?api_key=s3cr3t-query&page=2",
        lab.url().replace("http://", "http://ann:s3cr3t-userinfo@")
    );
    let run = run(&[
        "-v",
        "--backoff",
        "10ms",
        "-H",
        "Authorization: Bearer s3cr3t-bearer",
        "-H",
        "Cookie: s=s3cr3t-cookie",
        &url,
    ]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(!run.stderr.contains("s3cr3t"), "{}", run.stderr);
    let o = run.outcome();
    assert_eq!(o["url"], format!("{}/p?api_key=***&page=2", lab.url()));
    assert_eq!(o["history"][0]["status"], 503);
    // They were sent, though.
    let first = &lab.records()[0];
    assert_eq!(first.header("authorization"), Some("Bearer s3cr3t-bearer"));
    assert_eq!(first.path, "/p?api_key=s3cr3t-query&page=2");

    let run = super::util::run(&["-u", "ann:s3cr3t-pass", "-v", &lab.url()]);
    assert!(!run.stderr.contains("s3cr3t"), "{}", run.stderr);
    assert_eq!(
        lab.records().last().unwrap().header("authorization"),
        Some("Basic YW5uOnMzY3IzdC1wYXNz")
    );
}

#[test]
fn usage_errors_send_nothing() {
    let lab = scripted(vec![Step::new(200)]);
    for args in [
        vec!["--budget", "soon", &lab.url()[..]],
        vec!["--outcome", "stdout", &lab.url()],
        vec!["-H", "no colon", &lab.url()],
        vec!["--retry-on", "abc", &lab.url()],
        vec!["ftp://example.com/"],
        vec!["-o", "/nonexistent-dir/out", &lab.url()],
        vec!["--outcome", "/nonexistent-dir/outcomes", &lab.url()],
        vec!["--log", "/nonexistent-dir/log", &lab.url()],
        vec!["--rate", "5/s", "--no-state", &lab.url()],
        vec!["--max-concurrent", "2", "--no-state", &lab.url()],
        vec!["-H", "X-Note: a\x01b", &lab.url()],
        vec!["-H", "X-Note: a\x7fb", &lab.url()],
        vec!["--budget", "-1s", &lab.url()],
        vec![&lab.url(), "http://example.com/"],
    ] {
        let run = run(&args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains("error"), "{args:?}: {}", run.stderr);
        // After the message for a person, the one outcome line for a script,
        // where --outcome says.
        let lines = format!("{}{}", run.stderr, run.stdout_text());
        assert_eq!(
            lines.matches("\"outcome\":\"USAGE_ERROR\"").count(),
            1,
            "{args:?}: {lines}"
        );
    }
    assert_eq!(lab.records().len(), 0);
}

#[test]
fn usage_errors_say_what_is_wrong() {
    let said = |args: &[&str]| run(args).outcome()["reason"].as_str().unwrap().to_string();
    let two = said(&["http://127.0.0.1:1/a", "http://127.0.0.1:1/b"]);
    assert!(two.contains("abide takes one URL"), "{two}");
    let negative = said(&["--budget", "-1s", "h"]);
    assert!(
        negative.contains("durations cannot be negative"),
        "{negative}"
    );
    let mut cmd = abide(&["h"]);
    cmd.env("ABIDE_ATTEMPTS", "zero");
    let from_env = finish(cmd, b"");
    assert_eq!(from_env.code, 2);
    assert!(
        from_env.stderr.contains("ABIDE_ATTEMPTS=zero"),
        "{}",
        from_env.stderr
    );
    // A usage line shows no flag the user never typed.
    let mut cmd = abide(&["--outcome", "none", "h"]);
    cmd.env("ABIDE_TASK", "t1");
    let task = finish(cmd, b"");
    assert_eq!(task.code, 2);
    let usage = task
        .stderr
        .lines()
        .find(|l| l.starts_with("Usage:"))
        .unwrap();
    assert_eq!(usage, "Usage: abide [OPTIONS] <URL>", "{}", task.stderr);
    // Messages about files and the state directory name the path.
    let dir = temp_dir("usage-paths");
    let not_a_dir = dir.join("file");
    std::fs::write(&not_a_dir, "").unwrap();
    let state = not_a_dir.join("state");
    let out = run(&[
        "--state-dir",
        state.to_str().unwrap(),
        "--state-required",
        "http://127.0.0.1:1/",
    ]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let reason = out.outcome()["reason"].as_str().unwrap().to_string();
    assert!(reason.contains(state.to_str().unwrap()), "{reason}");
    // The outcome line goes where --outcome says, even for clap's errors.
    let dir = temp_dir("usage-outcome");
    let file = dir.join("outcomes.jsonl");
    let run = run(&[
        "--outcome",
        file.to_str().unwrap(),
        "--attempts",
        "zero",
        "h",
    ]);
    assert_eq!(run.code, 2);
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.contains("\"USAGE_ERROR\""), "{written}");
}

#[test]
fn requests_are_sent_as_the_user_meant_them() {
    let lab = scripted(vec![Step::new(200)]);
    for method in ["POST", "PUT", "PATCH"] {
        let run = run(&["-X", method, &lab.url()]);
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
    for sent in lab.records() {
        assert_eq!(sent.header("content-length"), Some("0"), "{}", sent.method);
        assert_eq!(sent.header("transfer-encoding"), None, "{}", sent.method);
    }
    // Default headers go when -H "Name:" says so, Accept and Accept-Encoding included.
    let lab = scripted(vec![Step::new(200)]);
    let run = run(&[
        "-H",
        "Accept:",
        "-H",
        "Accept-Encoding:",
        "-H",
        "User-Agent:",
        &lab.url(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let sent = &lab.records()[0];
    for name in ["accept", "accept-encoding", "user-agent"] {
        assert_eq!(sent.header(name), None, "{name}");
    }
    let run = super::util::run(&[&lab.url()]);
    assert_eq!(run.code, 0);
    assert_eq!(lab.records()[1].header("accept"), Some("*/*"));
    // Non-ASCII in the path and query is percent-encoded, as curl does.
    let run = super::util::run(&[&format!("{}/caf\u{e9}?q=\u{fc}", lab.url())]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(lab.records()[2].path, "/caf%C3%A9?q=%C3%BC");
    // -o - is stdout.
    let dir = temp_dir("dash-output");
    let lab = scripted(vec![Step::new(200).body("to stdout")]);
    let mut cmd = abide(&["-o", "-", &lab.url()]);
    cmd.current_dir(&dir);
    let run = finish(cmd, b"");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "to stdout");
    assert!(files_in(&dir).is_empty(), "{:?}", files_in(&dir));
}

#[test]
fn redirects_are_followed_as_curl_follows_them() {
    // 307 and 308 re-send the method and the body: the server did not act on it.
    for status in [307, 308] {
        let lab = scripted(vec![
            Step::new(status).header("Location", "/v1/x/"),
            Step::new(201).body("made"),
        ]);
        let out = run(&[
            "-L",
            "-u",
            "ann:pw",
            "-H",
            "Cookie: s=1",
            "-d",
            "a=1",
            &format!("{}/v1/x", lab.url()),
        ]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(out.outcome()["status"], 201);
        let sent = lab.records();
        assert_eq!(sent.len(), 2);
        assert_eq!(
            (sent[1].method.as_str(), sent[1].path.as_str()),
            ("POST", "/v1/x/")
        );
        assert_eq!(sent[1].body, b"a=1");
        // The same origin keeps the credentials and the cookie.
        assert_eq!(sent[1].header("authorization"), Some("Basic YW5uOnB3"));
        assert_eq!(sent[1].header("cookie"), Some("s=1"));
    }
    // 303 (and 301/302 after a POST) turn it into a GET without a body or its type.
    let lab = scripted(vec![
        Step::new(303).header("Location", "/done"),
        Step::new(200),
    ]);
    let out = run(&["-L", "--json", "{}", &lab.url()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sent = &lab.records()[1];
    assert_eq!(sent.method, "GET");
    assert!(sent.body.is_empty());
    assert_eq!(sent.header("content-type"), None);
    // A POST answered 303 may have been applied: a failure on the way to
    // the result never sends it again.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let lab = scripted(vec![
        Step::new(303).header("Location", format!("http://{closed}/result")),
    ]);
    let out = run(&["-L", "-d", "a=1", "--backoff", "10ms", &lab.url()]);
    assert_eq!(
        out.outcome()["outcome"],
        "SIDE_EFFECT_UNKNOWN",
        "{}",
        out.stderr
    );
    assert_eq!(lab.records().len(), 1);
    // Another origin gets neither.
    let other = scripted(vec![Step::new(200)]);
    let lab = scripted(vec![
        Step::new(302).header("Location", format!("{}/there", other.url())),
    ]);
    let out = run(&["-L", "-u", "ann:pw", "-H", "Cookie: s=1", &lab.url()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sent = &other.records()[0];
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(sent.header("cookie"), None);
    // A Retry-After on a redirect is waited before following it.
    let lab = scripted(vec![
        Step::new(302)
            .header("Location", "/later")
            .header("Retry-After-Ms", "300"),
        Step::new(200),
    ]);
    let out = run(&["-L", &lab.url()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sent = lab.records();
    assert!(gaps(&sent)[0] >= MS(300), "{:?}", gaps(&sent));
    // A wait longer than the attempt may take is not cut short, nor
    // ignored by retrying at once: it ends the run, naming -m.
    let lab = scripted(vec![
        Step::new(302)
            .header("Location", "/later")
            .header("Retry-After", "30"),
    ]);
    let out = run(&["-L", "-m", "1s", &lab.url()]);
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(
        out.outcome()["instruction"]
            .as_str()
            .unwrap()
            .contains("-m/--max-time")
    );
    assert_eq!(lab.records().len(), 1);
    // Without -L, the outcome says where it points.
    let lab = scripted(vec![Step::new(302).header("Location", "/next")]);
    let out = run(&[&lab.url()]);
    let instruction = out.outcome()["instruction"].as_str().unwrap().to_string();
    assert!(
        instruction.contains("/next") && instruction.contains("-L"),
        "{instruction}"
    );
}

#[test]
fn failures_that_waiting_cannot_fix_end_at_once() {
    let run = run(&["--backoff", "10ms", "http://no-such-host.invalid/"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    let o = run.outcome();
    assert_eq!(o["outcome"], "NON_RETRYABLE");
    assert_eq!(o["attempts"], 1);
    assert!(
        o["instruction"]
            .as_str()
            .unwrap()
            .contains("check the host name"),
        "{o}"
    );
}

#[test]
fn outcome_lines_can_go_to_a_shared_log_or_stdout() {
    let dir = temp_dir("outcome");
    let log = dir.join("runs.jsonl");
    let lab = scripted(vec![Step::new(200).body("hi")]);
    for _ in 0..2 {
        let run = run(&["--outcome", log.to_str().unwrap(), &lab.url()]);
        assert_eq!(run.code, 0);
        assert!(run.stderr.is_empty(), "{}", run.stderr);
    }
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.lines().count(), 2);
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["outcome"], "SUCCEEDED");
    }
    let out = dir.join("body");
    let run = run(&[
        "--outcome",
        "stdout",
        "-o",
        out.to_str().unwrap(),
        &lab.url(),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(v["exit_code"], 0);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "hi");
}

#[test]
fn a_write_whose_answer_broke_off_on_stdout_is_not_called_final() {
    // The 2xx says the POST was applied; its body broke off, and a write is
    // never replayed to get the rest.
    let lab = scripted(vec![
        Step::new(201).body("x".repeat(5000)).truncate(),
        Step::new(201),
    ]);
    let run = run(&["-X", "POST", "-d", "x", &lab.url()]);
    assert_eq!(run.code, 7, "{}", run.stderr);
    assert_eq!(lab.records().len(), 1);
    assert!(
        run.outcome()["instruction"]
            .as_str()
            .unwrap()
            .contains("check the resource")
    );
}

#[test]
fn proxies_user_agents_and_ca_files() {
    let lab = scripted(vec![Step::new(200).body("direct")]);
    let run = run(&["-A", "tester/1.0", &lab.url()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(lab.records()[0].header("user-agent"), Some("tester/1.0"));

    // A proxy that refuses: the request goes to it (and fails before sending,
    // so it is retried), never to the lab directly. -x and the usual
    // environment variable alike.
    let refusing = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let proxy = format!("http://127.0.0.1:{refusing}");
    let run = super::util::run(&[
        "-x",
        &proxy,
        "--attempts",
        "2",
        "--backoff",
        "10ms",
        &lab.url(),
    ]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    let mut cmd = abide(&["--attempts", "1", &lab.url()]);
    cmd.env("http_proxy", &proxy).env("HTTP_PROXY", &proxy);
    assert_eq!(finish(cmd, b"").code, 4);
    // A SOCKS proxy too, with ureq's connectors or with the --cacert ones.
    let socks = proxy.replace("http://", "socks5://");
    let dir = temp_dir("socks-cacert");
    let (cert, _) = self_signed(&dir, "ca");
    for extra in [&[][..], &["--cacert", cert.to_str().unwrap()]] {
        let out =
            super::util::run(&[&["-x", &socks, "--attempts", "1"], extra, &[&lab.url()]].concat());
        assert_eq!(out.code, 4, "{extra:?}: {}", out.stderr);
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
        assert_eq!(out.outcome()["error"], "connection refused");
    }
    assert_eq!(lab.records().len(), 1, "nothing went around the proxy");

    // A CA file that is not PEM is a usage error, before anything is sent.
    let dir = temp_dir("cacert");
    let bad = dir.join("ca.pem");
    std::fs::write(&bad, "not a certificate").unwrap();
    let run = super::util::run(&["--cacert", bad.to_str().unwrap(), &lab.url()]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(lab.records().len(), 1);
}

#[test]
fn a_self_signed_cacert_is_trusted_as_curl_trusts_it() {
    let dir = temp_dir("self-signed");
    let server = tls_server(&dir);
    let cacert = server.cert.to_str().unwrap();
    let out = run(&["--no-state", "--cacert", cacert, &server.url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout_text(), "ok");
    // Without it, or with another certificate, the refusal is final and says so.
    let (other, _) = self_signed(&dir, "other");
    let others = [
        vec![],
        vec!["--cacert", other.to_str().unwrap()],
        // The operating system's store does not hold it either.
        vec!["--ca-native"],
    ];
    for extra in others {
        let out = run(&[
            &["--no-state", "--backoff", "10ms"],
            &extra[..],
            &[&server.url],
        ]
        .concat());
        assert_eq!(out.code, 3, "{extra:?}: {}", out.stderr);
        let o = out.outcome();
        assert_eq!(o["attempts"], 1, "{o}");
        let instruction = o["instruction"].as_str().unwrap();
        assert!(
            instruction.contains("pass --cacert or fix the certificate"),
            "{o}"
        );
        assert!(!o["error"].as_str().unwrap().contains("Other("), "{o}");
    }
}
