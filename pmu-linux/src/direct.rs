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
//! - [`allocate`] turns event names into counters of a `pmu_core::CounterPool`;
//! - [`DirectRegion`] measures regions on them, one type for every architecture (the
//!   counters' reads, the grant check, the sentinel, the overflow flags and the CPU are
//!   its type parameters): at each edge it reads the
//!   grant first (PMUSERENR_EL0 and PMUSERENR are readable in user mode whatever they
//!   hold, so a revoked grant is an error instead of SIGILL), the CPU, the kernel-entry
//!   sentinel and the counters, and judges overflow from the flags (or end < start),
//!   migration from the CPU, kernel entries (switches included) from the sentinel;
//!   without a sentinel (the ARM1176, or no counter left for one), switches from
//!   `getrusage` at both edges. The meter's backends are such regions.
//!
//! Programs reach this backend through the meter ([`crate::MeterBuilder::backend`],
//! `program_the_pmu`); the module is public only under the feature `rig`, for the
//! workspace's guest rigs, which build regions by hand over counters they program
//! themselves (`pool_region`, ARM) or over handles and a sentinel of their own
//! choosing (`DirectRegion::new`).
//!
//! x86 has no direct backend: its counters are programmed with WRMSR, which needs ring
//! 0 ([`crate::error::DirectUnsupported::X86NeedsRing0`]); perf gives rdpmc there.

use crate::backend::{Backend, GrantCheck, Opened, Request};
use crate::error::Result;

// Every target builds these (the error types name the grant's; the host tests run the
// ARM code against fakes), ARM uses them: elsewhere parts of them are unused. The
// per-thread grant is arm64's alone; the ARM1176 backend allocates no sentinel.
#[cfg_attr(
    not(any(
        target_arch = "aarch64",
        all(target_arch = "arm", target_feature = "v7")
    )),
    allow(dead_code)
)]
mod alloc;
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
pub(crate) mod grant;
// A region by hand over a pool's counters: the rigs' (feature `rig`).
#[cfg(any(target_arch = "aarch64", target_arch = "arm"))]
#[cfg_attr(not(feature = "rig"), allow(dead_code))]
mod pool;
#[cfg_attr(
    not(any(target_arch = "aarch64", target_arch = "arm")),
    allow(dead_code)
)]
pub(crate) mod probe;
pub(crate) mod region;

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

// What the rigs (feature `rig`) use to build a region by hand over counters they
// program themselves: the constructors in the architecture's module, then `allocate`
// and `pool_region`. `take_trap` says whether such a program's own read trapped under
// the library's SIGILL handler.
#[cfg(feature = "rig")]
pub use alloc::allocate;
#[cfg(feature = "rig")]
pub use grant::take_trap;
#[cfg(all(feature = "rig", any(target_arch = "aarch64", target_arch = "arm")))]
pub use pool::pool_region;
#[cfg(any(feature = "rig", test))]
pub use region::DirectRegion;

// The rigs' view (the crate docs' "Feature `rig`"): `DirectRegion::new` with
// `Watching` and `SENTINEL_FILTER` for a region over handles and a sentinel of the
// rig's own choosing (ARMv8), and the module's layout as the module wrote it.
#[cfg(feature = "rig")]
pub use grant::module_layout;
#[cfg(feature = "rig")]
pub use region::{Watching, SENTINEL_FILTER};

rig_pub! {
    /// Whether user mode may program the PMU of the CPU this thread runs on (pin first: the
    /// grant is per CPU): one register access in a forked child (ARMv8: PMCR_EL0 under
    /// PMUSERENR_EL0.EN; 32-bit ARM: the ARM1176's PMCR under SUNAVCR.V).
    ///
    /// # Errors
    /// [`crate::error::AccessError::NotEnabled`]; [`crate::error::AccessError::GrantMissing`];
    /// [`crate::error::AccessError::ProbeFailed`];
    /// [`crate::error::Unsupported::Direct`] on x86.
    pub fn probe() -> Result<()> {
        arch::probe()
    }
}

/// What the direct backend finds on `cpu` without taking the PMU over: each grant
/// kmod-enable-user gave there, or why not. The survey's answer
/// ([`crate::machine::Survey`]), from the same checks the architecture's [`open`] and
/// [`open_read_only_grant`] make before they take the PMU (ARMv8: the module's layout
/// read under its read-only grant, the programming grant probed in a child, or this
/// thread's grant asked of the module and given back at once).
pub(crate) fn grants(cpu: usize) -> GrantCheck {
    arch::grants(cpu)
}

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
