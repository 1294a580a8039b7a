//! Resuming a body that broke off: whether an answer may be continued with
//! a range request, and whether the answer to that request continues the
//! bytes already held. Pure: headers in, decisions out.

/// Where to continue a body: `Range: bytes=OFFSET-` with `If-Range`, so that
/// a changed file comes back whole (200) instead of as a mismatched piece.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct From {
    pub offset: u64,
    /// A strong ETag, else a Last-Modified date; none for `-C -`, whose
    /// file has no known version (as curl and wget, it is trusted).
    pub if_range: Option<String>,
}

impl From {
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        let range = ("Range", format!("bytes={}-", self.offset));
        let if_range = self.if_range.clone().map(|v| ("If-Range", v));
        std::iter::once(range).chain(if_range).collect()
    }
}

/// The validator that lets a body broken off after some bytes be continued:
/// the answer says it serves byte ranges and names its version. A weak ETag
/// cannot be used with If-Range (RFC 9110 §13.1.5); an encoded body is
/// decoded as one stream, which cannot be picked up in the middle.
pub fn validator<'a>(
    headers: impl Iterator<Item = (&'a str, &'a str)> + Clone,
    decoded: bool,
) -> Option<String> {
    let get = |name: &str| {
        headers
            .clone()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
    };
    let ranges = get("accept-ranges").is_some_and(|v| {
        v.split(',')
            .any(|unit| unit.trim().eq_ignore_ascii_case("bytes"))
    }) || get("content-range").is_some();
    if !ranges || decoded {
        return None;
    }
    let strong_etag = get("etag").filter(|tag| tag.starts_with('"') && tag.len() >= 2);
    strong_etag
        .or_else(|| get("last-modified").filter(|date| httpdate::parse_http_date(date).is_ok()))
        .map(str::to_string)
}

/// A 416 to a range asked from the end of the bytes held that names their
/// length as the whole (`Content-Range: bytes */N`): the body is whole
/// already, as when `-C -` meets a complete file.
pub fn already_whole(status: u16, content_range: Option<&str>, held: u64) -> bool {
    let total = content_range
        .and_then(|v| v.trim().strip_prefix("bytes */"))
        .and_then(|n| n.trim().parse::<u64>().ok());
    status == 416 && held > 0 && total == Some(held)
}

/// A `Content-Range: bytes FIRST-LAST/TOTAL` (TOTAL may be `*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContentRange {
    pub first: u64,
    pub last: u64,
    pub total: Option<u64>,
}

pub fn content_range(value: &str) -> Option<ContentRange> {
    let rest = value.trim().strip_prefix("bytes ")?;
    let (span, total) = rest.split_once('/')?;
    let (first, last) = span.split_once('-')?;
    let (first, last) = (first.trim().parse().ok()?, last.trim().parse().ok()?);
    let total = match total.trim() {
        "*" => None,
        n => Some(n.parse().ok()?),
    };
    (first <= last && total.is_none_or(|t| last < t)).then_some(ContentRange { first, last, total })
}

/// What a 2xx answer to an attempt means for the bytes already held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Continuation {
    /// No bytes were held: the body starts here.
    Fresh,
    /// A 206 that starts exactly where the held bytes end: append.
    Continues,
    /// A whole body (the server ignored the range, or the file changed):
    /// what is held must be thrown away first.
    StartsOver,
    /// A 206 that does not start where the held bytes end: never appended.
    Mismatch,
}

pub fn continuation(status: u16, range: Option<ContentRange>, held: u64) -> Continuation {
    match (status, range) {
        (206, Some(r)) if held > 0 && r.first == held => Continuation::Continues,
        _ if held == 0 => Continuation::Fresh,
        (206, _) => Continuation::Mismatch,
        _ => Continuation::StartsOver,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(headers: &[(&'static str, &'static str)]) -> Option<String> {
        validator(headers.iter().copied(), false)
    }

    #[test]
    fn a_validator_needs_ranges_and_a_version() {
        let etag = ("ETag", "\"v1\"");
        let ranges = ("Accept-Ranges", "bytes");
        let date = ("Last-Modified", "Mon, 30 Nov 2026 10:00:00 GMT");
        assert_eq!(v(&[ranges, etag]).as_deref(), Some("\"v1\""));
        assert_eq!(v(&[ranges, etag, date]).as_deref(), Some("\"v1\""));
        assert_eq!(v(&[ranges, date]).as_deref(), Some(date.1));
        assert_eq!(
            v(&[("accept-ranges", "none, Bytes"), etag]).as_deref(),
            Some("\"v1\"")
        );
        // A 206 says it serves ranges by being one.
        assert_eq!(
            v(&[("Content-Range", "bytes 5-9/10"), etag]).as_deref(),
            Some("\"v1\"")
        );
        assert_eq!(v(&[etag]), None);
        assert_eq!(v(&[("Accept-Ranges", "none"), etag]), None);
        assert_eq!(v(&[ranges]), None);
        // Weak ETags are never used with If-Range; a bad date is no date.
        assert_eq!(v(&[ranges, ("ETag", "W/\"v1\"")]), None);
        assert_eq!(
            v(&[ranges, ("ETag", "W/\"v1\""), date]).as_deref(),
            Some(date.1)
        );
        assert_eq!(v(&[ranges, ("Last-Modified", "yesterday")]), None);
        assert_eq!(validator([ranges, etag].into_iter(), true), None);
    }

    #[test]
    fn content_ranges() {
        let r = |first, last, total| Some(ContentRange { first, last, total });
        assert_eq!(content_range("bytes 100-199/200"), r(100, 199, Some(200)));
        assert_eq!(content_range(" bytes 0-0/*"), r(0, 0, None));
        for bad in [
            "bytes 5-4/10",
            "bytes 5-10/10",
            "items 0-1/2",
            "bytes */10",
            "bytes 1-2",
        ] {
            assert_eq!(content_range(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_416_at_the_end_means_whole() {
        assert!(already_whole(416, Some("bytes */100"), 100));
        assert!(!already_whole(416, Some("bytes */101"), 100));
        assert!(!already_whole(416, None, 100));
        assert!(!already_whole(416, Some("bytes */0"), 0));
        assert!(!already_whole(200, Some("bytes */100"), 100));
    }

    #[test]
    fn continuations() {
        use Continuation::*;
        let at = |first| {
            Some(ContentRange {
                first,
                last: 99,
                total: Some(100),
            })
        };
        let rows = [
            (200, None, 0, Fresh),
            (204, None, 0, Fresh),
            (200, None, 40, StartsOver),
            (206, at(40), 40, Continues),
            (206, at(39), 40, Mismatch),
            (206, at(41), 40, Mismatch),
            (206, None, 40, Mismatch),
            (206, at(0), 0, Fresh),
        ];
        for (status, range, held, expected) in rows {
            assert_eq!(
                continuation(status, range, held),
                expected,
                "{status} {range:?} {held}"
            );
        }
    }
}
