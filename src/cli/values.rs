//! Flag values with a type of their own, parsed once by clap so that a bad
//! one is a usage error naming the flag. A value that may hold a credential
//! (`--state`) is refused without being quoted.

use std::path::PathBuf;

use clap::builder::TypedValueParser;
use clap::error::{ContextKind, ContextValue, ErrorKind};

/// Where the outcome line goes (`--outcome`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum OutcomeTo {
    #[default]
    Stderr,
    Stdout,
    Nowhere,
    Append(PathBuf),
}

impl std::str::FromStr for OutcomeTo {
    type Err = String;

    fn from_str(text: &str) -> Result<OutcomeTo, String> {
        Ok(match text {
            "" => return Err("--outcome needs stderr, stdout, none or a file path".into()),
            "stderr" => OutcomeTo::Stderr,
            "stdout" => OutcomeTo::Stdout,
            "none" => OutcomeTo::Nowhere,
            path => OutcomeTo::Append(PathBuf::from(path)),
        })
    }
}

/// `--state URL`: a Redis server, `redis://` or `rediss://`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateTarget {
    pub url: String,
}

impl StateTarget {
    /// The password in the URL, to be masked wherever it could show.
    pub fn password(&self) -> Option<&str> {
        let (_, rest) = self.url.split_once("://")?;
        let (userinfo, _) = rest.rsplit_once('@')?;
        Some(userinfo.rsplit(':').next().unwrap_or(userinfo))
    }

    fn parse(text: &str) -> Result<StateTarget, String> {
        if !(text.starts_with("redis://") || text.starts_with("rediss://")) {
            return Err("--state takes a redis:// or rediss:// URL".into());
        }
        redis::IntoConnectionInfo::into_connection_info(text).map_err(|e| {
            let why = crate::state::redis::words(&e);
            format!("--state is not a usable Redis URL ({why})")
        })?;
        Ok(StateTarget { url: text.into() })
    }
}

/// Parses `--state` without quoting it: the URL may hold a password.
#[derive(Clone, Debug)]
pub struct StateParser;

impl TypedValueParser for StateParser {
    type Value = StateTarget;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<StateTarget, clap::Error> {
        let refuse = |why: String| {
            // A raw message, without the InvalidValue clap would print;
            // the flag is named for the note on an environment default.
            let mut error = clap::Error::raw(ErrorKind::ValueValidation, why).with_cmd(cmd);
            if let Some(arg) = arg {
                error.insert(
                    ContextKind::InvalidArg,
                    ContextValue::String(arg.to_string()),
                );
            }
            error
        };
        let text = value
            .to_str()
            .ok_or_else(|| refuse("--state must be UTF-8".into()))?;
        StateTarget::parse(text).map_err(refuse)
    }
}

/// `--idempotency-key KEY|auto`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyChoice {
    /// A fresh random UUID, or the one a `--task` kept.
    Auto,
    Given(String),
}

impl KeyChoice {
    pub fn parse(text: &str) -> Result<KeyChoice, String> {
        match text {
            "auto" => Ok(KeyChoice::Auto),
            key => super::parse_header_value(key).map(KeyChoice::Given),
        }
    }
}

/// An RFC 6901 JSON Pointer (`--require`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonPointer(pub String);

impl JsonPointer {
    pub fn parse(text: &str) -> Result<JsonPointer, String> {
        if text.is_empty() || text.starts_with('/') {
            Ok(JsonPointer(text.to_string()))
        } else {
            Err(format!(
                "`{text}` is not a JSON Pointer (RFC 6901): it must start with / (e.g. /data/items)"
            ))
        }
    }
}

/// A setting the policy governs, by its flag, for `plan::policy::ceilings` to ask
/// whether the user gave it (a default the policy lowers needs no sentence).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Knob {
    Scope,
    Attempts,
    MaxWait,
    RetryOn,
    Rate,
    MaxConcurrent,
    Breaker,
    RetryBudget,
    MaxDelayed,
}

impl Knob {
    pub fn flag(self) -> &'static str {
        match self {
            Knob::Scope => "--scope",
            Knob::Attempts => "--attempts",
            Knob::MaxWait => "--max-wait",
            Knob::RetryOn => "--retry-on",
            Knob::Rate => "--rate",
            Knob::MaxConcurrent => "--max-concurrent",
            Knob::Breaker => "--breaker",
            Knob::RetryBudget => "--retry-budget",
            Knob::MaxDelayed => "--max-delayed",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_targets() {
        assert_eq!("stdout".parse(), Ok(OutcomeTo::Stdout));
        assert_eq!("none".parse(), Ok(OutcomeTo::Nowhere));
        assert_eq!("o.jsonl".parse(), Ok(OutcomeTo::Append("o.jsonl".into())));
        assert!("".parse::<OutcomeTo>().is_err());
    }

    #[test]
    fn state_targets_keep_their_password_out_of_errors() {
        let t = StateTarget::parse("redis://ops:hunter22@10.0.0.5:6379/2").unwrap();
        assert_eq!(t.password(), Some("hunter22"));
        assert_eq!(StateTarget::parse("redis://h").unwrap().password(), None);
        for bad in ["memcached://u:hunter22@h", "redis://u:hunter22@h:6379/x"] {
            let err = StateTarget::parse(bad).unwrap_err();
            assert!(!err.contains("hunter22"), "{err}");
        }
    }

    #[test]
    fn keys_and_pointers() {
        assert_eq!(KeyChoice::parse("auto"), Ok(KeyChoice::Auto));
        assert_eq!(KeyChoice::parse("k1"), Ok(KeyChoice::Given("k1".into())));
        assert!(KeyChoice::parse("a\nb").is_err());
        assert!(JsonPointer::parse("/a/0").is_ok());
        assert!(JsonPointer::parse("a").is_err());
    }
}
