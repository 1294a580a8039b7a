//! `--log FILE`: an append-only audit trail, one JSON line per event of a
//! run (request, answer or error, wait, breaker, outcome), each with a
//! sequence number, a UTC timestamp and the run's id. Credentials are already
//! redacted in everything handed to it. Each line is one `write` on a file
//! opened for appending, so many processes can share the file without their
//! lines interleaving.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::clock::rfc3339;
use crate::rules::scope::{BreakerNews, Level};

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

    /// Appends one event; `fields` must be a JSON object.
    pub fn event(&mut self, event: &str, fields: Value) {
        if self.failed.is_some() {
            return;
        }
        self.seq += 1;
        let mut line = Map::new();
        line.insert("seq".into(), json!(self.seq));
        line.insert(
            "time".into(),
            json!(crate::clock::rfc3339(SystemTime::now())),
        );
        line.insert("run".into(), json!(self.run));
        line.insert("event".into(), json!(event));
        if let Value::Object(fields) = fields {
            line.extend(fields);
        }
        let mut text = Value::Object(line).to_string();
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

    #[test]
    fn breaker_news_is_written_as_data_not_debug_text() {
        let opened = BreakerNews::Opened {
            until: 1_764_496_800_000,
            level: Level::Endpoint,
        };
        assert_eq!(
            serde_json::to_value(BreakerEntry::new(&opened)).unwrap(),
            json!({"state": "opened", "level": "endpoint", "until": "2025-11-30T10:00:00.000Z"})
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
