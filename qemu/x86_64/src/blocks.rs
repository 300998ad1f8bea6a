//! The measured regions: blocks of exactly `K` instructions.

use core::arch::asm;

/// The block sizes every measuring scenario runs (the sizes [`for_each_block!`](crate::for_each_block) lists).
pub const SIZES: [usize; 5] = [1, 10, 100, 1000, 10000];

/// Executes exactly `K` `nop` instructions, straight-line (no loop, no branch).
#[inline(always)]
pub fn nops<const K: usize>() {
    // SAFETY: `nop` does nothing; the block touches no register, flag, stack or memory.
    // Not `pure`: the compiler keeps it in place between the counter reads.
    unsafe { asm!(".rept {k}", "nop", ".endr", k = const K, options(nostack, preserves_flags)) };
}

/// Calls `measure` once per block size of [`SIZES`], with that block as the region.
///
/// A macro so each size is a separate monomorphic `nops::<K>` (the harness then
/// inlines exactly `K` nops between the two counter reads).
#[macro_export]
macro_rules! for_each_block {
    ($measure:ident ( $($arg:expr),* )) => {{
        $measure::<1>($($arg),*);
        $measure::<10>($($arg),*);
        $measure::<100>($($arg),*);
        $measure::<1000>($($arg),*);
        $measure::<10000>($($arg),*);
    }};
}
