//! Everything a person, a script or an agent reads: the outcome line, its
//! words, the `-v` lines and the terminal's progress, the `--agent` object
//! and the `--log` audit trail.

pub mod agent;
pub mod audit;
pub mod escalate;
pub mod narrate;
pub mod outcome;
pub mod progress;
pub mod writeout;
