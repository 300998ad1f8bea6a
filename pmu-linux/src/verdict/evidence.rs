//! What a region's verdict is judged on: how each value was read, the samples at its
//! edges, and the evidence per region; and the hazards every backend shares.

use pmu_core::Hazards;

use super::reason::FallbackReason;
use crate::machine::sched::{SwitchCounts, ThreadStamp};
use crate::MAX_EVENTS;

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
    #[cfg_attr(
        not(any(target_arch = "x86_64", target_arch = "aarch64")),
        allow(dead_code)
    )]
    pub(crate) fn fast(read: pmu_core::PageRead) -> Self {
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
    /// Both CPUs came from the thread's rseq area (glibc's or this library's), not
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
    /// Under kmod-enable-user's per-thread grant: how many times perf took the grant
    /// away during the region (its `armv8pmu_start()` clears PMUSERENR_EL0) and the
    /// library put it back (REGRANT at an edge, or from its SIGILL handler after a read
    /// trapped). The counters' values are untouched; a re-grant at the start's check
    /// comes before the reads, one between them (the stop's check, the handler) ran
    /// the library's own EL0 instructions inside the region, so its readings are
    /// [`Hazards::USER_ACCESS_REVOKED`]. `None` under every other grant and backend.
    pub regrants: Option<u64>,
    /// The counters follow the thread (the per-thread grant with `follow`): a switch
    /// or a migration mixed no other thread's counts, so neither is a hazard of its
    /// readings; [`Evidence::switches`] and the CPUs still say
    /// what happened.
    pub counts_follow_thread: bool,
    /// The region was counted on an emulator that counts exactly (QEMU's `max` CPU
    /// with precise icount and one CPU), every event a user-level count of
    /// instructions or cycles, and every read at both edges passed at its first try
    /// (the reads' instructions are the same as in a region where nothing happened):
    /// a context switch or a kernel entry changed none of the counts, so neither is a
    /// hazard of its readings; [`Evidence::switches`],
    /// [`Evidence::page_updated`] and [`Evidence::kernel_entries`] still say what
    /// happened. pmu-linux/src/machine/emulation.rs has the conditions and the proof.
    pub exact_emulation: bool,
    pub(super) events: [EventEvidence; MAX_EVENTS],
    pub(super) len: usize,
}

impl Evidence {
    /// Per event, in the order the events were given.
    pub fn events(&self) -> &[EventEvidence] {
        &self.events[..self.len]
    }

    rig_pub! {
    /// Whether any detector saw the thread leave the CPU.
    pub fn context_switched(&self) -> bool {
        self.switches.is_some_and(|s| s.total() > 0)
            || self.page_updated
            || self.counted_switches.is_some_and(|n| n > 0)
    }
    }

    /// Whether any detector saw the thread change CPU.
    pub(crate) fn migrated(&self) -> bool {
        let moved = matches!((self.cpu_start, self.cpu_end), (Some(a), Some(b)) if a != b);
        moved || self.counted_migrations.is_some_and(|n| n > 0)
    }

    /// The hazards every event of the region shares: the rule every backend's
    /// readings end with.
    pub(crate) fn thread_hazards(&self) -> Hazards {
        let mixes = !self.counts_follow_thread;
        let hazards = shared_hazards(
            mixes && self.migrated(),
            mixes && self.context_switched(),
            self.kernel_entered(),
        );
        if self.exact_emulation {
            hazards - UNDISTURBED_WHEN_EXACT
        } else {
            hazards
        }
    }

    /// Whether the kernel-entry sentinel moved (false where there is none).
    pub(crate) fn kernel_entered(&self) -> bool {
        self.kernel_entries.is_some_and(|n| n > 0)
    }

    #[inline]
    pub(super) fn new(start: ThreadStamp, end: ThreadStamp, len: usize) -> Self {
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

/// What leaves a count unchanged in a region of [`Evidence::exact_emulation`]: the
/// thread was switched out, or the kernel ran (a system call, a page fault, an
/// interrupt). A migration is not among them (one CPU: it cannot happen there).
pub(crate) const UNDISTURBED_WHEN_EXACT: Hazards =
    Hazards::CONTEXT_SWITCH.union(Hazards::KERNEL_ENTRY);

/// The hazards every reading of a region shares, from what the detectors saw: the
/// thread migrated ([`Hazards::CPU_MIGRATION`]), was switched out
/// ([`Hazards::CONTEXT_SWITCH`]), or the kernel ran on its CPU
/// ([`Hazards::KERNEL_ENTRY`]). Every backend's rule ends here.
#[inline(always)]
pub(crate) fn shared_hazards(migrated: bool, switched: bool, kernel_entered: bool) -> Hazards {
    let mut hazards = Hazards::empty();
    if migrated {
        hazards |= Hazards::CPU_MIGRATION;
    }
    if switched {
        hazards |= Hazards::CONTEXT_SWITCH;
    }
    if kernel_entered {
        hazards |= Hazards::KERNEL_ENTRY;
    }
    hazards
}

/// Thread stamps for the rules' tests: `voluntary` and `involuntary` switches on `cpu`.
#[cfg(test)]
pub(super) fn stamp(voluntary: u64, involuntary: u64, cpu: u32) -> ThreadStamp {
    ThreadStamp {
        switches: Some(SwitchCounts {
            voluntary,
            involuntary,
        }),
        cpu: Some(cpu),
        cpu_from_rseq: false,
    }
}
