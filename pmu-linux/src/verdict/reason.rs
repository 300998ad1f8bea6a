//! Why a value came from the `read()` system call: what the errors and the verdicts
//! both name, with no other dependency.

use std::fmt;

use pmu_core::{Fallback, Hazards};

/// Why a value came from the `read()` system call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FallbackReason {
    /// The metadata page said so.
    Page(Fallback),
    /// No metadata page is mapped (`Options::map_pages` off).
    NoPage,
}

impl FallbackReason {
    /// The hazards a value read this way carries.
    pub(crate) fn hazards(self) -> Hazards {
        Hazards::SYSCALL_FALLBACK
            | match self {
                Self::Page(fallback) => fallback.hazard(),
                Self::NoPage => Hazards::empty(),
            }
    }
}

impl fmt::Display for FallbackReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Page(fallback) => fallback.fmt(f),
            Self::NoPage => f.write_str("the metadata page is not mapped"),
        }
    }
}
