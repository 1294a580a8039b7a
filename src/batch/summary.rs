//! The batch's summary line on stderr, and its exit code.
//!
//! The exit code is 0 when every item succeeded (items the journal skipped
//! count as done). Otherwise it is the code of the worst outcome among the
//! items, so that a batch whose failures are all of one kind ends as a
//! single run of that kind would (every failure `RETRY_EXHAUSTED`: 4), and
//! a mixed one names what a person should look at first. Worst first:
//! a cancellation (the batch ends by its signal), `INTERNAL_ERROR`,
//! `SIDE_EFFECT_UNKNOWN` (a write may have happened), `INCOMPLETE`,
//! `INVALID_RESPONSE` (data that broke), `NON_RETRYABLE` (refused for
//! good), then the failures a later rerun may cure: `NO_PROGRESS`,
//! `CIRCUIT_OPEN`, `BUDGET_EXHAUSTED`, `RETRY_EXHAUSTED`, and last
//! `USAGE_ERROR` (a bad line, reported as its own item). No new code is
//! needed: the summary line says which items failed and how.

use std::fmt::Write;
use std::time::Duration;

use crate::exit::Kind;

/// Failed ids listed in the line; the rest are counted.
const LISTED: usize = 10;

/// Worst first; `Succeeded` is not a failure.
const SEVERITY: [Kind; 15] = [
    Kind::Terminated,
    Kind::Quit,
    Kind::HungUp,
    Kind::Cancelled,
    Kind::InternalError,
    Kind::NeedsHuman,
    Kind::SideEffectUnknown,
    Kind::Incomplete,
    Kind::InvalidResponse,
    Kind::NonRetryable,
    Kind::NoProgress,
    Kind::CircuitOpen,
    Kind::BudgetExhausted,
    Kind::RetryExhausted,
    Kind::UsageError,
];

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Items per outcome, in [`Kind::ALL`] order.
    counts: [u64; Kind::ALL.len()],
    /// Items the journal said had ended already.
    skipped: u64,
    requests: u64,
    throttled: u64,
    /// The first failed ids, and how many failed in all.
    failed: Vec<String>,
    failures: u64,
}

fn index(kind: Kind) -> usize {
    Kind::ALL
        .iter()
        .position(|&k| k == kind)
        .expect("ALL has every kind")
}

impl Summary {
    /// An item that ended as `kind` after `requests` requests, `throttled`
    /// of them answered 429.
    pub fn add(&mut self, id: &str, kind: Kind, requests: u64, throttled: u64) {
        self.counts[index(kind)] += 1;
        self.requests += requests;
        self.throttled += throttled;
        if kind != Kind::Succeeded {
            self.failures += 1;
            if self.failed.len() < LISTED {
                self.failed.push(id.to_string());
            }
        }
    }

    /// An item the journal skipped.
    pub fn skip(&mut self) {
        self.skipped += 1;
    }

    /// How the batch ends: see the module's comment.
    pub fn exit_kind(&self) -> Kind {
        SEVERITY
            .into_iter()
            .find(|&k| self.counts[index(k)] > 0)
            .unwrap_or(Kind::Succeeded)
    }

    /// One line for stderr, e.g. `abide: batch: 400 items: 398 SUCCEEDED,
    /// 2 RETRY_EXHAUSTED; 412 requests, 12 answered 429, 24.7 s, 16.7
    /// requests/s; failed: 17, 230`.
    pub fn line(&self, elapsed: Duration) -> String {
        let items: u64 = self.counts.iter().sum::<u64>() + self.skipped;
        let mut line = format!("abide: batch: {items} items:");
        // Outcomes sharing a name (the cancellations) are counted together.
        let mut named: Vec<(&str, u64)> = Vec::new();
        for (kind, &count) in Kind::ALL.iter().zip(&self.counts) {
            match named.iter_mut().find(|(n, _)| *n == kind.name()) {
                Some((_, c)) => *c += count,
                None => named.push((kind.name(), count)),
            }
        }
        let mut parts: Vec<String> = named
            .into_iter()
            .filter(|&(_, c)| c > 0)
            .map(|(n, c)| format!("{c} {n}"))
            .collect();
        if self.skipped > 0 {
            parts.push(format!("{} skipped (ended in the journal)", self.skipped));
        }
        if parts.is_empty() {
            parts.push("none".into());
        }
        let secs = elapsed.as_secs_f64();
        let rate = if secs > 0.0 {
            self.requests as f64 / secs
        } else {
            0.0
        };
        let _ = write!(
            line,
            " {}; {} requests, {} answered 429, {secs:.1} s, {rate:.1} requests/s",
            parts.join(", "),
            self.requests,
            self.throttled,
        );
        if self.failures > 0 {
            let _ = write!(line, "; failed: {}", self.failed.join(", "));
            let more = self.failures - self.failed.len() as u64;
            if more > 0 {
                let _ = write!(line, " and {more} more");
            }
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_with_counts_rate_and_failed_ids() {
        let mut s = Summary::default();
        for i in 0..398 {
            s.add(&i.to_string(), Kind::Succeeded, 1, 0);
        }
        s.add("17", Kind::RetryExhausted, 6, 5);
        s.add("230", Kind::RetryExhausted, 6, 6);
        s.skip();
        assert_eq!(
            s.line(Duration::from_millis(24_700)),
            "abide: batch: 401 items: 398 SUCCEEDED, 2 RETRY_EXHAUSTED, 1 skipped (ended in the journal); \
             410 requests, 11 answered 429, 24.7 s, 16.6 requests/s; failed: 17, 230"
        );
        assert_eq!(s.exit_kind(), Kind::RetryExhausted);
    }

    #[test]
    fn many_failed_ids_are_counted_not_listed() {
        let mut s = Summary::default();
        for i in 0..25 {
            s.add(&format!("i{i}"), Kind::NonRetryable, 1, 0);
        }
        let line = s.line(Duration::ZERO);
        assert!(
            line.ends_with("failed: i0, i1, i2, i3, i4, i5, i6, i7, i8, i9 and 15 more"),
            "{line}"
        );
        assert!(line.contains("0.0 requests/s"), "{line}");
    }

    #[test]
    fn the_exit_code_is_the_worst_outcome() {
        let rows: &[(&[Kind], Kind)] = &[
            (&[], Kind::Succeeded),
            (&[Kind::Succeeded], Kind::Succeeded),
            (&[Kind::Succeeded, Kind::UsageError], Kind::UsageError),
            (
                &[Kind::UsageError, Kind::RetryExhausted],
                Kind::RetryExhausted,
            ),
            (
                &[Kind::RetryExhausted, Kind::NonRetryable],
                Kind::NonRetryable,
            ),
            (
                &[Kind::NonRetryable, Kind::SideEffectUnknown],
                Kind::SideEffectUnknown,
            ),
            (
                &[Kind::SideEffectUnknown, Kind::InternalError],
                Kind::InternalError,
            ),
            (&[Kind::InternalError, Kind::Cancelled], Kind::Cancelled),
        ];
        for (kinds, worst) in rows {
            let mut s = Summary::default();
            for k in *kinds {
                s.add("x", *k, 1, 0);
            }
            assert_eq!(s.exit_kind(), *worst, "{kinds:?}");
        }
        // Every failure has its place.
        for k in Kind::ALL.into_iter().filter(|&k| k != Kind::Succeeded) {
            assert!(SEVERITY.contains(&k), "{k:?}");
        }
        let mut s = Summary::default();
        s.add("c", Kind::Cancelled, 0, 0);
        s.add("t", Kind::Terminated, 0, 0);
        assert!(s.line(Duration::ZERO).contains(": 2 CANCELLED;"));
    }
}
