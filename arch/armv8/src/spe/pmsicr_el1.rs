//! PMSICR_EL1, Sampling Interval Counter Register: the live sampling counters. Software
//! writes 0 before a session and otherwise only saves/restores it on context switches.
//!
//! Source: Arm ARM DDI 0487 M.a.a D24.7.13; Linux 6.12 `arch/arm64/tools/sysreg`
//! (`Sysreg PMSICR_EL1 3 0 9 9 2`).

use tock_registers::{register_bitfields, LocalRegisterCopy};

register_bitfields! {u64,
    /// PMSICR_EL1 fields.
    // The macro generates `Register`, `SET`/`CLEAR` and `Value` items without docs.
    #[allow(missing_docs)]
    pub PMSICR_EL1 [
        /// Secondary sample interval counter, used after COUNT reaches zero when
        /// PMSIRR_EL1.RND is 1. Requires FEAT_SPE_ERnd (PMSIDR_EL1.ERnd = 1), RES0 otherwise.
        ECOUNT OFFSET(56) NUMBITS(8) [],
        /// Primary sample interval counter, reloaded from PMSIRR_EL1.
        COUNT OFFSET(0) NUMBITS(32) [],
    ]
}

/// A PMSICR_EL1 value.
pub type PmsicrEl1 = LocalRegisterCopy<u64, PMSICR_EL1::Register>;

spe_register_access!(PmsicrEl1, read_pmsicr_el1, write_pmsicr_el1, "PMSICR_EL1");

#[cfg(test)]
mod tests {
    use super::*;

    /// Linux sysreg: `Field 63:56 ECOUNT`, `Res0 55:32`, `Field 31:0 COUNT`.
    #[test]
    fn field_positions() {
        let v = PmsicrEl1::new(
            (PMSICR_EL1::ECOUNT.val(0xAB) + PMSICR_EL1::COUNT.val(0x1234_5678)).value,
        );
        assert_eq!(v.get(), 0xAB00_0000_1234_5678);
        assert_eq!(v.read(PMSICR_EL1::ECOUNT), 0xAB);
        assert_eq!(v.read(PMSICR_EL1::COUNT), 0x1234_5678);
    }
}
