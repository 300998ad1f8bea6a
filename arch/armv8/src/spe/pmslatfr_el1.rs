//! PMSLATFR_EL1, Sampling Latency Filter Register: the minimum total latency a sample needs
//! when PMSFCR_EL1.FL is 1.
//!
//! Source: Arm ARM DDI 0487 M.a.a D24.7.16 ("If PMSIDR_EL1.CountSize is 0b0010,
//! PMSLATFR_EL1.MINLAT\[15:12\] is RES0"); Linux 6.12 `arch/arm64/tools/sysreg`
//! (`Sysreg PMSLATFR_EL1 3 0 9 9 6`).

use tock_registers::{register_bitfields, LocalRegisterCopy};

use super::error::SpeError;
use super::pmsidr_el1::CounterSize;

register_bitfields! {u64,
    /// PMSLATFR_EL1 fields.
    // The macro generates `Register`, `SET`/`CLEAR` and `Value` items without docs.
    #[allow(missing_docs)]
    pub PMSLATFR_EL1 [
        /// Minimum latency in cycles. Bits \[15:12\] are RES0 with 12-bit counters
        /// (PMSIDR_EL1.CountSize = 0b0010).
        MINLAT OFFSET(0) NUMBITS(16) [],
    ]
}

/// A PMSLATFR_EL1 value.
pub type PmslatfrEl1 = LocalRegisterCopy<u64, PMSLATFR_EL1::Register>;

/// Checks that `min_latency` fits the implemented counters and encodes it.
///
/// With 12-bit counters a value above 0xFFF would lose its bits \[15:12\] (RES0) and filter on
/// a different, smaller latency; that is [`SpeError::MinLatencyTooLarge`], as is anything
/// above 0xFFFF with 16-bit counters.
pub const fn encode_min_latency(
    min_latency: u32,
    counters: CounterSize,
) -> Result<PmslatfrEl1, SpeError> {
    let max = counters.max_value();
    if min_latency > max {
        return Err(SpeError::MinLatencyTooLarge {
            value: min_latency,
            max,
        });
    }
    Ok(PmslatfrEl1::new(min_latency as u64))
}

spe_register_access!(
    PmslatfrEl1,
    read_pmslatfr_el1,
    write_pmslatfr_el1,
    "PMSLATFR_EL1"
);

#[cfg(test)]
mod tests {
    use super::*;

    /// Arm ARM D24.7.16 (with 12-bit counters MINLAT[15:12] must be 0): 0xFFF is the largest
    /// 12-bit value, 0x1000 is detectably invalid; 16-bit counters take up to 0xFFFF.
    #[test]
    fn min_latency_width_check() {
        assert_eq!(
            encode_min_latency(0xFFF, CounterSize::Bits12).map(|v| v.get()),
            Ok(0xFFF)
        );
        assert_eq!(
            encode_min_latency(0x1000, CounterSize::Bits12).map(|v| v.get()),
            Err(SpeError::MinLatencyTooLarge {
                value: 0x1000,
                max: 0xFFF
            })
        );
        assert_eq!(
            encode_min_latency(0x1000, CounterSize::Bits16).map(|v| v.get()),
            Ok(0x1000)
        );
        assert_eq!(
            encode_min_latency(0x1_0000, CounterSize::Bits16).map(|v| v.get()),
            Err(SpeError::MinLatencyTooLarge {
                value: 0x1_0000,
                max: 0xFFFF
            })
        );
    }

    /// Every value either encodes to itself in MINLAT or is rejected: no silent truncation.
    #[test]
    fn min_latency_never_truncates() {
        use proptest::prelude::*;
        proptest!(|(value: u32, wide: bool)| {
            let counters = if wide { CounterSize::Bits16 } else { CounterSize::Bits12 };
            match encode_min_latency(value, counters) {
                Ok(reg) => prop_assert_eq!(reg.read(PMSLATFR_EL1::MINLAT), u64::from(value)),
                Err(e) => prop_assert_eq!(e, SpeError::MinLatencyTooLarge { value, max: counters.max_value() }),
            }
        });
    }
}
