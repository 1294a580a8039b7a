//! `abide lab`: a local, rate-limited HTTP/1.1 server to practise polite
//! retrying against.
//!
//! It is two things at once: a product subcommand that shows a user how their
//! client behaves (one JSON line per request, a summary, exit status 1 if any
//! retry came before its Retry-After allowed), and the fixture the client's
//! own tests start in-process with [`Lab::start`] to assert on the timeline of
//! [`Record`]s it kept. It is hand-written on `std::net`, one thread per
//! connection, because injecting faults (dropped connections, delays,
//! truncated bodies, hangs) needs full control of every byte.

mod cli;
mod http;
mod limiter;
mod record;
mod script;
mod server;

use std::sync::{Mutex, MutexGuard, PoisonError};

pub use cli::{LabArgs, run};
pub use record::{ClientSummary, Record, Summary};
pub use script::{Script, Step};
pub use server::{Lab, LabConfig, OnRecord};

/// Locks even a poisoned mutex: a panic in one connection thread (or in an
/// `on_record` callback) must not take the whole lab down with it.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
