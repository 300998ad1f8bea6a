//! PMINTENSET_EL1 and PMINTENCLR_EL1, Performance Monitors Interrupt Enable Set/Clear.
//!
//! Per-counter enable of the overflow interrupt request (on QEMU `virt` the PMU
//! interrupt is PPI 23). Same set/clear scheme and bit layout as PMCNTENSET_EL0: bit n
//! is `PMEVCNTR<n>_EL0`, bit 31 PMCCNTR_EL0. These are EL1 registers: EL0 accesses are
//! UNDEFINED whatever PMUSERENR_EL0 says. Source: Arm ARM (DDI 0487), "PMINTENSET_EL1"
//! and "PMINTENCLR_EL1"; Linux `armv8pmu_enable_intens`.

use tock_registers::LocalRegisterCopy;

// tock-registers generates the field constants, `Register`, `SET` and `CLEAR`
// without docs; each field's own doc line carries the spec's description.
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! {u64,
        /// The fields of PMINTENSET_EL1.
        pub PMINTENSET_EL1 [
            /// PMICNTR_EL0 overflow interrupt enable.
            ///
            /// Requires FEAT_PMUv3_ICNTR.
            F0 OFFSET(32) NUMBITS(1) [],
            /// PMCCNTR_EL0 overflow interrupt enable: write 1 to enable.
            C OFFSET(31) NUMBITS(1) [],
            /// `PMEVCNTR<m>_EL0` overflow interrupt enable, bit m: write 1 to enable.
            P OFFSET(0) NUMBITS(31) [],
        ],
        /// The fields of PMINTENCLR_EL1.
        pub PMINTENCLR_EL1 [
            /// PMICNTR_EL0 overflow interrupt disable.
            ///
            /// Requires FEAT_PMUv3_ICNTR.
            F0 OFFSET(32) NUMBITS(1) [],
            /// PMCCNTR_EL0 overflow interrupt disable: write 1 to disable.
            C OFFSET(31) NUMBITS(1) [],
            /// `PMEVCNTR<m>_EL0` overflow interrupt disable, bit m: write 1 to disable.
            P OFFSET(0) NUMBITS(31) [],
        ]
    }
}

pub use fields::{PMINTENCLR_EL1, PMINTENSET_EL1};

/// A PMINTENSET_EL1 value.
pub type PmintensetEl1 = LocalRegisterCopy<u64, PMINTENSET_EL1::Register>;
/// A PMINTENCLR_EL1 value.
pub type PmintenclrEl1 = LocalRegisterCopy<u64, PMINTENCLR_EL1::Register>;
