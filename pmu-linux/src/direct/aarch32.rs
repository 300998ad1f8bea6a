//! The direct backend on ARMv7 and later CPUs under a 32-bit kernel (Raspberry Pi 2 with
//! its Cortex-A7; Pi 3/4/5 running a 32-bit OS): PL0 programs the PMU through the cp15 c9
//! registers after kmod-enable-user's ARMv7 flavour set PMUSERENR.EN on every CPU
//! (pmu-armv7's [`Pl0Pmu`]).
//!
//! - [`is_armv7_cpu`] tells this backend's CPUs from the ARM1176 (the ARMv6 backend,
//!   [`super::arm1176`]) by /proc/cpuinfo's "CPU architecture" and "CPU part" lines
//!   (Linux prints "CPU architecture: 7" for the ARM1176 too: its ID_MMFR0 reports
//!   VMSAv7, which is what `__get_cpu_architecture()` tests);
//! - [`take_pl0`] pins the thread, probes in a forked child that a PMCR read does not
//!   trap, and takes the PMU over (all counters stopped, flags cleared, counters reset);
//! - [`PmuserenrEn`] checks before every counter access that the grant is still there
//!   (PMUSERENR is readable at PL0 whatever it holds), so a revoked grant is an error
//!   instead of SIGILL.
//!
//! - [`TableCounters`] reads the region's counters through `pmu_armv7::reader`'s
//!   table (one indirect call per counter);
//! - [`Pl1InstRetired`] is the kernel-entry sentinel: INST_RETIRED at PL1 only on a
//!   free event counter (docs/sentinel.md).
//!
//! PL0 cannot read ID_DFR0: the backend assumes the PMUv2 baseline (8-bit event numbers,
//! no PMCEID), which PMUv3 seen from AArch32 extends. Every counter is 32 bits; overflow
//! is flagged from PMOVSR.
//!
//! Sources: ARMv7-A/R ARM (DDI 0406C) C12 "PMUSERENR" (readable at PL0; EN grants PL0
//! every PMU register but PMUSERENR writes and PMINTEN*); Linux 6.12
//! arch/arm/kernel/setup.c `c_show()`, `proc_arch[]` and `__get_cpu_architecture()`.

use pmu_armv7::registers::{Pmuserenr, PMUSERENR};
use pmu_armv7::{PerfMon, Pl0Pmu};

pub use super::{cpuinfo_architecture, cpuinfo_is_armv7};
use super::{probe_with, AccessCheck};
use crate::error::{DirectUnsupported, Error, Result};
use crate::meter::choose::{Grant, Opened};
use crate::meter::MeterBuilder;
use crate::sched::{pin_to, PinGuard};

/// Whether this machine's CPU takes this backend (ARMv7 or later, per /proc/cpuinfo);
/// false on the ARM1176 and where /proc/cpuinfo cannot be read.
pub fn is_armv7_cpu() -> bool {
    std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|text| cpuinfo_is_armv7(&text))
}

/// Whether PMUSERENR value `value` lets PL0 program the PMU (EN).
pub fn grants_programming(value: u32) -> bool {
    Pmuserenr::new(value).is_set(PMUSERENR::EN)
}

/// PMUSERENR.EN, read from PL0 (always permitted, no trap): whether the grant is still
/// there on the CPU the thread runs on. CPU hotplug resets it (the module puts it back
/// when the CPU comes online); unloading the module clears it.
#[derive(Clone, Copy, Debug, Default)]
pub struct PmuserenrEn;

impl AccessCheck for PmuserenrEn {
    #[inline(always)]
    fn granted(&self) -> bool {
        // SAFETY: PMUSERENR is readable at PL0 whatever its value (DDI 0406C C12); the
        // read has no side effect.
        grants_programming(unsafe { pmu_armv7::asm::pmuserenr() })
    }
}

/// The probe: one read of PMCR, which is UNDEFINED at PL0 (SIGILL) unless PMUSERENR.EN.
fn probe_access() {
    // SAFETY: runs only in the forked probe child: with EN the read is permitted;
    // without it the kernel kills the child with SIGILL, which is the probe's answer.
    let pmcr = unsafe { pmu_armv7::asm::pmcr() };
    core::hint::black_box(pmcr);
}

/// Pins the thread to `cpu`, probes PL0 access there, and takes the PMU over from PL0
/// (pmu-armv7 `Armv7Pmu::new`: every counter disabled, overflow flags cleared, counters
/// reset). Keep the guard alive as long as the PMU; drop the PMU first.
///
/// # Errors
/// [`crate::error::Unsupported::Direct`] on a CPU older than ARMv7 (the ARM1176 takes
/// [`super::arm1176`]); [`crate::error::Unsupported::Cpu`]; [`crate::error::AccessError::NotEnabled`] without the
/// module, [`crate::error::AccessError::GrantMissing`] when it is loaded without programming access
/// (`el0_programming=1` is what sets EN).
///
/// # Safety
/// Nothing else uses the PMU of `cpu` while the returned PMU lives (no perf hardware
/// events there, no second direct user); the thread's affinity is not changed until the
/// guard drops, except to CPUs where the module granted EN too (every online CPU).
pub unsafe fn take_pl0(cpu: usize) -> Result<(PinGuard, Pl0Pmu)> {
    if !is_armv7_cpu() {
        return Err(Error::Unsupported(crate::error::Unsupported::Direct {
            reason: DirectUnsupported::Architecture,
        }));
    }
    let pin = pin_to(cpu)?;
    probe_with(probe_access)?;
    // SAFETY: the probe just read PMCR at PL0 on this (pinned) CPU, so EN is set there;
    // the caller promises exclusive use. PMUv2 is the baseline every ARMv7 PMU with PL0
    // filtering implements.
    let pmu = unsafe { Pl0Pmu::take(PerfMon::PmuV2) }.map_err(|e| match e {
        // EN went away between the probe and here: the module's state says why.
        None => super::grant::trapped(),
        // PerfMon::PmuV2 is architected: `take` cannot refuse it.
        Some(_) => Error::Unsupported(crate::error::Unsupported::Direct {
            reason: DirectUnsupported::Architecture,
        }),
    })?;
    Ok((pin, pmu))
}

/// The kernel-entry sentinel of this backend: event counter `counter` counting
/// INST_RETIRED (0x08) at PL1 only (PMXEVTYPER.P = 0, U = 1, NSH = 0), read from PL0
/// through PMSELR + `isb` + PMXEVCNTR (the PMUv2 baseline: PL0 cannot tell PMUv3,
/// whose `PMEVCNTR<n>` encodings would save the select).
///
/// The filter bits are PMUv2's (ARMv7-A/R ARM, DDI 0406C, C12 "PMXEVTYPER"; PMUv3 in
/// AArch32 keeps them: DDI 0487 G8 "`PMEVTYPER<n>`"), the ones Linux 6.12
/// drivers/perf/arm_v7_pmu.c `armv7pmu_set_event_filter` writes for
/// `exclude_user` on the Cortex-A7/A15/A12/A17; the exact split of PL1 and PL0
/// instructions is measured with qemu/armv7-virt's `filter` scenario.
#[derive(Debug)]
pub struct Pl1InstRetired {
    counter: u8,
}

impl Pl1InstRetired {
    /// Programs and starts the sentinel on the highest event counter of `pmu` that
    /// `used` does not hold.
    ///
    /// # Errors
    /// Why there is none, as [`crate::Sentinel::Off`] says it: every event counter is
    /// in use, or the PMU refused the event or the filter.
    pub fn program(
        pmu: &Pl0Pmu,
        used: impl Iterator<Item = pmu_core::Slot>,
    ) -> std::result::Result<Self, String> {
        use pmu_armv8::{Armv8Event, EventNumber};
        use pmu_core::{Pmu, PrivilegeFilter, Slot};
        let used: Vec<Slot> = used.collect();
        let n = pmu.event_counters();
        let Some(counter) = (0..n)
            .rev()
            .find(|&c| !used.contains(&Slot::Programmable(c)))
        else {
            return Err(format!(
                "all {n} event counters count the region's events: ask for one event fewer \
                 to have one"
            ));
        };
        let slot = Slot::Programmable(counter);
        pmu.configure(
            slot,
            Armv8Event::new(EventNumber::INST_RETIRED),
            PrivilegeFilter::KERNEL,
        )
        .map_err(|e| format!("counter {counter} refused INST_RETIRED at PL1 only: {e}"))?;
        pmu.clear_overflow(slot);
        pmu.enable(slot);
        Ok(Self { counter })
    }

    /// The event counter it uses.
    pub fn counter(&self) -> u8 {
        self.counter
    }

    fn mask(&self) -> u32 {
        1 << self.counter
    }
}

impl Drop for Pl1InstRetired {
    /// Stops the counter (where the grant is still there), also when the meter it was
    /// made for could not be built.
    fn drop(&mut self) {
        super::watch::SentinelCounter::stop(self);
    }
}

impl super::watch::SentinelCounter for Pl1InstRetired {
    #[inline(always)]
    fn read(&self) -> u64 {
        // SAFETY: the meter checks PMUSERENR.EN before each edge's reads (the
        // `PmuserenrEn` of its DirectMeter), and `counter` < PMCR.N (`program`).
        unsafe { pmu_armv7::asm::set_pmselr(u32::from(self.counter)) };
        // PMXEVCNTR must see the new PMSELR (DDI 0406C B3.15.5; pmu_armv7::reader).
        pmu_armv7::asm::isb();
        // SAFETY: as above.
        u64::from(unsafe { pmu_armv7::asm::pmxevcntr() })
    }

    fn width(&self) -> pmu_core::CounterWidth {
        pmu_core::CounterWidth::W32
    }

    #[inline(always)]
    fn overflowed(&self) -> bool {
        // SAFETY: as in `read`.
        let pmovsr = unsafe { pmu_armv7::asm::pmovsr() };
        pmovsr & self.mask() != 0
    }

    #[inline(always)]
    fn clear_overflow(&self) {
        // SAFETY: as in `read`; write-1-to-clear touches only this counter's flag.
        unsafe { pmu_armv7::asm::set_pmovsr(self.mask()) };
    }

    fn start(&self) {
        if PmuserenrEn.granted() {
            // SAFETY: EN was just seen; only this counter's bit.
            unsafe { pmu_armv7::asm::set_pmcntenset(self.mask()) };
            // Counting starts before the instructions that follow.
            pmu_armv7::asm::isb();
        }
    }

    fn stop(&self) {
        // Without the grant the access would trap, and the kernel owns the PMU again.
        if PmuserenrEn.granted() {
            // SAFETY: EN was just seen; only this counter's bit.
            unsafe { pmu_armv7::asm::set_pmcntenclr(self.mask()) };
            // Counting stops before the instructions that follow.
            pmu_armv7::asm::isb();
        }
    }
}

/// The region's counters read through a table: each counter's read function chosen once,
/// when the set is made (`pmu_armv7::reader`: PMCCNTR with one `mrc`, an event counter
/// through PMSELR + `isb` + PMXEVCNTR), so an edge costs one indirect call per counter
/// instead of the driver's slot decoding; one PMOVSR read for every overflow flag, one
/// write to clear them. Everything else is the [`OwnedCounters`](super::OwnedCounters)'.
#[derive(Debug)]
pub struct TableCounters {
    counters: super::OwnedCounters<Pl0Pmu>,
    reads: Vec<unsafe fn() -> u32>,
    masks: Vec<u32>,
    all: u32,
}

impl TableCounters {
    /// The floor reads of `counters`.
    ///
    /// # Errors
    /// [`crate::error::PmuError::Core`] with [`pmu_core::Error::CounterOutOfRange`] if a slot has no
    /// counter on this PMU (cannot happen for slots the PMU allocated).
    pub fn new(counters: super::OwnedCounters<Pl0Pmu>) -> Result<Self> {
        use pmu_armv7::reader::ReadPath;
        use pmu_armv7::CounterId;
        let pmu = counters.pmu();
        let mut reads = Vec::with_capacity(counters.slots().len());
        let mut masks = Vec::with_capacity(counters.slots().len());
        for slot in counters.slots() {
            let path =
                ReadPath::for_slot(pmu.perfmon(), pmu.event_counters(), slot).map_err(|_| {
                    pmu_core::Error::CounterOutOfRange {
                        slot,
                        available: u32::from(pmu.event_counters()),
                    }
                })?;
            reads.push(path.read_fn());
            masks.push(match path {
                ReadPath::Pmccntr => CounterId::Cycle.mask(),
                ReadPath::Pmevcntr(n) | ReadPath::Selected(n) => CounterId::Event(n).mask(),
            });
        }
        let all = masks.iter().fold(0, |a, m| a | m);
        Ok(Self {
            counters,
            reads,
            masks,
            all,
        })
    }
}

impl super::CounterSet for TableCounters {
    fn len(&self) -> usize {
        self.reads.len()
    }
    fn width(&self, _: usize) -> pmu_core::CounterWidth {
        // Every AArch32 counter is 32 bits here (PMCR.LC stays 0: pmu_armv7::pmu).
        pmu_core::CounterWidth::W32
    }
    #[inline(always)]
    fn read(&self, i: usize) -> u64 {
        // SAFETY: `reads[i]` came from `ReadPath::for_slot` for this PMU; the meter
        // checks PMUSERENR.EN before each edge; the thread is pinned and owns the PMU
        // (`take_pl0`), so nothing changes PMSELR in a selected read.
        u64::from(unsafe { (self.reads[i])() })
    }
    #[inline(always)]
    fn overflowed(&self, i: usize) -> bool {
        // SAFETY: as in `read`.
        let pmovsr = unsafe { pmu_armv7::asm::pmovsr() };
        pmovsr & self.masks[i] != 0
    }
    #[inline(always)]
    fn clear_overflow(&self, i: usize) {
        // SAFETY: as in `read`; write-1-to-clear touches this counter's flag only.
        unsafe { pmu_armv7::asm::set_pmovsr(self.masks[i]) };
    }
    fn start(&self, i: usize) {
        super::CounterSet::start(&self.counters, i)
    }
    fn stop(&self, i: usize) {
        super::CounterSet::stop(&self.counters, i)
    }
    #[inline(always)]
    fn read_all(&self, out: &mut [u64]) {
        for (v, read) in out.iter_mut().zip(&self.reads) {
            // SAFETY: as in `read`.
            *v = u64::from(unsafe { read() });
        }
    }
    #[inline(always)]
    fn overflowed_all(&self, out: &mut [bool]) {
        // SAFETY: as in `read`.
        let pmovsr = unsafe { pmu_armv7::asm::pmovsr() };
        for (o, mask) in out.iter_mut().zip(&self.masks) {
            *o = pmovsr & mask != 0;
        }
    }
    #[inline(always)]
    fn clear_overflows(&self) {
        // SAFETY: as in `read`; only the region's counters' flags.
        unsafe { pmu_armv7::asm::set_pmovsr(self.all) };
    }
    fn leave_programmed(&mut self) {
        self.counters.leave_programmed();
    }
}

/// The meter's ARMv7 direct backend: PL0 programs the PMU after kmod-enable-user's
/// ARMv7 flavour set PMUSERENR.EN, counting PL0 only, with a kernel-entry sentinel
/// ([`Pl1InstRetired`]) on a free event counter where there is one and the builder
/// asks for it; every access checks that EN is still there.
///
/// # Errors
/// [`crate::error::AccessError::NeedsProgramming`] without `MeterBuilder::program_the_pmu` (PMUv2
/// has no read-only grant: EN is the only one, and it programs); as [`take_pl0`].
pub(crate) fn open(builder: &MeterBuilder) -> Result<Opened> {
    use super::watch::{with_sentinel, SentinelMeter, WithoutSentinel};
    use super::DirectMeter;
    if !builder.program {
        return Err(Error::Access(crate::error::AccessError::NeedsProgramming));
    }
    let wanted = super::events_of(builder)?;
    let cpu = super::cpu_of(builder);
    // SAFETY: `program_the_pmu`'s caller promised exclusive use of the PMU.
    let (pin, pmu) = unsafe { take_pl0(cpu) }?;
    let placed: Vec<_> = wanted.into_iter().map(|e| (e, None)).collect();
    let counters = super::OwnedCounters::allocate(pmu, &placed, pmu_core::PrivilegeFilter::USER)?;
    let names = builder.names();
    let program = if builder.sentinel {
        Pl1InstRetired::program(counters.pmu(), counters.slots())
    } else {
        Err(crate::sentinel::SWITCHED_OFF.to_owned())
    };
    let meter: Box<dyn crate::backend::Backend> = match program {
        Ok(sentinel) => {
            let how = format!(
                "event counter {} programmed by the library (INST_RETIRED, PMXEVTYPER.U \
                 set, P clear), read through PMSELR + PMXEVCNTR before the region's \
                 counters at the start and after them at the stop",
                sentinel.counter()
            );
            let counters = TableCounters::new(counters)?;
            let (set, link) = with_sentinel(counters, sentinel);
            let inner = DirectMeter::new(set, names, PmuserenrEn)?;
            Box::new(SentinelMeter::new(inner, link, "instructions", &how))
        }
        Err(why) => Box::new(WithoutSentinel::new(
            DirectMeter::new(TableCounters::new(counters)?, names, PmuserenrEn)?,
            why,
        )),
    };
    Ok(super::opened(
        meter,
        builder.events.len(),
        Grant::Program { cpu },
        format!(
            "direct access on CPU {cpu} (ARMv7 PMU, PMUSERENR.EN from kmod-enable-user's \
             ARMv7 flavour, el0_programming=1): the library programs the counters itself, \
             counting PL0 only"
        ),
        pin,
    ))
}
