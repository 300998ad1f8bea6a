//! The error type of `pmu-linux`, grouped by what the caller can do about it:
//!
//! - [`Error::Event`]: a name, term or sysfs format that cannot be used: fix the event;
//! - [`Error::Open`]: `perf_event_open` refused an event, with the kernel's answer
//!   decoded into an [`OpenError`] (permissions with the current `perf_event_paranoid`,
//!   "not supported by this CPU / VM", bad attributes, …);
//! - [`Error::Io`]: a system call or a sysfs read failed, with the [`io::Error`];
//! - [`Error::Group`]: the events as a group (none, too many, do not fit, lost);
//! - [`Error::Access`]: user access to the PMU (kmod-enable-user's grant);
//! - [`Error::Unsupported`]: not on this architecture, CPU or machine;
//! - [`Error::Untrusted`]: a count that cannot be trusted, never a silent number;
//! - [`Error::Pmu`]: the PMU model and drivers underneath, as their own errors.
//!
//! Every leaf says what to do; [`std::error::Error::source`] gives the underlying
//! error where there is one.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// A system call failed with this `errno`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Errno(pub i32);

impl Errno {
    /// The symbolic name of the common ones (`EACCES`, …), else `errno N`.
    pub fn name(self) -> &'static str {
        match self.0 {
            libc::EPERM => "EPERM",
            libc::ENOENT => "ENOENT",
            libc::ESRCH => "ESRCH",
            libc::EINTR => "EINTR",
            libc::EBADF => "EBADF",
            libc::ENOMEM => "ENOMEM",
            libc::EACCES => "EACCES",
            libc::EFAULT => "EFAULT",
            libc::EBUSY => "EBUSY",
            libc::ENODEV => "ENODEV",
            libc::EINVAL => "EINVAL",
            libc::ENFILE => "ENFILE",
            libc::EMFILE => "EMFILE",
            libc::ENOSPC => "ENOSPC",
            libc::ENOSYS => "ENOSYS",
            libc::E2BIG => "E2BIG",
            libc::EOVERFLOW => "EOVERFLOW",
            libc::EOPNOTSUPP => "EOPNOTSUPP",
            libc::ENOTTY => "ENOTTY",
            _ => "errno",
        }
    }

    /// The errno of the last failed libc call on this thread.
    pub(crate) fn last() -> Self {
        Self(io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = io::Error::from_raw_os_error(self.0);
        match self.name() {
            "errno" => write!(f, "errno {} ({text})", self.0),
            name => write!(f, "{name}: {text}"),
        }
    }
}

/// Why `perf_event_open` refused an event, decoded from its errno
/// (perf_event_open(2), ERRORS).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OpenError {
    /// EACCES / EPERM: the `kernel.perf_event_paranoid` level (read from
    /// /proc/sys/kernel/perf_event_paranoid, `None` when unreadable) forbids it for this
    /// user.
    PermissionDenied {
        /// EACCES or EPERM.
        errno: Errno,
        /// The paranoid level at the time of the error.
        paranoid: Option<i32>,
        /// The event asked to count in the kernel too (exclude_kernel = 0).
        counts_kernel: bool,
    },
    /// ENOENT / EOPNOTSUPP / ENODEV: nothing in this kernel can count the event.
    NotSupported {
        /// The errno.
        errno: Errno,
        /// The event needs the CPU's PMU (hardware, cache or raw event): on a VM
        /// without a virtual PMU there is none.
        needs_cpu_pmu: bool,
        /// A CPU PMU is registered in /sys/bus/event_source/devices (`cpu`,
        /// `armv8_pmuv3_0`, …): the hardware counters are there and this one event is
        /// what the PMU does not implement (arm64: its bit in PMCEID0/1_EL0 is 0, and
        /// Linux 6.12 drivers/perf/arm_pmuv3.c `__armv8_pmuv3_map_event` answers
        /// ENOENT for it alone).
        cpu_pmu_present: bool,
    },
    /// EINVAL: the kernel rejected the attributes (a config the PMU does not know, a
    /// filter it cannot apply, a group mixing PMUs that cannot go together).
    InvalidAttr,
    /// EMFILE / ENFILE: out of file descriptors (one per event).
    TooManyOpenFiles {
        /// EMFILE (this process) or ENFILE (the system).
        errno: Errno,
    },
    /// EBUSY: another user holds the PMU exclusively.
    Busy,
    /// E2BIG: the kernel is older than the attributes this library asks for.
    AttrTooBig,
    /// Any other errno.
    Other {
        /// The errno.
        errno: Errno,
    },
}

impl OpenError {
    /// Decodes the errno of a failed `perf_event_open`; `paranoid`, the event's
    /// properties and whether a CPU PMU is registered only feed the message. (perf's:
    /// 32-bit ARM builds no perf backend.)
    #[cfg_attr(
        not(any(target_arch = "x86_64", target_arch = "aarch64")),
        allow(dead_code)
    )]
    pub(crate) fn from_errno(
        errno: Errno,
        paranoid: Option<i32>,
        counts_kernel: bool,
        needs_cpu_pmu: bool,
        cpu_pmu_present: bool,
    ) -> Self {
        match errno.0 {
            libc::EACCES | libc::EPERM => Self::PermissionDenied {
                errno,
                paranoid,
                counts_kernel,
            },
            libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV => Self::NotSupported {
                errno,
                needs_cpu_pmu,
                cpu_pmu_present,
            },
            libc::EINVAL => Self::InvalidAttr,
            libc::EMFILE | libc::ENFILE => Self::TooManyOpenFiles { errno },
            libc::EBUSY => Self::Busy,
            libc::E2BIG => Self::AttrTooBig,
            _ => Self::Other { errno },
        }
    }
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PermissionDenied {
                errno,
                paranoid,
                counts_kernel,
            } => {
                write!(f, "permission denied ({errno}); ")?;
                match paranoid {
                    Some(level) => write!(f, "kernel.perf_event_paranoid is {level}")?,
                    None => f.write_str("/proc/sys/kernel/perf_event_paranoid is unreadable")?,
                }
                f.write_str(
                    ": run as root or with CAP_PERFMON, or lower it \
                     (`sysctl -w kernel.perf_event_paranoid=2` allows user-space-only counting of \
                     your own threads, 1 also kernel counting",
                )?;
                if *counts_kernel {
                    f.write_str(
                        "); this event also counts in the kernel: exclude the kernel \
                         to need only level 2",
                    )
                } else {
                    f.write_str(")")
                }
            }
            Self::NotSupported {
                errno,
                needs_cpu_pmu: true,
                cpu_pmu_present: true,
            } => write!(
                f,
                "not implemented by this PMU ({errno}): the CPU's PMU is there and counts \
                 other events, not this one; the events/ directory of its entry in \
                 /sys/bus/event_source/devices lists the events it implements (arm64: the \
                 common events PMCEID0/1_EL0 announce)"
            ),
            Self::NotSupported {
                errno,
                needs_cpu_pmu: true,
                cpu_pmu_present: false,
            } => write!(
                f,
                "not supported by this CPU ({errno}): no hardware counters: VM without vPMU? \
                 (no CPU PMU in /sys/bus/event_source/devices: no `cpu` (x86), no \
                 `armv8_pmuv3*` (arm64), so no PMU driver is bound); software events such as \
                 task-clock still work"
            ),
            Self::NotSupported {
                errno,
                needs_cpu_pmu: false,
                ..
            } => write!(f, "not supported by this kernel ({errno})"),
            Self::InvalidAttr => f.write_str(
                "the kernel rejected the event attributes (EINVAL): the PMU does not know this \
                 config, cannot apply the privilege filter, or cannot group it with the others",
            ),
            Self::TooManyOpenFiles { errno } => write!(
                f,
                "out of file descriptors ({errno}): raise `ulimit -n` or open fewer events"
            ),
            Self::Busy => f.write_str(
                "the PMU is busy (EBUSY): another user holds it exclusively (a direct-access \
                 user, or a pinned/exclusive perf event)",
            ),
            Self::AttrTooBig => f.write_str(
                "the kernel is older than the perf_event_attr this library uses (E2BIG)",
            ),
            Self::Other { errno } => write!(f, "perf_event_open failed: {errno}"),
        }
    }
}

/// What is wrong with a raw event `r<hex>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RawProblem {
    /// A character that is not a hex digit.
    NotHex {
        /// The first offending character.
        found: char,
    },
    /// More than 16 hex digits (more than 64 bits).
    TooLong {
        /// Digits given.
        digits: usize,
    },
}

/// What is wrong with a term of a `<pmu>/term=value,…/` event.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TermProblem {
    /// The event does not have the `<pmu>/terms/` shape (missing closing `/`, text after
    /// it, empty PMU name).
    Syntax,
    /// An empty term (`a=1,,b=2`) or an empty term list.
    Empty,
    /// The value is not a decimal or `0x` hex number that fits 64 bits.
    BadNumber {
        /// The value text.
        value: String,
    },
    /// The sysfs alias leaves this value for the user to give (`?`).
    NeedsValue,
}

/// Which operation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Op {
    /// `ioctl(PERF_EVENT_IOC_ENABLE)`.
    Enable,
    /// `ioctl(PERF_EVENT_IOC_DISABLE)`.
    Disable,
    /// `ioctl(PERF_EVENT_IOC_RESET)`.
    Reset,
    /// `ioctl(PERF_EVENT_IOC_ID)`.
    Id,
    /// `read()` of the group.
    Read,
    /// `mmap` of the metadata page.
    Mmap,
    /// `sched_setaffinity` / `sched_getaffinity`.
    Affinity,
    /// `getrusage(RUSAGE_THREAD)`.
    Rusage,
    /// `fork` / `waitpid` of the probe child.
    Probe,
    /// `sched_getcpu()` (a direct region without an rseq area).
    Getcpu,
    /// Registering (or finding) the thread's rseq area (a direct region that reads its
    /// CPU there).
    Rseq,
    /// Starting or waiting for a counted command (`pipe2`, `fork`, `wait4`).
    Command,
    /// Reading a sysfs file or directory.
    ReadSysfs {
        /// The file or directory.
        path: PathBuf,
    },
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ReadSysfs { path } => return write!(f, "reading {}", path.display()),
            Self::Enable => "enabling the group",
            Self::Disable => "disabling the group",
            Self::Reset => "resetting the group",
            Self::Id => "asking the event id",
            Self::Read => "reading the group",
            Self::Mmap => "mapping the metadata page",
            Self::Affinity => "setting the CPU affinity",
            Self::Rusage => "reading the thread's switch counts",
            Self::Probe => "running the access probe",
            Self::Getcpu => "reading the thread's CPU (sched_getcpu)",
            Self::Rseq => "registering the thread's rseq area (a kernel with CONFIG_RSEQ has one)",
            Self::Command => "starting or waiting for the counted command",
        })
    }
}

/// Every error of this crate, by what the caller can do about it (see the
/// [module docs](self)).
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// An event name, term or sysfs format that cannot be used.
    Event(EventError),
    /// `perf_event_open` refused an event.
    Open {
        /// The event as named by the user.
        event: String,
        /// The decoded reason.
        cause: OpenError,
    },
    /// A system call or a sysfs read failed.
    Io {
        /// What was being done.
        op: Op,
        /// The operating system's error.
        source: io::Error,
    },
    /// The events as a group: none, too many, not fitting, lost.
    Group(GroupError),
    /// User access to the PMU (kmod-enable-user's grant) is missing or gone.
    Access(AccessError),
    /// Not available on this architecture, CPU or machine.
    Unsupported(Unsupported),
    /// A count that cannot be trusted, or that the backend does not make.
    Untrusted(Untrusted),
    /// An error of the PMU model or a driver underneath.
    Pmu(PmuError),
}

/// An event that cannot be used as given.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventError {
    /// Not a perf name, not `r<hex>`, not a `<pmu>/…/` event, not a sysfs alias.
    Unknown {
        /// The name.
        name: String,
    },
    /// Not an event of the running core, but near one of its names: a typo.
    Misspelt {
        /// The name.
        name: String,
        /// The core (`Cortex-A53`).
        core: &'static str,
        /// Its event nearest to the name.
        nearest: &'static str,
    },
    /// An event other cores have, but not the running one.
    NotOnThisCore {
        /// The name.
        name: String,
        /// The running core.
        core: &'static str,
        /// The cores that have it.
        cores: Vec<&'static str>,
    },
    /// An event of some cores' tables, asked for on a core that has no table here.
    NoCoreTable {
        /// The name.
        name: String,
        /// The running core's MIDR.
        midr: u32,
        /// The cores whose tables have it.
        cores: Vec<&'static str>,
    },
    /// `r` followed by something that is not 1 to 16 hex digits.
    MalformedRaw {
        /// The name.
        name: String,
        /// What is wrong.
        problem: RawProblem,
    },
    /// A name the direct backend cannot count: it programs hardware events only
    /// (generic names and `r<hex>`).
    NotDirect {
        /// The name.
        name: String,
        /// What kind of event it is.
        kind: crate::machine::events::kind::EventKind,
    },
    /// `<pmu>/…/` names a PMU the kernel does not publish in sysfs.
    UnknownPmu {
        /// The PMU asked for.
        pmu: String,
        /// The PMUs that exist.
        available: Vec<String>,
    },
    /// A term that is neither in the PMU's `format/` nor an alias in its `events/`.
    UnknownFormatTerm {
        /// The PMU.
        pmu: String,
        /// The term.
        term: String,
        /// The terms the PMU's `format/` directory defines.
        known: Vec<String>,
    },
    /// A term that cannot be parsed.
    MalformedTerm {
        /// The whole event text.
        event: String,
        /// The term (or the whole text for [`TermProblem::Syntax`]).
        term: String,
        /// What is wrong.
        problem: TermProblem,
    },
    /// A value that does not fit the bits its format field has.
    ValueTooWide {
        /// The PMU.
        pmu: String,
        /// The term.
        term: String,
        /// The value given.
        value: u64,
        /// Bits of the field (`format/<term>`).
        bits: u32,
    },
    /// A sysfs `format/` file this library cannot parse.
    BadFormatFile {
        /// The file.
        path: PathBuf,
        /// Its content.
        content: String,
    },
}

/// The events as one group.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GroupError {
    /// No event given.
    NoEvents,
    /// More events than one group of this library holds.
    TooMany {
        /// Events given.
        given: usize,
        /// The limit, [`crate::Meter::MAX_EVENTS`].
        max: usize,
    },
    /// A trial enable showed that the events do not fit on the hardware counters
    /// together (the pinned group went into its error state): more events than the
    /// PMU has counters, or other perf users hold some of them.
    DoesNotFit {
        /// Events given.
        events: usize,
        /// How many of the first events fit together (a trial per prefix); 0 when not
        /// even the first one does.
        fit: usize,
    },
    /// The group `read()` returned fewer bytes than the group needs; 0 bytes means the
    /// pinned group lost its counters (perf_event_open(2): a pinned group that cannot
    /// be scheduled goes into an error state and reads return 0).
    ShortRead {
        /// Bytes expected.
        expected: usize,
        /// Bytes read.
        got: usize,
    },
    /// The group `read()` returned events in an unexpected order or number.
    Mismatch,
}

/// User access to the PMU, which the direct backend needs.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AccessError {
    /// The direct backend's probe trapped (SIGILL): the counters are not accessible
    /// from user mode on this CPU.
    NotEnabled,
    /// The direct backend's probe trapped although kmod-enable-user is loaded
    /// (`/sys/module/kmod_enable_user` exists): the grant is gone on this CPU, or the
    /// module was loaded without the access the direct backend needs.
    GrantMissing {
        /// What the module's state in sysfs says.
        cause: GrantMissing,
    },
    /// User access was revoked while counters were in use (the kernel cleared
    /// PMUSERENR_EL0: a perf user started on this CPU, or the CPU was hot-plugged).
    Revoked,
    /// kmod-enable-user's per-thread grant was refused (opening its device, GRANT or
    /// REGRANT): the module's errno, as a cause with its advice.
    ThreadGrant {
        /// What the module's answer means.
        refused: crate::direct::grant::ThreadGrantRefused,
    },
    /// A counter read of the region trapped under the per-thread grant and could not
    /// be repaired (the library's SIGILL handler wrote 0 in its place and stepped
    /// over it), or the re-grant said the thread had run where the module's counters
    /// did not count for it ([`TrapCause::CountsLost`]: the read
    /// was made, the count is short): the region is not counted.
    ReadTrapped {
        /// Why the re-grant did not repair it, or what it reported.
        cause: crate::direct::grant::TrapCause,
    },
    /// The probe child ended some other way than success or SIGILL.
    ProbeFailed {
        /// The `waitpid` status.
        status: i32,
    },
    /// kmod-enable-user's `layout` parameter could not be read or understood (the
    /// read-only grant: the module's counters are the only ones EL0 may read).
    ModuleLayout {
        /// What went wrong, with the file.
        reason: String,
    },
    /// An event the module does not count under its read-only grant.
    NotInModuleLayout {
        /// The event as given.
        event: String,
        /// The module's layout (`5=0x8 31=0x11`).
        layout: String,
        /// The module parameter that would add it (`events=0x8,0x3`, or
        /// `cycle_counter=1` for CPU_CYCLES).
        parameter: String,
    },
    /// This CPU's PMU has no read-only grant (ARMv7 PMUv1/PMUv2: PMUSERENR has EN
    /// alone, which also lets user mode program the counters), and kmod-enable-user is
    /// not loaded: its default load is refused on this CPU.
    NoReadOnlyGrant {
        /// The core, as /proc/cpuinfo's MIDR fields name it (`Cortex-A7`).
        core: String,
    },
    /// The ARM1176's direct backend programs the PMU (SUNAVCR.V has no read-only form):
    /// it needs [`crate::MeterBuilder::program_the_pmu`]. (The ARMv7 backend reads the
    /// module's read-only grant without it.)
    NeedsProgramming,
}

/// Not available here.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unsupported {
    /// The direct backend does not exist on this architecture or CPU.
    Direct {
        /// Why, and what to use instead.
        reason: DirectUnsupported,
    },
    /// The perf backend is not built for this architecture.
    Perf,
    /// No time-stamp counter reader for this architecture (x86_64 and aarch64 have
    /// one).
    TimestampCounter,
    /// The CPU asked for does not exist or is not allowed for this thread.
    Cpu {
        /// The CPU.
        cpu: usize,
    },
    /// A one-instruction read is not possible for this event (benchmarks).
    FastRead {
        /// Why the value has to come from `read()`.
        reason: crate::verdict::reason::FallbackReason,
    },
    /// Only a meter that programs its counters can preset one: the direct backend
    /// under the programming grant ([`crate::MeterBuilder::program_the_pmu`]).
    Preset,
}

/// A count that cannot be trusted, or that the meter does not make: never a silent
/// number.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Untrusted {
    /// A count asked for as trustworthy has hazards.
    Hazardous {
        /// The event.
        event: String,
        /// The count as read.
        value: u64,
        /// Why it cannot be trusted.
        hazards: pmu_core::Hazards,
    },
    /// Every run of a measurement had a hazard for this event: no statistic to give.
    NoCleanRun {
        /// The event.
        event: String,
        /// Runs measured.
        runs: usize,
        /// Their hazards, combined.
        hazards: pmu_core::Hazards,
    },
    /// The meter's backend does not count this event (the software fallback counts no
    /// hardware event).
    NotCounted {
        /// The event.
        event: String,
        /// The backend the meter uses.
        backend: String,
        /// Why the meter uses that backend.
        why: String,
    },
}

/// An error of the layers underneath, kept whole ([`std::error::Error::source`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum PmuError {
    /// The PMU model (widths, counter allocation, harness).
    Core(pmu_core::Error),
    /// The ARMv8 driver could not take over the PMU.
    Armv8Probe(pmu_armv8::ProbeError),
    /// An ARMv8 counter handle was refused when made: the grant does not cover the
    /// counter (the error names what it covers).
    CounterHandle(pmu_armv8::handle::HandleError),
    /// Counting over every core PMU of a heterogeneous machine (`perf::HybridSession`) is
    /// not possible as asked.
    Hybrid(HybridProblem),
}

pub use crate::direct::grant::{GrantMissing, ThreadGrantRefused, TrapCause};

impl Error {
    /// A failed system call: `op`, with the thread's `errno`.
    pub(crate) fn syscall(op: Op, errno: Errno) -> Self {
        Self::Io {
            op,
            source: io::Error::from_raw_os_error(errno.0),
        }
    }

    /// A sysfs file or directory that could not be read.
    pub(crate) fn sysfs(path: PathBuf, source: io::Error) -> Self {
        Self::Io {
            op: Op::ReadSysfs { path },
            source,
        }
    }

    /// Whether this is perf refusing a hardware event because the machine registers no
    /// CPU PMU at all (a VM without vPMU): then software events are all there is.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    pub(crate) fn means_no_hardware_counters(&self) -> bool {
        matches!(
            self,
            Self::Open {
                cause: OpenError::NotSupported {
                    needs_cpu_pmu: true,
                    cpu_pmu_present: false,
                    ..
                },
                ..
            }
        )
    }

    /// The `errno` of a failed system call ([`Error::Io`]), `None` for the others.
    pub fn errno(&self) -> Option<Errno> {
        match self {
            Self::Io { source, .. } => source.raw_os_error().map(Errno),
            _ => None,
        }
    }
}

macro_rules! from_kind {
    ($($leaf:ty => $kind:ident),* $(,)?) => {$(
        impl From<$leaf> for Error {
            fn from(e: $leaf) -> Self {
                Self::$kind(e)
            }
        }
    )*};
}

from_kind!(
    EventError => Event,
    GroupError => Group,
    AccessError => Access,
    Unsupported => Unsupported,
    Untrusted => Untrusted,
    PmuError => Pmu,
);

macro_rules! from_pmu {
    ($($source:ty => $leaf:ident),* $(,)?) => {$(
        impl From<$source> for Error {
            fn from(e: $source) -> Self {
                Self::Pmu(PmuError::$leaf(e))
            }
        }
    )*};
}

from_pmu!(
    pmu_core::Error => Core,
    pmu_armv8::ProbeError => Armv8Probe,
    pmu_armv8::handle::HandleError => CounterHandle,
);

/// Why there is no direct backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DirectUnsupported {
    /// x86: counters are programmed through MSRs (WRMSR), which need ring 0.
    X86NeedsRing0,
    /// An architecture this library has no direct backend for.
    Architecture,
    /// 32-bit ARM, but /proc/cpuinfo names another core than the ARM1176 (the only
    /// ARMv6/v7 core whose c15 PMU the direct backend knows).
    NotArm1176 {
        /// `CPU implementer` (0x41: Arm).
        implementer: u32,
        /// `CPU part` (the ARM1176 is 0xb76).
        part: u32,
    },
}

impl fmt::Display for DirectUnsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Self::NotArm1176 { implementer, part } = self {
            return write!(
                f,
                "this CPU (implementer {implementer:#04x}, part {part:#05x} in /proc/cpuinfo) is \
                 neither an ARM1176 (0x41, 0xb76: Raspberry Pi 1 / Zero) nor an ARMv7 or later \
                 core (\"CPU architecture: 7\"): the 32-bit ARM cores whose PMU the direct \
                 backend programs"
            );
        }
        f.write_str(match self {
            Self::X86NeedsRing0 => {
                "x86 counters are programmed with WRMSR, which needs ring 0: use the perf backend \
                 (it reads with rdpmc from user space when /sys/bus/event_source/devices/cpu/rdpmc allows)"
            }
            Self::Architecture | Self::NotArm1176 { .. } => {
                "no direct user-mode PMU backend for this architecture"
            }
        })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Event(e) => e.fmt(f),
            Self::Open { event, cause } => write!(f, "cannot open `{event}`: {cause}"),
            Self::Io {
                op: Op::ReadSysfs { path },
                source,
            } => write!(f, "cannot read {}: {}", path.display(), source.kind()),
            Self::Io { op, source } => match source.raw_os_error() {
                Some(errno) => write!(f, "{op} failed: {}", Errno(errno)),
                None => write!(f, "{op} failed: {source}"),
            },
            Self::Group(e) => e.fmt(f),
            Self::Access(e) => e.fmt(f),
            Self::Unsupported(e) => e.fmt(f),
            Self::Untrusted(e) => e.fmt(f),
            Self::Pmu(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::Pmu(PmuError::Core(e)) => Some(e),
            Self::Pmu(PmuError::Armv8Probe(e)) => Some(e),
            Self::Pmu(PmuError::CounterHandle(e)) => Some(e),
            Self::Pmu(PmuError::Hybrid(e)) => Some(e),
            _ => None,
        }
    }
}

impl fmt::Display for EventError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unknown { name } => write!(
                f,
                "unknown event `{name}`: use a perf name (cycles, instructions, task-clock, …), \
                 r<hex>, or <pmu>/event=…,umask=…/"
            ),
            Self::Misspelt {
                name,
                core,
                nearest,
            } => write!(
                f,
                "unknown event `{name}`; did you mean {nearest}? (the {core}'s events: `pmu-demo list`)"
            ),
            Self::NotOnThisCore { name, core, cores } => write!(
                f,
                "the {core} has no event {}; {} {} it",
                name.to_ascii_uppercase(),
                cores.join(", "),
                if cores.len() == 1 { "has" } else { "have" }
            ),
            Self::NoCoreTable { name, midr, cores } => write!(
                f,
                "`{name}` is an event of the {}, but this core (MIDR {midr:#010x}: implementer \
                 {:#04x}, part {:#05x}) has no event table here: give the event by its number \
                 from the core's manual, r<hex>",
                cores.join(", "),
                midr >> 24,
                (midr >> 4) & 0xFFF
            ),
            Self::MalformedRaw { name, problem } => match problem {
                RawProblem::NotHex { found } => write!(
                    f,
                    "malformed raw event `{name}`: `{found}` is not a hex digit (r<hex>, e.g. r01c2)"
                ),
                RawProblem::TooLong { digits } => write!(
                    f,
                    "malformed raw event `{name}`: {digits} hex digits, at most 16 fit 64 bits"
                ),
            },
            Self::NotDirect { name, kind } => write!(
                f,
                "`{name}` is a {kind} event: the direct backend programs the PMU itself and counts \
                 only generic hardware events and r<hex> codes; use the perf backend for it"
            ),
            Self::UnknownPmu { pmu, available } => write!(
                f,
                "unknown PMU `{pmu}`: this kernel publishes {} in /sys/bus/event_source/devices",
                list(available)
            ),
            Self::UnknownFormatTerm { pmu, term, known } => write!(
                f,
                "PMU `{pmu}` has no format term or event alias `{term}`: its terms are {}",
                list(known)
            ),
            Self::MalformedTerm {
                event,
                term,
                problem,
            } => match problem {
                TermProblem::Syntax => write!(
                    f,
                    "malformed event `{event}`: expected <pmu>/term=value,…/"
                ),
                TermProblem::Empty => write!(f, "malformed event `{event}`: empty term"),
                TermProblem::BadNumber { value } => write!(
                    f,
                    "malformed term `{term}` in `{event}`: `{value}` is not a decimal or 0x-hex 64-bit number"
                ),
                TermProblem::NeedsValue => write!(
                    f,
                    "term `{term}` in `{event}` needs a value: give it as {term}=<value>"
                ),
            },
            Self::ValueTooWide {
                pmu,
                term,
                value,
                bits,
            } => write!(
                f,
                "{term}={value:#x} does not fit PMU `{pmu}`'s {bits}-bit `{term}` field (largest {:#x})",
                if *bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 }
            ),
            Self::BadFormatFile { path, content } => write!(
                f,
                "cannot parse {} (`{}`): expected config[123]:lo-hi[,lo-hi…]",
                path.display(),
                content.trim()
            ),
        }
    }
}

impl fmt::Display for GroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoEvents => f.write_str("no events given"),
            Self::TooMany { given, max } => {
                write!(f, "{given} events given, a group holds at most {max}")
            }
            Self::DoesNotFit { events, fit } => write!(
                f,
                "the {events} events do not fit on the hardware counters together: a trial \
                 enable could not put them on the counters at once (the first {fit} fit); \
                 measure at most {fit} per run, stop other perf users of this CPU's counters, \
                 or let the kernel multiplex them (each event opened on its own, unpinned: \
                 `Options::grouped(false)` and `Options::pinned(false)`; scaled estimates, \
                 flagged)"
            ),
            Self::ShortRead {
                expected: _,
                got: 0,
            } => f.write_str(
                "the pinned group could not be put on the hardware counters (read returned 0 \
                 bytes): measure fewer events, or stop other perf users",
            ),
            Self::ShortRead { expected, got } => write!(
                f,
                "the group read returned {got} bytes, {expected} expected"
            ),
            Self::Mismatch => f.write_str("the group read returned other events than were opened"),
        }
    }
}

impl fmt::Display for AccessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotEnabled => {
                f.write_str("user access to the PMU is not enabled: load kmod-enable-user")
            }
            Self::GrantMissing { cause } => write!(
                f,
                "user access to the PMU is not enabled on this CPU although kmod-enable-user is \
                 loaded ({}): {cause}",
                crate::direct::grant::MODULE_SYSFS
            ),
            Self::Revoked => f.write_str(
                "user access to the PMU was revoked while measuring (perf started the PMU on \
                 this CPU, or a CPU hotplug reset it): grant it again with \
                 `echo 1 > /sys/module/kmod_enable_user/parameters/regrant` (as root), or reload \
                 kmod-enable-user, and keep perf off this CPU; or use the perf backend",
            ),
            Self::ThreadGrant { refused } => write!(
                f,
                "kmod-enable-user's per-thread grant ({}): {refused}",
                crate::direct::grant::uapi::DEVICE
            ),
            Self::ReadTrapped {
                cause: crate::direct::grant::TrapCause::CountsLost,
            } => write!(
                f,
                "not counted: {}; the module withheld the grant since, so the region's read \
                 trapped, and the re-grant said so",
                crate::direct::grant::TrapCause::CountsLost
            ),
            Self::ReadTrapped { cause } => write!(
                f,
                "not counted: a counter read trapped under kmod-enable-user's per-thread grant \
                 (perf cleared PMUSERENR_EL0 on this CPU) and {cause}; the library's SIGILL \
                 handler stepped over the read"
            ),
            Self::ProbeFailed { status } => write!(
                f,
                "the user-access probe child ended unexpectedly (wait status {status:#x})"
            ),
            Self::ModuleLayout { reason } => {
                write!(f, "kmod-enable-user's counter layout: {reason}")
            }
            Self::NotInModuleLayout {
                event,
                layout,
                parameter,
            } => write!(
                f,
                "{event}: kmod-enable-user's read-only grant counts only its own events \
                 (parameters/layout: {layout}); reload it with {parameter} to count it too, \
                 or with el0_programming=1 to let user space program the PMU"
            ),
            Self::NoReadOnlyGrant { core } => write!(
                f,
                "user access to the PMU is not enabled: load kmod-enable-user; this CPU \
                 ({core}, ARMv7 PMU) has no read-only grant (its PMUSERENR has EN alone, \
                 which also lets user mode program every counter), so the module refuses its \
                 default load here: load it with el0_programming=1 to accept that, and let \
                 the direct backend program the PMU (MeterBuilder::program_the_pmu)"
            ),
            Self::NeedsProgramming => f.write_str(
                "the ARM1176 direct backend programs the PMU itself: build the meter with \
                 program_the_pmu() (which promises exclusive use of the PMU)",
            ),
        }
    }
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Direct { reason } => write!(f, "no direct backend: {reason}"),
            Self::Perf => f.write_str(
                "the perf backend needs the perf-event-open-sys bindings, which exist for \
                 64-bit architectures only: use the direct backend",
            ),
            Self::TimestampCounter => f.write_str(
                "this library reads a time-stamp counter on x86_64 (RDTSC) and aarch64 \
                 (CNTVCT_EL0) only",
            ),
            Self::Cpu { cpu } => write!(
                f,
                "CPU {cpu} does not exist or is not in this thread's allowed set"
            ),
            Self::FastRead { reason } => write!(f, "no one-instruction read: {reason}"),
            Self::Preset => f.write_str(
                "only a meter that programs its counters can preset one: the direct \
                 backend under kmod-enable-user's programming grant, built with \
                 program_the_pmu()",
            ),
        }
    }
}

impl fmt::Display for Untrusted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Hazardous {
                event,
                value,
                hazards,
            } => write!(
                f,
                "`{event}` read {value}, which cannot be trusted: {hazards}"
            ),
            Self::NoCleanRun {
                event,
                runs,
                hazards,
            } => write!(
                f,
                "`{event}`: none of the {runs} runs was free of hazards ({hazards}); \
                 measure again, pinned to a quiet CPU"
            ),
            Self::NotCounted {
                event,
                backend,
                why,
            } => write!(
                f,
                "`{event}` is not counted: the meter uses the {backend} backend: {why}"
            ),
        }
    }
}

impl fmt::Display for PmuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Core(e) => e.fmt(f),
            Self::Armv8Probe(e) => e.fmt(f),
            Self::CounterHandle(e) => e.fmt(f),
            Self::Hybrid(e) => e.fmt(f),
        }
    }
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What is wrong with a heterogeneous setup or request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HybridProblem {
    /// The event belongs to one PMU (raw, sysfs or software): it cannot be opened on
    /// every core PMU.
    NotGeneric {
        /// The name.
        event: String,
        /// What it is.
        kind: crate::machine::events::kind::EventKind,
    },
    /// Two core PMUs claim the same CPU: their sum would count it twice.
    Overlap {
        /// One PMU.
        first: String,
        /// The other.
        second: String,
        /// A CPU both list.
        cpu: u32,
    },
    /// A core PMU's `cpus` (or `cpumask`) is not a CPU list.
    BadCpuList {
        /// The PMU.
        pmu: String,
        /// The file's text.
        content: String,
    },
    /// A core PMU publishes neither `cpus` nor `cpumask`: which CPUs it counts on is
    /// unknown, and so is whether a sum over the PMUs is whole.
    NoCpuList {
        /// The PMU.
        pmu: String,
    },
}

impl std::error::Error for HybridProblem {}

impl fmt::Display for HybridProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotGeneric { event, kind } => write!(
                f,
                "`{event}` is a {kind} event of one PMU; a count over every core PMU takes \
                 generic hardware and cache events (instructions, cycles, \
                 L1-dcache-load-misses, …): open per-PMU events with a Session instead"
            ),
            Self::Overlap { first, second, cpu } => write!(
                f,
                "core PMUs {first} and {second} both list CPU {cpu}: a sum over them would \
                 count it twice (check the device tree's PMU nodes / interrupt-affinity)"
            ),
            Self::BadCpuList { pmu, content } => write!(
                f,
                "core PMU {pmu}: `cpus` is not a CPU list: {:?}",
                content.trim()
            ),
            Self::NoCpuList { pmu } => write!(
                f,
                "core PMU {pmu} publishes no `cpus` or `cpumask` in sysfs: the CPUs it \
                 counts on are unknown"
            ),
        }
    }
}

impl From<HybridProblem> for Error {
    fn from(problem: HybridProblem) -> Self {
        Error::Pmu(crate::error::PmuError::Hybrid(problem))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message users search for, word for word.
    #[test]
    fn user_access_message_is_exact() {
        assert_eq!(
            Error::from(AccessError::NotEnabled).to_string(),
            "user access to the PMU is not enabled: load kmod-enable-user"
        );
    }

    /// The I/O kinds keep the operating system's error as their source, and say what
    /// was being done (std::error::Error::source, the chain anyhow and eyre print).
    #[test]
    fn io_errors_keep_their_source() {
        use std::error::Error as _;
        let e = Error::syscall(Op::Enable, Errno(libc::EBADF));
        assert_eq!(e.errno(), Some(Errno(libc::EBADF)));
        assert!(
            e.to_string()
                .starts_with("enabling the group failed: EBADF: "),
            "{e}"
        );
        let source = e.source().expect("the io::Error");
        assert_eq!(
            source
                .downcast_ref::<io::Error>()
                .and_then(io::Error::raw_os_error),
            Some(libc::EBADF)
        );
        let e = Error::sysfs(
            PathBuf::from("/sys/x/format/event"),
            io::Error::from(io::ErrorKind::NotFound),
        );
        assert_eq!(
            e.to_string(),
            "cannot read /sys/x/format/event: entity not found"
        );
        assert!(e.source().is_some());
        let e = Error::from(pmu_core::Error::ReadingsMismatch {
            expected: 2,
            got: 1,
        });
        assert!(matches!(e, Error::Pmu(PmuError::Core(_))));
        assert!(e.source().is_some());
        assert!(Error::from(GroupError::NoEvents).source().is_none());
    }

    /// errno → cause, after perf_event_open(2) ERRORS.
    #[test]
    fn errno_mapping() {
        let m = |e, hw| OpenError::from_errno(Errno(e), Some(2), false, hw, false);
        assert!(matches!(
            m(libc::EACCES, true),
            OpenError::PermissionDenied {
                paranoid: Some(2),
                ..
            }
        ));
        assert!(matches!(
            m(libc::EPERM, true),
            OpenError::PermissionDenied { .. }
        ));
        assert!(matches!(
            m(libc::ENOENT, true),
            OpenError::NotSupported {
                needs_cpu_pmu: true,
                ..
            }
        ));
        assert!(matches!(
            m(libc::EOPNOTSUPP, false),
            OpenError::NotSupported {
                needs_cpu_pmu: false,
                ..
            }
        ));
        assert_eq!(m(libc::EINVAL, true), OpenError::InvalidAttr);
        assert!(matches!(
            m(libc::EMFILE, true),
            OpenError::TooManyOpenFiles { .. }
        ));
        assert_eq!(m(libc::EBUSY, true), OpenError::Busy);
        assert_eq!(m(libc::E2BIG, true), OpenError::AttrTooBig);
        assert!(m(libc::ENOENT, true)
            .to_string()
            .contains("no hardware counters: VM without vPMU?"));
        assert!(!m(libc::ENOENT, false).to_string().contains("vPMU"));
        // A PMU that is there but lacks the event (QEMU's -cpu max has no
        // PC_WRITE_RETIRED for `branches`): its own reason, never the no-vPMU one.
        let absent = OpenError::from_errno(Errno(libc::ENOENT), Some(2), false, true, true);
        assert!(matches!(
            absent,
            OpenError::NotSupported {
                cpu_pmu_present: true,
                ..
            }
        ));
        let absent = absent.to_string();
        assert!(
            absent.starts_with("not implemented by this PMU (ENOENT"),
            "{absent}"
        );
        assert!(!absent.contains("vPMU"), "{absent}");
        let denied =
            OpenError::from_errno(Errno(libc::EACCES), Some(3), true, true, false).to_string();
        assert!(denied.contains("perf_event_paranoid is 3"), "{denied}");
        assert!(denied.contains("exclude the kernel"), "{denied}");
    }
}
