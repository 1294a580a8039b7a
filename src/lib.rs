//! abide: an HTTP client that waits when the server says "slow down".
pub mod app;
pub mod cli;
pub mod clock;
pub mod edge;
pub mod exit;
pub mod lab;
pub mod plan;
pub mod redact;
pub mod report;
pub mod rules;
pub mod run;
pub mod state;
pub mod units;
