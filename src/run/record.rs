//! What a run found out: its attempts, how it ended, and the facts the
//! outcome line, the agent object and the audit log are built from. How a
//! run ends is one type, [`Ending`]; its exit code's [`Kind`] is derived.

use std::time::{Duration, SystemTime};

use crate::exit::{Kind, Signal};
use crate::rules::decision::StopWhy;
use crate::rules::delay::ServerDelay;
use crate::rules::scope;

/// One attempt, as the run saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    pub status: Option<u16>,
    pub error: Option<String>,
    pub server_delay: Option<ServerDelay>,
    /// The wait that followed this attempt, if any.
    pub wait: Option<Duration>,
    /// Time from the start of the run to the end of this attempt.
    pub ended_at: Duration,
    /// The answer's headers (values masked), for `--escalate`'s timeline.
    pub headers: Vec<(String, String)>,
}

/// The `--check` request that settled (or failed to settle) a write whose
/// effect was unknown.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// The URL asked, as sent (masked where it is shown).
    pub url: String,
    pub status: Option<u16>,
    pub error: Option<String>,
}

/// Everything a run found out, from which the outcome line is built.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub ending: Ending,
    pub attempts: Vec<Attempt>,
    pub elapsed: Duration,
    pub waited: Duration,
    /// The wall-clock time before which the caller should not call again.
    pub next_allowed_at: Option<SystemTime>,
    /// The transport error, or the start of the final error body.
    pub error: Option<String>,
    /// Server delay values that were present but unusable.
    pub ignored_delays: Vec<String>,
    /// The last answer's headers (names lower-case).
    pub headers: Vec<(String, String)>,
    /// The last answer's head, as `-i` and `-D` write it (empty if none came).
    pub head: String,
    /// From sending the last attempt to its answer's head (zero without one).
    pub head_after: Duration,
    /// The kept start of the last answer's body when it was not delivered.
    pub failed_body: Vec<u8>,
    pub failed_body_truncated: bool,
    /// Waits the scope imposed before attempts (one entry for waits of one
    /// cause in a row), told in the reason.
    pub scope_waits: Vec<(Duration, scope::Wait)>,
    /// Why the shared state was unavailable, when it was (already masked):
    /// the run went on without it, or stopped if it was required.
    pub state_outage: Option<String>,
    /// Bytes of the body not asked for again: kept from attempts whose
    /// body broke off (or from `-C -`) and continued with a range request.
    pub resumed: u64,
    /// The last `--check` of the run, if one was sent.
    pub check: Option<Checked>,
    /// The provider's id for what the write created: a 201's `Location`,
    /// or the `--id-pointer` value of the body.
    pub operation_id: Option<String>,
}

impl Record {
    /// How the run ends, for its exit code: derived from the ending.
    pub fn kind(&self) -> Kind {
        self.ending.kind()
    }

    /// A run that ended before sending anything.
    pub fn unsent(ending: Ending) -> Record {
        Record {
            ending,
            attempts: Vec::new(),
            elapsed: Duration::ZERO,
            waited: Duration::ZERO,
            next_allowed_at: None,
            error: None,
            ignored_delays: Vec::new(),
            headers: Vec::new(),
            head: String::new(),
            head_after: Duration::ZERO,
            failed_body: Vec::new(),
            failed_body_truncated: false,
            scope_waits: Vec::new(),
            state_outage: None,
            resumed: 0,
            check: None,
            operation_id: None,
        }
    }
}

/// How a run ends: its one type. The exit code's [`Kind`] is derived from
/// it, never stored beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// The decision table stopped the run.
    Decided(StopWhy),
    /// A signal cut the run short.
    Cancelled(Signal),
    /// The same request failed this many times in a row: refused unsent.
    NoProgress { times: u32 },
    /// `--task` (as given) was kept for another request: refused unsent.
    TaskDiffers { task: String },
    /// abide could not finish its own part (say, writing the output file).
    Internal(String),
}

impl Ending {
    pub fn kind(&self) -> Kind {
        match self {
            Ending::Decided(why) => why.kind(),
            Ending::Cancelled(signal) => signal.kind(),
            Ending::NoProgress { .. } => Kind::NoProgress,
            Ending::TaskDiffers { .. } => Kind::UsageError,
            Ending::Internal(_) => Kind::InternalError,
        }
    }
}
