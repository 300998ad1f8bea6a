//! The [`Pmu`] trait for backends that program counters directly, and counters as
//! handles.
//!
//! A backend (ARMv8 at EL1 or EL0, ARM1176, x86 ring 0, the [`fake`](crate::fake) PMU)
//! implements [`Pmu`]: capabilities, event checks and per-slot operations. Its
//! constructor is where the safety obligations are discharged (right privilege level,
//! exclusive ownership of the PMU, pinned to one CPU), so the trait's methods are safe.
//!
//! Users do not call the slot operations directly: a [`CounterPool`] allocates slots
//! after checking the event against the capabilities, and hands out [`Counter`]s that
//! disable and free their slot when dropped.

use core::cell::Cell;
use core::fmt;

use crate::event::{Event, EventEncoding, GenericEvent};
use crate::width::CounterWidth;
use crate::Error;

/// A hardware counter slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Slot {
    /// Programmable counter `n` (`PMEVCNTR<n>_EL0`, ARM1176 CR0/CR1, IA32_PMCn).
    Programmable(u8),
    /// Fixed-function counter `n` (PMCCNTR_EL0, ARM1176 CCR, IA32_FIXED_CTRn).
    Fixed(u8),
}

impl fmt::Display for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Programmable(n) => write!(f, "programmable #{n}"),
            Self::Fixed(n) => write!(f, "fixed #{n}"),
        }
    }
}

/// Which privilege levels an event counts in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PrivilegeFilter {
    /// Count in user mode (EL0, ring 3, ARM User mode).
    pub user: bool,
    /// Count in the kernel (EL1, ring 0, ARM privileged modes).
    pub kernel: bool,
    /// Count in the hypervisor (EL2); ignored where there is none.
    pub hypervisor: bool,
}

impl PrivilegeFilter {
    /// Count everywhere.
    pub const ALL: Self = Self {
        user: true,
        kernel: true,
        hypervisor: true,
    };
    /// Count in user mode only.
    pub const USER: Self = Self {
        user: true,
        kernel: false,
        hypervisor: false,
    };
    /// Count in the kernel only.
    pub const KERNEL: Self = Self {
        user: false,
        kernel: true,
        hypervisor: false,
    };
}

impl fmt::Display for PrivilegeFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = [
            (self.user, "user"),
            (self.kernel, "kernel"),
            (self.hypervisor, "hypervisor"),
        ];
        let mut first = true;
        for (on, name) in names {
            if on {
                if !first {
                    f.write_str("+")?;
                }
                f.write_str(name)?;
                first = false;
            }
        }
        if first {
            f.write_str("no level")?;
        }
        Ok(())
    }
}

/// What a PMU offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// Number of programmable counters.
    pub programmable: u32,
    /// Width of the programmable counters, as the driver uses them.
    pub programmable_width: CounterWidth,
    /// Number of fixed-function counters.
    pub fixed: u32,
    /// Width of the fixed-function counters.
    pub fixed_width: CounterWidth,
}

impl Capabilities {
    /// The width of `slot`'s counter.
    pub const fn width(&self, slot: Slot) -> CounterWidth {
        match slot {
            Slot::Programmable(_) => self.programmable_width,
            Slot::Fixed(_) => self.fixed_width,
        }
    }

    /// Checks that `slot` exists.
    ///
    /// # Errors
    /// [`Error::CounterOutOfRange`].
    pub const fn check(&self, slot: Slot) -> Result<(), Error> {
        let (index, available) = match slot {
            Slot::Programmable(n) => (n as u32, self.programmable),
            Slot::Fixed(n) => (n as u32, self.fixed),
        };
        if index < available {
            Ok(())
        } else {
            Err(Error::CounterOutOfRange { slot, available })
        }
    }
}

/// A PMU that software programs directly.
///
/// Implementations must have made sure, when constructed, that they run with the
/// privilege the registers need and own the PMU (no other agent reprograms it). Slot
/// arguments are always checked against [`Pmu::capabilities`] by [`CounterPool`] before
/// they reach these methods.
pub trait Pmu {
    /// The backend's event encoding.
    type Event: EventEncoding + fmt::Debug;

    /// Number and widths of the counters.
    fn capabilities(&self) -> Capabilities;

    /// Whether the hardware implements `event` (PMCEID on ARMv8, CPUID on x86).
    /// Backends without such a register return `true` for every encodable event.
    fn is_implemented(&self, event: Self::Event) -> bool;

    /// The generic event fixed counter `index` counts, `None` when it does not exist.
    fn fixed_event(&self, index: u8) -> Option<GenericEvent>;

    /// Programs `slot` to count `event` in the levels of `filter`, left disabled.
    ///
    /// # Errors
    /// [`Error::FilterUnsupported`] when the hardware cannot filter so;
    /// [`Error::EventNotCountableOnSlot`] for a fixed slot and a foreign event.
    fn configure(
        &self,
        slot: Slot,
        event: Self::Event,
        filter: PrivilegeFilter,
    ) -> Result<(), Error>;

    /// Starts `slot` counting.
    fn enable(&self, slot: Slot);

    /// Stops `slot` counting; its value is kept.
    fn disable(&self, slot: Slot);

    /// The raw value of `slot` (only the low `width` bits are meaningful).
    fn read(&self, slot: Slot) -> u64;

    /// Sets `slot`'s value (reset with 0, or preset below the wrap point).
    fn write(&self, slot: Slot, value: u64);

    /// Whether `slot`'s overflow flag is set.
    fn overflowed(&self, slot: Slot) -> bool;

    /// Clears `slot`'s overflow flag and no other.
    fn clear_overflow(&self, slot: Slot);
}

/// A shared reference to a PMU is a PMU: a pool can borrow it (for tests that keep
/// using the PMU, or for a PMU that lives in a static).
impl<P: Pmu + ?Sized> Pmu for &P {
    type Event = P::Event;

    fn capabilities(&self) -> Capabilities {
        (**self).capabilities()
    }
    fn is_implemented(&self, event: Self::Event) -> bool {
        (**self).is_implemented(event)
    }
    fn fixed_event(&self, index: u8) -> Option<GenericEvent> {
        (**self).fixed_event(index)
    }
    fn configure(
        &self,
        slot: Slot,
        event: Self::Event,
        filter: PrivilegeFilter,
    ) -> Result<(), Error> {
        (**self).configure(slot, event, filter)
    }
    fn enable(&self, slot: Slot) {
        (**self).enable(slot)
    }
    fn disable(&self, slot: Slot) {
        (**self).disable(slot)
    }
    #[inline(always)]
    fn read(&self, slot: Slot) -> u64 {
        (**self).read(slot)
    }
    fn write(&self, slot: Slot, value: u64) {
        (**self).write(slot, value)
    }
    #[inline(always)]
    fn overflowed(&self, slot: Slot) -> bool {
        (**self).overflowed(slot)
    }
    fn clear_overflow(&self, slot: Slot) {
        (**self).clear_overflow(slot)
    }
}

/// Allocates counters of one PMU as handles.
///
/// The pool is `!Sync` on purpose: a PMU belongs to one CPU.
#[derive(Debug)]
pub struct CounterPool<P: Pmu> {
    pmu: P,
    caps: Capabilities,
    used_programmable: Cell<u64>,
    used_fixed: Cell<u64>,
}

impl<P: Pmu> CounterPool<P> {
    /// A pool over all counters of `pmu`.
    pub fn new(pmu: P) -> Self {
        let caps = pmu.capabilities();
        Self {
            pmu,
            caps,
            used_programmable: Cell::new(0),
            used_fixed: Cell::new(0),
        }
    }

    /// The PMU underneath.
    pub fn pmu(&self) -> &P {
        &self.pmu
    }

    /// The PMU's capabilities.
    pub fn capabilities(&self) -> Capabilities {
        self.caps
    }

    fn bitmap(&self, slot: Slot) -> (&Cell<u64>, u64) {
        match slot {
            Slot::Programmable(n) => (&self.used_programmable, 1u64 << (n % 64)),
            Slot::Fixed(n) => (&self.used_fixed, 1u64 << (n % 64)),
        }
    }

    fn is_free(&self, slot: Slot) -> bool {
        let (map, bit) = self.bitmap(slot);
        map.get() & bit == 0
    }

    /// Allocates a counter for `event`: a free fixed counter that counts it if there is
    /// one, else the lowest free programmable counter. The counter is configured and
    /// stopped, its overflow flag cleared; call [`Counter::start`].
    ///
    /// # Errors
    /// [`Error::EventNotEncodable`], [`Error::RawEventOutOfRange`],
    /// [`Error::EventNotImplemented`], [`Error::NoFreeCounter`],
    /// [`Error::FilterUnsupported`].
    pub fn counter(&self, event: Event, filter: PrivilegeFilter) -> Result<Counter<'_, P>, Error> {
        if let Event::Generic(generic) = event {
            let fixed = (0..self.caps.fixed.min(64) as u8).find(|&n| {
                self.pmu.fixed_event(n) == Some(generic) && self.is_free(Slot::Fixed(n))
            });
            if let Some(n) = fixed {
                return self.counter_at(Slot::Fixed(n), event, filter);
            }
        }
        let code = P::Event::encode(event)?;
        self.check_implemented(code)?;
        let slot = (0..self.caps.programmable.min(64) as u8)
            .map(Slot::Programmable)
            .find(|&s| self.is_free(s))
            .ok_or(Error::NoFreeCounter {
                available: self.caps.programmable,
            })?;
        self.claim(slot, code, filter)
    }

    /// Allocates exactly `slot` for `event`.
    ///
    /// # Errors
    /// [`Error::CounterOutOfRange`], [`Error::CounterBusy`], and those of
    /// [`CounterPool::counter`].
    pub fn counter_at(
        &self,
        slot: Slot,
        event: Event,
        filter: PrivilegeFilter,
    ) -> Result<Counter<'_, P>, Error> {
        self.caps.check(slot)?;
        if !self.is_free(slot) {
            return Err(Error::CounterBusy { slot });
        }
        let code = P::Event::encode(event)?;
        if let Slot::Fixed(n) = slot {
            let counts = match event {
                Event::Generic(g) => self.pmu.fixed_event(n) == Some(g),
                Event::Raw(_) => false,
            };
            if !counts {
                return Err(Error::EventNotCountableOnSlot {
                    slot,
                    code: code.code(),
                });
            }
        }
        self.check_implemented(code)?;
        self.claim(slot, code, filter)
    }

    fn check_implemented(&self, code: P::Event) -> Result<(), Error> {
        if self.pmu.is_implemented(code) {
            Ok(())
        } else {
            Err(Error::EventNotImplemented { code: code.code() })
        }
    }

    fn claim(
        &self,
        slot: Slot,
        code: P::Event,
        filter: PrivilegeFilter,
    ) -> Result<Counter<'_, P>, Error> {
        self.pmu.disable(slot);
        self.pmu.configure(slot, code, filter)?;
        self.pmu.clear_overflow(slot);
        let (map, bit) = self.bitmap(slot);
        map.set(map.get() | bit);
        Ok(Counter {
            pool: self,
            slot,
            width: self.caps.width(slot),
        })
    }
}

/// One counter's read at the hardware floor, for region code generic over how a
/// counter is reached: a handle made once (the counter's existence and the access
/// checked then) whose read is one instruction, or one indirect call, with no slot
/// decoding. pmu-armv8's handles (`mrs PMEVCNTR<n>_EL0`, a table of them) and the
/// AArch32 direct backend's table of `mrc` reads implement it.
pub trait CounterRead {
    /// The counter's value: its register, as wide as the counter (a 32-bit counter
    /// reads below 2^32).
    fn read(&self) -> u64;

    /// The counter's bit in its PMU's overflow-flag register (PMOVSSET_EL0 in AArch64,
    /// PMOVSR in AArch32, each bit n event counter n and bit 31 the cycle counter; the
    /// ARM1176's PMNC flags): a mask with one bit set.
    fn overflow_mask(&self) -> u64;
}

/// One allocated counter. Dropping it stops the counter and frees the slot.
#[derive(Debug)]
pub struct Counter<'p, P: Pmu> {
    pool: &'p CounterPool<P>,
    slot: Slot,
    width: CounterWidth,
}

impl<P: Pmu> Counter<'_, P> {
    /// The hardware slot.
    pub fn slot(&self) -> Slot {
        self.slot
    }

    /// The counter width.
    pub fn width(&self) -> CounterWidth {
        self.width
    }

    /// Starts counting.
    pub fn start(&self) {
        self.pool.pmu.enable(self.slot);
    }

    /// Stops counting.
    pub fn stop(&self) {
        self.pool.pmu.disable(self.slot);
    }

    /// The current value, truncated to the counter width.
    #[inline(always)]
    pub fn read(&self) -> u64 {
        self.width.truncate(self.pool.pmu.read(self.slot))
    }

    /// Sets the value (truncated to the width).
    pub fn set(&self, value: u64) {
        self.pool.pmu.write(self.slot, self.width.truncate(value));
    }

    /// Sets the value to 0.
    pub fn reset(&self) {
        self.set(0);
    }

    /// Presets the counter `distance` events below its wrap point.
    pub fn preset_before_wrap(&self, distance: u64) {
        self.set(distance.wrapping_neg());
    }

    /// Whether the overflow flag is set.
    #[inline(always)]
    pub fn overflowed(&self) -> bool {
        self.pool.pmu.overflowed(self.slot)
    }

    /// Clears the overflow flag.
    pub fn clear_overflow(&self) {
        self.pool.pmu.clear_overflow(self.slot);
    }
}

impl<P: Pmu> Drop for Counter<'_, P> {
    fn drop(&mut self) {
        self.pool.pmu.disable(self.slot);
        self.pool.pmu.clear_overflow(self.slot);
        let (map, bit) = self.pool.bitmap(self.slot);
        map.set(map.get() & !bit);
    }
}
