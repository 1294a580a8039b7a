//! `--check URL`: when a write's effect is unknown, ask the resource before
//! deciding. A GET (the request's headers and credentials, to the same
//! origin) whose answer `decision::settle` reads: the write happened (its
//! body becomes the run's), did not (it may go again), or nobody can tell.

use std::cell::RefCell;

use super::attempt::{Breach, Held};
use super::{Event, Loop, Run, World};
use crate::edge::http::Transport;
use crate::edge::sink::{DeliverError, Start};
use crate::rules::decision::{self, Settlement, StopWhy, Verdict};
use crate::run::record::Checked;

/// The check a run may send: its transport (a GET of the check URL) and
/// whether the request is a write at all (a read is never checked).
pub struct Check<'a> {
    pub transport: &'a RefCell<dyn Transport + 'a>,
    /// The URL as sent, `{idempotency_key}` replaced.
    pub url: &'a str,
    pub write: bool,
}

impl Loop<'_> {
    /// Sends the check and settles the write: the verdict to go on with
    /// (a write that did not happen is retryable), or how the run ends.
    pub(super) fn settle(
        &self,
        check: &Check,
        run: &mut Run,
        w: &mut World,
    ) -> Result<Verdict, StopWhy> {
        let clock = w.clock;
        let url = self.redactor.text(&crate::redact::url(check.url));
        (w.on_event)(Event::Checking { url: &url });
        let left = self.policy.budget.saturating_sub(clock.now() - run.start);
        let mut checked = Checked {
            url,
            status: None,
            error: None,
        };
        let sent = if left.is_zero() {
            Err("no time was left in the budget to send it".to_string())
        } else {
            let limits = self.limits(left);
            let mut transport = check.transport.borrow_mut();
            transport
                .send(limits, None)
                .map_err(|f| self.redactor.text(&f.message))
        };
        let settlement = match sent {
            Err(error) => {
                checked.error = Some(error);
                Settlement::Unclear
            }
            Ok(mut reply) => {
                checked.status = Some(reply.status);
                let body = if (200..300).contains(&reply.status) {
                    match self.judged_body(&mut reply) {
                        Ok(Ok(held)) => Some(held),
                        Ok(Err(Breach { detail, .. })) => {
                            checked.error = Some(detail);
                            None
                        }
                        Err(e) => {
                            checked.error = Some(format!("its body broke off: {e}"));
                            None
                        }
                    }
                } else {
                    None
                };
                let settlement = decision::settle(Some(reply.status), body.is_some());
                if let (Settlement::Happened, Some(Held { body, pointed })) = (settlement, body) {
                    let masked: Vec<(String, String)> = reply
                        .headers
                        .iter()
                        .map(|(n, v)| (n.clone(), self.redactor.text(v)))
                        .collect();
                    let head = crate::edge::http::head(reply.version, reply.status, &masked);
                    w.sink.head(&head);
                    if let Err(DeliverError::Write(e) | DeliverError::Read(e)) =
                        w.sink.deliver(&mut body.as_slice(), Start::Over)
                    {
                        checked.error = Some(format!("its body could not be written: {e}"));
                        run.check = Some(checked);
                        return Err(StopWhy::CheckUnclear);
                    }
                    run.headers = masked;
                    run.head = head;
                    run.operation_id = pointed.or(run.operation_id.take());
                }
                settlement
            }
        };
        (w.on_event)(Event::Checked {
            status: checked.status,
            settlement,
        });
        run.check = Some(checked);
        decision::after_check(settlement)
    }
}
