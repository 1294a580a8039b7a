//! From curl's connection flags (`cli::net`) to what the transport needs
//! (`edge::net::Net`): cookie strings and files told apart as curl tells
//! them, `.netrc` read and its passwords masked, the proxy bypass decided.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::cli::Cli;
use crate::edge::net::{self, Login, Net, SpeedLimit};
use crate::redact::Redactor;

/// curl's `--speed-time` when only `--speed-limit` is given.
const SPEED_TIME: Duration = Duration::from_secs(30);

/// The transport's connection settings for a request to `url`.
pub fn settings(cli: &Cli, url: &str, redactor: &mut Redactor) -> Result<Net, String> {
    let n = &cli.net;
    // As curl decides: a value with a "=" is cookies, one without a file;
    // several are joined as curl joins them.
    let (strings, files): (Vec<&String>, Vec<&String>) =
        n.cookie.iter().partition(|c| c.contains('='));
    let cookie = (!strings.is_empty()).then(|| {
        strings
            .iter()
            .map(|s| s.trim().trim_end_matches(';'))
            .collect::<Vec<_>>()
            .join(";")
    });
    if let Some(cookie) = &cookie {
        crate::cli::parse_header_value(cookie).map_err(|e| format!("-b: {e}"))?;
        // A Cookie header's values are masked wherever they are echoed.
        redactor.add(cookie);
    }
    let host = url::Url::parse(url)
        .ok()
        .and_then(|u| {
            u.host_str()
                .map(|h| h.trim_matches(['[', ']']).to_ascii_lowercase())
        })
        .unwrap_or_default();
    let netrc = match (&n.netrc_file, n.netrc || n.netrc_optional) {
        (Some(file), _) => Some(file.clone()),
        (None, true) => Some(
            std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".netrc"))
                .ok_or("-n/--netrc reads $HOME/.netrc, and HOME is not set")?,
        ),
        (None, false) => None,
    };
    let logins = match &netrc {
        Some(path) => read_netrc(path)?,
        None => Vec::new(),
    };
    for login in &logins {
        redactor.add(&login.password);
    }
    let speed = match (n.speed_limit, n.speed_time) {
        (Some(bytes), over) => Some(SpeedLimit {
            bytes,
            over: over.unwrap_or(SPEED_TIME),
        }),
        (None, Some(over)) => Some(SpeedLimit { bytes: 1, over }),
        (None, None) => None,
    };
    if speed.is_some_and(|s| s.over.is_zero()) {
        return Err("-y/--speed-time must be more than 0".into());
    }
    if let Some(user) = &n.proxy_user {
        if cli.request.proxy.is_none() {
            return Err("-U/--proxy-user is for the -x proxy: give -x too".into());
        }
        redactor.add(
            user.split_once(':')
                .map_or(user.as_str(), |(_, password)| password),
        );
    }
    let client_cert = match &n.cert {
        Some(cert) => Some((certificate_file(cert)?, n.key.clone())),
        None => None,
    };
    Ok(Net {
        cookie_files: files.into_iter().map(PathBuf::from).collect(),
        cookie_jar: n.cookie_jar.clone(),
        cookie,
        junk_session: n.junk_session_cookies,
        proxy_user: n.proxy_user.clone(),
        family: net::family(n.ipv4, n.ipv6),
        pinned: n.resolve.clone(),
        redirected: n.connect_to.clone(),
        unix_socket: n.unix_socket.clone(),
        location_trusted: n.location_trusted,
        max_redirects: match n.max_redirs {
            Some(-1) => None,
            Some(most) => Some(most as u32),
            None => Some(net::MAX_REDIRECTS),
        },
        no_proxy: n
            .noproxy
            .as_deref()
            .is_some_and(|list| bypassed(list, &host)),
        client_cert,
        logins,
        speed,
        limit_rate: n.limit_rate.filter(|&r| r > 0),
        wire_spacing: match (&cli.batch.batch, cli.scope.rate) {
            (Some(_), Some(crate::cli::RateFlag::Fixed(rate))) => Some(Arc::new(
                net::WireSpacing::new(crate::rules::scope::wire_spacing(rate.interval)),
            )),
            _ => None,
        },
        observed: net::Observed::default(),
    })
}

/// `--cert FILE[:PASSWORD]`: the file, when it names one as given; a
/// password is refused, since rustls reads no encrypted key.
fn certificate_file(text: &str) -> Result<PathBuf, String> {
    if Path::new(text).exists() {
        return Ok(PathBuf::from(text));
    }
    match text.split_once(':') {
        Some((file, _)) if Path::new(file).exists() => Err(format!(
            "--cert {file}: a key password is not supported; decrypt the key first \
             (openssl pkey -in key.pem -out plain.pem) and pass it with --key"
        )),
        _ => Err(format!("cannot read --cert {text}: no such file")),
    }
}

/// Whether curl's `--noproxy LIST` covers `host`: `*`, the host itself, or
/// a domain it is in (a leading dot is the same domain).
fn bypassed(list: &str, host: &str) -> bool {
    list.split(',')
        .map(|entry| entry.trim().trim_start_matches('.').to_ascii_lowercase())
        .filter(|entry| !entry.is_empty())
        .any(|entry| {
            entry == "*"
                || host == entry
                || host
                    .strip_suffix(&entry)
                    .is_some_and(|rest| rest.ends_with('.'))
        })
}

/// A `.netrc`, or none when the file does not exist (curl goes on then).
fn read_netrc(path: &Path) -> Result<Vec<Login>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(parse_netrc(&text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(format!(
            "cannot read the netrc file {}: {e}",
            path.display()
        )),
    }
}

/// The logins of a `.netrc`: `machine NAME`, `default`, `login`, `password`
/// tokens in any layout, "quoted" values with `\` escapes, `macdef` bodies
/// (up to a blank line) skipped; an entry without a login is no login.
pub fn parse_netrc(text: &str) -> Vec<Login> {
    let mut logins = Vec::new();
    let mut entry: Option<(Option<String>, Option<String>, Option<String>)> = None;
    let mut finish = |entry: Option<(Option<String>, Option<String>, Option<String>)>| {
        if let Some((machine, Some(login), password)) = entry {
            logins.push(Login {
                machine,
                login,
                password: password.unwrap_or_default(),
            });
        }
    };
    let mut rest = text;
    while let Some(token) = next_token(&mut rest) {
        match token.as_str() {
            "machine" => {
                finish(entry.take());
                entry = Some((next_token(&mut rest), None, None));
            }
            "default" => {
                finish(entry.take());
                entry = Some((None, None, None));
            }
            "login" => {
                let value = next_token(&mut rest);
                if let Some(e) = &mut entry {
                    e.1 = value;
                }
            }
            "password" => {
                let value = next_token(&mut rest);
                if let Some(e) = &mut entry {
                    e.2 = value;
                }
            }
            "account" => {
                next_token(&mut rest);
            }
            "macdef" => {
                finish(entry.take());
                rest = rest.split_once("\n\n").map_or("", |(_, after)| after);
            }
            _ => {}
        }
    }
    finish(entry);
    logins
}

fn next_token(rest: &mut &str) -> Option<String> {
    let text = rest.trim_start();
    if text.is_empty() {
        *rest = text;
        return None;
    }
    if let Some(quoted) = text.strip_prefix('"') {
        let mut value = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    *rest = &quoted[i + 1..];
                    return Some(value);
                }
                '\\' => value.extend(chars.next().map(|(_, c)| c)),
                c => value.push(c),
            }
        }
        *rest = "";
        return Some(value);
    }
    let end = text.find(char::is_whitespace).unwrap_or(text.len());
    *rest = &text[end..];
    Some(text[..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netrc_entries_as_curl_reads_them() {
        let text = "machine api.example login alice password \"s3 \\\"cret\"\n\
                    macdef init\nmachine fake login x password y\n\n\
                    machine other.example\n  login bob\n  account ignored\n  password pw\n\
                    machine nologin.example password lonely\n\
                    default login anon password guest\n";
        let login = |machine: Option<&str>, login: &str, password: &str| Login {
            machine: machine.map(str::to_string),
            login: login.into(),
            password: password.into(),
        };
        assert_eq!(
            parse_netrc(text),
            vec![
                login(Some("api.example"), "alice", "s3 \"cret"),
                login(Some("other.example"), "bob", "pw"),
                login(None, "anon", "guest"),
            ]
        );
    }

    #[test]
    fn noproxy_matches_hosts_and_their_domains() {
        for (list, host, expected) in [
            ("*", "a.example", true),
            ("example.com", "example.com", true),
            ("example.com", "www.example.com", true),
            (".example.com", "www.example.com", true),
            ("example.com", "badexample.com", false),
            ("other, example.com", "example.com", true),
            ("", "example.com", false),
        ] {
            assert_eq!(bypassed(list, host), expected, "{list} {host}");
        }
    }
}
