//! AMD events: the [`AmdEvent`] encoding (the event fields of PERF_CTLn) and the events
//! generic names map to.
//!
//! Source: AMD PPR for family 17h and 19h processors, "Core Performance Monitor Counters"
//! (PMCx076 Cycles not in Halt, PMCx0C0 Retired Instructions, PMCx0C2 Retired Branch
//! Instructions, PMCx0C3 Retired Branch Instructions Mispredicted; the same numbers since
//! the family 10h/15h BKDGs); Linux's `amd_perfmon_event_map` uses the same four.
//! Cache and stall events differ between families and are left to raw codes.

use pmu_core::{Error, EventEncoding, GenericEvent};

/// An AMD core event: EventSelect\[7:0\] | UnitMask << 8 | E << 18 | INV << 23 |
/// CntMask << 24 | EventSelect\[11:8\] << 32, as a `u64` in the PERF_CTLn layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AmdEvent(u64);

impl AmdEvent {
    /// The bits of PERF_CTLn an event may set.
    pub const EVENT_FIELDS: u64 = 0xF_FF84_FFFF;

    /// PMCx076 Cycles not in Halt.
    pub const CYCLES_NOT_IN_HALT: Self = Self(0x076);
    /// PMCx0C0 Retired Instructions.
    pub const RETIRED_INSTRUCTIONS: Self = Self(0x0C0);
    /// PMCx0C2 Retired Branch Instructions.
    pub const RETIRED_BRANCH_INSTRUCTIONS: Self = Self(0x0C2);
    /// PMCx0C3 Retired Branch Instructions Mispredicted.
    pub const RETIRED_BRANCH_INSTRUCTIONS_MISPREDICTED: Self = Self(0x0C3);

    /// Event `event_select` (12 bits, as the PPR numbers it: PMCxNNN) with `umask`.
    ///
    /// # Errors
    /// [`Error::RawEventOutOfRange`] when `event_select` does not fit 12 bits.
    pub const fn new(event_select: u16, umask: u8) -> Result<Self, Error> {
        if event_select > 0xFFF {
            return Err(Error::RawEventOutOfRange {
                raw: event_select as u64,
                max: 0xFFF,
            });
        }
        let lo = (event_select & 0xFF) as u64;
        let hi = (event_select >> 8) as u64;
        Ok(Self(lo | (umask as u64) << 8 | hi << 32))
    }

    /// The 12-bit event select.
    pub const fn event_select(self) -> u16 {
        (self.0 & 0xFF) as u16 | ((((self.0 >> 32) & 0xF) as u16) << 8)
    }

    /// The unit mask.
    pub const fn umask(self) -> u8 {
        (self.0 >> 8) as u8
    }

    /// The bits, in the PERF_CTLn layout.
    pub const fn bits(self) -> u64 {
        self.0
    }
}

impl EventEncoding for AmdEvent {
    fn from_generic(event: GenericEvent) -> Option<Self> {
        match event {
            GenericEvent::CpuCycles => Some(Self::CYCLES_NOT_IN_HALT),
            GenericEvent::Instructions => Some(Self::RETIRED_INSTRUCTIONS),
            GenericEvent::BranchInstructions => Some(Self::RETIRED_BRANCH_INSTRUCTIONS),
            GenericEvent::BranchMisses => Some(Self::RETIRED_BRANCH_INSTRUCTIONS_MISPREDICTED),
            _ => None,
        }
    }

    /// Accepts only the event fields; USR, OS, INT, EN, GuestOnly, HostOnly and reserved
    /// bits are the PMU's to set.
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

    /// PPR 17h/19h event numbers of the generic events, and the generic events AMD has
    /// no family-independent number for.
    #[test]
    fn generic_mapping() {
        let code = |g| AmdEvent::from_generic(g).map(AmdEvent::bits);
        assert_eq!(code(GenericEvent::CpuCycles), Some(0x76));
        assert_eq!(code(GenericEvent::Instructions), Some(0xC0));
        assert_eq!(code(GenericEvent::BranchInstructions), Some(0xC2));
        assert_eq!(code(GenericEvent::BranchMisses), Some(0xC3));
        assert_eq!(
            AmdEvent::encode(Event::Generic(GenericEvent::RefCycles)),
            Err(Error::EventNotEncodable {
                event: GenericEvent::RefCycles
            })
        );
    }

    /// Zen 2's RETIRED_SSE_AVX_FLOPS:MULT_FLOPS, as perf tools open it by name: PMCx003
    /// with unit mask bit 1 (MultFLOPs) in the family 17h PPR and in libpfm4's
    /// amd64_fam17h_zen2 table the name comes from. It encodes and round-trips.
    #[test]
    fn zen2_mult_flops_event() {
        let mult = AmdEvent::new(0x003, 0x02).unwrap();
        assert_eq!(mult.bits(), 0x0203);
        assert_eq!(AmdEvent::from_raw(0x0203), Ok(mult));
        assert_eq!((mult.event_select(), mult.umask()), (0x003, 0x02));
    }

    /// APM Vol. 2 PerfEvtSeln: EventSelect is 12 bits (7:0 and 35:32); USR, OS, INT, EN,
    /// GuestOnly, HostOnly and reserved bit 36 are not event fields.
    #[test]
    fn raw_and_range_checks() {
        let high = AmdEvent::new(0x1C0, 0).unwrap();
        assert_eq!(high.bits(), 0x1_0000_00C0);
        assert_eq!(high.event_select(), 0x1C0);
        assert_eq!(
            AmdEvent::new(0x1000, 0),
            Err(Error::RawEventOutOfRange {
                raw: 0x1000,
                max: 0xFFF
            })
        );
        for bad in [
            1 << 16,
            1 << 17,
            1 << 20,
            1 << 22,
            1 << 40,
            1 << 41,
            1 << 36,
        ] {
            assert_eq!(
                AmdEvent::from_raw(0x76 | bad),
                Err(Error::RawEventOutOfRange {
                    raw: 0x76 | bad,
                    max: AmdEvent::EVENT_FIELDS
                })
            );
        }
        assert!(AmdEvent::from_raw(0xF_FF84_FFFF).is_ok());
    }
}
