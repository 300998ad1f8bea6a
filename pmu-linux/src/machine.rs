//! What this machine is, with the reason for everything it does not offer: the
//! user-read policy, why there are no hardware counters, the PMUs in sysfs and their
//! events, event names, the CPUs this thread may run on, and the time-stamp counter.
//! Which backends work here is the meter's to say ([`crate::survey::Survey`]: it asks the
//! ladder's own rungs).

use std::fmt;
use std::fs;
use std::path::PathBuf;

use crate::sys;
use sysfs::is_cpu_pmu;

pub(crate) mod cpu;
// Read by the perf backend's meter, which 32-bit ARM has not.
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
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
pub use events::EventKind;
// The rigs' view (the crate docs' "Feature `rig`").
#[cfg(feature = "rig")]
pub use events::EventSpec;
// The CPUs a thread may run on, and moving it (what a program does to its own thread, as
// pmu-demo's hazards does to force a migration). Pinning for a meter is the meter's
// (`MeterBuilder::cpu`); the rigs pin by hand (the crate docs' "Feature `rig`").
pub use sched::{allowed_cpus, set_allowed_cpus};
#[cfg(feature = "rig")]
pub use sched::{current_cpu, pin_to, PinGuard};
pub use sysfs::{ConfigWord, FormatField, Pmu, Sysfs};
pub use timestamp::NAME;

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
pub(crate) fn user_read_policy(sysfs: &Sysfs) -> UserReadPolicy {
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
pub(crate) fn why_no_hardware_counters(sysfs: &Sysfs) -> Vec<NoCounters> {
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
}
