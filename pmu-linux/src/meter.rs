//! The front door: one owned [`Meter`] over every backend, built from typed events,
//! with results indexed by the [`EventHandle`] each event got when it was added.
//!
//! [`MeterBuilder::build`] opens the best backend that works on this machine and
//! says which it picked and why ([`Meter::choice`], [`Meter::why`]; the ladder is
//! [`choose`]):
//!
//! 1. **perf** (x86_64, aarch64) when the events open and the kernel lets user space
//!    read their counters with one instruction (`rdpmc`, `mrs`). On a machine with
//!    several core PMUs (big.LITTLE: one PMU per CPU type in sysfs) generic events are
//!    opened on every one of them and summed ([`crate::perf::HybridSession`]), so a thread that
//!    migrates between clusters is counted in full; [`Meter::core_pmu_split`] gives
//!    each PMU's share;
//! 2. **direct** (aarch64) under kmod-enable-user's read-only grant, when perf's user
//!    reads are off (`kernel.perf_user_access = 0`) or the kernel registers no CPU PMU
//!    for perf; the grant that lets user space *program* the PMU is used only after
//!    [`MeterBuilder::program_the_pmu`], whose caller promises exclusive use;
//! 3. **perf with `read()`** when neither of those is possible: every reading is then
//!    flagged [`Hazards::SYSCALL_FALLBACK`];
//! 4. **software**, where there are no hardware counters at all (a VM without vPMU):
//!    perf's `task-clock` and the CPU's time-stamp counter
//!    ([`crate::machine::timestamp::TimestampMeter`]). The hardware events asked for are then
//!    not counted, and reading them is [`crate::error::Untrusted::NotCounted`] with the reason, never a
//!    zero.
//!
//! The meter is enabled when it is built: it counts from then on, and a region is
//! [`Meter::start`] … [`Meter::stop`] (or [`Meter::measure`] for warm-up, calibration
//! and statistics): `start` returns the [`Region`] that `stop` takes, so a stop
//! without a start does not compile. It owns its backend (no lifetime), so it can live in a struct; it
//! is not `Send`, because every backend binds it to the thread that built it: perf
//! events count that thread (`pid` 0), the direct backend pins it to one CPU, and the
//! hazards are judged from its switch counts and CPU.

use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};

use pmu_core::{Hazards, Reading};

use crate::backend::{BackendKind, PerfSettings, Request};
use crate::error::{Error, Result};
pub use crate::machine::events::Event;
use crate::machine::sched::PinGuard;
use crate::machine::sysfs::Sysfs;
use crate::measure::{self, EventResult, Interrupted, MeasureConfig, Measurement};
use crate::MAX_EVENTS;

pub mod choice;
mod ladder;
mod software;
pub mod survey;

// The perf backend's rungs of the ladder and the meter's inline backend where this
// library has a perf backend; the front door is the same on every architecture.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[path = "meter/perf.rs"]
mod perf_rungs;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[path = "meter/no_perf.rs"]
mod perf_rungs;

use choice::Choice;
use perf_rungs::Inner;

/// Names one event of one meter: what [`MeterBuilder::add`] returns, and what results
/// are indexed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventHandle {
    meter: u32,
    index: u16,
}

/// Builds a [`Meter`]: events first, then [`MeterBuilder::build`].
#[derive(Debug)]
pub struct MeterBuilder {
    id: u32,
    events: Vec<Event>,
    /// The one backend [`MeterBuilder::backend`] asked for; `None`: the best that
    /// works here (the ladder in [`Choice`]'s docs).
    choice: Option<BackendKind>,
    /// The perf backend's settings ([`MeterBuilder::perf_options`] where there is one).
    perf: PerfSettings,
    /// The direct backend's settings (the ARM1176's cycle divider).
    direct: crate::backend::DirectSettings,
    cpu: Option<usize>,
    sysfs: Sysfs,
    program: bool,
    /// Ask the backend for a kernel-entry sentinel ([`MeterBuilder::kernel_sentinel`]).
    sentinel: bool,
}

/// Every builder's id, so that a handle of one meter is refused by another.
static NEXT_METER: AtomicU32 = AtomicU32::new(1);

impl Default for MeterBuilder {
    fn default() -> Self {
        Self {
            id: NEXT_METER.fetch_add(1, Ordering::Relaxed),
            events: Vec::new(),
            choice: None,
            perf: Default::default(),
            direct: Default::default(),
            cpu: None,
            sysfs: Sysfs::system(),
            program: false,
            sentinel: true,
        }
    }
}

impl MeterBuilder {
    /// Adds `event`; the handle names its results.
    pub fn add(&mut self, event: impl Into<Event>) -> EventHandle {
        self.events.push(event.into());
        EventHandle {
            meter: self.id,
            index: (self.events.len() - 1).min(u16::MAX as usize) as u16,
        }
    }

    /// Adds the event `name` names (see `Event`'s `FromStr`).
    ///
    /// # Errors
    /// As `Event`'s `FromStr`.
    pub fn add_named(&mut self, name: &str) -> Result<EventHandle> {
        Ok(self.add(name.parse::<Event>()?))
    }

    /// Opens `kind` or nothing: perf (with `read()` where one-instruction reads are
    /// not allowed), the direct backend, or software events and the time-stamp
    /// counter. Without this call [`MeterBuilder::build`] picks the best backend that
    /// works here (the ladder in [`Choice`]'s docs).
    pub fn backend(&mut self, kind: BackendKind) -> &mut Self {
        self.choice = Some(kind);
        self
    }

    /// Whether the backend watches every region with a kernel-entry sentinel where it
    /// can (default: true): every region the kernel entered (interrupt, system call,
    /// page fault, preemption) is then flagged [`crate::Hazards::KERNEL_ENTRY`], so
    /// [`Measured::min`] and [`Measured::median`] leave it out (a region that enters
    /// the kernel on purpose: [`Measured::min_tolerating`]). Where the backend cannot
    /// have one, the meter still opens and [`Meter::sentinel`] says why; with `false`,
    /// no backend takes one (the direct regions then take `getrusage` for switches).
    pub fn kernel_sentinel(&mut self, on: bool) -> &mut Self {
        self.sentinel = on;
        self
    }

    /// Pins the thread to `cpu` for the meter's life (the direct backend counts on that
    /// CPU; default: the CPU the thread runs on).
    pub fn cpu(&mut self, cpu: usize) -> &mut Self {
        self.cpu = Some(cpu);
        self
    }

    /// Resolves event names against `sysfs` instead of the system's.
    pub fn sysfs(&mut self, sysfs: Sysfs) -> &mut Self {
        self.sysfs = sysfs;
        self
    }

    /// Lets the direct backend program the PMU itself where kmod-enable-user granted
    /// it (ARMv8 PMUSERENR_EL0.EN; the ARM1176's SUNAVCR.V), instead of reading only
    /// the counters the module runs.
    ///
    /// # Safety
    /// Nothing else uses the PMU of the meter's CPU while the meter lives: no perf
    /// hardware events on that CPU (Linux reprograms the counters and clears
    /// PMUSERENR_EL0 when it starts them), no second direct user; the thread's
    /// affinity is not changed meanwhile. On 32-bit ARM the CPU is an ARM1176.
    pub unsafe fn program_the_pmu(&mut self) -> &mut Self {
        self.program = true;
        self
    }

    /// Opens the best backend for the events (the ladder in [`Choice`]'s docs) and enables
    /// it.
    ///
    /// # Errors
    /// [`crate::error::GroupError::NoEvents`], [`crate::error::GroupError::TooMany`]; name errors; the chosen backend's
    /// open errors ([`Error::Open`], [`crate::error::GroupError::DoesNotFit`], the direct backend's
    /// [`crate::error::AccessError::NotEnabled`] …), and without [`MeterBuilder::backend`]
    /// the perf error when no other backend works either.
    pub fn build(&self) -> Result<Meter> {
        if self.events.is_empty() {
            return Err(Error::Group(crate::error::GroupError::NoEvents));
        }
        if self.events.len() > MAX_EVENTS {
            return Err(Error::Group(crate::error::GroupError::TooMany {
                given: self.events.len(),
                max: MAX_EVENTS,
            }));
        }
        let pin = self.cpu.map(crate::machine::sched::pin_to).transpose()?;
        let request = self.request();
        let (opened, refused) = choice::choose(self.choice, &request)?;
        let sentinel = opened.backend.backend_ref().sentinel();
        let choice = Choice::new(&opened, sentinel, refused);
        let crate::backend::Opened {
            backend: mut inner,
            slots,
            mut names,
            pin: backend_pin,
            ..
        } = opened;
        let extra = names.split_off(self.events.len().min(names.len()));
        inner.backend().enable()?;
        Ok(Meter {
            id: self.id,
            names,
            extra,
            slots,
            inner,
            choice,
            region: 0,
            open: false,
            readings: [Reading::default(); MAX_EVENTS],
            _pins: (pin, backend_pin),
        })
    }

    /// What the backends are asked to open: the events, resolved once.
    fn request(&self) -> Request {
        let mut request = Request::new(self.events.clone(), self.sysfs.clone());
        request.cpu = self.cpu;
        request.sentinel = self.sentinel;
        request.program = self.program;
        request.only = self.choice.is_some();
        request.perf = self.perf;
        request.direct = self.direct;
        request
    }
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
impl MeterBuilder {
    /// How the perf backend opens events.
    pub fn perf_options(&mut self, options: crate::perf::Options) -> &mut Self {
        self.perf = options;
        self
    }
}

#[cfg(target_arch = "arm")]
impl MeterBuilder {
    /// The ARM1176's cycle counter counts every cycle or every 64th (PMCR.D, ARM1176
    /// TRM 3.2.51): with 64 it wraps after about 392 s instead of 6 s at 700 MHz; its
    /// counts are still reported in cycles (ticks × 64, resolution 64 cycles).
    pub fn cycle_divider(&mut self, divider: pmu_armv6::CycleDivider) -> &mut Self {
        self.direct.divider = divider;
        self
    }
}

/// Counts events of code regions on the best backend of this machine: see the
/// [crate docs](crate).
pub struct Meter {
    id: u32,
    /// The user's events, by handle index.
    names: Vec<String>,
    /// The events the meter added (the software fallback's), after the user's.
    extra: Vec<String>,
    /// Per event (user's, then extra), the index of its reading; `None`: not counted.
    slots: Vec<Option<usize>>,
    inner: Inner,
    /// Which backend, how it reads, its sentinel, and the refusals before it.
    choice: Choice,
    /// The number of the region begun last, and whether it is still open (begun, not
    /// yet stopped, not ended by a `measure` or `counters` since).
    region: u32,
    open: bool,
    readings: [Reading; MAX_EVENTS],
    /// The builder's pin and the direct backend's: kept as long as the meter.
    _pins: (Option<PinGuard>, Option<PinGuard>),
}

impl fmt::Debug for Meter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Meter")
            .field("backend", &self.choice.kind)
            .field("why", &self.choice.to_string())
            .field("events", &self.names)
            .field("extra", &self.extra)
            .finish_non_exhaustive()
    }
}

impl Meter {
    /// The most events one meter (one perf group, one direct region) holds; a region's
    /// readings fit in an array this long.
    pub const MAX_EVENTS: usize = crate::MAX_EVENTS;

    /// A builder: add events, then [`MeterBuilder::build`].
    pub fn builder() -> MeterBuilder {
        MeterBuilder::default()
    }

    /// The backend this meter uses.
    pub fn backend(&self) -> BackendKind {
        self.choice.kind
    }

    /// Which backend, how its regions read, under which grant, and what the ladder
    /// refused before it; [`Meter::why`] says it in words.
    pub fn choice(&self) -> &Choice {
        &self.choice
    }

    /// Why that backend, and how it reads: [`Meter::choice`] in words.
    pub fn why(&self) -> String {
        self.choice.to_string()
    }

    /// Whether this meter's regions see every kernel entry
    /// ([`crate::Hazards::KERNEL_ENTRY`]), and how; or why not.
    pub fn sentinel(&self) -> &crate::sentinel::Sentinel {
        &self.choice.sentinel
    }

    /// On a machine with several core PMUs (big.LITTLE), where the meter opened the
    /// generic events on each and sums them (`perf::HybridSession`): `handle`'s share of
    /// the last region per core PMU, and how each was read. `None` with one core PMU
    /// (the event then has one counter, the whole count is the reading).
    ///
    /// # Errors
    /// [`crate::error::Untrusted::NotCounted`].
    ///
    /// # Panics
    /// For a handle of another meter.
    pub fn core_pmu_split(
        &self,
        handle: EventHandle,
    ) -> Result<Option<Vec<crate::verdict::PmuShare>>> {
        let slot = self.slot(handle)?;
        Ok(self.inner.split(slot))
    }

    /// How wide `handle`'s counter is where the backend reads a fixed-width counter
    /// that wraps (the direct backend: 32 bits for ARMv6/ARMv7 counters and PMUv3
    /// event counters without FEAT_PMUv3p5, 64 for PMCCNTR_EL0): a region longer than
    /// the time the counter takes to count 2^width events may have wrapped more often
    /// than its reading can tell. `None` where the count does not wrap (perf extends
    /// it to 64 bits) or for an event this backend does not count.
    ///
    /// # Panics
    /// For a handle of another meter.
    pub fn counter_width(&self, handle: EventHandle) -> Option<pmu_core::CounterWidth> {
        let slot = self.slot(handle).ok()?;
        self.inner.backend_ref().width(slot)
    }

    /// Every event with its handle and whether this backend counts it: the ones added,
    /// then the ones the meter added itself (the software fallback's `task-clock` and
    /// time-stamp counter).
    pub fn events(&self) -> impl Iterator<Item = (EventHandle, &str, bool)> + '_ {
        self.names
            .iter()
            .chain(&self.extra)
            .enumerate()
            .map(|(i, name)| (self.handle(i), name.as_str(), self.slots[i].is_some()))
    }

    /// The handle of the event named `name` (as [`Meter::events`] lists it).
    pub fn handle_of(&self, name: &str) -> Option<EventHandle> {
        self.events()
            .find(|(_, n, _)| *n == name)
            .map(|(handle, _, _)| handle)
    }

    fn handle(&self, index: usize) -> EventHandle {
        EventHandle {
            meter: self.id,
            index: index as u16,
        }
    }

    /// The reading index of `handle`'s event, or why there is none.
    ///
    /// # Panics
    /// For a handle of another meter, as indexing a map with a key of another does.
    fn slot(&self, handle: EventHandle) -> Result<usize> {
        let index = usize::from(handle.index);
        assert!(
            handle.meter == self.id && index < self.slots.len(),
            "an event handle of another meter: use the handles of the builder this meter \
             was built from"
        );
        self.slots[index].ok_or_else(|| {
            Error::Untrusted(crate::error::Untrusted::NotCounted {
                event: self.names[index].clone(),
                backend: self.choice.kind.to_string(),
                why: self.choice.to_string(),
            })
        })
    }

    fn name(&self, index: usize) -> &str {
        self.names
            .get(index)
            .or_else(|| self.extra.get(index - self.names.len().min(index)))
            .map_or("", String::as_str)
    }

    /// Starts a region: the [`Region`] that [`Meter::stop`] ends.
    ///
    /// # Errors
    /// The backend's read errors (then no region is open).
    #[inline(always)]
    pub fn start(&mut self) -> Result<Region> {
        let started = self.inner.start();
        self.region = self.region.wrapping_add(1);
        self.open = started.is_ok();
        started.map(|()| Region {
            meter: self.id,
            number: self.region,
        })
    }

    /// Ends `region`: its counts, by handle.
    ///
    /// # Errors
    /// The backend's read errors.
    ///
    /// # Panics
    /// When `region` is not this meter's open region: another meter's, or one that a
    /// [`Meter::measure`] or [`Meter::measure_with`] call ended (both measure regions of
    /// their own on the same counters). Both are mistakes in the calling code, as
    /// indexing with a key of another map is.
    #[inline(always)]
    pub fn stop(&mut self, region: Region) -> Result<Counts<'_>> {
        if region.meter != self.id || region.number != self.region || !self.open {
            region_not_open(region, self.id);
        }
        self.open = false;
        self.inner.stop(&mut self.readings)?;
        Ok(Counts { meter: self })
    }

    /// Measures `region` the default way ([`MeasureConfig::default`]; another way:
    /// [`Meter::measure_with`]):
    /// warm-up runs, then recorded runs, and with calibration an empty region measured
    /// the same way and subtracted; statistics over the runs without hazards.
    ///
    /// # Errors
    /// The backend's read errors; [`pmu_core::Error`] for zero runs.
    pub fn measure(&mut self, mut region: impl FnMut()) -> Result<Measured<'_>> {
        self.open = false;
        let config = MeasureConfig::default();
        let measurement = measure::measure(self.inner.backend(), &config, &mut region)?;
        Ok(Measured {
            meter: self,
            measurement,
        })
    }

    /// What the last region's hazards were derived from.
    pub fn evidence(&mut self) -> crate::verdict::Evidence {
        self.inner.backend().evidence()
    }

    /// Measures `region` as `config` says, calibrated against `baseline` when one is
    /// given (uncalibrated without): `region` and `baseline` should be two values of
    /// one closure type that differ only in the work they do, so that the call costs
    /// cancel exactly. On an error, the runs measured before it are kept.
    ///
    /// # Errors
    /// [`Interrupted`] with the backend's error and every run completed before it;
    /// [`pmu_core::Error`] for zero runs.
    pub fn measure_with<'r>(
        &mut self,
        config: &MeasureConfig,
        region: &'r mut dyn FnMut(),
        baseline: Option<&'r mut dyn FnMut()>,
    ) -> std::result::Result<Measured<'_>, Box<Interrupted>> {
        self.open = false;
        let measurement =
            measure::measure_keeping_partial(self.inner.backend(), config, region, baseline)?;
        Ok(Measured {
            meter: self,
            measurement,
        })
    }

    /// Sets `handle`'s counter `distance` counts below its wrap, so that a region that
    /// counts further overflows it and is flagged [`Hazards::OVERFLOW`]: how a program
    /// sees the overflow check work. The counter runs on from there (the next region
    /// starts wherever it then is). `distance` is in counts of the counter's register:
    /// on the ARM1176 under `MeterBuilder::cycle_divider` 64, ticks of 64 cycles for
    /// `cycles`.
    ///
    /// # Errors
    /// [`crate::error::Unsupported::Preset`] unless the meter programs its counters
    /// (the direct backend under the programming grant, [`MeterBuilder::program_the_pmu`]);
    /// [`crate::error::Untrusted::NotCounted`] for an event the backend does not count;
    /// the grant's check ([`crate::error::AccessError::Revoked`]).
    ///
    /// # Panics
    /// For a handle of another meter, as [`Meter::stop`]'s results do.
    pub fn preset_before_wrap(&mut self, handle: EventHandle, distance: u64) -> Result<()> {
        let i = self.slot(handle)?;
        if !matches!(
            self.choice.grant,
            Some(crate::backend::Grant::Program { .. })
        ) {
            return Err(Error::Unsupported(crate::error::Unsupported::Preset));
        }
        self.inner.backend().preset_before_wrap(i, distance)
    }

    /// The events the backend counts, in the order of [`Measurement`]'s readings (the
    /// user's counted events, then the meter's own).
    pub fn counted(&mut self) -> Vec<String> {
        self.inner.backend().names()
    }
}

impl Drop for Meter {
    fn drop(&mut self) {
        // Counting stops with the backend's own drop too (perf closes the events, the
        // direct counters are released): this only stops them first, in order.
        let _ = self.inner.backend().disable();
    }
}

/// A region begun by [`Meter::start`], to be ended by [`Meter::stop`] (once: it is
/// neither `Clone` nor `Copy`).
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a region is ended by passing it to Meter::stop"]
pub struct Region {
    meter: u32,
    number: u32,
}

/// The panic of [`Meter::stop`] with a region that is not open; out of the stop's line.
#[cold]
#[inline(never)]
#[track_caller]
fn region_not_open(region: Region, meter: u32) -> ! {
    if region.meter == meter {
        panic!(
            "Meter::stop: region {} was ended by a measure since its start",
            region.number
        )
    }
    panic!("Meter::stop: a region of another meter")
}

/// One region's counts (from [`Meter::stop`]), by handle.
#[derive(Debug)]
pub struct Counts<'m> {
    meter: &'m Meter,
}

impl Counts<'_> {
    /// `handle`'s reading: the count with its hazards.
    ///
    /// # Errors
    /// [`crate::error::Untrusted::NotCounted`] for an event this backend does not count.
    ///
    /// # Panics
    /// For a handle of another meter.
    pub fn reading(&self, handle: EventHandle) -> Result<Reading> {
        Ok(self.meter.readings[self.meter.slot(handle)?])
    }

    /// `handle`'s count, when the region had no hazard for it.
    ///
    /// # Errors
    /// [`crate::error::Untrusted::Hazardous`] with the reading when it has hazards; as
    /// [`Counts::reading`].
    pub fn value(&self, handle: EventHandle) -> Result<u64> {
        let reading = self.reading(handle)?;
        if reading.hazards.is_empty() {
            Ok(reading.value)
        } else {
            Err(Error::Untrusted(crate::error::Untrusted::Hazardous {
                event: self.meter.name(usize::from(handle.index)).to_owned(),
                value: reading.value,
                hazards: reading.hazards,
            }))
        }
    }
}

/// The result of [`Meter::measure`], by handle.
#[derive(Debug)]
pub struct Measured<'m> {
    meter: &'m Meter,
    measurement: Measurement,
}

impl Measured<'_> {
    /// `handle`'s statistics (with the empty region's subtracted when calibrated).
    ///
    /// # Errors
    /// As [`Counts::reading`].
    pub fn event(&self, handle: EventHandle) -> Result<&EventResult> {
        Ok(&self.measurement.events[self.meter.slot(handle)?])
    }

    /// The smallest count over the runs without hazards, minus the empty region's
    /// smallest when calibrated.
    ///
    /// # Errors
    /// [`crate::error::Untrusted::NoCleanRun`] when every run had a hazard for this event; as
    /// [`Counts::reading`].
    pub fn min(&self, handle: EventHandle) -> Result<i64> {
        self.statistic(handle, |c| c.min)
    }

    /// The median over the runs without hazards (the lower one of an even count),
    /// minus the empty region's median when calibrated.
    ///
    /// # Errors
    /// As [`Measured::min`].
    pub fn median(&self, handle: EventHandle) -> Result<i64> {
        self.statistic(handle, |c| c.median)
    }

    /// [`Measured::min`] over the runs whose hazards are all in `tolerated` (for
    /// example [`Hazards::SYSCALL_FALLBACK`] | [`Hazards::NOT_SCHEDULED`] for a
    /// software event, which is always read with `read()`).
    ///
    /// # Errors
    /// As [`Measured::min`].
    pub fn min_tolerating(&self, handle: EventHandle, tolerated: Hazards) -> Result<i64> {
        let slot = self.meter.slot(handle)?;
        let corrected = self.measurement.tolerating(slot, tolerated);
        let value = if self.measurement.baseline.is_empty() {
            corrected.region.min.map(|v| v as i64)
        } else {
            corrected.min
        };
        value.ok_or_else(|| self.no_clean_run(handle, corrected.region))
    }

    fn statistic(
        &self,
        handle: EventHandle,
        pick: impl Fn(&pmu_core::Corrected) -> Option<i64>,
    ) -> Result<i64> {
        let event = self.event(handle)?;
        let value = match &event.corrected {
            Some(corrected) => pick(corrected),
            None => pick(&pmu_core::Corrected::new(
                event.summary,
                pmu_core::Summary {
                    min: Some(0),
                    median: Some(0),
                    ..Default::default()
                },
            )),
        };
        value.ok_or_else(|| self.no_clean_run(handle, event.summary))
    }

    fn no_clean_run(&self, handle: EventHandle, summary: pmu_core::Summary) -> Error {
        Error::Untrusted(crate::error::Untrusted::NoCleanRun {
            event: self.meter.name(usize::from(handle.index)).to_owned(),
            runs: summary.runs,
            hazards: summary.hazards,
        })
    }

    /// How many recorded runs of the region had a hazard on some event (left out of the
    /// statistics of that event).
    pub fn runs_with_hazards(&self) -> usize {
        self.measurement.runs.len() - self.measurement.trusted_runs()
    }

    /// Every run with its readings and evidence.
    pub fn measurement(&self) -> &Measurement {
        &self.measurement
    }
}

#[cfg(test)]
mod tests;
