//! Whether this machine is an emulator whose counters count exactly: QEMU's TCG
//! `-cpu max` with precise icount and one CPU, the machine pmu-qemu runs.
//!
//! There, and only there, a context switch or a kernel entry inside a region leaves a
//! thread's user-level count of instructions or cycles exactly as it would be without
//! them, as long as the region's edges read the counters at the same instructions
//! whatever happened in between (getrusage at both edges, not the syscall-free region): QEMU
//! counts EL0 instructions only while at EL0 (target/arm/helper.c: the counters are
//! brought up to date at every exception level change, `pmu_pre_el_change` /
//! `pmu_post_el_change`), icount retires one instruction per instruction, with no
//! skid, and perf saves and restores a thread's counts across switches. Shown, not
//! assumed: pmu-linux/examples/undisturbed.rs counts loops of known length with a
//! system call, a page fault or a `sched_yield` to a spinning thread per iteration,
//! and `cargo xtask pmu-qemu` checks each region's count exact (docs/pmu-qemu.md).
//!
//! The three conditions, read from sysfs:
//!
//! - **QEMU's `max` CPU**: MIDR implementer 0 ("reserved for software use"), part
//!   number 0x051 (QEMU 10 target/arm/tcg/cpu64.c `aarch64_max_tcg_initfn`), on every
//!   online CPU. A named model (`-cpu cortex-a57`) has a real core's MIDR and is not
//!   recognised: real silicon with that MIDR skids.
//! - **Precise icount**: the core PMU lists `inst_retired`. Linux lists an event only
//!   where PMCEID0_EL0 says the PMU implements it (drivers/perf/arm_pmuv3.c
//!   `armv8pmu_event_attr_is_visible`), and QEMU implements INST_RETIRED only under
//!   precise icount (target/arm/helper.c `instructions_supported`; docs/qemu.md: PMCEID0
//!   0x20101 with `-icount`, 0x20001 without). Without icount the cycle counter follows
//!   the host's clock.
//! - **One CPU**: `/sys/devices/system/cpu/possible` is `0`. Under icount QEMU's count
//!   is the whole machine's, so with a second vCPU a region can include instructions
//!   the other one retired (docs/qemu.md, "Several vCPUs").

use std::fs;

use crate::machine::sysfs::{is_cpu_pmu, Sysfs};

/// QEMU's `-cpu max`: MIDR implementer 0, part number 0x051 ('Q').
const QEMU_MAX_IMPLEMENTER: u32 = 0x00;
const QEMU_MAX_PART: u32 = 0x051;

/// The machine is QEMU's TCG `-cpu max` with precise icount and one CPU (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ExactEmulation {
    /// The MIDR read.
    pub(crate) midr: u32,
}

impl ExactEmulation {
    /// What the meter says about it.
    pub(crate) fn describe(&self) -> String {
        format!(
            "an emulator that counts exactly (QEMU's `max` CPU, MIDR {:#010x}, with precise icount and one CPU): a context switch or a kernel entry inside a region leaves a thread's user-level count unchanged, so neither makes it untrusted",
            self.midr
        )
    }
}

/// Whether `sysfs`'s machine is exact emulation (module doc); `None` wherever one of
/// the three conditions does not hold or cannot be read.
pub(crate) fn exact_emulation(sysfs: &Sysfs) -> Option<ExactEmulation> {
    let cores = sysfs.cores();
    let [kind] = cores.kinds() else {
        return None;
    };
    let implementer = kind.midr >> 24;
    let part = (kind.midr >> 4) & 0xfff;
    if (implementer, part) != (QEMU_MAX_IMPLEMENTER, QEMU_MAX_PART) {
        return None;
    }
    let possible = fs::read_to_string(sysfs.cpu_root()?.join("possible")).ok()?;
    if possible.trim() != "0" {
        return None;
    }
    // Only the core PMUs are read (their names tell which they are).
    let listed = sysfs.pmu_names().ok()?.iter().any(|name| {
        is_cpu_pmu(name)
            && sysfs
                .pmu(name)
                .is_ok_and(|pmu| pmu.events.contains_key("inst_retired"))
    });
    listed.then_some(ExactEmulation { midr: kind.midr })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::sysfs::fake;
    use std::path::Path;

    /// A machine: `midrs` (one per CPU), `possible`, and the fake arm64 PMU with or
    /// without `inst_retired`.
    fn machine(dir: &Path, midrs: &[u32], possible: &str, inst_retired: bool) -> Sysfs {
        let pmus = dir.join("pmus");
        fake::arm64(&pmus);
        if !inst_retired {
            fs::remove_file(pmus.join("armv8_pmuv3_0/events/inst_retired")).unwrap();
        }
        let cpus = dir.join("cpus");
        for (cpu, midr) in midrs.iter().enumerate() {
            let regs = cpus.join(format!("cpu{cpu}/regs/identification"));
            fs::create_dir_all(&regs).unwrap();
            fs::write(regs.join("midr_el1"), format!("0x{midr:016x}\n")).unwrap();
        }
        fs::create_dir_all(&cpus).unwrap();
        fs::write(cpus.join("possible"), format!("{possible}\n")).unwrap();
        Sysfs::at(pmus).with_cores(cpus, dir.join("no-cpuinfo"))
    }

    /// pmu-qemu's machine: QEMU 10.0's `-cpu max` MIDR 0x000F0510 (implementer 0, part
    /// 0x051: target/arm/tcg/cpu64.c `aarch64_max_tcg_initfn`), `possible` 0 (`-smp 1`),
    /// `inst_retired` listed (icount: PMCEID0_EL0 bit 8, docs/qemu.md). Each condition
    /// missing alone turns it off.
    #[test]
    fn only_qemu_max_with_icount_and_one_cpu_is_exact() {
        let dir = tempfile::tempdir().unwrap();
        let qemu = 0x000F_0510;
        let yes = machine(&dir.path().join("yes"), &[qemu], "0", true);
        assert_eq!(exact_emulation(&yes), Some(ExactEmulation { midr: qemu }));
        assert!(exact_emulation(&yes)
            .unwrap()
            .describe()
            .contains("0x000f0510"));
        // `-smp 2`: the count is the machine's, not the CPU's.
        let two = machine(&dir.path().join("two"), &[qemu, qemu], "0-1", true);
        assert_eq!(exact_emulation(&two), None);
        // One online CPU of two possible (hotplug) is still two.
        let hot = machine(&dir.path().join("hot"), &[qemu], "0-1", true);
        assert_eq!(exact_emulation(&hot), None);
        // No icount: INST_RETIRED not implemented, so not listed.
        let no_icount = machine(&dir.path().join("noicount"), &[qemu], "0", false);
        assert_eq!(exact_emulation(&no_icount), None);
        // A Cortex-A57 (MIDR 0x411FD070, Cortex-A57 TRM r1p0): real silicon's MIDR,
        // whether emulated or not.
        let a57 = machine(&dir.path().join("a57"), &[0x411F_D070], "0", true);
        assert_eq!(exact_emulation(&a57), None);
        // No CPU tree at all (x86, a fake PMU tree alone).
        assert_eq!(
            exact_emulation(&Sysfs::at(dir.path().join("yes/pmus"))),
            None
        );
    }
}
