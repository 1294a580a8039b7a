//! `--check URL`: the GET that settles a write whose effect is unknown. It
//! carries the request's headers and credentials, so it may only go to the
//! request's own origin; `{idempotency_key}` in it is replaced by the key
//! the write sent (known once a `--task` has given its kept key).

use crate::edge::http::{Body, Request};
use crate::plan::target::Target;

/// Where the key the write sent goes in the check URL.
pub const KEY_PLACEHOLDER: &str = "{idempotency_key}";

/// What a key keeps unencoded in the URL: RFC 3986's unreserved characters.
const KEY_ENCODED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Refuses a check URL that could not be used: not http(s), another origin
/// than the request's (its credentials would go there), or a key
/// placeholder for a request that sends no key.
pub fn validate(check: Option<&str>, target: &Target, keyed: bool) -> Result<(), String> {
    let Some(check) = check else {
        return Ok(());
    };
    if check.contains(KEY_PLACEHOLDER) && !keyed {
        return Err(format!(
            "--check uses {KEY_PLACEHOLDER}, but the request sends no Idempotency-Key (add --idempotency-key)"
        ));
    }
    let parsed =
        Target::parse(&check.replace(KEY_PLACEHOLDER, "k")).map_err(|e| format!("--check: {e}"))?;
    if parsed.userinfo.is_some() {
        return Err("--check takes the request's credentials; give it none of its own".into());
    }
    if parsed.origin != target.origin {
        return Err(format!(
            "--check must ask the request's own origin {} (it carries the request's credentials), not {}",
            target.origin, parsed.origin
        ));
    }
    Ok(())
}

/// The check request of `request` (the write): a GET of `check`, with the
/// key replaced, the write's headers but those of its body, and no body.
pub fn request(check: &str, request: &Request, key: Option<&str>) -> Request {
    let key = percent_encoding::utf8_percent_encode(key.unwrap_or_default(), KEY_ENCODED);
    let url = check.replace(KEY_PLACEHOLDER, &key.to_string());
    let url = Target::parse(&url).map_or(url, |t| t.url);
    let mut headers = request.headers.clone();
    headers.remove(ureq::http::header::CONTENT_TYPE);
    Request {
        method: "GET".into(),
        url,
        headers,
        body: Body::Empty,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_requests_own_origin_is_checked() {
        let target = Target::parse("https://api.example.com/orders").unwrap();
        let ok = |check| validate(Some(check), &target, true);
        assert_eq!(
            ok("https://api.example.com/orders/{idempotency_key}"),
            Ok(())
        );
        for bad in [
            "https://evil.example.com/orders",
            "http://api.example.com/orders",
            "https://u:p@api.example.com/orders",
            "ftp://api.example.com/x",
        ] {
            assert!(ok(bad).is_err(), "{bad}");
        }
        assert!(
            validate(
                Some("https://api.example.com/{idempotency_key}"),
                &target,
                false
            )
            .is_err()
        );
        assert_eq!(validate(None, &target, false), Ok(()));
    }

    #[test]
    fn the_check_is_a_get_with_the_key_and_the_credentials() {
        let write = Request {
            method: "POST".into(),
            url: "https://api.example.com/orders".into(),
            headers: [
                ("authorization", "Bearer t"),
                ("content-type", "application/json"),
                ("idempotency-key", "k-1"),
            ]
            .into_iter()
            .map(|(n, v)| (ureq::http::HeaderName::from_static(n), v.parse().unwrap()))
            .collect(),
            body: Body::Bytes(b"{}".to_vec()),
        };
        let check = request(
            "https://api.example.com/orders/{idempotency_key}",
            &write,
            Some("k-1"),
        );
        assert_eq!(check.method, "GET");
        assert_eq!(check.url, "https://api.example.com/orders/k-1");
        assert_eq!(check.body, Body::Empty);
        let names: Vec<&str> = check.headers.keys().map(|n| n.as_str()).collect();
        assert_eq!(names, ["authorization", "idempotency-key"]);
        let odd = request("https://h/o?key={idempotency_key}", &write, Some("a b/&c"));
        assert_eq!(odd.url, "https://h/o?key=a%20b%2F%26c");
    }
}
