//! A software PMU implementing [`Pmu`], for tests, examples and documentation.
//!
//! Counters count "events" that the test injects with [`FakePmu::tick`]; each enabled
//! counter configured for that event advances, wraps at its width and sets its
//! overflow flag like hardware. [`FakePmu::set_read_cost`] makes every read advance the
//! counters too, like a real read costs instructions, so calibration can be tested.

use core::cell::Cell;

use crate::event::{EventEncoding, GenericEvent};
use crate::pmu::{Capabilities, Pmu, PrivilegeFilter, Slot};
use crate::width::CounterWidth;
use crate::Error;

/// Event codes of the fake PMU: the 8-bit numbers below, like a small ARMv8 table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FakeEvent(pub u8);

impl FakeEvent {
    /// Cycles.
    pub const CYCLES: Self = Self(0x11);
    /// Instructions.
    pub const INSTRUCTIONS: Self = Self(0x08);
    /// Branch misses.
    pub const BRANCH_MISSES: Self = Self(0x10);
}

impl EventEncoding for FakeEvent {
    fn from_generic(event: GenericEvent) -> Option<Self> {
        match event {
            GenericEvent::CpuCycles => Some(Self::CYCLES),
            GenericEvent::Instructions => Some(Self::INSTRUCTIONS),
            GenericEvent::BranchMisses => Some(Self::BRANCH_MISSES),
            _ => None,
        }
    }

    fn from_raw(raw: u64) -> Result<Self, Error> {
        u8::try_from(raw)
            .map(Self)
            .map_err(|_| Error::RawEventOutOfRange { raw, max: 0xFF })
    }

    fn code(self) -> u64 {
        u64::from(self.0)
    }
}

const MAX_COUNTERS: usize = 8;

#[derive(Clone, Copy, Debug, Default)]
struct FakeCounter {
    value: u64,
    event: Option<u8>,
    enabled: bool,
    overflow: bool,
}

/// The fake PMU: up to 8 programmable counters and one fixed cycle counter.
#[derive(Debug)]
pub struct FakePmu {
    caps: Capabilities,
    implemented: [bool; 256],
    counters: [Cell<FakeCounter>; MAX_COUNTERS + 1],
    read_cost: Cell<u64>,
    filters_supported: bool,
}

impl FakePmu {
    /// A PMU with `programmable` counters of `width` and a 64-bit cycle counter, that
    /// implements the events in `implemented`.
    ///
    /// # Errors
    /// [`Error::CounterOutOfRange`] for more than 8 programmable counters.
    pub fn new(
        programmable: u32,
        width: CounterWidth,
        implemented: &[FakeEvent],
    ) -> Result<Self, Error> {
        if programmable as usize > MAX_COUNTERS {
            return Err(Error::CounterOutOfRange {
                slot: Slot::Programmable(programmable.min(255) as u8),
                available: MAX_COUNTERS as u32,
            });
        }
        let mut table = [false; 256];
        for e in implemented {
            table[usize::from(e.0)] = true;
        }
        Ok(Self {
            caps: Capabilities {
                programmable,
                programmable_width: width,
                fixed: 1,
                fixed_width: CounterWidth::W64,
            },
            implemented: table,
            counters: Default::default(),
            read_cost: Cell::new(0),
            filters_supported: true,
        })
    }

    /// Every read advances each enabled counter by `cost` events of its kind afterwards.
    pub fn set_read_cost(&self, cost: u64) {
        self.read_cost.set(cost);
    }

    /// Makes `configure` reject any filter but [`PrivilegeFilter::ALL`] (like ARM1176).
    pub fn without_filters(mut self) -> Self {
        self.filters_supported = false;
        self
    }

    fn cell(&self, slot: Slot) -> &Cell<FakeCounter> {
        match slot {
            Slot::Programmable(n) => &self.counters[usize::from(n) % MAX_COUNTERS],
            Slot::Fixed(_) => &self.counters[MAX_COUNTERS],
        }
    }

    /// `count` events of `event` happen: every enabled counter for it advances.
    pub fn tick(&self, event: FakeEvent, count: u64) {
        for (i, cell) in self.counters.iter().enumerate() {
            let mut c = cell.get();
            let counts = if i == MAX_COUNTERS {
                event == FakeEvent::CYCLES
            } else {
                c.event == Some(event.0)
            };
            if c.enabled && counts {
                let width = if i == MAX_COUNTERS {
                    self.caps.fixed_width
                } else {
                    self.caps.programmable_width
                };
                let total = u128::from(c.value) + u128::from(count);
                let wrapped = total > u128::from(width.mask());
                let sum = (total as u64) & width.mask();
                c.value = sum;
                c.overflow |= wrapped;
                cell.set(c);
            }
        }
    }
}

impl Pmu for FakePmu {
    type Event = FakeEvent;

    fn capabilities(&self) -> Capabilities {
        self.caps
    }

    fn is_implemented(&self, event: FakeEvent) -> bool {
        self.implemented[usize::from(event.0)]
    }

    fn fixed_event(&self, index: u8) -> Option<GenericEvent> {
        (index == 0).then_some(GenericEvent::CpuCycles)
    }

    fn configure(
        &self,
        slot: Slot,
        event: FakeEvent,
        filter: PrivilegeFilter,
    ) -> Result<(), Error> {
        if !self.filters_supported && filter != PrivilegeFilter::ALL {
            return Err(Error::FilterUnsupported { filter });
        }
        let cell = self.cell(slot);
        let mut c = cell.get();
        c.event = Some(event.0);
        cell.set(c);
        Ok(())
    }

    fn enable(&self, slot: Slot) {
        let cell = self.cell(slot);
        cell.set(FakeCounter {
            enabled: true,
            ..cell.get()
        });
    }

    fn disable(&self, slot: Slot) {
        let cell = self.cell(slot);
        cell.set(FakeCounter {
            enabled: false,
            ..cell.get()
        });
    }

    fn read(&self, slot: Slot) -> u64 {
        let value = self.cell(slot).get().value;
        let cost = self.read_cost.get();
        if cost > 0 {
            self.tick(FakeEvent::INSTRUCTIONS, cost);
            self.tick(FakeEvent::CYCLES, cost);
        }
        value
    }

    fn write(&self, slot: Slot, value: u64) {
        let cell = self.cell(slot);
        cell.set(FakeCounter {
            value,
            ..cell.get()
        });
    }

    fn overflowed(&self, slot: Slot) -> bool {
        self.cell(slot).get().overflow
    }

    fn clear_overflow(&self, slot: Slot) {
        let cell = self.cell(slot);
        cell.set(FakeCounter {
            overflow: false,
            ..cell.get()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pmu::CounterPool;
    use crate::{Event, GenericEvent};

    fn pool(n: u32) -> CounterPool<FakePmu> {
        let pmu = FakePmu::new(
            n,
            CounterWidth::W32,
            &[FakeEvent::INSTRUCTIONS, FakeEvent::CYCLES],
        )
        .unwrap();
        CounterPool::new(pmu)
    }

    #[test]
    fn cycles_go_to_the_fixed_counter_first() {
        let pool = pool(2);
        let c = pool
            .counter(GenericEvent::CpuCycles.into(), PrivilegeFilter::ALL)
            .unwrap();
        assert_eq!(c.slot(), Slot::Fixed(0));
        assert_eq!(c.width(), CounterWidth::W64);
        let c2 = pool
            .counter(GenericEvent::CpuCycles.into(), PrivilegeFilter::ALL)
            .unwrap();
        assert_eq!(c2.slot(), Slot::Programmable(0));
    }

    #[test]
    fn distinct_errors_for_bad_requests() {
        let pool = pool(2);
        let ins = Event::Generic(GenericEvent::Instructions);
        let _a = pool.counter(ins, PrivilegeFilter::ALL).unwrap();
        let _b = pool.counter(ins, PrivilegeFilter::ALL).unwrap();
        assert_eq!(
            pool.counter(ins, PrivilegeFilter::ALL).err(),
            Some(Error::NoFreeCounter { available: 2 })
        );
        assert_eq!(
            pool.counter_at(Slot::Programmable(2), ins, PrivilegeFilter::ALL)
                .err(),
            Some(Error::CounterOutOfRange {
                slot: Slot::Programmable(2),
                available: 2
            })
        );
        assert_eq!(
            pool.counter_at(Slot::Programmable(0), ins, PrivilegeFilter::ALL)
                .err(),
            Some(Error::CounterBusy {
                slot: Slot::Programmable(0)
            })
        );
        // Encodable but not implemented (the PMCEID-style table says no).
        assert_eq!(
            pool.counter(GenericEvent::BranchMisses.into(), PrivilegeFilter::ALL)
                .err(),
            Some(Error::EventNotImplemented { code: 0x10 })
        );
        assert_eq!(
            pool.counter(GenericEvent::RefCycles.into(), PrivilegeFilter::ALL)
                .err(),
            Some(Error::EventNotEncodable {
                event: GenericEvent::RefCycles
            })
        );
        assert_eq!(
            pool.counter(Event::Raw(0x100), PrivilegeFilter::ALL).err(),
            Some(Error::RawEventOutOfRange {
                raw: 0x100,
                max: 0xFF
            })
        );
        assert_eq!(
            pool.counter_at(Slot::Fixed(0), ins, PrivilegeFilter::ALL)
                .err(),
            Some(Error::EventNotCountableOnSlot {
                slot: Slot::Fixed(0),
                code: 0x08
            })
        );
        assert!(FakePmu::new(9, CounterWidth::W32, &[]).is_err());
    }

    #[test]
    fn unsupported_filter_is_an_error() {
        let pmu = FakePmu::new(2, CounterWidth::W32, &[FakeEvent::INSTRUCTIONS])
            .unwrap()
            .without_filters();
        let pool = CounterPool::new(pmu);
        let ins = Event::Generic(GenericEvent::Instructions);
        assert_eq!(
            pool.counter(ins, PrivilegeFilter::USER).err(),
            Some(Error::FilterUnsupported {
                filter: PrivilegeFilter::USER
            })
        );
        assert!(pool.counter(ins, PrivilegeFilter::ALL).is_ok());
    }

    #[test]
    fn drop_frees_and_disables() {
        let pool = pool(1);
        let ins = Event::Generic(GenericEvent::Instructions);
        {
            let c = pool.counter(ins, PrivilegeFilter::ALL).unwrap();
            c.start();
            pool.pmu().tick(FakeEvent::INSTRUCTIONS, 5);
            assert_eq!(c.read(), 5);
        }
        // The slot is free again and the old counter no longer counts.
        pool.pmu().tick(FakeEvent::INSTRUCTIONS, 5);
        assert_eq!(pool.pmu().read(Slot::Programmable(0)), 5);
        let c = pool.counter(ins, PrivilegeFilter::ALL).unwrap();
        assert_eq!(c.slot(), Slot::Programmable(0));
    }

    #[test]
    fn wraps_set_the_overflow_flag() {
        let pool = pool(1);
        let c = pool
            .counter(GenericEvent::Instructions.into(), PrivilegeFilter::ALL)
            .unwrap();
        c.preset_before_wrap(16);
        assert_eq!(c.read(), 0xFFFF_FFF0);
        c.start();
        pool.pmu().tick(FakeEvent::INSTRUCTIONS, 100);
        assert!(c.overflowed());
        assert_eq!(c.read(), 100 - 16);
        c.clear_overflow();
        assert!(!c.overflowed());
    }
}
