//! The words for one attempt's result, as the rules read it: a status, or
//! a transport failure and when it happened. The decision table and the
//! scope's health both take an [`Observation`]; the HTTP edge makes one.

/// When a transport failure happened, relative to the server seeing the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Nothing reached the server: refused, DNS, connect timeout, TLS handshake.
    BeforeSend,
    /// The request may have been processed: timeout awaiting the answer,
    /// reset, closed connection, a body that broke off.
    AfterSend,
    /// Retrying cannot help (too many redirects, a bad URL).
    Final,
    /// A 2xx body broke off after part of it was written where it cannot
    /// be taken back (stdout), and the rest cannot be asked for: retrying
    /// would write its start twice.
    Partial,
}

/// What one attempt produced, as far as the decision table cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observation {
    /// An HTTP answer. `should_retry` is the server's own `x-should-retry`
    /// (or `Stripe-Should-Retry`) when present and valid.
    Status {
        status: u16,
        should_retry: Option<bool>,
    },
    Transport(Phase),
}
