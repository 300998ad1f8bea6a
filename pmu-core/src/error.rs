//! The one error type of the PMU model.

use crate::event::GenericEvent;
use crate::pmu::{PrivilegeFilter, Slot};

/// Everything that can be wrong with a request to the PMU model.
///
/// Each variant names one cause and its [`Display`](core::fmt::Display) says what to do
/// about it. Bad input is always one of these, never a panic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A counter width outside `1..=64` bits.
    InvalidWidth {
        /// The width asked for.
        bits: u32,
    },
    /// A counter index the PMU does not have.
    CounterOutOfRange {
        /// The slot asked for.
        slot: Slot,
        /// How many counters of that kind exist.
        available: u32,
    },
    /// Every counter able to count the event is already allocated.
    NoFreeCounter {
        /// How many programmable counters the PMU has in all.
        available: u32,
    },
    /// The slot is already allocated to another handle.
    CounterBusy {
        /// The slot asked for.
        slot: Slot,
    },
    /// The PMU does not implement this event (its ID registers say so).
    EventNotImplemented {
        /// The backend's event code.
        code: u64,
    },
    /// This backend has no encoding for the generic event; use a raw event.
    EventNotEncodable {
        /// The generic event.
        event: GenericEvent,
    },
    /// A raw event code wider than the backend's event field.
    RawEventOutOfRange {
        /// The raw code given.
        raw: u64,
        /// The largest code the backend accepts.
        max: u64,
    },
    /// The event cannot be counted by this (fixed-function) slot.
    EventNotCountableOnSlot {
        /// The slot asked for.
        slot: Slot,
        /// The backend's event code.
        code: u64,
    },
    /// The PMU cannot restrict counting to this combination of privilege levels.
    FilterUnsupported {
        /// The filter asked for.
        filter: PrivilegeFilter,
    },
    /// A delta was asked with zero wraps although the end value is below the start.
    InconsistentWraps,
    /// The accumulated count does not fit in 64 bits.
    DeltaOverflow,
    /// The harness was given no storage for runs.
    NoRuns,
    /// A meter was given room for a different number of readings than it has counters.
    ReadingsMismatch {
        /// Counters of the meter.
        expected: u32,
        /// Readings given room for.
        got: u32,
    },
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::InvalidWidth { bits } => {
                write!(f, "counter width of {bits} bits is invalid: use 1 to 64 bits")
            }
            Self::CounterOutOfRange { slot, available } => write!(
                f,
                "counter {slot} does not exist: this PMU has {available} of that kind"
            ),
            Self::NoFreeCounter { available } => write!(
                f,
                "all {available} programmable counters are in use: drop a counter handle or measure fewer events at once"
            ),
            Self::CounterBusy { slot } => {
                write!(f, "counter {slot} is already allocated: drop its handle first")
            }
            Self::EventNotImplemented { code } => write!(
                f,
                "event {code:#x} is not implemented by this PMU (see its event ID registers / CPUID); pick another event"
            ),
            Self::EventNotEncodable { event } => write!(
                f,
                "{event} has no encoding on this architecture: use a raw event code from the CPU manual"
            ),
            Self::RawEventOutOfRange { raw, max } => write!(
                f,
                "raw event {raw:#x} does not fit the event field (largest {max:#x})"
            ),
            Self::EventNotCountableOnSlot { slot, code } => write!(
                f,
                "counter {slot} is fixed-function and cannot count event {code:#x}: use a programmable counter"
            ),
            Self::FilterUnsupported { filter } => write!(
                f,
                "this PMU cannot count only in {filter}: it has no privilege filter for that combination"
            ),
            Self::InconsistentWraps => write!(
                f,
                "end value is below start value with no wrap recorded: the wrap count is wrong"
            ),
            Self::DeltaOverflow => write!(f, "accumulated count does not fit in 64 bits"),
            Self::NoRuns => write!(f, "the harness needs storage for at least one run"),
            Self::ReadingsMismatch { expected, got } => write!(
                f,
                "room for {got} readings given to a meter of {expected} counters"
            ),
        }
    }
}

impl core::error::Error for Error {}
