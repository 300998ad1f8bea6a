//! What a meter's numbers rest on: how it reads ([`crate::backend::Reads`], in the [`crate::choice::Choice`]
//! of backend), whether a kernel-entry sentinel watches its regions ([`Sentinel`]),
//! and per region the [`Evidence`] each hazard was derived from, below.
//!
//! One measured region: the readings, the evidence they were judged on, and exactly
//! what each hazard means and how it is detected. Every rule that turns what a
//! region's edges saw into hazards lives in this module, whichever backend read the
//! edges (the perf group, the direct counters, the sum over big.LITTLE's core PMUs),
//! and the three hazards a region's thread can cause (migration, switch, kernel
//! entry) are mapped from their detectors in one place, so that the backends cannot
//! drift apart; the table below is that code's specification.
//!
//! A region is `start()`, the code, `stop()` (pmu-core's [`pmu_core::RegionMeter`]). Around the
//! counter reads each backend takes the thread's state: before the first read at the
//! start, after the last read at the stop, so the windows watched always contain the
//! region.
//!
//! **Syscall-free and getrusage evidence (perf).** When every event of a session is a mapped
//! hardware event and both edges read them all through their pages, a region is
//! *syscall-free*: the start takes the thread's CPU (one load from its rseq area,
//! glibc's or this library's; `sched_getcpu()` where the kernel has no rseq) and reads every
//! event; the stop reads every counter against the start's page
//! ([`pmu_core::mmap_page::count_since`]), which succeeds only while no page's `lock`
//! moved. Nothing else is needed: an event that was on its counter at the start is
//! taken off it at every deschedule, and that rewrites its page (arm_pmu.c
//! `armpmu_del`/`armpmu_add`, x86 `x86_perf_event_set_period`, all calling
//! `perf_event_update_userpage`), so an unmoved `lock` means no switch, hence no
//! migration (a migration deschedules the thread) and no multiplexing (the page times
//! change only in those updates). Only when a `lock` moved does the stop read the
//! pages again, the CPU again, and compare the page times. Every other region is
//! *getrusage*: getrusage and `sched_getcpu()` at both edges besides the locks.
//! [`Evidence::switches`] is
//! `None` in a syscall-free region (getrusage not consulted), and its `cpu_end` is the start's
//! when no lock moved (inferred as above, not read).
//!
//! | hazard | what it means | perf backend: detected by | direct backend: detected by |
//! |---|---|---|---|
//! | [`CONTEXT_SWITCH`](crate::Hazards::CONTEXT_SWITCH) | the thread left the CPU during the region | any event's page `lock` moved; **or** (getrusage regions) the thread's `ru_nvcsw + ru_nivcsw` (`getrusage(RUSAGE_THREAD)`) moved; **or** a `context-switches` event in the group counted | `ru_nvcsw + ru_nivcsw` moved (a `DirectRegion` without a sentinel: the ARM1176's, or where no counter is left for one); a `DirectRegion` with a sentinel reports a switch as `KERNEL_ENTRY` instead (the scheduler runs in the kernel, so the sentinel moves), without `getrusage`; never under the per-thread grant with `follow` (the counters follow the thread: [`Evidence::counts_follow_thread`]) |
//! | [`CPU_MIGRATION`](crate::Hazards::CPU_MIGRATION) | the thread ran on another CPU at the end than at the start, or moved in between | the CPU differs (syscall-free: rseq `cpu_id` or `sched_getcpu()`, read at the stop only if a lock moved; getrusage: `sched_getcpu()`); **or** a `cpu-migrations` event in the group counted (the only way to see a round trip 0 → 1 → 0; a migration is always also a switch) | the rseq `cpu_id` differs (`DirectRegion` on ARMv8; `sched_getcpu()` on 32-bit ARM and where the thread has no rseq area, [`Evidence::cpu_from_rseq`] false) — the constructors pin the thread, so this means someone changed the affinity; never under the per-thread grant with `follow` (the evidence still has both CPUs) |
//! | [`MULTIPLEXED`](crate::Hazards::MULTIPLEXED) | the event was off its counter for part of the region | `time_enabled` and `time_running` advanced by different amounts between the two samples (page fields, or the group `read()`) | never (nothing else schedules the counters) |
//! | [`NOT_SCHEDULED`](crate::Hazards::NOT_SCHEDULED) | at an edge the event was not on a hardware counter (page `index` 0): a software event, or a hardware event rotated out | the page | never |
//! | [`SYSCALL_FALLBACK`](crate::Hazards::SYSCALL_FALLBACK) | at an edge the value came from `read()`, not one instruction: the read itself costs hundreds of instructions at the region's edge | the page said so; the reason per edge is in [`EventEvidence`] | never |
//! | [`USER_ACCESS_REVOKED`](crate::Hazards::USER_ACCESS_REVOKED) | one-instruction reads were allowed at the start and not at the end | fast at the start, `cap_user_rdpmc` 0 at the end (x86 rdpmc policy or arm64 `perf_user_access` changed) | PMUSERENR_EL0.EN found clear: [`crate::error::AccessError::Revoked`] instead of a value, since the counters are gone; under the per-thread grant the library puts it back (REGRANT, at the edge or from its SIGILL handler after a read trapped), [`Evidence::regrants`] counting them: one at the start's check comes before the reads and the region stays exact; one between the reads (the stop's check, the handler) ran the library's own instructions at EL0 inside the region, which the counters counted, so the readings carry this hazard; a read it could not repair, or a re-grant that says the thread ran where the module's counters did not count for it, makes the region [`crate::error::AccessError::ReadTrapped`] (not counted, with the reason) |
//! | [`KERNEL_ENTRY`](crate::Hazards::KERNEL_ENTRY) | the kernel ran on the CPU inside the region (interrupt, system call, page fault, preemption) | [`Evidence::kernel_entries`]: a sentinel counter counting only at the kernel's level moved | likewise, in a `DirectRegion`: the module's `sentinel=1` counter under ARMv8's read-only grant, the backend's own under EN (INST_RETIRED, `PMEVTYPER<n>_EL0`.U=1 P=0 NSH=1) and on AArch32 (INST_RETIRED at PL1: PMXEVTYPER.U=1 P=0); `Meter::sentinel` says which, or why there is none (the ARM1176's counters have no privilege filter) |
//! | [`OVERFLOW`](crate::Hazards::OVERFLOW) | the counter wrapped | never: the kernel keeps 64-bit counts (`offset` absorbs wraps) | overflow flag (PMOVSSET_EL0, EN only), or end < start (pmu-core `CounterMeter` rule) |
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
//! **On an emulator that counts exactly** (QEMU's `max` CPU with precise icount and
//! one CPU, pmu-qemu's machine: [`Evidence::exact_emulation`]) a switch and a kernel
//! entry change no user-level count of instructions or cycles, provided the reads at
//! the edges run the same instructions whatever happened in between. The meter's
//! perf sessions there take the getrusage edges (every read a full one, at the same
//! place; the syscall-free stop reads a moved page again later, and that read's
//! instructions would be counted) and watch each read for a second try; a region
//! whose reads all passed at the first try loses CONTEXT_SWITCH and KERNEL_ENTRY,
//! and its evidence still says what happened. Every other hazard stands.
//!
//! **What a flagged value is worth.** perf: counts are per thread (the kernel saves
//! and restores them), so after a switch the value is still the thread's, but caches,
//! TLBs and predictors were disturbed; a `MULTIPLEXED` value is an undercount (the raw
//! value is kept, [`Reading::scaled`](pmu_core::Reading::scaled) extrapolates when both edges came from `read()`).
//! direct: under the CPU-wide grant (and the per-thread grant without `follow`) the
//! counters are the CPU's, not the thread's: after a switch they include whatever else
//! ran, so the value is **not** the thread's. Under the per-thread grant with `follow`
//! the module saves the counters when the thread is switched out and writes them back
//! when it comes back, on whichever CPU: the value is the thread's own, as perf's.

pub use crate::sentinel::{Sentinel, SentinelGap};
pub use evidence::{EventEvidence, Evidence, ReadPath, Sample};
pub use hybrid::{EdgeRead, PmuShare};
pub use reason::FallbackReason;

mod direct;
mod evidence;
// The summing rules are pure and host-tested everywhere; only 64-bit builds sum.
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
pub(crate) mod hybrid;
mod perf;
pub(crate) mod reason;

pub(crate) use direct::counter_readings;
// The direct region's rules.
pub(crate) use direct::{
    edge_evidence, edge_hazards, edge_tag, fast_verdict, sentinel_delta, tag_cpu,
};
// The perf backend (and with it the big.LITTLE sum) is 64-bit only.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) use hybrid::{sum_reading, EdgeFacts, EdgeSample};
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) use perf::{
    apply_exact_emulation, apply_sentinel, evaluate_perf, flag_kernel_entry, sentinel_count,
};
