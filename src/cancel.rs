//! Cancellation: SIGINT and SIGTERM end the run promptly. Waits are
//! condition-variable sleeps that wake at their deadline or at once on a
//! signal, never a blocking `sleep`; a request in flight is cut by the hook
//! given to [`Cancel::on_signals`].

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::outcome::Kind;

/// Shared between the run and the signal watcher thread.
#[derive(Clone, Default)]
pub struct Cancel {
    inner: Arc<(Mutex<Option<Kind>>, Condvar)>,
}

impl Cancel {
    pub fn cancel(&self, kind: Kind) {
        let (state, wake) = &*self.inner;
        let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
        state.get_or_insert(kind);
        wake.notify_all();
    }

    pub fn cancelled(&self) -> Option<Kind> {
        *self.inner.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sleeps until `duration` has passed (never less) or the run is cancelled.
    pub fn sleep(&self, duration: Duration) -> Result<(), Kind> {
        let deadline = Instant::now() + duration;
        let (state, wake) = &*self.inner;
        let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(kind) = *state {
                return Err(kind);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(());
            }
            state = wake
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Turns SIGINT and SIGTERM into a cancellation, then calls `interrupt`
    /// (which cuts the request in flight), from a watcher thread.
    pub fn on_signals(&self, interrupt: impl Fn() + Send + 'static) -> std::io::Result<()> {
        let mut signals = Signals::new([SIGINT, SIGTERM])?;
        let cancel = self.clone();
        std::thread::Builder::new()
            .name("abide-signals".into())
            .spawn(move || {
                if let Some(signal) = signals.forever().next() {
                    cancel.cancel(if signal == SIGTERM {
                        Kind::Terminated
                    } else {
                        Kind::Cancelled
                    });
                    interrupt();
                }
            })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleep_is_never_short_and_wakes_on_cancel() {
        let cancel = Cancel::default();
        let start = Instant::now();
        cancel.sleep(Duration::from_millis(30)).unwrap();
        assert!(start.elapsed() >= Duration::from_millis(30));

        let other = cancel.clone();
        let waker = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            other.cancel(Kind::Terminated);
        });
        assert_eq!(cancel.sleep(Duration::from_secs(60)), Err(Kind::Terminated));
        waker.join().unwrap();
        assert_eq!(cancel.cancelled(), Some(Kind::Terminated));
    }
}
