//! The flags of `abide state` and `abide state clear`; what they do is in
//! `app::state`.

use std::path::PathBuf;

/// See what the scopes remember (`abide state`), or forget it (`abide state clear`).
#[derive(clap::Args, Debug)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Examples:\n  abide state\n  abide state --json --state redis://127.0.0.1:6379/ | jq .gate\n  \
        abide state clear https://api.example.com:443\n  abide state clear --all --tasks --yes"
)]
pub struct StateArgs {
    #[command(subcommand)]
    pub action: Option<StateAction>,

    /// One JSON object per scope, one a line.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(clap::Subcommand, Debug)]
pub enum StateAction {
    /// Forget what holds a scope's runs back: its gate, breakers, counts of
    /// repeated failures and retry budget (its name and --rate pacing still
    /// ahead stay; so do its task keys, unless --tasks).
    Clear(ClearArgs),
}

#[derive(clap::Args, Debug)]
pub struct ClearArgs {
    /// The scope, by its name (as --scope gives it, or the origin,
    /// scheme://host:port) or by the hash `abide state` shows.
    #[arg(
        value_name = "SCOPE",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    pub scope: Option<String>,

    /// Every scope the store knows.
    #[arg(long)]
    pub all: bool,

    /// Also forget the scope's --task idempotency keys: a rerun of a task
    /// then sends a new key, and the server may apply its write twice. Asks
    /// first at a terminal; without one, it needs --yes.
    #[arg(long)]
    pub tasks: bool,

    /// Do not ask before forgetting task keys.
    #[arg(short = 'y', long)]
    pub yes: bool,

    #[command(flatten)]
    pub store: StoreArgs,
}

/// Where the state is, as a run finds it.
#[derive(clap::Args, Debug, Clone)]
pub struct StoreArgs {
    /// The state directory [default: $XDG_STATE_HOME/abide, else
    /// ~/.local/state/abide].
    #[arg(long = "state-dir", value_name = "DIR", env = "ABIDE_STATE_DIR")]
    pub state_dir: Option<PathBuf>,

    /// The Redis store instead, as a run's --state:
    /// redis://[USER:PASSWORD@]HOST:PORT[/DB], or rediss://.
    #[arg(long, value_name = "URL", env = "ABIDE_STATE")]
    pub state: Option<String>,
}
