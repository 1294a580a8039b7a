//! A sweep for credentials: every output a run can make (the outcome line on
//! stderr, stdout or in an `--outcome` file, `-v` narration, error and
//! usage messages) after every way a run can end, with credentials in
//! headers, URL user-info, `-u` and the query string. Every credential
//! holds the marker `s3cr3t`, and the marker must appear nowhere.

use abide::lab::Step;

use crate::util::*;

const MARKER: &str = "s3cr3t";

/// Every kind of credential, as arguments (the URL's user-info and query
/// are added by `url`).
const HEADERS: [&str; 8] = [
    "-H",
    "Authorization: Bearer s3cr3t-bearer",
    "-H",
    "Cookie: session=s3cr3t-cookie; theme=dark",
    "-H",
    "X-Api-Key: s3cr3t-apikey",
    "-H",
    "Proxy-Authorization: Basic s3cr3t-proxy",
];

/// `base` with user-info and secret query values, some of them under names
/// that are encoded, `;`-separated or short.
fn url(base: &str) -> String {
    format!(
        "{}/v1/items?token=s3cr3t-token&api_key=s3cr3t-query&sig=s3cr3t-sig&page=2\
         &jwt=s3cr3t-jwt;access_token=s3cr3t-semi&api%5Fkey=s3cr3t-encoded&pass=s3cr3t-pass",
        base.replace("http://", "http://ann:s3cr3t-userinfo@")
    )
}

/// An error body that echoes every credential back, as careless servers do,
/// and the `user` credentials of the run.
fn echo(user: &str) -> String {
    format!(
        "request was: Authorization: Bearer s3cr3t-bearer Cookie: session=s3cr3t-cookie \
         X-Api-Key: s3cr3t-apikey s3cr3t-proxy user {user} \
         ?token=s3cr3t-token&api_key=s3cr3t-query&sig=s3cr3t-sig"
    )
}

/// Runs with every credential header, `extra` arguments, and `target`.
fn run_with(extra: &[&str], target: &str) -> Run {
    run(&[&HEADERS[..], extra, &[target]].concat())
}

fn assert_clean(what: &str, text: &str) {
    assert!(!text.contains(MARKER), "{what} shows a credential:\n{text}");
}

fn assert_run_clean(what: &str, run: &Run) {
    assert_clean(&format!("{what}: stderr"), &run.stderr);
    assert_clean(&format!("{what}: stdout"), &run.stdout_text());
}

#[test]
fn answers_that_echo_credentials_are_masked_everywhere() {
    let lab = scripted(vec![
        Step::new(503).body(echo("ann:s3cr3t-userinfo")),
        Step::new(429)
            .header("Retry-After", "0")
            .body(echo("ann:s3cr3t-userinfo")),
        Step::new(401).body(echo("ann:s3cr3t-userinfo")),
    ]);
    let run = run_with(
        &["-v", "--floor", "10ms", "--backoff", "10ms"],
        &url(&lab.url()),
    );
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_run_clean("outcome on stderr", &run);
    let o = run.outcome();
    assert_eq!(o["history"].as_array().unwrap().len(), 3);
    assert!(
        o["error"].as_str().unwrap().contains("Authorization: ***"),
        "{o}"
    );

    // The same with -u, and the outcome appended to a file.
    let dir = temp_dir("secrets-outcome-file");
    let log = dir.join("runs.jsonl");
    let lab = scripted(vec![Step::new(401).body(echo("ann:s3cr3t-pass"))]);
    let target = url(&lab.url()).replace("ann:s3cr3t-userinfo@", "");
    let extra = [
        "-v",
        "-u",
        "ann:s3cr3t-pass",
        "--outcome",
        log.to_str().unwrap(),
    ];
    let run = run_with(&extra, &target);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_run_clean("-v with --outcome FILE", &run);
    let written = std::fs::read_to_string(&log).unwrap();
    assert_eq!(written.lines().count(), 1);
    assert_clean("the --outcome file", &written);
    // Sent all the same.
    let sent = &lab.records()[0];
    assert_eq!(sent.header("authorization"), Some("Bearer s3cr3t-bearer"));
    assert!(sent.path.contains("token=s3cr3t-token"));

    // A success: the body is the user's own business, the rest is masked.
    let lab = scripted(vec![Step::new(200).body("fine")]);
    let out = dir.join("body");
    let extra = ["-v", "-o", out.to_str().unwrap(), "--outcome", "stdout"];
    let run = run_with(&extra, &url(&lab.url()));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_run_clean("a success with --outcome stdout", &run);
}

#[test]
fn failures_and_redirects_mask_credentials() {
    // Refused connections.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let refused = url(&format!("http://127.0.0.1:{port}"));
    let run = run_with(&["-v", "--attempts", "2", "--backoff", "10ms"], &refused);
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert_run_clean("refused", &run);

    // Timeouts while connecting and while awaiting the answer.
    let hole = black_hole();
    let extra = ["-v", "--attempts", "1", "--connect-timeout", "100ms"];
    let run = run_with(&extra, &url(hole.url.trim_end_matches('/')));
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert_run_clean("connect timeout", &run);
    let silent = scripted(vec![Step::new(200).hang()]);
    let run = run_with(&["-v", "--budget", "300ms"], &url(&silent.url()));
    assert_eq!(run.code, 5, "{}", run.stderr);
    assert_run_clean("budget timeout", &run);

    // Redirects that carry the token on, then fail, or point nowhere valid.
    let lab = scripted(vec![
        Step::new(302).header("Location", "/next?token=s3cr3t-token"),
        Step::new(302).header("Location", "http://[::1/?token=s3cr3t-token"),
    ]);
    let run = run_with(&["-v", "-L", "--attempts", "1"], &url(&lab.url()));
    assert!(run.code != 0, "{}", run.stderr);
    assert_run_clean("redirects", &run);

    // Interrupted mid-request.
    let lab = scripted(vec![Step::new(200).hang()]);
    let target = url(&lab.url());
    let mut live = Live::spawn(abide(&[&HEADERS[..], &["-v", &target]].concat()));
    until("the request to arrive", || lab.records().len() == 1);
    live.signal(libc::SIGINT);
    let run = live.finish();
    assert_eq!(run.signal, Some(libc::SIGINT), "{}", run.stderr);
    assert_run_clean("interrupted", &run);
}

#[test]
fn usage_errors_mask_credentials_in_the_url() {
    for target in [
        "http://ann:s3cr3t-userinfo@127.0.0.1:99999/?token=s3cr3t-token",
        "http://ann:s3cr3t-userinfo@[::1/?token=s3cr3t-token",
        "ftp://ann:s3cr3t-userinfo@127.0.0.1/?token=s3cr3t-token",
        "http://ann:s3cr3t-userinfo@127.0.0.1/a b?token=s3cr3t-token",
        // No scheme, a `/` in the password, a token in the fragment.
        "ann:s3cr3t-userinfo@127.0.0.1:1/a b",
        "http://ann:pa/ss-s3cr3t@127.0.0.1:1/a b",
        "http://127.0.0.1:1/a b#access_token=s3cr3t-fragment",
    ] {
        for mode in [&["-v"][..], &["--agent"]] {
            let run = run_with(mode, target);
            assert_eq!(run.code, 2, "{target}: {}", run.stderr);
            assert_run_clean(target, &run);
        }
    }
    // A second URL, quoted back by clap.
    for mode in ["-v", "--agent"] {
        let out = run(&[
            mode,
            "http://127.0.0.1:1/",
            "http://ann:s3cr3t-second@127.0.0.1:1/",
        ]);
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert_run_clean("a second URL", &out);
    }
    // A usage error found after the headers were read.
    let run = run_with(&["--outcome", "stdout"], &url("http://127.0.0.1:1"));
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_run_clean("--outcome stdout without -o", &run);
}

/// A refused `-H` is never quoted back, and a user-info that is only a user
/// (`https://TOKEN@host`, the token as the user name) is masked when the
/// server echoes it.
#[test]
fn malformed_headers_and_token_user_names_are_masked() {
    for header in [
        "Authorization Bearer s3cr3t-bearer",
        "Bad Name: s3cr3t-bearer",
        "Authorization: Bearer s3cr3t-bearer\r\nX: y",
    ] {
        let run = run(&["-H", header, "http://127.0.0.1:1/"]);
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert_run_clean(header, &run);
    }
    let lab = scripted(vec![Step::new(401).body("no such user s3cr3t-usertoken")]);
    let target = lab.url().replace("http://", "http://s3cr3t-usertoken@");
    let run = run(&[&target]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_run_clean("a token as the user name", &run);
}

/// The agent object (body, headers, error) and the audit log, after answers
/// that echo every credential, and after a usage error in agent mode.
#[test]
fn the_agent_object_and_the_audit_log_mask_credentials() {
    let dir = temp_dir("secrets-agent");
    let log = dir.join("audit.jsonl");
    let lab = scripted(vec![
        Step::new(503)
            .header("Location", "/next?token=s3cr3t-token")
            .body(echo("ann:s3cr3t-userinfo")),
        Step::new(200)
            .header("Content-Type", "application/json")
            .header("Set-Cookie", "session=s3cr3t-cookie")
            .body(format!("{{\"echo\":\"{}\"}}", echo("ann:s3cr3t-userinfo"))),
    ]);
    let log_arg = log.to_str().unwrap();
    let state = dir.join("state");
    let state_arg = state.to_str().unwrap();
    for extra in [
        vec![
            "--agent",
            "--backoff",
            "10ms",
            "--log",
            log_arg,
            "--state-dir",
            state_arg,
        ],
        vec![
            "--agent",
            "--attempts",
            "1",
            "--log",
            log_arg,
            "--state-dir",
            state_arg,
        ],
    ] {
        let run = run_with(&extra, &url(&lab.url()));
        assert_run_clean("agent", &run);
        let object: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
        assert!(
            object["body"].is_object() || object["body"].is_string(),
            "{object}"
        );
    }
    assert_clean("audit log", &std::fs::read_to_string(&log).unwrap());
    let files = state_files(&state);
    assert!(!files.is_empty(), "no state file was written to check");
    for text in files {
        assert_clean("scope state", &text);
    }
    // A usage error in agent mode, with credentials on the command line.
    let run = run_with(&["--agent", "--budget", "soon"], &url(&lab.url()));
    assert_eq!(run.code, 2);
    assert_run_clean("agent usage error", &run);
}

/// A secret the server echoes across a cut (the outcome's first 256 bytes
/// of an error body, the agent body at --max-body) or in its JSON-escaped or
/// percent-encoded form is masked whole: masked first, then cut.
#[test]
fn secrets_are_masked_before_the_cut_and_in_every_spelling() {
    let token = "s3cr3tTOKEN_0123456789abcdef";
    let auth = format!("Authorization: Bearer {token}");
    let dir = temp_dir("secrets-cut");
    let log = dir.join("audit.jsonl");
    // The token crosses byte 256 of the error body.
    let echoed = format!("{}Bearer {token} and more", "x".repeat(240));
    let lab = scripted(vec![Step::new(401).body(echoed.clone())]);
    let out = run(&["-H", &auth, "--log", log.to_str().unwrap(), &lab.url()]);
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert_run_clean("an error cut at 256 bytes", &out);
    assert!(!out.outcome()["error"].as_str().unwrap().contains("s3cr3t"));
    assert_clean("the --log", &std::fs::read_to_string(&log).unwrap());
    // The agent body, cut at --max-body inside the token.
    let lab = scripted(vec![Step::new(200).body(echoed)]);
    let out = run(&[
        "--agent",
        "--no-state",
        "--max-body",
        "260",
        "-H",
        &auth,
        &lab.url(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_run_clean("an agent body cut at --max-body", &out);
    // Masked first, the body fits in --max-body: it is there whole.
    let object: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        object["body"].as_str().unwrap().ends_with("*** and more"),
        "{object}"
    );
    assert_eq!(object["body_truncated"], false);

    // A secret with a quote and a backslash, echoed in JSON and in a URL.
    let key = r#"s3cr3t"key\with-quote"#;
    let header = format!("X-Api-Key: {key}");
    let json = serde_json::json!({ "you_sent": key }).to_string();
    let encoded = "s3cr3t%22key%5Cwith-quote";
    for body in [json, format!("see /keys?k={encoded}")] {
        let lab = scripted(vec![Step::new(400).body(body.clone())]);
        for mode in [&["-v"][..], &["--agent", "--no-state"]] {
            let out = run(&[mode, &["-H", &header, &lab.url()]].concat());
            assert_run_clean(&body, &out);
        }
    }
}

/// A Redis server that takes the client's AUTH, then refuses every later
/// command with an error that quotes it, password and all: the state fails
/// during the run, not when it is opened.
fn quoting_redis() -> Raw {
    raw(|stream| {
        use std::io::{BufRead, BufReader, Read, Write};
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut out = stream;
        let mut line = String::new();
        let mut auth = None;
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let count: usize = line.trim().trim_start_matches('*').parse().unwrap_or(0);
            let mut args = Vec::new();
            for _ in 0..count {
                line.clear();
                let _ = reader.read_line(&mut line);
                let len: usize = line.trim().trim_start_matches('$').parse().unwrap_or(0);
                let mut arg = vec![0; len + 2];
                if reader.read_exact(&mut arg).is_err() {
                    return;
                }
                args.push(String::from_utf8_lossy(&arg[..len]).into_owned());
            }
            let reply = match &auth {
                None => {
                    auth = Some(args.join(" "));
                    "+OK\r\n".to_string()
                }
                Some(auth) => format!("-ERR refused after {auth}\r\n"),
            };
            if out.write_all(reply.as_bytes()).is_err() {
                return;
            }
        }
    })
}

#[test]
fn a_state_that_fails_during_the_run_is_masked_in_the_outcome_and_log() {
    let redis = quoting_redis();
    let state = format!(
        "redis://ops:s3cr3t-redis-pass@{}/",
        redis.url().trim_start_matches("http://")
    );
    let lab = scripted(vec![Step::new(200)]);
    let dir = temp_dir("state-fails");
    let log = dir.join("audit.jsonl");
    let target = url(&lab.url());
    let common = [
        "--state",
        &state,
        "--rate",
        "100/s",
        "-v",
        "--log",
        log.to_str().unwrap(),
    ];
    for extra in [&[][..], &["--state-required"]] {
        let run = run(&[&common[..], extra, &[&target]].concat());
        assert_run_clean("a state failing during the run", &run);
        let reason = run.outcome()["reason"].as_str().unwrap().to_string();
        // The failure reached the outcome, its password masked.
        assert!(reason.contains("refused after AUTH ops ***"), "{reason}");
        assert_eq!(
            run.code,
            if extra.is_empty() { 0 } else { 1 },
            "{}",
            run.stderr
        );
    }
    assert!(redis.accepted() >= 2);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.lines().count() >= 3, "{text}");
    assert_clean("the audit log", &text);
}

#[test]
fn verbose_shows_the_cookies_and_netrc_login_the_transport_adds_masked() {
    let lab = scripted(vec![Step::new(200)]);
    let dir = temp_dir("secrets-added");
    let netrc = dir.join("netrc");
    std::fs::write(&netrc, "machine 127.0.0.1 login me password s3cr3t-netrc\n").unwrap();
    let run = crate::util::run(&[
        "-v",
        "-b",
        "sid=s3cr3t-cookie",
        "--netrc-file",
        netrc.to_str().unwrap(),
        &format!("{}/who", lab.url()),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Sent as curl sends them, shown as what they are.
    let seen = &lab.records()[0];
    assert!(
        seen.header("cookie").is_some_and(|c| c.contains(MARKER)),
        "{seen:?}"
    );
    assert!(run.stderr.contains("> cookie: ***"), "{}", run.stderr);
    assert!(
        run.stderr.contains("> authorization: Basic ***"),
        "{}",
        run.stderr
    );
    assert_run_clean("-v with added headers", &run);
}
