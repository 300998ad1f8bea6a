//! The AArch64 bare-metal PMU scenarios, shared by every AArch64 image: QEMU's `virt`
//! machine (`qemu/aarch64-virt`) and the Raspberry Pi 3, 4 and 5 (`qemu/raspi-aarch64`,
//! the `kernel8.img` a Pi's firmware starts).
//!
//! An image is a small board layer over this crate: a [`Board`] (how to print a byte,
//! how the PMU overflow interrupt reaches the CPU, what to do with the other cores),
//! a linker script that places the image where the board's loader puts it, and
//!
//! ```ignore
//! #[no_mangle]
//! fn pmu_board() -> &'static pmu_scenarios_armv8::Board { &BOARD }
//! ```
//!
//! The crate owns everything else: `_start` (entered at EL2, as a Pi's firmware and
//! QEMU's raspi boards leave the boot core, or at EL1, as QEMU `virt` does; EL2 hands
//! over to EL1), the exception vectors, the EL1 <-> EL0 switch and the scenarios, which
//! print one machine-readable line per result,
//!
//! ```text
//! RESULT <scenario> key=value … pass=<0|1>
//! ```
//!
//! plus a human line, and at the end `RESULT summary pass=<n> fail=<m>`. The exit
//! status (semihosting, where the emulator offers it) is 0 only when every scenario
//! passed; a panic or an unexpected exception prints `FATAL …` and exits with 2 or 3.
//! Without semihosting (a real board) the image prints the same lines and then waits
//! in `wfe`.
//!
//! Run under QEMU's `-icount shift=0,align=off,sleep=off`: QEMU then counts
//! INST_RETIRED and cycles exactly, so the exact-count scenario must give K, not about K.
//!
//! The exact-count and overflow scenarios, the console behind `println!`, the tally of
//! checks and the end of a run (self-tests, summary, exit status) are
//! `pmu-scenarios-common`'s, shared with the AArch32 scenarios; what differs (the
//! counters' register names, their width, the semihosting calls) is this crate's
//! `Arch` for AArch64.
#![no_std]

pub mod blocks;
pub mod boot;
mod el0_probes;
pub mod exceptions;
pub mod gic;
mod scenarios;
pub mod semihosting;

use core::sync::atomic::{AtomicPtr, Ordering};

use pmu_core::Slot;
pub use pmu_scenarios_common::console::Console;
pub use pmu_scenarios_common::{print, println};

/// How the board's PMU overflow interrupt reaches the boot CPU.
pub struct InterruptController {
    /// Its name in the RESULT line (`gic-400`, `bcm2836-local`, …).
    pub name: &'static str,
    /// Routes the PMU overflow interrupt of the boot CPU to its IRQ line and enables
    /// the controller.
    pub enable_pmu: fn(),
    /// The identifier of the pending interrupt, acknowledged; `None` when nothing is
    /// pending (spurious).
    pub acknowledge: fn() -> Option<u32>,
    /// Ends the handling of `id` (GIC: end of interrupt).
    pub end: fn(u32),
    /// Whether `id` is the PMU overflow interrupt.
    pub is_pmu: fn(u32) -> bool,
}

/// What an image tells the scenarios about its board.
pub struct Board {
    /// The first line the image prints.
    pub banner: &'static str,
    /// The board's name in `RESULT boot`.
    pub name: &'static str,
    /// Sets up the console (pins, baud rate); called first, before any output.
    pub init_console: fn(),
    /// How to print.
    pub console: Console,
    /// Puts the cores other than the boot core where they execute nothing (QEMU counts
    /// instructions globally under icount: a spinning core would be counted too).
    /// Returns how it did it, for `RESULT boot`.
    pub park_secondaries: fn() -> &'static str,
    /// The PMU overflow interrupt's path.
    pub irq: InterruptController,
}

static BOARD: AtomicPtr<Board> = AtomicPtr::new(core::ptr::null_mut());

/// The board the image registered (`pmu_board`), once `_start` has asked for it.
pub(crate) fn board() -> Option<&'static Board> {
    // SAFETY: only `boot_main` stores here, a `&'static Board`.
    unsafe { BOARD.load(Ordering::Relaxed).as_ref() }
}

unsafe extern "Rust" {
    /// The image's board, defined by every image with `#[no_mangle]`.
    safe fn pmu_board() -> &'static Board;
}

/// What the shared scenarios need to know of AArch64.
enum Armv8 {}

impl pmu_scenarios_common::Arch for Armv8 {
    // PMUv3p5's PMCR_EL0.LP makes them 64 bits wide.
    const EVENT_COUNTER_BITS: Option<u32> = None;

    fn slot_name(slot: Slot) -> &'static str {
        match slot {
            Slot::Fixed(0) => "PMCCNTR_EL0",
            Slot::Programmable(0) => "PMEVCNTR0_EL0",
            Slot::Programmable(1) => "PMEVCNTR1_EL0",
            Slot::Programmable(2) => "PMEVCNTR2_EL0",
            Slot::Programmable(3) => "PMEVCNTR3_EL0",
            Slot::Programmable(4) => "PMEVCNTR4_EL0",
            Slot::Programmable(5) => "PMEVCNTR5_EL0",
            _ => "other",
        }
    }

    fn exit(code: u32) -> ! {
        semihosting::exit(code)
    }

    fn command_line(buf: &mut [u8]) -> Option<&str> {
        semihosting::command_line(buf)
    }

    fn undefined_instruction() {
        // SAFETY: deliberately UNDEFINED at EL1, to exercise the fatal-exception path.
        unsafe { core::arch::asm!("udf #0", options(nomem, nostack)) }
    }
}

/// Entry from `_start`, at EL1 on the boot core; `entry_el` is the exception level
/// the loader started the image at (2 or 1).
#[no_mangle]
extern "C" fn boot_main(entry_el: u64) -> ! {
    let b = pmu_board();
    BOARD.store(b as *const Board as *mut Board, Ordering::Relaxed);
    pmu_scenarios_common::console::set(&b.console);
    (b.init_console)();
    println!("{}", b.banner);
    let parked = (b.park_secondaries)();
    println!(
        "RESULT boot board={} entry_el={entry_el} el={} secondaries={parked}",
        b.name,
        boot::current_el()
    );
    pmu_scenarios_common::finish::<Armv8>(|| scenarios::run_all(b))
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    println!("FATAL panic: {info}");
    semihosting::exit(2)
}
