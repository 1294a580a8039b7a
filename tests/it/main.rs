//! One integration test binary: the real `abide` binary against the real lab
//! server on 127.0.0.1, asserting on the lab's recorded timeline.

mod agent;
mod batch;
mod curl;
mod delays;
mod demo;
mod docs;
mod downloads;
mod env;
mod faults;
mod fetch;
mod fleet;
mod lab;
mod mcp;
mod memory;
mod props;
mod scope;
mod secrets;
mod signals;
mod state;
mod terminal;
mod util;
