
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
            cand --url 'The URL, as a flag (curl''s --url, as a config file writes it)'
            cand -K 'curl''s -K: read more flags from FILE, one a line, as curl writes them (`url = "…"`, `header = "Name: value"`, `--silent`, `-x URL`; `#` starts a comment); they take the place of the -K. ~/.curlrc is never read unasked'
            cand --config 'curl''s -K: read more flags from FILE, one a line, as curl writes them (`url = "…"`, `header = "Name: value"`, `--silent`, `-x URL`; `#` starts a comment); they take the place of the -K. ~/.curlrc is never read unasked'
            cand --generate 'Print the man page or a shell completion script (see scripts/generate-docs)'
            cand -X 'HTTP method (default: GET, or POST when a body is given)'
            cand --request 'HTTP method (default: GET, or POST when a body is given)'
            cand -H 'Add a header, "Name: value" (repeatable; several of one name are all sent). "Name:" removes a default header (User-Agent, Accept, Content-Type). Control characters are refused. (Checked by `plan`, not by clap: clap would quote a refused value, and a malformed header is often a credential.)'
            cand --header 'Add a header, "Name: value" (repeatable; several of one name are all sent). "Name:" removes a default header (User-Agent, Accept, Content-Type). Control characters are refused. (Checked by `plan`, not by clap: clap would quote a refused value, and a malformed header is often a credential.)'
            cand -d 'Body as form data; @FILE reads a file, @- reads stdin (read once, replayed on every attempt), without their carriage returns and newlines, as curl reads them. Sets POST and Content-Type: application/x-www-form-urlencoded. Every --data, --data-* value is joined to the others with &, in order'
            cand --data 'Body as form data; @FILE reads a file, @- reads stdin (read once, replayed on every attempt), without their carriage returns and newlines, as curl reads them. Sets POST and Content-Type: application/x-www-form-urlencoded. Every --data, --data-* value is joined to the others with &, in order'
            cand --data-ascii 'The same as --data'
            cand --data-raw 'As --data, but a leading @ is just a character'
            cand --data-binary 'Body as raw bytes; @FILE and @- as for --data, kept byte for byte'
            cand --data-urlencode 'As --data, URL-encoded as curl does: CONTENT, =CONTENT (both encoded whole), NAME=CONTENT (CONTENT encoded), @FILE, NAME@FILE (the file''s bytes encoded; @- is stdin)'
            cand -F 'A multipart/form-data part, as curl''s -F (repeatable, in order): NAME=VALUE, NAME=@FILE (a file upload, its name as filename, a type from its extension as curl guesses it), NAME=<FILE (the file''s text as the value), each with ;type=TYPE and ;filename=NAME; a value may be quoted ("a;b"). Sets POST'
            cand --form 'A multipart/form-data part, as curl''s -F (repeatable, in order): NAME=VALUE, NAME=@FILE (a file upload, its name as filename, a type from its extension as curl guesses it), NAME=<FILE (the file''s text as the value), each with ;type=TYPE and ;filename=NAME; a value may be quoted ("a;b"). Sets POST'
            cand --form-string 'As -F NAME=VALUE, the VALUE taken literally: a leading @ or <, and ;type=, mean nothing (curl''s --form-string)'
            cand -T 'PUT the bytes of FILE ("-" is stdin, read once), as curl''s -T; a URL without a path, or ending in /, gets the file''s name appended'
            cand --upload-file 'PUT the bytes of FILE ("-" is stdin, read once), as curl''s -T; a URL without a path, or ending in /, gets the file''s name appended'
            cand --json 'JSON body (@FILE and @- allowed, kept byte for byte; repeated values are joined as they are, as curl joins them); sets POST, Content-Type and Accept to application/json'
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
            cand --attempts 'Total requests at most; 1 means no retry. The default --budget stretches to hold them all'
            cand --retry 'curl''s spelling: N retries, that is N+1 attempts (wins over ABIDE_ATTEMPTS)'
            cand --budget 'Wall-clock budget for the whole run, waits and requests together. No wait that would end beyond it is started, nor any attempt after it. Given on the command line it is a hard limit: the attempt in flight is cut at it. The default (or ABIDE_BUDGET) bounds the retrying and the wait for an answer, but never cuts a 2xx body that keeps flowing: a long download ends when it is done, or when it stalls (--stall) [default: 60s, or longer when the --attempts asked need it: each retry''s longest wait plus a --connect-timeout per attempt]'
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
            cand --breaker-cooldown 'The longest an open breaker waits between two probes when the server gave no delay: it opens for the first --backoff step and doubles after each failed probe up to this; a server''s delay sets the moment instead [default: the run''s own longest wait, --backoff-max (or --retry-delay, at most --max-wait)]'
            cand --retry-budget 'The scope''s retry budget, shared by all its processes (and machines, with a Redis --state): first attempts always go; a retry spends one of 5 held in the scope, which each successful first attempt refills by PERCENT of a retry and time by one every 10 s. With none left, a run alone keeps all its attempts; one that would retry while another run still going spent from it in the last 10 s ends at once, RETRY_EXHAUSTED, with next_allowed_at when one is back. 0 turns it off'
            cand --max-delayed 'At most N runs of the scope wait on its gate at once, across all processes; another run that would wait ends at once with BUDGET_EXHAUSTED and next_allowed_at (the scope''s queue is full). Refused with --no-state'
            cand --policy 'Limits per scope (TOML) that flags may tighten but never loosen: a flag that asks for more is lowered to it, saying so in the outcome''s reason [default: $XDG_CONFIG_HOME/abide/policy.toml (else ~/.config/abide/policy.toml) when it exists]'
            cand -o 'Write the body to FILE (via a temporary file renamed on success, so a failed run leaves any existing FILE untouched); "-" is stdout. A GET whose body breaks off is resumed where it broke off when the server allows it (Accept-Ranges: bytes, and a strong ETag or Last-Modified)'
            cand --output 'Write the body to FILE (via a temporary file renamed on success, so a failed run leaves any existing FILE untouched); "-" is stdout. A GET whose body breaks off is resumed where it broke off when the server allows it (Accept-Ranges: bytes, and a strong ETag or Last-Modified)'
            cand --output-dir 'The directory -o FILE and -O write into, as curl''s --output-dir'
            cand -C 'Only "-": continue an existing -o FILE, asking only for the bytes after its end (Range), as curl''s -C -. The file must be the start of the current body; a server that sends it whole again replaces it'
            cand --continue-at 'Only "-": continue an existing -o FILE, asking only for the bytes after its end (Range), as curl''s -C -. The file must be the start of the current body; a server that sends it whole again replaces it'
            cand -D 'Write the final answer''s head to FILE ("-" is stdout) once the run ends, as curl''s -D, with the names and phrase of -i; a 4xx or 5xx answer''s head too. -D - without -o FILE is -i. Nothing is written when no answer came'
            cand --dump-header 'Write the final answer''s head to FILE ("-" is stdout) once the run ends, as curl''s -D, with the names and phrase of -i; a 4xx or 5xx answer''s head too. -D - without -o FILE is -i. Nothing is written when no answer came'
            cand -w 'Write FORMAT to stdout once the run ends, as curl''s -w; @FILE reads it from a file, its lines joined as curl joins them. Variables: %{http_code} (or response_code; 000 without an answer), url_effective (with -L, the last hop''s), method, content_type, size_download, size_upload, time_total, num_retries, num_redirects, num_connects, remote_ip and remote_port (the first address the name resolved to), exitcode (abide''s), errormsg (empty on success, else the outcome''s reason), json (the outcome line, as --outcome stdout writes it), and stdout or stderr to switch where the rest goes; %header{NAME} is the final answer''s header; %% is %, and \n, \r, \t, \\ are escapes. time_total is the whole run''s, waits included; time_namelookup, time_connect, time_appconnect (TLS; 0 without) and time_starttransfer are the final attempt''s, from its start. An unknown variable is a usage error'
            cand --write-out 'Write FORMAT to stdout once the run ends, as curl''s -w; @FILE reads it from a file, its lines joined as curl joins them. Variables: %{http_code} (or response_code; 000 without an answer), url_effective (with -L, the last hop''s), method, content_type, size_download, size_upload, time_total, num_retries, num_redirects, num_connects, remote_ip and remote_port (the first address the name resolved to), exitcode (abide''s), errormsg (empty on success, else the outcome''s reason), json (the outcome line, as --outcome stdout writes it), and stdout or stderr to switch where the rest goes; %header{NAME} is the final answer''s header; %% is %, and \n, \r, \t, \\ are escapes. time_total is the whole run''s, waits included; time_namelookup, time_connect, time_appconnect (TLS; 0 without) and time_starttransfer are the final attempt''s, from its start. An unknown variable is a usage error'
            cand --outcome 'Where the outcome line goes: stderr, stdout (needs -o), none, or a PATH appended to (refused before sending if it cannot be written). Usage errors write their USAGE_ERROR line there too'
            cand --log 'Append an audit log to FILE: one JSON line per event (request, answer or error, wait, outcome), credentials redacted; many runs may share it'
            cand --max-body 'Largest body kept in the --agent object; sizes like 1KiB, 2MiB, at most 4MiB, since the object holds it in memory several times over (--require checks bodies up to 64MiB). A body that is not UTF-8 comes in base64, with body_encoding "base64"'
            cand --require 'A 2xx answer succeeds only if its body is JSON with a value (null and [] included) at this RFC 6901 JSON Pointer (repeatable); else INVALID_RESPONSE, not retried'
            cand --no-progress 'Refuse, unsent, a request identical to one that ended NON_RETRYABLE or INVALID_RESPONSE N times in a row within 10 minutes (NO_PROGRESS); on by default with --agent (N = 3); 0 turns it off'
            cand --task 'With --idempotency-key auto: keep the generated key in the scope state under this task id, so that every rerun of the task sends the same key. The run is refused, unsent, if the key cannot be stored first, or if the scope already keeps 1024 live task keys'
            cand --task-ttl 'How long a task''s idempotency key is kept (never less)'
            cand --task-attempts 'At most N requests for a --task across all its runs: a run that would need more ends NEEDS_HUMAN (exit 10), as does every rerun after, unsent. Runs without --task are not counted (so that `abide mcp --task-attempts N` bounds every task the model runs)'
            cand --check 'When a write''s effect is unknown (no answer after sending it, or a retryable 5xx), GET this URL first (same origin, headers and credentials; {idempotency_key} is replaced by the key sent): a 2xx (meeting --require) means it happened (SUCCEEDED, "reconciled": true, the check''s body as the body); 404 or 410 that it did not (the write goes again, same key, within attempts and budget); anything else NEEDS_HUMAN (exit 10), never a replay'
            cand --id-pointer 'Where a 2xx body names what the write created (an RFC 6901 JSON Pointer, e.g. /id): the outcome''s operation_id (else a 201''s Location), kept with the --task. The body is held in memory to read it, up to 64MiB, as for --require'
            cand --escalate 'Append one JSON record to FILE (0600) for each run that ends SIDE_EFFECT_UNKNOWN, NO_PROGRESS or NEEDS_HUMAN: what was sent where, every attempt with its status and rate-limit headers, the budget used, the key, the operation_id and the safe ways on; no body, no secret'
            cand -b 'Cookies to send, "NAME=VALUE; N2=V2" (sent as given on every request, -L hops too); or, without a "=", a FILE to read cookies from (a Netscape cookie file or Set-Cookie: lines, as curl reads them; a missing file is no cookies), which turns on the cookie engine: every answer''s Set-Cookie (a redirect''s too) is kept and sent on where domain, path, Secure and expiry allow, as curl does. Repeatable. A -H "Cookie: ..." of your own is then the only one sent, as curl''s'
            cand --cookie 'Cookies to send, "NAME=VALUE; N2=V2" (sent as given on every request, -L hops too); or, without a "=", a FILE to read cookies from (a Netscape cookie file or Set-Cookie: lines, as curl reads them; a missing file is no cookies), which turns on the cookie engine: every answer''s Set-Cookie (a redirect''s too) is kept and sent on where domain, path, Secure and expiry allow, as curl does. Repeatable. A -H "Cookie: ..." of your own is then the only one sent, as curl''s'
            cand -c 'Write every cookie the run ends with to FILE, in curl''s Netscape format, through a temporary file renamed over it; "-" is stdout. Turns on the cookie engine, as -b FILE does'
            cand --cookie-jar 'Write every cookie the run ends with to FILE, in curl''s Netscape format, through a temporary file renamed over it; "-" is stdout. Turns on the cookie engine, as -b FILE does'
            cand --resolve 'HOST:PORT:ADDR[,ADDR...]: connect to ADDR for HOST at PORT, as if the name resolved to it; the URL, Host and TLS name stay. HOST may be * for any name (repeatable)'
            cand --connect-to 'HOST1:PORT1:HOST2:PORT2: a connection to HOST1 at PORT1 goes to HOST2 at PORT2 instead; an empty part matches any (HOST1, PORT1) or keeps what it was (HOST2, PORT2). Repeatable; the first match wins'
            cand --unix-socket 'Connect to this Unix socket instead of the URL''s host and port (the URL still gives Host and path), as curl''s: http://localhost/... to a local service such as /var/run/docker.sock'
            cand --max-redirs 'With -L, follow at most N redirects per attempt (default 50, as curl; -1 is no limit); one more ends the run NON_RETRYABLE with curl''s words "Maximum (N) redirects followed" (curl''s exit 47)'
            cand -U 'USER:PASSWORD for -x''s proxy, as curl''s; masked like -u. (A proxy from the environment takes them in its URL.)'
            cand --proxy-user 'USER:PASSWORD for -x''s proxy, as curl''s; masked like -u. (A proxy from the environment takes them in its URL.)'
            cand --noproxy 'Hosts to reach without a proxy, comma-separated, as curl matches them: a name matches itself and its subdomains, * matches all. Decided for the URL''s host, for the whole run'
            cand -E 'A client certificate (PEM) to show the server; its key is in FILE too, or in --key. An encrypted key (FILE:PASSWORD) is refused: decrypt it first (openssl pkey -in key.pem -out plain.pem)'
            cand --cert 'A client certificate (PEM) to show the server; its key is in FILE too, or in --key. An encrypted key (FILE:PASSWORD) is refused: decrypt it first (openssl pkey -in key.pem -out plain.pem)'
            cand --key 'The private key (PEM, unencrypted) of --cert'
            cand --netrc-file 'As --netrc, from FILE'
            cand -y 'With -Y: the span over which the body''s speed is measured (curl''s seconds; 30 when only -Y is given). Alone, it means -Y 1: an attempt that gets no byte for that long fails, as --stall, which it shortens'
            cand --speed-time 'With -Y: the span over which the body''s speed is measured (curl''s seconds; 30 when only -Y is given). Alone, it means -Y 1: an attempt that gets no byte for that long fails, as --stall, which it shortens'
            cand -Y 'An attempt whose body comes slower than BYTES per second over --speed-time fails (and is retried or resumed as a broken-off body)'
            cand --speed-limit 'An attempt whose body comes slower than BYTES per second over --speed-time fails (and is retried or resumed as a broken-off body)'
            cand --limit-rate 'Read the answer''s body at most RATE bytes per second (k, m, g suffixes are 1024-based, as curl''s); 0 is no limit. Uploads are not paced'
            cand --retry-delay 'Wait SECONDS between attempts when the server gives no delay, instead of the exponential backoff; a server''s Retry-After still wins. 0 keeps the backoff, as curl'
            cand --batch 'Send every request of FILE ("-" is stdin) instead of one URL: a line is a URL, or a JSON object {"id", "url", "method", "headers": {"Name": "value"}, "json" or "data", "output"} where every field but url is optional (id defaults to the line number). The flags apply to every item; an item''s fields override them. One outcome line per item, with its "id", goes to stdout as it ends (or to --outcome PATH); bodies go to the item''s output, to -o TEMPLATE ({id}, {n}), or nowhere. A bad line is its own USAGE_ERROR and the batch goes on. The summary goes to stderr; the exit code is 0 when every item succeeded, else that of the worst outcome (see the README). --task ID makes ID:{id} per item'
            cand --parallel 'With --batch: requests in flight at once in this process (each over a kept-alive connection), still under --max-concurrent, --rate and the scope gate shared with every other process [default: 4]'
            cand --journal 'With --batch: write down every item that ended (any outcome but a cancellation) in FILE, on the disk as it ends; a rerun with the same FILE skips those items, so a batch killed halfway resumes where it was'
            cand -G 'The --data values go into the URL''s query (after ? or &) and the request is a GET (a HEAD with -I), as curl''s -G'
            cand --get 'The --data values go into the URL''s query (after ? or &) and the request is a GET (a HEAD with -I), as curl''s -G'
            cand -L 'Follow redirects (at most 50, see --max-redirs), as curl does: 307 and 308 re-send the method and body; 303, and 301 or 302 after a POST, become a GET without a body; -u, Authorization and Cookie go on to the same origin only (but with --location-trusted); a Retry-After on a redirect is waited first. Without -L a 3xx answer is final'
            cand --location 'Follow redirects (at most 50, see --max-redirs), as curl does: 307 and 308 re-send the method and body; 303, and 301 or 302 after a POST, become a GET without a body; -u, Authorization and Cookie go on to the same origin only (but with --location-trusted); a Retry-After on a redirect is waited first. Without -L a 3xx answer is final'
            cand --http1.1 'Accepted, as curl''s --http1.1: abide speaks HTTP/1.1'
            cand --http2 'Refused with a word on why: abide speaks HTTP/1.1 only, which every HTTP/2 or HTTP/3 server also speaks'
            cand --http3 'See --http2'
            cand -k 'Do not verify the server''s TLS certificate'
            cand --insecure 'Do not verify the server''s TLS certificate'
            cand --ca-native 'Trust the operating system''s certificate store instead of the built-in roots'
            cand --compressed 'Ask for a compressed answer (deflate, gzip, br, zstd) and decode it. Without it no encoding is asked for, and a body is written as it came'
            cand --retry-connrefused 'Accepted, as curl''s: abide retries a refused connection anyway (a service that is starting), within --attempts and --budget'
            cand --idempotent 'Treat the request as safe to repeat without sending a key (GraphQL or search APIs that read with POST)'
            cand --no-state 'Keep and read no shared state at all'
            cand --state-required 'Fail (INTERNAL_ERROR, exit 1) instead of going on without shared state when the state store cannot be used'
            cand -O 'Write the body to a file named as the URL''s last path segment (query left out), in the current directory or --output-dir, as curl''s -O; written as -o writes. --remote-name-all is the same, abide taking one URL'
            cand --remote-name 'Write the body to a file named as the URL''s last path segment (query left out), in the current directory or --output-dir, as curl''s -O; written as -o writes. --remote-name-all is the same, abide taking one URL'
            cand --remote-name-all 'Write the body to a file named as the URL''s last path segment (query left out), in the current directory or --output-dir, as curl''s -O; written as -o writes. --remote-name-all is the same, abide taking one URL'
            cand -J 'With -O: name the file as the final answer''s Content-Disposition filename says, as curl''s -J: only its last path component (never a directory, nor a name with control characters), in the same directory; without one, the URL''s name. An existing file of that name is never replaced (the run fails and leaves it) unless --clobber is given'
            cand --remote-header-name 'With -O: name the file as the final answer''s Content-Disposition filename says, as curl''s -J: only its last path component (never a directory, nor a name with control characters), in the same directory; without one, the URL''s name. An existing file of that name is never replaced (the run fails and leaves it) unless --clobber is given'
            cand --create-dirs 'Create the directories -o FILE (with --output-dir) names, as curl''s --create-dirs'
            cand --clobber 'Let -J replace an existing file'
            cand --no-clobber 'Never replace an existing file with -o, -O or -J: write FILE.1, FILE.2 … up to FILE.99 instead, as curl''s --no-clobber'
            cand --fail-with-body 'As curl''s --fail-with-body: a final 4xx or 5xx answer''s body is written to stdout or -o FILE (a file only when the body came whole); the run still fails as without it, and a retried answer''s body is never written'
            cand --remove-on-error 'Accepted, as curl''s --remove-on-error: a failed run never leaves a partial -o file anyway; where curl removes the file, abide leaves the one that was there as it was'
            cand -N 'Write a body to stdout as it comes. Without it, stdout gets nothing of a body until its first MiB has arrived (or all of it, if smaller), so that a small body that breaks off is retried with nothing written. text/event-stream answers always stream'
            cand --no-buffer 'Write a body to stdout as it comes. Without it, stdout gets nothing of a body until its first MiB has arrived (or all of it, if smaller), so that a small body that breaks off is retried with nothing written. text/event-stream answers always stream'
            cand -i 'Write the answer''s head (status line, headers, a blank line) to stdout before its body, as curl''s -i: only the final answer''s, sent with the body once it is no longer held (see -N), so a retried attempt''s head is never seen; a final 4xx or 5xx answer writes its head without its body, as curl -f -i does, and a 2xx whose body never came whole, none. Header names come in lower case and the reason phrase is the standard one (ureq keeps neither as sent); with -L, only the last answer''s head. With -o FILE the head goes into FILE before the body (not with -C -); a failed run leaves FILE as it was, where curl writes a 4xx head in'
            cand --include 'Write the answer''s head (status line, headers, a blank line) to stdout before its body, as curl''s -i: only the final answer''s, sent with the body once it is no longer held (see -N), so a retried attempt''s head is never seen; a final 4xx or 5xx answer writes its head without its body, as curl -f -i does, and a 2xx whose body never came whole, none. Header names come in lower case and the reason phrase is the standard one (ureq keeps neither as sent); with -L, only the last answer''s head. With -o FILE the head goes into FILE before the body (not with -C -); a failed run leaves FILE as it was, where curl writes a 4xx head in'
            cand -I 'Send a HEAD request and write the answer''s head to stdout, as curl''s -I (that is -X HEAD -i)'
            cand --head 'Send a HEAD request and write the answer''s head to stdout, as curl''s -I (that is -X HEAD -i)'
            cand -s 'No progress display or notes; the outcome line is still written'
            cand --silent 'No progress display or notes; the outcome line is still written'
            cand -f 'curl''s -f, accepted so that curl lines port (-fsS, -fsSL): abide never writes the body of a 4xx or 5xx answer to stdout or -o anyway (but with --fail-with-body)'
            cand --fail 'curl''s -f, accepted so that curl lines port (-fsS, -fsSL): abide never writes the body of a 4xx or 5xx answer to stdout or -o anyway (but with --fail-with-body)'
            cand -S 'curl''s -S, accepted so that -sS ports: abide always says why a run failed, in the outcome line, -s or not'
            cand --show-error 'curl''s -S, accepted so that -sS ports: abide always says why a run failed, in the outcome line, -s or not'
            cand -v 'One line per attempt and per wait on stderr: the answer or error, the server''s delay, the wait chosen and why; and, as curl -v shows them, each request''s head ("> GET /path HTTP/1.1", then abide''s headers, names in lower case as they are sent, credentials masked; not the framing headers ureq adds) and each answer''s head ("< HTTP/1.1 200 OK", then its headers, as -i writes them)'
            cand --verbose 'One line per attempt and per wait on stderr: the answer or error, the server''s delay, the wait chosen and why; and, as curl -v shows them, each request''s head ("> GET /path HTTP/1.1", then abide''s headers, names in lower case as they are sent, credentials masked; not the framing headers ureq adds) and each answer''s head ("< HTTP/1.1 200 OK", then its headers, as -i writes them)'
            cand --agent 'Agent tool mode: stdout gets exactly one JSON object (the outcome plus body, body_truncated, body_encoding and headers), on success, failure and usage errors alike; nothing else is written'
            cand -j 'With -b FILE: leave out the file''s session cookies (those without an expiry), as a new browser session would'
            cand --junk-session-cookies 'With -b FILE: leave out the file''s session cookies (those without an expiry), as a new browser session would'
            cand -4 'Connect over IPv4 only'
            cand --ipv4 'Connect over IPv4 only'
            cand -6 'Connect over IPv6 only'
            cand --ipv6 'Connect over IPv6 only'
            cand --location-trusted 'With -L, send -u, Authorization and Cookie headers on to other hosts too, as curl''s: only for a redirect you trust'
            cand -p 'Accepted, as curl''s -p: abide always goes through an HTTP proxy with CONNECT, for http:// URLs too'
            cand --proxytunnel 'Accepted, as curl''s -p: abide always goes through an HTTP proxy with CONNECT, for http:// URLs too'
            cand -n 'Basic credentials for the host from ~/.netrc (its machine entry, else default), for a request without -u or an Authorization of its own; a redirect to another host gets that host''s entry. Masked like -u everywhere. A missing file sends none, as curl does'
            cand --netrc 'Basic credentials for the host from ~/.netrc (its machine entry, else default), for a request without -u or an Authorization of its own; a redirect to another host gets that host''s entry. Masked like -u everywhere. A missing file sends none, as curl does'
            cand --netrc-optional 'As --netrc (curl''s name for a .netrc that may be missing)'
            cand --retry-all-errors 'Retry every failure of a request that is safe to replay: any 4xx or 5xx answer and any transport error (an unknown host, a refused certificate). A write whose effect is unknown is still never replayed, and a refused write is still not retried'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand lab 'Run a local rate-limited HTTP server that catches clients which retry too early'
            cand demo 'Show in ten seconds what abide does, against a lab started in-process'
            cand mcp 'Serve abide as a Model Context Protocol tool (http_request) on stdio'
            cand state 'List what the scope state remembers (why runs are held), or clear it'
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
        &'abide;state'= {
            cand --state-dir 'The state directory [default: $XDG_STATE_HOME/abide, else ~/.local/state/abide]'
            cand --state 'The Redis store instead, as a run''s --state: redis://[USER:PASSWORD@]HOST:PORT[/DB], or rediss://'
            cand --json 'One JSON object per scope, one a line'
            cand -h 'Print help'
            cand --help 'Print help'
            cand clear 'Forget what holds a scope''s runs back: its gate, breakers, counts of repeated failures and retry budget (its name and --rate pacing still ahead stay; so do its task keys, unless --tasks)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'abide;state;clear'= {
            cand --state-dir 'The state directory [default: $XDG_STATE_HOME/abide, else ~/.local/state/abide]'
            cand --state 'The Redis store instead, as a run''s --state: redis://[USER:PASSWORD@]HOST:PORT[/DB], or rediss://'
            cand --all 'Every scope the store knows'
            cand --tasks 'Also forget the scope''s --task idempotency keys: a rerun of a task then sends a new key, and the server may apply its write twice. Asks first at a terminal; without one, it needs --yes'
            cand -y 'Do not ask before forgetting task keys'
            cand --yes 'Do not ask before forgetting task keys'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'abide;state;help'= {
            cand clear 'Forget what holds a scope''s runs back: its gate, breakers, counts of repeated failures and retry budget (its name and --rate pacing still ahead stay; so do its task keys, unless --tasks)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'abide;state;help;clear'= {
        }
        &'abide;state;help;help'= {
        }
        &'abide;help'= {
            cand lab 'Run a local rate-limited HTTP server that catches clients which retry too early'
            cand demo 'Show in ten seconds what abide does, against a lab started in-process'
            cand mcp 'Serve abide as a Model Context Protocol tool (http_request) on stdio'
            cand state 'List what the scope state remembers (why runs are held), or clear it'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'abide;help;lab'= {
        }
        &'abide;help;demo'= {
        }
        &'abide;help;mcp'= {
        }
        &'abide;help;state'= {
            cand clear 'Forget what holds a scope''s runs back: its gate, breakers, counts of repeated failures and retry budget (its name and --rate pacing still ahead stay; so do its task keys, unless --tasks)'
        }
        &'abide;help;state;clear'= {
        }
        &'abide;help;help'= {
        }
    ]
    $completions[$command]
}
