//! What this machine offers, with the reason for everything it does not: the backends
//! that work here and why not the others ([`backends`]), the user-read policy, the
//! PMUs in sysfs and their events, event names, the CPUs this thread may run on, and
//! the time-stamp counter.

use std::fmt;
use std::fs;
use std::path::PathBuf;

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
use crate::error::Error;
use crate::error::Result;
use crate::sys;

pub(crate) mod events;
pub(crate) mod rseq;
pub(crate) mod sched;
pub(crate) mod sysfs;
pub(crate) mod timestamp;

pub use crate::sys::{perf_event_paranoid, perf_user_access};
pub use events::{
    builtin_names, direct_event, parse_raw, resolve, resolve_builtin, EventKind, EventSpec,
};
pub use rseq::{RseqOwner, ThreadCpu};
pub use sched::{
    allowed_cpus, current_cpu, pin_to, set_allowed_cpus, thread_switches, Kernel, PinGuard,
    SwitchCounts, ThreadSource,
};
pub use sysfs::{is_cpu_pmu, ConfigWord, FormatField, Pmu, Sysfs, SYSTEM_ROOT};
pub use timestamp::{ticks, TickSource, TimestampCounter, TimestampMeter, NAME};

/// A backend of this library.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// perf_event_open, reads through the metadata page or `read()`.
    Perf,
    /// The library programs the PMU itself after the enable module.
    Direct,
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Perf => "perf",
            Self::Direct => "direct",
        })
    }
}

/// Whether a backend works here, and what else is worth knowing.
#[derive(Debug)]
pub struct BackendStatus {
    /// The backend.
    pub backend: Backend,
    /// `Ok` when it can measure; the reason when not.
    pub usable: Result<()>,
    /// Details: hardware counters, the user-read policy, the paranoid level.
    pub notes: Vec<String>,
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
    if before.backend != Backend::Direct || before.usable.is_err() {
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
        backend: Backend::Perf,
        usable,
        notes,
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn perf_status() -> BackendStatus {
    BackendStatus {
        backend: Backend::Perf,
        usable: Err(Error::Unsupported(crate::error::Unsupported::Perf)),
        notes: Vec::new(),
    }
}

#[cfg(target_arch = "aarch64")]
fn direct_status() -> BackendStatus {
    // kmod-enable-user grants one of two things: its default, read-only grant (ER on
    // the counters of its layout, which it programs) or, with el0_programming=1, the
    // programming grant (EN: any event). Either lets a Meter measure; both are
    // per CPU, so both are probed on the CPU this thread runs on.
    let cpu = crate::machine::sched::current_cpu().map_or(0, |c| c as usize);
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
    BackendStatus {
        backend: Backend::Direct,
        // Usable under either grant; the read-only grant's reason otherwise (with the
        // module loaded it says whether perf revoked the grant on this CPU).
        usable: programming.or(read_only.map(drop)),
        notes,
    }
}

#[cfg(not(target_arch = "aarch64"))]
fn direct_status() -> BackendStatus {
    let mut notes = Vec::new();
    if cfg!(target_arch = "arm") {
        notes.push("ARM1176 User-mode access needs SUNAVCR.V from kmod-enable-user (ARM1176JZF-S TRM 3.2.50); the probe read PMCR in a child process on CPU 0".to_owned());
    }
    BackendStatus {
        backend: Backend::Direct,
        usable: crate::direct::probe(),
        notes,
    }
}

/// One event of the ARM1176 table, as `pmu-demo list` shows it on 32-bit ARM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arm1176EventInfo {
    /// The event number (PMCR.EvtCount0/1 field value).
    pub code: u8,
    /// The name to give `--events`: the generic perf name where one maps to the event
    /// (`instructions`), `r<hex>` otherwise (`r0c`).
    pub name: String,
    /// The raw name, `r<hex>`: always accepted too.
    pub raw: String,
    /// What it counts (TRM Table 3-137).
    pub description: &'static str,
    /// Where it can be counted.
    pub counters: &'static str,
}

/// The ARM1176 events the direct backend counts: the 24 selectable events and 0xFF
/// (pmu-armv6 `Arm1176Event::ALL`), each with the name `--events` takes for it.
pub fn arm1176_events() -> Vec<Arm1176EventInfo> {
    use pmu_armv6::Arm1176Event;
    use pmu_core::{EventEncoding, GenericEvent};
    Arm1176Event::ALL
        .into_iter()
        .map(|event| {
            let generic = GenericEvent::ALL
                .into_iter()
                .find(|g| Arm1176Event::from_generic(*g) == Some(event));
            let raw = format!("r{:02x}", event.code());
            Arm1176EventInfo {
                code: event.code(),
                name: generic.map_or_else(|| raw.clone(), |g| g.perf_name().to_owned()),
                raw,
                description: event.name(),
                counters: if event == Arm1176Event::CycleCount {
                    "CCR (as `cycles`; /64 with --cycle-divider 64), or CR0/CR1 (as rff)"
                } else {
                    "CR0 or CR1"
                },
            }
        })
        .collect()
}

/// A `<pmu>/event=…/` example for this machine: retired instructions on its CPU PMU,
/// event 0x08 on ARMv7/ARMv8 (INST_RETIRED, a common event of the Arm ARM, DDI 0487),
/// 0x07 on the ARM1136/1176 (Linux 6.12 drivers/perf/arm_v6_pmu.c
/// `ARMV6_PERFCTR_INSTR_EXEC`) and 0xc0 on x86 (INST_RETIRED.ANY_P on Intel, "Retired
/// Instructions" on AMD: the same code on both). The PMU is the one sysfs registers
/// (`cpu`, `cpu_core`, `armv8_pmuv3_0`, `armv8_cortex_a53`, `armv6_1176`, …); where
/// there is none, the name Linux gives it on this architecture (`cpu` on x86,
/// `armv8_pmuv3_0` on arm64 from drivers/perf/arm_pmuv3.c, `armv6_1176` on 32-bit ARM,
/// the only core this library's 32-bit build supports) and `registered` false.
pub fn pmu_event_example(sysfs: &Sysfs) -> PmuEventExample {
    let mut names: Vec<String> = sysfs
        .pmu_names()
        .unwrap_or_default()
        .into_iter()
        .filter(|n| is_cpu_pmu(n))
        .collect();
    names.sort();
    let (pmu, registered) = match names.into_iter().next() {
        Some(name) => (name, true),
        None if cfg!(target_arch = "aarch64") => ("armv8_pmuv3_0".to_owned(), false),
        None if cfg!(target_arch = "arm") => ("armv6_1176".to_owned(), false),
        None => ("cpu".to_owned(), false),
    };
    let code = if pmu.starts_with("armv6") {
        0x07
    } else if pmu.starts_with("armv") {
        0x08
    } else {
        0xc0
    };
    PmuEventExample {
        event: format!("{pmu}/event={code:#04x}/"),
        raw: format!("r{code:02x}"),
        registered,
    }
}

/// What [`pmu_event_example`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PmuEventExample {
    /// `<pmu>/event=<code>/`, retired instructions.
    pub event: String,
    /// The same code as a raw event, `r<hex>`.
    pub raw: String,
    /// The PMU is registered in sysfs here (else the architecture's usual name).
    pub registered: bool,
}

/// Why this machine offers no hardware counters, as far as files anyone may read tell:
/// no core PMU registered in `sysfs`, a virtual machine, a paranoid level that forbids
/// perf. Empty when a core PMU is there and nothing stands in the way.
pub fn why_no_hardware_counters(sysfs: &Sysfs) -> Vec<String> {
    let mut why = Vec::new();
    let core_pmu = sysfs
        .pmus()
        .map(|pmus| pmus.iter().any(|p| is_cpu_pmu(&p.name)))
        .unwrap_or(false);
    if !core_pmu {
        why.push(format!(
            "the kernel registered no CPU PMU ({} has no cpu/armv8_pmuv3 entry): no PMU driver bound",
            sysfs.root().display()
        ));
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let virtual_machine = cpuinfo
            .lines()
            .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
        if virtual_machine {
            why.push(
                "this is a virtual machine (cpuinfo flag `hypervisor`): its hypervisor gives it no \
                 virtual PMU (KVM: enable_pmu, -cpu …,pmu=on)"
                    .into(),
            );
        }
    }
    // perf_event_paranoid binds unprivileged users only: perfmon_capable() (root, or
    // CAP_PERFMON) passes every level (kernel/events/core.c, perf_allow_cpu and
    // perf_allow_kernel, Linux 6.12). As root it stands in nobody's way here.
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if let Some(level) = sys::perf_event_paranoid().filter(|&l| l > 2 && !root) {
        why.push(format!(
            "kernel.perf_event_paranoid = {level} forbids perf for unprivileged users: \
             `sysctl kernel.perf_event_paranoid=2`"
        ));
    }
    why
}

/// The PMUs sysfs describes.
///
/// # Errors
/// [`crate::Error::Io`] when the root cannot be listed.
pub fn pmus(sysfs: &Sysfs) -> Result<Vec<Pmu>> {
    sysfs.pmus()
}

/// Every event name this library knows here: the built-in perf names, then
/// `<pmu>/<alias>/` for every sysfs alias.
pub fn event_names(sysfs: &Sysfs) -> Vec<String> {
    let mut names: Vec<String> = events::builtin_names()
        .into_iter()
        .map(str::to_owned)
        .collect();
    for pmu in sysfs.pmus().unwrap_or_default() {
        names.extend(
            pmu.events
                .keys()
                .map(|alias| format!("{}/{alias}/", pmu.name)),
        );
    }
    names
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
            with_pmu.iter().all(|w| w.contains("perf_event_paranoid")),
            "{with_pmu:?}"
        );
        let empty = tempfile::tempdir().unwrap();
        let without = why_no_hardware_counters(&Sysfs::at(empty.path()));
        assert!(without[0].contains("no PMU driver bound"), "{without:?}");
        assert!(is_cpu_pmu("cpu_atom") && is_cpu_pmu("armv8_pmuv3_0") && !is_cpu_pmu("software"));
    }

    /// The `--events` example names the PMU sysfs has: `cpu` with x86's retired
    /// instructions (0xc0), `armv8_pmuv3_0` with Arm's INST_RETIRED (0x08); with no CPU
    /// PMU (this VM) the architecture's usual name, flagged as not registered.
    #[test]
    fn pmu_event_example_follows_sysfs() {
        let dir = tempfile::tempdir().unwrap();
        fake::intel(dir.path());
        let x86 = pmu_event_example(&Sysfs::at(dir.path()));
        assert_eq!(
            x86,
            PmuEventExample {
                event: "cpu/event=0xc0/".into(),
                raw: "rc0".into(),
                registered: true
            }
        );
        let dir = tempfile::tempdir().unwrap();
        fake::arm64(dir.path());
        let arm = pmu_event_example(&Sysfs::at(dir.path()));
        assert_eq!(arm.event, "armv8_pmuv3_0/event=0x08/");
        assert!(arm.registered);
        // Every example resolves against the tree it came from.
        assert!(events::resolve(&arm.event, &Sysfs::at(dir.path())).is_ok());
        let empty = tempfile::tempdir().unwrap();
        let none = pmu_event_example(&Sysfs::at(empty.path()));
        assert!(!none.registered);
        let expected = if cfg!(target_arch = "aarch64") {
            "armv8_pmuv3_0/event=0x08/"
        } else if cfg!(target_arch = "arm") {
            "armv6_1176/event=0x07/"
        } else {
            "cpu/event=0xc0/"
        };
        assert_eq!(none.event, expected);
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
            .find(|b| b.backend == Backend::Perf)
            .unwrap();
        assert!(matches!(perf.usable, Ok(())));
    }

    /// The table `pmu-demo list` prints on 32-bit ARM: 24 selectable events plus 0xFF
    /// (ARM1176JZF-S TRM Table 3-137: 0x08 and 0x0E are reserved), and every name
    /// it offers is one `--backend direct` accepts for exactly that event number.
    #[test]
    fn arm1176_event_list_names_what_the_direct_backend_takes() {
        use pmu_armv6::Arm1176Event;
        use pmu_core::{Event, EventEncoding};
        let list = arm1176_events();
        assert_eq!(list.len(), 25);
        assert_eq!(list.iter().filter(|e| e.code != 0xFF).count(), 24);
        for info in &list {
            for name in [&info.name, &info.raw] {
                let code = match events::direct_event(name).unwrap() {
                    Event::Generic(g) => Arm1176Event::from_generic(g).unwrap().code(),
                    Event::Raw(raw) => Arm1176Event::from_raw(raw).unwrap().code(),
                };
                assert_eq!(code, info.code, "{name}");
            }
        }
        // Linux's armv6_perf_map (drivers/perf/arm_v6_pmu.c): instructions 0x07,
        // branches 0x05, branch-misses 0x06, cycles 0xFF.
        let name_of = |code: u8| list.iter().find(|e| e.code == code).unwrap().name.clone();
        assert_eq!(name_of(0x07), "instructions");
        assert_eq!(name_of(0x05), "branches");
        assert_eq!(name_of(0x06), "branch-misses");
        assert_eq!(name_of(0xFF), "cycles");
        assert_eq!(name_of(0x0C), "r0c");
    }

    #[test]
    fn event_names_include_sysfs_aliases() {
        let dir = tempfile::tempdir().unwrap();
        fake::hybrid(dir.path());
        let names = event_names(&Sysfs::at(dir.path()));
        assert!(names.contains(&"task-clock".to_owned()));
        assert!(names.contains(&"cpu_atom/topdown-retiring/".to_owned()));
        let sysfs = Sysfs::at(dir.path());
        for name in &names {
            assert!(events::resolve(name, &sysfs).is_ok(), "{name}");
        }
    }
}
