//! The counters kmod-enable-user runs for EL0 under its read-only grant, as a
//! [`pmu_core::Pmu`].
//!
//! With PMUSERENR_EL0 = ER | CR (the module's default), EL0 may read the event counters
//! and the cycle counter, and nothing else: it cannot program, enable, reset or see the
//! overflow flags. The module programs its `events` on fixed counters and publishes where
//! (`/sys/module/kmod_enable_user/parameters/layout`, [`GrantedLayout::parse`]):
//! `5=0x8 31=0x11` means INST_RETIRED on PMEVCNTR5_EL0 and CPU_CYCLES on PMCCNTR_EL0
//! (31, Linux's `ARMV8_PMU_CYCLE_IDX`), both filtered to EL0 by the module.
//!
//! [`GrantedPmu`] maps that layout onto pmu-core slots: the layout's event counters are
//! `Slot::Programmable(0..)` in layout order, the cycle counter `Slot::Fixed(0)`.
//! [`configure`](pmu_core::Pmu::configure) only accepts what the module already
//! programmed there (the event, counted at EL0 only); enabling and disabling are no-ops
//! (the counters run as long as the module is loaded); `write` cannot preset (it is
//! ignored: [`GrantedPmu::can_write`] says so); `overflowed` is always false, because
//! PMOVSSET_EL0 needs EN. So the event counters are read as 32 bits: a delta is exact
//! when the region counts fewer than 2^32 events (one wrap is undone by the wrapping
//! difference, on 32- and 64-bit counters alike), and the cycle counter, 64 bits with
//! the module's PMCR_EL0.LC, never wraps in practice.
//!
//! With `sentinel=1` the module also runs the kernel-entry sentinel
//! ([`crate::user_enable::Sentinel`]): an event counter that counts only at the kernel's
//! Exception level, marked `:k` in the layout (`5=0x8 4=0x8:k 31=0x11`). It is not a
//! slot (EL0 cannot count its own code with it): [`GrantedPmu::read_sentinel`] reads it,
//! and a region that sees it advance knows the kernel ran on its CPU in between.
//!
//! On a PMUv3p9 CPU the module's grant is UEN | TID | ER | CR with PMUACR_EL1 naming its
//! counters, and perf's (Linux 6.13+, for a task with rdpmc events) UEN | ER | CR with
//! PMUACR_EL1 naming that task's: under perf's, the module's counters read as zero
//! without a trap. [`GrantedLayout::reads_granted`] tells the cases apart from
//! PMUSERENR_EL0, which EL0 can read; PMUACR_EL1 it cannot.
//!
//! Source: Arm ARM (DDI 0487), PMUSERENR_EL0 (ER: `PMEVCNTR<n>_EL0`, PMXEVCNTR_EL0 and
//! PMSELR_EL0 at EL0; CR: PMCCNTR_EL0; UEN, TID), PMUACR_EL1.

use pmu_core::{Capabilities, CounterWidth, Error, GenericEvent, PrivilegeFilter, Slot};

use crate::counter::EventCounter;
use crate::events::{Armv8Event, EventNumber};

/// The most counters a layout names: 6 events, the sentinel and the cycle counter (the
/// module's limit).
pub const MAX_GRANTED: usize = 8;

/// The cycle counter in a layout.
const CYCLE_COUNTER: u8 = 31;

/// Where the module's counters are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GrantedLayout {
    /// (event counter n, event), in layout order.
    events: [(u8, u16); MAX_GRANTED],
    n_events: u8,
    cycle_counter: bool,
    /// The kernel-entry sentinel: (event counter n, event).
    sentinel: Option<(u8, u16)>,
}

/// Why a layout text was not understood.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LayoutError {
    /// An item is not `<counter>=0x<event>` (or `…:k` for the sentinel).
    Malformed {
        /// Which item (0-based).
        position: u8,
    },
    /// A counter number above 31, the cycle counter with another event than 0x11 or as
    /// the sentinel, a counter named twice, or a second sentinel.
    BadCounter {
        /// Which item (0-based).
        position: u8,
    },
    /// More than [`MAX_GRANTED`] items.
    TooMany,
}

impl core::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Malformed { position } => write!(
                f,
                "item {position} is not <counter>=0x<event> (e.g. 5=0x8, or 4=0x8:k for the sentinel)"
            ),
            Self::BadCounter { position } => write!(
                f,
                "item {position} names a counter above 31, the cycle counter (31) with another event than 0x11 or as the sentinel, a counter twice, or a second sentinel"
            ),
            Self::TooMany => write!(f, "more than {MAX_GRANTED} counters"),
        }
    }
}

fn parse_number(text: &str) -> Option<u32> {
    match text.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

impl GrantedLayout {
    /// Parses the module's `layout` parameter (`5=0x8 31=0x11`, with the sentinel
    /// `5=0x8 4=0x8:k 31=0x11`, or `none`; a trailing newline is fine).
    ///
    /// # Errors
    /// [`LayoutError`] with the offending item.
    pub fn parse(text: &str) -> Result<Self, LayoutError> {
        let mut out = Self::default();
        let text = text.trim();
        if text == "none" || text.is_empty() {
            return Ok(out);
        }
        let mut seen: u32 = 0;
        for (i, item) in text.split_ascii_whitespace().enumerate() {
            let position = i.min(255) as u8;
            if i >= MAX_GRANTED {
                return Err(LayoutError::TooMany);
            }
            let (item, sentinel) = match item.strip_suffix(":k") {
                Some(item) => (item, true),
                None => (item, false),
            };
            let (counter, event) = item
                .split_once('=')
                .and_then(|(c, e)| Some((c.parse::<u8>().ok()?, parse_number(e)?)))
                .ok_or(LayoutError::Malformed { position })?;
            let event = u16::try_from(event).map_err(|_| LayoutError::Malformed { position })?;
            if counter > CYCLE_COUNTER
                || seen & (1 << counter) != 0
                || (counter == CYCLE_COUNTER
                    && (sentinel || event != EventNumber::CPU_CYCLES.get()))
                || (sentinel && out.sentinel.is_some())
            {
                return Err(LayoutError::BadCounter { position });
            }
            seen |= 1 << counter;
            if sentinel {
                out.sentinel = Some((counter, event));
            } else if counter == CYCLE_COUNTER {
                out.cycle_counter = true;
            } else {
                out.events[usize::from(out.n_events)] = (counter, event);
                out.n_events += 1;
            }
        }
        Ok(out)
    }

    /// The event counters, `(n, event)`, in layout order: slot `Programmable(i)` is the
    /// i-th.
    pub fn event_counters(&self) -> &[(u8, u16)] {
        &self.events[..usize::from(self.n_events)]
    }

    /// Whether the cycle counter (slot `Fixed(0)`) is part of it.
    pub const fn cycle_counter(&self) -> bool {
        self.cycle_counter
    }

    /// The kernel-entry sentinel, `(n, event)`, when the module runs one.
    pub const fn sentinel(&self) -> Option<(u8, u16)> {
        self.sentinel
    }

    /// Every counter of the layout EL0 may read: its event counters, the sentinel and
    /// the cycle counter (what a [`crate::handle`] may be made for).
    pub fn readable(&self) -> crate::handle::CounterMask {
        let mut mask = crate::handle::CounterMask::EMPTY;
        let counters = self
            .event_counters()
            .iter()
            .map(|&(n, _)| n)
            .chain(self.sentinel.map(|(n, _)| n));
        for n in counters {
            if let Some(n) = EventCounter::new(n) {
                mask = mask.with(crate::counter::CounterId::Event(n));
            }
        }
        if self.cycle_counter {
            mask = mask.with(crate::counter::CounterId::Cycle);
        }
        mask
    }

    /// The slot that counts `event`: the cycle counter for CPU_CYCLES when the layout
    /// has it, else the first event counter with one of the event's candidates.
    pub fn slot_of(&self, event: Armv8Event) -> Option<Slot> {
        if self.cycle_counter && event.candidates().any(|e| e == EventNumber::CPU_CYCLES) {
            return Some(Slot::Fixed(0));
        }
        self.event_counters()
            .iter()
            .position(|&(_, e)| event.candidates().any(|c| c.get() == e))
            .map(|i| Slot::Programmable(i as u8))
    }
}

/// Why PMUSERENR_EL0, as EL0 reads it, does not let EL0 read a layout's counters
/// ([`GrantedLayout::reads_granted`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadsNotGranted {
    /// ER (for the event counters) or CR (for the cycle counter) is clear, and neither
    /// EN nor UEN opens them: a read traps. Linux's `armv8pmu_start()` wrote 0 (perf
    /// started the PMU for a task without user-readable events), or a CPU power-down or
    /// hotplug reset the register.
    Revoked,
    /// UEN without the module's TID mark (FEAT_PMUv3p9): the per-counter grant is
    /// perf's, for the task with user-readable (rdpmc) events that runs now (Linux 6.13+
    /// `armv8pmu_enable_user_access()` writes PMUACR_EL1 = that task's counters and
    /// PMUSERENR_EL0 = UEN | ER | CR). The module's counters are not among them: a read
    /// would give 0 without a trap (Arm ARM, PMUACR_EL1: RAZ/WI).
    PerfPerCounterGrant,
}

impl core::fmt::Display for ReadsNotGranted {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Revoked => f.write_str(
                "PMUSERENR_EL0 no longer grants the reads (ER or CR clear): perf's \
                 armv8pmu_start() revoked them, or a CPU power-down reset them",
            ),
            Self::PerfPerCounterGrant => f.write_str(
                "PMUSERENR_EL0 holds perf's per-counter grant (UEN without the module's TID \
                 mark: Linux 6.13+ on a PMUv3p9 CPU, for a task with rdpmc events), whose \
                 PMUACR_EL1 does not open the module's counters: they would read as 0",
            ),
        }
    }
}

impl GrantedLayout {
    /// Whether `pmuserenr` (PMUSERENR_EL0 read at EL0) lets EL0 read this layout's
    /// counters, by the Arm ARM rules ([`crate::registers::pmuacr_el1`]):
    /// - EN opens every counter;
    /// - UEN (FEAT_PMUv3p9; RES0, so 0, before) hands the choice to PMUACR_EL1, which
    ///   EL0 cannot read. kmod-enable-user's grant there is UEN | TID | ER | CR with
    ///   PMUACR_EL1 naming its counters (`pmu_armv8::user_enable::apply`); perf's is
    ///   UEN | ER (| CR) without TID. With TID the reads are granted; without it the
    ///   layout's counters read as zero: [`ReadsNotGranted::PerfPerCounterGrant`];
    /// - otherwise ER must be set for the layout's event counters (and sentinel), CR
    ///   for its cycle counter: [`ReadsNotGranted::Revoked`].
    ///
    /// # Errors
    /// [`ReadsNotGranted`]: why a read would trap or give 0.
    pub fn reads_granted(&self, pmuserenr: u64) -> Result<(), ReadsNotGranted> {
        use crate::registers::{PmuserenrEl0, PMUSERENR_EL0};
        let value = PmuserenrEl0::new(pmuserenr);
        if value.is_set(PMUSERENR_EL0::EN) {
            return Ok(());
        }
        if value.is_set(PMUSERENR_EL0::UEN) {
            return if value.is_set(PMUSERENR_EL0::TID) {
                Ok(())
            } else {
                Err(ReadsNotGranted::PerfPerCounterGrant)
            };
        }
        let events = !self.event_counters().is_empty() || self.sentinel.is_some();
        if (events && !value.is_set(PMUSERENR_EL0::ER))
            || (self.cycle_counter && !value.is_set(PMUSERENR_EL0::CR))
        {
            return Err(ReadsNotGranted::Revoked);
        }
        Ok(())
    }
}

/// The reads [`GrantedPmu`] makes: the real ones at EL0 (`El0Reads`, aarch64 only),
/// or a fake.
pub trait CounterReads {
    /// The width of the cycle counter's reads: 64 bits at EL0 (`mrs PMCCNTR_EL0`, with
    /// the module's PMCR_EL0.LC); AArch32's reads of PMCCNTR with `mrc` give its low 32
    /// bits (Arm ARM DDI 0487 G8 "PMCCNTR"), so a reader there says W32.
    const CYCLE_WIDTH: CounterWidth = CounterWidth::W64;
    /// `PMEVCNTR<n>_EL0`.
    fn event_counter(&self, counter: EventCounter) -> u64;
    /// PMCCNTR_EL0.
    fn cycle_counter(&self) -> u64;
}

/// The module's counters read at EL0 with PMUSERENR_EL0.ER and .CR.
#[cfg(target_arch = "aarch64")]
#[derive(Debug)]
pub struct El0Reads {
    _this_cpu: core::marker::PhantomData<*const ()>,
}

#[cfg(target_arch = "aarch64")]
impl El0Reads {
    /// Reads on this PE.
    ///
    /// # Safety
    ///
    /// The kernel granted ER and CR on this PE (kmod-enable-user; a read without the
    /// grant traps: SIGILL), or on PMUv3p9 its UEN grant whose PMUACR_EL1 opens the
    /// layout's counters ([`GrantedLayout::reads_granted`] checks both from
    /// PMUSERENR_EL0), the thread stays on it while the value lives, and every
    /// counter read is one the layout names (below PMCR_EL0.N).
    pub unsafe fn new() -> Self {
        Self {
            _this_cpu: core::marker::PhantomData,
        }
    }
}

#[cfg(target_arch = "aarch64")]
impl CounterReads for El0Reads {
    #[inline(always)]
    fn event_counter(&self, counter: EventCounter) -> u64 {
        // SAFETY: `new`'s contract: ER granted on this PE, a counter of the layout.
        unsafe { crate::asm::read_pmevcntr_el0(counter) }
    }

    #[inline(always)]
    fn cycle_counter(&self) -> u64 {
        // SAFETY: `new`'s contract: CR granted on this PE.
        unsafe { crate::asm::read_pmccntr_el0() }
    }
}

// SAFETY: `El0Reads::new`'s contract: the grant is given on this (pinned) PE for every
// counter the layout names, all below PMCR_EL0.N.
#[cfg(target_arch = "aarch64")]
unsafe impl crate::handle::ReadGrant for GrantedPmu<El0Reads> {
    fn readable(&self) -> crate::handle::CounterMask {
        self.layout.readable()
    }
}

/// The module's counters as a [`pmu_core::Pmu`] (see the module docs).
#[derive(Debug)]
pub struct GrantedPmu<R> {
    layout: GrantedLayout,
    reads: R,
}

impl<R: CounterReads> GrantedPmu<R> {
    /// The counters of `layout`, read through `reads`.
    pub const fn new(layout: GrantedLayout, reads: R) -> Self {
        Self { layout, reads }
    }

    /// The layout.
    pub const fn layout(&self) -> &GrantedLayout {
        &self.layout
    }

    /// The kernel-entry sentinel's count (`PMEVCNTR<n>_EL0`, read as 32 bits like the
    /// other event counters: a difference of two reads is exact below 2^32 kernel
    /// events), or `None` when the layout has none.
    #[inline(always)]
    pub fn read_sentinel(&self) -> Option<u64> {
        let (n, _) = self.layout.sentinel?;
        let counter = EventCounter::new(n)?;
        Some(self.reads.event_counter(counter) & u64::from(u32::MAX))
    }

    /// Always false: EL0 cannot preset these counters (no EN), so an overflow cannot be
    /// provoked and `write` is ignored.
    pub const fn can_write(&self) -> bool {
        false
    }

    fn event_of(&self, slot: Slot) -> Option<u16> {
        match slot {
            Slot::Programmable(i) => self
                .layout
                .event_counters()
                .get(usize::from(i))
                .map(|e| e.1),
            Slot::Fixed(0) if self.layout.cycle_counter => Some(EventNumber::CPU_CYCLES.get()),
            Slot::Fixed(_) => None,
        }
    }
}

impl<R: CounterReads> pmu_core::Pmu for GrantedPmu<R> {
    type Event = Armv8Event;

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            programmable: u32::from(self.layout.n_events),
            programmable_width: CounterWidth::W32,
            fixed: u32::from(self.layout.cycle_counter),
            fixed_width: R::CYCLE_WIDTH,
        }
    }

    fn is_implemented(&self, event: Armv8Event) -> bool {
        self.layout.slot_of(event).is_some()
    }

    fn fixed_event(&self, index: u8) -> Option<GenericEvent> {
        (index == 0 && self.layout.cycle_counter).then_some(GenericEvent::CpuCycles)
    }

    /// Accepts only what the module programmed on `slot`, counted at EL0 only.
    fn configure(
        &self,
        slot: Slot,
        event: Armv8Event,
        filter: PrivilegeFilter,
    ) -> Result<(), Error> {
        if filter != PrivilegeFilter::USER {
            return Err(Error::FilterUnsupported { filter });
        }
        match self.event_of(slot) {
            Some(e) if event.candidates().any(|c| c.get() == e) => Ok(()),
            _ => Err(Error::EventNotCountableOnSlot {
                slot,
                code: u64::from(event.preferred().get()),
            }),
        }
    }

    /// The module runs the counters: nothing to do.
    fn enable(&self, _slot: Slot) {}

    /// The module runs the counters: nothing to do.
    fn disable(&self, _slot: Slot) {}

    fn read(&self, slot: Slot) -> u64 {
        match slot {
            Slot::Fixed(_) => self.reads.cycle_counter(),
            Slot::Programmable(i) => self
                .layout
                .event_counters()
                .get(usize::from(i))
                .and_then(|&(n, _)| EventCounter::new(n))
                .map_or(0, |c| self.reads.event_counter(c)),
        }
    }

    /// Ignored: EL0 cannot write these counters ([`GrantedPmu::can_write`]).
    fn write(&self, _slot: Slot, _value: u64) {}

    /// Always false: PMOVSSET_EL0 is not readable with ER | CR.
    fn overflowed(&self, _slot: Slot) -> bool {
        false
    }

    fn clear_overflow(&self, _slot: Slot) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::cell::Cell;
    use pmu_core::{CounterPool, Event, Pmu};

    struct Fake {
        counters: [Cell<u64>; 32],
    }

    impl CounterReads for Fake {
        fn event_counter(&self, counter: EventCounter) -> u64 {
            self.counters[usize::from(counter.index())].get()
        }
        fn cycle_counter(&self) -> u64 {
            self.counters[31].get()
        }
    }

    fn fake() -> Fake {
        Fake {
            counters: [const { Cell::new(0) }; 32],
        }
    }

    /// The module's default layout on QEMU's 6-counter PMU (kmod-enable-user log and
    /// `parameters/layout`, tests/tests/kernel_arm64.rs): INST_RETIRED on PMEVCNTR5_EL0,
    /// CPU_CYCLES on PMCCNTR_EL0.
    #[test]
    fn parses_the_module_layout() {
        let layout = GrantedLayout::parse("5=0x8 31=0x11\n").unwrap();
        assert_eq!(layout.event_counters(), [(5, 0x8)]);
        assert!(layout.cycle_counter());
        assert_eq!(GrantedLayout::parse("none"), Ok(GrantedLayout::default()));
        assert_eq!(
            GrantedLayout::parse("5=0x8 x"),
            Err(LayoutError::Malformed { position: 1 })
        );
        assert_eq!(
            GrantedLayout::parse("31=0x8"),
            Err(LayoutError::BadCounter { position: 0 })
        );
        assert_eq!(
            GrantedLayout::parse("5=0x8 5=0x3"),
            Err(LayoutError::BadCounter { position: 1 })
        );
        assert_eq!(
            GrantedLayout::parse("32=0x8"),
            Err(LayoutError::BadCounter { position: 0 })
        );
        assert_eq!(
            GrantedLayout::parse("0=1 1=2 2=3 3=4 4=5 5=6 6=7 7=8:k 31=0x11"),
            Err(LayoutError::TooMany)
        );
    }

    /// The sentinel (`:k`, kmod-enable-user's `sentinel=1`, written by
    /// `user_enable::Layout::write_text`) is parsed apart from the EL0 events: no slot,
    /// read by `read_sentinel` (as 32 bits); one sentinel at most, never the cycle
    /// counter.
    #[test]
    fn parses_the_sentinel_apart_from_the_slots() {
        let layout = GrantedLayout::parse("5=0x8 4=0x8:k 31=0x11").unwrap();
        assert_eq!(layout.event_counters(), [(5, 0x8)]);
        assert_eq!(layout.sentinel(), Some((4, 0x8)));
        let pmu = GrantedPmu::new(layout, fake());
        pmu.reads.counters[4].set(0x1_0000_0005);
        assert_eq!(pmu.read_sentinel(), Some(5));
        assert_eq!(pmu_core::Pmu::capabilities(&pmu).programmable, 1);
        let plain = GrantedPmu::new(GrantedLayout::parse("5=0x8").unwrap(), fake());
        assert_eq!(plain.read_sentinel(), None);
        assert_eq!(
            GrantedLayout::parse("5=0x8:k 4=0x8:k"),
            Err(LayoutError::BadCounter { position: 1 })
        );
        assert_eq!(
            GrantedLayout::parse("31=0x11:k"),
            Err(LayoutError::BadCounter { position: 0 })
        );
        assert_eq!(
            GrantedLayout::parse("4=0x8:u"),
            Err(LayoutError::Malformed { position: 0 })
        );
        // The widest layout the module writes.
        let widest = GrantedLayout::parse(
            "29=0xffff 28=0xfffe 27=0xfffd 26=0xfffc 25=0xfffb 24=0xfffa 23=0xfff9:k 31=0x11",
        )
        .unwrap();
        assert_eq!(widest.event_counters().len(), 6);
        assert_eq!(widest.sentinel(), Some((23, 0xfff9)));
    }

    /// Generic events find their counter; anything the module did not program, or at
    /// other levels than EL0, is refused when the counter is made, not at the read.
    #[test]
    fn counters_come_only_from_the_layout() {
        let layout = GrantedLayout::parse("5=0x8 4=0x3 31=0x11").unwrap();
        let pmu = GrantedPmu::new(layout, fake());
        pmu.reads.counters[5].set(1234);
        pmu.reads.counters[4].set(7);
        pmu.reads.counters[31].set(99);
        let pool = CounterPool::new(&pmu);
        let inst = Event::Generic(GenericEvent::Instructions);
        let slot = layout
            .slot_of(crate::generic_event(GenericEvent::Instructions).unwrap())
            .unwrap();
        assert_eq!(slot, Slot::Programmable(0));
        let c = pool.counter_at(slot, inst, PrivilegeFilter::USER).unwrap();
        assert_eq!(c.read(), 1234);
        let cycles = pool
            .counter_at(
                Slot::Fixed(0),
                Event::Generic(GenericEvent::CpuCycles),
                PrivilegeFilter::USER,
            )
            .unwrap();
        assert_eq!(cycles.read(), 99);
        assert_eq!(cycles.width(), CounterWidth::W64);
        assert_eq!(c.width(), CounterWidth::W32);
        let refill = pool
            .counter_at(
                Slot::Programmable(1),
                Event::Raw(0x3),
                PrivilegeFilter::USER,
            )
            .unwrap();
        assert_eq!(refill.read(), 7);
        drop((c, cycles, refill));
        // Another event on a slot, another filter, an event not in the layout.
        assert!(matches!(
            pool.counter_at(
                Slot::Programmable(0),
                Event::Raw(0x3),
                PrivilegeFilter::USER
            ),
            Err(Error::EventNotCountableOnSlot { .. })
        ));
        assert!(matches!(
            pool.counter_at(Slot::Programmable(0), inst, PrivilegeFilter::ALL),
            Err(Error::FilterUnsupported { .. })
        ));
        assert!(!pmu.is_implemented(crate::generic_event(GenericEvent::BranchMisses).unwrap()));
        assert!(!pmu.overflowed(Slot::Programmable(0)));
        assert!(!pmu.can_write());
    }
}
