//! curl is the oracle for the request on the wire: each command line of the
//! table runs once with `curl` and once with `abide` against a recording
//! server on 127.0.0.1, and the two recordings must match: method, target,
//! headers (ignoring User-Agent, the case and order of names, and framing:
//! Content-Length, Transfer-Encoding and Expect follow from the body) and
//! body bytes, with a multipart boundary read as the same placeholder.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
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

/// A server that records every request and answers `200 ok`; but
/// `/set-cookies` redirects to `/next` setting cookies (`/cross-host` to
/// another host name of the same server), `/r/N` redirects to `/r/N+1`
/// and `/down/N` to `/down/N-1` down to 0, for the rows of cookies and
/// redirects.
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
                    let Some(request) = read_request(&stream) else {
                        return;
                    };
                    let answer = answer(&request.target, port);
                    log.lock().unwrap().push(request);
                    let mut stream = stream;
                    let _ = stream.write_all(answer.as_bytes());
                });
            }
        });
        Recorder { port, seen }
    }

    fn take(&self) -> Vec<Seen> {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

/// Cookies of every kind: session, expiring on a fixed date, for a longer
/// path, HttpOnly, one for a domain, and one the client must refuse.
const SET_COOKIES: &str = "Set-Cookie: sid=abc; Path=/\r\n\
    Set-Cookie: zz=1; Path=/next; HttpOnly\r\n\
    Set-Cookie: ex=3; Expires=Wed, 21 Oct 2037 07:28:00 GMT\r\n\
    Set-Cookie: dom=4; Domain=127.0.0.1; Path=/\r\n\
    Set-Cookie: age=6; Max-Age=3600\r\n\
    Set-Cookie: bad=5; Domain=elsewhere.example\r\n";

fn answer(target: &str, port: u16) -> String {
    let redirect = |location: &str, extra: &str| {
        format!(
            "HTTP/1.1 302 Found\r\nLocation: {location}\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n"
        )
    };
    if target.starts_with("/set-cookies") {
        return redirect("/next", SET_COOKIES);
    }
    if target.starts_with("/cross-host") {
        return redirect(&format!("http://localhost:{port}/landed"), SET_COOKIES);
    }
    if let Some(n) = target
        .strip_prefix("/r/")
        .and_then(|n| n.parse::<u32>().ok())
    {
        return redirect(&format!("/r/{}", n + 1), "");
    }
    if let Some(n) = target
        .strip_prefix("/down/")
        .and_then(|n| n.parse::<u32>().ok())
        && n > 0
    {
        return redirect(&format!("/down/{}", n - 1), "");
    }
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n"
        .to_string()
}

fn read_request<S: Read + Write + Copy>(stream: S) -> Option<Seen> {
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
        let mut stream = stream;
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

/// The command line with `{url}`, `{port}` and `{dir}` filled in.
fn fill(args: &[&str], url: &str, dir: &Path) -> Vec<String> {
    let port = url.rsplit(':').next().unwrap_or_default();
    args.iter()
        .map(|a| {
            a.replace("{url}", url)
                .replace("{port}", port)
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
    // Cookies, connections and pace; a row may make several requests (-L).
    &["-b", "a=1; b=2", "{url}/cookie-string"],
    &[
        "-b",
        "a=1",
        "-b",
        "b=2",
        "-H",
        "X-A: 1",
        "{url}/cookie-twice",
    ],
    &["-b", "{dir}/cookies.txt", "{url}/next/cookie-file"],
    &[
        "-j",
        "-b",
        "{dir}/cookies.txt",
        "-b",
        "{dir}/set-cookie.txt",
        "{url}/next/junked",
    ],
    &["-b", "{dir}/set-cookie.txt", "{url}/cookie-headers"],
    &["-b", "{dir}/missing.txt", "{url}/no-cookie-file"],
    &[
        "-L",
        "-b",
        "a=1",
        "-c",
        "{dir}/jar.txt",
        "{url}/set-cookies",
    ],
    &["-L", "-b", "{dir}/cookies.txt", "{url}/set-cookies?again"],
    &["-b", "a=1", "{url}/set-cookies?without-L"],
    &["-b", "a=1", "-H", "Cookie: own=2", "{url}/own-cookie"],
    &["-L", "-b", "a=1", "-c", "{dir}/jar.txt", "{url}/cross-host"],
    &[
        "-L",
        "-u",
        "al:pw",
        "-H",
        "Cookie: own=2",
        "{url}/cross-host",
    ],
    &[
        "-L",
        "--location-trusted",
        "-u",
        "al:pw",
        "-H",
        "Cookie: own=2",
        "{url}/cross-host",
    ],
    &[
        "-L",
        "-b",
        "a=1",
        "-H",
        "Cookie: own=2",
        "-c",
        "{dir}/jar.txt",
        "{url}/cross-host",
    ],
    &[
        "--resolve",
        "example.test:{port}:127.0.0.1",
        "http://example.test:{port}/resolved",
    ],
    &[
        "--connect-to",
        "example.test:80:127.0.0.1:{port}",
        "http://example.test/connected",
    ],
    &[
        "--connect-to",
        "::127.0.0.1:{port}",
        "-4",
        "http://example.test/any-host",
    ],
    &["-L", "--max-redirs", "2", "{url}/r/0"],
    &["-L", "--max-redirs", "0", "{url}/r/0"],
    &["-L", "{url}/r/45"],
    &["--netrc-file", "{dir}/netrc", "{url}/netrc-file"],
    &["-n", "{url}/netrc-home"],
    &["-n", "-u", "bob:other", "{url}/user-wins"],
    &["--limit-rate", "100k", "--noproxy", "*", "{url}/limited"],
    &[
        "-Y",
        "1000",
        "-y",
        "5",
        "--retry-delay",
        "1",
        "--retry-all-errors",
        "{url}/paced",
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

/// "Copy as cURL" of a JSON POST with cookies, as Chrome 124 (bash) and
/// Firefox 125 (POSIX) write it, each on one line as the browser does.
const BROWSER_CASES: &[&[&str]] = &[
    &[
        "{url}/api/items",
        "-H",
        "accept: */*",
        "-H",
        "accept-language: en-US,en;q=0.9",
        "-H",
        "content-type: application/json",
        "-b",
        "session=abc123; theme=dark",
        "-H",
        "origin: {url}",
        "-H",
        "priority: u=1, i",
        "-H",
        "referer: {url}/app/items",
        "-H",
        "sec-ch-ua: \"Chromium\";v=\"124\", \"Google Chrome\";v=\"124\", \"Not-A.Brand\";v=\"99\"",
        "-H",
        "sec-ch-ua-mobile: ?0",
        "-H",
        "sec-ch-ua-platform: \"Linux\"",
        "-H",
        "sec-fetch-dest: empty",
        "-H",
        "sec-fetch-mode: cors",
        "-H",
        "sec-fetch-site: same-origin",
        "-H",
        "user-agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
        "--data-raw",
        "{\"name\":\"widget\",\"qty\":2,\"tags\":[\"a\",\"b\"]}",
        "--compressed",
    ],
    &[
        "{url}/api/items",
        "-X",
        "POST",
        "-H",
        "User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
        "-H",
        "Accept: */*",
        "-H",
        "Accept-Language: en-US,en;q=0.5",
        "-H",
        "Accept-Encoding: gzip, deflate, br",
        "-H",
        "Referer: {url}/app/items",
        "-H",
        "Content-Type: application/json",
        "-H",
        "Origin: {url}",
        "-H",
        "Connection: keep-alive",
        "-H",
        "Cookie: session=abc123; theme=dark",
        "-H",
        "Sec-Fetch-Dest: empty",
        "-H",
        "Sec-Fetch-Mode: cors",
        "-H",
        "Sec-Fetch-Site: same-origin",
        "-H",
        "Priority: u=1",
        "--data-raw",
        "{\"name\":\"widget\",\"qty\":2,\"tags\":[\"a\",\"b\"]}",
    ],
];

#[test]
fn the_server_sees_what_curl_would_send() {
    differential(CASES);
}

#[test]
fn a_browsers_copy_as_curl_sends_what_curl_sends() {
    differential(BROWSER_CASES);
}

/// Runs every row once with curl and once with abide against one recorder.
fn differential(cases: &[&[&str]]) {
    let dir = temp_dir("curl-oracle");
    std::fs::write(dir.join("lines.txt"), "one\r\ntwo\nthree").unwrap();
    write_cookie_files(&dir);
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
    for case in cases {
        let args = fill(case, &url, &dir);
        // HOME is where -n finds .netrc (and curl its .curlrc: none).
        let mut curl = Command::new("curl");
        curl.env("HOME", &dir).args(["-o", "/dev/null"]).args(&args);
        let (expected, _) = seen_from(curl, &recorder);
        let mut ours = abide(&["-o", "/dev/null", "--no-state"]);
        ours.env("HOME", &dir).args(&args);
        let (got, _) = seen_from(ours, &recorder);
        assert!(!expected.is_empty(), "curl {args:?} sent nothing");
        // A length where curl chunks (stdin, which abide reads first) is
        // as good; a chunked body where curl sent a length is not.
        let mut expected = expected;
        if expected.len() == got.len() {
            for (curl, ours) in expected.iter_mut().zip(&got) {
                curl.chunked &= ours.chunked;
            }
        }
        if got != expected {
            differ.push(format!("{args:?}\n  curl:  {expected:?}\n  abide: {got:?}"));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} differ:\n{}",
        differ.len(),
        cases.len(),
        differ.join("\n")
    );
}

/// A Netscape cookie file, a file of Set-Cookie lines and two .netrc files.
fn write_cookie_files(dir: &Path) {
    std::fs::write(
        dir.join("cookies.txt"),
        "# Netscape HTTP Cookie File\n\n\
         127.0.0.1\tFALSE\t/\tFALSE\t0\tq\t1\n\
         127.0.0.1\tFALSE\t/next\tFALSE\t2139722880\tdeep\t2\n\
         #HttpOnly_127.0.0.1\tFALSE\t/\tFALSE\t0\thonly\t3\n\
         127.0.0.1\tFALSE\t/\tTRUE\t0\tsecure\t4\n\
         127.0.0.1\tFALSE\t/\tFALSE\t1\texpired\t5\n\
         other.example\tFALSE\t/\tFALSE\t0\telsewhere\t6\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("set-cookie.txt"),
        "Set-Cookie: one=1; Path=/\nSet-Cookie: two=2\nSet-Cookie: three=3; Domain=127.0.0.1\n",
    )
    .unwrap();
    let netrc = "machine other.example login x password y\n\
                 machine 127.0.0.1 login alice password \"s3 cret\"\n";
    std::fs::write(dir.join("netrc"), netrc).unwrap();
    std::fs::write(dir.join(".netrc"), "default login dflt password pw\n").unwrap();
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

/// Output rows of cookies and redirects, against the recorder: curl's
/// stdout and `{dir}/jar.txt` are what abide must write, but the expiry of
/// the Max-Age cookie, which is the second it was set plus an hour.
const JAR_CASES: &[&[&str]] = &[
    &["-L", "-c", "{dir}/jar.txt", "{url}/cross-host"],
    &[
        "-L",
        "-b",
        "a=1",
        "-c",
        "{dir}/jar.txt",
        "{url}/set-cookies",
    ],
    &[
        "-b",
        "{dir}/cookies.txt",
        "-c",
        "{dir}/jar.txt",
        "{url}/set-cookies?loaded",
    ],
    &[
        "-L",
        "-b",
        "{dir}/set-cookie.txt",
        "-c",
        "{dir}/jar.txt",
        "{url}/set-cookies",
    ],
    &["-c", "{dir}/jar.txt", "{url}/no-cookies"],
    &["-b", "{dir}/cookies.txt", "-c", "-", "{url}/jar-to-stdout"],
    &[
        "-L",
        "-w",
        "%{num_redirects} %{url_effective} %{http_code}",
        "{url}/down/3",
    ],
    &[
        "-w",
        "%{num_redirects} %{url_effective} %{http_code}",
        "{url}/down/3",
    ],
    &[
        "-L",
        "--max-redirs",
        "2",
        "-w",
        "%{http_code} %{url_effective}",
        "{url}/r/0",
    ],
    &[
        "-w",
        "%{remote_ip} %{remote_port} %{num_connects}",
        "{url}/x",
    ],
    &[
        "--connect-to",
        "example.test:80:127.0.0.1:{port}",
        "-w",
        "%{remote_ip} %{remote_port} %{url_effective}",
        "http://example.test/x",
    ],
];

#[test]
fn cookie_jars_and_redirect_variables_are_what_curl_writes() {
    let dir = temp_dir("curl-jar");
    write_cookie_files(&dir);
    let recorder = Recorder::start();
    let url = format!("http://127.0.0.1:{}", recorder.port);
    let jar = dir.join("jar.txt");
    let max_age = |text: Vec<u8>| -> String {
        String::from_utf8(text)
            .unwrap()
            .lines()
            .map(|line| match line.split('\t').collect::<Vec<_>>()[..] {
                [d, s, p, sec, _, "age", v] => format!("{d}\t{s}\t{p}\t{sec}\t(+1h)\tage\t{v}\n"),
                _ => format!("{line}\n"),
            })
            .collect()
    };
    let written = |mut cmd: Command| {
        let _ = std::fs::remove_file(&jar);
        let stdout = cmd
            .env("HOME", &dir)
            .args(["-o", "/dev/null"])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .expect("the client starts")
            .stdout;
        (max_age(stdout), std::fs::read(&jar).ok().map(max_age))
    };
    let mut differ = Vec::new();
    for case in JAR_CASES {
        let args = fill(case, &url, &dir);
        let mut curl = Command::new("curl");
        curl.args(&args);
        let expected = written(curl);
        let mut ours = abide(&["--no-state", "--outcome", "none"]);
        ours.args(&args);
        let got = written(ours);
        if got != expected {
            differ.push(format!("{args:?}\n  curl:  {expected:?}\n  abide: {got:?}"));
        }
    }
    recorder.take();
    assert!(
        differ.is_empty(),
        "{} of {} differ:\n{}",
        differ.len(),
        JAR_CASES.len(),
        differ.join("\n")
    );
}

/// One redirect more than --max-redirs allows is curl's error 47: the
/// same requests, then a final failure, not retried.
#[test]
fn too_many_redirects_end_the_run_as_curl_ends_it() {
    let recorder = Recorder::start();
    let url = format!("http://127.0.0.1:{}/r/0", recorder.port);
    let curl = Command::new("curl")
        .args(["-s", "-L", "--max-redirs", "2", "-o", "/dev/null", &url])
        .status()
        .unwrap();
    assert_eq!(curl.code(), Some(47));
    let expected = recorder.take();
    let run = run(&[
        "--no-state",
        "-L",
        "--max-redirs",
        "2",
        "-o",
        "/dev/null",
        &url,
    ]);
    assert_eq!(recorder.take(), expected, "the same three requests, once");
    assert_eq!(run.outcome()["outcome"], "NON_RETRYABLE");
    let reason = run.outcome()["reason"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        reason.contains("Maximum (2) redirects followed"),
        "{reason}"
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

/// `--cert`/`--key`: a server that asks for a client certificate gets the
/// one given, with ureq's TLS step (-k) and with the --cacert one, as curl
/// shows it; without it the handshake fails, for curl and abide alike.
#[test]
fn a_client_certificate_is_shown_as_curl_shows_it() {
    let dir = temp_dir("curl-client-cert");
    let (server_cert, server_key) = self_signed(&dir, "server");
    let (client_cert, client_key) = self_signed(&dir, "client");
    let script = r#"
import http.server, ssl, sys
class Who(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = repr(self.connection.getpeercert()["subject"]).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", 0), Who)
tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
tls.load_cert_chain(sys.argv[1], sys.argv[2])
tls.verify_mode = ssl.CERT_REQUIRED
tls.load_verify_locations(sys.argv[3])
server.socket = tls.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;
    let server = python_tls(
        script,
        &[&server_cert, &server_key, &client_cert],
        server_cert.clone(),
    );
    let url = server.url.clone();
    let (cert, key, ca) = (
        client_cert.to_str().unwrap(),
        client_key.to_str().unwrap(),
        server_cert.to_str().unwrap(),
    );
    let curl = Command::new("curl")
        .args(["-s", "--cacert", ca, "--cert", cert, "--key", key, &url])
        .output()
        .unwrap();
    let shown = String::from_utf8(curl.stdout).unwrap();
    assert!(shown.contains("127.0.0.1"), "{shown}");
    for trust in [["--cacert", ca], ["-k", "-s"]] {
        let run = run(&[
            "--no-state",
            trust[0],
            trust[1],
            "--cert",
            cert,
            "--key",
            key,
            &url,
        ]);
        assert_eq!(run.stdout_text(), shown, "{trust:?}: {}", run.stderr);
        let without =
            super::util::run(&["--no-state", "--attempts", "1", trust[0], trust[1], &url]);
        assert_ne!(without.outcome()["ok"], true, "{trust:?} without --cert");
    }
}

/// `--retry-all-errors` retries a 404 of a GET, waiting `--retry-delay`
/// instead of the backoff, but never a POST's: the server answered it,
/// and what it did is its own.
#[test]
fn retry_all_errors_retries_what_is_safe_to_replay() {
    let server = raw(|mut stream| {
        read_head(&stream);
        let _ = stream
            .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    });
    let url = format!("{}/missing", server.url());
    let flags = [
        "--no-state",
        "--retry",
        "2",
        "--retry-all-errors",
        "--retry-delay",
        "0.01",
    ];
    let get = run(&[&flags[..], &[url.as_str()]].concat());
    assert_eq!(server.accepted(), 3, "a GET is retried");
    assert_eq!(get.outcome()["outcome"], "RETRY_EXHAUSTED");
    let post = run(&[&flags[..], &["-d", "x", url.as_str()]].concat());
    assert_eq!(server.accepted(), 4, "a POST is not");
    assert_eq!(post.outcome()["outcome"], "NON_RETRYABLE");
    let plain = run(&["--no-state", "--retry", "2", &url]);
    assert_eq!(server.accepted(), 5, "without the flag a 404 is final");
    assert_eq!(plain.outcome()["outcome"], "NON_RETRYABLE");
}

/// `--unix-socket`: the socket gets what curl sends it, redirects too,
/// whatever the URL's host.
#[test]
fn a_unix_socket_gets_what_curl_sends_it() {
    let dir = temp_dir("curl-unix");
    let socket = dir.join("api.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            if let Some(request) = read_request(&stream) {
                let answer = answer(&request.target, 0);
                log.lock().unwrap().push(request);
                let _ = stream.write_all(answer.as_bytes());
            }
        }
    });
    let socket = socket.to_str().unwrap();
    let take = || std::mem::take(&mut *seen.lock().unwrap());
    for case in [
        &["http://localhost/v1.43/info"][..],
        &["-L", "http://docker/down/2"],
        &[
            "-d",
            "{\"Image\":\"alpine\"}",
            "-H",
            "Content-Type: application/json",
            "http://localhost/containers/create",
        ],
    ] {
        let status = Command::new("curl")
            .args(["-s", "-o", "/dev/null", "--unix-socket", socket])
            .args(case)
            .status()
            .unwrap();
        assert!(status.success(), "curl {case:?}");
        let expected = take();
        assert!(!expected.is_empty());
        let run = run(&[
            &["--no-state", "-o", "/dev/null", "--unix-socket", socket][..],
            case,
        ]
        .concat());
        assert_eq!(run.outcome()["ok"], true, "{}", run.stderr);
        assert_eq!(take(), expected, "{case:?}");
    }
    let missing = run(&[
        "--no-state",
        "--attempts",
        "1",
        "-d",
        "x",
        "--unix-socket",
        "/nonexistent.sock",
        "http://localhost/",
    ]);
    assert_eq!(
        missing.outcome()["outcome"],
        "RETRY_EXHAUSTED",
        "a socket that is not there: nothing was sent, so a POST may be retried"
    );
}

/// `-U`: the proxy gets the credentials as curl gives them (curl with `-p`,
/// since abide always tunnels), and they are masked in the outcome.
#[test]
fn a_proxy_user_reaches_the_proxy_as_curls_does() {
    let recorder = Recorder::start();
    let proxy = format!("http://127.0.0.1:{}", recorder.port);
    let args = [
        "-p",
        "-x",
        &proxy,
        "-U",
        "me:pr0xy-pass",
        "http://example.test/x",
    ];
    let _ = Command::new("curl")
        .args(["-s", "-o", "/dev/null"])
        .args(args)
        .status()
        .unwrap();
    let connect = |seen: Vec<Seen>| {
        let first = seen.into_iter().next().expect("the proxy was asked");
        let auth = first
            .headers
            .into_iter()
            .find(|(n, _)| n == "proxy-authorization");
        (first.method, first.target, auth)
    };
    let expected = connect(recorder.take());
    assert_eq!(expected.0, "CONNECT");
    let run = run(&[
        &["--no-state", "--attempts", "1", "-o", "/dev/null"][..],
        &args,
    ]
    .concat());
    assert_eq!(connect(recorder.take()), expected);
    assert!(!run.stderr.contains("pr0xy-pass"), "{}", run.stderr);
    let alone = super::util::run(&["--no-state", "-U", "me:pw", "http://example.test/"]);
    assert_eq!(alone.outcome()["outcome"], "USAGE_ERROR");
}
