//! `--escalate FILE`: one JSON line for each run that a person must decide
//! about (a write whose effect is unknown, a request that keeps failing the
//! same way, a NEEDS_HUMAN), with what they need to decide without digging through logs:
//! what was sent where, every attempt with its status and rate-limit
//! headers, the budget used, the key and the provider's id, and the safe
//! ways on, each with its risk. Never a request body, never a secret: every
//! string from the run passes the redactor as the record is built.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::clock::{floor_ms, rfc3339};
use crate::exit::Kind;
use crate::redact::{self, Redactor};

/// One escalation, as the file's line. A public contract: add fields, never
/// rename or remove one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Escalation {
    pub time: String,
    pub outcome: &'static str,
    pub reason: String,
    /// `--task` as given (the file is the user's own, like `--log`).
    pub task: Option<String>,
    pub method: String,
    pub url: String,
    pub scope: String,
    pub fingerprint: String,
    pub attempts: Vec<Step>,
    pub budget: BudgetUsed,
    pub idempotency_key: Option<String>,
    pub operation_id: Option<String>,
    pub options: Vec<Choice>,
}

/// One attempt of the timeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    pub attempt: u32,
    pub at: String,
    pub status: Option<u16>,
    pub error: Option<String>,
    /// The answer's rate-limit and retry headers, by lowercase name.
    pub rate_limit: BTreeMap<String, String>,
    /// The wait that followed it, if any.
    pub wait_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BudgetUsed {
    pub attempts_used: u32,
    pub attempts_allowed: u32,
    pub elapsed_ms: u64,
    pub budget_ms: u64,
}

/// A way on, and what it risks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Choice {
    pub action: &'static str,
    pub how: String,
    pub risk: &'static str,
}

/// One attempt, as the run knows it.
#[derive(Debug, Clone, Copy)]
pub struct AttemptPart<'a> {
    pub at: SystemTime,
    pub status: Option<u16>,
    pub error: Option<&'a str>,
    /// The answer's headers, all of them: the rate-limit ones are picked here.
    pub headers: &'a [(String, String)],
    pub wait: Option<Duration>,
}

/// What the run hands over, as plain values.
#[derive(Debug, Clone, Copy)]
pub struct Parts<'a> {
    pub now: SystemTime,
    pub outcome: Kind,
    pub reason: &'a str,
    pub task: Option<&'a str>,
    pub method: &'a str,
    /// The URL as sent; masked here.
    pub url: &'a str,
    pub scope: &'a str,
    pub fingerprint: &'a str,
    pub attempts: &'a [AttemptPart<'a>],
    pub attempts_allowed: u32,
    pub elapsed: Duration,
    pub budget: Duration,
    pub idempotency_key: Option<&'a str>,
    pub operation_id: Option<&'a str>,
    /// The run ended because its `--task-attempts` are spent.
    pub task_spent: bool,
}

/// Headers that say how the server limits or paces its clients.
fn is_rate_limit_header(name: &str) -> bool {
    const EXACT: [&str; 8] = [
        "retry-after",
        "retry-after-ms",
        "x-ms-retry-after-ms",
        "x-retry-in",
        "ratelimit",
        "ratelimit-policy",
        "x-should-retry",
        "stripe-should-retry",
    ];
    const PREFIXES: [&str; 4] = [
        "x-ratelimit-",
        "ratelimit-",
        "x-rate-limit-",
        "anthropic-ratelimit-",
    ];
    EXACT.contains(&name) || PREFIXES.iter().any(|p| name.starts_with(p))
}

impl Escalation {
    /// Whether a run that ended `kind` is escalated: a person must decide
    /// when a write may have happened, a request keeps failing alike, or
    /// the run said NEEDS_HUMAN.
    pub fn wanted(kind: Kind) -> bool {
        matches!(
            kind,
            Kind::SideEffectUnknown | Kind::NoProgress | Kind::NeedsHuman
        )
    }

    pub fn new(parts: &Parts, redactor: &Redactor) -> Escalation {
        let text = |s: &str| redactor.text(s);
        let attempts = parts
            .attempts
            .iter()
            .zip(1..)
            .map(|(a, attempt)| Step {
                attempt,
                at: rfc3339(a.at),
                status: a.status,
                error: a.error.map(text),
                rate_limit: a
                    .headers
                    .iter()
                    .map(|(name, value)| (name.to_ascii_lowercase(), value))
                    .filter(|(name, _)| is_rate_limit_header(name))
                    .map(|(name, value)| (name, text(value)))
                    .collect(),
                wait_ms: a.wait.map(floor_ms),
            })
            .collect();
        let url = text(&redact::url(parts.url));
        Escalation {
            time: rfc3339(parts.now),
            outcome: parts.outcome.name(),
            reason: text(parts.reason),
            task: parts.task.map(text),
            method: parts.method.to_string(),
            options: choices(parts, &url),
            url,
            scope: text(parts.scope),
            fingerprint: parts.fingerprint.to_string(),
            attempts,
            budget: BudgetUsed {
                attempts_used: u32::try_from(parts.attempts.len()).unwrap_or(u32::MAX),
                attempts_allowed: parts.attempts_allowed,
                elapsed_ms: floor_ms(parts.elapsed),
                budget_ms: floor_ms(parts.budget),
            },
            idempotency_key: parts.idempotency_key.map(text),
            operation_id: parts.operation_id.map(text),
        }
    }

    /// Appends the record as one line, in one `write` on a file opened for
    /// appending (private when created): records of runs that share the
    /// file never interleave.
    pub fn append(&self, path: &Path) -> io::Result<()> {
        let mut line = serde_json::to_vec(self).map_err(io::Error::other)?;
        line.push(b'\n');
        let mut options = OpenOptions::new();
        options.create(true).append(true);
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let written = options.open(path)?.write(&line)?;
        if written < line.len() {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!(
                    "{}: only {written} of {} bytes were written",
                    path.display(),
                    line.len()
                ),
            ));
        }
        Ok(())
    }
}

/// The safe ways on from this ending, each with its risk.
fn choices(parts: &Parts, url: &str) -> Vec<Choice> {
    let mut choices = Vec::new();
    if parts.task_spent {
        choices.push(Choice {
            action: "find out why",
            how: "read the attempts above (and the --log) for what the task's requests got".into(),
            risk: "none: a read changes nothing",
        });
        choices.push(Choice {
            action: "give the task more",
            how: "rerun the same command with a larger --task-attempts".into(),
            risk: "more requests to an API that kept failing them; the same key is sent, so a write that dedupes happens once",
        });
        choices.push(Choice {
            action: "cancel",
            how: "stop running this task".into(),
            risk: "none: nothing more is sent",
        });
        return choices;
    }
    if parts.outcome == Kind::NoProgress {
        choices.push(Choice {
            action: "fix the request",
            how: "read the error the server gave; change what it names".into(),
            risk: "none: a changed request is a new one",
        });
        choices.push(Choice {
            action: "cancel",
            how: "stop retrying this request".into(),
            risk: "none: nothing more is sent",
        });
        return choices;
    }
    let find = match parts.operation_id {
        Some(id) => format!("look up the provider's operation {id}"),
        None => format!("GET the resource the write would have made or changed ({url})"),
    };
    choices.push(Choice {
        action: "query the resource",
        how: format!("{find} to see whether the write happened"),
        risk: "none: a read changes nothing",
    });
    if let Some(key) = parts.idempotency_key {
        let how = match parts.task {
            Some(_) => format!("rerun the same command (same --task), which sends the key {key}"),
            None => format!("rerun with --idempotency-key {key}"),
        };
        choices.push(Choice {
            action: "replay with the same key",
            how,
            risk: "safe only if the server dedupes on Idempotency-Key; if it does not, the write may happen twice",
        });
    }
    choices.push(Choice {
        action: "cancel",
        how: "send nothing more; record that the write may have happened".into(),
        risk: "the write may have happened: someone must find out, or its effect stays unknown",
    });
    choices.push(Choice {
        action: "send as a new operation",
        how: "rerun with a new --task (or a new key)".into(),
        risk: "if the first write happened, this makes a second one (a duplicate order, payment or message)",
    });
    choices
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    const TOKEN: &str = "sk_live_0123456789abcdef";

    fn redactor() -> Redactor {
        let mut r = Redactor::default();
        r.add(&format!("Bearer {TOKEN}"));
        r
    }

    fn record(outcome: Kind, key: Option<&str>, operation_id: Option<&str>) -> Escalation {
        let at = UNIX_EPOCH + Duration::from_secs(1_796_000_000);
        let headers = vec![
            ("Retry-After".to_string(), "3".to_string()),
            ("X-RateLimit-Remaining".to_string(), "0".to_string()),
            ("Content-Type".to_string(), "application/json".to_string()),
            ("Set-Cookie".to_string(), format!("s={TOKEN}")),
            (
                "RateLimit".to_string(),
                "limit=10, remaining=0, reset=3".to_string(),
            ),
        ];
        let attempts = [
            AttemptPart {
                at,
                status: Some(429),
                error: None,
                headers: &headers,
                wait: Some(Duration::from_millis(3_250)),
            },
            AttemptPart {
                at: at + Duration::from_secs(4),
                status: None,
                error: Some("connection reset after sending (token sk_live_0123456789abcdef)"),
                headers: &[],
                wait: None,
            },
        ];
        Escalation::new(
            &Parts {
                now: at + Duration::from_secs(5),
                outcome,
                reason: "the write may have been applied",
                task: Some("order-17"),
                method: "POST",
                url: "https://user:pw@api.example.com/v1/orders?api_key=abc123&x=1",
                scope: "example",
                fingerprint: "ab12",
                attempts: &attempts,
                attempts_allowed: 4,
                elapsed: Duration::from_millis(5_001),
                budget: Duration::from_secs(60),
                idempotency_key: key,
                operation_id,
                task_spent: false,
            },
            &redactor(),
        )
    }

    #[test]
    fn a_record_carries_the_story_and_no_secret() {
        let r = record(Kind::SideEffectUnknown, Some("key-1"), None);
        let line = serde_json::to_string(&r).unwrap();
        assert!(!line.contains(TOKEN), "{line}");
        assert!(!line.contains("pw@") && !line.contains("abc123"), "{line}");
        assert_eq!(
            r.url,
            "https://***@api.example.com/v1/orders?api_key=***&x=1"
        );
        assert_eq!(r.outcome, "SIDE_EFFECT_UNKNOWN");
        assert_eq!(r.task.as_deref(), Some("order-17"));
        assert_eq!(r.attempts.len(), 2);
        assert_eq!(r.attempts[0].at, "2026-11-30T00:53:20.000Z");
        assert_eq!(
            r.attempts[0].rate_limit.keys().collect::<Vec<_>>(),
            ["ratelimit", "retry-after", "x-ratelimit-remaining"]
        );
        assert_eq!(r.attempts[0].wait_ms, Some(3_250));
        assert!(r.attempts[1].error.as_deref().unwrap().contains("***"));
        assert_eq!(
            r.budget,
            BudgetUsed {
                attempts_used: 2,
                attempts_allowed: 4,
                elapsed_ms: 5_001,
                budget_ms: 60_000
            }
        );
        let actions: Vec<_> = r.options.iter().map(|c| c.action).collect();
        assert_eq!(
            actions,
            [
                "query the resource",
                "replay with the same key",
                "cancel",
                "send as a new operation"
            ]
        );
        assert!(r.options[1].how.contains("same --task") && r.options[1].how.contains("key-1"));
        assert!(r.options[0].how.contains("https://***@api.example.com"));
    }

    #[test]
    fn options_follow_what_the_run_has() {
        let r = record(Kind::SideEffectUnknown, None, Some("ord_42"));
        let actions: Vec<_> = r.options.iter().map(|c| c.action).collect();
        assert!(
            !actions.contains(&"replay with the same key"),
            "no key, no keyed replay"
        );
        assert!(r.options[0].how.contains("ord_42"));
        assert_eq!(r.operation_id.as_deref(), Some("ord_42"));
        let r = record(Kind::NoProgress, None, None);
        assert_eq!(
            r.options.iter().map(|c| c.action).collect::<Vec<_>>(),
            ["fix the request", "cancel"]
        );
        assert!(Escalation::wanted(Kind::SideEffectUnknown));
        assert!(Escalation::wanted(Kind::NoProgress));
        assert!(Escalation::wanted(Kind::NeedsHuman));
        assert!(!Escalation::wanted(Kind::Succeeded));
        assert!(!Escalation::wanted(Kind::RetryExhausted));
    }

    #[test]
    fn records_append_one_line_each() {
        let dir = std::env::temp_dir().join(format!("abide-escalate-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("escalations.jsonl");
        let first = record(Kind::SideEffectUnknown, Some("key-1"), None);
        let second = record(Kind::NoProgress, None, None);
        first.append(&path).unwrap();
        second.append(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["outcome"], "SIDE_EFFECT_UNKNOWN");
        assert_eq!(lines[1]["outcome"], "NO_PROGRESS");
        assert_eq!(lines[0]["idempotency_key"], "key-1");
        assert!(lines[0].get("body").is_none());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(
            first
                .append(&dir.join("missing/escalations.jsonl"))
                .is_err()
        );
    }
}
