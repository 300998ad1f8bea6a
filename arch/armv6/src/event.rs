//! The ARM1176 event table: what CR0 and CR1 can count.
//!
//! Source: ARM1176JZF-S Technical Reference Manual (ARM DDI 0301H), Table 3-137
//! "Performance monitoring events", cross-checked with Linux's `enum armv6_perf_types`
//! (drivers/perf/arm_v6_pmu.c in 6.12; arch/arm/kernel/perf_event_v6.c before 6.7),
//! which lists 0x00-0x12 and 0xFF and uses 0x20 only as its "NOP" event.
//!
//! There are 24 selectable events plus 0xFF (one increment per cycle). 0x08 and 0x0E,
//! 0x13-0x1F and 0x27-0xFE are reserved. (Some Raspberry Pi 1 write-ups count "21
//! events"; Table 3-137 has 24.)
//!
//! Each event's name and meaning are `pmu_events::arm1176`'s ([`Arm1176Event::event`]):
//! that table is where every tool looks an event up; this enum is what the PMU code
//! programs, and a test checks the two agree code by code.
//!
//! The generic mapping follows Linux's `armv6_perf_map` and `armv6_perf_cache_map`, so
//! numbers agree with `perf stat` on the same board.

use core::fmt;

use pmu_core::{Error, EventEncoding, GenericEvent};
use pmu_events::arm1176;

/// One entry of the ARM1176 event table (the value of PMCR.EvtCount0 / EvtCount1).
///
/// Every value of this type is an event the ARM1176 implements: reserved codes cannot be
/// represented, so [`EventEncoding::from_raw`] is where they are rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Arm1176Event {
    /// 0x00: instruction cache miss to a cacheable location (needs an external fetch).
    InstructionCacheMiss = 0x00,
    /// 0x01: stall because the instruction buffer cannot deliver an instruction (an
    /// instruction cache or instruction MicroTLB miss); counts every stalled cycle.
    InstructionBufferStall = 0x01,
    /// 0x02: stall because of a data dependency; counts every stalled cycle.
    DataDependencyStall = 0x02,
    /// 0x03: instruction MicroTLB miss.
    InstructionMicroTlbMiss = 0x03,
    /// 0x04: data MicroTLB miss.
    DataMicroTlbMiss = 0x04,
    /// 0x05: branch instruction executed (whether or not it changed the program flow).
    BranchExecuted = 0x05,
    /// 0x06: branch mispredicted.
    BranchMispredicted = 0x06,
    /// 0x07: instruction executed.
    InstructionExecuted = 0x07,
    /// 0x09: data cache access to a cacheable location, cache operations excluded.
    DataCacheAccessCacheable = 0x09,
    /// 0x0A: data cache access to any location, cacheable or not, cache operations
    /// excluded.
    DataCacheAccess = 0x0A,
    /// 0x0B: data cache miss, cache operations excluded.
    DataCacheMiss = 0x0B,
    /// 0x0C: data cache write-back; once per half line (four words) written back.
    DataCacheWriteBack = 0x0C,
    /// 0x0D: software changed the PC without a mode change.
    SoftwareChangedPc = 0x0D,
    /// 0x0F: main TLB miss.
    MainTlbMiss = 0x0F,
    /// 0x10: explicit external data or peripheral access.
    ExplicitExternalDataAccess = 0x10,
    /// 0x11: stall because the load/store unit request queue is full.
    LsuFullStall = 0x11,
    /// 0x12: the write buffer was drained (Data Synchronization Barrier or a Strongly
    /// Ordered operation).
    WriteBufferDrained = 0x12,
    /// 0x20: cycles with ETMEXTOUT\[0\] asserted. Linux parks unused counters here.
    EtmExtOut0 = 0x20,
    /// 0x21: cycles with ETMEXTOUT\[1\] asserted.
    EtmExtOut1 = 0x21,
    /// 0x22: ETMEXTOUT\[0\] plus ETMEXTOUT\[1\] (+2 when both are asserted).
    EtmExtOutSum = 0x22,
    /// 0x23: procedure call executed (return address pushed on the return stack).
    ProcedureCall = 0x23,
    /// 0x24: procedure return executed (return address popped off the return stack).
    ProcedureReturn = 0x24,
    /// 0x25: procedure return executed and its return address predicted.
    ReturnPredicted = 0x25,
    /// 0x26: procedure return executed and its return address mispredicted.
    ReturnMispredicted = 0x26,
    /// 0xFF: one increment every cycle (what the CCR counts).
    CycleCount = 0xFF,
}

impl Arm1176Event {
    /// The 24 selectable events of Table 3-137, by code, without 0xFF.
    pub const EVENTS: [Self; 24] = [
        Self::InstructionCacheMiss,
        Self::InstructionBufferStall,
        Self::DataDependencyStall,
        Self::InstructionMicroTlbMiss,
        Self::DataMicroTlbMiss,
        Self::BranchExecuted,
        Self::BranchMispredicted,
        Self::InstructionExecuted,
        Self::DataCacheAccessCacheable,
        Self::DataCacheAccess,
        Self::DataCacheMiss,
        Self::DataCacheWriteBack,
        Self::SoftwareChangedPc,
        Self::MainTlbMiss,
        Self::ExplicitExternalDataAccess,
        Self::LsuFullStall,
        Self::WriteBufferDrained,
        Self::EtmExtOut0,
        Self::EtmExtOut1,
        Self::EtmExtOutSum,
        Self::ProcedureCall,
        Self::ProcedureReturn,
        Self::ReturnPredicted,
        Self::ReturnMispredicted,
    ];

    /// The whole table: the 24 events and [`Arm1176Event::CycleCount`].
    pub const ALL: [Self; 25] = {
        let mut all = [Self::CycleCount; 25];
        let mut i = 0;
        while i < Self::EVENTS.len() {
            all[i] = Self::EVENTS[i];
            i += 1;
        }
        all
    };

    /// The event a stopped programmable counter is parked on (Linux's
    /// `ARMV6_PERFCTR_NOP`): ETMEXTOUT\[0\] is not asserted unless an ETM drives it, so
    /// the counter does not move. [`crate::Arm1176Pmu`] also keeps the stopped value
    /// aside, so even an asserted ETMEXTOUT\[0\] cannot change what it reports.
    pub const PARKED: Self = Self::EtmExtOut0;

    /// The event number (the 8-bit field value).
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The event with number `code`, `None` for a reserved number.
    pub const fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0x00 => Self::InstructionCacheMiss,
            0x01 => Self::InstructionBufferStall,
            0x02 => Self::DataDependencyStall,
            0x03 => Self::InstructionMicroTlbMiss,
            0x04 => Self::DataMicroTlbMiss,
            0x05 => Self::BranchExecuted,
            0x06 => Self::BranchMispredicted,
            0x07 => Self::InstructionExecuted,
            0x09 => Self::DataCacheAccessCacheable,
            0x0A => Self::DataCacheAccess,
            0x0B => Self::DataCacheMiss,
            0x0C => Self::DataCacheWriteBack,
            0x0D => Self::SoftwareChangedPc,
            0x0F => Self::MainTlbMiss,
            0x10 => Self::ExplicitExternalDataAccess,
            0x11 => Self::LsuFullStall,
            0x12 => Self::WriteBufferDrained,
            0x20 => Self::EtmExtOut0,
            0x21 => Self::EtmExtOut1,
            0x22 => Self::EtmExtOutSum,
            0x23 => Self::ProcedureCall,
            0x24 => Self::ProcedureReturn,
            0x25 => Self::ReturnPredicted,
            0x26 => Self::ReturnMispredicted,
            0xFF => Self::CycleCount,
            _ => return None,
        })
    }

    /// The event's entry in the ARM1176 table of `pmu_events`: its name and meaning.
    pub const fn event(self) -> &'static pmu_events::Event {
        match self {
            Self::InstructionCacheMiss => &arm1176::ICACHE_MISS,
            Self::InstructionBufferStall => &arm1176::IBUF_STALL,
            Self::DataDependencyStall => &arm1176::DDEP_STALL,
            Self::InstructionMicroTlbMiss => &arm1176::ITLB_MISS,
            Self::DataMicroTlbMiss => &arm1176::DTLB_MISS,
            Self::BranchExecuted => &arm1176::BR_EXEC,
            Self::BranchMispredicted => &arm1176::BR_MISPREDICT,
            Self::InstructionExecuted => &arm1176::INSTR_EXEC,
            Self::DataCacheAccessCacheable => &arm1176::DCACHE_HIT,
            Self::DataCacheAccess => &arm1176::DCACHE_ACCESS,
            Self::DataCacheMiss => &arm1176::DCACHE_MISS,
            Self::DataCacheWriteBack => &arm1176::DCACHE_WBACK,
            Self::SoftwareChangedPc => &arm1176::SW_PC_CHANGE,
            Self::MainTlbMiss => &arm1176::MAIN_TLB_MISS,
            Self::ExplicitExternalDataAccess => &arm1176::EXPL_D_ACCESS,
            Self::LsuFullStall => &arm1176::LSU_FULL_STALL,
            Self::WriteBufferDrained => &arm1176::WBUF_DRAINED,
            Self::EtmExtOut0 => &arm1176::ETMEXTOUT0,
            Self::EtmExtOut1 => &arm1176::ETMEXTOUT1,
            Self::EtmExtOutSum => &arm1176::ETMEXTOUT_SUM,
            Self::ProcedureCall => &arm1176::PROC_CALL_EXEC,
            Self::ProcedureReturn => &arm1176::PROC_RET_EXEC,
            Self::ReturnPredicted => &arm1176::PROC_RET_PRED,
            Self::ReturnMispredicted => &arm1176::PROC_RET_MISPREDICT,
            Self::CycleCount => &arm1176::CPU_CYCLES,
        }
    }

    /// The event's name (`INSTR_EXEC`), as Linux's `armv6_perf_types` spells it where
    /// Linux names the event.
    pub const fn name(self) -> &'static str {
        self.event().name
    }

    /// What the event counts, in one line.
    pub const fn description(self) -> &'static str {
        self.event().about
    }
}

impl fmt::Display for Arm1176Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#04x} {}", self.code(), self.name())
    }
}

impl TryFrom<u8> for Arm1176Event {
    type Error = Error;

    /// # Errors
    /// [`Error::EventNotImplemented`] for a reserved number.
    fn try_from(code: u8) -> Result<Self, Error> {
        Self::from_code(code).ok_or(Error::EventNotImplemented {
            code: u64::from(code),
        })
    }
}

impl EventEncoding for Arm1176Event {
    /// Linux's `armv6_perf_map` / `armv6_perf_cache_map`:
    ///
    /// - `L1-dcache-loads` is 0x0A (every data cache access), not 0x09 (cacheable
    ///   locations only): the ARM1176 looks every access up in the data cache, and Linux
    ///   counts 0x0A, so both report the same number;
    /// - `dTLB-load-misses` is the data MicroTLB miss (0x04); main TLB misses (0x0F)
    ///   are a raw event, as in Linux;
    /// - the stall events are Linux's: front end 0x01, back end 0x11;
    /// - the ARM1176 has no last-level cache, bus-cycle or reference-cycle event.
    fn from_generic(event: GenericEvent) -> Option<Self> {
        Some(match event {
            GenericEvent::CpuCycles => Self::CycleCount,
            GenericEvent::Instructions => Self::InstructionExecuted,
            GenericEvent::BranchInstructions => Self::BranchExecuted,
            GenericEvent::BranchMisses => Self::BranchMispredicted,
            GenericEvent::L1iRefill => Self::InstructionCacheMiss,
            GenericEvent::L1dRefill => Self::DataCacheMiss,
            GenericEvent::L1dAccess => Self::DataCacheAccess,
            GenericEvent::DtlbRefill => Self::DataMicroTlbMiss,
            GenericEvent::StalledCyclesFrontend => Self::InstructionBufferStall,
            GenericEvent::StalledCyclesBackend => Self::LsuFullStall,
            _ => return None,
        })
    }

    /// A raw event number.
    ///
    /// # Errors
    /// - [`Error::RawEventOutOfRange`] (`max: 0xFF`) when `raw` does not fit the 8-bit
    ///   EvtCount field;
    /// - [`Error::EventNotImplemented`] for a reserved number that fits (0x08, 0x0E,
    ///   0x13-0x1F, 0x27-0xFE): the field could hold it, the ARM1176 implements no such
    ///   event, and the TRM leaves the result of selecting it undefined.
    fn from_raw(raw: u64) -> Result<Self, Error> {
        let code = u8::try_from(raw).map_err(|_| Error::RawEventOutOfRange { raw, max: 0xFF })?;
        Self::try_from(code)
    }

    fn code(self) -> u64 {
        u64::from(self as u8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmu_core::Event;

    /// ARM1176 TRM Table 3-137 (24 events, not the "21" some write-ups count):
    /// 0x00-0x07, 0x09-0x0D, 0x0F-0x12, 0x20-0x26 are events, plus 0xFF.
    #[test]
    fn table_has_24_events_plus_cycle_count() {
        let expected: [u8; 24] = [
            0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0F,
            0x10, 0x11, 0x12, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26,
        ];
        assert_eq!(Arm1176Event::EVENTS.map(Arm1176Event::code), expected);
        assert_eq!(Arm1176Event::ALL.len(), 25);
        assert_eq!(Arm1176Event::ALL[24], Arm1176Event::CycleCount);
        // Exactly 25 of the 256 field values decode, and they round-trip.
        let decoded = (0..=255u8)
            .filter_map(Arm1176Event::from_code)
            .inspect(|e| assert_eq!(Arm1176Event::from_code(e.code()), Some(*e)))
            .count();
        assert_eq!(decoded, 25);
        assert_eq!(
            Arm1176Event::from_code(0xFF),
            Some(Arm1176Event::CycleCount)
        );
    }

    /// This enum and the `pmu_events` ARM1176 table (TRM Table 3-137) are the same
    /// events, code by code: every variant's entry has its code, and every table entry
    /// decodes to the variant whose entry it is.
    #[test]
    fn agrees_with_the_pmu_events_table_code_by_code() {
        let table = pmu_events::arm1176::ARM1176.events;
        assert_eq!(table.len(), Arm1176Event::ALL.len());
        for event in Arm1176Event::ALL {
            assert_eq!(event.event().code, u16::from(event.code()), "{event}");
        }
        for entry in table {
            let code = u8::try_from(entry.code).expect("ARM1176 codes fit EvtCount's 8 bits");
            let event = Arm1176Event::from_code(code).expect("every table entry is an event");
            assert_eq!(event.event(), entry, "{code:#x}");
        }
        assert_eq!(Arm1176Event::InstructionExecuted.name(), "INSTR_EXEC");
        assert_eq!(Arm1176Event::PARKED.name(), "ETMEXTOUT0");
    }

    /// The numbers Linux names in `enum armv6_perf_types`
    /// (drivers/perf/arm_v6_pmu.c, Linux 6.12).
    #[test]
    fn linux_armv6_perf_types_agree() {
        let linux: [(u8, Arm1176Event); 19] = [
            (0x0, Arm1176Event::InstructionCacheMiss),    // ICACHE_MISS
            (0x1, Arm1176Event::InstructionBufferStall),  // IBUF_STALL
            (0x2, Arm1176Event::DataDependencyStall),     // DDEP_STALL
            (0x3, Arm1176Event::InstructionMicroTlbMiss), // ITLB_MISS
            (0x4, Arm1176Event::DataMicroTlbMiss),        // DTLB_MISS
            (0x5, Arm1176Event::BranchExecuted),          // BR_EXEC
            (0x6, Arm1176Event::BranchMispredicted),      // BR_MISPREDICT
            (0x7, Arm1176Event::InstructionExecuted),     // INSTR_EXEC
            (0x9, Arm1176Event::DataCacheAccessCacheable), // DCACHE_HIT
            (0xA, Arm1176Event::DataCacheAccess),         // DCACHE_ACCESS
            (0xB, Arm1176Event::DataCacheMiss),           // DCACHE_MISS
            (0xC, Arm1176Event::DataCacheWriteBack),      // DCACHE_WBACK
            (0xD, Arm1176Event::SoftwareChangedPc),       // SW_PC_CHANGE
            (0xF, Arm1176Event::MainTlbMiss),             // MAIN_TLB_MISS
            (0x10, Arm1176Event::ExplicitExternalDataAccess), // EXPL_D_ACCESS
            (0x11, Arm1176Event::LsuFullStall),           // LSU_FULL_STALL
            (0x12, Arm1176Event::WriteBufferDrained),     // WBUF_DRAINED
            (0xFF, Arm1176Event::CycleCount),             // CPU_CYCLES
            (0x20, Arm1176Event::PARKED),                 // NOP
        ];
        for (code, event) in linux {
            assert_eq!(Arm1176Event::from_code(code), Some(event), "{code:#x}");
        }
    }

    /// Reserved numbers are typed errors, never a panic (TRM Table 3-137 gaps).
    #[test]
    fn reserved_and_oversized_codes_are_rejected() {
        for code in [0x08u64, 0x0E, 0x13, 0x1F, 0x27, 0xFE] {
            assert_eq!(
                Arm1176Event::from_raw(code),
                Err(Error::EventNotImplemented { code }),
                "{code:#x}"
            );
        }
        assert_eq!(
            Arm1176Event::from_raw(0x100),
            Err(Error::RawEventOutOfRange {
                raw: 0x100,
                max: 0xFF
            })
        );
        assert_eq!(
            Arm1176Event::from_raw(u64::MAX),
            Err(Error::RawEventOutOfRange {
                raw: u64::MAX,
                max: 0xFF
            })
        );
        assert_eq!(
            Arm1176Event::encode(Event::Raw(0x0B)),
            Ok(Arm1176Event::DataCacheMiss)
        );
    }

    /// Generic events as Linux maps them (`armv6_perf_map`, `armv6_perf_cache_map` in
    /// drivers/perf/arm_v6_pmu.c).
    #[test]
    fn generic_mapping_follows_linux() {
        let map = [
            (GenericEvent::CpuCycles, 0xFF),
            (GenericEvent::Instructions, 0x07),
            (GenericEvent::BranchInstructions, 0x05),
            (GenericEvent::BranchMisses, 0x06),
            (GenericEvent::L1iRefill, 0x00),
            (GenericEvent::L1dRefill, 0x0B),
            (GenericEvent::L1dAccess, 0x0A),
            (GenericEvent::DtlbRefill, 0x04),
            (GenericEvent::StalledCyclesFrontend, 0x01),
            (GenericEvent::StalledCyclesBackend, 0x11),
        ];
        for (generic, code) in map {
            assert_eq!(
                Arm1176Event::from_generic(generic).map(Arm1176Event::code),
                Some(code),
                "{generic}"
            );
        }
        for generic in [
            GenericEvent::CacheReferences,
            GenericEvent::CacheMisses,
            GenericEvent::BusCycles,
            GenericEvent::RefCycles,
        ] {
            assert_eq!(
                Arm1176Event::encode(generic.into()),
                Err(Error::EventNotEncodable { event: generic })
            );
        }
    }
}
