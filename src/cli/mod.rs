//! Every flag, documented in one place: the doc comment of each field is its
//! help text. Conventions: an explicit short letter where curl has one, an
//! UPPERCASE value name, values parsed by `value_parser` functions so that a
//! bad value is a usage error naming the flag.

pub mod config;
pub mod docs;
pub mod net;
pub mod state;
pub mod values;

use std::path::PathBuf;
use std::time::Duration;

use clap::builder::FalseyValueParser;
use clap::error::ErrorKind;
use clap::parser::ValueSource;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::exit::Kind;
use crate::units::parse_duration;
pub use values::{JsonPointer, KeyChoice, OutcomeTo, StateTarget};

const REQUEST: &str = "Request";
const POLICY: &str = "Retry policy";
const SCOPE: &str = "Scope (shared by every process on this machine)";
const OUTPUT: &str = "Output";
const AGENT: &str = "Agents and response contracts";
const BATCH: &str = "Batch (many requests in one process)";

#[derive(Parser, Debug)]
#[command(
    name = "abide",
    version,
    about = "An HTTP client that waits when the server says \"slow down\".",
    long_about = "An HTTP client that waits when the server says \"slow down\".\n\n\
        abide sends one HTTP request, classifies every answer (success, retryable, \
        not retryable, unsafe to replay), honours the server's Retry-After with a floor \
        and upward-only jitter, stops on budgets, and prints one JSON outcome line \
        (to stderr by default) with an exit code per outcome.",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    // As curl: `-s -s` or `-f -f` (a script's flags and its config's) are
    // one flag, and a value given twice is the last one.
    args_override_self = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// The URL to request; without a scheme, http:// is assumed (as curl does).
    #[arg(
        value_name = "URL",
        required_unless_present_any = ["batch", "generate", "url_flag"],
        conflicts_with = "batch"
    )]
    pub url: Option<String>,

    /// The URL, as a flag (curl's --url, as a config file writes it).
    #[arg(long = "url", value_name = "URL", conflicts_with_all = ["url", "batch"])]
    pub url_flag: Option<String>,

    /// curl's -K: read more flags from FILE, one a line, as curl writes them
    /// (`url = "…"`, `header = "Name: value"`, `--silent`, `-x URL`; `#`
    /// starts a comment); they take the place of the -K. ~/.curlrc is
    /// never read unasked.
    // Never set once parsed: `config::expand` replaces every -K first.
    #[arg(short = 'K', long = "config", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Print the man page or a shell completion script (see scripts/generate-docs).
    #[arg(long, value_name = "KIND", hide = true, conflicts_with = "url")]
    pub generate: Option<Generate>,

    #[command(flatten)]
    pub request: RequestArgs,

    #[command(flatten)]
    pub policy: PolicyArgs,

    #[command(flatten)]
    pub scope: ScopeArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub agent: AgentArgs,

    #[command(flatten)]
    pub net: net::NetArgs,

    #[command(flatten)]
    pub batch: BatchArgs,
}

impl Cli {
    /// The URL, given as the argument or with --url.
    pub fn url(&self) -> &str {
        self.url
            .as_deref()
            .or(self.url_flag.as_deref())
            .unwrap_or_default()
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a local rate-limited HTTP server that catches clients which retry too early.
    Lab(crate::lab::LabArgs),
    /// Show in ten seconds what abide does, against a lab started in-process.
    Demo,
    /// Serve abide as a Model Context Protocol tool (http_request) on stdio.
    Mcp(McpArgs),
    /// List what the scope state remembers (why runs are held), or clear it.
    State(state::StateArgs),
}

#[derive(Args, Debug, Default)]
#[command(next_help_heading = REQUEST)]
pub struct RequestArgs {
    /// HTTP method (default: GET, or POST when a body is given).
    #[arg(short = 'X', long = "request", value_name = "METHOD", value_parser = parse_method)]
    pub method: Option<String>,

    /// Add a header, "Name: value" (repeatable; several of one name are all
    /// sent). "Name:" removes a default header
    /// (User-Agent, Accept, Content-Type). Control characters are refused.
    /// (Checked by `plan`, not by clap: clap would quote a refused value,
    /// and a malformed header is often a credential.)
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,

    /// Body as form data; @FILE reads a file, @- reads stdin (read once, replayed on
    /// every attempt), without their carriage returns and newlines, as curl
    /// reads them. Sets POST and Content-Type: application/x-www-form-urlencoded.
    /// Every --data, --data-* value is joined to the others with &, in order.
    #[arg(short = 'd', long = "data", value_name = "DATA")]
    pub data: Vec<String>,

    /// The same as --data.
    #[arg(long = "data-ascii", value_name = "DATA")]
    pub data_ascii: Vec<String>,

    /// As --data, but a leading @ is just a character.
    #[arg(long = "data-raw", value_name = "DATA")]
    pub data_raw: Vec<String>,

    /// Body as raw bytes; @FILE and @- as for --data, kept byte for byte.
    #[arg(long = "data-binary", value_name = "DATA")]
    pub data_binary: Vec<String>,

    /// As --data, URL-encoded as curl does: CONTENT, =CONTENT (both encoded
    /// whole), NAME=CONTENT (CONTENT encoded), @FILE, NAME@FILE (the file's
    /// bytes encoded; @- is stdin).
    #[arg(long = "data-urlencode", value_name = "DATA")]
    pub data_urlencode: Vec<String>,

    /// The --data values go into the URL's query (after ? or &) and the
    /// request is a GET (a HEAD with -I), as curl's -G.
    #[arg(short = 'G', long = "get", conflicts_with_all = ["json", "form", "upload_file"])]
    pub get: bool,

    /// A multipart/form-data part, as curl's -F (repeatable, in order):
    /// NAME=VALUE, NAME=@FILE (a file upload, its name as filename, a type
    /// from its extension as curl guesses it), NAME=<FILE (the file's text
    /// as the value), each with ;type=TYPE and ;filename=NAME; a value may
    /// be quoted ("a;b"). Sets POST.
    #[arg(short = 'F', long = "form", value_name = "NAME=CONTENT",
          conflicts_with_all = ["data", "data_ascii", "data_raw", "data_binary", "data_urlencode", "json"])]
    pub form: Vec<String>,

    /// As -F NAME=VALUE, the VALUE taken literally: a leading @ or <, and
    /// ;type=, mean nothing (curl's --form-string).
    #[arg(long = "form-string", value_name = "NAME=VALUE",
          conflicts_with_all = ["data", "data_ascii", "data_raw", "data_binary", "data_urlencode", "json", "get"])]
    pub form_string: Vec<String>,

    /// Every -F and --form-string value in the order given (set by
    /// `parse_from`); `true` for a --form-string.
    #[arg(skip)]
    pub form_parts: Vec<(bool, String)>,

    /// PUT the bytes of FILE ("-" is stdin, read once), as curl's -T; a URL
    /// without a path, or ending in /, gets the file's name appended.
    #[arg(short = 'T', long = "upload-file", value_name = "FILE",
          conflicts_with_all = ["data", "data_ascii", "data_raw", "data_binary", "data_urlencode", "json", "form", "form_string"])]
    pub upload_file: Option<PathBuf>,

    /// Every --data, --data-* value in the order given (set by `parse_from`).
    #[arg(skip)]
    pub data_parts: Vec<Data>,

    /// JSON body (@FILE and @- allowed, kept byte for byte; repeated values
    /// are joined as they are, as curl joins them); sets POST, Content-Type
    /// and Accept to application/json.
    #[arg(long = "json", value_name = "DATA",
          conflicts_with_all = ["data", "data_ascii", "data_raw", "data_binary", "data_urlencode"])]
    pub json: Vec<String>,

    /// Follow redirects (at most 50, see --max-redirs), as curl does: 307 and 308 re-send the method
    /// and body; 303, and 301 or 302 after a POST, become a GET without a body;
    /// -u, Authorization and Cookie go on to the same origin only (but with
    /// --location-trusted); a Retry-After
    /// on a redirect is waited first. Without -L a 3xx answer is final.
    #[arg(short = 'L', long = "location")]
    pub location: bool,

    /// Basic authentication, USER:PASSWORD.
    #[arg(short = 'u', long = "user", value_name = "USER:PASSWORD")]
    pub user: Option<String>,

    /// User-Agent header [default: abide/VERSION].
    #[arg(short = 'A', long = "user-agent", value_name = "NAME")]
    pub user_agent: Option<String>,

    /// Referer header, as curl's -e.
    #[arg(short = 'e', long = "referer", value_name = "URL", value_parser = parse_header_value)]
    pub referer: Option<String>,

    /// Authorization: Bearer TOKEN, masked like -u in every output.
    /// (Checked by `plan`, not by clap, which would quote a refused token.)
    #[arg(long = "oauth2-bearer", value_name = "TOKEN", conflicts_with = "user")]
    pub oauth2_bearer: Option<String>,

    /// Accepted, as curl's --http1.1: abide speaks HTTP/1.1.
    #[arg(long = "http1.1")]
    pub http1_1: bool,

    /// Refused with a word on why: abide speaks HTTP/1.1 only, which every
    /// HTTP/2 or HTTP/3 server also speaks.
    #[arg(long = "http2", hide = true)]
    pub http2: bool,

    /// See --http2.
    #[arg(long = "http3", hide = true)]
    pub http3: bool,

    /// Proxy URL (http://, https://, socks5://); the usual proxy environment
    /// variables are honoured without it.
    #[arg(short = 'x', long = "proxy", value_name = "URL")]
    pub proxy: Option<String>,

    /// Do not verify the server's TLS certificate.
    #[arg(short = 'k', long = "insecure")]
    pub insecure: bool,

    /// Trust the CA certificates in this PEM file instead of the built-in roots;
    /// a server whose certificate is one of them exactly (a self-signed one)
    /// is trusted too, as curl does.
    #[arg(long = "cacert", value_name = "FILE")]
    pub cacert: Option<PathBuf>,

    /// Trust the operating system's certificate store instead of the built-in roots.
    #[arg(long = "ca-native", conflicts_with = "cacert")]
    pub ca_native: bool,

    /// Longest time to connect, per attempt.
    #[arg(long = "connect-timeout", value_name = "DURATION", env = "ABIDE_CONNECT_TIMEOUT",
          default_value = "10s", value_parser = parse_duration)]
    pub connect_timeout: Duration,

    /// Hard limit on one attempt, body included, as curl's -m [default: none: a
    /// stall fails an attempt, and a body that keeps flowing is never cut].
    #[arg(short = 'm', long = "max-time", value_name = "DURATION", env = "ABIDE_MAX_TIME",
          value_parser = parse_duration)]
    pub max_time: Option<Duration>,

    /// Longest time without a single byte from the server, while waiting for
    /// the answer's head or during its body (or without the server taking a
    /// byte of the request): such an attempt fails, and is retried where safe.
    #[arg(long, value_name = "DURATION", env = "ABIDE_STALL", default_value = "30s",
          value_parser = parse_duration)]
    pub stall: Duration,

    /// Ask for a compressed answer (deflate, gzip, br, zstd) and decode it. Without
    /// it no encoding is asked for, and a body is written as it came.
    #[arg(long)]
    pub compressed: bool,

    /// With --compressed: stop a body (INVALID_RESPONSE) that decodes to more
    /// than RATIO times its encoded size, past its first MiB: a compression bomb.
    #[arg(long = "max-ratio", value_name = "RATIO", env = "ABIDE_MAX_RATIO", default_value = "100",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_ratio: u64,
}

#[derive(Args, Debug, Default)]
#[command(next_help_heading = POLICY)]
pub struct PolicyArgs {
    /// Total requests at most; 1 means no retry. The default --budget
    /// stretches to hold them all.
    #[arg(long, value_name = "N", env = "ABIDE_ATTEMPTS", default_value = "4",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub attempts: u32,

    /// curl's spelling: N retries, that is N+1 attempts (wins over ABIDE_ATTEMPTS).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..1000))]
    pub retry: Option<u32>,

    /// Accepted, as curl's: abide retries a refused connection anyway (a
    /// service that is starting), within --attempts and --budget.
    #[arg(long = "retry-connrefused")]
    pub retry_connrefused: bool,

    /// Wall-clock budget for the whole run, waits and requests together. No wait
    /// that would end beyond it is started, nor any attempt after it. Given on the command line
    /// it is a hard limit: the attempt in flight is cut at it. The default (or
    /// ABIDE_BUDGET) bounds the retrying and the wait for an answer, but never
    /// cuts a 2xx body that keeps flowing: a long download ends when it is
    /// done, or when it stalls (--stall) [default: 60s, or longer when the
    /// --attempts asked need it: each retry's longest wait plus a
    /// --connect-timeout per attempt].
    #[arg(long, value_name = "DURATION", env = "ABIDE_BUDGET",
          alias = "retry-max-time", value_parser = parse_duration)]
    pub budget: Option<Duration>,

    /// Whether --budget was given on the command line (set by `parse_from`).
    #[arg(skip)]
    pub budget_given: bool,

    /// Longest single wait accepted; a longer server delay ends the run at once
    /// with BUDGET_EXHAUSTED [default: no limit but the budget].
    #[arg(long = "max-wait", value_name = "DURATION", env = "ABIDE_MAX_WAIT", value_parser = parse_duration)]
    pub max_wait: Option<Duration>,

    /// Retryable statuses, comma-separated.
    #[arg(long = "retry-on", value_name = "CODES", env = "ABIDE_RETRY_ON",
          default_value = "408,429,500,502,503,504", value_parser = parse_codes)]
    pub retry_on: StatusList,

    /// Least wait after a server-given delay: Retry-After 0, negative values and
    /// past dates wait this long, never zero.
    #[arg(long, value_name = "DURATION", env = "ABIDE_FLOOR", default_value = "1s", value_parser = parse_duration)]
    pub floor: Duration,

    /// Upward-only jitter on server-given delays: up to FRACTION of the wait,
    /// at most 2 s; 0 turns it off.
    #[arg(long, value_name = "FRACTION", env = "ABIDE_JITTER", default_value = "0.1", value_parser = parse_fraction)]
    pub jitter: f64,

    /// First backoff step when the server gave no delay (full jitter, doubling).
    #[arg(long, value_name = "DURATION", env = "ABIDE_BACKOFF", default_value = "500ms", value_parser = parse_duration)]
    pub backoff: Duration,

    /// Largest backoff step.
    #[arg(long = "backoff-max", value_name = "DURATION", env = "ABIDE_BACKOFF_MAX", default_value = "8s", value_parser = parse_duration)]
    pub backoff_max: Duration,

    /// Send this Idempotency-Key (or a random UUID for "auto") on every attempt,
    /// and treat the request as safe to repeat.
    #[arg(long = "idempotency-key", value_name = "KEY|auto", value_parser = KeyChoice::parse)]
    pub idempotency_key: Option<KeyChoice>,

    /// Treat the request as safe to repeat without sending a key (GraphQL or
    /// search APIs that read with POST).
    #[arg(long)]
    pub idempotent: bool,
}

#[derive(Args, Debug, Default)]
#[command(next_help_heading = SCOPE)]
pub struct ScopeArgs {
    /// What a provider's limit applies to: runs of one scope share one
    /// Retry-After gate, --rate, --max-concurrent and circuit breaker
    /// [default: the URL's origin, scheme://host:port].
    #[arg(long, value_name = "NAME", env = "ABIDE_SCOPE")]
    pub scope: Option<String>,

    /// Where scope state is kept, one small private file per scope; refused
    /// if another user owns it or others may write to it
    /// [default: $XDG_STATE_HOME/abide, else ~/.local/state/abide].
    #[arg(long = "state-dir", value_name = "DIR", env = "ABIDE_STATE_DIR")]
    pub state_dir: Option<PathBuf>,

    /// Keep and read no shared state at all.
    #[arg(long = "no-state", env = "ABIDE_NO_STATE", conflicts_with = "state",
          value_parser = FalseyValueParser::new())]
    pub no_state: bool,

    /// Share scope state through Redis instead of local files, so that many
    /// machines share one gate, pace, limit and breaker:
    /// redis://[USER:PASSWORD@]HOST:PORT[/DB], or rediss:// for TLS.
    // Checked by a parser that never quotes the URL: it may hold a password.
    #[arg(long, value_name = "URL", env = "ABIDE_STATE", value_parser = values::StateParser)]
    pub state: Option<StateTarget>,

    /// Fail (INTERNAL_ERROR, exit 1) instead of going on without shared state
    /// when the state store cannot be used.
    #[arg(long = "state-required", env = "ABIDE_STATE_REQUIRED", value_parser = FalseyValueParser::new())]
    pub state_required: bool,

    /// Client-side pacing shared by every process of the scope, N/UNIT
    /// (5/s, 100/m, 1000/h): no burst beyond it even when many start at once.
    /// "auto" learns the fastest pace the server accepts from its answers
    /// (start at 5/s, speed up while they succeed, cut by 0.7 on a 429 or a
    /// used-up RateLimit quota, spend a quota the server states evenly), and
    /// shares it with every process of the scope. Kept in the scope state:
    /// refused with --no-state.
    #[arg(long, value_name = "N/UNIT|auto", env = "ABIDE_RATE", value_parser = parse_rate_flag)]
    pub rate: Option<RateFlag>,

    /// At most N requests of the scope in flight across all processes;
    /// waiting for a slot counts against the budget. Refused with --no-state.
    #[arg(long = "max-concurrent", value_name = "N", env = "ABIDE_MAX_CONCURRENT",
          value_parser = clap::value_parser!(u32).range(1..10_000))]
    pub max_concurrent: Option<u32>,

    /// Consecutive failed attempts that open a circuit breaker; 0 turns it
    /// off. Retryable 5xx (not 429) and failures after sending count for their
    /// endpoint (method and path), failures to reach the host for the whole
    /// scope. A run waits for an open breaker's half-open moment when it fits
    /// --budget and --max-wait, and ends with CIRCUIT_OPEN when it does not.
    #[arg(long, value_name = "N", env = "ABIDE_BREAKER", default_value = "5")]
    pub breaker: u32,

    /// The longest an open breaker waits between two probes when the server
    /// gave no delay: it opens for the first --backoff step and doubles after
    /// each failed probe up to this; a server's delay sets the moment instead
    /// [default: the run's own longest wait, --backoff-max (or --retry-delay,
    /// at most --max-wait)].
    #[arg(long = "breaker-cooldown", value_name = "DURATION", env = "ABIDE_BREAKER_COOLDOWN",
          value_parser = parse_duration)]
    pub breaker_cooldown: Option<Duration>,

    /// The scope's retry budget, shared by all its processes (and machines,
    /// with a Redis --state): first attempts always go; a retry spends one
    /// of 5 held in the scope, which each successful first attempt refills
    /// by PERCENT of a retry and time by one every 10 s. With none left, a
    /// run alone keeps all its attempts; one that would retry while another
    /// run still going spent from it in the last 10 s ends at once, RETRY_EXHAUSTED,
    /// with next_allowed_at when one is back. 0 turns it off.
    #[arg(long = "retry-budget", value_name = "PERCENT", env = "ABIDE_RETRY_BUDGET",
          default_value = "20%", value_parser = parse_retry_budget)]
    pub retry_budget: RetryBudget,

    /// At most N runs of the scope wait on its gate at once, across all
    /// processes; another run that would wait ends at once with
    /// BUDGET_EXHAUSTED and next_allowed_at (the scope's queue is full).
    /// Refused with --no-state.
    #[arg(long = "max-delayed", value_name = "N", env = "ABIDE_MAX_DELAYED",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_delayed: Option<u32>,

    /// Limits per scope (TOML) that flags may tighten but never loosen: a
    /// flag that asks for more is lowered to it, saying so in the outcome's
    /// reason [default: $XDG_CONFIG_HOME/abide/policy.toml (else
    /// ~/.config/abide/policy.toml) when it exists].
    #[arg(long, value_name = "FILE", env = "ABIDE_POLICY")]
    pub policy: Option<PathBuf>,

    /// The settings the policy governs that were given, on the command line
    /// or in the environment (set by `parse_from`): only those are said to
    /// be overruled.
    #[arg(skip)]
    pub given: Vec<values::Knob>,
}

/// `--retry-budget`: `None` is off.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetryBudget(pub Option<crate::rules::retry_budget::BudgetPolicy>);

fn parse_retry_budget(text: &str) -> Result<RetryBudget, String> {
    crate::rules::retry_budget::parse_retry_budget(text).map(RetryBudget)
}

#[derive(Args, Debug, Default)]
#[command(next_help_heading = OUTPUT)]
pub struct OutputArgs {
    /// Write the body to FILE (via a temporary file renamed on success, so a
    /// failed run leaves any existing FILE untouched); "-" is stdout. A GET
    /// whose body breaks off is resumed where it broke off when the server
    /// allows it (Accept-Ranges: bytes, and a strong ETag or Last-Modified).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Write the body to a file named as the URL's last path segment (query
    /// left out), in the current directory or --output-dir, as curl's -O;
    /// written as -o writes. --remote-name-all is the same, abide taking one URL.
    #[arg(
        short = 'O',
        long = "remote-name",
        visible_alias = "remote-name-all",
        conflicts_with = "output"
    )]
    pub remote_name: bool,

    /// With -O: name the file as the final answer's Content-Disposition
    /// filename says, as curl's -J: only its last path component (never a
    /// directory, nor a name with control characters), in the same
    /// directory; without one, the URL's name. An
    /// existing file of that name is never replaced (the run fails and
    /// leaves it) unless --clobber is given.
    #[arg(short = 'J', long = "remote-header-name", requires = "remote_name")]
    pub remote_header_name: bool,

    /// The directory -o FILE and -O write into, as curl's --output-dir.
    #[arg(long = "output-dir", value_name = "DIR")]
    pub output_dir: Option<PathBuf>,

    /// Create the directories -o FILE (with --output-dir) names, as curl's
    /// --create-dirs.
    #[arg(long = "create-dirs")]
    pub create_dirs: bool,

    /// Let -J replace an existing file.
    #[arg(long, overrides_with = "no_clobber")]
    pub clobber: bool,

    /// Never replace an existing file with -o, -O or -J: write FILE.1, FILE.2
    /// … up to FILE.99 instead, as curl's --no-clobber.
    #[arg(long = "no-clobber", overrides_with = "clobber")]
    pub no_clobber: bool,

    /// As curl's --fail-with-body: a final 4xx or 5xx answer's body is
    /// written to stdout or -o FILE (a file only when the body came whole);
    /// the run still fails as without it, and a retried answer's body is
    /// never written.
    #[arg(long = "fail-with-body", conflicts_with = "agent")]
    pub fail_with_body: bool,

    /// Accepted, as curl's --remove-on-error: a failed run never leaves a
    /// partial -o file anyway; where curl removes the file, abide leaves
    /// the one that was there as it was.
    #[arg(long = "remove-on-error")]
    pub remove_on_error: bool,

    /// Only "-": continue an existing -o FILE, asking only for the bytes
    /// after its end (Range), as curl's -C -. The file must be the start of
    /// the current body; a server that sends it whole again replaces it.
    #[arg(short = 'C', long = "continue-at", value_name = "-", requires = "output",
          value_parser = clap::builder::PossibleValuesParser::new(["-"]))]
    pub continue_at: Option<String>,

    /// Write a body to stdout as it comes. Without it, stdout gets nothing of
    /// a body until its first MiB has arrived (or all of it, if smaller), so
    /// that a small body that breaks off is retried with nothing written.
    /// text/event-stream answers always stream.
    #[arg(short = 'N', long = "no-buffer")]
    pub no_buffer: bool,

    /// Write the answer's head (status line, headers, a blank line) to stdout
    /// before its body, as curl's -i: only the final answer's, sent with the
    /// body once it is no longer held (see -N), so a retried attempt's head
    /// is never seen; a final 4xx or 5xx answer writes its head without its
    /// body, as curl -f -i does, and a 2xx whose body never came whole, none.
    /// Header names come in lower case and the reason phrase is the standard
    /// one (ureq keeps neither as sent); with -L, only the last answer's head.
    /// With -o FILE the head goes into FILE before the body (not with -C -);
    /// a failed run leaves FILE as it was, where curl writes a 4xx head in.
    #[arg(short = 'i', long = "include", conflicts_with = "agent")]
    pub include: bool,

    /// Write the final answer's head to FILE ("-" is stdout) once the run
    /// ends, as curl's -D, with the names and phrase of -i; a 4xx or 5xx
    /// answer's head too. -D - without -o FILE is -i. Nothing is written
    /// when no answer came.
    #[arg(
        short = 'D',
        long = "dump-header",
        value_name = "FILE",
        conflicts_with = "agent"
    )]
    pub dump_header: Option<PathBuf>,

    /// Write FORMAT to stdout once the run ends, as curl's -w; @FILE reads it
    /// from a file, its lines joined as curl joins them. Variables:
    /// %{http_code} (or response_code; 000 without an answer), url_effective
    /// (with -L, the last hop's), method, content_type, size_download,
    /// size_upload, time_total, num_retries, num_redirects, num_connects,
    /// remote_ip and remote_port (the first address the name resolved to),
    /// exitcode (abide's), errormsg (empty on success, else the outcome's
    /// reason), json (the outcome line, as --outcome stdout writes it), and
    /// stdout or stderr to switch where the rest goes; %header{NAME} is the
    /// final answer's header; %% is %, and \n, \r, \t, \\ are escapes.
    /// time_total is the whole run's, waits included; time_namelookup,
    /// time_connect, time_appconnect (TLS; 0 without) and time_starttransfer
    /// are the final attempt's, from its start. An unknown variable is a
    /// usage error.
    #[arg(
        short = 'w',
        long = "write-out",
        value_name = "FORMAT",
        conflicts_with = "agent"
    )]
    pub write_out: Option<String>,

    /// Send a HEAD request and write the answer's head to stdout, as curl's
    /// -I (that is -X HEAD -i).
    #[arg(short = 'I', long = "head", conflicts_with_all = ["agent", "method", "json", "form", "upload_file"])]
    pub head: bool,

    /// Where the outcome line goes: stderr, stdout (needs -o), none, or a PATH
    /// appended to (refused before sending if it cannot be written). Usage
    /// errors write their USAGE_ERROR line there too.
    #[arg(
        long,
        value_name = "WHERE",
        env = "ABIDE_OUTCOME",
        default_value = "stderr"
    )]
    pub outcome: OutcomeTo,

    /// No progress display or notes; the outcome line is still written.
    #[arg(short = 's', long, env = "ABIDE_SILENT", value_parser = FalseyValueParser::new())]
    pub silent: bool,

    /// curl's -f, accepted so that curl lines port (-fsS, -fsSL): abide
    /// never writes the body of a 4xx or 5xx answer to stdout or -o anyway
    /// (but with --fail-with-body).
    #[arg(short = 'f', long = "fail")]
    pub fail: bool,

    /// curl's -S, accepted so that -sS ports: abide always says why a run
    /// failed, in the outcome line, -s or not.
    #[arg(short = 'S', long = "show-error")]
    pub show_error: bool,

    /// One line per attempt and per wait on stderr: the answer or error, the
    /// server's delay, the wait chosen and why; and, as curl -v shows them,
    /// each request's head ("> GET /path HTTP/1.1", then abide's headers,
    /// names in lower case as they are sent, credentials masked; not the
    /// framing headers ureq adds) and each
    /// answer's head ("< HTTP/1.1 200 OK", then its headers, as -i writes
    /// them).
    #[arg(short = 'v', long, env = "ABIDE_VERBOSE", value_parser = FalseyValueParser::new())]
    pub verbose: bool,

    /// Append an audit log to FILE: one JSON line per event (request, answer
    /// or error, wait, outcome), credentials redacted; many runs may share it.
    #[arg(long, value_name = "FILE", env = "ABIDE_LOG")]
    pub log: Option<PathBuf>,
}

#[derive(Args, Debug, Default)]
#[command(next_help_heading = AGENT)]
pub struct AgentArgs {
    /// Agent tool mode: stdout gets exactly one JSON object (the outcome plus
    /// body, body_truncated, body_encoding and headers), on success, failure
    /// and usage errors alike; nothing else is written.
    #[arg(long, env = "ABIDE_AGENT", value_parser = FalseyValueParser::new())]
    pub agent: bool,

    /// Largest body kept in the --agent object; sizes like 1KiB, 2MiB, at most
    /// 4MiB, since the object holds it in memory several times over
    /// (--require checks bodies up to 64MiB). A body that is not UTF-8 comes
    /// in base64, with body_encoding "base64".
    #[arg(long = "max-body", value_name = "SIZE", env = "ABIDE_MAX_BODY", default_value = "64KiB",
          value_parser = parse_max_body)]
    pub max_body: u64,

    /// A 2xx answer succeeds only if its body is JSON with a value (null and
    /// [] included) at this RFC 6901 JSON Pointer (repeatable); else
    /// INVALID_RESPONSE, not retried.
    #[arg(long, value_name = "POINTER", value_parser = JsonPointer::parse)]
    pub require: Vec<JsonPointer>,

    /// Refuse, unsent, a request identical to one that ended NON_RETRYABLE or
    /// INVALID_RESPONSE N times in a row within 10 minutes (NO_PROGRESS);
    /// on by default with --agent (N = 3); 0 turns it off.
    #[arg(long = "no-progress", value_name = "N", env = "ABIDE_NO_PROGRESS")]
    pub no_progress: Option<u32>,

    /// With --idempotency-key auto: keep the generated key in the scope state
    /// under this task id, so that every rerun of the task sends the same key.
    /// The run is refused, unsent, if the key cannot be stored first, or if
    /// the scope already keeps 1024 live task keys.
    #[arg(
        long,
        value_name = "ID",
        env = "ABIDE_TASK",
        requires = "idempotency_key"
    )]
    pub task: Option<String>,

    /// How long a task's idempotency key is kept (never less).
    #[arg(long = "task-ttl", value_name = "DURATION", env = "ABIDE_TASK_TTL", default_value = "24h",
          value_parser = parse_duration)]
    pub task_ttl: Duration,

    /// At most N requests for a --task across all its runs: a run that
    /// would need more ends NEEDS_HUMAN (exit 10), as does every rerun after,
    /// unsent. Runs without --task are not counted (so that `abide mcp
    /// --task-attempts N` bounds every task the model runs).
    #[arg(long = "task-attempts", value_name = "N", env = "ABIDE_TASK_ATTEMPTS",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub task_attempts: Option<u32>,

    /// When a write's effect is unknown (no answer after sending it, or a
    /// retryable 5xx), GET this URL first (same origin, headers and
    /// credentials; {idempotency_key} is replaced by the key sent): a 2xx
    /// (meeting --require) means it happened (SUCCEEDED, "reconciled": true,
    /// the check's body as the body); 404 or 410 that it did not (the write
    /// goes again, same key, within attempts and budget); anything else
    /// NEEDS_HUMAN (exit 10), never a replay.
    #[arg(long, value_name = "URL")]
    pub check: Option<String>,

    /// Where a 2xx body names what the write created (an RFC 6901 JSON
    /// Pointer, e.g. /id): the outcome's operation_id (else a 201's
    /// Location), kept with the --task. The body is held in memory to read
    /// it, up to 64MiB, as for --require.
    #[arg(long = "id-pointer", value_name = "POINTER", value_parser = JsonPointer::parse)]
    pub id_pointer: Option<JsonPointer>,

    /// Append one JSON record to FILE (0600) for each run that ends
    /// SIDE_EFFECT_UNKNOWN, NO_PROGRESS or NEEDS_HUMAN: what was sent where,
    /// every attempt with its status and rate-limit headers, the budget used,
    /// the key, the operation_id and the safe ways on; no body, no secret.
    #[arg(long, value_name = "FILE", env = "ABIDE_ESCALATE")]
    pub escalate: Option<PathBuf>,
}

/// How a --data-* value is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataKind {
    /// `-d`, `--data-ascii`: @FILE without its line ends.
    Text,
    /// `--data-raw`: no @FILE.
    Raw,
    /// `--data-binary`: @FILE byte for byte.
    Binary,
    /// `--data-urlencode`.
    UrlEncode,
}

/// One --data-* value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Data {
    pub kind: DataKind,
    pub value: String,
}

#[derive(Args, Debug, Default)]
#[command(next_help_heading = BATCH)]
pub struct BatchArgs {
    /// Send every request of FILE ("-" is stdin) instead of one URL: a line is
    /// a URL, or a JSON object {"id", "url", "method", "headers": {"Name":
    /// "value"}, "json" or "data", "output"} where every field but url is
    /// optional (id defaults to the line number). The flags apply to every
    /// item; an item's fields override them. One outcome line per item, with
    /// its "id", goes to stdout as it ends (or to --outcome PATH); bodies go
    /// to the item's output, to -o TEMPLATE ({id}, {n}), or nowhere. A bad
    /// line is its own USAGE_ERROR and the batch goes on. The summary goes to
    /// stderr; the exit code is 0 when every item succeeded, else that of the
    /// worst outcome (see the README). --task ID makes ID:{id} per item.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["agent", "write_out", "continue_at", "dump_header"])]
    pub batch: Option<PathBuf>,

    /// With --batch: requests in flight at once in this process (each over
    /// a kept-alive connection), still under --max-concurrent, --rate and the
    /// scope gate shared with every other process [default: 4].
    #[arg(long, value_name = "N", requires = "batch",
          value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub parallel: Option<u16>,

    /// With --batch: write down every item that ended (any outcome but a
    /// cancellation) in FILE, on the disk as it ends; a rerun with the same
    /// FILE skips those items, so a batch killed halfway resumes where it was.
    #[arg(long, value_name = "FILE", requires = "batch")]
    pub journal: Option<PathBuf>,
}

impl BatchArgs {
    /// `--parallel`, or its default.
    pub fn parallel(&self) -> u16 {
        self.parallel.unwrap_or(4)
    }
}

/// A `-H` header: `None` as the value removes a default header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub name: ureq::http::HeaderName,
    pub value: Option<ureq::http::HeaderValue>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusList(pub Vec<u16>);

/// `--rate N/UNIT`, kept as the interval between two requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub interval: Duration,
}

/// `--rate`: a fixed pace, or one learned from the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateFlag {
    Fixed(Rate),
    Auto,
}

fn parse_rate_flag(text: &str) -> Result<RateFlag, String> {
    match text.trim() {
        "auto" => Ok(RateFlag::Auto),
        _ => parse_rate(text).map(RateFlag::Fixed),
    }
}

pub(crate) fn parse_rate(text: &str) -> Result<Rate, String> {
    let bad = || format!("`{text}` is not a rate N/UNIT (e.g. 5/s, 100/m, 1000/h)");
    let (count, unit) = text.split_once('/').ok_or_else(bad)?;
    let count: u32 = count
        .trim()
        .parse()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(bad)?;
    let unit = match unit.trim() {
        "s" | "sec" | "second" => Duration::from_secs(1),
        "m" | "min" | "minute" => Duration::from_secs(60),
        "h" | "hour" => Duration::from_secs(3600),
        other => parse_duration(other).map_err(|_| bad())?,
    };
    let interval = unit / count;
    if interval.is_zero() {
        return Err(bad());
    }
    Ok(Rate { interval })
}

/// The largest `--max-body`: the agent object holds the body as bytes, as
/// text and as JSON at once.
pub const MAX_BODY_CEILING: u64 = 4 << 20;

fn parse_max_body(text: &str) -> Result<u64, String> {
    let size = crate::units::parse_size(text)?;
    if size > MAX_BODY_CEILING {
        return Err(format!(
            "`{text}` is more than the 4MiB --max-body can keep"
        ));
    }
    Ok(size)
}

pub(crate) fn parse_method(text: &str) -> Result<String, String> {
    if !text.is_empty() && text.bytes().all(is_token_byte) {
        Ok(text.to_string())
    } else {
        Err(format!("`{text}` is not an HTTP method"))
    }
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A `-H` value, as the HTTP crate's own types (which check the name is a
/// token). Errors never quote the value, which may be a credential.
pub fn parse_header(text: &str) -> Result<Header, String> {
    let (name, value) = text
        .split_once(':')
        .ok_or_else(|| "a -H value has no colon; write it as \"Name: value\"".to_string())?;
    let name = ureq::http::HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|_| "a -H header name may hold only letters, digits and !#$%&'*+-.^_`|~")?;
    let value = value.trim();
    let value = (!value.is_empty())
        .then(|| parse_header_value(value))
        .transpose()
        .map_err(|e| format!("header {name}: {e}"))?
        .map(|value| ureq::http::HeaderValue::from_bytes(value.as_bytes()))
        .transpose()
        .map_err(|_| format!("header {name}: not a header value"))?;
    Ok(Header { name, value })
}

pub(crate) fn parse_header_value(text: &str) -> Result<String, String> {
    // RFC 9110 §5.5: visible characters, spaces and tabs; no other controls.
    if text.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f) {
        Err("a header value cannot contain line breaks or other control characters".into())
    } else {
        Ok(text.to_string())
    }
}

fn parse_codes(text: &str) -> Result<StatusList, String> {
    text.split(',')
        .map(|code| {
            code.trim()
                .parse::<u16>()
                .ok()
                .filter(|c| (100..600).contains(c))
                .ok_or_else(|| format!("`{}` is not an HTTP status (100-599)", code.trim()))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(StatusList)
}

fn parse_fraction(text: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|f| (0.0..=1.0).contains(f))
        .ok_or_else(|| format!("`{text}` is not a fraction between 0 and 1"))
}

/// The decision table in brief, for the end of `--help` and the man page.
/// Lines stay within 72 columns so that both fit an 80-column terminal.
pub const DECISION_TABLE: &str = "\
2xx; 3xx without -L    SUCCEEDED, the body is written
408, 429               retried, whatever the method
500, 502, 503, 504     retried if idempotent, else SIDE_EFFECT_UNKNOWN
other 4xx and 5xx      NON_RETRYABLE, never retried
unknown host, refused  NON_RETRYABLE: waiting fixes neither
  TLS certificate
failure before sending retried, whatever the method
failure after sending  retried if idempotent, else SIDE_EFFECT_UNKNOWN
2xx body broke off     a GET resumes with Range where the server allows;
                       INCOMPLETE if part of it reached stdout
409 with a key         retried with the same key (still being processed)
422 with a key         NON_RETRYABLE: the key was used with another
                       payload
write's effect unknown with --check: 2xx SUCCEEDED (reconciled), 404/410
                       sent again, anything else NEEDS_HUMAN

x-should-retry or Stripe-Should-Retry: true|false overrides the status.
Idempotent: GET, HEAD, OPTIONS, TRACE, PUT, DELETE, and any request
sent with --idempotency-key or --idempotent. Retried: --retry-on.
Wait: retry-after-ms, else Retry-After (seconds or HTTP-date), raised
to --floor, plus jitter; without a server delay, full-jitter backoff.
A wait beyond --max-wait or the budget ends the run at once with
BUDGET_EXHAUSTED and next_allowed_at.";

pub fn exit_codes() -> String {
    Kind::ALL
        .iter()
        .map(|k| format!("{:>3}  {:<19}  {}", k.exit_code(), k.name(), k.meaning()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Parses a command line. `--retry` and `--attempts` are two spellings of
/// one setting: both on the command line is a usage error, but `--retry`
/// must win over ABIDE_ATTEMPTS, which clap's `conflicts_with` would reject
/// (it counts a value from the environment as given).
pub fn parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let mut command = command();
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    let args = config::expand(args, &command)
        .map_err(|why| command.error(ErrorKind::ValueValidation, why))?;
    let matches = command.try_get_matches_from_mut(args)?;
    if matches.contains_id("retry")
        && matches.value_source("attempts") == Some(ValueSource::CommandLine)
    {
        return Err(command.error(
            ErrorKind::ArgumentConflict,
            "the argument '--retry <N>' cannot be used with '--attempts <N>'",
        ));
    }
    let mut cli = Cli::from_arg_matches(&matches)?;
    let data = [
        ("data", DataKind::Text),
        ("data_ascii", DataKind::Text),
        ("data_raw", DataKind::Raw),
        ("data_binary", DataKind::Binary),
        ("data_urlencode", DataKind::UrlEncode),
    ];
    cli.request.data_parts = in_order(&matches, &data)
        .into_iter()
        .map(|(kind, value)| Data { kind, value })
        .collect();
    cli.request.form_parts = in_order(&matches, &[("form", false), ("form_string", true)]);
    cli.policy.budget_given = matches.value_source("budget") == Some(ValueSource::CommandLine);
    cli.scope.given = given_knobs(&matches);
    Ok(cli)
}

/// The values of the flags `ids` name, each with its flag's tag, in the
/// order of the command line: curl joins --data* values, and -F parts, so.
fn in_order<K: Copy>(matches: &clap::ArgMatches, ids: &[(&str, K)]) -> Vec<(K, String)> {
    let mut values: Vec<(usize, K, String)> = Vec::new();
    for &(id, kind) in ids {
        if let (Some(indices), Some(given)) =
            (matches.indices_of(id), matches.get_many::<String>(id))
        {
            values.extend(
                indices
                    .zip(given)
                    .map(|(i, value)| (i, kind, value.clone())),
            );
        }
    }
    values.sort_by_key(|(i, _, _)| *i);
    values
        .into_iter()
        .map(|(_, kind, value)| (kind, value))
        .collect()
}

/// The settings a `--policy` governs that the user gave (not defaults).
fn given_knobs(matches: &clap::ArgMatches) -> Vec<values::Knob> {
    use values::Knob;
    let given = |id: &str| {
        matches!(
            matches.value_source(id),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        )
    };
    [
        (Knob::Scope, given("scope")),
        (Knob::Attempts, given("attempts") || given("retry")),
        (Knob::MaxWait, given("max_wait")),
        (Knob::RetryOn, given("retry_on")),
        (Knob::Rate, given("rate")),
        (Knob::MaxConcurrent, given("max_concurrent")),
        (Knob::Breaker, given("breaker")),
        (Knob::RetryBudget, given("retry_budget")),
        (Knob::MaxDelayed, given("max_delayed")),
    ]
    .into_iter()
    .filter_map(|(knob, given)| given.then_some(knob))
    .collect()
}

/// The command with its generated long help; `--help`, completions and the
/// man page all come from here.
pub fn command() -> clap::Command {
    let examples: Vec<String> = EXAMPLES
        .iter()
        .map(|(what, how)| format!("  # {what}\n{}", indent(how)))
        .collect();
    Cli::command()
        // One URL, or a batch: clap would write `[URL]`, since --batch
        // makes it optional.
        .override_usage(
            "abide [OPTIONS] <URL>\n       abide [OPTIONS] --batch <FILE>\n       abide <COMMAND>",
        )
        // So that `--budget -1s` reaches the parser, which says why it is
        // refused, instead of reading as an unknown flag `-1`.
        .mut_args(|arg| {
            let duration = arg
                .get_value_names()
                .is_some_and(|names| names.iter().any(|n| n == "DURATION"));
            if duration {
                arg.allow_hyphen_values(true)
            } else {
                arg
            }
        })
        .after_long_help(format!(
            "Decision table:\n{}\n\nExit codes:\n{}\n\nExamples:\n{}",
            indent(DECISION_TABLE),
            indent(&exit_codes()),
            examples.join("\n\n")
        ))
}

/// What each example shows, and the example (lines within 72 columns).
pub const EXAMPLES: [(&str, &str); 5] = [
    (
        "the body to a file, replaced only by a complete answer",
        "abide https://api.example.com/v1/items -o items.json",
    ),
    (
        "a POST made safe to retry, with more attempts and a longer budget",
        "abide --attempts 6 --budget 2m -X POST --json @order.json \\\n      \
         --idempotency-key auto https://api.example.com/orders",
    ),
    (
        "the outcome alone, for a script",
        "abide https://api.example.com/v1/items 2>&1 >/dev/null | jq -r .outcome",
    ),
    (
        "defaults from the environment; a flag on the command line still wins",
        "export ABIDE_ATTEMPTS=6 ABIDE_BUDGET=2m\n\
         abide --attempts 2 https://api.example.com/v1/items",
    ),
    (
        "see in ten seconds what abide does, against a lab in the process",
        "abide demo",
    ),
];

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.is_empty() {
                String::new()
            } else {
                format!("  {l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What `--generate` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Generate {
    Man,
    CompleteBash,
    CompleteZsh,
    CompleteFish,
    CompletePowershell,
    CompleteElvish,
}

/// The flags of `abide mcp`. Every other flag after them is abide's own and
/// applies to every call.
#[derive(clap::Args, Debug)]
#[command(after_help = "Example, as an MCP host's server entry:\n  \
    {\"command\": \"abide\", \"args\": [\"mcp\", \"--allow-host\", \"api.example.com\", \
    \"--rate\", \"5/s\", \"--budget\", \"60s\", \"-H\", \"Authorization: Bearer …\"]}")]
pub struct McpArgs {
    /// Let the model send writes (POST, PUT, PATCH, DELETE, …); without it
    /// only GET, HEAD and OPTIONS.
    #[arg(long = "allow-writes")]
    pub allow_writes: bool,

    /// A host the model may reach (repeatable): a name or address as in the
    /// URL, or *.example.com for every subdomain. Without it, any host.
    #[arg(long = "allow-host", value_name = "PATTERN")]
    pub allow_hosts: Vec<String>,

    /// abide's flags for every call (--rate, --budget, --attempts, --scope,
    /// --state, --log, -H, -u, --max-body, …): ceilings the model's arguments
    /// cannot loosen, and credentials that never pass through the model.
    #[arg(
        value_name = "ABIDE FLAGS",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub flags: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_is_well_formed() {
        command().debug_assert();
    }

    #[test]
    fn headers() {
        let header = parse_header("X-A:  b c ").unwrap();
        assert_eq!(header.name, "x-a");
        assert_eq!(header.value.unwrap(), "b c");
        assert_eq!(parse_header("User-Agent:").unwrap().value, None);
        for bad in [
            "nocolon",
            ": v",
            "Bad Name: v",
            "X: a\r\nInjected: 1",
            "X: \x01",
            "X: a\x7f",
        ] {
            assert!(parse_header(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn rates() {
        let interval = |t| parse_rate(t).map(|r| r.interval.as_millis());
        assert_eq!(interval("5/s"), Ok(200));
        assert_eq!(interval("100/m"), Ok(600));
        assert_eq!(interval("1/h"), Ok(3_600_000));
        assert_eq!(interval("2/500ms"), Ok(250));
        for bad in ["5", "0/s", "x/s", "5/fortnight", "-1/s", "5/"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn codes_and_fractions() {
        assert_eq!(parse_codes("429, 503").unwrap(), StatusList(vec![429, 503]));
        assert!(parse_codes("429,abc").is_err());
        assert!(parse_codes("700").is_err());
        assert_eq!(parse_fraction("0.25"), Ok(0.25));
        assert!(parse_fraction("1.5").is_err());
        assert!(parse_fraction("-0.1").is_err());
        assert_eq!(parse_max_body("4MiB"), Ok(4 << 20));
        assert!(parse_max_body("100GiB").is_err());
    }
}
