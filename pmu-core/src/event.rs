//! Generic events and the mapping to each backend's encoding.
//!
//! The generic set follows Linux's `PERF_COUNT_HW_*` and the most used cache events
//! (include/uapi/linux/perf_event.h); each backend says which it can encode through
//! [`EventEncoding`]. A raw event (the number from the CPU manual) is always possible.

/// An event every PMU family knows by some number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GenericEvent {
    /// Core clock cycles (`PERF_COUNT_HW_CPU_CYCLES`).
    CpuCycles,
    /// Instructions retired / architecturally executed (`PERF_COUNT_HW_INSTRUCTIONS`).
    Instructions,
    /// Branch instructions retired (`PERF_COUNT_HW_BRANCH_INSTRUCTIONS`).
    BranchInstructions,
    /// Mispredicted branches (`PERF_COUNT_HW_BRANCH_MISSES`).
    BranchMisses,
    /// Last-level cache references (`PERF_COUNT_HW_CACHE_REFERENCES`).
    CacheReferences,
    /// Last-level cache misses (`PERF_COUNT_HW_CACHE_MISSES`).
    CacheMisses,
    /// Level 1 data cache accesses (`L1-dcache-loads`).
    L1dAccess,
    /// Level 1 data cache refills (`L1-dcache-load-misses`).
    L1dRefill,
    /// Level 1 instruction cache refills (`L1-icache-load-misses`).
    L1iRefill,
    /// Data TLB refills (`dTLB-load-misses`).
    DtlbRefill,
    /// Cycles the front end stalled (`PERF_COUNT_HW_STALLED_CYCLES_FRONTEND`).
    StalledCyclesFrontend,
    /// Cycles the back end stalled (`PERF_COUNT_HW_STALLED_CYCLES_BACKEND`).
    StalledCyclesBackend,
    /// Bus cycles (`PERF_COUNT_HW_BUS_CYCLES`).
    BusCycles,
    /// Reference cycles at a constant rate (`PERF_COUNT_HW_REF_CPU_CYCLES`).
    RefCycles,
}

impl GenericEvent {
    /// Every generic event, in declaration order.
    pub const ALL: [GenericEvent; 14] = [
        Self::CpuCycles,
        Self::Instructions,
        Self::BranchInstructions,
        Self::BranchMisses,
        Self::CacheReferences,
        Self::CacheMisses,
        Self::L1dAccess,
        Self::L1dRefill,
        Self::L1iRefill,
        Self::DtlbRefill,
        Self::StalledCyclesFrontend,
        Self::StalledCyclesBackend,
        Self::BusCycles,
        Self::RefCycles,
    ];

    /// The name `perf list` uses for this event.
    pub const fn perf_name(self) -> &'static str {
        match self {
            Self::CpuCycles => "cycles",
            Self::Instructions => "instructions",
            Self::BranchInstructions => "branches",
            Self::BranchMisses => "branch-misses",
            Self::CacheReferences => "cache-references",
            Self::CacheMisses => "cache-misses",
            Self::L1dAccess => "L1-dcache-loads",
            Self::L1dRefill => "L1-dcache-load-misses",
            Self::L1iRefill => "L1-icache-load-misses",
            Self::DtlbRefill => "dTLB-load-misses",
            Self::StalledCyclesFrontend => "stalled-cycles-frontend",
            Self::StalledCyclesBackend => "stalled-cycles-backend",
            Self::BusCycles => "bus-cycles",
            Self::RefCycles => "ref-cycles",
        }
    }

    /// The generic event `perf list` calls `name`.
    pub fn from_perf_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.perf_name() == name)
    }
}

impl core::fmt::Display for GenericEvent {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.perf_name())
    }
}

/// What to count: a generic event or a backend's raw code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    /// A generic event, encoded by the backend.
    Generic(GenericEvent),
    /// A raw event code as the CPU manual gives it (backend-specific layout).
    Raw(u64),
}

impl From<GenericEvent> for Event {
    fn from(event: GenericEvent) -> Self {
        Self::Generic(event)
    }
}

/// A backend's event encoding.
pub trait EventEncoding: Sized + Copy {
    /// The encoding of a generic event, `None` where the architecture has none.
    fn from_generic(event: GenericEvent) -> Option<Self>;

    /// A raw code, checked against the width of the backend's event field.
    ///
    /// # Errors
    /// [`crate::Error::RawEventOutOfRange`] when `raw` does not fit.
    fn from_raw(raw: u64) -> Result<Self, crate::Error>;

    /// The code as a number (for messages and for [`crate::Error`]).
    fn code(self) -> u64;

    /// Encodes `event`.
    ///
    /// # Errors
    /// [`crate::Error::EventNotEncodable`] or [`crate::Error::RawEventOutOfRange`].
    fn encode(event: Event) -> Result<Self, crate::Error> {
        match event {
            Event::Generic(g) => {
                Self::from_generic(g).ok_or(crate::Error::EventNotEncodable { event: g })
            }
            Event::Raw(raw) => Self::from_raw(raw),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_names_round_trip_and_are_unique() {
        for e in GenericEvent::ALL {
            assert_eq!(GenericEvent::from_perf_name(e.perf_name()), Some(e));
        }
        assert_eq!(GenericEvent::from_perf_name("cycle"), None);
    }
}
