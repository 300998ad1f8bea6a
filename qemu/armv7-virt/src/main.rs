//! Bare-metal image for `qemu-system-arm -M virt -cpu cortex-a7` or `-cpu cortex-a15`:
//! measures with the AArch32 PMU through `pmu-armv7`'s public API and prints one
//! machine-readable line per result,
//!
//! ```text
//! RESULT <scenario> key=value … pass=<0|1>
//! ```
//!
//! and at the end `RESULT summary pass=<n> fail=<m>`. The exit status (semihosting) is
//! 0 only when every check passed; a panic or an unexpected exception prints `FATAL …`
//! and exits with 2 or 3. Run under `-icount shift=0,align=off,sleep=off` (QEMU then
//! counts instructions and cycles exactly). See README.md.
#![no_std]
#![no_main]

mod blocks;
mod boot;
mod console;
mod pl0_probes;
mod scenarios;

/// Entry from `boot.rs`, in SVC mode (PL1).
#[no_mangle]
extern "C" fn kernel_main() -> ! {
    println!("pmu armv7-virt image: AArch32 PMU scenarios at PL1 and PL0");
    let mut buf = [0u8; 256];
    let selftest = console::command_line(&mut buf).and_then(|line| {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix("selftest="))
    });
    let (pass, fail) = match selftest {
        None => scenarios::run_all(),
        Some(what) => self_test(what),
    };
    println!("RESULT summary pass={pass} fail={fail}");
    if fail == 0 {
        println!("all {pass} checks passed");
        console::exit(0)
    } else {
        println!("{fail} of {} checks FAILED", pass + fail);
        console::exit(1)
    }
}

/// `-append selftest=…`: proves that each kind of failure is visible in the output and
/// the exit status (the tests boot these too).
fn self_test(what: &str) -> (u32, u32) {
    println!("self-test: {what}");
    match what {
        "panic" => panic!("self-test panic"),
        // SAFETY: deliberately UNDEFINED, to exercise the fatal-exception path.
        "undef" => unsafe { core::arch::asm!("udf #0", options(nomem, nostack)) },
        "fail" => println!("RESULT selftest pass=0"),
        other => println!("unknown self-test `{other}` (panic, undef, fail)"),
    }
    (0, 1)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    println!("FATAL panic: {info}");
    console::exit(2)
}
