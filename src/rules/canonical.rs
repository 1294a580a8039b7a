//! One spelling for requests that mean the same, and an identity for the
//! error a request met, so that the no-progress guard counts identical
//! failures, and neither reformatting a request nor a new error slips past
//! it or is counted as a repeat.
//!
//! What is the same:
//!
//! - **JSON bodies** (a `application/json` or `+json` media type) as RFC 8785
//!   (JCS) writes them: object members sorted by key (by code point), no
//!   whitespace, strings with the shortest escapes (`\u0041` is `A`), and
//!   numbers by value: `1`, `1.0`, `1e0` and `10e-1` are all `1`. Integers
//!   that JSON parsers keep exactly (up to 64 bits) stay exact, so two ids
//!   past 2^53 remain two requests; other numbers are compared as doubles,
//!   as JCS and the parsers of most APIs read them. Duplicate keys: the last
//!   wins, as with most parsers. A body that does not parse is kept as it is.
//! - **Form bodies** (`application/x-www-form-urlencoded`) and **query
//!   strings**: the parameters decoded (`%41` is `A`, `+` is a space, as
//!   servers read forms) and sorted by name. Values of a repeated name keep
//!   their order (`a=1&a=2` is a list to many servers, and a list reordered
//!   may mean something else), and so does everything in the path.
//!
//! The identity of an error is its status and, for a JSON error body, the
//! fields that name the error rather than describe it: `code`, `error` (when
//! it is a string or a number, as OAuth 2.0 writes it) and `type`, at the
//! top and inside an `error` object (OpenAI's and Stripe's shape). Messages
//! are left out: they often carry a request id or a time.

use std::borrow::Cow;

use serde_json::Value;
use url::form_urlencoded;

/// The body as the fingerprint sees it, by its `Content-Type`.
pub fn body<'a>(content_type: Option<&str>, bytes: &'a [u8]) -> Cow<'a, [u8]> {
    let media = content_type
        .and_then(|t| t.split(';').next())
        .map(|t| t.trim().to_ascii_lowercase())
        .unwrap_or_default();
    if media == "application/json" || media.ends_with("+json") {
        match serde_json::from_slice::<Value>(bytes) {
            Ok(value) => Cow::Owned(json(&value).into_bytes()),
            Err(_) => Cow::Borrowed(bytes),
        }
    } else if media == "application/x-www-form-urlencoded" {
        Cow::Owned(pairs(bytes).into_bytes())
    } else {
        Cow::Borrowed(bytes)
    }
}

/// A JSON value in its one spelling.
pub fn json(value: &Value) -> String {
    let mut out = String::new();
    write_json(value, &mut out);
    out
}

fn write_json(value: &Value, out: &mut String) {
    match value {
        Value::Number(n) => out.push_str(&number(n)),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out);
            }
            out.push(']');
        }
        Value::Object(members) => {
            let mut sorted: Vec<_> = members.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, item)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_json(item, out);
            }
            out.push('}');
        }
        // Null, booleans and strings: serde_json already writes them one way.
        other => out.push_str(&other.to_string()),
    }
}

/// A number by its value: exact integers as they are, a double with no
/// fraction as an integer, any other double in its shortest form.
fn number(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    // Within ±2^63 a whole double is an exact integer; -0 is 0.
    if f.fract() == 0.0 && f.abs() < 9.223_372_036_854_775e18 {
        return format!("{}", f as i64);
    }
    serde_json::Number::from_f64(f).map_or_else(|| "null".into(), |n| n.to_string())
}

/// `name=value` pairs decoded, sorted by name (stably), encoded one way.
fn pairs(bytes: &[u8]) -> String {
    let mut decoded: Vec<(String, String)> = form_urlencoded::parse(bytes)
        .map(|(name, value)| (name.into_owned(), value.into_owned()))
        .collect();
    decoded.sort_by(|a, b| a.0.cmp(&b.0));
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(decoded)
        .finish()
}

/// The URL with its query parameters in their one spelling (the fragment,
/// never sent, dropped); a URL without a query is returned as it is.
pub fn url(url: &str) -> Cow<'_, str> {
    let sent = url.split_once('#').map_or(url, |(before, _)| before);
    match sent.split_once('?') {
        Some((path, query)) => Cow::Owned(format!("{path}?{}", pairs(query.as_bytes()))),
        None => Cow::Borrowed(sent),
    }
}

/// What names the error of a failed attempt: its status, and the naming
/// fields of a JSON error body (see the module's doc), as one line.
pub fn error_identity(status: u16, body: &[u8]) -> String {
    let mut identity = status.to_string();
    let Ok(Value::Object(top)) = serde_json::from_slice::<Value>(body) else {
        return identity;
    };
    let nested = match top.get("error") {
        Some(Value::Object(inner)) => Some(inner),
        _ => None,
    };
    let fields = [
        ("code", top.get("code")),
        ("error", top.get("error")),
        ("type", top.get("type")),
        ("error.code", nested.and_then(|e| e.get("code"))),
        ("error.type", nested.and_then(|e| e.get("type"))),
    ];
    for (name, value) in fields {
        if let Some(value @ (Value::String(_) | Value::Number(_) | Value::Bool(_))) = value {
            identity.push(' ');
            identity.push_str(name);
            identity.push('=');
            identity.push_str(&json(value));
        }
    }
    identity
}

#[cfg(test)]
mod tests {
    use super::*;

    const JSON: Option<&str> = Some("application/json; charset=utf-8");
    const FORM: Option<&str> = Some("application/x-www-form-urlencoded");

    fn same(content_type: Option<&str>, a: &str, b: &str) -> bool {
        body(content_type, a.as_bytes()) == body(content_type, b.as_bytes())
    }

    #[test]
    fn json_bodies_that_mean_the_same() {
        for (a, b) in [
            (r#"{"a":1,"b":2}"#, r#"{ "b" : 2, "a" : 1 }"#),
            (
                r#"{"a":{"y":1,"x":[1,2]}}"#,
                "{\n  \"a\": {\"x\": [1, 2], \"y\": 1}\n}",
            ),
            (r#"{"n":1}"#, r#"{"n":1.0}"#),
            (r#"{"n":1}"#, r#"{"n":1e0}"#),
            (r#"{"n":1}"#, r#"{"n":10e-1}"#),
            (r#"{"n":0}"#, r#"{"n":-0.0}"#),
            (r#"{"n":0.5}"#, r#"{"n":5e-1}"#),
            (r#"{"s":"A"}"#, r#"{"s":"\u0041"}"#),
            (r#"{"a":1,"a":2}"#, r#"{"a":2}"#),
        ] {
            assert!(same(JSON, a, b), "{a} ~ {b}");
        }
        assert_eq!(
            body(JSON, br#"{ "b": [true, null], "a": 1.50 }"#).as_ref(),
            br#"{"a":1.5,"b":[true,null]}"#
        );
        assert!(same(
            Some("application/problem+json"),
            r#"{"a":1, "b":2}"#,
            r#"{"b":2,"a":1}"#
        ));
    }

    #[test]
    fn json_bodies_that_differ() {
        for (a, b) in [
            (r#"{"a":1}"#, r#"{"a":2}"#),
            (r#"{"a":1}"#, r#"{"a":"1"}"#),
            (r#"[1,2]"#, r#"[2,1]"#),
            (r#"{"a":1}"#, r#"{"A":1}"#),
            (r#"{"s":"a "}"#, r#"{"s":"a"}"#),
            // Ids past 2^53 stay exact.
            (r#"{"id":9007199254740993}"#, r#"{"id":9007199254740992}"#),
        ] {
            assert!(!same(JSON, a, b), "{a} !~ {b}");
        }
    }

    #[test]
    fn other_bodies_are_kept_as_they_are() {
        // Not JSON after all, or not said to be: bytes as sent.
        assert_eq!(body(JSON, b"{not json").as_ref(), b"{not json");
        assert!(!same(None, r#"{"a":1,"b":2}"#, r#"{"b":2,"a":1}"#));
        assert!(!same(Some("text/plain"), "a=1&b=2", "b=2&a=1"));
        assert_eq!(
            body(Some("application/octet-stream"), b"\x00\xff").as_ref(),
            b"\x00\xff"
        );
    }

    #[test]
    fn form_bodies_by_parameter() {
        assert!(same(FORM, "a=1&b=2", "b=2&a=1"));
        assert!(same(FORM, "q=a+b&x=%41", "x=A&q=a%20b"));
        assert!(same(FORM, "a=1&&b=2", "b=2&a=1"));
        assert!(same(
            Some("Application/X-WWW-Form-Urlencoded; charset=UTF-8"),
            "b=1&a=2",
            "a=2&b=1"
        ));
        // A repeated name is a list: its order is kept.
        assert!(same(FORM, "a=1&b=0&a=2", "b=0&a=1&a=2"));
        assert!(!same(FORM, "a=1&a=2", "a=2&a=1"));
        assert!(!same(FORM, "a=1", "a=2"));
    }

    #[test]
    fn query_strings_by_parameter() {
        assert_eq!(url("https://h/p?b=2&a=1"), url("https://h/p?a=1&b=2#frag"));
        assert_eq!(url("https://h/p?b=%41&a=x+y"), "https://h/p?a=x+y&b=A");
        assert_eq!(url("https://h/p"), "https://h/p");
        assert_eq!(url("https://h/p#f"), "https://h/p");
        assert_ne!(url("https://h/p?a=1&a=2"), url("https://h/p?a=2&a=1"));
        assert_ne!(url("https://h/a?x=1"), url("https://h/b?x=1"));
    }

    #[test]
    fn errors_by_status_and_the_fields_that_name_them() {
        let id = |status, body: &str| error_identity(status, body.as_bytes());
        assert_eq!(id(503, ""), "503");
        assert_eq!(id(400, "<html>bad</html>"), "400");
        assert_eq!(id(400, r#"{"message":"nope"}"#), "400");
        assert_eq!(
            id(
                400,
                r#"{"error":"invalid_grant","error_description":"expired at 12:01"}"#
            ),
            r#"400 error="invalid_grant""#
        );
        assert_eq!(
            id(
                429,
                r#"{"error":{"message":"Rate limit","type":"requests","code":"rate_limit_exceeded"}}"#
            ),
            r#"429 error.code="rate_limit_exceeded" error.type="requests""#
        );
        assert_eq!(
            id(
                402,
                r#"{"error":{"code":"card_declined","type":"card_error","decline_code":"x"}}"#
            ),
            r#"402 error.code="card_declined" error.type="card_error""#
        );
        assert_eq!(
            id(422, r#"{"code":1001,"type":"validation"}"#),
            r#"422 code=1001 type="validation""#
        );
        // The message changes, the error does not.
        assert_eq!(
            id(400, r#"{"code":"bad","message":"request r-1"}"#),
            id(400, r#"{"message":"request r-2","code":"bad"}"#)
        );
        // Three different errors on one URL are three.
        let three = [
            id(400, r#"{"code":"a"}"#),
            id(400, r#"{"code":"b"}"#),
            id(409, r#"{"code":"a"}"#),
        ];
        assert!(three[0] != three[1] && three[1] != three[2] && three[0] != three[2]);
    }
}
