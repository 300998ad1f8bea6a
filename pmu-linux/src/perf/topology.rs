//! The core PMUs of a heterogeneous machine (Arm big.LITTLE / DynamIQ, Intel hybrid)
//! as sysfs lists them: which PMUs take generic events with their extended type, and
//! which CPUs each counts on. `hybrid` opens the sum over them; the rules are pure and
//! host-tested on every architecture.

use std::fs;
use std::io;

use crate::error::{Error, HybridProblem, Result};
use crate::machine::events::{EventKind, EventSpec, PMU_TYPE_SHIFT};
use crate::machine::sysfs::{takes_extended_hw_type, FormatField, Pmu, Sysfs};

/// The file with the CPUs Linux has online (Documentation/ABI/testing/sysfs-devices-system-cpu).
#[cfg_attr(not(feature = "rig"), allow(dead_code))]
pub(crate) const ONLINE_CPUS: &str = "/sys/devices/system/cpu/online";

/// A CPU list as the kernel prints it (`0-3,8`; lib/bitmap-str.c, `%*pbl`), sorted
/// and without duplicates; `None` when it is not one. An empty text is an empty list.
pub(crate) fn parse_cpu_list(text: &str) -> Option<Vec<u32>> {
    let text = text.trim();
    let mut cpus = Vec::new();
    if text.is_empty() {
        return Some(cpus);
    }
    for part in text.split(',') {
        let part = part.trim();
        let (lo, hi) = match part.split_once('-') {
            Some((lo, hi)) => (
                lo.trim().parse::<u32>().ok()?,
                hi.trim().parse::<u32>().ok()?,
            ),
            None => {
                let cpu: u32 = part.parse().ok()?;
                (cpu, cpu)
            }
        };
        if lo > hi || hi - lo > 1 << 16 {
            return None;
        }
        cpus.extend(lo..=hi);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Some(cpus)
}

/// One core PMU: the PMU of one kind of CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CorePmu {
    /// Its sysfs name (`armv8_cortex_a53`, `cpu_atom`).
    pub name: String,
    /// Its `perf_event_attr.type`, which also goes into config bits 63:32 of its
    /// generic events.
    pub perf_type: u32,
    /// The CPUs it counts on, sorted.
    pub cpus: Vec<u32>,
    /// Its `rdpmc` format field (arm64: `config1:1`), for user reads.
    pub user_read_field: Option<FormatField>,
}

impl CorePmu {
    fn from_sysfs(pmu: &Pmu, sysfs: &Sysfs) -> Result<Self> {
        let text = match &pmu.cpus {
            Some(text) => text.clone(),
            None => match fs::read_to_string(sysfs.root().join(&pmu.name).join("cpumask")) {
                Ok(text) => text,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(HybridProblem::NoCpuList {
                        pmu: pmu.name.clone(),
                    }
                    .into())
                }
                Err(e) => {
                    return Err(Error::sysfs(
                        sysfs.root().join(&pmu.name).join("cpumask"),
                        e,
                    ))
                }
            },
        };
        let cpus = parse_cpu_list(&text).ok_or_else(|| HybridProblem::BadCpuList {
            pmu: pmu.name.clone(),
            content: text.clone(),
        })?;
        Ok(Self {
            name: pmu.name.clone(),
            perf_type: pmu.perf_type,
            cpus,
            user_read_field: pmu.formats.get("rdpmc").cloned(),
        })
    }

    /// `generic` (a hardware or cache event) on this PMU: the extended type in config
    /// bits 63:32, named `<pmu>/<name>/` as perf prints it.
    ///
    /// # Errors
    /// [`HybridProblem::NotGeneric`] for any other kind of event.
    pub(crate) fn generic_spec(&self, generic: &EventSpec) -> Result<EventSpec> {
        if !matches!(generic.kind, EventKind::Hardware | EventKind::HwCache)
            || generic.config[0] >> PMU_TYPE_SHIFT != 0
        {
            return Err(HybridProblem::NotGeneric {
                event: generic.name.clone(),
                kind: generic.kind,
            }
            .into());
        }
        let mut spec = generic.clone();
        spec.name = format!("{}/{}/", self.name, generic.name);
        spec.config[0] |= u64::from(self.perf_type) << PMU_TYPE_SHIFT;
        spec.pmu = Some(self.name.clone());
        spec.user_read_field = self.user_read_field.clone();
        Ok(spec)
    }
}

/// The core PMUs of a machine, ordered by their first CPU.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CoreTopology {
    pmus: Vec<CorePmu>,
}

impl CoreTopology {
    /// The running kernel's core PMUs.
    ///
    /// # Errors
    /// [`crate::error::PmuError::Hybrid`] for a PMU without, or with a malformed, CPU
    /// list and for two PMUs that claim one CPU; sysfs read errors.
    #[cfg_attr(not(feature = "rig"), allow(dead_code))]
    pub fn discover() -> Result<Self> {
        Self::discover_in(&Sysfs::system())
    }

    /// The core PMUs of the tree `sysfs`: those that take the extended hardware type,
    /// each with its CPU list. None (an empty topology) on a machine whose only CPU
    /// PMU is x86's `cpu`, or that has no CPU PMU.
    ///
    /// # Errors
    /// [`crate::error::PmuError::Hybrid`] for a PMU without, or with a malformed, CPU list and for two
    /// PMUs that claim one CPU; sysfs read errors.
    pub(crate) fn discover_in(sysfs: &Sysfs) -> Result<Self> {
        let mut pmus = Vec::new();
        // Which PMUs those are shows in their names: the others are not read.
        for name in sysfs.pmu_names()? {
            if takes_extended_hw_type(&name) {
                pmus.push(CorePmu::from_sysfs(&sysfs.pmu(&name)?, sysfs)?);
            }
        }
        Self::new(pmus)
    }

    /// A topology of `pmus` (ordered here by first CPU).
    ///
    /// # Errors
    /// [`HybridProblem::Overlap`] when two PMUs list one CPU.
    pub(crate) fn new(mut pmus: Vec<CorePmu>) -> Result<Self> {
        pmus.sort_by_key(|p| (p.cpus.first().copied().unwrap_or(u32::MAX), p.name.clone()));
        for (i, first) in pmus.iter().enumerate() {
            for second in &pmus[i + 1..] {
                if let Some(&cpu) = first.cpus.iter().find(|c| second.cpus.contains(c)) {
                    return Err(HybridProblem::Overlap {
                        first: first.name.clone(),
                        second: second.name.clone(),
                        cpu,
                    }
                    .into());
                }
            }
        }
        Ok(Self { pmus })
    }

    /// The core PMUs, ordered by first CPU.
    pub fn pmus(&self) -> &[CorePmu] {
        &self.pmus
    }

    /// Whether there are two kinds of cores or more.
    pub fn is_heterogeneous(&self) -> bool {
        self.pmus.len() > 1
    }

    /// The PMU (its position in [`CoreTopology::pmus`]) that counts on `cpu`.
    pub(crate) fn owner_of(&self, cpu: u32) -> Option<usize> {
        self.pmus.iter().position(|p| p.cpus.contains(&cpu))
    }

    /// The CPUs of `online` that no core PMU covers (on them nothing is counted).
    pub(crate) fn uncovered(&self, online: &[u32]) -> Vec<u32> {
        online
            .iter()
            .copied()
            .filter(|&cpu| self.owner_of(cpu).is_none())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::sysfs::fake;

    /// An arm64 big.LITTLE tree as Linux 6.12 publishes it: one arm_pmu per CPU type
    /// (drivers/perf/arm_pmuv3.c names `armv8_cortex_a53`, `armv8_cortex_a72`), each
    /// with `cpus` (drivers/perf/arm_pmu.c `cpus_show`), plus `software`.
    fn big_little(root: &std::path::Path) {
        let formats = [
            ("event", "config:0-15"),
            ("long", "config1:0"),
            ("rdpmc", "config1:1"),
        ];
        fake::pmu(root, "armv8_cortex_a72", 9, &formats, &[]);
        fake::pmu(root, "armv8_cortex_a53", 8, &formats, &[]);
        fake::pmu(root, "software", 1, &[], &[]);
        fs::write(root.join("armv8_cortex_a53/cpus"), "0-1\n").unwrap();
        fs::write(root.join("armv8_cortex_a72/cpus"), "2-3\n").unwrap();
    }

    #[test]
    fn cpu_lists() {
        // The `%*pbl` format of lib/bitmap-str.c (what `cpus` prints).
        assert_eq!(parse_cpu_list("0-3\n"), Some(vec![0, 1, 2, 3]));
        assert_eq!(parse_cpu_list("0,2-3,8"), Some(vec![0, 2, 3, 8]));
        assert_eq!(parse_cpu_list("16-23"), Some((16..=23).collect()));
        assert_eq!(parse_cpu_list("\n"), Some(vec![]));
        assert_eq!(parse_cpu_list("3,1-2,2"), Some(vec![1, 2, 3]));
        for bad in ["3-1", "a", "0-", "-1", "1,,2", "0-99999999"] {
            assert_eq!(parse_cpu_list(bad), None, "{bad}");
        }
    }

    #[test]
    fn arm_big_little_topology() {
        let dir = tempfile::tempdir().unwrap();
        big_little(dir.path());
        let topology = CoreTopology::discover_in(&Sysfs::at(dir.path())).unwrap();
        let names: Vec<&str> = topology.pmus().iter().map(|p| p.name.as_str()).collect();
        // Ordered by first CPU, not by name.
        assert_eq!(names, ["armv8_cortex_a53", "armv8_cortex_a72"]);
        assert!(topology.is_heterogeneous());
        assert_eq!(
            (0..5).map(|c| topology.owner_of(c)).collect::<Vec<_>>(),
            [Some(0), Some(0), Some(1), Some(1), None]
        );
        assert_eq!(topology.uncovered(&[0, 1, 2, 3, 4]), [4]);
        assert_eq!(topology.pmus()[1].perf_type, 9);
    }

    #[test]
    fn intel_hybrid_topology_and_plain_intel() {
        let dir = tempfile::tempdir().unwrap();
        fake::hybrid(dir.path());
        let topology = CoreTopology::discover_in(&Sysfs::at(dir.path())).unwrap();
        let pmus: Vec<(&str, u32, usize)> = topology
            .pmus()
            .iter()
            .map(|p| (p.name.as_str(), p.perf_type, p.cpus.len()))
            .collect();
        assert_eq!(pmus, [("cpu_core", 4, 16), ("cpu_atom", 10, 8)]);
        // A non-hybrid Intel machine's `cpu` takes no extended type: no core PMUs here,
        // the plain generic events are opened.
        let plain = tempfile::tempdir().unwrap();
        fake::intel(plain.path());
        let topology = CoreTopology::discover_in(&Sysfs::at(plain.path())).unwrap();
        assert!(topology.pmus().is_empty() && !topology.is_heterogeneous());
    }

    #[test]
    fn bad_topologies_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        big_little(dir.path());
        fs::write(dir.path().join("armv8_cortex_a72/cpus"), "1-3\n").unwrap();
        match CoreTopology::discover_in(&Sysfs::at(dir.path())) {
            Err(Error::Pmu(crate::error::PmuError::Hybrid(HybridProblem::Overlap {
                first,
                second,
                cpu,
            }))) => {
                assert_eq!(
                    (first.as_str(), second.as_str(), cpu),
                    ("armv8_cortex_a53", "armv8_cortex_a72", 1)
                );
            }
            other => panic!("{other:?}"),
        }
        fs::write(dir.path().join("armv8_cortex_a72/cpus"), "two\n").unwrap();
        assert!(matches!(
            CoreTopology::discover_in(&Sysfs::at(dir.path())),
            Err(Error::Pmu(crate::error::PmuError::Hybrid(HybridProblem::BadCpuList { pmu, .. }))) if pmu == "armv8_cortex_a72"
        ));
        // No `cpus`: `cpumask` is read instead; neither: refused.
        fs::remove_file(dir.path().join("armv8_cortex_a72/cpus")).unwrap();
        fs::write(dir.path().join("armv8_cortex_a72/cpumask"), "2-3\n").unwrap();
        let topology = CoreTopology::discover_in(&Sysfs::at(dir.path())).unwrap();
        assert_eq!(topology.pmus()[1].cpus, [2, 3]);
        fs::remove_file(dir.path().join("armv8_cortex_a72/cpumask")).unwrap();
        assert!(matches!(
            CoreTopology::discover_in(&Sysfs::at(dir.path())),
            Err(Error::Pmu(crate::error::PmuError::Hybrid(HybridProblem::NoCpuList { pmu }))) if pmu == "armv8_cortex_a72"
        ));
    }

    #[test]
    fn generic_events_get_each_pmus_extended_type() {
        let dir = tempfile::tempdir().unwrap();
        big_little(dir.path());
        let sysfs = Sysfs::at(dir.path());
        let topology = CoreTopology::discover_in(&sysfs).unwrap();
        // include/uapi/linux/perf_event.h: PERF_COUNT_HW_INSTRUCTIONS = 1,
        // PERF_PMU_TYPE_SHIFT = 32; the PMU types are the fake tree's 8 and 9.
        let instructions = crate::machine::events::resolve("instructions", &sysfs).unwrap();
        let specs: Vec<EventSpec> = topology
            .pmus()
            .iter()
            .map(|p| p.generic_spec(&instructions).unwrap())
            .collect();
        assert_eq!(specs[0].name, "armv8_cortex_a53/instructions/");
        assert_eq!(
            specs
                .iter()
                .map(|s| (s.perf_type, s.config[0]))
                .collect::<Vec<_>>(),
            [(0, 1 | 8 << 32), (0, 1 | 9 << 32)]
        );
        // The user-read bit goes where the PMU's `rdpmc` format says (config1:1).
        assert_eq!(specs[1].config_with_user_read()[1], 1 << 1);
        // Cache events too: L1D (0) | read (0) << 8 | miss (1) << 16.
        let misses = crate::machine::events::resolve("L1-dcache-load-misses", &sysfs).unwrap();
        let spec = topology.pmus()[1].generic_spec(&misses).unwrap();
        assert_eq!((spec.perf_type, spec.config[0]), (3, 1 << 16 | 9 << 32));
        for other in ["task-clock", "r11"] {
            let spec = crate::machine::events::resolve(other, &sysfs).unwrap();
            assert!(matches!(
                topology.pmus()[0].generic_spec(&spec),
                Err(Error::Pmu(crate::error::PmuError::Hybrid(
                    HybridProblem::NotGeneric { .. }
                )))
            ));
        }
        // An event already bound to one PMU is not generic either.
        let bound =
            crate::machine::events::resolve("armv8_cortex_a72/instructions/", &sysfs).unwrap();
        assert!(topology.pmus()[0].generic_spec(&bound).is_err());
    }
}
