//! The perf backend's rungs of the meter's ladder ([`crate::meter::choose`]), and the
//! meter's inner backend with perf's session inline (its region reads are the hot
//! path: no pointer to follow). 32-bit ARM has none of this (`no_perf.rs`).

use pmu_core::{Reading, RegionMeter};

use super::{Options, Session};
use crate::backend::Backend;
use crate::error::Result;
use crate::events::{self, EventKind, EventSpec};
use crate::hybrid::{CoreTopology, HybridSession, PmuShare};
use crate::meter::choose::{counts_hardware, Opened, Reads, Refusal};
use crate::meter::{BackendKind, MeterBuilder};
use crate::verdict::FallbackReason;

/// This library has a perf backend here.
pub(crate) const AVAILABLE: bool = true;

/// The meter's perf settings.
pub(crate) type Settings = Options;

impl MeterBuilder {
    /// How the perf backend opens events.
    pub fn perf_options(&mut self, options: Options) -> &mut Self {
        self.perf = options;
        self
    }
}

/// The perf session options: [`MeterBuilder::perf_options`] with the sentinel as
/// [`MeterBuilder::kernel_sentinel`] says.
fn session_options(builder: &MeterBuilder) -> Options {
    builder.perf.kernel_sentinel(builder.sentinel)
}

/// The backend underneath a meter: perf's sessions inline, anything else behind
/// [`Backend`]. A meter is built once, so its size does not matter.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Inner {
    Perf(Session),
    /// Generic events on every core PMU of a heterogeneous machine.
    Hybrid(HybridSession),
    Other(Box<dyn Backend>),
}

impl Inner {
    pub(crate) fn backend(&mut self) -> &mut dyn Backend {
        match self {
            Self::Perf(session) => session,
            Self::Hybrid(session) => session,
            Self::Other(other) => &mut **other,
        }
    }

    pub(crate) fn backend_ref(&self) -> &dyn Backend {
        match self {
            Self::Perf(session) => session,
            Self::Hybrid(session) => session,
            Self::Other(other) => &**other,
        }
    }

    #[inline(always)]
    pub(crate) fn start(&mut self) -> Result<()> {
        match self {
            Self::Perf(session) => RegionMeter::start(session),
            Self::Hybrid(session) => RegionMeter::start(session),
            Self::Other(other) => other.start(),
        }
    }

    #[inline(always)]
    pub(crate) fn stop(&mut self, out: &mut [Reading]) -> Result<()> {
        match self {
            Self::Perf(session) => RegionMeter::stop(session, out),
            Self::Hybrid(session) => RegionMeter::stop(session, out),
            Self::Other(other) => other.stop(out),
        }
    }

    /// Each core PMU's share of reading `slot`, where the events are summed over
    /// several.
    pub(crate) fn split(&self, slot: usize) -> Option<Vec<PmuShare>> {
        match self {
            Self::Hybrid(session) => Some(session.split(slot)),
            _ => None,
        }
    }
}

fn perf_opened(session: Session, events: usize, reads: Reads, account: String) -> Opened {
    Opened {
        names: session.specs().map(|s| s.name.clone()).collect(),
        inner: Inner::Perf(session),
        slots: (0..events).map(Some).collect(),
        kind: BackendKind::Perf,
        reads,
        grant: None,
        account,
        pin: None,
    }
}

/// Rung 1: with two core PMUs or more in sysfs and only generic hardware events (the
/// perf-defined `instructions`, `cycles`, cache events …), a [`HybridSession`]: each
/// event opened on every core PMU with its extended type, and summed. Passes where the
/// machine has one core PMU (or none) or an event belongs to one PMU (raw numbers,
/// `pmu/term=…/`): then the plain session.
pub(crate) fn hybrid(builder: &MeterBuilder, _: &mut Vec<Refusal>) -> Result<Option<Opened>> {
    if !counts_hardware(builder)? {
        return Ok(None);
    }
    let specs = builder.specs()?;
    let Ok(topology) = CoreTopology::discover_in(&builder.sysfs) else {
        return Ok(None);
    };
    let generic = specs
        .iter()
        .all(|s| matches!(s.kind, EventKind::Hardware | EventKind::HwCache));
    if !topology.is_heterogeneous() || !generic {
        return Ok(None);
    }
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|t| crate::hybrid::parse_cpu_list(&t))
        .unwrap_or_default();
    let names: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let session =
        match HybridSession::open_in(&builder.sysfs, &online, &refs, session_options(builder)) {
            Ok(session) => session,
            // The PMUs are listed but cannot count (a VM's sysfs copy, a driver gone):
            // the plain rung finds out and says why.
            Err(e) if e.means_no_hardware_counters() => return Ok(None),
            Err(e) => return Err(e),
        };
    let pmus = session.pmus().join(", ");
    let reads = if session.page_reads() {
        Reads::OneInstruction
    } else {
        Reads::SystemCall
    };
    let account = format!(
        "{} core PMUs ({pmus}): every event opened on each and summed, the share of each in \
         Meter::core_pmu_split; {}",
        session.pmus().len(),
        match reads {
            Reads::OneInstruction => "read with one instruction through the pages",
            Reads::SystemCall => "read with read() (no user-space reads), flagged syscall-fallback",
        }
    );
    Ok(Some(Opened {
        names,
        inner: Inner::Hybrid(session),
        slots: (0..builder.events.len()).map(Some).collect(),
        kind: BackendKind::Perf,
        reads,
        grant: None,
        account,
        pin: None,
    }))
}

/// Rung 3: perf's group. Opens it with one-instruction reads, or with `read()` where
/// the page says why not; without [`MeterBuilder::backend`] refuses where the kernel forbids
/// user reads (the module's grant may still allow them) or finds no hardware counters.
pub(crate) fn perf(builder: &MeterBuilder, refused: &mut Vec<Refusal>) -> Result<Option<Opened>> {
    let specs = builder.specs()?;
    let hardware = specs.iter().any(|s| s.kind != EventKind::Software);
    let auto = builder.choice.is_none();
    let session = match Session::from_specs(specs, session_options(builder)) {
        Ok(session) => session,
        Err(e) if auto && e.means_no_hardware_counters() => {
            let mut notes = crate::list::why_no_hardware_counters(&builder.sysfs);
            if notes.is_empty() {
                notes.push(e.to_string());
            }
            refused.push(Refusal::NoHardwareCounters(notes));
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
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
    let n = builder.events.len();
    Ok(Some(match blocked {
        None if hardware => perf_opened(
            session,
            n,
            Reads::OneInstruction,
            "the kernel lets this thread read every counter with one instruction (rdpmc / mrs \
             through the perf metadata page)"
                .to_owned(),
        ),
        None => perf_opened(
            session,
            n,
            Reads::SystemCall,
            "software events only: the kernel's own counters, read with read()".to_owned(),
        ),
        Some(blocked) => {
            let reason = read_call_reason(blocked);
            // The kernel forbids user reads (perf_user_access = 0): the module's grant
            // may still allow them. (Unmapped pages, asked for, stay with perf.)
            let forbidden = blocked == FallbackReason::Page(pmu_core::Fallback::NoUserAccess);
            if auto && forbidden && crate::direct::READ_ONLY_GRANT {
                refused.push(Refusal::SlowPerfReads(reason));
                return Ok(None);
            }
            perf_opened(session, n, Reads::SystemCall, read_calls(&reason))
        }
    }))
}

/// Rung 6: perf refused its one-instruction reads and the grant did not open either:
/// perf's group read with `read()`.
#[allow(clippy::ptr_arg)] // the ladder's one rung signature
pub(crate) fn perf_read(
    builder: &MeterBuilder,
    refused: &mut Vec<Refusal>,
) -> Result<Option<Opened>> {
    let Some(reason) = refused.iter().find_map(|r| match r {
        Refusal::SlowPerfReads(reason) => Some(reason.clone()),
        _ => None,
    }) else {
        return Ok(None);
    };
    let session = Session::from_specs(builder.specs()?, session_options(builder))?;
    Ok(Some(perf_opened(
        session,
        builder.events.len(),
        Reads::SystemCall,
        read_calls(&reason),
    )))
}

fn read_call_reason(blocked: FallbackReason) -> String {
    match blocked {
        FallbackReason::Page(f) => f.to_string(),
        other => other.to_string(),
    }
}

fn read_calls(reason: &str) -> String {
    format!("every read is a read() system call ({reason}), flagged syscall-fallback")
}

/// The software backend's perf part: the software events asked for plus `task-clock`
/// (leading), with `slots` and `names` pointed at them.
///
/// # Errors
/// perf's open errors.
pub(crate) fn software_events(
    builder: &MeterBuilder,
    names: &mut Vec<String>,
    slots: &mut Vec<Option<usize>>,
) -> Result<Option<Box<dyn Backend>>> {
    let mut software: Vec<EventSpec> = Vec::new();
    for (i, event) in builder.events.iter().enumerate() {
        if let Ok(spec) = events::resolve(&event.name(), &builder.sysfs) {
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
    // task-clock leads: a task-clock that is not the leader is brought up to date only
    // when the group is scheduled out (see crate::session).
    software.swap(0, task_clock);
    for slot in slots.iter_mut().flatten() {
        if *slot == 0 {
            *slot = task_clock;
        } else if *slot == task_clock {
            *slot = 0;
        }
    }
    Ok(Some(Box::new(Session::from_specs(software, builder.perf)?)))
}
