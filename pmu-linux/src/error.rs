//! The error type of `pmu-linux`: one variant per cause, each saying what to do.
//!
//! Name errors (unknown event, malformed raw code, unknown PMU or format term, a value
//! too wide for its field) are told apart from open errors, which carry the kernel's
//! answer decoded into an [`OpenError`] (permissions with the current
//! `perf_event_paranoid`, "not supported by this CPU / VM", bad attributes, …).

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
    /// properties and whether a CPU PMU is registered only feed the message.
    pub fn from_errno(
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

/// Which operation on an event failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
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
        })
    }
}

/// Every error of this crate.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// Not a perf name, not `r<hex>`, not a `<pmu>/…/` event, not a sysfs alias.
    UnknownEvent {
        /// The name.
        name: String,
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
    NotDirectEvent {
        /// The name.
        name: String,
        /// What kind of event it is.
        kind: crate::events::EventKind,
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
    /// A sysfs file could not be read.
    Sysfs {
        /// The file.
        path: PathBuf,
        /// Why.
        kind: io::ErrorKind,
    },
    /// `perf_event_open` refused an event.
    Open {
        /// The event as named by the user.
        event: String,
        /// The decoded reason.
        cause: OpenError,
    },
    /// A system call on an open group failed.
    Syscall {
        /// What was being done.
        op: Op,
        /// The errno.
        errno: Errno,
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
    /// A trial enable showed that the events do not fit on the hardware counters
    /// together (the pinned group went into its error state): more events than the
    /// PMU has counters, or other perf users hold some of them.
    GroupDoesNotFit {
        /// Events given.
        events: usize,
        /// How many of the first events fit together (a trial per prefix); 0 when not
        /// even the first one does.
        fit: usize,
    },
    /// The group `read()` returned events in an unexpected order or number.
    GroupMismatch,
    /// No event given.
    NoEvents,
    /// More events than one group of this library holds.
    TooManyEvents {
        /// Events given.
        given: usize,
        /// The limit, [`crate::MAX_EVENTS`].
        max: usize,
    },
    /// The direct backend's probe trapped (SIGILL): the counters are not accessible
    /// from user mode on this CPU.
    UserAccessNotEnabled,
    /// The direct backend's probe trapped although kmod-enable-user is loaded
    /// (`/sys/module/kmod_enable_user` exists): the grant is gone on this CPU, or the
    /// module was loaded without the access the direct backend needs.
    ModuleGrantMissing {
        /// What the module's state in sysfs says.
        cause: GrantMissing,
    },
    /// User access was revoked while counters were in use (the kernel cleared
    /// PMUSERENR_EL0: a perf user started on this CPU, or the CPU was hot-plugged).
    UserAccessRevoked,
    /// The probe child ended some other way than success or SIGILL.
    ProbeFailed {
        /// The `waitpid` status.
        status: i32,
    },
    /// The direct backend does not exist on this architecture.
    DirectUnsupported {
        /// Why, and what to use instead.
        reason: DirectUnsupported,
    },
    /// The perf backend is not built for this architecture.
    PerfUnsupported,
    /// No time-stamp counter reader for this architecture (x86_64 and aarch64 have
    /// one).
    NoTimestampCounter,
    /// A [`crate::Meter`]'s backend was asked to stop counting: it counts from the
    /// meter's build to its drop.
    MeterAlwaysCounts,
    /// An [`crate::EventHandle`] of another meter.
    ForeignHandle,
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
    /// The ARM1176's direct backend programs the PMU (SUNAVCR.V has no read-only form):
    /// it needs [`crate::MeterBuilder::program_the_pmu`].
    DirectNeedsProgramming,
    /// [`crate::direct::DirectMeter::scaled`] for a counter the meter lacks, or by 0.
    ScaleOutOfRange {
        /// The counter index given.
        index: usize,
        /// Counters of the meter.
        counters: usize,
        /// The factor given.
        events_per_tick: u64,
    },
    /// The CPU asked for does not exist or is not allowed for this thread.
    NoSuchCpu {
        /// The CPU.
        cpu: usize,
    },
    /// A one-instruction read is not possible for this event (benchmarks).
    NoFastRead {
        /// Why the value has to come from `read()`.
        reason: crate::region::FallbackReason,
    },
    /// An error of the PMU model (widths, counter allocation, harness).
    Core(pmu_core::Error),
    /// The ARMv8 driver could not take over the PMU.
    Armv8Probe(pmu_armv8::ProbeError),
    /// An ARMv8 counter handle was refused when made: the grant does not cover the
    /// counter (the error names what it covers).
    CounterHandle(pmu_armv8::handle::HandleError),
    /// A direct region was given a sentinel description that contradicts its sentinel
    /// (counting without a counter, or off with one): a bug of the caller.
    SentinelMismatch {
        /// What the description said.
        said: String,
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
    },
    /// Counting over every core PMU of a heterogeneous machine ([`crate::hybrid`]) is
    /// not possible as asked.
    Hybrid(crate::hybrid::HybridProblem),
}

/// Why user mode traps on this CPU although kmod-enable-user is loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GrantMissing {
    /// arm64, loaded with programming access: perf's use of the PMU revoked the grant
    /// on this CPU. Linux 6.12 drivers/perf/arm_pmuv3.c `armv8pmu_start()` writes
    /// PMUSERENR_EL0 = 0 whenever perf starts the PMU for a task that has no
    /// user-readable events, and nothing sets it again.
    RevokedByPerf {
        /// The module has the root-only `regrant` parameter
        /// (`/sys/module/kmod_enable_user/parameters/regrant`).
        regrant: bool,
    },
    /// The module's parameters grant less than programming the counters from user
    /// mode (PMUSERENR_EL0.EN), which the direct backend needs.
    NoProgrammingAccess {
        /// The parameter as sysfs shows it (`user_access=0x4`, `el0_programming=N`).
        parameter: String,
    },
    /// Loaded, and still User mode traps on this CPU (32-bit ARM: SUNAVCR.V is 0).
    Trapped,
}

/// Where the module publishes itself once loaded.
pub const MODULE_SYSFS: &str = "/sys/module/kmod_enable_user";

impl Error {
    /// Whether this is perf refusing a hardware event because the machine registers no
    /// CPU PMU at all (a VM without vPMU): then software events are all there is.
    pub fn means_no_hardware_counters(&self) -> bool {
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

    /// The error of a probe that trapped, from the module's state under `module`
    /// ([`MODULE_SYSFS`]): [`Error::UserAccessNotEnabled`] when it is not loaded,
    /// [`Error::ModuleGrantMissing`] with what its parameters say when it is.
    pub fn trapped_with_module_at(module: &std::path::Path) -> Self {
        if !module.is_dir() {
            return Self::UserAccessNotEnabled;
        }
        let parameter = |name: &str| {
            std::fs::read_to_string(module.join("parameters").join(name))
                .ok()
                .map(|s| s.trim().to_owned())
        };
        // The module's write opt-in (`el0_programming`); a module older than it had EN
        // as bit 0 of `user_access`.
        let opt_in = parameter("el0_programming");
        if let Some(value) = opt_in.as_ref().filter(|v| *v == "N" || *v == "0") {
            return Self::ModuleGrantMissing {
                cause: GrantMissing::NoProgrammingAccess {
                    parameter: format!("el0_programming={value}"),
                },
            };
        }
        if let Some(value) = parameter("user_access").filter(|_| opt_in.is_none()) {
            let bits = value.strip_prefix("0x").map_or_else(
                || value.parse::<u64>().ok(),
                |h| u64::from_str_radix(h, 16).ok(),
            );
            if bits.is_some_and(|b| b & 1 == 0) {
                return Self::ModuleGrantMissing {
                    cause: GrantMissing::NoProgrammingAccess {
                        parameter: format!("user_access={value}"),
                    },
                };
            }
        }
        let cause = if cfg!(target_arch = "aarch64") {
            GrantMissing::RevokedByPerf {
                regrant: module.join("parameters/regrant").exists(),
            }
        } else {
            GrantMissing::Trapped
        };
        Self::ModuleGrantMissing { cause }
    }

    /// [`Error::trapped_with_module_at`] for this system's [`MODULE_SYSFS`].
    pub fn trapped() -> Self {
        Self::trapped_with_module_at(std::path::Path::new(MODULE_SYSFS))
    }
}

impl fmt::Display for GrantMissing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::RevokedByPerf { regrant } => {
                f.write_str(
                    "perf's use of the PMU revoked the module's grant on this CPU (Linux's \
                     armv8pmu_start(), drivers/perf/arm_pmuv3.c, writes PMUSERENR_EL0 = 0 when \
                     perf starts the PMU for a task without user-readable events); ",
                )?;
                if *regrant {
                    f.write_str(
                        "grant it again with `echo 1 > /sys/module/kmod_enable_user/parameters/regrant` \
                         (as root: every online CPU)",
                    )?;
                } else {
                    f.write_str(
                        "grant it again by reloading the module (`rmmod kmod_enable_user`, then \
                         insmod; this version has no \
                         /sys/module/kmod_enable_user/parameters/regrant, which newer ones re-grant \
                         with `echo 1 >` as root)",
                    )?;
                }
                f.write_str(if *regrant {
                    ", or reload the module, or use the perf backend"
                } else {
                    ", or use the perf backend"
                })
            }
            Self::NoProgrammingAccess { parameter } => write!(
                f,
                "it was loaded with {parameter}, which does not let user mode program the \
                 counters ({en}), and the direct backend programs them: reload it with \
                 programming access, or use the perf backend",
                en = if cfg!(target_arch = "arm") {
                    "PMUSERENR.EN"
                } else {
                    "PMUSERENR_EL0.EN"
                }
            ),
            Self::Trapped => f.write_str(
                "user mode still traps on this CPU: reload the module, and check its kernel log",
            ),
        }
    }
}

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

impl From<pmu_core::Error> for Error {
    fn from(e: pmu_core::Error) -> Self {
        Self::Core(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownEvent { name } => write!(
                f,
                "unknown event `{name}`: use a perf name (cycles, instructions, task-clock, …), \
                 r<hex>, or <pmu>/event=…,umask=…/"
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
            Self::NotDirectEvent { name, kind } => write!(
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
            Self::Sysfs { path, kind } => write!(f, "cannot read {}: {kind}", path.display()),
            Self::Open { event, cause } => write!(f, "cannot open `{event}`: {cause}"),
            Self::Syscall { op, errno } => write!(f, "{op} failed: {errno}"),
            Self::ShortRead { expected: _, got: 0 } => f.write_str(
                "the pinned group could not be put on the hardware counters (read returned 0 \
                 bytes): measure fewer events, or stop other perf users",
            ),
            Self::ShortRead { expected, got } => write!(
                f,
                "the group read returned {got} bytes, {expected} expected"
            ),
            Self::GroupDoesNotFit { events, fit } => write!(
                f,
                "the {events} events do not fit on the hardware counters together: a trial \
                 enable could not put them on the counters at once (the first {fit} fit); \
                 measure at most {fit} per run, stop other perf users of this CPU's counters, \
                 or let the kernel multiplex them (each event opened on its own, unpinned: \
                 `Options::grouped(false)` and `Options::pinned(false)`; scaled estimates, \
                 flagged)"
            ),
            Self::GroupMismatch => f.write_str(
                "the group read returned other events than were opened",
            ),
            Self::NoEvents => f.write_str("no events given"),
            Self::TooManyEvents { given, max } => write!(
                f,
                "{given} events given, a group holds at most {max}"
            ),
            Self::UserAccessNotEnabled => {
                f.write_str("user access to the PMU is not enabled: load kmod-enable-user")
            }
            Self::ModuleGrantMissing { cause } => write!(
                f,
                "user access to the PMU is not enabled on this CPU although kmod-enable-user is \
                 loaded ({MODULE_SYSFS}): {cause}"
            ),
            Self::UserAccessRevoked => f.write_str(
                "user access to the PMU was revoked while measuring (perf started the PMU on \
                 this CPU, or a CPU hotplug reset it): grant it again with \
                 `echo 1 > /sys/module/kmod_enable_user/parameters/regrant` (as root), or reload \
                 kmod-enable-user, and keep perf off this CPU; or use the perf backend",
            ),
            Self::ProbeFailed { status } => write!(
                f,
                "the user-access probe child ended unexpectedly (wait status {status:#x})"
            ),
            Self::DirectUnsupported { reason } => write!(f, "no direct backend: {reason}"),
            Self::PerfUnsupported => f.write_str(
                "the perf backend needs the perf-event-open-sys bindings, which exist for \
                 64-bit architectures only: use the direct backend",
            ),
            Self::NoTimestampCounter => f.write_str(
                "this library reads a time-stamp counter on x86_64 (RDTSC) and aarch64 \
                 (CNTVCT_EL0) only",
            ),
            Self::MeterAlwaysCounts => f.write_str(
                "a meter counts from its build to its drop: drop it to stop counting",
            ),
            Self::ForeignHandle => f.write_str(
                "this event handle belongs to another meter: use the handles of the builder \
                 this meter was built from",
            ),
            Self::NotCounted {
                event,
                backend,
                why,
            } => write!(
                f,
                "`{event}` is not counted: the meter uses the {backend} backend: {why}"
            ),
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
            Self::DirectNeedsProgramming => f.write_str(
                "the ARM1176's direct backend programs the PMU itself: build the meter with \
                 program_the_pmu() (which promises exclusive use of the PMU)",
            ),
            Self::ScaleOutOfRange {
                index,
                counters,
                events_per_tick,
            } => write!(
                f,
                "cannot scale counter {index} by {events_per_tick}: the meter has {counters} \
                 counters, and a counter ticks at least once per event"
            ),
            Self::NoSuchCpu { cpu } => write!(
                f,
                "CPU {cpu} does not exist or is not in this thread's allowed set"
            ),
            Self::NoFastRead { reason } => write!(f, "no one-instruction read: {reason}"),
            Self::Core(e) => e.fmt(f),
            Self::Hybrid(problem) => problem.fmt(f),
            Self::Armv8Probe(e) => e.fmt(f),
            Self::CounterHandle(e) => e.fmt(f),
            Self::SentinelMismatch { said } => write!(
                f,
                "the region's sentinel description contradicts its sentinel counter: {said}"
            ),
            Self::ModuleLayout { reason } => write!(
                f,
                "kmod-enable-user's counter layout: {reason}"
            ),
            Self::NotInModuleLayout { event, layout } => write!(
                f,
                "{event}: kmod-enable-user's read-only grant counts only its own events \
                 (parameters/layout: {layout}); load it with events=<numbers> for others, or \
                 el0_programming=1 to let user space program the PMU"
            ),
        }
    }
}

impl std::error::Error for Error {}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// The message the issue fixes word for word.
    #[test]
    fn user_access_message_is_exact() {
        assert_eq!(
            Error::UserAccessNotEnabled.to_string(),
            "user access to the PMU is not enabled: load kmod-enable-user"
        );
    }

    /// A trapped probe names what happened, from the module's sysfs directory (a fake
    /// one here: /sys/module/<name>/parameters/<param> is how the kernel publishes a
    /// module's parameters, kernel/params.c).
    #[test]
    fn trapped_probe_reads_the_module_state() {
        let dir = tempfile::tempdir().unwrap();
        let module = dir.path().join("kmod_enable_user");
        assert_eq!(
            Error::trapped_with_module_at(&module),
            Error::UserAccessNotEnabled
        );
        std::fs::create_dir_all(module.join("parameters")).unwrap();
        std::fs::write(module.join("parameters/user_access"), "13\n").unwrap();
        let loaded = Error::trapped_with_module_at(&module);
        if cfg!(target_arch = "aarch64") {
            assert_eq!(
                loaded,
                Error::ModuleGrantMissing {
                    cause: GrantMissing::RevokedByPerf { regrant: false }
                }
            );
            let text = loaded.to_string();
            for needle in [
                "although kmod-enable-user is loaded",
                "perf's use of the PMU revoked the module's grant on this CPU",
                "/sys/module/kmod_enable_user/parameters/regrant",
                "rmmod kmod_enable_user",
                "or use the perf backend",
            ] {
                assert!(text.contains(needle), "`{needle}` missing: {text}");
            }
            std::fs::write(module.join("parameters/regrant"), "").unwrap();
            let text = Error::trapped_with_module_at(&module).to_string();
            assert!(
                text.contains("`echo 1 > /sys/module/kmod_enable_user/parameters/regrant`")
                    && text.contains("or reload the module, or use the perf backend"),
                "{text}"
            );
        } else {
            assert_eq!(
                loaded,
                Error::ModuleGrantMissing {
                    cause: GrantMissing::Trapped
                }
            );
        }
        // CR only (4): no EN, the direct backend cannot program the counters.
        std::fs::write(module.join("parameters/user_access"), "4\n").unwrap();
        let cr_only = Error::trapped_with_module_at(&module);
        assert_eq!(
            cr_only,
            Error::ModuleGrantMissing {
                cause: GrantMissing::NoProgrammingAccess {
                    parameter: "user_access=4".into()
                }
            }
        );
        std::fs::write(module.join("parameters/el0_programming"), "N\n").unwrap();
        assert!(Error::trapped_with_module_at(&module)
            .to_string()
            .contains("loaded with el0_programming=N"));
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
