//! From the command line to what a run needs: the request as every attempt
//! sends it, the policy, and what must never be shown (the redactor).
//! Every mistake found here is a usage error, before anything is sent.

pub mod policy;
pub mod target;

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use base64::Engine as _;

pub use crate::batch::input::Body as ItemBody;
use crate::cli::{Cli, Header, RateFlag};
use crate::edge::http::{Body, Request, Settings};
use crate::plan::target::Target;
use crate::redact::{self, Redactor};
use crate::report::outcome::Context;
use crate::rules::decision::{Policy, Replay};
use crate::rules::scope::ScopePolicy;
use crate::state::FileStore;

/// Where scope state is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    Files(PathBuf),
    Redis(String),
}

/// Where the outcome line goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutcomeTo {
    Stderr,
    Stdout,
    Nowhere,
    Append(PathBuf),
}

impl OutcomeTo {
    /// `--outcome WHERE`; `None` for an empty one.
    pub fn parse(text: &str) -> Option<OutcomeTo> {
        Some(match text {
            "" => return None,
            "stderr" => OutcomeTo::Stderr,
            "stdout" => OutcomeTo::Stdout,
            "none" => OutcomeTo::Nowhere,
            path => OutcomeTo::Append(PathBuf::from(path)),
        })
    }
}

#[derive(Debug)]
pub struct Plan {
    pub request: Request,
    pub settings: Settings,
    pub policy: Policy,
    pub replay: Replay,
    pub max_time: Option<Duration>,
    pub connect_timeout: Duration,
    pub stall: Duration,
    /// A broken-off 2xx body may be continued with a range request.
    pub resumable: bool,
    pub output: Option<PathBuf>,
    /// `-C -`: the existing output file is the start of the body.
    pub continue_output: bool,
    /// `-N`: stdout gets every byte as it comes.
    pub no_buffer: bool,
    /// `-i`/`-I`: the answer's head goes to stdout before its body.
    pub include: bool,
    /// `-D FILE`: where the final answer's head is written at the end
    /// (`-` is stdout, when the body goes to -o FILE).
    pub dump_header: Option<PathBuf>,
    /// `-w FORMAT`, written at the end.
    pub write_out: Option<crate::report::writeout::Format>,
    pub outcome_to: OutcomeTo,
    pub context: Context,
    pub redactor: Redactor,
    /// Where the scope state lives; `None` with `--no-state`.
    pub state: Option<Backend>,
    pub state_required: bool,
    pub scope_policy: ScopePolicy,
    pub max_concurrent: Option<u32>,
    /// `--rate auto`: the scope's pace is learned from its answers.
    pub rate_auto: bool,
    pub max_body: u64,
    pub require: Vec<String>,
    /// Refuse a request after this many identical failures in a row; 0 is off.
    pub no_progress: u32,
    pub task: Option<String>,
    pub task_ttl: Duration,
    pub log: Option<PathBuf>,
    /// The temporary file a large stdin body was spooled to, if any: held,
    /// never read, so that the file lives as long as the plan.
    _spool: Option<Spooled>,
}

/// A private temporary file holding a request body, removed when dropped.
#[derive(Debug)]
pub struct Spooled(PathBuf);

impl Drop for Spooled {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

impl Plan {
    /// Replaces the generated idempotency key with the one a task kept.
    pub fn set_idempotency_key(&mut self, key: String) {
        for (name, value) in &mut self.request.headers {
            if name.eq_ignore_ascii_case("idempotency-key") {
                *value = key.clone();
            }
        }
        self.context.idempotency_key = Some(key);
    }
}

/// Headers that differ between otherwise identical requests.
const VOLATILE: [&str; 7] = [
    "idempotency-key",
    "date",
    "x-request-id",
    "x-correlation-id",
    "traceparent",
    "tracestate",
    "x-amzn-trace-id",
];

/// The endpoint a request's failures count against in its scope's breakers:
/// the method and the URL without its query, hashed, since a path may hold
/// a secret and the state is shared.
pub fn endpoint(request: &Request) -> String {
    let url = request.url.split(['?', '#']).next().unwrap_or_default();
    crate::state::scope_hash(&format!("{} {url}", request.method))
}

/// Length-prefixed fields, so that no two different requests hash alike.
fn field(hash: &mut sha2::Sha256, bytes: &[u8]) {
    use sha2::Digest;
    hash.update((bytes.len() as u64).to_le_bytes());
    hash.update(bytes);
}

/// The request's headers as the fingerprint sees them: names lower-cased,
/// volatile ones left out, sorted.
fn stable_headers(request: &Request) -> Vec<(String, &str)> {
    let mut headers: Vec<(String, &str)> = request
        .headers
        .iter()
        .map(|(n, v)| (n.to_ascii_lowercase(), v.as_str()))
        .filter(|(n, _)| !VOLATILE.contains(&n.as_str()))
        .collect();
    headers.sort();
    headers
}

/// The request's credentials (secret-looking header values, and the URL
/// with its secret query values) as a 16-bit tag: enough to tell that they
/// changed, far too little to test password guesses against.
fn credentials_tag(request: &Request) -> [u8; 2] {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    field(&mut hash, request.url.as_bytes());
    for (name, value) in stable_headers(request) {
        if redact::is_secret_name(&name) {
            field(&mut hash, value.as_bytes());
        }
    }
    let digest = hash.finalize();
    [digest[0], digest[1]]
}

/// What makes two requests the same for the no-progress guard: method, URL,
/// body and headers (but the volatile ones), hashed so that nothing is kept
/// in clear. Credentials enter it only as their 16-bit tag, so that someone
/// who can read the scope state cannot test password guesses against it.
pub fn fingerprint(request: &Request) -> std::io::Result<String> {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    field(&mut hash, request.method.as_bytes());
    field(&mut hash, redact::url(&request.url).as_bytes());
    for (name, value) in stable_headers(request) {
        field(&mut hash, name.as_bytes());
        if !redact::is_secret_name(&name) {
            field(&mut hash, value.as_bytes());
        }
    }
    hash.update(credentials_tag(request));
    match &request.body {
        Body::Empty => field(&mut hash, b""),
        Body::Bytes(bytes) => field(&mut hash, bytes),
        // A device (`@/dev/zero`) may never end: what it is named is what
        // makes two requests the same.
        Body::File(path) if !fs::metadata(path)?.is_file() => {
            field(&mut hash, path.as_os_str().as_encoded_bytes());
        }
        Body::File(path) => {
            let mut file = std::fs::File::open(path)?;
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = file.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                hash.update(&buf[..n]);
            }
        }
    }
    Ok(hash.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// What a batch item sets over the command line's request flags.
#[derive(Debug, Default)]
pub struct Overrides {
    pub url: Option<String>,
    pub method: Option<String>,
    /// After the `-H` headers: a name given again replaces the flag's.
    pub headers: Vec<(String, String)>,
    /// Instead of `--json`, `-d` and `--data-binary`.
    pub body: Option<ItemBody>,
}

pub fn plan(cli: &Cli, stdin: &mut dyn Read) -> Result<Plan, String> {
    plan_with(cli, &Overrides::default(), stdin)
}

/// The plan of the command line with `overrides` over its request flags.
pub fn plan_with(cli: &Cli, overrides: &Overrides, stdin: &mut dyn Read) -> Result<Plan, String> {
    let r = &cli.request;
    let url = overrides
        .url
        .as_deref()
        .or(cli.url.as_deref())
        .unwrap_or_default();
    // clap lets them by with a URL, which conflicts with --batch.
    if cli.batch.batch.is_none() && (cli.batch.parallel.is_some() || cli.batch.journal.is_some()) {
        return Err("--parallel and --journal go with --batch FILE".into());
    }
    let target = Target::parse(url)?;
    let mut redactor = Redactor::default();

    // `-o -` is stdout, as in curl.
    let output = cli
        .output
        .output
        .clone()
        .filter(|path| path.as_os_str() != "-");
    let outcome_to = match OutcomeTo::parse(&cli.output.outcome) {
        // A batch's bodies never go to stdout.
        Some(OutcomeTo::Stdout) if output.is_none() && cli.batch.batch.is_none() => {
            return Err(
                "--outcome stdout needs -o FILE, else the body and the outcome line would mix"
                    .into(),
            );
        }
        Some(to) => to,
        None => return Err("--outcome needs stderr, stdout, none or a file path".into()),
    };
    let write_out = match cli.output.write_out.as_deref() {
        Some(text) => {
            let text = match text.strip_prefix('@') {
                // As curl reads it: the lines joined, without their line ends.
                Some(file) => std::fs::read_to_string(file)
                    .map_err(|e| format!("cannot read the -w format from {file}: {e}"))?
                    .lines()
                    .collect(),
                None => text.to_string(),
            };
            Some(crate::report::writeout::Format::parse(&text)?)
        }
        None => None,
    };
    let stdout_head = |path: &PathBuf| path.as_os_str() == "-";
    let dump_to_stdout = cli.output.dump_header.as_ref().is_some_and(stdout_head);
    let include = cli.output.include || cli.output.head;
    // Without -o FILE, `-D -` writes the head before the body, as -i does.
    let (include, dump_header) = match &cli.output.dump_header {
        Some(_) if dump_to_stdout && output.is_none() => (true, None),
        dump => (include, dump.clone()),
    };
    if include && cli.output.continue_at.is_some() {
        return Err("-i and -I cannot go with -C -: the file would hold a head mid-body".into());
    }

    let (body, default_type, spool) = match &overrides.body {
        Some(ItemBody::Json(value)) => (
            Body::Bytes(value.to_string().into_bytes()),
            Some("application/json"),
            None,
        ),
        Some(ItemBody::Data(text)) => (
            Body::Bytes(text.clone().into_bytes()),
            Some("application/x-www-form-urlencoded"),
            None,
        ),
        None => body(cli, stdin)?,
    };
    let item_method = overrides
        .method
        .as_deref()
        .map(crate::cli::parse_method)
        .transpose()?;
    let json = match &overrides.body {
        Some(item) => matches!(item, ItemBody::Json(_)),
        None => r.json.is_some(),
    };
    let method = item_method
        .or_else(|| r.method.clone())
        .or_else(|| cli.output.head.then(|| "HEAD".to_string()))
        .unwrap_or_else(|| if body == Body::Empty { "GET" } else { "POST" }.to_string());

    // Defaults first; -H replaces a default of the same name or removes it.
    let mut headers: Vec<(String, String)> = Vec::new();
    let version = format!("abide/{}", env!("CARGO_PKG_VERSION"));
    headers.push(("User-Agent".into(), r.user_agent.clone().unwrap_or(version)));
    if let Some(content_type) = default_type {
        headers.push(("Content-Type".into(), content_type.into()));
    }
    // As curl sends it; here, not in ureq, so that -H "Accept:" removes it.
    // No Accept-Encoding: curl asks for compression only with --compressed.
    let accept = if json { "application/json" } else { "*/*" };
    headers.push(("Accept".into(), accept.into()));
    if r.compressed {
        headers.push((
            "Accept-Encoding".into(),
            crate::edge::decode::ACCEPTED.into(),
        ));
    }
    if r.http2 || r.http3 {
        let version = if r.http3 { "--http3" } else { "--http2" };
        return Err(format!(
            "abide speaks HTTP/1.1 only; drop {version} (every HTTP/2 and HTTP/3 server speaks HTTP/1.1 too)"
        ));
    }
    if let Some(referer) = &r.referer {
        headers.push(("Referer".into(), referer.clone()));
    }
    if let Some(token) = &r.oauth2_bearer {
        if crate::cli::parse_header_value(token).is_err() {
            return Err(
                "--oauth2-bearer cannot contain line breaks or other control characters".into(),
            );
        }
        redactor.add(token);
        headers.push(("Authorization".into(), format!("Bearer {token}")));
    }
    let credentials = match (&r.user, &target.userinfo) {
        (Some(user), _) => Some(user.clone()),
        (None, Some(userinfo)) => Some(userinfo.clone()),
        (None, None) => None,
    };
    if let Some(credentials) = credentials {
        let (user, password) = credentials.split_once(':').unwrap_or((&credentials, ""));
        redactor.add(password);
        if password.is_empty() {
            // `https://TOKEN@host`: a user name alone is usually a token.
            redactor.add(user);
        }
        let encoded =
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        headers.push(("Authorization".into(), format!("Basic {encoded}")));
    }
    let idempotency_key = match cli.policy.idempotency_key.as_deref() {
        Some("auto") => Some(uuid::Uuid::new_v4().to_string()),
        other => other.map(str::to_string),
    };
    if let Some(key) = &idempotency_key {
        headers.push(("Idempotency-Key".into(), key.clone()));
    }
    if let Some((name, _)) = overrides.headers.iter().find(|(n, _)| n.contains(':')) {
        return Err(format!("header {name:?}: a name cannot hold a colon"));
    }
    let item_headers = overrides
        .headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}"));
    let given: Vec<Header> = r
        .headers
        .iter()
        .cloned()
        .chain(item_headers)
        .map(|h| crate::cli::parse_header(&h))
        .collect::<Result<_, _>>()?;
    for Header { name, value } in &given {
        headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        if let Some(value) = value {
            headers.push((name.clone(), value.clone()));
        }
    }
    for (name, value) in &headers {
        if redact::is_secret_name(name) {
            redactor.add(value);
            // "Bearer abc": the token alone may be echoed too.
            if let Some((_, token)) = value.split_once(' ') {
                redactor.add(token);
            }
        }
    }
    if let Some((_, query)) = target.url.split_once('?') {
        for (name, value) in query
            .split(['&', ';'])
            .filter_map(|pair| pair.split_once('='))
        {
            if redact::is_secret_name(name) {
                redactor.add(value);
            }
        }
    }
    // What is actually sent decides: a key removed with -H is no key.
    let idempotency_key = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("idempotency-key"))
        .map(|(_, v)| v.clone());

    let p = &cli.policy;
    let attempts = p.retry.map_or(p.attempts, |retries| retries + 1);
    let policy = Policy {
        attempts,
        budget: p.budget,
        hard_budget: p.budget_given,
        max_wait: p.max_wait,
        retry_on: p.retry_on.0.clone(),
        floor: p.floor,
        jitter: p.jitter,
        backoff: p.backoff,
        backoff_max: p.backoff_max.max(p.backoff),
    };
    if policy.budget.is_zero() {
        return Err("--budget must be more than 0".into());
    }
    if r.max_time.is_some_and(|m| m.is_zero()) || r.connect_timeout.is_zero() || r.stall.is_zero() {
        return Err("-m/--max-time, --connect-timeout and --stall must be more than 0".into());
    }
    let replay = Replay::of(&method, p.idempotent || idempotency_key.is_some());
    let sc = &cli.scope;
    let scope = match &sc.scope {
        Some(name) if name.trim().is_empty() => return Err("--scope needs a name".into()),
        Some(name) => name.clone(),
        None => target.origin.clone(),
    };
    let a = &cli.agent;
    if sc.no_state {
        let shared = [
            ("--task keeps its key", a.task.is_some()),
            ("--rate paces the scope", sc.rate.is_some()),
            (
                "--max-concurrent counts the scope's requests",
                sc.max_concurrent.is_some(),
            ),
        ];
        if let Some((what, _)) = shared.iter().find(|(_, given)| *given) {
            return Err(format!(
                "{what} in the scope state; it cannot be used with --no-state"
            ));
        }
    }
    if a.task.is_some() && cli.policy.idempotency_key.as_deref() != Some("auto") {
        return Err("--task keeps a generated key: use it with --idempotency-key auto".into());
    }
    let state = match &sc.state {
        _ if sc.no_state => None,
        Some(url) if url.starts_with("redis://") || url.starts_with("rediss://") => {
            redis::IntoConnectionInfo::into_connection_info(url.as_str())
                .map_err(|e| format!("--state is not a usable Redis URL ({:?})", e.kind()))?;
            if let Some((userinfo, _)) = url
                .split_once("://")
                .and_then(|(_, rest)| rest.split_once('@'))
            {
                redactor.add(userinfo.rsplit(':').next().unwrap_or(userinfo));
            }
            Some(Backend::Redis(url.clone()))
        }
        Some(_) => return Err("--state takes a redis:// or rediss:// URL".into()),
        None => sc
            .state_dir
            .clone()
            .or_else(FileStore::default_dir)
            .map(Backend::Files),
    };
    let scope_policy = ScopePolicy {
        rate_interval: match sc.rate {
            Some(RateFlag::Fixed(r)) => Some(crate::rules::scope::spacing(r.interval)),
            _ => None,
        },
        breaker_threshold: sc.breaker,
        // An open breaker is a backoff the scope shares: it starts where the
        // run's own does.
        breaker_first: policy.backoff,
        breaker_cooldown: sc.breaker_cooldown,
        // A probe that has not reported by the end of its attempt is presumed lost.
        probe_ttl: r.max_time.unwrap_or(policy.budget).min(policy.budget) + Duration::from_secs(1),
    };
    // A range of the user's own, or a body held whole for --require, is
    // never continued.
    let resumable = method == "GET"
        && a.require.is_empty()
        && !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("range"));
    Ok(Plan {
        context: Context {
            method: method.clone(),
            url: target.display(),
            scope,
            idempotency_key,
        },
        request: Request {
            method,
            url: target.url,
            headers,
            body,
        },
        settings: settings(cli),
        policy,
        replay,
        max_time: r.max_time,
        connect_timeout: r.connect_timeout,
        stall: r.stall,
        resumable,
        output,
        continue_output: cli.output.continue_at.is_some(),
        no_buffer: cli.output.no_buffer,
        include,
        dump_header,
        write_out,
        outcome_to,
        redactor,
        state,
        state_required: sc.state_required,
        scope_policy,
        max_concurrent: sc.max_concurrent,
        rate_auto: sc.rate == Some(RateFlag::Auto),
        max_body: a.max_body,
        require: a.require.clone(),
        no_progress: a.no_progress.unwrap_or(if a.agent { 3 } else { 0 }),
        task: a.task.clone(),
        task_ttl: a.task_ttl,
        log: cli.output.log.clone(),
        _spool: spool,
    })
}

/// The connection settings of the command line: the same for every
/// request of a batch, which shares one connection pool.
pub fn settings(cli: &Cli) -> Settings {
    let r = &cli.request;
    Settings {
        follow_redirects: r.location,
        proxy: r.proxy.clone(),
        insecure: r.insecure,
        cacert: r.cacert.clone(),
        compressed: r.compressed,
        max_ratio: r.max_ratio,
        ca_native: r.ca_native,
        parallel: cli
            .batch
            .batch
            .as_ref()
            .map_or(1, |_| cli.batch.parallel().into()),
    }
}

/// The body and the Content-Type it implies. A single `@FILE` (or device,
/// such as `@/dev/zero`) is streamed from it on each attempt; anything else
/// (stdin, several parts) is assembled once, in memory up to a few MiB and
/// beyond that in a private temporary file, within the budget.
fn body(
    cli: &Cli,
    stdin: &mut dyn Read,
) -> Result<(Body, Option<&'static str>, Option<Spooled>), String> {
    let r = &cli.request;
    let (parts, content_type): (Vec<&String>, _) = if let Some(json) = &r.json {
        (vec![json], Some("application/json"))
    } else if !r.data.is_empty() || !r.data_binary.is_empty() {
        let parts = r.data.iter().chain(&r.data_binary).collect();
        (parts, Some("application/x-www-form-urlencoded"))
    } else {
        return Ok((Body::Empty, None, None));
    };
    if let [single] = parts.as_slice()
        && let Some(path) = single.strip_prefix('@').filter(|p| *p != "-")
    {
        use std::os::unix::fs::FileTypeExt;
        let meta =
            std::fs::metadata(path).map_err(|e| format!("cannot read body file {path}: {e}"))?;
        if meta.is_file() || meta.file_type().is_char_device() {
            return Ok((Body::File(PathBuf::from(path)), content_type, None));
        }
    }
    let mut spool = Spool {
        bytes: Vec::new(),
        file: None,
        deadline: Instant::now() + cli.policy.budget,
    };
    let mut stdin_used = false;
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            spool.add(&mut &b"&"[..]).map_err(|e| e.to_string())?;
        }
        match part.strip_prefix('@') {
            Some("-") => {
                if stdin_used {
                    return Err("stdin (@-) can be used once".into());
                }
                stdin_used = true;
                spool
                    .add(stdin)
                    .map_err(|e| format!("cannot read the body from stdin: {e}"))?;
            }
            Some(path) => {
                let mut file = std::fs::File::open(path)
                    .map_err(|e| format!("cannot read body file {path}: {e}"))?;
                spool
                    .add(&mut file)
                    .map_err(|e| format!("cannot read body file {path}: {e}"))?;
            }
            None => spool.add(&mut part.as_bytes()).map_err(|e| e.to_string())?,
        }
    }
    Ok(match spool.file {
        Some((_, spooled)) => (Body::File(spooled.0.clone()), content_type, Some(spooled)),
        None => (Body::Bytes(spool.bytes), content_type, None),
    })
}

/// The largest body assembled in memory; beyond it, a temporary file.
const SPOOL_MEMORY: usize = 4 << 20;

/// A body being assembled, and the time its reading must end by.
struct Spool {
    bytes: Vec<u8>,
    file: Option<(File, Spooled)>,
    deadline: Instant,
}

impl Spool {
    fn add(&mut self, from: &mut dyn Read) -> io::Result<()> {
        let mut buf = vec![0u8; crate::edge::http::BUFFER];
        loop {
            if Instant::now() > self.deadline {
                return Err(io::Error::other("it did not end within the budget"));
            }
            let n = match from.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if self.file.is_none() && self.bytes.len() + n > SPOOL_MEMORY {
                self.file = Some(spool_file(&self.bytes)?);
                self.bytes = Vec::new();
            }
            match &mut self.file {
                Some((file, _)) => file.write_all(&buf[..n])?,
                None => self.bytes.extend_from_slice(&buf[..n]),
            }
        }
    }
}

/// A new temporary file only this user can read, holding `start`.
fn spool_file(start: &[u8]) -> io::Result<(File, Spooled)> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = std::env::temp_dir().join(format!(
        "abide-body-{}-{:08x}",
        std::process::id(),
        rand::random::<u32>()
    ));
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    let spooled = Spooled(path);
    file.write_all(start)?;
    Ok((file, spooled))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_of(args: &[&str]) -> Result<Plan, String> {
        plan_with_stdin(args, b"")
    }

    fn plan_with_stdin(args: &[&str], stdin: &[u8]) -> Result<Plan, String> {
        let cli = crate::cli::parse_from(std::iter::once("abide").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        plan(&cli, &mut &stdin[..])
    }

    fn header<'a>(plan: &'a Plan, name: &str) -> Option<&'a str> {
        plan.request
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn a_bare_url_gets_the_defaults_the_tests_assume() {
        let plan = plan_of(&["example.com"]).unwrap();
        assert_eq!(plan.policy, Policy::default());
    }

    #[test]
    fn curl_defaults() {
        let p = plan_of(&["example.com/x"]).unwrap();
        assert_eq!(p.request.method, "GET");
        assert_eq!(p.request.url, "http://example.com/x");
        assert_eq!(p.context.scope, "http://example.com:80");
        assert_eq!(
            header(&p, "user-agent"),
            Some(concat!("abide/", env!("CARGO_PKG_VERSION")))
        );
        assert_eq!(p.policy.attempts, 4);
        assert_eq!(p.replay, Replay::Safe);

        let p = plan_of(&["-d", "a=1", "-d", "b=2", "h"]).unwrap();
        assert_eq!(p.request.method, "POST");
        assert_eq!(p.request.body, Body::Bytes(b"a=1&b=2".to_vec()));
        assert_eq!(
            header(&p, "content-type"),
            Some("application/x-www-form-urlencoded")
        );
        assert_eq!(p.replay, Replay::Unsafe);

        let p = plan_of(&[
            "--json",
            "{}",
            "-H",
            "Content-Type: application/vnd+json",
            "h",
        ])
        .unwrap();
        assert_eq!(header(&p, "content-type"), Some("application/vnd+json"));
        assert_eq!(header(&p, "accept"), Some("application/json"));

        let p = plan_of(&["-H", "User-Agent:", "-X", "PUT", "--retry", "2", "h"]).unwrap();
        assert_eq!(header(&p, "user-agent"), None);
        assert_eq!(p.policy.attempts, 3);
        assert_eq!(p.replay, Replay::Safe);
    }

    #[test]
    fn a_redis_password_is_a_secret() {
        let p = plan_of(&["--state", "redis://ops:hunter22@10.0.0.5:6379/2", "h"]).unwrap();
        assert_eq!(
            p.state,
            Some(Backend::Redis(
                "redis://ops:hunter22@10.0.0.5:6379/2".into()
            ))
        );
        assert_eq!(p.redactor.text("auth hunter22 failed"), "auth *** failed");
    }

    #[test]
    fn stdin_is_read_once() {
        let p = plan_with_stdin(&["--data-binary", "@-", "h"], b"\x00line\r\n").unwrap();
        assert_eq!(p.request.body, Body::Bytes(b"\x00line\r\n".to_vec()));
        assert!(plan_with_stdin(&["-d", "@-", "-d", "@-", "h"], b"x").is_err());
    }

    #[test]
    fn a_large_stdin_body_is_spooled_to_a_private_file() {
        let big = vec![7u8; SPOOL_MEMORY + 1];
        let p = plan_with_stdin(&["--data-binary", "@-", "h"], &big).unwrap();
        let Body::File(path) = &p.request.body else {
            panic!("{:?}", p.request.body)
        };
        assert_eq!(std::fs::read(path).unwrap(), big);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let path = path.clone();
        drop(p);
        assert!(!path.exists(), "removed with the plan");
        let p = plan_of(&["-d", "@/dev/zero", "h"]).unwrap();
        assert_eq!(p.request.body, Body::File("/dev/zero".into()));
    }

    #[test]
    fn idempotency_makes_a_write_repeatable() {
        let p = plan_of(&["-X", "POST", "--idempotency-key", "auto", "h"]).unwrap();
        let key = p.context.idempotency_key.clone().unwrap();
        assert_eq!(key.len(), 36);
        assert_eq!(header(&p, "idempotency-key"), Some(key.as_str()));
        assert_eq!(p.replay, Replay::Safe);
        let p = plan_of(&["-X", "POST", "-H", "Idempotency-Key: k1", "h"]).unwrap();
        assert_eq!(p.context.idempotency_key.as_deref(), Some("k1"));
        assert_eq!(p.replay, Replay::Safe);
        // A key removed with -H is no key: the write is not repeatable.
        let p = plan_of(&[
            "-X",
            "POST",
            "--idempotency-key",
            "auto",
            "-H",
            "Idempotency-Key:",
            "h",
        ])
        .unwrap();
        assert_eq!(p.context.idempotency_key, None);
        assert_eq!(p.replay, Replay::Unsafe);
        let p = plan_of(&["-X", "POST", "--idempotent", "h"]).unwrap();
        assert_eq!(p.replay, Replay::Safe);
        assert_eq!(p.context.idempotency_key, None);
    }

    #[test]
    fn credentials_are_known_to_the_redactor() {
        let p = plan_of(&[
            "-u",
            "ann:pw-one-long",
            "-H",
            "Authorization: Bearer tok-two-long",
            "-H",
            "X-Api-Key: key-three",
            "http://h/?token=tok-four-long&q=1;sig=1",
        ])
        .unwrap();
        assert_eq!(header(&p, "authorization"), Some("Bearer tok-two-long"));
        for secret in ["pw-one-long", "tok-two-long", "key-three", "tok-four-long"] {
            assert_eq!(p.redactor.text(secret), "***", "{secret}");
        }
        // Masked where abide wrote them, whatever their length.
        assert_eq!(p.context.url, "http://h/?token=***&q=1;sig=***");
        let p = plan_of(&["http://ann:pw@h/"]).unwrap();
        assert_eq!(header(&p, "authorization"), Some("Basic YW5uOnB3"));
        assert_eq!(p.context.url, "http://h/");
        // A short secret garbles no other text: the URL of `-H 'X-Api-Key: 1'`.
        let p = plan_of(&[
            "-H",
            "X-Api-Key: 1",
            "-u",
            "admin:admin",
            "127.0.0.1:8080/1",
        ])
        .unwrap();
        assert_eq!(p.context.url, "http://127.0.0.1:8080/1");
        assert_eq!(
            p.redactor.text(r#"{"user":"admin"}"#),
            r#"{"user":"admin"}"#
        );
    }

    #[test]
    fn default_headers_can_be_removed() {
        let p = plan_of(&["h"]).unwrap();
        assert_eq!(header(&p, "accept"), Some("*/*"));
        assert_eq!(header(&p, "accept-encoding"), None);
        let p = plan_of(&["-H", "Accept:", "-H", "Accept-Encoding:", "h"]).unwrap();
        assert_eq!(header(&p, "accept"), None);
        assert_eq!(header(&p, "accept-encoding"), None);
        assert_eq!(plan_of(&["-o", "-", "h"]).unwrap().output, None);
    }

    #[test]
    fn fingerprints_ignore_volatile_headers_and_see_the_rest() {
        let fp = |args: &[&str]| fingerprint(&plan_of(args).unwrap().request).unwrap();
        let base = fp(&[
            "-X",
            "POST",
            "-d",
            "a=1",
            "-H",
            "Idempotency-Key: k1",
            "h/x",
        ]);
        assert_eq!(base.len(), 64);
        assert_eq!(
            base,
            fp(&[
                "-X",
                "POST",
                "-d",
                "a=1",
                "-H",
                "Idempotency-Key: k2",
                "h/x"
            ])
        );
        assert_eq!(
            base,
            fp(&["-X", "POST", "-H", "X-Request-Id: r9", "-d", "a=1", "h/x"])
        );
        assert_ne!(base, fp(&["-X", "POST", "-d", "a=2", "h/x"]));
        assert_ne!(base, fp(&["-X", "POST", "-d", "a=1", "h/y"]));
        assert_ne!(base, fp(&["-X", "PUT", "-d", "a=1", "h/x"]));
        let with_token = |token: &str| {
            let header = format!("Authorization: Bearer {token}");
            fp(&["-X", "POST", "-d", "a=1", "-H", &header, "h/x"])
        };
        assert_ne!(base, with_token("b"));
        // Credentials count for 16 bits only: about one wrong guess in 65536
        // matches the stored fingerprint, so a match confirms no guess.
        let base = plan_of(&["h/x"]).unwrap().request;
        let with_password = |password: &str| {
            let mut request = base.clone();
            let header = format!("Bearer {password}");
            request.headers.push(("Authorization".into(), header));
            request
        };
        let stored = with_password("hunter2");
        let tag = credentials_tag(&stored);
        let wrong = (0..1_000_000)
            .map(|i| format!("guess{i}"))
            .find(|guess| credentials_tag(&with_password(guess)) == tag)
            .expect("16 bits collide within a million guesses");
        let collides =
            fingerprint(&stored).unwrap() == fingerprint(&with_password(&wrong)).unwrap();
        assert!(collides, "a password could be confirmed by its fingerprint");
    }

    #[test]
    fn usage_errors() {
        for args in [
            &["--outcome", "stdout", "h"][..],
            &["--attempts", "0", "h"],
            &["--budget", "soon", "h"],
            &["--budget", "0", "h"],
            &["-H", "bad", "h"],
            &["--retry-on", "42", "h"],
            &["--jitter", "2", "h"],
            &["-d", "@/nonexistent/file", "h"],
            &["ftp://h/"],
            &["--json", "{}", "-d", "x", "h"],
            &["--retry", "2", "--attempts", "3", "h"],
            &["--task", "t1", "h"],
            &["--task", "t1", "--idempotency-key", "k", "h"],
            &[
                "--task",
                "t1",
                "--idempotency-key",
                "auto",
                "--no-state",
                "h",
            ],
            &["--require", "data", "h"],
            &["--rate", "5/s", "--no-state", "h"],
            &["--max-concurrent", "2", "--no-state", "h"],
            &["--max-body", "lots", "h"],
            &["--state", "memcached://h", "h"],
            &["--state", "redis://h", "--no-state", "h"],
            &["--state", "redis://h:6379/not-a-db", "h"],
            &["-m", "0", "h"],
            &["--parallel", "2", "h"],
            &["--journal", "j", "h"],
            &[],
        ] {
            assert!(plan_of(args).is_err(), "{args:?}");
        }
    }
}
