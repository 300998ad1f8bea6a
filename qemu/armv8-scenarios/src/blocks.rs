//! Blocks of exactly K instructions, as functions of the same type so the call around
//! them is identical (`Harness::calibrated_against`).

use core::arch::asm;

/// K `nop`s, then return: K + 1 instructions (the `ret` cancels against [`nops::<0>`]).
#[inline(never)]
pub fn nops<const K: usize>() {
    // SAFETY: `nop`s touch no state.
    unsafe {
        asm!(".rept {k}", "nop", ".endr", k = const K, options(nomem, nostack, preserves_flags))
    }
}

/// The K of each exact-count block, with its function.
pub const EXACT: [(u64, fn()); 5] = [
    (1, nops::<1>),
    (10, nops::<10>),
    (100, nops::<100>),
    (1000, nops::<1000>),
    (10000, nops::<10000>),
];

/// The empty block the others are calibrated against.
pub const EMPTY: fn() = nops::<0>;

/// EL0 code: K `nop`s, then back to EL1.
pub extern "C" fn el0_nops<const K: usize>(_: u64) -> ! {
    nops::<K>();
    // SAFETY: runs at EL0 under `boot::at_el0`, which `el0_exit` returns to.
    unsafe { crate::boot::el0_exit(0) }
}
