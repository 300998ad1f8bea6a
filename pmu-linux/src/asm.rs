//! The instructions this crate adds to the architecture crates: on aarch64 the counter
//! read that perf's page index names; with glibc, the thread pointer. (The `isb` that
//! orders a region's reads is pmu-armv8's `asm::isb`: see [`crate::fast::synchronize`].)

#[cfg(any(
    target_arch = "aarch64",
    all(target_env = "gnu", target_arch = "x86_64")
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
pub fn thread_pointer() -> *mut u8 {
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

/// `mrs` of the counter that perf's arm64 page numbers `counter` (its `index - 1`):
/// 0..=30 = `PMEVCNTR<n>_EL0`, 31 = PMCCNTR_EL0 (drivers/perf/arm_pmuv3.c
/// `armv8pmu_user_event_idx` publishes `hw.idx + 1`, the cycle counter's `hw.idx` is
/// 31), `None` above.
///
/// One computed branch into a table of 32 two-instruction entries (`mrs; b`): a
/// `match` over 32 registers compiles to a bounds check, a cycle-counter test and a
/// table of offsets, four instructions more on every read. pmu-armv8's `asm` has one
/// function per register; this is their perf-index dispatch in one place.
///
/// # Safety
/// EL0 reads of the named counter are permitted (PMUSERENR_EL0.ER/CR or EN) and, for
/// an event counter, n is below PMCR_EL0.N (else the `mrs` is UNDEFINED: SIGILL).
#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub unsafe fn read_perf_counter(counter: u32) -> Option<u64> {
    macro_rules! table {
        ($($n:literal)*) => {{
            let value: u64;
            // SAFETY: the caller's contract; `counter` ≤ 31 (checked below) keeps the
            // branch inside the table: entry k sits at 2f + 8k.
            unsafe {
                asm!(
                    "adr {t}, 2f",
                    "add {t}, {t}, {c}, lsl #3",
                    "br {t}",
                    "2:",
                    $(
                        concat!("mrs {v}, pmevcntr", stringify!($n), "_el0"),
                        "b 3f",
                    )*
                    "mrs {v}, pmccntr_el0",
                    "b 3f",
                    "3:",
                    c = in(reg) u64::from(counter),
                    t = out(reg) _,
                    v = out(reg) value,
                    options(nostack, preserves_flags),
                );
            }
            value
        }};
    }
    if counter > 31 {
        return None;
    }
    Some(table!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30))
}
