//! `-w FORMAT`: curl's write-out, parsed once before sending (an unknown
//! variable is a usage error, not a silent blank) and rendered at the end
//! from the run's facts and its outcome line.

use std::io::{self, Write};
use std::time::Duration;

use crate::edge::net::Trace;

/// A parsed `-w` format: text, variables and stream switches in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format(Vec<Piece>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Var(Var),
    /// `%header{name}`: the final answer's header, by lower-case name.
    Header(String),
    /// `%{stdout}` / `%{stderr}`: where what follows goes.
    ToStderr(bool),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Var {
    HttpCode,
    UrlEffective,
    Method,
    ContentType,
    SizeDownload,
    SizeUpload,
    TimeTotal,
    /// From sending the final attempt to its answer's head.
    TimeStartTransfer,
    TimeNameLookup,
    TimeConnect,
    TimeAppConnect,
    RemoteIp,
    RemotePort,
    NumConnects,
    NumRedirects,
    NumRetries,
    ExitCode,
    ErrorMsg,
    Json,
}

/// The variables, as curl names them.
const VARS: [(&str, Var); 20] = [
    ("http_code", Var::HttpCode),
    ("response_code", Var::HttpCode),
    ("url_effective", Var::UrlEffective),
    ("method", Var::Method),
    ("content_type", Var::ContentType),
    ("size_download", Var::SizeDownload),
    ("size_upload", Var::SizeUpload),
    ("time_total", Var::TimeTotal),
    ("time_namelookup", Var::TimeNameLookup),
    ("time_connect", Var::TimeConnect),
    ("time_appconnect", Var::TimeAppConnect),
    ("time_starttransfer", Var::TimeStartTransfer),
    ("remote_ip", Var::RemoteIp),
    ("remote_port", Var::RemotePort),
    ("num_connects", Var::NumConnects),
    ("num_redirects", Var::NumRedirects),
    ("num_retries", Var::NumRetries),
    ("exitcode", Var::ExitCode),
    ("errormsg", Var::ErrorMsg),
    ("json", Var::Json),
];

/// What a format is rendered from.
pub struct Facts<'a> {
    pub status: Option<u16>,
    pub url: &'a str,
    pub method: &'a str,
    /// The final answer's headers, names lower-case, values redacted.
    pub headers: &'a [(String, String)],
    pub downloaded: u64,
    pub uploaded: u64,
    pub total: std::time::Duration,
    pub head_after: std::time::Duration,
    /// Attempts sent.
    pub attempts: usize,
    pub exit_code: u8,
    /// Empty on success.
    pub error: &'a str,
    /// The outcome line, without its newline.
    pub json: &'a str,
    /// What the final attempt's connection was.
    pub trace: &'a Trace,
}

impl Format {
    /// Parses curl's syntax: `%{name}`, `%header{name}`, `%%`, and the
    /// escapes `\n`, `\r`, `\t` and `\\`.
    pub fn parse(text: &str) -> Result<Format, String> {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            rest = &rest[c.len_utf8()..];
            match (c, rest.chars().next()) {
                ('%', Some('%')) => {
                    literal.push('%');
                    rest = &rest[1..];
                }
                ('%', Some('h')) if rest.starts_with("header{") => {
                    let (name, after) = rest["header{".len()..]
                        .split_once('}')
                        .ok_or("-w: a %header{ is not closed")?;
                    pieces.push(Piece::Text(std::mem::take(&mut literal)));
                    pieces.push(Piece::Header(name.to_ascii_lowercase()));
                    rest = after;
                }
                ('%', Some('{')) => {
                    let (piece, after) = variable(&rest[1..])?;
                    pieces.push(Piece::Text(std::mem::take(&mut literal)));
                    pieces.push(piece);
                    rest = after;
                }
                ('\\', Some(e @ ('n' | 'r' | 't' | '\\'))) => {
                    literal.push(match e {
                        'n' => '\n',
                        'r' => '\r',
                        't' => '\t',
                        _ => '\\',
                    });
                    rest = &rest[1..];
                }
                (c, _) => literal.push(c),
            }
        }
        pieces.push(Piece::Text(literal));
        pieces.retain(|p| !matches!(p, Piece::Text(t) if t.is_empty()));
        Ok(Format(pieces))
    }

    /// Writes the format to `out`, or to `err` after `%{stderr}`.
    pub fn render(
        &self,
        facts: &Facts,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> io::Result<()> {
        let mut to_stderr = false;
        for piece in &self.0 {
            let text = match piece {
                Piece::Text(text) => text.clone(),
                Piece::Var(var) => value(*var, facts),
                Piece::Header(name) => header(facts.headers, name).unwrap_or_default().to_string(),
                Piece::ToStderr(yes) => {
                    to_stderr = *yes;
                    continue;
                }
            };
            let to: &mut dyn Write = if to_stderr { err } else { out };
            to.write_all(text.as_bytes())?;
        }
        out.flush()?;
        err.flush()
    }
}

/// The piece named after `%{`, and the text after its closing brace.
fn variable(text: &str) -> Result<(Piece, &str), String> {
    let (name, after) = text.split_once('}').ok_or("-w: a %{ is not closed")?;
    let piece = match name {
        "stdout" => Piece::ToStderr(false),
        "stderr" => Piece::ToStderr(true),
        _ => VARS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, var)| Piece::Var(*var))
            .ok_or_else(|| format!("-w: abide does not know the variable %{{{name}}}"))?,
    };
    Ok((piece, after))
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn value(var: Var, facts: &Facts) -> String {
    match var {
        // curl writes 000 when no answer came, and the last 3xx when the
        // run stopped at one (too many redirects).
        Var::HttpCode => format!("{:03}", facts.status.or(facts.trace.status).unwrap_or(0)),
        // The last hop's URL after -L, masked as the URL asked for is.
        Var::UrlEffective => facts
            .trace
            .url
            .as_deref()
            .map_or_else(|| facts.url.to_string(), crate::redact::url),
        Var::Method => facts.method.to_string(),
        Var::ContentType => header(facts.headers, "content-type")
            .unwrap_or_default()
            .to_string(),
        Var::SizeDownload => facts.downloaded.to_string(),
        Var::SizeUpload => facts.uploaded.to_string(),
        Var::TimeTotal => seconds(Some(facts.total)),
        Var::TimeStartTransfer => seconds(Some(facts.head_after)),
        // curl writes 0 for a step that did not happen (no TLS, say).
        Var::TimeNameLookup => seconds(facts.trace.namelookup),
        Var::TimeConnect => seconds(facts.trace.connect),
        Var::TimeAppConnect => seconds(facts.trace.appconnect),
        Var::RemoteIp => facts
            .trace
            .remote
            .map(|a| a.ip().to_string())
            .unwrap_or_default(),
        Var::RemotePort => facts.trace.remote.map_or(0, |a| a.port()).to_string(),
        Var::NumConnects => facts.trace.connects.to_string(),
        Var::NumRedirects => facts.trace.redirects.to_string(),
        Var::NumRetries => facts.attempts.saturating_sub(1).to_string(),
        Var::ExitCode => facts.exit_code.to_string(),
        Var::ErrorMsg => facts.error.to_string(),
        Var::Json => facts.json.to_string(),
    }
}

/// Seconds as curl writes them, with six decimals.
fn seconds(time: Option<Duration>) -> String {
    format!("{:.6}", time.unwrap_or_default().as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(format: &str) -> (String, String) {
        rendered_with(format, &Trace::default())
    }

    fn rendered_with(format: &str, trace: &Trace) -> (String, String) {
        let headers = vec![
            ("content-type".to_string(), "text/plain".to_string()),
            ("x-custom".to_string(), "42".to_string()),
        ];
        let facts = Facts {
            status: Some(200),
            url: "http://h/x",
            method: "GET",
            headers: &headers,
            downloaded: 6,
            uploaded: 0,
            total: std::time::Duration::from_millis(1500),
            head_after: std::time::Duration::from_millis(250),
            attempts: 3,
            exit_code: 0,
            error: "",
            json: "{}",
            trace,
        };
        let (mut out, mut err) = (Vec::new(), Vec::new());
        Format::parse(format)
            .unwrap()
            .render(&facts, &mut out, &mut err)
            .unwrap();
        (
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn variables_escapes_and_switches() {
        let (out, err) = rendered(
            "%{http_code} %{content_type} %{size_download}\\n%%%header{X-Custom}\\t\
             %{num_retries} %{time_total} %{time_starttransfer} %{time_connect}%{stderr}%{json}\\\\%{stdout}.",
        );
        assert_eq!(out, "200 text/plain 6\n%42\t2 1.500000 0.250000 0.000000.");
        assert_eq!(err, "{}\\");
        assert_eq!(rendered("%header{none}|%{errormsg}|\\q").0, "||\\q");
    }

    #[test]
    fn connection_variables_come_from_the_trace() {
        let format = "%{url_effective} %{num_redirects} %{remote_ip}:%{remote_port} \
                      %{num_connects} %{time_namelookup} %{time_connect} %{time_appconnect}";
        assert_eq!(
            rendered(format).0,
            "http://h/x 0 :0 0 0.000000 0.000000 0.000000"
        );
        let trace = Trace {
            url: Some("http://h/next?token=t0k".into()),
            status: None,
            redirects: 2,
            namelookup: Some(Duration::from_millis(1)),
            connect: Some(Duration::from_millis(3)),
            appconnect: None,
            remote: Some("127.0.0.1:8080".parse().unwrap()),
            connects: 3,
        };
        assert_eq!(
            rendered_with(format, &trace).0,
            "http://h/next?token=*** 2 127.0.0.1:8080 3 0.001000 0.003000 0.000000"
        );
    }

    #[test]
    fn unknown_or_open_variables_are_refused() {
        for bad in ["%{nope}", "%{http_code", "%header{x"] {
            assert!(Format::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            Format::parse("100%").unwrap(),
            Format(vec![Piece::Text("100%".into())])
        );
    }
}
