//! Every instruction the crate executes: `mrc`/`mcr p15, 0, <Rt>, c9, …` and `isb`,
//! one small function each, only on `target_arch = "arm"`.
//!
//! Encodings: ARMv7-A/R ARM (DDI 0406C) chapter B3, "Summary of CP15 c9 register
//! encodings" (PMCR c9,c12,0; PMCNTENSET c9,c12,1; PMCNTENCLR c9,c12,2; PMOVSR
//! c9,c12,3; PMSWINC c9,c12,4; PMSELR c9,c12,5; PMCEID0 c9,c12,6; PMCEID1 c9,c12,7;
//! PMCCNTR c9,c13,0; PMXEVTYPER c9,c13,1; PMXEVCNTR c9,c13,2; PMUSERENR c9,c14,0;
//! PMINTENSET c9,c14,1; PMINTENCLR c9,c14,2) and ID_DFR0 c0,c1,2.
//!
//! Which functions may run where is each one's `# Safety`: at PL1 all of them; at PL0
//! only what PMUSERENR grants (EN: all but PMUSERENR writes and PMINTEN*; ER: PMSELR,
//! PMXEVCNTR reads; CR: PMCCNTR reads; SW: PMSWINC). Anything else is UNDEFINED at PL0.

#![cfg(target_arch = "arm")]

use core::arch::asm;

macro_rules! cp15_read {
    ($(#[$doc:meta])* $name:ident, $crn:literal, $crm:literal, $op2:literal) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// The access must be permitted at the current privilege level (see the module
        /// doc); otherwise it raises an Undefined Instruction exception.
        #[inline(always)]
        pub unsafe fn $name() -> u32 {
            let value: u32;
            // SAFETY: the caller guarantees the access is permitted; a cp15 read has no
            // side effect on memory.
            unsafe {
                asm!(concat!("mrc p15, 0, {}, ", $crn, ", ", $crm, ", ", $op2),
                     out(reg) value, options(nomem, nostack, preserves_flags));
            }
            value
        }
    };
}

/// A counter read: as `cp15_read!`, but not `nomem`. Counter reads bracket a measured
/// region, so the compiler must not move the region's loads and stores across them
/// (without `nomem` the asm is a compiler barrier for memory; it costs nothing at run
/// time).
macro_rules! cp15_counter_read {
    ($(#[$doc:meta])* $name:ident, $crn:literal, $crm:literal, $op2:literal) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// The access must be permitted at the current privilege level (see the module
        /// doc); otherwise it raises an Undefined Instruction exception.
        #[inline(always)]
        pub unsafe fn $name() -> u32 {
            let value: u32;
            // SAFETY: the caller guarantees the access is permitted; a cp15 read writes
            // only `value`.
            unsafe {
                asm!(concat!("mrc p15, 0, {}, ", $crn, ", ", $crm, ", ", $op2),
                     out(reg) value, options(nostack, preserves_flags));
            }
            value
        }
    };
}

macro_rules! cp15_write {
    ($(#[$doc:meta])* $name:ident, $crn:literal, $crm:literal, $op2:literal) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// The access must be permitted at the current privilege level, and the caller
        /// must own the PMU state it changes (no other agent — perf, another thread on
        /// this CPU — relies on it). No barrier: see [`isb`].
        #[inline(always)]
        pub unsafe fn $name(value: u32) {
            // SAFETY: the caller guarantees permission and ownership.
            unsafe {
                asm!(concat!("mcr p15, 0, {}, ", $crn, ", ", $crm, ", ", $op2),
                     in(reg) value, options(nostack, preserves_flags));
            }
        }
    };
}

cp15_read!(/// ID_DFR0 (PerfMon in bits 27:24).
    id_dfr0, "c0", "c1", "2");
cp15_read!(/// PMCR.
    pmcr, "c9", "c12", "0");
cp15_write!(/// Writes PMCR.
    set_pmcr, "c9", "c12", "0");
cp15_read!(/// PMCNTENSET (the enabled counters).
    pmcntenset, "c9", "c12", "1");
cp15_write!(/// Writes PMCNTENSET: enables the counters of the 1 bits.
    set_pmcntenset, "c9", "c12", "1");
cp15_write!(/// Writes PMCNTENCLR: disables the counters of the 1 bits.
    set_pmcntenclr, "c9", "c12", "2");
cp15_read!(/// PMOVSR (the overflow flags).
    pmovsr, "c9", "c12", "3");
cp15_write!(/// Writes PMOVSR: clears the overflow flags of the 1 bits.
    set_pmovsr, "c9", "c12", "3");
cp15_write!(/// Writes PMSWINC.
    set_pmswinc, "c9", "c12", "4");
cp15_read!(/// PMSELR.
    pmselr, "c9", "c12", "5");
cp15_write!(/// Writes PMSELR (PMXEVTYPER/PMXEVCNTR see it after an `isb`).
    set_pmselr, "c9", "c12", "5");
cp15_read!(/// PMCEID0 (common events 0x00..=0x1F).
    pmceid0, "c9", "c12", "6");
cp15_read!(/// PMCEID1 (common events 0x20..=0x3F).
    pmceid1, "c9", "c12", "7");
cp15_counter_read!(/// PMCCNTR (low 32 bits on PMUv3).
    pmccntr, "c9", "c13", "0");
cp15_write!(/// Writes PMCCNTR.
    set_pmccntr, "c9", "c13", "0");
cp15_read!(/// PMXEVTYPER of the counter PMSELR selects.
    pmxevtyper, "c9", "c13", "1");
cp15_write!(/// Writes PMXEVTYPER of the counter PMSELR selects.
    set_pmxevtyper, "c9", "c13", "1");
cp15_counter_read!(/// PMXEVCNTR of the counter PMSELR selects.
    pmxevcntr, "c9", "c13", "2");
cp15_write!(/// Writes PMXEVCNTR of the counter PMSELR selects.
    set_pmxevcntr, "c9", "c13", "2");
cp15_read!(/// PMUSERENR.
    pmuserenr, "c9", "c14", "0");
cp15_write!(/// Writes PMUSERENR (PL1 only).
    set_pmuserenr, "c9", "c14", "0");
cp15_read!(/// PMINTENSET (PL1 only).
    pmintenset, "c9", "c14", "1");
cp15_write!(/// Writes PMINTENSET (PL1 only).
    set_pmintenset, "c9", "c14", "1");
cp15_write!(/// Writes PMINTENCLR (PL1 only).
    set_pmintenclr, "c9", "c14", "2");

/// `PMEVCNTR<N>`: event counter N through its own encoding, `c14, c(8 + N/8), N%8`
/// (Arm ARM DDI 0487 G8 "`PMEVCNTR<n>`", PMUv3 only: on ARMv7 PMUv1/PMUv2 the encoding
/// is UNDEFINED). One `mrc`, no PMSELR, no `isb`. `N > 30` does not compile.
///
/// # Safety
/// The PMU is PMUv3, N < PMCR.N, and the access is permitted at the current privilege
/// level (PL1, or PL0 with PMUSERENR.EN or .ER); otherwise it is UNDEFINED or
/// CONSTRAINED UNPREDICTABLE.
#[inline(always)]
pub unsafe fn pmevcntr<const N: u8>() -> u32 {
    const { assert!(N <= 30, "PMEVCNTR<n> exists for n = 0..=30") };
    let value: u32;
    // SAFETY: the caller guarantees PMUv3, N < PMCR.N and permission; a cp15 read writes
    // only `value`. Not `nomem`, as every counter read here (`cp15_counter_read!`).
    unsafe {
        asm!("mrc p15, 0, {value}, c14, c{crm}, {op2}",
             value = out(reg) value, crm = const 8 + N / 8, op2 = const N % 8,
             options(nostack, preserves_flags));
    }
    value
}

/// Instruction Synchronization Barrier: makes earlier cp15 writes (PMSELR, PMCR,
/// PMUSERENR, PMCNTENSET) visible to the instructions after it (DDI 0406C B3.15.5
/// "Synchronization of changes to system control registers").
///
/// Written as its A32 encoding, `ISB SY` = 0xF57FF06F (DDI 0406C A8.8.54, encoding A1):
/// this crate is also built for ARMv6 targets (`arm-unknown-linux-gnueabi`, whose
/// pmu-linux picks the ARM1176 or an ARMv7 PMU at run time), where the assembler has no
/// `isb`; there it runs only after an ARMv7 or later core was found. Every target this
/// crate builds for assembles A32 (none is Thumb).
#[inline(always)]
pub fn isb() {
    // SAFETY: `isb` only orders the instruction stream; it is permitted at every
    // privilege level and touches no memory.
    unsafe { asm!(".inst 0xf57ff06f", options(nomem, nostack, preserves_flags)) }
}
