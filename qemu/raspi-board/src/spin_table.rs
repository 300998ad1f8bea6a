//! The spin table the firmware parks the Pi 3's and Pi 4's other cores on: core n
//! waits in `wfe` until the 64-bit word at 0xd8 + 8 n is non-zero, then jumps there
//! (the device trees' `cpu-release-addr`: Linux 6.12 bcm2837.dtsi and bcm2711.dtsi,
//! `enable-method = "spin-table"`; QEMU's raspi3b and raspi4b stubs do the same:
//! hw/arm/raspi.c and raspi4b.c `write_smpboot64`). While they spin they execute
//! instructions, and QEMU's INST_RETIRED under icount counts every vCPU's: releasing
//! them into `wfi` (interrupts masked, nothing routed to them) stops that.

/// The release word of core `n` (1 to 3).
pub const fn release_address(core: usize) -> usize {
    0xd8 + 8 * core
}

/// Sends cores 1 to 3 to `entry`: writes each release word, then `sev` wakes them from
/// `wfe`.
///
/// # Safety
/// A Pi 3 or Pi 4 whose firmware parks the cores on this spin table (not a Pi 5: its
/// trusted firmware lives in low memory); `entry` is code those cores can run forever.
pub unsafe fn release_secondaries(entry: u64) {
    for core in 1..4 {
        // SAFETY: the caller's contract: the release words are RAM the firmware
        // reserves for this protocol (below the image at 0x8_0000); the 64-bit aligned
        // store is what the waiting core reads.
        unsafe { core::ptr::write_volatile(release_address(core) as *mut u64, entry) };
    }
    // SAFETY: a barrier and an event: the stores above must be visible before the
    // cores wake (the MMU is off: the memory is Device-nGnRnE, no cache to clean).
    unsafe { core::arch::asm!("dsb sy", "sev", options(nostack, preserves_flags)) };
}
