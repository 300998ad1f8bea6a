//! What every backend shares: the [`Backend`] trait a meter holds and the
//! [`mod@crate::measure`] functions drive, the [`Request`] a meter hands a backend to
//! open, and the [`Opened`] it gets back.
//!
//! The layer above (the meter's ladder, `meter/`) defines what it asks for here, and
//! each backend (`perf`, `perf::hybrid`, `direct`, the time-stamp counter) answers with its own
//! type inside an [`Opened`]; no backend names the meter. The module is private:
//! programs can pass the crate's backends to the measure functions, but cannot name or
//! implement the trait, so it can change with the backends.

use std::fmt;

use pmu_core::RegionMeter;

use crate::error::{Error, Result};
use crate::machine::events::{self, Event, EventKind, EventSpec};
use crate::machine::sched::PinGuard;
use crate::machine::sysfs::Sysfs;
use crate::sentinel::Sentinel;
use crate::verdict::{Evidence, FallbackReason};

/// A set of counters that measures regions: pmu-core's [`RegionMeter`] plus names,
/// enable/disable, the evidence of the last region and the kernel-entry sentinel.
pub trait Backend: RegionMeter<Error = Error> {
    /// The events, in reading order.
    fn names(&self) -> Vec<String>;
    /// Starts counting.
    ///
    /// # Errors
    /// The backend's.
    fn enable(&mut self) -> Result<()>;
    /// Stops counting.
    ///
    /// # Errors
    /// The backend's.
    fn disable(&mut self) -> Result<()>;
    /// What the last [`RegionMeter::stop`] saw.
    fn evidence(&self) -> Evidence;
    /// Whether this backend's regions are watched by a kernel-entry sentinel, and how;
    /// or why not. [`crate::Meter::sentinel`] reports it as it is.
    fn sentinel(&self) -> Sentinel;
    /// How wide reading `i`'s counter is, where the backend reads a counter of a
    /// fixed width that can wrap (the direct backend); `None` where the kernel extends
    /// the count to 64 bits (perf) or there is no such counter.
    fn width(&self, i: usize) -> Option<pmu_core::CounterWidth> {
        let _ = i;
        None
    }
    /// Sets reading `i`'s counter `distance` counts below its wrap (see
    /// [`crate::Meter::preset_before_wrap`]): only a backend that programs its own
    /// counters can.
    ///
    /// # Errors
    /// [`crate::error::Unsupported::Preset`] elsewhere; the grant's check.
    fn preset_before_wrap(&mut self, i: usize, distance: u64) -> Result<()> {
        let _ = (i, distance);
        Err(crate::Error::Unsupported(crate::error::Unsupported::Preset))
    }
}

/// What the direct backend's grant checks found (`direct::grants`, the survey's
/// question): what it hands up besides [`Opened`].
#[derive(Debug)]
// Each architecture builds only its own variants.
#[allow(dead_code)]
pub(crate) enum GrantCheck {
    /// The module's CPU-wide grants on `cpu` (ARMv8): the read-only one, with the
    /// module's layout as the module states it, and the programming one (EN); each,
    /// or why not.
    CpuWide {
        cpu: usize,
        read_only: Result<String>,
        programming: Result<()>,
    },
    /// This thread's grant on `cpu`, under the module's per-thread mode: its layout,
    /// scope and whether it programs, or why the module refused it.
    Thread {
        cpu: usize,
        granted: Result<ThreadGrantFound>,
    },
    /// The programming grant alone (32-bit ARM: the ARM1176's SUNAVCR.V), probed in a
    /// child on CPU 0.
    Programming(Result<()>),
    /// No direct backend here (x86 and other architectures): why.
    Unsupported(crate::Error),
}

/// This thread's grant as [`GrantCheck::Thread`] found it.
#[derive(Debug)]
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
pub(crate) struct ThreadGrantFound {
    /// The module's layout, as it states it.
    pub(crate) layout: String,
    /// Whose grant it is.
    pub(crate) scope: GrantScope,
    /// It lets user mode program the PMU (`el0_programming=1`).
    pub(crate) programs: bool,
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

/// How a meter's regions read their counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reads {
    /// Every counter with one instruction in user space (`rdpmc`, `mrs`, `mrc`).
    OneInstruction,
    /// With a system call (perf's `read()`; the kernel's software events): such
    /// readings are flagged [`crate::Hazards::SYSCALL_FALLBACK`].
    SystemCall,
}

/// The kmod-enable-user grant a direct backend works under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Grant {
    /// Reads of the counters the module runs (ARMv8 PMUSERENR_EL0.ER or ER|CR, no EN).
    ReadOnly {
        /// The CPU whose counters are read.
        cpu: usize,
        /// Whose the grant is: the CPU's, or this thread's.
        scope: GrantScope,
    },
    /// The library programs the counters itself (ARMv8 PMUSERENR_EL0.EN, ARMv7
    /// PMUSERENR.EN, ARM1176 SUNAVCR.V).
    Program {
        /// The CPU whose counters are programmed.
        cpu: usize,
        /// Whose the grant is: the CPU's, or this thread's.
        scope: GrantScope,
    },
}

impl Grant {
    /// Whose the grant is.
    pub fn scope(&self) -> GrantScope {
        match *self {
            Self::ReadOnly { scope, .. } | Self::Program { scope, .. } => scope,
        }
    }
}

impl fmt::Display for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ReadOnly { cpu, scope } => write!(f, "read-only, {scope}, CPU {cpu}"),
            Self::Program { cpu, scope } => write!(f, "read and program, {scope}, CPU {cpu}"),
        }
    }
}

/// Whose a kmod-enable-user grant is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GrantScope {
    /// The CPU's (the module's `cpu_wide=1`, a module without the per-thread grant,
    /// and 32-bit ARM): every thread that runs on the CPU may read its counters, and a
    /// region's counts include whatever else ran there.
    CpuWide,
    /// This thread's, only while it runs (/dev/kmod_enable_user's GRANT): its other
    /// threads and other processes trap.
    Thread {
        /// The module's counters follow the thread (`follow=1`): saved when it is
        /// switched out and written back when it is switched in, on whichever CPU, so a
        /// region counts this thread's own events across switches and migrations.
        follow: bool,
    },
}

impl GrantScope {
    /// Whether a region's counts are the thread's own across a context switch or a
    /// migration: other threads' counts are not mixed in.
    pub fn counts_follow_thread(self) -> bool {
        matches!(self, Self::Thread { follow: true })
    }
}

impl fmt::Display for GrantScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::CpuWide => f.write_str("CPU-wide"),
            Self::Thread { follow: true } => f.write_str("per-thread, counters follow the thread"),
            Self::Thread { follow: false } => {
                f.write_str("per-thread, counters stay on the CPU (follow=0)")
            }
        }
    }
}

impl GrantScope {
    /// What the scope means for the reads, for [`How`]'s sentence.
    fn meaning(self) -> &'static str {
        match self {
            Self::CpuWide => "every thread on the CPU may read the counters",
            Self::Thread { follow: true } => {
                "this thread only, while it runs; the module saves and restores its counters \
                 at every switch, so a switch or migration mixes no other thread's counts"
            }
            Self::Thread { follow: false } => {
                "this thread only, while it runs; the counters are the CPU's, so a switch \
                 mixes in what else ran there"
            }
        }
    }
}

/// Why perf's counters cannot be read with one instruction here.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SlowReads {
    /// `kernel.perf_user_access` is 0 (arm64): perf's pages forbid user reads.
    PerfUserAccessOff,
    /// What the first hardware event's read said.
    Read(FallbackReason),
}

impl fmt::Display for SlowReads {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PerfUserAccessOff => f.write_str("kernel.perf_user_access = 0"),
            Self::Read(reason) => reason.fmt(f),
        }
    }
}

/// How an opened backend reads, as facts; its `Display` is the sentence the meter's
/// [`crate::Meter::why`] ends with.
// Each architecture constructs its own backends' variants; the host tests compose all.
#[allow(dead_code)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum How {
    /// Generic events on every core PMU, summed.
    Hybrid {
        /// The core PMUs, by sysfs name.
        pmus: Vec<String>,
        /// How their counters read.
        reads: Reads,
    },
    /// perf's pages give every counter with one instruction.
    PerfPages,
    /// As `PerfPages`, on an emulator that counts exactly, every event a user-level
    /// count of instructions or cycles: a switch or a kernel entry is no hazard
    /// (`crate::machine::emulation`); what the machine is.
    PerfPagesExact(String),
    /// Only software events: read with `read()`.
    PerfSoftwareOnly,
    /// perf's group read with `read()`, and why.
    PerfReadCalls(SlowReads),
    /// ARMv8 under the module's read-only grant.
    ModuleLayout {
        /// The CPU whose counters are read.
        cpu: usize,
        /// The module's layout, as it states it.
        layout: String,
        /// Whose the grant is.
        scope: GrantScope,
    },
    /// ARMv8 under the programming grant (PMUSERENR_EL0.EN).
    Armv8Programmed {
        /// The CPU whose counters are programmed.
        cpu: usize,
        /// Whose the grant is.
        scope: GrantScope,
    },
    /// PMUv3 in AArch32 under the module's read-only grant (PMUSERENR.ER | CR).
    Armv7ModuleLayout {
        /// The CPU whose counters are read.
        cpu: usize,
        /// The module's layout, as it states it.
        layout: String,
    },
    /// ARMv7 (and PMUv3 in AArch32) under PMUSERENR.EN.
    Armv7Programmed {
        /// The CPU whose counters are programmed.
        cpu: usize,
    },
    /// The ARM1176 under SUNAVCR.V.
    Arm1176Programmed,
    /// No hardware counters: what is counted instead.
    Software {
        /// The events counted, in order.
        counted: Vec<String>,
    },
}

impl fmt::Display for How {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Hybrid { pmus, reads } => write!(
                f,
                "{} core PMUs ({}): every event opened on each and summed, the share of \
                 each in Meter::core_pmu_split; {}",
                pmus.len(),
                pmus.join(", "),
                match reads {
                    Reads::OneInstruction => "read with one instruction through the pages",
                    Reads::SystemCall =>
                        "read with read() (no user-space reads), flagged syscall-fallback",
                }
            ),
            Self::PerfPages => f.write_str(
                "the kernel lets this thread read every counter with one instruction (rdpmc \
                 / mrs through the perf metadata page)",
            ),
            Self::PerfPagesExact(machine) => write!(
                f,
                "the kernel lets this thread read every counter with one instruction (rdpmc \
                 / mrs through the perf metadata page); {machine}"
            ),
            Self::PerfSoftwareOnly => {
                f.write_str("software events only: the kernel's own counters, read with read()")
            }
            Self::PerfReadCalls(why) => write!(
                f,
                "every read is a read() system call ({why}), flagged syscall-fallback"
            ),
            Self::ModuleLayout { cpu, layout, scope } => write!(
                f,
                "grant: read-only (PMUSERENR_EL0 ER or ER|CR, no EN), {scope} ({meaning}), \
                 from kmod-enable-user on CPU {cpu}: the counters the module runs ({layout}), \
                 read with one \
                 instruction, EL0 only; event counters read as 32 bits (no overflow flags \
                 without EN: a region must count fewer than 2^32 events); regions without \
                 system calls (CPU from rseq; the kernel-entry sentinel as Meter::sentinel \
                 says)",
                meaning = scope.meaning()
            ),
            Self::Armv8Programmed { cpu, scope } => write!(
                f,
                "grant: read and program (EN), {scope} ({meaning}), from kmod-enable-user on \
                 CPU {cpu}: the library \
                 programs the counters itself, counting EL0 only; regions without system \
                 calls (CPU from rseq, overflow flags; the kernel-entry sentinel as \
                 Meter::sentinel says)",
                meaning = scope.meaning()
            ),
            Self::Armv7ModuleLayout { cpu, layout } => write!(
                f,
                "grant: read-only (PMUSERENR ER or ER|CR, no EN) from kmod-enable-user's ARMv7 \
                 flavour on CPU {cpu}: the counters the module runs ({layout}), PL0 only, \
                 nothing programmed; event counters read through PMSELR + PMXEVCNTR, 32 bits \
                 wide (no overflow flags without EN: a region must count fewer than 2^32 \
                 events and cycles, 2.8 s at 1.5 GHz); CPU from \
                 sched_getcpu(), context switches from getrusage (the ARMv7 flavour runs no \
                 kernel-entry sentinel)"
            ),
            Self::Armv7Programmed { cpu } => write!(
                f,
                "direct access on CPU {cpu} (ARMv7 PMU, PMUSERENR.EN from kmod-enable-user's \
                 ARMv7 flavour, el0_programming=1): the library programs the counters \
                 itself, counting PL0 only"
            ),
            Self::Arm1176Programmed => f.write_str(
                "kmod-enable-user's grant (SUNAVCR.V) on the ARM1176: the library programs \
                 the counters itself; no privilege filter (the kernel's work in a region \
                 counts too)",
            ),
            Self::Software { counted } => write!(f, "counting {} instead", counted.join(", ")),
        }
    }
}

impl How {
    /// The backend that reads this way.
    pub(crate) fn kind(&self) -> BackendKind {
        match self {
            Self::Hybrid { .. }
            | Self::PerfPages
            | Self::PerfPagesExact(_)
            | Self::PerfSoftwareOnly
            | Self::PerfReadCalls(_) => BackendKind::Perf,
            Self::ModuleLayout { .. }
            | Self::Armv7ModuleLayout { .. }
            | Self::Armv8Programmed { .. }
            | Self::Armv7Programmed { .. }
            | Self::Arm1176Programmed => BackendKind::Direct,
            Self::Software { .. } => BackendKind::Software,
        }
    }

    /// How its regions read the counters.
    pub(crate) fn reads(&self) -> Reads {
        match self {
            Self::Hybrid { reads, .. } => *reads,
            Self::PerfPages
            | Self::PerfPagesExact(_)
            | Self::ModuleLayout { .. }
            | Self::Armv7ModuleLayout { .. }
            | Self::Armv8Programmed { .. }
            | Self::Armv7Programmed { .. }
            | Self::Arm1176Programmed => Reads::OneInstruction,
            Self::PerfSoftwareOnly | Self::PerfReadCalls(_) | Self::Software { .. } => {
                Reads::SystemCall
            }
        }
    }

    /// The kmod-enable-user grant it works under (the direct backend's; the ARM1176's
    /// is CPU 0's: the Pi 1 and Zero have one core). 32-bit ARM's are CPU-wide.
    pub(crate) fn grant(&self) -> Option<Grant> {
        let cpu_wide = GrantScope::CpuWide;
        match *self {
            Self::ModuleLayout { cpu, scope, .. } => Some(Grant::ReadOnly { cpu, scope }),
            Self::Armv7ModuleLayout { cpu, .. } => Some(Grant::ReadOnly {
                cpu,
                scope: cpu_wide,
            }),
            Self::Armv8Programmed { cpu, scope } => Some(Grant::Program { cpu, scope }),
            Self::Armv7Programmed { cpu } => Some(Grant::Program {
                cpu,
                scope: cpu_wide,
            }),
            Self::Arm1176Programmed => Some(Grant::Program {
                cpu: 0,
                scope: cpu_wide,
            }),
            _ => None,
        }
    }
}

/// The direct backend's settings.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DirectSettings {
    /// The ARM1176's cycle counter divider (`MeterBuilder::cycle_divider`).
    #[cfg(target_arch = "arm")]
    pub(crate) divider: pmu_armv6::CycleDivider,
}

/// The perf backend's settings, where this library has one.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) type PerfSettings = crate::perf::options::Options;
/// No perf backend here (32-bit ARM): nothing to set.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(crate) type PerfSettings = ();

/// What a meter asks a backend to open: its events, resolved against sysfs once, and
/// the settings every backend reads.
#[derive(Debug)]
pub(crate) struct Request {
    /// The events, in handle order.
    pub(crate) events: Vec<Event>,
    /// Each event's name, as perf knows it.
    pub(crate) names: Vec<String>,
    /// Each event resolved against `sysfs`; `None`: its name did not resolve.
    resolved: Vec<Option<EventSpec>>,
    /// Where event names are resolved.
    pub(crate) sysfs: Sysfs,
    /// The CPU asked for; `None`: the one the thread runs on.
    pub(crate) cpu: Option<usize>,
    /// Whether regions should be watched by a kernel-entry sentinel.
    pub(crate) sentinel: bool,
    /// Whether the direct backend may program the PMU (the caller promised exclusive
    /// use: `MeterBuilder::program_the_pmu`).
    pub(crate) program: bool,
    /// Whether one backend was asked for by name (`MeterBuilder::backend`): then a
    /// backend fails instead of refusing to the next.
    pub(crate) only: bool,
    /// perf's settings.
    pub(crate) perf: PerfSettings,
    /// The direct backend's settings.
    pub(crate) direct: DirectSettings,
}

impl Request {
    /// A request for `events`, each resolved against `sysfs` once here.
    pub(crate) fn new(events: Vec<Event>, sysfs: Sysfs) -> Self {
        let names: Vec<String> = events.iter().map(Event::name).collect();
        let resolved = names
            .iter()
            .map(|name| events::resolve(name, &sysfs).ok())
            .collect();
        Self {
            events,
            names,
            resolved,
            sysfs,
            cpu: None,
            sentinel: true,
            program: false,
            only: false,
            perf: Default::default(),
            direct: DirectSettings::default(),
        }
    }

    /// The events as perf opens them.
    ///
    /// # Errors
    /// The first event's name error.
    pub(crate) fn specs(&self) -> Result<Vec<EventSpec>> {
        self.resolved
            .iter()
            .zip(&self.names)
            .map(|(spec, name)| match spec {
                Some(spec) => Ok(spec.clone()),
                None => Err(self.resolve_error(name)),
            })
            .collect()
    }

    /// Event `i` as perf opens it, where its name resolved.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    pub(crate) fn spec(&self, i: usize) -> Option<&EventSpec> {
        self.resolved.get(i).and_then(Option::as_ref)
    }

    /// Why `name` did not resolve: resolved again only to say why (errors are not
    /// `Clone`); should sysfs answer this time, the name still did not resolve when the
    /// meter asked.
    fn resolve_error(&self, name: &str) -> Error {
        events::resolve(name, &self.sysfs).err().unwrap_or_else(|| {
            Error::Event(crate::error::EventError::Unknown {
                name: name.to_owned(),
            })
        })
    }

    /// Whether any event is a hardware one (perf's software events never need a PMU).
    ///
    /// # Errors
    /// As [`Request::specs`].
    pub(crate) fn counts_hardware(&self) -> Result<bool> {
        Ok(self.specs()?.iter().any(|s| s.kind != EventKind::Software))
    }

    /// The events as the direct backend counts them, checked before anything is taken.
    #[cfg(any(target_arch = "aarch64", target_arch = "arm"))]
    ///
    /// # Errors
    /// [`crate::error::EventError::NotDirect`] for software, cache and sysfs events;
    /// name errors.
    pub(crate) fn direct_events(&self) -> Result<Vec<pmu_core::Event>> {
        let cpu = self
            .cpu
            .map(|c| c as u32)
            .or_else(crate::machine::sched::current_cpu);
        self.events
            .iter()
            .map(|e| e.direct_on(&self.sysfs, cpu))
            .collect()
    }

    /// The CPU the direct backend uses: the one asked for, else the one the thread is
    /// on (the ARM1176's is CPU 0: the Raspberry Pi 1 and Zero have one core).
    #[cfg(any(
        target_arch = "aarch64",
        all(target_arch = "arm", target_feature = "v7")
    ))]
    pub(crate) fn cpu_or_current(&self) -> usize {
        self.cpu
            .or_else(|| crate::machine::sched::current_cpu().map(|c| c as usize))
            .unwrap_or(0)
    }
}

/// What a backend opened for a [`Request`]: the backend itself (`B`) and the facts
/// the meter keeps about it.
pub(crate) struct Opened<B> {
    /// The backend.
    pub(crate) backend: B,
    /// Per event (the request's, then the backend's own), its reading's index;
    /// `None`: not counted.
    pub(crate) slots: Vec<Option<usize>>,
    /// Per event, its name.
    pub(crate) names: Vec<String>,
    /// How it reads, as facts: which backend, how its regions read, under which grant.
    pub(crate) how: How,
    /// The thread's pin, held as long as the backend.
    pub(crate) pin: Option<PinGuard>,
}

#[cfg(any(target_arch = "aarch64", target_arch = "arm"))]
impl Opened<Box<dyn Backend>> {
    /// A direct backend's opening: `region` over the request's `events`, read as `how`
    /// says, the thread pinned by `pin`.
    pub(crate) fn direct(region: Box<dyn Backend>, events: usize, how: How, pin: PinGuard) -> Self {
        Self {
            names: region.names(),
            backend: region,
            slots: (0..events).map(Some).collect(),
            how,
            pin: Some(pin),
        }
    }
}

impl<B> Opened<B> {
    /// The same opening with the backend wrapped (`Opened<Session>` into the meter's
    /// own type, say).
    pub(crate) fn map<C>(self, wrap: impl FnOnce(B) -> C) -> Opened<C> {
        Opened {
            backend: wrap(self.backend),
            slots: self.slots,
            names: self.names,
            how: self.how,
            pin: self.pin,
        }
    }
}
