//! A region's two edges: the syscall-free path (one-instruction reads kept as bases, the
//! thread's CPU, nothing else while no page changes) and the getrusage one (every
//! event sampled, the thread's switch counts and CPU), and how the last region was
//! recorded.

use pmu_core::mmap_page::BaseRead;

use super::group::Group;
use super::kernel_member::{Edge, SyscallFreeCount};
use super::session::Session;
use crate::error::Result;
use crate::machine::sched::ThreadStamp;
use crate::perf::page::KernelPage;
use crate::perf::read;
use crate::verdict::{FallbackReason, ReadPath, Sample};
use crate::MAX_EVENTS;

/// One event in a syscall-free region.
#[derive(Clone, Copy, Debug)]
pub(super) struct SyscallFreeEvent {
    /// The event's page (as in `Session::pages`).
    pub(super) page: KernelPage,
    /// The start read.
    pub(super) base: BaseRead,
    /// The count of a quiet region.
    pub(super) count: u64,
}

impl SyscallFreeEvent {
    /// The start read: the base now, false if the event needs `read()`.
    #[inline(always)]
    pub(super) fn take_base(&mut self) -> bool {
        match read::read_base(self.page) {
            Ok(base) => {
                self.base = base;
                true
            }
            Err(_) => false,
        }
    }

    /// The stop read: the count since the base into `reading` (kept for the
    /// evidence too), false if the kernel rewrote the page meanwhile.
    #[inline(always)]
    pub(super) fn count_now(&mut self, reading: &mut pmu_core::Reading) -> bool {
        match read::count_since(self.page, &self.base) {
            Some(count) => {
                *reading = pmu_core::Reading::new(count);
                self.count = count;
                true
            }
            None => false,
        }
    }
}

impl Session {
    /// Samples every event into `start` or `end`: one-instruction reads where the
    /// pages allow, one group `read()` for the others.
    ///
    /// At the start edge the fast reads are repeated after the `read()`, so that they
    /// are the last thing before the region; at the stop edge they come first, and the
    /// locks of the `read()` events are taken after it. Either way the window the
    /// locks watch covers the whole region.
    pub(super) fn sample_into(&mut self, edge: Edge) -> Result<()> {
        let n = self.group.events.len();
        let (group, pages) = (&self.group, &self.pages);
        // Before the reads of either edge: the instructions before them are counted.
        read::synchronize();
        let out = match edge {
            Edge::Start => &mut self.start,
            Edge::Stop => &mut self.end,
        };
        // The sentinel's window contains the events' one-instruction reads: its start
        // read comes first, its stop read after them (before any read()).
        if edge == Edge::Start {
            if let Some(sentinel) = &mut self.sentinel_read {
                sentinel.sample(Edge::Start);
            }
        }
        let mut need_read = false;
        if self.exact {
            // Each read's `lock` before it: a read that ends with another one took a
            // second try, whose instructions the counts now hold.
            if edge == Edge::Start {
                self.retried = false;
            }
            for (i, sample) in out.iter_mut().enumerate().take(n) {
                let before = page_lock(pages, i);
                *sample = sample_page(group, pages, i);
                need_read |= sample.path != ReadPath::Fast;
                self.retried |= sample.lock != before;
            }
        } else {
            for (i, sample) in out.iter_mut().enumerate().take(n) {
                *sample = sample_page(group, pages, i);
                need_read |= sample.path != ReadPath::Fast;
            }
        }
        if edge == Edge::Stop {
            if let Some(sentinel) = &mut self.sentinel_read {
                sentinel.sample(Edge::Stop);
            }
        }
        if need_read {
            let read = group.read()?;
            // The read() entered the kernel: the sentinel starts again after it.
            if edge == Edge::Start {
                if let Some(sentinel) = &mut self.sentinel_read {
                    sentinel.sample(Edge::Start);
                }
            }
            let fill = |i: usize, sample: &mut Sample| {
                sample.value = read.values[i];
                (sample.time_enabled, sample.time_running) = read.times[i];
            };
            for (i, sample) in out.iter_mut().enumerate().take(n) {
                if sample.path != ReadPath::Fast {
                    fill(i, sample);
                    if edge == Edge::Stop {
                        sample.lock = page_lock(pages, i);
                    }
                }
            }
            if edge == Edge::Start {
                for (i, sample) in out.iter_mut().enumerate().take(n) {
                    if sample.path == ReadPath::Fast {
                        *sample = sample_page(group, pages, i);
                        if sample.path != ReadPath::Fast {
                            fill(i, sample);
                        }
                    }
                }
            }
        }
        if edge == Edge::Start {
            // After the start's reads: none of the region's instructions begins before.
            read::synchronize();
        }
        Ok(())
    }

    /// The syscall-free start: the thread's CPU (`cpu`, taken by the caller before anything
    /// else), then one-instruction reads of every event, kept as base reads for the stop;
    /// false (nothing kept) as soon as one event needs `read()`.
    /// `SENTINEL`: the session has a kernel-entry sentinel, read first (so that its
    /// window contains the events' reads); a separate copy, so that a session without
    /// one runs the same code.
    #[inline(always)]
    pub(super) fn start_syscall_free<const SENTINEL: bool>(&mut self, cpu: u32) -> bool {
        // Before the reads: what came before the region is counted before it (an
        // instruction still in flight would otherwise land in the region).
        read::synchronize();
        if SENTINEL {
            if let Some(sentinel) = &mut self.sentinel_read {
                sentinel.start_syscall_free();
            }
        }
        // One event (the common region) apart, without the loop's set-up and control;
        // groups pay for the test.
        match &mut *self.syscall_free_events {
            [only] => {
                if !only.take_base() {
                    return false;
                }
            }
            events => {
                for event in events {
                    if !event.take_base() {
                        return false;
                    }
                }
            }
        }
        // After the reads: none of the region's instructions begins before them.
        read::synchronize();
        self.syscall_free_start_cpu = cpu;
        self.last_region = if SENTINEL {
            RegionRecord::BasesTakenSentinel
        } else {
            RegionRecord::BasesTaken
        };
        true
    }

    /// The thread stamp of a syscall-free start: no switch counts, its CPU.
    pub(super) fn syscall_free_start_stamp(&self) -> ThreadStamp {
        let cpu = self.syscall_free_start_cpu;
        ThreadStamp {
            switches: None,
            cpu: if self.cpu_from_rseq_syscall_free() {
                Some(cpu)
            } else {
                (cpu != u32::MAX).then_some(cpu)
            },
            cpu_from_rseq: self.cpu_from_rseq_syscall_free(),
        }
    }

    /// The syscall-free stop after a syscall-free start: every event's counter read against its
    /// base ([`read::count_since`]), the readings from the counts. That succeeds only
    /// while no page's `lock` moved: the thread was never switched out, so it cannot
    /// have migrated either (a migration switches it out, and the sched-out rewrites
    /// every page: arm_pmu.c `armpmu_del`; x86 at the sched-in,
    /// `x86_perf_event_set_period`) nor been multiplexed (the page times change only in
    /// those updates): no hazard, and the CPU is the start's. A moved lock: see
    /// [`Session::stop_syscall_free_moved`]. False (readings unfinished) when some event
    /// needs `read()` now or `out` has fewer readings than there are events.
    ///
    /// `SENTINEL`: as in [`Session::start_syscall_free`]; the sentinel is read last.
    #[inline(always)]
    pub(super) fn stop_syscall_free<const SENTINEL: bool>(
        &mut self,
        out: &mut [pmu_core::Reading],
    ) -> bool {
        // Before the reads: every instruction of the region is counted.
        read::synchronize();
        // One event apart, as in the start (and `out` then needs one reading, the
        // group loop `out.len() >= events`: one test each instead of cutting `out` to
        // the events first). Too few readings: false, the getrusage stop reports them.
        match (&mut *self.syscall_free_events, &mut *out) {
            ([only], [reading, ..]) => {
                if !only.count_now(reading) {
                    return self.stop_syscall_free_moved(out);
                }
            }
            (events, readings) if readings.len() >= events.len() => {
                for (event, reading) in events.iter_mut().zip(readings) {
                    if !event.count_now(reading) {
                        return self.stop_syscall_free_moved(out);
                    }
                }
            }
            _ => return false,
        }
        // The sentinel last, so that its window contains the events' reads.
        if SENTINEL {
            if let Some(sentinel) = &mut self.sentinel_read {
                match sentinel.stop_syscall_free() {
                    SyscallFreeCount::Counted(0) => {}
                    SyscallFreeCount::Counted(_) => {
                        crate::verdict::flag_kernel_entry(
                            &mut out[..self.syscall_free_events.len()],
                        );
                    }
                    SyscallFreeCount::Sampled => self.sentinel_sampled(out),
                }
            }
        }
        self.last_region = RegionRecord::Undisturbed;
        true
    }

    /// A syscall-free stop whose sentinel was not counted from its base (its page moved: an
    /// overflow reload of its own counter; or its start read failed): the verdict
    /// from its samples.
    #[cold]
    #[inline(never)]
    fn sentinel_sampled(&self, out: &mut [pmu_core::Reading]) {
        if let Some(sentinel) = &self.sentinel_read {
            let (start, end) = sentinel.samples();
            if crate::verdict::sentinel_count(&start, &end).is_ok_and(|count| count > 0) {
                crate::verdict::flag_kernel_entry(&mut out[..self.syscall_free_events.len()]);
            }
        }
    }

    /// A syscall-free region whose pages the kernel rewrote: full reads of every event (false
    /// if one needs `read()` now: the getrusage stop follows, with the start's samples
    /// in place), then the readings as [`crate::verdict::evaluate_perf`] judges them:
    /// CONTEXT_SWITCH on every reading if a `lock` moved, the thread's CPU now
    /// (CPU_MIGRATION if it is not the start's), MULTIPLEXED where an event's page
    /// times advanced differently.
    #[cold]
    #[inline(never)]
    pub(super) fn stop_syscall_free_moved(&mut self, out: &mut [pmu_core::Reading]) -> bool {
        for i in 0..self.len {
            self.start[i] = Sample::fast(self.syscall_free_events[i].base.read);
        }
        self.last_region = RegionRecord::PageRewritten;
        self.start_thread = self.syscall_free_start_stamp();
        for i in 0..self.len {
            match self.pages[i].map(read::read_base) {
                Some(Ok(base)) => self.end[i] = Sample::fast(base.read),
                _ => return false,
            }
        }
        if let Some(sentinel) = &mut self.sentinel_read {
            sentinel.sample(Edge::Stop);
        }
        let moved = (0..self.len).any(|i| self.start[i].lock != self.end[i].lock);
        // The CPU again only if a lock moved (else the thread never left its CPU);
        // the readings from evaluate_perf, as every getrusage region's.
        self.end_thread = if moved {
            self.cpu_source.stamp()
        } else {
            self.start_thread
        };
        self.evaluate(out);
        true
    }

    /// The readings and evidence of the last region, from everything its edges kept.
    pub(super) fn evaluate(&self, out: &mut [pmu_core::Reading]) -> crate::verdict::Evidence {
        let n = self.len;
        let (mut start, mut end) = (self.start, self.end);
        // A syscall-free start keeps only its CPU (PageRewritten copied it into `start_thread`).
        let start_thread = match self.last_region {
            RegionRecord::BasesTaken
            | RegionRecord::BasesTakenSentinel
            | RegionRecord::Undisturbed => self.syscall_free_start_stamp(),
            RegionRecord::Sampled | RegionRecord::PageRewritten => self.start_thread,
        };
        let mut end_thread = self.end_thread;
        if self.last_region == RegionRecord::Undisturbed {
            // Nothing moved: the stop's pages were the start's, only the values differ.
            for i in 0..n {
                start[i] = Sample::fast(self.syscall_free_events[i].base.read);
                end[i] = Sample {
                    value: start[i]
                        .value
                        .wrapping_add(self.syscall_free_events[i].count),
                    ..start[i]
                };
            }
            end_thread = start_thread;
        }
        let mut evidence = crate::verdict::evaluate_perf(
            &start[..n],
            &end[..n],
            self.software_ids(),
            start_thread,
            end_thread,
            &mut out[..n],
        );
        if let Some(sentinel) = &self.sentinel_read {
            let (start, end) = sentinel.samples();
            crate::verdict::apply_sentinel(&mut evidence, &start, &end, &mut out[..n]);
        }
        if self.exact && !self.retried && self.last_region == RegionRecord::Sampled {
            crate::verdict::apply_exact_emulation(&mut evidence, &mut out[..n]);
        }
        evidence
    }
}

/// Where the last region's edges are recorded (which path it took).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum RegionRecord {
    /// Both edges sampled with getrusage: `start`, `end` and the thread stamps hold it.
    #[default]
    Sampled,
    /// Started syscall-free: the start is in `syscall_free_events`' base reads, its CPU in
    /// `syscall_free_start_cpu`.
    BasesTaken,
    /// As `BasesTaken`, with the kernel-entry sentinel's start read.
    BasesTakenSentinel,
    /// Stopped syscall-free with no page rewritten since the start: the counts are in
    /// `syscall_free_events`.
    Undisturbed,
    /// Stopped syscall-free after the kernel rewrote a page: `start` and `end` hold it.
    PageRewritten,
}

/// Event `i` read through its page (no `isb`), or why `read()` is needed, with the
/// page's `lock` then.
#[inline(always)]
pub(super) fn sample_page(
    group: &Group,
    pages: &[Option<KernelPage>; MAX_EVENTS],
    i: usize,
) -> Sample {
    match pages[i].map(read::read_base) {
        Some(Ok(base)) => Sample::fast(base.read),
        Some(Err(fallback)) => Sample {
            lock: page_lock(pages, i),
            path: ReadPath::Syscall(group.reason(i, fallback)),
            ..Sample::default()
        },
        None => Sample {
            path: ReadPath::Syscall(FallbackReason::NoPage),
            ..Sample::default()
        },
    }
}

/// The page's `lock` of event `i`, if mapped.
#[inline(always)]
pub(super) fn page_lock(pages: &[Option<KernelPage>; MAX_EVENTS], i: usize) -> Option<u32> {
    pages[i].map(|p| pmu_core::UserPage::lock(&p.view()))
}
