//! The forked-child probe that turns a trap into an error, and what /proc/cpuinfo says
//! of the CPU: shared by every architecture's direct backend.

use crate::error::{Error, Op, Result};
use crate::sys::{self, ChildEnd};

/// Runs `access` (one register access that traps without user access) in a forked
/// child and classifies the outcome.
///
/// # Errors
/// [`crate::error::AccessError::NotEnabled`] when the child died of SIGILL and the module is not
/// loaded, [`crate::error::AccessError::GrantMissing`] when it is;
/// [`crate::error::AccessError::ProbeFailed`] for any other abnormal end; [`Error::Io`] when the
/// child could not be started.
pub fn probe_with(access: fn()) -> Result<()> {
    let end = sys::run_in_child(access)
        .map_err(|errno| crate::error::Error::syscall(Op::Probe, errno))?;
    classify(end)
}

pub(super) fn classify(end: ChildEnd) -> Result<()> {
    match end {
        ChildEnd::Exited(0) => Ok(()),
        // Not loaded, or loaded and its grant gone: the module's sysfs state tells.
        ChildEnd::Signaled(libc::SIGILL) => Err(super::grant::trapped()),
        ChildEnd::Signaled(signal) => Err(Error::Access(crate::error::AccessError::ProbeFailed {
            status: signal,
        })),
        ChildEnd::Exited(code) => Err(Error::Access(crate::error::AccessError::ProbeFailed {
            status: code << 8,
        })),
    }
}

/// The ARM1176's `CPU implementer` and `CPU part` as Linux prints them in /proc/cpuinfo
/// (arch/arm/kernel/setup.c `c_show`: MIDR bits 31:24 and 15:4; ARM_CPU_PART_ARM1176 =
/// 0x4100b760 in arch/arm/include/asm/cputype.h).
#[cfg(any(target_arch = "arm", test))]
pub const ARM1176_MIDR: (u32, u32) = (0x41, 0xb76);

/// The "CPU architecture" value of the first CPU in /proc/cpuinfo text ("7", "6TEJ",
/// "8" on arm64 kernels), `None` when the line is missing.
#[cfg(any(all(target_arch = "arm", target_feature = "v7"), test))]
pub fn cpuinfo_architecture(cpuinfo: &str) -> Option<&str> {
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "CPU architecture").then(|| value.trim())
    })
}

/// Whether /proc/cpuinfo text names an ARMv7 or later CPU: "CPU architecture: 7" (32-bit
/// Linux prints 7 for every ARMv7 and ARMv8 core) and a "CPU part" other than the
/// ARM1176's, which Linux reports as 7 as well (its ID_MMFR0.VMSA is 3).
#[cfg(any(all(target_arch = "arm", target_feature = "v7"), test))]
pub fn cpuinfo_is_armv7(cpuinfo: &str) -> bool {
    cpuinfo_architecture(cpuinfo).is_some_and(|arch| arch == "7")
        && cpuinfo_midr(cpuinfo).is_some_and(|midr| midr != ARM1176_MIDR)
}

/// The first CPU's `(CPU implementer, CPU part)` in /proc/cpuinfo text, `None` when the
/// lines are missing (another architecture's format, or an emulator that hides them).
#[cfg(any(target_arch = "arm", test))]
pub fn cpuinfo_midr(cpuinfo: &str) -> Option<(u32, u32)> {
    let field = |name: &str| {
        cpuinfo.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            if key.trim() != name {
                return None;
            }
            let value = value.trim();
            u32::from_str_radix(value.strip_prefix("0x").unwrap_or(value), 16).ok()
        })
    };
    Some((field("CPU implementer")?, field("CPU part")?))
}

/// The ARMv7 cores whose PMU has no read-only grant, by `(CPU implementer, CPU part)`:
/// Arm's ARMv7-A Cortex cores, PMUv1 (Cortex-A5, A8, A9) or PMUv2 (Cortex-A7, A12, A15,
/// A17), whose PMUSERENR has EN alone (ARMv7-A/R ARM, DDI 0406C, C12 "PMUSERENR"). Part
/// numbers: Linux 6.12 arch/arm/include/asm/cputype.h (`ARM_CPU_PART_CORTEX_*`). `None`
/// for every other core, the ARMv8 ones (PMUv3, which has ER and CR) included: user
/// mode cannot read ID_DFR0, so a core outside this list is not ruled out.
#[cfg(any(all(target_arch = "arm", target_feature = "v7"), test))]
pub fn armv7_core_without_read_only_grant(midr: (u32, u32)) -> Option<&'static str> {
    match midr {
        (0x41, 0xc05) => Some("Cortex-A5"),
        (0x41, 0xc07) => Some("Cortex-A7"),
        (0x41, 0xc08) => Some("Cortex-A8"),
        (0x41, 0xc09) => Some("Cortex-A9"),
        (0x41, 0xc0d) => Some("Cortex-A12"),
        (0x41, 0xc0e) => Some("Cortex-A17"),
        (0x41, 0xc0f) => Some("Cortex-A15"),
        _ => None,
    }
}

/// Proves the module's `layout` readable on this CPU (the caller pinned the thread)
/// before a region trusts it: each kind of counter the layout names is read once in a
/// probe child (`cycle_read`, `event_read`: one read each, UNDEFINED without the grant).
/// The module is loaded and has published its layout, so a read that traps is the grant
/// gone from this CPU (`revoked`: perf took it back), not a grant never given.
///
/// # Errors
/// `revoked()` for a trapped read; the probe's other errors as they are.
#[cfg(any(
    target_arch = "aarch64",
    all(target_arch = "arm", target_feature = "v7")
))]
pub(crate) fn probe_layout_reads(
    layout: &pmu_armv8::granted::GrantedLayout,
    cycle_read: fn(),
    event_read: fn(),
    revoked: fn() -> Error,
) -> Result<()> {
    let trapped = |e: Error| match e {
        Error::Access(
            crate::error::AccessError::NotEnabled | crate::error::AccessError::GrantMissing { .. },
        ) => revoked(),
        other => other,
    };
    if layout.cycle_counter() {
        probe_with(cycle_read).map_err(trapped)?;
    }
    if !layout.event_counters().is_empty() {
        probe_with(event_read).map_err(trapped)?;
    }
    Ok(())
}
