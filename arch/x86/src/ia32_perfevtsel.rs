//! IA32_PERFEVTSELx: the event select register of general-purpose counter x.
//!
//! Source: SDM Vol. 3B, "Architectural Performance Monitoring Version 1", figure "Layout
//! of IA32_PERFEVTSELx MSRs", and version 3 for ANY (bit 21). The value types are pure:
//! the PMU writes them with WRMSR to [`crate::msr::ia32_perfevtsel`]`(x)`.

use pmu_core::{Error, PrivilegeFilter};
use tock_registers::{register_bitfields, LocalRegisterCopy};

use crate::events::IntelEvent;

register_bitfields! {u64,
    /// IA32_PERFEVTSELx fields, named as the SDM figure names them.
    #[allow(missing_docs, reason = "register_bitfields! generates undocumented items; every field is documented")]
    pub IA32_PERFEVTSEL [
        /// Event Select: the event logic unit's event number (bits 7:0).
        EventSelect OFFSET(0) NUMBITS(8) [],
        /// Unit Mask: the condition within the event (bits 15:8).
        UMask OFFSET(8) NUMBITS(8) [],
        /// USR: count while CPL is 1, 2 or 3.
        USR OFFSET(16) NUMBITS(1) [],
        /// OS: count while CPL is 0.
        OS OFFSET(17) NUMBITS(1) [],
        /// E (edge detect): count deasserted-to-asserted transitions of the condition.
        E OFFSET(18) NUMBITS(1) [],
        /// PC (pin control): toggle the PMi pins; must be 0 on recent processors.
        PC OFFSET(19) NUMBITS(1) [],
        /// INT: raise a performance-monitoring interrupt (local APIC) on overflow.
        INT OFFSET(20) NUMBITS(1) [],
        /// ANY (AnyThread, version 3+): count events of every logical processor of the
        /// core. Deprecated when CPUID.0AH:EDX\[15\] = 1.
        ANY OFFSET(21) NUMBITS(1) [],
        /// EN: enable the counter.
        EN OFFSET(22) NUMBITS(1) [],
        /// INV: invert the counter-mask comparison.
        INV OFFSET(23) NUMBITS(1) [],
        /// CMASK: count only cycles with at least this many occurrences (0: count all).
        CMASK OFFSET(24) NUMBITS(8) [],
    ]
}

/// A value of IA32_PERFEVTSELx.
pub type Ia32PerfEvtSel = LocalRegisterCopy<u64, IA32_PERFEVTSEL::Register>;

/// The event select that counts `event` in the privilege levels of `filter`, left disabled
/// (EN = 0) and without interrupt.
///
/// x86 filters by CPL only: `filter.hypervisor` is ignored (ring 0 of a hypervisor is
/// CPL 0 like any kernel).
///
/// # Errors
/// [`Error::FilterUnsupported`] when `filter` selects neither user nor kernel: such a
/// counter would never count.
pub fn counting(event: IntelEvent, filter: PrivilegeFilter) -> Result<Ia32PerfEvtSel, Error> {
    if !filter.user && !filter.kernel {
        return Err(Error::FilterUnsupported { filter });
    }
    let mut reg = Ia32PerfEvtSel::new(event.bits());
    if filter.user {
        reg.modify(IA32_PERFEVTSEL::USR::SET);
    }
    if filter.kernel {
        reg.modify(IA32_PERFEVTSEL::OS::SET);
    }
    Ok(reg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use IA32_PERFEVTSEL::*;

    /// INST_RETIRED.ANY_P (C0H/00H, architectural "Instruction Retired") counting user and
    /// kernel, enabled: USR (16) | OS (17) | EN (22) | C0H = 0x4300C0 (SDM Vol. 3B,
    /// IA32_PERFEVTSELx layout).
    #[test]
    fn inst_retired_user_kernel_enabled_is_0x4300c0() {
        let mut reg = Ia32PerfEvtSel::new(0);
        reg.write(EventSelect.val(0xC0) + UMask.val(0x00) + USR::SET + OS::SET + EN::SET);
        assert_eq!(reg.get(), 0x0043_00C0);

        let back = Ia32PerfEvtSel::new(0x0043_00C0);
        assert_eq!(back.read(EventSelect), 0xC0);
        assert_eq!(back.read(UMask), 0);
        assert!(back.is_set(USR) && back.is_set(OS) && back.is_set(EN));
        assert!(!back.is_set(E) && !back.is_set(INT) && !back.is_set(ANY) && !back.is_set(INV));
        assert_eq!(back.read(CMASK), 0);
    }

    /// Every field at the bit the SDM figure shows.
    #[test]
    fn field_positions() {
        let bit = |f: tock_registers::fields::Field<u64, Register>| f.mask << f.shift;
        assert_eq!(bit(EventSelect), 0xFF);
        assert_eq!(bit(UMask), 0xFF00);
        assert_eq!(bit(USR), 1 << 16);
        assert_eq!(bit(OS), 1 << 17);
        assert_eq!(bit(E), 1 << 18);
        assert_eq!(bit(PC), 1 << 19);
        assert_eq!(bit(INT), 1 << 20);
        assert_eq!(bit(ANY), 1 << 21);
        assert_eq!(bit(EN), 1 << 22);
        assert_eq!(bit(INV), 1 << 23);
        assert_eq!(bit(CMASK), 0xFF << 24);
    }

    /// The privilege filter maps to USR/OS; the event fields stay; EN stays 0.
    #[test]
    fn counting_sets_usr_os_from_the_filter() {
        let ins = IntelEvent::new(0xC0, 0);
        assert_eq!(counting(ins, PrivilegeFilter::ALL).unwrap().get(), 0x3_00C0);
        assert_eq!(
            counting(ins, PrivilegeFilter::USER).unwrap().get(),
            0x1_00C0
        );
        assert_eq!(
            counting(ins, PrivilegeFilter::KERNEL).unwrap().get(),
            0x2_00C0
        );
        let hv_only = PrivilegeFilter {
            user: false,
            kernel: false,
            hypervisor: true,
        };
        assert_eq!(
            counting(ins, hv_only).err(),
            Some(Error::FilterUnsupported { filter: hv_only })
        );
        // LLC Misses (2EH/41H) with CMASK 1 keeps its fields.
        let llc = IntelEvent::new(0x2E, 0x41).with_cmask(1);
        assert_eq!(
            counting(llc, PrivilegeFilter::ALL).unwrap().get(),
            0x0103_412E
        );
    }
}
