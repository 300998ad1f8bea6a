//! The A64 `MRS` decoder the per-thread grant's SIGILL handler uses to recognise its
//! own counter reads (pure: host-tested).
//!
//! `MRS <Xt>, <systemreg>` (Arm ARM DDI 0487, the `MRS` instruction's encoding):
//! bits 31:20 = 0b1101_0101_0011 (L = 1: a read; bit 20 is op0's high
//! bit), then o0 (bit 19, op0 = 2 + o0), op1 (18:16), CRn (15:12), CRm (11:8), op2
//! (7:5), Rt (4:0). The PMU registers (Arm ARM, each register's "Accessing" section,
//! e.g. `PMEVCNTR<n>_EL0`) are op0 = 3, op1 = 3 and CRn = 9 (the control block and PMCCNTR_EL0,
//! PMXEVCNTR_EL0) or CRn = 14 (`PMEVCNTR<n>_EL0`: CRm = `0b10:n[4:3]`, op2 = `n[2:0]`;
//! `PMEVTYPER<n>_EL0`: CRm = `0b11:n[4:3]`).

/// A PMU register an `MRS` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PmuRegister {
    /// `PMEVCNTR<n>_EL0` (n 0–30).
    EventCounter(u8),
    /// PMCCNTR_EL0, the cycle counter.
    CycleCounter,
    /// PMXEVCNTR_EL0, the counter PMSELR_EL0 selects.
    SelectedEventCounter,
    /// `PMEVTYPER<n>_EL0` (n 0–30; n = 31 is PMCCFILTR_EL0).
    EventType(u8),
    /// Another register of the CRn = 9 block (PMCR_EL0, PMOVSSET_EL0, PMUSERENR_EL0, …),
    /// by its (CRm, op2).
    Control {
        /// CRm.
        crm: u8,
        /// op2.
        op2: u8,
    },
}

/// PMUSERENR_EL0.EN (bit 0): every PMU register at EL0 (Arm ARM, PMUSERENR_EL0).
pub const PMUSERENR_EN: u64 = 1 << 0;
/// PMUSERENR_EL0.CR (bit 2): reads of PMCCNTR_EL0.
pub const PMUSERENR_CR: u64 = 1 << 2;
/// PMUSERENR_EL0.ER (bit 3): reads of the event counters (`PMEVCNTR<n>_EL0`,
/// PMXEVCNTR_EL0) and reads and writes of PMSELR_EL0.
pub const PMUSERENR_ER: u64 = 1 << 3;

/// A decoded `MRS` (or `MSR`) of a PMU register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PmuRead {
    /// The register read.
    pub register: PmuRegister,
    /// The destination Xt (31: XZR, the read is discarded); for a write, the source.
    pub rt: u8,
    /// An `MSR` (register): L = 0, bit 21. Only the programming grant (EN) allows
    /// writes from EL0.
    pub write: bool,
}

impl PmuRead {
    /// The PMUSERENR_EL0 bits any one of which lets EL0 make this access (Arm ARM,
    /// PMUSERENR_EL0's EN, ER and CR): EN for everything; ER also for the event
    /// counters' reads and for PMSELR_EL0 both ways; CR also for PMCCNTR_EL0's read.
    pub const fn permitted_by(self) -> u64 {
        match (self.register, self.write) {
            (PmuRegister::Control { crm: 12, op2: 5 }, _) => PMUSERENR_ER | PMUSERENR_EN,
            (_, true) => PMUSERENR_EN,
            (PmuRegister::CycleCounter, false) => PMUSERENR_CR | PMUSERENR_EN,
            (PmuRegister::EventCounter(_) | PmuRegister::SelectedEventCounter, false) => {
                PMUSERENR_ER | PMUSERENR_EN
            }
            _ => PMUSERENR_EN,
        }
    }
}

/// The `MRS` or `MSR` (register) of a PMU register that `insn` encodes, or `None`
/// (another instruction or register). `MSR` is the same encoding with L (bit 21) = 0.
pub const fn decode_pmu_mrs(insn: u32) -> Option<PmuRead> {
    if insn & 0xFFD0_0000 != 0xD510_0000 {
        return None;
    }
    let write = insn & (1 << 21) == 0;
    let op0 = 2 + ((insn >> 19) & 1);
    let op1 = (insn >> 16) & 0b111;
    let crn = ((insn >> 12) & 0xF) as u8;
    let crm = ((insn >> 8) & 0xF) as u8;
    let op2 = ((insn >> 5) & 0b111) as u8;
    let rt = (insn & 0x1F) as u8;
    if op0 != 3 || op1 != 3 {
        return None;
    }
    let register = match (crn, crm) {
        (9, 13) if op2 == 0 => PmuRegister::CycleCounter,
        (9, 13) if op2 == 2 => PmuRegister::SelectedEventCounter,
        (9, 12..=14) => PmuRegister::Control { crm, op2 },
        (14, 8..=11) => {
            let n = ((crm & 0b11) << 3) | op2;
            if n == 31 {
                return None;
            }
            PmuRegister::EventCounter(n)
        }
        (14, 12..=15) => PmuRegister::EventType(((crm & 0b11) << 3) | op2),
        _ => return None,
    };
    Some(PmuRead {
        register,
        rt,
        write,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Encodings assembled with GNU as 2.40 (`aarch64-linux-gnu-as`, Debian 12) and
    /// disassembled with objdump; each agrees with the field layout of the Arm ARM's
    /// (DDI 0487) `MRS` encoding and its PMU registers' access encodings.
    #[test]
    fn decodes_the_pmu_reads_the_library_makes() {
        let cases: &[(u32, Option<(PmuRegister, u8)>)] = &[
            // mrs x0, pmevcntr0_el0
            (0xd53b_e800, Some((PmuRegister::EventCounter(0), 0))),
            // mrs x5, pmevcntr5_el0
            (0xd53b_e8a5, Some((PmuRegister::EventCounter(5), 5))),
            // mrs x30, pmevcntr30_el0
            (0xd53b_ebde, Some((PmuRegister::EventCounter(30), 30))),
            // mrs x1, pmccntr_el0
            (0xd53b_9d01, Some((PmuRegister::CycleCounter, 1))),
            // mrs x2, pmxevcntr_el0
            (0xd53b_9d42, Some((PmuRegister::SelectedEventCounter, 2))),
            // mrs x3, pmuserenr_el0
            (
                0xd53b_9e03,
                Some((PmuRegister::Control { crm: 14, op2: 0 }, 3)),
            ),
            // mrs x4, pmcr_el0
            (
                0xd53b_9c04,
                Some((PmuRegister::Control { crm: 12, op2: 0 }, 4)),
            ),
            // mrs x7, pmovsset_el0
            (
                0xd53b_9e67,
                Some((PmuRegister::Control { crm: 14, op2: 3 }, 7)),
            ),
            // mrs x9, pmevtyper5_el0
            (0xd53b_eca9, Some((PmuRegister::EventType(5), 9))),
            // mrs x10, pmselr_el0
            (
                0xd53b_9caa,
                Some((PmuRegister::Control { crm: 12, op2: 5 }, 10)),
            ),
            // mrs xzr, pmccntr_el0
            (0xd53b_9d1f, Some((PmuRegister::CycleCounter, 31))),
            // mrs x0, pmccfiltr_el0 (PMEVTYPER31's encoding)
            (0xd53b_efe0, Some((PmuRegister::EventType(31), 0))),
            // mrs x0, cntvct_el0: the generic timer, not the PMU
            (0xd53b_e040, None),
            // nop
            (0xd503_201f, None),
        ];
        for &(insn, want) in cases {
            let got = decode_pmu_mrs(insn).map(|r| (r.register, r.rt));
            assert_eq!(got, want, "{insn:#010x}");
            assert!(decode_pmu_mrs(insn).is_none_or(|r| !r.write));
        }
        // msr pmccntr_el0, x1: the write, L = 0.
        assert_eq!(
            decode_pmu_mrs(0xd51b_9d01),
            Some(PmuRead {
                register: PmuRegister::CycleCounter,
                rt: 1,
                write: true
            })
        );
    }

    /// What PMUSERENR_EL0 must hold for each access (Arm ARM, PMUSERENR_EL0: ER reads
    /// the event counters and reads and writes PMSELR_EL0, CR reads the cycle counter,
    /// EN allows everything); encodings as above, `msr pmselr_el0, x1` = 0xd51b9ca1
    /// (GNU as 2.40).
    #[test]
    fn what_pmuserenr_must_hold() {
        let bits = |insn| decode_pmu_mrs(insn).unwrap().permitted_by();
        let (en, er, cr) = (PMUSERENR_EN, PMUSERENR_ER, PMUSERENR_CR);
        assert_eq!(bits(0xd53b_e8a5), er | en); // mrs pmevcntr5_el0
        assert_eq!(bits(0xd53b_9d42), er | en); // mrs pmxevcntr_el0
        assert_eq!(bits(0xd53b_9caa), er | en); // mrs pmselr_el0
        assert_eq!(bits(0xd51b_9ca1), er | en); // msr pmselr_el0
        assert_eq!(bits(0xd53b_9d01), cr | en); // mrs pmccntr_el0
        assert_eq!(bits(0xd51b_9d01), en); // msr pmccntr_el0
        assert_eq!(bits(0xd53b_9c04), en); // mrs pmcr_el0
        assert_eq!(bits(0xd53b_9e67), en); // mrs pmovsset_el0
    }
}
