//! The pure rules: what an answer means, how long to wait, what a scope
//! allows, what `--require` demands, whether a body may be resumed. No I/O,
//! no clock reads, no threads: time and randomness are arguments, and every
//! rule is a table row or a property test.

pub mod attempt;
pub mod canonical;
pub mod contract;
pub mod decision;
pub mod delay;
pub mod pace;
pub mod ratelimit;
pub mod resume;
pub mod retry_budget;
pub mod scope;
