//! From the command line to what a run needs: the request as every attempt
//! sends it, the policy, and what must never be shown (the redactor).
//! Every mistake found here is a usage error, before anything is sent.
//! `plan` puts together what the resolvers below find, one concern each:
//! the body, the URL, the headers, the output, the policy, the state.

pub mod body;
pub mod check;
pub mod net;
pub mod policy;
pub mod target;

use std::fs;
use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

use base64::Engine as _;
use ureq::http::header::{
    ACCEPT, ACCEPT_ENCODING, AUTHORIZATION, CONTENT_TYPE, RANGE, REFERER, USER_AGENT,
};
use ureq::http::{HeaderMap, HeaderName, HeaderValue};

pub use crate::batch::input::Body as ItemBody;
pub use crate::cli::OutcomeTo;
use crate::cli::{Cli, Header, KeyChoice, RateFlag};
use crate::edge::http::{Body, Request, Settings};
use crate::edge::sink::{Clobber, FileOptions};
use crate::plan::body::{Payload, Spooled};
use crate::plan::target::Target;
use crate::redact::{self, Redactor};
use crate::report::outcome::Context;
use crate::rules::decision::{self, Policy, Replay};
use crate::rules::scope::ScopePolicy;
use crate::state::FileStore;

/// Where scope state is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    Files(PathBuf),
    Redis(String),
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
    /// `-o FILE` or `-O` (in `--output-dir`); `None` is stdout.
    pub output: Option<PathBuf>,
    /// How the output file is prepared (`-C -`, `--create-dirs`) and put
    /// in place.
    pub file_options: FileOptions,
    /// `-J`: the final answer's Content-Disposition names the file, and
    /// what putting it in place under that name may do.
    pub header_name: Option<Clobber>,
    /// `--fail-with-body`: a final error answer's body is written.
    pub fail_with_body: bool,
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
    /// What the run's limits, state and breakers apply to.
    pub scope: String,
    pub redactor: Redactor,
    /// Where the scope state lives; `None` with `--no-state`.
    pub state: Option<Backend>,
    pub state_required: bool,
    pub scope_policy: ScopePolicy,
    pub max_concurrent: Option<u32>,
    /// What `--policy` overruled, one sentence each, for the outcome's reason.
    pub overruled: Vec<String>,
    /// `--rate auto`: the scope's pace is learned from its answers.
    pub rate_auto: bool,
    pub max_body: u64,
    pub require: Vec<String>,
    /// Refuse a request after this many identical failures in a row; 0 is off.
    pub no_progress: u32,
    pub task: Option<String>,
    pub task_ttl: Duration,
    pub task_attempts: Option<u32>,
    /// `--check`, as given (`{idempotency_key}` not yet replaced).
    pub check: Option<String>,
    pub id_pointer: Option<String>,
    pub escalate: Option<PathBuf>,
    pub log: Option<PathBuf>,
    /// The temporary file a large stdin body was spooled to, if any: held,
    /// never read, so that the file lives as long as the plan.
    _spool: Option<Spooled>,
}

impl Plan {
    /// Replaces the generated idempotency key with the one a task kept.
    pub fn set_idempotency_key(&mut self, key: &str) -> Result<(), String> {
        let value = HeaderValue::from_str(key)
            .map_err(|_| "--task: the kept idempotency key is not a header value".to_string())?;
        if self.request.headers.contains_key(IDEMPOTENCY_KEY) {
            self.request.headers.insert(IDEMPOTENCY_KEY, value);
        }
        Ok(())
    }

    /// What the outcome line and the audit log say the run was; the key
    /// is the one the request carries.
    pub fn context(&self) -> Context {
        Context {
            method: self.request.method.clone(),
            url: redact::url(&self.request.url),
            scope: self.scope.clone(),
            idempotency_key: self.request.idempotency_key().map(str::to_string),
        }
    }
}

const IDEMPOTENCY_KEY: &str = "idempotency-key";

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

/// The request's headers as the fingerprint sees them: names lower-cased
/// (as a header map keeps them), volatile ones left out, sorted.
fn stable_headers(request: &Request) -> Vec<(&str, &[u8])> {
    let mut headers: Vec<(&str, &[u8])> = request
        .headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_bytes()))
        .filter(|(n, _)| !VOLATILE.contains(n))
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
    field(
        &mut hash,
        crate::rules::canonical::url(&request.url).as_bytes(),
    );
    for (name, value) in stable_headers(request) {
        if redact::is_secret_name(name) {
            field(&mut hash, value);
        }
    }
    let digest = hash.finalize();
    [digest[0], digest[1]]
}

/// The largest file body the fingerprint reads whole to spell it one way
/// (a JSON or form body); a larger one is hashed as its bytes come.
const CANONICAL_FILE_MAX: u64 = 4 << 20;

/// What makes two requests the same for the no-progress guard: method, URL,
/// body and headers (but the volatile ones), hashed so that nothing is kept
/// in clear. The query and JSON or form bodies are spelt one way first
/// (`rules::canonical`), so that reordering or reformatting a request does
/// not make it another. Credentials enter it only as their 16-bit tag, so
/// that someone who can read the scope state cannot test password guesses
/// against it.
pub fn fingerprint(request: &Request) -> std::io::Result<String> {
    use crate::rules::canonical;
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    field(&mut hash, request.method.as_bytes());
    field(
        &mut hash,
        redact::url(&canonical::url(&request.url)).as_bytes(),
    );
    let content_type = request
        .headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    for (name, value) in stable_headers(request) {
        field(&mut hash, name.as_bytes());
        if !redact::is_secret_name(name) {
            field(&mut hash, value);
        }
    }
    hash.update(credentials_tag(request));
    match &request.body {
        Body::Empty => field(&mut hash, b""),
        Body::Bytes(bytes) => field(&mut hash, &canonical::body(content_type, bytes)),
        // A device (`@/dev/zero`) may never end: what it is named is what
        // makes two requests the same.
        Body::File(path) if !fs::metadata(path)?.is_file() => {
            field(&mut hash, path.as_os_str().as_encoded_bytes());
        }
        Body::File(path) if fs::metadata(path)?.len() <= CANONICAL_FILE_MAX => {
            let bytes = fs::read(path)?;
            field(&mut hash, &canonical::body(content_type, &bytes));
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
    /// Instead of the command line's body flags.
    pub body: Option<ItemBody>,
}

pub fn plan(cli: &Cli, stdin: &mut dyn Read) -> Result<Plan, String> {
    plan_with(cli, &Overrides::default(), stdin)
}

/// The plan of the command line with `overrides` over its request flags.
pub fn plan_with(cli: &Cli, overrides: &Overrides, stdin: &mut dyn Read) -> Result<Plan, String> {
    let r = &cli.request;
    // clap lets them by with a URL, which conflicts with --batch.
    if cli.batch.batch.is_none() && (cli.batch.parallel.is_some() || cli.batch.journal.is_some()) {
        return Err("--parallel and --journal go with --batch FILE".into());
    }
    if r.http2 || r.http3 {
        let version = if r.http3 { "--http3" } else { "--http2" };
        return Err(format!(
            "abide speaks HTTP/1.1 only; drop {version} (every HTTP/2 and HTTP/3 server speaks HTTP/1.1 too)"
        ));
    }
    let mut redactor = Redactor::default();
    let payload = match &overrides.body {
        Some(item) => item_payload(item),
        None => body::resolve(cli, stdin)?,
    };
    let typed = overrides.url.as_deref().unwrap_or(cli.url());
    let target = Target::parse(&url(typed, &payload))?;
    let method = match &overrides.method {
        Some(method) => crate::cli::parse_method(method)?,
        None => method(cli, &payload)?,
    };
    let headers = headers(cli, overrides, &target, &payload, &mut redactor)?;
    let out = output(cli)?;
    // What is actually sent decides: a key removed with -H is no key.
    let keyed = cli.policy.idempotent || headers.contains_key(IDEMPOTENCY_KEY);
    let (governed, overruled) = govern(cli, &target.url, &method, keyed)?;
    let mut policy = policy(cli, &governed)?;
    let replay = Replay::of(&method, keyed);
    let sc = &cli.scope;
    let scope = match &governed.scope {
        Some(name) if name.trim().is_empty() => return Err("--scope needs a name".into()),
        Some(name) => name.clone(),
        None => target.origin.clone(),
    };
    let state = state(cli, &mut redactor)?;
    check::validate(cli.agent.check.as_deref(), &target, keyed)?;
    let (breaker_first, breaker_cooldown) = policy.breaker_intervals(sc.breaker_cooldown);
    let mut scope_policy = ScopePolicy {
        // A batch's requests are spaced again where they are written.
        rate_interval: governed.rate_interval.map(match cli.batch.batch {
            Some(_) => crate::rules::scope::wire_spacing,
            None => crate::rules::scope::spacing,
        }),
        breaker_threshold: governed.breaker,
        breaker_first,
        breaker_cooldown,
        retry_budget: governed.retry_budget,
        max_delayed: governed.max_delayed,
        probe_ttl: Duration::ZERO,
    };
    if cli.policy.budget.is_none() {
        policy.budget = decision::default_budget(&policy, &scope_policy, r.connect_timeout);
    }
    // A probe that has not reported by the end of its attempt is presumed
    // lost; never later than a default budget's end, so that a run killed
    // while probing holds the others no longer than a plain run could,
    // however far --attempts stretched its own budget (a live probe that
    // takes longer costs one more probe, not a wait).
    scope_policy.probe_ttl = r
        .max_time
        .unwrap_or(policy.budget)
        .min(policy.budget)
        .min(decision::DEFAULT_BUDGET)
        + Duration::from_secs(1);
    let a = &cli.agent;
    // A range of the user's own, or a body held whole for --require, is
    // never continued.
    let resumable = method == "GET" && a.require.is_empty() && !headers.contains_key(RANGE);
    let settings = settings(cli, &target.url, &mut redactor)?;
    Ok(Plan {
        scope,
        request: Request {
            method,
            url: target.url,
            headers,
            body: payload.body,
        },
        settings,
        policy,
        replay,
        max_time: r.max_time,
        connect_timeout: r.connect_timeout,
        stall: r.stall,
        resumable,
        output: out.file,
        file_options: out.options,
        header_name: out.header_name,
        fail_with_body: cli.output.fail_with_body,
        no_buffer: cli.output.no_buffer,
        include: out.include,
        dump_header: out.dump_header,
        write_out: out.write_out,
        outcome_to: out.outcome_to,
        redactor,
        state,
        state_required: sc.state_required,
        scope_policy,
        max_concurrent: governed.max_concurrent,
        overruled,
        rate_auto: sc.rate == Some(RateFlag::Auto),
        max_body: a.max_body,
        require: a.require.iter().map(|p| p.0.clone()).collect(),
        no_progress: a.no_progress.unwrap_or(if a.agent { 3 } else { 0 }),
        task: a.task.clone(),
        task_ttl: a.task_ttl,
        task_attempts: a.task_attempts,
        check: a.check.clone(),
        id_pointer: a.id_pointer.as_ref().map(|p| p.0.clone()),
        escalate: a.escalate.clone(),
        log: cli.output.log.clone(),
        _spool: payload.spool,
    })
}

/// A batch item's own body, in place of the body flags.
fn item_payload(item: &ItemBody) -> Payload {
    let (body, content_type) = match item {
        ItemBody::Json(value) => (value.to_string(), "application/json"),
        ItemBody::Data(text) => (text.clone(), "application/x-www-form-urlencoded"),
    };
    Payload {
        body: Body::Bytes(body.into_bytes()),
        content_type: Some(content_type.into()),
        query: None,
        upload_name: None,
        spool: None,
    }
}

/// The connection settings: the same for every request of a batch, which
/// shares one connection pool (made with the settings of no one URL).
pub fn settings(cli: &Cli, url: &str, redactor: &mut Redactor) -> Result<Settings, String> {
    let r = &cli.request;
    Ok(Settings {
        follow_redirects: r.location,
        proxy: r.proxy.clone(),
        insecure: r.insecure,
        cacert: r.cacert.clone(),
        compressed: r.compressed,
        max_ratio: r.max_ratio,
        ca_native: r.ca_native,
        net: net::settings(cli, url, redactor)?,
        parallel: cli
            .batch
            .batch
            .as_ref()
            .map_or(1, |_| cli.batch.parallel().into()),
    })
}

/// The URL as sent: with -G's query, and -T's file name after a final /
/// (or as the whole path), as curl builds it.
fn url(typed: &str, payload: &Payload) -> String {
    let (url, fragment) = typed.split_once('#').unwrap_or((typed, ""));
    let mut url = url.to_string();
    if let Some(name) = &payload.upload_name {
        let authority = url.find("://").map_or(0, |i| i + 3);
        let end = url.find('?').unwrap_or(url.len()).max(authority);
        let path = url[authority..end].find('/').map(|i| authority + i);
        let encoded = percent_encoding::utf8_percent_encode(name, NOT_IN_A_SEGMENT);
        match path {
            None => url.insert_str(end, &format!("/{encoded}")),
            Some(path) if url[path..end].ends_with('/') => {
                url.insert_str(end, &encoded.to_string())
            }
            Some(_) => {}
        }
    }
    if let Some(query) = &payload.query {
        url.push(if url.contains('?') { '&' } else { '?' });
        url.push_str(query);
    }
    if !fragment.is_empty() {
        url.push('#');
        url.push_str(fragment);
    }
    url
}

/// What a file name appended to a URL has percent-encoded, as curl's
/// `curl_easy_escape` does: all but letters, digits and `-._~`.
const NOT_IN_A_SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// -X, else HEAD for -I, PUT for -T, GET for -G or no body, POST.
fn method(cli: &Cli, payload: &Payload) -> Result<String, String> {
    let r = &cli.request;
    if cli.output.head && payload.body != Body::Empty {
        return Err("-I sends a HEAD, which has no body: drop --data, or add -G".into());
    }
    Ok(match &r.method {
        Some(method) => method.clone(),
        None if cli.output.head => "HEAD".into(),
        None if r.upload_file.is_some() => "PUT".into(),
        None if payload.body == Body::Empty && r.form_parts.is_empty() => "GET".into(),
        None => "POST".into(),
    })
}

/// The headers as sent: abide's defaults, then -H, which replaces a default
/// of the same name or removes it; every credential among them is made
/// known to the redactor.
fn headers(
    cli: &Cli,
    overrides: &Overrides,
    target: &Target,
    payload: &Payload,
    redactor: &mut Redactor,
) -> Result<HeaderMap, String> {
    let r = &cli.request;
    let mut headers = HeaderMap::new();
    // Only abide's own values: checked by their flags, or built here.
    let mut set = |name: HeaderName, value: &str| -> Result<(), String> {
        let value = HeaderValue::from_str(value)
            .map_err(|_| format!("the {name} header cannot hold that value"))?;
        headers.insert(name, value);
        Ok(())
    };
    let version = format!("abide/{}", env!("CARGO_PKG_VERSION"));
    set(USER_AGENT, r.user_agent.as_deref().unwrap_or(&version))?;
    if let Some(content_type) = &payload.content_type {
        set(CONTENT_TYPE, content_type)?;
    }
    // As curl sends it; here, not in ureq, so that -H "Accept:" removes it.
    // No Accept-Encoding: curl asks for compression only with --compressed.
    let json = match &overrides.body {
        Some(item) => matches!(item, ItemBody::Json(_)),
        None => !r.json.is_empty(),
    };
    let accept = if json { "application/json" } else { "*/*" };
    set(ACCEPT, accept)?;
    if r.compressed {
        set(ACCEPT_ENCODING, crate::edge::decode::ACCEPTED)?;
    }
    if let Some(referer) = &r.referer {
        set(REFERER, referer)?;
    }
    if let Some(token) = &r.oauth2_bearer {
        if crate::cli::parse_header_value(token).is_err() {
            return Err(
                "--oauth2-bearer cannot contain line breaks or other control characters".into(),
            );
        }
        redactor.add(token);
        set(AUTHORIZATION, &format!("Bearer {token}"))?;
    }
    let credentials = r.user.as_ref().or(target.userinfo.as_ref());
    if let Some(credentials) = credentials {
        let (user, password) = credentials.split_once(':').unwrap_or((credentials, ""));
        redactor.add(password);
        if password.is_empty() {
            // `https://TOKEN@host`: a user name alone is usually a token.
            redactor.add(user);
        }
        let encoded =
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        set(AUTHORIZATION, &format!("Basic {encoded}"))?;
    }
    let key_name = HeaderName::from_static(IDEMPOTENCY_KEY);
    match &cli.policy.idempotency_key {
        Some(KeyChoice::Auto) => set(key_name, &uuid::Uuid::new_v4().to_string())?,
        Some(KeyChoice::Given(key)) => set(key_name, key)?,
        None => {}
    }
    // As curl sends every -H: the first of a name replaces the default, a
    // later one adds to it.
    let given: Vec<Header> = r
        .headers
        .iter()
        .map(|h| crate::cli::parse_header(h))
        .collect::<Result<_, _>>()?;
    put(&mut headers, given);
    // A batch item's headers replace those of their names, -H's too.
    let mut items = Vec::new();
    for (name, value) in &overrides.headers {
        if name.contains(':') {
            return Err(format!("header `{name}`: a name cannot hold a colon"));
        }
        items.push(crate::cli::parse_header(&format!("{name}: {value}"))?);
    }
    put(&mut headers, items);
    learn_secrets(&headers, &target.url, redactor);
    Ok(headers)
}

/// Puts `given` into `headers`: the first header of a name replaces what
/// was there, later ones of that name are added; a header without a value
/// only removes.
fn put(headers: &mut HeaderMap, given: Vec<Header>) {
    let mut replaced: Vec<HeaderName> = Vec::new();
    for Header { name, value } in given {
        if !replaced.contains(&name) {
            headers.remove(&name);
            replaced.push(name.clone());
        }
        if let Some(value) = value {
            headers.append(name, value);
        }
    }
}

/// Makes the secret-looking header values and query values known to the
/// redactor.
fn learn_secrets(headers: &HeaderMap, url: &str, redactor: &mut Redactor) {
    for (name, value) in headers {
        if redact::is_secret_name(name.as_str())
            && let Ok(value) = value.to_str()
        {
            redactor.add(value);
            // "Bearer abc": the token alone may be echoed too.
            if let Some((_, token)) = value.split_once(' ') {
                redactor.add(token);
            }
        }
    }
    if let Some((_, query)) = url.split_once('?') {
        for (name, value) in query
            .split(['&', ';'])
            .filter_map(|pair| pair.split_once('='))
        {
            if redact::is_secret_name(name) {
                redactor.add(value);
            }
        }
    }
}

/// Where the body, the heads, -w and the outcome line go.
struct Output {
    file: Option<PathBuf>,
    options: FileOptions,
    header_name: Option<Clobber>,
    include: bool,
    dump_header: Option<PathBuf>,
    write_out: Option<crate::report::writeout::Format>,
    outcome_to: OutcomeTo,
}

fn output(cli: &Cli) -> Result<Output, String> {
    let o = &cli.output;
    let in_dir = |file: PathBuf| match &o.output_dir {
        // As curl joins them: DIR/FILE, whatever FILE is.
        Some(dir) => PathBuf::from(format!("{}/{}", dir.display(), file.display())),
        None => file,
    };
    let file = if o.remote_name {
        let name = remote_name(cli.url()).ok_or(
            "-O takes the file name from the URL's path, and this one ends without one; use -o FILE",
        )?;
        Some(in_dir(PathBuf::from(name)))
    } else {
        // `-o -` is stdout, as in curl.
        o.output
            .clone()
            .filter(|path| path.as_os_str() != "-")
            .map(in_dir)
    };
    // A batch's bodies never go to stdout.
    if o.outcome == OutcomeTo::Stdout && file.is_none() && cli.batch.batch.is_none() {
        return Err(
            "--outcome stdout needs -o FILE, else the body and the outcome line would mix".into(),
        );
    }
    let write_out = match o.write_out.as_deref() {
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
    let dump_to_stdout = o.dump_header.as_ref().is_some_and(|p| p.as_os_str() == "-");
    let include = o.include || o.head;
    // Without -o FILE, `-D -` writes the head before the body, as -i does.
    let (include, dump_header) = match &o.dump_header {
        Some(_) if dump_to_stdout && file.is_none() => (true, None),
        dump => (include, dump.clone()),
    };
    if include && o.continue_at.is_some() {
        return Err("-i and -I cannot go with -C -: the file would hold a head mid-body".into());
    }
    let clobber = |default| match (o.clobber, o.no_clobber) {
        (true, _) => Clobber::Replace,
        (_, true) => Clobber::Number,
        _ => default,
    };
    Ok(Output {
        file,
        options: FileOptions {
            resume: o.continue_at.is_some(),
            create_dirs: o.create_dirs,
            clobber: clobber(Clobber::Replace),
        },
        // As curl: a name from the server never replaces a file unasked.
        header_name: o.remote_header_name.then(|| clobber(Clobber::Refuse)),
        include,
        dump_header,
        write_out,
        outcome_to: o.outcome.clone(),
    })
}

/// `-O`'s file name: the last segment of the URL's path, as typed (curl
/// decodes no `%` in it, and encodes nothing).
fn remote_name(url: &str) -> Option<String> {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let path = after_scheme.split(['?', '#']).next().unwrap_or_default();
    let (_, path) = path.split_once('/')?;
    let name = path.rsplit(['/', '\\']).next().unwrap_or_default();
    (!name.is_empty() && name != "." && name != "..").then(|| name.to_string())
}

/// What the flags ask for, under the ceilings of the `--policy` scope the
/// URL falls in, with one sentence for each flag it overruled.
fn govern(
    cli: &Cli,
    url: &str,
    method: &str,
    keyed: bool,
) -> Result<(policy::Requested, Vec<String>), String> {
    let (p, sc) = (&cli.policy, &cli.scope);
    let requested = policy::Requested {
        scope: sc.scope.clone(),
        attempts: p.retry.map_or(p.attempts, |retries| retries + 1),
        max_wait: p.max_wait,
        retry_on: p.retry_on.0.clone(),
        rate_interval: match sc.rate {
            Some(RateFlag::Fixed(rate)) => Some(rate.interval),
            _ => None,
        },
        max_concurrent: sc.max_concurrent,
        breaker: sc.breaker,
        retry_budget: sc.retry_budget.0,
        max_delayed: sc.max_delayed,
    };
    policy::govern(
        sc.policy.as_deref(),
        url,
        policy::Class::of(method, keyed),
        requested,
        &|knob| sc.given.contains(&knob),
    )
}

fn policy(cli: &Cli, governed: &policy::Requested) -> Result<Policy, String> {
    let (p, r) = (&cli.policy, &cli.request);
    let policy = Policy {
        attempts: governed.attempts,
        // Stretched to the attempts by `plan` when none was given.
        budget: p.budget.unwrap_or(decision::DEFAULT_BUDGET),
        hard_budget: p.budget_given,
        max_wait: governed.max_wait,
        retry_on: governed.retry_on.clone(),
        floor: p.floor,
        jitter: p.jitter,
        backoff: p.backoff,
        backoff_max: p.backoff_max.max(p.backoff),
        fixed_delay: cli.net.retry_delay.filter(|d| !d.is_zero()),
        retry_all: cli.net.retry_all_errors,
    };
    if policy.budget.is_zero() {
        return Err("--budget must be more than 0".into());
    }
    if r.max_time.is_some_and(|m| m.is_zero()) || r.connect_timeout.is_zero() || r.stall.is_zero() {
        return Err("-m/--max-time, --connect-timeout and --stall must be more than 0".into());
    }
    Ok(policy)
}

/// Where the scope state is kept, and the checks of the flags that need it.
fn state(cli: &Cli, redactor: &mut Redactor) -> Result<Option<Backend>, String> {
    let (sc, a) = (&cli.scope, &cli.agent);
    if sc.no_state {
        let shared = [
            ("--task keeps its key", a.task.is_some()),
            ("--rate paces the scope", sc.rate.is_some()),
            (
                "--max-concurrent counts the scope's requests",
                sc.max_concurrent.is_some(),
            ),
            (
                "--max-delayed counts the runs waiting on its gate",
                sc.max_delayed.is_some(),
            ),
        ];
        if let Some((what, _)) = shared.iter().find(|(_, given)| *given) {
            return Err(format!(
                "{what} in the scope state; it cannot be used with --no-state"
            ));
        }
        return Ok(None);
    }
    if a.task.is_some() && cli.policy.idempotency_key != Some(KeyChoice::Auto) {
        return Err("--task keeps a generated key: use it with --idempotency-key auto".into());
    }
    Ok(match &sc.state {
        Some(target) => {
            if let Some(password) = target.password() {
                redactor.add(password);
            }
            Some(Backend::Redis(target.url.clone()))
        }
        None => sc
            .state_dir
            .clone()
            .or_else(FileStore::default_dir)
            .map(Backend::Files),
    })
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
        plan.request.headers.get(name).and_then(|v| v.to_str().ok())
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
        assert_eq!(p.context().scope, "http://example.com:80");
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
    fn the_default_budget_stretches_to_the_attempts_and_a_given_one_wins() {
        let secs = |p: &Plan| p.policy.budget.as_secs_f64();
        let p = plan_of(&["h"]).unwrap();
        assert_eq!((secs(&p), p.policy.hard_budget), (60.0, false));
        assert_eq!(
            (
                p.scope_policy.breaker_first,
                p.scope_policy.breaker_cooldown
            ),
            (Duration::from_millis(500), Duration::from_secs(8)),
            "the breaker waits as long as the run's own backoff at most"
        );
        // 127.5 s of backoff ceilings, 12.75 s of jitter, 10 s to connect each.
        let twenty = 127.5 + 12.75 + 200.0;
        for args in [&["--attempts", "20", "h"][..], &["--retry", "19", "h"]] {
            let p = plan_of(args).unwrap();
            assert!((secs(&p) - twenty).abs() < 0.001, "{args:?}: {}", secs(&p));
            assert!(
                !p.policy.hard_budget,
                "{args:?}: a default never cuts a body"
            );
            assert_eq!(
                p.scope_policy.probe_ttl,
                decision::DEFAULT_BUDGET + Duration::from_secs(1)
            );
        }
        let p = plan_of(&["--attempts", "20", "--connect-timeout", "1", "h"]).unwrap();
        assert!((secs(&p) - (140.25 + 20.0)).abs() < 0.001, "{}", secs(&p));
        // curl's --retry-max-time is --budget: given, it wins, and cuts.
        for args in [
            &["--attempts", "20", "--budget", "30s", "h"][..],
            &["--retry", "19", "--retry-max-time", "30", "h"],
        ] {
            let p = plan_of(args).unwrap();
            assert_eq!((secs(&p), p.policy.hard_budget), (30.0, true), "{args:?}");
        }
        // --retry-delay: a fixed wait, and the breaker's too.
        let p = plan_of(&["--retry", "19", "--retry-delay", "2", "h"]).unwrap();
        assert!(
            (secs(&p) - (19.0 * 2.2 + 200.0)).abs() < 0.001,
            "{}",
            secs(&p)
        );
        assert_eq!(p.scope_policy.breaker_first, Duration::from_secs(2));
        assert_eq!(p.scope_policy.breaker_cooldown, Duration::from_secs(2));
        let p = plan_of(&["--breaker-cooldown", "30s", "h"]).unwrap();
        assert_eq!(p.scope_policy.breaker_cooldown, Duration::from_secs(30));
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
        let big = vec![7u8; body::SPOOL_MEMORY + 1];
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
        let p = plan_of(&["--data-binary", "@/dev/zero", "h"]).unwrap();
        assert_eq!(p.request.body, Body::File("/dev/zero".into()));
    }

    #[test]
    fn idempotency_makes_a_write_repeatable() {
        let p = plan_of(&["-X", "POST", "--idempotency-key", "auto", "h"]).unwrap();
        let key = p.context().idempotency_key.clone().unwrap();
        assert_eq!(key.len(), 36);
        assert_eq!(header(&p, "idempotency-key"), Some(key.as_str()));
        assert_eq!(p.replay, Replay::Safe);
        let p = plan_of(&["-X", "POST", "-H", "Idempotency-Key: k1", "h"]).unwrap();
        assert_eq!(p.context().idempotency_key.as_deref(), Some("k1"));
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
        assert_eq!(p.context().idempotency_key, None);
        assert_eq!(p.replay, Replay::Unsafe);
        let p = plan_of(&["-X", "POST", "--idempotent", "h"]).unwrap();
        assert_eq!(p.replay, Replay::Safe);
        assert_eq!(p.context().idempotency_key, None);
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
        assert_eq!(p.context().url, "http://h/?token=***&q=1;sig=***");
        let p = plan_of(&["http://ann:pw@h/"]).unwrap();
        assert_eq!(header(&p, "authorization"), Some("Basic YW5uOnB3"));
        assert_eq!(p.context().url, "http://h/");
        // A short secret garbles no other text: the URL of `-H 'X-Api-Key: 1'`.
        let p = plan_of(&[
            "-H",
            "X-Api-Key: 1",
            "-u",
            "admin:admin",
            "127.0.0.1:8080/1",
        ])
        .unwrap();
        assert_eq!(p.context().url, "http://127.0.0.1:8080/1");
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
            request
                .headers
                .insert(AUTHORIZATION, HeaderValue::from_str(&header).unwrap());
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
    fn curl_bodies_urls_and_headers() {
        let p = plan_of(&["-G", "-d", "a=1", "--data-urlencode", "b=c d", "h/s?z=0#f"]).unwrap();
        assert_eq!(
            (p.request.method.as_str(), &p.request.body),
            ("GET", &Body::Empty)
        );
        assert_eq!(p.request.url, "http://h/s?z=0&a=1&b=c+d");
        assert_eq!(header(&p, "content-type"), None);
        let dir = std::env::temp_dir().join(format!("abide-plan-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("a b.txt");
        std::fs::write(&file, "x\r\n").unwrap();
        let file = file.to_str().unwrap();
        for (url, sent) in [
            ("h", "http://h/a%20b.txt"),
            ("h/up/", "http://h/up/a%20b.txt"),
            ("h/up/?q=1", "http://h/up/a%20b.txt?q=1"),
            ("h?q=/x", "http://h/a%20b.txt?q=/x"),
            ("h/named", "http://h/named"),
        ] {
            let p = plan_of(&["-T", file, url]).unwrap();
            assert_eq!(
                (p.request.method.as_str(), p.request.url.as_str()),
                ("PUT", sent)
            );
        }
        let text = format!("@{file}");
        let p = plan_of(&["-d", &text, "--data-binary", &text, "h"]).unwrap();
        assert_eq!(p.request.body, Body::Bytes(b"x&x\r\n".to_vec()));
        // Every -H of a name is sent; the first replaces a default.
        let p = plan_of(&["-H", "Accept: a", "-H", "accept: b", "-H", "X-A: 1", "h"]).unwrap();
        let accept: Vec<_> = p.request.headers.get_all("accept").iter().collect();
        assert_eq!(accept, ["a", "b"]);
        let p = plan_of(&["-O", "--output-dir", "d", "h/f/r.csv?x=1"]).unwrap();
        assert_eq!(p.output, Some(PathBuf::from("d/r.csv")));
        let p = plan_of(&["-O", "http://h/caf\u{e9}%201.txt#top"]).unwrap();
        assert_eq!(p.output, Some(PathBuf::from("caf\u{e9}%201.txt")));
        assert_eq!(
            plan_of(&["-OJ", "h/f"]).unwrap().header_name,
            Some(Clobber::Refuse)
        );
        let p = plan_of(&["-OJ", "--no-clobber", "h/f"]).unwrap();
        assert_eq!(p.header_name, Some(Clobber::Number));
        assert_eq!(p.file_options.clobber, Clobber::Number);
        let p = plan_of(&[
            "-s", "-s", "-f", "-f", "--url", "h/u", "-X", "PUT", "-X", "POST",
        ]);
        assert_eq!(p.unwrap().request.method, "POST", "the last -X");
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
            &["--max-delayed", "2", "--no-state", "h"],
            &["--parallel", "2", "h"],
            &["--journal", "j", "h"],
            &["--max-body", "lots", "h"],
            &["--state", "memcached://h", "h"],
            &["--state", "redis://h", "--no-state", "h"],
            &["--state", "redis://h:6379/not-a-db", "h"],
            &["-m", "0", "h"],
            &["-I", "-d", "a=1", "h"],
            &["-O", "h/"],
            &["-O", "h"],
            &["-J", "h/x"],
            &["-F", "novalue", "h"],
            &["-F", "a=1", "-d", "b=2", "h"],
            &["-T", "/nonexistent/file", "h"],
            &["-G", "-d", "@/nonexistent/file", "h"],
            &["--url", "h", "h"],
            &["-K", "/nonexistent/curlrc", "h"],
            &[],
        ] {
            assert!(plan_of(args).is_err(), "{args:?}");
        }
    }
}
