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
//!
//! After the probe, `RESULT events` names what the scenarios count from the running
//! core's table in `pmu-events` (picked by MIDR), or the common events where it has
//! none.
//!
//! The exact-count and overflow scenarios, the console behind `println!`, the tally of
//! checks and the end of a run (self-tests, summary, exit status) are
//! `pmu-scenarios-common`'s, shared with the AArch64 scenarios; what differs (the
//! counters' register names, their width, the semihosting calls) is this crate's
//! `Arch` for AArch32.
#![no_std]

pub mod boot;
mod events;
mod pl0_probes;
mod scenarios;
pub mod semihosting;

use pmu_core::Slot;
pub use pmu_scenarios_common::console::Console;
pub use pmu_scenarios_common::{print, println};

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
    /// instructions globally under icount); returns how, for `RESULT boot`.
    pub park_secondaries: fn() -> &'static str,
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

/// What the shared scenarios need to know of AArch32.
enum Armv7 {}

impl pmu_scenarios_common::Arch for Armv7 {
    // ARMv7's event counters are 32 bits wide (PMEVCNTR<n>, PMXEVCNTR).
    const EVENT_COUNTER_BITS: Option<u32> = Some(32);

    fn slot_name(slot: Slot) -> &'static str {
        match slot {
            Slot::Fixed(0) => "PMCCNTR",
            Slot::Programmable(0) => "PMEVCNTR0",
            Slot::Programmable(1) => "PMEVCNTR1",
            Slot::Programmable(2) => "PMEVCNTR2",
            Slot::Programmable(3) => "PMEVCNTR3",
            Slot::Programmable(4) => "PMEVCNTR4",
            Slot::Programmable(5) => "PMEVCNTR5",
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
        // SAFETY: deliberately UNDEFINED, to exercise the fatal-exception path.
        unsafe { core::arch::asm!("udf #0", options(nomem, nostack)) }
    }
}

/// Entry from `_start`, in SVC mode on the boot core; `entry_mode` is CPSR.M as the
/// loader left it.
#[no_mangle]
extern "C" fn boot_main(entry_mode: u32) -> ! {
    let b = pmu_board();
    pmu_scenarios_common::console::set(&b.console);
    (b.init_console)();
    println!("{}", b.banner);
    let parked = (b.park_secondaries)();
    println!(
        "RESULT boot board={} entry_mode={} mode={} secondaries={parked}",
        b.name,
        mode_name(entry_mode),
        mode_name(boot::current_mode())
    );
    pmu_scenarios_common::finish::<Armv7>(scenarios::run_all)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    println!("FATAL panic: {info}");
    semihosting::exit(2)
}
