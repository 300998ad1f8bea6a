//! What a meter's numbers rest on: how it reads ([`Reads`], in the [`crate::Choice`]
//! of backend), whether a kernel-entry sentinel watches its regions ([`Sentinel`]),
//! and per region the [`Evidence`] each hazard was derived from, below.
//!
//! One measured region: the readings, the evidence they were judged on, and exactly
//! what each hazard means and how it is detected.
//!
//! A region is `start()`, the code, `stop()` (pmu-core's [`pmu_core::RegionMeter`]). Around the
//! counter reads each backend takes the thread's state: before the first read at the
//! start, after the last read at the stop, so the windows watched always contain the
//! region.
//!
//! **Syscall-free and getrusage evidence (perf).** When every event of a session is a mapped
//! hardware event and both edges read them all through their pages, a region is
//! *syscall-free*: the start takes the thread's CPU (one load from its rseq area,
//! [`crate::machine::ThreadCpu`]; `sched_getcpu()` where the kernel has no rseq) and reads every
//! event; the stop reads every counter against the start's page
//! ([`pmu_core::mmap_page::count_since`]), which succeeds only while no page's `lock`
//! moved. Nothing else is needed: an event that was on its counter at the start is
//! taken off it at every deschedule, and that rewrites its page (arm_pmu.c
//! `armpmu_del`/`armpmu_add`, x86 `x86_perf_event_set_period`, all calling
//! `perf_event_update_userpage`), so an unmoved `lock` means no switch, hence no
//! migration (a migration deschedules the thread) and no multiplexing (the page times
//! change only in those updates). Only when a `lock` moved does the stop read the
//! pages again, the CPU again, and compare the page times. Every other region is
//! *getrusage*: getrusage and `sched_getcpu()` at both edges besides the locks, as are
//! all regions with `Options::getrusage_edges`. [`Evidence::switches`] is
//! `None` in a syscall-free region (getrusage not consulted), and its `cpu_end` is the start's
//! when no lock moved (inferred as above, not read).
//!
//! | hazard | what it means | perf backend: detected by | direct backend: detected by |
//! |---|---|---|---|
//! | [`CONTEXT_SWITCH`](Hazards::CONTEXT_SWITCH) | the thread left the CPU during the region | any event's page `lock` moved; **or** (getrusage regions) the thread's `ru_nvcsw + ru_nivcsw` (`getrusage(RUSAGE_THREAD)`) moved; **or** a `context-switches` event in the group counted | `ru_nvcsw + ru_nivcsw` moved (`DirectMeter`, and a `DirectRegion` without a sentinel); a `DirectRegion` with a sentinel reports a switch as `KERNEL_ENTRY` instead (the scheduler runs in the kernel, so the sentinel moves), without `getrusage` |
//! | [`CPU_MIGRATION`](Hazards::CPU_MIGRATION) | the thread ran on another CPU at the end than at the start, or moved in between | the CPU differs (syscall-free: rseq `cpu_id` or `sched_getcpu()`, read at the stop only if a lock moved; getrusage: `sched_getcpu()`); **or** a `cpu-migrations` event in the group counted (the only way to see a round trip 0 → 1 → 0; a migration is always also a switch) | `sched_getcpu()` differs (`DirectMeter`), the rseq `cpu_id` differs (`DirectRegion`; `sched_getcpu()` where the thread has no rseq area, [`Evidence::cpu_from_rseq`] false) — the constructors pin the thread, so this means someone changed the affinity |
//! | [`MULTIPLEXED`](Hazards::MULTIPLEXED) | the event was off its counter for part of the region | `time_enabled` and `time_running` advanced by different amounts between the two samples (page fields, or the group `read()`) | never (nothing else schedules the counters) |
//! | [`NOT_SCHEDULED`](Hazards::NOT_SCHEDULED) | at an edge the event was not on a hardware counter (page `index` 0): a software event, or a hardware event rotated out | the page | never |
//! | [`SYSCALL_FALLBACK`](Hazards::SYSCALL_FALLBACK) | at an edge the value came from `read()`, not one instruction: the read itself costs hundreds of instructions at the region's edge | the page said so; the reason per edge is in [`EventEvidence`] | never |
//! | [`USER_ACCESS_REVOKED`](Hazards::USER_ACCESS_REVOKED) | one-instruction reads were allowed at the start and not at the end | fast at the start, `cap_user_rdpmc` 0 at the end (x86 rdpmc policy or arm64 `perf_user_access` changed) | PMUSERENR_EL0.EN found clear: [`crate::error::AccessError::Revoked`] instead of a value, since the counters are gone |
//! | [`KERNEL_ENTRY`](Hazards::KERNEL_ENTRY) | the kernel ran on the CPU inside the region (interrupt, system call, page fault, preemption) | [`Evidence::kernel_entries`]: a sentinel counter counting only at the kernel's level moved | likewise, in a `DirectRegion`: the module's `sentinel=1` counter under the read-only grant, the backend's own (INST_RETIRED, `PMEVTYPER<n>_EL0`.U=1 P=0 NSH=1) under EN; `Meter::sentinel` says which, or why there is none (`DirectMeter` has none) |
//! | [`OVERFLOW`](Hazards::OVERFLOW) | the counter wrapped | never: the kernel keeps 64-bit counts (`offset` absorbs wraps) | overflow flag (PMOVSSET_EL0, EN only), or end < start (pmu-core `CounterMeter` rule) |
//!
//! **The perf backend's kernel-entry sentinel** (`Options::kernel_sentinel`,
//! on by default in a [`crate::Meter`]): one more member of the group, `instructions`
//! (or `cycles`) with `exclude_user` set, read first at the start and last at the stop,
//! so its window contains the events' reads: one counter read at each edge at the
//! counter number of a base read kept while its page's `lock` is unchanged, `lock`
//! tested before each read and after the stop's (the count: the raw difference modulo
//! 2^`pmc_width`; a moved `lock` means a full read of its page). It is not one of the
//! session's events (not in its names or readings; the other members' values are
//! unchanged). Its count over the region goes into [`Evidence::kernel_entries`]; a
//! non-zero count puts `KERNEL_ENTRY` on every reading. Where its read at an edge was
//! not one instruction (rotated out, user reads withdrawn), or its page times advanced
//! differently (multiplexed), the count is unknown: `kernel_entries` is `None`, the
//! readings carry no claim either way, and [`Evidence::sentinel_gap`] says why. Where
//! a session cannot have one (perf_event_paranoid 2 without CAP_PERFMON, no counter
//! free, no user reads), it opens without it and `Session::sentinel` says
//! why.
//!
//! **Why the page `lock` reveals a switch even when the value is right.** A perf event
//! of a thread is scheduled out when the thread is switched out and in again when it
//! returns; every sched-in rewrites its metadata page through
//! `perf_event_update_userpage()` (kernel/events/core.c), which increments `lock` (and
//! refreshes `index`, `offset`, `time_enabled`, `time_running`): software events from
//! `perf_swevent_add` / `task_clock_event_add`, hardware events from the context-time
//! update of `event_update_userpage`. So `lock` at the stop differs from `lock` at the
//! start whenever the thread was descheduled in between, although offset + counter
//! still give the thread's exact count. The same rewrite also happens when the kernel
//! rotates a multiplexed event or reloads a counter after an overflow interrupt
//! (x86: after 2^47 events; arm64 32-bit counters: after 2^31): those are reported as
//! `CONTEXT_SWITCH` too (the kernel ran inside the region); [`Evidence`] tells which
//! detector fired.
//!
//! **What a flagged value is worth.** perf: counts are per thread (the kernel saves
//! and restores them), so after a switch the value is still the thread's, but caches,
//! TLBs and predictors were disturbed; a `MULTIPLEXED` value is an undercount (the raw
//! value is kept, [`Reading::scaled`] extrapolates when both edges came from `read()`).
//! direct: the counters are the CPU's, not the thread's: after a switch they include
//! whatever else ran, so the value is **not** the thread's.

pub use crate::hybrid::PmuShare;
pub use crate::meter::{Grant, Reads, Refusal};
pub use crate::sentinel::{Sentinel, SentinelGap};

use std::fmt;

use pmu_core::{Fallback, Hazards, Reading};

use crate::events::{SW_CONTEXT_SWITCHES, SW_CPU_MIGRATIONS};
use crate::sched::{SwitchCounts, ThreadStamp};
use crate::MAX_EVENTS;

/// Why a value came from the `read()` system call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FallbackReason {
    /// The metadata page said so.
    Page(Fallback),
    /// No metadata page is mapped (`Options::map_pages` off).
    NoPage,
}

impl FallbackReason {
    /// The hazards a value read this way carries.
    pub fn hazards(self) -> Hazards {
        Hazards::SYSCALL_FALLBACK
            | match self {
                Self::Page(fallback) => fallback.hazard(),
                Self::NoPage => Hazards::empty(),
            }
    }
}

impl fmt::Display for FallbackReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Page(fallback) => fallback.fmt(f),
            Self::NoPage => f.write_str("the metadata page is not mapped"),
        }
    }
}

/// How a value was read at one edge of a region.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadPath {
    /// One instruction through the perf metadata page.
    #[default]
    Fast,
    /// The group `read()`, and why.
    Syscall(FallbackReason),
    /// One instruction on a counter this library programmed (direct backend).
    Direct,
}

/// One event at one edge of a region.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// The event's count.
    pub value: u64,
    /// Total time enabled (ns), as of the read (page: as of the last page update).
    pub time_enabled: u64,
    /// Total time on the counter (ns), likewise.
    pub time_running: u64,
    /// The page's `lock` at the read, if a page is mapped.
    pub lock: Option<u32>,
    /// How it was read.
    pub path: ReadPath,
}

impl Sample {
    /// A one-instruction read through the page.
    #[inline(always)]
    pub fn fast(read: pmu_core::PageRead) -> Self {
        Self {
            value: read.value,
            time_enabled: read.time_enabled,
            time_running: read.time_running,
            lock: Some(read.seq),
            path: ReadPath::Fast,
        }
    }
}

/// What was seen of one event in a region.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventEvidence {
    /// How the start value was read.
    pub start: ReadPath,
    /// How the end value was read.
    pub end: ReadPath,
    /// The event's page `lock` moved: the kernel rewrote its page during the region.
    pub page_updated: bool,
    /// The direct counter wrapped (flag or end < start).
    pub overflowed: bool,
    /// One-instruction reads were possible at the start and not at the end.
    pub access_revoked: bool,
}

/// Everything a region's hazards were derived from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Evidence {
    /// The thread's context switches (getrusage) from before the first read to after
    /// the last; `None` where getrusage was not consulted: a perf region whose reads
    /// all went through the pages, whose `lock`s see every switch (see the module).
    pub switches: Option<SwitchCounts>,
    /// The CPU before the first read.
    pub cpu_start: Option<u32>,
    /// The CPU after the last read.
    pub cpu_end: Option<u32>,
    /// Both CPUs came from the thread's rseq area ([`crate::machine::ThreadCpu`]), not
    /// `sched_getcpu()`.
    pub cpu_from_rseq: bool,
    /// Some event's page `lock` moved.
    pub page_updated: bool,
    /// The region's count of a `context-switches` event of the group, if there is one.
    pub counted_switches: Option<u64>,
    /// The region's count of a `cpu-migrations` event of the group, if there is one.
    pub counted_migrations: Option<u64>,
    /// What the kernel-entry sentinel (a counter counting only at the kernel's
    /// privilege level) counted during the region; `None` where no sentinel was read.
    /// Non-zero means the kernel ran on this CPU inside the region:
    /// [`Hazards::KERNEL_ENTRY`].
    pub kernel_entries: Option<u64>,
    /// Why [`Evidence::kernel_entries`] is `None` although a sentinel was read: its
    /// count over this region cannot be trusted ([`crate::sentinel::SentinelGap`]); `None`
    /// where it is known or there is no sentinel.
    pub sentinel_gap: Option<crate::sentinel::SentinelGap>,
    events: [EventEvidence; MAX_EVENTS],
    len: usize,
}

impl Evidence {
    /// Per event, in the order the events were given.
    pub fn events(&self) -> &[EventEvidence] {
        &self.events[..self.len]
    }

    /// Whether any detector saw the thread leave the CPU.
    pub fn context_switched(&self) -> bool {
        self.switches.is_some_and(|s| s.total() > 0)
            || self.page_updated
            || self.counted_switches.is_some_and(|n| n > 0)
    }

    /// Whether any detector saw the thread change CPU.
    pub fn migrated(&self) -> bool {
        let moved = matches!((self.cpu_start, self.cpu_end), (Some(a), Some(b)) if a != b);
        moved || self.counted_migrations.is_some_and(|n| n > 0)
    }

    /// The hazards every event of the region shares.
    pub fn thread_hazards(&self) -> Hazards {
        let mut hazards = Hazards::empty();
        if self.context_switched() {
            hazards |= Hazards::CONTEXT_SWITCH;
        }
        if self.migrated() {
            hazards |= Hazards::CPU_MIGRATION;
        }
        if self.kernel_entered() {
            hazards |= Hazards::KERNEL_ENTRY;
        }
        hazards
    }

    /// Whether the kernel-entry sentinel moved (false where there is none).
    pub fn kernel_entered(&self) -> bool {
        self.kernel_entries.is_some_and(|n| n > 0)
    }

    #[inline]
    fn new(start: ThreadStamp, end: ThreadStamp, len: usize) -> Self {
        Self {
            switches: match (start.switches, end.switches) {
                (Some(a), Some(b)) => Some(a.delta(b)),
                _ => None,
            },
            cpu_start: start.cpu,
            cpu_end: end.cpu,
            cpu_from_rseq: start.cpu_from_rseq && end.cpu_from_rseq,
            len: len.min(MAX_EVENTS),
            ..Self::default()
        }
    }
}

/// Derives the readings of a perf region from its samples: `out[i]` for event `i`.
/// `software_ids[i]` is the event's software id, if it is one.
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
pub(crate) fn evaluate_perf(
    start: &[Sample],
    end: &[Sample],
    software_ids: &[Option<u64>],
    thread_start: ThreadStamp,
    thread_end: ThreadStamp,
    out: &mut [Reading],
) -> Evidence {
    let n = start.len().min(end.len()).min(out.len()).min(MAX_EVENTS);
    let mut evidence = Evidence::new(thread_start, thread_end, n);
    for i in 0..n {
        let (s, e) = (&start[i], &end[i]);
        let page_updated = matches!((s.lock, e.lock), (Some(a), Some(b)) if a != b);
        let access_revoked = s.path == ReadPath::Fast
            && e.path == ReadPath::Syscall(FallbackReason::Page(Fallback::NoUserAccess));
        evidence.page_updated |= page_updated;
        evidence.events[i] = EventEvidence {
            start: s.path,
            end: e.path,
            page_updated,
            overflowed: false,
            access_revoked,
        };
        let delta = e.value.wrapping_sub(s.value);
        let counted = match software_ids.get(i).copied().flatten() {
            Some(SW_CONTEXT_SWITCHES) => &mut evidence.counted_switches,
            Some(SW_CPU_MIGRATIONS) => &mut evidence.counted_migrations,
            _ => continue,
        };
        *counted = Some(counted.unwrap_or(0).max(delta));
    }
    let common = evidence.thread_hazards();
    for i in 0..n {
        let (s, e) = (&start[i], &end[i]);
        let mut hazards = common;
        for path in [s.path, e.path] {
            if let ReadPath::Syscall(reason) = path {
                hazards |= reason.hazards();
            }
        }
        if evidence.events[i].access_revoked {
            hazards |= Hazards::USER_ACCESS_REVOKED;
        }
        let enabled = e.time_enabled.wrapping_sub(s.time_enabled);
        let running = e.time_running.wrapping_sub(s.time_running);
        if enabled != running {
            hazards |= Hazards::MULTIPLEXED;
        }
        // Page times stand still between page updates: only read() gives the region's
        // own times at both edges.
        let times_known = matches!(
            (s.path, e.path),
            (ReadPath::Syscall(_), ReadPath::Syscall(_))
        );
        out[i] = Reading {
            value: e.value.wrapping_sub(s.value),
            hazards,
            time_enabled: times_known.then_some(enabled),
            time_running: times_known.then_some(running),
        };
    }
    evidence
}

/// The kernel-entry sentinel's count over a region from its samples at both edges
/// (both one-instruction reads through its page), or why it is unknown: a read that
/// was not one instruction at either edge ([`crate::sentinel::SentinelGap::NoRead`]), or page
/// times that advanced differently (multiplexed, [`crate::sentinel::SentinelGap::Multiplexed`]:
/// the page times change only when the kernel rewrites the page, as for the user's
/// events in [`evaluate_perf`]). Counts are 64-bit per thread (the kernel's `offset`
/// absorbs reschedules), so a rewritten page alone does not make the count unknown.
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
pub(crate) fn sentinel_count(
    start: &Sample,
    end: &Sample,
) -> Result<u64, crate::sentinel::SentinelGap> {
    for path in [start.path, end.path] {
        match path {
            ReadPath::Fast => {}
            ReadPath::Syscall(FallbackReason::Page(fallback)) => {
                return Err(crate::sentinel::SentinelGap::NoRead(fallback))
            }
            ReadPath::Syscall(FallbackReason::NoPage) | ReadPath::Direct => {
                return Err(crate::sentinel::SentinelGap::NoRead(Fallback::NoUserAccess))
            }
        }
    }
    let enabled = end.time_enabled.wrapping_sub(start.time_enabled);
    let running = end.time_running.wrapping_sub(start.time_running);
    if enabled != running {
        return Err(crate::sentinel::SentinelGap::Multiplexed);
    }
    Ok(end.value.wrapping_sub(start.value))
}

/// Puts the sentinel's verdict over a region into `evidence` and, when it counted,
/// [`Hazards::KERNEL_ENTRY`] on every reading of `out`; an unknown count leaves the
/// readings as they are (no claim either way) and says why in
/// [`Evidence::sentinel_gap`].
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
pub(crate) fn apply_sentinel(
    evidence: &mut Evidence,
    start: &Sample,
    end: &Sample,
    out: &mut [Reading],
) {
    match sentinel_count(start, end) {
        Ok(count) => {
            evidence.kernel_entries = Some(count);
            evidence.sentinel_gap = None;
            if count > 0 {
                flag_kernel_entry(out);
            }
        }
        Err(gap) => {
            evidence.kernel_entries = None;
            evidence.sentinel_gap = Some(gap);
        }
    }
}

/// [`Hazards::KERNEL_ENTRY`] on every reading.
#[cold]
#[inline(never)]
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
pub(crate) fn flag_kernel_entry(out: &mut [Reading]) {
    for reading in out {
        reading.hazards |= Hazards::KERNEL_ENTRY;
    }
}

/// The evidence of a direct region whose readings [`direct_readings`] wrote into `out`
/// (one per counter; the overflow flags come from them).
pub(crate) fn direct_evidence(
    thread_start: ThreadStamp,
    thread_end: ThreadStamp,
    out: &[Reading],
) -> Evidence {
    let mut evidence = Evidence::new(thread_start, thread_end, out.len());
    for (event, reading) in evidence.events.iter_mut().zip(out) {
        *event = EventEvidence {
            start: ReadPath::Direct,
            end: ReadPath::Direct,
            overflowed: reading.hazards.contains(Hazards::OVERFLOW),
            ..EventEvidence::default()
        };
    }
    evidence
}

/// The hazards a direct region's thread stamps show: [`Evidence::thread_hazards`] of the
/// region's evidence, without building the evidence (its per-event array would be
/// filled on every stop for nothing).
#[inline]
fn stamp_hazards(start: ThreadStamp, end: ThreadStamp) -> Hazards {
    let mut hazards = Hazards::empty();
    if matches!((start.switches, end.switches), (Some(a), Some(b)) if a.delta(b).total() > 0) {
        hazards |= Hazards::CONTEXT_SWITCH;
    }
    if matches!((start.cpu, end.cpu), (Some(a), Some(b)) if a != b) {
        hazards |= Hazards::CPU_MIGRATION;
    }
    hazards
}

/// Derives the readings of a direct region: the wrap-safe delta of each counter of
/// `widths[i]`, `overflowed[i]` from its flag, the thread's hazards on each. Returns
/// how many readings it wrote. (A region's stop wants these alone; the evidence, with
/// its per-event table, is [`direct_evidence`], derived only when asked for.)
///
/// # Errors
/// [`pmu_core::Error::DeltaOverflow`] when a wrapped 64-bit counter's delta does not
/// fit (impossible in practice).
#[inline]
pub(crate) fn direct_readings(
    start: &[u64],
    end: &[u64],
    overflowed: &[bool],
    widths: &[pmu_core::CounterWidth],
    thread_start: ThreadStamp,
    thread_end: ThreadStamp,
    out: &mut [Reading],
) -> Result<usize, pmu_core::Error> {
    let n = start.len().min(end.len()).min(out.len()).min(MAX_EVENTS);
    let common = stamp_hazards(thread_start, thread_end);
    for i in 0..n {
        // The flag says the counter wrapped after the start cleared it; end < start
        // says it wrapped between the start read and the clear. More than one wrap
        // cannot be told apart.
        let wrapped = overflowed[i] || widths[i].truncate(end[i]) < widths[i].truncate(start[i]);
        let value = widths[i].accumulate(start[i], end[i], u64::from(wrapped))?;
        out[i] = Reading {
            value,
            hazards: common
                | if wrapped {
                    Hazards::OVERFLOW
                } else {
                    Hazards::empty()
                },
            time_enabled: None,
            time_running: None,
        };
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(voluntary: u64, involuntary: u64, cpu: u32) -> ThreadStamp {
        ThreadStamp {
            switches: Some(SwitchCounts {
                voluntary,
                involuntary,
            }),
            cpu: Some(cpu),
            cpu_from_rseq: false,
        }
    }

    /// The stop's shortcut gives what the full evidence would: switches moved, CPU
    /// changed, both, neither, or not taken (`None`: no claim).
    #[test]
    fn stamp_hazards_match_the_evidence() {
        let none = ThreadStamp {
            switches: None,
            cpu: None,
            cpu_from_rseq: false,
        };
        let stamps = [
            stamp(1, 2, 0),
            stamp(1, 3, 0),
            stamp(1, 2, 1),
            stamp(2, 2, 1),
            none,
        ];
        for &a in &stamps {
            for &b in &stamps {
                assert_eq!(
                    stamp_hazards(a, b),
                    Evidence::new(a, b, 0).thread_hazards(),
                    "{a:?} -> {b:?}"
                );
            }
        }
    }

    fn fast(value: u64, lock: u32, t: u64) -> Sample {
        Sample {
            value,
            time_enabled: t,
            time_running: t,
            lock: Some(lock),
            path: ReadPath::Fast,
        }
    }

    fn syscall(value: u64, lock: u32, enabled: u64, running: u64, fallback: Fallback) -> Sample {
        Sample {
            value,
            time_enabled: enabled,
            time_running: running,
            lock: Some(lock),
            path: ReadPath::Syscall(FallbackReason::Page(fallback)),
        }
    }

    /// A sentinel that moved flags the region, one that stood still or is absent does
    /// not: the rule of [`Hazards::KERNEL_ENTRY`] (the sentinel counts only at the
    /// kernel's level, so any count means the kernel ran).
    #[test]
    fn a_moved_sentinel_flags_kernel_entry() {
        let mut ev = Evidence::default();
        assert!(!ev.thread_hazards().contains(Hazards::KERNEL_ENTRY));
        ev.kernel_entries = Some(0);
        assert!(!ev.thread_hazards().contains(Hazards::KERNEL_ENTRY));
        ev.kernel_entries = Some(251);
        assert_eq!(ev.thread_hazards(), Hazards::KERNEL_ENTRY);
        assert!(ev.kernel_entered());
    }

    /// The perf sentinel's verdict from fake samples (the rules of [`apply_sentinel`]):
    /// a kernel-only counter that moved flags every reading and keeps the values; one
    /// that stood still gives `Some(0)` and no flag; a rewritten page with equal page
    /// times still gives the count (the kernel's 64-bit per-thread count, offset
    /// included); a read that was not one instruction, or page times that advanced
    /// differently (multiplexed), make the count unknown: `None`, the gap said, no
    /// claim on the readings.
    #[test]
    fn the_sentinel_verdict_from_its_samples() {
        let user = || {
            let mut out = [Reading::new(250), Reading::new(7)];
            let ev = evaluate_perf(
                &[fast(100, 4, 50), fast(3, 4, 50)],
                &[fast(350, 4, 50), fast(10, 4, 50)],
                &[None, None],
                stamp(0, 0, 0),
                stamp(0, 0, 0),
                &mut out,
            );
            (ev, out)
        };
        let (mut ev, mut out) = user();
        apply_sentinel(&mut ev, &fast(1000, 9, 50), &fast(1431, 9, 50), &mut out);
        assert_eq!(ev.kernel_entries, Some(431));
        assert_eq!(ev.sentinel_gap, None);
        for (reading, value) in out.iter().zip([250, 7]) {
            assert_eq!(reading.value, value, "the sentinel changed a user value");
            assert_eq!(reading.hazards, Hazards::KERNEL_ENTRY);
        }

        let (mut ev, mut out) = user();
        apply_sentinel(&mut ev, &fast(1000, 9, 50), &fast(1000, 9, 50), &mut out);
        assert_eq!((ev.kernel_entries, ev.sentinel_gap), (Some(0), None));
        assert_eq!(out, [Reading::new(250), Reading::new(7)]);

        let (mut ev, mut out) = user();
        apply_sentinel(&mut ev, &fast(1000, 9, 50), &fast(1800, 11, 90), &mut out);
        assert_eq!(ev.kernel_entries, Some(800));
        assert!(out.iter().all(|r| r.hazards == Hazards::KERNEL_ENTRY));

        let rotated_out = Sample {
            path: ReadPath::Syscall(FallbackReason::Page(Fallback::NotScheduled)),
            ..Sample::default()
        };
        let (mut ev, mut out) = user();
        apply_sentinel(&mut ev, &rotated_out, &fast(1000, 9, 50), &mut out);
        assert_eq!(ev.kernel_entries, None);
        assert_eq!(
            ev.sentinel_gap,
            Some(crate::sentinel::SentinelGap::NoRead(Fallback::NotScheduled))
        );
        assert!(!ev.thread_hazards().contains(Hazards::KERNEL_ENTRY));
        assert_eq!(out, [Reading::new(250), Reading::new(7)]);

        let (mut ev, mut out) = user();
        let multiplexed = Sample {
            time_running: 70,
            ..fast(1000, 11, 90)
        };
        apply_sentinel(&mut ev, &fast(1000, 9, 50), &multiplexed, &mut out);
        assert_eq!(
            (ev.kernel_entries, ev.sentinel_gap),
            (None, Some(crate::sentinel::SentinelGap::Multiplexed))
        );
        assert_eq!(out, [Reading::new(250), Reading::new(7)]);
    }

    #[test]
    fn a_quiet_fast_region_is_clean() {
        let mut out = [Reading::default(); 1];
        let ev = evaluate_perf(
            &[fast(100, 4, 50)],
            &[fast(350, 4, 50)],
            &[None],
            stamp(1, 2, 0),
            stamp(1, 2, 0),
            &mut out,
        );
        assert_eq!(out[0], Reading::new(250));
        assert!(!ev.context_switched() && !ev.migrated());
        assert_eq!(ev.events()[0].start, ReadPath::Fast);
    }

    /// The case that matters most: the thread was switched out and back, the value
    /// is still right (the kernel's offset absorbed it), getrusage is not consulted
    /// here (equal stamps), and the moved `lock` alone flags the region.
    #[test]
    fn a_moved_lock_alone_flags_a_context_switch() {
        let mut out = [Reading::default(); 1];
        let ev = evaluate_perf(
            &[fast(100, 4, 50)],
            &[fast(350, 6, 80)],
            &[None],
            stamp(1, 2, 0),
            stamp(1, 2, 0),
            &mut out,
        );
        assert_eq!(out[0].value, 250);
        assert_eq!(out[0].hazards, Hazards::CONTEXT_SWITCH);
        assert!(ev.page_updated && ev.events()[0].page_updated);
        assert_eq!(ev.switches.map(SwitchCounts::total), Some(0));
    }

    /// A syscall-free region's stamps (no getrusage, CPU from rseq): an unmoved lock and the
    /// same CPU are clean with `switches` None; a moved lock alone flags the switch;
    /// another CPU at the stop flags the migration.
    #[test]
    fn lean_stamps() {
        let lean = |cpu| ThreadStamp {
            switches: None,
            cpu: Some(cpu),
            cpu_from_rseq: true,
        };
        let mut out = [Reading::default(); 1];
        let ev = evaluate_perf(
            &[fast(100, 4, 50)],
            &[fast(350, 4, 50)],
            &[None],
            lean(1),
            lean(1),
            &mut out,
        );
        assert_eq!(out[0], Reading::new(250));
        assert_eq!((ev.switches, ev.cpu_from_rseq), (None, true));
        evaluate_perf(
            &[fast(100, 4, 50)],
            &[fast(350, 6, 50)],
            &[None],
            lean(1),
            lean(1),
            &mut out,
        );
        assert_eq!(out[0].hazards, Hazards::CONTEXT_SWITCH);
        let ev = evaluate_perf(
            &[fast(100, 4, 50)],
            &[fast(350, 8, 50)],
            &[None],
            lean(0),
            lean(1),
            &mut out,
        );
        assert_eq!(
            out[0].hazards,
            Hazards::CONTEXT_SWITCH | Hazards::CPU_MIGRATION
        );
        assert_eq!((ev.cpu_start, ev.cpu_end), (Some(0), Some(1)));
    }

    #[test]
    fn rusage_and_cpu_detectors() {
        let mut out = [Reading::default(); 1];
        let ev = evaluate_perf(
            &[fast(0, 2, 0)],
            &[fast(1, 2, 0)],
            &[None],
            stamp(1, 2, 0),
            stamp(1, 3, 1),
            &mut out,
        );
        assert_eq!(
            ev.switches,
            Some(SwitchCounts {
                voluntary: 0,
                involuntary: 1
            })
        );
        assert_eq!(
            out[0].hazards,
            Hazards::CONTEXT_SWITCH | Hazards::CPU_MIGRATION
        );
    }

    /// Software events through read(): index 0 → SYSCALL_FALLBACK | NOT_SCHEDULED on
    /// every event; a `context-switches` / `cpu-migrations` member that counted flags
    /// the whole region; read() times at both edges give the region's times.
    #[test]
    fn software_group_through_read() {
        let ns = Fallback::NotScheduled;
        let start = [
            syscall(1000, 2, 10, 10, ns),
            syscall(5, 2, 10, 10, ns),
            syscall(7, 2, 10, 10, ns),
        ];
        let end = [
            syscall(3000, 2, 30, 30, ns),
            syscall(6, 2, 30, 30, ns),
            syscall(8, 2, 30, 30, ns),
        ];
        let ids = [Some(1), Some(SW_CONTEXT_SWITCHES), Some(SW_CPU_MIGRATIONS)];
        let mut out = [Reading::default(); 3];
        let ev = evaluate_perf(&start, &end, &ids, stamp(0, 0, 1), stamp(0, 0, 1), &mut out);
        assert_eq!(
            (ev.counted_switches, ev.counted_migrations),
            (Some(1), Some(1))
        );
        let expected = Hazards::SYSCALL_FALLBACK
            | Hazards::NOT_SCHEDULED
            | Hazards::CONTEXT_SWITCH
            | Hazards::CPU_MIGRATION;
        for r in out {
            assert_eq!(r.hazards, expected);
            assert_eq!((r.time_enabled, r.time_running), (Some(20), Some(20)));
        }
        assert_eq!(out[0].value, 2000);
    }

    /// time_enabled and time_running advancing differently is multiplexing; the raw
    /// value is kept and the scaled one is there (perf's value * enabled / running).
    #[test]
    fn multiplexing() {
        let nu = Fallback::NoUserAccess;
        let mut out = [Reading::default(); 1];
        evaluate_perf(
            &[syscall(0, 2, 100, 100, nu)],
            &[syscall(500, 2, 300, 200, nu)],
            &[None],
            stamp(0, 0, 0),
            stamp(0, 0, 0),
            &mut out,
        );
        assert_eq!(
            out[0].hazards,
            Hazards::SYSCALL_FALLBACK | Hazards::MULTIPLEXED
        );
        assert_eq!((out[0].value, out[0].scaled()), (500, Some(1000)));
    }

    #[test]
    fn fast_then_no_user_access_is_revoked_access() {
        let mut out = [Reading::default(); 1];
        let ev = evaluate_perf(
            &[fast(0, 2, 5)],
            &[syscall(9, 2, 5, 5, Fallback::NoUserAccess)],
            &[None],
            stamp(0, 0, 0),
            stamp(0, 0, 0),
            &mut out,
        );
        assert!(ev.events()[0].access_revoked);
        assert_eq!(
            out[0].hazards,
            Hazards::USER_ACCESS_REVOKED | Hazards::SYSCALL_FALLBACK
        );
        assert_eq!(out[0].time_enabled, None, "page times are not region times");
    }

    /// Direct counters: 32-bit wrap with the flag (ARM1176JZF-S TRM 3.2.51; PMUv3 32-bit).
    #[test]
    fn direct_overflow_and_switch() {
        let w = [pmu_core::CounterWidth::W32, pmu_core::CounterWidth::W64];
        let mut out = [Reading::default(); 2];
        let n = direct_readings(
            &[0xFFFF_FFF0, 10],
            &[0x5d, 20],
            &[true, false],
            &w,
            stamp(3, 0, 0),
            stamp(3, 0, 0),
            &mut out,
        )
        .unwrap();
        assert_eq!(n, 2);
        let ev = direct_evidence(stamp(3, 0, 0), stamp(3, 0, 0), &out[..n]);
        assert_eq!(
            out[0],
            Reading {
                value: 0x6d,
                hazards: Hazards::OVERFLOW,
                time_enabled: None,
                time_running: None
            }
        );
        assert_eq!(out[1], Reading::new(10));
        assert!(ev.events()[0].overflowed);
        assert!(!ev.events()[1].overflowed);
        let n = direct_readings(
            &[0],
            &[5],
            &[false],
            &w[..1],
            stamp(3, 0, 0),
            stamp(4, 0, 0),
            &mut out,
        )
        .unwrap();
        let ev = direct_evidence(stamp(3, 0, 0), stamp(4, 0, 0), &out[..n]);
        assert_eq!(out[0].hazards, Hazards::CONTEXT_SWITCH);
        assert_eq!(ev.events()[0].start, ReadPath::Direct);
    }
}
