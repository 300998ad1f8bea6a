//! The kernel-entry sentinel: one counter that counts only at the kernel's privilege
//! level, read at both edges of a region. Any count means the kernel ran on the CPU
//! inside the region (an interrupt, a system call, a page fault, a preemption), which
//! the region reports as [`crate::Hazards::KERNEL_ENTRY`] with the count as evidence
//! ([`crate::verdict::Evidence::kernel_entries`]).
//!
//! Where a backend cannot have one, its meter says why ([`Sentinel::Off`]) instead of
//! reporting regions as free of kernel entries.

use std::fmt;

/// Whether a meter's regions see every kernel entry, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Sentinel {
    /// A counter counts `event` at the kernel's level only and is read at both edges.
    Counting {
        /// The event counted (`instructions`, or `cycles` where INST_RETIRED is not
        /// implemented).
        event: String,
        /// Who programmed it and how it is read.
        how: String,
    },
    /// No sentinel: regions see the kernel only through the other detectors.
    Off {
        /// Why.
        why: String,
    },
}

/// Why a backend has no sentinel when the caller switched it off
/// ([`crate::MeterBuilder::kernel_sentinel`], the perf session's `Options::kernel_sentinel`).
pub(crate) const SWITCHED_OFF: &str = "switched off (kernel_sentinel(false))";

/// Why the software backend has none.
pub(crate) const NO_HARDWARE: &str =
    "no hardware counters: the software backend has none to count the kernel with";

impl Sentinel {
    /// Whether regions are watched by a sentinel.
    pub fn is_counting(&self) -> bool {
        matches!(self, Self::Counting { .. })
    }

    /// Off, for `why`.
    pub(crate) fn off(why: impl Into<String>) -> Self {
        Self::Off { why: why.into() }
    }
}

impl fmt::Display for Sentinel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Counting { event, how } => {
                write!(
                    f,
                    "kernel-entry sentinel: {event} at the kernel's level ({how})"
                )
            }
            Self::Off { why } => write!(f, "no kernel-entry sentinel: {why}"),
        }
    }
}

/// Why a region's sentinel count is unknown ([`crate::verdict::Evidence::kernel_entries`]
/// `None` although the meter has a sentinel): the region then makes no claim either
/// way about kernel entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SentinelGap {
    /// At one edge the sentinel's page gave no one-instruction read (not on a counter:
    /// rotated out by multiplexing, or the group did not fit; or user reads were
    /// withdrawn). It is never read with `read()`: that system call would count itself.
    NoRead(pmu_core::Fallback),
    /// Its page times advanced by different amounts (`time_enabled` ≠
    /// `time_running`): it was off its counter for part of the region, so kernel
    /// entries in that part were not counted.
    Multiplexed,
}

impl fmt::Display for SentinelGap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoRead(why) => write!(
                f,
                "kernel entries unknown: the sentinel could not be read at an edge ({why})"
            ),
            Self::Multiplexed => f.write_str(
                "kernel entries unknown: the sentinel was off its counter for part of the \
                 region (multiplexed)",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn says_what_it_is() {
        let on = Sentinel::Counting {
            event: "instructions".into(),
            how: "kernel-only member of the perf group, read through its page".into(),
        };
        assert!(on.is_counting());
        assert_eq!(
            on.to_string(),
            "kernel-entry sentinel: instructions at the kernel's level \
             (kernel-only member of the perf group, read through its page)"
        );
        let off = Sentinel::off("perf_event_paranoid 2 forbids counting the kernel");
        assert!(!off.is_counting());
        assert_eq!(
            off.to_string(),
            "no kernel-entry sentinel: perf_event_paranoid 2 forbids counting the kernel"
        );
    }
}
