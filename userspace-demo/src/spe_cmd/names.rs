//! Names on the command line: SPE events (`llc-miss`, `9`, `0x200`), example capability
//! profiles, and how event sets are shown.

use clap::ValueEnum;
use pmu_armv8::spe::{SpeCapabilities, SpeEvents, SpeRegister, SpeVersion};

/// Extra spellings people use for events, on top of the library's names
/// (`SpeEvents::LLC_MISS` is `llc-miss`).
const ALIASES: [(&str, SpeEvents); 7] = [
    ("exception", SpeEvents::EXCEPTION_GENERATED),
    ("l1d-miss", SpeEvents::L1D_REFILL),
    ("tlb-miss", SpeEvents::TLB_WALK),
    ("mispredict", SpeEvents::MISPREDICTED),
    ("llc-refill", SpeEvents::LLC_MISS),
    ("remote", SpeEvents::REMOTE_ACCESS),
    ("alignment", SpeEvents::MISALIGNED),
];

/// The command-line spelling of a library event name: `LLC_MISS` -> `llc-miss`.
fn cli_name(library_name: &str) -> String {
    library_name.to_ascii_lowercase().replace('_', "-")
}

/// Every named event as `(cli name, event)`, in bit order.
pub fn named_events() -> impl Iterator<Item = (String, SpeEvents)> {
    SpeEvents::all()
        .iter_names()
        .map(|(name, event)| (cli_name(name), event))
}

/// Parses one `--event`/`--exclude-event` value: an event name (`llc-miss`, `LLC_MISS`, an
/// alias such as `tlb-miss`), a bit number (`9`, `E9`, `E[9]`), or a hex mask (`0x200`).
pub fn parse_event(text: &str) -> Result<SpeEvents, String> {
    let t = text.trim();
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16)
            .map(SpeEvents::from_bits_retain)
            .map_err(|_| format!("`{t}` is not a hex mask (0x200 is E[9], LLC miss)"));
    }
    let bit_text = t
        .strip_prefix("E[")
        .or_else(|| t.strip_prefix("e["))
        .and_then(|r| r.strip_suffix(']'))
        .or_else(|| t.strip_prefix('E'))
        .or_else(|| t.strip_prefix('e'))
        .filter(|r| r.chars().all(|c| c.is_ascii_digit()) && !r.is_empty())
        .unwrap_or(t);
    if let Ok(bit) = bit_text.parse::<u32>() {
        return if bit < 64 {
            Ok(SpeEvents::from_bits_retain(1 << bit))
        } else {
            Err(format!("event bit {bit} does not exist: bits are 0 to 63"))
        };
    }
    let wanted = cli_name(t);
    named_events()
        .find(|(name, _)| *name == wanted)
        .map(|(_, event)| event)
        .or_else(|| {
            ALIASES
                .iter()
                .find(|(alias, _)| *alias == wanted)
                .map(|&(_, event)| event)
        })
        .ok_or_else(|| {
            let names: Vec<String> = named_events().map(|(n, _)| n).collect();
            format!(
                "unknown SPE event `{t}`: use one of {}, a bit number (9) or a hex mask (0x200)",
                names.join(", ")
            )
        })
}

/// `LLC_MISS (E[9])` for each set bit, low bits first.
pub fn event_list(events: SpeEvents) -> Vec<String> {
    SpeRegister::Pmsevfr
        .fields(events.bits())
        .map(|f| {
            if f.name.starts_with("E[") {
                f.name.to_owned()
            } else {
                format!("{} (E[{}])", f.name, f.lsb)
            }
        })
        .collect()
}

/// The library's names of the set bits (`LLC_MISS`, `E[12]`), as its JSON gives them.
pub fn event_names(events: SpeEvents) -> Vec<&'static str> {
    SpeRegister::Pmsevfr
        .fields(events.bits())
        .map(|f| f.name)
        .collect()
}

/// Example capability sets, built from the PMSIDR_EL1 fields of Arm ARM DDI 0487 M.a.a
/// D24.7.14 (FE 0, FT 1, FL 2, ArchInst 3, LDS 4, ERnd 5, FnE 6, FDS 7, Interval 11:8, MaxSize
/// 15:12, CountSize 19:16, EFT 26). They are not register dumps of any vendor's part.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Profile {
    /// FEAT_SPEv1p1 (PMSVer 2, the SPE version of Neoverse-V1-class cores), PMSIDR_EL1
    /// 0x26407: FE FT FL, min interval 1024, 64-byte records, 12-bit latency counters, no FnE.
    /// Neoverse-N1 and Cortex-A76 are FEAT_SPE (PMSVer 1): use `--pmsver 1` with their
    /// PMSIDR_EL1.
    #[value(name = "spev1p1-12bit")]
    Spev1p1Bits12,
    /// FEAT_SPEv1p2 (PMSVer 3), PMSIDR_EL1 0x26447: as spev1p1-12bit plus the inverted
    /// event filter (FnE, PMSNEVFR_EL1).
    #[value(name = "spev1p2-fne")]
    Spev1p2Fne,
    /// FEAT_SPEv1p4 (PMSVer 5), PMSIDR_EL1 0x36077: FE FT FL FnE LDS ERnd, min interval
    /// 256, 64-byte records, 16-bit latency counters; cache/TLB events architected
    /// filterable (LLC miss included).
    #[value(name = "spev1p4-16bit")]
    Spev1p4Bits16,
    /// FEAT_SPEv1p4 (PMSVer 5), PMSIDR_EL1 0x403_60F7: as spev1p4-16bit plus the extended
    /// type filter (EFT: SIMD, floating point, the type masks) and the data source filter
    /// (FDS, PMSDSFR_EL1), the features Linux 7.3's perf terms need.
    #[value(name = "spev1p4-eft-fds")]
    Spev1p4EftFds,
}

impl Profile {
    /// The profile's name on the command line.
    pub fn name(self) -> String {
        self.to_possible_value()
            .map(|v| v.get_name().to_owned())
            .unwrap_or_default()
    }

    /// `(PMSVer, PMSIDR_EL1)`.
    pub const fn registers(self) -> (u8, u64) {
        const FE: u64 = 1 << 0;
        const FT: u64 = 1 << 1;
        const FL: u64 = 1 << 2;
        const LDS: u64 = 1 << 4;
        const ERND: u64 = 1 << 5;
        const FNE: u64 = 1 << 6;
        const FDS: u64 = 1 << 7;
        const EFT: u64 = 1 << 26;
        const INTERVAL_1024: u64 = 0b0100 << 8;
        const INTERVAL_256: u64 = 0b0000 << 8;
        const MAX_SIZE_64: u64 = 0b0110 << 12;
        const COUNT_12_BIT: u64 = 0b0010 << 16;
        const COUNT_16_BIT: u64 = 0b0011 << 16;
        match self {
            Self::Spev1p1Bits12 => (2, FE | FT | FL | INTERVAL_1024 | MAX_SIZE_64 | COUNT_12_BIT),
            Self::Spev1p2Fne => (
                3,
                FE | FT | FL | FNE | INTERVAL_1024 | MAX_SIZE_64 | COUNT_12_BIT,
            ),
            Self::Spev1p4Bits16 => (
                5,
                FE | FT | FL | LDS | ERND | FNE | INTERVAL_256 | MAX_SIZE_64 | COUNT_16_BIT,
            ),
            Self::Spev1p4EftFds => (
                5,
                FE | FT
                    | FL
                    | LDS
                    | ERND
                    | FNE
                    | FDS
                    | EFT
                    | INTERVAL_256
                    | MAX_SIZE_64
                    | COUNT_16_BIT,
            ),
        }
    }

    /// The decoded capabilities (PMBIDR_EL1 = 0: EL1 owns the buffer, byte alignment).
    pub fn capabilities(self) -> SpeCapabilities {
        let (pmsver, pmsidr) = self.registers();
        let version = SpeVersion::from_pmsver(pmsver).unwrap_or(SpeVersion::V1p0);
        SpeCapabilities::decode_raw(version, pmsidr, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The event bits (Arm ARM D18.2.6): names, bit numbers and masks all land on the same
    /// bit; values often published wrongly (0x08 as "L2 miss", 0x20 as "store buffer
    /// full") decode to what they really are (L1D refill, TLB walk).
    #[test]
    fn event_spellings() {
        for text in [
            "llc-miss", "LLC_MISS", "Llc-Miss", "9", "E9", "E[9]", "0x200",
        ] {
            assert_eq!(parse_event(text), Ok(SpeEvents::LLC_MISS), "{text}");
        }
        assert_eq!(parse_event("l1d-refill"), Ok(SpeEvents::L1D_REFILL));
        assert_eq!(parse_event("0x08"), Ok(SpeEvents::L1D_REFILL));
        assert_eq!(parse_event("0x20"), Ok(SpeEvents::TLB_WALK));
        assert_eq!(parse_event("tlb-walk"), Ok(SpeEvents::TLB_WALK));
        assert_eq!(parse_event("mispredicted"), Ok(SpeEvents::MISPREDICTED));
        assert_eq!(parse_event("retired"), Ok(SpeEvents::RETIRED));
        assert_eq!(parse_event("0x82").unwrap().bits(), 0x82);
        assert!(parse_event("64").is_err());
        assert!(parse_event("0xZZ").is_err());
        let err = parse_event("l2-miss").unwrap_err();
        assert!(err.contains("llc-miss") && err.contains("0x200"), "{err}");
    }

    /// Every named event of the library is reachable by its command-line name.
    #[test]
    fn every_library_name_parses() {
        let mut n = 0;
        for (name, event) in named_events() {
            assert_eq!(parse_event(&name), Ok(event), "{name}");
            n += 1;
        }
        assert!(n >= 22, "{n} names");
    }

    /// The profiles decode to the documented values (the first is capabilities.rs's FEAT_SPEv1p1 example
    /// PMSIDR_EL1 0x26407 with PMSVer 2, capabilities.rs) and all validate.
    #[test]
    fn profiles_are_valid() {
        assert_eq!(Profile::Spev1p1Bits12.registers(), (2, 0x2_6407));
        assert_eq!(Profile::Spev1p2Fne.registers(), (3, 0x2_6447));
        assert_eq!(Profile::Spev1p4Bits16.registers(), (5, 0x3_6077));
        for p in Profile::value_variants() {
            let caps = p.capabilities();
            assert_eq!(caps.validate(), Ok(()), "{}", p.name());
            assert_eq!(caps.version.pmsver(), p.registers().0);
        }
        let caps = Profile::Spev1p4Bits16.capabilities();
        assert_eq!(caps.min_interval, Ok(256));
        assert!(caps.inverted_event_filter && caps.extended_random);
        assert!(!Profile::Spev1p1Bits12.capabilities().inverted_event_filter);
    }
}
