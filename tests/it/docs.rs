//! The generated files are current and complete, and `--help` reads well at
//! 80 and 100 columns.

use abide::cli::Generate;
use abide::cli::docs::OUTCOME_FIELDS;
use abide::lab::Step;
use clap::ValueEnum;

use crate::util::*;

#[test]
fn committed_completions_and_man_page_are_current() {
    let mut stale = Vec::new();
    for kind in Generate::value_variants() {
        let run = run(&["--generate", &kind.name()]);
        assert_eq!(run.code, 0, "--generate {}: {}", kind.name(), run.stderr);
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(kind.path());
        if std::fs::read(&path).ok().as_deref() != Some(run.stdout.as_slice()) {
            stale.push(format!(
                "  {}: cargo run -- --generate {} > {}",
                kind.path(),
                kind.name(),
                kind.path()
            ));
        }
    }
    assert!(
        stale.is_empty(),
        "generated files are stale; refresh them all with scripts/generate-docs, or one by one:\n{}",
        stale.join("\n")
    );
}

#[test]
fn the_man_page_documents_every_field_of_the_outcome_line() {
    let lab = scripted(vec![Step::new(200)]);
    let run = run(&["-o", "/dev/null", &lab.url()]);
    let outcome = run.outcome();
    let fields: Vec<&str> = outcome
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    // `id` is a batch item's alone (tests/it/batch.rs reads it).
    let documented: Vec<&str> = OUTCOME_FIELDS
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| *name != "id")
        .collect();
    assert_eq!(fields, documented);
}

#[test]
fn generate_needs_no_url_and_takes_none() {
    let generated = run(&["--generate", "complete-bash"]);
    assert_eq!(generated.code, 0);
    assert!(generated.stdout_text().contains("--max-wait"));
    assert!(generated.stderr.is_empty());
    assert_eq!(run(&["--generate", "man", "http://127.0.0.1:1/"]).code, 2);
    let no_url = run(&[]);
    assert_eq!(no_url.code, 2);
    assert!(no_url.stderr.contains("<URL>"), "{}", no_url.stderr);
}

#[test]
fn help_fits_80_and_100_columns() {
    for columns in ["80", "100"] {
        let width: usize = columns.parse().unwrap();
        for flag in ["-h", "--help"] {
            let mut cmd = abide(&[flag]);
            cmd.env("COLUMNS", columns);
            let run = finish(cmd, b"");
            assert_eq!(run.code, 0);
            let help = run.stdout_text();
            for line in help.lines() {
                assert!(
                    line.chars().count() <= width,
                    "{flag} at {columns} columns, a line too wide:\n{line}"
                );
            }
            for heading in ["Request:", "Retry policy:", "Output:"] {
                assert!(help.contains(heading), "{flag}: {heading}");
            }
            // Wrapping may break a note across lines.
            let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(flat.contains("[env: ABIDE_BUDGET=]"), "{flag}");
            assert!(
                flat.contains("[default: 60s, or longer when the --attempts asked need it"),
                "{flag}"
            );
        }
    }
    let long = run(&["--help"]).stdout_text();
    assert!(long.contains("Decision table:"));
    assert!(long.contains("143  CANCELLED"));
}
