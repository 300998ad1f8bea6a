//! PMSELR_EL0, Performance Monitors Event Counter Selection Register.
//!
//! Selects the counter that PMXEVTYPER_EL0/PMXEVCNTR_EL0 reach. This crate does not
//! use that indirection: the numbered `PMEVTYPER<n>_EL0`/`PMEVCNTR<n>_EL0` encodings name
//! the counter in the instruction, so an interrupt between select and access cannot
//! redirect it. The register is here for completeness and for code that must use it.
//! Source: Arm ARM (DDI 0487), "PMSELR_EL0"; Linux arch/arm64/tools/sysreg.

use tock_registers::LocalRegisterCopy;

// tock-registers generates the field constants, `Register`, `SET` and `CLEAR`
// without docs; each field's own doc line carries the spec's description.
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! {u64,
        /// The fields of PMSELR_EL0.
        pub PMSELR_EL0 [
            /// Event counter select: 0..=30 a `PMEVCNTR<n>_EL0`, 31 selects PMCCFILTR_EL0
            /// for PMXEVTYPER_EL0.
            SEL OFFSET(0) NUMBITS(5) [],
        ]
    }
}

pub use fields::PMSELR_EL0;

/// A PMSELR_EL0 value.
pub type PmselrEl0 = LocalRegisterCopy<u64, PMSELR_EL0::Register>;
