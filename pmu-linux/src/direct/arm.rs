//! 32-bit ARM: the ARMv7 backend ([`super::aarch32`]) on ARMv7 and later CPUs, the
//! ARM1176 backend ([`super::arm1176`]) on the Raspberry Pi 1 and Zero, chosen at run
//! time from /proc/cpuinfo (one binary runs on both).

use crate::backend::{Backend, Opened, Request};
use crate::error::Result;

/// The ARMv7 build has the read-only grant of PMUv3 seen from AArch32 (PMUSERENR.ER |
/// CR; PMUv2 has EN alone, and the ARM1176's one grant programs: the ARMv6 build has
/// none).
pub(super) const READ_ONLY_GRANT: bool = cfg!(target_feature = "v7");

/// Whether User mode may program the ARM1176's PMU (SUNAVCR.V): one PMCR read in a
/// child on the CPU this thread runs on (pin first: the grant is per CPU). On ARMv7
/// CPUs the c15 read is UNDEFINED at PL0 whatever the grant; the ARMv7 backend
/// probes its own c9 PMCR when it opens.
///
/// # Errors
/// [`crate::error::AccessError::NotEnabled`]; [`crate::error::AccessError::ProbeFailed`].
pub(super) fn probe() -> Result<()> {
    super::probe::probe_with(super::arm1176::probe_access)
}

/// The programming grant, the only one the survey asks for here (see
/// [`super::grants`]): [`probe`] on the CPU this thread runs on.
pub(super) fn grants(_cpu: usize) -> crate::backend::GrantCheck {
    crate::backend::GrantCheck::Programming(probe())
}

/// The direct backend of this CPU.
///
/// # Errors
/// As [`super::aarch32::open`] or [`super::arm1176::open`].
pub(super) fn open(request: &Request) -> Result<Opened<Box<dyn Backend>>> {
    #[cfg(target_feature = "v7")]
    if super::aarch32::is_armv7_cpu() {
        return super::aarch32::open(request);
    }
    super::arm1176::open(request)
}

/// The module's read-only grant on an ARMv7 or later CPU ([`super::aarch32`]); the
/// ARM1176 has none: its programming grant, as [`open`].
///
/// # Errors
/// As [`super::aarch32::open_read_only_grant`] or [`super::arm1176::open`].
pub(super) fn open_read_only_grant(request: &Request) -> Result<Opened<Box<dyn Backend>>> {
    #[cfg(target_feature = "v7")]
    if super::aarch32::is_armv7_cpu() {
        return super::aarch32::open_read_only_grant(request);
    }
    open(request)
}
