//! AMD PERF_CTLn (PerfEvtSeln): the event select register of core counter n.
//!
//! Source: AMD64 APM Vol. 2, "Performance Counters", figure "Core Performance Event-Select
//! Register (PerfEvtSeln)": the low 32 bits are laid out like Intel's IA32_PERFEVTSELx
//! (without PC and ANY), bits 35:32 extend the event select to 12 bits, bit 40 GuestOnly
//! and bit 41 HostOnly restrict counting to guest or host (both 0: count both). The MSR
//! addresses are in [`crate::msr::AmdCounterLayout`].

use pmu_core::{Error, PrivilegeFilter};
use tock_registers::{register_bitfields, LocalRegisterCopy};

use crate::amd_events::AmdEvent;

register_bitfields! {u64,
    /// PERF_CTLn fields, named as in the APM.
    #[allow(missing_docs, reason = "register_bitfields! generates undocumented items; every field is documented")]
    pub AMD_PERF_CTL [
        /// EventSelect\[7:0\].
        EventSelect OFFSET(0) NUMBITS(8) [],
        /// UnitMask.
        UnitMask OFFSET(8) NUMBITS(8) [],
        /// USR: count while CPL > 0.
        USR OFFSET(16) NUMBITS(1) [],
        /// OS: count while CPL = 0.
        OS OFFSET(17) NUMBITS(1) [],
        /// E: edge detect.
        E OFFSET(18) NUMBITS(1) [],
        /// INT: interrupt on overflow.
        INT OFFSET(20) NUMBITS(1) [],
        /// EN: enable the counter.
        EN OFFSET(22) NUMBITS(1) [],
        /// INV: invert the counter-mask comparison.
        INV OFFSET(23) NUMBITS(1) [],
        /// CntMask: counter mask.
        CntMask OFFSET(24) NUMBITS(8) [],
        /// EventSelect\[11:8\].
        EventSelectHi OFFSET(32) NUMBITS(4) [],
        /// GuestOnly: count only while in a guest (SVM).
        GuestOnly OFFSET(40) NUMBITS(1) [],
        /// HostOnly: count only while in the host (SVM).
        HostOnly OFFSET(41) NUMBITS(1) [],
    ]
}

/// A value of PERF_CTLn.
pub type AmdPerfCtl = LocalRegisterCopy<u64, AMD_PERF_CTL::Register>;

/// The event select that counts `event` in the levels of `filter`, disabled (EN = 0),
/// without interrupt, in host and guest alike (`filter.hypervisor` is ignored).
///
/// # Errors
/// [`Error::FilterUnsupported`] when `filter` selects neither user nor kernel.
pub fn counting(event: AmdEvent, filter: PrivilegeFilter) -> Result<AmdPerfCtl, Error> {
    if !filter.user && !filter.kernel {
        return Err(Error::FilterUnsupported { filter });
    }
    let mut reg = AmdPerfCtl::new(event.bits());
    if filter.user {
        reg.modify(AMD_PERF_CTL::USR::SET);
    }
    if filter.kernel {
        reg.modify(AMD_PERF_CTL::OS::SET);
    }
    Ok(reg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use AMD_PERF_CTL::*;

    /// APM Vol. 2 PerfEvtSeln: a 12-bit event select splits into bits 7:0 and 35:32, so
    /// event 1C0h with unit mask 07h is written 0x1_0000_07C0.
    #[test]
    fn twelve_bit_event_select_splits() {
        let mut reg = AmdPerfCtl::new(0);
        reg.write(EventSelect.val(0xC0) + EventSelectHi.val(0x1) + UnitMask.val(0x07));
        assert_eq!(reg.get(), 0x1_0000_07C0);
        assert_eq!(
            AmdEvent::new(0x1C0, 0x07).map(AmdEvent::bits),
            Ok(reg.get())
        );
    }

    /// Same low-word layout as Intel: Retired Instructions (C0h) user+kernel enabled is
    /// 0x4300C0; GuestOnly/HostOnly are bits 40/41 (Linux AMD64_EVENTSEL_GUESTONLY/
    /// HOSTONLY).
    #[test]
    fn field_positions() {
        let mut reg = AmdPerfCtl::new(0);
        reg.write(EventSelect.val(0xC0) + USR::SET + OS::SET + EN::SET);
        assert_eq!(reg.get(), 0x43_00C0);
        let bit = |f: tock_registers::fields::Field<u64, Register>| f.mask << f.shift;
        assert_eq!(bit(E), 1 << 18);
        assert_eq!(bit(INT), 1 << 20);
        assert_eq!(bit(INV), 1 << 23);
        assert_eq!(bit(CntMask), 0xFF << 24);
        assert_eq!(bit(GuestOnly), 1 << 40);
        assert_eq!(bit(HostOnly), 1 << 41);
    }

    /// APM Vol. 2 PerfEvtSeln: USR (bit 16) counts at CPL > 0, OS (bit 17) at CPL 0.
    #[test]
    fn counting_maps_the_filter() {
        let cycles = AmdEvent::CYCLES_NOT_IN_HALT;
        assert_eq!(
            counting(cycles, PrivilegeFilter::USER).unwrap().get(),
            0x1_0076
        );
        assert_eq!(
            counting(cycles, PrivilegeFilter::KERNEL).unwrap().get(),
            0x2_0076
        );
        let none = PrivilegeFilter {
            user: false,
            kernel: false,
            hypervisor: true,
        };
        assert_eq!(
            counting(cycles, none).err(),
            Some(Error::FilterUnsupported { filter: none })
        );
    }
}
