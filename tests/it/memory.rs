//! Bodies stream in constant memory: the peak resident set of a run does not
//! grow with the size of the body it downloads (to stdout or `-o`) or
//! uploads from a file.
//!
//! The peak is the child's own `VmHWM`, polled from /proc while it runs:
//! `wait4`'s `ru_maxrss` would also count the test process's memory,
//! which a child started by `posix_spawn` shares until its exec.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util::*;

const MIB: u64 = 1 << 20;

/// A server that answers `GET /N` with N bytes, streamed from a fixed
/// buffer, and any request with a body by reading and dropping it.
fn bulk() -> Raw {
    raw(|mut stream| {
        let head = read_head(&stream);
        let path = head.split(' ').nth(1).unwrap_or("/0");
        let length = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .map_or(0, |n| n.trim().parse::<u64>().unwrap());
        let _ = std::io::copy(&mut (&stream).take(length), &mut std::io::sink());
        let size: u64 = path.trim_start_matches('/').parse().unwrap_or(0);
        let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {size}\r\n\r\n");
        let _ = stream.write_all(head.as_bytes());
        let chunk = vec![b'z'; MIB as usize];
        let mut left = size;
        while left > 0 {
            let n = left.min(MIB) as usize;
            if stream.write_all(&chunk[..n]).is_err() {
                return;
            }
            left -= n as u64;
        }
    })
}

/// Runs `cmd` to its end, draining its stdout, and returns its exit code,
/// how many bytes it wrote to stdout, and its peak resident set in KiB.
fn peak(cmd: Command) -> (i32, u64, u64) {
    peak_with(cmd, Stdio::null())
}

fn peak_with(mut cmd: Command, stdin: Stdio) -> (i32, u64, u64) {
    let mut child = cmd
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let drained = std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    let status = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0;
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code().unwrap_or(-1);
        }
        if let Ok(file) = std::fs::File::open(&status) {
            let hwm = BufReader::new(file).lines().find_map(|line| {
                let line = line.ok()?;
                let kib = line.strip_prefix("VmHWM:")?.trim().strip_suffix("kB")?;
                kib.trim().parse::<u64>().ok()
            });
            peak_kib = peak_kib.max(hwm.unwrap_or(0));
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    (code, drained.join().unwrap().unwrap(), peak_kib)
}

#[test]
fn a_large_download_to_stdout_streams_in_constant_memory() {
    let server = bulk();
    let get = |size: u64| {
        let (code, written, kib) =
            peak(abide(&["--no-state", &format!("{}/{size}", server.url())]));
        assert_eq!(code, 0);
        assert_eq!(written, size);
        kib
    };
    let small = get(8 * MIB);
    let large = get(512 * MIB);
    assert!(large < 32 * 1024, "peak {large} KiB for 512 MiB");
    assert!(
        large < small + 4 * 1024,
        "peak {large} KiB for 512 MiB, {small} KiB for 8 MiB"
    );
}

#[test]
fn a_large_download_to_a_file_streams_in_constant_memory() {
    let server = bulk();
    let dir = temp_dir("memory-download");
    let out = dir.join("body");
    let get = |size: u64| {
        let url = format!("{}/{size}", server.url());
        let (code, _, kib) = peak(abide(&["--no-state", "-o", out.to_str().unwrap(), &url]));
        assert_eq!(code, 0);
        assert_eq!(std::fs::metadata(&out).unwrap().len(), size);
        kib
    };
    // Smaller than the stdout test's body: committing the file syncs it to
    // disk, which takes longer than the transfer.
    let small = get(8 * MIB);
    let large = get(128 * MIB);
    std::fs::remove_file(&out).unwrap();
    assert!(large < 32 * 1024, "peak {large} KiB for 128 MiB");
    assert!(
        large < small + 4 * 1024,
        "peak {large} KiB for 128 MiB, {small} KiB for 8 MiB"
    );
}

#[test]
fn a_large_upload_from_a_file_is_never_held_in_memory() {
    let server = bulk();
    let dir = temp_dir("memory-upload");
    let body = dir.join("body.bin");
    let put = |size: u64| {
        let file = std::fs::File::create(&body).unwrap();
        file.set_len(size).unwrap();
        let data = format!("@{}", body.display());
        let (code, _, kib) = peak(abide(&[
            "--no-state",
            "-X",
            "PUT",
            "--data-binary",
            &data,
            &format!("{}/0", server.url()),
        ]));
        assert_eq!(code, 0);
        kib
    };
    let small = put(8 * MIB);
    let large = put(256 * MIB);
    std::fs::remove_file(&body).unwrap();
    assert!(large < 32 * 1024, "peak {large} KiB for a 256 MiB upload");
    assert!(
        large < small + 4 * 1024,
        "peak {large} KiB for 256 MiB, {small} KiB for 8 MiB"
    );
}

#[test]
fn an_endless_upload_is_cut_at_the_budget_in_constant_memory() {
    // Reads whatever comes, and never answers.
    let server = raw(|mut stream| {
        let _ = std::io::copy(&mut stream, &mut std::io::sink());
    });
    let start = std::time::Instant::now();
    let (code, _, kib) = peak(abide(&[
        "--no-state",
        "--budget",
        "1s",
        "--data-binary",
        "@/dev/zero",
        &server.url(),
    ]));
    // A POST that may have been read: not replayed.
    assert_eq!(code, 7);
    assert!(start.elapsed() < Duration::from_secs(3));
    assert!(kib < 64 * 1024, "peak {kib} KiB");
}

#[test]
fn a_large_body_from_stdin_is_spooled_not_held() {
    let server = bulk();
    let dir = temp_dir("memory-stdin");
    let body = dir.join("stdin.bin");
    let file = std::fs::File::create(&body).unwrap();
    file.set_len(128 * MIB).unwrap();
    let args = ["--no-state", "-X", "PUT", "--data-binary", "@-"];
    let url = format!("{}/0", server.url());
    let stdin = std::fs::File::open(&body).unwrap();
    let (code, _, kib) = peak_with(abide(&[&args[..], &[&url]].concat()), stdin.into());
    std::fs::remove_file(&body).unwrap();
    assert_eq!(code, 0);
    assert!(kib < 64 * 1024, "peak {kib} KiB for 128 MiB from stdin");
}

#[test]
fn the_agent_keeps_no_more_than_a_sane_body() {
    let (code, _, _) = peak(abide(&[
        "--agent",
        "--max-body",
        "100GiB",
        "http://127.0.0.1:9/",
    ]));
    assert_eq!(code, 2);
}
