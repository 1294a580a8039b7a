//! The `abide lab` command line: its flags, the JSON lines it prints, and its exit status.

use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::json;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::flag;

use super::lock;
use super::record::{Record, Summary};
use super::script::Script;
use super::server::{Lab, LabConfig};
use crate::units::parse_duration;

/// How often the main thread looks for a signal or the end of `--duration`.
const POLL: Duration = Duration::from_millis(20);

/// Run a local rate-limited HTTP server to try a client's retry manners on.
#[derive(clap::Args, Debug, Clone)]
pub struct LabArgs {
    /// Port to listen on, on 127.0.0.1 only (0 picks a free port)
    #[arg(long, value_name = "PORT", default_value_t = 8429)]
    pub port: u16,

    /// Requests each client may make per window before it gets 429
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub limit: u32,

    /// Length of each client's fixed window, starting at its first request
    #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = parse_duration)]
    pub window: Duration,

    /// How much before its Retry-After moment a retry still counts as on time
    #[arg(long, value_name = "DURATION", default_value = "150ms", value_parser = parse_duration)]
    pub skew: Duration,

    /// Stop after this long and print the summary (default: run until Ctrl-C)
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// Answer all clients from a fixed sequence instead of the limiter; the last
    /// step repeats. Steps are comma-separated, each STATUS followed by any of
    /// :ra=SECONDS (Retry-After), :delay=DURATION, and one of :close, :truncate,
    /// :hang. Example: 429:ra=1,503,200:delay=2s
    #[arg(long, value_name = "SPEC")]
    pub script: Option<Script>,
}

impl LabArgs {
    fn config(&self) -> LabConfig {
        LabConfig {
            limit: self.limit,
            window: self.window,
            skew: self.skew,
            script: self.script.clone(),
        }
    }
}

/// The lab's defaults are its flags' defaults, written once, in `LabArgs`.
impl Default for LabConfig {
    fn default() -> LabConfig {
        use clap::{Args, FromArgMatches};
        let matches = LabArgs::augment_args(clap::Command::new("lab")).get_matches_from(["lab"]);
        LabArgs::from_arg_matches(&matches)
            .expect("the lab's defaults parse")
            .config()
    }
}

/// Runs the lab until `--duration` ends or SIGINT/SIGTERM arrives, printing
/// the URL line, one line per request, and the summary line. Exit status 1
/// means some client retried early.
pub fn run(args: &LabArgs) -> anyhow::Result<ExitCode> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [SIGINT, SIGTERM] {
        // Registered first, so it sees the flag before the first signal sets
        // it: a second signal ends a lab that is slow to stop.
        flag::register_conditional_shutdown(signal, 1, Arc::clone(&stop))?;
        flag::register(signal, Arc::clone(&stop))?;
    }
    let summary = serve(args, Arc::new(Mutex::new(io::stdout())), &stop)?;
    Ok(if summary.early_retries > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `run` without the process-wide parts (signals, stdout), so it can be tested.
fn serve<W: Write + Send + 'static>(
    args: &LabArgs,
    out: Arc<Mutex<W>>,
    stop: &AtomicBool,
) -> anyhow::Result<Summary> {
    let config = args.config();
    let printer = Arc::clone(&out);
    let on_record = Box::new(move |record: &Record| {
        // Nobody reading our output is no reason to stop serving.
        let _ = write_line(&mut *lock(&printer), &record.to_json_line());
    });
    // Held while starting, so that no request line can come before the URL line.
    let mut held = lock(&out);
    let lab = Lab::start_with(args.port, config, Some(on_record))
        .with_context(|| format!("cannot listen on 127.0.0.1:{}", args.port))?;
    write_line(&mut *held, &json!({"url": lab.url()}).to_string())?;
    drop(held);

    let deadline = args.duration.and_then(|d| Instant::now().checked_add(d));
    while !stop.load(SeqCst) && deadline.is_none_or(|deadline| Instant::now() < deadline) {
        thread::sleep(POLL);
    }
    let summary = lab.stop();
    write_line(&mut *lock(&out), &summary.to_json_line())?;
    Ok(summary)
}

/// Writes and flushes one line: whoever reads it may be waiting for just this one.
fn write_line(out: &mut impl Write, line: &str) -> io::Result<()> {
    writeln!(out, "{line}")?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpStream;

    fn output(out: &Mutex<Vec<u8>>) -> Vec<serde_json::Value> {
        String::from_utf8(lock(out).clone())
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    fn get(url: &str, key: &str) -> String {
        let mut stream = TcpStream::connect(url.trim_start_matches("http://")).unwrap();
        let request = format!("GET /x HTTP/1.1\r\nHost: lab\r\nX-Client-Key: {key}\r\n\r\n");
        stream.write_all(request.as_bytes()).unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    }

    #[test]
    fn prints_url_requests_and_summary() {
        let args = LabArgs {
            port: 0,
            limit: 1,
            window: Duration::from_secs(3),
            skew: Duration::from_millis(150),
            duration: None,
            script: None,
        };
        let out = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let lab = thread::spawn({
            let (out, stop) = (Arc::clone(&out), Arc::clone(&stop));
            move || serve(&args, out, &stop).unwrap()
        });
        let url = loop {
            if let Some(line) = output(&out).first() {
                break line["url"].as_str().unwrap().to_owned();
            }
            thread::sleep(Duration::from_millis(2));
        };
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        assert!(get(&url, "k").starts_with("HTTP/1.1 200 "));
        assert!(get(&url, "k").starts_with("HTTP/1.1 429 "));
        assert!(get(&url, "k").starts_with("HTTP/1.1 429 "), "early retry");
        stop.store(true, SeqCst);
        let summary = lab.join().unwrap();
        assert_eq!((summary.requests, summary.early_retries), (3, 1));

        let lines = output(&out);
        assert_eq!(lines.len(), 5, "{lines:?}");
        let statuses: Vec<_> = lines[1..4].iter().map(|l| l["status"].clone()).collect();
        assert_eq!(statuses, [json!(200), json!(429), json!(429)]);
        assert!(lines[1].get("early_by_ms").is_none());
        assert!(lines[3]["early_by_ms"].as_u64().unwrap() > 2500);
        assert_eq!(lines[3]["client"], "k");
        assert_eq!(lines[3]["path"], "/x");
        assert_eq!(
            lines[4],
            json!({"requests":3,"rate_limited":2,"early_retries":1,
                   "clients":{"k":{"requests":3,"rate_limited":2,"early_retries":1}}})
        );
    }

    #[test]
    fn stops_after_duration() {
        let args = LabArgs {
            port: 0,
            limit: 4,
            window: Duration::from_secs(3),
            skew: Duration::from_millis(150),
            duration: Some(Duration::from_millis(50)),
            script: Some("503".parse().unwrap()),
        };
        let out = Arc::new(Mutex::new(Vec::new()));
        let summary = serve(&args, Arc::clone(&out), &AtomicBool::new(false)).unwrap();
        assert_eq!(summary, Summary::default());
        assert_eq!(output(&out).len(), 2);
    }
}
