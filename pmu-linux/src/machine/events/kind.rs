//! Where an event comes from: the one fact about events the errors name.

use std::fmt;

/// Where an event comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A generic hardware event (PERF_TYPE_HARDWARE).
    Hardware,
    /// A kernel software event (PERF_TYPE_SOFTWARE): never on a hardware counter.
    Software,
    /// A generic cache event (PERF_TYPE_HW_CACHE).
    HwCache,
    /// A raw CPU event code (PERF_TYPE_RAW).
    Raw,
    /// An event of a PMU described in sysfs.
    Sysfs,
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Hardware => "hardware",
            Self::Software => "software",
            Self::HwCache => "hardware cache",
            Self::Raw => "raw",
            Self::Sysfs => "sysfs PMU",
        })
    }
}
