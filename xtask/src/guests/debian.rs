//! Debian 12's own kernels, headers and `perf` for the end-to-end runs
//! `cargo xtask e2e debian-arm64` and `cargo xtask e2e debian-armhf`
//! (tests/tests/debian_arm64.rs, tests/tests/debian_armhf.rs).
//!
//! Everything comes from Debian's archive through apt, in a private apt state (its own
//! sources list, lists and cache under `<cache root>/debian/apt`, for amd64, arm64 and
//! armhf; the host's apt configuration is never changed). apt's and dpkg's output goes
//! to `<cache root>/debian/apt.log`; progress lines go to stderr.
//!
//! Cached under the cache root, keyed by what they are made of:
//! - `debian/debs/<package>_<version>_<arch>.deb`: every package downloaded, by its
//!   exact version (a new Debian upload is a new file);
//! - `debian/kernels/<package>_<version>/boot/`: the kernel image of a
//!   `linux-image-*` package (only `./boot` is unpacked: the image, its `config-*`);
//! - `debian/headers/<headers package>_<version>/`: the headers, their `-common` part
//!   and the amd64 `linux-kbuild` they depend on, unpacked together (the `scripts` link
//!   is relative) with the absolute links and the Makefile's include made to point into
//!   the extraction;
//! - `debian/perf/<linux-perf version>/`: `linux-perf:arm64` and the library packages
//!   it depends on, unpacked (once per linux-perf version); what goes into the guest is `usr/bin/perf` and the shared
//!   objects its `readelf -d` NEEDED entries lead to, transitively.
//!
//! The apt lists are fetched once; when a version they name is no longer in the archive
//! (Debian replaced it), the download fails, the lists are refreshed and the download is
//! tried once more.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::build::initramfs::{os_codename, private_apt};
use crate::engine::paths::debian_root;

/// The Debian architectures of the private apt state: amd64 first (the host, whose
/// `linux-kbuild` tools run here), then the two guests'.
const ARCHITECTURES: [&str; 3] = ["amd64", "arm64", "armhf"];

/// The metapackages of Debian 12's arm64 kernels: the default (6.1) and the opt-in 6.12.
pub const ARM64_METAPACKAGES: [&str; 2] = ["linux-image-arm64", "linux-image-6.12-arm64"];
/// The log apt's and dpkg's output goes to.
pub fn log_path() -> PathBuf {
    debian_root().join("apt.log")
}

/// The private apt state.
pub struct Apt {
    options: Vec<String>,
    dir: PathBuf,
    /// Every suite for every architecture, as [`private_apt`] wrote the sources.
    full_sources: String,
    /// The state's lock, held while this value lives: two steps that fetch Debian's
    /// packages at once wait for each other.
    _lock: fs::File,
}

/// One package as `apt-cache show` describes it (its first stanza: the candidate).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Package {
    /// `Package:`.
    pub name: String,
    /// `Version:`.
    pub version: String,
    /// `Architecture:` (`all`, `arm64`, …).
    pub arch: String,
    /// `Depends:` (and `Pre-Depends:`), each entry's first alternative, names only
    /// (version constraints and `:any` dropped).
    pub depends: Vec<String>,
}

impl Package {
    /// The file `apt-get download` writes: `<name>_<version>_<arch>.deb`, with an
    /// epoch's colon written `%3a` (apt's own quoting).
    pub fn deb_name(&self) -> String {
        format!(
            "{}_{}_{}.deb",
            self.name,
            self.version.replace(':', "%3a"),
            self.arch
        )
    }

    /// `<name>_<version>` with path-safe characters: a cache key.
    pub fn key(&self) -> String {
        crate::build::kernel::sanitize(&format!("{}_{}", self.name, self.version))
    }
}

/// The first stanza of `apt-cache show` output, parsed.
pub fn parse_show(text: &str) -> Option<Package> {
    let stanza = text.split("\n\n").next()?;
    let mut fields: BTreeMap<&str, String> = BTreeMap::new();
    let mut last: Option<&str> = None;
    for line in stanza.lines() {
        if line.starts_with(' ') || line.starts_with('\t') {
            // A continuation line (Description).
            if let Some(key) = last {
                if let Some(v) = fields.get_mut(key) {
                    v.push(' ');
                    v.push_str(line.trim());
                }
            }
            continue;
        }
        if let Some((key, value)) = line.split_once(':') {
            fields.insert(key, value.trim().to_string());
            last = Some(key);
        }
    }
    let mut depends = Vec::new();
    for key in ["Pre-Depends", "Depends"] {
        if let Some(list) = fields.get(key) {
            depends.extend(parse_depends(list));
        }
    }
    Some(Package {
        name: fields.get("Package")?.clone(),
        version: fields.get("Version")?.clone(),
        arch: fields.get("Architecture")?.clone(),
        depends,
    })
}

/// A `Depends:` value: each entry's first alternative, without version constraint or
/// architecture qualifier (`libc6 (>= 2.34), perl:any, a | b` -> `libc6`, `perl`, `a`).
pub fn parse_depends(list: &str) -> Vec<String> {
    list.split(',')
        .filter_map(|entry| {
            let first = entry.split('|').next()?.trim();
            let name = first.split_whitespace().next()?;
            let name = name.split(':').next()?;
            (!name.is_empty()).then(|| name.to_string())
        })
        .collect()
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

impl Apt {
    /// The private state, its lists fetched when there are none yet.
    pub fn open() -> Result<Self, String> {
        let dir = debian_root().join("apt");
        let lock = crate::engine::lock::exclusive(&dir, "Debian's private apt state")?;
        let codename = os_codename();
        let options = private_apt(
            &dir,
            &ARCHITECTURES,
            &[
                format!("http://deb.debian.org/debian {codename} main"),
                format!("http://deb.debian.org/debian {codename}-updates main"),
                format!("http://deb.debian.org/debian-security {codename}-security main"),
            ],
        )?;
        let mut options = options;
        // Keep apt's binary package cache between calls (without these, every apt-cache
        // call here parsed the lists again: seconds each).
        for (name, file) in [
            ("pkgcache", "pkgcache.bin"),
            ("srcpkgcache", "srcpkgcache.bin"),
        ] {
            options.push(format!("-oDir::Cache::{name}={}", dir.join(file).display()));
        }
        let sources = dir.join("etc/sources.list");
        let full_sources =
            fs::read_to_string(&sources).map_err(|e| format!("{}: {e}", sources.display()))?;
        let apt = Self {
            options,
            dir,
            full_sources,
            _lock: lock,
        };
        // The indices an earlier update had to leave out stay out until the next update.
        let effective = without_indices(&apt.full_sources, &apt.excluded())
            .unwrap_or_else(|| apt.full_sources.clone());
        fs::write(&sources, &effective).map_err(|e| format!("{}: {e}", sources.display()))?;
        let lists: Vec<String> = fs::read_dir(apt.dir.join("lists"))
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        if !has_every_list(&effective, &lists) {
            apt.update()?;
        }
        Ok(apt)
    }

    /// apt's sources list of this state.
    fn sources_path(&self) -> PathBuf {
        self.dir.join("etc/sources.list")
    }

    /// Where [`Apt::update`] keeps the (suite, architecture) indices it had to leave out.
    fn excluded_path(&self) -> PathBuf {
        self.dir.join("excluded-indices")
    }

    fn excluded(&self) -> Vec<(String, String)> {
        fs::read_to_string(self.excluded_path())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(s, a)| (s.to_string(), a.to_string()))
            .collect()
    }

    /// `apt-get update` of the private state.
    pub fn update(&self) -> Result<(), String> {
        eprintln!(
            "    apt-get update (private {} state in {}; log: {})",
            ARCHITECTURES.join("+"),
            self.dir.display(),
            log_path().display()
        );
        let sources = self.sources_path();
        fs::write(&sources, &self.full_sources)
            .map_err(|e| format!("{}: {e}", sources.display()))?;
        let mut log_start = 0;
        let tried = crate::host::apt::with_retries("apt-get update", || {
            log_start = fs::metadata(log_path()).map(|m| m.len()).unwrap_or(0);
            logged(Command::new("apt-get").args(&self.options).arg("update"))
        });
        let Err(why) = tried else {
            let _ = fs::remove_file(self.excluded_path());
            return Ok(());
        };
        // The last try's own lines of the log: which indices the mirror kept failing.
        let log = fs::read(log_path()).unwrap_or_default();
        let last = String::from_utf8_lossy(log.get(log_start as usize..).unwrap_or_default());
        let failed = failed_indices(&last);
        let Some(narrowed) = without_indices(&self.full_sources, &failed) else {
            return Err(why);
        };
        // apt commits a suite's indices together or not at all, so one architecture's
        // inconsistent index (seen: bookworm-security's armhf Packages.xz 356624 bytes
        // where its InRelease says 356976, for days) drops the suite for every
        // architecture. Without that one index the suite serves the others; that
        // architecture's packages then come from the other suites.
        for (suite, arch) in &failed {
            eprintln!(
                "    apt-get update: the mirror's {suite} index for {arch} kept failing (see {}); \
                 {arch} packages come from the other suites, the other architectures' from all",
                log_path().display()
            );
        }
        fs::write(&sources, narrowed).map_err(|e| format!("{}: {e}", sources.display()))?;
        logged(Command::new("apt-get").args(&self.options).arg("update"))?;
        let excluded: String = failed.iter().map(|(s, a)| format!("{s} {a}\n")).collect();
        fs::write(self.excluded_path(), excluded)
            .map_err(|e| format!("{}: {e}", self.excluded_path().display()))
    }

    /// `apt-cache show <package>` (`name:arch` for a foreign architecture), parsed.
    pub fn show(&self, package: &str) -> Result<Package, String> {
        let mut cmd = Command::new("apt-cache");
        cmd.args(&self.options)
            .args(["show", "--no-all-versions", package]);
        let text = output_logged(&mut cmd)?;
        parse_show(&text).ok_or_else(|| format!("apt-cache show {package}: no stanza:\n{text}"))
    }

    /// `apt-cache show` of every package in `packages` in one call, in order.
    pub fn show_all(&self, packages: &[String]) -> Result<Vec<Package>, String> {
        let mut cmd = Command::new("apt-cache");
        cmd.args(&self.options)
            .args(["show", "--no-all-versions"])
            .args(packages);
        let text = output_logged(&mut cmd)?;
        let found: Vec<Package> = text.split("\n\n").filter_map(parse_show).collect();
        if found.len() != packages.len() {
            return Err(format!(
                "apt-cache show {}: {} stanzas for {} packages",
                packages.join(" "),
                found.len(),
                packages.len()
            ));
        }
        Ok(found)
    }

    /// The `.deb` files of `packages` (`name:arch`), downloaded into
    /// `<cache root>/debian/debs` unless there already.
    pub fn fetch(&self, packages: &[String]) -> Result<Vec<PathBuf>, String> {
        match self.try_fetch(packages) {
            Ok(debs) => Ok(debs),
            Err(first) => {
                eprintln!("    download failed ({first}); refreshing the apt lists once");
                self.update()?;
                self.try_fetch(packages)
            }
        }
    }

    fn try_fetch(&self, packages: &[String]) -> Result<Vec<PathBuf>, String> {
        let debs_dir = debian_root().join("debs");
        fs::create_dir_all(&debs_dir).map_err(|e| format!("{}: {e}", debs_dir.display()))?;
        let mut paths = Vec::new();
        let mut missing = Vec::new();
        for (p, package) in packages.iter().zip(self.show_all(packages)?) {
            let path = debs_dir.join(package.deb_name());
            if !path.is_file() {
                // The exact version: `name[:arch]=version`.
                missing.push(match p.split_once(':') {
                    Some((_, arch)) => format!("{}:{arch}={}", package.name, package.version),
                    None => format!("{}={}", package.name, package.version),
                });
            }
            paths.push(path);
        }
        if !missing.is_empty() {
            // Into a scratch directory first: a download cut short never looks cached.
            let partial = debs_dir.join(format!("partial-{}", std::process::id()));
            let _ = fs::remove_dir_all(&partial);
            fs::create_dir_all(&partial).map_err(|e| format!("{}: {e}", partial.display()))?;
            eprintln!("    apt-get download {}", missing.join(" "));
            logged(
                Command::new("apt-get")
                    .args(&self.options)
                    .arg("download")
                    .args(&missing)
                    .current_dir(&partial),
            )?;
            for entry in fs::read_dir(&partial)
                .map_err(|e| format!("{}: {e}", partial.display()))?
                .flatten()
            {
                let to = debs_dir.join(entry.file_name());
                fs::rename(entry.path(), &to).map_err(|e| format!("{}: {e}", to.display()))?;
            }
            let _ = fs::remove_dir_all(&partial);
        }
        for path in &paths {
            if !path.is_file() {
                return Err(format!("{} missing after apt-get download", path.display()));
            }
        }
        Ok(paths)
    }
}

/// The (suite, architecture) of every index apt could not fetch, from its output
/// (`E: Failed to fetch http://…/dists/<suite>/<component>/binary-<arch>/Packages.xz  …`).
fn failed_indices(apt_output: &str) -> Vec<(String, String)> {
    let mut failed = Vec::new();
    for line in apt_output.lines() {
        let Some(url) = line
            .strip_prefix("E: Failed to fetch ")
            .and_then(|rest| rest.split_whitespace().next())
        else {
            continue;
        };
        let Some((_, path)) = url.split_once("/dists/") else {
            continue;
        };
        let parts: Vec<&str> = path.split('/').collect();
        let arch = parts.iter().find_map(|p| p.strip_prefix("binary-"));
        if let (Some(suite), Some(arch)) = (parts.first(), arch) {
            let entry = (suite.to_string(), arch.to_string());
            if !failed.contains(&entry) {
                failed.push(entry);
            }
        }
    }
    failed
}

/// A one-line `deb [arch=a,b,… …] URL SUITE COMPONENT` entry: its suite, its component,
/// and its `arch=` list (empty without one).
fn source_line(line: &str) -> Option<(&str, &str, &str)> {
    let mut words = line.split_whitespace().rev();
    let component = words.next()?;
    let suite = words.next()?;
    let archs = line
        .split_once("arch=")
        .and_then(|(_, rest)| rest.split([' ', ']']).next())
        .unwrap_or_default();
    Some((suite, component, archs))
}

/// Whether `lists` (the file names in apt's lists directory) hold a `Packages` list for
/// every suite and architecture of `sources` (apt names them
/// `<host>_<path>_dists_<suite>_<component>_binary-<arch>_Packages[.<compression>]`).
fn has_every_list(sources: &str, lists: &[String]) -> bool {
    sources
        .lines()
        .filter(|l| !l.trim().is_empty())
        .all(|line| {
            let Some((suite, component, archs)) = source_line(line) else {
                return false;
            };
            archs.split(',').all(|arch| {
                let name = format!("_dists_{suite}_{component}_binary-{arch}_Packages");
                lists.iter().any(|l| l.contains(&name))
            })
        })
}

/// `sources` (one-line `deb [arch=a,b,…] URL SUITE COMPONENTS` entries) with each
/// failed (suite, architecture) taken out of its suite's `arch=` list; `None` when
/// nothing failed that way or a suite would be left with no architecture.
fn without_indices(sources: &str, failed: &[(String, String)]) -> Option<String> {
    if failed.is_empty() {
        return None;
    }
    let mut out = String::new();
    let mut changed = 0;
    for line in sources.lines() {
        let (suite, _, archs) = source_line(line).unwrap_or_default();
        let drop: Vec<&str> = failed
            .iter()
            .filter(|(s, _)| s == suite)
            .map(|(_, a)| a.as_str())
            .collect();
        let new = if drop.is_empty() || archs.is_empty() {
            line.to_string()
        } else {
            let kept: Vec<&str> = archs.split(',').filter(|a| !drop.contains(a)).collect();
            if kept.is_empty() {
                return None;
            }
            changed += drop.len();
            line.replacen(
                &format!("arch={archs}"),
                &format!("arch={}", kept.join(",")),
                1,
            )
        };
        out += &new;
        out.push('\n');
    }
    (changed == failed.len()).then_some(out)
}

/// Runs `cmd` with its stdout and stderr appended to [`log_path`]; fails naming the log.
fn logged(cmd: &mut Command) -> Result<(), String> {
    let log = open_log()?;
    let err = log.try_clone().map_err(|e| e.to_string())?;
    let program = cmd.get_program().to_string_lossy().into_owned();
    let args: Vec<String> = cmd
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .filter(|a| !a.starts_with("-o"))
        .collect();
    let status = cmd
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err)
        .status()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{program} {}` failed ({status}): see {}",
            args.join(" "),
            log_path().display()
        ))
    }
}

/// Runs `cmd` and returns its stdout; its stderr is appended to [`log_path`].
fn output_logged(cmd: &mut Command) -> Result<String, String> {
    let log = open_log()?;
    let program = cmd.get_program().to_string_lossy().into_owned();
    let out = cmd
        .stdin(Stdio::null())
        .stderr(log)
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`{program}` failed ({}): see {}",
            out.status,
            log_path().display()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn open_log() -> Result<fs::File, String> {
    let path = log_path();
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Unpacks `deb` (all of it, or only the members under `only`, e.g. `./boot`) into
/// `into`, logging to [`log_path`].
fn unpack(deb: &Path, into: &Path, only: Option<&str>) -> Result<(), String> {
    fs::create_dir_all(into).map_err(|e| format!("{}: {e}", into.display()))?;
    match only {
        None => logged(Command::new("dpkg-deb").arg("-x").arg(deb).arg(into)),
        Some(member) => logged(Command::new("sh").arg("-c").arg(format!(
            "dpkg-deb --fsys-tarfile '{}' | tar -x -C '{}' '{member}'",
            deb.display(),
            into.display()
        ))),
    }
}

/// `dir` filled by `fill` unless its stamp already says `key`: the cached extraction
/// for that key. `fill` starts from an empty directory.
fn cached_dir(
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
    let kdir_root = debian_root().join("headers").join(headers_pkg.key());
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
    let image_root = debian_root().join("kernels").join(image_pkg.key());
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
    let dir = debian_root().join("perf").join(top.key());
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

/// The `/init` of a Debian run: tests/guest/common.sh, then tests/guest/`<script>`.sh.
fn init_script(script: &str) -> Result<Vec<u8>, String> {
    let guest = crate::engine::paths::workspace_root().join("tests/guest");
    let mut text = crate::build::initramfs::read(&guest.join("common.sh"))?;
    text.extend(crate::build::initramfs::read(
        &guest.join(format!("{script}.sh")),
    )?);
    text.extend_from_slice(b"\nmain\n");
    Ok(text)
}

/// Writes the initramfs `name`.cpio (under target/initramfs) with busybox, `/init`
/// (common.sh + `name`.sh) and `files` (path in the guest, file here; executables
/// under `bin/` and `usr/bin/`, and the dynamic loader, get mode 0755).
fn initramfs(
    name: &str,
    busybox: &Path,
    dirs: &[&'static str],
    files: &[(String, PathBuf)],
) -> Result<PathBuf, String> {
    use crate::build::initramfs::{cpio, read, Entry};
    let mut entries = vec![
        Entry::Dir("bin"),
        Entry::Dir("dev"),
        Entry::CharDev {
            path: "dev/console",
            major: 5,
            minor: 1,
        },
        Entry::Dir("lib"),
        Entry::Dir("lib/modules"),
        Entry::Dir("proc"),
        Entry::Dir("sys"),
        Entry::Dir("tmp"),
        Entry::Dir("usr"),
        Entry::Dir("usr/bin"),
    ];
    entries.extend(dirs.iter().map(|d| Entry::Dir(d)));
    entries.push(Entry::File {
        path: "init".into(),
        mode: 0o755,
        data: init_script(name)?,
    });
    entries.push(Entry::File {
        path: "lib/kmemleak.awk".into(),
        mode: 0o644,
        data: read(&crate::engine::paths::workspace_root().join("tests/guest/kmemleak.awk"))?,
    });
    entries.push(Entry::File {
        path: "bin/busybox".into(),
        mode: 0o755,
        data: read(busybox)?,
    });
    for (path, from) in files {
        let executable =
            path.starts_with("bin/") || path.starts_with("usr/bin/") || path.contains("/ld-");
        entries.push(Entry::File {
            path: path.clone(),
            mode: if executable { 0o755 } else { 0o644 },
            data: read(from)?,
        });
    }
    let archive = cpio(&entries);
    let out = crate::engine::paths::work_dir()
        .join("initramfs")
        .join(format!("{name}.cpio"));
    if let Some(dir) = out.parent() {
        fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    fs::write(&out, &archive).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!(
        "    initramfs: {} ({} KiB, {} files)",
        out.display(),
        archive.len() / 1024,
        files.len() + 3
    );
    Ok(out)
}

/// Runs `cargo test -p pmu-tests --test <test>` with `env` set.
fn cargo_test(test: &str, env: &[(String, String)]) -> Result<(), String> {
    for (k, v) in env {
        eprintln!("    {k}={v}");
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut args = vec![
        "test".to_string(),
        "-p".into(),
        crate::build::images::E2E_CRATE.into(),
        "--test".into(),
        test.into(),
        "--".into(),
        "--test-threads=2".into(),
    ];
    // PMU_E2E_FILTER: only the tests whose names contain it (cargo test's filter).
    if let Ok(filter) = std::env::var("PMU_E2E_FILTER") {
        args.push(filter);
    }
    eprintln!("    $ cargo {}", args.join(" "));
    let status = Command::new(cargo)
        .args(&args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(crate::engine::paths::workspace_root())
        .status()
        .map_err(|e| format!("cannot run cargo test: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the {test} end-to-end tests failed ({status})"))
    }
}

/// The environment variables tests/tests/debian_arm64.rs reads.
pub mod arm64_env {
    /// Debian 12's default arm64 kernel image (`linux-image-arm64`: 6.1).
    pub const KERNEL_DEFAULT: &str = "PMU_DEBIAN_ARM64_KERNEL_DEFAULT";
    /// Its release (`uname -r`).
    pub const RELEASE_DEFAULT: &str = "PMU_DEBIAN_ARM64_RELEASE_DEFAULT";
    /// The opt-in 6.12 arm64 kernel image (`linux-image-6.12-arm64`).
    pub const KERNEL_612: &str = "PMU_DEBIAN_ARM64_KERNEL_612";
    /// Its release.
    pub const RELEASE_612: &str = "PMU_DEBIAN_ARM64_RELEASE_612";
    /// The initramfs (both modules, perf, pmu-demo, el0-probe).
    pub const INITRAMFS: &str = "PMU_DEBIAN_ARM64_INITRAMFS";
    /// The version of Debian's perf in it.
    pub const PERF_VERSION: &str = "PMU_DEBIAN_PERF_VERSION";
}

/// The environment variables tests/tests/debian_armhf.rs reads.
pub mod armhf_env {
    /// Debian 12's armmp kernel image (`linux-image-armmp`, a zImage).
    pub const KERNEL: &str = "PMU_DEBIAN_ARMHF_KERNEL";
    /// Its release (`uname -r`).
    pub const RELEASE: &str = "PMU_DEBIAN_ARMHF_RELEASE";
    /// Debian 12's armmp-lpae kernel image (`linux-image-armmp-lpae`: LPAE page tables,
    /// for Cortex-A7/A15/A17 machines with more than 4 GiB).
    pub const KERNEL_LPAE: &str = "PMU_DEBIAN_ARMHF_KERNEL_LPAE";
    /// Its release.
    pub const RELEASE_LPAE: &str = "PMU_DEBIAN_ARMHF_RELEASE_LPAE";
    /// The initramfs (the ARMv7 stock module, the ARMv7 pmu-demo).
    pub const INITRAMFS: &str = "PMU_DEBIAN_ARMHF_INITRAMFS";
}

/// `cargo xtask e2e debian-arm64`: Debian 12's default (6.1) and 6.12 arm64 kernels, the
/// stock module built against each one's headers, Debian's perf, pmu-demo and el0-probe
/// in one initramfs; then tests/tests/debian_arm64.rs boots them.
pub fn run_arm64() -> Result<(), String> {
    use crate::build::kernel::Arch;
    let started = std::time::Instant::now();
    let apt = Apt::open()?;
    let [default, newer] = ARM64_METAPACKAGES.map(|meta| kernel(&apt, meta, "arm64", "arm64"));
    let (default, newer) = (default?, newer?);
    if default.release == newer.release {
        return Err(format!(
            "linux-image-arm64 and linux-image-6.12-arm64 are the same kernel {}",
            default.release
        ));
    }
    let mut files = Vec::new();
    for k in [&default, &newer] {
        let ko = stock_module(k, &Arch::Arm64.make_vars())?;
        files.push((guest_module_path(&k.release), ko));
    }
    let perf = perf(&apt)?;
    files.extend(perf.files.iter().cloned());
    files.push((
        "bin/pmu-demo".into(),
        crate::build::initramfs::pmu_demo(Arch::Arm64)?,
    ));
    files.push((
        "bin/el0-probe".into(),
        crate::build::initramfs::guest_probe(Arch::Arm64, "el0-probe")?,
    ));
    files.push((
        "bin/debian-block".into(),
        crate::build::initramfs::guest_probe(Arch::Arm64, "debian-block")?,
    ));
    let busybox = crate::build::initramfs::debian_busybox("arm64")?;
    let initramfs = initramfs("debian-arm64", &busybox, &[GUEST_LIBDIR], &files)?;
    eprintln!(
        "    artefacts ready in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let path = |p: &Path| p.display().to_string();
    cargo_test(
        "debian_arm64",
        &[
            (arm64_env::KERNEL_DEFAULT.into(), path(&default.image)),
            (arm64_env::RELEASE_DEFAULT.into(), default.release.clone()),
            (arm64_env::KERNEL_612.into(), path(&newer.image)),
            (arm64_env::RELEASE_612.into(), newer.release.clone()),
            (arm64_env::INITRAMFS.into(), path(&initramfs)),
            (arm64_env::PERF_VERSION.into(), perf.version.clone()),
        ],
    )
}

/// `cargo xtask e2e debian-armhf`: Debian 12's two armhf kernels (armmp, armmp-lpae),
/// the ARMv7 flavour of the stock module built against each one's headers, the static
/// ARMv7 pmu-demo; then tests/tests/debian_armhf.rs boots them on `-M virt -cpu
/// cortex-a15`.
pub fn run_armhf() -> Result<(), String> {
    let started = std::time::Instant::now();
    let apt = Apt::open()?;
    let armmp = kernel(&apt, "linux-image-armmp", "armhf", "armmp")?;
    let lpae = kernel(&apt, "linux-image-armmp-lpae", "armhf", "armmp-lpae")?;
    let mut files = vec![("bin/pmu-demo".into(), crate::build::arm32_demo::armv7()?)];
    for k in [&armmp, &lpae] {
        let ko = stock_module(k, &crate::build::stock_module::armv7_make_vars())?;
        files.push((guest_module_path(&k.release), ko));
    }
    // Debian's armel busybox (ARMv5TE, EABI soft-float) runs on an armhf system.
    let busybox = crate::build::initramfs::debian_busybox("armel")?;
    let initramfs = initramfs("debian-armhf", &busybox, &[], &files)?;
    eprintln!(
        "    artefacts ready in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    cargo_test(
        "debian_armhf",
        &[
            (armhf_env::KERNEL.into(), armmp.image.display().to_string()),
            (armhf_env::RELEASE.into(), armmp.release.clone()),
            (
                armhf_env::KERNEL_LPAE.into(),
                lpae.image.display().to_string(),
            ),
            (armhf_env::RELEASE_LPAE.into(), lpae.release.clone()),
            (armhf_env::INITRAMFS.into(), initramfs.display().to_string()),
        ],
    )
}

/// The step of `cargo xtask e2e debian-arm64` (and of `cargo xtask test`).
pub fn arm64_step() -> crate::engine::step::Step {
    crate::engine::step::Step::func(
        "Debian 12's own arm64 kernels (linux-image-arm64: 6.1, linux-image-6.12-arm64) with the stock module built against their headers, Debian's perf, pmu-demo (apt, cached; tests/tests/debian_arm64.rs)",
        run_arm64,
    )
    .needs_programs(&[
        "apt-get",
        "apt-cache",
        "dpkg-deb",
        "tar",
        "readelf",
        "make",
        "gcc",
        "aarch64-linux-gnu-gcc",
        "modinfo",
        // The idle device tree (tests/src/lib.rs `arm64_idle_dtb`).
        "dtc",
        pmu_tests::QEMU_AARCH64,
    ])
}

/// The step of `cargo xtask e2e debian-armhf` (and of `cargo xtask test`).
pub fn armhf_step() -> crate::engine::step::Step {
    crate::engine::step::Step::func(
        "Debian 12's own armhf kernels (linux-image-armmp, linux-image-armmp-lpae) on virt -cpu cortex-a15 with the ARMv7 stock module built against their headers, the ARMv7 pmu-demo (apt, cached; tests/tests/debian_armhf.rs)",
        run_armhf,
    )
    .needs_programs(&[
        "apt-get",
        "apt-cache",
        "dpkg-deb",
        "tar",
        "make",
        "gcc",
        "arm-linux-gnueabi-gcc",
        "modinfo",
        pmu_tests::QEMU_ARM,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// apt commits a suite's indices together: one architecture's index that the
    /// mirror keeps serving inconsistent is taken out of that suite's `arch=` list, the
    /// other suites and architectures untouched.
    #[test]
    fn an_index_the_mirror_keeps_failing_is_left_out_of_its_suite_only() {
        // apt 2.6's output on 2026-12-04/05 (this project's machines, deb.debian.org):
        // bookworm-security's armhf Packages.xz did not match its InRelease.
        let output = "\
Get:5 http://deb.debian.org/debian-security bookworm-security/main armhf Packages [357 kB]
Err:5 http://deb.debian.org/debian-security bookworm-security/main armhf Packages
  File has unexpected size (356624 != 356976). Mirror sync in progress? [IP: 203.0.113.80 80]
E: Failed to fetch http://deb.debian.org/debian-security/dists/bookworm-security/main/binary-armhf/Packages.xz  File has unexpected size (356624 != 356976). Mirror sync in progress? [IP: 203.0.113.80 80]
E: Some index files failed to download. They have been ignored, or old ones used instead.
";
        let failed = failed_indices(output);
        assert_eq!(
            failed,
            [("bookworm-security".to_string(), "armhf".to_string())]
        );
        let key = "signed-by=/usr/share/keyrings/debian-archive-keyring.gpg";
        let sources = format!(
            "deb [arch=amd64,arm64,armhf {key}] http://deb.debian.org/debian bookworm main\n\
             deb [arch=amd64,arm64,armhf {key}] http://deb.debian.org/debian bookworm-updates main\n\
             deb [arch=amd64,arm64,armhf {key}] http://deb.debian.org/debian-security bookworm-security main\n"
        );
        let narrowed = without_indices(&sources, &failed).unwrap();
        assert_eq!(
            narrowed.lines().collect::<Vec<_>>(),
            [
                format!("deb [arch=amd64,arm64,armhf {key}] http://deb.debian.org/debian bookworm main"),
                format!("deb [arch=amd64,arm64,armhf {key}] http://deb.debian.org/debian bookworm-updates main"),
                format!("deb [arch=amd64,arm64 {key}] http://deb.debian.org/debian-security bookworm-security main"),
            ]
        );
        // No failed index named: the update's error stands; nor is a suite left with
        // no architecture at all.
        assert_eq!(without_indices(&sources, &[]), None);
        let one = "deb [arch=armhf] http://deb.debian.org/debian-security bookworm-security main\n";
        assert_eq!(without_indices(one, &failed), None);
        assert_eq!(
            without_indices(
                "deb [arch=amd64,armhf] http://x bookworm-security main\n",
                &failed
            )
            .as_deref(),
            Some("deb [arch=amd64] http://x bookworm-security main\n")
        );
    }

    /// The lists apt wrote for this state (file names as on 2026-12-05): an update
    /// that lost bookworm-security left its lists out, so the state is incomplete and
    /// updated again; once armhf is left out of that suite, its amd64 and arm64 lists
    /// complete it.
    #[test]
    fn a_state_is_complete_with_a_list_per_suite_and_architecture() {
        let line = |archs: &str, url: &str, suite: &str| {
            format!("deb [arch={archs} signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] {url} {suite} main")
        };
        let full = [
            line(
                "amd64,arm64,armhf",
                "http://deb.debian.org/debian",
                "bookworm",
            ),
            line(
                "amd64,arm64,armhf",
                "http://deb.debian.org/debian",
                "bookworm-updates",
            ),
            line(
                "amd64,arm64,armhf",
                "http://deb.debian.org/debian-security",
                "bookworm-security",
            ),
        ]
        .join("\n");
        let mut lists: Vec<String> = ["bookworm", "bookworm-updates"]
            .iter()
            .flat_map(|suite| {
                ["amd64", "arm64", "armhf"].map(|arch| {
                    format!("deb.debian.org_debian_dists_{suite}_main_binary-{arch}_Packages.lz4")
                })
            })
            .collect();
        lists.push("deb.debian.org_debian_dists_bookworm_InRelease".into());
        assert!(!has_every_list(&full, &lists));
        for arch in ["amd64", "arm64"] {
            lists.push(format!(
                "deb.debian.org_debian-security_dists_bookworm-security_main_binary-{arch}_Packages.lz4"
            ));
        }
        assert!(
            !has_every_list(&full, &lists),
            "armhf's security list is missing"
        );
        let failed = [("bookworm-security".to_string(), "armhf".to_string())];
        let narrowed = without_indices(&full, &failed).unwrap();
        assert!(has_every_list(&narrowed, &lists));
    }

    /// `apt-cache show linux-perf:arm64` on Debian 12 (2026-12-04), shortened.
    const PERF_SHOW: &str = "Package: linux-perf\n\
Source: linux\n\
Version: 6.1.192-3\n\
Installed-Size: 10404\n\
Maintainer: Debian Kernel Team <debian-kernel@lists.debian.org>\n\
Architecture: arm64\n\
Depends: libbabeltrace1 (>= 1.5.4), libc6 (>= 2.34), libcap2 (>= 1:2.10), libdw1 (>= 0.157), libelf1 (>= 0.144), liblzma5 (>= 5.1.1alpha+20120614), libnuma1 (>= 2.0.11), libopencsd1 (>= 1.3.3), libperl5.36 (>= 5.36.0), libpython3.11 (>= 3.11.0), libslang2 (>= 2.2.4), libunwind8, libzstd1 (>= 1.5.2), zlib1g (>= 1:1.2.3.3), perl:any, python3:any\n\
Description: Performance analysis tools for Linux\n \
This package contains the 'perf' performance analysis tools for Linux.\n\
\n\
Package: linux-perf\n\
Version: 6.1.190-1\n\
Architecture: arm64\n";

    #[test]
    fn show_parses_the_candidate_stanza() {
        let p = parse_show(PERF_SHOW).unwrap();
        assert_eq!(p.name, "linux-perf");
        assert_eq!(p.version, "6.1.192-3");
        assert_eq!(p.arch, "arm64");
        assert_eq!(p.depends.len(), 16);
        assert_eq!(p.depends[0], "libbabeltrace1");
        assert_eq!(p.depends[13], "zlib1g");
        assert_eq!(p.depends[14], "perl");
        assert_eq!(p.deb_name(), "linux-perf_6.1.192-3_arm64.deb");
    }

    /// apt-get download's file name quotes an epoch's colon (busybox-static's
    /// `1:1.35.0-4+deb12u1+b1` on Debian 12).
    #[test]
    fn deb_names_quote_the_epoch() {
        let p = Package {
            name: "busybox-static".into(),
            version: "1:1.35.0-4+deb12u1+b1".into(),
            arch: "arm64".into(),
            depends: vec![],
        };
        assert_eq!(
            p.deb_name(),
            "busybox-static_1%3a1.35.0-4+deb12u1+b1_arm64.deb"
        );
        assert_eq!(p.key(), "busybox-static_1_1.35.0-4+deb12u1+b1");
    }

    #[test]
    fn depends_take_the_first_alternative() {
        assert_eq!(
            parse_depends("linux-base (>= 4.12~), linux-image-6.12.118+deb12-arm64 (= 6.12.118-1~deb12u1) | linux-image-6.12.118+deb12-arm64-unsigned (= 6.12.118-1~deb12u1), gcc-12"),
            ["linux-base", "linux-image-6.12.118+deb12-arm64", "gcc-12"]
        );
    }

    /// The metapackages as Debian 12 lists them (`apt-cache show`, 2026-12-04).
    #[test]
    fn metapackages_name_the_abi() {
        let meta = |dep: &str| Package {
            name: "m".into(),
            version: "1".into(),
            arch: "arm64".into(),
            depends: parse_depends(dep),
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
