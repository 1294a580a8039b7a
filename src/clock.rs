//! Time, in one place: the clock and the sleeper the loop is given (real
//! ones here, fake ones in tests), epoch milliseconds for what scopes store,
//! and the rounding rule that keeps abide from ever being early: a span
//! that must be waited rounds up ([`ceil_ms`]), a time read from the wall
//! rounds down ([`epoch_ms`]).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub trait Clock {
    fn now(&self) -> Instant;
    fn wall(&self) -> SystemTime;
}

pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
    fn wall(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// Waits, or reports the cancellation that cut the wait short.
pub trait Sleeper {
    fn sleep(&mut self, duration: Duration) -> Result<(), crate::exit::Signal>;
    /// A cancellation that arrived while a request was in flight.
    fn cancelled(&self) -> Option<crate::exit::Signal>;
}

/// Milliseconds since the Unix epoch.
pub type Millis = u64;

/// The last millisecond of year 9999: the latest time RFC 3339 can write,
/// and so the latest a record may hold.
pub const LATEST: Millis = 253_402_300_799_999;

/// Whole milliseconds, rounded up: a time computed from it is never early.
pub fn ceil_ms(d: Duration) -> Millis {
    let ms = d.as_millis() + u128::from(!d.subsec_nanos().is_multiple_of(1_000_000));
    u64::try_from(ms).unwrap_or(u64::MAX)
}

/// Wall-clock time in milliseconds, rounded down: compared with a gate, it
/// never says the gate has opened early.
pub fn epoch_ms(t: SystemTime) -> Millis {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

/// Whole milliseconds, rounded down: for reporting a span that has passed.
pub fn floor_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// RFC 3339 in UTC; a time past year 9999, which it cannot write, as the
/// last moment it can.
pub fn rfc3339(t: SystemTime) -> String {
    let latest = std::time::UNIX_EPOCH + Duration::from_millis(LATEST);
    humantime::format_rfc3339_millis(t.min(latest)).to_string()
}
