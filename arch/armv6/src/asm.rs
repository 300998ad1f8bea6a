//! Every instruction of this crate: `mrc`/`mcr` to the ARM1176 PMU registers in CP15
//! c15 (operands in [`crate::cp15`]), one small function each.
//!
//! Only built for `target_arch = "arm"` in A32 (ARM) state: Thumb-1 has no coprocessor
//! instructions.
//!
//! # Compiler ordering
//!
//! Every function is `asm!` without `pure`, so the compiler keeps them in program
//! order among themselves and never drops or merges one. What differs is whether they
//! may move across ordinary loads and stores:
//!
//! - reads of PMCR and SUNAVCR are `nomem`: their value depends on no memory, and an
//!   overflow check stays after the counter read it belongs to anyway, because all the
//!   asm here keeps its program order;
//! - reads and writes of the counters, and writes of PMCR and SUNAVCR, are *not*
//!   `nomem`: they bracket a measured region (start, stop, read, preset), so the
//!   region's own loads and stores must not be moved out of the bracket, and a SUNAVCR
//!   grant must happen before any store that announces it. Without `nomem` the asm is a
//!   compiler barrier for memory, which costs nothing at run time.
//!
//! # Hardware ordering
//!
//! There is no barrier here. The ARM1176 executes CP15 accesses in program order, it
//! has no ISB (ARMv6 has only the CP15 "Prefetch Flush" operation), and the Linux
//! driver (drivers/perf/arm_v6_pmu.c) issues none around these registers either. An
//! instruction already in the pipeline when counting starts or stops may or may not be
//! counted; a Prefetch Flush would only move that edge by a few instructions.
//!
//! # Safety of the accessors
//!
//! All functions are `unsafe`: on anything but an ARM1176, or at PL0 without
//! SUNAVCR.V, they raise an Undefined Instruction exception (SIGILL under Linux; QEMU's
//! ARM1176 model reads c15 as 0 at PL1, docs/qemu.md). Writes change
//! state the whole CPU shares.

use core::arch::asm;

use crate::ccr::Ccr;
use crate::cp15::cp15_operands;
use crate::cr0::Cr0;
use crate::cr1::Cr1;
use crate::pmcr::Pmcr;
use crate::sunavcr::Sunavcr;

/// Reads PMCR.
///
/// P and C read as Unpredictable, and the overflow flags are write-1-to-clear: start a
/// read-modify-write from [`crate::pmcr::for_write_back`].
///
/// # Safety
/// The CPU is an ARM1176 and the code runs at PL1, or at PL0 with SUNAVCR.V set.
#[inline(always)]
pub unsafe fn read_pmcr() -> Pmcr {
    let value: u32;
    // SAFETY: the caller guarantees the register exists and is accessible; `mrc` only
    // writes `value`.
    unsafe {
        asm!(
            concat!("mrc ", cp15_operands!(PMCR)),
            out(reg) value,
            options(nomem, nostack, preserves_flags),
        );
    }
    Pmcr::new(value)
}

/// Writes PMCR.
///
/// Acts on more than state: 1 in an overflow flag clears that flag, 1 in P or C zeroes
/// counters, E starts or stops all three counters.
///
/// # Safety
/// - The CPU is an ARM1176 and the code runs at PL1, or at PL0 with SUNAVCR.V set.
/// - The caller owns the PMU: nobody else (Linux perf, another driver) relies on its
///   state.
/// - `value` sets no interrupt enable (EC0, EC1, ECC) unless a handler for the PMU
///   interrupt is installed that clears the overflow flags; otherwise an overflow
///   raises an interrupt nobody acknowledges.
#[inline(always)]
pub unsafe fn write_pmcr(value: Pmcr) {
    // SAFETY: the caller guarantees access, ownership and the interrupt rule; `mcr` only
    // reads its register. Not `nomem`: it starts or stops counting, and must stay on its
    // side of the measured code's memory accesses.
    unsafe {
        asm!(
            concat!("mcr ", cp15_operands!(PMCR)),
            in(reg) value.get(),
            options(nostack, preserves_flags),
        );
    }
}

/// Reads the CCR.
///
/// # Safety
/// The CPU is an ARM1176 and the code runs at PL1, or at PL0 with SUNAVCR.V set.
#[inline(always)]
pub unsafe fn read_ccr() -> Ccr {
    let value: u32;
    // SAFETY: the caller guarantees access; `mrc` only writes `value`. Not `nomem`: the
    // read brackets a measured region, whose memory accesses must stay inside.
    unsafe {
        asm!(
            concat!("mrc ", cp15_operands!(CCR)),
            out(reg) value,
            options(nostack, preserves_flags),
        );
    }
    Ccr::new(value)
}

/// Writes the CCR.
///
/// # Safety
/// The CPU is an ARM1176, the code runs at PL1, or at PL0 with SUNAVCR.V set, and the
/// caller owns the PMU.
#[inline(always)]
pub unsafe fn write_ccr(value: Ccr) {
    // SAFETY: the caller guarantees access and ownership; `mcr` only reads its register.
    // Not `nomem`: a preset must stay before the measured region.
    unsafe {
        asm!(
            concat!("mcr ", cp15_operands!(CCR)),
            in(reg) value.count(),
            options(nostack, preserves_flags),
        );
    }
}

/// Reads CR0.
///
/// # Safety
/// The CPU is an ARM1176 and the code runs at PL1, or at PL0 with SUNAVCR.V set.
#[inline(always)]
pub unsafe fn read_cr0() -> Cr0 {
    let value: u32;
    // SAFETY: the caller guarantees access; `mrc` only writes `value`. Not `nomem`: the
    // read brackets a measured region, whose memory accesses must stay inside.
    unsafe {
        asm!(
            concat!("mrc ", cp15_operands!(CR0)),
            out(reg) value,
            options(nostack, preserves_flags),
        );
    }
    Cr0::new(value)
}

/// Writes CR0.
///
/// # Safety
/// The CPU is an ARM1176, the code runs at PL1, or at PL0 with SUNAVCR.V set, and the
/// caller owns the PMU.
#[inline(always)]
pub unsafe fn write_cr0(value: Cr0) {
    // SAFETY: the caller guarantees access and ownership; `mcr` only reads its register.
    // Not `nomem`: a preset must stay before the measured region.
    unsafe {
        asm!(
            concat!("mcr ", cp15_operands!(CR0)),
            in(reg) value.count(),
            options(nostack, preserves_flags),
        );
    }
}

/// Reads CR1.
///
/// # Safety
/// The CPU is an ARM1176 and the code runs at PL1, or at PL0 with SUNAVCR.V set.
#[inline(always)]
pub unsafe fn read_cr1() -> Cr1 {
    let value: u32;
    // SAFETY: the caller guarantees access; `mrc` only writes `value`. Not `nomem`: the
    // read brackets a measured region, whose memory accesses must stay inside.
    unsafe {
        asm!(
            concat!("mrc ", cp15_operands!(CR1)),
            out(reg) value,
            options(nostack, preserves_flags),
        );
    }
    Cr1::new(value)
}

/// Writes CR1.
///
/// # Safety
/// The CPU is an ARM1176, the code runs at PL1, or at PL0 with SUNAVCR.V set, and the
/// caller owns the PMU.
#[inline(always)]
pub unsafe fn write_cr1(value: Cr1) {
    // SAFETY: the caller guarantees access and ownership; `mcr` only reads its register.
    // Not `nomem`: a preset must stay before the measured region.
    unsafe {
        asm!(
            concat!("mcr ", cp15_operands!(CR1)),
            in(reg) value.count(),
            options(nostack, preserves_flags),
        );
    }
}

/// Reads SUNAVCR.
///
/// # Safety
/// The CPU is an ARM1176 and the code runs in a privileged mode.
#[inline(always)]
pub unsafe fn read_sunavcr() -> Sunavcr {
    let value: u32;
    // SAFETY: the caller guarantees the register exists and is accessible; `mrc` only
    // writes `value`.
    unsafe {
        asm!(
            concat!("mrc ", cp15_operands!(SUNAVCR)),
            out(reg) value,
            options(nomem, nostack, preserves_flags),
        );
    }
    Sunavcr::new(value)
}

/// Writes SUNAVCR: with V set, User mode may read and write the PMU registers.
///
/// # Safety
/// - The CPU is an ARM1176 and the code runs in a Secure privileged mode (where Linux
///   runs on the Raspberry Pi 1, where kmod-enable-user's stock flavour writes it).
/// - Granting access lets every User-mode process reprogram the PMU: whoever relies on
///   its state (Linux perf, a [`crate::Arm1176Pmu`]) must tolerate that, and the
///   grant must be revoked before the kernel uses the PMU itself again.
#[inline(always)]
pub unsafe fn write_sunavcr(value: Sunavcr) {
    // SAFETY: the caller guarantees privilege and that sharing the PMU is acceptable;
    // `mcr` only reads its register. Not `nomem`: the grant must happen before any
    // store that tells User mode about it.
    unsafe {
        asm!(
            concat!("mcr ", cp15_operands!(SUNAVCR)),
            in(reg) value.get(),
            options(nostack, preserves_flags),
        );
    }
}
