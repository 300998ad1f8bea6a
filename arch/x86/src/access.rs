//! How the PMU backends reach the hardware: the [`MsrAccess`] trait, the MSR set a CPU's
//! PMU consists of ([`PmuMsrSet`]), and the real ring-0 implementation ([`Ring0Msrs`]).
//!
//! The backends ([`crate::IntelPmu`], [`crate::AmdPmu`]) are generic over [`MsrAccess`], so
//! every register they write is checked on the host against the fake register file of
//! [`crate::fake`]. The real implementation is `unsafe` to construct (it needs CPL 0) and
//! after that only ever touches the performance-monitoring MSRs CPUID enumerated, so its
//! methods are safe.

#[cfg(target_arch = "x86_64")]
use core::cell::Cell;
#[cfg(target_arch = "x86_64")]
use core::marker::PhantomData;

use crate::cpuid::PmuDescription;
use crate::msr::{
    AMD_PERF_CNTR_GLOBAL_CTL, AMD_PERF_CNTR_GLOBAL_STATUS, AMD_PERF_CNTR_GLOBAL_STATUS_CLR,
};
use crate::msr::{
    IA32_A_PMC0, IA32_FIXED_CTR0, IA32_FIXED_CTR_CTRL, IA32_PERFEVTSEL0, IA32_PERF_CAPABILITIES,
    IA32_PERF_GLOBAL_CTRL, IA32_PERF_GLOBAL_OVF_CTRL, IA32_PERF_GLOBAL_STATUS, IA32_PMC0,
};

/// ECX bit 30 of RDPMC selects the fixed-function counters; bits 29:0 are the index
/// (SDM Vol. 2B, RDPMC).
pub const RDPMC_FIXED: u32 = 1 << 30;

/// Access to the model-specific registers and counters of the CPU a PMU backend drives.
///
/// Implementations decide what "the CPU" is: [`Ring0Msrs`] is the one this code runs on,
/// [`crate::fake::FakeMsrs`] a register file in memory. Methods take `&self`: a PMU belongs
/// to one CPU and is not shared between threads.
pub trait MsrAccess {
    /// Reads MSR `msr`.
    fn read(&self, msr: u32) -> u64;

    /// Writes `value` to MSR `msr`.
    fn write(&self, msr: u32, value: u64);

    /// Reads a counter the way RDPMC numbers them (Intel: general-purpose `n` is `n`,
    /// fixed `n` is [`RDPMC_FIXED`]` | n`; AMD: core counter `n` is `n`), ordered with the
    /// instructions around it.
    fn rdpmc(&self, ecx: u32) -> u64;
}

impl<M: MsrAccess + ?Sized> MsrAccess for &M {
    fn read(&self, msr: u32) -> u64 {
        (**self).read(msr)
    }

    fn write(&self, msr: u32, value: u64) {
        (**self).write(msr, value)
    }

    #[inline(always)]
    fn rdpmc(&self, ecx: u32) -> u64 {
        (**self).rdpmc(ecx)
    }
}

/// The performance-monitoring MSRs and RDPMC indices a PMU description enumerates: what a
/// backend may touch on that CPU, and nothing else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PmuMsrSet {
    pmu: PmuDescription,
    full_width_writes: bool,
}

const fn in_block(msr: u32, first: u32, count: u8) -> bool {
    msr >= first && msr - first < count as u32
}

impl PmuMsrSet {
    /// The set of `pmu`; `full_width_writes` adds the IA32_A_PMCx aliases (Intel, from
    /// IA32_PERF_CAPABILITIES.FW_WRITE).
    pub const fn new(pmu: PmuDescription, full_width_writes: bool) -> Self {
        Self {
            pmu,
            full_width_writes,
        }
    }

    /// Whether `msr` belongs to the PMU.
    pub const fn contains(&self, msr: u32) -> bool {
        match self.pmu {
            PmuDescription::Architectural { perfmon, pdcm } => {
                let gp = perfmon.usable_gp_counters();
                let fixed = perfmon.usable_fixed_counters();
                let is_fixed_counter = in_block(msr, IA32_FIXED_CTR0, fixed)
                    && perfmon.fixed_counter_supported((msr - IA32_FIXED_CTR0) as u8);
                let is_global = perfmon.has_global_controls()
                    && matches!(
                        msr,
                        IA32_FIXED_CTR_CTRL
                            | IA32_PERF_GLOBAL_STATUS
                            | IA32_PERF_GLOBAL_CTRL
                            | IA32_PERF_GLOBAL_OVF_CTRL
                    );
                in_block(msr, IA32_PMC0, gp)
                    || in_block(msr, IA32_PERFEVTSEL0, gp)
                    || (self.full_width_writes && in_block(msr, IA32_A_PMC0, gp))
                    || is_fixed_counter
                    || is_global
                    || (pdcm && msr == IA32_PERF_CAPABILITIES)
            }
            PmuDescription::Amd(amd) => {
                let layout = amd.layout();
                let mut n = 0;
                while n < amd.counters() {
                    if msr == layout.perf_ctl(n) || msr == layout.perf_ctr(n) {
                        return true;
                    }
                    n += 1;
                }
                amd.perfmon_v2()
                    && matches!(
                        msr,
                        AMD_PERF_CNTR_GLOBAL_STATUS
                            | AMD_PERF_CNTR_GLOBAL_CTL
                            | AMD_PERF_CNTR_GLOBAL_STATUS_CLR
                    )
            }
        }
    }

    /// Whether RDPMC with `ecx` names a counter of the PMU.
    pub const fn rdpmc_allowed(&self, ecx: u32) -> bool {
        match self.pmu {
            PmuDescription::Architectural { perfmon, .. } => {
                if ecx & RDPMC_FIXED != 0 {
                    let index = ecx & !RDPMC_FIXED;
                    index < perfmon.usable_fixed_counters() as u32
                        && perfmon.fixed_counter_supported(index as u8)
                } else {
                    ecx < perfmon.usable_gp_counters() as u32
                }
            }
            PmuDescription::Amd(amd) => ecx < amd.counters() as u32,
        }
    }
}

/// The MSRs and counters of the CPU this code runs on, at CPL 0.
///
/// Built once per CPU from CPUID ([`crate::cpuid::describe_this_cpu`]) and, on Intel with
/// PDCM, IA32_PERF_CAPABILITIES. Every access outside the CPU's [`PmuMsrSet`] is refused
/// (a read gives 0, a write is dropped, both are counted in [`Ring0Msrs::refused`]) instead
/// of raising #GP or changing a system MSR.
///
/// Not `Send`: it stands for the CPU it was made on.
#[cfg(target_arch = "x86_64")]
#[derive(Debug)]
pub struct Ring0Msrs {
    info: crate::cpuid::CpuPmuInfo,
    set: PmuMsrSet,
    full_width_writes: bool,
    refused: Cell<u32>,
    _one_cpu: PhantomData<*const ()>,
}

#[cfg(target_arch = "x86_64")]
impl Ring0Msrs {
    /// Probes this CPU's PMU.
    ///
    /// # Safety
    /// Needs CPL 0 (RDMSR/WRMSR/RDPMC fault otherwise), for as long as the value lives.
    /// The caller must keep the code on this CPU while the value lives (no migration:
    /// pinned, or preemption disabled) and own its PMU (no perf driver or other agent
    /// programs it meanwhile).
    ///
    /// # Errors
    /// Those of [`crate::cpuid::describe`]: on a VM without a virtual PMU,
    /// [`crate::ProbeError::NoArchitecturalPmu`].
    pub unsafe fn new() -> Result<Self, crate::ProbeError> {
        use crate::ia32_perf_capabilities::{Ia32PerfCapabilities, IA32_PERF_CAPABILITIES};

        let info = crate::cpuid::describe_this_cpu()?;
        let full_width_writes = match info.pmu {
            PmuDescription::Architectural { pdcm: true, .. } => {
                // SAFETY: CPL 0 by the caller's contract; CPUID.01H:ECX.PDCM = 1 says
                // IA32_PERF_CAPABILITIES exists; reading it changes nothing.
                let raw = unsafe { crate::asm::rdmsr(crate::msr::IA32_PERF_CAPABILITIES) };
                Ia32PerfCapabilities::new(raw).is_set(IA32_PERF_CAPABILITIES::FW_WRITE)
            }
            _ => false,
        };
        Ok(Self {
            info,
            set: PmuMsrSet::new(info.pmu, full_width_writes),
            full_width_writes,
            refused: Cell::new(0),
            _one_cpu: PhantomData,
        })
    }

    /// What CPUID said about this CPU's PMU.
    pub fn info(&self) -> crate::cpuid::CpuPmuInfo {
        self.info
    }

    /// Whether IA32_PERF_CAPABILITIES.FW_WRITE is set (Intel).
    pub fn full_width_writes(&self) -> bool {
        self.full_width_writes
    }

    /// The MSRs this value touches.
    pub fn msr_set(&self) -> &PmuMsrSet {
        &self.set
    }

    /// How many accesses outside [`Self::msr_set`] were refused (a bug in the caller).
    pub fn refused(&self) -> u32 {
        self.refused.get()
    }

    fn refuse(&self) {
        self.refused.set(self.refused.get().saturating_add(1));
    }
}

#[cfg(target_arch = "x86_64")]
impl MsrAccess for Ring0Msrs {
    fn read(&self, msr: u32) -> u64 {
        if self.set.contains(msr) {
            // SAFETY: CPL 0 by the constructor's contract; `msr` is one CPUID enumerated
            // for this CPU's PMU, so it exists; reading a PMU MSR has no side effect.
            unsafe { crate::asm::rdmsr(msr) }
        } else {
            self.refuse();
            0
        }
    }

    fn write(&self, msr: u32, value: u64) {
        if self.set.contains(msr) {
            // SAFETY: CPL 0 by the constructor's contract; `msr` is an enumerated PMU MSR,
            // and performance-monitoring state cannot break memory safety (an INT bit at
            // worst raises a PMI the owner of the PMU has to handle).
            unsafe { crate::asm::wrmsr(msr, value) }
        } else {
            self.refuse();
        }
    }

    #[inline(always)]
    fn rdpmc(&self, ecx: u32) -> u64 {
        if self.set.rdpmc_allowed(ecx) {
            // SAFETY: CPL 0 by the constructor's contract; `ecx` names an enumerated
            // counter. Fenced so a measured region's events fall between two reads.
            unsafe { crate::asm::rdpmc_fenced(ecx) }
        } else {
            self.refuse();
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuid::{AmdCoreCounters, ArchPerfmon};
    use crate::msr::{ia32_a_pmc, ia32_fixed_ctr, ia32_perfevtsel, ia32_pmc, AmdCounterLayout};

    fn skylake(pdcm: bool) -> PmuDescription {
        PmuDescription::Architectural {
            perfmon: ArchPerfmon::decode(0x0730_0404, 0, 0, 0x603).unwrap(),
            pdcm,
        }
    }

    /// Skylake (4 general-purpose, 3 fixed counters, version 4): exactly the MSRs of
    /// SDM Vol. 4 for those counters, nothing around them.
    #[test]
    fn intel_set_is_what_cpuid_enumerates() {
        let set = PmuMsrSet::new(skylake(true), false);
        for n in 0..4 {
            assert!(set.contains(ia32_pmc(n)) && set.contains(ia32_perfevtsel(n)));
            assert!(!set.contains(ia32_a_pmc(n)), "no FW_WRITE");
        }
        assert!(!set.contains(ia32_pmc(4)) && !set.contains(ia32_perfevtsel(4)));
        assert!(set.contains(ia32_fixed_ctr(2)) && !set.contains(ia32_fixed_ctr(3)));
        for msr in [0x38D, 0x38E, 0x38F, 0x390, 0x345] {
            assert!(set.contains(msr), "{msr:#x}");
        }
        // System MSRs are never in it: IA32_EFER, IA32_LSTAR, IA32_APIC_BASE.
        for msr in [0xC000_0080, 0xC000_0082, 0x1B] {
            assert!(!set.contains(msr));
        }
        assert!(!PmuMsrSet::new(skylake(false), false).contains(0x345));
        assert!(PmuMsrSet::new(skylake(true), true).contains(ia32_a_pmc(3)));

        assert!(set.rdpmc_allowed(3) && !set.rdpmc_allowed(4));
        assert!(set.rdpmc_allowed(RDPMC_FIXED | 2) && !set.rdpmc_allowed(RDPMC_FIXED | 3));
        assert!(!set.rdpmc_allowed(1 << 31));
    }

    /// Version 1 has no global controls (SDM: they exist "If CPUID.0AH: EAX\[7:0\] > 1").
    #[test]
    fn version_1_has_no_global_msrs() {
        let v1 = PmuDescription::Architectural {
            perfmon: ArchPerfmon::decode(0x0728_0201, 0, 0, 0).unwrap(),
            pdcm: false,
        };
        let set = PmuMsrSet::new(v1, false);
        assert!(set.contains(ia32_pmc(1)) && !set.contains(ia32_pmc(2)));
        assert!(!set.contains(0x38F) && !set.contains(0x38D));
    }

    /// APM Vol. 2: six extended PERF_CTL/CTR pairs from C001_0200h or four legacy ones;
    /// the PerfMonV2 global MSRs C000_0300h-02h only with PerfMonV2.
    #[test]
    fn amd_sets() {
        let ext = PmuMsrSet::new(
            PmuDescription::Amd(AmdCoreCounters::decode(1 << 23, None)),
            false,
        );
        let layout = AmdCounterLayout::Extended;
        assert!(ext.contains(layout.perf_ctl(5)) && ext.contains(layout.perf_ctr(5)));
        assert!(!ext.contains(layout.perf_ctl(6)));
        assert!(!ext.contains(AMD_PERF_CNTR_GLOBAL_CTL));
        assert!(ext.rdpmc_allowed(5) && !ext.rdpmc_allowed(6));
        let v2 = PmuMsrSet::new(
            PmuDescription::Amd(AmdCoreCounters::decode(1 << 23, Some((1, 6)))),
            false,
        );
        assert!(
            v2.contains(AMD_PERF_CNTR_GLOBAL_CTL) && v2.contains(AMD_PERF_CNTR_GLOBAL_STATUS_CLR)
        );
        let legacy = PmuMsrSet::new(PmuDescription::Amd(AmdCoreCounters::decode(0, None)), false);
        assert!(legacy.contains(0xC001_0003) && legacy.contains(0xC001_0007));
        assert!(!legacy.contains(0xC001_0200));
    }
}
