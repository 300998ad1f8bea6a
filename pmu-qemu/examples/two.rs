//! Two functions whose instructions are known, for `pmu-qemu --profile`: `first` runs
//! `FIRST` iterations of a two-instruction loop and `second` `SECOND` iterations of a
//! three-instruction one, each called once from `main` (`two [FIRST [SECOND]]` to
//! change them, e.g. for a differential flamegraph). `cargo xtask pmu-qemu` profiles
//! it and checks each function's figure against the count read from its disassembly
//! (`aarch64-linux-gnu-objdump -d`), within one period. Build it with
//! `RUSTFLAGS="-C force-frame-pointers=yes"` for stacks through `main`.

/// Iterations of `first`'s loop.
pub const FIRST: u64 = 3_000_000;
/// Iterations of `second`'s loop.
pub const SECOND: u64 = 3_000_000;

/// `iterations` iterations of `subs; b.ne`.
#[inline(never)]
fn first(iterations: u64) {
    #[cfg(target_arch = "aarch64")]
    // SAFETY: register arithmetic and a branch inside the block; no memory, no stack.
    unsafe {
        core::arch::asm!("2:", "subs {n}, {n}, #1", "b.ne 2b", n = inout(reg) iterations => _,
            options(nomem, nostack))
    };
    #[cfg(not(target_arch = "aarch64"))]
    for i in 0..iterations {
        std::hint::black_box(i);
    }
}

/// `iterations` iterations of `subs; nop; b.ne`.
#[inline(never)]
fn second(iterations: u64) {
    #[cfg(target_arch = "aarch64")]
    // SAFETY: as in `first`.
    unsafe {
        core::arch::asm!("2:", "subs {n}, {n}, #1", "nop", "b.ne 2b", n = inout(reg) iterations => _,
            options(nomem, nostack))
    };
    #[cfg(not(target_arch = "aarch64"))]
    for i in 0..iterations {
        std::hint::black_box(i);
    }
}

fn main() {
    let arg = |n: usize, default: u64| {
        std::env::args()
            .nth(n)
            .and_then(|a| a.parse().ok())
            .unwrap_or(default)
    };
    first(std::hint::black_box(arg(1, FIRST)));
    second(std::hint::black_box(arg(2, SECOND)));
}
