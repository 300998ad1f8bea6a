//! The direct backend: user space programs and reads the PMU itself, after the kernel
//! module `kmod-enable-user` opened the registers to user mode (ARMv8: PMUSERENR_EL0.EN,
//! or its read-only grant; AArch32: PMUSERENR.EN; ARM1176: SUNAVCR.V, ARM1176JZF-S TRM
//! 3.2.50).
//!
//! - [`probe`] tries one register access in a forked child first (the child inherits
//!   the CPU pinning): if user access is off, the instruction traps and the child dies
//!   of SIGILL, which becomes [`crate::error::AccessError::NotEnabled`] ("user access to the PMU is
//!   not enabled: load kmod-enable-user"), never a crash of the caller;
//! - the constructors (`take_armv8`, `take_pl0`, `take_arm1176`) pin the thread to one
//!   CPU (the registers and the enable bit are per CPU), probe, and hand back the
//!   architecture crate's driver (`El0Pmu`, `Pl0Pmu`, `Arm1176Pmu<Cp15>`);
//! - [`allocate`] turns event names into counters of a `pmu_core::CounterPool`
//!   ([`OwnedCounters`]: the same, owning the PMU);
//! - [`DirectRegion`] measures regions on them, one type for every architecture
//!   ([`region`]'s table: the counters' reads, the grant check, the sentinel, the
//!   overflow flags and the CPU are its type parameters): at each edge it reads the
//!   grant first (PMUSERENR_EL0 and PMUSERENR are readable in user mode whatever they
//!   hold, so a revoked grant is an error instead of SIGILL), the CPU, the kernel-entry
//!   sentinel and the counters, and judges overflow from the flags (or end < start),
//!   migration from the CPU, kernel entries (switches included) from the sentinel;
//!   without a sentinel (the ARM1176, or no counter left for one), switches from
//!   `getrusage` at both edges. The meter's backends are such regions; a program that
//!   programs the PMU itself builds one by hand over its pool's counters.
//!
//! x86 has no direct backend: its counters are programmed with WRMSR, which needs ring
//! 0 ([`crate::error::DirectUnsupported::X86NeedsRing0`]); perf gives rdpmc there.

use crate::backend::{Backend, Opened, Request};
use crate::error::Result;

mod alloc;
pub mod grant;
#[cfg(any(target_arch = "aarch64", target_arch = "arm"))]
mod pool;
mod probe;
pub mod region;

#[cfg(all(target_arch = "arm", target_feature = "v7"))]
pub mod aarch32;
#[cfg(any(target_arch = "arm", test))]
pub mod arm1176;
#[cfg(target_arch = "aarch64")]
pub mod armv8;
#[cfg(test)]
mod tests;

// The architecture's backend: the same four names on each (`open`,
// `open_read_only_grant`, `probe`, `READ_ONLY_GRANT`), chosen here once.
#[cfg(target_arch = "aarch64")]
use armv8 as arch;
#[cfg(target_arch = "arm")]
#[path = "direct/arm.rs"]
mod arch;
#[cfg(not(any(target_arch = "aarch64", target_arch = "arm")))]
#[path = "direct/unsupported.rs"]
mod arch;

pub use alloc::{allocate, OwnedCounters};
pub use arch::probe;
#[cfg(target_arch = "aarch64")]
pub use armv8::Flags;
#[cfg(target_arch = "aarch64")]
pub use armv8::{granted_region, programmed_region};
pub use grant::{module_layout, MODULE_LAYOUT};
#[cfg(any(target_arch = "aarch64", target_arch = "arm"))]
pub use pool::pool_region;
pub use probe::{
    armv7_core_without_read_only_grant, cpuinfo_architecture, cpuinfo_is_armv7, cpuinfo_midr,
    probe_with, ARM1176_MIDR,
};
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub use region::RseqCpu;
pub use region::{
    AccessCheck, CounterSet, DefaultCpu, DirectRegion, NoFlags, NoSentinel, OverflowFlags,
    SentinelRead, Unchecked, Watching, SENTINEL_FILTER,
};

/// Whether the direct backend has a read-only grant here (ARMv8: PMUSERENR_EL0.ER or
/// ER|CR without EN), which the meter's ladder tries where perf cannot read.
pub(crate) const READ_ONLY_GRANT: bool = arch::READ_ONLY_GRANT;

/// The direct backend for `request`'s events: programming the PMU where allowed and
/// asked for, else the module's read-only grant (ARMv8); ARMv7 or the ARM1176 on
/// 32-bit ARM.
///
/// # Errors
/// The architecture's open errors; [`crate::error::Unsupported::Direct`] on x86.
pub(crate) fn open(request: &Request) -> Result<Opened<Box<dyn Backend>>> {
    arch::open(request)
}

/// The module's read-only grant ([`READ_ONLY_GRANT`]).
///
/// # Errors
/// As [`open`].
pub(crate) fn open_read_only_grant(request: &Request) -> Result<Opened<Box<dyn Backend>>> {
    arch::open_read_only_grant(request)
}
