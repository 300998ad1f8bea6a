//! The one trait every backend implements: what a [`crate::Meter`] holds and what the
//! [`mod@crate::measure`] functions drive.
//!
//! It lives in a private module: programs can pass the crate's backends (the perf
//! `Session`, the direct meters, the time-stamp counter) to the measure functions, but
//! cannot name or implement the trait, so it can change with the backends.

use pmu_core::RegionMeter;

use crate::error::{Error, Result};
use crate::verdict::Evidence;
use crate::Sentinel;

/// A set of counters that measures regions: pmu-core's [`RegionMeter`] plus names,
/// enable/disable, the evidence of the last region and the kernel-entry sentinel.
pub trait Backend: RegionMeter<Error = Error> {
    /// The events, in reading order.
    fn names(&self) -> Vec<String>;
    /// Starts counting.
    ///
    /// # Errors
    /// The backend's.
    fn enable(&mut self) -> Result<()>;
    /// Stops counting.
    ///
    /// # Errors
    /// The backend's.
    fn disable(&mut self) -> Result<()>;
    /// What the last [`RegionMeter::stop`] saw.
    fn evidence(&self) -> Evidence;
    /// Whether this backend's regions are watched by a kernel-entry sentinel, and how;
    /// or why not. [`crate::Meter::sentinel`] reports it as it is.
    fn sentinel(&self) -> Sentinel;
}
