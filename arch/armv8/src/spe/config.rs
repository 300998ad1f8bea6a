//! What a user wants SPE to sample ([`SpeConfigBuilder`]), checked against what this PE can do
//! ([`SpeCapabilities`]) and turned into register values ([`SpeConfig`]), or into typed errors
//! that say what to change.
//!
//! The builder states intent (operation types, minimum latency, events that must be present or
//! absent, interval and jitter, what a record carries, Exception levels); the converters below
//! derive PMSFCR_EL1, PMSEVFR_EL1, PMSNEVFR_EL1, PMSLATFR_EL1, PMSIRR_EL1 and PMSCR_EL1 from it
//! the way Linux's `arm_spe_event_to_pmsfcr()` and friends derive them from a perf attribute
//! (drivers/perf/arm_spe_pmu.c): a filter enable is set exactly when its filter has content.
//!
//! [`SpeConfigBuilder::check`] reports *every* problem (for a front end that lists them all);
//! [`SpeConfigBuilder::build`] stops at the first. [`check_registers`] applies the same rules
//! to raw register values, e.g. values read back from hardware.
//!
//! Sources: Arm ARM DDI 0487 M.a.a D24.7.8 (PMSCR_EL1), D24.7.11 (PMSEVFR_EL1), D24.7.12
//! (PMSFCR_EL1), D24.7.14 (PMSIDR_EL1), D24.7.15 (PMSIRR_EL1), D24.7.16 (PMSLATFR_EL1),
//! D24.7.17 (PMSNEVFR_EL1).

use bitflags::bitflags;

use super::capabilities::SpeCapabilities;
use super::error::{EventFilterKind, SpeError, SpeFilter, SpeWarning};
use super::events::{classify_event_filter, SpeEvents};
use super::model::{self, FilterDecision, SampledOperation};
use super::pmscr_el1::PMSCR_EL1;
use super::pmsfcr_el1::PMSFCR_EL1;
use super::pmsirr_el1::{encode_interval, interval_of, PmsirrEl1};
use super::register_set::SpeRegisterValues;
use super::version::SpeVersion;

bitflags! {
    /// Operation types for the type filter (PMSFCR_EL1.{LD, ST, B}, and with FEAT_SPE_EFT
    /// {SIMD, FP}); also the type of a sampled operation in [`super::model`], where an atomic
    /// read-modify-write is both a load and a store, and a SIMD load both a load and SIMD.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct OperationTypes: u8 {
        /// Loads (PMSFCR_EL1.LD).
        const LOADS = 1 << 0;
        /// Stores, including atomics (PMSFCR_EL1.ST).
        const STORES = 1 << 1;
        /// Branches, including exception returns (PMSFCR_EL1.B).
        const BRANCHES = 1 << 2;
        /// SIMD operations, loads and stores included (PMSFCR_EL1.SIMD; FEAT_SPE_EFT).
        const SIMD = 1 << 3;
        /// Floating-point operations, loads and stores included (PMSFCR_EL1.FP;
        /// FEAT_SPE_EFT).
        const FLOAT = 1 << 4;
    }
}

impl OperationTypes {
    /// The types only FEAT_SPE_EFT can select.
    pub const EXTENDED: Self = Self::SIMD.union(Self::FLOAT);
}

bitflags! {
    /// Exception levels to sample at (PMSCR_EL1.{E0SPE, E1SPE}).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct ExceptionLevels: u8 {
        /// EL0, user space (PMSCR_EL1.E0SPE).
        const EL0 = 1 << 0;
        /// EL1, the kernel (PMSCR_EL1.E1SPE).
        const EL1 = 1 << 1;
    }
}

/// Which counter a record's Timestamp packet holds (PMSCR_EL1.PCT).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimestampSource {
    /// PCT = 0b00: the virtual counter (physical minus CNTVOFF_EL2).
    Virtual,
    /// PCT = 0b01: the physical counter (perf's `pct_enable=1`).
    Physical,
}

/// What to sample, as a user means it. Every field is public so a front end can fill it from
/// command-line options; the chaining methods are shorthands.
///
/// ```
/// use pmu_armv8::spe::{OperationTypes, SpeCapabilities, SpeConfigBuilder, SpeEvents, SpeVersion};
///
/// // Memory-latency analysis: slow loads that missed the last level cache (E[9]).
/// // Linux's perf cannot filter E[9]: see `perf::perf_event_with_post_filter`.
/// let caps = SpeCapabilities::decode_raw(SpeVersion::V1p2, 0x2_6447, 0);
/// let config = SpeConfigBuilder::new()
///     .operation_types(OperationTypes::LOADS)
///     .min_latency(120)
///     .require_events(SpeEvents::LLC_MISS)
///     .interval(4096)
///     .build(&caps)
///     .unwrap();
/// assert_eq!(config.registers().pmsfcr, 0x2_0007);
/// assert_eq!(config.registers().pmsevfr, 0x200);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SpeConfigBuilder {
    /// Record only these operation types (type filter, FT). `None`: no type filter.
    pub operation_types: Option<OperationTypes>,
    /// Record only operations of *every* selected type instead of any (the type masks
    /// PMSFCR_EL1.{B, LD, ST, SIMD, FP}m of the selected types: AND instead of OR;
    /// FEAT_SPE_EFT): loads AND SIMD are the SIMD loads.
    pub all_types: bool,
    /// Record only operations whose data source is one of these (bit n: source n, which the
    /// implementation defines; PMSFCR_EL1.FDS, PMSDSFR_EL1; FEAT_SPE_FDS). Operations without
    /// a data source are not filtered. `None`: no data source filter.
    pub data_sources: Option<u64>,
    /// Record only operations with at least this total latency in cycles (FL). `None`: no
    /// latency filter.
    pub min_latency: Option<u32>,
    /// Record only operations with all of these events (FE). `None`: no event filter.
    pub required_events: Option<SpeEvents>,
    /// Drop operations with any of these events (FnE, FEAT_SPEv1p2). `None`: no inverted
    /// filter.
    pub excluded_events: Option<SpeEvents>,
    /// Sample one operation every this many (a non-zero multiple of 256). `None`: this PE's
    /// minimum recommended interval (PMSIDR_EL1.Interval).
    pub interval: Option<u32>,
    /// Randomize the interval (PMSIRR_EL1.RND).
    pub jitter: bool,
    /// Record a timestamp, and from which counter (PMSCR_EL1.TS, PCT). `None`: none.
    pub timestamps: Option<TimestampSource>,
    /// Record physical data addresses (PMSCR_EL1.PA).
    pub physical_addresses: bool,
    /// Record CONTEXTIDR_EL1 (PMSCR_EL1.CX).
    pub context: bool,
    /// Exception levels to sample at (default: EL0 and EL1).
    pub exception_levels: ExceptionLevels,
}

impl Default for SpeConfigBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl SpeConfigBuilder {
    /// No filters, the minimum interval, no timestamps/addresses/context, EL0 and EL1.
    pub const fn new() -> Self {
        Self {
            operation_types: None,
            all_types: false,
            data_sources: None,
            min_latency: None,
            required_events: None,
            excluded_events: None,
            interval: None,
            jitter: false,
            timestamps: None,
            physical_addresses: false,
            context: false,
            exception_levels: ExceptionLevels::all(),
        }
    }

    /// Records only these operation types.
    pub const fn operation_types(mut self, types: OperationTypes) -> Self {
        self.operation_types = Some(types);
        self
    }

    /// Records only operations of every selected type (FEAT_SPE_EFT type masks).
    pub const fn all_types(mut self, all: bool) -> Self {
        self.all_types = all;
        self
    }

    /// Records only operations with one of these data sources (FEAT_SPE_FDS).
    pub const fn data_sources(mut self, sources: u64) -> Self {
        self.data_sources = Some(sources);
        self
    }

    /// Records only operations with at least `cycles` total latency.
    pub const fn min_latency(mut self, cycles: u32) -> Self {
        self.min_latency = Some(cycles);
        self
    }

    /// Records only operations that have all of `events`.
    pub const fn require_events(mut self, events: SpeEvents) -> Self {
        self.required_events = Some(events);
        self
    }

    /// Drops operations that have any of `events` (needs FEAT_SPEv1p2).
    pub const fn exclude_events(mut self, events: SpeEvents) -> Self {
        self.excluded_events = Some(events);
        self
    }

    /// Samples one operation in `interval`.
    pub const fn interval(mut self, interval: u32) -> Self {
        self.interval = Some(interval);
        self
    }

    /// Randomizes the interval.
    pub const fn jitter(mut self, jitter: bool) -> Self {
        self.jitter = jitter;
        self
    }

    /// Records timestamps from `source`.
    pub const fn timestamps(mut self, source: TimestampSource) -> Self {
        self.timestamps = Some(source);
        self
    }

    /// Records physical data addresses.
    pub const fn physical_addresses(mut self, on: bool) -> Self {
        self.physical_addresses = on;
        self
    }

    /// Records CONTEXTIDR_EL1.
    pub const fn context(mut self, on: bool) -> Self {
        self.context = on;
        self
    }

    /// Samples at these Exception levels.
    pub const fn exception_levels(mut self, levels: ExceptionLevels) -> Self {
        self.exception_levels = levels;
        self
    }

    /// Every error and warning of this request on a PE with `caps`.
    pub fn check(&self, caps: &SpeCapabilities) -> Diagnostics {
        let mut d = Diagnostics::new();
        if let Err(e) = caps.validate() {
            d.error(e);
        }
        if self.exception_levels.is_empty() {
            d.error(SpeError::NoExceptionLevelSelected);
        }
        if let Some(types) = self.operation_types {
            if types.is_empty() {
                d.error(SpeError::NoOperationTypeSelected);
            }
            if !caps.filter_by_type {
                d.error(SpeError::FilterNotImplemented {
                    filter: SpeFilter::Type,
                });
            }
            if (types.intersects(OperationTypes::EXTENDED) || self.all_types)
                && !caps.extended_type_filter
            {
                d.error(SpeError::FilterNotImplemented {
                    filter: SpeFilter::ExtendedType,
                });
            }
        } else if self.all_types {
            d.error(SpeError::NoOperationTypeSelected);
        }
        if let Some(sources) = self.data_sources {
            if !caps.data_source_filter {
                d.error(SpeError::FilterNotImplemented {
                    filter: SpeFilter::DataSource,
                });
            }
            if sources == 0 {
                d.error(SpeError::EmptyDataSourceFilter);
            }
        }
        if let Some(events) = self.required_events {
            check_event_filter(&mut d, caps, EventFilterKind::Required, events);
        }
        if let Some(events) = self.excluded_events {
            check_event_filter(&mut d, caps, EventFilterKind::Excluded, events);
        }
        if let (Some(required), Some(excluded)) = (self.required_events, self.excluded_events) {
            let both = required & excluded;
            if !both.is_empty() {
                d.error(SpeError::EventRequiredAndExcluded { bits: both.bits() });
            }
        }
        if let Some(latency) = self.min_latency {
            if !caps.filter_by_latency {
                d.error(SpeError::FilterNotImplemented {
                    filter: SpeFilter::Latency,
                });
            }
            // A reserved CountSize is already reported by `validate`.
            if let Ok(counters) = caps.counter_size {
                if latency > counters.max_value() {
                    d.error(SpeError::MinLatencyTooLarge {
                        value: latency,
                        max: counters.max_value(),
                    });
                }
            }
            if latency == 0 {
                d.warn(SpeWarning::ZeroMinimumLatency);
            }
        }
        // A reserved Interval code is already reported by `validate`.
        if let Ok(min) = caps.min_interval {
            let interval = self.interval.unwrap_or(min);
            if let Err(e) = encode_interval(interval, self.jitter) {
                d.error(e);
            }
            if interval < min {
                d.error(SpeError::IntervalBelowMinimum {
                    value: interval,
                    min,
                });
            }
        }
        if let (Some(types), Some(required)) = (self.operation_types, self.required_events) {
            let impossible = events_impossible_for(types, required);
            if !types.is_empty() && !impossible.is_empty() {
                d.warn(SpeWarning::RequiredEventsNeverOccur {
                    events: impossible,
                    types,
                });
            }
        }
        d
    }

    /// The configuration for a PE with `caps`, or the first problem [`Self::check`] finds.
    pub fn build(&self, caps: &SpeCapabilities) -> Result<SpeConfig, SpeError> {
        let diagnostics = self.check(caps);
        if let Some(error) = diagnostics.errors().next() {
            return Err(*error);
        }
        let interval = match self.interval {
            Some(interval) => interval,
            // `check` found no error, so the interval code is valid.
            None => caps.min_interval?,
        };
        Ok(SpeConfig {
            request: *self,
            version: caps.version,
            registers: SpeRegisterValues {
                pmscr: pmscr_for(self),
                pmsfcr: pmsfcr_for(self),
                pmsevfr: self.required_events.map_or(0, |e| e.bits()),
                pmsnevfr: caps
                    .inverted_event_filter
                    .then(|| self.excluded_events.map_or(0, |e| e.bits())),
                pmsdsfr: caps
                    .data_source_filter
                    .then(|| self.data_sources.unwrap_or(u64::MAX)),
                pmslatfr: u64::from(self.min_latency.unwrap_or(0)),
                pmsirr: encode_interval(interval, self.jitter)?.get(),
                pmsicr: 0,
            },
            warnings: diagnostics.warnings,
        })
    }
}

fn check_event_filter(
    d: &mut Diagnostics,
    caps: &SpeCapabilities,
    kind: EventFilterKind,
    events: SpeEvents,
) {
    if events.is_empty() {
        d.error(SpeError::EmptyEventFilter { filter: kind });
    }
    let (implemented, filter) = match kind {
        EventFilterKind::Required => (caps.filter_by_event, SpeFilter::Event),
        EventFilterKind::Excluded => (caps.inverted_event_filter, SpeFilter::InvertedEvent),
    };
    if !implemented {
        d.error(SpeError::FilterNotImplemented { filter });
    }
    let support = classify_event_filter(caps.version, events);
    if !support.unfilterable.is_empty() {
        d.error(SpeError::EventsNotFilterable {
            version: caps.version,
            bits: support.unfilterable.bits(),
        });
    }
    if !support.optional.is_empty() {
        d.warn(SpeWarning::OptionallyFilterableEvents {
            filter: kind,
            version: caps.version,
            bits: support.optional.bits(),
        });
    }
}

/// Events that only branches have (E\[7\] mispredicted; E\[6\] not taken, which otherwise
/// only marks conditional non-branch instructions, a type the filter cannot select).
const BRANCH_EVENTS: SpeEvents = SpeEvents::MISPREDICTED.union(SpeEvents::NOT_TAKEN);

/// Events of data accesses, which branches never make (Arm ARM D18.2.6: "data cache",
/// "misaligned access", last level cache and remote accesses of the operation's data).
const DATA_ACCESS_EVENTS: SpeEvents = SpeEvents::L1D_ACCESS
    .union(SpeEvents::L1D_REFILL)
    .union(SpeEvents::LLC_ACCESS)
    .union(SpeEvents::LLC_MISS)
    .union(SpeEvents::REMOTE_ACCESS)
    .union(SpeEvents::MISALIGNED)
    .union(SpeEvents::L2D_ACCESS)
    .union(SpeEvents::L2D_MISS);

/// The required events that no operation of `types` can have.
fn events_impossible_for(types: OperationTypes, required: SpeEvents) -> SpeEvents {
    let mut impossible = SpeEvents::empty();
    if !types.contains(OperationTypes::BRANCHES) {
        impossible |= required & BRANCH_EVENTS;
    }
    // SIMD and floating-point operations include their loads and stores.
    if !types.intersects(
        OperationTypes::LOADS
            | OperationTypes::STORES
            | OperationTypes::SIMD
            | OperationTypes::FLOAT,
    ) {
        impossible |= required & DATA_ACCESS_EVENTS;
    }
    impossible
}

/// PMSFCR_EL1 for a request: each enable set exactly when its filter has content, as Linux's
/// `arm_spe_event_to_pmsfcr()`.
fn pmsfcr_for(request: &SpeConfigBuilder) -> u64 {
    let mut value = 0;
    if let Some(types) = request.operation_types {
        value |= PMSFCR_EL1::FT::SET.value;
        for (ty, bit, mask) in [
            (
                OperationTypes::BRANCHES,
                PMSFCR_EL1::B::SET,
                PMSFCR_EL1::Bm::SET,
            ),
            (
                OperationTypes::LOADS,
                PMSFCR_EL1::LD::SET,
                PMSFCR_EL1::LDm::SET,
            ),
            (
                OperationTypes::STORES,
                PMSFCR_EL1::ST::SET,
                PMSFCR_EL1::STm::SET,
            ),
            (
                OperationTypes::SIMD,
                PMSFCR_EL1::SIMD::SET,
                PMSFCR_EL1::SIMDm::SET,
            ),
            (
                OperationTypes::FLOAT,
                PMSFCR_EL1::FP::SET,
                PMSFCR_EL1::FPm::SET,
            ),
        ] {
            if types.contains(ty) {
                value |= bit.value;
                if request.all_types {
                    value |= mask.value;
                }
            }
        }
    }
    if request.data_sources.is_some() {
        value |= PMSFCR_EL1::FDS::SET.value;
    }
    if request.required_events.is_some() {
        value |= PMSFCR_EL1::FE::SET.value;
    }
    if request.excluded_events.is_some() {
        value |= PMSFCR_EL1::FnE::SET.value;
    }
    // MINLAT = 0 passes every sample: leave FL off (a warning says so).
    if request.min_latency.is_some_and(|l| l > 0) {
        value |= PMSFCR_EL1::FL::SET.value;
    }
    value
}

/// PMSCR_EL1 for a request (sampling enabled), as Linux's `arm_spe_event_to_pmscr()`.
fn pmscr_for(request: &SpeConfigBuilder) -> u64 {
    let mut value = 0;
    if request.exception_levels.contains(ExceptionLevels::EL0) {
        value |= PMSCR_EL1::E0SPE::SET.value;
    }
    if request.exception_levels.contains(ExceptionLevels::EL1) {
        value |= PMSCR_EL1::E1SPE::SET.value;
    }
    if request.context {
        value |= PMSCR_EL1::CX::SET.value;
    }
    if request.physical_addresses {
        value |= PMSCR_EL1::PA::SET.value;
    }
    match request.timestamps {
        Some(TimestampSource::Physical) => {
            value |= (PMSCR_EL1::TS::SET + PMSCR_EL1::PCT::Physical).value;
        }
        Some(TimestampSource::Virtual) => value |= PMSCR_EL1::TS::SET.value,
        None => {}
    }
    value
}

/// A validated configuration: the register values for one PE and the warnings found on the
/// way. Built only by [`SpeConfigBuilder::build`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SpeConfig {
    request: SpeConfigBuilder,
    version: SpeVersion,
    registers: SpeRegisterValues,
    warnings: Bounded<SpeWarning, MAX_WARNINGS>,
}

impl SpeConfig {
    /// The request this configuration was built from.
    pub const fn request(&self) -> &SpeConfigBuilder {
        &self.request
    }

    /// The SPE version it was validated for.
    pub const fn version(&self) -> SpeVersion {
        self.version
    }

    /// The register values ([`super::program`] writes them).
    pub const fn registers(&self) -> &SpeRegisterValues {
        &self.registers
    }

    /// The sampling interval in operations.
    pub fn interval(&self) -> u32 {
        interval_of(PmsirrEl1::new(self.registers.pmsirr))
    }

    /// Legal but surprising settings of the request.
    pub fn warnings(&self) -> impl Iterator<Item = &SpeWarning> {
        self.warnings.iter()
    }

    /// Whether the hardware records `operation` under this configuration
    /// ([`model::decide`]).
    pub fn decide(&self, operation: &SampledOperation) -> FilterDecision {
        model::decide(&self.registers, self.version, operation)
    }
}

/// Checks raw sampling register values (for example read back from a PE, or what Linux would
/// program for a perf event) against `caps`: the builder's errors, plus warnings for bits that
/// have no effect and for PMSFCR_EL1.FT = 1 with no type selected, which the
/// builder never produces but hardware accepts.
pub fn check_registers(values: &SpeRegisterValues, caps: &SpeCapabilities) -> Diagnostics {
    let mut d = Diagnostics::new();
    if let Err(e) = caps.validate() {
        d.error(e);
    }
    let fcr = super::PmsfcrEl1::new(values.pmsfcr);
    let fe = fcr.is_set(PMSFCR_EL1::FE);
    let fne = fcr.is_set(PMSFCR_EL1::FnE);
    let ft = fcr.is_set(PMSFCR_EL1::FT);
    let fl = fcr.is_set(PMSFCR_EL1::FL);
    let extended = fcr.get() & super::model::EXTENDED_TYPE_BITS != 0;
    let types = fcr.is_set(PMSFCR_EL1::B)
        || fcr.is_set(PMSFCR_EL1::LD)
        || fcr.is_set(PMSFCR_EL1::ST)
        || extended;
    if extended && !caps.extended_type_filter {
        d.error(SpeError::FilterNotImplemented {
            filter: SpeFilter::ExtendedType,
        });
    }
    if fcr.is_set(PMSFCR_EL1::FDS) && !caps.data_source_filter {
        d.error(SpeError::FilterNotImplemented {
            filter: SpeFilter::DataSource,
        });
    }
    let required = SpeEvents::from_bits_retain(values.pmsevfr);
    let excluded = SpeEvents::from_bits_retain(values.pmsnevfr.unwrap_or(0));

    if fe {
        check_event_filter(&mut d, caps, EventFilterKind::Required, required);
    } else if !required.is_empty() {
        d.warn(SpeWarning::EventMaskWithoutEnable {
            filter: EventFilterKind::Required,
        });
    }
    if fne {
        check_event_filter(&mut d, caps, EventFilterKind::Excluded, excluded);
    } else if !excluded.is_empty() {
        d.warn(SpeWarning::EventMaskWithoutEnable {
            filter: EventFilterKind::Excluded,
        });
    }
    if fe && fne && required.intersects(excluded) {
        d.error(SpeError::EventRequiredAndExcluded {
            bits: (required & excluded).bits(),
        });
    }
    if ft {
        if !caps.filter_by_type {
            d.error(SpeError::FilterNotImplemented {
                filter: SpeFilter::Type,
            });
        }
        if !types {
            d.warn(SpeWarning::TypeFilterWithoutTypes);
        }
    } else if types {
        d.warn(SpeWarning::TypesWithoutTypeFilter);
    }
    let min_latency = values.pmslatfr & 0xFFFF;
    if fl {
        if !caps.filter_by_latency {
            d.error(SpeError::FilterNotImplemented {
                filter: SpeFilter::Latency,
            });
        }
        if min_latency == 0 {
            d.warn(SpeWarning::ZeroMinimumLatency);
        }
    } else if min_latency != 0 {
        d.warn(SpeWarning::LatencyWithoutLatencyFilter);
    }
    if let Ok(counters) = caps.counter_size {
        // MINLAT is 16 bits wide, so the narrowing is exact.
        if min_latency as u32 > counters.max_value() {
            d.error(SpeError::MinLatencyTooLarge {
                value: min_latency as u32,
                max: counters.max_value(),
            });
        }
    }
    let interval = interval_of(PmsirrEl1::new(values.pmsirr));
    if interval == 0 {
        d.error(SpeError::InvalidInterval { value: 0 });
    } else if let Ok(min) = caps.min_interval {
        if interval < min {
            d.error(SpeError::IntervalBelowMinimum {
                value: interval,
                min,
            });
        }
    }
    d
}

/// Most errors one request can have (one per check in [`SpeConfigBuilder::check`]).
const MAX_ERRORS: usize = 16;
/// Most warnings one request can have.
const MAX_WARNINGS: usize = 8;

/// All errors and warnings of a request or of raw register values, in the order found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Diagnostics {
    errors: Bounded<SpeError, MAX_ERRORS>,
    warnings: Bounded<SpeWarning, MAX_WARNINGS>,
}

impl Diagnostics {
    const fn new() -> Self {
        Self {
            errors: Bounded::new(),
            warnings: Bounded::new(),
        }
    }

    fn error(&mut self, error: SpeError) {
        self.errors.push(error);
    }

    fn warn(&mut self, warning: SpeWarning) {
        self.warnings.push(warning);
    }

    /// The errors: each makes the configuration unusable.
    pub fn errors(&self) -> impl Iterator<Item = &SpeError> {
        self.errors.iter()
    }

    /// The warnings: legal but probably not what was meant.
    pub fn warnings(&self) -> impl Iterator<Item = &SpeWarning> {
        self.warnings.iter()
    }

    /// Whether there is no error (warnings allowed).
    pub fn is_ok(&self) -> bool {
        self.errors.len == 0
    }
}

/// A fixed-capacity list for `no_std`; pushes beyond the capacity are dropped (the checks
/// above never produce that many).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Bounded<T: Copy, const N: usize> {
    items: [Option<T>; N],
    len: usize,
}

impl<T: Copy, const N: usize> Bounded<T, N> {
    const fn new() -> Self {
        Self {
            items: [None; N],
            len: 0,
        }
    }

    fn push(&mut self, item: T) {
        if let Some(slot) = self.items.get_mut(self.len) {
            *slot = Some(item);
            self.len += 1;
        }
    }

    fn iter(&self) -> impl Iterator<Item = &T> {
        self.items.iter().flatten()
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
