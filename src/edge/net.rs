//! curl's connection flags at the edge: where a name connects to
//! (`--resolve`, `--connect-to`, `-4`/`-6`), what an attempt's connection
//! was (for `-w`: the times, the address, the redirects), credentials from
//! `.netrc` per host, and the pace of a body (`--limit-rate`, `-Y`/`-y`).

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use ureq::config::{Config, IpFamily};
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, Either, LazyBuffers, NextTimeout, ShutdownHandle,
    Transport,
};

/// `--resolve HOST:PORT:ADDR[,ADDR]`: the name at that port is these
/// addresses; `*` as HOST is every name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pinned {
    pub host: String,
    pub port: u16,
    pub addrs: Vec<IpAddr>,
}

/// `--connect-to HOST1:PORT1:HOST2:PORT2`: a connection to the first pair
/// goes to the second instead (the URL, Host and TLS name stay); an empty
/// part matches any host or port, or keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirected {
    pub from_host: Option<String>,
    pub from_port: Option<u16>,
    pub to_host: Option<String>,
    pub to_port: Option<u16>,
}

/// One `.netrc` entry: `None` as the machine is its `default` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Login {
    pub machine: Option<String>,
    pub login: String,
    pub password: String,
}

/// The login `.netrc` gives for `host`: its machine's entry, else `default`.
pub fn login_for<'a>(logins: &'a [Login], host: &str) -> Option<&'a Login> {
    logins
        .iter()
        .find(|l| {
            l.machine
                .as_deref()
                .is_some_and(|m| m.eq_ignore_ascii_case(host))
        })
        .or_else(|| logins.iter().find(|l| l.machine.is_none()))
}

/// curl's `-Y N -y M`: an attempt whose body comes slower than `bytes` per
/// second over `over` fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpeedLimit {
    pub bytes: u64,
    pub over: Duration,
}

/// curl's connection settings, as the transport applies them.
#[derive(Debug, Clone)]
pub struct Net {
    /// `-b FILE` (read in order) and `-c FILE`; either turns the cookie
    /// engine on.
    pub cookie_files: Vec<std::path::PathBuf>,
    pub cookie_jar: Option<std::path::PathBuf>,
    /// `-b NAME=VALUE`: sent on every request, after the engine's cookies.
    pub cookie: Option<String>,
    pub family: IpFamily,
    pub pinned: Vec<Pinned>,
    pub redirected: Vec<Redirected>,
    /// `--unix-socket PATH`: every connection goes to this socket.
    pub unix_socket: Option<PathBuf>,
    /// `--location-trusted`: -L takes credentials to other hosts too.
    pub location_trusted: bool,
    /// Redirects followed at most with -L; `None` is no limit.
    pub max_redirects: Option<u32>,
    /// `-j`: a `-b` file's session cookies are left out.
    pub junk_session: bool,
    /// `-U USER:PASSWORD` for the `-x` proxy.
    pub proxy_user: Option<String>,
    /// `--noproxy` matched the host: no proxy, not even from the environment.
    pub no_proxy: bool,
    /// `--cert FILE` and `--key FILE` (PEM); the key may be in the cert file.
    pub client_cert: Option<(std::path::PathBuf, Option<std::path::PathBuf>)>,
    /// `-n`: the `.netrc` entries, used for a host the request has no
    /// Authorization for.
    pub logins: Vec<Login>,
    pub speed: Option<SpeedLimit>,
    pub limit_rate: Option<u64>,
    /// A batch's `--rate`: the spacing kept between this process's
    /// requests where they go onto the wire.
    pub wire_spacing: Option<Arc<WireSpacing>>,
    pub observed: Observed,
}

/// The last word on `--rate` within one process, taken just before a
/// request is written: no two requests of a scope go out closer than its
/// interval. The scope's slots space requests when they are let go;
/// between that and the write a thread may wait its turn for a core (16 ms
/// was seen on two loaded cores), and the request after it, on time, then
/// reaches the server too soon for a limiter with no burst. Kept per scope:
/// a batch over several APIs keeps each one's pace, not one for all.
#[derive(Debug)]
pub struct WireSpacing {
    /// Where a scope starts: `--rate`, or the first pace of `--rate auto`.
    first: Duration,
    scopes: Mutex<HashMap<String, Arc<Turns>>>,
}

/// One scope's spacing and its last write.
#[derive(Debug)]
struct Turns {
    /// In nanoseconds: `--rate auto` changes it as the pace is learned.
    interval: AtomicU64,
    last: Mutex<Option<Instant>>,
}

fn nanos(interval: Duration) -> u64 {
    u64::try_from(interval.as_nanos()).unwrap_or(u64::MAX)
}

impl WireSpacing {
    pub fn new(first: Duration) -> WireSpacing {
        WireSpacing {
            first,
            scopes: Mutex::default(),
        }
    }

    fn of(&self, scope: &str) -> Arc<Turns> {
        let mut scopes = self.scopes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(turns) = scopes.get(scope) {
            return Arc::clone(turns);
        }
        let turns = scopes.entry(scope.to_string()).or_insert_with(|| {
            Arc::new(Turns {
                interval: AtomicU64::new(nanos(self.first)),
                last: Mutex::new(None),
            })
        });
        Arc::clone(turns)
    }

    /// `scope`'s spacing from now on.
    pub fn set_interval(&self, scope: &str, interval: Duration) {
        self.of(scope)
            .interval
            .store(nanos(interval), Ordering::Relaxed);
    }

    /// Waits until `scope`'s interval after its last request's write, and
    /// marks this one's; a scope's turns are kept in order by its lock, and
    /// other scopes' go on meanwhile.
    pub fn wait_turn(&self, scope: &str) {
        let turns = self.of(scope);
        let mut last = turns.last.lock().unwrap_or_else(|e| e.into_inner());
        let interval = Duration::from_nanos(turns.interval.load(Ordering::Relaxed));
        if let Some(due) = last.map(|at| at + interval) {
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
        }
        *last = Some(Instant::now());
    }
}

/// The proxy URL with `user:password` in it, each percent-encoded.
pub fn with_user(proxy: &str, user: &str) -> String {
    use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
    let (scheme, rest) = proxy.split_once("://").unwrap_or(("http", proxy));
    let (name, password) = user.split_once(':').unwrap_or((user, ""));
    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    format!(
        "{scheme}://{}:{}@{rest}",
        utf8_percent_encode(name, NON_ALPHANUMERIC),
        utf8_percent_encode(password, NON_ALPHANUMERIC)
    )
}

/// curl's default `--max-redirs` with -L.
pub const MAX_REDIRECTS: u32 = 50;

impl Default for Net {
    fn default() -> Net {
        Net {
            cookie_files: Vec::new(),
            cookie_jar: None,
            cookie: None,
            junk_session: false,
            proxy_user: None,
            family: IpFamily::Any,
            pinned: Vec::new(),
            redirected: Vec::new(),
            unix_socket: None,
            location_trusted: false,
            max_redirects: Some(MAX_REDIRECTS),
            no_proxy: false,
            client_cert: None,
            logins: Vec::new(),
            speed: None,
            limit_rate: None,
            wire_spacing: None,
            observed: Observed::default(),
        }
    }
}

/// What an attempt's connection was, as `-w` shows it; times from the
/// attempt's start. Kept by the transport, read once the run ends.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trace {
    /// The last request's URL (after -L, the last hop's).
    pub url: Option<String>,
    /// The last answer's status, that of a redirect the run did not follow
    /// (past --max-redirs) included, which curl's `%{http_code}` writes.
    pub status: Option<u16>,
    pub redirects: u32,
    pub namelookup: Option<Duration>,
    pub connect: Option<Duration>,
    pub appconnect: Option<Duration>,
    /// The first address the last new connection's name resolved to.
    pub remote: Option<SocketAddr>,
    /// New connections the attempt made.
    pub connects: u32,
}

/// Where the transport leaves the last attempt's trace, and when that
/// attempt started.
#[derive(Debug, Clone, Default)]
pub struct Observed(Arc<Mutex<(Option<Instant>, Trace)>>);

impl Observed {
    pub fn get(&self) -> Trace {
        self.0.lock().map(|t| t.1.clone()).unwrap_or_default()
    }

    /// A new attempt: its times and counts start afresh; the address stays
    /// that of the last connection, which a pooled one is.
    pub(crate) fn start(&self) {
        if let Ok(mut trace) = self.0.lock() {
            let remote = trace.1.remote;
            *trace = (
                Some(Instant::now()),
                Trace {
                    remote,
                    ..Trace::default()
                },
            );
        }
    }

    pub(crate) fn update(&self, f: impl FnOnce(&mut Trace)) {
        self.mark(|t, _| f(t));
    }

    fn mark(&self, f: impl FnOnce(&mut Trace, Duration)) {
        if let Ok(mut trace) = self.0.lock() {
            let since = trace.0.map(|s| s.elapsed()).unwrap_or_default();
            f(&mut trace.1, since);
        }
    }
}

/// ureq's resolver with `--connect-to` and `--resolve` in front of it, and
/// the time the lookup took.
#[derive(Debug)]
pub struct Resolve {
    pub pinned: Vec<Pinned>,
    pub redirected: Vec<Redirected>,
    /// With `--unix-socket` no name is looked up, as curl looks up none.
    pub unix_socket: bool,
    pub observed: Observed,
}

impl Resolver for Resolve {
    fn resolve(
        &self,
        uri: &Uri,
        config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        if self.unix_socket {
            // Never connected to: the socket's connector comes first.
            let mut addrs = Resolver::empty(self);
            addrs.push(SocketAddr::new(Ipv4Addr::LOCALHOST.into(), 0));
            return Ok(addrs);
        }
        let result = self.lookup(uri, config, timeout);
        self.observed.mark(|t, since| {
            t.namelookup = Some(since);
            t.remote = result.as_ref().ok().and_then(|a| a.first().copied());
        });
        result
    }
}

impl Resolve {
    fn lookup(
        &self,
        uri: &Uri,
        config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let host = uri
            .host()
            .unwrap_or_default()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = uri.port_u16().unwrap_or(match uri.scheme_str() {
            Some("https") => 443,
            _ => 80,
        });
        let (host, port) = self
            .redirected
            .iter()
            .find(|r| {
                r.from_host
                    .as_deref()
                    .is_none_or(|h| h.eq_ignore_ascii_case(&host))
                    && r.from_port.is_none_or(|p| p == port)
            })
            .map_or((host.clone(), port), |r| {
                (
                    r.to_host.clone().unwrap_or(host.clone()),
                    r.to_port.unwrap_or(port),
                )
            });
        let pinned = self
            .pinned
            .iter()
            .find(|p| (p.host == "*" || p.host.eq_ignore_ascii_case(&host)) && p.port == port);
        if let Some(pinned) = pinned {
            let mut addrs = Resolver::empty(self);
            let family = config.ip_family();
            let wanted =
                family.keep_wanted(pinned.addrs.iter().map(|ip| SocketAddr::new(*ip, port)));
            for addr in wanted {
                if addrs.try_push(addr).is_err() {
                    break;
                }
            }
            if addrs.is_empty() {
                return Err(ureq::Error::HostNotFound);
            }
            return Ok(addrs);
        }
        let bracketed = match host.parse::<IpAddr>() {
            Ok(IpAddr::V6(_)) => format!("[{host}]"),
            _ => host,
        };
        let scheme = uri.scheme_str().unwrap_or("http");
        let target: Uri = format!("{scheme}://{bracketed}:{port}/")
            .parse()
            .map_err(|_| ureq::Error::HostNotFound)?;
        DefaultResolver::default().resolve(&target, config, timeout)
    }
}

/// Which step of the connector chain an `Observe` follows.
#[derive(Debug, Clone, Copy)]
pub enum Step {
    Tcp,
    Tls,
}

/// Notes when the connection got past its step (TCP, or TLS), passing it on.
#[derive(Debug)]
pub struct Observe {
    pub step: Step,
    pub observed: Observed,
}

impl<In: Transport> Connector<In> for Observe {
    type Out = In;

    fn connect(
        &self,
        _: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        if let Some(transport) = &chained {
            let tls = transport.is_tls();
            self.observed.mark(|t, since| match self.step {
                Step::Tcp => {
                    t.connect = Some(since);
                    t.connects += 1;
                }
                Step::Tls if tls => t.appconnect = Some(since),
                Step::Tls => {}
            });
        }
        Ok(chained)
    }
}

/// The first step of the connector chain: with `--unix-socket`, the
/// connection is to that socket, and the steps after it (SOCKS, TCP) pass
/// it on; TLS still wraps it for an https:// URL.
#[derive(Debug)]
pub struct UnixSocket(pub Option<PathBuf>);

impl<In: Transport> Connector<In> for UnixSocket {
    type Out = Either<In, UnixTransport>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        let (Some(path), None) = (&self.0, &chained) else {
            return Ok(chained.map(Either::A));
        };
        let stream = UnixStream::connect(path).map_err(|e| {
            // Nothing was sent: as a refused TCP connection.
            io::Error::new(
                io::ErrorKind::ConnectionRefused,
                format!("--unix-socket {}: {e}", path.display()),
            )
        })?;
        let stream = Arc::new(Shut(stream));
        (details.register_shutdown)(Arc::downgrade(&stream) as Weak<dyn ShutdownHandle>)?;
        let config = details.config;
        Ok(Some(Either::B(UnixTransport {
            stream,
            buffers: LazyBuffers::new(config.input_buffer_size(), config.output_buffer_size()),
        })))
    }
}

/// A Unix socket that an interruption can shut.
struct Shut(UnixStream);

impl ShutdownHandle for Shut {
    fn shutdown(&self) {
        let _ = self.0.shutdown(std::net::Shutdown::Both);
    }
}

/// A connection over a Unix socket, as ureq's TCP transport keeps one.
pub struct UnixTransport {
    stream: Arc<Shut>,
    buffers: LazyBuffers,
}

impl std::fmt::Debug for UnixTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnixTransport").finish_non_exhaustive()
    }
}

/// An I/O error as ureq reports it: a timeout as its timeout.
fn timed(error: io::Error, timeout: NextTimeout) -> ureq::Error {
    match error.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => ureq::Error::Timeout(timeout.reason),
        _ => error.into(),
    }
}

impl Transport for UnixTransport {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        let timeout = timeout.for_write();
        let socket = &self.stream.0;
        socket.set_write_timeout(timeout.not_zero().map(|t| *t))?;
        (&*socket)
            .write_all(&self.buffers.output()[..amount])
            .map_err(|e| timed(e, timeout))
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        let timeout = timeout.for_read();
        let socket = &self.stream.0;
        socket.set_read_timeout(timeout.not_zero().map(|t| *t))?;
        let input = self.buffers.input_append_buf();
        let amount = (&*socket).read(input).map_err(|e| timed(e, timeout))?;
        self.buffers.input_appended(amount);
        Ok(amount > 0)
    }

    /// Never pooled: each request opens the socket anew.
    fn is_open(&mut self) -> bool {
        false
    }
}

/// The IP family `-4`/`-6` ask for.
pub fn family(ipv4: bool, ipv6: bool) -> IpFamily {
    match (ipv4, ipv6) {
        (true, false) => IpFamily::Ipv4Only,
        (false, true) => IpFamily::Ipv6Only,
        _ => IpFamily::Any,
    }
}

/// A body read at most at `rate` bytes per second (`--limit-rate`), and
/// failed when slower than `speed` (`-Y`/`-y`). Sleeps are cut short by
/// `interrupted`, so that a signal still ends the run at once.
pub struct Paced<R> {
    pub body: R,
    pub rate: Option<u64>,
    pub speed: Option<SpeedLimit>,
    pub interrupted: Arc<std::sync::atomic::AtomicBool>,
    started: Instant,
    read: u64,
    window: (Instant, u64),
}

impl<R> Paced<R> {
    pub fn new(
        body: R,
        rate: Option<u64>,
        speed: Option<SpeedLimit>,
        interrupted: Arc<std::sync::atomic::AtomicBool>,
    ) -> Paced<R> {
        let now = Instant::now();
        Paced {
            body,
            rate,
            speed,
            interrupted,
            started: now,
            read: 0,
            window: (now, 0),
        }
    }
}

/// The longest single sleep of `--limit-rate`, between looks for an interruption.
const PACE_STEP: Duration = Duration::from_millis(20);

impl<R: Read> Read for Paced<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        // A tenth of a second's worth at a time, so that the pace is even.
        let most = self
            .rate
            .map_or(buf.len(), |r| (r / 10).clamp(1, buf.len() as u64) as usize);
        let n = self.body.read(&mut buf[..most])?;
        self.read += n as u64;
        if let Some(speed) = self.speed {
            let (since, at) = self.window;
            let spent = since.elapsed();
            if spent >= speed.over {
                if ((self.read - at) as f64) < speed.bytes as f64 * spent.as_secs_f64() {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "less than {} bytes/s for {} (-Y/--speed-limit, -y/--speed-time)",
                            speed.bytes,
                            crate::units::span(speed.over)
                        ),
                    ));
                }
                self.window = (Instant::now(), self.read);
            }
        }
        if let Some(rate) = self.rate {
            let due = Duration::from_secs_f64(self.read as f64 / rate as f64);
            while let Some(left) = due.checked_sub(self.started.elapsed()) {
                if left.is_zero() || self.interrupted.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                std::thread::sleep(left.min(PACE_STEP));
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_two_writes_of_a_scope_go_out_closer_than_its_spacing() {
        let spacing = WireSpacing::new(Duration::from_millis(20));
        let start = Instant::now();
        for _ in 0..3 {
            spacing.wait_turn("a");
        }
        // Three turns: the second and third each wait out the spacing.
        assert!(start.elapsed() >= Duration::from_millis(40));
    }

    #[test]
    fn each_scope_keeps_its_own_spacing() {
        let slow = Duration::from_secs(5);
        let spacing = WireSpacing::new(slow);
        spacing.set_interval("fast", Duration::ZERO);
        let start = Instant::now();
        spacing.wait_turn("slow");
        // The slow scope's spacing holds neither another scope's first
        // write nor a scope whose pace is faster: one shared spacing would
        // have made these wait it out at least once.
        spacing.wait_turn("other");
        for _ in 0..3 {
            spacing.wait_turn("fast");
        }
        assert!(start.elapsed() < slow);
    }

    #[test]
    fn a_proxy_user_goes_into_the_proxy_url() {
        assert_eq!(
            with_user("http://proxy:3128", "me:p@ss:w"),
            "http://me:p%40ss%3Aw@proxy:3128"
        );
        assert_eq!(with_user("proxy:3128", "me"), "http://me:@proxy:3128");
        assert_eq!(
            with_user("socks5://old:x@proxy", "new:y"),
            "socks5://new:y@proxy"
        );
    }

    #[test]
    fn netrc_logins_by_host_then_default() {
        let logins = vec![
            Login {
                machine: Some("api.example".into()),
                login: "a".into(),
                password: "1".into(),
            },
            Login {
                machine: None,
                login: "d".into(),
                password: "2".into(),
            },
        ];
        assert_eq!(login_for(&logins, "API.example").unwrap().login, "a");
        assert_eq!(login_for(&logins, "other").unwrap().login, "d");
        assert_eq!(login_for(&logins[..1], "other"), None);
    }

    #[test]
    fn a_slow_body_fails_and_a_fast_one_does_not() {
        let stop = Arc::default();
        let speed = Some(SpeedLimit {
            bytes: 1 << 30,
            over: Duration::ZERO,
        });
        let mut slow = Paced::new(&b"abc"[..], None, speed, Arc::clone(&stop));
        // Some time must pass for a speed to be measured at all.
        std::thread::sleep(Duration::from_millis(1));
        let error = slow.read(&mut [0; 8]).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        let mut fine = Paced::new(&b"abc"[..], Some(1 << 30), None, stop);
        assert_eq!(fine.read(&mut []).unwrap(), 0);
        let mut out = Vec::new();
        fine.read_to_end(&mut out).unwrap();
        assert_eq!(out, b"abc");
    }
}
