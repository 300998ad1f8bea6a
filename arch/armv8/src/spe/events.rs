//! The SPE event bits shared by the Events packet, `PMSEVFR_EL1` and `PMSNEVFR_EL1`, and which
//! of them a filter can use at each SPE version.
//!
//! Sources: Arm ARM DDI 0487 M.a.a D18.2.6 (Events packet), D24.7.11 (PMSEVFR_EL1) and
//! D24.7.17 (PMSNEVFR_EL1) field descriptions; Linux 6.12
//! `arch/arm64/include/asm/sysreg.h` (`PMSEVFR_EL1_RES0_IMP/V1P1/V1P2`).
//!
//! The Arm ARM sorts every bit of the two filter registers into three kinds, per version:
//! - architected: the filter exists from that version on ([`SpeVersion::architected_filter_events`]);
//! - optional: the filter may exist, the implementation decides (IMPLEMENTATION DEFINED events,
//!   and before FEAT_SPEv1p4 the cache/TLB access events: "filtering on event N is optionally
//!   supported") ([`SpeVersion::optional_filter_mask`]);
//! - RAZ/WI: never filterable at that version ([`SpeVersion::unfilterable_mask`]).
//!
//! An optional bit has to be probed (write, read back: unsupported bits read as zero) before a
//! filter relies on it. Linux 6.12 still follows an older Arm ARM that had the optional bits as
//! RES0 before FEAT_SPEv1p4; the tests below show exactly where the two disagree.

use bitflags::bitflags;

use super::error::SpeError;
use super::version::SpeVersion;

bitflags! {
    /// Events of a sampled operation (Events packet `E[n]`), also the layout of `PMSEVFR_EL1`
    /// ("record only samples with all these events") and `PMSNEVFR_EL1` ("drop samples with
    /// any of these events"). Unnamed bits are IMPLEMENTATION DEFINED events; they are kept.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct SpeEvents: u64 {
        /// E\[0\]: generated exception. Never filterable (bit 0 of the filters is RAZ/WI).
        const EXCEPTION_GENERATED = 1 << 0;
        /// E\[1\]: architecturally retired (0: the operation was speculative).
        const RETIRED = 1 << 1;
        /// E\[2\]: level 1 data cache access. Filterable from FEAT_SPEv1p4, optional before.
        const L1D_ACCESS = 1 << 2;
        /// E\[3\]: level 1 data cache refill or miss.
        const L1D_REFILL = 1 << 3;
        /// E\[4\]: TLB access. Filterable from FEAT_SPEv1p4, optional before.
        const TLB_ACCESS = 1 << 4;
        /// E\[5\]: TLB walk (TLB miss that walked the translation tables).
        const TLB_WALK = 1 << 5;
        /// E\[6\]: conditional instruction or branch not taken. Filterable from FEAT_SPEv1p2.
        const NOT_TAKEN = 1 << 6;
        /// E\[7\]: mispredicted branch.
        const MISPREDICTED = 1 << 7;
        /// E\[8\]: last level cache access. Filterable from FEAT_SPEv1p4, optional before.
        const LLC_ACCESS = 1 << 8;
        /// E\[9\]: last level cache miss. Filterable from FEAT_SPEv1p4, optional before.
        const LLC_MISS = 1 << 9;
        /// E\[10\]: remote access (another socket/chip). Filterable from FEAT_SPEv1p4,
        /// optional before.
        const REMOTE_ACCESS = 1 << 10;
        /// E\[11\]: misaligned access. Requires FEAT_SPEv1p1.
        const MISALIGNED = 1 << 11;
        /// E\[16\]: transactional (FEAT_TME). Reads as zero in Arm ARM M.a.a; never filterable.
        const TRANSACTIONAL = 1 << 16;
        /// E\[17\]: partial or empty SVE predicate. Requires FEAT_SPEv1p1 and FEAT_SVE or FEAT_SME.
        const PARTIAL_PREDICATE = 1 << 17;
        /// E\[18\]: empty SVE predicate. Requires FEAT_SPEv1p1 and FEAT_SVE or FEAT_SME.
        const EMPTY_PREDICATE = 1 << 18;
        /// E\[19\]: level 2 data cache access. Requires FEAT_SPEv1p4.
        const L2D_ACCESS = 1 << 19;
        /// E\[20\]: level 2 data cache miss. Requires FEAT_SPEv1p4.
        const L2D_MISS = 1 << 20;
        /// E\[21\]: cache data modified. Requires FEAT_SPEv1p4.
        const CACHE_DATA_MODIFIED = 1 << 21;
        /// E\[22\]: recently fetched. Requires FEAT_SPEv1p4.
        const RECENTLY_FETCHED = 1 << 22;
        /// E\[23\]: data snooped. Requires FEAT_SPEv1p4.
        const DATA_SNOOPED = 1 << 23;
        /// E\[24\]: streaming SVE mode. Requires FEAT_SPE_SME.
        const STREAMING_SVE_MODE = 1 << 24;
        /// E\[25\]: SMCU or external coprocessor operation. Requires FEAT_SPE_SME.
        const SMCU = 1 << 25;
        // IMPLEMENTATION DEFINED events (12-15, 24-31 before FEAT_SPEv1p4, 48-63) stay in the value.
        const _ = !0;
    }
}

/// IMPLEMENTATION DEFINED events 15:12 (all versions).
const IMP_DEF_15_12: u64 = 0xF << 12;
/// IMPLEMENTATION DEFINED events 31:24 (only before FEAT_SPEv1p4).
const IMP_DEF_31_24: u64 = 0xFF << 24;
/// IMPLEMENTATION DEFINED events 63:48 (all versions).
const IMP_DEF_63_48: u64 = 0xFFFF << 48;

impl SpeVersion {
    /// Events the Arm ARM defines as filterable at this version (D24.7.11, D24.7.17).
    ///
    /// Some carry a further condition outside SPE: `RETIRED` needs a PE that samples
    /// speculative operations, the predicate events need FEAT_SVE or FEAT_SME, and the
    /// FEAT_SPEv1p4 events need the event itself to be implemented.
    pub const fn architected_filter_events(self) -> SpeEvents {
        let mut bits = SpeEvents::RETIRED.bits()
            | SpeEvents::L1D_REFILL.bits()
            | SpeEvents::TLB_WALK.bits()
            | SpeEvents::MISPREDICTED.bits();
        if self.pmsver() >= 2 {
            // FEAT_SPEv1p1: "E[11] When FEAT_SPEv1p1 is implemented", E[18:17] with SVE/SME.
            bits |= SpeEvents::MISALIGNED.bits()
                | SpeEvents::PARTIAL_PREDICATE.bits()
                | SpeEvents::EMPTY_PREDICATE.bits();
        }
        if self.pmsver() >= 3 {
            // FEAT_SPEv1p2 (FEAT_SPE_FnE): "E[6] When FEAT_SPE_FnE is implemented".
            bits |= SpeEvents::NOT_TAKEN.bits();
        }
        if self.pmsver() >= 5 {
            // FEAT_SPEv1p4: E[2], E[4], E[8..10] become architected, E[19..23] are new.
            bits |= SpeEvents::L1D_ACCESS.bits()
                | SpeEvents::TLB_ACCESS.bits()
                | SpeEvents::LLC_ACCESS.bits()
                | SpeEvents::LLC_MISS.bits()
                | SpeEvents::REMOTE_ACCESS.bits()
                | SpeEvents::L2D_ACCESS.bits()
                | SpeEvents::L2D_MISS.bits()
                | SpeEvents::CACHE_DATA_MODIFIED.bits()
                | SpeEvents::RECENTLY_FETCHED.bits()
                | SpeEvents::DATA_SNOOPED.bits();
        }
        SpeEvents::from_bits_retain(bits)
    }

    /// Filter bits the implementation may or may not support at this version: probe them
    /// (write, read back) before relying on them.
    pub const fn optional_filter_mask(self) -> u64 {
        let implementation_defined = IMP_DEF_15_12 | IMP_DEF_63_48;
        if self.pmsver() >= 5 {
            // FEAT_SPEv1p4: E[31:26] become RAZ/WI; E[25:24] need FEAT_SPE_SME.
            implementation_defined | SpeEvents::STREAMING_SVE_MODE.bits() | SpeEvents::SMCU.bits()
        } else {
            // "When (FEAT_SPEv1p4 is implemented or filtering on event N is optionally
            // supported)" for N = 2, 4, 8, 9, 10; E[31:24] IMPLEMENTATION DEFINED.
            implementation_defined
                | IMP_DEF_31_24
                | SpeEvents::L1D_ACCESS.bits()
                | SpeEvents::TLB_ACCESS.bits()
                | SpeEvents::LLC_ACCESS.bits()
                | SpeEvents::LLC_MISS.bits()
                | SpeEvents::REMOTE_ACCESS.bits()
        }
    }

    /// Filter bits that are RAZ/WI at this version: a filter on them is silently ignored.
    /// Always includes bit 0 (generated exception), bit 16 and bits \[47:32\].
    pub const fn unfilterable_mask(self) -> u64 {
        !(self.architected_filter_events().bits() | self.optional_filter_mask())
    }
}

/// How a set of filter events fares at one SPE version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventFilterSupport {
    /// Events the architecture makes filterable at this version.
    pub architected: SpeEvents,
    /// Events that are filterable only if the implementation chose to support them.
    pub optional: SpeEvents,
    /// Events that can never be filtered at this version (RAZ/WI).
    pub unfilterable: SpeEvents,
}

/// Sorts `events` by whether a `PMSEVFR_EL1`/`PMSNEVFR_EL1` filter on them can work at `version`.
pub const fn classify_event_filter(version: SpeVersion, events: SpeEvents) -> EventFilterSupport {
    let bits = events.bits();
    EventFilterSupport {
        architected: SpeEvents::from_bits_retain(bits & version.architected_filter_events().bits()),
        optional: SpeEvents::from_bits_retain(bits & version.optional_filter_mask()),
        unfilterable: SpeEvents::from_bits_retain(bits & version.unfilterable_mask()),
    }
}

/// Rejects filter events that are RAZ/WI at `version`; architected and optional ones pass.
pub const fn check_event_filter(version: SpeVersion, events: SpeEvents) -> Result<(), SpeError> {
    let bad = events.bits() & version.unfilterable_mask();
    if bad == 0 {
        Ok(())
    } else {
        Err(SpeError::EventsNotFilterable { version, bits: bad })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VERSIONS: [SpeVersion; 7] = [
        SpeVersion::V1p0,
        SpeVersion::V1p1,
        SpeVersion::V1p2,
        SpeVersion::V1p3,
        SpeVersion::V1p4,
        SpeVersion::V1p5,
        SpeVersion::Newer(9),
    ];

    /// Event bit positions, Arm ARM M.a.a D18.2.6 and D24.7.11 (PMSEVFR_EL1).
    #[test]
    fn event_bit_positions() {
        let table = [
            (SpeEvents::EXCEPTION_GENERATED, 0),
            (SpeEvents::RETIRED, 1),
            (SpeEvents::L1D_ACCESS, 2),
            (SpeEvents::L1D_REFILL, 3),
            (SpeEvents::TLB_ACCESS, 4),
            (SpeEvents::TLB_WALK, 5),
            (SpeEvents::NOT_TAKEN, 6),
            (SpeEvents::MISPREDICTED, 7),
            (SpeEvents::LLC_ACCESS, 8),
            (SpeEvents::LLC_MISS, 9),
            (SpeEvents::REMOTE_ACCESS, 10),
            (SpeEvents::MISALIGNED, 11),
            (SpeEvents::TRANSACTIONAL, 16),
            (SpeEvents::PARTIAL_PREDICATE, 17),
            (SpeEvents::EMPTY_PREDICATE, 18),
            (SpeEvents::L2D_ACCESS, 19),
            (SpeEvents::L2D_MISS, 20),
            (SpeEvents::CACHE_DATA_MODIFIED, 21),
            (SpeEvents::RECENTLY_FETCHED, 22),
            (SpeEvents::DATA_SNOOPED, 23),
            (SpeEvents::STREAMING_SVE_MODE, 24),
            (SpeEvents::SMCU, 25),
        ];
        for (event, bit) in table {
            assert_eq!(event.bits(), 1 << bit, "{event:?}");
        }
    }

    /// Arm ARM D24.7.11: the PMSEVFR_EL1 = 0x08 often written for "L2 cache miss" is bit 3,
    /// L1D refill; 0x20 "store buffer full" is bit 5, TLB walk; LLC miss is bit 9 = 0x200
    /// (the `spe` module docs, "Common mistake").
    #[test]
    fn commonly_misread_event_values() {
        assert_eq!(SpeEvents::from_bits_retain(0x08), SpeEvents::L1D_REFILL);
        assert_eq!(SpeEvents::from_bits_retain(0x20), SpeEvents::TLB_WALK);
        assert_eq!(SpeEvents::LLC_MISS.bits(), 0x200);
        // Both values filter on every SPE version: E[3] and E[5] have no condition.
        for version in VERSIONS {
            assert_eq!(check_event_filter(version, SpeEvents::L1D_REFILL), Ok(()));
            assert_eq!(check_event_filter(version, SpeEvents::TLB_WALK), Ok(()));
        }
    }

    /// Arm ARM M.a.a D24.7.11 E[9]: "When (FEAT_SPEv1p4 is implemented or filtering on event 9
    /// is optionally supported)". The memory-latency recipe's filter (LLC miss) is architected only
    /// from FEAT_SPEv1p4; before that it must be probed.
    #[test]
    fn llc_miss_filter_needs_v1p4_or_probing() {
        for version in VERSIONS {
            let support = classify_event_filter(version, SpeEvents::LLC_MISS);
            if version >= SpeVersion::V1p4 {
                assert_eq!(support.architected, SpeEvents::LLC_MISS, "{version}");
                assert!(support.optional.is_empty());
            } else {
                assert_eq!(support.optional, SpeEvents::LLC_MISS, "{version}");
                assert!(support.architected.is_empty());
            }
            assert!(support.unfilterable.is_empty());
        }
    }

    /// Arm ARM M.a.a D24.7.11: bit 0, bit 16 and bits [47:32] are RAZ/WI at every version.
    #[test]
    fn always_unfilterable_bits() {
        let always = 1 | (1 << 16) | (0xFFFF << 32);
        for version in VERSIONS {
            assert_eq!(version.unfilterable_mask() & always, always, "{version}");
            assert_eq!(
                check_event_filter(version, SpeEvents::EXCEPTION_GENERATED),
                Err(SpeError::EventsNotFilterable { version, bits: 1 })
            );
        }
    }

    /// Version steps of D24.7.11: E[11], E[17], E[18] need v1p1; E[6] needs v1p2 (FnE);
    /// E[19..23] need v1p4, which also drops IMPLEMENTATION DEFINED E[31:26].
    #[test]
    fn version_steps() {
        use SpeVersion::*;
        let v1p1_bits =
            SpeEvents::MISALIGNED | SpeEvents::PARTIAL_PREDICATE | SpeEvents::EMPTY_PREDICATE;
        assert!(check_event_filter(V1p0, v1p1_bits).is_err());
        assert_eq!(check_event_filter(V1p1, v1p1_bits), Ok(()));
        assert!(check_event_filter(V1p1, SpeEvents::NOT_TAKEN).is_err());
        assert_eq!(check_event_filter(V1p2, SpeEvents::NOT_TAKEN), Ok(()));
        assert!(check_event_filter(V1p3, SpeEvents::L2D_MISS).is_err());
        assert_eq!(check_event_filter(V1p4, SpeEvents::L2D_MISS), Ok(()));
        let imp_def_30 = SpeEvents::from_bits_retain(1 << 30);
        assert_eq!(classify_event_filter(V1p3, imp_def_30).optional, imp_def_30);
        assert!(check_event_filter(V1p4, imp_def_30).is_err());
    }

    /// The three classes partition all 64 bits at every version.
    #[test]
    fn classes_partition_the_register() {
        for version in VERSIONS {
            let a = version.architected_filter_events().bits();
            let o = version.optional_filter_mask();
            let u = version.unfilterable_mask();
            assert_eq!(a & o, 0, "{version}");
            assert_eq!(a | o | u, u64::MAX, "{version}");
            assert_eq!((a | o) & u, 0, "{version}");
        }
    }

    /// Linux 6.12 `arch/arm64/include/asm/sysreg.h` PMSEVFR_EL1_RES0_{IMP,V1P1,V1P2}, used by
    /// `arm_spe_pmsevfr_res0()` in drivers/perf/arm_spe_pmu.c (v1p3 and later use V1P2).
    /// Everything Linux accepts we accept too; we additionally accept exactly events 2, 4, 8,
    /// 9, 10, which Arm ARM M.a.a made "optionally supported" before FEAT_SPEv1p4.
    #[test]
    fn agrees_with_linux_6_12_res0_masks() {
        // Checked against the kernel's own definitions in tests/spe_kernel_source.rs.
        use crate::spe::perf::{
            LINUX_6_12_PMSEVFR_RES0_IMP as RES0_IMP, LINUX_6_12_PMSEVFR_RES0_V1P1 as RES0_V1P1,
            LINUX_6_12_PMSEVFR_RES0_V1P2 as RES0_V1P2,
        };
        let optional_before_v1p4 = (1 << 2) | (1 << 4) | (1 << 8) | (1 << 9) | (1 << 10);
        for (version, linux_res0) in [
            (SpeVersion::V1p0, RES0_IMP),
            (SpeVersion::V1p1, RES0_V1P1),
            (SpeVersion::V1p2, RES0_V1P2),
            (SpeVersion::V1p3, RES0_V1P2),
        ] {
            let ours_permitted = !version.unfilterable_mask();
            let linux_permitted = !linux_res0;
            assert_eq!(
                ours_permitted & linux_permitted,
                linux_permitted,
                "{version}"
            );
            assert_eq!(
                ours_permitted & !linux_permitted,
                optional_before_v1p4,
                "{version}"
            );
        }
    }
}
