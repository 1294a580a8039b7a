//! Keeping credentials out of every output: header values, URL user-info,
//! secret-looking query values, and any literal secret that an error message
//! might echo back.

/// Names of headers and query parameters whose values are secrets.
pub fn is_secret_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    const CONTAINS: [&str; 10] = [
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
    ];
    const WORDS: [&str; 5] = ["key", "sig", "pwd", "session", "sid"];
    CONTAINS.iter().any(|c| name.contains(c))
        || name
            .split(['_', '-', '.'])
            .any(|word| WORDS.contains(&word))
}

/// A URL with user-info and secret query values replaced by `***`.
pub fn url(url: &str) -> String {
    let (before_query, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let mut out = match before_query.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let (authority, path) = rest.split_at(authority_end);
            match authority.rsplit_once('@') {
                Some((_, host)) => format!("{scheme}://***@{host}{path}"),
                None => before_query.to_string(),
            }
        }
        None => before_query.to_string(),
    };
    if let Some(query) = query {
        out.push('?');
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((name, _)) if is_secret_name(name) => format!("{name}=***"),
                _ => pair.to_string(),
            })
            .collect();
        out.push_str(&pairs.join("&"));
    }
    out
}

/// Parts of a secret shorter than this are not masked on their own: they
/// would garble ordinary words in messages (a cookie's `lang=en`).
const PART_MIN: usize = 8;

/// Masks known secret strings wherever they appear in free text (error
/// messages may quote a URL or a header).
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Vec<String>,
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
                if piece.len() >= PART_MIN {
                    self.insert(piece);
                }
            }
        }
    }

    fn insert(&mut self, secret: &str) {
        let secret = secret.trim();
        if !secret.is_empty() && !self.secrets.iter().any(|s| s == secret) {
            self.secrets.push(secret.to_string());
            // Longest first, so a secret containing another is masked whole.
            self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
    }

    pub fn text(&self, text: &str) -> String {
        self.secrets.iter().fold(text.to_string(), |acc, secret| {
            acc.replace(secret.as_str(), "***")
        })
    }
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
            "apiKey",
            "X-Api-Key",
            "key",
            "secret",
            "client_secret",
            "password",
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
        ];
        for (input, expected) in rows {
            assert_eq!(url(input), expected);
        }
    }

    #[test]
    fn literal_secrets() {
        let mut r = Redactor::default();
        r.add("hunter2");
        r.add("hunter2extra");
        r.add("  ");
        assert_eq!(r.text("bad hunter2extra and hunter2"), "bad *** and ***");
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
