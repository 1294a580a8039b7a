//! An in-memory `Store` on a clock the test gives, so that the loop's
//! admission path (gate, breaker, `--rate`, `--max-concurrent` slots) is
//! unit-tested without files, processes or sleeping. "Another process" is a
//! change to the record at a set time, or slots it holds. Every scope starts
//! as the record the test gives; those a run touched are listed.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::Duration;

use crate::clock::Millis;
use crate::rules::scope::ScopeState;
use crate::state::store::{Stored, check_hash, forget, is_empty, sort};
use crate::state::{Slot, Store, scope_hash};

/// What another process does to the record: at this store time, this change.
pub type Elsewhere = (Millis, fn(&mut ScopeState));

pub struct Memory {
    /// What a scope not yet touched holds.
    first: ScopeState,
    /// The scopes touched, by hash.
    states: RefCell<BTreeMap<String, ScopeState>>,
    now: Box<dyn Fn() -> Millis>,
    elsewhere: Cell<Option<Elsewhere>>,
    /// Slots in use, by this run and by the others the test says hold some.
    slots: Arc<AtomicU32>,
}

impl Memory {
    pub fn new(state: ScopeState, now: impl Fn() -> Millis + 'static) -> Memory {
        Memory {
            first: state,
            states: RefCell::default(),
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

    /// The store's time, and the record of the scope by `hash`, once
    /// another process made the change due by then.
    fn touch<T>(&self, hash: String, with: impl FnOnce(&mut ScopeState, Millis) -> T) -> T {
        let now = (self.now)();
        let mut states = self.states.borrow_mut();
        let state = states.entry(hash).or_insert_with(|| self.first.clone());
        if let Some((at, change)) = self.elsewhere.get()
            && now >= at
        {
            change(state);
            self.elsewhere.set(None);
        }
        with(state, now)
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
    fn read(&self, scope: &str) -> io::Result<(ScopeState, Millis)> {
        Ok(self.touch(scope_hash(scope), |state, now| (state.clone(), now)))
    }

    fn update(
        &self,
        scope: &str,
        change: &mut dyn FnMut(&mut ScopeState, Millis),
    ) -> io::Result<()> {
        self.touch(scope_hash(scope), |state, now| change(state, now));
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

    fn slots_in_use(&self, hash: &str) -> io::Result<u32> {
        check_hash(hash)?;
        Ok(self.slots.load(std::sync::atomic::Ordering::SeqCst))
    }

    fn list(&self) -> io::Result<(Vec<Stored>, Millis)> {
        let mut listing: Vec<Stored> = self
            .states
            .borrow()
            .iter()
            .map(|(hash, state)| Stored {
                hash: hash.clone(),
                state: state.clone(),
            })
            .collect();
        sort(&mut listing);
        Ok((listing, (self.now)()))
    }

    fn clear(&self, hash: &str, tasks: bool) -> io::Result<()> {
        check_hash(hash)?;
        let empty = self.touch(hash.to_string(), |state, now| {
            forget(state, now, tasks);
            is_empty(state)
        });
        if empty {
            self.states.borrow_mut().remove(hash);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_clears_the_scopes_it_was_asked_about() {
        let store = Memory::new(ScopeState::default(), || 1_764_000_000_000);
        crate::state::store::lists_and_clears(&store);
    }
}
