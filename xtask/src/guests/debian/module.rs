//! The stock module built against the headers of one of Debian's kernels, checked.

use std::fs;
use std::path::PathBuf;

use super::kernels::Kernel;

/// Why only the stock flavour can be built for `kernel`: its configuration has no
/// CONFIG_RUST (Debian 12 and 13), or it has (Debian's 7.3 is built with rustc 1.85.1)
/// but its headers carry none of the kernel's Rust crates (`rust/libkernel.rmeta`), which
/// a Rust module is compiled against. `None` when the Rust-for-Linux flavour could be
/// built there: not the kernel these runs are for.
pub fn why_stock_only(config: &str, kdir: &std::path::Path) -> Option<String> {
    let rust = config.lines().any(|l| l.trim() == "CONFIG_RUST=y");
    if !rust {
        return Some("no CONFIG_RUST".into());
    }
    let rustc = config
        .lines()
        .find_map(|l| l.strip_prefix("CONFIG_RUSTC_VERSION_TEXT="))
        .unwrap_or("\"?\"")
        .trim_matches('"')
        .to_string();
    (!kdir.join("rust/libkernel.rmeta").is_file())
        .then(|| format!("CONFIG_RUST=y ({rustc}), but no Rust crates in the headers"))
}

/// The stock module built against `kernel`'s headers, checked for it: only this flavour
/// can be built there ([`why_stock_only`]) and the module's vermagic names the kernel's
/// release.
pub fn stock_module(kernel: &Kernel, make_vars: &[String]) -> Result<PathBuf, String> {
    let config = fs::read_to_string(&kernel.config)
        .map_err(|e| format!("{}: {e}", kernel.config.display()))?;
    let Some(stock_only) = why_stock_only(&config, &kernel.kdir) else {
        return Err(format!(
            "{} has CONFIG_RUST=y and its headers {} carry the kernel's Rust crates: not the stock kernel these runs are meant for",
            kernel.config.display(),
            kernel.kdir.display()
        ));
    };
    let ko = crate::build::stock_module::build_with_tools(
        &kernel.kdir,
        make_vars,
        &format!("debian-{}", kernel.release),
        &kernel.tools,
    )?;
    let vermagic = crate::build::stock_module::modinfo(&ko, "vermagic")?;
    if !vermagic.starts_with(&format!("{} ", kernel.release)) {
        return Err(format!(
            "{}: vermagic {vermagic:?} does not name Debian's kernel {}",
            ko.display(),
            kernel.release
        ));
    }
    eprintln!(
        "    stock module for Debian {} ({} {}, {stock_only}): vermagic \"{vermagic}\"",
        kernel.release, kernel.flavour, kernel.version
    );
    Ok(ko)
}

/// Where the guest finds the module for the kernel it runs (`uname -r`).
pub fn guest_module_path(release: &str) -> String {
    format!("lib/modules/kmod_enable_user-{release}.ko")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Debian 12's and 13's kernels have no CONFIG_RUST; trixie-backports' 7.3.4 has it
    /// (its `config`: `CONFIG_RUST=y`, `CONFIG_RUSTC_VERSION_TEXT="rustc 1.85.1
    /// (4eb161250 2025-03-15) (built from a source tarball)"`) with headers that carry no
    /// `rust/` directory.
    #[test]
    fn only_the_stock_flavour_builds_on_debians_kernels() {
        let none = std::path::Path::new("/nonexistent");
        assert_eq!(
            why_stock_only("CONFIG_ARM64=y\n# CONFIG_RUST is not set\n", none).as_deref(),
            Some("no CONFIG_RUST")
        );
        let rust = "CONFIG_RUST=y\nCONFIG_RUSTC_VERSION_TEXT=\"rustc 1.85.1 (4eb161250 2025-03-15) (built from a source tarball)\"\n";
        assert_eq!(
            why_stock_only(rust, none).as_deref(),
            Some("CONFIG_RUST=y (rustc 1.85.1 (4eb161250 2025-03-15) (built from a source tarball)), but no Rust crates in the headers")
        );
    }
}
