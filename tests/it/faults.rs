//! Servers that misbehave: dropped connections, bodies that break off,
//! silence, trickles, answers that are not HTTP, huge headers, and every odd
//! `Retry-After`. Each run must end cleanly with a known outcome and exit
//! code, never a panic, and never later than its budget allows.

use std::io::Write;
use std::time::{Duration, Instant};

use abide::lab::Step;

use crate::util::*;

const MS: fn(u64) -> Duration = Duration::from_millis;

/// Runs abide and checks that it ended cleanly: exit `code` with outcome
/// `kind`, no panic, within `limit` of wall time.
fn ends(args: &[&str], code: i32, kind: &str, limit: Duration) -> Run {
    let start = Instant::now();
    let run = run(args);
    let took = start.elapsed();
    assert!(!run.stderr.contains("panicked"), "{args:?}: {}", run.stderr);
    assert_eq!(run.code, code, "{args:?}: {}", run.stderr);
    assert_eq!(run.outcome()["outcome"], kind, "{args:?}");
    assert!(took < limit, "{args:?} took {took:?}");
    run
}

/// A server that reads the request, writes `bytes`, and closes.
fn answers(bytes: impl Into<Vec<u8>>) -> Raw {
    let bytes = bytes.into();
    raw(move |mut stream| {
        read_head(&stream);
        let _ = stream.write_all(&bytes);
    })
}

#[test]
fn a_connection_dropped_before_any_answer() {
    // After reading the request: a GET is retried, a POST is not replayed.
    let lab = scripted(vec![Step::new(200).close()]);
    let url = lab.url();
    let retry = ["--attempts", "3", "--backoff", "10ms"];
    let run = ends(
        &[&retry[..], &[&url]].concat(),
        4,
        "RETRY_EXHAUSTED",
        MS(2000),
    );
    assert_eq!(lab.records().len(), 3);
    assert_eq!(run.outcome()["status"], serde_json::Value::Null);
    assert_eq!(run.outcome()["error"], "connection closed early");
    ends(
        &[&retry[..], &["-d", "x", &url]].concat(),
        7,
        "SIDE_EFFECT_UNKNOWN",
        MS(2000),
    );
    assert_eq!(lab.records().len(), 4);

    // Without reading a byte of it.
    let server = raw(drop);
    ends(
        &[&retry[..], &[&server.url()]].concat(),
        4,
        "RETRY_EXHAUSTED",
        MS(2000),
    );
    assert_eq!(server.accepted(), 3);
}

/// Declares `declared` bytes, sends `sent` of them, and closes.
fn breaks_off(declared: usize, sent: usize) -> Raw {
    let mut bytes = format!("HTTP/1.1 200 OK\r\nContent-Length: {declared}\r\n\r\n").into_bytes();
    bytes.extend(std::iter::repeat_n(b'x', sent));
    answers(bytes)
}

#[test]
fn a_body_that_breaks_off_before_its_content_length() {
    let dir = temp_dir("faults-breaks-off");
    let out = dir.join("body");
    let server = breaks_off(100_000, 5000);
    let args = [
        "--attempts",
        "2",
        "--backoff",
        "10ms",
        "-o",
        out.to_str().unwrap(),
    ];
    let run = ends(
        &[&args[..], &[&server.url()]].concat(),
        4,
        "RETRY_EXHAUSTED",
        MS(2000),
    );
    assert_eq!(server.accepted(), 2);
    assert!(files_in(&dir).is_empty(), "{:?}", files_in(&dir));
    let error = run.outcome()["error"].as_str().unwrap().to_string();
    assert!(error.starts_with("the body broke off"), "{error}");

    // To stdout, a body that breaks off within the first MiB has not been
    // written yet: it is retried, and nothing of it is shown.
    let server = breaks_off(100_000, 5000);
    let run = ends(
        &["--attempts", "2", "--backoff", "10ms", &server.url()],
        4,
        "RETRY_EXHAUSTED",
        MS(2000),
    );
    assert_eq!(server.accepted(), 2);
    assert!(run.stdout.is_empty());
    let reason = run.outcome()["reason"].as_str().unwrap().to_string();
    assert!(
        reason.starts_with("The body broke off after 4.9 KiB of 97.7 KiB"),
        "{reason}"
    );

    // Beyond it, the start has gone out and cannot be taken back: without a
    // way to resume, stdout is incomplete, which is not NON_RETRYABLE.
    let server = breaks_off(4 << 20, 2 << 20);
    let run = ends(
        &["--backoff", "10ms", &server.url()],
        11,
        "INCOMPLETE",
        MS(2000),
    );
    assert_eq!(server.accepted(), 1);
    assert_eq!(run.stdout.len(), 2 << 20);
    let reason = run.outcome()["reason"].as_str().unwrap().to_string();
    assert!(reason.contains("stdout is incomplete"), "{reason}");

    // A chunked body that stops mid-chunk.
    let server = answers(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nonly eight\r\n".to_string(),
    );
    let run = ends(
        &[&args[..], &[&server.url()]].concat(),
        4,
        "RETRY_EXHAUSTED",
        MS(2000),
    );
    assert!(files_in(&dir).is_empty());
    assert_eq!(run.outcome()["attempts"], 2);
}

#[test]
fn a_server_that_accepts_and_never_answers() {
    let server = raw(|stream| {
        read_head(&stream);
        hold(stream);
    });
    // Cut at the budget, however long -m is.
    let run = ends(
        &["--budget", "700ms", &server.url()],
        5,
        "BUDGET_EXHAUSTED",
        MS(1200),
    );
    assert_eq!(server.accepted(), 1);
    assert!(run.outcome()["error"].as_str().unwrap().contains("timeout"));
    // Each attempt cut at -m.
    let args = [
        "-m",
        "200ms",
        "--attempts",
        "2",
        "--backoff",
        "10ms",
        &server.url(),
    ];
    ends(&args, 4, "RETRY_EXHAUSTED", MS(1200));
    assert_eq!(server.accepted(), 3);

    // One that never even accepts: the connect timeout, then a retry.
    let hole = black_hole();
    let args = [
        "--connect-timeout",
        "200ms",
        "--attempts",
        "2",
        "--backoff",
        "10ms",
    ];
    let run = ends(
        &[&args[..], &[&hole.url]].concat(),
        4,
        "RETRY_EXHAUSTED",
        MS(1200),
    );
    assert_eq!(run.outcome()["error"], "timeout: could not connect in time");
}

#[test]
fn a_slow_trickle_of_headers() {
    let server = raw(|mut stream| {
        read_head(&stream);
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nX-Slow: ");
        while stream.write_all(b"a").is_ok() {
            std::thread::sleep(MS(20));
        }
    });
    let run = ends(
        &["--budget", "700ms", &server.url()],
        5,
        "BUDGET_EXHAUSTED",
        MS(1200),
    );
    assert!(run.outcome()["error"].as_str().unwrap().contains("timeout"));
    assert!(run.stdout.is_empty());
}

#[test]
fn answers_that_are_not_http() {
    let garbage: &[(&str, &[u8])] = &[
        ("an SSH banner", b"SSH-2.0-OpenSSH_9.6\r\n"),
        ("TLS bytes", b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03"),
        ("empty lines", b"\r\n\r\n\r\n"),
        ("a lone 100 Continue", b"HTTP/1.1 100 Continue\r\n\r\n"),
        (
            "a malformed status",
            b"HTTP/1.1 2OO OK\r\nContent-Length: 0\r\n\r\n",
        ),
        (
            "a two-digit status",
            b"HTTP/1.1 42 OK\r\nContent-Length: 0\r\n\r\n",
        ),
        (
            "an unknown version",
            b"HTTP/3.7 200 OK\r\nContent-Length: 0\r\n\r\n",
        ),
        (
            "a header without a colon",
            b"HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n",
        ),
        (
            "a bad Content-Length",
            b"HTTP/1.1 200 OK\r\nContent-Length: lots\r\n\r\nx",
        ),
        (
            "a negative Content-Length",
            b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nx",
        ),
        (
            "a bad chunk size",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        ),
        (
            "two Content-Lengths",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxy",
        ),
    ];
    for (what, bytes) in garbage {
        let server = answers(*bytes);
        let args = ["--attempts", "2", "--backoff", "10ms", &server.url()];
        let run = ends(&args, 4, "RETRY_EXHAUSTED", MS(2000));
        assert_eq!(server.accepted(), 2, "{what}");
        assert!(run.stdout.is_empty(), "{what}");
        assert!(run.outcome()["error"].is_string(), "{what}: {}", run.stderr);
    }
    // It may have processed a write before answering nonsense.
    let server = answers(&b"SSH-2.0-OpenSSH_9.6\r\n"[..]);
    let args = ["-d", "x", "--backoff", "10ms", &server.url()];
    ends(&args, 7, "SIDE_EFFECT_UNKNOWN", MS(2000));
    assert_eq!(server.accepted(), 1);
    // An odd but well-formed status is an answer like any other.
    let server = answers(&b"HTTP/1.1 599 Odd\r\nContent-Length: 0\r\n\r\n"[..]);
    let run = ends(&[&server.url()], 3, "NON_RETRYABLE", MS(2000));
    assert_eq!(run.outcome()["status"], 599);
}

#[test]
fn a_200_kb_header_is_refused_without_retrying() {
    // 63 KiB fills most of the read buffer: refused as too big all the same,
    // not mistaken for a closed connection.
    for size in [200 * 1024, 63 * 1024] {
        let mut bytes = b"HTTP/1.1 200 OK\r\nX-Big: ".to_vec();
        bytes.extend(std::iter::repeat_n(b'a', size));
        bytes.extend(b"\r\nContent-Length: 2\r\n\r\nok");
        let server = answers(bytes);
        let run = ends(&[&server.url()], 3, "NON_RETRYABLE", MS(2000));
        assert_eq!(server.accepted(), 1);
        assert!(run.stdout.is_empty());
        let error = run.outcome()["error"].as_str().unwrap().to_string();
        assert!(error.starts_with("response header is too big"), "{error}");
    }
}

/// What a run told `Retry-After: VALUE` did next.
enum Then {
    /// Waited at least this long (the floor, or the value itself).
    Waited(Duration),
    /// Ignored the value and backed off.
    Ignored,
    /// Ended at once: the delay is beyond the budget.
    Refused,
}

const FLOOR: Duration = Duration::from_millis(150);

#[test]
fn negative_enormous_fractional_and_duplicated_retry_after() {
    use Then::*;
    check_retry_after(&[
        (&["-5"], Waited(FLOOR)),
        (&["-99999999999999999999"], Waited(FLOOR)),
        (&["0"], Waited(FLOOR)),
        (&["0.25"], Waited(MS(250))),
        (&["0.1", "0.3"], Waited(MS(300))),
        (&["0.3", "soon", "0.1"], Waited(MS(300))),
        (&["99999999999999999999"], Refused),
        (&["18446744073709551616"], Refused),
        (&["1e3"], Ignored),
        (&["NaN"], Ignored),
        (&["inf"], Ignored),
        (&["0x10"], Ignored),
        (&["５"], Ignored),
        (&[""], Ignored),
    ]);
}

#[test]
fn retry_after_dates_in_odd_formats() {
    use Then::*;
    check_retry_after(&[
        (&["Fri, 31 Dec 9999 23:59:59 GMT"], Refused),
        // Past dates in the three RFC 9110 formats wait the floor.
        (&["Sun, 06 Nov 1994 08:49:37 GMT"], Waited(FLOOR)),
        (&["Sunday, 06-Nov-94 08:49:37 GMT"], Waited(FLOOR)),
        (&["Sun Nov  6 08:49:37 1994"], Waited(FLOOR)),
        (&["2026-11-30T10:00:00Z"], Ignored),
        (&["Mon, 30 Nov 2026 10:00:00 +0000"], Ignored),
        (&["Mon, 30 Nov 2026 10:00:00 PST"], Ignored),
        (&["30 Nov 2026 10:00:00 GMT"], Ignored),
    ]);
}

fn check_retry_after(rows: &[(&[&str], Then)]) {
    use Then::*;
    for (values, then) in rows {
        let step = values
            .iter()
            .fold(Step::new(429), |step, v| step.header("Retry-After", *v));
        let lab = scripted(vec![step, Step::new(200)]);
        let args = [
            "--floor",
            "150ms",
            "--jitter",
            "0",
            "--backoff",
            "10ms",
            "--budget",
            "5s",
        ];
        let case = format!("Retry-After: {values:?}");
        match then {
            Waited(least) => {
                ends(
                    &[&args[..], &[&lab.url()]].concat(),
                    0,
                    "SUCCEEDED",
                    MS(2000),
                );
                let gap = gaps(&lab.records())[0];
                assert!(gap >= *least, "{case}: retried after {gap:?}");
                assert!(gap < *least + MS(500), "{case}: retried after {gap:?}");
            }
            Ignored => {
                let run = ends(
                    &[&args[..], &[&lab.url()]].concat(),
                    0,
                    "SUCCEEDED",
                    MS(2000),
                );
                let reason = run.outcome()["reason"].as_str().unwrap().to_string();
                assert!(
                    reason.contains("Ignored invalid Retry-After"),
                    "{case}: {reason}"
                );
            }
            Refused => {
                let run = ends(
                    &[&args[..], &[&lab.url()]].concat(),
                    5,
                    "BUDGET_EXHAUSTED",
                    MS(1000),
                );
                assert_eq!(lab.records().len(), 1, "{case}");
                let at = run.outcome()["next_allowed_at"]
                    .as_str()
                    .unwrap()
                    .to_string();
                assert!(humantime::parse_rfc3339(&at).is_ok(), "{case}: {at}");
            }
        }
    }
}

#[test]
fn a_retry_after_that_is_not_text() {
    let served = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let server = raw({
        let served = std::sync::Arc::clone(&served);
        move |mut stream| {
            read_head(&stream);
            let answer: &[u8] = match served.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
                0 => b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: \xff\xfe1\r\nContent-Length: 0\r\n\r\n",
                _ => b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
            };
            let _ = stream.write_all(answer);
        }
    });
    let run = ends(
        &["--backoff", "10ms", &server.url()],
        0,
        "SUCCEEDED",
        MS(2000),
    );
    assert_eq!(server.accepted(), 2);
    let reason = run.outcome()["reason"].as_str().unwrap().to_string();
    assert!(reason.contains("Ignored invalid Retry-After"), "{reason}");
}

#[test]
fn a_retry_after_list_or_pair_waits_for_the_longest() {
    use Then::*;
    // A proxy that joins two Retry-After headers makes a list.
    check_retry_after(&[(&["0.1, 0.4"], Waited(MS(400)))]);
    // retry-after-ms beside a longer Retry-After never makes the retry early.
    let lab = scripted(vec![
        Step::new(429)
            .header("retry-after-ms", "100")
            .header("Retry-After", "0.4"),
        Step::new(200),
    ]);
    let url = lab.url();
    ends(
        &["--floor", "50ms", "--jitter", "0", &url],
        0,
        "SUCCEEDED",
        MS(2000),
    );
    let gap = gaps(&lab.records())[0];
    assert!(gap >= MS(400), "retried after {gap:?}");
}

#[test]
fn a_retry_after_date_counts_from_the_servers_own_clock() {
    // Two servers whose clocks are 30 s off this machine's, each asking for
    // "my now + 1 s": the retry comes 1 s later either way, never at once
    // (the clock behind) and never after 31 s (the clock ahead).
    for skew in [-30i64, 30] {
        let server_now = if skew < 0 {
            std::time::SystemTime::now() - Duration::from_secs(skew.unsigned_abs())
        } else {
            std::time::SystemTime::now() + Duration::from_secs(skew.unsigned_abs())
        };
        let date = httpdate::fmt_http_date(server_now);
        let until = httpdate::fmt_http_date(httpdate::parse_http_date(&date).unwrap() + MS(1000));
        let lab = scripted(vec![
            Step::new(503)
                .header("Date", &date)
                .header("Retry-After", &until),
            Step::new(200),
        ]);
        let url = lab.url();
        ends(
            &["--floor", "50ms", "--jitter", "0", "--budget", "5s", &url],
            0,
            "SUCCEEDED",
            MS(3000),
        );
        let gap = gaps(&lab.records())[0];
        assert!(
            gap >= MS(1000) && gap < MS(1500),
            "clock {skew:+} s: retried after {gap:?}"
        );
    }
}
