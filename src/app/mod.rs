//! The imperative shell: parse, dispatch, run the loop with the real clock,
//! transport and sinks, write the outcome line, exit with its code.

mod batch;
pub mod demo;
pub mod mcp;
pub(crate) mod session;
pub mod state;

use std::io::Write;
use std::process::ExitCode;

use crate::cli::{self, Cli, Command};
use crate::exit::Kind;
use crate::plan::{self, OutcomeTo};
use crate::report::agent::AgentObject;
use crate::report::outcome::Line;
use session::{Face, Session, Settled};

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
        Some(Command::State(args)) => crate::app::state::run(args),
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
pub(crate) fn print_object(object: &AgentObject) {
    let mut line = serde_json::to_string(object).expect("the agent object always serializes");
    line.push('\n');
    let _ = std::io::stdout().write_all(line.as_bytes());
}

/// Runs the request (or the batch); how it ended, once everything it held
/// is released.
fn fetch(cli: &Cli) -> Kind {
    let agent = cli.agent.agent;
    let face = Face {
        agent,
        verbose: cli.output.verbose && !agent,
        silent: cli.output.silent,
    };
    if cli.batch.batch.is_some() {
        return batch::run(cli, face);
    }
    let mut plan = match plan::plan(cli, &mut std::io::stdin().lock()) {
        Ok(plan) => plan,
        Err(message) => return usage(&message, agent),
    };
    let mut session = match Session::open(&plan, face) {
        Ok(session) => session,
        Err(message) => return usage(&message, agent),
    };
    if let Err(ending) = session.keep_task_key(&mut plan) {
        return session.report(&plan, Settled::unsent(ending));
    }
    let mut transport = match session.transport(&plan, None) {
        Ok(transport) => transport,
        Err(message) => return usage(&message, agent),
    };
    let mut sink = match session.sink(&plan) {
        Ok(sink) => sink,
        Err(message) => return usage(&message, agent),
    };
    let guard = session.guard(&plan);
    let record = session.run(&plan, guard, &mut transport, &mut sink);
    let settled = session.settle(&plan, record, sink);
    session.report(&plan, settled)
}

pub(crate) fn write_outcome(to: &OutcomeTo, line: &Line) {
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

pub(crate) fn append_to(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
}
