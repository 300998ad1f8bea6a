//! The one-instruction counter read of each architecture, run inside pmu-core's
//! seqlock protocol ([`pmu_core::mmap_page::read`]) over a kernel page.
//!
//! | arch | page `index` | instruction |
//! |---|---|---|
//! | x86_64 | RDPMC's ECX + 1 (fixed counters with bit 30, `x86_pmu_event_idx`) | `lfence; rdpmc; lfence` (pmu-x86 `rdpmc_fenced`) |
//! | aarch64 | 32 = PMCCNTR_EL0, n + 1 = `PMEVCNTR<n>_EL0` (`armv8pmu_user_event_idx`) | `isb; mrs; isb` |
//!
//! The protocol sign-extends the value from `pmc_width` (x86: the counter width, 48 on
//! most Intel cores; arm64: 32, or 64 with the `long` term), adds `offset`, and returns
//! a [`Fallback`] instead of touching a counter whenever the page says user reads are
//! not possible. User reads have to be allowed first:
//!
//! - x86: `/sys/bus/event_source/devices/cpu/rdpmc` (hybrid: `cpu_core/rdpmc`,
//!   `cpu_atom/rdpmc`) is 1 (the default: RDPMC allowed while a perf event is mapped)
//!   or 2 (always);
//! - arm64: `sysctl -w kernel.perf_user_access=1` (Linux ≥ 5.17), and the event opened
//!   with attr.config1 bit 1 (the `rdpmc` format term), which [`crate::Session`] does
//!   by default. Only task-bound events qualify, and never chained (64-bit on 32-bit
//!   counters) ones.

use pmu_core::mmap_page::{self, Fallback, PageRead};

use crate::page::MmapPage;

/// The arm64 counter that the protocol's counter number (`index - 1`) names:
/// pmu-armv8's [`counter_for_perf_index`](pmu_armv8::counter_for_perf_index) of
/// `index`.
pub fn arm64_counter(counter: u32) -> Option<pmu_armv8::CounterId> {
    counter
        .checked_add(1)
        .and_then(pmu_armv8::counter_for_perf_index)
}

/// Reads the event behind `page` with one `rdpmc`.
///
/// # Errors
/// The [`Fallback`] the page demands.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn read(page: &MmapPage) -> Result<PageRead, Fallback> {
    let view = page.view();
    mmap_page::read(&view, |counter| {
        // SAFETY: the protocol calls this only when the kernel's own page (an `MmapPage`
        // is never built from anything else) announced cap_user_rdpmc = 1 and
        // index = counter + 1 ≠ 0: the kernel then lets this process execute RDPMC at
        // CPL 3 (CR4.PCE while the event is mapped, policy of .../cpu/rdpmc) and
        // `counter` is the event's counter in RDPMC's numbering. If the kernel
        // reprogrammed the counter meanwhile, `lock` moved and the value is discarded.
        unsafe { pmu_x86::asm::rdpmc_fenced(counter) }
    })
}

/// Reads the event behind `page` with one `mrs` of `PMEVCNTR<n>_EL0` or PMCCNTR_EL0.
///
/// # Errors
/// The [`Fallback`] the page demands; [`Fallback::NoUserAccess`] for an `index` that
/// names no counter user space may read (33 would be the FEAT_PMUv3_ICNTR counter,
/// which Linux does not hand out).
#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub fn read(page: &MmapPage) -> Result<PageRead, Fallback> {
    let view = page.view();
    let mut named_no_counter = false;
    let result = mmap_page::read(&view, |counter| match arm64_counter(counter) {
        Some(id) => {
            named_no_counter = false;
            // SAFETY: called by the protocol only when the kernel's own page announced
            // cap_user_rdpmc = 1 with this index: Linux then set PMUSERENR_EL0.ER | CR
            // for this task on this CPU (armv8pmu_enable_user_access), so EL0 may read
            // every counter, and `id` is the counter the driver gave the event (below
            // PMCR_EL0.N). A reschedule in between moves `lock` and discards the value.
            unsafe { read_arm64(id) }
        }
        None => {
            named_no_counter = true;
            0
        }
    });
    match result {
        Ok(_) if named_no_counter => Err(Fallback::NoUserAccess),
        other => other,
    }
}

/// `isb; mrs <counter>; isb`.
///
/// # Safety
/// EL0 reads of the counter are permitted (PMUSERENR_EL0.ER/CR or EN) and, for an event
/// counter, n is below PMCR_EL0.N.
#[cfg(target_arch = "aarch64")]
#[inline(always)]
unsafe fn read_arm64(id: pmu_armv8::CounterId) -> u64 {
    use pmu_armv8::asm;
    // Wait for the region's instructions to complete before reading (see `asm::isb`).
    crate::asm::isb();
    // SAFETY: the caller's contract.
    let value = unsafe {
        match id {
            pmu_armv8::CounterId::Cycle => asm::read_pmccntr_el0(),
            pmu_armv8::CounterId::Event(n) => asm::read_pmevcntr_el0(n),
        }
    };
    // Keep later instructions from starting before the read.
    crate::asm::isb();
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmu_armv8::{CounterId, EventCounter};

    /// The arm64 numbering (drivers/perf/arm_pmuv3.c `armv8pmu_user_event_idx` returns
    /// hw.idx + 1, the cycle counter's hw.idx is 31): the protocol passes index - 1.
    /// tools/lib/perf/mmap.c's table has PMEVCNTR12/13 swapped; ours does not.
    #[test]
    fn arm64_counter_numbering() {
        assert_eq!(arm64_counter(31), Some(CounterId::Cycle));
        assert_eq!(
            arm64_counter(0),
            Some(CounterId::Event(EventCounter::new(0).unwrap()))
        );
        assert_eq!(
            arm64_counter(12),
            Some(CounterId::Event(EventCounter::new(12).unwrap()))
        );
        assert_eq!(
            arm64_counter(13),
            Some(CounterId::Event(EventCounter::new(13).unwrap()))
        );
        assert_eq!(
            arm64_counter(30),
            Some(CounterId::Event(EventCounter::new(30).unwrap()))
        );
        assert_eq!(arm64_counter(32), None);
        assert_eq!(arm64_counter(u32::MAX), None);
    }
}
