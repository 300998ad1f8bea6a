//! The Linux perf bridge: a [`SpeConfig`] as the `arm_spe` PMU's perf event (`attr.config`,
//! `config1` … `config4`, `sample_period`, `exclude_user/kernel`) and as a
//! `perf record -e arm_spe_0/…/` event string, under the rules of one Linux release, and a
//! restatement of what that release's driver accepts and programs for a perf event.
//!
//! A release is data ([`LinuxSpeDriver::rules`], a [`DriverRules`]): its documented format,
//! how it decides which event filter bits to refuse, what it raises short periods to. One
//! validator reads it ([`event_init`], `arm_spe_pmu_event_init()` restated), one model says
//! what the driver then programs ([`kernel_registers`], [`kernel_discards`]); the event a
//! configuration becomes ([`perf_event`]) is checked by the validator before it is returned.
//!
//! The bit layout comes from a [`PerfFormat`]: the one the running kernel publishes in
//! `/sys/bus/event_source/devices/arm_spe*/format/` when there is one (parse the files with
//! [`PerfFormat::from_entries`], or with `sysfs` under the `std` feature), and otherwise
//! the release's documented layout ([`PerfFormat::linux_6_12`], [`PerfFormat::linux_7_3`]) as
//! it publishes it for the PE ([`DriverRules::published_format`]):
//!
//! | field | format | register | release, and what the PE needs |
//! |---|---|---|---|
//! | `ts_enable` | `config:0` | PMSCR_EL1.TS | 6.12 |
//! | `pa_enable` | `config:1` | PMSCR_EL1.PA | 6.12 |
//! | `pct_enable` | `config:2` | PMSCR_EL1.PCT | 6.12 |
//! | `jitter` | `config:16` | PMSIRR_EL1.RND | 6.12 |
//! | `branch_filter` | `config:32` | PMSFCR_EL1.B | 6.12 |
//! | `load_filter` | `config:33` | PMSFCR_EL1.LD | 6.12 |
//! | `store_filter` | `config:34` | PMSFCR_EL1.ST | 6.12 |
//! | `discard` | `config:35` | PMBLIMITR_EL1.FM = DISCARD | 7.3, FEAT_SPEv1p2 |
//! | `branch_filter_mask` | `config:36` | PMSFCR_EL1.Bm | 7.3, FEAT_SPE_EFT |
//! | `load_filter_mask` | `config:37` | PMSFCR_EL1.LDm | 7.3, FEAT_SPE_EFT |
//! | `store_filter_mask` | `config:38` | PMSFCR_EL1.STm | 7.3, FEAT_SPE_EFT |
//! | `simd_filter` | `config:39` | PMSFCR_EL1.SIMD | 7.3, FEAT_SPE_EFT |
//! | `simd_filter_mask` | `config:40` | PMSFCR_EL1.SIMDm | 7.3, FEAT_SPE_EFT |
//! | `float_filter` | `config:41` | PMSFCR_EL1.FP | 7.3, FEAT_SPE_EFT |
//! | `float_filter_mask` | `config:42` | PMSFCR_EL1.FPm | 7.3, FEAT_SPE_EFT |
//! | `event_filter` | `config1:0-63` | PMSEVFR_EL1 | 6.12 |
//! | `min_latency` | `config2:0-11` | PMSLATFR_EL1.MINLAT | 6.12 |
//! | `inv_event_filter` | `config3:0-63` | PMSNEVFR_EL1 | 6.12, FEAT_SPE_FnE |
//! | `inv_data_src_filter` | `config4:0-63` | !PMSDSFR_EL1 | 7.3, FEAT_SPE_FDS |
//!
//! (`ATTR_CFG_FLD_*` and `arm_spe_pmu_format_attr_is_visible()` in drivers/perf/arm_spe_pmu.c
//! of Linux 6.12 and 7.3.4; `tests/spe_kernel_source.rs` reads them from both source trees
//! and compares.) The interval is perf's `period=` term (`attr.sample_period`), the Exception
//! levels its `u`/`k` modifiers.
//!
//! Event filters: Linux 6.12 refuses the bits of a fixed mask per SPE version
//! ([`linux_6_12_pmsevfr_res0`]); Linux 7.3 refuses the bits PMSEVFR_EL1 does not keep when
//! its probe writes all ones, and publishes the others as `caps/event_filter`
//! ([`EventFilterRes0`]).

#[cfg(feature = "std")]
pub mod sysfs;

use core::fmt;

use super::capabilities::SpeCapabilities;
use super::config::{ExceptionLevels, SpeConfig, TimestampSource};
use super::error::{SpeError, SpeFilter, SpeWarning};
use super::events::SpeEvents;
use super::pmscr_el1::PMSCR_EL1;
use super::pmsfcr_el1::PMSFCR_EL1;
use super::register_set::SpeRegisterValues;
use super::version::SpeVersion;

/// One of the four 64-bit configuration words of `struct perf_event_attr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConfigWord {
    /// `attr.config`.
    Config,
    /// `attr.config1`.
    Config1,
    /// `attr.config2`.
    Config2,
    /// `attr.config3`.
    Config3,
    /// `attr.config4` (Linux 7.3's `inv_data_src_filter`).
    Config4,
}

impl ConfigWord {
    /// The name used in sysfs format files (`config`, `config1`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Self::Config => "config",
            Self::Config1 => "config1",
            Self::Config2 => "config2",
            Self::Config3 => "config3",
            Self::Config4 => "config4",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "config" => Self::Config,
            "config1" => Self::Config1,
            "config2" => Self::Config2,
            "config3" => Self::Config3,
            "config4" => Self::Config4,
            _ => return None,
        })
    }
}

/// A format field the `arm_spe` PMU defines (in Linux 6.12, or from Linux 7.3 on).
///
/// The variants are in the order of Linux 7.3's `arm_spe_pmu_formats_attr[]`, which keeps
/// 6.12's fields in 6.12's order: the event string lists terms in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum PerfField {
    /// `ts_enable`: PMSCR_EL1.TS.
    TsEnable,
    /// `pa_enable`: PMSCR_EL1.PA.
    PaEnable,
    /// `pct_enable`: PMSCR_EL1.PCT = 0b01 (physical timestamps).
    PctEnable,
    /// `jitter`: PMSIRR_EL1.RND.
    Jitter,
    /// `branch_filter`: PMSFCR_EL1.B (and FT).
    BranchFilter,
    /// `branch_filter_mask` (Linux 7.3, FEAT_SPE_EFT): PMSFCR_EL1.Bm (and FT).
    BranchFilterMask,
    /// `load_filter`: PMSFCR_EL1.LD (and FT).
    LoadFilter,
    /// `load_filter_mask` (Linux 7.3, FEAT_SPE_EFT): PMSFCR_EL1.LDm (and FT).
    LoadFilterMask,
    /// `store_filter`: PMSFCR_EL1.ST (and FT).
    StoreFilter,
    /// `store_filter_mask` (Linux 7.3, FEAT_SPE_EFT): PMSFCR_EL1.STm (and FT).
    StoreFilterMask,
    /// `simd_filter` (Linux 7.3, FEAT_SPE_EFT): PMSFCR_EL1.SIMD (and FT).
    SimdFilter,
    /// `simd_filter_mask` (Linux 7.3, FEAT_SPE_EFT): PMSFCR_EL1.SIMDm (and FT).
    SimdFilterMask,
    /// `float_filter` (Linux 7.3, FEAT_SPE_EFT): PMSFCR_EL1.FP (and FT).
    FloatFilter,
    /// `float_filter_mask` (Linux 7.3, FEAT_SPE_EFT): PMSFCR_EL1.FPm (and FT).
    FloatFilterMask,
    /// `event_filter`: PMSEVFR_EL1 (and FE when non-zero).
    EventFilter,
    /// `inv_event_filter`: PMSNEVFR_EL1 (and FnE when non-zero).
    InvEventFilter,
    /// `inv_data_src_filter` (Linux 7.3, FEAT_SPE_FDS): the complement of PMSDSFR_EL1 (and
    /// FDS when non-zero), so that 0 keeps every data source.
    InvDataSrcFilter,
    /// `min_latency`: PMSLATFR_EL1.MINLAT (and FL when non-zero).
    MinLatency,
    /// `discard` (Linux 7.3, FEAT_SPEv1p2): PMBLIMITR_EL1.FM = DISCARD, no records kept.
    Discard,
}

impl PerfField {
    /// Every field, in the order of Linux 7.3's `arm_spe_pmu_formats_attr[]` (the event
    /// string's order).
    pub const ALL: [Self; FIELDS] = [
        Self::TsEnable,
        Self::PaEnable,
        Self::PctEnable,
        Self::Jitter,
        Self::BranchFilter,
        Self::BranchFilterMask,
        Self::LoadFilter,
        Self::LoadFilterMask,
        Self::StoreFilter,
        Self::StoreFilterMask,
        Self::SimdFilter,
        Self::SimdFilterMask,
        Self::FloatFilter,
        Self::FloatFilterMask,
        Self::EventFilter,
        Self::InvEventFilter,
        Self::InvDataSrcFilter,
        Self::MinLatency,
        Self::Discard,
    ];

    /// The type-filter fields FEAT_SPE_EFT adds (Linux 7.3 publishes them only on a PE with
    /// PMSIDR_EL1.EFT and refuses them without it).
    pub const EXTENDED_TYPE: [Self; 7] = [
        Self::BranchFilterMask,
        Self::LoadFilterMask,
        Self::StoreFilterMask,
        Self::SimdFilter,
        Self::SimdFilterMask,
        Self::FloatFilter,
        Self::FloatFilterMask,
    ];

    /// The sysfs/event-string name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::TsEnable => "ts_enable",
            Self::PaEnable => "pa_enable",
            Self::PctEnable => "pct_enable",
            Self::Jitter => "jitter",
            Self::BranchFilter => "branch_filter",
            Self::BranchFilterMask => "branch_filter_mask",
            Self::LoadFilter => "load_filter",
            Self::LoadFilterMask => "load_filter_mask",
            Self::StoreFilter => "store_filter",
            Self::StoreFilterMask => "store_filter_mask",
            Self::SimdFilter => "simd_filter",
            Self::SimdFilterMask => "simd_filter_mask",
            Self::FloatFilter => "float_filter",
            Self::FloatFilterMask => "float_filter_mask",
            Self::EventFilter => "event_filter",
            Self::InvEventFilter => "inv_event_filter",
            Self::InvDataSrcFilter => "inv_data_src_filter",
            Self::MinLatency => "min_latency",
            Self::Discard => "discard",
        }
    }

    /// The field with sysfs name `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    const fn index(self) -> usize {
        self as usize
    }

    /// Whether the event string shows the value in hex (masks) rather than decimal.
    pub const fn is_mask(self) -> bool {
        matches!(
            self,
            Self::EventFilter | Self::InvEventFilter | Self::InvDataSrcFilter
        )
    }
}

/// How many format fields this crate knows ([`PerfField::ALL`]).
const FIELDS: usize = 19;

/// Where one field lives: bits `lo..=hi` of a config word (`config1:0-63`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FormatField {
    /// The config word.
    pub word: ConfigWord,
    /// Lowest bit.
    pub lo: u8,
    /// Highest bit.
    pub hi: u8,
}

impl FormatField {
    const fn new(word: ConfigWord, lo: u8, hi: u8) -> Self {
        Self { word, lo, hi }
    }

    /// Parses a sysfs format entry: `config:0`, `config1:0-63`, with an optional trailing
    /// newline. `None` for anything else (including the multi-range `a-b,c` form, which no
    /// `arm_spe` field uses).
    pub fn parse(text: &str) -> Option<Self> {
        let (word, bits) = text.trim().split_once(':')?;
        let word = ConfigWord::parse(word)?;
        let (lo, hi) = match bits.split_once('-') {
            Some((lo, hi)) => (lo.parse::<u8>().ok()?, hi.parse::<u8>().ok()?),
            None => {
                let bit = bits.parse::<u8>().ok()?;
                (bit, bit)
            }
        };
        (lo <= hi && hi < 64).then_some(Self { word, lo, hi })
    }

    /// The largest value the field holds.
    pub const fn max_value(&self) -> u64 {
        let width = self.hi - self.lo + 1;
        if width >= 64 {
            u64::MAX
        } else {
            (1 << width) - 1
        }
    }

    /// The field's value in `attr`.
    pub fn extract(&self, attr: &PerfEventAttr) -> u64 {
        (attr.word(self.word) >> self.lo) & self.max_value()
    }

    fn insert(&self, attr: &mut PerfEventAttr, value: u64) {
        let word = attr.word_mut(self.word);
        *word = (*word & !(self.max_value() << self.lo)) | ((value & self.max_value()) << self.lo);
    }
}

impl fmt::Display for FormatField {
    /// The sysfs spelling (`config:0`, `config1:0-63`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.lo == self.hi {
            write!(f, "{}:{}", self.word.name(), self.lo)
        } else {
            write!(f, "{}:{}-{}", self.word.name(), self.lo, self.hi)
        }
    }
}

/// The format of the `arm_spe` PMU: where each field lives, or that the kernel lacks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PerfFormat {
    fields: [Option<FormatField>; FIELDS],
}

impl PerfFormat {
    /// The layout Linux 6.12 documents (`ATTR_CFG_FLD_*` in drivers/perf/arm_spe_pmu.c), with
    /// every field present.
    pub const fn linux_6_12() -> Self {
        use ConfigWord::*;
        Self::empty()
            .with(PerfField::TsEnable, FormatField::new(Config, 0, 0))
            .with(PerfField::PaEnable, FormatField::new(Config, 1, 1))
            .with(PerfField::PctEnable, FormatField::new(Config, 2, 2))
            .with(PerfField::Jitter, FormatField::new(Config, 16, 16))
            .with(PerfField::BranchFilter, FormatField::new(Config, 32, 32))
            .with(PerfField::LoadFilter, FormatField::new(Config, 33, 33))
            .with(PerfField::StoreFilter, FormatField::new(Config, 34, 34))
            .with(PerfField::EventFilter, FormatField::new(Config1, 0, 63))
            .with(PerfField::InvEventFilter, FormatField::new(Config3, 0, 63))
            .with(PerfField::MinLatency, FormatField::new(Config2, 0, 11))
    }

    /// The layout Linux 7.3 documents (drivers/perf/arm_spe_pmu.c of Linux 7.3.4): 6.12's,
    /// plus `discard` (`config:35`), the FEAT_SPE_EFT type filters in `config:36-42`
    /// (`branch_filter_mask` 36, `load_filter_mask` 37, `store_filter_mask` 38,
    /// `simd_filter` 39, `simd_filter_mask` 40, `float_filter` 41, `float_filter_mask` 42)
    /// and `inv_data_src_filter` (`config4:0-63`), every field present.
    pub const fn linux_7_3() -> Self {
        use ConfigWord::*;
        Self::linux_6_12()
            .with(PerfField::Discard, FormatField::new(Config, 35, 35))
            .with(
                PerfField::BranchFilterMask,
                FormatField::new(Config, 36, 36),
            )
            .with(PerfField::LoadFilterMask, FormatField::new(Config, 37, 37))
            .with(PerfField::StoreFilterMask, FormatField::new(Config, 38, 38))
            .with(PerfField::SimdFilter, FormatField::new(Config, 39, 39))
            .with(PerfField::SimdFilterMask, FormatField::new(Config, 40, 40))
            .with(PerfField::FloatFilter, FormatField::new(Config, 41, 41))
            .with(PerfField::FloatFilterMask, FormatField::new(Config, 42, 42))
            .with(
                PerfField::InvDataSrcFilter,
                FormatField::new(Config4, 0, 63),
            )
    }

    /// This format with `field` at `format`.
    pub const fn with(mut self, field: PerfField, format: FormatField) -> Self {
        self.fields[field.index()] = Some(format);
        self
    }

    /// This format without `field` (as a kernel that hides it in sysfs publishes it).
    pub const fn without(mut self, field: PerfField) -> Self {
        self.fields[field.index()] = None;
        self
    }

    /// A format with no field: fill it with [`Self::set`].
    pub const fn empty() -> Self {
        Self {
            fields: [None; FIELDS],
        }
    }

    /// Where `field` lives, if the kernel has it.
    pub const fn field(&self, field: PerfField) -> Option<FormatField> {
        self.fields[field.index()]
    }

    /// Sets where `field` lives.
    pub fn set(&mut self, field: PerfField, format: FormatField) {
        self.fields[field.index()] = Some(format);
    }

    /// Builds a format from sysfs entries (file name, file content), e.g. the files of
    /// `/sys/bus/event_source/devices/arm_spe_0/format/`. Names this crate does not know are
    /// skipped (newer kernels add fields); a known name whose content does not parse is
    /// [`SpeError::PerfFormatInvalid`]. Fields without an entry stay absent: Linux hides
    /// `inv_event_filter` on PEs without FEAT_SPE_FnE.
    pub fn from_entries<'a, I>(entries: I) -> Result<Self, SpeError>
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        let mut format = Self::empty();
        for (name, text) in entries {
            if let Some(field) = PerfField::from_name(name.trim()) {
                let parsed =
                    FormatField::parse(text).ok_or(SpeError::PerfFormatInvalid { field })?;
                format.set(field, parsed);
            }
        }
        Ok(format)
    }

    /// Fields present, with where they live.
    pub fn iter(&self) -> impl Iterator<Item = (PerfField, FormatField)> + '_ {
        PerfField::ALL
            .into_iter()
            .filter_map(|f| self.field(f).map(|ff| (f, ff)))
    }
}

/// The parts of `struct perf_event_attr` the `arm_spe` PMU reads.
///
/// Serialized (feature `serde`) as its fields, the config words in hex.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PerfEventAttr {
    /// `attr.config`.
    #[cfg_attr(feature = "serde", serde(with = "crate::spe::serialize::hex"))]
    pub config: u64,
    /// `attr.config1`.
    #[cfg_attr(feature = "serde", serde(with = "crate::spe::serialize::hex"))]
    pub config1: u64,
    /// `attr.config2`.
    #[cfg_attr(feature = "serde", serde(with = "crate::spe::serialize::hex"))]
    pub config2: u64,
    /// `attr.config3`.
    #[cfg_attr(feature = "serde", serde(with = "crate::spe::serialize::hex"))]
    pub config3: u64,
    /// `attr.config4` (Linux 7.3's `inv_data_src_filter`).
    #[cfg_attr(feature = "serde", serde(with = "crate::spe::serialize::hex"))]
    pub config4: u64,
    /// `attr.sample_period`: the sampling interval.
    pub sample_period: u64,
    /// `attr.exclude_user`: do not sample EL0.
    pub exclude_user: bool,
    /// `attr.exclude_kernel`: do not sample EL1.
    pub exclude_kernel: bool,
}

impl PerfEventAttr {
    /// The value of one config word.
    pub const fn word(&self, word: ConfigWord) -> u64 {
        match word {
            ConfigWord::Config => self.config,
            ConfigWord::Config1 => self.config1,
            ConfigWord::Config2 => self.config2,
            ConfigWord::Config3 => self.config3,
            ConfigWord::Config4 => self.config4,
        }
    }

    fn word_mut(&mut self, word: ConfigWord) -> &mut u64 {
        match word {
            ConfigWord::Config => &mut self.config,
            ConfigWord::Config1 => &mut self.config1,
            ConfigWord::Config2 => &mut self.config2,
            ConfigWord::Config3 => &mut self.config3,
            ConfigWord::Config4 => &mut self.config4,
        }
    }
}

/// A configuration as an `arm_spe` perf event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PerfSpeEvent {
    attr: PerfEventAttr,
    format: PerfFormat,
    warnings: [Option<SpeWarning>; 4],
}

impl PerfSpeEvent {
    /// The attribute fields to pass to `perf_event_open` (with `attr.type` from
    /// `/sys/bus/event_source/devices/arm_spe_0/type`).
    pub const fn attr(&self) -> &PerfEventAttr {
        &self.attr
    }

    /// The non-zero format terms, in the kernel's field order.
    pub fn terms(&self) -> impl Iterator<Item = (PerfField, u64)> + '_ {
        self.format
            .iter()
            .map(|(field, format)| (field, format.extract(&self.attr)))
            .filter(|&(_, value)| value != 0)
    }

    /// The perf event modifier for the Exception levels: `u` (EL0 only), `k` (EL1 only) or
    /// none (both).
    pub const fn modifier(&self) -> Option<&'static str> {
        match (self.attr.exclude_user, self.attr.exclude_kernel) {
            (false, true) => Some("u"),
            (true, false) => Some("k"),
            _ => None,
        }
    }

    /// What perf cannot express exactly, or needs permission for.
    pub fn warnings(&self) -> impl Iterator<Item = &SpeWarning> {
        self.warnings.iter().flatten()
    }

    /// Writes the `perf record -e` event string for the PMU instance `pmu` (`arm_spe_0`):
    /// `arm_spe_0/load_filter=1,event_filter=0x200,min_latency=120,period=4096/u`.
    pub fn write_event_string<W: fmt::Write>(&self, pmu: &str, out: &mut W) -> fmt::Result {
        write!(out, "{pmu}/")?;
        for (field, value) in self.terms() {
            if field.is_mask() {
                write!(out, "{}={value:#x},", field.name())?;
            } else {
                write!(out, "{}={value},", field.name())?;
            }
        }
        write!(out, "period={}/", self.attr.sample_period)?;
        if let Some(modifier) = self.modifier() {
            out.write_str(modifier)?;
        }
        Ok(())
    }

    /// [`Self::write_event_string`] as a `Display` value.
    pub fn event_string<'a>(&'a self, pmu: &'a str) -> impl fmt::Display + 'a {
        EventString { event: self, pmu }
    }
}

struct EventString<'a> {
    event: &'a PerfSpeEvent,
    pmu: &'a str,
}

impl fmt::Display for EventString<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.event.write_event_string(self.pmu, f)
    }
}

/// Linux 6.12 `PMSEVFR_EL1_RES0_IMP` (arch/arm64/include/asm/sysreg.h): the `event_filter`
/// and `inv_event_filter` bits the `arm_spe` driver refuses on FEAT_SPE (PMSVer 1).
/// `tests/spe_kernel_source.rs` evaluates the kernel's own definitions and compares.
pub const LINUX_6_12_PMSEVFR_RES0_IMP: u64 =
    (0xFFFF << 32) | (0xFF << 16) | (0xF << 8) | (1 << 6) | (1 << 4) | (1 << 2) | 1;
/// Linux 6.12 `PMSEVFR_EL1_RES0_V1P1`: `RES0_IMP` without bits 11, 17, 18 (FEAT_SPEv1p1).
pub const LINUX_6_12_PMSEVFR_RES0_V1P1: u64 =
    LINUX_6_12_PMSEVFR_RES0_IMP & !((1 << 18) | (1 << 17) | (1 << 11));
/// Linux 6.12 `PMSEVFR_EL1_RES0_V1P2`: `RES0_V1P1` without bit 6 (FEAT_SPEv1p2). The driver
/// uses it for every version from v1p2 on, so events 2, 4, 8-10, 16 and 19-23 stay refused on
/// FEAT_SPEv1p4, where the Arm ARM makes them filterable.
pub const LINUX_6_12_PMSEVFR_RES0_V1P2: u64 = LINUX_6_12_PMSEVFR_RES0_V1P1 & !(1 << 6);

/// The filter bits Linux 6.12 refuses for a PE with SPE `version`: a restatement of
/// `arm_spe_pmsevfr_res0()` in drivers/perf/arm_spe_pmu.c, which `arm_spe_pmu_event_init()`
/// applies to both `event_filter` and `inv_event_filter` (EOPNOTSUPP when a bit is set).
/// Linux 7.3 replaced the table with a probe ([`EventFilterRes0::ProbedReadBack`]).
pub const fn linux_6_12_pmsevfr_res0(version: SpeVersion) -> u64 {
    match version {
        SpeVersion::V1p0 => LINUX_6_12_PMSEVFR_RES0_IMP,
        SpeVersion::V1p1 => LINUX_6_12_PMSEVFR_RES0_V1P1,
        // "Return the highest version we support in default".
        _ => LINUX_6_12_PMSEVFR_RES0_V1P2,
    }
}

/// A Linux release whose `arm_spe` driver (drivers/perf/arm_spe_pmu.c) this crate restates.
/// A release is data: its rules ([`LinuxSpeDriver::rules`]), read by one validator
/// ([`event_init`]) and one model of what the driver programs ([`kernel_registers`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum LinuxSpeDriver {
    /// Linux 6.12 (Debian 13 and Raspberry Pi OS on it; Debian 12 backports).
    Linux6_12,
    /// Linux 7.3 (Debian 13 backports, 7.3.4): the FEAT_SPE_EFT and FEAT_SPE_FDS filters,
    /// `discard`, and event filters checked against a probe of PMSEVFR_EL1.
    Linux7_3,
}

impl LinuxSpeDriver {
    /// Every release this crate knows, oldest first.
    pub const ALL: [Self; 2] = [Self::Linux6_12, Self::Linux7_3];

    /// The newest release this crate knows.
    pub const NEWEST: Self = Self::Linux7_3;

    /// `6.12`, `7.3`.
    pub const fn version(self) -> &'static str {
        match self {
            Self::Linux6_12 => "6.12",
            Self::Linux7_3 => "7.3",
        }
    }

    /// The release named `6.12` or `7.3` (a `linux-` prefix is allowed).
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let text = text.strip_prefix("linux-").unwrap_or(text);
        Self::ALL.into_iter().find(|d| d.version() == text)
    }

    /// The release whose rules a running kernel follows, from its `uname -r` release string
    /// (`7.3.4+deb13-arm64`, `6.12.57+deb13-arm64`, `6.12.0-rc1`): its major.minor, when this
    /// crate knows it. `None` for any other release: the caller decides which rules to assume.
    pub fn for_release(release: &str) -> Option<Self> {
        let mut parts = release.trim().split(|c: char| !c.is_ascii_digit());
        let major = parts.next()?;
        let minor = parts.next()?;
        Self::ALL
            .into_iter()
            .find(|d| d.version().split_once('.') == Some((major, minor)))
    }

    /// This release's rules.
    pub const fn rules(self) -> DriverRules {
        match self {
            Self::Linux6_12 => DriverRules {
                driver: self,
                format: PerfFormat::linux_6_12(),
                event_filter_res0: EventFilterRes0::PerVersionTable,
                period_floor: PeriodFloor::MinimumInterval,
            },
            Self::Linux7_3 => DriverRules {
                driver: self,
                format: PerfFormat::linux_7_3(),
                event_filter_res0: EventFilterRes0::ProbedReadBack,
                period_floor: PeriodFloor::OneIntervalUnit,
            },
        }
    }
}

impl fmt::Display for LinuxSpeDriver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Linux {}", self.version())
    }
}

/// Which `event_filter`/`inv_event_filter` bits a driver refuses (EOPNOTSUPP).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventFilterRes0 {
    /// Linux 6.12: a fixed mask per PMSVer ([`linux_6_12_pmsevfr_res0`]).
    PerVersionTable,
    /// Linux 7.3: `__arm_spe_pmu_dev_probe()` writes all ones to PMSEVFR_EL1 and reads back;
    /// the bits that read 0 (RAZ/WI: not filterable on this PE) are refused, for both
    /// filters. The kernel publishes the bits that read 1 as `caps/event_filter`.
    ProbedReadBack,
}

/// What a driver raises a too-short `period` to (`arm_spe_event_sanitise_period()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PeriodFloor {
    /// Linux 6.12: the PE's minimum interval (PMSIDR_EL1.Interval, `caps/min_interval`).
    MinimumInterval,
    /// Linux 7.3: 256, one unit of PMSIRR_EL1.INTERVAL (PMSIDR_EL1.Interval is a
    /// recommendation, not a limit, says its comment).
    OneIntervalUnit,
}

/// The rules of one release's `arm_spe` driver, as data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DriverRules {
    /// The release.
    pub driver: LinuxSpeDriver,
    /// Every field its `ATTR_CFG_FLD_*` defines (what `ATTR_CFG_GET_FLD` reads, published or
    /// not).
    pub format: PerfFormat,
    /// How it decides which event filter bits to refuse.
    pub event_filter_res0: EventFilterRes0,
    /// What it raises short periods to.
    pub period_floor: PeriodFloor,
}

impl DriverRules {
    /// The format the driver publishes in sysfs on a PE with `caps`
    /// (`arm_spe_pmu_format_attr_is_visible()`): [`Self::format`] without the fields whose
    /// [`PerfField::needs`] the PE lacks.
    pub fn published_format(&self, caps: &SpeCapabilities) -> PerfFormat {
        let mut format = self.format;
        for field in PerfField::ALL {
            if !field.needs().is_met(caps) {
                format = format.without(field);
            }
        }
        format
    }

    /// The `event_filter`/`inv_event_filter` bits the driver refuses on a PE with SPE
    /// `version`. For [`EventFilterRes0::ProbedReadBack`], `read_back` is what PMSEVFR_EL1
    /// read after the driver wrote all ones (the kernel's `caps/event_filter`); without it,
    /// the events the Arm ARM makes filterable at `version` are taken as reading 1 and every
    /// optional one (IMPLEMENTATION DEFINED events, and before FEAT_SPEv1p4 the cache and TLB
    /// access events) as reading 0, so an event the PE may not filter goes to the post filter
    /// ([`perf_event_with_post_filter`]) rather than to a `perf_event_open` that may fail.
    pub fn pmsevfr_res0(&self, version: SpeVersion, read_back: Option<u64>) -> u64 {
        match self.event_filter_res0 {
            EventFilterRes0::PerVersionTable => linux_6_12_pmsevfr_res0(version),
            EventFilterRes0::ProbedReadBack => {
                !read_back.unwrap_or(version.architected_filter_events().bits())
            }
        }
    }
}

/// What a PE needs for a driver to publish a format field and accept a non-zero value in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldNeeds {
    /// Nothing beyond SPE.
    Nothing,
    /// PMSIDR_EL1.FnE (FEAT_SPE_FnE): `inv_event_filter`.
    InvertedEventFilter,
    /// PMSIDR_EL1.EFT (FEAT_SPE_EFT): the SIMD/floating-point filters and the type masks.
    ExtendedTypeFilter,
    /// PMSIDR_EL1.FDS (FEAT_SPE_FDS): `inv_data_src_filter`.
    DataSourceFilter,
    /// ID_AA64DFR0_EL1.PMSVer at least FEAT_SPEv1p2: `discard` (Linux 7.3's
    /// `SPE_PMU_FEAT_DISCARD`).
    Version1p2,
}

impl FieldNeeds {
    /// Whether a PE with `caps` has it.
    pub fn is_met(self, caps: &SpeCapabilities) -> bool {
        match self {
            Self::Nothing => true,
            Self::InvertedEventFilter => caps.inverted_event_filter,
            Self::ExtendedTypeFilter => caps.extended_type_filter,
            Self::DataSourceFilter => caps.data_source_filter,
            Self::Version1p2 => caps.version.includes(SpeVersion::V1p2),
        }
    }
}

impl PerfField {
    /// What the PE needs for the driver to publish this field (Linux 6.12 and 7.3
    /// `arm_spe_pmu_format_attr_is_visible()`).
    pub const fn needs(self) -> FieldNeeds {
        match self {
            Self::InvEventFilter => FieldNeeds::InvertedEventFilter,
            Self::InvDataSrcFilter => FieldNeeds::DataSourceFilter,
            Self::Discard => FieldNeeds::Version1p2,
            Self::BranchFilterMask
            | Self::LoadFilterMask
            | Self::StoreFilterMask
            | Self::SimdFilter
            | Self::SimdFilterMask
            | Self::FloatFilter
            | Self::FloatFilterMask => FieldNeeds::ExtendedTypeFilter,
            _ => FieldNeeds::Nothing,
        }
    }
}

/// The kernel a perf event is for: its driver's rules, the format it publishes, and what its
/// probe found on the PE.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PerfTarget {
    /// The driver's rules.
    pub rules: DriverRules,
    /// The format it publishes (sysfs, or [`DriverRules::published_format`]).
    pub format: PerfFormat,
    /// The PE's capabilities.
    pub caps: SpeCapabilities,
    /// The event filter bits it refuses ([`DriverRules::pmsevfr_res0`]).
    pub pmsevfr_res0: u64,
}

impl PerfTarget {
    /// `driver` on a PE with `caps`, with the format it would publish there and its event
    /// filter rule without a read-back (see [`DriverRules::pmsevfr_res0`]).
    pub fn new(driver: LinuxSpeDriver, caps: &SpeCapabilities) -> Self {
        let rules = driver.rules();
        Self {
            rules,
            format: rules.published_format(caps),
            caps: *caps,
            pmsevfr_res0: rules.pmsevfr_res0(caps.version, None),
        }
    }

    /// The same target with the format the kernel publishes (read from sysfs).
    pub fn with_format(mut self, format: PerfFormat) -> Self {
        self.format = format;
        self
    }

    /// The same target with the PMSEVFR_EL1 read-back the kernel publishes
    /// (`caps/event_filter`, Linux 7.3); ignored by a driver with a per-version table.
    pub fn with_event_filter_read_back(mut self, read_back: u64) -> Self {
        self.pmsevfr_res0 = self.rules.pmsevfr_res0(self.caps.version, Some(read_back));
        self
    }
}

/// The part of an event filter perf cannot pass to the kernel, to apply to the decoded
/// records instead ([`perf_event_with_post_filter`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PostFilter {
    /// Keep only records with all of these events (moved out of `event_filter`).
    pub required: SpeEvents,
    /// Drop records with any of these events (moved out of `inv_event_filter`).
    pub excluded: SpeEvents,
}

impl PostFilter {
    /// Nothing to filter after decoding.
    pub const NONE: Self = Self {
        required: SpeEvents::empty(),
        excluded: SpeEvents::empty(),
    };

    /// Whether there is nothing left to filter after decoding.
    pub const fn is_empty(&self) -> bool {
        self.required.is_empty() && self.excluded.is_empty()
    }

    /// Whether a record with `events` (its Events packet; empty when it had none) passes, as
    /// the hardware filter would have decided (Arm ARM D17.6: FE needs every event, FnE
    /// drops on any).
    pub const fn keeps(&self, events: SpeEvents) -> bool {
        events.bits() & self.required.bits() == self.required.bits()
            && events.bits() & self.excluded.bits() == 0
    }
}

/// Whether the `target` kernel's driver accepts `attr` for its `arm_spe` PMU: a restatement
/// of `arm_spe_pmu_event_init()` in drivers/perf/arm_spe_pmu.c of the target's release, in
/// its order (the fields are read where the driver's `ATTR_CFG_FLD_*` put them, published or
/// not). `Ok` where it returns 0 or asks for kernel-profiling permission (PA, PCT: see
/// [`SpeWarning::PerfNeedsKernelPermission`]); otherwise the error for its EOPNOTSUPP:
/// - an `event_filter`/`inv_event_filter` bit in [`PerfTarget::pmsevfr_res0`]
///   ([`SpeError::PerfEventsRefused`]);
/// - Linux 7.3: a non-zero `inv_data_src_filter` without FEAT_SPE_FDS;
/// - a filter enable the PE lacks: FE, FnE, FT, FL, and from Linux 7.3 any FEAT_SPE_EFT bit
///   (Bm, LDm, STm, SIMD, SIMDm, FP, FPm) without PMSIDR_EL1.EFT
///   ([`SpeError::FilterNotImplemented`]);
/// - Linux 7.3: `discard` before FEAT_SPEv1p2 ([`SpeError::DiscardNotImplemented`]).
pub fn event_init(attr: &PerfEventAttr, target: &PerfTarget) -> Result<(), SpeError> {
    let rules = &target.rules;
    let caps = &target.caps;
    let get = |field| rules.format.field(field).map_or(0, |f| f.extract(attr));
    for field in [PerfField::EventFilter, PerfField::InvEventFilter] {
        let bits = get(field) & target.pmsevfr_res0;
        if bits != 0 {
            return Err(SpeError::PerfEventsRefused {
                field,
                version: caps.version,
                driver: rules.driver,
                bits,
            });
        }
    }
    if get(PerfField::InvDataSrcFilter) != 0 && !caps.data_source_filter {
        return Err(SpeError::FilterNotImplemented {
            filter: SpeFilter::DataSource,
        });
    }
    let fcr = super::PmsfcrEl1::new(kernel_pmsfcr(attr, rules));
    for (enable, implemented, filter) in [
        (PMSFCR_EL1::FE, caps.filter_by_event, SpeFilter::Event),
        (
            PMSFCR_EL1::FnE,
            caps.inverted_event_filter,
            SpeFilter::InvertedEvent,
        ),
        (PMSFCR_EL1::FT, caps.filter_by_type, SpeFilter::Type),
        (PMSFCR_EL1::FL, caps.filter_by_latency, SpeFilter::Latency),
    ] {
        if fcr.is_set(enable) && !implemented {
            return Err(SpeError::FilterNotImplemented { filter });
        }
    }
    if fcr.get() & EXTENDED_TYPE_BITS != 0 && !caps.extended_type_filter {
        return Err(SpeError::FilterNotImplemented {
            filter: SpeFilter::ExtendedType,
        });
    }
    if get(PerfField::Discard) != 0 && !FieldNeeds::Version1p2.is_met(caps) {
        return Err(SpeError::DiscardNotImplemented {
            version: caps.version,
        });
    }
    Ok(())
}

use super::model::EXTENDED_TYPE_BITS;

/// `config` as an `arm_spe` perf event for `target`, under its driver's rules.
///
/// Errors: event filter bits the kernel refuses ([`SpeError::PerfEventsRefused`], see
/// [`DriverRules::pmsevfr_res0`]; use [`perf_event_with_post_filter`] to record more and
/// filter after decoding), a setting whose field the kernel does not publish
/// ([`SpeError::PerfFieldUnavailable`], e.g. excluded events without `inv_event_filter`, or a
/// SIMD type filter on Linux 6.12), a value wider than its field
/// ([`SpeError::PerfFieldTooWide`]: `min_latency` is 12 bits even on PEs with 16-bit
/// counters), or anything else [`event_init`] refuses. Warnings: context (CX) cannot be
/// requested; physical addresses and physical timestamps need kernel-profiling permission.
pub fn perf_event(config: &SpeConfig, target: &PerfTarget) -> Result<PerfSpeEvent, SpeError> {
    let registers = config.registers();
    for (field, mask) in [
        (PerfField::EventFilter, registers.pmsevfr),
        (PerfField::InvEventFilter, registers.pmsnevfr.unwrap_or(0)),
    ] {
        if mask & target.pmsevfr_res0 != 0 {
            return Err(SpeError::PerfEventsRefused {
                field,
                version: config.version(),
                driver: target.rules.driver,
                bits: mask & target.pmsevfr_res0,
            });
        }
    }
    encode(config, target, 0)
}

/// Like [`perf_event`], but the event filter bits the kernel refuses are left out of the perf
/// event and returned as a [`PostFilter`] to apply to the decoded records: the kernel records a
/// superset, and the post filter keeps exactly what the registers would have kept (the other
/// filters, type and latency, stay in the hardware). The post filter is empty when perf can
/// express the whole configuration.
pub fn perf_event_with_post_filter(
    config: &SpeConfig,
    target: &PerfTarget,
) -> Result<(PerfSpeEvent, PostFilter), SpeError> {
    let registers = config.registers();
    let res0 = target.pmsevfr_res0;
    let post = PostFilter {
        required: SpeEvents::from_bits_retain(registers.pmsevfr & res0),
        excluded: SpeEvents::from_bits_retain(registers.pmsnevfr.unwrap_or(0) & res0),
    };
    Ok((encode(config, target, res0)?, post))
}

/// The event of `config` with the bits in `drop` cleared from both event masks, checked by
/// [`event_init`].
fn encode(config: &SpeConfig, target: &PerfTarget, drop: u64) -> Result<PerfSpeEvent, SpeError> {
    let format = &target.format;
    let request = config.request();
    let registers = config.registers();
    let mut attr = PerfEventAttr {
        sample_period: u64::from(config.interval()),
        exclude_user: !request.exception_levels.contains(ExceptionLevels::EL0),
        exclude_kernel: !request.exception_levels.contains(ExceptionLevels::EL1),
        ..PerfEventAttr::default()
    };
    let fcr = super::PmsfcrEl1::new(registers.pmsfcr);
    let scr = super::PmscrEl1::new(registers.pmscr);
    let flag = |b: bool| u64::from(b);
    let values = [
        (PerfField::TsEnable, flag(scr.is_set(PMSCR_EL1::TS))),
        (PerfField::PaEnable, flag(scr.is_set(PMSCR_EL1::PA))),
        (
            PerfField::PctEnable,
            flag(request.timestamps == Some(TimestampSource::Physical)),
        ),
        (PerfField::Jitter, flag(request.jitter)),
        (PerfField::BranchFilter, flag(fcr.is_set(PMSFCR_EL1::B))),
        (
            PerfField::BranchFilterMask,
            flag(fcr.is_set(PMSFCR_EL1::Bm)),
        ),
        (PerfField::LoadFilter, flag(fcr.is_set(PMSFCR_EL1::LD))),
        (PerfField::LoadFilterMask, flag(fcr.is_set(PMSFCR_EL1::LDm))),
        (PerfField::StoreFilter, flag(fcr.is_set(PMSFCR_EL1::ST))),
        (
            PerfField::StoreFilterMask,
            flag(fcr.is_set(PMSFCR_EL1::STm)),
        ),
        (PerfField::SimdFilter, flag(fcr.is_set(PMSFCR_EL1::SIMD))),
        (
            PerfField::SimdFilterMask,
            flag(fcr.is_set(PMSFCR_EL1::SIMDm)),
        ),
        (PerfField::FloatFilter, flag(fcr.is_set(PMSFCR_EL1::FP))),
        (
            PerfField::FloatFilterMask,
            flag(fcr.is_set(PMSFCR_EL1::FPm)),
        ),
        (PerfField::EventFilter, registers.pmsevfr & !drop),
        (
            PerfField::InvEventFilter,
            registers.pmsnevfr.unwrap_or(0) & !drop,
        ),
        (
            PerfField::InvDataSrcFilter,
            if fcr.is_set(PMSFCR_EL1::FDS) {
                !registers.pmsdsfr.unwrap_or(u64::MAX)
            } else {
                0
            },
        ),
        (
            PerfField::MinLatency,
            if fcr.is_set(PMSFCR_EL1::FL) {
                registers.pmslatfr
            } else {
                0
            },
        ),
    ];
    for (field, value) in values {
        if value == 0 {
            continue;
        }
        let place = format
            .field(field)
            .ok_or(SpeError::PerfFieldUnavailable { field })?;
        if value > place.max_value() {
            return Err(SpeError::PerfFieldTooWide {
                field,
                value,
                max: place.max_value(),
            });
        }
        place.insert(&mut attr, value);
    }
    event_init(&attr, target)?;
    let mut warnings = [None; 4];
    let mut n = 0;
    let mut warn = |w| {
        if let Some(slot) = warnings.get_mut(n) {
            *slot = Some(w);
            n += 1;
        }
    };
    if request.context {
        warn(SpeWarning::PerfContextNotSelectable);
    }
    if request.physical_addresses {
        warn(SpeWarning::PerfNeedsKernelPermission {
            field: PerfField::PaEnable,
        });
    }
    if request.timestamps == Some(TimestampSource::Physical) {
        warn(SpeWarning::PerfNeedsKernelPermission {
            field: PerfField::PctEnable,
        });
    }
    Ok(PerfSpeEvent {
        attr,
        format: *format,
        warnings,
    })
}

/// PMSFCR_EL1 as the driver of `rules` computes it for `attr` (`arm_spe_event_to_pmsfcr()`):
/// each type bit and mask from its field, FT when any of them is set, FE/FnE/FDS/FL when
/// their filter is non-zero.
fn kernel_pmsfcr(attr: &PerfEventAttr, rules: &DriverRules) -> u64 {
    let get = |field| rules.format.field(field).map_or(0, |f| f.extract(attr));
    let mut pmsfcr = 0;
    for (field, bit) in [
        (PerfField::LoadFilter, PMSFCR_EL1::LD::SET),
        (PerfField::LoadFilterMask, PMSFCR_EL1::LDm::SET),
        (PerfField::StoreFilter, PMSFCR_EL1::ST::SET),
        (PerfField::StoreFilterMask, PMSFCR_EL1::STm::SET),
        (PerfField::BranchFilter, PMSFCR_EL1::B::SET),
        (PerfField::BranchFilterMask, PMSFCR_EL1::Bm::SET),
        (PerfField::SimdFilter, PMSFCR_EL1::SIMD::SET),
        (PerfField::SimdFilterMask, PMSFCR_EL1::SIMDm::SET),
        (PerfField::FloatFilter, PMSFCR_EL1::FP::SET),
        (PerfField::FloatFilterMask, PMSFCR_EL1::FPm::SET),
    ] {
        if get(field) != 0 {
            pmsfcr |= bit.value;
        }
    }
    if pmsfcr != 0 {
        pmsfcr |= PMSFCR_EL1::FT::SET.value;
    }
    for (field, bit) in [
        (PerfField::EventFilter, PMSFCR_EL1::FE::SET),
        (PerfField::InvEventFilter, PMSFCR_EL1::FnE::SET),
        (PerfField::InvDataSrcFilter, PMSFCR_EL1::FDS::SET),
        (PerfField::MinLatency, PMSFCR_EL1::FL::SET),
    ] {
        if get(field) != 0 {
            pmsfcr |= bit.value;
        }
    }
    pmsfcr
}

/// What the `arm_spe_pmu.c` of `rules` programs for `attr`: a restatement of
/// `arm_spe_event_to_pmscr/pmsfcr/pmsevfr/pmsnevfr/pmsdsfr/pmslatfr/pmsirr()` (the filter
/// enables are set when their fields are non-zero; FT when any type bit or mask is), reading
/// each field where the driver's `ATTR_CFG_FLD_*` put it. `has_inverted_filter`: the PE has
/// FEAT_SPE_FnE (the driver writes PMSNEVFR_EL1 only then); `data_source_filter`: the PE has
/// FEAT_SPE_FDS (Linux 7.3 writes PMSDSFR_EL1, the complement of `inv_data_src_filter`, only
/// then); `context`: the kernel's `get_spe_event_has_cx()` (perfmon-capable user,
/// CONFIG_PID_IN_CONTEXTIDR); `min_period`: the PMU's minimum interval, which Linux 6.12
/// raises shorter periods to (Linux 7.3 raises them to 256 only, [`PeriodFloor`]).
/// PMSICR_EL1 is left 0. `discard` changes the buffer (PMBLIMITR_EL1.FM), not these
/// registers: see [`kernel_discards`].
pub fn kernel_registers(
    attr: &PerfEventAttr,
    rules: &DriverRules,
    has_inverted_filter: bool,
    data_source_filter: bool,
    context: bool,
    min_period: u32,
) -> SpeRegisterValues {
    let get = |field| rules.format.field(field).map_or(0, |f| f.extract(attr));
    let mut pmscr = 0;
    if get(PerfField::TsEnable) != 0 {
        pmscr |= PMSCR_EL1::TS::SET.value;
    }
    if get(PerfField::PaEnable) != 0 {
        pmscr |= PMSCR_EL1::PA::SET.value;
    }
    if get(PerfField::PctEnable) != 0 {
        pmscr |= PMSCR_EL1::PCT::Physical.value;
    }
    if !attr.exclude_user {
        pmscr |= PMSCR_EL1::E0SPE::SET.value;
    }
    if !attr.exclude_kernel {
        pmscr |= PMSCR_EL1::E1SPE::SET.value;
    }
    if context {
        pmscr |= PMSCR_EL1::CX::SET.value;
    }
    // arm_spe_event_sanitise_period(): clamp to [floor, INTERVAL mask], then mask.
    const INTERVAL_MASK: u64 = 0xFFFF_FF00;
    let floor = match rules.period_floor {
        PeriodFloor::MinimumInterval => u64::from(min_period),
        PeriodFloor::OneIntervalUnit => 256,
    };
    let period = attr.sample_period.clamp(floor, INTERVAL_MASK) & INTERVAL_MASK;
    SpeRegisterValues {
        pmscr,
        pmsfcr: kernel_pmsfcr(attr, rules),
        pmsevfr: get(PerfField::EventFilter),
        pmsnevfr: has_inverted_filter.then_some(get(PerfField::InvEventFilter)),
        pmsdsfr: (data_source_filter && rules.format.field(PerfField::InvDataSrcFilter).is_some())
            .then_some(!get(PerfField::InvDataSrcFilter)),
        pmslatfr: get(PerfField::MinLatency) & 0xFFFF,
        pmsirr: period | (get(PerfField::Jitter) & 1),
        pmsicr: 0,
    }
}

/// Whether the driver of `rules` runs `attr` in discard mode (Linux 7.3
/// `arm_spe_perf_aux_output_begin()`: PMBLIMITR_EL1.FM = DISCARD with E set, no buffer):
/// sampling runs and feeds the PMU's SAMPLE_* events, but no record is kept.
pub fn kernel_discards(attr: &PerfEventAttr, rules: &DriverRules) -> bool {
    rules
        .format
        .field(PerfField::Discard)
        .is_some_and(|f| f.extract(attr) != 0)
}

#[cfg(test)]
mod tests;
