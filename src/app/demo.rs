//! `abide demo`: the first thing a newcomer runs. It starts a lab in this
//! process and tells the story with real traffic in about ten seconds: a
//! naive loop that ignores Retry-After gets caught retrying early; abide,
//! against the same limit, waits exactly as told and is never early.

use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};

use crate::lab::{Lab, LabConfig};

const LIMIT: u32 = 4;
const WINDOW: Duration = Duration::from_secs(3);
/// The naive loop's fixed pause, as in the seed article's poller.
const NAIVE_PAUSE: Duration = Duration::from_millis(200);
const NAIVE_REQUESTS: usize = 8;

pub fn run() -> Result<ExitCode> {
    let lab = Lab::start(
        0,
        LabConfig {
            limit: LIMIT,
            window: WINDOW,
            ..LabConfig::default()
        },
    )
    .context("cannot start the demo lab on 127.0.0.1")?;
    let url = format!("{}/v1/items", lab.url());
    println!(
        "A lab is listening on {} and allows {LIMIT} requests per {}s per client; \
         past that it answers 429 with Retry-After.\n",
        lab.url(),
        WINDOW.as_secs()
    );

    println!(
        "1. A naive loop: retry every {}ms, ignore Retry-After.",
        NAIVE_PAUSE.as_millis()
    );
    naive_loop(&url)?;
    let naive = client_summary(&lab, "naive-loop");
    println!(
        "   The lab's verdict: {} requests, {} rate-limited, {} early retries.\n",
        naive.requests, naive.rate_limited, naive.early_retries
    );

    println!(
        "2. abide, {} runs against the same limit (the last one with -v):",
        LIMIT + 1
    );
    let me = std::env::current_exe().context("cannot find the abide binary")?;
    for run in 1..=LIMIT + 1 {
        let last = run == LIMIT + 1;
        let mut args = vec!["-H", "X-Client-Key: abide", "--no-state", "-o", "/dev/null"];
        if last {
            args.push("-v");
        }
        args.push(&url);
        let out = Command::new(&me)
            .args(&args)
            .output()
            .context("cannot run abide")?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        let shown: Vec<String> = args
            .iter()
            .map(|a| {
                if a.contains(' ') {
                    format!("'{a}'")
                } else {
                    a.to_string()
                }
            })
            .collect();
        if last {
            println!("   $ abide {}", shown.join(" "));
            for line in stderr.lines() {
                println!("   {line}");
            }
        } else {
            println!("   $ abide {}   # {}", shown.join(" "), brief(&stderr));
        }
    }
    let polite = client_summary(&lab, "abide");
    println!(
        "\n3. The lab's verdict on abide: {} requests, {} rate-limited, {} early retries.",
        polite.requests, polite.rate_limited, polite.early_retries
    );
    let behaved = polite.early_retries == 0;
    if behaved {
        println!(
            "\nabide waited what the server asked (plus a little upward jitter), never less. \
             Try it on your own API: abide --help"
        );
    }
    Ok(ExitCode::from(if behaved { 0 } else { 1 }))
}

/// The loop from the seed article: fixed pause, status ignored.
fn naive_loop(url: &str) -> Result<()> {
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .new_agent();
    let start = Instant::now();
    for _ in 0..NAIVE_REQUESTS {
        let response = agent
            .get(url)
            .header("X-Client-Key", "naive-loop")
            .call()
            .context("the naive loop could not reach the lab")?;
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .map(|v| format!(" (Retry-After: {v}, ignored)"))
            .unwrap_or_default();
        println!(
            "   {:>5}ms  GET → {}{retry_after}",
            start.elapsed().as_millis(),
            response.status().as_u16()
        );
        std::thread::sleep(NAIVE_PAUSE);
    }
    Ok(())
}

/// The gist of an outcome line, for the runs that need no more.
fn brief(stderr: &str) -> String {
    let line: serde_json::Value = stderr
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_default();
    format!(
        "{} {} in {} ms, exit {}",
        line["outcome"].as_str().unwrap_or("?"),
        line["status"],
        line["elapsed_ms"],
        line["exit_code"]
    )
}

fn client_summary(lab: &Lab, client: &str) -> crate::lab::ClientSummary {
    lab.summary().clients.remove(client).unwrap_or_default()
}
