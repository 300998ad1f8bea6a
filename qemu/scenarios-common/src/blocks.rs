//! Blocks of exactly K instructions, as functions of the same type so the call around
//! them is identical (`Harness::calibrated_against`).

use core::arch::asm;

/// K `nop`s, then return: K + 1 instructions (the return, `ret` on A64 and `bx lr` on
/// A32, cancels against [`nops::<0>`]). `nop` is one instruction on every target this
/// crate builds for.
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
