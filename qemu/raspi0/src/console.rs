//! Output on the PL011 (GPIO 14/15, 115200 8N1: `pmu_raspi_board::pl011`), and exit and
//! the command line through semihosting (`svc 0x123456`, what QEMU offers with
//! `-semihosting-config enable=on`); on a real board the image's SVC vector answers
//! with a failed call, so [`exit`] then waits and [`command_line`] gives `None`.

use core::fmt::{self, Write};

use pmu_raspi_board::pl011::Pl011;

/// BCM2835 peripherals (Pi 0/1): bus 0x7E00_0000 at ARM 0x2000_0000 (Linux 6.12
/// bcm2835.dtsi `ranges`).
pub const PERIPHERALS: usize = 0x2000_0000;
// SAFETY: the BCM2835's PL011 (bus 0x7E20_1000, bcm283x.dtsi `uart0`).
const UART: Pl011 = unsafe { Pl011::new(PERIPHERALS + 0x20_1000) };

/// Pins and baud rate.
pub fn init() {
    // SAFETY: the BCM2835's GPIO block; GPIO 14/15 are the console's pins.
    unsafe { pmu_raspi_board::pl011::gpio_14_15_alt0(PERIPHERALS + 0x20_0000) };
    UART.init();
}

/// The UART as a `fmt::Write` (CR LF line ends, for a terminal on the serial line).
pub struct Uart;

impl Write for Uart {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            if b == b'\n' {
                UART.write_byte(b'\r');
            }
            UART.write_byte(b);
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

/// Ends QEMU with `code` as its exit status (semihosting SYS_EXIT_EXTENDED with
/// ADP_Stopped_ApplicationExit); without semihosting, says so and waits.
pub fn exit(code: u32) -> ! {
    const SYS_EXIT_EXTENDED: u32 = 0x20;
    const ADP_STOPPED_APPLICATION_EXIT: u32 = 0x20026;
    let block = [ADP_STOPPED_APPLICATION_EXIT, code];
    // SAFETY: `svc 0x123456` in ARM state at PL1 is the AArch32 semihosting call; r1
    // points at the two-word block. QEMU ends the process; without semihosting the
    // image's SVC vector returns (clobbering r1, r2, lr).
    unsafe {
        core::arch::asm!("svc 0x123456", inout("r0") SYS_EXIT_EXTENDED => _, inout("r1") block.as_ptr() => _, out("r2") _, out("lr") _, options(nostack));
    }
    crate::println!("exit status {code}: no semihosting here, halted (power the board off)");
    loop {
        core::hint::spin_loop();
    }
}

/// The command line QEMU passes through semihosting (`SYS_GET_CMDLINE`), or `None`.
pub fn command_line(buf: &mut [u8]) -> Option<&str> {
    const SYS_GET_CMDLINE: u32 = 0x15;
    let mut block = [buf.as_mut_ptr() as u32, buf.len() as u32];
    let status: u32;
    // SAFETY: semihosting call as in `exit`; QEMU writes at most `buf.len()` bytes into
    // `buf` and the length into block[1].
    unsafe {
        core::arch::asm!("svc 0x123456", inout("r0") SYS_GET_CMDLINE => status, inout("r1") block.as_mut_ptr() => _, out("r2") _, out("lr") _, options(nostack));
    }
    if status != 0 {
        return None;
    }
    let len = usize::try_from(block[1]).ok()?.min(buf.len());
    core::str::from_utf8(&buf[..len]).ok()
}
