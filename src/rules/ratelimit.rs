//! Rate-limit header fields on any answer, success included: when the
//! remaining quota is 0, how long until it resets. Reads the IETF draft
//! (`RateLimit: "name";r=0;t=30`, and the older `limit=10, remaining=0,
//! reset=30`), `RateLimit-Remaining`/`RateLimit-Reset`, and the common
//! `X-RateLimit-Remaining`/`X-RateLimit-Reset` (an epoch timestamp when the
//! value is large, else seconds). Malformed values are ignored.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::rules::delay::MAX_SERVER_DELAY;

/// Reset values above this are epoch seconds, not a number of seconds to wait
/// (a billion seconds is 31 years).
const EPOCH_SECONDS: u64 = 1_000_000_000;
/// And above this, epoch milliseconds.
const EPOCH_MILLIS: u64 = 100_000_000_000;

/// How long until the quota resets, when the server says none is left.
pub fn exhausted_for<'a>(
    headers: impl IntoIterator<Item = (&'a str, &'a str)> + Clone,
    now: SystemTime,
) -> Option<Duration> {
    let find = |name: &str| {
        headers
            .clone()
            .into_iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
    };
    let draft = find("ratelimit").and_then(|v| draft_field(v, now));
    let pair = |remaining: &str, reset: &str| {
        let remaining: u64 = find(remaining)?.parse().ok()?;
        let reset = reset_after(find(reset)?, now)?;
        (remaining == 0).then_some(reset)
    };
    draft
        .or_else(|| pair("ratelimit-remaining", "ratelimit-reset"))
        .or_else(|| pair("x-ratelimit-remaining", "x-ratelimit-reset"))
        .map(|d| d.min(MAX_SERVER_DELAY))
}

/// `"name";r=0;t=30` items (comma-separated policies: the longest exhausted
/// one counts), or the older `limit=10, remaining=0, reset=30` dictionary.
fn draft_field(value: &str, now: SystemTime) -> Option<Duration> {
    let params = |item: &str| -> Vec<(String, String)> {
        item.split(';')
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| {
                (
                    k.trim().to_ascii_lowercase(),
                    v.trim().trim_matches('"').to_string(),
                )
            })
            .collect()
    };
    let get = |ps: &[(String, String)], keys: &[&str]| {
        ps.iter()
            .find(|(k, _)| keys.contains(&k.as_str()))
            .and_then(|(_, v)| v.parse::<u64>().ok())
    };
    if value.contains(';') {
        value
            .split(',')
            .filter_map(|item| {
                let ps = params(item);
                let r = get(&ps, &["r"])?;
                let t = get(&ps, &["t"])?;
                (r == 0).then(|| Duration::from_secs(t))
            })
            .max()
    } else {
        let ps: Vec<(String, String)> = value.split(',').flat_map(params).collect();
        let remaining = get(&ps, &["remaining", "r"])?;
        let reset = ps
            .iter()
            .find(|(k, _)| k == "reset" || k == "t")
            .and_then(|(_, v)| reset_after(v, now))?;
        (remaining == 0).then_some(reset)
    }
}

/// A reset value: seconds to wait, or an epoch timestamp (seconds or
/// milliseconds) when large.
fn reset_after(value: &str, now: SystemTime) -> Option<Duration> {
    let n: u64 = value.trim().parse().ok()?;
    let at = match n {
        n if n >= EPOCH_MILLIS => UNIX_EPOCH + Duration::from_millis(n),
        n if n >= EPOCH_SECONDS => UNIX_EPOCH + Duration::from_secs(n),
        n => return Some(Duration::from_secs(n)),
    };
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_800_000_000)
    }

    type Headers<'a> = &'a [(&'a str, &'a str)];

    #[test]
    fn header_styles() {
        let rows: &[(Headers, Option<u64>)] = &[
            (&[("RateLimit", "\"lab\";r=0;t=30")], Some(30)),
            (&[("RateLimit", "\"lab\";r=3;t=30")], None),
            (&[("RateLimit", "\"a\";r=5;t=1, \"b\";r=0;t=60")], Some(60)),
            (
                &[("RateLimit", "limit=10, remaining=0, reset=12")],
                Some(12),
            ),
            (&[("RateLimit", "limit=10, remaining=4, reset=12")], None),
            (
                &[("RateLimit-Remaining", "0"), ("RateLimit-Reset", "7")],
                Some(7),
            ),
            (
                &[("RateLimit-Remaining", "1"), ("RateLimit-Reset", "7")],
                None,
            ),
            (
                &[
                    ("X-RateLimit-Remaining", "0"),
                    ("X-RateLimit-Reset", "1800000045"),
                ],
                Some(45),
            ),
            (
                &[
                    ("x-ratelimit-remaining", "0"),
                    ("x-ratelimit-reset", "1800000002500"),
                ],
                Some(2),
            ),
            (
                &[("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "20")],
                Some(20),
            ),
            // A reset in the past: nothing to wait for.
            (
                &[
                    ("X-RateLimit-Remaining", "0"),
                    ("X-RateLimit-Reset", "1700000000"),
                ],
                Some(0),
            ),
            // Malformed values are ignored.
            (&[("RateLimit", "\"lab\";r=zero;t=30")], None),
            (&[("RateLimit", "garbage")], None),
            (
                &[("X-RateLimit-Remaining", "-1"), ("X-RateLimit-Reset", "5")],
                None,
            ),
            (
                &[
                    ("X-RateLimit-Remaining", "0"),
                    ("X-RateLimit-Reset", "soon"),
                ],
                None,
            ),
            (&[("X-RateLimit-Remaining", "0")], None),
            (&[("RateLimit-Reset", "5")], None),
        ];
        for (headers, expected) in rows {
            let got = exhausted_for(headers.iter().copied(), now()).map(|d| d.as_secs());
            assert_eq!(got, *expected, "{headers:?}");
        }
    }
}
