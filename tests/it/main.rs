//! One integration test binary: the real `abide` binary against the real lab
//! server on 127.0.0.1, asserting on the lab's recorded timeline.

mod demo;
mod faults;
mod fetch;
mod lab;
mod memory;
mod props;
mod scope;
mod secrets;
mod signals;
mod util;
