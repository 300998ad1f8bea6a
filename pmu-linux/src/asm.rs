//! The instruction this crate adds to the architecture crates: with glibc, the thread
//! pointer. (The counter read that perf's arm64 page index names is pmu-armv8's
//! `asm::read_counter`.) (The `isb` that
//! orders a region's reads is pmu-armv8's `asm::isb`: see [`crate::perf::read::synchronize`].)

#[cfg(all(
    target_env = "gnu",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
use core::arch::asm;

/// The thread pointer (what `__builtin_thread_pointer()` gives C): x86_64 the TCB's
/// self pointer at `fs:0`, aarch64 `TPIDR_EL0`. glibc's `__rseq_offset` is relative
/// to it.
#[cfg(all(
    target_env = "gnu",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
#[inline]
pub(crate) fn thread_pointer() -> *mut u8 {
    let tp: *mut u8;
    // SAFETY: reads the thread's own TCB pointer (glibc keeps `fs:0` = the fs base) or
    // TPIDR_EL0, both readable at EL0 / CPL 3; nothing is written.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        asm!("mov {}, qword ptr fs:[0]", out(reg) tp, options(nostack, readonly, preserves_flags))
    };
    // SAFETY: as above.
    #[cfg(target_arch = "aarch64")]
    unsafe {
        asm!("mrs {}, tpidr_el0", out(reg) tp, options(nomem, nostack, preserves_flags))
    };
    tp
}
