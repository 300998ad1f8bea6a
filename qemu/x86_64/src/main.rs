//! Bare-metal x86_64 image for `qemu-system-x86_64`: what the x86 PMU looks like from
//! ring 0 and ring 3 of a machine, measured through the workspace's harness.
//!
//! Boot ([`boot`]): PVH entry in 32-bit protected mode, identity-mapped long mode, then
//! [`main`]. [`cpu`] sets up the GDT with ring-3 segments and the TSS, [`traps`] the IDT
//! and the guarded calls that turn a probe's fault into a result. Output goes to COM1
//! ([`console`]); the run ends through QEMU's `isa-debug-exit` ([`exit`]: status 33 on
//! success, 35 when a scenario failed, 37 on a panic or unexpected exception).
//!
//! The scenarios ([`scenarios`]), each printing `RESULT <scenario> status=<verdict> key=value…`:
//!
//! 1. `cpuid`: vendor, leaf 0AH raw and decoded by pmu-x86, the AMD extension; under
//!    QEMU TCG `pmu=absent`;
//! 2. `tsc`: blocks of K nops (K = 1 … 10000) measured with RDTSC through
//!    pmu-core's harness with calibration;
//! 3. `rdpmc_ring0`, `rdpmc_ring3`: RDPMC in ring 0, and in ring 3 with CR4.PCE clear
//!    (#GP) and set (a value with a PMU; #UD under TCG);
//! 4. `perfevtsel`: IA32_PERFEVTSEL0 = INST_RETIRED.ANY and the same blocks with RDPMC,
//!    where an architectural PMU exists; skipped otherwise.
//!
//! Built for `x86_64-unknown-none`; on any other target this is a stub that says so.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
mod blocks;
#[cfg(target_os = "none")]
mod boot;
#[cfg(target_os = "none")]
mod console;
#[cfg(target_os = "none")]
mod cpu;
#[cfg(target_os = "none")]
mod exit;
#[cfg(target_os = "none")]
mod scenarios;
#[cfg(target_os = "none")]
mod selftest;
#[cfg(target_os = "none")]
mod start_info;
#[cfg(target_os = "none")]
mod traps;

/// Rust entry, called by [`boot`] in 64-bit mode with the physical address of the PVH
/// `hvm_start_info`.
#[cfg(target_os = "none")]
extern "C" fn main(start_info: u32) -> ! {
    use scenarios::Tally;

    console::init();
    // SeaBIOS leaves its last line unterminated on the same serial port.
    println!();
    println!("qemu-x86_64: PMU probe image (long mode, ring 0)");
    cpu::init();
    traps::init();

    let mut tally = Tally::default();
    if let Some(command_line) = start_info::command_line(start_info) {
        selftest::run(command_line, &mut tally);
    }
    let platform = scenarios::cpuid::run(&mut tally);
    scenarios::tsc::run(&mut tally);
    scenarios::rdpmc::run(&mut tally, &platform);
    scenarios::perfevtsel::run(&mut tally, &platform);
    tally.summary();
    let code = if tally.fail == 0 {
        exit::ExitCode::Success
    } else {
        exit::ExitCode::Failure
    };
    println!(
        "qemu-x86_64: exit code {:#x} (QEMU exit status {})",
        code as u32,
        code.qemu_status()
    );
    exit::exit(code)
}

#[cfg(target_os = "none")]
#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    match info.location() {
        Some(l) => {
            println!(
                "PANIC at {}:{}:{}: {}",
                l.file(),
                l.line(),
                l.column(),
                info.message()
            );
            println!(
                "RESULT crash reason=panic location={}:{}:{}",
                l.file(),
                l.line(),
                l.column()
            );
        }
        None => {
            println!("PANIC: {}", info.message());
            println!("RESULT crash reason=panic location=unknown");
        }
    }
    exit::exit(exit::ExitCode::Crash)
}

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!(
        "qemu-x86_64 is a bare-metal image: build it with --target x86_64-unknown-none \
         (cargo xtask qemu x86_64, or cargo run --release in qemu/x86_64)"
    );
    std::process::exit(2);
}
