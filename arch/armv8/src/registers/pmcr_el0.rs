//! PMCR_EL0, Performance Monitors Control Register.
//!
//! Says how many event counters exist (N) and controls all of them at once: enable (E),
//! reset (P, C), counter widths (LC, LP). Source: Arm ARM (DDI 0487), "PMCR_EL0,
//! Performance Monitors Control Register"; Linux `include/linux/perf/arm_pmuv3.h`
//! (`ARMV8_PMU_PMCR_*`).

use tock_registers::LocalRegisterCopy;

// tock-registers generates the field constants, `Register`, `SET` and `CLEAR`
// without docs; each field's own doc line carries the spec's description.
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! {u64,
        /// The fields of PMCR_EL0.
        pub PMCR_EL0 [
            /// Freeze-on-SPE event: stop the counters when profiling is stopped by
            /// PMBLIMITR_EL1.PMFZ.
            ///
            /// Requires FEAT_SPEv1p2.
            FZS OFFSET(32) NUMBITS(1) [],

            /// Implementer code (0x41 = Arm Limited), same encoding as MIDR_EL1.Implementer.
            /// Zero means IDCODE is RES0 and MIDR_EL1 identifies the PE. Read-only.
            IMP OFFSET(24) NUMBITS(8) [],

            /// Identification code, defined by the implementer (Arm deprecates its use).
            /// Read-only.
            IDCODE OFFSET(16) NUMBITS(8) [],

            /// Number of event counters implemented, 0..=31 (PMCCNTR_EL0 always exists).
            /// Read-only; at EL1/EL0 it reads MDCR_EL2.HPMN when EL2 is enabled.
            N OFFSET(11) NUMBITS(5) [],

            /// Freeze-on-overflow: stop the event counters when one overflows.
            ///
            /// Requires FEAT_PMUv3p7.
            FZO OFFSET(9) NUMBITS(1) [],

            /// Long event counter enable: event counters overflow at 64 bits instead of 32.
            ///
            /// Requires FEAT_PMUv3p5 (RES0 otherwise).
            LP OFFSET(7) NUMBITS(1) [],

            /// Long cycle counter enable: PMCCNTR_EL0 overflows at 64 bits instead of 32.
            LC OFFSET(6) NUMBITS(1) [],

            /// Disable the cycle counter when event counting is prohibited.
            DP OFFSET(5) NUMBITS(1) [],

            /// Enable export of events on an IMPLEMENTATION DEFINED event bus.
            X OFFSET(4) NUMBITS(1) [],

            /// Clock divider: PMCCNTR_EL0 counts every 64th cycle when set (AArch32 legacy;
            /// RES0 when LC is set).
            D OFFSET(3) NUMBITS(1) [],

            /// Cycle counter reset: writing 1 zeroes PMCCNTR_EL0. Reads as 0.
            C OFFSET(2) NUMBITS(1) [],

            /// Event counter reset: writing 1 zeroes every `PMEVCNTR<n>_EL0`. Reads as 0.
            P OFFSET(1) NUMBITS(1) [],

            /// Enable: global enable of PMCCNTR_EL0 and the event counters (each also needs
            /// its PMCNTENSET_EL0 bit).
            E OFFSET(0) NUMBITS(1) [],
        ]
    }
}

pub use fields::PMCR_EL0;

/// A PMCR_EL0 value.
pub type PmcrEl0 = LocalRegisterCopy<u64, PMCR_EL0::Register>;

/// The bits software may write (Linux `ARMV8_PMU_PMCR_MASK`: E, P, C, D, X, DP, LC, LP).
pub const WRITABLE_MASK: u64 = 0xFF;

#[cfg(test)]
mod tests {
    use super::*;

    /// QEMU `-M virt -cpu max` resets PMCR_EL0 to 0x41013000
    /// (docs/qemu.md): Arm (IMP 0x41), IDCODE 1, six event counters, all
    /// control bits clear.
    #[test]
    fn qemu_max_reset_value() {
        let pmcr = PmcrEl0::new(0x4101_3000);
        assert_eq!(pmcr.read(PMCR_EL0::IMP), 0x41);
        assert_eq!(pmcr.read(PMCR_EL0::IDCODE), 0x01);
        assert_eq!(pmcr.read(PMCR_EL0::N), 6);
        for bit in [
            PMCR_EL0::E,
            PMCR_EL0::P,
            PMCR_EL0::C,
            PMCR_EL0::D,
            PMCR_EL0::X,
            PMCR_EL0::DP,
            PMCR_EL0::LC,
            PMCR_EL0::LP,
            PMCR_EL0::FZO,
            PMCR_EL0::FZS,
        ] {
            assert!(!pmcr.is_set(bit));
        }
    }

    /// Bit positions from Linux include/linux/perf/arm_pmuv3.h (`ARMV8_PMU_PMCR_E` ..
    /// `ARMV8_PMU_PMCR_N = GENMASK(15, 11)`).
    #[test]
    fn bit_positions_match_linux() {
        let bits = [
            (PMCR_EL0::E::SET, 1 << 0),
            (PMCR_EL0::P::SET, 1 << 1),
            (PMCR_EL0::C::SET, 1 << 2),
            (PMCR_EL0::D::SET, 1 << 3),
            (PMCR_EL0::X::SET, 1 << 4),
            (PMCR_EL0::DP::SET, 1 << 5),
            (PMCR_EL0::LC::SET, 1 << 6),
            (PMCR_EL0::LP::SET, 1 << 7),
            (PMCR_EL0::N::SET, 0xF800),
        ];
        for (field, value) in bits {
            assert_eq!(field.value, value);
        }
        let mut all = PmcrEl0::new(0);
        all.write(
            PMCR_EL0::E::SET
                + PMCR_EL0::P::SET
                + PMCR_EL0::C::SET
                + PMCR_EL0::D::SET
                + PMCR_EL0::X::SET
                + PMCR_EL0::DP::SET
                + PMCR_EL0::LC::SET
                + PMCR_EL0::LP::SET,
        );
        assert_eq!(all.get(), WRITABLE_MASK);
    }
}
