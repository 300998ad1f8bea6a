//! The perf backend by hand, below the [`crate::Meter`]: a [`Session`] is one perf
//! group read through its metadata pages ([`Options`] say how it opens); a
//! [`CommandCount`] counts a whole command with its threads and children (`perf stat --
//! CMD`). On a big.LITTLE machine the meter's `HybridSession` sums generic events over
//! every core PMU; it, and `read()`, the one-instruction read of one page, are
//! crate-private (public only under the feature `rig`, for the workspace's guest rigs). 64-bit architectures only
//! (perf-event-open-sys has bindings for those).
//!
//! # A session
//!
//! A group of events opened with `perf_event_open`, each with its metadata page mapped.
//!
//! Opening follows perf's group pattern (perf_event_open(2)): the first event is the group leader,
//! `pinned` so the group is never multiplexed (it stays on the counters or goes into an
//! error state, which a read reports), every event opened `disabled` and enabled,
//! disabled and reset together with `PERF_IOC_FLAG_GROUP`, hardware events restricted
//! to user space (`exclude_kernel`, `exclude_hv`) so paranoid level 2 suffices. Every
//! event of a group of two or more is `read_format = GROUP | TOTAL_TIME_ENABLED |
//! TOTAL_TIME_RUNNING | ID`, so one `read()` of the leader returns `{ nr, time_enabled,
//! time_running, { value, id }[nr] }` for the whole group: the fallback when a page says
//! user reads are impossible. A single event is opened without `GROUP` (`{ value,
//! time_enabled, time_running, id }`): the kernel's group read (core.c
//! `perf_read_group`) allocates and frees a buffer on every call, which made a
//! one-event `read()` cost 4700 instructions in the arm64 test kernel (its kmemleak
//! tracks every allocation) against 1300 for the single-event read (`perf_read_one`)
//! that libperf does.
//!
//! Software events are the kernel's own counters and never sit on a hardware
//! counter: their page always has `index` 0, so they are read with `read()`. They count
//! in kernel context (a context switch or migration happens there: include/linux/
//! perf_event.h `perf_sw_event_sched` passes kernel registers), so `exclude_kernel` is
//! not set for them by default ([`Options::software_counts_kernel`]); with it set,
//! `context-switches` and `cpu-migrations` stay 0.
//!
//! Measured on this project's x86 VM (Linux 6.18) for groups of the calling thread's
//! software events: a `task-clock` or `cpu-clock` that is *not* the leader is brought
//! up to date only when the group is scheduled out or disabled (a `read()` between two
//! switches returns its count as of the last switch), and a `context-switches` member
//! of a group led by `task-clock` misses voluntary switches (involuntary ones are
//! counted). Lead a software group with the event whose count matters; hazard
//! detection never relies on a `context-switches` member alone.

mod command;
mod group;
pub(crate) mod hybrid;
mod kernel_member;
pub(crate) mod options;
pub(crate) mod page;
pub(crate) mod read;
mod region;
mod session;
#[cfg(test)]
mod tests;
pub(crate) mod topology;

pub use command::{CommandCount, CommandEnd, CommandRun, EventTotal};
pub use group::GroupRead;
pub use options::Options;
pub use session::Session;

// The rigs' view (the crate docs' "Feature `rig`").
#[cfg(feature = "rig")]
pub use hybrid::HybridSession;
#[cfg(feature = "rig")]
pub use page::MmapPage;
#[cfg(feature = "rig")]
pub use read::{read, read_now};
#[cfg(feature = "rig")]
pub use topology::{CorePmu, CoreTopology};
