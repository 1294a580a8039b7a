//! `--batch FILE`: many requests in one process. A pool of `--parallel`
//! worker threads pulls items from the streaming reader (the file is never
//! held whole) and sends each as a single run would, through one shared
//! connection pool and one scope store (opened once, taken in turns), each
//! worker keeping its `--log` open from one item to the next. Each item ends in one place, the ledger: the
//! journal first (so that an item counts as ended only once it is on the
//! disk), then its outcome line, flushed, then the summary and the bar.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressState, ProgressStyle};

use crate::batch::input::{Item, Line as BatchLine, Lines};
use crate::batch::journal::Journal;
use crate::batch::summary::Summary;
use crate::batch::template::Template;
use crate::cli::{Cli, RateFlag};
use crate::edge::cancel::Cancel;
use crate::edge::http::{Body, Http, Request};
use crate::edge::net::WireSpacing;
use crate::edge::sink::Sink;
use crate::exit::Kind;
use crate::plan::{self, OutcomeTo, Overrides, Plan};
use crate::report::audit::Audit;
use crate::report::outcome::Line;
use crate::report::progress;
use crate::rules::pace::{self, Pace};
use crate::rules::scope::{self, ScopeState};
use crate::run::record::Record;
use crate::state::{Slot, Store, Stored};

use super::session::{Face, Held, Session, open_store};
use super::{append_to, usage};

/// Runs the batch; how it ended (see [`Summary::exit_kind`]).
pub fn run(cli: &Cli, face: Face) -> Kind {
    match Batch::new(cli, face) {
        Ok(batch) => batch.run(),
        Err(message) => usage(&message, false),
    }
}

struct Batch<'a> {
    cli: &'a Cli,
    face: Face,
    input: Mutex<Input>,
    ledger: Mutex<Ledger>,
    template: Option<Template>,
    http: Http,
    cancel: Cancel,
    /// One `--log` per worker, opened before anything is sent.
    audits: Vec<Option<Audit>>,
    /// `/dev/null`, opened once: where the bodies of items without a file go,
    /// read to their end so that each connection goes back to the pool.
    null: File,
    /// The scope store, opened with the first item's plan (or why not).
    store: OnceLock<Result<Option<Turns>, String>>,
    /// `--rate auto`: the spacing of the writes, as the pace is learned.
    spacing: Option<Arc<WireSpacing>>,
    /// Whether the first item's answer is known, and the workers waiting for it.
    first: Arc<(Mutex<First>, Condvar)>,
}

/// The batch's first item goes alone until its first answer's lesson is in
/// the scope's record (or it ended, or [`FIRST_HOLD`] passed): what it
/// learns (the server's stated quota, a Retry-After, a host that is down)
/// is known before any other item is let go. Without it, `--parallel`
/// requests went out at once on first contact, and those beyond a quota
/// smaller than `--parallel` were refused, or sent just after another's
/// 429 had come back.
#[derive(Clone, Copy, PartialEq, Eq)]
enum First {
    NotYet,
    Going,
    Known,
}

fn first_known(first: &(Mutex<First>, Condvar)) {
    let (state, known) = first;
    *state.lock().unwrap_or_else(|e| e.into_inner()) = First::Known;
    known.notify_all();
}

/// The longest the other items wait for the first one's answer: a slow
/// endpoint (or one that never answers) must not serialize the batch.
const FIRST_HOLD: Duration = Duration::from_secs(1);

/// How often a worker waiting for the first item looks for a cancellation.
const FIRST_POLL: Duration = Duration::from_millis(20);

/// The spacing of a batch's writes at the pace learned so far.
fn learned_spacing(pace: Option<&Pace>) -> Duration {
    scope::wire_spacing(pace::interval(pace, &pace::Params::default()))
}

/// The batch's one scope store, which its workers take in turns: they queue
/// on a mutex instead of polling the store's lock against each other (four
/// workers polling one file lock starved one of them past the store's
/// 500 ms patience on a loaded machine).
///
/// Under `--rate auto` each change of the record also sets the spacing of
/// the batch's writes to the pace learned so far: the scope lets requests
/// go at the pace, and a worker's thread that waited for a core before
/// writing must not bring its request closer to the next one than that.
#[derive(Clone)]
struct Turns(Arc<Mutex<Box<dyn Store + Send>>>, Option<Arc<WireSpacing>>);

impl Turns {
    fn with<T>(&self, f: impl FnOnce(&dyn Store) -> T) -> T {
        f(&**self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Store for Turns {
    fn read(&self, scope: &str) -> io::Result<(ScopeState, crate::clock::Millis)> {
        self.with(|s| s.read(scope))
    }
    fn update(
        &self,
        scope: &str,
        change: &mut dyn FnMut(&mut ScopeState, crate::clock::Millis),
    ) -> io::Result<()> {
        let Some(spacing) = &self.1 else {
            return self.with(|s| s.update(scope, change));
        };
        self.with(|s| {
            s.update(scope, &mut |state, now| {
                change(state, now);
                spacing.set_interval(scope, learned_spacing(state.pace.as_ref()));
            })
        })
    }
    fn try_slot(&self, scope: &str, limit: u32, lease: Duration) -> io::Result<Option<Slot>> {
        self.with(|s| s.try_slot(scope, limit, lease))
    }
    fn take_notes(&self) -> Vec<String> {
        self.with(|s| s.take_notes())
    }
    fn list(&self) -> io::Result<(Vec<Stored>, crate::clock::Millis)> {
        self.with(|s| s.list())
    }
    fn clear(&self, hash: &str, tasks: bool) -> io::Result<()> {
        self.with(|s| s.clear(hash, tasks))
    }
    fn slots_in_use(&self, hash: &str) -> io::Result<u32> {
        self.with(|s| s.slots_in_use(hash))
    }
}

/// The items still to send.
struct Input {
    lines: Lines<Box<dyn BufRead + Send>>,
    /// Items read so far (bad and skipped ones too), for `{n}`.
    read: u64,
    /// Ids the journal says ended; they are skipped.
    ended: HashSet<String>,
    skipped: u64,
    /// Why reading stopped early, when it did.
    error: Option<String>,
}

/// Where every item ends.
struct Ledger {
    out: Box<dyn Write + Send>,
    journal: Option<Journal>,
    summary: Summary,
    bar: Option<ProgressBar>,
    throttled: u64,
    /// Why the batch stopped before its end (a journal or stdout that can
    /// no longer be written), when it did.
    stopped: Option<String>,
}

/// How one item ended, for the ledger.
struct Ended {
    id: String,
    line: Line,
    kind: Kind,
    requests: u64,
    throttled: u64,
}

impl<'a> Batch<'a> {
    /// Everything checked and opened before the first item is sent; an
    /// error is the batch's usage error.
    fn new(cli: &'a Cli, face: Face) -> Result<Batch<'a>, String> {
        let b = &cli.batch;
        let path = b.batch.clone().expect("a batch has --batch");
        let r = &cli.request;
        if r.data
            .iter()
            .chain(&r.data_binary)
            .chain(&r.json)
            .any(|d| d == "@-")
        {
            return Err("in a batch, a body cannot come from stdin (@-): every item would need it; use @FILE or the items' json/data".into());
        }
        let template = cli
            .output
            .output
            .as_ref()
            .map(|t| Template::parse(&t.to_string_lossy()))
            .transpose()?;
        // In a batch the outcome lines are the output: stdout unless
        // --outcome names a file or none.
        let out: Box<dyn Write + Send> = match &cli.output.outcome {
            OutcomeTo::Stderr | OutcomeTo::Stdout => Box::new(io::stdout()),
            OutcomeTo::Nowhere => Box::new(io::sink()),
            OutcomeTo::Append(path) => Box::new(
                append_to(path)
                    .map_err(|e| format!("cannot write --outcome {}: {e}", path.display()))?,
            ),
        };
        let (journal, ended) = match &b.journal {
            Some(path) => {
                let (journal, ended) = Journal::open(path).map_err(|e| e.to_string())?;
                (Some(journal), ended)
            }
            None => (None, HashSet::new()),
        };
        let (reader, total): (Box<dyn BufRead + Send>, Option<u64>) = if path.as_os_str() == "-" {
            (Box::new(BufReader::new(io::stdin())), None)
        } else {
            let open = || {
                File::open(&path)
                    .map_err(|e| format!("cannot read --batch {}: {e}", path.display()))
            };
            let total = count_items(BufReader::new(open()?)).ok();
            (Box::new(BufReader::new(open()?)), total)
        };
        // The bar stands for the per-request displays; -v writes lines instead.
        let bar = (progress::on_terminal(face.silent) && !face.verbose).then(|| bar(total));
        let mut settings = plan::settings(cli, "", &mut crate::redact::Redactor::default())?;
        let spacing = (cli.scope.rate == Some(RateFlag::Auto))
            .then(|| Arc::new(WireSpacing::new(learned_spacing(None))));
        if spacing.is_some() {
            settings.net.wire_spacing.clone_from(&spacing);
        }
        let http = Http::new(
            &settings,
            // Never sent: each item's request replaces it.
            Request {
                method: "GET".into(),
                url: String::new(),
                headers: Default::default(),
                body: Body::Empty,
            },
        )
        .map_err(|e| format!("{e:#}"))?
        .on_callers_thread();
        let cancel = Cancel::default();
        if let Err(e) = cancel.on_signals() {
            eprintln!("abide: warning: cannot watch for signals: {e}");
        }
        // A signal shuts the shared pool down: every request in flight is
        // cut, and no new one starts.
        cancel.interrupt_with(http.interrupter());
        let audits = (0..b.parallel())
            .map(|_| {
                cli.output
                    .log
                    .as_deref()
                    .map(|path| {
                        // Each item's request sets its own run, scope and task.
                        Audit::open(path, "", None)
                            .map_err(|e| format!("cannot open --log {}: {e}", path.display()))
                    })
                    .transpose()
            })
            .collect::<Result<_, _>>()?;
        Ok(Batch {
            cli,
            face,
            input: Mutex::new(Input {
                lines: Lines::new(reader),
                read: 0,
                ended,
                skipped: 0,
                error: None,
            }),
            ledger: Mutex::new(Ledger {
                out,
                journal,
                summary: Summary::default(),
                bar,
                throttled: 0,
                stopped: None,
            }),
            template,
            http,
            cancel,
            audits,
            store: OnceLock::new(),
            spacing,
            first: Arc::new((Mutex::new(First::NotYet), Condvar::new())),
            null: File::options()
                .write(true)
                .open("/dev/null")
                .map_err(|e| format!("cannot open /dev/null: {e}"))?,
        })
    }

    fn run(mut self) -> Kind {
        let started = Instant::now();
        let audits = std::mem::take(&mut self.audits);
        let batch = &self;
        std::thread::scope(|workers| {
            for audit in audits {
                let held = Held {
                    cancel: batch.cancel.clone(),
                    audit,
                    state_failure: None,
                };
                workers.spawn(move || batch.work(held));
            }
        });
        let input = self.input.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut ledger = self.ledger.into_inner().unwrap_or_else(|e| e.into_inner());
        if let Some(bar) = &ledger.bar {
            bar.finish_and_clear();
        }
        for _ in 0..input.skipped {
            ledger.summary.skip();
        }
        eprintln!("{}", ledger.summary.line(started.elapsed()));
        let mut kind = ledger.summary.exit_kind();
        for why in [input.error, ledger.stopped].into_iter().flatten() {
            eprintln!("abide: error: {why}");
            if kind.signal().is_none() {
                kind = Kind::InternalError;
            }
        }
        kind
    }

    /// One worker: items, one after the other, until there are none, the
    /// batch is cancelled, or it stopped.
    fn work(&self, mut held: Held) {
        while self.cancel.cancelled().is_none() {
            let Some((n, line)) = self.next() else {
                return;
            };
            let ended = match line {
                BatchLine::Bad(bad) => bad_line(bad.id, bad.line, &bad.message),
                BatchLine::Item(item) => {
                    let Some(first) = self.first_turn() else {
                        return;
                    };
                    let (ended, back) = self.send(item, n, held, first);
                    held = back;
                    if first {
                        first_known(&self.first);
                    }
                    ended
                }
            };
            if !self.end(ended) {
                return;
            }
        }
    }

    /// Whether this worker's item is the batch's first, after waiting for
    /// the first's answer to be known when it is not; `None` when the batch was
    /// cancelled meanwhile (the item is not sent).
    fn first_turn(&self) -> Option<bool> {
        let (first, known) = &*self.first;
        let held = Instant::now();
        let mut state = first.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match *state {
                First::NotYet => {
                    *state = First::Going;
                    return Some(true);
                }
                First::Known => return Some(false),
                First::Going if self.cancel.cancelled().is_some() => return None,
                // A first item slow to answer holds the others no longer.
                First::Going if held.elapsed() >= FIRST_HOLD => {
                    *state = First::Known;
                    return Some(false);
                }
                First::Going => {
                    state = known
                        .wait_timeout(state, FIRST_POLL)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
        }
    }

    /// The next item to send and its number, skipping those the journal
    /// says ended.
    fn next(&self) -> Option<(u64, BatchLine)> {
        let mut input = self.input.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let line = match input.lines.next()? {
                Ok(line) => line,
                Err(e) => {
                    input.error = Some(format!("cannot read the batch: {e}"));
                    return None;
                }
            };
            input.read += 1;
            let id = match &line {
                BatchLine::Item(item) => &item.id,
                BatchLine::Bad(bad) => &bad.id,
            };
            if input.ended.contains(id) {
                input.skipped += 1;
                if let Some(bar) = &self.ledger.lock().unwrap_or_else(|e| e.into_inner()).bar {
                    bar.inc(1);
                }
                continue;
            }
            return Some((input.read, line));
        }
    }

    /// Sends item number `n` as a single run would, with what the worker
    /// holds; how it ended, and what the worker holds for the next one.
    fn send(&self, item: Item, n: u64, mut held: Held, first: bool) -> (Ended, Held) {
        let id = item.id.clone();
        let overrides = Overrides {
            url: Some(item.url),
            method: item.method,
            headers: item.headers,
            body: item.body,
        };
        let mut plan = match plan::plan_with(self.cli, &overrides, &mut io::empty()) {
            Ok(plan) => plan,
            Err(message) => return (bad_line(id, item.line, &message), held),
        };
        plan.output = match (item.output, &self.template) {
            (Some(output), _) => Some(PathBuf::from(output)),
            (None, Some(template)) => Some(template.path(&id, n)),
            (None, None) => None,
        };
        if let Some(prefix) = &self.cli.agent.task {
            plan.task = Some(format!("{prefix}:{id}"));
        }
        // Opened with the first item's plan (the backend is the flags').
        let store = self.store.get_or_init(|| {
            let opened = open_store(&plan)
                .map(|s| s.map(|s| Turns(Arc::new(Mutex::new(s)), self.spacing.clone())));
            if let (Err(e), false) = (&opened, plan.state_required) {
                eprintln!(
                    "abide: warning: the shared state is unavailable ({e}); going on without it"
                );
            }
            opened
        });
        if let Err(e) = store {
            held.state_failure.get_or_insert_with(|| e.clone());
        }
        let failed_before = held.state_failure.is_some();
        // A worker whose store failed asks it no more.
        let store = match store {
            Ok(Some(turns)) if !failed_before => Some(Box::new(turns.clone()) as Box<dyn Store>),
            _ => None,
        };
        let mut session = Session::for_item(&plan, &id, self.face, held, store);
        if first {
            let first = Arc::clone(&self.first);
            session.after_each_lesson(move || first_known(&first));
        }
        let record = match self.attempt(&mut session, &mut plan) {
            Ok(record) => record,
            Err(message) => return (bad_line(id, item.line, &message), session.into_held()),
        };
        // Said once per worker, not once per item.
        if let (false, Some(e), false) = (failed_before, &record.state_outage, plan.state_required)
        {
            eprintln!("abide: warning: the shared state is unavailable ({e}); going on without it");
        }
        let line = session.line(&plan, &record);
        let ended = Ended {
            id,
            line,
            kind: record.kind(),
            requests: record.attempts.len() as u64,
            throttled: record
                .attempts
                .iter()
                .filter(|a| a.status == Some(429))
                .count() as u64,
        };
        (ended, session.into_held())
    }

    /// The item's run, its body in place; an error is its usage error.
    fn attempt(&self, session: &mut Session, plan: &mut Plan) -> Result<Record, String> {
        if let Err(ending) = session.keep_task_key(plan) {
            return Ok(Record::unsent(ending));
        }
        let mut transport = session.transport(plan, Some(&self.http))?;
        let mut sink = match &plan.output {
            Some(_) => session.sink(plan)?,
            None => Sink::Direct {
                file: self
                    .null
                    .try_clone()
                    .map_err(|e| format!("/dev/null: {e}"))?,
                written: 0,
                head: None,
            },
        };
        let guard = session.guard(plan);
        let record = session.run(plan, guard, &mut transport, &mut sink);
        Ok(session.settle(plan, record, sink).record)
    }

    /// Writes down that an item ended; whether the batch goes on.
    fn end(&self, ended: Ended) -> bool {
        let mut ledger = self.ledger.lock().unwrap_or_else(|e| e.into_inner());
        if ledger.stopped.is_some() {
            return false;
        }
        let ledger = &mut *ledger;
        if let Some(journal) = &mut ledger.journal
            && let Err(e) = journal.record(&ended.id, ended.kind)
        {
            ledger.stopped = Some(format!("cannot write the --journal: {e}"));
            return false;
        }
        let mut text = ended.line.to_json();
        text.push('\n');
        if let Err(e) = ledger
            .out
            .write_all(text.as_bytes())
            .and_then(|()| ledger.out.flush())
        {
            ledger.stopped = Some(format!("cannot write the outcome lines: {e}"));
            return false;
        }
        ledger
            .summary
            .add(&ended.id, ended.kind, ended.requests, ended.throttled);
        ledger.throttled += ended.throttled;
        if let Some(bar) = &ledger.bar {
            bar.set_message(format!("{} answered 429", ledger.throttled));
            bar.inc(1);
        }
        true
    }
}

/// Item `id` (at `line` of the batch) could not be sent as written.
fn bad_line(id: String, line: u64, message: &str) -> Ended {
    let mut outcome = Line::usage_error(message);
    outcome.instruction =
        format!("Fix line {line} of the batch and run it again (a --journal skips what ended).");
    outcome.id = Some(id.clone());
    Ended {
        id,
        line: outcome,
        kind: Kind::UsageError,
        requests: 0,
        throttled: 0,
    }
}

/// The items of a batch file, counted in one pass for the bar's total
/// (blank lines and comments are not items).
fn count_items(mut reader: impl BufRead) -> io::Result<u64> {
    let mut count = 0;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            return Ok(count);
        }
        let text = buf.trim_ascii();
        if !text.is_empty() && !text.starts_with(b"#") {
            count += 1;
        }
    }
}

/// The batch's one bar: items done (of how many, when known), their rate,
/// the 429s so far, and the time left.
fn bar(total: Option<u64>) -> ProgressBar {
    let template = match total {
        Some(_) => "{spinner} {pos}/{len} items · {rate} · {msg} · {eta} left",
        None => "{spinner} {pos} items · {rate} · {msg}",
    };
    let style = ProgressStyle::with_template(template)
        .expect("the batch template is valid")
        .with_key(
            "rate",
            |state: &ProgressState, out: &mut dyn std::fmt::Write| {
                let _ = write!(out, "{:.1}/s", state.per_sec());
            },
        );
    let bar = ProgressBar::with_draw_target(total, progress::stderr())
        .with_style(style)
        .with_message("0 answered 429");
    bar.enable_steady_tick(std::time::Duration::from_millis(100));
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_counts_items_not_blank_lines_or_comments() {
        let text = "http://a/1\n\n  # note\n{\"url\": \"http://a/2\"}\nhttp://a/3";
        assert_eq!(count_items(text.as_bytes()).unwrap(), 3);
    }
}
