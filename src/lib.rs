//! abide: an HTTP client that waits when the server says "slow down".
//!
//! The house, one layer per folder; arrows point down only:
//!
//! - [`exit`], [`clock`], `units`, `redact`: leaves. How a run ends as
//!   an exit code (and the signal that cancelled it); time and its "never
//!   early" rounding; units as people type them; keeping credentials out.
//! - [`rules`]: the pure rules (decision table, delays, rate-limit fields,
//!   scope rules, `--require`, resuming). No I/O, no clock reads, no threads.
//! - `run`: the loop (admit, attempt, record, decide, wait), over an
//!   injected clock, sleeper and transport; it writes no words.
//!   `run::admit` asks the scope, `run::attempt` makes one attempt,
//!   `run::record` holds what a run found out and `run::record::Ending`,
//!   the one type for its end.
//! - `edge`: where abide touches the world (HTTP, TLS, sinks, signals).
//! - [`state`]: the shared scope state over a `Store` (files or Redis).
//! - `report`: what people, scripts and agents read (outcome line, `-v`,
//!   progress, agent object, audit log).
//! - [`batch`]: `--batch`'s pieces without network or scope (lines,
//!   journal, `-o TEMPLATE`, summary).
//! - [`cli`], `plan`: from flags to a plan; [`app`]: the wiring, with
//!   `app::session` (one request's steps, for any front end), `app::batch`
//!   (the worker pool that drives them for a batch), `abide mcp` and
//!   `abide demo`; [`lab`]: the test server.
pub mod app;
pub mod batch;
pub mod cli;
pub mod clock;
pub(crate) mod edge;
pub mod exit;
pub mod lab;
pub(crate) mod plan;
pub(crate) mod redact;
pub(crate) mod report;
pub mod rules;
pub(crate) mod run;
pub mod state;
pub(crate) mod units;
