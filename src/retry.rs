//! The retry loop: send, classify, decide, wait, until the decision table
//! says stop. It owns a clock and a sleeper so that tests drive it without
//! sleeping; everything it decides comes from `decision`.

use std::io::{ErrorKind, Read};
use std::time::{Duration, Instant, SystemTime};

use crate::contract;
use crate::decision::{
    self, Draw, Next, Observation, Phase, Policy, Progress, Replay, StopWhy, Verdict, Wait,
    WaitCause,
};
use crate::delay::{self, ServerDelay};
use crate::http::{self, Failure, Limits, Reply, Transport};
use crate::outcome::{Attempt, Kind, Record, Why};
use crate::ratelimit;
use crate::redact::Redactor;
use crate::scope::{self, BreakerNews, Lesson};
use crate::shared::{Admit, Shared};
use crate::sink::{DeliverError, Sink};
use crate::store::Slot;

/// How much of a failed attempt's body is kept (the outcome shows 256 bytes).
const ERROR_BODY_KEPT: u64 = 256;

pub trait Clock {
    fn now(&self) -> Instant;
    fn wall(&self) -> SystemTime;
}

pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
    fn wall(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// Waits, or reports the cancellation that cut the wait short.
pub trait Sleeper {
    fn sleep(&mut self, duration: Duration) -> Result<(), Kind>;
    /// A cancellation that arrived while a request was in flight.
    fn cancelled(&self) -> Option<Kind>;
}

impl Sleeper for crate::cancel::Cancel {
    fn sleep(&mut self, duration: Duration) -> Result<(), Kind> {
        crate::cancel::Cancel::sleep(self, duration)
    }
    fn cancelled(&self) -> Option<Kind> {
        crate::cancel::Cancel::cancelled(self)
    }
}

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
    },
    Failed {
        attempt: u32,
        error: &'a str,
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
    pub max_time: Duration,
    pub connect_timeout: Duration,
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
type End = (Kind, Why, Option<Duration>);

/// The run's parts that change as it goes.
struct Run {
    start: Instant,
    attempts: Vec<Attempt>,
    waited: Duration,
    ignored_delays: Vec<String>,
    last_error: Option<String>,
    /// The last answer's headers, and the kept start of its body when it failed.
    headers: Vec<(String, String)>,
    failed_body: Vec<u8>,
    failed_body_truncated: bool,
    /// Waits the scope imposed before attempts, for the outcome's reason.
    scope_waits: Vec<(Duration, scope::Wait)>,
}

/// The longest pause between two looks for a free concurrency slot.
const SLOT_POLL_MAX: Duration = Duration::from_millis(20);

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
            failed_body: Vec::new(),
            failed_body_truncated: false,
            scope_waits: Vec::new(),
        };
        loop {
            let number = run.attempts.len() as u32 + 1;
            let slot = match self.pass_scope(number, clock, sleeper, draw, &mut run, on_event) {
                Ok(slot) => slot,
                Err((kind, why, not_before)) => return run.finish(clock, kind, why, not_before),
            };
            let left = self.policy.budget.saturating_sub(clock.now() - run.start);
            if left.is_zero() {
                let why = StopWhy::WaitOverBudget {
                    wait: Duration::ZERO,
                    left,
                };
                return run.finish(clock, Kind::BudgetExhausted, Why::Decided(why), None);
            }
            let limits = Limits {
                total: self.max_time.min(left),
                connect: self.connect_timeout,
            };
            on_event(Event::Sending {
                attempt: number,
                limits,
            });
            let attempted = match transport.send(limits) {
                Ok(reply) => self.answered(reply, sink, clock, &mut run, number, on_event),
                Err(failure) => self.failed(failure, clock, &mut run, number, on_event),
            };
            // A signal cuts the request or the download in flight; whatever
            // that looked like, the run was interrupted.
            if let Some(kind) = sleeper.cancelled() {
                let mut attempt = attempted.attempt;
                attempt.error = Some("interrupted".into());
                run.attempts.push(attempt);
                return run.finish(clock, kind, Why::Cancelled, None);
            }
            // Publish first, then sleep (and only then free the slot): other
            // processes of the scope learn of a Retry-After before this one
            // waits on it, and before anyone else can send.
            let news = self.teach_scope(&attempted, on_event);
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
                    return run.finish(clock, Kind::InternalError, Why::Internal(message), None);
                }
            };
            let progress = Progress {
                attempt: number,
                elapsed: clock.now() - run.start,
            };
            match decision::next_step(verdict, server, progress, self.policy, Draw(draw())) {
                Next::Stop(stop) => {
                    return run.finish(clock, stop.kind, Why::Decided(stop.why), stop.not_before);
                }
                // This attempt opened the scope's breaker: waiting would only
                // find it open, so say so now, with when it half-opens.
                Next::Wait(wait) if matches!(news, BreakerNews::Opened { .. }) => {
                    // Not before the breaker half-opens, nor before the
                    // server's own delay ends.
                    let cooldown = self
                        .shared
                        .map(|s| s.policy.breaker_cooldown.max(wait.duration));
                    let why = Why::Decided(StopWhy::CircuitOpen { probing: false });
                    return run.finish(clock, Kind::CircuitOpen, why, cooldown);
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
                    if let Err(kind) = run.sleep(wait.duration, clock, sleeper) {
                        // Cut short during the server's delay: the caller
                        // still must not come back before it ends.
                        let left = wait.duration.saturating_sub(clock.now() - before);
                        let not_before =
                            matches!(wait.cause, WaitCause::Server { .. }).then_some(left);
                        return run.finish(clock, kind, Why::Cancelled, not_before);
                    }
                }
            }
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
            let (cause, wait) = match shared.admit(patience, !rate_reserved) {
                Admit::Go => {
                    let slot = self.take_slot(shared, clock, sleeper, run)?;
                    // Waiting for the slot, the gate may have closed again.
                    if slot.is_none() || shared.gate_open() {
                        return Ok(slot);
                    }
                    continue;
                }
                Admit::CircuitOpen { wait, probing } => {
                    let why = Why::Decided(StopWhy::CircuitOpen { probing });
                    return Err((Kind::CircuitOpen, why, Some(wait)));
                }
                Admit::Wait { wait, cause } => (cause, wait),
                Admit::Unavailable(e) => {
                    let why = Why::Internal(format!(
                        "the shared state is unavailable ({e}) and --state-required is set"
                    ));
                    return Err((Kind::InternalError, why, None));
                }
            };
            match decision::scope_step(cause, wait, elapsed, self.policy, Draw(draw())) {
                Next::Stop(stop) => {
                    return Err((stop.kind, Why::Decided(stop.why), stop.not_before));
                }
                Next::Wait(wait) => {
                    on_event(Event::Waiting {
                        wait: &wait,
                        retry: number - 1,
                    });
                    let before = clock.now();
                    let slept = run.sleep(wait.duration, clock, sleeper);
                    let waited = clock.now() - before;
                    run.scope_waits.push((waited, cause));
                    if let Err(kind) = slept {
                        // The gate still holds for whoever calls next.
                        let left = wait.duration.saturating_sub(waited);
                        let gate = matches!(cause, scope::Wait::Gate(_)).then_some(left);
                        return Err((kind, Why::Cancelled, gate));
                    }
                    rate_reserved |= cause == scope::Wait::Rate;
                }
            }
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
            let lease = self.max_time.min(left) + Duration::from_secs(1);
            match shared.try_slot(lease) {
                None => return Ok(None),
                Some(Some(slot)) => return Ok(Some(slot)),
                Some(None) => {}
            }
            if left <= pause {
                let why = StopWhy::WaitOverBudget { wait: pause, left };
                return Err((Kind::BudgetExhausted, Why::Decided(why), None));
            }
            run.sleep(pause, clock, sleeper)
                .map_err(|kind| (kind, Why::Cancelled, None))?;
            pause = (pause * 2).min(SLOT_POLL_MAX);
        }
    }

    /// What the scope learns from an attempt: a Retry-After or a used-up
    /// quota closes its gate; failures count towards its breaker.
    fn teach_scope(&self, attempted: &Attempted, on_event: &mut dyn FnMut(Event)) -> BreakerNews {
        let Some(shared) = self.shared else {
            return BreakerNews::Unchanged;
        };
        let lesson = Lesson {
            health: scope::health(attempted.observation, &self.policy.retry_on),
            retry_after: attempted
                .server
                .map(|s| delay::honoured(s.delay, self.policy.floor)),
            // Retry-After takes precedence over the quota fields.
            quota_reset: attempted.quota.filter(|_| attempted.server.is_none()),
        };
        let news = shared.learn(&lesson);
        if news != BreakerNews::Unchanged {
            on_event(Event::Breaker(news));
        }
        news
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
        let server = delays.delay;
        let mut observation = Observation::Status {
            status: reply.status,
            should_retry: should_retry(&reply),
        };
        on_event(Event::Answered {
            attempt: number,
            status: reply.status,
            server,
        });
        let mut judged = Judged::Verdict(decision::classify(observation, self.replay, self.policy));
        let mut error = None;
        run.headers = reply
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), self.redactor.text(value)))
            .collect();
        run.failed_body.clear();
        run.failed_body_truncated = false;
        if matches!(judged, Judged::Verdict(Verdict::Success)) {
            let delivered = if self.require.is_empty() {
                sink.deliver(&mut reply.body)
            } else {
                self.check_contract(&mut reply, sink, &mut judged, run)
            };
            match delivered {
                Ok(_) => {}
                Err(DeliverError::Read { error: e, rewound }) => {
                    let message = format!("the body broke off: {}: {e}", http::io_kind(&e));
                    let phase = if rewound {
                        Phase::AfterSend
                    } else {
                        Phase::Final
                    };
                    observation = Observation::Transport(phase);
                    judged =
                        Judged::Verdict(decision::classify(observation, self.replay, self.policy));
                    error = Some(self.redactor.text(&message));
                    run.last_error = error.clone();
                }
                Err(DeliverError::Write(e)) if e.kind() == ErrorKind::BrokenPipe => {
                    // `abide … | head`: the reader has what it wanted.
                }
                Err(DeliverError::Write(e)) => {
                    judged = Judged::Internal(format!("cannot write the body: {e}"));
                }
            }
        } else {
            // Beyond the error's cut by the longest secret: masked, then cut.
            let reach = self.redactor.reach() as u64;
            let limit = self.keep_body.max(ERROR_BODY_KEPT + reach);
            let mut kept = Vec::new();
            let _ = (&mut reply.body).take(limit + 1).read_to_end(&mut kept);
            let (start, _) = self.redactor.cut(&kept, ERROR_BODY_KEPT as usize);
            let text = String::from_utf8_lossy(&start).trim().to_string();
            run.last_error = (!text.is_empty()).then_some(text);
            run.keep_failed_body(kept, limit);
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

    /// Holds a 2xx body in memory, checks it against `--require`, and
    /// delivers it only if it holds; otherwise the verdict becomes Invalid.
    fn check_contract(
        &self,
        reply: &mut Reply,
        sink: &mut Sink,
        judged: &mut Judged,
        run: &mut Run,
    ) -> Result<u64, DeliverError> {
        let mut body = Vec::new();
        (&mut reply.body)
            .take(CONTRACT_LIMIT + 1)
            .read_to_end(&mut body)
            .map_err(|error| DeliverError::Read {
                error,
                rewound: true,
            })?;
        let verdict = if body.len() as u64 > CONTRACT_LIMIT {
            Err("the body is larger than the 64 MiB --require can check".to_string())
        } else {
            contract::check(&body, self.require)
        };
        match verdict {
            Ok(()) => sink.deliver(&mut body.as_slice()),
            Err(detail) => {
                *judged = Judged::Verdict(Verdict::Invalid);
                run.last_error = Some(detail);
                run.keep_failed_body(body, self.keep_body);
                Ok(0)
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
    };
    format!(
        "Waited {:.1} s for {why} before sending.",
        waited.as_secs_f64()
    )
}

impl Run {
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
    ) -> Result<(), Kind> {
        let before = clock.now();
        let slept = sleeper.sleep(duration);
        self.waited += clock.now() - before;
        slept
    }

    fn finish(
        self,
        clock: &dyn Clock,
        kind: Kind,
        why: Why,
        not_before: Option<Duration>,
    ) -> Record {
        Record {
            kind,
            why,
            elapsed: clock.now() - self.start,
            waited: self.waited,
            next_allowed_at: not_before.and_then(|d| clock.wall().checked_add(d)),
            error: if kind == Kind::Succeeded {
                None
            } else {
                self.last_error
            },
            ignored_delays: self.ignored_delays,
            attempts: self.attempts,
            headers: self.headers,
            failed_body: self.failed_body,
            failed_body_truncated: self.failed_body_truncated,
            notes: self
                .scope_waits
                .iter()
                .map(|&(waited, cause)| scope_note(waited, cause))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

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
        fn sleep(&mut self, d: Duration) -> Result<(), Kind> {
            let mut v = self.slept.take();
            v.push(d);
            let count = v.len();
            self.slept.set(v);
            if self.cancel_after == Some(count) {
                return Err(Kind::Cancelled);
            }
            self.advance(d);
            Ok(())
        }
        fn cancelled(&self) -> Option<Kind> {
            None
        }
    }

    type Answer = Result<(u16, Vec<(&'static str, &'static str)>), Phase>;

    /// Answers from a script (the last one repeats); each takes 10 ms.
    struct Scripted {
        time: FakeTime,
        answers: Vec<Answer>,
        sent: Vec<Limits>,
    }

    impl Transport for Scripted {
        fn send(&mut self, limits: Limits) -> Result<Reply, Failure> {
            self.sent.push(limits);
            self.time.advance(Duration::from_millis(10));
            let i = (self.sent.len() - 1).min(self.answers.len() - 1);
            match &self.answers[i] {
                Ok((status, headers)) => Ok(Reply {
                    status: *status,
                    headers: headers
                        .iter()
                        .map(|(n, v)| (n.to_string(), v.to_string()))
                        .collect(),
                    body: Box::new(std::io::Cursor::new(format!("body {status}"))),
                }),
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
    }

    impl Case {
        fn new(answers: Vec<Answer>) -> Case {
            Case {
                policy: Policy::default(),
                replay: Replay::Safe,
                answers,
                draw: 0.0,
                cancel_after: None,
            }
        }

        fn run(self) -> (Record, Vec<Limits>, Vec<u128>) {
            let mut time = FakeTime::new();
            time.cancel_after = self.cancel_after;
            let mut transport = Scripted {
                time: time.clone(),
                answers: self.answers,
                sent: vec![],
            };
            let mut redactor = Redactor::default();
            redactor.add("hunter2-long");
            let looper = Loop {
                policy: &self.policy,
                replay: self.replay,
                max_time: Duration::from_secs(30),
                connect_timeout: Duration::from_secs(10),
                redactor: &redactor,
                shared: None,
                require: &[],
                keep_body: 256,
            };
            let mut sink = Sink::file(std::path::Path::new("/dev/null")).unwrap();
            let draw = self.draw;
            let record = looper.run(
                &mut transport,
                &mut sink,
                &time.clone(),
                &mut time.clone(),
                &mut || draw,
                &mut |_| {},
            );
            (record, transport.sent, time.sleeps())
        }
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
        assert_eq!(record.kind, Kind::Succeeded);
        assert_eq!(statuses(&record), [Some(429), Some(200)]);
        assert_eq!(sleeps, [3000]);
        assert_eq!(record.waited, Duration::from_secs(3));
        assert_eq!(record.attempts[0].wait, Some(Duration::from_secs(3)));
        assert_eq!(record.error, None);
    }

    #[test]
    fn backs_off_until_attempts_run_out() {
        let mut case = Case::new(vec![Ok((503, vec![]))]);
        case.draw = 0.999_999;
        let (record, sent, sleeps) = case.run();
        assert_eq!(record.kind, Kind::RetryExhausted);
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
        assert_eq!(record.kind, Kind::SideEffectUnknown);
        assert_eq!(sent.len(), 1);

        let mut case = Case::new(vec![Err(Phase::AfterSend), Ok((200, vec![]))]);
        case.replay = Replay::Unsafe;
        let (record, sent, _) = case.run();
        assert_eq!(record.kind, Kind::SideEffectUnknown);
        assert_eq!(sent.len(), 1);
        assert_eq!(record.error.as_deref(), Some("connection reset: token=***"));

        let mut case = Case::new(vec![Err(Phase::BeforeSend), Ok((200, vec![]))]);
        case.replay = Replay::Unsafe;
        let (record, sent, _) = case.run();
        assert_eq!(record.kind, Kind::Succeeded);
        assert_eq!(sent.len(), 2);
    }

    #[test]
    fn a_delay_beyond_the_budget_ends_at_once() {
        let (record, sent, sleeps) = Case::new(vec![
            Ok((429, vec![("Retry-After", "120")])),
            Ok((200, vec![])),
        ])
        .run();
        assert_eq!(record.kind, Kind::BudgetExhausted);
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
        assert_eq!(record.kind, Kind::Succeeded);
        assert_eq!(sent[0].total, Duration::from_secs(5));
        assert_eq!(
            sent[1].total,
            Duration::from_secs(5) - Duration::from_millis(2010)
        );
    }

    #[test]
    fn non_retryable_is_sent_once() {
        let (record, sent, _) = Case::new(vec![Ok((401, vec![])), Ok((200, vec![]))]).run();
        assert_eq!(record.kind, Kind::NonRetryable);
        assert_eq!(sent.len(), 1);
    }

    #[test]
    fn cancellation_during_a_wait_ends_the_run() {
        let mut case = Case::new(vec![Ok((429, vec![("Retry-After", "5")]))]);
        case.cancel_after = Some(1);
        let (record, sent, _) = case.run();
        assert_eq!(record.kind, Kind::Cancelled);
        assert_eq!(record.why, Why::Cancelled);
        assert_eq!(sent.len(), 1);
    }

    #[test]
    fn a_cancelled_server_delay_still_says_when_to_come_back() {
        let mut case = Case::new(vec![Ok((429, vec![("Retry-After", "5")]))]);
        case.cancel_after = Some(1);
        let (record, _, _) = case.run();
        assert_eq!(record.kind, Kind::Cancelled);
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
        assert_eq!(record.kind, Kind::Succeeded);
        assert_eq!(sleeps, [250]);
        assert_eq!(record.ignored_delays, ["Retry-After: soon"]);
    }
}
