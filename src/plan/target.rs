//! The URL as typed, turned into what is sent (`http://` added when the
//! scheme is missing, as curl does; user-info taken out to become Basic
//! auth), its origin (the default scope), and its redacted form for output.

use ureq::http::Uri;

/// What a typed path or query may hold that a URI may not (besides the
/// spaces and controls refused outright): encoded as a browser encodes it.
const NOT_IN_URIS: &percent_encoding::AsciiSet =
    &percent_encoding::CONTROLS.add(b'<').add(b'>').add(b'`');

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// What is sent: no user-info, no fragment.
    pub url: String,
    /// `scheme://host:port`, with the default port spelled out.
    pub origin: String,
    /// `user:password` from the URL, percent-decoded.
    pub userinfo: Option<String>,
}

impl Target {
    pub fn parse(input: &str) -> Result<Target, String> {
        let input = input.trim();
        if input.is_empty() {
            return Err("the URL is empty".into());
        }
        if input.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!(
                "`{}` contains spaces or control characters; percent-encode them",
                crate::redact::url(input)
            ));
        }
        let with_scheme = if input.contains("://") {
            input.to_string()
        } else {
            format!("http://{input}")
        };
        let without_fragment = with_scheme.split('#').next().unwrap_or_default();
        let (scheme, rest) = without_fragment
            .split_once("://")
            .ok_or_else(|| "the URL has no scheme".to_string())?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return Err(format!("unsupported scheme `{scheme}` (use http or https)"));
        }
        let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(authority_end);
        let (userinfo, host_port) = match authority.rsplit_once('@') {
            Some((userinfo, host)) => (Some(percent_decode(userinfo)), host),
            None => (None, authority),
        };
        // Non-ASCII bytes of the path and query are sent percent-encoded, as
        // curl does, and so are the ASCII characters no URI may hold raw.
        let tail = percent_encoding::utf8_percent_encode(tail, NOT_IN_URIS);
        let url = format!("{scheme}://{host_port}{tail}");
        let uri: Uri = url
            .parse()
            .map_err(|e| format!("`{}` is not a valid URL: {e}", crate::redact::url(input)))?;
        let host = uri
            .host()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| format!("`{}` has no host", crate::redact::url(input)))?;
        // After an IPv6 literal's `]`, else after the last `:`.
        let explicit_port = match host_port.rsplit_once(']') {
            Some((_, after)) => after.strip_prefix(':'),
            None => host_port.rsplit_once(':').map(|(_, port)| port),
        };
        let port = match explicit_port {
            None | Some("") => {
                if scheme == "https" {
                    443
                } else {
                    80
                }
            }
            Some(port) => port
                .parse::<u16>()
                .ok()
                .filter(|&p| p != 0)
                .ok_or_else(|| format!("`{}` has an invalid port", crate::redact::url(input)))?,
        };
        Ok(Target {
            origin: format!("{scheme}://{}:{port}", host.to_ascii_lowercase()),
            url,
            userinfo,
        })
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).and_then(|&b| hex(b)),
            bytes.get(i + 2).and_then(|&b| hex(b)),
        ) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_curl() {
        let t = Target::parse("127.0.0.1:8429/v1/x?q=1#frag").unwrap();
        assert_eq!(t.url, "http://127.0.0.1:8429/v1/x?q=1");
        assert_eq!(t.origin, "http://127.0.0.1:8429");
        let t = Target::parse("HTTPS://Example.com").unwrap();
        assert_eq!(t.origin, "https://example.com:443");
        let t = Target::parse("http://al%40ce:p%3Ass@h/").unwrap();
        assert_eq!(t.userinfo.as_deref(), Some("al@ce:p:ss"));
        assert_eq!(t.url, "http://h/");
        let t = Target::parse("h/café?q=ü").unwrap();
        assert_eq!(t.url, "http://h/caf%C3%A9?q=%C3%BC");
        let t = Target::parse("h/a<b>`c").unwrap();
        assert_eq!(t.url, "http://h/a%3Cb%3E%60c");
        let t = Target::parse("http://[::1]:9/").unwrap();
        assert_eq!(t.origin, "http://[::1]:9");
    }

    #[test]
    fn rejects_bad_urls() {
        for bad in [
            "",
            "ftp://x/",
            "http://",
            "http://exa mple.com/",
            "http://h:99999/",
            "http://h\n/",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn errors_do_not_leak_credentials() {
        for bad in [
            "http://u:hunter2@h:99999/?token=abc",
            "u:hunter2@h:1/a b?token=abc",
            "http://u:hun/ter2@h:1/?token=abc",
        ] {
            let err = Target::parse(bad).unwrap_err();
            assert!(!err.contains("hunter2") && !err.contains("abc"), "{err}");
        }
    }
}
