//! abide: an HTTP client that waits when the server says "slow down".
pub mod units;
