//! `--log FILE`: an append-only audit trail, one JSON line per event of a
//! run (request, answer or error, resume, wait, breaker, outcome), each with
//! a sequence number, a UTC timestamp and the run's id. Every entry is a
//! typed [`Entry`], masked by the run's redactor as it is built, so that no
//! producer can forget to; the log never carries Rust `Debug` text. Each line
//! is one `write` on a file opened for appending, so many processes can share
//! the file without their lines interleaving.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::clock::{ceil_ms, rfc3339};
use crate::redact::Redactor;
use crate::report::outcome::{Context, Line};
use crate::rules::decision::Policy;
use crate::rules::scope::{BreakerNews, Level};
use crate::run::Event;

/// One line of the log, after its `seq`, `time` and `run`: a public format,
/// its names written here and never derived from Rust's.
#[derive(Debug, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Entry<'a> {
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
        reason: String,
    },
    Breaker(BreakerEntry),
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
            Event::Waiting { wait, retry } => Entry::Wait {
                before_attempt: retry + 1,
                wait_ms: ceil_ms(wait.duration),
                reason: mask(&crate::report::narrate::wait_reason(
                    wait,
                    setting.policy,
                    &context.scope,
                )),
            },
            Event::Breaker(news) => Entry::Breaker(BreakerEntry::new(&news)),
        }
    }
}

/// A breaker's news as the log writes it: `{"state": "opened", "level":
/// "endpoint", "until": "2026-11-30T10:02:00.000Z"}` or `{"state":
/// "closed", "level": "scope", "until": null}`. A wire type of its own, so
/// that renaming the enum never changes the log.
#[derive(Debug, Serialize, PartialEq)]
pub struct BreakerEntry {
    pub state: &'static str,
    pub level: &'static str,
    pub until: Option<String>,
}

impl BreakerEntry {
    pub fn new(news: &BreakerNews) -> BreakerEntry {
        let level = |level: &Level| match level {
            Level::Scope => "scope",
            Level::Endpoint => "endpoint",
        };
        match news {
            BreakerNews::Opened { until, level: l } => BreakerEntry {
                state: "opened",
                level: level(l),
                until: Some(rfc3339(UNIX_EPOCH + Duration::from_millis(*until))),
            },
            BreakerNews::Closed { level: l } => BreakerEntry {
                state: "closed",
                level: level(l),
                until: None,
            },
        }
    }
}

/// A line as it is written: the entry after the line's own three fields.
#[derive(Serialize)]
struct Stamped<'a> {
    seq: u64,
    time: String,
    run: &'a str,
    #[serde(flatten)]
    entry: &'a Entry<'a>,
}

pub struct Audit {
    file: File,
    run: String,
    seq: u64,
    /// The first write error, reported once; the run goes on without the log.
    failed: Option<io::Error>,
}

impl Audit {
    pub fn open(path: &Path) -> io::Result<Audit> {
        let mut options = OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        Ok(Audit {
            file: options.open(path)?,
            run: format!("{}-{:08x}", std::process::id(), rand::random::<u32>()),
            seq: 0,
            failed: None,
        })
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

    #[test]
    fn an_entry_follows_the_lines_own_fields_and_is_masked() {
        let mut redactor = Redactor::default();
        redactor.add("hunter2-secret");
        let context = Context {
            method: "GET".into(),
            url: "https://h/p?k=hunter2-secret".into(),
            scope: "h".into(),
            idempotency_key: None,
        };
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
            entry: &failed,
        })
        .unwrap();
        assert!(!text.contains("hunter2"), "{text}");
        assert!(
            text.starts_with(r#"{"seq":7,"time":"t","run":"r","event":"error","#),
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
    fn breaker_news_is_written_as_data_not_debug_text() {
        let opened = BreakerNews::Opened {
            until: 1_764_496_800_000,
            level: Level::Endpoint,
        };
        assert_eq!(
            serde_json::to_value(Entry::Breaker(BreakerEntry::new(&opened))).unwrap(),
            json!({"event": "breaker", "state": "opened", "level": "endpoint", "until": "2025-11-30T10:00:00.000Z"})
        );
        let closed = BreakerNews::Closed {
            level: Level::Scope,
        };
        assert_eq!(
            serde_json::to_value(BreakerEntry::new(&closed)).unwrap(),
            json!({"state": "closed", "level": "scope", "until": null})
        );
    }
}
