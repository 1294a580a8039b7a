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
