//! What a person watching sees while a run goes on: a countdown during every
//! wait and a byte bar during a slow download, drawn on stderr only when it
//! is a terminal, and the `-v` lines. It consumes the loop's events and the
//! body as it is read; the words come from `narrate`.

use std::cell::RefCell;
use std::io::{self, IsTerminal, Read};
use std::sync::Arc;
use std::time::{Duration, Instant};

use console::Term;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle, TermLike};

use crate::edge::http::{Failure, Limits, Reply, Transport};
use crate::report::narrate::{Ended, Narrator};
use crate::rules::resume;
use crate::run::Event;

/// Redraw interval: the countdown's tenths of a second move every tick.
const TICK: Duration = Duration::from_millis(100);

/// A download shows its bar only once it has lasted this long, so that the
/// common small, fast body never flashes a bar on the screen.
const SLOW_DOWNLOAD: Duration = Duration::from_millis(500);

/// Columns left free at the end of every drawn line; see [`Narrowed`].
const ECHO_ROOM: u16 = 2;

/// Whether anything may be drawn: stderr is a terminal that can redraw a
/// line, and the user did not ask for quiet. Off the terminal, stderr
/// carries the outcome line alone.
pub fn on_terminal(quiet: bool) -> bool {
    let redraws = std::env::var("TERM").is_ok_and(|term| term != "dumb");
    !quiet && redraws && io::stderr().is_terminal()
}

pub struct Progress {
    narrator: Arc<Narrator>,
    /// The request's method, for the `-v` line of each attempt.
    method: String,
    /// What `-v` shows of each request, redacted.
    request_head: String,
    verbose: bool,
    /// Before every `-v` line: a batch item's `[id] `, else nothing.
    tag: String,
    /// Draw the countdown on stderr.
    screen: bool,
    /// Draw the download bar: on screen, and the body is not going to the
    /// same terminal, where the bar would tear through it.
    body_bar: bool,
    budget_ends: Instant,
    state: RefCell<State>,
}

/// What the display tracks between events.
struct State {
    sent_at: Instant,
    limit: Duration,
    ended: Option<Ended>,
    /// The countdown or download bar on screen (or about to be).
    shown: Option<ProgressBar>,
}

impl State {
    fn clear(&mut self) {
        if let Some(bar) = self.shown.take() {
            bar.finish_and_clear();
        }
    }
}

impl Progress {
    /// Created just before the loop starts, so that its budget clock and the
    /// loop's agree to within microseconds.
    /// `to_file`: the body goes to a file (or a pipe), so a download bar may
    /// be drawn on the terminal.
    /// `request_head`: what `-v` shows of each request, redacted.
    pub fn new(
        narrator: Narrator,
        method: String,
        request_head: String,
        to_file: bool,
        verbose: bool,
        screen: bool,
    ) -> Progress {
        let now = Instant::now();
        let budget = narrator.policy.budget;
        Progress {
            narrator: Arc::new(narrator),
            method,
            request_head,
            verbose,
            tag: String::new(),
            screen,
            body_bar: screen && (to_file || !io::stdout().is_terminal()),
            budget_ends: now + budget,
            state: RefCell::new(State {
                sent_at: now,
                limit: budget,
                ended: None,
                shown: None,
            }),
        }
    }

    /// `-v` lines that say which batch item they are about.
    pub fn tagged(mut self, id: &str) -> Progress {
        self.tag = format!("[{id}] ");
        self
    }

    /// Consumes one event of the loop.
    pub fn event(&self, event: &Event) {
        let mut state = self.state.borrow_mut();
        match *event {
            Event::Sending { attempt, limits } => {
                state.clear();
                state.sent_at = Instant::now();
                state.limit = limits.head;
                self.say(&state, || {
                    self.narrator.sending(attempt, &self.method, &limits)
                });
                self.head_lines(&state, '>', &self.request_head);
            }
            Event::Answered {
                attempt,
                status,
                server,
                head,
            } => {
                self.ended(&mut state, attempt, Ended::Answered { status, server });
                self.head_lines(&state, '<', head);
            }
            Event::Failed { attempt, error } => {
                let error = error.to_string();
                self.ended(&mut state, attempt, Ended::Failed { error });
            }
            Event::Resumed {
                attempt,
                offset,
                total,
            } => self.say(&state, || self.narrator.resumed(attempt, offset, total)),
            Event::Breaker(news) => self.say(&state, || self.narrator.breaker(news)),
            Event::Probing(level) => self.say(&state, || self.narrator.probing(level)),
            Event::Checking { url } => self.say(&state, || {
                format!("the write's effect is unknown: checking GET {url}")
            }),
            Event::Checked { status, settlement } => self.say(&state, || {
                crate::report::narrate::checked(status, settlement)
            }),
            // The outcome's reason says it.
            Event::Refused { .. } => {}
            Event::Waiting { wait, retry, .. } => {
                state.clear();
                let budget_left = self.budget_ends.saturating_duration_since(Instant::now());
                self.say(&state, || self.narrator.wait(wait, retry, budget_left));
                if self.screen {
                    let cause = self.narrator.countdown_cause(state.ended.as_ref(), wait);
                    state.shown = Some(self.countdown(cause, retry + 1, wait.duration));
                }
            }
        }
    }

    fn ended(&self, state: &mut State, attempt: u32, ended: Ended) {
        let took = state.sent_at.elapsed();
        self.say(state, || {
            self.narrator.attempt(attempt, &ended, took, state.limit)
        });
        state.ended = Some(ended);
    }

    /// A head under `-v`, a line each as curl shows it (`> GET / HTTP/1.1`,
    /// `< HTTP/1.1 200 OK`), without the blank line that ends it.
    fn head_lines(&self, state: &State, mark: char, head: &str) {
        for line in head.lines().filter(|l| !l.trim().is_empty()) {
            let line = format!("{}{mark} {}", self.tag, line.trim_end_matches('\r'));
            match (self.verbose, &state.shown) {
                (false, _) => return,
                (true, Some(bar)) => bar.suspend(|| eprintln!("{line}")),
                (true, None) => eprintln!("{line}"),
            }
        }
    }

    /// A `-v` line, written around whatever is on screen.
    fn say(&self, state: &State, line: impl FnOnce() -> String) {
        if !self.verbose {
            return;
        }
        let line = line();
        match &state.shown {
            Some(bar) => bar.suspend(|| eprintln!("abide: {}{line}", self.tag)),
            None => eprintln!("abide: {}{line}", self.tag),
        }
    }

    /// A spinner whose times are recomputed at every tick, from another
    /// thread, while the loop sleeps on its condition variable.
    fn countdown(&self, cause: String, next_attempt: u32, wait: Duration) -> ProgressBar {
        let narrator = Arc::clone(&self.narrator);
        let wait_ends = Instant::now() + wait;
        let budget_ends = self.budget_ends;
        let times = move |_: &ProgressState, out: &mut dyn std::fmt::Write| {
            let now = Instant::now();
            let _ = out.write_str(&narrator.countdown_times(
                next_attempt,
                wait_ends.saturating_duration_since(now),
                budget_ends.saturating_duration_since(now),
            ));
        };
        let style = ProgressStyle::with_template("{spinner} {msg} · {times}")
            .expect("the countdown template is valid")
            .with_key("times", times);
        let bar = ProgressBar::with_draw_target(None, stderr())
            .with_style(style)
            .with_message(cause);
        bar.enable_steady_tick(TICK);
        bar
    }

    /// A byte bar for this answer's body, drawn nowhere until the download
    /// turns out slow.
    fn download_bar(&self, reply: &Reply) -> ProgressBar {
        // A compressed body is counted after decoding, so its Content-Length
        // would not be the total.
        let length = reply
            .header("content-length")
            .filter(|_| reply.header("content-encoding").is_none())
            .and_then(|value| value.trim().parse::<u64>().ok());
        // The rest of a body that broke off: the bar goes on from where it was.
        let range = reply
            .header("content-range")
            .and_then(resume::content_range)
            .filter(|r| r.total.is_some() && length.is_some());
        let length = range.and_then(|r| r.total).or(length);
        let template = match length {
            Some(_) => {
                "{spinner} {msg} {wide_bar} {bytes}/{total_bytes} · {binary_bytes_per_sec} · {eta} left"
            }
            None => "{spinner} {msg} {bytes} · {binary_bytes_per_sec}",
        };
        let style = ProgressStyle::with_template(template)
            .expect("the download template is valid")
            .progress_chars("=> ");
        let bar = ProgressBar::with_draw_target(length, ProgressDrawTarget::hidden())
            .with_style(style)
            .with_message(format!("body from {}", self.narrator.host));
        if let Some(range) = range {
            bar.set_position(range.first);
            bar.reset_eta();
        }
        let mut state = self.state.borrow_mut();
        state.clear();
        state.shown = Some(bar.clone());
        bar
    }

    /// The transport, with every answer's body counted for the download bar.
    pub fn watch<'a, T: Transport>(&'a self, transport: &'a mut T) -> Watched<'a, T> {
        Watched {
            transport,
            progress: self,
        }
    }

    /// Clears the screen of progress; called before the outcome line is
    /// written, so that the terminal is left with that line alone.
    pub fn finish(&self) {
        self.state.borrow_mut().clear();
    }
}

/// A transport whose answers' bodies feed the download bar.
pub struct Watched<'a, T> {
    transport: &'a mut T,
    progress: &'a Progress,
}

impl<T: Transport> Transport for Watched<'_, T> {
    fn send(&mut self, limits: Limits, resume: Option<&resume::From>) -> Result<Reply, Failure> {
        let mut reply = self.transport.send(limits, resume)?;
        if self.progress.body_bar {
            let bar = self.progress.download_bar(&reply);
            reply.body = Box::new(Metered {
                body: reply.body,
                bar,
                started: Instant::now(),
                visible: false,
            });
        }
        Ok(reply)
    }
}

/// A body that counts its bytes into a bar, and shows the bar once the
/// download is slow.
struct Metered {
    body: Box<dyn Read>,
    bar: ProgressBar,
    started: Instant,
    visible: bool,
}

impl Read for Metered {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.body.read(buf)?;
        self.bar.inc(n as u64);
        if !self.visible && self.started.elapsed() >= SLOW_DOWNLOAD {
            self.visible = true;
            self.bar.set_draw_target(stderr());
            self.bar.enable_steady_tick(TICK);
        }
        Ok(n)
    }
}

/// stderr for a bar, as every bar of abide draws it.
pub fn stderr() -> ProgressDrawTarget {
    // indicatif's own refresh rate for stderr.
    ProgressDrawTarget::term_like_with_hz(Box::new(Narrowed(Term::buffered_stderr())), 20)
}

/// stderr, drawn as if it were two columns narrower. indicatif pads every
/// line to the full width, which leaves the cursor in the last column; the
/// `^C` a terminal echoes on Ctrl-C then wraps onto a new line, and the
/// final clear wipes that line instead of the countdown, leaving it on
/// screen above the outcome line.
#[derive(Debug)]
struct Narrowed(Term);

impl TermLike for Narrowed {
    fn width(&self) -> u16 {
        TermLike::width(&self.0).saturating_sub(ECHO_ROOM)
    }
    fn height(&self) -> u16 {
        TermLike::height(&self.0)
    }
    fn move_cursor_up(&self, n: usize) -> io::Result<()> {
        self.0.move_cursor_up(n)
    }
    fn move_cursor_down(&self, n: usize) -> io::Result<()> {
        self.0.move_cursor_down(n)
    }
    fn move_cursor_right(&self, n: usize) -> io::Result<()> {
        self.0.move_cursor_right(n)
    }
    fn move_cursor_left(&self, n: usize) -> io::Result<()> {
        self.0.move_cursor_left(n)
    }
    fn write_line(&self, s: &str) -> io::Result<()> {
        self.0.write_line(s)
    }
    fn write_str(&self, s: &str) -> io::Result<()> {
        self.0.write_str(s)
    }
    fn clear_line(&self) -> io::Result<()> {
        self.0.clear_line()
    }
    fn flush(&self) -> io::Result<()> {
        self.0.flush()
    }
}
