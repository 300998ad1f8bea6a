//! The user-space read protocol of Linux's `perf_event_mmap_page`.
//!
//! After `perf_event_open` + `mmap`, the first page of the buffer tells user space how
//! to read the counter itself (include/uapi/linux/perf_event.h, the comment above
//! `struct perf_event_mmap_page`):
//!
//! ```text
//! do {
//!     seq = pc->lock; barrier();
//!     enabled = pc->time_enabled; running = pc->time_running;
//!     idx = pc->index; count = pc->offset;
//!     if (pc->cap_user_rdpmc && idx) {
//!         width = pc->pmc_width;
//!         pmc = rdpmc(idx - 1);
//!         pmc <<= 64 - width; pmc >>= 64 - width;   // sign extension
//!         count += pmc;
//!     }
//!     barrier();
//! } while (pc->lock != seq);
//! ```
//!
//! [`read`] does exactly this against the [`UserPage`] trait, so the host tests it with
//! a fake page that another thread rewrites, and `pmu-linux` runs it on the real page
//! with `rdpmc` (x86) or `mrs PMEVCNTR<n>_EL0` (arm64) as the counter read. It is one
//! pass through the page per attempt, written to be cheap (it is what every region edge
//! costs): `lock`, `index`, the fields, the counter, `lock` again. Differences from the
//! kernel's example, each deliberate:
//!
//! - an odd `lock` is retried too. The kernel increments `lock` before and after an
//!   update; the reading thread normally never sees it odd (the kernel updates the page
//!   while the reader is not running), but a reader on another CPU can, and then the
//!   fields may be half-written;
//! - the loop is bounded ([`MAX_RETRIES`]); past that, [`Fallback::Contended`] asks for
//!   the `read()` system call instead of spinning forever;
//! - `cap_user_rdpmc` with a `pmc_width` of 0 or above 64 is [`Fallback::BadWidth`],
//!   never an undefined shift;
//! - the counter read may refuse an index (`None`: no counter user space may read),
//!   which is [`Fallback::NoUserAccess`];
//! - `time_enabled != time_running` flags [`Hazards::MULTIPLEXED`]
//!   ([`PageRead::hazards`]).
//!
//! The ordering between the loads is the page's business ([`UserPage::order_loads`]):
//! a page another thread rewrites needs acquire fences on weakly ordered CPUs, the
//! kernel's page of a self-monitoring thread does not (see `pmu-linux`'s page module).

use core::sync::atomic::{fence, Ordering};

use crate::hazards::Hazards;

/// The fields of `struct perf_event_mmap_page` the protocol reads.
///
/// Implementations read the shared page with volatile (or relaxed atomic) loads; the
/// protocol adds the ordering through [`UserPage::order_loads`].
pub trait UserPage {
    /// `lock`: the sequence count the kernel increments around every update.
    fn lock(&self) -> u32;
    /// `index`: hardware counter number + 1, or 0 when the event is not on a counter.
    fn index(&self) -> u32;
    /// `offset`: add the sign-extended counter value to this.
    fn offset(&self) -> i64;
    /// `pmc_width`: bits of the hardware counter.
    fn pmc_width(&self) -> u16;
    /// `cap_user_rdpmc`: user space may read the counter itself.
    fn cap_user_rdpmc(&self) -> bool;
    /// `time_enabled` (ns).
    fn time_enabled(&self) -> u64;
    /// `time_running` (ns).
    fn time_running(&self) -> u64;
    /// Called after the first `lock` load and before the second: keeps the field loads
    /// (and the counter read) between the two `lock` loads.
    ///
    /// The default is an acquire fence, right for a page that another CPU rewrites
    /// concurrently (the fake pages of the tests). A page whose writers never run
    /// concurrently with the reader may weaken it to a compiler fence.
    #[inline(always)]
    fn order_loads(&self) {
        fence(Ordering::Acquire);
    }
    /// The page's conversion from the counter clock to the event times, when the kernel
    /// publishes one (`cap_user_time`; with `cap_user_time_short` also `time_cycles` and
    /// `time_mask`), else `None`. Read inside the seqlock by [`read_now`]. The default,
    /// `None`, is a page without it: [`read_now`] then gives the page times as they are.
    #[inline(always)]
    fn clock_conversion(&self) -> Option<ClockConversion> {
        None
    }
    /// Whether a nonzero `index` on this page already means `cap_user_rdpmc` = 1, so
    /// that the protocol need not test the capability on every read. The default,
    /// false, tests it, as include/uapi/linux/perf_event.h's example does.
    #[inline(always)]
    fn index_implies_user_read(&self) -> bool {
        false
    }
}

/// At most this many passes through the seqlock before giving up.
pub const MAX_RETRIES: u32 = 1000;

/// A consistent read through the page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageRead {
    /// `offset + sign_extend(pmc)`: the event count.
    pub value: u64,
    /// The `lock` value the read was consistent with. A different value in a later read
    /// means the kernel updated the page in between (rescheduling, migration).
    pub seq: u32,
    /// `index` (counter number + 1) the value came from.
    pub index: u32,
    /// `time_enabled` at the read (as of the last page update).
    pub time_enabled: u64,
    /// `time_running` at the read (as of the last page update).
    pub time_running: u64,
    /// Whether `time_enabled` and `time_running` are the times at the read itself
    /// ([`read_now`] on a page with [`UserPage::clock_conversion`]) rather than as of
    /// the page's last update.
    pub times_now: bool,
}

impl PageRead {
    /// [`Hazards::MULTIPLEXED`] when time_enabled != time_running, else empty.
    #[inline]
    pub const fn hazards(&self) -> Hazards {
        if self.time_enabled != self.time_running {
            Hazards::MULTIPLEXED
        } else {
            Hazards::empty()
        }
    }
}

/// Why user space must use the `read()` system call instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fallback {
    /// `cap_user_rdpmc` is 0: the kernel does not allow user reads (x86: the
    /// `/sys/bus/event_source/devices/cpu/rdpmc` policy; arm64: `kernel.perf_user_access`
    /// is 0 or attr.config1 bit 1 was not set).
    NoUserAccess,
    /// `index` is 0: the event is not on a hardware counter right now (software event,
    /// or multiplexed out).
    NotScheduled,
    /// `pmc_width` is 0 or larger than 64.
    BadWidth {
        /// The width the page announced.
        width: u16,
    },
    /// The page changed under every one of [`MAX_RETRIES`] attempts.
    Contended,
}

impl Fallback {
    /// The hazard a value read through the fallback carries (besides
    /// [`Hazards::SYSCALL_FALLBACK`]).
    pub const fn hazard(self) -> Hazards {
        match self {
            Self::NotScheduled => Hazards::NOT_SCHEDULED,
            _ => Hazards::empty(),
        }
    }
}

impl core::fmt::Display for Fallback {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::NoUserAccess => f.write_str(
                "the kernel does not allow user-space counter reads for this event (cap_user_rdpmc = 0; on arm64 also kernel.perf_user_access = 0)",
            ),
            Self::NotScheduled => {
                f.write_str("the event is not on a hardware counter (index = 0)")
            }
            Self::BadWidth { width } => write!(f, "the page announces an invalid counter width of {width} bits"),
            Self::Contended => write!(f, "the page kept changing during {MAX_RETRIES} read attempts"),
        }
    }
}

/// Reads the event behind `page`, calling `read_counter(index - 1)` for the hardware
/// counter (`rdpmc` on x86, `PMEVCNTR<n>_EL0`/`PMCCNTR_EL0` on arm64), which answers
/// `None` for a number that names no counter it may read.
///
/// A fallback is returned as soon as the page shows it, without waiting for a
/// consistent pass: the `read()` that follows is authoritative either way.
///
/// # Errors
/// A [`Fallback`] when the value must come from the `read()` system call.
#[inline(always)]
pub fn read<P: UserPage + ?Sized>(
    page: &P,
    read_counter: impl FnMut(u32) -> Option<u64>,
) -> Result<PageRead, Fallback> {
    read_base(page, read_counter).map(|base| base.read)
}

/// A consistent read kept as the base of later [`count_since`]s and [`read_since`]s:
/// the read, and how its counter was read (counter number, sign-extension shift, the
/// sign-extended counter value).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BaseRead {
    /// The read.
    pub read: PageRead,
    pmc: i64,
    counter: u32,
    shift: u32,
}

/// [`read`], keeping what [`read_since`] needs.
///
/// # Errors
/// As [`read`].
#[inline(always)]
pub fn read_base<P: UserPage + ?Sized>(
    page: &P,
    mut read_counter: impl FnMut(u32) -> Option<u64>,
) -> Result<BaseRead, Fallback> {
    retry(|| attempt::<P, true>(page, &mut read_counter))
}

/// The count alone: [`read`] without loading `time_enabled`/`time_running` and without
/// keeping the pass's `lock` (the cheapest consistent read: `lock`, `index`, `offset`,
/// `pmc_width`, the counter, `lock` again).
///
/// Without the times it cannot say whether the event was multiplexed; a caller that
/// needs to know uses [`read`] ([`PageRead::hazards`]) or compares `lock` across its
/// region, as [`read_base`]/[`read_since`] do.
///
/// # Errors
/// As [`read`].
#[inline(always)]
pub fn read_count<P: UserPage + ?Sized>(
    page: &P,
    mut read_counter: impl FnMut(u32) -> Option<u64>,
) -> Result<u64, Fallback> {
    retry(|| attempt::<P, false>(page, &mut read_counter)).map(|base| base.read.value)
}

/// How a page converts a reading of the counter clock into the event times: the
/// fields `time_mult`, `time_shift`, `time_offset` (and, with `cap_user_time_short`,
/// `time_cycles` and `time_mask`) of include/uapi/linux/perf_event.h.
///
/// The clock is the one the kernel's `sched_clock` runs on: the TSC on x86
/// (arch/x86/events/core.c `arch_perf_update_userpage`, only with a stable TSC), the
/// generic timer's virtual count CNTVCT_EL0 on arm64 (drivers/perf/arm_pmuv3.c
/// `arch_perf_update_userpage`, only while `sched_clock` reads the architected timer;
/// it also sets `cap_user_time_short` with the timer's mask).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockConversion {
    /// `time_mult`.
    pub mult: u32,
    /// `time_shift`; the kernel keeps it ≤ 31 (arm_pmuv3.c halves `time_mult` where
    /// sched_clock's shift is 32).
    pub shift: u16,
    /// `time_offset`: time since the event's times were last updated, minus the clock
    /// converted to ns, at that update.
    pub offset: u64,
    /// `time_cycles` (`cap_user_time_short`), else 0.
    pub cycles: u64,
    /// `time_mask` (`cap_user_time_short`), else all ones.
    pub mask: u64,
}

impl ClockConversion {
    /// The ns to add to the page's `time_enabled` (and, while the event is on a
    /// counter, `time_running`) for a clock reading `cyc`, by the uapi header's recipe:
    /// `cyc = time_cycles + ((cyc - time_cycles) & time_mask)` (a no-op without
    /// `cap_user_time_short`), then `time_offset + cyc * time_mult >> time_shift`
    /// computed without overflow (libperf's `mul_u64_u32_shr`, tools/lib/perf/mmap.c).
    ///
    /// `None` for a `shift` of 64 or more, which no kernel publishes (the product would
    /// be shifted out entirely): the caller keeps the page times.
    #[inline]
    pub fn delta_ns(&self, cyc: u64) -> Option<u64> {
        if self.shift >= 64 {
            return None;
        }
        let cyc = self
            .cycles
            .wrapping_add(cyc.wrapping_sub(self.cycles) & self.mask);
        let ns = ((u128::from(cyc) * u128::from(self.mult)) >> self.shift) as u64;
        Some(self.offset.wrapping_add(ns))
    }
}

/// [`read`], with the event times brought up to the moment of the read: with the page's
/// [`ClockConversion`] (`cap_user_time`), `read_clock` is called once inside the
/// seqlock and the elapsed time is added to `time_enabled`, and to `time_running` when
/// the event is on a counter (which it is for every successful read). This is what
/// tools/lib/perf/mmap.c `perf_mmap__read_self` does, and what makes
/// `value * time_enabled / time_running` the right multiplexing estimate for a value read
/// through the page: the page's own times stand still from one reschedule to the next,
/// while the counter does not.
///
/// Without the conversion the read is [`read`]'s (`times_now` false). Unlike libperf,
/// the clock is read on every read where the page has the conversion, not only where
/// `time_enabled != time_running`: a region that takes the difference of two reads needs
/// both edges' times current even when the event has not been multiplexed yet.
///
/// # Errors
/// As [`read`].
#[inline]
pub fn read_now<P: UserPage + ?Sized>(
    page: &P,
    mut read_counter: impl FnMut(u32) -> Option<u64>,
    mut read_clock: impl FnMut() -> u64,
) -> Result<PageRead, Fallback> {
    retry(|| {
        let seq = page.lock();
        page.order_loads();
        if seq & 1 != 0 {
            return None;
        }
        let conversion = page.clock_conversion();
        let cyc = conversion.map(|_| read_clock());
        // The rest of the pass is `read`'s: the same `lock` must hold at its end for
        // the times and the conversion to belong to the value.
        let pass = attempt::<P, true>(page, &mut read_counter)?;
        page.order_loads();
        if page.lock() != seq {
            return None;
        }
        Some(pass.map(|anchor| {
            let mut read = anchor.read;
            if let Some(delta) = conversion
                .zip(cyc)
                .and_then(|(conversion, cyc)| conversion.delta_ns(cyc))
            {
                read.time_enabled = read.time_enabled.wrapping_add(delta);
                if read.index != 0 {
                    read.time_running = read.time_running.wrapping_add(delta);
                }
                read.times_now = true;
            }
            read
        }))
    })
}

/// Runs `pass` until it gives an outcome, at most [`MAX_RETRIES`] times.
#[inline(always)]
fn retry<T>(mut pass: impl FnMut() -> Option<Result<T, Fallback>>) -> Result<T, Fallback> {
    // The first pass alone: the usual case sets up no retry count.
    if let Some(outcome) = pass() {
        return outcome;
    }
    let mut attempts = MAX_RETRIES - 1;
    loop {
        core::hint::spin_loop();
        if let Some(outcome) = pass() {
            return outcome;
        }
        attempts -= 1;
        if attempts == 0 {
            return Err(Fallback::Contended);
        }
    }
}

/// The count since `base`, if the kernel has not rewritten the page since then
/// (`lock` unchanged before and after the counter read): then `index`, `offset` and
/// `pmc_width` are still the base read's, only the counter is read, and the count is the
/// difference of the two sign-extended counter values (`offset` cancels). `None` when
/// the page changed (the event was scheduled out and in, rotated, or reloaded after an
/// overflow): read it again with [`read`].
///
/// A region's stop reads this way: half the loads and checks of a full read, and the
/// `lock` comparison the region needs for its hazards comes for free.
#[inline(always)]
pub fn count_since<P: UserPage + ?Sized>(
    page: &P,
    base: &BaseRead,
    read_counter: impl FnOnce(u32) -> Option<u64>,
) -> Option<u64> {
    let seq = page.lock();
    if seq != base.read.seq {
        return None;
    }
    // As in `read`: the counter read stays between the two `lock` loads.
    page.order_loads();
    let pmc = read_counter(base.counter)?;
    page.order_loads();
    if page.lock() != seq {
        return None;
    }
    let shift = base.shift;
    let pmc = ((pmc << shift) as i64) >> shift;
    Some(pmc.wrapping_sub(base.pmc) as u64)
}

/// The event's count now (as [`read`] gives it) if the page is unchanged since
/// `base`: the base read's value plus [`count_since`].
#[inline(always)]
pub fn read_since<P: UserPage + ?Sized>(
    page: &P,
    base: &BaseRead,
    read_counter: impl FnOnce(u32) -> Option<u64>,
) -> Option<u64> {
    count_since(page, base, read_counter).map(|count| base.read.value.wrapping_add(count))
}

/// The raw counter of `base`'s event (as the counter read gives it: neither sign
/// extension nor `offset`), if the page is unchanged since `base`: `lock` is loaded and
/// compared first, so the counter read is the one the page still names, never one it
/// no longer publishes. `None` when the page changed (nothing is read then).
///
/// For a pair of reads whose difference alone matters (a region's edges): two of them
/// and one [`unchanged_since`] after the second prove that both read the same counter of
/// the same event with no reprogramming in between, and [`BaseRead::raw_count`] gives the
/// count. Cheaper than two [`count_since`] (one `lock` test fewer per pair, no sign
/// extension at either end).
#[inline(always)]
pub fn raw_since<P: UserPage + ?Sized>(
    page: &P,
    base: &BaseRead,
    read_counter: impl FnOnce(u32) -> Option<u64>,
) -> Option<u64> {
    if page.lock() != base.read.seq {
        return None;
    }
    // The counter read stays after the `lock` test (as in `read`).
    page.order_loads();
    read_counter(base.counter)
}

/// Whether the page is still as at `base` (`lock` unchanged), loaded after every
/// counter read before it: after [`raw_since`] reads it proves that the kernel did not
/// rewrite the page in between (no reschedule, no period reload), so the raw values are
/// one counter of one event, counting on.
#[inline(always)]
pub fn unchanged_since<P: UserPage + ?Sized>(page: &P, base: &BaseRead) -> bool {
    // Pairs with the kernel's barrier before its second `lock++`; keeps the counter
    // reads before this load.
    page.order_loads();
    page.lock() == base.read.seq
}

impl BaseRead {
    /// The base's own counter value, as a raw value for [`BaseRead::raw_count`]
    /// (sign-extended; the count masks the bits above `pmc_width`).
    #[inline(always)]
    pub fn raw(&self) -> u64 {
        self.pmc as u64
    }

    /// The count between two raw reads of this base's counter, `start` then `end`
    /// ([`raw_since`], [`BaseRead::raw`]): their difference modulo 2^`pmc_width`, the
    /// counter's own wrap (bits above the width, which a 64-bit register may carry
    /// beside a 32-bit counter, do not count). Exact while the counter advanced less
    /// than 2^`pmc_width` in between: a wrap at the width is an overflow, whose period
    /// reload rewrites the page (Linux arm_pmu.c `armpmu_event_set_period`, x86
    /// `x86_perf_event_set_period`), which [`unchanged_since`] catches.
    #[inline(always)]
    pub fn raw_count(&self, start: u64, end: u64) -> u64 {
        // `shift` = 64 - pmc_width, 0..=63 (a consistent base read checked it).
        (end.wrapping_sub(start) << self.shift) >> self.shift
    }
}

/// One pass: `None` if the page changed under it (or was being changed). Without
/// `TIMES` the page times are not loaded (they read as 0).
#[inline(always)]
fn attempt<P: UserPage + ?Sized, const TIMES: bool>(
    page: &P,
    read_counter: &mut impl FnMut(u32) -> Option<u64>,
) -> Option<Result<BaseRead, Fallback>> {
    let seq = page.lock();
    // Pairs with the kernel's barrier after its first `lock++`.
    page.order_loads();
    // An odd `lock` is an update in progress on another CPU: nothing to trust, not even
    // `index` (a counter that does not exist must never be read).
    if seq & 1 != 0 {
        return None;
    }
    let index = page.index();
    let offset = page.offset();
    let (time_enabled, time_running) = if TIMES {
        (page.time_enabled(), page.time_running())
    } else {
        (0, 0)
    };
    let width = u32::from(page.pmc_width());
    if !page.index_implies_user_read() && !page.cap_user_rdpmc() {
        return Some(Err(Fallback::NoUserAccess));
    }
    // `index` 0 (not on a counter) never reaches the counter read. Written as one
    // range test with the read's own (arm64: `index - 1` ≤ 31) the compiler makes it a
    // single comparison; the reason is worked out off the fast path.
    let counter = index.wrapping_sub(1);
    let read = if index != 0 {
        read_counter(counter)
    } else {
        None
    };
    let Some(pmc) = read else {
        return Some(Err(unreadable(index, page.cap_user_rdpmc())));
    };
    // Pairs with the kernel's barrier before its second `lock++`.
    page.order_loads();
    let changed = page.lock() ^ seq;
    // Sign extension from `width` bits shifts by 64 - width, which must be 0..=63:
    // width 1..=64. Anything else (0 wraps to 64, above 64 to a huge number) is bogus.
    // Tested with the `lock` as one word (`changed | shift >> 6`, one branch on the
    // fast path); a bogus width is reported only from a consistent pass.
    let shift = 64u32.wrapping_sub(width);
    if (changed | (shift >> 6)) != 0 {
        return not_consistent_or_bad_width(changed == 0, width).map(Err);
    }
    let pmc = ((pmc << shift) as i64) >> shift;
    Some(Ok(BaseRead {
        read: PageRead {
            value: offset.wrapping_add(pmc) as u64,
            seq,
            index,
            time_enabled,
            time_running,
            times_now: false,
        },
        pmc,
        counter,
        shift,
    }))
}

/// Why the counter named by `index` cannot be read: not on a counter (index 0: the
/// event is not scheduled, or without `cap_user_rdpmc` never readable) or a counter the
/// reader may not read. Out of line, so that the fast path tests `index` once.
#[cold]
#[inline(never)]
fn unreadable(index: u32, cap_user_rdpmc: bool) -> Fallback {
    if index == 0 && cap_user_rdpmc {
        Fallback::NotScheduled
    } else {
        Fallback::NoUserAccess
    }
}

/// A pass that failed its last test: the page changed (`None`: try again) or, on a
/// consistent page, `width` is not 1..=64. Out of line, so that the fast path tests
/// both with one branch (and returning a small value: in registers, so the base of
/// the fast path is never built in memory for it).
#[cold]
#[inline(never)]
fn not_consistent_or_bad_width(unchanged: bool, width: u32) -> Option<Fallback> {
    unchanged.then_some(Fallback::BadWidth {
        width: width as u16,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::sync::atomic::{AtomicBool, AtomicI64, AtomicU16, AtomicU32, AtomicU64};
    use std::sync::Arc;

    use crate::width::CounterWidth;

    /// A page whose fields another thread rewrites with the kernel's seqlock discipline.
    #[derive(Default)]
    struct FakePage {
        lock: AtomicU32,
        index: AtomicU32,
        offset: AtomicI64,
        width: AtomicU16,
        cap: AtomicBool,
        enabled: AtomicU64,
        running: AtomicU64,
        /// The "hardware counter" the page describes.
        pmc: AtomicU64,
        /// `cap_user_time` and its fields (`time_offset` moves on every update).
        conversion: std::sync::Mutex<Option<ClockConversion>>,
    }

    impl UserPage for FakePage {
        fn lock(&self) -> u32 {
            self.lock.load(Ordering::Relaxed)
        }
        fn index(&self) -> u32 {
            self.index.load(Ordering::Relaxed)
        }
        fn offset(&self) -> i64 {
            self.offset.load(Ordering::Relaxed)
        }
        fn pmc_width(&self) -> u16 {
            self.width.load(Ordering::Relaxed)
        }
        fn cap_user_rdpmc(&self) -> bool {
            self.cap.load(Ordering::Relaxed)
        }
        fn time_enabled(&self) -> u64 {
            self.enabled.load(Ordering::Relaxed)
        }
        fn time_running(&self) -> u64 {
            self.running.load(Ordering::Relaxed)
        }
        fn clock_conversion(&self) -> Option<ClockConversion> {
            *self.conversion.lock().unwrap()
        }
    }

    impl FakePage {
        fn with(index: u32, offset: i64, width: u16, cap: bool, pmc: u64) -> Self {
            let p = Self::default();
            p.index.store(index, Ordering::Relaxed);
            p.offset.store(offset, Ordering::Relaxed);
            p.width.store(width, Ordering::Relaxed);
            p.cap.store(cap, Ordering::Relaxed);
            p.pmc.store(pmc, Ordering::Relaxed);
            p
        }

        fn read_pmc(&self, idx: u32) -> Option<u64> {
            assert_eq!(idx + 1, self.index.load(Ordering::Relaxed));
            Some(self.pmc.load(Ordering::Relaxed))
        }

        /// One update, as perf_event_update_userpage() does it: lock++, write, lock++.
        fn update(&self, f: impl FnOnce(&Self)) {
            let l = self.lock.load(Ordering::Relaxed);
            self.lock.store(l.wrapping_add(1), Ordering::Relaxed);
            fence(Ordering::Release);
            f(self);
            self.lock.store(l.wrapping_add(2), Ordering::Release);
        }
    }

    /// The conversion of include/uapi/linux/perf_event.h, written as the header writes
    /// it (`quot = cyc >> time_shift; rem = cyc & ((1 << time_shift) - 1); delta =
    /// time_offset + quot * time_mult + ((rem * time_mult) >> time_shift)`): the
    /// independent form the tests compare [`ClockConversion::delta_ns`] against.
    fn header_delta(c: &ClockConversion, cyc: u64) -> u64 {
        let cyc = c.cycles.wrapping_add(cyc.wrapping_sub(c.cycles) & c.mask);
        let quot = cyc >> c.shift;
        let rem = cyc & ((1u64 << c.shift) - 1);
        c.offset
            .wrapping_add(quot.wrapping_mul(u64::from(c.mult)))
            .wrapping_add((rem * u64::from(c.mult)) >> c.shift)
    }

    /// A 62.5 MHz arm64 generic timer: 16 ns per tick, written as mult / 2^shift =
    /// 2^31 / 2^27 (the kernel picks its own pair in kernel/time/sched_clock.c; any
    /// pair with this ratio converts the same), with a 56-bit mask (the architected
    /// minimum counter width, `CLOCKSOURCE_MASK(56)` in
    /// drivers/clocksource/arm_arch_timer.c).
    fn timer_62_5_mhz(offset: u64, cycles: u64) -> ClockConversion {
        ClockConversion {
            mult: 0x8000_0000,
            shift: 27,
            offset,
            cycles,
            mask: (1 << 56) - 1,
        }
    }

    /// `delta_ns` is the header's formula, including for clock values whose product
    /// with `time_mult` overflows 64 bits (where the header splits quot/rem and
    /// libperf uses `mul_u64_u32_shr`), and 16 ns per tick at 62.5 MHz.
    #[test]
    fn clock_conversion_is_the_header_formula() {
        let c = timer_62_5_mhz(0u64.wrapping_sub(1_000_000), 0);
        assert_eq!(c.delta_ns(62_500 + 1_000_000 / 16), Some(1_000_000));
        for cyc in [0, 1, 12345, 1 << 40, (1 << 56) - 1, u64::MAX >> 8] {
            assert_eq!(c.delta_ns(cyc), Some(header_delta(&c, cyc)), "cyc {cyc:#x}");
        }
        let x86 = ClockConversion {
            // A 3 GHz TSC: 1/3 ns per cycle as mult / 2^shift, rounded up
            // (ceil(2^31 / 3)); the product overflows 64 bits for large `cyc`.
            mult: 715_827_883,
            shift: 31,
            offset: 7,
            cycles: 0,
            mask: u64::MAX,
        };
        for cyc in [0, 3, 3_000_000_000, u64::MAX / 3, u64::MAX] {
            assert_eq!(
                x86.delta_ns(cyc),
                Some(header_delta(&x86, cyc)),
                "cyc {cyc:#x}"
            );
        }
        assert_eq!(x86.delta_ns(3_000_000_000), Some(1_000_000_007));
    }

    /// `cap_user_time_short`: a clock reading that wrapped past `time_mask` since the
    /// update (`time_cycles`) still counts forward (the uapi header: "cyc = time_cycles +
    /// ((cyc - time_cycles) & time_mask)").
    #[test]
    fn short_clock_wraps_forward() {
        let mask32 = ClockConversion {
            mult: 1,
            shift: 0,
            offset: 0,
            cycles: 0xFFFF_FF00,
            mask: 0xFFFF_FFFF,
        };
        // 0x100 ticks after the 32-bit wrap: 0x200 ticks after time_cycles.
        assert_eq!(mask32.delta_ns(0x100), Some(0x1_0000_0100));
        // No shift the kernel would publish: no delta, never a shift overflow.
        let bogus = ClockConversion {
            shift: 64,
            ..mask32
        };
        assert_eq!(bogus.delta_ns(5), None);
    }

    /// `read_now` adds the elapsed time to both times of an event on a counter, so the
    /// multiplexing estimate `value * enabled / running` is the one at the read. Page:
    /// updated at clock 5000 (offset = -5000 ns with 1 ns per tick) with enabled 1000,
    /// running 500 (off its counter half the time so far); read at clock 5300: enabled
    /// 1300, running 800. The page times alone (`read`) would give 1000/500.
    #[test]
    fn read_now_brings_times_to_the_read() {
        let page = FakePage::with(2, 100, 64, true, 700);
        page.enabled.store(1000, Ordering::Relaxed);
        page.running.store(500, Ordering::Relaxed);
        *page.conversion.lock().unwrap() = Some(ClockConversion {
            mult: 1,
            shift: 0,
            offset: 0u64.wrapping_sub(5000),
            cycles: 0,
            mask: u64::MAX,
        });
        let r = read_now(&page, |i| page.read_pmc(i), || 5300).unwrap();
        assert_eq!((r.value, r.time_enabled, r.time_running), (800, 1300, 800));
        assert!(r.times_now);
        assert_eq!(r.hazards(), Hazards::MULTIPLEXED);
        let stale = read(&page, |i| page.read_pmc(i)).unwrap();
        assert_eq!((stale.time_enabled, stale.time_running), (1000, 500));
        assert!(!stale.times_now);

        // Without cap_user_time: the page times, and the clock is never read.
        *page.conversion.lock().unwrap() = None;
        let r = read_now(&page, |i| page.read_pmc(i), || panic!("clock read")).unwrap();
        assert_eq!(
            (r.time_enabled, r.time_running, r.times_now),
            (1000, 500, false)
        );
    }

    /// The kernel rewriting the page between the clock read and the counter read (here:
    /// from inside the clock read, as a reschedule would) makes the pass retry, so the
    /// times, the conversion and the value all come from one page update.
    #[test]
    fn read_now_retries_a_page_updated_under_it() {
        let page = FakePage::with(1, 0, 64, true, 10);
        *page.conversion.lock().unwrap() = Some(ClockConversion {
            mult: 1,
            shift: 0,
            offset: 0u64.wrapping_sub(100),
            cycles: 0,
            mask: u64::MAX,
        });
        let mut clock_reads = 0;
        let r = read_now(
            &page,
            |i| page.read_pmc(i),
            || {
                clock_reads += 1;
                if clock_reads == 1 {
                    // The update: times and offset move together.
                    page.update(|p| {
                        p.enabled.store(400, Ordering::Relaxed);
                        p.running.store(400, Ordering::Relaxed);
                        p.pmc.store(20, Ordering::Relaxed);
                        *p.conversion.lock().unwrap() = Some(ClockConversion {
                            mult: 1,
                            shift: 0,
                            offset: 0u64.wrapping_sub(150),
                            cycles: 0,
                            mask: u64::MAX,
                        });
                    });
                }
                160
            },
        )
        .unwrap();
        assert_eq!(clock_reads, 2, "the first pass must be discarded");
        assert_eq!((r.value, r.time_enabled, r.time_running), (20, 410, 410));
    }

    /// The example of include/uapi/linux/perf_event.h with a 48-bit counter holding a
    /// negative value (bit 47 set): offset + sign-extended pmc.
    #[test]
    fn value_is_offset_plus_sign_extended_pmc() {
        let page = FakePage::with(3, 1_000_100, 48, true, 0xFFFF_FFFF_FF9C);
        let r = read(&page, |i| page.read_pmc(i)).unwrap();
        assert_eq!(r.value, 1_000_000);
        assert_eq!(r.index, 3);
        assert_eq!(r.hazards(), Hazards::empty());
    }

    /// Fallback reasons: cap_user_rdpmc = 0, index = 0 (a reader that skips this test reads garbage:
    /// include/uapi/linux/perf_event.h, Linux 6.12, reads only `if (pc->cap_user_rdpmc && index)`):
    /// the counter is never read; a bogus width: the counter (a valid one) is read with
    /// the `lock` check, its value never used.
    #[test]
    fn fallbacks() {
        let never = |_| -> Option<u64> { panic!("counter must not be read") };
        let unused = |_| -> Option<u64> { Some(0xDEAD) };
        assert_eq!(
            read(&FakePage::with(1, 0, 48, false, 0), never),
            Err(Fallback::NoUserAccess)
        );
        assert_eq!(
            read(&FakePage::with(0, 0, 48, true, 0), never),
            Err(Fallback::NotScheduled)
        );
        assert_eq!(
            read(&FakePage::with(1, 0, 0, true, 0), unused),
            Err(Fallback::BadWidth { width: 0 })
        );
        assert_eq!(
            read(&FakePage::with(1, 0, 65, true, 0), unused),
            Err(Fallback::BadWidth { width: 65 })
        );
        assert_eq!(Fallback::NotScheduled.hazard(), Hazards::NOT_SCHEDULED);
        // The counter read refuses the index (arm64: index 33, a counter Linux never
        // hands to user space): no value, the read() fallback.
        let page = FakePage::with(33, 0, 64, true, 0);
        assert_eq!(read(&page, |_| None), Err(Fallback::NoUserAccess));
    }

    #[test]
    fn multiplexing_is_flagged() {
        let page = FakePage::with(1, 10, 64, true, 5);
        page.enabled.store(200, Ordering::Relaxed);
        page.running.store(100, Ordering::Relaxed);
        let r = read(&page, |i| page.read_pmc(i)).unwrap();
        assert_eq!(r.value, 15);
        assert_eq!(r.hazards(), Hazards::MULTIPLEXED);
    }

    #[test]
    fn a_page_stuck_mid_update_gives_contended() {
        let page = FakePage::with(1, 0, 64, true, 0);
        page.lock.store(7, Ordering::Relaxed);
        assert_eq!(read(&page, |i| page.read_pmc(i)), Err(Fallback::Contended));
    }

    /// read_since and count_since: while the page is unchanged only the counter is
    /// read, against the base read's counter and width (the 48-bit sign-extension case of
    /// perf_event.h); once the kernel rewrote the page (lock moved), or while it is
    /// rewriting it, `None`.
    #[test]
    fn read_since_an_unchanged_page() {
        let page = FakePage::with(3, 1_000_100, 48, true, 0xFFFF_FFFF_FF9C);
        let base = read_base(&page, |i| page.read_pmc(i)).unwrap();
        assert_eq!(base.read.value, 1_000_000);
        page.pmc.store(0xFFFF_FFFF_FFFF, Ordering::Relaxed); // -1: 99 events later
        assert_eq!(
            read_since(&page, &base, |i| page.read_pmc(i)),
            Some(1_000_099)
        );
        // The count since the base: the difference of the sign-extended counters.
        assert_eq!(count_since(&page, &base, |i| page.read_pmc(i)), Some(99));
        // Across the sign boundary of the 48-bit counter: -100 to +16 is 116 events.
        page.pmc.store(16, Ordering::Relaxed);
        assert_eq!(count_since(&page, &base, |i| page.read_pmc(i)), Some(116));
        assert_eq!(
            read_since(&page, &base, |i| page.read_pmc(i)),
            Some(1_000_116)
        );
        page.pmc.store(0xFFFF_FFFF_FFFF, Ordering::Relaxed);
        // A rewrite that changes nothing visible still moves the lock: not trusted.
        page.update(|_| {});
        assert_eq!(read_since(&page, &base, |_| panic!("not read")), None);
        let again = read_base(&page, |i| page.read_pmc(i)).unwrap();
        assert_eq!(again.read.value, 1_000_099);
        // Mid-update (odd lock): never equal to a base read's even lock.
        page.lock.fetch_add(1, Ordering::Relaxed);
        assert_eq!(read_since(&page, &again, |_| panic!("not read")), None);
        // The counter read refusing the number: None as well.
        page.lock.fetch_add(1, Ordering::Relaxed);
        let third = read_base(&page, |i| page.read_pmc(i)).unwrap();
        assert_eq!(read_since(&page, &third, |_| None), None);
        assert_eq!(count_since(&page, &third, |_| None), None);
    }

    /// count_since on a 32-bit counter (Cortex-A53's PMEVCNTR, pmc_width 32) that
    /// wrapped between base and stop without a page update: 0xFFFF_FFF0 (-16) to
    /// 0x10 (16) is 32 events, as the 32-bit sign extension of both ends gives.
    #[test]
    fn count_since_across_a_32_bit_wrap() {
        let page = FakePage::with(1, 5_000, 32, true, 0xFFFF_FFF0);
        let base = read_base(&page, |i| page.read_pmc(i)).unwrap();
        assert_eq!(base.read.value, 5_000 - 16);
        page.pmc.store(0x10, Ordering::Relaxed);
        assert_eq!(count_since(&page, &base, |i| page.read_pmc(i)), Some(32));
    }

    /// The raw pair (raw_since, raw_since, unchanged_since, raw_count) on a 32-bit
    /// counter (Cortex-A53's PMEVCNTR: pmc_width 32, arm_pmuv3.c
    /// `armv8pmu_event_is_64bit` false) whose 64-bit register carries stale upper bits:
    /// 0x1_FFFF_FFF0 to 0x1_0000_0010 is 32 events modulo 2^32 (the wrap at the
    /// counter's width), not 2^32 less.
    #[test]
    fn raw_pair_across_a_32_bit_wrap() {
        let page = FakePage::with(2, 7, 32, true, 0x1_FFFF_FFF0);
        let base = read_base(&page, |i| page.read_pmc(i)).unwrap();
        let start = raw_since(&page, &base, |i| page.read_pmc(i)).unwrap();
        assert_eq!(start, 0x1_FFFF_FFF0);
        page.pmc.store(0x1_0000_0010, Ordering::Relaxed);
        let end = raw_since(&page, &base, |i| page.read_pmc(i)).unwrap();
        assert!(unchanged_since(&page, &base));
        assert_eq!(base.raw_count(start, end), 32);
        // From the base's own (sign-extended) value: the same count.
        assert_eq!(base.raw_count(base.raw(), end), 32);
        // 64-bit counters (pmc_width 64): the plain difference.
        let wide = FakePage::with(1, 0, 64, true, u64::MAX - 4);
        let base = read_base(&wide, |i| wide.read_pmc(i)).unwrap();
        wide.pmc.store(5, Ordering::Relaxed);
        let end = raw_since(&wide, &base, |i| wide.read_pmc(i)).unwrap();
        assert_eq!(base.raw_count(base.raw(), end), 10);
    }

    /// A page rewritten after the base (here a period reload: same index, new counter
    /// value, as arm_pmu.c `armpmu_event_set_period` then `perf_event_update_userpage`
    /// do) is caught by both tests: `raw_since` reads nothing, `unchanged_since` is false
    /// for raw values taken before the rewrite, so their difference is never used.
    #[test]
    fn raw_pair_refuses_a_rewritten_page() {
        let page = FakePage::with(4, 0, 32, true, 100);
        let base = read_base(&page, |i| page.read_pmc(i)).unwrap();
        let start = raw_since(&page, &base, |i| page.read_pmc(i)).unwrap();
        // The counter reloaded between the two reads: the raw difference is garbage.
        page.update(|p| p.pmc.store(0x8000_0000, Ordering::Relaxed));
        let end = page.pmc.load(Ordering::Relaxed);
        assert_ne!(base.raw_count(start, end), 0);
        assert!(!unchanged_since(&page, &base));
        assert_eq!(raw_since(&page, &base, |_| panic!("not read")), None);
        // Mid-update (odd lock): never equal to the base's even lock.
        let fresh = read_base(&page, |i| page.read_pmc(i)).unwrap();
        page.lock.fetch_add(1, Ordering::Relaxed);
        assert!(!unchanged_since(&page, &fresh));
        assert_eq!(raw_since(&page, &fresh, |_| panic!("not read")), None);
    }

    /// No torn value over 10^6 reads while another thread rewrites the page.
    ///
    /// Generation g publishes a 48-bit pmc with bit 47 set (the sign-extension case)
    /// and offset = g * STEP - sign_extend(pmc), so every consistent read is a multiple
    /// of STEP and never goes backwards. A torn read (offset of one generation with the
    /// pmc or index of another) breaks one of those.
    /// The count-only read gives [`read`]'s value and the same fallbacks, decided
    /// before any counter read.
    #[test]
    fn read_count_is_reads_value() {
        // The libperf 48-bit case of read_since_an_unchanged_page: offset 1_000_100,
        // pmc -100 sign-extended from 48 bits.
        let page = FakePage::with(3, 1_000_100, 48, true, 0xFFFF_FFFF_FF9C);
        let full = read(&page, |i| page.read_pmc(i)).unwrap();
        assert_eq!(read_count(&page, |i| page.read_pmc(i)), Ok(full.value));
        assert_eq!(full.value, 1_000_000);
        // index 0 with cap_user_rdpmc: not scheduled; the counter is never read.
        page.index.store(0, Ordering::Relaxed);
        assert_eq!(
            read_count(&page, |_| panic!("not read")),
            Err(Fallback::NotScheduled)
        );
        // A width of 0 is refused (the counter read, its value unused).
        page.index.store(3, Ordering::Relaxed);
        page.width.store(0, Ordering::Relaxed);
        assert_eq!(
            read_count(&page, |i| page.read_pmc(i)),
            Err(Fallback::BadWidth { width: 0 })
        );
        // A page forever mid-update: Contended after MAX_RETRIES passes.
        page.width.store(48, Ordering::Relaxed);
        page.lock.fetch_add(1, Ordering::Relaxed);
        assert_eq!(
            read_count(&page, |_| panic!("not read")),
            Err(Fallback::Contended)
        );
    }

    /// The seqlock protocol of include/uapi/linux/perf_event.h under a writer that
    /// rewrites the page as fast as it can: no read is torn (every value is a whole
    /// generation's, never going backwards, with that generation's times), the only
    /// fallback is `Contended`, and once the writer is done every read succeeds with its
    /// last generation. How often a read meets the writer depends on the scheduler, so
    /// no rate is asserted; the writer's work is fixed and the reader reads for as long
    /// as it runs.
    #[test]
    fn no_torn_reads_under_a_concurrent_writer() {
        const STEP: u64 = 1 << 20;
        const GENERATIONS: u64 = 1_000_000;
        let w = CounterWidth::W48;
        let page = Arc::new(FakePage::with(1, 0, 48, true, 0));
        let done = Arc::new(AtomicBool::new(false));
        let writer = {
            let (page, done) = (Arc::clone(&page), Arc::clone(&done));
            std::thread::spawn(move || {
                for g in 1..=GENERATIONS {
                    // A pseudo-random pmc with bit 47 set, different every generation.
                    let pmc = w.truncate(g.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | (1 << 47);
                    let offset = (g * STEP) as i64 - w.sign_extend(pmc);
                    page.update(|p| {
                        p.index.store(1 + (g % 4) as u32, Ordering::Relaxed);
                        p.offset.store(offset, Ordering::Relaxed);
                        p.pmc.store(pmc, Ordering::Relaxed);
                        p.enabled.store(g, Ordering::Relaxed);
                        p.running.store(g, Ordering::Relaxed);
                    });
                }
                done.store(true, Ordering::Release);
            })
        };
        // The "hardware counter" read ignores the index check (the writer changes it);
        // a torn index shows up as a wrong value.
        let counter = |_| Some(page.pmc.load(Ordering::Relaxed));
        let mut last = 0u64;
        let mut check = |finished: bool| {
            match read_base(&*page, counter) {
                Ok(base) => {
                    let r = base.read;
                    // A later read against the base: the same generation's value, or
                    // None once the writer moved on.
                    match read_since(&*page, &base, counter) {
                        Some(v) => assert_eq!(v, r.value, "read_since across generations"),
                        None => assert!(!finished, "read_since failed on a still page"),
                    }
                    assert_eq!(r.value % STEP, 0, "torn read: {r:?}");
                    assert!(r.value >= last, "went backwards: {} < {last}", r.value);
                    assert_eq!(
                        r.time_enabled,
                        r.value / STEP,
                        "times from another generation"
                    );
                    last = r.value;
                }
                Err(Fallback::Contended) => assert!(!finished, "contended on a still page"),
                Err(other) => panic!("unexpected fallback {other:?}"),
            }
            // The count-only read under the same writer: a whole generation's value.
            match read_count(&*page, counter) {
                Ok(v) => {
                    assert_eq!(v % STEP, 0, "torn count-only read: {v}");
                    assert!(v >= last, "count-only read went backwards: {v} < {last}");
                    last = v;
                }
                Err(Fallback::Contended) => assert!(!finished, "contended on a still page"),
                Err(other) => panic!("unexpected fallback {other:?}"),
            }
        };
        while !done.load(Ordering::Acquire) {
            check(false);
        }
        writer.join().unwrap();
        check(true);
        assert_eq!(last, GENERATIONS * STEP, "the last generation, once still");
    }
}
