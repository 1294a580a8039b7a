//! The lines of `--batch FILE`, read one at a time (a batch of 100,000
//! lines is never held at once). A line is a URL, or a JSON object:
//!
//! ```text
//! {"id": "…", "url": "…", "method": "…", "headers": {"Name": "value"},
//!  "json": …, "data": "…", "output": "path"}
//! ```
//!
//! Every field but `url` is optional; `id` (a string or a whole number)
//! defaults to the line number; a field not named here is an error, so a
//! typo is not silently dropped. `json` and `data` exclude each other, and
//! `"json": null` is the same as no `json`. Blank lines and lines starting
//! with `#` are skipped (they keep their numbers: ids follow the file's
//! lines). A bad line becomes that item's `USAGE_ERROR`, carrying its line
//! number, and the batch goes on. Ids must be unique, since the journal and
//! `-o {id}` key on them: a repeated id is a bad line.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{self, BufRead};

use serde::Deserialize;
use serde_json::Value;

/// One request of the batch; the fields it sets override the flags.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub id: String,
    /// Its line in the file, from 1.
    pub line: u64,
    pub url: String,
    pub method: Option<String>,
    /// In the order the line gives them.
    pub headers: Vec<(String, String)>,
    pub body: Option<Body>,
    /// Where its body goes, instead of `-o TEMPLATE`.
    pub output: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// `json`: sent as JSON, as `--json`.
    Json(Value),
    /// `data`: sent as it is, as `--data`.
    Data(String),
}

/// A line that is not an item: its number, the id it would have had (its
/// own if it could be read, else the line number), and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    pub line: u64,
    pub id: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    Item(Item),
    Bad(BadLine),
}

/// The batch's lines as they are read.
pub struct Lines<R> {
    reader: R,
    line: u64,
    buf: Vec<u8>,
    /// Ids seen so far, by hash (8 bytes each, not the id), and their line.
    ids: HashMap<u64, u64>,
}

impl<R: BufRead> Lines<R> {
    pub fn new(reader: R) -> Lines<R> {
        Lines {
            reader,
            line: 0,
            buf: Vec::new(),
            ids: HashMap::new(),
        }
    }
}

impl<R: BufRead> Iterator for Lines<R> {
    /// An error reading the file ends the batch; a bad line does not.
    type Item = io::Result<Line>;

    fn next(&mut self) -> Option<io::Result<Line>> {
        loop {
            self.buf.clear();
            match self.reader.read_until(b'\n', &mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => return Some(Err(e)),
            }
            self.line += 1;
            let Ok(text) = std::str::from_utf8(&self.buf) else {
                return Some(Ok(Line::Bad(BadLine {
                    line: self.line,
                    id: self.line.to_string(),
                    message: "the line is not UTF-8".into(),
                })));
            };
            let text = text.trim();
            if text.is_empty() || text.starts_with('#') {
                continue;
            }
            let parsed = parse(text, self.line).and_then(|item| self.unique(item));
            return Some(Ok(match parsed {
                Ok(item) => Line::Item(item),
                Err(bad) => Line::Bad(bad),
            }));
        }
    }
}

impl<R> Lines<R> {
    fn unique(&mut self, item: Item) -> Result<Item, BadLine> {
        let mut h = DefaultHasher::new();
        item.id.hash(&mut h);
        match self.ids.insert(h.finish(), item.line) {
            Some(first) => {
                self.ids.insert(h.finish(), first);
                Err(BadLine {
                    message: format!("id {:?} is already the id of line {first}", item.id),
                    line: item.line,
                    id: item.id,
                })
            }
            None => Ok(item),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    id: Option<Id>,
    url: String,
    method: Option<String>,
    #[serde(default)]
    headers: serde_json::Map<String, Value>,
    json: Option<Value>,
    data: Option<String>,
    output: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Id {
    Text(String),
    Number(u64),
}

/// One line (trimmed, not blank, not a comment) at number `line`.
pub fn parse(text: &str, line: u64) -> Result<Item, BadLine> {
    let bad = |id: String, message: String| BadLine { line, id, message };
    if !text.starts_with('{') {
        if text.split_whitespace().nth(1).is_some() {
            return Err(bad(
                line.to_string(),
                "a URL line is one URL; for more, write a JSON object".into(),
            ));
        }
        return Ok(Item {
            id: line.to_string(),
            line,
            url: text.to_string(),
            method: None,
            headers: Vec::new(),
            body: None,
            output: None,
        });
    }
    let raw: Raw = serde_json::from_str(text).map_err(|e| {
        // The id, when the object has a readable one, so that the outcome
        // names the item the user wrote.
        let id = serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|v| match v.get("id")? {
                Value::String(s) if !s.is_empty() => Some(s.clone()),
                Value::Number(n) => n.as_u64().map(|n| n.to_string()),
                _ => None,
            })
            .unwrap_or_else(|| line.to_string());
        let message = e.to_string();
        let message = message
            .rsplit_once(" at line ")
            .map_or(message.as_str(), |(m, _)| m);
        bad(id, format!("{message} (column {})", e.column()))
    })?;
    let id = match raw.id {
        None => line.to_string(),
        Some(Id::Number(n)) => n.to_string(),
        Some(Id::Text(s)) if s.is_empty() => {
            return Err(bad(line.to_string(), "id must not be empty".into()));
        }
        Some(Id::Text(s)) => s,
    };
    let fail = |message: String| Err(bad(id.clone(), message));
    if raw.url.trim().is_empty() {
        return fail("url must not be empty".into());
    }
    let mut headers = Vec::with_capacity(raw.headers.len());
    for (name, value) in raw.headers {
        match value {
            Value::String(v) => headers.push((name, v)),
            _ => return fail(format!("header {name:?}: its value must be a string")),
        }
    }
    let body = match (raw.json, raw.data) {
        (Some(_), Some(_)) => return fail("json and data exclude each other".into()),
        (Some(j), None) => Some(Body::Json(j)),
        (None, Some(d)) => Some(Body::Data(d)),
        (None, None) => None,
    };
    Ok(Item {
        id,
        line,
        url: raw.url,
        method: raw.method,
        headers,
        body,
        output: raw.output,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(text: &str) -> Vec<Line> {
        Lines::new(text.as_bytes())
            .collect::<io::Result<_>>()
            .unwrap()
    }

    fn bad(line: &Line) -> &BadLine {
        match line {
            Line::Bad(b) => b,
            Line::Item(i) => panic!("an item: {i:?}"),
        }
    }

    fn item(line: &Line) -> &Item {
        match line {
            Line::Item(i) => i,
            Line::Bad(b) => panic!("a bad line: {b:?}"),
        }
    }

    #[test]
    fn urls_objects_blanks_and_comments() {
        let lines = read(concat!(
            "http://a/1\n",
            "\n",
            "# a comment\n",
            "  http://a/2  \r\n",
            r#"{"id": "x", "url": "http://a/3", "method": "POST", "headers": {"B": "2", "A": "1"}, "json": {"k": [1]}, "output": "x.json"}"#,
            "\n",
            r#"{"url": "http://a/4", "data": "k=v", "id": 7}"#,
        ));
        assert_eq!(lines.len(), 4);
        assert_eq!(item(&lines[0]).id, "1");
        assert_eq!(item(&lines[0]).url, "http://a/1");
        // Ids follow the file's lines, skipped ones included.
        assert_eq!(item(&lines[1]).id, "4");
        assert_eq!(item(&lines[1]).url, "http://a/2");
        let x = item(&lines[2]);
        assert_eq!(
            (x.id.as_str(), x.line, x.method.as_deref()),
            ("x", 5, Some("POST"))
        );
        assert_eq!(
            x.headers,
            [("B".to_string(), "2".to_string()), ("A".into(), "1".into())]
        );
        assert_eq!(x.body, Some(Body::Json(json!({"k": [1]}))));
        assert_eq!(x.output.as_deref(), Some("x.json"));
        let y = item(&lines[3]);
        assert_eq!(
            (y.id.as_str(), &y.body),
            ("7", &Some(Body::Data("k=v".into())))
        );
    }

    #[test]
    fn bad_lines_carry_their_number_and_a_reason_and_the_batch_goes_on() {
        let rows: &[(&str, &str, &str)] = &[
            (
                r#"{"id": "a", "url": "http://a/", "bogus": 1}"#,
                "a",
                "unknown field `bogus`",
            ),
            (r#"{"id": "b"}"#, "b", "missing field `url`"),
            (
                r#"{"url": "http://a/", "json": 1, "data": "x"}"#,
                "1",
                "exclude each other",
            ),
            (
                r#"{"url": "http://a/", "headers": {"A": 1}}"#,
                "1",
                "must be a string",
            ),
            (r#"{"url": "", "id": 3}"#, "3", "url must not be empty"),
            (
                r#"{"url": "http://a/", "id": ""}"#,
                "1",
                "id must not be empty",
            ),
            (r#"{"url": "http://a/", "id": 1.5}"#, "1", "did not match"),
            (r#"{"url": "http://a/""#, "1", "EOF"),
            ("http://a/ http://b/", "1", "one URL"),
        ];
        for (text, id, message) in rows {
            let lines = read(&format!("{text}\nhttp://ok/\n"));
            let b = bad(&lines[0]);
            assert_eq!((b.line, b.id.as_str()), (1, *id), "{text}");
            assert!(b.message.contains(message), "{text}: {}", b.message);
            assert!(!b.message.contains("at line"), "{}", b.message);
            assert_eq!(item(&lines[1]).url, "http://ok/");
        }
        let lines = Lines::new(&b"\xff\xfe\nhttp://ok/\n"[..])
            .collect::<io::Result<Vec<_>>>()
            .unwrap();
        assert_eq!(bad(&lines[0]).message, "the line is not UTF-8");
    }

    #[test]
    fn a_repeated_id_is_a_bad_line_naming_the_first() {
        let lines = read(
            "{\"url\": \"http://a/\", \"id\": \"k\"}\nhttp://b/\n{\"url\": \"http://c/\", \"id\": \"k\"}\n{\"url\": \"http://d/\", \"id\": 2}\n",
        );
        assert_eq!(item(&lines[0]).id, "k");
        assert_eq!(item(&lines[1]).id, "2");
        assert!(bad(&lines[2]).message.contains("already the id of line 1"));
        assert!(bad(&lines[3]).message.contains("already the id of line 2"));
    }

    /// 100,000 URL lines, made as they are read, counting what was read.
    struct Made {
        next: u64,
        pending: Vec<u8>,
        read: std::rc::Rc<std::cell::Cell<usize>>,
    }

    impl std::io::Read for Made {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if self.pending.is_empty() && self.next < 100_000 {
                self.next += 1;
                self.pending = format!("http://a/{}\n", self.next).into_bytes();
            }
            let n = out.len().min(self.pending.len());
            out[..n].copy_from_slice(&self.pending[..n]);
            self.pending.drain(..n);
            self.read.set(self.read.get() + n);
            Ok(n)
        }
    }

    #[test]
    fn streams_without_holding_the_file() {
        let read = std::rc::Rc::default();
        let made = Made {
            next: 0,
            pending: Vec::new(),
            read: std::rc::Rc::clone(&read),
        };
        let mut lines = Lines::new(io::BufReader::new(made));
        let first: Vec<_> = lines.by_ref().take(3).map(|l| l.unwrap()).collect();
        assert_eq!(item(&first[2]).url, "http://a/3");
        assert!(read.get() < 64, "{} bytes read for 3 lines", read.get());
        assert_eq!(lines.count(), 99_997);
    }
}
