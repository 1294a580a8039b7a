//! Where the final response body goes: stdout, streamed, or a file that is
//! written beside its destination and renamed into place only on success, so
//! a failed run never leaves a partial or clobbered file.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};

/// As large as what one read of the response body yields.
const CHUNK: usize = crate::http::BUFFER;

pub enum Sink {
    Stdout {
        written: u64,
        /// The body so far ended without a newline.
        open_line: bool,
    },
    /// A regular file (or a new one): a temporary file beside it, renamed on success.
    Atomic {
        temp: PathBuf,
        file: File,
        target: PathBuf,
    },
    /// `/dev/null`, a FIFO, a terminal: written directly.
    Direct { file: File },
    /// `--agent`: the start of the body, kept in memory for the JSON object.
    Capture {
        body: Vec<u8>,
        limit: u64,
        truncated: bool,
    },
}

/// Why a body could not be delivered.
#[derive(Debug)]
pub enum DeliverError {
    /// The body broke off. `rewound` tells whether the sink was left as if
    /// nothing had been written, so that the attempt can be retried cleanly.
    Read { error: io::Error, rewound: bool },
    /// The destination refused the bytes (disk full, closed pipe).
    Write(io::Error),
}

impl Sink {
    pub fn stdout() -> Sink {
        Sink::Stdout {
            written: 0,
            open_line: false,
        }
    }

    pub fn capture(limit: u64) -> Sink {
        Sink::Capture {
            body: Vec::new(),
            limit,
            truncated: false,
        }
    }

    /// Prepares `-o PATH` before anything is sent, so that an unwritable
    /// destination costs no request.
    pub fn file(target: &Path) -> io::Result<Sink> {
        // Through a symlink, replace the file it points to, not the link.
        let resolved = fs::canonicalize(target)
            .ok()
            .filter(|_| fs::symlink_metadata(target).is_ok_and(|m| m.file_type().is_symlink()));
        let target = resolved.as_deref().unwrap_or(target);
        match fs::metadata(target) {
            Ok(meta) if !meta.is_file() => {
                let file = OpenOptions::new().write(true).open(target)?;
                return Ok(Sink::Direct { file });
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
        let temp = dir.join(format!(
            ".{name}.abide-{}-{:08x}",
            std::process::id(),
            rand::random::<u32>()
        ));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        if let Ok(meta) = fs::metadata(target) {
            // Keep the permissions of the file being replaced.
            let _ = fs::set_permissions(&temp, meta.permissions());
        }
        Ok(Sink::Atomic {
            temp,
            file,
            target: target.to_path_buf(),
        })
    }

    /// Streams `body` into the sink in constant memory.
    pub fn deliver(&mut self, body: &mut dyn Read) -> Result<u64, DeliverError> {
        match self {
            Sink::Stdout { written, open_line } => {
                let mut out = LastByte {
                    out: io::stdout().lock(),
                    last: None,
                };
                let result = copy(body, &mut out, written);
                if let Some(last) = out.last {
                    *open_line = last != b'\n';
                }
                let mut out = out.out;
                let flushed = out.flush().map_err(DeliverError::Write);
                let rewound = *written == 0;
                match result {
                    Err(DeliverError::Read { error, .. }) => {
                        Err(DeliverError::Read { error, rewound })
                    }
                    other => other.and_then(|n| flushed.map(|()| n)),
                }
            }
            Sink::Atomic { file, .. } => {
                file.set_len(0).map_err(DeliverError::Write)?;
                file.rewind().map_err(DeliverError::Write)?;
                let mut count = 0;
                copy(body, file, &mut count)
            }
            Sink::Capture {
                body: kept,
                limit,
                truncated,
            } => {
                kept.clear();
                let read =
                    body.take(*limit)
                        .read_to_end(kept)
                        .map_err(|error| DeliverError::Read {
                            error,
                            rewound: true,
                        })?;
                // One byte more tells whether there was more; the rest is not read.
                let mut probe = [0u8; 1];
                *truncated = matches!(body.read(&mut probe), Ok(1));
                Ok(read as u64)
            }
            Sink::Direct { file } => {
                let mut count = 0;
                copy(body, file, &mut count).map_err(|e| match e {
                    DeliverError::Read { error, .. } => DeliverError::Read {
                        error,
                        rewound: count == 0,
                    },
                    other => other,
                })
            }
        }
    }

    /// Puts a successful body in place. The rename is atomic: readers and
    /// failed runs never see a partial file. It is not preceded by an fsync
    /// (as curl does not sync either): that would halve `-o` throughput for
    /// a guarantee only a power cut right after the run could need.
    pub fn commit(self) -> io::Result<()> {
        match self {
            Sink::Atomic { temp, file, target } => {
                drop(file);
                fs::rename(&temp, &target).inspect_err(|_| {
                    let _ = fs::remove_file(&temp);
                })
            }
            Sink::Stdout { .. } | Sink::Direct { .. } | Sink::Capture { .. } => Ok(()),
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

    /// Leaves the destination as it was.
    pub fn discard(self) {
        if let Sink::Atomic { temp, file, .. } = self {
            drop(file);
            let _ = fs::remove_file(temp);
        }
    }
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

fn copy(body: &mut dyn Read, out: &mut dyn Write, written: &mut u64) -> Result<u64, DeliverError> {
    let mut buf = vec![0u8; CHUNK];
    let mut total = 0;
    loop {
        let n = match body.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => {
                return Err(DeliverError::Read {
                    error,
                    rewound: true,
                });
            }
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
        let mut sink = Sink::file(&target).unwrap();
        let err = sink.deliver(&mut BreaksOff(10)).unwrap_err();
        assert!(matches!(err, DeliverError::Read { rewound: true, .. }));
        sink.discard();
        assert_eq!(fs::read_to_string(&target).unwrap(), "old");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "temp file removed");
    }

    #[test]
    fn retried_delivery_starts_over_and_commits() {
        let dir = temp_dir("retry");
        let target = dir.join("out.bin");
        let mut sink = Sink::file(&target).unwrap();
        assert!(sink.deliver(&mut BreaksOff(100)).is_err());
        assert_eq!(sink.deliver(&mut &b"complete"[..]).unwrap(), 8);
        sink.commit().unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"complete");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
    }

    #[test]
    fn capture_keeps_the_start_and_notes_the_rest() {
        let mut sink = Sink::capture(4);
        assert_eq!(sink.deliver(&mut &b"abcdef"[..]).unwrap(), 4);
        assert!(matches!(&sink, Sink::Capture { body, truncated: true, .. } if body == b"abcd"));
        assert_eq!(sink.deliver(&mut &b"xy"[..]).unwrap(), 2);
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
        let mut sink = Sink::file(&link).unwrap();
        sink.deliver(&mut &b"new"[..]).unwrap();
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
    fn special_files_are_written_directly() {
        let mut sink = Sink::file(Path::new("/dev/null")).unwrap();
        assert!(matches!(sink, Sink::Direct { .. }));
        assert_eq!(sink.deliver(&mut &b"abc"[..]).unwrap(), 3);
        sink.commit().unwrap();
    }
}
