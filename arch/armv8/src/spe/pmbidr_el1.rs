//! PMBIDR_EL1, Profiling Buffer ID Register: whether EL1 may program the profiling buffer,
//! and the alignment its write pointer needs. The one SPE register EL1 can read without
//! owning the buffer, so probing reads it first.
//!
//! Source: Arm ARM DDI 0487 M.a.a D24.7.1; Linux 6.12 `arch/arm64/tools/sysreg`
//! (`Sysreg PMBIDR_EL1 3 0 9 10 7`: EA 11:8, F 5, P 4, ALIGN 3:0). AddrMode and MaxBuffSize are
//! from the Arm ARM only.

use tock_registers::{register_bitfields, LocalRegisterCopy};

use super::error::{IdRegisterField, SpeError};

register_bitfields! {u64,
    /// PMBIDR_EL1 fields.
    // The macro generates `Register`, `SET`/`CLEAR` and `Value` items without docs.
    #[allow(missing_docs)]
    pub PMBIDR_EL1 [
        /// Maximum buffer size; reads as 0 (no limit) on hardware, a hypervisor may report a
        /// limit here.
        MaxBuffSize OFFSET(32) NUMBITS(16) [],
        /// External Abort handling on profiling buffer writes.
        EA OFFSET(8) NUMBITS(4) [
            /// Not described.
            NotDescribed = 0b0000,
            /// External aborts on profiling writes are ignored.
            Ignored = 0b0001,
            /// An External abort on a profiling write raises an asynchronous SError.
            SError = 0b0010,
        ],
        /// Address modes of the buffer. Requires FEAT_SPE_nVM.
        AddrMode OFFSET(6) NUMBITS(2) [],
        /// Flag updates: hardware Access flag and dirty state management applies to profiling
        /// writes as to explicit accesses.
        F OFFSET(5) NUMBITS(1) [],
        /// Programming not allowed: a higher Exception level or another Security state owns
        /// the buffer. Reads as 0 at EL3.
        P OFFSET(4) NUMBITS(1) [],
        /// Minimum alignment of PMBPTR_EL1 writes, log2 bytes (0b0000 byte ... 0b1011 2 KiB).
        Align OFFSET(0) NUMBITS(4) [],
    ]
}

/// A PMBIDR_EL1 value.
pub type PmbidrEl1 = LocalRegisterCopy<u64, PMBIDR_EL1::Register>;

/// Decodes PMBIDR_EL1.Align to bytes: 2^Align for 0..=0b1011 (1 B ..= 2 KiB); other codes are
/// reserved: [`SpeError::ReservedField`]. (Linux fails its probe above 2 KiB as well.)
pub const fn decode_align(raw: u8) -> Result<u32, SpeError> {
    match raw {
        0..=0b1011 => Ok(1 << raw),
        value => Err(SpeError::ReservedField {
            field: IdRegisterField::PmbidrAlign,
            value,
        }),
    }
}

spe_register_read!(PmbidrEl1, read_pmbidr_el1, "PMBIDR_EL1");

#[cfg(test)]
mod tests {
    use super::*;

    /// Linux 6.12 arch/arm64/tools/sysreg: Align 3:0, P 4, F 5, EA 11:8.
    #[test]
    fn field_positions() {
        assert_eq!(PMBIDR_EL1::P.val(1).value, 1 << 4);
        assert_eq!(PMBIDR_EL1::F.val(1).value, 1 << 5);
        assert_eq!(PMBIDR_EL1::Align.val(0xF).value, 0xF);
        assert_eq!(PMBIDR_EL1::EA::SError.value, 0b0010 << 8);
        let v = PmbidrEl1::new(0x0000_0000_0000_0236);
        assert!(v.is_set(PMBIDR_EL1::F) && v.is_set(PMBIDR_EL1::P));
        assert_eq!(v.read(PMBIDR_EL1::Align), 6);
        assert_eq!(
            v.read_as_enum(PMBIDR_EL1::EA),
            Some(PMBIDR_EL1::EA::Value::SError)
        );
    }

    /// Arm ARM D24.7.1 Align table: byte ... 2KB, 0b1100..=0b1111 reserved.
    #[test]
    fn align_table() {
        for code in 0u8..16 {
            match decode_align(code) {
                Ok(bytes) => {
                    assert!(code <= 11);
                    assert_eq!(bytes, 1 << code);
                }
                Err(e) => {
                    assert!(code >= 12);
                    assert_eq!(
                        e,
                        SpeError::ReservedField {
                            field: IdRegisterField::PmbidrAlign,
                            value: code
                        }
                    );
                }
            }
        }
    }
}
