//! One integration test binary: the real `abide` binary against the real lab
//! server on 127.0.0.1, asserting on the lab's recorded timeline.

mod agent;
mod curl;
mod demo;
mod docs;
mod env;
mod faults;
mod fetch;
mod fleet;
mod lab;
mod memory;
mod props;
mod scope;
mod secrets;
mod signals;
mod terminal;
mod util;
