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

#[test]
fn a_real_mcp_client_lists_calls_is_held_refused_and_cancels() {
    let Some(python) = python() else { return };
    let limited = scripted(vec![
        Step::new(429).header("Retry-After", "30"),
        Step::new(200),
    ]);
    let hanging = scripted(vec![Step::new(200).delay(Duration::from_secs(30))]);
    let state = temp_dir("mcp");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client.py");
    let out = Command::new(python)
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_abide"))
        .arg(limited.url())
        .arg(hanging.url())
        .arg(&state)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();

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
