//! `--batch`: many requests in one process, checked at the servers that
//! received them.

use std::io::Write;
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use abide::lab::{Lab, LabConfig, Step};
use serde_json::Value;

use crate::util::{Backend, Live, Raw, Run, finish, raw, read_head, scripted, temp_dir};

on_both_backends!(
    no_request_follows_an_answer_that_used_the_quota_up,
    on_first_contact_the_first_answer_is_known_before_the_others_go,
);

/// The outcome lines of a batch (stdout), each parsed; every one has an id.
fn outcomes(run: &Run) -> Vec<Value> {
    run.stdout_text()
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not JSON ({e}): {line}\n{}", run.stderr));
            assert!(v["id"].is_string(), "no id: {line}");
            v
        })
        .collect()
}

fn by_id<'a>(lines: &'a [Value], id: &str) -> &'a Value {
    lines
        .iter()
        .find(|v| v["id"] == id)
        .unwrap_or_else(|| panic!("no outcome for {id}: {lines:?}"))
}

fn write_batch(dir: &std::path::Path, lines: &[String]) -> String {
    let path = dir.join("batch.txt");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path.to_string_lossy().into_owned()
}

/// A keep-alive HTTP/1.1 server answering every request with the status
/// `status` gives for its head; counts connections (`Raw::accepted`) and
/// requests (the second value).
fn keep_alive(status: impl Fn(&str) -> u16 + Send + Sync + 'static) -> (Raw, Arc<AtomicUsize>) {
    answering(move |head| (status(head), String::new()))
}

/// As [`keep_alive`], with the status and extra header lines `answer` gives.
fn answering(
    answer: impl Fn(&str) -> (u16, String) + Send + Sync + 'static,
) -> (Raw, Arc<AtomicUsize>) {
    let requests = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&requests);
    let server = raw(move |stream: TcpStream| {
        loop {
            let head = read_head(&stream);
            if head.is_empty() {
                return;
            }
            counted.fetch_add(1, SeqCst);
            let (code, extra) = answer(&head);
            let answer = format!(
                "HTTP/1.1 {code} {}\r\n{extra}Content-Length: 2\r\n\r\nok",
                match code {
                    200 => "OK",
                    302 => "Found",
                    _ => "Too Many Requests",
                }
            );
            if (&stream).write_all(answer.as_bytes()).is_err() {
                return;
            }
        }
    });
    (server, requests)
}

#[test]
fn item_fields_override_the_flags() {
    let lab = scripted(vec![Step::new(200)]);
    let dir = temp_dir("batch-override");
    let own = dir.join("own.out");
    let item = serde_json::json!({
        "id": "x", "url": format!("{}/item", lab.url()), "method": "PUT",
        "headers": {"X-Mode": "item"}, "data": "a=1", "output": own,
    });
    let batch = write_batch(&dir, &[format!("{}/plain", lab.url()), item.to_string()]);
    let template = dir.join("{id}.out");
    let run = finish(
        Backend::files("batch-override-state").abide(&[
            "--batch",
            &batch,
            "-X",
            "POST",
            "-H",
            "X-Mode: flag",
            "--json",
            r#"{"f":1}"#,
            "-o",
            template.to_str().unwrap(),
        ]),
        b"",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines = outcomes(&run);
    assert_eq!(lines.len(), 2);
    let records = lab.records();
    let record = |path: &str| records.iter().find(|r| r.path == path).unwrap();
    let header = |r: &abide::lab::Record, name: &str| {
        r.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let plain = record("/plain");
    assert_eq!(plain.method, "POST");
    assert_eq!(header(plain, "x-mode").as_deref(), Some("flag"));
    assert_eq!(plain.body, br#"{"f":1}"#);
    let item = record("/item");
    assert_eq!(item.method, "PUT");
    assert_eq!(header(item, "x-mode").as_deref(), Some("item"));
    assert_eq!(item.body, b"a=1");
    assert_eq!(
        header(item, "content-type").as_deref(),
        Some("application/x-www-form-urlencoded")
    );
    // The body of each: to the item's own output, else to the template.
    assert!(std::fs::metadata(&own).unwrap().len() > 0);
    assert!(dir.join("1.out").exists());
    assert!(!dir.join("x.out").exists());
}

#[test]
fn a_bad_line_is_its_own_usage_error_and_the_others_succeed() {
    let lab = scripted(vec![Step::new(200)]);
    let dir = temp_dir("batch-bad-line");
    let url = lab.url();
    let batch = write_batch(
        &dir,
        &[
            format!("{url}/1"),
            r#"{"url": "#.to_string(),
            format!("{url}/3"),
            format!(r#"{{"id": "m", "url": "{url}/4", "method": "GE T"}}"#),
        ],
    );
    let run = finish(
        Backend::files("batch-bad-line-state").abide(&["--batch", &batch]),
        b"",
    );
    // The worst outcome, a bad line, is the batch's exit code.
    assert_eq!(run.code, 2, "{}", run.stderr);
    let lines = outcomes(&run);
    assert_eq!(lines.len(), 4, "{}", run.stdout_text());
    for (id, outcome) in [
        ("1", "SUCCEEDED"),
        ("2", "USAGE_ERROR"),
        ("3", "SUCCEEDED"),
        ("m", "USAGE_ERROR"),
    ] {
        assert_eq!(by_id(&lines, id)["outcome"], outcome, "{id}");
    }
    let mut paths: Vec<String> = lab.records().into_iter().map(|r| r.path).collect();
    paths.sort();
    assert_eq!(paths, ["/1", "/3"]);
    assert!(
        run.stderr.contains("4 items: 2 SUCCEEDED, 2 USAGE_ERROR"),
        "{}",
        run.stderr
    );
}

#[test]
fn connections_are_reused() {
    let (server, requests) = keep_alive(|_| 200);
    let dir = temp_dir("batch-connections");
    let lines: Vec<String> = (0..60).map(|n| format!("{}/{n}", server.url())).collect();
    let batch = write_batch(&dir, &lines);
    let run = finish(
        Backend::files("batch-connections-state").abide(&["--batch", &batch, "--parallel", "4"]),
        b"",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(outcomes(&run).len(), 60);
    assert_eq!(requests.load(SeqCst), 60);
    let connections = server.accepted();
    assert!(
        (1..=4).contains(&connections),
        "60 requests over {connections} connections"
    );
}

#[test]
fn connections_are_reused_through_redirects() {
    let (server, requests) = answering(|head| match head.split_whitespace().nth(1) {
        Some(path) if path.starts_with("/from/") => (
            302,
            format!("Location: /to/{}\r\n", &path["/from/".len()..]),
        ),
        _ => (200, String::new()),
    });
    let dir = temp_dir("batch-redirects");
    let lines: Vec<String> = (0..30)
        .map(|n| format!("{}/from/{n}", server.url()))
        .collect();
    let batch = write_batch(&dir, &lines);
    let run = finish(
        Backend::files("batch-redirects-state").abide(&[
            "--batch",
            &batch,
            "--parallel",
            "2",
            "-L",
        ]),
        b"",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(requests.load(SeqCst), 60);
    let connections = server.accepted();
    assert!(
        (1..=2).contains(&connections),
        "60 requests over {connections} connections"
    );
}

#[test]
fn a_batch_and_a_single_run_share_the_concurrency_limit() {
    let lab = scripted(vec![Step::new(200).delay(Duration::from_millis(150))]);
    let dir = temp_dir("batch-gate");
    let lines: Vec<String> = (0..6).map(|n| format!("{}/b{n}", lab.url())).collect();
    let batch = write_batch(&dir, &lines);
    let state = Backend::files("batch-gate-state");
    let spawn = |mut cmd: Command| {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let batch = spawn(state.abide(&[
        "--batch",
        &batch,
        "--parallel",
        "4",
        "--max-concurrent",
        "2",
    ]));
    let single = spawn(state.abide(&["--max-concurrent", "2", &format!("{}/single", lab.url())]));
    for child in [batch, single] {
        let run = Run::of(child.wait_with_output().unwrap());
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
    assert_eq!(lab.records().len(), 7);
    assert_eq!(lab.max_in_flight(), 2);
}

#[test]
fn a_gate_closed_by_a_single_run_holds_the_batch() {
    let lab = scripted(vec![
        Step::new(429).header("Retry-After", "1"),
        Step::new(200),
    ]);
    let dir = temp_dir("batch-retry-after");
    let lines: Vec<String> = (0..3).map(|n| format!("{}/b{n}", lab.url())).collect();
    let batch = write_batch(&dir, &lines);
    let state = Backend::files("batch-retry-after-state");
    let single = finish(state.abide(&["--attempts", "1", &lab.url()]), b"");
    assert_eq!(single.code, 4, "{}", single.stderr);
    let run = finish(state.abide(&["--batch", &batch]), b"");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let records = lab.records();
    assert_eq!(records.len(), 4);
    for r in &records[1..] {
        assert!(
            r.at - records[0].at >= Duration::from_secs(1),
            "{} came {:?} after the Retry-After",
            r.path,
            r.at - records[0].at
        );
    }
}

#[test]
fn the_journal_resumes_after_sigkill_without_sending_an_ended_item_twice() {
    let lab = scripted(vec![Step::new(200).delay(Duration::from_millis(60))]);
    let dir = temp_dir("batch-journal");
    // Line n (its id) asks for /n.
    let lines: Vec<String> = (1..=24).map(|n| format!("{}/{n}", lab.url())).collect();
    let batch = write_batch(&dir, &lines);
    let journal = dir.join("journal");
    let journal_arg = journal.to_str().unwrap();
    let state = Backend::files("batch-journal-state");
    let args = [
        "--batch",
        &batch,
        "--parallel",
        "2",
        "--journal",
        journal_arg,
    ];
    let mut first = Live::spawn(state.abide(&args));
    let ended = |journal: &std::path::Path| -> Vec<String> {
        std::fs::read_to_string(journal)
            .unwrap_or_default()
            .lines()
            .skip(1)
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .map(|v| v["id"].as_str().unwrap().to_string())
            .collect()
    };
    let start = Instant::now();
    while ended(&journal).len() < 6 {
        assert!(start.elapsed() < Duration::from_secs(10), "no progress");
        std::thread::sleep(Duration::from_millis(5));
    }
    first.signal(libc::SIGKILL);
    let before = ended(&journal);
    assert!(before.len() < 24, "the batch ended before the kill");
    let second = finish(state.abide(&args), b"");
    assert_eq!(second.code, 0, "{}", second.stderr);
    let records = lab.records();
    let sent = |id: &str| {
        records
            .iter()
            .filter(|r| r.path == format!("/{id}"))
            .count()
    };
    for id in &before {
        assert_eq!(
            sent(id),
            1,
            "item {id} ended before the kill and was sent again"
        );
    }
    for n in 1..=24 {
        assert!(sent(&n.to_string()) >= 1, "line {n} never sent");
    }
    let mut after = ended(&journal);
    after.sort();
    after.dedup();
    assert_eq!(after.len(), 24);
    // The rerun's outcome lines are the items the first run had not ended.
    assert_eq!(outcomes(&second).len(), 24 - before.len());
}

/// A lab taking `limit` requests a `window`, and a batch of `items` URLs
/// on it with `--parallel` `parallel`, which succeeds.
fn batch_on_a_quota(
    state: &Backend,
    (limit, window): (u32, Duration),
    items: usize,
    parallel: &str,
) -> Lab {
    let lab = Lab::start(
        0,
        LabConfig {
            limit,
            window,
            ..LabConfig::default()
        },
    )
    .expect("the lab starts");
    let dir = temp_dir("batch-quota");
    let lines: Vec<String> = (0..items).map(|n| format!("{}/b{n}", lab.url())).collect();
    let batch = write_batch(&dir, &lines);
    let run = finish(
        state.abide(&["--batch", &batch, "--parallel", parallel]),
        b"",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    lab
}

/// The lab saw `sent` requests and refused none.
fn none_beyond_the_quota(lab: &Lab, sent: usize) {
    let records = lab.records();
    assert_eq!(records.len(), sent, "{records:?}");
    let refused: Vec<_> = records.iter().filter(|r| r.status != Some(200)).collect();
    assert!(refused.is_empty(), "sent beyond the quota: {refused:?}");
}

/// The lab takes 3 requests a second (its `RateLimit` field counting them
/// down) from a batch of 3 workers: each worker's next item is admitted
/// while the others' answers are on their way, and none of them may spend
/// the quota those answers will say is used up. Nothing is sent beyond the
/// quota, so nothing is refused; nor is a single run that comes after.
fn no_request_follows_an_answer_that_used_the_quota_up(state: &Backend) {
    let lab = batch_on_a_quota(state, (3, Duration::from_secs(1)), 9, "3");
    let single = finish(state.abide(&[&format!("{}/single", lab.url())]), b"");
    assert_eq!(single.code, 0, "{}", single.stderr);
    none_beyond_the_quota(&lab, 10);
}

/// A quota (2 a window) smaller than `--parallel` (4), on first contact:
/// the first item goes alone, its answer's `RateLimit` field says one
/// request is left, and so one more goes before the window resets. Four
/// starting at once had two of them refused.
fn on_first_contact_the_first_answer_is_known_before_the_others_go(state: &Backend) {
    let lab = batch_on_a_quota(state, (2, Duration::from_millis(600)), 4, "4");
    none_beyond_the_quota(&lab, 4);
}

#[test]
fn rate_auto_converges_on_a_servers_fixed_rate() {
    // 20 requests/s without burst: one every 50 ms, else 429.
    let limit = Duration::from_millis(50);
    let last: Arc<Mutex<Option<Instant>>> = Arc::default();
    let (server, requests) = keep_alive(move |_| {
        let mut last = last.lock().unwrap();
        let now = Instant::now();
        match *last {
            Some(at) if now - at < limit => 429,
            _ => {
                *last = Some(now);
                200
            }
        }
    });
    let dir = temp_dir("batch-rate-auto");
    let items = 80;
    let lines: Vec<String> = (0..items)
        .map(|n| format!("{}/{n}", server.url()))
        .collect();
    let batch = write_batch(&dir, &lines);
    let state = Backend::files("batch-rate-auto-state");
    let run = finish(
        state.abide(&["--batch", &batch, "--parallel", "4", "--rate", "auto"]),
        b"",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let sent = requests.load(SeqCst);
    let refused = sent - items;
    assert!(
        refused * 10 <= sent,
        "{refused} of {sent} requests answered 429\n{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(&format!("{refused} answered 429")),
        "{}",
        run.stderr
    );
}

#[test]
fn a_task_prefix_keeps_one_key_per_item_across_reruns() {
    let lab = scripted(vec![Step::new(200)]);
    let dir = temp_dir("batch-task");
    let lines: Vec<String> = (1..=3).map(|n| format!("{}/{n}", lab.url())).collect();
    let batch = write_batch(&dir, &lines);
    let state = Backend::files("batch-task-state");
    let args = [
        "--batch",
        &batch,
        "-X",
        "POST",
        "--idempotency-key",
        "auto",
        "--task",
        "import",
    ];
    for _ in 0..2 {
        let run = finish(state.abide(&args), b"");
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
    let key = |r: &abide::lab::Record| {
        let key = r
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("idempotency-key"));
        (r.path.clone(), key.unwrap().1.clone())
    };
    let mut keys: Vec<(String, String)> = lab.records().iter().map(key).collect();
    keys.sort();
    keys.dedup();
    // Each item kept its key on the rerun, and no two items share one.
    assert_eq!(keys.len(), 3, "{keys:?}");
    let mut distinct: Vec<&String> = keys.iter().map(|(_, k)| k).collect();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 3, "{keys:?}");
}

/// A server that reads each request's head and never answers; counts the
/// requests it read.
fn silent() -> (Raw, Arc<AtomicUsize>) {
    let requests = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&requests);
    let server = raw(move |stream: TcpStream| {
        if !read_head(&stream).is_empty() {
            counted.fetch_add(1, SeqCst);
        }
        // Held open, unanswered, until the client gives up.
        let _ = std::io::Read::read(&mut &stream, &mut [0u8; 1]);
    });
    (server, requests)
}

#[test]
fn an_item_whose_server_never_answers_ends_at_its_budget() {
    // A batch's attempts run on its workers' own threads: the answer's
    // deadline is then kept by the transport's timer, not by a waiting caller.
    let (server, requests) = silent();
    let dir = temp_dir("batch-silent");
    let lines: Vec<String> = (1..=3).map(|n| format!("{}/{n}", server.url())).collect();
    let batch = write_batch(&dir, &lines);
    let state = Backend::files("batch-silent-state");
    // A default budget (ABIDE_BUDGET), which bounds the answer's head but
    // not a whole attempt: only the head's deadline can end these.
    let mut cmd = state.abide(&[
        "--batch",
        &batch,
        "--parallel",
        "3",
        "--attempts",
        "1",
        "--stall",
        "20s",
    ]);
    cmd.env("ABIDE_BUDGET", "300ms");
    let run = finish(cmd, b"");
    let lines = outcomes(&run);
    assert_eq!(lines.len(), 3, "{}", run.stderr);
    for line in &lines {
        assert_ne!(line["outcome"], "SUCCEEDED", "{line}");
        let error = line["error"].as_str().unwrap_or_default();
        assert!(error.contains("time"), "not a timeout: {line}");
        let elapsed = line["elapsed_ms"].as_u64().unwrap();
        // Never before the deadline; and ended by it, not by the stall.
        assert!((300..20_000).contains(&elapsed), "{line}");
    }
    assert_ne!(run.code, 0);
    assert_eq!(requests.load(SeqCst), 3);
}

#[test]
fn a_signal_cuts_the_items_in_flight_and_sends_no_more() {
    let (server, requests) = silent();
    let dir = temp_dir("batch-sigint");
    let lines: Vec<String> = (1..=10).map(|n| format!("{}/{n}", server.url())).collect();
    let batch = write_batch(&dir, &lines);
    let state = Backend::files("batch-sigint-state");
    let mut live = Live::spawn(state.abide(&["--batch", &batch, "--parallel", "2"]));
    let start = Instant::now();
    while requests.load(SeqCst) < 2 {
        assert!(start.elapsed() < Duration::from_secs(10), "nothing sent");
        std::thread::sleep(Duration::from_millis(5));
    }
    live.signal(libc::SIGINT);
    let run = live.finish();
    // The process ends by the signal, as a shell loop expects.
    assert_eq!(run.signal, Some(libc::SIGINT), "{}", run.stderr);
    let lines = outcomes(&run);
    assert_eq!(lines.len(), 2, "only the two in flight end: {lines:?}");
    for line in &lines {
        assert_eq!(line["outcome"], "CANCELLED", "{line}");
    }
    assert_eq!(
        requests.load(SeqCst),
        2,
        "an item was sent after the signal"
    );
}

#[test]
fn a_signal_cuts_a_redirects_wait_in_a_batch() {
    // A redirect that asks to wait 30 s before it is followed; the wait is
    // the attempt's own, on the worker's thread.
    let (server, requests) = answering(|_| (302, "Location: /next\r\nRetry-After: 30\r\n".into()));
    let dir = temp_dir("batch-redirect-wait");
    let batch = write_batch(&dir, &[format!("{}/first", server.url())]);
    let state = Backend::files("batch-redirect-wait-state");
    let mut live = Live::spawn(state.abide(&["--batch", &batch, "-L"]));
    let start = Instant::now();
    while requests.load(SeqCst) < 1 {
        assert!(start.elapsed() < Duration::from_secs(10), "nothing sent");
        std::thread::sleep(Duration::from_millis(5));
    }
    live.signal(libc::SIGINT);
    let run = live.finish();
    assert_eq!(run.signal, Some(libc::SIGINT), "{}", run.stderr);
    let lines = outcomes(&run);
    assert_eq!(lines[0]["outcome"], "CANCELLED", "{lines:?}");
    // Cut during the wait, not after it.
    assert!(
        lines[0]["elapsed_ms"].as_u64().unwrap() < 30_000,
        "{lines:?}"
    );
    assert_eq!(requests.load(SeqCst), 1, "the redirect was followed");
}

#[test]
fn each_scope_of_a_batch_keeps_its_own_rate() {
    // Two APIs, two items each, `--rate 1/s`: each scope's two requests go
    // a second apart, the two scopes side by side. One spacing for the
    // whole batch made it three seconds, each request waiting for the
    // other API's.
    let (a, a_requests) = keep_alive(|_| 200);
    let (b, b_requests) = keep_alive(|_| 200);
    let dir = temp_dir("batch-two-scopes");
    let lines: Vec<String> = [&a, &a, &b, &b]
        .iter()
        .enumerate()
        .map(|(n, server)| format!("{}/{n}", server.url()))
        .collect();
    let batch = write_batch(&dir, &lines);
    let state = Backend::files("batch-two-scopes-state");
    let start = Instant::now();
    let run = finish(
        state.abide(&["--batch", &batch, "--parallel", "4", "--rate", "1/s"]),
        b"",
    );
    let took = start.elapsed();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!((a_requests.load(SeqCst), b_requests.load(SeqCst)), (2, 2));
    // Never faster than each scope's rate, and not held by the other's.
    assert!(took >= Duration::from_secs(1), "{took:?}");
    assert!(took < Duration::from_secs(3), "{took:?}");
}
