//! The imperative shell: parse, dispatch, run the loop with the real clock,
//! transport and sinks, write the outcome line, exit with its code.

pub mod demo;
pub mod mcp;

use std::io::Write;
use std::process::ExitCode;

use crate::cli::{self, Cli, Command};
use crate::clock::{self, SystemClock};
use crate::edge::cancel::Cancel;
use crate::edge::http::{Body, Http};
use crate::edge::sink::{Sink, Start};
use crate::exit::Kind;
use crate::plan::{self, Backend, OutcomeTo, Plan};
use crate::report::agent::AgentObject;
use crate::report::audit::{Audit, BreakerEntry};
use crate::report::narrate::Narrator;
use crate::report::outcome::Line;
use crate::report::progress::{self, Progress};
use crate::report::writeout::{Facts, Format};
use crate::run::record::{Ending, Record};
use crate::run::{Event, Loop};
use crate::state::Shared;
use crate::state::{FileStore, RedisStore, Store};

pub fn main() -> ExitCode {
    let cli = match cli::parse_from(std::env::args_os()) {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind as E;
            if matches!(e.kind(), E::DisplayHelp | E::DisplayVersion) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            return ExitCode::from(usage(&clap_message(&e), agent_requested()).exit_code());
        }
    };
    let result = match &cli.command {
        Some(Command::Lab(args)) => crate::lab::run(args),
        Some(Command::Demo) => crate::app::demo::run(),
        Some(Command::Mcp(args)) => crate::app::mcp::run(args),
        None => match cli.generate {
            Some(kind) => crate::cli::docs::print(kind),
            None => Ok(crate::edge::cancel::end_process(fetch(&cli))),
        },
    };
    result.unwrap_or_else(|e| {
        if !is_broken_pipe(&e) {
            eprintln!("abide: error: {e:#}");
        }
        ExitCode::from(Kind::InternalError.exit_code())
    })
}

/// Whether the command line asked for agent mode, even if it did not parse:
/// an agent must get its usage error as JSON too.
fn agent_requested() -> bool {
    use clap::builder::{FalseyValueParser, TypedValueParser};
    // The same reading of ABIDE_AGENT as the flag's own (n, no, f, false,
    // off, 0 and empty are false, in any case), not a shorter copy of it.
    std::env::args_os().any(|a| a == "--agent")
        || std::env::var_os("ABIDE_AGENT").is_some_and(|v| {
            FalseyValueParser::new()
                .parse_ref(&clap::Command::new("abide"), None, &v)
                .unwrap_or(false)
        })
}

/// Where `--outcome` (or ABIDE_OUTCOME) sends the outcome, read from a
/// command line that may not parse: a usage error leaves its line there too.
fn outcome_requested() -> OutcomeTo {
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let given =
        args.iter()
            .enumerate()
            .rev()
            .find_map(|(i, arg)| match arg.strip_prefix("--outcome") {
                Some("") => args.get(i + 1).cloned(),
                Some(value) => value.strip_prefix('=').map(str::to_string),
                None => None,
            });
    given
        .or_else(|| std::env::var("ABIDE_OUTCOME").ok())
        .and_then(|to| to.parse().ok())
        .unwrap_or(OutcomeTo::Stderr)
}

/// clap's message, said as abide means it: one line, with its tips, URL
/// credentials masked, and the environment variable named when a bad
/// value came from one.
fn clap_message(error: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let rendered = error.render().to_string();
    // The first paragraph, on one line ("…were not provided: <URL>").
    let first: Vec<&str> = rendered
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let first = first.join(" ");
    let first = first.trim_start_matches("error: ");
    let mut message = match (error.kind(), error.get(ContextKind::InvalidSubcommand)) {
        // A second positional argument reads as a subcommand to clap.
        (_, Some(ContextValue::String(second))) if first.contains("cannot be used with") => {
            format!(
                "abide takes one URL, and `{second}` is a second one (quote a URL that holds spaces, & or ;)"
            )
        }
        _ => first.to_string(),
    };
    if let Some(variable) = from_environment(error) {
        message.push_str(&format!(" (from the environment: {variable})"));
    }
    for tip in rendered
        .lines()
        .filter(|l| l.trim_start().starts_with("tip:"))
    {
        message.push_str(&format!("; {}", tip.trim().trim_start_matches("tip: ")));
    }
    crate::redact::urls_in(&message)
}

/// `NAME=value` when the refused value came from an environment default,
/// not from the command line.
fn from_environment(error: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    let Some(ContextValue::String(arg)) = error.get(ContextKind::InvalidArg) else {
        return None;
    };
    let long = arg.split_whitespace().next()?.strip_prefix("--")?;
    let command = cli::command();
    let flag = command
        .get_arguments()
        .find(|a| a.get_long() == Some(long))?;
    let short = flag.get_short().map(|c| format!("-{c}"));
    let typed = std::env::args_os().any(|a| {
        let a = a.to_string_lossy();
        let long_form = a
            .strip_prefix("--")
            .is_some_and(|a| a == long || a.starts_with(&format!("{long}=")));
        long_form || short.as_deref().is_some_and(|short| a.starts_with(short))
    });
    let env = flag.get_env()?;
    let value = std::env::var_os(env)?;
    (!typed).then(|| format!("{}={}", env.to_string_lossy(), value.to_string_lossy()))
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// A usage error: a clear message (clap's format, or one JSON object in
/// agent mode), a USAGE_ERROR outcome line where `--outcome` says, exit 2,
/// nothing sent. Off a terminal, stderr holds the outcome line alone, as
/// after any run (its reason carries the message), so that
/// `abide … 2>&1 >/dev/null | jq -r .outcome` always reads JSON.
fn usage(message: &str, agent: bool) -> Kind {
    use std::io::IsTerminal;
    if agent {
        return agent_usage_error(message);
    }
    let to = outcome_requested();
    if to != OutcomeTo::Stderr || std::io::stderr().is_terminal() {
        let _ = cli::command()
            .error(clap::error::ErrorKind::ValueValidation, message)
            .print();
    }
    write_outcome(&to, &Line::usage_error(message));
    Kind::UsageError
}

fn agent_usage_error(message: &str) -> Kind {
    let line = Line::usage_error(message);
    let object = AgentObject {
        line: &line,
        body: serde_json::Value::Null,
        body_truncated: false,
        body_encoding: None,
        headers: serde_json::Map::new(),
    };
    print_object(&object);
    Kind::UsageError
}

/// The agent's one object on stdout; a reader that went away gets nothing,
/// and there is nowhere better to say so.
fn print_object(object: &AgentObject) {
    let mut line = serde_json::to_string(object).expect("the agent object always serializes");
    line.push('\n');
    let _ = std::io::stdout().write_all(line.as_bytes());
}

/// Runs the request; how it ended, once everything it held is released.
fn fetch(cli: &Cli) -> Kind {
    let agent = cli.agent.agent;
    let mut plan = match plan::plan(cli, &mut std::io::stdin().lock()) {
        Ok(plan) => plan,
        Err(message) => return usage(&message, agent),
    };
    // Agent mode speaks only through its one JSON object.
    let verbose = cli.output.verbose && !agent;
    // Agent mode writes its one object to stdout, never to --outcome.
    if let OutcomeTo::Append(path) = &plan.outcome_to
        && !agent
        && let Err(e) = append_to(path)
    {
        return usage(
            &format!("cannot write --outcome {}: {e}", path.display()),
            agent,
        );
    }
    let opened = plan.log.as_deref().map(|path| {
        Audit::open(path).map_err(|e| format!("cannot open --log {}: {e}", path.display()))
    });
    let mut audit = match opened.transpose() {
        Ok(audit) => audit,
        Err(message) => return usage(&message, agent),
    };
    // Watched from here on, before the state is opened and before the first
    // temporary file exists, so that a signal always gets its outcome line
    // and the cleanup.
    let mut cancel = Cancel::default();
    if let Err(e) = cancel.on_signals()
        && !agent
    {
        eprintln!("abide: warning: cannot watch for signals: {e}");
    }
    let (shared, mut state_failure) = open_shared(&plan);
    let mut refusal = match (&state_failure, &shared) {
        (Some(e), _) if plan.state_required => Some(format!(
            "the shared state is unavailable ({e}) and --state-required is set"
        )),
        // Without the state a task's key would be new on every rerun: the
        // very double write --task is there to prevent.
        (e, None) if plan.task.is_some() => Some(format!(
            "--task keeps its idempotency key in the scope state, which is unavailable ({})",
            e.as_deref()
                .unwrap_or("no state directory: set --state-dir or HOME")
        )),
        _ => None,
    };
    if let (None, Some(task), Some(shared)) = (&refusal, plan.task.clone(), &shared) {
        // Kept before anything is sent, so that a crash and a rerun reuse it.
        let fresh = plan
            .request
            .idempotency_key()
            .unwrap_or_default()
            .to_string();
        let kept = shared
            .task_key(&task, &fresh, plan.task_ttl)
            .map_err(|e| format!("--task: the scope state cannot keep the idempotency key ({e})"));
        if let Err(why) = kept.and_then(|key| plan.set_idempotency_key(&key)) {
            refusal = Some(why);
        }
    }
    if let Some(why) = refusal {
        let record = Record::unsent(Ending::Internal(why));
        return finish(&plan, record, None, 0, &mut audit, agent);
    }
    let mut transport = match Http::new(&plan.settings, plan.request.clone()) {
        Ok(http) => http,
        Err(e) => return usage(&format!("{e:#}"), agent),
    };
    cancel.interrupt_with(transport.interrupter());
    // Beyond --max-body by the longest secret, so that one crossing the cut
    // is masked before the body is cut.
    let agent_keeps = plan.max_body + plan.redactor.reach() as u64;
    // Last of the checks, so that no early return leaves a temporary file.
    let mut sink = match &plan.output {
        Some(path) => match Sink::file(path, &plan.file_options) {
            Ok(sink) if plan.include => sink.include(),
            Ok(sink) => sink,
            Err(e) => return usage(&format!("cannot write to {}: {e}", path.display()), agent),
        },
        None if agent => Sink::capture(agent_keeps),
        None => Sink::stdout(plan.no_buffer, plan.include),
    };
    let fingerprint = match &shared {
        Some(_) if plan.no_progress > 0 => plan::fingerprint(&plan.request).ok(),
        _ => None,
    };
    let repeats = match (&shared, &fingerprint) {
        (Some(shared), Some(fp)) => shared.repeats(fp),
        _ => 0,
    };
    let mut record = if let Some(signal) = cancel.cancelled() {
        Record::unsent(Ending::Cancelled(signal))
    } else if plan.no_progress > 0 && repeats >= plan.no_progress {
        Record::unsent(Ending::NoProgress { times: repeats })
    } else {
        let looper = Loop {
            policy: &plan.policy,
            replay: plan.replay,
            max_time: plan.max_time,
            connect_timeout: plan.connect_timeout,
            stall: plan.stall,
            resumable: plan.resumable,
            redactor: &plan.redactor,
            shared: shared.as_ref(),
            require: &plan.require,
            keep_body: match agent {
                true => agent_keeps,
                false if plan.fail_with_body => FAIL_BODY_KEPT,
                false => 0,
            },
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
            request_head(&plan),
            plan.output.is_some(),
            verbose,
            progress::on_terminal(cli.output.silent || agent),
        );
        let record = looper.run(
            &mut progress.watch(&mut transport),
            &mut sink,
            &SystemClock,
            &mut cancel,
            &mut rand::random::<f64>,
            &mut |event| {
                progress.event(&event);
                if let Some(audit) = &mut audit {
                    log_event(audit, &plan, &event);
                }
            },
        );
        // Off the screen before anything else is written: notes, outcome.
        progress.finish();
        record
    };
    if let Some(shared) = &shared {
        shared.release();
        if let Some(fp) = &fingerprint
            && record.kind() != Kind::NoProgress
        {
            let failed = matches!(record.kind(), Kind::NonRetryable | Kind::InvalidResponse);
            shared.remember(fp, failed);
        }
        state_failure = state_failure.or_else(|| shared.failure());
        let notes = shared.take_notes();
        if verbose {
            for note in notes {
                eprintln!("abide: {note}");
            }
        }
    }
    if let Some(e) = state_failure {
        if !agent && !plan.state_required {
            eprintln!("abide: warning: the shared state is unavailable ({e}); going on without it");
        }
        record.notes.push(format!(
            "State: unavailable ({e}); the run went on without shared limits."
        ));
    }
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
    finish(&plan, record, captured, downloaded, &mut audit, agent)
}

/// Opens the scope state the plan asks for. A store that cannot be opened is
/// reported (second value) and the run goes on without it, unless required.
fn open_shared(plan: &Plan) -> (Option<Shared>, Option<String>) {
    // Short, and never more than a fraction of the budget; after its first
    // failure a run stops using the store, so that is all it can cost.
    let timeout = STATE_TIMEOUT.min(plan.policy.budget / 4);
    let store: std::io::Result<Box<dyn Store>> = match &plan.state {
        None => return (None, None),
        Some(Backend::Files(dir)) => FileStore::open(dir, timeout)
            .map(|s| Box::new(s) as Box<dyn Store>)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", dir.display()))),
        Some(Backend::Redis(url)) => {
            RedisStore::connect(url, timeout).map(|s| Box::new(s) as Box<dyn Store>)
        }
    };
    match store {
        Ok(store) => {
            let shared = Shared::new(
                store,
                plan.scope.clone(),
                plan::endpoint(&plan.request),
                plan.scope_policy,
                plan.max_concurrent,
                plan.state_required,
            );
            (Some(shared), None)
        }
        Err(e) => (None, Some(plan.redactor.text(&e.to_string()))),
    }
}

/// The longest a state store may take to connect or answer.
const STATE_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(500);

/// Writes the outcome where it goes (the agent object, or the outcome line)
/// and to the audit log.
fn finish(
    plan: &Plan,
    record: Record,
    captured: Option<(Vec<u8>, bool)>,
    downloaded: u64,
    audit: &mut Option<Audit>,
    agent: bool,
) -> Kind {
    let mut line = Line::new(&plan.context(), &record);
    if let Some(audit) = audit {
        audit.event(
            "outcome",
            serde_json::to_value(&line).expect("serializable"),
        );
        if let Some(e) = audit.take_error()
            && !agent
        {
            eprintln!("abide: warning: the --log could not be written: {e}");
        }
    }
    if agent {
        let (bytes, more) =
            captured.unwrap_or_else(|| (record.failed_body.clone(), record.failed_body_truncated));
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
    record.kind()
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
    };
    let _ = format.render(
        &facts,
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
}

/// One audit line per loop event.
fn log_event(audit: &mut Audit, plan: &Plan, event: &Event) {
    use serde_json::json;
    match event {
        Event::Sending { attempt, .. } => {
            let context = plan.context();
            audit.event(
                "request",
                json!({
                    "attempt": attempt,
                    "method": context.method,
                    "url": context.url,
                    "idempotency_key": context.idempotency_key,
                }),
            )
        }
        Event::Answered {
            attempt,
            status,
            server,
            ..
        } => audit.event(
            "response",
            json!({
                "attempt": attempt,
                "status": status,
                "retry_after_s": server.map(|s| s.delay.as_secs_f64()),
            }),
        ),
        Event::Failed { attempt, error } => {
            audit.event("error", json!({ "attempt": attempt, "error": error }))
        }
        Event::Resumed {
            attempt,
            offset,
            total,
        } => audit.event(
            "resume",
            json!({ "attempt": attempt, "offset": offset, "total": total }),
        ),
        Event::Waiting { wait, retry } => audit.event(
            "wait",
            json!({
                "before_attempt": retry + 1,
                "wait_ms": clock::ceil_ms(wait.duration),
                "reason": crate::report::narrate::wait_reason(wait, &plan.policy, &plan.scope),
            }),
        ),
        Event::Breaker(news) => audit.event(
            "breaker",
            serde_json::to_value(BreakerEntry::new(news)).expect("a breaker entry is JSON"),
        ),
    }
}

fn write_outcome(to: &OutcomeTo, line: &Line) {
    let mut line = line.to_json();
    line.push('\n');
    let written = match to {
        OutcomeTo::Stderr => std::io::stderr().write_all(line.as_bytes()),
        OutcomeTo::Stdout => std::io::stdout().write_all(line.as_bytes()),
        OutcomeTo::Nowhere => Ok(()),
        OutcomeTo::Append(path) => append_to(path)
            // One write per line, so runs sharing the file never interleave.
            .and_then(|mut f| f.write_all(line.as_bytes())),
    };
    if let (Err(e), OutcomeTo::Append(path)) = (written, to) {
        // The line is not lost: it goes where it would have gone by default.
        eprintln!(
            "abide: warning: cannot write --outcome {}: {e}",
            path.display()
        );
        let _ = std::io::stderr().write_all(line.as_bytes());
    }
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
/// with abide's own headers; ureq adds the framing ones. Every value goes
/// through the redactor, so a credential shows as its mask.
fn request_head(plan: &Plan) -> String {
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
    for (name, value) in &plan.request.headers {
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

fn append_to(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
}
