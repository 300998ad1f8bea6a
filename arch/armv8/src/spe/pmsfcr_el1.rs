//! PMSFCR_EL1, Sampling Filter Control Register: which filters decide whether a sample is
//! recorded. The filters are ANDed: with FE and FT set, only samples of the selected types
//! *and* with the selected events are written.
//!
//! Source: Arm ARM DDI 0487 M.a.a D24.7.12; Linux 6.12 `arch/arm64/tools/sysreg`
//! (`Sysreg PMSFCR_EL1 3 0 9 9 4`: FE 0, FT 1, FL 2, FnE 3, B 16, LD 17, ST 18). FDS and the
//! FEAT_SPE_EFT fields (FP, SIMD, Bm..SIMDm) are from the Arm ARM only.

use tock_registers::{register_bitfields, LocalRegisterCopy};

register_bitfields! {u64,
    /// PMSFCR_EL1 fields.
    // The macro generates `Register`, `SET`/`CLEAR` and `Value` items without docs.
    #[allow(missing_docs)]
    pub PMSFCR_EL1 [
        /// SIMD filter mask (AND instead of OR with the other masked type filters).
        /// Requires FEAT_SPE_EFT.
        SIMDm OFFSET(52) NUMBITS(1) [],
        /// Floating-point filter mask. Requires FEAT_SPE_EFT.
        FPm OFFSET(51) NUMBITS(1) [],
        /// Store filter mask. Requires FEAT_SPE_EFT.
        STm OFFSET(50) NUMBITS(1) [],
        /// Load filter mask. Requires FEAT_SPE_EFT.
        LDm OFFSET(49) NUMBITS(1) [],
        /// Branch filter mask. Requires FEAT_SPE_EFT.
        Bm OFFSET(48) NUMBITS(1) [],
        /// SIMD filter enable. Requires FEAT_SPE_EFT.
        SIMD OFFSET(20) NUMBITS(1) [],
        /// Floating-point filter enable. Requires FEAT_SPE_EFT.
        FP OFFSET(19) NUMBITS(1) [],
        /// Store filter enable: record store operations (including atomics) when FT is 1.
        ST OFFSET(18) NUMBITS(1) [],
        /// Load filter enable: record load operations when FT is 1.
        LD OFFSET(17) NUMBITS(1) [],
        /// Branch filter enable: record branches (including exception returns) when FT is 1.
        B OFFSET(16) NUMBITS(1) [],
        /// Filter by data source (PMSDSFR_EL1). Requires FEAT_SPE_FDS.
        FDS OFFSET(4) NUMBITS(1) [],
        /// Filter by event, inverted: drop samples with any PMSNEVFR_EL1 event.
        /// Requires FEAT_SPEv1p2 (FEAT_SPE_FnE).
        FnE OFFSET(3) NUMBITS(1) [],
        /// Filter by latency: drop samples with total latency below PMSLATFR_EL1.MINLAT.
        FL OFFSET(2) NUMBITS(1) [],
        /// Filter by operation type (B/LD/ST, and with FEAT_SPE_EFT FP/SIMD and the masks).
        FT OFFSET(1) NUMBITS(1) [],
        /// Filter by event: record only samples with every PMSEVFR_EL1 event.
        FE OFFSET(0) NUMBITS(1) [],
    ]
}

/// A PMSFCR_EL1 value.
pub type PmsfcrEl1 = LocalRegisterCopy<u64, PMSFCR_EL1::Register>;

spe_register_access!(PmsfcrEl1, read_pmsfcr_el1, write_pmsfcr_el1, "PMSFCR_EL1");

#[cfg(test)]
mod tests {
    use super::super::events::SpeEvents;
    use super::super::pmsevfr_el1::PmsevfrEl1;
    use super::super::pmsidr_el1::CounterSize;
    use super::super::pmslatfr_el1::encode_min_latency;
    use super::*;

    /// Linux 6.12 arch/arm64/tools/sysreg: FE 0, FT 1, FL 2, FnE 3, B 16, LD 17, ST 18; each field
    /// built alone lands on its bit and decodes back.
    #[test]
    fn field_positions_build_and_decode() {
        let table = [
            (PMSFCR_EL1::FE, 0),
            (PMSFCR_EL1::FT, 1),
            (PMSFCR_EL1::FL, 2),
            (PMSFCR_EL1::FnE, 3),
            (PMSFCR_EL1::B, 16),
            (PMSFCR_EL1::LD, 17),
            (PMSFCR_EL1::ST, 18),
        ];
        for (field, bit) in table {
            let v = PmsfcrEl1::new(field.val(1).value);
            assert_eq!(v.get(), 1 << bit);
            for (other, _) in table {
                assert_eq!(v.is_set(other), other.shift == field.shift);
            }
        }
        let all = PmsfcrEl1::new(
            (PMSFCR_EL1::FE::SET
                + PMSFCR_EL1::FT::SET
                + PMSFCR_EL1::FL::SET
                + PMSFCR_EL1::FnE::SET
                + PMSFCR_EL1::B::SET
                + PMSFCR_EL1::LD::SET
                + PMSFCR_EL1::ST::SET)
                .value,
        );
        assert_eq!(all.get(), 0x7_000F);
    }

    /// Arm ARM M.a.a D24.7.12 figure: FDS bit 4, TYPE = {B, LD, ST, FP, SIMD} at 20:16,
    /// TYPEm = {Bm, LDm, STm, FPm, SIMDm} at 52:48.
    #[test]
    fn feat_spe_eft_and_fds_positions() {
        assert_eq!(PMSFCR_EL1::FDS.val(1).value, 1 << 4);
        let types = PMSFCR_EL1::B::SET
            + PMSFCR_EL1::LD::SET
            + PMSFCR_EL1::ST::SET
            + PMSFCR_EL1::FP::SET
            + PMSFCR_EL1::SIMD::SET;
        assert_eq!(types.value, 0x1F << 16);
        let masks = PMSFCR_EL1::Bm::SET
            + PMSFCR_EL1::LDm::SET
            + PMSFCR_EL1::STm::SET
            + PMSFCR_EL1::FPm::SET
            + PMSFCR_EL1::SIMDm::SET;
        assert_eq!(masks.value, 0x1F << 48);
    }

    /// The usual memory-latency recipe: FL=1, MINLAT=120, FT=1, LD=1, FE=1, often written
    /// with PMSEVFR_EL1=0x08 for "L2 cache miss". Corrected per Arm ARM D24.7.11:
    /// 0x08 is E[3] L1D refill; the intended last-level-cache miss is E[9] = 0x200.
    #[test]
    fn memory_latency_example_corrected() {
        let pmsfcr = PmsfcrEl1::new(
            (PMSFCR_EL1::FL::SET + PMSFCR_EL1::FT::SET + PMSFCR_EL1::LD::SET + PMSFCR_EL1::FE::SET)
                .value,
        );
        assert_eq!(pmsfcr.get(), 0x2_0007);
        assert!(!pmsfcr.is_set(PMSFCR_EL1::ST) && !pmsfcr.is_set(PMSFCR_EL1::B));

        // 120 fits both counter sizes (12-bit: at most 0xFFF).
        let pmslatfr = encode_min_latency(120, CounterSize::Bits12).expect("120 < 4096");
        assert_eq!(pmslatfr.get(), 120);

        let pmsevfr = PmsevfrEl1::from(SpeEvents::LLC_MISS);
        assert_eq!(pmsevfr.get(), 0x200);

        // What 0x08 actually selects: L1D refill, not an L2/LLC miss.
        let often_written = SpeEvents::from(PmsevfrEl1::new(0x08));
        assert_eq!(often_written, SpeEvents::L1D_REFILL);
        assert!(!often_written.contains(SpeEvents::LLC_MISS));
    }
}
