//! A private apt state: Debian's packages fetched with the host's `apt-get` and
//! `apt-cache`, but with their own sources list, lists and cache in one directory, so the
//! host's apt configuration is never read or changed.
//!
//! A state is made of suites × architectures ([`Config`]): one `deb [arch=…]` line per
//! suite, checked against the Debian archive keyring ([`KEYRING`]). Its lists are fetched
//! when a suite or architecture has none yet, or when asked. `apt-get update` is tried
//! three times (a mirror caught mid-sync fails once and not again); an index the mirror
//! keeps failing is left out of its suite (that architecture's packages then come from
//! the other suites) until the next update. Downloads go into a directory of `.deb`
//! files named as apt names them, by exact version, so a file there is never fetched
//! again. apt's and dpkg's output goes to a log; progress lines go to stderr.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The Debian archive keyring every source is checked against.
pub const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// What a private apt state is made of, and where it lives.
#[derive(Clone, Debug)]
pub struct Config {
    /// The state's directory: `etc/sources.list`, `lists/`, apt's caches.
    pub dir: PathBuf,
    /// Where downloaded `.deb` files are kept.
    pub debs: PathBuf,
    /// The log apt's and dpkg's output is appended to.
    pub log: PathBuf,
    /// Debian architectures, the first one apt's native architecture.
    pub archs: Vec<String>,
    /// One `<uri> <suite> <components>` per suite (`http://deb.debian.org/debian
    /// bookworm main`).
    pub suites: Vec<String>,
    /// What each progress line on stderr starts with (`pmu-qemu: `, or an indent).
    pub progress: String,
}

/// An open private apt state.
pub struct Apt {
    options: Vec<String>,
    config: Config,
    /// Every suite for every architecture, as [`Config`] asks.
    full_sources: String,
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

/// `spec` (`name`, `name:arch`, either with `=version`) pinned to `version`:
/// `name[:arch]=version`, what `apt-get download` fetches exactly. The version may carry
/// an epoch (`1:1.36.1-9`), so the architecture is read before the `=`, never after it.
pub fn exact_spec(spec: &str, version: &str) -> String {
    let name_arch = spec.split_once('=').map_or(spec, |(n, _)| n);
    format!("{name_arch}={version}")
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

impl Apt {
    /// The state `config` describes, its lists fetched when a suite or architecture has
    /// none yet, or when `update` asks.
    pub fn open(config: Config, update: bool) -> Result<Self, String> {
        let dir = &config.dir;
        for d in ["lists/partial", "archives/partial", "etc"] {
            let d = dir.join(d);
            fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        let full_sources: String = config
            .suites
            .iter()
            .map(|s| {
                format!(
                    "deb [arch={} signed-by={KEYRING}] {s}\n",
                    config.archs.join(",")
                )
            })
            .collect();
        let a = dir.display();
        let mut options = vec![
            format!("-oDir::State={a}"),
            format!("-oDir::State::Lists={a}/lists"),
            "-oDir::State::status=/dev/null".into(),
            format!("-oDir::Cache={a}"),
            format!("-oDir::Cache::archives={a}/archives"),
            // apt's binary package caches kept between calls (without them every
            // apt-cache call parses the lists again: seconds each).
            format!("-oDir::Cache::pkgcache={a}/pkgcache.bin"),
            format!("-oDir::Cache::srcpkgcache={a}/srcpkgcache.bin"),
            format!("-oDir::Etc::SourceList={a}/etc/sources.list"),
            "-oDir::Etc::SourceParts=/nonexistent".into(),
            "-oDir::Etc::Preferences=/nonexistent".into(),
            "-oDir::Etc::PreferencesParts=/nonexistent".into(),
            format!(
                "-oAPT::Architecture={}",
                config.archs.first().map_or("amd64", String::as_str)
            ),
        ];
        options.extend(
            config
                .archs
                .iter()
                .map(|arch| format!("-oAPT::Architectures::={arch}")),
        );
        options.extend(
            [
                "-oAcquire::IndexTargets::deb::DEP-11::DefaultEnabled=false",
                "-oAcquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false",
                "-oAcquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled=false",
                "-oAPT::Sandbox::User=root",
                "-q",
            ]
            .map(String::from),
        );
        let apt = Self {
            options,
            config,
            full_sources,
        };
        // The indices an earlier update had to leave out stay out until the next update.
        let effective = without_indices(&apt.full_sources, &apt.excluded())
            .unwrap_or_else(|| apt.full_sources.clone());
        let sources = apt.sources_path();
        fs::write(&sources, &effective).map_err(|e| format!("{}: {e}", sources.display()))?;
        let lists: Vec<String> = fs::read_dir(apt.config.dir.join("lists"))
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        if update || !has_every_list(&effective, &lists) {
            apt.update()?;
        }
        Ok(apt)
    }

    /// The same state with `suite` as apt's default release (`-oAPT::Default-Release`,
    /// what `apt-get -t <suite>` sets): its packages get priority 990, so the candidate
    /// of every package that `suite` carries is `suite`'s (a backports suite, pinned at
    /// 100 otherwise, then gives its version of a package and of the libraries that
    /// package was built against). Same lists, same downloads.
    pub fn with_default_release(&self, suite: &str) -> Self {
        let mut options = self.options.clone();
        options.push(format!("-oAPT::Default-Release={suite}"));
        Self {
            options,
            config: self.config.clone(),
            full_sources: self.full_sources.clone(),
        }
    }

    /// The log apt's and dpkg's output goes to.
    pub fn log(&self) -> &Path {
        &self.config.log
    }

    /// apt's sources list of this state.
    fn sources_path(&self) -> PathBuf {
        self.config.dir.join("etc/sources.list")
    }

    /// Where [`Apt::update`] keeps the (suite, architecture) indices it had to leave out.
    fn excluded_path(&self) -> PathBuf {
        self.config.dir.join("excluded-indices")
    }

    fn excluded(&self) -> Vec<(String, String)> {
        fs::read_to_string(self.excluded_path())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(s, a)| (s.to_string(), a.to_string()))
            .collect()
    }

    /// `apt-get update` of the state, tried three times; an index the mirror keeps
    /// failing is then left out of its suite.
    pub fn update(&self) -> Result<(), String> {
        let log = self.log();
        eprintln!(
            "{}apt-get update (private {} state in {}; log: {})",
            self.config.progress,
            self.config.archs.join("+"),
            self.config.dir.display(),
            log.display()
        );
        let sources = self.sources_path();
        fs::write(&sources, &self.full_sources)
            .map_err(|e| format!("{}: {e}", sources.display()))?;
        let mut log_start = 0;
        let tried = with_retries(&self.config.progress, "apt-get update", || {
            log_start = fs::metadata(log).map(|m| m.len()).unwrap_or(0);
            logged(
                log,
                Command::new("apt-get").args(&self.options).arg("update"),
            )
        });
        let Err(why) = tried else {
            let _ = fs::remove_file(self.excluded_path());
            return Ok(());
        };
        // The last try's own lines of the log: which indices the mirror kept failing.
        let text = fs::read(log).unwrap_or_default();
        let last = String::from_utf8_lossy(text.get(log_start as usize..).unwrap_or_default());
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
                "{}apt-get update: the mirror's {suite} index for {arch} kept failing (see {}); \
                 {arch} packages come from the other suites, the other architectures' from all",
                self.config.progress,
                log.display()
            );
        }
        fs::write(&sources, narrowed).map_err(|e| format!("{}: {e}", sources.display()))?;
        logged(
            log,
            Command::new("apt-get").args(&self.options).arg("update"),
        )?;
        let excluded: String = failed.iter().map(|(s, a)| format!("{s} {a}\n")).collect();
        fs::write(self.excluded_path(), excluded)
            .map_err(|e| format!("{}: {e}", self.excluded_path().display()))
    }

    /// `apt-cache show <package>` (`name:arch` for a foreign architecture), parsed.
    pub fn show(&self, package: &str) -> Result<Package, String> {
        let mut cmd = Command::new("apt-cache");
        cmd.args(&self.options)
            .args(["show", "--no-all-versions", package]);
        let text = output_logged(self.log(), &mut cmd)?;
        parse_show(&text).ok_or_else(|| format!("apt-cache show {package}: no stanza:\n{text}"))
    }

    /// `apt-cache show` of every package in `packages` in one call, in order.
    pub fn show_all(&self, packages: &[String]) -> Result<Vec<Package>, String> {
        let mut cmd = Command::new("apt-cache");
        cmd.args(&self.options)
            .args(["show", "--no-all-versions"])
            .args(packages);
        let text = output_logged(self.log(), &mut cmd)?;
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

    /// The `.deb` files of the candidates of `packages` (`name` or `name:arch`),
    /// downloaded into [`Config::debs`] unless there already. When a version the lists
    /// name is no longer in the archive (Debian replaced it), the download fails: the
    /// lists are refreshed and the download tried once more.
    pub fn fetch(&self, packages: &[String]) -> Result<Vec<PathBuf>, String> {
        match self.try_fetch(packages) {
            Ok(debs) => Ok(debs),
            Err(first) => {
                eprintln!(
                    "{}download failed ({first}); refreshing the apt lists once",
                    self.config.progress
                );
                self.update()?;
                self.try_fetch(packages)
            }
        }
    }

    fn try_fetch(&self, packages: &[String]) -> Result<Vec<PathBuf>, String> {
        let debs_dir = &self.config.debs;
        fs::create_dir_all(debs_dir).map_err(|e| format!("{}: {e}", debs_dir.display()))?;
        let mut paths = Vec::new();
        let mut missing = Vec::new();
        for (p, package) in packages.iter().zip(self.show_all(packages)?) {
            let path = debs_dir.join(package.deb_name());
            if !path.is_file() {
                missing.push(exact_spec(p, &package.version));
            }
            paths.push(path);
        }
        if !missing.is_empty() {
            // Into a scratch directory first: a download cut short never looks cached.
            let partial = debs_dir.join(format!("partial-{}", std::process::id()));
            let _ = fs::remove_dir_all(&partial);
            fs::create_dir_all(&partial).map_err(|e| format!("{}: {e}", partial.display()))?;
            eprintln!(
                "{}apt-get download {}",
                self.config.progress,
                missing.join(" ")
            );
            logged(
                self.log(),
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

/// Waits before the second and third try of a mirror download.
const RETRY_WAITS: [Duration; 2] = [Duration::from_secs(20), Duration::from_secs(60)];

/// `attempt` up to three times, waiting 20 s and then 60 s between tries, each retry one
/// line on stderr starting with `progress`: Debian's mirrors are sometimes caught
/// mid-sync (apt: "File has unexpected size … Mirror sync in progress?"), which a later
/// try does not meet.
pub fn with_retries(
    progress: &str,
    what: &str,
    attempt: impl FnMut() -> Result<(), String>,
) -> Result<(), String> {
    retry_after(&RETRY_WAITS, progress, what, attempt)
}

/// [`with_retries`] with its waits given.
fn retry_after(
    waits: &[Duration],
    progress: &str,
    what: &str,
    mut attempt: impl FnMut() -> Result<(), String>,
) -> Result<(), String> {
    let mut result = attempt();
    for (n, wait) in waits.iter().enumerate() {
        let Err(why) = &result else { break };
        eprintln!(
            "{progress}{what} failed ({why}); trying again in {} s (try {} of {})",
            wait.as_secs(),
            n + 2,
            waits.len() + 1
        );
        std::thread::sleep(*wait);
        result = attempt();
    }
    result
}

/// Runs `cmd` with its stdout and stderr appended to `log`; fails naming the log.
pub fn logged(log: &Path, cmd: &mut Command) -> Result<(), String> {
    let file = open_log(log)?;
    let err = file.try_clone().map_err(|e| e.to_string())?;
    let program = cmd.get_program().to_string_lossy().into_owned();
    let args: Vec<String> = cmd
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .filter(|a| !a.starts_with("-o"))
        .collect();
    let status = cmd
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .status()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{program} {}` failed ({status}): see {}",
            args.join(" "),
            log.display()
        ))
    }
}

/// Runs `cmd` and returns its stdout; its stderr is appended to `log`.
pub fn output_logged(log: &Path, cmd: &mut Command) -> Result<String, String> {
    let file = open_log(log)?;
    let program = cmd.get_program().to_string_lossy().into_owned();
    let out = cmd
        .stdin(Stdio::null())
        .stderr(file)
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`{program}` failed ({}): see {}",
            out.status,
            log.display()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn open_log(path: &Path) -> Result<fs::File, String> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))
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
    }

    /// `apt-get download` takes `name[:arch]=version`; an epoch's colon is part of the
    /// version (busybox-static `1:1.35.0-4+deb12u1+b1`), and a spec that already names
    /// a version (`linux-perf:arm64=7.3.4-1~bpo13+1`, trixie-backports) keeps one.
    #[test]
    fn exact_specs_name_one_version() {
        assert_eq!(
            exact_spec("busybox-static:arm64", "1:1.35.0-4+deb12u1+b1"),
            "busybox-static:arm64=1:1.35.0-4+deb12u1+b1"
        );
        assert_eq!(
            exact_spec("linux-source-7.3", "7.3.4-1~bpo13+1"),
            "linux-source-7.3=7.3.4-1~bpo13+1"
        );
        assert_eq!(
            exact_spec("linux-perf:armhf=7.3.4-1~bpo13+1", "7.3.4-1~bpo13+1"),
            "linux-perf:armhf=7.3.4-1~bpo13+1"
        );
        assert_eq!(exact_spec("libfoo=1:2.0-1", "1:2.0-1"), "libfoo=1:2.0-1");
    }

    #[test]
    fn depends_take_the_first_alternative() {
        assert_eq!(
            parse_depends("linux-base (>= 4.12~), linux-image-6.12.118+deb12-arm64 (= 6.12.118-1~deb12u1) | linux-image-6.12.118+deb12-arm64-unsigned (= 6.12.118-1~deb12u1), gcc-12"),
            ["linux-base", "linux-image-6.12.118+deb12-arm64", "gcc-12"]
        );
    }

    /// A mirror caught mid-sync fails the first try (apt: "File has unexpected size …
    /// Mirror sync in progress?", seen on a fresh-machine check): the second try's
    /// success is the result; three failures give the last one's reason.
    #[test]
    fn apt_updates_are_tried_three_times() {
        let no_wait = [std::time::Duration::ZERO; 2];
        let mut tries = 0;
        let ok = retry_after(&no_wait, "", "update", || {
            tries += 1;
            if tries == 1 {
                Err("mirror sync".into())
            } else {
                Ok(())
            }
        });
        assert_eq!((ok, tries), (Ok(()), 2));
        let mut tries = 0;
        let failed = retry_after(&no_wait, "", "update", || {
            tries += 1;
            Err(format!("try {tries}"))
        });
        assert_eq!((failed, tries), (Err("try 3".to_string()), 3));
    }

    /// `apt-cache show --no-all-versions linux-image-arm64:arm64` on Debian 12
    /// (2026-12-05), shortened.
    const META: &str = "Package: linux-image-arm64\n\
Source: linux-signed-arm64 (6.1.192+3)\n\
Version: 6.1.192-3\n\
Architecture: arm64\n\
Depends: linux-image-6.1.0-57-arm64 (= 6.1.192-3)\n\
Description: Linux for 64-bit ARMv8 machines (meta-package)\n\
\n\
Package: linux-image-arm64\n\
Version: 6.1.190-1\n";

    #[test]
    fn show_reads_the_candidate() {
        let p = parse_show(META).unwrap();
        assert_eq!(p.name, "linux-image-arm64");
        assert_eq!(p.version, "6.1.192-3");
        assert_eq!(p.depends, vec!["linux-image-6.1.0-57-arm64".to_string()]);
    }
}
