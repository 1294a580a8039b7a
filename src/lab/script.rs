//! Scripted answers: a fixed sequence of responses that replaces the limiter,
//! parsed from `--script SPEC` or built in code by a test.
//!
//! SPEC is comma-separated steps, each `STATUS` followed by any of `:ra=SECONDS`,
//! `:delay=DURATION` and one fault (`:close`, `:truncate`, `:hang`), for example
//! `429:ra=1,503,200:delay=2s`. The last step repeats forever.

use std::str::FromStr;
use std::time::Duration;

use crate::units::parse_duration;

/// A way for an answer to go wrong on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// Read the request, then drop the connection without a byte of answer.
    Close,
    /// Declare a longer Content-Length than the body sent, then close.
    Truncate,
    /// Read the request and never answer, holding the connection until the lab stops.
    Hang,
}

/// One scripted answer, built with `Step::new(status)` and the methods below.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    /// `None` means the default `{"status":STATUS}` JSON body.
    pub(crate) body: Option<Vec<u8>>,
    pub(crate) delay: Duration,
    pub(crate) fault: Option<Fault>,
}

impl Step {
    /// An answer with this status and the default JSON body. The status is not
    /// checked, so that tests can send clients the nonsense real servers do.
    pub fn new(status: u16) -> Step {
        Step {
            status,
            headers: Vec::new(),
            body: None,
            delay: Duration::ZERO,
            fault: None,
        }
    }

    /// Adds a header, sent exactly as given (several with one name are all sent).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Step {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Replaces the default JSON body (no Content-Type is added for it).
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Step {
        self.body = Some(body.into());
        self
    }

    /// Waits this long after reading the request before answering.
    pub fn delay(mut self, delay: Duration) -> Step {
        self.delay = delay;
        self
    }

    /// Reads the request, then drops the connection without answering.
    pub fn close(self) -> Step {
        self.fault(Fault::Close)
    }

    /// Sends the headers with a Content-Length larger than the body that
    /// follows, then closes: the body breaks off.
    pub fn truncate(self) -> Step {
        self.fault(Fault::Truncate)
    }

    /// Reads the request and never answers; the connection is held until the lab stops.
    pub fn hang(self) -> Step {
        self.fault(Fault::Hang)
    }

    fn fault(mut self, fault: Fault) -> Step {
        self.fault = Some(fault);
        self
    }
}

/// The sequence of answers shared by all clients; the last step repeats forever.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    steps: Vec<Step>,
}

impl Script {
    /// # Panics
    /// If `steps` is empty: there would be nothing to answer with.
    pub fn new(steps: Vec<Step>) -> Script {
        assert!(!steps.is_empty(), "a script needs at least one step");
        Script { steps }
    }

    /// The answer to the `n`th request (counting from 0).
    pub(crate) fn step(&self, n: usize) -> &Step {
        &self.steps[n.min(self.steps.len() - 1)]
    }
}

impl FromStr for Script {
    type Err = String;

    fn from_str(spec: &str) -> Result<Script, String> {
        let steps = spec
            .split(',')
            .map(str::trim)
            .enumerate()
            .map(|(i, text)| {
                parse_step(text).map_err(|why| format!("step {} (`{text}`): {why}", i + 1))
            })
            .collect::<Result<Vec<_>, _>>()?;
        // `split` yields at least one (possibly empty, hence rejected) step.
        Ok(Script::new(steps))
    }
}

fn parse_step(text: &str) -> Result<Step, String> {
    let mut parts = text.split(':');
    let status = parts.next().unwrap_or_default();
    let status = Some(status)
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|s| s.parse::<u16>().ok())
        .filter(|s| (100..=599).contains(s))
        .ok_or("status must be a number between 100 and 599")?;
    let mut step = Step::new(status);
    let mut seen = Vec::new();
    for option in parts {
        let (key, value) = match option.split_once('=') {
            Some((key, value)) => (key, Some(value)),
            None => (option, None),
        };
        // The faults exclude each other, so they share one slot.
        let slot = if value.is_none() { "fault" } else { key };
        if seen.contains(&slot) {
            return Err(match slot {
                "fault" => "close, truncate and hang exclude each other".to_owned(),
                _ => format!("`{key}` is given twice"),
            });
        }
        seen.push(slot);
        step = match (key, value) {
            ("ra", Some(seconds)) => {
                let plain = seconds.bytes().all(|b| b.is_ascii_digit() || b == b'.');
                if !plain || parse_duration(seconds).is_err() {
                    return Err(format!(
                        "ra must be a number of seconds, e.g. ra=1 or ra=0.5, not `{seconds}`"
                    ));
                }
                step.header("Retry-After", seconds)
            }
            ("delay", Some(delay)) => step.delay(parse_duration(delay)?),
            ("close", None) => step.close(),
            ("truncate", None) => step.truncate(),
            ("hang", None) => step.hang(),
            _ => {
                return Err(format!(
                    "unknown option `{option}` (use ra=SECONDS, delay=DURATION, close, truncate or hang)"
                ));
            }
        };
    }
    Ok(step)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_example() {
        let script: Script = "429:ra=1,503,200:delay=2s".parse().unwrap();
        let expected = vec![
            Step::new(429).header("Retry-After", "1"),
            Step::new(503),
            Step::new(200).delay(Duration::from_secs(2)),
        ];
        assert_eq!(script.steps, expected);
    }

    #[test]
    fn parses_every_option() {
        let script: Script = " 429:ra=0.50:delay=150ms , 200:close,206:truncate,200:hang"
            .parse()
            .unwrap();
        let expected = vec![
            // Retry-After is written as given, trailing zero and all.
            Step::new(429)
                .header("Retry-After", "0.50")
                .delay(Duration::from_millis(150)),
            Step::new(200).close(),
            Step::new(206).truncate(),
            Step::new(200).hang(),
        ];
        assert_eq!(script.steps, expected);
    }

    #[test]
    fn last_step_repeats() {
        let script: Script = "503,200".parse().unwrap();
        let statuses: Vec<u16> = (0..4).map(|n| script.step(n).status).collect();
        assert_eq!(statuses, [503, 200, 200, 200]);
    }

    #[test]
    fn errors_point_at_the_bad_step() {
        let cases = [
            (
                "429,5o3",
                "step 2 (`5o3`): status must be a number between 100 and 599",
            ),
            (
                "99",
                "step 1 (`99`): status must be a number between 100 and 599",
            ),
            (
                "600",
                "step 1 (`600`): status must be a number between 100 and 599",
            ),
            (
                "+200",
                "step 1 (`+200`): status must be a number between 100 and 599",
            ),
            (
                "200,",
                "step 2 (``): status must be a number between 100 and 599",
            ),
            (
                "",
                "step 1 (``): status must be a number between 100 and 599",
            ),
            (
                "200,429:ra=soon",
                "step 2 (`429:ra=soon`): ra must be a number of seconds, e.g. ra=1 or ra=0.5, not `soon`",
            ),
            (
                "429:ra=-1",
                "step 1 (`429:ra=-1`): ra must be a number of seconds, e.g. ra=1 or ra=0.5, not `-1`",
            ),
            (
                "429:ra=1:ra=2",
                "step 1 (`429:ra=1:ra=2`): `ra` is given twice",
            ),
            (
                "200:close:hang",
                "step 1 (`200:close:hang`): close, truncate and hang exclude each other",
            ),
            (
                "200:explode",
                "step 1 (`200:explode`): unknown option `explode` (use ra=SECONDS, delay=DURATION, close, truncate or hang)",
            ),
            (
                "200:close=1",
                "step 1 (`200:close=1`): unknown option `close=1` (use ra=SECONDS, delay=DURATION, close, truncate or hang)",
            ),
        ];
        for (spec, error) in cases {
            assert_eq!(spec.parse::<Script>().unwrap_err(), error, "{spec}");
        }
        let bad_delay = "200:delay=2x".parse::<Script>().unwrap_err();
        assert!(
            bad_delay.starts_with("step 1 (`200:delay=2x`): unknown unit `x`"),
            "{bad_delay}"
        );
    }

    #[test]
    #[should_panic(expected = "at least one step")]
    fn an_empty_script_is_refused() {
        Script::new(Vec::new());
    }
}
