//! Rate-limit header fields on any answer, success included: the requests
//! left and the time until the quota resets (for `--rate auto`), and so,
//! when none is left, how long until it resets. Reads the IETF draft
//! (`RateLimit: "name";r=0;t=30`, and the older `limit=10, remaining=0,
//! reset=30`), `RateLimit-Remaining`/`RateLimit-Reset`, and the common
//! `X-RateLimit-Remaining`/`X-RateLimit-Reset` (an epoch timestamp when the
//! value is large, else seconds). Malformed values are ignored.

use std::cmp::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::rules::delay::MAX_SERVER_DELAY;
use crate::rules::pace::Quota;

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
    quota(headers, now).and_then(exhausted)
}

/// How long until a used-up quota resets; `None` while some is left.
pub fn exhausted(quota: Quota) -> Option<Duration> {
    (quota.remaining == 0).then(|| quota.reset.min(MAX_SERVER_DELAY))
}

/// The server's word on its quota, on any answer: the requests left and
/// the time until it resets. Of several (policies of one field, or fields
/// of several styles) the tightest counts: the fewest requests per second
/// left, and of used-up ones the longest reset.
pub fn quota<'a>(
    headers: impl IntoIterator<Item = (&'a str, &'a str)> + Clone,
    now: SystemTime,
) -> Option<Quota> {
    let find = |name: &str| {
        headers
            .clone()
            .into_iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
    };
    let pair = |remaining: &str, reset: &str| {
        let remaining: u64 = find(remaining)?.parse().ok()?;
        let reset = reset_after(find(reset)?, now)?;
        Some(Quota { remaining, reset })
    };
    find("ratelimit")
        .map(|v| draft_field(v, now))
        .unwrap_or_default()
        .into_iter()
        .chain(pair("ratelimit-remaining", "ratelimit-reset"))
        .chain(pair("x-ratelimit-remaining", "x-ratelimit-reset"))
        .min_by(tighter)
}

/// Orders quotas tightest first.
fn tighter(a: &Quota, b: &Quota) -> Ordering {
    let left = |q: &Quota| match q.remaining {
        0 => 0.0,
        _ if q.reset.is_zero() => f64::INFINITY,
        r => r as f64 / q.reset.as_secs_f64(),
    };
    left(a)
        .total_cmp(&left(b))
        .then_with(|| b.reset.cmp(&a.reset))
}

/// `"name";r=0;t=30` items (comma-separated policies), or the older
/// `limit=10, remaining=0, reset=30` dictionary.
fn draft_field(value: &str, now: SystemTime) -> Vec<Quota> {
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
                Some(Quota {
                    remaining: get(&ps, &["r"])?,
                    reset: Duration::from_secs(get(&ps, &["t"])?),
                })
            })
            .collect()
    } else {
        let ps: Vec<(String, String)> = value.split(',').flat_map(params).collect();
        let quota = || {
            Some(Quota {
                remaining: get(&ps, &["remaining", "r"])?,
                reset: ps
                    .iter()
                    .find(|(k, _)| k == "reset" || k == "t")
                    .and_then(|(_, v)| reset_after(v, now))?,
            })
        };
        quota().into_iter().collect()
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

    #[test]
    fn the_tightest_quota_counts() {
        let q = |remaining, reset| {
            Some(Quota {
                remaining,
                reset: Duration::from_secs(reset),
            })
        };
        let rows: &[(Headers, Option<Quota>)] = &[
            (&[("RateLimit", "\"lab\";r=3;t=30")], q(3, 30)),
            // 5 in 1 s is looser than 10 in 60 s.
            (
                &[("RateLimit", "\"a\";r=5;t=1, \"b\";r=10;t=60")],
                q(10, 60),
            ),
            (
                &[("RateLimit-Remaining", "9"), ("RateLimit-Reset", "3")],
                q(9, 3),
            ),
            (
                &[
                    ("RateLimit", "limit=10, remaining=4, reset=2"),
                    ("X-RateLimit-Remaining", "1"),
                    ("X-RateLimit-Reset", "2"),
                ],
                q(1, 2),
            ),
            (&[("RateLimit", "garbage")], None),
        ];
        for (headers, expected) in rows {
            assert_eq!(
                quota(headers.iter().copied(), now()),
                *expected,
                "{headers:?}"
            );
        }
    }
}
