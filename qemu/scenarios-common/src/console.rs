//! Output through the board's console: the image registers its [`Console`] with
//! [`set`] before printing anything; until then output is dropped.

use core::fmt::{self, Write};
use core::sync::atomic::{AtomicPtr, Ordering};

/// How a board prints.
pub struct Console {
    /// Sends one byte to the console, waiting while its FIFO is full.
    pub write_byte: fn(u8),
    /// Whether a line ends in CR LF (what a terminal on a serial line wants) rather
    /// than LF alone.
    pub crlf: bool,
}

static CONSOLE: AtomicPtr<Console> = AtomicPtr::new(core::ptr::null_mut());

/// Sends [`print!`](crate::print) and [`println!`](crate::println) output to `console`
/// from now on.
pub fn set(console: &'static Console) {
    CONSOLE.store(console as *const Console as *mut Console, Ordering::Relaxed);
}

/// The console as a `fmt::Write`.
pub struct Uart;

impl Write for Uart {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        // SAFETY: only `set` stores here, a `&'static Console`.
        if let Some(console) = unsafe { CONSOLE.load(Ordering::Relaxed).as_ref() } {
            for b in s.bytes() {
                if b == b'\n' && console.crlf {
                    (console.write_byte)(b'\r');
                }
                (console.write_byte)(b);
            }
        }
        Ok(())
    }
}

/// `print!` to the console.
#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => {{
        let _ = core::fmt::Write::write_fmt(&mut $crate::console::Uart, format_args!($($arg)*));
    }};
}

/// `println!` to the console.
#[macro_export]
macro_rules! println {
    () => { $crate::print!("\n") };
    ($($arg:tt)*) => {{
        $crate::print!($($arg)*);
        $crate::print!("\n");
    }};
}
