//! Why an SPE register value or capability set cannot be used, and what to do about it.

use core::fmt;

use super::version::SpeVersion;

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
        }
    }
}

impl core::error::Error for SpeError {}
