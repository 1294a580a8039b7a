//! The HTTP edge: one attempt of the request with ureq, its answer as plain
//! data, and its failures sorted by whether the server may have seen them.
//!
//! Each attempt runs on a thread of its own (kept between attempts, see
//! `pool`) while the caller waits for it or for an interruption: ureq's
//! shutdown cuts reads and writes, but not name resolution or a TCP
//! connect, and a signal must end the run at once whatever the attempt is
//! doing.

use std::fs::File;
use std::io::{self, Read};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context as _, Result};
use ureq::http::{HeaderValue, header};
use ureq::tls::{Certificate, RootCerts, TlsConfig};
use ureq::unversioned::transport::{
    ConnectProxyConnector, Connector, RustlsConnector, SocksConnector, TcpConnector,
};
use ureq::{Agent, SendBody, Timeout};

use crate::edge::cookies::Jar;
use crate::edge::decode;
use crate::edge::net::{self, Net, Observe, Paced, Step};
use crate::edge::pool::Pool;
use crate::edge::reset::{ResetIsNoEnd, is_reset};
use crate::edge::tls::TlsStep;
use crate::rules::attempt::Phase;
use crate::rules::resume;

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
    /// Every value of a name is sent, as curl sends every -H.
    pub headers: ureq::http::HeaderMap,
    pub body: Body,
}

impl Request {
    /// The Idempotency-Key the request carries: what is sent decides.
    pub fn idempotency_key(&self) -> Option<&str> {
        let value = self.headers.get("idempotency-key")?;
        value.to_str().ok()
    }
}

/// Connection settings that stay the same for the whole run.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub follow_redirects: bool,
    pub proxy: Option<String>,
    pub insecure: bool,
    pub cacert: Option<PathBuf>,
    /// Trust the operating system's certificate store (`--ca-native`).
    pub ca_native: bool,
    /// `--compressed`: decode gzip, deflate and br bodies, at most
    /// `max_ratio` times their encoded size.
    pub compressed: bool,
    pub max_ratio: u64,
    /// curl's connection flags: cookies, where names connect, client
    /// certificate, .netrc, pace.
    pub net: Net,
    /// Requests in flight at once (a batch's `--parallel`): as many
    /// connections are kept alive per host, beyond ureq's 3 idle (10 in all).
    pub parallel: usize,
}

/// Time limits for one attempt.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The answer's head must have arrived within this (through every
    /// redirect, with -L).
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
    /// The protocol of the status line, e.g. `HTTP/1.1`.
    pub version: &'static str,
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

/// An answer's head as curl writes it for `-i` and `-D`: the status line,
/// one `name: value` line per header in the order received, a blank line,
/// each ended by CRLF. ureq keeps neither the reason phrase nor the case of
/// header names: the standard phrase and lower-case names stand in.
pub fn head(version: &str, status: u16, headers: &[(String, String)]) -> String {
    let reason = ureq::http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or_default();
    let mut text = format!("{version} {status} {reason}\r\n");
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str("\r\n");
    text
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
    follow_redirects: bool,
    compressed: bool,
    max_ratio: u64,
    /// The cookie engine, shared by every attempt; `None` when it is off.
    jar: Option<Arc<Mutex<Jar>>>,
    net: Arc<Net>,
    /// Shared with the thread of the attempt in flight.
    request: Arc<Request>,
    interrupted: Arc<AtomicBool>,
    /// The threads attempts run on, shared with `for_request`'s clients.
    pool: Pool,
    /// Attempts run on the caller's thread (see `on_callers_thread`).
    inline: bool,
    /// The scope whose `--rate` spacing its writes keep (`spaced_as`).
    scope: Arc<str>,
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
        if settings.ca_native {
            tls = tls.root_certs(RootCerts::PlatformVerifier);
        }
        let mut ca_certs = None;
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
            ca_certs = Some(certs);
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
            // abide follows redirects itself (`attempt`), with curl's rules.
            .max_redirects(0)
            // The plan adds these itself, so that -H "Name:" can remove them.
            .user_agent(ureq::config::AutoHeaderValue::None)
            .accept(ureq::config::AutoHeaderValue::None)
            .accept_encoding(ureq::config::AutoHeaderValue::None)
            .max_idle_connections_per_host(settings.parallel.max(3))
            .max_idle_connections(settings.parallel.max(10));
        let net = &settings.net;
        if let Some(proxy) = &settings.proxy {
            let proxy = match &net.proxy_user {
                Some(user) => net::with_user(proxy, user),
                None => proxy.clone(),
            };
            let proxy =
                ureq::Proxy::new(&proxy).map_err(|e| anyhow::anyhow!("bad --proxy: {e}"))?;
            config = config.proxy(Some(proxy));
        }
        if net.no_proxy {
            config = config.proxy(None);
        }
        config = config.ip_family(net.family);
        let client = match &net.client_cert {
            Some((cert, key)) => Some(crate::edge::tls::client_cert(cert, key.as_deref())?),
            None => None,
        };
        if let Some(client) = &client {
            tls = tls.client_cert(Some(client.clone()));
        }
        let config = config.tls_config(tls.build()).build();
        let tls_step = match (&settings.cacert, ca_certs) {
            (Some(path), Some(certs)) if !settings.insecure => TlsStep::Exact(
                crate::edge::tls::CaFile::new(&certs, client.as_ref())
                    .with_context(|| format!("--cacert {}", path.display()))?,
            ),
            _ => TlsStep::Ureq(RustlsConnector::default()),
        };
        let observed = &net.observed;
        let observe = |step| Observe {
            step,
            observed: observed.clone(),
        };
        // ureq's own chain, with the TLS step chosen above, and notes of when
        // each step is done for -w.
        let connector =
            ().chain(net::UnixSocket(net.unix_socket.clone()))
                .chain(SocksConnector::default())
                .chain(ConnectProxyConnector::default())
                .chain(TcpConnector::default())
                .chain(observe(Step::Tcp))
                .chain(tls_step)
                .chain(observe(Step::Tls))
                .chain(ResetIsNoEnd);
        let resolver = net::Resolve {
            pinned: net.pinned.clone(),
            redirected: net.redirected.clone(),
            unix_socket: net.unix_socket.is_some(),
            observed: observed.clone(),
        };
        let jar = match (&net.cookie_files[..], &net.cookie_jar) {
            ([], None) => None,
            (files, _) => {
                let mut jar = Jar::default();
                for file in files {
                    jar.read(file, net.junk_session)
                        .with_context(|| format!("cannot read -b {}", file.display()))?;
                }
                Some(Arc::new(Mutex::new(jar)))
            }
        };
        Ok(Http {
            agent: Agent::with_parts(config, connector, resolver),
            follow_redirects: settings.follow_redirects,
            compressed: settings.compressed,
            max_ratio: settings.max_ratio,
            jar,
            net: Arc::new(net.clone()),
            request: Arc::new(request),
            interrupted: Arc::default(),
            pool: Pool::default(),
            inline: false,
            scope: Arc::from(""),
        })
    }

    /// The same client, and so the same connection pool, for another
    /// request: one process may send many requests over it, on threads.
    /// An interruption cuts them all, as it shuts the pool down.
    pub fn for_request(&self, request: Request) -> Http {
        Http {
            agent: self.agent.clone(),
            follow_redirects: self.follow_redirects,
            compressed: self.compressed,
            max_ratio: self.max_ratio,
            jar: self.jar.clone(),
            net: Arc::clone(&self.net),
            request: Arc::new(request),
            interrupted: Arc::clone(&self.interrupted),
            pool: self.pool.clone(),
            inline: self.inline,
            scope: Arc::clone(&self.scope),
        }
    }

    /// Attempts run on the calling thread instead of a kept one: a batch
    /// worker has nothing else to do meanwhile, and handing each attempt to
    /// another thread and back cost a small GET about 30% of its CPU time
    /// and wall time on loopback. What changes: the head's deadline is
    /// kept by ureq's timers (for the answer's head; connecting has its
    /// own), and an interruption cuts reads and writes at once but lets a
    /// connect in progress end within `--connect-timeout`.
    pub fn on_callers_thread(mut self) -> Http {
        self.inline = true;
        self
    }

    /// What the transport adds to the request as its first hop goes now:
    /// the cookie engine's cookies and a `.netrc` login, which `-v` shows
    /// with the request's own headers.
    pub fn added_headers(&self) -> ureq::http::HeaderMap {
        self.hops().additions(&self.request)
    }

    /// What every hop of this client's attempt adds and keeps.
    fn hops(&self) -> Hops<'_> {
        Hops::of(
            &self.agent,
            self.follow_redirects,
            &self.request,
            self.jar.as_deref(),
            &self.net,
            &self.interrupted,
            &self.scope,
        )
    }

    /// Its writes keep the wire spacing of `scope` (a batch's `--rate`).
    pub fn spaced_as(mut self, scope: &str) -> Http {
        self.scope = Arc::from(scope);
        self
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
}

fn interrupted() -> Failure {
    Failure {
        // Whether the server saw it is unknown; the run ends anyway.
        phase: Phase::AfterSend,
        message: "interrupted".into(),
    }
}

/// What every hop of an attempt adds to its request, and keeps of its answer.
struct Hops<'a> {
    agent: &'a Agent,
    follow: bool,
    /// The request has a Cookie header of the user's (-H): as curl, no
    /// other cookies are sent then, on any hop.
    own_cookie: bool,
    jar: Option<&'a Mutex<Jar>>,
    net: &'a Net,
    /// Set when the run is interrupted: a redirect's wait ends then.
    interrupted: &'a AtomicBool,
    /// Whose wire spacing the writes keep.
    scope: &'a str,
}

impl<'a> Hops<'a> {
    fn of(
        agent: &'a Agent,
        follow: bool,
        request: &Request,
        jar: Option<&'a Mutex<Jar>>,
        net: &'a Net,
        interrupted: &'a AtomicBool,
        scope: &'a str,
    ) -> Hops<'a> {
        Hops {
            agent,
            follow,
            own_cookie: request.headers.contains_key(header::COOKIE),
            jar,
            net,
            interrupted,
            scope,
        }
    }

    /// What curl adds to a hop per host: the engine's cookies before any
    /// `-b` string, and a `.netrc` login where the request has no
    /// Authorization of its own.
    fn additions(&self, hop: &Request) -> ureq::http::HeaderMap {
        let mut added = ureq::http::HeaderMap::new();
        let url = url::Url::parse(&hop.url).ok();
        let engine = self
            .jar
            .zip(url.as_ref())
            .and_then(|(jar, url)| jar.lock().ok()?.header(url));
        let cookie: Vec<&str> = engine
            .iter()
            .map(String::as_str)
            .chain(self.net.cookie.as_deref())
            .collect();
        if !cookie.is_empty()
            && !self.own_cookie
            && let Ok(value) = HeaderValue::try_from(cookie.join("; "))
        {
            added.append(header::COOKIE, value);
        }
        let has_auth = hop.headers.contains_key(header::AUTHORIZATION);
        let host = url.as_ref().and_then(|u| u.host_str()).unwrap_or_default();
        if let (false, Some(login)) = (has_auth, net::login_for(&self.net.logins, host)) {
            use base64::Engine as _;
            let pair = format!("{}:{}", login.login, login.password);
            let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
            if let Ok(value) = HeaderValue::try_from(format!("Basic {encoded}")) {
                added.append(header::AUTHORIZATION, value);
            }
        }
        added
    }

    /// Keeps the cookies an answer to `url` sets.
    fn keep_cookies(&self, url: &str, response: &ureq::http::Response<ureq::Body>) {
        let (Some(jar), Ok(url)) = (self.jar, url::Url::parse(url)) else {
            return;
        };
        let Ok(mut jar) = jar.lock() else { return };
        for value in response.headers().get_all("set-cookie") {
            if let Ok(value) = value.to_str() {
                jar.insert(value, &url);
            }
        }
    }
}

/// The most of a redirect's body read to keep its connection.
const REDIRECT_BODY: u64 = 64 * 1024;

/// One attempt, start to response head, on the attempt's own thread; with
/// -L, through its redirects as curl follows them: 307 and 308 re-send the
/// method and body; 303, and 301 or 302 after a POST, turn it into a body-less
/// GET; credentials and cookies go on to the same origin only; a
/// Retry-After on a redirect is waited before following it.
fn attempt(
    hops: &Hops,
    request: &Request,
    limits: Limits,
    resume: Option<&resume::From>,
) -> Result<ureq::http::Response<ureq::Body>, Failure> {
    let start = Instant::now();
    let observed = &hops.net.observed;
    observed.start();
    let mut hop = request.clone();
    // After a redirect other than 307 or 308, a server may have acted on the
    // request: a later hop that fails before sending must not read as a
    // request never sent (a POST answered 303 would be sent again).
    let mut acted_on = false;
    let mut followed = 0;
    loop {
        observed.update(|t| {
            t.url = Some(hop.url.clone());
            t.redirects = followed;
        });
        if let Some(spacing) = &hops.net.wire_spacing {
            spacing.wait_turn(hops.scope);
        }
        let spent = start.elapsed();
        let response = send_one(
            hops.agent,
            &hop,
            &hops.additions(&hop),
            Limits {
                head: limits.head.saturating_sub(spent),
                total: limits.total.map(|t| t.saturating_sub(spent)),
                ..limits
            },
            resume,
        )
        .map_err(|mut failure| {
            if acted_on && failure.phase == Phase::BeforeSend {
                failure.phase = Phase::AfterSend;
            }
            failure
        })?;
        hops.keep_cookies(&hop.url, &response);
        let status = response.status().as_u16();
        observed.update(|t| t.status = Some(status));
        let location = response
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok());
        let (true, 301 | 302 | 303 | 307 | 308, Some(location)) = (hops.follow, status, location)
        else {
            return Ok(response);
        };
        if let Some(most) = hops.net.max_redirects.filter(|&most| followed >= most) {
            // curl's words for its error 47; following them again ends the same.
            return Err(Failure {
                phase: Phase::Final,
                message: format!("Maximum ({most}) redirects followed"),
            });
        }
        let next = redirect_target(&hop.url, location)?;
        let headers = response
            .headers()
            .iter()
            .filter_map(|(n, v)| Some((n.as_str(), v.to_str().ok()?)));
        if let Some(wait) = crate::rules::delay::server_delay(headers, SystemTime::now()).delay {
            let left = limits.head.saturating_sub(start.elapsed());
            if wait.delay > left {
                // Retrying at once would ignore the wait; the fix is more time.
                return Err(Failure {
                    phase: Phase::Final,
                    message: format!(
                        "{REDIRECT_WAIT} ({status}) asked to wait {:.1} s before it is followed, more than the {:.1} s this attempt has left",
                        wait.delay.as_secs_f64(),
                        left.as_secs_f64()
                    ),
                });
            }
            // In slices, so that an interruption ends the wait at once
            // where the attempt runs on the caller's thread.
            let until = Instant::now() + wait.delay;
            while let Some(left) = until.checked_duration_since(Instant::now()) {
                if hops.interrupted.load(Ordering::SeqCst) {
                    return Err(interrupted());
                }
                std::thread::sleep(left.min(POLL));
            }
        }
        // Read to its end, so that its connection goes back to the pool for
        // the next hop; a body larger than a redirect's is dropped with it.
        let drain = response.into_body().into_reader().take(REDIRECT_BODY);
        let _ = io::copy(&mut { drain }, &mut io::sink());
        acted_on |= !matches!(status, 307 | 308);
        hop = redirected(hop, status, next, hops.net.location_trusted);
        followed += 1;
    }
}

/// The absolute URL a `Location` points to, from the URL that was sent.
fn redirect_target(base: &str, location: &str) -> Result<String, Failure> {
    let refused = |why: String| Failure {
        phase: Phase::Final,
        message: format!(
            "cannot follow the redirect to {}: {why}",
            crate::redact::url(location)
        ),
    };
    let next = url::Url::parse(base)
        .and_then(|base| base.join(location))
        .map_err(|e| refused(e.to_string()))?;
    match next.scheme() {
        "http" | "https" => Ok(next.to_string()),
        other => Err(refused(format!("abide speaks http and https, not {other}"))),
    }
}

/// The request a redirect asks for next; credentials and cookies go on to
/// another origin only when `trusted` (`--location-trusted`).
fn redirected(mut request: Request, status: u16, url: String, trusted: bool) -> Request {
    let to_get = status == 303 && request.method != "HEAD"
        || matches!(status, 301 | 302) && request.method == "POST";
    if to_get {
        request.method = "GET".into();
        request.body = Body::Empty;
        request.headers.remove(ureq::http::header::CONTENT_TYPE);
        request.headers.remove(ureq::http::header::CONTENT_LENGTH);
    }
    if !trusted && origin(&request.url) != origin(&url) {
        request.headers.remove(ureq::http::header::AUTHORIZATION);
        request.headers.remove(ureq::http::header::COOKIE);
    }
    request.url = url;
    request
}

/// `scheme://host:port` of a URL that parsed before it was sent.
fn origin(url: &str) -> Option<(String, String, Option<u16>)> {
    let url = url::Url::parse(url).ok()?;
    Some((
        url.scheme().to_string(),
        url.host_str()?.to_ascii_lowercase(),
        url.port_or_known_default(),
    ))
}

/// One request, with the headers its hop `added`, to its response head.
fn send_one(
    agent: &Agent,
    request: &Request,
    added: &ureq::http::HeaderMap,
    limits: Limits,
    resume: Option<&resume::From>,
) -> Result<ureq::http::Response<ureq::Body>, Failure> {
    let mut builder = ureq::http::Request::builder()
        .method(request.method.as_str())
        .uri(request.url.as_str());
    for (name, value) in request.headers.iter().chain(added) {
        builder = builder.header(name, value);
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
        // An empty body of known length, never a chunked one (which some
        // servers refuse with 501), for the methods that carry a body.
        Body::Empty if matches!(request.method.as_str(), "POST" | "PUT" | "PATCH") => {
            run_with(agent, parts, &[][..], limits)
        }
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
    // ureq keeps the hard limit of a whole attempt, body included, and the
    // stall; the head's deadline is kept by the caller (`on_pool`) or here.
    let request = agent
        .configure_request(ureq::http::Request::from_parts(parts, body))
        .timeout_global(limits.total)
        .timeout_connect(Some(limits.connect.min(limits.head)))
        // A backstop where the caller keeps the deadline (an abandoned
        // attempt's thread ends with it), the deadline itself where the
        // attempt runs on the caller's thread.
        .timeout_recv_response(Some(limits.head))
        .timeout_per_read(Some(limits.stall))
        .timeout_per_write(Some(limits.stall))
        .build();
    agent.run(request)
}

impl Http {
    /// The attempt on a kept thread, waited for until it answers, the
    /// head's deadline passes, or the run is interrupted.
    fn on_pool(
        &self,
        limits: Limits,
        resume: Option<&resume::From>,
    ) -> Result<ureq::http::Response<ureq::Body>, Failure> {
        let deadline = Instant::now() + limits.head;
        let (done, result) = mpsc::sync_channel(1);
        let agent = self.agent.clone();
        let request = Arc::clone(&self.request);
        let resume = resume.cloned();
        let follow = self.follow_redirects;
        let jar = self.jar.clone();
        let net = Arc::clone(&self.net);
        let cut = Arc::clone(&self.interrupted);
        let scope = Arc::clone(&self.scope);
        self.pool
            .run(move || {
                let hops = Hops::of(&agent, follow, &request, jar.as_deref(), &net, &cut, &scope);
                // The caller may have stopped listening; that is fine.
                let _ = done.send(attempt(&hops, &request, limits, resume.as_ref()));
            })
            .map_err(|e| Failure {
                phase: Phase::BeforeSend,
                message: format!("cannot start the attempt: {e}"),
            })?;
        loop {
            match result.recv_timeout(POLL) {
                Ok(response) => return response,
                // An interrupted attempt is abandoned: its thread ends with
                // the process, or on its own when its connect gives up.
                Err(mpsc::RecvTimeoutError::Timeout) if self.interrupted.load(Ordering::SeqCst) => {
                    return Err(interrupted());
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
        }
    }
}

impl Transport for Http {
    fn send(&mut self, limits: Limits, resume: Option<&resume::From>) -> Result<Reply, Failure> {
        if self.interrupted.load(Ordering::SeqCst) {
            return Err(interrupted());
        }
        // A body that must keep -Y bytes/s cannot go -y without a byte.
        let limits = match self.net.speed {
            Some(speed) => Limits {
                stall: limits.stall.min(speed.over),
                ..limits
            },
            None => limits,
        };
        let response = if self.inline {
            attempt(&self.hops(), &self.request, limits, resume)?
        } else {
            self.on_pool(limits, resume)?
        };
        let status = response.status().as_u16();
        let version = match response.version() {
            ureq::http::Version::HTTP_09 => "HTTP/0.9",
            ureq::http::Version::HTTP_10 => "HTTP/1.0",
            ureq::http::Version::HTTP_2 => "HTTP/2",
            ureq::http::Version::HTTP_3 => "HTTP/3",
            _ => "HTTP/1.1",
        };
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
        let body = Box::new(Paced::new(
            Interruptible {
                body: response.into_body().into_reader(),
                interrupted: Arc::clone(&self.interrupted),
                stall: limits.stall,
            },
            self.net.limit_rate,
            self.net.speed,
            Arc::clone(&self.interrupted),
        ));
        let encoding = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-encoding"))
            .map(|(_, v)| v.as_str());
        let (decoded, body) = match encoding.filter(|_| self.compressed) {
            Some(encoding) => decode::decoder(encoding, body, self.max_ratio),
            None => (false, body as Box<dyn Read>),
        };
        Ok(Reply {
            version,
            status,
            headers,
            decoded,
            body,
        })
    }
}

impl Drop for Http {
    /// `-c FILE`: the jar is written once, as the run ends, as curl writes it.
    fn drop(&mut self) {
        if let (Some(jar), Some(path)) = (&self.jar, &self.net.cookie_jar)
            && let Ok(jar) = jar.lock()
            && let Err(e) = jar.write(path)
        {
            eprintln!(
                "abide: warning: cannot write the cookie jar -c {}: {e}",
                path.display()
            );
        }
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

/// Sorts a ureq error by whether the server may have seen the request.
fn failure(error: ureq::Error, limits: Limits) -> Failure {
    use ureq::Error as E;
    let phase = match &error {
        // Waiting fixes neither a name that does not resolve nor a
        // certificate the client refuses.
        E::HostNotFound => Phase::Final,
        _ if refused_certificate(&error).is_some() => Phase::Final,
        E::Io(io) if unresolved(io) => Phase::Final,
        E::ConnectionFailed
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

/// A name the resolver says does not exist, as opposed to a resolver that
/// could not be asked (`EAI_AGAIN`), which may answer later.
fn unresolved(error: &io::Error) -> bool {
    let text = error.to_string();
    text.contains("failed to lookup address") && !text.contains("Temporary failure")
}

/// The reason the client refused the server's certificate, if it did;
/// rustls reports it as its own error or inside an I/O error.
fn refused_certificate(error: &ureq::Error) -> Option<&rustls::CertificateError> {
    let rustls = match error {
        ureq::Error::Rustls(e) => Some(e),
        ureq::Error::Io(io) => io.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>()),
        _ => None,
    };
    match rustls {
        Some(rustls::Error::InvalidCertificate(why)) => Some(why),
        _ => None,
    }
}

/// How failures that waiting cannot fix start, and what fixes each.
const UNRESOLVED: &str = "the host name does not resolve";
const REFUSED_CERTIFICATE: &str = "the server's TLS certificate was refused";
const REDIRECT_WAIT: &str = "the redirect";
const REMEDIES: [(&str, &str); 3] = [
    (UNRESOLVED, "check the host name"),
    (REFUSED_CERTIFICATE, "pass --cacert or fix the certificate"),
    (
        REDIRECT_WAIT,
        "wait that long, then call again with a larger -m/--max-time",
    ),
];

/// What fixes the failure `error` describes, when retrying cannot.
pub fn remedy(error: &str) -> Option<&'static str> {
    REMEDIES
        .iter()
        .find(|(start, _)| error.starts_with(start))
        .map(|(_, remedy)| *remedy)
}

fn describe(error: &ureq::Error, stall: Duration) -> String {
    if let Some(why) = refused_certificate(error) {
        return format!("{REFUSED_CERTIFICATE}: {}", certificate_problem(why));
    }
    match error {
        ureq::Error::HostNotFound => UNRESOLVED.into(),
        ureq::Error::Io(io) if unresolved(io) => format!("{UNRESOLVED} ({io})"),
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
            crate::units::span(stall)
        ),
        Timeout::PerWrite => format!(
            "the server took nothing of the request for {} (--stall)",
            crate::units::span(stall)
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

/// A refused certificate in words, not in Rust debug text.
fn certificate_problem(error: &rustls::CertificateError) -> String {
    use rustls::CertificateError as C;
    match error {
        C::UnknownIssuer => "it is not signed by a trusted CA".into(),
        C::Expired | C::ExpiredContext { .. } => "it has expired".into(),
        C::NotValidYet | C::NotValidYetContext { .. } => "it is not valid yet".into(),
        C::NotValidForName | C::NotValidForNameContext { .. } => {
            "it is not valid for this host name".into()
        }
        C::Revoked => "it has been revoked".into(),
        C::BadSignature => "its signature is invalid".into(),
        C::Other(other) if other.to_string().contains("CaUsedAsEndEntity") => {
            "it is a CA certificate used as the server's own".into()
        }
        other => other.to_string(),
    }
}
