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
//! perf owns the counters it enabled. [`apply`] never resets a counter that is enabled
//! (no PMCR_EL0.P/C: those would reset perf's counters too); it zeroes only the event
//! counters and the cycle counter whose PMCNTENSET_EL0 bit is clear, as
//! `armv8pmu_enable_user_access()` does with the counters perf is not using, so no
//! earlier count leaks to EL0. A counter the layout needs that perf is using
//! ([`ApplyError::CounterInUse`]) stops the grant on that CPU: user space would
//! otherwise read perf's counter as its own. [`restore`] disables only the counters
//! that still count what the module programmed, and writes PMUSERENR_EL0 as Linux
//! holds it (see [`restore`]).
//!
//! # Again after idle, perf or hotplug
//!
//! A CPU power-down resets PMUSERENR_EL0 (`cpu_do_resume`, arch/arm64/mm/proc.S), arm_pmu's
//! CPU_PM_EXIT handler resets the PMU (`cpu_pm_pmu_notify` → `armv8pmu_reset`: every
//! counter disabled, PMCR_EL0 = P | C | LC (| LP)), and perf's `armv8pmu_start()`
//! writes PMUSERENR_EL0 = 0 whenever it starts the PMU for a task without user-readable
//! events. [`apply`] with the previous [`Applied`] puts the grant back: counters that
//! still count what the module programmed are left running, the others programmed
//! again from zero.
//!
//! Sources: Arm ARM (DDI 0487), "PMUSERENR_EL0", "PMCR_EL0", "PMCNTENSET_EL0",
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

/// What both module flavours grant by default: ER | CR (12), read-only.
pub const DEFAULT_USER_ACCESS: u64 = 0b1100;

/// At most this many events the module programs for EL0.
pub const MAX_MODULE_EVENTS: usize = 6;

/// The cycle counter's number in a [`Layout`] and its bit in PMCNTENSET_EL0 (Linux
/// numbers it the same way: `ARMV8_PMU_CYCLE_IDX`, include/linux/perf/arm_pmuv3.h).
pub const CYCLE_COUNTER: u8 = 31;

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
    /// Writes `PMEVCNTR<n>_EL0` (no barrier), `n` below PMCR_EL0.N.
    fn set_pmevcntr(&self, n: u8, value: u64);
    /// Writes PMCCNTR_EL0 (no barrier).
    fn set_pmccntr(&self, value: u64);
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
    /// A bit outside EN=1 | SW=2 | CR=4 | ER=8 (bits 4..6 need FEAT_PMUv3p9 and a
    /// PMUACR_EL1 set-up this module does not do).
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
/// i` (the top of the counter space: perf allocates from counter 0 upwards,
/// `armv8pmu_get_single_idx`, so it reaches these last), and the cycle counter.
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
        if events.len() > usize::from(event_counters) {
            return Err(TooFewCounters {
                needed: events.len() as u8,
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
    /// events (`event_counters - 1 - events.len()`).
    ///
    /// # Errors
    /// [`TooFewCounters`] when the events and the sentinel do not fit.
    pub fn with_sentinel(self, sentinel: Sentinel) -> Result<Self, TooFewCounters> {
        let needed = self.events.len() + 1;
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
            Some(_) => Some(self.event_counters - 1 - self.events.len() as u8),
            None => None,
        }
    }

    /// The event counter number of events\[i\].
    pub const fn counter_of(&self, i: usize) -> u8 {
        self.event_counters - 1 - i as u8
    }

    /// `(counter, event)` for every event of the layout, then the sentinel's, the cycle
    /// counter last as `(CYCLE_COUNTER, 0x11)` (CPU_CYCLES).
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
            .chain(sentinel)
            .chain(self.cycle_counter.then_some((CYCLE_COUNTER, 0x11)))
    }

    /// What the module writes to the configuration register of `counter`
    /// (`PMEVTYPER<n>_EL0`, or PMCCFILTR_EL0 for the cycle counter) to count `event`:
    /// at EL0 only, or the sentinel's filter on the sentinel's counter.
    pub fn config_of(&self, counter: u8, event: u16) -> u64 {
        if counter == CYCLE_COUNTER {
            pmccfiltr_el0_only().get()
        } else if let (Some(sentinel), Some(c)) = (self.sentinel, self.sentinel_counter()) {
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
    /// kernel only, as perf's event modifier), the cycle counter as `31=0x11`
    /// (`"5=0x8 4=0x8:k 31=0x11"`), or `none`. Written into `out` without a NUL; returns
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

/// The longest [`Layout::write_text`]: 8 entries (6 events, the sentinel, the cycle
/// counter) of at most `30=0xffff:k` and their separators.
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
    /// A counter of the layout is enabled and counts something the module did not
    /// program: perf uses it (`-EBUSY`).
    CounterInUse {
        /// The counter ([`CYCLE_COUNTER`] for the cycle counter).
        counter: u8,
        /// Its `PMEVTYPER<n>_EL0` (PMCCFILTR_EL0 for the cycle counter).
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
    /// PMCNTENSET_EL0 bits of the counters this apply zeroed: every counter that was
    /// not enabled.
    pub zeroed: u64,
    /// PMCNTENSET_EL0 bits of the module's counters found still counting (re-grant):
    /// left running, not zeroed.
    pub kept: u64,
    /// Whether the module turned PMCR_EL0.E on (it was off).
    pub enabled_pmu: bool,
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

/// The configuration register of `counter` as it reads now.
fn config_of<R: UserAccessRegisters>(regs: &R, counter: u8) -> u64 {
    if counter == CYCLE_COUNTER {
        regs.pmccfiltr().get()
    } else {
        regs.pmevtyper(counter)
    }
}

/// Grants EL0 the access `request` names on this CPU, programming the layout's
/// counters. `previous` is what the last apply on this CPU returned, for a re-grant
/// (after CPU PM, perf, or on request); `None` the first time.
///
/// Steps, with interrupts off on the CPU:
/// 1. PMUVer must name a PMUv3, PMCR_EL0.N must hold the layout, and every common
///    event of the layout must be implemented; else nothing is written;
/// 2. each layout counter whose PMCNTENSET_EL0 bit is set must count exactly what the
///    module programs (then it is ours from `previous`, or an identical perf event,
///    and is left running); else [`ApplyError::CounterInUse`], nothing written;
/// 3. every counter whose PMCNTENSET_EL0 bit is clear is zeroed (no count of an earlier
///    context leaks to EL0) — the layout's among them;
/// 4. the layout's idle counters get their filter and event (EL0 only), then one
///    PMCNTENSET_EL0 write enables them, and PMCR_EL0.E (with LC, a 64-bit cycle
///    counter, when the cycle counter is the module's) is set if it was clear. Both
///    writes synchronize, so the counters run before step 5;
/// 5. PMUSERENR_EL0 = the requested bits, then an `isb`.
///
/// # Errors
/// [`ApplyError`]: which check failed; then no register was written.
pub fn apply<R: UserAccessRegisters>(
    regs: &R,
    request: Request,
    previous: Option<&Applied>,
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
    if !layout.events().is_empty() || layout.sentinel().is_some() {
        let implemented = regs.implemented_events();
        let sentinel = layout.sentinel().map(|s| s.event());
        for &event in layout.events().as_slice().iter().chain(sentinel.as_ref()) {
            if implemented.contains(EventNumber::new(event)) == Some(false) {
                return Err(ApplyError::EventNotImplemented { event });
            }
        }
    }
    let found_pmuserenr = regs.pmuserenr();
    let enabled = regs.pmcntenset().get();
    let mut kept = 0;
    for (counter, event) in layout.assignments() {
        let bit = 1u64 << counter;
        if enabled & bit == 0 {
            continue;
        }
        let config = config_of(regs, counter);
        if config != layout.config_of(counter, event) {
            return Err(ApplyError::CounterInUse { counter, config });
        }
        kept |= bit;
    }

    // Zero every idle counter: the next owner, EL0 included, starts from 0.
    let mut zeroed = 0;
    for n in 0..have {
        if enabled & (1 << n) == 0 {
            regs.set_pmevcntr(n, 0);
            zeroed |= 1 << n;
        }
    }
    let cycle_bit = 1u64 << CYCLE_COUNTER;
    if enabled & cycle_bit == 0 {
        regs.set_pmccntr(0);
        zeroed |= cycle_bit;
    }

    let start = layout.mask() & !kept;
    for (counter, event) in layout.assignments() {
        if start & (1 << counter) == 0 {
            continue;
        }
        if counter == CYCLE_COUNTER {
            regs.set_pmccfiltr(pmccfiltr_el0_only());
        } else {
            regs.set_pmevtyper(counter, layout.config_of(counter, event));
        }
    }
    if start != 0 {
        regs.set_pmcntenset(PmcntensetEl0::new(start));
    }
    let mut new_pmcr = pmcr;
    if layout.mask() != 0 {
        new_pmcr.modify(PMCR_EL0::E::SET);
    }
    if layout.cycle_counter() {
        new_pmcr.modify(PMCR_EL0::LC::SET);
    }
    // P and C stay 0: they would reset perf's counters too.
    new_pmcr.modify(PMCR_EL0::P::CLEAR + PMCR_EL0::C::CLEAR);
    let enabled_pmu = !pmcr.is_set(PMCR_EL0::E) && new_pmcr.is_set(PMCR_EL0::E);
    if new_pmcr.get() != pmcr.get() {
        // Synchronizes (see the trait): the counters run before EL0 gets access.
        regs.set_pmcr(new_pmcr);
    }
    let new_pmuserenr = request.user_access.pmuserenr();
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
        zeroed,
        kept,
        enabled_pmu: enabled_pmu || previous.is_some_and(|p| p.enabled_pmu),
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
    /// The module's counters that count something else now (perf took them): left as
    /// they are.
    pub taken: u64,
}

/// Takes back what [`apply`] did on this CPU.
///
/// PMUSERENR_EL0 first: when it still holds the module's grant, it becomes what Linux
/// holds there: ER | CR if that is what the first apply found (perf's grant to a task
/// that owns user-readable events, `armv8pmu_enable_user_access()`), else 0
/// (`armv8pmu_disable_user_access()`); when perf rewrote it meanwhile, perf's value
/// stays. Then each of the module's counters that still counts exactly what the
/// module programmed is disabled and zeroed; one that counts something else is perf's
/// now and stays. PMCR_EL0.E goes back off only when the module turned it on and no
/// counter is enabled any more.
pub fn restore<R: UserAccessRegisters>(regs: &R, applied: &Applied, layout: &Layout) -> Restored {
    let found = regs.pmuserenr();
    let new_pmuserenr = if found.get() == applied.new_pmuserenr {
        let linux_read = crate::registers::pmuserenr_el0::linux_user_read().get();
        let value = if applied.old_pmuserenr == linux_read {
            linux_read
        } else {
            0
        };
        regs.set_pmuserenr(PmuserenrEl0::new(value));
        // Revoke before anything else changes: no EL0 instruction may run with access
        // to counters that are being released.
        regs.isb();
        value
    } else {
        found.get()
    };

    let enabled = regs.pmcntenset().get();
    let mut released = 0;
    let mut taken = 0;
    for (counter, event) in layout.assignments() {
        let bit = 1u64 << counter;
        if applied.owned & bit == 0 || enabled & bit == 0 {
            continue;
        }
        if config_of(regs, counter) == layout.config_of(counter, event) {
            released |= bit;
        } else {
            taken |= bit;
        }
    }
    if released != 0 {
        regs.set_pmcntenclr(PmcntenclrEl0::new(released));
        for (counter, _) in layout.assignments() {
            if released & (1 << counter) == 0 {
                continue;
            }
            if counter == CYCLE_COUNTER {
                regs.set_pmccntr(0);
            } else {
                regs.set_pmevcntr(counter, 0);
            }
        }
    }
    if applied.enabled_pmu && enabled & !released == 0 {
        let mut pmcr = regs.pmcr();
        if pmcr.is_set(PMCR_EL0::E) {
            pmcr.modify(PMCR_EL0::E::CLEAR + PMCR_EL0::P::CLEAR + PMCR_EL0::C::CLEAR);
            regs.set_pmcr(pmcr);
        }
    }
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

#[cfg(test)]
mod tests;
