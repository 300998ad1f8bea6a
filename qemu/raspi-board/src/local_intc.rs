//! The BCM2836 ARM local interrupt controller of the Pi 3 (BCM2837, at 0x4000_0000):
//! the PMU interrupt of core n is routed to its IRQ by bit n of "PMU interrupt routing
//! set" (0x10) and shows as bit 9 of core n's IRQ source register (0x60 + 4 n). Linux
//! 6.12 include/linux/irqchip/irq-bcm2836.h (`LOCAL_PM_ROUTING_SET`,
//! `LOCAL_IRQ_PENDING0`, `LOCAL_IRQ_PMU_FAST` = 9) and bcm2837.dtsi (the `arm-pmu`
//! node's `interrupts = <9 …>` on `local_intc`).

use crate::Mmio;

/// The controller's base on the Pi 2 and Pi 3.
pub const BASE: usize = 0x4000_0000;
/// "PMU interrupt routing set".
const PM_ROUTING_SET: usize = 0x10;
/// Core 0's IRQ source register.
const IRQ_PENDING0: usize = 0x60;
/// The PMU's bit in a core's IRQ source register.
pub const PMU_SOURCE: u32 = 9;

/// The controller's register at `offset`.
///
/// # Safety
/// The board is a Pi 2 or Pi 3 (BCM2836/BCM2837: the controller is at [`BASE`]).
unsafe fn reg(offset: usize) -> Mmio {
    // SAFETY: the caller's contract.
    unsafe { Mmio::new(BASE + offset) }
}

/// Routes the PMU interrupt of core 0 to its IRQ line.
///
/// # Safety
/// A Pi 2 or Pi 3, with an IRQ handler ready for the PMU interrupt.
pub unsafe fn route_pmu_to_core0() {
    // SAFETY: the caller's contract.
    unsafe { reg(PM_ROUTING_SET) }.write(1 << 0);
}

/// The lowest pending IRQ source of core 0 (the PMU is [`PMU_SOURCE`]), or `None`.
/// Sources are level-triggered: there is nothing to acknowledge; clearing the cause
/// (the overflow flag) ends the interrupt.
///
/// # Safety
/// A Pi 2 or Pi 3.
pub unsafe fn pending_core0() -> Option<u32> {
    // SAFETY: the caller's contract; reading the pending register has no side effect.
    let pending = unsafe { reg(IRQ_PENDING0) }.read();
    (pending != 0).then(|| pending.trailing_zeros())
}

/// Mailbox 3 "write-set" of core `n` (0x8C + 16 n): the Pi 2's firmware, and QEMU's
/// `raspi2b` boot stub (hw/arm/raspi.c `write_smpboot`), park cores 1 to 3 polling their
/// mailbox 3 (read/clear at 0xCC + 16 n) and jump to the first non-zero value; Linux
/// 6.12 starts them the same way (arch/arm/mach-bcm/platsmp.c,
/// `bcm2836_smp_boot_secondary`: `LOCAL_MAILBOX3_SET0 + 16 * cpu`).
const MAILBOX3_SET0: usize = 0x8C;

/// Sends cores 1 to 3 to `entry` through their mailbox 3.
///
/// # Safety
/// A Pi 2 (or a Pi 3 started in 32-bit mode) whose firmware parks the cores on their
/// mailboxes; `entry` is code those cores can run forever.
pub unsafe fn release_secondaries_by_mailbox(entry: u32) {
    for core in 1..4 {
        // SAFETY: the caller's contract.
        unsafe { reg(MAILBOX3_SET0 + 16 * core) }.write(entry);
    }
}
