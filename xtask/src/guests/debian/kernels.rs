//! One of Debian's kernels: its image and its headers (with their `-common` part and
//! the amd64 `linux-kbuild`), downloaded and unpacked, cached by package version.

use std::fs;
use std::path::PathBuf;

use pmu_qemu::apt::{Apt, Package};

use super::{cached_dir, package_key, unpack};
use crate::engine::paths::debian_root;

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
    /// What goes first in make's PATH to build against them: the compiler they name,
    /// where this machine has none of that name ([`super::toolchain`]).
    pub tools: Vec<PathBuf>,
}

/// Which kernel of a release a row boots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Image {
    /// The one a metapackage (`linux-image-arm64`, `linux-image-6.12-arm64`,
    /// `linux-image-armmp`) points to today.
    Meta(&'static str),
    /// One ABI (`7.2.11+deb13`), where the metapackage points to a kernel the archive
    /// lists but does not serve.
    Abi(&'static str),
}

impl std::fmt::Display for Image {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Image::Meta(meta) => f.write_str(meta),
            Image::Abi(abi) => write!(f, "linux-image-{abi}-<flavour>"),
        }
    }
}

/// The kernel `image` names for Debian architecture `arch` and `flavour`: image and
/// headers downloaded and unpacked (cached).
pub fn kernel(apt: &Apt, image: Image, arch: &str, flavour: &str) -> Result<Kernel, String> {
    let abi = match image {
        Image::Abi(abi) => abi.to_string(),
        Image::Meta(meta) => {
            let meta_pkg = apt.show(&format!("{meta}:{arch}"))?;
            abi_of(&meta_pkg, flavour).ok_or_else(|| {
                format!(
                    "{meta}:{arch} {} depends on no linux-image-<abi>-{flavour}: {:?}",
                    meta_pkg.version, meta_pkg.depends
                )
            })?
        }
    };
    let release = format!("{abi}-{flavour}");
    let image_pkg = apt.show(&format!("linux-image-{release}:{arch}"))?;
    let layout = Layout::of(&image_pkg, &release);
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
    let kbuild_pkg = apt.show(&format!("{kbuild}:amd64"))?;
    let mut specs = vec![format!("{}:{arch}", layout.image_package)];
    if layout.config_package != layout.image_package {
        specs.push(format!("{}:{arch}", layout.config_package));
    }
    let kernel_debs = specs.len();
    specs.extend([
        format!("linux-headers-{release}:{arch}"),
        common.clone(),
        format!("{kbuild}:amd64"),
    ]);
    let debs = apt.fetch(&specs)?;
    let (kernel_files, header_debs) = debs.split_at(kernel_debs);
    let kdir_root = debian_root()
        .join("headers")
        .join(package_key(&headers_pkg));
    let kdir = kdir_root.join(format!("usr/src/linux-headers-{release}"));
    let header_key = super::deb_names(header_debs);
    let cached = cached_dir(&kdir_root, &header_key.join("\n"), |dir| {
        for deb in header_debs {
            eprintln!("    dpkg-deb -x {}", deb.display());
            unpack(deb, dir, None)?;
        }
        super::host_tools::run_newer_tools(
            apt,
            &format!("{kbuild}:amd64"),
            &kbuild_pkg,
            &dir.join("usr/lib").join(kbuild),
            &dir.join("host-libraries"),
        )?;
        crate::build::stock_module::relink_absolute(dir, dir)?;
        // The flavour's Makefile names the common part by its installed path
        // (`include /usr/src/linux-headers-<abi>-common/Makefile`), and from 7.x itself
        // too (`KBUILD_OUTPUT=/usr/src/linux-headers-<abi>-<flavour>`): point them into
        // the extraction.
        let makefile = dir
            .join("usr/src")
            .join(format!("linux-headers-{release}"))
            .join("Makefile");
        let text =
            fs::read_to_string(&makefile).map_err(|e| format!("{}: {e}", makefile.display()))?;
        let fixed = text.replace("/usr/src/", &format!("{}/usr/src/", dir.display()));
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
    let image_key = super::deb_names(kernel_files);
    let cached = cached_dir(&image_root, &image_key.join("\n"), |dir| {
        for (deb, member) in kernel_files.iter().zip(layout.members()) {
            eprintln!("    dpkg-deb --fsys-tarfile {} ({member})", deb.display());
            unpack(deb, dir, Some(member.as_str()))?;
        }
        Ok(())
    })?;
    let image = image_root.join(&layout.image);
    let config = image_root.join(&layout.config);
    for f in [&image, &config] {
        if !f.is_file() {
            return Err(format!(
                "{} missing in {}",
                f.display(),
                image_key.join(", ")
            ));
        }
    }
    eprintln!(
        "    {} {}: {}{}",
        image_pkg.name,
        image_pkg.version,
        image.display(),
        if cached { " (cached)" } else { "" }
    );
    // The prefix the module's build passes (the stock Makefile's CROSS_COMPILE).
    let vars = match arch {
        "arm64" => crate::build::kernel::Arch::Arm64.make_vars(),
        _ => crate::build::stock_module::armv7_make_vars(),
    };
    let cross = vars
        .iter()
        .find_map(|v| v.strip_prefix("CROSS_COMPILE="))
        .unwrap_or_default();
    let tools = super::toolchain::for_headers(apt, &kdir, cross)?;
    Ok(Kernel {
        flavour: flavour.to_string(),
        version: image_pkg.version,
        release,
        image,
        config,
        kdir,
        tools,
    })
}

/// Where a kernel's image and configuration are, by Debian's packaging of it.
#[derive(Debug, PartialEq, Eq)]
pub struct Layout {
    /// The package with the image.
    pub image_package: String,
    /// The package with the configuration (the same one up to Linux 6.x).
    pub config_package: String,
    /// The image, in its package.
    pub image: String,
    /// The configuration, in its package.
    pub config: String,
}

impl Layout {
    /// Up to Linux 6.x `linux-image-<release>` holds `boot/vmlinuz-<release>` and
    /// `boot/config-<release>`; from 7.x (as trixie-backports packages 7.3.4) it is an
    /// empty package that depends on `linux-binary-<release>`, holding
    /// `usr/lib/modules/<release>/vmlinuz`, and `linux-base-<release>`, holding
    /// `usr/lib/modules/<release>/config` (and the device trees, not unpacked).
    pub fn of(image: &Package, release: &str) -> Self {
        let binary = format!("linux-binary-{release}");
        let base = format!("linux-base-{release}");
        if image.depends.contains(&binary) {
            Layout {
                image_package: binary,
                config_package: base,
                image: format!("usr/lib/modules/{release}/vmlinuz"),
                config: format!("usr/lib/modules/{release}/config"),
            }
        } else {
            Layout {
                image_package: image.name.clone(),
                config_package: image.name.clone(),
                image: format!("boot/vmlinuz-{release}"),
                config: format!("boot/config-{release}"),
            }
        }
    }

    /// The members to unpack, one per package (tar's names, `./` first).
    fn members(&self) -> Vec<String> {
        if self.image_package == self.config_package {
            vec!["./boot".into()]
        } else {
            vec![format!("./{}", self.image), format!("./{}", self.config)]
        }
    }
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
