//! PMSCR_EL1, Statistical Profiling Control Register (EL1): which Exception levels are sampled
//! and what each record carries.
//!
//! Source: Arm ARM DDI 0487 M.a.a D24.7.8; Linux 6.12 `arch/arm64/tools/sysreg`
//! (`Sysreg PMSCR_EL1 3 0 9 9 0`). EnVM, KE and EE are from the Arm ARM only.

use tock_registers::{register_bitfields, LocalRegisterCopy};

register_bitfields! {u64,
    /// PMSCR_EL1 fields.
    // The macro generates `Register`, `SET`/`CLEAR` and `Value` items without docs.
    #[allow(missing_docs)]
    pub PMSCR_EL1 [
        /// Reserved for software use in nested virtualization. Requires FEAT_SPE_nVM and FEAT_NV.
        EnVM OFFSET(11) NUMBITS(1) [],
        /// Kernel exception enable for SPE Profiling exceptions taken to EL1. Requires FEAT_SPE_EXC.
        KE OFFSET(10) NUMBITS(1) [],
        /// Exception Enable for SPE Profiling exceptions for EL1. Requires FEAT_SPE_EXC.
        EE OFFSET(8) NUMBITS(2) [
            /// Disabled: PMBSR_EL1.S drives the PMBIRQ interrupt.
            Disabled = 0b00,
            /// Enabled: SPE Profiling exceptions are taken instead of PMBIRQ.
            Enabled = 0b11,
        ],
        /// Physical Timestamp: which counter the Timestamp packet holds when EL1 owns the buffer.
        /// Bit 7 requires FEAT_ECV (otherwise RES0); without EL2 the field reads as 0b01.
        PCT OFFSET(6) NUMBITS(2) [
            /// Physical counter minus CNTVOFF_EL2.
            Virtual = 0b00,
            /// Physical counter.
            Physical = 0b01,
            /// Physical counter minus CNTPOFF_EL2. Requires FEAT_ECV.
            GuestPhysical = 0b11,
        ],
        /// Timestamp sample enable.
        TS OFFSET(5) NUMBITS(1) [],
        /// Physical Address sample enable.
        PA OFFSET(4) NUMBITS(1) [],
        /// CONTEXTIDR_EL1 sample enable.
        CX OFFSET(3) NUMBITS(1) [],
        /// EL1 Statistical Profiling Enable.
        E1SPE OFFSET(1) NUMBITS(1) [],
        /// EL0 Statistical Profiling Enable.
        E0SPE OFFSET(0) NUMBITS(1) [],
    ]
}

/// A PMSCR_EL1 value.
pub type PmscrEl1 = LocalRegisterCopy<u64, PMSCR_EL1::Register>;

spe_register_access!(PmscrEl1, read_pmscr_el1, write_pmscr_el1, "PMSCR_EL1");

#[cfg(test)]
mod tests {
    use super::*;

    /// Linux 6.12 arch/arm64/tools/sysreg: E0SPE 0, E1SPE 1, CX 3, PA 4, TS 5, PCT 7:6 (bit 2 RES0).
    #[test]
    fn field_positions() {
        let v = PmscrEl1::new(
            (PMSCR_EL1::E0SPE::SET
                + PMSCR_EL1::E1SPE::SET
                + PMSCR_EL1::CX::SET
                + PMSCR_EL1::PA::SET
                + PMSCR_EL1::TS::SET
                + PMSCR_EL1::PCT::GuestPhysical)
                .value,
        );
        assert_eq!(v.get(), 0b1111_1011);
        assert_eq!(
            PmscrEl1::new(1 << 6).read_as_enum(PMSCR_EL1::PCT),
            Some(PMSCR_EL1::PCT::Value::Physical)
        );
        // 0b10 is reserved (Arm ARM D24.7.8 PCT table): no enum value, no panic.
        assert_eq!(
            PmscrEl1::new(0b10 << 6).read_as_enum::<PMSCR_EL1::PCT::Value>(PMSCR_EL1::PCT),
            None
        );
        assert!(PmscrEl1::new(1 << 1).is_set(PMSCR_EL1::E1SPE));
        assert!(!PmscrEl1::new(1 << 1).is_set(PMSCR_EL1::E0SPE));
    }
}
