
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'abide' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'abide'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'abide' {
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'The URL, as a flag (curl''s --url, as a config file writes it)')
            [CompletionResult]::new('-K', '-K ', [CompletionResultType]::ParameterName, 'curl''s -K: read more flags from FILE, one a line, as curl writes them (`url = "…"`, `header = "Name: value"`, `--silent`, `-x URL`; `#` starts a comment); they take the place of the -K. ~/.curlrc is never read unasked')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'curl''s -K: read more flags from FILE, one a line, as curl writes them (`url = "…"`, `header = "Name: value"`, `--silent`, `-x URL`; `#` starts a comment); they take the place of the -K. ~/.curlrc is never read unasked')
            [CompletionResult]::new('--generate', '--generate', [CompletionResultType]::ParameterName, 'Print the man page or a shell completion script (see scripts/generate-docs)')
            [CompletionResult]::new('-X', '-X ', [CompletionResultType]::ParameterName, 'HTTP method (default: GET, or POST when a body is given)')
            [CompletionResult]::new('--request', '--request', [CompletionResultType]::ParameterName, 'HTTP method (default: GET, or POST when a body is given)')
            [CompletionResult]::new('-H', '-H ', [CompletionResultType]::ParameterName, 'Add a header, "Name: value" (repeatable; several of one name are all sent). "Name:" removes a default header (User-Agent, Accept, Content-Type). Control characters are refused. (Checked by `plan`, not by clap: clap would quote a refused value, and a malformed header is often a credential.)')
            [CompletionResult]::new('--header', '--header', [CompletionResultType]::ParameterName, 'Add a header, "Name: value" (repeatable; several of one name are all sent). "Name:" removes a default header (User-Agent, Accept, Content-Type). Control characters are refused. (Checked by `plan`, not by clap: clap would quote a refused value, and a malformed header is often a credential.)')
            [CompletionResult]::new('-d', '-d', [CompletionResultType]::ParameterName, 'Body as form data; @FILE reads a file, @- reads stdin (read once, replayed on every attempt), without their carriage returns and newlines, as curl reads them. Sets POST and Content-Type: application/x-www-form-urlencoded. Every --data, --data-* value is joined to the others with &, in order')
            [CompletionResult]::new('--data', '--data', [CompletionResultType]::ParameterName, 'Body as form data; @FILE reads a file, @- reads stdin (read once, replayed on every attempt), without their carriage returns and newlines, as curl reads them. Sets POST and Content-Type: application/x-www-form-urlencoded. Every --data, --data-* value is joined to the others with &, in order')
            [CompletionResult]::new('--data-ascii', '--data-ascii', [CompletionResultType]::ParameterName, 'The same as --data')
            [CompletionResult]::new('--data-raw', '--data-raw', [CompletionResultType]::ParameterName, 'As --data, but a leading @ is just a character')
            [CompletionResult]::new('--data-binary', '--data-binary', [CompletionResultType]::ParameterName, 'Body as raw bytes; @FILE and @- as for --data, kept byte for byte')
            [CompletionResult]::new('--data-urlencode', '--data-urlencode', [CompletionResultType]::ParameterName, 'As --data, URL-encoded as curl does: CONTENT, =CONTENT (both encoded whole), NAME=CONTENT (CONTENT encoded), @FILE, NAME@FILE (the file''s bytes encoded; @- is stdin)')
            [CompletionResult]::new('-F', '-F ', [CompletionResultType]::ParameterName, 'A multipart/form-data part, as curl''s -F (repeatable, in order): NAME=VALUE, NAME=@FILE (a file upload, its name as filename, a type from its extension as curl guesses it), NAME=<FILE (the file''s text as the value), each with ;type=TYPE and ;filename=NAME; a value may be quoted ("a;b"). Sets POST')
            [CompletionResult]::new('--form', '--form', [CompletionResultType]::ParameterName, 'A multipart/form-data part, as curl''s -F (repeatable, in order): NAME=VALUE, NAME=@FILE (a file upload, its name as filename, a type from its extension as curl guesses it), NAME=<FILE (the file''s text as the value), each with ;type=TYPE and ;filename=NAME; a value may be quoted ("a;b"). Sets POST')
            [CompletionResult]::new('--form-string', '--form-string', [CompletionResultType]::ParameterName, 'As -F NAME=VALUE, the VALUE taken literally: a leading @ or <, and ;type=, mean nothing (curl''s --form-string)')
            [CompletionResult]::new('-T', '-T ', [CompletionResultType]::ParameterName, 'PUT the bytes of FILE ("-" is stdin, read once), as curl''s -T; a URL without a path, or ending in /, gets the file''s name appended')
            [CompletionResult]::new('--upload-file', '--upload-file', [CompletionResultType]::ParameterName, 'PUT the bytes of FILE ("-" is stdin, read once), as curl''s -T; a URL without a path, or ending in /, gets the file''s name appended')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'JSON body (@FILE and @- allowed, kept byte for byte; repeated values are joined as they are, as curl joins them); sets POST, Content-Type and Accept to application/json')
            [CompletionResult]::new('-u', '-u', [CompletionResultType]::ParameterName, 'Basic authentication, USER:PASSWORD')
            [CompletionResult]::new('--user', '--user', [CompletionResultType]::ParameterName, 'Basic authentication, USER:PASSWORD')
            [CompletionResult]::new('-A', '-A ', [CompletionResultType]::ParameterName, 'User-Agent header [default: abide/VERSION]')
            [CompletionResult]::new('--user-agent', '--user-agent', [CompletionResultType]::ParameterName, 'User-Agent header [default: abide/VERSION]')
            [CompletionResult]::new('-e', '-e', [CompletionResultType]::ParameterName, 'Referer header, as curl''s -e')
            [CompletionResult]::new('--referer', '--referer', [CompletionResultType]::ParameterName, 'Referer header, as curl''s -e')
            [CompletionResult]::new('--oauth2-bearer', '--oauth2-bearer', [CompletionResultType]::ParameterName, 'Authorization: Bearer TOKEN, masked like -u in every output. (Checked by `plan`, not by clap, which would quote a refused token.)')
            [CompletionResult]::new('-x', '-x', [CompletionResultType]::ParameterName, 'Proxy URL (http://, https://, socks5://); the usual proxy environment variables are honoured without it')
            [CompletionResult]::new('--proxy', '--proxy', [CompletionResultType]::ParameterName, 'Proxy URL (http://, https://, socks5://); the usual proxy environment variables are honoured without it')
            [CompletionResult]::new('--cacert', '--cacert', [CompletionResultType]::ParameterName, 'Trust the CA certificates in this PEM file instead of the built-in roots; a server whose certificate is one of them exactly (a self-signed one) is trusted too, as curl does')
            [CompletionResult]::new('--connect-timeout', '--connect-timeout', [CompletionResultType]::ParameterName, 'Longest time to connect, per attempt')
            [CompletionResult]::new('-m', '-m', [CompletionResultType]::ParameterName, 'Hard limit on one attempt, body included, as curl''s -m [default: none: a stall fails an attempt, and a body that keeps flowing is never cut]')
            [CompletionResult]::new('--max-time', '--max-time', [CompletionResultType]::ParameterName, 'Hard limit on one attempt, body included, as curl''s -m [default: none: a stall fails an attempt, and a body that keeps flowing is never cut]')
            [CompletionResult]::new('--stall', '--stall', [CompletionResultType]::ParameterName, 'Longest time without a single byte from the server, while waiting for the answer''s head or during its body (or without the server taking a byte of the request): such an attempt fails, and is retried where safe')
            [CompletionResult]::new('--max-ratio', '--max-ratio', [CompletionResultType]::ParameterName, 'With --compressed: stop a body (INVALID_RESPONSE) that decodes to more than RATIO times its encoded size, past its first MiB: a compression bomb')
            [CompletionResult]::new('--attempts', '--attempts', [CompletionResultType]::ParameterName, 'Total requests at most; 1 means no retry. The default --budget stretches to hold them all')
            [CompletionResult]::new('--retry', '--retry', [CompletionResultType]::ParameterName, 'curl''s spelling: N retries, that is N+1 attempts (wins over ABIDE_ATTEMPTS)')
            [CompletionResult]::new('--budget', '--budget', [CompletionResultType]::ParameterName, 'Wall-clock budget for the whole run, waits and requests together. No wait that would end beyond it is started, nor any attempt after it. Given on the command line it is a hard limit: the attempt in flight is cut at it. The default (or ABIDE_BUDGET) bounds the retrying and the wait for an answer, but never cuts a 2xx body that keeps flowing: a long download ends when it is done, or when it stalls (--stall) [default: 60s, or longer when the --attempts asked need it: each retry''s longest wait plus a --connect-timeout per attempt]')
            [CompletionResult]::new('--max-wait', '--max-wait', [CompletionResultType]::ParameterName, 'Longest single wait accepted; a longer server delay ends the run at once with BUDGET_EXHAUSTED [default: no limit but the budget]')
            [CompletionResult]::new('--retry-on', '--retry-on', [CompletionResultType]::ParameterName, 'Retryable statuses, comma-separated')
            [CompletionResult]::new('--floor', '--floor', [CompletionResultType]::ParameterName, 'Least wait after a server-given delay: Retry-After 0, negative values and past dates wait this long, never zero')
            [CompletionResult]::new('--jitter', '--jitter', [CompletionResultType]::ParameterName, 'Upward-only jitter on server-given delays: up to FRACTION of the wait, at most 2 s; 0 turns it off')
            [CompletionResult]::new('--backoff', '--backoff', [CompletionResultType]::ParameterName, 'First backoff step when the server gave no delay (full jitter, doubling)')
            [CompletionResult]::new('--backoff-max', '--backoff-max', [CompletionResultType]::ParameterName, 'Largest backoff step')
            [CompletionResult]::new('--idempotency-key', '--idempotency-key', [CompletionResultType]::ParameterName, 'Send this Idempotency-Key (or a random UUID for "auto") on every attempt, and treat the request as safe to repeat')
            [CompletionResult]::new('--scope', '--scope', [CompletionResultType]::ParameterName, 'What a provider''s limit applies to: runs of one scope share one Retry-After gate, --rate, --max-concurrent and circuit breaker [default: the URL''s origin, scheme://host:port]')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Where scope state is kept, one small private file per scope; refused if another user owns it or others may write to it [default: $XDG_STATE_HOME/abide, else ~/.local/state/abide]')
            [CompletionResult]::new('--state', '--state', [CompletionResultType]::ParameterName, 'Share scope state through Redis instead of local files, so that many machines share one gate, pace, limit and breaker: redis://[USER:PASSWORD@]HOST:PORT[/DB], or rediss:// for TLS')
            [CompletionResult]::new('--rate', '--rate', [CompletionResultType]::ParameterName, 'Client-side pacing shared by every process of the scope, N/UNIT (5/s, 100/m, 1000/h): no burst beyond it even when many start at once. "auto" learns the fastest pace the server accepts from its answers (start at 5/s, speed up while they succeed, cut by 0.7 on a 429 or a used-up RateLimit quota, spend a quota the server states evenly), and shares it with every process of the scope. Kept in the scope state: refused with --no-state')
            [CompletionResult]::new('--max-concurrent', '--max-concurrent', [CompletionResultType]::ParameterName, 'At most N requests of the scope in flight across all processes; waiting for a slot counts against the budget. Refused with --no-state')
            [CompletionResult]::new('--breaker', '--breaker', [CompletionResultType]::ParameterName, 'Consecutive failed attempts that open a circuit breaker; 0 turns it off. Retryable 5xx (not 429) and failures after sending count for their endpoint (method and path), failures to reach the host for the whole scope. A run waits for an open breaker''s half-open moment when it fits --budget and --max-wait, and ends with CIRCUIT_OPEN when it does not')
            [CompletionResult]::new('--breaker-cooldown', '--breaker-cooldown', [CompletionResultType]::ParameterName, 'The longest an open breaker waits between two probes when the server gave no delay: it opens for the first --backoff step and doubles after each failed probe up to this; a server''s delay sets the moment instead [default: the run''s own longest wait, --backoff-max (or --retry-delay, at most --max-wait)]')
            [CompletionResult]::new('--retry-budget', '--retry-budget', [CompletionResultType]::ParameterName, 'The scope''s retry budget, shared by all its processes (and machines, with a Redis --state): first attempts always go; a retry spends one of 5 held in the scope, which each successful first attempt refills by PERCENT of a retry and time by one every 10 s. With none left, a run alone keeps all its attempts; one that would retry while another run still going spent from it in the last 10 s ends at once, RETRY_EXHAUSTED, with next_allowed_at when one is back. 0 turns it off')
            [CompletionResult]::new('--max-delayed', '--max-delayed', [CompletionResultType]::ParameterName, 'At most N runs of the scope wait on its gate at once, across all processes; another run that would wait ends at once with BUDGET_EXHAUSTED and next_allowed_at (the scope''s queue is full). Refused with --no-state')
            [CompletionResult]::new('--policy', '--policy', [CompletionResultType]::ParameterName, 'Limits per scope (TOML) that flags may tighten but never loosen: a flag that asks for more is lowered to it, saying so in the outcome''s reason [default: $XDG_CONFIG_HOME/abide/policy.toml (else ~/.config/abide/policy.toml) when it exists]')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Write the body to FILE (via a temporary file renamed on success, so a failed run leaves any existing FILE untouched); "-" is stdout. A GET whose body breaks off is resumed where it broke off when the server allows it (Accept-Ranges: bytes, and a strong ETag or Last-Modified)')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Write the body to FILE (via a temporary file renamed on success, so a failed run leaves any existing FILE untouched); "-" is stdout. A GET whose body breaks off is resumed where it broke off when the server allows it (Accept-Ranges: bytes, and a strong ETag or Last-Modified)')
            [CompletionResult]::new('--output-dir', '--output-dir', [CompletionResultType]::ParameterName, 'The directory -o FILE and -O write into, as curl''s --output-dir')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Only "-": continue an existing -o FILE, asking only for the bytes after its end (Range), as curl''s -C -. The file must be the start of the current body; a server that sends it whole again replaces it')
            [CompletionResult]::new('--continue-at', '--continue-at', [CompletionResultType]::ParameterName, 'Only "-": continue an existing -o FILE, asking only for the bytes after its end (Range), as curl''s -C -. The file must be the start of the current body; a server that sends it whole again replaces it')
            [CompletionResult]::new('-D', '-D ', [CompletionResultType]::ParameterName, 'Write the final answer''s head to FILE ("-" is stdout) once the run ends, as curl''s -D, with the names and phrase of -i; a 4xx or 5xx answer''s head too. -D - without -o FILE is -i. Nothing is written when no answer came')
            [CompletionResult]::new('--dump-header', '--dump-header', [CompletionResultType]::ParameterName, 'Write the final answer''s head to FILE ("-" is stdout) once the run ends, as curl''s -D, with the names and phrase of -i; a 4xx or 5xx answer''s head too. -D - without -o FILE is -i. Nothing is written when no answer came')
            [CompletionResult]::new('-w', '-w', [CompletionResultType]::ParameterName, 'Write FORMAT to stdout once the run ends, as curl''s -w; @FILE reads it from a file, its lines joined as curl joins them. Variables: %{http_code} (or response_code; 000 without an answer), url_effective (with -L, the last hop''s), method, content_type, size_download, size_upload, time_total, num_retries, num_redirects, num_connects, remote_ip and remote_port (the first address the name resolved to), exitcode (abide''s), errormsg (empty on success, else the outcome''s reason), json (the outcome line, as --outcome stdout writes it), and stdout or stderr to switch where the rest goes; %header{NAME} is the final answer''s header; %% is %, and \n, \r, \t, \\ are escapes. time_total is the whole run''s, waits included; time_namelookup, time_connect, time_appconnect (TLS; 0 without) and time_starttransfer are the final attempt''s, from its start. An unknown variable is a usage error')
            [CompletionResult]::new('--write-out', '--write-out', [CompletionResultType]::ParameterName, 'Write FORMAT to stdout once the run ends, as curl''s -w; @FILE reads it from a file, its lines joined as curl joins them. Variables: %{http_code} (or response_code; 000 without an answer), url_effective (with -L, the last hop''s), method, content_type, size_download, size_upload, time_total, num_retries, num_redirects, num_connects, remote_ip and remote_port (the first address the name resolved to), exitcode (abide''s), errormsg (empty on success, else the outcome''s reason), json (the outcome line, as --outcome stdout writes it), and stdout or stderr to switch where the rest goes; %header{NAME} is the final answer''s header; %% is %, and \n, \r, \t, \\ are escapes. time_total is the whole run''s, waits included; time_namelookup, time_connect, time_appconnect (TLS; 0 without) and time_starttransfer are the final attempt''s, from its start. An unknown variable is a usage error')
            [CompletionResult]::new('--outcome', '--outcome', [CompletionResultType]::ParameterName, 'Where the outcome line goes: stderr, stdout (needs -o), none, or a PATH appended to (refused before sending if it cannot be written). Usage errors write their USAGE_ERROR line there too')
            [CompletionResult]::new('--log', '--log', [CompletionResultType]::ParameterName, 'Append an audit log to FILE: one JSON line per event (request, answer or error, wait, outcome), credentials redacted; many runs may share it')
            [CompletionResult]::new('--max-body', '--max-body', [CompletionResultType]::ParameterName, 'Largest body kept in the --agent object; sizes like 1KiB, 2MiB, at most 4MiB, since the object holds it in memory several times over (--require checks bodies up to 64MiB). A body that is not UTF-8 comes in base64, with body_encoding "base64"')
            [CompletionResult]::new('--require', '--require', [CompletionResultType]::ParameterName, 'A 2xx answer succeeds only if its body is JSON with a value (null and [] included) at this RFC 6901 JSON Pointer (repeatable); else INVALID_RESPONSE, not retried')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Refuse, unsent, a request identical to one that ended NON_RETRYABLE or INVALID_RESPONSE N times in a row within 10 minutes (NO_PROGRESS); on by default with --agent (N = 3); 0 turns it off')
            [CompletionResult]::new('--task', '--task', [CompletionResultType]::ParameterName, 'With --idempotency-key auto: keep the generated key in the scope state under this task id, so that every rerun of the task sends the same key. The run is refused, unsent, if the key cannot be stored first, or if the scope already keeps 1024 live task keys')
            [CompletionResult]::new('--task-ttl', '--task-ttl', [CompletionResultType]::ParameterName, 'How long a task''s idempotency key is kept (never less)')
            [CompletionResult]::new('--task-attempts', '--task-attempts', [CompletionResultType]::ParameterName, 'At most N requests for a --task across all its runs: a run that would need more ends NEEDS_HUMAN (exit 10), as does every rerun after, unsent. Runs without --task are not counted (so that `abide mcp --task-attempts N` bounds every task the model runs)')
            [CompletionResult]::new('--check', '--check', [CompletionResultType]::ParameterName, 'When a write''s effect is unknown (no answer after sending it, or a retryable 5xx), GET this URL first (same origin, headers and credentials; {idempotency_key} is replaced by the key sent): a 2xx (meeting --require) means it happened (SUCCEEDED, "reconciled": true, the check''s body as the body); 404 or 410 that it did not (the write goes again, same key, within attempts and budget); anything else NEEDS_HUMAN (exit 10), never a replay')
            [CompletionResult]::new('--id-pointer', '--id-pointer', [CompletionResultType]::ParameterName, 'Where a 2xx body names what the write created (an RFC 6901 JSON Pointer, e.g. /id): the outcome''s operation_id (else a 201''s Location), kept with the --task. The body is held in memory to read it, up to 64MiB, as for --require')
            [CompletionResult]::new('--escalate', '--escalate', [CompletionResultType]::ParameterName, 'Append one JSON record to FILE (0600) for each run that ends SIDE_EFFECT_UNKNOWN, NO_PROGRESS or NEEDS_HUMAN: what was sent where, every attempt with its status and rate-limit headers, the budget used, the key, the operation_id and the safe ways on; no body, no secret')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'Cookies to send, "NAME=VALUE; N2=V2" (sent as given on every request, -L hops too); or, without a "=", a FILE to read cookies from (a Netscape cookie file or Set-Cookie: lines, as curl reads them; a missing file is no cookies), which turns on the cookie engine: every answer''s Set-Cookie (a redirect''s too) is kept and sent on where domain, path, Secure and expiry allow, as curl does. Repeatable. A -H "Cookie: ..." of your own is then the only one sent, as curl''s')
            [CompletionResult]::new('--cookie', '--cookie', [CompletionResultType]::ParameterName, 'Cookies to send, "NAME=VALUE; N2=V2" (sent as given on every request, -L hops too); or, without a "=", a FILE to read cookies from (a Netscape cookie file or Set-Cookie: lines, as curl reads them; a missing file is no cookies), which turns on the cookie engine: every answer''s Set-Cookie (a redirect''s too) is kept and sent on where domain, path, Secure and expiry allow, as curl does. Repeatable. A -H "Cookie: ..." of your own is then the only one sent, as curl''s')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Write every cookie the run ends with to FILE, in curl''s Netscape format, through a temporary file renamed over it; "-" is stdout. Turns on the cookie engine, as -b FILE does')
            [CompletionResult]::new('--cookie-jar', '--cookie-jar', [CompletionResultType]::ParameterName, 'Write every cookie the run ends with to FILE, in curl''s Netscape format, through a temporary file renamed over it; "-" is stdout. Turns on the cookie engine, as -b FILE does')
            [CompletionResult]::new('--resolve', '--resolve', [CompletionResultType]::ParameterName, 'HOST:PORT:ADDR[,ADDR...]: connect to ADDR for HOST at PORT, as if the name resolved to it; the URL, Host and TLS name stay. HOST may be * for any name (repeatable)')
            [CompletionResult]::new('--connect-to', '--connect-to', [CompletionResultType]::ParameterName, 'HOST1:PORT1:HOST2:PORT2: a connection to HOST1 at PORT1 goes to HOST2 at PORT2 instead; an empty part matches any (HOST1, PORT1) or keeps what it was (HOST2, PORT2). Repeatable; the first match wins')
            [CompletionResult]::new('--unix-socket', '--unix-socket', [CompletionResultType]::ParameterName, 'Connect to this Unix socket instead of the URL''s host and port (the URL still gives Host and path), as curl''s: http://localhost/... to a local service such as /var/run/docker.sock')
            [CompletionResult]::new('--max-redirs', '--max-redirs', [CompletionResultType]::ParameterName, 'With -L, follow at most N redirects per attempt (default 50, as curl; -1 is no limit); one more ends the run NON_RETRYABLE with curl''s words "Maximum (N) redirects followed" (curl''s exit 47)')
            [CompletionResult]::new('-U', '-U ', [CompletionResultType]::ParameterName, 'USER:PASSWORD for -x''s proxy, as curl''s; masked like -u. (A proxy from the environment takes them in its URL.)')
            [CompletionResult]::new('--proxy-user', '--proxy-user', [CompletionResultType]::ParameterName, 'USER:PASSWORD for -x''s proxy, as curl''s; masked like -u. (A proxy from the environment takes them in its URL.)')
            [CompletionResult]::new('--noproxy', '--noproxy', [CompletionResultType]::ParameterName, 'Hosts to reach without a proxy, comma-separated, as curl matches them: a name matches itself and its subdomains, * matches all. Decided for the URL''s host, for the whole run')
            [CompletionResult]::new('-E', '-E ', [CompletionResultType]::ParameterName, 'A client certificate (PEM) to show the server; its key is in FILE too, or in --key. An encrypted key (FILE:PASSWORD) is refused: decrypt it first (openssl pkey -in key.pem -out plain.pem)')
            [CompletionResult]::new('--cert', '--cert', [CompletionResultType]::ParameterName, 'A client certificate (PEM) to show the server; its key is in FILE too, or in --key. An encrypted key (FILE:PASSWORD) is refused: decrypt it first (openssl pkey -in key.pem -out plain.pem)')
            [CompletionResult]::new('--key', '--key', [CompletionResultType]::ParameterName, 'The private key (PEM, unencrypted) of --cert')
            [CompletionResult]::new('--netrc-file', '--netrc-file', [CompletionResultType]::ParameterName, 'As --netrc, from FILE')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'With -Y: the span over which the body''s speed is measured (curl''s seconds; 30 when only -Y is given). Alone, it means -Y 1: an attempt that gets no byte for that long fails, as --stall, which it shortens')
            [CompletionResult]::new('--speed-time', '--speed-time', [CompletionResultType]::ParameterName, 'With -Y: the span over which the body''s speed is measured (curl''s seconds; 30 when only -Y is given). Alone, it means -Y 1: an attempt that gets no byte for that long fails, as --stall, which it shortens')
            [CompletionResult]::new('-Y', '-Y ', [CompletionResultType]::ParameterName, 'An attempt whose body comes slower than BYTES per second over --speed-time fails (and is retried or resumed as a broken-off body)')
            [CompletionResult]::new('--speed-limit', '--speed-limit', [CompletionResultType]::ParameterName, 'An attempt whose body comes slower than BYTES per second over --speed-time fails (and is retried or resumed as a broken-off body)')
            [CompletionResult]::new('--limit-rate', '--limit-rate', [CompletionResultType]::ParameterName, 'Read the answer''s body at most RATE bytes per second (k, m, g suffixes are 1024-based, as curl''s); 0 is no limit. Uploads are not paced')
            [CompletionResult]::new('--retry-delay', '--retry-delay', [CompletionResultType]::ParameterName, 'Wait SECONDS between attempts when the server gives no delay, instead of the exponential backoff; a server''s Retry-After still wins. 0 keeps the backoff, as curl')
            [CompletionResult]::new('--batch', '--batch', [CompletionResultType]::ParameterName, 'Send every request of FILE ("-" is stdin) instead of one URL: a line is a URL, or a JSON object {"id", "url", "method", "headers": {"Name": "value"}, "json" or "data", "output"} where every field but url is optional (id defaults to the line number). The flags apply to every item; an item''s fields override them. One outcome line per item, with its "id", goes to stdout as it ends (or to --outcome PATH); bodies go to the item''s output, to -o TEMPLATE ({id}, {n}), or nowhere. A bad line is its own USAGE_ERROR and the batch goes on. The summary goes to stderr; the exit code is 0 when every item succeeded, else that of the worst outcome (see the README). --task ID makes ID:{id} per item')
            [CompletionResult]::new('--parallel', '--parallel', [CompletionResultType]::ParameterName, 'With --batch: requests in flight at once in this process (each over a kept-alive connection), still under --max-concurrent, --rate and the scope gate shared with every other process [default: 4]')
            [CompletionResult]::new('--journal', '--journal', [CompletionResultType]::ParameterName, 'With --batch: write down every item that ended (any outcome but a cancellation) in FILE, on the disk as it ends; a rerun with the same FILE skips those items, so a batch killed halfway resumes where it was')
            [CompletionResult]::new('-G', '-G ', [CompletionResultType]::ParameterName, 'The --data values go into the URL''s query (after ? or &) and the request is a GET (a HEAD with -I), as curl''s -G')
            [CompletionResult]::new('--get', '--get', [CompletionResultType]::ParameterName, 'The --data values go into the URL''s query (after ? or &) and the request is a GET (a HEAD with -I), as curl''s -G')
            [CompletionResult]::new('-L', '-L ', [CompletionResultType]::ParameterName, 'Follow redirects (at most 50, see --max-redirs), as curl does: 307 and 308 re-send the method and body; 303, and 301 or 302 after a POST, become a GET without a body; -u, Authorization and Cookie go on to the same origin only (but with --location-trusted); a Retry-After on a redirect is waited first. Without -L a 3xx answer is final')
            [CompletionResult]::new('--location', '--location', [CompletionResultType]::ParameterName, 'Follow redirects (at most 50, see --max-redirs), as curl does: 307 and 308 re-send the method and body; 303, and 301 or 302 after a POST, become a GET without a body; -u, Authorization and Cookie go on to the same origin only (but with --location-trusted); a Retry-After on a redirect is waited first. Without -L a 3xx answer is final')
            [CompletionResult]::new('--http1.1', '--http1.1', [CompletionResultType]::ParameterName, 'Accepted, as curl''s --http1.1: abide speaks HTTP/1.1')
            [CompletionResult]::new('--http2', '--http2', [CompletionResultType]::ParameterName, 'Refused with a word on why: abide speaks HTTP/1.1 only, which every HTTP/2 or HTTP/3 server also speaks')
            [CompletionResult]::new('--http3', '--http3', [CompletionResultType]::ParameterName, 'See --http2')
            [CompletionResult]::new('-k', '-k', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate')
            [CompletionResult]::new('--insecure', '--insecure', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate')
            [CompletionResult]::new('--ca-native', '--ca-native', [CompletionResultType]::ParameterName, 'Trust the operating system''s certificate store instead of the built-in roots')
            [CompletionResult]::new('--compressed', '--compressed', [CompletionResultType]::ParameterName, 'Ask for a compressed answer (deflate, gzip, br, zstd) and decode it. Without it no encoding is asked for, and a body is written as it came')
            [CompletionResult]::new('--retry-connrefused', '--retry-connrefused', [CompletionResultType]::ParameterName, 'Accepted, as curl''s: abide retries a refused connection anyway (a service that is starting), within --attempts and --budget')
            [CompletionResult]::new('--idempotent', '--idempotent', [CompletionResultType]::ParameterName, 'Treat the request as safe to repeat without sending a key (GraphQL or search APIs that read with POST)')
            [CompletionResult]::new('--no-state', '--no-state', [CompletionResultType]::ParameterName, 'Keep and read no shared state at all')
            [CompletionResult]::new('--state-required', '--state-required', [CompletionResultType]::ParameterName, 'Fail (INTERNAL_ERROR, exit 1) instead of going on without shared state when the state store cannot be used')
            [CompletionResult]::new('-O', '-O ', [CompletionResultType]::ParameterName, 'Write the body to a file named as the URL''s last path segment (query left out), in the current directory or --output-dir, as curl''s -O; written as -o writes. --remote-name-all is the same, abide taking one URL')
            [CompletionResult]::new('--remote-name', '--remote-name', [CompletionResultType]::ParameterName, 'Write the body to a file named as the URL''s last path segment (query left out), in the current directory or --output-dir, as curl''s -O; written as -o writes. --remote-name-all is the same, abide taking one URL')
            [CompletionResult]::new('--remote-name-all', '--remote-name-all', [CompletionResultType]::ParameterName, 'Write the body to a file named as the URL''s last path segment (query left out), in the current directory or --output-dir, as curl''s -O; written as -o writes. --remote-name-all is the same, abide taking one URL')
            [CompletionResult]::new('-J', '-J ', [CompletionResultType]::ParameterName, 'With -O: name the file as the final answer''s Content-Disposition filename says, as curl''s -J: only its last path component (never a directory, nor a name with control characters), in the same directory; without one, the URL''s name. An existing file of that name is never replaced (the run fails and leaves it) unless --clobber is given')
            [CompletionResult]::new('--remote-header-name', '--remote-header-name', [CompletionResultType]::ParameterName, 'With -O: name the file as the final answer''s Content-Disposition filename says, as curl''s -J: only its last path component (never a directory, nor a name with control characters), in the same directory; without one, the URL''s name. An existing file of that name is never replaced (the run fails and leaves it) unless --clobber is given')
            [CompletionResult]::new('--create-dirs', '--create-dirs', [CompletionResultType]::ParameterName, 'Create the directories -o FILE (with --output-dir) names, as curl''s --create-dirs')
            [CompletionResult]::new('--clobber', '--clobber', [CompletionResultType]::ParameterName, 'Let -J replace an existing file')
            [CompletionResult]::new('--no-clobber', '--no-clobber', [CompletionResultType]::ParameterName, 'Never replace an existing file with -o, -O or -J: write FILE.1, FILE.2 … up to FILE.99 instead, as curl''s --no-clobber')
            [CompletionResult]::new('--fail-with-body', '--fail-with-body', [CompletionResultType]::ParameterName, 'As curl''s --fail-with-body: a final 4xx or 5xx answer''s body is written to stdout or -o FILE (a file only when the body came whole); the run still fails as without it, and a retried answer''s body is never written')
            [CompletionResult]::new('--remove-on-error', '--remove-on-error', [CompletionResultType]::ParameterName, 'Accepted, as curl''s --remove-on-error: a failed run never leaves a partial -o file anyway; where curl removes the file, abide leaves the one that was there as it was')
            [CompletionResult]::new('-N', '-N ', [CompletionResultType]::ParameterName, 'Write a body to stdout as it comes. Without it, stdout gets nothing of a body until its first MiB has arrived (or all of it, if smaller), so that a small body that breaks off is retried with nothing written. text/event-stream answers always stream')
            [CompletionResult]::new('--no-buffer', '--no-buffer', [CompletionResultType]::ParameterName, 'Write a body to stdout as it comes. Without it, stdout gets nothing of a body until its first MiB has arrived (or all of it, if smaller), so that a small body that breaks off is retried with nothing written. text/event-stream answers always stream')
            [CompletionResult]::new('-i', '-i', [CompletionResultType]::ParameterName, 'Write the answer''s head (status line, headers, a blank line) to stdout before its body, as curl''s -i: only the final answer''s, sent with the body once it is no longer held (see -N), so a retried attempt''s head is never seen; a final 4xx or 5xx answer writes its head without its body, as curl -f -i does, and a 2xx whose body never came whole, none. Header names come in lower case and the reason phrase is the standard one (ureq keeps neither as sent); with -L, only the last answer''s head. With -o FILE the head goes into FILE before the body (not with -C -); a failed run leaves FILE as it was, where curl writes a 4xx head in')
            [CompletionResult]::new('--include', '--include', [CompletionResultType]::ParameterName, 'Write the answer''s head (status line, headers, a blank line) to stdout before its body, as curl''s -i: only the final answer''s, sent with the body once it is no longer held (see -N), so a retried attempt''s head is never seen; a final 4xx or 5xx answer writes its head without its body, as curl -f -i does, and a 2xx whose body never came whole, none. Header names come in lower case and the reason phrase is the standard one (ureq keeps neither as sent); with -L, only the last answer''s head. With -o FILE the head goes into FILE before the body (not with -C -); a failed run leaves FILE as it was, where curl writes a 4xx head in')
            [CompletionResult]::new('-I', '-I ', [CompletionResultType]::ParameterName, 'Send a HEAD request and write the answer''s head to stdout, as curl''s -I (that is -X HEAD -i)')
            [CompletionResult]::new('--head', '--head', [CompletionResultType]::ParameterName, 'Send a HEAD request and write the answer''s head to stdout, as curl''s -I (that is -X HEAD -i)')
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'No progress display or notes; the outcome line is still written')
            [CompletionResult]::new('--silent', '--silent', [CompletionResultType]::ParameterName, 'No progress display or notes; the outcome line is still written')
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'curl''s -f, accepted so that curl lines port (-fsS, -fsSL): abide never writes the body of a 4xx or 5xx answer to stdout or -o anyway (but with --fail-with-body)')
            [CompletionResult]::new('--fail', '--fail', [CompletionResultType]::ParameterName, 'curl''s -f, accepted so that curl lines port (-fsS, -fsSL): abide never writes the body of a 4xx or 5xx answer to stdout or -o anyway (but with --fail-with-body)')
            [CompletionResult]::new('-S', '-S ', [CompletionResultType]::ParameterName, 'curl''s -S, accepted so that -sS ports: abide always says why a run failed, in the outcome line, -s or not')
            [CompletionResult]::new('--show-error', '--show-error', [CompletionResultType]::ParameterName, 'curl''s -S, accepted so that -sS ports: abide always says why a run failed, in the outcome line, -s or not')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'One line per attempt and per wait on stderr: the answer or error, the server''s delay, the wait chosen and why; and, as curl -v shows them, each request''s head ("> GET /path HTTP/1.1", then abide''s headers, names in lower case as they are sent, credentials masked; not the framing headers ureq adds) and each answer''s head ("< HTTP/1.1 200 OK", then its headers, as -i writes them)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'One line per attempt and per wait on stderr: the answer or error, the server''s delay, the wait chosen and why; and, as curl -v shows them, each request''s head ("> GET /path HTTP/1.1", then abide''s headers, names in lower case as they are sent, credentials masked; not the framing headers ureq adds) and each answer''s head ("< HTTP/1.1 200 OK", then its headers, as -i writes them)')
            [CompletionResult]::new('--agent', '--agent', [CompletionResultType]::ParameterName, 'Agent tool mode: stdout gets exactly one JSON object (the outcome plus body, body_truncated, body_encoding and headers), on success, failure and usage errors alike; nothing else is written')
            [CompletionResult]::new('-j', '-j', [CompletionResultType]::ParameterName, 'With -b FILE: leave out the file''s session cookies (those without an expiry), as a new browser session would')
            [CompletionResult]::new('--junk-session-cookies', '--junk-session-cookies', [CompletionResultType]::ParameterName, 'With -b FILE: leave out the file''s session cookies (those without an expiry), as a new browser session would')
            [CompletionResult]::new('-4', '-4', [CompletionResultType]::ParameterName, 'Connect over IPv4 only')
            [CompletionResult]::new('--ipv4', '--ipv4', [CompletionResultType]::ParameterName, 'Connect over IPv4 only')
            [CompletionResult]::new('-6', '-6', [CompletionResultType]::ParameterName, 'Connect over IPv6 only')
            [CompletionResult]::new('--ipv6', '--ipv6', [CompletionResultType]::ParameterName, 'Connect over IPv6 only')
            [CompletionResult]::new('--location-trusted', '--location-trusted', [CompletionResultType]::ParameterName, 'With -L, send -u, Authorization and Cookie headers on to other hosts too, as curl''s: only for a redirect you trust')
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Accepted, as curl''s -p: abide always goes through an HTTP proxy with CONNECT, for http:// URLs too')
            [CompletionResult]::new('--proxytunnel', '--proxytunnel', [CompletionResultType]::ParameterName, 'Accepted, as curl''s -p: abide always goes through an HTTP proxy with CONNECT, for http:// URLs too')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Basic credentials for the host from ~/.netrc (its machine entry, else default), for a request without -u or an Authorization of its own; a redirect to another host gets that host''s entry. Masked like -u everywhere. A missing file sends none, as curl does')
            [CompletionResult]::new('--netrc', '--netrc', [CompletionResultType]::ParameterName, 'Basic credentials for the host from ~/.netrc (its machine entry, else default), for a request without -u or an Authorization of its own; a redirect to another host gets that host''s entry. Masked like -u everywhere. A missing file sends none, as curl does')
            [CompletionResult]::new('--netrc-optional', '--netrc-optional', [CompletionResultType]::ParameterName, 'As --netrc (curl''s name for a .netrc that may be missing)')
            [CompletionResult]::new('--retry-all-errors', '--retry-all-errors', [CompletionResultType]::ParameterName, 'Retry every failure of a request that is safe to replay: any 4xx or 5xx answer and any transport error (an unknown host, a refused certificate). A write whose effect is unknown is still never replayed, and a refused write is still not retried')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('lab', 'lab', [CompletionResultType]::ParameterValue, 'Run a local rate-limited HTTP server that catches clients which retry too early')
            [CompletionResult]::new('demo', 'demo', [CompletionResultType]::ParameterValue, 'Show in ten seconds what abide does, against a lab started in-process')
            [CompletionResult]::new('mcp', 'mcp', [CompletionResultType]::ParameterValue, 'Serve abide as a Model Context Protocol tool (http_request) on stdio')
            [CompletionResult]::new('state', 'state', [CompletionResultType]::ParameterValue, 'List what the scope state remembers (why runs are held), or clear it')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'abide;lab' {
            [CompletionResult]::new('--port', '--port', [CompletionResultType]::ParameterName, 'Port to listen on, on 127.0.0.1 only (0 picks a free port)')
            [CompletionResult]::new('--limit', '--limit', [CompletionResultType]::ParameterName, 'Requests each client may make per window before it gets 429')
            [CompletionResult]::new('--window', '--window', [CompletionResultType]::ParameterName, 'Length of each client''s fixed window, starting at its first request')
            [CompletionResult]::new('--skew', '--skew', [CompletionResultType]::ParameterName, 'How much before its Retry-After moment a retry still counts as on time')
            [CompletionResult]::new('--duration', '--duration', [CompletionResultType]::ParameterName, 'Stop after this long and print the summary (default: run until Ctrl-C)')
            [CompletionResult]::new('--script', '--script', [CompletionResultType]::ParameterName, 'Answer all clients from a fixed sequence instead of the limiter; the last step repeats. Steps are comma-separated, each STATUS followed by any of :ra=SECONDS (Retry-After), :delay=DURATION, and one of :close, :truncate, :hang. Example: 429:ra=1,503,200:delay=2s')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'abide;demo' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'abide;mcp' {
            [CompletionResult]::new('--allow-host', '--allow-host', [CompletionResultType]::ParameterName, 'A host the model may reach (repeatable): a name or address as in the URL, or *.example.com for every subdomain. Without it, any host')
            [CompletionResult]::new('--allow-writes', '--allow-writes', [CompletionResultType]::ParameterName, 'Let the model send writes (POST, PUT, PATCH, DELETE, …); without it only GET, HEAD and OPTIONS')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'abide;state' {
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'The state directory [default: $XDG_STATE_HOME/abide, else ~/.local/state/abide]')
            [CompletionResult]::new('--state', '--state', [CompletionResultType]::ParameterName, 'The Redis store instead, as a run''s --state: redis://[USER:PASSWORD@]HOST:PORT[/DB], or rediss://')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'One JSON object per scope, one a line')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('clear', 'clear', [CompletionResultType]::ParameterValue, 'Forget what holds a scope''s runs back: its gate, breakers, counts of repeated failures and retry budget (its name and --rate pacing still ahead stay; so do its task keys, unless --tasks)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'abide;state;clear' {
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'The state directory [default: $XDG_STATE_HOME/abide, else ~/.local/state/abide]')
            [CompletionResult]::new('--state', '--state', [CompletionResultType]::ParameterName, 'The Redis store instead, as a run''s --state: redis://[USER:PASSWORD@]HOST:PORT[/DB], or rediss://')
            [CompletionResult]::new('--all', '--all', [CompletionResultType]::ParameterName, 'Every scope the store knows')
            [CompletionResult]::new('--tasks', '--tasks', [CompletionResultType]::ParameterName, 'Also forget the scope''s --task idempotency keys: a rerun of a task then sends a new key, and the server may apply its write twice. Asks first at a terminal; without one, it needs --yes')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask before forgetting task keys')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask before forgetting task keys')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'abide;state;help' {
            [CompletionResult]::new('clear', 'clear', [CompletionResultType]::ParameterValue, 'Forget what holds a scope''s runs back: its gate, breakers, counts of repeated failures and retry budget (its name and --rate pacing still ahead stay; so do its task keys, unless --tasks)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'abide;state;help;clear' {
            break
        }
        'abide;state;help;help' {
            break
        }
        'abide;help' {
            [CompletionResult]::new('lab', 'lab', [CompletionResultType]::ParameterValue, 'Run a local rate-limited HTTP server that catches clients which retry too early')
            [CompletionResult]::new('demo', 'demo', [CompletionResultType]::ParameterValue, 'Show in ten seconds what abide does, against a lab started in-process')
            [CompletionResult]::new('mcp', 'mcp', [CompletionResultType]::ParameterValue, 'Serve abide as a Model Context Protocol tool (http_request) on stdio')
            [CompletionResult]::new('state', 'state', [CompletionResultType]::ParameterValue, 'List what the scope state remembers (why runs are held), or clear it')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'abide;help;lab' {
            break
        }
        'abide;help;demo' {
            break
        }
        'abide;help;mcp' {
            break
        }
        'abide;help;state' {
            [CompletionResult]::new('clear', 'clear', [CompletionResultType]::ParameterValue, 'Forget what holds a scope''s runs back: its gate, breakers, counts of repeated failures and retry budget (its name and --rate pacing still ahead stay; so do its task keys, unless --tasks)')
            break
        }
        'abide;help;state;clear' {
            break
        }
        'abide;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
