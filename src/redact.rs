//! Keeping credentials out of every output. Where abide itself writes a
//! credential (a URL's user-info, a secret-looking query or fragment value)
//! it is masked by position, whatever its length; anywhere else (an error
//! message, a body the server echoes) a known secret is masked as text, in
//! its plain, JSON-escaped and percent-encoded forms, when it is long enough
//! not to garble ordinary words. Text is masked before it is cut, so that a
//! secret crossing the cut never leaves its head behind.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

/// Names of headers and query parameters whose values are secrets; a
/// percent-encoded name (`api%5Fkey`) is decoded first.
pub fn is_secret_name(name: &str) -> bool {
    let name = percent_decode_str(name)
        .decode_utf8_lossy()
        .to_ascii_lowercase();
    const CONTAINS: [&str; 12] = [
        "auth",
        "token",
        "secret",
        "passw",
        "signature",
        "apikey",
        "api_key",
        "api-key",
        "cookie",
        "credential",
        "sessid",
        "sessionid",
    ];
    const WORDS: [&str; 7] = ["key", "sig", "pwd", "pass", "jwt", "session", "sid"];
    // An idempotency key is no credential: the outcome shows it, and a
    // person told to replay a write needs to read it.
    if name.trim_start_matches("x-").replace('_', "-") == "idempotency-key" {
        return false;
    }
    CONTAINS.iter().any(|c| name.contains(c))
        || name
            .split(['_', '-', '.'])
            .any(|word| WORDS.contains(&word))
}

/// `name=value` pairs (split on `&` and `;`) with secret values masked.
fn pairs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let end = rest.find(['&', ';']).unwrap_or(rest.len());
        let (pair, after) = rest.split_at(end);
        match pair.split_once('=') {
            Some((name, _)) if is_secret_name(name) => {
                out.push_str(name);
                out.push_str("=***");
            }
            _ => out.push_str(pair),
        }
        let mut chars = after.chars();
        match chars.next() {
            Some(separator) => out.push(separator),
            None => return out,
        }
        rest = chars.as_str();
    }
}

/// A URL, well formed or not (it may be what a user typed, or a server's
/// `Location`), with its user-info and secret query and fragment values
/// replaced by `***`.
pub fn url(url: &str) -> String {
    let (before_fragment, fragment) = match url.split_once('#') {
        Some((b, f)) => (b, Some(f)),
        None => (url, None),
    };
    let (before_query, query) = match before_fragment.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (before_fragment, None),
    };
    let (scheme, rest) = match before_query.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        None => (None, before_query),
    };
    let first = rest.split('/').next().unwrap_or_default();
    // The user-info ends at the last `@` of the authority; a password with
    // a `/` in it (`u:pa/ss@h`) pushes it past the first `/`, which the
    // `:` of a password that is not a port gives away.
    let userinfo_end = if first.contains('@') {
        first.rfind('@')
    } else {
        let password_like = first
            .rsplit_once(':')
            .is_some_and(|(_, after)| !after.bytes().all(|b| b.is_ascii_digit()));
        rest.rfind('@').filter(|_| password_like)
    };
    let mut out = String::with_capacity(url.len());
    if let Some(scheme) = scheme {
        out.push_str(scheme);
        out.push_str("://");
    }
    match userinfo_end {
        Some(at) => {
            out.push_str("***");
            out.push_str(&rest[at..]);
        }
        None => out.push_str(rest),
    }
    for (mark, part) in [('?', query), ('#', fragment)] {
        if let Some(part) = part {
            out.push(mark);
            out.push_str(&pairs(part));
        }
    }
    out
}

/// Every URL-looking word of `text` (say, clap quoting an argument) masked
/// as `url` masks it.
pub fn urls_in(text: &str) -> String {
    text.split_inclusive([' ', '\'', '`', '"', '\n'])
        .map(|word| {
            let end = word.len() - word.ends_with([' ', '\'', '`', '"', '\n']) as usize;
            let (word, separator) = word.split_at(end);
            if word.contains(['@', '?', '#']) {
                format!("{}{separator}", url(word))
            } else {
                format!("{word}{separator}")
            }
        })
        .collect()
}

/// What a URL component percent-encodes: all but RFC 3986's unreserved characters.
const URL_COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A secret this short is not masked in free text: it would garble
/// ordinary words in messages (`-u admin:admin`, a cookie's `lang=en`).
const SECRET_MIN: usize = 8;

/// Masks known secret strings wherever they appear in free text (error
/// messages may quote a URL or a header, a server may echo a token).
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Vec<Vec<u8>>,
}

impl Redactor {
    /// Masks `secret`, and each long enough part of it: a server may echo
    /// one cookie of `a=1; b=2`, or the token of `Bearer X` alone.
    pub fn add(&mut self, secret: &str) {
        self.insert(secret);
        for part in secret.split([' ', '\t', ';', ',']) {
            let part = part.trim_matches('"');
            let value = part
                .split_once('=')
                .map_or("", |(_, v)| v.trim_matches('"'));
            for piece in [part, value] {
                self.insert(piece);
            }
        }
    }

    /// Adds `secret` as it is, as a JSON string spells it and as a URL
    /// spells it, so that an echo in any of those forms is masked too.
    fn insert(&mut self, secret: &str) {
        let secret = secret.trim();
        if secret.len() < SECRET_MIN {
            return;
        }
        let json = serde_json::to_string(secret).expect("a string serializes");
        let escaped = &json[1..json.len() - 1];
        let encoded = utf8_percent_encode(secret, URL_COMPONENT).to_string();
        for form in [secret, escaped, &encoded] {
            if !self.secrets.iter().any(|s| s == form.as_bytes()) {
                self.secrets.push(form.as_bytes().to_vec());
            }
        }
        // Longest first, so a secret containing another is masked whole.
        self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }

    /// The longest secret: text read this far beyond a cut is enough to
    /// mask a secret that crosses it.
    pub fn reach(&self) -> usize {
        self.secrets.first().map_or(0, Vec::len)
    }

    pub fn text(&self, text: &str) -> String {
        // Masking whole secrets in valid UTF-8 keeps it valid UTF-8.
        String::from_utf8(self.bytes(text.as_bytes())).expect("masked UTF-8 stays UTF-8")
    }

    /// `bytes` with every known secret replaced by `***`.
    pub fn bytes(&self, bytes: &[u8]) -> Vec<u8> {
        let mut out = bytes.to_vec();
        for secret in &self.secrets {
            out = replace(&out, secret);
        }
        out
    }

    /// Masks `bytes`, then keeps at most `limit` of them, never cutting a
    /// UTF-8 character of a text in two. Also says whether it cut.
    pub fn cut(&self, bytes: &[u8], limit: usize) -> (Vec<u8>, bool) {
        let mut masked = self.bytes(bytes);
        if masked.len() <= limit {
            return (masked, false);
        }
        // A text cut inside a character loses the character, not the text.
        let end = match std::str::from_utf8(&masked[..limit]) {
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            _ => limit,
        };
        masked.truncate(end);
        (masked, true)
    }
}

/// `haystack` with every (non-overlapping) `needle` replaced by `***`.
fn replace(haystack: &[u8], needle: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut last = 0;
    for at in memchr::memmem::find_iter(haystack, needle) {
        out.extend_from_slice(&haystack[last..at]);
        out.extend_from_slice(b"***");
        last = at + needle.len();
    }
    out.extend_from_slice(&haystack[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names() {
        for name in [
            "Authorization",
            "Proxy-Authorization",
            "Cookie",
            "token",
            "access_token",
            "api_key",
            "api%5Fkey",
            "apiKey",
            "X-Api-Key",
            "key",
            "secret",
            "client_secret",
            "refresh_token",
            "id_token",
            "password",
            "pass",
            "passwd",
            "pwd",
            "jwt",
            "session",
            "sessionid",
            "PHPSESSID",
            "signature",
            "sig",
            "X-Amz-Signature",
            "auth",
            "X-Auth-Token",
            "session_id",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in [
            "q",
            "page",
            "monkey",
            "sort",
            "Content-Type",
            "Accept",
            "User-Agent",
            "signal",
            "passage",
            "Idempotency-Key",
            "idempotency_key",
            "X-Idempotency-Key",
        ] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn urls() {
        let rows = [
            ("http://h:1/p?q=1", "http://h:1/p?q=1"),
            ("http://u:pw@h:1/p", "http://***@h:1/p"),
            ("https://u@h/", "https://***@h/"),
            (
                "http://h/p?token=abc&q=2&api_key=z",
                "http://h/p?token=***&q=2&api_key=***",
            ),
            ("http://h/p?sig=s&flag", "http://h/p?sig=***&flag"),
            ("http://h/a@b", "http://h/a@b"),
            ("http://h:8080/users/@me", "http://h:8080/users/@me"),
            // Malformed: no scheme, a `/` in the password, spaces.
            ("alice:Sup3rSecretPw@127.0.0.1:1/a b", "***@127.0.0.1:1/a b"),
            ("http://alice:pa/ssWORD@h/x", "http://***@h/x"),
            ("http://a:b@[::1/?token=t", "http://***@[::1/?token=***"),
            // Fragments, `;` separators and encoded names.
            (
                "http://h/cb#access_token=t1&state=xyz",
                "http://h/cb#access_token=***&state=xyz",
            ),
            (
                "http://h/?a=1;access_token=t2",
                "http://h/?a=1;access_token=***",
            ),
            (
                "http://h/?api%5Fkey=k&jwt=j&pass=p",
                "http://h/?api%5Fkey=***&jwt=***&pass=***",
            ),
        ];
        for (input, expected) in rows {
            assert_eq!(url(input), expected, "{input}");
        }
        assert_eq!(
            urls_in("error: unexpected argument 'http://u:pw@h/?token=t' found"),
            "error: unexpected argument 'http://***@h/?token=***' found"
        );
    }

    #[test]
    fn literal_secrets() {
        let mut r = Redactor::default();
        r.add("hunter2-long");
        r.add("hunter2-longextra");
        r.add("  ");
        // Short secrets are left alone in free text.
        r.add("admin");
        assert_eq!(
            r.text("bad hunter2-longextra and hunter2-long as admin"),
            "bad *** and *** as admin"
        );
    }

    #[test]
    fn escaped_and_encoded_forms() {
        let mut r = Redactor::default();
        r.add("pa\"ss\\word/+x-y");
        assert_eq!(
            r.text(r#"{"echo":"pa\"ss\\word/+x-y"}"#),
            r#"{"echo":"***"}"#
        );
        assert_eq!(r.text("?p=pa%22ss%5Cword%2F%2Bx-y&q"), "?p=***&q");
    }

    #[test]
    fn masked_then_cut() {
        let mut r = Redactor::default();
        r.add("SECRETTOKEN_0123456789abcde");
        let text = b"Bearer SECRETTOKEN_0123456789abcde and more";
        assert_eq!(r.cut(text, 33), (b"Bearer *** and more".to_vec(), false));
        assert_eq!(r.cut(text, 12), (b"Bearer *** a".to_vec(), true));
        let (cut, truncated) = r.cut(text, 8);
        assert_eq!((cut.as_slice(), truncated), (&b"Bearer *"[..], true));
        // Never half a character.
        assert_eq!(r.cut("aé".as_bytes(), 2), (b"a".to_vec(), true));
        assert!(r.reach() >= 27);
    }

    #[test]
    fn parts_of_secrets() {
        let mut r = Redactor::default();
        r.add("session=abcdefgh1234; lang=en");
        r.add("Digest username=\"someone\", response=\"0123456789ab\"");
        r.add("Basic YW5uOnMzY3IzdC1wYXNz==");
        let echoed = "cookie abcdefgh1234 in lang=en; response 0123456789ab from \
                      someone; YW5uOnMzY3IzdC1wYXNz== and session=abcdefgh1234";
        assert_eq!(
            r.text(echoed),
            "cookie *** in lang=en; response *** from someone; *** and ***"
        );
    }
}
