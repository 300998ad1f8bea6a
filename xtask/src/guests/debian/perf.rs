//! Debian's `perf` (`linux-perf`) for arm64 or armhf, at a release's candidate or an
//! exact version, and the shared libraries it needs: the library packages among its
//! dependencies unpacked, then the NEEDED closure of `usr/bin/perf` collected from them.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use pmu_qemu::apt::Apt;

use super::{package_key, unpack_with_libraries};
use crate::engine::paths::debian_root;

/// The `NEEDED` entries of `readelf -d` output.
pub fn parse_needed(readelf: &str) -> Vec<String> {
    readelf
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| {
            let start = l.find('[')? + 1;
            let end = l[start..].find(']')? + start;
            Some(l[start..end].to_string())
        })
        .collect()
}

/// The dynamic loader a program asks for (`readelf -l`: "Requesting program
/// interpreter: /lib/ld-linux-aarch64.so.1").
pub fn parse_interpreter(readelf: &str) -> Option<String> {
    readelf.lines().find_map(|l| {
        let at = l.find("program interpreter: ")? + "program interpreter: ".len();
        Some(l[at..].trim_end_matches(']').trim().to_string())
    })
}

/// Debian's `perf` for one architecture, with what it needs to run.
pub struct Perf {
    /// The `linux-perf` version.
    pub version: String,
    /// Where the guest finds perf's libraries ([`multiarch_libdir`]).
    pub libdir: &'static str,
    /// (path in the guest, file here): `usr/bin/perf`, the dynamic loader, and the
    /// shared objects `readelf -d` NEEDED leads to, in the guest's library directory.
    pub files: Vec<(String, PathBuf)>,
}

/// Where the guest finds perf's libraries for the Debian architecture `arch`: the
/// multiarch directory Debian's glibc searches by default (`lib/aarch64-linux-gnu`,
/// `lib/arm-linux-gnueabihf`; the guest also sets LD_LIBRARY_PATH to it).
pub fn multiarch_libdir(arch: &str) -> Result<&'static str, String> {
    match arch {
        "arm64" => Ok("lib/aarch64-linux-gnu"),
        "armhf" => Ok("lib/arm-linux-gnueabihf"),
        _ => Err(format!(
            "Debian's perf for {arch}: no guest of that architecture (arm64, armhf)"
        )),
    }
}

/// `linux-perf:<arch>` at `version` and its shared libraries (a kernel's own perf has
/// the kernel's version: `linux-perf` and `linux-image-<abi>-*` are built from the same
/// `linux` source upload; Debian 12 has only 6.1's, for its 6.1 and 6.12 kernels): the library
/// packages among its dependencies (transitively: `lib*` and `zlib1g`; perl and python
/// themselves are not needed to run `perf stat`), each at `apt`'s candidate (a state
/// whose default release is a backports suite gives that suite's libraries where it
/// has them, as `apt-get -t` would), downloaded and unpacked (cached by version and
/// architecture), then the NEEDED closure of `usr/bin/perf` collected from them. Fails
/// naming any library not found.
pub fn perf(apt: &Apt, arch: &str, version: &str) -> Result<Perf, String> {
    let libdir = multiarch_libdir(arch)?;
    let multiarch = libdir.trim_start_matches("lib/");
    let spec = format!("linux-perf:{arch}={version}");
    let top = apt.show(&spec)?;
    let dir = debian_root()
        .join("perf")
        .join(format!("{}_{arch}", package_key(&top)));
    let (packages, cached) = unpack_with_libraries(apt, &spec, &top, arch, &dir)?;
    eprintln!(
        "    linux-perf:{arch} {} and {} library packages: {}{}",
        top.version,
        packages - 1,
        dir.display(),
        if cached { " (cached)" } else { "" }
    );
    let perf = dir.join("usr/bin/perf");
    // Debian 13 ships its libraries (and the dynamic loader) under /usr only.
    let search = [
        dir.join("lib").join(multiarch),
        dir.join("usr/lib").join(multiarch),
        dir.join("lib"),
        dir.join("usr/lib"),
    ];
    let readelf = |path: &Path, flag: &str| {
        crate::engine::step::stdout_of(Command::new("readelf").arg(flag).arg(path))
    };
    let interp = parse_interpreter(&readelf(&perf, "-l")?)
        .ok_or_else(|| format!("{}: no program interpreter", perf.display()))?;
    let interp = interp.trim_start_matches('/');
    let resolve = |name: &str| -> Option<PathBuf> {
        let found = search.iter().map(|d| d.join(name)).find(|p| p.exists())?;
        // The soname is usually a relative link to the versioned file.
        fs::canonicalize(found).ok()
    };
    let mut files = vec![("usr/bin/perf".to_string(), perf.clone())];
    let interp_file = [dir.join(interp), dir.join("usr").join(interp)]
        .iter()
        .find_map(|p| fs::canonicalize(p).ok())
        .ok_or_else(|| format!("/{interp}: not in {} nor under its usr/", dir.display()))?;
    files.push((interp.to_string(), interp_file));
    let mut done: BTreeSet<String> = BTreeSet::new();
    let mut todo = parse_needed(&readelf(&perf, "-d")?);
    let mut missing = Vec::new();
    while let Some(name) = todo.pop() {
        if !done.insert(name.clone()) {
            continue;
        }
        match resolve(&name) {
            Some(file) => {
                todo.extend(parse_needed(&readelf(&file, "-d")?));
                files.push((format!("{libdir}/{name}"), file));
            }
            None => missing.push(name),
        }
    }
    if !missing.is_empty() {
        return Err(format!(
            "perf's shared libraries not found in its dependencies ({}): {}",
            dir.display(),
            missing.join(", ")
        ));
    }
    eprintln!(
        "    perf {} ({arch}): {} shared objects by readelf -d NEEDED",
        top.version,
        files.len() - 1
    );
    Ok(Perf {
        version: top.version,
        libdir,
        files,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `readelf -d` and `readelf -l` of Debian's arm64 perf 6.1.192 (binutils 2.40).
    #[test]
    fn readelf_needed_and_interpreter() {
        let dynamic = " 0x0000000000000001 (NEEDED)             Shared library: [libm.so.6]\n 0x0000000000000001 (NEEDED)             Shared library: [libopencsd_c_api.so.1]\n 0x000000000000000e (SONAME)             Library soname: [libx.so.1]\n 0x000000000000000c (INIT)               0x3f000\n";
        assert_eq!(
            parse_needed(dynamic),
            ["libm.so.6", "libopencsd_c_api.so.1"]
        );
        let program = "  INTERP         0x0000000000000238 0x0000000000000238 0x0000000000000238\n                 0x000000000000001b 0x000000000000001b  R      0x1\n      [Requesting program interpreter: /lib/ld-linux-aarch64.so.1]\n";
        assert_eq!(
            parse_interpreter(program).as_deref(),
            Some("/lib/ld-linux-aarch64.so.1")
        );
        assert_eq!(parse_interpreter("static"), None);
    }
}
