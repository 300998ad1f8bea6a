//! Which PMU architecture a PE implements: ID_AA64DFR0_EL1.PMUVer.
//!
//! Decoded from the raw register value with `aarch64-cpu`'s field definitions, so the
//! decode is a pure function the host tests check. Source: Arm ARM (DDI 0487),
//! "ID_AA64DFR0_EL1, AArch64 Debug Feature Register 0", field PMUVer (bits 11:8);
//! Linux arch/arm64/tools/sysreg (`UnsignedEnum 11:8 PMUVer`) and `pmuv3_implemented`,
//! `is_pmuv3p5` in arch/arm64/include/asm/arm_pmuv3.h.

use core::fmt;

use aarch64_cpu::registers::ID_AA64DFR0_EL1;
use tock_registers::LocalRegisterCopy;

/// The PMU version of ID_AA64DFR0_EL1.PMUVer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PmuVersion {
    /// 0b0000: no Performance Monitors Extension.
    NotImplemented,
    /// 0b0001: FEAT_PMUv3.
    PmuV3,
    /// 0b0100: FEAT_PMUv3p1 (16-bit event numbers, PMCEID upper halves).
    PmuV3p1,
    /// 0b0101: FEAT_PMUv3p4 (PMMIR_EL1).
    PmuV3p4,
    /// 0b0110: FEAT_PMUv3p5 (64-bit event counters with PMCR_EL0.LP).
    PmuV3p5,
    /// 0b0111: FEAT_PMUv3p7 (freeze on overflow, PMCR_EL0.FZO).
    PmuV3p7,
    /// 0b1000: FEAT_PMUv3p8.
    PmuV3p8,
    /// 0b1001: FEAT_PMUv3p9.
    PmuV3p9,
    /// 0b1111: an IMPLEMENTATION DEFINED PMU, not PMUv3.
    ImplementationDefined,
    /// A value this crate does not know (reserved today). PMUVer is an unsigned ID
    /// field, so a larger value has every feature of the smaller ones.
    Unknown(u8),
}

impl PmuVersion {
    /// Decodes the 4-bit PMUVer field.
    pub const fn from_pmuver(pmuver: u8) -> Self {
        match pmuver & 0xF {
            0b0000 => Self::NotImplemented,
            0b0001 => Self::PmuV3,
            0b0100 => Self::PmuV3p1,
            0b0101 => Self::PmuV3p4,
            0b0110 => Self::PmuV3p5,
            0b0111 => Self::PmuV3p7,
            0b1000 => Self::PmuV3p8,
            0b1001 => Self::PmuV3p9,
            0b1111 => Self::ImplementationDefined,
            other => Self::Unknown(other),
        }
    }

    /// Decodes PMUVer from a raw ID_AA64DFR0_EL1 value.
    pub fn from_id_aa64dfr0(raw: u64) -> Self {
        let dfr0 = LocalRegisterCopy::<u64, ID_AA64DFR0_EL1::Register>::new(raw);
        // The field is 4 bits wide, so the narrowing keeps every bit.
        Self::from_pmuver(dfr0.read(ID_AA64DFR0_EL1::PMUVer) as u8)
    }

    /// The PMUVer field value.
    pub const fn pmuver(self) -> u8 {
        match self {
            Self::NotImplemented => 0b0000,
            Self::PmuV3 => 0b0001,
            Self::PmuV3p1 => 0b0100,
            Self::PmuV3p4 => 0b0101,
            Self::PmuV3p5 => 0b0110,
            Self::PmuV3p7 => 0b0111,
            Self::PmuV3p8 => 0b1000,
            Self::PmuV3p9 => 0b1001,
            Self::ImplementationDefined => 0b1111,
            Self::Unknown(v) => v,
        }
    }

    /// Whether this is an architected PMUv3 of some revision (Linux
    /// `pmuv3_implemented`: neither 0 nor IMPLEMENTATION DEFINED).
    pub const fn is_pmuv3(self) -> bool {
        !matches!(self, Self::NotImplemented | Self::ImplementationDefined)
    }

    /// Whether this is PMUv3 at revision `other` or later.
    pub const fn is_at_least(self, other: PmuVersion) -> bool {
        self.is_pmuv3() && self.pmuver() >= other.pmuver()
    }

    /// FEAT_PMUv3p1: 16-bit event numbers (evtCount bits 15:10 no longer RES0) and
    /// the 0x4000 common events in PMCEID's upper halves.
    pub const fn has_16bit_event_numbers(self) -> bool {
        self.is_at_least(Self::PmuV3p1)
    }

    /// FEAT_PMUv3p5: event counters become 64 bits wide when PMCR_EL0.LP is set
    /// (Linux `armv8pmu_has_long_event`).
    pub const fn has_long_event_counters(self) -> bool {
        self.is_at_least(Self::PmuV3p5)
    }
}

impl fmt::Display for PmuVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotImplemented => f.write_str("no PMU"),
            Self::PmuV3 => f.write_str("PMUv3"),
            Self::PmuV3p1 => f.write_str("PMUv3p1"),
            Self::PmuV3p4 => f.write_str("PMUv3p4"),
            Self::PmuV3p5 => f.write_str("PMUv3p5"),
            Self::PmuV3p7 => f.write_str("PMUv3p7"),
            Self::PmuV3p8 => f.write_str("PMUv3p8"),
            Self::PmuV3p9 => f.write_str("PMUv3p9"),
            Self::ImplementationDefined => f.write_str("IMPLEMENTATION DEFINED PMU"),
            Self::Unknown(v) => write!(f, "PMUv3 (PMUVer {v:#x})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The PMUVer encodings of Linux arch/arm64/tools/sysreg
    /// (`NI 0b0000, IMP 0b0001, V3P1 0b0100, V3P4 0b0101, V3P5 0b0110, V3P7 0b0111,
    /// V3P8 0b1000, V3P9 0b1001, IMP_DEF 0b1111`).
    #[test]
    fn pmuver_table() {
        let table = [
            (0b0000, PmuVersion::NotImplemented),
            (0b0001, PmuVersion::PmuV3),
            (0b0100, PmuVersion::PmuV3p1),
            (0b0101, PmuVersion::PmuV3p4),
            (0b0110, PmuVersion::PmuV3p5),
            (0b0111, PmuVersion::PmuV3p7),
            (0b1000, PmuVersion::PmuV3p8),
            (0b1001, PmuVersion::PmuV3p9),
            (0b1111, PmuVersion::ImplementationDefined),
            (0b0010, PmuVersion::Unknown(2)),
            (0b1010, PmuVersion::Unknown(10)),
        ];
        for (raw, version) in table {
            assert_eq!(PmuVersion::from_pmuver(raw), version);
            assert_eq!(version.pmuver(), raw);
            assert_eq!(PmuVersion::from_id_aa64dfr0(u64::from(raw) << 8), version);
        }
        assert!(!PmuVersion::NotImplemented.is_pmuv3());
        assert!(!PmuVersion::ImplementationDefined.is_pmuv3());
        assert!(!PmuVersion::ImplementationDefined.has_long_event_counters());
        assert!(PmuVersion::PmuV3.is_pmuv3());
        assert!(!PmuVersion::PmuV3.has_16bit_event_numbers());
        assert!(PmuVersion::PmuV3p1.has_16bit_event_numbers());
        assert!(!PmuVersion::PmuV3p4.has_long_event_counters());
        assert!(PmuVersion::PmuV3p5.has_long_event_counters());
        assert!(PmuVersion::PmuV3p9.has_long_event_counters());
        assert!(PmuVersion::Unknown(10).has_long_event_counters());
    }

    /// QEMU `-cpu max`: ID_AA64DFR0_EL1 = 0x10305609, PMUVer = 6 (PMUv3p5) and
    /// PMSVer = 0 (no SPE); cortex-a53/a72 report PMUVer 1 (docs/qemu.md).
    #[test]
    fn qemu_max_id_aa64dfr0() {
        let raw = 0x1030_5609;
        assert_eq!(PmuVersion::from_id_aa64dfr0(raw), PmuVersion::PmuV3p5);
        let dfr0 = LocalRegisterCopy::<u64, ID_AA64DFR0_EL1::Register>::new(raw);
        assert_eq!(dfr0.read(ID_AA64DFR0_EL1::PMSVer), 0);
        assert_eq!(PmuVersion::from_pmuver(1), PmuVersion::PmuV3);
    }
}
