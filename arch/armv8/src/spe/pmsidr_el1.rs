//! PMSIDR_EL1, Sampling Profiling ID Register: what this SPE implementation can do. The
//! decoders here turn its coded fields into numbers, and reserved codes into typed results.
//!
//! Source: Arm ARM DDI 0487 M.a.a D24.7.14; Linux 6.12 `arch/arm64/tools/sysreg`
//! (`Sysreg PMSIDR_EL1 3 0 9 9 7`: FE..FnE, INTERVAL, MAXSIZE, COUNTSIZE, FORMAT, PBT). FDS,
//! CRR, EFT, FPF, ALTCLK and SME are from the Arm ARM only. Linux's
//! `__arm_spe_pmu_dev_probe()` (drivers/perf/arm_spe_pmu.c) decodes the same fields.

use tock_registers::{register_bitfields, LocalRegisterCopy};

use super::error::{IdRegisterField, SpeError};

register_bitfields! {u64,
    /// PMSIDR_EL1 fields.
    // The macro generates `Register`, `SET`/`CLEAR` and `Value` items without docs.
    #[allow(missing_docs)]
    pub PMSIDR_EL1 [
        /// SPE for SME: profiling of the Scalable Matrix Extension. Requires FEAT_SPE_SME.
        SME OFFSET(32) NUMBITS(1) [],
        /// Alternate clock domain (0: none or CPU clock, 1: SMCU, 0b1111: IMPLEMENTATION
        /// DEFINED). Requires FEAT_SPE_ALTCLK.
        ALTCLK OFFSET(28) NUMBITS(4) [],
        /// Floating-point flag in Operation Type packets. Requires FEAT_SPE_FPF.
        FPF OFFSET(27) NUMBITS(1) [],
        /// Extended filtering by type: PMSFCR_EL1.{FP, SIMD, Bm..SIMDm}. Requires FEAT_SPE_EFT.
        EFT OFFSET(26) NUMBITS(1) [],
        /// Call Return branch records. Requires FEAT_SPE_CRR.
        CRR OFFSET(25) NUMBITS(1) [],
        /// Previous branch target Address packet. Requires FEAT_SPE_PBT (FEAT_SPEv1p2).
        PBT OFFSET(24) NUMBITS(1) [],
        /// Sample record format (0: Format 0; other values reserved).
        Format OFFSET(20) NUMBITS(4) [],
        /// Size of the latency counters.
        CountSize OFFSET(16) NUMBITS(4) [
            /// 12-bit saturating counters.
            Saturating12Bit = 0b0010,
            /// 16-bit saturating counters.
            Saturating16Bit = 0b0011,
        ],
        /// Largest record, as log2 of its size in bytes (0b0100 = 16 B ... 0b1011 = 2 KiB).
        MaxSize OFFSET(12) NUMBITS(4) [],
        /// Minimum recommended sampling interval (coded, see [`decode_min_interval`]).
        Interval OFFSET(8) NUMBITS(4) [],
        /// Filtering by data source (PMSDSFR_EL1, PMSFCR_EL1.FDS). Requires FEAT_SPE_FDS
        /// (FEAT_SPEv1p4); RES0 before.
        FDS OFFSET(7) NUMBITS(1) [],
        /// Filtering by events, inverted (PMSNEVFR_EL1, PMSFCR_EL1.FnE). Requires FEAT_SPEv1p2.
        FnE OFFSET(6) NUMBITS(1) [],
        /// Random interval added after the programmed interval (secondary counter ECOUNT),
        /// rather than at its start. FEAT_SPE_ERnd.
        ERnd OFFSET(5) NUMBITS(1) [],
        /// Loaded data source recorded for sampled loads. FEAT_SPE_LDS.
        LDS OFFSET(4) NUMBITS(1) [],
        /// Architectural instruction profiling (1) rather than micro-op sampling (0).
        ArchInst OFFSET(3) NUMBITS(1) [],
        /// Filtering by latency (reads as 1 in Arm ARM M.a.a).
        FL OFFSET(2) NUMBITS(1) [],
        /// Filtering by operation type (reads as 1 in Arm ARM M.a.a).
        FT OFFSET(1) NUMBITS(1) [],
        /// Filtering by events (reads as 1 in Arm ARM M.a.a).
        FE OFFSET(0) NUMBITS(1) [],
    ]
}

/// A PMSIDR_EL1 value.
pub type PmsidrEl1 = LocalRegisterCopy<u64, PMSIDR_EL1::Register>;

/// Width of the saturating latency counters (PMSIDR_EL1.CountSize).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CounterSize {
    /// CountSize 0b0010: 12-bit saturating counters; PMSLATFR_EL1.MINLAT\[15:12\] is RES0.
    Bits12,
    /// CountSize 0b0011: 16-bit saturating counters.
    Bits16,
}

impl CounterSize {
    /// Counter width in bits.
    pub const fn bits(self) -> u32 {
        match self {
            Self::Bits12 => 12,
            Self::Bits16 => 16,
        }
    }

    /// Largest value a counter holds (where it saturates).
    pub const fn max_value(self) -> u32 {
        (1 << self.bits()) - 1
    }
}

/// Decodes PMSIDR_EL1.CountSize; the reserved codes are [`SpeError::ReservedField`].
pub const fn decode_counter_size(raw: u8) -> Result<CounterSize, SpeError> {
    match raw {
        0b0010 => Ok(CounterSize::Bits12),
        0b0011 => Ok(CounterSize::Bits16),
        value => Err(SpeError::ReservedField {
            field: IdRegisterField::PmsidrCountSize,
            value,
        }),
    }
}

/// Decodes PMSIDR_EL1.Interval to the minimum recommended interval in operations (or
/// instructions, with ArchInst = 1). 0b0000 means 256 or "no minimum specified"; 0b0001 and
/// 0b1001..=0b1111 are reserved: [`SpeError::ReservedField`].
pub const fn decode_min_interval(raw: u8) -> Result<u32, SpeError> {
    match raw {
        0b0000 => Ok(256),
        0b0010 => Ok(512),
        0b0011 => Ok(768),
        0b0100 => Ok(1024),
        0b0101 => Ok(1536),
        0b0110 => Ok(2048),
        0b0111 => Ok(3072),
        0b1000 => Ok(4096),
        value => Err(SpeError::ReservedField {
            field: IdRegisterField::PmsidrInterval,
            value,
        }),
    }
}

/// Decodes PMSIDR_EL1.MaxSize to the largest record size in bytes, 2^MaxSize for 0b0100 (16 B)
/// ..= 0b1011 (2 KiB); other codes are reserved: [`SpeError::ReservedField`]. (The Arm ARM also
/// says 16 and 32 bytes are "not permitted for an implementation", but they are defined sizes.)
pub const fn decode_max_record_size(raw: u8) -> Result<u32, SpeError> {
    match raw {
        0b0100..=0b1011 => Ok(1 << raw),
        value => Err(SpeError::ReservedField {
            field: IdRegisterField::PmsidrMaxSize,
            value,
        }),
    }
}

/// The value of a 4-bit field, as a `u8`.
pub(crate) fn nibble(
    value: PmsidrEl1,
    field: tock_registers::fields::Field<u64, PMSIDR_EL1::Register>,
) -> u8 {
    // Every coded PMSIDR_EL1 field used with this helper is 4 bits wide.
    (value.read(field) & 0xF) as u8
}

spe_register_read!(PmsidrEl1, read_pmsidr_el1, "PMSIDR_EL1");

#[cfg(test)]
mod tests {
    use super::*;

    /// All 16 codes of PMSIDR_EL1.Interval: the 8 defined ones from Arm ARM M.a.a D24.7.14 and
    /// Linux sysreg `Enum 11:8 INTERVAL` (0,2,3,4,5,6,7,8 -> 256..4096), the other 8 reserved.
    /// (Linux `__arm_spe_pmu_dev_probe()` warns and assumes 4096 for a reserved code; we return
    /// the typed result and let the caller decide.)
    #[test]
    fn interval_table_all_16_codes() {
        let expected: [Option<u32>; 16] = [
            Some(256),
            None,
            Some(512),
            Some(768),
            Some(1024),
            Some(1536),
            Some(2048),
            Some(3072),
            Some(4096),
            None,
            None,
            None,
            None,
            None,
            None,
            None,
        ];
        for (code, want) in expected.iter().enumerate() {
            let code = code as u8;
            let got = decode_min_interval(code);
            match want {
                Some(ops) => assert_eq!(got, Ok(*ops), "code {code:#06b}"),
                None => assert_eq!(
                    got,
                    Err(SpeError::ReservedField {
                        field: IdRegisterField::PmsidrInterval,
                        value: code
                    }),
                    "code {code:#06b}"
                ),
            }
            // Through the register: the field sits at bits [11:8].
            let reg = PmsidrEl1::new(u64::from(code) << 8);
            assert_eq!(decode_min_interval(nibble(reg, PMSIDR_EL1::Interval)), got);
        }
        assert_eq!(expected.iter().filter(|e| e.is_some()).count(), 8);
    }

    /// Arm ARM M.a.a D24.7.14 MaxSize table: 0b0100 = 16 bytes ... 0b1011 = 2KB; Linux rejects
    /// sizes outside 16..=2048 too.
    #[test]
    fn max_size_table() {
        for code in 0u8..16 {
            let got = decode_max_record_size(code);
            if (4..=11).contains(&code) {
                assert_eq!(got, Ok(1 << code));
            } else {
                assert_eq!(
                    got,
                    Err(SpeError::ReservedField {
                        field: IdRegisterField::PmsidrMaxSize,
                        value: code
                    })
                );
            }
        }
        assert_eq!(decode_max_record_size(6), Ok(64));
        assert_eq!(decode_max_record_size(11), Ok(2048));
    }

    /// Linux sysreg `Enum 19:16 COUNTSIZE`: 0b0010 12_BIT_SAT, 0b0011 16_BIT_SAT.
    #[test]
    fn count_size_table() {
        assert_eq!(decode_counter_size(0b0010), Ok(CounterSize::Bits12));
        assert_eq!(decode_counter_size(0b0011), Ok(CounterSize::Bits16));
        assert_eq!(CounterSize::Bits12.max_value(), 0xFFF);
        assert_eq!(CounterSize::Bits16.max_value(), 0xFFFF);
        for code in (0u8..16).filter(|c| !matches!(c, 2 | 3)) {
            assert!(decode_counter_size(code).is_err());
        }
        let reg = PmsidrEl1::new(0b0011 << 16);
        assert_eq!(
            reg.read_as_enum(PMSIDR_EL1::CountSize),
            Some(PMSIDR_EL1::CountSize::Value::Saturating16Bit)
        );
    }

    /// Linux sysreg and Arm ARM D24.7.14: FE 0, FT 1, FL 2, ArchInst 3, LDS 4, ERnd 5, FnE 6,
    /// FDS 7, PBT 24, CRR 25, EFT 26, FPF 27, SME 32.
    #[test]
    fn flag_positions() {
        let table = [
            (PMSIDR_EL1::FE, 0),
            (PMSIDR_EL1::FT, 1),
            (PMSIDR_EL1::FL, 2),
            (PMSIDR_EL1::ArchInst, 3),
            (PMSIDR_EL1::LDS, 4),
            (PMSIDR_EL1::ERnd, 5),
            (PMSIDR_EL1::FnE, 6),
            (PMSIDR_EL1::FDS, 7),
            (PMSIDR_EL1::PBT, 24),
            (PMSIDR_EL1::CRR, 25),
            (PMSIDR_EL1::EFT, 26),
            (PMSIDR_EL1::FPF, 27),
            (PMSIDR_EL1::SME, 32),
        ];
        for (field, bit) in table {
            assert_eq!(field.val(1).value, 1 << bit);
            assert!(PmsidrEl1::new(1 << bit).is_set(field));
        }
        assert_eq!(PMSIDR_EL1::Format.val(0xF).value, 0xF << 20);
        assert_eq!(PMSIDR_EL1::ALTCLK.val(0xF).value, 0xF << 28);
    }
}
