//! Access to the Linux source tarballs the tests check this workspace against (read at
//! test time, never copied into the repository): the SPE decoder and driver facts in
//! pmu-armv8, the event tables in pmu-events, the arm_pmu facts of the module.
//!
//! Two trees ([`Tree`]): Debian 12's `linux-source-6.12` (installed by apt:
//! `/usr/src/linux-source-6.12.tar.xz`) and Debian 13 backports' `linux-source-7.3` (the
//! newest Linux Debian ships; `cargo xtask test` fetches its tarball into the cache,
//! `<cache root>/linux-source/linux-source-7.3.tar.xz`). Each can be pointed elsewhere by
//! an environment variable ([`Tree::env_var`]). A missing tarball fails the test with the
//! command that fetches it. Extracted files are cached under the test target directory
//! (`CARGO_TARGET_TMPDIR`, which the caller passes), keyed by the tarball's size and
//! modification time.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::UNIX_EPOCH;

/// Serializes extraction between the tests of one binary.
static EXTRACTING: Mutex<()> = Mutex::new(());

/// A Linux source tree the tests read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tree {
    /// Linux 6.12 as Debian 12 ships it (`linux-source-6.12`, 6.12.x+deb12): the kernel the
    /// project's own test kernels are built from.
    Linux6_12,
    /// Linux 7.3 as Debian 13's backports ship it (`linux-source-7.3`, 7.3.4-1~bpo13+1):
    /// the newest kernel Debian ships.
    Linux7_3,
}

impl Tree {
    /// Every tree, oldest first.
    pub const ALL: [Tree; 2] = [Tree::Linux6_12, Tree::Linux7_3];

    /// `6.12`, `7.3`.
    pub fn version(self) -> &'static str {
        match self {
            Tree::Linux6_12 => "6.12",
            Tree::Linux7_3 => "7.3",
        }
    }

    /// The Debian package holding the tarball (`linux-source-6.12`).
    pub fn package(self) -> &'static str {
        match self {
            Tree::Linux6_12 => "linux-source-6.12",
            Tree::Linux7_3 => "linux-source-7.3",
        }
    }

    /// The Debian suite the package comes from.
    pub fn suite(self) -> &'static str {
        match self {
            Tree::Linux6_12 => "bookworm",
            Tree::Linux7_3 => "trixie-backports",
        }
    }

    /// The environment variable that points the tests at another copy of the tarball.
    pub fn env_var(self) -> &'static str {
        match self {
            Tree::Linux6_12 => "LINUX_SOURCE_TARBALL",
            Tree::Linux7_3 => "LINUX_SOURCE_7_3_TARBALL",
        }
    }

    /// Where the tarball is looked for when [`Tree::env_var`] is unset: where apt installs
    /// it (6.12, a package of the host's release), or where `cargo xtask test` fetches it
    /// into the cache (7.3, a package of another release, never installed on the host).
    pub fn default_tarball(self) -> PathBuf {
        match self {
            Tree::Linux6_12 => PathBuf::from("/usr/src/linux-source-6.12.tar.xz"),
            Tree::Linux7_3 => cache_root()
                .join("linux-source")
                .join("linux-source-7.3.tar.xz"),
        }
    }

    /// The tarball to read: [`Tree::env_var`] if set, else [`Tree::default_tarball`].
    pub fn tarball(self) -> PathBuf {
        std::env::var_os(self.env_var())
            .map(PathBuf::from)
            .unwrap_or_else(|| self.default_tarball())
    }

    /// The command that puts the tarball in place.
    pub fn how_to_get(self) -> &'static str {
        match self {
            Tree::Linux6_12 => "`apt-get install linux-source-6.12` (cargo xtask test does this)",
            Tree::Linux7_3 => "`cargo xtask linux-source` (cargo xtask test does this)",
        }
    }

    /// Extracts, under `tmpdir` (an integration test's `env!("CARGO_TARGET_TMPDIR")`), the
    /// files of this tree matching `patterns` (tar wildcards such as
    /// `*/drivers/perf/arm_spe_pmu.c`) and returns the directory holding the tarball's
    /// top-level directory (so `root.join("linux-source-7.3/drivers/...")`; [`find`] does
    /// the joining). Panics, failing the test, when the tarball is missing or a file is
    /// not in it.
    pub fn extract(self, tmpdir: &Path, tag: &str, patterns: &[&str]) -> PathBuf {
        extract_from(self, tmpdir, tag, patterns)
    }
}

/// The cache outside the clone: `PMU_CACHE_DIR`, else `$XDG_CACHE_HOME/pmu-workspace` or
/// `~/.cache/pmu-workspace`. The same rule as xtask's `engine::paths::cache_root`, which
/// calls this one.
pub fn cache_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("PMU_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    base.join("pmu-workspace")
}

/// The 6.12 tarball ([`Tree::Linux6_12`]'s [`Tree::tarball`]).
pub fn tarball() -> PathBuf {
    Tree::Linux6_12.tarball()
}

/// [`Tree::extract`] of the Linux 6.12 tree.
pub fn extract(tmpdir: &Path, tag: &str, patterns: &[&str]) -> PathBuf {
    Tree::Linux6_12.extract(tmpdir, tag, patterns)
}

fn extract_from(tree: Tree, tmpdir: &Path, tag: &str, patterns: &[&str]) -> PathBuf {
    let _guard = EXTRACTING.lock().unwrap_or_else(|e| e.into_inner());
    let tarball = tree.tarball();
    let meta = fs::metadata(&tarball).unwrap_or_else(|e| {
        panic!(
            "the Linux {} source tarball {} is missing ({e}): fetch it with {}, or point \
             {} at a copy",
            tree.version(),
            tarball.display(),
            tree.how_to_get(),
            tree.env_var()
        )
    });
    let stamp = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    let root = tmpdir.join(format!(
        "linux-src-{}-{tag}-{}-{stamp}",
        tree.version(),
        meta.len()
    ));
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
        "tar could not extract {patterns:?} from {}: is it the {} tarball?",
        tarball.display(),
        tree.package()
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
