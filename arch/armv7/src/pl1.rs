//! The PL1 register file: cp15 through [`crate::asm`], for bare metal and the kernel.

use core::marker::PhantomData;

use crate::asm;
use crate::pmu::{Armv7Pmu, InterruptRegisters, PmuRegisters, ProbeError};
use crate::registers::{
    PerfMon, Pmcntenclr, Pmcntenset, Pmcr, Pmintenclr, Pmintenset, Pmovsr, Pmswinc, Pmuserenr,
    Pmxevtyper,
};
use crate::user_enable::UserAccessRegisters;

/// The PMU of the current CPU, reached from PL1. Not `Send`: it names one CPU.
#[derive(Debug)]
pub struct Pl1Registers {
    _not_send: PhantomData<*const ()>,
}

/// [`Armv7Pmu`] at PL1.
pub type Pl1Pmu = Armv7Pmu<Pl1Registers>;

impl Pl1Registers {
    /// The register file of the current CPU.
    ///
    /// # Safety
    /// The caller runs at PL1 or higher, on one CPU (no migration while it lives), and
    /// owns the PMU there: nothing else (perf, an interrupt handler) writes PMSELR or
    /// the counters meanwhile.
    pub unsafe fn new() -> Self {
        Self {
            _not_send: PhantomData,
        }
    }

    /// ID_DFR0.PerfMon of this CPU.
    pub fn perfmon(&self) -> PerfMon {
        // SAFETY: ID_DFR0 is readable at PL1 (`new`'s contract).
        PerfMon::from_id_dfr0(unsafe { asm::id_dfr0() })
    }

    fn select(&self, sel: u8) {
        // SAFETY: PL1 and ownership (`new`'s contract).
        unsafe { asm::set_pmselr(u32::from(sel & 31)) };
        // PMXEVTYPER/PMXEVCNTR must see the new PMSELR (Linux `armv7_pmnc_select_counter`).
        asm::isb();
    }
}

impl Pl1Pmu {
    /// Takes over this CPU's PMU.
    ///
    /// # Safety
    /// As [`Pl1Registers::new`].
    ///
    /// # Errors
    /// [`ProbeError`] when ID_DFR0 names no PMU.
    pub unsafe fn take() -> Result<Self, ProbeError> {
        // SAFETY: forwarded to the caller.
        let regs = unsafe { Pl1Registers::new() };
        let perfmon = regs.perfmon();
        Armv7Pmu::new(regs, perfmon)
    }
}

impl PmuRegisters for Pl1Registers {
    fn pmcr(&self) -> Pmcr {
        // SAFETY: PL1 (`new`'s contract).
        Pmcr::new(unsafe { asm::pmcr() })
    }
    fn set_pmcr(&self, value: Pmcr) {
        // SAFETY: PL1 and ownership.
        unsafe { asm::set_pmcr(value.get()) };
        // The enable and resets take effect before the next counted instruction.
        asm::isb();
    }
    fn pmceid(&self) -> Option<(u32, u32)> {
        // PMUv3 only: see the trait.
        if !matches!(self.perfmon(), PerfMon::PmuV3(_)) {
            return None;
        }
        // SAFETY: PL1; PMUv3 has PMCEID0/1.
        Some(unsafe { (asm::pmceid0(), asm::pmceid1()) })
    }
    fn pmcntenset(&self) -> Pmcntenset {
        // SAFETY: PL1.
        Pmcntenset::new(unsafe { asm::pmcntenset() })
    }
    fn set_pmcntenset(&self, value: Pmcntenset) {
        // SAFETY: PL1 and ownership.
        unsafe { asm::set_pmcntenset(value.get()) };
        // Counting starts before the instructions that follow.
        asm::isb();
    }
    fn set_pmcntenclr(&self, value: Pmcntenclr) {
        // SAFETY: PL1 and ownership.
        unsafe { asm::set_pmcntenclr(value.get()) };
        // Counting stops before the instructions that follow.
        asm::isb();
    }
    fn pmovsr(&self) -> Pmovsr {
        // SAFETY: PL1.
        Pmovsr::new(unsafe { asm::pmovsr() })
    }
    fn set_pmovsr(&self, value: Pmovsr) {
        // SAFETY: PL1 and ownership.
        unsafe { asm::set_pmovsr(value.get()) };
    }
    fn set_pmswinc(&self, value: Pmswinc) {
        // SAFETY: PL1 and ownership.
        unsafe { asm::set_pmswinc(value.get()) };
    }
    fn pmxevtyper(&self, sel: u8) -> Pmxevtyper {
        self.select(sel);
        // SAFETY: PL1; PMSELR selects an existing counter (trait contract) or 31.
        Pmxevtyper::new(unsafe { asm::pmxevtyper() })
    }
    fn set_pmxevtyper(&self, sel: u8, value: Pmxevtyper) {
        self.select(sel);
        // SAFETY: PL1, ownership, PMSELR selects an existing counter or 31.
        unsafe { asm::set_pmxevtyper(value.get()) };
    }
    fn pmxevcntr(&self, n: u8) -> u32 {
        self.select(n);
        // SAFETY: PL1; n < PMCR.N (trait contract).
        unsafe { asm::pmxevcntr() }
    }
    fn set_pmxevcntr(&self, n: u8, value: u32) {
        self.select(n);
        // SAFETY: PL1, ownership, n < PMCR.N.
        unsafe { asm::set_pmxevcntr(value) };
    }
    fn pmccntr(&self) -> u32 {
        // SAFETY: PL1.
        unsafe { asm::pmccntr() }
    }
    fn set_pmccntr(&self, value: u32) {
        // SAFETY: PL1 and ownership.
        unsafe { asm::set_pmccntr(value) };
    }
}

impl InterruptRegisters for Pl1Registers {
    fn pmintenset(&self) -> Pmintenset {
        // SAFETY: PL1.
        Pmintenset::new(unsafe { asm::pmintenset() })
    }
    fn set_pmintenset(&self, value: Pmintenset) {
        // SAFETY: PL1 and ownership.
        unsafe { asm::set_pmintenset(value.get()) };
    }
    fn set_pmintenclr(&self, value: Pmintenclr) {
        // SAFETY: PL1 and ownership.
        unsafe { asm::set_pmintenclr(value.get()) };
    }
}

impl UserAccessRegisters for Pl1Registers {
    fn id_dfr0(&self) -> u32 {
        // SAFETY: PL1.
        unsafe { asm::id_dfr0() }
    }
    fn pmuserenr(&self) -> Pmuserenr {
        // SAFETY: PL1.
        Pmuserenr::new(unsafe { asm::pmuserenr() })
    }
    fn set_pmuserenr(&self, value: Pmuserenr) {
        // SAFETY: PL1; the grant is the caller's decision (user_enable's rules).
        unsafe { asm::set_pmuserenr(value.get()) };
    }
    fn isb(&self) {
        asm::isb();
    }
}
