//! Granting EL0 access to the PMU on one CPU, and taking it back: the per-CPU work of
//! the kernel module kmod-enable-user, in both of its flavours.
//!
//! The stock-kernel module (`kmod-enable-user/stock/`, C glue) and the Rust-for-Linux
//! module (`kmod-enable-user/kmod_enable_user_main.rs`) both call this code, compiled as one
//! no_std object, so the steps are written once, here, over the small register
//! interface [`UserAccessRegisters`]: `el1::El1UserAccess` (aarch64 only) is the real
//! one, [`crate::fake::FakeUserAccess`] the host-test one.
//!
//! # The grant
//!
//! By default EL0 may only *read* (PMUSERENR_EL0 = ER | CR, what Linux grants a task
//! that owns user-readable perf events, `armv8pmu_enable_user_access()` in
//! drivers/perf/arm_pmuv3.c, Linux 6.12). It reads counters the module programs for it
//! ([`Layout`]): each requested event on one of the highest-numbered event counters,
//! filtered to EL0 (`PMEVTYPER<n>_EL0`.P = 1: not at EL1; NSH = 0: not at EL2), and the
//! cycle counter filtered the same way. Write access (EN: EL0 may program PMCR_EL0,
//! `PMEVTYPER<n>_EL0`, PMCNTENSET_EL0 …, count at EL1 — a side channel into the kernel —
//! and stop or reset everyone else's counters) is a separate, explicit opt-in
//! ([`UserAccess::new`]'s `el0_programming`).
//!
//! # Next to perf
//!
//! Which counters are perf's is perf's own bookkeeping, not something read from the
//! counters: the kernel glue takes the layout's event counters out of the set perf may
//! allocate from (`arm_pmu` counter mask) and passes perf's per-CPU `used_mask`, as
//! PMCNTENSET_EL0 bits, to [`apply`] and [`restore`]. A layout counter perf holds is
//! [`ApplyError::CounterInUse`] (nothing written); the module never zeroes, keeps or
//! releases a counter perf holds, and never touches a counter outside its layout. The
//! cycle counter is never part of a layout: perf places every CPU_CYCLES event on
//! PMCCNTR_EL0 first and cannot be kept from it, so the module counts CPU_CYCLES on one
//! of its event counters instead.
//!
//! # Again after idle, perf or hotplug
//!
//! A CPU power-down resets PMUSERENR_EL0 (`cpu_do_resume`, arch/arm64/mm/proc.S), arm_pmu's
//! CPU_PM_EXIT handler resets the PMU (`cpu_pm_pmu_notify` → `armv8pmu_reset`: every
//! counter disabled, PMCR_EL0 = P | C | LC (| LP)), and perf's `armv8pmu_start()`
//! writes PMUSERENR_EL0 = 0 whenever it starts the PMU for a task without user-readable
//! events. [`apply`] with the previous [`Applied`] puts the grant back: the module's
//! counters that still count what it programmed are left running, the others
//! programmed again from zero.
//!
//! # On PMUv3p9
//!
//! ER opens every event counter to EL0, perf's too. FEAT_PMUv3p9 (ID_AA64DFR0_EL1.PMUVer
//! = 0b1001) adds PMUSERENR_EL0.UEN: with it, PMUACR_EL1 says counter by counter what
//! EL0 may read, the others read as zero ([`crate::registers::pmuacr_el1`]). Linux 6.13+
//! uses it for a task with rdpmc events (`armv8pmu_enable_user_access()`: PMUACR_EL1 =
//! that task's counters, PMUSERENR_EL0 = UEN | ER | CR, and unused counters are no longer
//! zeroed). On such a CPU, without EN, [`apply`] grants the same way: PMUACR_EL1 = the
//! module's counters (plus the counters of perf's grant found in place, which belongs to
//! the task that runs now), PMUSERENR_EL0 = UEN | TID | ER | CR. TID is the mark EL0
//! reads to tell the module's grant from perf's ([`crate::granted::GrantedLayout::reads_granted`]).
//! [`restore`] puts back exactly the grant it found beside its own when nobody rewrote
//! the registers since, else leaves perf's values. A grant without UEN found there (a
//! kernel before 6.13) is kept whole, as before PMUv3p9.
//!
//! Sources: Arm ARM (DDI 0487), "PMUSERENR_EL0", "PMUACR_EL1", "PMCR_EL0", "PMCNTENSET_EL0",
//! "`PMEVTYPER<n>_EL0`", "PMCCFILTR_EL0", "PMCEID0_EL0", "ID_AA64DFR0_EL1"; the register
//! field definitions in [`crate::registers`].

use core::ffi::CStr;

use crate::events::{EventNumber, ImplementedEvents};
use crate::registers::{
    PmccfiltrEl0, PmcntenclrEl0, PmcntensetEl0, PmcrEl0, PmuserenrEl0, PMCCFILTR_EL0, PMCR_EL0,
    PMUSERENR_EL0,
};
use crate::version::PmuVersion;

/// The PMUSERENR_EL0 bits a user may ask for: EN | SW | CR | ER.
pub const USER_ACCESS_BITS: u64 = 0xF;

/// PMUSERENR_EL0.EN: EL0 may program the PMU. Only through the explicit opt-in.
pub const EN: u64 = 1 << 0;

/// What both module flavours grant by default on arm64: ER (8), read-only event
/// counters. CR is not in it: the module never uses PMCCNTR_EL0 (perf's), so CR would
/// only expose perf's cycle counter.
pub const DEFAULT_USER_ACCESS: u64 = 0b1000;

/// At most this many events the module programs for EL0.
pub const MAX_MODULE_EVENTS: usize = 6;

/// The cycle counter's number and its bit in PMCNTENSET_EL0 (Linux 6.12 numbers it
/// the same way: `ARMV8_PMU_CYCLE_IDX`, include/linux/perf/arm_pmuv3.h). Never part of
/// a [`Layout`]: perf takes it for every CPU_CYCLES event.
pub const CYCLE_COUNTER: u8 = 31;

/// CPU_CYCLES (Arm ARM, common event 0x0011): what the layout counts on an event
/// counter when `cycle_counter` is asked for.
pub const CPU_CYCLES: u16 = 0x11;

/// CHAIN (Arm ARM, common event 0x001E): pairs a counter with the one below it; never
/// a module event (Linux refuses it too, `__armv8_pmuv3_map_event`).
pub const CHAIN: u16 = 0x1e;

/// `PMEVTYPER<n>_EL0` / PMCCFILTR_EL0 bit 31, P: do not count at EL1. With U = 0, NSK =
/// NSU = 0 and NSH = 0 the counter counts at EL0 only (Arm ARM, `PMEVTYPER<n>_EL0`).
const FILTER_EL0_ONLY: u64 = 1 << 31;

/// `PMEVTYPER<n>_EL0` bit 30, U: do not count at EL0 (Arm ARM, `PMEVTYPER<n>_EL0`).
const FILTER_NOT_EL0: u64 = 1 << 30;

/// `PMEVTYPER<n>_EL0` bit 27, NSH: count at (Non-secure) EL2 (Arm ARM,
/// `PMEVTYPER<n>_EL0`; Linux's `ARMV8_PMU_INCLUDE_EL2`, include/linux/perf/arm_pmuv3.h).
const FILTER_INCLUDE_EL2: u64 = 1 << 27;

/// The kernel-entry sentinel: one event counter the module programs to count an event
/// at the kernel's Exception level only, never at EL0.
///
/// User code that reads it at both edges of a region learns whether the kernel ran on
/// this CPU in between (an interrupt, a system call, a page fault, a reschedule): any
/// increase is kernel work, because the counter does not count at EL0. Which Exception
/// level is the kernel's: EL1, or EL2 for a kernel that runs there with VHE
/// (`is_kernel_in_hyp_mode()`; Linux then adds `ARMV8_PMU_INCLUDE_EL2` to a kernel
/// event, drivers/perf/arm_pmuv3.c `armv8pmu_set_event_filter`).
///
/// What EL0 learns from it is how much the kernel did on its CPU: information that
/// perf gives only with `perf_event_paranoid` ≤ 1 (kernel profiling). Both module
/// flavours program it only when asked (`sentinel=1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sentinel {
    event: u16,
    kernel_at_el2: bool,
}

impl Sentinel {
    /// A sentinel counting `event` (INST_RETIRED, 0x08, is what both module flavours
    /// use) at EL1, or at EL2 when `kernel_at_el2` (VHE: CurrentEL is 2 in the kernel).
    pub const fn new(event: u16, kernel_at_el2: bool) -> Self {
        Self {
            event,
            kernel_at_el2,
        }
    }

    /// The event.
    pub const fn event(&self) -> u16 {
        self.event
    }

    /// The `PMEVTYPER<n>_EL0` value: U = 1 (not at EL0); at EL1 (P = 0), or with a VHE
    /// kernel at EL2 only (P = 1 excludes guest EL1, NSH = 1 includes EL2).
    pub const fn config(&self) -> u64 {
        let filter = if self.kernel_at_el2 {
            FILTER_NOT_EL0 | FILTER_EL0_ONLY | FILTER_INCLUDE_EL2
        } else {
            FILTER_NOT_EL0
        };
        filter | self.event as u64
    }
}

/// PMUSERENR_EL0.SW: EL0 may write PMSWINC_EL0.
const SW: u64 = 1 << 1;
/// PMUSERENR_EL0.CR: EL0 may read PMCCNTR_EL0 (with UEN: its EL0 writes are ignored).
const CR: u64 = 1 << 2;
/// PMUSERENR_EL0.ER: EL0 may read every event counter (with UEN: writes ignored).
const ER: u64 = 1 << 3;
/// PMUSERENR_EL0.UEN (FEAT_PMUv3p9): PMUACR_EL1 says which counters EL0 may access.
pub const UEN: u64 = 1 << 4;
/// PMUSERENR_EL0.TID (FEAT_PMUv3p9): EL0 reads of `PMCEID<n>_EL0` trap.
pub const TID: u64 = 1 << 6;
/// The PMUACR_EL1 bits of the event counters (`P<m>`, m = 0..=30); bit 31 is C.
const PMUACR_EVENT_COUNTERS: u64 = 0x7fff_ffff;
/// PMUACR_EL1.C: PMCCNTR_EL0.
const PMUACR_CYCLE_COUNTER: u64 = 1 << 31;

/// The register accesses [`apply`] and [`restore`] need, on one CPU.
///
/// The writes of PMCR_EL0, PMCNTENSET_EL0 and PMCNTENCLR_EL0 synchronize (`isb` after
/// the `msr`), as [`crate::asm`]'s do; the others do not, and [`Self::isb`] is the
/// explicit barrier.
pub trait UserAccessRegisters {
    /// ID_AA64DFR0_EL1 (only PMUVer, bits 11:8, is used).
    fn id_aa64dfr0(&self) -> u64;
    /// PMUSERENR_EL0.
    fn pmuserenr(&self) -> PmuserenrEl0;
    /// Writes PMUSERENR_EL0 (no barrier).
    fn set_pmuserenr(&self, value: PmuserenrEl0);
    /// PMUACR_EL1. Read only on a CPU with FEAT_PMUv3p9 (UNDEFINED before).
    fn pmuacr(&self) -> u64;
    /// Writes PMUACR_EL1 (no barrier). Only on a CPU with FEAT_PMUv3p9.
    fn set_pmuacr(&self, value: u64);
    /// PMCR_EL0.
    fn pmcr(&self) -> PmcrEl0;
    /// Writes PMCR_EL0, then synchronizes.
    fn set_pmcr(&self, value: PmcrEl0);
    /// PMCEID0_EL0 and PMCEID1_EL0: the common events this CPU implements.
    fn implemented_events(&self) -> ImplementedEvents;
    /// PMCNTENSET_EL0.
    fn pmcntenset(&self) -> PmcntensetEl0;
    /// Writes PMCNTENSET_EL0, then synchronizes.
    fn set_pmcntenset(&self, value: PmcntensetEl0);
    /// Writes PMCNTENCLR_EL0, then synchronizes.
    fn set_pmcntenclr(&self, value: PmcntenclrEl0);
    /// PMCCFILTR_EL0.
    fn pmccfiltr(&self) -> PmccfiltrEl0;
    /// Writes PMCCFILTR_EL0 (no barrier).
    fn set_pmccfiltr(&self, value: PmccfiltrEl0);
    /// `PMEVTYPER<n>_EL0`, `n` below PMCR_EL0.N.
    fn pmevtyper(&self, n: u8) -> u64;
    /// Writes `PMEVTYPER<n>_EL0` (no barrier), `n` below PMCR_EL0.N.
    fn set_pmevtyper(&self, n: u8, value: u64);
    /// `PMEVCNTR<n>_EL0`, `n` below PMCR_EL0.N.
    fn pmevcntr(&self, n: u8) -> u64;
    /// Writes `PMEVCNTR<n>_EL0` (no barrier), `n` below PMCR_EL0.N.
    fn set_pmevcntr(&self, n: u8, value: u64);
    /// Writes PMCCNTR_EL0 (no barrier).
    fn set_pmccntr(&self, value: u64);
    /// Writes `mask` to PMINTENCLR_EL1 and PMOVSCLR_EL0 (no barrier): no overflow
    /// interrupt and no overflow flag left on those counters (what perf does when it
    /// releases a counter, `armv8pmu_disable_intens()`, drivers/perf/arm_pmuv3.c 6.12).
    fn clear_overflow_and_interrupt(&self, mask: u64);
    /// A context synchronization event (`isb`).
    fn isb(&self);
}

/// A `user_access` value a user may ask for, checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserAccess(u64);

/// Why a `user_access` value was refused (both module flavours answer `-EINVAL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UserAccessError {
    /// 0 grants nothing: loading the module would be pointless.
    Empty,
    /// A bit outside EN=1 | SW=2 | CR=4 | ER=8 (UEN and TID, bits 4 and 6, are the
    /// module's to set on a PMUv3p9 CPU, with PMUACR_EL1: see [`apply`]).
    UnknownBits {
        /// The value asked for.
        requested: u64,
    },
    /// EN asked for through `user_access`: write access is granted only by the
    /// explicit `el0_programming=1`.
    WriteAccessNeedsOptIn,
}

impl UserAccess {
    /// Checks the module parameters: `bits` a subset of SW | CR | ER; EN only through
    /// `el0_programming`, which adds it.
    ///
    /// # Errors
    /// [`UserAccessError`] says which rule is broken.
    pub const fn new(bits: u64, el0_programming: bool) -> Result<Self, UserAccessError> {
        if bits & !USER_ACCESS_BITS != 0 {
            Err(UserAccessError::UnknownBits { requested: bits })
        } else if bits & EN != 0 {
            Err(UserAccessError::WriteAccessNeedsOptIn)
        } else if bits == 0 && !el0_programming {
            Err(UserAccessError::Empty)
        } else if el0_programming {
            Ok(Self(bits | EN))
        } else {
            Ok(Self(bits))
        }
    }

    /// The PMUSERENR_EL0 value.
    pub fn pmuserenr(self) -> PmuserenrEl0 {
        PmuserenrEl0::new(self.0)
    }

    /// The raw bits.
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// Whether EL0 may program the PMU (EN).
    pub const fn writes(self) -> bool {
        self.0 & EN != 0
    }
}

/// The events the module programs for EL0, in the order the user named them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ModuleEvents {
    events: [u16; MAX_MODULE_EVENTS],
    len: u8,
}

/// Why the `events` parameter was refused (`-EINVAL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventsError {
    /// More than [`MAX_MODULE_EVENTS`] events.
    TooMany,
    /// The item at `position` (0-based) is not a number (decimal, or hex with `0x`).
    NotANumber {
        /// Which item.
        position: u8,
    },
    /// The item at `position` is above 0xFFFF (`PMEVTYPER<n>_EL0`.evtCount is 16 bits).
    OutOfRange {
        /// Which item.
        position: u8,
    },
    /// The item at `position` names an event already in the list.
    Duplicate {
        /// Which item.
        position: u8,
    },
}

impl ModuleEvents {
    /// No events.
    pub const fn none() -> Self {
        Self {
            events: [0; MAX_MODULE_EVENTS],
            len: 0,
        }
    }

    /// Parses the `events` parameter: event numbers separated by commas, each decimal
    /// or hexadecimal with `0x` (`"0x8,0x3"`); empty for none. A trailing newline (as
    /// sysfs writes leave it) is ignored.
    ///
    /// # Errors
    /// [`EventsError`] with the position of the offending item.
    pub fn parse(text: &[u8]) -> Result<Self, EventsError> {
        let text = match text {
            [rest @ .., b'\n'] => rest,
            _ => text,
        };
        let mut out = Self::none();
        if text.is_empty() {
            return Ok(out);
        }
        for (position, item) in text.split(|&b| b == b',').enumerate() {
            let position = position.min(u8::MAX as usize) as u8;
            if usize::from(out.len) == MAX_MODULE_EVENTS {
                return Err(EventsError::TooMany);
            }
            let value = parse_number(item).ok_or(EventsError::NotANumber { position })?;
            let event = u16::try_from(value).map_err(|_| EventsError::OutOfRange { position })?;
            if out.as_slice().contains(&event) {
                return Err(EventsError::Duplicate { position });
            }
            out.push(event);
        }
        Ok(out)
    }

    /// The events of `events`, in order, as [`ModuleEvents::parse`] would make them.
    ///
    /// # Errors
    /// [`EventsError::TooMany`], [`EventsError::Duplicate`].
    pub fn from_slice(events: &[u16]) -> Result<Self, EventsError> {
        let mut out = Self::none();
        for (position, &event) in events.iter().enumerate() {
            if usize::from(out.len) == MAX_MODULE_EVENTS {
                return Err(EventsError::TooMany);
            }
            if out.as_slice().contains(&event) {
                return Err(EventsError::Duplicate {
                    position: position as u8,
                });
            }
            out.push(event);
        }
        Ok(out)
    }

    /// The events, in order.
    pub fn as_slice(&self) -> &[u16] {
        // `len` never exceeds the array (the constructors see to it); `get` keeps the
        // kernel module's object free of a panic path.
        self.events.get(..usize::from(self.len)).unwrap_or(&[])
    }

    /// Appends `event` (the constructors have checked there is room).
    fn push(&mut self, event: u16) {
        if let Some(slot) = self.events.get_mut(usize::from(self.len)) {
            *slot = event;
            self.len += 1;
        }
    }

    /// How many.
    pub const fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether there are none.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A decimal or `0x` hexadecimal number of at most 8 digits.
fn parse_number(item: &[u8]) -> Option<u32> {
    let (digits, radix) = match item {
        [b'0', b'x' | b'X', rest @ ..] => (rest, 16),
        _ => (item, 10),
    };
    if digits.is_empty() || digits.len() > 8 {
        return None;
    }
    let mut value: u32 = 0;
    for &d in digits {
        let digit = (d as char).to_digit(radix)?;
        value = value * radix + digit;
    }
    Some(value)
}

/// Where the module's events live: events\[i\] on event counter `event_counters - 1 -
/// i` (the top of the counter space, which the kernel glue takes out of perf's counter
/// mask), then CPU_CYCLES (0x11) when `cycle_counter`, then the sentinel.
///
/// The same on every CPU: `event_counters` is PMCR_EL0.N of the CPU the module was
/// loaded on, and a CPU with fewer counters gets no grant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    event_counters: u8,
    events: ModuleEvents,
    cycle_counter: bool,
    sentinel: Option<Sentinel>,
}

/// The layout does not fit this CPU's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooFewCounters {
    /// Event counters the layout needs (PMCR_EL0.N at least this).
    pub needed: u8,
    /// PMCR_EL0.N of this CPU.
    pub have: u8,
}

impl Layout {
    /// The layout for `events` on a PMU with `event_counters` (PMCR_EL0.N) event
    /// counters, with or without the cycle counter.
    ///
    /// # Errors
    /// [`TooFewCounters`] when the events do not fit.
    pub fn new(
        event_counters: u8,
        events: ModuleEvents,
        cycle_counter: bool,
    ) -> Result<Self, TooFewCounters> {
        let needed = events.len() + usize::from(cycle_counter);
        if needed > usize::from(event_counters) {
            return Err(TooFewCounters {
                needed: needed as u8,
                have: event_counters,
            });
        }
        Ok(Self {
            event_counters,
            events,
            cycle_counter,
            sentinel: None,
        })
    }

    /// The layout with the kernel-entry [`Sentinel`] on the event counter below the
    /// events and CPU_CYCLES.
    ///
    /// # Errors
    /// [`TooFewCounters`] when the events and the sentinel do not fit.
    pub fn with_sentinel(self, sentinel: Sentinel) -> Result<Self, TooFewCounters> {
        let needed = self.events.len() + usize::from(self.cycles_counter().is_some()) + 1;
        if needed > usize::from(self.event_counters) {
            return Err(TooFewCounters {
                needed: needed as u8,
                have: self.event_counters,
            });
        }
        Ok(Self {
            sentinel: Some(sentinel),
            ..self
        })
    }

    /// The sentinel, if the layout has one.
    pub const fn sentinel(&self) -> Option<Sentinel> {
        self.sentinel
    }

    /// The event counter of the sentinel, if the layout has one.
    pub const fn sentinel_counter(&self) -> Option<u8> {
        match self.sentinel {
            Some(_) => Some(
                self.event_counters
                    - 1
                    - self.events.len() as u8
                    - self.cycles_counter().is_some() as u8,
            ),
            None => None,
        }
    }

    /// The event counter that counts CPU_CYCLES, if the layout has one.
    pub const fn cycles_counter(&self) -> Option<u8> {
        if self.cycle_counter {
            Some(self.event_counters - 1 - self.events.len() as u8)
        } else {
            None
        }
    }

    /// Whether the layout programs no counter at all.
    pub const fn is_empty(&self) -> bool {
        self.events.is_empty() && !self.cycle_counter && self.sentinel.is_none()
    }

    /// The event counter number of events\[i\].
    pub const fn counter_of(&self, i: usize) -> u8 {
        self.event_counters - 1 - i as u8
    }

    /// `(counter, event)` for every event of the layout, then CPU_CYCLES (0x11) on its
    /// event counter, then the sentinel's.
    pub fn assignments(&self) -> impl Iterator<Item = (u8, u16)> + '_ {
        let events = self
            .events
            .as_slice()
            .iter()
            .enumerate()
            .map(|(i, &e)| (self.counter_of(i), e));
        let sentinel = self
            .sentinel_counter()
            .zip(self.sentinel.map(|s| s.event()));
        events
            .chain(self.cycles_counter().map(|c| (c, CPU_CYCLES)))
            .chain(sentinel)
    }

    /// What the module writes to the configuration register of `counter`
    /// (`PMEVTYPER<n>_EL0`, or PMCCFILTR_EL0 for the cycle counter) to count `event`:
    /// at EL0 only, or the sentinel's filter on the sentinel's counter.
    pub fn config_of(&self, counter: u8, event: u16) -> u64 {
        if let (Some(sentinel), Some(c)) = (self.sentinel, self.sentinel_counter()) {
            if c == counter {
                sentinel.config()
            } else {
                event_config(event)
            }
        } else {
            event_config(event)
        }
    }

    /// The PMCNTENSET_EL0 bits of the layout's counters.
    pub fn mask(&self) -> u64 {
        self.assignments().fold(0, |m, (c, _)| m | 1 << c)
    }

    /// PMCR_EL0.N the layout was made for.
    pub const fn event_counters(&self) -> u8 {
        self.event_counters
    }

    /// The events.
    pub const fn events(&self) -> &ModuleEvents {
        &self.events
    }

    /// Whether the cycle counter is part of it.
    pub const fn cycle_counter(&self) -> bool {
        self.cycle_counter
    }

    /// The layout as user space reads it from the module's `layout` parameter:
    /// `<counter>=0x<event>` pairs separated by spaces, the sentinel's marked `:k` (the
    /// kernel only, as perf's event modifier; `"5=0x8 4=0x11 3=0x8:k"`), or `none`. Written into `out` without a NUL; returns
    /// the length (at most [`LAYOUT_TEXT_MAX`]), shorter only when `out` is.
    pub fn write_text(&self, out: &mut [u8]) -> usize {
        let mut w = TextWriter { out, len: 0 };
        let mut first = true;
        for (counter, event) in self.assignments() {
            if !first {
                w.push(b' ');
            }
            first = false;
            w.decimal(u32::from(counter));
            w.push(b'=');
            w.push(b'0');
            w.push(b'x');
            w.hex(event);
            if Some(counter) == self.sentinel_counter() {
                w.push(b':');
                w.push(b'k');
            }
        }
        if first {
            for &b in b"none" {
                w.push(b);
            }
        }
        w.len
    }
}

/// The longest [`Layout::write_text`]: 8 entries (6 events, CPU_CYCLES, the sentinel)
/// of at most `30=0xffff:k` and their separators.
pub const LAYOUT_TEXT_MAX: usize = 8 * 12;

struct TextWriter<'a> {
    out: &'a mut [u8],
    len: usize,
}

impl TextWriter<'_> {
    fn push(&mut self, b: u8) {
        if let Some(slot) = self.out.get_mut(self.len) {
            *slot = b;
            self.len += 1;
        }
    }

    fn decimal(&mut self, value: u32) {
        if value >= 10 {
            self.decimal(value / 10);
        }
        self.push(b'0' + (value % 10) as u8);
    }

    fn hex(&mut self, value: u16) {
        let mut started = false;
        for shift in [12u16, 8, 4, 0] {
            let digit = ((value >> shift) & 0xf) as u8;
            if digit != 0 || started || shift == 0 {
                started = true;
                self.push(b"0123456789abcdef"[usize::from(digit)]);
            }
        }
    }
}

/// What to do on each CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// The PMUSERENR_EL0 bits to grant.
    pub user_access: UserAccess,
    /// The counters to program for EL0.
    pub layout: Layout,
}

/// The CPU has no architected PMUv3: [`apply`] touched nothing (`-ENODEV`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoPmuV3 {
    /// What ID_AA64DFR0_EL1.PMUVer says.
    pub version: PmuVersion,
}

/// Why [`apply`] gave no grant on this CPU. Nothing was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApplyError {
    /// No PMUv3 (`-ENODEV`).
    NoPmuV3(NoPmuV3),
    /// This CPU has fewer event counters than the layout (`-ENODEV`).
    TooFewCounters(TooFewCounters),
    /// A counter of the layout is in perf's `used_mask` on this CPU (`-EBUSY`).
    CounterInUse {
        /// The event counter.
        counter: u8,
        /// Its `PMEVTYPER<n>_EL0`, for the log.
        config: u64,
    },
    /// An event of the layout is a common event this CPU does not implement
    /// (PMCEID0/1_EL0): its counter would read 0 (`-EOPNOTSUPP`).
    EventNotImplemented {
        /// The event number.
        event: u16,
    },
}

/// What [`apply`] found and wrote on one CPU: what [`restore`] and the next [`apply`]
/// need, and what the log says. Raw register values, so that a kernel module can keep
/// them in a C struct.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// ID_AA64DFR0_EL1.PMUVer.
    pub pmuver: u8,
    /// PMUSERENR_EL0 before the first grant on this CPU.
    pub old_pmuserenr: u64,
    /// PMUSERENR_EL0 found by this apply (differs from `old_pmuserenr` on a re-grant).
    pub found_pmuserenr: u64,
    /// PMUSERENR_EL0 written.
    pub new_pmuserenr: u64,
    /// PMCNTENSET_EL0 bits of the counters the module programmed (and must release).
    pub owned: u64,
    /// PMCNTENSET_EL0 bits of the counters this apply (re)programmed from zero: the
    /// layout's counters that were not kept.
    pub zeroed: u64,
    /// PMCNTENSET_EL0 bits of the module's counters found still counting (re-grant):
    /// left running, not zeroed.
    pub kept: u64,
    /// Whether the module turned PMCR_EL0.E on (it was off).
    pub enabled_pmu: bool,
    /// PMUACR_EL1 written with a scoped grant (`new_pmuserenr` has [`UEN`]); 0 when not
    /// written.
    pub new_pmuacr: u64,
    /// PMUSERENR_EL0 as the grant that is not the module's left it: what the first
    /// apply found, or what perf wrote since (a re-grant that finds its own value
    /// carries it over). [`restore`] puts it back on a PMUv3p9 CPU.
    pub outside_pmuserenr: u64,
    /// PMUACR_EL1 with `outside_pmuserenr` (PMUv3p9; 0 before).
    pub outside_pmuacr: u64,
}

/// Writes a PMUv3p9 grant pair, PMUSERENR_EL0 = `pmuserenr` and PMUACR_EL1 = `pmuacr`, in
/// the order that never opens more than either grant: PMUACR_EL1 first where the new
/// PMUSERENR_EL0 reads it (UEN set), last where it does not.
fn write_scoped_pair<R: UserAccessRegisters>(regs: &R, pmuserenr: u64, pmuacr: u64) {
    if pmuserenr & UEN != 0 {
        regs.set_pmuacr(pmuacr);
        regs.set_pmuserenr(PmuserenrEl0::new(pmuserenr));
    } else {
        regs.set_pmuserenr(PmuserenrEl0::new(pmuserenr));
        regs.set_pmuacr(pmuacr);
    }
}

/// The PMUSERENR_EL0 and PMUACR_EL1 values of the grant on a PMUv3p9 CPU (without EN),
/// given the grant found there that is not the module's (`outside_*`):
/// - with UEN found (perf's grant to the task that runs now, Linux 6.13+
///   `armv8pmu_enable_user_access()`: PMUACR_EL1 = that task's counters): the union of
///   both. PMUACR_EL1 = perf's counters | the module's; PMUSERENR_EL0 = UEN | TID | ER |
///   CR | the requested SW. ER and CR under UEN make every opened counter read-only;
///   TID keeps `PMCEID<n>_EL0` closed as it is under ER alone, and is the mark EL0 reads
///   to know the module's counters are among the opened ones (perf never sets it).
/// - with no grant found, the same with PMUACR_EL1 = the module's counters only: every
///   other counter reads as zero at EL0.
/// - with ER or CR found without UEN (a kernel before 6.13 on this CPU: ER opens every
///   event counter to the task that runs now): that grant | the requested bits, no UEN
///   and PMUACR_EL1 untouched (`None`), as before PMUv3p9. Narrowing it with UEN would
///   turn that task's reads of perf's counters into zeroes.
///
/// The module's counters are the event counters of `counters` (the layout's, or the ones a
/// granted thread asked for) when ER is requested, and PMCCNTR_EL0 when CR is (bit
/// numbers as PMCNTENSET_EL0: `P<n>` = bit n, C = bit 31).
fn scoped_grant(
    access: UserAccess,
    counters: u64,
    outside_pmuserenr: u64,
    outside_pmuacr: u64,
) -> (u64, Option<u64>) {
    let bits = access.bits();
    if outside_pmuserenr & UEN == 0 && outside_pmuserenr & (ER | CR) != 0 {
        return (bits | (outside_pmuserenr & (ER | CR)), None);
    }
    let mut own = 0;
    if bits & ER != 0 {
        own |= counters & PMUACR_EVENT_COUNTERS;
    }
    if bits & CR != 0 {
        own |= PMUACR_CYCLE_COUNTER;
    }
    let kept = if outside_pmuserenr & UEN != 0 {
        outside_pmuacr & crate::registers::pmuacr_el1::PMUACR_EL1_DEFINED
    } else {
        0
    };
    (UEN | TID | ER | CR | (bits & SW), Some(kept | own))
}

/// The `PMEVTYPER<n>_EL0` value the module writes for `event`: counted at EL0 only.
pub const fn event_config(event: u16) -> u64 {
    FILTER_EL0_ONLY | event as u64
}

/// PMCCFILTR_EL0 for "count cycles at EL0 only": P = 1 (not at EL1), U = 0, NSK = 0,
/// NSU = 0, NSH = 0 (not at EL2).
pub fn pmccfiltr_el0_only() -> PmccfiltrEl0 {
    let mut value = PmccfiltrEl0::new(0);
    value.write(PMCCFILTR_EL0::P::SET);
    value
}

/// The counter accesses the ownership rule needs on one CPU, in counter numbers and
/// PMCNTENSET bits (bit n: event counter n), whatever the architecture's register
/// names: `PMEVTYPER<n>_EL0` on AArch64, PMSELR-selected PMXEVTYPER on AArch32 (pmu-armv7
/// implements it over its registers). [`take_layout_counters`] and
/// [`release_layout_counters`] are the rule, written once for every flavour.
pub trait LayoutCounters {
    /// PMCNTENSET: the enabled counters.
    fn enabled(&self) -> u64;
    /// The configuration register (event type and filter) of event counter `counter`.
    fn config(&self, counter: u8) -> u64;
    /// Writes the configuration register of event counter `counter` (no barrier).
    fn set_config(&self, counter: u8, config: u64);
    /// Writes 0 to event counter `counter` (no barrier).
    fn zero(&self, counter: u8);
    /// PMCNTENCLR: disables the counters of `mask`, then synchronizes.
    fn disable(&self, mask: u64);
    /// Clears the overflow flags and overflow interrupt enables of `mask` (PMOVSCLR,
    /// PMINTENCLR; no barrier).
    fn clear_overflow_and_interrupt(&self, mask: u64);
    /// A context synchronization event (`isb`).
    fn isb(&self);
    /// PMCNTENSET: enables the counters of `mask`, then synchronizes.
    fn enable(&self, mask: u64);
}

/// The first counter of `layout` that perf holds, `perf_used` being perf's `used_mask`
/// of this CPU as PMCNTENSET bits: the grant on this CPU is refused (`-EBUSY`) and
/// nothing is written.
pub fn perf_holds(layout: &Layout, perf_used: u64) -> Option<u8> {
    layout
        .assignments()
        .map(|(counter, _)| counter)
        .find(|&counter| perf_used & (1u64 << counter) != 0)
}

/// What [`take_layout_counters`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Taken {
    /// The module's counters found still counting what it programmed: left running.
    pub kept: u64,
    /// The layout's other counters, (re)programmed from zero and enabled.
    pub started: u64,
}

/// Programs the layout's counters on this CPU, once [`perf_holds`] found none of them
/// perf's. `owned_before` is what the last grant on this CPU owned (0 the first time).
///
/// Kept: a counter is the module's only when the module programmed it before
/// (`owned_before`), it is still enabled, and its configuration is still the module's.
/// An equal configuration alone proves nothing (perf's `cycles:u` has the same filter
/// as the module's CPU_CYCLES). Every other layout counter is disabled if enabled, its
/// overflow flag and interrupt enable cleared, programmed and zeroed; then an `isb`
/// (the new filters take effect before the counters run, as Linux's
/// `armv8pmu_enable_counter()` and `armv7_pmnc_enable_counter()` callers order it), then
/// one PMCNTENSET write. No counter outside the layout is touched: idle counters are
/// perf's to zero (a throttled perf event is idle and still perf's).
pub fn take_layout_counters<C: LayoutCounters>(
    counters: &C,
    layout: &Layout,
    owned_before: u64,
) -> Taken {
    let enabled = counters.enabled();
    let mut kept = 0;
    for (counter, event) in layout.assignments() {
        let bit = 1u64 << counter;
        if owned_before & enabled & bit != 0
            && counters.config(counter) == layout.config_of(counter, event)
        {
            kept |= bit;
        }
    }
    let started = layout.mask() & !kept;
    if started & enabled != 0 {
        // A layout counter left enabled by someone who is not perf (perf's are
        // refused by `perf_holds`): stop it before it is reprogrammed.
        counters.disable(started & enabled);
    }
    if started != 0 {
        counters.clear_overflow_and_interrupt(started);
    }
    for (counter, event) in layout.assignments() {
        if started & (1 << counter) == 0 {
            continue;
        }
        counters.set_config(counter, layout.config_of(counter, event));
        counters.zero(counter);
    }
    if started != 0 {
        // The filters and zeroes above take effect before the enable below: without
        // it the Arm ARM allows the counter to start with the old filter for a few
        // instructions.
        counters.isb();
        counters.enable(started);
    }
    Taken { kept, started }
}

/// What [`release_layout_counters`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Released {
    /// The module's counters disabled, their overflow flag and interrupt enable
    /// cleared, and zeroed.
    pub released: u64,
    /// The module's counters in perf's `used_mask` now: left exactly as they are.
    pub taken: u64,
}

/// Releases the module's counters on this CPU: each of `owned` in the layout that perf
/// does not hold (`perf_used`) is disabled, its overflow flag and interrupt enable
/// cleared, and zeroed; one perf holds is not touched. Nothing else is written: the
/// PMU enable (PMCR.E) is perf's, and perf's stop clears it when its last event leaves.
pub fn release_layout_counters<C: LayoutCounters>(
    counters: &C,
    layout: &Layout,
    owned: u64,
    perf_used: u64,
) -> Released {
    let released = owned & layout.mask() & !perf_used;
    let taken = owned & perf_used;
    if released != 0 {
        counters.disable(released);
        counters.clear_overflow_and_interrupt(released);
        for (counter, _) in layout.assignments() {
            if released & (1 << counter) != 0 {
                counters.zero(counter);
            }
        }
    }
    Released { released, taken }
}

/// Quiets counters that perf gave up and no grant runs on this CPU (`reserved`: the
/// event counters taken out of perf's counter mask, none perf holds now): their overflow
/// interrupt enables and overflow flags cleared and, with `disable`, the counters
/// disabled; then an `isb`, so that the clears take effect before whatever the caller
/// does next with the PMU. perf's reset skips them (Linux 6.12 drivers/perf/arm_pmuv3.c
/// `armv8pmu_reset` and arm_v7_pmu.c `armv7pmu_reset` walk `cntr_mask` only), and
/// PMINTENSET/PMCNTENSET are UNKNOWN after a power-up: an overflow interrupt of such a
/// counter would reach perf's handler, which does not look at it. Nothing else is
/// written; `reserved` 0 writes nothing.
pub fn quiet_reserved_counters<C: LayoutCounters>(counters: &C, reserved: u64, disable: bool) {
    if reserved == 0 {
        return;
    }
    if disable {
        counters.disable(reserved);
    }
    counters.clear_overflow_and_interrupt(reserved);
    counters.isb();
}

/// [`LayoutCounters`] over the AArch64 registers.
struct El0Counters<'a, R>(&'a R);

impl<R: UserAccessRegisters> LayoutCounters for El0Counters<'_, R> {
    fn enabled(&self) -> u64 {
        self.0.pmcntenset().get()
    }
    fn config(&self, counter: u8) -> u64 {
        self.0.pmevtyper(counter)
    }
    fn set_config(&self, counter: u8, config: u64) {
        self.0.set_pmevtyper(counter, config);
    }
    fn zero(&self, counter: u8) {
        self.0.set_pmevcntr(counter, 0);
    }
    fn disable(&self, mask: u64) {
        self.0.set_pmcntenclr(PmcntenclrEl0::new(mask));
    }
    fn clear_overflow_and_interrupt(&self, mask: u64) {
        self.0.clear_overflow_and_interrupt(mask);
    }
    fn isb(&self) {
        self.0.isb();
    }
    fn enable(&self, mask: u64) {
        self.0.set_pmcntenset(PmcntensetEl0::new(mask));
    }
}

/// The configuration register of event counter `counter` as it reads now.
fn config_of<R: UserAccessRegisters>(regs: &R, counter: u8) -> u64 {
    regs.pmevtyper(counter)
}

/// Grants EL0 the access `request` names on this CPU, programming the layout's
/// counters. `previous` is what the last apply on this CPU returned, for a re-grant
/// (after CPU PM, perf, or on request); `None` the first time. `perf_used` is perf's
/// `used_mask` of this CPU as PMCNTENSET_EL0 bits (read by the kernel glue on this
/// CPU with interrupts off): the counters perf holds.
///
/// Steps, with interrupts off on the CPU:
/// 1. PMUVer must name a PMUv3, PMCR_EL0.N must hold the layout, and every common
///    event of the layout must be implemented; else nothing is written;
/// 2. no layout counter may be in `perf_used`; else [`ApplyError::CounterInUse`],
///    nothing written;
/// 3. the module's counters that still count what it programmed (`previous.owned`,
///    enabled, same configuration) are left running; the layout's other counters are
///    disabled, their overflow flag and interrupt enable cleared, zeroed, and
///    programmed (EL0 only; the sentinel at the kernel's level);
/// 4. an `isb` (the new filters take effect before the counters run, as Linux's
///    `armv8pmu_enable_counter()` does), then one PMCNTENSET_EL0 write enables them,
///    and PMCR_EL0.E is set if it was clear. Both writes synchronize, so the counters
///    run before step 5. No counter outside the layout is written;
/// 5. PMUSERENR_EL0 = the requested bits, then an `isb`. On a PMUv3p9 CPU without EN,
///    PMUACR_EL1 first, then PMUSERENR_EL0 = UEN | TID | ER | CR (| SW), then the `isb`
///    (see the module docs, "On PMUv3p9").
///
/// # Errors
/// [`ApplyError`]: which check failed; then no register was written.
pub fn apply<R: UserAccessRegisters>(
    regs: &R,
    request: Request,
    previous: Option<&Applied>,
    perf_used: u64,
) -> Result<Applied, ApplyError> {
    let version = PmuVersion::from_id_aa64dfr0(regs.id_aa64dfr0());
    if !version.is_pmuv3() {
        return Err(ApplyError::NoPmuV3(NoPmuV3 { version }));
    }
    let layout = request.layout;
    let pmcr = regs.pmcr();
    let have = pmcr.read(PMCR_EL0::N) as u8;
    if have < layout.event_counters() {
        return Err(ApplyError::TooFewCounters(TooFewCounters {
            needed: layout.event_counters(),
            have,
        }));
    }
    if !layout.is_empty() {
        let implemented = regs.implemented_events();
        for (_, event) in layout.assignments() {
            if implemented.contains(EventNumber::new(event)) == Some(false) {
                return Err(ApplyError::EventNotImplemented { event });
            }
        }
    }
    if let Some(counter) = perf_holds(&layout, perf_used) {
        return Err(ApplyError::CounterInUse {
            counter,
            config: config_of(regs, counter),
        });
    }
    let found_pmuserenr = regs.pmuserenr();
    // PMUv3p9 without EN: the grant is scoped with UEN and PMUACR_EL1 (EN opens every
    // counter whatever PMUACR_EL1 says, so it stays as before).
    let scoped = version.is_at_least(PmuVersion::PmuV3p9) && !request.user_access.writes();
    let found_pmuacr = if scoped { regs.pmuacr() } else { 0 };
    let still_ours = previous.filter(|p| {
        p.new_pmuserenr == found_pmuserenr.get()
            && (p.new_pmuserenr & UEN == 0 || p.new_pmuacr == found_pmuacr)
    });
    let (outside_pmuserenr, outside_pmuacr) = match still_ours {
        Some(p) => (p.outside_pmuserenr, p.outside_pmuacr),
        None => (found_pmuserenr.get(), found_pmuacr),
    };
    let taken = take_layout_counters(&El0Counters(regs), &layout, previous.map_or(0, |p| p.owned));
    let (kept, start) = (taken.kept, taken.started);
    let mut new_pmcr = pmcr;
    if layout.mask() != 0 {
        new_pmcr.modify(PMCR_EL0::E::SET);
    }
    // P and C stay 0: they would reset perf's counters too.
    new_pmcr.modify(PMCR_EL0::P::CLEAR + PMCR_EL0::C::CLEAR);
    let enabled_pmu = !pmcr.is_set(PMCR_EL0::E) && new_pmcr.is_set(PMCR_EL0::E);
    if new_pmcr.get() != pmcr.get() {
        // Synchronizes (see the trait): the counters run before EL0 gets access.
        regs.set_pmcr(new_pmcr);
    }
    let (new_pmuserenr, new_pmuacr) = if scoped {
        scoped_grant(
            request.user_access,
            layout.mask(),
            outside_pmuserenr,
            outside_pmuacr,
        )
    } else {
        (request.user_access.bits(), None)
    };
    if let Some(pmuacr) = new_pmuacr {
        // Before UEN: PMUACR_EL1 names the counters the new PMUSERENR_EL0 opens.
        regs.set_pmuacr(pmuacr);
    }
    let new_pmuserenr = PmuserenrEl0::new(new_pmuserenr);
    regs.set_pmuserenr(new_pmuserenr);
    // An exception return to EL0 would synchronize the new PMUSERENR_EL0 anyway; the
    // barrier makes the grant complete before the callback reports it, however the
    // kernel gets back to EL0.
    regs.isb();
    Ok(Applied {
        pmuver: version.pmuver(),
        old_pmuserenr: previous.map_or(found_pmuserenr.get(), |p| p.old_pmuserenr),
        found_pmuserenr: found_pmuserenr.get(),
        new_pmuserenr: new_pmuserenr.get(),
        owned: layout.mask(),
        zeroed: start,
        kept,
        enabled_pmu: enabled_pmu || previous.is_some_and(|p| p.enabled_pmu),
        new_pmuacr: new_pmuacr.unwrap_or(0),
        outside_pmuserenr,
        outside_pmuacr,
    })
}

/// What [`restore`] found and did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Restored {
    /// PMUSERENR_EL0 just before the restore. Differs from [`Applied::new_pmuserenr`]
    /// when perf's `armv8pmu_start()` rewrote it meanwhile.
    pub found_pmuserenr: u64,
    /// PMUSERENR_EL0 written, or `found_pmuserenr` when left alone.
    pub new_pmuserenr: u64,
    /// The module's counters disabled and zeroed (PMCNTENSET_EL0 bits).
    pub released: u64,
    /// The module's counters in perf's `used_mask` now: left exactly as they are.
    pub taken: u64,
}

/// Takes back what [`apply`] did on this CPU. `perf_used` as for [`apply`].
///
/// PMUSERENR_EL0 first: when it still holds the module's grant it becomes 0, what
/// `armv8pmu_disable_user_access()` writes (a task with user-readable perf events gets
/// ER | CR back from `armv8pmu_start()` at its next sched-in); when perf rewrote it
/// meanwhile, perf's value stays. On a PMUv3p9 CPU the grant is scoped (UEN): when both
/// PMUSERENR_EL0 and PMUACR_EL1 still hold the module's values, they get back exactly
/// the grant found beside the module's ([`Applied::outside_pmuserenr`]: perf's for the
/// task that still runs, or none); when perf rewrote them, perf's values stay (PMUACR_EL1
/// left with the module's counters under a PMUSERENR_EL0 without UEN opens nothing, and
/// goes back to what the module found). Then each of the module's counters that perf does not
/// hold is disabled, its overflow flag and interrupt enable cleared, and zeroed; one in
/// `perf_used` is perf's and is not touched. PMCR_EL0.E is left alone: while perf has
/// events on this CPU it is perf's, and perf clears it itself when its last event
/// leaves (`armv8pmu_stop()`).
pub fn restore<R: UserAccessRegisters>(
    regs: &R,
    applied: &Applied,
    layout: &Layout,
    perf_used: u64,
) -> Restored {
    let found = regs.pmuserenr();
    let scoped = applied.new_pmuserenr & UEN != 0;
    let found_pmuacr = if scoped { regs.pmuacr() } else { 0 };
    let ours =
        found.get() == applied.new_pmuserenr && (!scoped || found_pmuacr == applied.new_pmuacr);
    let new_pmuserenr = if ours && scoped {
        // The grant the module found beside its own, exactly (perf's for the task that
        // runs now, or none): perf has not rewritten either register since, so that
        // grant still stands. PMUACR_EL1 first where it is read under UEN, last where
        // it is not.
        let outside = applied.outside_pmuserenr;
        write_scoped_pair(regs, outside, applied.outside_pmuacr);
        // As below: the module's counters are closed before they are released.
        regs.isb();
        outside
    } else if ours {
        regs.set_pmuserenr(PmuserenrEl0::new(0));
        // Revoke before anything else changes: no EL0 instruction may run with access
        // to counters that are being released.
        regs.isb();
        0
    } else {
        if scoped && found.get() & UEN == 0 && found_pmuacr == applied.new_pmuacr {
            // perf revoked (`armv8pmu_disable_user_access()` writes PMUSERENR_EL0
            // only): PMUACR_EL1 still names the module's counters. Without UEN it opens
            // nothing; it goes back to what the module found all the same.
            regs.set_pmuacr(applied.outside_pmuacr);
        }
        found.get()
    };

    let Released { released, taken } =
        release_layout_counters(&El0Counters(regs), layout, applied.owned, perf_used);
    Restored {
        found_pmuserenr: found.get(),
        new_pmuserenr,
        released,
        taken,
    }
}

/// The PMUSERENR_EL0 bits EN, SW, CR, ER of `value` by name, `|`-separated, or "none":
/// the form both module flavours log (`0xc (CR|ER)`). Other bits are not named.
pub fn access_names(value: u64) -> &'static CStr {
    const NAMES: [&CStr; 16] = [
        c"none",
        c"EN",
        c"SW",
        c"EN|SW",
        c"CR",
        c"EN|CR",
        c"SW|CR",
        c"EN|SW|CR",
        c"ER",
        c"EN|ER",
        c"SW|ER",
        c"EN|SW|ER",
        c"CR|ER",
        c"EN|CR|ER",
        c"SW|CR|ER",
        c"EN|SW|CR|ER",
    ];
    // The index is 4 bits wide: always within the table.
    NAMES[(value & USER_ACCESS_BITS) as usize]
}

/// What EL0 may do with `value`, in words, for the log: "read-only", "read and
/// program (EN)", "software increment only", "nothing".
pub fn grant_words(value: u64) -> &'static CStr {
    let value = PmuserenrEl0::new(value);
    if value.is_set(PMUSERENR_EL0::EN) {
        c"read and program (EN)"
    } else if value.is_set(PMUSERENR_EL0::ER) || value.is_set(PMUSERENR_EL0::CR) {
        c"read-only"
    } else if value.is_set(PMUSERENR_EL0::SW) {
        c"software increment only"
    } else {
        c"nothing"
    }
}

pub mod thread;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod pmuv3p9_tests;
