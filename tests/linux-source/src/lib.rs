//! Access to the Linux 6.12 source tarball for the tests that check this workspace against
//! the kernel and perf (read at test time, never copied into the repository): the SPE
//! decoder and driver facts in pmu-armv8, the event tables in pmu-events.
//!
//! The tarball is Debian's `linux-source-6.12` package (`/usr/src/linux-source-6.12.tar.xz`,
//! or `$LINUX_SOURCE_TARBALL`). A missing tarball fails the test with the command that
//! installs it; `cargo xtask test` installs it. Extracted files are cached under the test
//! target directory (`CARGO_TARGET_TMPDIR`, which the caller passes), keyed by the
//! tarball's size and modification time.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::UNIX_EPOCH;

/// Serializes extraction between the tests of one binary.
static EXTRACTING: Mutex<()> = Mutex::new(());

/// The tarball to read.
pub fn tarball() -> PathBuf {
    std::env::var_os("LINUX_SOURCE_TARBALL")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/src/linux-source-6.12.tar.xz"))
}

/// Extracts, under `tmpdir` (an integration test's `env!("CARGO_TARGET_TMPDIR")`), the
/// files matching `patterns` (tar wildcards such as
/// `*/drivers/perf/arm_spe_pmu.c`) and returns the directory holding the tarball's top-level
/// directory (so `root.join("linux-source-6.12/drivers/...")`). Panics, failing the test, when
/// the tarball is missing or a file is not in it.
pub fn extract(tmpdir: &Path, tag: &str, patterns: &[&str]) -> PathBuf {
    let _guard = EXTRACTING.lock().unwrap_or_else(|e| e.into_inner());
    let tarball = tarball();
    let meta = fs::metadata(&tarball).unwrap_or_else(|e| {
        panic!(
            "the Linux 6.12 source tarball {} is missing ({e}): install it with \
             `apt-get install linux-source-6.12` (cargo xtask test does this), or point \
             LINUX_SOURCE_TARBALL at a copy",
            tarball.display()
        )
    });
    let stamp = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    let root = tmpdir.join(format!("linux-src-{tag}-{}-{stamp}", meta.len()));
    if root.join(".complete").exists() {
        return root;
    }
    let staging = root.with_extension(format!("tmp{}", std::process::id()));
    let _ = fs::remove_dir_all(&staging);
    fs::create_dir_all(&staging).unwrap();
    let status = Command::new("tar")
        .arg("-xJf")
        .arg(&tarball)
        .arg("-C")
        .arg(&staging)
        .arg("--wildcards")
        .args(patterns)
        .status()
        .expect("run tar");
    assert!(
        status.success(),
        "tar could not extract {patterns:?} from {}: is it the linux-source-6.12 tarball?",
        tarball.display()
    );
    fs::write(staging.join(".complete"), b"").unwrap();
    // Another test process may have finished first; either copy is complete.
    if fs::rename(&staging, &root).is_err() {
        let _ = fs::remove_dir_all(&staging);
    }
    root
}

/// The one file matching `suffix` under `root` (searching the tarball's top directory).
pub fn find(root: &Path, suffix: &str) -> PathBuf {
    for top in fs::read_dir(root).unwrap().flatten() {
        let candidate = top.path().join(suffix);
        if candidate.exists() {
            return candidate;
        }
    }
    panic!("{suffix} not found under {}", root.display());
}
