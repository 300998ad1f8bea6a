//! Output on the PL011 UART of `-M virt` (0x0900_0000), and exit through semihosting.

use core::fmt::{self, Write};

const UART_BASE: usize = 0x0900_0000;
const UARTDR: usize = 0x00;
const UARTFR: usize = 0x18;
const UARTFR_TXFF: u32 = 1 << 5;

/// The UART as a `fmt::Write`.
pub struct Uart;

impl Write for Uart {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            // SAFETY: UART_BASE is the PL011 of QEMU's virt machine; FR and DR are its
            // flag and data registers, accessed with 32-bit volatile loads/stores.
            unsafe {
                while core::ptr::read_volatile((UART_BASE + UARTFR) as *const u32) & UARTFR_TXFF
                    != 0
                {}
                core::ptr::write_volatile((UART_BASE + UARTDR) as *mut u32, u32::from(b));
            }
        }
        Ok(())
    }
}

/// `print!` to the UART.
#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => {{
        let _ = core::fmt::Write::write_fmt(&mut $crate::console::Uart, format_args!($($arg)*));
    }};
}

/// `println!` to the UART.
#[macro_export]
macro_rules! println {
    () => { $crate::print!("\n") };
    ($($arg:tt)*) => {{
        $crate::print!($($arg)*);
        $crate::print!("\n");
    }};
}

/// Ends QEMU with `code` as its exit status: semihosting SYS_EXIT_EXTENDED (0x20) with
/// ADP_Stopped_ApplicationExit and the code (on AArch32 plain SYS_EXIT carries no exit
/// code). QEMU needs `-semihosting-config enable=on`.
pub fn exit(code: u32) -> ! {
    const SYS_EXIT_EXTENDED: u32 = 0x20;
    const ADP_STOPPED_APPLICATION_EXIT: u32 = 0x20026;
    let block = [ADP_STOPPED_APPLICATION_EXIT, code];
    // SAFETY: `svc 0x123456` in ARM state at PL1 is the AArch32 semihosting call; r1
    // points at the two-word block SYS_EXIT_EXTENDED expects. QEMU ends the process.
    unsafe {
        core::arch::asm!("svc 0x123456", in("r0") SYS_EXIT_EXTENDED, in("r1") block.as_ptr(), options(nostack));
    }
    // Without semihosting the SVC reaches our vector as a fatal exception; should it
    // return anyway, stop here.
    loop {
        // SAFETY: waiting for an event has no effect on memory.
        unsafe { core::arch::asm!("wfe", options(nomem, nostack)) };
    }
}

/// The command line QEMU passes through semihosting (`SYS_GET_CMDLINE`): the image path
/// followed by what `-append` gave, or `None` when there is none.
pub fn command_line(buf: &mut [u8]) -> Option<&str> {
    const SYS_GET_CMDLINE: u32 = 0x15;
    let mut block = [buf.as_mut_ptr() as u32, buf.len() as u32];
    let status: u32;
    // SAFETY: semihosting call as in `exit`; QEMU writes at most `buf.len()` bytes into
    // `buf` and the length into block[1].
    unsafe {
        core::arch::asm!("svc 0x123456", inout("r0") SYS_GET_CMDLINE => status, in("r1") block.as_mut_ptr(), options(nostack));
    }
    if status != 0 {
        return None;
    }
    let len = usize::try_from(block[1]).ok()?.min(buf.len());
    core::str::from_utf8(&buf[..len]).ok()
}
