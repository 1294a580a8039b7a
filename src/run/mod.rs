//! The retry loop: send, classify, decide, wait, until the decision table
//! says stop. It owns a clock and a sleeper so that tests drive it without
//! sleeping; everything it decides comes from `decision`.

pub mod record;

use std::io::{self, ErrorKind, Read};
use std::time::{Duration, Instant};

use crate::clock::{Clock, Sleeper};
use crate::edge::http::{self, Failure, Limits, Reply, Transport};
use crate::edge::sink::{DeliverError, Sink, Start};
use crate::exit::Kind;
use crate::exit::Signal;
use crate::redact::Redactor;
use crate::rules::attempt::{Observation, Phase};
use crate::rules::contract;
use crate::rules::decision::{self, Draw, Next, Policy, Progress, Replay, StopWhy, Verdict, Wait};
use crate::rules::delay::{self, ServerDelay};
use crate::rules::ratelimit;
use crate::rules::resume::{self, Continuation};
use crate::rules::scope::{self, BreakerNews, Lesson};
use crate::run::record::{Attempt, Ending, Record};
use crate::state::Slot;
use crate::state::{Admit, Learned, Shared};
use crate::units::size_text;

/// How much of a failed attempt's body is kept (the outcome shows 256 bytes).
const ERROR_BODY_KEPT: u64 = 256;

/// What the loop is doing, for `-v` narration and the progress display.
#[derive(Debug)]
pub enum Event<'a> {
    Sending {
        attempt: u32,
        limits: Limits,
    },
    Answered {
        attempt: u32,
        status: u16,
        server: Option<ServerDelay>,
        /// The answer's head as `-i` writes it, for `-v`.
        head: &'a str,
    },
    Failed {
        attempt: u32,
        error: &'a str,
    },
    /// The answer continues the body where the bytes held end.
    Resumed {
        attempt: u32,
        offset: u64,
        total: Option<u64>,
    },
    Waiting {
        wait: &'a Wait,
        retry: u32,
    },
    Breaker(BreakerNews),
}

pub struct Loop<'a> {
    pub policy: &'a Policy,
    pub replay: Replay,
    /// `-m`: a hard limit on each attempt, body included.
    pub max_time: Option<Duration>,
    pub connect_timeout: Duration,
    pub stall: Duration,
    /// A 2xx body that breaks off may be continued with a range request
    /// (a GET that asks for no range of its own).
    pub resumable: bool,
    pub redactor: &'a Redactor,
    /// The scope state shared with other processes; `None` with `--no-state`.
    pub shared: Option<&'a Shared>,
    /// `--require` pointers a 2xx body must satisfy.
    pub require: &'a [String],
    /// How much of a failed answer's body to keep (the agent object shows it).
    pub keep_body: u64,
}

/// The largest body `--require` will hold in memory to check.
const CONTRACT_LIMIT: u64 = 64 << 20;

/// What an attempt came to: a verdict of the decision table, or a failure
/// of abide's own (the body could not be written).
enum Judged {
    Verdict(Verdict),
    Internal(String),
}

/// Why a 2xx body was not delivered whole.
enum Undelivered {
    /// It broke off or came back mismatched; `phase` says whether another
    /// attempt can go on cleanly.
    Broken { phase: Phase, message: String },
    /// It decoded to far more than it weighed (`--max-ratio`).
    TooDense(String),
    /// The destination refused the bytes.
    Write(io::Error),
}

/// One attempt, judged, with what it teaches the scope.
struct Attempted {
    judged: Judged,
    observation: Observation,
    server: Option<ServerDelay>,
    /// Time until the rate-limit quota resets, when the answer says it is used up.
    quota: Option<Duration>,
    attempt: Attempt,
}

/// How a run ends early, before `Run::finish` turns it into a record.
type End = (Ending, Option<Duration>);

/// The run's parts that change as it goes.
struct Run {
    start: Instant,
    attempts: Vec<Attempt>,
    waited: Duration,
    ignored_delays: Vec<String>,
    last_error: Option<String>,
    /// The last answer's headers, and the kept start of its body when it failed.
    headers: Vec<(String, String)>,
    /// The last answer's head, as `-i` and `-D` write it.
    head: String,
    /// From sending the last attempt to its answer's head (zero without one).
    head_after: Duration,
    failed_body: Vec<u8>,
    failed_body_truncated: bool,
    /// Waits the scope imposed before attempts, for the outcome's reason.
    scope_waits: Vec<(Duration, scope::Wait)>,
    /// Where the next attempt asks the body to continue.
    resume: Option<resume::From>,
    /// Bytes continued rather than downloaded again.
    resumed: u64,
    /// The whole body's size, when the answer says it.
    expected: Option<u64>,
}

/// The longest pause between two looks for a free concurrency slot.
const SLOT_POLL_MAX: Duration = Duration::from_millis(20);
/// The longest pause between two looks at another run's probe: a herd of
/// waiters reads the state 20 times a second each, and learns of the
/// probe's result within 50 ms.
const PROBE_POLL_MAX: Duration = Duration::from_millis(50);

impl Loop<'_> {
    pub fn run(
        &self,
        transport: &mut dyn Transport,
        sink: &mut Sink,
        clock: &dyn Clock,
        sleeper: &mut dyn Sleeper,
        draw: &mut dyn FnMut() -> f64,
        on_event: &mut dyn FnMut(Event),
    ) -> Record {
        let mut run = Run {
            start: clock.now(),
            attempts: Vec::new(),
            waited: Duration::ZERO,
            ignored_delays: Vec::new(),
            last_error: None,
            headers: Vec::new(),
            head: String::new(),
            head_after: Duration::ZERO,
            failed_body: Vec::new(),
            failed_body_truncated: false,
            scope_waits: Vec::new(),
            // `-C -`: the bytes already in the file are the body's start.
            resume: (self.resumable && sink.held() > 0).then(|| resume::From {
                offset: sink.held(),
                if_range: None,
            }),
            resumed: 0,
            expected: None,
        };
        loop {
            let number = run.attempts.len() as u32 + 1;
            let slot = match self.pass_scope(number, clock, sleeper, draw, &mut run, on_event) {
                Ok(slot) => slot,
                Err((ending, not_before)) => return run.finish(clock, ending, not_before),
            };
            let left = match decision::attempt_room(self.policy, clock.now() - run.start) {
                Ok(left) => left,
                Err(stop) => return run.finish(clock, Ending::Decided(stop.why), stop.not_before),
            };
            let limits = self.limits(left);
            on_event(Event::Sending {
                attempt: number,
                limits,
            });
            let sent = clock.now();
            run.head_after = Duration::ZERO;
            let attempted = match transport.send(limits, run.resume.as_ref()) {
                Ok(reply) => {
                    run.head_after = clock.now() - sent;
                    self.answered(reply, sink, clock, &mut run, number, on_event)
                }
                Err(failure) => self.failed(failure, clock, &mut run, number, on_event),
            };
            // A signal cuts the request or the download in flight; whatever
            // that looked like, the run was interrupted.
            if let Some(signal) = sleeper.cancelled() {
                let mut attempt = attempted.attempt;
                attempt.error = Some("interrupted".into());
                run.attempts.push(attempt);
                return run.finish(clock, Ending::Cancelled(signal), None);
            }
            // Publish first, then sleep (and only then free the slot): other
            // processes of the scope learn of a Retry-After before this one
            // waits on it, and before anyone else can send.
            let learned = self.teach_scope(&attempted, on_event);
            drop(slot);
            let Attempted {
                judged,
                server,
                attempt,
                ..
            } = attempted;
            run.attempts.push(attempt);
            let verdict = match judged {
                Judged::Verdict(verdict) => verdict,
                Judged::Internal(message) => {
                    return run.finish(clock, Ending::Internal(message), None);
                }
            };
            let progress = Progress {
                attempt: number,
                elapsed: clock.now() - run.start,
            };
            let next = decision::next_step(verdict, server, progress, self.policy, Draw(draw()));
            match decision::opened_breaker(next, learned.opened) {
                Next::Stop(stop) => {
                    return run.finish(clock, Ending::Decided(stop.why), stop.not_before);
                }
                Next::Wait(wait) => {
                    if let Some(last) = run.attempts.last_mut() {
                        last.wait = Some(wait.duration);
                    }
                    on_event(Event::Waiting {
                        wait: &wait,
                        retry: number,
                    });
                    let before = clock.now();
                    if let Err(signal) = run.sleep(wait.duration, clock, sleeper) {
                        // Cut short during the server's delay: the caller
                        // still must not come back before it ends.
                        let not_before = decision::cut_wait(&wait, clock.now() - before);
                        return run.finish(clock, Ending::Cancelled(signal), not_before);
                    }
                }
            }
        }
    }

    /// The limits of an attempt that has `left` of the budget. The head of
    /// the answer is always due within the budget; a body only within a
    /// budget the user gave, or within `-m`.
    fn limits(&self, left: Duration) -> Limits {
        let total = match (self.max_time, self.policy.hard_budget) {
            (Some(max), true) => Some(max.min(left)),
            (None, true) => Some(left),
            (max, false) => max,
        };
        Limits {
            head: total.unwrap_or(left).min(left),
            total,
            connect: self.connect_timeout,
            stall: self.stall,
        }
    }

    /// Before attempt `number`: the breaker, the gate and `--rate`, then a
    /// concurrency slot. Waits as the scope says, or ends the run.
    fn pass_scope(
        &self,
        number: u32,
        clock: &dyn Clock,
        sleeper: &mut dyn Sleeper,
        draw: &mut dyn FnMut() -> f64,
        run: &mut Run,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<Option<Slot>, End> {
        let Some(shared) = self.shared else {
            return Ok(None);
        };
        // A --rate slot is reserved once per attempt; the breaker and the
        // gate are asked again after every wait, since another process may
        // have closed them in the meantime.
        let mut rate_reserved = false;
        loop {
            let elapsed = clock.now() - run.start;
            let left = self.policy.budget.saturating_sub(elapsed);
            let patience = self.policy.max_wait.map_or(left, |m| m.min(left));
            let (cause, wait, own) = match shared.admit(patience, !rate_reserved) {
                Admit::Go => {
                    let slot = self.take_slot(shared, clock, sleeper, run)?;
                    // Waiting for the slot, the gate may have closed again.
                    if slot.is_none() || shared.gate_open() {
                        return Ok(slot);
                    }
                    continue;
                }
                Admit::Wait { wait, cause, own } => (cause, wait, own),
                Admit::Unavailable(e) => {
                    let why = Ending::Internal(format!(
                        "the shared state is unavailable ({e}) and --state-required is set"
                    ));
                    return Err((why, None));
                }
            };
            match decision::scope_step(cause, wait, elapsed, self.policy, Draw(draw())) {
                Next::Stop(stop) => {
                    return Err((Ending::Decided(stop.why), stop.not_before));
                }
                Next::Wait(wait) => {
                    on_event(Event::Waiting {
                        wait: &wait,
                        retry: number - 1,
                    });
                    let before = clock.now();
                    let slept = match cause {
                        scope::Wait::Probe(_) => {
                            self.behind_probe(shared, wait.duration, clock, sleeper, run)
                        }
                        _ => run.sleep(wait.duration, clock, sleeper),
                    };
                    let waited = clock.now() - before;
                    // A run's own Retry-After, met again at the gate, is no
                    // news: its wait is already in the history.
                    if !own {
                        run.note_scope_wait(waited, cause);
                    }
                    if let Err(signal) = slept {
                        // The gate, or the open breaker, still holds for
                        // whoever calls next.
                        let not_before = decision::cut_scope_wait(cause, wait.duration, waited);
                        return Err((Ending::Cancelled(signal), not_before));
                    }
                    rate_reserved |= cause == scope::Wait::Rate;
                }
            }
        }
    }

    /// Waits behind another run's half-open probe, for at most `limit`:
    /// until the probe ends, which is when its result (the breaker closed or
    /// open again) tells this run what to do.
    fn behind_probe(
        &self,
        shared: &Shared,
        limit: Duration,
        clock: &dyn Clock,
        sleeper: &mut dyn Sleeper,
        run: &mut Run,
    ) -> Result<(), Signal> {
        let start = clock.now();
        let mut pause = Duration::from_millis(1);
        loop {
            let left = limit.saturating_sub(clock.now() - start);
            if left.is_zero() || !shared.probed_by_another() {
                return Ok(());
            }
            run.sleep(pause.min(left), clock, sleeper)?;
            pause = (pause * 2).min(PROBE_POLL_MAX);
        }
    }

    /// A `--max-concurrent` slot of the scope, waited for within the budget;
    /// `None` when there is no limit.
    fn take_slot(
        &self,
        shared: &Shared,
        clock: &dyn Clock,
        sleeper: &mut dyn Sleeper,
        run: &mut Run,
    ) -> Result<Option<Slot>, End> {
        let mut pause = Duration::from_millis(1);
        loop {
            // The slot is held for the attempt; if this process dies, its
            // lease ends a second after the attempt would have.
            let left = self.policy.budget.saturating_sub(clock.now() - run.start);
            let lease = self.limits(left).head + Duration::from_secs(1);
            match shared.try_slot(lease) {
                None => return Ok(None),
                Some(Some(slot)) => return Ok(Some(slot)),
                Some(None) => {}
            }
            if left <= pause {
                let why = StopWhy::WaitOverBudget { wait: pause, left };
                return Err((Ending::Decided(why), None));
            }
            run.sleep(pause, clock, sleeper)
                .map_err(|signal| (Ending::Cancelled(signal), None))?;
            pause = (pause * 2).min(SLOT_POLL_MAX);
        }
    }

    /// What the scope learns from an attempt: a Retry-After or a used-up
    /// quota closes its gate; failures count towards its breaker.
    fn teach_scope(&self, attempted: &Attempted, on_event: &mut dyn FnMut(Event)) -> Learned {
        let Some(shared) = self.shared else {
            return Learned::default();
        };
        let lesson = Lesson {
            health: scope::health(attempted.observation, &self.policy.retry_on),
            retry_after: attempted
                .server
                .map(|s| delay::honoured(s.delay, self.policy.floor)),
            // Retry-After takes precedence over the quota fields.
            quota_reset: attempted.quota.filter(|_| attempted.server.is_none()),
        };
        let learned = shared.learn(&lesson);
        for &news in &learned.news {
            on_event(Event::Breaker(news));
        }
        learned
    }

    /// An HTTP answer: deliver it when it is the result, else keep the start
    /// of its body for the outcome.
    fn answered(
        &self,
        mut reply: Reply,
        sink: &mut Sink,
        clock: &dyn Clock,
        run: &mut Run,
        number: u32,
        on_event: &mut dyn FnMut(Event),
    ) -> Attempted {
        let headers = || reply.headers.iter().map(|(n, v)| (n.as_str(), v.as_str()));
        let now = clock.wall();
        let delays = delay::server_delay(headers(), now);
        let quota = ratelimit::exhausted_for(headers(), now);
        run.ignored_delays.extend(delays.ignored);
        // A success's Retry-After is no request to wait (RFC 9110 gives it
        // meaning on 503 and 3xx): it neither closes the scope's gate for
        // later runs nor names a next_allowed_at; RateLimit fields stay the
        // pacing source of successes.
        let server = delays.delay.filter(|_| !(200..300).contains(&reply.status));
        let mut observation = Observation::Status {
            status: reply.status,
            should_retry: should_retry(&reply),
        };
        run.headers = reply
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), self.redactor.text(value)))
            .collect();
        run.head = crate::edge::http::head(reply.version, reply.status, &run.headers);
        on_event(Event::Answered {
            attempt: number,
            status: reply.status,
            server,
            head: &run.head,
        });
        let range = reply.header("content-range");
        let whole = run.resume.is_some() && resume::already_whole(reply.status, range, sink.held());
        let mut judged = Judged::Verdict(if whole {
            Verdict::Success
        } else {
            decision::classify(observation, self.replay, self.policy)
        });
        let mut error = None;
        run.failed_body.clear();
        run.failed_body_truncated = false;
        if whole {
            run.resume = None;
            run.resumed += sink.held();
        } else if matches!(judged, Judged::Verdict(Verdict::Success)) {
            run.expected = length(&reply);
            sink.head(&run.head);
            let delivered = if self.require.is_empty() {
                self.deliver(&mut reply, sink, run, number, on_event)
            } else {
                self.check_contract(&mut reply, sink, &mut judged, run)
            };
            match delivered {
                Ok(()) => {}
                Err(Undelivered::Broken { phase, message }) => {
                    observation = Observation::Transport(phase);
                    judged =
                        Judged::Verdict(decision::classify(observation, self.replay, self.policy));
                    error = Some(self.redactor.text(&message));
                    run.last_error = error.clone();
                }
                Err(Undelivered::TooDense(message)) => {
                    judged = Judged::Verdict(Verdict::Invalid);
                    error = Some(message.clone());
                    run.last_error = Some(message);
                }
                Err(Undelivered::Write(e)) if e.kind() == ErrorKind::BrokenPipe => {
                    // `abide … | head`: the reader has what it wanted.
                }
                Err(Undelivered::Write(e)) => {
                    judged = Judged::Internal(format!("cannot write the body: {e}"));
                }
            }
        } else {
            // Beyond the error's cut by the longest secret: masked, then cut.
            let reach = self.redactor.reach() as u64;
            let limit = self.keep_body.max(ERROR_BODY_KEPT + reach);
            let mut kept = Vec::new();
            let whole = (&mut reply.body)
                .take(limit + 1)
                .read_to_end(&mut kept)
                .is_ok();
            let (start, _) = self.redactor.cut(&kept, ERROR_BODY_KEPT as usize);
            let text = String::from_utf8_lossy(&start).trim().to_string();
            run.last_error = (!text.is_empty()).then_some(text);
            run.keep_failed_body(kept, limit);
            // A body that broke off is not whole either (--fail-with-body).
            run.failed_body_truncated |= !whole;
        }
        if matches!(judged, Judged::Verdict(Verdict::Success)) {
            run.last_error = None;
        }
        Attempted {
            judged,
            observation,
            server,
            quota,
            attempt: run.attempt(Some(reply.status), error, server, clock),
        }
    }

    /// Delivers a 2xx body: after the bytes held when the answer continues
    /// them, else from its start where that can still be done cleanly.
    fn deliver(
        &self,
        reply: &mut Reply,
        sink: &mut Sink,
        run: &mut Run,
        number: u32,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<(), Undelivered> {
        let held = sink.held();
        let range = reply
            .header("content-range")
            .and_then(resume::content_range);
        let asked = run.resume.take();
        let headers = || reply.headers.iter().map(|(n, v)| (n.as_str(), v.as_str()));
        let validator = resume::validator(headers(), reply.decoded);
        let (start, if_range) = match resume::continuation(reply.status, range, held) {
            Continuation::Fresh => (Start::Over, validator),
            Continuation::StartsOver if sink.clean() => (Start::Over, validator),
            Continuation::Continues => {
                let total = range.and_then(|r| r.total);
                run.expected = total;
                run.resumed += held;
                on_event(Event::Resumed {
                    attempt: number,
                    offset: held,
                    total,
                });
                let kept = asked.and_then(|from| from.if_range);
                (Start::Held, kept.or(validator))
            }
            Continuation::StartsOver => {
                return Err(Undelivered::Broken {
                    phase: Phase::Partial,
                    message: format!(
                        "the server sent the whole body again (it ignored the range, or the \
                         file changed) after {} of it had reached stdout",
                        size_text(held)
                    ),
                });
            }
            Continuation::Mismatch => {
                let first =
                    range.map_or("no Content-Range".into(), |r| format!("byte {}", r.first));
                return Err(Undelivered::Broken {
                    phase: if sink.clean() {
                        Phase::AfterSend
                    } else {
                        Phase::Partial
                    },
                    message: format!(
                        "the server's 206 answer starts at {first}, not at byte {held}: not appended"
                    ),
                });
            }
        };
        if reply
            .header("content-type")
            .is_some_and(|t| t.trim().starts_with("text/event-stream"))
        {
            sink.stream();
        }
        match sink.deliver(&mut reply.body, start) {
            Ok(_) => Ok(()),
            Err(e) => Err(self.undelivered(e, sink, run, if_range)),
        }
    }

    /// What a body that was not delivered means for the next attempt: it
    /// continues the body when the answer named a version to ask for
    /// (`if_range`), or starts over when nothing of it was seen yet.
    fn undelivered(
        &self,
        error: DeliverError,
        sink: &Sink,
        run: &mut Run,
        if_range: Option<String>,
    ) -> Undelivered {
        let error = match error {
            DeliverError::Write(e) => return Undelivered::Write(e),
            DeliverError::Read(e) => e,
        };
        let held = sink.held();
        if let Some(dense) = crate::edge::decode::too_dense(&error) {
            return Undelivered::TooDense(format!(
                "{dense}: stopped after {}, from {} encoded",
                size_text(held),
                size_text(dense.encoded)
            ));
        }
        let of = run
            .expected
            .map_or(String::new(), |total| format!(" of {}", size_text(total)));
        let kind = http::io_kind(&error);
        let detail = error.to_string();
        let cause = if detail == kind {
            detail
        } else {
            format!("{kind}: {detail}")
        };
        let mut message = format!("the body broke off after {}{of}: {cause}", size_text(held));
        let phase = match if_range {
            Some(validator) if self.resumable && held > 0 => {
                run.resume = Some(resume::From {
                    offset: held,
                    if_range: Some(validator),
                });
                Phase::AfterSend
            }
            _ if sink.clean() => Phase::AfterSend,
            _ => {
                message.push_str(
                    ", after part of it had reached stdout; the server offered no way to \
                     resume it (Accept-Ranges: bytes, with a strong ETag or Last-Modified)",
                );
                Phase::Partial
            }
        };
        Undelivered::Broken { phase, message }
    }

    /// Holds a 2xx body in memory, checks it against `--require`, and
    /// delivers it only if it holds; otherwise the verdict becomes Invalid.
    fn check_contract(
        &self,
        reply: &mut Reply,
        sink: &mut Sink,
        judged: &mut Judged,
        run: &mut Run,
    ) -> Result<(), Undelivered> {
        let mut body = Vec::new();
        if let Err(e) = (&mut reply.body)
            .take(CONTRACT_LIMIT + 1)
            .read_to_end(&mut body)
        {
            return Err(self.undelivered(DeliverError::Read(e), sink, run, None));
        }
        let verdict = if body.len() as u64 > CONTRACT_LIMIT {
            Err("the body is larger than the 64 MiB --require can check".to_string())
        } else {
            contract::check(&body, self.require)
        };
        match verdict {
            Ok(()) => sink
                .deliver(&mut body.as_slice(), Start::Over)
                .map(drop)
                .map_err(|e| self.undelivered(e, sink, run, None)),
            Err(detail) => {
                *judged = Judged::Verdict(Verdict::Invalid);
                run.last_error = Some(detail);
                run.keep_failed_body(body, self.keep_body);
                Ok(())
            }
        }
    }

    fn failed(
        &self,
        failure: Failure,
        clock: &dyn Clock,
        run: &mut Run,
        number: u32,
        on_event: &mut dyn FnMut(Event),
    ) -> Attempted {
        let message = self.redactor.text(&failure.message);
        on_event(Event::Failed {
            attempt: number,
            error: &message,
        });
        run.last_error = Some(message.clone());
        let observation = Observation::Transport(failure.phase);
        Attempted {
            judged: Judged::Verdict(decision::classify(observation, self.replay, self.policy)),
            observation,
            server: None,
            quota: None,
            attempt: run.attempt(None, Some(message), None, clock),
        }
    }
}

/// The size of a body as it will be delivered, when the answer says it.
fn length(reply: &Reply) -> Option<u64> {
    reply
        .header("content-length")
        .filter(|_| !reply.decoded)
        .and_then(|n| n.trim().parse().ok())
}

/// The server's own word on retrying: `x-should-retry` (OpenAI, Anthropic
/// SDKs) or `Stripe-Should-Retry`; anything but true/false is ignored.
fn should_retry(reply: &Reply) -> Option<bool> {
    ["x-should-retry", "stripe-should-retry"]
        .iter()
        .find_map(|name| reply.header(name))
        .and_then(|v| match v.trim().to_ascii_lowercase().as_str() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        })
}

/// A sentence for the reason: the run waited for its scope before sending.
fn scope_note(waited: Duration, cause: scope::Wait) -> String {
    let why = match cause {
        scope::Wait::Gate(scope::GateCause::RetryAfter) => {
            "a Retry-After the server gave to another request"
        }
        scope::Wait::Gate(scope::GateCause::QuotaExhausted) => {
            "the scope's used-up rate-limit quota"
        }
        scope::Wait::Rate => "--rate",
        scope::Wait::HalfOpen(scope::Level::Scope) => "the scope's open circuit breaker",
        scope::Wait::HalfOpen(scope::Level::Endpoint) => {
            "the open circuit breaker of this request's endpoint"
        }
        scope::Wait::Probe(_) => "another run's probe of an open circuit breaker",
    };
    format!(
        "Waited {:.1} s for {why} before sending.",
        waited.as_secs_f64()
    )
}

impl Run {
    /// Counts a wait the scope imposed; waits of one cause in a row (the
    /// looks behind a probe) make one sentence.
    fn note_scope_wait(&mut self, waited: Duration, cause: scope::Wait) {
        match self.scope_waits.last_mut() {
            Some((total, last)) if *last == cause => *total += waited,
            _ => self.scope_waits.push((waited, cause)),
        }
    }

    /// Keeps the start of an answer's body that was not delivered (for the
    /// agent object), noting whether there was more.
    fn keep_failed_body(&mut self, mut body: Vec<u8>, limit: u64) {
        self.failed_body_truncated = body.len() as u64 > limit;
        body.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        self.failed_body = body;
    }

    fn attempt(
        &self,
        status: Option<u16>,
        error: Option<String>,
        server_delay: Option<ServerDelay>,
        clock: &dyn Clock,
    ) -> Attempt {
        Attempt {
            status,
            error,
            server_delay,
            wait: None,
            ended_at: clock.now() - self.start,
        }
    }

    /// Sleeps, counting the time actually slept as waited.
    fn sleep(
        &mut self,
        duration: Duration,
        clock: &dyn Clock,
        sleeper: &mut dyn Sleeper,
    ) -> Result<(), Signal> {
        let before = clock.now();
        let slept = sleeper.sleep(duration);
        self.waited += clock.now() - before;
        slept
    }

    fn finish(self, clock: &dyn Clock, ending: Ending, not_before: Option<Duration>) -> Record {
        let succeeded = ending.kind() == Kind::Succeeded;
        Record {
            ending,
            elapsed: clock.now() - self.start,
            waited: self.waited,
            next_allowed_at: not_before.and_then(|d| clock.wall().checked_add(d)),
            error: if succeeded { None } else { self.last_error },
            ignored_delays: self.ignored_delays,
            attempts: self.attempts,
            headers: self.headers,
            head: self.head,
            head_after: self.head_after,
            failed_body: self.failed_body,
            failed_body_truncated: self.failed_body_truncated,
            notes: self
                .scope_waits
                .iter()
                .map(|&(waited, cause)| scope_note(waited, cause))
                .collect(),
            resumed: self.resumed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Millis;
    use crate::rules::scope::{Breaker, Probe, ScopePolicy, ScopeState};
    use crate::state::memory::{Elsewhere, Memory};
    use std::cell::Cell;
    use std::rc::Rc;
    use std::time::SystemTime;

    /// A clock that moves only when the fake sleeper or transport says so.
    #[derive(Clone)]
    struct FakeTime {
        origin: Instant,
        offset: Rc<Cell<Duration>>,
        slept: Rc<Cell<Vec<Duration>>>,
        cancel_after: Option<usize>,
    }

    impl FakeTime {
        fn new() -> FakeTime {
            FakeTime {
                origin: Instant::now(),
                offset: Rc::default(),
                slept: Rc::default(),
                cancel_after: None,
            }
        }
        fn advance(&self, d: Duration) {
            self.offset.set(self.offset.get() + d);
        }
        fn sleeps(&self) -> Vec<u128> {
            let v = self.slept.take();
            let ms = v.iter().map(|d| d.as_millis()).collect();
            self.slept.set(v);
            ms
        }
    }

    fn epoch() -> SystemTime {
        httpdate::parse_http_date("Mon, 30 Nov 2026 10:00:00 GMT").unwrap()
    }

    impl Clock for FakeTime {
        fn now(&self) -> Instant {
            self.origin + self.offset.get()
        }
        fn wall(&self) -> SystemTime {
            epoch() + self.offset.get()
        }
    }

    impl Sleeper for FakeTime {
        fn sleep(&mut self, d: Duration) -> Result<(), Signal> {
            let mut v = self.slept.take();
            v.push(d);
            let count = v.len();
            self.slept.set(v);
            if self.cancel_after == Some(count) {
                return Err(Signal::Interrupt);
            }
            self.advance(d);
            Ok(())
        }
        fn cancelled(&self) -> Option<Signal> {
            None
        }
    }

    type Answer = Result<(u16, Vec<(&'static str, &'static str)>), Phase>;

    /// Answers from a script (the last one repeats); each takes 10 ms.
    /// The body is `body STATUS`, or an `x-body` header's value; it breaks
    /// off after an `x-break` header's count of bytes.
    struct Scripted {
        time: FakeTime,
        answers: Vec<Answer>,
        sent: Vec<Limits>,
        ranges: Vec<Option<resume::From>>,
    }

    /// A body that breaks off after its bytes.
    struct BreaksOff(std::io::Cursor<Vec<u8>>);

    impl Read for BreaksOff {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match self.0.read(buf)? {
                0 => Err(ErrorKind::UnexpectedEof.into()),
                n => Ok(n),
            }
        }
    }

    impl Transport for Scripted {
        fn send(
            &mut self,
            limits: Limits,
            resume: Option<&resume::From>,
        ) -> Result<Reply, Failure> {
            self.sent.push(limits);
            self.ranges.push(resume.cloned());
            self.time.advance(Duration::from_millis(10));
            let i = (self.sent.len() - 1).min(self.answers.len() - 1);
            match &self.answers[i] {
                Ok((status, headers)) => {
                    let header = |name| headers.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
                    let text = header("x-body").map_or(format!("body {status}"), str::to_string);
                    let body: Box<dyn Read> = match header("x-break") {
                        Some(n) => Box::new(BreaksOff(std::io::Cursor::new(
                            text.as_bytes()[..n.parse().unwrap()].to_vec(),
                        ))),
                        None => Box::new(std::io::Cursor::new(text)),
                    };
                    Ok(Reply {
                        version: "HTTP/1.1",
                        status: *status,
                        headers: headers
                            .iter()
                            .map(|(n, v)| (n.to_string(), v.to_string()))
                            .collect(),
                        decoded: false,
                        body,
                    })
                }
                Err(phase) => Err(Failure {
                    phase: *phase,
                    message: "connection reset: token=hunter2-long".into(),
                }),
            }
        }
    }

    struct Case {
        policy: Policy,
        replay: Replay,
        answers: Vec<Answer>,
        draw: f64,
        cancel_after: Option<usize>,
        /// The scope's record at the start, in a [`Memory`] store.
        scope: Option<ScopeState>,
        /// What another process does to the record, and when (here in ms
        /// after the start, not in store time).
        elsewhere: Option<Elsewhere>,
        /// `--max-concurrent`, and how many of its slots others hold.
        max_concurrent: Option<(u32, u32)>,
    }

    /// The epoch time of the fake clock's start plus `ms`.
    fn at_ms(ms: u64) -> Millis {
        crate::clock::epoch_ms(epoch()) + ms
    }

    impl Case {
        fn new(answers: Vec<Answer>) -> Case {
            Case {
                policy: Policy::default(),
                replay: Replay::Safe,
                answers,
                draw: 0.0,
                cancel_after: None,
                scope: None,
                elsewhere: None,
                max_concurrent: None,
            }
        }

        fn run(self) -> (Record, Vec<Limits>, Vec<u128>) {
            let (record, sent, sleeps, _) = self.run_ranged();
            (record, sent, sleeps)
        }

        /// Also returns the ranges each attempt asked for.
        fn run_ranged(self) -> (Record, Vec<Limits>, Vec<u128>, Vec<Option<resume::From>>) {
            let ran = self.run_all();
            (ran.record, ran.sent, ran.sleeps, ran.ranges)
        }

        fn run_all(self) -> Ran {
            let mut time = FakeTime::new();
            time.cancel_after = self.cancel_after;
            let clock = time.clone();
            let memory = self.scope.clone().map(|scope| {
                Memory::new(scope, move || crate::clock::epoch_ms(clock.wall()))
                    .elsewhere(self.elsewhere.map(|(at, change)| (at_ms(at), change)))
                    .slots_held(self.max_concurrent.map_or(0, |(_, held)| held))
            });
            let slots = memory.as_ref().map(Memory::slots);
            let shared = memory.map(|memory| {
                let policy = ScopePolicy {
                    rate_interval: None,
                    breaker_threshold: 5,
                    breaker_first: Duration::from_millis(500),
                    breaker_cooldown: Duration::from_secs(30),
                    probe_ttl: Duration::from_secs(31),
                };
                Shared::new(
                    Box::new(memory),
                    "s".into(),
                    "ep".into(),
                    policy,
                    self.max_concurrent.map(|(limit, _)| limit),
                    false,
                )
            });
            let mut transport = Scripted {
                time: time.clone(),
                answers: self.answers,
                sent: vec![],
                ranges: vec![],
            };
            let mut redactor = Redactor::default();
            redactor.add("hunter2-long");
            let looper = Loop {
                policy: &self.policy,
                replay: self.replay,
                max_time: None,
                connect_timeout: Duration::from_secs(10),
                stall: Duration::from_secs(30),
                resumable: self.replay == Replay::Safe,
                redactor: &redactor,
                shared: shared.as_ref(),
                require: &[],
                keep_body: 256,
            };
            let mut sink =
                Sink::file(std::path::Path::new("/dev/null"), &Default::default()).unwrap();
            let draw = self.draw;
            let record = looper.run(
                &mut transport,
                &mut sink,
                &time.clone(),
                &mut time.clone(),
                &mut || draw,
                &mut |_| {},
            );
            Ran {
                record,
                sent: transport.sent,
                sleeps: time.sleeps(),
                ranges: transport.ranges,
                slots_in_use: slots.map(|n| n.load(std::sync::atomic::Ordering::SeqCst)),
            }
        }
    }

    /// What a case's run left: the record, the attempts' limits, the sleeps,
    /// the ranges asked for, and the scope's slots still in use.
    struct Ran {
        record: Record,
        sent: Vec<Limits>,
        sleeps: Vec<u128>,
        ranges: Vec<Option<resume::From>>,
        slots_in_use: Option<u32>,
    }

    fn statuses(record: &Record) -> Vec<Option<u16>> {
        record.attempts.iter().map(|a| a.status).collect()
    }

    #[test]
    fn waits_what_the_server_asked_then_succeeds() {
        let (record, _, sleeps) = Case::new(vec![
            Ok((429, vec![("Retry-After", "3")])),
            Ok((200, vec![])),
        ])
        .run();
        assert_eq!(record.kind(), Kind::Succeeded);
        assert_eq!(statuses(&record), [Some(429), Some(200)]);
        assert_eq!(sleeps, [3000]);
        assert_eq!(record.waited, Duration::from_secs(3));
        assert_eq!(record.attempts[0].wait, Some(Duration::from_secs(3)));
        assert_eq!(record.error, None);
        // The final attempt's 10 ms to its head, not the run's time to it.
        assert_eq!(record.head_after, Duration::from_millis(10));
        assert!(
            record.head.starts_with("HTTP/1.1 200 OK\r\n"),
            "{}",
            record.head
        );
    }

    #[test]
    fn backs_off_until_attempts_run_out() {
        let mut case = Case::new(vec![Ok((503, vec![]))]);
        case.draw = 0.999_999;
        let (record, sent, sleeps) = case.run();
        assert_eq!(record.kind(), Kind::RetryExhausted);
        assert_eq!(sent.len(), 4);
        assert_eq!(sleeps, [499, 999, 1999]);
        assert_eq!(record.error.as_deref(), Some("body 503"));
        assert_eq!(record.next_allowed_at, None);
    }

    #[test]
    fn never_replays_an_unsafe_write() {
        let mut case = Case::new(vec![Ok((503, vec![])), Ok((200, vec![]))]);
        case.replay = Replay::Unsafe;
        let (record, sent, _) = case.run();
        assert_eq!(record.kind(), Kind::SideEffectUnknown);
        assert_eq!(sent.len(), 1);

        let mut case = Case::new(vec![Err(Phase::AfterSend), Ok((200, vec![]))]);
        case.replay = Replay::Unsafe;
        let (record, sent, _) = case.run();
        assert_eq!(record.kind(), Kind::SideEffectUnknown);
        assert_eq!(sent.len(), 1);
        assert_eq!(record.error.as_deref(), Some("connection reset: token=***"));

        let mut case = Case::new(vec![Err(Phase::BeforeSend), Ok((200, vec![]))]);
        case.replay = Replay::Unsafe;
        let (record, sent, _) = case.run();
        assert_eq!(record.kind(), Kind::Succeeded);
        assert_eq!(sent.len(), 2);
    }

    #[test]
    fn a_delay_beyond_the_budget_ends_at_once() {
        let (record, sent, sleeps) = Case::new(vec![
            Ok((429, vec![("Retry-After", "120")])),
            Ok((200, vec![])),
        ])
        .run();
        assert_eq!(record.kind(), Kind::BudgetExhausted);
        assert_eq!(sent.len(), 1);
        assert!(
            sleeps.is_empty(),
            "never sleeps part of a wait it cannot finish"
        );
        let expected = epoch() + Duration::from_millis(10) + Duration::from_secs(120);
        assert_eq!(record.next_allowed_at, Some(expected));
    }

    #[test]
    fn an_attempt_never_outlives_the_budget() {
        let mut case = Case::new(vec![
            Ok((429, vec![("Retry-After", "2")])),
            Ok((200, vec![])),
        ]);
        case.policy.budget = Duration::from_secs(5);
        let (record, sent, _) = case.run();
        assert_eq!(record.kind(), Kind::Succeeded);
        let left = Duration::from_secs(5) - Duration::from_millis(2010);
        assert_eq!(sent[0].head, Duration::from_secs(5));
        assert_eq!(sent[1].head, left);
        // The default budget never cuts a body that keeps flowing…
        assert_eq!(sent[1].total, None);
        // …but one the user gave cuts everything at its end.
        let mut case = Case::new(vec![
            Ok((429, vec![("Retry-After", "2")])),
            Ok((200, vec![])),
        ]);
        case.policy.budget = Duration::from_secs(5);
        case.policy.hard_budget = true;
        let (_, sent, _) = case.run();
        assert_eq!(sent[0].total, Some(Duration::from_secs(5)));
        assert_eq!(sent[1].total, Some(left));
        assert_eq!(sent[1].head, left);
    }

    #[test]
    fn a_body_that_breaks_off_is_continued_where_it_broke_off() {
        let first = vec![
            ("Accept-Ranges", "bytes"),
            ("ETag", "\"v1\""),
            ("Content-Length", "20"),
            ("x-body", "0123456789abcdefghij"),
            ("x-break", "10"),
        ];
        let rest = vec![
            ("Content-Range", "bytes 10-19/20"),
            ("ETag", "\"v1\""),
            ("x-body", "abcdefghij"),
        ];
        let (record, _, _, ranges) =
            Case::new(vec![Ok((200, first.clone())), Ok((206, rest))]).run_ranged();
        assert_eq!(record.kind(), Kind::Succeeded);
        assert_eq!(record.resumed, 10);
        let asked = resume::From {
            offset: 10,
            if_range: Some("\"v1\"".into()),
        };
        assert_eq!(ranges, [None, Some(asked)]);
        assert_eq!(
            record.attempts[0].error.as_deref(),
            Some(
                "the body broke off after 10 B of 20 B: connection closed early: unexpected end of file"
            )
        );

        // A 206 that starts elsewhere is never appended; this sink cannot
        // take back what it was given, so the body stays incomplete.
        let elsewhere = vec![("Content-Range", "bytes 5-19/20")];
        let (record, sent, _) =
            Case::new(vec![Ok((200, first.clone())), Ok((206, elsewhere))]).run();
        assert_eq!(record.kind(), Kind::Incomplete);
        assert_eq!(sent.len(), 2);
        assert_eq!(
            record.error.as_deref(),
            Some("the server's 206 answer starts at byte 5, not at byte 10: not appended")
        );

        // Without a validator, nothing is asked for: what was written to a
        // destination that cannot be rewound is incomplete.
        let unversioned = vec![
            ("Accept-Ranges", "bytes"),
            ("x-body", "0123456789"),
            ("x-break", "4"),
        ];
        let (record, _, _, ranges) =
            Case::new(vec![Ok((200, unversioned)), Ok((200, vec![]))]).run_ranged();
        assert_eq!(record.kind(), Kind::Incomplete);
        assert_eq!(ranges, [None]);
    }

    #[test]
    fn non_retryable_is_sent_once() {
        let (record, sent, _) = Case::new(vec![Ok((401, vec![])), Ok((200, vec![]))]).run();
        assert_eq!(record.kind(), Kind::NonRetryable);
        assert_eq!(sent.len(), 1);
    }

    #[test]
    fn cancellation_during_a_wait_ends_the_run() {
        let mut case = Case::new(vec![Ok((429, vec![("Retry-After", "5")]))]);
        case.cancel_after = Some(1);
        let (record, sent, _) = case.run();
        assert_eq!(record.kind(), Kind::Cancelled);
        assert_eq!(record.ending, Ending::Cancelled(Signal::Interrupt));
        assert_eq!(sent.len(), 1);
    }

    #[test]
    fn a_cancelled_server_delay_still_says_when_to_come_back() {
        let mut case = Case::new(vec![Ok((429, vec![("Retry-After", "5")]))]);
        case.cancel_after = Some(1);
        let (record, _, _) = case.run();
        assert_eq!(record.kind(), Kind::Cancelled);
        // The fake sleeper is cut before any time passes: all 5 s are left.
        let expected = epoch() + Duration::from_millis(10) + Duration::from_secs(5);
        assert_eq!(record.next_allowed_at, Some(expected));
    }

    #[test]
    fn invalid_delays_are_noted_and_backoff_is_used() {
        let mut case = Case::new(vec![
            Ok((503, vec![("Retry-After", "soon")])),
            Ok((200, vec![])),
        ]);
        case.draw = 0.5;
        let (record, _, sleeps) = case.run();
        assert_eq!(record.kind(), Kind::Succeeded);
        assert_eq!(sleeps, [250]);
        assert_eq!(record.ignored_delays, ["Retry-After: soon"]);
    }

    fn open_until(ms: u64, interval: Millis) -> ScopeState {
        ScopeState {
            breaker: Breaker {
                open_until: Some(at_ms(ms)),
                interval,
                ..Breaker::default()
            },
            ..ScopeState::default()
        }
    }

    #[test]
    fn a_free_concurrency_slot_is_taken_for_the_attempt_and_given_back() {
        let mut case = Case::new(vec![Ok((503, vec![])), Ok((200, vec![]))]);
        case.scope = Some(ScopeState::default());
        case.max_concurrent = Some((2, 1));
        let ran = case.run_all();
        assert_eq!(ran.record.kind(), Kind::Succeeded);
        assert_eq!(ran.sent.len(), 2);
        // Only the other process's slot is still held.
        assert_eq!(ran.slots_in_use, Some(1));
    }

    #[test]
    fn no_free_slot_within_the_budget_ends_unsent() {
        let mut case = Case::new(vec![Ok((200, vec![]))]);
        case.policy.budget = Duration::from_millis(100);
        case.scope = Some(ScopeState::default());
        case.max_concurrent = Some((1, 1));
        let ran = case.run_all();
        assert_eq!(ran.record.kind(), Kind::BudgetExhausted);
        assert!(ran.sent.is_empty(), "sent without a slot");
        // Polls back off 1, 2, 4 … 20 ms and never sleep past the budget.
        assert_eq!(&ran.sleeps[..5], [1, 2, 4, 8, 16]);
        assert!(
            ran.sleeps[5..].iter().all(|&ms| ms == 20),
            "{:?}",
            ran.sleeps
        );
        assert!(ran.sleeps.iter().sum::<u128>() <= 100, "{:?}", ran.sleeps);
        assert_eq!(ran.slots_in_use, Some(1));
    }

    #[test]
    fn an_open_breaker_is_waited_for_then_probed() {
        let mut case = Case::new(vec![Ok((200, vec![]))]);
        case.scope = Some(open_until(2_000, 2_000));
        let (record, sent, sleeps) = case.run();
        assert_eq!(record.kind(), Kind::Succeeded);
        assert_eq!(sent.len(), 1);
        assert_eq!(sleeps, [2_000]);
        assert_eq!(record.waited, Duration::from_secs(2));
        assert_eq!(
            record.notes,
            ["Waited 2.0 s for the scope's open circuit breaker before sending."]
        );
    }

    #[test]
    fn behind_a_probe_the_loop_waits_until_it_ends() {
        let mut case = Case::new(vec![Ok((200, vec![]))]);
        let mut scope = open_until(0, 1_000);
        scope.breaker.probe = Some(Probe {
            holder: "another".into(),
            expires: at_ms(10_000),
        });
        case.scope = Some(scope);
        // 300 ms in, the other run's probe fails: open for another second.
        case.elsewhere = Some((300, |s| {
            s.breaker.probe = None;
            s.breaker.open_until = Some(at_ms(1_300));
        }));
        let (record, sent, sleeps) = case.run();
        assert_eq!(record.kind(), Kind::Succeeded);
        assert_eq!(sent.len(), 1);
        let looks: Vec<u128> = sleeps.iter().copied().take_while(|&ms| ms <= 50).collect();
        assert_eq!(&looks[..7], [1, 2, 4, 8, 16, 32, 50]);
        let behind: u128 = looks.iter().sum();
        assert!((300..350).contains(&behind), "{sleeps:?}");
        assert_eq!(sleeps.iter().sum::<u128>(), 1_300, "{sleeps:?}");
        assert_eq!(record.notes.len(), 2, "{:?}", record.notes);
    }

    #[test]
    fn a_half_open_moment_beyond_the_budget_ends_circuit_open_unsent() {
        let mut case = Case::new(vec![Ok((200, vec![]))]);
        case.scope = Some(open_until(120_000, 30_000));
        let (record, sent, sleeps) = case.run();
        assert_eq!(record.kind(), Kind::CircuitOpen);
        assert!(sent.is_empty() && sleeps.is_empty());
        assert_eq!(
            record.next_allowed_at,
            Some(epoch() + Duration::from_secs(120))
        );
    }

    #[test]
    fn a_failed_probe_with_no_attempts_left_ends_circuit_open() {
        // The host is still unreachable.
        let mut case = Case::new(vec![Err(Phase::BeforeSend)]);
        case.policy.attempts = 1;
        case.scope = Some(open_until(0, 1_000));
        let (record, sent, _) = case.run();
        assert_eq!(record.kind(), Kind::CircuitOpen);
        assert_eq!(sent.len(), 1);
        // Open again for twice as long, from the answer 10 ms in.
        assert_eq!(
            record.next_allowed_at,
            Some(epoch() + Duration::from_millis(10 + 2_000))
        );
    }
}
