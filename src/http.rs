//! The HTTP edge: one attempt of the request with ureq, its answer as plain
//! data, and its failures sorted by whether the server may have seen them.
//!
//! Each attempt runs on a thread of its own while the caller waits for it or
//! for an interruption: ureq's shutdown cuts reads and writes, but not name
//! resolution or a TCP connect, and a signal must end the run at once
//! whatever the attempt is doing.

use std::fs::File;
use std::io::{self, Read};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use ureq::tls::{Certificate, RootCerts, TlsConfig};
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, DefaultConnector, NextTimeout, Transport as Wire,
};
use ureq::{Agent, SendBody, Timeout};

use crate::decision::Phase;
use crate::decode;
use crate::resume;

/// What a request carries as its body. Files are streamed on every attempt,
/// never held in memory; stdin is read once and replayed from memory, or
/// from the private file it was spooled to (see `plan`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    Empty,
    Bytes(Vec<u8>),
    File(PathBuf),
}

/// The request exactly as every attempt sends it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Body,
}

/// Connection settings that stay the same for the whole run.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub follow_redirects: bool,
    pub proxy: Option<String>,
    pub insecure: bool,
    pub cacert: Option<PathBuf>,
    /// `--compressed`: decode gzip, deflate and br bodies, at most
    /// `max_ratio` times their encoded size.
    pub compressed: bool,
    pub max_ratio: u64,
}

/// Time limits for one attempt.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The answer's head must have arrived within this.
    pub head: Duration,
    /// The whole attempt, body included, ends within this; `None` lets a
    /// body that keeps flowing take as long as it takes.
    pub total: Option<Duration>,
    pub connect: Duration,
    /// The longest time without a byte, waiting for the head or the body.
    pub stall: Duration,
}

/// An HTTP answer: status, headers (names lower-cased) and a streaming body.
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The body is decoded from its Content-Encoding (`--compressed`).
    pub decoded: bool,
    pub body: Box<dyn Read>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A transport failure and when it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub phase: Phase,
    pub message: String,
}

/// Sends one attempt, asking for the rest of a body from `resume` when
/// given; the retry loop sees only this.
pub trait Transport {
    fn send(&mut self, limits: Limits, resume: Option<&resume::From>) -> Result<Reply, Failure>;
}

/// The real transport, over ureq.
pub struct Http {
    agent: Agent,
    /// Shared with the thread of the attempt in flight.
    request: Arc<Request>,
    interrupted: Arc<AtomicBool>,
    compressed: bool,
    max_ratio: u64,
}

/// The size of ureq's read buffer, and of the sink's copy buffer.
pub const BUFFER: usize = 64 * 1024;
/// The largest response head (status line and headers) accepted.
const MAX_HEAD: usize = 60 * 1024;

/// How often a caller waiting for an attempt looks for an interruption.
const POLL: Duration = Duration::from_millis(5);

impl Http {
    pub fn new(settings: &Settings, request: Request) -> Result<Http> {
        let mut tls = TlsConfig::builder().disable_verification(settings.insecure);
        if let Some(path) = &settings.cacert {
            let pem = std::fs::read(path)
                .with_context(|| format!("cannot read --cacert {}", path.display()))?;
            let certs = ureq::tls::parse_pem(&pem)
                .filter_map(|item| match item {
                    Ok(ureq::tls::PemItem::Certificate(cert)) => Some(Ok(cert)),
                    Ok(_) => None,
                    Err(e) => Some(Err(e)),
                })
                .collect::<Result<Vec<Certificate<'static>>, _>>()
                .with_context(|| format!("--cacert {} is not valid PEM", path.display()))?;
            anyhow::ensure!(
                !certs.is_empty(),
                "--cacert {} holds no certificate",
                path.display()
            );
            tls = tls.root_certs(RootCerts::Specific(Arc::new(certs)));
        }
        let mut config = Agent::config_builder()
            // Reads of 64 KiB copy out of the socket faster than ureq's
            // default 128 KiB: a loopback download took 40% less system time.
            .input_buffer_size(BUFFER)
            // Below the buffer's size, so that an oversized head is refused as
            // such: a head that fills the whole buffer reads as a closed connection.
            .max_response_header_size(MAX_HEAD)
            .http_status_as_error(false)
            .allow_non_standard_methods(true)
            .max_redirects(if settings.follow_redirects { 10 } else { 0 })
            .user_agent(ureq::config::AutoHeaderValue::None)
            .tls_config(tls.build());
        if let Some(proxy) = &settings.proxy {
            let proxy = ureq::Proxy::new(proxy).map_err(|e| anyhow::anyhow!("bad --proxy: {e}"))?;
            config = config.proxy(Some(proxy));
        }
        let connector = DefaultConnector::default().chain(ResetIsNoEnd);
        Ok(Http {
            agent: Agent::with_parts(
                config.build(),
                connector,
                ureq::unversioned::resolver::DefaultResolver::default(),
            ),
            request: Arc::new(request),
            interrupted: Arc::default(),
            compressed: settings.compressed,
            max_ratio: settings.max_ratio,
        })
    }

    /// Cuts any attempt in flight when called (from another thread): the
    /// caller stops waiting for it, its connection is shut, and a body
    /// being read fails instead of ending early.
    pub fn interrupter(&self) -> impl Fn() + Send + 'static {
        let agent = self.agent.clone();
        let interrupted = Arc::clone(&self.interrupted);
        move || {
            interrupted.store(true, Ordering::SeqCst);
            agent.clone().shutdown();
        }
    }

    fn interrupted(&self) -> Failure {
        Failure {
            // Whether the server saw it is unknown; the run ends anyway.
            phase: Phase::AfterSend,
            message: "interrupted".into(),
        }
    }
}

/// One attempt, start to response head, on the attempt's own thread.
fn attempt(
    agent: &Agent,
    request: &Request,
    limits: Limits,
    resume: Option<&resume::From>,
) -> Result<ureq::http::Response<ureq::Body>, Failure> {
    let mut builder = ureq::http::Request::builder()
        .method(request.method.as_str())
        .uri(request.url.as_str());
    for (name, value) in &request.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    for (name, value) in resume.iter().flat_map(|from| from.headers()) {
        builder = builder.header(name, value);
    }
    let (parts, ()) = builder
        .body(())
        .map_err(|e| Failure {
            phase: Phase::Final,
            message: format!("cannot build the request: {e}"),
        })?
        .into_parts();
    let result = match &request.body {
        Body::Empty => run_with(agent, parts, (), limits),
        Body::Bytes(bytes) => run_with(agent, parts, bytes.as_slice(), limits),
        Body::File(path) => {
            let file = File::open(path).map_err(|e| Failure {
                phase: Phase::Final,
                message: format!("cannot read {}: {e}", path.display()),
            })?;
            // A device has no length: it is sent chunked, as it comes.
            match file.metadata() {
                Ok(meta) if meta.is_file() => run_with(agent, parts, file, limits),
                _ => run_with(agent, parts, SendBody::from_owned_reader(file), limits),
            }
        }
    };
    result.map_err(|e| failure(e, limits))
}

fn run_with(
    agent: &Agent,
    parts: ureq::http::request::Parts,
    body: impl ureq::AsSendBody,
    limits: Limits,
) -> Result<ureq::http::Response<ureq::Body>, ureq::Error> {
    // The head's deadline is kept by the caller (see `send`); ureq keeps
    // the hard limit of a whole attempt, body included, and the stall.
    let request = agent
        .configure_request(ureq::http::Request::from_parts(parts, body))
        .timeout_global(limits.total)
        .timeout_connect(Some(limits.connect.min(limits.head)))
        .timeout_per_read(Some(limits.stall))
        .timeout_per_write(Some(limits.stall))
        .build();
    agent.run(request)
}

impl Transport for Http {
    fn send(&mut self, limits: Limits, resume: Option<&resume::From>) -> Result<Reply, Failure> {
        if self.interrupted.load(Ordering::SeqCst) {
            return Err(self.interrupted());
        }
        let deadline = Instant::now() + limits.head;
        let (done, result) = mpsc::sync_channel(1);
        let agent = self.agent.clone();
        let request = Arc::clone(&self.request);
        let resume = resume.cloned();
        std::thread::Builder::new()
            .name("abide-attempt".into())
            .spawn(move || {
                // The caller may have stopped listening; that is fine.
                let _ = done.send(attempt(&agent, &request, limits, resume.as_ref()));
            })
            .map_err(|e| Failure {
                phase: Phase::BeforeSend,
                message: format!("cannot start the attempt: {e}"),
            })?;
        let response = loop {
            match result.recv_timeout(POLL) {
                Ok(response) => break response?,
                // An interrupted attempt is abandoned: its thread ends with
                // the process, or on its own when its connect gives up.
                Err(mpsc::RecvTimeoutError::Timeout) if self.interrupted.load(Ordering::SeqCst) => {
                    return Err(self.interrupted());
                }
                // Kept here rather than by ureq, whose timers a server that
                // accepts and never answers overran by up to two seconds.
                // The attempt's thread is abandoned like an interrupted one.
                Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() >= deadline => {
                    return Err(Failure {
                        phase: Phase::AfterSend,
                        message: "timeout: no answer from the server in time".into(),
                    });
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(Failure {
                        phase: Phase::AfterSend,
                        message: "the attempt ended without an answer".into(),
                    });
                }
            }
        };
        let status = response.status().as_u16();
        let headers: Vec<(String, String)> = response
            .headers()
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_string(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
            .collect();
        let body = Box::new(Interruptible {
            body: response.into_body().into_reader(),
            interrupted: Arc::clone(&self.interrupted),
            stall: limits.stall,
        });
        let encoding = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-encoding"))
            .map(|(_, v)| v.as_str());
        let (decoded, body) = match encoding.filter(|_| self.compressed) {
            Some(encoding) => decode::decoder(encoding, body, self.max_ratio),
            None => (false, body as Box<dyn Read>),
        };
        Ok(Reply {
            status,
            headers,
            decoded,
            body,
        })
    }
}

/// A response body that fails once the run is interrupted. Shutting the
/// connection down can look like a clean end of a body that has no
/// Content-Length; this makes sure a cut body never passes for a whole one.
/// It also turns ureq's errors into ones that say what happened.
struct Interruptible<R> {
    body: R,
    interrupted: Arc<AtomicBool>,
    stall: Duration,
}

impl<R: Read> Read for Interruptible<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.body.read(buf);
        if self.interrupted.load(Ordering::SeqCst) {
            return Err(io::Error::other("interrupted"));
        }
        read.map_err(|e| {
            let timeout = e.get_ref().and_then(|inner| match inner.downcast_ref() {
                Some(ureq::Error::Timeout(t)) => Some(*t),
                _ => None,
            });
            match timeout {
                Some(t) => io::Error::new(io::ErrorKind::TimedOut, timed_out(t, self.stall)),
                None if is_reset(&e) => io::ErrorKind::ConnectionReset.into(),
                None => e,
            }
        })
    }
}

/// A connector whose connections report a TCP reset as an error. ureq
/// takes a reset for the end of a body that ends when the connection
/// closes (HTTP/1.0 without Content-Length), and would pass a truncated
/// body for a whole one; only a clean close (FIN) ends such a body.
#[derive(Debug)]
struct ResetIsNoEnd;

impl Connector<Box<dyn Wire>> for ResetIsNoEnd {
    type Out = ResetAware;

    fn connect(
        &self,
        _: &ConnectionDetails,
        chained: Option<Box<dyn Wire>>,
    ) -> Result<Option<ResetAware>, ureq::Error> {
        Ok(chained.map(ResetAware))
    }
}

#[derive(Debug)]
struct ResetAware(Box<dyn Wire>);

/// A reset, in a form ureq does not read as a close.
#[derive(Debug)]
struct Reset;

impl std::fmt::Display for Reset {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("connection reset")
    }
}

impl std::error::Error for Reset {}

fn is_reset(error: &io::Error) -> bool {
    error.get_ref().is_some_and(|inner| inner.is::<Reset>())
}

impl Wire for ResetAware {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.0.buffers()
    }
    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.0.transmit_output(amount, timeout)
    }
    fn maybe_await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.0.maybe_await_input(timeout).map_err(reset_is_no_end)
    }
    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.0.await_input(timeout).map_err(reset_is_no_end)
    }
    fn is_open(&mut self) -> bool {
        self.0.is_open()
    }
    fn is_tls(&self) -> bool {
        self.0.is_tls()
    }
}

fn reset_is_no_end(error: ureq::Error) -> ureq::Error {
    match error {
        ureq::Error::Io(e) if e.kind() == io::ErrorKind::ConnectionReset => {
            ureq::Error::Io(io::Error::other(Reset))
        }
        other => other,
    }
}

/// Sorts a ureq error by whether the server may have seen the request.
fn failure(error: ureq::Error, limits: Limits) -> Failure {
    use ureq::Error as E;
    let phase = match &error {
        E::HostNotFound
        | E::ConnectionFailed
        | E::ConnectProxyFailed(_)
        | E::InvalidProxyUrl
        | E::Tls(_)
        | E::Rustls(_)
        | E::Pem(_)
        | E::TlsRequired
        | E::Timeout(Timeout::Resolve | Timeout::Connect) => Phase::BeforeSend,
        E::Io(io) if before_send(io) => Phase::BeforeSend,
        E::TooManyRedirects
        | E::RedirectFailed
        | E::BadUri(_)
        | E::Http(_)
        | E::RequireHttpsOnly(_)
        | E::LargeResponseHeader(..) => Phase::Final,
        // Anything else may have happened after the server read the request.
        _ => Phase::AfterSend,
    };
    Failure {
        phase,
        message: describe(&error, limits.stall),
    }
}

fn before_send(error: &io::Error) -> bool {
    use io::ErrorKind as K;
    matches!(
        error.kind(),
        K::ConnectionRefused
            | K::AddrNotAvailable
            | K::NetworkUnreachable
            | K::HostUnreachable
            | K::NetworkDown
    )
}

fn describe(error: &ureq::Error, stall: Duration) -> String {
    match error {
        ureq::Error::Timeout(t) => format!("timeout: {}", timed_out(*t, stall)),
        ureq::Error::Io(io) => match io_kind(io) {
            "i/o error" => format!("i/o error: {io}"),
            kind => kind.to_string(),
        },
        other => other.to_string(),
    }
}

fn timed_out(timeout: Timeout, stall: Duration) -> String {
    match timeout {
        Timeout::Connect => "could not connect in time".into(),
        Timeout::PerRead => format!(
            "nothing from the server for {} (--stall)",
            crate::narrate::span(stall)
        ),
        Timeout::PerWrite => format!(
            "the server took nothing of the request for {} (--stall)",
            crate::narrate::span(stall)
        ),
        Timeout::RecvResponse => "no answer from the server in time".into(),
        _ => "the attempt ran out of time".into(),
    }
}

/// The kind of a body read error, as the run reports and classifies it.
pub fn io_kind(error: &io::Error) -> &'static str {
    use io::ErrorKind as K;
    if is_reset(error) {
        return "connection reset";
    }
    match error.kind() {
        K::ConnectionRefused => "connection refused",
        K::ConnectionReset => "connection reset",
        K::ConnectionAborted => "connection aborted",
        K::UnexpectedEof => "connection closed early",
        K::TimedOut => "timeout",
        K::BrokenPipe => "broken pipe",
        _ => "i/o error",
    }
}
