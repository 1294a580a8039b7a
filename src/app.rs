//! The imperative shell: parse, dispatch, run the loop with the real clock,
//! transport and sinks, write the outcome line, exit with its code.

use std::io::Write;
use std::process::ExitCode;

use crate::cancel::Cancel;
use crate::cli::{self, Cli, Command};
use crate::http::Http;
use crate::outcome::{Kind, Line, Record, Why};
use crate::plan::{self, OutcomeTo, Plan};
use crate::progress::{self, Progress};
use crate::retry::{Loop, SystemClock};
use crate::sink::Sink;

pub fn main() -> ExitCode {
    let cli = match cli::parse_from(std::env::args_os()) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(e.exit_code() as u8);
        }
    };
    let result = match &cli.command {
        Some(Command::Lab(args)) => crate::lab::run(args),
        Some(Command::Demo) => crate::demo::run(),
        None => match cli.generate {
            Some(kind) => crate::docs::print(kind),
            None => Ok(fetch(&cli)),
        },
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
    let looper = Loop {
        policy: &plan.policy,
        replay: plan.replay,
        max_time: plan.max_time,
        connect_timeout: plan.connect_timeout,
        redactor: &plan.redactor,
    };
    let progress = Progress::new(
        &plan,
        cli.output.verbose,
        progress::on_terminal(cli.output.silent),
    );
    let mut record = looper.run(
        &mut progress.watch(&mut transport),
        &mut sink,
        &SystemClock,
        &mut cancel,
        &mut rand::random::<f64>,
        &mut |event| progress.event(&event),
    );
    if record.kind == Kind::Succeeded {
        if let Err(e) = sink.commit() {
            record.kind = Kind::InternalError;
            record.why = Why::Internal(format!("cannot put the body in place: {e}"));
        }
    } else {
        sink.discard();
    }
    progress.finish();
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
