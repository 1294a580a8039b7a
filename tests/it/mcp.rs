//! `abide mcp` driven by a real MCP client nobody here wrote: the official
//! Python SDK (`mcp` on PyPI, installed by `.ci/run` into target/py), judged
//! by what the lab recorded.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use abide::lab::Step;
use serde_json::Value;

use crate::util::*;

/// The Python with the MCP SDK: `ABIDE_TEST_PYTHON`, else the virtual
/// environment `.ci/run` makes. Missing, the test says so and passes, except
/// in CI, where a test that did nothing must not pass.
fn python() -> Option<PathBuf> {
    let python = std::env::var_os("ABIDE_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/py/bin/python"));
    if python.exists() {
        return Some(python);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "no Python with the MCP SDK at {} in CI",
        python.display()
    );
    eprintln!("skipped: no Python with the MCP SDK (run .ci/run, or set ABIDE_TEST_PYTHON)");
    None
}

/// `client` (a script under tests/mcp) run with `args`: its JSON report.
fn client(python: PathBuf, client: &str, args: &[&std::ffi::OsStr]) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp")
        .join(client);
    let out = Command::new(python)
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_abide"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_real_mcp_client_lists_calls_is_held_refused_and_cancels() {
    let Some(python) = python() else { return };
    let limited = scripted(vec![
        Step::new(429).header("Retry-After", "30"),
        Step::new(200),
    ]);
    let hanging = scripted(vec![Step::new(200).delay(Duration::from_secs(30))]);
    let state = temp_dir("mcp");
    let (limited_url, hanging_url) = (limited.url(), hanging.url());
    let report = client(
        python,
        "client.py",
        &[limited_url.as_ref(), hanging_url.as_ref(), state.as_ref()],
    );

    assert_eq!(report["server"], "abide");
    let tools = report["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["name"], "http_request");
    assert_eq!(tools[0]["input"]["required"], serde_json::json!(["url"]));
    assert!(tools[0]["output"]["properties"]["next_allowed_at"].is_object());

    // The 429 comes back with when to call again, as an error result.
    let first = &report["first"];
    assert_eq!(first["is_error"], true);
    assert_eq!(first["object"]["status"], 429);
    let next = first["object"]["next_allowed_at"].as_str().unwrap();
    assert!(humantime::parse_rfc3339(next).is_ok(), "{next}");
    // The same JSON as text, for clients that read only content.
    let text: Value = serde_json::from_str(first["text"][0].as_str().unwrap()).unwrap();
    assert_eq!(text, first["object"]);

    // The immediate second call is held by the scope's gate, never sent.
    let second = &report["second"];
    assert_eq!(second["object"]["outcome"], "BUDGET_EXHAUSTED");
    assert_eq!(second["object"]["attempts"], 0);
    assert!(second["object"]["next_allowed_at"].is_string());
    assert_eq!(limited.records().len(), 1, "the gate let a call through");

    // A write without --allow-writes, and a host outside --allow-host.
    for (call, words) in [
        ("post", "without --allow-writes"),
        ("elsewhere", "may not reach localhost"),
    ] {
        let object = &report[call]["object"];
        assert_eq!(report[call]["is_error"], true, "{call}");
        assert_eq!(object["outcome"], "USAGE_ERROR", "{call}");
        let reason = object["reason"].as_str().unwrap();
        assert!(reason.contains(words), "{call}: {reason}");
    }
    assert_eq!(limited.records().len(), 1, "a refused call was sent");

    // The cancelled call's child was running, and is gone.
    assert_eq!(report["cancel_reached"], true);
    assert_eq!(report["running_at_cancel"], 1);
    assert_eq!(report["running_after_cancel"], serde_json::json!([]));
    assert_eq!(report["alive_after_cancel"], true);
    assert_eq!(hanging.records().len(), 1);
}

/// The tool's `check`, through a real MCP client: a POST whose answer is a
/// 503 is settled by a GET of the check URL with the key it sent, found
/// done (`reconciled`) and never sent again; a check that is no http(s)
/// URL is refused unsent, its password masked.
#[test]
fn a_real_mcp_client_settles_a_lost_write_with_its_check() {
    let Some(python) = python() else { return };
    let orders = scripted(vec![
        Step::new(503),
        Step::new(200).body(r#"{"id":"ord_42"}"#),
    ]);
    let state = temp_dir("mcp-check");
    let url = orders.url();
    let report = client(python, "check.py", &[url.as_ref(), state.as_ref()]);

    let check = &report["input"]["properties"]["check"];
    assert_eq!(check["type"], "string", "{check}");
    assert!(
        report["description"].as_str().unwrap().contains("`check`"),
        "the tool's description says what check is for"
    );

    let order = &report["order"];
    assert_eq!(order["is_error"], false, "{order}");
    let o = &order["object"];
    assert_eq!(o["outcome"], "SUCCEEDED", "{o}");
    assert_eq!(o["reconciled"], true, "{o}");
    assert_eq!(o["attempts"], 1, "{o}");
    assert_eq!(o["body"]["id"], "ord_42", "{o}");
    let records = orders.records();
    let seen: Vec<(&str, &str)> = records
        .iter()
        .map(|r| (r.method.as_str(), r.path.as_str()))
        .collect();
    let key = records[0].header("idempotency-key").unwrap();
    assert_eq!(
        seen,
        [
            ("POST", "/orders"),
            ("GET", format!("/orders/by-key/{key}").as_str())
        ],
        "one POST, then its check, never a replay"
    );
    assert_eq!(records[1].header("idempotency-key"), Some(key));

    let bad = &report["bad"];
    assert_eq!(bad["is_error"], true, "{bad}");
    assert_eq!(bad["object"]["outcome"], "USAGE_ERROR");
    let reason = bad["object"]["reason"].as_str().unwrap();
    assert!(reason.contains("the check"), "{reason}");
    assert!(!reason.contains("hunter2"), "{reason}");
    assert_eq!(orders.records().len(), 2, "a refused call was sent");
}
