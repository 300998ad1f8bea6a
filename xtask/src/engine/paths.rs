//! Every directory root xtask reads or writes, in one place: the workspace, cargo's
//! target directory, the clone's own `target/`, and the cache outside the clone. Every
//! other path is one of these joined with a name.

use std::path::PathBuf;

/// The workspace root (xtask lives one level below it).
pub fn workspace_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}

/// The cargo target directory (`CARGO_TARGET_DIR` or `target/`): where what cargo
/// builds is found. `cargo xtask test` points it outside the clone
/// ([`crate::engine::shared_target`]).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(work_dir)
}

/// Where cargo builds what needs `RUSTC_BOOTSTRAP=1` (`-Zbuild-std` on the pinned stable
/// toolchain): a directory of its own under [`target_dir`]. proc-macro2's build script
/// reruns whenever `RUSTC_BOOTSTRAP` changes (`cargo:rerun-if-env-changed`), and with it
/// every crate that uses a derive (serde, clap, pmu-demo, pmu-guest …): sharing one
/// directory, each build-std build and the next stable one rebuilt all of them (15
/// proc-macro2 builds and about 11 minutes of compiling in one `cargo xtask test`).
pub fn bootstrap_target_dir() -> PathBuf {
    target_dir().join("build-std")
}

/// Where `cargo xtask test`'s checks lane builds (the lints, the host tests, the unit
/// tests under qemu-user: [`crate::engine::lanes::CHECKS_LANE`]): a directory of its own
/// under [`target_dir`]. Cargo locks a target directory for the whole of a build, so a
/// check compiling there for a minute would otherwise hold up every guest step's cargo run
/// (its initramfs programs, its test binary) in the directory they share.
pub fn checks_target_dir() -> PathBuf {
    target_dir().join("checks")
}

/// The clone's own `target/`: what xtask itself makes (initramfs archives, the
/// modules' `make` builds, board images, libperf, logs), always next to the sources it
/// was made from.
pub fn work_dir() -> PathBuf {
    workspace_root().join("target")
}

/// Where a guest-report command (`bench`, `hazards`) keeps its initramfs, the guest's
/// console and its JSON.
pub fn command_dir(command: &str) -> PathBuf {
    work_dir().join(command)
}

/// Where everything is cached, outside the clone: `PMU_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/pmu-workspace` or `~/.cache/pmu-workspace`. The rule lives in the
/// test-support crate, whose tests read the Linux tarballs xtask caches there.
pub fn cache_root() -> PathBuf {
    pmu_linux_source::cache_root()
}

/// Where the Debian artefacts are cached (the private apt state, kernels, headers,
/// linux-perf).
pub fn debian_root() -> PathBuf {
    cache_root().join("debian")
}
