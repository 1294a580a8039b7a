//! The scope state as a run uses it: the pure rules of `scope` applied to a
//! [`Store`], with a fast path that only reads when there is nothing shared
//! to honour. Times come from the store's clock and reach the loop as
//! durations. A store that fails is noted and the run goes on without it:
//! shared state must never stop the traffic it protects.

pub mod file;
#[cfg(test)]
pub(crate) mod memory;
pub mod redis;
pub mod store;

pub use file::FileStore;
pub use redis::RedisStore;
pub use store::{Slot, Store, Stored, find, forget, scope_hash};

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use crate::clock::{self, Millis};

use crate::rules::pace::{self, Quota};
use crate::rules::retry_budget;
use crate::rules::scope::{self, Admission, BreakerNews, Lesson, Level, ScopePolicy, ScopeState};

/// What the scope says before an attempt, relative to now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admit {
    Go,
    /// Wait this long: for the gate or a breaker (then ask again), or for a
    /// `--rate` slot (reserved for this process when it fits the patience
    /// given). `own`: the gate holds this process's own last Retry-After.
    Wait {
        wait: Duration,
        cause: scope::Wait,
        own: bool,
    },
    /// The run would wait on the gate, and `limit` (`--max-delayed`) runs
    /// already do: it ends now; the gate opens in `wait`.
    QueueFull {
        wait: Duration,
        limit: u32,
    },
    /// The store failed and `--state-required` forbids going on without it.
    Unavailable(String),
}

/// What a refusal by the scope's own limits weighed, for the `--log`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The retry budget refused retry number `attempt`: `left` of
    /// `capacity` retries (in thousandths) were in the bucket, `company`
    /// other runs spent from it within [`retry_budget::CROWD`], and time
    /// alone puts a retry back in `refills_in`.
    RetryBudget {
        attempt: u32,
        left: u32,
        capacity: u32,
        company: usize,
        refills_in: Duration,
    },
    /// `--max-delayed`: `waiting` runs already waited on the gate, of
    /// `limit`; the gate opens in `opens_in`.
    QueueFull {
        waiting: usize,
        limit: u32,
        opens_in: Duration,
    },
}

/// What the scope made of an attempt.
#[derive(Debug, Default)]
pub struct Learned {
    pub news: Vec<BreakerNews>,
    /// A breaker this attempt opened: how long until it half-opens.
    pub opened: Option<(Duration, Level)>,
}

/// Why a task's key cannot be used for this run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskRefusal {
    /// The task was kept for another request.
    Differs,
    /// The state cannot keep the key (why).
    Unkept(String),
}

pub struct Shared {
    store: Box<dyn Store>,
    pub name: String,
    pub policy: ScopePolicy,
    pub max_concurrent: Option<u32>,
    /// This process, as the holder of a half-open probe.
    me: String,
    /// The request's endpoint (hashed), for its own breaker.
    endpoint: String,
    /// The record as last seen, to skip writes that would change nothing.
    seen: RefCell<ScopeState>,
    notes: RefCell<Vec<String>>,
    /// `--state-required`: a store failure ends the run instead of being skipped.
    required: bool,
    /// The first store failure of the run.
    failure: RefCell<Option<String>>,
    /// `--rate auto`: the pace is learned, and kept in the record.
    pace: Option<pace::Params>,
    /// `--rate` slots are taken just in time, never reserved ahead.
    just_in_time: bool,
    /// When the scope last let this request go (the store's clock).
    admitted: Cell<Millis>,
    /// This request, in flight since the scope let it go.
    flight: RefCell<Option<Flight>>,
    /// Called once each answer's lesson is in the record.
    after_lesson: Option<Box<dyn Fn()>>,
    /// The refusal by the scope's limits that ends the run, if one did.
    refusal: RefCell<Option<Refusal>>,
}

/// The requests of this process in flight, per scope: those an answer's
/// quota must leave room for (a batch's workers are threads of one
/// process; the record counts what other processes let go).
static FLYING: Mutex<BTreeMap<String, u32>> = Mutex::new(BTreeMap::new());

/// One request of this process in flight in a scope, from its admission to
/// its answer (or its end).
struct Flight {
    scope: String,
}

impl Flight {
    fn flying() -> std::sync::MutexGuard<'static, BTreeMap<String, u32>> {
        FLYING.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn start(scope: &str) -> Flight {
        *Flight::flying().entry(scope.to_string()).or_default() += 1;
        Flight {
            scope: scope.to_string(),
        }
    }

    /// The scope's other requests of this process in flight.
    fn others(&self) -> u32 {
        Flight::flying()
            .get(&self.scope)
            .map_or(0, |n| n.saturating_sub(1))
    }
}

impl Drop for Flight {
    fn drop(&mut self) {
        let mut flying = Flight::flying();
        if let Some(n) = flying.get_mut(&self.scope) {
            *n -= 1;
            if *n == 0 {
                flying.remove(&self.scope);
            }
        }
    }
}

fn after(now: Millis, until: Millis) -> Duration {
    Duration::from_millis(until.saturating_sub(now))
}

impl Shared {
    pub fn new(
        store: Box<dyn Store>,
        name: String,
        endpoint: String,
        policy: ScopePolicy,
        max_concurrent: Option<u32>,
        required: bool,
    ) -> Shared {
        Shared {
            store,
            name,
            policy,
            max_concurrent,
            me: format!("{}-{:08x}", std::process::id(), rand::random::<u32>()),
            endpoint,
            seen: RefCell::default(),
            notes: RefCell::default(),
            required,
            failure: RefCell::default(),
            pace: None,
            just_in_time: false,
            after_lesson: None,
            admitted: Cell::new(0),
            flight: RefCell::default(),
            refusal: RefCell::default(),
        }
    }

    /// `--rate auto`: the scope's `--rate` interval is the pace its answers
    /// teach ([`pace`]), shared through the record.
    pub fn learning_pace(mut self) -> Shared {
        self.pace = Some(pace::Params::default());
        self.just_in_time()
    }

    /// Whether the scope's pace is learned (`--rate auto`).
    pub fn learns_pace(&self) -> bool {
        self.pace.is_some()
    }

    /// `--rate` slots taken just in time, never reserved ahead: the next
    /// slot is then spaced from when this request really went, so that a
    /// late wake-up (a loaded machine, a worker among many) cannot bring
    /// two requests closer than the spacing. A batch's workers, which ask
    /// the scope in turns in one process, take theirs so; a cut of a
    /// learned pace holds back every request not yet sent.
    pub fn just_in_time(mut self) -> Shared {
        self.just_in_time = true;
        self
    }

    /// `then` is called each time an answer's lesson is in the record: a
    /// batch lets its other items go once its first one's is.
    pub fn after_each_lesson(mut self, then: impl Fn() + 'static) -> Shared {
        self.after_lesson = Some(Box::new(then));
        self
    }

    /// The scope's policy with the pace learned so far, under `--rate auto`.
    fn policy_now(&self, state: &ScopeState) -> ScopePolicy {
        match &self.pace {
            Some(params) => ScopePolicy {
                rate_interval: Some(pace::interval(state.pace.as_ref(), params)),
                ..self.policy
            },
            None => self.policy,
        }
    }

    fn failed(&self, e: &std::io::Error) {
        self.failure
            .borrow_mut()
            .get_or_insert_with(|| e.to_string());
        self.notes
            .borrow_mut()
            .push(format!("scope state unavailable, going on without it: {e}"));
    }

    /// The first store failure of the run, if any.
    pub fn failure(&self) -> Option<String> {
        self.failure.borrow().clone()
    }

    /// What to do when the store failed: go on, or stop if it is required.
    fn unavailable(&self) -> Admit {
        match (self.required, self.failure()) {
            (true, Some(e)) => Admit::Unavailable(e),
            _ => Admit::Go,
        }
    }

    /// Whether the store is still worth asking: after its first failure in a
    /// run it is not, so an outage costs a run one timeout at most.
    fn usable(&self) -> bool {
        self.failure.borrow().is_none()
    }

    /// Reads the record, unless the store has already failed this run.
    fn read(&self) -> Option<(ScopeState, Millis)> {
        if !self.usable() {
            return None;
        }
        self.store
            .read(&self.name)
            .map_err(|e| self.failed(&e))
            .ok()
    }

    fn update(&self, change: &mut dyn FnMut(&mut ScopeState, Millis)) -> bool {
        if !self.usable() {
            return false;
        }
        let mut seen = None;
        let result = self.store.update(&self.name, &mut |state, now| {
            change(state, now);
            // Kept for `abide state` (a record of an older version gains it
            // with its next change).
            if state.name.as_deref() != Some(&self.name) {
                state.name = Some(self.name.clone());
            }
            seen = Some(state.clone());
        });
        if let Some(state) = seen {
            *self.seen.borrow_mut() = state;
        }
        if let Err(e) = &result {
            self.failed(e);
        }
        result.is_ok()
    }

    /// May this process send now? `patience` is the longest it could wait
    /// for a `--rate` slot; a slot within it is reserved, and a half-open
    /// probe is claimed, as the scope says yes.
    pub fn admit(&self, patience: Duration, reserve_rate: bool) -> Admit {
        let admit = self.ask(patience, reserve_rate);
        if admit == Admit::Go {
            *self.flight.borrow_mut() = Some(Flight::start(&self.name));
        }
        admit
    }

    fn ask(&self, patience: Duration, reserve_rate: bool) -> Admit {
        let Some((state, now)) = self.read() else {
            return self.unavailable();
        };
        let idle = scope::is_idle(&state, now, &self.policy_now(&state), &self.endpoint);
        *self.seen.borrow_mut() = state;
        if idle {
            return Admit::Go;
        }
        let mut admit = Admit::Go;
        let mut waiting = 0;
        let updated = self.update(&mut |state, now| {
            let patience_end = now.saturating_add(clock::ceil_ms(patience));
            let (deadline, reserve_rate) = match self.just_in_time {
                true => (now, true),
                false => (patience_end, reserve_rate),
            };
            // Only a wait this run would take joins the gate's waiters.
            let queue = |state: &mut ScopeState, until: Millis| {
                until > patience_end || scope::queue(state, now, &self.policy, &self.me, until)
            };
            let admission = scope::admit(
                state,
                now,
                deadline,
                &self.policy_now(state),
                &self.me,
                &self.endpoint,
                reserve_rate,
            );
            admit = match admission {
                Admission::Go { at, .. } if at <= now => {
                    self.admitted.set(now);
                    Admit::Go
                }
                Admission::Go { at, .. } => Admit::Wait {
                    wait: after(now, at),
                    cause: scope::Wait::Rate,
                    own: false,
                },
                Admission::Wait {
                    until,
                    cause: scope::Wait::Gate(_),
                } if self.policy.max_delayed.is_some() && !queue(state, until) => {
                    waiting = scope::waiting(state, now);
                    Admit::QueueFull {
                        wait: after(now, until),
                        limit: self.policy.max_delayed.unwrap_or_default(),
                    }
                }
                Admission::Wait { until, cause } => Admit::Wait {
                    wait: after(now, until),
                    cause,
                    own: matches!(cause, scope::Wait::Gate(_)) && scope::own_gate(state, &self.me),
                },
            };
            if matches!(admit, Admit::Go) {
                scope::dequeue(state, &self.me);
            }
        });
        if !updated {
            return self.unavailable();
        }
        if let Admit::QueueFull { wait, limit } = admit {
            *self.refusal.borrow_mut() = Some(Refusal::QueueFull {
                waiting,
                limit,
                opens_in: wait,
            });
        }
        admit
    }

    /// Whether the scope's gate is open now (a store that cannot be read
    /// does not hold anyone back).
    pub fn gate_open(&self) -> bool {
        self.read()
            .is_none_or(|(state, now)| scope::gate_open(&state, now))
    }

    /// Whether another process is still probing a breaker this one waits on
    /// (a store that cannot be read holds no one back).
    pub fn probed_by_another(&self) -> bool {
        self.read().is_some_and(|(state, now)| {
            scope::probed_by_another(&state, now, &self.me, &self.endpoint)
        })
    }

    /// Publishes what an attempt taught (before the process sleeps on it);
    /// `answer`, when one came: whether it was a 429, and its quota.
    /// The scope's other requests of this process still in flight count
    /// against the quota the answer says is left.
    pub fn learn(&self, lesson: &Lesson, answer: Option<(bool, Option<Quota>)>) -> Learned {
        let learned = self.keep(lesson, answer);
        if let Some(then) = &self.after_lesson {
            then();
        }
        learned
    }

    fn keep(&self, lesson: &Lesson, answer: Option<(bool, Option<Quota>)>) -> Learned {
        let flight = self.flight.borrow_mut().take();
        let lesson = &Lesson {
            in_flight: flight.as_ref().map_or(0, Flight::others),
            ..*lesson
        };
        drop(flight);
        let pace = self.pace.zip(answer);
        let trivial = {
            let seen = self.seen.borrow();
            pace.is_none()
                && lesson.health == scope::Health::Alive
                && lesson.retry_after.is_none()
                && lesson.quota_reset.is_none()
                && lesson.quota.is_none()
                && seen.meter.is_none()
                && seen.next_allowed_at.is_none()
                && scope::breakers_quiet(&seen, &self.endpoint)
        };
        let mut learned = Learned::default();
        if trivial {
            return learned;
        }
        self.update(&mut |state, now| {
            if let Some((params, (refused, quota))) = pace {
                let answer = pace::Answer {
                    sent: self.admitted.get(),
                    refused,
                    quota,
                };
                if let pace::Change::Cut { from, to } =
                    pace::learn(&mut state.pace, now, &answer, &params)
                {
                    self.notes.borrow_mut().push(format!(
                        "--rate auto: a refusal cut the pace from {from:.1} to {to:.1} requests/s"
                    ));
                }
            }
            let news = scope::learn(state, now, lesson, &self.policy, &self.me, &self.endpoint);
            // Relative to the store's clock, which set the moment.
            learned.opened = news
                .iter()
                .filter_map(|n| match *n {
                    BreakerNews::Opened { until, level } => Some((after(now, until), level)),
                    BreakerNews::Closed { .. } => None,
                })
                .max_by_key(|&(wait, _)| wait);
            learned.news = news;
        });
        learned
    }

    /// Before retry number `attempt`: spends a retry from the scope's budget
    /// and, with `backoff`, closes the scope's gate for it (see
    /// [`scope::before_retry`]); else how long until the budget holds a
    /// retry again. A store that fails refuses nothing.
    pub fn before_retry(&self, attempt: u32, backoff: Option<Duration>) -> Result<(), Duration> {
        let mut refused = None;
        self.update(&mut |state, now| {
            refused = scope::before_retry(state, now, &self.policy, attempt, backoff, &self.me)
                .err()
                .map(|until| Refusal::RetryBudget {
                    attempt,
                    left: retry_budget::level(&state.retry_budget, now),
                    capacity: retry_budget::CAPACITY,
                    company: retry_budget::company(&state.retry_budget, now, &self.me),
                    refills_in: after(now, until),
                });
        });
        match refused {
            Some(refusal @ Refusal::RetryBudget { refills_in, .. }) => {
                *self.refusal.borrow_mut() = Some(refusal);
                Err(refills_in)
            }
            _ => Ok(()),
        }
    }

    /// The refusal by the scope's limits (its retry budget, `--max-delayed`)
    /// that ended the run, once.
    pub fn take_refusal(&self) -> Option<Refusal> {
        self.refusal.take()
    }

    /// After a successful first attempt: what it earns the scope's budget
    /// (written only when the bucket, as last seen, was not full).
    pub fn earn(&self) {
        if scope::may_earn(&self.seen.borrow(), &self.policy) {
            self.update(&mut |state, now| scope::earn(state, now, &self.policy));
        }
    }

    /// Takes a concurrency slot for at most `lease` if `--max-concurrent` is
    /// set and one is free; `Some(None)` means "all taken, wait".
    pub fn try_slot(&self, lease: Duration) -> Option<Option<Slot>> {
        let limit = self.max_concurrent.filter(|_| self.usable())?;
        match self.store.try_slot(&self.name, limit, lease) {
            Ok(slot) => Some(slot),
            Err(e) => {
                self.failed(&e);
                None
            }
        }
    }

    /// At the end of a run: gives back the probes this process claimed but
    /// never used, and (unless the retry budget `refused` it) its place among
    /// the budget's spenders.
    pub fn release(&self, refused: bool) {
        let seen = self.seen.borrow().clone();
        let spender = !refused && retry_budget::spent_by(&seen.retry_budget, &self.me);
        if scope::holds_probe(&seen, &self.me) || scope::queued(&seen, &self.me) || spender {
            self.update(&mut |state, _| scope::release(state, &self.me, refused));
        }
    }

    /// How many times in a row this request (by fingerprint) failed recently.
    pub fn repeats(&self, fingerprint: &str) -> u32 {
        self.read()
            .map_or(0, |(state, now)| scope::repeats(&state, fingerprint, now))
    }

    /// After a run: counts a NON_RETRYABLE or INVALID_RESPONSE (`failure`,
    /// the error's identity) against the request, or clears its count.
    pub fn remember(&self, fingerprint: &str, failure: Option<&str>) {
        // Hashed: an error's code may say more than it should.
        let failure = failure.map(crate::state::scope_hash);
        let failure = failure.as_deref();
        self.update(&mut |state, now| scope::remember(state, fingerprint, failure, now));
    }

    /// The record of `task`: its idempotency key kept from an earlier run,
    /// else `fresh`, stored (written and renamed into place) before anything
    /// is sent, and bound to the request's `fingerprint`. Refused when the
    /// task was kept for another request, or the state cannot keep it.
    pub fn task_key(
        &self,
        task: &str,
        fresh: &str,
        fingerprint: &str,
        ttl: Duration,
    ) -> Result<scope::TaskKey, TaskRefusal> {
        // Kept by hash: a task id may say more than it should.
        let task = crate::state::scope_hash(task);
        let mut kept = Ok(None);
        let stored = self.update(&mut |state, now| {
            kept = match scope::task_key(state, &task, fresh, now, ttl) {
                Some(_) => scope::bind_task(state, &task, fingerprint),
                None => Ok(None),
            };
        });
        match kept {
            // A key the store failed to keep would differ on the rerun.
            _ if !stored => Err(TaskRefusal::Unkept(self.failure().unwrap_or_default())),
            Err(scope::TaskDiffers) => Err(TaskRefusal::Differs),
            Ok(Some(kept)) => Ok(kept),
            Ok(None) => Err(TaskRefusal::Unkept(format!(
                "the scope already keeps {} live task keys; a new task waits until \
                 one expires (--task-ttl), or goes to its own --scope",
                scope::MAX_TASKS
            ))),
        }
    }

    /// Before an attempt of `task` goes on the wire: counts it in the
    /// task's record, written (renamed into place, or committed) before it
    /// is sent, so that a run killed after sending it (SIGKILL, OOM, a CI
    /// timeout) still leaves it counted for `--task-attempts`; an attempt
    /// cut before it reached the wire counts too, the safe side. Refused,
    /// uncounted, when the task has sent `allowed` already (by any run of
    /// it, such as one started at the same time): `Ok` with the count after
    /// it, `Err` with the count; `None` if the store failed.
    pub fn task_attempt(&self, task: &str, allowed: Option<u32>) -> Option<Result<u32, u32>> {
        let task = crate::state::scope_hash(task);
        let mut ticket = None;
        let stored = self.update(&mut |state, _| {
            ticket = scope::task_ticket(state, &task, allowed);
        });
        ticket.filter(|_| stored)
    }

    /// After a run of `task` that learned it: keeps the provider's id of
    /// what the task's write created (its requests are counted as they go).
    pub fn task_created(&self, task: &str, operation_id: &str) {
        let task = crate::state::scope_hash(task);
        self.update(&mut |state, _| scope::task_ran(state, &task, 0, Some(operation_id)));
    }

    /// The breaker whose half-open probe this process holds, as last seen:
    /// its attempt is the probe.
    pub fn probing(&self) -> Option<Level> {
        scope::probe_level(&self.seen.borrow(), &self.me, &self.endpoint)
    }

    pub fn take_notes(&self) -> Vec<String> {
        let mut notes = self.store.take_notes();
        notes.append(&mut self.notes.borrow_mut());
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::retry_budget::{BudgetPolicy, CAPACITY, RETRY, RetryBudget, Spender};
    use crate::rules::scope::GateCause;
    use crate::state::memory::Memory;

    const NOW: Millis = 1_000_000;

    fn shared(state: ScopeState, max_delayed: Option<u32>) -> Shared {
        let policy = ScopePolicy {
            rate_interval: None,
            breaker_threshold: 5,
            breaker_first: Duration::from_millis(500),
            breaker_cooldown: Duration::from_secs(30),
            probe_ttl: Duration::from_secs(31),
            retry_budget: Some(BudgetPolicy { per_success: 200 }),
            max_delayed,
        };
        let store = Memory::new(state, || NOW);
        Shared::new(
            Box::new(store),
            "s".into(),
            "ep".into(),
            policy,
            None,
            false,
        )
    }

    #[test]
    fn a_refusal_by_the_scopes_limits_keeps_what_it_weighed_once() {
        // Two other runs emptied the bucket a second ago: a tenth is back.
        let spender = |by: &str| Spender {
            by: by.into(),
            at: NOW - 1_000,
        };
        let spent = ScopeState {
            retry_budget: RetryBudget {
                spent: CAPACITY,
                at: NOW - 1_000,
                spenders: vec![spender("a"), spender("b")],
            },
            ..ScopeState::default()
        };
        let run = shared(spent, None);
        assert_eq!(run.before_retry(1, None), Ok(()), "a first attempt goes");
        assert_eq!(run.take_refusal(), None);
        let Err(refills_in) = run.before_retry(2, None) else {
            panic!("the retry was not refused");
        };
        assert_eq!(
            run.take_refusal(),
            Some(Refusal::RetryBudget {
                attempt: 2,
                left: RETRY / 10,
                capacity: CAPACITY,
                company: 2,
                refills_in,
            })
        );
        // 1 s of refill is a tenth back; nine tenths more take 9 s.
        assert_eq!(refills_in, Duration::from_secs(9));
        assert_eq!(run.take_refusal(), None, "taken once");

        // One run waits on a gate closed for 2 s more; the next is refused.
        let gated = ScopeState {
            next_allowed_at: Some(NOW + 2_000),
            gate_cause: Some(GateCause::RetryAfter),
            ..ScopeState::default()
        };
        let full = shared(gated, Some(1));
        let patience = Duration::from_secs(60);
        assert!(matches!(full.admit(patience, true), Admit::Wait { .. }));
        assert_eq!(full.take_refusal(), None);
        let other = Shared {
            me: "another".into(),
            ..full
        };
        assert_eq!(
            other.admit(patience, true),
            Admit::QueueFull {
                wait: Duration::from_secs(2),
                limit: 1
            }
        );
        assert_eq!(
            other.take_refusal(),
            Some(Refusal::QueueFull {
                waiting: 1,
                limit: 1,
                opens_in: Duration::from_secs(2),
            })
        );
    }

    #[test]
    fn each_attempt_of_a_task_is_counted_as_it_goes() {
        let run = shared(ScopeState::default(), None);
        let kept = run
            .task_key("t", "key-1", "fp", Duration::from_secs(60))
            .unwrap();
        assert_eq!(kept.sent, 0);
        assert_eq!(run.task_attempt("t", Some(2)), Some(Ok(1)));
        assert_eq!(run.task_attempt("t", Some(2)), Some(Ok(2)));
        // The third is refused, uncounted: another run of the task took it.
        assert_eq!(run.task_attempt("t", Some(2)), Some(Err(2)));
        run.task_created("t", "/orders/9");
        let again = run
            .task_key("t", "key-2", "fp", Duration::from_secs(60))
            .unwrap();
        assert_eq!(
            (
                again.key.as_str(),
                again.sent,
                again.operation_id.as_deref()
            ),
            ("key-1", 2, Some("/orders/9"))
        );
    }
}
