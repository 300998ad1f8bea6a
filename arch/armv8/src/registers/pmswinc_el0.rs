//! PMSWINC_EL0, Performance Monitors Software Increment register.
//!
//! Write-only: writing 1 to bit n increments `PMEVCNTR<n>_EL0` when that counter is
//! enabled and counts event 0x00 SW_INCR. Source: Arm ARM (DDI 0487), "PMSWINC_EL0".

use tock_registers::LocalRegisterCopy;

// tock-registers generates the field constants, `Register`, `SET` and `CLEAR`
// without docs; each field's own doc line carries the spec's description.
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! {u64,
        /// The fields of PMSWINC_EL0.
        pub PMSWINC_EL0 [
            /// Software increment of `PMEVCNTR<m>_EL0`, bit m. Write-only.
            P OFFSET(0) NUMBITS(31) [],
        ]
    }
}

pub use fields::PMSWINC_EL0;

/// A PMSWINC_EL0 value.
pub type PmswincEl0 = LocalRegisterCopy<u64, PMSWINC_EL0::Register>;
