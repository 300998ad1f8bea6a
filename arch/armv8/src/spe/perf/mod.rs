//! The Linux perf bridge: a [`SpeConfig`] as the `arm_spe` PMU's perf event (`attr.config`,
//! `config1`, `config2`, `config3`, `sample_period`, `exclude_user/kernel`) and as a
//! `perf record -e arm_spe_0/…/` event string.
//!
//! The bit layout comes from a [`PerfFormat`]: the one the running kernel publishes in
//! `/sys/bus/event_source/devices/arm_spe*/format/` when there is one (parse the files with
//! [`PerfFormat::from_entries`], or with `sysfs` under the `std` feature), and otherwise
//! the documented layout of Linux 6.12 ([`PerfFormat::linux_6_12`]):
//!
//! | field | format | register |
//! |---|---|---|
//! | `ts_enable` | `config:0` | PMSCR_EL1.TS |
//! | `pa_enable` | `config:1` | PMSCR_EL1.PA |
//! | `pct_enable` | `config:2` | PMSCR_EL1.PCT |
//! | `jitter` | `config:16` | PMSIRR_EL1.RND |
//! | `branch_filter` | `config:32` | PMSFCR_EL1.B |
//! | `load_filter` | `config:33` | PMSFCR_EL1.LD |
//! | `store_filter` | `config:34` | PMSFCR_EL1.ST |
//! | `event_filter` | `config1:0-63` | PMSEVFR_EL1 |
//! | `min_latency` | `config2:0-11` | PMSLATFR_EL1.MINLAT |
//! | `inv_event_filter` | `config3:0-63` | PMSNEVFR_EL1 |
//!
//! (`ATTR_CFG_FLD_*` in drivers/perf/arm_spe_pmu.c; the test in `tests/spe_kernel_source.rs`
//! reads them from the installed kernel source and compares.) The interval is perf's
//! `period=` term (`attr.sample_period`), the Exception levels its `u`/`k` modifiers.
//!
//! [`kernel_registers`] restates what `arm_spe_pmu.c` programs for an attribute
//! (`arm_spe_event_to_pmsfcr()` and friends), so a test can show that a configuration and
//! its perf event program the same registers.

#[cfg(feature = "std")]
pub mod sysfs;

use core::fmt;

use super::config::{ExceptionLevels, SpeConfig, TimestampSource};
use super::error::{SpeError, SpeWarning};
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
}

impl ConfigWord {
    /// The name used in sysfs format files (`config`, `config1`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Self::Config => "config",
            Self::Config1 => "config1",
            Self::Config2 => "config2",
            Self::Config3 => "config3",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "config" => Self::Config,
            "config1" => Self::Config1,
            "config2" => Self::Config2,
            "config3" => Self::Config3,
            _ => return None,
        })
    }
}

/// A format field the `arm_spe` PMU defines.
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
    /// `load_filter`: PMSFCR_EL1.LD (and FT).
    LoadFilter,
    /// `store_filter`: PMSFCR_EL1.ST (and FT).
    StoreFilter,
    /// `event_filter`: PMSEVFR_EL1 (and FE when non-zero).
    EventFilter,
    /// `inv_event_filter`: PMSNEVFR_EL1 (and FnE when non-zero).
    InvEventFilter,
    /// `min_latency`: PMSLATFR_EL1.MINLAT (and FL when non-zero).
    MinLatency,
}

impl PerfField {
    /// Every field, in the order of `arm_spe_pmu_formats_attr[]` (the event string's order).
    pub const ALL: [Self; 10] = [
        Self::TsEnable,
        Self::PaEnable,
        Self::PctEnable,
        Self::Jitter,
        Self::BranchFilter,
        Self::LoadFilter,
        Self::StoreFilter,
        Self::EventFilter,
        Self::InvEventFilter,
        Self::MinLatency,
    ];

    /// The sysfs/event-string name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::TsEnable => "ts_enable",
            Self::PaEnable => "pa_enable",
            Self::PctEnable => "pct_enable",
            Self::Jitter => "jitter",
            Self::BranchFilter => "branch_filter",
            Self::LoadFilter => "load_filter",
            Self::StoreFilter => "store_filter",
            Self::EventFilter => "event_filter",
            Self::InvEventFilter => "inv_event_filter",
            Self::MinLatency => "min_latency",
        }
    }

    /// The field with sysfs name `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    const fn index(self) -> usize {
        self as usize
    }

    /// Whether the event string shows the value in hex (event masks) rather than decimal.
    const fn is_mask(self) -> bool {
        matches!(self, Self::EventFilter | Self::InvEventFilter)
    }
}

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
    fields: [Option<FormatField>; 10],
}

impl PerfFormat {
    /// The layout Linux 6.12 documents (`ATTR_CFG_FLD_*` in drivers/perf/arm_spe_pmu.c), with
    /// every field present.
    pub const fn linux_6_12() -> Self {
        use ConfigWord::*;
        Self {
            fields: [
                Some(FormatField::new(Config, 0, 0)),
                Some(FormatField::new(Config, 1, 1)),
                Some(FormatField::new(Config, 2, 2)),
                Some(FormatField::new(Config, 16, 16)),
                Some(FormatField::new(Config, 32, 32)),
                Some(FormatField::new(Config, 33, 33)),
                Some(FormatField::new(Config, 34, 34)),
                Some(FormatField::new(Config1, 0, 63)),
                Some(FormatField::new(Config3, 0, 63)),
                Some(FormatField::new(Config2, 0, 11)),
            ],
        }
    }

    /// A format with no field: fill it with [`Self::set`].
    pub const fn empty() -> Self {
        Self { fields: [None; 10] }
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
        }
    }

    fn word_mut(&mut self, word: ConfigWord) -> &mut u64 {
        match word {
            ConfigWord::Config => &mut self.config,
            ConfigWord::Config1 => &mut self.config1,
            ConfigWord::Config2 => &mut self.config2,
            ConfigWord::Config3 => &mut self.config3,
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
/// sysfs publishes no such mask, so this is the rule for every kernel this crate knows.
pub const fn linux_6_12_pmsevfr_res0(version: SpeVersion) -> u64 {
    match version {
        SpeVersion::V1p0 => LINUX_6_12_PMSEVFR_RES0_IMP,
        SpeVersion::V1p1 => LINUX_6_12_PMSEVFR_RES0_V1P1,
        // "Return the highest version we support in default".
        _ => LINUX_6_12_PMSEVFR_RES0_V1P2,
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

/// `config` as an `arm_spe` perf event in `format`, under Linux 6.12's rules.
///
/// Errors: event filter bits the kernel refuses for `config.version()`
/// ([`SpeError::PerfEventsRefused`], see [`linux_6_12_pmsevfr_res0`]; use
/// [`perf_event_with_post_filter`] to record more and filter after decoding), a setting
/// whose field the kernel does not publish ([`SpeError::PerfFieldUnavailable`], e.g. excluded
/// events without `inv_event_filter`), or a value wider than its field
/// ([`SpeError::PerfFieldTooWide`]: `min_latency` is 12 bits in Linux 6.12 even on PEs with
/// 16-bit counters). Warnings: context (CX) cannot be requested; physical addresses and
/// physical timestamps need kernel-profiling permission.
pub fn perf_event(config: &SpeConfig, format: &PerfFormat) -> Result<PerfSpeEvent, SpeError> {
    let registers = config.registers();
    let res0 = linux_6_12_pmsevfr_res0(config.version());
    for (field, mask) in [
        (PerfField::EventFilter, registers.pmsevfr),
        (PerfField::InvEventFilter, registers.pmsnevfr.unwrap_or(0)),
    ] {
        if mask & res0 != 0 {
            return Err(SpeError::PerfEventsRefused {
                field,
                version: config.version(),
                bits: mask & res0,
            });
        }
    }
    encode(config, format, res0)
}

/// Like [`perf_event`], but the event filter bits Linux refuses are left out of the perf event
/// and returned as a [`PostFilter`] to apply to the decoded records: the kernel records a
/// superset, and the post filter keeps exactly what the registers would have kept (the other
/// filters, type and latency, stay in the hardware). The post filter is empty when perf can
/// express the whole configuration.
pub fn perf_event_with_post_filter(
    config: &SpeConfig,
    format: &PerfFormat,
) -> Result<(PerfSpeEvent, PostFilter), SpeError> {
    let registers = config.registers();
    let res0 = linux_6_12_pmsevfr_res0(config.version());
    let post = PostFilter {
        required: SpeEvents::from_bits_retain(registers.pmsevfr & res0),
        excluded: SpeEvents::from_bits_retain(registers.pmsnevfr.unwrap_or(0) & res0),
    };
    Ok((encode(config, format, res0)?, post))
}

/// The event of `config` with the bits in `drop` cleared from both event masks.
fn encode(config: &SpeConfig, format: &PerfFormat, drop: u64) -> Result<PerfSpeEvent, SpeError> {
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
        (PerfField::LoadFilter, flag(fcr.is_set(PMSFCR_EL1::LD))),
        (PerfField::StoreFilter, flag(fcr.is_set(PMSFCR_EL1::ST))),
        (PerfField::EventFilter, registers.pmsevfr & !drop),
        (
            PerfField::InvEventFilter,
            registers.pmsnevfr.unwrap_or(0) & !drop,
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

/// What Linux 6.12's `arm_spe_pmu.c` programs for `attr`: a restatement of
/// `arm_spe_event_to_pmscr/pmsfcr/pmsevfr/pmsnevfr/pmslatfr/pmsirr()` (the filter enables are
/// set when their fields are non-zero; FT when any of B/LD/ST is). `has_inverted_filter`: the
/// PE has FEAT_SPE_FnE (Linux writes PMSNEVFR_EL1 only then); `context`: the kernel's
/// `get_spe_event_has_cx()` (perfmon-capable user, CONFIG_PID_IN_CONTEXTIDR); `min_period`:
/// the PMU's minimum interval, which Linux raises shorter periods to. PMSICR_EL1 is left 0.
pub fn kernel_registers(
    attr: &PerfEventAttr,
    format: &PerfFormat,
    has_inverted_filter: bool,
    context: bool,
    min_period: u32,
) -> SpeRegisterValues {
    let get = |field| format.field(field).map_or(0, |f| f.extract(attr));
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
    let mut pmsfcr = 0;
    if get(PerfField::LoadFilter) != 0 {
        pmsfcr |= PMSFCR_EL1::LD::SET.value;
    }
    if get(PerfField::StoreFilter) != 0 {
        pmsfcr |= PMSFCR_EL1::ST::SET.value;
    }
    if get(PerfField::BranchFilter) != 0 {
        pmsfcr |= PMSFCR_EL1::B::SET.value;
    }
    if pmsfcr != 0 {
        pmsfcr |= PMSFCR_EL1::FT::SET.value;
    }
    let event_filter = get(PerfField::EventFilter);
    let inv_event_filter = get(PerfField::InvEventFilter);
    let min_latency = get(PerfField::MinLatency);
    if event_filter != 0 {
        pmsfcr |= PMSFCR_EL1::FE::SET.value;
    }
    if inv_event_filter != 0 {
        pmsfcr |= PMSFCR_EL1::FnE::SET.value;
    }
    if min_latency != 0 {
        pmsfcr |= PMSFCR_EL1::FL::SET.value;
    }
    // arm_spe_event_sanitise_period(): clamp to [min_period, INTERVAL mask], then mask.
    const INTERVAL_MASK: u64 = 0xFFFF_FF00;
    let period = attr.sample_period;
    let period = if period < u64::from(min_period) {
        u64::from(min_period)
    } else if period > INTERVAL_MASK {
        INTERVAL_MASK
    } else {
        period & INTERVAL_MASK
    };
    SpeRegisterValues {
        pmscr,
        pmsfcr,
        pmsevfr: event_filter,
        pmsnevfr: has_inverted_filter.then_some(inv_event_filter),
        pmslatfr: min_latency & 0xFFFF,
        pmsirr: period | (get(PerfField::Jitter) & 1),
        pmsicr: 0,
    }
}

#[cfg(test)]
mod tests;
