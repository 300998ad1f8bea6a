//! Where this library has no perf backend (32-bit ARM: perf-event-open-sys has
//! bindings for 64-bit architectures only), the perf rungs of the meter's ladder pass
//! or refuse, and the meter's inner backend is a direct one. `perf.rs` is the perf
//! side.

use pmu_core::Reading;

use super::ladder::Ladder;
use crate::backend::{Backend, Opened, Request};
use crate::error::{Error, Result};
use crate::verdict::PmuShare;

/// This library has no perf backend here.
pub(crate) const AVAILABLE: bool = false;

/// The backend underneath a meter.
pub(crate) enum Inner {
    Other(Box<dyn Backend>),
}

impl Inner {
    pub(crate) fn backend(&mut self) -> &mut dyn Backend {
        let Self::Other(other) = self;
        &mut **other
    }

    pub(crate) fn backend_ref(&self) -> &dyn Backend {
        let Self::Other(other) = self;
        &**other
    }

    #[inline(always)]
    pub(crate) fn start(&mut self) -> Result<()> {
        let Self::Other(other) = self;
        other.start()
    }

    #[inline(always)]
    pub(crate) fn stop(&mut self, out: &mut [Reading]) -> Result<()> {
        let Self::Other(other) = self;
        other.stop(out)
    }

    /// One core PMU only: no shares.
    pub(crate) fn split(&self, _slot: usize) -> Option<Vec<PmuShare>> {
        None
    }
}

/// No summed core PMUs without perf.
pub(crate) fn hybrid(_: &Request, _: &mut Ladder) -> Result<Option<Opened<Inner>>> {
    Ok(None)
}

/// [`crate::error::Unsupported::Perf`] where perf was asked for; passes for the direct rung.
pub(crate) fn perf(request: &Request, _: &mut Ladder) -> Result<Option<Opened<Inner>>> {
    let () = request.perf;
    if request.only {
        return Err(Error::Unsupported(crate::error::Unsupported::Perf));
    }
    Ok(None)
}

/// Never reached: the perf rung refuses nothing here.
pub(crate) fn perf_read(_: &Request, _: &mut Ladder) -> Result<Option<Opened<Inner>>> {
    Ok(None)
}

/// No perf software events: the software backend is the time-stamp counter alone.
pub(crate) fn software_events(
    _: &Request,
    _: &mut Vec<String>,
    _: &mut Vec<Option<usize>>,
) -> Result<Option<Box<dyn Backend>>> {
    Ok(None)
}
