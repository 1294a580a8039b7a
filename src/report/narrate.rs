//! The words for what the loop is doing: the `-v` lines and the countdown
//! shown during a wait. Pure: the times and the budget left are arguments,
//! so every sentence is checked row by row without a terminal or a clock.

use std::time::Duration;

use crate::clock::rfc3339;
use crate::edge::http::Limits;
use crate::report::outcome::status_text;
use crate::rules::decision::{Policy, Wait, WaitCause};
use crate::rules::delay::{self, ServerDelay};
use crate::rules::scope::{self, BreakerNews, GateCause, Level};
use crate::units::{clock, size_text, span};

/// An error message longer than this is cut in the countdown, which must fit
/// on one terminal line next to the times.
const SHORT_ERROR: usize = 40;

/// What the run knows for its sentences, fixed for the whole run.
#[derive(Debug, Clone)]
pub struct Narrator {
    /// `host` or `host:port`, as the user typed it.
    pub host: String,
    /// The scope's name, for the circuit breaker's news.
    pub scope: String,
    pub policy: Policy,
    /// `-m`: an attempt given less than this was cut by the budget.
    pub max_time: Option<Duration>,
}

/// How an attempt ended, as far as the sentences care.
#[derive(Debug, Clone)]
pub enum Ended {
    Answered {
        status: u16,
        server: Option<ServerDelay>,
    },
    Failed {
        error: String,
    },
}

/// Why a wait lasts what it lasts: for `-v`, the countdown's neighbours and
/// the audit log alike.
pub fn wait_reason(wait: &Wait, policy: &Policy, scope: &str) -> String {
    let subject = crate::report::outcome::scope_subject(scope);
    match wait.cause {
        WaitCause::Server { server, honoured } => {
            let floor = if honoured > server.delay {
                format!(", raised to the {} floor", plain(policy.floor))
            } else {
                String::new()
            };
            let jitter = wait.duration.saturating_sub(honoured);
            // Below a millisecond it would read "+ 0ms jitter".
            let jitter = if jitter < Duration::from_millis(1) {
                String::new()
            } else {
                format!(", + {} jitter", span(jitter))
            };
            format!(
                "the server asked {} ({}){floor}{jitter}",
                plain(server.delay),
                server.source.header()
            )
        }
        WaitCause::Backoff { .. } if let Some(fixed) = policy.fixed_delay => {
            format!("no server delay, --retry-delay {}", plain(fixed))
        }
        WaitCause::Backoff { n } => {
            let ceiling = delay::backoff(n, policy.backoff, policy.backoff_max, 1.0);
            format!(
                "no server delay, backoff step {n} (random, up to {})",
                plain(ceiling)
            )
        }
        WaitCause::Scope {
            cause: scope::Wait::Rate,
        } => format!("the --rate slot of {subject}"),
        WaitCause::Scope {
            cause: scope::Wait::Gate(GateCause::RetryAfter),
        } => format!("the gate of {subject}, closed by a Retry-After, plus jitter"),
        WaitCause::Scope {
            cause: scope::Wait::Gate(GateCause::QuotaExhausted),
        } => format!("the gate of {subject}, until its rate-limit quota resets, plus jitter"),
        WaitCause::Scope {
            cause: scope::Wait::Gate(GateCause::Backoff),
        } => format!(
            "the gate of {subject}, closed for the backoff after a 429 or 503 without a delay, plus jitter"
        ),
        WaitCause::Scope {
            cause: scope::Wait::HalfOpen(level),
        } => format!(
            "{}, until it lets a probe through, plus jitter",
            open_breaker(level, &subject)
        ),
        WaitCause::Scope {
            cause: scope::Wait::Probe(level),
        } => format!(
            "{}, which another run is probing: until its probe ends, at most this long",
            open_breaker(level, &subject)
        ),
    }
}

fn open_breaker(level: Level, subject: &str) -> String {
    match level {
        Level::Scope => format!("the open circuit breaker of {subject}"),
        Level::Endpoint => "the open circuit breaker of this request's endpoint".into(),
    }
}

impl Narrator {
    /// `-v`: one line when an attempt starts, so that a slow or hanging one
    /// shows what it is waiting for.
    pub fn sending(&self, attempt: u32, method: &str, limits: &Limits) -> String {
        let limit = match limits.total {
            Some(total) => format!("{} at most", span(total)),
            None => format!(
                "an answer within {}, then the body for as long as it flows",
                span(limits.head)
            ),
        };
        format!(
            "attempt {attempt}/{}: {method} to {}, {limit}",
            self.policy.attempts, self.host,
        )
    }

    /// `-v`: the answer continues a body that broke off.
    pub fn resumed(&self, attempt: u32, offset: u64, total: Option<u64>) -> String {
        let of = total.map_or(String::new(), |t| format!(" of {}", size_text(t)));
        format!(
            "attempt {attempt}/{}: resuming the body at {}{of}; {} not downloaded again",
            self.policy.attempts,
            size_text(offset),
            size_text(offset)
        )
    }

    /// `-v`: one line when an attempt ends. `took` is the time to the answer's
    /// headers (or to the failure); `limit` the time the attempt was given.
    pub fn attempt(&self, attempt: u32, ended: &Ended, took: Duration, limit: Duration) -> String {
        let of = self.policy.attempts;
        match *ended {
            Ended::Answered { status, server } => {
                let delay = server.map_or(String::new(), |s| {
                    format!(", {} {}", s.source.header(), plain(s.delay))
                });
                format!(
                    "attempt {attempt}/{of}: {} from {} in {}{delay}",
                    status_text(status),
                    self.host,
                    span(took)
                )
            }
            Ended::Failed { ref error } => {
                // It ran to its limit, which the budget had made shorter.
                let cut = if took >= limit.saturating_sub(Duration::from_millis(100))
                    && self.max_time.is_none_or(|max| limit < max)
                {
                    format!(
                        " (the attempt had {}, what was left of the budget)",
                        span(limit)
                    )
                } else {
                    String::new()
                };
                format!(
                    "attempt {attempt}/{of}: failed after {}: {error}{cut}",
                    span(took)
                )
            }
        }
    }

    /// `-v`: one line when a wait starts: how long, why, and what is left.
    pub fn wait(&self, wait: &Wait, retry: u32, budget_left: Duration) -> String {
        let why = wait_reason(wait, &self.policy, &self.scope);
        format!(
            "waiting {} before attempt {}/{}: {why}; {} of the budget left",
            span(wait.duration),
            retry + 1,
            self.policy.attempts,
            span(budget_left)
        )
    }

    /// The countdown's fixed part, before the ticking times: what the last
    /// attempt came to, if there was one, and why the wait lasts what it
    /// lasts, e.g. `429 from api.example.com · Retry-After 20s`.
    pub fn countdown_cause(&self, ended: Option<&Ended>, wait: &Wait) -> String {
        let what = match ended {
            Some(Ended::Answered { status, .. }) => format!("{status} from {} · ", self.host),
            Some(Ended::Failed { error }) => format!("{} · ", shorten(error, SHORT_ERROR)),
            None => String::new(),
        };
        let why = match wait.cause {
            WaitCause::Server { server, honoured } if honoured > server.delay => format!(
                "{} {}, floor {}",
                server.source.header(),
                plain(server.delay),
                plain(honoured)
            ),
            WaitCause::Server { server, .. } => {
                format!("{} {}", server.source.header(), plain(server.delay))
            }
            WaitCause::Backoff { .. } => "backoff".to_string(),
            WaitCause::Scope { cause } => match cause {
                scope::Wait::Gate(GateCause::RetryAfter) => "scope gate (Retry-After)",
                scope::Wait::Gate(GateCause::QuotaExhausted) => "scope gate (quota used up)",
                scope::Wait::Gate(GateCause::Backoff) => "scope gate (backoff)",
                scope::Wait::Rate => "scope --rate",
                scope::Wait::HalfOpen(Level::Scope) => "scope circuit breaker open",
                scope::Wait::HalfOpen(Level::Endpoint) => "endpoint circuit breaker open",
                scope::Wait::Probe(_) => "another run is probing the circuit breaker",
            }
            .to_string(),
        };
        format!("{what}{why}")
    }

    /// `-v`: a circuit breaker of the scope changed state.
    pub fn breaker(&self, news: BreakerNews) -> String {
        let of = |level| match level {
            Level::Scope => format!("circuit breaker of scope {}", self.scope),
            Level::Endpoint => format!(
                "circuit breaker of this endpoint (method and path) in scope {}",
                self.scope
            ),
        };
        match news {
            BreakerNews::Opened { until, level } => format!(
                "{} opened until {}",
                of(level),
                rfc3339(std::time::UNIX_EPOCH + Duration::from_millis(until))
            ),
            BreakerNews::Closed { level } => format!("{} closed", of(level)),
        }
    }

    /// `-v`: this attempt probes a half-open breaker.
    pub fn probing(&self, level: Level) -> String {
        let of = match level {
            Level::Scope => format!("scope {}", self.scope),
            Level::Endpoint => format!("this endpoint in scope {}", self.scope),
        };
        format!("circuit breaker of {of} half-open: this attempt is its probe")
    }

    /// The countdown's ticking part: `attempt 2/4 in 13.4s · budget 41s left`.
    pub fn countdown_times(
        &self,
        next_attempt: u32,
        wait_left: Duration,
        budget_left: Duration,
    ) -> String {
        format!(
            "attempt {next_attempt}/{} in {} · budget {} left",
            self.policy.attempts,
            clock(wait_left, 1),
            clock(budget_left, 0)
        )
    }
}

/// A duration as a server or a flag stated it: `3s`, `1.5s`, `0.25s`.
fn plain(d: Duration) -> String {
    let text = format!("{:.3}", d.as_secs_f64());
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}s")
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let kept: String = text.chars().take(max - 1).collect();
        format!("{}…", kept.trim_end())
    }
}

/// `-v`: what a `--check` answer said of the write.
pub fn checked(status: Option<u16>, settlement: crate::rules::decision::Settlement) -> String {
    use crate::rules::decision::Settlement;
    let answer = status.map_or("no answer".to_string(), crate::report::outcome::status_text);
    let meaning = match settlement {
        Settlement::Happened => "the write happened",
        Settlement::NotHappened => "the write did not happen; it may go again",
        Settlement::Unclear => "neither yes nor no: a person must decide",
    };
    format!("check: {answer}: {meaning}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::delay::DelaySource;

    const S: fn(u64) -> Duration = Duration::from_secs;
    const MS: fn(u64) -> Duration = Duration::from_millis;

    fn limits(total: Option<Duration>) -> Limits {
        Limits {
            head: S(60),
            total,
            connect: S(10),
            stall: S(30),
        }
    }

    fn narrator() -> Narrator {
        Narrator {
            host: "api.example.com".into(),
            scope: "https://api.example.com:443".into(),
            policy: Policy::default(),
            max_time: Some(S(30)),
        }
    }

    #[test]
    fn sending() {
        assert_eq!(
            narrator().sending(2, "POST", &limits(Some(S(30)))),
            "attempt 2/4: POST to api.example.com, 30.0s at most"
        );
        assert_eq!(
            narrator().sending(1, "GET", &limits(None)),
            "attempt 1/4: GET to api.example.com, an answer within 1m00s, \
             then the body for as long as it flows"
        );
        assert_eq!(
            narrator().resumed(2, 10 << 20, Some(20 << 20)),
            "attempt 2/4: resuming the body at 10.0 MiB of 20.0 MiB; 10.0 MiB not downloaded again"
        );
    }

    fn server(ms: u64) -> ServerDelay {
        ServerDelay {
            delay: MS(ms),
            source: DelaySource::RetryAfterSeconds,
        }
    }

    fn server_wait(delay_ms: u64, honoured_ms: u64, total_ms: u64) -> Wait {
        Wait {
            duration: MS(total_ms),
            cause: WaitCause::Server {
                server: server(delay_ms),
                honoured: MS(honoured_ms),
            },
        }
    }

    #[test]
    fn durations() {
        for (d, text) in [
            (MS(4), "4ms"),
            (MS(999), "999ms"),
            (MS(3210), "3.21s"),
            (MS(56_840), "56.8s"),
            (S(125), "2m05s"),
        ] {
            assert_eq!(span(d), text, "{d:?}");
        }
        for (d, text) in [(S(3), "3s"), (MS(1500), "1.5s"), (MS(250), "0.25s")] {
            assert_eq!(plain(d), text);
        }
        for (d, decimals, text) in [
            (MS(13_440), 1, "13.4s"),
            (MS(41_900), 0, "42s"),
            (S(59), 0, "59s"),
            (S(61), 1, "1m01s"),
            (S(3725), 0, "1h02m"),
        ] {
            assert_eq!(clock(d, decimals), text);
        }
        assert_eq!(shorten("connection refused", 40), "connection refused");
        assert_eq!(shorten("abcdef ghij", 8), "abcdef…");
    }

    #[test]
    fn attempt_lines() {
        let n = narrator();
        let answered = Ended::Answered {
            status: 429,
            server: Some(server(3000)),
        };
        assert_eq!(
            n.attempt(1, &answered, MS(12), S(30)),
            "attempt 1/4: 429 Too Many Requests from api.example.com in 12ms, Retry-After 3s"
        );
        let ok = Ended::Answered {
            status: 200,
            server: None,
        };
        assert_eq!(
            n.attempt(2, &ok, MS(3), S(30)),
            "attempt 2/4: 200 OK from api.example.com in 3ms"
        );
        let failed = Ended::Failed {
            error: "connection refused".into(),
        };
        assert_eq!(
            n.attempt(1, &failed, MS(2), S(30)),
            "attempt 1/4: failed after 2ms: connection refused"
        );
        let timeout = Ended::Failed {
            error: "timeout: the attempt ran out of time".into(),
        };
        assert_eq!(
            n.attempt(3, &timeout, MS(12_300), MS(12_300)),
            "attempt 3/4: failed after 12.3s: timeout: the attempt ran out of time \
             (the attempt had 12.3s, what was left of the budget)"
        );
    }

    #[test]
    fn wait_lines_say_why() {
        let n = narrator();
        assert_eq!(
            n.wait(&server_wait(3000, 3000, 3210), 1, MS(56_800)),
            "waiting 3.21s before attempt 2/4: the server asked 3s (Retry-After), \
             + 210ms jitter; 56.8s of the budget left"
        );
        assert_eq!(
            n.wait(&server_wait(0, 1000, 1000), 2, S(50)),
            "waiting 1.00s before attempt 3/4: the server asked 0s (Retry-After), \
             raised to the 1s floor; 50.0s of the budget left"
        );
        assert_eq!(
            n.wait(&server_wait(2000, 2000, 2000), 1, S(60)),
            n.wait(
                &Wait {
                    duration: Duration::from_micros(2_000_400),
                    ..server_wait(2000, 2000, 2000)
                },
                1,
                S(60)
            ),
            "jitter under a millisecond is not worth a word"
        );
        let backoff = Wait {
            duration: MS(700),
            cause: WaitCause::Backoff { n: 2 },
        };
        assert_eq!(
            n.wait(&backoff, 2, S(59)),
            "waiting 700ms before attempt 3/4: no server delay, backoff step 2 \
             (random, up to 1s); 59.0s of the budget left"
        );
    }

    #[test]
    fn breaker_waits_and_news_say_which_breaker() {
        let n = narrator();
        let wait = |cause| Wait {
            duration: MS(1_050),
            cause: WaitCause::Scope { cause },
        };
        assert_eq!(
            n.wait(&wait(scope::Wait::HalfOpen(Level::Scope)), 5, S(50)),
            "waiting 1.05s before attempt 6/4: the open circuit breaker of the API at \
             https://api.example.com:443, until it lets a probe through, plus jitter; \
             50.0s of the budget left"
        );
        assert_eq!(
            n.wait(&wait(scope::Wait::Probe(Level::Endpoint)), 0, S(50)),
            "waiting 1.05s before attempt 1/4: the open circuit breaker of this request's \
             endpoint, which another run is probing: until its probe ends, at most this long; \
             50.0s of the budget left"
        );
        assert_eq!(
            n.countdown_cause(None, &wait(scope::Wait::HalfOpen(Level::Endpoint))),
            "endpoint circuit breaker open"
        );
        assert_eq!(
            n.breaker(BreakerNews::Opened {
                until: 1_796_112_000_000,
                level: Level::Endpoint
            }),
            "circuit breaker of this endpoint (method and path) in scope \
             https://api.example.com:443 opened until 2026-12-01T08:00:00.000Z"
        );
        assert_eq!(
            n.breaker(BreakerNews::Closed {
                level: Level::Scope
            }),
            "circuit breaker of scope https://api.example.com:443 closed"
        );
    }

    #[test]
    fn countdown() {
        let n = narrator();
        let answered = Ended::Answered {
            status: 429,
            server: Some(server(20_000)),
        };
        let line = format!(
            "{} · {}",
            n.countdown_cause(Some(&answered), &server_wait(20_000, 20_000, 20_400)),
            n.countdown_times(2, MS(13_440), MS(41_200))
        );
        assert_eq!(
            line,
            "429 from api.example.com · Retry-After 20s · attempt 2/4 in 13.4s · budget 41s left"
        );
        assert_eq!(
            n.countdown_cause(Some(&answered), &server_wait(0, 1000, 1050)),
            "429 from api.example.com · Retry-After 0s, floor 1s"
        );
        let failed = Ended::Failed {
            error: "timeout: no answer from the server in time".into(),
        };
        let backoff = Wait {
            duration: MS(300),
            cause: WaitCause::Backoff { n: 1 },
        };
        assert_eq!(
            n.countdown_cause(Some(&failed), &backoff),
            "timeout: no answer from the server in t… · backoff"
        );
        assert_eq!(n.countdown_cause(None, &backoff), "backoff");
    }
}
