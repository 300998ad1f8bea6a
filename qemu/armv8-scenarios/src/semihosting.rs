//! Exit and the command line through semihosting.
//!
//! Semihosting (`hlt #0xf000`) is what QEMU offers with `-semihosting-config
//! enable=on`; on a real board without a debugger the instruction is UNDEFINED, and the
//! exception handler turns it into a failed call (`crate::exceptions`): [`exit`] then
//! waits in `wfe` and [`command_line`] gives `None`, so one image serves both.

/// Ends QEMU with `code` as its exit status (semihosting SYS_EXIT with
/// ADP_Stopped_ApplicationExit; QEMU needs `-semihosting-config enable=on`). Without
/// semihosting (a real board) it says so and waits forever.
pub fn exit(code: u32) -> ! {
    const SYS_EXIT: u64 = 0x18;
    const ADP_STOPPED_APPLICATION_EXIT: u64 = 0x20026;
    let block = [ADP_STOPPED_APPLICATION_EXIT, u64::from(code)];
    // SAFETY: `hlt #0xf000` is the AArch64 semihosting call; x1 points at the
    // two-word parameter block SYS_EXIT expects. QEMU ends the process there.
    unsafe {
        core::arch::asm!("hlt #0xf000", inout("x0") SYS_EXIT => _, in("x1") block.as_ptr(), options(nostack));
    }
    // Without semihosting the call is UNDEFINED; the exception handler skipped it.
    crate::println!("exit status {code}: no semihosting here, halted (power the board off)");
    loop {
        // SAFETY: waiting for an event has no effect on memory.
        unsafe { core::arch::asm!("wfe", options(nomem, nostack)) };
    }
}

/// The command line QEMU passes through semihosting (`SYS_GET_CMDLINE`): the image
/// path followed by what `-append` gave, or `None` when there is none.
pub fn command_line(buf: &mut [u8]) -> Option<&str> {
    const SYS_GET_CMDLINE: u64 = 0x15;
    let mut block = [buf.as_mut_ptr() as u64, buf.len() as u64];
    let status: u64;
    // SAFETY: semihosting call as in `exit`; QEMU writes at most `buf.len()` bytes into
    // `buf` and the length into block[1].
    unsafe {
        core::arch::asm!("hlt #0xf000", inout("x0") SYS_GET_CMDLINE => status, in("x1") block.as_mut_ptr(), options(nostack));
    }
    if status != 0 {
        return None;
    }
    let len = usize::try_from(block[1]).ok()?.min(buf.len());
    core::str::from_utf8(&buf[..len]).ok()
}
