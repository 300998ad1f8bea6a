//! A criterion benchmark in instructions per iteration, from one-instruction counter
//! reads: `cargo run --release -p pmu-criterion --example bench -- --bench` (without
//! `--bench`, criterion runs each benchmark once, as a test).
//!
//! Two loops of 100 and 200 iterations of two instructions (a decrement that sets the
//! flags and a conditional branch): their estimates differ by exactly 200 instructions
//! where instructions are counted exactly (the arm64 QEMU guest: `-icount`). Where the
//! machine has no hardware counters, it says so and counts time-stamp-counter ticks.

use std::time::Duration;

use criterion::Criterion;
use pmu_criterion::PmuMeasurement;

/// `iterations` iterations of a two-instruction loop.
#[inline(never)]
fn spin(iterations: u64) {
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

fn main() {
    let instructions = match PmuMeasurement::instructions() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("bench: no meter: {e}");
            std::process::exit(1);
        }
    };
    eprintln!("{}", instructions.describe());
    let mut c = Criterion::default()
        .with_measurement(instructions.clone())
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_millis(500))
        .sample_size(10)
        .configure_from_args();
    for n in [100u64, 200] {
        c.bench_function(&format!("spin {n}"), |b| {
            b.iter_custom(|iters| instructions.iter_clean(iters, || spin(std::hint::black_box(n))))
        });
    }
    c.final_summary();
    eprintln!("{}", instructions.report());
}
