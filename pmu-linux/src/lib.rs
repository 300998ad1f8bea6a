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
//! `add` returns the [`EventHandle`] that indexes the results; `build` opens the best
//! backend that works on this machine (or the one [`MeterBuilder::backend`] names) and
//! says which and why ([`Meter::why`]);
//! `measure` runs warm-ups, an empty region for calibration and the recorded runs, and
//! `min` is the smallest count over the runs without hazards. One region at a time is
//! `let region = meter.start()?; …; meter.stop(region)?`. A count that cannot be trusted
//! is an [`Error`] that says why, never a silent number. `examples/count.rs` is the
//! program above, runnable.
//!
//! # Backends
//!
//! - **perf** (x86_64, aarch64): `perf_event_open` of a group with a pinned leader, the
//!   metadata page of every event mapped, and each read done in user space with one
//!   instruction (`rdpmc`, `mrs PMEVCNTR<n>_EL0`) through pmu-core's seqlock protocol;
//!   one group `read()` where the page says user reads are impossible (flagged, with the
//!   reason). On big.LITTLE machines the events are opened on every core PMU and summed.
//! - **direct** (ARMv8, ARMv7, ARM1176): after `kmod-enable-user` opened the PMU to user
//!   mode, the library reads (or, when allowed, programs) the counters itself; a probe
//!   in a child process turns a trap into an error instead of a SIGILL.
//! - **software**: where there are no hardware counters (a VM without vPMU), perf's
//!   software events and the time-stamp counter; hardware events are then not counted,
//!   and asking for them is an error with the reason.
//!
//! # Verdicts
//!
//! Every [`Reading`] carries [`Hazards`]: overflow, context switch, CPU migration,
//! kernel entry, multiplexing, not scheduled, syscall fallback, revoked user access. The
//! [`verdict`] module documents what each means and how each backend detects it, and
//! keeps the evidence each detector saw.
//!
//! # Below the front door
//!
//! The backends themselves are public for programs that build a region by hand:
//! `perf` (64-bit architectures) and [`direct`], the [`measure`] functions over
//! either, and [`machine`] (what this machine offers: backends, PMUs, events, CPUs).
//! pmu-core's types are re-exported as `pmu_linux::pmu_core`.

mod asm;
mod backend;
mod meter;
mod sentinel;
mod sys;

pub mod direct;
pub mod error;
pub mod machine;
pub mod measure;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub mod perf;
pub mod verdict;

/// The most events one group (or direct region) holds: [`Meter::MAX_EVENTS`].
pub(crate) const MAX_EVENTS: usize = 16;

// The front door; everything else is reached through its module.
pub use backend::{BackendKind, Grant, Reads, SlowReads};
pub use error::{Error, Result};
pub use measure::MeasureConfig;
pub use meter::choose::{Choice, NoHardware, Refusal};
pub use meter::{Counts, Event, EventHandle, Measured, Meter, MeterBuilder, Region};
pub use pmu_core;
pub use pmu_core::{GenericEvent, Hazards, Reading};
pub use sentinel::Sentinel;
