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
    let (pass, fail) = scenarios::run_all();
    println!("RESULT summary pass={pass} fail={fail}");
    if fail == 0 {
        println!("all {pass} checks passed");
        console::exit(0)
    } else {
        println!("{fail} of {} checks FAILED", pass + fail);
        console::exit(1)
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    println!("FATAL panic: {info}");
    console::exit(2)
}
