//! Counter widths, wrap-safe deltas and sign extension.
//!
//! Hardware counters are N bits wide (ARM1176: 32; PMUv3 event counters: 32, or 64 with
//! FEAT_PMUv3p5 and PMCR_EL0.LP; x86 general-purpose counters: CPUID.0AH:EAX\[23:16\],
//! typically 48). Arithmetic on their values must be done modulo 2^N, and the value
//! Linux's `perf_event_mmap_page` asks user space to combine with `offset` must be
//! *sign*-extended from `pmc_width` bits (include/uapi/linux/perf_event.h, the
//! `pmc <<= 64 - width; pmc >>= 64 - width` lines of the example reader).

use crate::Error;

/// Width of a hardware counter in bits, always in `1..=64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CounterWidth(u8);

impl CounterWidth {
    /// 32-bit counters: ARM1176, PMUv3 event counters without FEAT_PMUv3p5/LP.
    pub const W32: Self = Self(32);
    /// 48-bit counters: typical x86 general-purpose counters.
    pub const W48: Self = Self(48);
    /// 64-bit counters: PMCCNTR_EL0 with LC, PMUv3p5 event counters with LP.
    pub const W64: Self = Self(64);

    /// A width of `bits` bits.
    ///
    /// # Errors
    /// [`Error::InvalidWidth`] unless `1 <= bits <= 64`.
    pub const fn new(bits: u32) -> Result<Self, Error> {
        if bits >= 1 && bits <= 64 {
            Ok(Self(bits as u8))
        } else {
            Err(Error::InvalidWidth { bits })
        }
    }

    /// The number of bits.
    pub const fn bits(self) -> u32 {
        self.0 as u32
    }

    /// All-ones in the low `bits()` bits.
    pub const fn mask(self) -> u64 {
        u64::MAX >> (64 - self.0 as u32)
    }

    /// `value` truncated to this width (what the hardware register holds).
    pub const fn truncate(self, value: u64) -> u64 {
        value & self.mask()
    }

    /// `raw` sign-extended from this width to 64 bits.
    ///
    /// Only the low `bits()` bits of `raw` are looked at. This is what the perf mmap page
    /// protocol asks for: `offset + sign_extend(pmc)` (libperf's 2025 switch to an
    /// unsigned shift broke exactly this for counters with the top bit set).
    pub const fn sign_extend(self, raw: u64) -> i64 {
        let shift = 64 - self.0 as u32;
        ((raw << shift) as i64) >> shift
    }

    /// Events counted from `start` to `end`, assuming at most one wrap in between.
    ///
    /// Both values are taken modulo 2^bits first, so stray high bits (a PMUv3p5 counter
    /// read as 64 bits while it overflows at 32) do not leak into the result.
    pub const fn wrapping_delta(self, start: u64, end: u64) -> u64 {
        end.wrapping_sub(start) & self.mask()
    }

    /// Events counted from `start` to `end` when the counter is known to have wrapped
    /// `wraps` times in between (from overflow flags or interrupts).
    ///
    /// The result is `wraps * 2^bits + end - start`.
    ///
    /// # Errors
    /// - [`Error::InconsistentWraps`] when `wraps == 0` but `end < start` (after
    ///   truncation): the counter must have wrapped, so the wrap count is wrong;
    /// - [`Error::DeltaOverflow`] when the total does not fit in 64 bits.
    pub const fn accumulate(self, start: u64, end: u64, wraps: u64) -> Result<u64, Error> {
        let start = self.truncate(start) as u128;
        let end = self.truncate(end) as u128;
        if wraps == 0 && end < start {
            return Err(Error::InconsistentWraps);
        }
        let total = (wraps as u128) * (1u128 << self.0) + end - start;
        if total > u64::MAX as u128 {
            Err(Error::DeltaOverflow)
        } else {
            Ok(total as u64)
        }
    }
}

impl core::fmt::Display for CounterWidth {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} bits", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn width_bounds_are_typed_errors() {
        assert_eq!(CounterWidth::new(0), Err(Error::InvalidWidth { bits: 0 }));
        assert_eq!(CounterWidth::new(65), Err(Error::InvalidWidth { bits: 65 }));
        assert_eq!(CounterWidth::new(1).map(CounterWidth::bits), Ok(1));
        assert_eq!(CounterWidth::new(64).map(CounterWidth::bits), Ok(64));
    }

    #[test]
    fn masks() {
        assert_eq!(CounterWidth::W32.mask(), 0xFFFF_FFFF);
        assert_eq!(CounterWidth::W48.mask(), 0xFFFF_FFFF_FFFF);
        assert_eq!(CounterWidth::W64.mask(), u64::MAX);
        assert_eq!(CounterWidth::new(1).unwrap().mask(), 1);
    }

    /// The case libperf broke in 2025 (tools/lib/perf/mmap.c switched `pmc` to u64 and
    /// shifted logically): a 48-bit counter with bit 47 set is negative, and
    /// `offset + pmc` must subtract.
    #[test]
    fn sign_extend_48_bit_with_top_bit_set() {
        let w = CounterWidth::W48;
        assert_eq!(w.sign_extend(0x8000_0000_0000), -0x8000_0000_0000);
        assert_eq!(w.sign_extend(0xFFFF_FFFF_FFFF), -1);
        assert_eq!(w.sign_extend(0x7FFF_FFFF_FFFF), 0x7FFF_FFFF_FFFF);
        // The kernel programs the counter to -period: offset + pmc must be the count.
        let offset: i64 = 1_000_000 + 100;
        let pmc = 0xFFFF_FFFF_FF9C; // -100 in 48 bits
        assert_eq!(offset.wrapping_add(w.sign_extend(pmc)), 1_000_000);
        // A logical shift (the libperf bug) would have given a huge positive number.
        assert_ne!((pmc << 16) >> 16, (-100i64) as u64);
    }

    /// A 32-bit counter (ARM1176 CR0/CR1, TRM 3.2.53; PMUv3 event counters with
    /// PMCR_EL0.LP = 0) wraps after 2^32 events.
    #[test]
    fn delta_across_one_wrap_32() {
        let w = CounterWidth::W32;
        assert_eq!(w.wrapping_delta(0xFFFF_FFF0, 0x5d), 0x6d);
        // QEMU -cpu max reads a PMUv3p5 counter as 0x1_0000_005d with LP=0
        // (docs/qemu.md): the high bits must not leak.
        assert_eq!(w.wrapping_delta(0xFFFF_FFF0, 0x1_0000_005d), 0x6d);
        assert_eq!(w.accumulate(0xFFFF_FFF0, 0x5d, 1), Ok(0x6d));
        assert_eq!(
            w.accumulate(0xFFFF_FFF0, 0x5d, 0),
            Err(Error::InconsistentWraps)
        );
        assert_eq!(w.accumulate(0x10, 0x20, 2), Ok(2 * (1 << 32) + 0x10));
    }

    #[test]
    fn accumulate_64_bit_overflow_is_an_error() {
        let w = CounterWidth::W64;
        assert_eq!(w.accumulate(0, 1, 1), Err(Error::DeltaOverflow));
        assert_eq!(w.accumulate(u64::MAX, 1, 1), Ok(2));
        assert_eq!(w.accumulate(5, u64::MAX, 0), Ok(u64::MAX - 5));
    }

    fn widths() -> impl Strategy<Value = CounterWidth> {
        prop_oneof![Just(32u32), Just(40), Just(48), Just(64), 1u32..=64]
            .prop_map(|b| CounterWidth::new(b).unwrap())
    }

    proptest! {
        /// delta(start, start + d) == d for every d that fits the width.
        #[test]
        fn delta_inverts_wrapping_add(w in widths(), start: u64, d: u64) {
            let d = w.truncate(d);
            let end = w.truncate(start.wrapping_add(d));
            prop_assert_eq!(w.wrapping_delta(start, end), d);
            let wraps = u64::from(u128::from(w.truncate(start)) + u128::from(d) > u128::from(w.mask()));
            prop_assert_eq!(w.accumulate(start, end, wraps), Ok(d));
        }

        /// Sign extension keeps the low bits and copies bit (w-1) into the high bits.
        #[test]
        fn sign_extend_properties(w in widths(), raw: u64) {
            let v = w.sign_extend(raw) as u64;
            prop_assert_eq!(w.truncate(v), w.truncate(raw));
            let top = (raw >> (w.bits() - 1)) & 1;
            let high = if top == 1 { !w.mask() } else { 0 };
            prop_assert_eq!(v & !w.mask(), high);
        }

        /// offset + sign_extend(pmc) recovers a count whose counter was preloaded with
        /// -period (how Linux programs sampling counters).
        #[test]
        fn offset_plus_signed_pmc(w in widths(), count in 0u64..1 << 40, period in 1u64..1 << 20) {
            prop_assume!(w.bits() > 21);
            let pmc = w.truncate(period.wrapping_neg());
            let offset = count.wrapping_add(period);
            prop_assert_eq!(offset.wrapping_add(w.sign_extend(pmc) as u64), count);
        }

        /// Accumulating k wraps adds k * 2^w.
        #[test]
        fn accumulate_adds_whole_wraps(w in widths(), start: u64, end: u64, k in 1u64..4) {
            prop_assume!(w.bits() <= 48);
            let base = w.accumulate(start, end, 1).unwrap();
            prop_assert_eq!(w.accumulate(start, end, k), Ok(base + (k - 1) * (1u64 << w.bits())));
        }
    }
}
