# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_abide_global_optspecs
    string join \n generate= X/request= H/header= d/data= data-binary= json= L/location u/user= A/user-agent= e/referer= oauth2-bearer= http1.1 http2 http3 x/proxy= k/insecure cacert= ca-native connect-timeout= m/max-time= stall= compressed max-ratio= attempts= retry= retry-connrefused budget= max-wait= retry-on= floor= jitter= backoff= backoff-max= idempotency-key= idempotent scope= state-dir= no-state state= state-required rate= max-concurrent= breaker= breaker-cooldown= o/output= C/continue-at= N/no-buffer i/include D/dump-header= w/write-out= I/head outcome= s/silent f/fail S/show-error v/verbose log= agent max-body= require= no-progress= task= task-ttl= batch= parallel= journal= h/help V/version
end

function __fish_abide_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_abide_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_abide_using_subcommand
    set -l cmd (__fish_abide_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c abide -n "__fish_abide_needs_command" -l generate -d 'Print the man page or a shell completion script (see scripts/generate-docs)' -r -f -a "man\t''
complete-bash\t''
complete-zsh\t''
complete-fish\t''
complete-powershell\t''
complete-elvish\t''"
complete -c abide -n "__fish_abide_needs_command" -s X -l request -d 'HTTP method (default: GET, or POST when a body is given)' -r
complete -c abide -n "__fish_abide_needs_command" -s H -l header -d 'Add a header, "Name: value" (repeatable). "Name:" removes a default header (User-Agent, Accept, Content-Type). Control characters are refused. (Checked by `plan`, not by clap: clap would quote a refused value, and a malformed header is often a credential.)' -r
complete -c abide -n "__fish_abide_needs_command" -s d -l data -d 'Body as form data; @FILE reads a file, @- reads stdin (read once, replayed on every attempt). Sets POST and Content-Type: application/x-www-form-urlencoded. Repeated values are joined with &' -r
complete -c abide -n "__fish_abide_needs_command" -l data-binary -d 'Body as raw bytes; @FILE and @- as for --data' -r
complete -c abide -n "__fish_abide_needs_command" -l json -d 'JSON body (@FILE and @- allowed); sets POST, Content-Type and Accept to application/json' -r
complete -c abide -n "__fish_abide_needs_command" -s u -l user -d 'Basic authentication, USER:PASSWORD' -r
complete -c abide -n "__fish_abide_needs_command" -s A -l user-agent -d 'User-Agent header [default: abide/VERSION]' -r
complete -c abide -n "__fish_abide_needs_command" -s e -l referer -d 'Referer header, as curl\'s -e' -r
complete -c abide -n "__fish_abide_needs_command" -l oauth2-bearer -d 'Authorization: Bearer TOKEN, masked like -u in every output. (Checked by `plan`, not by clap, which would quote a refused token.)' -r
complete -c abide -n "__fish_abide_needs_command" -s x -l proxy -d 'Proxy URL (http://, https://, socks5://); the usual proxy environment variables are honoured without it' -r
complete -c abide -n "__fish_abide_needs_command" -l cacert -d 'Trust the CA certificates in this PEM file instead of the built-in roots; a server whose certificate is one of them exactly (a self-signed one) is trusted too, as curl does' -r -F
complete -c abide -n "__fish_abide_needs_command" -l connect-timeout -d 'Longest time to connect, per attempt' -r
complete -c abide -n "__fish_abide_needs_command" -s m -l max-time -d 'Hard limit on one attempt, body included, as curl\'s -m [default: none: a stall fails an attempt, and a body that keeps flowing is never cut]' -r
complete -c abide -n "__fish_abide_needs_command" -l stall -d 'Longest time without a single byte from the server, while waiting for the answer\'s head or during its body (or without the server taking a byte of the request): such an attempt fails, and is retried where safe' -r
complete -c abide -n "__fish_abide_needs_command" -l max-ratio -d 'With --compressed: stop a body (INVALID_RESPONSE) that decodes to more than RATIO times its encoded size, past its first MiB: a compression bomb' -r
complete -c abide -n "__fish_abide_needs_command" -l attempts -d 'Total requests at most; 1 means no retry' -r
complete -c abide -n "__fish_abide_needs_command" -l retry -d 'curl\'s spelling: N retries, that is N+1 attempts (wins over ABIDE_ATTEMPTS)' -r
complete -c abide -n "__fish_abide_needs_command" -l budget -d 'Wall-clock budget for the whole run, waits and requests together. No wait that would end beyond it is started, nor any attempt after it. Given on the command line it is a hard limit: the attempt in flight is cut at it. The default (or ABIDE_BUDGET) bounds the retrying and the wait for an answer, but never cuts a 2xx body that keeps flowing: a long download ends when it is done, or when it stalls (--stall)' -r
complete -c abide -n "__fish_abide_needs_command" -l max-wait -d 'Longest single wait accepted; a longer server delay ends the run at once with BUDGET_EXHAUSTED [default: no limit but the budget]' -r
complete -c abide -n "__fish_abide_needs_command" -l retry-on -d 'Retryable statuses, comma-separated' -r
complete -c abide -n "__fish_abide_needs_command" -l floor -d 'Least wait after a server-given delay: Retry-After 0, negative values and past dates wait this long, never zero' -r
complete -c abide -n "__fish_abide_needs_command" -l jitter -d 'Upward-only jitter on server-given delays: up to FRACTION of the wait, at most 2 s; 0 turns it off' -r
complete -c abide -n "__fish_abide_needs_command" -l backoff -d 'First backoff step when the server gave no delay (full jitter, doubling)' -r
complete -c abide -n "__fish_abide_needs_command" -l backoff-max -d 'Largest backoff step' -r
complete -c abide -n "__fish_abide_needs_command" -l idempotency-key -d 'Send this Idempotency-Key (or a random UUID for "auto") on every attempt, and treat the request as safe to repeat' -r
complete -c abide -n "__fish_abide_needs_command" -l scope -d 'What a provider\'s limit applies to: runs of one scope share one Retry-After gate, --rate, --max-concurrent and circuit breaker [default: the URL\'s origin, scheme://host:port]' -r
complete -c abide -n "__fish_abide_needs_command" -l state-dir -d 'Where scope state is kept, one small private file per scope; refused if another user owns it or others may write to it [default: $XDG_STATE_HOME/abide, else ~/.local/state/abide]' -r -F
complete -c abide -n "__fish_abide_needs_command" -l state -d 'Share scope state through Redis instead of local files, so that many machines share one gate, pace, limit and breaker: redis://[USER:PASSWORD@]HOST:PORT[/DB], or rediss:// for TLS' -r
complete -c abide -n "__fish_abide_needs_command" -l rate -d 'Client-side pacing shared by every process of the scope, N/UNIT (5/s, 100/m, 1000/h): no burst beyond it even when many start at once. "auto" learns the fastest pace the server accepts from its answers (start at 5/s, speed up while they succeed, cut by 0.7 on a 429 or a used-up RateLimit quota, spend a quota the server states evenly), and shares it with every process of the scope. Kept in the scope state: refused with --no-state' -r
complete -c abide -n "__fish_abide_needs_command" -l max-concurrent -d 'At most N requests of the scope in flight across all processes; waiting for a slot counts against the budget. Refused with --no-state' -r
complete -c abide -n "__fish_abide_needs_command" -l breaker -d 'Consecutive failed attempts that open a circuit breaker; 0 turns it off. Retryable 5xx (not 429) and failures after sending count for their endpoint (method and path), failures to reach the host for the whole scope. A run waits for an open breaker\'s half-open moment when it fits --budget and --max-wait, and ends with CIRCUIT_OPEN when it does not' -r
complete -c abide -n "__fish_abide_needs_command" -l breaker-cooldown -d 'The longest an open breaker waits between two probes when the server gave no delay: it opens for the first --backoff step and doubles after each failed probe up to this; a server\'s delay sets the moment instead' -r
complete -c abide -n "__fish_abide_needs_command" -s o -l output -d 'Write the body to FILE (via a temporary file renamed on success, so a failed run leaves any existing FILE untouched); "-" is stdout. A GET whose body breaks off is resumed where it broke off when the server allows it (Accept-Ranges: bytes, and a strong ETag or Last-Modified)' -r -F
complete -c abide -n "__fish_abide_needs_command" -s C -l continue-at -d 'Only "-": continue an existing -o FILE, asking only for the bytes after its end (Range), as curl\'s -C -. The file must be the start of the current body; a server that sends it whole again replaces it' -r -f -a "-\t''"
complete -c abide -n "__fish_abide_needs_command" -s D -l dump-header -d 'Write the final answer\'s head to FILE ("-" is stdout) once the run ends, as curl\'s -D, with the names and phrase of -i; a 4xx or 5xx answer\'s head too. -D - without -o FILE is -i. Nothing is written when no answer came' -r -F
complete -c abide -n "__fish_abide_needs_command" -s w -l write-out -d 'Write FORMAT to stdout once the run ends, as curl\'s -w; @FILE reads it from a file, its lines joined as curl joins them. Variables: %{http_code} (or response_code; 000 without an answer), url_effective (the URL asked for: with -L abide does not learn the last one), method, content_type, size_download, size_upload, time_total, num_retries, exitcode (abide\'s), errormsg (empty on success, else the outcome\'s reason), json (the outcome line, as --outcome stdout writes it), and stdout or stderr to switch where the rest goes; %header{NAME} is the final answer\'s header; %% is %, and \\n, \\r, \\t, \\\\ are escapes. time_total is the whole run\'s, waits included; time_starttransfer is from sending the final attempt to its answer\'s head (connecting included). time_connect is not measured and num_redirects is not counted: they write 0, as curl does for a value it does not know. An unknown variable is a usage error' -r
complete -c abide -n "__fish_abide_needs_command" -l outcome -d 'Where the outcome line goes: stderr, stdout (needs -o), none, or a PATH appended to (refused before sending if it cannot be written). Usage errors write their USAGE_ERROR line there too' -r
complete -c abide -n "__fish_abide_needs_command" -l log -d 'Append an audit log to FILE: one JSON line per event (request, answer or error, wait, outcome), credentials redacted; many runs may share it' -r -F
complete -c abide -n "__fish_abide_needs_command" -l max-body -d 'Largest body kept in the --agent object; sizes like 1KiB, 2MiB, at most 4MiB, since the object holds it in memory several times over (--require checks bodies up to 64MiB). A body that is not UTF-8 comes in base64, with body_encoding "base64"' -r
complete -c abide -n "__fish_abide_needs_command" -l require -d 'A 2xx answer succeeds only if its body is JSON with a value (null and [] included) at this RFC 6901 JSON Pointer (repeatable); else INVALID_RESPONSE, not retried' -r
complete -c abide -n "__fish_abide_needs_command" -l no-progress -d 'Refuse, unsent, a request identical to one that ended NON_RETRYABLE or INVALID_RESPONSE N times in a row within 10 minutes (NO_PROGRESS); on by default with --agent (N = 3); 0 turns it off' -r
complete -c abide -n "__fish_abide_needs_command" -l task -d 'With --idempotency-key auto: keep the generated key in the scope state under this task id, so that every rerun of the task sends the same key. The run is refused, unsent, if the key cannot be stored first, or if the scope already keeps 1024 live task keys' -r
complete -c abide -n "__fish_abide_needs_command" -l task-ttl -d 'How long a task\'s idempotency key is kept (never less)' -r
complete -c abide -n "__fish_abide_needs_command" -l batch -d 'Send every request of FILE ("-" is stdin) instead of one URL: a line is a URL, or a JSON object {"id", "url", "method", "headers": {"Name": "value"}, "json" or "data", "output"} where every field but url is optional (id defaults to the line number). The flags apply to every item; an item\'s fields override them. One outcome line per item, with its "id", goes to stdout as it ends (or to --outcome PATH); bodies go to the item\'s output, to -o TEMPLATE ({id}, {n}), or nowhere. A bad line is its own USAGE_ERROR and the batch goes on. The summary goes to stderr; the exit code is 0 when every item succeeded, else that of the worst outcome (see the README). --task ID makes ID:{id} per item' -r -F
complete -c abide -n "__fish_abide_needs_command" -l parallel -d 'With --batch: requests in flight at once in this process (each over a kept-alive connection), still under --max-concurrent, --rate and the scope gate shared with every other process [default: 4]' -r
complete -c abide -n "__fish_abide_needs_command" -l journal -d 'With --batch: write down every item that ended (any outcome but a cancellation) in FILE, on the disk as it ends; a rerun with the same FILE skips those items, so a batch killed halfway resumes where it was' -r -F
complete -c abide -n "__fish_abide_needs_command" -s L -l location -d 'Follow redirects (at most 10), as curl does: 307 and 308 re-send the method and body; 303, and 301 or 302 after a POST, become a GET without a body; -u, Authorization and Cookie go on to the same origin only; a Retry-After on a redirect is waited first. Without -L a 3xx answer is final'
complete -c abide -n "__fish_abide_needs_command" -l http1.1 -d 'Accepted, as curl\'s --http1.1: abide speaks HTTP/1.1'
complete -c abide -n "__fish_abide_needs_command" -l http2 -d 'Refused with a word on why: abide speaks HTTP/1.1 only, which every HTTP/2 or HTTP/3 server also speaks'
complete -c abide -n "__fish_abide_needs_command" -l http3 -d 'See --http2'
complete -c abide -n "__fish_abide_needs_command" -s k -l insecure -d 'Do not verify the server\'s TLS certificate'
complete -c abide -n "__fish_abide_needs_command" -l ca-native -d 'Trust the operating system\'s certificate store instead of the built-in roots'
complete -c abide -n "__fish_abide_needs_command" -l compressed -d 'Ask for a compressed answer (gzip, deflate, br) and decode it. Without it no encoding is asked for, and a body is written as it came'
complete -c abide -n "__fish_abide_needs_command" -l retry-connrefused -d 'Accepted, as curl\'s: abide retries a refused connection anyway (a service that is starting), within --attempts and --budget'
complete -c abide -n "__fish_abide_needs_command" -l idempotent -d 'Treat the request as safe to repeat without sending a key (GraphQL or search APIs that read with POST)'
complete -c abide -n "__fish_abide_needs_command" -l no-state -d 'Keep and read no shared state at all'
complete -c abide -n "__fish_abide_needs_command" -l state-required -d 'Fail (INTERNAL_ERROR, exit 1) instead of going on without shared state when the state store cannot be used'
complete -c abide -n "__fish_abide_needs_command" -s N -l no-buffer -d 'Write a body to stdout as it comes. Without it, stdout gets nothing of a body until its first MiB has arrived (or all of it, if smaller), so that a small body that breaks off is retried with nothing written. text/event-stream answers always stream'
complete -c abide -n "__fish_abide_needs_command" -s i -l include -d 'Write the answer\'s head (status line, headers, a blank line) to stdout before its body, as curl\'s -i: only the final answer\'s, sent with the body once it is no longer held (see -N), so a retried attempt\'s head is never seen; a final 4xx or 5xx answer writes its head without its body, as curl -f -i does, and a 2xx whose body never came whole, none. Header names come in lower case and the reason phrase is the standard one (ureq keeps neither as sent); with -L, only the last answer\'s head. With -o FILE the head goes into FILE before the body (not with -C -); a failed run leaves FILE as it was, where curl writes a 4xx head in'
complete -c abide -n "__fish_abide_needs_command" -s I -l head -d 'Send a HEAD request and write the answer\'s head to stdout, as curl\'s -I (that is -X HEAD -i)'
complete -c abide -n "__fish_abide_needs_command" -s s -l silent -d 'No progress display or notes; the outcome line is still written'
complete -c abide -n "__fish_abide_needs_command" -s f -l fail -d 'curl\'s -f, accepted so that curl lines port (-fsS, -fsSL): abide never writes the body of a 4xx or 5xx answer to stdout or -o anyway'
complete -c abide -n "__fish_abide_needs_command" -s S -l show-error -d 'curl\'s -S, accepted so that -sS ports: abide always says why a run failed, in the outcome line, -s or not'
complete -c abide -n "__fish_abide_needs_command" -s v -l verbose -d 'One line per attempt and per wait on stderr: the answer or error, the server\'s delay, the wait chosen and why; and, as curl -v shows them, each request\'s head ("> GET /path HTTP/1.1", then abide\'s headers, credentials masked; not the framing headers ureq adds) and each answer\'s head ("< HTTP/1.1 200 OK", then its headers, as -i writes them)'
complete -c abide -n "__fish_abide_needs_command" -l agent -d 'Agent tool mode: stdout gets exactly one JSON object (the outcome plus body, body_truncated, body_encoding and headers), on success, failure and usage errors alike; nothing else is written'
complete -c abide -n "__fish_abide_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c abide -n "__fish_abide_needs_command" -s V -l version -d 'Print version'
complete -c abide -n "__fish_abide_needs_command" -a "lab" -d 'Run a local rate-limited HTTP server that catches clients which retry too early'
complete -c abide -n "__fish_abide_needs_command" -a "demo" -d 'Show in ten seconds what abide does, against a lab started in-process'
complete -c abide -n "__fish_abide_needs_command" -a "mcp" -d 'Serve abide as a Model Context Protocol tool (http_request) on stdio'
complete -c abide -n "__fish_abide_needs_command" -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c abide -n "__fish_abide_using_subcommand lab" -l port -d 'Port to listen on, on 127.0.0.1 only (0 picks a free port)' -r
complete -c abide -n "__fish_abide_using_subcommand lab" -l limit -d 'Requests each client may make per window before it gets 429' -r
complete -c abide -n "__fish_abide_using_subcommand lab" -l window -d 'Length of each client\'s fixed window, starting at its first request' -r
complete -c abide -n "__fish_abide_using_subcommand lab" -l skew -d 'How much before its Retry-After moment a retry still counts as on time' -r
complete -c abide -n "__fish_abide_using_subcommand lab" -l duration -d 'Stop after this long and print the summary (default: run until Ctrl-C)' -r
complete -c abide -n "__fish_abide_using_subcommand lab" -l script -d 'Answer all clients from a fixed sequence instead of the limiter; the last step repeats. Steps are comma-separated, each STATUS followed by any of :ra=SECONDS (Retry-After), :delay=DURATION, and one of :close, :truncate, :hang. Example: 429:ra=1,503,200:delay=2s' -r
complete -c abide -n "__fish_abide_using_subcommand lab" -s h -l help -d 'Print help'
complete -c abide -n "__fish_abide_using_subcommand demo" -s h -l help -d 'Print help'
complete -c abide -n "__fish_abide_using_subcommand mcp" -l allow-host -d 'A host the model may reach (repeatable): a name or address as in the URL, or *.example.com for every subdomain. Without it, any host' -r
complete -c abide -n "__fish_abide_using_subcommand mcp" -l allow-writes -d 'Let the model send writes (POST, PUT, PATCH, DELETE, …); without it only GET, HEAD and OPTIONS'
complete -c abide -n "__fish_abide_using_subcommand mcp" -s h -l help -d 'Print help'
complete -c abide -n "__fish_abide_using_subcommand help; and not __fish_seen_subcommand_from lab demo mcp help" -f -a "lab" -d 'Run a local rate-limited HTTP server that catches clients which retry too early'
complete -c abide -n "__fish_abide_using_subcommand help; and not __fish_seen_subcommand_from lab demo mcp help" -f -a "demo" -d 'Show in ten seconds what abide does, against a lab started in-process'
complete -c abide -n "__fish_abide_using_subcommand help; and not __fish_seen_subcommand_from lab demo mcp help" -f -a "mcp" -d 'Serve abide as a Model Context Protocol tool (http_request) on stdio'
complete -c abide -n "__fish_abide_using_subcommand help; and not __fish_seen_subcommand_from lab demo mcp help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
