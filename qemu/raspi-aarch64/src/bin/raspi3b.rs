//! `kernel8.img` for the Raspberry Pi 3 (BCM2837, 4 x Cortex-A53), and QEMU's
//! `raspi3b`: peripherals at 0x3F00_0000 (PL011 at 0x3F20_1000, GPIO at 0x3F20_0000),
//! the PMU interrupt through the ARM local interrupt controller at 0x4000_0000 (source
//! 9), the other cores released from the firmware's spin table into `wfi`. The
//! scenarios are `pmu-scenarios-armv8`'s, the same as on QEMU `virt`.
#![no_std]
#![no_main]

use pmu_raspi_board::pl011::{self, Pl011};
use pmu_raspi_board::{local_intc, spin_table};
use pmu_scenarios_armv8::{Board, Console, InterruptController};

const PERIPHERALS: usize = 0x3F00_0000;
// SAFETY: the BCM2837's PL011 (bus 0x7E20_1000, bcm283x.dtsi `uart0`).
const UART: Pl011 = unsafe { Pl011::new(PERIPHERALS + 0x20_1000) };

static BOARD: Board = Board {
    banner: "pmu raspi3b image (kernel8.img, BCM2837): PMU scenarios at EL1 and EL0",
    name: "raspi3b",
    init_console: || {
        // SAFETY: the BCM2837's GPIO block; GPIO 14/15 are the console's pins.
        unsafe { pl011::gpio_14_15_alt0(PERIPHERALS + 0x20_0000) };
        UART.init();
    },
    console: Console {
        write_byte: |b| UART.write_byte(b),
        crlf: true,
    },
    park_secondaries: || {
        // SAFETY: the Pi 3's firmware parks cores 1-3 on the spin table; the parking
        // loop masks interrupts and sleeps forever.
        unsafe { spin_table::release_secondaries(pmu_scenarios_armv8::boot::park_address()) };
        "spin-table-to-wfi"
    },
    irq: InterruptController {
        name: "bcm2836-local",
        enable_pmu: || {
            // SAFETY: a BCM2837; the scenarios' IRQ handler is installed before this.
            unsafe { local_intc::route_pmu_to_core0() }
        },
        acknowledge: || {
            // SAFETY: a BCM2837.
            unsafe { local_intc::pending_core0() }
        },
        end: |_| {},
        is_pmu: |source| source == local_intc::PMU_SOURCE,
    },
};

/// The board, for `pmu-scenarios-armv8`'s `_start`.
#[no_mangle]
fn pmu_board() -> &'static Board {
    &BOARD
}
