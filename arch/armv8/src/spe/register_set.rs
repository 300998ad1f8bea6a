//! The SPE registers a configuration programs, as one set of raw values, and an explanation of
//! every field of each value: what a front end needs to show "register values with each field
//! explained" or to emit them as JSON without this crate depending on `serde`.
//!
//! Field positions are those of the per-register files (`pmscr_el1.rs`, ...), which cite Arm
//! ARM DDI 0487 M.a.a D24.7 and Linux 6.12 `arch/arm64/tools/sysreg`; the tests below check
//! the two agree.

use core::fmt;

use super::events::SpeEvents;

/// An SPE register that software writes (the ID registers are read-only and described by
/// [`super::SpeCapabilities`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum SpeRegister {
    /// PMSCR_EL1: sampling enable per Exception level, record contents.
    Pmscr,
    /// PMSFCR_EL1: which filters apply.
    Pmsfcr,
    /// PMSEVFR_EL1: events a sample must have.
    Pmsevfr,
    /// PMSNEVFR_EL1: events a sample must not have (FEAT_SPEv1p2).
    Pmsnevfr,
    /// PMSDSFR_EL1: data sources a sample must have (FEAT_SPE_FDS).
    Pmsdsfr,
    /// PMSLATFR_EL1: minimum latency.
    Pmslatfr,
    /// PMSIRR_EL1: sampling interval and jitter.
    Pmsirr,
    /// PMSICR_EL1: the live interval counter.
    Pmsicr,
    /// PMBPTR_EL1: profiling buffer write pointer.
    Pmbptr,
    /// PMBLIMITR_EL1: profiling buffer limit and enable.
    Pmblimitr,
    /// PMBSR_EL1: profiling buffer status/syndrome.
    Pmbsr,
}

impl SpeRegister {
    /// The register's name as the Arm ARM spells it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Pmscr => "PMSCR_EL1",
            Self::Pmsfcr => "PMSFCR_EL1",
            Self::Pmsevfr => "PMSEVFR_EL1",
            Self::Pmsnevfr => "PMSNEVFR_EL1",
            Self::Pmsdsfr => "PMSDSFR_EL1",
            Self::Pmslatfr => "PMSLATFR_EL1",
            Self::Pmsirr => "PMSIRR_EL1",
            Self::Pmsicr => "PMSICR_EL1",
            Self::Pmbptr => "PMBPTR_EL1",
            Self::Pmblimitr => "PMBLIMITR_EL1",
            Self::Pmbsr => "PMBSR_EL1",
        }
    }

    /// Every field of `value` in this register, low bits first, with its meaning.
    pub fn fields(self, value: u64) -> Fields {
        Fields {
            register: self,
            value,
            next: 0,
        }
    }
}

impl fmt::Display for SpeRegister {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The values a configuration writes to the sampling registers. `pmsnevfr` is `None` when the
/// PE has no PMSNEVFR_EL1 (no FEAT_SPE_FnE): the register is then UNDEFINED and never written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct SpeRegisterValues {
    /// PMSCR_EL1, written last: it switches sampling on.
    pub pmscr: u64,
    /// PMSFCR_EL1.
    pub pmsfcr: u64,
    /// PMSEVFR_EL1.
    pub pmsevfr: u64,
    /// PMSNEVFR_EL1, if the PE has it.
    pub pmsnevfr: Option<u64>,
    /// PMSDSFR_EL1, if the PE has it (FEAT_SPE_FDS); all ones keeps every data source.
    pub pmsdsfr: Option<u64>,
    /// PMSLATFR_EL1.
    pub pmslatfr: u64,
    /// PMSIRR_EL1.
    pub pmsirr: u64,
    /// PMSICR_EL1 (0 at the start of a session).
    pub pmsicr: u64,
}

impl SpeRegisterValues {
    /// The registers in the order [`super::program`] writes them: the filters (latency,
    /// event, inverted event, control), the interval, the interval counter, and PMSCR_EL1 last.
    pub fn in_programming_order(&self) -> impl Iterator<Item = (SpeRegister, u64)> {
        let pmsnevfr = self.pmsnevfr.map(|v| (SpeRegister::Pmsnevfr, v));
        let pmsdsfr = self.pmsdsfr.map(|v| (SpeRegister::Pmsdsfr, v));
        [
            Some((SpeRegister::Pmslatfr, self.pmslatfr)),
            Some((SpeRegister::Pmsevfr, self.pmsevfr)),
            pmsnevfr,
            pmsdsfr,
            Some((SpeRegister::Pmsfcr, self.pmsfcr)),
            Some((SpeRegister::Pmsirr, self.pmsirr)),
            Some((SpeRegister::Pmsicr, self.pmsicr)),
            Some((SpeRegister::Pmscr, self.pmscr)),
        ]
        .into_iter()
        .flatten()
    }

    /// The event bits of PMSEVFR_EL1.
    pub fn required_events(&self) -> SpeEvents {
        SpeEvents::from_bits_retain(self.pmsevfr)
    }

    /// The event bits of PMSNEVFR_EL1 (none when the register does not exist).
    pub fn excluded_events(&self) -> SpeEvents {
        SpeEvents::from_bits_retain(self.pmsnevfr.unwrap_or(0))
    }
}

/// One field of a register value, for display or JSON.
///
/// Serialized (feature `serde`) as its fields, `value_meaning` as `meaning`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct FieldInfo {
    /// The field name as the Arm ARM spells it (event bits: the event's name).
    pub name: &'static str,
    /// Most significant bit.
    pub msb: u8,
    /// Least significant bit.
    pub lsb: u8,
    /// The field's value, shifted down to bit 0.
    pub value: u64,
    /// What the field does.
    pub description: &'static str,
    /// What this particular value means, for coded fields (`PCT = 0b01`: "physical counter").
    #[cfg_attr(feature = "serde", serde(rename = "meaning"))]
    pub value_meaning: Option<&'static str>,
}

/// Iterator over the fields of one register value ([`SpeRegister::fields`]). For PMSEVFR_EL1
/// and PMSNEVFR_EL1 it yields one entry per *set* event bit; for the other registers every
/// defined field, set or not.
#[derive(Clone, Debug)]
pub struct Fields {
    register: SpeRegister,
    value: u64,
    next: usize,
}

impl Iterator for Fields {
    type Item = FieldInfo;

    fn next(&mut self) -> Option<FieldInfo> {
        match self.register {
            SpeRegister::Pmsevfr | SpeRegister::Pmsnevfr => {
                while self.next < 64 {
                    let bit = self.next;
                    self.next += 1;
                    if self.value & (1 << bit) != 0 {
                        let (name, description) = EVENT_NAMES[bit];
                        return Some(FieldInfo {
                            name,
                            // `bit` < 64, so it fits a u8.
                            msb: bit as u8,
                            lsb: bit as u8,
                            value: 1,
                            description,
                            value_meaning: None,
                        });
                    }
                }
                None
            }
            register => {
                let table = field_table(register);
                let def = table.get(self.next)?;
                self.next += 1;
                let value = extract(self.value, def.msb, def.lsb);
                Some(FieldInfo {
                    name: def.name,
                    msb: def.msb,
                    lsb: def.lsb,
                    value,
                    description: def.description,
                    value_meaning: value_meaning(register, def.name, value),
                })
            }
        }
    }
}

/// Bits `msb..=lsb` of `value`, shifted down.
const fn extract(value: u64, msb: u8, lsb: u8) -> u64 {
    let width = msb - lsb + 1;
    let mask = if width >= 64 {
        u64::MAX
    } else {
        (1 << width) - 1
    };
    (value >> lsb) & mask
}

struct FieldDef {
    name: &'static str,
    msb: u8,
    lsb: u8,
    description: &'static str,
}

const fn f(name: &'static str, msb: u8, lsb: u8, description: &'static str) -> FieldDef {
    FieldDef {
        name,
        msb,
        lsb,
        description,
    }
}

// Arm ARM D24.7.8 / sysreg `PMSCR_EL1`.
static PMSCR_FIELDS: [FieldDef; 9] = [
    f("E0SPE", 0, 0, "sample at EL0"),
    f("E1SPE", 1, 1, "sample at EL1"),
    f("CX", 3, 3, "record CONTEXTIDR_EL1 (Context packet)"),
    f("PA", 4, 4, "record physical data addresses"),
    f("TS", 5, 5, "record a timestamp"),
    f("PCT", 7, 6, "which counter the timestamp holds"),
    f(
        "EE",
        9,
        8,
        "SPE profiling exceptions instead of PMBIRQ (FEAT_SPE_EXC)",
    ),
    f(
        "KE",
        10,
        10,
        "profiling exceptions taken to EL1 (FEAT_SPE_EXC)",
    ),
    f(
        "EnVM",
        11,
        11,
        "software use in nested virtualization (FEAT_SPE_nVM)",
    ),
];

// Arm ARM D24.7.12 / sysreg `PMSFCR_EL1`.
static PMSFCR_FIELDS: [FieldDef; 15] = [
    f(
        "FE",
        0,
        0,
        "record only samples with every PMSEVFR_EL1 event",
    ),
    f(
        "FT",
        1,
        1,
        "record only samples of the selected operation types",
    ),
    f(
        "FL",
        2,
        2,
        "record only samples with latency >= PMSLATFR_EL1.MINLAT",
    ),
    f(
        "FnE",
        3,
        3,
        "drop samples with any PMSNEVFR_EL1 event (FEAT_SPEv1p2)",
    ),
    f("FDS", 4, 4, "filter by data source (FEAT_SPE_FDS)"),
    f("B", 16, 16, "with FT: record branches"),
    f("LD", 17, 17, "with FT: record loads"),
    f("ST", 18, 18, "with FT: record stores"),
    f(
        "FP",
        19,
        19,
        "with FT: floating-point operations (FEAT_SPE_EFT)",
    ),
    f("SIMD", 20, 20, "with FT: SIMD operations (FEAT_SPE_EFT)"),
    f("Bm", 48, 48, "branch filter mask (FEAT_SPE_EFT)"),
    f("LDm", 49, 49, "load filter mask (FEAT_SPE_EFT)"),
    f("STm", 50, 50, "store filter mask (FEAT_SPE_EFT)"),
    f("FPm", 51, 51, "floating-point filter mask (FEAT_SPE_EFT)"),
    f("SIMDm", 52, 52, "SIMD filter mask (FEAT_SPE_EFT)"),
];

// Arm ARM D24.7 PMSDSFR_EL1 / Linux 7.3 sysreg `PMSDSFR_EL1` (`Field 63:0 S`).
static PMSDSFR_FIELDS: [FieldDef; 1] = [f(
    "S",
    63,
    0,
    "with FDS: bit n keeps samples whose data source is n",
)];

// Arm ARM D24.7.16.
static PMSLATFR_FIELDS: [FieldDef; 1] = [f(
    "MINLAT",
    15,
    0,
    "minimum total latency in cycles, with FL (bits [15:12] RES0 with 12-bit counters)",
)];

// Arm ARM D24.7.15.
static PMSIRR_FIELDS: [FieldDef; 2] = [
    f("RND", 0, 0, "randomize the interval (jitter)"),
    f(
        "INTERVAL",
        31,
        8,
        "interval counter reload value, bits [31:8] of the interval",
    ),
];

// Arm ARM D24.7.13.
static PMSICR_FIELDS: [FieldDef; 2] = [
    f("COUNT", 31, 0, "primary interval counter"),
    f(
        "ECOUNT",
        63,
        56,
        "secondary interval counter (FEAT_SPE_ERnd)",
    ),
];

// Arm ARM D24.7.4.
static PMBPTR_FIELDS: [FieldDef; 1] = [f("PTR", 63, 0, "address of the next record")];

// Arm ARM D24.7.2.
static PMBLIMITR_FIELDS: [FieldDef; 5] = [
    f("E", 0, 0, "profiling buffer enable"),
    f("FM", 2, 1, "fill mode"),
    f(
        "PMFZ",
        5,
        5,
        "freeze PMU counters on a buffer management event",
    ),
    f(
        "nVM",
        7,
        7,
        "buffer pointers are physical addresses (FEAT_SPE_nVM)",
    ),
    f(
        "LIMIT",
        63,
        12,
        "limit address bits [63:12] (first byte after the buffer)",
    ),
];

// Arm ARM D24.7.5.
static PMBSR_FIELDS: [FieldDef; 7] = [
    f(
        "MSS",
        15,
        0,
        "management event specific syndrome (BSC or FSC)",
    ),
    f("COLL", 16, 16, "samples lost to collisions"),
    f("S", 17, 17, "a buffer management event was recorded"),
    f("EA", 18, 18, "external abort on a buffer write"),
    f("DL", 19, 19, "partial record lost"),
    f("EC", 31, 26, "event class"),
    f("MSS2", 55, 32, "management event specific syndrome 2"),
];

fn field_table(register: SpeRegister) -> &'static [FieldDef] {
    match register {
        SpeRegister::Pmscr => &PMSCR_FIELDS,
        SpeRegister::Pmsfcr => &PMSFCR_FIELDS,
        SpeRegister::Pmslatfr => &PMSLATFR_FIELDS,
        SpeRegister::Pmsirr => &PMSIRR_FIELDS,
        SpeRegister::Pmsicr => &PMSICR_FIELDS,
        SpeRegister::Pmbptr => &PMBPTR_FIELDS,
        SpeRegister::Pmblimitr => &PMBLIMITR_FIELDS,
        SpeRegister::Pmbsr => &PMBSR_FIELDS,
        SpeRegister::Pmsdsfr => &PMSDSFR_FIELDS,
        SpeRegister::Pmsevfr | SpeRegister::Pmsnevfr => &[],
    }
}

fn value_meaning(register: SpeRegister, field: &str, value: u64) -> Option<&'static str> {
    Some(match (register, field, value) {
        // Arm ARM D24.7.8 PCT.
        (SpeRegister::Pmscr, "PCT", 0b00) => "virtual counter (physical minus CNTVOFF_EL2)",
        (SpeRegister::Pmscr, "PCT", 0b01) => "physical counter",
        (SpeRegister::Pmscr, "PCT", 0b11) => "physical minus CNTPOFF_EL2 (FEAT_ECV)",
        (SpeRegister::Pmscr, "PCT", _) => "reserved",
        // Arm ARM D24.7.2 FM.
        (SpeRegister::Pmblimitr, "FM", 0b00) => "fill: stop and raise PMBIRQ when full",
        (SpeRegister::Pmblimitr, "FM", 0b10) => "discard all output (FEAT_SPEv1p2)",
        (SpeRegister::Pmblimitr, "FM", _) => "reserved",
        // Arm ARM D24.7.5 EC.
        (SpeRegister::Pmbsr, "EC", 0b00_0000) => "buffer management event (MSS = BSC)",
        (SpeRegister::Pmbsr, "EC", 0b01_1110) => "granule protection check fault",
        (SpeRegister::Pmbsr, "EC", 0b01_1111) => "IMPLEMENTATION DEFINED",
        (SpeRegister::Pmbsr, "EC", 0b10_0100) => "stage 1 data abort (MSS = FSC)",
        (SpeRegister::Pmbsr, "EC", 0b10_0101) => "stage 2 data abort (MSS = FSC)",
        (SpeRegister::Pmbsr, "EC", _) => "reserved",
        _ => return None,
    })
}

/// The name and meaning of each of the 64 event bits (Arm ARM D18.2.6 Events packet).
/// IMPLEMENTATION DEFINED and reserved bits are named `E[n]`.
pub static EVENT_NAMES: [(&str, &str); 64] = [
    ("EXCEPTION_GENERATED", "generated an exception"),
    ("RETIRED", "architecturally retired"),
    ("L1D_ACCESS", "level 1 data cache access"),
    ("L1D_REFILL", "level 1 data cache refill or miss"),
    ("TLB_ACCESS", "TLB access"),
    ("TLB_WALK", "TLB walk (miss)"),
    ("NOT_TAKEN", "conditional instruction or branch not taken"),
    ("MISPREDICTED", "mispredicted branch"),
    ("LLC_ACCESS", "last level cache access"),
    ("LLC_MISS", "last level cache miss"),
    ("REMOTE_ACCESS", "access to another socket or chip"),
    ("MISALIGNED", "misaligned access"),
    ("E[12]", "IMPLEMENTATION DEFINED"),
    ("E[13]", "IMPLEMENTATION DEFINED"),
    ("E[14]", "IMPLEMENTATION DEFINED"),
    ("E[15]", "IMPLEMENTATION DEFINED"),
    ("TRANSACTIONAL", "transactional (FEAT_TME)"),
    ("PARTIAL_PREDICATE", "partial or empty SVE predicate"),
    ("EMPTY_PREDICATE", "empty SVE predicate"),
    ("L2D_ACCESS", "level 2 data cache access"),
    ("L2D_MISS", "level 2 data cache miss"),
    ("CACHE_DATA_MODIFIED", "cache data modified"),
    ("RECENTLY_FETCHED", "recently fetched"),
    ("DATA_SNOOPED", "data snooped"),
    ("STREAMING_SVE_MODE", "streaming SVE mode"),
    ("SMCU", "SMCU or external coprocessor operation"),
    ("E[26]", "IMPLEMENTATION DEFINED"),
    ("E[27]", "IMPLEMENTATION DEFINED"),
    ("E[28]", "IMPLEMENTATION DEFINED"),
    ("E[29]", "IMPLEMENTATION DEFINED"),
    ("E[30]", "IMPLEMENTATION DEFINED"),
    ("E[31]", "IMPLEMENTATION DEFINED"),
    ("E[32]", "reserved"),
    ("E[33]", "reserved"),
    ("E[34]", "reserved"),
    ("E[35]", "reserved"),
    ("E[36]", "reserved"),
    ("E[37]", "reserved"),
    ("E[38]", "reserved"),
    ("E[39]", "reserved"),
    ("E[40]", "reserved"),
    ("E[41]", "reserved"),
    ("E[42]", "reserved"),
    ("E[43]", "reserved"),
    ("E[44]", "reserved"),
    ("E[45]", "reserved"),
    ("E[46]", "reserved"),
    ("E[47]", "reserved"),
    ("E[48]", "IMPLEMENTATION DEFINED"),
    ("E[49]", "IMPLEMENTATION DEFINED"),
    ("E[50]", "IMPLEMENTATION DEFINED"),
    ("E[51]", "IMPLEMENTATION DEFINED"),
    ("E[52]", "IMPLEMENTATION DEFINED"),
    ("E[53]", "IMPLEMENTATION DEFINED"),
    ("E[54]", "IMPLEMENTATION DEFINED"),
    ("E[55]", "IMPLEMENTATION DEFINED"),
    ("E[56]", "IMPLEMENTATION DEFINED"),
    ("E[57]", "IMPLEMENTATION DEFINED"),
    ("E[58]", "IMPLEMENTATION DEFINED"),
    ("E[59]", "IMPLEMENTATION DEFINED"),
    ("E[60]", "IMPLEMENTATION DEFINED"),
    ("E[61]", "IMPLEMENTATION DEFINED"),
    ("E[62]", "IMPLEMENTATION DEFINED"),
    ("E[63]", "IMPLEMENTATION DEFINED"),
];

#[cfg(test)]
mod tests {
    use super::super::{
        PMBLIMITR_EL1, PMBSR_EL1, PMSCR_EL1, PMSFCR_EL1, PMSICR_EL1, PMSIRR_EL1, PMSLATFR_EL1,
    };
    use super::*;

    /// The explanation tables agree with the `register_bitfields!` definitions (which cite the
    /// Arm ARM and Linux sysreg): same names, same positions.
    #[test]
    fn tables_match_register_definitions() {
        use tock_registers::fields::Field;
        fn check<R: tock_registers::RegisterLongName>(
            register: SpeRegister,
            fields: &[(&str, Field<u64, R>)],
        ) {
            let table = field_table(register);
            assert_eq!(table.len(), fields.len(), "{register}");
            for (name, field) in fields {
                let def = table.iter().find(|d| d.name == *name).expect(name);
                assert_eq!(u32::from(def.lsb), field.shift as u32, "{register}.{name}");
                let width = field.mask.count_ones();
                assert_eq!(u32::from(def.msb - def.lsb + 1), width, "{register}.{name}");
            }
        }
        check(
            SpeRegister::Pmscr,
            &[
                ("E0SPE", PMSCR_EL1::E0SPE),
                ("E1SPE", PMSCR_EL1::E1SPE),
                ("CX", PMSCR_EL1::CX),
                ("PA", PMSCR_EL1::PA),
                ("TS", PMSCR_EL1::TS),
                ("PCT", PMSCR_EL1::PCT),
                ("EE", PMSCR_EL1::EE),
                ("KE", PMSCR_EL1::KE),
                ("EnVM", PMSCR_EL1::EnVM),
            ],
        );
        check(
            SpeRegister::Pmsfcr,
            &[
                ("FE", PMSFCR_EL1::FE),
                ("FT", PMSFCR_EL1::FT),
                ("FL", PMSFCR_EL1::FL),
                ("FnE", PMSFCR_EL1::FnE),
                ("FDS", PMSFCR_EL1::FDS),
                ("B", PMSFCR_EL1::B),
                ("LD", PMSFCR_EL1::LD),
                ("ST", PMSFCR_EL1::ST),
                ("FP", PMSFCR_EL1::FP),
                ("SIMD", PMSFCR_EL1::SIMD),
                ("Bm", PMSFCR_EL1::Bm),
                ("LDm", PMSFCR_EL1::LDm),
                ("STm", PMSFCR_EL1::STm),
                ("FPm", PMSFCR_EL1::FPm),
                ("SIMDm", PMSFCR_EL1::SIMDm),
            ],
        );
        check(SpeRegister::Pmslatfr, &[("MINLAT", PMSLATFR_EL1::MINLAT)]);
        check(
            SpeRegister::Pmsirr,
            &[("RND", PMSIRR_EL1::RND), ("INTERVAL", PMSIRR_EL1::INTERVAL)],
        );
        check(
            SpeRegister::Pmsicr,
            &[("COUNT", PMSICR_EL1::COUNT), ("ECOUNT", PMSICR_EL1::ECOUNT)],
        );
        check(
            SpeRegister::Pmblimitr,
            &[
                ("E", PMBLIMITR_EL1::E),
                ("FM", PMBLIMITR_EL1::FM),
                ("PMFZ", PMBLIMITR_EL1::PMFZ),
                ("nVM", PMBLIMITR_EL1::nVM),
                ("LIMIT", PMBLIMITR_EL1::LIMIT),
            ],
        );
        check(
            SpeRegister::Pmbsr,
            &[
                ("MSS", PMBSR_EL1::MSS),
                ("COLL", PMBSR_EL1::COLL),
                ("S", PMBSR_EL1::S),
                ("EA", PMBSR_EL1::EA),
                ("DL", PMBSR_EL1::DL),
                ("EC", PMBSR_EL1::EC),
                ("MSS2", PMBSR_EL1::MSS2),
            ],
        );
    }

    /// Every named [`SpeEvents`] flag has its name at its bit in [`EVENT_NAMES`].
    #[test]
    fn event_names_match_flags() {
        for (name, flag) in SpeEvents::all().iter_names() {
            let bit = flag.bits().trailing_zeros() as usize;
            assert_eq!(EVENT_NAMES[bit].0, name);
        }
        assert_eq!(EVENT_NAMES[12].0, "E[12]");
        assert_eq!(EVENT_NAMES[63].0, "E[63]");
    }

    /// The memory-latency recipe with LLC miss (Arm ARM D24.7.11): PMSFCR_EL1 = 0x2_0007
    /// explains as FE, FT, FL and LD set; PMSEVFR_EL1 = 0x200 lists only LLC_MISS.
    #[test]
    fn explains_memory_latency_registers() {
        let set: std::vec::Vec<_> = SpeRegister::Pmsfcr
            .fields(0x2_0007)
            .filter(|f| f.value != 0)
            .map(|f| f.name)
            .collect();
        assert_eq!(set, ["FE", "FT", "FL", "LD"]);
        let events: std::vec::Vec<_> = SpeRegister::Pmsevfr.fields(0x200).collect();
        assert_eq!(events.len(), 1);
        assert_eq!((events[0].name, events[0].msb), ("LLC_MISS", 9));
        let pct = SpeRegister::Pmscr
            .fields(0b0110_0000)
            .find(|f| f.name == "PCT")
            .unwrap();
        assert_eq!(pct.value, 1);
        assert_eq!(pct.value_meaning, Some("physical counter"));
        let interval = SpeRegister::Pmsirr
            .fields(0x1001)
            .find(|f| f.name == "INTERVAL")
            .unwrap();
        assert_eq!(interval.value, 0x10);
    }

    /// Programming order of Linux `arm_spe_pmu_start()` (filters, interval, counter,
    /// PMSCR_EL1 last), with PMSNEVFR_EL1 only where it exists.
    #[test]
    fn programming_order() {
        let values = SpeRegisterValues {
            pmsnevfr: Some(0x80),
            pmsdsfr: None,
            ..SpeRegisterValues::default()
        };
        let order: std::vec::Vec<_> = values.in_programming_order().map(|(r, _)| r).collect();
        assert_eq!(
            order,
            [
                SpeRegister::Pmslatfr,
                SpeRegister::Pmsevfr,
                SpeRegister::Pmsnevfr,
                SpeRegister::Pmsfcr,
                SpeRegister::Pmsirr,
                SpeRegister::Pmsicr,
                SpeRegister::Pmscr
            ]
        );
        let without = SpeRegisterValues::default();
        assert!(without
            .in_programming_order()
            .all(|(r, _)| r != SpeRegister::Pmsnevfr));
    }
}
