//! The AArch32 bare-metal PMU scenarios, shared by QEMU `virt`'s image
//! (`qemu/armv7-virt`: Cortex-A7, Cortex-A15, `-cpu max`) and the Raspberry Pi 2's
//! `kernel7.img` (`qemu/raspi2b`: BCM2836, 4 x Cortex-A7).
//!
//! An image is a small board layer over this crate: a [`Board`] (console, the other
//! cores), a linker script that places the image where the board's loader puts it, and
//!
//! ```ignore
//! #[no_mangle]
//! fn pmu_board() -> &'static pmu_scenarios_armv7::Board { &BOARD }
//! ```
//!
//! The crate owns `_start` (entered in HYP mode, as the Pi 2's firmware and QEMU's
//! `raspi2b` may leave the boot core, or in SVC mode; HYP hands over to SVC), the
//! exception vectors, the PL1 <-> PL0 switch and the scenarios, which print one
//! `RESULT <scenario> key=value … pass=<0|1>` line per check and `RESULT summary
//! pass=<n> fail=<m>` at the end. The exit status (semihosting `SYS_EXIT_EXTENDED`,
//! where the emulator offers it) is 0 only when every check passed; 2 on a panic, 3 on
//! an unexpected exception (`FATAL …`). Without semihosting (a real board) the image
//! prints the same lines and waits in `wfe`.
#![no_std]

pub mod blocks;
pub mod boot;
pub mod console;
mod pl0_probes;
mod scenarios;

use core::sync::atomic::{AtomicPtr, Ordering};

/// What an image tells the scenarios about its board.
pub struct Board {
    /// The first line the image prints.
    pub banner: &'static str,
    /// The board's name in `RESULT boot`.
    pub name: &'static str,
    /// Sets up the console (pins, baud rate); called first, before any output.
    pub init_console: fn(),
    /// Sends one byte to the console, waiting while its FIFO is full.
    pub write_byte: fn(u8),
    /// Whether a line ends in CR LF (what a terminal on a serial line wants).
    pub crlf: bool,
    /// Puts the cores other than the boot core where they execute nothing (QEMU counts
    /// instructions globally under icount); returns how, for `RESULT boot`.
    pub park_secondaries: fn() -> &'static str,
}

static BOARD: AtomicPtr<Board> = AtomicPtr::new(core::ptr::null_mut());

/// The board the image registered, once `_start` has asked for it.
pub(crate) fn board() -> Option<&'static Board> {
    // SAFETY: only `boot_main` stores here, a `&'static Board`.
    unsafe { BOARD.load(Ordering::Relaxed).as_ref() }
}

unsafe extern "Rust" {
    /// The image's board, defined by every image with `#[no_mangle]`.
    safe fn pmu_board() -> &'static Board;
}

/// The names of the CPSR.M modes `_start` can be entered in.
fn mode_name(mode: u32) -> &'static str {
    match mode {
        0x13 => "svc",
        0x1a => "hyp",
        0x16 => "mon",
        _ => "other",
    }
}

/// Entry from `_start`, in SVC mode on the boot core; `entry_mode` is CPSR.M as the
/// loader left it.
#[no_mangle]
extern "C" fn boot_main(entry_mode: u32) -> ! {
    let b = pmu_board();
    BOARD.store(b as *const Board as *mut Board, Ordering::Relaxed);
    (b.init_console)();
    println!("{}", b.banner);
    let parked = (b.park_secondaries)();
    println!(
        "RESULT boot board={} entry_mode={} mode={} secondaries={parked}",
        b.name,
        mode_name(entry_mode),
        mode_name(boot::current_mode())
    );
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
