//! Architecture-neutral core of the PMU workspace.
//!
//! Everything here is plain `no_std` Rust without inline assembly, so it is tested on
//! the host and shared by every place a counter is read:
//!
//! - [`width`]: counter widths (1..=64 bits), wrap-safe deltas, sign extension and
//!   accumulation across a known number of wraps;
//! - [`hazards`]: the [`Hazards`] flags and the [`Reading`] that carries a value together
//!   with everything that makes it untrustworthy;
//! - [`event`]: generic events (cycles, instructions, …) and the [`EventEncoding`] trait
//!   each backend implements to map them to its own encoding, raw events always allowed;
//! - [`pmu`]: the [`Pmu`] trait for backends that program counters directly, the
//!   capability-checked [`CounterPool`], the [`Counter`] handle that disables its slot
//!   when dropped, and [`CounterRead`], the one-instruction read of a counter handle;
//! - [`mmap_page`]: the user-space read protocol of Linux's `perf_event_mmap_page`
//!   (lock/index/offset/pmc_width seqlock), written against the [`UserPage`] trait;
//! - [`harness`]: the region-measurement harness (warm-up, N runs, min and median,
//!   calibration that subtracts the cost of an empty region, hazards per run);
//! - [`fake`]: a software PMU with the same trait, for tests and documentation.
//!
//! Architecture backends live in `pmu-x86`, `pmu-armv6` and `pmu-armv8`; Linux user space
//! in `pmu-linux`.
#![no_std]

#[cfg(test)]
extern crate std;

pub mod error;
pub mod event;
pub mod fake;
pub mod harness;
pub mod hazards;
pub mod mmap_page;
pub mod pmu;
pub mod width;

pub use error::Error;
pub use event::{Event, EventEncoding, GenericEvent};
pub use harness::{Corrected, CounterMeter, Harness, RegionMeter, Run, Summary};
pub use hazards::{Hazards, Reading};
pub use mmap_page::{ClockConversion, Fallback, PageRead, UserPage};
pub use pmu::{Capabilities, Counter, CounterPool, CounterRead, Pmu, PrivilegeFilter, Slot};
pub use width::CounterWidth;

/// The README (what crates.io shows), its example run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
