//! Debian's own kernels, headers and `perf`, and the end-to-end runs on them:
//! `cargo xtask e2e debian-arm64`, `debian-armhf` (Debian 12), `debian13-arm64` and
//! `debian13-armhf` (Debian 13, and trixie-backports' 7.3 on arm64): tests/tests/debian_arm64.rs,
//! tests/tests/debian_armhf.rs. Each kernel is a row of [`run::ROWS`].
//!
//! Everything comes from Debian's archive through apt, in one private apt state per
//! release ([`crate::host::apt::debian`]: its own sources list, lists and cache under
//! `<cache root>/debian/`, for amd64, arm64 and armhf; the host's apt configuration is
//! never changed). apt's and dpkg's output goes to `<cache root>/debian/apt.log`;
//! progress lines go to stderr.
//!
//! Cached under the cache root, keyed by what they are made of:
//! - `debian/debs/<package>_<version>_<arch>.deb`: every package downloaded, by its
//!   exact version (a new Debian upload is a new file);
//! - `debian/kernels/<package>_<version>/`: the kernel image and configuration of a
//!   `linux-image-*` package (only those files are unpacked; from 7.x they come from
//!   `linux-binary-*` and `linux-base-*`);
//! - `debian/headers/<headers package>_<version>/`: the headers, their `-common` part
//!   and the amd64 `linux-kbuild` they depend on, unpacked together (the `scripts` link
//!   is relative) with the absolute links and the Makefile's paths made to point into
//!   the extraction, and the kbuild programs that need a newer C library than this
//!   machine's wrapped ([`host_tools`]);
//! - `debian/toolchains/<package>_<version>/`: the compiler and `pahole` a release's
//!   headers name, where this machine has none of them ([`toolchain`]);
//! - `debian/perf/linux-perf_<version>_<arch>/`: `linux-perf` and the library packages
//!   it depends on, unpacked (once per version and architecture); what goes into the
//!   guest is `usr/bin/perf` and the shared objects its `readelf -d` NEEDED entries lead
//!   to, transitively.
//!
//! The apt lists are fetched once; when a version they name is no longer in the archive
//! (Debian replaced it), the download fails, the lists are refreshed and the download is
//! tried once more.
//!
//! By job: [`kernels`] (a kernel's image and headers, unpacked), [`toolchain`] and
//! [`host_tools`] (what builds against them), [`perf`] (`linux-perf` with its library
//! closure), [`module`] (the stock module against Debian's headers), [`initramfs`] (the
//! guest's archive) and [`run`] (the table of kernels, the runs and their steps).

pub mod host_tools;
pub mod initramfs;
pub mod kernels;
pub mod module;
pub mod perf;
pub mod run;
pub mod toolchain;

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::Command;

use pmu_qemu::apt::{Apt, Package};

use crate::host::apt::log_path;

/// `<name>_<version>` of `package` with path-safe characters: a cache key.
pub fn package_key(package: &Package) -> String {
    crate::build::kernel::sanitize(&format!("{}_{}", package.name, package.version))
}

/// Unpacks `deb` (all of it, or only the members under `only`, e.g. `./boot`) into
/// `into`, logging to [`log_path`].
pub fn unpack(deb: &Path, into: &Path, only: Option<&str>) -> Result<(), String> {
    fs::create_dir_all(into).map_err(|e| format!("{}: {e}", into.display()))?;
    match only {
        None => pmu_qemu::apt::logged(
            &log_path(),
            Command::new("dpkg-deb").arg("-x").arg(deb).arg(into),
        ),
        Some(member) => pmu_qemu::apt::logged(
            &log_path(),
            Command::new("sh").arg("-c").arg(format!(
                "dpkg-deb --fsys-tarfile '{}' | tar -x -C '{}' '{member}'",
                deb.display(),
                into.display()
            )),
        ),
    }
}

/// The file names of `debs`, in order: what a cached extraction of them is keyed by
/// (a package's file name carries its version, so a new upload is a new key).
pub fn deb_names(debs: &[std::path::PathBuf]) -> Vec<String> {
    debs.iter()
        .map(|d| {
            d.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

/// `dir` filled by `fill` unless its stamp already says `key`: the cached extraction
/// for that key. `fill` starts from an empty directory.
pub fn cached_dir(
    dir: &Path,
    key: &str,
    fill: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<bool, String> {
    let stamp = dir.join(".pmu-complete");
    if fs::read_to_string(&stamp).is_ok_and(|s| s == key) {
        return Ok(true);
    }
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    fill(dir)?;
    fs::write(&stamp, key).map_err(|e| format!("{}: {e}", stamp.display()))?;
    Ok(false)
}

/// The packages `tops` (each a spec, `name:arch` or `name:arch=version`, with apt's
/// description of it) and the library packages among their dependencies, transitively
/// (`lib*` and `zlib1g`; each `:<arch>` at `apt`'s candidate, or
/// architecture-independent), downloaded and unpacked together into `dir` (cached:
/// unpacked once, the stamp listing the `.deb` files). Returns how many packages and
/// whether they were cached.
pub fn unpack_with_libraries(
    apt: &Apt,
    tops: &[(String, Package)],
    arch: &str,
    dir: &Path,
) -> Result<(usize, bool), String> {
    let stamp = dir.join(".pmu-complete");
    // The closure asks apt about every package, one apt-cache call each: only when the
    // extraction is not there yet.
    let cached = stamp.is_file();
    if !cached {
        let libraries = |depends: &[String], queue: &mut Vec<String>| {
            queue.extend(
                depends
                    .iter()
                    .filter(|d| d.starts_with("lib") || *d == "zlib1g")
                    .cloned(),
            );
        };
        let mut seen: BTreeSet<String> = tops.iter().map(|(_, p)| p.name.clone()).collect();
        let mut queue = Vec::new();
        for (_, top) in tops {
            libraries(&top.depends, &mut queue);
        }
        let mut packages: Vec<String> = tops.iter().map(|(spec, _)| spec.clone()).collect();
        while let Some(name) = queue.pop() {
            if !seen.insert(name.clone()) {
                continue;
            }
            // Architecture-independent packages (`Architecture: all`, e.g.
            // libtirpc-common) have no `:<arch>` form.
            let (spec, package) = match apt.show(&format!("{name}:{arch}")) {
                Ok(p) => (format!("{name}:{arch}"), p),
                Err(_) => (name.clone(), apt.show(&name)?),
            };
            libraries(&package.depends, &mut queue);
            packages.push(spec);
        }
        let debs = apt.fetch(&packages)?;
        let mut key = deb_names(&debs);
        key.sort();
        cached_dir(dir, &key.join("\n"), |dir| {
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
    Ok((packages, cached))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// apt-get download's file name quotes an epoch's colon (busybox-static's
    /// `1:1.35.0-4+deb12u1+b1` on Debian 12); the cache key keeps it path-safe.
    #[test]
    fn keys_are_path_safe() {
        let p = Package {
            name: "busybox-static".into(),
            version: "1:1.35.0-4+deb12u1+b1".into(),
            arch: "arm64".into(),
            depends: vec![],
        };
        assert_eq!(package_key(&p), "busybox-static_1_1.35.0-4+deb12u1+b1");
    }
}
