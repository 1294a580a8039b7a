//! curl is the oracle for the request on the wire: each command line of the
//! table runs once with `curl` and once with `abide` against a recording
//! server on 127.0.0.1, and the two recordings must match: method, target,
//! headers (ignoring User-Agent, the case and order of names, and framing:
//! Content-Length, Transfer-Encoding and Expect follow from the body) and
//! body bytes, with a multipart boundary read as the same placeholder.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use crate::util::*;

/// One request as the server saw it, framing aside.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    method: String,
    target: String,
    /// Lower-case names, sorted, without user-agent and framing headers.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// A chunked body: some servers (werkzeug) refuse one where curl
    /// would have sent a length.
    chunked: bool,
}

/// A server that records every request and answers `200 ok`.
struct Recorder {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Recorder {
    fn start() -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let log = Arc::clone(&log);
                std::thread::spawn(move || {
                    if let Some(request) = read_request(&stream) {
                        log.lock().unwrap().push(request);
                    }
                    let mut stream = stream;
                    let _ = stream.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n",
                    );
                });
            }
        });
        Recorder { port, seen }
    }

    fn take(&self) -> Vec<Seen> {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

fn read_request(mut stream: &TcpStream) -> Option<Seen> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next()?.to_string(), parts.next()?.to_string());
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    // curl asks before it sends a -T body.
    if header("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue")) {
        stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").ok()?;
    }
    let mut body = Vec::new();
    let chunked = header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
    if chunked {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).ok()?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(length) = header("content-length") {
        body.resize(length.parse().ok()?, 0);
        reader.read_exact(&mut body).ok()?;
    }
    let boundary =
        header("content-type").and_then(|t| t.split_once("boundary=").map(|(_, b)| b.to_string()));
    headers.retain(|(n, _)| {
        !matches!(
            n.as_str(),
            "user-agent" | "content-length" | "transfer-encoding" | "expect"
        )
    });
    if let Some(boundary) = boundary {
        for (_, value) in &mut headers {
            *value = value.replace(&boundary, "BOUNDARY");
        }
        let text = String::from_utf8_lossy(&body).replace(&boundary, "BOUNDARY");
        body = text.into_bytes();
    }
    headers.sort();
    Some(Seen {
        method,
        target,
        headers,
        body,
        chunked,
    })
}

/// The command line with `{url}` and `{dir}` filled in.
fn fill(args: &[&str], url: &str, dir: &Path) -> Vec<String> {
    args.iter()
        .map(|a| {
            a.replace("{url}", url)
                .replace("{dir}", &dir.display().to_string())
        })
        .collect()
}

/// What every client of the request rows reads on stdin.
const STDIN: &[u8] = b"from stdin\r\nline two\n";

/// What the server saw from `program args`, and the program's stdout.
fn seen_from(mut cmd: Command, recorder: &Recorder) -> (Vec<Seen>, Vec<u8>) {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the client starts");
    // A client that reads no stdin may be gone before it is written.
    let _ = child.stdin.take().unwrap().write_all(STDIN);
    let out = child.wait_with_output().unwrap();
    (recorder.take(), out.stdout)
}

/// The table: one command line per row, as a script or a browser writes it.
const CASES: &[&[&str]] = &[
    &["{url}/plain"],
    &["-s", "{url}/quiet?x=1&y=2"],
    &["-fsS", "{url}/script-style"],
    &["-fsSL", "-H", "Accept: text/csv", "{url}/report.csv"],
    &["-e", "https://app.example/page", "{url}/referred"],
    &["--oauth2-bearer", "tok-123", "{url}/bearer"],
    &[
        "--http1.1",
        "--retry",
        "2",
        "--retry-connrefused",
        "{url}/script-flags",
    ],
    &["-d", "a=1", "{url}/form"],
    &["-d", "a=1", "-d", "b=2", "{url}/form-twice"],
    &["--data-binary", "@{dir}/lines.txt", "{url}/binary-file"],
    &["-X", "PUT", "-d", "v=1", "{url}/put"],
    &["-X", "DELETE", "{url}/delete"],
    &["-X", "POST", "{url}/post-empty"],
    &[
        "-H",
        "X-Trace: 42",
        "-H",
        "Accept: application/json",
        "{url}/headers",
    ],
    &["-H", "Accept:", "{url}/no-accept"],
    &["-u", "alice:s3cret", "{url}/basic"],
    &["-A", "agent/1", "{url}/agent"],
    &["--json", "{\"a\":1}", "{url}/json"],
    &[
        "--json",
        "{\"a\":",
        "--json",
        "@{dir}/a.json",
        "{url}/json-joined",
    ],
    &["-L", "{url}/follow"],
    &[
        "-H",
        "Content-Type: text/csv",
        "--data-binary",
        "x,y\n1,2",
        "{url}/csv",
    ],
    &["-d", "@{dir}/lines.txt", "{url}/text-file-loses-line-ends"],
    &["-d", "@-", "{url}/text-stdin"],
    &["--data-binary", "@-", "{url}/binary-stdin"],
    &["--data-raw", "@not-a-file", "{url}/raw"],
    &["--data-ascii", "a=1", "{url}/ascii"],
    &[
        "--data-urlencode",
        "a b",
        "--data-urlencode",
        "=c d",
        "--data-urlencode",
        "n=e&f=g",
        "{url}/urlencode",
    ],
    &[
        "--data-urlencode",
        "@{dir}/u.txt",
        "--data-urlencode",
        "m@{dir}/u.txt",
        "{url}/urlencode-files",
    ],
    &[
        "-d",
        "a=1",
        "--data-urlencode",
        "b=c d",
        "--data-binary",
        "@{dir}/lines.txt",
        "--data-raw",
        "z",
        "{url}/in-order",
    ],
    &[
        "-G",
        "-d",
        "a=1",
        "--data-urlencode",
        "b=c d",
        "{url}/search?z=0",
    ],
    &["-G", "-I", "-d", "a=1", "{url}/head-query"],
    &[
        "-F",
        "name=value",
        "-F",
        "f=@{dir}/lines.txt",
        "-F",
        "g=<{dir}/u.txt",
        "{url}/form",
    ],
    &[
        "-F",
        "h=@{dir}/a.json;type=application/json;filename=z.json",
        "-F",
        "i=x;type=text/foo",
        "{url}/form-params",
    ],
    &[
        "-F",
        "q=\"a;b\"",
        "-F",
        "p=@{dir}/a.json",
        "-X",
        "PUT",
        "{url}/form-quoted",
    ],
    &[
        "-F",
        "f=@-",
        "-F",
        "a\"b=@{dir}/lines.txt;filename=x\"y.txt",
        "{url}/form-stdin",
    ],
    &["-T", "{dir}/lines.txt", "{url}/dir/"],
    &["-T", "{dir}/lines.txt", "{url}/named.txt"],
    &["-T", "-", "{url}/upload-stdin"],
    &["-X", "POST", "-T", "{dir}/a.json", "{url}/post-upload"],
    &["--url", "{url}/by-flag"],
    &["-K", "{dir}/curlrc"],
    &[
        "-s",
        "-s",
        "-f",
        "-f",
        "-v",
        "-v",
        "-L",
        "-L",
        "{url}/repeated",
    ],
    &["-sSfL", "{url}/cluster"],
    &["-fsSo", "/dev/null", "{url}/cluster-with-value"],
    &[
        "{url}/chrome",
        "-H",
        "accept: application/json",
        "-H",
        "content-type: application/json",
        "-H",
        "origin: https://app.example",
        "--data-raw",
        "{\"q\":1}",
    ],
    &[
        "{url}/firefox",
        "-X",
        "POST",
        "-H",
        "Accept: application/json, text/plain, */*",
        "-H",
        "Accept-Language: en-US,en;q=0.5",
        "-H",
        "Content-Type: application/json",
        "-H",
        "Connection: keep-alive",
        "--data-raw",
        "{\"q\":2}",
    ],
];

#[test]
fn the_server_sees_what_curl_would_send() {
    let dir = temp_dir("curl-oracle");
    std::fs::write(dir.join("lines.txt"), "one\r\ntwo\nthree").unwrap();
    std::fs::write(dir.join("u.txt"), "a b&c=d\n").unwrap();
    std::fs::write(dir.join("a.json"), "{\"x\":1}\n").unwrap();
    let recorder = Recorder::start();
    let url = format!("http://127.0.0.1:{}", recorder.port);
    std::fs::write(
        dir.join("curlrc"),
        format!(
            "# as curl -K reads it\nurl = \"{url}/from-config\"\n\
             header = \"X-Config: one two\"\n--silent\nfail\n-d a=1\n\
             data-urlencode = \"b=c d\"\n"
        ),
    )
    .unwrap();
    let mut differ = Vec::new();
    for case in CASES {
        let args = fill(case, &url, &dir);
        let mut curl = Command::new("curl");
        curl.args(["-o", "/dev/null"]).args(&args);
        let (expected, _) = seen_from(curl, &recorder);
        let mut ours = abide(&["-o", "/dev/null", "--no-state"]);
        ours.args(&args);
        let (got, _) = seen_from(ours, &recorder);
        assert_eq!(expected.len(), 1, "curl {args:?} sent {expected:?}");
        // A length where curl chunks (stdin, which abide reads first) is
        // as good; a chunked body where curl sent a length is not.
        let mut expected = expected;
        if let (Some(curl), [ours]) = (expected.first_mut(), got.as_slice()) {
            curl.chunked &= ours.chunked;
        }
        if got != expected {
            differ.push(format!("{args:?}\n  curl:  {expected:?}\n  abide: {got:?}"));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} differ:\n{}",
        differ.len(),
        CASES.len(),
        differ.join("\n")
    );
}

/// The answer of the output rows: a fixed head (no Date or Server to
/// differ), with names in lower case as abide writes them, and a body;
/// `/missing` is a 404, `/cd…` names a file in Content-Disposition, and a
/// HEAD gets no body.
fn fixed_server() -> Raw {
    raw(|mut stream| {
        let request = read_head(&stream);
        let status = if request.contains(" /missing ") {
            "404 Not Found"
        } else {
            "200 OK"
        };
        let body = if request.starts_with("HEAD ") {
            ""
        } else {
            "hello\n"
        };
        let disposition = if request.contains(" /cd") {
            "content-disposition: attachment; filename=\"../up/report.csv\"\r\n"
        } else {
            ""
        };
        let _ = write!(
            stream,
            "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\n\
             x-custom: forty two\r\n{disposition}content-length: 6\r\nconnection: close\r\n\r\n{body}"
        );
    })
}

/// Output rows: curl's stdout, its `{dir}/out.txt` if it writes one, and
/// every file it writes under `{dir}/files`, are what abide must write. abide's `-f` is implied, so every row that
/// asks for an error answer gives curl `-f` too.
const OUTPUT_CASES: &[&[&str]] = &[
    &["-i", "{url}/x"],
    &["-s", "-i", "{url}/x"],
    &["-I", "{url}/x"],
    &["-f", "-i", "{url}/missing"],
    &["-f", "-I", "{url}/missing"],
    &["-D", "-", "{url}/x"],
    &["-D", "-", "-o", "/dev/null", "{url}/x"],
    &["-D", "{dir}/out.txt", "{url}/x"],
    &["-s", "-D", "{dir}/out.txt", "-o", "/dev/null", "{url}/x"],
    &["-f", "-D", "{dir}/out.txt", "{url}/missing"],
    &["-i", "-D", "{dir}/out.txt", "{url}/x"],
    &["-i", "-o", "{dir}/out.txt", "{url}/x"],
    &["-s", "-I", "-o", "{dir}/out.txt", "{url}/x"],
    &["-i", "-o", "/dev/null", "{url}/x"],
    &[
        "-w",
        "%{http_code} %{content_type} %{size_download}\\n",
        "{url}/x",
    ],
    &["-s", "-o", "/dev/null", "-w", "%{http_code}", "{url}/x"],
    &["-w", "%header{x-custom}|%header{none}", "{url}/x"],
    &["-o", "/dev/null", "-w", "@{dir}/format.txt", "{url}/x"],
    &["-f", "-s", "-w", "%{http_code}\\n", "{url}/missing"],
    &["-o", "/dev/null", "-w", "a%{stderr}b%{stdout}c", "{url}/x"],
    &[
        "-d",
        "abc",
        "-o",
        "/dev/null",
        "-w",
        "%{size_upload} %{method}",
        "{url}/x",
    ],
    &["-O", "--output-dir", "{dir}/files", "{url}/report.txt?q=1"],
    &[
        "--remote-name-all",
        "--remove-on-error",
        "--output-dir",
        "{dir}/files",
        "{url}/all.txt",
    ],
    &["-s", "-OJ", "--output-dir", "{dir}/files", "{url}/cd/x"],
    &[
        "-O",
        "-J",
        "--output-dir",
        "{dir}/files",
        "{url}/no-disposition.txt",
    ],
    &["--create-dirs", "-o", "{dir}/files/a/b/out.txt", "{url}/x"],
    &["--output-dir", "{dir}/files", "-o", "named.txt", "{url}/x"],
    &["--fail-with-body", "{url}/missing"],
    &["--fail-with-body", "-i", "{url}/missing"],
    &[
        "-s",
        "--fail-with-body",
        "-o",
        "{dir}/out.txt",
        "{url}/missing",
    ],
    &["--fail-with-body", "-o", "{dir}/out.txt", "{url}/x"],
];

/// Every file under `dir`, by its path from there, with its bytes.
fn files_under(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let inner = files_under(&path).into_iter();
            files.extend(inner.map(|(n, bytes)| (format!("{name}/{n}"), bytes)));
        } else {
            let name = entry.file_name().to_string_lossy().into_owned();
            files.push((name, std::fs::read(&path).unwrap()));
        }
    }
    files.sort();
    files
}

#[test]
fn stdout_and_files_hold_what_curl_writes() {
    let dir = temp_dir("curl-output");
    std::fs::write(
        dir.join("format.txt"),
        "%{method} %{url_effective}\\n%{response_code}%%\\t%{exitcode}|%{errormsg}|\n",
    )
    .unwrap();
    let server = fixed_server();
    let url = server.url();
    let out = dir.join("out.txt");
    let files = dir.join("files");
    let mut differ = Vec::new();
    let written = |mut cmd: Command| {
        let _ = std::fs::remove_file(&out);
        let _ = std::fs::remove_dir_all(&files);
        std::fs::create_dir(&files).unwrap();
        let stdout = cmd
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .expect("the client starts")
            .stdout;
        (stdout, std::fs::read(&out).ok(), files_under(&files))
    };
    for case in OUTPUT_CASES {
        let args = fill(case, &url, &dir);
        let mut curl = Command::new("curl");
        curl.args(&args);
        let expected = written(curl);
        let mut ours = abide(&["--no-state"]);
        ours.args(&args);
        let got = written(ours);
        if got != expected {
            let names = |files: &[(String, Vec<u8>)]| -> Vec<String> {
                files.iter().map(|(name, _)| name.clone()).collect()
            };
            differ.push(format!(
                "{args:?}\n  curl:  {:?} {:?}\n  abide: {:?} {:?}",
                String::from_utf8_lossy(&expected.0),
                names(&expected.2),
                String::from_utf8_lossy(&got.0),
                names(&got.2),
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} differ:\n{}",
        differ.len(),
        OUTPUT_CASES.len(),
        differ.join("\n")
    );
}

#[test]
fn a_name_from_the_server_replaces_no_file_without_clobber() {
    let server = fixed_server();
    let url = format!("{}/cd/x", server.url());
    let dir = temp_dir("curl-no-clobber");
    let existing = dir.join("report.csv");
    // As curl: -J leaves the file and fails; --clobber replaces it;
    // --no-clobber writes report.csv.1 beside it.
    for (flag, replaced, beside) in [
        ("--no-buffer", false, false),
        ("--clobber", true, false),
        ("--no-clobber", false, true),
    ] {
        let outcome = |mut cmd: Command| {
            std::fs::write(&existing, "mine\n").unwrap();
            let _ = std::fs::remove_file(dir.join("report.csv.1"));
            let args = [
                "-s",
                "-OJ",
                flag,
                "--output-dir",
                dir.to_str().unwrap(),
                &url,
            ];
            let ok = cmd
                .args(args)
                .stderr(Stdio::null())
                .status()
                .unwrap()
                .success();
            let kept = std::fs::read_to_string(&existing).unwrap();
            (
                ok,
                kept,
                std::fs::read_to_string(dir.join("report.csv.1")).ok(),
            )
        };
        let expected = outcome(Command::new("curl"));
        assert_eq!(
            expected,
            (
                replaced || beside,
                if replaced { "hello\n" } else { "mine\n" }.to_string(),
                beside.then(|| "hello\n".to_string())
            ),
            "curl {flag}"
        );
        assert_eq!(outcome(abide(&["--no-state"])), expected, "{flag}");
    }
    let left: Vec<String> = files_in(&dir);
    assert_eq!(
        left,
        ["report.csv", "report.csv.1"],
        "no temporary file left"
    );
}

#[test]
fn fail_with_body_writes_only_the_final_answers_body() {
    let answers = Arc::new(Mutex::new(0));
    let server = raw(move |mut stream| {
        read_head(&stream);
        let n = {
            let mut n = answers.lock().unwrap();
            *n += 1;
            *n
        };
        let _ = write!(
            stream,
            "HTTP/1.1 503 Service Unavailable\r\nretry-after: 0\r\n\
             content-length: 7\r\nconnection: close\r\n\r\nbusy {n}\n"
        );
    });
    let dir = temp_dir("curl-fail-with-body");
    let out = dir.join("out.txt");
    std::fs::write(&out, "old\n").unwrap();
    let url = format!("{}/x", server.url());
    let common = ["--no-state", "--floor", "10ms", "--attempts", "2"];
    let run = run(&[&common[..], &["--fail-with-body", &url]].concat());
    assert_eq!(server.accepted(), 2, "the first 503 was retried");
    assert_eq!(
        run.stdout_text(),
        "busy 2\n",
        "the final answer's body alone"
    );
    assert_eq!(run.outcome()["ok"], false, "the run still failed");
    let file = out.to_str().unwrap();
    let run = super::util::run(&[&common[..], &["--fail-with-body", "-o", file, &url]].concat());
    assert_eq!(run.stdout_text(), "");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "busy 4\n");
    // Without it, -o keeps the old file, and stdout gets nothing.
    std::fs::write(&out, "old\n").unwrap();
    let run = super::util::run(&[&common[..], &["-o", file, &url]].concat());
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "old\n");
    assert_eq!(files_in(&dir), ["out.txt"], "no temporary file left");
    assert_eq!(
        run.code,
        super::util::run(&[&common[..], &["--fail-with-body", &url]].concat()).code
    );
}

#[test]
fn a_retried_run_writes_only_the_final_answers_head() {
    let answers = Arc::new(Mutex::new(0));
    let server = raw(move |mut stream| {
        read_head(&stream);
        let first = {
            let mut n = answers.lock().unwrap();
            *n += 1;
            *n == 1
        };
        let _ = if first {
            stream.write_all(
                b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 0\r\ncontent-length: 4\r\nconnection: close\r\n\r\nbusy",
            )
        } else {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\nconnection: close\r\n\r\nok\n")
        };
    });
    let dumped = temp_dir("curl-retried-head").join("head.txt");
    let run = run(&[
        "--no-state",
        "--floor",
        "10ms",
        "-i",
        "-D",
        dumped.to_str().unwrap(),
        "-w",
        "%{num_retries}",
        &format!("{}/x", server.url()),
    ]);
    assert_eq!(server.accepted(), 2, "the 503 was retried");
    let head = "HTTP/1.1 200 OK\r\ncontent-length: 3\r\nconnection: close\r\n\r\n";
    assert_eq!(run.stdout_text(), format!("{head}ok\n1"), "one retry");
    assert_eq!(std::fs::read_to_string(&dumped).unwrap(), head);
}

#[test]
fn write_out_json_is_the_outcome_line() {
    let server = fixed_server();
    let url = format!("{}/x", server.url());
    let line = run(&["--no-state", "-o", "/dev/null", "--outcome", "stdout", &url]);
    let written = run(&[
        "--no-state",
        "-o",
        "/dev/null",
        "--outcome",
        "none",
        "-w",
        "%{time_starttransfer} %{time_total} %{json}",
        &url,
    ]);
    let text = written.stdout_text();
    let (head, rest) = text.split_once(' ').expect("three parts");
    let (total, json) = rest.split_once(' ').expect("three parts");
    let without_times = |mut v: serde_json::Value| {
        let elapsed = v["elapsed_ms"].take().as_u64().unwrap();
        v["history"][0]["elapsed_ms"].take();
        (v, elapsed)
    };
    let (expected, _) = without_times(serde_json::from_str(&line.stdout_text()).unwrap());
    let (got, elapsed) = without_times(serde_json::from_str(json).unwrap());
    assert_eq!(got, expected);
    let (head, total): (f64, f64) = (head.parse().unwrap(), total.parse().unwrap());
    assert!(
        head > 0.0 && head <= total,
        "head after {head} s of {total} s"
    );
    let ms = (total * 1000.0).round() as u64;
    assert!(
        ms.abs_diff(elapsed) <= 1,
        "time_total {total} for {elapsed} ms"
    );
}

#[test]
fn a_body_that_never_comes_whole_writes_no_head() {
    let server = raw(|mut stream| {
        read_head(&stream);
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc");
    });
    let run = run(&[
        "--no-state",
        "--attempts",
        "2",
        "--backoff",
        "10ms",
        "-i",
        &format!("{}/x", server.url()),
    ]);
    assert_eq!(server.accepted(), 2, "the broken body was retried");
    assert_ne!(run.outcome()["ok"], true);
    assert_eq!(run.stdout_text(), "", "no 200 head without its body");
}

#[test]
fn verbose_shows_both_heads_as_curl_does_with_credentials_masked() {
    let server = fixed_server();
    let run = run(&[
        "--no-state",
        "-v",
        "-u",
        "alice:s3cret-pass",
        "-H",
        "X-Api-Key: key-1234567890",
        "-o",
        "/dev/null",
        &format!("{}/x?a=1", server.url()),
    ]);
    let stderr = &run.stderr;
    for line in [
        "> GET /x?a=1 HTTP/1.1\n",
        &format!("> Host: {}\n", server.url().trim_start_matches("http://")),
        "< HTTP/1.1 200 OK\n",
        "< x-custom: forty two\n",
    ] {
        assert!(stderr.contains(line), "{line:?} in {stderr}");
    }
    assert!(stderr.contains("> authorization: "), "{stderr}");
    assert!(stderr.contains("> x-api-key: "), "{stderr}");
    for secret in ["s3cret-pass", "YWxpY2U6czNjcmV0LXBhc3M=", "key-1234567890"] {
        assert!(!stderr.contains(secret), "{secret} in {stderr}");
    }
    assert!(stderr.contains("> authorization: Basic ***\n"), "{stderr}");

    // A credential abide put there is masked however short, and so is a
    // secret-looking query value.
    let run = super::util::run(&[
        "--no-state",
        "-v",
        "-H",
        "X-Api-Key: k3y",
        "-o",
        "/dev/null",
        &format!("{}/x?token=t0k&a=1", server.url()),
    ]);
    let stderr = &run.stderr;
    assert!(stderr.contains("> x-api-key: ***\n"), "{stderr}");
    assert!(
        stderr.contains("> GET /x?token=***&a=1 HTTP/1.1\n"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("k3y") && !stderr.contains("t0k"),
        "{stderr}"
    );
}
