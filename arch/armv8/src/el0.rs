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
}

sysreg_pmu_registers!(El0Registers);

// SAFETY: `El0Registers::new`'s contract: PMUSERENR_EL0.EN on this (pinned) PE, which
// opens every event counter below PMCR_EL0.N (read at construction) and PMCCNTR_EL0.
unsafe impl crate::handle::ReadGrant for El0Registers {
    fn readable(&self) -> crate::handle::CounterMask {
        crate::handle::CounterMask::below(self.event_counters)
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
