//! Which backend [`MeterBuilder::build`] opens: an ordered ladder of rungs, each of
//! which opens its backend, passes (not its case), or refuses and says why. The first
//! rung that opens wins; the [`Choice`] keeps every refusal before it, and its
//! `Display` is [`crate::Meter::why`].
//!
//! The ladder, when no one backend is asked for ([`MeterBuilder::backend`]):
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

use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::meter::{BackendKind, Inner, MeterBuilder};
use crate::sched::PinGuard;
use crate::{direct, perf_rungs, Sentinel};

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
    },
    /// The library programs the counters itself (ARMv8 PMUSERENR_EL0.EN, ARMv7
    /// PMUSERENR.EN, ARM1176 SUNAVCR.V).
    Program {
        /// The CPU whose counters are programmed.
        cpu: usize,
    },
}

/// Why a rung of the ladder did not open its backend.
#[derive(Debug)]
#[non_exhaustive]
pub enum Refusal {
    /// perf opens the events but cannot give one-instruction reads (why).
    SlowPerfReads(String),
    /// perf finds no hardware counters (what was found).
    NoHardwareCounters(Vec<String>),
    /// The direct backend did not open.
    Direct(Error),
}

/// The backend a meter opened, how its regions read, under which grant, with which
/// kernel-entry sentinel, and what the ladder refused before it.
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
    /// The chosen backend's own account of how it reads.
    account: String,
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
                        Refusal::NoHardwareCounters(notes) => write!(f, "{}; ", notes.join("; "))?,
                        Refusal::Direct(_) => {}
                    }
                }
                f.write_str(&self.account)
            }
            BackendKind::Perf => {
                f.write_str(&self.account)?;
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
                        Refusal::NoHardwareCounters(found) => notes.extend(found.iter().cloned()),
                        Refusal::Direct(e) => notes.push(format!("direct backend: {e}")),
                        Refusal::SlowPerfReads(_) => {}
                    }
                }
                if notes.is_empty() {
                    write!(f, "no hardware counters: {}", self.account)
                } else {
                    write!(
                        f,
                        "no hardware counters ({}): {}",
                        notes.join("; "),
                        self.account
                    )
                }
            }
        }
    }
}

/// What a rung opened.
pub(crate) struct Opened {
    pub(crate) inner: Inner,
    /// Per event (the user's, then the meter's own), its reading's index.
    pub(crate) slots: Vec<Option<usize>>,
    /// Per event, its name.
    pub(crate) names: Vec<String>,
    pub(crate) kind: BackendKind,
    pub(crate) reads: Reads,
    pub(crate) grant: Option<Grant>,
    /// How it reads, in one sentence (see [`Choice`]'s Display).
    pub(crate) account: String,
    pub(crate) pin: Option<PinGuard>,
}

impl Opened {
    /// The choice this opening makes, after `refused`.
    pub(crate) fn choice(&self, sentinel: Sentinel, refused: Vec<Refusal>) -> Choice {
        Choice {
            kind: self.kind,
            reads: self.reads,
            grant: self.grant,
            sentinel,
            refused,
            account: self.account.clone(),
        }
    }
}

/// One rung: opens its backend, or passes (not its case, or it pushed its refusal).
type Rung = fn(&MeterBuilder, &mut Vec<Refusal>) -> Result<Option<Opened>>;

/// Walks `builder`'s ladder: the first backend that opens, with the refusals before it.
///
/// # Errors
/// A rung's error that no later rung can take over (name errors, a group that does
/// not fit, the only backend asked for failing).
pub(crate) fn choose(builder: &MeterBuilder) -> Result<(Opened, Vec<Refusal>)> {
    let ladder: &[Rung] = match builder.choice {
        Some(BackendKind::Direct) => &[direct_backend],
        Some(BackendKind::Software) => &[software],
        Some(BackendKind::Perf) => &[perf_rungs::hybrid, perf_rungs::perf],
        None => &[
            perf_rungs::hybrid,
            grant_before_perf,
            perf_rungs::perf,
            direct_without_perf,
            grant_after_perf,
            perf_rungs::perf_read,
            software_without_hardware,
        ],
    };
    let mut refused = Vec::new();
    for rung in ladder {
        if let Some(opened) = rung(builder, &mut refused)? {
            return Ok((opened, refused));
        }
    }
    unreachable!("the ladder's last rung opens its backend or fails")
}

/// Whether any event is a hardware one (perf's software events never need a PMU).
pub(crate) fn counts_hardware(builder: &MeterBuilder) -> Result<bool> {
    Ok(builder
        .specs()?
        .iter()
        .any(|s| s.kind != EventKind::Software))
}

fn direct_backend(builder: &MeterBuilder, _: &mut Vec<Refusal>) -> Result<Option<Opened>> {
    direct::open(builder).map(Some)
}

fn software(builder: &MeterBuilder, _: &mut Vec<Refusal>) -> Result<Option<Opened>> {
    super::software::open(builder).map(Some)
}

/// Rung 2: perf's user reads are off and the module's layout is there.
fn grant_before_perf(builder: &MeterBuilder, refused: &mut Vec<Refusal>) -> Result<Option<Opened>> {
    if !direct::READ_ONLY_GRANT
        || crate::sys::perf_user_access() != Some(0)
        || !std::path::Path::new(direct::MODULE_LAYOUT).exists()
        || !counts_hardware(builder)?
    {
        return Ok(None);
    }
    match direct::open_read_only_grant(builder) {
        Ok(opened) => {
            refused.push(Refusal::SlowPerfReads(
                "kernel.perf_user_access = 0".to_owned(),
            ));
            Ok(Some(opened))
        }
        Err(e) => {
            refused.push(Refusal::Direct(e));
            Ok(None)
        }
    }
}

/// Rung 4: no perf backend in this library for this architecture.
fn direct_without_perf(builder: &MeterBuilder, _: &mut Vec<Refusal>) -> Result<Option<Opened>> {
    if perf_rungs::AVAILABLE {
        return Ok(None);
    }
    direct::open(builder).map(Some)
}

/// Rung 5: perf refused; the read-only grant, unless rung 2 already failed.
fn grant_after_perf(builder: &MeterBuilder, refused: &mut Vec<Refusal>) -> Result<Option<Opened>> {
    let perf_refused = matches!(
        refused.last(),
        Some(Refusal::SlowPerfReads(_) | Refusal::NoHardwareCounters(_))
    );
    let tried = refused.iter().any(|r| matches!(r, Refusal::Direct(_)));
    if !direct::READ_ONLY_GRANT || !perf_refused || tried {
        return Ok(None);
    }
    match direct::open_read_only_grant(builder) {
        Ok(opened) => Ok(Some(opened)),
        Err(e) => {
            refused.push(Refusal::Direct(e));
            Ok(None)
        }
    }
}

/// Rung 7: no hardware counters at all.
#[allow(clippy::ptr_arg)] // the ladder's one rung signature
fn software_without_hardware(
    builder: &MeterBuilder,
    refused: &mut Vec<Refusal>,
) -> Result<Option<Opened>> {
    if !refused
        .iter()
        .any(|r| matches!(r, Refusal::NoHardwareCounters(_)))
    {
        return Ok(None);
    }
    super::software::open(builder).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(kind: BackendKind, refused: Vec<Refusal>, account: &str) -> Choice {
        Choice {
            kind,
            reads: Reads::OneInstruction,
            grant: None,
            sentinel: Sentinel::off("test"),
            refused,
            account: account.to_owned(),
        }
    }

    /// The sentences `Meter::why` gave before the ladder was data (tests/tests/kernel_arm64.rs
    /// matches their beginnings): each refusal where the chosen backend puts it.
    #[test]
    fn display_is_the_why() {
        assert_eq!(
            choice(
                BackendKind::Direct,
                vec![Refusal::SlowPerfReads("kernel.perf_user_access = 0".into())],
                "grant: read-only"
            )
            .to_string(),
            "perf cannot give one-instruction reads here (kernel.perf_user_access = 0); \
             grant: read-only"
        );
        assert_eq!(
            choice(
                BackendKind::Perf,
                vec![
                    Refusal::SlowPerfReads("no user access".into()),
                    Refusal::Direct(Error::Group(crate::error::GroupError::NoEvents)),
                ],
                "every read is a read() system call (no user access), flagged syscall-fallback"
            )
            .to_string(),
            format!(
                "every read is a read() system call (no user access), flagged \
                 syscall-fallback; the direct backend is not available either: {}",
                Error::Group(crate::error::GroupError::NoEvents)
            )
        );
        // A failed rung 2 alone (perf then opened) is not mentioned.
        assert_eq!(
            choice(
                BackendKind::Perf,
                vec![Refusal::Direct(Error::Group(
                    crate::error::GroupError::NoEvents
                ))],
                "every read is a read() system call (unmapped), flagged syscall-fallback"
            )
            .to_string(),
            "every read is a read() system call (unmapped), flagged syscall-fallback"
        );
        assert_eq!(
            choice(
                BackendKind::Software,
                vec![
                    Refusal::NoHardwareCounters(vec!["no cpu PMU".into()]),
                    Refusal::Direct(Error::Group(crate::error::GroupError::NoEvents)),
                ],
                "counting task-clock instead"
            )
            .to_string(),
            format!(
                "no hardware counters (no cpu PMU; direct backend: {}): counting task-clock \
                 instead",
                Error::Group(crate::error::GroupError::NoEvents)
            )
        );
        assert_eq!(
            choice(BackendKind::Software, Vec::new(), "counting tsc instead").to_string(),
            "no hardware counters: counting tsc instead"
        );
    }
}
