//! PMUSERENR, Performance Monitors User Enable Register (`c9, c14, 0`).
//!
//! Which PMU accesses PL0 may make; the others are UNDEFINED at PL0 (an Undefined
//! Instruction exception). Writable at PL1 and above only, readable at PL0.
//!
//! ARMv7 PMUv1/PMUv2 (Cortex-A7, Cortex-A15) has EN alone: PL0 may then read *and
//! write* every PMU register but PMUSERENR and PMINTENSET/CLR. There is no read-only
//! grant on those CPUs. PMUv3 seen from AArch32 (Cortex-A53, A72, A76 running a 32-bit
//! kernel) adds SW, CR and ER, so ER | CR grants reads only, as in AArch64.
//!
//! Sources: ARMv7-A/R ARM (DDI 0406C) C12 "PMUSERENR" (bit 0 EN, bits 31:1
//! UNK/SBZP); Arm ARM (DDI 0487) G8 "PMUSERENR" (EN, SW, CR, ER); Linux 6.12
//! drivers/perf/arm_v7_pmu.c never writes it (arm32 perf grants no user access).

use tock_registers::LocalRegisterCopy;

// tock-registers generates the field constants without docs.
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! {u32,
        /// The fields of PMUSERENR.
        pub PMUSERENR [
            /// Event counter read enable: PL0 may read PMXEVCNTR / `PMEVCNTR<n>` and
            /// read/write PMSELR. PMUv3 only (UNK/SBZP on PMUv2).
            ER OFFSET(3) NUMBITS(1) [],
            /// Cycle counter read enable: PL0 may read PMCCNTR. PMUv3 only.
            CR OFFSET(2) NUMBITS(1) [],
            /// Software increment write enable: PL0 may write PMSWINC. PMUv3 only.
            SW OFFSET(1) NUMBITS(1) [],
            /// User enable: PL0 may read and write every PMU register except PMUSERENR
            /// and PMINTENSET/PMINTENCLR.
            EN OFFSET(0) NUMBITS(1) [],
        ]
    }
}

pub use fields::PMUSERENR;

/// A PMUSERENR value.
pub type Pmuserenr = LocalRegisterCopy<u32, PMUSERENR::Register>;

/// ER | CR: reads of every counter, no writes (PMUv3 only).
pub fn read_only() -> Pmuserenr {
    let mut value = Pmuserenr::new(0);
    value.write(PMUSERENR::ER::SET + PMUSERENR::CR::SET);
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DDI 0487 G8 "PMUSERENR": EN bit 0, SW bit 1, CR bit 2, ER bit 3 — the same
    /// positions as PMUSERENR_EL0 (Linux `ARMV8_PMU_USERENR_*`, 1, 2, 4, 8).
    #[test]
    fn bits_match_the_aarch64_view() {
        assert_eq!(PMUSERENR::EN::SET.value, 1);
        assert_eq!(PMUSERENR::SW::SET.value, 2);
        assert_eq!(PMUSERENR::CR::SET.value, 4);
        assert_eq!(PMUSERENR::ER::SET.value, 8);
        assert_eq!(read_only().get(), 0b1100);
    }
}
