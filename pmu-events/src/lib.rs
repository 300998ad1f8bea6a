//! Each Arm core's own PMU events, by name: the event number, a one-line meaning and
//! where the event can be counted, for the cores people measure on (the Raspberry Pis'
//! ARM1176, Cortex-A7, Cortex-A53, Cortex-A72 and Cortex-A76, and Neoverse-N1 servers).
//!
//! Most of the events that make a core worth measuring (its cache, bus, TLB and prefetch
//! events) are IMPLEMENTATION DEFINED: the core's Technical Reference Manual gives their
//! numbers, Linux's sysfs lists only the architecture's common ones, and bare metal has
//! no sysfs at all. This crate is the one place the bare-metal images, `pmu-linux` and
//! `pmu-demo` look a name up, `no_std`, without allocation:
//!
//! ```
//! // MIDR 0x410FD034: implementer 0x41 (Arm), part number 0xD03 (Cortex-A53 r0p4).
//! let core = pmu_events::for_midr(0x410F_D034).expect("a core this crate knows");
//! assert_eq!(core.name, "Cortex-A53");
//! let refill = core.event("l1d_cache_refill").expect("names are case-insensitive");
//! assert_eq!(refill.code, 0x03);
//! // A typo gets the nearest name.
//! assert_eq!(core.nearest("L1D_CACHE_REFIL").map(|e| e.name), Some("L1D_CACHE_REFILL"));
//! ```
//!
//! A core is picked by its Main ID Register (MIDR; the ARM1176's "Main ID Register" has
//! the same implementer and part-number fields). An event's number is what the core's
//! PMU takes: `PMEVTYPER<n>.evtCount` on PMUv3 and ARMv7's PMUv2, the PMCR.EvtCount
//! fields on the ARM1176 ([`Family`]).
#![no_std]

#[cfg(test)]
extern crate std;

/// Event constants, one per `NAME = code, "meaning";` line: each an [`Event`] named by
/// its identifier, counted on any counter except CHAIN (odd counters only, Arm ARM
/// "CHAIN"). After `list NAME;` also `NAME`, the events in the order given. The one way
/// the tables below write an event.
macro_rules! events {
    (list $list:ident; $($name:ident = $code:literal, $about:literal;)*) => {
        events! { $($name = $code, $about;)* }

        /// The events above, in numeric order.
        pub const $list: &[$crate::Event] = &[$($name,)*];
    };
    ($($name:ident = $code:literal, $about:literal;)*) => {
        $(
            #[doc = $about]
            pub const $name: $crate::Event = $crate::Event {
                name: stringify!($name),
                code: $code,
                about: $about,
                placement: events!(@placement $name),
            };
        )*
    };
    (@placement CHAIN) => { $crate::Placement::OddCounter };
    (@placement $name:ident) => { $crate::Placement::AnyCounter };
}

pub mod common;
pub mod recommended;

pub mod arm1176;
mod cortex_a53;
mod cortex_a7;
mod cortex_a72;
mod cortex_a76;
mod neoverse_n1;

pub use arm1176::ARM1176;
pub use cortex_a53::CORTEX_A53;
pub use cortex_a7::CORTEX_A7;
pub use cortex_a72::CORTEX_A72;
pub use cortex_a76::CORTEX_A76;
pub use neoverse_n1::NEOVERSE_N1;

/// The README (what crates.io shows), its example run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// One event of a core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// The mnemonic, upper case as the core's manual spells it (`L1D_CACHE_REFILL`).
    pub name: &'static str,
    /// The event number the PMU is programmed with.
    pub code: u16,
    /// What it counts, in one line.
    pub about: &'static str,
    /// Which counters can count it.
    pub placement: Placement,
}

/// Which counters can count an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Placement {
    /// Any event counter.
    AnyCounter,
    /// Only an odd-numbered event counter (CHAIN: it counts the overflows of the even
    /// counter below it).
    OddCounter,
}

/// How a core's PMU is programmed, which decides what an event number means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Family {
    /// The ARM11 PMU of the ARM1176 (CP15 c15: PMCR with two 8-bit EvtCount fields,
    /// CR0, CR1 and the cycle counter CCR).
    Arm1176,
    /// ARMv7's PMUv2 (Cortex-A7): 8-bit event numbers in PMXEVTYPER.
    Armv7,
    /// ARMv8's PMUv3: 16-bit event numbers in `PMEVTYPER<n>_EL0` (10 bits before
    /// FEAT_PMUv3p1).
    PmuV3,
}

/// A core as its MIDR names it: the implementer (bits 31:24) and the part number (bits
/// 15:4). Variant and revision are left out: the event tables are per part.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CoreId {
    /// MIDR.Implementer (0x41: Arm Limited).
    pub implementer: u8,
    /// MIDR.PartNum.
    pub part: u16,
}

impl CoreId {
    /// The implementer and part number of `midr`.
    pub const fn from_midr(midr: u32) -> Self {
        Self {
            implementer: (midr >> 24) as u8,
            part: ((midr >> 4) & 0xFFF) as u16,
        }
    }
}

/// A core and its events.
#[derive(Debug)]
pub struct Core {
    /// The core's name (`Cortex-A53`).
    pub name: &'static str,
    /// Where users meet it (`Raspberry Pi 3, Zero 2 W`).
    pub found_in: &'static str,
    /// Its MIDR implementer and part number.
    pub id: CoreId,
    /// How its PMU is programmed.
    pub family: Family,
    /// Its events, in numeric order.
    pub events: &'static [Event],
}

/// Every core this crate has a table for.
pub static CORES: &[&Core] = &[
    &ARM1176,
    &CORTEX_A7,
    &CORTEX_A53,
    &CORTEX_A72,
    &CORTEX_A76,
    &NEOVERSE_N1,
];

/// The core whose MIDR is `midr`, if this crate has its table.
pub fn for_midr(midr: u32) -> Option<&'static Core> {
    let id = CoreId::from_midr(midr);
    CORES.iter().copied().find(|core| core.id == id)
}

/// What event number `code` is on the core whose MIDR is `midr`, programmed as `family`:
/// the core's own table where this crate has one that numbers events as `family` does,
/// else the events every core of `family` numbers alike ([`Family::architectural_event`]).
/// `None` for a number neither names. The one lookup the bare-metal images print names by.
pub fn event_on(midr: u32, family: Family, code: u16) -> Option<&'static Event> {
    for_midr(midr)
        .filter(|core| core.family.numbers_like(family))
        .and_then(|core| core.event_by_code(code))
        .or_else(|| family.architectural_event(code))
}

impl Family {
    /// Whether event numbers mean the same on both: ARMv7's PMUv2 and PMUv3 (seen from
    /// AArch64 or AArch32) share the architecture's numbering (ARMv7 ARM, DDI 0406C,
    /// C12.8; Arm ARM, DDI 0487, "Common event numbers"); the ARM1176's is its own.
    pub const fn numbers_like(self, other: Family) -> bool {
        matches!(
            (self, other),
            (Family::Arm1176, Family::Arm1176)
                | (Family::Armv7 | Family::PmuV3, Family::Armv7 | Family::PmuV3)
        )
    }

    /// The event numbered `code` on every core of this family: the common events on ARMv7
    /// and PMUv3, and PMUv3's recommended IMPLEMENTATION DEFINED ones (0x40..=0xBF, Arm
    /// ARM, DDI 0487, "Recommended PMU event numbers for IMPLEMENTATION DEFINED events");
    /// none on the ARM1176, whose events are all its own.
    pub fn architectural_event(self, code: u16) -> Option<&'static Event> {
        let tables: &[&'static [Event]] = match self {
            Family::Arm1176 => &[],
            Family::Armv7 => &[common::ALL],
            Family::PmuV3 => &[common::ALL, recommended::ALL],
        };
        tables
            .iter()
            .flat_map(|table| table.iter())
            .find(|e| e.code == code)
    }
}

/// The cores that have an event called `name` (case-insensitive): what a user who asked
/// for it on another core should be told.
pub fn cores_with(name: &str) -> impl Iterator<Item = &'static Core> + '_ {
    CORES
        .iter()
        .copied()
        .filter(move |core| core.event(name).is_some())
}

impl Core {
    /// The event called `name`, case-insensitive (`l1d_cache_refill`, `L2D_CACHE_WB`).
    pub fn event(&self, name: &str) -> Option<&'static Event> {
        self.events
            .iter()
            .find(|e| e.name.eq_ignore_ascii_case(name.trim()))
    }

    /// The event numbered `code`.
    pub fn event_by_code(&self, code: u16) -> Option<&'static Event> {
        self.events.iter().find(|e| e.code == code)
    }

    /// The event whose name is nearest to `name` (case-insensitive edit distance), if one
    /// is near enough to be what was meant: at most a third of the name's length apart,
    /// and at least 2 edits allowed.
    pub fn nearest(&self, name: &str) -> Option<&'static Event> {
        let name = name.trim();
        let allowed = (name.len() / 3).max(2);
        self.events
            .iter()
            .filter_map(|e| edit_distance(name, e.name).map(|d| (d, e)))
            .filter(|&(d, _)| d <= allowed)
            .min_by_key(|&(d, _)| d)
            .map(|(_, e)| e)
    }
}

/// The longest name [`edit_distance`] compares.
const MAX_NAME: usize = 64;

/// The Levenshtein distance between `a` and `b`, ASCII case-insensitive; `None` when
/// either is longer than [`MAX_NAME`] bytes (no event name is).
fn edit_distance(a: &str, b: &str) -> Option<usize> {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() > MAX_NAME || b.len() > MAX_NAME {
        return None;
    }
    // One row of the dynamic-programming table: row[j] = distance(a[..i], b[..j]).
    let mut row = [0usize; MAX_NAME + 1];
    for (j, cell) in row.iter_mut().enumerate().take(b.len() + 1) {
        *cell = j;
    }
    for i in 1..=a.len() {
        let mut diagonal = row[0];
        row[0] = i;
        for j in 1..=b.len() {
            let substitute = diagonal + usize::from(!a[i - 1].eq_ignore_ascii_case(&b[j - 1]));
            diagonal = row[j];
            row[j] = substitute.min(row[j] + 1).min(row[j - 1] + 1);
        }
    }
    Some(row[b.len()])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Textbook values of the Levenshtein distance (kitten → sitting is 3: two
    /// substitutions and one insertion).
    #[test]
    fn edit_distance_counts_insertions_deletions_and_substitutions() {
        assert_eq!(edit_distance("kitten", "sitting"), Some(3));
        assert_eq!(edit_distance("", "abc"), Some(3));
        assert_eq!(edit_distance("l1d_cache", "L1D_CACHE"), Some(0));
        assert_eq!(
            edit_distance("L1D_CACHE_REFIL", "L1D_CACHE_REFILL"),
            Some(1)
        );
        assert_eq!(edit_distance(&"x".repeat(65), "x"), None);
    }

    /// MIDR layout: Arm ARM (DDI 0487) D23.2 "MIDR_EL1": Implementer 31:24, Variant
    /// 23:20, Architecture 19:16, PartNum 15:4, Revision 3:0.
    #[test]
    fn core_id_takes_implementer_and_part_number() {
        assert_eq!(
            CoreId::from_midr(0x410F_D034),
            CoreId {
                implementer: 0x41,
                part: 0xD03
            }
        );
        // ARM1176JZF-S: Main ID Register 0x410FB767 (ARM1176JZF-S TRM, 3.2.1).
        assert_eq!(CoreId::from_midr(0x410F_B767).part, 0xB76);
    }

    /// The lookup the images print by: the core's own IMPLEMENTATION DEFINED name first
    /// (Cortex-A53 0xC2 PREFETCH_LINEFILL, TRM DDI 0500 Table 12.28), the architecture's
    /// name on a core without a table (0x08 INST_RETIRED on QEMU's `-cpu max`, MIDR
    /// 0x000F0510), a recommended event only on PMUv3 (0x40 L1D_CACHE_RD), and no
    /// architectural names on the ARM1176 (0x08 there is its own table's event).
    #[test]
    fn event_on_prefers_the_core_then_the_architecture() {
        let a53 = 0x410F_D034;
        assert_eq!(
            event_on(a53, Family::PmuV3, 0xC2).map(|e| e.name),
            Some("PREFETCH_LINEFILL")
        );
        // A PMUv3 core seen from AArch32 is programmed as ARMv7's PMU, same numbers.
        assert_eq!(
            event_on(a53, Family::Armv7, 0xC2).map(|e| e.name),
            Some("PREFETCH_LINEFILL")
        );
        assert_eq!(
            event_on(0x000F_0510, Family::PmuV3, 0x08).map(|e| e.name),
            Some("INST_RETIRED")
        );
        assert_eq!(
            event_on(0x000F_0510, Family::PmuV3, 0x40).map(|e| e.name),
            Some("L1D_CACHE_RD")
        );
        assert_eq!(event_on(0x000F_0510, Family::Armv7, 0x40), None);
        assert_eq!(event_on(0x000F_0510, Family::Arm1176, 0x08), None);
        // The ARM1176's table is not used for a core programmed as PMUv3: 0x22 is then
        // the architecture's BR_MIS_PRED_RETIRED, not the ARM1176's own 0x22.
        assert_ne!(
            ARM1176.event_by_code(0x22).map(|e| e.name),
            Some("BR_MIS_PRED_RETIRED")
        );
        assert_eq!(
            event_on(0x410F_B767, Family::PmuV3, 0x22).map(|e| e.name),
            Some("BR_MIS_PRED_RETIRED")
        );
        assert_eq!(
            event_on(0x410F_B767, Family::Arm1176, 0x07).map(|e| e.name),
            Some("INSTR_EXEC")
        );
    }

    /// The common events are in numeric order, and only CHAIN is restricted to odd
    /// counters (Arm ARM, "CHAIN, Chain": it counts on an odd counter only).
    #[test]
    fn common_events_are_ordered_and_only_chain_is_odd_only() {
        assert!(common::ALL.windows(2).all(|w| w[0].code < w[1].code));
        for e in common::ALL {
            let odd_only = e.placement == Placement::OddCounter;
            assert_eq!(odd_only, e.name == "CHAIN", "{}", e.name);
        }
    }

    /// The recommended events are in numeric order, inside the range the Arm ARM keeps
    /// for them (0x40..=0xBF, "IMPLEMENTATION DEFINED event numbers").
    #[test]
    fn recommended_events_are_ordered_and_in_their_range() {
        assert!(recommended::ALL.windows(2).all(|w| w[0].code < w[1].code));
        assert!(recommended::ALL
            .iter()
            .all(|e| (0x40..=0xbf).contains(&e.code)));
    }

    /// Each core's table is in numeric order (so one number has one name), names are
    /// unique, and only CHAIN is odd-counter-only (Arm ARM, "CHAIN, Chain").
    #[test]
    fn core_tables_are_ordered_with_unique_names() {
        assert!(!CORES.is_empty());
        for core in CORES {
            let events = core.events;
            assert!(
                events.windows(2).all(|w| w[0].code < w[1].code),
                "{}: not in numeric order",
                core.name
            );
            for (i, e) in events.iter().enumerate() {
                assert!(
                    events[..i]
                        .iter()
                        .all(|o| !o.name.eq_ignore_ascii_case(e.name)),
                    "{}: {} twice",
                    core.name,
                    e.name
                );
                assert_eq!(e.placement == Placement::OddCounter, e.name == "CHAIN");
                assert!(!e.about.is_empty() && e.name.len() <= MAX_NAME);
            }
            assert_eq!(
                for_midr(u32::from(core.id.implementer) << 24 | u32::from(core.id.part) << 4)
                    .map(|c| c.name),
                Some(core.name)
            );
        }
    }
}
