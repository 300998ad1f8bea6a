//! Ending the run: QEMU's `isa-debug-exit` device turns a port write into the exit status.
//!
//! With `-device isa-debug-exit,iobase=0xf4,iosize=0x04`, writing `c` to port 0xF4 ends
//! QEMU with status `(c << 1) | 1`. Status 0 (a clean QEMU shutdown, or `-no-reboot`
//! after a triple fault) can therefore never mean success; the codes below keep success,
//! failed checks and crashes apart:
//!
//! | code | QEMU exit status | meaning |
//! |---|---|---|
//! | `0x10` | 33 | every scenario passed (or was honestly skipped) |
//! | `0x11` | 35 | at least one scenario failed |
//! | `0x12` | 37 | panic or unexpected exception (the console says where and why) |
//!
//! Without the device (real hardware), the CPU halts after the write.

/// I/O port of QEMU's `isa-debug-exit` device.
const DEBUG_EXIT_PORT: u16 = 0xF4;

/// What the run ends with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum ExitCode {
    /// Every scenario passed or was skipped: QEMU exits with 33.
    Success = 0x10,
    /// A scenario failed: QEMU exits with 35.
    Failure = 0x11,
    /// A panic or an unexpected exception: QEMU exits with 37.
    Crash = 0x12,
}

impl ExitCode {
    /// The exit status QEMU reports for this code.
    pub const fn qemu_status(self) -> i32 {
        ((self as i32) << 1) | 1
    }
}

/// Ends the run with `code`.
pub fn exit(code: ExitCode) -> ! {
    // SAFETY: port 0xF4 is the debug-exit device under QEMU (the process ends) and
    // unused on a PC otherwise.
    unsafe { x86::io::outl(DEBUG_EXIT_PORT, code as u32) };
    loop {
        // SAFETY: interrupts are off: halting forever is the intended end without QEMU.
        unsafe { x86::halt() };
    }
}
