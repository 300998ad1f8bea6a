//! The PMU from EL0, once the kernel has set PMUSERENR_EL0.EN.
//!
//! With EN set, EL0 may access every PMUv3 register except PMUSERENR_EL0 itself and
//! the PMINTEN*_EL1 interrupt enables, which stay UNDEFINED at EL0. [`El0Registers`]
//! therefore implements [`PmuRegisters`] but not
//! [`InterruptRegisters`](crate::pmu::InterruptRegisters): code built on it cannot
//! touch them. Only built for `target_arch = "aarch64"`.

use core::marker::PhantomData;

use crate::asm;
use crate::counter::EventCounter;
use crate::pmu::{Armv8Pmu, PmuOptions, PmuRegisters, ProbeError};
use crate::registers::{
    PmccfiltrEl0, Pmceid0El0, Pmceid1El0, PmcntenclrEl0, PmcntensetEl0, PmcrEl0, PmevtypernEl0,
    PmovsclrEl0, PmovssetEl0, PmswincEl0, PMCR_EL0,
};
use crate::version::PmuVersion;

/// The PMUv3 registers accessed from EL0 with PMUSERENR_EL0.EN = 1.
///
/// `!Send` and `!Sync`: the registers (and the EN bit) belong to one PE.
#[derive(Debug)]
pub struct El0Registers {
    event_counters: u8,
    _this_cpu: PhantomData<*const ()>,
}

impl El0Registers {
    /// Access to this PE's PMU registers from EL0.
    ///
    /// # Safety
    ///
    /// - The PE implements PMUv3 and the kernel has set PMUSERENR_EL0.EN on it (for
    ///   example the enable-user module); otherwise every access traps (Linux: SIGILL).
    /// - The thread stays on this PE while the value lives (`sched_setaffinity` to one
    ///   CPU): EN and the counters are per PE.
    /// - Nothing else programs the PMU meanwhile: no perf events on this CPU (Linux's
    ///   `armv8pmu_start` reprograms the counters and rewrites PMUSERENR_EL0).
    pub unsafe fn new() -> Self {
        // SAFETY: the caller guarantees PMUv3 with PMUSERENR_EL0.EN set.
        let pmcr = PmcrEl0::new(unsafe { asm::read_pmcr_el0() });
        Self {
            event_counters: pmcr.read(PMCR_EL0::N).min(31) as u8,
            _this_cpu: PhantomData,
        }
    }

    fn exists(&self, counter: EventCounter) -> bool {
        counter.index() < self.event_counters
    }
}

// SAFETY (for every `unsafe` block below): constructing `El0Registers` guaranteed
// PMUv3 with PMUSERENR_EL0.EN = 1 on this pinned PE and exclusive use (see `new`);
// with EN every register used here is accessible at EL0; event counters at or above
// PMCR_EL0.N are never accessed.
impl PmuRegisters for El0Registers {
    fn pmcr(&self) -> PmcrEl0 {
        // SAFETY: see above.
        PmcrEl0::new(unsafe { asm::read_pmcr_el0() })
    }

    fn set_pmcr(&self, value: PmcrEl0) {
        // SAFETY: see above.
        unsafe { asm::write_pmcr_el0(value.get()) }
    }

    fn pmceid0(&self) -> Pmceid0El0 {
        // SAFETY: see above.
        Pmceid0El0::new(unsafe { asm::read_pmceid0_el0() })
    }

    fn pmceid1(&self) -> Pmceid1El0 {
        // SAFETY: see above.
        Pmceid1El0::new(unsafe { asm::read_pmceid1_el0() })
    }

    fn pmcntenset(&self) -> PmcntensetEl0 {
        // SAFETY: see above.
        PmcntensetEl0::new(unsafe { asm::read_pmcntenset_el0() })
    }

    fn set_pmcntenset(&self, value: PmcntensetEl0) {
        // SAFETY: see above.
        unsafe { asm::write_pmcntenset_el0(value.get()) }
    }

    fn set_pmcntenclr(&self, value: PmcntenclrEl0) {
        // SAFETY: see above.
        unsafe { asm::write_pmcntenclr_el0(value.get()) }
    }

    fn pmovsset(&self) -> PmovssetEl0 {
        // SAFETY: see above.
        PmovssetEl0::new(unsafe { asm::read_pmovsset_el0() })
    }

    fn set_pmovsclr(&self, value: PmovsclrEl0) {
        // SAFETY: see above.
        unsafe { asm::write_pmovsclr_el0(value.get()) }
    }

    fn set_pmswinc(&self, value: PmswincEl0) {
        // SAFETY: see above.
        unsafe { asm::write_pmswinc_el0(value.get()) }
    }

    fn pmevtyper(&self, counter: EventCounter) -> PmevtypernEl0 {
        if !self.exists(counter) {
            return PmevtypernEl0::new(0);
        }
        // SAFETY: see above; n < N was just checked.
        PmevtypernEl0::new(unsafe { asm::read_pmevtyper_el0(counter) })
    }

    fn set_pmevtyper(&self, counter: EventCounter, value: PmevtypernEl0) {
        if self.exists(counter) {
            // SAFETY: see above; n < N was just checked.
            unsafe { asm::write_pmevtyper_el0(counter, value.get()) }
        }
    }

    fn pmevcntr(&self, counter: EventCounter) -> u64 {
        if !self.exists(counter) {
            return 0;
        }
        // SAFETY: see above; n < N was just checked.
        unsafe { asm::read_pmevcntr_el0(counter) }
    }

    fn set_pmevcntr(&self, counter: EventCounter, value: u64) {
        if self.exists(counter) {
            // SAFETY: see above; n < N was just checked.
            unsafe { asm::write_pmevcntr_el0(counter, value) }
        }
    }

    fn pmccfiltr(&self) -> PmccfiltrEl0 {
        // SAFETY: see above.
        PmccfiltrEl0::new(unsafe { asm::read_pmccfiltr_el0() })
    }

    fn set_pmccfiltr(&self, value: PmccfiltrEl0) {
        // SAFETY: see above.
        unsafe { asm::write_pmccfiltr_el0(value.get()) }
    }

    fn pmccntr(&self) -> u64 {
        // SAFETY: see above.
        unsafe { asm::read_pmccntr_el0() }
    }

    fn set_pmccntr(&self, value: u64) {
        // SAFETY: see above.
        unsafe { asm::write_pmccntr_el0(value) }
    }
}

/// The PMU driven from EL0.
pub type El0Pmu = Armv8Pmu<El0Registers>;

impl Armv8Pmu<El0Registers> {
    /// Takes the PMU over from EL0: every counter disabled, flags cleared, counters
    /// zeroed, PMCR_EL0 = E | LC (| LP). The overflow interrupt enables are left alone
    /// (EL1 registers).
    ///
    /// `version` comes from the caller because EL0 cannot read ID_AA64DFR0_EL1.PMUVer
    /// (Linux hides it): pass what the kernel side found, or [`PmuVersion::PmuV3`] to
    /// assume only the baseline (32-bit event counters).
    ///
    /// # Errors
    /// [`ProbeError::NoPmuV3`] before any PMU register is touched;
    /// [`ProbeError::LongCountersUnsupported`].
    ///
    /// # Safety
    ///
    /// The conditions of [`El0Registers::new`] (PMUSERENR_EL0.EN set by the kernel on
    /// this PE, pinned thread, no perf user of the PMU), and `version` must not claim
    /// more than the PE has.
    pub unsafe fn take(version: PmuVersion, options: PmuOptions) -> Result<Self, ProbeError> {
        if !version.is_pmuv3() {
            return Err(ProbeError::NoPmuV3 { version });
        }
        // SAFETY: the caller's contract.
        let regs = unsafe { El0Registers::new() };
        Self::new(regs, version, options)
    }
}
