//! The kernel-entry sentinel of a direct meter whose library programs the PMU itself:
//! one more counter, counting an event at the kernel's privilege level only, read
//! around the region's counter reads at both edges ([`crate::Sentinel`]).
//!
//! - [`SentinelCounter`] is that counter (AArch32: `direct::aarch32::Pl1InstRetired`; a
//!   fake in the tests);
//! - [`WithSentinel`] wraps the region's [`CounterSet`]: its `read_all` reads the
//!   sentinel before the counters at the start edge and after them at the stop edge
//!   (the [`SentinelMeter`] says which edge comes), so the sentinel's window encloses
//!   the counters' window. The meter's system calls (`getrusage`, `sched_getcpu`) stay
//!   outside it: they run before the start edge's `read_all` and after the stop edge's;
//! - [`SentinelMeter`] wraps the [`DirectMeter`](super::DirectMeter) over
//!   it: after each stop, the sentinel's difference is [`Evidence::kernel_entries`]
//!   and, when it is not 0, every reading gets [`pmu_core::Hazards::KERNEL_ENTRY`].
//!
//! A sentinel sees the kernel's own instructions, so any interrupt, exception, system
//! call or preemption between the edges counts. Its cost is one more counter read per
//! edge, outside the counters' window.

use std::cell::Cell;
use std::rc::Rc;

use pmu_core::{CounterWidth, Reading, RegionMeter};

use super::CounterSet;
use crate::backend::Backend;
use crate::error::Result;
use crate::verdict::{flag_kernel_entry, sentinel_entries, Evidence};

/// The counter that counts at the kernel's level only.
pub trait SentinelCounter {
    /// Its value (`width` bits).
    fn read(&self) -> u64;
    /// Its width.
    fn width(&self) -> CounterWidth;
    /// Whether its overflow flag is set.
    fn overflowed(&self) -> bool;
    /// Clears its overflow flag.
    fn clear_overflow(&self);
    /// Starts it.
    fn start(&self);
    /// Stops it; nothing when the access to it is gone (this runs on drop).
    fn stop(&self);
}

/// Which edge the next `read_all` is, the sentinel's value there, and its overflow flag
/// at the last stop edge.
#[derive(Clone, Copy, Debug, Default)]
struct Edges {
    /// The next `read_all` is a stop edge's.
    stopping: bool,
    /// At the start edge.
    start: u64,
    /// At the stop edge.
    end: u64,
    overflowed: bool,
}

/// A [`CounterSet`] whose every `read_all` reads the sentinel too, first and last.
#[derive(Debug)]
pub struct WithSentinel<C, S> {
    counters: C,
    sentinel: Rc<S>,
    edges: Rc<Cell<Edges>>,
}

impl<C: CounterSet, S: SentinelCounter> CounterSet for WithSentinel<C, S> {
    fn len(&self) -> usize {
        self.counters.len()
    }
    fn width(&self, i: usize) -> CounterWidth {
        self.counters.width(i)
    }
    #[inline(always)]
    fn read(&self, i: usize) -> u64 {
        self.counters.read(i)
    }
    #[inline(always)]
    fn overflowed(&self, i: usize) -> bool {
        self.counters.overflowed(i)
    }
    #[inline(always)]
    fn clear_overflow(&self, i: usize) {
        self.counters.clear_overflow(i)
    }
    fn start(&self, i: usize) {
        self.counters.start(i)
    }
    fn stop(&self, i: usize) {
        self.counters.stop(i)
    }
    /// Start edge: the sentinel, then the counters. Stop edge: the counters, then the
    /// sentinel.
    #[inline(always)]
    fn read_all(&self, out: &mut [u64]) {
        let mut edges = self.edges.get();
        if edges.stopping {
            self.counters.read_all(out);
            edges.end = self.sentinel.read();
        } else {
            edges.start = self.sentinel.read();
            self.counters.read_all(out);
        }
        self.edges.set(edges);
    }
    /// The counters' flags, then the sentinel's (only the stop edge asks).
    #[inline(always)]
    fn overflowed_all(&self, out: &mut [bool]) {
        self.counters.overflowed_all(out);
        let mut edges = self.edges.get();
        edges.overflowed = self.sentinel.overflowed();
        self.edges.set(edges);
    }
    /// The counters' flags, then the sentinel's (the start edge, after its reads).
    #[inline(always)]
    fn clear_overflows(&self) {
        self.counters.clear_overflows();
        self.sentinel.clear_overflow();
    }
    fn leave_programmed(&mut self) {
        self.counters.leave_programmed();
    }
}

/// Wraps `counters` so that every read also reads `sentinel`; hand the result to a
/// [`DirectMeter`](super::DirectMeter) and that meter to
/// [`SentinelMeter::new`] with the returned link.
pub fn with_sentinel<C: CounterSet, S: SentinelCounter>(
    counters: C,
    sentinel: S,
) -> (WithSentinel<C, S>, SentinelLink<S>) {
    let sentinel = Rc::new(sentinel);
    let edges = Rc::new(Cell::new(Edges::default()));
    (
        WithSentinel {
            counters,
            sentinel: Rc::clone(&sentinel),
            edges: Rc::clone(&edges),
        },
        SentinelLink { sentinel, edges },
    )
}

/// What a [`SentinelMeter`] shares with the [`WithSentinel`] inside its meter.
#[derive(Debug)]
pub struct SentinelLink<S> {
    sentinel: Rc<S>,
    edges: Rc<Cell<Edges>>,
}

/// A region meter with a kernel-entry sentinel: `inner` measures over a
/// [`WithSentinel`] counter set made by [`with_sentinel`] together with `link`.
#[derive(Debug)]
pub struct SentinelMeter<M, S: SentinelCounter> {
    inner: M,
    link: SentinelLink<S>,
    start: u64,
    entries: Option<u64>,
    described: crate::Sentinel,
    /// How many readings `stop` fills (`inner`'s events).
    events: usize,
}

impl<M: Backend, S: SentinelCounter> SentinelMeter<M, S> {
    /// `inner` watched by the sentinel of `link`, which counts `event` (described by
    /// `how` in [`crate::Sentinel::Counting`]).
    pub fn new(inner: M, link: SentinelLink<S>, event: &str, how: &str) -> Self {
        Self {
            events: inner.names().len(),
            inner,
            link,
            start: 0,
            entries: None,
            described: crate::Sentinel::Counting {
                event: event.to_owned(),
                how: how.to_owned(),
            },
        }
    }

    #[inline(always)]
    fn set_stopping(&self, stopping: bool) {
        let mut edges = self.link.edges.get();
        edges.stopping = stopping;
        self.link.edges.set(edges);
    }

    /// The sentinel's count over the last region (`None` before the first stop).
    pub fn kernel_entries(&self) -> Option<u64> {
        self.entries
    }
}

impl<M: Backend, S: SentinelCounter> RegionMeter for SentinelMeter<M, S> {
    type Error = crate::Error;

    #[inline(always)]
    fn start(&mut self) -> Result<()> {
        self.entries = None;
        self.set_stopping(false);
        self.inner.start()?;
        self.start = self.link.edges.get().start;
        Ok(())
    }

    #[inline(always)]
    fn stop(&mut self, out: &mut [Reading]) -> Result<()> {
        self.set_stopping(true);
        self.inner.stop(out)?;
        let edges = self.link.edges.get();
        let entries = sentinel_entries(
            self.link.sentinel.width(),
            self.start,
            edges.end,
            edges.overflowed,
        );
        self.entries = Some(entries);
        if entries > 0 {
            let n = self.events.min(out.len());
            flag_kernel_entry(&mut out[..n]);
        }
        Ok(())
    }
}

impl<M: Backend, S: SentinelCounter> Backend for SentinelMeter<M, S> {
    fn names(&self) -> Vec<String> {
        self.inner.names()
    }

    fn enable(&mut self) -> Result<()> {
        self.inner.enable()?;
        self.link.sentinel.start();
        Ok(())
    }

    fn disable(&mut self) -> Result<()> {
        self.inner.disable()?;
        self.link.sentinel.stop();
        Ok(())
    }

    fn evidence(&self) -> Evidence {
        let mut evidence = self.inner.evidence();
        evidence.kernel_entries = self.entries;
        evidence
    }

    fn sentinel(&self) -> crate::Sentinel {
        self.described.clone()
    }
}

/// A meter without a sentinel that says why (its sentinel is
/// [`crate::Sentinel::Off`] with the reason); everything else is `inner`'s.
#[derive(Debug)]
pub struct WithoutSentinel<M> {
    inner: M,
    why: String,
}

impl<M: Backend> WithoutSentinel<M> {
    /// `inner`, which has no sentinel because of `why`.
    pub fn new(inner: M, why: impl Into<String>) -> Self {
        Self {
            inner,
            why: why.into(),
        }
    }
}

impl<M: Backend> RegionMeter for WithoutSentinel<M> {
    type Error = crate::Error;

    #[inline(always)]
    fn start(&mut self) -> Result<()> {
        self.inner.start()
    }

    #[inline(always)]
    fn stop(&mut self, out: &mut [Reading]) -> Result<()> {
        self.inner.stop(out)
    }
}

impl<M: Backend> Backend for WithoutSentinel<M> {
    fn names(&self) -> Vec<String> {
        self.inner.names()
    }
    fn enable(&mut self) -> Result<()> {
        self.inner.enable()
    }
    fn disable(&mut self) -> Result<()> {
        self.inner.disable()
    }
    fn evidence(&self) -> Evidence {
        self.inner.evidence()
    }
    fn sentinel(&self) -> crate::Sentinel {
        crate::Sentinel::off(self.why.clone())
    }
}

impl<M, S: SentinelCounter> Drop for SentinelMeter<M, S> {
    /// Stops the sentinel (an implementation whose grant can go away checks it first).
    fn drop(&mut self) {
        self.link.sentinel.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::direct::DirectMeter;
    use crate::direct::Unchecked;
    use crate::sched::fake::FakeThread;
    use pmu_core::Hazards;
    use std::cell::RefCell;

    /// A counter set of one fake counter, and a fake sentinel; both log their accesses
    /// into one journal, so the order of reads is visible. The thread never switches or
    /// migrates unless a test says so.
    #[derive(Debug, Default)]
    struct Journal {
        thread: FakeThread,
        log: RefCell<Vec<&'static str>>,
        counter: Cell<u64>,
        sentinel: Cell<u64>,
        sentinel_overflow: Cell<bool>,
        sentinel_running: Cell<bool>,
    }

    #[derive(Debug)]
    struct FakeCounters<'j>(&'j Journal);
    #[derive(Debug)]
    struct FakeSentinel<'j>(&'j Journal);

    impl CounterSet for FakeCounters<'_> {
        fn len(&self) -> usize {
            1
        }
        fn width(&self, _: usize) -> CounterWidth {
            CounterWidth::W32
        }
        fn read(&self, _: usize) -> u64 {
            self.0.log.borrow_mut().push("counter");
            self.0.counter.get()
        }
        fn overflowed(&self, _: usize) -> bool {
            false
        }
        fn clear_overflow(&self, _: usize) {}
        fn start(&self, _: usize) {}
        fn stop(&self, _: usize) {}
    }

    impl SentinelCounter for FakeSentinel<'_> {
        fn read(&self) -> u64 {
            self.0.log.borrow_mut().push("sentinel");
            self.0.sentinel.get()
        }
        fn width(&self) -> CounterWidth {
            CounterWidth::W32
        }
        fn overflowed(&self) -> bool {
            self.0.sentinel_overflow.get()
        }
        fn clear_overflow(&self) {
            self.0.sentinel_overflow.set(false);
        }
        fn start(&self) {
            self.0.sentinel_running.set(true);
        }
        fn stop(&self) {
            self.0.sentinel_running.set(false);
        }
    }

    fn meter(j: &Journal) -> impl Backend + '_ {
        let (set, link) = with_sentinel(FakeCounters(j), FakeSentinel(j));
        let inner =
            DirectMeter::with_thread_source(set, vec!["instructions".into()], Unchecked, &j.thread)
                .unwrap();
        SentinelMeter::new(inner, link, "instructions", "fake")
    }

    /// A quiet region: the sentinel does not move, nothing is flagged, the evidence
    /// says 0 (not "unknown"); the sentinel's reads enclose the counter's at both
    /// edges.
    #[test]
    fn quiet_region_is_clean_and_enclosed() {
        let j = Journal::default();
        let mut m = meter(&j);
        m.enable().unwrap();
        assert!(j.sentinel_running.get());
        j.sentinel.set(500);
        m.start().unwrap();
        j.counter.set(1000);
        let mut out = [Reading::default()];
        m.stop(&mut out).unwrap();
        assert_eq!(out[0].value, 1000);
        assert!(out[0].hazards.is_empty(), "{:?}", out[0].hazards);
        assert_eq!(m.evidence().kernel_entries, Some(0));
        assert_eq!(
            *j.log.borrow(),
            ["sentinel", "counter", "counter", "sentinel"]
        );
    }

    /// The kernel ran between the edges (the sentinel moved by 251 instructions at
    /// PL1): every reading is flagged KERNEL_ENTRY, the count is the evidence, and the
    /// next quiet region is clean again.
    #[test]
    fn kernel_entry_is_flagged_with_its_count() {
        let j = Journal::default();
        let mut m = meter(&j);
        m.enable().unwrap();
        m.start().unwrap();
        j.sentinel.set(251);
        let mut out = [Reading::default()];
        m.stop(&mut out).unwrap();
        assert!(out[0].hazards.contains(Hazards::KERNEL_ENTRY));
        let ev = m.evidence();
        assert_eq!(ev.kernel_entries, Some(251));
        assert!(ev.thread_hazards().contains(Hazards::KERNEL_ENTRY));
        m.start().unwrap();
        m.stop(&mut out).unwrap();
        assert!(!out[0].hazards.contains(Hazards::KERNEL_ENTRY));
        assert_eq!(m.evidence().kernel_entries, Some(0));
    }

    /// A sentinel that wraps (32 bits) inside the region: the wrapped difference when
    /// the end is below the start; one more 2^32 when the flag is set and the end is
    /// not below it (pmu-core `CounterWidth::accumulate`, one wrap).
    #[test]
    fn sentinel_wraps() {
        let j = Journal::default();
        let mut m = meter(&j);
        m.enable().unwrap();
        j.sentinel.set(0xFFFF_FFF0);
        m.start().unwrap();
        j.sentinel.set(0x10);
        j.sentinel_overflow.set(true);
        let mut out = [Reading::default()];
        m.stop(&mut out).unwrap();
        assert_eq!(m.evidence().kernel_entries, Some(0x20));
        j.sentinel.set(7);
        m.start().unwrap();
        assert!(!j.sentinel_overflow.get(), "cleared at the start edge");
        j.sentinel_overflow.set(true);
        m.stop(&mut out).unwrap();
        assert_eq!(m.evidence().kernel_entries, Some(1 << 32));
        assert!(out[0].hazards.contains(Hazards::KERNEL_ENTRY));
    }

    #[test]
    fn says_what_it_is() {
        let j = Journal::default();
        let m = meter(&j);
        assert_eq!(
            m.sentinel(),
            crate::Sentinel::Counting {
                event: "instructions".into(),
                how: "fake".into()
            }
        );
        let (set, _) = with_sentinel(FakeCounters(&j), FakeSentinel(&j));
        let inner =
            DirectMeter::with_thread_source(set, vec!["instructions".into()], Unchecked, &j.thread)
                .unwrap();
        let off = WithoutSentinel::new(inner, "no privilege filter");
        assert_eq!(off.sentinel(), crate::Sentinel::off("no privilege filter"));
    }

    #[test]
    fn disable_and_drop_stop_the_sentinel() {
        let j = Journal::default();
        let mut m = meter(&j);
        m.enable().unwrap();
        m.disable().unwrap();
        assert!(!j.sentinel_running.get());
        m.enable().unwrap();
        drop(m);
        assert!(!j.sentinel_running.get());
    }
}
