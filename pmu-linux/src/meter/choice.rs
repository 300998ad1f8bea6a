//! Which backend a meter opened, and why: [`crate::MeterBuilder::build`] walks an
//! ordered ladder of rungs, each of which opens its backend, passes (not its case), or
//! refuses and says why. The first rung that opens wins; the [`Choice`]
//! ([`crate::Meter::choice`]) keeps every refusal before it, how the backend reads
//! ([`Reads`]) and under which kmod-enable-user [`Grant`], and its `Display` is
//! [`crate::Meter::why`]. [`crate::survey`] asks the same rungs about every backend.
//!
//! The ladder, when no one backend is asked for ([`crate::MeterBuilder::backend`]):
//! 1. perf on every core PMU of a machine with several (big.LITTLE), summed;
//! 2. the module's read-only grant, where perf's user reads are off
//!    (`kernel.perf_user_access = 0`): opening perf's hardware events would revoke it
//!    on this CPU (Linux 6.12 drivers/perf/arm_pmuv3.c `armv8pmu_start` rewrites
//!    PMUSERENR_EL0);
//! 3. perf with one-instruction reads (refused where the kernel forbids them or there
//!    are no hardware counters);
//! 4. the direct backend, where this library has no perf backend (32-bit ARM);
//! 5. the read-only grant, where perf refused (tried once: a refusal of rung 2 stands);
//! 6. perf with `read()`, where it refused its one-instruction reads;
//! 7. the software events and the time-stamp counter, where there are no hardware
//!    counters.

use std::fmt;

use crate::backend::{BackendKind, How, Opened, Request};
pub use crate::backend::{Grant, GrantScope, Reads, SlowReads};
use crate::direct;
use crate::error::Result;
use crate::verdict::Sentinel;

use super::ladder::Ladder;
pub use super::ladder::{NoHardware, Refusal};
use super::perf_rungs::{self as perf, Inner};

/// The backend a meter opened, how its regions read, under which grant, with which
/// kernel-entry sentinel, and what the ladder refused before it. Its `Display` is
/// [`crate::Meter::why`]: the refusals that matter to the backend chosen, then how it
/// reads.
#[derive(Debug)]
#[non_exhaustive]
pub struct Choice {
    /// The backend.
    pub kind: BackendKind,
    /// How its regions read the counters.
    pub reads: Reads,
    /// The direct backend's grant; `None` for the others.
    pub grant: Option<Grant>,
    /// Whether regions see every kernel entry, and how; or why not.
    pub sentinel: Sentinel,
    /// What the rungs before it refused, in ladder order.
    pub refused: Vec<Refusal>,
    /// How the chosen backend reads, as facts.
    how: How,
}

impl Choice {
    /// The choice `opened` makes, with its `sentinel`, after `refused`.
    pub(crate) fn new<B>(opened: &Opened<B>, sentinel: Sentinel, refused: Vec<Refusal>) -> Self {
        Self {
            kind: opened.how.kind(),
            reads: opened.how.reads(),
            grant: opened.how.grant(),
            sentinel,
            refused,
            how: opened.how.clone(),
        }
    }
}

impl fmt::Display for Choice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let direct_errors = self.refused.iter().filter_map(|r| match r {
            Refusal::Direct(e) => Some(e),
            _ => None,
        });
        match self.kind {
            BackendKind::Direct => {
                for refusal in &self.refused {
                    match refusal {
                        Refusal::SlowPerfReads(why) => {
                            write!(f, "perf cannot give one-instruction reads here ({why}); ")?
                        }
                        Refusal::NoHardwareCounters(why) => write!(f, "{why}; ")?,
                        Refusal::Direct(_) => {}
                    }
                }
                self.how.fmt(f)
            }
            BackendKind::Perf => {
                self.how.fmt(f)?;
                if self
                    .refused
                    .iter()
                    .any(|r| matches!(r, Refusal::SlowPerfReads(_)))
                {
                    for e in direct_errors {
                        write!(f, "; the direct backend is not available either: {e}")?;
                    }
                }
                Ok(())
            }
            BackendKind::Software => {
                let mut notes: Vec<String> = Vec::new();
                for refusal in &self.refused {
                    match refusal {
                        Refusal::NoHardwareCounters(why) => notes.push(why.to_string()),
                        Refusal::Direct(e) => notes.push(format!("direct backend: {e}")),
                        Refusal::SlowPerfReads(_) => {}
                    }
                }
                if notes.is_empty() {
                    write!(f, "no hardware counters: {}", self.how)
                } else {
                    write!(
                        f,
                        "no hardware counters ({}): {}",
                        notes.join("; "),
                        self.how
                    )
                }
            }
        }
    }
}

/// What a rung returns: its backend opened, or `None` (not its case, or it refused).
pub(crate) type Rung = fn(&Request, &mut Ladder) -> Result<Option<Opened<Inner>>>;

/// Walks the ladder for `request` (only `only`'s rungs when one backend was asked
/// for): the first backend that opens, with the refusals before it.
///
/// # Errors
/// A rung's error that no later rung can take over (name errors, a group that does
/// not fit, the only backend asked for failing).
pub(crate) fn choose(
    only: Option<BackendKind>,
    request: &Request,
) -> Result<(Opened<Inner>, Vec<Refusal>)> {
    let ladder: &[Rung] = match only {
        Some(BackendKind::Direct) => &[direct_backend],
        Some(BackendKind::Software) => &[software],
        Some(BackendKind::Perf) => &[perf::hybrid, perf::perf],
        None => &[
            perf::hybrid,
            grant_before_perf,
            perf::perf,
            direct_without_perf,
            grant_after_perf,
            perf::perf_read,
            software_without_hardware,
        ],
    };
    let mut state = Ladder::default();
    for rung in ladder {
        if let Some(opened) = rung(request, &mut state)? {
            return Ok((opened, state.refused));
        }
    }
    unreachable!("the ladder's last rung opens its backend or fails")
}

fn direct_backend(request: &Request, _: &mut Ladder) -> Result<Option<Opened<Inner>>> {
    Ok(Some(direct::open(request)?.map(Inner::Other)))
}

fn software(request: &Request, _: &mut Ladder) -> Result<Option<Opened<Inner>>> {
    super::software::open(request).map(Some)
}

/// Rung 2: perf's user reads are off and the module's layout is there.
fn grant_before_perf(request: &Request, ladder: &mut Ladder) -> Result<Option<Opened<Inner>>> {
    if !direct::READ_ONLY_GRANT
        || crate::sys::perf_user_access() != Some(0)
        || !direct::grant::has_layout()
        || !request.counts_hardware()?
    {
        return Ok(None);
    }
    match direct::open_read_only_grant(request) {
        Ok(opened) => {
            ladder.refuse_slow_reads(SlowReads::PerfUserAccessOff);
            Ok(Some(opened.map(Inner::Other)))
        }
        Err(e) => {
            ladder.refuse_grant(e);
            Ok(None)
        }
    }
}

/// Rung 4: no perf backend in this library for this architecture.
fn direct_without_perf(request: &Request, _: &mut Ladder) -> Result<Option<Opened<Inner>>> {
    if perf::AVAILABLE {
        return Ok(None);
    }
    Ok(Some(direct::open(request)?.map(Inner::Other)))
}

/// Rung 5: perf refused; the read-only grant, unless rung 2 already failed.
fn grant_after_perf(request: &Request, ladder: &mut Ladder) -> Result<Option<Opened<Inner>>> {
    let perf_refused = ladder.slow_perf.is_some() || ladder.no_hardware;
    if !direct::READ_ONLY_GRANT || !perf_refused || ladder.grant_tried {
        return Ok(None);
    }
    match direct::open_read_only_grant(request) {
        Ok(opened) => Ok(Some(opened.map(Inner::Other))),
        Err(e) => {
            ladder.refuse_grant(e);
            Ok(None)
        }
    }
}

/// Rung 7: no hardware counters at all.
fn software_without_hardware(
    request: &Request,
    ladder: &mut Ladder,
) -> Result<Option<Opened<Inner>>> {
    if !ladder.no_hardware {
        return Ok(None);
    }
    super::software::open(request).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::GrantScope;
    use crate::error::Error;
    use crate::verdict::FallbackReason;
    use pmu_core::Fallback;

    fn choice(kind: BackendKind, refused: Vec<Refusal>, how: How) -> Choice {
        Choice {
            kind,
            reads: Reads::OneInstruction,
            grant: None,
            sentinel: Sentinel::off("test"),
            refused,
            how,
        }
    }

    fn no_events() -> Error {
        Error::Group(crate::error::GroupError::NoEvents)
    }

    /// The per-thread grant's sentence and typed grant (kmod_enable_user_uapi.h: GRANT
    /// on /dev/kmod_enable_user, `KMOD_EU_GRANTED_FOLLOW`), composed from the fields.
    #[test]
    fn the_per_thread_grant_says_so() {
        let follow = GrantScope::Thread { follow: true };
        let how = How::ModuleLayout {
            cpu: 2,
            layout: "5=0x8 4=0x11".into(),
            scope: follow,
        };
        let grant = how.grant().unwrap();
        assert_eq!(
            grant,
            Grant::ReadOnly {
                cpu: 2,
                scope: follow
            }
        );
        assert_eq!(grant.scope(), follow);
        assert!(follow.counts_follow_thread());
        assert!(!GrantScope::Thread { follow: false }.counts_follow_thread());
        assert!(!GrantScope::CpuWide.counts_follow_thread());
        assert_eq!(
            grant.to_string(),
            "read-only, per-thread, counters follow the thread, CPU 2"
        );
        assert_eq!(
            Grant::Program {
                cpu: 0,
                scope: GrantScope::Thread { follow: false }
            }
            .to_string(),
            "read and program, per-thread, counters stay on the CPU (follow=0), CPU 0"
        );
        let text = choice(BackendKind::Direct, Vec::new(), how).to_string();
        assert!(
            text.starts_with(
                "grant: read-only (PMUSERENR_EL0 ER or ER|CR, no EN), per-thread, counters \
                 follow the thread (this thread only, while it runs; the module saves and \
                 restores its counters at every switch, so a switch or migration mixes no \
                 other thread's counts), from kmod-enable-user on CPU 2: the counters the \
                 module runs (5=0x8 4=0x11)"
            ),
            "{text}"
        );
    }

    /// The sentences `Meter::why` gave before the ladder was data (tests/tests/kernel_arm64.rs
    /// matches their beginnings): each refusal where the chosen backend puts it.
    #[test]
    fn display_is_the_why() {
        let unmapped = SlowReads::Read(FallbackReason::NoPage);
        let forbidden = SlowReads::Read(FallbackReason::Page(Fallback::NoUserAccess));
        assert_eq!(
            choice(
                BackendKind::Direct,
                vec![Refusal::SlowPerfReads(SlowReads::PerfUserAccessOff)],
                How::Armv8Programmed {
                    cpu: 1,
                    scope: GrantScope::CpuWide
                }
            )
            .to_string(),
            format!(
                "perf cannot give one-instruction reads here (kernel.perf_user_access = 0); {}",
                How::Armv8Programmed {
                    cpu: 1,
                    scope: GrantScope::CpuWide
                }
            )
        );
        assert_eq!(
            choice(
                BackendKind::Perf,
                vec![
                    Refusal::SlowPerfReads(forbidden.clone()),
                    Refusal::Direct(no_events()),
                ],
                How::PerfReadCalls(forbidden.clone())
            )
            .to_string(),
            format!(
                "every read is a read() system call ({}), flagged syscall-fallback; the \
                 direct backend is not available either: {}",
                Fallback::NoUserAccess,
                no_events()
            )
        );
        // A failed rung 2 alone (perf then opened) is not mentioned.
        assert_eq!(
            choice(
                BackendKind::Perf,
                vec![Refusal::Direct(no_events())],
                How::PerfReadCalls(unmapped)
            )
            .to_string(),
            "every read is a read() system call (the metadata page is not mapped), flagged \
             syscall-fallback"
        );
        assert_eq!(
            choice(
                BackendKind::Software,
                vec![
                    Refusal::NoHardwareCounters(NoHardware::Found(vec![
                        crate::machine::NoCounters::VirtualMachine,
                    ])),
                    Refusal::Direct(no_events()),
                ],
                How::Software {
                    counted: vec!["task-clock".into()]
                }
            )
            .to_string(),
            format!(
                "no hardware counters ({}; direct backend: {}): counting task-clock instead",
                crate::machine::NoCounters::VirtualMachine,
                no_events()
            )
        );
        assert_eq!(
            choice(
                BackendKind::Software,
                Vec::new(),
                How::Software {
                    counted: vec!["task-clock".into(), "tsc".into()]
                }
            )
            .to_string(),
            "no hardware counters: counting task-clock, tsc instead"
        );
    }

    /// Each backend's sentence, as the guest tests match them (tests/tests/kernel_arm64.rs,
    /// tests/tests/debian_arm64.rs): the facts go in, the same words come out.
    #[test]
    fn how_composes_the_old_sentences() {
        assert_eq!(
            How::Hybrid {
                pmus: vec!["armv8_cortex_a53".into(), "armv8_cortex_a72".into()],
                reads: Reads::OneInstruction
            }
            .to_string(),
            "2 core PMUs (armv8_cortex_a53, armv8_cortex_a72): every event opened on each \
             and summed, the share of each in Meter::core_pmu_split; read with one \
             instruction through the pages"
        );
        // tests/tests/kernel_arm64.rs and debian_arm64.rs match the start up to "no EN)".
        assert!(How::ModuleLayout {
            cpu: 3,
            layout: "0=0x8,31=0x11".into(),
            scope: GrantScope::CpuWide,
        }
        .to_string()
        .starts_with(
            "grant: read-only (PMUSERENR_EL0 ER or ER|CR, no EN), CPU-wide (every thread on \
             the CPU may read the counters), from kmod-enable-user on CPU 3: the counters the \
             module runs (0=0x8,31=0x11), read with one instruction"
        ));
        assert!(How::Armv7Programmed { cpu: 2 }
            .to_string()
            .starts_with("direct access on CPU 2 (ARMv7 PMU"));
        // tests/tests/kernel_armv7.rs matches the start under the ARMv7 flavour's
        // default grant.
        let armv7 = How::Armv7ModuleLayout {
            cpu: 1,
            layout: "5=0x8 4=0x11".into(),
        };
        assert!(armv7.to_string().starts_with(
            "grant: read-only (PMUSERENR ER or ER|CR, no EN) from kmod-enable-user's ARMv7 \
             flavour on CPU 1: the counters the module runs (5=0x8 4=0x11), PL0 only"
        ));
        assert_eq!(
            armv7.grant(),
            Some(Grant::ReadOnly {
                cpu: 1,
                scope: GrantScope::CpuWide
            })
        );
        assert_eq!(armv7.kind(), BackendKind::Direct);
    }
}
