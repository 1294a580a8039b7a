//! The file backend: one small JSON file per scope, updated under an OS file
//! lock (released by the kernel when a process dies) and replaced atomically
//! by rename. Concurrency slots are lock files, freed by the kernel too.

use std::cell::RefCell;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{Slot, Store, scope_hash};
use crate::scope::{Millis, ScopeState};
use crate::shared::epoch_millis;

pub struct FileStore {
    dir: PathBuf,
    /// Longest wait for another process's read-modify-write (they take
    /// microseconds; only a stopped process holds the lock this long).
    patience: Duration,
    notes: RefCell<Vec<String>>,
}

impl FileStore {
    /// Opens (creating, private) the state directory.
    pub fn open(dir: &Path, patience: Duration) -> io::Result<FileStore> {
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir)?;
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
        self.dir.join(format!("scope-{}", scope_hash(scope)))
    }

    fn with_suffix(base: &Path, suffix: &str) -> PathBuf {
        let mut name = base.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name)
    }

    fn read_file(&self, path: &Path) -> ScopeState {
        match fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
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

/// Opens (creating, private) a state file; an error names it.
fn private_file(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
        .open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
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
                    format!("another process held the scope lock for over {patience:?}"),
                ));
            }
            Err(fs::TryLockError::Error(e)) => return Err(e),
        }
    }
}

impl Store for FileStore {
    fn read(&self, scope: &str) -> io::Result<(ScopeState, Millis)> {
        let state = self.read_file(&Self::with_suffix(&self.base(scope), ".json"));
        Ok((state, epoch_millis(std::time::SystemTime::now())))
    }

    fn update(
        &self,
        scope: &str,
        change: &mut dyn FnMut(&mut ScopeState, Millis),
    ) -> io::Result<()> {
        let base = self.base(scope);
        let lock_path = Self::with_suffix(&base, ".lock");
        let lock = private_file(&lock_path)?;
        lock_patiently(&lock, self.patience)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", lock_path.display())))?;
        let path = Self::with_suffix(&base, ".json");
        let mut state = self.read_file(&path);
        let before = state.clone();
        change(&mut state, epoch_millis(std::time::SystemTime::now()));
        if state != before {
            // Only the lock holder writes the temporary file, so one name will do.
            let temp = Self::with_suffix(&base, ".json.tmp");
            let mut file = private_file(&temp)?;
            file.set_len(0)?;
            file.write_all(&serde_json::to_vec(&state)?)?;
            drop(file);
            fs::rename(&temp, &path)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        }
        drop(lock);
        Ok(())
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
