//! Bare-metal image for `qemu-system-aarch64 -M virt`: the board layer over
//! `pmu-scenarios-armv8` (which measures with the PMU through `pmu-armv8`'s public API
//! and prints one machine-readable line per result,
//!
//! ```text
//! RESULT <scenario> key=value … pass=<0|1>
//! ```
//!
//! and `RESULT summary pass=<n> fail=<m>` at the end). The exit status (semihosting)
//! is 0 only when every scenario passed; a panic or an unexpected exception prints
//! `FATAL …` and exits with 2 or 3.
//!
//! The board: QEMU enters at EL1 with one CPU (`-smp 1`), the PL011 is at
//! 0x0900_0000 and the GICv2 at 0x0800_0000 (distributor) / 0x0801_0000 (CPU
//! interface), the PMU interrupt is PPI 7 = INTID 23 (hw/arm/virt.c, the device tree's
//! `interrupts = <1 7 …>`). Run under `-icount shift=0,align=off,sleep=off`: QEMU then
//! counts INST_RETIRED and cycles exactly, so the exact-count scenario must give K.
#![no_std]
#![no_main]

use pmu_scenarios_armv8::gic::Gic2;
use pmu_scenarios_armv8::{Board, Console, InterruptController};

const UART_BASE: usize = 0x0900_0000;
const UARTDR: usize = 0x00;
const UARTFR: usize = 0x18;
const UARTFR_TXFF: u32 = 1 << 5;

// SAFETY: QEMU virt's GICv2 (hw/arm/virt.c memmap VIRT_GIC_DIST, VIRT_GIC_CPU); only
// this image programs it.
const GIC: Gic2 = unsafe { Gic2::new(0x0800_0000, 0x0801_0000) };

/// INTID of the PMU overflow interrupt on `-M virt` (PPI 7 = INTID 16 + 7).
const PMU_INTID: u32 = 23;

fn write_byte(b: u8) {
    // SAFETY: UART_BASE is the PL011 of QEMU's virt machine; FR and DR are its flag and
    // data registers, accessed with 32-bit volatile loads/stores.
    unsafe {
        while core::ptr::read_volatile((UART_BASE + UARTFR) as *const u32) & UARTFR_TXFF != 0 {}
        core::ptr::write_volatile((UART_BASE + UARTDR) as *mut u32, u32::from(b));
    }
}

static BOARD: Board = Board {
    banner: "pmu aarch64-virt image: PMU scenarios at EL1 and EL0",
    name: "virt",
    // QEMU's PL011 needs no set-up.
    init_console: || {},
    console: Console {
        write_byte,
        crlf: false,
    },
    // `-smp 1`: there is no other core.
    park_secondaries: || "none",
    irq: InterruptController {
        name: "gicv2",
        enable_pmu: || GIC.enable(&[PMU_INTID]),
        acknowledge: || GIC.acknowledge(),
        end: |intid| GIC.end_of_interrupt(intid),
        is_pmu: |intid| intid == PMU_INTID,
    },
};

/// The board, for `pmu-scenarios-armv8`'s `_start`.
#[no_mangle]
fn pmu_board() -> &'static Board {
    &BOARD
}
