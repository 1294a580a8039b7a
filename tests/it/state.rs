//! The state directory and its records are not trusted: a planted symlink,
//! a FIFO, a directory others may write to, or an absurd record must never
//! clobber a file, hang or crash a run; and a `--task` key is either stored
//! before the first request or the run is refused, unsent.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use abide::lab::Step;
use abide::state::scope_hash;

use crate::util::*;

/// Where the file backend keeps `scope`'s record in `dir`.
fn record_of(dir: &Path, scope: &str) -> PathBuf {
    dir.join(format!("scope-{}.json", scope_hash(scope)))
}

fn task_run(dir: &Path, lab: &abide::lab::Lab, task: &str) -> Run {
    finish(
        abide(&[
            "--state-dir",
            dir.to_str().unwrap(),
            "--scope",
            "tasks",
            "-X",
            "POST",
            "--idempotency-key",
            "auto",
            "--task",
            task,
            &lab.url(),
        ]),
        b"",
    )
}

#[test]
fn a_task_key_that_cannot_be_stored_is_never_sent() {
    let dir = temp_dir("task-unstored");
    // The record cannot be replaced: a directory stands in its place.
    std::fs::create_dir(record_of(&dir, "tasks")).unwrap();
    let lab = scripted(vec![Step::new(500)]);
    for _ in 0..2 {
        let run = task_run(&dir, &lab, "t-1");
        assert_eq!(run.code, 1, "{}", run.stderr);
        let reason = run.outcome()["reason"].as_str().unwrap().to_string();
        assert!(
            reason.contains("cannot keep the idempotency key"),
            "{reason}"
        );
    }
    assert_eq!(lab.records().len(), 0, "nothing sent with an unstored key");
    assert!(
        files_in(&dir).iter().all(|n| !n.ends_with(".tmp")),
        "{:?}",
        files_in(&dir)
    );
}

#[test]
fn a_full_scope_refuses_a_new_task_and_keeps_the_old_keys() {
    let dir = temp_dir("task-full");
    let tasks: Vec<_> = (0..1024)
        .map(|i| {
            serde_json::json!({
                "task": scope_hash(&format!("old-{i}")),
                "key": format!("key-{i}"),
                "expires": abide::clock::LATEST,
            })
        })
        .collect();
    let record = serde_json::json!({ "tasks": tasks });
    std::fs::write(record_of(&dir, "tasks"), record.to_string()).unwrap();
    let lab = scripted(vec![Step::new(200)]);

    let refused = task_run(&dir, &lab, "new");
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    let reason = refused.outcome()["reason"].as_str().unwrap().to_string();
    assert!(reason.contains("1024 live task keys"), "{reason}");
    assert_eq!(lab.records().len(), 0);

    // The oldest key is still there for its task's rerun.
    let rerun = task_run(&dir, &lab, "old-0");
    assert_eq!(rerun.code, 0, "{}", rerun.stderr);
    assert_eq!(lab.records()[0].header("Idempotency-Key"), Some("key-0"));
}

#[test]
fn symlinks_planted_in_the_state_directory_are_never_followed() {
    let dir = temp_dir("symlinks");
    let elsewhere = temp_dir("symlinks-elsewhere");
    let clobbered = elsewhere.join("clobbered");
    std::fs::write(&clobbered, "precious").unwrap();
    let created = elsewhere.join("created");
    let base = record_of(&dir, "tasks").with_extension("");
    let with = |suffix: &str| PathBuf::from(format!("{}{suffix}", base.display()));
    std::os::unix::fs::symlink(&clobbered, with(".json.tmp")).unwrap();
    std::os::unix::fs::symlink(&created, with(".lock")).unwrap();
    let lab = scripted(vec![Step::new(200)]);
    let run = task_run(&dir, &lab, "t-1");
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(lab.records().len(), 0);
    assert_eq!(std::fs::read_to_string(&clobbered).unwrap(), "precious");
    assert!(
        !created.exists(),
        "a file was created through the lock's symlink"
    );
}

#[test]
fn a_state_directory_others_may_write_to_or_own_is_refused() {
    let lab = scripted(vec![Step::new(200)]);
    let open = temp_dir("open-dir");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let foreign = temp_dir("foreign-dir");
    // SAFETY: chown(2) on a directory this test made; nobody is uid 65534.
    let path = std::ffi::CString::new(foreign.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::chown(path.as_ptr(), 65534, 65534) }, 0);
    for (dir, why) in [
        (&open, "others may write to it"),
        (&foreign, "belongs to uid 65534"),
    ] {
        let url = lab.url();
        let args = ["--state-dir", dir.to_str().unwrap(), "--rate", "1/s", &url];
        let warned = run(&args);
        assert_eq!(warned.code, 0, "{}", warned.stderr);
        assert!(
            warned
                .stderr
                .contains("warning: the shared state is unavailable"),
            "{}",
            warned.stderr
        );
        assert!(warned.stderr.contains(why), "{}", warned.stderr);
        assert!(files_in(dir).is_empty(), "{:?}", files_in(dir));

        let required = run(&[&args[..], &["--state-required"]].concat());
        assert_eq!(required.code, 1, "{}", required.stderr);
    }
    assert_eq!(lab.records().len(), 2, "sent only without --state-required");
}

#[test]
fn a_record_with_times_past_year_9999_neither_crashes_nor_overflows() {
    let dir = temp_dir("year-10000");
    let huge = 18_000_000_000_000_000_000u64;
    let record = serde_json::json!({
        "next_allowed_at": huge,
        "rate_tat": huge,
        "repeats": [{ "fingerprint": "f", "count": 1, "last": huge }],
        "tasks": [{ "task": "t", "key": "k", "expires": huge }],
    });
    let path = record_of(&dir, "far");
    std::fs::write(&path, record.to_string()).unwrap();
    let lab = scripted(vec![Step::new(200)]);
    for agent in [false, true] {
        let mut args = vec!["--state-dir", dir.to_str().unwrap(), "--scope", "far"];
        if agent {
            args.push("--agent");
        }
        let url = lab.url();
        args.push(&url);
        let run = run(&args);
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
        assert_eq!(run.code, 5, "{}", run.stderr);
        let line = if agent {
            serde_json::from_slice(&run.stdout).unwrap()
        } else {
            run.outcome()
        };
        assert_eq!(line["outcome"], "BUDGET_EXHAUSTED", "{line}");
        assert_eq!(line["next_allowed_at"], "9999-12-31T23:59:59.999Z");
    }
    assert_eq!(lab.records().len(), 0);
}

#[test]
fn a_fifo_in_place_of_a_state_file_is_corrupt_not_a_hang() {
    let lab = scripted(vec![Step::new(200)]);
    for suffix in [".json", ".lock"] {
        let dir = temp_dir(&format!("fifo{suffix}"));
        let fifo = PathBuf::from(format!(
            "{}{suffix}",
            record_of(&dir, "fifo").with_extension("").display()
        ));
        let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo(2) with a valid path in a directory this test made.
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        let url = lab.url();
        let cmd = abide(&[
            "--state-dir",
            dir.to_str().unwrap(),
            "--scope",
            "fifo",
            "--rate",
            "1/s",
            &url,
        ]);
        let mut live = Live::spawn(cmd);
        assert!(live.ends(), "{suffix}: a FIFO hung the run");
        let run = live.finish();
        assert_eq!(run.code, 0, "{suffix}: {}", run.stderr);
    }
    assert_eq!(lab.records().len(), 2);
}
