//! Tells the tests whether Redis is at hand, so that where it is not the
//! Redis tests are reported as ignored, saying why (as cargo's own
//! `#[cargo_test]` does for a missing command), instead of passing having
//! done nothing. Where `CI` is set they always run, and fail without Redis.

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(no_redis_server, no_redis)");
    println!("cargo::rerun-if-changed=build.rs");
    for var in ["CI", "ABIDE_TEST_REDIS", "PATH"] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    let set = |var| std::env::var_os(var).is_some_and(|v| !v.is_empty());
    if set("CI") {
        return;
    }
    let dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect())
        .unwrap_or_default();
    if let Some(server) = dirs
        .iter()
        .map(|dir| dir.join("redis-server"))
        .find(|path| path.is_file())
    {
        // Removing it changes this: then the tests are ignored again.
        println!("cargo::rerun-if-changed={}", server.display());
        return;
    }
    // Installing redis-server changes one of these: then the tests run.
    for dir in dirs.iter().filter(|dir| dir.is_dir()) {
        println!("cargo::rerun-if-changed={}", dir.display());
    }
    println!("cargo::rustc-cfg=no_redis_server");
    if !set("ABIDE_TEST_REDIS") {
        println!("cargo::rustc-cfg=no_redis");
    }
}
