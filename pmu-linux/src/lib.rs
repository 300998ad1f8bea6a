//! Linux user-space access to the PMU, with a verdict for every measured region.
//!
//! Count the instructions of a function:
//!
//! ```no_run
//! # fn my_function() {}
//! # fn main() -> Result<(), pmu_linux::Error> {
//! let mut builder = pmu_linux::Meter::builder();
//! let instructions = builder.add(pmu_linux::GenericEvent::Instructions);
//! let mut meter = builder.build()?;
//! let result = meter.measure(|| my_function())?;
//! println!("{} instructions", result.min(instructions)?);
//! # Ok(()) }
//! ```
//!
//! [`Meter::builder`] takes typed events ([`GenericEvent`], raw codes, sysfs
//! `pmu/term=…/` names, or text parsed into those: [`Event`]) and
//! [`MeterBuilder::build`] opens the best backend that works on this machine, saying
//! which and why ([`Meter::backend`], [`Meter::why`]). [`Meter::measure`] runs warm-ups,
//! an empty region for calibration and the recorded runs, and gives the minimum and
//! median over the runs without hazards ([`Measured`]); [`Meter::start`] and
//! [`Meter::stop`] measure one region ([`Counts`]). Results are indexed by the
//! [`EventHandle`] each event got when it was added. A count that cannot be trusted is
//! an error that says why ([`Error::Hazardous`], [`Error::NoCleanRun`],
//! [`Error::NotCounted`]), never a silent number. `examples/count.rs` is the program
//! above, runnable.
//!
//! # Backends
//!
//! - **perf** ([`Session`], x86_64 and aarch64): `perf_event_open` of a group with a
//!   pinned leader, the metadata page of every event mapped, and reads done in user
//!   space with one instruction (`rdpmc` on x86_64, `mrs` of `PMEVCNTR<n>_EL0` /
//!   PMCCNTR_EL0 on aarch64: [`fast`]) through pmu-core's seqlock protocol
//!   ([`pmu_core::mmap_page`]); when the page says user reads are impossible, one
//!   group `read()` instead, flagged with the reason;
//! - **direct** ([`direct`]): after `kmod-enable-user` opened the PMU to user mode
//!   (ARMv8 PMUSERENR_EL0, ARM1176 SUNAVCR.V), the library reads (or programs) the
//!   counters itself through pmu-armv8 / pmu-armv6, after a probe in a child process
//!   that turns a trap into [`Error::UserAccessNotEnabled`];
//! - **software** ([`timestamp`]): where there are no hardware counters, perf's
//!   software events and the time-stamp counter.
//!
//! Every region's [`Reading`]s carry [`Hazards`]: overflow, context switch, CPU
//! migration, multiplexing, not scheduled, syscall fallback, revoked user access.
//! [`region`] documents exactly what each means and how each backend detects it;
//! [`region::Evidence`] keeps what each detector saw.
//!
//! Layers: `sys` (private: the system calls, the only `unsafe` besides the page view
//! and the counter reads), [`sysfs`] and [`events`] (names → `perf_event_attr`), [`page`]
//! (the mmapped page as a `UserPage`), [`fast`] (the per-architecture read), [`session`]
//! (the perf group), [`region`] (samples → readings + hazards), [`mod@measure`] (warm-up,
//! N runs, statistics, calibration, over any [`Counters`]), [`direct`], [`timestamp`],
//! [`sched`] (switch counts, CPU, pinning), [`list`] (what this machine offers), [`meter`] (the front door over all of them).
//! The lower layers' own types are in [`pmu_core`], re-exported whole.

mod asm;
pub mod direct;
pub mod error;
pub mod events;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub mod fast;
pub mod hybrid;
pub mod list;
pub mod measure;
pub mod meter;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub mod page;
pub mod region;
pub mod rseq;
pub mod sched;
pub mod sentinel;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub mod session;
mod sys;
pub mod sysfs;
pub mod timestamp;

/// The most events one group (or direct meter) holds.
pub const MAX_EVENTS: usize = 16;

pub use direct::{AccessCheck, DirectMeter, GenericDirectMeter, OwnedCounters, Unchecked};
pub use error::{Errno, Error, GrantMissing, OpenError, Result};
pub use events::{EventKind, EventSpec};
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub use hybrid::HybridSession;
pub use measure::{
    measure, measure_against, measure_keeping_partial, measure_once, measure_with_baseline,
    Counters, EventResult, Interrupted, MeasureConfig, Measurement, RunRecord,
};
pub use meter::{
    BackendChoice, BackendKind, Counting, Counts, Event, EventHandle, Measured, Meter,
    MeterBuilder, Region,
};
pub use pmu_core;
pub use pmu_core::{Corrected, GenericEvent, Hazards, Reading, RegionMeter, Summary};
pub use region::{Evidence, FallbackReason, ReadPath};
pub use sentinel::{Sentinel, SentinelGap};
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub use session::{Options, Session};
pub use sysfs::Sysfs;
pub use timestamp::TimestampMeter;
