//! The decision table: what one attempt's result means, and what to do next.
//!
//! `classify` turns an observation (a status, or a transport failure and when
//! it happened) into a [`Verdict`]; `next_step` weighs a retryable verdict
//! against the server's delay, the floor, jitter, backoff, attempts and the
//! budget, and either names the wait or ends the run. Both are pure: "why
//! did it wait 3.2 s?" is answered by this file alone.

use std::time::Duration;

use crate::exit::Kind;
use crate::rules::attempt::{Observation, Phase};
use crate::rules::delay::{self, ServerDelay};
use crate::rules::scope;

/// The retry policy as the user set it.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub attempts: u32,
    pub budget: Duration,
    /// A budget the user gave cuts everything at its end; the default one
    /// bounds the retrying but never cuts a 2xx body that keeps flowing.
    pub hard_budget: bool,
    pub max_wait: Option<Duration>,
    pub retry_on: Vec<u16>,
    pub floor: Duration,
    pub jitter: f64,
    pub backoff: Duration,
    pub backoff_max: Duration,
    /// `--retry-delay`: this wait instead of the backoff when the server
    /// gives no delay.
    pub fixed_delay: Option<Duration>,
    /// `--retry-all-errors`: every failure of a request safe to replay is
    /// retried.
    pub retry_all: bool,
}

/// The shipped defaults, for tests only: production code takes them from the
/// flags (clap's defaults), and a test in `plan` checks that a bare URL's
/// plan has exactly these, so the two cannot drift apart.
#[cfg(test)]
impl Default for Policy {
    fn default() -> Self {
        Policy {
            attempts: 4,
            budget: DEFAULT_BUDGET,
            hard_budget: false,
            max_wait: None,
            retry_on: vec![408, 429, 500, 502, 503, 504],
            floor: Duration::from_secs(1),
            jitter: 0.1,
            backoff: Duration::from_millis(500),
            backoff_max: Duration::from_secs(8),
            fixed_delay: None,
            retry_all: false,
        }
    }
}

/// The least budget when neither `--budget` nor `ABIDE_BUDGET` gave one:
/// [`default_budget`] stretches it to the attempts asked.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(60);

impl Policy {
    /// The run's own wait before retry `n` at its longest: the backoff's
    /// ceiling, or `--retry-delay`; never beyond `--max-wait`.
    pub fn longest_own_wait(&self, n: u32) -> Duration {
        let wait = self
            .fixed_delay
            .unwrap_or_else(|| delay::ceiling(n, self.backoff, self.backoff_max));
        self.max_wait.map_or(wait, |m| wait.min(m))
    }

    /// An open breaker's first and longest interval when the server gave no
    /// delay: the scope's shared backoff starts where the run's own does and,
    /// unless `--breaker-cooldown` says otherwise, never waits longer than the
    /// run's own would, so that a lone run polls as often with a breaker as
    /// without one (the interval at retry `n` is at most `longest_own_wait(n)`).
    pub fn breaker_intervals(&self, cooldown: Option<Duration>) -> (Duration, Duration) {
        let longest = cooldown.unwrap_or_else(|| self.longest_own_wait(u32::MAX));
        (self.longest_own_wait(1), longest)
    }
}

/// The budget when none was given: 60 s, or as long as the `--attempts`
/// asked can take against a host that is not there yet (a service that is
/// starting): every retry's longest wait (its own backoff step, the scope's
/// breaker or the `--rate` interval, whichever is longest, with the most
/// jitter a shared wait adds), plus `connect` for every attempt. A default
/// never cuts short the attempts the user asked for.
pub fn default_budget(policy: &Policy, scope: &scope::ScopePolicy, connect: Duration) -> Duration {
    let longest = |n: u32| {
        let breaker = match scope.breaker_threshold {
            0 => Duration::ZERO,
            _ => delay::ceiling(n, scope.breaker_first, scope.breaker_cooldown),
        };
        let wait = policy
            .longest_own_wait(n)
            .max(breaker)
            .max(scope.rate_interval.unwrap_or_default());
        wait.saturating_add(delay::jitter(wait, policy.jitter, 1.0))
    };
    // Every retry from the steady one on waits as long as it does.
    let steady = delay::CEILING_STEADY;
    let waits = (1..policy.attempts.min(steady))
        .map(longest)
        .fold(Duration::ZERO, Duration::saturating_add)
        .saturating_add(longest(steady).saturating_mul(policy.attempts.saturating_sub(steady)));
    let attempts = connect.saturating_mul(policy.attempts);
    DEFAULT_BUDGET
        .max(waits.saturating_add(attempts))
        .min(crate::units::MAX_DURATION)
}

/// Whether a request may be sent twice without a second effect: GET, HEAD,
/// OPTIONS, TRACE, PUT and DELETE are, as is anything sent with an
/// idempotency key or declared `--idempotent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replay {
    Safe,
    Unsafe,
}

impl Replay {
    pub fn of(method: &str, declared_idempotent: bool) -> Replay {
        const SAFE: [&str; 6] = ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"];
        if declared_idempotent || SAFE.contains(&method) {
            Replay::Safe
        } else {
            Replay::Unsafe
        }
    }
}

/// The meaning of one attempt's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Success,
    Retryable,
    NonRetryable,
    /// A write may have been applied; replaying it blindly could apply it twice.
    SideEffectUnknown,
    /// A 2xx whose body breaks the `--require` contract: asking again would
    /// get the same answer.
    Invalid,
    /// A body that broke off, of which stdout got only a part.
    Incomplete,
    /// A 422 to a request with an idempotency key: the server saw the key
    /// before with another payload (the Idempotency-Key draft).
    KeyReused,
}

/// Statuses a non-idempotent request may still be retried on: the server
/// says it did not process the request (429 rate limited, 408 timeout
/// before reading it).
const NOT_PROCESSED: [u16; 2] = [408, 429];

pub fn classify(observation: Observation, replay: Replay, policy: &Policy) -> Verdict {
    match observation {
        Observation::Status { status, .. } if (200..400).contains(&status) => Verdict::Success,
        Observation::Status {
            should_retry: Some(false),
            ..
        } => Verdict::NonRetryable,
        // The server vouches that a retry is safe (Stripe's contract).
        Observation::Status {
            should_retry: Some(true),
            ..
        } => Verdict::Retryable,
        Observation::Status { .. } if policy.retry_all && replay == Replay::Safe => {
            Verdict::Retryable
        }
        Observation::Status { status, .. } if policy.retry_on.contains(&status) => {
            if replay == Replay::Safe || NOT_PROCESSED.contains(&status) {
                Verdict::Retryable
            } else {
                Verdict::SideEffectUnknown
            }
        }
        Observation::Status { .. } => Verdict::NonRetryable,
        Observation::Transport(Phase::BeforeSend) => Verdict::Retryable,
        Observation::Transport(Phase::AfterSend) => match replay {
            Replay::Safe => Verdict::Retryable,
            Replay::Unsafe => Verdict::SideEffectUnknown,
        },
        // Retrying cannot help; but a write may have been applied all the same.
        Observation::Transport(Phase::Final) => match replay {
            Replay::Safe if policy.retry_all => Verdict::Retryable,
            Replay::Safe => Verdict::NonRetryable,
            Replay::Unsafe => Verdict::SideEffectUnknown,
        },
        Observation::Transport(Phase::Partial) => match replay {
            Replay::Safe => Verdict::Incomplete,
            Replay::Unsafe => Verdict::SideEffectUnknown,
        },
    }
}

/// [`classify`] for a request that may carry an idempotency key (`keyed`),
/// with the Idempotency-Key draft's two answers: a 409 says the first
/// request with the key is still being processed (retried after a backoff,
/// with the same key); a 422 says the key was used with another payload
/// (never retried: the key belongs to that other request).
pub fn classify_keyed(
    observation: Observation,
    replay: Replay,
    keyed: bool,
    policy: &Policy,
) -> Verdict {
    match observation {
        Observation::Status { status: 422, .. } if keyed => Verdict::KeyReused,
        Observation::Status {
            status: 409,
            should_retry: None | Some(true),
        } if keyed => Verdict::Retryable,
        _ => classify(observation, replay, policy),
    }
}

/// Whether a write's effect is unknown after this observation: no answer
/// came after it was sent, or a retryable 5xx. `--check` is asked then,
/// before any replay (with its key or not) or any SIDE_EFFECT_UNKNOWN.
pub fn effect_unknown(observation: Observation, write: bool, policy: &Policy) -> bool {
    write
        && match observation {
            Observation::Status { status, .. } => {
                status >= 500 && policy.retry_on.contains(&status)
            }
            Observation::Transport(phase) => matches!(phase, Phase::AfterSend | Phase::Final),
        }
}

/// What a `--check` answer says of the write it looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settlement {
    /// A 2xx (meeting any `--require`): the write happened.
    Happened,
    /// 404 or 410: it did not; it may be sent again.
    NotHappened,
    /// Anything else (no answer, another status, a 2xx that breaks
    /// `--require`): nobody can tell without a person.
    Unclear,
}

/// The `--check` answer's status (`None`: it failed or timed out), and
/// whether a 2xx body met `--require`.
pub fn settle(status: Option<u16>, contract_met: bool) -> Settlement {
    match status {
        Some(200..=299) if contract_met => Settlement::Happened,
        Some(404 | 410) => Settlement::NotHappened,
        _ => Settlement::Unclear,
    }
}

/// After a check: the run ends (reconciled, or a person's decision), or
/// the write goes again as a retryable failure would, within attempts and
/// budget, with the same key if it has one.
pub fn after_check(settlement: Settlement) -> Result<Verdict, StopWhy> {
    match settlement {
        Settlement::Happened => Err(StopWhy::Reconciled),
        Settlement::NotHappened => Ok(Verdict::Retryable),
        Settlement::Unclear => Err(StopWhy::CheckUnclear),
    }
}

/// `--task-attempts`: of `allowed` requests for the task across all its
/// runs, `sent` went out before this run. How many this run may send
/// (never more than its own `--attempts`), or `None` when none are left.
pub fn task_room(attempts: u32, sent: u32, allowed: Option<u32>) -> Option<u32> {
    match allowed {
        None => Some(attempts),
        Some(allowed) if sent >= allowed => None,
        Some(allowed) => Some(attempts.min(allowed - sent)),
    }
}

/// A run that used its attempts when they were the task's last ones ends
/// NEEDS_HUMAN, not RETRY_EXHAUSTED: no rerun of the task may send more.
pub fn task_spent(why: StopWhy, sent: u32, allowed: Option<u32>) -> StopWhy {
    match (why, allowed) {
        (StopWhy::AttemptsUsed { .. }, Some(allowed)) if sent >= allowed => {
            StopWhy::TaskSpent { sent, allowed }
        }
        (why, _) => why,
    }
}

/// Where the run stands when deciding after attempt number `attempt`.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Requests sent so far, this one included.
    pub attempt: u32,
    /// Time since the run started, waits and requests together.
    pub elapsed: Duration,
}

/// Why a wait lasts what it lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitCause {
    /// The server's delay, raised to the floor, plus upward jitter.
    Server {
        server: ServerDelay,
        honoured: Duration,
    },
    /// Full-jitter exponential backoff for retry `n`.
    Backoff { n: u32 },
    /// The scope's gate (plus upward jitter) or its `--rate` slot.
    Scope { cause: scope::Wait },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wait {
    pub duration: Duration,
    pub cause: WaitCause,
}

/// Why the run ends, in the outcome's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop {
    /// How long from now the caller should not call again, when known.
    pub not_before: Option<Duration>,
    /// The specific cause, for the outcome's `reason`.
    pub why: StopWhy,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopWhy {
    Success,
    /// The answer broke the response contract (details in the record's error).
    InvalidResponse,
    /// The body broke off after part of it reached stdout (details in the
    /// record's error).
    Incomplete,
    NonRetryable,
    SideEffectUnknown,
    /// A 422 to a keyed request: the key was used with another payload.
    KeyReused,
    /// The write's effect was unknown, and `--check` found that it happened.
    Reconciled,
    /// The write's effect was unknown, and `--check` said neither yes nor no.
    CheckUnclear,
    /// The task's `--task-attempts` requests, across its runs, are spent.
    TaskSpent {
        sent: u32,
        allowed: u32,
    },
    AttemptsUsed {
        attempts: u32,
    },
    /// The server's delay exceeds `--max-wait`.
    DelayOverMaxWait {
        delay: Duration,
        max_wait: Duration,
    },
    /// The wait would end beyond the budget.
    WaitOverBudget {
        wait: Duration,
        left: Duration,
    },
    /// The scope holds requests back (its gate, `--rate`, an open breaker or
    /// another run's probe) for longer than `--max-wait` or the budget allow.
    ScopeClosed {
        cause: scope::Wait,
        wait: Duration,
        limit: Duration,
    },
    /// The run's last failure opened a breaker of its scope, and the run
    /// could not go on (attempts or budget used up).
    OpenedBreaker {
        level: scope::Level,
    },
    /// The run wanted to retry and the scope's retry budget, shared by its
    /// runs, had no retry left.
    RetryBudgetSpent,
    /// The run would have waited `wait` on the scope's gate, and `limit`
    /// runs already do (`--max-delayed`).
    QueueFull {
        wait: Duration,
        limit: u32,
    },
}

impl Stop {
    /// The exit code's kind, derived from the cause, never stored beside it.
    pub fn kind(&self) -> Kind {
        self.why.kind()
    }
}

impl StopWhy {
    /// Every cause ends as exactly one kind.
    pub fn kind(&self) -> Kind {
        match self {
            StopWhy::Success | StopWhy::Reconciled => Kind::Succeeded,
            StopWhy::KeyReused => Kind::NonRetryable,
            StopWhy::CheckUnclear | StopWhy::TaskSpent { .. } => Kind::NeedsHuman,
            StopWhy::InvalidResponse => Kind::InvalidResponse,
            StopWhy::Incomplete => Kind::Incomplete,
            StopWhy::NonRetryable => Kind::NonRetryable,
            StopWhy::SideEffectUnknown => Kind::SideEffectUnknown,
            StopWhy::AttemptsUsed { .. } | StopWhy::RetryBudgetSpent => Kind::RetryExhausted,
            StopWhy::DelayOverMaxWait { .. }
            | StopWhy::WaitOverBudget { .. }
            | StopWhy::QueueFull { .. } => Kind::BudgetExhausted,
            StopWhy::ScopeClosed { cause, .. } => match cause {
                scope::Wait::Gate(_) | scope::Wait::Rate => Kind::BudgetExhausted,
                scope::Wait::HalfOpen(_) | scope::Wait::Probe(_) => Kind::CircuitOpen,
            },
            StopWhy::OpenedBreaker { .. } => Kind::CircuitOpen,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    Wait(Wait),
    Stop(Stop),
}

/// Uniform draws in `[0, 1)` for the jitter and backoff of one decision;
/// passed in so the decision stays pure.
#[derive(Debug, Clone, Copy)]
pub struct Draw(pub f64);

pub fn next_step(
    verdict: Verdict,
    server: Option<ServerDelay>,
    progress: Progress,
    policy: &Policy,
    draw: Draw,
) -> Next {
    let stop = |why, not_before| Next::Stop(Stop { not_before, why });
    let honoured = server.map(|s| delay::honoured(s.delay, policy.floor));
    match verdict {
        Verdict::Success => return stop(StopWhy::Success, None),
        Verdict::NonRetryable => return stop(StopWhy::NonRetryable, honoured),
        Verdict::SideEffectUnknown => {
            return stop(StopWhy::SideEffectUnknown, honoured);
        }
        Verdict::Invalid => return stop(StopWhy::InvalidResponse, None),
        Verdict::Incomplete => return stop(StopWhy::Incomplete, None),
        Verdict::KeyReused => return stop(StopWhy::KeyReused, None),
        Verdict::Retryable => {}
    }
    if progress.attempt >= policy.attempts {
        let why = StopWhy::AttemptsUsed {
            attempts: progress.attempt,
        };
        return stop(why, honoured);
    }
    let left = policy.budget.saturating_sub(progress.elapsed);
    let wait = match (server, honoured) {
        (Some(server), Some(honoured)) => {
            if let Some(max_wait) = policy.max_wait.filter(|&m| honoured > m) {
                let why = StopWhy::DelayOverMaxWait {
                    delay: honoured,
                    max_wait,
                };
                return stop(why, Some(honoured));
            }
            // Jitter only ever adds, and only as much as the limits leave room for.
            let room = policy
                .max_wait
                .unwrap_or(Duration::MAX)
                .min(left.saturating_sub(Duration::from_millis(1)))
                .saturating_sub(honoured);
            let extra = delay::jitter(honoured, policy.jitter, draw.0).min(room);
            Wait {
                duration: honoured + extra,
                cause: WaitCause::Server { server, honoured },
            }
        }
        _ => {
            let n = progress.attempt;
            let chosen = policy
                .fixed_delay
                .unwrap_or_else(|| delay::backoff(n, policy.backoff, policy.backoff_max, draw.0));
            Wait {
                // Our own delay may be shortened to fit --max-wait: only the
                // server's delay is a promise we must keep.
                duration: policy.max_wait.map_or(chosen, |m| chosen.min(m)),
                cause: WaitCause::Backoff { n },
            }
        }
    };
    // A wait that ends at or after the budget leaves no time for the attempt.
    let must_wait = match wait.cause {
        WaitCause::Server { honoured, .. } => honoured,
        WaitCause::Backoff { .. } | WaitCause::Scope { .. } => wait.duration,
    };
    if must_wait >= left {
        let why = StopWhy::WaitOverBudget {
            wait: must_wait,
            left,
        };
        return stop(why, honoured);
    }
    Next::Wait(wait)
}

/// Before an attempt: what is left of the budget for it, or the end of the
/// run when nothing is (the scope's waits may have used it up).
pub fn attempt_room(policy: &Policy, elapsed: Duration) -> Result<Duration, Stop> {
    let left = policy.budget.saturating_sub(elapsed);
    if left.is_zero() {
        return Err(Stop {
            not_before: None,
            why: StopWhy::WaitOverBudget {
                wait: Duration::ZERO,
                left,
            },
        });
    }
    Ok(left)
}

/// A signal cut a retry's wait after `slept`: what the caller must still
/// wait before it calls again. Only the server's delay binds the caller;
/// a backoff was abide's own choice.
pub fn cut_wait(wait: &Wait, slept: Duration) -> Option<Duration> {
    matches!(wait.cause, WaitCause::Server { .. }).then(|| wait.duration.saturating_sub(slept))
}

/// A signal cut a scope wait of `wait` after `slept`: the gate and an open
/// breaker still hold for whoever calls next; a `--rate` slot or another
/// run's probe do not.
pub fn cut_scope_wait(cause: scope::Wait, wait: Duration, slept: Duration) -> Option<Duration> {
    matches!(cause, scope::Wait::Gate(_) | scope::Wait::HalfOpen(_))
        .then(|| wait.saturating_sub(slept))
}

/// A run that ends on a retryable failure which opened a breaker of its
/// scope ends CIRCUIT_OPEN: its caller must not come back before the breaker
/// half-opens, `half_open_in` from now (nor before the server's delay).
pub fn opened_breaker(next: Next, opened: Option<(Duration, scope::Level)>) -> Next {
    match (next, opened) {
        (Next::Stop(stop), Some((half_open_in, level)))
            if matches!(
                stop.why,
                StopWhy::AttemptsUsed { .. } | StopWhy::WaitOverBudget { .. }
            ) =>
        {
            Next::Stop(Stop {
                not_before: Some(
                    stop.not_before
                        .map_or(half_open_in, |n| n.max(half_open_in)),
                ),
                why: StopWhy::OpenedBreaker { level },
            })
        }
        (next, _) => next,
    }
}

/// The run chose to retry after `next`'s wait and the scope's retry budget
/// refused, holding a retry again `refills_in` from now: the run ends at
/// once, RETRY_EXHAUSTED, and its caller comes back when the bucket
/// refills, and never before a delay the server gave.
pub fn budget_refused(next: Next, refills_in: Option<Duration>) -> Next {
    match (next, refills_in) {
        (Next::Wait(wait), Some(refills_in)) => {
            let server = match wait.cause {
                WaitCause::Server { honoured, .. } => honoured,
                WaitCause::Backoff { .. } | WaitCause::Scope { .. } => Duration::ZERO,
            };
            Next::Stop(Stop {
                not_before: Some(refills_in.max(server)),
                why: StopWhy::RetryBudgetSpent,
            })
        }
        (next, _) => next,
    }
}

/// Before an attempt, the scope says wait `wait`: wait it (with upward
/// jitter for a gate or a half-open moment, so that a herd released together
/// arrives spread out; exactly for a `--rate` slot), or end now if it does
/// not fit. Behind another run's probe the wait is "until the probe ends",
/// at most `wait`: it is taken as far as the limits allow, and the run ends
/// only when they allow nothing more.
pub fn scope_step(
    cause: scope::Wait,
    wait: Duration,
    elapsed: Duration,
    policy: &Policy,
    draw: Draw,
) -> Next {
    let left = policy.budget.saturating_sub(elapsed);
    let limit = policy.max_wait.map_or(left, |m| m.min(left));
    // Room for the attempt after the wait.
    let room = limit.saturating_sub(Duration::from_millis(1));
    let stop = || {
        Next::Stop(Stop {
            not_before: Some(wait),
            why: StopWhy::ScopeClosed { cause, wait, limit },
        })
    };
    let (duration, jitter) = match cause {
        scope::Wait::Probe(_) if room.is_zero() => return stop(),
        scope::Wait::Probe(_) => (wait.min(room), false),
        _ if policy.max_wait.is_some_and(|m| wait > m) || wait >= left => return stop(),
        scope::Wait::Gate(_) | scope::Wait::HalfOpen(_) => (wait, true),
        scope::Wait::Rate => (wait, false),
    };
    let extra = if jitter {
        delay::jitter(wait, policy.jitter, draw.0).min(room.saturating_sub(wait))
    } else {
        Duration::ZERO
    };
    Next::Wait(Wait {
        duration: duration + extra,
        cause: WaitCause::Scope { cause },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::delay::DelaySource;

    fn status(status: u16) -> Observation {
        Observation::Status {
            status,
            should_retry: None,
        }
    }

    #[test]
    fn classification_table() {
        use Observation::Transport;
        use Phase::*;
        use Replay::*;
        use Verdict::*;
        let policy = Policy::default();
        let said = |status, yes| Observation::Status {
            status,
            should_retry: Some(yes),
        };
        let rows = [
            (status(200), Safe, Success),
            (status(204), Unsafe, Success),
            (status(301), Safe, Success),
            (status(304), Unsafe, Success),
            (status(429), Safe, Retryable),
            (status(429), Unsafe, Retryable),
            (status(408), Unsafe, Retryable),
            (status(503), Safe, Retryable),
            (status(500), Safe, Retryable),
            (status(502), Safe, Retryable),
            (status(504), Safe, Retryable),
            (status(503), Unsafe, SideEffectUnknown),
            (status(500), Unsafe, SideEffectUnknown),
            (status(400), Safe, NonRetryable),
            (status(401), Safe, NonRetryable),
            (status(403), Unsafe, NonRetryable),
            (status(404), Safe, NonRetryable),
            (status(422), Safe, NonRetryable),
            (status(501), Safe, NonRetryable),
            (status(505), Safe, NonRetryable),
            (status(100), Safe, NonRetryable),
            (said(400, true), Safe, Retryable),
            (said(500, true), Unsafe, Retryable),
            (said(503, false), Safe, NonRetryable),
            (said(429, false), Safe, NonRetryable),
            (said(200, false), Safe, Success),
            (Transport(BeforeSend), Safe, Retryable),
            (Transport(BeforeSend), Unsafe, Retryable),
            (Transport(AfterSend), Safe, Retryable),
            (Transport(AfterSend), Unsafe, SideEffectUnknown),
            (Transport(Final), Safe, NonRetryable),
            (Transport(Final), Unsafe, SideEffectUnknown),
            (Transport(Partial), Safe, Incomplete),
            (Transport(Partial), Unsafe, SideEffectUnknown),
        ];
        for (observation, replay, verdict) in rows {
            assert_eq!(
                classify(observation, replay, &policy),
                verdict,
                "{observation:?} {replay:?}"
            );
        }
    }

    #[test]
    fn keyed_requests_follow_the_idempotency_key_draft() {
        use Replay::*;
        use Verdict::*;
        let p = Policy::default();
        let said = |status, yes| Observation::Status {
            status,
            should_retry: Some(yes),
        };
        #[rustfmt::skip]
        let rows = [
            ("409 with a key: still processing, retried", status(409), Safe, true, Retryable),
            ("409 with a key, server says no", said(409, false), Safe, true, NonRetryable),
            ("409 without a key: a conflict", status(409), Safe, false, NonRetryable),
            ("422 with a key: used with another payload", status(422), Safe, true, KeyReused),
            ("422 with a key, even if the server says retry", said(422, true), Safe, true, KeyReused),
            ("422 without a key: a bad request", status(422), Unsafe, false, NonRetryable),
            ("503 with a key: as before", status(503), Safe, true, Retryable),
            ("201 with a key", status(201), Safe, true, Success),
        ];
        for (name, observation, replay, keyed, verdict) in rows {
            assert_eq!(
                classify_keyed(observation, replay, keyed, &p),
                verdict,
                "{name}"
            );
        }
        let stop = next_step(KeyReused, None, at(1, 0), &p, Draw(0.5));
        assert_eq!(outcome(stop), Err((Kind::NonRetryable, None)));
    }

    #[test]
    fn checks_settle_uncertain_writes() {
        use Phase::*;
        use Settlement::*;
        let p = Policy::default();
        #[rustfmt::skip]
        let uncertain = [
            ("503 to a write", status(503), true, true),
            ("500 to a write", status(500), true, true),
            ("no answer after a write was sent", Observation::Transport(AfterSend), true, true),
            ("a final failure after sending", Observation::Transport(Final), true, true),
            ("nothing sent: nothing to check", Observation::Transport(BeforeSend), true, false),
            ("a 2xx body broke off: the write happened", Observation::Transport(Partial), true, false),
            ("a 501 is not retryable: it was refused", status(501), true, false),
            ("429: not processed", status(429), true, false),
            ("a read is never checked", status(503), false, false),
        ];
        for (name, observation, write, expected) in uncertain {
            assert_eq!(effect_unknown(observation, write, &p), expected, "{name}");
        }
        #[rustfmt::skip]
        let answers = [
            ("200: it happened", Some(200), true, Happened),
            ("204: it happened", Some(204), true, Happened),
            ("200 breaking --require: unclear", Some(200), false, Unclear),
            ("404: it did not", Some(404), true, NotHappened),
            ("410: it did not", Some(410), true, NotHappened),
            ("500: unclear", Some(500), true, Unclear),
            ("403: unclear", Some(403), true, Unclear),
            ("302: unclear", Some(302), true, Unclear),
            ("no answer: unclear", None, true, Unclear),
        ];
        for (name, status, met, expected) in answers {
            assert_eq!(settle(status, met), expected, "{name}");
        }
        assert_eq!(after_check(Happened), Err(StopWhy::Reconciled));
        assert_eq!(after_check(NotHappened), Ok(Verdict::Retryable));
        assert_eq!(after_check(Unclear), Err(StopWhy::CheckUnclear));
        assert_eq!(StopWhy::Reconciled.kind(), Kind::Succeeded);
        assert_eq!(StopWhy::CheckUnclear.kind(), Kind::NeedsHuman);
    }

    #[test]
    fn a_task_spends_its_attempts_across_runs() {
        let used = StopWhy::AttemptsUsed { attempts: 2 };
        #[rustfmt::skip]
        let rooms = [
            ("no task budget: the run's own attempts", 4, 9, None, Some(4)),
            ("fewer left than --attempts", 4, 3, Some(5), Some(2)),
            ("more left than --attempts", 4, 0, Some(10), Some(4)),
            ("spent", 4, 5, Some(5), None),
            ("overspent by a crashed run", 4, 7, Some(5), None),
        ];
        for (name, attempts, sent, allowed, expected) in rooms {
            assert_eq!(task_room(attempts, sent, allowed), expected, "{name}");
        }
        assert_eq!(
            task_spent(used.clone(), 5, Some(5)),
            StopWhy::TaskSpent {
                sent: 5,
                allowed: 5
            }
        );
        assert_eq!(task_spent(used.clone(), 4, Some(5)), used);
        assert_eq!(task_spent(used.clone(), 9, None), used);
        // A more specific ending stays.
        assert_eq!(
            task_spent(StopWhy::SideEffectUnknown, 5, Some(5)),
            StopWhy::SideEffectUnknown
        );
        assert_eq!(
            StopWhy::TaskSpent {
                sent: 5,
                allowed: 5
            }
            .kind(),
            Kind::NeedsHuman
        );
    }

    #[test]
    fn retry_on_is_configurable() {
        let policy = Policy {
            retry_on: vec![409],
            ..Policy::default()
        };
        assert_eq!(
            classify(status(409), Replay::Safe, &policy),
            Verdict::Retryable
        );
        assert_eq!(
            classify(status(503), Replay::Safe, &policy),
            Verdict::NonRetryable
        );
        // 429 on a POST is retried only when 429 is configured as retryable.
        assert_eq!(
            classify(status(429), Replay::Unsafe, &policy),
            Verdict::NonRetryable
        );
    }

    #[test]
    fn retry_all_errors_retries_what_is_safe_to_replay_only() {
        let policy = Policy {
            retry_all: true,
            ..Policy::default()
        };
        for (observation, replay, verdict) in [
            (status(404), Replay::Safe, Verdict::Retryable),
            (status(404), Replay::Unsafe, Verdict::NonRetryable),
            (status(503), Replay::Unsafe, Verdict::SideEffectUnknown),
            (status(200), Replay::Safe, Verdict::Success),
            (
                Observation::Transport(Phase::Final),
                Replay::Safe,
                Verdict::Retryable,
            ),
            (
                Observation::Transport(Phase::Final),
                Replay::Unsafe,
                Verdict::SideEffectUnknown,
            ),
        ] {
            assert_eq!(
                classify(observation, replay, &policy),
                verdict,
                "{observation:?} {replay:?}"
            );
        }
    }

    #[test]
    fn safe_methods() {
        for m in ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"] {
            assert_eq!(Replay::of(m, false), Replay::Safe, "{m}");
        }
        for m in ["POST", "PATCH", "CONNECT", "PURGE", "get"] {
            assert_eq!(Replay::of(m, false), Replay::Unsafe, "{m}");
            assert_eq!(Replay::of(m, true), Replay::Safe, "{m}");
        }
    }

    fn ra(secs: f64) -> Option<ServerDelay> {
        Some(ServerDelay {
            delay: Duration::from_secs_f64(secs),
            source: DelaySource::RetryAfterSeconds,
        })
    }

    fn at(attempt: u32, elapsed_ms: u64) -> Progress {
        Progress {
            attempt,
            elapsed: Duration::from_millis(elapsed_ms),
        }
    }

    /// Wait in ms, or the outcome kind and not_before in ms.
    type Expected = Result<u128, (Kind, Option<u128>)>;

    fn outcome(next: Next) -> Expected {
        match next {
            Next::Wait(w) => Ok(w.duration.as_millis()),
            Next::Stop(s) => Err((s.kind(), s.not_before.map(|d| d.as_millis()))),
        }
    }

    #[test]
    fn next_step_table() {
        use Kind::{BudgetExhausted, RetryExhausted, Succeeded};
        use Verdict::Retryable;
        const NR: Verdict = Verdict::NonRetryable;
        const SEU: Verdict = Verdict::SideEffectUnknown;
        const SUCCESS: Verdict = Verdict::Success;
        let p = Policy::default();
        let no_jitter = Policy {
            jitter: 0.0,
            ..Policy::default()
        };
        let capped = Policy {
            max_wait: Some(Duration::from_secs(5)),
            ..Policy::default()
        };
        let fixed = Policy {
            fixed_delay: Some(Duration::from_secs(2)),
            ..Policy::default()
        };
        let d = Draw;
        #[rustfmt::skip]
        let rows: Vec<(&str, Next, Expected)> = vec![
            ("success ends", next_step(SUCCESS, None, at(1, 0), &p, d(0.5)), Err((Succeeded, None))),
            ("401 ends", next_step(NR, None, at(1, 0), &p, d(0.5)), Err((Kind::NonRetryable, None))),
            ("unknown write ends", next_step(SEU, None, at(1, 0), &p, d(0.5)), Err((Kind::SideEffectUnknown, None))),
            ("broken contract ends", next_step(Verdict::Invalid, None, at(1, 0), &p, d(0.5)), Err((Kind::InvalidResponse, None))),
            ("Retry-After replaces backoff", next_step(Retryable, ra(3.0), at(1, 0), &no_jitter, d(0.9)), Ok(3000)),
            ("jitter adds 10% at most", next_step(Retryable, ra(3.0), at(1, 0), &p, d(0.5)), Ok(3150)),
            ("Retry-After 0 waits the floor", next_step(Retryable, ra(0.0), at(1, 0), &no_jitter, d(0.5)), Ok(1000)),
            ("short delay waits the floor", next_step(Retryable, ra(0.2), at(1, 0), &no_jitter, d(0.5)), Ok(1000)),
            ("no delay: backoff retry 1", next_step(Retryable, None, at(1, 0), &p, d(0.5)), Ok(250)),
            ("no delay: backoff retry 3", next_step(Retryable, None, at(3, 0), &p, d(0.5)), Ok(1000)),
            ("attempts used", next_step(Retryable, None, at(4, 0), &p, d(0.5)), Err((RetryExhausted, None))),
            ("attempts used keeps delay", next_step(Retryable, ra(7.0), at(4, 0), &p, d(0.5)), Err((RetryExhausted, Some(7000)))),
            ("delay over max-wait", next_step(Retryable, ra(20.0), at(1, 0), &capped, d(0.5)), Err((BudgetExhausted, Some(20000)))),
            ("delay at max-wait", next_step(Retryable, ra(5.0), at(1, 0), &capped, d(0.9)), Ok(5000)),
            ("delay over budget", next_step(Retryable, ra(120.0), at(1, 0), &p, d(0.5)), Err((BudgetExhausted, Some(120000)))),
            ("delay over what is left", next_step(Retryable, ra(10.0), at(2, 55_000), &p, d(0.5)), Err((BudgetExhausted, Some(10000)))),
            ("jitter clipped to budget", next_step(Retryable, ra(10.0), at(2, 49_500), &p, d(0.9)), Ok(10499)),
            ("backoff over budget", next_step(Retryable, None, at(3, 59_900), &p, d(0.9)), Err((BudgetExhausted, None))),
            ("backoff shortened by max-wait", next_step(Retryable, None, at(3, 0), &Policy { max_wait: Some(Duration::from_millis(300)), ..Policy::default() }, d(0.9)), Ok(300)),
            ("--retry-delay replaces backoff", next_step(Retryable, None, at(3, 0), &fixed, d(0.1)), Ok(2000)),
            ("--retry-delay under Retry-After", next_step(Retryable, ra(3.0), at(1, 0), &Policy { jitter: 0.0, ..fixed.clone() }, d(0.1)), Ok(3000)),
            ("huge delay", next_step(Retryable, Some(ServerDelay { delay: delay::MAX_SERVER_DELAY, source: DelaySource::RetryAfterSeconds }), at(1, 0), &p, d(0.5)), Err((BudgetExhausted, Some(delay::MAX_SERVER_DELAY.as_millis())))),
        ];
        for (name, next, expected) in rows {
            assert_eq!(outcome(next), expected, "{name}");
        }
    }

    #[test]
    fn scope_waits() {
        use scope::{GateCause, Wait as W};
        let p = Policy::default();
        let gate = W::Gate(GateCause::RetryAfter);
        let s = Duration::from_secs;
        let ms = |next: Next| match next {
            Next::Wait(w) => Ok(w.duration.as_millis()),
            Next::Stop(stop) => Err((stop.kind(), stop.not_before.map(|d| d.as_millis()))),
        };
        assert_eq!(ms(scope_step(gate, s(10), s(0), &p, Draw(0.5))), Ok(10_500));
        assert_eq!(
            ms(scope_step(W::Rate, s(10), s(0), &p, Draw(0.5))),
            Ok(10_000)
        );
        assert_eq!(
            ms(scope_step(gate, s(10), s(55), &p, Draw(0.5))),
            Err((Kind::BudgetExhausted, Some(10_000)))
        );
        let capped = Policy {
            max_wait: Some(s(5)),
            ..Policy::default()
        };
        assert_eq!(
            ms(scope_step(gate, s(6), s(0), &capped, Draw(0.5))),
            Err((Kind::BudgetExhausted, Some(6000)))
        );
        // Jitter never pushes past --max-wait.
        assert_eq!(
            ms(scope_step(gate, s(5), s(0), &capped, Draw(0.9))),
            Ok(5000)
        );
    }

    #[test]
    fn breaker_waits() {
        use Kind::CircuitOpen;
        use scope::{Level, Wait as W};
        let p = Policy::default();
        let capped = Policy {
            max_wait: Some(Duration::from_secs(5)),
            ..Policy::default()
        };
        let half_open = W::HalfOpen(Level::Scope);
        let probe = W::Probe(Level::Endpoint);
        let s = Duration::from_secs;
        let ms = |next: Next| match next {
            Next::Wait(w) => Ok(w.duration.as_millis()),
            Next::Stop(stop) => Err((stop.kind(), stop.not_before.map(|d| d.as_millis()))),
        };
        #[rustfmt::skip]
        let rows: Vec<(&str, Next, Expected)> = vec![
            ("half-open moment that fits: waited, plus jitter", scope_step(half_open, s(2), s(0), &p, Draw(0.5)), Ok(2_100)),
            ("half-open beyond the budget: CIRCUIT_OPEN now", scope_step(half_open, s(8), s(55), &p, Draw(0.5)), Err((CircuitOpen, Some(8_000)))),
            ("half-open beyond --max-wait: CIRCUIT_OPEN now", scope_step(half_open, s(6), s(0), &capped, Draw(0.5)), Err((CircuitOpen, Some(6_000)))),
            ("behind a probe: until it ends", scope_step(probe, s(31), s(0), &p, Draw(0.9)), Ok(31_000)),
            ("behind a probe: as long as the budget allows", scope_step(probe, s(31), s(50), &p, Draw(0.9)), Ok(9_999)),
            ("behind a probe: as long as --max-wait allows", scope_step(probe, s(31), s(0), &capped, Draw(0.9)), Ok(4_999)),
            ("behind a probe, no time left: CIRCUIT_OPEN", scope_step(probe, s(31), s(60), &p, Draw(0.9)), Err((CircuitOpen, Some(31_000)))),
        ];
        for (name, next, expected) in rows {
            assert_eq!(ms(next), expected, "{name}");
        }
    }

    #[test]
    fn a_run_that_opened_a_breaker_ends_circuit_open() {
        use scope::Level;
        let p = Policy::default();
        let opened = Some((Duration::from_secs(2), Level::Endpoint));
        let after = |next| outcome(opened_breaker(next, opened));
        let retryable = Verdict::Retryable;
        #[rustfmt::skip]
        let rows: Vec<(&str, Expected, Expected)> = vec![
            ("attempts used: the half-open moment", after(next_step(retryable, None, at(4, 0), &p, Draw(0.5))), Err((Kind::CircuitOpen, Some(2_000)))),
            ("attempts used: the server's longer delay", after(next_step(retryable, ra(7.0), at(4, 0), &p, Draw(0.5))), Err((Kind::CircuitOpen, Some(7_000)))),
            ("budget used: the half-open moment", after(next_step(retryable, None, at(3, 59_900), &p, Draw(0.9))), Err((Kind::CircuitOpen, Some(2_000)))),
            ("attempts left: it goes on", after(next_step(retryable, None, at(1, 0), &p, Draw(0.5))), Ok(250)),
            ("a 401 stays a 401", after(next_step(Verdict::NonRetryable, None, at(1, 0), &p, Draw(0.5))), Err((Kind::NonRetryable, None))),
        ];
        for (name, got, expected) in rows {
            assert_eq!(got, expected, "{name}");
        }
    }

    #[test]
    fn a_spent_retry_budget_ends_the_run_at_once() {
        let p = Policy::default();
        let refills = Some(Duration::from_secs(3));
        let after = |next| outcome(budget_refused(next, refills));
        let retryable = Verdict::Retryable;
        #[rustfmt::skip]
        let rows: Vec<(&str, Expected, Expected)> = vec![
            ("a backoff: back when the bucket refills", after(next_step(retryable, None, at(1, 0), &p, Draw(0.5))), Err((Kind::RetryExhausted, Some(3_000)))),
            ("a longer server delay: back after it", after(next_step(retryable, ra(7.0), at(1, 0), &p, Draw(0.5))), Err((Kind::RetryExhausted, Some(7_000)))),
            ("a shorter server delay: back at the refill", after(next_step(retryable, ra(1.0), at(1, 0), &p, Draw(0.5))), Err((Kind::RetryExhausted, Some(3_000)))),
            ("attempts used: as it was", after(next_step(retryable, None, at(4, 0), &p, Draw(0.5))), Err((Kind::RetryExhausted, None))),
            ("a 401 stays a 401", after(next_step(Verdict::NonRetryable, None, at(1, 0), &p, Draw(0.5))), Err((Kind::NonRetryable, None))),
            ("budget left: it goes on", outcome(budget_refused(next_step(retryable, None, at(1, 0), &p, Draw(0.5)), None)), Ok(250)),
        ];
        for (name, got, expected) in rows {
            assert_eq!(got, expected, "{name}");
        }
    }

    fn scope_of(policy: &Policy, threshold: u32, cooldown: Option<Duration>) -> scope::ScopePolicy {
        let (breaker_first, breaker_cooldown) = policy.breaker_intervals(cooldown);
        scope::ScopePolicy {
            rate_interval: None,
            breaker_threshold: threshold,
            breaker_first,
            breaker_cooldown,
            probe_ttl: Duration::ZERO,
            retry_budget: None,
            max_delayed: None,
        }
    }

    #[test]
    fn an_open_breaker_never_waits_longer_than_the_runs_own_backoff_by_default() {
        let s = Duration::from_secs_f64;
        let base = Policy::default();
        // A policy and a --breaker-cooldown, and the intervals in seconds.
        type Row<'a> = (&'a str, Policy, Option<Duration>, (f64, f64));
        #[rustfmt::skip]
        let rows: Vec<Row> = vec![
            ("the backoff's first step and ceiling", base.clone(), None, (0.5, 8.0)),
            ("--retry-delay: that, always", Policy { fixed_delay: Some(s(2.0)), ..base.clone() }, None, (2.0, 2.0)),
            ("--max-wait shortens both", Policy { max_wait: Some(s(1.0)), ..base.clone() }, None, (0.5, 1.0)),
            ("--breaker-cooldown, as given", base.clone(), Some(s(30.0)), (0.5, 30.0)),
        ];
        for (name, policy, cooldown, (first, longest)) in rows {
            assert_eq!(
                policy.breaker_intervals(cooldown),
                (s(first), s(longest)),
                "{name}"
            );
        }
        // Opened after the threshold's failures and doubled per failed probe,
        // its interval at retry n never exceeds the run's own ceiling there.
        let (first, longest) = base.breaker_intervals(None);
        for threshold in 1..=5 {
            for n in threshold..40 {
                let interval = delay::ceiling(n - threshold + 1, first, longest);
                assert!(
                    interval <= base.longest_own_wait(n),
                    "retry {n}, --breaker {threshold}"
                );
            }
        }
    }

    #[test]
    fn the_default_budget_holds_the_attempts_asked() {
        let s = Duration::from_secs_f64;
        let base = Policy::default();
        let ten = s(10.0);
        let with = |attempts| Policy {
            attempts,
            ..base.clone()
        };
        // 20 attempts: ceilings 0.5, 1, 2, 4, then 8 s fifteen times (127.5 s),
        // plus 10 % jitter (12.75 s), plus 10 s to connect each (200 s).
        #[rustfmt::skip]
        let rows: Vec<(&str, Duration, f64)> = vec![
            ("the default attempts: 60 s", default_budget(&base, &scope_of(&base, 5, None), ten), 60.0),
            ("one attempt: 60 s", default_budget(&with(1), &scope_of(&with(1), 5, None), ten), 60.0),
            ("6 attempts: just over", default_budget(&with(6), &scope_of(&with(6), 5, None), ten), 15.5 * 1.1 + 60.0),
            ("20 attempts", default_budget(&with(20), &scope_of(&with(20), 5, None), ten), 140.25 + 200.0),
            ("20 attempts, 1 s to connect", default_budget(&with(20), &scope_of(&with(20), 5, None), s(1.0)), 140.25 + 20.0),
            ("20 attempts, no breaker", default_budget(&with(20), &scope_of(&with(20), 0, Some(s(60.0))), ten), 140.25 + 200.0),
            ("--retry-delay 2s", {
                let p = Policy { fixed_delay: Some(s(2.0)), ..with(20) };
                default_budget(&p, &scope_of(&p, 5, None), ten)
            }, 19.0 * 2.2 + 200.0),
            ("--max-wait 1s", {
                let p = Policy { max_wait: Some(s(1.0)), ..with(20) };
                default_budget(&p, &scope_of(&p, 5, None), ten)
            }, 0.55 + 18.0 * 1.1 + 200.0),
            // 0.5 … 32 s (63.5 s, jitter 5.15 s), then 60 s twelve times, jitter at most 2 s.
            ("--breaker-cooldown 60s: the breaker's longer waits", default_budget(&with(20), &scope_of(&with(20), 5, Some(s(60.0))), ten), 63.5 + 5.15 + 12.0 * 62.0 + 200.0),
            ("--rate 1/m", {
                let p = with(3);
                let scope = scope::ScopePolicy { rate_interval: Some(s(60.0)), ..scope_of(&p, 5, None) };
                default_budget(&p, &scope, ten)
            }, 2.0 * 62.0 + 30.0),
            ("any number of attempts: at most a year", default_budget(&with(u32::MAX), &scope_of(&with(u32::MAX), 5, None), ten), 365.0 * 86_400.0),
        ];
        for (name, got, expected) in rows {
            assert!(
                (got.as_secs_f64() - expected).abs() < 0.001,
                "{name}: {got:?}, not {expected} s"
            );
        }
        // Many attempts: the steady retries are counted without a loop.
        let steady = delay::CEILING_STEADY;
        let many = default_budget(
            &with(steady + 100),
            &scope_of(&with(steady + 100), 5, None),
            ten,
        );
        let fewer = default_budget(&with(steady), &scope_of(&with(steady), 5, None), ten);
        assert!(((many - fewer).as_secs_f64() - 100.0 * (8.8 + 10.0)).abs() < 0.001);
    }
}
