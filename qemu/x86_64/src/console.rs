//! Console output on the first serial port (COM1, a 16550 UART at I/O port 0x3F8).
//!
//! QEMU connects it to its stdout with `-serial stdio`. Lines end in `\n` only: QEMU's
//! stdio backend keeps the terminal's output post-processing, and the tests read lines.

use core::fmt::{self, Write};

/// I/O port base of COM1.
const COM1: u16 = 0x3F8;
/// Line status register offset; bit 5: transmit holding register empty.
const LINE_STATUS: u16 = 5;
const TRANSMIT_EMPTY: u8 = 1 << 5;

/// Programs COM1 for 115200 baud, 8 data bits, no parity, one stop bit, no interrupts.
pub fn init() {
    // SAFETY: COM1's registers are I/O ports owned by this image (ring 0, one CPU);
    // these writes only configure the UART.
    unsafe {
        x86::io::outb(COM1 + 1, 0x00); // IER: no interrupts
        x86::io::outb(COM1 + 3, 0x80); // LCR: DLAB on, to set the divisor
        x86::io::outb(COM1, 0x01); // divisor low: 115200 baud
        x86::io::outb(COM1 + 1, 0x00); // divisor high
        x86::io::outb(COM1 + 3, 0x03); // LCR: 8N1, DLAB off
        x86::io::outb(COM1 + 2, 0xC7); // FCR: FIFOs on and cleared
    }
}

fn put_byte(byte: u8) {
    // SAFETY: reading COM1's line status and writing its data register have no effect
    // beyond sending the byte.
    unsafe {
        while x86::io::inb(COM1 + LINE_STATUS) & TRANSMIT_EMPTY == 0 {
            core::hint::spin_loop();
        }
        x86::io::outb(COM1, byte);
    }
}

/// The serial console as a [`fmt::Write`] sink.
#[derive(Clone, Copy, Debug, Default)]
pub struct Console;

impl Write for Console {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        s.bytes().for_each(put_byte);
        Ok(())
    }
}

/// Writes formatted text to the console (used by `print!` and `println!`).
pub fn print(args: fmt::Arguments<'_>) {
    // Console::write_str never fails.
    let _ = Console.write_fmt(args);
}

/// Prints to the serial console.
#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => ($crate::console::print(format_args!($($arg)*)));
}

/// Prints a line to the serial console.
#[macro_export]
macro_rules! println {
    () => ($crate::print!("\n"));
    ($($arg:tt)*) => ($crate::console::print(format_args!("{}\n", format_args!($($arg)*))));
}
