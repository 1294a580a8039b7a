//! The request body (or, with -G, the query) from --data*, --json, -F and
//! -T, byte for byte as curl builds it. A single file is streamed from disk
//! on each attempt; anything else is assembled once, in memory up to a few
//! MiB and beyond that in a private temporary file, within the budget.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::cli::{Cli, Data, DataKind};
use crate::edge::http::Body;
use crate::rules::decision::DEFAULT_BUDGET;

/// What the body flags ask for.
#[derive(Debug)]
pub struct Payload {
    pub body: Body,
    /// The Content-Type the body implies (a default `-H` may replace).
    pub content_type: Option<String>,
    /// `-G`: the data, to go after the URL's `?` (or `&`).
    pub query: Option<String>,
    /// `-T`: the file whose name a URL ending in `/` gets.
    pub upload_name: Option<String>,
    /// The temporary file the body was spooled to, if any: removed with it.
    pub spool: Option<Spooled>,
}

/// A private temporary file holding a request body, removed when dropped.
#[derive(Debug)]
pub struct Spooled(PathBuf);

impl Drop for Spooled {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

const FORM: &str = "application/x-www-form-urlencoded";

pub fn resolve(cli: &Cli, stdin: &mut dyn Read) -> Result<Payload, String> {
    let r = &cli.request;
    let mut input = Input {
        stdin,
        stdin_used: false,
        // The run's budget is not known before its method is: the one given,
        // else the default's least.
        deadline: Instant::now() + cli.policy.budget.unwrap_or(DEFAULT_BUDGET),
    };
    let mut payload = Payload {
        body: Body::Empty,
        content_type: None,
        query: None,
        upload_name: None,
        spool: None,
    };
    if let Some(file) = &r.upload_file {
        upload(file, &mut input, &mut payload)?;
    } else if !r.form_parts.is_empty() {
        form(&r.form_parts, &mut input, &mut payload)?;
    } else if !r.json.is_empty() {
        let json: Vec<Data> = r
            .json
            .iter()
            .map(|value| Data {
                kind: DataKind::Binary,
                value: value.clone(),
            })
            .collect();
        let how = Joined {
            with: "",
            content_type: "application/json",
        };
        data(&json, r.get, how, &mut input, &mut payload)?;
    } else if !r.data_parts.is_empty() {
        let how = Joined {
            with: "&",
            content_type: FORM,
        };
        data(&r.data_parts, r.get, how, &mut input, &mut payload)?;
    }
    Ok(payload)
}

/// `-T FILE`: the file, streamed; `-T -`: stdin, read once.
fn upload(file: &Path, input: &mut Input, payload: &mut Payload) -> Result<(), String> {
    if file.as_os_str() != "-" {
        payload.upload_name = file.file_name().map(|n| n.to_string_lossy().into_owned());
        if let Some(body) = streamed(file)? {
            payload.body = body;
            return Ok(());
        }
    }
    let mut spool = input.spool(SPOOL_MEMORY);
    input
        .add(&mut spool, &file.to_string_lossy(), &mut Verbatim)
        .map_err(|e| format!("cannot read -T {}: {e}", file.display()))?;
    (payload.body, payload.spool) = spool.finish();
    Ok(())
}

/// `-F` and `--form-string` (`true`): a multipart/form-data body, its
/// boundary shaped as curl's.
fn form(values: &[(bool, String)], input: &mut Input, payload: &mut Payload) -> Result<(), String> {
    let boundary = format!("{}{:016x}", "-".repeat(24), rand::random::<u64>());
    let mut spool = input.spool(SPOOL_MEMORY);
    for (literal, text) in values {
        FormPart::parse(text, *literal)?.write(&boundary, &mut spool, input)?;
    }
    spool
        .add(&mut format!("--{boundary}--\r\n").as_bytes(), &mut Verbatim)
        .map_err(|e| e.to_string())?;
    (payload.body, payload.spool) = spool.finish();
    payload.content_type = Some(format!("multipart/form-data; boundary={boundary}"));
    Ok(())
}

/// How values of --data* or of --json make one body.
struct Joined {
    /// Between two values: `&` for --data*, nothing for --json.
    with: &'static str,
    content_type: &'static str,
}

/// --data* or --json values, joined: the body, or with -G the query.
fn data(
    parts: &[Data],
    get: bool,
    how: Joined,
    input: &mut Input,
    payload: &mut Payload,
) -> Result<(), String> {
    if !get {
        payload.content_type = Some(how.content_type.into());
        if let [single] = parts
            && single.kind == DataKind::Binary
            && let Some(path) = single.value.strip_prefix('@').filter(|p| *p != "-")
            && let Some(body) = streamed(Path::new(path))?
        {
            payload.body = body;
            return Ok(());
        }
    }
    let mut spool = input.spool(if get { QUERY_MAX } else { SPOOL_MEMORY });
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            spool
                .add(&mut how.with.as_bytes(), &mut Verbatim)
                .map_err(|e| e.to_string())?;
        }
        input.data(&mut spool, part)?;
    }
    let (body, spooled) = spool.finish();
    match body {
        Body::Bytes(query) if get => {
            payload.query = Some(String::from_utf8_lossy(&query).into_owned());
        }
        _ if get => return Err("-G puts the data in the URL, and it is longer than 64 KiB".into()),
        body => (payload.body, payload.spool) = (body, spooled),
    }
    Ok(())
}

/// A regular file or a device (`/dev/zero`), read anew by each attempt.
fn streamed(path: &Path) -> Result<Option<Body>, String> {
    use std::os::unix::fs::FileTypeExt;
    let meta =
        fs::metadata(path).map_err(|e| format!("cannot read body file {}: {e}", path.display()))?;
    let streams = meta.is_file() || meta.file_type().is_char_device();
    Ok(streams.then(|| Body::File(path.to_path_buf())))
}

/// Where body bytes come from: files, and stdin at most once.
struct Input<'a> {
    stdin: &'a mut dyn Read,
    stdin_used: bool,
    deadline: Instant,
}

impl Input<'_> {
    fn spool(&self, memory: usize) -> Spool {
        Spool {
            bytes: Vec::new(),
            file: None,
            deadline: self.deadline,
            memory,
        }
    }

    /// Adds the bytes of `name` ("-" is stdin) to `spool`, transformed.
    fn add(&mut self, spool: &mut Spool, name: &str, how: &mut dyn Transform) -> io::Result<()> {
        if name == "-" {
            if self.stdin_used {
                return Err(io::Error::other("stdin (@-) can be used once"));
            }
            self.stdin_used = true;
            spool.add(self.stdin, how)
        } else {
            spool.add(&mut File::open(name)?, how)
        }
    }

    /// Adds one --data-* value to `spool` as curl adds it to the body;
    /// a file is streamed, never held whole.
    fn data(&mut self, spool: &mut Spool, part: &Data) -> Result<(), String> {
        let value = part.value.as_str();
        let (text, file, how): (&str, Option<&str>, &mut dyn Transform) =
            match (part.kind, value.strip_prefix('@')) {
                (DataKind::Text, Some(name)) => ("", Some(name), &mut CurlText::default()),
                (DataKind::Binary, Some(name)) => ("", Some(name), &mut Verbatim),
                (DataKind::UrlEncode, _) => {
                    // As curl splits it: at the first =, else at the first @.
                    let (name, content) = match value.find('=').or_else(|| value.find('@')) {
                        Some(i) if value.as_bytes()[i] == b'@' => {
                            (&value[..i], Err(&value[i + 1..]))
                        }
                        Some(i) => (&value[..i], Ok(&value[i + 1..])),
                        None => ("", Ok(value)),
                    };
                    if !name.is_empty() {
                        spool
                            .add(&mut format!("{name}=").as_bytes(), &mut Verbatim)
                            .map_err(|e| e.to_string())?;
                    }
                    match content {
                        Ok(text) => (text, None, &mut UrlEncode),
                        Err(file) => ("", Some(file), &mut UrlEncode),
                    }
                }
                _ => (value, None, &mut Verbatim),
            };
        match file {
            Some(name) => self
                .add(spool, name, how)
                .map_err(|e| format!("cannot read {}: {e}", shown(name))),
            None => spool
                .add(&mut text.as_bytes(), how)
                .map_err(|e| e.to_string()),
        }
    }
}

fn shown(name: &str) -> &str {
    if name == "-" { "stdin" } else { name }
}

/// What happens to bytes on their way into the body.
trait Transform {
    fn apply(&mut self, bytes: &[u8], out: &mut Vec<u8>);
}

struct Verbatim;

impl Transform for Verbatim {
    fn apply(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        out.extend_from_slice(bytes);
    }
}

/// What curl's -d @FILE keeps of a file: it reads it in pieces that end
/// at a newline or after 255 bytes, and keeps of each piece what comes
/// before its first CR, LF or NUL.
#[derive(Default)]
struct CurlText {
    /// Bytes of the current piece so far.
    piece: usize,
    /// The current piece had its CR, LF or NUL: the rest of it is dropped.
    cut: bool,
}

impl Transform for CurlText {
    fn apply(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        for &b in bytes {
            self.cut |= matches!(b, b'\r' | b'\n' | 0);
            if !self.cut {
                out.push(b);
            }
            self.piece += 1;
            if b == b'\n' || self.piece == 255 {
                self.piece = 0;
                self.cut = false;
            }
        }
    }
}

/// curl's --data-urlencode encoding: every byte but letters, digits and
/// `-._~` as %XX, and a space as +.
struct UrlEncode;

impl Transform for UrlEncode {
    fn apply(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        for &b in bytes {
            match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => out.push(b),
                b' ' => out.push(b'+'),
                _ => {
                    const HEX: &[u8; 16] = b"0123456789ABCDEF";
                    out.extend_from_slice(&[
                        b'%',
                        HEX[usize::from(b >> 4)],
                        HEX[usize::from(b & 15)],
                    ]);
                }
            }
        }
    }
}

/// One `-F` value.
#[derive(Debug, PartialEq, Eq)]
struct FormPart {
    name: String,
    content: FormContent,
    filename: Option<String>,
    content_type: Option<String>,
}

#[derive(Debug, PartialEq, Eq)]
enum FormContent {
    Text(String),
    /// `@FILE`: uploaded as a file.
    File(String),
    /// `<FILE`: the file's bytes as the value.
    FileText(String),
}

impl FormPart {
    /// A `-F` value, or (`literal`) a `--form-string` one.
    fn parse(text: &str, literal: bool) -> Result<FormPart, String> {
        let (name, content) = text
            .split_once('=')
            .ok_or("a -F value has no =; write it as NAME=VALUE, NAME=@FILE or NAME=<FILE")?;
        if literal {
            return Ok(FormPart {
                name: name.to_string(),
                content: FormContent::Text(content.to_string()),
                filename: None,
                content_type: None,
            });
        }
        let (kind, content): (fn(String) -> FormContent, &str) = match content.as_bytes().first() {
            Some(b'@') => (FormContent::File, &content[1..]),
            Some(b'<') => (FormContent::FileText, &content[1..]),
            _ => (FormContent::Text, content),
        };
        let (value, mut rest) = form_word(content);
        let mut part = FormPart {
            name: name.to_string(),
            content: kind(value),
            filename: None,
            content_type: None,
        };
        // `;type=…` and `;filename=…`; curl skips any other.
        while let Some(after) = rest.strip_prefix(';') {
            let after = after.trim_start();
            let (key, value) = after.split_once('=').unwrap_or((after, ""));
            let (value, tail) = form_word(value);
            match key.trim().to_ascii_lowercase().as_str() {
                "type" => part.content_type = Some(value),
                "filename" => part.filename = Some(value),
                _ => {}
            }
            rest = tail;
        }
        Ok(part)
    }

    /// Writes the part, its delimiter first.
    fn write(&self, boundary: &str, spool: &mut Spool, input: &mut Input) -> Result<(), String> {
        let filename = match (&self.filename, &self.content) {
            (Some(name), _) => Some(name.clone()),
            (None, FormContent::File(path)) => Some(
                Path::new(path)
                    .file_name()
                    .map_or_else(|| path.clone(), |n| n.to_string_lossy().into_owned()),
            ),
            (None, _) => None,
        };
        let guessed = filename.as_deref().and_then(content_type_of);
        // stdin (`@-`) is no file to curl: its type only from a filename.
        let content_type = match &self.content {
            FormContent::File(path) if path != "-" => self.content_type.clone().or_else(|| {
                let by_path = guessed.or_else(|| content_type_of(path));
                Some(by_path.unwrap_or("application/octet-stream").to_string())
            }),
            _ => self.content_type.clone().or(guessed.map(str::to_string)),
        };
        let mut head = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{}\"",
            form_escape(&self.name)
        );
        if let Some(filename) = &filename {
            head.push_str(&format!("; filename=\"{}\"", form_escape(filename)));
        }
        head.push_str("\r\n");
        if let Some(content_type) = content_type {
            head.push_str(&format!("Content-Type: {content_type}\r\n"));
        }
        head.push_str("\r\n");
        let written = spool
            .add(&mut head.as_bytes(), &mut Verbatim)
            .and_then(|()| match &self.content {
                FormContent::Text(text) => spool.add(&mut text.as_bytes(), &mut Verbatim),
                FormContent::File(path) | FormContent::FileText(path) => {
                    input.add(spool, path, &mut Verbatim)
                }
            });
        let name = match &self.content {
            FormContent::File(path) | FormContent::FileText(path) => shown(path),
            FormContent::Text(_) => &self.name,
        };
        written
            .and_then(|()| spool.add(&mut &b"\r\n"[..], &mut Verbatim))
            .map_err(|e| format!("cannot read -F {name}: {e}"))
    }
}

/// A -F value up to its `;`, or quoted ("a;b", with \" and \\).
fn form_word(text: &str) -> (String, &str) {
    let Some(quoted) = text.strip_prefix('"') else {
        let end = text.find(';').unwrap_or(text.len());
        return (text[..end].to_string(), &text[end..]);
    };
    let mut word = String::new();
    let mut chars = quoted.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                let rest = &quoted[i + 1..];
                let end = rest.find(';').unwrap_or(rest.len());
                return (word, &rest[end..]);
            }
            '\\' => word.extend(chars.next().map(|(_, c)| c)),
            c => word.push(c),
        }
    }
    (word, "")
}

/// As curl escapes a part's name and filename: a quote and line ends
/// percent-encoded, as browsers do.
fn form_escape(text: &str) -> String {
    text.replace('"', "%22")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// The type curl gives a file part by its name's extension.
fn content_type_of(name: &str) -> Option<&'static str> {
    const TYPES: [(&str, &str); 10] = [
        (".gif", "image/gif"),
        (".jpg", "image/jpeg"),
        (".jpeg", "image/jpeg"),
        (".png", "image/png"),
        (".svg", "image/svg+xml"),
        (".txt", "text/plain"),
        (".htm", "text/html"),
        (".html", "text/html"),
        (".pdf", "application/pdf"),
        (".xml", "application/xml"),
    ];
    let lower = name.to_ascii_lowercase();
    TYPES
        .iter()
        .find(|(ext, _)| lower.ends_with(ext))
        .map(|(_, t)| *t)
}

/// The largest body assembled in memory; beyond it, a temporary file.
pub(crate) const SPOOL_MEMORY: usize = 4 << 20;

/// The most -G puts in a URL.
const QUERY_MAX: usize = 64 << 10;

/// A body being assembled, and the time its reading must end by.
struct Spool {
    bytes: Vec<u8>,
    file: Option<(File, Spooled)>,
    deadline: Instant,
    /// Beyond this many bytes, the body goes to a temporary file.
    memory: usize,
}

impl Spool {
    fn add(&mut self, from: &mut dyn Read, how: &mut dyn Transform) -> io::Result<()> {
        let mut buf = vec![0u8; crate::edge::http::BUFFER];
        let mut out = Vec::with_capacity(buf.len());
        loop {
            if Instant::now() > self.deadline {
                return Err(io::Error::other("it did not end within the budget"));
            }
            let n = match from.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            out.clear();
            how.apply(&buf[..n], &mut out);
            if self.file.is_none() && self.bytes.len().saturating_add(out.len()) > self.memory {
                self.file = Some(spool_file(&self.bytes)?);
                self.bytes = Vec::new();
            }
            match &mut self.file {
                Some((file, _)) => file.write_all(&out)?,
                None => self.bytes.extend_from_slice(&out),
            }
        }
    }

    fn finish(self) -> (Body, Option<Spooled>) {
        match self.file {
            Some((_, spooled)) => (Body::File(spooled.0.clone()), Some(spooled)),
            None => (Body::Bytes(self.bytes), None),
        }
    }
}

/// A new temporary file only this user can read, holding `start`.
fn spool_file(start: &[u8]) -> io::Result<(File, Spooled)> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = std::env::temp_dir().join(format!(
        "abide-body-{}-{:08x}",
        std::process::id(),
        rand::random::<u32>()
    ));
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    let spooled = Spooled(path);
    file.write_all(start)?;
    Ok((file, spooled))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn through(how: &mut dyn Transform, pieces: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for piece in pieces {
            how.apply(piece, &mut out);
        }
        out
    }

    #[test]
    fn text_files_lose_their_line_ends_as_curl_reads_them() {
        let text = |pieces: &[&[u8]]| through(&mut CurlText::default(), pieces);
        assert_eq!(text(&[b"one\r\ntwo\nthree"]), b"onetwothree");
        assert_eq!(text(&[b"a\rlo", b"st\nb\0lost\n"]), b"ab");
        // A piece ends after 255 bytes: a CR in the next one cuts only it.
        let mut long = vec![b'x'; 300];
        long[260] = b'\r';
        assert_eq!(text(&[&long[..100], &long[100..]]).len(), 260);
    }

    #[test]
    fn urlencoding_as_curl_does() {
        let encoded = through(&mut UrlEncode, &[b"a b&c=d\n~._-", "é".as_bytes()]);
        assert_eq!(encoded, b"a+b%26c%3Dd%0A~._-%C3%A9");
    }

    #[test]
    fn form_values() {
        let part =
            FormPart::parse("f=@dir/a.json;type=application/json;filename=z.json", false).unwrap();
        assert_eq!(part.content, FormContent::File("dir/a.json".into()));
        assert_eq!(part.content_type.as_deref(), Some("application/json"));
        assert_eq!(part.filename.as_deref(), Some("z.json"));
        let part = FormPart::parse("t=\"a;b \\\"c\\\"\";type=text/x", false).unwrap();
        assert_eq!(part.content, FormContent::Text("a;b \"c\"".into()));
        assert_eq!(part.content_type.as_deref(), Some("text/x"));
        assert_eq!(
            FormPart::parse("g=<u.txt", false).unwrap().content,
            FormContent::FileText("u.txt".into())
        );
        assert!(FormPart::parse("novalue", false).is_err());
        let part = FormPart::parse("s=@not;type=x", true).unwrap();
        assert_eq!(part.content, FormContent::Text("@not;type=x".into()));
        assert_eq!(content_type_of("A.PNG"), Some("image/png"));
        assert_eq!(content_type_of("a.json"), None);
        assert_eq!(form_escape("a\"b\r\n"), "a%22b%0D%0A");
    }
}
