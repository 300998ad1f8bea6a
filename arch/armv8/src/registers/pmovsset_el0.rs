//! PMOVSSET_EL0 and PMOVSCLR_EL0, Performance Monitors Overflow Flag Status Set/Clear.
//!
//! One overflow flag per counter, set by hardware on unsigned overflow (at bit 32, or
//! bit 64 with PMCR_EL0.LP/LC). Reading either register gives the flags; writing 1 to a
//! bit of PMOVSCLR_EL0 clears that flag only (write-one-to-clear), writing 1 to
//! PMOVSSET_EL0 sets it. Bit n is `PMEVCNTR<n>_EL0`, bit 31 PMCCNTR_EL0. Source: Arm ARM
//! (DDI 0487), "PMOVSSET_EL0" and "PMOVSCLR_EL0"; Linux `ARMV8_PMU_OVSR_*`.

use tock_registers::LocalRegisterCopy;

// tock-registers generates the field constants, `Register`, `SET` and `CLEAR`
// without docs; each field's own doc line carries the spec's description.
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! {u64,
        /// The fields of PMOVSSET_EL0.
        pub PMOVSSET_EL0 [
            /// PMICNTR_EL0 overflow flag.
            ///
            /// Requires FEAT_PMUv3_ICNTR.
            F0 OFFSET(32) NUMBITS(1) [],
            /// PMCCNTR_EL0 overflow flag: write 1 to set.
            C OFFSET(31) NUMBITS(1) [],
            /// `PMEVCNTR<m>_EL0` overflow flag, bit m: write 1 to set.
            P OFFSET(0) NUMBITS(31) [],
        ],
        /// The fields of PMOVSCLR_EL0.
        pub PMOVSCLR_EL0 [
            /// PMICNTR_EL0 overflow flag.
            ///
            /// Requires FEAT_PMUv3_ICNTR.
            F0 OFFSET(32) NUMBITS(1) [],
            /// PMCCNTR_EL0 overflow flag: write 1 to clear.
            C OFFSET(31) NUMBITS(1) [],
            /// `PMEVCNTR<m>_EL0` overflow flag, bit m: write 1 to clear.
            P OFFSET(0) NUMBITS(31) [],
        ]
    }
}

pub use fields::{PMOVSCLR_EL0, PMOVSSET_EL0};

/// A PMOVSSET_EL0 value.
pub type PmovssetEl0 = LocalRegisterCopy<u64, PMOVSSET_EL0::Register>;
/// A PMOVSCLR_EL0 value.
pub type PmovsclrEl0 = LocalRegisterCopy<u64, PMOVSCLR_EL0::Register>;
