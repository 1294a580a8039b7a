//! An in-memory `Store` on a clock the test gives, so that the loop's
//! admission path (gate, breaker, `--rate`, `--max-concurrent` slots) is
//! unit-tested without files, processes or sleeping. "Another process" is a
//! change to the record at a set time, or slots it holds.

use std::cell::{Cell, RefCell};
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::Duration;

use crate::clock::Millis;
use crate::rules::scope::ScopeState;
use crate::state::{Slot, Store};

/// What another process does to the record: at this store time, this change.
pub type Elsewhere = (Millis, fn(&mut ScopeState));

pub struct Memory {
    state: RefCell<ScopeState>,
    now: Box<dyn Fn() -> Millis>,
    elsewhere: Cell<Option<Elsewhere>>,
    /// Slots in use, by this run and by the others the test says hold some.
    slots: Arc<AtomicU32>,
}

impl Memory {
    pub fn new(state: ScopeState, now: impl Fn() -> Millis + 'static) -> Memory {
        Memory {
            state: RefCell::new(state),
            now: Box::new(now),
            elsewhere: Cell::new(None),
            slots: Arc::default(),
        }
    }

    /// Another process changes the record once the store's time reaches `at`.
    pub fn elsewhere(self, change: Option<Elsewhere>) -> Memory {
        self.elsewhere.set(change);
        self
    }

    /// Other processes hold `n` slots for good.
    pub fn slots_held(self, n: u32) -> Memory {
        self.slots.store(n, SeqCst);
        self
    }

    /// The count of slots in use, to look at after the store was handed on.
    pub fn slots(&self) -> Arc<AtomicU32> {
        Arc::clone(&self.slots)
    }

    fn now(&self) -> Millis {
        let now = (self.now)();
        if let Some((at, change)) = self.elsewhere.get()
            && now >= at
        {
            change(&mut self.state.borrow_mut());
            self.elsewhere.set(None);
        }
        now
    }
}

/// A slot of the memory store, given back when dropped.
struct Held(Arc<AtomicU32>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

impl Store for Memory {
    fn read(&self, _: &str) -> io::Result<(ScopeState, Millis)> {
        let now = self.now();
        Ok((self.state.borrow().clone(), now))
    }

    fn update(&self, _: &str, change: &mut dyn FnMut(&mut ScopeState, Millis)) -> io::Result<()> {
        let now = self.now();
        change(&mut self.state.borrow_mut(), now);
        Ok(())
    }

    fn try_slot(&self, _: &str, limit: u32, _: Duration) -> io::Result<Option<Slot>> {
        let taken = self
            .slots
            .fetch_update(SeqCst, SeqCst, |n| (n < limit).then_some(n + 1))
            .is_ok();
        Ok(taken.then(|| Slot::new(Held(Arc::clone(&self.slots)))))
    }

    fn take_notes(&self) -> Vec<String> {
        Vec::new()
    }
}
