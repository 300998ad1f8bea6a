//! A kernel's own compiler, where this machine has none of that name.
//!
//! Debian's headers name the compiler their kernel was built with (`.kernelvariables`:
//! `CC = … $(CROSS_COMPILE)gcc-14` and `override CROSS_COMPILE = aarch64-linux-gnu-`,
//! which beats a `CROSS_COMPILE=` on make's command line), and Kbuild's flags follow that
//! compiler's configuration (CONFIG_GCC_VERSION and the CC_HAS_* options: Debian 13's
//! arm64 configuration has CONFIG_CC_HAS_MIN_FUNCTION_ALIGNMENT, so every object gets
//! `-fmin-function-alignment=8`, an option gcc 14 introduced). Debian 13's kernels, the
//! 7.3 backport included, want gcc 14; Debian 12, this project's build machine, has gcc
//! 12. So the compiler comes from the kernel's release: `gcc-<N>-<triplet>`,
//! `cpp-<N>-<triplet>` and `binutils-<triplet>` for amd64 with their libraries, unpacked
//! under `<cache root>/debian/toolchains/` (cached by version), their programs wrapped
//! to run with that release's C library ([`super::host_tools`]). Its `usr/bin` goes first
//! in make's PATH. Nothing is fetched where this machine has the compiler. The same for
//! `pahole`, which builds a module's BTF: Debian 13's headers want 1.30
//! (`CONFIG_PAHOLE_VERSION=130`), Debian 12 has 1.24.

use std::fs;
use std::path::{Path, PathBuf};

use pmu_qemu::apt::Apt;

use super::host_tools::{newer_programs, newest, wrap};
use super::{package_key, unpack_with_libraries};
use crate::engine::paths::debian_root;

/// The compiler a kernel's headers name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compiler {
    /// The GNU triplet (`aarch64-linux-gnu`, `arm-linux-gnueabihf`).
    pub triplet: String,
    /// The program's name after the triplet (`gcc-14`).
    pub program: String,
}

impl Compiler {
    /// The command Kbuild runs (`aarch64-linux-gnu-gcc-14`).
    pub fn command(&self) -> String {
        format!("{}-{}", self.triplet, self.program)
    }
}

/// The compiler of a Debian headers tree's `.kernelvariables` (`CC = $(if …) $(CROSS_COMPILE)gcc-14`,
/// `override CROSS_COMPILE = aarch64-linux-gnu-`); where they set CROSS_COMPILE only for
/// a cross build of Debian's own (Debian 12: `override CROSS_COMPILE =
/// $(DEB_HOST_GNU_TYPE)-` under `ifneq ($(DEB_BUILD_ARCH),$(DEB_HOST_ARCH))`), the
/// build's own `cross` prefix.
pub fn parse_kernelvariables(text: &str, cross: &str) -> Option<Compiler> {
    let value = |key: &str| {
        text.lines().find_map(|l| {
            let l = l.trim().strip_prefix("override ").unwrap_or(l.trim());
            let (k, v) = l.split_once('=')?;
            (k.trim() == key).then(|| v.trim().to_string())
        })
    };
    let cross = value("CROSS_COMPILE")
        .filter(|c| !c.contains("$("))
        .unwrap_or_else(|| cross.to_string());
    let cc = value("CC")?;
    let program = cc.split("$(CROSS_COMPILE)").nth(1)?.trim().to_string();
    let triplet = cross.strip_suffix('-')?.to_string();
    (!program.is_empty() && !triplet.is_empty()).then_some(Compiler { triplet, program })
}

/// Whether `command` is on this machine's PATH.
fn on_path(command: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(command).is_file()))
        .unwrap_or(false)
}

/// The `pahole` version Kbuild wants for the headers `kdir`: their
/// `CONFIG_PAHOLE_VERSION` (`130` for 1.30), when they build BTF for modules
/// (`CONFIG_DEBUG_INFO_BTF_MODULES=y` and a `vmlinux` to take the base types from), or
/// when their Makefile warns about any other pahole (Linux 7.x's `prepare` target: "pahole
/// version differs from the one used to build the kernel", even without BTF; Debian's
/// armhf 7.2.11 headers) — a warning the module's build treats as an error.
fn pahole_wanted(kdir: &Path) -> Option<u32> {
    let config = fs::read_to_string(kdir.join(".config")).ok()?;
    let btf = config
        .lines()
        .any(|l| l == "CONFIG_DEBUG_INFO_BTF_MODULES=y")
        && kdir.join("vmlinux").is_file();
    let version = config
        .lines()
        .find_map(|l| l.strip_prefix("CONFIG_PAHOLE_VERSION="))?
        .parse()
        .ok()?;
    (btf || makefile_compares_pahole(kdir)).then_some(version)
}

/// Whether the headers' Makefile (Debian's flavour Makefile `include`s the `-common` one)
/// compares the pahole version with the kernel's.
fn makefile_compares_pahole(kdir: &Path) -> bool {
    let Ok(flavour) = fs::read_to_string(kdir.join("Makefile")) else {
        return false;
    };
    let included = flavour
        .lines()
        .filter_map(|l| l.strip_prefix("include "))
        .filter_map(|path| fs::read_to_string(path.trim()).ok());
    std::iter::once(flavour.clone())
        .chain(included)
        .any(|text| text.contains("pahole version differs"))
}

/// This machine's `pahole` version as Kbuild numbers it (`v1.24` -> 124), if it has one.
fn host_pahole() -> Option<u32> {
    let out = crate::engine::step::stdout_of(std::process::Command::new("pahole").arg("--version"))
        .ok()?;
    let (major, minor) = out.trim().trim_start_matches('v').split_once('.')?;
    Some(major.parse::<u32>().ok()? * 100 + minor.parse::<u32>().ok()?)
}

/// The directories to put first in make's PATH to build against the headers `kdir` (with
/// `CROSS_COMPILE=<cross>`): none where this machine has what they name, else, from `apt`'s release (fetched and
/// unpacked, cached), the `usr/bin` of the compiler they name and of the `pahole` they
/// want for modules' BTF (Debian 13's headers pass pahole 1.30's `--btf_features`,
/// which Debian 12's 1.24 refuses).
pub fn for_headers(apt: &Apt, kdir: &Path, cross: &str) -> Result<Vec<PathBuf>, String> {
    let mut bins = Vec::new();
    let file = kdir.join(".kernelvariables");
    if let Ok(text) = fs::read_to_string(&file) {
        let compiler = parse_kernelvariables(&text, cross)
            .ok_or_else(|| format!("{}: no CC and CROSS_COMPILE", file.display()))?;
        let command = compiler.command();
        if !on_path(&command) {
            let Some(version) = compiler.program.strip_prefix("gcc-") else {
                return Err(format!(
                    "{}: the compiler {command} is not gcc-<N>, and this machine has none of that name",
                    file.display()
                ));
            };
            let t = &compiler.triplet;
            bins.push(tools(
                apt,
                &[
                    format!("gcc-{version}-{t}:amd64"),
                    format!("cpp-{version}-{t}:amd64"),
                    format!("binutils-{t}:amd64"),
                ],
                &command,
            )?);
        }
    }
    if let Some(wanted) = pahole_wanted(kdir) {
        if host_pahole().is_none_or(|has| has < wanted) {
            bins.push(tools(apt, &["pahole:amd64".to_string()], "pahole")?);
        }
    }
    Ok(bins)
}

/// The packages `names` (amd64) with their libraries, unpacked under
/// `<cache root>/debian/toolchains/<first package>_<version>/` (cached) with the
/// programs that need a newer C library than this machine's wrapped; its `usr/bin`,
/// which must hold `command`.
fn tools(apt: &Apt, names: &[String], command: &str) -> Result<PathBuf, String> {
    let tops: Vec<(String, pmu_qemu::apt::Package)> = names
        .iter()
        .map(|n| Ok((n.clone(), apt.show(n)?)))
        .collect::<Result<_, String>>()?;
    let dir = debian_root()
        .join("toolchains")
        .join(package_key(&tops[0].1));
    let (packages, cached) = unpack_with_libraries(apt, &tops, "amd64", &dir)?;
    let wrapped = dir.join(".pmu-wrapped");
    if !wrapped.is_file() {
        let (newer, has) = newer_programs(&dir)?;
        wrap(&newer, has, &dir)?;
        fs::write(&wrapped, format!("{}\n", newer.len()))
            .map_err(|e| format!("{}: {e}", wrapped.display()))?;
        eprintln!(
            "    {}: {} programs need glibc {} (this machine has {}.{}): run with their release's loader",
            dir.display(),
            newer.len(),
            newest(&newer),
            has.0,
            has.1
        );
    }
    let bin = dir.join("usr/bin");
    if !bin.join(command).is_file() {
        return Err(format!("{command} missing in {}", bin.display()));
    }
    eprintln!(
        "    {command}: {} {} and {} more packages, {}{}",
        tops[0].1.name,
        tops[0].1.version,
        packages - 1,
        bin.display(),
        if cached { " (cached)" } else { "" }
    );
    Ok(bin)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Linux 7.3's Makefile (`prepare:`) warns when pahole differs from
    /// CONFIG_PAHOLE_VERSION; Debian's flavour Makefile reaches it through `include`
    /// (linux-headers-7.2.11+deb13-armmp); 6.12's has no such check.
    #[test]
    fn a_7x_makefile_asks_for_the_kernels_pahole_without_btf() {
        let dir = std::env::temp_dir().join(format!("pahole-check-{}", std::process::id()));
        let (common, flavour) = (dir.join("common"), dir.join("flavour"));
        fs::create_dir_all(&common).unwrap();
        fs::create_dir_all(&flavour).unwrap();
        fs::write(
            flavour.join(".config"),
            "CONFIG_PAHOLE_VERSION=130\n# CONFIG_DEBUG_INFO_BTF is not set\n",
        )
        .unwrap();
        fs::write(
            flavour.join("Makefile"),
            format!("include {}/Makefile\n", common.display()),
        )
        .unwrap();
        fs::write(common.join("Makefile"), "prepare:\n\t@true\n").unwrap();
        assert_eq!(pahole_wanted(&flavour), None, "6.12: no check, no BTF");
        fs::write(
            common.join("Makefile"),
            "\t\techo >&2 \"warning: pahole version differs from the one used to build the kernel\"; \\\n",
        )
        .unwrap();
        assert_eq!(pahole_wanted(&flavour), Some(130));
        fs::remove_dir_all(&dir).unwrap();
    }

    /// `.kernelvariables` of linux-headers-6.12.118+deb13-arm64 (Debian 13, 2026-12-06).
    #[test]
    fn the_headers_name_their_compiler() {
        let text = "override ARCH = arm64\n\
override KERNELRELEASE = 6.12.118+deb13-arm64\n\
CCACHE = ccache\n\
CC = $(if $(DEBIAN_KERNEL_USE_CCACHE),$(CCACHE)) $(CROSS_COMPILE)gcc-14\n\
DEB_BUILD_ARCH ?= $(shell dpkg --print-architecture)\n\
override CROSS_COMPILE = aarch64-linux-gnu-\n\
override CROSS_COMPILE_COMPAT = arm-linux-gnueabihf-\n";
        let c = parse_kernelvariables(text, "x-").unwrap();
        assert_eq!(c.command(), "aarch64-linux-gnu-gcc-14");
        assert_eq!(c.triplet, "aarch64-linux-gnu");
        assert_eq!(parse_kernelvariables("override ARCH = arm64\n", "x-"), None);
        // linux-headers-6.1.0-57-arm64 (Debian 12): the build's own prefix.
        let bookworm = "CC = $(if $(DEBIAN_KERNEL_USE_CCACHE),$(CCACHE)) $(CROSS_COMPILE)gcc-12\n\
ifneq ($(DEB_BUILD_ARCH),$(DEB_HOST_ARCH))\n\
override CROSS_COMPILE = $(DEB_HOST_GNU_TYPE)-\n\
endif\n";
        let c = parse_kernelvariables(bookworm, "aarch64-linux-gnu-").unwrap();
        assert_eq!(c.command(), "aarch64-linux-gnu-gcc-12");
    }
}
