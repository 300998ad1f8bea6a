//! The session's kernel-entry sentinel ([`Options::kernel_sentinel`]): one more
//! member of the group, `instructions` (or `cycles`) with `exclude_user` set and
//! `exclude_kernel` clear, so it counts only while the CPU runs the kernel on behalf of
//! (or interrupting) this thread, read through its metadata page at both region edges.
//!
//! Where the reads come from: arm64 (Linux 6.12 drivers/perf/arm_pmuv3.c) publishes a
//! user-readable index for any task-bound event opened with the `rdpmc` term
//! (`armv8pmu_user_event_idx`: the event's `PERF_EVENT_FLAG_USER_READ_CNT`, set in
//! `__armv8_pmuv3_map_event` whatever its privilege filter), and
//! `armv8pmu_enable_user_access` sets PMUSERENR_EL0.ER | CR for the task: EL0 may read
//! every event counter, including one that counts only EL1. x86 (arch/x86/events/
//! core.c `x86_pmu_event_idx`): RDPMC reads any counter once CR4.PCE is set for the
//! mm, whatever the counter's USR/OS bits. The sentinel is never read with `read()`:
//! that system call would be counted by the sentinel itself.
//!
//! Opening it needs what counting the kernel needs: perf_event_paranoid ≤ 1 or
//! CAP_PERFMON (kernel/events/core.c `perf_allow_kernel`); and one more hardware
//! counter, tried once at open (enable, read its page, disable, reset). Where any of
//! this fails the session opens without it and [`crate::perf::Session::sentinel`] says why.

use std::os::fd::AsFd;

use pmu_core::mmap_page::{BaseRead, Fallback};

use super::group::{Group, OpenEvent};
use super::options::Options;
use crate::error::{Errno, Op, Result};
use crate::machine::events::{self, EventKind};
use crate::perf::page::{KernelPage, MmapPage};
use crate::perf::read;
use crate::sentinel::Sentinel;
use crate::sys;
use crate::verdict::{FallbackReason, ReadPath, Sample};

/// Which region edge a sample is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Edge {
    Start,
    Stop,
}

/// The events tried, in order: instructions retired counts every kernel entry's
/// work; cycles where the PMU does not implement instructions.
const EVENTS: [&str; 2] = ["instructions", "cycles"];

/// How the perf backend's sentinel is read (its [`Sentinel::Counting`] `how`).
pub(super) const HOW: &str =
    "a member of the perf group counting only at the kernel's level (exclude_user), read \
     through its metadata page at both region edges";

/// Why a session has no sentinel when it was not asked for one.
pub(super) const NOT_ASKED: &str = crate::sentinel::SWITCHED_OFF;

/// Opens the sentinel beside `group`'s events (as a member of its group when the
/// events are grouped, else on its own), or why not.
pub(super) fn open(group: &Group, options: Options) -> std::result::Result<OpenEvent, String> {
    if group
        .events
        .iter()
        .all(|e| e.spec.kind == EventKind::Software)
    {
        return Err(
            "software events only: no hardware counter is in use, none is taken \
                    for a sentinel"
                .to_owned(),
        );
    }
    if !options.map_pages {
        return Err(
            "the metadata pages are not mapped (Options::map_pages off): the \
                    sentinel is read with one instruction through its page or not at all"
                .to_owned(),
        );
    }
    let leader = group
        .events
        .first()
        .filter(|_| options.grouped)
        .map(|e| e.fd.as_fd());
    let mut unsupported = Vec::new();
    for name in EVENTS {
        let Some(spec) = events::resolve_builtin(name) else {
            continue;
        };
        let mut attr = super::group::event_attr(&spec, options.user_read);
        attr.set_disabled(1);
        attr.set_exclude_user(1);
        attr.set_exclude_kernel(0);
        attr.set_exclude_hv(u64::from(options.exclude_hv));
        match sys::perf::open(&mut attr, leader) {
            Ok(fd) => {
                let id = sys::perf::event_id(fd.as_fd()).map_err(|errno| {
                    format!(
                        "its id could not be read ({})",
                        crate::error::Error::syscall(Op::Id, errno)
                    )
                })?;
                let page = MmapPage::map(fd.as_fd())
                    .map_err(|e| format!("its metadata page could not be mapped ({e})"))?;
                return Ok(OpenEvent {
                    spec,
                    fd,
                    page: Some(page),
                    id,
                });
            }
            Err(errno @ Errno(libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV)) => {
                unsupported.push(format!("{name}: {errno}"));
            }
            Err(errno) => return Err(refused(errno, sys::perf_event_paranoid())),
        }
    }
    Err(format!(
        "the PMU counts neither instructions nor cycles at the kernel's level alone ({})",
        unsupported.join("; ")
    ))
}

/// The reason perf_event_open refused a kernel-only event with `errno`.
pub(super) fn refused(errno: Errno, paranoid: Option<i32>) -> String {
    match errno.0 {
        libc::EACCES | libc::EPERM => format!(
            "counting at the kernel's level is not allowed to this process ({errno}; \
             kernel.perf_event_paranoid is {}): it needs perf_event_paranoid ≤ 1 \
             (`sysctl -w kernel.perf_event_paranoid=1`) or CAP_PERFMON",
            paranoid.map_or_else(|| "unreadable".to_owned(), |p| p.to_string())
        ),
        _ => format!("perf_event_open refused a kernel-only instructions event ({errno})"),
    }
}

/// The reason a sentinel that opened gave no one-instruction read at the trial.
pub(super) fn unreadable(fallback: Fallback) -> String {
    match fallback {
        Fallback::NotScheduled => "it was not on a counter when tried: the group with it \
                                   (one counter more than the events asked for) does not \
                                   fit on the free counters"
            .to_owned(),
        other => format!(
            "its page gives no one-instruction read ({other}); read with read() it would \
             count that system call itself"
        ),
    }
}

/// The sentinel as [`Sentinel::Counting`].
pub(super) fn counting(event: &OpenEvent) -> Sentinel {
    Sentinel::Counting {
        event: event.spec.name.clone(),
        how: HOW.to_owned(),
    }
}

/// The sentinel's reads over the last region.
///
/// The sentinel keeps a base read (`base`, one full pass of the page's seqlock) for
/// as long as its page is unchanged, across regions. A syscall-free edge reads only its raw
/// counter at the base's counter number ([`read::raw_since`]: the page's `lock`
/// compared with the base's, then one counter read): `raw_start` at the start; at the
/// stop the raw counter again, then `lock` once more ([`read::unchanged_since`]). An
/// unchanged `lock` from the base to after the stop's read proves both raw values come
/// from the sentinel's own counter with no reschedule and no period reload in between
/// (every one rewrites the page: Linux 6.12 drivers/perf/arm_pmu.c `armpmu_add`,
/// `armpmu_del`, `armpmu_event_set_period`, each ending in
/// `perf_event_update_userpage`; x86 arch/x86/events/core.c `x86_pmu_start`,
/// `x86_pmu_del`, `x86_perf_event_set_period`), so the region's count is their difference modulo
/// 2^`pmc_width` ([`BaseRead::raw_count`]) in `count` (`end_in_count`). A page
/// rewritten since the base costs one full read (a new base) at the start; at the
/// stop, a full read kept as the end sample (the region is then judged from the two
/// samples, as a getrusage one). A read that is not possible keeps why
/// ([`SentinelRead::samples`] then makes the count unknown).
///
/// Why a read at the kept counter number is safe and its value never misused: each
/// read comes after a `lock` test against the base, so the page still names that
/// counter on this CPU (a reschedule, and so a migration, rewrites the page first:
/// `armpmu_del` at the sched-out, `armpmu_add` at the sched-in), and EL0 may read it:
/// arm_pmuv3.c `armv8pmu_start` sets PMUSERENR_EL0.ER | CR while the running task's
/// context has user-readable events (`ctx->nr_user`, kernel/events/core.c
/// `list_add_event`), as this group's are; `armv8pmu_enable_user_access` zeroes the
/// counters no event uses. The window between a `lock` load and the read is the one
/// every one-instruction read has (the page's `index`, then `mrs`): only a
/// `perf_user_access` switched off in it (its IPI clears PMUSERENR_EL0 without
/// touching the pages) makes the read trap. A value read just before a rewrite is
/// caught by the `lock` test after the stop's read, and never counted.
#[derive(Clone, Copy, Debug)]
pub(super) struct SentinelRead {
    pub(super) page: KernelPage,
    base: BaseRead,
    /// The start's raw counter (of `base`'s counter), when `start_in_base`.
    raw_start: u64,
    count: u64,
    start: Sample,
    end: Sample,
    start_in_base: bool,
    end_in_count: bool,
}

/// What a syscall-free stop found.
pub(super) enum SyscallFreeCount {
    /// The page is unchanged since the start: the region's count.
    Counted(u64),
    /// Not counted from the base (the page moved, or the start read failed): the
    /// samples decide ([`SentinelRead::samples`]).
    Sampled,
}

impl SentinelRead {
    /// Over `page`, with `base` a full read of it ([`read::read_base`]).
    pub(super) fn new(page: KernelPage, base: BaseRead) -> Self {
        Self {
            page,
            base,
            raw_start: base.raw(),
            count: 0,
            start: Sample::default(),
            end: Sample::default(),
            // The base is a start until a region starts.
            start_in_base: true,
            end_in_count: false,
        }
    }

    /// The syscall-free start's read: the raw counter while the page is the base's, else a
    /// new base (whose own read is the start).
    ///
    /// `start_in_base` is already true when the page is the base's: only a failed
    /// start read clears it, and that leaves the base of an older page (`lock` since
    /// moved, see [`SentinelRead::stop_syscall_free`]), which no later `raw_since` matches.
    #[inline(always)]
    pub(super) fn start_syscall_free(&mut self) {
        match read::raw_since(self.page, &self.base) {
            Some(raw) => {
                debug_assert!(self.start_in_base);
                self.raw_start = raw;
            }
            None => self.sample(Edge::Start),
        }
    }

    /// The syscall-free stop's read: the region's count while the page is unchanged from the
    /// base to after this read, else a full read kept as the end sample.
    ///
    /// No test of `start_in_base`: a start that could not read the page leaves the
    /// base of an older page (`lock` since moved: the read failed because the page
    /// changed, to `index` 0, an odd `lock` or no `cap_user_rdpmc`), so the stop's
    /// `lock` test fails too and the stop samples.
    #[inline(always)]
    pub(super) fn stop_syscall_free(&mut self) -> SyscallFreeCount {
        if let Some(raw) = read::raw_since(self.page, &self.base) {
            if read::unchanged_since(self.page, &self.base) {
                let count = self.base.raw_count(self.raw_start, raw);
                self.count = count;
                self.end_in_count = true;
                return SyscallFreeCount::Counted(count);
            }
        }
        self.sample(Edge::Stop);
        SyscallFreeCount::Sampled
    }

    /// A full read: at the start a new base (or why not), at the stop the end sample.
    #[cold]
    #[inline(never)]
    pub(super) fn sample(&mut self, edge: Edge) {
        let read = read::read_base(self.page);
        match (edge, read) {
            (Edge::Start, Ok(base)) => {
                self.base = base;
                self.raw_start = base.raw();
                self.start_in_base = true;
            }
            (Edge::Start, Err(fallback)) => {
                self.start = unread(fallback);
                self.start_in_base = false;
            }
            (Edge::Stop, read) => {
                self.end = read.map_or_else(unread, |base| Sample::fast(base.read));
                self.end_in_count = false;
            }
        }
    }

    /// The region's two edges as samples (value, page times and `lock` of each).
    pub(super) fn samples(&self) -> (Sample, Sample) {
        samples(
            &self.base,
            self.start_in_base.then_some(self.raw_start),
            self.start,
            self.end_in_count.then_some(self.count),
            self.end,
        )
    }
}

/// The samples of a sentinel region: the start from `base` and the start's raw
/// counter when it was read against the base (else `start`), the end from the start
/// and the syscall-free count when there is one (else `end`).
fn samples(
    base: &BaseRead,
    raw_start: Option<u64>,
    start: Sample,
    count: Option<u64>,
    end: Sample,
) -> (Sample, Sample) {
    let start = match raw_start {
        Some(raw) => Sample {
            value: base
                .read
                .value
                .wrapping_add(base.raw_count(base.raw(), raw)),
            ..Sample::fast(base.read)
        },
        None => start,
    };
    let end = match count {
        Some(count) => Sample {
            value: start.value.wrapping_add(count),
            ..start
        },
        None => end,
    };
    (start, end)
}

/// A sentinel read that was not possible, and why.
fn unread(fallback: Fallback) -> Sample {
    Sample {
        path: ReadPath::Syscall(FallbackReason::Page(fallback)),
        ..Sample::default()
    }
}

/// The trial at open: the group enabled, the sentinel read through its page, the
/// group disabled and reset. `Ok(Ok(None))` without a sentinel; `Ok(Err(fallback))`
/// when the read was not possible.
pub(super) fn trial(group: &Group) -> Result<std::result::Result<Option<SentinelRead>, Fallback>> {
    let Some(page) = group.sentinel.as_ref().and_then(|e| e.page.as_ref()) else {
        return Ok(Ok(None));
    };
    // SAFETY: `group` owns the mapping and lives in the same `Session`, unchanged, as
    // long as the handle (the caller keeps the read only in that session).
    let page = unsafe { KernelPage::new(page) };
    group.ioctl(sys::perf::Ioctl::Enable, Op::Enable)?;
    let read = read::read_base(page);
    group.ioctl(sys::perf::Ioctl::Disable, Op::Disable)?;
    group.ioctl(sys::perf::Ioctl::Reset, Op::Reset)?;
    Ok(read.map(|base| Some(SentinelRead::new(page, base))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmu_core::mmap_page::{self, UserPage};

    /// A quiet page: `lock` 6, counter 1 (`index` 2), 32 bits wide (arm64's
    /// PMEVCNTR<n>_EL0 without the `long` term: arm_pmuv3.c `armv8pmu_event_is_64bit`).
    struct Page {
        offset: i64,
    }

    impl UserPage for Page {
        fn lock(&self) -> u32 {
            6
        }
        fn index(&self) -> u32 {
            2
        }
        fn offset(&self) -> i64 {
            self.offset
        }
        fn pmc_width(&self) -> u16 {
            32
        }
        fn cap_user_rdpmc(&self) -> bool {
            true
        }
        fn time_enabled(&self) -> u64 {
            0
        }
        fn time_running(&self) -> u64 {
            0
        }
    }

    /// The syscall-free edges' samples: a base whose counter read 0xFFFF_FFF0 (-16, sign
    /// extended from 32 bits) with offset 1000 reads 984; a start raw of
    /// 0x1_0000_0004 (the counter wrapped at 32 bits, a stale bit 32 above it) is 20
    /// later (1004), and a syscall-free count of 7 ends at 1011. A start or stop that was not
    /// read against the base keeps its own sample instead (the count is never used
    /// then).
    #[test]
    fn lean_samples_count_from_the_base_modulo_the_width() {
        let page = Page { offset: 1000 };
        let base = mmap_page::read_base(&page, |_| Some(0xFFFF_FFF0)).unwrap();
        assert_eq!(base.read.value, 984);
        let (start, end) = samples(
            &base,
            Some(0x1_0000_0004),
            Sample::default(),
            Some(7),
            Sample::default(),
        );
        assert_eq!((start.value, end.value), (1004, 1011));
        assert_eq!((start.lock, end.lock), (Some(6), Some(6)));
        // The base's own read as the start (a new base taken at the start).
        let (start, _) = samples(&base, Some(base.raw()), Sample::default(), None, end);
        assert_eq!(start.value, 984);
        // A stop that sampled (page moved): its own sample, not start + count.
        let moved = Sample {
            value: 5000,
            lock: Some(8),
            ..Sample::default()
        };
        let (_, end) = samples(&base, Some(base.raw()), Sample::default(), None, moved);
        assert_eq!((end.value, end.lock), (5000, Some(8)));
        // A start that could not read: its own (unread) sample.
        let unread = unread(Fallback::NotScheduled);
        let (start, _) = samples(&base, None, unread, None, moved);
        assert_eq!(start.path, unread.path);
    }
}
