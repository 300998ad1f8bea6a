//! Exit and the command line through semihosting (`svc 0x123456`, what QEMU offers with
//! `-semihosting-config enable=on`). On a real board the SVC reaches the image's own
//! SVC vector, which returns all ones (a failed call): [`exit`] then waits in `wfe`
//! and [`command_line`] gives `None`, so one image serves both.

/// Ends QEMU with `code` as its exit status: semihosting SYS_EXIT_EXTENDED (0x20) with
/// ADP_Stopped_ApplicationExit and the code (on AArch32 plain SYS_EXIT carries no exit
/// code). QEMU needs `-semihosting-config enable=on`.
pub fn exit(code: u32) -> ! {
    const SYS_EXIT_EXTENDED: u32 = 0x20;
    const ADP_STOPPED_APPLICATION_EXIT: u32 = 0x20026;
    let block = [ADP_STOPPED_APPLICATION_EXIT, code];
    // SAFETY: `svc 0x123456` in ARM state at PL1 is the AArch32 semihosting call; r1
    // points at the two-word block SYS_EXIT_EXTENDED expects. QEMU ends the process;
    // without semihosting the image's SVC vector returns (clobbering r1, r2, lr).
    unsafe {
        core::arch::asm!("svc 0x123456", inout("r0") SYS_EXIT_EXTENDED => _, inout("r1") block.as_ptr() => _, out("r2") _, out("lr") _, options(nostack));
    }
    // Without semihosting the SVC vector returned a failed call.
    crate::println!("exit status {code}: no semihosting here, halted (power the board off)");
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
        core::arch::asm!("svc 0x123456", inout("r0") SYS_GET_CMDLINE => status, inout("r1") block.as_mut_ptr() => _, out("r2") _, out("lr") _, options(nostack));
    }
    if status != 0 {
        return None;
    }
    let len = usize::try_from(block[1]).ok()?.min(buf.len());
    core::str::from_utf8(&buf[..len]).ok()
}
