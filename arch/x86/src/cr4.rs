//! CR4.PCE (bit 8, "Performance-Monitoring Counter Enable"): lets CPL 3 execute RDPMC.
//!
//! Source: SDM Vol. 3A, "Control Registers" (CR4.PCE) and Vol. 2B, RDPMC (#GP at CPL > 0
//! while CR4.PCE = 0). The bit value is the `x86` crate's `Cr4::CR4_ENABLE_PPMC`; the
//! read-modify-write uses [`crate::asm::read_cr4`] / [`crate::asm::write_cr4`], which keep
//! every bit (the `x86` crate's `cr4()` drops the bits its flag list lacks).
//!
//! On Linux, setting the bit from a module does not last: the kernel rewrites CR4.PCE on
//! every switch to another process according to `/sys/bus/event_source/devices/cpu/rdpmc`
//! (Linux 6.12 arch/x86/mm/tlb.c `cr4_update_pce_mm`, called from `switch_mm_irqs_off`). It is meant for bare metal and for kernels that leave CR4 alone.

/// CR4.PCE as a mask.
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
pub const CR4_PCE: u64 = x86::controlregs::Cr4::CR4_ENABLE_PPMC.bits() as u64;

/// CR4.PCE as a mask (the `x86` crate is empty off x86).
#[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
pub const CR4_PCE: u64 = 1 << 8;

/// `cr4` with PCE set (`enabled`) or cleared, every other bit unchanged.
pub const fn with_user_rdpmc(cr4: u64, enabled: bool) -> u64 {
    if enabled {
        cr4 | CR4_PCE
    } else {
        cr4 & !CR4_PCE
    }
}

/// Whether CR4.PCE is set on this CPU.
///
/// # Safety
/// Needs CPL 0.
#[cfg(target_arch = "x86_64")]
pub unsafe fn user_rdpmc_enabled() -> bool {
    // SAFETY: CPL 0 by the caller's contract.
    let cr4 = unsafe { crate::asm::read_cr4() };
    cr4 & CR4_PCE != 0
}

/// Sets (`enabled`) or clears CR4.PCE on this CPU; returns whether it was set before.
///
/// # Safety
/// Needs CPL 0, with interrupts (or anything else that may change CR4 on this CPU)
/// masked between the read and the write. Granting RDPMC to user space exposes the
/// counters to every process on this CPU: clear the bit again when done.
#[cfg(target_arch = "x86_64")]
pub unsafe fn set_user_rdpmc(enabled: bool) -> bool {
    // SAFETY: CPL 0 by the caller's contract.
    let old = unsafe { crate::asm::read_cr4() };
    let new = with_user_rdpmc(old, enabled);
    if new != old {
        // SAFETY: CPL 0 and no concurrent CR4 change by the caller's contract; the value
        // is the one just read with only PCE changed, which affects nothing but whether
        // RDPMC faults at CPL 3.
        unsafe { crate::asm::write_cr4(new) };
    }
    old & CR4_PCE != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SDM Vol. 3A: PCE is CR4 bit 8.
    #[test]
    fn pce_is_bit_8() {
        assert_eq!(CR4_PCE, 0x100);
    }

    /// Only PCE changes: CET (bit 23) and PKS (bit 24), which the `x86` crate's `Cr4`
    /// flags do not know, survive.
    #[test]
    fn only_pce_changes() {
        let cr4 = 1 << 24 | 1 << 23 | 1 << 20 | 1 << 5;
        assert_eq!(with_user_rdpmc(cr4, true), cr4 | 0x100);
        assert_eq!(with_user_rdpmc(cr4 | 0x100, false), cr4);
        assert_eq!(with_user_rdpmc(cr4, false), cr4);
    }

    /// Why CR4 is read with our own MOV: `x86::controlregs::cr4()` builds its value with
    /// `from_bits_truncate`, which loses CET (23); writing that back would turn CET off.
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    #[test]
    fn x86_crate_cr4_truncates_unknown_bits() {
        let raw: usize = 1 << 23 | 1 << 8;
        assert_eq!(
            x86::controlregs::Cr4::from_bits_truncate(raw).bits(),
            1 << 8
        );
    }
}
