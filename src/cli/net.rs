//! curl's connection, cookie and pace flags, with curl's spelling and
//! meaning; what abide does differently is said in each flag's help.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::edge::net::{Pinned, Redirected};
use crate::units::parse_duration;

const NET: &str = "Connection and cookies (as curl's)";

#[derive(Args, Debug, Default)]
#[command(next_help_heading = NET)]
pub struct NetArgs {
    /// Cookies to send, "NAME=VALUE; N2=V2" (sent as given on every request,
    /// -L hops too); or, without a "=", a FILE to read cookies from (a
    /// Netscape cookie file or Set-Cookie: lines, as curl reads them; a
    /// missing file is no cookies), which turns on the cookie engine: every
    /// answer's Set-Cookie (a redirect's too) is kept and sent on where
    /// domain, path, Secure and expiry allow, as curl does. Repeatable. A
    /// -H "Cookie: ..." of your own is then the only one sent, as curl's.
    #[arg(short = 'b', long = "cookie", value_name = "DATA|FILE")]
    pub cookie: Vec<String>,

    /// With -b FILE: leave out the file's session cookies (those without an
    /// expiry), as a new browser session would.
    #[arg(short = 'j', long = "junk-session-cookies")]
    pub junk_session_cookies: bool,

    /// Write every cookie the run ends with to FILE, in curl's Netscape
    /// format, through a temporary file renamed over it; "-" is stdout.
    /// Turns on the cookie engine, as -b FILE does.
    #[arg(short = 'c', long = "cookie-jar", value_name = "FILE")]
    pub cookie_jar: Option<PathBuf>,

    /// Connect over IPv4 only.
    #[arg(short = '4', long = "ipv4", conflicts_with = "ipv6")]
    pub ipv4: bool,

    /// Connect over IPv6 only.
    #[arg(short = '6', long = "ipv6")]
    pub ipv6: bool,

    /// HOST:PORT:ADDR[,ADDR...]: connect to ADDR for HOST at PORT, as if
    /// the name resolved to it; the URL, Host and TLS name stay. HOST may
    /// be * for any name (repeatable).
    #[arg(long, value_name = "HOST:PORT:ADDR", value_parser = parse_resolve)]
    pub resolve: Vec<Pinned>,

    /// HOST1:PORT1:HOST2:PORT2: a connection to HOST1 at PORT1 goes to
    /// HOST2 at PORT2 instead; an empty part matches any (HOST1, PORT1) or
    /// keeps what it was (HOST2, PORT2). Repeatable; the first match wins.
    #[arg(long = "connect-to", value_name = "H1:P1:H2:P2", value_parser = parse_connect_to)]
    pub connect_to: Vec<Redirected>,

    /// Connect to this Unix socket instead of the URL's host and port (the
    /// URL still gives Host and path), as curl's: http://localhost/... to a
    /// local service such as /var/run/docker.sock.
    #[arg(long = "unix-socket", value_name = "PATH")]
    pub unix_socket: Option<PathBuf>,

    /// With -L, send -u, Authorization and Cookie headers on to other hosts
    /// too, as curl's: only for a redirect you trust.
    #[arg(long = "location-trusted")]
    pub location_trusted: bool,

    /// With -L, follow at most N redirects per attempt (default 50, as
    /// curl; -1 is no limit); one more ends the run NON_RETRYABLE with
    /// curl's words "Maximum (N) redirects followed" (curl's exit 47).
    #[arg(long = "max-redirs", value_name = "N", allow_negative_numbers = true,
          value_parser = clap::value_parser!(i64).range(-1..=i64::from(u32::MAX)))]
    pub max_redirs: Option<i64>,

    /// USER:PASSWORD for -x's proxy, as curl's; masked like -u. (A proxy
    /// from the environment takes them in its URL.)
    #[arg(short = 'U', long = "proxy-user", value_name = "USER:PASSWORD")]
    pub proxy_user: Option<String>,

    /// Accepted, as curl's -p: abide always goes through an HTTP proxy with
    /// CONNECT, for http:// URLs too.
    #[arg(short = 'p', long = "proxytunnel")]
    pub proxytunnel: bool,

    /// Hosts to reach without a proxy, comma-separated, as curl matches
    /// them: a name matches itself and its subdomains, * matches all.
    /// Decided for the URL's host, for the whole run.
    #[arg(long, value_name = "LIST")]
    pub noproxy: Option<String>,

    /// A client certificate (PEM) to show the server; its key is in FILE
    /// too, or in --key. An encrypted key (FILE:PASSWORD) is refused:
    /// decrypt it first (openssl pkey -in key.pem -out plain.pem).
    #[arg(short = 'E', long = "cert", value_name = "FILE")]
    pub cert: Option<String>,

    /// The private key (PEM, unencrypted) of --cert.
    #[arg(long = "key", value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,

    /// Basic credentials for the host from ~/.netrc (its machine entry, else
    /// default), for a request without -u or an Authorization of its own;
    /// a redirect to another host gets that host's entry. Masked like -u
    /// everywhere. A missing file sends none, as curl does.
    #[arg(short = 'n', long = "netrc")]
    pub netrc: bool,

    /// As --netrc, from FILE.
    #[arg(long = "netrc-file", value_name = "FILE", conflicts_with = "netrc")]
    pub netrc_file: Option<PathBuf>,

    /// As --netrc (curl's name for a .netrc that may be missing).
    #[arg(long = "netrc-optional", conflicts_with_all = ["netrc", "netrc_file"])]
    pub netrc_optional: bool,

    /// With -Y: the span over which the body's speed is measured (curl's
    /// seconds; 30 when only -Y is given). Alone, it means -Y 1: an attempt
    /// that gets no byte for that long fails, as --stall, which it shortens.
    #[arg(short = 'y', long = "speed-time", value_name = "SECONDS", value_parser = parse_duration)]
    pub speed_time: Option<Duration>,

    /// An attempt whose body comes slower than BYTES per second over
    /// --speed-time fails (and is retried or resumed as a broken-off body).
    #[arg(short = 'Y', long = "speed-limit", value_name = "BYTES",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub speed_limit: Option<u64>,

    /// Read the answer's body at most RATE bytes per second (k, m, g
    /// suffixes are 1024-based, as curl's); 0 is no limit. Uploads are
    /// not paced.
    #[arg(long = "limit-rate", value_name = "RATE", value_parser = crate::units::parse_size)]
    pub limit_rate: Option<u64>,

    /// Wait SECONDS between attempts when the server gives no delay,
    /// instead of the exponential backoff; a server's Retry-After still
    /// wins. 0 keeps the backoff, as curl.
    #[arg(long = "retry-delay", value_name = "SECONDS", value_parser = parse_duration)]
    pub retry_delay: Option<Duration>,

    /// Retry every failure of a request that is safe to replay: any 4xx or
    /// 5xx answer and any transport error (an unknown host, a refused
    /// certificate). A write whose effect is unknown is still never
    /// replayed, and a refused write is still not retried.
    #[arg(long = "retry-all-errors")]
    pub retry_all_errors: bool,
}

/// Splits `text` at its colons, keeping a bracketed IPv6 address whole.
fn fields(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut bracket = false;
    for (i, c) in text.char_indices() {
        match c {
            '[' => bracket = true,
            ']' => bracket = false,
            ':' if !bracket => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn unbracket(text: &str) -> &str {
    text.trim_start_matches('[').trim_end_matches(']')
}

fn parse_resolve(text: &str) -> Result<Pinned, String> {
    let bad = || format!("`{text}` is not HOST:PORT:ADDR[,ADDR] (e.g. example.com:443:127.0.0.1)");
    let text_parts = fields(text.trim_start_matches('+'));
    let [host, port, addrs] = text_parts[..] else {
        return Err(bad());
    };
    let port: u16 = port.parse().map_err(|_| bad())?;
    let addrs = addrs
        .split(',')
        .map(|a| unbracket(a.trim()).parse::<IpAddr>().map_err(|_| bad()))
        .collect::<Result<Vec<_>, _>>()?;
    if host.is_empty() {
        return Err(bad());
    }
    Ok(Pinned {
        host: unbracket(host).to_string(),
        port,
        addrs,
    })
}

fn parse_connect_to(text: &str) -> Result<Redirected, String> {
    let bad = || format!("`{text}` is not HOST1:PORT1:HOST2:PORT2 (parts may be empty)");
    let parts = fields(text);
    let [h1, p1, h2, p2] = parts[..] else {
        return Err(bad());
    };
    let host = |h: &str| (!h.is_empty()).then(|| unbracket(h).to_string());
    let port = |p: &str| {
        (!p.is_empty())
            .then(|| p.parse::<u16>().map_err(|_| bad()))
            .transpose()
    };
    Ok(Redirected {
        from_host: host(h1),
        from_port: port(p1)?,
        to_host: host(h2),
        to_port: port(p2)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_and_connect_to_as_curl_writes_them() {
        let pinned = parse_resolve("example.com:443:127.0.0.1,[::1]").unwrap();
        assert_eq!(pinned.host, "example.com");
        assert_eq!(pinned.port, 443);
        assert_eq!(
            pinned.addrs,
            vec![
                "127.0.0.1".parse::<IpAddr>().unwrap(),
                "::1".parse().unwrap()
            ]
        );
        assert!(
            parse_resolve("[::1]:80:::1").is_err(),
            "an address in brackets"
        );
        assert_eq!(parse_resolve("[::1]:80:[::1]").unwrap().host, "::1");
        for bad in [
            "example.com:443",
            "h:x:127.0.0.1",
            "h:80:nope",
            ":80:127.0.0.1",
        ] {
            assert!(parse_resolve(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_connect_to("example.com:443:[::1]:").unwrap(),
            Redirected {
                from_host: Some("example.com".into()),
                from_port: Some(443),
                to_host: Some("::1".into()),
                to_port: None,
            }
        );
        assert_eq!(parse_connect_to("::h:8080").unwrap().from_host, None);
        for bad in ["a:1:b", "a:x:b:1", "a:1:b:2:3"] {
            assert!(parse_connect_to(bad).is_err(), "{bad}");
        }
    }
}
