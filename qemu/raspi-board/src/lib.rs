//! The Raspberry Pi pieces of the bare-metal images: `kernel8.img` (qemu/raspi-aarch64,
//! Pi 3/4/5), `kernel7.img` (qemu/raspi2b) and `kernel.img` (qemu/raspi0, Pi 0/1) are
//! each a board made of these over their architecture's shared scenarios.
//!
//! Addresses are the ARM physical addresses (the MMU stays off). Sources: the BCM2835
//! ARM Peripherals document (GPIO function select, section 6.1; the PL011, chapter 13,
//! at bus address 0x7E20_1000), the BCM2836 "QA7" ARM local peripherals document (the
//! PMU interrupt routing and the per-core IRQ source registers; the same offsets are in
//! Linux 6.12 include/linux/irqchip/irq-bcm2836.h) and the Linux 6.12 device trees
//! (arch/arm/boot/dts/broadcom/bcm2837.dtsi, bcm2711.dtsi; arch/arm64/boot/dts/
//! broadcom/bcm2712.dtsi), which map the bus addresses to ARM physical ones. QEMU's
//! models use the same addresses (hw/arm/bcm2836.c, bcm2838.c, raspi4b.c).
#![no_std]

pub mod local_intc;
pub mod pl011;
#[cfg(target_arch = "aarch64")]
pub mod spin_table;

/// A 32-bit MMIO register at a fixed physical address.
#[derive(Clone, Copy)]
pub struct Mmio(usize);

impl Mmio {
    /// The register at `address`.
    ///
    /// # Safety
    /// `address` is a 32-bit device register of the board the code runs on, reachable
    /// at that physical address (the MMU is off), whose reads and writes have no effect
    /// the caller has not accounted for.
    pub const unsafe fn new(address: usize) -> Self {
        Self(address)
    }

    /// Reads the register.
    pub fn read(self) -> u32 {
        // SAFETY: `new`'s contract: a device register of this board, mapped.
        unsafe { core::ptr::read_volatile(self.0 as *const u32) }
    }

    /// Writes the register.
    pub fn write(self, value: u32) {
        // SAFETY: as in `read`.
        unsafe { core::ptr::write_volatile(self.0 as *mut u32, value) }
    }
}
