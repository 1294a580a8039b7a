//! Where abide touches the world: one HTTP attempt (ureq, TLS, decoding),
//! where a body goes (stdout, an atomic file, a capture), and the signals
//! that cancel a run.

pub mod cancel;
pub mod cookies;
pub mod decode;
pub mod http;
pub mod net;
pub mod pool;
pub mod reset;
pub mod sink;
pub mod tls;
