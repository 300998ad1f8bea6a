//! The software backend: where there are no hardware counters, perf's software events
//! asked for plus `task-clock`, and the time-stamp counter; hardware events are not
//! counted.

use pmu_core::{Reading, RegionMeter};

use super::perf_rungs::{software_events, Inner};
use crate::backend::{Backend, How, Opened, Request};
use crate::error::{Error, Result};
use crate::machine::timestamp::TimestampMeter;

/// Opens the software backend for `builder`'s events.
///
/// # Errors
/// perf's open errors for the software events; [`crate::error::Unsupported::TimestampCounter`].
pub(crate) fn open(request: &Request) -> Result<Opened<Inner>> {
    let mut names: Vec<String> = request.names.clone();
    let mut slots = vec![None; request.events.len()];
    let mut backends: Vec<Box<dyn Backend>> = Vec::new();
    if let Some(session) = software_events(request, &mut names, &mut slots)? {
        backends.push(session);
    }
    let counted_before: usize = backends.iter().map(|b| b.names().len()).sum();
    backends.push(Box::new(TimestampMeter::new()?));
    names.push(crate::machine::timestamp::NAME.to_owned());
    slots.push(Some(counted_before));
    let counted = names
        .iter()
        .zip(&slots)
        .filter(|(_, s)| s.is_some())
        .map(|(n, _)| n.clone())
        .collect();
    let sentinel = crate::sentinel::Sentinel::off(if request.sentinel {
        crate::sentinel::NO_HARDWARE
    } else {
        crate::sentinel::SWITCHED_OFF
    });
    Ok(Opened {
        backend: Inner::Other(Box::new(Stacked::new(backends, sentinel))),
        slots,
        names,
        how: How::Software { counted },
        pin: None,
    })
}

/// Several backends measuring one region, nested: the first starts first and stops
/// last, so each one's region contains the next one's reads (calibration subtracts
/// them). The readings follow each other; the evidence is the first backend's.
struct Stacked {
    backends: Vec<Box<dyn Backend>>,
    /// Why there is no kernel-entry sentinel.
    sentinel: crate::sentinel::Sentinel,
    /// Per backend, the index after its last reading.
    ends: Vec<usize>,
}

impl Stacked {
    fn new(backends: Vec<Box<dyn Backend>>, sentinel: crate::sentinel::Sentinel) -> Self {
        let ends = backends
            .iter()
            .scan(0, |at, b| {
                *at += b.names().len();
                Some(*at)
            })
            .collect();
        Self {
            backends,
            sentinel,
            ends,
        }
    }
}

impl RegionMeter for Stacked {
    type Error = Error;

    fn start(&mut self) -> Result<()> {
        self.backends.iter_mut().try_for_each(|b| b.start())
    }

    fn stop(&mut self, out: &mut [Reading]) -> Result<()> {
        let (ends, at) = (&self.ends, self.ends.last().copied().unwrap_or(0));
        if out.len() < at {
            return Err(pmu_core::Error::ReadingsMismatch {
                expected: at as u32,
                got: out.len() as u32,
            }
            .into());
        }
        for (i, b) in self.backends.iter_mut().enumerate().rev() {
            let first = if i == 0 { 0 } else { ends[i - 1] };
            b.stop(&mut out[first..ends[i]])?;
        }
        Ok(())
    }
}

impl Backend for Stacked {
    fn names(&self) -> Vec<String> {
        self.backends.iter().flat_map(|b| b.names()).collect()
    }
    fn enable(&mut self) -> Result<()> {
        self.backends.iter_mut().try_for_each(|b| b.enable())
    }
    fn disable(&mut self) -> Result<()> {
        self.backends.iter_mut().try_for_each(|b| b.disable())
    }
    fn evidence(&self) -> crate::verdict::Evidence {
        self.backends
            .first()
            .map(|b| b.evidence())
            .unwrap_or_default()
    }
    fn sentinel(&self) -> crate::sentinel::Sentinel {
        self.sentinel.clone()
    }
}
