//! IA32_PERF_GLOBAL_CTRL (38FH): one enable bit per counter (version 2+).
//!
//! Source: SDM Vol. 4, IA32_PERF_GLOBAL_CTRL: "Counter increments while the result of
//! ANDing respective enable bit in this MSR with the corresponding OS or USR bits in the
//! general-purpose or fixed counter control MSR is true." EN_PMCn is bit n, EN_FIXED_CTRn
//! bit 32 + n.

use tock_registers::{register_bitfields, LocalRegisterCopy};

register_bitfields! {u64,
    /// IA32_PERF_GLOBAL_CTRL fields, named as in SDM Vol. 4.
    #[allow(missing_docs, reason = "register_bitfields! generates undocumented items; every field is documented")]
    pub IA32_PERF_GLOBAL_CTRL [
        /// Enable IA32_PMC0.
        EN_PMC0 OFFSET(0) NUMBITS(1) [],
        /// Enable IA32_PMC1.
        EN_PMC1 OFFSET(1) NUMBITS(1) [],
        /// Enable IA32_PMC2.
        EN_PMC2 OFFSET(2) NUMBITS(1) [],
        /// Enable IA32_PMC3.
        EN_PMC3 OFFSET(3) NUMBITS(1) [],
        /// Enable IA32_PMC4.
        EN_PMC4 OFFSET(4) NUMBITS(1) [],
        /// Enable IA32_PMC5.
        EN_PMC5 OFFSET(5) NUMBITS(1) [],
        /// Enable IA32_PMC6.
        EN_PMC6 OFFSET(6) NUMBITS(1) [],
        /// Enable IA32_PMC7.
        EN_PMC7 OFFSET(7) NUMBITS(1) [],
        /// Enable IA32_FIXED_CTR0.
        EN_FIXED_CTR0 OFFSET(32) NUMBITS(1) [],
        /// Enable IA32_FIXED_CTR1.
        EN_FIXED_CTR1 OFFSET(33) NUMBITS(1) [],
        /// Enable IA32_FIXED_CTR2.
        EN_FIXED_CTR2 OFFSET(34) NUMBITS(1) [],
        /// Enable IA32_FIXED_CTR3.
        EN_FIXED_CTR3 OFFSET(35) NUMBITS(1) [],
    ]
}

/// A value of IA32_PERF_GLOBAL_CTRL.
pub type Ia32PerfGlobalCtrl = LocalRegisterCopy<u64, IA32_PERF_GLOBAL_CTRL::Register>;

/// The bit of general-purpose counter `n` (n < 32) in IA32_PERF_GLOBAL_CTRL, _STATUS and
/// _OVF_CTRL / _STATUS_RESET, which share this layout; 0 for n >= 32.
pub const fn gp_bit(n: u8) -> u64 {
    if n < 32 {
        1 << n
    } else {
        0
    }
}

/// The bit of fixed counter `n` (n < 32) in the same registers: bit 32 + n; 0 for n >= 32.
pub const fn fixed_bit(n: u8) -> u64 {
    if n < 32 {
        1 << (32 + n as u32)
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use IA32_PERF_GLOBAL_CTRL::*;

    /// Four general-purpose and three fixed counters enabled: 0x7_0000_000F (SDM Vol. 4
    /// layout: EN_PMC0-3 bits 0-3, EN_FIXED_CTR0-2 bits 32-34). Linux builds the same value
    /// as `x86_pmu.intel_ctrl` for such a PMU (counter bits from 0, fixed bits from
    /// INTEL_PMC_IDX_FIXED = 32) and writes it to enable everything.
    #[test]
    fn global_ctrl_bit_layout() {
        let mut reg = Ia32PerfGlobalCtrl::new(0);
        reg.write(
            EN_PMC0::SET
                + EN_PMC1::SET
                + EN_PMC2::SET
                + EN_PMC3::SET
                + EN_FIXED_CTR0::SET
                + EN_FIXED_CTR1::SET
                + EN_FIXED_CTR2::SET,
        );
        assert_eq!(reg.get(), 0x7_0000_000F);
        let from_helpers = (0..4).map(gp_bit).chain((0..3).map(fixed_bit));
        assert_eq!(from_helpers.fold(0, |a, b| a | b), 0x7_0000_000F);
        assert_eq!(EN_PMC7.mask << EN_PMC7.shift, gp_bit(7));
        assert_eq!(EN_FIXED_CTR3.mask << EN_FIXED_CTR3.shift, fixed_bit(3));
        assert_eq!((gp_bit(32), fixed_bit(32)), (0, 0));
    }
}
