//! How long to wait: the server's own delay (`retry-after-ms`, `Retry-After`
//! in both RFC 9110 forms), the floor, upward-only jitter, and full-jitter
//! exponential backoff when the server gave no delay.
//!
//! Everything here is pure: the current wall-clock time and the random draw
//! are arguments, so every rule is a row in a table-driven test.

use std::time::{Duration, SystemTime};

/// Server delays beyond this are treated as this long. Ten years is far past
/// any budget, so such a delay always ends the run, and it keeps
/// `now + delay` representable on every platform.
pub const MAX_SERVER_DELAY: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// Jitter never adds more than this, however long the server's delay.
const JITTER_CAP: Duration = Duration::from_secs(2);

/// Where a server-given delay came from; shown in `-v` and the outcome reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DelaySource {
    RetryAfterMs,
    RetryAfterSeconds,
    RetryAfterDate,
}

impl DelaySource {
    pub fn header(self) -> &'static str {
        match self {
            DelaySource::RetryAfterMs => "retry-after-ms",
            DelaySource::RetryAfterSeconds | DelaySource::RetryAfterDate => "Retry-After",
        }
    }
}

/// A delay the server asked for, before the floor and jitter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerDelay {
    pub delay: Duration,
    pub source: DelaySource,
}

/// What the response headers say about waiting: the delay, if any was valid,
/// and the values that were present but unusable (for the outcome's reason).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DelayHeaders {
    pub delay: Option<ServerDelay>,
    pub ignored: Vec<String>,
}

/// Reads the server's delay from response headers (names compared
/// case-insensitively). Every valid value counts and the longest wins, so
/// that no header, duplicate or list member (`Retry-After: 3, 5`, as a proxy
/// joins two headers) ever makes the retry early. An HTTP-date is measured
/// against the answer's own `Date` (the server's clock) when it has one, so
/// that a server whose clock differs from this machine's is still honoured;
/// `now` (this machine's clock) stands in for a missing or invalid `Date`.
pub fn server_delay<'a>(
    headers: impl IntoIterator<Item = (&'a str, &'a str)>,
    now: SystemTime,
) -> DelayHeaders {
    let headers: Vec<(&str, &str)> = headers.into_iter().collect();
    let server_now = headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("date"))
        .find_map(|(_, value)| httpdate::parse_http_date(value.trim()).ok())
        .unwrap_or(now);
    let mut result = DelayHeaders::default();
    for (name, value) in headers {
        let (header, members) = if name.eq_ignore_ascii_case("retry-after-ms") {
            ("retry-after-ms", milliseconds_members(value))
        } else if name.eq_ignore_ascii_case("retry-after") {
            ("Retry-After", retry_after_members(value, server_now))
        } else {
            continue;
        };
        for member in members {
            match member {
                Ok(d) if result.delay.is_none_or(|r| d.delay > r.delay) => result.delay = Some(d),
                Ok(_) => {}
                Err(bad) => result.ignored.push(format!("{header}: {}", clip(bad))),
            }
        }
    }
    result
}

/// The members of a `retry-after-ms` value: decimal milliseconds.
fn milliseconds_members(value: &str) -> Vec<Result<ServerDelay, &str>> {
    value
        .split(',')
        .map(|member| {
            parse_seconds(member, 0.001)
                .map(|delay| ServerDelay {
                    delay,
                    source: DelaySource::RetryAfterMs,
                })
                .ok_or(member.trim())
        })
        .collect()
}

/// The members of a `Retry-After` value. A single value is the usual case;
/// a list comes from a proxy joining headers, and since an HTTP-date holds a
/// comma itself (`Mon, 30 Nov …`), a member that is not a number is tried
/// together with the next piece before it is called invalid.
fn retry_after_members(value: &str, now: SystemTime) -> Vec<Result<ServerDelay, &str>> {
    if let Some(whole) = parse_retry_after(value, now) {
        return vec![Ok(whole)];
    }
    let pieces: Vec<&str> = value.split(',').collect();
    let mut members = Vec::new();
    let mut i = 0;
    while i < pieces.len() {
        let piece = pieces[i];
        if let Some(d) = parse_retry_after(piece, now) {
            members.push(Ok(d));
            i += 1;
            continue;
        }
        let joined = pieces.get(i + 1).map(|next| format!("{piece},{next}"));
        match joined.and_then(|j| parse_retry_after(&j, now)) {
            Some(d) => {
                members.push(Ok(d));
                i += 2;
            }
            None => {
                members.push(Err(piece.trim()));
                i += 1;
            }
        }
    }
    members
}

/// One `Retry-After` value: delta-seconds or an HTTP-date. Negative numbers
/// and dates in the past mean "now" (the floor applies later). Fractional
/// seconds are accepted although RFC 9110 only allows integers: waiting the
/// fraction is never earlier than the server meant.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<ServerDelay> {
    if let Some(delay) = parse_seconds(value, 1.0) {
        return Some(ServerDelay {
            delay,
            source: DelaySource::RetryAfterSeconds,
        });
    }
    let date = httpdate::parse_http_date(value.trim()).ok()?;
    let delay = date.duration_since(now).unwrap_or(Duration::ZERO);
    Some(ServerDelay {
        delay: delay.min(MAX_SERVER_DELAY),
        source: DelaySource::RetryAfterDate,
    })
}

/// A decimal number (optionally negative) times `unit` seconds; huge values
/// saturate at [`MAX_SERVER_DELAY`] instead of overflowing.
fn parse_seconds(value: &str, unit: f64) -> Option<Duration> {
    let value = value.trim();
    let digits = value.strip_prefix('-').unwrap_or(value);
    let well_formed = !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit() || c == '.')
        && digits.chars().filter(|&c| c == '.').count() <= 1
        && digits.chars().any(|c| c.is_ascii_digit());
    if !well_formed {
        return None;
    }
    let seconds = value.parse::<f64>().ok()? * unit;
    if seconds <= 0.0 {
        return Some(Duration::ZERO);
    }
    Some(Duration::try_from_secs_f64(seconds).map_or(MAX_SERVER_DELAY, |d| d.min(MAX_SERVER_DELAY)))
}

fn clip(value: &str) -> String {
    value.chars().take(64).collect()
}

/// The least wait that honours the server: its delay, raised to the floor.
pub fn honoured(delay: Duration, floor: Duration) -> Duration {
    delay.max(floor)
}

/// Upward-only jitter on a server-given wait: `unit` in `[0, 1)` scales
/// `min(fraction × wait, 2 s)`. The jitter is taken on the floored wait so
/// that a herd told `Retry-After: 0` still arrives spread out.
pub fn jitter(wait: Duration, fraction: f64, unit: f64) -> Duration {
    if fraction <= 0.0 {
        return Duration::ZERO;
    }
    let span = wait.mul_f64(fraction.min(1.0)).min(JITTER_CAP);
    span.mul_f64(unit.clamp(0.0, 1.0))
}

/// Full-jitter exponential backoff for retry `n` (1, 2, …):
/// `uniform(0, ceiling(n, base, max))`, with `unit` the uniform draw.
pub fn backoff(n: u32, base: Duration, max: Duration, unit: f64) -> Duration {
    ceiling(n, base, max).mul_f64(unit.clamp(0.0, 1.0))
}

/// The longest backoff of retry `n` (1, 2, …): `min(max, base × 2^(n-1))`.
/// The same for every `n` from `CEILING_STEADY` on.
pub fn ceiling(n: u32, base: Duration, max: Duration) -> Duration {
    let exp = n.saturating_sub(1).min(CEILING_STEADY - 1);
    base.checked_mul(1u32.checked_shl(exp).unwrap_or(u32::MAX))
        .unwrap_or(max)
        .min(max)
}

/// From this retry on, `ceiling` no longer grows, whatever its arguments.
pub const CEILING_STEADY: u32 = 63;

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> SystemTime {
        httpdate::parse_http_date("Mon, 30 Nov 2026 10:00:00 GMT").unwrap()
    }

    type Headers<'a> = &'a [(&'a str, &'a str)];

    fn delay_of(headers: Headers) -> Option<(u128, DelaySource)> {
        server_delay(headers.iter().copied(), now())
            .delay
            .map(|d| (d.delay.as_millis(), d.source))
    }

    #[test]
    fn retry_after_forms() {
        use DelaySource::*;
        let rows: &[(Headers, Option<(u128, DelaySource)>)] = &[
            (&[("Retry-After", "3")], Some((3000, RetryAfterSeconds))),
            (
                &[("retry-after", " 120 ")],
                Some((120_000, RetryAfterSeconds)),
            ),
            (&[("Retry-After", "0")], Some((0, RetryAfterSeconds))),
            (&[("Retry-After", "-5")], Some((0, RetryAfterSeconds))),
            (&[("Retry-After", "1.5")], Some((1500, RetryAfterSeconds))),
            (
                &[("Retry-After", "Mon, 30 Nov 2026 10:00:30 GMT")],
                Some((30_000, RetryAfterDate)),
            ),
            // A date in the past means now; the floor applies later.
            (
                &[("Retry-After", "Sun, 29 Nov 2026 10:00:00 GMT")],
                Some((0, RetryAfterDate)),
            ),
            // The obsolete RFC 850 and asctime forms are HTTP-dates too.
            (
                &[("Retry-After", "Monday, 30-Nov-26 10:00:10 GMT")],
                Some((10_000, RetryAfterDate)),
            ),
            (
                &[("Retry-After", "Mon Nov 30 10:00:10 2026")],
                Some((10_000, RetryAfterDate)),
            ),
            // The longest of retry-after-ms and Retry-After, whatever the order.
            (
                &[("Retry-After", "3"), ("retry-after-ms", "1500")],
                Some((3000, RetryAfterSeconds)),
            ),
            (
                &[("retry-after-ms", "100"), ("Retry-After", "3")],
                Some((3000, RetryAfterSeconds)),
            ),
            (
                &[("Retry-After", "1"), ("retry-after-ms", "1500")],
                Some((1500, RetryAfterMs)),
            ),
            // A list, as a proxy joins two headers: the longest member.
            (&[("Retry-After", "3, 5")], Some((5000, RetryAfterSeconds))),
            (&[("Retry-After", "5,3")], Some((5000, RetryAfterSeconds))),
            (&[("Retry-After", "x, 4")], Some((4000, RetryAfterSeconds))),
            (&[("retry-after-ms", "200, 900")], Some((900, RetryAfterMs))),
            (
                &[(
                    "Retry-After",
                    "Mon, 30 Nov 2026 10:00:30 GMT, Mon, 30 Nov 2026 10:00:10 GMT",
                )],
                Some((30_000, RetryAfterDate)),
            ),
            (
                &[("Retry-After", "2, Mon, 30 Nov 2026 10:00:07 GMT")],
                Some((7000, RetryAfterDate)),
            ),
            // An HTTP-date counts from the answer's own Date: this server's
            // clock is 30 s behind ours, and it asks for its now + 3 s.
            (
                &[
                    ("Date", "Mon, 30 Nov 2026 09:59:30 GMT"),
                    ("Retry-After", "Mon, 30 Nov 2026 09:59:33 GMT"),
                ],
                Some((3000, RetryAfterDate)),
            ),
            // … and this one's is 30 s ahead, in either order of headers.
            (
                &[
                    ("Retry-After", "Mon, 30 Nov 2026 10:00:33 GMT"),
                    ("date", "Mon, 30 Nov 2026 10:00:30 GMT"),
                ],
                Some((3000, RetryAfterDate)),
            ),
            // A Date that is not a date leaves this machine's clock.
            (
                &[
                    ("Date", "yesterday"),
                    ("Retry-After", "Mon, 30 Nov 2026 10:00:05 GMT"),
                ],
                Some((5000, RetryAfterDate)),
            ),
            // Date does not touch delta-seconds.
            (
                &[
                    ("Date", "Mon, 30 Nov 2026 09:00:00 GMT"),
                    ("Retry-After", "4"),
                ],
                Some((4000, RetryAfterSeconds)),
            ),
            (&[("retry-after-ms", "250.5")], Some((250, RetryAfterMs))),
            // An invalid retry-after-ms falls back to Retry-After.
            (
                &[("retry-after-ms", "soon"), ("Retry-After", "2")],
                Some((2000, RetryAfterSeconds)),
            ),
            // Duplicates: the longest valid value, so we are never early.
            (
                &[
                    ("Retry-After", "2"),
                    ("Retry-After", "7"),
                    ("Retry-After", "x"),
                ],
                Some((7000, RetryAfterSeconds)),
            ),
            (&[("Retry-After", "")], None),
            (&[("Retry-After", "soon")], None),
            (&[("Retry-After", "1e3")], None),
            (&[("Retry-After", "1.2.3")], None),
            (&[("Retry-After", "-")], None),
            (&[("Retry-After", ".")], None),
            (&[("Retry-After", "30 Nov 2026")], None),
            (&[("Content-Type", "text/plain")], None),
        ];
        for (headers, expected) in rows {
            assert_eq!(delay_of(headers), *expected, "{headers:?}");
        }
    }

    #[test]
    fn huge_values_saturate_instead_of_overflowing() {
        for value in [
            "99999999999999999999",
            "1".repeat(400).as_str(),
            "18446744073709551616",
        ] {
            let d = parse_retry_after(value, now()).unwrap();
            assert_eq!(d.delay, MAX_SERVER_DELAY, "{value}");
        }
        assert!(now().checked_add(MAX_SERVER_DELAY).is_some());
    }

    #[test]
    fn invalid_values_are_reported() {
        let h = server_delay([("Retry-After", "soon"), ("retry-after-ms", "-")], now());
        assert_eq!(h.delay, None);
        assert_eq!(h.ignored, vec!["Retry-After: soon", "retry-after-ms: -"]);
        // A bad member of a list is reported; the good ones still count.
        let h = server_delay([("Retry-After", "soon, 4")], now());
        assert_eq!(h.delay.map(|d| d.delay), Some(Duration::from_secs(4)));
        assert_eq!(h.ignored, vec!["Retry-After: soon"]);
    }

    #[test]
    fn floor() {
        let floor = Duration::from_secs(1);
        assert_eq!(honoured(Duration::ZERO, floor), floor);
        assert_eq!(honoured(Duration::from_millis(300), floor), floor);
        assert_eq!(
            honoured(Duration::from_secs(5), floor),
            Duration::from_secs(5)
        );
        assert_eq!(
            honoured(Duration::from_millis(300), Duration::ZERO).as_millis(),
            300
        );
    }

    #[test]
    fn jitter_only_adds_and_is_capped() {
        let s = Duration::from_secs;
        let rows = [
            (s(10), 0.1, 0.0, 0),
            (s(10), 0.1, 0.5, 500),
            (s(10), 0.1, 0.999_999, 999),
            (s(100), 0.1, 0.999_999, 1999), // capped at 2 s
            (s(100), 0.0, 0.9, 0),          // 0 turns it off
            (s(1), 5.0, 0.5, 500),          // fractions above 1 act as 1
            (Duration::ZERO, 0.1, 0.9, 0),
        ];
        for (wait, fraction, unit, ms) in rows {
            assert_eq!(
                jitter(wait, fraction, unit).as_millis(),
                ms,
                "{wait:?} {fraction} {unit}"
            );
        }
    }

    #[test]
    fn backoff_is_full_jitter_exponential_and_capped() {
        let ms = Duration::from_millis;
        let (base, max) = (ms(500), ms(8000));
        let rows = [
            (1, 1.0, 500),
            (2, 1.0, 1000),
            (3, 1.0, 2000),
            (5, 1.0, 8000),
            (6, 1.0, 8000),
            (40, 1.0, 8000),
            (u32::MAX, 1.0, 8000),
            (3, 0.5, 1000),
            (3, 0.0, 0),
        ];
        for (n, unit, expected) in rows {
            assert_eq!(
                backoff(n, base, max, unit).as_millis(),
                expected,
                "retry {n}"
            );
        }
    }
}
