//! A benchmark in instructions, from one-instruction counter reads, through
//! pmu-criterion's harness: `cargo run --release -p pmu-criterion --example bench --
//! --bench` (without `--bench`, each benchmark runs once, as a test). Criterion samples
//! where counts vary; under pmu-qemu (exact counts) each benchmark is counted once.
//!
//! Two loops of 100 and 200 iterations of two instructions (a decrement that sets the
//! flags and a conditional branch): their estimates differ by exactly 200 instructions
//! where instructions are counted exactly (the arm64 QEMU guest: `-icount`). Where the
//! machine has no hardware counters, it says so and counts time-stamp-counter ticks.
//!
//! With `BENCH_HISTORY=1`, one more benchmark, `history/100`, whose routine remembers
//! its calls: call N spins 100 × N iterations, so its second and third calls in one
//! process differ by 200 instructions, as an allocating routine's do with the heap's
//! state. One-shot exact mode counts it in two fresh processes (their second call, 200
//! iterations) instead.

use std::time::Duration;

use std::process::ExitCode;

use criterion::Criterion;
use pmu_criterion::{Bench, PmuMeasurement};

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

fn main() -> ExitCode {
    // Criterion's sampling where it applies (a machine with counters): short, since
    // counts barely vary. Under pmu-qemu, one exact call per benchmark instead.
    let criterion = Criterion::default()
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_millis(500))
        .sample_size(10);
    let mut bench = match PmuMeasurement::instructions()
        .map_err(pmu_criterion::BenchError::Meter)
        .and_then(|m| Bench::with_criterion(m, criterion))
    {
        Ok(b) => b,
        Err(e) => {
            eprintln!("bench: {e}");
            return e.exit_code();
        }
    };
    // A deliberately slower variant for the regression gate's own test (`cargo xtask
    // pmu-qemu`): BENCH_SPIN_EXTRA more iterations in every benchmark.
    let extra: u64 = match std::env::var("BENCH_SPIN_EXTRA").map(|v| v.parse()) {
        Err(_) => 0,
        Ok(Ok(n)) => n,
        Ok(Err(e)) => {
            eprintln!("bench: BENCH_SPIN_EXTRA: {e}");
            return ExitCode::from(2);
        }
    };
    for n in [100u64, 200] {
        bench.with_input("spin", &n, |&n| spin(std::hint::black_box(n + extra)));
    }
    if std::env::var_os("BENCH_HISTORY").is_some() {
        let mut calls = 0u64;
        bench.with_input("history", &100u64, |&n| {
            calls += 1;
            spin(std::hint::black_box(n * calls + extra));
        });
    }
    bench.finish()
}
