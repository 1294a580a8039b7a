//! The retry loop: admit, attempt, learn, decide, wait, until the decision
//! table says stop. It owns a clock and a sleeper so that tests drive it
//! without sleeping; everything it decides comes from `decision`, and it
//! writes no words: the record it hands back holds typed facts.
//!
//! - `admit`: before an attempt, the scope (breaker, gate, `--rate`, slot);
//!   after it, what the scope learns;
//! - `attempt`: one attempt and its judgement;
//! - `check`: `--check`, asked when a write's effect is unknown;
//! - `record`: what the run found out, and how it ended.

mod admit;
mod attempt;
mod check;
pub mod record;

pub use check::Check;

use std::time::{Duration, Instant, SystemTime};

use crate::clock::{Clock, Sleeper};
use crate::edge::http::{Limits, Transport};
use crate::edge::sink::Sink;
use crate::exit::Kind;
use crate::exit::Signal;
use crate::redact::Redactor;
use crate::rules::decision::{self, Draw, Next, Policy, Progress, Replay, Wait};
use crate::rules::delay::ServerDelay;
use crate::rules::resume;
use crate::rules::scope::{self, BreakerNews};
use crate::run::record::{Attempt, Ending, Record};
use crate::state::{Refusal, Shared};
use attempt::{Attempted, Judged, LastError, Transfer, Turn};

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
        /// What is left of the budget as the wait starts.
        left: Duration,
    },
    Breaker(BreakerNews),
    /// This attempt is the half-open probe of a breaker.
    Probing(scope::Level),
    /// A write's effect is unknown: `--check` asks the resource.
    Checking {
        url: &'a str,
    },
    Checked {
        status: Option<u16>,
        settlement: decision::Settlement,
    },
    /// The scope's own limits ended the run (its retry budget, its
    /// `--max-delayed` queue): what they weighed, and when the run's caller
    /// may come back (the record's moment).
    Refused {
        refusal: &'a Refusal,
        next_allowed_at: Option<SystemTime>,
    },
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
    /// The request carries an idempotency key (409 and 422 mean more).
    pub keyed: bool,
    /// `--check`: asked when a write's effect is unknown.
    pub check: Option<Check<'a>>,
    /// `--id-pointer`: where a 2xx body names what the write created.
    pub id_pointer: Option<&'a str>,
    /// Asked just before each attempt is sent (a task's request counted in
    /// its record): a refusal ends the run with it, nothing sent.
    pub ticket: Option<&'a dyn Fn() -> Option<decision::StopWhy>>,
}

/// The world the loop runs in, injected so that tests drive it with fakes.
struct World<'w> {
    transport: &'w mut dyn Transport,
    sink: &'w mut Sink,
    clock: &'w dyn Clock,
    sleeper: &'w mut dyn Sleeper,
    draw: &'w mut dyn FnMut() -> f64,
    on_event: &'w mut dyn FnMut(Event),
}

/// How a run ends early, before `Run::finish` turns it into a record.
type End = (Ending, Option<Duration>);

/// The run so far: its attempts and waits, and what the last answer left.
struct Run {
    start: Instant,
    attempts: Vec<Attempt>,
    waited: Duration,
    ignored_delays: Vec<String>,
    last_error: Option<String>,
    /// The last answer's headers, head and head time, and the kept start of
    /// its body when it failed.
    headers: Vec<(String, String)>,
    head: String,
    head_after: Duration,
    failed_body: (Vec<u8>, bool),
    /// Waits the scope imposed before attempts, for the outcome's reason.
    scope_waits: Vec<(Duration, scope::Wait)>,
    transfer: Transfer,
    check: Option<record::Checked>,
    operation_id: Option<String>,
}

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
            failed_body: (Vec::new(), false),
            scope_waits: Vec::new(),
            transfer: Transfer {
                // `-C -`: the bytes already in the file are the body's start.
                resume: (self.resumable && sink.held() > 0).then(|| resume::From {
                    offset: sink.held(),
                    if_range: None,
                }),
                ..Transfer::default()
            },
            check: None,
            operation_id: None,
        };
        let mut world = World {
            transport,
            sink,
            clock,
            sleeper,
            draw,
            on_event,
        };
        let (ending, not_before) = self.attempts(&mut run, &mut world);
        let record = run.finish(clock, ending, not_before);
        if let Some(refusal) = self.shared.and_then(Shared::take_refusal) {
            (world.on_event)(Event::Refused {
                refusal: &refusal,
                next_allowed_at: record.next_allowed_at,
            });
        }
        record
    }

    /// Attempts until one of them, or a wait, ends the run.
    fn attempts(&self, run: &mut Run, w: &mut World) -> End {
        let clock = w.clock;
        loop {
            let number = run.attempts.len() as u32 + 1;
            let admitted = self.pass_scope(number, clock, w.sleeper, w.draw, run, w.on_event);
            let slot = match admitted {
                Ok(slot) => slot,
                Err(end) => return end,
            };
            let left = match decision::attempt_room(self.policy, clock.now() - run.start) {
                Ok(left) => left,
                Err(stop) => return (Ending::Decided(stop.why), stop.not_before),
            };
            if let Some(why) = self.ticket.and_then(|ticket| ticket()) {
                return (Ending::Decided(why), None);
            }
            let limits = self.limits(left);
            (w.on_event)(Event::Sending {
                attempt: number,
                limits,
            });
            let turn = Turn {
                number,
                start: run.start,
                clock,
            };
            let mut attempted = self.attempt(
                w.transport,
                limits,
                w.sink,
                &turn,
                &mut run.transfer,
                w.on_event,
            );
            // A signal cuts the request or the download in flight; whatever
            // that looked like, the run was interrupted.
            if let Some(signal) = w.sleeper.cancelled() {
                attempted.attempt.error = Some("interrupted".into());
                run.absorb(attempted);
                return (Ending::Cancelled(signal), None);
            }
            // Publish first, then sleep (and only then free the slot): other
            // processes of the scope learn of a Retry-After before this one
            // waits on it, and before anyone else can send.
            let learned = self.teach_scope(&attempted, w.on_event);
            let server = attempted.server;
            let observation = attempted.observation;
            let status = attempted.attempt.status;
            let mut verdict = match run.absorb(attempted) {
                Judged::Verdict(verdict) => verdict,
                Judged::Internal(message) => return (Ending::Internal(message), None),
            };
            if let Some(check) = &self.check
                && decision::effect_unknown(observation, check.write, self.policy)
            {
                let settled = self.settle(check, run, w);
                // A signal cuts the check too: the run was interrupted, and
                // nobody learned anything.
                if let Some(signal) = w.sleeper.cancelled() {
                    return (Ending::Cancelled(signal), None);
                }
                verdict = match settled {
                    Ok(verdict) => verdict,
                    Err(why) => return (Ending::Decided(why), None),
                };
            }
            let progress = Progress {
                attempt: number,
                elapsed: clock.now() - run.start,
            };
            let next =
                decision::next_step(verdict, server, progress, self.policy, Draw((w.draw)()));
            let next = decision::opened_breaker(next, learned.opened);
            let next = self.spend_retry(number, status, next);
            drop(slot);
            let wait = match next {
                Next::Stop(stop) => return (Ending::Decided(stop.why), stop.not_before),
                Next::Wait(wait) => wait,
            };
            if let Some(last) = run.attempts.last_mut() {
                last.wait = Some(wait.duration);
            }
            (w.on_event)(Event::Waiting {
                wait: &wait,
                retry: number,
                left: self.policy.budget.saturating_sub(clock.now() - run.start),
            });
            let before = clock.now();
            if let Err(signal) = run.sleep(wait.duration, clock, w.sleeper) {
                // Cut short during the server's delay: the caller still
                // must not come back before it ends.
                let not_before = decision::cut_wait(&wait, clock.now() - before);
                return (Ending::Cancelled(signal), not_before);
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
}

impl Run {
    /// Records an attempt: the one place where what it found enters the
    /// run. Hands back its judgement.
    fn absorb(&mut self, attempted: Attempted) -> Judged {
        let Attempted {
            judged,
            attempt,
            answer,
            error,
            ignored_delays,
            operation_id,
            ..
        } = attempted;
        self.attempts.push(attempt);
        if operation_id.is_some() {
            self.operation_id = operation_id;
        }
        self.ignored_delays.extend(ignored_delays);
        self.head_after = Duration::ZERO;
        if let Some(answer) = answer {
            self.headers = answer.headers;
            self.head = answer.head;
            self.head_after = answer.head_after;
            self.failed_body = answer.failed_body;
        }
        if let LastError::Now(error) = error {
            self.last_error = error;
        }
        judged
    }

    /// Counts a wait the scope imposed; waits of one cause in a row (the
    /// looks behind a probe) make one entry.
    fn note_scope_wait(&mut self, waited: Duration, cause: scope::Wait) {
        match self.scope_waits.last_mut() {
            Some((total, last)) if *last == cause => *total += waited,
            _ => self.scope_waits.push((waited, cause)),
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
        let (failed_body, failed_body_truncated) = self.failed_body;
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
            failed_body,
            failed_body_truncated,
            scope_waits: self.scope_waits,
            state_outage: None,
            resumed: self.transfer.resumed,
            check: self.check,
            operation_id: self.operation_id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Millis;
    use crate::edge::http::{Failure, Reply};
    use crate::rules::attempt::Phase;
    use crate::rules::decision::StopWhy;
    use crate::rules::retry_budget::{BudgetPolicy, RetryBudget, Spender};
    use crate::rules::scope::{Breaker, Probe, ScopePolicy, ScopeState};
    use crate::state::memory::{Elsewhere, Memory};
    use std::cell::Cell;
    use std::io::{ErrorKind, Read};
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
        /// How long each answer takes.
        takes: Duration,
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
            self.time.advance(self.takes);
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
        /// `--check`'s answers, for a write.
        checks: Option<Vec<Answer>>,
        retry_budget: Option<BudgetPolicy>,
        /// The breaker's first and longest interval without a server delay.
        breaker: (Duration, Duration),
        /// How long each attempt takes.
        takes: Duration,
        /// `--rate auto`.
        rate_auto: bool,
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
                checks: None,
                retry_budget: Some(BudgetPolicy { per_success: 200 }),
                breaker: (Duration::from_millis(500), Duration::from_secs(30)),
                takes: Duration::from_millis(10),
                rate_auto: false,
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
                    breaker_first: self.breaker.0,
                    breaker_cooldown: self.breaker.1,
                    probe_ttl: Duration::from_secs(31),
                    retry_budget: self.retry_budget,
                    max_delayed: None,
                };
                let shared = Shared::new(
                    Box::new(memory),
                    "s".into(),
                    "ep".into(),
                    policy,
                    self.max_concurrent.map(|(limit, _)| limit),
                    false,
                );
                match self.rate_auto {
                    true => shared.learning_pace(),
                    false => shared,
                }
            });
            let mut transport = Scripted {
                time: time.clone(),
                answers: self.answers,
                sent: vec![],
                ranges: vec![],
                takes: self.takes,
            };
            let checker = self.checks.map(|answers| {
                std::cell::RefCell::new(Scripted {
                    time: time.clone(),
                    answers,
                    sent: vec![],
                    ranges: vec![],
                    takes: self.takes,
                })
            });
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
                keyed: false,
                check: checker.as_ref().map(|transport| Check {
                    transport,
                    url: "http://h/orders/latest",
                    write: true,
                }),
                id_pointer: None,
                ticket: None,
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
                checks_sent: checker.map_or(0, |c| c.into_inner().sent.len()),
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
        checks_sent: usize,
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
    fn a_write_of_unknown_effect_is_settled_by_its_check() {
        let write = |answers, checks| {
            let mut case = Case::new(answers);
            case.replay = Replay::Unsafe;
            case.checks = Some(checks);
            case.run_all()
        };
        // Found: reconciled, never sent again.
        let found = write(vec![Err(Phase::AfterSend)], vec![Ok((200, vec![]))]);
        assert_eq!(found.record.ending, Ending::Decided(StopWhy::Reconciled));
        assert_eq!((found.sent.len(), found.checks_sent), (1, 1));
        assert_eq!(found.record.check.as_ref().unwrap().status, Some(200));
        // Not found: sent again, after a backoff, and this time it answers.
        let missing = write(
            vec![Ok((503, vec![])), Ok((201, vec![]))],
            vec![Ok((404, vec![]))],
        );
        assert_eq!(missing.record.ending, Ending::Decided(StopWhy::Success));
        assert_eq!((missing.sent.len(), missing.checks_sent), (2, 1));
        assert_eq!(missing.sleeps.len(), 1);
        // Neither: a person decides; nothing is sent again.
        for unclear in [Ok((500, vec![])), Ok((403, vec![])), Err(Phase::BeforeSend)] {
            let ran = write(vec![Ok((503, vec![])), Ok((201, vec![]))], vec![unclear]);
            assert_eq!(ran.record.kind(), Kind::NeedsHuman);
            assert_eq!((ran.sent.len(), ran.checks_sent), (1, 1));
        }
        // A 401 tells nothing new: no check, as before.
        let refused = write(vec![Ok((401, vec![]))], vec![Ok((200, vec![]))]);
        assert_eq!(refused.record.kind(), Kind::NonRetryable);
        assert_eq!(refused.checks_sent, 0);
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

    /// A scope whose gate another request's Retry-After closed until `ms`.
    fn gated_until(ms: u64) -> ScopeState {
        ScopeState {
            next_allowed_at: Some(at_ms(ms)),
            gate_cause: Some(scope::GateCause::RetryAfter),
            gate_by: Some("another".into()),
            ..ScopeState::default()
        }
    }

    #[test]
    fn a_gate_another_request_closed_is_waited_for_before_sending() {
        let mut case = Case::new(vec![Ok((200, vec![]))]);
        case.scope = Some(gated_until(1_500));
        let (record, sent, sleeps) = case.run();
        assert_eq!(record.kind(), Kind::Succeeded);
        assert_eq!(sent.len(), 1);
        assert_eq!(sleeps, [1_500]);
        assert_eq!(
            record.scope_waits,
            [(
                Duration::from_millis(1_500),
                scope::Wait::Gate(scope::GateCause::RetryAfter)
            )]
        );
    }

    #[test]
    fn a_gate_wait_cut_short_still_says_when_the_gate_opens() {
        let mut case = Case::new(vec![Ok((200, vec![]))]);
        case.scope = Some(gated_until(1_500));
        case.cancel_after = Some(1);
        let (record, sent, _) = case.run();
        assert_eq!(record.ending, Ending::Cancelled(Signal::Interrupt));
        assert!(sent.is_empty());
        assert_eq!(
            record.next_allowed_at,
            Some(epoch() + Duration::from_millis(1_500))
        );
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
            record.scope_waits,
            [(
                Duration::from_secs(2),
                scope::Wait::HalfOpen(scope::Level::Scope)
            )]
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
        assert_eq!(record.scope_waits.len(), 2, "{:?}", record.scope_waits);
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

    #[test]
    fn a_spent_retry_budget_ends_the_run_after_its_first_attempt() {
        // Spent, by another run a moment ago.
        let spent = || {
            Some(ScopeState {
                retry_budget: RetryBudget {
                    spent: crate::rules::retry_budget::CAPACITY,
                    at: at_ms(0),
                    spenders: vec![Spender {
                        by: "another".into(),
                        at: at_ms(0),
                    }],
                },
                ..ScopeState::default()
            })
        };
        let mut case = Case::new(vec![Ok((503, vec![])), Ok((200, vec![]))]);
        case.scope = spent();
        let (record, sent, sleeps) = case.run();
        assert_eq!(record.kind(), Kind::RetryExhausted);
        assert_eq!(
            record.ending,
            Ending::Decided(decision::StopWhy::RetryBudgetSpent)
        );
        assert_eq!(sent.len(), 1);
        assert!(sleeps.is_empty(), "ends at once: {sleeps:?}");
        // One retry is back 10 s after the record's time, 10 ms ago.
        assert_eq!(
            record.next_allowed_at,
            Some(epoch() + Duration::from_secs(10))
        );
        // Off, the same scope retries.
        let mut case = Case::new(vec![Ok((503, vec![])), Ok((200, vec![]))]);
        case.scope = spent();
        case.retry_budget = None;
        let (record, sent, _) = case.run();
        assert_eq!(record.kind(), Kind::Succeeded);
        assert_eq!(sent.len(), 2);
        // Spent by nobody else lately: a run alone retries.
        let mut case = Case::new(vec![Ok((503, vec![])), Ok((200, vec![]))]);
        case.scope = spent();
        if let Some(s) = case.scope.as_mut() {
            s.retry_budget.spenders.clear();
        }
        let (record, sent, _) = case.run();
        assert_eq!(record.kind(), Kind::Succeeded);
        assert_eq!(sent.len(), 2);
    }

    #[test]
    fn under_rate_auto_a_429_cuts_the_pace_and_leaves_the_gate_open() {
        let mut case = Case::new(vec![Ok((429, vec![])), Ok((200, vec![]))]);
        case.draw = 0.5;
        case.scope = Some(ScopeState::default());
        case.rate_auto = true;
        case.elsewhere = Some((100, |s| {
            assert_eq!(s.next_allowed_at, None, "{s:?}");
            assert!(s.pace.as_ref().is_some_and(|p| p.peak.is_some()), "{s:?}");
        }));
        let (record, sent, sleeps) = case.run();
        assert_eq!(record.kind(), Kind::Succeeded);
        assert_eq!(sent.len(), 2);
        // Its own backoff, and no gate after it.
        assert_eq!(sleeps[0], 250);
    }

    #[test]
    fn a_429_without_a_delay_closes_the_gate_for_the_backoff_chosen() {
        let mut case = Case::new(vec![Ok((429, vec![])), Ok((200, vec![]))]);
        case.draw = 0.5;
        case.scope = Some(ScopeState::default());
        // During the backoff another process finds the gate closed for it,
        // a retry spent; it closes the gate further, for another reason.
        case.elsewhere = Some((100, |s| {
            assert_eq!(s.gate_cause, Some(scope::GateCause::Backoff), "{s:?}");
            assert_eq!(s.next_allowed_at, Some(at_ms(10 + 250)));
            assert_eq!(s.retry_budget.spent, crate::rules::retry_budget::RETRY);
            s.next_allowed_at = Some(at_ms(1_000));
            s.gate_cause = Some(scope::GateCause::RetryAfter);
            s.gate_by = Some("another".into());
        }));
        let (record, sent, sleeps) = case.run();
        assert_eq!(record.kind(), Kind::Succeeded);
        assert_eq!(sent.len(), 2);
        // Its own backoff, then the other process's gate.
        assert_eq!(sleeps[0], 250);
        assert_eq!(sleeps.len(), 2, "{sleeps:?}");
        assert!(sleeps[1] >= 740, "{sleeps:?}");
    }

    #[test]
    fn a_lone_run_against_a_host_that_is_down_makes_every_attempt_asked() {
        let connect = Duration::from_secs(10);
        let case = |attempts, draw, takes, old: bool| {
            let mut case = Case::new(vec![Err(Phase::BeforeSend)]);
            case.policy.attempts = attempts;
            case.draw = draw;
            case.takes = takes;
            case.scope = Some(ScopeState::default());
            case.breaker = case.policy.breaker_intervals(None);
            let scope = ScopePolicy {
                rate_interval: None,
                breaker_threshold: 5,
                breaker_first: case.breaker.0,
                breaker_cooldown: case.breaker.1,
                probe_ttl: Duration::ZERO,
                retry_budget: None,
                max_delayed: None,
            };
            case.policy.budget = decision::default_budget(&case.policy, &scope, connect);
            if old {
                // The defaults before: a 30 s cooldown and a 60 s budget.
                case.breaker.1 = Duration::from_secs(30);
                case.policy.budget = Duration::from_secs(60);
            }
            case.run()
        };
        // Refused at once, or after the whole connect timeout; the backoff
        // drawn at its least, its middle and its most.
        for takes in [Duration::from_millis(10), connect] {
            for draw in [0.0, 0.5, 0.999_999] {
                for attempts in [4, 6, 20, 45] {
                    let (record, sent, _) = case(attempts, draw, takes, false);
                    let what = format!("--attempts {attempts}, draw {draw}, {takes:?} each");
                    assert_eq!(sent.len(), attempts as usize, "{what}: {:?}", record.ending);
                    // Its own failures opened the breaker, once there were enough.
                    let kind = if attempts >= 5 {
                        Kind::CircuitOpen
                    } else {
                        Kind::RetryExhausted
                    };
                    assert_eq!(record.kind(), kind, "{what}");
                }
            }
        }
        let (record, sent, _) = case(20, 0.5, Duration::from_millis(10), true);
        assert!(
            sent.len() < 20,
            "the old defaults cut it short: {}",
            sent.len()
        );
        assert_eq!(record.kind(), Kind::CircuitOpen);
    }
}
