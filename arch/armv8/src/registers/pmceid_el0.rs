//! PMCEID0_EL0 and PMCEID1_EL0, Performance Monitors Common Event Identification.
//!
//! One bit per common event: PMCEID0_EL0 bit n says whether event n (0x00..=0x1F) is
//! implemented, PMCEID1_EL0 bit n event 0x20 + n; the upper halves (IDhi, from
//! FEAT_PMUv3p1) cover 0x4000 + n and 0x4020 + n. Read-only. Source: Arm ARM
//! (DDI 0487), "PMCEID0_EL0" and "PMCEID1_EL0"; Linux `__armv8pmu_probe_pmu`
//! (`pmceid_bitmap`, `pmceid_ext_bitmap`).

use tock_registers::LocalRegisterCopy;

// tock-registers generates the field constants, `Register`, `SET` and `CLEAR`
// without docs; each field's own doc line carries the spec's description.
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! {u64,
        /// The fields of PMCEID0_EL0.
        pub PMCEID0_EL0 [
            /// IDhi[n]: common event 0x4000 + n is implemented.
            ///
            /// Requires FEAT_PMUv3p1 (RES0 otherwise).
            IDhi OFFSET(32) NUMBITS(32) [],
            /// ID[n]: common event n is implemented.
            ID OFFSET(0) NUMBITS(32) [],
        ],
        /// The fields of PMCEID1_EL0.
        pub PMCEID1_EL0 [
            /// IDhi[n]: common event 0x4020 + n is implemented.
            ///
            /// Requires FEAT_PMUv3p1 (RES0 otherwise).
            IDhi OFFSET(32) NUMBITS(32) [],
            /// ID[n]: common event 0x20 + n is implemented.
            ID OFFSET(0) NUMBITS(32) [],
        ]
    }
}

pub use fields::{PMCEID0_EL0, PMCEID1_EL0};

/// A PMCEID0_EL0 value.
pub type Pmceid0El0 = LocalRegisterCopy<u64, PMCEID0_EL0::Register>;
/// A PMCEID1_EL0 value.
pub type Pmceid1El0 = LocalRegisterCopy<u64, PMCEID1_EL0::Register>;
