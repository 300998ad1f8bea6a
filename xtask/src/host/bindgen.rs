//! The pinned bindgen-cli, installed into the cache: Debian's bindgen is too old for the
//! kernel's Rust.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::engine::need::TOOLCHAIN;
use crate::engine::paths::cache_root;
use crate::engine::step::first_line;

/// The pinned bindgen-cli version.
pub const BINDGEN_VERSION: &str = "0.73.2";

/// Where the pinned bindgen is installed (its `bin/`).
pub fn dir() -> PathBuf {
    cache_root()
        .join("tools")
        .join(format!("bindgen-cli-{BINDGEN_VERSION}"))
        .join("bin")
}

/// Installs the pinned bindgen-cli into the cache unless it is there already.
pub fn ensure_bindgen() -> Result<(), String> {
    let bindgen = dir().join("bindgen");
    let want = format!("bindgen {BINDGEN_VERSION}");
    if let Ok(v) = first_line(&bindgen, &["--version"]) {
        if v.trim() == want {
            eprintln!("    {v}: {}", bindgen.display());
            return Ok(());
        }
    }
    let root = dir()
        .parent()
        .map(Path::to_path_buf)
        .ok_or("bindgen directory has no parent")?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    crate::engine::step::run_logged(
        &format!(
            "cargo install --locked bindgen-cli {BINDGEN_VERSION} into {} (about a minute)",
            root.display()
        ),
        "setup-bindgen",
        Command::new(cargo)
            .args([
                "install",
                "--locked",
                "bindgen-cli",
                "--version",
                BINDGEN_VERSION,
            ])
            .arg("--root")
            .arg(&root)
            .env("RUSTUP_TOOLCHAIN", TOOLCHAIN)
            .env("CARGO_TARGET_DIR", cache_root().join("tools/bindgen-build")),
    )?;
    let _ = fs::remove_dir_all(cache_root().join("tools/bindgen-build"));
    let v = first_line(&bindgen, &["--version"])?;
    if v.trim() != want {
        return Err(format!("installed {}, but it says {v}", bindgen.display()));
    }
    Ok(())
}
