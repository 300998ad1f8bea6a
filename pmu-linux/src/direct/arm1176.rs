//! ARM1176 (Raspberry Pi 1 / Zero) in User mode after the module set SUNAVCR.V.

use pmu_armv6::{Arm1176Pmu, Cp15, CycleDivider};

use super::{cpuinfo_midr, probe_with, ARM1176_MIDR};
use crate::error::{DirectUnsupported, Error, Result};
use crate::meter::choose::{Grant, Opened};
use crate::meter::MeterBuilder;
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
/// [`crate::error::AccessError::NotEnabled`], [`crate::error::Unsupported::Cpu`],
/// [`crate::error::Unsupported::Direct`] with [`DirectUnsupported::NotArm1176`].
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
            return Err(Error::Unsupported(crate::error::Unsupported::Direct {
                reason: DirectUnsupported::NotArm1176 { implementer, part },
            }));
        }
    }
    // SAFETY: the probe just showed User-mode access to c15 on this (pinned) CPU,
    // /proc/cpuinfo names no other core; the caller promises an ARM1176 and
    // exclusive use.
    let pmu = unsafe { Arm1176Pmu::new(divider) };
    Ok((pin, pmu))
}

impl MeterBuilder {
    /// The ARM1176's cycle counter counts every cycle or every 64th (PMCR.D, ARM1176
    /// TRM 3.2.51): with 64 it wraps after about 392 s instead of 6 s at 700 MHz; its
    /// counts are still reported in cycles (ticks × 64, resolution 64 cycles).
    pub fn cycle_divider(&mut self, divider: CycleDivider) -> &mut Self {
        self.direct.divider = divider;
        self
    }
}

/// The meter's ARM1176 direct backend: the library programs the counters itself under
/// SUNAVCR.V; the counters have no privilege filter, so there is no kernel-entry
/// sentinel.
///
/// # Errors
/// [`crate::error::AccessError::NeedsProgramming`] without `MeterBuilder::program_the_pmu` (SUNAVCR.V
/// is the ARM1176's only grant, and it programs); as [`take_arm1176`].
pub(crate) fn open(builder: &MeterBuilder) -> Result<Opened> {
    if !builder.program {
        return Err(Error::Access(crate::error::AccessError::NeedsProgramming));
    }
    let wanted = super::events_of(builder)?;
    let divider = builder.direct.divider;
    // SAFETY: `program_the_pmu`'s caller promised an ARM1176 and exclusive use.
    let (pin, pmu) = unsafe { take_arm1176(divider) }?;
    let placed: Vec<_> = wanted.into_iter().map(|e| (e, None)).collect();
    let counters = super::OwnedCounters::allocate(pmu, &placed, pmu_core::PrivilegeFilter::ALL)?;
    // The CCR (Slot::Fixed(0)) ticks once per `cycles_per_tick` cycles: its counts are
    // reported in cycles.
    let ccr: Vec<usize> = counters
        .slots()
        .enumerate()
        .filter(|(_, s)| *s == pmu_core::Slot::Fixed(0))
        .map(|(i, _)| i)
        .collect();
    let mut meter = super::DirectMeter::new(counters, builder.names(), super::Unchecked)?;
    for i in ccr {
        meter = meter.scaled(i, divider.cycles_per_tick());
    }
    let meter = super::watch::WithoutSentinel::new(
        meter,
        if builder.sentinel {
            "the ARM1176 counters have no privilege filter: every counter counts in every \
             mode (ARM1176JZF-S TRM 3.2.51, PMCR); kernel entries that end in a context \
             switch are seen through getrusage only"
        } else {
            crate::sentinel::SWITCHED_OFF
        },
    );
    Ok(super::opened(
        Box::new(meter),
        builder.events.len(),
        Grant::Program { cpu: 0 },
        "kmod-enable-user's grant (SUNAVCR.V) on the ARM1176: the library programs the \
         counters itself; no privilege filter (the kernel's work in a region counts too)"
            .to_owned(),
        pin,
    ))
}
