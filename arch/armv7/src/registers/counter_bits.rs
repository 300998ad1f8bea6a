//! The per-counter bit registers: PMCNTENSET / PMCNTENCLR (c9, c12, 1 / 2), PMOVSR
//! (c9, c12, 3; PMOVSSET is c9, c14, 3 from PMUv2 with the Virtualization Extensions),
//! PMSWINC (c9, c12, 4) and PMINTENSET / PMINTENCLR (c9, c14, 1 / 2).
//!
//! Each gives event counter n bit n (`P<n>`) and the cycle counter bit 31 (C). Writes of
//! the SET/CLR forms act only on the 1 bits; PMOVSR is write-one-to-clear. Sources:
//! ARMv7-A/R ARM (DDI 0406C) C12 "PMCNTENSET", C12 "PMCNTENCLR", C12
//! "PMOVSR", C12 "PMSWINC", C12 "PMINTENSET", C12 "PMINTENCLR"; Linux
//! 6.12 drivers/perf/arm_v7_pmu.c (`ARMV7_IDX_CYCLE_COUNTER` maps to bit 31,
//! `ARMV7_OVERFLOWED_MASK` 0xffffffff).

use tock_registers::LocalRegisterCopy;

// tock-registers generates the field constants without docs.
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! {u32,
        /// The fields shared by PMCNTENSET, PMCNTENCLR, PMOVSR, PMSWINC (no C),
        /// PMINTENSET and PMINTENCLR.
        pub COUNTER_BITS [
            /// The cycle counter PMCCNTR (RAZ/WI in PMSWINC).
            C OFFSET(31) NUMBITS(1) [],
            /// Event counter n is bit n, n below PMCR.N (higher bits RAZ/WI).
            P OFFSET(0) NUMBITS(31) [],
        ]
    }
}

pub use fields::COUNTER_BITS;

/// PMCNTENSET: reads the enabled counters, a write enables the 1 bits.
pub type Pmcntenset = LocalRegisterCopy<u32, COUNTER_BITS::Register>;
/// PMCNTENCLR: a write disables the 1 bits.
pub type Pmcntenclr = LocalRegisterCopy<u32, COUNTER_BITS::Register>;
/// PMOVSR: the overflow flags; a write clears the 1 bits.
pub type Pmovsr = LocalRegisterCopy<u32, COUNTER_BITS::Register>;
/// PMSWINC: a write increments the SW_INCR event counters of the 1 bits.
pub type Pmswinc = LocalRegisterCopy<u32, COUNTER_BITS::Register>;
/// PMINTENSET: reads the enabled overflow interrupts, a write enables the 1 bits (PL1).
pub type Pmintenset = LocalRegisterCopy<u32, COUNTER_BITS::Register>;
/// PMINTENCLR: a write disables the overflow interrupts of the 1 bits (PL1).
pub type Pmintenclr = LocalRegisterCopy<u32, COUNTER_BITS::Register>;

/// The bit of the cycle counter in every one of these registers.
pub const CYCLE_COUNTER_BIT: u32 = 31;

#[cfg(test)]
mod tests {
    use super::*;

    /// DDI 0406C C12: PMCNTENSET bit 31 is C (PMCCNTR), bits 30:0 are Px.
    #[test]
    fn cycle_counter_is_bit_31() {
        let v = Pmcntenset::new(1 << 31 | 0b101);
        assert!(v.is_set(COUNTER_BITS::C));
        assert_eq!(v.read(COUNTER_BITS::P), 0b101);
        assert_eq!(COUNTER_BITS::C::SET.value, 1 << CYCLE_COUNTER_BIT);
    }
}
