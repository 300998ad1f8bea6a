//! PMUv3 event numbers: the common architectural and microarchitectural events, the
//! mapping of `pmu_core`'s generic events, and which events a PMU implements
//! (PMCEID0/1_EL0).
//!
//! Numbers, names and meanings come from [`pmu_events::common`], the one table of the Arm
//! ARM's common events (DDI 0487, "PMU Event Descriptions", "Common event numbers");
//! [`EventNumber`]'s constants are its numbers under its names. A core's own events
//! (the IMPLEMENTATION DEFINED ones too) are in [`pmu_events::for_midr`]'s tables. Events 0x0000..=0x003F and 0x4000..=0x403F are *common*:
//! PMCEID0/1_EL0 say whether the PE implements each one. Other numbers are
//! IMPLEMENTATION DEFINED (see the core's TRM); PMCEID says nothing about them.

use core::fmt;

use pmu_core::{Error, EventEncoding, GenericEvent};

use crate::registers::{Pmceid0El0, Pmceid1El0};

/// A PMUv3 event number, the value of `PMEVTYPER<n>_EL0`.evtCount (16 bits; 10 bits
/// before FEAT_PMUv3p1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventNumber(u16);

impl EventNumber {
    /// The largest event number `PMEVTYPER<n>_EL0`.evtCount holds (bits 15:0).
    pub const MAX: u16 = 0xFFFF;
    /// The largest event number before FEAT_PMUv3p1 (evtCount bits 9:0).
    pub const MAX_PMUV3: u16 = 0x3FF;

    /// Event `number`.
    pub const fn new(number: u16) -> Self {
        Self(number)
    }

    /// The number.
    pub const fn get(self) -> u16 {
        self.0
    }

    /// Whether this is a common event (0x0000..=0x003F or 0x4000..=0x403F), whose
    /// presence PMCEID0/1_EL0 report.
    pub const fn is_common(self) -> bool {
        self.0 < 0x40 || (self.0 >= 0x4000 && self.0 < 0x4040)
    }

    /// The Arm ARM mnemonic of a common event [`pmu_events::common`] names
    /// (`"INST_RETIRED"`).
    pub fn name(self) -> Option<&'static str> {
        self.common_event().map(|e| e.name)
    }

    /// The common event numbered `self`, with its name and meaning.
    pub fn common_event(self) -> Option<&'static pmu_events::Event> {
        pmu_events::common::ALL.iter().find(|e| e.code == self.0)
    }

    /// The common event whose Arm ARM mnemonic is `name` (exact spelling).
    pub fn from_name(name: &str) -> Option<Self> {
        pmu_events::common::ALL
            .iter()
            .find(|e| e.name == name)
            .map(|e| Self(e.code))
    }
}

impl fmt::Display for EventNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name} ({:#06x})", self.0),
            None => write!(f, "event {:#06x}", self.0),
        }
    }
}

macro_rules! common_events {
    ($($name:ident,)*) => {
        impl EventNumber {
            $(
                #[doc = concat!("The common event [`pmu_events::common::", stringify!($name), "`].")]
                pub const $name: Self = Self(pmu_events::common::$name.code);
            )*
        }

        /// Each constant of [`EventNumber`] with the name it has in this crate.
        #[cfg(test)]
        const CONSTANTS: &[(EventNumber, &str)] = &[$((EventNumber::$name, stringify!($name)),)*];
    };
}

common_events! {
    SW_INCR,
    L1I_CACHE_REFILL,
    L1I_TLB_REFILL,
    L1D_CACHE_REFILL,
    L1D_CACHE,
    L1D_TLB_REFILL,
    LD_RETIRED,
    ST_RETIRED,
    INST_RETIRED,
    EXC_TAKEN,
    EXC_RETURN,
    CID_WRITE_RETIRED,
    PC_WRITE_RETIRED,
    BR_IMMED_RETIRED,
    BR_RETURN_RETIRED,
    UNALIGNED_LDST_RETIRED,
    BR_MIS_PRED,
    CPU_CYCLES,
    BR_PRED,
    MEM_ACCESS,
    L1I_CACHE,
    L1D_CACHE_WB,
    L2D_CACHE,
    L2D_CACHE_REFILL,
    L2D_CACHE_WB,
    BUS_ACCESS,
    MEMORY_ERROR,
    INST_SPEC,
    TTBR_WRITE_RETIRED,
    BUS_CYCLES,
    CHAIN,
    L1D_CACHE_ALLOCATE,
    L2D_CACHE_ALLOCATE,
    BR_RETIRED,
    BR_MIS_PRED_RETIRED,
    STALL_FRONTEND,
    STALL_BACKEND,
    L1D_TLB,
    L1I_TLB,
    L2I_CACHE,
    L2I_CACHE_REFILL,
    L3D_CACHE_ALLOCATE,
    L3D_CACHE_REFILL,
    L3D_CACHE,
    L3D_CACHE_WB,
    L2D_TLB_REFILL,
    L2I_TLB_REFILL,
    L2D_TLB,
    L2I_TLB,
    REMOTE_ACCESS,
    LL_CACHE,
    LL_CACHE_MISS,
    DTLB_WALK,
    ITLB_WALK,
    LL_CACHE_RD,
    LL_CACHE_MISS_RD,
    REMOTE_ACCESS_RD,
    L1D_CACHE_LMISS_RD,
    OP_RETIRED,
    OP_SPEC,
    STALL,
    STALL_SLOT_BACKEND,
    STALL_SLOT_FRONTEND,
    STALL_SLOT,
    SAMPLE_POP,
    SAMPLE_FEED,
    SAMPLE_FILTRATE,
    SAMPLE_COLLISION,
    CNT_CYCLES,
    STALL_BACKEND_MEM,
    L1I_CACHE_LMISS,
    L2D_CACHE_LMISS_RD,
    L2I_CACHE_LMISS,
    L3D_CACHE_LMISS_RD,
    TRB_WRAP,
    TRB_TRIG,
    TRCEXTOUT0,
    TRCEXTOUT1,
    TRCEXTOUT2,
    TRCEXTOUT3,
    CTI_TRIGOUT4,
    CTI_TRIGOUT5,
    CTI_TRIGOUT6,
    CTI_TRIGOUT7,
    LDST_ALIGN_LAT,
    LD_ALIGN_LAT,
    ST_ALIGN_LAT,
    MEM_ACCESS_CHECKED,
    MEM_ACCESS_CHECKED_RD,
    MEM_ACCESS_CHECKED_WR,
}

/// The PMUv3 event encoding of `pmu_core`: an event number, and for one generic event
/// a second choice used when the PE lacks the first.
///
/// The second choice mirrors Linux: `PERF_COUNT_HW_BRANCH_INSTRUCTIONS` is BR_RETIRED
/// when PMCEID has it, else PC_WRITE_RETIRED (drivers/perf/arm_pmuv3.c
/// `__armv8_pmuv3_map_event_id`). [`crate::Armv8Pmu`] resolves it against PMCEID.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Armv8Event {
    preferred: EventNumber,
    alternative: Option<EventNumber>,
}

impl Armv8Event {
    /// Exactly event `number`.
    pub const fn new(number: EventNumber) -> Self {
        Self {
            preferred: number,
            alternative: None,
        }
    }

    /// `preferred`, or `alternative` where the PE does not implement `preferred`.
    pub const fn with_alternative(preferred: EventNumber, alternative: EventNumber) -> Self {
        Self {
            preferred,
            alternative: Some(alternative),
        }
    }

    /// The first choice (the code reported in errors).
    pub const fn preferred(self) -> EventNumber {
        self.preferred
    }

    /// The second choice, if any.
    pub const fn alternative(self) -> Option<EventNumber> {
        self.alternative
    }

    /// The choices in order of preference.
    pub fn candidates(self) -> impl Iterator<Item = EventNumber> {
        core::iter::once(self.preferred).chain(self.alternative)
    }
}

impl From<EventNumber> for Armv8Event {
    fn from(number: EventNumber) -> Self {
        Self::new(number)
    }
}

/// The PMUv3 encoding of a generic event, as Linux maps `PERF_TYPE_HARDWARE` and the
/// L1D/L1I/DTLB read entries of `PERF_TYPE_HW_CACHE` (drivers/perf/arm_pmuv3.c
/// `armv8_pmuv3_perf_map`, `armv8_pmuv3_perf_cache_map`, `__armv8_pmuv3_map_event_id`).
/// `None` for reference cycles, which Linux does not map either.
pub const fn generic_event(event: GenericEvent) -> Option<Armv8Event> {
    let number = match event {
        GenericEvent::CpuCycles => EventNumber::CPU_CYCLES,
        GenericEvent::Instructions => EventNumber::INST_RETIRED,
        GenericEvent::BranchInstructions => {
            return Some(Armv8Event::with_alternative(
                EventNumber::BR_RETIRED,
                EventNumber::PC_WRITE_RETIRED,
            ))
        }
        GenericEvent::BranchMisses => EventNumber::BR_MIS_PRED,
        GenericEvent::CacheReferences => EventNumber::L1D_CACHE,
        GenericEvent::CacheMisses => EventNumber::L1D_CACHE_REFILL,
        GenericEvent::L1dAccess => EventNumber::L1D_CACHE,
        GenericEvent::L1dRefill => EventNumber::L1D_CACHE_REFILL,
        GenericEvent::L1iRefill => EventNumber::L1I_CACHE_REFILL,
        GenericEvent::DtlbRefill => EventNumber::L1D_TLB_REFILL,
        GenericEvent::StalledCyclesFrontend => EventNumber::STALL_FRONTEND,
        GenericEvent::StalledCyclesBackend => EventNumber::STALL_BACKEND,
        GenericEvent::BusCycles => EventNumber::BUS_CYCLES,
        _ => return None,
    };
    Some(Armv8Event::new(number))
}

impl EventEncoding for Armv8Event {
    fn from_generic(event: GenericEvent) -> Option<Self> {
        generic_event(event)
    }

    /// Any 16-bit number (`PMEVTYPER<n>_EL0`.evtCount is bits 15:0).
    fn from_raw(raw: u64) -> Result<Self, Error> {
        u16::try_from(raw)
            .map(|n| Self::new(EventNumber(n)))
            .map_err(|_| Error::RawEventOutOfRange {
                raw,
                max: u64::from(EventNumber::MAX),
            })
    }

    fn code(self) -> u64 {
        u64::from(self.preferred.0)
    }
}

/// The common events a PE implements, from PMCEID0_EL0 and PMCEID1_EL0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImplementedEvents {
    pmceid0: u64,
    pmceid1: u64,
}

impl ImplementedEvents {
    /// From the raw register values.
    pub const fn new(pmceid0: u64, pmceid1: u64) -> Self {
        Self { pmceid0, pmceid1 }
    }

    /// From the register values.
    pub fn from_registers(pmceid0: Pmceid0El0, pmceid1: Pmceid1El0) -> Self {
        Self::new(pmceid0.get(), pmceid1.get())
    }

    /// Whether `event` is implemented: `Some` for common events (PMCEID0_EL0 bit n for
    /// event n < 0x20, PMCEID1_EL0 bit n for 0x20 + n, the upper halves for
    /// 0x4000 + n and 0x4020 + n), `None` for every other number, about which PMCEID
    /// says nothing.
    pub const fn contains(self, event: EventNumber) -> Option<bool> {
        let n = event.0;
        let (register, bit) = match n {
            0x0000..=0x001F => (self.pmceid0, n),
            0x0020..=0x003F => (self.pmceid1, n - 0x20),
            0x4000..=0x401F => (self.pmceid0, n - 0x4000 + 32),
            0x4020..=0x403F => (self.pmceid1, n - 0x4020 + 32),
            _ => return None,
        };
        Some(register & (1 << bit) != 0)
    }

    /// Every implemented common event, in numeric order.
    pub fn iter(self) -> impl Iterator<Item = EventNumber> {
        (0x0000..0x0040u16)
            .chain(0x4000..0x4040)
            .map(EventNumber)
            .filter(move |&e| self.contains(e) == Some(true))
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec::Vec;

    use super::*;

    /// QEMU `-cpu max -icount shift=0`: PMCEID0_EL0 = 0x20101, i.e. SW_INCR,
    /// INST_RETIRED and CPU_CYCLES and nothing else of events 0x00..=0x1F;
    /// PMCEID1_EL0 = 0x10000018 adds STALL_FRONTEND, STALL_BACKEND and STALL
    /// (docs/qemu.md).
    #[test]
    fn qemu_icount_pmceid() {
        let low = ImplementedEvents::new(0x20101, 0);
        let found: Vec<_> = low.iter().collect();
        assert_eq!(
            found,
            [
                EventNumber::SW_INCR,
                EventNumber::INST_RETIRED,
                EventNumber::CPU_CYCLES
            ]
        );
        let both = ImplementedEvents::new(0x20101, 0x1000_0018);
        let found: Vec<_> = both.iter().collect();
        assert_eq!(
            found,
            [
                EventNumber::SW_INCR,
                EventNumber::INST_RETIRED,
                EventNumber::CPU_CYCLES,
                EventNumber::STALL_FRONTEND,
                EventNumber::STALL_BACKEND,
                EventNumber::STALL,
            ]
        );
        assert_eq!(both.contains(EventNumber::BR_RETIRED), Some(false));
        // Without icount INST_RETIRED is missing (PMCEID0 = 0x20001).
        let no_icount = ImplementedEvents::new(0x20001, 0x1000_0018);
        assert_eq!(no_icount.contains(EventNumber::INST_RETIRED), Some(false));
        assert_eq!(no_icount.contains(EventNumber::CPU_CYCLES), Some(true));
    }

    /// The upper halves (IDhi) are the 0x4000 range (Arm ARM DDI 0487 PMCEID0_EL0:
    /// "IDhi[n] corresponds to common event (0x4000 + n)"; PMCEID1_EL0: 0x4020 + n);
    /// IMPLEMENTATION DEFINED numbers are unknown to PMCEID.
    #[test]
    fn upper_halves_and_unknown_numbers() {
        let ids = ImplementedEvents::new(1 << 32 | 1 << 36, 1 << 36);
        assert_eq!(ids.contains(EventNumber::SAMPLE_POP), Some(true));
        assert_eq!(ids.contains(EventNumber::CNT_CYCLES), Some(true));
        assert_eq!(ids.contains(EventNumber::MEM_ACCESS_CHECKED), Some(true));
        assert_eq!(ids.contains(EventNumber::SW_INCR), Some(false));
        assert_eq!(ids.contains(EventNumber::new(0x40)), None);
        assert_eq!(ids.contains(EventNumber::new(0xC2)), None);
        assert_eq!(ids.contains(EventNumber::new(0x4040)), None);
        assert_eq!(ids.iter().count(), 3);
    }

    /// One place for the names: every constant of [`EventNumber`] is the number
    /// `pmu_events::common` gives its name, and names it back; every common event there
    /// has its constant here; every common event 0x00..=0x3F of the Arm ARM ("Common event
    /// numbers") is named exactly once.
    #[test]
    fn constants_are_pmu_events_common_names() {
        for &(number, name) in CONSTANTS {
            let event = pmu_events::common::ALL
                .iter()
                .find(|e| e.code == number.get())
                .unwrap_or_else(|| panic!("{name}: {number} not in pmu_events::common"));
            assert_eq!(event.name, name, "{:#06x}", number.get());
            assert_eq!(number.name(), Some(name));
            assert_eq!(EventNumber::from_name(name), Some(number));
            assert!(number.is_common(), "{name}");
        }
        assert_eq!(CONSTANTS.len(), pmu_events::common::ALL.len());
        for n in 0..0x40u16 {
            let named = CONSTANTS.iter().filter(|(e, _)| e.get() == n).count();
            assert_eq!(named, 1, "event {n:#x}");
        }
        // Spot checks against include/linux/perf/arm_pmuv3.h (`ARMV8_PMUV3_PERFCTR_*`).
        let spot = [
            (0x00, "SW_INCR"),
            (0x08, "INST_RETIRED"),
            (0x11, "CPU_CYCLES"),
            (0x1D, "BUS_CYCLES"),
            (0x21, "BR_RETIRED"),
            (0x24, "STALL_BACKEND"),
            (0x37, "LL_CACHE_MISS_RD"),
            (0x3F, "STALL_SLOT"),
        ];
        for (number, name) in spot {
            assert_eq!(EventNumber::new(number).name(), Some(name));
        }
        assert_eq!(EventNumber::new(0x40).name(), None);
        assert_eq!(
            EventNumber::from_name("inst_retired"),
            None,
            "exact spelling"
        );
        assert_eq!(
            EventNumber::INST_RETIRED.common_event().map(|e| e.about),
            Some("Instruction architecturally executed.")
        );
    }

    /// Linux's generic map (drivers/perf/arm_pmuv3.c `armv8_pmuv3_perf_map`,
    /// `armv8_pmuv3_perf_cache_map`, `__armv8_pmuv3_map_event_id`).
    #[test]
    fn generic_events_follow_linux() {
        let expected = [
            (GenericEvent::CpuCycles, 0x11),
            (GenericEvent::Instructions, 0x08),
            (GenericEvent::BranchInstructions, 0x21),
            (GenericEvent::BranchMisses, 0x10),
            (GenericEvent::CacheReferences, 0x04),
            (GenericEvent::CacheMisses, 0x03),
            (GenericEvent::L1dAccess, 0x04),
            (GenericEvent::L1dRefill, 0x03),
            (GenericEvent::L1iRefill, 0x01),
            (GenericEvent::DtlbRefill, 0x05),
            (GenericEvent::StalledCyclesFrontend, 0x23),
            (GenericEvent::StalledCyclesBackend, 0x24),
            (GenericEvent::BusCycles, 0x1D),
        ];
        for (generic, number) in expected {
            let e = generic_event(generic).unwrap();
            assert_eq!(e.preferred(), EventNumber::new(number), "{generic}");
        }
        assert_eq!(
            generic_event(GenericEvent::BranchInstructions).and_then(Armv8Event::alternative),
            Some(EventNumber::PC_WRITE_RETIRED)
        );
        assert_eq!(generic_event(GenericEvent::RefCycles), None);
        for generic in GenericEvent::ALL {
            if generic != GenericEvent::BranchInstructions {
                assert_eq!(
                    generic_event(generic).and_then(Armv8Event::alternative),
                    None
                );
            }
        }
    }

    /// evtCount is 16 bits (`ARMV8_PMU_EVTYPE_EVENT` = GENMASK(15, 0)).
    #[test]
    fn raw_events_are_16_bit() {
        assert_eq!(
            Armv8Event::from_raw(0xFFFF).map(Armv8Event::code),
            Ok(0xFFFF)
        );
        assert_eq!(
            Armv8Event::from_raw(0x1_0000),
            Err(Error::RawEventOutOfRange {
                raw: 0x1_0000,
                max: 0xFFFF
            })
        );
    }
}
