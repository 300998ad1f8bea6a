//! The SPE version from `ID_AA64DFR0_EL1.PMSVer`, bits \[35:32\].
//!
//! Source: Arm ARM DDI 0487 M.a.a, D24.2.80 (ID_AA64DFR0_EL1, PMSVer) and the
//! `UnsignedEnum 35:32 PMSVer` entry of Linux `arch/arm64/tools/sysreg`. The field is read
//! through `aarch64-cpu`'s `ID_AA64DFR0_EL1` definition so the position lives in one place.

use core::fmt;

use aarch64_cpu::registers::ID_AA64DFR0_EL1;
use tock_registers::LocalRegisterCopy;

use super::error::SpeError;

/// An implemented SPE version. Each version includes everything of the ones before it, so the
/// derived ordering is meaningful (`SpeVersion::V1p2 >= SpeVersion::V1p1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum SpeVersion {
    /// PMSVer 0b0001: FEAT_SPE (Armv8.2).
    V1p0,
    /// PMSVer 0b0010: FEAT_SPEv1p1, adds the Alignment event and SVE predicate events.
    V1p1,
    /// PMSVer 0b0011: FEAT_SPEv1p2, adds PMSNEVFR_EL1 (FnE), discard mode, filtering on
    /// "not taken".
    V1p2,
    /// PMSVer 0b0100: FEAT_SPEv1p3, adds MOPS and MTE operation types.
    V1p3,
    /// PMSVer 0b0101: FEAT_SPEv1p4, adds L2D/data-source events and makes the cache/TLB
    /// access events filterable.
    V1p4,
    /// PMSVer 0b0110: FEAT_SPEv1p5 (Arm ARM M.a.a; not yet in Linux 6.12's sysreg table),
    /// adds FEAT_SPE_EXC and FEAT_SPE_nVM.
    V1p5,
    /// A PMSVer value newer than this driver knows. ID fields are unsigned and only grow, so it
    /// is treated as a superset of [`SpeVersion::V1p5`].
    Newer(u8),
}

impl SpeVersion {
    /// Decodes a raw 4-bit PMSVer value. 0 means SPE is absent: [`SpeError::NotImplemented`].
    pub const fn from_pmsver(pmsver: u8) -> Result<Self, SpeError> {
        Ok(match pmsver {
            0 => return Err(SpeError::NotImplemented),
            1 => Self::V1p0,
            2 => Self::V1p1,
            3 => Self::V1p2,
            4 => Self::V1p3,
            5 => Self::V1p4,
            6 => Self::V1p5,
            other => Self::Newer(other),
        })
    }

    /// Decodes the SPE version from a raw `ID_AA64DFR0_EL1` value.
    pub fn from_id_aa64dfr0(id_aa64dfr0_el1: u64) -> Result<Self, SpeError> {
        Self::from_pmsver(pmsver(id_aa64dfr0_el1))
    }

    /// The PMSVer encoding of this version.
    pub const fn pmsver(self) -> u8 {
        match self {
            Self::V1p0 => 1,
            Self::V1p1 => 2,
            Self::V1p2 => 3,
            Self::V1p3 => 4,
            Self::V1p4 => 5,
            Self::V1p5 => 6,
            Self::Newer(raw) => raw,
        }
    }

    /// Whether this version includes `other` (FEAT_SPEv1p2 includes FEAT_SPEv1p1, ...).
    pub fn includes(self, other: Self) -> bool {
        self >= other
    }
}

impl fmt::Display for SpeVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::V1p0 => f.write_str("FEAT_SPE"),
            Self::V1p1 => f.write_str("FEAT_SPEv1p1"),
            Self::V1p2 => f.write_str("FEAT_SPEv1p2"),
            Self::V1p3 => f.write_str("FEAT_SPEv1p3"),
            Self::V1p4 => f.write_str("FEAT_SPEv1p4"),
            Self::V1p5 => f.write_str("FEAT_SPEv1p5"),
            Self::Newer(raw) => write!(f, "SPE with PMSVer={raw} (newer than FEAT_SPEv1p5)"),
        }
    }
}

/// The raw `ID_AA64DFR0_EL1.PMSVer` field of a raw register value.
pub fn pmsver(id_aa64dfr0_el1: u64) -> u8 {
    let reg = LocalRegisterCopy::<u64, ID_AA64DFR0_EL1::Register>::new(id_aa64dfr0_el1);
    // The field is 4 bits wide, so the narrowing cannot lose bits.
    reg.read(ID_AA64DFR0_EL1::PMSVer) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    /// QEMU 10.0 `-M virt -cpu max` reports ID_AA64DFR0_EL1 = 0x10305609
    /// (docs/qemu.md): PMUv3p5 (PMUVer 6) but PMSVer 0, no SPE.
    #[test]
    fn qemu_max_has_no_spe() {
        const QEMU_MAX_ID_AA64DFR0_EL1: u64 = 0x1030_5609;
        assert_eq!(pmsver(QEMU_MAX_ID_AA64DFR0_EL1), 0);
        assert_eq!(
            SpeVersion::from_id_aa64dfr0(QEMU_MAX_ID_AA64DFR0_EL1),
            Err(SpeError::NotImplemented)
        );
    }

    /// Arm ARM M.a.a D24.2.80 / Linux sysreg `UnsignedEnum 35:32 PMSVer`: NI, IMP, V1P1..V1P4,
    /// and 0b0110 (FEAT_SPEv1p5) from the Arm ARM.
    #[test]
    fn pmsver_table() {
        let table = [
            (1, SpeVersion::V1p0),
            (2, SpeVersion::V1p1),
            (3, SpeVersion::V1p2),
            (4, SpeVersion::V1p3),
            (5, SpeVersion::V1p4),
            (6, SpeVersion::V1p5),
        ];
        for (raw, version) in table {
            // PMSVer sits at bits [35:32].
            let id = u64::from(raw) << 32;
            assert_eq!(SpeVersion::from_id_aa64dfr0(id), Ok(version));
            assert_eq!(version.pmsver(), raw);
        }
        assert_eq!(SpeVersion::from_pmsver(0), Err(SpeError::NotImplemented));
        assert_eq!(SpeVersion::from_pmsver(7), Ok(SpeVersion::Newer(7)));
        assert!(SpeVersion::Newer(7) > SpeVersion::V1p5);
        assert!(SpeVersion::V1p2.includes(SpeVersion::V1p1));
        assert!(!SpeVersion::V1p1.includes(SpeVersion::V1p2));
    }

    /// Bits around the field (PMUVer, BRBE, ...) do not leak into PMSVer.
    #[test]
    fn pmsver_ignores_neighbouring_fields() {
        let all_but_pmsver = !(0xF_u64 << 32);
        assert_eq!(pmsver(all_but_pmsver), 0);
        assert_eq!(pmsver(all_but_pmsver | (3 << 32)), 3);
    }
}
