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

/// The `mrs` table: `adr; add; br` into 32 entries of `mrs; b` (entry k at 2f + 8k).
/// Expands to an `unsafe` operation: the counter must be ≤ 31.
#[cfg(target_arch = "aarch64")]
macro_rules! counter_table {
    ($counter:expr) => {{
        let value: u64;
        asm!(
            "adr {t}, 2f",
            "add {t}, {t}, {c}, lsl #3",
            "br {t}",
            "2:",
            "mrs {v}, pmevcntr0_el0", "b 3f",
            "mrs {v}, pmevcntr1_el0", "b 3f",
            "mrs {v}, pmevcntr2_el0", "b 3f",
            "mrs {v}, pmevcntr3_el0", "b 3f",
            "mrs {v}, pmevcntr4_el0", "b 3f",
            "mrs {v}, pmevcntr5_el0", "b 3f",
            "mrs {v}, pmevcntr6_el0", "b 3f",
            "mrs {v}, pmevcntr7_el0", "b 3f",
            "mrs {v}, pmevcntr8_el0", "b 3f",
            "mrs {v}, pmevcntr9_el0", "b 3f",
            "mrs {v}, pmevcntr10_el0", "b 3f",
            "mrs {v}, pmevcntr11_el0", "b 3f",
            "mrs {v}, pmevcntr12_el0", "b 3f",
            "mrs {v}, pmevcntr13_el0", "b 3f",
            "mrs {v}, pmevcntr14_el0", "b 3f",
            "mrs {v}, pmevcntr15_el0", "b 3f",
            "mrs {v}, pmevcntr16_el0", "b 3f",
            "mrs {v}, pmevcntr17_el0", "b 3f",
            "mrs {v}, pmevcntr18_el0", "b 3f",
            "mrs {v}, pmevcntr19_el0", "b 3f",
            "mrs {v}, pmevcntr20_el0", "b 3f",
            "mrs {v}, pmevcntr21_el0", "b 3f",
            "mrs {v}, pmevcntr22_el0", "b 3f",
            "mrs {v}, pmevcntr23_el0", "b 3f",
            "mrs {v}, pmevcntr24_el0", "b 3f",
            "mrs {v}, pmevcntr25_el0", "b 3f",
            "mrs {v}, pmevcntr26_el0", "b 3f",
            "mrs {v}, pmevcntr27_el0", "b 3f",
            "mrs {v}, pmevcntr28_el0", "b 3f",
            "mrs {v}, pmevcntr29_el0", "b 3f",
            "mrs {v}, pmevcntr30_el0", "b 3f",
            // The last entry falls through.
            "mrs {v}, pmccntr_el0",
            "3:",
            c = in(reg) u64::from($counter),
            t = out(reg) _,
            v = out(reg) value,
            options(nostack, preserves_flags),
        );
        value
    }};
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
    if counter > 31 {
        return None;
    }
    // SAFETY: the caller's contract; `counter` ≤ 31 keeps the branch inside the table.
    Some(unsafe { counter_table!(counter) })
}

/// [`read_perf_counter`] of `counter & 31`, without the range test: for a number that
/// an earlier [`read_perf_counter`] accepted (a region's stop reads the counter its
/// start did). The mask keeps the branch inside the table whatever `counter` is.
///
/// # Safety
/// As [`read_perf_counter`], for `counter & 31`.
#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub unsafe fn read_perf_counter_masked(counter: u32) -> u64 {
    // SAFETY: the caller's contract; the mask keeps the branch inside the table.
    unsafe { counter_table!(counter & 31) }
}
