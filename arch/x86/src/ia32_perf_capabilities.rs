//! IA32_PERF_CAPABILITIES (345H): read-only PMU capabilities, present when
//! CPUID.01H:ECX.PDCM\[15\] = 1.
//!
//! Source: SDM Vol. 4, IA32_PERF_CAPABILITIES, and SDM Vol. 3B, "Full-Width Writes to
//! Performance Counter Registers": with FW_WRITE = 1 the aliases IA32_A_PMCx (4C1H + x)
//! take a write of the whole counter width, where IA32_PMCx only takes bits 31:0 and
//! sign-extends bit 31.

use tock_registers::{register_bitfields, LocalRegisterCopy};

register_bitfields! {u64,
    /// IA32_PERF_CAPABILITIES fields, named as in SDM Vol. 4.
    #[allow(missing_docs, reason = "register_bitfields! generates undocumented items; every field is documented")]
    pub IA32_PERF_CAPABILITIES [
        /// LBR record format.
        LBR_FMT OFFSET(0) NUMBITS(6) [],
        /// PEBS trap-like (1) or fault-like (0) assists.
        PEBS_TRAP OFFSET(6) NUMBITS(1) [],
        /// PEBS saves the architectural registers.
        PEBS_ARCH_REG OFFSET(7) NUMBITS(1) [],
        /// PEBS record format.
        PEBS_REC_FMT OFFSET(8) NUMBITS(4) [],
        /// Counters can be frozen while in SMM (IA32_DEBUGCTL.FREEZE_WHILE_SMM).
        SMM_FRZ OFFSET(12) NUMBITS(1) [],
        /// Full-width writes through IA32_A_PMCx are supported.
        FW_WRITE OFFSET(13) NUMBITS(1) [],
    ]
}

/// A value of IA32_PERF_CAPABILITIES.
pub type Ia32PerfCapabilities = LocalRegisterCopy<u64, IA32_PERF_CAPABILITIES::Register>;

#[cfg(test)]
mod tests {
    use super::*;
    use IA32_PERF_CAPABILITIES::*;

    /// FW_WRITE is bit 13 (SDM Vol. 4; Linux's PERF_CAP_FW_WRITES is 1 << 13). 0x33C3 is a
    /// synthetic value built from the SDM field positions: LBR format 3, PEBS trap, arch
    /// regs, record format 3, SMM freeze, full-width writes.
    #[test]
    fn fw_write_is_bit_13() {
        let caps = Ia32PerfCapabilities::new(0x33C3);
        assert!(caps.is_set(FW_WRITE));
        assert_eq!(caps.read(LBR_FMT), 3);
        assert_eq!(caps.read(PEBS_REC_FMT), 3);
        assert!(caps.is_set(SMM_FRZ) && caps.is_set(PEBS_TRAP) && caps.is_set(PEBS_ARCH_REG));
        assert!(!Ia32PerfCapabilities::new(0x13C3).is_set(FW_WRITE));
    }
}
