//! One of Debian's kernels: its image and its headers (with their `-common` part and
//! the amd64 `linux-kbuild`), downloaded and unpacked, cached by package version.

use std::fs;
use std::path::PathBuf;

use pmu_qemu::apt::{Apt, Package};

use super::{cached_dir, package_key, unpack};
use crate::engine::paths::debian_root;

/// The metapackages of Debian 12's arm64 kernels: the default (6.1) and the opt-in 6.12.
pub const ARM64_METAPACKAGES: [&str; 2] = ["linux-image-arm64", "linux-image-6.12-arm64"];

/// One of Debian's kernels: its image and its headers, unpacked.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// `arm64`, `armmp`.
    pub flavour: String,
    /// The Debian package version (`6.1.192-3`).
    pub version: String,
    /// `uname -r`: `<abi>-<flavour>`.
    pub release: String,
    /// The image QEMU boots (`boot/vmlinuz-<release>`: a plain `Image` on arm64, a
    /// `zImage` on armhf).
    pub image: PathBuf,
    /// The kernel's configuration (`boot/config-<release>`).
    pub config: PathBuf,
    /// The headers: the `KDIR` for the module.
    pub kdir: PathBuf,
}

/// The kernel the metapackage `meta` (`linux-image-arm64`, `linux-image-6.12-arm64`,
/// `linux-image-armmp`) of Debian architecture `arch` points to, for `flavour`: image and
/// headers downloaded and unpacked (cached).
pub fn kernel(apt: &Apt, meta: &str, arch: &str, flavour: &str) -> Result<Kernel, String> {
    let meta_pkg = apt.show(&format!("{meta}:{arch}"))?;
    let abi = abi_of(&meta_pkg, flavour).ok_or_else(|| {
        format!(
            "{meta}:{arch} {} depends on no linux-image-<abi>-{flavour}: {:?}",
            meta_pkg.version, meta_pkg.depends
        )
    })?;
    let release = format!("{abi}-{flavour}");
    let image_pkg = apt.show(&format!("linux-image-{release}:{arch}"))?;
    let headers_pkg = apt.show(&format!("linux-headers-{release}:{arch}"))?;
    // The headers' own dependencies: the -common part (Architecture: all) and the
    // linux-kbuild whose programs run on the build machine (amd64).
    let common = headers_pkg
        .depends
        .iter()
        .find(|d| d.starts_with("linux-headers-") && d.ends_with("-common"))
        .ok_or_else(|| format!("{}: no -common dependency", headers_pkg.name))?;
    let kbuild = headers_pkg
        .depends
        .iter()
        .find(|d| d.starts_with("linux-kbuild-"))
        .ok_or_else(|| format!("{}: no linux-kbuild dependency", headers_pkg.name))?;
    let debs = apt.fetch(&[
        format!("linux-image-{release}:{arch}"),
        format!("linux-headers-{release}:{arch}"),
        common.clone(),
        format!("{kbuild}:amd64"),
    ])?;
    let kdir_root = debian_root()
        .join("headers")
        .join(package_key(&headers_pkg));
    let kdir = kdir_root.join(format!("usr/src/linux-headers-{release}"));
    let header_key: Vec<String> = debs[1..]
        .iter()
        .map(|d| {
            d.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let cached = cached_dir(&kdir_root, &header_key.join("\n"), |dir| {
        for deb in &debs[1..] {
            eprintln!("    dpkg-deb -x {}", deb.display());
            unpack(deb, dir, None)?;
        }
        crate::build::stock_module::relink_absolute(dir, dir)?;
        // The flavour's Makefile includes the common part by its installed path
        // (`include /usr/src/linux-headers-<abi>-common/Makefile`): point it into the
        // extraction.
        let makefile = dir
            .join("usr/src")
            .join(format!("linux-headers-{release}"))
            .join("Makefile");
        let text =
            fs::read_to_string(&makefile).map_err(|e| format!("{}: {e}", makefile.display()))?;
        let fixed = text.replace("include /usr/", &format!("include {}/usr/", dir.display()));
        fs::write(&makefile, fixed).map_err(|e| format!("{}: {e}", makefile.display()))
    })?;
    eprintln!(
        "    {} {}: headers {}{}",
        headers_pkg.name,
        headers_pkg.version,
        kdir.display(),
        if cached { " (cached)" } else { "" }
    );
    let image_root = debian_root().join("kernels").join(package_key(&image_pkg));
    let cached = cached_dir(&image_root, &image_pkg.deb_name(), |dir| {
        eprintln!("    dpkg-deb --fsys-tarfile {} (./boot)", debs[0].display());
        unpack(&debs[0], dir, Some("./boot"))
    })?;
    let image = image_root.join(format!("boot/vmlinuz-{release}"));
    let config = image_root.join(format!("boot/config-{release}"));
    for f in [&image, &config] {
        if !f.is_file() {
            return Err(format!("{} missing in {}", f.display(), debs[0].display()));
        }
    }
    eprintln!(
        "    {} {}: {}{}",
        image_pkg.name,
        image_pkg.version,
        image.display(),
        if cached { " (cached)" } else { "" }
    );
    Ok(Kernel {
        flavour: flavour.to_string(),
        version: image_pkg.version,
        release,
        image,
        config,
        kdir,
    })
}

/// The kernel ABI a metapackage (`linux-image-arm64`, `linux-image-6.12-arm64`,
/// `linux-image-armmp`) depends on: `linux-image-<abi>-<flavour>` -> `<abi>`.
pub fn abi_of(meta: &Package, flavour: &str) -> Option<String> {
    let suffix = format!("-{flavour}");
    meta.depends.iter().find_map(|d| {
        let abi = d.strip_prefix("linux-image-")?.strip_suffix(&suffix)?;
        // 6.1.0-57 or 6.12.118+deb12: starts with a digit, no other flavour word.
        (abi.starts_with(|c: char| c.is_ascii_digit())
            && !abi.ends_with("-rt")
            && !abi.ends_with("-cloud"))
        .then(|| abi.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The metapackages as Debian 12 lists them (`apt-cache show`, 2026-12-04).
    #[test]
    fn metapackages_name_the_abi() {
        let meta = |dep: &str| Package {
            name: "m".into(),
            version: "1".into(),
            arch: "arm64".into(),
            depends: pmu_qemu::apt::parse_depends(dep),
        };
        assert_eq!(
            abi_of(&meta("linux-image-6.1.0-57-arm64 (= 6.1.192-3)"), "arm64").as_deref(),
            Some("6.1.0-57")
        );
        assert_eq!(
            abi_of(
                &meta("linux-image-6.12.118+deb12-arm64 (= 6.12.118-1~deb12u1)"),
                "arm64"
            )
            .as_deref(),
            Some("6.12.118+deb12")
        );
        assert_eq!(
            abi_of(&meta("linux-image-6.1.0-57-armmp (= 6.1.192-3)"), "armmp").as_deref(),
            Some("6.1.0-57")
        );
        // Not the generic flavour.
        assert_eq!(
            abi_of(
                &meta("linux-image-6.1.0-57-rt-arm64 (= 6.1.192-3)"),
                "arm64"
            ),
            None
        );
        assert_eq!(
            abi_of(&meta("linux-image-6.1.0-57-armmp-lpae"), "armmp"),
            None
        );
    }
}
