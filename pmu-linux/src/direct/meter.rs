//! The direct backend's region meter: reads the counters at both edges, their overflow
//! flags at the stop, the thread's switch counts and CPU outside the region, and the
//! grant before every counter access.

use pmu_core::{Counter, CounterWidth, Pmu, Reading, RegionMeter};

use super::{AccessCheck, Unchecked};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::sched::{Kernel, ThreadSource, ThreadStamp};
use crate::verdict::{counter_readings, direct_evidence, stamp_hazards, Evidence};
use crate::MAX_EVENTS;

/// Backend a [`DirectMeter`] measures with: the handles of a
/// [`pmu_core::CounterPool`] (borrowed, `&[Counter]`), or an owned
/// [`super::OwnedCounters`].
pub trait CounterSet {
    /// How many counters.
    fn len(&self) -> usize;
    /// Whether there is none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Counter `i`'s width.
    fn width(&self, i: usize) -> CounterWidth;
    /// Counter `i`'s value, truncated to its width.
    fn read(&self, i: usize) -> u64;
    /// Whether counter `i`'s overflow flag is set.
    fn overflowed(&self, i: usize) -> bool;
    /// Clears counter `i`'s overflow flag.
    fn clear_overflow(&self, i: usize);
    /// Starts counter `i`.
    fn start(&self, i: usize);
    /// Stops counter `i`.
    fn stop(&self, i: usize);
    /// Every counter's value into `out` (one per counter, in order).
    #[inline(always)]
    fn read_all(&self, out: &mut [u64]) {
        for (i, v) in out.iter_mut().enumerate().take(self.len()) {
            *v = self.read(i);
        }
    }
    /// Every counter's overflow flag into `out`.
    #[inline(always)]
    fn overflowed_all(&self, out: &mut [bool]) {
        for (i, o) in out.iter_mut().enumerate().take(self.len()) {
            *o = self.overflowed(i);
        }
    }
    /// Clears every counter's overflow flag.
    #[inline(always)]
    fn clear_overflows(&self) {
        for i in 0..self.len() {
            self.clear_overflow(i);
        }
    }
    /// Leaves every counter as it is when the set is dropped (the grant is gone: any
    /// register access would trap). Borrowed handles: nothing to do here, their owner
    /// decides.
    fn leave_programmed(&mut self) {}
}

impl<P: Pmu> CounterSet for &[Counter<'_, P>] {
    fn len(&self) -> usize {
        <[Counter<'_, P>]>::len(self)
    }
    fn width(&self, i: usize) -> CounterWidth {
        self[i].width()
    }
    #[inline(always)]
    fn read(&self, i: usize) -> u64 {
        self[i].read()
    }
    #[inline(always)]
    fn overflowed(&self, i: usize) -> bool {
        self[i].overflowed()
    }
    #[inline(always)]
    fn clear_overflow(&self, i: usize) {
        self[i].clear_overflow()
    }
    fn start(&self, i: usize) {
        self[i].start()
    }
    fn stop(&self, i: usize) {
        self[i].stop()
    }
    // The region's reads walk the handles (no index, no bounds check per counter).
    #[inline(always)]
    fn read_all(&self, out: &mut [u64]) {
        for (v, c) in out.iter_mut().zip(self.iter()) {
            *v = c.read();
        }
    }
    #[inline(always)]
    fn overflowed_all(&self, out: &mut [bool]) {
        for (o, c) in out.iter_mut().zip(self.iter()) {
            *o = c.overflowed();
        }
    }
    #[inline(always)]
    fn clear_overflows(&self) {
        for c in self.iter() {
            c.clear_overflow();
        }
    }
}

/// Measures regions on counters the library programmed itself: over borrowed handles
/// (`allocate` → `DirectMeter::new(&counters[..], …)`) or owned counters
/// (`DirectMeter<OwnedCounters<P>, A>`, no lifetime: it can live in a struct). The thread's switch counts and CPU come from
/// `T` (the running [`Kernel`] unless built with
/// [`DirectMeter::with_thread_source`]).
#[derive(Debug)]
pub struct DirectMeter<C: CounterSet, A: AccessCheck = Unchecked, T: ThreadSource = Kernel> {
    counters: C,
    thread: T,
    names: Vec<String>,
    widths: [CounterWidth; MAX_EVENTS],
    access: A,
    start: [u64; MAX_EVENTS],
    end: [u64; MAX_EVENTS],
    overflowed: [bool; MAX_EVENTS],
    /// Events per counter tick (1, or 64 for the ARM1176 CCR with PMCR.D).
    scales: [u64; MAX_EVENTS],
    start_thread: ThreadStamp,
    end_thread: ThreadStamp,
}

impl<C: CounterSet, A: AccessCheck> DirectMeter<C, A> {
    /// A meter over `counters`, named `names`, checking user access with `access`; the
    /// thread's evidence comes from the running kernel.
    ///
    /// # Errors
    /// [`crate::error::GroupError::NoEvents`], [`crate::error::GroupError::TooMany`], or a name count that differs
    /// from the counter count ([`pmu_core::Error::ReadingsMismatch`]).
    pub fn new(counters: C, names: Vec<String>, access: A) -> Result<Self> {
        Self::with_thread_source(counters, names, access, Kernel)
    }
}

impl<C: CounterSet, A: AccessCheck, T: ThreadSource> DirectMeter<C, A, T> {
    /// Starts the counters.
    ///
    /// # Errors
    /// [`crate::error::AccessError::Revoked`] when the grant went away.
    pub fn enable(&mut self) -> Result<()> {
        <Self as Backend>::enable(self)
    }

    /// Stops the counters.
    ///
    /// # Errors
    /// As [`Self::enable`].
    pub fn disable(&mut self) -> Result<()> {
        <Self as Backend>::disable(self)
    }

    /// What the last region's hazards were derived from.
    pub fn evidence(&self) -> Evidence {
        <Self as Backend>::evidence(self)
    }

    /// As [`DirectMeter::new`], with the thread's switch counts and CPU taken
    /// from `thread`.
    ///
    /// # Errors
    /// As [`DirectMeter::new`].
    pub fn with_thread_source(
        counters: C,
        names: Vec<String>,
        access: A,
        thread: T,
    ) -> Result<Self> {
        if counters.is_empty() {
            return Err(Error::Group(crate::error::GroupError::NoEvents));
        }
        if counters.len() > MAX_EVENTS {
            return Err(Error::Group(crate::error::GroupError::TooMany {
                given: counters.len(),
                max: MAX_EVENTS,
            }));
        }
        if names.len() != counters.len() {
            return Err(pmu_core::Error::ReadingsMismatch {
                expected: counters.len() as u32,
                got: names.len() as u32,
            }
            .into());
        }
        let mut widths = [CounterWidth::W64; MAX_EVENTS];
        for (i, w) in widths.iter_mut().enumerate().take(counters.len()) {
            *w = counters.width(i);
        }
        Ok(Self {
            counters,
            thread,
            names,
            widths,
            access,
            start: [0; MAX_EVENTS],
            end: [0; MAX_EVENTS],
            overflowed: [false; MAX_EVENTS],
            scales: [1; MAX_EVENTS],
            start_thread: ThreadStamp::default(),
            end_thread: ThreadStamp::default(),
        })
    }

    /// Counter `index` advances once per `events_per_tick` events (the ARM1176 CCR with
    /// the /64 divider, PMCR.D: 64 cycles a tick): its region values are reported in
    /// events, the tick delta multiplied by `events_per_tick`, so their resolution is
    /// `events_per_tick`. Overflow is judged on the ticks, where the counter wraps.
    ///
    /// # Panics
    /// For an index without a counter or a factor of 0: a mistake in the calling code,
    /// as an index out of a slice is.
    pub fn scaled(mut self, index: usize, events_per_tick: u64) -> Self {
        assert!(
            index < self.counters.len() && events_per_tick > 0,
            "cannot scale counter {index} by {events_per_tick}: the meter has {} counters, \
             and a counter ticks at least once per event",
            self.counters.len()
        );
        self.scales[index] = events_per_tick;
        self
    }

    /// Events per tick of each counter (see [`DirectMeter::scaled`]).
    pub fn scales(&self) -> &[u64] {
        &self.scales[..self.counters.len()]
    }

    fn check_access(&self) -> Result<()> {
        if self.access.granted() {
            Ok(())
        } else {
            Err(Error::Access(crate::error::AccessError::Revoked))
        }
    }

    /// The readings of the last region (into `out`, one per counter), from what its
    /// edges kept; how many.
    fn readings(&self, out: &mut [Reading]) -> std::result::Result<usize, pmu_core::Error> {
        let n = out.len();
        let overflowed = &self.overflowed[..n];
        counter_readings(
            &self.start[..n],
            &self.end[..n],
            |i| overflowed[i],
            &self.widths[..n],
            stamp_hazards(self.start_thread, self.end_thread),
            out,
        )
    }

    /// The readings (into `out`) and evidence of the last region.
    fn evaluate(&self, out: &mut [Reading]) -> std::result::Result<Evidence, pmu_core::Error> {
        let n = self.readings(out)?;
        Ok(direct_evidence(
            self.start_thread,
            self.end_thread,
            &out[..n],
        ))
    }
}

impl<C: CounterSet, A: AccessCheck, T: ThreadSource> RegionMeter for DirectMeter<C, A, T> {
    type Error = Error;

    /// Checks access, takes switch counts and CPU, reads every counter, then clears the
    /// overflow flags (in this order every wrap after the read is seen: pmu-core
    /// `CounterMeter::start`).
    #[inline(always)]
    fn start(&mut self) -> Result<()> {
        self.check_access()?;
        self.start_thread = ThreadStamp::before(&self.thread)?;
        self.counters.read_all(&mut self.start);
        self.counters.clear_overflows();
        Ok(())
    }

    /// Checks access, reads every counter and its overflow flag, then CPU and switch
    /// counts.
    #[inline(always)]
    fn stop(&mut self, out: &mut [Reading]) -> Result<()> {
        self.check_access()?;
        self.counters.read_all(&mut self.end);
        self.counters.overflowed_all(&mut self.overflowed);
        let n = self.counters.len();
        let thread_end = ThreadStamp::after(&self.thread)?;
        if out.len() < n {
            return Err(pmu_core::Error::ReadingsMismatch {
                expected: n as u32,
                got: out.len() as u32,
            }
            .into());
        }
        self.end_thread = thread_end;
        // The readings only: the evidence is derived on demand (`evidence`).
        self.readings(&mut out[..n])?;
        for (reading, &scale) in out[..n].iter_mut().zip(&self.scales) {
            // A 32-bit tick delta (plus one wrap) times 64 cannot overflow u64; saturate
            // rather than wrap should a caller scale a 64-bit counter absurdly.
            reading.value = reading.value.saturating_mul(scale);
        }
        Ok(())
    }
}

impl<C: CounterSet, A: AccessCheck, T: ThreadSource> Backend for DirectMeter<C, A, T> {
    fn names(&self) -> Vec<String> {
        self.names.clone()
    }

    fn enable(&mut self) -> Result<()> {
        self.check_access()?;
        (0..self.counters.len()).for_each(|i| self.counters.start(i));
        Ok(())
    }

    fn disable(&mut self) -> Result<()> {
        self.check_access()?;
        (0..self.counters.len()).for_each(|i| self.counters.stop(i));
        Ok(())
    }

    fn evidence(&self) -> Evidence {
        let n = self.counters.len().min(MAX_EVENTS);
        self.evaluate(&mut [Reading::default(); MAX_EVENTS][..n])
            .unwrap_or_default()
    }

    fn sentinel(&self) -> crate::Sentinel {
        crate::Sentinel::off(
            "this region reads none: it sees context switches (getrusage) and migrations, \
             not interrupts, system calls or faults",
        )
    }
}

impl<C: CounterSet, A: AccessCheck, T: ThreadSource> Drop for DirectMeter<C, A, T> {
    /// With the grant gone, every register access traps (SIGILL), the counters' release
    /// included, and the kernel owns this CPU's PMU again: the counters are left as
    /// they are.
    fn drop(&mut self) {
        if !self.access.granted() {
            self.counters.leave_programmed();
        }
    }
}
