//! The front door: one owned [`Meter`] over every backend, built from typed events,
//! with results indexed by the [`EventHandle`] each event got when it was added.
//!
//! [`MeterBuilder::build`] opens the best backend that works on this machine and
//! says which it picked and why ([`Meter::backend`], [`Meter::why`]):
//!
//! 1. **perf** (x86_64, aarch64) when the events open and the kernel lets user space
//!    read their counters with one instruction (`rdpmc`, `mrs`). On a machine with
//!    several core PMUs (big.LITTLE: one PMU per CPU type in sysfs) generic events are
//!    opened on every one of them and summed ([`crate::hybrid`]), so a thread that
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
//!    ([`crate::timestamp::TimestampMeter`]). The hardware events asked for are then
//!    not counted, and reading them is [`Error::NotCounted`] with the reason, never a
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
use std::str::FromStr;
use std::sync::atomic::{AtomicU32, Ordering};

use pmu_core::{GenericEvent, Hazards, Reading, RegionMeter};

use crate::error::{Error, Result};
use crate::events;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use crate::events::EventKind;
use crate::measure::{self, Backend, EventResult, MeasureConfig, Measurement};
use crate::sched::PinGuard;
use crate::sysfs::Sysfs;
use crate::timestamp::TimestampMeter;
use crate::MAX_EVENTS;

/// An event to count.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Event {
    /// A generic event (perf's generic hardware and cache events; the direct backend's
    /// architecture crates encode each for their PMU).
    Generic(GenericEvent),
    /// A raw event code of the CPU's PMU, as its manual gives it (perf `r<hex>`).
    Raw(u64),
    /// Any name perf understands: a software event (`task-clock`, `page-faults`), a
    /// cache event (`LLC-loads`), a sysfs event (`armv8_pmuv3_0/event=0x08/`,
    /// `cpu/event=0x3c,umask=0x00/`) or a bare sysfs alias; resolved when the meter is
    /// built.
    Named(String),
}

impl Event {
    /// The name perf knows the event by.
    pub fn name(&self) -> String {
        match self {
            Self::Generic(g) => g.perf_name().to_owned(),
            Self::Raw(code) => format!("r{code:x}"),
            Self::Named(name) => name.clone(),
        }
    }

    /// The event as the direct backend counts it (hardware events only).
    ///
    /// # Errors
    /// [`Error::NotDirectEvent`] for software, cache and sysfs events; name errors.
    pub fn direct(&self) -> Result<pmu_core::Event> {
        match self {
            Self::Generic(g) => Ok(pmu_core::Event::Generic(*g)),
            Self::Raw(code) => Ok(pmu_core::Event::Raw(*code)),
            Self::Named(name) => events::direct_event(name),
        }
    }
}

impl From<GenericEvent> for Event {
    fn from(event: GenericEvent) -> Self {
        Self::Generic(event)
    }
}

impl FromStr for Event {
    type Err = Error;

    /// A generic event's perf name (or alias: `cpu-cycles`), `r<hex>`, or any other
    /// name, kept as [`Event::Named`] and resolved at build.
    ///
    /// # Errors
    /// [`Error::MalformedRaw`] for `r` followed by something that is not 1 to 16 hex
    /// digits, [`Error::UnknownEvent`] for an empty name.
    fn from_str(text: &str) -> Result<Self> {
        let name = text.trim();
        if name.is_empty() {
            return Err(Error::UnknownEvent {
                name: text.to_owned(),
            });
        }
        if name.contains('/') {
            return Ok(Self::Named(name.to_owned()));
        }
        match events::direct_event(name) {
            Ok(pmu_core::Event::Generic(g)) => return Ok(Self::Generic(g)),
            Ok(pmu_core::Event::Raw(code)) => return Ok(Self::Raw(code)),
            Err(e @ Error::MalformedRaw { .. }) => return Err(e),
            Err(_) => {}
        }
        Ok(Self::Named(name.to_owned()))
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// Names one event of one meter: what [`MeterBuilder::add`] returns, and what results
/// are indexed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventHandle {
    meter: u32,
    index: u16,
}

/// Which backend a meter uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BackendKind {
    /// perf_event_open with the metadata pages.
    Perf,
    /// The library programs or reads the PMU itself, after kmod-enable-user.
    Direct,
    /// No hardware counters: perf software events and the time-stamp counter.
    Software,
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Perf => "perf",
            Self::Direct => "direct",
            Self::Software => "software",
        })
    }
}

/// Which backends [`MeterBuilder::build`] may pick.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BackendChoice {
    /// The best that works here (see the [module docs](self)).
    #[default]
    Auto,
    /// perf only (with `read()` where one-instruction reads are not allowed).
    Perf,
    /// The direct backend only.
    Direct,
    /// Software events and the time-stamp counter only.
    Software,
}

/// Builds a [`Meter`]: events first, then [`MeterBuilder::build`].
#[derive(Debug)]
pub struct MeterBuilder {
    id: u32,
    events: Vec<Event>,
    choice: BackendChoice,
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    options: crate::session::Options,
    config: MeasureConfig,
    cpu: Option<usize>,
    sysfs: Sysfs,
    program: bool,
    #[cfg(target_arch = "arm")]
    divider: pmu_armv6::CycleDivider,
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
            choice: BackendChoice::Auto,
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            options: crate::session::Options::default(),
            config: MeasureConfig::default(),
            cpu: None,
            sysfs: Sysfs::system(),
            program: false,
            #[cfg(target_arch = "arm")]
            divider: pmu_armv6::CycleDivider::EveryCycle,
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

    /// Adds the event `name` names (see [`Event::from_str`]).
    ///
    /// # Errors
    /// As [`Event::from_str`].
    pub fn add_named(&mut self, name: &str) -> Result<EventHandle> {
        Ok(self.add(name.parse::<Event>()?))
    }

    /// Restricts the backends [`MeterBuilder::build`] may pick.
    pub fn backend(&mut self, choice: BackendChoice) -> &mut Self {
        self.choice = choice;
        self
    }

    /// Whether the backend watches every region with a kernel-entry sentinel where it
    /// can (default: true): every region the kernel entered (interrupt, system call,
    /// page fault, preemption) is then flagged [`crate::Hazards::KERNEL_ENTRY`], so
    /// [`Measured::min`] and [`Measured::median`] leave it out (a region that enters
    /// the kernel on purpose: [`Measured::min_tolerating`]). The perf backend adds one
    /// kernel-only member to the group (`Options::kernel_sentinel`, whatever
    /// `MeterBuilder::perf_options` say); where it cannot, the meter still opens and
    /// [`Meter::sentinel`] says why. The direct backends use theirs wherever they have
    /// one, whatever this says: it replaces the system calls of their regions
    /// ([`crate::direct::lean`]).
    pub fn kernel_sentinel(&mut self, on: bool) -> &mut Self {
        self.sentinel = on;
        self
    }

    /// The perf session options: [`MeterBuilder::perf_options`] with the sentinel as
    /// [`MeterBuilder::kernel_sentinel`] says.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn session_options(&self) -> crate::session::Options {
        self.options.kernel_sentinel(self.sentinel)
    }

    /// How the perf backend opens events.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    pub fn perf_options(&mut self, options: crate::session::Options) -> &mut Self {
        self.options = options;
        self
    }

    /// How [`Meter::measure`] measures (default: 3 warm-ups, 10 runs, calibrated).
    pub fn measure_config(&mut self, config: MeasureConfig) -> &mut Self {
        self.config = config;
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

    /// The ARM1176's cycle counter counts every cycle or every 64th (PMCR.D, ARM1176
    /// TRM 3.2.51): with 64 it wraps after about 392 s instead of 6 s at 700 MHz; its
    /// counts are still reported in cycles (ticks × 64, resolution 64 cycles).
    #[cfg(target_arch = "arm")]
    pub fn cycle_divider(&mut self, divider: pmu_armv6::CycleDivider) -> &mut Self {
        self.divider = divider;
        self
    }

    /// Opens the best backend for the events (see the [module docs](self)) and enables
    /// it.
    ///
    /// # Errors
    /// [`Error::NoEvents`], [`Error::TooManyEvents`]; name errors; the chosen backend's
    /// open errors ([`Error::Open`], [`Error::GroupDoesNotFit`], the direct backend's
    /// [`Error::UserAccessNotEnabled`] …), and with [`BackendChoice::Auto`] the perf
    /// error when no other backend works either.
    pub fn build(&self) -> Result<Meter> {
        if self.events.is_empty() {
            return Err(Error::NoEvents);
        }
        if self.events.len() > MAX_EVENTS {
            return Err(Error::TooManyEvents {
                given: self.events.len(),
                max: MAX_EVENTS,
            });
        }
        let pin = self.cpu.map(crate::sched::pin_to).transpose()?;
        let opened = match self.choice {
            BackendChoice::Direct => self.open_direct()?,
            BackendChoice::Software => self.open_software(Vec::new())?,
            BackendChoice::Auto | BackendChoice::Perf => self.open_auto()?,
        };
        let Opened {
            mut inner,
            slots,
            mut names,
            kind,
            why,
            pin: backend_pin,
        } = opened;
        let mut extra = Vec::new();
        for name in names.iter().skip(self.events.len()) {
            extra.push(name.clone());
        }
        names.truncate(self.events.len());
        inner.counters().enable()?;
        let sentinel = inner.counters().sentinel();
        Ok(Meter {
            id: self.id,
            names,
            extra,
            slots,
            inner,
            kind,
            why,
            sentinel,
            config: self.config,
            region: 0,
            open: false,
            readings: [Reading::default(); MAX_EVENTS],
            _pins: (pin, backend_pin),
        })
    }

    /// perf first; then the direct read-only grant; then perf's `read()`; then the
    /// software events.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn open_auto(&self) -> Result<Opened> {
        use crate::region::FallbackReason;
        let specs = self
            .events
            .iter()
            .map(|e| events::resolve(&e.name(), &self.sysfs))
            .collect::<Result<Vec<_>>>()?;
        let hardware = specs.iter().any(|s| s.kind != EventKind::Software);
        // Several core PMUs (big.LITTLE, x86 hybrid): generic events on every one of them,
        // summed, as perf stat does (crate::hybrid).
        if hardware {
            if let Some(hybrid) = self.open_hybrid(&specs)? {
                return Ok(hybrid);
            }
        }
        // arm64 with perf's user reads off: the module's read-only grant first. Opening
        // perf's hardware events would revoke it on this CPU (Linux 6.12
        // drivers/perf/arm_pmuv3.c `armv8pmu_start` rewrites PMUSERENR_EL0).
        let mut granted_error = None;
        if self.choice == BackendChoice::Auto
            && hardware
            && cfg!(target_arch = "aarch64")
            && crate::sys::perf_user_access() == Some(0)
            && std::path::Path::new(crate::direct::MODULE_LAYOUT).exists()
        {
            match self.open_direct_granted() {
                Ok(mut direct) => {
                    direct.why = format!(
                        "perf cannot give one-instruction reads here (kernel.perf_user_access \
                         = 0); {}",
                        direct.why
                    );
                    return Ok(direct);
                }
                Err(e) => granted_error = Some(e),
            }
        }
        match crate::session::Session::from_specs(specs.clone(), self.session_options()) {
            Ok(session) => {
                session.check_fits()?;
                session.enable()?;
                let blocked = (0..session.len())
                    .filter(|&i| {
                        session
                            .specs()
                            .nth(i)
                            .is_some_and(|s| s.kind != EventKind::Software)
                    })
                    .find_map(|i| session.read_fast(i).err());
                session.disable()?;
                session.reset()?;
                let why = match blocked {
                    None if hardware => {
                        "the kernel lets this thread read every counter with one instruction \
                         (rdpmc / mrs through the perf metadata page)"
                            .to_owned()
                    }
                    None => "software events only: the kernel's own counters, read with read()"
                        .to_owned(),
                    Some(blocked) => {
                        let reason = match blocked {
                            FallbackReason::Page(f) => f.to_string(),
                            other => other.to_string(),
                        };
                        // The kernel forbids user reads (perf_user_access = 0): the
                        // module's grant may still allow them. (Unmapped pages, asked
                        // for, stay with perf.)
                        let forbidden =
                            blocked == FallbackReason::Page(pmu_core::Fallback::NoUserAccess);
                        if self.choice == BackendChoice::Auto
                            && forbidden
                            && cfg!(target_arch = "aarch64")
                        {
                            drop(session);
                            let direct = match granted_error {
                                Some(e) => Err(e),
                                None => self.open_direct_granted(),
                            };
                            match direct {
                                Ok(mut direct) => {
                                    direct.why = format!(
                                        "perf cannot give one-instruction reads here ({reason}); {}",
                                        direct.why
                                    );
                                    return Ok(direct);
                                }
                                Err(direct_error) => {
                                    let session = crate::session::Session::from_specs(
                                        specs,
                                        self.session_options(),
                                    )?;
                                    return Ok(perf_opened(
                                        session,
                                        self.events.len(),
                                        format!(
                                            "every read is a read() system call ({reason}), \
                                             flagged syscall-fallback; the direct backend is \
                                             not available either: {direct_error}"
                                        ),
                                    ));
                                }
                            }
                        }
                        format!(
                            "every read is a read() system call ({reason}), flagged \
                             syscall-fallback"
                        )
                    }
                };
                Ok(perf_opened(session, self.events.len(), why))
            }
            Err(e) if self.choice == BackendChoice::Auto && e.means_no_hardware_counters() => {
                let mut notes = crate::list::why_no_hardware_counters(&self.sysfs);
                if notes.is_empty() {
                    notes.push(e.to_string());
                }
                if cfg!(target_arch = "aarch64") {
                    let direct = match granted_error {
                        Some(e) => Err(e),
                        None => self.open_direct_granted(),
                    };
                    match direct {
                        Ok(mut direct) => {
                            direct.why = format!("{}; {}", notes.join("; "), direct.why);
                            return Ok(direct);
                        }
                        Err(direct_error) => {
                            notes.push(format!("direct backend: {direct_error}"));
                        }
                    }
                }
                self.open_software(notes)
            }
            Err(e) => Err(e),
        }
    }

    /// With two core PMUs or more in sysfs and only generic hardware events (the
    /// perf-defined `instructions`, `cycles`, cache events …): a
    /// [`crate::hybrid::HybridSession`], each event opened on every core PMU with its extended
    /// type and summed. `None` where the machine has one core PMU (or none) or an event
    /// belongs to one PMU (raw numbers, `pmu/term=…/`): then the plain session.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn open_hybrid(&self, specs: &[crate::events::EventSpec]) -> Result<Option<Opened>> {
        let Ok(topology) = crate::hybrid::CoreTopology::discover_in(&self.sysfs) else {
            return Ok(None);
        };
        let generic = specs
            .iter()
            .all(|s| matches!(s.kind, EventKind::Hardware | EventKind::HwCache));
        if !topology.is_heterogeneous() || !generic || self.choice == BackendChoice::Direct {
            return Ok(None);
        }
        let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
            .ok()
            .and_then(|t| crate::hybrid::parse_cpu_list(&t))
            .unwrap_or_default();
        let names: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let session = match crate::hybrid::HybridSession::open_in(
            &self.sysfs,
            &online,
            &refs,
            self.session_options(),
        ) {
            Ok(session) => session,
            // The PMUs are listed but cannot count (a VM's sysfs copy, a driver gone):
            // the plain path finds out and says why, or falls back to software.
            Err(e) if e.means_no_hardware_counters() => return Ok(None),
            Err(e) => return Err(e),
        };
        let pmus = session.pmus().join(", ");
        let why = format!(
            "{} core PMUs ({pmus}): every event opened on each and summed, the share of each \
             in Meter::core_pmu_split; {}",
            session.pmus().len(),
            if session.page_reads() {
                "read with one instruction through the pages"
            } else {
                "read with read() (no user-space reads), flagged syscall-fallback"
            }
        );
        Ok(Some(Opened {
            names,
            inner: Inner::Hybrid(session),
            slots: (0..self.events.len()).map(Some).collect(),
            kind: BackendKind::Perf,
            why,
            pin: None,
        }))
    }

    /// 32-bit ARM: no perf backend in this library; the direct one.
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    fn open_auto(&self) -> Result<Opened> {
        if self.choice == BackendChoice::Perf {
            return Err(Error::PerfUnsupported);
        }
        self.open_direct()
    }

    /// The direct backend: programming the PMU where allowed and asked for, else the
    /// module's read-only grant.
    fn open_direct(&self) -> Result<Opened> {
        #[cfg(target_arch = "aarch64")]
        {
            if self.program {
                return self.open_direct_programmed();
            }
            self.open_direct_granted()
        }
        #[cfg(target_arch = "arm")]
        {
            #[cfg(target_feature = "v7")]
            if crate::direct::aarch32::is_armv7_cpu() {
                return self.open_aarch32();
            }
            self.open_arm1176()
        }
        #[cfg(not(any(target_arch = "aarch64", target_arch = "arm")))]
        {
            crate::direct::probe()?;
            Err(Error::DirectUnsupported {
                reason: crate::error::DirectUnsupported::Architecture,
            })
        }
    }

    /// The CPU the direct backend uses: the one given, else the one the thread is on
    /// (the ARM1176's is CPU 0: the Raspberry Pi 1 and Zero have one core).
    #[cfg(target_arch = "aarch64")]
    fn direct_cpu(&self) -> usize {
        self.cpu
            .or_else(|| crate::sched::current_cpu().map(|c| c as usize))
            .unwrap_or(0)
    }

    /// The direct events, checked before anything is taken.
    #[cfg(any(target_arch = "aarch64", target_arch = "arm"))]
    fn direct_events(&self) -> Result<Vec<pmu_core::Event>> {
        self.events.iter().map(Event::direct).collect()
    }

    #[cfg(target_arch = "aarch64")]
    fn open_direct_granted(&self) -> Result<Opened> {
        use pmu_core::EventEncoding;
        let wanted = self.direct_events()?;
        let cpu = self.direct_cpu();
        let (pin, pmu, layout) = crate::direct::armv8::take_granted(cpu)?;
        let access = crate::direct::armv8::PmuserenrRead::for_layout(pmu.layout());
        let placed = wanted
            .iter()
            .zip(&self.events)
            .map(|(&event, asked)| {
                let code = pmu_armv8::Armv8Event::encode(event)?;
                let slot = pmu
                    .layout()
                    .slot_of(code)
                    .ok_or_else(|| Error::NotInModuleLayout {
                        event: asked.name(),
                        layout: layout.clone(),
                    })?;
                Ok((event, Some(slot)))
            })
            .collect::<Result<Vec<_>>>()?;
        if !self.options.thorough_evidence {
            return self.open_direct_lean_granted(pmu, &placed, &layout, cpu, pin);
        }
        let counters =
            crate::direct::OwnedCounters::allocate(pmu, &placed, pmu_core::PrivilegeFilter::USER)?;
        let meter = crate::direct::GenericDirectMeter::new(counters, self.names(), access)?;
        Ok(direct_opened(
            self.unwatched(meter),
            self.events.len(),
            format!(
                "grant: read-only (PMUSERENR_EL0 ER or ER|CR, no EN) from kmod-enable-user on CPU {cpu}: the counters the \
                 module runs ({layout}), read with one instruction, EL0 only; event counters \
                 read as 32 bits (no overflow flags without EN: a region must count fewer \
                 than 2^32 events)"
            ),
            pin,
        ))
    }

    /// x86_64 has no read-only grant to take (the callers ask on aarch64 only).
    #[cfg(target_arch = "x86_64")]
    fn open_direct_granted(&self) -> Result<Opened> {
        crate::direct::probe()?;
        Err(Error::DirectUnsupported {
            reason: crate::error::DirectUnsupported::Architecture,
        })
    }

    #[cfg(target_arch = "aarch64")]
    fn open_direct_programmed(&self) -> Result<Opened> {
        use pmu_armv8::{PmuOptions, PmuVersion};
        let wanted = self.direct_events()?;
        let cpu = self.direct_cpu();
        // SAFETY: `program_the_pmu`'s caller promised exclusive use of this CPU's PMU and
        // a fixed affinity; EL0 cannot read PMUVer, so only the PMUv3 baseline is assumed.
        let taken =
            unsafe { crate::direct::armv8::take_armv8(cpu, PmuVersion::PmuV3, PmuOptions::new()) };
        match taken {
            Ok((pin, pmu)) => {
                let placed: Vec<_> = wanted.into_iter().map(|e| (e, None)).collect();
                if !self.options.thorough_evidence {
                    return self.open_direct_lean_programmed(pmu, &placed, cpu, pin);
                }
                let counters = crate::direct::OwnedCounters::allocate(
                    pmu,
                    &placed,
                    pmu_core::PrivilegeFilter::USER,
                )?;
                let meter = crate::direct::GenericDirectMeter::new(
                    counters,
                    self.names(),
                    crate::direct::armv8::Pmuserenr,
                )?;
                Ok(direct_opened(
                    self.unwatched(meter),
                    self.events.len(),
                    format!(
                        "grant: read and program (EN) from kmod-enable-user on CPU {cpu}: the \
                         library programs the counters itself, counting EL0 only"
                    ),
                    pin,
                ))
            }
            Err(Error::ModuleGrantMissing {
                cause: crate::error::GrantMissing::NoProgrammingAccess { .. },
            }) => self.open_direct_granted(),
            Err(e) => Err(e),
        }
    }

    /// The read-only grant's lean region (no system calls; `Options::thorough_evidence`
    /// takes the getrusage region instead).
    #[cfg(target_arch = "aarch64")]
    fn open_direct_lean_granted(
        &self,
        pmu: pmu_armv8::granted::GrantedPmu<pmu_armv8::granted::El0Reads>,
        placed: &[(pmu_core::Event, Option<pmu_core::Slot>)],
        layout: &str,
        cpu: usize,
        pin: PinGuard,
    ) -> Result<Opened> {
        let region = crate::direct::lean_granted(pmu, placed, self.names(), self.sentinel)?;
        Ok(direct_opened(
            region,
            self.events.len(),
            format!(
                "grant: read-only (PMUSERENR_EL0 ER or ER|CR, no EN) from kmod-enable-user on CPU {cpu}: the counters the \
                 module runs ({layout}), read with one instruction, EL0 only; event counters \
                 read as 32 bits (no overflow flags without EN: a region must count fewer \
                 than 2^32 events); regions without system calls (CPU from rseq; the \
                 kernel-entry sentinel as Meter::sentinel says)"
            ),
            pin,
        ))
    }

    /// The lean region on counters the library programs under EN, with its own
    /// sentinel where a counter is free.
    #[cfg(target_arch = "aarch64")]
    fn open_direct_lean_programmed(
        &self,
        pmu: pmu_armv8::El0Pmu,
        placed: &[(pmu_core::Event, Option<pmu_core::Slot>)],
        cpu: usize,
        pin: PinGuard,
    ) -> Result<Opened> {
        let region = crate::direct::lean_programmed(pmu, placed, self.names(), self.sentinel)?;
        Ok(direct_opened(
            region,
            self.events.len(),
            format!(
                "grant: read and program (EN) from kmod-enable-user on CPU {cpu}: the \
                 library programs the counters itself, counting EL0 only; regions without \
                 system calls (CPU from rseq, overflow flags; the kernel-entry sentinel as \
                 Meter::sentinel says)"
            ),
            pin,
        ))
    }

    #[cfg(target_arch = "arm")]
    fn open_arm1176(&self) -> Result<Opened> {
        if !self.program {
            // The ARM1176's only grant (SUNAVCR.V) is the one that programs.
            return Err(Error::DirectNeedsProgramming);
        }
        let wanted = self.direct_events()?;
        // SAFETY: `program_the_pmu`'s caller promised an ARM1176 and exclusive use.
        let (pin, pmu) = unsafe { crate::direct::arm1176::take_arm1176(self.divider) }?;
        let placed: Vec<_> = wanted.into_iter().map(|e| (e, None)).collect();
        let counters =
            crate::direct::OwnedCounters::allocate(pmu, &placed, pmu_core::PrivilegeFilter::ALL)?;
        // The CCR (Slot::Fixed(0)) ticks once per `cycles_per_tick` cycles: its counts
        // are reported in cycles.
        let ccr: Vec<usize> = counters
            .slots()
            .enumerate()
            .filter(|(_, s)| *s == pmu_core::Slot::Fixed(0))
            .map(|(i, _)| i)
            .collect();
        let mut meter = crate::direct::GenericDirectMeter::new(
            counters,
            self.names(),
            crate::direct::Unchecked,
        )?;
        for i in ccr {
            meter = meter.scaled(i, self.divider.cycles_per_tick())?;
        }
        let meter = crate::direct::kernel_sentinel::WithoutSentinel::new(
            meter,
            if self.sentinel {
                "the ARM1176 counters have no privilege filter: every counter counts in every \
                 mode (ARM1176JZF-S TRM 3.2.51, PMCR); kernel entries that end in a context \
                 switch are seen through getrusage only"
            } else {
                crate::sentinel::SWITCHED_OFF
            },
        );
        Ok(direct_opened(
            Box::new(meter),
            self.events.len(),
            "kmod-enable-user's grant (SUNAVCR.V) on the ARM1176: the library programs the \
             counters itself; no privilege filter (the kernel's work in a region counts too)"
                .to_owned(),
            pin,
        ))
    }

    /// ARMv7 and later under a 32-bit kernel (the ARMv7 build): PL0 programs the PMU
    /// after kmod-enable-user's ARMv7 flavour set PMUSERENR.EN ([`crate::direct::aarch32`]),
    /// counting PL0 only; every access checks that EN is still there.
    #[cfg(all(target_arch = "arm", target_feature = "v7"))]
    fn open_aarch32(&self) -> Result<Opened> {
        if !self.program {
            // PMUv2 has no read-only grant: EN is the only one, and it programs.
            return Err(Error::DirectNeedsProgramming);
        }
        let wanted = self.direct_events()?;
        let cpu = self
            .cpu
            .or_else(|| crate::sched::current_cpu().map(|c| c as usize))
            .unwrap_or(0);
        // SAFETY: `program_the_pmu`'s caller promised exclusive use of the PMU.
        let (pin, pmu) = unsafe { crate::direct::aarch32::take_pl0(cpu) }?;
        let placed: Vec<_> = wanted.into_iter().map(|e| (e, None)).collect();
        let counters =
            crate::direct::OwnedCounters::allocate(pmu, &placed, pmu_core::PrivilegeFilter::USER)?;
        let meter = aarch32_with_sentinel(counters, self.names(), self.sentinel)?;
        Ok(direct_opened(
            meter,
            self.events.len(),
            format!(
                "direct access on CPU {cpu} (ARMv7 PMU, PMUSERENR.EN from kmod-enable-user's \
                 ARMv7 flavour, el0_programming=1): the library programs the counters itself, \
                 counting PL0 only"
            ),
            pin,
        ))
    }

    /// The software fallback: the software events asked for plus `task-clock` (perf),
    /// and the time-stamp counter; hardware events are not counted.
    fn open_software(&self, notes: Vec<String>) -> Result<Opened> {
        let mut names: Vec<String> = self.names();
        let mut slots = vec![None; self.events.len()];
        let mut backends: Vec<Box<dyn Backend>> = Vec::new();
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        {
            let mut software = Vec::new();
            for (i, event) in self.events.iter().enumerate() {
                if let Ok(spec) = events::resolve(&event.name(), &self.sysfs) {
                    if spec.kind == EventKind::Software {
                        slots[i] = Some(software.len());
                        software.push(spec);
                    }
                }
            }
            let task_clock = software
                .iter()
                .position(|s| s.name == "task-clock")
                .unwrap_or_else(|| {
                    names.push("task-clock".to_owned());
                    slots.push(Some(software.len()));
                    software.push(events::resolve_builtin("task-clock").expect("a perf name"));
                    software.len() - 1
                });
            // task-clock leads: a task-clock that is not the leader is brought up to date
            // only when the group is scheduled out (see crate::session).
            software.swap(0, task_clock);
            for slot in slots.iter_mut().flatten() {
                if *slot == 0 {
                    *slot = task_clock;
                } else if *slot == task_clock {
                    *slot = 0;
                }
            }
            backends.push(Box::new(crate::session::Session::from_specs(
                software,
                self.options,
            )?));
        }
        let counted_before: usize = backends.iter().map(|b| b.names().len()).sum();
        backends.push(Box::new(TimestampMeter::new()?));
        names.push(crate::timestamp::NAME.to_owned());
        slots.push(Some(counted_before));
        let counted: Vec<&str> = names
            .iter()
            .zip(&slots)
            .filter(|(_, s)| s.is_some())
            .map(|(n, _)| n.as_str())
            .collect();
        let why = format!(
            "no hardware counters{}: counting {} instead",
            if notes.is_empty() {
                String::new()
            } else {
                format!(" ({})", notes.join("; "))
            },
            counted.join(", ")
        );
        Ok(Opened {
            inner: Inner::Other(Box::new(Stacked::new(
                backends,
                crate::Sentinel::off(if self.sentinel {
                    crate::sentinel::NO_HARDWARE
                } else {
                    crate::sentinel::SWITCHED_OFF
                }),
            ))),
            slots,
            names,
            kind: BackendKind::Software,
            why,
            pin: None,
        })
    }

    fn names(&self) -> Vec<String> {
        self.events.iter().map(Event::name).collect()
    }

    /// A direct region without a kernel-entry sentinel, saying why.
    #[cfg(target_arch = "aarch64")]
    fn unwatched(&self, meter: impl Backend + 'static) -> Box<dyn Backend> {
        let why = if self.sentinel {
            "the getrusage region (Options::thorough_evidence) reads none: regions see \
             context switches (getrusage) and migrations, not interrupts, system calls or \
             faults"
        } else {
            crate::sentinel::SWITCHED_OFF
        };
        Box::new(crate::direct::kernel_sentinel::WithoutSentinel::new(
            meter, why,
        ))
    }
}

/// What a backend's opening produced.
struct Opened {
    inner: Inner,
    /// Per event (the user's, then the meter's own), its reading's index.
    slots: Vec<Option<usize>>,
    /// Per event, its name.
    names: Vec<String>,
    kind: BackendKind,
    why: String,
    pin: Option<PinGuard>,
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn perf_opened(session: crate::session::Session, events: usize, why: String) -> Opened {
    Opened {
        names: session.specs().map(|s| s.name.clone()).collect(),
        inner: Inner::Perf(session),
        slots: (0..events).map(Some).collect(),
        kind: BackendKind::Perf,
        why,
        pin: None,
    }
}

/// The AArch32 direct meter over `counters`, read at the floor
/// ([`crate::direct::aarch32::FloorCounters`]) and watched by a kernel-entry sentinel on
/// a free event counter ([`crate::direct::aarch32::Pl1InstRetired`]) where there is one;
/// without, it says why.
#[cfg(all(target_arch = "arm", target_feature = "v7"))]
fn aarch32_with_sentinel(
    counters: crate::direct::OwnedCounters<pmu_armv7::Pl0Pmu>,
    names: Vec<String>,
    asked: bool,
) -> Result<Box<dyn Backend>> {
    use crate::direct::aarch32::{FloorCounters, Pl1InstRetired, PmuserenrEn};
    use crate::direct::kernel_sentinel::{with_sentinel, SentinelMeter, WithoutSentinel};
    use crate::direct::GenericDirectMeter;
    let program = if asked {
        Pl1InstRetired::program(counters.pmu(), counters.slots())
    } else {
        Err(crate::sentinel::SWITCHED_OFF.to_owned())
    };
    match program {
        Ok(sentinel) => {
            let how = format!(
                "event counter {} programmed by the library (INST_RETIRED, PMXEVTYPER.U \
                 set, P clear), read through PMSELR + PMXEVCNTR before the region's \
                 counters at the start and after them at the stop",
                sentinel.counter()
            );
            let counters = FloorCounters::new(counters)?;
            let (set, link) = with_sentinel(counters, sentinel);
            let inner = GenericDirectMeter::new(set, names, PmuserenrEn)?;
            Ok(Box::new(SentinelMeter::new(
                inner,
                link,
                "instructions",
                &how,
            )))
        }
        Err(why) => Ok(Box::new(WithoutSentinel::new(
            GenericDirectMeter::new(FloorCounters::new(counters)?, names, PmuserenrEn)?,
            why,
        ))),
    }
}

#[cfg(any(target_arch = "aarch64", target_arch = "arm"))]
fn direct_opened(meter: Box<dyn Backend>, events: usize, why: String, pin: PinGuard) -> Opened {
    Opened {
        names: meter.names(),
        inner: Inner::Other(meter),
        slots: (0..events).map(Some).collect(),
        kind: BackendKind::Direct,
        why,
        pin: Some(pin),
    }
}

/// The backend underneath: perf's session directly (its region reads are the hot path),
/// anything else behind [`Backend`]. The session stays inline (no pointer to follow
/// in a region's reads); a meter is built once, so its size does not matter.
#[allow(clippy::large_enum_variant)]
enum Inner {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    Perf(crate::session::Session),
    /// Generic events on every core PMU of a heterogeneous machine.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    Hybrid(crate::hybrid::HybridSession),
    Other(Box<dyn Backend>),
}

impl Inner {
    fn counters(&mut self) -> &mut dyn Backend {
        match self {
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            Self::Perf(session) => session,
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            Self::Hybrid(session) => session,
            Self::Other(other) => &mut **other,
        }
    }
}

/// Several backends measuring one region, nested: the first starts first and stops
/// last, so each one's region contains the next one's reads (calibration subtracts
/// them). The readings follow each other; the evidence is the first backend's.
struct Stacked {
    backends: Vec<Box<dyn Backend>>,
    /// Why there is no kernel-entry sentinel.
    sentinel: crate::Sentinel,
    /// Per backend, the index after its last reading.
    ends: Vec<usize>,
}

impl Stacked {
    fn new(backends: Vec<Box<dyn Backend>>, sentinel: crate::Sentinel) -> Self {
        let ends = backends
            .iter()
            .scan(0, |at, b| {
                *at += b.names().len();
                Some(*at)
            })
            .collect();
        Self {
            backends,
            sentinel,
            ends,
        }
    }
}

impl RegionMeter for Stacked {
    type Error = Error;

    fn start(&mut self) -> Result<()> {
        self.backends.iter_mut().try_for_each(|b| b.start())
    }

    fn stop(&mut self, out: &mut [Reading]) -> Result<()> {
        let (ends, at) = (&self.ends, self.ends.last().copied().unwrap_or(0));
        if out.len() < at {
            return Err(pmu_core::Error::ReadingsMismatch {
                expected: at as u32,
                got: out.len() as u32,
            }
            .into());
        }
        for (i, b) in self.backends.iter_mut().enumerate().rev() {
            let first = if i == 0 { 0 } else { ends[i - 1] };
            b.stop(&mut out[first..ends[i]])?;
        }
        Ok(())
    }
}

impl Backend for Stacked {
    fn names(&self) -> Vec<String> {
        self.backends.iter().flat_map(|b| b.names()).collect()
    }
    fn enable(&mut self) -> Result<()> {
        self.backends.iter_mut().try_for_each(|b| b.enable())
    }
    fn disable(&mut self) -> Result<()> {
        self.backends.iter_mut().try_for_each(|b| b.disable())
    }
    fn evidence(&self) -> crate::region::Evidence {
        self.backends
            .first()
            .map(|b| b.evidence())
            .unwrap_or_default()
    }
    fn sentinel(&self) -> crate::Sentinel {
        self.sentinel.clone()
    }
}

/// Counts events of code regions on the best backend of this machine: see the
/// [module docs](self).
pub struct Meter {
    id: u32,
    /// The user's events, by handle index.
    names: Vec<String>,
    /// The events the meter added (the software fallback's), after the user's.
    extra: Vec<String>,
    /// Per event (user's, then extra), the index of its reading; `None`: not counted.
    slots: Vec<Option<usize>>,
    inner: Inner,
    kind: BackendKind,
    why: String,
    /// Whether regions see every kernel entry, and how.
    sentinel: crate::Sentinel,
    config: MeasureConfig,
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
            .field("backend", &self.kind)
            .field("why", &self.why)
            .field("events", &self.names)
            .field("extra", &self.extra)
            .finish_non_exhaustive()
    }
}

impl Meter {
    /// A builder: add events, then [`MeterBuilder::build`].
    pub fn builder() -> MeterBuilder {
        MeterBuilder::default()
    }

    /// The backend this meter uses.
    pub fn backend(&self) -> BackendKind {
        self.kind
    }

    /// Why that backend, and how it reads.
    pub fn why(&self) -> &str {
        &self.why
    }

    /// Whether this meter's regions see every kernel entry
    /// ([`crate::Hazards::KERNEL_ENTRY`]), and how; or why not.
    pub fn sentinel(&self) -> &crate::Sentinel {
        &self.sentinel
    }

    /// On a machine with several core PMUs (big.LITTLE), where the meter opened the
    /// generic events on each and sums them ([`crate::hybrid`]): `handle`'s share of
    /// the last region per core PMU, and how each was read. `None` with one core PMU
    /// (the event then has one counter, the whole count is the reading).
    ///
    /// # Errors
    /// [`Error::ForeignHandle`], [`Error::NotCounted`].
    pub fn core_pmu_split(
        &self,
        handle: EventHandle,
    ) -> Result<Option<Vec<crate::hybrid::PmuShare>>> {
        // Checked on every architecture: a foreign handle is an error everywhere.
        #[cfg_attr(
            not(any(target_arch = "x86_64", target_arch = "aarch64")),
            allow(unused_variables)
        )]
        let slot = self.slot(handle)?;
        Ok(match &self.inner {
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            Inner::Hybrid(session) => Some(session.split(slot)),
            _ => None,
        })
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
    fn slot(&self, handle: EventHandle) -> Result<usize> {
        let index = usize::from(handle.index);
        if handle.meter != self.id || index >= self.slots.len() {
            return Err(Error::ForeignHandle);
        }
        self.slots[index].ok_or_else(|| Error::NotCounted {
            event: self.names[index].clone(),
            backend: self.kind.to_string(),
            why: self.why.clone(),
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
        let started = match &mut self.inner {
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            Inner::Perf(session) => RegionMeter::start(session),
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            Inner::Hybrid(session) => RegionMeter::start(session),
            Inner::Other(other) => other.start(),
        };
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
    /// [`Meter::measure`] or [`Meter::counters`] call ended (both measure regions of
    /// their own on the same counters). Both are mistakes in the calling code, as
    /// indexing with a key of another map is.
    #[inline(always)]
    pub fn stop(&mut self, region: Region) -> Result<Counts<'_>> {
        if region.meter != self.id || region.number != self.region || !self.open {
            region_not_open(region, self.id);
        }
        self.open = false;
        match &mut self.inner {
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            Inner::Perf(session) => RegionMeter::stop(session, &mut self.readings)?,
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            Inner::Hybrid(session) => RegionMeter::stop(session, &mut self.readings)?,
            Inner::Other(other) => other.stop(&mut self.readings)?,
        }
        Ok(Counts { meter: self })
    }

    /// Measures `region` the configured way ([`MeterBuilder::measure_config`]):
    /// warm-up runs, then recorded runs, and with calibration an empty region measured
    /// the same way and subtracted; statistics over the runs without hazards.
    ///
    /// # Errors
    /// The backend's read errors; [`pmu_core::Error`] for zero runs.
    pub fn measure(&mut self, mut region: impl FnMut()) -> Result<Measured<'_>> {
        self.open = false;
        let config = self.config;
        let measurement = measure::measure(self.inner.counters(), &config, &mut region)?;
        Ok(Measured {
            meter: self,
            measurement,
        })
    }

    /// What the last region's hazards were derived from.
    pub fn evidence(&mut self) -> crate::region::Evidence {
        self.inner.counters().evidence()
    }

    /// The backend, for the functions of [`mod@crate::measure`] (a baseline
    /// of one's own, a measurement that keeps its runs when it stops on an error). The
    /// readings are in the order of [`Counting::names`]: the events the backend counts,
    /// not the handles'.
    pub fn counters(&mut self) -> Counting<'_> {
        self.open = false;
        Counting {
            inner: self.inner.counters(),
        }
    }
}

/// A meter's backend ([`Meter::counters`]): it counts from the meter's
/// build to its drop, so it cannot be disabled (a disabled backend's regions would read
/// nothing).
pub struct Counting<'m> {
    inner: &'m mut dyn Backend,
}

impl Counting<'_> {
    /// The events the backend counts, in reading order.
    pub fn names(&self) -> Vec<String> {
        self.inner.names()
    }
}

impl RegionMeter for Counting<'_> {
    type Error = Error;

    #[inline(always)]
    fn start(&mut self) -> Result<()> {
        self.inner.start()
    }

    #[inline(always)]
    fn stop(&mut self, out: &mut [Reading]) -> Result<()> {
        self.inner.stop(out)
    }
}

impl Backend for Counting<'_> {
    fn names(&self) -> Vec<String> {
        self.inner.names()
    }

    /// Already counting: enabling again changes nothing.
    fn enable(&mut self) -> Result<()> {
        self.inner.enable()
    }

    /// [`Error::MeterAlwaysCounts`]: drop the meter to stop counting.
    fn disable(&mut self) -> Result<()> {
        Err(Error::MeterAlwaysCounts)
    }

    fn evidence(&self) -> crate::region::Evidence {
        self.inner.evidence()
    }

    fn sentinel(&self) -> crate::Sentinel {
        self.inner.sentinel()
    }
}

impl Drop for Meter {
    fn drop(&mut self) {
        // Counting stops with the backend's own drop too (perf closes the events, the
        // direct counters are released): this only stops them first, in order.
        let _ = self.inner.counters().disable();
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
            "Meter::stop: region {} was ended by measure() or counters() since its start",
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
    /// [`Error::NotCounted`] for an event this backend does not count;
    /// [`Error::ForeignHandle`] for another meter's handle.
    pub fn reading(&self, handle: EventHandle) -> Result<Reading> {
        Ok(self.meter.readings[self.meter.slot(handle)?])
    }

    /// `handle`'s count, when the region had no hazard for it.
    ///
    /// # Errors
    /// [`Error::Hazardous`] with the reading when it has hazards; as
    /// [`Counts::reading`].
    pub fn value(&self, handle: EventHandle) -> Result<u64> {
        let reading = self.reading(handle)?;
        if reading.hazards.is_empty() {
            Ok(reading.value)
        } else {
            Err(Error::Hazardous {
                event: self.meter.name(usize::from(handle.index)).to_owned(),
                value: reading.value,
                hazards: reading.hazards,
            })
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
    /// [`Error::NoCleanRun`] when every run had a hazard for this event; as
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
        Error::NoCleanRun {
            event: self.meter.name(usize::from(handle.index)).to_owned(),
            runs: summary.runs,
            hazards: summary.hazards,
        }
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
