//! What the ladder's rungs share as they are walked: the refusals so far, and the
//! facts later rungs decide on.

use std::fmt;

use crate::backend::SlowReads;
use crate::error::Error;
use crate::machine::NoCounters;

/// Why perf found no hardware counters.
#[derive(Debug)]
#[non_exhaustive]
pub enum NoHardware {
    /// What the machine shows (`machine::why_no_hardware_counters`, as
    /// [`crate::survey::Survey::no_hardware`] lists it).
    Found(Vec<NoCounters>),
    /// perf's error, where the machine shows nothing.
    Perf(Error),
}

impl fmt::Display for NoHardware {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Found(why) => {
                for (i, reason) in why.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    reason.fmt(f)?;
                }
                Ok(())
            }
            Self::Perf(e) => e.fmt(f),
        }
    }
}

/// Why a rung of the ladder did not open its backend.
#[derive(Debug)]
#[non_exhaustive]
pub enum Refusal {
    /// perf opens the events but cannot give one-instruction reads (why).
    SlowPerfReads(SlowReads),
    /// perf finds no hardware counters: why, as far as files anyone may read tell, or
    /// perf's own error where they tell nothing.
    NoHardwareCounters(NoHardware),
    /// The direct backend did not open.
    Direct(Error),
}

/// What the rungs walked so far found: the refusals in order, and the three facts later
/// rungs decide on (so no rung reads another's refusals).
#[derive(Debug, Default)]
pub(crate) struct Ladder {
    /// The refusals, in ladder order.
    pub(crate) refused: Vec<Refusal>,
    /// perf refused its one-instruction reads, and why.
    pub(crate) slow_perf: Option<SlowReads>,
    /// perf found no hardware counters.
    pub(crate) no_hardware: bool,
    /// The read-only grant was tried and refused.
    pub(crate) grant_tried: bool,
}

impl Ladder {
    /// perf cannot read with one instruction: `why`.
    pub(crate) fn refuse_slow_reads(&mut self, why: SlowReads) {
        self.slow_perf = Some(why.clone());
        self.refused.push(Refusal::SlowPerfReads(why));
    }

    /// perf found no hardware counters: `why`.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    pub(crate) fn refuse_no_hardware(&mut self, why: NoHardware) {
        self.no_hardware = true;
        self.refused.push(Refusal::NoHardwareCounters(why));
    }

    /// The read-only grant did not open: `error`.
    pub(crate) fn refuse_grant(&mut self, error: Error) {
        self.grant_tried = true;
        self.refused.push(Refusal::Direct(error));
    }
}
