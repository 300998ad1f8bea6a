//! PMUACR_EL1, Performance Monitors User Access Control Register (FEAT_PMUv3p9), and
//! what a read of a counter at EL0 does under PMUSERENR_EL0 and PMUACR_EL1.
//!
//! PMUACR_EL1 says, counter by counter, which counters EL0 may access while the
//! Effective value of PMUSERENR_EL0.UEN is 1: `P<m>` (bit m, m = 0..=30) for
//! `PMEVCNTR<m>_EL0`, C (bit 31) for PMCCNTR_EL0, F0 (bit 32) for PMICNTR_EL0; the same
//! bit numbers as PMCNTENSET_EL0. A counter whose bit is 0 is RAZ/WI at EL0 under UEN:
//! the read does not trap, it returns 0. A counter whose bit is 1 is read-only when
//! PMUSERENR_EL0.ER (event counters) or .CR (cycle counter) is also 1, read/write
//! otherwise. PMUSERENR_EL0.EN = 1 opens every counter whatever UEN and PMUACR_EL1 say
//! (the field descriptions apply "when PMUSERENR_EL0.{UEN,EN} == {1,0}"). With UEN = 0
//! PMUACR_EL1 has no effect and ER/CR keep their PMUv3 meaning: ER opens every event
//! counter, CR the cycle counter, and a read they do not open traps.
//!
//! Not readable at EL0 (an EL1 register): EL0 sees UEN in PMUSERENR_EL0, never which
//! counters PMUACR_EL1 opens.
//!
//! Sources: Arm ARM (DDI 0487), "PMUACR_EL1, Performance Monitors User Access Control
//! Register" (field descriptions `P<m>`, C, F0: "RAZ/WI" when 0, "read-only or
//! read/write" when 1), "PMUSERENR_EL0" (UEN, ER, CR); Linux 7.3.4
//! arch/arm64/tools/sysreg (`Sysreg PMUACR_EL1 3 0 9 14 4`: `Field 32 F0`, `Field 31 C`,
//! `Field 30:0 P`) and drivers/perf/arm_pmuv3.c `armv8pmu_enable_user_access()`, which
//! sets ER and CR with UEN "to disable write access" (commit 0bbff9ed8165).

use tock_registers::LocalRegisterCopy;

use super::pmuserenr_el0::PMUSERENR_EL0;

// tock-registers generates the field constants without docs; each field's own doc line
// carries the spec's description.
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! {u64,
        /// The fields of PMUACR_EL1.
        pub PMUACR_EL1 [
            /// EL0 access to PMICNTR_EL0 (the instruction counter) under UEN.
            ///
            /// Requires FEAT_PMUv3_ICNTR.
            F0 OFFSET(32) NUMBITS(1) [],

            /// EL0 access to PMCCNTR_EL0 under UEN.
            C OFFSET(31) NUMBITS(1) [],

            /// EL0 access to `PMEVCNTR<m>_EL0` under UEN, bit m for m = 0..=30.
            P OFFSET(0) NUMBITS(31) [],
        ]
    }
}

pub use fields::PMUACR_EL1;

/// A PMUACR_EL1 value.
pub type PmuacrEl1 = LocalRegisterCopy<u64, PMUACR_EL1::Register>;

/// The bits PMUACR_EL1 defines (63:33 are RES0).
pub const PMUACR_EL1_DEFINED: u64 = (1 << 33) - 1;

/// What a read of one counter at EL0 does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum El0CounterRead {
    /// The counter's value.
    Value,
    /// Reads as zero, without a trap: UEN with the counter's PMUACR_EL1 bit 0.
    ReadsAsZero,
    /// UNDEFINED at EL0: the kernel delivers SIGILL.
    Traps,
}

/// What a read of counter `counter` (0..=30 `PMEVCNTR<n>_EL0`, 31 PMCCNTR_EL0) at EL0
/// does with `pmuserenr` and `pmuacr` (the latter only where `pmuv3p9`: ID_AA64DFR0_EL1.PMUVer
/// ≥ 0b1001; before that UEN is RES0). The rules of the module docs.
pub fn el0_counter_read(pmuserenr: u64, pmuacr: u64, pmuv3p9: bool, counter: u8) -> El0CounterRead {
    let value = super::PmuserenrEl0::new(pmuserenr);
    let bit = |field| value.is_set(field);
    if bit(PMUSERENR_EL0::EN) {
        return El0CounterRead::Value;
    }
    if pmuv3p9 && bit(PMUSERENR_EL0::UEN) {
        return if counter < 32 && pmuacr & (1 << counter) != 0 {
            El0CounterRead::Value
        } else {
            El0CounterRead::ReadsAsZero
        };
    }
    let open = if counter == 31 {
        bit(PMUSERENR_EL0::CR)
    } else {
        bit(PMUSERENR_EL0::ER)
    };
    if open {
        El0CounterRead::Value
    } else {
        El0CounterRead::Traps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bit positions of Linux 7.3.4 arch/arm64/tools/sysreg `PMUACR_EL1` (F0 32, C 31, P
    /// 30:0) and `ARMV8_PMU_USERENR_UEN` (1 << 4, include/linux/perf/arm_pmuv3.h).
    #[test]
    fn fields_match_linux_7_3() {
        assert_eq!(PMUACR_EL1::F0::SET.value, 1 << 32);
        assert_eq!(PMUACR_EL1::C::SET.value, 1 << 31);
        assert_eq!(PMUACR_EL1::P.mask << PMUACR_EL1::P.shift, 0x7fff_ffff);
        assert_eq!(PMUSERENR_EL0::UEN::SET.value, 1 << 4);
        assert_eq!(PMUACR_EL1_DEFINED, 0x1_ffff_ffff);
    }

    /// The Arm ARM rules, one case each: EN opens all; UEN scopes by PMUACR_EL1 (RAZ
    /// otherwise, even with ER and CR set); without UEN (or before PMUv3p9, where UEN is
    /// RES0) ER opens every event counter and CR the cycle counter, else the read traps.
    #[test]
    fn el0_reads_follow_the_arm_arm() {
        const EN: u64 = 1;
        const CR: u64 = 1 << 2;
        const ER: u64 = 1 << 3;
        const UEN: u64 = 1 << 4;
        use El0CounterRead::*;
        assert_eq!(el0_counter_read(EN | UEN, 0, true, 3), Value);
        assert_eq!(el0_counter_read(UEN | ER | CR, 1 << 5, true, 5), Value);
        assert_eq!(
            el0_counter_read(UEN | ER | CR, 1 << 5, true, 4),
            ReadsAsZero
        );
        assert_eq!(
            el0_counter_read(UEN | ER | CR, 1 << 5, true, 31),
            ReadsAsZero
        );
        assert_eq!(el0_counter_read(UEN | ER | CR, 1 << 31, true, 31), Value);
        assert_eq!(el0_counter_read(ER, 0, true, 4), Value);
        assert_eq!(el0_counter_read(ER, 0, true, 31), Traps);
        assert_eq!(el0_counter_read(UEN | ER, 0, false, 4), Value);
        assert_eq!(el0_counter_read(UEN, 1 << 4, false, 4), Traps);
        assert_eq!(el0_counter_read(0, u64::MAX, true, 4), Traps);
    }
}
