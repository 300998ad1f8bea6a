//! `PMEVTYPER<n>_EL0`, Performance Monitors Event Type Registers (n = 0..=30).
//!
//! Which event counter n counts (evtCount) and in which Exception levels. The filter
//! bits P, U exclude: P = 1 means *do not* count at EL1, U = 1 *do not* count at EL0;
//! NSH = 1 *includes* EL2. Source: Arm ARM (DDI 0487), "`PMEVTYPER<n>_EL0`, Performance
//! Monitors Event Type Registers"; Linux `include/linux/perf/arm_pmuv3.h`
//! (`ARMV8_PMU_EXCLUDE_EL1` = bit 31, `ARMV8_PMU_EXCLUDE_EL0` = bit 30,
//! `ARMV8_PMU_INCLUDE_EL2` = bit 27, `ARMV8_PMU_EVTYPE_EVENT` = bits 15:0) and
//! `armv8pmu_set_event_filter` in `drivers/perf/arm_pmuv3.c`.

use pmu_core::PrivilegeFilter;
use tock_registers::LocalRegisterCopy;

use crate::events::EventNumber;

// tock-registers generates the field constants, `Register`, `SET` and `CLEAR`
// without docs; each field's own doc line carries the spec's description.
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! {u64,
        /// The fields of `PMEVTYPER<n>_EL0`.
        pub PMEVTYPERn_EL0 [
            /// Threshold condition: how the event is compared with TH.
            ///
            /// Requires FEAT_PMUv3_TH.
            TC OFFSET(61) NUMBITS(3) [],

            /// Threshold value the event is compared with.
            ///
            /// Requires FEAT_PMUv3_TH.
            TH OFFSET(32) NUMBITS(12) [],

            /// EL1 filtering: 1 = do not count events in EL1.
            P OFFSET(31) NUMBITS(1) [],

            /// EL0 filtering: 1 = do not count events in EL0.
            U OFFSET(30) NUMBITS(1) [],

            /// Non-secure EL1 filtering: when it differs from P, events in Non-secure EL1
            /// are not counted.
            NSK OFFSET(29) NUMBITS(1) [],

            /// Non-secure EL0 filtering: when it differs from U, events in Non-secure EL0
            /// are not counted.
            NSU OFFSET(28) NUMBITS(1) [],

            /// Non-secure EL2 filtering: 1 = count events in (Non-secure) EL2.
            NSH OFFSET(27) NUMBITS(1) [],

            /// EL3 filtering: when it differs from P, events in EL3 are not counted.
            M OFFSET(26) NUMBITS(1) [],

            /// Multithreading: count events of all PEs of the core.
            ///
            /// Requires FEAT_MTPMU (IMPLEMENTATION DEFINED or RES0 otherwise).
            MT OFFSET(25) NUMBITS(1) [],

            /// Secure EL2 filtering: when it equals NSH, events in Secure EL2 are not
            /// counted.
            ///
            /// Requires FEAT_SEL2.
            SH OFFSET(24) NUMBITS(1) [],

            /// Event to count. 16 bits from FEAT_PMUv3p1; 10 bits (15:10 RES0) in PMUv3.
            evtCount OFFSET(0) NUMBITS(16) [],
        ]
    }
}

pub use fields::PMEVTYPERn_EL0;

/// A `PMEVTYPER<n>_EL0` value.
pub type PmevtypernEl0 = LocalRegisterCopy<u64, PMEVTYPERn_EL0::Register>;

/// The `PMEVTYPER<n>_EL0` value that counts `event` in the levels of `filter`.
///
/// Like Linux's `armv8pmu_set_event_filter` for a kernel at EL1: P and U exclude EL1
/// and EL0, NSH includes EL2. NSK, NSU and M stay 0 (equal to P/U, or no effect),
/// so Secure and Non-secure states are treated alike.
pub fn for_event(event: EventNumber, filter: PrivilegeFilter) -> PmevtypernEl0 {
    let mut value = PmevtypernEl0::new(0);
    value.write(
        PMEVTYPERn_EL0::evtCount.val(u64::from(event.get()))
            + PMEVTYPERn_EL0::P.val(u64::from(!filter.kernel))
            + PMEVTYPERn_EL0::U.val(u64::from(!filter.user))
            + PMEVTYPERn_EL0::NSH.val(u64::from(filter.hypervisor)),
    );
    value
}

/// The levels a `PMEVTYPER<n>_EL0` value counts in (Non-secure view: P, U, NSH).
pub fn filter_of(value: PmevtypernEl0) -> PrivilegeFilter {
    PrivilegeFilter {
        user: !value.is_set(PMEVTYPERn_EL0::U),
        kernel: !value.is_set(PMEVTYPERn_EL0::P),
        hypervisor: value.is_set(PMEVTYPERn_EL0::NSH),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// User-only INST_RETIRED: P = 1 (exclude EL1), U = 0. Linux builds the same value
    /// for `perf stat -e instructions:u` (`ARMV8_PMU_EXCLUDE_EL1 | 0x08`,
    /// drivers/perf/arm_pmuv3.c `armv8pmu_set_event_filter`).
    #[test]
    fn user_only_sets_p() {
        let v = for_event(EventNumber::INST_RETIRED, PrivilegeFilter::USER);
        assert_eq!(v.get(), 0x8000_0008);
        assert!(v.is_set(PMEVTYPERn_EL0::P));
        assert!(!v.is_set(PMEVTYPERn_EL0::U));
        assert_eq!(filter_of(v), PrivilegeFilter::USER);
    }

    /// Kernel-only CPU_CYCLES: U = 1 (exclude EL0), P = 0 (`instructions:k`).
    #[test]
    fn kernel_only_sets_u() {
        let v = for_event(EventNumber::CPU_CYCLES, PrivilegeFilter::KERNEL);
        assert_eq!(v.get(), 0x4000_0011);
        assert!(v.is_set(PMEVTYPERn_EL0::U));
        assert!(!v.is_set(PMEVTYPERn_EL0::P));
        assert_eq!(filter_of(v), PrivilegeFilter::KERNEL);
    }

    /// Everything: no exclusion, EL2 included (`ARMV8_PMU_INCLUDE_EL2` = bit 27).
    #[test]
    fn all_levels_include_el2() {
        let v = for_event(EventNumber::SW_INCR, PrivilegeFilter::ALL);
        assert_eq!(v.get(), 1 << 27);
        let wide = for_event(EventNumber::new(0x4004), PrivilegeFilter::ALL);
        assert_eq!(wide.read(PMEVTYPERn_EL0::evtCount), 0x4004);
    }

    proptest! {
        /// Encoding and decoding a filter and an event number round-trips.
        #[test]
        fn round_trip(event: u16, user: bool, kernel: bool, hypervisor: bool) {
            let filter = PrivilegeFilter { user, kernel, hypervisor };
            let v = for_event(EventNumber::new(event), filter);
            prop_assert_eq!(filter_of(v), filter);
            prop_assert_eq!(v.read(PMEVTYPERn_EL0::evtCount), u64::from(event));
            // Nothing outside P, U, NSH and evtCount is ever set.
            prop_assert_eq!(v.get() & !0xC800_FFFF, 0);
        }
    }
}
