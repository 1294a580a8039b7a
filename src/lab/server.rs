//! The lab server: accepts connections (a thread each), decides every answer
//! (limiter or script), records it, then delivers it, faults included.

use std::collections::HashMap;
use std::io::{self, BufReader, Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime};

use serde_json::json;

use super::http::{self, ReadError};
use super::limiter::{EarlyRetries, Limiter, Quota};
use super::lock;
use super::record::{Record, Summary};
use super::script::{Fault, Script, Step};

/// How long a client may stall mid-request, or leave our answer unread,
/// before its connection is dropped: stuck clients must not hold threads forever.
const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// After answering, how long (and how much) to drain what the client still
/// sends; see `close`.
const LINGER: Duration = Duration::from_secs(1);
const LINGER_BYTES: u64 = 1 << 20;
/// How often waiting connection threads look at the stop flag.
const POLL: Duration = Duration::from_millis(10);

/// What the lab answers with.
#[derive(Debug, Clone)]
pub struct LabConfig {
    /// Requests per client per window (ignored with a script).
    pub limit: u32,
    pub window: Duration,
    /// A retry this close before its Retry-After moment is still on time.
    pub skew: Duration,
    /// Answers from a fixed sequence instead of the limiter.
    pub script: Option<Script>,
}

/// Called from the connection thread for each finished request, in the
/// lab's lock (so calls never overlap): it must not call back into the `Lab`.
pub type OnRecord = Box<dyn Fn(&Record) + Send + Sync>;

/// A running lab, listening on 127.0.0.1. Stops when dropped.
pub struct Lab {
    port: u16,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

struct Shared {
    started: Instant,
    stop: AtomicBool,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    state: Mutex<State>,
    /// Every open connection, so that stopping can cut them all at once
    /// instead of waiting out their timeouts and delays.
    connections: Mutex<HashMap<u64, TcpStream>>,
    on_record: Option<OnRecord>,
}

struct State {
    next_seq: u64,
    answers: Answers,
    early: EarlyRetries,
    /// Sorted by `seq`.
    records: Vec<Record>,
}

enum Answers {
    Limited(Limiter),
    Scripted { script: Script, next: usize },
}

impl Lab {
    /// Starts listening on 127.0.0.1:`port` (0 picks a free port).
    pub fn start(port: u16, config: LabConfig) -> io::Result<Lab> {
        Lab::start_with(port, config, None)
    }

    /// Like `start`, but calls `on_record` (from the connection thread) for
    /// each finished request, just before its answer is written.
    pub fn start_with(
        port: u16,
        config: LabConfig,
        on_record: Option<OnRecord>,
    ) -> io::Result<Lab> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port))?;
        let port = listener.local_addr()?.port();
        let answers = match config.script {
            Some(script) => Answers::Scripted { script, next: 0 },
            None => Answers::Limited(Limiter::new(config.limit, config.window)),
        };
        let shared = Arc::new(Shared {
            started: Instant::now(),
            stop: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            state: Mutex::new(State {
                next_seq: 0,
                answers,
                early: EarlyRetries::new(config.skew),
                records: Vec::new(),
            }),
            connections: Mutex::new(HashMap::new()),
            on_record,
        });
        let acceptor = thread::Builder::new().name("lab-accept".into()).spawn({
            let shared = Arc::clone(&shared);
            move || accept_loop(&listener, &shared)
        })?;
        Ok(Lab {
            port,
            shared,
            acceptor: Some(acceptor),
        })
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Every request answered (or dropped) so far, in arrival order. A
    /// delayed answer's record appears when its delay is over.
    pub fn records(&self) -> Vec<Record> {
        lock(&self.shared.state).records.clone()
    }

    pub fn summary(&self) -> Summary {
        Summary::from_records(&lock(&self.shared.state).records)
    }

    /// The most requests ever in flight at once (fully read, answer not yet written).
    pub fn max_in_flight(&self) -> usize {
        self.shared.max_in_flight.load(SeqCst)
    }

    /// Stops accepting, cuts open connections, waits for their threads, and
    /// returns the final summary.
    pub fn stop(mut self) -> Summary {
        self.shut_down();
        self.summary()
    }

    fn shut_down(&mut self) {
        if let Some(acceptor) = self.acceptor.take() {
            self.shared.stop.store(true, SeqCst);
            // `accept` blocks; a connection of our own wakes it to see the flag.
            let _ = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port));
            let _ = acceptor.join();
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.shut_down();
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    let mut workers: Vec<JoinHandle<()>> = Vec::new();
    for (id, incoming) in (0u64..).zip(listener.incoming()) {
        if shared.stop.load(SeqCst) {
            break;
        }
        let Ok(stream) = incoming else {
            // E.g. out of file descriptors: wait for some to free up rather than spin.
            thread::sleep(POLL);
            continue;
        };
        let connected = Instant::now();
        let Ok(handle) = stream.try_clone() else {
            continue;
        };
        // Registered here, not in the worker, so that the sweep below cannot miss it.
        lock(&shared.connections).insert(id, handle);
        workers.retain(|worker| !worker.is_finished());
        let worker = thread::Builder::new().name("lab-conn".into()).spawn({
            let shared = Arc::clone(shared);
            move || {
                let _registered = Registered {
                    shared: &shared,
                    id,
                };
                serve(&shared, &stream, connected);
            }
        });
        match worker {
            Ok(worker) => workers.push(worker),
            Err(_) => drop(lock(&shared.connections).remove(&id)),
        }
    }
    for stream in lock(&shared.connections).values() {
        let _ = stream.shutdown(Shutdown::Both);
    }
    for worker in workers {
        let _ = worker.join();
    }
}

/// Removes a connection from the registry when its thread ends, even by panic;
/// the registry's copy of the socket would otherwise keep it open.
struct Registered<'a> {
    shared: &'a Shared,
    id: u64,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        lock(&self.shared.connections).remove(&self.id);
    }
}

/// Counts a request as in flight while it lives.
struct InFlight<'a>(&'a AtomicUsize);

impl<'a> InFlight<'a> {
    fn enter(shared: &'a Shared) -> InFlight<'a> {
        let now = shared.in_flight.fetch_add(1, SeqCst) + 1;
        shared.max_in_flight.fetch_max(now, SeqCst);
        InFlight(&shared.in_flight)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

/// A decided answer, not yet delivered.
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    delay: Duration,
    fault: Option<Fault>,
}

impl Reply {
    /// Default mode: the limiter's verdict, with the rate-limit header fields.
    fn limited(client: &str, limiter: &Limiter, quota: &Quota) -> Reply {
        let mut headers = vec![
            ("RateLimit-Policy".to_owned(), limiter.policy_field()),
            ("RateLimit".to_owned(), quota.field()),
            ("Content-Type".to_owned(), "application/json".to_owned()),
        ];
        let (status, body) = if quota.allowed {
            // Written by hand to keep the documented key order (`json!` sorts keys).
            let body = format!(
                r#"{{"ok":true,"client":{},"remaining":{}}}"#,
                json!(client),
                quota.remaining
            );
            (200, body)
        } else {
            let seconds = quota.retry_after_secs();
            headers.push(("Retry-After".to_owned(), seconds.to_string()));
            let body = json!({"error": "rate_limited", "retry_after": seconds});
            (429, body.to_string())
        };
        Reply {
            status,
            headers,
            body: body.into_bytes(),
            delay: Duration::ZERO,
            fault: None,
        }
    }

    fn scripted(step: &Step) -> Reply {
        let mut headers = step.headers.clone();
        let body = match &step.body {
            Some(body) => body.clone(),
            None if http::forbids_body(step.status) => Vec::new(),
            None => {
                if http::header(&headers, "content-type").is_none() {
                    headers.push(("Content-Type".to_owned(), "application/json".to_owned()));
                }
                json!({"status": step.status}).to_string().into_bytes()
            }
        };
        Reply {
            status: step.status,
            headers,
            body,
            delay: step.delay,
            fault: step.fault,
        }
    }

    /// The answer to a request that could not be read; no answer if the client is gone.
    fn refusal(error: &ReadError) -> Reply {
        let (status, fault) = match error.status() {
            Some(status) => (status, None),
            None => (400, Some(Fault::Close)),
        };
        let kind = match status {
            413 => "content_too_large",
            431 => "header_too_large",
            _ => "bad_request",
        };
        Reply {
            status,
            headers: vec![("Content-Type".to_owned(), "application/json".to_owned())],
            body: json!({"error": kind, "detail": error.detail()})
                .to_string()
                .into_bytes(),
            delay: Duration::ZERO,
            fault,
        }
    }

    /// Whether the client gets a status line at all.
    fn answers(&self) -> bool {
        !matches!(self.fault, Some(Fault::Close | Fault::Hang))
    }
}

impl Shared {
    /// Numbers a request whose head was just read, and timestamps it; under
    /// the lock, so that numbering and timestamps agree.
    fn arrive(&self) -> (u64, Instant) {
        let mut state = lock(&self.state);
        let seq = state.next_seq;
        state.next_seq += 1;
        (seq, Instant::now())
    }

    /// Judges a fully read request (noting an early retry in its record) and picks the answer.
    fn decide(&self, record: &mut Record, arrival: Instant, connected: Instant) -> Reply {
        let mut state = lock(&self.state);
        let State { answers, early, .. } = &mut *state;
        let early_by = early.check(&record.client, arrival, connected);
        record.early_by_ms = early_by.map(|by| u64::try_from(by.as_millis()).unwrap_or(u64::MAX));
        match answers {
            Answers::Limited(limiter) => {
                // An early retry is refused without touching its window: it
                // only learns how long it still has to wait.
                let quota = match early_by {
                    Some(wait) => Quota::refused(wait),
                    None => limiter.admit(&record.client, arrival),
                };
                Reply::limited(&record.client, limiter, &quota)
            }
            Answers::Scripted { script, next } => {
                let step = script.step(*next);
                *next = next.saturating_add(1);
                Reply::scripted(step)
            }
        }
    }

    /// Files the record at once, before any delay, so that a client which
    /// gives up waiting is still seen to have asked.
    fn file(&self, record: &Record) {
        let mut state = lock(&self.state);
        let at = state.records.partition_point(|r| r.seq < record.seq);
        state.records.insert(at, record.clone());
    }

    /// After the answer was decided and any delay waited: remembers the
    /// Retry-After it carries, corrects the filed status when the answer was
    /// dropped, and reports the request. The lock is held throughout, so
    /// that a client which has read the answer finds the record up to date.
    fn finish(&self, record: &Record, reply: &Reply) {
        let mut state = lock(&self.state);
        let wait = http::header(&reply.headers, "retry-after")
            .filter(|_| reply.answers())
            .and_then(|value| told_to_wait(value, http::header(&reply.headers, "date")));
        if let Some(wait) = wait {
            state
                .early
                .told_to_wait(&record.client, Instant::now(), wait);
        }
        if let Some(filed) = state.records.iter_mut().find(|r| r.seq == record.seq) {
            filed.status = record.status;
        }
        if let Some(on_record) = &self.on_record {
            on_record(record);
        }
    }
}

/// How long a Retry-After the lab sent told the client to wait, worked out
/// by the lab itself rather than by the client's parser (a judge that shared
/// the client's misreading would agree with it): decimal seconds, or an
/// HTTP-date counted from the answer's own `Date`; for a list, the longest
/// member. Anything else told the client nothing.
fn told_to_wait(value: &str, date: Option<&str>) -> Option<Duration> {
    let sent = date
        .and_then(|d| httpdate::parse_http_date(d.trim()).ok())
        .unwrap_or_else(SystemTime::now);
    let seconds = |member: &str| {
        let member = member.trim();
        let digits = member.strip_prefix('-').unwrap_or(member);
        if !digits.bytes().any(|b| b.is_ascii_digit())
            || !digits.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        {
            return None;
        }
        let secs = member.parse::<f64>().ok()?.max(0.0);
        // Beyond what a Duration holds is "forever"; the limiter caps it.
        Some(Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX))
    };
    let until = |member: &str| {
        let at = httpdate::parse_http_date(member.trim()).ok()?;
        Some(at.duration_since(sent).unwrap_or_default())
    };
    if let Some(wait) = seconds(value).or_else(|| until(value)) {
        return Some(wait);
    }
    let pieces: Vec<&str> = value.split(',').collect();
    let dates = pieces
        .windows(2)
        .filter_map(|w| until(&format!("{},{}", w[0], w[1])));
    pieces.iter().filter_map(|p| seconds(p)).chain(dates).max()
}

/// One connection: one request, one answer.
/// `connected` is when the connection was accepted: a request on a
/// connection opened before a Retry-After was sent cannot be a retry of it.
fn serve(shared: &Shared, mut stream: &TcpStream, connected: Instant) {
    // Failing to set these loses only the protection, not the request.
    let _ = stream.set_read_timeout(Some(IO_TIMEOUT));
    let _ = stream.set_write_timeout(Some(IO_TIMEOUT));
    let _ = stream.set_nodelay(true);
    let mut reader = BufReader::new(stream);
    let head = match http::read_head(&mut reader) {
        Ok(head) => head,
        Err(error) => {
            // Unparseable requests are answered but not recorded: they have no method or path.
            let reply = Reply::refusal(&error);
            deliver(shared, stream, &reply, false);
            close(stream, reply.answers());
            return;
        }
    };
    let (seq, arrival) = shared.arrive();
    let mut record = Record {
        seq,
        at: arrival.saturating_duration_since(shared.started),
        time: SystemTime::now(),
        client: client_key(&head.headers, stream),
        method: head.method,
        path: head.target,
        headers: head.headers,
        body: Vec::new(),
        status: None,
        early_by_ms: None,
    };
    if http::expects_continue(&record.headers) {
        let _ = stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
    }
    let mut reply = match http::read_body(&mut reader, &record.headers) {
        Ok(body) => {
            record.body = body;
            shared.decide(&mut record, arrival, connected)
        }
        Err(error) => Reply::refusal(&error),
    };
    record.status = reply.answers().then_some(reply.status);
    shared.file(&record);
    let in_flight = InFlight::enter(shared);
    if !pause(reply.delay, &shared.stop) {
        // The lab is stopping: nobody will wait for this answer.
        reply.fault = Some(Fault::Close);
    }
    record.status = reply.answers().then_some(reply.status);
    let is_head = record.method == "HEAD";
    shared.finish(&record, &reply);
    deliver(shared, stream, &reply, is_head);
    drop(in_flight);
    close(stream, reply.answers());
}

/// The `X-Client-Key` header, else the peer's IP address.
fn client_key(headers: &[(String, String)], stream: &TcpStream) -> String {
    match http::header(headers, "x-client-key").map(str::trim) {
        Some(key) if !key.is_empty() => key.to_owned(),
        _ => stream
            .peer_addr()
            .map_or_else(|_| "unknown".to_owned(), |addr| addr.ip().to_string()),
    }
}

/// Waits `delay` (in slices, to notice a stop); false if the lab stopped first.
fn pause(delay: Duration, stop: &AtomicBool) -> bool {
    // `None`: too far ahead to represent, i.e. until the lab stops.
    let until = Instant::now().checked_add(delay);
    loop {
        let left = until.map_or(POLL, |until| {
            until.saturating_duration_since(Instant::now())
        });
        if left.is_zero() {
            return true;
        }
        if stop.load(SeqCst) {
            return false;
        }
        thread::sleep(left.min(POLL));
    }
}

fn deliver(shared: &Shared, mut stream: &TcpStream, reply: &Reply, is_head: bool) {
    let length = |declared| (!http::forbids_body(reply.status)).then_some(declared);
    let (declared, sent) = match reply.fault {
        Some(Fault::Close) => return,
        Some(Fault::Hang) => {
            pause(Duration::MAX, &shared.stop);
            return;
        }
        Some(Fault::Truncate) => {
            let sent = reply.body.len() / 2;
            (reply.body.len().max(sent + 1), sent)
        }
        None => (reply.body.len(), reply.body.len()),
    };
    let mut bytes = http::response_head(reply.status, &reply.headers, length(declared));
    if !is_head {
        bytes.extend_from_slice(&reply.body[..sent]);
    }
    // A client that has gone away is its own problem, not the lab's.
    let _ = stream.write_all(&bytes);
}

/// Ends the connection. After an answer, closing with unread request bytes
/// would reset the connection and could destroy the answer before the client
/// reads it; so signal the end, then drain what the client still sends.
fn close(stream: &TcpStream, answered: bool) {
    if answered {
        let _ = stream.shutdown(Shutdown::Write);
        let _ = stream.set_read_timeout(Some(LINGER));
        let _ = io::copy(&mut Read::take(stream, LINGER_BYTES), &mut io::sink());
    }
    let _ = stream.shutdown(Shutdown::Both);
}

#[cfg(test)]
mod tests {
    use super::told_to_wait;
    use std::time::Duration;

    #[test]
    fn the_lab_reads_its_own_retry_after() {
        let date = Some("Mon, 30 Nov 2026 10:00:00 GMT");
        let s = |n: f64| Some(Duration::from_secs_f64(n));
        let rows: &[(&str, Option<Duration>)] = &[
            ("3", s(3.0)),
            (" 0.50 ", s(0.5)),
            ("-4", s(0.0)),
            ("Mon, 30 Nov 2026 10:00:07 GMT", s(7.0)),
            ("Mon, 30 Nov 2026 09:00:00 GMT", s(0.0)),
            ("2, 5", s(5.0)),
            ("1, Mon, 30 Nov 2026 10:00:04 GMT", s(4.0)),
            ("99999999999999999999999", Some(Duration::MAX)),
            ("soon", None),
            ("1e3", None),
            ("inf", None),
            ("", None),
        ];
        for (value, wait) in rows {
            assert_eq!(told_to_wait(value, date), *wait, "{value:?}");
        }
    }
}
