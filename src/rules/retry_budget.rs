//! A retry budget per scope, shared by every process of the scope: first
//! attempts always go; a retry spends from a bucket that refills with the
//! scope's successful first attempts and, slowly, with time. So a fleet of
//! runs against a failing API retries a few times between them instead of
//! each run retrying on its own, and one run alone keeps all its attempts,
//! however many it asked for.
//!
//! **What the budget is for.** Every budget it copies bounds *amplification*:
//! the load that many callers retrying at once add on top of their first
//! requests. Finagle's `RetryBudget` keeps a reserve (`minRetriesPerSec`)
//! so that a client with little traffic can still retry; AWS's quota (500
//! tokens, 5 or 14 a retry) is so large beside one call's 3 attempts that
//! one caller never meets it; gRPC throttles a channel that many calls
//! share. One command line asking for `--attempts 20` (a "wait for the
//! service" loop) multiplies nothing: its load is the one it asked for, and
//! a default that cut it short would overrule the user. So an empty bucket
//! refuses a retry only when **another run** of the scope spent from it
//! within the last [`CROWD`] (10 s, Finagle's `ttl`, and the time the
//! bucket takes to regain one retry): a run alone is never refused, and it
//! keeps spending (the bucket stays empty while it does), so that runs
//! joining it are refused their retries while it goes on.
//!
//! The numbers, from the budgets that work at scale:
//!
//! - **A successful first attempt earns 20 % of a retry** (`--retry-budget`,
//!   default `20%`): Finagle's `RetryBudget` (`percentCanRetry = 0.2`),
//!   Envoy's retry budget (20 %) and reqwest 0.13's per-host budget (20 %)
//!   all let retries add at most a fifth to the load a healthy API sees.
//!   gRPC A6's example (`tokenRatio = 0.1`) is stricter; AWS's quota refunds
//!   one token per success against 5 per retry, the same 20 %.
//! - **The bucket holds [`CAPACITY`] = 5 retries** and starts full: gRPC
//!   throttles below half of `maxTokens` (10 in its example), which leaves
//!   five retries of headroom; a fleet of ten runs of `--attempts 4`
//!   against an API that fails them all sends 10 first attempts and 5
//!   retries, not 30 (no run holds more than 3 retries, so the bucket is
//!   empty only once two runs or more spent from it, and then every run
//!   has company).
//! - **It refills by one retry every [`REFILL`] = 10 s** with no traffic:
//!   Finagle's reserve (`minRetriesPerSec` over its 10 s `ttl`), scaled
//!   down from a server's thousands of requests to a command line's few, so
//!   that a scope whose every request fails still gets a probe-like retry
//!   now and then, and an empty bucket is full again within a minute (long
//!   before a Redis record of an idle scope expires).
//!
//! The state is one number and a time, and the last few runs that spent
//! (a run that ended on its own is no company, and leaves them), kept in the scope's record and changed only under the store's lock (file
//! lock or Redis transaction): each writer reads it, brings it up to the
//! store's now, changes it and writes it back, so processes merge by taking
//! turns, with no counter to add up. Retries are counted in thousandths
//! ([`RETRY`]), so 20 % is exact.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::{LATEST, Millis, ceil_ms};

/// One retry, in the budget's unit (thousandths of a retry).
pub const RETRY: u32 = 1_000;
/// The most the bucket holds: five retries.
pub const CAPACITY: u32 = 5 * RETRY;
/// Without any success, the bucket regains one retry in this time.
pub const REFILL: Duration = Duration::from_secs(10);
/// Another run's retry makes company this long: an empty bucket refuses a
/// run only when another one spent from it this recently.
pub const CROWD: Duration = REFILL;
/// The runs a record remembers. The two that spent last would be enough to
/// tell any run whether another spent within [`CROWD`] (if it is one of
/// them, the other is the latest of the rest; if not, the first is); a run
/// that ends on its own leaves the list ([`leave`]), so a few more keep the
/// runs still going in view.
const SPENDERS: usize = 4;

/// The budget as `--retry-budget` sets it; `None` (`0`) turns it off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetPolicy {
    /// What a successful first attempt earns, in thousandths of a retry.
    pub per_success: u32,
}

/// The scope's bucket: how far below full it was at `at`, and who spent
/// from it last. The default (no record, or a record of an older version)
/// is a full bucket, and a bucket that refilled goes back to the default,
/// so that a healthy scope's record never changes for it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RetryBudget {
    /// Thousandths of a retry missing from a full bucket, at `at`.
    pub spent: u32,
    /// The store time `spent` was last brought up to.
    pub at: Millis,
    /// The last runs that spent, the latest first, each once.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub spenders: Vec<Spender>,
}

/// A run that spent from the bucket, and when it last did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spender {
    pub by: String,
    pub at: Millis,
}

/// Thousandths of a retry that `elapsed` milliseconds of time give back.
fn refilled(elapsed: Millis) -> u64 {
    let refill = ceil_ms(REFILL);
    u64::from(RETRY).saturating_mul(elapsed) / refill
}

/// What is missing from a full bucket at `now` (a `now` before the record's
/// own time, from a clock that went back, counts as no time at all).
fn missing(budget: &RetryBudget, now: Millis) -> u32 {
    let back = refilled(now.saturating_sub(budget.at));
    u32::try_from(u64::from(budget.spent.min(CAPACITY)).saturating_sub(back)).unwrap_or(0)
}

/// The bucket brought up to `now`, missing `spent`; a full one forgets its
/// spenders, who matter only once it is empty again.
fn at_now(spent: u32, now: Millis, before: &mut RetryBudget) -> RetryBudget {
    if spent == 0 {
        RetryBudget::default()
    } else {
        RetryBudget {
            spent: spent.min(CAPACITY),
            at: now.max(before.at),
            spenders: std::mem::take(&mut before.spenders),
        }
    }
}

/// The retries left in the bucket at `now`, in thousandths.
pub fn level(budget: &RetryBudget, now: Millis) -> u32 {
    CAPACITY - missing(budget, now)
}

/// Whether the bucket holds a retry now; if not, the store time at which it
/// holds one again by time alone (successes elsewhere may refill it sooner).
pub fn may_retry(budget: &RetryBudget, now: Millis) -> Result<(), Millis> {
    if level(budget, now) >= RETRY {
        return Ok(());
    }
    // The least time whose refill brings `spent` down to CAPACITY - RETRY:
    // refilled(e) >= k exactly when e >= ceil(k * REFILL / RETRY).
    let k = u64::from(budget.spent.min(CAPACITY) - (CAPACITY - RETRY));
    let refill = ceil_ms(REFILL);
    let elapsed = (k * refill).div_ceil(u64::from(RETRY));
    Err(budget.at.saturating_add(elapsed).min(LATEST))
}

/// Whether a run other than `me` spent from the bucket within [`CROWD`]
/// before `now` (a spend stamped after `now`, by a clock that went back,
/// counts as recent).
pub fn crowded(budget: &RetryBudget, now: Millis, me: &str) -> bool {
    company(budget, now, me) > 0
}

/// How many runs other than `me` spent from the bucket within [`CROWD`]
/// before `now`, as [`crowded`] counts them.
pub fn company(budget: &RetryBudget, now: Millis, me: &str) -> usize {
    let crowd = ceil_ms(CROWD);
    budget
        .spenders
        .iter()
        .filter(|s| s.by != me && s.at.saturating_add(crowd) > now)
        .count()
}

/// Run `me` takes one retry from the bucket (an empty bucket stays empty).
pub fn spend(budget: &mut RetryBudget, now: Millis, me: &str) {
    let spent = missing(budget, now).saturating_add(RETRY);
    let mut after = at_now(spent, now, budget);
    after.spenders.retain(|s| s.by != me);
    after.spenders.insert(
        0,
        Spender {
            by: me.to_string(),
            at: after.at,
        },
    );
    after.spenders.truncate(SPENDERS);
    *budget = after;
}

/// Run `me` ended, and not because the budget refused it: it is nobody's
/// company any more (what it spent stays spent), so that the next run alone
/// (the rerun of a command, a shell loop's next turn) keeps every attempt
/// it asks for. A run the budget refused stays company for [`CROWD`]: the
/// runs it was refused beside are a crowd still, and must not each find
/// themselves alone in turn as the others end.
pub fn leave(budget: &mut RetryBudget, me: &str) {
    budget.spenders.retain(|s| s.by != me);
}

/// Whether run `me` is among the spenders the record remembers.
pub fn spent_by(budget: &RetryBudget, me: &str) -> bool {
    budget.spenders.iter().any(|s| s.by == me)
}

/// A first attempt that succeeded earns the scope part of a retry.
pub fn deposit(budget: &mut RetryBudget, now: Millis, policy: &BudgetPolicy) {
    let spent = missing(budget, now).saturating_sub(policy.per_success);
    *budget = at_now(spent, now, budget);
}

/// The one call run `me` makes before its attempt number `attempt` (from
/// 1), inside the scope's locked update: a first attempt always goes and
/// costs nothing; a retry goes and spends if the bucket holds one, or if no
/// other run spent from it within [`CROWD`] (a run alone is never refused);
/// else it is refused with the time the bucket holds one again. `None`:
/// the budget is off.
pub fn admit(
    budget: &mut RetryBudget,
    now: Millis,
    policy: Option<&BudgetPolicy>,
    attempt: u32,
    me: &str,
) -> Result<(), Millis> {
    if attempt <= 1 || policy.is_none() {
        return Ok(());
    }
    match may_retry(budget, now) {
        Err(refills) if crowded(budget, now, me) => return Err(refills),
        _ => spend(budget, now, me),
    }
    Ok(())
}

/// `--retry-budget`: a percentage of a retry that each successful first
/// attempt earns (`20%`, `12.5%`, at most `100%`, to a tenth of a percent),
/// or `0` to turn the budget off. `None` is off.
pub fn parse_retry_budget(text: &str) -> Result<Option<BudgetPolicy>, String> {
    let text = text.trim();
    if text == "0" {
        return Ok(None);
    }
    let bad = || {
        format!(
            "`{text}` is not a retry budget: a percentage such as 20% (what each \
             successful first attempt earns towards a retry), or 0 for none"
        )
    };
    let number = text.strip_suffix('%').ok_or_else(bad)?.trim();
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(bad());
    }
    let percent: f64 = number.parse().map_err(|_| bad())?;
    if percent > 100.0 {
        return Err(format!("`{text}`: a retry budget is at most 100%"));
    }
    // Thousandths of a retry: a tenth of a percent each.
    let per_success = (percent * 10.0).round() as u32;
    if per_success == 0 {
        return if percent == 0.0 {
            Ok(None)
        } else {
            Err(format!("`{text}` is below the smallest retry budget, 0.1%"))
        };
    }
    Ok(Some(BudgetPolicy { per_success }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const TWENTY: BudgetPolicy = BudgetPolicy { per_success: 200 };

    #[test]
    fn values_of_the_flag() {
        let ok = |text: &str| parse_retry_budget(text).unwrap().map(|p| p.per_success);
        assert_eq!(ok("20%"), Some(200));
        assert_eq!(ok(" 12.5% "), Some(125));
        assert_eq!(ok("100%"), Some(1000));
        assert_eq!(ok("0.1%"), Some(1));
        assert_eq!(ok("0"), None);
        assert_eq!(ok("0%"), None);
        assert_eq!(ok("0.0%"), None);
        for bad in [
            "20", "", "%", "-5%", "abc%", "1e2%", "20 %%", "inf%", "NaN%",
        ] {
            let e = parse_retry_budget(bad).unwrap_err();
            assert!(e.contains("not a retry budget"), "{bad}: {e}");
        }
        assert!(
            parse_retry_budget("101%")
                .unwrap_err()
                .contains("at most 100%")
        );
        assert!(
            parse_retry_budget("0.01%")
                .unwrap_err()
                .contains("smallest")
        );
    }

    #[test]
    fn a_full_bucket_holds_five_retries_then_refills_with_time() {
        let mut b = RetryBudget::default();
        for run in ["a", "b", "a", "c", "b"] {
            assert_eq!(admit(&mut b, 1_000, Some(&TWENTY), 2, run), Ok(()));
        }
        assert_eq!(level(&b, 1_000), 0);
        // The runs that spent, the latest first, once each.
        let by: Vec<&str> = b.spenders.iter().map(|s| s.by.as_str()).collect();
        assert_eq!(by, ["b", "c", "a"]);
        assert_eq!(admit(&mut b, 1_000, Some(&TWENTY), 2, "d"), Err(11_000));
        assert_eq!(admit(&mut b, 1_000, Some(&TWENTY), 3, "b"), Err(11_000));
        assert_eq!(may_retry(&b, 10_999), Err(11_000));
        assert_eq!(may_retry(&b, 11_000), Ok(()));
        // Full again after five refills, and back to the default record.
        assert_eq!(level(&b, 51_000), CAPACITY);
        deposit(&mut b, 51_000, &TWENTY);
        assert_eq!(b, RetryBudget::default());
    }

    #[test]
    fn an_empty_bucket_refuses_only_a_run_with_company() {
        let mut b = RetryBudget::default();
        // One run alone spends it all and goes on: the budget is empty, and
        // the run is still not refused.
        for n in 2..=20 {
            assert_eq!(
                admit(&mut b, 1_000 + n, Some(&TWENTY), n as u32, "a"),
                Ok(())
            );
        }
        assert_eq!(level(&b, 1_020), 0);
        // Another run while it spends: refused, with the refill time.
        assert_eq!(admit(&mut b, 1_021, Some(&TWENTY), 2, "b"), Err(11_020));
        // The lone run is not refused by the one it refused.
        assert_eq!(admit(&mut b, 1_022, Some(&TWENTY), 21, "a"), Ok(()));
        // Once nobody else spent for CROWD, a run finds itself alone.
        let quiet = 1_022 + ceil_ms(CROWD);
        assert!(crowded(&b, quiet - 1, "b"));
        assert!(!crowded(&b, quiet, "b"));
        assert_eq!(admit(&mut b, quiet, Some(&TWENTY), 2, "b"), Ok(()));
        // And now "a" has company.
        assert!(crowded(&b, quiet, "a"));
    }

    #[test]
    fn a_run_that_ended_is_no_company() {
        let mut b = RetryBudget::default();
        for n in 2..=20 {
            admit(&mut b, 1_000 + n, Some(&TWENTY), n as u32, "a").unwrap();
        }
        assert!(spent_by(&b, "a") && crowded(&b, 1_021, "b"));
        // "a" used its attempts and ended: a rerun right after is alone,
        // and keeps its attempts, in an empty bucket.
        leave(&mut b, "a");
        assert!(!spent_by(&b, "a") && !crowded(&b, 1_021, "b"));
        for n in 2..=20 {
            assert_eq!(
                admit(&mut b, 1_021 + n, Some(&TWENTY), n as u32, "b"),
                Ok(())
            );
        }
        assert_eq!(level(&b, 1_041), 0, "what they spent stays spent");
        // Runs that are still going stay in view when one of them leaves.
        for (i, me) in ["c", "d", "e", "f"].iter().enumerate() {
            spend(&mut b, 2_000 + i as u64, me);
        }
        leave(&mut b, "f");
        assert!(crowded(&b, 2_010, "e") && crowded(&b, 2_010, "g"));
    }

    #[test]
    fn five_successes_earn_one_retry_at_twenty_percent() {
        let mut b = RetryBudget {
            spent: CAPACITY,
            at: 0,
            spenders: vec![Spender {
                by: "other".into(),
                at: 0,
            }],
        };
        for i in 0..4 {
            deposit(&mut b, 0, &TWENTY);
            assert!(may_retry(&b, 0).is_err(), "after {} successes", i + 1);
        }
        deposit(&mut b, 0, &TWENTY);
        assert_eq!(may_retry(&b, 0), Ok(()));
        // Deposits never overfill.
        for _ in 0..100 {
            deposit(&mut b, 0, &TWENTY);
        }
        assert_eq!(level(&b, 0), CAPACITY);
        assert_eq!(b, RetryBudget::default());
    }

    #[test]
    fn off_and_first_attempts_cost_nothing() {
        let mut empty = RetryBudget {
            spent: CAPACITY,
            at: 500,
            spenders: vec![],
        };
        let before = empty.clone();
        assert_eq!(admit(&mut empty, 500, Some(&TWENTY), 1, "a"), Ok(()));
        assert_eq!(admit(&mut empty, 500, None, 3, "a"), Ok(()));
        assert_eq!(empty, before);
    }

    #[test]
    fn a_clock_that_went_back_refills_nothing() {
        let b = RetryBudget {
            spent: CAPACITY,
            at: 20_000,
            spenders: vec![Spender {
                by: "other".into(),
                at: 20_000,
            }],
        };
        assert_eq!(level(&b, 5_000), 0);
        assert_eq!(may_retry(&b, 5_000), Err(30_000));
        // A spend stamped in the future is recent company.
        assert!(crowded(&b, 5_000, "me"));
        let mut spent = b;
        deposit(&mut spent, 5_000, &TWENTY);
        assert_eq!(spent.at, 20_000, "the record's time never goes back");
    }

    #[test]
    fn records_of_other_versions_read_as_full_or_bounded() {
        let b: RetryBudget = serde_json::from_str("{}").unwrap();
        assert_eq!(level(&b, 0), CAPACITY);
        let b: RetryBudget = serde_json::from_str(r#"{"spent":4000000000,"at":1}"#).unwrap();
        assert_eq!(level(&b, 1), 0);
        assert_eq!(may_retry(&b, 1), Err(10_001));
        assert!(!crowded(&b, 1, "me"), "no spender recorded: alone");
        // A full bucket's record writes no list.
        let json = serde_json::to_string(&RetryBudget::default()).unwrap();
        assert_eq!(json, r#"{"spent":0,"at":0}"#);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Spend(usize),
        Deposit,
        Pass(Millis),
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        proptest::collection::vec(
            prop_oneof![
                (0usize..4).prop_map(Op::Spend),
                Just(Op::Deposit),
                (0u64..30_000).prop_map(Op::Pass),
            ],
            0..40,
        )
    }

    const RUNS: [&str; 4] = ["r0", "r1", "r2", "r3"];

    /// A bucket after any history of runs `r0`..`r3`, and the time it ends at.
    fn replay(ops: &[Op], policy: &BudgetPolicy) -> (RetryBudget, Millis) {
        let mut b = RetryBudget::default();
        let mut now = 1_764_000_000_000;
        for op in ops {
            match op {
                Op::Spend(run) => spend(&mut b, now, RUNS[*run]),
                Op::Deposit => deposit(&mut b, now, policy),
                Op::Pass(ms) => now += ms,
            }
        }
        (b, now)
    }

    fn policy() -> impl Strategy<Value = BudgetPolicy> {
        (1u32..=1000).prop_map(|per_success| BudgetPolicy { per_success })
    }

    proptest! {
        #[test]
        fn first_attempts_are_never_refused(ops in ops(), p in policy(), later in 0u64..100_000) {
            let (mut b, now) = replay(&ops, &p);
            let before = b.clone();
            prop_assert_eq!(admit(&mut b, now + later, Some(&p), 1, "new"), Ok(()));
            prop_assert_eq!(b, before);
        }

        /// A run alone on its scope (whatever other runs left in the record
        /// more than CROWD ago) is never refused, however many attempts it
        /// makes and however close or far apart, among successes of others.
        #[test]
        fn a_lone_run_is_never_refused(
            before in ops(),
            p in policy(),
            own in proptest::collection::vec(
                prop_oneof![
                    (0u64..30_000).prop_map(Some),
                    Just(None),
                ],
                0..120,
            ),
        ) {
            let (mut b, mut now) = replay(&before, &p);
            now += ceil_ms(CROWD);
            let mut attempt = 1;
            for step in own {
                match step {
                    Some(pause) => {
                        now += pause;
                        attempt += 1;
                        prop_assert_eq!(admit(&mut b, now, Some(&p), attempt, "alone"), Ok(()));
                    }
                    None => deposit(&mut b, now, &p),
                }
            }
        }

        /// A refusal names the time the bucket holds a retry again: then a
        /// retry goes, and until then the same company refuses it with the
        /// same time (never earlier than it said).
        #[test]
        fn an_empty_bucket_refuses_until_the_time_it_names_and_not_after(
            ops in ops(), p in policy(), probe in 0u64..=1_000_000, asker in 0usize..4
        ) {
            let (mut b, now) = replay(&ops, &p);
            let me = RUNS[asker];
            match may_retry(&b, now) {
                Ok(()) => prop_assert!(level(&b, now) >= RETRY),
                Err(at) => {
                    prop_assert!(at > now);
                    prop_assert!(at - now <= ceil_ms(REFILL));
                    let before = now + probe % (at - now);
                    prop_assert_eq!(may_retry(&b, before), Err(at));
                    prop_assert_eq!(may_retry(&b, at - 1), Err(at));
                    prop_assert_eq!(may_retry(&b, at), Ok(()));
                    let company = crowded(&b, now, me);
                    let mut asked = b.clone();
                    let answer = admit(&mut asked, now, Some(&p), 2, me);
                    prop_assert_eq!(answer, if company { Err(at) } else { Ok(()) });
                    if company {
                        prop_assert_eq!(&asked, &b, "a refusal changes nothing");
                        // Still in company before `at`: refused with the same time.
                        if crowded(&b, before, me) {
                            prop_assert_eq!(admit(&mut asked, before, Some(&p), 2, me), Err(at));
                        }
                    }
                    prop_assert_eq!(admit(&mut b, at, Some(&p), 2, me), Ok(()));
                }
            }
        }

        /// The issue's figure: ten runs of `--attempts 4` started together
        /// against an API that fails every request, interleaved in any
        /// order over the few seconds their backoff takes, send at most 20
        /// requests (in fact at most 15: no run alone can empty the bucket,
        /// so once it is empty every run has company).
        #[test]
        fn a_failing_fleet_spends_at_most_the_budget(
            order in proptest::collection::vec((0usize..10, 0u64..9_000), 40..200),
            p in policy(),
        ) {
            let start: Millis = 1_764_000_000_000;
            let names: Vec<String> = (0..10).map(|r| format!("run-{r}")).collect();
            let mut b = RetryBudget::default();
            // The attempt each run makes next; past 4, or refused, it is done.
            let mut next = [1u32; 10];
            let mut sent = 0;
            let mut attempt = |b: &mut RetryBudget, run: usize, at: Millis| {
                if next[run] > 4 {
                    return;
                }
                match admit(b, start + at, Some(&p), next[run], &names[run]) {
                    Ok(()) => {
                        sent += 1;
                        next[run] += 1;
                    }
                    // Refused: the run ends RETRY_EXHAUSTED.
                    Err(_) => next[run] = 5,
                }
            };
            let mut steps = order;
            steps.sort_by_key(|&(_, at)| at);
            for (run, at) in steps {
                attempt(&mut b, run, at);
            }
            // The runs that still have attempts make them at the end.
            for _ in 0..4 {
                for run in 0..10 {
                    attempt(&mut b, run, 9_000);
                }
            }
            prop_assert!(sent >= 10, "every first attempt went: {}", sent);
            prop_assert!(sent <= 15, "{} requests", sent);
        }
    }
}
