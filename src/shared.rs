//! The scope state as a run uses it: the pure rules of `scope` applied to a
//! [`Store`], with a fast path that only reads when there is nothing shared
//! to honour. A store that fails is noted and the run goes on without it:
//! shared state must never stop the traffic it protects.

use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::scope::{self, Admission, BreakerNews, Lesson, Millis, ScopePolicy, ScopeState};
use crate::store::{Slot, Store};

pub struct Shared {
    store: Box<dyn Store>,
    pub name: String,
    pub policy: ScopePolicy,
    pub max_concurrent: Option<u32>,
    /// This process, as the holder of a half-open probe.
    me: String,
    /// The record as last seen, to skip writes that would change nothing.
    seen: RefCell<ScopeState>,
    notes: RefCell<Vec<String>>,
}

/// Wall-clock time as shared between processes, rounded down: compared with
/// a gate, it never says the gate has opened early.
pub fn epoch_millis(t: SystemTime) -> Millis {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

/// Rounded up: a gate computed from it never opens early.
pub fn epoch_millis_ceil(t: SystemTime) -> Millis {
    scope::millis(t.duration_since(UNIX_EPOCH).unwrap_or_default())
}

impl Shared {
    pub fn new(
        store: Box<dyn Store>,
        name: String,
        policy: ScopePolicy,
        max_concurrent: Option<u32>,
    ) -> Shared {
        Shared {
            store,
            name,
            policy,
            max_concurrent,
            me: format!("{}-{:08x}", std::process::id(), rand::random::<u32>()),
            seen: RefCell::default(),
            notes: RefCell::default(),
        }
    }

    fn update(&self, change: &mut dyn FnMut(&mut ScopeState)) -> bool {
        let mut seen = None;
        let result = self.store.update(&self.name, &mut |state| {
            change(state);
            seen = Some(state.clone());
        });
        if let Some(state) = seen {
            *self.seen.borrow_mut() = state;
        }
        if let Err(e) = &result {
            self.notes
                .borrow_mut()
                .push(format!("scope state unavailable, going on without it: {e}"));
        }
        result.is_ok()
    }

    /// May this process send now? Reserves a `--rate` slot and claims a
    /// half-open probe when it says yes.
    pub fn admit(&self, now: SystemTime, deadline: SystemTime) -> Admission {
        let now = epoch_millis(now);
        let state = self.store.read(&self.name);
        let idle = scope::is_idle(&state, now, &self.policy);
        *self.seen.borrow_mut() = state;
        let go = Admission::Go {
            at: now,
            probe: false,
        };
        if idle {
            return go;
        }
        let deadline = epoch_millis(deadline);
        let mut admission = go.clone();
        if self.update(&mut |state| {
            admission = scope::admit(state, now, deadline, &self.policy, &self.me);
        }) {
            admission
        } else {
            go
        }
    }

    /// Publishes what an attempt taught (before the process sleeps on it).
    pub fn learn(&self, now: SystemTime, lesson: &Lesson) -> BreakerNews {
        let trivial = {
            let seen = self.seen.borrow();
            lesson.health == scope::Health::Alive
                && lesson.retry_after_until.is_none()
                && lesson.quota_until.is_none()
                && seen.next_allowed_at.is_none()
                && seen.breaker == scope::Breaker::default()
        };
        if trivial {
            return BreakerNews::Unchanged;
        }
        let now = epoch_millis(now);
        let mut news = BreakerNews::Unchanged;
        self.update(&mut |state| news = scope::learn(state, now, lesson, &self.policy, &self.me));
        news
    }

    /// Takes a concurrency slot if `--max-concurrent` is set and one is free;
    /// `Ok(None)` means "all taken, wait".
    pub fn try_slot(&self) -> Option<Option<Slot>> {
        let limit = self.max_concurrent?;
        match self.store.try_slot(&self.name, limit) {
            Ok(slot) => Some(slot),
            Err(e) => {
                self.notes.borrow_mut().push(format!(
                    "concurrency slots unavailable, going on without them: {e}"
                ));
                None
            }
        }
    }

    /// At the end of a run: gives back a probe this process claimed but never used.
    pub fn release(&self) {
        let holds_probe = self
            .seen
            .borrow()
            .breaker
            .probe
            .as_ref()
            .is_some_and(|p| p.holder == self.me);
        if holds_probe {
            self.update(&mut |state| scope::release(state, &self.me));
        }
    }

    /// How many times in a row this request (by fingerprint) failed recently.
    pub fn repeats(&self, fingerprint: &str, now: SystemTime) -> u32 {
        scope::repeats(&self.store.read(&self.name), fingerprint, epoch_millis(now))
    }

    /// After a run: counts a NON_RETRYABLE or INVALID_RESPONSE against the
    /// request, or clears its count.
    pub fn remember(&self, fingerprint: &str, failed: bool, now: SystemTime) {
        let now = epoch_millis(now);
        self.update(&mut |state| scope::remember(state, fingerprint, failed, now));
    }

    /// The idempotency key of `task`: kept from an earlier run, else `fresh`,
    /// stored before anything is sent. `None` when the state cannot keep it.
    pub fn task_key(
        &self,
        task: &str,
        fresh: &str,
        ttl: std::time::Duration,
        now: SystemTime,
    ) -> Option<String> {
        let now = epoch_millis(now);
        let mut key = None;
        self.update(&mut |state| key = Some(scope::task_key(state, task, fresh, now, ttl)))
            .then_some(())?;
        key
    }

    /// The breaker as last seen, for `-v`.
    pub fn breaker(&self) -> scope::Breaker {
        self.seen.borrow().breaker.clone()
    }

    pub fn take_notes(&self) -> Vec<String> {
        let mut notes = self.store.take_notes();
        notes.append(&mut self.notes.borrow_mut());
        notes
    }
}
