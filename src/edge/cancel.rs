//! Cancellation: SIGINT, SIGTERM, SIGHUP and SIGQUIT end the run promptly.
//! Waits are condition-variable sleeps that wake at their deadline or at once
//! on a signal, never a blocking `sleep`; a request in flight is cut by the
//! hook given to [`Cancel::interrupt_with`]. Once the outcome is written and
//! temporary files are gone, [`end_process`] ends the process by the signal.

use std::io::Write;
use std::process::ExitCode;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::exit::{Kind, Signal};

/// Shared between the run and the signal watcher thread.
#[derive(Clone, Default)]
pub struct Cancel {
    inner: Arc<(Mutex<Option<Signal>>, Condvar)>,
    /// Cuts the request in flight, once there is a transport to cut.
    interrupt: Arc<Mutex<Option<Interrupt>>>,
}

type Interrupt = Box<dyn Fn() + Send>;

impl Cancel {
    pub fn cancel(&self, signal: Signal) {
        let (state, wake) = &*self.inner;
        let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
        state.get_or_insert(signal);
        wake.notify_all();
    }

    pub fn cancelled(&self) -> Option<Signal> {
        *self.inner.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sleeps until `duration` has passed (never less) or the run is cancelled.
    pub fn sleep(&self, duration: Duration) -> Result<(), Signal> {
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

    /// Has a cancellation call `interrupt` (which cuts the request in
    /// flight), or calls it at once if the run is cancelled already: signals
    /// are watched before the transport exists.
    pub fn interrupt_with(&self, interrupt: impl Fn() + Send + 'static) {
        let mut slot = self.interrupt.lock().unwrap_or_else(|e| e.into_inner());
        if self.cancelled().is_some() {
            interrupt();
        }
        *slot = Some(Box::new(interrupt));
    }

    /// Turns SIGINT, SIGTERM, SIGHUP and SIGQUIT into a cancellation, then
    /// cuts the request in flight, from a watcher thread. A signal ignored
    /// when abide started stays ignored.
    pub fn on_signals(&self) -> std::io::Result<()> {
        let watched = [SIGINT, SIGTERM, SIGHUP, SIGQUIT].into_iter();
        let mut signals = Signals::new(watched.filter(|&s| !ignored(s)))?;
        let cancel = self.clone();
        std::thread::Builder::new()
            .name("abide-signals".into())
            .spawn(move || {
                if let Some(signal) = signals.forever().next() {
                    cancel.cancel(Signal::of(signal));
                    let interrupt = cancel.interrupt.lock().unwrap_or_else(|e| e.into_inner());
                    if let Some(interrupt) = &*interrupt {
                        interrupt();
                    }
                }
            })?;
        Ok(())
    }
}

/// Whether `signal` is ignored, as `nohup` (SIGHUP) and a script's `&`
/// (SIGINT, SIGQUIT) leave it for the programs they start: catching it would
/// let the hangup that `nohup abide …` is there to survive cancel the run.
fn ignored(signal: libc::c_int) -> bool {
    // SAFETY: with a null new action, sigaction(2) only reads the current one
    // into `old`, a plain C struct for which all zeroes is a valid value.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    }
}

/// The process's end after a run that ended as `kind`: its exit code, or,
/// for a cancellation, death by the same signal (default disposition, then
/// raised again), as curl does. Only then does a shell loop around abide
/// stop on Ctrl-C: bash ends `while :; do abide …; done` only when its child
/// died of SIGINT, and takes a plain exit 130 for a handled one. Called last,
/// when the outcome is written and every temporary file and lease is gone.
pub fn end_process(kind: Kind) -> ExitCode {
    if let Some(signal) = kind.signal() {
        // Nothing buffered may be lost to the signal.
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        // Does not return: it aborts should the signal fail to end us.
        let _ = signal_hook::low_level::emulate_default_handler(signal);
    }
    ExitCode::from(kind.exit_code())
}

impl crate::clock::Sleeper for Cancel {
    fn sleep(&mut self, duration: Duration) -> Result<(), Signal> {
        Cancel::sleep(self, duration)
    }
    fn cancelled(&self) -> Option<Signal> {
        Cancel::cancelled(self)
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
            other.cancel(Signal::Terminate);
        });
        assert_eq!(
            cancel.sleep(Duration::from_secs(60)),
            Err(Signal::Terminate)
        );
        waker.join().unwrap();
        assert_eq!(cancel.cancelled(), Some(Signal::Terminate));
    }
}
