//! What a step needs from the machine ([`Need`]), and whether the machine has it.
//!
//! A cargo step's rustup target and components follow from its arguments
//! ([`crate::engine::step::Step::needs`]); another step names its programs. Set-up provides
//! each need (a unit test checks every plan) and says how to install one
//! ([`set_install_hint`]): the engine does not know set-up, set-up hands it that
//! function.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::engine::paths::workspace_root;

/// The channel pinned in rust-toolchain.toml.
pub const TOOLCHAIN: &str = "1.95.0";

/// How a missing need is installed: set by [`set_install_hint`].
static INSTALL_HINT: OnceLock<fn(&Need) -> String> = OnceLock::new();

/// Names the function that says how a missing need is installed (set-up's), once, before
/// any plan runs.
pub fn set_install_hint(hint: fn(&Need) -> String) {
    let _ = INSTALL_HINT.set(hint);
}

/// Something a step needs from the machine; set-up provides each one.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Need {
    /// A rustup target of the pinned toolchain (its prebuilt `core`/`std`).
    Target(String),
    /// A rustup component of the pinned toolchain (`rust-src` for `-Zbuild-std`).
    Component(String),
    /// A program on `PATH`.
    Program(String),
}

impl std::fmt::Display for Need {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Need::Target(t) => write!(f, "the rustup target {t}"),
            Need::Component(c) => write!(f, "the rustup component {c}"),
            Need::Program(p) => write!(f, "the program {p}"),
        }
    }
}

/// The pinned toolchain's sysroot (`rustc --print sysroot` in the workspace, where
/// rust-toolchain.toml applies), asked once.
fn sysroot() -> Option<&'static Path> {
    static SYSROOT: OnceLock<Option<PathBuf>> = OnceLock::new();
    SYSROOT
        .get_or_init(|| {
            let out = Command::new("rustc")
                .args(["--print", "sysroot"])
                .current_dir(workspace_root())
                .env("RUSTUP_TOOLCHAIN", TOOLCHAIN)
                .output()
                .ok()?;
            out.status
                .success()
                .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
        })
        .as_deref()
}

/// Whether `program` is an executable file on `PATH` (or a path to one).
pub fn on_path(program: &str) -> bool {
    if program.contains('/') {
        return Path::new(program).is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

impl Need {
    /// Whether this machine has it now.
    pub fn is_met(&self) -> bool {
        match self {
            Need::Program(p) => on_path(p),
            Need::Target(t) => {
                sysroot().is_some_and(|s| s.join("lib/rustlib").join(t).join("lib").is_dir())
            }
            Need::Component(c) => sysroot().is_some_and(|s| match c.as_str() {
                "rust-src" => s.join("lib/rustlib/src/rust/library").is_dir(),
                "clippy" => s.join("bin/cargo-clippy").is_file(),
                "rustfmt" => s.join("bin/rustfmt").is_file(),
                other => s.join("bin").join(other).is_file(),
            }),
        }
    }

    /// The command that installs it: what the function given to [`set_install_hint`]
    /// says (set-up's, which knows what it installs and from which package).
    pub fn install_hint(&self) -> String {
        match INSTALL_HINT.get() {
            Some(hint) => hint(self),
            None => "`cargo xtask setup` installs what the steps need".to_string(),
        }
    }
}
