//! `kernel.img` for the Raspberry Pi Zero and 1 (BCM2835, one ARM1176JZF-S), and QEMU's
//! `raspi0` / `raspi1ap`: probes the ARM1176 PMU (PMCR, CCR, CR0, CR1 in CP15 c15,
//! through `pmu-armv6`) and counts where the chip counts. Peripherals at 0x2000_0000
//! (PL011 at 0x2020_1000 on GPIO 14/15). Prints `RESULT <scenario> key=value …` lines
//! and `RESULT summary pass=<n> fail=<m> not_counted=<k>`; exit status (semihosting)
//! 0 when nothing failed, 1 when a check failed, 2 on a panic, 3 on an unexpected
//! exception. See src/scenarios.rs for what QEMU's c15 dummy gives.
#![no_std]
#![no_main]

mod boot;
mod console;
mod scenarios;

/// Entry from `_start`, in SVC mode; `entry_mode` is CPSR.M as the loader left it.
#[no_mangle]
extern "C" fn boot_main(entry_mode: u32) -> ! {
    console::init();
    println!("pmu raspi0 image (kernel.img, BCM2835, ARM1176): PMU probe and counting at PL1");
    println!(
        "RESULT boot board=raspi0 entry_mode={} cores=1",
        if entry_mode == 0x13 { "svc" } else { "other" }
    );
    let mut buf = [0u8; 256];
    let selftest = console::command_line(&mut buf).and_then(|line| {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix("selftest="))
    });
    let t = match selftest {
        None => scenarios::run_all(),
        Some(what) => self_test(what),
    };
    println!(
        "RESULT summary pass={} fail={} not_counted={}",
        t.pass, t.fail, t.not_counted
    );
    if t.fail == 0 {
        console::exit(0)
    } else {
        console::exit(1)
    }
}

/// `-append selftest=…`: each kind of failure reaches the output and the exit status.
fn self_test(what: &str) -> scenarios::Tally {
    println!("self-test: {what}");
    match what {
        "panic" => panic!("self-test panic"),
        // SAFETY: deliberately UNDEFINED, to exercise the fatal-exception path.
        "undef" => unsafe { core::arch::asm!("udf #0", options(nomem, nostack)) },
        other => println!("unknown self-test `{other}` (panic, undef)"),
    }
    scenarios::Tally {
        fail: 1,
        ..Default::default()
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    println!("FATAL panic: {info}");
    console::exit(2)
}
