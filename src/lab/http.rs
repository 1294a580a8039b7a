//! Just enough HTTP/1.1 to read one request and to write one response, with
//! the limits that keep a misbehaving client from hurting the lab.

use std::fmt::Write as _;
use std::io::{self, BufRead, Read};
use std::time::SystemTime;

/// Larger request heads get 431.
pub const MAX_HEAD: usize = 64 * 1024;
/// Larger request bodies get 413: the lab keeps every body in memory.
pub const MAX_BODY: usize = 8 * 1024 * 1024;
/// A chunk-size line or a trailer line longer than this is not a sincere one.
const MAX_LINE: usize = 4096;
const MAX_TRAILERS: usize = 100;

/// A request line and its header section.
#[derive(Debug, PartialEq, Eq)]
pub struct Head {
    pub method: String,
    pub target: String,
    /// As received, original case, in order.
    pub headers: Vec<(String, String)>,
}

/// Why a request could not be read.
#[derive(Debug, PartialEq, Eq)]
pub enum ReadError {
    /// The connection ended, failed or timed out: there is nobody to answer.
    Gone,
    Malformed(&'static str),
    HeadTooLarge,
    BodyTooLarge,
}

impl From<io::Error> for ReadError {
    fn from(_: io::Error) -> ReadError {
        ReadError::Gone
    }
}

impl ReadError {
    /// The status to answer with, if answering is still possible.
    pub fn status(&self) -> Option<u16> {
        match self {
            ReadError::Gone => None,
            ReadError::Malformed(_) => Some(400),
            ReadError::HeadTooLarge => Some(431),
            ReadError::BodyTooLarge => Some(413),
        }
    }

    pub fn detail(&self) -> &'static str {
        match self {
            ReadError::Gone => "connection closed",
            ReadError::Malformed(why) => why,
            ReadError::HeadTooLarge => "request header section is over 64 KiB",
            ReadError::BodyTooLarge => "request body is over 8 MiB",
        }
    }
}

/// The first value of header `name` (case-insensitive).
pub fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// All list elements of header `name`, across repeated fields.
fn elements<'a>(headers: &'a [(String, String)], name: &'a str) -> Vec<&'a str> {
    headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .flat_map(|(_, v)| v.split(','))
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect()
}

/// Reads up to and including the blank line that ends a request head.
pub fn read_head(reader: &mut impl BufRead) -> Result<Head, ReadError> {
    let mut head = Vec::new();
    let mut request_line_seen = false;
    loop {
        let start = head.len();
        let budget = (MAX_HEAD + 1 - start) as u64;
        reader.by_ref().take(budget).read_until(b'\n', &mut head)?;
        if head.len() > MAX_HEAD {
            return Err(ReadError::HeadTooLarge);
        }
        let line = &head[start..];
        if !line.ends_with(b"\n") {
            return Err(ReadError::Gone);
        }
        // Blank lines before the request line are to be ignored (RFC 9112 §2.2);
        // they stay in `head` so that they count against the size limit.
        let blank = line == b"\r\n" || line == b"\n";
        if blank && request_line_seen {
            return parse_head(&head);
        }
        request_line_seen |= !blank;
    }
}

fn is_token(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Parses a complete request head (request line, header lines, blank line).
pub fn parse_head(bytes: &[u8]) -> Result<Head, ReadError> {
    let text = String::from_utf8_lossy(bytes);
    let mut lines = text
        .trim_start_matches(['\r', '\n'])
        .split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line));
    let request_line = lines.next().unwrap_or_default();
    let parts: Vec<&str> = request_line.split(' ').collect();
    let [method, target, version] = parts[..] else {
        return Err(ReadError::Malformed(
            "request line is not `METHOD TARGET HTTP/1.1`",
        ));
    };
    if !is_token(method) {
        return Err(ReadError::Malformed("method is not a token"));
    }
    if target.is_empty() || !target.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ReadError::Malformed(
            "request target is empty or not printable",
        ));
    }
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return Err(ReadError::Malformed(
            "HTTP version is not HTTP/1.1 or HTTP/1.0",
        ));
    }
    let mut headers = Vec::new();
    for line in lines.filter(|line| !line.is_empty()) {
        if line.starts_with([' ', '\t']) {
            return Err(ReadError::Malformed("obsolete header line folding"));
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(ReadError::Malformed("header line without a colon"));
        };
        if !is_token(name) {
            return Err(ReadError::Malformed("header name is not a token"));
        }
        headers.push((name.to_owned(), value.trim_matches([' ', '\t']).to_owned()));
    }
    Ok(Head {
        method: method.to_owned(),
        target: target.to_owned(),
        headers,
    })
}

/// Whether the client waits for `100 Continue` before sending its body.
pub fn expects_continue(headers: &[(String, String)]) -> bool {
    header(headers, "expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
}

/// Reads the request body framed as the headers say: chunked, Content-Length, or none.
pub fn read_body(
    reader: &mut impl BufRead,
    headers: &[(String, String)],
) -> Result<Vec<u8>, ReadError> {
    let codings = elements(headers, "transfer-encoding");
    let lengths = elements(headers, "content-length");
    match (codings.last(), lengths.first()) {
        (None, None) => Ok(Vec::new()),
        // Both framings at once is the classic request-smuggling shape (RFC 9112 §6.3).
        (Some(_), Some(_)) => Err(ReadError::Malformed(
            "both Transfer-Encoding and Content-Length",
        )),
        (Some(last), None) if last.eq_ignore_ascii_case("chunked") => read_chunked(reader),
        (Some(_), None) => Err(ReadError::Malformed(
            "Transfer-Encoding does not end with chunked",
        )),
        (None, Some(&first)) => {
            if lengths.iter().any(|&l| l != first) {
                return Err(ReadError::Malformed("conflicting Content-Length values"));
            }
            if !first.bytes().all(|b| b.is_ascii_digit()) {
                return Err(ReadError::Malformed("Content-Length is not a number"));
            }
            // All digits, so a parse failure can only be an overflow.
            let length = first
                .parse::<usize>()
                .map_err(|_| ReadError::BodyTooLarge)?;
            if length > MAX_BODY {
                return Err(ReadError::BodyTooLarge);
            }
            let mut body = Vec::new();
            read_exactly(reader, length, &mut body)?;
            Ok(body)
        }
    }
}

/// Appends exactly `length` bytes to `body`.
fn read_exactly(
    reader: &mut impl BufRead,
    length: usize,
    body: &mut Vec<u8>,
) -> Result<(), ReadError> {
    let read = reader.by_ref().take(length as u64).read_to_end(body)?;
    if read < length {
        return Err(ReadError::Gone);
    }
    Ok(())
}

fn read_chunked(reader: &mut impl BufRead) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    loop {
        let line = read_line(reader)?;
        // Chunk extensions (`;name=value`) are allowed and meaningless here.
        let size = line.split(';').next().unwrap_or_default();
        let size = size.trim_end_matches([' ', '\t']);
        if size.is_empty() || !size.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(ReadError::Malformed("chunk size is not a hex number"));
        }
        let size = usize::from_str_radix(size, 16).map_err(|_| ReadError::BodyTooLarge)?;
        if size == 0 {
            // Trailer fields, ignored, up to the blank line.
            for _ in 0..MAX_TRAILERS {
                if read_line(reader)?.is_empty() {
                    return Ok(body);
                }
            }
            return Err(ReadError::Malformed("too many trailer lines"));
        }
        if size > MAX_BODY - body.len() {
            return Err(ReadError::BodyTooLarge);
        }
        read_exactly(reader, size, &mut body)?;
        if !read_line(reader)?.is_empty() {
            return Err(ReadError::Malformed("chunk is longer than its size"));
        }
    }
}

/// One line without its line ending.
fn read_line(reader: &mut impl BufRead) -> Result<String, ReadError> {
    let mut line = Vec::new();
    reader
        .by_ref()
        .take(MAX_LINE as u64 + 1)
        .read_until(b'\n', &mut line)?;
    if line.len() > MAX_LINE {
        return Err(ReadError::Malformed("chunk or trailer line is too long"));
    }
    if line.pop() != Some(b'\n') {
        return Err(ReadError::Gone);
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line).map_err(|_| ReadError::Malformed("chunk or trailer line is not text"))
}

/// Statuses whose responses never have a body (RFC 9110 §6.4.1).
pub fn forbids_body(status: u16) -> bool {
    matches!(status, 100..=199 | 204 | 304)
}

fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Content Too Large",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        // The reason phrase is optional; the space before it is not.
        _ => "",
    }
}

/// The status line and header section of a response. `content_length` is
/// what to declare, if anything. Date, Server, Content-Length and
/// `Connection: close` are added unless `headers` already has them, so a
/// test can forge any of them.
pub fn response_head(
    status: u16,
    headers: &[(String, String)],
    content_length: Option<usize>,
) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status:03} {}\r\n", reason(status));
    let mut add = |name: &str, value: &str| {
        let _ = write!(out, "{name}: {value}\r\n");
    };
    for (name, value) in headers {
        add(name, value);
    }
    let missing = |name: &str| header(headers, name).is_none();
    if missing("date") {
        add("Date", &httpdate::fmt_http_date(SystemTime::now()));
    }
    if missing("server") {
        add("Server", "abide-lab");
    }
    if let Some(length) = content_length
        && missing("content-length")
    {
        add("Content-Length", &length.to_string());
    }
    // The lab answers one request per connection: simpler, and no client can
    // blame a stale kept-alive connection for a failure.
    if missing("connection") {
        add("Connection", "close");
    }
    out.push_str("\r\n");
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn head(text: &str) -> Result<Head, ReadError> {
        read_head(&mut Cursor::new(text.as_bytes()))
    }

    fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    fn body(headers_: &[(&str, &str)], bytes: &str) -> Result<Vec<u8>, ReadError> {
        read_body(&mut Cursor::new(bytes.as_bytes()), &headers(headers_))
    }

    #[test]
    fn reads_a_head() {
        let got =
            head("\r\nGET /x?y=1 HTTP/1.1\r\nHost: lab\r\nX-Client-Key:  k1 \r\n\r\nrest").unwrap();
        assert_eq!(
            got,
            Head {
                method: "GET".into(),
                target: "/x?y=1".into(),
                headers: headers(&[("Host", "lab"), ("X-Client-Key", "k1")]),
            }
        );
        assert_eq!(header(&got.headers, "x-client-key"), Some("k1"));
        // Bare LF line endings are tolerated.
        assert_eq!(
            head("GET / HTTP/1.0\nA: b\n\n").unwrap().headers,
            headers(&[("A", "b")])
        );
    }

    #[test]
    fn refuses_bad_heads() {
        for bad in [
            "NOT A VALID REQUEST\r\n\r\n",
            "GET /\r\n\r\n",
            "GET / HTTP/2\r\n\r\n",
            "G(T / HTTP/1.1\r\n\r\n",
            "GET  / HTTP/1.1\r\n\r\n",
            "GET / HTTP/1.1\r\nNo colon\r\n\r\n",
            "GET / HTTP/1.1\r\nBad Name: x\r\n\r\n",
            "GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n",
        ] {
            assert!(
                matches!(head(bad), Err(ReadError::Malformed(_))),
                "{bad:?} gave {:?}",
                head(bad)
            );
        }
        assert_eq!(head("").unwrap_err(), ReadError::Gone);
        assert_eq!(
            head("GET / HTTP/1.1\r\nHost: x\r\n").unwrap_err(),
            ReadError::Gone
        );
    }

    #[test]
    fn refuses_huge_heads() {
        let big = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD));
        assert_eq!(head(&big).unwrap_err(), ReadError::HeadTooLarge);
        // Endless blank lines count too.
        assert_eq!(
            head(&"\r\n".repeat(MAX_HEAD)).unwrap_err(),
            ReadError::HeadTooLarge
        );
        let fits = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD - 40));
        assert!(head(&fits).is_ok());
    }

    #[test]
    fn reads_bodies() {
        assert_eq!(body(&[], "ignored"), Ok(vec![]));
        assert_eq!(
            body(&[("Content-Length", "5")], "hello world"),
            Ok(b"hello".to_vec())
        );
        assert_eq!(
            body(
                &[("Content-Length", "5"), ("content-length", "5, 5")],
                "hello"
            ),
            Ok(b"hello".to_vec())
        );
        let chunked = "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nTrailer: x\r\n\r\n";
        assert_eq!(
            body(&[("Transfer-Encoding", "gzip, Chunked")], chunked),
            Ok(b"hello world".to_vec())
        );
    }

    #[test]
    fn refuses_bad_bodies() {
        let malformed =
            |h: &[(&str, &str)], b: &str| matches!(body(h, b), Err(ReadError::Malformed(_)));
        assert!(malformed(
            &[("Content-Length", "5"), ("Content-Length", "6")],
            "hello!"
        ));
        assert!(malformed(&[("Content-Length", "-5")], ""));
        assert!(malformed(
            &[("Content-Length", "5"), ("Transfer-Encoding", "chunked")],
            "hello"
        ));
        assert!(malformed(&[("Transfer-Encoding", "gzip")], ""));
        let chunked = [("Transfer-Encoding", "chunked")];
        assert!(malformed(&chunked, "zz\r\n"));
        assert!(malformed(&chunked, "+5\r\nhello\r\n0\r\n\r\n"));
        assert!(malformed(&chunked, "3\r\nhello\r\n0\r\n\r\n"));
        assert_eq!(body(&chunked, "5\r\nhel"), Err(ReadError::Gone));
        assert_eq!(
            body(&[("Content-Length", "5")], "hel"),
            Err(ReadError::Gone)
        );
        assert_eq!(
            body(&[("Content-Length", "99999999999999999999999")], ""),
            Err(ReadError::BodyTooLarge)
        );
        assert_eq!(
            body(&[("Content-Length", &(MAX_BODY + 1).to_string())], ""),
            Err(ReadError::BodyTooLarge)
        );
        assert_eq!(
            body(&chunked, "ffffffffffffffffffff\r\n"),
            Err(ReadError::BodyTooLarge)
        );
    }

    #[test]
    fn writes_a_response_head() {
        let custom = headers(&[("Retry-After", "1"), ("content-length", "99")]);
        let text = String::from_utf8(response_head(429, &custom, Some(3))).unwrap();
        assert!(text.starts_with(
            "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\ncontent-length: 99\r\nDate: "
        ));
        assert!(
            text.ends_with("\r\nServer: abide-lab\r\nConnection: close\r\n\r\n"),
            "{text}"
        );
        let text = String::from_utf8(response_head(599, &[], None)).unwrap();
        assert!(text.starts_with("HTTP/1.1 599 \r\n"));
        assert!(!text.contains("Content-Length"));
    }
}
