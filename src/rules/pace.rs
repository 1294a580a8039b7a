//! `--rate auto`: the fastest pace the server accepts, learned from its
//! answers and shared by every process of the scope.
//!
//! The rule, after AWS's adaptive retry mode and TCP CUBIC:
//!
//! - **Start** at [`Params::start`] (5 requests/s) and, until the first
//!   refusal, double the rate every half second (slow start: 20/s after a
//!   second, where doubling every second took two and cost a second of
//!   a 20 s batch).
//! - **On a refusal** (a 429, or a `RateLimit` field saying the quota is used
//!   up), go on at `β·W`, with `β = 0.7` and `W` the rate the server
//!   refused. `W` is the pace abide kept, not (as AWS) the lower of it and
//!   the measured rate: on a rising curve the measured rate lags by half a
//!   bucket, and in the simulation below that put `W` 7 % (after slow
//!   start, 33 %) too low and cost 4 % of the throughput. Refusals of
//!   requests sent before the cut took effect (sent before it, or within
//!   one new interval after it, since their spacing came from the old
//!   rate) teach nothing new and cut nothing.
//! - **While answers succeed**, climb the CUBIC curve back to a plateau
//!   just under the refused rate, `P = 0.97·W`: `P + C·(t − K)³` with
//!   `C = 0.4` and `t` the seconds since the cut, which is `β·W` at the cut,
//!   climbs fast and flattens as it comes to `P` after
//!   `K = ∛((P − β·W)/C)` seconds. Beyond `K` it probes above `P` four
//!   times more gently, `P + C/4·(t − K)³`. Against a limiter without
//!   burst, `W` itself is refused again at once: a curve flat at `W` (as
//!   CUBIC's) made every cycle end at `K` with a cut, one in 2.5 s at 20/s;
//!   flat just under it, a cycle lasts until the probe finds the limit, and
//!   the cuts (each costs `(1 − β)/4` of a cycle's pace) are half as many.
//! - **Never more than twice the measured rate**: answers are counted in
//!   buckets of half a second, smoothed (`0.8·new + 0.2·old`). A pace the
//!   scope did not actually keep proves nothing, so a scope held back by
//!   other limits (`--parallel`, slow answers) does not drift far above
//!   what it sent.
//! - **When the server says its quota**: an answer with the remaining
//!   requests `r > 0` and the seconds to reset `t` (`RateLimit`,
//!   `RateLimit-Remaining`/`-Reset`, `X-RateLimit-Remaining`/`-Reset`)
//!   sets the rate to `r/t` at once, the rate that spends the quota evenly
//!   until it resets; the curve then starts flat from there.
//! - **Bounds**: never below [`Params::floor`] (0.5/s, as AWS) nor above
//!   [`Params::ceiling`] (1000/s: the scope's `--rate` slots are whole
//!   milliseconds).
//!
//! Against nginx-like limiting at 20/s without burst (a fake-clock
//! simulation in the tests: 8 workers, 1–4 ms of network each way), 400
//! requests see 7 refused of 407 sent and finish at 17.2/s, 0.86 of the
//! limit (with doubling each second, a plateau at `W` and one `C`: 11 of
//! 411, 0.83). Lower limits cost more refusals (4 % at 10/s), higher ones
//! more of the start (0.77 of the limit at 40/s over 400 requests).
//!
//! The rule is evaluated at each answer, under the scope state's lock, and
//! its state ([`Pace`]) lives in the scope's record: several batches, or a
//! batch and single runs, converge on one pace. The result is
//! [`interval`]: the spacing between request starts the scope's `--rate`
//! slots keep now.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::{Millis, ceil_ms};

/// The multiplicative cut on a refusal.
pub const BETA: f64 = 0.7;
/// The CUBIC scale constant, in requests/s per second cubed, of the climb
/// back after a cut.
pub const C: f64 = 0.4;
/// The scale of the probe beyond the plateau: a quarter of [`C`].
pub const C_PROBE: f64 = 0.1;
/// Where the curve flattens after a cut, as a share of the refused rate.
pub const PLATEAU: f64 = 0.97;
/// Slow start doubles the rate every this many seconds.
const DOUBLING: f64 = 0.5;
/// The width of a bucket of the measured rate.
const BUCKET: Millis = 500;
/// The weight of the newest bucket in the measured rate.
const SMOOTHING: f64 = 0.8;

/// The bounds and the start, in requests per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    pub start: f64,
    pub floor: f64,
    pub ceiling: f64,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            start: 5.0,
            floor: 0.5,
            ceiling: 1000.0,
        }
    }
}

/// What the scope has learned of its pace. Rates are in requests per 1000
/// seconds (integers: the record compares and serialises exactly).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pace {
    /// The pace now.
    pub rate: u64,
    /// Where the curve flattens: just under the rate last refused, or the
    /// rate a quota set; `None` while the scope is still in slow start.
    pub peak: Option<u64>,
    /// Slow start: when it began. After a cut or a quota: the moment the
    /// curve comes back to `peak`.
    pub since: Millis,
    /// A refusal of a request sent before this cuts nothing.
    pub calm_until: Millis,
    /// The smoothed rate of answers.
    pub measured: u64,
    /// The start of the current bucket of the measured rate, and its count.
    pub bucket: Millis,
    pub count: u32,
}

/// The server's own word on its quota: `remaining` requests until `reset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    pub remaining: u64,
    pub reset: Duration,
}

/// One answer, as the pace sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// When its request was sent (epoch ms, the scope's clock).
    pub sent: Millis,
    /// A 429.
    pub refused: bool,
    pub quota: Option<Quota>,
}

/// What an answer did to the pace, for `-v`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Change {
    /// Cut, from and to requests per second.
    Cut { from: f64, to: f64 },
    /// Set from the server's quota.
    Quota { to: f64 },
    /// Followed the curve (or a refusal that taught nothing new).
    Curve,
}

fn per_s(milli: u64) -> f64 {
    milli as f64 / 1000.0
}

/// Requests per 1000 s, rounded down: never faster than computed.
fn milli(rate: f64) -> u64 {
    (rate * 1000.0) as u64
}

/// `K`, in seconds: how long the curve takes from `from` up to `peak`.
fn zero_point(from: f64, peak: f64) -> f64 {
    ((peak - from).max(0.0) / C).cbrt()
}

/// The spacing between request starts the scope keeps now.
pub fn interval(pace: Option<&Pace>, params: &Params) -> Duration {
    Duration::from_secs_f64(1.0 / rate(pace, params))
}

/// The pace now, in requests per second.
pub fn rate(pace: Option<&Pace>, params: &Params) -> f64 {
    pace.map_or(params.start, |p| per_s(p.rate))
        .clamp(params.floor, params.ceiling)
}

/// Learns from one answer received at `now`.
pub fn learn(pace: &mut Option<Pace>, now: Millis, answer: &Answer, params: &Params) -> Change {
    let p = pace.get_or_insert_with(|| Pace {
        rate: milli(params.start.clamp(params.floor, params.ceiling)),
        peak: None,
        since: answer.sent.min(now),
        calm_until: 0,
        measured: 0,
        bucket: 0,
        count: 0,
    });
    p.record(now);
    let measured = (p.measured > 0).then(|| per_s(p.measured));
    let current = per_s(p.rate);
    let exhausted = answer.quota.is_some_and(|q| q.remaining == 0);
    let (target, change) = if answer.refused || exhausted {
        if answer.sent < p.calm_until {
            return Change::Curve;
        }
        let to = current * BETA;
        let peak = current * PLATEAU;
        p.peak = Some(milli(peak));
        p.since = now.saturating_add(ceil_ms(Duration::from_secs_f64(zero_point(to, peak))));
        (to, Change::Cut { from: current, to })
    } else if let Some(q) = answer.quota.filter(|q| !q.reset.is_zero()) {
        let to = q.remaining as f64 / q.reset.as_secs_f64();
        p.peak = Some(milli(to));
        p.since = now;
        (to, Change::Quota { to })
    } else {
        (p.curve(now, params), Change::Curve)
    };
    let capped = measured.map_or(target, |m| target.min(2.0 * m));
    p.rate = milli(capped.clamp(params.floor, params.ceiling));
    if let Change::Cut { from, .. } = change {
        p.calm_until = now.saturating_add(ceil_ms(interval(Some(p), params)));
        return Change::Cut {
            from,
            to: per_s(p.rate),
        };
    }
    change
}

impl Pace {
    /// Counts one answer into the measured rate.
    fn record(&mut self, now: Millis) {
        let bucket = now - now % BUCKET;
        if bucket > self.bucket {
            if self.bucket > 0 {
                let span = (bucket - self.bucket) as f64 / 1000.0;
                let latest = f64::from(self.count) / span;
                let smoothed = SMOOTHING * latest + (1.0 - SMOOTHING) * per_s(self.measured);
                self.measured = milli(smoothed);
            }
            self.bucket = bucket;
            self.count = 0;
        }
        self.count = self.count.saturating_add(1);
    }

    /// The rate the curve gives at `now`, unbounded.
    fn curve(&self, now: Millis, params: &Params) -> f64 {
        let t = (now as f64 - self.since as f64) / 1000.0;
        match self.peak {
            None => params.start * (t.max(0.0) / DOUBLING).exp2(),
            Some(peak) if t < 0.0 => per_s(peak) + C * t.powi(3),
            Some(peak) => per_s(peak) + C_PROBE * t.powi(3),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    const T0: Millis = 1_800_000_000_000;

    fn ok(sent: Millis) -> Answer {
        Answer {
            sent,
            refused: false,
            quota: None,
        }
    }

    fn refused(sent: Millis) -> Answer {
        Answer {
            refused: true,
            ..ok(sent)
        }
    }

    #[test]
    fn starts_moderately_and_doubles_each_half_second_while_answers_succeed() {
        let params = Params::default();
        assert_eq!(interval(None, &params), Duration::from_millis(200));
        let mut pace = None;
        // 10 answers a second: the measured rate never caps a pace of 5 → 20.
        for i in 0..=10 {
            learn(&mut pace, T0 + i * 100, &ok(T0 + i * 100), &params);
        }
        let r = rate(pace.as_ref(), &params);
        assert!((19.0..=20.0).contains(&r), "{r}");
    }

    #[test]
    fn never_twice_the_measured_rate() {
        let params = Params::default();
        let mut pace = None;
        // One answer a second for a minute: slow start alone would be at the
        // ceiling, but the scope never sent more than 1/s.
        for i in 0..60 {
            learn(&mut pace, T0 + i * 1000, &ok(T0 + i * 1000), &params);
        }
        let r = rate(pace.as_ref(), &params);
        assert!(r <= 2.0, "{r}");
    }

    #[test]
    fn a_refusal_cuts_and_the_curve_flattens_just_under_the_refused_rate() {
        let params = Params::default();
        let mut pace = None;
        for i in 0..=10 {
            learn(&mut pace, T0 + i * 100, &ok(T0 + i * 100), &params);
        }
        let before = rate(pace.as_ref(), &params);
        let now = T0 + 1050;
        let Change::Cut { from, to } = learn(&mut pace, now, &refused(now - 5), &params) else {
            panic!("no cut")
        };
        assert_eq!(from, before);
        assert!(to <= BETA * before, "{to} {before}");
        let peak = per_s(pace.as_ref().unwrap().peak.unwrap());
        assert!((peak - PLATEAU * before).abs() < 1e-3, "{peak} {before}");
        // A second refusal of a request sent right after the cut is old news.
        assert_eq!(
            learn(&mut pace, now + 10, &refused(now + 5), &params),
            Change::Curve
        );
        assert_eq!(rate(pace.as_ref(), &params), to);
        // K seconds later the curve is at its plateau (answers at 20/s keep
        // the measured rate from capping it), and a second later it has
        // probed only a tenth of a request/s beyond it.
        let k = ceil_ms(Duration::from_secs_f64(zero_point(to, peak)));
        let mut t = now;
        while t < now + k {
            t += 50;
            learn(&mut pace, t, &ok(t - 5), &params);
        }
        let back = rate(pace.as_ref(), &params);
        assert!((back - peak).abs() < 0.2, "{back} vs {peak}");
        while t < now + k + 1000 {
            t += 50;
            learn(&mut pace, t, &ok(t - 5), &params);
        }
        let probed = rate(pace.as_ref(), &params) - peak;
        assert!((0.0..=C_PROBE + 1e-3).contains(&probed), "{probed}");
    }

    #[test]
    fn quota_fields_set_the_rate_directly_and_exhaustion_cuts() {
        let params = Params::default();
        let mut pace = None;
        let quota = |remaining| Answer {
            quota: Some(Quota {
                remaining,
                reset: Duration::from_secs(10),
            }),
            ..ok(T0)
        };
        assert_eq!(
            learn(&mut pace, T0, &quota(30), &params),
            Change::Quota { to: 3.0 }
        );
        assert_eq!(interval(pace.as_ref(), &params).as_millis(), 333);
        let before = rate(pace.as_ref(), &params);
        let cut = learn(&mut pace, T0 + 100, &quota(0), &params);
        assert!(matches!(cut, Change::Cut { to, .. } if to <= BETA * before));
        // A reset of 0 says nothing about a pace.
        let zero = Answer {
            quota: Some(Quota {
                remaining: 5,
                reset: Duration::ZERO,
            }),
            ..ok(T0 + 200)
        };
        assert_eq!(learn(&mut pace, T0 + 200, &zero, &params), Change::Curve);
    }

    #[test]
    fn the_state_round_trips_through_json() {
        let mut pace = None;
        learn(&mut pace, T0, &ok(T0), &Params::default());
        let json = serde_json::to_string(&pace).unwrap();
        assert_eq!(serde_json::from_str::<Option<Pace>>(&json).unwrap(), pace);
    }

    proptest! {
        #[test]
        fn bounded_and_cut_by_beta(
            steps in proptest::collection::vec((1u64..3000, any::<bool>(), 0u64..50, 0u64..200), 1..200),
            floor in 0.1f64..5.0,
            span in 1.0f64..500.0,
        ) {
            let params = Params { start: floor * 2.0, floor, ceiling: floor + span };
            let mut pace = None;
            let mut now = T0;
            for (gap, is_429, latency, remaining) in steps {
                now += gap;
                let quota = (remaining < 100).then_some(Quota {
                    remaining,
                    reset: Duration::from_millis(1 + gap),
                });
                let answer = Answer { sent: now - latency.min(gap), refused: is_429, quota };
                let before = rate(pace.as_ref(), &params);
                let change = learn(&mut pace, now, &answer, &params);
                let after = rate(pace.as_ref(), &params);
                let stored = per_s(pace.as_ref().unwrap().rate);
                prop_assert!(stored >= params.floor - 1e-3 && stored <= params.ceiling);
                prop_assert!((after - interval(pace.as_ref(), &params).as_secs_f64().recip()).abs() < 1e-6 * after);
                if let Change::Cut { .. } = change {
                    // (to the last bit of a float: 1.96 × 0.7 is 1.3719999…)
                    prop_assert!(after <= (BETA * before).max(params.floor) + 1e-9, "{before} → {after}");
                }
                if is_429 && answer.sent >= pace.as_ref().unwrap().calm_until {
                    let cut = matches!(change, Change::Cut { .. });
                    prop_assert!(cut, "a fresh refusal must cut");
                }
            }
        }
    }

    /// A server that takes one request per `spacing` with no burst, as
    /// nginx `limit_req` without `burst`: a request arriving sooner than
    /// `spacing` after the last one it took is refused.
    struct Limiter {
        spacing: Millis,
        last: Option<Millis>,
    }

    impl Limiter {
        fn takes(&mut self, at: Millis) -> bool {
            let ok = self.last.is_none_or(|l| at >= l + self.spacing);
            if ok {
                self.last = Some(at);
            }
            ok
        }
    }

    #[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
    enum Event {
        /// A worker asks the scope for a slot.
        Ask,
        /// Its answer comes back.
        Answer { sent: Millis, refused: bool },
    }

    struct Run {
        sent: u32,
        refused: u32,
        elapsed: Millis,
    }

    /// `items` requests through `parallel` workers against `limiter`, in a
    /// fake clock. The scope's slots are taken just in time (a worker asks
    /// when the slot is due, as `admit` with the deadline at now does), the
    /// network adds 1–4 ms each way, and a refused item is tried again
    /// after a backoff of up to 500 ms (full jitter, abide's first
    /// `--backoff` step), holding its worker.
    fn simulate(items: u32, parallel: u32, mut limiter: Limiter) -> Run {
        let params = Params::default();
        let mut pace = None;
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut draw = move |below: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % below
        };
        let mut events = BinaryHeap::new();
        for w in 0..parallel {
            events.push(Reverse((T0, w, Event::Ask)));
        }
        // Each worker holds an item until it is taken, then takes the next.
        let (mut taken, mut done, mut sent, mut refused) = (parallel, 0, 0, 0);
        let mut slot = T0;
        while let Some(Reverse((now, w, event))) = events.pop() {
            match event {
                Event::Ask if now < slot => events.push(Reverse((slot, w, Event::Ask))),
                Event::Ask => {
                    slot = now + ceil_ms(interval(pace.as_ref(), &params)).max(1);
                    sent += 1;
                    let arrives = now + 1 + draw(4);
                    let refused = !limiter.takes(arrives);
                    let answer = Event::Answer { sent: now, refused };
                    events.push(Reverse((arrives + 1 + draw(4), w, answer)));
                }
                Event::Answer {
                    sent: at,
                    refused: r,
                } => {
                    learn(
                        &mut pace,
                        now,
                        &Answer {
                            sent: at,
                            refused: r,
                            quota: None,
                        },
                        &params,
                    );

                    if r {
                        refused += 1;
                        events.push(Reverse((now + draw(500), w, Event::Ask)));
                        continue;
                    }
                    done += 1;
                    if done == items {
                        return Run {
                            sent,
                            refused,
                            elapsed: now - T0,
                        };
                    }
                    if taken < items {
                        taken += 1;
                        events.push(Reverse((now, w, Event::Ask)));
                    }
                }
            }
        }
        unreachable!("the items end");
    }

    #[test]
    fn converges_on_a_fixed_rate_limiter() {
        // 20/s, as nginx `limit_req rate=20r/s` without burst.
        let run = simulate(
            400,
            8,
            Limiter {
                spacing: 50,
                last: None,
            },
        );
        let throughput = 400.0 / (run.elapsed as f64 / 1000.0);
        assert!(
            run.refused * 20 <= run.sent,
            "{} of {} refused",
            run.refused,
            run.sent
        );
        assert!(
            throughput >= 0.8 * 20.0,
            "{throughput}/s in {} ms",
            run.elapsed
        );
    }
}
