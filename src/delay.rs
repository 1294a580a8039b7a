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
/// case-insensitively). `retry-after-ms` wins when valid; otherwise the
/// longest valid `Retry-After` (a duplicated header never makes us early).
pub fn server_delay<'a>(
    headers: impl IntoIterator<Item = (&'a str, &'a str)>,
    now: SystemTime,
) -> DelayHeaders {
    let mut result = DelayHeaders::default();
    let mut from_ms: Option<Duration> = None;
    let mut from_ra: Option<ServerDelay> = None;
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("retry-after-ms") {
            match parse_seconds(value, 0.001) {
                Some(d) => from_ms = Some(from_ms.map_or(d, |m| m.max(d))),
                None => result
                    .ignored
                    .push(format!("retry-after-ms: {}", clip(value))),
            }
        } else if name.eq_ignore_ascii_case("retry-after") {
            match parse_retry_after(value, now) {
                Some(d) if from_ra.is_none_or(|r| d.delay > r.delay) => from_ra = Some(d),
                Some(_) => {}
                None => result.ignored.push(format!("Retry-After: {}", clip(value))),
            }
        }
    }
    result.delay = from_ms
        .map(|delay| ServerDelay {
            delay,
            source: DelaySource::RetryAfterMs,
        })
        .or(from_ra);
    result
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
/// `uniform(0, min(max, base × 2^(n-1)))`, with `unit` the uniform draw.
pub fn backoff(n: u32, base: Duration, max: Duration, unit: f64) -> Duration {
    let exp = n.saturating_sub(1).min(62);
    let ceiling = base
        .checked_mul(1u32.checked_shl(exp).unwrap_or(u32::MAX))
        .unwrap_or(max)
        .min(max);
    ceiling.mul_f64(unit.clamp(0.0, 1.0))
}

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
            // retry-after-ms wins over Retry-After, whatever the order.
            (
                &[("Retry-After", "3"), ("retry-after-ms", "1500")],
                Some((1500, RetryAfterMs)),
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
