//! ARM1176 (Raspberry Pi 1 / Zero) in User mode after the module set SUNAVCR.V.

use pmu_armv6::{Arm1176Pmu, Cp15, CycleDivider};

use super::{cpuinfo_midr, probe_with, ARM1176_MIDR};
use crate::error::{DirectUnsupported, Error, Result};
use crate::sched::{pin_to, PinGuard};

/// The probe: one read of PMCR, which traps (SIGILL) in User mode unless SUNAVCR.V.
pub(super) fn probe_access() {
    // SAFETY: runs only in the forked probe child: with SUNAVCR.V set the read is
    // permitted in User mode; otherwise it is an Undefined Instruction and the
    // kernel kills the child with SIGILL, which is the probe's answer.
    let pmcr = unsafe { pmu_armv6::asm::read_pmcr() };
    core::hint::black_box(pmcr);
}

/// Pins the thread to CPU 0 (the Pi 1 has one core), probes user access, checks
/// that /proc/cpuinfo does not name another core, and takes the PMU over (pmu-armv6
/// `Arm1176Pmu::new`: all counters stopped, interrupts off).
///
/// # Errors
/// [`crate::Error::UserAccessNotEnabled`], [`crate::Error::NoSuchCpu`],
/// [`crate::Error::DirectUnsupported`] with [`DirectUnsupported::NotArm1176`].
///
/// # Safety
/// The CPU is an ARM1176 (checked where /proc/cpuinfo says), and nothing else uses
/// its PMU while the returned one lives (no perf hardware events, no second direct
/// user).
pub unsafe fn take_arm1176(divider: CycleDivider) -> Result<(PinGuard, Arm1176Pmu<Cp15>)> {
    let pin = pin_to(0)?;
    probe_with(probe_access)?;
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    if let Some((implementer, part)) = cpuinfo_midr(&cpuinfo) {
        if (implementer, part) != ARM1176_MIDR {
            return Err(Error::DirectUnsupported {
                reason: DirectUnsupported::NotArm1176 { implementer, part },
            });
        }
    }
    // SAFETY: the probe just showed User-mode access to c15 on this (pinned) CPU,
    // /proc/cpuinfo names no other core; the caller promises an ARM1176 and
    // exclusive use.
    let pmu = unsafe { Arm1176Pmu::new(divider) };
    Ok((pin, pmu))
}
