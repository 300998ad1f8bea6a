//! Opening the PMU to User mode through SUNAVCR.V, checked, and closing it again: the
//! ARMv6 part of the kernel module kmod-enable-user (stock-kernel flavour, C glue around
//! this code compiled as a no_std object; Linux 6.12 has no Rust support for 32-bit ARM).
//!
//! The usual Raspberry Pi 1 user-enable module writes SUNAVCR = 1 on load, reads it back,
//! refuses to load (`-EIO`) when the read-back value is 0, and writes 0 on unload. Here:
//!
//! - [`enable`] records the previous value, writes it with V set, reads it back and,
//!   when V did not stick, writes the previous value back and returns
//!   [`DidNotStick`] with the value read (QEMU's ARM1176 model has a dummy c15 that reads
//!   0 at PL1, docs/qemu.md; a real Raspberry Pi 1 keeps the bit). Only V
//!   is checked: bits 31:1 are UNP/SBZ (ARM1176JZF-S TRM 3-132), so a non-zero read
//!   back without V is a refusal too, unlike a test of `sunavcr != 0`;
//! - [`disable`] writes the previous value back (writing 0 would be the same on
//!   a CPU where nobody else set V).
//!
//! [`is_arm1176`] is the check the module makes before touching c15, whose contents are
//! IMPLEMENTATION DEFINED: SUNAVCR exists only on the ARM1176.

use crate::sunavcr::{Sunavcr, SUNAVCR};

/// Access to SUNAVCR: `crate::cp15::PrivilegedCp15` on an ARM1176 (ARM only),
/// [`crate::fake::FakeSunavcr`] in host tests.
pub trait SunavcrRegister {
    /// Reads SUNAVCR.
    fn read_sunavcr(&self) -> Sunavcr;
    /// Writes SUNAVCR.
    fn write_sunavcr(&self, value: Sunavcr);
}

/// MIDR bits that identify the core: implementer (31:24) and primary part number
/// (15:4), as Linux's `read_cpuid_part()` masks them (arch/arm/include/asm/cputype.h,
/// `ARM_CPU_PART_MASK` 0xff00fff0).
pub const MIDR_PART_MASK: u32 = 0xFF00_FFF0;

/// Implementer 0x41 (Arm) and part 0xB76 (ARM1176): Linux's `ARM_CPU_PART_ARM1176`
/// 0x4100b760 (arch/arm/include/asm/cputype.h); ARM1176JZF-S TRM 3.2.3 "c0, Main ID
/// Register".
pub const MIDR_ARM1176: u32 = 0x4100_B760;

/// Whether MIDR `midr` names an ARM1176.
pub const fn is_arm1176(midr: u32) -> bool {
    midr & MIDR_PART_MASK == MIDR_ARM1176
}

/// The primary part number of MIDR (bits 15:4), for the refusal message.
pub const fn part_number(midr: u32) -> u32 {
    (midr >> 4) & 0xFFF
}

/// User mode now reaches the PMU; what to write back on [`disable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Granted {
    /// SUNAVCR before [`enable`].
    pub previous: u32,
    /// SUNAVCR read back after writing V = 1 (V is set).
    pub now: u32,
}

/// SUNAVCR.V did not stick: User mode still cannot reach the PMU (`-EIO`). SUNAVCR was
/// written back to its previous value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DidNotStick {
    /// SUNAVCR before.
    pub previous: u32,
    /// What was written: the previous value with V set.
    pub written: u32,
    /// What SUNAVCR read back right after.
    pub read_back: u32,
}

/// Sets SUNAVCR.V and checks that it stuck.
///
/// # Errors
/// [`DidNotStick`] with the value read back when V reads as 0 after the write.
pub fn enable<R: SunavcrRegister>(regs: &R) -> Result<Granted, DidNotStick> {
    let previous = regs.read_sunavcr();
    let mut wanted = previous;
    wanted.modify(SUNAVCR::V::SET);
    regs.write_sunavcr(wanted);
    // No barrier between the write and the read: the ARM1176 executes CP15 accesses in
    // program order (see crate::asm, "Hardware ordering").
    let read_back = regs.read_sunavcr();
    if crate::sunavcr::user_access(read_back) {
        return Ok(Granted {
            previous: previous.get(),
            now: read_back.get(),
        });
    }
    regs.write_sunavcr(previous);
    Err(DidNotStick {
        previous: previous.get(),
        written: wanted.get(),
        read_back: read_back.get(),
    })
}

/// Writes back what SUNAVCR held before [`enable`]; returns the value found just before
/// (V set unless something else cleared it meanwhile).
pub fn disable<R: SunavcrRegister>(regs: &R, granted: &Granted) -> u32 {
    let found = regs.read_sunavcr();
    regs.write_sunavcr(Sunavcr::new(granted.previous));
    found.get()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeSunavcr;

    /// On a Raspberry Pi 1 (ARM1176JZF-S TRM page 3-132: V is writable at PL1): write
    /// 0x1, read back V set (load succeeds), write the previous 0x0 on unload.
    #[test]
    fn grant_sequence_on_a_real_arm1176() {
        let regs = FakeSunavcr::arm1176();
        let granted = enable(&regs).unwrap();
        assert_eq!(
            granted,
            Granted {
                previous: 0,
                now: 1
            }
        );
        assert_eq!(regs.writes(), [Some(1), None, None]);
        assert_eq!(disable(&regs, &granted), 1);
        assert_eq!(regs.writes(), [Some(1), Some(0), None]);
        assert_eq!(regs.value(), 0);
    }

    /// QEMU's ARM1176 (docs/qemu.md: c15 is a dummy that reads 0 at PL1):
    /// refused with the read-back value, and the previous value written back.
    #[test]
    fn qemu_dummy_c15_is_refused_with_the_read_back_value() {
        let regs = FakeSunavcr::reads_as(0);
        let err = enable(&regs).unwrap_err();
        assert_eq!(
            err,
            DidNotStick {
                previous: 0,
                written: 1,
                read_back: 0
            }
        );
        assert_eq!(regs.writes(), [Some(1), Some(0), None]);
    }

    /// Bits 31:1 are UNP/SBZ (ARM1176JZF-S TRM 3-132): a read back of 0xFFFF_FFFE is
    /// non-zero, which a `!= 0` test would take for success, yet V is clear: refused.
    #[test]
    fn only_v_counts_as_success() {
        let err = enable(&FakeSunavcr::reads_as(0xFFFF_FFFE)).unwrap_err();
        assert_eq!(err.read_back, 0xFFFF_FFFE);
    }

    /// V already set by someone else: it stays set after unload.
    #[test]
    fn disable_restores_a_previously_set_v() {
        let regs = FakeSunavcr::arm1176();
        regs.preset(1);
        let granted = enable(&regs).unwrap();
        assert_eq!(granted.previous, 1);
        disable(&regs, &granted);
        assert_eq!(regs.value(), 1);
    }

    /// MIDR values: Raspberry Pi 1 / Zero ARM1176JZF-S r0p7 reads 0x410FB767 (Linux
    /// /proc/cpuinfo "CPU part 0xb76", "CPU revision 7"); Cortex-A7 (0xC07, Pi 2),
    /// Cortex-A53 (0xD03, Pi 3) and ARM1136 (0xB36) are refused.
    #[test]
    fn arm1176_is_recognised_by_midr() {
        assert!(is_arm1176(0x410F_B767));
        assert!(is_arm1176(0x4100_B760));
        assert_eq!(part_number(0x410F_B767), 0xB76);
        for other in [0x410F_C075, 0x410F_D034, 0x4107_B362, 0x0000_B760] {
            assert!(!is_arm1176(other), "{other:#x}");
        }
    }
}
