//! pmu-criterion's benchmark function (`spin`: `n` iterations of a two-instruction loop,
//! pmu-criterion/examples/bench.rs) alone, called once: `spin N`. For tools that count
//! a whole function's instructions instead of reading counters, such as Valgrind's
//! callgrind (`--toggle-collect='*spin*'`): docs/pmu-qemu.md compares them.

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
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100);
    spin(std::hint::black_box(n));
}
