//! PMBPTR_EL1, Profiling Buffer Write Pointer Register: where the next record goes. Hardware
//! advances it; it is frozen on a buffer management event.
//!
//! Source: Arm ARM DDI 0487 M.a.a D24.7.4; Linux 6.12 `arch/arm64/tools/sysreg`
//! (`Sysreg PMBPTR_EL1 3 0 9 10 1`, `Field 63:0 PTR`).

use tock_registers::{register_bitfields, LocalRegisterCopy};

use super::error::SpeError;

register_bitfields! {u64,
    /// PMBPTR_EL1 fields.
    // The macro generates `Register`, `SET`/`CLEAR` and `Value` items without docs.
    #[allow(missing_docs)]
    pub PMBPTR_EL1 [
        /// Virtual address of the next record to be written.
        PTR OFFSET(0) NUMBITS(64) [],
    ]
}

/// A PMBPTR_EL1 value.
pub type PmbptrEl1 = LocalRegisterCopy<u64, PMBPTR_EL1::Register>;

/// Encodes a write pointer, checking the PMBIDR_EL1.Align constraint (`align` in bytes, a power
/// of two as [`super::capabilities::SpeCapabilities::buffer_align`] gives it).
pub const fn encode_pointer(address: u64, align: u32) -> Result<PmbptrEl1, SpeError> {
    let align = align as u64;
    if align == 0 || !align.is_power_of_two() || address & (align - 1) != 0 {
        return Err(SpeError::MisalignedPointer { address, align });
    }
    Ok(PmbptrEl1::new(address))
}

spe_register_access!(PmbptrEl1, read_pmbptr_el1, write_pmbptr_el1, "PMBPTR_EL1");

#[cfg(test)]
mod tests {
    use super::*;

    /// Arm ARM D24.7.4 / D24.7.1: writes to PMBPTR_EL1 must respect PMBIDR_EL1.Align.
    #[test]
    fn pointer_alignment() {
        assert_eq!(
            encode_pointer(0x8000_0040, 64).map(|v| v.read(PMBPTR_EL1::PTR)),
            Ok(0x8000_0040)
        );
        assert_eq!(
            encode_pointer(0x8000_0041, 1).map(|v| v.get()),
            Ok(0x8000_0041)
        );
        assert_eq!(
            encode_pointer(0x8000_0020, 64).map(|v| v.get()),
            Err(SpeError::MisalignedPointer {
                address: 0x8000_0020,
                align: 64
            })
        );
        assert!(encode_pointer(0x8000_0000, 0).is_err());
        assert!(encode_pointer(0x8000_0000, 3).is_err());
    }
}
