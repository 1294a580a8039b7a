//! What the lab remembers about each request (the timeline tests assert on),
//! and the counts it reports when it stops.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use serde::Serialize;

use super::http;

/// One request as the lab saw it, and how it was answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Arrival order, from 0.
    pub seq: u64,
    /// Monotonic time since the lab started, taken when the request head was fully read.
    pub at: Duration,
    pub time: SystemTime,
    /// The `X-Client-Key` header, else the peer's IP address.
    pub client: String,
    pub method: String,
    /// The request target as sent, query included.
    pub path: String,
    /// As received, original case, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// `None` when the connection was closed, or held, without an answer.
    pub status: Option<u16>,
    /// How long before the moment its last Retry-After allowed the request came.
    pub early_by_ms: Option<u64>,
}

impl Record {
    /// The first value of header `name`, case-insensitively.
    pub fn header(&self, name: &str) -> Option<&str> {
        http::header(&self.headers, name)
    }

    /// The compact JSON line the CLI prints for this request.
    pub fn to_json_line(&self) -> String {
        #[derive(Serialize)]
        struct Line<'a> {
            time: String,
            client: &'a str,
            method: &'a str,
            path: &'a str,
            status: Option<u16>,
            #[serde(skip_serializing_if = "Option::is_none")]
            early_by_ms: Option<u64>,
        }
        let line = Line {
            time: humantime::format_rfc3339_millis(self.time).to_string(),
            client: &self.client,
            method: &self.method,
            path: &self.path,
            status: self.status,
            early_by_ms: self.early_by_ms,
        };
        serde_json::to_string(&line).expect("strings and numbers always serialize")
    }
}

/// Counts over all requests, and per client.
#[derive(Serialize, Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub requests: u64,
    /// Requests answered 429.
    pub rate_limited: u64,
    pub early_retries: u64,
    pub clients: BTreeMap<String, ClientSummary>,
}

#[derive(Serialize, Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientSummary {
    pub requests: u64,
    pub rate_limited: u64,
    pub early_retries: u64,
}

impl Summary {
    pub fn from_records(records: &[Record]) -> Summary {
        let mut summary = Summary::default();
        for record in records {
            let limited = u64::from(record.status == Some(429));
            let early = u64::from(record.early_by_ms.is_some());
            summary.requests += 1;
            summary.rate_limited += limited;
            summary.early_retries += early;
            let client = summary.clients.entry(record.client.clone()).or_default();
            client.requests += 1;
            client.rate_limited += limited;
            client.early_retries += early;
        }
        summary
    }

    /// The compact JSON line the CLI prints when it stops.
    pub fn to_json_line(&self) -> String {
        serde_json::to_string(self).expect("strings and numbers always serialize")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(client: &str, status: Option<u16>, early_by_ms: Option<u64>) -> Record {
        Record {
            seq: 0,
            at: Duration::ZERO,
            time: SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_123),
            client: client.into(),
            method: "GET".into(),
            path: "/x".into(),
            headers: vec![("X-Client-Key".into(), client.into())],
            body: Vec::new(),
            status,
            early_by_ms,
        }
    }

    #[test]
    fn json_lines() {
        assert_eq!(
            record("a", Some(429), Some(812)).to_json_line(),
            r#"{"time":"2023-11-14T22:13:20.123Z","client":"a","method":"GET","path":"/x","status":429,"early_by_ms":812}"#
        );
        assert_eq!(
            record("\"b\"", None, None).to_json_line(),
            r#"{"time":"2023-11-14T22:13:20.123Z","client":"\"b\"","method":"GET","path":"/x","status":null}"#
        );
    }

    #[test]
    fn header_lookup_ignores_case() {
        let r = record("a", Some(200), None);
        assert_eq!(r.header("x-client-KEY"), Some("a"));
        assert_eq!(r.header("Host"), None);
    }

    #[test]
    fn summary_counts() {
        let records = [
            record("a", Some(200), None),
            record("a", Some(429), None),
            record("a", Some(429), Some(900)),
            record("b", None, Some(5)),
        ];
        let summary = Summary::from_records(&records);
        assert_eq!(
            summary.to_json_line(),
            concat!(
                r#"{"requests":4,"rate_limited":2,"early_retries":2,"clients":{"#,
                r#""a":{"requests":3,"rate_limited":2,"early_retries":1},"#,
                r#""b":{"requests":1,"rate_limited":0,"early_retries":1}}}"#
            )
        );
    }
}
