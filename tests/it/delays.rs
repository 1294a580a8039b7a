//! What a server's delay teaches, judged at the server: which answers close
//! the scope's gate for later runs, and the pace `--rate` keeps.

use std::time::Duration;

use abide::lab::Step;

use crate::util::*;

#[test]
fn a_successs_retry_after_holds_no_later_run() {
    // RFC 9110 gives Retry-After meaning on 503 and 3xx; on a 200 it is no
    // request to wait, so the next run of the scope goes at once.
    let lab = scripted(vec![Step::new(200).header("Retry-After", "3")]);
    let b = Backend::files("success-retry-after");
    let first = finish(b.abide(&[&lab.url()]), b"");
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(first.outcome()["next_allowed_at"], serde_json::Value::Null);
    let second = finish(b.abide(&[&lab.url()]), b"");
    assert_eq!(second.code, 0, "{}", second.stderr);
    let gap = gaps(&lab.records())[0];
    assert!(
        gap < Duration::from_secs(2),
        "the second run waited {gap:?}"
    );
    assert_eq!(second.outcome()["waited_ms"], 0);
}
