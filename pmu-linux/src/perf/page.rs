//! The perf metadata page as a [`pmu_core::UserPage`].
//!
//! After `mmap` of a perf event descriptor, the first page is a
//! `struct perf_event_mmap_page` the kernel rewrites whenever it (re)schedules the
//! event (`perf_event_update_userpage`, kernel/events/core.c: `++lock; barrier();
//! index, offset, time_enabled, time_running, arch fields; barrier(); ++lock`). User
//! space reads it under that sequence count; the protocol itself is
//! [`pmu_core::mmap_page::read`], this module only provides the field reads:
//! volatile loads at the offsets of the `perf-event-open-sys` bindings, because the
//! kernel writes the page behind the compiler's back.
//!
//! `cap_user_rdpmc` is bit 2 of the 64-bit `capabilities` word (after `cap_bit0` and
//! `cap_bit0_is_deprecated`, include/uapi/linux/perf_event.h).

use std::marker::PhantomData;
use std::os::fd::BorrowedFd;
use std::ptr::NonNull;
use std::sync::atomic::{compiler_fence, Ordering};

use perf_event_open_sys::bindings::perf_event_mmap_page;
use pmu_core::UserPage;

use crate::error::{Errno, Op, Result};
use crate::sys::perf::Mapping;

/// `cap_user_rdpmc` in `capabilities`.
pub(crate) const CAP_USER_RDPMC: u64 = 1 << 2;
/// `cap_user_time` in `capabilities`: `time_mult`, `time_shift`, `time_offset` are valid.
pub(crate) const CAP_USER_TIME: u64 = 1 << 3;
/// `cap_user_time_short` in `capabilities`: `time_cycles`, `time_mask` are valid too.
pub(crate) const CAP_USER_TIME_SHORT: u64 = 1 << 5;

/// Read access to a `perf_event_mmap_page` (the kernel's, or one built in memory).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PageView<'a> {
    page: NonNull<perf_event_mmap_page>,
    _borrow: PhantomData<&'a perf_event_mmap_page>,
}

/// A volatile load of one field of the page behind `$view`.
macro_rules! volatile_field {
    ($view:expr, $($field:tt)+) => {{
        let page = $view.page.as_ptr();
        // SAFETY: `page` is valid for reads for the view's lifetime (constructor
        // contract) and the field lies inside it, aligned (a repr(C) binding). Volatile:
        // the kernel may rewrite the page at any time, and every read must happen, in
        // program order with the other volatile reads, for the seqlock to work.
        unsafe { (&raw const (*page).$($field)+).read_volatile() }
    }};
}

impl<'a> PageView<'a> {
    /// A view of a page this process built (tests, a copy of a page).
    #[cfg(test)]
    pub(crate) fn new(page: &'a perf_event_mmap_page) -> Self {
        Self {
            page: NonNull::from(page),
            _borrow: PhantomData,
        }
    }

    /// A view of the page at `page`.
    ///
    /// # Safety
    /// `page` must be valid for reads of a whole `perf_event_mmap_page`, suitably
    /// aligned, for `'a`; only the kernel (or nobody) may write it meanwhile.
    pub(crate) unsafe fn from_raw(page: NonNull<perf_event_mmap_page>) -> Self {
        Self {
            page,
            _borrow: PhantomData,
        }
    }

    /// The whole `capabilities` word.
    pub(crate) fn capabilities(&self) -> u64 {
        volatile_field!(self, __bindgen_anon_1.capabilities)
    }
}

impl UserPage for PageView<'_> {
    #[inline(always)]
    fn lock(&self) -> u32 {
        volatile_field!(self, lock)
    }
    #[inline(always)]
    fn index(&self) -> u32 {
        volatile_field!(self, index)
    }
    #[inline(always)]
    fn offset(&self) -> i64 {
        volatile_field!(self, offset)
    }
    #[inline(always)]
    fn pmc_width(&self) -> u16 {
        volatile_field!(self, pmc_width)
    }
    #[inline(always)]
    fn cap_user_rdpmc(&self) -> bool {
        self.capabilities() & CAP_USER_RDPMC != 0
    }
    #[inline(always)]
    fn time_enabled(&self) -> u64 {
        volatile_field!(self, time_enabled)
    }
    #[inline(always)]
    fn time_running(&self) -> u64 {
        volatile_field!(self, time_running)
    }
    /// A compiler fence only, as tools/lib/perf/mmap.c `perf_mmap__read_self` does with
    /// `barrier()`: the page of an event of the calling thread that can change `index`,
    /// `offset` or `pmc_width` under a read is rewritten on the reader's CPU, between its
    /// instructions (sched-out/in: arm_pmu.c `armpmu_del`/`armpmu_add`; overflow
    /// interrupt: `armpmu_event_set_period`; x86 likewise), and exceptions are precise,
    /// so this CPU sees those writes in program order. A writer on another CPU (a
    /// PERF_EVENT_IOC_RESET from another thread, core.c `_perf_event_reset`) changes only
    /// `offset` and the times, and a mix is a value the event had during that reset.
    /// (The volatile loads keep their program order in the compiler already.)
    #[inline(always)]
    fn order_loads(&self) {
        compiler_fence(Ordering::Acquire);
    }
    /// The conversion when `cap_user_time` is set (x86 with a stable TSC, arm64 while
    /// sched_clock runs on the generic timer; see [`pmu_core::ClockConversion`]).
    #[inline(always)]
    fn clock_conversion(&self) -> Option<pmu_core::ClockConversion> {
        let caps = self.capabilities();
        if caps & CAP_USER_TIME == 0 {
            return None;
        }
        let (cycles, mask) = if caps & CAP_USER_TIME_SHORT != 0 {
            (
                volatile_field!(self, time_cycles),
                volatile_field!(self, time_mask),
            )
        } else {
            (0, u64::MAX)
        };
        Some(pmu_core::ClockConversion {
            mult: volatile_field!(self, time_mult),
            shift: volatile_field!(self, time_shift),
            offset: volatile_field!(self, time_offset),
            cycles,
            mask,
        })
    }
    /// True for Linux's page: the kernel publishes an index only where it publishes
    /// the capability, in the same update (x86 `x86_pmu_event_idx` and arm64
    /// `armv8pmu_user_event_idx` return 0 unless the event may be read by user space,
    /// which is exactly what their `arch_perf_update_userpage` puts in
    /// `cap_user_rdpmc`). Saves a load and a branch per read.
    #[inline(always)]
    fn index_implies_user_read(&self) -> bool {
        true
    }
}

/// The metadata page of one open event, mapped read-only; unmapped on drop.
///
/// Only pages obtained from the kernel are `MmapPage`s, so their `cap_user_rdpmc` and
/// `index` are the kernel's word: that is what makes [`crate::perf::read::read`] sound.
#[derive(Debug)]
pub struct MmapPage {
    mapping: Mapping,
}

impl MmapPage {
    /// Maps the metadata page of the perf event `fd`.
    ///
    /// # Errors
    /// [`Error::Io`] with [`Op::Mmap`].
    pub(crate) fn map(fd: BorrowedFd<'_>) -> Result<Self> {
        let mapping = Mapping::new(fd)
            .map_err(|errno: Errno| crate::error::Error::syscall(Op::Mmap, errno))?;
        Ok(Self { mapping })
    }

    /// A view of the page.
    #[inline(always)]
    pub(crate) fn view(&self) -> PageView<'_> {
        // SAFETY: the mapping is one readable page (at least the size of the struct,
        // page-aligned) and lives as long as `self`, which the view borrows; only the
        // kernel writes it.
        unsafe { PageView::from_raw(self.mapping.page()) }
    }
}

/// A copyable handle on the page of an [`MmapPage`], for the region's hot path: a
/// [`crate::perf::Session`] keeps one per event beside the mappings that own them, and reads
/// through it without going through the event list.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KernelPage(NonNull<perf_event_mmap_page>);

impl KernelPage {
    /// A handle on `page`.
    ///
    /// # Safety
    /// The handle is used only while `page` stays mapped (its owner is alive).
    pub(crate) unsafe fn new(page: &MmapPage) -> Self {
        Self(page.mapping.page())
    }

    /// A view of the page.
    #[inline(always)]
    pub(crate) fn view(&self) -> PageView<'_> {
        // SAFETY: the page is mapped while the handle is used (constructor contract),
        // readable, page-aligned, and written only by the kernel.
        unsafe { PageView::from_raw(self.0) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmu_core::mmap_page::{read, Fallback};
    use pmu_core::Hazards;

    fn page(
        lock: u32,
        index: u32,
        offset: i64,
        width: u16,
        rdpmc: bool,
    ) -> Box<perf_event_mmap_page> {
        let mut p = Box::<perf_event_mmap_page>::default();
        p.version = 0;
        p.lock = lock;
        p.index = index;
        p.offset = offset;
        p.pmc_width = width;
        p.time_enabled = 1000;
        p.time_running = 1000;
        // SAFETY: the bitfield view of the capabilities union is plain integer data;
        // every bit pattern is valid.
        unsafe {
            p.__bindgen_anon_1
                .__bindgen_anon_1
                .set_cap_user_rdpmc(u64::from(rdpmc))
        };
        p
    }

    /// The bit the bindings' `cap_user_rdpmc` setter sets is the one this module reads
    /// (bit 2, include/uapi/linux/perf_event.h).
    #[test]
    fn cap_user_rdpmc_is_bit_2() {
        let p = page(0, 1, 0, 48, true);
        let view = PageView::new(&p);
        assert_eq!(view.capabilities(), CAP_USER_RDPMC);
        assert!(view.cap_user_rdpmc());
        let p = page(0, 1, 0, 48, false);
        assert!(!PageView::new(&p).cap_user_rdpmc());
    }

    /// The field reads see what a `perf_event_mmap_page` holds at the bindings' offsets.
    #[test]
    fn fields() {
        let mut p = page(6, 3, -5, 48, true);
        p.time_enabled = 77;
        p.time_running = 66;
        let v = PageView::new(&p);
        assert_eq!(
            (v.lock(), v.index(), v.offset(), v.pmc_width()),
            (6, 3, -5, 48)
        );
        assert_eq!((v.time_enabled(), v.time_running()), (77, 66));
    }

    /// The time capability bits are where the bindings' setters put them (bits 3 and 5,
    /// include/uapi/linux/perf_event.h) and the conversion fields are read from their
    /// offsets; without `cap_user_time_short` the mask is all ones (a no-op).
    #[test]
    fn clock_conversion_fields() {
        let mut p = page(0, 1, 0, 64, true);
        assert_eq!(PageView::new(&p).clock_conversion(), None);
        p.time_mult = 0x8000_0000;
        p.time_shift = 27;
        p.time_offset = 12345;
        p.time_cycles = 77;
        p.time_mask = (1 << 56) - 1;
        // SAFETY: as in `page`: plain integer bitfields.
        unsafe { p.__bindgen_anon_1.__bindgen_anon_1.set_cap_user_time(1) };
        let view = PageView::new(&p);
        assert_eq!(view.capabilities(), CAP_USER_RDPMC | CAP_USER_TIME);
        let c = view.clock_conversion().unwrap();
        assert_eq!(
            (c.mult, c.shift, c.offset, c.cycles, c.mask),
            (0x8000_0000, 27, 12345, 0, u64::MAX)
        );
        // SAFETY: as above.
        unsafe {
            p.__bindgen_anon_1
                .__bindgen_anon_1
                .set_cap_user_time_short(1)
        };
        let view = PageView::new(&p);
        assert_eq!(
            view.capabilities() & CAP_USER_TIME_SHORT,
            CAP_USER_TIME_SHORT
        );
        let c = view.clock_conversion().unwrap();
        assert_eq!((c.cycles, c.mask), (77, (1 << 56) - 1));
    }

    /// pmu-core's protocol over this page: the x86 example of
    /// include/uapi/linux/perf_event.h with a 48-bit counter at -100 (bit 47 set).
    #[test]
    fn core_protocol_over_a_fake_page() {
        let p = page(4, 3, 1_000_100, 48, true);
        let view = PageView::new(&p);
        let r = read(&view, |counter| {
            assert_eq!(counter, 2, "index - 1");
            Some(0xFFFF_FFFF_FF9C)
        })
        .unwrap();
        assert_eq!((r.value, r.seq, r.index), (1_000_000, 4, 3));
        assert_eq!(r.hazards(), Hazards::empty());
        // index 0 names no counter: reading "index - 1" would be counter 0xFFFFFFFF
        // (include/uapi/linux/perf_event.h reads only when idx != 0); it falls back.
        let never = |_| -> Option<u64> { panic!("no counter read with index 0") };
        assert_eq!(
            read(&PageView::new(&page(4, 0, 0, 48, true)), never),
            Err(Fallback::NotScheduled)
        );
        // No user access: the kernel publishes index 0 and cap_user_rdpmc 0 together
        // (x86_pmu_event_idx / armv8pmu_user_event_idx); the reason is the capability.
        assert_eq!(
            read(&PageView::new(&page(4, 0, 0, 48, false)), never),
            Err(Fallback::NoUserAccess)
        );
        // An index is trusted to carry the capability (`index_implies_user_read`):
        // the kernel never writes one without the other.
        assert!(PageView::new(&p).index_implies_user_read());
        assert_eq!(
            read(&PageView::new(&page(4, 1, 7, 48, false)), |_| Some(3)).map(|r| r.value),
            Ok(10)
        );
        // arm64 announces 32 or 64 bits (drivers/perf/arm_pmuv3.c arch_perf_update_userpage).
        let p = page(2, 32, 10, 64, true);
        assert_eq!(
            read(&PageView::new(&p), |_| Some(u64::MAX)).unwrap().value,
            9
        );
        let p = page(2, 1, 10, 32, true);
        assert_eq!(
            read(&PageView::new(&p), |_| Some(0xFFFF_FFFF))
                .unwrap()
                .value,
            9
        );
        // An odd lock is an update in progress: never consistent.
        assert_eq!(
            read(&PageView::new(&page(5, 1, 0, 48, true)), |_| Some(0)),
            Err(Fallback::Contended)
        );
    }
}
