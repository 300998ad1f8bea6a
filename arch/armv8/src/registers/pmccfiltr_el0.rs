//! PMCCFILTR_EL0, Performance Monitors Cycle Count Filter Register.
//!
//! The privilege filter of PMCCNTR_EL0 (which always counts CPU cycles), with the same
//! bits and the same exclusion sense as `PMEVTYPER<n>_EL0`. Source: Arm ARM (DDI 0487),
//! "PMCCFILTR_EL0, Performance Monitors Cycle Count Filter Register"; Linux
//! `write_pmccfiltr` in `armv8pmu_write_event_type`.

use pmu_core::PrivilegeFilter;
use tock_registers::LocalRegisterCopy;

// tock-registers generates the field constants, `Register`, `SET` and `CLEAR`
// without docs; each field's own doc line carries the spec's description.
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! {u64,
        /// The fields of PMCCFILTR_EL0.
        pub PMCCFILTR_EL0 [
            /// SVE mode filtering: Streaming / Non-streaming SVE mode.
            ///
            /// Requires FEAT_PMUv3_SME.
            VS OFFSET(56) NUMBITS(2) [],

            /// EL1 filtering: 1 = do not count cycles in EL1.
            P OFFSET(31) NUMBITS(1) [],

            /// EL0 filtering: 1 = do not count cycles in EL0.
            U OFFSET(30) NUMBITS(1) [],

            /// Non-secure EL1 filtering: when it differs from P, cycles in Non-secure EL1
            /// are not counted.
            NSK OFFSET(29) NUMBITS(1) [],

            /// Non-secure EL0 filtering: when it differs from U, cycles in Non-secure EL0
            /// are not counted.
            NSU OFFSET(28) NUMBITS(1) [],

            /// Non-secure EL2 filtering: 1 = count cycles in (Non-secure) EL2.
            NSH OFFSET(27) NUMBITS(1) [],

            /// EL3 filtering: when it differs from P, cycles in EL3 are not counted.
            M OFFSET(26) NUMBITS(1) [],

            /// Secure EL2 filtering: when it equals NSH, cycles in Secure EL2 are not
            /// counted.
            ///
            /// Requires FEAT_SEL2.
            SH OFFSET(24) NUMBITS(1) [],

            /// Non-transactional state filtering.
            ///
            /// Requires FEAT_TME.
            T OFFSET(23) NUMBITS(1) [],

            /// Realm EL1 filtering: when it differs from P, cycles in Realm EL1 are not
            /// counted.
            ///
            /// Requires FEAT_RME.
            RLK OFFSET(22) NUMBITS(1) [],

            /// Realm EL0 filtering: when it differs from U, cycles in Realm EL0 are not
            /// counted.
            ///
            /// Requires FEAT_RME.
            RLU OFFSET(21) NUMBITS(1) [],

            /// Realm EL2 filtering: when it equals NSH, cycles in Realm EL2 are not
            /// counted.
            ///
            /// Requires FEAT_RME.
            RLH OFFSET(20) NUMBITS(1) [],
        ]
    }
}

pub use fields::PMCCFILTR_EL0;

/// A PMCCFILTR_EL0 value.
pub type PmccfiltrEl0 = LocalRegisterCopy<u64, PMCCFILTR_EL0::Register>;

/// The PMCCFILTR_EL0 value that counts cycles in the levels of `filter` (P, U exclude
/// EL1, EL0; NSH includes EL2; as for `PMEVTYPER<n>_EL0`).
pub fn for_filter(filter: PrivilegeFilter) -> PmccfiltrEl0 {
    let mut value = PmccfiltrEl0::new(0);
    value.write(
        PMCCFILTR_EL0::P.val(u64::from(!filter.kernel))
            + PMCCFILTR_EL0::U.val(u64::from(!filter.user))
            + PMCCFILTR_EL0::NSH.val(u64::from(filter.hypervisor)),
    );
    value
}

/// The levels a PMCCFILTR_EL0 value counts in (Non-secure view: P, U, NSH).
pub fn filter_of(value: PmccfiltrEl0) -> PrivilegeFilter {
    PrivilegeFilter {
        user: !value.is_set(PMCCFILTR_EL0::U),
        kernel: !value.is_set(PMCCFILTR_EL0::P),
        hypervisor: value.is_set(PMCCFILTR_EL0::NSH),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Same exclusion bits as PMEVTYPER (Linux writes `config_base` to both,
    /// drivers/perf/arm_pmuv3.c `armv8pmu_write_event_type`).
    #[test]
    fn exclusion_bits() {
        assert_eq!(for_filter(PrivilegeFilter::USER).get(), 1 << 31);
        assert_eq!(for_filter(PrivilegeFilter::KERNEL).get(), 1 << 30);
        assert_eq!(for_filter(PrivilegeFilter::ALL).get(), 1 << 27);
        for f in [
            PrivilegeFilter::USER,
            PrivilegeFilter::KERNEL,
            PrivilegeFilter::ALL,
        ] {
            assert_eq!(filter_of(for_filter(f)), f);
        }
    }
}
