//! `--journal FILE`: a batch writes down each item that ended, as it ends,
//! so that a rerun with the same journal skips them and a batch killed
//! halfway resumes where it was. One JSON line per item (its id and
//! outcome) after a first line that says the file is abide's, appended and
//! flushed to the disk (`fdatasync`) before the item counts as ended. A
//! cancelled item is not written down: it did not end, and a rerun sends it.
//!
//! A kill can tear the last line: a last line without its newline is
//! dropped (and cut off the file, so the next entry starts a line of its
//! own). Any other line that cannot be read, or a first line that is not
//! the header, means the file is not an abide journal, and abide refuses to
//! write into it.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::exit::Kind;

/// The first line of every journal.
const HEADER: &str = r#"{"abide_journal":1}"#;

#[derive(Serialize, Deserialize)]
struct Entry<'a> {
    id: std::borrow::Cow<'a, str>,
    outcome: std::borrow::Cow<'a, str>,
}

pub struct Journal {
    file: File,
}

/// A journal that cannot be used; the batch does not start.
#[derive(Debug)]
pub enum Refused {
    Io(PathBuf, io::Error),
    NotAJournal(PathBuf, String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Io(path, e) => write!(f, "--journal {}: {e}", path.display()),
            Refused::NotAJournal(path, why) => write!(
                f,
                "--journal {} is not an abide journal ({why}); refusing to write into it",
                path.display()
            ),
        }
    }
}

impl std::error::Error for Refused {}

impl Journal {
    /// Opens (or creates) the journal, and returns the ids it says ended.
    pub fn open(path: &Path) -> Result<(Journal, HashSet<String>), Refused> {
        let io = |e| Refused::Io(path.to_path_buf(), e);
        let not = |why: String| Refused::NotAJournal(path.to_path_buf(), why);
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(io)?;
        let mut ended = HashSet::new();
        // The length of the whole lines read: what stays of the file.
        let mut kept = 0u64;
        let mut reader = BufReader::new(&file);
        let mut line = Vec::new();
        for number in 1.. {
            line.clear();
            let n = reader.read_until(b'\n', &mut line).map_err(io)?;
            if n == 0 {
                break;
            }
            if line.last() != Some(&b'\n') {
                // Torn by a kill mid-write: dropped. A first line can only be
                // torn out of the header; anything else is someone's file.
                if number == 1 && !HEADER.as_bytes().starts_with(&line) {
                    return Err(not(format!("its first line is not {HEADER}")));
                }
                break;
            }
            let text = std::str::from_utf8(&line[..n - 1])
                .map_err(|_| not(format!("line {number} is not UTF-8")))?;
            if number == 1 {
                if text != HEADER {
                    return Err(not(format!("its first line is not {HEADER}")));
                }
            } else {
                let entry: Entry =
                    serde_json::from_str(text).map_err(|e| not(format!("line {number}: {e}")))?;
                ended.insert(entry.id.into_owned());
            }
            kept += n as u64;
        }
        drop(reader);
        let length = file.metadata().map_err(io)?.len();
        if kept < length {
            // A torn header alone (a kill right after creating the file) is
            // as good as an empty file.
            file.set_len(kept).map_err(io)?;
        }
        let mut journal = Journal { file };
        if kept == 0 {
            journal.append(HEADER).map_err(io)?;
        }
        journal.file.seek(SeekFrom::End(0)).map_err(io)?;
        Ok((journal, ended))
    }

    /// Writes down that item `id` ended as `kind`, on the disk before it
    /// returns; a cancelled item is left out.
    pub fn record(&mut self, id: &str, kind: Kind) -> io::Result<()> {
        if kind.signal().is_some() {
            return Ok(());
        }
        let entry = Entry {
            id: id.into(),
            outcome: kind.name().into(),
        };
        let line = serde_json::to_string(&entry).map_err(io::Error::other)?;
        self.append(&line)
    }

    /// One whole line in one write (so that a kill tears at most the last),
    /// then `fdatasync`.
    fn append(&mut self, line: &str) -> io::Result<()> {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        self.file.write_all(&bytes)?;
        self.file.sync_data()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("abide-journal-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn records_and_resumes() {
        let path = dir().join("j");
        let (mut j, ended) = Journal::open(&path).unwrap();
        assert!(ended.is_empty());
        j.record("a", Kind::Succeeded).unwrap();
        j.record("b\"/\n", Kind::RetryExhausted).unwrap();
        j.record("c", Kind::Cancelled).unwrap();
        j.record("d", Kind::Terminated).unwrap();
        drop(j);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "{\"abide_journal\":1}\n{\"id\":\"a\",\"outcome\":\"SUCCEEDED\"}\n{\"id\":\"b\\\"/\\n\",\"outcome\":\"RETRY_EXHAUSTED\"}\n"
        );
        let (mut j, ended) = Journal::open(&path).unwrap();
        assert_eq!(
            ended,
            HashSet::from(["a".to_string(), "b\"/\n".to_string()])
        );
        j.record("e", Kind::Succeeded).unwrap();
        drop(j);
        assert_eq!(Journal::open(&path).unwrap().1.len(), 3);
    }

    #[test]
    fn a_torn_last_line_is_dropped_and_cut_off() {
        let path = dir().join("j");
        std::fs::write(
            &path,
            "{\"abide_journal\":1}\n{\"id\":\"a\",\"outcome\":\"SUCCEEDED\"}\n{\"id\":\"b\",\"outc",
        )
        .unwrap();
        let (mut j, ended) = Journal::open(&path).unwrap();
        assert_eq!(ended, HashSet::from(["a".to_string()]));
        j.record("c", Kind::Succeeded).unwrap();
        drop(j);
        let (_, ended) = Journal::open(&path).unwrap();
        assert_eq!(ended, HashSet::from(["a".to_string(), "c".to_string()]));
        // A torn header: the file had only just been made.
        std::fs::write(&path, "{\"abide_jou").unwrap();
        let (_, ended) = Journal::open(&path).unwrap();
        assert!(ended.is_empty());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{HEADER}\n")
        );
    }

    #[test]
    fn refuses_a_file_that_is_not_a_journal() {
        let d = dir();
        let rows = [
            ("urls", "http://a/\nhttp://b/\n", "its first line is not"),
            (
                "damaged",
                "{\"abide_journal\":1}\nnot json\n{\"id\":\"a\",\"outcome\":\"SUCCEEDED\"}\n",
                "line 2",
            ),
            ("binary", "\u{0}\u{1}\n", "its first line is not"),
            ("one line", "http://a/", "its first line is not"),
        ];
        for (name, text, why) in rows {
            let path = d.join(name);
            std::fs::write(&path, text).unwrap();
            let e = Journal::open(&path).err().expect("refused").to_string();
            assert!(
                e.contains("is not an abide journal") && e.contains(why),
                "{e}"
            );
            // and left as it was
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        }
        let e = Journal::open(&d.join("no/such/dir/j"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.starts_with("--journal "), "{e}");
    }
}
