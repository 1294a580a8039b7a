//! The outcome: every way a run can end, its exit code, and the one-line
//! JSON contract that scripts, pipelines and agents read.
//!
//! The wire format is its own type ([`Line`]), built from the run's record;
//! durations are integer milliseconds, optional fields are `null`, and the
//! field set never depends on the outcome.

use std::time::Duration;

use serde::Serialize;

use crate::clock::{floor_ms, rfc3339};
use crate::exit::Kind;
use crate::redact::Redactor;
use crate::rules::decision::StopWhy;
use crate::rules::scope;
use crate::run::record::{Ending, Record};

/// What the request was, for the outcome line (already redacted).
#[derive(Debug, Clone)]
pub struct Context {
    pub method: String,
    pub url: String,
    pub scope: String,
    pub idempotency_key: Option<String>,
}

/// The outcome line: a public contract. Add fields; never rename or remove.
#[derive(Debug, Serialize)]
pub struct Line {
    pub outcome: &'static str,
    pub ok: bool,
    pub exit_code: u8,
    pub method: Option<String>,
    pub url: Option<String>,
    pub scope: Option<String>,
    pub status: Option<u16>,
    pub attempts: u32,
    pub elapsed_ms: u64,
    pub waited_ms: u64,
    pub retry_after_s: Option<f64>,
    pub next_allowed_at: Option<String>,
    pub idempotency_key: Option<String>,
    pub reason: String,
    pub instruction: String,
    pub error: Option<String>,
    pub history: Vec<HistoryEntry>,
    pub resumed_bytes: u64,
    /// The write's effect was unknown and `--check` found it happened.
    pub reconciled: bool,
    /// The provider's id for what the write created (a 201's `Location`,
    /// or `--id-pointer`), from this run or kept by its `--task`.
    pub operation_id: Option<String>,
    /// The item's id, in a `--batch`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct HistoryEntry {
    pub attempt: u32,
    pub status: Option<u16>,
    pub error: Option<String>,
    pub retry_after_s: Option<f64>,
    pub wait_ms: Option<u64>,
    pub elapsed_ms: u64,
}

/// Seconds with millisecond precision, so `1.5` stays `1.5` in JSON.
fn seconds(d: Duration) -> f64 {
    floor_ms(d) as f64 / 1000.0
}

impl Line {
    /// The line of a run, every string in it masked by `redactor` here, as
    /// it is built: a message from the state store or the server may quote
    /// a credential, and no producer needs to remember it.
    pub fn new(context: &Context, record: &Record, redactor: &Redactor) -> Line {
        let mask = |text: &str| redactor.text(text);
        let last = record.attempts.last();
        let status = last.and_then(|a| a.status);
        let retry_after = record.attempts.iter().rev().find_map(|a| a.server_delay);
        let next_allowed_at = record.next_allowed_at.map(rfc3339);
        let words = Words {
            context,
            record,
            status,
            next_allowed_at: next_allowed_at.as_deref(),
        };
        Line {
            outcome: record.kind().name(),
            ok: record.kind() == Kind::Succeeded,
            exit_code: record.kind().exit_code(),
            method: Some(context.method.clone()),
            url: Some(mask(&context.url)),
            scope: Some(context.scope.clone()),
            status,
            attempts: record.attempts.len() as u32,
            elapsed_ms: floor_ms(record.elapsed),
            waited_ms: floor_ms(record.waited),
            retry_after_s: retry_after.map(|d| seconds(d.delay)),
            next_allowed_at: next_allowed_at.clone(),
            idempotency_key: context.idempotency_key.clone(),
            reason: mask(&words.reason()),
            instruction: mask(&words.instruction()),
            error: record.error.as_deref().map(mask),
            history: record
                .attempts
                .iter()
                .enumerate()
                .map(|(i, a)| HistoryEntry {
                    attempt: i as u32 + 1,
                    status: a.status,
                    error: a.error.as_deref().map(mask),
                    retry_after_s: a.server_delay.map(|d| seconds(d.delay)),
                    wait_ms: a.wait.map(floor_ms),
                    elapsed_ms: floor_ms(a.ended_at),
                })
                .collect(),
            resumed_bytes: record.resumed,
            reconciled: record.ending == Ending::Decided(StopWhy::Reconciled),
            operation_id: record.operation_id.as_deref().map(mask),
            id: None,
        }
    }

    /// A command line that could not be used: nothing was sent.
    pub fn usage_error(message: &str) -> Line {
        Line {
            outcome: Kind::UsageError.name(),
            ok: false,
            exit_code: Kind::UsageError.exit_code(),
            method: None,
            url: None,
            scope: None,
            status: None,
            attempts: 0,
            elapsed_ms: 0,
            waited_ms: 0,
            retry_after_s: None,
            next_allowed_at: None,
            idempotency_key: None,
            reason: format!("Usage error: {message}"),
            instruction: "Fix the command line and run it again.".to_string(),
            error: None,
            history: Vec::new(),
            resumed_bytes: 0,
            reconciled: false,
            operation_id: None,
            id: None,
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("the outcome line always serializes")
    }
}

/// The sentences of an outcome: `reason` says what happened, `instruction`
/// says what a script or a model should do next, with absolute times.
struct Words<'a> {
    context: &'a Context,
    record: &'a Record,
    status: Option<u16>,
    next_allowed_at: Option<&'a str>,
}

pub(crate) fn status_text(status: u16) -> String {
    match ureq::http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
    {
        Some(text) => format!("{status} {text}"),
        None => format!("HTTP {status}"),
    }
}

/// Seconds for a sentence: `120 s`, `1.5 s`, `0.25 s`, and a tenth of a
/// second for long spans (`59.997 s` reads `60.0 s`).
fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

fn secs_text(d: Duration) -> String {
    let s = seconds(d);
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else if s >= 10.0 {
        // Budgets left: a tenth of a second is precision enough.
        format!("{s:.1} s")
    } else {
        format!("{s} s")
    }
}

/// A sentence starts with a capital letter, whatever it names first.
fn capital(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map_or(String::new(), |c| c.to_uppercase().chain(chars).collect())
}

/// What a scope's limits hold back, in words: the API of the default scope
/// (an origin), or the scope `--scope` named.
pub(crate) fn scope_subject(scope: &str) -> String {
    if scope.starts_with("http://") || scope.starts_with("https://") {
        format!("the API at {scope}")
    } else {
        format!("scope {scope}")
    }
}

impl Words<'_> {
    fn scope_subject(&self) -> String {
        scope_subject(&self.context.scope)
    }

    /// What a breaker holds back: the whole scope, or this request's
    /// method and URL (without the query its breaker does not see).
    fn breaker_subject(&self, level: scope::Level) -> String {
        match level {
            scope::Level::Scope => self.scope_subject(),
            scope::Level::Endpoint => {
                let url = self
                    .context
                    .url
                    .split(['?', '#'])
                    .next()
                    .unwrap_or_default();
                format!("{} {url}", self.context.method)
            }
        }
    }

    /// "Do not call … again before T", for what the scope holds back.
    fn not_before_for(&self, subject: &str) -> String {
        match self.next_allowed_at {
            Some(at) => format!("Do not call {subject} again before {at}."),
            None => format!("Call {subject} again later."),
        }
    }

    fn what(&self) -> String {
        match (self.status, &self.record.error) {
            (Some(status), _) => status_text(status),
            (None, Some(error)) => error.clone(),
            (None, None) => "no answer".to_string(),
        }
    }

    fn attempts(&self) -> usize {
        self.record.attempts.len()
    }

    /// How the last attempt's 2xx body broke off, when it did.
    fn broke_off(&self) -> Option<String> {
        let last = self.record.attempts.last()?;
        let error = last.error.as_deref()?;
        last.status
            .filter(|s| (200..300).contains(s))
            .map(|_| capitalized(error))
    }

    /// A header of the last answer (already masked by the run).
    fn header(&self, name: &str) -> Option<&str> {
        self.record
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// What the run's `--check` answered, as a clause.
    fn check_said(&self) -> String {
        match &self.record.check {
            Some(check) => {
                let answer = match (check.status, &check.error) {
                    (Some(status), Some(e)) => format!("{}, but {e}", status_text(status)),
                    (Some(status), None) => status_text(status),
                    (None, Some(e)) => format!("no answer ({e})"),
                    (None, None) => "no answer".to_string(),
                };
                format!("the check GET {} answered {answer}", check.url)
            }
            None => "no check was sent".to_string(),
        }
    }

    /// Whether the last attempt ended for want of time, not of an answer.
    fn timed_out(&self) -> bool {
        self.status.is_none()
            && self
                .record
                .error
                .as_deref()
                .is_some_and(|e| e.starts_with("timeout"))
    }

    fn reason(&self) -> String {
        let mut reason = match &self.record.ending {
            Ending::Cancelled(signal) => format!(
                "Interrupted after {} attempt(s) by {}.",
                self.attempts(),
                signal
                    .kind()
                    .signal()
                    .and_then(signal_hook::low_level::signal_name)
                    .unwrap_or("a signal")
            ),
            Ending::Internal(message) => format!("abide could not finish: {message}."),
            Ending::NoProgress { times } => format!(
                "This exact request ended NON_RETRYABLE or INVALID_RESPONSE {times} times in a row in the last 10 minutes; refused without sending it."
            ),
            Ending::TaskDiffers { task } => format!(
                "Usage error: --task {task} was first run with another request (method, URL, headers or body), and its idempotency key belongs to that one; refused without sending it."
            ),
            Ending::Decided(why) => match why {
                StopWhy::Success if self.status == Some(416) => format!(
                    "The body was already whole: the server has nothing after its {} (416 Range Not Satisfiable).",
                    crate::units::size_text(self.record.resumed)
                ),
                StopWhy::Success if self.record.resumed > 0 => format!(
                    "{} after {} attempt(s); {} of the body resumed, not downloaded again.",
                    self.what(),
                    self.attempts(),
                    crate::units::size_text(self.record.resumed)
                ),
                StopWhy::Success => {
                    format!("{} after {} attempt(s).", self.what(), self.attempts())
                }
                StopWhy::NonRetryable => match self.broke_off() {
                    Some(broke) => format!("{broke}; retrying cannot help."),
                    None => format!("{} is not retryable.", self.what()),
                },
                StopWhy::Incomplete => format!(
                    "{}: stdout is incomplete.",
                    self.broke_off().unwrap_or_else(|| self.what())
                ),
                StopWhy::InvalidResponse => match &self.record.error {
                    Some(detail) => format!("{}, but {detail}.", self.what()),
                    None => format!("{} broke the response contract.", self.what()),
                },
                StopWhy::SideEffectUnknown => format!(
                    "{} to a {} request, which is not safe to repeat: it may have been applied.",
                    self.what(),
                    self.context.method
                ),
                StopWhy::KeyReused => format!(
                    "{}: the server says the Idempotency-Key {} was already used with another payload.",
                    self.what(),
                    self.context.idempotency_key.as_deref().unwrap_or("sent")
                ),
                StopWhy::Reconciled => format!(
                    "{} to the {}, so its effect was unknown; {}: the write happened (reconciled).",
                    self.what(),
                    self.context.method,
                    self.check_said()
                ),
                StopWhy::CheckUnclear => format!(
                    "{} to the {}, which may have been applied; {}, which says neither that it happened nor that it did not.",
                    self.what(),
                    self.context.method,
                    self.check_said()
                ),
                StopWhy::TaskSpent { sent, allowed } if self.attempts() == 0 => format!(
                    "The task's runs have sent {sent} request(s), all of its --task-attempts {allowed}; refused without sending it."
                ),
                StopWhy::TaskSpent { sent, allowed } => format!(
                    "Still {} after {} attempt(s); the task's runs have now sent {sent} request(s), all of its --task-attempts {allowed}.",
                    self.what(),
                    self.attempts()
                ),
                StopWhy::AttemptsUsed { attempts } => match self.broke_off() {
                    Some(broke) => format!("{broke}, on the last of {attempts} attempt(s)."),
                    None => format!("Still {} after {attempts} attempt(s).", self.what()),
                },
                StopWhy::DelayOverMaxWait { delay, max_wait } => format!(
                    "{}: the server asked to wait {}, longer than --max-wait {}.",
                    self.what(),
                    secs_text(*delay),
                    secs_text(*max_wait)
                ),
                StopWhy::ScopeClosed { cause, wait, limit } => {
                    let still = if self.attempts() > 0 {
                        format!(
                            "Still {} after {} attempt(s). ",
                            self.what(),
                            self.attempts()
                        )
                    } else {
                        String::new()
                    };
                    let (wait, limit) = (secs_text(*wait), secs_text(*limit));
                    let held = |what: &str| {
                        format!(
                            "{} {what}: the next request may go in {wait}, beyond the {limit} this run may wait.",
                            capital(&self.scope_subject())
                        )
                    };
                    let sentence = match cause {
                        scope::Wait::Gate(scope::GateCause::RetryAfter) => {
                            held("is held by a Retry-After the server gave to an earlier request")
                        }
                        scope::Wait::Gate(scope::GateCause::QuotaExhausted) => {
                            held("has used up its rate-limit quota")
                        }
                        scope::Wait::Gate(scope::GateCause::Backoff) => held(
                            "is held for the backoff after a 429 or 503 without a delay to an earlier request",
                        ),
                        scope::Wait::Rate => held("is paced by --rate"),
                        scope::Wait::HalfOpen(level) => format!(
                            "The circuit breaker of {} is open after repeated failures: its next probe may go in {wait}, beyond the {limit} this run may wait.",
                            self.breaker_subject(*level)
                        ),
                        scope::Wait::Probe(level) => format!(
                            "The circuit breaker of {} is half-open and another run is probing it; the probe did not end within the {limit} this run may wait.",
                            self.breaker_subject(*level)
                        ),
                    };
                    format!("{still}{sentence}")
                }
                StopWhy::QueueFull { wait, limit } => format!(
                    "{} is held by its gate for {}, and the scope's queue is full: {limit} run(s) already wait on it (--max-delayed).",
                    capital(&self.scope_subject()),
                    secs_text(*wait)
                ),
                StopWhy::RetryBudgetSpent => format!(
                    "Still {} after {} attempt(s), and the scope's retry budget is spent: its runs have used the retries it holds.",
                    self.what(),
                    self.attempts()
                ),
                StopWhy::OpenedBreaker { level } => format!(
                    "Still {} after {} attempt(s), and the failures opened the circuit breaker of {}.",
                    self.what(),
                    self.attempts(),
                    self.breaker_subject(*level)
                ),
                StopWhy::WaitOverBudget { wait, left } => format!(
                    "{}: the next wait of {} does not fit the {} left of the budget.",
                    self.broke_off().unwrap_or_else(|| self.what()),
                    secs_text(*wait),
                    secs_text(*left)
                ),
            },
        };
        for &(waited, cause) in &self.record.scope_waits {
            reason.push(' ');
            reason.push_str(&scope_note(waited, cause));
        }
        if let Some(e) = &self.record.state_outage {
            reason.push_str(&format!(
                " State: unavailable ({e}); the run went on without shared limits."
            ));
        }
        if !self.record.ignored_delays.is_empty() {
            reason.push_str(&format!(
                " Ignored invalid {}.",
                self.record.ignored_delays.join(", ")
            ));
        }
        reason
    }

    fn instruction(&self) -> String {
        let method = &self.context.method;
        let not_before = |fallback: &str| match self.next_allowed_at {
            Some(at) => format!("do not call this endpoint again before {at}"),
            None => fallback.to_string(),
        };
        match self.record.kind() {
            Kind::Succeeded if self.record.ending == Ending::Decided(StopWhy::Reconciled) => {
                "Nothing to do: the write happened; the body is the check's answer. Do not send it again.".to_string()
            }
            Kind::NonRetryable if self.record.ending == Ending::Decided(StopWhy::KeyReused) => {
                "Do not retry with this key: it belongs to another request. Send this request under a new --task id (or a new key), or resend the first request's payload unchanged.".to_string()
            }
            Kind::NeedsHuman => match &self.record.ending {
                Ending::Decided(StopWhy::TaskSpent { .. }) => "Do not run this task again: it has used all its --task-attempts. A person must find out why its requests keep failing (see --log, --escalate) and decide whether it gets more.".to_string(),
                _ => {
                    let then = match self.context.idempotency_key.as_deref() {
                        Some(key) => format!("replay it with the same key {key} (the same command) only if it did not, or cancel"),
                        None => "send it again only if it did not, or cancel".to_string(),
                    };
                    format!(
                        "Do not send the {method} again and do not retry: a person must find out whether it happened (query the resource; see the --escalate record), then {then}."
                    )
                }
            },
            Kind::Succeeded => match (self.status, self.header("location")) {
                (Some(status @ 300..=399), Some(location)) => format!(
                    "The answer is a redirect ({}) to {}; add -L to follow it, or call that URL.",
                    status_text(status),
                    crate::redact::url(location)
                ),
                _ => "Nothing to do: the request succeeded.".to_string(),
            },
            Kind::NonRetryable => match self.status {
                Some(401) => "401 Unauthorized will not change by retrying; fix the credentials before calling again.".to_string(),
                Some(403) => "403 Forbidden will not change by retrying; fix the permissions or credentials before calling again.".to_string(),
                Some(404 | 410) => format!("{} will not change by retrying; check the URL before calling again.", self.what()),
                Some(status) if status < 500 => format!("{} will not change by retrying; fix the request before calling again.", self.what()),
                Some(_) => format!("{} will not change by retrying; report it or try again much later.", self.what()),
                None => match self.record.error.as_deref().and_then(crate::edge::http::remedy) {
                    Some(remedy) => format!("Retrying will not help: {remedy} before calling again."),
                    None => format!("{}; retrying will not help, fix the cause first.", self.what()),
                },
            },
            Kind::RetryExhausted
                if self.record.ending == Ending::Decided(StopWhy::RetryBudgetSpent)
                    && self.status != Some(429) =>
            {
                format!(
                    "The scope's runs have used its retries; {}.",
                    not_before("wait before calling again")
                )
            }
            Kind::RetryExhausted if self.status == Some(429) => format!(
                "The server is still rate limiting; {}.",
                not_before("wait before calling again")
            ),
            Kind::RetryExhausted if self.timed_out() => format!(
                "Every attempt ran out of time; {}, and consider a larger -m/--max-time (or --stall, for a body that stops coming).",
                not_before("wait before calling again")
            ),
            Kind::RetryExhausted => format!(
                "The server kept failing; {}, and consider a larger --attempts or --budget.",
                not_before("wait before calling again")
            ),
            Kind::BudgetExhausted => match self.record.attempts.iter().rev().find_map(|a| a.server_delay) {
                _ if matches!(
                    self.record.ending,
                    Ending::Decided(StopWhy::ScopeClosed { .. } | StopWhy::QueueFull { .. })
                ) => {
                    self.not_before_for(&self.scope_subject())
                }
                Some(delay) => format!(
                    "The server asked to wait {}; {}.",
                    secs_text(delay.delay),
                    not_before("wait that long before calling again")
                ),
                None => "The time budget ran out; call again later or with a larger --budget.".to_string(),
            },
            Kind::SideEffectUnknown => format!(
                "The {method} may have been applied; check the resource before sending it again, or send it with --idempotency-key."
            ),
            Kind::CircuitOpen => {
                let level = match &self.record.ending {
                    Ending::Decided(
                        StopWhy::ScopeClosed {
                            cause: scope::Wait::HalfOpen(level) | scope::Wait::Probe(level),
                            ..
                        }
                        | StopWhy::OpenedBreaker { level },
                    ) => *level,
                    _ => scope::Level::Scope,
                };
                let subject = self.breaker_subject(level);
                format!(
                    "The circuit breaker of {subject} is open. {}",
                    self.not_before_for(&subject)
                )
            }
            Kind::InvalidResponse if self.record.error.as_deref().is_some_and(|e| e.contains("--max-ratio")) => "The body may be a compression bomb; do not fetch it again, or raise --max-ratio if it is known to compress that well.".to_string(),
            Kind::InvalidResponse => "The answer did not meet the response contract; fix the request or the contract before calling again.".to_string(),
            Kind::NoProgress => "This exact request keeps failing the same way; change the request (fix what the last error said) before calling again.".to_string(),
            Kind::Incomplete => "Discard what stdout received: it is only the start of the body. Run again, with -o FILE to keep only a complete body.".to_string(),
            Kind::Cancelled | Kind::Terminated | Kind::HungUp | Kind::Quit => format!(
                "The run was interrupted; {}.",
                not_before("run it again when ready")
            ),
            Kind::InternalError => "abide failed locally; fix the cause in the reason and run it again.".to_string(),
            Kind::UsageError => match &self.record.ending {
                Ending::TaskDiffers { task } => format!(
                    "Give this request a --task id of its own (a task id names one write); rerun task {task} only with its first request."
                ),
                _ => "Fix the command line and run it again.".to_string(),
            },
        }
    }
}

/// A sentence for the reason: the run waited for its scope before sending.
pub fn scope_note(waited: Duration, cause: scope::Wait) -> String {
    let why = match cause {
        scope::Wait::Gate(scope::GateCause::RetryAfter) => {
            "a Retry-After the server gave to another request"
        }
        scope::Wait::Gate(scope::GateCause::QuotaExhausted) => {
            "the scope's used-up rate-limit quota"
        }
        scope::Wait::Gate(scope::GateCause::Backoff) => {
            "the backoff after a 429 or 503 without a delay to another request"
        }
        scope::Wait::Rate => "--rate",
        scope::Wait::HalfOpen(scope::Level::Scope) => "the scope's open circuit breaker",
        scope::Wait::HalfOpen(scope::Level::Endpoint) => {
            "the open circuit breaker of this request's endpoint"
        }
        scope::Wait::Probe(_) => "another run's probe of an open circuit breaker",
    };
    format!(
        "Waited {:.1} s for {why} before sending.",
        waited.as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::Signal;
    use crate::rules::delay::{DelaySource, ServerDelay};
    use crate::run::record::Attempt;

    #[test]
    fn exit_codes_are_distinct_and_stable() {
        let codes: Vec<u8> = Kind::ALL.iter().map(|k| k.exit_code()).collect();
        assert_eq!(
            codes,
            [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 129, 130, 131, 143]
        );
        for kind in Kind::ALL {
            if let Some(signal) = kind.signal() {
                assert_eq!(i32::from(kind.exit_code()), 128 + signal, "{kind:?}");
                assert_eq!(Kind::cancelled_by(signal), kind);
            }
        }
    }

    fn context() -> Context {
        Context {
            method: "GET".into(),
            url: "http://127.0.0.1:1/x".into(),
            scope: "http://127.0.0.1:1".into(),
            idempotency_key: None,
        }
    }

    fn attempt(status: Option<u16>, ra: Option<u64>) -> Attempt {
        Attempt {
            status,
            error: None,
            server_delay: ra.map(|s| ServerDelay {
                delay: Duration::from_millis(s),
                source: DelaySource::RetryAfterSeconds,
            }),
            wait: None,
            ended_at: Duration::from_millis(12),
            headers: vec![],
        }
    }

    /// A record that ends as `kind`: the kind is derived, so the helper
    /// checks that `why` is one that ends so.
    fn record(kind: Kind, why: StopWhy, attempts: Vec<Attempt>) -> Record {
        assert_eq!(why.kind(), kind, "{why:?}");
        Record {
            ending: Ending::Decided(why),
            attempts,
            elapsed: Duration::from_millis(1234),
            waited: Duration::from_millis(1000),
            next_allowed_at: None,
            error: None,
            ignored_delays: vec![],
            headers: vec![],
            head: String::new(),
            head_after: Duration::ZERO,
            failed_body: vec![],
            failed_body_truncated: false,
            scope_waits: vec![],
            state_outage: None,
            resumed: 0,
            check: None,
            operation_id: None,
        }
    }

    #[test]
    fn every_field_is_always_present() {
        let line = Line::new(
            &context(),
            &record(
                Kind::Succeeded,
                StopWhy::Success,
                vec![attempt(Some(200), None)],
            ),
            &Redactor::default(),
        );
        let value: serde_json::Value = serde_json::from_str(&line.to_json()).unwrap();
        let keys: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(
            keys,
            [
                "outcome",
                "ok",
                "exit_code",
                "method",
                "url",
                "scope",
                "status",
                "attempts",
                "elapsed_ms",
                "waited_ms",
                "retry_after_s",
                "next_allowed_at",
                "idempotency_key",
                "reason",
                "instruction",
                "error",
                "history",
                "resumed_bytes",
                "reconciled",
                "operation_id"
            ]
        );
        assert_eq!(value["retry_after_s"], serde_json::Value::Null);
        assert_eq!(value["history"][0]["elapsed_ms"], 12);
        assert_eq!(value["reason"], "200 OK after 1 attempt(s).");
    }

    #[test]
    fn budget_instruction_names_the_absolute_time() {
        let mut r = record(
            Kind::BudgetExhausted,
            StopWhy::DelayOverMaxWait {
                delay: Duration::from_secs(120),
                max_wait: Duration::from_secs(10),
            },
            vec![attempt(Some(429), Some(120_000))],
        );
        r.next_allowed_at =
            Some(httpdate::parse_http_date("Mon, 30 Nov 2026 10:02:00 GMT").unwrap());
        let line = Line::new(&context(), &r, &Redactor::default());
        assert_eq!(line.retry_after_s, Some(120.0));
        assert_eq!(
            line.next_allowed_at.as_deref(),
            Some("2026-11-30T10:02:00.000Z")
        );
        assert_eq!(
            line.instruction,
            "The server asked to wait 120 s; do not call this endpoint again before 2026-11-30T10:02:00.000Z."
        );
        assert_eq!(
            line.reason,
            "429 Too Many Requests: the server asked to wait 120 s, longer than --max-wait 10 s."
        );
    }

    #[test]
    fn scope_waits_name_the_scope() {
        let at = httpdate::parse_http_date("Mon, 30 Nov 2026 10:02:00 GMT").unwrap();
        let closed = |kind, cause, attempts| {
            let why = StopWhy::ScopeClosed {
                cause,
                wait: Duration::from_secs(12),
                limit: Duration::from_secs(5),
            };
            let mut r = record(kind, why, attempts);
            r.next_allowed_at = Some(at);
            r
        };
        let gate = closed(
            Kind::BudgetExhausted,
            scope::Wait::Gate(scope::GateCause::RetryAfter),
            vec![],
        );
        let line = Line::new(&context(), &gate, &Redactor::default());
        assert_eq!(
            line.reason,
            "The API at http://127.0.0.1:1 is held by a Retry-After the server gave to an earlier request: the next request may go in 12 s, beyond the 5 s this run may wait."
        );
        assert_eq!(
            line.instruction,
            "Do not call the API at http://127.0.0.1:1 again before 2026-11-30T10:02:00.000Z."
        );
        let named = Context {
            scope: "acme:ci".into(),
            ..context()
        };
        assert!(
            Line::new(&named, &gate, &Redactor::default())
                .instruction
                .starts_with("Do not call scope acme:ci again before")
        );
        let open = closed(
            Kind::CircuitOpen,
            scope::Wait::HalfOpen(scope::Level::Endpoint),
            vec![attempt(Some(503), None)],
        );
        let line = Line::new(&context(), &open, &Redactor::default());
        assert_eq!(
            line.reason,
            "Still 503 Service Unavailable after 1 attempt(s). The circuit breaker of GET http://127.0.0.1:1/x is open after repeated failures: its next probe may go in 12 s, beyond the 5 s this run may wait."
        );
        assert_eq!(
            line.instruction,
            "The circuit breaker of GET http://127.0.0.1:1/x is open. Do not call GET http://127.0.0.1:1/x again before 2026-11-30T10:02:00.000Z."
        );
        let probing = closed(
            Kind::CircuitOpen,
            scope::Wait::Probe(scope::Level::Scope),
            vec![],
        );
        assert_eq!(
            Line::new(&context(), &probing, &Redactor::default()).reason,
            "The circuit breaker of the API at http://127.0.0.1:1 is half-open and another run is probing it; the probe did not end within the 5 s this run may wait."
        );
        for r in [gate, open, probing] {
            let line = Line::new(&context(), &r, &Redactor::default());
            for text in [&line.reason, &line.instruction] {
                assert!(
                    !text.contains("this endpoint") && !text.contains("scope is closed"),
                    "{text}"
                );
            }
        }
    }

    #[test]
    fn a_run_that_opened_a_breaker_says_so() {
        let mut r = record(
            Kind::CircuitOpen,
            StopWhy::OpenedBreaker {
                level: scope::Level::Scope,
            },
            vec![attempt(None, None); 5],
        );
        r.error = Some("connection refused".into());
        r.next_allowed_at =
            Some(httpdate::parse_http_date("Mon, 30 Nov 2026 10:02:00 GMT").unwrap());
        let line = Line::new(&context(), &r, &Redactor::default());
        assert_eq!(
            line.reason,
            "Still connection refused after 5 attempt(s), and the failures opened the circuit breaker of the API at http://127.0.0.1:1."
        );
        assert_eq!(line.exit_code, 6);
    }

    #[test]
    fn instructions_name_the_way_on() {
        let mut r = record(
            Kind::Succeeded,
            StopWhy::Success,
            vec![attempt(Some(302), None)],
        );
        r.headers = vec![("location".into(), "/v2/x?token=t".into())];
        assert_eq!(
            Line::new(&context(), &r, &Redactor::default()).instruction,
            "The answer is a redirect (302 Found) to /v2/x?token=***; add -L to follow it, or call that URL."
        );
        let mut r = record(
            Kind::RetryExhausted,
            StopWhy::AttemptsUsed { attempts: 1 },
            vec![attempt(None, None)],
        );
        r.error = Some("timeout: no answer from the server in time".into());
        assert!(
            Line::new(&context(), &r, &Redactor::default())
                .instruction
                .contains("-m/--max-time")
        );
        let mut r = record(Kind::Succeeded, StopWhy::Success, vec![]);
        r.ending = Ending::Cancelled(Signal::Interrupt);
        r.next_allowed_at =
            Some(httpdate::parse_http_date("Mon, 30 Nov 2026 10:02:00 GMT").unwrap());
        assert_eq!(
            Line::new(&context(), &r, &Redactor::default()).instruction,
            "The run was interrupted; do not call this endpoint again before 2026-11-30T10:02:00.000Z."
        );
    }

    #[test]
    fn writes_that_need_a_decision_say_what_to_do() {
        use crate::run::record::Checked;
        let keyed = Context {
            method: "POST".into(),
            idempotency_key: Some("k-1".into()),
            ..context()
        };
        let checked = |status| Checked {
            url: "http://127.0.0.1:1/orders/k-1".into(),
            status,
            error: None,
        };
        let with = |why: StopWhy, check: Option<Checked>| {
            let mut r = record(why.kind(), why, vec![attempt(Some(503), None)]);
            r.check = check;
            Line::new(&keyed, &r, &Redactor::default())
        };
        let reconciled = with(StopWhy::Reconciled, Some(checked(Some(200))));
        assert!(reconciled.ok && reconciled.reconciled);
        assert_eq!(
            reconciled.reason,
            "503 Service Unavailable to the POST, so its effect was unknown; the check GET http://127.0.0.1:1/orders/k-1 answered 200 OK: the write happened (reconciled)."
        );
        assert!(reconciled.instruction.contains("Do not send it again"));
        let unclear = with(StopWhy::CheckUnclear, Some(checked(None)));
        assert_eq!((unclear.outcome, unclear.exit_code), ("NEEDS_HUMAN", 10));
        assert!(
            unclear
                .reason
                .contains("answered no answer, which says neither"),
            "{}",
            unclear.reason
        );
        assert!(
            unclear.instruction.contains("a person must find out")
                && unclear.instruction.contains("same key k-1"),
            "{}",
            unclear.instruction
        );
        let spent = with(
            StopWhy::TaskSpent {
                sent: 6,
                allowed: 6,
            },
            None,
        );
        assert!(
            spent.reason.ends_with("all of its --task-attempts 6."),
            "{}",
            spent.reason
        );
        assert!(spent.instruction.starts_with("Do not run this task again"));
        let reused = with(StopWhy::KeyReused, None);
        assert_eq!(reused.exit_code, 3);
        assert!(
            reused
                .reason
                .contains("k-1 was already used with another payload")
        );
        let mut differs = record(Kind::Succeeded, StopWhy::Success, vec![]);
        differs.ending = Ending::TaskDiffers {
            task: "pay-17".into(),
        };
        let line = Line::new(&keyed, &differs, &Redactor::default());
        assert_eq!((line.outcome, line.exit_code), ("USAGE_ERROR", 2));
        assert!(
            line.reason
                .contains("--task pay-17 was first run with another request")
        );
        assert!(
            line.instruction
                .contains("rerun task pay-17 only with its first request")
        );
    }

    #[test]
    fn unauthorized_instruction() {
        let line = Line::new(
            &context(),
            &record(
                Kind::NonRetryable,
                StopWhy::NonRetryable,
                vec![attempt(Some(401), None)],
            ),
            &Redactor::default(),
        );
        assert!(
            line.instruction
                .starts_with("401 Unauthorized will not change by retrying")
        );
        assert_eq!(line.exit_code, 3);
        assert!(!line.ok);
    }

    #[test]
    fn every_string_the_line_writes_is_masked() {
        let mut redactor = Redactor::default();
        redactor.add("hunter2-secret");
        let mut r = record(
            Kind::Succeeded,
            StopWhy::Success,
            vec![Attempt {
                error: Some("refused: hunter2-secret".into()),
                ..attempt(None, None)
            }],
        );
        r.ending = Ending::Internal("the state said hunter2-secret".into());
        r.error = Some("hunter2-secret".into());
        let text = Line::new(&context(), &r, &redactor).to_json();
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("the state said ***"), "{text}");
    }

    #[test]
    fn a_scope_wait_is_one_sentence_of_the_reason() {
        let breaker = scope::Wait::HalfOpen(scope::Level::Scope);
        assert_eq!(
            scope_note(Duration::from_millis(2_040), breaker),
            "Waited 2.0 s for the scope's open circuit breaker before sending."
        );
        assert_eq!(
            scope_note(Duration::from_millis(300), scope::Wait::Rate),
            "Waited 0.3 s for --rate before sending."
        );
    }
}
