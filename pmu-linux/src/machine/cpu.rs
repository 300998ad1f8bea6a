//! Which Arm cores this machine has: each CPU's Main ID Register (MIDR) as Linux
//! publishes it, grouped by core, so that event names can be looked up in the running
//! core's table (`pmu-events`).
//!
//! Two sources, in this order:
//!
//! 1. arm64: `/sys/devices/system/cpu/cpuN/regs/identification/midr_el1`, one file per
//!    online CPU, printed as `0x%016llx` (Linux 6.12 arch/arm64/kernel/cpuinfo.c,
//!    `CPUREGS_ATTR_RO(midr_el1, midr)`; Documentation/arch/arm64/cpu-feature-registers.rst);
//! 2. `/proc/cpuinfo` (32-bit ARM, and arm64 kernels without the sysfs files): per
//!    `processor` block, `CPU implementer`, `CPU variant`, `CPU part` and `CPU
//!    revision` (Linux 6.12 arch/arm/kernel/setup.c and arch/arm64/kernel/cpuinfo.c,
//!    `c_show`).
//!
//! A big.LITTLE machine has two kinds of core; each is its own [`CoreKind`], never
//! merged. Other architectures publish neither source: no kinds.

use std::fs;
use std::path::{Path, PathBuf};

/// Where Linux lists the CPUs (Documentation/ABI/testing/sysfs-devices-system-cpu).
pub(crate) const SYSTEM_CPU_ROOT: &str = "/sys/devices/system/cpu";
/// The kernel's CPU description.
pub(crate) const SYSTEM_CPUINFO: &str = "/proc/cpuinfo";

/// The kinds of core of a machine (one on most, two on big.LITTLE), each with its
/// CPUs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cores {
    kinds: Vec<CoreKind>,
}

/// One kind of core: a MIDR implementer and part number, and the CPUs that have it.
#[derive(Clone, Debug)]
pub struct CoreKind {
    /// The MIDR of the first of its CPUs (variant and revision can differ between CPUs
    /// of a kind; event tables are per part).
    pub midr: u32,
    /// Its CPUs, ascending.
    pub cpus: Vec<u32>,
    /// Its event table, where `pmu-events` has one.
    pub table: Option<&'static pmu_events::Core>,
}

// The table follows from the MIDR: equal kinds have equal MIDRs and CPUs.
impl PartialEq for CoreKind {
    fn eq(&self, other: &Self) -> bool {
        (self.midr, &self.cpus) == (other.midr, &other.cpus)
    }
}

impl Eq for CoreKind {}

impl CoreKind {
    /// Its CPUs as the kernel prints a CPU list (`0-3,6`).
    pub fn cpu_list(&self) -> String {
        let cpus = &self.cpus;
        let mut out = String::new();
        let mut i = 0;
        while i < cpus.len() {
            let start = cpus[i];
            let mut end = start;
            while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
                i += 1;
                end = cpus[i];
            }
            if !out.is_empty() {
                out.push(',');
            }
            if start == end {
                out.push_str(&start.to_string());
            } else {
                out.push_str(&format!("{start}-{end}"));
            }
            i += 1;
        }
        out
    }
}

impl Cores {
    /// The cores a CPU tree at `cpu_root` (holding `cpuN/`) describes, or else the
    /// cpuinfo file `cpuinfo`; a missing or unreadable source gives no kinds.
    pub fn at(cpu_root: impl AsRef<Path>, cpuinfo: impl AsRef<Path>) -> Self {
        let mut midrs = from_sysfs(cpu_root.as_ref());
        if midrs.is_empty() {
            midrs = fs::read_to_string(cpuinfo)
                .map(|text| from_cpuinfo(&text))
                .unwrap_or_default();
        }
        Self::from_midrs(midrs)
    }

    /// Groups `(cpu, midr)` pairs by implementer and part number, in the order each
    /// kind first appears by CPU number.
    fn from_midrs(mut midrs: Vec<(u32, u32)>) -> Self {
        midrs.sort_unstable();
        let mut kinds: Vec<CoreKind> = Vec::new();
        for (cpu, midr) in midrs {
            let id = pmu_events::CoreId::from_midr(midr);
            match kinds
                .iter_mut()
                .find(|k| pmu_events::CoreId::from_midr(k.midr) == id)
            {
                Some(kind) => kind.cpus.push(cpu),
                None => kinds.push(CoreKind {
                    midr,
                    cpus: vec![cpu],
                    table: pmu_events::for_midr(midr),
                }),
            }
        }
        Self { kinds }
    }

    /// Each kind of core, by its lowest CPU.
    pub fn kinds(&self) -> &[CoreKind] {
        &self.kinds
    }

    /// The kind of core `cpu` is; with no CPU (or one not listed), the first kind.
    pub(crate) fn kind_of(&self, cpu: Option<u32>) -> Option<&CoreKind> {
        cpu.and_then(|cpu| self.kinds.iter().find(|k| k.cpus.contains(&cpu)))
            .or_else(|| self.kinds.first())
    }
}

/// `(cpu, midr)` of every `cpuN/regs/identification/midr_el1` under `root`.
fn from_sysfs(root: &Path) -> Vec<(u32, u32)> {
    let Ok(entries) = fs::read_dir(root) else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let name = entry.file_name();
            let cpu: u32 = name.to_str()?.strip_prefix("cpu")?.parse().ok()?;
            let file: PathBuf = entry.path().join("regs/identification/midr_el1");
            let text = fs::read_to_string(file).ok()?;
            let hex = text.trim().strip_prefix("0x")?;
            // MIDR_EL1 bits 63:32 are RES0: the value is the 32-bit MIDR.
            let midr = u32::try_from(u64::from_str_radix(hex, 16).ok()?).ok()?;
            Some((cpu, midr))
        })
        .collect()
}

/// `(cpu, midr)` of every `processor` block of a cpuinfo text that has the four ID
/// fields. The Architecture field (bits 19:16), which cpuinfo prints as a name
/// (`7`, `6TEJ`, `8`), is set to 0xF: what every core with the CPUID scheme (ARMv6
/// onward) reads there (Arm ARM DDI 0406C B4.1.105, MIDR).
fn from_cpuinfo(text: &str) -> Vec<(u32, u32)> {
    let mut found = Vec::new();
    for block in text.split("\n\n") {
        let field = |key: &str| {
            block.lines().find_map(|line| {
                let (k, v) = line.split_once(':')?;
                (k.trim() == key).then(|| v.trim())
            })
        };
        let number = |key: &str| {
            let v = field(key)?;
            match v.strip_prefix("0x") {
                Some(hex) => u32::from_str_radix(hex, 16).ok(),
                None => v.parse().ok(),
            }
        };
        let (Some(cpu), Some(implementer), Some(variant), Some(part), Some(revision)) = (
            number("processor"),
            number("CPU implementer"),
            number("CPU variant"),
            number("CPU part"),
            number("CPU revision"),
        ) else {
            continue;
        };
        if implementer > 0xFF || variant > 0xF || part > 0xFFF || revision > 0xF {
            continue;
        }
        found.push((
            cpu,
            implementer << 24 | variant << 20 | 0xF << 16 | part << 4 | revision,
        ));
    }
    found
}

#[cfg(test)]
pub(crate) mod fake {
    use std::fs;
    use std::path::Path;

    /// An arm64 CPU tree: `cpuN/regs/identification/midr_el1` for each `(cpu, midr)`,
    /// printed as arch/arm64/kernel/cpuinfo.c prints it.
    pub(crate) fn arm64_cpus(root: &Path, midrs: &[(u32, u32)]) {
        for (cpu, midr) in midrs {
            let dir = root.join(format!("cpu{cpu}/regs/identification"));
            fs::create_dir_all(&dir).unwrap();
            fs::write(
                dir.join("midr_el1"),
                format!("0x{:016x}\n", u64::from(*midr)),
            )
            .unwrap();
        }
        // Files that are not CPUs sit beside them.
        fs::create_dir_all(root.join("cpuidle")).unwrap();
        fs::write(root.join("online"), "0-3\n").unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Raspberry Pi 3's Cortex-A53 r0p4: MIDR 0x410FD034 (Cortex-A53 TRM, DDI 0500,
    /// 4.3.1 "Main ID Register"), as the example in
    /// Documentation/arch/arm64/cpu-feature-registers.rst's sysfs files print it.
    #[test]
    fn arm64_sysfs_gives_one_kind() {
        let dir = tempfile::tempdir().unwrap();
        fake::arm64_cpus(
            dir.path(),
            &[
                (0, 0x410F_D034),
                (1, 0x410F_D034),
                (2, 0x410F_D034),
                (3, 0x410F_D034),
            ],
        );
        let cores = Cores::at(dir.path(), dir.path().join("no-cpuinfo"));
        assert_eq!(cores.kinds().len(), 1);
        let kind = &cores.kinds()[0];
        assert_eq!(
            (kind.midr, kind.cpus.as_slice()),
            (0x410F_D034, &[0, 1, 2, 3][..])
        );
        assert_eq!(kind.table.map(|t| t.name), Some("Cortex-A53"));
        assert_eq!(cores.kind_of(Some(2)), Some(kind));
        assert_eq!(cores.kind_of(None), Some(kind));
    }

    /// big.LITTLE (Cortex-A72 MIDR 0x410FD083, TRM DDI 0488 4.3.1; Cortex-A53
    /// 0x410FD034): two kinds, each with its CPUs, never merged; a CPU of the second
    /// kind is found as such.
    #[test]
    fn big_little_gives_two_kinds() {
        let dir = tempfile::tempdir().unwrap();
        fake::arm64_cpus(
            dir.path(),
            &[
                (0, 0x410F_D034),
                (1, 0x410F_D034),
                (2, 0x410F_D083),
                (3, 0x410F_D083),
                (10, 0x410F_D034),
            ],
        );
        let cores = Cores::at(dir.path(), dir.path().join("no-cpuinfo"));
        let kinds = cores.kinds();
        assert_eq!(kinds.len(), 2, "{kinds:?}");
        assert_eq!(
            (kinds[0].midr, kinds[0].cpus.as_slice()),
            (0x410F_D034, &[0, 1, 10][..])
        );
        assert_eq!(
            (kinds[1].midr, kinds[1].cpus.as_slice()),
            (0x410F_D083, &[2, 3][..])
        );
        assert_eq!(cores.kind_of(Some(3)).map(|k| k.midr), Some(0x410F_D083));
        assert_eq!(
            (kinds[0].cpu_list(), kinds[1].cpu_list()),
            ("0-1,10".into(), "2-3".into())
        );
    }

    /// A Raspberry Pi 2's /proc/cpuinfo (fields as arch/arm/kernel/setup.c `c_show`
    /// prints them in Linux 6.12; Cortex-A7 MIDR 0x410FC075, TRM DDI 0464 4.3.1).
    #[test]
    fn cpuinfo_of_32_bit_arm() {
        let block = |n: u32| {
            format!(
                "processor\t: {n}\nmodel name\t: ARMv7 Processor rev 5 (v7l)\nBogoMIPS\t: 38.40\n\
                 Features\t: half thumb fastmult vfp edsp neon vfpv3 tls vfpv4 idiva idivt vfpd32 lpae evtstrm\n\
                 CPU implementer\t: 0x41\nCPU architecture: 7\nCPU variant\t: 0x0\n\
                 CPU part\t: 0xc07\nCPU revision\t: 5\n\n"
            )
        };
        let text = format!(
            "{}{}{}{}Hardware\t: BCM2835\nRevision\t: a01041\n",
            block(0),
            block(1),
            block(2),
            block(3)
        );
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("cpuinfo"), text).unwrap();
        let cores = Cores::at(dir.path().join("no-cpu-tree"), dir.path().join("cpuinfo"));
        assert_eq!(cores.kinds().len(), 1);
        assert_eq!(cores.kinds()[0].midr, 0x410F_C075);
        assert_eq!(cores.kinds()[0].cpus, [0, 1, 2, 3]);
    }

    /// The ARM1176JZF-S (Raspberry Pi 1): MIDR 0x410FB767 (ARM1176JZF-S TRM, DDI 0301,
    /// 3.2.1 "c0, Main ID Register"); cpuinfo names its architecture `7` too (setup.c
    /// `cpu_architecture()` reads the CPUID scheme).
    #[test]
    fn cpuinfo_of_the_arm1176() {
        let text = "processor\t: 0\nmodel name\t: ARMv6-compatible processor rev 7 (v6l)\n\
                    CPU implementer\t: 0x41\nCPU architecture: 7\nCPU variant\t: 0x0\n\
                    CPU part\t: 0xb76\nCPU revision\t: 7\n\nHardware\t: BCM2835\n";
        assert_eq!(from_cpuinfo(text), [(0, 0x410F_B767)]);
    }

    /// x86 cpuinfo has no MIDR fields; garbage is skipped, never a panic.
    #[test]
    fn no_arm_fields_no_kinds() {
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n\n";
        assert!(from_cpuinfo(x86).is_empty());
        let bad = "processor\t: 0\nCPU implementer\t: 0x141\nCPU variant\t: 0x0\n\
                   CPU part\t: 0xzz\nCPU revision\t: 5\n";
        assert!(from_cpuinfo(bad).is_empty());
        let dir = tempfile::tempdir().unwrap();
        let cores = Cores::at(dir.path().join("absent"), dir.path().join("absent"));
        assert_eq!(cores, Cores::default());
        assert_eq!(cores.kind_of(Some(0)), None);
    }

    /// QEMU's `-cpu max` reports implementer 0 (reserved for software use: Arm ARM DDI
    /// 0487 D23.2 MIDR_EL1) and part 0x051 (QEMU 10 target/arm/tcg/cpu64.c
    /// `aarch64_max_tcg_initfn`): a kind without a table.
    #[test]
    fn a_core_without_a_table() {
        let dir = tempfile::tempdir().unwrap();
        fake::arm64_cpus(dir.path(), &[(0, 0x000F_0510)]);
        let cores = Cores::at(dir.path(), dir.path().join("no-cpuinfo"));
        assert_eq!(cores.kinds()[0].table.map(|t| t.name), None);
    }
}
