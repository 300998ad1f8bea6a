//! `kernel8.img` for the Raspberry Pi 5 (BCM2712, 4 x Cortex-A76). Built and documented;
//! no emulator runs it (QEMU 10 has no BCM2712 board), so nothing here has run yet.
//!
//! - Console: the PL011 of the 3-pin debug UART connector (`uart10`, bus 0x7D00_1000,
//!   ARM 0x10_7D00_1000: Linux 6.12 bcm2712.dtsi, soc `ranges = <0x0 0x10 0x0 …>`),
//!   left as the firmware programs it (`enable_uart=1`, 115200 8N1): its clock is not
//!   the Pi 3/4's, so the image does not reprogram the divisors.
//! - GIC-400 at 0x10_7FFF_9000 (distributor) / 0x10_7FFF_A000 (CPU interface)
//!   (bcm2712.dtsi `gicv2`).
//! - The other cores stay off: the Pi 5 starts them through PSCI (bcm2712.dtsi
//!   `enable-method = "psci"`), not a spin table; nothing is written to low memory,
//!   where the trusted firmware lives.
//! - The PMU interrupt: Linux 6.12's bcm2712.dtsi has no `pmu` node, so its wiring is
//!   not documented where we can cite it; the image enables PPI 7 (INTID 23, the
//!   Arm-recommended PMU PPI, Arm BSA) and reports what arrives (`intid=none` if
//!   nothing does).
#![no_std]
#![no_main]

use pmu_raspi_board::pl011::Pl011;
use pmu_scenarios_armv8::gic::Gic2;
use pmu_scenarios_armv8::{Board, Console, InterruptController};

// SAFETY: the BCM2712's debug-connector PL011 (bcm2712.dtsi `uart10`).
const UART: Pl011 = unsafe { Pl011::new(0x10_7D00_1000) };
// SAFETY: the BCM2712's GIC-400 (bcm2712.dtsi `gicv2`); only this image programs it.
const GIC: Gic2 = unsafe { Gic2::new(0x10_7FFF_9000, 0x10_7FFF_A000) };
const PMU_PPI: u32 = 16 + 7;

static BOARD: Board = Board {
    banner: "pmu raspi5 image (kernel8.img, BCM2712): PMU scenarios at EL1 and EL0",
    name: "raspi5",
    init_console: || {},
    console: Console {
        write_byte: |b| UART.write_byte(b),
        crlf: true,
    },
    park_secondaries: || "psci-off",
    irq: InterruptController {
        name: "gic-400",
        enable_pmu: || GIC.enable(&[PMU_PPI]),
        acknowledge: || GIC.acknowledge(),
        end: |intid| GIC.end_of_interrupt(intid),
        is_pmu: |intid| intid == PMU_PPI,
    },
};

/// The board, for `pmu-scenarios-armv8`'s `_start`.
#[no_mangle]
fn pmu_board() -> &'static Board {
    &BOARD
}
