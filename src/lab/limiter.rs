//! The lab's judgement, as pure bookkeeping: the per-client fixed-window
//! limiter and early-retry detection. Every function is handed the current
//! time, so the tests need no clock and no sleeping.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Retry-After values beyond this are treated as this: nobody waits longer
/// and `Instant` arithmetic stays far from overflow.
const LONGEST_WAIT: Duration = Duration::from_secs(365 * 24 * 3600);

/// Whole seconds, rounded up: a client told to wait must not come back early
/// because the server rounded down.
pub fn ceil_secs(duration: Duration) -> u64 {
    duration.as_secs() + u64::from(duration.subsec_nanos() > 0)
}

/// `limit` requests per client per `window`. A client's window starts at its
/// first request after its previous window ended (not on a shared clock), so
/// every client sees the same pattern however its requests are timed.
#[derive(Debug)]
pub struct Limiter {
    limit: u32,
    window: Duration,
    windows: HashMap<String, Window>,
}

#[derive(Debug)]
struct Window {
    start: Instant,
    used: u32,
}

/// The limiter's answer to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    pub allowed: bool,
    pub remaining: u32,
    /// Until the client's window reopens (or, for an early retry, until it may retry).
    pub reset: Duration,
}

impl Quota {
    /// The answer to a client that must wait `wait` whatever its window says.
    pub fn refused(wait: Duration) -> Quota {
        Quota {
            allowed: false,
            remaining: 0,
            reset: wait,
        }
    }

    /// At least 1: `Retry-After: 0` would invite an immediate retry that is refused again.
    pub fn retry_after_secs(&self) -> u64 {
        ceil_secs(self.reset).max(1)
    }

    /// The `RateLimit` field of the IETF rate-limit headers draft.
    pub fn field(&self) -> String {
        format!("\"lab\";r={};t={}", self.remaining, ceil_secs(self.reset))
    }
}

impl Limiter {
    pub fn new(limit: u32, window: Duration) -> Limiter {
        Limiter {
            limit,
            window,
            windows: HashMap::new(),
        }
    }

    /// Counts a request from `client` arriving at `now`, if there is room for it.
    pub fn admit(&mut self, client: &str, now: Instant) -> Quota {
        let window = self.windows.entry(client.to_owned()).or_insert(Window {
            start: now,
            used: 0,
        });
        // Saturating: concurrent connections may be judged slightly out of arrival order.
        let elapsed = now.saturating_duration_since(window.start);
        if elapsed >= self.window {
            *window = Window {
                start: now,
                used: 0,
            };
        }
        let allowed = window.used < self.limit;
        if allowed {
            window.used += 1;
        }
        Quota {
            allowed,
            remaining: self.limit - window.used,
            reset: self
                .window
                .saturating_sub(now.saturating_duration_since(window.start)),
        }
    }

    /// The `RateLimit-Policy` field. The draft wants whole seconds, so a
    /// sub-second window is rounded up.
    pub fn policy_field(&self) -> String {
        format!("\"lab\";q={};w={}", self.limit, ceil_secs(self.window))
    }
}

/// Remembers, per client, the moment it was told (by a Retry-After) it may
/// come back, and catches requests that arrive before it.
#[derive(Debug)]
pub struct EarlyRetries {
    /// Tolerance for the client's clock and the network: a retry up to this
    /// much before the moment is on time.
    skew: Duration,
    /// Per client: when it was told to wait, and until when.
    told: HashMap<String, (Instant, Instant)>,
}

impl EarlyRetries {
    pub fn new(skew: Duration) -> EarlyRetries {
        EarlyRetries {
            skew,
            told: HashMap::new(),
        }
    }

    /// How early `client`'s request arriving at `now` is, relative to the
    /// moment it was told; `None` if it is not early, which also forgets the
    /// moment. A request on a connection opened (`connected`) before the
    /// client was told is not a retry: it was in flight already, as parallel
    /// requests of one client are.
    pub fn check(&mut self, client: &str, now: Instant, connected: Instant) -> Option<Duration> {
        let (told_at, not_before) = *self.told.get(client)?;
        if connected < told_at {
            return None;
        }
        match not_before.checked_sub(self.skew) {
            Some(threshold) if now < threshold => Some(not_before - now),
            _ => {
                self.told.remove(client);
                None
            }
        }
    }

    /// Notes that `client` was sent a Retry-After worth `wait` at `sent_at`.
    pub fn told_to_wait(&mut self, client: &str, sent_at: Instant, wait: Duration) {
        let not_before = sent_at + wait.min(LONGEST_WAIT);
        self.told.insert(client.to_owned(), (sent_at, not_before));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn four_answers_then_429_until_the_window_reopens() {
        let t0 = Instant::now();
        let mut limiter = Limiter::new(4, Duration::from_secs(3));
        let remaining: Vec<_> = (0..4)
            .map(|i| limiter.admit("a", t0 + ms(10 * i)))
            .map(|q| {
                assert!(q.allowed);
                q.remaining
            })
            .collect();
        assert_eq!(remaining, [3, 2, 1, 0]);

        let refused = limiter.admit("a", t0 + ms(1000));
        assert_eq!(refused, Quota::refused(ms(2000)));
        assert_eq!(refused.retry_after_secs(), 2);
        assert_eq!(refused.field(), "\"lab\";r=0;t=2");
        // 0.3 s left rounds up to 1 s, never down to 0.
        let late = limiter.admit("a", t0 + ms(2700));
        assert_eq!((late.allowed, late.retry_after_secs()), (false, 1));
        assert_eq!(limiter.policy_field(), "\"lab\";q=4;w=3");

        // The next window starts at the first request after the old one ended.
        let reopened = limiter.admit("a", t0 + ms(5000));
        assert_eq!(
            reopened,
            Quota {
                allowed: true,
                remaining: 3,
                reset: ms(3000)
            }
        );
        assert_eq!(reopened.field(), "\"lab\";r=3;t=3");
        assert_eq!(limiter.admit("a", t0 + ms(7900)).reset, ms(100));
        assert_eq!(limiter.admit("a", t0 + ms(8000)).remaining, 3);
    }

    #[test]
    fn clients_have_their_own_windows() {
        let t0 = Instant::now();
        let mut limiter = Limiter::new(1, Duration::from_secs(3));
        assert!(limiter.admit("a", t0).allowed);
        assert!(!limiter.admit("a", t0).allowed);
        assert!(limiter.admit("b", t0 + ms(500)).allowed);
    }

    #[test]
    fn sub_second_windows_round_up_in_the_headers() {
        let t0 = Instant::now();
        let mut limiter = Limiter::new(1, ms(300));
        assert_eq!(limiter.policy_field(), "\"lab\";q=1;w=1");
        assert_eq!(limiter.admit("a", t0).field(), "\"lab\";r=0;t=1");
        assert_eq!(limiter.admit("a", t0 + ms(100)).retry_after_secs(), 1);
        // A request judged a moment "before" the window start (out-of-order
        // threads) must not panic.
        assert!(!limiter.admit("a", t0 - ms(1)).allowed);
    }

    #[test]
    fn early_retries_are_caught_within_the_skew() {
        let t0 = Instant::now();
        let mut early = EarlyRetries::new(ms(150));
        assert_eq!(early.check("a", t0, t0), None, "never told to wait");

        early.told_to_wait("a", t0, Duration::from_secs(2));
        assert_eq!(
            early.check("b", t0 + ms(10), t0 + ms(10)),
            None,
            "another client"
        );
        assert_eq!(
            early.check("a", t0 + ms(1000), t0 + ms(1000)),
            Some(ms(1000))
        );
        // Still early: an early retry does not clear the moment.
        assert_eq!(
            early.check("a", t0 + ms(1849), t0 + ms(1849)),
            Some(ms(151))
        );
        // Within the skew is on time, and clears the moment for good.
        assert_eq!(early.check("a", t0 + ms(1850), t0 + ms(1850)), None);
        assert_eq!(early.check("a", t0 + ms(1851), t0 + ms(1851)), None);

        // A request whose connection was open before the client was told
        // was in flight already: a parallel request, not a retry.
        early.told_to_wait("c", t0 + ms(100), Duration::from_secs(2));
        assert_eq!(early.check("c", t0 + ms(101), t0 + ms(99)), None);
        assert_eq!(early.check("c", t0 + ms(102), t0 + ms(101)), Some(ms(1998)));

        // A newer Retry-After replaces the older one.
        early.told_to_wait("a", t0, Duration::from_secs(1));
        early.told_to_wait("a", t0 + ms(500), Duration::from_secs(1));
        assert_eq!(
            early.check("a", t0 + ms(1200), t0 + ms(1200)),
            Some(ms(300))
        );
    }

    #[test]
    fn huge_waits_do_not_overflow() {
        let t0 = Instant::now();
        let mut early = EarlyRetries::new(ms(150));
        early.told_to_wait("a", t0, Duration::MAX);
        assert!(early.check("a", t0 + ms(1), t0 + ms(1)).is_some());
    }
}
