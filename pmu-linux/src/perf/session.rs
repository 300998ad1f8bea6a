//! [`Session`]: one perf group, its pages, and the state of the region being measured
//! (the [module docs](super) say how it opens and reads).

use pmu_core::mmap_page::{BaseRead, PageRead};

use super::group::{Group, GroupRead};
use super::kernel_member::{self, Edge};
use super::options::Options;
use super::page::{KernelPage, MmapPage};
use super::read;
use super::region::{RegionRecord, SyscallFreeEvent};
use crate::error::{Error, Op, Result};
use crate::machine::events::{self, EventKind, EventSpec};
use crate::machine::sched::{CpuSource, ThreadStamp};
use crate::machine::sysfs::Sysfs;
use crate::sys;
use crate::verdict::{FallbackReason, Sample};
use crate::MAX_EVENTS;

/// An open perf group and the state of the region being measured.
///
/// Reads regions through [`pmu_core::RegionMeter`] (see [`crate::verdict`] for the
/// hazards); the [`mod@crate::measure`] functions take it.
///
/// Neither `Send` nor `Sync`: the events count the thread that opened them (pid 0),
/// and the hazards are judged from the calling thread's CPU (its rseq area) and switch
/// counts, so a session must stay on its thread.
#[derive(Debug)]
pub struct Session {
    pub(super) group: Group,
    /// Event `i`'s page, beside the mapping in `group` that owns it (kept as long).
    pub(super) pages: [Option<KernelPage>; MAX_EVENTS],
    /// The number of events (≤ MAX_EVENTS).
    pub(super) len: usize,
    /// Where syscall-free regions take the opening thread's CPU from.
    pub(super) cpu_source: CpuSource,
    /// Syscall-free and the CPU from rseq: the thread's `cpu_id` (one load). The start's first
    /// test: `None` sends it on to the other cases.
    pub(super) syscall_free_rseq: Option<crate::machine::rseq::CpuId>,
    /// As `syscall_free_rseq` for a session with a kernel-entry sentinel (then `syscall_free_rseq` is
    /// `None`): the start's second test, so that a session without one pays nothing.
    pub(super) syscall_free_rseq_sentinel: Option<crate::machine::rseq::CpuId>,
    pub(super) _this_thread: std::marker::PhantomData<*const ()>,
    pub(super) start: [Sample; MAX_EVENTS],
    pub(super) end: [Sample; MAX_EVENTS],
    pub(super) start_thread: ThreadStamp,
    pub(super) end_thread: ThreadStamp,
    /// Per event, what a syscall-free region needs, side by side (one base address per event
    /// in the hot loops); exactly one per event when regions may take the syscall-free evidence
    /// (page locks + CPU: every event read through its page), else none.
    pub(super) syscall_free_events: Box<[SyscallFreeEvent]>,
    pub(super) last_region: RegionRecord,
    /// The CPU at a syscall-free start: the rseq `cpu_id`, or `sched_getcpu()`'s with
    /// `u32::MAX` for none (see [`Session::syscall_free_start_stamp`]).
    pub(super) syscall_free_start_cpu: u32,
    /// The kernel-entry sentinel's page and its reads over the last region, if the
    /// session has one ([`Options::kernel_sentinel`]).
    pub(super) sentinel_read: Option<kernel_member::SentinelRead>,
    /// Whether the session has a sentinel, or why not.
    pub(super) sentinel: crate::sentinel::Sentinel,
    /// The machine counts exactly and every event is a user-level count of
    /// instructions or cycles read through its page ([`Options::exact_emulation`]):
    /// regions take the getrusage edges and each edge's reads are watched for a
    /// second try.
    pub(super) exact: bool,
    /// Some read of the last region's edges took a second try (the kernel rewrote its
    /// page during the read): its instructions are in the counts, so the region is not
    /// exact ([`crate::verdict::Evidence::exact_emulation`] stays false).
    pub(super) retried: bool,
}

impl Session {
    /// Opens `names` (resolved against the system's sysfs) as one group, disabled.
    ///
    /// # Errors
    /// Name errors (as [`crate::Event`] names resolve), [`Error::Open`] with the kernel's reason,
    /// [`crate::error::GroupError::NoEvents`], [`crate::error::GroupError::TooMany`], mmap failures.
    pub fn open(names: &[&str], options: Options) -> Result<Self> {
        Self::open_in(&Sysfs::system(), names, options)
    }

    /// Opens `names` resolved against `sysfs`.
    ///
    /// # Errors
    /// As [`Session::open`].
    pub(crate) fn open_in(sysfs: &Sysfs, names: &[&str], options: Options) -> Result<Self> {
        let specs = names
            .iter()
            .map(|n| events::resolve(n, sysfs))
            .collect::<Result<Vec<_>>>()?;
        Self::from_specs(specs, options)
    }

    /// Opens resolved events as one group, the first one the leader, all disabled.
    ///
    /// # Errors
    /// As [`Session::open`].
    pub(crate) fn from_specs(specs: Vec<EventSpec>, options: Options) -> Result<Self> {
        if !options.kernel_sentinel {
            return Self::from_group(
                Group::open(specs, options)?,
                crate::sentinel::Sentinel::off(kernel_member::NOT_ASKED),
            );
        }
        let mut group = Group::open(specs.clone(), options)?;
        let status = match kernel_member::open(&group, options) {
            Ok(event) => {
                let status = kernel_member::counting(&event);
                group.sentinel = Some(event);
                status
            }
            Err(why) => crate::sentinel::Sentinel::off(why),
        };
        let session = Self::from_group(group, status)?;
        let mut session = session;
        match kernel_member::trial(&session.group)? {
            Ok(Some(read)) => {
                session.sentinel_read = Some(read);
                Ok(session)
            }
            Ok(None) => Ok(session),
            // Never worth failing a measurement: the events again, without it.
            Err(fallback) => {
                // arm64 with perf_user_access = 0 publishes index 0 even on a counter.
                let fallback = match fallback {
                    pmu_core::Fallback::NotScheduled if session.group.user_reads_off => {
                        pmu_core::Fallback::NoUserAccess
                    }
                    other => other,
                };
                drop(session);
                Self::from_group(
                    Group::open(specs, options.kernel_sentinel(false))?,
                    crate::sentinel::Sentinel::off(kernel_member::unreadable(fallback)),
                )
            }
        }
    }

    /// The session over an open group (with its sentinel, if any).
    fn from_group(group: Group, sentinel: crate::sentinel::Sentinel) -> Result<Self> {
        let options = group.options;
        let mut pages = [None; MAX_EVENTS];
        for (slot, event) in pages.iter_mut().zip(&group.events) {
            // SAFETY: the handle lives in the same `Session` as `group`, which owns the
            // mapping and is never changed after this: the page outlives every use.
            *slot = event
                .page
                .as_ref()
                .map(|page| unsafe { KernelPage::new(page) });
        }
        let exact = options.exact_emulation.is_some()
            && options.exclude_kernel
            && group
                .events
                .iter()
                .all(|e| e.page.is_some() && e.spec.counts_instructions_or_cycles());
        let syscall_free = !exact
            && group
                .events
                .iter()
                .all(|e| e.page.is_some() && e.spec.kind != EventKind::Software);
        let len = group.events.len().min(MAX_EVENTS);
        let cpu_source = CpuSource::this_thread();
        let syscall_free_events = if syscall_free {
            pages[..len]
                .iter()
                .flatten()
                .map(|&page| SyscallFreeEvent {
                    page,
                    base: BaseRead::default(),
                    count: 0,
                })
                .collect()
        } else {
            Box::default()
        };
        let with_sentinel = group.sentinel.is_some();
        Ok(Self {
            len,
            group,
            pages,
            cpu_source,
            syscall_free_rseq: match cpu_source {
                CpuSource::Rseq(cpu) if syscall_free && !with_sentinel => Some(cpu.cpu_id()),
                _ => None,
            },
            syscall_free_rseq_sentinel: match cpu_source {
                CpuSource::Rseq(cpu) if syscall_free && with_sentinel => Some(cpu.cpu_id()),
                _ => None,
            },
            _this_thread: std::marker::PhantomData,
            start: [Sample::default(); MAX_EVENTS],
            end: [Sample::default(); MAX_EVENTS],
            start_thread: ThreadStamp::default(),
            end_thread: ThreadStamp::default(),
            syscall_free_events,
            last_region: RegionRecord::Sampled,
            syscall_free_start_cpu: u32::MAX,
            sentinel_read: None,
            sentinel,
            exact,
            retried: false,
        })
    }

    /// The machine counts exactly and every event qualifies
    /// ([`crate::verdict::Evidence::exact_emulation`]): what the machine is.
    pub(crate) fn exact_emulation(&self) -> Option<crate::machine::emulation::ExactEmulation> {
        self.group.options.exact_emulation.filter(|_| self.exact)
    }

    rig_pub! {
        /// Whether regions are watched by the kernel-entry sentinel
        /// ([`Options::kernel_sentinel`]): a non-zero count over a region puts
        /// [`crate::Hazards::KERNEL_ENTRY`] on every reading and the count in
        /// [`crate::verdict::Evidence::kernel_entries`]; or why the session has none.
        pub fn sentinel(&self) -> &crate::sentinel::Sentinel {
            &self.sentinel
        }
    }

    rig_pub! {
        /// Whether regions judge context switches and migrations from the pages' `lock`s
        /// and the thread's CPU alone when every read of the region is a one-instruction
        /// one (see [`crate::verdict`]); false on a machine that counts exactly, for
        /// software events or unmapped pages.
        pub fn syscall_free(&self) -> bool {
            !self.syscall_free_events.is_empty()
        }
    }

    /// Syscall-free regions take their CPU from rseq (with or without a sentinel).
    pub(super) fn cpu_from_rseq_syscall_free(&self) -> bool {
        self.syscall_free_rseq.is_some() || self.syscall_free_rseq_sentinel.is_some()
    }

    rig_pub! {
        /// Whether syscall-free regions read the thread's CPU from its rseq area (one load), not
        /// with `sched_getcpu()` (a kernel without rseq).
        pub fn cpu_from_rseq(&self) -> bool {
            matches!(self.cpu_source, CpuSource::Rseq(_))
        }
    }

    rig_pub! {
        /// The events, in group order (the first is the leader).
        pub fn specs(&self) -> impl ExactSizeIterator<Item = &EventSpec> {
            self.group.events.iter().map(|e| &e.spec)
        }
    }

    rig_pub! {
        /// The number of events.
        pub fn len(&self) -> usize {
            self.group.events.len()
        }
    }

    rig_pub! {
        /// Never true: a session has at least one event.
        pub fn is_empty(&self) -> bool {
            self.group.events.is_empty()
        }
    }

    rig_pub! {
        /// What the last region's hazards were derived from.
        pub fn evidence(&self) -> crate::verdict::Evidence {
            <Self as crate::backend::Backend>::evidence(self)
        }
    }

    /// Enables the whole group.
    ///
    /// # Errors
    /// [`Error::Io`] with [`Op::Enable`].
    pub fn enable(&self) -> Result<()> {
        self.group.ioctl(sys::perf::Ioctl::Enable, Op::Enable)
    }

    /// Disables the whole group.
    ///
    /// # Errors
    /// [`Error::Io`] with [`Op::Disable`].
    pub fn disable(&self) -> Result<()> {
        self.group.ioctl(sys::perf::Ioctl::Disable, Op::Disable)
    }

    rig_pub! {
        /// Resets every count of the group to 0.
        ///
        /// # Errors
        /// [`Error::Io`] with [`Op::Reset`].
        pub fn reset(&self) -> Result<()> {
            self.group.ioctl(sys::perf::Ioctl::Reset, Op::Reset)
        }
    }

    /// Whether the events fit on the hardware counters now, checked before any work:
    /// a trial enable and `read()`, then disabled and reset. Opening cannot tell: the
    /// events are opened disabled, and Linux checks a group against the counters only
    /// for events that are not (6.12 drivers/perf/arm_pmu.c `validate_event` accepts
    /// every `PERF_EVENT_STATE_OFF` sibling; x86's `validate_group` goes through
    /// `collect_events`, arch/x86/events/core.c, which skips siblings that are off). A
    /// pinned group the kernel cannot put on the counters goes into an error state at
    /// the enable, and its `read()` returns 0 bytes
    /// (kernel/events/core.c `merge_sched_in`, `__perf_read`). EL0 cannot read
    /// PMCR_EL0.N, and sysfs does not publish the number of counters, so this trial is
    /// the one true answer; it is an answer for now: a CPU-wide pinned perf user that
    /// comes later can still take the counters (the reads then fail, see
    /// [`crate::measure::measure_keeping_partial`]). Unpinned sessions always pass: the kernel
    /// multiplexes them instead.
    ///
    /// # Errors
    /// [`crate::error::GroupError::DoesNotFit`] with how many of the first events do fit together;
    /// the ioctl and read errors.
    pub(crate) fn check_fits(&self) -> Result<()> {
        if self.trial()? {
            return Ok(());
        }
        let specs: Vec<EventSpec> = self.specs().cloned().collect();
        let options = self.group.options.map_pages(false);
        let fit = (1..specs.len())
            .rev()
            .find(|&k| {
                Session::from_specs(specs[..k].to_vec(), options)
                    .and_then(|s| s.trial())
                    .unwrap_or(false)
            })
            .unwrap_or(0);
        Err(Error::Group(crate::error::GroupError::DoesNotFit {
            events: specs.len(),
            fit,
        }))
    }

    /// One trial enable + read (pinned sessions): false when the read returned 0 bytes.
    fn trial(&self) -> Result<bool> {
        if !self.group.options.pinned {
            return Ok(true);
        }
        self.enable()?;
        let read = self.read_group();
        self.disable()?;
        self.reset()?;
        match read {
            Ok(_) => Ok(true),
            Err(Error::Group(crate::error::GroupError::ShortRead { got: 0, .. })) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// All counts with one `read()` of the leader.
    ///
    /// # Errors
    /// [`Error::Io`] with [`Op::Read`]; [`crate::error::GroupError::ShortRead`] (0 bytes: the pinned
    /// group lost its counters); [`crate::error::GroupError::Mismatch`].
    pub fn read_group(&self) -> Result<GroupRead> {
        self.group.read()
    }

    /// Event `i` through its metadata page with one instruction, after every earlier
    /// instruction completed (as the perf module's `read()`), or why that is not possible
    /// now.
    ///
    /// A software event's page has `index` 0 and, on x86, `cap_user_rdpmc` 0 as well;
    /// it reports [`pmu_core::Fallback::NotScheduled`]: it is never on a hardware
    /// counter. An `i` that names no event of the session reports
    /// [`FallbackReason::NoPage`].
    #[inline(always)]
    pub fn read_fast(&self, i: usize) -> Result<PageRead, FallbackReason> {
        read::synchronize();
        self.read_fast_unsynchronized(i)
    }

    /// [`Session::read_fast`] without waiting for the instructions before it.
    #[inline(always)]
    fn read_fast_unsynchronized(&self, i: usize) -> Result<PageRead, FallbackReason> {
        let page = self.kernel_page(i)?;
        read::read_base(page)
            .map(|base| base.read)
            .map_err(|fallback| self.group.reason(i, fallback))
    }

    /// Event `i`'s page, or [`FallbackReason::NoPage`]. (The page reads are called
    /// directly after it: passed in as a closure, the read stayed out of line.)
    #[inline(always)]
    fn kernel_page(&self, i: usize) -> Result<KernelPage, FallbackReason> {
        match self.pages.get(i) {
            Some(Some(page)) => Ok(*page),
            _ => Err(FallbackReason::NoPage),
        }
    }

    rig_pub! {
        /// The count of event `i` with one instruction and nothing else: the cheapest read
        /// (the page's seqlock, `index`, `offset`, `pmc_width`, the counter; not the page
        /// times, so it cannot tell whether the event was multiplexed: use
        /// [`Session::read_fast`] or a region for that).
        ///
        /// # Errors
        /// As [`Session::read_fast`].
        #[inline(always)]
        pub fn read_count(&self, i: usize) -> Result<u64, FallbackReason> {
            read::synchronize();
            let page = self.kernel_page(i)?;
            read::read_count(page).map_err(|fallback| self.group.reason(i, fallback))
        }
    }

    rig_pub! {
        /// The metadata page of event `i`, if mapped.
        pub fn page(&self, i: usize) -> Option<&MmapPage> {
            self.group.events.get(i)?.page.as_ref()
        }
    }

    /// The software event ids, per event (`None` for other events).
    pub(crate) fn software_ids(&self) -> &[Option<u64>] {
        &self.group.software_ids[..self.group.events.len()]
    }
}

impl pmu_core::RegionMeter for Session {
    type Error = Error;

    /// The syscall-free start where the session allows it and every event reads fast: the
    /// rseq CPU, then every event. Otherwise the thread's switch counts and CPU, then
    /// every event (one-instruction reads last).
    #[inline(always)]
    fn start(&mut self) -> Result<()> {
        // The usual case first, one test: syscall-free with the CPU from rseq.
        if let Some(cpu) = self.syscall_free_rseq {
            if self.start_syscall_free::<false>(cpu.current()) {
                return Ok(());
            }
        } else if self.sentinel_read.is_some() {
            if self.start_syscall_free_sentinel() {
                return Ok(());
            }
        } else if !self.syscall_free_events.is_empty()
            && self.start_syscall_free::<false>(
                crate::machine::sched::current_cpu().unwrap_or(u32::MAX),
            )
        {
            return Ok(());
        }
        self.start_getrusage()
    }

    /// Every event (one-instruction reads first), then the CPU (and the switch counts
    /// unless start and stop were both syscall-free); the readings as [`crate::verdict`]
    /// describes, the [`crate::verdict::Evidence`] on demand.
    #[inline(always)]
    fn stop(&mut self, out: &mut [pmu_core::Reading]) -> Result<()> {
        if self.last_region == RegionRecord::BasesTaken && self.stop_syscall_free::<false>(out) {
            return Ok(());
        }
        if self.last_region == RegionRecord::BasesTakenSentinel
            && self.stop_syscall_free_sentinel(out)
        {
            return Ok(());
        }
        self.stop_getrusage(out)
    }
}

/// The region edges of a session with a kernel-entry sentinel, and the getrusage ones:
/// out of line, so that the syscall-free edges of a session without a sentinel carry
/// none of the sentinel's reads (`cargo xtask bench` measures both).
impl Session {
    /// The syscall-free start with the sentinel (false: the getrusage start follows).
    #[inline(never)]
    fn start_syscall_free_sentinel(&mut self) -> bool {
        if self.syscall_free_events.is_empty() {
            return false;
        }
        let cpu = match self.syscall_free_rseq_sentinel {
            Some(cpu) => cpu.current(),
            None => crate::machine::sched::current_cpu().unwrap_or(u32::MAX),
        };
        self.start_syscall_free::<true>(cpu)
    }

    fn start_getrusage(&mut self) -> Result<()> {
        self.last_region = RegionRecord::Sampled;
        self.start_thread = ThreadStamp::before(&crate::machine::sched::Kernel)?;
        self.sample_into(Edge::Start)
    }

    /// The syscall-free stop with the sentinel (false: the getrusage stop follows).
    #[inline(never)]
    fn stop_syscall_free_sentinel(&mut self, out: &mut [pmu_core::Reading]) -> bool {
        self.stop_syscall_free::<true>(out)
    }

    fn stop_getrusage(&mut self, out: &mut [pmu_core::Reading]) -> Result<()> {
        let n = self.len();
        if out.len() < n {
            return Err(pmu_core::Error::ReadingsMismatch {
                expected: n as u32,
                got: out.len() as u32,
            }
            .into());
        }
        self.sample_into(Edge::Stop)?;
        self.end_thread = ThreadStamp::after(&crate::machine::sched::Kernel)?;
        self.evaluate(out);
        Ok(())
    }
}

impl crate::backend::Backend for Session {
    fn names(&self) -> Vec<String> {
        self.specs().map(|s| s.name.clone()).collect()
    }

    fn enable(&mut self) -> Result<()> {
        Session::enable(self)
    }

    fn disable(&mut self) -> Result<()> {
        Session::disable(self)
    }

    fn evidence(&self) -> crate::verdict::Evidence {
        self.evaluate(&mut [pmu_core::Reading::default(); MAX_EVENTS])
    }

    fn sentinel(&self) -> crate::sentinel::Sentinel {
        Session::sentinel(self).clone()
    }
}
