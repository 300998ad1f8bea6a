//! `pce-probe`: the x86_64 guest's proof that kmod-enable-user sets CR4.PCE.
//!
//! Linux re-derives CR4.PCE from perf's rdpmc policy at every switch to another process
//! (arch/x86/mm/tlb.c), so a bit set by the module is only seen by the process that loaded
//! it, until that CPU runs another process. This program is that one process:
//!
//! ```text
//! pce-probe                 execute rdpmc from ring 3
//! pce-probe MODULE.ko [ARGS] load MODULE.ko (finit_module) in this process, then rdpmc
//! ```
//!
//! Under QEMU TCG there is no counter behind rdpmc, so the outcome is a signal: SIGSEGV
//! (#GP: CR4.PCE clear, exit status 139 in the shell) or SIGILL (#UD: CR4.PCE set, the
//! check passed, exit status 132). With a real PMU it prints the value and exits 0.
//! Built by `cargo xtask` with rustc for x86_64-unknown-linux-musl (static).

use std::arch::asm;
use std::io::Write;
use std::os::fd::AsRawFd;

/// finit_module(2) on x86_64.
const SYS_FINIT_MODULE: i64 = 313;

fn finit_module(path: &str, args: &str) -> Result<(), i64> {
    let file = std::fs::File::open(path).map_err(|e| -i64::from(e.raw_os_error().unwrap_or(5)))?;
    let args = std::ffi::CString::new(args).map_err(|_| -22)?;
    let ret: i64;
    // SAFETY: finit_module(fd, params, flags) reads a NUL-terminated string and the file;
    // the kernel clobbers rcx and r11 on syscall.
    unsafe {
        asm!(
            "syscall",
            inlateout("rax") SYS_FINIT_MODULE => ret,
            in("rdi") file.as_raw_fd() as i64,
            in("rsi") args.as_ptr(),
            in("rdx") 0i64,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    if ret < 0 {
        Err(ret)
    } else {
        Ok(())
    }
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if let Some(module) = argv.first() {
        let params = argv[1..].join(" ");
        match finit_module(module, &params) {
            Ok(()) => println!(
                "pce-probe: loaded {module} in this process (pid {})",
                std::process::id()
            ),
            Err(errno) => {
                println!("pce-probe: finit_module({module}) failed: errno {}", -errno);
                std::process::exit(1);
            }
        }
    }
    println!(
        "pce-probe: rdpmc ecx=0 from ring 3 (pid {})",
        std::process::id()
    );
    let _ = std::io::stdout().flush();
    let (lo, hi): (u32, u32);
    // SAFETY: rdpmc only reads a counter, or faults (#GP/#UD), which ends this process
    // with a signal: the outcome the caller looks at.
    unsafe { asm!("rdpmc", in("ecx") 0u32, out("eax") lo, out("edx") hi, options(nomem, nostack)) };
    println!(
        "pce-probe: rdpmc returned {:#x}",
        (u64::from(hi) << 32) | u64::from(lo)
    );
}
