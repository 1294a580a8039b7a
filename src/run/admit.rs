//! Admission: before an attempt, the scope's breaker, gate and `--rate`,
//! then a `--max-concurrent` slot, waited for as the scope says or ending
//! the run; after it, what the scope learns (a Retry-After or a used-up
//! quota closes the gate, the quota an answer says is left bounds the
//! requests let go until it resets, failures count towards the breaker).

use std::time::Duration;

use super::attempt::Attempted;
use super::{End, Event, Loop, Run};
use crate::clock::{Clock, Sleeper};
use crate::exit::Signal;
use crate::rules::decision::{self, Draw, Next, StopWhy, WaitCause};
use crate::rules::delay;
use crate::rules::scope::{self, Lesson};
use crate::run::record::Ending;
use crate::state::{Admit, Learned, Shared, Slot};

/// The longest pause between two looks for a free concurrency slot.
const SLOT_POLL_MAX: Duration = Duration::from_millis(20);
/// The longest pause between two looks at another run's probe: a herd of
/// waiters reads the state 20 times a second each, and learns of the
/// probe's result within 50 ms.
const PROBE_POLL_MAX: Duration = Duration::from_millis(50);

impl Loop<'_> {
    /// Before attempt `number`: the breaker, the gate and `--rate`, then a
    /// concurrency slot. Waits as the scope says, or ends the run.
    pub(super) fn pass_scope(
        &self,
        number: u32,
        clock: &dyn Clock,
        sleeper: &mut dyn Sleeper,
        draw: &mut dyn FnMut() -> f64,
        run: &mut Run,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<Option<Slot>, End> {
        let Some(shared) = self.shared else {
            return Ok(None);
        };
        // A --rate slot is reserved once per attempt; the breaker and the
        // gate are asked again after every wait, since another process may
        // have closed them in the meantime.
        let mut rate_reserved = false;
        loop {
            let elapsed = clock.now() - run.start;
            let left = self.policy.budget.saturating_sub(elapsed);
            let patience = self.policy.max_wait.map_or(left, |m| m.min(left));
            let (cause, wait, own) = match shared.admit(patience, !rate_reserved) {
                Admit::Go => {
                    if let Some(level) = shared.probing() {
                        on_event(Event::Probing(level));
                    }
                    let slot = self.take_slot(shared, clock, sleeper, run)?;
                    // Waiting for the slot, the gate may have closed again.
                    if slot.is_none() || shared.gate_open() {
                        return Ok(slot);
                    }
                    continue;
                }
                Admit::Wait { wait, cause, own } => (cause, wait, own),
                Admit::QueueFull { wait, limit } => {
                    let why = StopWhy::QueueFull { wait, limit };
                    return Err((Ending::Decided(why), Some(wait)));
                }
                Admit::Unavailable(e) => {
                    let why = Ending::Internal(format!(
                        "the shared state is unavailable ({e}) and --state-required is set"
                    ));
                    return Err((why, None));
                }
            };
            match decision::scope_step(cause, wait, elapsed, self.policy, Draw(draw())) {
                Next::Stop(stop) => {
                    return Err((Ending::Decided(stop.why), stop.not_before));
                }
                Next::Wait(wait) => {
                    on_event(Event::Waiting {
                        wait: &wait,
                        retry: number - 1,
                        left: self.policy.budget.saturating_sub(elapsed),
                    });
                    let before = clock.now();
                    let slept = match cause {
                        scope::Wait::Probe(_) => {
                            self.behind_probe(shared, wait.duration, clock, sleeper, run)
                        }
                        _ => run.sleep(wait.duration, clock, sleeper),
                    };
                    let waited = clock.now() - before;
                    // A run's own Retry-After, met again at the gate, is no
                    // news: its wait is already in the history.
                    if !own {
                        run.note_scope_wait(waited, cause);
                    }
                    if let Err(signal) = slept {
                        // The gate, or the open breaker, still holds for
                        // whoever calls next.
                        let not_before = decision::cut_scope_wait(cause, wait.duration, waited);
                        return Err((Ending::Cancelled(signal), not_before));
                    }
                    rate_reserved |= cause == scope::Wait::Rate;
                }
            }
        }
    }

    /// Waits behind another run's half-open probe, for at most `limit`:
    /// until the probe ends, which is when its result (the breaker closed or
    /// open again) tells this run what to do.
    fn behind_probe(
        &self,
        shared: &Shared,
        limit: Duration,
        clock: &dyn Clock,
        sleeper: &mut dyn Sleeper,
        run: &mut Run,
    ) -> Result<(), Signal> {
        let start = clock.now();
        let mut pause = Duration::from_millis(1);
        loop {
            let left = limit.saturating_sub(clock.now() - start);
            if left.is_zero() || !shared.probed_by_another() {
                return Ok(());
            }
            run.sleep(pause.min(left), clock, sleeper)?;
            pause = (pause * 2).min(PROBE_POLL_MAX);
        }
    }

    /// A `--max-concurrent` slot of the scope, waited for within the budget;
    /// `None` when there is no limit.
    fn take_slot(
        &self,
        shared: &Shared,
        clock: &dyn Clock,
        sleeper: &mut dyn Sleeper,
        run: &mut Run,
    ) -> Result<Option<Slot>, End> {
        let mut pause = Duration::from_millis(1);
        loop {
            // The slot is held for the attempt; if this process dies, its
            // lease ends a second after the attempt would have.
            let left = self.policy.budget.saturating_sub(clock.now() - run.start);
            let lease = self.limits(left).head + Duration::from_secs(1);
            match shared.try_slot(lease) {
                None => return Ok(None),
                Some(Some(slot)) => return Ok(Some(slot)),
                Some(None) => {}
            }
            if left <= pause {
                let why = StopWhy::WaitOverBudget { wait: pause, left };
                return Err((Ending::Decided(why), None));
            }
            run.sleep(pause, clock, sleeper)
                .map_err(|signal| (Ending::Cancelled(signal), None))?;
            pause = (pause * 2).min(SLOT_POLL_MAX);
        }
    }

    /// After attempt `number` (which answered `status`), the scope's retry
    /// budget: a retry spends from it, or ends the run at once when it is
    /// spent; a first attempt that succeeded earns it. A retry after a 429
    /// or 503 without a server delay closes the scope's gate for the
    /// backoff chosen, so that the scope's other runs back off with it
    /// (but a 429 under `--rate auto`, which cut the scope's pace).
    pub(super) fn spend_retry(&self, number: u32, status: Option<u16>, next: Next) -> Next {
        let Some(shared) = self.shared else {
            return next;
        };
        match &next {
            Next::Wait(wait) => {
                let backoff = matches!(wait.cause, WaitCause::Backoff { .. });
                // Under --rate auto a 429 already cut the scope's pace: that
                // is its backoff, and holding every request for this one's
                // too would idle the scope well below what it learned.
                let paced = status == Some(429) && shared.learns_pace();
                let gate = (scope::backoff_closes_gate(status, !backoff) && !paced)
                    .then_some(wait.duration);
                let refused = shared.before_retry(number + 1, gate).err();
                decision::budget_refused(next, refused)
            }
            Next::Stop(stop) if number == 1 && stop.why == StopWhy::Success => {
                shared.earn();
                next
            }
            Next::Stop(_) => next,
        }
    }

    /// What the scope learns from an attempt: a Retry-After or a used-up
    /// quota closes its gate; failures count towards its breaker.
    pub(super) fn teach_scope(
        &self,
        attempted: &Attempted,
        on_event: &mut dyn FnMut(Event),
    ) -> Learned {
        let Some(shared) = self.shared else {
            return Learned::default();
        };
        let lesson = Lesson {
            health: scope::health(attempted.observation, &self.policy.retry_on),
            retry_after: attempted
                .server
                .map(|s| delay::honoured(s.delay, self.policy.floor)),
            // Retry-After takes precedence over the quota fields.
            quota_reset: attempted
                .quota
                .and_then(crate::rules::ratelimit::exhausted)
                .filter(|_| attempted.server.is_none()),
            quota: attempted.quota,
            // Counted by the scope state, which knows this process's flights.
            in_flight: 0,
        };
        // For --rate auto: whether the server refused, and its quota.
        let answer = attempted
            .answer
            .as_ref()
            .map(|_| (attempted.attempt.status == Some(429), attempted.quota));
        let learned = shared.learn(&lesson, answer);
        for &news in &learned.news {
            on_event(Event::Breaker(news));
        }
        learned
    }
}
