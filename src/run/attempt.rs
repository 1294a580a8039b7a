//! One attempt and its judgement: send the request, read the answer's head
//! into an `Observation`, deliver a 2xx body (continued where an earlier
//! one broke off, or checked against `--require` first) or keep the start
//! of a failed one, and classify the result with the decision table. It
//! hands back what it found as an [`Attempted`] value; only the body's
//! continuation across attempts ([`Transfer`]) is carried in and out.

use std::io::{self, ErrorKind, Read};
use std::time::{Duration, Instant};

use super::{Event, Loop};
use crate::clock::Clock;
use crate::edge::http::{self, Failure, Limits, Reply, Transport};
use crate::edge::sink::{DeliverError, Sink, Start};
use crate::rules::attempt::{Observation, Phase};
use crate::rules::contract;
use crate::rules::decision::{self, Verdict};
use crate::rules::delay::{self, ServerDelay};
use crate::rules::ratelimit;
use crate::rules::resume::{self, Continuation};
use crate::run::record::Attempt;
use crate::units::size_text;

/// How much of a failed attempt's body is kept (the outcome shows 256 bytes).
const ERROR_BODY_KEPT: u64 = 256;

/// The largest body `--require` will hold in memory to check.
const CONTRACT_LIMIT: u64 = 64 << 20;

/// What an attempt came to: a verdict of the decision table, or a failure
/// of abide's own (the body could not be written).
pub(super) enum Judged {
    Verdict(Verdict),
    Internal(String),
}

/// The body's continuation across attempts: where the next attempt asks it
/// to continue, the bytes continued rather than downloaded again, and its
/// whole size when an answer said it.
#[derive(Default)]
pub(super) struct Transfer {
    pub resume: Option<resume::From>,
    pub resumed: u64,
    pub expected: Option<u64>,
}

/// Which attempt of the run this is: its number, and the run's start and
/// clock, from which the attempt's end is measured.
pub(super) struct Turn<'c> {
    pub number: u32,
    pub start: Instant,
    pub clock: &'c dyn Clock,
}

/// What an HTTP answer leaves for the record, until a later answer
/// replaces it.
pub(super) struct Answer {
    /// Its headers, values masked.
    pub headers: Vec<(String, String)>,
    /// Its head, as `-i` and `-D` write it.
    pub head: String,
    /// From sending the attempt to this head.
    pub head_after: Duration,
    /// The kept start of its body when it was not delivered, and whether
    /// there was more.
    pub failed_body: (Vec<u8>, bool),
}

/// The run's error after an attempt.
pub(super) enum LastError {
    /// The attempt said nothing new (abide's own write failed).
    Kept,
    Now(Option<String>),
}

/// One attempt, judged, with what it teaches the scope and the record.
pub(super) struct Attempted {
    pub judged: Judged,
    pub observation: Observation,
    pub server: Option<ServerDelay>,
    /// The answer's word on its rate-limit quota.
    pub quota: Option<crate::rules::pace::Quota>,
    pub attempt: Attempt,
    /// `None` when no answer came (a transport failure).
    pub answer: Option<Answer>,
    pub error: LastError,
    /// Server delay values that were present but unusable.
    pub ignored_delays: Vec<String>,
    /// The provider's id for what a 2xx created (a 201's `Location`, or
    /// the `--id-pointer` value).
    pub operation_id: Option<String>,
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

/// A 2xx body held in memory that met `--require`, and its `--id-pointer`
/// value.
pub(super) struct Held {
    pub body: Vec<u8>,
    pub pointed: Option<String>,
}

/// A 2xx body that broke `--require`: why, and the body (kept for the
/// agent object).
pub(super) struct Breach {
    pub detail: String,
    pub body: Vec<u8>,
}

impl Loop<'_> {
    /// Sends one attempt within `limits` and judges what came of it.
    pub(super) fn attempt(
        &self,
        transport: &mut dyn Transport,
        limits: Limits,
        sink: &mut Sink,
        turn: &Turn,
        transfer: &mut Transfer,
        on_event: &mut dyn FnMut(Event),
    ) -> Attempted {
        let sent = turn.clock.now();
        match transport.send(limits, transfer.resume.as_ref()) {
            Ok(reply) => {
                let head_after = turn.clock.now() - sent;
                self.answered(reply, head_after, sink, turn, transfer, on_event)
            }
            Err(failure) => self.failed(failure, turn, on_event),
        }
    }

    /// An HTTP answer: deliver it when it is the result, else keep the start
    /// of its body for the outcome.
    fn answered(
        &self,
        mut reply: Reply,
        head_after: Duration,
        sink: &mut Sink,
        turn: &Turn,
        transfer: &mut Transfer,
        on_event: &mut dyn FnMut(Event),
    ) -> Attempted {
        let headers = || reply.headers.iter().map(|(n, v)| (n.as_str(), v.as_str()));
        let now = turn.clock.wall();
        let delays = delay::server_delay(headers(), now);
        let quota = ratelimit::quota(headers(), now);
        // A success's Retry-After is no request to wait (RFC 9110 gives it
        // meaning on 503 and 3xx): it neither closes the scope's gate for
        // later runs nor names a next_allowed_at; RateLimit fields stay the
        // pacing source of successes.
        let server = delays.delay.filter(|_| !(200..300).contains(&reply.status));
        let mut observation = Observation::Status {
            status: reply.status,
            should_retry: should_retry(&reply),
        };
        let masked: Vec<(String, String)> = reply
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), self.redactor.text(value)))
            .collect();
        let head = crate::edge::http::head(reply.version, reply.status, &masked);
        on_event(Event::Answered {
            attempt: turn.number,
            status: reply.status,
            server,
            head: &head,
        });
        let range = reply.header("content-range");
        let whole =
            transfer.resume.is_some() && resume::already_whole(reply.status, range, sink.held());
        let mut judged = Judged::Verdict(if whole {
            Verdict::Success
        } else {
            decision::classify_keyed(observation, self.replay, self.keyed, self.policy)
        });
        let mut operation_id = None;
        let mut error = None;
        let mut last_error = LastError::Now(None);
        let mut failed_body = (Vec::new(), false);
        if whole {
            transfer.resume = None;
            transfer.resumed += sink.held();
        } else if matches!(judged, Judged::Verdict(Verdict::Success)) {
            transfer.expected = length(&reply);
            sink.head(&head);
            let delivered = if self.require.is_empty() && self.id_pointer.is_none() {
                self.deliver(&mut reply, sink, transfer, turn.number, on_event)
                    .map(|()| Ok(None))
            } else {
                self.check_contract(&mut reply, sink, transfer)
            };
            match delivered {
                Ok(Ok(pointed)) => {
                    operation_id = pointed.or_else(|| self.created(&reply));
                }
                Ok(Err(Breach { detail, body })) => {
                    judged = Judged::Verdict(Verdict::Invalid);
                    last_error = LastError::Now(Some(detail));
                    failed_body = kept(body, self.keep_body);
                }
                Err(Undelivered::Broken { phase, message }) => {
                    observation = Observation::Transport(phase);
                    judged =
                        Judged::Verdict(decision::classify(observation, self.replay, self.policy));
                    error = Some(self.redactor.text(&message));
                    last_error = LastError::Now(error.clone());
                }
                Err(Undelivered::TooDense(message)) => {
                    judged = Judged::Verdict(Verdict::Invalid);
                    error = Some(message.clone());
                    last_error = LastError::Now(Some(message));
                }
                Err(Undelivered::Write(e)) if e.kind() == ErrorKind::BrokenPipe => {
                    // `abide … | head`: the reader has what it wanted.
                }
                Err(Undelivered::Write(e)) => {
                    judged = Judged::Internal(format!("cannot write the body: {e}"));
                    last_error = LastError::Kept;
                }
            }
        } else {
            // Beyond the error's cut by the longest secret: masked, then cut.
            let reach = self.redactor.reach() as u64;
            let limit = self.keep_body.max(ERROR_BODY_KEPT + reach);
            let mut body = Vec::new();
            let whole = (&mut reply.body)
                .take(limit + 1)
                .read_to_end(&mut body)
                .is_ok();
            let (start, _) = self.redactor.cut(&body, ERROR_BODY_KEPT as usize);
            let text = String::from_utf8_lossy(&start).trim().to_string();
            last_error = LastError::Now((!text.is_empty()).then_some(text));
            failed_body = kept(body, limit);
            // A body that broke off is not whole either (--fail-with-body).
            failed_body.1 |= !whole;
        }
        if matches!(judged, Judged::Verdict(Verdict::Success)) {
            last_error = LastError::Now(None);
        }
        Attempted {
            judged,
            observation,
            server,
            quota,
            attempt: attempt(turn, Some(reply.status), error, server, masked.clone()),
            answer: Some(Answer {
                headers: masked,
                head,
                head_after,
                failed_body,
            }),
            error: last_error,
            ignored_delays: delays.ignored,
            operation_id,
        }
    }

    /// A 201's `Location`: where the provider put what the write created.
    fn created(&self, reply: &Reply) -> Option<String> {
        let location = reply.header("location").filter(|_| reply.status == 201)?;
        Some(self.redactor.text(&crate::redact::url(location.trim())))
    }

    /// Delivers a 2xx body: after the bytes held when the answer continues
    /// them, else from its start where that can still be done cleanly.
    fn deliver(
        &self,
        reply: &mut Reply,
        sink: &mut Sink,
        transfer: &mut Transfer,
        number: u32,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<(), Undelivered> {
        let held = sink.held();
        let range = reply
            .header("content-range")
            .and_then(resume::content_range);
        let asked = transfer.resume.take();
        let headers = || reply.headers.iter().map(|(n, v)| (n.as_str(), v.as_str()));
        let validator = resume::validator(headers(), reply.decoded);
        let (start, if_range) = match resume::continuation(reply.status, range, held) {
            Continuation::Fresh => (Start::Over, validator),
            Continuation::StartsOver if sink.clean() => (Start::Over, validator),
            Continuation::Continues => {
                let total = range.and_then(|r| r.total);
                transfer.expected = total;
                transfer.resumed += held;
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
            Err(e) => Err(self.undelivered(e, sink, transfer, if_range)),
        }
    }

    /// What a body that was not delivered means for the next attempt: it
    /// continues the body when the answer named a version to ask for
    /// (`if_range`), or starts over when nothing of it was seen yet.
    fn undelivered(
        &self,
        error: DeliverError,
        sink: &Sink,
        transfer: &mut Transfer,
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
        let of = transfer
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
                transfer.resume = Some(resume::From {
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
    /// delivers it only if it holds, with its `--id-pointer` value;
    /// otherwise hands back the breach.
    fn check_contract(
        &self,
        reply: &mut Reply,
        sink: &mut Sink,
        transfer: &mut Transfer,
    ) -> Result<Result<Option<String>, Breach>, Undelivered> {
        let body = match self.judged_body(reply) {
            Ok(judged) => judged,
            Err(e) => return Err(self.undelivered(DeliverError::Read(e), sink, transfer, None)),
        };
        match body {
            Ok(Held { body, pointed }) => sink
                .deliver(&mut body.as_slice(), Start::Over)
                .map(|_| Ok(pointed))
                .map_err(|e| self.undelivered(e, sink, transfer, None)),
            Err(breach) => Ok(Err(breach)),
        }
    }

    /// A 2xx body held in memory and judged: against `--require`, with its
    /// `--id-pointer` value; or the breach. An error is a read that failed.
    pub(super) fn judged_body(&self, reply: &mut Reply) -> io::Result<Result<Held, Breach>> {
        let mut body = Vec::new();
        (&mut reply.body)
            .take(CONTRACT_LIMIT + 1)
            .read_to_end(&mut body)?;
        let verdict = if body.len() as u64 > CONTRACT_LIMIT {
            Err("the body is larger than the 64 MiB --require can check".to_string())
        } else {
            contract::check(&body, self.require)
        };
        Ok(match verdict {
            Ok(()) => {
                let pointed = self
                    .id_pointer
                    .and_then(|p| contract::pointed_id(&body, p))
                    .map(|id| self.redactor.text(&id));
                Ok(Held { body, pointed })
            }
            Err(detail) => Err(Breach { detail, body }),
        })
    }

    /// A transport failure: no answer came.
    fn failed(&self, failure: Failure, turn: &Turn, on_event: &mut dyn FnMut(Event)) -> Attempted {
        let message = self.redactor.text(&failure.message);
        on_event(Event::Failed {
            attempt: turn.number,
            error: &message,
        });
        let observation = Observation::Transport(failure.phase);
        Attempted {
            judged: Judged::Verdict(decision::classify(observation, self.replay, self.policy)),
            observation,
            server: None,
            quota: None,
            attempt: attempt(turn, None, Some(message.clone()), None, Vec::new()),
            answer: None,
            error: LastError::Now(Some(message)),
            ignored_delays: Vec::new(),
            operation_id: None,
        }
    }
}

fn attempt(
    turn: &Turn,
    status: Option<u16>,
    error: Option<String>,
    server_delay: Option<ServerDelay>,
    headers: Vec<(String, String)>,
) -> Attempt {
    Attempt {
        status,
        error,
        server_delay,
        wait: None,
        ended_at: turn.clock.now() - turn.start,
        headers,
    }
}

/// The start of a body that was not delivered, at most `limit` of it, and
/// whether there was more.
fn kept(mut body: Vec<u8>, limit: u64) -> (Vec<u8>, bool) {
    let more = body.len() as u64 > limit;
    body.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    (body, more)
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
