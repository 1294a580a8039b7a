//! Long and broken downloads: a body that keeps flowing is never cut by the
//! default budget, a stall is, and a body that breaks off is continued with
//! a range request instead of starting again from byte 0. Every check is on
//! what the server sent and what reached the file or stdout.

use std::io::Write;
use std::time::{Duration, Instant};

use crate::util::*;

const MIB: usize = 1 << 20;

fn header_of<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

#[test]
fn a_download_that_breaks_off_is_resumed_once_and_matches() {
    let body = noise(20 * MIB);
    let mut served = Served::file(body.clone());
    served.cuts = vec![Cut::Reset(10 * MIB as u64), Cut::Never];
    let server = Ranged::start(served);
    let dir = temp_dir("downloads-resume");
    let out = dir.join("big.bin");
    let run = run(&[
        "--no-state",
        "--backoff",
        "10ms",
        "-o",
        out.to_str().unwrap(),
        &server.url(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(sha256(&std::fs::read(&out).unwrap()), sha256(&body));
    assert_eq!(files_in(&dir), ["big.bin"]);
    let heads = server.heads();
    assert_eq!(heads.len(), 2, "one resume");
    let resumed = run.outcome()["resumed_bytes"].as_u64().unwrap();
    assert!(resumed > 0 && resumed <= 10 * MIB as u64, "{resumed}");
    assert_eq!(header_of(&heads[0], "range"), None);
    assert_eq!(
        header_of(&heads[1], "range"),
        Some(format!("bytes={resumed}-").as_str())
    );
    assert_eq!(header_of(&heads[1], "if-range"), Some("\"v1\""));
    let sent = server.sent();
    assert!(
        sent as f64 <= 1.05 * body.len() as f64,
        "the server sent {sent} bytes for {}",
        body.len()
    );
    let reason = run.outcome()["reason"].as_str().unwrap().to_string();
    assert!(reason.contains("resumed"), "{reason}");
}

#[test]
fn stdout_continues_the_same_stream() {
    let body = noise(4 * MIB);
    let mut served = Served::file(body.clone());
    served.cuts = vec![Cut::Close(3 * MIB as u64), Cut::Never];
    let server = Ranged::start(served);
    let run = run(&["--no-state", "--backoff", "10ms", "-v", &server.url()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(sha256(&run.stdout), sha256(&body));
    assert_eq!(server.heads().len(), 2);
    assert!(
        run.stderr.contains("resuming the body at"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_whole_body_instead_of_a_range_starts_over_where_that_is_clean() {
    let body = noise(3 * MIB);
    let mut served = Served::file(body.clone());
    served.honour_range = false;
    served.cuts = vec![Cut::Close(2 * MIB as u64), Cut::Never];
    // -o: the temporary file is truncated, and the result is whole.
    let server = Ranged::start(served.clone());
    let dir = temp_dir("downloads-over");
    let out = dir.join("f");
    let run = run(&[
        "--no-state",
        "--backoff",
        "10ms",
        "-o",
        out.to_str().unwrap(),
        &server.url(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(sha256(&std::fs::read(&out).unwrap()), sha256(&body));
    assert_eq!(run.outcome()["resumed_bytes"], 0);
    assert!(header_of(&server.heads()[1], "range").is_some());
    // stdout, past the bytes it holds back: it cannot start over.
    let server = Ranged::start(served);
    let run = super::util::run(&["--no-state", "--backoff", "10ms", &server.url()]);
    assert_eq!(run.code, 11, "{}", run.stderr);
    assert_eq!(run.outcome()["outcome"], "INCOMPLETE");
    assert_eq!(run.stdout, body[..run.stdout.len()]);
    let reason = run.outcome()["reason"].as_str().unwrap().to_string();
    assert!(reason.contains("sent the whole body again"), "{reason}");
}

#[test]
fn continue_at_resumes_an_existing_file() {
    let body = noise(2 * MIB);
    let server = Ranged::start(Served::file(body.clone()));
    let dir = temp_dir("downloads-continue");
    let out = dir.join("part");
    std::fs::write(&out, &body[..MIB + 7]).unwrap();
    let run = run(&[
        "--no-state",
        "-C",
        "-",
        "-o",
        out.to_str().unwrap(),
        &server.url(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(sha256(&std::fs::read(&out).unwrap()), sha256(&body));
    let heads = server.heads();
    assert_eq!(
        header_of(&heads[0], "range"),
        Some(format!("bytes={}-", MIB + 7).as_str())
    );
    assert_eq!(server.sent(), (body.len() - MIB - 7) as u64);
    assert_eq!(run.outcome()["resumed_bytes"], MIB + 7);
    // Again, on the now complete file: nothing to ask for, nothing changed.
    let run = super::util::run(&[
        "--no-state",
        "-C",
        "-",
        "-o",
        out.to_str().unwrap(),
        &server.url(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(sha256(&std::fs::read(&out).unwrap()), sha256(&body));
    assert_eq!(server.sent(), (body.len() - MIB - 7) as u64);
    let reason = run.outcome()["reason"].as_str().unwrap().to_string();
    assert!(reason.starts_with("The body was already whole"), "{reason}");
}

/// Answers 200 with `chunks` chunks of a body, one every `every`.
fn trickle(chunks: usize, every: Duration) -> Raw {
    raw(move |mut stream| {
        read_head(&stream);
        let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {chunks}\r\n\r\n");
        let _ = stream.write_all(head.as_bytes());
        for _ in 0..chunks {
            std::thread::sleep(every);
            if stream.write_all(b"x").is_err() {
                return;
            }
        }
    })
}

#[test]
fn the_default_budget_never_cuts_a_body_that_keeps_flowing() {
    // A trickle of 1.5 s against a default budget of 0.5 s: it is done.
    let server = trickle(15, Duration::from_millis(100));
    let mut cmd = abide(&["--no-state", &server.url()]);
    cmd.env("ABIDE_BUDGET", "500ms");
    let run = finish(cmd, b"");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, b"x".repeat(15));
    assert!(run.outcome()["elapsed_ms"].as_u64().unwrap() >= 1500);
    // A budget given on the command line is a hard limit.
    let server = trickle(15, Duration::from_millis(100));
    let start = Instant::now();
    let run = super::util::run(&["--no-state", "--budget", "500ms", &server.url()]);
    assert_eq!(run.code, 5, "{}", run.stderr);
    assert!(start.elapsed() < Duration::from_millis(1200));
    let reason = run.outcome()["reason"].as_str().unwrap().to_string();
    assert!(reason.starts_with("The body broke off after"), "{reason}");
    assert!(
        run.stdout.is_empty(),
        "a small body that broke off is never shown"
    );
}

#[test]
fn a_stall_fails_the_attempt() {
    // The head, then nothing.
    let server = raw(|mut stream| {
        read_head(&stream);
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab");
        hold(stream);
    });
    let args = [
        "--no-state",
        "--stall",
        "300ms",
        "--attempts",
        "2",
        "--backoff",
        "10ms",
    ];
    let start = Instant::now();
    let run = run(&[&args[..], &[&server.url()]].concat());
    let took = start.elapsed();
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert_eq!(server.accepted(), 2);
    let error = run.outcome()["error"].as_str().unwrap().to_string();
    assert!(error.contains("--stall"), "{error}");
    assert!(
        error.starts_with("the body broke off after 2 B of 10 B"),
        "{error}"
    );
    assert!(
        took >= Duration::from_millis(600) && took < Duration::from_secs(3),
        "{took:?}"
    );
    // No head at all.
    let server = raw(|stream| {
        read_head(&stream);
        hold(stream);
    });
    let run = super::util::run(&[&args[..], &[&server.url()]].concat());
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(run.outcome()["error"].as_str().unwrap().contains("--stall"));
}

#[test]
fn a_reset_is_a_broken_body_not_its_end() {
    let body = noise(300_000);
    let mut served = Served::file(body.clone());
    served.close_delimited = true;
    served.ranges = false;
    served.cuts = vec![Cut::Reset(100_000), Cut::Never];
    let dir = temp_dir("downloads-reset");
    let out = dir.join("f");
    std::fs::write(&out, "old").unwrap();
    let path = out.to_str().unwrap();
    let server = Ranged::start(served.clone());
    let run = run(&["--no-state", "--attempts", "1", "-o", path, &server.url()]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(
        run.outcome()["error"]
            .as_str()
            .unwrap()
            .contains("connection reset")
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "old");
    assert_eq!(files_in(&dir), ["f"]);
    // Retried, it comes whole.
    let server = Ranged::start(served);
    let run = super::util::run(&["--no-state", "--backoff", "10ms", "-o", path, &server.url()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(std::fs::read(&out).unwrap(), body);
}

#[test]
fn no_buffer_and_event_streams_write_from_the_first_byte() {
    let cut = |content_type: &'static str| {
        raw(move |mut stream| {
            read_head(&stream);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: 100\r\n\r\n"
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(b"data: 1\n\n");
        })
    };
    let server = cut("text/plain");
    let run = run(&["--no-state", "-N", &server.url()]);
    assert_eq!(run.code, 11, "{}", run.stderr);
    assert_eq!(run.stdout, b"data: 1\n\n");
    let server = cut("text/event-stream");
    let run = super::util::run(&["--no-state", &server.url()]);
    assert_eq!(run.code, 11, "{}", run.stderr);
    assert_eq!(run.stdout, b"data: 1\n\n");
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// Answers with `body`, declared as gzip, and keeps the request head.
/// A server that answers `body` with `Content-Encoding: encoding`.
fn encoded(
    encoding: &'static str,
    body: Vec<u8>,
) -> (Raw, std::sync::Arc<std::sync::Mutex<String>>) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let log = std::sync::Arc::clone(&seen);
    let server = raw(move |mut stream| {
        *log.lock().unwrap() = read_head(&stream);
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Encoding: {encoding}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        let _ = stream.write_all(head.as_bytes());
        let _ = stream.write_all(&body);
    });
    (server, seen)
}

/// A bomb's answer is cut at `--max-ratio`: INVALID_RESPONSE, and far
/// less than its 64 MiB on stdout.
fn stops_the_bomb(url: &str) {
    let run = super::util::run(&["--no-state", "--compressed", url]);
    assert_eq!(run.code, 8, "{}", run.stderr);
    assert!(run.stdout.len() < 16 * MIB, "{}", run.stdout.len());
    let error = run.outcome()["error"].as_str().unwrap().to_string();
    assert!(error.contains("--max-ratio"), "{error}");
}

#[test]
fn encodings_are_asked_for_only_with_compressed_and_bombs_are_stopped() {
    let text = b"a line of text\n".repeat(1000);
    let (server, seen) = encoded("gzip", gzip(&text));
    // Without --compressed: nothing asked for, the bytes as they came.
    let run = run(&["--no-state", &server.url()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, gzip(&text));
    assert_eq!(header_of(&seen.lock().unwrap(), "accept-encoding"), None);
    let run = super::util::run(&["--no-state", "--compressed", &server.url()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, text);
    assert_eq!(
        header_of(&seen.lock().unwrap(), "accept-encoding"),
        Some("deflate, gzip, br, zstd")
    );
    // 64 MiB of zeros in about 64 KiB: stopped at 100 times that.
    let (server, _) = encoded("gzip", gzip(&vec![0; 64 * MIB]));
    stops_the_bomb(&server.url());
}

#[test]
fn a_zstd_answer_is_decoded_and_a_zstd_bomb_is_stopped() {
    use ruzstd::encoding::{CompressionLevel, compress_to_vec};
    let text = b"a line of zstd text\n".repeat(1000);
    let (server, _) = encoded(
        "zstd",
        compress_to_vec(&text[..], CompressionLevel::Fastest),
    );
    let run = run(&["--no-state", "--compressed", &server.url()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, text);
    let bomb = compress_to_vec(&vec![0; 64 * MIB][..], CompressionLevel::Fastest);
    let (server, _) = encoded("zstd", bomb);
    stops_the_bomb(&server.url());
}

#[test]
fn a_stream_reaches_stdout_while_it_flows() {
    use std::io::Read;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    // An event without a newline yet; the server holds the rest until the
    // reader has seen it (or gives up after 5 s).
    let seen = Arc::new(AtomicBool::new(false));
    let told = Arc::clone(&seen);
    let server = raw(move |mut stream| {
        read_head(&stream);
        let head =
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 8\r\n\r\n";
        let _ = stream.write_all(format!("{head}data").as_bytes());
        let start = Instant::now();
        while !told.load(SeqCst) && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = stream.write_all(b": 1\n");
    });
    let mut child = abide(&["--no-state", &server.url()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let start = Instant::now();
    let mut first = [0u8; 4];
    out.read_exact(&mut first).unwrap();
    let took = start.elapsed();
    seen.store(true, SeqCst);
    assert_eq!(&first, b"data");
    assert!(
        took < Duration::from_secs(3),
        "the first bytes took {took:?}"
    );
    assert!(child.wait().unwrap().success());
}
