//! What one scope (an API key, an origin) remembers across processes, and the
//! pure rules over it: the Retry-After gate, pacing from rate-limit headers,
//! `--rate` (the generic cell rate algorithm, one timestamp per scope), and
//! the circuit breaker with its single half-open probe. Times are wall-clock
//! milliseconds since the epoch, because they are shared between processes.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::decision::{Observation, Phase};

/// Milliseconds since the Unix epoch.
pub type Millis = u64;

/// Whole milliseconds, rounded up: a time computed from it is never early.
pub fn millis(d: Duration) -> Millis {
    let ms = d.as_millis() + u128::from(!d.subsec_nanos().is_multiple_of(1_000_000));
    u64::try_from(ms).unwrap_or(u64::MAX)
}

/// One scope's shared record. Unknown or missing fields default, so older
/// and newer versions of abide can share a state directory.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ScopeState {
    /// No request of the scope before this.
    pub next_allowed_at: Option<Millis>,
    /// Why the gate is closed, for the outcome's reason.
    pub gate_cause: Option<GateCause>,
    /// `--rate`: the theoretical arrival time of the next request.
    pub rate_tat: Option<Millis>,
    pub breaker: Breaker,
    /// Requests (by fingerprint) that keep failing the same way.
    pub repeats: Vec<Repeat>,
    /// Idempotency keys kept per task (`--task`), by hashed task id.
    pub tasks: Vec<TaskKey>,
}

/// A request that ended NON_RETRYABLE or INVALID_RESPONSE `count` times in a
/// row, last at `last`. The fingerprint is a hash: no request is kept in clear.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repeat {
    pub fingerprint: String,
    pub count: u32,
    pub last: Millis,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskKey {
    pub task: String,
    pub key: String,
    pub expires: Millis,
}

/// Identical failures older than this no longer count against a request.
pub const REPEAT_WINDOW: Duration = Duration::from_secs(600);
/// Enough distinct failing requests per scope for any agent; the oldest go first.
const MAX_REPEATS: usize = 64;
const MAX_TASKS: usize = 1024;

/// How many times in a row this request has failed the same way recently.
pub fn repeats(state: &ScopeState, fingerprint: &str, now: Millis) -> u32 {
    state
        .repeats
        .iter()
        .find(|r| {
            r.fingerprint == fingerprint && now.saturating_sub(r.last) <= millis(REPEAT_WINDOW)
        })
        .map_or(0, |r| r.count)
}

/// After a run of this request: one more failure in a row, or a clean slate.
pub fn remember(state: &mut ScopeState, fingerprint: &str, failed: bool, now: Millis) {
    let count = repeats(state, fingerprint, now);
    state.repeats.retain(|r| {
        r.fingerprint != fingerprint && now.saturating_sub(r.last) <= millis(REPEAT_WINDOW)
    });
    if failed {
        state.repeats.push(Repeat {
            fingerprint: fingerprint.to_string(),
            count: count + 1,
            last: now,
        });
        let excess = state.repeats.len().saturating_sub(MAX_REPEATS);
        state.repeats.drain(..excess);
    }
}

/// The task's idempotency key: the one kept from an earlier run, else `fresh`,
/// kept from now on for `ttl`.
pub fn task_key(
    state: &mut ScopeState,
    task: &str,
    fresh: &str,
    now: Millis,
    ttl: Duration,
) -> String {
    state.tasks.retain(|t| t.expires > now);
    if let Some(kept) = state.tasks.iter().find(|t| t.task == task) {
        return kept.key.clone();
    }
    state.tasks.push(TaskKey {
        task: task.to_string(),
        key: fresh.to_string(),
        expires: now.saturating_add(millis(ttl)),
    });
    let excess = state.tasks.len().saturating_sub(MAX_TASKS);
    state.tasks.drain(..excess);
    fresh.to_string()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateCause {
    /// A server's Retry-After (or retry-after-ms) to some process of the scope.
    RetryAfter,
    /// Rate-limit header fields said the quota was used up.
    QuotaExhausted,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Breaker {
    /// Consecutive failed attempts of the scope.
    pub failures: u32,
    /// Open until then; half-open after.
    pub open_until: Option<Millis>,
    /// The one process allowed to probe while half-open, and until when.
    pub probe: Option<Probe>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    pub holder: String,
    pub expires: Millis,
}

/// The scope-wide settings of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScopePolicy {
    /// `--rate N/UNIT` as the interval between two requests.
    pub rate_interval: Option<Duration>,
    /// `--breaker N`; 0 turns it off.
    pub breaker_threshold: u32,
    pub breaker_cooldown: Duration,
    /// How long a half-open probe may take before another process may probe.
    pub probe_ttl: Duration,
}

/// What the scope says before an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Send at `at` (now or later: a `--rate` slot reserved for this process).
    Go { at: Millis, probe: bool },
    /// The gate is closed until `until`; ask again then.
    Wait { until: Millis, cause: Wait },
    /// The breaker is open (or another process is probing) until `until`.
    CircuitOpen { until: Millis, probing: bool },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    Gate(GateCause),
    /// The next `--rate` slot is beyond the deadline.
    Rate,
}

/// Decides whether process `me` may send now, reserving a `--rate` slot and
/// claiming the half-open probe as it goes. `deadline` is the latest time
/// the caller could still send: a rate slot past it is not reserved.
/// `reserve_rate` is false when this attempt already holds its slot.
pub fn admit(
    state: &mut ScopeState,
    now: Millis,
    deadline: Millis,
    policy: &ScopePolicy,
    me: &str,
    reserve_rate: bool,
) -> Admission {
    let mut probe = false;
    if let Some(open_until) = state.breaker.open_until {
        if now < open_until {
            // Not before the server's own delay ends either.
            let gate = state.next_allowed_at.unwrap_or(0);
            return Admission::CircuitOpen {
                until: open_until.max(gate),
                probing: false,
            };
        }
        match &state.breaker.probe {
            Some(p) if p.holder != me && p.expires > now => {
                return Admission::CircuitOpen {
                    until: p.expires,
                    probing: true,
                };
            }
            _ => {
                state.breaker.probe = Some(Probe {
                    holder: me.to_string(),
                    expires: now.saturating_add(millis(policy.probe_ttl)),
                });
                probe = true;
            }
        }
    }
    if let Some(until) = state.next_allowed_at.filter(|&t| t > now) {
        let cause = state.gate_cause.unwrap_or(GateCause::RetryAfter);
        return Admission::Wait {
            until,
            cause: Wait::Gate(cause),
        };
    }
    let mut at = now;
    if let Some(interval) = policy.rate_interval.filter(|_| reserve_rate) {
        let tat = state.rate_tat.unwrap_or(now).max(now);
        if tat > deadline {
            return Admission::Wait {
                until: tat,
                cause: Wait::Rate,
            };
        }
        state.rate_tat = Some(tat.saturating_add(millis(interval).max(1)));
        at = tat;
    }
    Admission::Go { at, probe }
}

/// How long a backend with expiring keys must keep this record: until the
/// last time it mentions, plus ten idle minutes (so a breaker's count of
/// recent failures survives a pause), after which an idle scope vanishes.
pub fn keep_for(state: &ScopeState, now: Millis) -> Duration {
    const IDLE: Duration = Duration::from_secs(600);
    let latest = [
        state.next_allowed_at,
        state.rate_tat,
        state.breaker.open_until,
        state.breaker.probe.as_ref().map(|p| p.expires),
        state
            .repeats
            .iter()
            .map(|r| r.last + millis(REPEAT_WINDOW))
            .max(),
        state.tasks.iter().map(|t| t.expires).max(),
    ]
    .into_iter()
    .flatten()
    .max()
    .unwrap_or(now);
    Duration::from_millis(latest.saturating_sub(now)) + IDLE
}

/// Whether a request is worth reading the state for at all: the fast path of
/// a run with nothing shared to honour.
pub fn is_idle(state: &ScopeState, now: Millis, policy: &ScopePolicy, reserve_rate: bool) -> bool {
    (policy.rate_interval.is_none() || !reserve_rate)
        && state.breaker.open_until.is_none()
        && gate_open(state, now)
}

/// Whether the Retry-After (or quota) gate lets a request through now.
pub fn gate_open(state: &ScopeState, now: Millis) -> bool {
    state.next_allowed_at.is_none_or(|t| t <= now)
}

/// How an attempt bears on the breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// A retryable 5xx or a transport failure.
    Failure,
    /// The server answered: it is up.
    Alive,
    /// 429: the gate handles it; it neither trips nor resets the count.
    Limited,
}

pub fn health(observation: Observation, retry_on: &[u16]) -> Health {
    match observation {
        Observation::Status { status: 429, .. } => Health::Limited,
        Observation::Status { status, .. } if status >= 500 && retry_on.contains(&status) => {
            Health::Failure
        }
        Observation::Status { .. } => Health::Alive,
        Observation::Transport(Phase::BeforeSend | Phase::AfterSend | Phase::Partial) => {
            Health::Failure
        }
        Observation::Transport(Phase::Final) => Health::Alive,
    }
}

/// What one attempt taught the scope. Delays are relative: the store adds
/// them to its own clock, so that machines with skewed clocks still agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lesson {
    pub health: Health,
    /// The server's delay (after the floor), to publish.
    pub retry_after: Option<Duration>,
    /// The time until the quota resets, when it is used up.
    pub quota_reset: Option<Duration>,
}

/// The breaker's state after a lesson, for `-v`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerNews {
    Unchanged,
    Opened { until: Millis },
    Closed,
}

/// Learns from one attempt: moves the gate forward (never back), and counts
/// the breaker. A half-open probe's result decides for everyone.
pub fn learn(
    state: &mut ScopeState,
    now: Millis,
    lesson: &Lesson,
    policy: &ScopePolicy,
    me: &str,
) -> BreakerNews {
    let gate = [
        (lesson.retry_after, GateCause::RetryAfter),
        (lesson.quota_reset, GateCause::QuotaExhausted),
    ];
    for (delay, cause) in gate {
        // One millisecond more than the delay: `now` is rounded down.
        let until = delay.map(|d| now.saturating_add(millis(d)).saturating_add(1));
        if let Some(until) = until.filter(|&u| u > state.next_allowed_at.unwrap_or(0)) {
            state.next_allowed_at = Some(until);
            state.gate_cause = Some(cause);
        }
    }
    if state.next_allowed_at.is_some_and(|t| t <= now) {
        state.next_allowed_at = None;
        state.gate_cause = None;
    }
    if policy.breaker_threshold == 0 {
        return BreakerNews::Unchanged;
    }
    let breaker = &mut state.breaker;
    let probing = breaker.probe.as_ref().is_some_and(|p| p.holder == me);
    let open = |breaker: &mut Breaker| {
        let until = now.saturating_add(millis(policy.breaker_cooldown));
        *breaker = Breaker {
            failures: 0,
            open_until: Some(until),
            probe: None,
        };
        BreakerNews::Opened { until }
    };
    match lesson.health {
        Health::Failure if probing => open(breaker),
        Health::Failure => {
            breaker.failures = breaker.failures.saturating_add(1);
            if breaker.failures >= policy.breaker_threshold {
                open(breaker)
            } else {
                BreakerNews::Unchanged
            }
        }
        Health::Alive | Health::Limited
            if probing || breaker.open_until.is_some_and(|t| t <= now) =>
        {
            *breaker = Breaker::default();
            BreakerNews::Closed
        }
        Health::Alive => {
            breaker.failures = 0;
            BreakerNews::Unchanged
        }
        Health::Limited => BreakerNews::Unchanged,
    }
}

/// Gives the probe back when its holder ends without a verdict (budget,
/// cancellation), so that the next process may probe at once.
pub fn release(state: &mut ScopeState, me: &str) {
    if state.breaker.probe.as_ref().is_some_and(|p| p.holder == me) {
        state.breaker.probe = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> ScopePolicy {
        ScopePolicy {
            rate_interval: None,
            breaker_threshold: 3,
            breaker_cooldown: Duration::from_secs(30),
            probe_ttl: Duration::from_secs(10),
        }
    }

    const FAR: Millis = u64::MAX;

    fn lesson(health: Health) -> Lesson {
        Lesson {
            health,
            retry_after: None,
            quota_reset: None,
        }
    }

    #[test]
    fn the_gate_moves_forward_only() {
        let p = policy();
        let mut s = ScopeState::default();
        assert_eq!(
            admit(&mut s, 1000, FAR, &p, "a", true),
            Admission::Go {
                at: 1000,
                probe: false
            }
        );
        let l = Lesson {
            retry_after: Some(Duration::from_millis(19_999)),
            ..lesson(Health::Limited)
        };
        learn(&mut s, 1000, &l, &p, "a");
        let earlier = Lesson {
            retry_after: Some(Duration::from_millis(2_999)),
            ..lesson(Health::Limited)
        };
        learn(&mut s, 2000, &earlier, &p, "b");
        assert_eq!(s.next_allowed_at, Some(21_000));
        let wait = Admission::Wait {
            until: 21_000,
            cause: Wait::Gate(GateCause::RetryAfter),
        };
        assert_eq!(admit(&mut s, 3000, FAR, &p, "c", true), wait);
        assert!(!is_idle(&s, 3000, &p, true));
        assert_eq!(
            admit(&mut s, 21_000, FAR, &p, "c", true),
            Admission::Go {
                at: 21_000,
                probe: false
            }
        );
        let quota = Lesson {
            quota_reset: Some(Duration::from_millis(9_999)),
            ..lesson(Health::Alive)
        };
        learn(&mut s, 30_000, &quota, &p, "d");
        assert_eq!(s.gate_cause, Some(GateCause::QuotaExhausted));
        // A gate in the past is cleaned away.
        learn(&mut s, 50_000, &lesson(Health::Alive), &p, "d");
        assert_eq!(s.next_allowed_at, None);
        assert!(is_idle(&s, 50_000, &p, true));
    }

    #[test]
    fn an_attempt_holding_its_rate_slot_reserves_no_other() {
        let p = ScopePolicy {
            rate_interval: Some(Duration::from_millis(200)),
            ..policy()
        };
        let mut s = ScopeState::default();
        assert_eq!(
            admit(&mut s, 1000, FAR, &p, "x", true),
            Admission::Go {
                at: 1000,
                probe: false
            }
        );
        assert_eq!(
            admit(&mut s, 1000, FAR, &p, "x", false),
            Admission::Go {
                at: 1000,
                probe: false
            }
        );
        assert_eq!(s.rate_tat, Some(1200));
        assert!(is_idle(&s, 1000, &p, false) && !is_idle(&s, 1000, &p, true));
    }

    #[test]
    fn an_open_breaker_never_reopens_before_the_servers_delay() {
        let p = policy();
        let mut s = ScopeState::default();
        let l = Lesson {
            retry_after: Some(Duration::from_secs(60)),
            ..lesson(Health::Failure)
        };
        for _ in 0..3 {
            learn(&mut s, 0, &l, &p, "a");
        }
        match admit(&mut s, 1000, FAR, &p, "b", true) {
            Admission::CircuitOpen { until, .. } => assert!(until > 60_000, "{until}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn rate_slots_are_spaced_without_burst() {
        let p = ScopePolicy {
            rate_interval: Some(Duration::from_millis(200)),
            ..policy()
        };
        let mut s = ScopeState::default();
        let slots: Vec<_> = (0..5)
            .map(|_| match admit(&mut s, 1000, FAR, &p, "x", true) {
                Admission::Go { at, .. } => at,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(slots, [1000, 1200, 1400, 1600, 1800]);
        // A slot beyond the deadline is not reserved.
        assert_eq!(
            admit(&mut s, 1000, 1500, &p, "x", true),
            Admission::Wait {
                until: 2000,
                cause: Wait::Rate
            }
        );
        assert_eq!(s.rate_tat, Some(2000));
        // After a quiet spell there is no credit for a burst either.
        assert_eq!(
            admit(&mut s, 9000, FAR, &p, "x", true),
            Admission::Go {
                at: 9000,
                probe: false
            }
        );
        assert_eq!(
            admit(&mut s, 9000, FAR, &p, "x", true),
            Admission::Go {
                at: 9200,
                probe: false
            }
        );
    }

    #[test]
    fn the_breaker_opens_probes_once_and_closes() {
        let p = policy();
        let mut s = ScopeState::default();
        for _ in 0..2 {
            assert_eq!(
                learn(&mut s, 0, &lesson(Health::Failure), &p, "a"),
                BreakerNews::Unchanged
            );
        }
        // 429 neither trips nor resets.
        learn(&mut s, 0, &lesson(Health::Limited), &p, "a");
        assert_eq!(s.breaker.failures, 2);
        assert_eq!(
            learn(&mut s, 1000, &lesson(Health::Failure), &p, "b"),
            BreakerNews::Opened { until: 31_000 }
        );
        assert_eq!(
            admit(&mut s, 2000, FAR, &p, "c", true),
            Admission::CircuitOpen {
                until: 31_000,
                probing: false
            }
        );
        // Half-open: one probe, the others still see it open.
        assert_eq!(
            admit(&mut s, 31_000, FAR, &p, "c", true),
            Admission::Go {
                at: 31_000,
                probe: true
            }
        );
        assert_eq!(
            admit(&mut s, 31_500, FAR, &p, "d", true),
            Admission::CircuitOpen {
                until: 41_000,
                probing: true
            }
        );
        // The probe fails: open again for a cooldown.
        assert_eq!(
            learn(&mut s, 32_000, &lesson(Health::Failure), &p, "c"),
            BreakerNews::Opened { until: 62_000 }
        );
        assert_eq!(
            admit(&mut s, 62_000, FAR, &p, "d", true),
            Admission::Go {
                at: 62_000,
                probe: true
            }
        );
        assert_eq!(
            learn(&mut s, 62_100, &lesson(Health::Alive), &p, "d"),
            BreakerNews::Closed
        );
        assert_eq!(s.breaker, Breaker::default());
    }

    #[test]
    fn an_abandoned_probe_passes_on() {
        let p = policy();
        let mut s = ScopeState {
            breaker: Breaker {
                failures: 0,
                open_until: Some(0),
                probe: None,
            },
            ..ScopeState::default()
        };
        assert!(matches!(
            admit(&mut s, 10, FAR, &p, "a", true),
            Admission::Go { probe: true, .. }
        ));
        release(&mut s, "a");
        assert!(matches!(
            admit(&mut s, 20, FAR, &p, "b", true),
            Admission::Go { probe: true, .. }
        ));
        // A probe that never reports expires.
        assert!(matches!(
            admit(&mut s, 20 + 10_000, FAR, &p, "c", true),
            Admission::Go { probe: true, .. }
        ));
    }

    #[test]
    fn health_of_attempts() {
        let retry_on = [408, 429, 500, 502, 503, 504];
        let status = |status| Observation::Status {
            status,
            should_retry: None,
        };
        assert_eq!(health(status(503), &retry_on), Health::Failure);
        assert_eq!(health(status(429), &retry_on), Health::Limited);
        assert_eq!(health(status(501), &retry_on), Health::Alive);
        assert_eq!(health(status(404), &retry_on), Health::Alive);
        assert_eq!(health(status(200), &retry_on), Health::Alive);
        assert_eq!(
            health(Observation::Transport(Phase::BeforeSend), &retry_on),
            Health::Failure
        );
        assert_eq!(
            health(Observation::Transport(Phase::AfterSend), &retry_on),
            Health::Failure
        );
    }

    #[test]
    fn breaker_zero_is_off() {
        let p = ScopePolicy {
            breaker_threshold: 0,
            ..policy()
        };
        let mut s = ScopeState::default();
        for _ in 0..10 {
            learn(&mut s, 0, &lesson(Health::Failure), &p, "a");
        }
        assert_eq!(s.breaker, Breaker::default());
    }

    #[test]
    fn repeated_failures_count_in_a_row_and_expire() {
        let mut s = ScopeState::default();
        for i in 1..=3 {
            remember(&mut s, "fp-a", true, 1000 * i);
        }
        assert_eq!(repeats(&s, "fp-a", 4000), 3);
        assert_eq!(
            repeats(&s, "fp-b", 4000),
            0,
            "a changed request has its own count"
        );
        remember(&mut s, "fp-b", true, 4000);
        assert_eq!(repeats(&s, "fp-a", 4000), 3);
        // Ten minutes later the old failures no longer count.
        assert_eq!(repeats(&s, "fp-a", 3000 + millis(REPEAT_WINDOW) + 1), 0);
        remember(&mut s, "fp-a", true, 3000 + millis(REPEAT_WINDOW) + 1);
        assert_eq!(repeats(&s, "fp-a", 3000 + millis(REPEAT_WINDOW) + 1), 1);
        // A success resets it.
        remember(&mut s, "fp-b", false, 5000);
        assert_eq!(repeats(&s, "fp-b", 5000), 0);
        for i in 0..100 {
            remember(&mut s, &format!("many-{i}"), true, 6000);
        }
        assert_eq!(s.repeats.len(), MAX_REPEATS);
    }

    #[test]
    fn task_keys_survive_reruns_and_expire() {
        let mut s = ScopeState::default();
        let day = Duration::from_secs(86_400);
        assert_eq!(task_key(&mut s, "t1", "key-1", 0, day), "key-1");
        assert_eq!(task_key(&mut s, "t1", "key-2", 1000, day), "key-1");
        assert_eq!(task_key(&mut s, "t2", "key-3", 1000, day), "key-3");
        assert_eq!(
            task_key(&mut s, "t1", "key-4", millis(day) + 1, day),
            "key-4"
        );
    }

    #[test]
    fn records_are_kept_as_long_as_they_matter() {
        let idle = Duration::from_secs(600);
        let mut s = ScopeState::default();
        assert_eq!(keep_for(&s, 1000), idle);
        s.next_allowed_at = Some(31_000);
        assert_eq!(keep_for(&s, 1000), idle + Duration::from_secs(30));
        task_key(&mut s, "t", "k", 1000, Duration::from_secs(86_400));
        assert_eq!(keep_for(&s, 1000), idle + Duration::from_secs(86_400));
    }

    #[test]
    fn state_survives_unknown_and_missing_fields() {
        let s: ScopeState =
            serde_json::from_str(r#"{"next_allowed_at":5,"future_field":1}"#).unwrap();
        assert_eq!(s.next_allowed_at, Some(5));
        let s: ScopeState = serde_json::from_str("{}").unwrap();
        assert_eq!(s, ScopeState::default());
    }
}
