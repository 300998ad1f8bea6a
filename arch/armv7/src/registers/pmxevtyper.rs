//! PMXEVTYPER, Performance Monitors Selected Event Type Register (`c9, c13, 1`), and
//! PMCCFILTR, the cycle counter's filter, which PMXEVTYPER reaches when PMSELR.SEL = 31.
//!
//! The event number (evtCount) and the privilege filter of the counter PMSELR selects.
//! P and U *exclude* PL1 and PL0; NSH *includes* Hyp mode. The filter bits exist from
//! PMUv2 (with the Security Extensions: Cortex-A7, Cortex-A15); on PMUv1 (Cortex-A8,
//! A9) they are UNK/SBZP and every event counts in all modes. evtCount is 8 bits on
//! PMUv1/PMUv2, 10 on PMUv3, 16 from PMUv3p1.
//!
//! Sources: ARMv7-A/R ARM (DDI 0406C) C12 "PMXEVTYPER" and C12 "Filtering
//! by privilege level" (PMUv2); Arm ARM (DDI 0487) G8 "`PMEVTYPER<n>`", "PMCCFILTR";
//! Linux 6.12 drivers/perf/arm_v7_pmu.c (`ARMV7_EXCLUDE_PL1` BIT(31),
//! `ARMV7_EXCLUDE_USER` BIT(30), `ARMV7_INCLUDE_HYP` BIT(27), `ARMV7_EVTYPE_MASK`
//! 0xc80000ff, `armv7pmu_set_event_filter`).

use pmu_armv8::EventNumber;
use pmu_core::PrivilegeFilter;
use tock_registers::LocalRegisterCopy;

// tock-registers generates the field constants without docs.
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! {u32,
        /// The fields of PMXEVTYPER / `PMEVTYPER<n>` / PMCCFILTR (no evtCount there).
        pub PMXEVTYPER [
            /// 1: do not count in PL1 modes. PMUv2 and later.
            P OFFSET(31) NUMBITS(1) [],
            /// 1: do not count in User mode (PL0). PMUv2 and later.
            U OFFSET(30) NUMBITS(1) [],
            /// Non-secure PL1 filtering: when it differs from P, Non-secure PL1 is
            /// counted the other way.
            NSK OFFSET(29) NUMBITS(1) [],
            /// Non-secure PL0 filtering, likewise against U.
            NSU OFFSET(28) NUMBITS(1) [],
            /// 1: count in Hyp mode. Needs the Virtualization Extensions.
            NSH OFFSET(27) NUMBITS(1) [],
            /// The event number: bits 7:0 on PMUv1/PMUv2, 9:0 on PMUv3, 15:0 from
            /// PMUv3p1 (higher bits RES0 before).
            evtCount OFFSET(0) NUMBITS(16) [],
        ]
    }
}

pub use fields::PMXEVTYPER;

/// A PMXEVTYPER (or `PMEVTYPER<n>`) value.
pub type Pmxevtyper = LocalRegisterCopy<u32, PMXEVTYPER::Register>;
/// A PMCCFILTR value (evtCount RES0).
pub type Pmccfiltr = LocalRegisterCopy<u32, PMXEVTYPER::Register>;

/// The filter bits alone (P, U, NSH) for `filter`, Non-secure view as Linux writes
/// them: P = !kernel, U = !user, NSH = hypervisor, NSK = NSU = 0.
pub fn filter_bits(filter: PrivilegeFilter) -> Pmccfiltr {
    let mut value = Pmccfiltr::new(0);
    value.write(
        PMXEVTYPER::P.val(u32::from(!filter.kernel))
            + PMXEVTYPER::U.val(u32::from(!filter.user))
            + PMXEVTYPER::NSH.val(u32::from(filter.hypervisor)),
    );
    value
}

/// PMXEVTYPER for `event` counted in the levels of `filter`.
pub fn for_event(event: EventNumber, filter: PrivilegeFilter) -> Pmxevtyper {
    let mut value = filter_bits(filter);
    value.modify(PMXEVTYPER::evtCount.val(u32::from(event.get())));
    value
}

/// The levels a PMXEVTYPER / PMCCFILTR value counts in (P, U, NSH).
pub fn filter_of(value: Pmxevtyper) -> PrivilegeFilter {
    PrivilegeFilter {
        user: !value.is_set(PMXEVTYPER::U),
        kernel: !value.is_set(PMXEVTYPER::P),
        hypervisor: value.is_set(PMXEVTYPER::NSH),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Linux 6.12 drivers/perf/arm_v7_pmu.c `armv7pmu_set_event_filter`:
    /// exclude_kernel sets `ARMV7_EXCLUDE_PL1` (BIT(31)), exclude_user
    /// `ARMV7_EXCLUDE_USER` (BIT(30)), !exclude_hv `ARMV7_INCLUDE_HYP` (BIT(27)), and
    /// `perf stat -e instructions:u` on a Cortex-A7 writes 0x80000008.
    #[test]
    fn user_only_instructions_as_linux_writes_it() {
        let v = for_event(EventNumber::INST_RETIRED, PrivilegeFilter::USER);
        assert_eq!(v.get(), 0x8000_0008);
        assert_eq!(filter_of(v), PrivilegeFilter::USER);
        assert_eq!(filter_bits(PrivilegeFilter::KERNEL).get(), 1 << 30);
        assert_eq!(filter_bits(PrivilegeFilter::ALL).get(), 1 << 27);
        // ARMV7_EVTYPE_MASK: the bits Linux may set.
        assert_eq!(
            for_event(EventNumber::new(0xff), PrivilegeFilter::USER).get() & !0xc800_00ff,
            0
        );
    }
}
