//! Debian's `linux-kbuild` host programs (fixdep, modpost, …) on a build machine whose C
//! library is older than the one they were built against. Debian 13's modpost asks for
//! `GLIBC_2.38` (`objdump -T`; its glibc is 2.41) where Debian 12, this project's build
//! machine, has 2.36, so `make` fails in modpost with "version `GLIBC_2.38' not found".
//! Each such program is run by its release's own dynamic loader with its release's own
//! libraries (the `linux-kbuild` package's library closure, unpacked beside the headers),
//! through a shell wrapper in its place; the programs this machine's C library serves
//! are left as they are, and nothing is fetched when there are none.

use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use pmu_qemu::apt::{Apt, Package};

use super::unpack_with_libraries;

/// The newest `GLIBC_<major>.<minor>` symbol version in `objdump -T` output.
pub fn needed_glibc(objdump: &str) -> Option<(u32, u32)> {
    objdump
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .filter_map(|word| glibc_version(word.strip_prefix("GLIBC_")?))
        .max()
}

/// `2.38` -> (2, 38).
fn glibc_version(text: &str) -> Option<(u32, u32)> {
    let (major, minor) = text.split_once('.')?;
    let minor = minor.split('.').next()?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// This machine's C library version (`getconf GNU_LIBC_VERSION`: `glibc 2.36`).
fn host_glibc() -> Result<(u32, u32), String> {
    let out = crate::engine::step::stdout_of(Command::new("getconf").arg("GNU_LIBC_VERSION"))?;
    out.trim()
        .strip_prefix("glibc ")
        .and_then(glibc_version)
        .ok_or_else(|| format!("getconf GNU_LIBC_VERSION: {out:?} is not `glibc X.Y`"))
}

/// Every ELF program under `dir`, shared objects and the amd64 library directories
/// left out (glibc's own `libc.so.6` and loader are executable ELF files too), and the
/// programs [`wrap`] has moved aside already.
fn elf_programs(dir: &Path, into: &mut Vec<PathBuf>) -> Result<(), String> {
    for entry in fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        let kind = entry.file_type().map_err(|e| e.to_string())?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if kind.is_dir() {
            if name != "x86_64-linux-gnu" {
                elf_programs(&path, into)?;
            }
        } else if kind.is_file() && !name.contains(".so") && !name.contains(".glibc-") {
            let executable = entry
                .metadata()
                .is_ok_and(|m| m.permissions().mode() & 0o111 != 0);
            let mut magic = [0u8; 4];
            let elf = fs::File::open(&path)
                .and_then(|mut f| f.read_exact(&mut magic))
                .is_ok()
                && magic == *b"\x7fELF";
            if executable && elf {
                into.push(path);
            }
        }
    }
    Ok(())
}

/// A glibc version, (major, minor).
pub type Glibc = (u32, u32);

/// Programs and the glibc version each needs.
pub type Programs = Vec<(PathBuf, Glibc)>;

/// The programs under `dir` that need a newer C library than this machine's (which
/// comes second), with the version each needs.
pub fn newer_programs(dir: &Path) -> Result<(Programs, Glibc), String> {
    let has = host_glibc()?;
    let mut programs = Vec::new();
    elf_programs(dir, &mut programs)?;
    let mut newer = Vec::new();
    for program in programs {
        let dynamic =
            crate::engine::step::stdout_of(Command::new("objdump").arg("-T").arg(&program))
                .unwrap_or_default();
        if let Some(needs) = needed_glibc(&dynamic).filter(|needs| *needs > has) {
            newer.push((program, needs));
        }
    }
    Ok((newer, has))
}

/// The shell script that runs `real` with `loader` and the libraries in `libs`.
pub fn wrapper(
    name: &str,
    needs: (u32, u32),
    has: (u32, u32),
    loader: &Path,
    libs: &str,
    real: &Path,
) -> String {
    format!(
        "#!/bin/sh\n\
         # Debian's {name} needs glibc {}.{} (objdump -T); this machine has {}.{}: run it with\n\
         # the dynamic loader and libraries of its own release (xtask/src/guests/debian/host_tools.rs).\n\
         exec '{}' --library-path '{libs}' '{}' \"$@\"\n",
        needs.0,
        needs.1,
        has.0,
        has.1,
        loader.display(),
        real.display()
    )
}

/// Puts a [`wrapper`] in the place of each of `newer` (from [`newer_programs`]), running
/// it with the loader and libraries unpacked in `libraries` (libc6:amd64 of its
/// release); the program itself moves to `<name>.glibc-<version>` beside it.
pub fn wrap(
    newer: &[(PathBuf, (u32, u32))],
    has: (u32, u32),
    libraries: &Path,
) -> Result<(), String> {
    let multiarch = ["usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu"];
    // The loader itself, not a link: Debian's /lib64 link is absolute and would lead
    // to this machine's own loader.
    let loader = multiarch
        .iter()
        .map(|d| libraries.join(d).join("ld-linux-x86-64.so.2"))
        .find(|p| fs::symlink_metadata(p).is_ok_and(|m| m.is_file()))
        .ok_or_else(|| {
            format!(
                "ld-linux-x86-64.so.2 not in {} (libc6:amd64 of the programs' release)",
                libraries.display()
            )
        })?;
    let libs = multiarch
        .map(|d| libraries.join(d).display().to_string())
        .join(":");
    for (program, needs) in newer {
        let name = program
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let real = program.with_file_name(format!("{name}.glibc-{}.{}", needs.0, needs.1));
        fs::rename(program, &real).map_err(|e| format!("{}: {e}", real.display()))?;
        fs::write(program, wrapper(&name, *needs, has, &loader, &libs, &real))
            .map_err(|e| format!("{}: {e}", program.display()))?;
        fs::set_permissions(program, fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("{}: {e}", program.display()))?;
    }
    Ok(())
}

/// The newest glibc among `newer`, as `2.38`.
pub fn newest(newer: &[(PathBuf, (u32, u32))]) -> String {
    let (major, minor) = newer.iter().map(|(_, n)| *n).max().unwrap_or((0, 0));
    format!("{major}.{minor}")
}

/// Wraps every program under `tools` (the unpacked `spec`, apt's `package`: an amd64
/// `linux-kbuild-*`) that needs a newer C library than this machine's; its release's
/// loader and libraries are unpacked into `libraries` first (only then). Returns how
/// many were wrapped.
pub fn run_newer_tools(
    apt: &Apt,
    spec: &str,
    package: &Package,
    tools: &Path,
    libraries: &Path,
) -> Result<usize, String> {
    let (newer, has) = newer_programs(tools)?;
    if newer.is_empty() {
        return Ok(0);
    }
    let (packages, _) = unpack_with_libraries(
        apt,
        &[(spec.to_string(), package.clone())],
        "amd64",
        libraries,
    )?;
    wrap(&newer, has, libraries)?;
    eprintln!(
        "    {spec} {}: {} host programs need glibc {} (this machine has {}.{}): run with the loader and {} library packages in {}",
        package.version,
        newer.len(),
        newest(&newer),
        has.0,
        has.1,
        packages - 1,
        libraries.display()
    );
    Ok(newer.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `objdump -T` of Debian 13's modpost.real-lsb-64 (linux-kbuild-6.12.118+deb13,
    /// binutils 2.40), shortened: the newest version it asks for is 2.38
    /// (`__isoc23_strtoul`).
    #[test]
    fn the_newest_glibc_symbol_version() {
        let dump = "0000000000000000      DF *UND*\t0000000000000000 (GLIBC_2.2.5) strcmp\n\
                    0000000000000000      DF *UND*\t0000000000000000 (GLIBC_2.38)  __isoc23_strtoul\n\
                    0000000000000000      DF *UND*\t0000000000000000 (GLIBC_2.34) __libc_start_main\n";
        assert_eq!(needed_glibc(dump), Some((2, 38)));
        assert_eq!(needed_glibc("no dynamic symbols"), None);
        // 2.38 is newer than 2.4 (numbers, not text).
        assert!((2, 38) > (2, 4));
        assert_eq!(glibc_version("2.36"), Some((2, 36)));
    }
}
