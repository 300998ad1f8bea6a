//! PMSELR, Performance Monitors Event Counter Selection Register (`c9, c12, 5`).
//!
//! SEL picks the counter PMXEVTYPER and PMXEVCNTR reach: n for event counter n (n below
//! PMCR.N), 31 for the cycle counter's filter (PMXEVTYPER then reads and writes
//! PMCCFILTR; PMXEVCNTR with SEL = 31 is UNPREDICTABLE). Sources: ARMv7-A/R ARM (DDI
//! 0406C) C12 "PMSELR"; Arm ARM (DDI 0487) G8 "PMSELR"; Linux 6.12
//! drivers/perf/arm_v7_pmu.c `armv7_pmnc_select_counter` (selects, then `isb`).

use tock_registers::LocalRegisterCopy;

// tock-registers generates the field constants without docs.
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! {u32,
        /// The fields of PMSELR.
        pub PMSELR [
            /// Counter select: 0..=30 an event counter, 31 the cycle counter filter.
            SEL OFFSET(0) NUMBITS(5) [],
        ]
    }
}

pub use fields::PMSELR;

/// A PMSELR value.
pub type Pmselr = LocalRegisterCopy<u32, PMSELR::Register>;

/// SEL for the cycle counter filter (PMCCFILTR through PMXEVTYPER).
pub const CYCLE_COUNTER_FILTER: u32 = 31;

/// The PMSELR value selecting counter `n` (0..=31; higher bits are dropped).
pub fn select(n: u8) -> Pmselr {
    let mut v = Pmselr::new(0);
    v.write(PMSELR::SEL.val(u32::from(n & 0x1f)));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DDI 0406C C12: SEL is bits 4:0; 0x1F selects the cycle counter.
    #[test]
    fn sel_is_five_bits() {
        assert_eq!(select(3).get(), 3);
        assert_eq!(select(31).get(), CYCLE_COUNTER_FILTER);
        assert_eq!(select(0xff).get(), 0x1f);
    }
}
