//! Exit codes: every way a run ends, its code, its NAME and its meaning.
//! A leaf: the rules, the loop, the signals and the docs all name a `Kind`,
//! and none of them needs the wire format to do so.

/// Every way a run can end. The exit code of each lives here and nowhere else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Succeeded,
    InternalError,
    UsageError,
    NonRetryable,
    RetryExhausted,
    BudgetExhausted,
    CircuitOpen,
    SideEffectUnknown,
    InvalidResponse,
    NoProgress,
    /// Neither waiting nor retrying can settle it: a person must decide
    /// (a write whose `--check` said neither yes nor no, a spent task).
    NeedsHuman,
    /// A body broke off after part of it reached stdout.
    Incomplete,
    /// SIGINT.
    Cancelled,
    /// SIGTERM, SIGHUP and SIGQUIT: reported as `CANCELLED` too, each with
    /// the status a shell gives a process its signal ended (128 + signal).
    Terminated,
    HungUp,
    Quit,
}

impl Kind {
    pub const ALL: [Kind; 16] = [
        Kind::Succeeded,
        Kind::InternalError,
        Kind::UsageError,
        Kind::NonRetryable,
        Kind::RetryExhausted,
        Kind::BudgetExhausted,
        Kind::CircuitOpen,
        Kind::SideEffectUnknown,
        Kind::InvalidResponse,
        Kind::NoProgress,
        Kind::NeedsHuman,
        Kind::Incomplete,
        Kind::HungUp,
        Kind::Cancelled,
        Kind::Quit,
        Kind::Terminated,
    ];

    pub fn exit_code(self) -> u8 {
        match self {
            Kind::Succeeded => 0,
            Kind::InternalError => 1,
            Kind::UsageError => 2,
            Kind::NonRetryable => 3,
            Kind::RetryExhausted => 4,
            Kind::BudgetExhausted => 5,
            Kind::CircuitOpen => 6,
            Kind::SideEffectUnknown => 7,
            Kind::InvalidResponse => 8,
            Kind::NoProgress => 9,
            Kind::NeedsHuman => 10,
            Kind::Incomplete => 11,
            Kind::HungUp => 129,
            Kind::Cancelled => 130,
            Kind::Quit => 131,
            Kind::Terminated => 143,
        }
    }

    /// The signal that cancelled the run, by which the process ends too.
    pub fn signal(self) -> Option<i32> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
        match self {
            Kind::HungUp => Some(SIGHUP),
            Kind::Cancelled => Some(SIGINT),
            Kind::Quit => Some(SIGQUIT),
            Kind::Terminated => Some(SIGTERM),
            _ => None,
        }
    }

    /// The cancellation by `signal`, one of those [`Kind::signal`] names.
    pub fn cancelled_by(signal: i32) -> Kind {
        Kind::ALL
            .into_iter()
            .find(|k| k.signal() == Some(signal))
            .unwrap_or(Kind::Cancelled)
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Succeeded => "SUCCEEDED",
            Kind::InternalError => "INTERNAL_ERROR",
            Kind::UsageError => "USAGE_ERROR",
            Kind::NonRetryable => "NON_RETRYABLE",
            Kind::RetryExhausted => "RETRY_EXHAUSTED",
            Kind::BudgetExhausted => "BUDGET_EXHAUSTED",
            Kind::CircuitOpen => "CIRCUIT_OPEN",
            Kind::SideEffectUnknown => "SIDE_EFFECT_UNKNOWN",
            Kind::InvalidResponse => "INVALID_RESPONSE",
            Kind::NoProgress => "NO_PROGRESS",
            Kind::NeedsHuman => "NEEDS_HUMAN",
            Kind::Incomplete => "INCOMPLETE",
            Kind::Cancelled | Kind::Terminated | Kind::HungUp | Kind::Quit => "CANCELLED",
        }
    }

    /// One line per exit code, for `--help`, the man page and the README.
    pub fn meaning(self) -> &'static str {
        match self {
            Kind::Succeeded => "a 2xx answer (or a 3xx without -L)",
            Kind::InternalError => "abide itself failed (e.g. could not write -o FILE)",
            Kind::UsageError => "bad flag, URL or header; nothing was sent",
            Kind::NonRetryable => "a 4xx/5xx, unknown host or refused certificate",
            Kind::RetryExhausted => {
                "still failing when --attempts, or the scope's retry budget, ran out"
            }
            Kind::BudgetExhausted => "the next wait does not fit --budget or --max-wait",
            Kind::CircuitOpen => {
                "a circuit breaker of the scope stays open beyond --budget or --max-wait"
            }
            Kind::SideEffectUnknown => "a write may have been applied; not replayed",
            Kind::InvalidResponse => "a 2xx whose body breaks the --require contract",
            Kind::NoProgress => "the same failing request again; refused unsent",
            Kind::NeedsHuman => {
                "a person must decide: an unsettled --check, or --task-attempts spent"
            }
            Kind::Incomplete => "the body broke off after part of it reached stdout",
            Kind::HungUp => "hung up (SIGHUP); abide then ends by the signal",
            Kind::Cancelled => "interrupted by SIGINT; abide then ends by the signal",
            Kind::Quit => "quit (SIGQUIT); abide then ends by the signal",
            Kind::Terminated => "terminated by SIGTERM; abide then ends by the signal",
        }
    }
}

/// The signal that cancelled a run: its own type, not an exit code. The
/// ending it causes has the exit code ([`Signal::kind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    HangUp,
    Interrupt,
    Quit,
    Terminate,
}

impl Signal {
    /// The signal of this number; an unknown one counts as an interrupt.
    pub fn of(number: i32) -> Signal {
        match Kind::cancelled_by(number) {
            Kind::HungUp => Signal::HangUp,
            Kind::Quit => Signal::Quit,
            Kind::Terminated => Signal::Terminate,
            _ => Signal::Interrupt,
        }
    }

    /// How a run that this signal cancelled ends.
    pub fn kind(self) -> Kind {
        match self {
            Signal::HangUp => Kind::HungUp,
            Signal::Interrupt => Kind::Cancelled,
            Signal::Quit => Kind::Quit,
            Signal::Terminate => Kind::Terminated,
        }
    }
}
