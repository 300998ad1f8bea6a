//! The PL0 register file: cp15 from User mode after the kernel set PMUSERENR.EN.
//!
//! With EN, PL0 may access every PMU register but PMUSERENR writes and PMINTEN*
//! (DDI 0406C C12), so this file implements [`PmuRegisters`] but not
//! [`crate::pmu::InterruptRegisters`]. ID_DFR0 is not readable at PL0: the caller
//! names the PMU version (a kernel module's log, /proc/cpuinfo's "CPU part").

use core::marker::PhantomData;

use crate::asm;
use crate::pmu::{Armv7Pmu, PmuRegisters, ProbeError};
use crate::registers::{
    PerfMon, Pmcntenclr, Pmcntenset, Pmcr, Pmovsr, Pmswinc, Pmuserenr, Pmxevtyper, PMUSERENR,
};

/// The PMU of the current CPU, reached from PL0.
#[derive(Debug)]
pub struct Pl0Registers {
    perfmon: PerfMon,
    _not_send: PhantomData<*const ()>,
}

/// [`Armv7Pmu`] at PL0.
pub type Pl0Pmu = Armv7Pmu<Pl0Registers>;

/// PMUSERENR does not grant PL0 programming.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoWriteGrant {
    /// PMUSERENR as read.
    pub pmuserenr: u32,
}

impl Pl0Registers {
    /// The register file of the current CPU, checked against PMUSERENR.EN.
    ///
    /// # Safety
    /// The thread is pinned to one CPU, every CPU it could run on has PMUSERENR.EN set
    /// for as long as this lives, and nothing else (perf, another thread) uses the
    /// PMU meanwhile. PMUSERENR itself is readable at PL0.
    ///
    /// # Errors
    /// [`NoWriteGrant`] when EN is clear here.
    pub unsafe fn new(perfmon: PerfMon) -> Result<Self, NoWriteGrant> {
        // SAFETY: PMUSERENR reads are permitted at PL0 (DDI 0406C C12).
        let pmuserenr = Pmuserenr::new(unsafe { asm::pmuserenr() });
        if !pmuserenr.is_set(PMUSERENR::EN) {
            return Err(NoWriteGrant {
                pmuserenr: pmuserenr.get(),
            });
        }
        Ok(Self {
            perfmon,
            _not_send: PhantomData,
        })
    }

    fn select(&self, sel: u8) {
        // SAFETY: EN is set (`new`).
        unsafe { asm::set_pmselr(u32::from(sel & 31)) };
        // PMXEVTYPER/PMXEVCNTR must see the new PMSELR.
        asm::isb();
    }
}

impl Pl0Pmu {
    /// Takes over the PMU from PL0.
    ///
    /// # Safety
    /// As [`Pl0Registers::new`].
    ///
    /// # Errors
    /// `Err(None)` when PMUSERENR.EN is clear, `Err(Some(_))` when `perfmon` names no PMU.
    pub unsafe fn take(perfmon: PerfMon) -> Result<Self, Option<ProbeError>> {
        // SAFETY: forwarded to the caller.
        let regs = unsafe { Pl0Registers::new(perfmon) }.map_err(|_| None)?;
        Armv7Pmu::new(regs, perfmon).map_err(Some)
    }
}

impl PmuRegisters for Pl0Registers {
    fn pmcr(&self) -> Pmcr {
        // SAFETY: EN grants PL0 every PMU register but PMUSERENR writes and PMINTEN*.
        Pmcr::new(unsafe { asm::pmcr() })
    }
    fn set_pmcr(&self, value: Pmcr) {
        // SAFETY: EN (see `pmcr`).
        unsafe { asm::set_pmcr(value.get()) };
        // The enable and resets take effect before the next counted instruction.
        asm::isb();
    }
    fn pmceid(&self) -> Option<(u32, u32)> {
        // PMUv3 only: see the trait.
        if !matches!(self.perfmon, PerfMon::PmuV3(_)) {
            return None;
        }
        // SAFETY: EN; PMUv3 has PMCEID0/1.
        Some(unsafe { (asm::pmceid0(), asm::pmceid1()) })
    }
    fn pmcntenset(&self) -> Pmcntenset {
        // SAFETY: EN.
        Pmcntenset::new(unsafe { asm::pmcntenset() })
    }
    fn set_pmcntenset(&self, value: Pmcntenset) {
        // SAFETY: EN.
        unsafe { asm::set_pmcntenset(value.get()) };
        // Counting starts before the instructions that follow.
        asm::isb();
    }
    fn set_pmcntenclr(&self, value: Pmcntenclr) {
        // SAFETY: EN.
        unsafe { asm::set_pmcntenclr(value.get()) };
        // Counting stops before the instructions that follow.
        asm::isb();
    }
    fn pmovsr(&self) -> Pmovsr {
        // SAFETY: EN.
        Pmovsr::new(unsafe { asm::pmovsr() })
    }
    fn set_pmovsr(&self, value: Pmovsr) {
        // SAFETY: EN.
        unsafe { asm::set_pmovsr(value.get()) };
    }
    fn set_pmswinc(&self, value: Pmswinc) {
        // SAFETY: EN.
        unsafe { asm::set_pmswinc(value.get()) };
    }
    fn pmxevtyper(&self, sel: u8) -> Pmxevtyper {
        self.select(sel);
        // SAFETY: EN; PMSELR selects an existing counter or 31.
        Pmxevtyper::new(unsafe { asm::pmxevtyper() })
    }
    fn set_pmxevtyper(&self, sel: u8, value: Pmxevtyper) {
        self.select(sel);
        // SAFETY: EN; PMSELR selects an existing counter or 31.
        unsafe { asm::set_pmxevtyper(value.get()) };
    }
    fn pmxevcntr(&self, n: u8) -> u32 {
        // Checked against a select by an interrupt or another process in between
        // (crate::reader's module doc).
        // SAFETY: EN grants PMSELR and PMXEVCNTR; n < PMCR.N (the caller's bound).
        let access = unsafe { crate::reader::Cp15Selected::new() };
        crate::reader::read_selected(&access, n)
    }
    fn set_pmxevcntr(&self, n: u8, value: u32) {
        self.select(n);
        // SAFETY: EN; n < PMCR.N.
        unsafe { asm::set_pmxevcntr(value) };
    }
    fn pmccntr(&self) -> u32 {
        // SAFETY: EN.
        unsafe { asm::pmccntr() }
    }
    fn set_pmccntr(&self, value: u32) {
        // SAFETY: EN.
        unsafe { asm::set_pmccntr(value) };
    }
}
