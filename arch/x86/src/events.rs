//! Intel events: the architectural events of CPUID leaf 0AH and the [`IntelEvent`]
//! encoding (the event fields of IA32_PERFEVTSELx).
//!
//! Source: SDM Vol. 3B, "Pre-defined Architectural Performance Events" (the table of
//! event name, EBX bit, event select and UMask), and "Fixed-function performance
//! counters" for what IA32_FIXED_CTR0-3 count.

use core::fmt;

use pmu_core::{Error, EventEncoding, GenericEvent};

use crate::ia32_perfevtsel::IA32_PERFEVTSEL;

/// The architectural performance events, in the order of their CPUID.0AH:EBX bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArchEvent {
    /// UnHalted Core Cycles: 3CH / 00H, EBX bit 0.
    UnhaltedCoreCycles,
    /// Instruction Retired: C0H / 00H, EBX bit 1.
    InstructionsRetired,
    /// UnHalted Reference Cycles: 3CH / 01H, EBX bit 2.
    UnhaltedReferenceCycles,
    /// LLC Reference: 2EH / 4FH, EBX bit 3.
    LlcReference,
    /// LLC Misses: 2EH / 41H, EBX bit 4.
    LlcMisses,
    /// Branch Instruction Retired: C4H / 00H, EBX bit 5.
    BranchInstructionsRetired,
    /// Branch Misses Retired: C5H / 00H, EBX bit 6.
    BranchMissesRetired,
    /// Topdown Slots: A4H / 01H, EBX bit 7.
    TopdownSlots,
}

impl ArchEvent {
    /// All eight, in EBX bit order.
    pub const ALL: [ArchEvent; 8] = [
        Self::UnhaltedCoreCycles,
        Self::InstructionsRetired,
        Self::UnhaltedReferenceCycles,
        Self::LlcReference,
        Self::LlcMisses,
        Self::BranchInstructionsRetired,
        Self::BranchMissesRetired,
        Self::TopdownSlots,
    ];

    /// The CPUID.0AH:EBX bit that says (when set) the event is not available.
    pub const fn ebx_bit(self) -> u8 {
        self as u8
    }

    /// Event select (IA32_PERFEVTSELx\[7:0\]).
    pub const fn event_select(self) -> u8 {
        match self {
            Self::UnhaltedCoreCycles | Self::UnhaltedReferenceCycles => 0x3C,
            Self::InstructionsRetired => 0xC0,
            Self::LlcReference | Self::LlcMisses => 0x2E,
            Self::BranchInstructionsRetired => 0xC4,
            Self::BranchMissesRetired => 0xC5,
            Self::TopdownSlots => 0xA4,
        }
    }

    /// Unit mask (IA32_PERFEVTSELx\[15:8\]).
    pub const fn umask(self) -> u8 {
        match self {
            Self::UnhaltedCoreCycles
            | Self::InstructionsRetired
            | Self::BranchInstructionsRetired
            | Self::BranchMissesRetired => 0x00,
            Self::UnhaltedReferenceCycles | Self::TopdownSlots => 0x01,
            Self::LlcReference => 0x4F,
            Self::LlcMisses => 0x41,
        }
    }

    /// The name the SDM's table gives.
    pub const fn name(self) -> &'static str {
        match self {
            Self::UnhaltedCoreCycles => "UnHalted Core Cycles",
            Self::InstructionsRetired => "Instruction Retired",
            Self::UnhaltedReferenceCycles => "UnHalted Reference Cycles",
            Self::LlcReference => "LLC Reference",
            Self::LlcMisses => "LLC Misses",
            Self::BranchInstructionsRetired => "Branch Instruction Retired",
            Self::BranchMissesRetired => "Branch Misses Retired",
            Self::TopdownSlots => "Topdown Slots",
        }
    }

    /// The encoding to program on a general-purpose counter.
    pub const fn event(self) -> IntelEvent {
        IntelEvent::new(self.event_select(), self.umask())
    }

    /// The generic event this is, if any (Linux's `intel_perfmon_event_map` makes the same
    /// choices for the first seven).
    pub const fn generic(self) -> Option<GenericEvent> {
        match self {
            Self::UnhaltedCoreCycles => Some(GenericEvent::CpuCycles),
            Self::InstructionsRetired => Some(GenericEvent::Instructions),
            Self::UnhaltedReferenceCycles => Some(GenericEvent::RefCycles),
            Self::LlcReference => Some(GenericEvent::CacheReferences),
            Self::LlcMisses => Some(GenericEvent::CacheMisses),
            Self::BranchInstructionsRetired => Some(GenericEvent::BranchInstructions),
            Self::BranchMissesRetired => Some(GenericEvent::BranchMisses),
            Self::TopdownSlots => None,
        }
    }

    /// The architectural event for `generic`, `None` for the model-specific ones (L1,
    /// TLB, stalls, bus cycles: use a raw event from the SDM's model tables).
    pub const fn from_generic(generic: GenericEvent) -> Option<Self> {
        match generic {
            GenericEvent::CpuCycles => Some(Self::UnhaltedCoreCycles),
            GenericEvent::Instructions => Some(Self::InstructionsRetired),
            GenericEvent::RefCycles => Some(Self::UnhaltedReferenceCycles),
            GenericEvent::CacheReferences => Some(Self::LlcReference),
            GenericEvent::CacheMisses => Some(Self::LlcMisses),
            GenericEvent::BranchInstructions => Some(Self::BranchInstructionsRetired),
            GenericEvent::BranchMisses => Some(Self::BranchMissesRetired),
            _ => None,
        }
    }

    /// The architectural event `event` encodes exactly (no edge, invert or counter mask).
    pub fn from_event(event: IntelEvent) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.event() == event)
    }
}

impl fmt::Display for ArchEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What fixed-function counter `index` counts, by the name the SDM gives it, with the
/// generic event it is.
///
/// IA32_FIXED_CTR0 INST_RETIRED.ANY, IA32_FIXED_CTR1 CPU_CLK_UNHALTED.CORE (also
/// `.THREAD`), IA32_FIXED_CTR2 CPU_CLK_UNHALTED.REF_TSC, IA32_FIXED_CTR3 TOPDOWN.SLOTS.
pub const fn fixed_counter_event(index: u8) -> Option<(&'static str, Option<GenericEvent>)> {
    match index {
        0 => Some(("INST_RETIRED.ANY", Some(GenericEvent::Instructions))),
        1 => Some(("CPU_CLK_UNHALTED.CORE", Some(GenericEvent::CpuCycles))),
        // Counts at the TSC rate. The general-purpose "UnHalted Reference Cycles" counts
        // at a constant reference rate that is not the TSC rate on every model, which is
        // why Linux counts its `ref-cycles` on this fixed counter only.
        2 => Some(("CPU_CLK_UNHALTED.REF_TSC", Some(GenericEvent::RefCycles))),
        3 => Some(("TOPDOWN.SLOTS", None)),
        _ => None,
    }
}

/// An Intel event: the event fields of IA32_PERFEVTSELx (EventSelect 7:0, UMask 15:8,
/// E 18, INV 23, CMASK 31:24) as a `u64` in that register's layout.
///
/// The privilege bits (USR, OS), EN, INT, PC and ANY are not part of an event: the PMU sets
/// them. A raw event with any of them, or with a bit above 31, is rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IntelEvent(u64);

impl IntelEvent {
    /// The bits of IA32_PERFEVTSELx an event may set.
    pub const EVENT_FIELDS: u64 = IA32_PERFEVTSEL::EventSelect.mask
        << IA32_PERFEVTSEL::EventSelect.shift
        | IA32_PERFEVTSEL::UMask.mask << IA32_PERFEVTSEL::UMask.shift
        | IA32_PERFEVTSEL::E.mask << IA32_PERFEVTSEL::E.shift
        | IA32_PERFEVTSEL::INV.mask << IA32_PERFEVTSEL::INV.shift
        | IA32_PERFEVTSEL::CMASK.mask << IA32_PERFEVTSEL::CMASK.shift;

    /// Event select `event_select` with unit mask `umask`.
    pub const fn new(event_select: u8, umask: u8) -> Self {
        Self(event_select as u64 | (umask as u64) << 8)
    }

    /// The same event counted only in cycles where it occurs at least `cmask` times
    /// (CMASK, bits 31:24; 0 counts every occurrence).
    pub const fn with_cmask(self, cmask: u8) -> Self {
        Self(self.0 & !(0xFF << 24) | (cmask as u64) << 24)
    }

    /// The same event with the counter-mask comparison inverted (INV, bit 23).
    pub const fn inverted(self) -> Self {
        Self(self.0 | 1 << 23)
    }

    /// The same event counting rising edges of the condition (E, bit 18).
    pub const fn edge(self) -> Self {
        Self(self.0 | 1 << 18)
    }

    /// The event select (bits 7:0).
    pub const fn event_select(self) -> u8 {
        self.0 as u8
    }

    /// The unit mask (bits 15:8).
    pub const fn umask(self) -> u8 {
        (self.0 >> 8) as u8
    }

    /// The bits, in the IA32_PERFEVTSELx layout.
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// The architectural event this is, if it is one.
    pub fn architectural(self) -> Option<ArchEvent> {
        ArchEvent::from_event(self)
    }
}

impl EventEncoding for IntelEvent {
    fn from_generic(event: GenericEvent) -> Option<Self> {
        ArchEvent::from_generic(event).map(ArchEvent::event)
    }

    /// Accepts EventSelect | UMask << 8 | E << 18 | INV << 23 | CMASK << 24, as the SDM's
    /// event tables and Linux's `cpu/event=…,umask=…/` give them.
    fn from_raw(raw: u64) -> Result<Self, Error> {
        if raw & !Self::EVENT_FIELDS == 0 {
            Ok(Self(raw))
        } else {
            Err(Error::RawEventOutOfRange {
                raw,
                max: Self::EVENT_FIELDS,
            })
        }
    }

    fn code(self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmu_core::Event;

    /// SDM Vol. 3B, "Pre-defined Architectural Performance Events": event select and
    /// UMask of the eight events, in EBX bit order.
    #[test]
    fn architectural_event_table() {
        let table: [(u8, u8); 8] = [
            (0x3C, 0x00),
            (0xC0, 0x00),
            (0x3C, 0x01),
            (0x2E, 0x4F),
            (0x2E, 0x41),
            (0xC4, 0x00),
            (0xC5, 0x00),
            (0xA4, 0x01),
        ];
        for (i, (e, (sel, umask))) in ArchEvent::ALL.into_iter().zip(table).enumerate() {
            assert_eq!(usize::from(e.ebx_bit()), i);
            assert_eq!((e.event_select(), e.umask()), (sel, umask), "{e}");
            assert_eq!(e.event().bits(), u64::from(sel) | u64::from(umask) << 8);
            assert_eq!(ArchEvent::from_event(e.event()), Some(e));
        }
    }

    /// Every generic event with an architectural encoding maps there and back; the rest
    /// are not encodable (pmu-core then says to use a raw event).
    #[test]
    fn generic_mapping() {
        let mut mapped = 0;
        for g in GenericEvent::ALL {
            match IntelEvent::from_generic(g) {
                Some(e) => {
                    mapped += 1;
                    assert_eq!(e.architectural().and_then(ArchEvent::generic), Some(g));
                }
                None => assert_eq!(
                    IntelEvent::encode(Event::Generic(g)),
                    Err(Error::EventNotEncodable { event: g })
                ),
            }
        }
        assert_eq!(mapped, 7);
        assert_eq!(
            IntelEvent::from_generic(GenericEvent::Instructions),
            Some(IntelEvent::new(0xC0, 0))
        );
    }

    /// Raw events carry only the event fields: MEM_LOAD_RETIRED.L1_MISS (D1H/08H,
    /// Skylake table of SDM Vol. 3B) and a CMASK/INV qualifier pass; USR (bit 16), EN
    /// (bit 22), INT (bit 20) and bits above 31 are rejected with a typed error.
    #[test]
    fn raw_events_are_checked() {
        assert_eq!(
            IntelEvent::from_raw(0x08D1),
            Ok(IntelEvent::new(0xD1, 0x08))
        );
        let stall = IntelEvent::new(0xA3, 0x04).with_cmask(4);
        assert_eq!(stall.bits(), 0x0400_04A3);
        assert_eq!(IntelEvent::from_raw(stall.bits()), Ok(stall));
        assert_eq!(
            IntelEvent::from_raw(0x0180_00C0),
            Ok(IntelEvent::new(0xC0, 0).with_cmask(1).inverted())
        );
        assert_eq!(IntelEvent::new(0xC0, 0).edge().bits(), 0x4_00C0);
        for bad in [
            1 << 16,
            1 << 17,
            1 << 19,
            1 << 20,
            1 << 21,
            1 << 22,
            1 << 32,
        ] {
            assert_eq!(
                IntelEvent::from_raw(0xC0 | bad),
                Err(Error::RawEventOutOfRange {
                    raw: 0xC0 | bad,
                    max: 0xFF84_FFFF
                })
            );
        }
    }

    /// SDM Vol. 3B, table of the fixed-function counters and the events they count.
    #[test]
    fn fixed_counter_names() {
        assert_eq!(
            fixed_counter_event(0),
            Some(("INST_RETIRED.ANY", Some(GenericEvent::Instructions)))
        );
        assert_eq!(
            fixed_counter_event(1).and_then(|f| f.1),
            Some(GenericEvent::CpuCycles)
        );
        assert_eq!(
            fixed_counter_event(2).and_then(|f| f.1),
            Some(GenericEvent::RefCycles)
        );
        assert_eq!(fixed_counter_event(3).map(|f| f.0), Some("TOPDOWN.SLOTS"));
        assert_eq!(fixed_counter_event(4), None);
    }
}
