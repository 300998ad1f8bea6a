//! Bare-metal image for `qemu-system-arm -M virt -cpu cortex-a7` or `-cpu cortex-a15`
//! (or `max`): the board layer over `pmu-scenarios-armv7`, which measures with the
//! AArch32 PMU through `pmu-armv7`'s public API and prints one machine-readable line
//! per result,
//!
//! ```text
//! RESULT <scenario> key=value … pass=<0|1>
//! ```
//!
//! and at the end `RESULT summary pass=<n> fail=<m>`. The exit status (semihosting) is
//! 0 only when every check passed; a panic or an unexpected exception prints `FATAL …`
//! and exits with 2 or 3. Run under `-icount shift=0,align=off,sleep=off` (QEMU then
//! counts instructions and cycles exactly). See README.md.
//!
//! The board: QEMU enters in Non-secure SVC mode with one CPU (`-smp 1`), the PL011 is
//! at 0x0900_0000 (hw/arm/virt.c).
#![no_std]
#![no_main]

use pmu_scenarios_armv7::{Board, Console};

const UART_BASE: usize = 0x0900_0000;
const UARTDR: usize = 0x00;
const UARTFR: usize = 0x18;
const UARTFR_TXFF: u32 = 1 << 5;

fn write_byte(b: u8) {
    // SAFETY: UART_BASE is the PL011 of QEMU's virt machine; FR and DR are its flag and
    // data registers, accessed with 32-bit volatile loads/stores.
    unsafe {
        while core::ptr::read_volatile((UART_BASE + UARTFR) as *const u32) & UARTFR_TXFF != 0 {}
        core::ptr::write_volatile((UART_BASE + UARTDR) as *mut u32, u32::from(b));
    }
}

static BOARD: Board = Board {
    banner: "pmu armv7-virt image: AArch32 PMU scenarios at PL1 and PL0",
    name: "virt",
    // QEMU's PL011 needs no set-up.
    init_console: || {},
    console: Console {
        write_byte,
        crlf: false,
    },
    // `-smp 1`: there is no other core.
    park_secondaries: || "none",
};

/// The board, for `pmu-scenarios-armv7`'s `_start`.
#[no_mangle]
fn pmu_board() -> &'static Board {
    &BOARD
}
