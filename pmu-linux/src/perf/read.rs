//! The one-instruction counter read of each architecture, run inside pmu-core's
//! seqlock protocol ([`pmu_core::mmap_page::read`]) over a kernel page.
//!
//! | arch | page `index` | instruction |
//! |---|---|---|
//! | x86_64 | RDPMC's ECX + 1 (fixed counters with bit 30, `x86_pmu_event_idx`) | `lfence; rdpmc; lfence` (pmu-x86 `rdpmc_fenced`) |
//! | aarch64 | 32 = PMCCNTR_EL0, n + 1 = `PMEVCNTR<n>_EL0` (`armv8pmu_user_event_idx`) | `isb` ([`synchronize`]), then `mrs` |
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
//!   with attr.config1 bit 1 (the `rdpmc` format term), which [`crate::perf::Session`] does
//!   by default. Only task-bound events qualify, and never chained (64-bit on 32-bit
//!   counters) ones.

use pmu_core::mmap_page::{self, BaseRead, Fallback, PageRead};

use crate::perf::page::MmapPage;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use crate::perf::page::{KernelPage, PageView};

/// Reads the event behind `page` with one instruction, after every earlier
/// instruction has completed (arm64: an `isb`, then the read; x86_64: `rdpmc`
/// bracketed by `lfence`).
///
/// # Errors
/// The [`Fallback`] the page demands; on arm64 [`Fallback::NoUserAccess`] for an
/// `index` that names no counter user space may read (33 would be the FEAT_PMUv3_ICNTR
/// counter, which Linux does not hand out).
#[cfg_attr(not(feature = "rig"), allow(dead_code))]
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
pub fn read(page: &MmapPage) -> Result<PageRead, Fallback> {
    synchronize();
    read_unsynchronized(page)
}

/// [`read`] with the event times brought up to the read itself where the page
/// publishes its clock conversion (`cap_user_time`): [`pmu_core::mmap_page::read_now`]
/// with the clock the kernel converts (x86_64: RDTSC; aarch64: CNTVCT_EL0), as
/// tools/lib/perf/mmap.c `perf_mmap__read_self` does. Then
/// `value * time_enabled / time_running` estimates the count of a multiplexed event
/// at this moment; with the page times alone ([`read`]) the ratio is the one of the
/// event's last reschedule. [`PageRead::times_now`] says which the read gave.
///
/// # Errors
/// As [`read`].
#[cfg_attr(not(feature = "rig"), allow(dead_code))]
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline]
pub fn read_now(page: &MmapPage) -> Result<PageRead, Fallback> {
    synchronize();
    mmap_page::read_now(
        &page.view(),
        |counter| {
            // SAFETY: an `MmapPage` is the kernel's page of a perf event, mapped while
            // borrowed; the protocol passes `index - 1` of a consistent pass with
            // index ≠ 0 (see `read_counter`).
            unsafe { read_counter(counter) }
        },
        read_clock,
    )
}

/// The clock of the page's `cap_user_time` conversion (see [`read_now`]).
#[cfg_attr(not(feature = "rig"), allow(dead_code))]
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn read_clock() -> u64 {
    pmu_x86::asm::rdtsc()
}

/// The clock of the page's `cap_user_time` conversion (see [`read_now`]).
#[cfg(target_arch = "aarch64")]
#[inline(always)]
fn read_clock() -> u64 {
    // SAFETY: Linux user space: EL0 may read CNTVCT_EL0 (CNTKCTL_EL1.EL0VCTEN, set for
    // the vDSO), or the kernel emulates the trapped read (`read_cntvct_el0`'s contract).
    unsafe { pmu_armv8::asm::read_cntvct_el0() }
}

/// Waits until every earlier instruction has completed, so that a counter read after
/// it counts them all, and a counter read before it cannot count anything after it.
///
/// A PMU counter read is not ordered with the instructions around it: an `mrs` of
/// `PMEVCNTR<n>_EL0` may execute before earlier instructions are counted, or after
/// later ones began, unless a context synchronization event separates them (the Arm
/// ARM's Performance Monitors chapter). arm64: one `isb` (pmu-armv8 `asm::isb`, a
/// context synchronization event and a compiler barrier: what follows is fetched again
/// once everything before it has completed); a region puts one before its start reads
/// (the instructions before it stay out), one after them (the region's stay out of the
/// start read) and one before its stop reads (all of the region is in the stop read).
/// Inside the page's seqlock none is needed: the page and the counter only change
/// across an exception, which is precise. x86_64: nothing, every `rdpmc` is bracketed
/// by `lfence` already ([`read_unsynchronized`]).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
pub fn synchronize() {
    #[cfg(target_arch = "aarch64")]
    pmu_armv8::asm::isb();
}

/// Reads the event behind `page` with one instruction, without waiting for the
/// instructions before it (see [`synchronize`]).
///
/// # Errors
/// As [`read`].
#[cfg_attr(not(feature = "rig"), allow(dead_code))]
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
pub fn read_unsynchronized(page: &MmapPage) -> Result<PageRead, Fallback> {
    // SAFETY: an `MmapPage` is the kernel's page of a perf event, mapped while borrowed.
    unsafe { read_view(page.view()) }
}

/// [`read_unsynchronized`] through a [`KernelPage`] handle (the region's hot path),
/// keeping what [`count_since`] needs.
///
/// # Errors
/// As [`read`].
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
pub(crate) fn read_base(page: KernelPage) -> Result<BaseRead, Fallback> {
    mmap_page::read_base(&page.view(), |counter| {
        // SAFETY: a `KernelPage` is made only from an `MmapPage`, the kernel's page,
        // mapped while the handle is used; the protocol passes `index - 1` of a
        // consistent pass with index ≠ 0 (see `read_counter`).
        unsafe { read_counter(counter) }
    })
}

/// The count alone ([`mmap_page::read_count`]: no page times), without waiting for the
/// instructions before it (see [`synchronize`]).
///
/// # Errors
/// As [`read`].
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
pub(crate) fn read_count(page: KernelPage) -> Result<u64, Fallback> {
    mmap_page::read_count(&page.view(), |counter| {
        // SAFETY: as in `read_base`.
        unsafe { read_counter(counter) }
    })
}

/// The count since `base` if the page is unchanged since then (only the counter is
/// read), `None` if the kernel rewrote it meanwhile ([`mmap_page::count_since`]).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
pub(crate) fn count_since(page: KernelPage, base: &BaseRead) -> Option<u64> {
    mmap_page::count_since(&page.view(), base, |counter| {
        // SAFETY: as in `read_base`: the page is unchanged since the base read's
        // consistent pass (same lock), so its counter is still the event's, one that
        // `read_counter` accepted there (pmu-linux makes its base reads only through
        // `read_base`).
        unsafe { read_counter_again(counter) }
    })
}

/// The raw counter of `base`'s event if its page is unchanged since `base`
/// ([`mmap_page::raw_since`]: `lock` tested first, then one counter read, no sign
/// extension), `None` (nothing read) if the kernel rewrote the page meanwhile.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
pub(crate) fn raw_since(page: KernelPage, base: &BaseRead) -> Option<u64> {
    mmap_page::raw_since(&page.view(), base, |counter| {
        // SAFETY: as in `count_since`: `lock` is the base read's, so the page still
        // names the counter that `read_counter` accepted at the base.
        unsafe { read_counter_again(counter) }
    })
}

/// Whether `page` is unchanged since `base` ([`mmap_page::unchanged_since`]), tested
/// after the counter reads before it.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
pub(crate) fn unchanged_since(page: KernelPage, base: &BaseRead) -> bool {
    mmap_page::unchanged_since(&page.view(), base)
}

/// The protocol over `view` with this architecture's counter read.
///
/// # Safety
/// `view` is a perf event's metadata page as the kernel mapped it (its `index` and
/// `cap_user_rdpmc` are the kernel's word).
#[cfg_attr(not(feature = "rig"), allow(dead_code))]
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
unsafe fn read_view(view: PageView<'_>) -> Result<PageRead, Fallback> {
    mmap_page::read(&view, |counter| {
        // SAFETY: the caller's contract, and the protocol passes `index - 1` of a
        // consistent pass with index ≠ 0 (see `read_counter`).
        unsafe { read_counter(counter) }
    })
}

/// x86_64: `lfence; rdpmc; lfence` of RDPMC counter `counter`.
///
/// # Safety
/// `counter` + 1 is the `index` the kernel published, ≠ 0, on the page of an event of
/// this thread: the kernel publishes one only with cap_user_rdpmc = 1 and then lets
/// this process execute RDPMC at CPL 3 (CR4.PCE while the event is mapped, policy of
/// .../cpu/rdpmc), and `counter` is the event's counter in RDPMC's numbering. If the
/// kernel reprogrammed the counter meanwhile, `lock` moved and the value is discarded.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn read_counter(counter: u32) -> Option<u64> {
    // SAFETY: the caller's contract.
    Some(unsafe { pmu_x86::asm::rdpmc_fenced(counter) })
}

/// aarch64: one `mrs` of `PMEVCNTR<n>_EL0` or PMCCNTR_EL0, without an `isb` (see
/// [`synchronize`]): inside the seqlock nothing needs one, the page and the counter
/// only change across an exception, which is precise.
///
/// # Safety
/// `counter` + 1 is the `index` the kernel published, ≠ 0, on the page of an event of
/// this thread: arm_pmuv3.c publishes one only with user reads allowed, and then set
/// PMUSERENR_EL0.ER | CR for this task on this CPU (armv8pmu_enable_user_access), so
/// EL0 may read every counter, and the counter is the one the driver gave the event
/// (below PMCR_EL0.N). A reschedule in between moves `lock` and discards the value.
#[cfg(target_arch = "aarch64")]
#[inline(always)]
unsafe fn read_counter(counter: u32) -> Option<u64> {
    // SAFETY: the caller's contract.
    unsafe { pmu_armv8::asm::read_counter(counter) }
}

/// [`read_counter`] of a counter it accepted before: x86_64 the same; aarch64 without
/// the range test (the table index is masked instead: one instruction fewer).
///
/// # Safety
/// As [`read_counter`], for a `counter` that [`read_counter`] answered `Some` for.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn read_counter_again(counter: u32) -> Option<u64> {
    // SAFETY: the caller's contract.
    unsafe { read_counter(counter) }
}

/// See the x86_64 version.
///
/// # Safety
/// As [`read_counter`], for a `counter` that [`read_counter`] answered `Some` for.
#[cfg(target_arch = "aarch64")]
#[inline(always)]
unsafe fn read_counter_again(counter: u32) -> Option<u64> {
    // SAFETY: the caller's contract: `counter` ≤ 31, so the mask changes nothing.
    Some(unsafe { pmu_armv8::asm::read_counter_masked(counter) })
}
