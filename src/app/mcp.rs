//! `abide mcp`: the agent tool as a Model Context Protocol server on stdio.
//!
//! One tool, `http_request`. Each call runs this same binary as
//! `abide --agent` in a child process: the server's own flags first (limits,
//! scope, credentials), then what the model asked for, so that a call goes
//! through exactly the code, the scope state and the redaction of a single
//! run, and the model's arguments can only narrow what the operator allowed.
//! The child's one JSON object is the result. Cancelling a call sends its
//! child SIGTERM: it stops its wait or request, gives back what it held in
//! the scope, and ends.

use std::collections::BTreeSet;
use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::io::AsyncWriteExt;

use crate::cli::McpArgs;
use crate::report::agent::AgentObject;
use crate::report::outcome::Line;

const TOOL: &str = "http_request";

/// How long a cancelled call's child has to end cleanly before it is killed.
const CANCEL_GRACE: Duration = Duration::from_secs(2);

pub fn run(args: &McpArgs) -> Result<ExitCode> {
    let server = match Server::new(args) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("abide mcp: {e:#}");
            return Ok(ExitCode::from(2));
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the MCP server's runtime")?;
    runtime.block_on(async move {
        let running = server
            .serve(rmcp::transport::stdio())
            .await
            .context("the MCP client did not initialize")?;
        running.waiting().await.context("the MCP session failed")?;
        Ok(ExitCode::SUCCESS)
    })
}

/// What the operator allowed, checked once at start.
#[derive(Debug, Clone)]
struct Server {
    allow_writes: bool,
    allow_hosts: Vec<String>,
    flags: Arc<Vec<String>>,
    /// Lower-case names of the headers the operator's flags set.
    operator_headers: BTreeSet<String>,
    max_body: u64,
}

impl Server {
    fn new(args: &McpArgs) -> Result<Server> {
        let mut allow_writes = args.allow_writes;
        let mut allow_hosts = args.allow_hosts.clone();
        // `abide mcp --rate 5/s --allow-host x`: once clap meets an abide
        // flag, everything after it is taken as abide's; take ours back.
        let mut flags = Vec::new();
        let mut rest = args.flags.iter();
        while let Some(flag) = rest.next() {
            match flag.as_str() {
                "--allow-writes" => allow_writes = true,
                "--allow-host" => match rest.next() {
                    Some(pattern) => allow_hosts.push(pattern.clone()),
                    None => bail!("--allow-host needs a PATTERN"),
                },
                _ => match flag.strip_prefix("--allow-host=") {
                    Some(pattern) => allow_hosts.push(pattern.to_string()),
                    None => flags.push(flag.clone()),
                },
            }
        }
        // Every call is an agent run; clap takes --agent once.
        flags.retain(|f| f != "--agent");
        // The operator's flags must parse as a run of abide would.
        let probe = ["abide"]
            .into_iter()
            .map(str::to_string)
            .chain(flags.iter().cloned())
            .chain(["--agent".to_string(), "http://flags.invalid/".to_string()]);
        let cli = crate::cli::parse_from(probe).map_err(|e| {
            let rendered = e.render().to_string();
            let first = rendered.lines().next().unwrap_or_default().to_string();
            anyhow::anyhow!("{}", first.trim_start_matches("error: "))
        })?;
        let taken_from_the_model = [
            (cli.request.method.is_some(), "-X/--request"),
            (!cli.request.data.is_empty(), "-d/--data"),
            (!cli.request.data_binary.is_empty(), "--data-binary"),
            (!cli.request.data_parts.is_empty(), "--data-*"),
            (!cli.request.form_parts.is_empty(), "-F/--form"),
            (cli.request.upload_file.is_some(), "-T/--upload-file"),
            (cli.request.get, "-G/--get"),
            (!cli.request.json.is_empty(), "--json"),
            (cli.output.output.is_some(), "-o/--output"),
            (cli.output.remote_name, "-O/--remote-name"),
            (cli.policy.idempotency_key.is_some(), "--idempotency-key"),
            (cli.agent.task.is_some(), "--task"),
            (cli.agent.check.is_some(), "--check"),
        ];
        if let Some((_, flag)) = taken_from_the_model.iter().find(|(given, _)| *given) {
            bail!("{flag} comes from each call's arguments, not from the server's flags");
        }
        let operator_headers = cli
            .request
            .headers
            .iter()
            .filter_map(|h| {
                h.split_once(':')
                    .map(|(name, _)| name.trim().to_ascii_lowercase())
            })
            .collect();
        // Each call says its own --max-body (at most the operator's), and
        // clap takes it once.
        let flags = without_value(flags, "--max-body");
        Ok(Server {
            allow_writes,
            allow_hosts: allow_hosts.iter().map(|h| h.to_ascii_lowercase()).collect(),
            flags: Arc::new(flags),
            operator_headers,
            max_body: cli.agent.max_body,
        })
    }

    /// The child's command line and standard input for one call, or why the
    /// call is refused unsent.
    fn command(&self, call: &Call) -> Result<(Vec<String>, Option<Vec<u8>>), Refusal> {
        let host = host_of(&call.url).ok_or_else(|| Refusal {
            reason: format!(
                "`{}` is not an http:// or https:// URL",
                crate::redact::url(&call.url)
            ),
            instruction: "Call again with an absolute http:// or https:// URL.".into(),
        })?;
        if !self.allow_hosts.is_empty() && !self.allow_hosts.iter().any(|p| host_matches(p, &host))
        {
            return Err(Refusal {
                reason: format!("this server may not reach {host}"),
                instruction: format!(
                    "Do not call {host} with this tool; the hosts it may reach are: {}.",
                    self.allow_hosts.join(", ")
                ),
            });
        }
        // The child refuses a check of another origin; only its form is
        // seen here (the key's placeholder is no part of a URI).
        if let Some(check) = &call.check
            && host_of(&check.replace(crate::plan::check::KEY_PLACEHOLDER, "k")).is_none()
        {
            return Err(Refusal {
                reason: format!(
                    "the check `{}` is not an http:// or https:// URL",
                    crate::redact::url(check)
                ),
                instruction: "Call again with check an absolute URL on the request's own origin."
                    .into(),
            });
        }
        if call.body.is_some() && call.json.is_some() {
            return Err(Refusal {
                reason: "both body and json were given".into(),
                instruction: "Call again with either body (a string) or json, not both.".into(),
            });
        }
        let has_body = call.body.is_some() || call.json.is_some();
        let method = call
            .method
            .clone()
            .unwrap_or_else(|| if has_body { "POST" } else { "GET" }.to_string())
            .to_ascii_uppercase();
        if !self.allow_writes && !matches!(method.as_str(), "GET" | "HEAD" | "OPTIONS") {
            return Err(Refusal {
                reason: format!("{method} is a write, and this server was started without --allow-writes"),
                instruction: "Only GET, HEAD and OPTIONS are allowed here; do not retry this write with this tool.".into(),
            });
        }
        let mut args: Vec<String> = self.flags.iter().cloned().collect();
        args.extend(["--agent".to_string(), format!("--request={method}")]);
        for (name, value) in call.headers.iter().flatten() {
            if self
                .operator_headers
                .contains(&name.trim().to_ascii_lowercase())
            {
                return Err(Refusal {
                    reason: format!("the {name} header is set by this server's operator"),
                    instruction: format!(
                        "Call again without the {name} header; the server sends its own."
                    ),
                });
            }
            args.push(format!("--header={name}: {value}"));
        }
        // Bodies go through stdin, never as an argument: `@file` in an
        // argument would read a file of this machine.
        let stdin = match (&call.body, &call.json) {
            (Some(body), _) => {
                args.push("--data-binary=@-".into());
                Some(body.clone().into_bytes())
            }
            (_, Some(json)) => {
                args.push("--json=@-".into());
                Some(json.to_string().into_bytes())
            }
            _ => None,
        };
        if let Some(key) = &call.idempotency_key {
            args.push(format!("--idempotency-key={key}"));
        }
        if let Some(task) = &call.task {
            args.push(format!("--task={task}"));
        }
        if let Some(check) = &call.check {
            args.push(format!("--check={check}"));
        }
        for pointer in call.require.iter().flatten() {
            args.push(format!("--require={pointer}"));
        }
        let max_body = call
            .max_body
            .map_or(self.max_body, |m| m.min(self.max_body));
        args.push(format!("--max-body={max_body}"));
        args.extend(["--".to_string(), call.url.clone()]);
        Ok((args, stdin))
    }

    /// Runs one call's child to its end, or until the client cancels it.
    async fn call(
        &self,
        call: Call,
        context: &RequestContext<RoleServer>,
    ) -> Result<Value, ErrorData> {
        let (args, stdin) = match self.command(&call) {
            Ok(command) => command,
            Err(refusal) => return Ok(refusal.object()),
        };
        let exe = std::env::current_exe().map_err(|e| {
            ErrorData::internal_error(format!("cannot find abide itself: {e}"), None)
        })?;
        let mut child = tokio::process::Command::new(exe)
            .args(&args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| ErrorData::internal_error(format!("cannot start abide: {e}"), None))?;
        if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
            // A child that ended early (a usage error) closes its end: its
            // own answer says why.
            let _ = pipe.write_all(&bytes).await;
        }
        let pid = child.id();
        let output = child.wait_with_output();
        tokio::pin!(output);
        let output = tokio::select! {
            output = &mut output => output,
            () = context.ct.cancelled() => {
                if let Some(pid) = pid.and_then(|p| libc::pid_t::try_from(p).ok()) {
                    // SAFETY: kill(2) on our own child's pid; it has not
                    // been reaped, since its wait is still pending here.
                    unsafe { libc::kill(pid, libc::SIGTERM) };
                }
                // Dropping the wait after the grace kills the child outright.
                let _ = tokio::time::timeout(CANCEL_GRACE, &mut output).await;
                return Err(ErrorData::internal_error("the call was cancelled", None));
            }
        };
        let output =
            output.map_err(|e| ErrorData::internal_error(format!("abide failed: {e}"), None))?;
        serde_json::from_slice(&output.stdout).map_err(|_| {
            ErrorData::internal_error(
                format!("abide ended ({}) without its JSON answer", output.status),
                None,
            )
        })
    }
}

/// `flags` without `name VALUE` and `name=VALUE`.
fn without_value(flags: Vec<String>, name: &str) -> Vec<String> {
    let mut kept = Vec::with_capacity(flags.len());
    let mut flags = flags.into_iter();
    while let Some(flag) = flags.next() {
        if flag == name {
            flags.next();
        } else if !flag
            .strip_prefix(name)
            .is_some_and(|rest| rest.starts_with('='))
        {
            kept.push(flag);
        }
    }
    kept
}

/// A call refused before anything was sent.
#[derive(Debug)]
struct Refusal {
    reason: String,
    instruction: String,
}

impl Refusal {
    /// The same object a refused `abide --agent` run answers with.
    fn object(&self) -> Value {
        let mut line = Line::usage_error(&self.reason);
        line.reason = format!("Refused: {}.", self.reason);
        line.instruction = self.instruction.clone();
        let object = AgentObject {
            line: &line,
            body: Value::Null,
            body_truncated: false,
            body_encoding: None,
            headers: Map::new(),
        };
        serde_json::to_value(object).expect("the agent object always serializes")
    }
}

/// The arguments of one `http_request` call.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Call {
    url: String,
    method: Option<String>,
    headers: Option<std::collections::BTreeMap<String, String>>,
    body: Option<String>,
    json: Option<Value>,
    idempotency_key: Option<String>,
    task: Option<String>,
    check: Option<String>,
    require: Option<Vec<String>>,
    max_body: Option<u64>,
}

/// The host of an absolute http(s) URL, lower-case, without brackets.
fn host_of(url: &str) -> Option<String> {
    let uri: ureq::http::Uri = url.parse().ok()?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) {
        return None;
    }
    let host = uri.host()?.trim_start_matches('[').trim_end_matches(']');
    Some(host.trim_end_matches('.').to_ascii_lowercase())
}

/// `api.example.com` matches itself; `*.example.com` matches every name
/// below example.com, not example.com itself.
fn host_matches(pattern: &str, host: &str) -> bool {
    match pattern.strip_prefix("*.") {
        Some(domain) => host
            .strip_suffix(domain)
            .is_some_and(|sub| sub.ends_with('.') && sub.len() > 1),
        None => pattern.trim_end_matches('.') == host,
    }
}

const DESCRIPTION: &str = "Make one HTTP request. It retries by itself when that is safe and \
waits exactly as long as the server asks, sharing the server's limits with every other call. \
Read `ok` and `outcome` first, then `body`. If `ok` is false, do what `instruction` says: when \
`next_allowed_at` is set, do not call the same endpoint again before that time; NON_RETRYABLE \
and INVALID_RESPONSE need a changed request, not a retry; SIDE_EFFECT_UNKNOWN means a write may \
have happened, so check the resource before sending it again; NO_PROGRESS means the same failing \
request was sent too often; NEEDS_HUMAN means no retry or wait can settle it (a write that may or \
may not have happened, or a task that used up its attempts): stop, do not send that request again \
under any task, and hand the `reason` to a person. For a write that must happen once, pass \
idempotency_key \"auto\" and a task id that stays the same when you try the same write again; a \
task id names one write, so another write needs a new one (a different request under a used task \
id is refused, USAGE_ERROR). Give a write `check` too, a URL on the request's own origin where a \
GET finds what the write made (`{idempotency_key}` in it becomes the key sent): when the write's \
answer is lost, it is asked before anything is sent again, 2xx meaning the write happened, 404 \
or 410 that it did not (it is sent again with the same key), anything else NEEDS_HUMAN. \
`reconciled` true means a write whose answer was lost was found to have happened: do not send it \
again; `operation_id` is the provider's id of what it created.";

fn input_schema() -> JsonObject {
    let schema = json!({
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "Absolute http:// or https:// URL."},
            "method": {"type": "string", "description": "HTTP method; default GET, or POST with a body."},
            "headers": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "Extra request headers, name to value."
            },
            "body": {"type": "string", "description": "Request body, sent as given."},
            "json": {"description": "A JSON body; sets Content-Type and Accept to application/json."},
            "idempotency_key": {
                "type": "string",
                "description": "\"auto\" for a generated Idempotency-Key (kept per task), or the key itself."
            },
            "task": {
                "type": "string",
                "description": "A stable id of this one write: a retry of the same write sends the same key; another write needs another id."
            },
            "check": {
                "type": "string",
                "description": "For a write: a URL on the request's own origin that a GET finds the write's result at ({idempotency_key} becomes the key sent), asked when the write's answer is lost before it is sent again: 2xx it happened, 404 or 410 it did not, else NEEDS_HUMAN."
            },
            "require": {
                "type": "array",
                "items": {"type": "string"},
                "description": "RFC 6901 JSON pointers a 2xx body must hold, else INVALID_RESPONSE."
            },
            "max_body": {
                "type": "integer",
                "minimum": 0,
                "description": "Largest body returned, in bytes (never above the server's limit)."
            }
        },
        "required": ["url"],
        "additionalProperties": false
    });
    match schema {
        Value::Object(map) => map,
        _ => unreachable!("a JSON object literal"),
    }
}

/// The agent object's fields. A unit test checks that a real object has
/// no field this schema does not name.
fn output_schema() -> JsonObject {
    let nullable = |kind: &str| json!({"type": [kind, "null"]});
    let schema = json!({
        "type": "object",
        "properties": {
            "outcome": {"type": "string"},
            "ok": {"type": "boolean"},
            "exit_code": {"type": "integer"},
            "method": nullable("string"),
            "url": nullable("string"),
            "scope": nullable("string"),
            "status": nullable("integer"),
            "attempts": {"type": "integer"},
            "elapsed_ms": {"type": "integer"},
            "waited_ms": {"type": "integer"},
            "retry_after_s": nullable("number"),
            "next_allowed_at": {
                "type": ["string", "null"],
                "description": "RFC 3339 UTC time before which the endpoint must not be called again."
            },
            "idempotency_key": nullable("string"),
            "reason": {"type": "string"},
            "instruction": {"type": "string"},
            "error": nullable("string"),
            "history": {"type": "array", "items": {"type": "object"}},
            "resumed_bytes": {"type": "integer"},
            "reconciled": {
                "type": "boolean",
                "description": "true: a write whose answer was lost was checked and had happened."
            },
            "operation_id": {
                "type": ["string", "null"],
                "description": "The provider's id (or URL) of what the write created."
            },
            "body": {},
            "body_truncated": {"type": "boolean"},
            "body_encoding": {
                "type": ["string", "null"],
                "description": "\"base64\" when the body is not UTF-8 text."
            },
            "headers": {"type": "object", "additionalProperties": {"type": "string"}}
        },
        "required": ["outcome", "ok", "reason", "instruction", "next_allowed_at"]
    });
    match schema {
        Value::Object(map) => map,
        _ => unreachable!("a JSON object literal"),
    }
}

fn tool(server: &Server) -> Tool {
    let annotations = ToolAnnotations::from_raw(
        Some("HTTP request that honours Retry-After".into()),
        Some(!server.allow_writes),
        Some(server.allow_writes),
        Some(false),
        Some(true),
    );
    Tool::new(TOOL, DESCRIPTION, input_schema())
        .with_raw_output_schema(Arc::new(output_schema()))
        .with_annotations(annotations)
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("abide", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "http_request makes HTTP requests that wait as long as the server asks; \
                 its result says when the endpoint may be called again.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![tool(self)]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != TOOL {
            return Err(ErrorData::invalid_params(
                format!("no tool named {}", request.name),
                None,
            ));
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let call: Call = serde_json::from_value(arguments)
            .map_err(|e| ErrorData::invalid_params(format!("bad arguments: {e}"), None))?;
        let object = self.call(call, &context).await?;
        let ok = object.get("ok").and_then(Value::as_bool).unwrap_or(false);
        Ok(if ok {
            CallToolResult::structured(object)
        } else {
            CallToolResult::structured_error(object)
        }
        .into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(flags: &[&str]) -> Result<Server> {
        Server::new(&McpArgs {
            allow_writes: false,
            allow_hosts: Vec::new(),
            flags: flags.iter().map(|f| f.to_string()).collect(),
        })
    }

    fn call(value: Value) -> Call {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn host_patterns() {
        let rows = [
            ("api.example.com", "api.example.com", true),
            ("api.example.com", "example.com", false),
            ("*.example.com", "api.example.com", true),
            ("*.example.com", "a.b.example.com", true),
            ("*.example.com", "example.com", false),
            ("*.example.com", "badexample.com", false),
            ("127.0.0.1", "127.0.0.1", true),
            ("::1", "::1", true),
        ];
        for (pattern, host, expected) in rows {
            assert_eq!(host_matches(pattern, host), expected, "{pattern} {host}");
        }
        assert_eq!(host_of("http://[::1]:8080/x").as_deref(), Some("::1"));
        assert_eq!(
            host_of("HTTPS://API.Example.com./").as_deref(),
            Some("api.example.com")
        );
        assert_eq!(host_of("ftp://example.com/"), None);
        assert_eq!(host_of("example.com/x"), None);
    }

    #[test]
    fn the_operators_flags_come_first_and_the_models_cannot_add_flags() {
        let s = server(&[
            "--rate",
            "5/s",
            "--allow-host",
            "h",
            "-H",
            "Authorization: Bearer t",
        ])
        .unwrap();
        assert_eq!(s.allow_hosts, ["h"]);
        let (args, stdin) = s
            .command(&call(
                json!({"url": "http://h/x", "headers": {"X-A": "-v"}, "max_body": 1 << 30}),
            ))
            .unwrap();
        assert_eq!(
            args,
            [
                "--rate",
                "5/s",
                "-H",
                "Authorization: Bearer t",
                "--agent",
                "--request=GET",
                "--header=X-A: -v",
                "--max-body=65536",
                "--",
                "http://h/x"
            ]
        );
        assert_eq!(stdin, None);
        // The operator's --max-body is the ceiling, and the model may ask for less.
        let s = server(&["--max-body", "1KiB", "--agent"]).unwrap();
        assert_eq!(s.flags.as_slice(), [] as [&str; 0]);
        let (args, _) = s
            .command(&call(json!({"url": "http://h/", "max_body": 10})))
            .unwrap();
        assert!(args.contains(&"--max-body=10".to_string()), "{args:?}");
        let (args, _) = s.command(&call(json!({"url": "http://h/"}))).unwrap();
        assert!(args.contains(&"--max-body=1024".to_string()), "{args:?}");
    }

    #[test]
    fn bodies_go_through_stdin_and_writes_need_permission() {
        let s = server(&[]).unwrap();
        let refused = s.command(&call(json!({"url": "http://h/", "body": "@/etc/passwd"})));
        assert!(refused.is_err(), "a POST without --allow-writes");
        let s = Server {
            allow_writes: true,
            ..s
        };
        let (args, stdin) = s
            .command(&call(json!({"url": "http://h/", "body": "@/etc/passwd"})))
            .unwrap();
        assert!(args.contains(&"--data-binary=@-".to_string()), "{args:?}");
        assert_eq!(stdin.as_deref(), Some(&b"@/etc/passwd"[..]));
        let (args, stdin) = s
            .command(&call(
                json!({"url": "http://h/", "json": {"a": 1}, "method": "put"}),
            ))
            .unwrap();
        assert!(args.contains(&"--request=PUT".to_string()));
        assert_eq!(stdin.as_deref(), Some(&br#"{"a":1}"#[..]));
    }

    #[test]
    fn refusals() {
        let s = server(&["--allow-host", "*.example.com", "-H", "Authorization: x"]).unwrap();
        for (c, words) in [
            (
                json!({"url": "http://evil.test/"}),
                "may not reach evil.test",
            ),
            (
                json!({"url": "http://a.example.com/", "headers": {"authorization": "y"}}),
                "operator",
            ),
            (
                json!({"url": "http://a.example.com/", "method": "DELETE"}),
                "--allow-writes",
            ),
            (json!({"url": "file:///etc/passwd"}), "not an http"),
        ] {
            let refusal = s.command(&call(c.clone())).err().unwrap();
            assert!(refusal.reason.contains(words), "{c}: {}", refusal.reason);
            let object = refusal.object();
            assert_eq!(object["ok"], false);
            assert_eq!(object["outcome"], "USAGE_ERROR");
        }
    }

    #[test]
    fn a_check_is_passed_on_and_a_bad_one_is_refused_masked() {
        let s = Server {
            allow_writes: true,
            ..server(&[]).unwrap()
        };
        let check = "http://h/orders/by-key/{idempotency_key}";
        let (args, _) = s
            .command(&call(
                json!({"url": "http://h/orders", "json": {}, "check": check}),
            ))
            .unwrap();
        assert!(args.contains(&format!("--check={check}")), "{args:?}");
        assert_eq!(args[args.len() - 2..], ["--", "http://h/orders"]);
        let refusal = s
            .command(&call(json!({
                "url": "http://h/orders",
                "json": {},
                "check": "ftp://u:hunter2-secret@h/orders"
            })))
            .err()
            .unwrap();
        assert!(refusal.reason.contains("the check"), "{}", refusal.reason);
        assert!(!refusal.reason.contains("hunter2"), "{}", refusal.reason);
    }

    #[test]
    fn flags_the_model_gives_are_refused_from_the_operator() {
        for flags in [
            &["-X", "POST"][..],
            &["-d", "a=1"],
            &["--json", "{}"],
            &["-o", "f"],
            &["--check", "http://h/"],
        ] {
            assert!(server(flags).is_err(), "{flags:?}");
        }
        assert!(server(&["--no-such-flag"]).is_err());
        assert!(server(&["--budget", "30s", "--attempts", "3"]).is_ok());
    }

    #[test]
    fn the_output_schema_names_every_field_of_the_agent_object() {
        let object = Refusal {
            reason: "r".into(),
            instruction: "i".into(),
        }
        .object();
        let schema = output_schema();
        let properties = schema["properties"].as_object().unwrap();
        for field in object.as_object().unwrap().keys() {
            assert!(properties.contains_key(field), "the schema lacks {field}");
        }
    }
}
