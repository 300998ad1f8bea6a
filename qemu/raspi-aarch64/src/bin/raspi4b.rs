//! `kernel8.img` for the Raspberry Pi 4 (BCM2711, 4 x Cortex-A72), and QEMU's
//! `raspi4b`: peripherals at 0xFE00_0000 (PL011 at 0xFE20_1000, GPIO at 0xFE20_0000),
//! the GIC-400 at 0xFF84_1000 (distributor) / 0xFF84_2000 (CPU interface) (Linux 6.12
//! bcm2711.dtsi: `gicv2` at bus 0x4004_1000, ranges 0x4000_0000 -> 0xFF80_0000), the
//! other cores released from the firmware's spin table into `wfi`.
//!
//! The PMU interrupt: on the board it is SPI 16 + core (INTID 48 for core 0:
//! bcm2711.dtsi's `pmu` node, `interrupts = <GIC_SPI 16 …>, …`); QEMU 10's model wires
//! it to PPI 7 (INTID 23: hw/arm/bcm2838.c, `VIRTUAL_PMU_IRQ`). Both are enabled and
//! the RESULT line says which one arrived.
#![no_std]
#![no_main]

use pmu_raspi_board::pl011::{self, Pl011};
use pmu_raspi_board::spin_table;
use pmu_scenarios_armv8::gic::Gic2;
use pmu_scenarios_armv8::{Board, Console, InterruptController};

const PERIPHERALS: usize = 0xFE00_0000;
// SAFETY: the BCM2711's PL011 (bus 0x7E20_1000, bcm2711.dtsi `ranges`).
const UART: Pl011 = unsafe { Pl011::new(PERIPHERALS + 0x20_1000) };
// SAFETY: the BCM2711's GIC-400 (see the crate doc); only this image programs it.
const GIC: Gic2 = unsafe { Gic2::new(0xFF84_1000, 0xFF84_2000) };
/// Core 0's PMU interrupt on the board (SPI 16).
const PMU_SPI_CORE0: u32 = 32 + 16;
/// The PMU interrupt in QEMU's model (PPI 7).
const PMU_PPI_QEMU: u32 = 16 + 7;

static BOARD: Board = Board {
    banner: "pmu raspi4b image (kernel8.img, BCM2711): PMU scenarios at EL1 and EL0",
    name: "raspi4b",
    init_console: || {
        // SAFETY: the BCM2711's GPIO block; GPIO 14/15 are the console's pins.
        unsafe { pl011::gpio_14_15_alt0(PERIPHERALS + 0x20_0000) };
        UART.init();
    },
    console: Console {
        write_byte: |b| UART.write_byte(b),
        crlf: true,
    },
    park_secondaries: || {
        // SAFETY: the Pi 4's firmware parks cores 1-3 on the spin table; the parking
        // loop masks interrupts and sleeps forever.
        unsafe { spin_table::release_secondaries(pmu_scenarios_armv8::boot::park_address()) };
        "spin-table-to-wfi"
    },
    irq: InterruptController {
        name: "gic-400",
        enable_pmu: || GIC.enable(&[PMU_SPI_CORE0, PMU_PPI_QEMU]),
        acknowledge: || GIC.acknowledge(),
        end: |intid| GIC.end_of_interrupt(intid),
        is_pmu: |intid| intid == PMU_SPI_CORE0 || intid == PMU_PPI_QEMU,
    },
};

/// The board, for `pmu-scenarios-armv8`'s `_start`.
#[no_mangle]
fn pmu_board() -> &'static Board {
    &BOARD
}
