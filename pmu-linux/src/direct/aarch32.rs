//! The direct backend on ARMv7 and later CPUs under a 32-bit kernel (Raspberry Pi 2 with
//! its Cortex-A7; Pi 3/4/5 running a 32-bit OS), under either of kmod-enable-user's
//! ARMv7-flavour grants:
//!
//! - **programming** (`el0_programming=1`, PMUSERENR.EN; the only grant a PMUv2 has): PL0
//!   programs the PMU through the cp15 c9 registers (pmu-armv7's [`Pl0Pmu`]), what
//!   `open` does when the meter may program the PMU;
//! - **read-only** (the default on PMUv3 seen from AArch32: Cortex-A53/A72/A76,
//!   PMUSERENR.ER | CR): PL0 reads the counters the module runs, from its layout, and
//!   programs nothing (pmu-armv7's [`pmu_armv7::granted`]), what `open_read_only_grant`
//!   does, and `open` where the module gave no programming access. Verdicts as under
//!   arm64's read-only grant: PMUSERENR read at both edges (a revoked grant is an error,
//!   not SIGILL), overflow from end < start on the 32-bit reads (PMOVSR needs EN), the
//!   CPU from `sched_getcpu()`, switches from `getrusage` (the ARMv7 flavour runs no
//!   sentinel). On a PMUv2 core without the module, the error says that the read-only
//!   grant does not exist there.
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
//! - the meter's backend is a [`super::DirectRegion`], as on ARMv8: the counters read
//!   through `pmu_armv7::reader`'s table (one indirect call per counter), overflow from
//!   PMOVSR, and a kernel-entry sentinel, INST_RETIRED at PL1 only on a free event
//!   counter (docs/sentinel.md).
//!
//! PL0 cannot read ID_DFR0: the backend assumes the PMUv2 baseline (8-bit event numbers,
//! no PMCEID), which PMUv3 seen from AArch32 extends. Every counter is 32 bits; overflow
//! is flagged from PMOVSR.
//!
//! Sources: ARMv7-A/R ARM (DDI 0406C) C12 "PMUSERENR" (readable at PL0; EN grants PL0
//! every PMU register but PMUSERENR writes and PMINTEN*); Linux 6.12
//! arch/arm/kernel/setup.c `c_show()`, `proc_arch[]` and `__get_cpu_architecture()`.

use pmu_armv7::granted::{GrantedLayout, GrantedPmu, Pl0Reads, ReadGrant};
use pmu_armv7::registers::{Pmuserenr, PMUSERENR};
use pmu_armv7::{PerfMon, Pl0Pmu};

use super::alloc::OwnedCounters;
use super::grant;
use super::probe::cpuinfo_is_armv7;
use super::probe::probe_with;
use super::region::{AccessCheck, NoFlags, OverflowFlags};
use crate::backend::{Backend, How, Opened, Request};
use crate::error::{AccessError, DirectUnsupported, Error, GrantMissing, Result};
use crate::machine::sched::{pin_to, PinGuard};
use crate::sentinel::Sentinel;

/// Whether this machine's CPU takes this backend (ARMv7 or later, per /proc/cpuinfo);
/// false on the ARM1176 and where /proc/cpuinfo cannot be read.
pub fn is_armv7_cpu() -> bool {
    std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|text| cpuinfo_is_armv7(&text))
}

/// Whether PMUSERENR value `value` lets PL0 program the PMU (EN).
pub(crate) fn grants_programming(value: u32) -> bool {
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

/// One counter of the region read through `pmu_armv7::reader`'s table: the read
/// function chosen once, when the region is made (PMCCNTR with one `mrc`, an event
/// counter through PMSELR + `isb` + PMXEVCNTR, checked against a concurrent select), so
/// an edge costs one indirect call per counter instead of the driver's slot decoding.
/// Made only by [`open`], next to the [`OwnedCounters`](super::OwnedCounters) that owns
/// the PMU, and stored with it in the region.
#[derive(Clone, Copy, Debug)]
struct TableRead {
    read: unsafe fn() -> u32,
    /// The counter's bit in PMOVSR (bit n event counter n, bit 31 PMCCNTR).
    mask: u32,
    // The PMU is this CPU's, and the thread is pinned there.
    _this_cpu: core::marker::PhantomData<*const ()>,
}

impl TableRead {
    /// The read of `path` (from [`pmu_armv7::granted::read_path`] for the module's
    /// layout).
    ///
    /// # Safety
    /// The path's counter is one the layout names, and the handle is read only where
    /// the grant permits its read (the region checks [`PmuserenrRead`] before each
    /// edge's reads) on the CPU the thread is pinned to.
    unsafe fn granted(path: pmu_armv7::reader::ReadPath) -> Self {
        Self {
            read: path.read_fn(),
            mask: path.counter().mask(),
            _this_cpu: core::marker::PhantomData,
        }
    }

    /// The read of `slot` on `pmu`.
    ///
    /// # Errors
    /// [`pmu_core::Error::CounterOutOfRange`] for a slot without a counter on this PMU
    /// (cannot happen for slots the PMU allocated).
    ///
    /// # Safety
    /// The handle is read only while `pmu` lives (the region holds both).
    unsafe fn new(pmu: &Pl0Pmu, slot: pmu_core::Slot) -> Result<Self> {
        use pmu_armv7::reader::ReadPath;
        let path = ReadPath::for_slot(pmu.perfmon(), pmu.event_counters(), slot).map_err(|_| {
            pmu_core::Error::CounterOutOfRange {
                slot,
                available: u32::from(pmu.event_counters()),
            }
        })?;
        Ok(Self {
            read: path.read_fn(),
            mask: path.counter().mask(),
            _this_cpu: core::marker::PhantomData,
        })
    }
}

impl pmu_core::CounterRead for TableRead {
    #[inline(always)]
    fn read(&self) -> u64 {
        // SAFETY: `read` came from `ReadPath::for_slot` for this PMU (`new`); the
        // region checks PMUSERENR.EN before each edge's reads; the thread is pinned and
        // owns the PMU (`take_pl0`), and a selected read is checked against a select
        // by an interrupt (`pmu_armv7::reader::read_selected`).
        u64::from(unsafe { (self.read)() })
    }
    #[inline(always)]
    fn overflow_mask(&self) -> u64 {
        u64::from(self.mask)
    }
}

/// PMOVSR, read and cleared from PL0 under PMUSERENR.EN (DDI 0406C C12 "PMOVSR": bit n
/// event counter n, bit 31 PMCCNTR; a write of 1 clears a flag, 0 leaves it): a
/// region's overflow flags, with pmu-armv7's readers (`Armv7Pmu::reader`) or the
/// backend's own table as its handles.
#[derive(Debug)]
pub struct Pmovsr {
    _this_cpu: core::marker::PhantomData<*const ()>,
}

impl Pmovsr {
    /// The flags, proved accessible by the PMU taken from PL0 (EN on this CPU, the
    /// thread pinned there).
    pub fn with_en(_pmu: &Pl0Pmu) -> Self {
        Self {
            _this_cpu: core::marker::PhantomData,
        }
    }
}

impl OverflowFlags for Pmovsr {
    const READABLE: bool = true;
    #[inline(always)]
    fn read(&self) -> u64 {
        // SAFETY: made only by `with_en`, whose proof is a PMU taken under EN on this
        // CPU; the region checks EN before each edge. The read has no side effect.
        u64::from(unsafe { pmu_armv7::asm::pmovsr() })
    }
    #[inline(always)]
    fn clear(&self, mask: u64) {
        // SAFETY: as in `read`; write-1-to-clear touches the flags of `mask` only, the
        // region's own counters (bits 0..=31: `TableRead::mask`).
        unsafe { pmu_armv7::asm::set_pmovsr(mask as u32) };
    }
}

impl super::pool::PoolPmu for Pl0Pmu {
    type Check = PmuserenrEn;
    type Read<'p> = pmu_armv7::reader::Reader<'p>;
    type Flags = Pmovsr;
    fn grant_check(&self) -> PmuserenrEn {
        PmuserenrEn
    }
    fn counter_read(&self, slot: pmu_core::Slot) -> Result<pmu_armv7::reader::Reader<'_>> {
        self.reader(slot).map_err(|_| {
            Error::from(pmu_core::Error::CounterOutOfRange {
                slot,
                available: u32::from(self.event_counters()),
            })
        })
    }
    fn overflow_flags(&self) -> Pmovsr {
        Pmovsr::with_en(self)
    }
}

/// The kernel-entry sentinel of this backend: INST_RETIRED (0x08) at PL1 only
/// (PMXEVTYPER.P = 0, U = 1, NSH = 0) on an event counter the region's events leave
/// free. The filter bits are PMUv2's (ARMv7-A/R ARM, DDI 0406C, C12 "PMXEVTYPER"; PMUv3
/// in AArch32 keeps them: DDI 0487 G8 "`PMEVTYPER<n>`"), the ones Linux 6.12
/// drivers/perf/arm_v7_pmu.c `armv7pmu_set_event_filter` writes for `exclude_user` on
/// the Cortex-A7/A15/A12/A17; the exact split of PL1 and PL0 instructions is measured
/// with qemu/armv7-virt's `filter` scenario.
const SENTINEL: (pmu_core::Event, pmu_core::PrivilegeFilter) = (
    pmu_core::Event::Generic(pmu_core::GenericEvent::Instructions),
    pmu_core::PrivilegeFilter::KERNEL,
);

/// The meter's ARMv7 direct backend: with `MeterBuilder::program_the_pmu`, PL0 programs
/// the PMU after kmod-enable-user's ARMv7 flavour set PMUSERENR.EN, counting PL0 only,
/// in a [`super::DirectRegion`]: counters read through [`TableRead`], overflow from
/// PMOVSR, the CPU from `sched_getcpu()`, and a kernel-entry sentinel ([`SENTINEL`]) on
/// a free event counter where there is one and the builder asks for it; every edge
/// checks that EN is still there. Where the module was loaded without programming
/// access (its default read-only grant), and without `program_the_pmu`, the read-only
/// grant ([`open_read_only_grant`]).
///
/// # Errors
/// As [`take_pl0`] and [`open_read_only_grant`].
pub(super) fn open(request: &Request) -> Result<Opened<Box<dyn Backend>>> {
    if !request.program {
        return open_read_only_grant(request);
    }
    let wanted = request.direct_events()?;
    let cpu = request.cpu_or_current();
    // SAFETY: `program_the_pmu`'s caller promised exclusive use of the PMU.
    let (pin, pmu) = match unsafe { take_pl0(cpu) } {
        Ok(taken) => taken,
        Err(Error::Access(AccessError::GrantMissing {
            cause: GrantMissing::NoProgrammingAccess { .. },
        })) => return open_read_only_grant(request),
        Err(e) => return Err(e),
    };
    let placed: Vec<_> = wanted.into_iter().map(|e| (e, None)).collect();
    let candidates: &[_] = if request.sentinel { &[SENTINEL] } else { &[] };
    let (counters, sentinel_error) = OwnedCounters::allocate_with_extra(
        pmu,
        &placed,
        pmu_core::PrivilegeFilter::USER,
        candidates,
    )?;
    let flags = Pmovsr::with_en(counters.pmu());
    let (handles, sentinel, state) = super::region::handles_and_own_sentinel(
        &counters,
        placed.len(),
        request.sentinel,
        sentinel_error,
        // SAFETY: the handles go into the region with `counters`, which owns the PMU.
        |slot| unsafe { TableRead::new(counters.pmu(), slot) },
        |slot| {
            let counter = match slot {
                pmu_core::Slot::Programmable(n) => format!("event counter {n}"),
                pmu_core::Slot::Fixed(_) => "the cycle counter".to_owned(),
            };
            Ok((
                "instructions".into(),
                format!(
                    "{counter} programmed by the library (INST_RETIRED, PMXEVTYPER.U set, \
                     P clear), read through PMSELR + PMXEVCNTR before the region's \
                     counters at the start and after them at the stop; a context switch \
                     shows as a kernel entry"
                ),
            ))
        },
    )?;
    let region = super::region::boxed_region(
        counters,
        PmuserenrEn,
        handles,
        request.names.clone(),
        sentinel,
        state,
        flags,
    )?;
    Ok(Opened::direct(
        region,
        request.events.len(),
        How::Armv7Programmed { cpu },
        pin,
    ))
}

/// PMUSERENR still permits the reads of a layout ([`ReadGrant`]: ER for its event
/// counters, CR for its cycle counter, or EN), read from PL0 without trapping: CPU
/// hotplug and power-down reset it, and perf's arm_pmuv3.c (where a 32-bit kernel
/// builds it) clears it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PmuserenrRead {
    grant: ReadGrant,
}

impl PmuserenrRead {
    /// The check for `layout`.
    pub fn for_layout(layout: &GrantedLayout) -> Self {
        Self {
            grant: ReadGrant::for_layout(layout),
        }
    }
}

impl AccessCheck for PmuserenrRead {
    #[inline(always)]
    fn granted(&self) -> bool {
        // SAFETY: PMUSERENR is readable at PL0 whatever its value (DDI 0406C C12, DDI
        // 0487 G8 "PMUSERENR"); the read has no side effect.
        self.grant
            .allows(Pmuserenr::new(unsafe { pmu_armv7::asm::pmuserenr() }))
    }
}

/// The probe of the read-only grant's cycle counter: one read of PMCCNTR, UNDEFINED at
/// PL0 (SIGILL) unless PMUSERENR.CR or EN.
fn probe_cycle_read() {
    // SAFETY: runs only in the forked probe child; without the grant the read is
    // UNDEFINED and the kernel kills the child with SIGILL, the probe's answer.
    let v = unsafe { pmu_armv7::asm::pmccntr() };
    core::hint::black_box(v);
}

/// The probe of the read-only grant's event counters: PMSELR = 0, `isb`, PMXEVCNTR
/// (counter 0 exists wherever the module runs a layout: it needs PMCR.N >= 1), each
/// UNDEFINED at PL0 unless PMUSERENR.ER or EN.
fn probe_event_read() {
    // SAFETY: as in `probe_cycle_read`; selecting counter 0 changes nothing that a
    // reader relies on: every PMXEVCNTR access selects its counter first.
    unsafe { pmu_armv7::asm::set_pmselr(0) };
    // PMXEVCNTR must see the new PMSELR (DDI 0406C B3.15.5).
    pmu_armv7::asm::isb();
    // SAFETY: as above.
    let v = unsafe { pmu_armv7::asm::pmxevcntr() };
    core::hint::black_box(v);
}

/// The error of a read-only grant that is not there because the module is not loaded:
/// on a core whose PMU has no read-only grant (Cortex-A7 and the other ARMv7 cores),
/// [`AccessError::NoReadOnlyGrant`] (the module refuses its default load there), else
/// [`AccessError::NotEnabled`].
fn not_loaded() -> Error {
    let core = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| super::probe::cpuinfo_midr(&text))
        .and_then(super::probe::armv7_core_without_read_only_grant);
    match core {
        Some(core) => Error::Access(AccessError::NoReadOnlyGrant { core: core.into() }),
        None => Error::Access(AccessError::NotEnabled),
    }
}

/// Under kmod-enable-user's read-only grant: pins the thread to `cpu`, reads the
/// module's layout, probes there that its counters are readable, and returns them as a
/// PMU (reads only: pmu-armv7's [`pmu_armv7::granted`]) with the layout as the module
/// states it. Keep the guard alive as long as the PMU.
///
/// # Errors
/// [`crate::error::Unsupported::Cpu`]; [`AccessError::NotEnabled`] (or
/// [`AccessError::NoReadOnlyGrant`] on an ARMv7 core) without the module;
/// [`AccessError::ModuleLayout`] for a layout not understood;
/// [`AccessError::GrantMissing`] ([`GrantMissing::ReadsRevoked`]) when the reads trap
/// on this CPU.
pub(crate) fn take_granted(cpu: usize) -> Result<(PinGuard, GrantedPmu<Pl0Reads>, String)> {
    if !is_armv7_cpu() {
        return Err(Error::Unsupported(crate::error::Unsupported::Direct {
            reason: DirectUnsupported::Architecture,
        }));
    }
    let pin = pin_to(cpu)?;
    if !std::path::Path::new(grant::MODULE_SYSFS).is_dir() || !grant::has_layout() {
        return Err(not_loaded());
    }
    let (text, layout) = grant::module_layout()?;
    if layout.event_counters().is_empty() && !layout.cycle_counter() {
        return Err(Error::Access(AccessError::ModuleLayout {
            reason: format!(
                "{}: `{text}` names no counter for PL0",
                grant::MODULE_LAYOUT
            ),
        }));
    }
    super::probe::probe_layout_reads(
        &layout,
        probe_cycle_read,
        probe_event_read,
        grant::reads_revoked,
    )?;
    if !PmuserenrRead::for_layout(&layout).granted() {
        return Err(grant::reads_revoked());
    }
    // SAFETY: the probes just read both kinds of counter on this (pinned) CPU; the
    // layout names only counters below PMCR.N (the module programmed them there).
    let reads = unsafe { Pl0Reads::new() };
    Ok((pin, GrantedPmu::new(layout, reads), text))
}

/// The module's read-only grant: the counters it runs, each event on the layout slot
/// that counts it, read through [`TableRead`] (PMSELR + `isb` + PMXEVCNTR, checked; one
/// `mrc` of PMCCNTR), in a [`super::DirectRegion`] with [`PmuserenrRead`] at both edges,
/// no overflow flags ([`NoFlags`]: end < start on 32 bits), and no sentinel.
///
/// # Errors
/// As [`take_granted`]; [`AccessError::NotInModuleLayout`] for an event the module does
/// not count, with the `events=` parameter that would add it.
pub(super) fn open_read_only_grant(request: &Request) -> Result<Opened<Box<dyn Backend>>> {
    let wanted = request.direct_events()?;
    let cpu = request.cpu_or_current();
    let (pin, pmu, text) = take_granted(cpu)?;
    let layout = *pmu.layout();
    let placed = grant::place_in_layout(&layout, &text, &wanted, &request.names)?;
    let access = PmuserenrRead::for_layout(&layout);
    let counters = OwnedCounters::allocate(pmu, &placed, pmu_core::PrivilegeFilter::USER)?;
    let handles = counters
        .slots()
        .map(|slot| {
            let path = pmu_armv7::granted::read_path(&layout, slot).ok_or(Error::Pmu(
                crate::error::PmuError::Core(pmu_core::Error::CounterOutOfRange {
                    slot,
                    available: layout.event_counters().len() as u32,
                }),
            ))?;
            // SAFETY: the path is of a counter the layout names; the handles go into
            // the region, which checks `access` before each edge's reads, on this
            // pinned CPU (`pin` goes with the region).
            Ok(unsafe { TableRead::granted(path) })
        })
        .collect::<Result<Vec<_>>>()?;
    let state = if request.sentinel {
        Sentinel::off(
            "kmod-enable-user's ARMv7 flavour runs none under its read-only grant, and PL0 \
             cannot program one without EN: regions see context switches (getrusage) and \
             migrations, not interrupts, system calls or faults",
        )
    } else {
        Sentinel::off(crate::sentinel::SWITCHED_OFF)
    };
    let region = super::region::boxed_region(
        counters,
        access,
        handles,
        request.names.clone(),
        None,
        state,
        NoFlags,
    )?;
    Ok(Opened::direct(
        region,
        request.events.len(),
        How::Armv7ModuleLayout { cpu, layout: text },
        pin,
    ))
}
