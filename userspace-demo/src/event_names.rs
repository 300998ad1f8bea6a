//! Event names `pmu-demo` offers that no library needs: the ARM1176 table `list` shows
//! on 32-bit ARM, and the `<pmu>/event=…/` example of `--events`' help.

use pmu_linux::machine::Sysfs;

/// One event of the ARM1176 table, as `pmu-demo list` shows it on 32-bit ARM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arm1176EventInfo {
    /// The event number (PMCR.EvtCount0/1 field value).
    pub code: u8,
    /// The name to give `--events`: the generic perf name where one maps to the event
    /// (`instructions`), `r<hex>` otherwise (`r0c`).
    pub name: String,
    /// The raw name, `r<hex>`: always accepted too.
    pub raw: String,
    /// What it counts (TRM Table 3-137).
    pub description: &'static str,
    /// Where it can be counted.
    pub counters: &'static str,
}

/// The ARM1176 events the direct backend counts: the 24 selectable events and 0xFF
/// (pmu-armv6 `Arm1176Event::ALL`), each with the name `--events` takes for it.
pub fn arm1176_events() -> Vec<Arm1176EventInfo> {
    use pmu_armv6::Arm1176Event;
    use pmu_linux::pmu_core::{EventEncoding, GenericEvent};
    Arm1176Event::ALL
        .into_iter()
        .map(|event| {
            let generic = GenericEvent::ALL
                .into_iter()
                .find(|g| Arm1176Event::from_generic(*g) == Some(event));
            let raw = format!("r{:02x}", event.code());
            Arm1176EventInfo {
                code: event.code(),
                name: generic.map_or_else(|| raw.clone(), |g| g.perf_name().to_owned()),
                raw,
                description: event.description(),
                counters: if event == Arm1176Event::CycleCount {
                    "CCR (as `cycles`; /64 with --cycle-divider 64), or CR0/CR1 (as rff)"
                } else {
                    "CR0 or CR1"
                },
            }
        })
        .collect()
}

/// A `<pmu>/event=…/` example for this machine: retired instructions on its CPU PMU,
/// event 0x08 on ARMv7/ARMv8 (INST_RETIRED, a common event of the Arm ARM, DDI 0487),
/// 0x07 on the ARM1136/1176 (Linux 6.12 drivers/perf/arm_v6_pmu.c
/// `ARMV6_PERFCTR_INSTR_EXEC`) and 0xc0 on x86 (INST_RETIRED.ANY_P on Intel, "Retired
/// Instructions" on AMD: the same code on both). The PMU is the one sysfs registers
/// (`cpu`, `cpu_core`, `armv8_pmuv3_0`, `armv8_cortex_a53`, `armv6_1176`, …); where
/// there is none, the name Linux gives it on this architecture (`cpu` on x86,
/// `armv8_pmuv3_0` on arm64 from drivers/perf/arm_pmuv3.c, `armv6_1176` on 32-bit ARM,
/// the only core this library's 32-bit build supports) and `registered` false.
pub fn pmu_event_example(sysfs: &Sysfs) -> PmuEventExample {
    let mut names: Vec<String> = sysfs
        .pmus()
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.is_core())
        .map(|p| p.name)
        .collect();
    names.sort();
    let (pmu, registered) = match names.into_iter().next() {
        Some(name) => (name, true),
        None if cfg!(target_arch = "aarch64") => ("armv8_pmuv3_0".to_owned(), false),
        None if cfg!(target_arch = "arm") => ("armv6_1176".to_owned(), false),
        None => ("cpu".to_owned(), false),
    };
    let code = if pmu.starts_with("armv6") {
        0x07
    } else if pmu.starts_with("armv") {
        0x08
    } else {
        0xc0
    };
    PmuEventExample {
        event: format!("{pmu}/event={code:#04x}/"),
        raw: format!("r{code:02x}"),
        registered,
    }
}

/// What [`pmu_event_example`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PmuEventExample {
    /// `<pmu>/event=<code>/`, retired instructions.
    pub event: String,
    /// The same code as a raw event, `r<hex>`.
    pub raw: String,
    /// The PMU is registered in sysfs here (else the architecture's usual name).
    pub registered: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PMU directory as Linux publishes it (Documentation/ABI/testing/
    /// sysfs-bus-event_source-devices: `<root>/<pmu>/type`).
    fn fake_pmu(root: &std::path::Path, name: &str) {
        std::fs::create_dir_all(root.join(name)).unwrap();
        std::fs::write(root.join(name).join("type"), "4\n").unwrap();
    }

    /// The `--events` example names the PMU sysfs has: `cpu` with x86's retired
    /// instructions (0xc0), `armv8_pmuv3_0` with Arm's INST_RETIRED (0x08); with no CPU
    /// PMU (this VM) the architecture's usual name, flagged as not registered.
    #[test]
    fn pmu_event_example_follows_sysfs() {
        let dir = tempfile::tempdir().unwrap();
        fake_pmu(dir.path(), "cpu");
        let x86 = pmu_event_example(&Sysfs::at(dir.path()));
        assert_eq!(
            x86,
            PmuEventExample {
                event: "cpu/event=0xc0/".into(),
                raw: "rc0".into(),
                registered: true
            }
        );
        let dir = tempfile::tempdir().unwrap();
        fake_pmu(dir.path(), "armv8_pmuv3_0");
        let arm = pmu_event_example(&Sysfs::at(dir.path()));
        assert_eq!(arm.event, "armv8_pmuv3_0/event=0x08/");
        assert!(arm.registered);
        // Every example resolves against the tree it came from.
        assert!(arm.event.parse::<pmu_linux::Event>().is_ok());
        let empty = tempfile::tempdir().unwrap();
        let none = pmu_event_example(&Sysfs::at(empty.path()));
        assert!(!none.registered);
        let expected = if cfg!(target_arch = "aarch64") {
            "armv8_pmuv3_0/event=0x08/"
        } else if cfg!(target_arch = "arm") {
            "armv6_1176/event=0x07/"
        } else {
            "cpu/event=0xc0/"
        };
        assert_eq!(none.event, expected);
    }

    /// The table `pmu-demo list` prints on 32-bit ARM: 24 selectable events plus 0xFF
    /// (ARM1176JZF-S TRM Table 3-137: 0x08 and 0x0E are reserved), and every name
    /// it offers is one `--backend direct` accepts for exactly that event number: a
    /// generic event or a raw number (the direct backend counts both as they are; a
    /// name of neither kind would need the running core's table).
    #[test]
    fn arm1176_event_list_names_what_the_direct_backend_takes() {
        use pmu_armv6::Arm1176Event;
        use pmu_linux::pmu_core::EventEncoding;
        use pmu_linux::Event;
        let list = arm1176_events();
        assert_eq!(list.len(), 25);
        assert_eq!(list.iter().filter(|e| e.code != 0xFF).count(), 24);
        for info in &list {
            for name in [&info.name, &info.raw] {
                let event: pmu_linux::Event = name.parse().unwrap();
                let code = match event {
                    Event::Generic(g) => Arm1176Event::from_generic(g).unwrap().code(),
                    Event::Raw(raw) => Arm1176Event::from_raw(raw).unwrap().code(),
                    other => panic!("{name}: neither generic nor raw: {other:?}"),
                };
                assert_eq!(code, info.code, "{name}");
            }
        }
        // Linux's armv6_perf_map (drivers/perf/arm_v6_pmu.c): instructions 0x07,
        // branches 0x05, branch-misses 0x06, cycles 0xFF.
        let name_of = |code: u8| list.iter().find(|e| e.code == code).unwrap().name.clone();
        assert_eq!(name_of(0x07), "instructions");
        assert_eq!(name_of(0x05), "branches");
        assert_eq!(name_of(0x06), "branch-misses");
        assert_eq!(name_of(0xFF), "cycles");
        assert_eq!(name_of(0x0C), "r0c");
    }
}
