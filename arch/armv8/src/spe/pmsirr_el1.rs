//! PMSIRR_EL1, Sampling Interval Reload Register: the sampling interval and its randomization.
//!
//! Source: Arm ARM DDI 0487 M.a.a D24.7.15; Linux 6.12 `arch/arm64/tools/sysreg`
//! (`Sysreg PMSIRR_EL1 3 0 9 9 3`).

use tock_registers::{register_bitfields, LocalRegisterCopy};

use super::error::SpeError;

register_bitfields! {u64,
    /// PMSIRR_EL1 fields.
    // The macro generates `Register`, `SET`/`CLEAR` and `Value` items without docs.
    #[allow(missing_docs)]
    pub PMSIRR_EL1 [
        /// Bits \[31:8\] of the interval counter reload value. Must be non-zero: zero gives an
        /// UNKNOWN interval.
        INTERVAL OFFSET(8) NUMBITS(24) [],
        /// Randomize the sampling interval (how, see PMSIDR_EL1.ERnd).
        RND OFFSET(0) NUMBITS(1) [],
    ]
}

/// A PMSIRR_EL1 value.
pub type PmsirrEl1 = LocalRegisterCopy<u64, PMSIRR_EL1::Register>;

/// Encodes a sampling interval of `interval` operations (or instructions, see
/// PMSIDR_EL1.ArchInst). INTERVAL holds bits \[31:8\], so `interval` must be a non-zero multiple
/// of 256; anything else is [`SpeError::InvalidInterval`] rather than a silent rounding.
pub const fn encode_interval(interval: u32, randomize: bool) -> Result<PmsirrEl1, SpeError> {
    if interval == 0 || !interval.is_multiple_of(256) {
        return Err(SpeError::InvalidInterval { value: interval });
    }
    // INTERVAL sits at bit 8, so the register holds the interval's own bits [31:8] in place.
    Ok(PmsirrEl1::new(interval as u64 | randomize as u64))
}

/// The interval a PMSIRR_EL1 value reloads, in operations (`INTERVAL << 8`).
pub fn interval_of(value: PmsirrEl1) -> u32 {
    // INTERVAL is 24 bits, so the shifted value fits in 32 bits.
    (value.read(PMSIRR_EL1::INTERVAL) as u32) << 8
}

spe_register_access!(PmsirrEl1, read_pmsirr_el1, write_pmsirr_el1, "PMSIRR_EL1");

#[cfg(test)]
mod tests {
    use super::*;

    /// Linux 6.12 arch/arm64/tools/sysreg: RND 0, INTERVAL 31:8.
    #[test]
    fn field_positions() {
        let v = PmsirrEl1::new((PMSIRR_EL1::RND::SET + PMSIRR_EL1::INTERVAL.val(0x10)).value);
        assert_eq!(v.get(), 0x1001);
        assert_eq!(interval_of(v), 4096);
    }

    /// Arm ARM D24.7.15: "Software must set this to a nonzero value"; bits [7:0] are RES0.
    #[test]
    fn interval_encoding() {
        assert_eq!(encode_interval(4096, false).map(|v| v.get()), Ok(0x1000));
        assert_eq!(encode_interval(1024, true).map(|v| v.get()), Ok(0x401));
        assert_eq!(
            encode_interval(0xFFFF_FF00, false).map(interval_of),
            Ok(0xFFFF_FF00)
        );
        assert_eq!(
            encode_interval(0, false).map(|v| v.get()),
            Err(SpeError::InvalidInterval { value: 0 })
        );
        assert_eq!(
            encode_interval(1000, false).map(|v| v.get()),
            Err(SpeError::InvalidInterval { value: 1000 })
        );
    }
}
