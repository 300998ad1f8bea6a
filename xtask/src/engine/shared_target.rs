//! `cargo xtask test` builds in a cargo target directory outside the clone, so that a
//! fresh clone (every CI run) compiles only the workspace's own crates.
//!
//! What is reused: the crates.io dependencies and the `-Zbuild-std` sysroots (`core`,
//! `std` for the ARMv6/ARMv7 Linux targets and the modules' bare-metal objects), which
//! cargo fingerprints by version, profile, target and flags. What is not: every
//! workspace crate, since cargo fingerprints a path crate by its sources' modification
//! times and a clone's files are all newer than any earlier build (and artifacts
//! carry no clone path: cargo hashes a workspace member's id relative to the workspace
//! root). So a run builds exactly what a clean `target/` would, from its own sources.
//!
//! Only what cargo builds goes there ([`crate::engine::paths::target_dir`]); what xtask
//! makes itself (initramfs archives, the modules' `make` builds, board images,
//! logs) stays in the clone's `target/` ([`crate::engine::paths::work_dir`]), so nothing is
//! reused by its existence alone.
//!
//! One run at a time: the directory's lock is held for the whole run, since a run
//! reads back what it built (pmu-demo into an initramfs) and a second run must not
//! rebuild it in between. A run that finds the lock taken builds in the clone's
//! `target/` instead and says so. A `CARGO_TARGET_DIR` set by the caller is kept as it
//! is.

use std::fs::{self, File, TryLockError};
use std::path::PathBuf;

/// The directory for the pinned toolchain: a new toolchain starts an empty one (the
/// old one can be deleted: nothing reads it any more).
pub fn dir() -> PathBuf {
    crate::engine::paths::cache_root()
        .join("cargo-target")
        .join(crate::engine::need::TOOLCHAIN)
}

/// Points `CARGO_TARGET_DIR` at [`dir`] for this process and the cargo commands it
/// runs, unless the caller set one or another run holds the directory. The lock is
/// held while the returned file lives.
pub fn enter() -> Option<File> {
    if std::env::var_os("CARGO_TARGET_DIR").is_some() {
        return None;
    }
    let dir = dir();
    if let Err(e) = fs::create_dir_all(&dir) {
        return in_clone(&format!("cannot create {} ({e})", dir.display()));
    }
    let path = dir.join(".xtask-test.lock");
    let lock = match File::create(&path) {
        Ok(file) => file,
        Err(e) => return in_clone(&format!("{}: {e}", path.display())),
    };
    match lock.try_lock() {
        Ok(()) => {
            eprintln!(
                "xtask: cargo builds in {} (outside the clone: dependencies and build-std \
                 sysroots are reused, every workspace crate is rebuilt)",
                dir.display()
            );
            // Set before any thread or child process exists: the variable is read by
            // images::target_dir and inherited by every cargo command of the run (and by
            // the lanes' child xtask runs, which keep it).
            std::env::set_var("CARGO_TARGET_DIR", &dir);
            Some(lock)
        }
        Err(TryLockError::WouldBlock) => {
            in_clone(&format!("{} is in use by another test run", dir.display()))
        }
        Err(TryLockError::Error(e)) => in_clone(&format!("cannot lock {} ({e})", path.display())),
    }
}

/// Builds in the clone's `target/`, saying why; named in `CARGO_TARGET_DIR` so that the
/// lanes' child runs build there too rather than try the shared directory themselves.
fn in_clone(why: &str) -> Option<File> {
    let dir = crate::engine::paths::work_dir();
    eprintln!("xtask: {why}: building in {}", dir.display());
    std::env::set_var("CARGO_TARGET_DIR", &dir);
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The directory is under the cache root (PMU_CACHE_DIR: the fresh check's empty
    /// cache gets its own) and named after the pinned toolchain.
    #[test]
    fn the_shared_directory_is_per_toolchain_in_the_cache() {
        let dir = dir();
        assert!(
            dir.starts_with(crate::engine::paths::cache_root()),
            "{}",
            dir.display()
        );
        assert!(dir.ends_with(format!("cargo-target/{}", crate::engine::need::TOOLCHAIN)));
    }

    /// A second holder of the lock is refused at once (the run then builds in target/),
    /// not made to wait: `File::try_lock`, as `enter` takes it.
    #[test]
    fn a_held_lock_refuses_a_second_run() {
        let dir = std::env::temp_dir().join(format!("xtask-lock-test-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join(".xtask-test.lock");
        let first = File::create(&path).unwrap();
        first.try_lock().unwrap();
        let second = File::create(&path).unwrap();
        assert!(matches!(second.try_lock(), Err(TryLockError::WouldBlock)));
        drop(first);
        second.try_lock().unwrap();
        fs::remove_dir_all(&dir).unwrap();
    }
}
