//! IA32_PERF_GLOBAL_STATUS (38EH) and its write-1-to-clear partner at 390H,
//! IA32_PERF_GLOBAL_OVF_CTRL (versions 2-3) renamed IA32_PERF_GLOBAL_STATUS_RESET
//! (version 4+).
//!
//! Source: SDM Vol. 4, IA32_PERF_GLOBAL_STATUS: Ovf_PMCn bit n, Ovf_FIXED_CTRn bit 32 + n,
//! Trace_ToPA_PMI 55, LBR_Frz 58 and CTR_Frz 59 (version 4+), ASCI 60, Ovf_Uncore 61
//! (version 3+), OvfBuf 62, CondChgd 63. The reset register has a clear bit at each of
//! those positions; the per-counter bits are [`crate::ia32_perf_global_ctrl::gp_bit`] and
//! [`crate::ia32_perf_global_ctrl::fixed_bit`].

use tock_registers::{register_bitfields, LocalRegisterCopy};

register_bitfields! {u64,
    /// IA32_PERF_GLOBAL_STATUS fields, named as in SDM Vol. 4.
    #[allow(missing_docs, reason = "register_bitfields! generates undocumented items; every field is documented")]
    pub IA32_PERF_GLOBAL_STATUS [
        /// IA32_PMC0 overflowed.
        Ovf_PMC0 OFFSET(0) NUMBITS(1) [],
        /// IA32_PMC1 overflowed.
        Ovf_PMC1 OFFSET(1) NUMBITS(1) [],
        /// IA32_PMC2 overflowed.
        Ovf_PMC2 OFFSET(2) NUMBITS(1) [],
        /// IA32_PMC3 overflowed.
        Ovf_PMC3 OFFSET(3) NUMBITS(1) [],
        /// IA32_FIXED_CTR0 overflowed.
        Ovf_FIXED_CTR0 OFFSET(32) NUMBITS(1) [],
        /// IA32_FIXED_CTR1 overflowed.
        Ovf_FIXED_CTR1 OFFSET(33) NUMBITS(1) [],
        /// IA32_FIXED_CTR2 overflowed.
        Ovf_FIXED_CTR2 OFFSET(34) NUMBITS(1) [],
        /// A PMI came from a full Intel PT ToPA buffer.
        Trace_ToPA_PMI OFFSET(55) NUMBITS(1) [],
        /// LBRs are frozen (version 4+).
        LBR_Frz OFFSET(58) NUMBITS(1) [],
        /// Core PMU counters are frozen (version 4+): nothing counts while set.
        CTR_Frz OFFSET(59) NUMBITS(1) [],
        /// Counts may include contributions from SGX enclave operation.
        ASCI OFFSET(60) NUMBITS(1) [],
        /// An uncore counter overflowed (version 3+).
        Ovf_Uncore OFFSET(61) NUMBITS(1) [],
        /// The DS save area (PEBS/BTS buffer) overflowed.
        OvfBuf OFFSET(62) NUMBITS(1) [],
        /// Some status bit of this register changed (condition changed).
        CondChgd OFFSET(63) NUMBITS(1) [],
    ]
}

register_bitfields! {u64,
    /// IA32_PERF_GLOBAL_OVF_CTRL / IA32_PERF_GLOBAL_STATUS_RESET fields: writing 1 clears
    /// the status bit at the same position; 0 leaves it.
    #[allow(missing_docs, reason = "register_bitfields! generates undocumented items; every field is documented")]
    pub IA32_PERF_GLOBAL_STATUS_RESET [
        /// Clear Ovf_PMC0.
        ClrOvf_PMC0 OFFSET(0) NUMBITS(1) [],
        /// Clear Ovf_FIXED_CTR0.
        ClrOvf_FIXED_CTR0 OFFSET(32) NUMBITS(1) [],
        /// Clear Trace_ToPA_PMI.
        ClrTrace_ToPA_PMI OFFSET(55) NUMBITS(1) [],
        /// Clear LBR_Frz (version 4+).
        ClrLBR_Frz OFFSET(58) NUMBITS(1) [],
        /// Clear CTR_Frz (version 4+).
        ClrCTR_Frz OFFSET(59) NUMBITS(1) [],
        /// Clear ASCI.
        ClrASCI OFFSET(60) NUMBITS(1) [],
        /// Clear Ovf_Uncore.
        ClrOvf_Uncore OFFSET(61) NUMBITS(1) [],
        /// Clear OvfBuf.
        ClrOvfBuf OFFSET(62) NUMBITS(1) [],
        /// Clear CondChgd.
        ClrCondChgd OFFSET(63) NUMBITS(1) [],
    ]
}

/// A value of IA32_PERF_GLOBAL_STATUS.
pub type Ia32PerfGlobalStatus = LocalRegisterCopy<u64, IA32_PERF_GLOBAL_STATUS::Register>;

/// A value to write to IA32_PERF_GLOBAL_OVF_CTRL / IA32_PERF_GLOBAL_STATUS_RESET.
pub type Ia32PerfGlobalStatusReset =
    LocalRegisterCopy<u64, IA32_PERF_GLOBAL_STATUS_RESET::Register>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ia32_perf_global_ctrl::{fixed_bit, gp_bit};
    use IA32_PERF_GLOBAL_STATUS::*;

    /// SDM Vol. 4 bit positions; the per-counter bits match the global-control layout.
    #[test]
    fn status_bit_layout() {
        let status = Ia32PerfGlobalStatus::new(gp_bit(1) | fixed_bit(2) | 1 << 63 | 1 << 59);
        assert!(status.is_set(Ovf_PMC1));
        assert!(status.is_set(Ovf_FIXED_CTR2));
        assert!(status.is_set(CondChgd));
        assert!(status.is_set(CTR_Frz));
        assert!(!status.is_set(Ovf_PMC0) && !status.is_set(OvfBuf) && !status.is_set(LBR_Frz));
        let bit = |f: tock_registers::fields::Field<u64, Register>| f.mask << f.shift;
        assert_eq!(bit(Ovf_PMC3), gp_bit(3));
        assert_eq!(bit(Ovf_FIXED_CTR0), fixed_bit(0));
        assert_eq!(bit(Trace_ToPA_PMI), 1 << 55);
        assert_eq!(bit(ASCI), 1 << 60);
        assert_eq!(bit(Ovf_Uncore), 1 << 61);
        assert_eq!(bit(OvfBuf), 1 << 62);
    }

    /// The reset register clears at the status positions (SDM Vol. 4, 390H).
    #[test]
    fn reset_mirrors_status() {
        use IA32_PERF_GLOBAL_STATUS_RESET as R;
        let mut reset = Ia32PerfGlobalStatusReset::new(0);
        reset.write(R::ClrCondChgd::SET + R::ClrOvf_FIXED_CTR0::SET + R::ClrOvf_PMC0::SET);
        assert_eq!(reset.get(), 1 << 63 | fixed_bit(0) | gp_bit(0));
        let mut status = Ia32PerfGlobalStatus::new(0);
        status.write(CondChgd::SET + Ovf_FIXED_CTR0::SET + Ovf_PMC0::SET);
        assert_eq!(status.get(), reset.get());
    }
}
