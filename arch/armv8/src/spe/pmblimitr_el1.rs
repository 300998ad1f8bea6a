//! PMBLIMITR_EL1, Profiling Buffer Limit Address Register: the end of the profiling buffer,
//! what happens when it fills, and the buffer enable.
//!
//! Source: Arm ARM DDI 0487 M.a.a D24.7.2; Linux 6.12 `arch/arm64/tools/sysreg`
//! (`Sysreg PMBLIMITR_EL1 3 0 9 10 0`: LIMIT 63:12, PMFZ 5, FM 2:1 FILL/DISCARD, E 0).
//! nVM is from the Arm ARM only.

use tock_registers::{register_bitfields, LocalRegisterCopy};

use super::error::SpeError;

register_bitfields! {u64,
    /// PMBLIMITR_EL1 fields.
    // The macro generates `Register`, `SET`/`CLEAR` and `Value` items without docs.
    #[allow(missing_docs)]
    pub PMBLIMITR_EL1 [
        /// Limit address bits \[63:12\]: `LIMIT:Zeros(12)` is the first byte after the buffer.
        LIMIT OFFSET(12) NUMBITS(52) [],
        /// Address mode: buffer pointers are physical addresses. Requires FEAT_SPE_nVM.
        nVM OFFSET(7) NUMBITS(1) [],
        /// Freeze the PMU event counters on a buffer management event (PMBSR_EL1.S = 1).
        /// Requires FEAT_SPEv1p2.
        PMFZ OFFSET(5) NUMBITS(1) [],
        /// Fill mode.
        FM OFFSET(1) NUMBITS(2) [
            /// Stop collection and raise the management interrupt when the buffer fills.
            Fill = 0b00,
            /// Discard all output. Requires FEAT_SPEv1p2.
            Discard = 0b10,
        ],
        /// Profiling Buffer enable (resets to 0).
        E OFFSET(0) NUMBITS(1) [],
    ]
}

/// A PMBLIMITR_EL1 value.
pub type PmblimitrEl1 = LocalRegisterCopy<u64, PMBLIMITR_EL1::Register>;

/// Encodes an enabled fill-mode buffer ending at `limit` (exclusive). The limit must be 4 KiB
/// aligned: the register has no bits \[11:0\] for it ([`SpeError::MisalignedLimit`]).
pub const fn encode_fill_mode_limit(limit: u64) -> Result<PmblimitrEl1, SpeError> {
    if limit & 0xFFF != 0 {
        return Err(SpeError::MisalignedLimit { address: limit });
    }
    // LIMIT sits at bit 12, so the aligned address is the field in place; E = 1, FM = Fill.
    Ok(PmblimitrEl1::new(limit | 1))
}

/// The limit address of a PMBLIMITR_EL1 value (`LIMIT:Zeros(12)`).
pub fn limit_address(value: PmblimitrEl1) -> u64 {
    value.read(PMBLIMITR_EL1::LIMIT) << 12
}

spe_register_access!(
    PmblimitrEl1,
    read_pmblimitr_el1,
    write_pmblimitr_el1,
    "PMBLIMITR_EL1"
);

#[cfg(test)]
mod tests {
    use super::*;

    /// Linux 6.12 arch/arm64/tools/sysreg: E 0, FM 2:1 (0b00 FILL, 0b10 DISCARD), PMFZ 5, LIMIT 63:12.
    #[test]
    fn field_positions() {
        let v = PmblimitrEl1::new(
            (PMBLIMITR_EL1::E::SET + PMBLIMITR_EL1::FM::Discard + PMBLIMITR_EL1::PMFZ::SET).value,
        );
        assert_eq!(v.get(), 0b10_0101);
        assert_eq!(
            v.read_as_enum(PMBLIMITR_EL1::FM),
            Some(PMBLIMITR_EL1::FM::Value::Discard)
        );
        // 0b01 and 0b11 are reserved fill modes: no enum, no panic.
        assert_eq!(
            PmblimitrEl1::new(0b01 << 1)
                .read_as_enum::<PMBLIMITR_EL1::FM::Value>(PMBLIMITR_EL1::FM),
            None
        );
        assert_eq!(PMBLIMITR_EL1::LIMIT.val(1).value, 0x1000);
    }

    /// Arm ARM D24.7.2: LIMIT is an address with Zeros(12) appended.
    #[test]
    fn limit_encoding() {
        let v = encode_fill_mode_limit(0xFFFF_0000_1234_5000).expect("aligned");
        assert_eq!(limit_address(v), 0xFFFF_0000_1234_5000);
        assert!(v.is_set(PMBLIMITR_EL1::E));
        assert_eq!(
            v.read_as_enum(PMBLIMITR_EL1::FM),
            Some(PMBLIMITR_EL1::FM::Value::Fill)
        );
        assert_eq!(
            encode_fill_mode_limit(0x1234_5800).map(|v| v.get()),
            Err(SpeError::MisalignedLimit {
                address: 0x1234_5800
            })
        );
    }
}
