# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_abide_global_optspecs
    string join \n url= K/config= generate= X/request= H/header= d/data= data-ascii= data-raw= data-binary= data-urlencode= G/get F/form= form-string= T/upload-file= json= L/location u/user= A/user-agent= e/referer= oauth2-bearer= http1.1 http2 http3 x/proxy= k/insecure cacert= ca-native connect-timeout= m/max-time= stall= compressed max-ratio= attempts= retry= retry-connrefused budget= max-wait= retry-on= floor= jitter= backoff= backoff-max= idempotency-key= idempotent scope= state-dir= no-state state= state-required rate= max-concurrent= breaker= breaker-cooldown= retry-budget= max-delayed= policy= o/output= O/remote-name J/remote-header-name output-dir= create-dirs clobber no-clobber fail-with-body remove-on-error C/continue-at= N/no-buffer i/include D/dump-header= w/write-out= I/head outcome= s/silent f/fail S/show-error v/verbose log= agent max-body= require= no-progress= task= task-ttl= task-attempts= check= id-pointer= escalate= b/cookie= j/junk-session-cookies c/cookie-jar= 4/ipv4 6/ipv6 resolve= connect-to= unix-socket= location-trusted max-redirs= U/proxy-user= p/proxytunnel noproxy= E/cert= key= n/netrc netrc-file= netrc-optional y/speed-time= Y/speed-limit= limit-rate= retry-delay= retry-all-errors h/help V/version
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

complete -c abide -n "__fish_abide_needs_command" -l url -d 'The URL, as a flag (curl\'s --url, as a config file writes it)' -r
complete -c abide -n "__fish_abide_needs_command" -s K -l config -d 'curl\'s -K: read more flags from FILE, one a line, as curl writes them (`url = "…"`, `header = "Name: value"`, `--silent`, `-x URL`; `#` starts a comment); they take the place of the -K. ~/.curlrc is never read unasked' -r -F
complete -c abide -n "__fish_abide_needs_command" -l generate -d 'Print the man page or a shell completion script (see scripts/generate-docs)' -r -f -a "man\t''
complete-bash\t''
complete-zsh\t''
complete-fish\t''
complete-powershell\t''
complete-elvish\t''"
complete -c abide -n "__fish_abide_needs_command" -s X -l request -d 'HTTP method (default: GET, or POST when a body is given)' -r
complete -c abide -n "__fish_abide_needs_command" -s H -l header -d 'Add a header, "Name: value" (repeatable; several of one name are all sent). "Name:" removes a default header (User-Agent, Accept, Content-Type). Control characters are refused. (Checked by `plan`, not by clap: clap would quote a refused value, and a malformed header is often a credential.)' -r
complete -c abide -n "__fish_abide_needs_command" -s d -l data -d 'Body as form data; @FILE reads a file, @- reads stdin (read once, replayed on every attempt), without their carriage returns and newlines, as curl reads them. Sets POST and Content-Type: application/x-www-form-urlencoded. Every --data, --data-* value is joined to the others with &, in order' -r
complete -c abide -n "__fish_abide_needs_command" -l data-ascii -d 'The same as --data' -r
complete -c abide -n "__fish_abide_needs_command" -l data-raw -d 'As --data, but a leading @ is just a character' -r
complete -c abide -n "__fish_abide_needs_command" -l data-binary -d 'Body as raw bytes; @FILE and @- as for --data, kept byte for byte' -r
complete -c abide -n "__fish_abide_needs_command" -l data-urlencode -d 'As --data, URL-encoded as curl does: CONTENT, =CONTENT (both encoded whole), NAME=CONTENT (CONTENT encoded), @FILE, NAME@FILE (the file\'s bytes encoded; @- is stdin)' -r
complete -c abide -n "__fish_abide_needs_command" -s F -l form -d 'A multipart/form-data part, as curl\'s -F (repeatable, in order): NAME=VALUE, NAME=@FILE (a file upload, its name as filename, a type from its extension as curl guesses it), NAME=<FILE (the file\'s text as the value), each with ;type=TYPE and ;filename=NAME; a value may be quoted ("a;b"). Sets POST' -r
complete -c abide -n "__fish_abide_needs_command" -l form-string -d 'As -F NAME=VALUE, the VALUE taken literally: a leading @ or <, and ;type=, mean nothing (curl\'s --form-string)' -r
complete -c abide -n "__fish_abide_needs_command" -s T -l upload-file -d 'PUT the bytes of FILE ("-" is stdin, read once), as curl\'s -T; a URL without a path, or ending in /, gets the file\'s name appended' -r -F
complete -c abide -n "__fish_abide_needs_command" -l json -d 'JSON body (@FILE and @- allowed, kept byte for byte; repeated values are joined as they are, as curl joins them); sets POST, Content-Type and Accept to application/json' -r
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
complete -c abide -n "__fish_abide_needs_command" -l rate -d 'Client-side pacing shared by every process of the scope, N/UNIT (5/s, 100/m, 1000/h): no burst beyond it even when many start at once. Kept in the scope state: refused with --no-state' -r
complete -c abide -n "__fish_abide_needs_command" -l max-concurrent -d 'At most N requests of the scope in flight across all processes; waiting for a slot counts against the budget. Refused with --no-state' -r
complete -c abide -n "__fish_abide_needs_command" -l breaker -d 'Consecutive failed attempts that open a circuit breaker; 0 turns it off. Retryable 5xx (not 429) and failures after sending count for their endpoint (method and path), failures to reach the host for the whole scope. A run waits for an open breaker\'s half-open moment when it fits --budget and --max-wait, and ends with CIRCUIT_OPEN when it does not' -r
complete -c abide -n "__fish_abide_needs_command" -l breaker-cooldown -d 'The longest an open breaker waits between two probes when the server gave no delay: it opens for the first --backoff step and doubles after each failed probe up to this; a server\'s delay sets the moment instead' -r
complete -c abide -n "__fish_abide_needs_command" -l retry-budget -d 'The scope\'s retry budget, shared by all its processes (and machines, with a Redis --state): first attempts always go; a retry spends one of 5 held in the scope, which each successful first attempt refills by PERCENT of a retry and time by one every 10 s. With none left, a run alone keeps all its attempts; one that would retry while another run spent from it in the last 10 s ends at once, RETRY_EXHAUSTED, with next_allowed_at when one is back. 0 turns it off' -r
complete -c abide -n "__fish_abide_needs_command" -l max-delayed -d 'At most N runs of the scope wait on its gate at once, across all processes; another run that would wait ends at once with BUDGET_EXHAUSTED and next_allowed_at (the scope\'s queue is full). Refused with --no-state' -r
complete -c abide -n "__fish_abide_needs_command" -l policy -d 'Limits per scope (TOML) that flags may tighten but never loosen: a flag that asks for more is lowered to it, saying so in the outcome\'s reason [default: $XDG_CONFIG_HOME/abide/policy.toml (else ~/.config/abide/policy.toml) when it exists]' -r -F
complete -c abide -n "__fish_abide_needs_command" -s o -l output -d 'Write the body to FILE (via a temporary file renamed on success, so a failed run leaves any existing FILE untouched); "-" is stdout. A GET whose body breaks off is resumed where it broke off when the server allows it (Accept-Ranges: bytes, and a strong ETag or Last-Modified)' -r -F
complete -c abide -n "__fish_abide_needs_command" -l output-dir -d 'The directory -o FILE and -O write into, as curl\'s --output-dir' -r -F
complete -c abide -n "__fish_abide_needs_command" -s C -l continue-at -d 'Only "-": continue an existing -o FILE, asking only for the bytes after its end (Range), as curl\'s -C -. The file must be the start of the current body; a server that sends it whole again replaces it' -r -f -a "-\t''"
complete -c abide -n "__fish_abide_needs_command" -s D -l dump-header -d 'Write the final answer\'s head to FILE ("-" is stdout) once the run ends, as curl\'s -D, with the names and phrase of -i; a 4xx or 5xx answer\'s head too. -D - without -o FILE is -i. Nothing is written when no answer came' -r -F
complete -c abide -n "__fish_abide_needs_command" -s w -l write-out -d 'Write FORMAT to stdout once the run ends, as curl\'s -w; @FILE reads it from a file, its lines joined as curl joins them. Variables: %{http_code} (or response_code; 000 without an answer), url_effective (with -L, the last hop\'s), method, content_type, size_download, size_upload, time_total, num_retries, num_redirects, num_connects, remote_ip and remote_port (the first address the name resolved to), exitcode (abide\'s), errormsg (empty on success, else the outcome\'s reason), json (the outcome line, as --outcome stdout writes it), and stdout or stderr to switch where the rest goes; %header{NAME} is the final answer\'s header; %% is %, and \\n, \\r, \\t, \\\\ are escapes. time_total is the whole run\'s, waits included; time_namelookup, time_connect, time_appconnect (TLS; 0 without) and time_starttransfer are the final attempt\'s, from its start. An unknown variable is a usage error' -r
complete -c abide -n "__fish_abide_needs_command" -l outcome -d 'Where the outcome line goes: stderr, stdout (needs -o), none, or a PATH appended to (refused before sending if it cannot be written). Usage errors write their USAGE_ERROR line there too' -r
complete -c abide -n "__fish_abide_needs_command" -l log -d 'Append an audit log to FILE: one JSON line per event (request, answer or error, wait, outcome), credentials redacted; many runs may share it' -r -F
complete -c abide -n "__fish_abide_needs_command" -l max-body -d 'Largest body kept in the --agent object; sizes like 1KiB, 2MiB, at most 4MiB, since the object holds it in memory several times over (--require checks bodies up to 64MiB). A body that is not UTF-8 comes in base64, with body_encoding "base64"' -r
complete -c abide -n "__fish_abide_needs_command" -l require -d 'A 2xx answer succeeds only if its body is JSON with a value (null and [] included) at this RFC 6901 JSON Pointer (repeatable); else INVALID_RESPONSE, not retried' -r
complete -c abide -n "__fish_abide_needs_command" -l no-progress -d 'Refuse, unsent, a request identical to one that ended NON_RETRYABLE or INVALID_RESPONSE N times in a row within 10 minutes (NO_PROGRESS); on by default with --agent (N = 3); 0 turns it off' -r
complete -c abide -n "__fish_abide_needs_command" -l task -d 'With --idempotency-key auto: keep the generated key in the scope state under this task id, so that every rerun of the task sends the same key. The run is refused, unsent, if the key cannot be stored first, or if the scope already keeps 1024 live task keys' -r
complete -c abide -n "__fish_abide_needs_command" -l task-ttl -d 'How long a task\'s idempotency key is kept (never less)' -r
complete -c abide -n "__fish_abide_needs_command" -l task-attempts -d 'At most N requests for a --task across all its runs: a run that would need more ends NEEDS_HUMAN (exit 10), as does every rerun after, unsent. Runs without --task are not counted (so that `abide mcp --task-attempts N` bounds every task the model runs)' -r
complete -c abide -n "__fish_abide_needs_command" -l check -d 'When a write\'s effect is unknown (no answer after sending it, or a retryable 5xx), GET this URL first (same origin, headers and credentials; {idempotency_key} is replaced by the key sent): a 2xx (meeting --require) means it happened (SUCCEEDED, "reconciled": true, the check\'s body as the body); 404 or 410 that it did not (the write goes again, same key, within attempts and budget); anything else NEEDS_HUMAN (exit 10), never a replay' -r
complete -c abide -n "__fish_abide_needs_command" -l id-pointer -d 'Where a 2xx body names what the write created (an RFC 6901 JSON Pointer, e.g. /id): the outcome\'s operation_id (else a 201\'s Location), kept with the --task. The body is held in memory to read it, up to 64MiB, as for --require' -r
complete -c abide -n "__fish_abide_needs_command" -l escalate -d 'Append one JSON record to FILE (0600) for each run that ends SIDE_EFFECT_UNKNOWN, NO_PROGRESS or NEEDS_HUMAN: what was sent where, every attempt with its status and rate-limit headers, the budget used, the key, the operation_id and the safe ways on; no body, no secret' -r -F
complete -c abide -n "__fish_abide_needs_command" -s b -l cookie -d 'Cookies to send, "NAME=VALUE; N2=V2" (sent as given on every request, -L hops too); or, without a "=", a FILE to read cookies from (a Netscape cookie file or Set-Cookie: lines, as curl reads them; a missing file is no cookies), which turns on the cookie engine: every answer\'s Set-Cookie (a redirect\'s too) is kept and sent on where domain, path, Secure and expiry allow, as curl does. Repeatable. A -H "Cookie: ..." of your own is then the only one sent, as curl\'s' -r
complete -c abide -n "__fish_abide_needs_command" -s c -l cookie-jar -d 'Write every cookie the run ends with to FILE, in curl\'s Netscape format, through a temporary file renamed over it; "-" is stdout. Turns on the cookie engine, as -b FILE does' -r -F
complete -c abide -n "__fish_abide_needs_command" -l resolve -d 'HOST:PORT:ADDR[,ADDR...]: connect to ADDR for HOST at PORT, as if the name resolved to it; the URL, Host and TLS name stay. HOST may be * for any name (repeatable)' -r
complete -c abide -n "__fish_abide_needs_command" -l connect-to -d 'HOST1:PORT1:HOST2:PORT2: a connection to HOST1 at PORT1 goes to HOST2 at PORT2 instead; an empty part matches any (HOST1, PORT1) or keeps what it was (HOST2, PORT2). Repeatable; the first match wins' -r
complete -c abide -n "__fish_abide_needs_command" -l unix-socket -d 'Connect to this Unix socket instead of the URL\'s host and port (the URL still gives Host and path), as curl\'s: http://localhost/... to a local service such as /var/run/docker.sock' -r -F
complete -c abide -n "__fish_abide_needs_command" -l max-redirs -d 'With -L, follow at most N redirects per attempt (default 50, as curl; -1 is no limit); one more ends the run NON_RETRYABLE with curl\'s words "Maximum (N) redirects followed" (curl\'s exit 47)' -r
complete -c abide -n "__fish_abide_needs_command" -s U -l proxy-user -d 'USER:PASSWORD for -x\'s proxy, as curl\'s; masked like -u. (A proxy from the environment takes them in its URL.)' -r
complete -c abide -n "__fish_abide_needs_command" -l noproxy -d 'Hosts to reach without a proxy, comma-separated, as curl matches them: a name matches itself and its subdomains, * matches all. Decided for the URL\'s host, for the whole run' -r
complete -c abide -n "__fish_abide_needs_command" -s E -l cert -d 'A client certificate (PEM) to show the server; its key is in FILE too, or in --key. An encrypted key (FILE:PASSWORD) is refused: decrypt it first (openssl pkey -in key.pem -out plain.pem)' -r
complete -c abide -n "__fish_abide_needs_command" -l key -d 'The private key (PEM, unencrypted) of --cert' -r -F
complete -c abide -n "__fish_abide_needs_command" -l netrc-file -d 'As --netrc, from FILE' -r -F
complete -c abide -n "__fish_abide_needs_command" -s y -l speed-time -d 'With -Y: the span over which the body\'s speed is measured (curl\'s seconds; 30 when only -Y is given). Alone, it means -Y 1: an attempt that gets no byte for that long fails, as --stall, which it shortens' -r
complete -c abide -n "__fish_abide_needs_command" -s Y -l speed-limit -d 'An attempt whose body comes slower than BYTES per second over --speed-time fails (and is retried or resumed as a broken-off body)' -r
complete -c abide -n "__fish_abide_needs_command" -l limit-rate -d 'Read the answer\'s body at most RATE bytes per second (k, m, g suffixes are 1024-based, as curl\'s); 0 is no limit. Uploads are not paced' -r
complete -c abide -n "__fish_abide_needs_command" -l retry-delay -d 'Wait SECONDS between attempts when the server gives no delay, instead of the exponential backoff; a server\'s Retry-After still wins. 0 keeps the backoff, as curl' -r
complete -c abide -n "__fish_abide_needs_command" -s G -l get -d 'The --data values go into the URL\'s query (after ? or &) and the request is a GET (a HEAD with -I), as curl\'s -G'
complete -c abide -n "__fish_abide_needs_command" -s L -l location -d 'Follow redirects (at most 50, see --max-redirs), as curl does: 307 and 308 re-send the method and body; 303, and 301 or 302 after a POST, become a GET without a body; -u, Authorization and Cookie go on to the same origin only (but with --location-trusted); a Retry-After on a redirect is waited first. Without -L a 3xx answer is final'
complete -c abide -n "__fish_abide_needs_command" -l http1.1 -d 'Accepted, as curl\'s --http1.1: abide speaks HTTP/1.1'
complete -c abide -n "__fish_abide_needs_command" -l http2 -d 'Refused with a word on why: abide speaks HTTP/1.1 only, which every HTTP/2 or HTTP/3 server also speaks'
complete -c abide -n "__fish_abide_needs_command" -l http3 -d 'See --http2'
complete -c abide -n "__fish_abide_needs_command" -s k -l insecure -d 'Do not verify the server\'s TLS certificate'
complete -c abide -n "__fish_abide_needs_command" -l ca-native -d 'Trust the operating system\'s certificate store instead of the built-in roots'
complete -c abide -n "__fish_abide_needs_command" -l compressed -d 'Ask for a compressed answer (deflate, gzip, br, zstd) and decode it. Without it no encoding is asked for, and a body is written as it came'
complete -c abide -n "__fish_abide_needs_command" -l retry-connrefused -d 'Accepted, as curl\'s: abide retries a refused connection anyway (a service that is starting), within --attempts and --budget'
complete -c abide -n "__fish_abide_needs_command" -l idempotent -d 'Treat the request as safe to repeat without sending a key (GraphQL or search APIs that read with POST)'
complete -c abide -n "__fish_abide_needs_command" -l no-state -d 'Keep and read no shared state at all'
complete -c abide -n "__fish_abide_needs_command" -l state-required -d 'Fail (INTERNAL_ERROR, exit 1) instead of going on without shared state when the state store cannot be used'
complete -c abide -n "__fish_abide_needs_command" -s O -l remote-name -l remote-name-all -d 'Write the body to a file named as the URL\'s last path segment (query left out), in the current directory or --output-dir, as curl\'s -O; written as -o writes. --remote-name-all is the same, abide taking one URL'
complete -c abide -n "__fish_abide_needs_command" -s J -l remote-header-name -d 'With -O: name the file as the final answer\'s Content-Disposition filename says, as curl\'s -J: only its last path component (never a directory, nor a name with control characters), in the same directory; without one, the URL\'s name. An existing file of that name is never replaced (the run fails and leaves it) unless --clobber is given'
complete -c abide -n "__fish_abide_needs_command" -l create-dirs -d 'Create the directories -o FILE (with --output-dir) names, as curl\'s --create-dirs'
complete -c abide -n "__fish_abide_needs_command" -l clobber -d 'Let -J replace an existing file'
complete -c abide -n "__fish_abide_needs_command" -l no-clobber -d 'Never replace an existing file with -o, -O or -J: write FILE.1, FILE.2 … up to FILE.99 instead, as curl\'s --no-clobber'
complete -c abide -n "__fish_abide_needs_command" -l fail-with-body -d 'As curl\'s --fail-with-body: a final 4xx or 5xx answer\'s body is written to stdout or -o FILE (a file only when the body came whole); the run still fails as without it, and a retried answer\'s body is never written'
complete -c abide -n "__fish_abide_needs_command" -l remove-on-error -d 'Accepted, as curl\'s --remove-on-error: a failed run never leaves a partial -o file anyway; where curl removes the file, abide leaves the one that was there as it was'
complete -c abide -n "__fish_abide_needs_command" -s N -l no-buffer -d 'Write a body to stdout as it comes. Without it, stdout gets nothing of a body until its first MiB has arrived (or all of it, if smaller), so that a small body that breaks off is retried with nothing written. text/event-stream answers always stream'
complete -c abide -n "__fish_abide_needs_command" -s i -l include -d 'Write the answer\'s head (status line, headers, a blank line) to stdout before its body, as curl\'s -i: only the final answer\'s, sent with the body once it is no longer held (see -N), so a retried attempt\'s head is never seen; a final 4xx or 5xx answer writes its head without its body, as curl -f -i does, and a 2xx whose body never came whole, none. Header names come in lower case and the reason phrase is the standard one (ureq keeps neither as sent); with -L, only the last answer\'s head. With -o FILE the head goes into FILE before the body (not with -C -); a failed run leaves FILE as it was, where curl writes a 4xx head in'
complete -c abide -n "__fish_abide_needs_command" -s I -l head -d 'Send a HEAD request and write the answer\'s head to stdout, as curl\'s -I (that is -X HEAD -i)'
complete -c abide -n "__fish_abide_needs_command" -s s -l silent -d 'No progress display or notes; the outcome line is still written'
complete -c abide -n "__fish_abide_needs_command" -s f -l fail -d 'curl\'s -f, accepted so that curl lines port (-fsS, -fsSL): abide never writes the body of a 4xx or 5xx answer to stdout or -o anyway (but with --fail-with-body)'
complete -c abide -n "__fish_abide_needs_command" -s S -l show-error -d 'curl\'s -S, accepted so that -sS ports: abide always says why a run failed, in the outcome line, -s or not'
complete -c abide -n "__fish_abide_needs_command" -s v -l verbose -d 'One line per attempt and per wait on stderr: the answer or error, the server\'s delay, the wait chosen and why; and, as curl -v shows them, each request\'s head ("> GET /path HTTP/1.1", then abide\'s headers, names in lower case as they are sent, credentials masked; not the framing headers ureq adds) and each answer\'s head ("< HTTP/1.1 200 OK", then its headers, as -i writes them)'
complete -c abide -n "__fish_abide_needs_command" -l agent -d 'Agent tool mode: stdout gets exactly one JSON object (the outcome plus body, body_truncated, body_encoding and headers), on success, failure and usage errors alike; nothing else is written'
complete -c abide -n "__fish_abide_needs_command" -s j -l junk-session-cookies -d 'With -b FILE: leave out the file\'s session cookies (those without an expiry), as a new browser session would'
complete -c abide -n "__fish_abide_needs_command" -s 4 -l ipv4 -d 'Connect over IPv4 only'
complete -c abide -n "__fish_abide_needs_command" -s 6 -l ipv6 -d 'Connect over IPv6 only'
complete -c abide -n "__fish_abide_needs_command" -l location-trusted -d 'With -L, send -u, Authorization and Cookie headers on to other hosts too, as curl\'s: only for a redirect you trust'
complete -c abide -n "__fish_abide_needs_command" -s p -l proxytunnel -d 'Accepted, as curl\'s -p: abide always goes through an HTTP proxy with CONNECT, for http:// URLs too'
complete -c abide -n "__fish_abide_needs_command" -s n -l netrc -d 'Basic credentials for the host from ~/.netrc (its machine entry, else default), for a request without -u or an Authorization of its own; a redirect to another host gets that host\'s entry. Masked like -u everywhere. A missing file sends none, as curl does'
complete -c abide -n "__fish_abide_needs_command" -l netrc-optional -d 'As --netrc (curl\'s name for a .netrc that may be missing)'
complete -c abide -n "__fish_abide_needs_command" -l retry-all-errors -d 'Retry every failure of a request that is safe to replay: any 4xx or 5xx answer and any transport error (an unknown host, a refused certificate). A write whose effect is unknown is still never replayed, and a refused write is still not retried'
complete -c abide -n "__fish_abide_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c abide -n "__fish_abide_needs_command" -s V -l version -d 'Print version'
complete -c abide -n "__fish_abide_needs_command" -a "lab" -d 'Run a local rate-limited HTTP server that catches clients which retry too early'
complete -c abide -n "__fish_abide_needs_command" -a "demo" -d 'Show in ten seconds what abide does, against a lab started in-process'
complete -c abide -n "__fish_abide_needs_command" -a "mcp" -d 'Serve abide as a Model Context Protocol tool (http_request) on stdio'
complete -c abide -n "__fish_abide_needs_command" -a "state" -d 'List what the scope state remembers (why runs are held), or clear it'
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
complete -c abide -n "__fish_abide_using_subcommand state; and not __fish_seen_subcommand_from clear help" -l state-dir -d 'The state directory [default: $XDG_STATE_HOME/abide, else ~/.local/state/abide]' -r -F
complete -c abide -n "__fish_abide_using_subcommand state; and not __fish_seen_subcommand_from clear help" -l state -d 'The Redis store instead, as a run\'s --state: redis://[USER:PASSWORD@]HOST:PORT[/DB], or rediss://' -r
complete -c abide -n "__fish_abide_using_subcommand state; and not __fish_seen_subcommand_from clear help" -l json -d 'One JSON object per scope, one a line'
complete -c abide -n "__fish_abide_using_subcommand state; and not __fish_seen_subcommand_from clear help" -s h -l help -d 'Print help'
complete -c abide -n "__fish_abide_using_subcommand state; and not __fish_seen_subcommand_from clear help" -f -a "clear" -d 'Forget what holds a scope\'s runs back: its gate, breakers, counts of repeated failures and retry budget (its name and --rate pacing still ahead stay; so do its task keys, unless --tasks)'
complete -c abide -n "__fish_abide_using_subcommand state; and not __fish_seen_subcommand_from clear help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c abide -n "__fish_abide_using_subcommand state; and __fish_seen_subcommand_from clear" -l state-dir -d 'The state directory [default: $XDG_STATE_HOME/abide, else ~/.local/state/abide]' -r -F
complete -c abide -n "__fish_abide_using_subcommand state; and __fish_seen_subcommand_from clear" -l state -d 'The Redis store instead, as a run\'s --state: redis://[USER:PASSWORD@]HOST:PORT[/DB], or rediss://' -r
complete -c abide -n "__fish_abide_using_subcommand state; and __fish_seen_subcommand_from clear" -l all -d 'Every scope the store knows'
complete -c abide -n "__fish_abide_using_subcommand state; and __fish_seen_subcommand_from clear" -l tasks -d 'Also forget the scope\'s --task idempotency keys: a rerun of a task then sends a new key, and the server may apply its write twice. Asks first at a terminal; without one, it needs --yes'
complete -c abide -n "__fish_abide_using_subcommand state; and __fish_seen_subcommand_from clear" -s y -l yes -d 'Do not ask before forgetting task keys'
complete -c abide -n "__fish_abide_using_subcommand state; and __fish_seen_subcommand_from clear" -s h -l help -d 'Print help'
complete -c abide -n "__fish_abide_using_subcommand state; and __fish_seen_subcommand_from help" -f -a "clear" -d 'Forget what holds a scope\'s runs back: its gate, breakers, counts of repeated failures and retry budget (its name and --rate pacing still ahead stay; so do its task keys, unless --tasks)'
complete -c abide -n "__fish_abide_using_subcommand state; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c abide -n "__fish_abide_using_subcommand help; and not __fish_seen_subcommand_from lab demo mcp state help" -f -a "lab" -d 'Run a local rate-limited HTTP server that catches clients which retry too early'
complete -c abide -n "__fish_abide_using_subcommand help; and not __fish_seen_subcommand_from lab demo mcp state help" -f -a "demo" -d 'Show in ten seconds what abide does, against a lab started in-process'
complete -c abide -n "__fish_abide_using_subcommand help; and not __fish_seen_subcommand_from lab demo mcp state help" -f -a "mcp" -d 'Serve abide as a Model Context Protocol tool (http_request) on stdio'
complete -c abide -n "__fish_abide_using_subcommand help; and not __fish_seen_subcommand_from lab demo mcp state help" -f -a "state" -d 'List what the scope state remembers (why runs are held), or clear it'
complete -c abide -n "__fish_abide_using_subcommand help; and not __fish_seen_subcommand_from lab demo mcp state help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c abide -n "__fish_abide_using_subcommand help; and __fish_seen_subcommand_from state" -f -a "clear" -d 'Forget what holds a scope\'s runs back: its gate, breakers, counts of repeated failures and retry budget (its name and --rate pacing still ahead stay; so do its task keys, unless --tasks)'
