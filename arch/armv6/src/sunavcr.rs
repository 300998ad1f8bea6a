//! SUNAVCR, the ARM1176 Secure User and Non-secure Access Validation Control Register.
//!
//! Source: ARM1176JZF-S TRM page 3-132 (and the
//! access tables of CR0 and CR1, Tables 3-140/3-141); accessed with
//! `mrc`/`mcr p15, 0, <Rt>, c15, c9, 0` ([`OPERANDS`]). Only privileged code can write
//! it. Its bit 0, V, opens PMCR, CCR, CR0 and CR1 (and the system validation
//! registers) to User mode: kmod-enable-user (stock flavour) sets it on load and writes the
//! previous value back on unload.

use tock_registers::LocalRegisterCopy;

/// The `mrc`/`mcr` operands of SUNAVCR (`{0}` is the core register).
pub const OPERANDS: &str = crate::cp15::cp15_operands!(SUNAVCR);

// tock-registers generates `Register`, `SET` and `CLEAR` without docs; the fields
// themselves carry the TRM's description.
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! {u32,
        /// The fields of SUNAVCR (bits \[31:1\] are UNP/SBZ).
        pub SUNAVCR [
            /// V, bit \[0\]: User mode (PL0) and Non-secure access to the performance
            /// monitor and system validation registers. 0 = privileged only, the reset
            /// value: a User-mode access is an Undefined Instruction exception (SIGILL
            /// under Linux). 1 = allowed.
            V OFFSET(0) NUMBITS(1) []
        ]
    }
}
pub use fields::SUNAVCR;

/// A SUNAVCR value.
pub type Sunavcr = LocalRegisterCopy<u32, SUNAVCR::Register>;

/// The value that grants User mode access (what a user-enable module writes on load).
pub const USER_ACCESS: Sunavcr = Sunavcr::new(1);

/// The value that takes it away again (the reset value; written on unload).
pub const PRIVILEGED_ONLY: Sunavcr = Sunavcr::new(0);

/// Whether `value` lets User mode reach the PMU registers.
pub fn user_access(value: Sunavcr) -> bool {
    value.is_set(SUNAVCR::V)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ARM1176JZF-S TRM page 3-132: V is bit 0 and the other bits are UNP/SBZ, so
    /// writing 0x1 grants access and 0x0 (the reset value) revokes it.
    #[test]
    fn grant_and_revoke_values() {
        assert_eq!(USER_ACCESS.get(), 0x1);
        assert_eq!(PRIVILEGED_ONLY.get(), 0x0);
        assert!(user_access(USER_ACCESS));
        assert!(!user_access(PRIVILEGED_ONLY));
        let mut built = Sunavcr::new(0);
        built.modify(SUNAVCR::V::SET);
        assert_eq!(built.get(), USER_ACCESS.get());
        // Only bit 0 has a meaning.
        assert!(!user_access(Sunavcr::new(0xFFFF_FFFE)));
    }
}
