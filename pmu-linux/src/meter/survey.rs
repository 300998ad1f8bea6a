//! What this machine offers, surveyed through the meter: every backend and whether it
//! works here, asked of the ladder's own rungs (perf: [`crate::MeterBuilder::backend`],
//! so that "usable" means the meter opens it; the direct backend: the grant checks its
//! `open` makes, without taking the PMU over), the
//! user-read policy, why there are no hardware counters, the PMUs in sysfs, and which
//! events open.

use crate::backend::{BackendKind, GrantCheck, ThreadGrantFound};
use crate::error::Result;
use crate::machine::sysfs::{Pmu, Sysfs};
use crate::machine::{user_read_policy, why_no_hardware_counters, NoCounters, UserReadPolicy};
use crate::sys;

use super::Meter;

/// What this machine offers, with the reason for everything it does not: what
/// `pmu-demo list` prints.
#[derive(Debug)]
#[non_exhaustive]
pub struct Survey {
    /// Every backend and whether it works here (perf, then direct).
    pub backends: Vec<BackendStatus>,
    /// The kernel's policy for one-instruction reads from user space.
    pub user_reads: UserReadPolicy,
    /// Why there are no hardware counters, as far as files anyone may read tell; empty
    /// when a core PMU is there and nothing stands in the way.
    pub no_hardware: Vec<NoCounters>,
    /// The PMUs in sysfs.
    pub pmus: Vec<Pmu>,
    /// The events asked for, each opened alone (never enabled); empty where this
    /// library has no perf backend (32-bit ARM).
    pub events: Vec<EventStatus>,
}

impl Survey {
    /// Surveys this machine (`sysfs`: where PMUs and event names are read), probing
    /// `events` one by one.
    ///
    /// The backends are surveyed first: on arm64, opening perf's hardware events (the
    /// perf backend's survey and the event probes) starts the PMU on this CPU, and
    /// Linux then writes PMUSERENR_EL0 = 0 there for a task without user-readable
    /// events (drivers/perf/arm_pmuv3.c `armv8pmu_start`, Linux 6.12), which revokes
    /// kmod-enable-user's grant on this CPU. The direct backend is asked again after
    /// the event probes, and a grant lost meanwhile is a note of its own.
    pub fn take(sysfs: &Sysfs, events: &[&str]) -> Self {
        let direct = direct_status();
        let mut backends = vec![perf_status(), direct];
        let pmus = sysfs.pmus().unwrap_or_default();
        let events = probe_events(sysfs, events);
        for status in &mut backends {
            if let Some(note) = grant_lost_since(status) {
                status.notes.push(note);
            }
        }
        Self {
            backends,
            user_reads: user_read_policy(sysfs),
            no_hardware: why_no_hardware_counters(sysfs),
            pmus,
            events,
        }
    }
}

/// Whether a backend works here, and what else is worth knowing.
#[derive(Debug)]
pub struct BackendStatus {
    /// The backend.
    pub backend: BackendKind,
    /// `Ok` when it can measure; the reason when not.
    pub usable: Result<()>,
    /// Details: hardware counters, the user-read policy, the paranoid level, the
    /// grants.
    pub notes: Vec<String>,
    /// The direct backend's grant, where it is usable: whose it is and what it allows.
    pub grant: Option<crate::backend::Grant>,
}

/// Whether the meter opens `kind` for the event `name` alone: the rungs
/// [`MeterBuilder::backend`] walks for that backend, without the kernel-entry sentinel.
///
/// [`MeterBuilder::backend`]: super::MeterBuilder::backend
fn opens(kind: BackendKind, name: &str) -> Result<()> {
    let mut builder = Meter::builder();
    builder.add_named(name)?;
    builder
        .backend(kind)
        .kernel_sentinel(false)
        .build()
        .map(drop)
}

/// Whether the direct backend, usable in `before`, lost its grant on this CPU since:
/// the note saying so and why.
fn grant_lost_since(before: &BackendStatus) -> Option<String> {
    if before.backend != BackendKind::Direct || before.usable.is_err() {
        return None;
    }
    let cpu = crate::machine::sched::current_cpu().map_or(0, |c| c as usize);
    direct_status()
        .usable
        .err()
        .map(|e| format!("after this listing opened perf's hardware events on CPU {cpu}: {e}"))
}

/// perf: usable where the meter opens `task-clock` with it; the notes say whether it
/// opens `cycles` too (hardware counters), with the paranoid level and the user-read
/// policy. Where this library has no perf backend (32-bit ARM) the meter's refusal
/// alone.
fn perf_status() -> BackendStatus {
    let usable = opens(BackendKind::Perf, "task-clock");
    let mut notes = Vec::new();
    if super::perf_rungs::AVAILABLE {
        match sys::perf_event_paranoid() {
            Some(level) => notes.push(format!("kernel.perf_event_paranoid = {level}")),
            None => notes.push(
                "no /proc/sys/kernel/perf_event_paranoid: kernel without perf events".to_owned(),
            ),
        }
        match opens(BackendKind::Perf, "cycles") {
            Ok(()) => notes.push("hardware counters: available".to_owned()),
            Err(e) => notes.push(format!("hardware counters: {e}")),
        }
        notes.push(format!(
            "one-instruction reads: {}",
            user_read_policy(&Sysfs::system())
        ));
    }
    BackendStatus {
        backend: BackendKind::Perf,
        usable,
        notes,
        grant: None,
    }
}

/// The direct backend: the grants its own checks find on the CPU this thread runs on
/// ([`crate::direct::grants`], the PMU never taken over). kmod-enable-user grants one
/// of two things: its default, read-only grant (ER on the counters of its layout, which
/// it programs) or, with el0_programming=1, the programming grant (EN: any event).
/// Either lets a Meter measure; both are per CPU (or, in the module's per-thread mode,
/// this thread's).
fn direct_status() -> BackendStatus {
    let cpu = crate::machine::sched::current_cpu().map_or(0, |c| c as usize);
    let (usable, notes, grant) = match crate::direct::grants(cpu) {
        GrantCheck::CpuWide {
            cpu,
            read_only,
            programming,
        } => cpu_wide_status(cpu, read_only, programming),
        GrantCheck::Thread { cpu, granted } => thread_grant_status(cpu, granted),
        GrantCheck::Programming(usable) => {
            let notes = vec!["ARM1176 User-mode access needs SUNAVCR.V from kmod-enable-user (ARM1176JZF-S TRM 3.2.50); the probe read PMCR in a child process on CPU 0".to_owned()];
            let grant = usable.is_ok().then_some(crate::backend::Grant::Program {
                cpu: 0,
                scope: crate::backend::GrantScope::CpuWide,
            });
            (usable, notes, grant)
        }
        GrantCheck::Unsupported(why) => (Err(why), Vec::new(), None),
    };
    BackendStatus {
        backend: BackendKind::Direct,
        usable,
        notes,
        grant,
    }
}

/// What a status says: usable or why not, the notes, the grant.
type Status = (Result<()>, Vec<String>, Option<crate::backend::Grant>);

/// The module's CPU-wide grants on `cpu`: one note each; usable under either (the
/// read-only grant's reason otherwise: with the module loaded it says whether perf
/// revoked the grant on this CPU).
fn cpu_wide_status(cpu: usize, read_only: Result<String>, programming: Result<()>) -> Status {
    let mut notes = Vec::new();
    match &read_only {
        Ok(layout) => notes.push(format!(
            "read-only grant on CPU {cpu}: the module's counters (layout {layout}) are readable; only their events can be measured"
        )),
        Err(e) => notes.push(format!("read-only grant on CPU {cpu}: {e}")),
    }
    match &programming {
        Ok(()) => notes.push(format!(
            "programming grant (PMUSERENR_EL0.EN, el0_programming=1) on CPU {cpu}: any event"
        )),
        Err(e) => notes.push(format!(
            "programming grant (PMUSERENR_EL0.EN, el0_programming=1) on CPU {cpu}: {e}"
        )),
    }
    let scope = crate::backend::GrantScope::CpuWide;
    let grant = match (&programming, &read_only) {
        (Ok(()), _) => Some(crate::backend::Grant::Program { cpu, scope }),
        (_, Ok(_)) => Some(crate::backend::Grant::ReadOnly { cpu, scope }),
        _ => None,
    };
    (programming.or(read_only.map(drop)), notes, grant)
}

/// This thread's grant on `cpu` under kmod-enable-user's per-thread mode (asked for
/// and given back at once). The notes begin as the CPU-wide grant's do.
fn thread_grant_status(cpu: usize, granted: Result<ThreadGrantFound>) -> Status {
    let programming =
        format!("programming grant (PMUSERENR_EL0.EN, el0_programming=1) on CPU {cpu}");
    match granted {
        Ok(ThreadGrantFound {
            layout,
            scope,
            programs,
        }) => {
            let grant = if programs {
                crate::backend::Grant::Program { cpu, scope }
            } else {
                crate::backend::Grant::ReadOnly { cpu, scope }
            };
            let notes = vec![
                format!(
                    "read-only grant on CPU {cpu}: {scope}, asked of /dev/kmod_enable_user by \
                     this thread: the module's counters (layout {layout}) are readable; only \
                     their events can be measured"
                ),
                if programs {
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
    }
}

/// An event and whether it can be counted here.
#[derive(Debug)]
#[non_exhaustive]
pub struct EventStatus {
    /// The name.
    pub name: String,
    /// `Ok` when the kernel accepted it (opened alone, then closed); the reason when
    /// not.
    pub status: Result<()>,
}

/// Resolves and opens each of `names` alone through perf (never enabled) to see
/// whether this machine can count it.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn probe_events(sysfs: &Sysfs, names: &[&str]) -> Vec<EventStatus> {
    use crate::perf::{Options, Session};
    names
        .iter()
        .map(|name| EventStatus {
            name: (*name).to_owned(),
            status: crate::machine::events::resolve(name, sysfs).and_then(|spec| {
                Session::from_specs(vec![spec], Options::default().map_pages(false)).map(drop)
            }),
        })
        .collect()
}

/// No perf backend here (32-bit ARM): nothing to open; the backends say why.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn probe_events(_: &Sysfs, _: &[&str]) -> Vec<EventStatus> {
    Vec::new()
}

#[cfg(all(test, any(target_arch = "x86_64", target_arch = "aarch64")))]
mod tests {
    use super::*;

    /// On this VM without vPMU: software events open, `cycles` is refused as not
    /// supported, a misspelt name is an unknown event.
    #[test]
    fn probing_events_gives_a_reason_for_each() {
        let sysfs = Sysfs::system();
        let has_core_pmu = sysfs.pmus().unwrap().iter().any(|p| p.is_core());
        let survey = Survey::take(&sysfs, &["task-clock", "cycles", "cyclez"]);
        let statuses = &survey.events;
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
        let perf = survey
            .backends
            .iter()
            .find(|b| b.backend == BackendKind::Perf)
            .unwrap();
        assert!(matches!(perf.usable, Ok(())));
    }

    /// The survey and the meter say the same: perf's hardware note is what
    /// `MeterBuilder::backend(Perf)` does with `cycles`, and on x86 the direct backend
    /// is the meter's own refusal (WRMSR needs ring 0: Intel SDM Vol. 2B, WRMSR).
    #[test]
    fn the_survey_says_what_the_meter_opens() {
        let survey = Survey::take(&Sysfs::system(), &[]);
        let perf = &survey.backends[0];
        assert_eq!(perf.backend, BackendKind::Perf);
        let mut builder = Meter::builder();
        builder.add_named("cycles").unwrap();
        let expected = match builder
            .backend(BackendKind::Perf)
            .kernel_sentinel(false)
            .build()
        {
            Ok(_) => "hardware counters: available".to_owned(),
            Err(e) => format!("hardware counters: {e}"),
        };
        assert!(perf.notes.contains(&expected), "{:?}", perf.notes);
        assert!(survey.events.is_empty());
        #[cfg(target_arch = "x86_64")]
        assert!(
            matches!(
                survey.backends[1].usable,
                Err(crate::Error::Unsupported(
                    crate::error::Unsupported::Direct {
                        reason: crate::error::DirectUnsupported::X86NeedsRing0
                    }
                ))
            ),
            "{:?}",
            survey.backends[1].usable
        );
    }
}
