//! Bare-metal image for `qemu-system-aarch64 -M virt`: measures with the PMU through
//! `pmu-armv8`'s public API and prints one machine-readable line per result,
//!
//! ```text
//! RESULT <scenario> key=value … pass=<0|1>
//! ```
//!
//! plus a human line, and at the end `RESULT summary pass=<n> fail=<m>`. The exit
//! status (semihosting) is 0 only when every scenario passed; a panic or an unexpected
//! exception prints `FATAL …` with the reason and exits with 2 or 3.
//!
//! Run under `-icount shift=0,align=off,sleep=off`: QEMU then counts INST_RETIRED and
//! cycles exactly, so the exact-count scenario must give K, not about K.
#![no_std]
#![no_main]

mod blocks;
mod boot;
mod console;
mod el0_probes;
mod exceptions;
mod gic;
mod scenarios;

/// Entry from `boot.rs`, at EL1.
#[no_mangle]
extern "C" fn kernel_main() -> ! {
    println!("pmu aarch64-virt image: PMU scenarios at EL1 and EL0");
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
        // SAFETY: deliberately UNDEFINED at EL1, to exercise the fatal-exception path.
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
