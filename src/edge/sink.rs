//! Where the final response body goes: stdout, streamed once its first MiB
//! is in, or a file that is written beside its destination and renamed into
//! place only on success, so a failed run never leaves a partial or
//! clobbered file. Either can take the rest of a body that broke off.
//! Whether a file already there may be replaced is decided at that rename.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};

/// As large as what one read of the response body yields.
const CHUNK: usize = crate::edge::http::BUFFER;

pub enum Sink {
    /// Up to `hold` bytes of a body are held back before any is written, so
    /// that a small body that breaks off can be retried with nothing shown.
    Stdout {
        released: u64,
        held: Vec<u8>,
        hold: usize,
        /// The body so far ended without a newline.
        open_line: bool,
        /// `-i`: the answer's head is written just before its body.
        include: bool,
        /// The head still to be written, before the first byte of the body.
        head: Vec<u8>,
    },
    /// A regular file (or a new one): a temporary file beside it, renamed on success.
    Atomic {
        temp: PathBuf,
        file: File,
        target: PathBuf,
        /// What the rename may do to a file already at `target`.
        clobber: Clobber,
        /// The body's bytes in the file (a head before them not counted).
        len: u64,
        /// `-i`: the head of the answer whose body comes next, written
        /// before it whenever the file starts over.
        head: Option<Vec<u8>>,
    },
    /// `/dev/null`, a FIFO, a terminal: written directly.
    Direct {
        file: File,
        written: u64,
        /// As for `Atomic`, written before the first byte.
        head: Option<Vec<u8>>,
    },
    /// `--agent`: the start of the body, kept in memory for the JSON object.
    Capture {
        body: Vec<u8>,
        limit: u64,
        truncated: bool,
    },
}

/// What putting a file in place may do to a file of its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Clobber {
    /// Replace it (-o, -O, and -J with --clobber).
    #[default]
    Replace,
    /// Leave it and fail (-J, as curl).
    Refuse,
    /// Leave it and take NAME.1 … NAME.99 (--no-clobber).
    Number,
}

/// How `-o FILE` is prepared.
#[derive(Debug, Clone, Copy, Default)]
pub struct FileOptions {
    /// `-C -`: the existing file is the start of the body.
    pub resume: bool,
    /// `--create-dirs`: the file's missing directories are created.
    pub create_dirs: bool,
    pub clobber: Clobber,
}

/// How much of a body stdout holds back before writing any of it.
pub const HOLD: usize = 1 << 20;

/// Why a body could not be delivered.
#[derive(Debug)]
pub enum DeliverError {
    /// The body broke off; what was delivered of it stays (see [`Sink::held`]).
    Read(io::Error),
    /// The destination refused the bytes (disk full, closed pipe).
    Write(io::Error),
}

/// Where a body goes relative to what the sink holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// From its first byte: whatever was held is thrown away.
    Over,
    /// After the bytes held: the rest of a body that broke off.
    Held,
}

impl Sink {
    /// `stream`: write every byte as it comes (`-N`), holding nothing back;
    /// `include`: write the answer's head before its body (`-i`).
    pub fn stdout(stream: bool, include: bool) -> Sink {
        Sink::Stdout {
            released: 0,
            held: Vec::new(),
            hold: if stream { 0 } else { HOLD },
            open_line: false,
            include,
            head: Vec::new(),
        }
    }

    /// The head of the answer whose body comes next. With `-i` it goes out
    /// with the first bytes of the body (or with the end of an empty one),
    /// never before a body that may still be retried; once some of a body
    /// is out, the head that preceded it stands.
    pub fn head(&mut self, text: &str) {
        match self {
            Sink::Stdout {
                include: true,
                released: 0,
                head,
                ..
            } => *head = text.as_bytes().to_vec(),
            Sink::Atomic {
                head: Some(head), ..
            }
            | Sink::Direct {
                head: Some(head),
                written: 0,
                ..
            } => *head = text.as_bytes().to_vec(),
            _ => {}
        }
    }

    /// `-i` with `-o FILE`: the file holds the head before the body.
    pub fn include(mut self) -> Sink {
        if let Sink::Atomic { head, .. } | Sink::Direct { head, .. } = &mut self {
            *head = Some(Vec::new());
        }
        self
    }

    pub fn capture(limit: u64) -> Sink {
        Sink::Capture {
            body: Vec::new(),
            limit,
            truncated: false,
        }
    }

    /// Prepares `-o PATH` before anything is sent, so that an unwritable
    /// destination costs no request. With `options.resume`, an existing
    /// regular file is copied into the temporary file, whose end is where
    /// the body continues (`-C -`).
    pub fn file(target: &Path, options: &FileOptions) -> io::Result<Sink> {
        if let Some(dir) = target.parent().filter(|_| options.create_dirs)
            && !dir.as_os_str().is_empty()
        {
            fs::create_dir_all(dir)?;
        }
        // Through a symlink, replace the file it points to, not the link.
        let resolved = fs::canonicalize(target)
            .ok()
            .filter(|_| fs::symlink_metadata(target).is_ok_and(|m| m.file_type().is_symlink()));
        let target = resolved.as_deref().unwrap_or(target);
        match fs::metadata(target) {
            Ok(meta) if !meta.is_file() => {
                let file = OpenOptions::new().write(true).open(target)?;
                return Ok(Sink::Direct {
                    file,
                    written: 0,
                    head: None,
                });
            }
            _ => {}
        }
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = target
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file name"))?
            .to_string_lossy();
        remove_stale_temps(&dir);
        let temp = dir.join(format!(
            ".{name}.abide-{}-{:08x}",
            std::process::id(),
            rand::random::<u32>()
        ));
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        let mut len = 0;
        if let Ok(meta) = fs::metadata(target) {
            // Keep the permissions of the file being replaced.
            let _ = fs::set_permissions(&temp, meta.permissions());
            if options.resume {
                let copied = File::open(target).and_then(|mut old| io::copy(&mut old, &mut file));
                len = copied.inspect_err(|_| {
                    let _ = fs::remove_file(&temp);
                })?;
            }
        }
        Ok(Sink::Atomic {
            temp,
            file,
            target: target.to_path_buf(),
            clobber: options.clobber,
            len,
            head: None,
        })
    }

    /// Writes every byte to stdout as it comes from now on: an event
    /// stream is read as it goes, never whole.
    pub fn stream(&mut self) {
        if let Sink::Stdout { hold, .. } = self {
            *hold = 0;
        }
    }

    /// The bytes of the body the sink holds: where a resumed body continues.
    /// `--agent` keeps only the start of a body, and never resumes one.
    pub fn held(&self) -> u64 {
        match self {
            Sink::Stdout { released, held, .. } => released + held.len() as u64,
            Sink::Atomic { len, .. } => *len,
            Sink::Direct { written, .. } => *written,
            Sink::Capture { .. } => 0,
        }
    }

    /// Whether a body may start over without anything of an earlier one
    /// having been seen: nothing was written where it cannot be taken back.
    pub fn clean(&self) -> bool {
        match self {
            Sink::Stdout { released, .. } => *released == 0,
            Sink::Direct { written, .. } => *written == 0,
            Sink::Atomic { .. } | Sink::Capture { .. } => true,
        }
    }

    /// Streams `body` into the sink in constant memory.
    pub fn deliver(&mut self, body: &mut dyn Read, start: Start) -> Result<u64, DeliverError> {
        let over = start == Start::Over;
        match self {
            Sink::Stdout {
                released,
                held,
                hold,
                open_line,
                head,
                ..
            } => {
                // What was written cannot be taken back (see `clean`).
                debug_assert!(!over || *released == 0);
                if over {
                    held.clear();
                }
                let mut lock = LastByte {
                    out: io::stdout().lock(),
                    last: None,
                };
                let mut flushed = Flushed(&mut lock);
                // A stream is flushed as it comes: stdout's line buffer would
                // keep a piece without a newline from its reader.
                let out: &mut dyn Write = if *hold == 0 { &mut flushed } else { flushed.0 };
                let result = hold_then_copy(body, out, head, held, *hold, released).and_then(|n| {
                    release(out, head, held, released)?;
                    out.flush().map_err(DeliverError::Write)?;
                    Ok(n)
                });
                if let Some(last) = lock.last {
                    *open_line = last != b'\n';
                }
                result
            }
            Sink::Atomic {
                file, len, head, ..
            } => {
                if over {
                    file.set_len(0).map_err(DeliverError::Write)?;
                    file.rewind().map_err(DeliverError::Write)?;
                    *len = 0;
                    if let Some(head) = head {
                        file.write_all(head).map_err(DeliverError::Write)?;
                    }
                }
                copy(body, file, len)
            }
            Sink::Capture {
                body: kept,
                limit,
                truncated,
            } => {
                kept.clear();
                let read = body
                    .take(*limit)
                    .read_to_end(kept)
                    .map_err(DeliverError::Read)?;
                // One byte more tells whether there was more; the rest is not read.
                let mut probe = [0u8; 1];
                *truncated = matches!(body.read(&mut probe), Ok(1));
                Ok(read as u64)
            }
            Sink::Direct {
                file,
                written,
                head,
            } => {
                if let Some(head) = head {
                    file.write_all(&std::mem::take(head))
                        .map_err(DeliverError::Write)?;
                }
                copy(body, file, written)
            }
        }
    }

    /// Puts a successful body in place. The rename is atomic: readers and
    /// failed runs never see a partial file. It is not preceded by an fsync
    /// (as curl does not sync either): that would halve `-o` throughput for
    /// a guarantee only a power cut right after the run could need.
    /// Without [`Clobber::Replace`], the file is linked into place, which
    /// fails, atomically too, where a file of the name exists.
    pub fn commit(self) -> io::Result<()> {
        match self {
            Sink::Atomic {
                temp,
                file,
                target,
                clobber,
                ..
            } => {
                drop(file);
                let placed = match clobber {
                    Clobber::Replace => fs::rename(&temp, &target),
                    Clobber::Refuse => link(&temp, &target),
                    Clobber::Number => {
                        let mut placed = link(&temp, &target);
                        for n in 1..100 {
                            if !placed
                                .as_ref()
                                .is_err_and(|e| e.kind() == io::ErrorKind::AlreadyExists)
                            {
                                break;
                            }
                            let mut name = target.clone().into_os_string();
                            name.push(format!(".{n}"));
                            placed = link(&temp, Path::new(&name));
                        }
                        placed
                    }
                };
                let _ = fs::remove_file(&temp);
                placed
            }
            Sink::Stdout { .. } | Sink::Direct { .. } | Sink::Capture { .. } => Ok(()),
        }
    }

    /// `-J`: the file goes in place under `name` (a plain file name, in the
    /// directory of the planned one), with what `clobber` allows.
    pub fn rename(&mut self, name: &str, to_clobber: Clobber) {
        if let Sink::Atomic {
            target, clobber, ..
        } = self
        {
            target.set_file_name(name);
            *clobber = to_clobber;
        }
    }

    /// Whether the body written to stdout left its last line open: at a
    /// terminal, what follows must start on a line of its own.
    pub fn open_line(&self) -> bool {
        matches!(
            self,
            Sink::Stdout {
                open_line: true,
                ..
            }
        )
    }

    /// Leaves the destination as it was; bytes stdout held back are dropped.
    /// With `-i`, a failed run that wrote nothing writes the final answer's
    /// `head` alone (empty when none came), as curl -f -i does.
    pub fn discard(self, head: &str) -> io::Result<()> {
        match self {
            Sink::Atomic { temp, file, .. } => {
                drop(file);
                let _ = fs::remove_file(temp);
                Ok(())
            }
            Sink::Stdout {
                include: true,
                released: 0,
                ..
            } => {
                let mut out = io::stdout().lock();
                out.write_all(head.as_bytes())?;
                out.flush()
            }
            Sink::Stdout { .. } | Sink::Direct { .. } | Sink::Capture { .. } => Ok(()),
        }
    }
}

/// Puts `temp` at `target` unless a file is there; `temp` stays.
fn link(temp: &Path, target: &Path) -> io::Result<()> {
    fs::hard_link(temp, target).map_err(|e| {
        if e.kind() == io::ErrorKind::AlreadyExists {
            io::Error::new(
                e.kind(),
                format!("{} exists and is left as it was", target.display()),
            )
        } else {
            e
        }
    })
}

/// The plain file name a Content-Disposition value gives, as curl's -J
/// takes it: the `filename=` parameter, quoted or bare, without any
/// directory before its last / or \; none if nothing is left, `.`, `..`,
/// or a name with control characters (a terminal escape in `ls`).
pub fn disposition_name(value: &str) -> Option<String> {
    let start = value
        .split(';')
        .map(str::trim_start)
        .find_map(|param| param.strip_prefix("filename="))?;
    let name = match start.strip_prefix('"') {
        Some(quoted) => quoted.split('"').next().unwrap_or_default(),
        None => start.split([';', ' ', '\t']).next().unwrap_or_default(),
    };
    let name = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let name = name.split(['\r', '\n']).next().unwrap_or_default();
    let plain = !name.is_empty() && name != "." && name != ".." && !name.contains(char::is_control);
    plain.then(|| name.to_string())
}

/// Removes the temporary files that runs killed outright (SIGKILL, a crash,
/// a power cut) left in `dir`: only names of [`Sink::file`]'s exact pattern,
/// owned by this user, whose process is gone. A live run's file, even
/// another user's, is never touched.
fn remove_stale_temps(dir: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    // SAFETY: geteuid(2) cannot fail.
    let me = unsafe { libc::geteuid() };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(temp_pid) else {
            continue;
        };
        let mine = entry.metadata().is_ok_and(|m| m.is_file() && m.uid() == me);
        if mine && !alive(pid) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// The process id in a temporary file's name, `.{target}.abide-{pid}-{8 hex digits}`.
fn temp_pid(name: &str) -> Option<libc::pid_t> {
    let (rest, random) = name.strip_prefix('.')?.rsplit_once('-')?;
    let (target, pid) = rest.rsplit_once(".abide-")?;
    let random_ok = random.len() == 8
        && random
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let pid_ok = !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit());
    if target.is_empty() || !random_ok || !pid_ok {
        return None;
    }
    pid.parse().ok().filter(|&pid| pid > 0)
}

/// Whether process `pid` exists (ours or another user's).
fn alive(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks that the process exists; nothing is sent.
    let found = unsafe { libc::kill(pid, 0) } == 0;
    found || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// A writer that remembers the last byte it was given.
struct LastByte<W> {
    out: W,
    last: Option<u8>,
}

impl<W: Write> Write for LastByte<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        if n > 0 {
            self.last = Some(buf[n - 1]);
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// A writer that flushes every write.
struct Flushed<'a>(&'a mut dyn Write);

impl Write for Flushed<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.0.write(buf)?;
        self.0.flush()?;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// Reads into `held` until it holds `hold` bytes, then writes `head`, those
/// and streams the rest; returns the bytes read. A body that ends within
/// `hold` is left held, for the caller to release.
fn hold_then_copy(
    body: &mut dyn Read,
    out: &mut dyn Write,
    head: &mut Vec<u8>,
    held: &mut Vec<u8>,
    hold: usize,
    released: &mut u64,
) -> Result<u64, DeliverError> {
    let mut buf = vec![0u8; CHUNK];
    let mut read = 0;
    while held.len() < hold {
        let want = CHUNK.min(hold - held.len());
        match body.read(&mut buf[..want]) {
            Ok(0) => return Ok(read),
            Ok(n) => {
                held.extend_from_slice(&buf[..n]);
                read += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(DeliverError::Read(error)),
        }
    }
    release(out, head, held, released)?;
    copy(body, out, released).map(|n| n + read)
}

/// Writes the pending head (once), then what is held.
fn release(
    out: &mut dyn Write,
    head: &mut Vec<u8>,
    held: &mut Vec<u8>,
    released: &mut u64,
) -> Result<(), DeliverError> {
    out.write_all(&std::mem::take(head))
        .map_err(DeliverError::Write)?;
    out.write_all(held).map_err(DeliverError::Write)?;
    *released += held.len() as u64;
    held.clear();
    Ok(())
}

fn copy(body: &mut dyn Read, out: &mut dyn Write, written: &mut u64) -> Result<u64, DeliverError> {
    let mut buf = vec![0u8; CHUNK];
    let mut total = 0;
    loop {
        let n = match body.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(DeliverError::Read(error)),
        };
        out.write_all(&buf[..n]).map_err(DeliverError::Write)?;
        total += n as u64;
        *written += n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct BreaksOff(usize);
    impl Read for BreaksOff {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0 == 0 {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "cut"));
            }
            let n = self.0.min(buf.len());
            buf[..n].fill(b'x');
            self.0 -= n;
            Ok(n)
        }
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("abide-sink-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn failed_delivery_keeps_the_old_file() {
        let dir = temp_dir("keep");
        let target = dir.join("out.json");
        fs::write(&target, "old").unwrap();
        let mut sink = Sink::file(&target, &FileOptions::default()).unwrap();
        let err = sink.deliver(&mut BreaksOff(10), Start::Over).unwrap_err();
        assert!(matches!(err, DeliverError::Read(_)));
        assert_eq!(sink.held(), 10);
        sink.discard("").unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "old");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "temp file removed");
    }

    #[test]
    fn retried_delivery_starts_over_and_commits() {
        let dir = temp_dir("retry");
        let target = dir.join("out.bin");
        let mut sink = Sink::file(&target, &FileOptions::default()).unwrap();
        assert!(sink.deliver(&mut BreaksOff(100), Start::Over).is_err());
        assert_eq!(sink.deliver(&mut &b"complete"[..], Start::Over).unwrap(), 8);
        sink.commit().unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"complete");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
    }

    #[test]
    fn a_resumed_delivery_appends_and_an_existing_file_can_be_continued() {
        let dir = temp_dir("resume");
        let target = dir.join("out.bin");
        let mut sink = Sink::file(&target, &FileOptions::default()).unwrap();
        assert!(sink.deliver(&mut BreaksOff(100), Start::Over).is_err());
        assert_eq!(sink.held(), 100);
        assert_eq!(sink.deliver(&mut &b"end"[..], Start::Held).unwrap(), 3);
        assert_eq!(sink.held(), 103);
        sink.commit().unwrap();
        let mut expected = vec![b'x'; 100];
        expected.extend_from_slice(b"end");
        assert_eq!(fs::read(&target).unwrap(), expected);

        // -C -: the old file is the start of the body.
        let mut sink = Sink::file(
            &target,
            &FileOptions {
                resume: true,
                ..FileOptions::default()
            },
        )
        .unwrap();
        assert_eq!(sink.held(), 103);
        sink.deliver(&mut &b"!"[..], Start::Held).unwrap();
        sink.commit().unwrap();
        assert_eq!(fs::read(&target).unwrap().len(), 104);
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
    }

    #[test]
    fn stdout_holds_a_small_body_back_until_it_is_whole() {
        let mut out = Vec::new();
        let mut held = Vec::new();
        let mut released = 0;
        let cut = hold_then_copy(
            &mut BreaksOff(1000),
            &mut out,
            &mut Vec::new(),
            &mut held,
            4096,
            &mut released,
        );
        assert!(matches!(cut, Err(DeliverError::Read(_))));
        assert!(out.is_empty(), "nothing written of a body that broke off");
        assert_eq!((held.len(), released), (1000, 0));
        // Beyond the hold, bytes stream.
        held.clear();
        let cut = hold_then_copy(
            &mut BreaksOff(5000),
            &mut out,
            &mut Vec::new(),
            &mut held,
            4096,
            &mut released,
        );
        assert!(cut.is_err());
        assert_eq!((out.len(), released, held.len()), (5000, 5000, 0));
    }

    #[test]
    fn the_head_goes_out_with_the_body_and_never_before_a_held_one() {
        let (mut out, mut held, mut released) = (Vec::new(), Vec::new(), 0);
        let mut head = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
        let cut = hold_then_copy(
            &mut BreaksOff(10),
            &mut out,
            &mut head,
            &mut held,
            4096,
            &mut released,
        );
        assert!(cut.is_err());
        assert!(out.is_empty(), "no head before a body that broke off");
        held.clear();
        hold_then_copy(
            &mut &b"ok"[..],
            &mut out,
            &mut head,
            &mut held,
            4096,
            &mut released,
        )
        .unwrap();
        release(&mut out, &mut head, &mut held, &mut released).unwrap();
        assert_eq!(out, b"HTTP/1.1 200 OK\r\n\r\nok");
        assert!(head.is_empty(), "written once");
    }

    #[test]
    fn an_including_file_holds_the_final_head_before_the_body() {
        let dir = temp_dir("include");
        let target = dir.join("out.txt");
        let mut sink = Sink::file(&target, &FileOptions::default())
            .unwrap()
            .include();
        sink.head("HTTP/1.1 200 OK\r\na: 1\r\n\r\n");
        assert!(sink.deliver(&mut BreaksOff(5), Start::Over).is_err());
        sink.head("HTTP/1.1 200 OK\r\na: 2\r\n\r\n");
        sink.deliver(&mut &b"body"[..], Start::Over).unwrap();
        assert_eq!(sink.held(), 4, "the head is not part of the body");
        sink.commit().unwrap();
        assert_eq!(
            fs::read_to_string(&target).unwrap(),
            "HTTP/1.1 200 OK\r\na: 2\r\n\r\nbody"
        );
    }

    #[test]
    fn capture_keeps_the_start_and_notes_the_rest() {
        let mut sink = Sink::capture(4);
        assert_eq!(sink.deliver(&mut &b"abcdef"[..], Start::Over).unwrap(), 4);
        assert!(matches!(&sink, Sink::Capture { body, truncated: true, .. } if body == b"abcd"));
        assert_eq!(sink.deliver(&mut &b"xy"[..], Start::Over).unwrap(), 2);
        assert!(matches!(&sink, Sink::Capture { body, truncated: false, .. } if body == b"xy"));
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_is_written_through() {
        let dir = temp_dir("symlink");
        let real = dir.join("real.json");
        let link = dir.join("link.json");
        fs::write(&real, "old").unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let mut sink = Sink::file(&link, &FileOptions::default()).unwrap();
        sink.deliver(&mut &b"new"[..], Start::Over).unwrap();
        sink.commit().unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read_to_string(&real).unwrap(), "new");
    }

    #[test]
    fn only_names_of_temporary_files_yield_a_pid() {
        assert_eq!(temp_pid(".out.json.abide-4242-0123abcd"), Some(4242));
        assert_eq!(temp_pid(".a.abide-b.abide-7-ffffffff"), Some(7));
        for other in [
            "out.json.abide-4242-0123abcd",
            "..abide-4242-0123abcd",
            ".out.abide-4242-0123abc",
            ".out.abide-4242-0123ABCD",
            ".out.abide--0123abcd",
            ".out.abide-0-0123abcd",
            ".out.abide-42x-0123abcd",
            ".out.abide-99999999999-0123abcd",
        ] {
            assert_eq!(temp_pid(other), None, "{other}");
        }
    }

    #[test]
    fn a_file_that_may_not_be_replaced_is_left_or_numbered() {
        let dir = temp_dir("clobber");
        let target = dir.join("out.txt");
        fs::write(&target, "old").unwrap();
        let options = |clobber| FileOptions {
            clobber,
            ..FileOptions::default()
        };
        let mut sink = Sink::file(&target, &options(Clobber::Refuse)).unwrap();
        sink.deliver(&mut &b"new"[..], Start::Over).unwrap();
        assert!(sink.commit().is_err());
        assert_eq!(fs::read_to_string(&target).unwrap(), "old");
        for expected in ["out.txt.1", "out.txt.2"] {
            let mut sink = Sink::file(&target, &options(Clobber::Number)).unwrap();
            sink.deliver(&mut &b"new"[..], Start::Over).unwrap();
            sink.commit().unwrap();
            assert_eq!(fs::read_to_string(dir.join(expected)).unwrap(), "new");
        }
        let mut sink = Sink::file(&target, &options(Clobber::Refuse)).unwrap();
        sink.rename("other.txt", Clobber::Refuse);
        sink.deliver(&mut &b"named"[..], Start::Over).unwrap();
        sink.commit().unwrap();
        assert_eq!(fs::read_to_string(dir.join("other.txt")).unwrap(), "named");
        assert_eq!(
            fs::read_dir(&dir).unwrap().count(),
            4,
            "no temporary file left"
        );
        let nested = dir.join("a/b/c.txt");
        let options = FileOptions {
            create_dirs: true,
            ..FileOptions::default()
        };
        let mut sink = Sink::file(&nested, &options).unwrap();
        sink.deliver(&mut &b"deep"[..], Start::Over).unwrap();
        sink.commit().unwrap();
        assert_eq!(fs::read_to_string(&nested).unwrap(), "deep");
    }

    #[test]
    fn a_disposition_gives_a_plain_name_only() {
        let name = |v| disposition_name(v);
        assert_eq!(name("attachment; filename=\"r.csv\""), Some("r.csv".into()));
        assert_eq!(
            name("attachment; filename=r.csv; size=3"),
            Some("r.csv".into())
        );
        assert_eq!(
            name("attachment; filename=\"../../etc/passwd\""),
            Some("passwd".into())
        );
        assert_eq!(
            name("attachment; filename=\"C:\\\\x\\\\evil.dll\""),
            Some("evil.dll".into())
        );
        for none in [
            "attachment; filename=\"a\x1b[31m.txt\"",
            "attachment",
            "attachment; filename=\"dir/\"",
            "inline; filename=..",
            "x; filename=\"\"",
        ] {
            assert_eq!(name(none), None, "{none}");
        }
    }

    #[test]
    fn special_files_are_written_directly() {
        let mut sink = Sink::file(Path::new("/dev/null"), &FileOptions::default()).unwrap();
        assert!(matches!(sink, Sink::Direct { .. }));
        assert_eq!(sink.deliver(&mut &b"abc"[..], Start::Over).unwrap(), 3);
        sink.commit().unwrap();
    }
}
