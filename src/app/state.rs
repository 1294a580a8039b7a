//! `abide state`: what the scope state remembers, scope by scope (why runs
//! are held: the gate, the breakers, `--rate`, slots, the retry budget, the
//! task keys), and `abide state clear` to forget it. The store is opened as
//! a run opens it (`--state`, `--state-dir`, their environment variables).

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, UNIX_EPOCH};

use anyhow::{Context as _, Result};
use serde::Serialize;

use crate::cli::state::{ClearArgs, StateAction, StateArgs, StoreArgs};
use crate::clock::{Millis, rfc3339};
use crate::exit::Kind;
use crate::rules::retry_budget::{self, RETRY};
use crate::rules::scope::{self, Breaker, GateCause};
use crate::state::{FileStore, RedisStore, Store, Stored};

/// The longest the store may take to connect or answer.
const TIMEOUT: Duration = Duration::from_secs(2);

impl StoreArgs {
    /// The store, or `None` for a state directory that does not exist yet
    /// (nothing remembered; looking creates nothing).
    fn open(&self) -> Result<Option<Box<dyn Store>>> {
        let masked = |e: std::io::Error| anyhow::anyhow!(crate::redact::urls_in(&e.to_string()));
        match &self.state {
            Some(url) if url.starts_with("redis://") || url.starts_with("rediss://") => {
                let store = RedisStore::connect(url, TIMEOUT).map_err(masked)?;
                Ok(Some(Box::new(store)))
            }
            Some(_) => anyhow::bail!("--state takes a redis:// or rediss:// URL"),
            None => {
                let dir = self
                    .state_dir
                    .clone()
                    .or_else(FileStore::default_dir)
                    .context("no state directory: set --state-dir or HOME")?;
                if !dir.exists() {
                    return Ok(None);
                }
                let store = FileStore::open(&dir, TIMEOUT)
                    .with_context(|| format!("the state directory {}", dir.display()))?;
                Ok(Some(Box::new(store)))
            }
        }
    }
}

pub fn run(args: &StateArgs) -> Result<ExitCode> {
    match &args.action {
        None => list(&args.store, args.json),
        Some(StateAction::Clear(clear)) => self::clear(clear),
    }
}

fn list(store: &StoreArgs, json: bool) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    let listing = match store.open()? {
        Some(store) => Some((store.list().context("cannot list the scopes")?, store)),
        None => None,
    };
    let Some(((listing, now), store)) = listing.filter(|((l, _), _)| !l.is_empty()) else {
        if !json {
            writeln!(out, "No scope is remembered.")?;
        }
        return Ok(ExitCode::SUCCESS);
    };
    for stored in &listing {
        let slots = store
            .slots_in_use(&stored.hash)
            .context("cannot count the slots in use")?;
        let view = View::of(stored, now, slots);
        if json {
            writeln!(out, "{}", serde_json::to_string(&view)?)?;
        } else {
            write!(out, "{}", view.text())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn clear(args: &ClearArgs) -> Result<ExitCode> {
    let Some(store) = args.store.open()? else {
        if args.all {
            return Ok(ExitCode::SUCCESS);
        }
        eprintln!("abide: error: the store remembers no scope (its directory does not exist)");
        return Ok(ExitCode::from(Kind::UsageError.exit_code()));
    };
    let (listing, _) = store.list().context("cannot list the scopes")?;
    let chosen: Vec<&Stored> = match &args.scope {
        Some(given) => match crate::state::find(&listing, given) {
            Some(stored) => vec![stored],
            None => {
                eprintln!(
                    "abide: error: the store remembers no scope `{given}` (`abide state` lists them)"
                );
                return Ok(ExitCode::from(Kind::UsageError.exit_code()));
            }
        },
        None => listing.iter().collect(),
    };
    let keys: usize = chosen.iter().map(|s| s.state.tasks.len()).sum();
    if args.tasks && keys > 0 && !args.yes && !confirmed(keys, chosen.len())? {
        return Ok(ExitCode::from(Kind::UsageError.exit_code()));
    }
    let mut out = std::io::stdout().lock();
    for stored in chosen {
        store
            .clear(&stored.hash, args.tasks)
            .with_context(|| format!("cannot clear scope {}", stored.label()))?;
        writeln!(out, "Cleared scope {}.", stored.label())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Asks at a terminal before task keys are forgotten; without one, says
/// that `--yes` is needed.
fn confirmed(keys: usize, scopes: usize) -> Result<bool> {
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        eprintln!(
            "abide: error: --tasks forgets {keys} task key(s), after which a rerun of a task \
             sends a new key; confirm at a terminal, or add --yes"
        );
        return Ok(false);
    }
    eprint!(
        "Forget {keys} task key(s) of {scopes} scope(s)? A rerun of a task will send a new \
         idempotency key. [y/N] "
    );
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

/// One scope as `abide state` shows it; `--json` writes it as it is.
#[derive(Debug, Serialize, PartialEq)]
struct View {
    scope: String,
    hash: String,
    gate: Gate,
    breaker: Door,
    /// Endpoints (a method and a path) whose own breaker is open or half-open.
    endpoints_open: usize,
    /// `--rate`: the next free slot, while it is ahead.
    rate_next_slot: Option<String>,
    slots_in_use: u32,
    /// Runs waiting on the gate (counted with `--max-delayed`).
    waiting_on_gate: usize,
    retry_budget: Budget,
    tasks_kept: usize,
}

#[derive(Debug, Serialize, PartialEq)]
struct Gate {
    /// No request of the scope before this; `null` when open.
    next_allowed_at: Option<String>,
    cause: Option<GateCause>,
}

#[derive(Debug, Serialize, PartialEq)]
struct Door {
    state: &'static str,
    open_until: Option<String>,
    failures: u32,
}

#[derive(Debug, Serialize, PartialEq)]
struct Budget {
    /// Retries the bucket holds now.
    retries_left: f64,
    capacity: f64,
}

fn at(ms: Millis) -> String {
    rfc3339(UNIX_EPOCH + Duration::from_millis(ms))
}

impl Door {
    fn of(breaker: &Breaker, now: Millis) -> Door {
        let state = match breaker.open_until {
            None => "closed",
            Some(until) if now < until => "open",
            Some(_) => "half_open",
        };
        Door {
            state,
            open_until: breaker.open_until.filter(|&t| now < t).map(at),
            failures: breaker.failures,
        }
    }
}

impl View {
    fn of(stored: &Stored, now: Millis, slots_in_use: u32) -> View {
        let s = &stored.state;
        let gate_closed = s.next_allowed_at.filter(|&t| t > now);
        let thousandths = |n: u32| f64::from(n) / f64::from(RETRY);
        View {
            scope: stored.label().to_string(),
            hash: stored.hash.clone(),
            gate: Gate {
                next_allowed_at: gate_closed.map(at),
                cause: gate_closed.and(s.gate_cause),
            },
            breaker: Door::of(&s.breaker, now),
            endpoints_open: s
                .endpoints
                .iter()
                .filter(|e| e.breaker.open_until.is_some())
                .count(),
            rate_next_slot: s.rate_tat.filter(|&t| t > now).map(at),
            slots_in_use,
            waiting_on_gate: scope::waiting(s, now),
            retry_budget: Budget {
                retries_left: thousandths(retry_budget::level(&s.retry_budget, now)),
                capacity: thousandths(retry_budget::CAPACITY),
            },
            tasks_kept: s.tasks.iter().filter(|t| t.expires > now).count(),
        }
    }

    fn text(&self) -> String {
        let gate = match (&self.gate.next_allowed_at, self.gate.cause) {
            (None, _) => "open".to_string(),
            (Some(t), cause) => {
                let why = match cause {
                    Some(GateCause::RetryAfter) | None => "a Retry-After",
                    Some(GateCause::QuotaExhausted) => "a used-up rate-limit quota",
                    Some(GateCause::Backoff) => "the backoff after a 429 or 503 without a delay",
                };
                format!("closed until {t}, by {why}")
            }
        };
        let breaker = match (self.breaker.state, &self.breaker.open_until) {
            ("open", Some(until)) => format!("open until {until}"),
            ("half_open", _) => "half-open: the next run may probe".to_string(),
            _ => format!("closed ({} failure(s) in a row)", self.breaker.failures),
        };
        let rate = self
            .rate_next_slot
            .as_ref()
            .map_or("no slot ahead".to_string(), |t| format!("next slot at {t}"));
        format!(
            "{}\n  hash          {}\n  gate          {gate}\n  breaker       {breaker}\n  \
             endpoints     {} with an open breaker\n  --rate        {rate}\n  \
             slots in use  {}\n  waiting       {} on the gate\n  retry budget  {:.1} of {} retries left\n  tasks kept    {}\n",
            self.scope,
            self.hash,
            self.endpoints_open,
            self.slots_in_use,
            self.waiting_on_gate,
            self.retry_budget.retries_left,
            self.retry_budget.capacity,
            self.tasks_kept
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::retry_budget::RetryBudget;
    use crate::rules::scope::{ScopeState, TaskKey};

    const NOW: Millis = 1_764_000_000_000;

    #[test]
    fn a_held_scope_shows_why() {
        let stored = Stored {
            hash: "ab".repeat(16),
            state: ScopeState {
                name: Some("acme".into()),
                next_allowed_at: Some(NOW + 30_000),
                gate_cause: Some(GateCause::Backoff),
                rate_tat: Some(NOW + 200),
                breaker: Breaker {
                    failures: 2,
                    open_until: Some(NOW + 5_000),
                    ..Breaker::default()
                },
                retry_budget: RetryBudget {
                    spent: 3_500,
                    at: NOW,
                    spenders: vec![],
                },
                delayed: vec![crate::rules::scope::Delayed {
                    holder: "p".into(),
                    until: NOW + 30_000,
                }],
                tasks: vec![
                    TaskKey {
                        task: "t".into(),
                        key: "k".into(),
                        expires: NOW + 1,
                        ..TaskKey::default()
                    },
                    TaskKey {
                        task: "old".into(),
                        key: "k".into(),
                        expires: NOW,
                        ..TaskKey::default()
                    },
                ],
                ..ScopeState::default()
            },
        };
        let view = View::of(&stored, NOW, 1);
        let json = serde_json::to_value(&view).unwrap();
        assert_eq!(json["scope"], "acme");
        assert_eq!(json["gate"]["next_allowed_at"], "2025-11-24T16:00:30.000Z");
        assert_eq!(json["gate"]["cause"], "backoff");
        assert_eq!(json["breaker"]["state"], "open");
        assert_eq!(json["rate_next_slot"], "2025-11-24T16:00:00.200Z");
        assert_eq!(json["slots_in_use"], 1);
        assert_eq!(json["waiting_on_gate"], 1);
        assert_eq!(json["retry_budget"]["retries_left"], 1.5);
        assert_eq!(json["retry_budget"]["capacity"], 5.0);
        assert_eq!(json["tasks_kept"], 1);
        let text = view.text();
        assert!(
            text.contains("closed until 2025-11-24T16:00:30.000Z, by the backoff"),
            "{text}"
        );
        assert!(text.contains("1.5 of 5 retries left"), "{text}");

        // Later, what has passed no longer holds anyone.
        let view = View::of(&stored, NOW + 60_000, 0);
        assert_eq!(view.gate.next_allowed_at, None);
        assert_eq!(view.gate.cause, None);
        assert_eq!(view.breaker.state, "half_open");
        assert_eq!(view.rate_next_slot, None);
        assert_eq!(view.retry_budget.retries_left, 5.0);
        assert_eq!(view.tasks_kept, 0);
    }

    #[test]
    fn a_record_of_an_older_version_shows_its_hash() {
        let stored = Stored {
            hash: "cd".repeat(16),
            state: ScopeState::default(),
        };
        let view = View::of(&stored, NOW, 0);
        assert_eq!(view.scope, "cd".repeat(16));
        assert_eq!(view.breaker.state, "closed");
        assert!(
            view.text().contains("gate          open"),
            "{}",
            view.text()
        );
    }
}
