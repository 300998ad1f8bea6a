//! PMCR, Performance Monitors Control Register (cp15: `p15, 0, <Rt>, c9, c12, 0`).
//!
//! How many event counters exist (N) and the controls of all of them at once.
//! Sources: ARMv7-A/R ARM (DDI 0406C) C12 "PMCR, Performance Monitors Control
//! Register"; Cortex-A7 MPCore TRM (DDI 0464), "Performance Monitors Control
//! Register"; Arm ARM (DDI 0487) G8
//! "PMCR" for PMUv3 in AArch32 (LC, and LP from PMUv3p5); Linux 6.12
//! drivers/perf/arm_v7_pmu.c (`ARMV7_PMNC_*`).

use tock_registers::LocalRegisterCopy;

// tock-registers generates the field constants without docs; each field's own doc line
// carries the manual's description.
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! {u32,
        /// The fields of PMCR.
        pub PMCR [
            /// Implementer code (0x41 = ARM). Read-only.
            IMP OFFSET(24) NUMBITS(8) [],
            /// Identification code (Cortex-A7: 0x07, Cortex-A15: 0x0F). Read-only.
            IDCODE OFFSET(16) NUMBITS(8) [],
            /// Number of event counters, 0..=31 (PMCCNTR always exists). Read-only; at
            /// PL1/PL0 it reads HDCR.HPMN when Hyp is implemented.
            N OFFSET(11) NUMBITS(5) [],
            /// Long event counters: overflow at 64 bits. PMUv3p5 in AArch32 only
            /// (DDI 0487 G8 "PMCR"); RES0 otherwise.
            LP OFFSET(7) NUMBITS(1) [],
            /// Long cycle counter: PMCCNTR overflows at 64 bits. PMUv3 only; RAZ/WI on
            /// ARMv7 PMUv1/PMUv2, where PMCCNTR is 32 bits.
            LC OFFSET(6) NUMBITS(1) [],
            /// Disable PMCCNTR when event counting is prohibited.
            DP OFFSET(5) NUMBITS(1) [],
            /// Export enable: events on the IMPLEMENTATION DEFINED event bus.
            X OFFSET(4) NUMBITS(1) [],
            /// Clock divider: PMCCNTR counts every 64th cycle when set.
            D OFFSET(3) NUMBITS(1) [],
            /// Cycle counter reset: writing 1 zeroes PMCCNTR. Reads as 0.
            C OFFSET(2) NUMBITS(1) [],
            /// Event counter reset: writing 1 zeroes every event counter. Reads as 0.
            P OFFSET(1) NUMBITS(1) [],
            /// Enable: global enable of PMCCNTR and the event counters (each also
            /// needs its PMCNTENSET bit).
            E OFFSET(0) NUMBITS(1) [],
        ]
    }
}

pub use fields::PMCR;

/// A PMCR value.
pub type Pmcr = LocalRegisterCopy<u32, PMCR::Register>;

/// The bits software writes (Linux `ARMV7_PMNC_MASK` = 0x3f: E, P, C, D, X, DP).
pub const WRITABLE_MASK: u32 = 0x3F;

#[cfg(test)]
mod tests {
    use super::*;

    /// QEMU 10.0.2 `-cpu cortex-a7` reads PMCR = 0x41072001 after the driver set E (the
    /// qemu/armv7-virt image's probe line): IMP 0x41, IDCODE 0x07, N = 4; `-cpu
    /// cortex-a15` 0x410f3001, N = 6.
    #[test]
    fn qemu_cortex_a7_and_a15() {
        let pmcr = Pmcr::new(0x4107_2001);
        assert_eq!(pmcr.read(PMCR::IMP), 0x41);
        assert_eq!(pmcr.read(PMCR::IDCODE), 0x07);
        assert_eq!(pmcr.read(PMCR::N), 4);
        assert!(pmcr.is_set(PMCR::E));
        let a15 = Pmcr::new(0x410f_3001);
        assert_eq!(a15.read(PMCR::IDCODE), 0x0f);
        assert_eq!(a15.read(PMCR::N), 6);
    }

    /// Linux 6.12 drivers/perf/arm_v7_pmu.c: `ARMV7_PMNC_E` BIT(0), `_P` BIT(1),
    /// `_C` BIT(2), `_D` BIT(3), `_X` BIT(4), `_DP` BIT(5), `ARMV7_PMNC_N_SHIFT` 11,
    /// `ARMV7_PMNC_N_MASK` 0x1f, `ARMV7_PMNC_MASK` 0x3f.
    #[test]
    fn bits_match_linux() {
        assert_eq!(PMCR::E::SET.value, 1);
        assert_eq!(PMCR::P::SET.value, 2);
        assert_eq!(PMCR::C::SET.value, 4);
        assert_eq!(PMCR::D::SET.value, 8);
        assert_eq!(PMCR::X::SET.value, 0x10);
        assert_eq!(PMCR::DP::SET.value, 0x20);
        assert_eq!(PMCR::N.mask << PMCR::N.shift, 0x1f << 11);
        assert_eq!(WRITABLE_MASK, 0x3f);
    }
}
