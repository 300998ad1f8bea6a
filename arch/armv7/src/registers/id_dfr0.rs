//! ID_DFR0, Debug Feature Register 0 (`p15, 0, <Rt>, c0, c1, 2`): PerfMon, bits 27:24,
//! says which PMU the processor has.
//!
//! Sources: ARMv7-A/R ARM (DDI 0406C) B4.1 "ID_DFR0" (0 not supported, 1 PMUv1,
//! 2 PMUv2, 0xF no ARM-architected PMU); Arm ARM (DDI 0487) G8 "ID_DFR0" (3 PMUv3,
//! 4 PMUv3p1, 5 PMUv3p4, 6 PMUv3p5, 7 PMUv3p7, 8 PMUv3p8, 9 PMUv3p9).

use core::fmt;

use pmu_armv8::PmuVersion;

/// The PMU ID_DFR0.PerfMon names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PerfMon {
    /// 0: no PMU that this field describes.
    NotImplemented,
    /// 1: PMUv1 (no privilege filtering).
    PmuV1,
    /// 2: PMUv2 (filtering by privilege level, 32-bit counters, PMUSERENR.EN only).
    PmuV2,
    /// 3 and later: PMUv3 seen from AArch32, as `pmu_armv8::PmuVersion` names it.
    PmuV3(PmuVersion),
    /// 0xF, or a value this crate does not know.
    ImplementationDefined(u8),
}

impl PerfMon {
    /// From ID_DFR0's raw value (bits 27:24).
    pub const fn from_id_dfr0(id_dfr0: u32) -> Self {
        let field = ((id_dfr0 >> 24) & 0xf) as u8;
        match field {
            0 => Self::NotImplemented,
            1 => Self::PmuV1,
            2 => Self::PmuV2,
            // ID_AA64DFR0_EL1.PMUVer encodes PMUv3 as 1 and its later versions with the
            // same values as PerfMon (4 = PMUv3p1 … 9 = PMUv3p9).
            3 => Self::PmuV3(PmuVersion::PmuV3),
            4..=9 => Self::PmuV3(PmuVersion::from_pmuver(field)),
            _ => Self::ImplementationDefined(field),
        }
    }

    /// Whether a PMU this crate drives is there (PMUv1, PMUv2 or PMUv3).
    pub const fn is_architected(self) -> bool {
        matches!(self, Self::PmuV1 | Self::PmuV2 | Self::PmuV3(_))
    }

    /// Whether PMXEVTYPER has the privilege filter bits (PMUv2 and later).
    pub const fn has_filtering(self) -> bool {
        matches!(self, Self::PmuV2 | Self::PmuV3(_))
    }

    /// Whether PMUSERENR has ER, CR and SW, a read-only grant (PMUv3 only).
    pub const fn has_read_only_grant(self) -> bool {
        matches!(self, Self::PmuV3(_))
    }

    /// The PerfMon field value.
    pub const fn raw(self) -> u8 {
        match self {
            Self::NotImplemented => 0,
            Self::PmuV1 => 1,
            Self::PmuV2 => 2,
            Self::PmuV3(PmuVersion::PmuV3) => 3,
            Self::PmuV3(v) => v.pmuver(),
            Self::ImplementationDefined(f) => f,
        }
    }
}

impl fmt::Display for PerfMon {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotImplemented => f.write_str("no PMU (PerfMon 0)"),
            Self::PmuV1 => f.write_str("PMUv1"),
            Self::PmuV2 => f.write_str("PMUv2"),
            Self::PmuV3(v) => write!(f, "{v} (AArch32)"),
            Self::ImplementationDefined(x) => write!(f, "PerfMon {x:#x} (not ARM-architected)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// QEMU 10.0.2 `-cpu cortex-a7` and `cortex-a15` read ID_DFR0 = 0x02000505 (the
    /// qemu/armv7-virt image's probe line): PerfMon 2, PMUv2. A Cortex-A53 in AArch32
    /// reads 0x03010066 (Cortex-A53 TRM, ID_DFR0): PMUv3.
    #[test]
    fn decodes_known_cores() {
        assert_eq!(PerfMon::from_id_dfr0(0x0200_0505), PerfMon::PmuV2);
        assert!(!PerfMon::PmuV2.has_read_only_grant());
        let a53 = PerfMon::from_id_dfr0(0x0301_0066);
        assert_eq!(a53, PerfMon::PmuV3(PmuVersion::PmuV3));
        assert!(a53.has_read_only_grant());
        assert_eq!(a53.raw(), 3);
        assert_eq!(PerfMon::from_id_dfr0(0x0601_0000).raw(), 6);
        assert!(!PerfMon::from_id_dfr0(0x0F00_0000).is_architected());
        assert!(!PerfMon::from_id_dfr0(0).is_architected());
    }
}
