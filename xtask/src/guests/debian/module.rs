//! The stock module built against the headers of one of Debian's kernels, checked.

use std::fs;
use std::path::PathBuf;

use super::kernels::Kernel;

/// The stock module built against `kernel`'s headers, checked for it: the kernel has no
/// CONFIG_RUST (only this flavour can load there) and the module's vermagic names the
/// kernel's release.
pub fn stock_module(kernel: &Kernel, make_vars: &[String]) -> Result<PathBuf, String> {
    let config = fs::read_to_string(&kernel.config)
        .map_err(|e| format!("{}: {e}", kernel.config.display()))?;
    if config.lines().any(|l| l.trim() == "CONFIG_RUST=y") {
        return Err(format!(
            "{} has CONFIG_RUST=y: not the stock kernel these runs are meant for",
            kernel.config.display()
        ));
    }
    let ko = crate::build::stock_module::build(
        &kernel.kdir,
        make_vars,
        &format!("debian-{}", kernel.release),
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
        "    stock module for Debian {} ({} {}, no CONFIG_RUST): vermagic \"{vermagic}\"",
        kernel.release, kernel.flavour, kernel.version
    );
    Ok(ko)
}

/// Where the guest finds the module for the kernel it runs (`uname -r`).
pub fn guest_module_path(release: &str) -> String {
    format!("lib/modules/kmod_enable_user-{release}.ko")
}
