//! `--agent`: the one JSON object an agent's tool call returns. It is the
//! outcome line plus what a model needs to act on the answer: the body (a
//! JSON value when it parses, else a string, `null` when empty), whether it
//! was cut at `--max-body`, and the headers that say when to call again.
//! Its `instruction` says what to do in so many words; for `NEEDS_HUMAN`
//! that is to stop and hand the `reason` to a person, since no retry, wait
//! or new task id can settle a write that may or may not have happened.

use base64::Engine as _;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::redact::Redactor;
use crate::report::outcome::Line;

#[derive(Serialize)]
pub struct AgentObject<'a> {
    #[serde(flatten)]
    pub line: &'a Line,
    pub body: Value,
    pub body_truncated: bool,
    /// `"base64"` when the body is not UTF-8 text and `body` holds its
    /// bytes in base64; else null.
    pub body_encoding: Option<&'static str>,
    pub headers: Map<String, Value>,
}

/// The body as the object carries it.
#[derive(Debug)]
pub struct AgentBody {
    pub value: Value,
    pub truncated: bool,
    pub encoding: Option<&'static str>,
}

impl AgentBody {
    pub fn none() -> AgentBody {
        AgentBody {
            value: Value::Null,
            truncated: false,
            encoding: None,
        }
    }
}

/// Headers worth a model's attention, by lower-case name.
fn shown(name: &str) -> bool {
    matches!(
        name,
        "content-type" | "location" | "retry-after" | "retry-after-ms"
    ) || name.starts_with("ratelimit")
        || name.starts_with("x-ratelimit-")
}

/// The headers a model sees, with any credential masked (a `Location` may
/// carry a signed URL or a token).
pub fn headers(all: &[(String, String)], redactor: &Redactor) -> Map<String, Value> {
    all.iter()
        .filter(|(name, _)| shown(&name.to_ascii_lowercase()))
        .map(|(name, value)| {
            let value = redactor.text(&crate::redact::url(value));
            (name.to_ascii_lowercase(), Value::String(value))
        })
        .collect()
}

/// The body as a model reads it best, with any known secret masked before
/// it is cut at `limit`: JSON when it parses, else text, else (bytes that
/// are not UTF-8) base64, never mojibake. `more` says that `bytes` is
/// itself only the start of the body.
pub fn body(bytes: &[u8], more: bool, limit: u64, redactor: &Redactor) -> AgentBody {
    if bytes.is_empty() {
        return AgentBody::none();
    }
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let (bytes, cut) = redactor.cut(bytes, limit);
    let truncated = cut || more;
    match String::from_utf8(bytes) {
        Ok(text) => {
            let value = match serde_json::from_str::<Value>(&text) {
                Ok(value) if !truncated => value,
                _ => Value::String(text),
            };
            AgentBody {
                value,
                truncated,
                encoding: None,
            }
        }
        Err(e) => AgentBody {
            value: Value::String(base64::engine::general_purpose::STANDARD.encode(e.as_bytes())),
            truncated,
            encoding: Some("base64"),
        },
    }
}

/// What to do about a body cut at `--max-body`: its full size when the
/// server gave one, and the two ways to get it whole.
pub fn truncated_words(max_body: u64, headers: &[(String, String)]) -> String {
    let full = headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse::<u64>().ok());
    match full {
        Some(size) => format!(
            "The body was cut at --max-body {max_body} bytes of its {size}; call again with --max-body {size} to see it whole, or with -o FILE to save it."
        ),
        None => format!(
            "The body was cut at --max-body {max_body} bytes (its full size is unknown); call again with a larger --max-body, or with -o FILE to save it."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies() {
        let mut r = Redactor::default();
        r.add("tok-123456");
        let text = |bytes: &[u8], more, limit| body(bytes, more, limit, &r).value;
        assert_eq!(text(b"", false, 64), Value::Null);
        assert_eq!(
            text(br#"{"a":[1]}"#, false, 64),
            serde_json::json!({"a": [1]})
        );
        assert_eq!(
            text(br#"{"a":[1"#, true, 64),
            Value::String("{\"a\":[1".into())
        );
        assert_eq!(text(b"plain text", false, 64), "plain text");
        assert_eq!(
            text(br#"{"echo":"Bearer tok-123456"}"#, false, 64),
            serde_json::json!({"echo": "Bearer ***"})
        );
        // Masked, then cut: the secret crossing the cut leaves nothing.
        let cut = body(b"Bearer tok-123456 and so on", false, 10, &r);
        assert_eq!((cut.value, cut.truncated), ("Bearer ***".into(), true));
        // Not text: base64, said so.
        let binary = body(&[0xff, 0xd8, 0xff, 0xe0], false, 64, &r);
        assert_eq!(binary.value, "/9j/4A==");
        assert_eq!(binary.encoding, Some("base64"));
    }

    #[test]
    fn only_useful_headers() {
        let all: Vec<(String, String)> = [
            ("Content-Type", "application/json"),
            ("Retry-After", "3"),
            ("RateLimit-Policy", "\"lab\";q=4;w=3"),
            ("X-RateLimit-Reset", "5"),
            ("Set-Cookie", "s=secret"),
            ("Server", "lab"),
            ("Location", "/next?X-Amz-Signature=abc&page=2"),
        ]
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
        let shown = headers(&all, &Redactor::default());
        let names: Vec<&String> = shown.keys().collect();
        assert_eq!(
            names,
            [
                "content-type",
                "retry-after",
                "ratelimit-policy",
                "x-ratelimit-reset",
                "location"
            ]
        );
        assert_eq!(shown["location"], "/next?X-Amz-Signature=***&page=2");
    }
}
