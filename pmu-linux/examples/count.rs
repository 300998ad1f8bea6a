//! Counts the instructions of a function: pmu-linux's front door in five lines (the
//! five in `count`).
//!
//! `cargo run --release -p pmu-linux --example count [ITERATIONS]` prints the backend
//! the meter picked and why (stderr), then the instructions `my_function(ITERATIONS)`
//! retires beyond an empty region (stdout): the smallest count of 10 runs without
//! hazards. Where the machine has no hardware counters it says so and exits with
//! status 1: it never prints a number it did not count.

use std::process::ExitCode;

fn count(iterations: u64) -> Result<(), pmu_linux::Error> {
    let mut builder = pmu_linux::Meter::builder();
    let instructions = builder.add(pmu_linux::GenericEvent::Instructions);
    let mut meter = builder.build()?;
    eprintln!("backend: {} ({})", meter.backend(), meter.why());
    let result = meter.measure(|| my_function(iterations))?;
    println!("{} instructions", result.min(instructions)?);
    Ok(())
}

/// A loop of `iterations` iterations of two instructions (a decrement that sets the
/// flags and a conditional branch), so that twice the iterations retire exactly
/// 2 × `iterations` instructions more.
#[inline(never)]
fn my_function(iterations: u64) {
    #[cfg(target_arch = "aarch64")]
    // SAFETY: register arithmetic and a branch inside the block; no memory, no stack.
    unsafe {
        core::arch::asm!("2:", "subs {n}, {n}, #1", "b.ne 2b", n = inout(reg) iterations => _,
            options(nomem, nostack))
    };
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as above.
    unsafe {
        core::arch::asm!("2:", "dec {n}", "jnz 2b", n = inout(reg) iterations => _,
            options(nomem, nostack))
    };
    #[cfg(not(any(target_arch = "aarch64", target_arch = "x86_64")))]
    for i in 0..iterations {
        std::hint::black_box(i);
    }
}

fn main() -> ExitCode {
    let iterations = match std::env::args().nth(1).map(|a| a.parse::<u64>()) {
        None => 1000,
        Some(Ok(n)) if n >= 1 => n,
        Some(_) => {
            eprintln!("count: ITERATIONS is a whole number of at least 1");
            return ExitCode::from(2);
        }
    };
    match count(iterations) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("count: {e}");
            ExitCode::FAILURE
        }
    }
}
