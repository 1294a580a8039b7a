//! What one scope (an API key, an origin) remembers across processes, and the
//! pure rules over it: the Retry-After gate, the quota rate-limit headers
//! say is left (no more requests let go than it), `--rate` (the generic
//! cell rate algorithm, one timestamp per scope), and
//! the circuit breakers (the scope's, and one per failing endpoint) with
//! their single half-open probe. Times are wall-clock milliseconds since the
//! epoch, because they are shared between processes.

use crate::clock::{LATEST, Millis, ceil_ms};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::rules::attempt::{Observation, Phase};
use crate::rules::delay::MAX_SERVER_DELAY;
use crate::rules::pace::Quota;
use crate::rules::retry_budget::{self, BudgetPolicy, RetryBudget};

/// The spacing `--rate` keeps between two requests of the scope: the rate's
/// own interval plus a margin for the jitter between letting a request go
/// and it reaching the server (waking, connecting, writing: a few
/// milliseconds, tens on a loaded machine). Without it a server limiter set
/// to the same rate with no burst (nginx `limit_req`, the most common one)
/// sees two requests 497 ms apart at 2/s and refuses one in four; with 2 %
/// (10 ms at 2/s) it still refused one in 60 while two compilers shared the
/// machine, a request arriving 24 ms after it was let go. The margin is 5 %
/// of the interval, at least 1 ms and at most 50 ms: 25 ms at 2/s, 2.5 ms at
/// 20/s, a price paid where requests are far apart and jitter is small
/// beside them.
pub fn spacing(interval: Duration) -> Duration {
    let margin = (interval / 20).clamp(Duration::from_millis(1), Duration::from_millis(50));
    interval + margin
}

/// The spacing of a batch's `--rate`, whose requests are spaced again in
/// its process just before they are written (`edge::net::WireSpacing`):
/// the jitter margin is not needed then, only a millisecond for limiters
/// that count whole ones.
pub fn wire_spacing(interval: Duration) -> Duration {
    interval + Duration::from_millis(1)
}

/// One scope's shared record. Unknown or missing fields default, so older
/// and newer versions of abide can share a state directory.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ScopeState {
    /// The scope's name (`--scope`, else the origin), for `abide state`:
    /// names are not secrets; files and keys are still named by its hash.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// No request of the scope before this.
    pub next_allowed_at: Option<Millis>,
    /// Why the gate is closed, for the outcome's reason.
    pub gate_cause: Option<GateCause>,
    /// The process whose lesson last moved the gate: a run that meets its own
    /// Retry-After again at the gate was not held by another request.
    pub gate_by: Option<String>,
    /// `--rate`: the theoretical arrival time of the next request.
    pub rate_tat: Option<Millis>,
    /// `--rate`: the latest request of the scope that was let go.
    pub rate_last: Option<LetGo>,
    /// The scope's breaker: its hosts failing before a request reached them
    /// (refused, unreachable, timed-out or TLS-failed connections).
    pub breaker: Breaker,
    /// The breakers of single endpoints (a method and a path) whose answers
    /// failed: one failing endpoint does not hold back the healthy ones.
    pub endpoints: Vec<EndpointBreaker>,
    /// Requests (by fingerprint) that keep failing the same way.
    pub repeats: Vec<Repeat>,
    /// Idempotency keys kept per task (`--task`), by hashed task id.
    pub tasks: Vec<TaskKey>,
    /// The scope's retry budget (`--retry-budget`), shared by its runs.
    pub retry_budget: RetryBudget,
    /// The runs waiting on the gate (`--max-delayed`).
    pub delayed: Vec<Delayed>,
    /// `--rate auto`: the pace learned from the scope's answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pace: Option<crate::rules::pace::Pace>,
    /// The server's word on its quota, less the requests let go since.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meter: Option<Meter>,
}

/// What is left of the server's quota (its `RateLimit` fields and the
/// like): the requests it still takes until `reset`, less those the scope
/// let go since it said so. None goes beyond it until `reset`, so that
/// requests admitted while the answer that used the quota up was on its
/// way cannot follow it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meter {
    pub left: u64,
    pub reset: Millis,
}

impl Meter {
    fn live(&self, now: Millis) -> bool {
        self.reset > now
    }
}

/// A run waiting on the scope's gate, until when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delayed {
    pub holder: String,
    pub until: Millis,
}

/// A waiter still counts this long past its gate's moment: the upward
/// jitter of a gate wait is at most 2 s, and it sends right after.
const QUEUE_GRACE: Duration = Duration::from_millis(2_500);

/// A request that ended NON_RETRYABLE or INVALID_RESPONSE with the same
/// error `count` times in a row, last at `last`. The fingerprint and the
/// error are hashes: no request or answer is kept in clear.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repeat {
    pub fingerprint: String,
    /// The error's identity (`canonical::error_identity`), hashed; empty in
    /// records of older versions.
    #[serde(default)]
    pub error: String,
    pub count: u32,
    pub last: Millis,
}

/// A request that `--rate` let go: by which process, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LetGo {
    pub by: String,
    pub at: Millis,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskKey {
    pub task: String,
    pub key: String,
    pub expires: Millis,
    /// The fingerprint of the request the key belongs to: a task id names
    /// one write, and a different request under it is refused. Missing in
    /// records of older versions, which bind it on their next run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// Requests the task's runs have sent, for `--task-attempts`.
    #[serde(default)]
    pub sent: u32,
    /// The provider's id for what the task's write created, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
}

/// A task kept for another request than the one now run under its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskDiffers;

/// Identical failures older than this no longer count against a request.
pub const REPEAT_WINDOW: Duration = Duration::from_secs(600);
/// Enough distinct failing requests per scope for any agent; the oldest go first.
const MAX_REPEATS: usize = 64;
/// Live task keys per scope: a bound on the record, which every run of the
/// scope reads (about 200 bytes each, with the fingerprint). A full scope
/// refuses new tasks, never forgets a key before its TTL.
pub const MAX_TASKS: usize = 1024;

/// How many times in a row this request has failed the same way recently.
pub fn repeats(state: &ScopeState, fingerprint: &str, now: Millis) -> u32 {
    state
        .repeats
        .iter()
        .find(|r| {
            r.fingerprint == fingerprint && now.saturating_sub(r.last) <= ceil_ms(REPEAT_WINDOW)
        })
        .map_or(0, |r| r.count)
}

/// After a run of this request: with `failure` (the error's identity),
/// one more identical failure in a row, or the first of a new error; else a
/// clean slate. Three different errors are three first failures, not one
/// failure repeated.
pub fn remember(state: &mut ScopeState, fingerprint: &str, failure: Option<&str>, now: Millis) {
    let same = state
        .repeats
        .iter()
        .find(|r| r.fingerprint == fingerprint && Some(r.error.as_str()) == failure)
        .map_or(0, |_| repeats(state, fingerprint, now));
    state.repeats.retain(|r| {
        r.fingerprint != fingerprint && now.saturating_sub(r.last) <= ceil_ms(REPEAT_WINDOW)
    });
    if let Some(error) = failure {
        state.repeats.push(Repeat {
            fingerprint: fingerprint.to_string(),
            error: error.to_string(),
            count: same + 1,
            last: now,
        });
        let excess = state.repeats.len().saturating_sub(MAX_REPEATS);
        state.repeats.drain(..excess);
    }
}

/// The task's idempotency key: the one kept from an earlier run, else `fresh`,
/// kept from now on for `ttl`. `None` when the scope already keeps
/// [`MAX_TASKS`] live keys: forgetting one to make room would let that
/// task's rerun send a new key.
pub fn task_key(
    state: &mut ScopeState,
    task: &str,
    fresh: &str,
    now: Millis,
    ttl: Duration,
) -> Option<String> {
    state.tasks.retain(|t| t.expires > now);
    if let Some(kept) = state.tasks.iter().find(|t| t.task == task) {
        return Some(kept.key.clone());
    }
    if state.tasks.len() >= MAX_TASKS {
        return None;
    }
    state.tasks.push(TaskKey {
        task: task.to_string(),
        key: fresh.to_string(),
        expires: now.saturating_add(ceil_ms(ttl)).min(LATEST),
        ..TaskKey::default()
    });
    Some(fresh.to_string())
}

/// Binds the task kept by [`task_key`] to the request's `fingerprint` (a
/// task of an older version takes this one): its record, or
/// [`TaskDiffers`] when it was kept for another request.
pub fn bind_task(
    state: &mut ScopeState,
    task: &str,
    fingerprint: &str,
) -> Result<Option<TaskKey>, TaskDiffers> {
    let Some(kept) = state.tasks.iter_mut().find(|t| t.task == task) else {
        return Ok(None);
    };
    match &kept.fingerprint {
        Some(bound) if bound != fingerprint => Err(TaskDiffers),
        Some(_) => Ok(Some(kept.clone())),
        None => {
            kept.fingerprint = Some(fingerprint.to_string());
            Ok(Some(kept.clone()))
        }
    }
}

/// `sent` more requests of the task (each is counted before it is sent),
/// and the provider's id of what it created once a run learned it.
/// One more request of `task`, unless it has sent `allowed` already:
/// taken before the request goes, under the record's lock, so that runs of
/// one task started together share its bound. `Ok` with the requests sent
/// this one included, `Err` with those sent; `None` when the record keeps
/// no such task.
pub fn task_ticket(
    state: &mut ScopeState,
    task: &str,
    allowed: Option<u32>,
) -> Option<Result<u32, u32>> {
    let kept = state.tasks.iter_mut().find(|t| t.task == task)?;
    Some(match allowed {
        Some(allowed) if kept.sent >= allowed => Err(kept.sent),
        _ => {
            kept.sent = kept.sent.saturating_add(1);
            Ok(kept.sent)
        }
    })
}

pub fn task_ran(state: &mut ScopeState, task: &str, sent: u32, operation_id: Option<&str>) {
    if let Some(kept) = state.tasks.iter_mut().find(|t| t.task == task) {
        kept.sent = kept.sent.saturating_add(sent);
        if let Some(id) = operation_id {
            kept.operation_id = Some(id.to_string());
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateCause {
    /// A server's Retry-After (or retry-after-ms) to some process of the scope.
    RetryAfter,
    /// Rate-limit header fields said the quota was used up.
    QuotaExhausted,
    /// A 429 or 503 without any server delay: the backoff the run that got
    /// it chose, so that the scope's other runs back off with it.
    Backoff,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Breaker {
    /// Consecutive failed attempts.
    pub failures: u32,
    /// Open until then; half-open after.
    pub open_until: Option<Millis>,
    /// The one process allowed to probe while half-open, and until when.
    pub probe: Option<Probe>,
    /// How long it stayed open last time without a server delay: each failed
    /// probe doubles it, up to the cooldown, so that an open breaker is a
    /// backoff the whole scope shares. 0 in records of older versions.
    pub interval: Millis,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    pub holder: String,
    pub expires: Millis,
}

/// One endpoint's breaker. The endpoint is a hash of the method and the URL
/// without its query, never kept in clear: a path may hold a secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointBreaker {
    pub endpoint: String,
    /// When it last changed: the least recently used goes first.
    pub last: Millis,
    pub breaker: Breaker,
}

/// Enough failing endpoints per scope for any client; the oldest go first.
const MAX_ENDPOINTS: usize = 64;

/// Which breaker a wait or a change is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// The whole scope's: its hosts cannot be reached.
    Scope,
    /// This request's endpoint (its method and path): it answers with failures.
    Endpoint,
}

/// The scope-wide settings of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScopePolicy {
    /// `--rate N/UNIT` as the interval between two requests.
    pub rate_interval: Option<Duration>,
    /// `--breaker N`; 0 turns it off.
    pub breaker_threshold: u32,
    /// How long an open breaker stays open at first when the failures gave
    /// no server delay: the run's own first backoff step.
    pub breaker_first: Duration,
    /// The longest it stays open between two probes without a server delay:
    /// `--breaker-cooldown`, else the run's own longest backoff step.
    pub breaker_cooldown: Duration,
    /// How long a half-open probe may take before another process may probe.
    pub probe_ttl: Duration,
    /// `--retry-budget`; `None` (`0`) turns it off.
    pub retry_budget: Option<BudgetPolicy>,
    /// `--max-delayed`: at most this many runs wait on the gate at once.
    pub max_delayed: Option<u32>,
}

/// What the scope says before an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Send at `at` (now or later: a `--rate` slot reserved for this process).
    Go { at: Millis, probe: bool },
    /// Not before `until`; ask again then.
    Wait { until: Millis, cause: Wait },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    Gate(GateCause),
    /// The next `--rate` slot is beyond the deadline.
    Rate,
    /// A breaker is open: its half-open moment, when one probe may go.
    HalfOpen(Level),
    /// Another process holds the half-open probe, at most until `until`.
    Probe(Level),
}

/// Where a breaker stands for process `me` at `now`.
enum Door {
    Closed,
    Open { until: Millis },
    Probing { until: Millis },
    HalfOpen,
}

impl Breaker {
    fn door(&self, now: Millis, me: &str) -> Door {
        match (self.open_until, &self.probe) {
            (None, _) => Door::Closed,
            (Some(until), _) if now < until => Door::Open { until },
            (Some(_), Some(p)) if p.holder != me && p.expires > now => {
                Door::Probing { until: p.expires }
            }
            (Some(_), _) => Door::HalfOpen,
        }
    }

    fn is_open(&self) -> bool {
        self.open_until.is_some()
    }

    fn probed_by(&self, me: &str) -> bool {
        self.probe.as_ref().is_some_and(|p| p.holder == me)
    }
}

/// The scope's breaker and every endpoint's.
fn breakers(state: &ScopeState) -> impl Iterator<Item = &Breaker> {
    std::iter::once(&state.breaker).chain(state.endpoints.iter().map(|e| &e.breaker))
}

fn endpoint_breaker<'a>(state: &'a ScopeState, endpoint: &str) -> Option<&'a Breaker> {
    state
        .endpoints
        .iter()
        .find(|e| e.endpoint == endpoint)
        .map(|e| &e.breaker)
}

/// Decides whether process `me`, sending to `endpoint` (a hash), may send
/// now, reserving a `--rate` slot and claiming half-open probes as it goes.
/// `deadline` is the latest time the caller could still send: a rate slot
/// past it is not reserved. `reserve_rate` is false when this attempt
/// already holds its slot.
pub fn admit(
    state: &mut ScopeState,
    now: Millis,
    deadline: Millis,
    policy: &ScopePolicy,
    me: &str,
    endpoint: &str,
    reserve_rate: bool,
) -> Admission {
    let doors = [
        (Level::Scope, state.breaker.door(now, me)),
        (
            Level::Endpoint,
            endpoint_breaker(state, endpoint).map_or(Door::Closed, |b| b.door(now, me)),
        ),
    ];
    // An open breaker holds everyone until its half-open moment (and never
    // lets a probe go before the server's own delay ends); only then does a
    // probe in flight hold the others, until it ends.
    let gate = state.next_allowed_at.unwrap_or(0);
    let latest = |want_open: bool| {
        doors
            .iter()
            .filter_map(|(level, door)| match *door {
                Door::Open { until } if want_open => Some((until.max(gate), *level)),
                Door::Probing { until } if !want_open => Some((until, *level)),
                _ => None,
            })
            .max_by_key(|&(until, _)| until)
    };
    if let Some((until, level)) = latest(true) {
        return Admission::Wait {
            until,
            cause: Wait::HalfOpen(level),
        };
    }
    if let Some((until, level)) = latest(false) {
        return Admission::Wait {
            until,
            cause: Wait::Probe(level),
        };
    }
    let mut probe = false;
    for (level, door) in &doors {
        if matches!(door, Door::HalfOpen) {
            let claim = Probe {
                holder: me.to_string(),
                expires: now.saturating_add(ceil_ms(policy.probe_ttl)),
            };
            match level {
                Level::Scope => state.breaker.probe = Some(claim),
                Level::Endpoint => {
                    if let Some(e) = state.endpoints.iter_mut().find(|e| e.endpoint == endpoint) {
                        e.breaker.probe = Some(claim);
                        e.last = now;
                    }
                }
            }
            probe = true;
        }
    }
    if let Some(until) = state.next_allowed_at.filter(|&t| t > now) {
        let cause = state.gate_cause.unwrap_or(GateCause::RetryAfter);
        return Admission::Wait {
            until,
            cause: Wait::Gate(cause),
        };
    }
    if let Some(m) = state.meter.filter(|m| m.live(now) && m.left == 0) {
        return Admission::Wait {
            until: m.reset,
            cause: Wait::Gate(GateCause::QuotaExhausted),
        };
    }
    let mut at = now;
    if let Some(interval) = policy.rate_interval {
        let step = ceil_ms(interval).max(1);
        // Never sooner than one interval after the request another process
        // let go last: a process that woke late for its slot (a loaded
        // machine) pushes the next one back instead of arriving right
        // before it.
        let after_last = state
            .rate_last
            .as_ref()
            .filter(|last| last.by != me)
            .map_or(0, |last| last.at.saturating_add(step));
        if reserve_rate {
            let tat = state.rate_tat.unwrap_or(now).max(now).max(after_last);
            if tat > deadline {
                return Admission::Wait {
                    until: tat,
                    cause: Wait::Rate,
                };
            }
            state.rate_tat = Some(tat.saturating_add(step));
            at = tat;
        } else if after_last > now {
            return Admission::Wait {
                until: after_last,
                cause: Wait::Rate,
            };
        }
        if at <= now {
            state.rate_last = Some(LetGo {
                by: me.to_string(),
                at: now,
            });
        }
    }
    if at <= now
        && let Some(m) = state.meter.as_mut().filter(|m| m.live(now))
    {
        m.left -= 1;
    }
    Admission::Go { at, probe }
}

/// Whether another process holds a live half-open probe that `me`, sending
/// to `endpoint`, is waiting behind.
pub fn probed_by_another(state: &ScopeState, now: Millis, me: &str, endpoint: &str) -> bool {
    [Some(&state.breaker), endpoint_breaker(state, endpoint)]
        .into_iter()
        .flatten()
        .any(|b| matches!(b.door(now, me), Door::Probing { .. }))
}

/// Whether this process closed the gate itself, with its own last answer.
pub fn own_gate(state: &ScopeState, me: &str) -> bool {
    state.gate_by.as_deref() == Some(me)
}

/// Whether an answer without any server delay closes the scope's gate for
/// the backoff its run chose: a 429 (the scope is over its limit) or a 503
/// (the service is overloaded) says so of the whole scope, not of one run.
pub fn backoff_closes_gate(status: Option<u16>, server_delay: bool) -> bool {
    !server_delay && matches!(status, Some(429 | 503))
}

/// Before retry number `attempt` (from 2) of run `me`: spends from the
/// scope's retry budget, or refuses with the store time it holds a retry
/// again (only when another run spent from it lately, see
/// [`retry_budget::admit`]); and if it
/// goes and `backoff` is given (see [`backoff_closes_gate`]), closes the
/// gate until the run's backoff ends (never moving it back).
pub fn before_retry(
    state: &mut ScopeState,
    now: Millis,
    policy: &ScopePolicy,
    attempt: u32,
    backoff: Option<Duration>,
    me: &str,
) -> Result<(), Millis> {
    retry_budget::admit(
        &mut state.retry_budget,
        now,
        policy.retry_budget.as_ref(),
        attempt,
        me,
    )?;
    if let Some(until) = backoff
        .map(|d| now.saturating_add(ceil_ms(d)).min(LATEST))
        .filter(|&u| u > state.next_allowed_at.unwrap_or(0))
    {
        state.next_allowed_at = Some(until);
        state.gate_cause = Some(GateCause::Backoff);
        state.gate_by = Some(me.to_string());
    }
    Ok(())
}

/// After a successful first attempt: what it earns the scope's budget.
pub fn earn(state: &mut ScopeState, now: Millis, policy: &ScopePolicy) {
    if let Some(budget) = &policy.retry_budget {
        retry_budget::deposit(&mut state.retry_budget, now, budget);
    }
}

/// Whether a successful first attempt has anything to earn: not when the
/// budget is off or its bucket was full when last seen, so that a healthy
/// scope's record is not written for it.
pub fn may_earn(state: &ScopeState, policy: &ScopePolicy) -> bool {
    policy.retry_budget.is_some() && state.retry_budget != RetryBudget::default()
}

/// How long a backend with expiring keys must keep this record: until the
/// last time it mentions, plus ten idle minutes (so a breaker's count of
/// recent failures survives a pause), after which an idle scope vanishes.
pub fn keep_for(state: &ScopeState, now: Millis) -> Duration {
    const IDLE: Duration = Duration::from_secs(600);
    let latest = [
        state.next_allowed_at,
        state.rate_tat,
        state.meter.map(|m| m.reset),
        breakers(state)
            .flat_map(|b| [b.open_until, b.probe.as_ref().map(|p| p.expires)])
            .flatten()
            .max(),
        state
            .repeats
            .iter()
            .map(|r| r.last + ceil_ms(REPEAT_WINDOW))
            .max(),
        state.tasks.iter().map(|t| t.expires).max(),
    ]
    .into_iter()
    .flatten()
    .max()
    .unwrap_or(now);
    Duration::from_millis(latest.saturating_sub(now)) + IDLE
}

/// Whether a request to `endpoint` is worth reading the state for at all:
/// the fast path of a run with nothing shared to honour. With `--rate` there
/// always is, since every request is written down as it goes (`rate_last`).
pub fn is_idle(state: &ScopeState, now: Millis, policy: &ScopePolicy, endpoint: &str) -> bool {
    policy.rate_interval.is_none()
        && !state.meter.is_some_and(|m| m.live(now))
        && !state.breaker.is_open()
        && !endpoint_breaker(state, endpoint).is_some_and(Breaker::is_open)
        && gate_open(state, now)
}

/// Whether an attempt that went well can teach the breakers of `endpoint`
/// nothing: neither is counting failures.
pub fn breakers_quiet(state: &ScopeState, endpoint: &str) -> bool {
    state.breaker == Breaker::default() && endpoint_breaker(state, endpoint).is_none()
}

/// Whether the Retry-After (or quota) gate lets a request through now.
pub fn gate_open(state: &ScopeState, now: Millis) -> bool {
    state.next_allowed_at.is_none_or(|t| t <= now)
}

/// How an attempt bears on the breakers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// Nothing reached the host (refused, unreachable, connect timeout, TLS):
    /// a failure of the whole scope.
    HostDown,
    /// The host took the request and this endpoint failed it (a retryable
    /// 5xx, a reset or timeout after sending): the host itself is up.
    EndpointFailed,
    /// The server answered: it is up.
    Alive,
    /// 429: the gate handles it; it neither trips nor resets the endpoint's count.
    Limited,
}

pub fn health(observation: Observation, retry_on: &[u16]) -> Health {
    match observation {
        Observation::Status { status: 429, .. } => Health::Limited,
        Observation::Status { status, .. } if status >= 500 && retry_on.contains(&status) => {
            Health::EndpointFailed
        }
        Observation::Status { .. } => Health::Alive,
        Observation::Transport(Phase::BeforeSend) => Health::HostDown,
        Observation::Transport(Phase::AfterSend | Phase::Partial) => Health::EndpointFailed,
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
    /// The server's quota as the answer said it, if it did.
    pub quota: Option<Quota>,
    /// The scope's other requests in flight (of this process): they may
    /// spend the quota the answer said is left.
    pub in_flight: u32,
}

/// A breaker that changed state, for `-v` and for the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerNews {
    Opened { until: Millis, level: Level },
    Closed { level: Level },
}

/// What an attempt says of one breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Said {
    Failed,
    Alive,
    /// Answered, but 429: closes a half-open breaker, counts nothing.
    Limited,
    /// The attempt never got far enough to say (the host was down).
    Nothing,
}

/// Moves the gate forward (never back), and teaches both breakers of the
/// request's endpoint. A half-open probe's result decides for everyone.
pub fn learn(
    state: &mut ScopeState,
    now: Millis,
    lesson: &Lesson,
    policy: &ScopePolicy,
    me: &str,
    endpoint: &str,
) -> Vec<BreakerNews> {
    let gate = [
        (lesson.retry_after, GateCause::RetryAfter),
        (lesson.quota_reset, GateCause::QuotaExhausted),
    ];
    for (delay, cause) in gate {
        if let Some(until) = delay
            .map(|d| after(now, d))
            .filter(|&u| u > state.next_allowed_at.unwrap_or(0))
        {
            state.next_allowed_at = Some(until);
            state.gate_cause = Some(cause);
            state.gate_by = Some(me.to_string());
        }
    }
    if state.next_allowed_at.is_some_and(|t| t <= now) {
        state.next_allowed_at = None;
        state.gate_cause = None;
        state.gate_by = None;
    }
    meter(state, now, lesson);
    if policy.breaker_threshold == 0 {
        return Vec::new();
    }
    let (of_scope, of_endpoint) = match lesson.health {
        Health::HostDown => (Said::Failed, Said::Nothing),
        Health::EndpointFailed => (Said::Alive, Said::Failed),
        Health::Alive => (Said::Alive, Said::Alive),
        Health::Limited => (Said::Alive, Said::Limited),
    };
    let mut news = Vec::new();
    let mut teach = |breaker: &mut Breaker, said, level| {
        if let Some(change) = breaker.learn(said, now, lesson.retry_after, policy, me, level) {
            news.push(change);
        }
    };
    teach(&mut state.breaker, of_scope, Level::Scope);
    let known = state.endpoints.iter().position(|e| e.endpoint == endpoint);
    if known.is_some() || of_endpoint == Said::Failed {
        let i = known.unwrap_or_else(|| {
            state.endpoints.push(EndpointBreaker {
                endpoint: endpoint.to_string(),
                last: now,
                breaker: Breaker::default(),
            });
            state.endpoints.len() - 1
        });
        let entry = &mut state.endpoints[i];
        teach(&mut entry.breaker, of_endpoint, Level::Endpoint);
        entry.last = now;
        tidy_endpoints(state, now);
    }
    news
}

/// What is left of the quota after an answer that said `remaining`: no
/// more than the server still takes, less the requests in flight, which may
/// spend it (and within one window it only shrinks). An answer after the
/// reset starts the count again.
fn meter(state: &mut ScopeState, now: Millis, lesson: &Lesson) {
    state.meter = state.meter.filter(|m| m.live(now));
    let Some(q) = lesson.quota.filter(|q| !q.reset.is_zero()) else {
        return;
    };
    let left = q.remaining.saturating_sub(u64::from(lesson.in_flight));
    match &mut state.meter {
        Some(m) => m.left = m.left.min(left),
        None => {
            state.meter = Some(Meter {
                left,
                reset: after(now, q.reset.min(MAX_SERVER_DELAY)),
            })
        }
    }
}

/// `now` plus `delay`, and one millisecond more: `now` is rounded down, and
/// a moment computed from a server's delay must never be early.
fn after(now: Millis, delay: Duration) -> Millis {
    now.saturating_add(ceil_ms(delay)).saturating_add(1)
}

/// Endpoints with nothing to remember are dropped; so are those idle for
/// longer than the failures would count, and the least recent beyond the bound.
fn tidy_endpoints(state: &mut ScopeState, now: Millis) {
    state.endpoints.retain(|e| {
        let latest = e.last.max(e.breaker.open_until.unwrap_or(0));
        e.breaker != Breaker::default() && now.saturating_sub(latest) <= ceil_ms(REPEAT_WINDOW)
    });
    while state.endpoints.len() > MAX_ENDPOINTS {
        let oldest = (0..state.endpoints.len())
            .min_by_key(|&i| state.endpoints[i].last)
            .expect("the list is not empty");
        state.endpoints.remove(oldest);
    }
}

impl Breaker {
    fn learn(
        &mut self,
        said: Said,
        now: Millis,
        server: Option<Duration>,
        policy: &ScopePolicy,
        me: &str,
        level: Level,
    ) -> Option<BreakerNews> {
        let probing = self.probed_by(me);
        match said {
            Said::Failed if probing => {
                // The probe failed: open again, twice as long as last time.
                let first = ceil_ms(policy.breaker_first).max(1);
                let doubled = self.interval.max(first).saturating_mul(2);
                Some(self.open(doubled, now, server, policy, level))
            }
            // Already open: the probe, not a latecomer, decides when it ends.
            Said::Failed if self.is_open() => None,
            Said::Failed => {
                self.failures = self.failures.saturating_add(1);
                (self.failures >= policy.breaker_threshold).then(|| {
                    let first = ceil_ms(policy.breaker_first).max(1);
                    self.open(first, now, server, policy, level)
                })
            }
            Said::Alive | Said::Limited if probing || self.open_until.is_some_and(|t| t <= now) => {
                *self = Breaker::default();
                Some(BreakerNews::Closed { level })
            }
            Said::Alive => {
                self.failures = 0;
                None
            }
            Said::Limited => None,
            Said::Nothing => {
                // Nothing was learnt: the next process may probe at once.
                if probing {
                    self.probe = None;
                }
                None
            }
        }
    }

    /// Opens for `interval` (capped at the cooldown), or for exactly the
    /// server's delay when the failing answer gave one: never later than it.
    fn open(
        &mut self,
        interval: Millis,
        now: Millis,
        server: Option<Duration>,
        policy: &ScopePolicy,
        level: Level,
    ) -> BreakerNews {
        let interval = interval.min(ceil_ms(policy.breaker_cooldown).max(1));
        let until = server.map_or(now.saturating_add(interval), |d| after(now, d));
        *self = Breaker {
            failures: 0,
            open_until: Some(until),
            probe: None,
            interval,
        };
        BreakerNews::Opened { until, level }
    }
}

/// Whether `me` holds a half-open probe of any breaker of the scope.
pub fn holds_probe(state: &ScopeState, me: &str) -> bool {
    breakers(state).any(|b| b.probed_by(me))
}

/// The breaker of `endpoint` (the scope's first) whose probe `me` holds.
pub fn probe_level(state: &ScopeState, me: &str, endpoint: &str) -> Option<Level> {
    if state.breaker.probed_by(me) {
        Some(Level::Scope)
    } else {
        endpoint_breaker(state, endpoint)
            .is_some_and(|b| b.probed_by(me))
            .then_some(Level::Endpoint)
    }
}

/// Before process `me` waits on the gate until `until`: whether it may
/// (it joins the scope's waiters, or already is one), or the scope's queue
/// is full (`--max-delayed`). Waiters past their moment no longer count.
pub fn queue(
    state: &mut ScopeState,
    now: Millis,
    policy: &ScopePolicy,
    me: &str,
    until: Millis,
) -> bool {
    let grace = ceil_ms(QUEUE_GRACE);
    state
        .delayed
        .retain(|d| d.until.saturating_add(grace) > now);
    if let Some(mine) = state.delayed.iter_mut().find(|d| d.holder == me) {
        mine.until = until;
        return true;
    }
    if policy
        .max_delayed
        .is_some_and(|most| state.delayed.len() >= most as usize)
    {
        return false;
    }
    state.delayed.push(Delayed {
        holder: me.to_string(),
        until,
    });
    true
}

/// How many runs wait on the gate at `now` (`abide state`).
pub fn waiting(state: &ScopeState, now: Millis) -> usize {
    let grace = ceil_ms(QUEUE_GRACE);
    state
        .delayed
        .iter()
        .filter(|d| d.until.saturating_add(grace) > now)
        .count()
}

/// `me` no longer waits on the gate.
pub fn dequeue(state: &mut ScopeState, me: &str) {
    state.delayed.retain(|d| d.holder != me);
}

/// Whether `me` is among the scope's waiters.
pub fn queued(state: &ScopeState, me: &str) -> bool {
    state.delayed.iter().any(|d| d.holder == me)
}

/// Gives back the probes `me` holds when it ends without a verdict (budget,
/// cancellation), so that the next process may probe at once; its place
/// among the gate's waiters; and, unless the retry budget `refused` it, its
/// place among the budget's spenders (a run that ended is no company).
pub fn release(state: &mut ScopeState, me: &str, refused: bool) {
    dequeue(state, me);
    if !refused {
        retry_budget::leave(&mut state.retry_budget, me);
    }
    let endpoints = state.endpoints.iter_mut().map(|e| &mut e.breaker);
    for breaker in std::iter::once(&mut state.breaker).chain(endpoints) {
        if breaker.probed_by(me) {
            breaker.probe = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> ScopePolicy {
        ScopePolicy {
            rate_interval: None,
            breaker_threshold: 3,
            breaker_first: Duration::from_secs(1),
            breaker_cooldown: Duration::from_secs(30),
            probe_ttl: Duration::from_secs(10),
            retry_budget: Some(BudgetPolicy { per_success: 200 }),
            max_delayed: None,
        }
    }

    const FAR: Millis = u64::MAX;
    /// The endpoint (a hash, as the rules see it) most tests send to.
    const EP: &str = "ep-a";

    fn lesson(health: Health) -> Lesson {
        Lesson {
            health,
            retry_after: None,
            quota_reset: None,
            quota: None,
            in_flight: 0,
        }
    }

    #[test]
    fn no_more_go_than_the_quota_left_less_the_requests_in_flight() {
        let p = policy();
        let mut s = ScopeState::default();
        let said = |remaining, in_flight| Lesson {
            quota: Some(Quota {
                remaining,
                reset: Duration::from_millis(999),
            }),
            in_flight,
            ..lesson(Health::Alive)
        };
        let go = |at| Admission::Go { at, probe: false };
        // 3 left, and two others still on their way: one more may go.
        learn(&mut s, 1000, &said(3, 2), &p, "a", EP);
        assert_eq!(
            s.meter,
            Some(Meter {
                left: 1,
                reset: 2000
            })
        );
        assert!(!is_idle(&s, 1000, &p, EP));
        assert_eq!(admit(&mut s, 1001, FAR, &p, "a", EP, true), go(1001));
        let held = Admission::Wait {
            until: 2000,
            cause: Wait::Gate(GateCause::QuotaExhausted),
        };
        assert_eq!(admit(&mut s, 1002, FAR, &p, "b", EP, true), held);
        // Within the window the count only shrinks, whatever a late answer says.
        learn(&mut s, 1003, &said(2, 0), &p, "a", EP);
        assert_eq!(s.meter.map(|m| m.left), Some(0));
        // At the reset it starts again from the next answer.
        assert!(is_idle(&s, 2000, &p, EP));
        assert_eq!(admit(&mut s, 2000, FAR, &p, "b", EP, true), go(2000));
        learn(&mut s, 2010, &said(2, 0), &p, "b", EP);
        assert_eq!(
            s.meter,
            Some(Meter {
                left: 2,
                reset: 3010
            })
        );
        // An answer without the fields changes nothing; once past, it is gone.
        learn(&mut s, 2020, &lesson(Health::Alive), &p, "b", EP);
        assert_eq!(s.meter.map(|m| m.left), Some(2));
        learn(&mut s, 3010, &lesson(Health::Alive), &p, "b", EP);
        assert_eq!(s.meter, None);
    }

    #[test]
    fn the_gate_moves_forward_only() {
        let p = policy();
        let mut s = ScopeState::default();
        assert_eq!(
            admit(&mut s, 1000, FAR, &p, "a", EP, true),
            Admission::Go {
                at: 1000,
                probe: false
            }
        );
        let l = Lesson {
            retry_after: Some(Duration::from_millis(19_999)),
            ..lesson(Health::Limited)
        };
        learn(&mut s, 1000, &l, &p, "a", EP);
        let earlier = Lesson {
            retry_after: Some(Duration::from_millis(2_999)),
            ..lesson(Health::Limited)
        };
        learn(&mut s, 2000, &earlier, &p, "b", EP);
        assert_eq!(s.next_allowed_at, Some(21_000));
        let wait = Admission::Wait {
            until: 21_000,
            cause: Wait::Gate(GateCause::RetryAfter),
        };
        assert_eq!(admit(&mut s, 3000, FAR, &p, "c", EP, true), wait);
        assert!(!is_idle(&s, 3000, &p, EP));
        assert_eq!(
            admit(&mut s, 21_000, FAR, &p, "c", EP, true),
            Admission::Go {
                at: 21_000,
                probe: false
            }
        );
        let quota = Lesson {
            quota_reset: Some(Duration::from_millis(9_999)),
            ..lesson(Health::Alive)
        };
        learn(&mut s, 30_000, &quota, &p, "d", EP);
        assert_eq!(s.gate_cause, Some(GateCause::QuotaExhausted));
        // A gate in the past is cleaned away.
        learn(&mut s, 50_000, &lesson(Health::Alive), &p, "d", EP);
        assert_eq!(s.next_allowed_at, None);
        assert!(is_idle(&s, 50_000, &p, EP));
    }

    #[test]
    fn a_process_late_for_its_rate_slot_pushes_the_next_one_back() {
        let p = ScopePolicy {
            rate_interval: Some(Duration::from_millis(200)),
            ..policy()
        };
        let mut s = ScopeState::default();
        // x goes at once, y reserves the slot at 1200, z the one at 1400.
        assert!(matches!(
            admit(&mut s, 1000, FAR, &p, "x", EP, true),
            Admission::Go { at: 1000, .. }
        ));
        assert!(matches!(
            admit(&mut s, 1000, FAR, &p, "y", EP, true),
            Admission::Go { at: 1200, .. }
        ));
        assert!(matches!(
            admit(&mut s, 1000, FAR, &p, "z", EP, true),
            Admission::Go { at: 1400, .. }
        ));
        // y wakes 150 ms late; z, on time, must keep one interval after y.
        assert!(matches!(
            admit(&mut s, 1350, FAR, &p, "y", EP, false),
            Admission::Go { at: 1350, .. }
        ));
        assert_eq!(
            admit(&mut s, 1400, FAR, &p, "z", EP, false),
            Admission::Wait {
                until: 1550,
                cause: Wait::Rate
            }
        );
        assert!(matches!(
            admit(&mut s, 1550, FAR, &p, "z", EP, false),
            Admission::Go { at: 1550, .. }
        ));
        // A newcomer reserves no slot sooner than an interval after z.
        assert!(matches!(
            admit(&mut s, 1560, FAR, &p, "w", EP, true),
            Admission::Go { at: 1750, .. }
        ));
    }

    #[test]
    fn the_rate_spacing_leaves_a_margin_for_jitter() {
        let ms = Duration::from_millis;
        assert_eq!(spacing(ms(500)), ms(525));
        assert_eq!(spacing(ms(50)), Duration::from_micros(52_500));
        assert_eq!(spacing(ms(10)), ms(11));
        assert_eq!(spacing(Duration::from_secs(60)), ms(60_050));
    }

    #[test]
    fn an_attempt_holding_its_rate_slot_reserves_no_other() {
        let p = ScopePolicy {
            rate_interval: Some(Duration::from_millis(200)),
            ..policy()
        };
        let mut s = ScopeState::default();
        assert_eq!(
            admit(&mut s, 1000, FAR, &p, "x", EP, true),
            Admission::Go {
                at: 1000,
                probe: false
            }
        );
        assert_eq!(
            admit(&mut s, 1000, FAR, &p, "x", EP, false),
            Admission::Go {
                at: 1000,
                probe: false
            }
        );
        assert_eq!(s.rate_tat, Some(1200));
        assert!(!is_idle(&s, 1000, &p, EP));
    }

    /// The moment a breaker half-opens, or what else the scope said.
    fn half_opens(s: &mut ScopeState, now: Millis, me: &str) -> Result<Millis, Admission> {
        match admit(s, now, FAR, &policy(), me, EP, true) {
            Admission::Wait {
                until,
                cause: Wait::HalfOpen(_),
            } => Ok(until),
            other => Err(other),
        }
    }

    fn opened(until: Millis, level: Level) -> Vec<BreakerNews> {
        vec![BreakerNews::Opened { until, level }]
    }

    #[test]
    fn a_breaker_half_opens_exactly_when_the_server_said() {
        let p = policy();
        let mut s = ScopeState::default();
        let l = Lesson {
            retry_after: Some(Duration::from_millis(1_000)),
            ..lesson(Health::EndpointFailed)
        };
        for _ in 0..2 {
            assert_eq!(learn(&mut s, 0, &l, &p, "a", EP), vec![]);
        }
        // A 503 with Retry-After: 1 opens it for that second, not for the cooldown.
        assert_eq!(
            learn(&mut s, 0, &l, &p, "a", EP),
            opened(1_001, Level::Endpoint)
        );
        assert_eq!(half_opens(&mut s, 500, "b"), Ok(1_001));
        assert!(matches!(
            admit(&mut s, 1_001, FAR, &p, "b", EP, true),
            Admission::Go { probe: true, .. }
        ));
        // A probe answered with a longer delay: open for exactly that long.
        let longer = Lesson {
            retry_after: Some(Duration::from_secs(60)),
            ..lesson(Health::EndpointFailed)
        };
        assert_eq!(
            learn(&mut s, 2_000, &longer, &p, "b", EP),
            opened(62_001, Level::Endpoint)
        );
        assert_eq!(half_opens(&mut s, 3_000, "c"), Ok(62_001));
    }

    #[test]
    fn without_a_server_delay_the_breaker_is_a_shared_backoff() {
        let p = policy();
        let mut s = ScopeState::default();
        for _ in 0..2 {
            learn(&mut s, 0, &lesson(Health::EndpointFailed), &p, "a", EP);
        }
        // 429 neither trips nor resets.
        learn(&mut s, 0, &lesson(Health::Limited), &p, "a", EP);
        assert_eq!(
            learn(&mut s, 0, &lesson(Health::EndpointFailed), &p, "a", EP),
            opened(1_000, Level::Endpoint),
            "open for the first backoff step, not the cooldown"
        );
        // Every failed probe doubles the interval, up to the cooldown.
        let mut now = 1_000;
        let mut intervals = vec![];
        for _ in 0..7 {
            let at = half_opens(&mut s, now - 1, "b").unwrap();
            assert!(matches!(
                admit(&mut s, at, FAR, &p, "b", EP, true),
                Admission::Go { probe: true, .. }
            ));
            let Some(BreakerNews::Opened { until, .. }) = learn(
                &mut s,
                at + 10,
                &lesson(Health::EndpointFailed),
                &p,
                "b",
                EP,
            )
            .pop() else {
                panic!("the failed probe reopens it")
            };
            intervals.push(until - (at + 10));
            now = until;
        }
        assert_eq!(
            intervals,
            [2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]
        );
        // A success closes it, and the next opening starts short again.
        assert!(matches!(
            admit(&mut s, now, FAR, &p, "c", EP, true),
            Admission::Go { probe: true, .. }
        ));
        assert_eq!(
            learn(&mut s, now, &lesson(Health::Alive), &p, "c", EP),
            vec![BreakerNews::Closed {
                level: Level::Endpoint
            }]
        );
        assert!(s.endpoints.is_empty() && breakers_quiet(&s, EP));
        for _ in 0..3 {
            learn(&mut s, now, &lesson(Health::EndpointFailed), &p, "c", EP);
        }
        assert_eq!(half_opens(&mut s, now, "d"), Ok(now + 1_000));
    }

    #[test]
    fn one_probe_at_a_time_the_others_wait_behind_it() {
        let p = policy();
        let mut s = ScopeState::default();
        for _ in 0..3 {
            learn(&mut s, 0, &lesson(Health::HostDown), &p, "a", EP);
        }
        assert_eq!(half_opens(&mut s, 10, "b"), Ok(1_000));
        assert!(matches!(
            admit(&mut s, 1_000, FAR, &p, "b", EP, true),
            Admission::Go { probe: true, .. }
        ));
        assert_eq!(
            admit(&mut s, 1_100, FAR, &p, "c", "ep-other", true),
            Admission::Wait {
                until: 11_000,
                cause: Wait::Probe(Level::Scope)
            }
        );
        assert!(probed_by_another(&s, 1_100, "c", "ep-other"));
        assert!(!probed_by_another(&s, 1_100, "b", EP), "not behind its own");
        // A latecomer's failure does not cut the open time short or long.
        learn(&mut s, 1_200, &lesson(Health::HostDown), &p, "c", EP);
        assert_eq!(s.breaker.open_until, Some(1_000));
        assert_eq!(
            learn(&mut s, 1_300, &lesson(Health::Alive), &p, "b", EP),
            vec![BreakerNews::Closed {
                level: Level::Scope
            }]
        );
        assert!(!probed_by_another(&s, 1_300, "c", EP));
        assert_eq!(
            admit(&mut s, 1_300, FAR, &p, "c", EP, true),
            Admission::Go {
                at: 1_300,
                probe: false
            }
        );
    }

    #[test]
    fn a_failing_endpoint_does_not_hold_back_the_others() {
        let p = policy();
        let mut s = ScopeState::default();
        for _ in 0..3 {
            learn(&mut s, 0, &lesson(Health::EndpointFailed), &p, "a", EP);
        }
        assert_eq!(half_opens(&mut s, 10, "b"), Ok(1_000));
        assert!(is_idle(&s, 10, &p, "ep-b"));
        assert_eq!(
            admit(&mut s, 10, FAR, &p, "b", "ep-b", true),
            Admission::Go {
                at: 10,
                probe: false
            }
        );
        // The host answered: its own count is untouched by endpoint failures.
        assert_eq!(s.breaker, Breaker::default());
        // A host that cannot be reached holds back every endpoint.
        for _ in 0..3 {
            learn(&mut s, 20, &lesson(Health::HostDown), &p, "b", "ep-b");
        }
        assert_eq!(
            admit(&mut s, 30, FAR, &p, "c", "ep-c", true),
            Admission::Wait {
                until: 1_020,
                cause: Wait::HalfOpen(Level::Scope)
            }
        );
        // Both open: the later moment, of whichever breaker holds it.
        assert_eq!(
            admit(&mut s, 30, FAR, &p, "c", EP, true),
            Admission::Wait {
                until: 1_020,
                cause: Wait::HalfOpen(Level::Scope)
            }
        );
        // An answer from any endpoint shows the host is up again.
        assert!(matches!(
            admit(&mut s, 1_020, FAR, &p, "c", "ep-c", true),
            Admission::Go { probe: true, .. }
        ));
        let news = learn(
            &mut s,
            1_030,
            &lesson(Health::EndpointFailed),
            &p,
            "c",
            "ep-c",
        );
        assert_eq!(
            news,
            vec![BreakerNews::Closed {
                level: Level::Scope
            }]
        );
    }

    #[test]
    fn a_host_failure_during_an_endpoint_probe_passes_the_probe_on() {
        let p = policy();
        let mut s = ScopeState::default();
        for _ in 0..3 {
            learn(&mut s, 0, &lesson(Health::EndpointFailed), &p, "a", EP);
        }
        assert!(matches!(
            admit(&mut s, 1_000, FAR, &p, "b", EP, true),
            Admission::Go { probe: true, .. }
        ));
        assert_eq!(
            learn(&mut s, 1_010, &lesson(Health::HostDown), &p, "b", EP),
            vec![]
        );
        assert!(matches!(
            admit(&mut s, 1_020, FAR, &p, "c", EP, true),
            Admission::Go { probe: true, .. }
        ));
    }

    #[test]
    fn endpoint_breakers_are_bounded_and_forgotten() {
        let p = policy();
        let mut s = ScopeState::default();
        for i in 0..100 {
            learn(
                &mut s,
                i,
                &lesson(Health::EndpointFailed),
                &p,
                "a",
                &format!("ep-{i}"),
            );
        }
        assert_eq!(s.endpoints.len(), MAX_ENDPOINTS);
        assert_eq!(s.endpoints[0].endpoint, "ep-36", "the oldest went first");
        learn(&mut s, 200, &lesson(Health::Alive), &p, "a", "ep-99");
        assert_eq!(s.endpoints.len(), MAX_ENDPOINTS - 1, "a success forgets");
        let later = 100 + ceil_ms(REPEAT_WINDOW) + 1;
        learn(
            &mut s,
            later,
            &lesson(Health::EndpointFailed),
            &p,
            "a",
            "ep-new",
        );
        assert_eq!(s.endpoints.len(), 1, "idle counts expire");
    }

    #[test]
    fn older_breaker_records_still_work() {
        let s: ScopeState =
            serde_json::from_str(r#"{"breaker":{"failures":0,"open_until":5000,"probe":null}}"#)
                .unwrap();
        let mut s = s;
        assert_eq!(s.breaker.interval, 0);
        assert!(s.endpoints.is_empty());
        assert_eq!(half_opens(&mut s, 10, "a"), Ok(5_000));
        admit(&mut s, 5_000, FAR, &policy(), "a", EP, true);
        // No interval kept: the reopening doubles the first step.
        assert_eq!(
            learn(&mut s, 5_000, &lesson(Health::HostDown), &policy(), "a", EP),
            opened(7_000, Level::Scope)
        );
    }

    #[test]
    fn rate_slots_are_spaced_without_burst() {
        let p = ScopePolicy {
            rate_interval: Some(Duration::from_millis(200)),
            ..policy()
        };
        let mut s = ScopeState::default();
        let slots: Vec<_> = (0..5)
            .map(|_| match admit(&mut s, 1000, FAR, &p, "x", EP, true) {
                Admission::Go { at, .. } => at,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(slots, [1000, 1200, 1400, 1600, 1800]);
        // A slot beyond the deadline is not reserved.
        assert_eq!(
            admit(&mut s, 1000, 1500, &p, "x", EP, true),
            Admission::Wait {
                until: 2000,
                cause: Wait::Rate
            }
        );
        assert_eq!(s.rate_tat, Some(2000));
        // After a quiet spell there is no credit for a burst either.
        assert_eq!(
            admit(&mut s, 9000, FAR, &p, "x", EP, true),
            Admission::Go {
                at: 9000,
                probe: false
            }
        );
        assert_eq!(
            admit(&mut s, 9000, FAR, &p, "x", EP, true),
            Admission::Go {
                at: 9200,
                probe: false
            }
        );
    }

    #[test]
    fn an_abandoned_probe_passes_on() {
        let p = policy();
        let mut s = ScopeState {
            breaker: Breaker {
                open_until: Some(0),
                ..Breaker::default()
            },
            ..ScopeState::default()
        };
        assert!(matches!(
            admit(&mut s, 10, FAR, &p, "a", EP, true),
            Admission::Go { probe: true, .. }
        ));
        release(&mut s, "a", false);
        assert!(matches!(
            admit(&mut s, 20, FAR, &p, "b", EP, true),
            Admission::Go { probe: true, .. }
        ));
        // A probe that never reports expires.
        assert!(matches!(
            admit(&mut s, 20 + 10_000, FAR, &p, "c", EP, true),
            Admission::Go { probe: true, .. }
        ));
        // An endpoint's probe is given back too.
        for _ in 0..3 {
            learn(&mut s, 20_000, &lesson(Health::EndpointFailed), &p, "d", EP);
        }
        admit(&mut s, 21_000, FAR, &p, "d", EP, true);
        assert!(holds_probe(&s, "d"));
        release(&mut s, "d", false);
        assert!(!holds_probe(&s, "d"));
        // A run that ended leaves the retry budget's spenders; one the
        // budget refused stays among them.
        retry_budget::spend(&mut s.retry_budget, 21_000, "d");
        retry_budget::spend(&mut s.retry_budget, 21_000, "f");
        release(&mut s, "f", true);
        assert!(retry_budget::spent_by(&s.retry_budget, "f"));
        release(&mut s, "d", false);
        assert!(!retry_budget::spent_by(&s.retry_budget, "d"));
        assert!(matches!(
            admit(&mut s, 21_000, FAR, &p, "e", EP, true),
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
        assert_eq!(health(status(503), &retry_on), Health::EndpointFailed);
        assert_eq!(health(status(429), &retry_on), Health::Limited);
        assert_eq!(health(status(501), &retry_on), Health::Alive);
        assert_eq!(health(status(404), &retry_on), Health::Alive);
        assert_eq!(health(status(200), &retry_on), Health::Alive);
        assert_eq!(
            health(Observation::Transport(Phase::BeforeSend), &retry_on),
            Health::HostDown
        );
        assert_eq!(
            health(Observation::Transport(Phase::AfterSend), &retry_on),
            Health::EndpointFailed
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
            learn(&mut s, 0, &lesson(Health::HostDown), &p, "a", EP);
            learn(&mut s, 0, &lesson(Health::EndpointFailed), &p, "a", EP);
        }
        assert_eq!(s.breaker, Breaker::default());
        assert!(s.endpoints.is_empty());
    }

    #[test]
    fn repeated_failures_count_in_a_row_and_expire() {
        let mut s = ScopeState::default();
        for i in 1..=3 {
            remember(&mut s, "fp-a", Some("e"), 1000 * i);
        }
        assert_eq!(repeats(&s, "fp-a", 4000), 3);
        assert_eq!(
            repeats(&s, "fp-b", 4000),
            0,
            "a changed request has its own count"
        );
        remember(&mut s, "fp-b", Some("e"), 4000);
        assert_eq!(repeats(&s, "fp-a", 4000), 3);
        // Ten minutes later the old failures no longer count.
        assert_eq!(repeats(&s, "fp-a", 3000 + ceil_ms(REPEAT_WINDOW) + 1), 0);
        remember(&mut s, "fp-a", Some("e"), 3000 + ceil_ms(REPEAT_WINDOW) + 1);
        assert_eq!(repeats(&s, "fp-a", 3000 + ceil_ms(REPEAT_WINDOW) + 1), 1);
        // A success resets it.
        remember(&mut s, "fp-b", None, 5000);
        assert_eq!(repeats(&s, "fp-b", 5000), 0);
        for i in 0..100 {
            remember(&mut s, &format!("many-{i}"), Some("e"), 6000);
        }
        assert_eq!(s.repeats.len(), MAX_REPEATS);
    }

    #[test]
    fn a_429_or_503_without_a_delay_closes_the_gate_for_the_backoff() {
        #[rustfmt::skip]
        let rows = [
            (Some(429), false, true),
            (Some(503), false, true),
            (Some(429), true, false),
            (Some(503), true, false),
            (Some(500), false, false),
            (Some(502), false, false),
            (None, false, false),
        ];
        for (status, server_delay, closes) in rows {
            assert_eq!(
                backoff_closes_gate(status, server_delay),
                closes,
                "{status:?} {server_delay}"
            );
        }
        let p = policy();
        let mut s = ScopeState::default();
        assert_eq!(
            before_retry(&mut s, 1_000, &p, 2, Some(Duration::from_millis(300)), "a"),
            Ok(())
        );
        assert_eq!(s.next_allowed_at, Some(1_300));
        assert_eq!(s.gate_cause, Some(GateCause::Backoff));
        assert_eq!(s.retry_budget.spent, retry_budget::RETRY);
        // A shorter backoff never moves the gate back, nor a longer Retry-After's.
        assert_eq!(
            before_retry(&mut s, 1_000, &p, 2, Some(Duration::from_millis(100)), "b"),
            Ok(())
        );
        assert_eq!(
            (s.next_allowed_at, s.gate_by.as_deref()),
            (Some(1_300), Some("a"))
        );
        // Refused: the gate stays as it was, and the time the budget refills.
        for _ in 0..3 {
            before_retry(&mut s, 1_000, &p, 3, None, "c").unwrap();
        }
        assert_eq!(
            before_retry(&mut s, 1_000, &p, 2, Some(Duration::from_secs(9)), "d"),
            Err(11_000)
        );
        assert_eq!(s.next_allowed_at, Some(1_300));
        // A first attempt is never refused and spends nothing; off, nothing is.
        assert_eq!(before_retry(&mut s, 1_000, &p, 1, None, "d"), Ok(()));
        let off = ScopePolicy {
            retry_budget: None,
            ..p
        };
        assert_eq!(before_retry(&mut s, 1_000, &off, 4, None, "d"), Ok(()));
        // Successes earn it back; a full bucket has nothing to earn.
        assert!(may_earn(&s, &p));
        for _ in 0..5 {
            earn(&mut s, 1_000, &p);
        }
        assert_eq!(retry_budget::level(&s.retry_budget, 1_000), 1_000);
        assert!(!may_earn(&ScopeState::default(), &p));
        assert!(!may_earn(&s, &off));
    }

    #[test]
    fn at_most_max_delayed_runs_wait_on_the_gate() {
        let p = ScopePolicy {
            max_delayed: Some(2),
            ..policy()
        };
        let mut s = ScopeState::default();
        assert!(queue(&mut s, 0, &p, "a", 5_000));
        assert!(queue(&mut s, 0, &p, "b", 5_000));
        assert!(!queue(&mut s, 0, &p, "c", 5_000), "the queue is full");
        assert!(queue(&mut s, 10, &p, "a", 6_000), "a waiter asks again");
        assert_eq!(s.delayed.len(), 2);
        release(&mut s, "b", false);
        assert!(!queued(&s, "b"));
        assert!(queue(&mut s, 20, &p, "c", 5_000), "b's place is free");
        // Past their moment (and its jitter), waiters no longer count.
        assert!(queue(&mut s, 8_600, &p, "d", 9_000));
        assert!(queue(&mut s, 8_600, &p, "e", 9_000));
        assert_eq!(s.delayed.len(), 2, "{:?}", s.delayed);
        assert_eq!(waiting(&s, 8_600), 2);
        assert_eq!(waiting(&s, 11_500), 0);
        // Without --max-delayed, nobody is refused.
        let mut s = ScopeState::default();
        for who in ["a", "b", "c", "d"] {
            assert!(queue(&mut s, 0, &policy(), who, 5_000));
        }
    }

    #[test]
    fn only_identical_failures_count_as_repeats() {
        let mut s = ScopeState::default();
        for (i, error) in ["400 code=\"a\"", "400 code=\"b\"", "409"]
            .iter()
            .enumerate()
        {
            remember(&mut s, "fp", Some(error), i as Millis);
            assert_eq!(repeats(&s, "fp", 10), 1, "a new error starts again");
        }
        remember(&mut s, "fp", Some("409"), 3);
        assert_eq!(repeats(&s, "fp", 10), 2);
        // A record of an older version, without the error: a first failure.
        s.repeats[0].error = String::new();
        remember(&mut s, "fp", Some("409"), 4);
        assert_eq!(repeats(&s, "fp", 10), 1);
    }

    #[test]
    fn task_keys_survive_reruns_and_expire() {
        let mut s = ScopeState::default();
        let day = Duration::from_secs(86_400);
        let key = |s: &mut ScopeState, task, fresh, now| task_key(s, task, fresh, now, day);
        assert_eq!(key(&mut s, "t1", "key-1", 0).as_deref(), Some("key-1"));
        assert_eq!(key(&mut s, "t1", "key-2", 1000).as_deref(), Some("key-1"));
        assert_eq!(key(&mut s, "t2", "key-3", 1000).as_deref(), Some("key-3"));
        let later = ceil_ms(day) + 1;
        assert_eq!(key(&mut s, "t1", "key-4", later).as_deref(), Some("key-4"));
        let forever = task_key(&mut s, "t5", "key-5", 0, Duration::MAX);
        assert_eq!(forever.as_deref(), Some("key-5"));
        assert_eq!(s.tasks.last().unwrap().expires, LATEST);
    }

    #[test]
    fn a_full_scope_refuses_new_tasks_and_forgets_none() {
        let mut s = ScopeState::default();
        let day = Duration::from_secs(86_400);
        for i in 0..MAX_TASKS {
            assert!(task_key(&mut s, &format!("t{i}"), "k", 0, day).is_some());
        }
        assert_eq!(task_key(&mut s, "new", "k", 1, day), None);
        assert_eq!(s.tasks.len(), MAX_TASKS);
        assert_eq!(
            task_key(&mut s, "t0", "other", 1, day).as_deref(),
            Some("k")
        );
        // Room again once keys expire.
        assert!(task_key(&mut s, "new", "k", ceil_ms(day) + 1, day).is_some());
    }

    #[test]
    fn a_task_belongs_to_one_request_and_counts_its_requests() {
        let mut s = ScopeState::default();
        let day = Duration::from_secs(86_400);
        task_key(&mut s, "t1", "key-1", 0, day).unwrap();
        let bound = bind_task(&mut s, "t1", "fp-a").unwrap().unwrap();
        assert_eq!((bound.key.as_str(), bound.sent), ("key-1", 0));
        assert_eq!(bind_task(&mut s, "t1", "fp-b"), Err(TaskDiffers));
        task_ran(&mut s, "t1", 3, None);
        task_ran(&mut s, "t1", 1, Some("/orders/9"));
        task_ran(&mut s, "t1", 1, None);
        let again = bind_task(&mut s, "t1", "fp-a").unwrap().unwrap();
        assert_eq!(again.sent, 5);
        assert_eq!(again.operation_id.as_deref(), Some("/orders/9"));
        assert_eq!(bind_task(&mut s, "unknown", "fp-a"), Ok(None));
        // A record of an older version, with no fingerprint, takes this one.
        let old: ScopeState =
            serde_json::from_str(r#"{"tasks":[{"task":"t","key":"k","expires":99}]}"#).unwrap();
        let mut old = old;
        assert_eq!(bind_task(&mut old, "t", "fp").unwrap().unwrap().sent, 0);
        assert_eq!(old.tasks[0].fingerprint.as_deref(), Some("fp"));
    }

    #[test]
    fn records_are_kept_as_long_as_they_matter() {
        let idle = Duration::from_secs(600);
        let mut s = ScopeState::default();
        assert_eq!(keep_for(&s, 1000), idle);
        s.next_allowed_at = Some(31_000);
        assert_eq!(keep_for(&s, 1000), idle + Duration::from_secs(30));
        task_key(&mut s, "t", "k", 1000, Duration::from_secs(86_400)).unwrap();
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
