//! A TCP reset is not the end of a body. ureq reads a reset as the close
//! that ends a body without Content-Length, and would pass a truncated body
//! for a whole one; the connector here, the last step of every chain abide
//! builds (the plain one in `http`, the `--cacert` one in `tls`), reports it
//! as an error instead.

use std::io;

use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, NextTimeout, Transport as Wire,
};

/// A connector whose connections report a TCP reset as an error. ureq
/// takes a reset for the end of a body that ends when the connection
/// closes (HTTP/1.0 without Content-Length), and would pass a truncated
/// body for a whole one; only a clean close (FIN) ends such a body.
/// The last step of every connector chain abide builds (see `tls` too).
#[derive(Debug)]
pub struct ResetIsNoEnd;

impl<In: Wire> Connector<In> for ResetIsNoEnd {
    type Out = ResetAware<In>;

    fn connect(
        &self,
        _: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<ResetAware<In>>, ureq::Error> {
        Ok(chained.map(ResetAware))
    }
}

#[derive(Debug)]
pub struct ResetAware<T>(T);

/// A reset, in a form ureq does not read as a close.
#[derive(Debug)]
struct Reset;

impl std::fmt::Display for Reset {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("connection reset")
    }
}

impl std::error::Error for Reset {}

pub(crate) fn is_reset(error: &io::Error) -> bool {
    error.get_ref().is_some_and(|inner| inner.is::<Reset>())
}

impl<T: Wire> Wire for ResetAware<T> {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.0.buffers()
    }
    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.0.transmit_output(amount, timeout)
    }
    fn maybe_await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.0.maybe_await_input(timeout).map_err(reset_is_no_end)
    }
    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.0.await_input(timeout).map_err(reset_is_no_end)
    }
    fn is_open(&mut self) -> bool {
        self.0.is_open()
    }
    fn is_tls(&self) -> bool {
        self.0.is_tls()
    }
}

fn reset_is_no_end(error: ureq::Error) -> ureq::Error {
    match error {
        ureq::Error::Io(e) if e.kind() == io::ErrorKind::ConnectionReset => {
            ureq::Error::Io(io::Error::other(Reset))
        }
        other => other,
    }
}
