//! `kernel7.img` for the Raspberry Pi 2 (BCM2836, 4 x Cortex-A7, ARMv7 PMUv2), and
//! QEMU's `raspi2b`: peripherals at 0x3F00_0000 (PL011 at 0x3F20_1000 on GPIO 14/15,
//! GPIO at 0x3F20_0000: Linux 6.12 bcm2836.dtsi `ranges`), the other cores released
//! from the firmware's mailboxes (ARM local peripherals at 0x4000_0000) into `wfi`. The
//! scenarios are `pmu-scenarios-armv7`'s, the same as on QEMU `virt -cpu cortex-a7`.
#![no_std]
#![no_main]

use pmu_raspi_board::local_intc;
use pmu_raspi_board::pl011::{self, Pl011};
use pmu_scenarios_armv7::{Board, Console};

const PERIPHERALS: usize = 0x3F00_0000;
// SAFETY: the BCM2836's PL011 (bus 0x7E20_1000, bcm283x.dtsi `uart0`).
const UART: Pl011 = unsafe { Pl011::new(PERIPHERALS + 0x20_1000) };

static BOARD: Board = Board {
    banner: "pmu raspi2b image (kernel7.img, BCM2836): AArch32 PMU scenarios at PL1 and PL0",
    name: "raspi2b",
    init_console: || {
        // SAFETY: the BCM2836's GPIO block; GPIO 14/15 are the console's pins.
        unsafe { pl011::gpio_14_15_alt0(PERIPHERALS + 0x20_0000) };
        UART.init();
    },
    console: Console {
        write_byte: |b| UART.write_byte(b),
        crlf: true,
    },
    park_secondaries: || {
        // SAFETY: the Pi 2's firmware parks cores 1-3 on their mailboxes; the parking
        // loop masks interrupts and sleeps forever.
        unsafe {
            local_intc::release_secondaries_by_mailbox(pmu_scenarios_armv7::boot::park_address())
        };
        "mailbox-to-wfi"
    },
};

/// The board, for `pmu-scenarios-armv7`'s `_start`.
#[no_mangle]
fn pmu_board() -> &'static Board {
    &BOARD
}
