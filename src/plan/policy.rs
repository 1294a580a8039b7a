//! `--policy FILE`: limits per scope that a command line may tighten but
//! never loosen, so that an agent writing its own flags cannot give itself
//! `--rate 1000/s --attempts 50`. The file is TOML, one `[[scope]]` table
//! per API, with limits by request class (seed 004's read, idempotent write
//! and uncertain write). An unknown key or a bad value is an error naming
//! the file, the line and the key: a policy that is silently half-read
//! protects nothing.

pub use crate::cli::values::Knob;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use crate::rules::retry_budget::{self, BudgetPolicy};
use crate::units::parse_duration;

/// The policy file: its scopes, in the order written.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub scopes: Vec<ScopeRule>,
}

/// One `[[scope]]` table.
#[derive(Debug, Clone, PartialEq)]
pub struct ScopeRule {
    /// What it matches, as `url` serializes it: an origin
    /// (`https://api.example.com/`) or a URL prefix.
    pub matches: String,
    /// Whether `match` is an origin (no path beyond `/`, no query).
    origin_only: bool,
    /// The scope name (as `--scope`); runs of the scope share its state.
    pub name: Option<String>,
    /// The limits of the whole scope.
    pub scope: Limits,
    pub read: Limits,
    pub idempotent_write: Limits,
    pub uncertain_write: Limits,
}

/// Seed 004's request classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// GET, HEAD, OPTIONS, TRACE.
    Read,
    /// PUT, DELETE, or any request sent with an idempotency key (or declared
    /// `--idempotent`).
    IdempotentWrite,
    /// Any other write (POST, PATCH) without a key.
    UncertainWrite,
}

impl Class {
    pub fn of(method: &str, keyed: bool) -> Class {
        match method {
            "GET" | "HEAD" | "OPTIONS" | "TRACE" => Class::Read,
            "PUT" | "DELETE" => Class::IdempotentWrite,
            _ if keyed => Class::IdempotentWrite,
            _ => Class::UncertainWrite,
        }
    }

    fn words(self) -> &'static str {
        match self {
            Class::Read => "reads",
            Class::IdempotentWrite => "idempotent writes",
            Class::UncertainWrite => "uncertain writes",
        }
    }
}

/// The ceilings a policy sets; `None` is no limit from the policy.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Limits {
    pub attempts: Option<u32>,
    pub max_wait: Option<Duration>,
    pub retry_on: Option<Vec<u16>>,
    /// `rate`, as the interval between two requests: a longer one is slower.
    pub rate_interval: Option<Duration>,
    pub max_concurrent: Option<u32>,
    /// `breaker`: at most this many failures before it opens (never off).
    pub breaker: Option<u32>,
    /// `retry_budget`: at most this much earned per success (never off).
    pub retry_budget: Option<BudgetPolicy>,
    pub max_delayed: Option<u32>,
}

/// What the run's flags (or their defaults) ask for, in the governed
/// settings: `None` is "no limit" (no `--max-wait`, no `--rate`, no
/// `--max-concurrent`, `--retry-budget 0`, no `--max-delayed`).
#[derive(Debug, Clone, PartialEq)]
pub struct Requested {
    pub scope: Option<String>,
    pub attempts: u32,
    pub max_wait: Option<Duration>,
    pub retry_on: Vec<u16>,
    pub rate_interval: Option<Duration>,
    pub max_concurrent: Option<u32>,
    /// `--breaker N`; 0 is off.
    pub breaker: u32,
    pub retry_budget: Option<BudgetPolicy>,
    pub max_delayed: Option<u32>,
}

/// What a run may use: `requested`, under the policy of `given` (else the
/// default file, when it exists) for `url` and `class`, and the sentences
/// saying what it overruled. No policy, or none for `url`: as requested.
pub fn govern(
    given: Option<&Path>,
    url: &str,
    class: Class,
    requested: Requested,
    asked: &dyn Fn(Knob) -> bool,
) -> Result<(Requested, Vec<String>), String> {
    let path = given.map(Path::to_path_buf).or_else(Policy::default_path);
    let Some(path) = path else {
        return Ok((requested, Vec::new()));
    };
    let policy = Policy::load(&path)?;
    Ok(match policy.scope_for(url) {
        Some(rule) => ceilings(rule, class, &requested, asked),
        None => (requested, Vec::new()),
    })
}

impl Policy {
    /// Reads and checks the policy file.
    pub fn load(path: &Path) -> Result<Policy, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the policy {}: {e}", path.display()))?;
        Policy::parse(&text, &path.display().to_string())
    }

    /// The default file, `$XDG_CONFIG_HOME/abide/policy.toml` (else
    /// `~/.config/abide/policy.toml`), used when it exists.
    pub fn default_path() -> Option<PathBuf> {
        let non_empty = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        non_empty("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| non_empty("HOME").map(|h| Path::new(&h).join(".config")))
            .map(|base| base.join("abide/policy.toml"))
            .filter(|path| path.is_file())
    }

    /// Parses `text`, read from `file` (for the error messages).
    pub fn parse(text: &str, file: &str) -> Result<Policy, String> {
        let located = |span: Option<Range<usize>>, message: &str| {
            let Some(span) = span else {
                return format!("policy {file}: {message}");
            };
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            match key_at(text, span.start) {
                Some(key) => format!("policy {file}, line {line}, key `{key}`: {message}"),
                None => format!("policy {file}, line {line}: {message}"),
            }
        };
        let raw: RawFile =
            toml::from_str(text).map_err(|e| located(e.span(), e.message().trim()))?;
        let scopes = raw
            .scope
            .into_iter()
            .map(|raw| {
                raw.check()
                    .map_err(|(span, message)| located(Some(span), &message))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Policy { scopes })
    }

    /// The scope whose `match` covers `url`: the longest that does.
    pub fn scope_for(&self, url: &str) -> Option<&ScopeRule> {
        let url = url::Url::parse(url).ok()?;
        self.scopes
            .iter()
            .filter(|rule| rule.covers(&url))
            .max_by_key(|rule| rule.matches.len())
    }
}

/// The key of the `key = value` (or the `[table]`) on the line holding `at`.
fn key_at(text: &str, at: usize) -> Option<String> {
    let start = text[..at.min(text.len())].rfind('\n').map_or(0, |i| i + 1);
    let line = text[start..].lines().next().unwrap_or_default().trim();
    let key = match line.strip_prefix('[') {
        Some(header) => header.trim_matches(['[', ']']).rsplit('.').next()?,
        None => line.split_once('=')?.0,
    };
    Some(key.trim().trim_matches('"').to_string()).filter(|k| !k.is_empty())
}

impl ScopeRule {
    fn covers(&self, url: &url::Url) -> bool {
        let Ok(rule) = url::Url::parse(&self.matches) else {
            return false;
        };
        if self.origin_only {
            return rule.origin() == url.origin();
        }
        let url = url.as_str();
        url.strip_prefix(&self.matches).is_some_and(|rest| {
            self.matches.ends_with('/') || rest.is_empty() || rest.starts_with(['/', '?', '#'])
        })
    }

    /// The ceilings for one class: the class's own, over the scope's.
    pub fn limits(&self, class: Class) -> Limits {
        let own = match class {
            Class::Read => &self.read,
            Class::IdempotentWrite => &self.idempotent_write,
            Class::UncertainWrite => &self.uncertain_write,
        };
        Limits {
            attempts: own.attempts,
            max_wait: own.max_wait,
            retry_on: own.retry_on.clone(),
            ..self.scope.clone()
        }
    }
}

/// What the run may use under `rule` for a request of `class`: each setting
/// the lower of what was asked and the policy's ceiling (a missing key is
/// no ceiling), and one sentence for each setting the user gave (`given`)
/// and the policy lowered, for the outcome's reason.
pub fn ceilings(
    rule: &ScopeRule,
    class: Class,
    requested: &Requested,
    given: &dyn Fn(Knob) -> bool,
) -> (Requested, Vec<String>) {
    let limits = rule.limits(class);
    let whose = match &rule.name {
        Some(name) => format!("the policy of scope {name}"),
        None => format!("the policy for {}", rule.matches),
    };
    let mut sentences = Vec::new();
    let mut effective = requested.clone();

    if let Some(name) = &rule.name
        && requested.scope.as_ref() != Some(name)
    {
        if let Some(asked) = &requested.scope
            && given(Knob::Scope)
        {
            sentences.push(format!(
                "the policy puts requests to {} in scope {name}, so --scope {asked} was overruled.",
                rule.matches
            ));
        }
        effective.scope = Some(name.clone());
    }
    let mut said = |knob: Knob, asked: String, kept: String| {
        if given(knob) {
            sentences.push(format!(
                "{whose} allows {} at most {kept}, so {} {asked} was lowered to it.",
                class.words(),
                knob.flag()
            ));
        }
    };
    if let Some(most) = limits.attempts
        && requested.attempts > most
    {
        said(
            Knob::Attempts,
            requested.attempts.to_string(),
            most.to_string(),
        );
        effective.attempts = most;
    }
    if let Some(most) = limits.max_wait
        && requested.max_wait.is_none_or(|w| w > most)
    {
        let asked = requested
            .max_wait
            .map_or("(none)".into(), crate::units::span);
        said(Knob::MaxWait, asked, crate::units::span(most));
        effective.max_wait = Some(most);
    }
    if let Some(allowed) = &limits.retry_on {
        let (kept, dropped): (Vec<u16>, Vec<u16>) =
            requested.retry_on.iter().partition(|s| allowed.contains(s));
        if !dropped.is_empty() {
            let list = |codes: &[u16]| match codes {
                [] => "none".to_string(),
                _ => codes
                    .iter()
                    .map(u16::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            };
            said(Knob::RetryOn, list(&requested.retry_on), list(allowed));
            effective.retry_on = kept;
        }
    }
    if let Some(slowest) = limits.rate_interval
        && requested.rate_interval.is_none_or(|i| i < slowest)
    {
        let per_second = |i: Duration| format!("{:.3}/s", 1.0 / i.as_secs_f64());
        let asked = requested.rate_interval.map_or("(none)".into(), per_second);
        said(Knob::Rate, asked, per_second(slowest));
        effective.rate_interval = Some(slowest);
    }
    if let Some(most) = limits.max_concurrent
        && requested.max_concurrent.is_none_or(|n| n > most)
    {
        let asked = requested
            .max_concurrent
            .map_or("(none)".into(), |n| n.to_string());
        said(Knob::MaxConcurrent, asked, most.to_string());
        effective.max_concurrent = Some(most);
    }
    if let Some(most) = limits.breaker
        && (requested.breaker == 0 || requested.breaker > most)
    {
        said(
            Knob::Breaker,
            requested.breaker.to_string(),
            most.to_string(),
        );
        effective.breaker = most;
    }
    if let Some(most) = limits.retry_budget
        && requested
            .retry_budget
            .is_none_or(|b| b.per_success > most.per_success)
    {
        let percent = |b: Option<BudgetPolicy>| match b {
            None => "0".to_string(),
            Some(b) => format!("{}%", f64::from(b.per_success) / 10.0),
        };
        said(
            Knob::RetryBudget,
            percent(requested.retry_budget),
            percent(Some(most)),
        );
        effective.retry_budget = Some(most);
    }
    if let Some(most) = limits.max_delayed
        && requested.max_delayed.is_none_or(|n| n > most)
    {
        let asked = requested
            .max_delayed
            .map_or("(none)".into(), |n| n.to_string());
        said(Knob::MaxDelayed, asked, most.to_string());
        effective.max_delayed = Some(most);
    }
    (effective, sentences)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    scope: Vec<RawScope>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScope {
    #[serde(rename = "match")]
    matches: Spanned<String>,
    name: Option<Spanned<String>>,
    rate: Option<Spanned<String>>,
    max_concurrent: Option<Spanned<u32>>,
    breaker: Option<Spanned<u32>>,
    retry_budget: Option<Spanned<String>>,
    max_delayed: Option<u32>,
    read: Option<RawClass>,
    idempotent_write: Option<RawClass>,
    uncertain_write: Option<RawClass>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClass {
    attempts: Option<Spanned<u32>>,
    max_wait: Option<Spanned<String>>,
    retry_on: Option<Spanned<Vec<u16>>>,
}

type Bad = (Range<usize>, String);

/// A value checked by `parse`, or its span and what is wrong with it.
fn checked<T, U>(
    value: Option<Spanned<T>>,
    parse: impl FnOnce(&T) -> Result<U, String>,
) -> Result<Option<U>, Bad> {
    value
        .map(|v| parse(v.get_ref()).map_err(|e| (v.span(), e)))
        .transpose()
}

impl RawClass {
    fn check(raw: Option<RawClass>) -> Result<Limits, Bad> {
        let Some(raw) = raw else {
            return Ok(Limits::default());
        };
        Ok(Limits {
            attempts: checked(raw.attempts, |&n| {
                (n >= 1)
                    .then_some(n)
                    .ok_or_else(|| "attempts must be at least 1".to_string())
            })?,
            max_wait: checked(raw.max_wait, |t| parse_duration(t))?,
            retry_on: checked(raw.retry_on, |codes| {
                match codes.iter().find(|c| !(100..600).contains(*c)) {
                    Some(bad) => Err(format!("{bad} is not an HTTP status (100-599)")),
                    None => Ok(codes.clone()),
                }
            })?,
            ..Limits::default()
        })
    }
}

impl RawScope {
    fn check(self) -> Result<ScopeRule, Bad> {
        let span = self.matches.span();
        let text = self.matches.into_inner();
        let url = url::Url::parse(&text)
            .ok()
            .filter(|u| u.has_host() && matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| {
                (
                    span.clone(),
                    format!("`{text}` is not an http(s) origin or URL prefix"),
                )
            })?;
        if url.fragment().is_some() {
            return Err((span, "a match cannot hold a #fragment".into()));
        }
        let scope = Limits {
            rate_interval: checked(self.rate, |t| crate::cli::parse_rate(t).map(|r| r.interval))?,
            max_concurrent: checked(self.max_concurrent, |&n| {
                (n >= 1)
                    .then_some(n)
                    .ok_or_else(|| "max_concurrent must be at least 1".to_string())
            })?,
            breaker: checked(self.breaker, |&n| {
                (n >= 1).then_some(n).ok_or_else(|| {
                    "breaker must be at least 1 (a policy cannot turn it off)".to_string()
                })
            })?,
            retry_budget: checked(self.retry_budget, |t| {
                retry_budget::parse_retry_budget(t)?.ok_or_else(|| {
                    "a policy's retry_budget must be above 0 (it cannot turn it off)".to_string()
                })
            })?,
            max_delayed: self.max_delayed,
            ..Limits::default()
        };
        let name = checked(self.name, |n| {
            (!n.trim().is_empty())
                .then(|| n.clone())
                .ok_or_else(|| "name cannot be empty".to_string())
        })?;
        Ok(ScopeRule {
            origin_only: url.path() == "/" && url.query().is_none(),
            matches: url.to_string(),
            name,
            scope,
            read: RawClass::check(self.read)?,
            idempotent_write: RawClass::check(self.idempotent_write)?,
            uncertain_write: RawClass::check(self.uncertain_write)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ISSUE: &str = r#"
[[scope]]
match = "https://api.example.com"   # an origin, or a URL prefix
name = "example"                     # the scope name (as --scope)
rate = "5/s"
max_concurrent = 2
breaker = 5
retry_budget = "20%"
max_delayed = 25
[scope.read]              # GET, HEAD, OPTIONS
attempts = 4
max_wait = "90s"
retry_on = [408, 429, 500, 502, 503, 504]
[scope.idempotent_write]  # PUT, DELETE, or any request with a key
attempts = 3
max_wait = "120s"
retry_on = [408, 429, 502, 503, 504]
[scope.uncertain_write]   # POST, PATCH without a key
attempts = 1
max_wait = "0s"

[[scope]]
match = "https://api.example.com/v1/batch"
name = "batch"
[scope.read]
attempts = 2
"#;

    fn issue() -> Policy {
        Policy::parse(ISSUE, "policy.toml").unwrap()
    }

    fn loose() -> Requested {
        Requested {
            scope: None,
            attempts: 50,
            max_wait: None,
            retry_on: vec![408, 429, 500, 502, 503, 504],
            rate_interval: Some(Duration::from_millis(1)),
            max_concurrent: None,
            breaker: 0,
            retry_budget: None,
            max_delayed: None,
        }
    }

    #[test]
    fn the_issues_example_parses() {
        let p = issue();
        assert_eq!(p.scopes.len(), 2);
        let s = &p.scopes[0];
        assert_eq!(s.matches, "https://api.example.com/");
        assert_eq!(s.name.as_deref(), Some("example"));
        assert_eq!(s.scope.rate_interval, Some(Duration::from_millis(200)));
        assert_eq!(
            s.scope.retry_budget,
            Some(BudgetPolicy { per_success: 200 })
        );
        assert_eq!(s.scope.max_delayed, Some(25));
        let write = s.limits(Class::UncertainWrite);
        assert_eq!(write.attempts, Some(1));
        assert_eq!(write.max_wait, Some(Duration::ZERO));
        assert_eq!(write.retry_on, None, "a missing key is no limit");
        assert_eq!(
            write.max_concurrent,
            Some(2),
            "the scope's limits hold for every class"
        );
        assert_eq!(Policy::parse("", "empty.toml").unwrap().scopes, vec![]);
    }

    #[test]
    fn classes_of_requests() {
        assert_eq!(Class::of("GET", false), Class::Read);
        assert_eq!(Class::of("HEAD", true), Class::Read);
        assert_eq!(Class::of("PUT", false), Class::IdempotentWrite);
        assert_eq!(Class::of("POST", true), Class::IdempotentWrite);
        assert_eq!(Class::of("POST", false), Class::UncertainWrite);
        assert_eq!(Class::of("PATCH", false), Class::UncertainWrite);
    }

    #[test]
    fn the_longest_match_wins() {
        let p = issue();
        let name = |url: &str| p.scope_for(url).and_then(|s| s.name.clone());
        assert_eq!(
            name("https://api.example.com/v1/items?x=1").as_deref(),
            Some("example")
        );
        assert_eq!(
            name("https://API.example.com:443/").as_deref(),
            Some("example")
        );
        assert_eq!(
            name("https://api.example.com/v1/batch").as_deref(),
            Some("batch")
        );
        assert_eq!(
            name("https://api.example.com/v1/batch/7").as_deref(),
            Some("batch")
        );
        assert_eq!(
            name("https://api.example.com/v1/batch?a=1").as_deref(),
            Some("batch")
        );
        assert_eq!(
            name("https://api.example.com/v1/batches").as_deref(),
            Some("example")
        );
        assert_eq!(name("http://api.example.com/"), None, "another origin");
        assert_eq!(name("https://api.example.com:8443/"), None);
        assert_eq!(name("https://api.example.com.evil/"), None);
        assert_eq!(name("not a url"), None);
    }

    #[test]
    fn flags_may_ask_for_less_never_more() {
        let p = issue();
        let rule = &p.scopes[0];
        let all = |_: Knob| true;
        let (e, said) = ceilings(rule, Class::Read, &loose(), &all);
        assert_eq!(
            e,
            Requested {
                scope: Some("example".into()),
                attempts: 4,
                max_wait: Some(Duration::from_secs(90)),
                retry_on: vec![408, 429, 500, 502, 503, 504],
                rate_interval: Some(Duration::from_millis(200)),
                max_concurrent: Some(2),
                breaker: 5,
                retry_budget: Some(BudgetPolicy { per_success: 200 }),
                max_delayed: Some(25),
            }
        );
        assert_eq!(said.len(), 7, "{said:#?}");
        assert_eq!(
            said[0],
            "the policy of scope example allows reads at most 4, so --attempts 50 was lowered to it."
        );
        assert!(
            said.iter().any(|s| s.contains("--rate 1000.000/s")),
            "{said:#?}"
        );

        // Asking for less is kept as asked, without a word.
        let strict = Requested {
            scope: Some("example".into()),
            attempts: 2,
            max_wait: Some(Duration::from_secs(5)),
            retry_on: vec![429],
            rate_interval: Some(Duration::from_secs(1)),
            max_concurrent: Some(1),
            breaker: 2,
            retry_budget: Some(BudgetPolicy { per_success: 100 }),
            max_delayed: Some(3),
        };
        assert_eq!(
            ceilings(rule, Class::Read, &strict, &all),
            (strict.clone(), vec![])
        );

        // Fewer statuses: those outside the policy's list are dropped.
        let (e, said) = ceilings(rule, Class::IdempotentWrite, &loose(), &all);
        assert_eq!(e.retry_on, [408, 429, 502, 503, 504]);
        assert!(
            said.iter()
                .any(|s| s.contains("--retry-on 408,429,500,502,503,504"))
        );
        let (e, _) = ceilings(rule, Class::UncertainWrite, &loose(), &all);
        assert_eq!((e.attempts, e.max_wait), (1, Some(Duration::ZERO)));
    }

    #[test]
    fn defaults_are_lowered_without_a_sentence() {
        let p = issue();
        let only_attempts = |k: Knob| k == Knob::Attempts;
        let (e, said) = ceilings(&p.scopes[0], Class::Read, &loose(), &only_attempts);
        assert_eq!(e.max_concurrent, Some(2));
        assert_eq!(said.len(), 1, "{said:?}");
        // A scope given on the command line is overruled by the policy's name.
        let asked = Requested {
            scope: Some("mine".into()),
            ..loose()
        };
        let (e, said) = ceilings(&p.scopes[1], Class::Read, &asked, &|k| k == Knob::Scope);
        assert_eq!(e.scope.as_deref(), Some("batch"));
        assert_eq!(
            said,
            [
                "the policy puts requests to https://api.example.com/v1/batch in scope batch, \
                 so --scope mine was overruled."
            ]
        );
        // A policy without ceilings changes nothing.
        let bare = Policy::parse("[[scope]]\nmatch = \"https://h\"\n", "p").unwrap();
        assert_eq!(
            ceilings(&bare.scopes[0], Class::Read, &loose(), &|_| true),
            (loose(), vec![])
        );
    }

    #[test]
    fn errors_name_the_file_the_line_and_the_key() {
        for (text, want) in [
            (
                "[[scope]]\nmatch = \"https://h\"\nrates = \"5/s\"\n",
                "policy p.toml, line 3, key `rates`: unknown field `rates`",
            ),
            (
                "[[scope]]\nmatch = \"https://h\"\nrate = \"fast\"\n",
                "policy p.toml, line 3, key `rate`: `fast` is not a rate N/UNIT",
            ),
            (
                "[[scope]]\nmatch = \"https://h\"\n[scope.read]\nattempts = 0\n",
                "policy p.toml, line 4, key `attempts`: attempts must be at least 1",
            ),
            (
                "[[scope]]\nmatch = \"https://h\"\n[scope.read]\nmax_wait = \"soon\"\n",
                "policy p.toml, line 4, key `max_wait`: unknown unit `soon`",
            ),
            (
                "[[scope]]\nmatch = \"https://h\"\n[scope.read]\nretry_on = [429, 700]\n",
                "policy p.toml, line 4, key `retry_on`: 700 is not an HTTP status",
            ),
            (
                "[[scope]]\nmatch = \"https://h\"\n[scope.reads]\nattempts = 2\n",
                "policy p.toml, line 3, key `reads`: unknown field `reads`",
            ),
            (
                "[[scope]]\nmatch = \"ftp://h\"\n",
                "policy p.toml, line 2, key `match`: `ftp://h` is not an http(s) origin",
            ),
            (
                "[[scope]]\nmatch = \"https://h\"\nretry_budget = \"0\"\n",
                "policy p.toml, line 3, key `retry_budget`: a policy's retry_budget must be above 0",
            ),
            (
                "[[scope]]\nmatch = \"https://h\"\nbreaker = -1\n",
                "policy p.toml, line 3, key `breaker`: ",
            ),
            (
                "[[scope]]\nmatch = \"https://h\"\nmax_delayed = \"x\"\n",
                "policy p.toml, line 3, key `max_delayed`: ",
            ),
            ("[[scope]]\nname = \"n\"\n", "policy p.toml, line 1"),
            ("[[scope]\nmatch = 1\n", "policy p.toml, line 1"),
            (
                "retry = 3\n",
                "policy p.toml, line 1, key `retry`: unknown field `retry`",
            ),
        ] {
            let e = Policy::parse(text, "p.toml").unwrap_err();
            assert!(e.starts_with(want), "{text:?}\n got: {e}\nwant: {want}");
        }
    }

    #[test]
    fn a_missing_file_is_named() {
        let e = Policy::load(Path::new("/nonexistent/abide-policy.toml")).unwrap_err();
        assert!(e.contains("/nonexistent/abide-policy.toml"), "{e}");
    }
}
