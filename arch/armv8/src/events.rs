//! PMUv3 event numbers: the common architectural and microarchitectural events, the
//! mapping of `pmu_core`'s generic events, and which events a PMU implements
//! (PMCEID0/1_EL0).
//!
//! Numbers and names are those of the Arm ARM (DDI 0487, "PMU Event Descriptions",
//! "Common event numbers") as Linux spells them in `include/linux/perf/arm_pmuv3.h`
//! (`ARMV8_PMUV3_PERFCTR_*`). Events 0x0000..=0x003F and 0x4000..=0x403F are *common*:
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

    /// The Arm ARM mnemonic of a common event this crate names (`"INST_RETIRED"`).
    pub fn name(self) -> Option<&'static str> {
        COMMON_EVENTS
            .iter()
            .find(|(n, _)| *n == self)
            .map(|&(_, name)| name)
    }

    /// The event whose Arm ARM mnemonic is `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        COMMON_EVENTS
            .iter()
            .find(|(_, n)| *n == name)
            .map(|&(number, _)| number)
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
    ($($(#[$doc:meta])* $name:ident = $number:literal,)*) => {
        impl EventNumber {
            $(
                $(#[$doc])*
                pub const $name: Self = Self($number);
            )*
        }

        /// Every event number this crate names, with its mnemonic, in numeric order.
        pub const COMMON_EVENTS: &[(EventNumber, &str)] = &[
            $((EventNumber($number), stringify!($name)),)*
        ];
    };
}

common_events! {
    /// Instruction architecturally executed, software increment (a PMSWINC_EL0 write).
    SW_INCR = 0x0000,
    /// Level 1 instruction cache refill.
    L1I_CACHE_REFILL = 0x0001,
    /// Level 1 instruction TLB refill.
    L1I_TLB_REFILL = 0x0002,
    /// Level 1 data cache refill.
    L1D_CACHE_REFILL = 0x0003,
    /// Level 1 data cache access.
    L1D_CACHE = 0x0004,
    /// Level 1 data TLB refill.
    L1D_TLB_REFILL = 0x0005,
    /// Instruction architecturally executed, load.
    LD_RETIRED = 0x0006,
    /// Instruction architecturally executed, store.
    ST_RETIRED = 0x0007,
    /// Instruction architecturally executed.
    INST_RETIRED = 0x0008,
    /// Exception taken.
    EXC_TAKEN = 0x0009,
    /// Instruction architecturally executed, exception return.
    EXC_RETURN = 0x000A,
    /// Instruction architecturally executed, write to CONTEXTIDR.
    CID_WRITE_RETIRED = 0x000B,
    /// Instruction architecturally executed, software change of the PC.
    PC_WRITE_RETIRED = 0x000C,
    /// Instruction architecturally executed, immediate branch.
    BR_IMMED_RETIRED = 0x000D,
    /// Instruction architecturally executed, procedure return.
    BR_RETURN_RETIRED = 0x000E,
    /// Instruction architecturally executed, unaligned load or store.
    UNALIGNED_LDST_RETIRED = 0x000F,
    /// Branch speculatively executed, mispredicted or not predicted.
    BR_MIS_PRED = 0x0010,
    /// Cycle.
    CPU_CYCLES = 0x0011,
    /// Predictable branch speculatively executed.
    BR_PRED = 0x0012,
    /// Data memory access.
    MEM_ACCESS = 0x0013,
    /// Level 1 instruction cache access.
    L1I_CACHE = 0x0014,
    /// Level 1 data cache write-back.
    L1D_CACHE_WB = 0x0015,
    /// Level 2 data cache access.
    L2D_CACHE = 0x0016,
    /// Level 2 data cache refill.
    L2D_CACHE_REFILL = 0x0017,
    /// Level 2 data cache write-back.
    L2D_CACHE_WB = 0x0018,
    /// Bus access.
    BUS_ACCESS = 0x0019,
    /// Local memory error.
    MEMORY_ERROR = 0x001A,
    /// Operation speculatively executed.
    INST_SPEC = 0x001B,
    /// Instruction architecturally executed, write to TTBR.
    TTBR_WRITE_RETIRED = 0x001C,
    /// Bus cycle.
    BUS_CYCLES = 0x001D,
    /// Odd counter: overflow of the preceding even counter (counter chaining).
    CHAIN = 0x001E,
    /// Level 1 data cache allocation without refill.
    L1D_CACHE_ALLOCATE = 0x001F,
    /// Level 2 data cache allocation without refill.
    L2D_CACHE_ALLOCATE = 0x0020,
    /// Instruction architecturally executed, branch.
    BR_RETIRED = 0x0021,
    /// Branch instruction architecturally executed, mispredicted.
    BR_MIS_PRED_RETIRED = 0x0022,
    /// No operation issued because of the frontend.
    STALL_FRONTEND = 0x0023,
    /// No operation issued because of the backend.
    STALL_BACKEND = 0x0024,
    /// Level 1 data TLB access.
    L1D_TLB = 0x0025,
    /// Level 1 instruction TLB access.
    L1I_TLB = 0x0026,
    /// Level 2 instruction cache access.
    L2I_CACHE = 0x0027,
    /// Level 2 instruction cache refill.
    L2I_CACHE_REFILL = 0x0028,
    /// Level 3 data cache allocation without refill.
    L3D_CACHE_ALLOCATE = 0x0029,
    /// Level 3 data cache refill.
    L3D_CACHE_REFILL = 0x002A,
    /// Level 3 data cache access.
    L3D_CACHE = 0x002B,
    /// Level 3 data cache write-back.
    L3D_CACHE_WB = 0x002C,
    /// Level 2 data TLB refill.
    L2D_TLB_REFILL = 0x002D,
    /// Level 2 instruction TLB refill.
    L2I_TLB_REFILL = 0x002E,
    /// Level 2 data TLB access.
    L2D_TLB = 0x002F,
    /// Level 2 instruction TLB access.
    L2I_TLB = 0x0030,
    /// Access to another socket in a multi-socket system.
    REMOTE_ACCESS = 0x0031,
    /// Last level cache access.
    LL_CACHE = 0x0032,
    /// Last level cache miss.
    LL_CACHE_MISS = 0x0033,
    /// Data TLB access with at least one translation table walk.
    DTLB_WALK = 0x0034,
    /// Instruction TLB access with at least one translation table walk.
    ITLB_WALK = 0x0035,
    /// Last level cache access, read.
    LL_CACHE_RD = 0x0036,
    /// Last level cache miss, read.
    LL_CACHE_MISS_RD = 0x0037,
    /// Access to another socket in a multi-socket system, read.
    REMOTE_ACCESS_RD = 0x0038,
    /// Level 1 data cache long-latency read miss.
    L1D_CACHE_LMISS_RD = 0x0039,
    /// Micro-operation architecturally executed.
    OP_RETIRED = 0x003A,
    /// Micro-operation speculatively executed.
    OP_SPEC = 0x003B,
    /// No operation sent for execution.
    STALL = 0x003C,
    /// No operation sent for execution on a slot, because of the backend.
    STALL_SLOT_BACKEND = 0x003D,
    /// No operation sent for execution on a slot, because of the frontend.
    STALL_SLOT_FRONTEND = 0x003E,
    /// No operation sent for execution on a slot.
    STALL_SLOT = 0x003F,
    /// Statistical Profiling sample population.
    SAMPLE_POP = 0x4000,
    /// Statistical Profiling sample taken.
    SAMPLE_FEED = 0x4001,
    /// Statistical Profiling sample taken and not removed by filtering.
    SAMPLE_FILTRATE = 0x4002,
    /// Statistical Profiling sample collided with a previous sample.
    SAMPLE_COLLISION = 0x4003,
    /// Constant frequency cycles (AMUv1).
    CNT_CYCLES = 0x4004,
    /// Memory stall cycles (AMUv1).
    STALL_BACKEND_MEM = 0x4005,
    /// Level 1 instruction cache long-latency miss.
    L1I_CACHE_LMISS = 0x4006,
    /// Level 2 data cache long-latency read miss.
    L2D_CACHE_LMISS_RD = 0x4009,
    /// Level 2 instruction cache long-latency miss.
    L2I_CACHE_LMISS = 0x400A,
    /// Level 3 data cache long-latency read miss.
    L3D_CACHE_LMISS_RD = 0x400B,
    /// Trace buffer current write pointer wrapped.
    TRB_WRAP = 0x400C,
    /// Trace buffer Trigger Event.
    TRB_TRIG = 0x400E,
    /// Trace unit external output 0.
    TRCEXTOUT0 = 0x4010,
    /// Trace unit external output 1.
    TRCEXTOUT1 = 0x4011,
    /// Trace unit external output 2.
    TRCEXTOUT2 = 0x4012,
    /// Trace unit external output 3.
    TRCEXTOUT3 = 0x4013,
    /// Cross-trigger interface output trigger 4.
    CTI_TRIGOUT4 = 0x4018,
    /// Cross-trigger interface output trigger 5.
    CTI_TRIGOUT5 = 0x4019,
    /// Cross-trigger interface output trigger 6.
    CTI_TRIGOUT6 = 0x401A,
    /// Cross-trigger interface output trigger 7.
    CTI_TRIGOUT7 = 0x401B,
    /// Access with additional latency from alignment.
    LDST_ALIGN_LAT = 0x4020,
    /// Load with additional latency from alignment.
    LD_ALIGN_LAT = 0x4021,
    /// Store with additional latency from alignment.
    ST_ALIGN_LAT = 0x4022,
    /// Checked data memory access (Memory Tagging).
    MEM_ACCESS_CHECKED = 0x4024,
    /// Checked data memory access, read (Memory Tagging).
    MEM_ACCESS_CHECKED_RD = 0x4025,
    /// Checked data memory access, write (Memory Tagging).
    MEM_ACCESS_CHECKED_WR = 0x4026,
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

    /// Numbers and names from include/linux/perf/arm_pmuv3.h
    /// (`ARMV8_PMUV3_PERFCTR_*`): every common event 0x00..=0x3F is named exactly once.
    #[test]
    fn common_event_table() {
        for n in 0..0x40u16 {
            let named = COMMON_EVENTS.iter().filter(|(e, _)| e.get() == n).count();
            assert_eq!(named, 1, "event {n:#x}");
        }
        for pair in COMMON_EVENTS.windows(2) {
            assert!(pair[0].0 < pair[1].0, "table sorted and unique");
        }
        for &(number, name) in COMMON_EVENTS {
            assert!(number.is_common());
            assert_eq!(EventNumber::from_name(name), Some(number));
        }
        let spot = [
            (0x00, "SW_INCR"),
            (0x08, "INST_RETIRED"),
            (0x11, "CPU_CYCLES"),
            (0x13, "MEM_ACCESS"),
            (0x1D, "BUS_CYCLES"),
            (0x21, "BR_RETIRED"),
            (0x22, "BR_MIS_PRED_RETIRED"),
            (0x23, "STALL_FRONTEND"),
            (0x24, "STALL_BACKEND"),
            (0x2D, "L2D_TLB_REFILL"),
            (0x2F, "L2D_TLB"),
            (0x32, "LL_CACHE"),
            (0x33, "LL_CACHE_MISS"),
            (0x36, "LL_CACHE_RD"),
            (0x37, "LL_CACHE_MISS_RD"),
            (0x3F, "STALL_SLOT"),
        ];
        for (number, name) in spot {
            assert_eq!(EventNumber::new(number).name(), Some(name));
        }
        assert_eq!(EventNumber::new(0x40).name(), None);
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
