//! Heterogeneous CPUs (Arm big.LITTLE / DynamIQ, Intel hybrid): one generic event
//! counted on every core PMU, summed, with the per-PMU split kept.
//!
//! # Why a plain generic event is not enough
//!
//! A machine with two kinds of cores registers one core PMU per kind, each covering
//! its CPUs (`cpus` in sysfs: arm_pmu `armv8_cortex_a53` 0-3 and `armv8_cortex_a72`
//! 4-5; x86 `cpu_atom` and `cpu_core`). A `perf_event_attr` with
//! `type = PERF_TYPE_HARDWARE` and no PMU in it goes to *one* of them: Linux 6.12
//! kernel/events/core.c `perf_init_event` looks the type up as PERF_TYPE_RAW, finds
//! no PMU with that number on arm64 and gives the event to the first PMU of its list
//! that accepts it, which is the last one registered (`perf_pmu_register` adds at the
//! head of `pmus`). That PMU's `filter` (drivers/perf/arm_pmu.c `armpmu_filter`)
//! keeps the event off every CPU it does not cover, so a thread that runs on the
//! other cluster is not counted there. (In the arm64 guest test the plain event
//! lands on the second PMU: exact on its CPUs, nothing on the first PMU's.)
//!
//! # What is opened
//!
//! [`CoreTopology`] reads the core PMUs from sysfs: every PMU that takes the extended
//! hardware type (`armv*` and `cpu_*`, see [`Pmu::takes_extended_hw_type`]) with its
//! CPU list (`cpus`, or `cpumask`). Two PMUs that claim the same CPU are refused
//! ([`HybridProblem::Overlap`]): their sum would count that CPU twice.
//!
//! `HybridSession` (x86_64, aarch64) opens each generic hardware or cache event (`instructions`,
//! `cycles`, `L1-dcache-load-misses`, …) once per core PMU, as `perf stat` does on
//! hybrid machines (tools/perf/util/parse-events.c adds one event per core PMU for
//! a generic name; tools/perf/util/pmus.c, `perf_pmus__supports_extended_type`):
//! `type = PERF_TYPE_HARDWARE` (or `PERF_TYPE_HW_CACHE`) with the PMU's sysfs type in
//! `config` bits 63:32 (PERF_PMU_TYPE_SHIFT, include/uapi/linux/perf_event.h), which
//! `perf_init_event` hands to that PMU because it has PERF_PMU_CAP_EXTENDED_HW_TYPE
//! (set for every arm_pmu in drivers/perf/arm_pmu.c `armpmu_alloc`, and for the
//! hybrid x86 PMUs). The events of one PMU form one pinned group (a
//! perf `Session`); a group cannot span two hardware PMUs. Pinned matters: a pinned
//! group that loses its counters goes into an error state that a `read()` reports
//! (0 bytes), so "not counted" is always visible; an unpinned one would be
//! multiplexed, and on a heterogeneous machine every event is "not running" for the
//! time its thread spends on the other cluster, so multiplexing could not be told
//! apart from migration. `HybridSession` therefore always opens pinned.
//!
//! As in perf, the extended type is used only where there are two core PMUs or more
//! (tools/perf/util/pmus.c `perf_pmus__supports_extended_type`; parse-events.c
//! `parse_events_add_numeric` then adds the event once per core PMU): a machine with
//! one core PMU, or none that takes the extended type (x86 `cpu`), gets the plain
//! events in one group. A kernel too old for the extended type on a heterogeneous
//! machine refuses the open ([`Error::Open`] names the `<pmu>/<event>/`); perf would
//! fall back to the plain event there, which is the silent under-count above.
//!
//! # The sum, the split, the hazards
//!
//! A region's count of an event is the sum, over the core PMUs, of each PMU's count
//! between the region's start and stop: a thread that runs on both clusters in the
//! region is counted by each while it runs there, and the sum is its whole count.
//! `HybridSession::split` keeps each PMU's part ([`PmuShare`]).
//! The [`pmu_core::Reading`] of the sum carries:
//!
//! - CONTEXT_SWITCH when some page's `lock` moved (the thread left the CPU: arm_pmu
//!   rewrites the page at every `armpmu_del`/`armpmu_add`), or the thread's switch
//!   counts changed (regions read with `read()`);
//! - CPU_MIGRATION when the CPU at the stop is not the start's. The count of a
//!   migration between clusters is still whole: these two say "the thread moved",
//!   not "the number is short";
//! - NOT_SCHEDULED when a PMU's group lost its counters (its `read()` returns 0 bytes:
//!   the pinned group's error state, kernel/events/core.c `__perf_read`), when the
//!   thread was seen on a CPU that no core PMU covers, or when it moved while such a
//!   CPU exists (it may have run there uncounted). Never a silent zero;
//! - SYSCALL_FALLBACK when the region was read with `read()` (its few user
//!   instructions around the system call are in the count).
//!
//! The readings carry no `time_enabled`/`time_running`: each PMU's event is "not
//! running" whenever the thread is on the other cluster, which is not multiplexing,
//! and scaling by those times (as for multiplexed events) would be wrong.
//!
//! # The one-instruction read on a heterogeneous machine
//!
//! On the CPU the thread runs on, exactly one PMU's events are on counters: their
//! pages have an `index` and are read with one instruction (`mrs`/`rdpmc`,
//! `perf::read`). The other PMUs' events are not on any counter of this CPU, and
//! their pages say so (`index` 0: core.c `perf_event_update_userpage` publishes
//! `perf_event_index` = 0 for an event that is not active), with the count in
//! `offset`, written when the event was last taken off a counter (`armpmu_del`). An
//! event that is on no counter does not count, so that `offset` is its count now.
//!
//! A region's start reads the other PMUs' pages first (their `offset`s, under the
//! seqlock, [`page_state`]: loads only), then the running PMU's events with one
//! instruction each, last, keeping each read as the anchor of the stop (as
//! `Session`'s syscall-free regions do). The stop reads the running PMU's counts
//! since those anchors first, then checks that no other page's `lock` moved. If none
//! did, the thread never left its CPU (arm_pmu rewrites the page at every
//! `armpmu_del`/`armpmu_add`): the other PMUs' parts are 0, and the region cost one
//! counter read per event and edge plus the pages' loads. If a `lock` moved, the stop
//! reads every page again (the running PMU's now through its counter, the others
//! through their `offset`: each the count at that moment, so the sum is whole) and
//! one `read()` per PMU checks that no group lost its counters (a region that was
//! switched out is the rare one, and pays for the check).
//!
//! A region falls back to `read()` at both edges (SYSCALL_FALLBACK) when the page of
//! the PMU that covers the current CPU has no `index` (its group is not on the
//! counters, or user reads are off: arm64 `kernel.perf_user_access` = 0, where Linux
//! publishes `index` 0 for every event, drivers/perf/arm_pmuv3.c
//! `armv8pmu_user_event_idx`, while still setting `cap_user_rdpmc`), or when the
//! thread is on a CPU that no core PMU covers.
//!
//! Linux's documentation says user counter access on heterogeneous systems needs the
//! thread pinned to one cluster and the PMU's own `type` (Documentation/arch/arm64/
//! perf.rst, "About heterogeneous systems"): that is about one event read with `mrs`
//! wherever the thread runs. Here every PMU has its own event, read only on its own
//! cluster, so a thread may move.
//!
//! # Where it was tested
//!
//! Host tests (`cargo test -p pmu-linux hybrid`): discovery from fake sysfs trees (two
//! arm_pmu clusters, Alder Lake's `cpu_core`/`cpu_atom`, overlapping and malformed CPU
//! lists, `cpumask` instead of `cpus`), the per-PMU `perf_event_attr` words, the page
//! seqlock against a fake page, and the sum and hazards of regions from recorded edges.
//!
//! The arm64 guest (tests/tests/kernel_arm64.rs `hybrid_generic_event_on_two_pmus`):
//! Linux 6.12 in QEMU `virt` (`-cpu max -icount`, 4 CPUs) booted with a device tree
//! that declares two PMUs (`arm,cortex-a53-pmu` over CPUs 0-1, `arm,cortex-a72-pmu`
//! over CPUs 2-3, each with one SPI per CPU and `interrupt-affinity`), so the kernel
//! registers `armv8_cortex_a53` and `armv8_cortex_a72`. All four CPUs are the same
//! QEMU model, so both PMUs count the same way; what is tested is the kernel's and
//! this module's handling of two PMUs. `pmu-guest hybrid` (tests/guest) there, with
//! `kernel.perf_user_access=1`:
//!
//! - pinned to each cluster, 1000 iterations of `subs; b.ne` count 2000 (calibrated
//!   min = median, 5 of 5 runs clean), all of it on that cluster's PMU, the running
//!   PMU read through its counter and the other from its page at both edges;
//! - a region that runs the loop on one cluster, moves with `sched_setaffinity` and
//!   runs it again counts 4000 more than the same region with empty loops, 2000 on
//!   each PMU, flagged CONTEXT_SWITCH | CPU_MIGRATION (both directions, 3 runs each);
//! - with every counter of `armv8_cortex_a72` held by an earlier pinned group of the
//!   thread, a new meter counts 2000 clean on CPU 0 and reports NOT_SCHEDULED on every
//!   region on CPU 2;
//! - a plain `instructions` (no PMU type) lands on `armv8_cortex_a72`: exact on CPU 2,
//!   0 on CPU 0 (which the one-PMU `Session` flags NOT_SCHEDULED).
//! - with `kernel.perf_user_access=0` no page is readable: every region uses `read()`,
//!   flagged SYSCALL_FALLBACK only, and still counts 2000 once calibrated (with that
//!   hazard tolerated), all on the cluster's PMU.
//!
//! Cost: with the measurement harness ([`mod@crate::measure`]) a region of that loop
//! reads 2111 on either cluster and with one PMU (111 of overhead), against 2078 for a
//! one-PMU `Session` on the same CPU; with `read()` (perf_user_access=0)
//! 2552. x86 hybrid machines (`cpu_core`/`cpu_atom`) are covered by the host tests
//! only.

use std::fs;

use pmu_core::mmap_page::UserPage;

use super::options::Options;
use super::session::Session;
use crate::error::{Error, HybridProblem, Result};
use crate::machine::events;
use crate::machine::events::EventKind;
use crate::machine::sysfs::Sysfs;
use crate::perf::page::KernelPage;
use crate::perf::read;
use crate::perf::topology::{parse_cpu_list, CoreTopology, ONLINE_CPUS};
use crate::sys;
use crate::verdict::hybrid::{page_state, EdgeRead, PmuShare};
use crate::verdict::{sum_reading, EdgeFacts, EdgeSample};
use crate::verdict::{Evidence, FallbackReason};
use pmu_core::mmap_page::BaseRead;
use pmu_core::Fallback;

/// How the current region was started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Mode {
    /// Through the pages (one counter read per event).
    #[default]
    Pages,
    /// With `read()`, and the switch counts from before it.
    Syscall(sys::SwitchCounts),
}

/// Generic events counted on every core PMU, summed per event: see the
/// [`crate::perf`] docs.
///
/// Like [`Session`], it stays on the thread that opened it (the events count that
/// thread).
#[derive(Debug)]
pub struct HybridSession {
    names: Vec<String>,
    /// Whether a kernel-entry sentinel was asked for (`Options::kernel_sentinel`).
    sentinel_asked: bool,
    topology: CoreTopology,
    /// One label per group (the PMU's name, or `cpu` for plain events).
    labels: Vec<String>,
    /// One group per core PMU, the events in `names` order.
    groups: Vec<Session>,
    /// Whether a page `index` means "on a counter" (else every region uses `read()`).
    page_reads: bool,
    /// Online CPUs no core PMU covers.
    uncovered: Vec<u32>,
    mode: Mode,
    /// The group of the PMU of the CPU at the start.
    owner: Option<usize>,
    facts: EdgeFacts,
    /// The last `read()` region's switch counts (for its evidence).
    switches: Option<sys::SwitchCounts>,
    /// `groups × events` samples, group-major.
    start: Vec<EdgeSample>,
    end: Vec<EdgeSample>,
    /// Every event's page (`groups × events`, group-major) when `page_reads`,
    /// beside the groups that own the mappings (kept as long).
    pages: Vec<KernelPage>,
    /// The start reads of the owner's events (one per event).
    anchors: Vec<BaseRead>,
}

impl HybridSession {
    /// Opens the generic events `names` on every core PMU of this machine
    /// (disabled; pinned whatever `options` say).
    ///
    /// # Errors
    /// Name errors; [`crate::error::PmuError::Hybrid`] for a non-generic event or a bad topology;
    /// the open errors of [`Session`].
    #[cfg_attr(not(feature = "rig"), allow(dead_code))]
    pub fn open(names: &[&str], options: Options) -> Result<Self> {
        let online = fs::read_to_string(ONLINE_CPUS)
            .ok()
            .and_then(|t| parse_cpu_list(&t))
            .unwrap_or_default();
        Self::open_in(&Sysfs::system(), &online, names, options)
    }

    /// As [`HybridSession::open`], with the PMUs of `sysfs` and `online` as the
    /// online CPUs.
    ///
    /// # Errors
    /// As [`HybridSession::open`].
    pub(crate) fn open_in(
        sysfs: &Sysfs,
        online: &[u32],
        names: &[&str],
        options: Options,
    ) -> Result<Self> {
        let topology = CoreTopology::discover_in(sysfs)?;
        let generic = names
            .iter()
            .map(|n| events::resolve(n, sysfs))
            .collect::<Result<Vec<_>>>()?;
        let sentinel_asked = options.kernel_sentinel;
        let options = options.pinned(true).grouped(true).kernel_sentinel(false);
        let mut labels = Vec::new();
        let mut groups = Vec::new();
        if !topology.is_heterogeneous() {
            // One core PMU or none: the plain events reach it, as perf opens them
            // (the extended type only where there are two or more, which also
            // works on kernels older than PERF_PMU_CAP_EXTENDED_HW_TYPE).
            for spec in &generic {
                if !matches!(spec.kind, EventKind::Hardware | EventKind::HwCache) {
                    return Err(HybridProblem::NotGeneric {
                        event: spec.name.clone(),
                        kind: spec.kind,
                    }
                    .into());
                }
            }
            labels.push(
                topology
                    .pmus()
                    .first()
                    .map_or_else(|| "cpu".to_owned(), |p| p.name.clone()),
            );
            groups.push(Session::from_specs(generic.clone(), options)?);
        } else {
            for pmu in topology.pmus() {
                let specs = generic
                    .iter()
                    .map(|g| pmu.generic_spec(g))
                    .collect::<Result<Vec<_>>>()?;
                labels.push(pmu.name.clone());
                groups.push(Session::from_specs(specs, options)?);
            }
        }
        let page_reads = options.map_pages
            && options.user_read
            && (!cfg!(target_arch = "aarch64") || sys::perf_user_access() == Some(1))
            && groups.iter().all(|g| {
                (0..g.len()).all(|i| g.page(i).is_some_and(|p| p.view().cap_user_rdpmc()))
            });
        let uncovered = if topology.pmus().is_empty() {
            Vec::new()
        } else {
            topology.uncovered(online)
        };
        let samples = groups.len() * generic.len();
        let pages = if page_reads {
            groups
                .iter()
                .flat_map(|g| (0..g.len()).filter_map(move |i| g.page(i)))
                // SAFETY: the handles live in the same `HybridSession` as `groups`,
                // whose sessions own the mappings and are never replaced or dropped
                // before it: each page outlives every use of its handle.
                .map(|page| unsafe { KernelPage::new(page) })
                .collect()
        } else {
            Vec::new()
        };
        Ok(Self {
            names: names.iter().map(|n| n.trim().to_owned()).collect(),
            sentinel_asked,
            topology,
            labels,
            groups,
            page_reads,
            uncovered,
            mode: Mode::Pages,
            owner: None,
            facts: EdgeFacts::default(),
            switches: None,
            start: vec![EdgeSample::default(); samples],
            end: vec![EdgeSample::default(); samples],
            pages,
            anchors: vec![BaseRead::default(); generic.len()],
        })
    }

    /// The PMU of each group, in the order of [`HybridSession::split`].
    pub(crate) fn pmus(&self) -> &[String] {
        &self.labels
    }

    /// The per-PMU groups (for their specs and pages).
    #[cfg_attr(not(feature = "rig"), allow(dead_code))]
    pub fn groups(&self) -> &[Session] {
        &self.groups
    }

    /// Whether regions may be read through the pages (else with `read()`).
    pub fn page_reads(&self) -> bool {
        self.page_reads
    }

    /// Online CPUs no core PMU covers.
    #[cfg_attr(not(feature = "rig"), allow(dead_code))]
    pub fn uncovered(&self) -> &[u32] {
        &self.uncovered
    }

    /// Each PMU's part of the last region's count of event `event`.
    pub fn split(&self, event: usize) -> Vec<PmuShare> {
        let n = self.names.len();
        if event >= n {
            return Vec::new();
        }
        self.labels
            .iter()
            .enumerate()
            .map(|(p, pmu)| {
                let (s, e) = (self.start[p * n + event], self.end[p * n + event]);
                PmuShare {
                    pmu: pmu.clone(),
                    count: e.value.wrapping_sub(s.value),
                    start: s.read,
                    stop: e.read,
                }
            })
            .collect()
    }

    fn each(&self, f: impl Fn(&Session) -> Result<()>) -> Result<()> {
        self.groups.iter().try_for_each(f)
    }

    /// Enables every group.
    ///
    /// # Errors
    /// As [`Session::enable`].
    pub fn enable(&self) -> Result<()> {
        self.each(Session::enable)
    }

    /// Disables every group.
    ///
    /// # Errors
    /// As [`Session::disable`].
    pub fn disable(&self) -> Result<()> {
        self.each(Session::disable)
    }

    /// Resets every count to 0.
    ///
    /// # Errors
    /// As [`Session::reset`].
    #[cfg_attr(not(feature = "rig"), allow(dead_code))]
    pub fn reset(&self) -> Result<()> {
        self.each(Session::reset)
    }

    /// A start through the pages, `owner` the group of this CPU's PMU: the other
    /// groups' pages first (each event on no counter here: its `offset`), then the
    /// owner's events with one instruction each, last. False when a page says
    /// otherwise or cannot be read (the start then uses `read()`).
    #[inline(always)]
    fn start_pages(&mut self, owner: usize) -> bool {
        let n = self.names.len();
        for (k, sample) in self.start.iter_mut().enumerate() {
            if k / n == owner {
                continue;
            }
            match page_state(&self.pages[k].view()) {
                Some(state) if state.index == 0 => {
                    *sample = EdgeSample {
                        value: state.offset as u64,
                        lock: Some(state.lock),
                        read: EdgeRead::PageOffset,
                    }
                }
                _ => return false,
            }
        }
        for (anchor, &page) in self.anchors.iter_mut().zip(&self.pages[owner * n..]) {
            match read::read_base(page) {
                Ok(read) => *anchor = read,
                Err(_) => return false,
            }
        }
        true
    }

    /// The stop of a region started through the pages when no page changed: the
    /// owner's counts since their anchors (one instruction each, first), then the
    /// other pages' `lock`s, all as at the start. False (nothing final written)
    /// when some page changed: the thread left the CPU.
    #[inline(always)]
    fn stop_pages_quiet(&mut self) -> bool {
        let n = self.names.len();
        let Some(owner) = self.owner else {
            return false;
        };
        let ends = &mut self.end[owner * n..(owner + 1) * n];
        for ((end, anchor), &page) in ends
            .iter_mut()
            .zip(&self.anchors)
            .zip(&self.pages[owner * n..])
        {
            match read::count_since(page, anchor) {
                Some(count) => {
                    *end = EdgeSample {
                        value: anchor.read.value.wrapping_add(count),
                        lock: Some(anchor.read.seq),
                        read: EdgeRead::Counter,
                    }
                }
                None => return self.settle_owner_start(owner),
            }
        }
        self.settle_owner_start(owner);
        for (k, page) in self.pages.iter().enumerate() {
            if k / n != owner && page_state(&page.view()).map(|s| s.lock) != self.start[k].lock {
                return false;
            }
        }
        for k in 0..self.end.len() {
            if k / n != owner {
                self.end[k] = self.start[k];
            }
        }
        true
    }

    /// The owner's start samples from its anchors (kept as anchors until the stop,
    /// so that the start does no work after its reads); false, for the callers.
    #[inline(always)]
    fn settle_owner_start(&mut self, owner: usize) -> bool {
        let n = self.names.len();
        for (start, anchor) in self.start[owner * n..(owner + 1) * n]
            .iter_mut()
            .zip(&self.anchors)
        {
            *start = EdgeSample {
                value: anchor.read.value,
                lock: Some(anchor.read.seq),
                read: EdgeRead::Counter,
            };
        }
        false
    }

    /// The readings of the region from the samples and facts.
    fn readings(&self, out: &mut [pmu_core::Reading]) -> Result<()> {
        let n = self.names.len();
        let groups = self.groups.len();
        for (i, reading) in out.iter_mut().enumerate().take(n) {
            let edges = (0..groups).map(|g| (self.start[g * n + i], self.end[g * n + i]));
            *reading = sum_reading(edges, &self.facts);
        }
        Ok(())
    }

    /// Every event of every group through its page into `out` (the stop of a
    /// region whose pages changed): false when a page cannot be read (contended,
    /// or an `index` the counter read refuses). The group `owner` (the PMU of the
    /// CPU at the start) first.
    fn sample_pages(groups: &[Session], out: &mut [EdgeSample], owner: Option<usize>) -> bool {
        let n = out.len() / groups.len().max(1);
        let owner = owner.filter(|&g| g < groups.len());
        if let Some(g) = owner {
            if !Self::sample_group(&groups[g], &mut out[g * n..(g + 1) * n]) {
                return false;
            }
        }
        groups.iter().enumerate().all(|(g, group)| {
            Some(g) == owner || Self::sample_group(group, &mut out[g * n..(g + 1) * n])
        })
    }

    /// The events of one group through their pages into `out` (one per event):
    /// the one-instruction read, or, where the page says the event is on no
    /// counter of this CPU, its `offset`.
    #[inline(always)]
    fn sample_group(group: &Session, out: &mut [EdgeSample]) -> bool {
        for (i, sample) in out.iter_mut().enumerate() {
            *sample = match group.read_fast(i) {
                Ok(read) => EdgeSample {
                    value: read.value,
                    lock: Some(read.seq),
                    read: EdgeRead::Counter,
                },
                Err(FallbackReason::Page(Fallback::NotScheduled)) => {
                    match group.page(i).and_then(|p| page_state(&p.view())) {
                        Some(state) if state.index == 0 => EdgeSample {
                            value: state.offset as u64,
                            lock: Some(state.lock),
                            read: EdgeRead::PageOffset,
                        },
                        // Put on a counter meanwhile, or unreadable: read() instead.
                        _ => return false,
                    }
                }
                Err(_) => return false,
            };
        }
        true
    }

    /// Every group with `read()` into `out`.
    fn sample_syscall(&self, out: &mut [EdgeSample]) -> Result<()> {
        let n = self.names.len();
        for (g, group) in self.groups.iter().enumerate() {
            match group.read_group() {
                Ok(read) => {
                    for (i, &value) in read.values().iter().enumerate().take(n) {
                        out[g * n + i] = EdgeSample {
                            value,
                            lock: None,
                            read: EdgeRead::Syscall,
                        };
                    }
                }
                Err(Error::Group(crate::error::GroupError::ShortRead { got: 0, .. })) => {
                    for sample in &mut out[g * n..(g + 1) * n] {
                        *sample = EdgeSample {
                            value: 0,
                            lock: None,
                            read: EdgeRead::Lost,
                        };
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// The group of the PMU that counts on `cpu` (the only group with plain events).
    #[inline(always)]
    fn owner_of(&self, cpu: Option<u32>) -> Option<usize> {
        match (self.topology.pmus().is_empty(), cpu) {
            (true, _) => Some(0),
            (false, Some(cpu)) => self.topology.owner_of(cpu),
            (false, None) => None,
        }
    }

    /// Whether the group of the PMU covering `cpu` was on the counters in
    /// `samples` (every event read through a counter).
    fn owner_counting(&self, cpu: Option<u32>, samples: &[EdgeSample]) -> bool {
        let n = self.names.len();
        self.owner_of(cpu).is_some_and(|g| {
            samples[g * n..(g + 1) * n]
                .iter()
                .all(|s| s.read == EdgeRead::Counter)
        })
    }

    /// Whether some group has lost its counters (its `read()` gives 0 bytes).
    fn some_group_lost(&self) -> Result<bool> {
        for group in &self.groups {
            match group.read_group() {
                Ok(_) => {}
                Err(Error::Group(crate::error::GroupError::ShortRead { got: 0, .. })) => {
                    return Ok(true)
                }
                Err(e) => return Err(e),
            }
        }
        Ok(false)
    }
}

impl pmu_core::RegionMeter for HybridSession {
    type Error = Error;

    /// The CPU, then every event through its page; `read()` of every group instead
    /// when the PMU of this CPU is not on the counters through its page.
    #[inline(always)]
    fn start(&mut self) -> Result<()> {
        let cpu = crate::machine::sched::current_cpu();
        self.facts = EdgeFacts {
            cpu_start: cpu,
            ..EdgeFacts::default()
        };
        self.owner = self.owner_of(cpu);
        if let (true, Some(owner)) = (self.page_reads, self.owner) {
            if self.start_pages(owner) {
                self.mode = Mode::Pages;
                return Ok(());
            }
        }
        let switches = sys::thread_switches()
            .map_err(|errno| crate::error::Error::syscall(crate::error::Op::Rusage, errno))?;
        self.mode = Mode::Syscall(switches);
        let mut start = std::mem::take(&mut self.start);
        let sampled = self.sample_syscall(&mut start);
        self.start = start;
        sampled
    }

    /// Every event the way the start read it; the readings as the
    /// [`crate::perf`] docs say.
    #[inline(always)]
    fn stop(&mut self, out: &mut [pmu_core::Reading]) -> Result<()> {
        let n = self.names.len();
        if out.len() < n {
            return Err(pmu_core::Error::ReadingsMismatch {
                expected: n as u32,
                got: out.len() as u32,
            }
            .into());
        }
        match self.mode {
            Mode::Pages => {
                read::synchronize();
                if self.stop_pages_quiet() {
                    return self.readings(out);
                }
                // Some page changed: every event read again, and the checks.
                let paged = Self::sample_pages(&self.groups, &mut self.end, self.owner);
                {
                    self.facts.cpu_end = crate::machine::sched::current_cpu();
                    if !paged {
                        // A page cannot be read now: the counts from `read()`
                        // (SYSCALL_FALLBACK says its instructions are in them).
                        let mut end = std::mem::take(&mut self.end);
                        let sampled = self.sample_syscall(&mut end);
                        self.end = end;
                        sampled?;
                    } else if self.some_group_lost()? {
                        self.facts.maybe_uncounted = true;
                    }
                    if !self.owner_counting(self.facts.cpu_end, &self.end) && paged {
                        // On a CPU whose PMU is not on the counters.
                        self.facts.maybe_uncounted = true;
                    }
                    if !self.uncovered.is_empty() {
                        self.facts.maybe_uncounted = true;
                    }
                }
            }
            Mode::Syscall(before) => {
                let mut end = std::mem::take(&mut self.end);
                let sampled = self.sample_syscall(&mut end);
                self.end = end;
                sampled?;
                self.facts.cpu_end = crate::machine::sched::current_cpu();
                let after = sys::thread_switches().map_err(|errno| {
                    crate::error::Error::syscall(crate::error::Op::Rusage, errno)
                })?;
                self.switches = Some(before.delta(after));
                self.facts.switches = Some(before.delta(after).total());
                let covered = |cpu: Option<u32>| {
                    self.topology.pmus().is_empty()
                        || cpu.is_some_and(|c| self.topology.owner_of(c).is_some())
                };
                if !covered(self.facts.cpu_start)
                    || !covered(self.facts.cpu_end)
                    || (!self.uncovered.is_empty()
                        && (self.facts.switches != Some(0)
                            || self.facts.cpu_start != self.facts.cpu_end))
                {
                    self.facts.maybe_uncounted = true;
                }
            }
        }
        self.readings(out)
    }
}

impl crate::backend::Backend for HybridSession {
    fn names(&self) -> Vec<String> {
        self.names.clone()
    }

    fn enable(&mut self) -> Result<()> {
        HybridSession::enable(self)
    }

    fn disable(&mut self) -> Result<()> {
        HybridSession::disable(self)
    }

    fn sentinel(&self) -> crate::sentinel::Sentinel {
        crate::sentinel::Sentinel::off(if self.sentinel_asked {
            "not yet on machines with several core PMUs (each PMU's group would need its own)"
        } else {
            crate::sentinel::SWITCHED_OFF
        })
    }

    fn evidence(&self) -> Evidence {
        let mut evidence = Evidence::default();
        evidence.cpu_start = self.facts.cpu_start;
        evidence.cpu_end = self.facts.cpu_end.or(self.facts.cpu_start);
        evidence.page_updated = self
            .start
            .iter()
            .zip(&self.end)
            .any(|(s, e)| matches!((s.lock, e.lock), (Some(a), Some(b)) if a != b));
        if let Mode::Syscall(_) = self.mode {
            evidence.switches = self.switches;
        }
        evidence
    }
}
