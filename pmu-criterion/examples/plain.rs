//! A benchmark written with criterion's own API alone (`criterion_group!`,
//! `criterion_main!`, criterion's default wall-clock measurement): what a user's existing
//! bench looks like before pmu-criterion. Under pmu-qemu it runs unchanged, and criterion
//! measures the guest's virtual time (docs/pmu-qemu.md, "Plain criterion under
//! pmu-qemu"): `cargo run --release --target aarch64-unknown-linux-musl -p pmu-criterion
//! --example plain -- --bench --warm-up-time 0.001 --measurement-time 0.01
//! --sample-size 10 --noplot` with pmu-qemu as the runner.
//!
//! The same two loops as the `bench` example: 100 and 200 iterations of two instructions.

use criterion::{criterion_main, BenchmarkId, Criterion};

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

/// `spin/100` and `spin/200`, as criterion's book writes a parameterised benchmark.
fn spin_group(c: &mut Criterion) {
    let mut group = c.benchmark_group("spin");
    for n in [100u64, 200] {
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.iter(|| spin(std::hint::black_box(n)))
        });
    }
    group.finish();
}

// `criterion_group!` defines an undocumented `pub fn`, which this workspace's
// `missing_docs` rejects at a crate's root; inside a private module it is no export.
mod group {
    use criterion::criterion_group;
    criterion_group!(benches, super::spin_group);
}
criterion_main!(group::benches);
