//! The imperative shell: parse, dispatch, run the loop with the real clock,
//! transport and sinks, write the outcome line, exit with its code.

use std::io::Write;
use std::process::ExitCode;

use clap::FromArgMatches;

use crate::cancel::Cancel;
use crate::cli::{self, Cli, Command};
use crate::decision::WaitCause;
use crate::http::Http;
use crate::outcome::{Kind, Line, Record, Why};
use crate::plan::{self, OutcomeTo, Plan};
use crate::retry::{Event, Loop, SystemClock};
use crate::scope;
use crate::scope::BreakerNews;
use crate::shared::Shared;
use crate::sink::Sink;
use crate::store::FileStore;

pub fn main() -> ExitCode {
    let cli = match cli::command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(e.exit_code() as u8);
        }
    };
    let result = match &cli.command {
        Some(Command::Lab(args)) => crate::lab::run(args),
        Some(Command::Demo) => crate::demo::run(),
        None => Ok(fetch(&cli)),
    };
    result.unwrap_or_else(|e| {
        if !is_broken_pipe(&e) {
            eprintln!("abide: error: {e:#}");
        }
        ExitCode::from(Kind::InternalError.exit_code())
    })
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// A usage error: a clear message in clap's format, exit 2, nothing sent.
fn usage(message: &str) -> ExitCode {
    let _ = cli::command()
        .error(clap::error::ErrorKind::ValueValidation, message)
        .print();
    ExitCode::from(Kind::UsageError.exit_code())
}

fn fetch(cli: &Cli) -> ExitCode {
    let plan = match plan::plan(cli, &mut std::io::stdin().lock()) {
        Ok(plan) => plan,
        Err(message) => return usage(&message),
    };
    let mut sink = match &plan.output {
        Some(path) => match Sink::file(path) {
            Ok(sink) => sink,
            Err(e) => return usage(&format!("cannot write to {}: {e}", path.display())),
        },
        None => Sink::stdout(),
    };
    let mut transport = match Http::new(&plan.settings, plan.request.clone()) {
        Ok(http) => http,
        Err(e) => return usage(&format!("{e:#}")),
    };
    let mut cancel = Cancel::default();
    let interrupt = transport.interrupter();
    if let Err(e) = cancel.on_signals(interrupt) {
        eprintln!("abide: warning: cannot watch for signals: {e}");
    }
    let verbose = cli.output.verbose;
    let shared = plan.state_dir.as_ref().and_then(|dir| match FileStore::open(dir) {
        Ok(store) => Some(Shared::new(
            Box::new(store),
            plan.context.scope.clone(),
            plan.scope_policy,
            plan.max_concurrent,
        )),
        Err(e) => {
            if verbose {
                eprintln!("abide: cannot use the state directory {}: {e}; going on without shared state", dir.display());
            }
            None
        }
    });
    let looper = Loop {
        policy: &plan.policy,
        replay: plan.replay,
        max_time: plan.max_time,
        connect_timeout: plan.connect_timeout,
        redactor: &plan.redactor,
        shared: shared.as_ref(),
    };
    let mut record = looper.run(
        &mut transport,
        &mut sink,
        &SystemClock,
        &mut cancel,
        &mut rand::random::<f64>,
        &mut |event| {
            if verbose {
                eprintln!("abide: {}", narrate(&plan, &event));
            }
        },
    );
    if let Some(shared) = &shared {
        shared.release();
        if verbose {
            for note in shared.take_notes() {
                eprintln!("abide: {note}");
            }
        }
    }
    if record.kind == Kind::Succeeded {
        if let Err(e) = sink.commit() {
            record.kind = Kind::InternalError;
            record.why = Why::Internal(format!("cannot put the body in place: {e}"));
        }
    } else {
        sink.discard();
    }
    write_outcome(&plan, &record);
    ExitCode::from(record.kind.exit_code())
}

fn write_outcome(plan: &Plan, record: &Record) {
    let mut line = Line::new(&plan.context, record).to_json();
    line.push('\n');
    // Failures to write the outcome cannot be reported anywhere better.
    let _ = match &plan.outcome_to {
        OutcomeTo::Stderr => std::io::stderr().write_all(line.as_bytes()),
        OutcomeTo::Stdout => std::io::stdout().write_all(line.as_bytes()),
        OutcomeTo::Nowhere => Ok(()),
        OutcomeTo::Append(path) => std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            // One write per line, so runs sharing the file never interleave.
            .and_then(|mut f| f.write_all(line.as_bytes())),
    };
}

/// One human line per event, for `-v`.
fn narrate(plan: &Plan, event: &Event) -> String {
    match event {
        Event::Sending { attempt, limits } => format!(
            "attempt {attempt}/{}: {} {} (time limit {:.1}s)",
            plan.policy.attempts,
            plan.context.method,
            plan.context.url,
            limits.total.as_secs_f64()
        ),
        Event::Answered {
            attempt,
            status,
            server,
        } => match server {
            Some(s) => format!(
                "attempt {attempt}: {status}, {} {:.3}s",
                s.source.header(),
                s.delay.as_secs_f64()
            ),
            None => format!("attempt {attempt}: {status}"),
        },
        Event::Failed { attempt, error } => format!("attempt {attempt}: {error}"),
        Event::Breaker(BreakerNews::Opened { until }) => format!(
            "circuit breaker of scope {} opened until {}",
            plan.context.scope,
            crate::outcome::rfc3339(
                std::time::UNIX_EPOCH + std::time::Duration::from_millis(*until)
            )
        ),
        Event::Breaker(BreakerNews::Closed) => {
            format!("circuit breaker of scope {} closed", plan.context.scope)
        }
        Event::Breaker(BreakerNews::Unchanged) => String::new(),
        Event::Waiting { wait, retry } => {
            let why = match wait.cause {
                WaitCause::Server { server, honoured } => {
                    let floor = if honoured > server.delay {
                        ", raised to the floor"
                    } else {
                        ""
                    };
                    format!(
                        "{} asked {:.3}s{floor}, jitter +{:.3}s",
                        server.source.header(),
                        server.delay.as_secs_f64(),
                        (wait.duration - honoured).as_secs_f64()
                    )
                }
                WaitCause::Backoff { n } => format!("no server delay: backoff step {n}"),
                WaitCause::Scope {
                    cause: scope::Wait::Rate,
                } => "the scope's --rate slot".into(),
                WaitCause::Scope {
                    cause: scope::Wait::Gate(gate),
                } => match gate {
                    scope::GateCause::RetryAfter => {
                        "the scope's gate, closed by a Retry-After, plus jitter".into()
                    }
                    scope::GateCause::QuotaExhausted => {
                        "the scope's gate, until its rate-limit quota resets, plus jitter".into()
                    }
                },
            };
            format!(
                "waiting {:.3}s before attempt {} ({why})",
                wait.duration.as_secs_f64(),
                retry + 1
            )
        }
    }
}
