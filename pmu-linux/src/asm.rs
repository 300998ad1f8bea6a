//! The one instruction this crate adds to the architecture crates: `isb` on aarch64.
//!
//! pmu-armv8's `asm` module puts an `isb` after control writes only; its counter reads
//! are bare `mrs`. A region read wants the reads bracketed like `lfence; rdpmc;
//! lfence` on x86 (pmu-x86 `rdpmc_fenced`), so this is kept here until pmu-armv8 grows
//! a fenced read.

#[cfg(target_arch = "aarch64")]
use core::arch::asm;

/// Instruction Synchronization Barrier.
///
/// A PMU counter read is not ordered with the instructions around it: an `mrs` of
/// `PMEVCNTR<n>_EL0` can execute before earlier instructions have been counted, or after
/// later ones began. ISB is a context synchronization event: every instruction after
/// it is fetched again once everything before it has completed, so `isb; mrs; isb`
/// counts exactly the instructions of the region between two reads (the role LFENCE
/// plays around RDPMC). Also a compiler barrier (no `nomem`).
#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub fn isb() {
    // SAFETY: ISB has no operands and is available at every Exception level; it only
    // synchronizes the pipeline. No `nomem`, so it also orders the compiler.
    unsafe { asm!("isb", options(nostack, preserves_flags)) };
}
