//! Linux user-space access to the PMU, with a verdict for every measured region.
//!
//! Two backends behind one API (open a set of events, enable, measure a region,
//! disable), both [`Counters`]:
//!
//! - **perf** ([`Session`], x86_64 and aarch64): `perf_event_open` of a group with a
//!   pinned leader, the metadata page of every event mapped, and reads done in user
//!   space with one instruction (`rdpmc` on x86_64, `mrs` of `PMEVCNTR<n>_EL0` /
//!   PMCCNTR_EL0 on aarch64: [`fast`]) through pmu-core's seqlock protocol
//!   ([`pmu_core::mmap_page`]); when the page says user reads are impossible, one
//!   group `read()` instead, flagged with the reason;
//! - **direct** ([`direct`]): after `kmod-enable-user` opened the PMU to user mode
//!   (ARMv8 PMUSERENR_EL0.EN, ARM1176 SUNAVCR.V), the library programs and reads the
//!   counters itself through pmu-armv8 / pmu-armv6, after a probe in a child process
//!   that turns a trap into [`Error::UserAccessNotEnabled`].
//!
//! Every region's [`pmu_core::Reading`]s carry [`pmu_core::Hazards`]: overflow,
//! context switch, CPU migration, multiplexing, not scheduled, syscall fallback,
//! revoked user access. [`region`] documents exactly what each means and how each
//! backend detects it; [`region::Evidence`] keeps what each detector saw.
//!
//! Layers: `sys` (private: the system calls, the only `unsafe` besides the page view
//! and the counter reads), [`sysfs`] and [`events`] (names → `perf_event_attr`), [`page`]
//! (the mmapped page as a `UserPage`), [`fast`] (the per-architecture read), [`session`]
//! (the perf group), [`region`] (samples → readings + hazards), [`mod@measure`] (warm-up,
//! N runs, statistics, calibration), [`direct`], [`sched`] (switch counts, CPU,
//! pinning), [`mod@bench`] (the read paths' costs), [`list`] (what this machine offers).
//!
//! ```no_run
//! # #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
//! # fn main() -> Result<(), pmu_linux::Error> {
//! use pmu_linux::{measure, MeasureConfig, Options, Session};
//!
//! let mut session = Session::open(&["cycles", "instructions", "task-clock"], Options::default())?;
//! session.enable()?;
//! let mut data = vec![1.0f64; 1 << 16];
//! let m = measure(&mut session, &MeasureConfig::default(), &mut || {
//!     data.iter_mut().for_each(|x| *x = x.mul_add(1.000_001, 0.5));
//! })?;
//! for e in &m.events {
//!     println!("{}: min {:?} over {} clean runs, hazards seen: {}", e.name,
//!              e.corrected.and_then(|c| c.min), e.summary.clean, e.summary.hazards);
//! }
//! # Ok(()) }
//! # #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
//! # fn main() {}
//! ```

mod asm;
pub mod bench;
pub mod direct;
pub mod error;
pub mod events;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub mod fast;
pub mod list;
pub mod measure;
pub mod meter;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub mod page;
pub mod region;
pub mod rseq;
pub mod sched;
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
pub use measure::{
    measure, measure_against, measure_keeping_partial, measure_once, measure_with_baseline,
    Counters, EventResult, Interrupted, MeasureConfig, Measurement, RunRecord,
};
pub use meter::{
    BackendChoice, BackendKind, Counts, Event, EventHandle, Measured, Meter, MeterBuilder,
};
pub use pmu_core::{Corrected, GenericEvent, Hazards, Reading, Summary};
pub use region::{Evidence, FallbackReason, ReadPath};
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub use session::{Options, Session};
pub use sysfs::Sysfs;
pub use timestamp::TimestampMeter;
