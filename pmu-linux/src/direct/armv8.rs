//! ARMv8 from EL0 after the module set PMUSERENR_EL0.EN.

use pmu_armv8::registers::PMUSERENR_EL0;
use pmu_armv8::{El0Pmu, PmuOptions, PmuVersion};

use pmu_armv8::granted::{El0Reads, GrantedLayout, GrantedPmu};
use pmu_armv8::handle::CounterHandle;
use pmu_armv8::{CounterId, EventCounter, EventNumber};
use pmu_core::Slot;

use super::alloc::OwnedCounters;
use super::grant;
use super::probe::probe_with;
use super::region::{
    boxed_region, handles_and_own_sentinel, AccessCheck, NoFlags, OverflowFlags, SENTINEL_FILTER,
};
use crate::backend::{Backend, GrantScope, How, Opened, Request};
use crate::error::{Error, Result};
use crate::machine::sched::{pin_to, PinGuard};
use crate::sentinel::Sentinel;

/// The read-only grant exists on ARMv8 (PMUSERENR_EL0.ER, CR).
pub(super) const READ_ONLY_GRANT: bool = true;

/// Whether user mode may program the PMU of the CPU this thread runs on
/// (PMUSERENR_EL0.EN; pin first: the grant is per CPU).
///
/// # Errors
/// [`crate::error::AccessError::NotEnabled`]; [`crate::error::AccessError::GrantMissing`];
/// [`crate::error::AccessError::ProbeFailed`].
pub(super) fn probe() -> Result<()> {
    probe_with(probe_access)
}

/// The grants on `cpu` (see [`super::grants`]): this thread's under the module's
/// per-thread mode ([`take_thread_granted`], given back at once), else the read-only
/// grant ([`take_granted`]) and the programming grant ([`probe`]), in that order.
pub(super) fn grants(cpu: usize) -> crate::backend::GrantCheck {
    if grant::per_thread() {
        let granted = take_thread_granted(cpu).map(|(_pin, access, _pmu, layout)| {
            crate::backend::ThreadGrantFound {
                layout,
                scope: access.scope(),
                programs: access.programs(),
            }
        });
        return crate::backend::GrantCheck::Thread { cpu, granted };
    }
    let read_only = take_granted(cpu).map(|(_pin, _pmu, layout)| layout);
    let programming = probe();
    crate::backend::GrantCheck::CpuWide {
        cpu,
        read_only,
        programming,
    }
}

/// ARMv8 under EN: PMOVSCLR_EL0 cleared at the start, PMOVSSET_EL0 read at the stop.
#[derive(Debug)]
pub struct Flags {
    _this_pe: core::marker::PhantomData<*const ()>,
}

impl Flags {
    /// The flags, proved accessible by the register file of a PMU taken from EL0
    /// ([`pmu_armv8::El0Registers`]: EN on this PE, the thread pinned there).
    pub fn with_en(_en: &pmu_armv8::El0Registers) -> Self {
        Self {
            _this_pe: core::marker::PhantomData,
        }
    }
}

impl OverflowFlags for Flags {
    const READABLE: bool = true;
    #[inline(always)]
    fn read(&self) -> u64 {
        // SAFETY: made only by `with_en`, whose proof is a register file made under
        // EN on this PE (its contract pins the thread there; `Flags` cannot leave
        // it); `mrs` has no side effect.
        unsafe { pmu_armv8::asm::read_pmovsset_el0() }
    }
    #[inline(always)]
    fn clear(&self, mask: u64) {
        // SAFETY: as in `read`; the write clears the flags of `mask` only
        // (write-one-to-clear), the region's own counters.
        unsafe { pmu_armv8::asm::write_pmovsclr_el0(mask) }
    }
}

/// The probe: one read of PMCR_EL0, which traps (SIGILL) unless PMUSERENR_EL0.EN.
fn probe_access() {
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

/// PMUSERENR_EL0 still grants the reads of a layout, read from EL0 without trapping
/// (pmu-armv8 `GrantedLayout::reads_granted`: ER for its event counters and its
/// sentinel, CR for its cycle counter; on a PMUv3p9 CPU under UEN, the module's TID
/// mark): perf's `armv8pmu_start()` clears it or, for a task with rdpmc events on
/// Linux 6.13+ and PMUv3p9, replaces it with its own per-counter grant; CPU hotplug and
/// power-down reset it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PmuserenrRead {
    layout: GrantedLayout,
}

impl PmuserenrRead {
    /// The check for `layout`.
    pub fn for_layout(layout: &pmu_armv8::granted::GrantedLayout) -> Self {
        Self { layout: *layout }
    }

    /// Why the reads are not granted now, if they are not.
    ///
    /// # Errors
    /// pmu-armv8 `ReadsNotGranted`.
    pub fn check(&self) -> core::result::Result<(), pmu_armv8::granted::ReadsNotGranted> {
        // SAFETY: PMUSERENR_EL0 is readable at EL0 whatever its value.
        let value = unsafe { pmu_armv8::asm::read_pmuserenr_el0() };
        self.layout.reads_granted(value)
    }
}

impl AccessCheck for PmuserenrRead {
    #[inline(always)]
    fn granted(&self) -> bool {
        self.check().is_ok()
    }
}

/// kmod-enable-user's per-thread grant over `A`, the check of what PMUSERENR_EL0 must
/// hold: a grant found gone at a region's edge (perf's `armv8pmu_start()` cleared
/// PMUSERENR_EL0 on this CPU: drivers/perf/arm_pmuv3.c, Linux 6.12 and 7.3) is put back
/// with REGRANT and counted; a read that trapped between the edges was put back by
/// the SIGILL handler (crate doc, "SIGILL"), or left a trap mark that makes the
/// region an error. Owns the thread's share of the grant: dropping the region ends it
/// (the last share closes the device).
#[derive(Debug)]
pub(crate) struct ThreadGranted<A> {
    inner: A,
    grant: grant::thread::ThreadGrant,
}

impl<A: AccessCheck> ThreadGranted<A> {
    /// `inner` checked under `grant`.
    pub fn new(inner: A, grant: grant::thread::ThreadGrant) -> Self {
        Self { inner, grant }
    }

    /// Whose the grant is.
    pub fn scope(&self) -> GrantScope {
        GrantScope::Thread {
            follow: self.grant.follows(),
        }
    }

    /// Whether the module's grant includes programming the PMU (el0_programming=1).
    pub fn programs(&self) -> bool {
        self.grant.programs()
    }

    /// REGRANT; a gap it reports marks the region short. Whether it granted.
    #[cold]
    fn regrant_marked(&self) -> bool {
        match self.grant.regrant() {
            Ok(true) => true,
            Ok(false) => {
                self.grant.mark_lost();
                true
            }
            Err(_) => false,
        }
    }
}

impl<A: AccessCheck> AccessCheck for ThreadGranted<A> {
    const REGRANTS: bool = true;

    /// PMUSERENR_EL0 holds the grant, or REGRANT put it back. When REGRANT says the
    /// thread's counts had been missed (`KMOD_EU_REGRANT_LOST`), the region is marked
    /// short: at a stop that is the region's verdict; at a start
    /// [`AccessCheck::region_started`] forgets it (the gap was before the region).
    #[inline(always)]
    fn granted(&self) -> bool {
        self.inner.granted() || (self.regrant_marked() && self.inner.granted())
    }

    #[cold]
    fn revoked(&self) -> Error {
        match self.grant.regrant() {
            Err(refused) => grant::thread_grant_refused(refused),
            Ok(_) => self.inner.revoked(),
        }
    }

    #[inline(always)]
    fn follows_thread(&self) -> bool {
        self.grant.follows()
    }

    #[inline(always)]
    fn region_start(&self) -> u64 {
        self.grant.region_start()
    }

    #[inline(always)]
    fn region_started(&self) {
        self.grant.forget_lost();
    }

    #[inline(always)]
    fn regrants_now(&self) -> u64 {
        self.grant.regrants()
    }

    #[inline(always)]
    fn region_end(&self, mark: u64) -> Result<u64> {
        self.grant.region_end(mark).map_err(grant::read_trapped)
    }
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
    if !grant::has_layout() {
        // No module (or none with a read-only grant): nothing is readable.
        return Err(Error::Access(crate::error::AccessError::NotEnabled));
    }
    let (text, layout) = grant::module_layout()?;
    // A read that traps on this CPU: perf's armv8pmu_start() took the grant back.
    let revoked = grant::revoked_by_perf;
    super::probe::probe_layout_reads(&layout, probe_cycle_read, probe_event_read, revoked)?;
    // Under UEN (PMUv3p9) the probes cannot trap: a counter PMUACR_EL1 does not open
    // reads as 0. PMUSERENR_EL0 says whose grant it is.
    PmuserenrRead::for_layout(&layout)
        .check()
        .map_err(grant::reads_not_granted)?;
    // SAFETY: the probes just read both kinds of counter on this (pinned) CPU and
    // PMUSERENR_EL0 grants the layout's reads (`reads_granted`: ER/CR, or the module's
    // UEN grant on PMUv3p9); the layout names only counters below PMCR_EL0.N (the
    // module programmed them).
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
/// As [`take_armv8`] and [`open_read_only_grant`].
pub(super) fn open(request: &Request) -> Result<Opened<Box<dyn Backend>>> {
    if request.program {
        return open_programmed(request);
    }
    open_read_only_grant(request)
}

/// The module's read-only grant: the counters it runs, each event on the layout slot
/// that counts it.
///
/// # Errors
/// As [`take_granted`]; [`crate::error::AccessError::NotInModuleLayout`] for an event the module does not
/// count.
pub(super) fn open_read_only_grant(request: &Request) -> Result<Opened<Box<dyn Backend>>> {
    let wanted = request.direct_events()?;
    let cpu = request.cpu_or_current();
    if grant::per_thread() {
        return open_thread_read_grant(request, &wanted, cpu);
    }
    let (pin, pmu, layout) = take_granted(cpu)?;
    let placed = grant::place_in_layout(pmu.layout(), &layout, &wanted, &request.names)?;
    let access = PmuserenrRead::for_layout(pmu.layout());
    let region = granted_region(
        pmu,
        &placed,
        request.names.clone(),
        request.sentinel,
        access,
    )?;
    Ok(Opened::direct(
        region,
        request.events.len(),
        How::ModuleLayout {
            cpu,
            layout,
            scope: GrantScope::CpuWide,
        },
        pin,
    ))
}

/// The module's read-only grant in per-thread mode ([`grant::per_thread`]): pins the
/// thread to `cpu`, asks the module for this thread's grant (GRANT on
/// /dev/kmod_enable_user), checks PMUSERENR_EL0 in place (a forked probe would trap:
/// a child has no grant), and reads the module's counters under it.
fn open_thread_read_grant(
    request: &Request,
    wanted: &[pmu_core::Event],
    cpu: usize,
) -> Result<Opened<Box<dyn Backend>>> {
    let (pin, access, pmu, text) = take_thread_granted(cpu)?;
    let scope = access.scope();
    let placed = grant::place_in_layout(pmu.layout(), &text, wanted, &request.names)?;
    let region = granted_region(
        pmu,
        &placed,
        request.names.clone(),
        request.sentinel,
        access,
    )?;
    Ok(Opened::direct(
        region,
        request.events.len(),
        How::ModuleLayout {
            cpu,
            layout: text,
            scope,
        },
        pin,
    ))
}

/// Under kmod-enable-user's per-thread grant ([`grant::per_thread`]): pins the thread
/// to `cpu`, reads the module's layout, asks the module for this thread's grant (GRANT
/// on /dev/kmod_enable_user, shared with the thread's other meters), checks
/// PMUSERENR_EL0 in place (a forked probe would trap: a child has no grant), and
/// returns the grant's check with the module's counters as a PMU and the layout as
/// the module states it. Keep the guard alive as long as the PMU.
///
/// # Errors
/// [`crate::error::Unsupported::Cpu`]; [`crate::error::AccessError::ModuleLayout`];
/// [`crate::error::AccessError::ThreadGrant`] with the module's refusal;
/// [`crate::error::AccessError::GrantMissing`] for perf's per-counter grant (PMUv3p9).
#[allow(clippy::type_complexity)]
pub(crate) fn take_thread_granted(
    cpu: usize,
) -> Result<(
    PinGuard,
    ThreadGranted<PmuserenrRead>,
    GrantedPmu<El0Reads>,
    String,
)> {
    let pin = pin_to(cpu)?;
    let (text, layout) = grant::module_layout()?;
    let access = ThreadGranted::new(
        PmuserenrRead::for_layout(&layout),
        grant::grant_this_thread()?,
    );
    if !access.granted() {
        return Err(access.revoked());
    }
    // Under UEN (PMUv3p9) a read cannot trap: PMUSERENR_EL0 says whose grant it is.
    PmuserenrRead::for_layout(&layout)
        .check()
        .map_err(grant::reads_not_granted)?;
    // SAFETY: PMUSERENR_EL0 grants the layout's reads on this CPU now (just checked),
    // this thread is pinned there and holds the module's grant, which the module puts
    // back at every switch-in; a read perf makes trap meanwhile is the SIGILL
    // handler's (re-granted, or stepped over and the region refused). The layout
    // names only counters the module programmed.
    let reads = unsafe { pmu_armv8::granted::El0Reads::new() };
    Ok((pin, access, GrantedPmu::new(layout, reads), text))
}

/// The programming grant (EN): the library programs the counters itself.
fn open_programmed(request: &Request) -> Result<Opened<Box<dyn Backend>>> {
    let wanted = request.direct_events()?;
    let cpu = request.cpu_or_current();
    if grant::per_thread() {
        return open_thread_programmed(request, wanted, cpu);
    }
    // SAFETY: `program_the_pmu`'s caller promised exclusive use of this CPU's PMU and
    // a fixed affinity; EL0 cannot read PMUVer, so only the PMUv3 baseline is assumed.
    let taken = unsafe { take_armv8(cpu, PmuVersion::PmuV3, PmuOptions::new()) };
    let (pin, pmu) = match taken {
        Ok(taken) => taken,
        Err(Error::Access(crate::error::AccessError::GrantMissing {
            cause: crate::error::GrantMissing::NoProgrammingAccess { .. },
        })) => return open_read_only_grant(request),
        Err(e) => return Err(e),
    };
    let placed: Vec<_> = wanted.into_iter().map(|e| (e, None)).collect();
    let region = programmed_region(pmu, &placed, request.names.clone(), request.sentinel)?;
    Ok(Opened::direct(
        region,
        request.events.len(),
        How::Armv8Programmed {
            cpu,
            scope: GrantScope::CpuWide,
        },
        pin,
    ))
}

/// The programming grant in per-thread mode: this thread's grant, where the module
/// gives programming access with it (`KMOD_EU_GRANTED_PROGRAM`: el0_programming=1),
/// else the read-only grant.
fn open_thread_programmed(
    request: &Request,
    wanted: Vec<pmu_core::Event>,
    cpu: usize,
) -> Result<Opened<Box<dyn Backend>>> {
    let pin = pin_to(cpu)?;
    let thread_grant = grant::grant_this_thread()?;
    if !thread_grant.programs() {
        drop(thread_grant);
        drop(pin);
        return open_read_only_grant(request);
    }
    let access = ThreadGranted::new(Pmuserenr, thread_grant);
    if !access.granted() {
        return Err(access.revoked());
    }
    let scope = access.scope();
    // SAFETY: `program_the_pmu`'s caller promised exclusive use of this CPU's PMU and
    // a fixed affinity; PMUSERENR_EL0.EN is set for this thread on this CPU (just
    // checked; a forked probe would trap: a child has no grant); only the PMUv3
    // baseline is assumed.
    let pmu = unsafe { El0Pmu::take(PmuVersion::PmuV3, PmuOptions::new()) }
        .map_err(crate::Error::from)?;
    let placed: Vec<_> = wanted.into_iter().map(|e| (e, None)).collect();
    let region = programmed_region_with(
        pmu,
        &placed,
        request.names.clone(),
        request.sentinel,
        access,
    )?;
    Ok(Opened::direct(
        region,
        request.events.len(),
        How::Armv8Programmed { cpu, scope },
        pin,
    ))
}

/// The counter of `slot` on `pmu`.
///
/// # Errors
/// [`pmu_core::Error::CounterOutOfRange`] for a slot the PMU lacks.
fn counter_id(pmu: &El0Pmu, slot: Slot) -> Result<CounterId> {
    pmu.counter_id(slot)
        .ok_or(Error::Pmu(crate::error::PmuError::Core(
            pmu_core::Error::CounterOutOfRange {
                slot,
                available: pmu_core::Pmu::capabilities(pmu).programmable,
            },
        )))
}

/// The one-instruction read handle of `slot` on a PMU taken under EN, for a
/// [`DirectRegion`] over counters of that PMU (the backend's own, or a pool's
/// counters in a region built by hand).
///
/// # Errors
/// [`pmu_core::Error::CounterOutOfRange`] for a slot the PMU lacks.
pub(crate) fn handle(pmu: &El0Pmu, slot: Slot) -> Result<CounterHandle> {
    CounterHandle::new(pmu.registers(), counter_id(pmu, slot)?).map_err(crate::Error::from)
}

impl super::pool::PoolPmu for El0Pmu {
    type Check = Pmuserenr;
    type Read<'p> = CounterHandle;
    type Flags = Flags;
    fn grant_check(&self) -> Pmuserenr {
        Pmuserenr
    }
    fn counter_read(&self, slot: Slot) -> Result<CounterHandle> {
        handle(self, slot)
    }
    fn overflow_flags(&self) -> Flags {
        Flags::with_en(self.registers())
    }
}

/// The layout counter behind a [`GrantedPmu`] slot (its i-th event counter, or the
/// cycle counter).
fn granted_counter(layout: &GrantedLayout, slot: Slot) -> Option<CounterId> {
    match slot {
        Slot::Programmable(i) => layout
            .event_counters()
            .get(usize::from(i))
            .and_then(|&(n, _)| EventCounter::new(n))
            .map(CounterId::Event),
        Slot::Fixed(0) if layout.cycle_counter() => Some(CounterId::Cycle),
        Slot::Fixed(_) => None,
    }
}

/// The name of a sentinel's event number.
fn event_name(event: u16) -> String {
    match EventNumber::new(event) {
        EventNumber::INST_RETIRED => "instructions".into(),
        EventNumber::CPU_CYCLES => "cycles".into(),
        _ => format!("r{event:x}"),
    }
}

/// A syscall-free region on the module's counters under its read-only grant, for `placed`
/// (each on the layout slot that counts it), with the module's sentinel when it runs
/// one (`sentinel=1`), else `getrusage` for switches and a [`Sentinel::Off`] saying
/// so. The grant is checked by `access` ([`PmuserenrRead`], or the per-thread grant's
/// [`ThreadGranted`]).
///
/// # Errors
/// pmu-core's allocation errors; [`crate::error::PmuError::CounterHandle`] (a slot the layout does
/// not back: cannot happen for slots of this PMU).
fn granted_region<A: AccessCheck + 'static>(
    pmu: GrantedPmu<El0Reads>,
    placed: &[(pmu_core::Event, Option<Slot>)],
    names: Vec<String>,
    watch: bool,
    access: A,
) -> Result<Box<dyn Backend>> {
    let layout = *pmu.layout();
    let counters = OwnedCounters::allocate(pmu, placed, pmu_core::PrivilegeFilter::USER)?;
    let handles = counters
        .slots()
        .map(|slot| {
            let id = granted_counter(&layout, slot).ok_or(Error::Pmu(
                crate::error::PmuError::Core(pmu_core::Error::CounterOutOfRange {
                    slot,
                    available: layout.event_counters().len() as u32,
                }),
            ))?;
            CounterHandle::new(counters.pmu(), id).map_err(crate::Error::from)
        })
        .collect::<Result<Vec<_>>>()?;
    let (sentinel, state) = match layout.sentinel() {
        _ if !watch => (None, Sentinel::off(crate::sentinel::SWITCHED_OFF)),
        Some((n, event)) => {
            let handle = CounterHandle::from_number(counters.pmu(), u32::from(n))
                .map_err(crate::Error::from)?;
            (
                Some(handle),
                Sentinel::Counting {
                    event: event_name(event),
                    how: format!(
                        "kmod-enable-user's sentinel=1 counter PMEVCNTR{n}_EL0, the \
                         kernel's level only (EL1, or EL2 with VHE), read with one instruction at both edges; a context \
                         switch shows as a kernel entry"
                    ),
                },
            )
        }
        None => (
            None,
            Sentinel::off(
                "kmod-enable-user runs none (load it with sentinel=1): regions see \
                 context switches (getrusage) and migrations, not interrupts, system \
                 calls or faults",
            ),
        ),
    };
    boxed_region(counters, access, handles, names, sentinel, state, NoFlags)
}

/// A syscall-free region on counters the backend programs itself under EN (`pmu` from
/// [`take_armv8`]), for `placed`, plus a sentinel on a free
/// counter ([`SENTINEL_FILTER`]); with no free counter (or neither event), regions
/// take `getrusage` for switches and a [`Sentinel::Off`] says why.
///
/// # Errors
/// pmu-core's allocation errors for `placed`.
pub(crate) fn programmed_region(
    pmu: El0Pmu,
    placed: &[(pmu_core::Event, Option<Slot>)],
    names: Vec<String>,
    watch: bool,
) -> Result<Box<dyn Backend>> {
    programmed_region_with(pmu, placed, names, watch, Pmuserenr)
}

/// [`programmed_region`] with the grant checked by `access` (the per-thread grant's
/// [`ThreadGranted`]).
fn programmed_region_with<A: AccessCheck + 'static>(
    pmu: El0Pmu,
    placed: &[(pmu_core::Event, Option<Slot>)],
    names: Vec<String>,
    watch: bool,
    access: A,
) -> Result<Box<dyn Backend>> {
    use pmu_core::GenericEvent;
    let candidates: &[_] = if !watch {
        &[]
    } else {
        &[
            (
                pmu_core::Event::Generic(GenericEvent::Instructions),
                SENTINEL_FILTER,
            ),
            (
                pmu_core::Event::Generic(GenericEvent::CpuCycles),
                SENTINEL_FILTER,
            ),
        ]
    };
    let (counters, sentinel_error) = OwnedCounters::allocate_with_extra(
        pmu,
        placed,
        pmu_core::PrivilegeFilter::USER,
        candidates,
    )?;
    let pmu = counters.pmu();
    let flags = Flags::with_en(pmu.registers());
    let (handles, sentinel, state) = handles_and_own_sentinel(
        &counters,
        placed.len(),
        watch,
        sentinel_error,
        |slot| handle(pmu, slot),
        |slot| {
            let counter = counter_id(pmu, slot)?;
            // The event is whichever candidate got the counter: read it back from
            // PMEVTYPER<n>_EL0 (evtCount, bits 15:0) rather than guess.
            let event = match counter {
                CounterId::Event(n) => {
                    // SAFETY: EN on this PE (`El0Pmu`'s contract), n below PMCR_EL0.N
                    // (the pool allocated it).
                    let typer = unsafe { pmu_armv8::asm::read_pmevtyper_el0(n) };
                    event_name((typer & 0xFFFF) as u16)
                }
                CounterId::Cycle => "cycles".into(),
            };
            Ok((
                event,
                format!(
                    "programmed by this library on {counter} with PMEVTYPER.U=1 P=0 NSH=1 \
                     (EL1 and EL2, not EL0), read with one instruction at both edges; a \
                     context switch shows as a kernel entry"
                ),
            ))
        },
    )?;
    boxed_region(counters, access, handles, names, sentinel, state, flags)
}
