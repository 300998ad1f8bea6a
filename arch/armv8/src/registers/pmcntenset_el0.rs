//! PMCNTENSET_EL0 and PMCNTENCLR_EL0, Performance Monitors Count Enable Set/Clear.
//!
//! Two views of one per-counter enable state: writing 1 to a bit of PMCNTENSET_EL0
//! enables that counter, writing 1 to the same bit of PMCNTENCLR_EL0 disables it,
//! zeros are ignored, both read the current state. So one counter is switched without
//! a read-modify-write. Bit n is `PMEVCNTR<n>_EL0`, bit 31 PMCCNTR_EL0. Source: Arm ARM
//! (DDI 0487), "PMCNTENSET_EL0" and "PMCNTENCLR_EL0"; Linux `armv8pmu_enable_counter`.

use tock_registers::LocalRegisterCopy;

// tock-registers generates the field constants, `Register`, `SET` and `CLEAR`
// without docs; each field's own doc line carries the spec's description.
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! {u64,
        /// The fields of PMCNTENSET_EL0.
        pub PMCNTENSET_EL0 [
            /// PMICNTR_EL0 (instruction counter) enable.
            ///
            /// Requires FEAT_PMUv3_ICNTR.
            F0 OFFSET(32) NUMBITS(1) [],
            /// PMCCNTR_EL0 (cycle counter) enable: write 1 to enable.
            C OFFSET(31) NUMBITS(1) [],
            /// `PMEVCNTR<m>_EL0` enable, bit m: write 1 to enable.
            P OFFSET(0) NUMBITS(31) [],
        ],
        /// The fields of PMCNTENCLR_EL0.
        pub PMCNTENCLR_EL0 [
            /// PMICNTR_EL0 (instruction counter) disable.
            ///
            /// Requires FEAT_PMUv3_ICNTR.
            F0 OFFSET(32) NUMBITS(1) [],
            /// PMCCNTR_EL0 (cycle counter) disable: write 1 to disable.
            C OFFSET(31) NUMBITS(1) [],
            /// `PMEVCNTR<m>_EL0` disable, bit m: write 1 to disable.
            P OFFSET(0) NUMBITS(31) [],
        ]
    }
}

pub use fields::{PMCNTENCLR_EL0, PMCNTENSET_EL0};

/// A PMCNTENSET_EL0 value.
pub type PmcntensetEl0 = LocalRegisterCopy<u64, PMCNTENSET_EL0::Register>;
/// A PMCNTENCLR_EL0 value.
pub type PmcntenclrEl0 = LocalRegisterCopy<u64, PMCNTENCLR_EL0::Register>;
