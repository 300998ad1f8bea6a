//! IA32_FIXED_CTR_CTRL: four control bits per fixed-function counter.
//!
//! Source: SDM Vol. 3B, "Architectural Performance Monitoring Version 2", figure "Layout
//! of IA32_FIXED_CTR_CTRL MSR", and SDM Vol. 4, IA32_FIXED_CTR_CTRL (38DH): counter `i`
//! owns bits 4i+3..4i: ENi_OS (count at CPL 0), ENi_Usr (count at CPL > 0), AnyThread,
//! ENi_PMI (interrupt on overflow). The two enable bits together are the "ENABLE" field:
//! 0 disabled, 1 OS, 2 User, 3 all ring levels.

use pmu_core::{Error, PrivilegeFilter};
use tock_registers::fields::Field;
use tock_registers::{register_bitfields, LocalRegisterCopy};

register_bitfields! {u64,
    /// IA32_FIXED_CTR_CTRL fields for fixed counters 0-3, named as in SDM Vol. 4.
    #[allow(missing_docs, reason = "register_bitfields! generates undocumented items; every field is documented")]
    pub IA32_FIXED_CTR_CTRL [
        /// Fixed counter 0 (INST_RETIRED.ANY) counts at CPL 0.
        EN0_OS OFFSET(0) NUMBITS(1) [],
        /// Fixed counter 0 counts at CPL > 0.
        EN0_Usr OFFSET(1) NUMBITS(1) [],
        /// Fixed counter 0 counts for every logical processor of the core (version 3+).
        AnyThread0 OFFSET(2) NUMBITS(1) [],
        /// Fixed counter 0 raises a PMI on overflow.
        EN0_PMI OFFSET(3) NUMBITS(1) [],
        /// Fixed counter 1 (CPU_CLK_UNHALTED.CORE) counts at CPL 0.
        EN1_OS OFFSET(4) NUMBITS(1) [],
        /// Fixed counter 1 counts at CPL > 0.
        EN1_Usr OFFSET(5) NUMBITS(1) [],
        /// Fixed counter 1 AnyThread.
        AnyThread1 OFFSET(6) NUMBITS(1) [],
        /// Fixed counter 1 raises a PMI on overflow.
        EN1_PMI OFFSET(7) NUMBITS(1) [],
        /// Fixed counter 2 (CPU_CLK_UNHALTED.REF_TSC) counts at CPL 0.
        EN2_OS OFFSET(8) NUMBITS(1) [],
        /// Fixed counter 2 counts at CPL > 0.
        EN2_Usr OFFSET(9) NUMBITS(1) [],
        /// Fixed counter 2 AnyThread.
        AnyThread2 OFFSET(10) NUMBITS(1) [],
        /// Fixed counter 2 raises a PMI on overflow.
        EN2_PMI OFFSET(11) NUMBITS(1) [],
        /// Fixed counter 3 (TOPDOWN.SLOTS) counts at CPL 0.
        EN3_OS OFFSET(12) NUMBITS(1) [],
        /// Fixed counter 3 counts at CPL > 0.
        EN3_Usr OFFSET(13) NUMBITS(1) [],
        /// Fixed counter 3 AnyThread.
        AnyThread3 OFFSET(14) NUMBITS(1) [],
        /// Fixed counter 3 raises a PMI on overflow.
        EN3_PMI OFFSET(15) NUMBITS(1) [],
    ]
}

register_bitfields! {u8,
    /// One counter's four control bits, as they sit in its nibble.
    #[allow(missing_docs, reason = "register_bitfields! generates undocumented items; every field is documented")]
    pub FIXED_CTR_CONTROL [
        /// Count at CPL 0 (ENi_OS).
        OS OFFSET(0) NUMBITS(1) [],
        /// Count at CPL > 0 (ENi_Usr).
        Usr OFFSET(1) NUMBITS(1) [],
        /// AnyThread.
        AnyThread OFFSET(2) NUMBITS(1) [],
        /// PMI on overflow (ENi_PMI).
        PMI OFFSET(3) NUMBITS(1) [],
    ]
}

/// A value of IA32_FIXED_CTR_CTRL.
pub type Ia32FixedCtrCtrl = LocalRegisterCopy<u64, IA32_FIXED_CTR_CTRL::Register>;

/// One fixed counter's control nibble.
pub type FixedCtrControl = LocalRegisterCopy<u8, FIXED_CTR_CONTROL::Register>;

/// Largest counter index with a nibble in the 64-bit register.
pub const MAX_NIBBLE: u8 = 15;

/// The nibble of fixed counter `index` as a field of the register, `None` past
/// [`MAX_NIBBLE`].
pub const fn nibble(index: u8) -> Option<Field<u64, IA32_FIXED_CTR_CTRL::Register>> {
    if index > MAX_NIBBLE {
        None
    } else {
        Some(Field::new(0xF, 4 * index as usize))
    }
}

/// Fixed counter `index`'s control bits in `reg`, `None` past [`MAX_NIBBLE`].
pub fn control(reg: Ia32FixedCtrCtrl, index: u8) -> Option<FixedCtrControl> {
    nibble(index).map(|f| FixedCtrControl::new(reg.read(f) as u8))
}

/// `reg` with fixed counter `index`'s control bits replaced by `ctl`, every other nibble
/// unchanged; `None` past [`MAX_NIBBLE`].
pub fn with_control(
    reg: Ia32FixedCtrCtrl,
    index: u8,
    ctl: FixedCtrControl,
) -> Option<Ia32FixedCtrCtrl> {
    let f = nibble(index)?;
    let mut out = reg;
    out.modify(f.val(u64::from(ctl.get())));
    Some(out)
}

/// The control bits that count in the levels of `filter`, without PMI or AnyThread.
///
/// # Errors
/// [`Error::FilterUnsupported`] when `filter` selects neither user nor kernel
/// (`hypervisor` is ignored: x86 filters by CPL only).
pub fn counting(filter: PrivilegeFilter) -> Result<FixedCtrControl, Error> {
    if !filter.user && !filter.kernel {
        return Err(Error::FilterUnsupported { filter });
    }
    let mut ctl = FixedCtrControl::new(0);
    if filter.kernel {
        ctl.modify(FIXED_CTR_CONTROL::OS::SET);
    }
    if filter.user {
        ctl.modify(FIXED_CTR_CONTROL::Usr::SET);
    }
    Ok(ctl)
}

#[cfg(test)]
mod tests {
    use super::*;
    use IA32_FIXED_CTR_CTRL::*;

    /// SDM Vol. 4, IA32_FIXED_CTR_CTRL: bit 0 EN0_OS, 1 EN0_Usr, 2 AnyThread, 3 EN0_PMI,
    /// 4 EN1_OS, …, 11 EN2_PMI.
    #[test]
    fn named_fields_sit_in_their_nibbles() {
        let mut reg = Ia32FixedCtrCtrl::new(0);
        // Fixed 0 user+kernel, fixed 1 user only, fixed 2 kernel with PMI.
        reg.write(EN0_OS::SET + EN0_Usr::SET + EN1_Usr::SET + EN2_OS::SET + EN2_PMI::SET);
        assert_eq!(reg.get(), 0x923);
        assert_eq!(control(reg, 0).map(|c| c.get()), Some(0x3));
        assert_eq!(control(reg, 1).map(|c| c.get()), Some(0x2));
        assert_eq!(control(reg, 2).map(|c| c.get()), Some(0x9));
        assert_eq!(control(reg, 3).map(|c| c.get()), Some(0x0));
        assert!(!reg.is_set(AnyThread0) && !reg.is_set(EN3_PMI));
    }

    /// Linux's intel_pmu_enable_fixed() sets PMI | Usr | OS (0xB) in the nibble of each
    /// fixed counter perf uses for a user+kernel event: three such counters give 0xBBB.
    #[test]
    fn linux_perf_value_for_three_fixed_counters() {
        let mut nibble_b = counting(PrivilegeFilter::ALL).unwrap();
        nibble_b.modify(FIXED_CTR_CONTROL::PMI::SET);
        assert_eq!(nibble_b.get(), 0xB);
        let mut reg = Ia32FixedCtrCtrl::new(0);
        for i in 0..3 {
            reg = with_control(reg, i, nibble_b).unwrap();
        }
        assert_eq!(reg.get(), 0xBBB);
    }

    /// Replacing one nibble leaves the others alone.
    #[test]
    fn with_control_preserves_other_counters() {
        let reg = Ia32FixedCtrCtrl::new(0xBBB);
        let user = counting(PrivilegeFilter::USER).unwrap();
        assert_eq!(with_control(reg, 1, user).unwrap().get(), 0xB2B);
        let off = FixedCtrControl::new(0);
        assert_eq!(with_control(reg, 0, off).unwrap().get(), 0xBB0);
        assert_eq!(
            with_control(reg, 15, user).unwrap().get(),
            0x2000_0000_0000_0BBB
        );
        assert!(with_control(reg, 16, user).is_none());
        assert!(control(reg, 16).is_none());
    }

    /// The ENABLE encoding of the SDM figure: 1 OS, 2 User, 3 all ring levels.
    #[test]
    fn filter_to_enable_field() {
        assert_eq!(counting(PrivilegeFilter::KERNEL).unwrap().get(), 1);
        assert_eq!(counting(PrivilegeFilter::USER).unwrap().get(), 2);
        assert_eq!(counting(PrivilegeFilter::ALL).unwrap().get(), 3);
        let none = PrivilegeFilter {
            user: false,
            kernel: false,
            hypervisor: false,
        };
        assert_eq!(
            counting(none).err(),
            Some(Error::FilterUnsupported { filter: none })
        );
    }
}
