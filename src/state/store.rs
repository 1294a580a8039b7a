//! Where scope state lives, behind [`Store`]: a read-modify-write of one
//! scope's record, and concurrency slots, so that the policy code does not
//! know which backend it talks to. [`file`] keeps the state on this machine;
//! [`redis`] shares it across machines.

use std::io;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::clock::{self, Millis};

use crate::rules::scope::ScopeState;

/// A held concurrency slot; dropping it lets another request of the scope in.
pub struct Slot {
    _held: Box<dyn Send>,
}

impl Slot {
    /// A slot that is held as long as `held` lives (a locked file, a lease).
    pub fn new(held: impl Send + 'static) -> Slot {
        Slot {
            _held: Box::new(held),
        }
    }
}

/// Every time in the scope state comes from the store's own clock (the
/// `Millis` handed to readers and to `change`), so that all processes sharing
/// a store agree on it.
pub trait Store {
    /// The scope's record as last written (an unreadable one reads as empty),
    /// and the store's time; an error when the store cannot be reached.
    fn read(&self, scope: &str) -> io::Result<(ScopeState, Millis)>;
    /// Applies `change` to the scope's record atomically with respect to
    /// every other process, passing the store's time.
    fn update(
        &self,
        scope: &str,
        change: &mut dyn FnMut(&mut ScopeState, Millis),
    ) -> io::Result<()>;
    /// Takes one of `limit` concurrency slots of the scope, if one is free,
    /// for at most `lease` (a backend whose holders can vanish frees it then).
    fn try_slot(&self, scope: &str, limit: u32, lease: Duration) -> io::Result<Option<Slot>>;
    /// Things worth telling a `-v` reader (a corrupted file that was reset).
    fn take_notes(&self) -> Vec<String>;
    /// Every scope record the store keeps (an unreadable one as empty, with
    /// a note), sorted by name (records of older versions, which keep no
    /// name, by hash, last), and the store's time.
    fn list(&self) -> io::Result<(Vec<Stored>, Millis)>;
    /// Makes the scope whose hash is `hash` ([`scope_hash`] of its name, as
    /// [`Stored::hash`] gives it) forget what [`forget`] forgets, atomically
    /// with respect to every other process; a record left with nothing to
    /// remember is removed. Concurrency slots, held by live processes, stay.
    fn clear(&self, hash: &str, tasks: bool) -> io::Result<()>;
}

/// One scope's record as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The hash its file or key is named by.
    pub hash: String,
    pub state: ScopeState,
}

impl Stored {
    /// What `abide state` calls the scope: its name, else (a record of an
    /// older version) its hash.
    pub fn label(&self) -> &str {
        self.state.name.as_deref().unwrap_or(&self.hash)
    }
}

/// Sorts a listing as [`Store::list`] promises.
pub(crate) fn sort(listing: &mut [Stored]) {
    listing.sort_by(|a, b| {
        (a.state.name.is_none(), a.label()).cmp(&(b.state.name.is_none(), b.label()))
    });
}

/// The scope among `listing` that `given` names: by name, by hash, or by the
/// hash of `given` (a scope whose record keeps no name yet).
pub fn find<'a>(listing: &'a [Stored], given: &str) -> Option<&'a Stored> {
    let hash = scope_hash(given);
    listing
        .iter()
        .find(|s| s.state.name.as_deref() == Some(given))
        .or_else(|| listing.iter().find(|s| s.hash == given || s.hash == hash))
}

/// `abide state clear`: forgets the gate, the breakers, the counts of
/// repeated failures and whatever else holds runs back, and with `tasks`
/// the task keys too. The name stays, and so does `--rate` pacing still
/// ahead of `now`: it only spaces requests a moment apart, and forgetting it
/// would let a burst through while other runs are sending.
pub fn forget(state: &mut ScopeState, now: Millis, tasks: bool) {
    let kept = std::mem::take(state);
    let pacing = kept.rate_tat.is_some_and(|tat| tat > now);
    *state = ScopeState {
        name: kept.name,
        rate_tat: kept.rate_tat.filter(|_| pacing),
        rate_last: kept.rate_last.filter(|_| pacing),
        tasks: if tasks { Vec::new() } else { kept.tasks },
        ..ScopeState::default()
    };
}

/// A hash as [`scope_hash`] writes it, or an error: anything else could
/// name a path or a key outside abide's.
pub(crate) fn check_hash(hash: &str) -> io::Result<()> {
    if hash.len() == 32 && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{hash}` is not a scope's hash (32 lowercase hexadecimal digits)"),
        ))
    }
}

/// Whether a record remembers nothing but the scope's name.
pub(crate) fn is_empty(state: &ScopeState) -> bool {
    *state
        == ScopeState {
            name: state.name.clone(),
            ..ScopeState::default()
        }
}

/// Reads a stored record. What is stored is not trusted: a number past
/// [`clock::LATEST`] (the end of year 9999, the last time an outcome line
/// can say) is read as that, since every number in a record is a time or a
/// count; so no record, from a bug, another version or another user, can
/// overflow or crash a run. Anything else malformed is an error.
pub fn decode(bytes: &[u8]) -> serde_json::Result<ScopeState> {
    fn clamp(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Number(n) if n.as_u64().is_some_and(|n| n > clock::LATEST) => {
                *n = clock::LATEST.into();
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(clamp),
            serde_json::Value::Object(fields) => fields.values_mut().for_each(clamp),
            _ => {}
        }
    }
    let mut value: serde_json::Value = serde_json::from_slice(bytes)?;
    clamp(&mut value);
    serde_json::from_value(value)
}

/// Scope names are hashed into file names and keys, never used as paths and
/// never stored where they could leak (a scope may name a token).
pub fn scope_hash(scope: &str) -> String {
    let digest = Sha256::digest(scope.as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// What every backend must do for `abide state`, run on each of them (the
/// store may hold other scopes too: a shared Redis does).
#[cfg(test)]
pub(crate) fn lists_and_clears(store: &dyn Store) {
    use crate::rules::scope::{Breaker, GateCause};
    let tag = format!("{}-{:08x}", std::process::id(), rand::random::<u32>());
    let [a, b] = [format!("a-{tag}"), format!("b-{tag}")];
    for name in [&b, &a] {
        store
            .update(name, &mut |s, now| {
                s.name = Some(name.clone());
                s.next_allowed_at = Some(now + 60_000);
                s.gate_cause = Some(GateCause::RetryAfter);
                s.breaker = Breaker {
                    failures: 2,
                    ..Breaker::default()
                };
                s.rate_tat = Some(now + 60_000);
                crate::rules::scope::task_key(s, "t", "key-1", now, Duration::from_secs(60));
            })
            .unwrap();
    }
    let (listing, now) = store.list().unwrap();
    let ours: Vec<&Stored> = listing
        .iter()
        .filter(|s| s.label().ends_with(&tag))
        .collect();
    assert_eq!(
        ours.iter().map(|s| s.label()).collect::<Vec<_>>(),
        [a.as_str(), b.as_str()],
        "sorted by name"
    );
    assert_eq!(ours[0].hash, scope_hash(&a));
    assert!(ours[0].state.next_allowed_at > Some(now));
    assert_eq!(find(&listing, &a).map(|s| &s.hash), Some(&scope_hash(&a)));
    assert_eq!(
        find(&listing, &scope_hash(&b)).map(Stored::label),
        Some(b.as_str())
    );
    assert!(find(&listing, &format!("c-{tag}")).is_none());

    // Clearing forgets what holds runs back; the tasks stay unless asked.
    store.clear(&scope_hash(&a), false).unwrap();
    let (state, _) = store.read(&a).unwrap();
    assert_eq!(state.next_allowed_at, None);
    assert_eq!(state.breaker, Breaker::default());
    assert_eq!(state.tasks.len(), 1);
    assert!(state.rate_tat.is_some(), "pacing still ahead stays");
    assert_eq!(state.name.as_deref(), Some(a.as_str()));
    store.clear(&scope_hash(&a), true).unwrap();
    assert!(store.read(&a).unwrap().0.tasks.is_empty());
    // A record left with nothing to remember goes.
    store
        .update(&b, &mut |s, now| {
            s.rate_tat = Some(now.saturating_sub(1));
        })
        .unwrap();
    store.clear(&scope_hash(&b), true).unwrap();
    let (listing, _) = store.list().unwrap();
    assert!(find(&listing, &b).is_none(), "{listing:?}");
    assert!(find(&listing, &a).is_some());
    store.clear(&scope_hash(&a), true).unwrap();
    assert!(store.clear("../etc", false).is_err());
    assert!(store.clear(&"A".repeat(32), false).is_err());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::scope::GateCause;

    #[test]
    fn forgetting_keeps_the_name_tasks_and_pacing_ahead() {
        let full = ScopeState {
            name: Some("n".into()),
            next_allowed_at: Some(9),
            gate_cause: Some(GateCause::QuotaExhausted),
            rate_tat: Some(100),
            tasks: vec![crate::rules::scope::TaskKey {
                task: "t".into(),
                key: "k".into(),
                expires: 5,
            }],
            ..ScopeState::default()
        };
        let mut s = full.clone();
        forget(&mut s, 50, false);
        assert_eq!(
            s,
            ScopeState {
                next_allowed_at: None,
                gate_cause: None,
                ..full.clone()
            }
        );
        assert!(!is_empty(&s));
        let mut s = full.clone();
        forget(&mut s, 100, true);
        assert!(is_empty(&s), "{s:?}");
        assert_eq!(s.name.as_deref(), Some("n"));
    }

    #[test]
    fn listings_sort_by_name_and_unnamed_last() {
        let named = |name: Option<&str>, hash: &str| Stored {
            hash: hash.into(),
            state: ScopeState {
                name: name.map(String::from),
                ..ScopeState::default()
            },
        };
        let mut listing = vec![
            named(None, "00"),
            named(Some("b"), "01"),
            named(Some("a"), "ff"),
        ];
        sort(&mut listing);
        let labels: Vec<_> = listing.iter().map(Stored::label).collect();
        assert_eq!(labels, ["a", "b", "00"]);
    }
}
