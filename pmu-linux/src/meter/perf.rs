//! The perf backend's rungs of the meter's ladder ([`super::choose`]), and the meter's
//! inner backend with perf's session inline (its region reads are the hot path: no
//! pointer to follow). 32-bit ARM has none of this (`no_perf.rs`).

use pmu_core::{Reading, RegionMeter};

use super::ladder::{Ladder, NoHardware};
use crate::backend::{Backend, How, Opened, Reads, Request, SlowReads};
use crate::error::Result;
use crate::machine::events::{self, EventKind, EventSpec};
use crate::perf::hybrid::HybridSession;
use crate::perf::topology::{parse_cpu_list, CoreTopology};
use crate::perf::{Options, Session};
use crate::verdict::{FallbackReason, PmuShare};

/// This library has a perf backend here.
pub(crate) const AVAILABLE: bool = true;

/// The perf session options: [`MeterBuilder::perf_options`] with the sentinel as
/// [`MeterBuilder::kernel_sentinel`] says, and whether the machine counts exactly
/// (`crate::machine::emulation`).
fn session_options(request: &Request) -> Options {
    let mut options = request.perf.kernel_sentinel(request.sentinel);
    options.exact_emulation = crate::machine::emulation::exact_emulation(&request.sysfs);
    options
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

fn perf_opened(session: Session, events: usize, how: How) -> Opened<Inner> {
    Opened {
        names: session.specs().map(|s| s.name.clone()).collect(),
        backend: Inner::Perf(session),
        slots: (0..events).map(Some).collect(),
        how,
        pin: None,
    }
}

/// Rung 1: with two core PMUs or more in sysfs and only generic hardware events (the
/// perf-defined `instructions`, `cycles`, cache events …), a [`HybridSession`]: each
/// event opened on every core PMU with its extended type, and summed. Passes where the
/// machine has one core PMU (or none) or an event belongs to one PMU (raw numbers,
/// `pmu/term=…/`): then the plain session.
pub(crate) fn hybrid(request: &Request, _: &mut Ladder) -> Result<Option<Opened<Inner>>> {
    if !request.counts_hardware()? {
        return Ok(None);
    }
    let specs = request.specs()?;
    let Ok(topology) = CoreTopology::discover_in(&request.sysfs) else {
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
        .and_then(|t| parse_cpu_list(&t))
        .unwrap_or_default();
    let names: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let session =
        match HybridSession::open_in(&request.sysfs, &online, &refs, session_options(request)) {
            Ok(session) => session,
            // The PMUs are listed but cannot count (a VM's sysfs copy, a driver gone):
            // the plain rung finds out and says why.
            Err(e) if e.means_no_hardware_counters() => return Ok(None),
            Err(e) => return Err(e),
        };
    let reads = if session.page_reads() {
        Reads::OneInstruction
    } else {
        Reads::SystemCall
    };
    let how = How::Hybrid {
        pmus: session.pmus().iter().map(|p| p.to_string()).collect(),
        reads,
    };
    Ok(Some(Opened {
        names,
        backend: Inner::Hybrid(session),
        slots: (0..request.events.len()).map(Some).collect(),
        how,
        pin: None,
    }))
}

/// Rung 3: perf's group. Opens it with one-instruction reads, or with `read()` where
/// the page says why not; without [`MeterBuilder::backend`] refuses where the kernel forbids
/// user reads (the module's grant may still allow them) or finds no hardware counters.
pub(crate) fn perf(request: &Request, ladder: &mut Ladder) -> Result<Option<Opened<Inner>>> {
    let specs = request.specs()?;
    let hardware = specs.iter().any(|s| s.kind != EventKind::Software);
    let auto = !request.only;
    let session = match Session::from_specs(specs, session_options(request)) {
        Ok(session) => session,
        Err(e) if auto && e.means_no_hardware_counters() => {
            let found = crate::machine::why_no_hardware_counters(&request.sysfs);
            ladder.refuse_no_hardware(if found.is_empty() {
                NoHardware::Perf(e)
            } else {
                NoHardware::Found(found)
            });
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
    let n = request.events.len();
    Ok(Some(match blocked {
        None if hardware => {
            let how = match session.exact_emulation() {
                Some(machine) => How::PerfPagesExact(machine.describe()),
                None => How::PerfPages,
            };
            perf_opened(session, n, how)
        }
        None => perf_opened(session, n, How::PerfSoftwareOnly),
        Some(blocked) => {
            // The kernel forbids user reads (perf_user_access = 0): the module's grant
            // may still allow them. (Unmapped pages, asked for, stay with perf.)
            let forbidden = blocked == FallbackReason::Page(pmu_core::Fallback::NoUserAccess);
            if auto && forbidden && crate::direct::READ_ONLY_GRANT {
                ladder.refuse_slow_reads(SlowReads::Read(blocked));
                return Ok(None);
            }
            let how = How::PerfReadCalls(SlowReads::Read(blocked));
            perf_opened(session, n, how)
        }
    }))
}

/// Rung 6: perf refused its one-instruction reads and the grant did not open either:
/// perf's group read with `read()`.
pub(crate) fn perf_read(request: &Request, ladder: &mut Ladder) -> Result<Option<Opened<Inner>>> {
    let Some(why) = ladder.slow_perf.clone() else {
        return Ok(None);
    };
    let session = Session::from_specs(request.specs()?, session_options(request))?;
    Ok(Some(perf_opened(
        session,
        request.events.len(),
        How::PerfReadCalls(why),
    )))
}

/// The software backend's perf part: the software events asked for plus `task-clock`
/// (leading), with `slots` and `names` pointed at them.
///
/// # Errors
/// perf's open errors.
pub(crate) fn software_events(
    request: &Request,
    names: &mut Vec<String>,
    slots: &mut Vec<Option<usize>>,
) -> Result<Option<Box<dyn Backend>>> {
    let mut software: Vec<EventSpec> = Vec::new();
    for (i, slot) in slots.iter_mut().enumerate().take(request.events.len()) {
        if let Some(spec) = request.spec(i) {
            if spec.kind == EventKind::Software {
                *slot = Some(software.len());
                software.push(spec.clone());
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
    // when the group is scheduled out (see crate::perf).
    software.swap(0, task_clock);
    for slot in slots.iter_mut().flatten() {
        if *slot == 0 {
            *slot = task_clock;
        } else if *slot == task_clock {
            *slot = 0;
        }
    }
    Ok(Some(Box::new(Session::from_specs(software, request.perf)?)))
}
