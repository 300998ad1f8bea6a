//! Why an SPE register value, capability set or configuration cannot be used, and what to do
//! about it ([`SpeError`]); and what is legal but probably not what the user meant
//! ([`SpeWarning`]).

use core::fmt;

use super::config::OperationTypes;
use super::events::SpeEvents;
use super::perf::{EventFilterRes0, LinuxSpeDriver, PerfField};
use super::pmbsr_el1::BufferSyndrome;
use super::version::SpeVersion;

/// A filter of PMSFCR_EL1 that an implementation may lack (PMSIDR_EL1.{FE, FT, FL, FnE}).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SpeFilter {
    /// Filter by events, PMSFCR_EL1.FE with PMSEVFR_EL1 (PMSIDR_EL1.FE).
    Event,
    /// Filter by operation type, PMSFCR_EL1.FT with B/LD/ST (PMSIDR_EL1.FT).
    Type,
    /// Filter by latency, PMSFCR_EL1.FL with PMSLATFR_EL1 (PMSIDR_EL1.FL).
    Latency,
    /// Inverted event filter, PMSFCR_EL1.FnE with PMSNEVFR_EL1 (PMSIDR_EL1.FnE,
    /// FEAT_SPEv1p2).
    InvertedEvent,
    /// Extended type filter: PMSFCR_EL1.{SIMD, FP} and the type masks {B, LD, ST, SIMD,
    /// FP}m (PMSIDR_EL1.EFT, FEAT_SPE_EFT).
    ExtendedType,
    /// Data source filter, PMSFCR_EL1.FDS with PMSDSFR_EL1 (PMSIDR_EL1.FDS, FEAT_SPE_FDS).
    DataSource,
}

impl SpeFilter {
    /// The PMSIDR_EL1 bit that says whether the filter exists.
    pub const fn id_field(self) -> &'static str {
        match self {
            Self::Event => "PMSIDR_EL1.FE",
            Self::Type => "PMSIDR_EL1.FT",
            Self::Latency => "PMSIDR_EL1.FL",
            Self::InvertedEvent => "PMSIDR_EL1.FnE",
            Self::ExtendedType => "PMSIDR_EL1.EFT",
            Self::DataSource => "PMSIDR_EL1.FDS",
        }
    }
}

impl fmt::Display for SpeFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Event => "event filter (PMSFCR_EL1.FE, PMSEVFR_EL1)",
            Self::Type => "operation type filter (PMSFCR_EL1.FT, B/LD/ST)",
            Self::Latency => "latency filter (PMSFCR_EL1.FL, PMSLATFR_EL1)",
            Self::InvertedEvent => "inverted event filter (PMSFCR_EL1.FnE, PMSNEVFR_EL1)",
            Self::ExtendedType => {
                "extended type filter (PMSFCR_EL1.SIMD/FP and the type masks, FEAT_SPE_EFT)"
            }
            Self::DataSource => "data source filter (PMSFCR_EL1.FDS, PMSDSFR_EL1, FEAT_SPE_FDS)",
        })
    }
}

/// Which event filter register an event-filter problem is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventFilterKind {
    /// PMSEVFR_EL1: events a sample must have (PMSFCR_EL1.FE).
    Required,
    /// PMSNEVFR_EL1: events a sample must not have (PMSFCR_EL1.FnE).
    Excluded,
}

impl fmt::Display for EventFilterKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Required => "required events (PMSEVFR_EL1, FE)",
            Self::Excluded => "excluded events (PMSNEVFR_EL1, FnE)",
        })
    }
}

/// A field of an SPE ID register whose value the Arm ARM reserves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IdRegisterField {
    /// `PMSIDR_EL1.Interval`, bits \[11:8\].
    PmsidrInterval,
    /// `PMSIDR_EL1.MaxSize`, bits \[15:12\].
    PmsidrMaxSize,
    /// `PMSIDR_EL1.CountSize`, bits \[19:16\].
    PmsidrCountSize,
    /// `PMBIDR_EL1.Align`, bits \[3:0\].
    PmbidrAlign,
}

impl fmt::Display for IdRegisterField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::PmsidrInterval => "PMSIDR_EL1.Interval",
            Self::PmsidrMaxSize => "PMSIDR_EL1.MaxSize",
            Self::PmsidrCountSize => "PMSIDR_EL1.CountSize",
            Self::PmbidrAlign => "PMBIDR_EL1.Align",
        })
    }
}

/// Everything that can be wrong with SPE on this PE or with a value meant for an SPE register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SpeError {
    /// `ID_AA64DFR0_EL1.PMSVer` is 0: the PE has no SPE and every SPE register is UNDEFINED.
    NotImplemented,
    /// `PMBIDR_EL1.P` is 1: a higher Exception level (or another Security state) owns the
    /// profiling buffer, so EL1 may not program it.
    BufferOwnedByHigherEl,
    /// An ID register field holds a value the Arm ARM reserves.
    ReservedField {
        /// Which field.
        field: IdRegisterField,
        /// The raw field value.
        value: u8,
    },
    /// A `PMSLATFR_EL1.MINLAT` value wider than the implemented latency counters.
    MinLatencyTooLarge {
        /// The requested minimum latency in cycles.
        value: u32,
        /// The largest value the counters hold.
        max: u32,
    },
    /// Events that `PMSEVFR_EL1`/`PMSNEVFR_EL1` cannot filter on at this SPE version: their
    /// bits are RAZ/WI, so the filter would silently not apply.
    EventsNotFilterable {
        /// The SPE version the check was made for.
        version: SpeVersion,
        /// The offending bits.
        bits: u64,
    },
    /// A sampling interval `PMSIRR_EL1.INTERVAL` cannot hold.
    InvalidInterval {
        /// The requested interval in operations.
        value: u32,
    },
    /// A profiling buffer limit that is not 4 KiB aligned (`PMBLIMITR_EL1.LIMIT` holds bits
    /// \[63:12\] only).
    MisalignedLimit {
        /// The requested limit address.
        address: u64,
    },
    /// A profiling buffer write pointer that breaks the `PMBIDR_EL1.Align` constraint.
    MisalignedPointer {
        /// The requested write pointer.
        address: u64,
        /// The required alignment in bytes.
        align: u64,
    },
    /// An event filter is enabled with no event in it. The Arm ARM makes FE = 1 with
    /// PMSEVFR_EL1 = 0 (and FnE = 1 with PMSNEVFR_EL1 = 0) CONSTRAINED UNPREDICTABLE.
    EmptyEventFilter {
        /// Which filter is empty.
        filter: EventFilterKind,
    },
    /// The same event is both required (PMSEVFR_EL1) and excluded (PMSNEVFR_EL1): CONSTRAINED
    /// UNPREDICTABLE in the Arm ARM, and no sample could pass anyway.
    EventRequiredAndExcluded {
        /// The events in both filters.
        bits: u64,
    },
    /// A filter that this implementation does not have (its PMSIDR_EL1 bit is 0).
    FilterNotImplemented {
        /// The missing filter.
        filter: SpeFilter,
    },
    /// A sampling interval below the implementation's minimum (PMSIDR_EL1.Interval).
    IntervalBelowMinimum {
        /// The requested interval.
        value: u32,
        /// The smallest interval this PE recommends.
        min: u32,
    },
    /// A type filter with none of loads, stores and branches selected: PMSFCR_EL1.FT = 1 with
    /// B = LD = ST = 0, which the Arm ARM leaves CONSTRAINED UNPREDICTABLE (a PE may record
    /// nothing or record some operations).
    NoOperationTypeSelected,
    /// Sampling enabled at no Exception level: PMSCR_EL1.E0SPE = E1SPE = 0 never samples.
    NoExceptionLevelSelected,
    /// A profiling buffer smaller than one record of this implementation.
    BufferTooSmall {
        /// The requested size in bytes.
        size: u64,
        /// The smallest usable size (PMSIDR_EL1.MaxSize).
        min: u64,
    },
    /// A profiling buffer whose end lies beyond the top of the address space.
    BufferWrapsAround {
        /// The requested base address.
        base: u64,
        /// The requested size in bytes.
        size: u64,
    },
    /// PMBSR_EL1 reports a buffer management event that is not a plain "buffer full": the
    /// records after `PMBPTR_EL1` are lost and the buffer needs attention.
    BufferManagementEvent {
        /// The decoded PMBSR_EL1.
        syndrome: BufferSyndrome,
    },
    /// A value wider than the field the `arm_spe` perf PMU publishes for it.
    PerfFieldTooWide {
        /// The perf format field.
        field: PerfField,
        /// The value that does not fit.
        value: u64,
        /// The largest value the field holds.
        max: u64,
    },
    /// The running kernel publishes no format entry for a field this configuration needs (for
    /// example `inv_event_filter`, which Linux hides without FEAT_SPEv1p2).
    PerfFieldUnavailable {
        /// The missing field.
        field: PerfField,
    },
    /// A perf format entry that is not `configN:lo` or `configN:lo-hi` with lo <= hi < 64.
    PerfFormatInvalid {
        /// The field whose entry did not parse.
        field: PerfField,
    },
    /// The kernel refuses these `event_filter`/`inv_event_filter` bits
    /// (`perf_event_open` fails with EOPNOTSUPP): Linux 6.12's `arm_spe_pmsevfr_res0()` treats
    /// them as RES0 by SPE version even where the hardware may filter on them; Linux 7.3
    /// refuses the bits PMSEVFR_EL1 did not keep when it wrote all ones at probe time. Record
    /// with a broader perf filter and select the samples after decoding
    /// ([`crate::spe::perf::perf_event_with_post_filter`]), or program the registers directly.
    PerfEventsRefused {
        /// `event_filter` or `inv_event_filter`.
        field: PerfField,
        /// The SPE version the kernel's rule was applied for.
        version: SpeVersion,
        /// The release whose rule refused them.
        driver: LinuxSpeDriver,
        /// The refused bits.
        bits: u64,
    },
    /// A data source filter with no source selected (PMSDSFR_EL1 = 0 with FDS): every sample
    /// with a data source would be dropped.
    EmptyDataSourceFilter,
    /// Linux 7.3 refuses perf's `discard` term before FEAT_SPEv1p2 (`SPE_PMU_FEAT_DISCARD`
    /// needs PMSVer at least V1P2): record normally instead.
    DiscardNotImplemented {
        /// The PE's SPE version.
        version: SpeVersion,
    },
}

/// `match self { Self::A { .. } => "A", … }`: a variant's name, exhaustively (a new
/// variant without its name does not compile).
macro_rules! variant_name {
    ($value:expr; $($variant:ident),* $(,)?) => {
        match $value {
            $(Self::$variant { .. } => stringify!($variant),)*
        }
    };
}

impl SpeError {
    /// The variant's name (`MinLatencyTooLarge`), for programs that read errors as data
    /// (JSON) and match on it.
    pub const fn kind(&self) -> &'static str {
        variant_name!(self;
            NotImplemented,
            BufferOwnedByHigherEl,
            ReservedField,
            MinLatencyTooLarge,
            EventsNotFilterable,
            InvalidInterval,
            MisalignedLimit,
            MisalignedPointer,
            EmptyEventFilter,
            EventRequiredAndExcluded,
            FilterNotImplemented,
            IntervalBelowMinimum,
            NoOperationTypeSelected,
            NoExceptionLevelSelected,
            BufferTooSmall,
            BufferWrapsAround,
            BufferManagementEvent,
            PerfFieldTooWide,
            PerfFieldUnavailable,
            PerfFormatInvalid,
            PerfEventsRefused,
            EmptyDataSourceFilter,
            DiscardNotImplemented,
        )
    }
}

impl fmt::Display for SpeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::NotImplemented => f.write_str("SPE not implemented (PMSVer=0)"),
            Self::BufferOwnedByHigherEl => f.write_str(
                "SPE profiling buffer is owned by a higher exception level (PMBIDR_EL1.P=1): \
                 have the firmware or hypervisor hand it to EL1 (MDCR_EL3.NSPB, MDCR_EL2.E2PB)",
            ),
            Self::ReservedField { field, value } => write!(
                f,
                "{field} holds the reserved value {value:#x}: this SPE implementation is newer \
                 than this driver; do not program SPE until the driver knows the encoding"
            ),
            Self::MinLatencyTooLarge { value, max } => write!(
                f,
                "minimum latency {value} does not fit the SPE latency counters \
                 (PMSIDR_EL1.CountSize): use a value of at most {max}"
            ),
            Self::EventsNotFilterable { version, bits } => write!(
                f,
                "events {bits:#x} cannot be filtered on {version} (their PMSEVFR_EL1 bits are \
                 RAZ/WI): remove them from the filter"
            ),
            Self::InvalidInterval { value } => write!(
                f,
                "sampling interval {value} cannot be programmed: PMSIRR_EL1.INTERVAL needs a \
                 non-zero multiple of 256"
            ),
            Self::MisalignedLimit { address } => write!(
                f,
                "profiling buffer limit {address:#x} is not 4 KiB aligned: round it down to a \
                 multiple of 4096"
            ),
            Self::MisalignedPointer { address, align } => write!(
                f,
                "profiling buffer pointer {address:#x} is not aligned to {align} bytes \
                 (PMBIDR_EL1.Align): align the buffer start"
            ),
            Self::EmptyEventFilter { filter } => write!(
                f,
                "the {filter} filter is enabled with no event: an empty mask is CONSTRAINED \
                 UNPREDICTABLE; name at least one event or turn that filter off"
            ),
            Self::EventRequiredAndExcluded { bits } => write!(
                f,
                "events {bits:#x} are both required (PMSEVFR_EL1) and excluded (PMSNEVFR_EL1), \
                 which is CONSTRAINED UNPREDICTABLE and could never match: remove them from one \
                 of the two filters"
            ),
            Self::FilterNotImplemented { filter } => match filter {
                SpeFilter::InvertedEvent => f.write_str(
                    "this PE has no inverted event filter (PMSIDR_EL1.FnE = 0; it needs \
                     FEAT_SPEv1p2): drop the excluded events and discard those samples after \
                     decoding instead",
                ),
                _ => write!(
                    f,
                    "this PE has no {filter} ({} = 0): drop that filter and select the samples \
                     after decoding instead",
                    filter.id_field()
                ),
            },
            Self::IntervalBelowMinimum { value, min } => write!(
                f,
                "sampling interval {value} is below this PE's minimum of {min} \
                 (PMSIDR_EL1.Interval): use an interval of at least {min}"
            ),
            Self::NoOperationTypeSelected => f.write_str(
                "the operation type filter is enabled with none of loads, stores, branches \
                 selected (PMSFCR_EL1.FT = 1, B = LD = ST = 0), which the Arm ARM leaves \
                 CONSTRAINED UNPREDICTABLE (a PE may record nothing or some operations): \
                 select at least one type or drop the type filter",
            ),
            Self::NoExceptionLevelSelected => f.write_str(
                "sampling is enabled at no Exception level (PMSCR_EL1.E0SPE = E1SPE = 0), so \
                 nothing would be sampled: select EL0, EL1 or both",
            ),
            Self::BufferTooSmall { size, min } => write!(
                f,
                "profiling buffer of {size} bytes cannot hold one record of up to {min} bytes \
                 (PMSIDR_EL1.MaxSize): give it at least {min} bytes"
            ),
            Self::BufferWrapsAround { base, size } => write!(
                f,
                "profiling buffer at {base:#x} with {size} bytes runs past the top of the \
                 address space: move or shrink it"
            ),
            Self::BufferManagementEvent { syndrome } => write!(
                f,
                "the profiling buffer stopped with a management event ({:?}, PMBSR_EL1): fix \
                 the cause (mapping, permissions), then clear PMBSR_EL1 and restart",
                syndrome.event
            ),
            Self::PerfFieldTooWide { field, value, max } => write!(
                f,
                "{value:#x} does not fit the perf format field `{}` (at most {max:#x}): use a \
                 smaller value or program the registers directly",
                field.name()
            ),
            Self::PerfFieldUnavailable { field } => write!(
                f,
                "the kernel's arm_spe PMU publishes no `{}` format field, so perf cannot \
                 express this configuration: drop that setting",
                field.name()
            ),
            Self::PerfFormatInvalid { field } => write!(
                f,
                "the format entry of `{}` is not `configN:lo[-hi]`: read it again from \
                 /sys/bus/event_source/devices/arm_spe*/format or use the documented layout",
                field.name()
            ),
            Self::PerfEventsRefused {
                field,
                version,
                driver,
                bits,
            } => {
                write!(
                    f,
                    "perf cannot express `{}` bits {bits:#x} on {version}: ",
                    field.name()
                )?;
                match driver.rules().event_filter_res0 {
                    EventFilterRes0::PerVersionTable => write!(
                        f,
                        "{driver} (arm_spe_pmsevfr_res0() in drivers/perf/arm_spe_pmu.c) treats \
                         them as RES0"
                    )?,
                    EventFilterRes0::ProbedReadBack => write!(
                        f,
                        "{driver} refuses the PMSEVFR_EL1 bits that read 0 after its probe wrote \
                         all ones (the kernel's caps/event_filter lists the others; without it \
                         only the events the Arm ARM makes filterable at this version are \
                         assumed)"
                    )?,
                }
                f.write_str(
                    " and perf_event_open fails with EOPNOTSUPP; record with a broader perf \
                     filter (without these events) and keep the matching samples after decoding \
                     (`pmu-demo spe decode perf.data` with the same event options), or program \
                     the register values directly on bare metal",
                )
            }
            Self::EmptyDataSourceFilter => f.write_str(
                "the data source filter selects no data source (PMSDSFR_EL1 = 0): every sample \
                 with a data source would be dropped; select at least one source",
            ),
            Self::DiscardNotImplemented { version } => write!(
                f,
                "perf's `discard` needs FEAT_SPEv1p2 and this PE has {version}: Linux 7.3 \
                 refuses it (EOPNOTSUPP); record normally instead"
            ),
        }
    }
}

impl core::error::Error for SpeError {}

/// A setting that is legal but probably not what was meant. Warnings never stop a
/// configuration; they say what the hardware will actually do and how to get what was meant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SpeWarning {
    /// Events whose filter bit the Arm ARM makes optional at this SPE version: where the
    /// implementation lacks it, the bit reads as zero and the filter silently ignores it.
    OptionallyFilterableEvents {
        /// Which filter register.
        filter: EventFilterKind,
        /// The SPE version the check was made for.
        version: SpeVersion,
        /// The optional bits.
        bits: u64,
    },
    /// A minimum latency of 0 filters nothing, so the latency filter (FL) is left off.
    ZeroMinimumLatency,
    /// The required events cannot occur on any selected operation type (branch events on
    /// loads/stores, memory events on branches), so no sample will be recorded.
    RequiredEventsNeverOccur {
        /// The events that cannot occur.
        events: SpeEvents,
        /// The selected operation types.
        types: OperationTypes,
    },
    /// PMSFCR_EL1.FT = 1 with B = LD = ST = 0 in a raw register value: CONSTRAINED
    /// UNPREDICTABLE in the Arm ARM, so implementations may differ.
    TypeFilterWithoutTypes,
    /// PMSEVFR_EL1/PMSNEVFR_EL1 holds events while the filter enable (FE/FnE) is 0: the bits
    /// have no effect.
    EventMaskWithoutEnable {
        /// Which filter register.
        filter: EventFilterKind,
    },
    /// PMSFCR_EL1.B/LD/ST set while FT is 0: they have no effect.
    TypesWithoutTypeFilter,
    /// PMSLATFR_EL1.MINLAT set while FL is 0: it has no effect.
    LatencyWithoutLatencyFilter,
    /// perf cannot ask for CONTEXTIDR_EL1 in records: the kernel adds it on its own when the
    /// user is perfmon-capable and the kernel has CONFIG_PID_IN_CONTEXTIDR.
    PerfContextNotSelectable,
    /// perf grants `pa_enable`/`pct_enable` only to users allowed kernel profiling
    /// (`perf_event_paranoid` <= 1 or CAP_PERFMON); otherwise `perf_event_open` fails.
    PerfNeedsKernelPermission {
        /// The privileged field.
        field: PerfField,
    },
}

impl SpeWarning {
    /// The variant's name (`TypeFilterWithoutTypes`), for programs that read warnings as
    /// data (JSON) and match on it.
    pub const fn kind(&self) -> &'static str {
        variant_name!(self;
            OptionallyFilterableEvents,
            ZeroMinimumLatency,
            RequiredEventsNeverOccur,
            TypeFilterWithoutTypes,
            EventMaskWithoutEnable,
            TypesWithoutTypeFilter,
            LatencyWithoutLatencyFilter,
            PerfContextNotSelectable,
            PerfNeedsKernelPermission,
        )
    }
}

impl fmt::Display for SpeWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::OptionallyFilterableEvents {
                filter,
                version,
                bits,
            } => write!(
                f,
                "{filter}: events {bits:#x} are only optionally filterable on {version}; if this \
                 PE lacks the filter the bits read as zero and the condition is silently \
                 dropped: write the register and read it back to check"
            ),
            Self::ZeroMinimumLatency => f.write_str(
                "a minimum latency of 0 filters nothing, so the latency filter stays off: give \
                 a latency of at least 1 cycle to filter",
            ),
            Self::RequiredEventsNeverOccur { events, types } => write!(
                f,
                "required events {:#x} never occur on the selected operation types ({:#x}: \
                 bit 0 loads, 1 stores, 2 branches), so nothing will be recorded: select the \
                 types these events happen on, or drop those events",
                events.bits(),
                types.bits()
            ),
            Self::TypeFilterWithoutTypes => f.write_str(
                "PMSFCR_EL1.FT = 1 with B = LD = ST = 0 is CONSTRAINED UNPREDICTABLE (Arm ARM \
                 D24.7.12): a PE may record nothing or some operations; set B, LD or ST, or \
                 clear FT",
            ),
            Self::EventMaskWithoutEnable { filter } => write!(
                f,
                "{filter}: events are set but the filter is not enabled, so they have no \
                 effect: set the enable bit or clear the register"
            ),
            Self::TypesWithoutTypeFilter => f.write_str(
                "PMSFCR_EL1.B/LD/ST are set but FT is 0, so they have no effect: set FT to \
                 filter by type",
            ),
            Self::LatencyWithoutLatencyFilter => f.write_str(
                "PMSLATFR_EL1.MINLAT is set but PMSFCR_EL1.FL is 0, so it has no effect: set FL \
                 to filter by latency",
            ),
            Self::PerfContextNotSelectable => f.write_str(
                "perf has no format field for CONTEXTIDR_EL1 (PMSCR_EL1.CX): the kernel records \
                 it only for perfmon-capable users with CONFIG_PID_IN_CONTEXTIDR; run perf with \
                 CAP_PERFMON to get it",
            ),
            Self::PerfNeedsKernelPermission { field } => write!(
                f,
                "`{}` needs permission to profile the kernel (perf_event_paranoid <= 1 or \
                 CAP_PERFMON), otherwise perf_event_open fails with EACCES",
                field.name()
            ),
        }
    }
}
