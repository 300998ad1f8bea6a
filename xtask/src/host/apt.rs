//! The host's apt: what dpkg has installed, and the private apt states xtask fetches
//! Debian's packages through ([`pmu_qemu::apt`]: suites × architectures, updates tried
//! three times, an index the mirror keeps failing left out): one per Debian release whose
//! kernels, headers and `perf` the guests use ([`debian`], [`Release`]), and one per guest
//! architecture for its static busybox ([`busybox`], the host's release). The host's apt configuration is never changed.

use std::fs;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::Command;

use pmu_qemu::apt::{Apt, Config};

use crate::engine::paths::{cache_root, debian_root};

/// The installed version of a Debian package, if installed.
pub fn package_version(package: &str) -> Option<String> {
    let out = Command::new("dpkg-query")
        .args(["-W", "-f=${Status}\t${Version}", package])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let (status, version) = text.split_once('\t')?;
    (out.status.success() && status.ends_with(" installed")).then(|| version.to_string())
}

/// The host's release as /etc/os-release names it (`VERSION_CODENAME`), if it does.
pub fn os_release_codename() -> Option<String> {
    fs::read_to_string("/etc/os-release")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("VERSION_CODENAME=")
                .map(|v| v.trim_matches('"').to_string())
        })
}

/// The suite the private states fetch from: the host's release ([`os_release_codename`]),
/// `bookworm` when it names none.
pub fn os_codename() -> String {
    os_release_codename().unwrap_or_else(|| "bookworm".into())
}

/// The Debian architectures of Debian's kernels' state: amd64 first (the host, whose
/// `linux-kbuild` tools run here), then the two guests'.
const ARCHITECTURES: [&str; 3] = ["amd64", "arm64", "armhf"];

/// The log apt's and dpkg's output goes to, for Debian's kernels' state.
pub fn log_path() -> PathBuf {
    debian_root().join("apt.log")
}

/// A private apt state held locked: two steps that fetch through it at once wait for
/// each other.
pub struct Locked {
    apt: Apt,
    _lock: fs::File,
}

impl Deref for Locked {
    type Target = Apt;
    fn deref(&self) -> &Apt {
        &self.apt
    }
}

/// A Debian release whose kernels, headers and `perf` the guests boot and build against,
/// each through its own private apt state ([`debian`]), whatever the host runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    /// Debian 12: Linux 6.1 (the default kernel) and the opt-in 6.12.
    Bookworm,
    /// Debian 13: Linux 6.12, and from its backports the newest Linux Debian ships (7.3).
    Trixie,
}

impl Release {
    /// `bookworm`, `trixie`.
    pub fn codename(self) -> &'static str {
        match self {
            Release::Bookworm => "bookworm",
            Release::Trixie => "trixie",
        }
    }

    /// `Debian 12`, `Debian 13`.
    pub fn name(self) -> &'static str {
        match self {
            Release::Bookworm => "Debian 12",
            Release::Trixie => "Debian 13",
        }
    }

    /// The apt sources of the release's state: the release, `-updates`, `-security`, and
    /// for Debian 13 its `-backports` (apt's default pin keeps backports out of the
    /// candidates unless a package exists only there or is named with its version).
    pub fn suites(self) -> Vec<String> {
        let c = self.codename();
        let mut suites = vec![
            format!("http://deb.debian.org/debian {c} main"),
            format!("http://deb.debian.org/debian {c}-updates main"),
            format!("http://deb.debian.org/debian-security {c}-security main"),
        ];
        if self == Release::Trixie {
            suites.push(format!("http://deb.debian.org/debian {c}-backports main"));
        }
        suites
    }

    /// The state's directory under the cache's Debian root (Debian 12's keeps the name it
    /// had when it was the only one).
    fn dir(self) -> PathBuf {
        match self {
            Release::Bookworm => debian_root().join("apt"),
            Release::Trixie => debian_root().join("apt-trixie"),
        }
    }
}

/// The state of `release`'s kernels, headers and `perf` ([`Release::suites`], for
/// [`ARCHITECTURES`]; its directory under `<cache root>/debian/`, the downloads of every
/// release in `debian/debs`, the log [`log_path`]); lists fetched when there are none yet.
pub fn debian(release: Release) -> Result<Locked, String> {
    let dir = release.dir();
    let lock =
        crate::engine::lock::exclusive(&dir, &format!("{}'s private apt state", release.name()))?;
    let apt = Apt::open(
        Config {
            dir,
            debs: debian_root().join("debs"),
            log: log_path(),
            archs: ARCHITECTURES.map(String::from).to_vec(),
            suites: release.suites(),
            progress: "    ".into(),
        },
        false,
    )?;
    Ok(Locked { apt, _lock: lock })
}

/// Debian's busybox-static for the Debian architecture `arch` (`arm64`, `armel`: the
/// ARMv5TE soft-float port, which runs on the ARM1176), fetched once through a private
/// state of its own in the cache root (`apt-<arch>/`) and unpacked there
/// (`apt-<arch>/busybox-static/bin/busybox`).
pub fn busybox(arch: &str) -> Result<PathBuf, String> {
    let dir = cache_root().join(format!("apt-{arch}"));
    let extracted = dir.join("busybox-static");
    let binary = extracted.join("bin/busybox");
    // Another step may be fetching it right now (the guest steps run in two lanes).
    let _lock = crate::engine::lock::exclusive(&dir, &format!("the {arch} busybox download"))?;
    if binary.is_file() {
        println!("    {arch} busybox (cached): {}", binary.display());
        return Ok(binary);
    }
    let codename = os_codename();
    let apt = Apt::open(
        Config {
            dir: dir.clone(),
            debs: dir.join("downloads"),
            log: dir.join("apt.log"),
            archs: vec![arch.to_string()],
            suites: vec![
                format!("http://deb.debian.org/debian {codename} main"),
                format!("http://deb.debian.org/debian {codename}-updates main"),
            ],
            progress: "    ".into(),
        },
        false,
    )?;
    let debs = apt.fetch(&[format!("busybox-static:{arch}")])?;
    let deb = debs
        .first()
        .ok_or("apt-get download busybox-static: no .deb")?;
    let _ = fs::remove_dir_all(&extracted);
    unpack(apt.log(), deb, &extracted)?;
    if !binary.is_file() {
        return Err(format!("bin/busybox missing in {}", deb.display()));
    }
    println!(
        "    {arch} busybox: {} (from {})",
        binary.display(),
        deb.file_name().unwrap_or_default().to_string_lossy()
    );
    Ok(binary)
}

/// `dpkg-deb -x deb into`, its output in `log`.
fn unpack(log: &Path, deb: &Path, into: &Path) -> Result<(), String> {
    fs::create_dir_all(into).map_err(|e| format!("{}: {e}", into.display()))?;
    println!("    dpkg-deb -x {}", deb.display());
    pmu_qemu::apt::logged(log, Command::new("dpkg-deb").arg("-x").arg(deb).arg(into))
}
