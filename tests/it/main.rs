//! One integration test binary: the real `abide` binary against the real lab
//! server on 127.0.0.1, asserting on the lab's recorded timeline.

// First, for its `on_both_backends!`.
#[macro_use]
mod util;

mod agent;
mod batch;
mod curl;
mod defaults;
mod delays;
mod demo;
mod docs;
mod downloads;
mod env;
mod faults;
mod fetch;
mod fleet;
mod guard;
mod inspect;
mod lab;
mod mcp;
mod memory;
mod policy;
mod props;
mod scope;
mod secrets;
mod signals;
mod state;
mod terminal;
mod writes;
