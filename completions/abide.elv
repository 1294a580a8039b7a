
use builtin;
use str;

set edit:completion:arg-completer[abide] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'abide'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'abide'= {
            cand --generate 'Print the man page or a shell completion script (see scripts/generate-docs)'
            cand -X 'HTTP method (default: GET, or POST when a body is given)'
            cand --request 'HTTP method (default: GET, or POST when a body is given)'
            cand -H 'Add a header, "Name: value" (repeatable). "Name:" removes a default header (User-Agent, Accept, Content-Type). Control characters are refused. (Checked by `plan`, not by clap: clap would quote a refused value, and a malformed header is often a credential.)'
            cand --header 'Add a header, "Name: value" (repeatable). "Name:" removes a default header (User-Agent, Accept, Content-Type). Control characters are refused. (Checked by `plan`, not by clap: clap would quote a refused value, and a malformed header is often a credential.)'
            cand -d 'Body as form data; @FILE reads a file, @- reads stdin (read once, replayed on every attempt). Sets POST and Content-Type: application/x-www-form-urlencoded. Repeated values are joined with &'
            cand --data 'Body as form data; @FILE reads a file, @- reads stdin (read once, replayed on every attempt). Sets POST and Content-Type: application/x-www-form-urlencoded. Repeated values are joined with &'
            cand --data-binary 'Body as raw bytes; @FILE and @- as for --data'
            cand --json 'JSON body (@FILE and @- allowed); sets POST, Content-Type and Accept to application/json'
            cand -u 'Basic authentication, USER:PASSWORD'
            cand --user 'Basic authentication, USER:PASSWORD'
            cand -A 'User-Agent header [default: abide/VERSION]'
            cand --user-agent 'User-Agent header [default: abide/VERSION]'
            cand -e 'Referer header, as curl''s -e'
            cand --referer 'Referer header, as curl''s -e'
            cand --oauth2-bearer 'Authorization: Bearer TOKEN, masked like -u in every output. (Checked by `plan`, not by clap, which would quote a refused token.)'
            cand -x 'Proxy URL (http://, https://, socks5://); the usual proxy environment variables are honoured without it'
            cand --proxy 'Proxy URL (http://, https://, socks5://); the usual proxy environment variables are honoured without it'
            cand --cacert 'Trust the CA certificates in this PEM file instead of the built-in roots; a server whose certificate is one of them exactly (a self-signed one) is trusted too, as curl does'
            cand --connect-timeout 'Longest time to connect, per attempt'
            cand -m 'Hard limit on one attempt, body included, as curl''s -m [default: none: a stall fails an attempt, and a body that keeps flowing is never cut]'
            cand --max-time 'Hard limit on one attempt, body included, as curl''s -m [default: none: a stall fails an attempt, and a body that keeps flowing is never cut]'
            cand --stall 'Longest time without a single byte from the server, while waiting for the answer''s head or during its body (or without the server taking a byte of the request): such an attempt fails, and is retried where safe'
            cand --max-ratio 'With --compressed: stop a body (INVALID_RESPONSE) that decodes to more than RATIO times its encoded size, past its first MiB: a compression bomb'
            cand --attempts 'Total requests at most; 1 means no retry'
            cand --retry 'curl''s spelling: N retries, that is N+1 attempts (wins over ABIDE_ATTEMPTS)'
            cand --budget 'Wall-clock budget for the whole run, waits and requests together. No wait that would end beyond it is started, nor any attempt after it. Given on the command line it is a hard limit: the attempt in flight is cut at it. The default (or ABIDE_BUDGET) bounds the retrying and the wait for an answer, but never cuts a 2xx body that keeps flowing: a long download ends when it is done, or when it stalls (--stall)'
            cand --max-wait 'Longest single wait accepted; a longer server delay ends the run at once with BUDGET_EXHAUSTED [default: no limit but the budget]'
            cand --retry-on 'Retryable statuses, comma-separated'
            cand --floor 'Least wait after a server-given delay: Retry-After 0, negative values and past dates wait this long, never zero'
            cand --jitter 'Upward-only jitter on server-given delays: up to FRACTION of the wait, at most 2 s; 0 turns it off'
            cand --backoff 'First backoff step when the server gave no delay (full jitter, doubling)'
            cand --backoff-max 'Largest backoff step'
            cand --idempotency-key 'Send this Idempotency-Key (or a random UUID for "auto") on every attempt, and treat the request as safe to repeat'
            cand --scope 'What a provider''s limit applies to: runs of one scope share one Retry-After gate, --rate, --max-concurrent and circuit breaker [default: the URL''s origin, scheme://host:port]'
            cand --state-dir 'Where scope state is kept, one small private file per scope; refused if another user owns it or others may write to it [default: $XDG_STATE_HOME/abide, else ~/.local/state/abide]'
            cand --state 'Share scope state through Redis instead of local files, so that many machines share one gate, pace, limit and breaker: redis://[USER:PASSWORD@]HOST:PORT[/DB], or rediss:// for TLS'
            cand --rate 'Client-side pacing shared by every process of the scope, N/UNIT (5/s, 100/m, 1000/h): no burst beyond it even when many start at once. "auto" learns the fastest pace the server accepts from its answers (start at 5/s, speed up while they succeed, cut by 0.7 on a 429 or a used-up RateLimit quota, spend a quota the server states evenly), and shares it with every process of the scope. Kept in the scope state: refused with --no-state'
            cand --max-concurrent 'At most N requests of the scope in flight across all processes; waiting for a slot counts against the budget. Refused with --no-state'
            cand --breaker 'Consecutive failed attempts that open a circuit breaker; 0 turns it off. Retryable 5xx (not 429) and failures after sending count for their endpoint (method and path), failures to reach the host for the whole scope. A run waits for an open breaker''s half-open moment when it fits --budget and --max-wait, and ends with CIRCUIT_OPEN when it does not'
            cand --breaker-cooldown 'The longest an open breaker waits between two probes when the server gave no delay: it opens for the first --backoff step and doubles after each failed probe up to this; a server''s delay sets the moment instead'
            cand -o 'Write the body to FILE (via a temporary file renamed on success, so a failed run leaves any existing FILE untouched); "-" is stdout. A GET whose body breaks off is resumed where it broke off when the server allows it (Accept-Ranges: bytes, and a strong ETag or Last-Modified)'
            cand --output 'Write the body to FILE (via a temporary file renamed on success, so a failed run leaves any existing FILE untouched); "-" is stdout. A GET whose body breaks off is resumed where it broke off when the server allows it (Accept-Ranges: bytes, and a strong ETag or Last-Modified)'
            cand -C 'Only "-": continue an existing -o FILE, asking only for the bytes after its end (Range), as curl''s -C -. The file must be the start of the current body; a server that sends it whole again replaces it'
            cand --continue-at 'Only "-": continue an existing -o FILE, asking only for the bytes after its end (Range), as curl''s -C -. The file must be the start of the current body; a server that sends it whole again replaces it'
            cand -D 'Write the final answer''s head to FILE ("-" is stdout) once the run ends, as curl''s -D, with the names and phrase of -i; a 4xx or 5xx answer''s head too. -D - without -o FILE is -i. Nothing is written when no answer came'
            cand --dump-header 'Write the final answer''s head to FILE ("-" is stdout) once the run ends, as curl''s -D, with the names and phrase of -i; a 4xx or 5xx answer''s head too. -D - without -o FILE is -i. Nothing is written when no answer came'
            cand -w 'Write FORMAT to stdout once the run ends, as curl''s -w; @FILE reads it from a file, its lines joined as curl joins them. Variables: %{http_code} (or response_code; 000 without an answer), url_effective (the URL asked for: with -L abide does not learn the last one), method, content_type, size_download, size_upload, time_total, num_retries, exitcode (abide''s), errormsg (empty on success, else the outcome''s reason), json (the outcome line, as --outcome stdout writes it), and stdout or stderr to switch where the rest goes; %header{NAME} is the final answer''s header; %% is %, and \n, \r, \t, \\ are escapes. time_total is the whole run''s, waits included; time_starttransfer is from sending the final attempt to its answer''s head (connecting included). time_connect is not measured and num_redirects is not counted: they write 0, as curl does for a value it does not know. An unknown variable is a usage error'
            cand --write-out 'Write FORMAT to stdout once the run ends, as curl''s -w; @FILE reads it from a file, its lines joined as curl joins them. Variables: %{http_code} (or response_code; 000 without an answer), url_effective (the URL asked for: with -L abide does not learn the last one), method, content_type, size_download, size_upload, time_total, num_retries, exitcode (abide''s), errormsg (empty on success, else the outcome''s reason), json (the outcome line, as --outcome stdout writes it), and stdout or stderr to switch where the rest goes; %header{NAME} is the final answer''s header; %% is %, and \n, \r, \t, \\ are escapes. time_total is the whole run''s, waits included; time_starttransfer is from sending the final attempt to its answer''s head (connecting included). time_connect is not measured and num_redirects is not counted: they write 0, as curl does for a value it does not know. An unknown variable is a usage error'
            cand --outcome 'Where the outcome line goes: stderr, stdout (needs -o), none, or a PATH appended to (refused before sending if it cannot be written). Usage errors write their USAGE_ERROR line there too'
            cand --log 'Append an audit log to FILE: one JSON line per event (request, answer or error, wait, outcome), credentials redacted; many runs may share it'
            cand --max-body 'Largest body kept in the --agent object; sizes like 1KiB, 2MiB, at most 4MiB, since the object holds it in memory several times over (--require checks bodies up to 64MiB). A body that is not UTF-8 comes in base64, with body_encoding "base64"'
            cand --require 'A 2xx answer succeeds only if its body is JSON with a value (null and [] included) at this RFC 6901 JSON Pointer (repeatable); else INVALID_RESPONSE, not retried'
            cand --no-progress 'Refuse, unsent, a request identical to one that ended NON_RETRYABLE or INVALID_RESPONSE N times in a row within 10 minutes (NO_PROGRESS); on by default with --agent (N = 3); 0 turns it off'
            cand --task 'With --idempotency-key auto: keep the generated key in the scope state under this task id, so that every rerun of the task sends the same key. The run is refused, unsent, if the key cannot be stored first, or if the scope already keeps 1024 live task keys'
            cand --task-ttl 'How long a task''s idempotency key is kept (never less)'
            cand --batch 'Send every request of FILE ("-" is stdin) instead of one URL: a line is a URL, or a JSON object {"id", "url", "method", "headers": {"Name": "value"}, "json" or "data", "output"} where every field but url is optional (id defaults to the line number). The flags apply to every item; an item''s fields override them. One outcome line per item, with its "id", goes to stdout as it ends (or to --outcome PATH); bodies go to the item''s output, to -o TEMPLATE ({id}, {n}), or nowhere. A bad line is its own USAGE_ERROR and the batch goes on. The summary goes to stderr; the exit code is 0 when every item succeeded, else that of the worst outcome (see the README). --task ID makes ID:{id} per item'
            cand --parallel 'With --batch: requests in flight at once in this process (each over a kept-alive connection), still under --max-concurrent, --rate and the scope gate shared with every other process [default: 4]'
            cand --journal 'With --batch: write down every item that ended (any outcome but a cancellation) in FILE, on the disk as it ends; a rerun with the same FILE skips those items, so a batch killed halfway resumes where it was'
            cand -L 'Follow redirects (at most 10), as curl does: 307 and 308 re-send the method and body; 303, and 301 or 302 after a POST, become a GET without a body; -u, Authorization and Cookie go on to the same origin only; a Retry-After on a redirect is waited first. Without -L a 3xx answer is final'
            cand --location 'Follow redirects (at most 10), as curl does: 307 and 308 re-send the method and body; 303, and 301 or 302 after a POST, become a GET without a body; -u, Authorization and Cookie go on to the same origin only; a Retry-After on a redirect is waited first. Without -L a 3xx answer is final'
            cand --http1.1 'Accepted, as curl''s --http1.1: abide speaks HTTP/1.1'
            cand --http2 'Refused with a word on why: abide speaks HTTP/1.1 only, which every HTTP/2 or HTTP/3 server also speaks'
            cand --http3 'See --http2'
            cand -k 'Do not verify the server''s TLS certificate'
            cand --insecure 'Do not verify the server''s TLS certificate'
            cand --ca-native 'Trust the operating system''s certificate store instead of the built-in roots'
            cand --compressed 'Ask for a compressed answer (gzip, deflate, br) and decode it. Without it no encoding is asked for, and a body is written as it came'
            cand --retry-connrefused 'Accepted, as curl''s: abide retries a refused connection anyway (a service that is starting), within --attempts and --budget'
            cand --idempotent 'Treat the request as safe to repeat without sending a key (GraphQL or search APIs that read with POST)'
            cand --no-state 'Keep and read no shared state at all'
            cand --state-required 'Fail (INTERNAL_ERROR, exit 1) instead of going on without shared state when the state store cannot be used'
            cand -N 'Write a body to stdout as it comes. Without it, stdout gets nothing of a body until its first MiB has arrived (or all of it, if smaller), so that a small body that breaks off is retried with nothing written. text/event-stream answers always stream'
            cand --no-buffer 'Write a body to stdout as it comes. Without it, stdout gets nothing of a body until its first MiB has arrived (or all of it, if smaller), so that a small body that breaks off is retried with nothing written. text/event-stream answers always stream'
            cand -i 'Write the answer''s head (status line, headers, a blank line) to stdout before its body, as curl''s -i: only the final answer''s, sent with the body once it is no longer held (see -N), so a retried attempt''s head is never seen; a final 4xx or 5xx answer writes its head without its body, as curl -f -i does, and a 2xx whose body never came whole, none. Header names come in lower case and the reason phrase is the standard one (ureq keeps neither as sent); with -L, only the last answer''s head. With -o FILE the head goes into FILE before the body (not with -C -); a failed run leaves FILE as it was, where curl writes a 4xx head in'
            cand --include 'Write the answer''s head (status line, headers, a blank line) to stdout before its body, as curl''s -i: only the final answer''s, sent with the body once it is no longer held (see -N), so a retried attempt''s head is never seen; a final 4xx or 5xx answer writes its head without its body, as curl -f -i does, and a 2xx whose body never came whole, none. Header names come in lower case and the reason phrase is the standard one (ureq keeps neither as sent); with -L, only the last answer''s head. With -o FILE the head goes into FILE before the body (not with -C -); a failed run leaves FILE as it was, where curl writes a 4xx head in'
            cand -I 'Send a HEAD request and write the answer''s head to stdout, as curl''s -I (that is -X HEAD -i)'
            cand --head 'Send a HEAD request and write the answer''s head to stdout, as curl''s -I (that is -X HEAD -i)'
            cand -s 'No progress display or notes; the outcome line is still written'
            cand --silent 'No progress display or notes; the outcome line is still written'
            cand -f 'curl''s -f, accepted so that curl lines port (-fsS, -fsSL): abide never writes the body of a 4xx or 5xx answer to stdout or -o anyway'
            cand --fail 'curl''s -f, accepted so that curl lines port (-fsS, -fsSL): abide never writes the body of a 4xx or 5xx answer to stdout or -o anyway'
            cand -S 'curl''s -S, accepted so that -sS ports: abide always says why a run failed, in the outcome line, -s or not'
            cand --show-error 'curl''s -S, accepted so that -sS ports: abide always says why a run failed, in the outcome line, -s or not'
            cand -v 'One line per attempt and per wait on stderr: the answer or error, the server''s delay, the wait chosen and why; and, as curl -v shows them, each request''s head ("> GET /path HTTP/1.1", then abide''s headers, credentials masked; not the framing headers ureq adds) and each answer''s head ("< HTTP/1.1 200 OK", then its headers, as -i writes them)'
            cand --verbose 'One line per attempt and per wait on stderr: the answer or error, the server''s delay, the wait chosen and why; and, as curl -v shows them, each request''s head ("> GET /path HTTP/1.1", then abide''s headers, credentials masked; not the framing headers ureq adds) and each answer''s head ("< HTTP/1.1 200 OK", then its headers, as -i writes them)'
            cand --agent 'Agent tool mode: stdout gets exactly one JSON object (the outcome plus body, body_truncated, body_encoding and headers), on success, failure and usage errors alike; nothing else is written'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand lab 'Run a local rate-limited HTTP server that catches clients which retry too early'
            cand demo 'Show in ten seconds what abide does, against a lab started in-process'
            cand mcp 'Serve abide as a Model Context Protocol tool (http_request) on stdio'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'abide;lab'= {
            cand --port 'Port to listen on, on 127.0.0.1 only (0 picks a free port)'
            cand --limit 'Requests each client may make per window before it gets 429'
            cand --window 'Length of each client''s fixed window, starting at its first request'
            cand --skew 'How much before its Retry-After moment a retry still counts as on time'
            cand --duration 'Stop after this long and print the summary (default: run until Ctrl-C)'
            cand --script 'Answer all clients from a fixed sequence instead of the limiter; the last step repeats. Steps are comma-separated, each STATUS followed by any of :ra=SECONDS (Retry-After), :delay=DURATION, and one of :close, :truncate, :hang. Example: 429:ra=1,503,200:delay=2s'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'abide;demo'= {
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'abide;mcp'= {
            cand --allow-host 'A host the model may reach (repeatable): a name or address as in the URL, or *.example.com for every subdomain. Without it, any host'
            cand --allow-writes 'Let the model send writes (POST, PUT, PATCH, DELETE, …); without it only GET, HEAD and OPTIONS'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'abide;help'= {
            cand lab 'Run a local rate-limited HTTP server that catches clients which retry too early'
            cand demo 'Show in ten seconds what abide does, against a lab started in-process'
            cand mcp 'Serve abide as a Model Context Protocol tool (http_request) on stdio'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'abide;help;lab'= {
        }
        &'abide;help;demo'= {
        }
        &'abide;help;mcp'= {
        }
        &'abide;help;help'= {
        }
    ]
    $completions[$command]
}
