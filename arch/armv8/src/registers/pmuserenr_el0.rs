//! PMUSERENR_EL0, Performance Monitors User Enable Register.
//!
//! Which PMU accesses EL0 may make; everything else traps to EL1 (EC 0x18). Writable
//! at EL1 and above only, readable at EL0. Linux writes 0 here on every
//! `armv8pmu_start()` unless the task has user-readable perf events, and ER | CR when
//! it does (Linux 6.13+: UEN | ER | CR, with PMUACR_EL1 naming the task's counters,
//! [`super::pmuacr_el1`]). Source: Arm ARM (DDI 0487), "PMUSERENR_EL0, Performance Monitors User
//! Enable Register"; Linux `ARMV8_PMU_USERENR_*` in include/linux/perf/arm_pmuv3.h;
//! QEMU behaviour per bit in docs/qemu.md.

use tock_registers::LocalRegisterCopy;

// tock-registers generates the field constants, `Register`, `SET` and `CLEAR`
// without docs; each field's own doc line carries the spec's description.
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! {u64,
        /// The fields of PMUSERENR_EL0.
        pub PMUSERENR_EL0 [
            /// Trap EL0 reads of the common event identification registers (PMCEID*).
            ///
            /// Requires FEAT_PMUv3p9.
            TID OFFSET(6) NUMBITS(1) [],

            /// Instruction counter read-only at EL0 when UEN is set.
            ///
            /// Requires FEAT_PMUv3_ICNTR and FEAT_PMUv3p9.
            IR OFFSET(5) NUMBITS(1) [],

            /// User enable with per-counter access control by PMUACR_EL1.
            ///
            /// Requires FEAT_PMUv3p9.
            UEN OFFSET(4) NUMBITS(1) [],

            /// Event counter read enable: EL0 may read `PMEVCNTR<n>_EL0` (and PMXEVCNTR_EL0,
            /// and read/write PMSELR_EL0).
            ER OFFSET(3) NUMBITS(1) [],

            /// Cycle counter read enable: EL0 may read PMCCNTR_EL0.
            CR OFFSET(2) NUMBITS(1) [],

            /// Software increment write enable: EL0 may write PMSWINC_EL0.
            SW OFFSET(1) NUMBITS(1) [],

            /// Enable: EL0 may read and write every PMU register except PMUSERENR_EL0
            /// itself and the PMINTEN*_EL1 registers.
            EN OFFSET(0) NUMBITS(1) [],
        ]
    }
}

pub use fields::PMUSERENR_EL0;

/// A PMUSERENR_EL0 value.
pub type PmuserenrEl0 = LocalRegisterCopy<u64, PMUSERENR_EL0::Register>;

/// What Linux grants a task with user-readable events (ER | CR,
/// `armv8pmu_enable_user_access`): reads of all counters, no writes.
pub fn linux_user_read() -> PmuserenrEl0 {
    let mut value = PmuserenrEl0::new(0);
    value.write(PMUSERENR_EL0::ER::SET + PMUSERENR_EL0::CR::SET);
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bit positions of Linux `ARMV8_PMU_USERENR_{EN,SW,CR,ER}` (1, 2, 4, 8).
    #[test]
    fn bits_match_linux() {
        assert_eq!(PMUSERENR_EL0::EN::SET.value, 1 << 0);
        assert_eq!(PMUSERENR_EL0::SW::SET.value, 1 << 1);
        assert_eq!(PMUSERENR_EL0::CR::SET.value, 1 << 2);
        assert_eq!(PMUSERENR_EL0::ER::SET.value, 1 << 3);
        assert_eq!(linux_user_read().get(), 0b1100);
    }
}
