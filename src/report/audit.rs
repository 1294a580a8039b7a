//! `--log FILE`: an append-only audit trail, one JSON line per event of a
//! run (its start with the request's fingerprint, request, answer or error,
//! resume, wait, breaker, check, a refusal by the scope's retry budget or
//! `--max-delayed` queue, outcome), each with a sequence number, a
//! UTC timestamp, the run's id, its scope and its `--task` as given (the log
//! is the user's own file; the shared state keeps task ids hashed). Every entry is a
//! typed [`Entry`], masked by the run's redactor as it is built, so that no
//! producer can forget to; the log never carries Rust `Debug` text. Each line
//! is one `write` on a file opened for appending, so many processes can share
//! the file without their lines interleaving.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::clock::{ceil_ms, floor_ms, rfc3339};
use crate::redact::Redactor;
use crate::report::outcome::{Context, Line};
use crate::rules::decision::{Policy, Settlement};
use crate::rules::retry_budget::{CROWD, RETRY};
use crate::rules::scope::{BreakerNews, Level};
use crate::run::Event;
use crate::state::Refusal;

/// One line of the log, after its `seq`, `time` and `run`: a public format,
/// its names written here and never derived from Rust's.
#[derive(Debug, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Entry<'a> {
    /// The run's first entry: what it is about to send.
    Start {
        method: String,
        url: String,
        /// The request's fingerprint, as the no-progress guard and `--task`
        /// know it (a hash: no request is kept in clear).
        fingerprint: Option<String>,
        idempotency_key: Option<String>,
    },
    Request {
        attempt: u32,
        method: String,
        url: String,
        idempotency_key: Option<String>,
    },
    Response {
        attempt: u32,
        status: u16,
        retry_after_s: Option<f64>,
    },
    Error {
        attempt: u32,
        error: String,
    },
    Resume {
        attempt: u32,
        offset: u64,
        total: Option<u64>,
    },
    Wait {
        before_attempt: u32,
        wait_ms: u64,
        /// When the wait ends (UTC).
        due: String,
        /// What is left of the budget as the wait starts.
        budget_left_ms: u64,
        reason: String,
    },
    Breaker(BreakerEntry),
    /// A write's effect is unknown: `--check` asks the resource.
    Check {
        url: String,
    },
    /// What the check answered, and what that says of the write:
    /// `happened`, `not_happened` (it may go again) or `unclear`.
    CheckResult {
        status: Option<u16>,
        settled: &'static str,
    },
    /// The scope's retry budget refused the retry before `before_attempt`:
    /// `retries_left` of `capacity` were in the bucket, and `others_spent`
    /// other runs spent from it in the last `crowd_s` seconds (a run alone
    /// is never refused); time alone puts a retry back in `refills_in_ms`.
    RetryRefused {
        before_attempt: u32,
        retries_left: f64,
        capacity: f64,
        others_spent: usize,
        crowd_s: u64,
        refills_in_ms: u64,
        /// When the run's caller may come back (UTC): the outcome's.
        next_allowed_at: Option<String>,
    },
    /// `--max-delayed`: `waiting` runs already waited on the scope's gate,
    /// of `max_delayed`, so this one ended rather than wait; the gate opens
    /// in `gate_opens_in_ms`.
    QueueFull {
        waiting: usize,
        max_delayed: u32,
        gate_opens_in_ms: u64,
        next_allowed_at: Option<String>,
    },
    /// The outcome line, as the run wrote it (masked when it was built).
    Outcome(&'a Line),
}

/// What an [`Entry`] of a loop event is made with: the request, the policy
/// the waits are put in words with, and the secrets to mask.
pub struct Setting<'a> {
    pub context: &'a Context,
    pub policy: &'a Policy,
    pub redactor: &'a Redactor,
}

impl Entry<'_> {
    /// The entry of a loop event, every string in it masked.
    pub fn of(event: &Event, setting: &Setting) -> Entry<'static> {
        let mask = |text: &str| setting.redactor.text(text);
        let context = setting.context;
        match *event {
            Event::Sending { attempt, .. } => Entry::Request {
                attempt,
                method: context.method.clone(),
                url: mask(&context.url),
                idempotency_key: context.idempotency_key.clone(),
            },
            Event::Answered {
                attempt,
                status,
                server,
                ..
            } => Entry::Response {
                attempt,
                status,
                retry_after_s: server.map(|s| s.delay.as_secs_f64()),
            },
            Event::Failed { attempt, error } => Entry::Error {
                attempt,
                error: mask(error),
            },
            Event::Resumed {
                attempt,
                offset,
                total,
            } => Entry::Resume {
                attempt,
                offset,
                total,
            },
            Event::Waiting { wait, retry, left } => Entry::Wait {
                before_attempt: retry + 1,
                wait_ms: ceil_ms(wait.duration),
                due: rfc3339(SystemTime::now() + wait.duration),
                budget_left_ms: floor_ms(left),
                reason: mask(&crate::report::narrate::wait_reason(
                    wait,
                    setting.policy,
                    &context.scope,
                )),
            },
            Event::Breaker(news) => Entry::Breaker(BreakerEntry::new(&news)),
            Event::Probing(level) => Entry::Breaker(BreakerEntry {
                state: "half_open",
                level: level_name(level),
                until: None,
            }),
            Event::Checking { url } => Entry::Check { url: mask(url) },
            Event::Checked { status, settlement } => Entry::CheckResult {
                status,
                settled: match settlement {
                    Settlement::Happened => "happened",
                    Settlement::NotHappened => "not_happened",
                    Settlement::Unclear => "unclear",
                },
            },
            Event::Refused {
                refusal,
                next_allowed_at,
            } => {
                let next_allowed_at = next_allowed_at.map(rfc3339);
                let retries = |thousandths: u32| f64::from(thousandths) / f64::from(RETRY);
                match *refusal {
                    Refusal::RetryBudget {
                        attempt,
                        left,
                        capacity,
                        company,
                        refills_in,
                    } => Entry::RetryRefused {
                        before_attempt: attempt,
                        retries_left: retries(left),
                        capacity: retries(capacity),
                        others_spent: company,
                        crowd_s: CROWD.as_secs(),
                        refills_in_ms: ceil_ms(refills_in),
                        next_allowed_at,
                    },
                    Refusal::QueueFull {
                        waiting,
                        limit,
                        opens_in,
                    } => Entry::QueueFull {
                        waiting,
                        max_delayed: limit,
                        gate_opens_in_ms: ceil_ms(opens_in),
                        next_allowed_at,
                    },
                }
            }
        }
    }
}

/// A breaker's news as the log writes it: `{"state": "open", "level":
/// "endpoint", "until": "2026-11-30T10:02:00.000Z"}` (open until its
/// half-open moment), `{"state": "half_open", …, "until": null}` (this
/// run's attempt is its probe) or `{"state": "closed", …}`; the line's
/// `time` is when. A wire type of its own, so
/// that renaming the enum never changes the log.
#[derive(Debug, Serialize, PartialEq)]
pub struct BreakerEntry {
    pub state: &'static str,
    pub level: &'static str,
    pub until: Option<String>,
}

impl BreakerEntry {
    pub fn new(news: &BreakerNews) -> BreakerEntry {
        match *news {
            BreakerNews::Opened { until, level } => BreakerEntry {
                state: "open",
                level: level_name(level),
                until: Some(rfc3339(UNIX_EPOCH + Duration::from_millis(until))),
            },
            BreakerNews::Closed { level } => BreakerEntry {
                state: "closed",
                level: level_name(level),
                until: None,
            },
        }
    }
}

fn level_name(level: Level) -> &'static str {
    match level {
        Level::Scope => "scope",
        Level::Endpoint => "endpoint",
    }
}

/// A line as it is written: the entry after the line's own three fields.
#[derive(Serialize)]
struct Stamped<'a> {
    seq: u64,
    time: String,
    run: &'a str,
    scope: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    task: Option<&'a str>,
    #[serde(flatten)]
    entry: &'a Entry<'a>,
}

pub struct Audit {
    file: File,
    run: String,
    scope: String,
    task: Option<String>,
    seq: u64,
    /// The first write error, reported once; the run goes on without the log.
    failed: Option<io::Error>,
}

impl Audit {
    /// The log of one run of `scope`, under `task` (as given) if any.
    pub fn open(path: &Path, scope: &str, task: Option<&str>) -> io::Result<Audit> {
        let mut options = OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        Ok(Audit {
            file: options.open(path)?,
            run: format!("{}-{:08x}", std::process::id(), rand::random::<u32>()),
            scope: scope.to_string(),
            task: task.map(str::to_string),
            seq: 0,
            failed: None,
        })
    }

    /// The same file, for the next run (a batch's next item): a run id of
    /// its own, its scope and its task.
    pub fn next_run(&mut self, scope: &str, task: Option<&str>) {
        self.run = format!("{}-{:08x}", std::process::id(), rand::random::<u32>());
        self.scope = scope.to_string();
        self.task = task.map(str::to_string);
        self.seq = 0;
    }

    /// Appends one entry.
    pub fn write(&mut self, entry: &Entry) {
        if self.failed.is_some() {
            return;
        }
        self.seq += 1;
        let stamped = Stamped {
            seq: self.seq,
            time: rfc3339(SystemTime::now()),
            run: &self.run,
            scope: &self.scope,
            task: self.task.as_deref(),
            entry,
        };
        let mut text = serde_json::to_string(&stamped).expect("an audit entry is JSON");
        text.push('\n');
        if let Err(e) = self.file.write_all(text.as_bytes()) {
            self.failed = Some(e);
        }
    }

    /// The write error that stopped the log, if any.
    pub fn take_error(&mut self) -> Option<io::Error> {
        self.failed.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn context(url: &str) -> Context {
        Context {
            method: "GET".into(),
            url: url.into(),
            scope: "h".into(),
            idempotency_key: None,
        }
    }

    static DEFAULT_POLICY: std::sync::LazyLock<Policy> = std::sync::LazyLock::new(Policy::default);
    static NO_SECRETS: std::sync::LazyLock<Redactor> = std::sync::LazyLock::new(Redactor::default);

    /// The setting of a run with the default policy and nothing to mask.
    fn plain(context: &Context) -> Setting<'_> {
        Setting {
            context,
            policy: &DEFAULT_POLICY,
            redactor: &NO_SECRETS,
        }
    }

    #[test]
    fn an_entry_follows_the_lines_own_fields_and_is_masked() {
        let mut redactor = Redactor::default();
        redactor.add("hunter2-secret");
        let context = context("https://h/p?k=hunter2-secret");
        let policy = Policy::default();
        let setting = Setting {
            context: &context,
            policy: &policy,
            redactor: &redactor,
        };
        let failed = Entry::of(
            &Event::Failed {
                attempt: 2,
                error: "connect to redis://u:hunter2-secret@h failed",
            },
            &setting,
        );
        let text = serde_json::to_string(&Stamped {
            seq: 7,
            time: "t".into(),
            run: "r",
            scope: "h",
            task: Some("order-17"),
            entry: &failed,
        })
        .unwrap();
        assert!(!text.contains("hunter2"), "{text}");
        assert!(
            text.starts_with(
                r#"{"seq":7,"time":"t","run":"r","scope":"h","task":"order-17","event":"error","#
            ),
            "{text}"
        );
        let sent = Entry::of(
            &Event::Sending {
                attempt: 1,
                limits: crate::edge::http::Limits {
                    head: Duration::from_secs(1),
                    total: None,
                    connect: Duration::from_secs(1),
                    stall: Duration::from_secs(1),
                },
            },
            &setting,
        );
        let value: Value = serde_json::to_value(&sent).unwrap();
        assert_eq!(value["url"], "https://h/p?k=***");
        assert_eq!(value["event"], "request");
    }

    #[test]
    fn refusals_by_the_scopes_limits_say_what_they_weighed() {
        let context = context("https://h/");
        let setting = plain(&context);
        let at = Some(UNIX_EPOCH + Duration::from_millis(1_764_496_800_000));
        let budget = Refusal::RetryBudget {
            attempt: 3,
            left: 250,
            capacity: 5_000,
            company: 2,
            refills_in: Duration::from_micros(7_500_200),
        };
        let entry = |refusal: &Refusal| {
            let event = Event::Refused {
                refusal,
                next_allowed_at: at,
            };
            serde_json::to_value(Entry::of(&event, &setting)).unwrap()
        };
        assert_eq!(
            entry(&budget),
            json!({"event": "retry_refused", "before_attempt": 3, "retries_left": 0.25,
                   "capacity": 5.0, "others_spent": 2, "crowd_s": 10, "refills_in_ms": 7501,
                   "next_allowed_at": "2025-11-30T10:00:00.000Z"})
        );
        let queue = Refusal::QueueFull {
            waiting: 4,
            limit: 4,
            opens_in: Duration::from_millis(1_200),
        };
        assert_eq!(
            entry(&queue),
            json!({"event": "queue_full", "waiting": 4, "max_delayed": 4,
                   "gate_opens_in_ms": 1200, "next_allowed_at": "2025-11-30T10:00:00.000Z"})
        );
    }

    #[test]
    fn breaker_news_is_written_as_data_not_debug_text() {
        let opened = BreakerNews::Opened {
            until: 1_764_496_800_000,
            level: Level::Endpoint,
        };
        assert_eq!(
            serde_json::to_value(Entry::Breaker(BreakerEntry::new(&opened))).unwrap(),
            json!({"event": "breaker", "state": "open", "level": "endpoint", "until": "2025-11-30T10:00:00.000Z"})
        );
        let closed = BreakerNews::Closed {
            level: Level::Scope,
        };
        assert_eq!(
            serde_json::to_value(BreakerEntry::new(&closed)).unwrap(),
            json!({"state": "closed", "level": "scope", "until": null})
        );
        let context = context("https://h/");
        let setting = plain(&context);
        assert_eq!(
            serde_json::to_value(Entry::of(&Event::Probing(Level::Scope), &setting)).unwrap(),
            json!({"event": "breaker", "state": "half_open", "level": "scope", "until": null})
        );
    }
}
