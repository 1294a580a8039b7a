//! The file backend: one small JSON file per scope, updated under an OS file
//! lock (released by the kernel when a process dies) and replaced atomically
//! by rename. Concurrency slots are lock files, freed by the kernel too.
//!
//! The directory may be reachable by others (a shared or misconfigured
//! one), so nothing in it is trusted: it must belong to this user and be
//! writable by no one else, as ssh demands of `~/.ssh`; no symlink is
//! followed; anything but a regular file is corrupt; and a temporary file
//! gets a fresh random name, created exclusively.

use std::cell::RefCell;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::store::{Slot, Store, Stored, check_hash, decode, forget, is_empty, scope_hash, sort};
use crate::clock::Millis;
use crate::clock::epoch_ms;
use crate::rules::scope::ScopeState;

pub struct FileStore {
    dir: PathBuf,
    /// Longest wait for another process's read-modify-write (they take
    /// microseconds; only a stopped process holds the lock this long).
    patience: Duration,
    notes: RefCell<Vec<String>>,
}

impl FileStore {
    /// Opens (creating, private) the state directory, and refuses one that
    /// another user owns or may write to: they could plant or swap its files.
    pub fn open(dir: &Path, patience: Duration) -> io::Result<FileStore> {
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir)?;
        let meta = fs::metadata(dir)?;
        // SAFETY: geteuid(2) cannot fail.
        let me = unsafe { libc::geteuid() };
        let refuse = |why: String| {
            Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("refusing the state directory {}: {why}", dir.display()),
            ))
        };
        if meta.uid() != me {
            return refuse(format!(
                "it belongs to uid {}, not to this user ({me})",
                meta.uid()
            ));
        }
        if meta.mode() & 0o022 != 0 {
            return refuse(format!(
                "others may write to it (mode {:04o}); `chmod go-w` it",
                meta.mode() & 0o7777
            ));
        }
        Ok(FileStore {
            dir: dir.to_path_buf(),
            patience,
            notes: RefCell::default(),
        })
    }

    /// The default directory: `$XDG_STATE_HOME/abide`, else `~/.local/state/abide`.
    pub fn default_dir() -> Option<PathBuf> {
        let non_empty = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        non_empty("XDG_STATE_HOME")
            .map(PathBuf::from)
            .or_else(|| non_empty("HOME").map(|h| Path::new(&h).join(".local/state")))
            .map(|base| base.join("abide"))
    }

    /// Scope names are hashed into file names, never used as paths.
    fn base(&self, scope: &str) -> PathBuf {
        self.base_of(&scope_hash(scope))
    }

    fn base_of(&self, hash: &str) -> PathBuf {
        self.dir.join(format!("scope-{hash}"))
    }

    fn with_suffix(base: &Path, suffix: &str) -> PathBuf {
        let mut name = base.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name)
    }

    fn read_file(&self, path: &Path) -> ScopeState {
        let read = || -> io::Result<Vec<u8>> {
            let mut bytes = Vec::new();
            open_regular(OpenOptions::new().read(true), path)?.read_to_end(&mut bytes)?;
            Ok(bytes)
        };
        match read() {
            Ok(bytes) => decode(&bytes).unwrap_or_else(|e| {
                self.notes.borrow_mut().push(format!(
                    "state file {} is unreadable ({e}); treating it as empty",
                    path.display()
                ));
                ScopeState::default()
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => ScopeState::default(),
            Err(e) => {
                self.notes.borrow_mut().push(format!(
                    "cannot read state file {}: {e}; treating it as empty",
                    path.display()
                ));
                ScopeState::default()
            }
        }
    }
}

/// Opens `path` as `options` say, but never through a symlink (another user
/// could point it at a file of theirs to create or clobber), never blocking
/// (a FIFO would hang the open past any budget or signal), and only if it is
/// a regular file.
fn open_regular(options: &mut OpenOptions, path: &Path) -> io::Result<File> {
    let file = options
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} is a symlink, which is never followed", path.display()),
            ),
            _ => io::Error::new(e.kind(), format!("{}: {e}", path.display())),
        })?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is not a regular file", path.display()),
        ));
    }
    Ok(file)
}

/// A lock or slot file, created private if missing.
fn private_file(path: &Path) -> io::Result<File> {
    open_regular(
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .mode(0o600),
        path,
    )
}

/// Takes the lock, polling so that a stuck holder costs a bounded wait
/// rather than a hang.
fn lock_patiently(file: &File, patience: Duration) -> io::Result<()> {
    let start = Instant::now();
    let mut pause = Duration::from_micros(50);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(fs::TryLockError::WouldBlock) if start.elapsed() < patience => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(5));
            }
            Err(fs::TryLockError::WouldBlock) => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "another process held the scope lock for over {} ms",
                        patience.as_millis()
                    ),
                ));
            }
            Err(fs::TryLockError::Error(e)) => return Err(e),
        }
    }
}

impl FileStore {
    /// The read-modify-write under the scope's lock; with `drop_empty`, a
    /// record left remembering nothing is removed rather than written.
    fn change(
        &self,
        base: &Path,
        change: &mut dyn FnMut(&mut ScopeState, Millis),
        drop_empty: bool,
    ) -> io::Result<()> {
        let lock_path = Self::with_suffix(base, ".lock");
        let lock = private_file(&lock_path)?;
        lock_patiently(&lock, self.patience)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", lock_path.display())))?;
        let path = Self::with_suffix(base, ".json");
        let mut state = self.read_file(&path);
        let before = state.clone();
        change(&mut state, epoch_ms(std::time::SystemTime::now()));
        if drop_empty && is_empty(&state) {
            match fs::remove_file(&path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display())));
                }
                _ => {}
            }
        } else if state != before {
            // A new random name, created exclusively: a name known in
            // advance could be planted as a symlink by another user.
            let temp = Self::with_suffix(base, &format!(".{:016x}.tmp", rand::random::<u64>()));
            let mut options = OpenOptions::new();
            options.write(true).create_new(true).mode(0o600);
            let written = open_regular(&mut options, &temp)
                .and_then(|mut file| file.write_all(&serde_json::to_vec(&state)?))
                .and_then(|()| {
                    fs::rename(&temp, &path)
                        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
                });
            if written.is_err() {
                let _ = fs::remove_file(&temp);
            }
            written?;
        }
        drop(lock);
        Ok(())
    }
}

impl Store for FileStore {
    fn read(&self, scope: &str) -> io::Result<(ScopeState, Millis)> {
        let state = self.read_file(&Self::with_suffix(&self.base(scope), ".json"));
        Ok((state, epoch_ms(std::time::SystemTime::now())))
    }

    fn update(
        &self,
        scope: &str,
        change: &mut dyn FnMut(&mut ScopeState, Millis),
    ) -> io::Result<()> {
        self.change(&self.base(scope), change, false)
    }

    /// The kernel frees a lock file when its holder dies: no lease needed.
    fn try_slot(&self, scope: &str, limit: u32, _lease: Duration) -> io::Result<Option<Slot>> {
        let base = self.base(scope);
        // Start at a random slot so that waiting processes spread over them.
        let first = rand::random::<u32>() % limit.max(1);
        for i in 0..limit {
            let n = (first + i) % limit;
            let file = private_file(&Self::with_suffix(&base, &format!(".slot{n}")))?;
            match file.try_lock() {
                Ok(()) => return Ok(Some(Slot::new(file))),
                Err(fs::TryLockError::WouldBlock) => continue,
                Err(fs::TryLockError::Error(e)) => return Err(e),
            }
        }
        Ok(None)
    }

    fn take_notes(&self) -> Vec<String> {
        self.notes.take()
    }

    /// The `scope-<hash>.json` files of the directory; any other name
    /// (locks, slots, temporary files, strangers) is not a record.
    fn list(&self) -> io::Result<(Vec<Stored>, Millis)> {
        let mut listing = Vec::new();
        for entry in fs::read_dir(&self.dir)? {
            let name = entry?.file_name();
            let Some(hash) = name
                .to_str()
                .and_then(|n| n.strip_prefix("scope-")?.strip_suffix(".json"))
                .filter(|h| check_hash(h).is_ok())
            else {
                continue;
            };
            let state = self.read_file(&self.dir.join(&name));
            listing.push(Stored {
                hash: hash.to_string(),
                state,
            });
        }
        sort(&mut listing);
        Ok((listing, epoch_ms(std::time::SystemTime::now())))
    }

    /// The slot files another process holds locked. Asking takes each free
    /// one for a moment: a run that looks for a slot just then tries the
    /// next, or looks again a millisecond later.
    fn slots_in_use(&self, hash: &str) -> io::Result<u32> {
        check_hash(hash)?;
        let prefix = format!("scope-{hash}.slot");
        let mut held = 0;
        for entry in fs::read_dir(&self.dir)? {
            let name = entry?.file_name();
            let is_slot = name
                .to_str()
                .and_then(|n| n.strip_prefix(&prefix))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            if !is_slot {
                continue;
            }
            let file = open_regular(OpenOptions::new().read(true), &self.dir.join(&name))?;
            match file.try_lock() {
                Ok(()) => {}
                Err(fs::TryLockError::WouldBlock) => held += 1,
                Err(fs::TryLockError::Error(e)) => return Err(e),
            }
        }
        Ok(held)
    }

    fn clear(&self, hash: &str, tasks: bool) -> io::Result<()> {
        check_hash(hash)?;
        self.change(
            &self.base_of(hash),
            &mut |state, now| forget(state, now, tasks),
            true,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(name: &str) -> (FileStore, PathBuf) {
        let dir = std::env::temp_dir().join(format!("abide-store-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        (
            FileStore::open(&dir.join("state"), Duration::from_secs(1)).unwrap(),
            dir.join("state"),
        )
    }

    #[test]
    fn updates_round_trip_privately() {
        let (store, dir) = store("round");
        store
            .update("https://api.example.com:443", &mut |s, _| {
                s.next_allowed_at = Some(42)
            })
            .unwrap();
        assert_eq!(
            store
                .read("https://api.example.com:443")
                .unwrap()
                .0
                .next_allowed_at,
            Some(42)
        );
        assert_eq!(store.read("other").unwrap().0.next_allowed_at, None);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&dir), 0o700);
            for entry in fs::read_dir(&dir).unwrap() {
                assert_eq!(mode(&entry.unwrap().path()), 0o600);
            }
        }
    }

    #[test]
    fn scope_names_never_become_paths() {
        let (store, dir) = store("names");
        store
            .update("../../etc/passwd", &mut |s, _| s.rate_tat = Some(1))
            .unwrap();
        let names: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names
                .iter()
                .all(|n| n.starts_with("scope-") && !n.contains("passwd")),
            "{names:?}"
        );
    }

    #[test]
    fn garbage_reads_as_empty_with_a_note() {
        let (store, _) = store("garbage");
        store
            .update("s", &mut |s, _| s.next_allowed_at = Some(1))
            .unwrap();
        let path = FileStore::with_suffix(&store.base("s"), ".json");
        for garbage in [&b"\x00\xffnot json"[..], b"{\"next_allowed_at\":", b""] {
            fs::write(&path, garbage).unwrap();
            assert_eq!(store.read("s").unwrap().0, ScopeState::default());
            assert_eq!(store.take_notes().len(), 1);
            store
                .update("s", &mut |s, _| s.next_allowed_at = Some(7))
                .unwrap();
            store.take_notes();
            assert_eq!(store.read("s").unwrap().0.next_allowed_at, Some(7));
        }
    }

    #[test]
    fn lists_and_clears_its_records() {
        let (store, dir) = store("list");
        super::super::store::lists_and_clears(&store);
        // Only records are listed: not locks, slots or strangers.
        fs::write(dir.join("scope-notahash.json"), "{}").unwrap();
        fs::write(dir.join("README"), "hello").unwrap();
        let _slot = store.try_slot("s", 1, Duration::from_secs(1)).unwrap();
        let names = |store: &FileStore| -> Vec<Option<String>> {
            let listing = store.list().unwrap().0;
            listing.into_iter().map(|s| s.state.name).collect()
        };
        // What the shared check left: one scope with pacing still ahead.
        assert_eq!(names(&store).len(), 1);
        assert!(names(&store)[0].as_deref().unwrap().starts_with("a-"));
        // An unreadable record is listed as empty (last: it has no name), with a note.
        fs::write(FileStore::with_suffix(&store.base("bad"), ".json"), "{").unwrap();
        let (listing, _) = store.list().unwrap();
        assert_eq!(listing.len(), 2);
        assert_eq!(listing[1].hash, scope_hash("bad"));
        assert_eq!(listing[1].state, ScopeState::default());
        assert_eq!(store.take_notes().len(), 1);
    }

    #[test]
    fn slots_are_exclusive_and_freed_on_drop() {
        let (store, _) = store("slots");
        let a = store
            .try_slot("s", 2, Duration::from_secs(1))
            .unwrap()
            .expect("first slot");
        let b = store
            .try_slot("s", 2, Duration::from_secs(1))
            .unwrap()
            .expect("second slot");
        assert!(
            store
                .try_slot("s", 2, Duration::from_secs(1))
                .unwrap()
                .is_none()
        );
        drop(a);
        assert!(
            store
                .try_slot("s", 2, Duration::from_secs(1))
                .unwrap()
                .is_some()
        );
        drop(b);
    }
}
