//! Debian's `perf` for arm64 (`linux-perf`) and the shared libraries it needs: the
//! library packages among its dependencies unpacked, then the NEEDED closure of
//! `usr/bin/perf` collected from them.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use pmu_qemu::apt::Apt;

use super::{cached_dir, package_key, unpack};
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

/// Debian's `perf` for arm64, with what it needs to run.
pub struct Perf {
    /// The `linux-perf` version.
    pub version: String,
    /// (path in the guest, file here): `usr/bin/perf`, the dynamic loader, and the
    /// shared objects `readelf -d` NEEDED leads to, in the guest's library directory.
    pub files: Vec<(String, PathBuf)>,
}

/// Where the guest finds perf's libraries (the multiarch directory Debian's glibc
/// searches by default; the guest also sets LD_LIBRARY_PATH to it).
pub const GUEST_LIBDIR: &str = "lib/aarch64-linux-gnu";

/// `linux-perf:arm64` and its shared libraries: the library packages among its
/// dependencies (transitively: `lib*` and `zlib1g`; perl and python themselves are
/// not needed to run `perf stat`) downloaded and unpacked (cached), then the NEEDED
/// closure of `usr/bin/perf` collected from them. Fails naming any library not found.
pub fn perf(apt: &Apt) -> Result<Perf, String> {
    let top = apt.show("linux-perf:arm64")?;
    let dir = debian_root().join("perf").join(package_key(&top));
    let stamp = dir.join(".pmu-complete");
    // Unpacked once per linux-perf version: the closure below asks apt about every
    // package, one apt-cache call each.
    let cached = stamp.is_file();
    if !cached {
        // Breadth-first over Depends, library packages only.
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let mut queue = vec![top.name.clone()];
        let mut packages = Vec::new();
        while let Some(name) = queue.pop() {
            if !seen.insert(name.clone()) {
                continue;
            }
            // Architecture-independent packages (`Architecture: all`, e.g.
            // libtirpc-common) have no `:arm64` form.
            let (spec, package) = match apt.show(&format!("{name}:arm64")) {
                Ok(p) => (format!("{name}:arm64"), p),
                Err(_) => (name.clone(), apt.show(&name)?),
            };
            for dep in &package.depends {
                if dep.starts_with("lib") || dep == "zlib1g" {
                    queue.push(dep.clone());
                }
            }
            packages.push(spec);
        }
        let debs = apt.fetch(&packages)?;
        let mut key: Vec<String> = debs
            .iter()
            .map(|d| {
                d.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        key.sort();
        cached_dir(&dir, &key.join("\n"), |dir| {
            for deb in &debs {
                unpack(deb, dir, None)?;
            }
            Ok(())
        })?;
    }
    let packages = fs::read_to_string(&stamp)
        .map_err(|e| format!("{}: {e}", stamp.display()))?
        .lines()
        .count();
    eprintln!(
        "    linux-perf:arm64 {} and {} library packages: {}{}",
        top.version,
        packages - 1,
        dir.display(),
        if cached { " (cached)" } else { "" }
    );
    let perf = dir.join("usr/bin/perf");
    let search = [
        dir.join("lib/aarch64-linux-gnu"),
        dir.join("usr/lib/aarch64-linux-gnu"),
        dir.join("lib"),
        dir.join("usr/lib"),
    ];
    let readelf = |path: &Path, flag: &str| {
        crate::engine::step::stdout_of(Command::new("readelf").arg(flag).arg(path))
    };
    let interp = parse_interpreter(&readelf(&perf, "-l")?)
        .ok_or_else(|| format!("{}: no program interpreter", perf.display()))?;
    let resolve = |name: &str| -> Option<PathBuf> {
        let found = search.iter().map(|d| d.join(name)).find(|p| p.exists())?;
        // The soname is usually a relative link to the versioned file.
        fs::canonicalize(found).ok()
    };
    let mut files = vec![("usr/bin/perf".to_string(), perf.clone())];
    let interp_file = fs::canonicalize(dir.join(interp.trim_start_matches('/')))
        .map_err(|e| format!("{interp} in {}: {e}", dir.display()))?;
    files.push((interp.trim_start_matches('/').to_string(), interp_file));
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
                files.push((format!("{GUEST_LIBDIR}/{name}"), file));
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
        "    perf {}: {} shared objects by readelf -d NEEDED",
        top.version,
        files.len() - 1
    );
    Ok(Perf {
        version: top.version,
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
