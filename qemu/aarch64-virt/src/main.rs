//! Bare-metal image for `qemu-system-aarch64 -M virt`.
#![no_std]
#![no_main]

mod boot;
mod console;
mod exceptions;
mod gic;

/// Entry from `boot.rs`.
#[no_mangle]
extern "C" fn kernel_main() -> ! {
    println!("aarch64-virt image");
    extern "C" fn el0_test(arg: u64) -> ! {
        // SAFETY: this runs at EL0 through at_el0.
        unsafe { boot::el0_exit(arg + 1) }
    }
    let v = boot::at_el0(el0_test, 41);
    println!("el0 returned {v}");
    extern "C" fn el0_trap(arg: u64) -> ! {
        let v: u64;
        // SAFETY: test
        unsafe { core::arch::asm!("mrs {0}, pmccntr_el0", out(reg) v) };
        // SAFETY: this runs at EL0 through at_el0.
        unsafe { boot::el0_exit(arg + v) }
    }
    let v = boot::at_el0(el0_trap, 41);
    println!("el0 returned {v} trap {:?}", exceptions::take_el0_trap());
    console::exit(5)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    println!("FATAL panic: {info}");
    console::exit(2)
}
