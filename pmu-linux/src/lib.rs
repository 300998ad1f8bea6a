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
//!   Where the module runs its per-thread grant (its `cpu_wide` parameter reads N and
//!   /dev/kmod_enable_user exists), the backend asks it for the grant of the thread
//!   that opens the meter (GRANT, kmod-enable-user/stock/kmod_enable_user_uapi.h); the
//!   thread's other meters share it, and dropping the last ends it. [`choice::Choice::grant`]
//!   says which grant is in force ([`choice::GrantScope`]).
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
//! # SIGILL
//!
//! perf takes the per-thread grant away under a running thread: arm64
//! `armv8pmu_start()` (drivers/perf/arm_pmuv3.c, Linux 6.12 and 7.3) writes
//! PMUSERENR_EL0 = 0 at every overflow interrupt, multiplexing rotation and watchdog
//! tick, and the next counter read traps. So when a per-thread grant is first in use
//! (aarch64), the library installs a SIGILL handler for the whole process
//! (`sigaction`, `SA_SIGINFO`), once, and keeps the action it replaced. Its rules:
//!
//! - it decodes the faulting instruction; a SIGILL that is not an access the grant
//!   opens (under the read grant: reads of `PMEVCNTR<n>_EL0`, PMXEVCNTR_EL0 and
//!   PMCCNTR_EL0, PMSELR_EL0 both ways; under the programming grant any `MRS`/`MSR` of
//!   a PMU register), or that comes in another process than the one that installed it
//!   (a child after `fork`), goes to the action SIGILL had before: a handler of the
//!   program's is called with the same arguments (the library's stays installed); the
//!   default action is put back and the handler returns, so the instruction raises
//!   SIGILL again and the process ends as without the library. A program's own SIGILL
//!   handler installed *before* the first meter keeps working; one installed *after*
//!   replaces the library's, and the re-grant then is the program's to make;
//! - a trapped counter read of a thread that holds the grant: the handler asks the
//!   module to put it back (REGRANT, one `ioctl`, async-signal-safe) and returns, so
//!   the read runs again; the counters' values are untouched, but the handler's own
//!   instructions (and those of a re-grant at the stop's check) ran at EL0 between the
//!   region's reads and are in its counts, so such a region is flagged
//!   [`Hazards::USER_ACCESS_REVOKED`] (about 90 instructions too many on the arm64
//!   guests); the region's evidence counts the re-grant ([`verdict::Evidence::regrants`]);
//! - a re-grant that answers `KMOD_EU_REGRANT_LOST`: the thread had run where the
//!   module's counters did not count for it (a CPU that `cpus=` leaves out, one where
//!   perf holds a counter of the module's layout, or perf had stopped the PMU), and the
//!   module withheld the grant since, so this read is the first after the gap. The read
//!   runs again, granted, and the region's stop is [`error::AccessError::ReadTrapped`]
//!   with that reason: its count is short, so it is never given as one (a region that
//!   begins with such a re-grant is counted: the gap came before it);
//! - a re-grant that fails, or a thread without the grant: the handler writes 0 to
//!   the read's destination register, steps over it and marks the thread, and the
//!   region's stop is [`error::AccessError::ReadTrapped`] with the reason: never a
//!   silent 0;
//! - it only reads the instruction and thread-local `Cell`s (const-initialised: no
//!   lazy initialisation, no allocation), calls `ioctl`, `getpid` and `sigaction`, and
//!   keeps `errno`. The instruction is read from the faulting address: text mapped
//!   execute-only would fault there. Linked into an executable, the thread-locals are
//!   loads from the thread pointer. In a shared library that was `dlopen`ed, glibc may
//!   give a thread its block of the library's thread-locals only at that thread's first
//!   access (`__tls_get_addr`, which may allocate: not async-signal-safe). A granted
//!   thread has made that access before any trap (the grant is recorded in them); a
//!   thread that traps without ever having used the library may make it inside the
//!   handler.
//!
//! # Modules
//!
//! Each answers one question about the meter:
//!
//! - [`choice`]: which backend a meter opened and why ([`Meter::choice`]): what the
//!   ladder refused before it, how it reads, under which kmod-enable-user grant;
//! - [`survey`]: what `pmu-demo list` prints: every backend on this machine, asked of
//!   the same rungs, with the user-read policy, the PMUs and which events open;
//! - [`measure`]: what [`Meter::measure_with`] runs and returns (its config, the runs,
//!   their statistics, a measurement interrupted on the way);
//! - [`verdict`]: what every hazard means, and the evidence each region's readings
//!   were judged on ([`Meter::evidence`]), the kernel-entry sentinel included;
//! - [`machine`]: what this machine is: the PMUs in sysfs and their events, the
//!   cores, the user-read policy, why there are no hardware counters;
//! - `perf` (64-bit architectures): how the meter opens perf's events
//!   (`perf::Options`, [`MeterBuilder`]'s `perf_options`), and perf's own session for
//!   what the meter does not give: each read path alone (`pmu-demo bench`), a command
//!   counted like `perf stat` (`perf::CommandCount`);
//! - [`error`]: every error, by kind.
//!
//! pmu-core's types are re-exported as `pmu_linux::pmu_core`. The direct backend's
//! parts (a region built by hand over counters a program programs itself) and thread
//! pinning are not public: a [`MeterBuilder`] opens the direct backend
//! ([`MeterBuilder::program_the_pmu`] to program it, [`Meter::preset_before_wrap`] to
//! see an overflow flagged) and pins its thread ([`MeterBuilder::cpu`]).
//!
//! # Feature `rig`
//!
//! Off by default, and not part of the stable API: the workspace's guest rigs (crate
//! pmu-guest, the QEMU end-to-end runs) read internals through it, to measure what the
//! front door hides (each read path's cost, one big.LITTLE group, a region over
//! handles of their own). With it, these become public: the module `direct` (the
//! constructors `armv8::take_armv8`, `armv8::take_granted`, `aarch32::take_pl0`,
//! `arm1176::take_arm1176`, then `allocate`, `pool_region`, `probe`, `take_trap`,
//! `DirectRegion` with `new`, `enable`, `disable` and `evidence`, `Watching`,
//! `SENTINEL_FILTER` and `module_layout`); in `perf`, `HybridSession`, `CoreTopology`,
//! `CorePmu`, `MmapPage`, `read`, `read_now`, `Options::kernel_sentinel`, and
//! `Session`'s `sentinel`, `evidence`, `reset`, `len`, `is_empty`, `read_count`,
//! `syscall_free`, `cpu_from_rseq`, `page` and `specs`; in `machine`, `EventSpec` and
//! thread pinning (`pin_to`, `PinGuard`, `current_cpu`); `Event::direct` (an event as
//! the direct backend's counter pools count it); in `measure`, `measure`, `measure_once`
//! and `measure_with_baseline` over a backend of their own;
//! `verdict::Evidence::context_switched`.
//! Without it they are crate-private.

/// Declares an item public under the feature `rig` and crate-private without it (one
/// declaration; the crate docs list what it covers). Without the feature an item only
/// the rigs call is unused, hence `dead_code` is allowed there.
macro_rules! rig_pub {
    ($(#[$meta:meta])* pub $($item:tt)*) => {
        $(#[$meta])*
        #[cfg(feature = "rig")]
        pub $($item)*

        $(#[$meta])*
        #[cfg(not(feature = "rig"))]
        #[allow(dead_code)]
        pub(crate) $($item)*
    };
}

mod asm;
mod backend;
mod meter;
mod sentinel;
mod sys;

// The direct backend's parts, for a region built by hand: the rigs' (feature `rig`).
#[cfg(feature = "rig")]
pub mod direct;
#[cfg(not(feature = "rig"))]
mod direct;
pub mod error;
pub mod machine;
pub mod measure;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub mod perf;
pub mod verdict;

/// The most events one group (or direct region) holds: [`Meter::MAX_EVENTS`].
pub(crate) const MAX_EVENTS: usize = 16;

// The front door; everything else is reached through its module.
pub use backend::BackendKind;
pub use error::{Error, Result};
pub use meter::{choice, survey};
pub use meter::{Counts, Event, EventHandle, Measured, Meter, MeterBuilder, Region};
pub use pmu_core;
pub use pmu_core::{GenericEvent, Hazards, Reading};
