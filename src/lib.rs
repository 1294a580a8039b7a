//! abide: an HTTP client that waits when the server says "slow down".
pub mod app;
pub mod cancel;
pub mod cli;
pub mod decision;
pub mod delay;
pub mod demo;
pub mod http;
pub mod lab;
pub mod outcome;
pub mod plan;
pub mod redact;
pub mod retry;
pub mod sink;
pub mod target;
pub mod units;
