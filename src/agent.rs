//! `--agent`: the one JSON object an agent's tool call returns. It is the
//! outcome line plus what a model needs to act on the answer: the body (a
//! JSON value when it parses, else a string, `null` when empty), whether it
//! was cut at `--max-body`, and the headers that say when to call again.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::outcome::Line;
use crate::redact::Redactor;

#[derive(Serialize)]
pub struct AgentObject<'a> {
    #[serde(flatten)]
    pub line: &'a Line,
    pub body: Value,
    pub body_truncated: bool,
    pub headers: Map<String, Value>,
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

/// The body as a model reads it best, with any known secret masked.
pub fn body(bytes: &[u8], truncated: bool, redactor: &Redactor) -> Value {
    if bytes.is_empty() {
        return Value::Null;
    }
    let text = redactor.text(&String::from_utf8_lossy(bytes));
    if !truncated && let Ok(value) = serde_json::from_str::<Value>(&text) {
        return value;
    }
    Value::String(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies() {
        let mut r = Redactor::default();
        r.add("tok-123");
        assert_eq!(body(b"", false, &r), Value::Null);
        assert_eq!(
            body(br#"{"a":[1]}"#, false, &r),
            serde_json::json!({"a": [1]})
        );
        assert_eq!(
            body(br#"{"a":[1"#, true, &r),
            Value::String("{\"a\":[1".into())
        );
        assert_eq!(
            body(b"plain text", false, &r),
            Value::String("plain text".into())
        );
        assert_eq!(
            body(br#"{"echo":"Bearer tok-123"}"#, false, &r),
            serde_json::json!({"echo": "Bearer ***"})
        );
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
