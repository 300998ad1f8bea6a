//! What this machine offers, with the reason for everything it does not: the backends
//! that work here and why not the others ([`backends`]), the user-read policy, the
//! PMUs in sysfs and their events, event names, the CPUs this thread may run on, and
//! the time-stamp counter.

use std::fmt;
use std::fs;
use std::path::PathBuf;

use crate::backend::BackendKind;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
use crate::error::Error;
use crate::error::Result;
use crate::sys;

pub(crate) mod cpu;
pub(crate) mod emulation;
pub(crate) mod events;
// The CPU read of the syscall-free regions of x86_64 and arm64; 32-bit ARM's direct
// backend reads sched_getcpu().
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
pub(crate) mod rseq;
pub(crate) mod sched;
pub(crate) mod sysfs;
pub(crate) mod timestamp;

pub use cpu::{CoreKind, Cores};
pub use events::{EventKind, EventSpec};
pub use sched::{allowed_cpus, current_cpu, pin_to, set_allowed_cpus, PinGuard};
pub use sysfs::{is_cpu_pmu, ConfigWord, FormatField, Pmu, Sysfs};
pub use timestamp::NAME;

/// Whether a backend works here, and what else is worth knowing.
#[derive(Debug)]
pub struct BackendStatus {
    /// The backend.
    pub backend: BackendKind,
    /// `Ok` when it can measure; the reason when not.
    pub usable: Result<()>,
    /// Details: hardware counters, the user-read policy, the paranoid level.
    pub notes: Vec<String>,
    /// The direct backend's grant, where it is usable: whose it is and what it allows.
    pub grant: Option<crate::Grant>,
}

/// The kernel's policy for one-instruction reads from user space.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UserReadPolicy {
    /// x86: `/sys/bus/event_source/devices/<core pmu>/rdpmc` (0: never, 1: while a
    /// perf event is mapped (default), 2: always).
    X86 {
        /// The file read.
        file: PathBuf,
        /// Its value.
        value: u32,
    },
    /// arm64: `kernel.perf_user_access` (0: off (default), 1: on for events opened with
    /// config1 bit 1).
    Arm64 {
        /// The sysctl's value.
        perf_user_access: i32,
    },
    /// Neither knob exists: no core PMU driver (a VM without vPMU) or another
    /// architecture.
    Unavailable,
}

impl fmt::Display for UserReadPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::X86 { file, value } => {
                let meaning = match value {
                    0 => "rdpmc is forbidden: `echo 1 > FILE` (as root) allows it for mapped events",
                    1 => "rdpmc allowed while a perf event is mapped",
                    _ => "rdpmc always allowed",
                };
                write!(f, "{} = {value}: {}", file.display(), meaning.replace("FILE", &file.display().to_string()))
            }
            Self::Arm64 { perf_user_access: 0 } => f.write_str(
                "kernel.perf_user_access = 0: counter reads from EL0 are off; enable with `sysctl -w kernel.perf_user_access=1`",
            ),
            Self::Arm64 { perf_user_access } => write!(
                f,
                "kernel.perf_user_access = {perf_user_access}: EL0 counter reads allowed for events opened with config1 bit 1"
            ),
            Self::Unavailable => f.write_str(
                "no user-read control (no x86 `rdpmc` file in sysfs, no kernel.perf_user_access): \
                 no core PMU driver (VM without vPMU?), every read falls back to read()",
            ),
        }
    }
}

/// The user-read policy of this kernel (`sysfs` is where the x86 `rdpmc` file is
/// looked for).
pub fn user_read_policy(sysfs: &Sysfs) -> UserReadPolicy {
    for pmu in ["cpu", "cpu_core", "cpu_atom"] {
        let file = sysfs.root().join(pmu).join("rdpmc");
        if let Some(value) = fs::read_to_string(&file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return UserReadPolicy::X86 { file, value };
        }
    }
    match sys::perf_user_access() {
        Some(perf_user_access) => UserReadPolicy::Arm64 { perf_user_access },
        None => UserReadPolicy::Unavailable,
    }
}

/// Every backend and whether it works here.
///
/// The direct backend is probed first: on arm64, opening perf's hardware events (the
/// perf backend's probe) starts the PMU on this CPU, and Linux then writes
/// PMUSERENR_EL0 = 0 there for a task without user-readable events
/// (drivers/perf/arm_pmuv3.c `armv8pmu_start`), which revokes kmod-enable-user's
/// grant on this CPU; [`grant_lost_since`] tells whether that happened.
pub fn backends() -> Vec<BackendStatus> {
    let direct = direct_status();
    vec![perf_status(), direct]
}

/// Whether the direct backend, usable in `before` (from [`backends`]), lost its grant
/// on this CPU since: the note saying so and why, for a listing that opened perf's
/// hardware events after [`backends`].
pub fn grant_lost_since(before: &BackendStatus) -> Option<String> {
    if before.backend != BackendKind::Direct || before.usable.is_err() {
        return None;
    }
    let cpu = crate::machine::sched::current_cpu().map_or(0, |c| c as usize);
    direct_status()
        .usable
        .err()
        .map(|e| format!("after this listing opened perf's hardware events on CPU {cpu}: {e}"))
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn perf_status() -> BackendStatus {
    use crate::perf::{Options, Session};
    let mut notes = Vec::new();
    match sys::perf_event_paranoid() {
        Some(level) => notes.push(format!("kernel.perf_event_paranoid = {level}")),
        None => notes
            .push("no /proc/sys/kernel/perf_event_paranoid: kernel without perf events".to_owned()),
    }
    let usable = Session::open(&["task-clock"], Options::default()).map(drop);
    match Session::open(&["cycles"], Options::default()) {
        Ok(_) => notes.push("hardware counters: available".to_owned()),
        Err(e) => notes.push(format!("hardware counters: {e}")),
    }
    notes.push(format!(
        "one-instruction reads: {}",
        user_read_policy(&Sysfs::system())
    ));
    BackendStatus {
        backend: BackendKind::Perf,
        usable,
        notes,
        grant: None,
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn perf_status() -> BackendStatus {
    BackendStatus {
        backend: BackendKind::Perf,
        usable: Err(Error::Unsupported(crate::error::Unsupported::Perf)),
        notes: Vec::new(),
        grant: None,
    }
}

#[cfg(target_arch = "aarch64")]
fn direct_status() -> BackendStatus {
    // kmod-enable-user grants one of two things: its default, read-only grant (ER on
    // the counters of its layout, which it programs) or, with el0_programming=1, the
    // programming grant (EN: any event). Either lets a Meter measure; both are
    // per CPU, so both are probed on the CPU this thread runs on.
    let cpu = crate::machine::sched::current_cpu().map_or(0, |c| c as usize);
    if crate::direct::grant::per_thread() {
        return thread_grant_status(cpu);
    }
    let mut notes = Vec::new();
    let read_only = crate::direct::armv8::take_granted(cpu).map(|(_pin, _pmu, layout)| layout);
    match &read_only {
        Ok(layout) => notes.push(format!(
            "read-only grant on CPU {cpu}: the module's counters (layout {layout}) are readable; only their events can be measured"
        )),
        Err(e) => notes.push(format!("read-only grant on CPU {cpu}: {e}")),
    }
    let programming = crate::direct::probe();
    match &programming {
        Ok(()) => notes.push(format!(
            "programming grant (PMUSERENR_EL0.EN, el0_programming=1) on CPU {cpu}: any event"
        )),
        Err(e) => notes.push(format!(
            "programming grant (PMUSERENR_EL0.EN, el0_programming=1) on CPU {cpu}: {e}"
        )),
    }
    let scope = crate::GrantScope::CpuWide;
    let grant = match (&programming, &read_only) {
        (Ok(()), _) => Some(crate::Grant::Program { cpu, scope }),
        (_, Ok(_)) => Some(crate::Grant::ReadOnly { cpu, scope }),
        _ => None,
    };
    BackendStatus {
        backend: BackendKind::Direct,
        // Usable under either grant; the read-only grant's reason otherwise (with the
        // module loaded it says whether perf revoked the grant on this CPU).
        usable: programming.or(read_only.map(drop)),
        notes,
        grant,
    }
}

/// The direct backend under kmod-enable-user's per-thread grant: this thread asks
/// for it on `cpu` (and gives it back at once). The notes begin as the CPU-wide
/// grant's do.
#[cfg(target_arch = "aarch64")]
fn thread_grant_status(cpu: usize) -> BackendStatus {
    let programming =
        format!("programming grant (PMUSERENR_EL0.EN, el0_programming=1) on CPU {cpu}");
    let (usable, notes, grant) = match crate::direct::armv8::take_thread_granted(cpu) {
        Ok((_pin, access, _pmu, layout)) => {
            let scope = access.scope();
            let program = access.programs();
            let grant = if program {
                crate::Grant::Program { cpu, scope }
            } else {
                crate::Grant::ReadOnly { cpu, scope }
            };
            let notes = vec![
                format!(
                    "read-only grant on CPU {cpu}: {scope}, asked of /dev/kmod_enable_user by \
                     this thread: the module's counters (layout {layout}) are readable; only \
                     their events can be measured"
                ),
                if program {
                    format!("{programming}: any event")
                } else {
                    format!(
                        "{programming}: not given with this thread's grant (the module was \
                         loaded without el0_programming=1)"
                    )
                },
            ];
            (Ok(()), notes, Some(grant))
        }
        Err(e) => {
            let notes = vec![
                format!("read-only grant on CPU {cpu}: {e}"),
                format!("{programming}: {e}"),
            ];
            (Err(e), notes, None)
        }
    };
    BackendStatus {
        backend: BackendKind::Direct,
        usable,
        notes,
        grant,
    }
}

#[cfg(not(target_arch = "aarch64"))]
fn direct_status() -> BackendStatus {
    let mut notes = Vec::new();
    if cfg!(target_arch = "arm") {
        notes.push("ARM1176 User-mode access needs SUNAVCR.V from kmod-enable-user (ARM1176JZF-S TRM 3.2.50); the probe read PMCR in a child process on CPU 0".to_owned());
    }
    let usable = crate::direct::probe();
    let grant = usable.is_ok().then_some(crate::Grant::Program {
        cpu: 0,
        scope: crate::GrantScope::CpuWide,
    });
    BackendStatus {
        backend: BackendKind::Direct,
        usable,
        notes,
        grant,
    }
}

/// One reason this machine offers no hardware counters.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NoCounters {
    /// No core PMU in the sysfs tree at `root`: no PMU driver bound.
    NoCorePmu {
        /// The tree looked at.
        root: PathBuf,
    },
    /// A virtual machine (cpuinfo's `hypervisor` flag) whose hypervisor gives it no
    /// virtual PMU.
    VirtualMachine,
    /// `kernel.perf_event_paranoid` above 2 forbids perf to this unprivileged user.
    Paranoid {
        /// The level.
        level: i32,
    },
}

impl fmt::Display for NoCounters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoCorePmu { root } => write!(
                f,
                "the kernel registered no CPU PMU ({} has no cpu/armv8_pmuv3 entry): no PMU \
                 driver bound",
                root.display()
            ),
            Self::VirtualMachine => f.write_str(
                "this is a virtual machine (cpuinfo flag `hypervisor`): its hypervisor gives \
                 it no virtual PMU (KVM: enable_pmu, -cpu …,pmu=on)",
            ),
            Self::Paranoid { level } => write!(
                f,
                "kernel.perf_event_paranoid = {level} forbids perf for unprivileged users: \
                 `sysctl kernel.perf_event_paranoid=2`"
            ),
        }
    }
}

/// Why this machine offers no hardware counters, as far as files anyone may read tell:
/// no core PMU registered in `sysfs`, a virtual machine, a paranoid level that forbids
/// perf. Empty when a core PMU is there and nothing stands in the way.
pub fn why_no_hardware_counters(sysfs: &Sysfs) -> Vec<NoCounters> {
    let mut why = Vec::new();
    let core_pmu = sysfs
        .pmus()
        .map(|pmus| pmus.iter().any(|p| is_cpu_pmu(&p.name)))
        .unwrap_or(false);
    if !core_pmu {
        why.push(NoCounters::NoCorePmu {
            root: sysfs.root().to_path_buf(),
        });
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let virtual_machine = cpuinfo
            .lines()
            .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
        if virtual_machine {
            why.push(NoCounters::VirtualMachine);
        }
    }
    // perf_event_paranoid binds unprivileged users only: perfmon_capable() (root, or
    // CAP_PERFMON) passes every level (kernel/events/core.c, perf_allow_cpu and
    // perf_allow_kernel, Linux 6.12). As root it stands in nobody's way here.
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if let Some(level) = sys::perf_event_paranoid().filter(|&l| l > 2 && !root) {
        why.push(NoCounters::Paranoid { level });
    }
    why
}

/// An event and whether it can be counted here.
#[derive(Debug)]
pub struct EventStatus {
    /// The name.
    pub name: String,
    /// What it resolved to, if it did.
    pub spec: Option<EventSpec>,
    /// `Ok` when the kernel accepted it (opened alone, then closed); the reason when
    /// not.
    pub status: Result<()>,
}

/// Resolves and opens each of `names` alone (never enabled) to see whether this
/// machine can count it.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn probe_events(
    sysfs: &Sysfs,
    names: &[&str],
    options: crate::perf::Options,
) -> Vec<EventStatus> {
    names
        .iter()
        .map(|name| match events::resolve(name, sysfs) {
            Ok(spec) => EventStatus {
                name: (*name).to_owned(),
                status: crate::perf::Session::from_specs(
                    vec![spec.clone()],
                    options.map_pages(false),
                )
                .map(drop),
                spec: Some(spec),
            },
            Err(e) => EventStatus {
                name: (*name).to_owned(),
                spec: None,
                status: Err(e),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::sysfs::fake;

    /// A tree with a core PMU has nothing to explain; an empty one (a VM without vPMU has
    /// no `cpu` directory) says that no PMU driver is bound.
    #[test]
    fn why_no_hardware_counters_reads_the_tree() {
        let dir = tempfile::tempdir().unwrap();
        fake::intel(dir.path());
        let with_pmu = why_no_hardware_counters(&Sysfs::at(dir.path()));
        assert!(
            with_pmu
                .iter()
                .all(|w| matches!(w, NoCounters::Paranoid { .. })),
            "{with_pmu:?}"
        );
        let empty = tempfile::tempdir().unwrap();
        let without = why_no_hardware_counters(&Sysfs::at(empty.path()));
        assert_eq!(
            without[0],
            NoCounters::NoCorePmu {
                root: empty.path().to_path_buf()
            }
        );
        assert!(without[0].to_string().ends_with("no PMU driver bound"));
        assert!(is_cpu_pmu("cpu_atom") && is_cpu_pmu("armv8_pmuv3_0") && !is_cpu_pmu("software"));
    }

    #[test]
    fn policy_from_a_fake_x86_tree() {
        let dir = tempfile::tempdir().unwrap();
        fake::intel(dir.path());
        fs::write(dir.path().join("cpu/rdpmc"), "1\n").unwrap();
        let policy = user_read_policy(&Sysfs::at(dir.path()));
        assert!(
            matches!(&policy, UserReadPolicy::X86 { value: 1, .. }),
            "{policy:?}"
        );
        assert!(policy.to_string().contains("while a perf event is mapped"));
    }

    /// On this VM without vPMU: software events open, `cycles` is refused as not
    /// supported, a misspelt name is an unknown event.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn probing_events_gives_a_reason_for_each() {
        let sysfs = Sysfs::system();
        let has_core_pmu = sysfs.pmus().unwrap().iter().any(|p| p.is_core());
        let statuses = probe_events(
            &sysfs,
            &["task-clock", "cycles", "cyclez"],
            crate::perf::Options::default(),
        );
        assert!(matches!(statuses[0].status, Ok(())));
        assert_eq!(
            statuses[1].status.is_ok(),
            has_core_pmu,
            "{:?}",
            statuses[1].status
        );
        assert!(matches!(
            statuses[2].status,
            Err(crate::Error::Event(
                crate::error::EventError::Unknown { .. }
            ))
        ));
        assert!(statuses[2].spec.is_none());
        let perf = backends()
            .into_iter()
            .find(|b| b.backend == BackendKind::Perf)
            .unwrap();
        assert!(matches!(perf.usable, Ok(())));
    }
}
