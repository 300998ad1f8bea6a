//! What the running kernel publishes about its PMUs in sysfs.
//!
//! Every PMU registered with perf has a directory under
//! `/sys/bus/event_source/devices/` (Documentation/ABI/testing/sysfs-bus-event_source-devices-*):
//!
//! - `type`: the number to put in `perf_event_attr.type`;
//! - `format/<term>`: where a term's value goes, e.g. `config:0-7` (Intel `event`),
//!   `config:8-15` (`umask`), `config1:1` (arm64 `rdpmc`), or split fields such as
//!   `config:0-7,32-35` (Intel `event` on big-core PMUs);
//! - `events/<name>`: aliases written in those terms, e.g. `event=0x3c`; files with a
//!   dot (`<name>.scale`, `.unit`, `.per-pkg`, `.snapshot`) describe an alias and are
//!   not aliases themselves;
//! - hybrid x86 has one core PMU per core type (`cpu_core`, `cpu_atom`) instead of
//!   `cpu`, each with a `cpus` file; arm64 names them after the core
//!   (`armv8_pmuv3_0`, `armv8_cortex_a53`, …).
//!
//! The root is a parameter ([`Sysfs::at`]) so tests use fake trees.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::machine::cpu::Cores;

/// Where the kernel lists its PMUs.
pub const SYSTEM_ROOT: &str = "/sys/bus/event_source/devices";

/// A sysfs PMU directory tree: the system's or a fake one.
///
/// A value reads each PMU's directory once and keeps it: a meter's `build` asks for the
/// same PMUs several times (which backend, which events, whether the machine counts
/// exactly), and each file read is three system calls, which cost milliseconds under
/// emulation. A clone starts with nothing kept, so a [`crate::MeterBuilder`] reads the
/// tree afresh at each `build`.
pub struct Sysfs {
    root: PathBuf,
    /// Where the CPUs' MIDRs are read, for the running core's event names.
    cores: CoreSource,
    /// The PMUs read so far, by name.
    read: Mutex<BTreeMap<String, Pmu>>,
}

impl Clone for Sysfs {
    fn clone(&self) -> Self {
        Self {
            root: self.root.clone(),
            cores: self.cores.clone(),
            read: Mutex::default(),
        }
    }
}

/// Two trees are equal where they are read from the same places.
impl PartialEq for Sysfs {
    fn eq(&self, other: &Self) -> bool {
        self.root == other.root && self.cores == other.cores
    }
}

impl Eq for Sysfs {}

impl std::fmt::Debug for Sysfs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sysfs")
            .field("root", &self.root)
            .field("cores", &self.cores)
            .finish_non_exhaustive()
    }
}

/// Where a [`Sysfs`] finds the machine's cores.
#[derive(Clone, Debug, PartialEq, Eq)]
enum CoreSource {
    /// A tree without CPUs (a fake PMU tree): no core tables.
    None,
    /// A CPU tree and a cpuinfo file ([`Cores::at`]).
    At(PathBuf, PathBuf),
}

impl Sysfs {
    /// The running kernel's tree, `/sys/bus/event_source/devices`.
    pub fn system() -> Self {
        Self::at(SYSTEM_ROOT).with_cores(
            crate::machine::cpu::SYSTEM_CPU_ROOT,
            crate::machine::cpu::SYSTEM_CPUINFO,
        )
    }

    /// A tree rooted at `root` (the directory holding one directory per PMU), with no
    /// cores: event names of a core's table do not resolve here ([`Sysfs::system`] reads
    /// this machine's).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            cores: CoreSource::None,
            read: Mutex::default(),
        }
    }

    /// The same tree, its machine's cores read from `cpu_root` and `cpuinfo` (see
    /// [`Cores::at`]) when an event name needs them.
    pub(crate) fn with_cores(
        self,
        cpu_root: impl Into<PathBuf>,
        cpuinfo: impl Into<PathBuf>,
    ) -> Self {
        Self {
            cores: CoreSource::At(cpu_root.into(), cpuinfo.into()),
            root: self.root,
            read: self.read,
        }
    }

    /// The machine's cores, read now (none for a tree made by [`Sysfs::at`] alone).
    pub fn cores(&self) -> Cores {
        match &self.cores {
            CoreSource::None => Cores::default(),
            CoreSource::At(cpu_root, cpuinfo) => Cores::at(cpu_root, cpuinfo),
        }
    }

    /// Where its machine's CPUs are listed (`cpuN/`, `possible`), if it has one.
    #[cfg_attr(
        not(any(target_arch = "x86_64", target_arch = "aarch64")),
        allow(dead_code)
    )]
    pub(crate) fn cpu_root(&self) -> Option<&Path> {
        match &self.cores {
            CoreSource::None => None,
            CoreSource::At(cpu_root, _) => Some(cpu_root),
        }
    }

    /// The root directory.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The PMU names, sorted. An absent root gives an empty list.
    ///
    /// # Errors
    /// [`Error::Io`] when the root exists but cannot be listed.
    pub(crate) fn pmu_names(&self) -> Result<Vec<String>> {
        let entries = match fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(sysfs_error(&self.root, e)),
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort();
        Ok(names)
    }

    /// The PMU called `name`.
    ///
    /// # Errors
    /// [`crate::error::EventError::UnknownPmu`] when there is no such directory (with the list of those
    /// there are); [`Error::Io`] / [`crate::error::EventError::BadFormatFile`] for unreadable or
    /// unparsable files.
    pub(crate) fn pmu(&self, name: &str) -> Result<Pmu> {
        // A poisoned lock only means a panic elsewhere while it was held: what it keeps
        // is whole PMUs, never half of one.
        let kept = |read: &BTreeMap<String, Pmu>| read.get(name).cloned();
        if let Some(pmu) = kept(&self.read.lock().unwrap_or_else(|e| e.into_inner())) {
            return Ok(pmu);
        }
        let dir = self.root.join(name);
        if name.is_empty() || name.contains('/') || name == "." || name == ".." || !dir.is_dir() {
            return Err(Error::Event(crate::error::EventError::UnknownPmu {
                pmu: name.to_owned(),
                available: self.pmu_names().unwrap_or_default(),
            }));
        }
        let pmu = Pmu::read(name, &dir)?;
        self.read
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.to_owned(), pmu.clone());
        Ok(pmu)
    }

    /// Every PMU, sorted by name (unreadable ones are skipped). An absent root gives an
    /// empty list.
    ///
    /// # Errors
    /// [`Error::Io`] when the root exists but cannot be listed.
    pub fn pmus(&self) -> Result<Vec<Pmu>> {
        Ok(self
            .pmu_names()?
            .iter()
            .filter_map(|name| self.pmu(name).ok())
            .collect())
    }
}

/// One PMU as sysfs describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pmu {
    /// Directory name (`cpu`, `cpu_core`, `armv8_pmuv3_0`, `software`, …).
    pub name: String,
    /// `perf_event_attr.type` for its events.
    pub perf_type: u32,
    /// `format/`: term name → field.
    pub formats: BTreeMap<String, FormatField>,
    /// `events/`: alias name → terms.
    pub events: BTreeMap<String, String>,
    /// `cpus`: the CPUs a hybrid core PMU covers (`0-15`), if published.
    pub cpus: Option<String>,
}

impl Pmu {
    fn read(name: &str, dir: &Path) -> Result<Self> {
        let type_path = dir.join("type");
        let type_text = read_text(&type_path)?;
        let perf_type = type_text.trim().parse().map_err(|_| {
            Error::Event(crate::error::EventError::BadFormatFile {
                path: type_path.clone(),
                content: type_text.clone(),
            })
        })?;
        let mut formats = BTreeMap::new();
        for (term, path) in list_files(&dir.join("format"))? {
            let content = read_text(&path)?;
            let field = FormatField::parse(&content).ok_or(Error::Event(
                crate::error::EventError::BadFormatFile {
                    path: path.clone(),
                    content: content.clone(),
                },
            ))?;
            formats.insert(term, field);
        }
        let mut events = BTreeMap::new();
        for (alias, path) in list_files(&dir.join("events"))? {
            if alias.contains('.') {
                continue;
            }
            events.insert(alias, read_text(&path)?.trim().to_owned());
        }
        let cpus = fs::read_to_string(dir.join("cpus"))
            .ok()
            .map(|s| s.trim().to_owned());
        Ok(Self {
            name: name.to_owned(),
            perf_type,
            formats,
            events,
            cpus,
        })
    }

    /// Whether this is a CPU PMU that takes generic hardware and cache events on its own
    /// through the extended type (`config |= type << 32`, PERF_PMU_CAP_EXTENDED_HW_TYPE):
    /// hybrid x86 (`cpu_core`, `cpu_atom`, …: arch/x86/events/core.c) and every arm_pmu
    /// (`armv8_*`, `armv7_*`, …: drivers/perf/arm_pmu.c).
    pub(crate) fn takes_extended_hw_type(&self) -> bool {
        takes_extended_hw_type(&self.name)
    }

    /// Whether this PMU counts events of the CPU cores (and so needs hardware
    /// counters): `cpu` (x86), `cpu_core`/`cpu_atom` (hybrid x86), `armv8_pmuv3_0`,
    /// `armv8_cortex_a53`, ….
    pub fn is_core(&self) -> bool {
        is_cpu_pmu(&self.name)
    }
}

/// [`Pmu::takes_extended_hw_type`] of the PMU called `name`: the name alone tells.
pub(crate) fn takes_extended_hw_type(name: &str) -> bool {
    name.starts_with("cpu_") || name.starts_with("armv")
}

/// The `perf_event_attr` word a format field lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ConfigWord {
    /// `config`.
    Config = 0,
    /// `config1`.
    Config1 = 1,
    /// `config2`.
    Config2 = 2,
    /// `config3`.
    Config3 = 3,
}

impl ConfigWord {
    /// The word named `name` (`config`, `config1`, `config2`, `config3`).
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        match name {
            "config" => Some(Self::Config),
            "config1" => Some(Self::Config1),
            "config2" => Some(Self::Config2),
            "config3" => Some(Self::Config3),
            _ => None,
        }
    }
}

/// Where a term's value goes: one config word, one or more bit ranges (low bits of the
/// value into the first range).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatField {
    /// The word.
    pub word: ConfigWord,
    /// Inclusive bit ranges `(lo, hi)`, in the order the file lists them.
    pub ranges: Vec<(u32, u32)>,
}

impl FormatField {
    /// Parses a `format/` file: `config:0-7`, `config1:1`, `config:0-7,32-35`.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let (word, bits) = text.trim().split_once(':')?;
        let word = ConfigWord::from_name(word.trim())?;
        let mut ranges = Vec::new();
        for range in bits.split(',') {
            let range = range.trim();
            let (lo, hi) = match range.split_once('-') {
                Some((lo, hi)) => (lo.trim().parse().ok()?, hi.trim().parse().ok()?),
                None => {
                    let bit = range.parse().ok()?;
                    (bit, bit)
                }
            };
            if lo > hi || hi > 63 {
                return None;
            }
            ranges.push((lo, hi));
        }
        Some(Self { word, ranges })
    }

    /// Total bits of the field.
    pub(crate) fn bits(&self) -> u32 {
        self.ranges.iter().map(|(lo, hi)| hi - lo + 1).sum()
    }

    /// The bits of the word the field occupies.
    pub(crate) fn mask(&self) -> u64 {
        self.ranges
            .iter()
            .fold(0, |m, &(lo, hi)| m | (u64::MAX >> (63 - (hi - lo))) << lo)
    }

    /// `value` scattered into the field's bits, `None` when it has more bits than the
    /// field.
    pub(crate) fn encode(&self, value: u64) -> Option<u64> {
        let bits = self.bits();
        if bits < 64 && value >> bits != 0 {
            return None;
        }
        let mut rest = value;
        let mut out = 0;
        for &(lo, hi) in &self.ranges {
            let width = hi - lo + 1;
            let part = if width >= 64 {
                rest
            } else {
                rest & ((1u64 << width) - 1)
            };
            out |= part << lo;
            rest = rest.checked_shr(width).unwrap_or(0);
        }
        Some(out)
    }
}

fn read_text(path: &Path) -> Result<String> {
    fs::read_to_string(path).map_err(|e| sysfs_error(path, e))
}

/// The regular files of `dir` (name, path); an absent directory has none.
fn list_files(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(sysfs_error(dir, e)),
    };
    let mut files = Vec::new();
    for entry in entries.filter_map(|e| e.ok()) {
        if let Ok(name) = entry.file_name().into_string() {
            if entry.path().is_file() {
                files.push((name, entry.path()));
            }
        }
    }
    files.sort();
    Ok(files)
}

fn sysfs_error(path: &Path, e: io::Error) -> Error {
    Error::sysfs(path.to_owned(), e)
}

/// Fake sysfs trees for tests: the shapes real kernels publish.
/// Whether `name` (a directory of /sys/bus/event_source/devices) is a CPU's core PMU:
/// `cpu` (x86), `cpu_core`/`cpu_atom` (hybrid x86), `armv8_pmuv3_0`, `armv8_cortex_a53`, ….
pub(crate) fn is_cpu_pmu(name: &str) -> bool {
    name == "cpu" || name.starts_with("cpu_") || name.starts_with("armv")
}

#[cfg(test)]
pub(crate) mod fake {
    use std::fs;
    use std::path::Path;

    /// Writes one PMU directory: `type`, `format/*`, `events/*`.
    pub(crate) fn pmu(
        root: &Path,
        name: &str,
        perf_type: u32,
        formats: &[(&str, &str)],
        events: &[(&str, &str)],
    ) {
        let dir = root.join(name);
        fs::create_dir_all(dir.join("format")).unwrap();
        fs::create_dir_all(dir.join("events")).unwrap();
        fs::write(dir.join("type"), format!("{perf_type}\n")).unwrap();
        for (term, spec) in formats {
            fs::write(dir.join("format").join(term), format!("{spec}\n")).unwrap();
        }
        for (alias, terms) in events {
            fs::write(dir.join("events").join(alias), format!("{terms}\n")).unwrap();
        }
    }

    /// Intel core formats (arch/x86/events/intel/core.c `format_attr_*`).
    pub(crate) const INTEL_FORMATS: &[(&str, &str)] = &[
        ("event", "config:0-7"),
        ("umask", "config:8-15"),
        ("edge", "config:18"),
        ("inv", "config:23"),
        ("cmask", "config:24-31"),
        ("ldlat", "config1:0-15"),
    ];

    /// An Intel non-hybrid machine: `cpu` (type 4), plus `software` (type 1).
    pub(crate) fn intel(root: &Path) {
        pmu(
            root,
            "cpu",
            4,
            INTEL_FORMATS,
            &[
                ("cycles", "event=0x3c"),
                ("instructions", "event=0xc0"),
                ("branch-misses", "event=0xc5"),
                ("mem-loads", "event=0xcd,umask=0x1,ldlat=3"),
                ("mem-loads.unit", "ns"),
                ("topdown-fe-bound", "event=0x00,umask=0x82"),
            ],
        );
        pmu(root, "software", 1, &[], &[]);
    }

    /// Alder Lake hybrid: `cpu_core` (type 4) and `cpu_atom` (type 10), each with `cpus`.
    pub(crate) fn hybrid(root: &Path) {
        pmu(
            root,
            "cpu_core",
            4,
            INTEL_FORMATS,
            &[
                ("cycles", "event=0x3c"),
                ("topdown-retiring", "event=0x00,umask=0x80"),
            ],
        );
        pmu(
            root,
            "cpu_atom",
            10,
            INTEL_FORMATS,
            &[
                ("cycles", "event=0x3c"),
                ("topdown-retiring", "event=0xc2,umask=0x0"),
            ],
        );
        fs::write(root.join("cpu_core/cpus"), "0-15\n").unwrap();
        fs::write(root.join("cpu_atom/cpus"), "16-23\n").unwrap();
    }

    /// arm64 PMUv3 (drivers/perf/arm_pmuv3.c: event config:0-15, long config1:0, rdpmc
    /// config1:1; type 8 on a Neoverse/QEMU guest).
    pub(crate) fn arm64(root: &Path) {
        pmu(
            root,
            "armv8_pmuv3_0",
            8,
            &[
                ("event", "config:0-15"),
                ("long", "config1:0"),
                ("rdpmc", "config1:1"),
                ("threshold", "config1:5-16"),
            ],
            &[
                ("cpu_cycles", "event=0x0011"),
                ("inst_retired", "event=0x0008"),
                ("l1d_cache_refill", "event=0x0003"),
            ],
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_fields() {
        // arch/x86/events/intel/core.c: PMU_FORMAT_ATTR(event, "config:0-7") …
        let event = FormatField::parse("config:0-7\n").unwrap();
        assert_eq!(
            (event.word, event.bits(), event.mask()),
            (ConfigWord::Config, 8, 0xff)
        );
        assert_eq!(event.encode(0x3c), Some(0x3c));
        assert_eq!(event.encode(0x1ff), None);
        let cmask = FormatField::parse("config:24-31").unwrap();
        assert_eq!(cmask.encode(1), Some(1 << 24));
        // drivers/perf/arm_pmuv3.c: rdpmc is config1:1.
        let rdpmc = FormatField::parse("config1:1").unwrap();
        assert_eq!(
            (rdpmc.word, rdpmc.bits(), rdpmc.encode(1)),
            (ConfigWord::Config1, 1, Some(2))
        );
        assert_eq!(rdpmc.encode(2), None);
        // A split field (Intel `event` on PMUs with 12-bit events: config:0-7,32-35):
        // low 8 bits first, then bits 8..11 at 32..35.
        let split = FormatField::parse("config:0-7,32-35").unwrap();
        assert_eq!(split.bits(), 12);
        assert_eq!(split.encode(0x4a3), Some(0x4_0000_00a3));
        assert_eq!(split.mask(), 0xf_0000_00ff);
        assert_eq!(split.encode(0x1000), None);
        let whole = FormatField::parse("config2:0-63").unwrap();
        assert_eq!(
            (whole.bits(), whole.mask(), whole.encode(u64::MAX)),
            (64, u64::MAX, Some(u64::MAX))
        );
        for bad in [
            "",
            "config",
            "config:",
            "config:7-0",
            "config:0-64",
            "config4:0",
            "bogus:1",
            "config:a",
        ] {
            assert_eq!(FormatField::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn reads_a_fake_tree() {
        let dir = tempfile::tempdir().unwrap();
        fake::intel(dir.path());
        fake::hybrid(dir.path());
        fake::arm64(dir.path());
        let sysfs = Sysfs::at(dir.path());
        assert_eq!(
            sysfs.pmu_names().unwrap(),
            ["armv8_pmuv3_0", "cpu", "cpu_atom", "cpu_core", "software"]
        );
        let cpu = sysfs.pmu("cpu").unwrap();
        assert_eq!(cpu.perf_type, 4);
        assert_eq!(
            cpu.events.get("cycles").map(String::as_str),
            Some("event=0x3c")
        );
        assert!(!cpu.events.contains_key("mem-loads.unit"));
        assert!(cpu.is_core() && !cpu.takes_extended_hw_type());
        let atom = sysfs.pmu("cpu_atom").unwrap();
        assert_eq!((atom.perf_type, atom.cpus.as_deref()), (10, Some("16-23")));
        assert!(atom.takes_extended_hw_type());
        assert!(sysfs.pmu("armv8_pmuv3_0").unwrap().takes_extended_hw_type());
        assert!(!sysfs.pmu("software").unwrap().is_core());
        match sysfs.pmu("nope") {
            Err(Error::Event(crate::error::EventError::UnknownPmu { pmu, available })) => {
                assert_eq!(pmu, "nope");
                assert_eq!(available.len(), 5);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            sysfs.pmu("../etc"),
            Err(Error::Event(crate::error::EventError::UnknownPmu { .. }))
        ));
        assert_eq!(
            Sysfs::at(dir.path().join("absent")).pmu_names().unwrap(),
            Vec::<String>::new()
        );
    }

    /// A tree keeps what it read; its clone (a builder's tree at its next `build`)
    /// reads afresh. Shown by changing the files in between: `cycles` rewritten, then
    /// the whole PMU removed.
    #[test]
    fn a_tree_reads_each_pmu_once_and_a_clone_afresh() {
        let dir = tempfile::tempdir().unwrap();
        fake::arm64(dir.path());
        let sysfs = Sysfs::at(dir.path());
        let events = dir.path().join("armv8_pmuv3_0/events");
        let cycles = |s: &Sysfs| {
            s.pmu("armv8_pmuv3_0")
                .map(|p| p.events["cpu_cycles"].clone())
        };
        let first = cycles(&sysfs).unwrap();
        fs::write(events.join("cpu_cycles"), "event=0x0042\n").unwrap();
        assert_eq!(cycles(&sysfs).unwrap(), first);
        let clone = sysfs.clone();
        assert_eq!(cycles(&clone).unwrap(), "event=0x0042");
        assert_eq!(clone, sysfs);
        fs::remove_dir_all(dir.path().join("armv8_pmuv3_0")).unwrap();
        assert_eq!(cycles(&sysfs).unwrap(), first);
        assert!(matches!(
            cycles(&sysfs.clone()),
            Err(Error::Event(crate::error::EventError::UnknownPmu { .. }))
        ));
    }

    #[test]
    fn unparsable_format_file_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        fake::pmu(dir.path(), "odd", 42, &[("event", "config:9-3")], &[]);
        match Sysfs::at(dir.path()).pmu("odd") {
            Err(Error::Event(crate::error::EventError::BadFormatFile { path, content })) => {
                assert!(path.ends_with("format/event"));
                assert_eq!(content.trim(), "config:9-3");
            }
            other => panic!("{other:?}"),
        }
    }
}
