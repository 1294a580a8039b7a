//! One fetch's resources and its steps, so that more than one front end
//! (the single run today, a batch driver) can drive a request: open the log,
//! the signal watch and the scope state; keep a task's key; make the sink;
//! refuse a request that keeps failing the same way (the no-progress guard);
//! run the loop (counting a task's attempts as they go); close the state;
//! write the outcome (line or agent object, `-w`, `-D`, `--log`,
//! `--escalate`). Each step takes the plan and hands back data.

use std::cell::{Cell, OnceCell, RefCell};
use std::io::Write;
use std::time::{Duration, SystemTime};

use crate::clock::SystemClock;
use crate::edge::cancel::Cancel;
use crate::edge::http::{Body, Http};
use crate::edge::sink::{Sink, Start};
use crate::exit::Kind;
use crate::plan::{self, Backend, OutcomeTo, Plan};
use crate::report::agent::AgentObject;
use crate::report::audit::{Audit, Entry, Setting};
use crate::report::escalate::{AttemptPart, Escalation, Parts};
use crate::report::narrate::Narrator;
use crate::report::outcome::Line;
use crate::report::progress::{self, Progress};
use crate::report::writeout::{Facts, Format};
use crate::rules::decision::{self, StopWhy};
use crate::run::record::{Ending, Record};
use crate::run::{Check, Loop};
use crate::state::{FileStore, RedisStore, Shared, Store, TaskRefusal};

use super::{append_to, print_object, write_outcome};

/// How the run speaks: an agent's one JSON object, or a person's terminal.
#[derive(Debug, Clone, Copy)]
pub struct Face {
    pub agent: bool,
    /// `-v` (never in agent mode: it speaks only through its object).
    pub verbose: bool,
    /// `-s`: no countdown or download bar.
    pub silent: bool,
}

/// The longest a state store may take to connect or answer.
const STATE_TIMEOUT: Duration = Duration::from_millis(500);

/// What a batch's worker holds from one item to the next.
pub struct Held {
    pub cancel: Cancel,
    pub audit: Option<Audit>,
    pub state_failure: Option<String>,
}

/// What one request holds from opening to its outcome.
pub struct Session {
    face: Face,
    audit: Option<Audit>,
    cancel: Cancel,
    shared: Option<Shared>,
    /// Why the scope state could not be used (already masked).
    state_failure: Option<String>,
    /// The request's fingerprint, hashed once when something needs it (the
    /// guard, `--task`, `--log`, `--escalate`); `None` if its body file
    /// cannot be read.
    fingerprint: OnceCell<Option<String>>,
    /// The requests the `--task`'s runs have sent (this one's counted as
    /// they go), and the provider's id of what it created before this run.
    task_sent: Cell<u32>,
    task_operation: Option<String>,
    /// `--check`'s GET, sharing the request's connection pool, and its URL.
    check: Option<(RefCell<Http>, String)>,
    /// The `--log` has its start entry.
    started: bool,
    /// The batch item this request is, if it is one.
    item: Option<String>,
}

/// A run whose body is in place (or discarded): what is left to report.
pub struct Settled {
    pub record: Record,
    /// The agent's captured body of a success, and whether there was more.
    captured: Option<(Vec<u8>, bool)>,
    /// The final transfer's bytes, for `-w`.
    downloaded: u64,
}

impl Settled {
    /// A run that ended before anything was sent.
    pub fn unsent(ending: Ending) -> Settled {
        Settled {
            record: Record::unsent(ending),
            captured: None,
            downloaded: 0,
        }
    }
}

/// What names a failed run's error for the no-progress guard: the last
/// answer's status and error fields, or, without an answer, its error.
fn error_identity(record: &Record) -> String {
    match record.attempts.last().and_then(|a| a.status) {
        Some(status) => crate::rules::canonical::error_identity(status, &record.failed_body),
        None => record.error.clone().unwrap_or_default(),
    }
}

/// What the no-progress guard found: the request's fingerprint to remember
/// afterwards, or the ending of a request refused before it is sent.
pub struct Guard {
    fingerprint: Option<String>,
    refused: Option<Ending>,
}

impl Session {
    /// Opens what the request needs before anything is sent: `--outcome`'s
    /// file, the `--log`, the signal watch and the scope state. An error is
    /// a usage error's message.
    pub fn open(plan: &Plan, face: Face) -> Result<Session, String> {
        // Agent mode writes its one object to stdout, never to --outcome.
        if let OutcomeTo::Append(path) = &plan.outcome_to
            && !face.agent
            && let Err(e) = append_to(path)
        {
            return Err(format!("cannot write --outcome {}: {e}", path.display()));
        }
        let audit = plan
            .log
            .as_deref()
            .map(|path| {
                Audit::open(path, &plan.scope, plan.task.as_deref())
                    .map_err(|e| format!("cannot open --log {}: {e}", path.display()))
            })
            .transpose()?;
        // Watched from here on, before the state is opened and before the
        // first temporary file exists, so that a signal always gets its
        // outcome line and the cleanup.
        let cancel = Cancel::default();
        if let Err(e) = cancel.on_signals()
            && !face.agent
        {
            eprintln!("abide: warning: cannot watch for signals: {e}");
        }
        let (shared, state_failure) = match open_store(plan) {
            Ok(store) => (
                store.map(|store| shared(plan, store as Box<dyn Store>)),
                None,
            ),
            Err(e) => (None, Some(e)),
        };
        Ok(Session {
            face,
            audit,
            cancel,
            shared,
            state_failure,
            fingerprint: OnceCell::new(),
            task_sent: Cell::new(0),
            task_operation: None,
            check: None,
            started: false,
            item: None,
        })
    }

    /// Batch item `id`'s request, with what its batch holds once for all of
    /// them (the signal watch, a worker's `--log`, why the scope store could
    /// not be used) and a handle on the batch's scope store: no file is
    /// opened here. Its progress is the batch's bar; its `-v` lines carry
    /// the id.
    pub fn for_item(
        plan: &Plan,
        id: &str,
        face: Face,
        held: Held,
        store: Option<Box<dyn Store>>,
    ) -> Session {
        let mut audit = held.audit;
        if let Some(audit) = &mut audit {
            audit.next_run(&plan.scope, plan.task.as_deref());
        }
        Session {
            face,
            audit,
            cancel: held.cancel,
            shared: store.map(|store| shared(plan, store).just_in_time()),
            state_failure: held.state_failure,
            item: Some(id.to_string()),
            fingerprint: OnceCell::new(),
            task_sent: Cell::new(0),
            task_operation: None,
            check: None,
            started: false,
        }
    }

    /// `then` is called each time an answer's lesson is in the scope's
    /// record (never, without shared state).
    pub fn after_each_lesson(&mut self, then: impl Fn() + 'static) {
        self.shared = self.shared.take().map(|s| s.after_each_lesson(then));
    }

    /// What a batch item's request held, back for the next item (a store
    /// that failed is not asked again: its failure is held).
    pub fn into_held(self) -> Held {
        Held {
            cancel: self.cancel,
            audit: self.audit,
            state_failure: self.state_failure,
        }
    }

    /// The run's first `--log` entry, once: what it is about to send, with
    /// the request's fingerprint (written before the outcome of a run that
    /// was refused unsent, too).
    fn log_start(&mut self, plan: &Plan) {
        if self.audit.is_none() || self.started {
            return;
        }
        self.started = true;
        let start = Entry::Start {
            method: plan.request.method.clone(),
            url: plan.redactor.text(&plan.context().url),
            fingerprint: self.fingerprint(plan).map(str::to_string),
            idempotency_key: plan.request.idempotency_key().map(str::to_string),
        };
        if let Some(audit) = &mut self.audit {
            audit.write(&start);
        }
    }

    fn fingerprint(&self, plan: &Plan) -> Option<&str> {
        self.fingerprint
            .get_or_init(|| plan::fingerprint(&plan.request).ok())
            .as_deref()
    }

    /// Whether the request may go on with the state it has, and `--task`'s
    /// idempotency key, kept in the scope state before anything is sent so
    /// that a crash and a rerun reuse it, and bound to this request (another
    /// request under the task is refused). `--task-attempts` caps the run's
    /// attempts at what the task has left. An error is the unsent ending.
    pub fn keep_task_key(&mut self, plan: &mut Plan) -> Result<(), Ending> {
        let refusal = match (&self.state_failure, &self.shared) {
            (Some(e), _) if plan.state_required => Some(format!(
                "the shared state is unavailable ({e}) and --state-required is set"
            )),
            // Without the state a task's key would be new on every rerun:
            // the very double write --task is there to prevent.
            (e, None) if plan.task.is_some() => Some(format!(
                "--task keeps its idempotency key in the scope state, which is unavailable ({})",
                e.as_deref()
                    .unwrap_or("no state directory: set --state-dir or HOME")
            )),
            _ => None,
        };
        if let Some(why) = refusal {
            return Err(Ending::Internal(why));
        }
        let (Some(task), Some(shared)) = (plan.task.clone(), &self.shared) else {
            return Ok(());
        };
        let Ok(fingerprint) = task_fingerprint(&plan.request) else {
            return Err(Ending::Internal(
                "--task binds its key to the request, whose body cannot be read".into(),
            ));
        };
        let fresh = plan
            .request
            .idempotency_key()
            .unwrap_or_default()
            .to_string();
        let kept = match shared.task_key(&task, &fresh, &fingerprint, plan.task_ttl) {
            Ok(kept) => kept,
            Err(TaskRefusal::Differs) => return Err(Ending::TaskDiffers { task }),
            Err(TaskRefusal::Unkept(e)) => {
                return Err(Ending::Internal(format!(
                    "--task: the scope state cannot keep the idempotency key ({e})"
                )));
            }
        };
        plan.set_idempotency_key(&kept.key)
            .map_err(Ending::Internal)?;
        self.task_sent.set(kept.sent);
        self.task_operation = kept.operation_id;
        match decision::task_room(plan.policy.attempts, kept.sent, plan.task_attempts) {
            Some(room) => plan.policy.attempts = room,
            None => {
                return Err(Ending::Decided(StopWhy::TaskSpent {
                    sent: kept.sent,
                    allowed: plan.task_attempts.unwrap_or_default(),
                }));
            }
        }
        Ok(())
    }

    /// The request's transport: `shared`'s connection pool when a driver
    /// holds one for many requests, else a new one. Its attempt in flight
    /// is cut by a signal. An error is a usage error's message.
    pub fn transport(&mut self, plan: &Plan, shared: Option<&Http>) -> Result<Http, String> {
        let transport = match shared {
            Some(http) => http.for_request(plan.request.clone()),
            None => {
                Http::new(&plan.settings, plan.request.clone()).map_err(|e| format!("{e:#}"))?
            }
        }
        .spaced_as(&plan.scope);
        // `--check`'s GET, on the same pool, cut by a signal as well.
        self.check = plan.check.as_deref().map(|url| {
            let key = plan.request.idempotency_key();
            let request = crate::plan::check::request(url, &plan.request, key);
            let url = request.url.clone();
            (RefCell::new(transport.for_request(request)), url)
        });
        let interrupt = transport.interrupter();
        match &self.check {
            Some((check, _)) => {
                let also = check.borrow().interrupter();
                self.cancel.interrupt_with(move || {
                    interrupt();
                    also();
                });
            }
            None => self.cancel.interrupt_with(interrupt),
        }
        Ok(transport)
    }

    /// Where the body goes: the `-o` file, the agent's capture or stdout.
    /// Made last of the checks, so that no early return leaves a temporary
    /// file. An error is a usage error's message.
    pub fn sink(&self, plan: &Plan) -> Result<Sink, String> {
        Ok(match &plan.output {
            Some(path) => match Sink::file(path, &plan.file_options) {
                Ok(sink) if plan.include => sink.include(),
                Ok(sink) => sink,
                Err(e) => return Err(format!("cannot write to {}: {e}", path.display())),
            },
            None if self.face.agent => Sink::capture(agent_keeps(plan)),
            None => Sink::stdout(plan.no_buffer, plan.include),
        })
    }

    /// The no-progress guard: a request that failed the same way
    /// `--no-progress` times in a row is not sent again; a signal that came
    /// already ends it unsent too.
    pub fn guard(&self, plan: &Plan) -> Guard {
        let fingerprint = match &self.shared {
            Some(_) if plan.no_progress > 0 => self.fingerprint(plan).map(str::to_string),
            _ => None,
        };
        let repeats = match (&self.shared, &fingerprint) {
            (Some(shared), Some(fp)) => shared.repeats(fp),
            _ => 0,
        };
        let refused = if let Some(signal) = self.cancel.cancelled() {
            Some(Ending::Cancelled(signal))
        } else if plan.no_progress > 0 && repeats >= plan.no_progress {
            Some(Ending::NoProgress { times: repeats })
        } else {
            None
        };
        Guard {
            fingerprint,
            refused,
        }
    }

    /// Sends the request as the plan says, through the loop, with the
    /// progress display and the audit log watching; unless the guard
    /// refused it. Then closes the scope state: the slot released, the
    /// result remembered for the guard, the state's notes and failure said.
    pub fn run(
        &mut self,
        plan: &Plan,
        guard: Guard,
        transport: &mut Http,
        sink: &mut Sink,
    ) -> Record {
        let record = match guard.refused {
            Some(ending) => Record::unsent(ending),
            None => self.attempts(plan, transport, sink),
        };
        self.close(plan, guard.fingerprint.as_deref(), record)
    }

    fn attempts(&mut self, plan: &Plan, transport: &mut Http, sink: &mut Sink) -> Record {
        self.log_start(plan);
        // Each attempt of a task is counted in its record before it goes on
        // the wire, and refused there once any run of the task has sent
        // --task-attempts; a run without --task asks the state nothing more.
        let task_sent = &self.task_sent;
        let shared = self.shared.as_ref();
        let ticket = |task: &str| {
            let allowed = plan.task_attempts;
            let spent = |sent| StopWhy::TaskSpent {
                sent,
                allowed: allowed.unwrap_or_default(),
            };
            match shared.and_then(|shared| shared.task_attempt(task, allowed)) {
                Some(Ok(sent)) => {
                    task_sent.set(sent);
                    None
                }
                Some(Err(sent)) => {
                    task_sent.set(sent);
                    Some(spent(sent))
                }
                // The store failed: this run's own count still bounds it.
                None if allowed.is_some_and(|allowed| task_sent.get() >= allowed) => {
                    Some(spent(task_sent.get()))
                }
                None => {
                    task_sent.set(task_sent.get() + 1);
                    None
                }
            }
        };
        let ticket = plan.task.as_deref().map(|task| move || ticket(task));
        let looper = Loop {
            policy: &plan.policy,
            replay: plan.replay,
            max_time: plan.max_time,
            connect_timeout: plan.connect_timeout,
            stall: plan.stall,
            resumable: plan.resumable,
            redactor: &plan.redactor,
            shared: self.shared.as_ref(),
            require: &plan.require,
            keep_body: match self.face.agent {
                true => agent_keeps(plan),
                false if plan.fail_with_body => FAIL_BODY_KEPT,
                false => 0,
            },
            keyed: plan.request.idempotency_key().is_some(),
            check: self.check.as_ref().map(|(transport, url)| Check {
                transport,
                url,
                write: !matches!(
                    plan.request.method.as_str(),
                    "GET" | "HEAD" | "OPTIONS" | "TRACE"
                ),
            }),
            id_pointer: plan.id_pointer.as_deref(),
            ticket: ticket.as_ref().map(|t| t as &dyn Fn() -> Option<StopWhy>),
        };
        // The URL as sent has no user-info, so its authority is safe to show.
        let host = plan
            .request
            .url
            .parse::<ureq::http::Uri>()
            .ok()
            .and_then(|uri| uri.authority().map(|a| a.to_string()))
            .unwrap_or_else(|| plan.scope.clone());
        let narrator = Narrator {
            host,
            scope: plan.scope.clone(),
            policy: plan.policy.clone(),
            max_time: plan.max_time,
        };
        let progress = Progress::new(
            narrator,
            plan.request.method.clone(),
            request_head(plan, &transport.added_headers()),
            plan.output.is_some(),
            self.face.verbose,
            progress::on_terminal(self.face.silent || self.face.agent || self.item.is_some()),
        );
        let progress = match &self.item {
            Some(id) => progress.tagged(id),
            None => progress,
        };
        let audit = &mut self.audit;
        let setting = Setting {
            context: &plan.context(),
            policy: &plan.policy,
            redactor: &plan.redactor,
        };
        let record = looper.run(
            &mut progress.watch(transport),
            sink,
            &SystemClock,
            &mut self.cancel,
            &mut rand::random::<f64>,
            &mut |event| {
                progress.event(&event);
                if let Some(audit) = audit {
                    audit.write(&Entry::of(&event, &setting));
                }
            },
        );
        // Off the screen before anything else is written: notes, outcome.
        progress.finish();
        record
    }

    fn close(&mut self, plan: &Plan, fingerprint: Option<&str>, mut record: Record) -> Record {
        if let Some(shared) = &self.shared {
            shared.release(record.ending == Ending::Decided(StopWhy::RetryBudgetSpent));
            if let Some(fp) = fingerprint
                && record.kind() != Kind::NoProgress
            {
                let failed = matches!(record.kind(), Kind::NonRetryable | Kind::InvalidResponse);
                shared.remember(fp, failed.then(|| error_identity(&record)).as_deref());
            }
            if let Some(task) = &plan.task {
                if let Some(id) = &record.operation_id {
                    shared.task_created(task, id);
                }
                // Its last attempts were the task's last: no rerun may send more.
                if let Ending::Decided(why) = &record.ending {
                    record.ending = Ending::Decided(decision::task_spent(
                        why.clone(),
                        self.task_sent.get(),
                        plan.task_attempts,
                    ));
                }
                record.operation_id = record.operation_id.take().or(self.task_operation.clone());
            }
            // The store's own words may quote its URL, password and all.
            let failure = shared.failure().map(|e| plan.redactor.text(&e));
            self.state_failure = self.state_failure.take().or(failure);
            let notes = shared.take_notes();
            if self.face.verbose {
                for note in notes {
                    eprintln!("abide: {}", plan.redactor.text(&note));
                }
            }
        }
        if let Some(e) = &self.state_failure {
            // A batch says it once, not once per item.
            if !self.face.agent && !plan.state_required && self.item.is_none() {
                eprintln!(
                    "abide: warning: the shared state is unavailable ({e}); going on without it"
                );
            }
            record.state_outage = Some(e.clone());
        }
        record
    }

    /// Puts the body in place (or discards it) and writes `-D`: what is
    /// left to report.
    pub fn settle(&self, plan: &Plan, mut record: Record, mut sink: Sink) -> Settled {
        let agent = self.face.agent;
        // `curl`-style: at a terminal, the outcome line starts on its own line.
        if sink.open_line() && !agent && plan.outcome_to == OutcomeTo::Stderr {
            use std::io::IsTerminal;
            if std::io::stdout().is_terminal() && std::io::stderr().is_terminal() {
                eprintln!();
            }
        }
        let captured = match &sink {
            Sink::Capture {
                body, truncated, ..
            } if record.kind() == Kind::Succeeded => Some((body.clone(), *truncated)),
            _ => None,
        };
        if let (Some(to), false) = (&plan.dump_header, record.head.is_empty())
            && let Err(e) = dump_header(to, &record.head)
        {
            let why = format!("cannot write -D {}: {e}", to.display());
            if record.kind() == Kind::Succeeded {
                record.ending = Ending::Internal(why);
            } else {
                eprintln!("abide: warning: {why}");
            }
        }
        // The final transfer's bytes, as curl counts them: not those resumed.
        let downloaded = if record.kind() == Kind::Succeeded {
            sink.held().saturating_sub(record.resumed)
        } else {
            0
        };
        // -J: the file takes the name the final answer gives it.
        let disposition = record
            .headers
            .iter()
            .find(|(n, _)| n == "content-disposition");
        if let (Some(clobber), Some((_, value))) = (plan.header_name, disposition)
            && let Some(name) = crate::edge::sink::disposition_name(value)
        {
            sink.rename(&name, clobber);
        }
        let succeeded = record.kind() == Kind::Succeeded;
        if succeeded || plan.fail_with_body && error_body(&record, &mut sink) {
            if let Err(e) = sink.commit() {
                let why = format!("cannot put the body in place: {e}");
                if succeeded {
                    record.ending = Ending::Internal(why);
                } else if !agent {
                    eprintln!("abide: warning: {why}");
                }
            }
        } else if let Err(e) = sink.discard(error_head(&record))
            && e.kind() != std::io::ErrorKind::BrokenPipe
            && !agent
        {
            eprintln!("abide: warning: cannot write the head to stdout: {e}");
        }
        Settled {
            record,
            captured,
            downloaded,
        }
    }

    /// The outcome line of `record`, written to the `--log` too.
    pub fn line(&mut self, plan: &Plan, record: &Record) -> Line {
        self.log_start(plan);
        let mut line = Line::new(&plan.context(), record, &plan.redactor);
        for sentence in &plan.overruled {
            let mut chars = sentence.chars();
            let first = chars.next().map(|c| c.to_uppercase().to_string());
            line.reason.push(' ');
            line.reason.push_str(&first.unwrap_or_default());
            line.reason.push_str(chars.as_str());
        }
        line.id = self.item.clone();
        if let Some(audit) = &mut self.audit {
            audit.write(&Entry::Outcome(&line));
            if let Some(e) = audit.take_error()
                && !self.face.agent
            {
                eprintln!("abide: warning: the --log could not be written: {e}");
            }
        }
        line
    }

    /// Writes the outcome where it goes (the agent object, or `-w` and the
    /// outcome line) and to the audit log; how the run ended.
    pub fn report(mut self, plan: &Plan, settled: Settled) -> Kind {
        let Settled {
            record,
            captured,
            downloaded,
        } = settled;
        let mut line = self.line(plan, &record);
        if self.face.agent {
            let (bytes, more) = captured
                .unwrap_or_else(|| (record.failed_body.clone(), record.failed_body_truncated));
            let body = crate::report::agent::body(&bytes, more, plan.max_body, &plan.redactor);
            if body.truncated {
                line.instruction.push(' ');
                line.instruction
                    .push_str(&crate::report::agent::truncated_words(
                        plan.max_body,
                        &record.headers,
                    ));
            }
            let object = AgentObject {
                line: &line,
                body: body.value,
                body_truncated: body.truncated,
                body_encoding: body.encoding,
                headers: crate::report::agent::headers(&record.headers, &plan.redactor),
            };
            print_object(&object);
        } else {
            if let Some(format) = &plan.write_out {
                write_out(format, plan, &record, &line, downloaded);
            }
            write_outcome(&plan.outcome_to, &line);
        }
        self.escalate(plan, &record, &line);
        record.kind()
    }

    /// `--escalate`: a record for a person, after the outcome, for the runs
    /// that need one (a write that may have happened, a request that keeps
    /// failing alike, a decision only a person can take).
    fn escalate(&self, plan: &Plan, record: &Record, line: &Line) {
        let Some(path) = &plan.escalate else {
            return;
        };
        if !Escalation::wanted(record.kind()) {
            return;
        }
        let now = SystemTime::now();
        let start = now.checked_sub(record.elapsed).unwrap_or(now);
        let attempts: Vec<AttemptPart> = record
            .attempts
            .iter()
            .map(|a| AttemptPart {
                at: start + a.ended_at,
                status: a.status,
                error: a.error.as_deref(),
                headers: &a.headers,
                wait: a.wait,
            })
            .collect();
        let parts = Parts {
            now,
            outcome: record.kind(),
            reason: &line.reason,
            task: plan.task.as_deref(),
            method: &plan.request.method,
            url: &plan.request.url,
            scope: &plan.scope,
            fingerprint: self.fingerprint(plan).unwrap_or_default(),
            attempts: &attempts,
            attempts_allowed: plan.policy.attempts,
            elapsed: record.elapsed,
            budget: plan.policy.budget,
            idempotency_key: plan.request.idempotency_key(),
            operation_id: record.operation_id.as_deref(),
            task_spent: matches!(record.ending, Ending::Decided(StopWhy::TaskSpent { .. })),
        };
        if let Err(e) = Escalation::new(&parts, &plan.redactor).append(path)
            && !self.face.agent
        {
            eprintln!(
                "abide: warning: cannot write --escalate {}: {e}",
                path.display()
            );
        }
    }
}

/// The fingerprint a `--task` is bound to: the request's, but blind to its
/// credentials, so that a rerun with a rotated token is still the same
/// write (refusing it would invite sending it as a new one).
fn task_fingerprint(request: &crate::edge::http::Request) -> std::io::Result<String> {
    let mut blind = request.clone();
    blind.headers = request
        .headers
        .iter()
        .filter(|(name, _)| !crate::redact::is_secret_name(name.as_str()))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    blind.url = crate::redact::url(&blind.url);
    plan::fingerprint(&blind)
}

/// How much of a body the agent object holds: beyond --max-body by the
/// longest secret, so that one crossing the cut is masked before the cut.
fn agent_keeps(plan: &Plan) -> u64 {
    plan.max_body + plan.redactor.reach() as u64
}

/// Opens the scope store the plan asks for, if any. A store that cannot be
/// opened is an error (masked), and the run goes on without it, unless
/// required.
pub fn open_store(plan: &Plan) -> Result<Option<Box<dyn Store + Send>>, String> {
    // Short, and never more than a fraction of the budget; after its first
    // failure a run stops using the store, so that is all it can cost.
    let timeout = STATE_TIMEOUT.min(plan.policy.budget / 4);
    let store: std::io::Result<Box<dyn Store + Send>> = match &plan.state {
        None => return Ok(None),
        Some(Backend::Files(dir)) => FileStore::open(dir, timeout)
            .map(|s| Box::new(s) as Box<dyn Store + Send>)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", dir.display()))),
        Some(Backend::Redis(url)) => {
            RedisStore::connect(url, timeout).map(|s| Box::new(s) as Box<dyn Store + Send>)
        }
    };
    store
        .map(Some)
        .map_err(|e| plan.redactor.text(&e.to_string()))
}

/// The plan's scope, in `store`.
fn shared(plan: &Plan, store: Box<dyn Store>) -> Shared {
    let shared = Shared::new(
        store,
        plan.scope.clone(),
        plan::endpoint(&plan.request),
        plan.scope_policy,
        plan.max_concurrent,
        plan.state_required,
    );
    if plan.rate_auto {
        shared.learning_pace()
    } else {
        shared
    }
}

/// `-w`: the format, rendered from the run, to stdout (and stderr after
/// `%{stderr}`); a reader that went away gets nothing.
fn write_out(format: &Format, plan: &Plan, record: &Record, line: &Line, downloaded: u64) {
    let uploaded = match &plan.request.body {
        Body::Empty => 0,
        Body::Bytes(bytes) => bytes.len() as u64,
        Body::File(path) => std::fs::metadata(path).map_or(0, |m| m.len()),
    };
    let error = if record.kind() == Kind::Succeeded {
        String::new()
    } else {
        line.reason.clone()
    };
    let json = line.to_json();
    let context = plan.context();
    let facts = Facts {
        status: line.status,
        url: &context.url,
        method: &context.method,
        headers: &record.headers,
        downloaded,
        uploaded,
        total: record.elapsed,
        head_after: record.head_after,
        attempts: record.attempts.len(),
        exit_code: record.kind().exit_code(),
        error: &error,
        json: &json,
        trace: &plan.settings.net.observed.get(),
    };
    let _ = format.render(
        &facts,
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
}

/// The head a failed run writes alone with `-i`: that of a final answer
/// that was itself the failure (a 4xx or 5xx), as curl -f -i writes it;
/// not a 2xx head whose body never came whole.
fn error_head(record: &Record) -> &str {
    let status = record.attempts.last().and_then(|a| a.status);
    match status {
        Some(s) if !(200..300).contains(&s) => &record.head,
        _ => "",
    }
}

/// The largest error body `--fail-with-body` writes: it is held in memory.
const FAIL_BODY_KEPT: u64 = 16 << 20;

/// `--fail-with-body`: the final error answer's body (its head first with
/// -i), where a success's would go, when it came whole and nothing of an
/// earlier body was written; whether it was.
fn error_body(record: &Record, sink: &mut Sink) -> bool {
    if error_head(record).is_empty() || record.failed_body_truncated || !sink.clean() {
        return false;
    }
    sink.head(&record.head);
    sink.deliver(&mut record.failed_body.as_slice(), Start::Over)
        .is_ok()
}

/// The request's head for `-v`, as curl shows it (`> GET /path HTTP/1.1`),
/// with abide's own headers and those the transport `added` (cookies, a
/// `.netrc` login); ureq adds the framing ones. Every value goes through
/// the redactor, so a credential shows as its mask.
fn request_head(plan: &Plan, added: &ureq::http::HeaderMap) -> String {
    let uri = plan.request.url.parse::<ureq::http::Uri>().ok();
    let target = uri
        .as_ref()
        .and_then(|u| u.path_and_query())
        .map_or("/".to_string(), |p| p.to_string());
    let host = uri
        .as_ref()
        .and_then(|u| u.authority())
        .map(|a| a.to_string())
        .unwrap_or_default();
    let target = crate::redact::url(&target);
    let mut head = format!("{} {target} HTTP/1.1\nHost: {host}\n", plan.request.method);
    for (name, value) in plan.request.headers.iter().chain(added) {
        let value = String::from_utf8_lossy(value.as_bytes());
        // Masked where abide put it, however short: a credential header's
        // value (its scheme, "Bearer", may show).
        let shown = if crate::redact::is_secret_name(name.as_str()) {
            match value.split_once(' ') {
                Some((scheme, _)) if scheme.chars().all(|c| c.is_ascii_alphabetic()) => {
                    format!("{scheme} ***")
                }
                _ => "***".to_string(),
            }
        } else {
            plan.redactor.text(&value)
        };
        head.push_str(&format!("{name}: {shown}\n"));
    }
    plan.redactor.text(&head)
}

/// `-D`: the final answer's head, to a file or (`-`) stdout.
fn dump_header(to: &std::path::Path, head: &str) -> std::io::Result<()> {
    if to.as_os_str() == "-" {
        let mut out = std::io::stdout().lock();
        out.write_all(head.as_bytes())?;
        out.flush()
    } else {
        std::fs::write(to, head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_is_the_same_write_with_a_rotated_token() {
        use crate::edge::http::Request;
        let write = |token: &str, body: &str| Request {
            method: "POST".into(),
            url: format!("https://api.example.com/orders?api_key={token}"),
            headers: [
                ("authorization", format!("Bearer {token}")),
                ("content-type", "application/json".to_string()),
            ]
            .into_iter()
            .map(|(n, v)| (ureq::http::HeaderName::from_static(n), v.parse().unwrap()))
            .collect(),
            body: Body::Bytes(body.as_bytes().to_vec()),
        };
        let fp = |r: &Request| task_fingerprint(r).unwrap();
        let first = fp(&write("old-token-123", r#"{"qty":1}"#));
        assert_eq!(first, fp(&write("new-token-456", r#"{"qty":1}"#)));
        assert_ne!(first, fp(&write("old-token-123", r#"{"qty":2}"#)));
        let mut elsewhere = write("old-token-123", r#"{"qty":1}"#);
        elsewhere.url = "https://api.example.com/refunds".into();
        assert_ne!(first, fp(&elsewhere));
    }

    fn shared_across_threads<T: Send + Sync>() {}
    fn moves_to_a_thread<T: Send>() {}

    /// A driver of many requests holds one transport for all of them, on
    /// threads (a `Session` itself does not move yet: its `Shared` holds a
    /// `Box<dyn Store>` that is not `Send`).
    #[test]
    fn the_transport_is_shared_across_threads() {
        shared_across_threads::<Http>();
        moves_to_a_thread::<Cancel>();
        moves_to_a_thread::<Audit>();
        moves_to_a_thread::<Sink>();
    }

    #[test]
    fn one_transport_sends_many_requests_from_threads() {
        use crate::edge::http::{Limits, Request, Settings, Transport};
        use crate::lab::{Lab, LabConfig, Script, Step};
        let lab = Lab::start(
            0,
            LabConfig {
                script: Some(Script::new(vec![Step::new(200)])),
                ..LabConfig::default()
            },
        )
        .unwrap();
        let request = |path: &str| Request {
            method: "GET".into(),
            url: format!("{}/{path}", lab.url()),
            headers: Default::default(),
            body: Body::Empty,
        };
        let shared = Http::new(&Settings::default(), request("first")).unwrap();
        let limits = Limits {
            head: Duration::from_secs(5),
            total: None,
            connect: Duration::from_secs(5),
            stall: Duration::from_secs(5),
        };
        std::thread::scope(|threads| {
            for path in ["a", "b", "c"] {
                let mut http = shared.for_request(request(path));
                threads.spawn(move || {
                    let reply = http.send(limits, None).map_err(|f| f.message).unwrap();
                    assert_eq!(reply.status, 200);
                });
            }
        });
        let mut paths: Vec<String> = lab.records().into_iter().map(|r| r.path).collect();
        paths.sort();
        assert_eq!(paths, ["/a", "/b", "/c"]);
    }
}
