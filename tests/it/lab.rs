//! The lab as the client's tests will use it: started in-process, spoken to
//! with raw HTTP/1.1 over plain `TcpStream`s, and judged by its records.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use abide::lab::{Lab, LabArgs, LabConfig, Script, Step};
use clap::Parser;

/// A parsed response.
#[derive(Debug)]
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap()
    }
}

fn connect(lab: &Lab) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", lab.port())).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream
}

/// Sends `raw` and reads until the lab closes the connection.
fn exchange(lab: &Lab, raw: &[u8]) -> Vec<u8> {
    let mut stream = connect(lab);
    stream.write_all(raw).unwrap();
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).unwrap();
    bytes
}

/// `None` if the connection closed without a byte.
fn parse(bytes: &[u8]) -> Option<Response> {
    if bytes.is_empty() {
        return None;
    }
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let status = status_line[9..12].parse().unwrap();
    let headers = lines
        .map(|line| {
            let (name, value) = line.split_once(": ").unwrap();
            (name.to_owned(), value.to_owned())
        })
        .collect();
    Some(Response {
        status,
        headers,
        body: body.to_owned(),
    })
}

fn request(lab: &Lab, raw: &str) -> Option<Response> {
    parse(&exchange(lab, raw.as_bytes()))
}

fn get(lab: &Lab, path: &str) -> Response {
    request(lab, &format!("GET {path} HTTP/1.1\r\nHost: lab\r\n\r\n")).unwrap()
}

fn get_as(lab: &Lab, key: &str) -> Response {
    request(
        lab,
        &format!("GET /k HTTP/1.1\r\nHost: lab\r\nX-Client-Key: {key}\r\n\r\n"),
    )
    .unwrap()
}

fn scripted(script: Script) -> Lab {
    let config = LabConfig {
        script: Some(script),
        ..LabConfig::default()
    };
    Lab::start(0, config).unwrap()
}

#[test]
fn four_answers_then_429_with_rate_limit_fields() {
    let lab = Lab::start(0, LabConfig::default()).unwrap();
    assert_eq!(lab.url(), format!("http://127.0.0.1:{}", lab.port()));
    for remaining in [3, 2, 1, 0] {
        let ok = get(&lab, "/a?b=1");
        assert_eq!(ok.status, 200);
        assert_eq!(ok.header("RateLimit-Policy"), Some("\"lab\";q=4;w=3"));
        assert_eq!(
            ok.header("RateLimit"),
            Some(format!("\"lab\";r={remaining};t=3").as_str())
        );
        assert_eq!(ok.header("Retry-After"), None);
        assert_eq!(ok.header("Connection"), Some("close"));
        assert_eq!(ok.header("Content-Type"), Some("application/json"));
        assert!(ok.body.starts_with(r#"{"ok":true,"client":"127.0.0.1","#));
        let body = ok.json();
        assert_eq!(body["ok"], true);
        assert_eq!(body["client"], "127.0.0.1");
        assert_eq!(body["remaining"], remaining);
    }
    let limited = get(&lab, "/a");
    assert_eq!(limited.status, 429);
    assert_eq!(limited.header("Retry-After"), Some("3"));
    assert_eq!(limited.header("RateLimit"), Some("\"lab\";r=0;t=3"));
    assert_eq!(limited.header("RateLimit-Policy"), Some("\"lab\";q=4;w=3"));
    assert_eq!(
        limited.json(),
        serde_json::json!({"error": "rate_limited", "retry_after": 3})
    );

    // The record was filed before the answer was written.
    let records = lab.records();
    assert_eq!(records.len(), 5);
    let seqs: Vec<u64> = records.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, [0, 1, 2, 3, 4]);
    assert!(records.windows(2).all(|w| w[0].at <= w[1].at));
    assert_eq!(records[0].path, "/a?b=1");
    assert_eq!(records[0].method, "GET");
    assert_eq!(records[0].header("host"), Some("lab"));
    assert_eq!(records[4].status, Some(429));
    assert_eq!(records[4].early_by_ms, None);

    let summary = lab.stop();
    assert_eq!((summary.requests, summary.rate_limited), (5, 1));
    assert_eq!(summary.early_retries, 0);
}

#[test]
fn early_retry_is_refused_and_counted() {
    let lab = Lab::start(0, LabConfig::default()).unwrap();
    for _ in 0..5 {
        get(&lab, "/");
    }
    // Told to wait 3 s, it comes straight back.
    let early = get(&lab, "/");
    assert_eq!(early.status, 429);
    assert_eq!(early.header("Retry-After"), Some("3"));
    assert_eq!(early.header("RateLimit"), Some("\"lab\";r=0;t=3"));

    let record = lab.records().pop().unwrap();
    let early_by = record.early_by_ms.unwrap();
    assert!((2500..=3000).contains(&early_by), "{early_by}");
    let line: serde_json::Value = serde_json::from_str(&record.to_json_line()).unwrap();
    assert_eq!(line["early_by_ms"], early_by);
    assert_eq!(line["status"], 429);

    let summary = lab.summary();
    assert_eq!(summary.requests, 6);
    assert_eq!(summary.rate_limited, 2);
    assert_eq!(summary.early_retries, 1);
    assert_eq!(summary.clients["127.0.0.1"].early_retries, 1);
}

#[test]
fn window_reopens() {
    let config = LabConfig {
        limit: 2,
        window: Duration::from_millis(300),
        ..LabConfig::default()
    };
    let lab = Lab::start(0, config).unwrap();
    assert_eq!(get(&lab, "/").header("RateLimit"), Some("\"lab\";r=1;t=1"));
    assert_eq!(get(&lab, "/").json()["remaining"], 0);
    thread::sleep(Duration::from_millis(320));
    let reopened = get(&lab, "/");
    assert_eq!(reopened.status, 200);
    assert_eq!(reopened.json()["remaining"], 1);
}

#[test]
fn client_key_separates_clients() {
    let lab = Lab::start(0, LabConfig::default()).unwrap();
    let statuses: Vec<u16> = (0..5).map(|_| get_as(&lab, "alice").status).collect();
    assert_eq!(statuses, [200, 200, 200, 200, 429]);
    let bob = get_as(&lab, "bob");
    assert_eq!(bob.status, 200);
    assert_eq!(bob.json()["client"], "bob");
    assert_eq!(bob.json()["remaining"], 3);
    // Alice's Retry-After says nothing about Bob, so Bob is not early.
    let summary = lab.stop();
    assert_eq!(summary.early_retries, 0);
    assert_eq!(summary.clients["alice"].rate_limited, 1);
    assert_eq!(summary.clients["bob"].requests, 1);
    assert_eq!(summary.clients.len(), 2);
}

#[test]
fn script_sequence_with_close_and_repeating_last_step() {
    let lab = scripted("503,429:ra=0.5,200:close,201".parse().unwrap());
    let first = get(&lab, "/");
    assert_eq!(first.status, 503);
    assert_eq!(first.body, r#"{"status":503}"#);
    assert_eq!(first.header("Content-Type"), Some("application/json"));
    assert_eq!(first.header("RateLimit"), None);

    let second = get(&lab, "/");
    assert_eq!(second.status, 429);
    assert_eq!(second.header("Retry-After"), Some("0.5"));

    // Closed without a byte.
    assert!(request(&lab, "GET / HTTP/1.1\r\n\r\n").is_none());
    for _ in 0..2 {
        assert_eq!(get(&lab, "/").status, 201);
    }

    let records = lab.records();
    let statuses: Vec<_> = records.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [Some(503), Some(429), None, Some(201), Some(201)]);
    assert!(records[2].to_json_line().contains(r#""status":null"#));
    // Everything after the 429 came within its 0.5 s, so all of it was early.
    let early: Vec<_> = records.iter().map(|r| r.early_by_ms.is_some()).collect();
    assert_eq!(early, [false, false, true, true, true]);
    assert!(records[2].early_by_ms.is_some_and(|ms| ms <= 500));
    let summary = lab.stop();
    assert_eq!((summary.rate_limited, summary.early_retries), (1, 3));
}

#[test]
fn programmatic_steps_send_headers_and_body_as_given() {
    let lab = scripted(Script::new(vec![
        Step::new(429)
            .header("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT")
            .header("retry-after-ms", "1500")
            .body(b"slow down"),
        Step::new(204),
    ]));
    let limited = get(&lab, "/");
    assert_eq!(limited.status, 429);
    assert_eq!(
        limited.header("Retry-After"),
        Some("Wed, 21 Oct 2015 07:28:00 GMT")
    );
    assert_eq!(limited.header("retry-after-ms"), Some("1500"));
    assert_eq!(limited.header("Content-Length"), Some("9"));
    assert_eq!(limited.header("Content-Type"), None);
    assert_eq!(limited.body, "slow down");

    let empty = get(&lab, "/");
    assert_eq!((empty.status, empty.body.as_str()), (204, ""));
    assert_eq!(empty.header("Content-Length"), None);
    // A date in the past allows an immediate retry.
    assert_eq!(lab.summary().early_retries, 0);
}

#[test]
fn truncated_body_breaks_off() {
    let lab = scripted(Script::new(vec![
        Step::new(200).body(b"0123456789").truncate(),
    ]));
    let response = get(&lab, "/");
    assert_eq!(response.status, 200);
    assert_eq!(response.header("Content-Length"), Some("10"));
    assert_eq!(response.body, "01234");
    assert_eq!(lab.records()[0].status, Some(200));
}

#[test]
fn hang_holds_the_connection_until_stop() {
    let lab = scripted(Script::new(vec![Step::new(200).hang()]));
    let mut stream = connect(&lab);
    stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    stream.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    let error = stream.read(&mut [0; 16]).unwrap_err();
    assert!(matches!(
        error.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut
    ));
    assert_eq!(lab.records()[0].status, None);
    assert_eq!(lab.max_in_flight(), 1);

    let started = Instant::now();
    let summary = lab.stop();
    assert!(started.elapsed() < Duration::from_millis(500));
    assert_eq!(summary.requests, 1);
    // Cut, not answered.
    assert!(matches!(stream.read(&mut [0; 16]), Ok(0) | Err(_)));
}

#[test]
fn stop_is_prompt_with_idle_connections() {
    let lab = Lab::start(0, LabConfig::default()).unwrap();
    // A client that connects and says nothing would hold its thread for the
    // 10 s read timeout; stopping must not wait for it.
    let _idle = connect(&lab);
    let _half = {
        let mut stream = connect(&lab);
        stream.write_all(b"GET / HTTP/1.1\r\nHo").unwrap();
        stream
    };
    thread::sleep(Duration::from_millis(20));
    let started = Instant::now();
    let summary = lab.stop();
    assert!(started.elapsed() < Duration::from_millis(500));
    assert_eq!(summary.requests, 0);
}

#[test]
fn delayed_answers_are_filed_at_arrival() {
    let lab = scripted(Script::new(vec![
        Step::new(200).delay(Duration::from_millis(200)),
        Step::new(201),
    ]));
    let mut slow = connect(&lab);
    slow.write_all(b"GET /slow HTTP/1.1\r\n\r\n").unwrap();
    // Once it is in flight, it has been read and given the first step.
    while lab.max_in_flight() == 0 {
        thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(get(&lab, "/fast").status, 201);
    // The slow one is filed at arrival, before its answer is written.
    let paths: Vec<_> = lab.records().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/slow", "/fast"]);

    let mut bytes = Vec::new();
    slow.read_to_end(&mut bytes).unwrap();
    assert_eq!(parse(&bytes).unwrap().status, 200);
    let paths: Vec<_> = lab.records().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/slow", "/fast"]);
}

#[test]
fn request_bodies_are_recorded() {
    let lab = Lab::start(0, LabConfig::default()).unwrap();
    let chunked = "POST /up HTTP/1.1\r\nHost: lab\r\nTransfer-Encoding: chunked\r\n\r\n\
                   5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nTrailer: x\r\n\r\n";
    assert_eq!(request(&lab, chunked).unwrap().status, 200);
    let sized = "PUT /up HTTP/1.1\r\nContent-Length: 4\r\n\r\nbody";
    assert_eq!(request(&lab, sized).unwrap().status, 200);

    let records = lab.records();
    assert_eq!(records[0].method, "POST");
    assert_eq!(records[0].body, b"hello world");
    assert_eq!(records[0].header("TRANSFER-ENCODING"), Some("chunked"));
    assert_eq!(records[1].body, b"body");
}

#[test]
fn expect_continue_gets_100_first() {
    let lab = Lab::start(0, LabConfig::default()).unwrap();
    let mut stream = connect(&lab);
    stream
        .write_all(b"POST / HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n")
        .unwrap();
    let interim = b"HTTP/1.1 100 Continue\r\n\r\n";
    let mut got = [0; 25];
    stream.read_exact(&mut got).unwrap();
    assert_eq!(&got, interim);
    stream.write_all(b"hi").unwrap();
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).unwrap();
    assert_eq!(parse(&rest).unwrap().status, 200);
    assert_eq!(lab.records()[0].body, b"hi");
}

#[test]
fn malformed_requests_get_400_and_the_lab_keeps_serving() {
    let lab = Lab::start(0, LabConfig::default()).unwrap();
    for bad in [
        "NOT A VALID REQUEST\r\n\r\n",
        "GET /\r\n\r\n",
        "GET / HTTP/1.1\r\nNo colon here\r\n\r\n",
    ] {
        let response = request(&lab, bad).unwrap();
        assert_eq!(response.status, 400, "{bad:?}");
        assert_eq!(response.json()["error"], "bad_request");
    }
    // A bad body is answered 400 too, and recorded: its head was fine.
    let bad_chunk = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
    assert_eq!(request(&lab, bad_chunk).unwrap().status, 400);

    let huge = format!("GET / HTTP/1.1\r\nX-Big: {}\r\n\r\n", "a".repeat(70_000));
    let response = request(&lab, &huge).unwrap();
    assert_eq!(response.status, 431);

    // A client that vanishes mid-request is no one's problem.
    drop({
        let mut stream = connect(&lab);
        stream.write_all(b"GET / HT").unwrap();
        stream
    });

    assert_eq!(get(&lab, "/still-here").status, 200);
    let statuses: Vec<_> = lab.records().into_iter().map(|r| r.status).collect();
    assert_eq!(statuses, [Some(400), Some(200)]);
}

#[test]
fn concurrent_clients_each_get_their_own_limit() {
    let lab = Lab::start(0, LabConfig::default()).unwrap();
    thread::scope(|scope| {
        for client in 0..8 {
            let lab = &lab;
            scope.spawn(move || {
                let key = format!("c{client}");
                let statuses: Vec<u16> = (0..5).map(|_| get_as(lab, &key).status).collect();
                assert_eq!(statuses, [200, 200, 200, 200, 429]);
            });
        }
    });
    let summary = lab.stop();
    assert_eq!((summary.requests, summary.rate_limited), (40, 8));
    assert!(summary.clients.values().all(|c| c.requests == 5));
}

#[test]
fn requests_in_flight_are_counted() {
    let lab = scripted("200:delay=300ms".parse().unwrap());
    let started = Instant::now();
    let mut streams: Vec<TcpStream> = (0..5).map(|_| connect(&lab)).collect();
    for stream in &mut streams {
        stream.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    }
    for stream in &mut streams {
        let mut bytes = Vec::new();
        stream.read_to_end(&mut bytes).unwrap();
        assert_eq!(parse(&bytes).unwrap().status, 200);
    }
    // Answered together, not one after another.
    assert!(started.elapsed() < Duration::from_millis(1000));
    assert_eq!(lab.max_in_flight(), 5);
}

#[test]
fn on_record_sees_each_finished_request() {
    let (sender, receiver) = std::sync::mpsc::channel();
    let sender = std::sync::Mutex::new(sender);
    let on_record = Box::new(move |record: &abide::lab::Record| {
        sender.lock().unwrap().send(record.to_json_line()).unwrap();
    });
    let lab = Lab::start_with(0, LabConfig::default(), Some(on_record)).unwrap();
    get(&lab, "/seen");
    let line: serde_json::Value = serde_json::from_str(&receiver.recv().unwrap()).unwrap();
    assert_eq!(line["path"], "/seen");
    assert_eq!(line["status"], 200);
    assert!(line["time"].as_str().unwrap().ends_with('Z'));
}

/// `LabArgs` flattened into a parser, as `abide lab` will be.
#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    lab: LabArgs,
}

#[test]
fn cli_defaults_and_script_errors() {
    let args = Cli::try_parse_from(["lab"]).unwrap().lab;
    assert_eq!((args.port, args.limit), (8429, 4));
    assert_eq!(args.window, Duration::from_secs(3));
    assert_eq!(args.skew, Duration::from_millis(150));
    assert_eq!((args.duration, args.script), (None, None));

    let args = Cli::try_parse_from(["lab", "--window", "300ms", "--script", "429:ra=1,200"])
        .unwrap()
        .lab;
    assert_eq!(args.window, Duration::from_millis(300));
    assert!(args.script.is_some());

    let error = Cli::try_parse_from(["lab", "--script", "429,5o3"])
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("invalid value '429,5o3' for '--script <SPEC>'"),
        "{error}"
    );
    assert!(
        error.contains("step 2 (`5o3`): status must be a number between 100 and 599"),
        "{error}"
    );
    let error = Cli::try_parse_from(["lab", "--window", "3x"])
        .err()
        .unwrap()
        .to_string();
    assert!(error.contains("--window <DURATION>"), "{error}");
}
