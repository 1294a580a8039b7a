//! The no-progress guard counts identical failures: the same request, however
//! it is spelt (JSON key order, whitespace, number forms, query parameter
//! order), and the same error (status and the error's code).

use abide::lab::Step;

use crate::util::*;

on_both_backends!(
    a_reformatted_request_is_the_same_request,
    different_errors_are_not_one_repeated_failure,
);

fn scope() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("guard-{}-{nanos}", std::process::id())
}

/// One call, with the guard on (3 identical failures) in `scope`.
fn call(b: &Backend, scope: &str, args: &[&str]) -> Run {
    let mut cmd = b.abide(&["--no-progress", "3", "--scope", scope]);
    cmd.args(args);
    finish(cmd, b"")
}

fn a_reformatted_request_is_the_same_request(b: &Backend) {
    let lab = scripted(vec![
        Step::new(400)
            .header("Content-Type", "application/json")
            .body(r#"{"error":"invalid_request"}"#),
    ]);
    let scope = scope();
    let spellings = [
        (r#"{"a":1,"b":[1,2],"c":{"x":0.5,"y":"A"}}"#, "?x=1&y=2"),
        (
            "{ \"c\": {\"y\": \"\\u0041\", \"x\": 5e-1}, \"b\": [1, 2], \"a\": 1.0 }",
            "?y=2&x=1",
        ),
        (
            "{\n  \"b\": [1,2],\n  \"a\": 1,\n  \"c\": {\"x\":0.50,\"y\":\"A\"}\n}",
            "?y=2&x=%31",
        ),
        (r#"{"c":{"y":"A","x":0.5},"a":10e-1,"b":[1,2]}"#, "?x=1&y=2"),
    ];
    for (i, (json, query)) in spellings.iter().enumerate() {
        let url = format!("{}/v1/orders{query}", lab.url());
        let run = call(b, &scope, &["--json", json, &url]);
        let sent = lab.records().len();
        if i < 3 {
            assert_eq!(run.code, 3, "call {}: {}", i + 1, run.stderr);
            assert_eq!(sent, i + 1);
        } else {
            assert_eq!(run.code, 9, "the fourth is refused: {}", run.stderr);
            assert_eq!(run.outcome()["outcome"], "NO_PROGRESS");
            assert_eq!(sent, 3, "refused unsent");
        }
    }
    // What differs in meaning is another request: it goes.
    let url = format!("{}/v1/orders?x=1&y=2", lab.url());
    let run = call(
        b,
        &scope,
        &["--json", r#"{"a":2,"b":[1,2],"c":{"x":0.5,"y":"A"}}"#, &url],
    );
    assert_eq!(run.code, 3, "{}", run.stderr);
    let run = call(
        b,
        &scope,
        &["--json", r#"{"a":1,"b":[2,1],"c":{"x":0.5,"y":"A"}}"#, &url],
    );
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_eq!(lab.records().len(), 5);
}

fn different_errors_are_not_one_repeated_failure(b: &Backend) {
    let json = |body: &'static str| {
        Step::new(400)
            .header("Content-Type", "application/json")
            .body(body)
    };
    let lab = scripted(vec![
        json(r#"{"error":{"code":"missing_field","message":"req 1"}}"#),
        json(r#"{"error":{"code":"bad_value","message":"req 2"}}"#),
        Step::new(409),
    ]);
    let scope = scope();
    let url = format!("{}/v1/items", lab.url());
    // Three different errors, then the third one twice more: three in a row.
    for i in 1..=5 {
        let run = call(b, &scope, &[&url]);
        assert_eq!(run.code, 3, "call {i} is sent: {}", run.stderr);
        assert_eq!(lab.records().len(), i);
    }
    let run = call(b, &scope, &[&url]);
    assert_eq!(run.code, 9, "{}", run.stderr);
    assert_eq!(lab.records().len(), 5, "refused unsent");
}
