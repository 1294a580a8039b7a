//! Generated documentation: the man page and the shell completions, printed
//! by the hidden `--generate KIND` from the same `cli::command()` the binary
//! parses. Their output is committed under `man/` and `completions/`, and a
//! test fails when it is stale.

use std::io::{self, Write};

use clap::ValueEnum;
use clap_complete::Shell;
use clap_mangen::Man;
use roff::{Roff, bold, roman};

use crate::cli::{self, Generate};
use crate::exit::Kind;

/// The outcome line's fields in order, with what each means; a test checks
/// them against a real outcome line, so the man page cannot drift from it.
pub const OUTCOME_FIELDS: [(&str, &str); 21] = [
    (
        "outcome",
        "SUCCEEDED, NON_RETRYABLE, RETRY_EXHAUSTED, BUDGET_EXHAUSTED, CIRCUIT_OPEN, \
         SIDE_EFFECT_UNKNOWN, INVALID_RESPONSE, NO_PROGRESS, NEEDS_HUMAN, INCOMPLETE, \
         CANCELLED, INTERNAL_ERROR or USAGE_ERROR.",
    ),
    ("ok", "true only for SUCCEEDED."),
    (
        "exit_code",
        "the process exit code; for CANCELLED, the status a shell shows for the signal abide \
         ends by (128 + its number).",
    ),
    ("method", "the request method (null for a usage error)."),
    (
        "url",
        "the request URL; credentials shown as *** (null for a usage error).",
    ),
    (
        "scope",
        "what the limit applies to: the URL's origin, scheme://host:port.",
    ),
    ("status", "the final HTTP status, or null."),
    ("attempts", "requests actually sent."),
    ("elapsed_ms", "wall time of the run, in milliseconds."),
    ("waited_ms", "time spent waiting between attempts."),
    (
        "retry_after_s",
        "the last server-given delay in seconds (may be fractional).",
    ),
    (
        "next_allowed_at",
        "RFC 3339 UTC time before which the caller should not call again, when known.",
    ),
    ("idempotency_key", "the Idempotency-Key sent, if any."),
    ("reason", "one sentence: what happened."),
    (
        "instruction",
        "one sentence for a script or an agent: what to do next, and when.",
    ),
    (
        "error",
        "the transport error, or the first 256 bytes of the final error body.",
    ),
    (
        "history",
        "one object per attempt: attempt, status, error, retry_after_s, wait_ms (the wait \
         that followed it), elapsed_ms (from the start of the run to the end of the attempt).",
    ),
    (
        "resumed_bytes",
        "bytes of the body not downloaded again: kept from an attempt whose body broke off \
         (or from -C -) and continued with a range request.",
    ),
    (
        "reconciled",
        "true when a write's effect was unknown and --check found that it happened.",
    ),
    (
        "operation_id",
        "the provider's id of what the write created (a 201's Location, or --id-pointer), \
         from this run or kept by its --task; else null.",
    ),
    (
        "id",
        "in a --batch only: the item's id (its own, else its line number).",
    ),
];

impl Generate {
    /// Where the output is committed, relative to the repository root.
    pub fn path(self) -> &'static str {
        match self {
            Generate::Man => "man/abide.1",
            Generate::CompleteBash => "completions/abide.bash",
            Generate::CompleteZsh => "completions/_abide",
            Generate::CompleteFish => "completions/abide.fish",
            Generate::CompletePowershell => "completions/_abide.ps1",
            Generate::CompleteElvish => "completions/abide.elv",
        }
    }

    /// The `--generate` value, e.g. `complete-bash`.
    pub fn name(self) -> String {
        self.to_possible_value()
            .expect("no variant is skipped")
            .get_name()
            .to_string()
    }

    pub fn write(self, out: &mut dyn Write) -> io::Result<()> {
        let shell = match self {
            Generate::Man => return man(out),
            Generate::CompleteBash => Shell::Bash,
            Generate::CompleteZsh => Shell::Zsh,
            Generate::CompleteFish => Shell::Fish,
            Generate::CompletePowershell => Shell::PowerShell,
            Generate::CompleteElvish => Shell::Elvish,
        };
        clap_complete::generate(shell, &mut cli::command(), "abide", out);
        Ok(())
    }
}

/// Prints `kind` to stdout; `abide --generate man | head` is not an error.
pub fn print(kind: Generate) -> anyhow::Result<std::process::ExitCode> {
    let mut out = io::stdout().lock();
    kind.write(&mut out)?;
    out.flush()?;
    Ok(std::process::ExitCode::SUCCESS)
}

/// clap_mangen's sections for the flags, then abide's own: the decision
/// table, the outcome line, exit status, environment and examples.
fn man(out: &mut dyn Write) -> io::Result<()> {
    let command = cli::command();
    // The long help's epilogue becomes the sections below, not clap_mangen's
    // catch-all EXTRA section.
    let man = Man::new(command.clone());
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;

    let mut roff = Roff::new();
    // clap_mangen would point at abide-lab(1) and abide-demo(1), which are
    // not written: their --help is the reference.
    roff.control("SH", ["COMMANDS"]);
    for sub in command.get_subcommands() {
        roff.control("TP", []);
        roff.text([bold(format!("abide {}", sub.get_name()))]);
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        roff.text([roman(format!("{about}; see "))]);
        roff.text([bold(format!("abide {} --help", sub.get_name())), roman(".")]);
    }

    roff.control("SH", ["DECISION TABLE"]);
    roff.text([roman(
        "What abide does with the result of each attempt, and how long it waits before the next:",
    )]);
    roff.control("PP", []);
    preformatted(&mut roff, cli::DECISION_TABLE, 0);

    roff.control("SH", ["OUTCOME LINE"]);
    roff.text([roman(
        "Exactly one line of compact JSON per run, written at the end (see --outcome). \
         Every field is always present, null where it does not apply. Fields are added \
         over time, never renamed or removed.",
    )]);
    for (field, meaning) in OUTCOME_FIELDS {
        roff.control("TP", []);
        roff.text([bold(field)]);
        roff.text([roman(meaning)]);
    }

    roff.control("SH", ["EXIT STATUS"]);
    for kind in Kind::ALL {
        roff.control("TP", []);
        roff.text([bold(kind.exit_code().to_string())]);
        roff.text([roman(format!("{}: {}.", kind.name(), kind.meaning()))]);
    }

    roff.control("SH", ["ENVIRONMENT"]);
    roff.text([roman(
        "Each of these sets the default of a flag; the flag on the command line wins \
         over its variable.",
    )]);
    for arg in command.get_arguments().filter(|a| !a.is_hide_set()) {
        if let (Some(env), Some(long)) = (arg.get_env(), arg.get_long()) {
            roff.control("TP", []);
            roff.text([bold(env.to_string_lossy())]);
            roff.text([
                roman("The default of "),
                bold(format!("--{long}")),
                roman("."),
            ]);
        }
    }
    roff.control("TP", []);
    roff.text([
        bold("ALL_PROXY"),
        roman(", "),
        bold("HTTPS_PROXY"),
        roman(", "),
        bold("HTTP_PROXY"),
        roman(", "),
        bold("NO_PROXY"),
    ]);
    roff.text([
        roman("Without "),
        bold("-x"),
        roman(
            ", the first of the proxy variables that is set (also in lower case) is the \
               proxy, and NO_PROXY lists the hosts that bypass it.",
        ),
    ]);

    roff.control("SH", ["EXAMPLES"]);
    for (what, example) in cli::EXAMPLES {
        roff.control("PP", []);
        roff.text([roman(capitalized(what)), roman(":")]);
        preformatted(&mut roff, example, 2);
    }
    roff.to_writer(out)?;

    man.render_version_section(out)
}

/// Lines kept as they are, indented by `indent` columns; the texts are at
/// most 72 wide, so that with man's own indent of 7 they fit 80 columns.
fn preformatted(roff: &mut Roff, text: &str, indent: u8) {
    let indent = indent.to_string();
    roff.control("RS", [indent.as_str()]);
    roff.control("nf", []);
    for line in text.lines() {
        roff.text([roman(line)]);
    }
    roff.control("fi", []);
    roff.control("RE", []);
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_generates() {
        for kind in Generate::value_variants() {
            let mut out = Vec::new();
            kind.write(&mut out).unwrap();
            assert!(out.len() > 1000, "{} is nearly empty", kind.name());
        }
    }

    #[test]
    fn the_man_page_has_its_sections_and_every_exit_status() {
        let mut out = Vec::new();
        Generate::Man.write(&mut out).unwrap();
        let page = String::from_utf8(out).unwrap();
        for section in [
            "DECISION TABLE",
            "OUTCOME LINE",
            "EXIT STATUS",
            "ENVIRONMENT",
            "EXAMPLES",
        ] {
            assert!(
                page.contains(&format!(".SH \"{section}\""))
                    || page.contains(&format!(".SH {section}\n")),
                "{section}"
            );
        }
        for kind in Kind::ALL {
            assert!(
                page.contains(&format!("\\fB{}\\fR", kind.exit_code())),
                "{kind:?}"
            );
        }
        assert!(page.contains("ABIDE_BUDGET"));
    }
}
