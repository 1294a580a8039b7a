//! Environment defaults: every policy flag can come from ABIDE_*, and a flag
//! on the command line wins. Judged by the requests the lab received.

use abide::lab::Step;

use crate::util::*;

fn attempts_sent(env: &[(&str, &str)], args: &[&str]) -> (i32, usize) {
    let lab = scripted(vec![Step::new(503).header("Retry-After", "0")]);
    let mut cmd = abide(&[&["--jitter", "0"], args, &[&lab.url()]].concat());
    // Short waits, unless a case sets its own floor.
    cmd.env("ABIDE_FLOOR", "10ms");
    for (name, value) in env {
        cmd.env(name, value);
    }
    let run = finish(cmd, b"");
    (run.code, lab.records().len())
}

#[test]
fn the_environment_sets_defaults_and_flags_win() {
    assert_eq!(attempts_sent(&[("ABIDE_ATTEMPTS", "2")], &[]), (4, 2));
    assert_eq!(
        attempts_sent(&[("ABIDE_ATTEMPTS", "2")], &["--attempts", "3"]),
        (4, 3)
    );
    // curl's spelling also wins over the variable, though on the command
    // line it cannot be combined with --attempts.
    assert_eq!(
        attempts_sent(&[("ABIDE_ATTEMPTS", "2")], &["--retry", "0"]),
        (4, 1)
    );
    assert_eq!(
        attempts_sent(&[], &["--retry", "1", "--attempts", "3"]),
        (2, 0)
    );
    // The budget from the environment ends the run before the floor's wait.
    assert_eq!(
        attempts_sent(&[("ABIDE_BUDGET", "1s"), ("ABIDE_FLOOR", "5s")], &[]).1,
        1
    );
}

#[test]
fn verbose_and_silent_from_the_environment() {
    let lab = scripted(vec![Step::new(200)]);
    let mut cmd = abide(&[&lab.url()]);
    cmd.env("ABIDE_VERBOSE", "1");
    let verbose = finish(cmd, b"");
    assert!(
        verbose
            .stderr
            .starts_with("abide: attempt 1/4: GET to 127.0.0.1:"),
        "{}",
        verbose.stderr
    );
    let mut cmd = abide(&[&lab.url()]);
    cmd.env("ABIDE_VERBOSE", "false");
    assert_eq!(finish(cmd, b"").stderr.lines().count(), 1);
}
