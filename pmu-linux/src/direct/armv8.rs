//! ARMv8 from EL0 after the module set PMUSERENR_EL0.EN.

use pmu_armv8::registers::PMUSERENR_EL0;
use pmu_armv8::{El0Pmu, PmuOptions, PmuVersion};

use super::{probe_with, AccessCheck};
use crate::error::{Error, Result};
use crate::meter::choose::{Grant, Opened};
use crate::meter::MeterBuilder;
use crate::sched::{pin_to, PinGuard};

/// The probe: one read of PMCR_EL0, which traps (SIGILL) unless PMUSERENR_EL0.EN.
pub(super) fn probe_access() {
    // SAFETY: runs only in the forked probe child. With EN set the read is
    // permitted; without it (or without PMUv3) it is UNDEFINED at EL0 and the
    // kernel kills the child with SIGILL, which is the answer the probe wants.
    let pmcr = unsafe { pmu_armv8::asm::read_pmcr_el0() };
    core::hint::black_box(pmcr);
}

/// PMUSERENR_EL0.EN, read from EL0 (always permitted, no trap): whether the grant
/// is still there. Linux's `armv8pmu_start` rewrites PMUSERENR_EL0 whenever perf
/// starts the PMU on this CPU, and CPU hotplug resets it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pmuserenr;

impl AccessCheck for Pmuserenr {
    #[inline(always)]
    fn granted(&self) -> bool {
        // SAFETY: PMUSERENR_EL0 is readable at EL0 whatever its value (Arm ARM:
        // only writes are EL1-only); the read has no side effect.
        let value = unsafe { pmu_armv8::asm::read_pmuserenr_el0() };
        value & (PMUSERENR_EL0::EN.mask << PMUSERENR_EL0::EN.shift) != 0
    }
}

/// The probe of the read-only grant's cycle counter: one read of PMCCNTR_EL0, which
/// traps (SIGILL) unless PMUSERENR_EL0.CR or EN.
fn probe_cycle_read() {
    // SAFETY: runs only in the forked probe child; without the grant the read is
    // UNDEFINED at EL0 and the kernel kills the child with SIGILL, the probe's answer.
    let v = unsafe { pmu_armv8::asm::read_pmccntr_el0() };
    core::hint::black_box(v);
}

/// The probe of the read-only grant's event counters: one read of PMEVCNTR0_EL0
/// (counter 0 exists on every PMUv3), which traps unless PMUSERENR_EL0.ER or EN.
fn probe_event_read() {
    let Some(counter) = pmu_armv8::EventCounter::new(0) else {
        return;
    };
    // SAFETY: as in `probe_cycle_read`.
    let v = unsafe { pmu_armv8::asm::read_pmevcntr_el0(counter) };
    core::hint::black_box(v);
}

/// PMUSERENR_EL0 still grants the reads of a layout (ER for its event counters and its
/// sentinel, CR
/// for its cycle counter), read from EL0 without trapping: perf's
/// `armv8pmu_start()` clears it, CPU hotplug and power-down reset it.
#[derive(Clone, Copy, Debug)]
pub struct PmuserenrRead {
    needed: u64,
}

impl PmuserenrRead {
    /// The check for `layout`.
    pub fn for_layout(layout: &pmu_armv8::granted::GrantedLayout) -> Self {
        let mut needed = 0;
        if !layout.event_counters().is_empty() || layout.sentinel().is_some() {
            needed |= PMUSERENR_EL0::ER.mask << PMUSERENR_EL0::ER.shift;
        }
        if layout.cycle_counter() {
            needed |= PMUSERENR_EL0::CR.mask << PMUSERENR_EL0::CR.shift;
        }
        Self { needed }
    }
}

impl AccessCheck for PmuserenrRead {
    #[inline(always)]
    fn granted(&self) -> bool {
        // SAFETY: PMUSERENR_EL0 is readable at EL0 whatever its value.
        let value = unsafe { pmu_armv8::asm::read_pmuserenr_el0() };
        value & self.needed == self.needed
    }
}

/// Reads kmod-enable-user's layout ([`super::MODULE_LAYOUT`]): the text and its
/// parsed form.
///
/// # Errors
/// [`crate::error::AccessError::ModuleLayout`] when the file is missing (the module is not loaded, or is
/// an older one) or not understood.
pub fn module_layout() -> Result<(String, pmu_armv8::granted::GrantedLayout)> {
    let text = std::fs::read_to_string(super::MODULE_LAYOUT).map_err(|e| {
        Error::Access(crate::error::AccessError::ModuleLayout {
            reason: format!("{}: {e}", super::MODULE_LAYOUT),
        })
    })?;
    let layout = pmu_armv8::granted::GrantedLayout::parse(&text).map_err(|e| {
        Error::Access(crate::error::AccessError::ModuleLayout {
            reason: format!("{}: {e}", super::MODULE_LAYOUT),
        })
    })?;
    Ok((text.trim().to_owned(), layout))
}

/// Under kmod-enable-user's read-only grant: pins the thread to `cpu`, reads the
/// module's layout, probes there that its counters are readable, and returns them as
/// a PMU (reads only; see [`pmu_armv8::granted`]). Keep the guard alive as long as
/// the PMU.
///
/// # Errors
/// [`crate::error::Unsupported::Cpu`]; [`crate::error::AccessError::NotEnabled`] without the module's layout;
/// [`crate::error::AccessError::GrantMissing`] (revoked by perf) without the grant on this CPU;
/// [`crate::error::AccessError::ModuleLayout`] for a layout not understood.
pub fn take_granted(
    cpu: usize,
) -> Result<(
    PinGuard,
    pmu_armv8::granted::GrantedPmu<pmu_armv8::granted::El0Reads>,
    String,
)> {
    let pin = pin_to(cpu)?;
    if !std::path::Path::new(super::MODULE_LAYOUT).exists() {
        // No module (or none with a read-only grant): nothing is readable.
        return Err(Error::Access(crate::error::AccessError::NotEnabled));
    }
    let (text, layout) = module_layout()?;
    // The module is loaded and has a layout: a read that traps on this CPU means the
    // grant went away here (perf's armv8pmu_start()), not that it was never given.
    let revoked = || {
        Error::Access(crate::error::AccessError::GrantMissing {
            cause: crate::error::GrantMissing::RevokedByPerf {
                regrant: std::path::Path::new(crate::error::MODULE_SYSFS)
                    .join("parameters/regrant")
                    .exists(),
            },
        })
    };
    let trapped = |e: Error| match e {
        Error::Access(crate::error::AccessError::NotEnabled)
        | Error::Access(crate::error::AccessError::GrantMissing { .. }) => revoked(),
        other => other,
    };
    if layout.cycle_counter() {
        probe_with(probe_cycle_read).map_err(trapped)?;
    }
    if !layout.event_counters().is_empty() {
        probe_with(probe_event_read).map_err(trapped)?;
    }
    if !PmuserenrRead::for_layout(&layout).granted() {
        return Err(revoked());
    }
    // SAFETY: the probes just read both kinds of counter on this (pinned) CPU; the
    // layout names only counters below PMCR_EL0.N (the module programmed them).
    let reads = unsafe { pmu_armv8::granted::El0Reads::new() };
    Ok((
        pin,
        pmu_armv8::granted::GrantedPmu::new(layout, reads),
        text,
    ))
}

/// Pins the thread to `cpu`, probes user access there, and takes the PMU over from
/// EL0 (pmu-armv8 `El0Pmu::take`: all counters disabled, flags cleared, counters
/// zeroed). Keep the guard alive as long as the PMU; drop the PMU first.
///
/// `version` is what the PMU implements (EL0 cannot read ID_AA64DFR0_EL1):
/// [`PmuVersion::PmuV3`] assumes only the baseline.
///
/// # Errors
/// [`crate::error::Unsupported::Cpu`], [`crate::error::AccessError::NotEnabled`], [`crate::error::PmuError::Armv8Probe`].
///
/// # Safety
/// Nothing else uses the PMU of `cpu` while the returned PMU lives: no perf
/// hardware events on that CPU (Linux reprograms the counters and clears
/// PMUSERENR_EL0 when it starts them), no second direct user; the thread's affinity
/// is not changed until the guard drops; `version` does not claim more than the
/// CPU has.
pub unsafe fn take_armv8(
    cpu: usize,
    version: PmuVersion,
    options: PmuOptions,
) -> Result<(PinGuard, El0Pmu)> {
    let pin = pin_to(cpu)?;
    probe_with(probe_access)?;
    // SAFETY: the probe just showed PMUSERENR_EL0.EN on this CPU, the thread is
    // pinned to it, and the caller promises exclusive use and an honest version.
    let pmu = unsafe { El0Pmu::take(version, options) }.map_err(crate::Error::from)?;
    Ok((pin, pmu))
}

/// The meter's ARMv8 direct backend: the programming grant (EN) after
/// `MeterBuilder::program_the_pmu`, falling back to the read-only grant where the
/// module gave none; else the read-only grant.
///
/// # Errors
/// As [`take_armv8`] and [`open_granted`].
pub(crate) fn open(builder: &MeterBuilder) -> Result<Opened> {
    if builder.program {
        return open_programmed(builder);
    }
    open_granted(builder)
}

/// The module's read-only grant: the counters it runs, each event on the layout slot
/// that counts it.
///
/// # Errors
/// As [`take_granted`]; [`crate::error::AccessError::NotInModuleLayout`] for an event the module does not
/// count.
pub(crate) fn open_granted(builder: &MeterBuilder) -> Result<Opened> {
    use pmu_core::EventEncoding;
    let wanted = super::events_of(builder)?;
    let cpu = super::cpu_of(builder);
    let (pin, pmu, layout) = take_granted(cpu)?;
    let placed = wanted
        .iter()
        .zip(&builder.events)
        .map(|(&event, asked)| {
            let code = pmu_armv8::Armv8Event::encode(event)?;
            let slot = pmu.layout().slot_of(code).ok_or_else(|| {
                Error::Access(crate::error::AccessError::NotInModuleLayout {
                    event: asked.name(),
                    layout: layout.clone(),
                })
            })?;
            Ok((event, Some(slot)))
        })
        .collect::<Result<Vec<_>>>()?;
    let region = super::granted_region(pmu, &placed, builder.names(), builder.sentinel)?;
    Ok(super::opened(
        region,
        builder.events.len(),
        Grant::ReadOnly { cpu },
        format!(
            "grant: read-only (PMUSERENR_EL0 ER or ER|CR, no EN) from kmod-enable-user on CPU \
             {cpu}: the counters the module runs ({layout}), read with one instruction, EL0 \
             only; event counters read as 32 bits (no overflow flags without EN: a region \
             must count fewer than 2^32 events); regions without system calls (CPU from \
             rseq; the kernel-entry sentinel as Meter::sentinel says)"
        ),
        pin,
    ))
}

/// The programming grant (EN): the library programs the counters itself.
fn open_programmed(builder: &MeterBuilder) -> Result<Opened> {
    let wanted = super::events_of(builder)?;
    let cpu = super::cpu_of(builder);
    // SAFETY: `program_the_pmu`'s caller promised exclusive use of this CPU's PMU and
    // a fixed affinity; EL0 cannot read PMUVer, so only the PMUv3 baseline is assumed.
    let taken = unsafe { take_armv8(cpu, PmuVersion::PmuV3, PmuOptions::new()) };
    let (pin, pmu) = match taken {
        Ok(taken) => taken,
        Err(Error::Access(crate::error::AccessError::GrantMissing {
            cause: crate::error::GrantMissing::NoProgrammingAccess { .. },
        })) => return open_granted(builder),
        Err(e) => return Err(e),
    };
    let placed: Vec<_> = wanted.into_iter().map(|e| (e, None)).collect();
    let region = super::programmed_region(pmu, &placed, builder.names(), builder.sentinel)?;
    Ok(super::opened(
        region,
        builder.events.len(),
        Grant::Program { cpu },
        format!(
            "grant: read and program (EN) from kmod-enable-user on CPU {cpu}: the library \
             programs the counters itself, counting EL0 only; regions without system calls \
             (CPU from rseq, overflow flags; the kernel-entry sentinel as Meter::sentinel \
             says)"
        ),
        pin,
    ))
}
