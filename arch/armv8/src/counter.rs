//! Naming a PMUv3 counter: the register bit, the `pmu_core` slot and the index Linux
//! publishes in the perf mmap page.
//!
//! The PMU has up to 31 event counters `PMEVCNTR<n>_EL0` (n = 0..=30, how many is
//! PMCR_EL0.N) and the cycle counter PMCCNTR_EL0. Every per-counter register
//! (PMCNTENSET/CLR_EL0, PMINTENSET/CLR_EL1, PMOVSSET/CLR_EL0, PMSWINC_EL0) gives
//! event counter n bit n and the cycle counter bit 31 (Arm ARM DDI 0487, the
//! "`P<m>`" and "C" fields of those registers; Linux `ARMV8_PMU_CYCLE_IDX` = 31).

use core::fmt;

use pmu_core::Slot;

/// Event counter number n of `PMEVCNTR<n>_EL0` / `PMEVTYPER<n>_EL0`, always `0..=30`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventCounter(u8);

impl EventCounter {
    /// The number of event counters the architecture can name (PMCR_EL0.N ≤ 31).
    pub const MAX: u8 = 31;

    /// Event counter `n`, `None` unless `n <= 30`.
    pub const fn new(n: u8) -> Option<Self> {
        if n < Self::MAX {
            Some(Self(n))
        } else {
            None
        }
    }

    /// The counter number n.
    pub const fn index(self) -> u8 {
        self.0
    }
}

impl fmt::Display for EventCounter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PMEVCNTR{}_EL0", self.0)
    }
}

/// One PMUv3 counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CounterId {
    /// `PMEVCNTR<n>_EL0`, programmable.
    Event(EventCounter),
    /// PMCCNTR_EL0, the cycle counter.
    Cycle,
}

impl CounterId {
    /// The bit of this counter in PMCNTENSET/CLR_EL0, PMINTENSET/CLR_EL1,
    /// PMOVSSET/CLR_EL0 and PMSWINC_EL0: n for `PMEVCNTR<n>_EL0`, 31 for PMCCNTR_EL0.
    pub const fn bit(self) -> u32 {
        match self {
            Self::Event(n) => n.0 as u32,
            Self::Cycle => 31,
        }
    }

    /// `1 << self.bit()`: the value to write to a set/clear register for this counter
    /// alone.
    pub const fn mask(self) -> u64 {
        1 << self.bit()
    }

    /// The counter behind a `pmu_core` slot: `Programmable(n)` is `PMEVCNTR<n>_EL0` for
    /// n ≤ 30, `Fixed(0)` is PMCCNTR_EL0; anything else does not exist.
    pub const fn from_slot(slot: Slot) -> Option<Self> {
        match slot {
            Slot::Programmable(n) => match EventCounter::new(n) {
                Some(n) => Some(Self::Event(n)),
                None => None,
            },
            Slot::Fixed(0) => Some(Self::Cycle),
            Slot::Fixed(_) => None,
        }
    }

    /// The `pmu_core` slot of this counter.
    pub const fn slot(self) -> Slot {
        match self {
            Self::Event(n) => Slot::Programmable(n.0),
            Self::Cycle => Slot::Fixed(0),
        }
    }

    /// The `index` Linux publishes in `perf_event_mmap_page` for this counter on
    /// arm64: the driver's counter index plus one (`armv8pmu_user_event_idx` returns
    /// `event->hw.idx + 1`; the cycle counter's `hw.idx` is `ARMV8_PMU_CYCLE_IDX` = 31).
    pub const fn perf_index(self) -> u32 {
        self.bit() + 1
    }
}

impl fmt::Display for CounterId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Event(n) => n.fmt(f),
            Self::Cycle => f.write_str("PMCCNTR_EL0"),
        }
    }
}

/// The counter user space reads for the `index` of a perf mmap page on arm64.
///
/// `index` 32 is PMCCNTR_EL0 and `n + 1` is `PMEVCNTR<n>_EL0` (n = 0..=30): Linux
/// publishes `hw.idx + 1` (drivers/perf/arm_pmuv3.c `armv8pmu_user_event_idx`) and the
/// cycle counter's `hw.idx` is `ARMV8_PMU_CYCLE_IDX` = 31
/// (include/linux/perf/arm_pmuv3.h). `None` for 0 (no user access: read the event with
/// `read()` instead) and for every other value (33 would be the FEAT_PMUv3_ICNTR
/// instruction counter, which Linux never hands to user space).
pub const fn counter_for_perf_index(index: u32) -> Option<CounterId> {
    match index {
        32 => Some(CounterId::Cycle),
        1..=31 => Some(CounterId::Event(EventCounter((index - 1) as u8))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registers::{PMCNTENSET_EL0, PMOVSCLR_EL0};
    use proptest::prelude::*;

    /// The arm64 perf mmap-page mapping (drivers/perf/arm_pmuv3.c
    /// `armv8pmu_user_event_idx`, `ARMV8_PMU_CYCLE_IDX` = 31, Linux 6.12; the page's
    /// `index` is the counter + 1: Documentation/arch/arm64/perf.rst, "Perf Userspace PMU
    /// Hardware Counter Access").
    #[test]
    fn perf_index_mapping() {
        assert_eq!(counter_for_perf_index(32), Some(CounterId::Cycle));
        assert_eq!(
            counter_for_perf_index(1),
            Some(CounterId::Event(EventCounter::new(0).unwrap()))
        );
        assert_eq!(
            counter_for_perf_index(31),
            Some(CounterId::Event(EventCounter::new(30).unwrap()))
        );
        assert_eq!(counter_for_perf_index(0), None);
        assert_eq!(counter_for_perf_index(33), None);
        assert_eq!(counter_for_perf_index(u32::MAX), None);
        for n in 0..=30u8 {
            let id = CounterId::Event(EventCounter::new(n).unwrap());
            assert_eq!(id.perf_index(), u32::from(n) + 1);
        }
        assert_eq!(CounterId::Cycle.perf_index(), 32);
    }

    /// The cycle counter is bit 31 ("C") of the set/clear registers, event counters
    /// bits 30:0 ("`P<m>`"), Arm ARM DDI 0487 PMCNTENSET_EL0 / PMOVSCLR_EL0.
    #[test]
    fn register_bits() {
        assert_eq!(
            CounterId::Cycle.mask(),
            PMCNTENSET_EL0::C.mask << PMCNTENSET_EL0::C.shift
        );
        assert_eq!(
            CounterId::Cycle.mask(),
            PMOVSCLR_EL0::C.mask << PMOVSCLR_EL0::C.shift
        );
        let all_events = (0..=30u8)
            .map(|n| CounterId::Event(EventCounter::new(n).unwrap()).mask())
            .fold(0, |a, b| a | b);
        assert_eq!(
            all_events,
            PMCNTENSET_EL0::P.mask << PMCNTENSET_EL0::P.shift
        );
    }

    #[test]
    fn slots() {
        assert_eq!(CounterId::from_slot(Slot::Fixed(0)), Some(CounterId::Cycle));
        assert_eq!(CounterId::from_slot(Slot::Fixed(1)), None);
        assert_eq!(CounterId::from_slot(Slot::Programmable(31)), None);
        assert_eq!(CounterId::from_slot(Slot::Programmable(255)), None);
        assert_eq!(EventCounter::new(31), None);
    }

    proptest! {
        /// Every valid perf index maps to a counter that maps back; slots round-trip.
        #[test]
        fn round_trips(index: u32) {
            if let Some(id) = counter_for_perf_index(index) {
                prop_assert_eq!(id.perf_index(), index);
                prop_assert_eq!(CounterId::from_slot(id.slot()), Some(id));
            } else {
                prop_assert!(index == 0 || index > 32);
            }
        }
    }
}
