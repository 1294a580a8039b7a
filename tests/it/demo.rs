//! `abide demo`: the newcomer's first run tells the story and exits 0.

use crate::util::*;

#[test]
fn the_demo_catches_the_naive_loop_and_clears_abide() {
    let run = run(&["demo"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout_text(), run.stderr);
    let text = run.stdout_text();
    assert!(text.contains("1. A naive loop"), "{text}");
    let naive = text
        .lines()
        .find(|l| l.contains("The lab's verdict:"))
        .unwrap();
    assert!(
        !naive.contains(" 0 early retries"),
        "the naive loop is caught: {naive}"
    );
    assert!(
        text.contains("The lab's verdict on abide: 6 requests, 1 rate-limited, 0 early retries."),
        "{text}"
    );
    assert!(
        text.contains("\"outcome\":\"SUCCEEDED\""),
        "outcome lines are shown: {text}"
    );
}
