//! The direct backend's region, one for every architecture it runs on (ARMv8, AArch32):
//! `DirectRegion`; its verdict is [`crate::verdict`]'s direct rules. Everything here
//! builds on every host (each architecture's flags, grant check and reads live in its
//! own file), and the host tests drive it with fake counters.
//!
//! A region is generic over what differs between the architectures and grants, each a
//! type so that the region has no run-time test for it:
//!
//! | parameter | what | ARMv8 | AArch32 |
//! |---|---|---|---|
//! | `O: CounterSet` | keeps the counters programmed; enables, disables, releases | `OwnedCounters` | `OwnedCounters` |
//! | `A: AccessCheck` | the grant, read before any counter access | PMUSERENR_EL0 | PMUSERENR.EN |
//! | `H: CounterRead` | one counter's read (pmu-core) | `mrs`, or a table of them | a table of `mrc` (PMSELR + PMXEVCNTR on PMUv2) |
//! | `S: SentinelRead` | the kernel-entry sentinel, or [`NoSentinel`] | module's or own counter | own counter (INST_RETIRED at PL1) |
//! | `F: OverflowFlags` | the overflow flags, or [`NoFlags`] | PMOVSSET/PMOVSCLR_EL0 under EN | PMOVSR |
//! | `C: ThreadSource` | the thread's CPU (and switch counts without a sentinel) | rseq `cpu_id` (`RseqCpu`) | `sched_getcpu()` ([`Kernel`](crate::machine::Kernel)) |
//!
//! At each edge the region reads the grant (before the counter reads, which a revoked
//! grant would trap), the CPU, the sentinel and the counters, and where readable the
//! overflow flags (cleared at the start, read at the stop). The start packs the CPU and
//! the sentinel into one tag stored with the counters. A clean stop (same tag, no flag,
//! end ≥ start for every counter) writes the readings and nothing else; a stop with a
//! hazard leaves for the slow path, out of line (`#[cold]`), which stores the stop's tag
//! and flags and derives the full verdict. A clean stop stores neither: its tag is the
//! start's and none of its counters' flags is set, which is all the region's
//! `evidence()` needs to rebuild the same evidence. The end ≥ start test is needed
//! beside the flag: a wrap between the start's read and its clear sets a flag the clear
//! then erases, and an empty hazard set promises no wrap. What each edge costs in
//! instructions is measured by `cargo xtask bench` (docs/bench.md).
//!
//! The verdict, per counter: `OVERFLOW` from its overflow flag or end < start
//! (pmu-core `CounterMeter` rule), `CPU_MIGRATION` when the CPU differs,
//! `KERNEL_ENTRY` when the sentinel moved: every exception taken to the kernel retires
//! kernel instructions, so any entry moves it (its 32-bit difference would read 0 only
//! after a multiple of 2^32 of them inside one region). A context switch is a kernel
//! entry (the scheduler runs at the kernel's level: EL1, EL2 with VHE, PL1), so the
//! sentinel sees it too, and no `getrusage` is needed: a region with a sentinel reports
//! a switch as `KERNEL_ENTRY`, not as `CONTEXT_SWITCH` ([`crate::verdict`]'s hazard
//! table). Without a sentinel the region does not pretend: it takes `getrusage` at both
//! edges (switches, not the other kernel entries) and `DirectRegion::sentinel` says why
//! there is none. Without an rseq area (32-bit ARM, or a kernel without CONFIG_RSEQ)
//! the CPU comes from `sched_getcpu()` and the evidence says so
//! ([`crate::verdict::Evidence::cpu_from_rseq`] false).
//!
//! Under ARMv8's read-only grant (ER | CR) EL0 cannot read the overflow flags
//! (PMOVSSET_EL0 needs EN): overflow is judged from end < start on the 32-bit reads
//! alone, exact for regions below 2^32 events.

/// The sentinel the backend programs under EN: INST_RETIRED (CPU_CYCLES where that
/// is not implemented) counted at EL1 and EL2 only: `PMEVTYPER<n>_EL0`.U = 1 (not
/// EL0), P = 0 (EL1), NSH = 1 (EL2). EL2 is included because a VHE kernel runs at
/// EL2 and EL0 cannot read which level the kernel uses (CurrentEL is UNDEFINED at
/// EL0); Linux counts a kernel event on a VHE host the same way (drivers/perf/
/// arm_pmuv3.c `armv8pmu_set_event_filter`, 6.12: with the kernel at EL2, counting
/// the kernel sets the EL2 bit). Field meanings: Arm ARM (DDI 0487),
/// `PMEVTYPER<n>_EL0` (P, U, NSH).
#[cfg_attr(not(feature = "rig"), allow(dead_code))]
pub const SENTINEL_FILTER: pmu_core::PrivilegeFilter = pmu_core::PrivilegeFilter {
    user: false,
    kernel: true,
    hypervisor: true,
};

use pmu_core::{CounterRead, CounterWidth, Reading, RegionMeter};

use crate::backend::Backend;
use crate::error::{Error, Result};
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub use crate::machine::sched::RseqCpu;
use crate::machine::sched::ThreadSource;
use crate::sentinel::Sentinel;
use crate::sys::SwitchCounts;
use crate::verdict::Evidence;
use crate::verdict::{
    counter_readings, edge_evidence, edge_hazards, edge_tag, fast_verdict, sentinel_delta, tag_cpu,
};

/// Says whether user access to the PMU is still granted, without trapping; and, for
/// kmod-enable-user's per-thread grant, what happened to the grant during a region.
pub trait AccessCheck {
    /// Whether the grant counts re-grants ([`Self::region_end`]): the per-thread
    /// grant's evidence says how many came during a region.
    const REGRANTS: bool = false;
    /// True while user mode may access the counters.
    fn granted(&self) -> bool;
    /// The error of a grant found gone at a region's edge.
    #[cold]
    fn revoked(&self) -> Error {
        Error::Access(crate::error::AccessError::Revoked)
    }
    /// Whether the counters follow the thread across switches and migrations
    /// (kmod-enable-user's per-thread grant with `follow`): then neither mixes other
    /// threads' counts into a region.
    #[inline(always)]
    fn follows_thread(&self) -> bool {
        false
    }
    /// At a region's start, before [`Self::granted`] and any read: a mark for
    /// [`Self::region_end`].
    #[inline(always)]
    fn region_start(&self) -> u64 {
        0
    }
    /// At a region's start, after [`Self::granted`] and before any read, where
    /// [`Self::REGRANTS`]: what the start's grant check found that concerns only what
    /// came before the region is forgotten.
    #[inline(always)]
    fn region_started(&self) {}
    /// Where [`Self::REGRANTS`]: the thread's re-grants so far. The region takes it
    /// after the start's check (before its reads) and again after the stop's reads: a
    /// re-grant between the two (the stop's check, or the SIGILL handler after a read
    /// trapped) ran the library's own instructions at EL0 between the counter reads,
    /// which the counters counted.
    #[inline(always)]
    fn regrants_now(&self) -> u64 {
        0
    }
    /// At a region's stop, after its reads, where [`Self::REGRANTS`] (the region
    /// calls neither this nor [`Self::region_start`] otherwise): how many times the grant was put back
    /// during the region, its start's check included (perf's revocation leaves the
    /// counters' values alone; the re-grants between the reads are
    /// [`Self::regrants_now`]'s).
    ///
    /// # Errors
    /// A read that trapped and was not repaired: the region is not counted.
    #[inline(always)]
    fn region_end(&self, mark: u64) -> Result<u64> {
        let _ = mark;
        Ok(0)
    }
}

/// No check possible (ARM1176: SUNAVCR is not readable in User mode) or needed (fake
/// PMUs).
#[cfg(any(target_arch = "arm", test))]
#[derive(Clone, Copy, Debug, Default)]
pub struct Unchecked;

#[cfg(any(target_arch = "arm", test))]
impl AccessCheck for Unchecked {
    fn granted(&self) -> bool {
        true
    }
}

impl<F: Fn() -> bool> AccessCheck for F {
    fn granted(&self) -> bool {
        self()
    }
}

/// The error of a `sched_getcpu()` that failed, out of the regions' line (cold).
#[cold]
#[inline(never)]
fn getcpu_failed() -> Result<u32> {
    Err(crate::error::Error::syscall(
        crate::error::Op::Getcpu,
        crate::error::Errno::last(),
    ))
}

/// The error of a revoked grant, out of the regions' line (cold): the compiler then
/// lays the granted path straight.
#[cold]
#[inline(never)]
fn revoked<A: AccessCheck>(access: &A) -> Result<()> {
    Err(access.revoked())
}

/// The counters underneath a region: it keeps them programmed, and enables, disables
/// and releases them (the region reads them through its own handles, `H`). An
/// [`OwnedCounters`](super::OwnedCounters) set, or the handles of a
/// [`pmu_core::CounterPool`] (borrowed, `&[Counter]`) for a region built by hand.
pub trait CounterSet {
    /// How many counters.
    fn len(&self) -> usize;
    /// Whether there is none.
    #[cfg_attr(not(feature = "rig"), allow(dead_code))]
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Counter `i`'s width: the bits of the values its handle reads.
    fn width(&self, i: usize) -> CounterWidth;
    /// Starts counter `i`.
    fn start(&self, i: usize);
    /// Stops counter `i`.
    fn stop(&self, i: usize);
    /// Sets counter `i` `distance` counts (of its register) below its wrap, so that the
    /// next region that counts that far overflows it.
    fn preset_before_wrap(&self, i: usize, distance: u64);
    /// Leaves every counter as it is when the set is dropped (the grant is gone: any
    /// register access would trap). Borrowed handles: nothing to do here, their owner
    /// decides.
    fn leave_programmed(&mut self) {}
}

impl<P: pmu_core::Pmu> CounterSet for &[pmu_core::Counter<'_, P>] {
    fn len(&self) -> usize {
        <[pmu_core::Counter<'_, P>]>::len(self)
    }
    fn width(&self, i: usize) -> CounterWidth {
        self[i].width()
    }
    fn start(&self, i: usize) {
        self[i].start()
    }
    fn stop(&self, i: usize) {
        self[i].stop()
    }
    fn preset_before_wrap(&self, i: usize, distance: u64) {
        self[i].preset_before_wrap(distance)
    }
}

/// Where a [`DirectRegion`] reads its thread's CPU unless told: the rseq area where this
/// crate reads one (x86_64, aarch64: `RseqCpu`), else `sched_getcpu()`
/// ([`Kernel`](crate::machine::Kernel)).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub type DefaultCpu = RseqCpu;
/// Where a [`DirectRegion`] reads its thread's CPU unless told: the rseq area where this
/// crate reads one (x86_64, aarch64: `RseqCpu`), else `sched_getcpu()`
/// ([`Kernel`](crate::machine::Kernel)).
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub type DefaultCpu = crate::machine::sched::Kernel;

/// Where a region's kernel-entry sentinel comes from: [`Watching`] a counter handle,
/// or [`NoSentinel`] (then the region takes `getrusage` for switches). A type, not
/// a run-time test: a region with a sentinel has no branch on it.
pub trait SentinelRead {
    /// Whether there is a sentinel.
    const PRESENT: bool;
    /// Its count (0 without one).
    fn read(&self) -> u64;
}

/// No sentinel.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoSentinel;

impl SentinelRead for NoSentinel {
    const PRESENT: bool = false;
    #[inline(always)]
    fn read(&self) -> u64 {
        0
    }
}

/// The sentinel read through a counter handle.
#[derive(Clone, Copy, Debug)]
pub struct Watching<H: CounterRead>(pub H);

impl<H: CounterRead> SentinelRead for Watching<H> {
    const PRESENT: bool = true;
    #[inline(always)]
    fn read(&self) -> u64 {
        self.0.read()
    }
}

/// The PMU's overflow-flag register, if the region may read and clear it: ARMv8 only
/// with PMUSERENR_EL0.EN (PMOVSSET_EL0 and PMOVSCLR_EL0 are not among what ER and CR
/// open, Arm ARM PMUSERENR_EL0: `Flags`), AArch32 with PMUSERENR.EN (PMOVSR,
/// `aarch32::Pmovsr`). A type, as [`SentinelRead`]. The bits are the handles'
/// [`CounterRead::overflow_mask`].
pub trait OverflowFlags {
    /// Whether the flags are read.
    const READABLE: bool;
    /// The flags (0 when not readable).
    fn read(&self) -> u64;
    /// Clears the flags of `mask` (nothing when not readable).
    fn clear(&self, mask: u64);
}

/// No readable flags (ARMv8's read-only grant): overflow from end < start only.
#[cfg_attr(
    not(any(
        target_arch = "aarch64",
        all(target_arch = "arm", target_feature = "v7")
    )),
    allow(dead_code)
)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NoFlags;

impl OverflowFlags for NoFlags {
    const READABLE: bool = false;
    #[inline(always)]
    fn read(&self) -> u64 {
        0
    }
    #[inline(always)]
    fn clear(&self, _mask: u64) {}
}

/// A direct region of `K` counters without system calls (see the module docs).
///
/// `O` keeps the counters programmed (and enables, disables and releases them),
/// `A` checks the grant, `H` reads a counter, `S` the sentinel, `F` the overflow
/// flags, `C` the CPU.
#[derive(Debug)]
pub struct DirectRegion<O, A, H, S, F, const K: usize, C = DefaultCpu>
where
    O: CounterSet,
    A: AccessCheck,
    H: CounterRead,
    S: SentinelRead,
    F: OverflowFlags,
    C: ThreadSource,
{
    owner: O,
    access: A,
    counters: [H; K],
    sentinel: S,
    sentinel_state: Sentinel,
    flags: F,
    /// The counters' bits in the overflow-flag register.
    bits: [u64; K],
    mask: u64,
    widths: [CounterWidth; K],
    /// `widths[i]` as a mask of the low bits.
    masks: [u64; K],
    names: Vec<String>,
    cpu: C,
    start: [u64; K],
    /// The start's [`edge_tag`] (CPU and sentinel).
    start_tag: u64,
    /// The stop's counters, and whether it took the slow path.
    ends: Ends<K>,
    /// The stop's tag and overflow flags, stored by the slow path only (the fast
    /// path's are the start's tag and no flag of the region's counters).
    end_tag: u64,
    end_flags: u64,
    /// getrusage at both edges, regions without a sentinel only.
    switches_start: SwitchCounts,
    switches_end: SwitchCounts,
    /// The grant's mark at the start ([`AccessCheck::region_start`]).
    grant_mark: u64,
    /// The re-grants during the last region ([`AccessCheck::region_end`]).
    regrants: u64,
    /// The thread's re-grants after the start's check ([`AccessCheck::regrants_now`]).
    window_mark: u64,
}

/// The stop's counters and a word saying whether the stop took the slow path
/// (0: the fast path, the region clean). One `repr(C)` block so that the fast
/// path's two stores (the word, the first counter) pair into one `stp`.
#[derive(Debug)]
#[repr(C)]
struct Ends<const K: usize> {
    slow: u64,
    counters: [u64; K],
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
impl<O, A, H, S, F, const K: usize> DirectRegion<O, A, H, S, F, K, RseqCpu>
where
    O: CounterSet,
    A: AccessCheck,
    H: CounterRead,
    S: SentinelRead,
    F: OverflowFlags,
{
    rig_pub! {
        /// A region over `counters` (named `names`, counter i of `counters` being counter i
        /// of `owner`, whose widths they have), watched by `sentinel`; `sentinel_state` says
        /// how the sentinel counts, or why there is none. The CPU is read from the thread's
        /// rseq area (glibc's, or one this library registers).
        ///
        /// # Errors
        /// No rseq area ([`crate::Error::Io`] with [`crate::error::Op::Rseq`]: ENOSYS, or
        /// EBUSY where another library registered one this crate cannot find);
        /// [`crate::error::GroupError::NoEvents`]
        /// for K = 0; [`crate::error::GroupError::TooMany`]; a name count or an owner that
        /// differs from K ([`pmu_core::Error::ReadingsMismatch`]).
        ///
        /// # Panics
        /// For a `sentinel_state` that contradicts `S` (counting without a sentinel
        /// counter, or off with one): a mistake in the calling code.
        pub fn new(
            owner: O,
            access: A,
            counters: [H; K],
            names: Vec<String>,
            sentinel: S,
            sentinel_state: Sentinel,
            flags: F,
        ) -> Result<Self> {
            Self::with_cpu(
                owner,
                access,
                counters,
                names,
                sentinel,
                sentinel_state,
                flags,
                RseqCpu::this_thread()?,
            )
        }
    }
}

impl<O, A, H, S, F, const K: usize, C> DirectRegion<O, A, H, S, F, K, C>
where
    O: CounterSet,
    A: AccessCheck,
    H: CounterRead,
    S: SentinelRead,
    F: OverflowFlags,
    C: ThreadSource,
{
    rig_pub! {
        /// Starts the counters.
        ///
        /// # Errors
        /// [`crate::error::AccessError::Revoked`] when the grant went away.
        pub fn enable(&mut self) -> Result<()> {
            <Self as Backend>::enable(self)
        }
    }

    rig_pub! {
        /// Stops the counters.
        ///
        /// # Errors
        /// As [`Self::enable`].
        pub fn disable(&mut self) -> Result<()> {
            <Self as Backend>::disable(self)
        }
    }

    rig_pub! {
        /// What the last region's hazards were derived from.
        pub fn evidence(&self) -> Evidence {
            <Self as Backend>::evidence(self)
        }
    }

    /// A region over `counters` (named `names`, counter i of `counters` being
    /// counter i of `owner`, whose widths they have), watched by `sentinel`;
    /// `sentinel_state` says how the sentinel counts, or why there is none; `cpu`
    /// reads the CPU.
    ///
    /// # Errors
    /// [`crate::error::GroupError::NoEvents`] for K = 0; [`crate::error::GroupError::TooMany`]; a name count or an
    /// owner that differs from K ([`pmu_core::Error::ReadingsMismatch`]).
    ///
    /// # Panics
    /// For a `sentinel_state` that contradicts `S` (counting without a sentinel
    /// counter, or off with one): a mistake in the calling code.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn with_cpu(
        owner: O,
        access: A,
        counters: [H; K],
        names: Vec<String>,
        sentinel: S,
        sentinel_state: Sentinel,
        flags: F,
        cpu: C,
    ) -> Result<Self> {
        if K == 0 {
            return Err(Error::Group(crate::error::GroupError::NoEvents));
        }
        if K > crate::MAX_EVENTS {
            return Err(Error::Group(crate::error::GroupError::TooMany {
                given: K,
                max: crate::MAX_EVENTS,
            }));
        }
        if names.len() != K || owner.len() < K {
            return Err(pmu_core::Error::ReadingsMismatch {
                expected: K as u32,
                got: names.len().min(owner.len()) as u32,
            }
            .into());
        }
        assert_eq!(
            sentinel_state.is_counting(),
            S::PRESENT,
            "the region's sentinel description contradicts its sentinel counter: {sentinel_state}"
        );
        let widths: [CounterWidth; K] = core::array::from_fn(|i| owner.width(i));
        let masks = core::array::from_fn(|i| widths[i].truncate(u64::MAX));
        let bits = core::array::from_fn(|i| counters[i].overflow_mask());
        let mask = if F::READABLE {
            bits.iter().fold(0, |a, b| a | b)
        } else {
            0
        };
        Ok(Self {
            owner,
            access,
            counters,
            sentinel,
            sentinel_state,
            flags,
            bits,
            mask,
            widths,
            masks,
            names,
            cpu,
            start: [0; K],
            start_tag: 0,
            ends: Ends {
                slow: 0,
                counters: [0; K],
            },
            end_tag: 0,
            end_flags: 0,
            switches_start: SwitchCounts::default(),
            switches_end: SwitchCounts::default(),
            grant_mark: 0,
            regrants: 0,
            window_mark: 0,
        })
    }

    /// The counters underneath.
    #[cfg(test)]
    pub(crate) fn owner(&self) -> &O {
        &self.owner
    }

    #[inline(always)]
    fn check_access(&self) -> Result<()> {
        if self.access.granted() {
            Ok(())
        } else {
            revoked(&self.access)
        }
    }

    /// The CPU: rseq's `cpu_id` (one load), or `sched_getcpu()`.
    #[inline(always)]
    fn cpu(&self) -> Result<u32> {
        match self.cpu.cpu() {
            Some(cpu) => Ok(cpu),
            None => getcpu_failed(),
        }
    }

    /// The stop's tag and flags: the slow path's, or the fast path's (the start's
    /// tag, no flag).
    fn end_state(&self) -> (u64, u64) {
        if self.ends.slow == 0 {
            (self.start_tag, 0)
        } else {
            (self.end_tag, self.end_flags)
        }
    }

    #[inline(always)]
    fn kernel_entries(&self) -> u64 {
        if S::PRESENT {
            sentinel_delta(self.start_tag, self.end_state().0)
        } else {
            0
        }
    }

    /// The overflow bits of the region's counters: a constant where the handles
    /// name their counters in their types (zero-sized: nothing else to name it
    /// with), else the mask kept at construction.
    #[inline(always)]
    fn flag_mask(&self) -> u64 {
        if !F::READABLE {
            0
        } else if core::mem::size_of::<H>() == 0 {
            self.counters.iter().fold(0, |a, c| a | c.overflow_mask())
        } else {
            self.mask
        }
    }

    /// The stop's slow path (out of line): keeps the stop's state for
    /// [`Self::evidence`] and derives the full verdict.
    #[cold]
    #[inline(never)]
    fn stop_slow(
        &mut self,
        end: [u64; K],
        end_tag: u64,
        flags: u64,
        out: &mut [Reading],
    ) -> Result<()> {
        self.ends = Ends {
            slow: 1,
            counters: end,
        };
        self.end_tag = end_tag;
        self.end_flags = flags;
        let common = self.common_hazards(end_tag);
        counter_readings(
            &self.start,
            &self.ends.counters,
            |i| flags & self.bits[i] != 0,
            &self.widths,
            common,
            out,
        )?;
        Ok(())
    }

    #[inline(always)]
    fn switched(&self) -> bool {
        !S::PRESENT && self.switches_start.delta(self.switches_end).total() > 0
    }

    /// The hazards every reading shares, with the stop's tag `end_tag`: where the
    /// counters follow the thread a switch or a migration mixes no other thread's
    /// counts, so neither is a hazard (the evidence still shows both); the kernel's
    /// entries still are.
    fn common_hazards(&self, end_tag: u64) -> pmu_core::Hazards {
        if self.access.follows_thread() {
            edge_hazards(0, 0, false, self.kernel_entries())
        } else {
            edge_hazards(
                tag_cpu(self.start_tag),
                tag_cpu(end_tag),
                self.switched(),
                self.kernel_entries(),
            )
        }
    }
}

/// A re-grant between a region's reads (the per-thread grant's stop check, or its
/// SIGILL handler after a read trapped) ran the library's own instructions at EL0
/// inside the region: the counts hold them (about 90 instructions on the arm64 guests),
/// so every reading is [`pmu_core::Hazards::USER_ACCESS_REVOKED`].
#[cold]
#[inline(never)]
fn flag_regranted_inside(out: &mut [Reading]) {
    for r in out {
        r.hazards |= pmu_core::Hazards::USER_ACCESS_REVOKED;
    }
}

impl<O, A, H, S, F, const K: usize, C> RegionMeter for DirectRegion<O, A, H, S, F, K, C>
where
    O: CounterSet,
    A: AccessCheck,
    H: CounterRead,
    S: SentinelRead,
    F: OverflowFlags,
    C: ThreadSource,
{
    type Error = Error;

    /// Grant, CPU (and switch counts without a sentinel), sentinel, counters, then
    /// the overflow flags cleared (after the reads: a wrap after the read is seen by
    /// its flag, one before the clear by end < start).
    #[inline(always)]
    fn start(&mut self) -> Result<()> {
        // Compiled out where the grant keeps no re-grant count (the CPU-wide grants):
        // their regions cost what they did before the per-thread grant.
        if A::REGRANTS {
            self.grant_mark = self.access.region_start();
        }
        self.check_access()?;
        if A::REGRANTS {
            // A gap the start's re-grant reported came before the region's reads.
            self.access.region_started();
            self.window_mark = self.access.regrants_now();
        }
        if !S::PRESENT {
            self.switches_start = self.cpu.switches()?;
        }
        let cpu = self.cpu()?;
        let sentinel = if S::PRESENT { self.sentinel.read() } else { 0 };
        self.start = core::array::from_fn(|i| self.counters[i].read());
        self.start_tag = edge_tag(cpu, sentinel);
        if F::READABLE {
            self.flags.clear(self.flag_mask());
        }
        Ok(())
    }

    /// Grant (before any counter read: a revoked grant would trap them), counters,
    /// overflow flags, sentinel, CPU (and switch counts without a sentinel); then the
    /// readings.
    #[inline(always)]
    fn stop(&mut self, out: &mut [Reading]) -> Result<()> {
        self.check_access()?;
        let end: [u64; K] = core::array::from_fn(|i| self.counters[i].read());
        let flags = if F::READABLE { self.flags.read() } else { 0 };
        let sentinel = if S::PRESENT { self.sentinel.read() } else { 0 };
        let end_tag = edge_tag(self.cpu()?, sentinel);
        if !S::PRESENT {
            self.switches_end = self.cpu.switches()?;
        }
        // A read that trapped unrecovered read 0: no reading from this region.
        let mut regranted_inside = false;
        if A::REGRANTS {
            self.regrants = self.access.region_end(self.grant_mark)?;
            regranted_inside = self.access.regrants_now() != self.window_mark;
        }
        let Some(out) = out.get_mut(..K) else {
            return Err(pmu_core::Error::ReadingsMismatch {
                expected: K as u32,
                got: out.len() as u32,
            }
            .into());
        };
        // A region without a sentinel judges switches from getrusage: never fast.
        let fast = if S::PRESENT {
            fast_verdict(
                self.start_tag,
                end_tag,
                flags,
                self.flag_mask(),
                &self.start,
                &end,
                &self.masks,
            )
        } else {
            None
        };
        match fast {
            Some(values) => {
                self.ends = Ends {
                    slow: 0,
                    counters: end,
                };
                for (r, value) in out.iter_mut().zip(values) {
                    *r = Reading::new(value);
                }
            }
            None => self.stop_slow(end, end_tag, flags, out)?,
        }
        if regranted_inside {
            flag_regranted_inside(out);
        }
        Ok(())
    }
}

impl<O, A, H, S, F, const K: usize, C> Backend for DirectRegion<O, A, H, S, F, K, C>
where
    O: CounterSet,
    A: AccessCheck,
    H: CounterRead,
    S: SentinelRead,
    F: OverflowFlags,
    C: ThreadSource,
{
    fn names(&self) -> Vec<String> {
        self.names.clone()
    }

    fn enable(&mut self) -> Result<()> {
        self.check_access()?;
        (0..self.owner.len()).for_each(|i| self.owner.start(i));
        Ok(())
    }

    fn disable(&mut self) -> Result<()> {
        self.check_access()?;
        (0..self.owner.len()).for_each(|i| self.owner.stop(i));
        Ok(())
    }

    fn sentinel(&self) -> Sentinel {
        self.sentinel_state.clone()
    }

    fn width(&self, i: usize) -> Option<CounterWidth> {
        self.widths.get(i).copied()
    }

    fn preset_before_wrap(&mut self, i: usize, distance: u64) -> Result<()> {
        self.check_access()?;
        if i >= K {
            return Err(pmu_core::Error::ReadingsMismatch {
                expected: K as u32,
                got: i as u32 + 1,
            }
            .into());
        }
        self.owner.preset_before_wrap(i, distance);
        Ok(())
    }

    fn evidence(&self) -> Evidence {
        let mut out = [Reading::default(); crate::MAX_EVENTS];
        let (end_tag, flags) = self.end_state();
        let common = self.common_hazards(end_tag);
        let mut evidence = match counter_readings(
            &self.start,
            &self.ends.counters,
            |i| flags & self.bits[i] != 0,
            &self.widths,
            common,
            &mut out[..K],
        ) {
            Ok(n) => edge_evidence(
                (tag_cpu(self.start_tag), tag_cpu(end_tag)),
                C::RSEQ,
                (!S::PRESENT).then_some((self.switches_start, self.switches_end)),
                S::PRESENT.then(|| self.kernel_entries()),
                &out[..n],
            ),
            Err(_) => Evidence::default(),
        };
        evidence.regrants = A::REGRANTS.then_some(self.regrants);
        evidence.counts_follow_thread = self.access.follows_thread();
        evidence
    }
}

impl<O, A, H, S, F, const K: usize, C> Drop for DirectRegion<O, A, H, S, F, K, C>
where
    O: CounterSet,
    A: AccessCheck,
    H: CounterRead,
    S: SentinelRead,
    F: OverflowFlags,
    C: ThreadSource,
{
    /// With the grant gone every register access traps, the release included: the
    /// counters are left as they are (the kernel owns the PMU again).
    fn drop(&mut self) {
        if !self.access.granted() {
            self.owner.leave_programmed();
        }
    }
}

/// A [`DirectRegion`] of `handles.len()` counters (K chosen here from the count),
/// boxed for the meter.
// The direct backend's regions: ARMv8 and AArch32 (host tests build theirs by hand).
#[cfg_attr(
    not(any(target_arch = "aarch64", target_arch = "arm")),
    allow(dead_code)
)]
#[allow(clippy::too_many_arguments)]
fn boxed<O, A, H, S, F, C>(
    owner: O,
    access: A,
    handles: Vec<H>,
    names: Vec<String>,
    sentinel: S,
    state: Sentinel,
    flags: F,
    cpu: C,
) -> Result<Box<dyn Backend>>
where
    O: CounterSet + 'static,
    A: AccessCheck + 'static,
    H: CounterRead + 'static,
    S: SentinelRead + 'static,
    F: OverflowFlags + 'static,
    C: ThreadSource + 'static,
{
    const _: () = assert!(crate::MAX_EVENTS == 16, "extend the list below");
    macro_rules! by_len {
        ($($k:literal)*) => {
            match handles.len() {
                $($k => {
                    let given = handles.len();
                    let counters: [H; $k] =
                        handles.try_into().map_err(|_| pmu_core::Error::ReadingsMismatch {
                            expected: $k,
                            got: given as u32,
                        })?;
                    Ok(Box::new(DirectRegion::<O, A, H, S, F, $k, C>::with_cpu(
                        owner, access, counters, names, sentinel, state, flags, cpu,
                    )?))
                })*
                0 => Err(Error::Group(crate::error::GroupError::NoEvents)),
                given => Err(Error::Group(crate::error::GroupError::TooMany { given, max: crate::MAX_EVENTS })),
            }
        };
    }
    by_len!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)
}

/// The region's read handles and the backend's own kernel-entry sentinel, for counters
/// that [`OwnedCounters::allocate_with_extra`](super::OwnedCounters::allocate_with_extra)
/// allocated: the first `events` are the region's, the one after them (where there is
/// one) the sentinel's. `handle` makes a counter's read handle; `describe` says how the
/// sentinel on its slot counts (its event, and how). Without a sentinel counter the
/// [`Sentinel::Off`] says why: not `asked` for, or `error`, why the last candidate got
/// no counter.
///
/// # Errors
/// `handle`'s and `describe`'s.
// The backends that program their own sentinel: ARMv8 under EN and AArch32.
#[cfg_attr(
    not(any(
        target_arch = "aarch64",
        all(target_arch = "arm", target_feature = "v7")
    )),
    allow(dead_code)
)]
#[allow(clippy::type_complexity)]
pub(crate) fn handles_and_own_sentinel<P: pmu_core::Pmu, H>(
    counters: &super::alloc::OwnedCounters<P>,
    events: usize,
    asked: bool,
    error: Option<Error>,
    mut handle: impl FnMut(pmu_core::Slot) -> Result<H>,
    describe: impl FnOnce(pmu_core::Slot) -> Result<(String, String)>,
) -> Result<(Vec<H>, Option<H>, Sentinel)> {
    let slots: Vec<pmu_core::Slot> = counters.slots().collect();
    let handles = slots[..events]
        .iter()
        .map(|&slot| handle(slot))
        .collect::<Result<Vec<_>>>()?;
    let (sentinel, state) = match slots.get(events) {
        Some(&slot) => {
            let (event, how) = describe(slot)?;
            (Some(handle(slot)?), Sentinel::Counting { event, how })
        }
        None if !asked => (None, Sentinel::off(crate::sentinel::SWITCHED_OFF)),
        None => (
            None,
            Sentinel::off(format!(
                "no counter left for it ({}): ask for one event fewer to have one; regions \
                 see context switches (getrusage) and migrations, not interrupts, system \
                 calls or faults",
                error.map_or_else(|| "no candidate".to_owned(), |e| e.to_string())
            )),
        ),
    };
    Ok((handles, sentinel, state))
}

/// A [`DirectRegion`] over `handles` (K chosen from their count), boxed for the meter,
/// with the sentinel `sentinel` says is there or none, and the CPU from the thread's rseq
/// area where it has one, else `sched_getcpu()` (the evidence says which,
/// `cpu_from_rseq`): both are types, so each combination is its own region.
///
/// # Errors
/// As [`DirectRegion::with_cpu`].
// The direct backend's regions: ARMv8 and AArch32 (host tests build theirs by hand).
#[cfg_attr(
    not(any(target_arch = "aarch64", target_arch = "arm")),
    allow(dead_code)
)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn boxed_region<O, A, H, F>(
    owner: O,
    access: A,
    handles: Vec<H>,
    names: Vec<String>,
    sentinel: Option<H>,
    state: Sentinel,
    flags: F,
) -> Result<Box<dyn Backend>>
where
    O: CounterSet + 'static,
    A: AccessCheck + 'static,
    H: CounterRead + 'static,
    F: OverflowFlags + 'static,
{
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    if let Ok(cpu) = RseqCpu::this_thread() {
        return match sentinel {
            Some(h) => boxed(
                owner,
                access,
                handles,
                names,
                Watching(h),
                state,
                flags,
                cpu,
            ),
            None => boxed(owner, access, handles, names, NoSentinel, state, flags, cpu),
        };
    }
    match sentinel {
        Some(h) => boxed(
            owner,
            access,
            handles,
            names,
            Watching(h),
            state,
            flags,
            crate::machine::sched::Kernel,
        ),
        None => boxed(
            owner,
            access,
            handles,
            names,
            NoSentinel,
            state,
            flags,
            crate::machine::sched::Kernel,
        ),
    }
}

#[cfg(test)]
mod tests {
    use core::cell::Cell;

    use pmu_core::Hazards;

    use super::*;

    /// The backend's own sentinel (EN): allocated after the measured counters on the
    /// next free one, `PMEVTYPER<n>_EL0` = INST_RETIRED with U = 1 (bit 30: not EL0),
    /// P = 0 (bit 31: EL1 counted), NSH = 1 (bit 27: EL2 counted), Arm ARM (DDI 0487)
    /// `PMEVTYPER<n>_EL0`; on QEMU's `max` PMU (PMCR_EL0.N = 6, pmu-armv8's fake
    /// `qemu_max_icount`) six measured events leave none, and that is said, not an
    /// error.
    #[test]
    fn the_backends_sentinel_takes_a_free_counter_or_says_why_not() {
        use pmu_armv8::fake::FakeRegisters;
        use pmu_armv8::{Armv8Pmu, EventCounter, PmuOptions, PmuRegisters, PmuVersion};
        use pmu_core::{Event, GenericEvent, PrivilegeFilter, Slot};
        let regs = FakeRegisters::qemu_max_icount();
        let pmu = Armv8Pmu::new(&regs, PmuVersion::PmuV3, PmuOptions::new()).unwrap();
        let inst = Event::Generic(GenericEvent::Instructions);
        let sentinel = [(inst, SENTINEL_FILTER)];
        let (set, why) = super::super::alloc::OwnedCounters::allocate_with_extra(
            pmu,
            &[(inst, None)],
            PrivilegeFilter::USER,
            &sentinel,
        )
        .unwrap();
        assert!(why.is_none(), "{why:?}");
        let slots: Vec<Slot> = set.slots().collect();
        assert_eq!(slots, [Slot::Programmable(0), Slot::Programmable(1)]);
        let typer = regs.pmevtyper(EventCounter::new(1).unwrap()).get();
        assert_eq!(typer & 0xFFFF, 0x08, "INST_RETIRED");
        assert_eq!(typer >> 31 & 1, 0, "P = 0: EL1 counted");
        assert_eq!(typer >> 30 & 1, 1, "U = 1: EL0 not counted");
        assert_eq!(typer >> 27 & 1, 1, "NSH = 1: EL2 counted");
        let measured = regs.pmevtyper(EventCounter::new(0).unwrap()).get();
        assert_eq!(
            (measured >> 31 & 1, measured >> 30 & 1, measured >> 27 & 1),
            (1, 0, 0),
            "the measured counter counts EL0 only"
        );
        drop(set);

        let regs = FakeRegisters::qemu_max_icount();
        let pmu = Armv8Pmu::new(&regs, PmuVersion::PmuV3, PmuOptions::new()).unwrap();
        let six = [(inst, None); 6];
        let (set, why) = super::super::alloc::OwnedCounters::allocate_with_extra(
            pmu,
            &six,
            PrivilegeFilter::USER,
            &sentinel,
        )
        .unwrap();
        assert_eq!(set.slots().count(), 6);
        assert!(why.is_some(), "no counter is left for the sentinel");
    }

    /// A fake PMU for the region: every access is logged into one journal, so the
    /// order of an edge's reads is visible; the values, flags, sentinel and CPU are
    /// set by the test.
    mod fake {
        use core::cell::{Cell, RefCell};

        use pmu_core::{CounterRead, CounterWidth};

        use super::{CounterSet, OverflowFlags, Result, SwitchCounts, ThreadSource};

        #[derive(Debug, Default)]
        pub(super) struct Journal {
            pub(super) log: RefCell<Vec<String>>,
            pub(super) counters: [Cell<u64>; 2],
            pub(super) sentinel: Cell<u64>,
            pub(super) flags: Cell<u64>,
            pub(super) cpu: Cell<u32>,
            pub(super) running: Cell<u32>,
        }

        impl Journal {
            pub(super) fn note(&self, what: impl Into<String>) {
                self.log.borrow_mut().push(what.into());
            }
            pub(super) fn take_log(&self) -> Vec<String> {
                self.log.take()
            }
        }

        /// Counter `i` (2 is the sentinel), overflow bit `1 << i`.
        #[derive(Debug)]
        pub(super) struct Read<'j>(pub(super) &'j Journal, pub(super) usize);

        impl CounterRead for Read<'_> {
            fn read(&self) -> u64 {
                self.0.note(format!("read {}", self.1));
                match self.1 {
                    2 => self.0.sentinel.get(),
                    i => self.0.counters[i].get(),
                }
            }
            fn overflow_mask(&self) -> u64 {
                1 << self.1
            }
        }

        /// The two measured counters, 32 bits each.
        #[derive(Debug)]
        pub(super) struct Owner<'j>(pub(super) &'j Journal);

        impl CounterSet for Owner<'_> {
            fn len(&self) -> usize {
                2
            }
            fn width(&self, _: usize) -> CounterWidth {
                CounterWidth::W32
            }
            fn start(&self, i: usize) {
                self.0.running.set(self.0.running.get() | 1 << i);
            }
            fn stop(&self, i: usize) {
                self.0.running.set(self.0.running.get() & !(1 << i));
            }
            // The journal's counters are scripted per read: nothing to preset.
            fn preset_before_wrap(&self, _: usize, _: u64) {}
        }

        #[derive(Debug)]
        pub(super) struct Flags<'j>(pub(super) &'j Journal);

        impl OverflowFlags for Flags<'_> {
            const READABLE: bool = true;
            fn read(&self) -> u64 {
                self.0.note("flags");
                self.0.flags.get()
            }
            fn clear(&self, mask: u64) {
                self.0.note(format!("clear {mask:#b}"));
                self.0.flags.set(self.0.flags.get() & !mask);
            }
        }

        #[derive(Debug)]
        pub(super) struct Cpu<'j>(pub(super) &'j Journal);

        impl ThreadSource for Cpu<'_> {
            fn cpu(&self) -> Option<u32> {
                self.0.note("cpu");
                Some(self.0.cpu.get())
            }
            fn switches(&self) -> Result<SwitchCounts> {
                self.0.note("getrusage");
                Ok(SwitchCounts::default())
            }
        }
    }

    type FakeRegion<'j> = DirectRegion<
        fake::Owner<'j>,
        &'j dyn Fn() -> bool,
        fake::Read<'j>,
        Watching<fake::Read<'j>>,
        fake::Flags<'j>,
        2,
        fake::Cpu<'j>,
    >;

    /// Two counters and a sentinel on the fake PMU, access always granted.
    fn region(j: &fake::Journal) -> FakeRegion<'_> {
        fn always() -> bool {
            true
        }
        region_granted_while(j, &always)
    }

    /// As [`region`], access granted while `granted`.
    fn region_granted_while<'j>(
        j: &'j fake::Journal,
        granted: &'j dyn Fn() -> bool,
    ) -> FakeRegion<'j> {
        DirectRegion::with_cpu(
            fake::Owner(j),
            granted,
            [fake::Read(j, 0), fake::Read(j, 1)],
            vec!["cycles".into(), "instructions".into()],
            Watching(fake::Read(j, 2)),
            Sentinel::Counting {
                event: "instructions".into(),
                how: "fake".into(),
            },
            fake::Flags(j),
            fake::Cpu(j),
        )
        .unwrap()
    }

    fn stop(r: &mut FakeRegion<'_>) -> [Reading; 2] {
        let mut out = [Reading::default(); 2];
        r.stop(&mut out).unwrap();
        out
    }

    /// The backend reports each counter's width (the fake's 32 bits, as ARMv7 event
    /// counters: Arm ARM DDI 0406C, C12.1) and none past its counters.
    #[test]
    fn the_width_of_each_counter() {
        let j = fake::Journal::default();
        let r = region(&j);
        let backend: &dyn Backend = &r;
        assert_eq!(backend.width(0), Some(CounterWidth::W32));
        assert_eq!(backend.width(1), Some(CounterWidth::W32));
        assert_eq!(backend.width(2), None);
    }

    /// A quiet region: exact differences, no hazard, the evidence says 0 kernel
    /// entries (not "unknown"). The sentinel's reads enclose the counters' at both
    /// edges, the CPU is read outside them, the flags are cleared after the start's
    /// reads and read after the stop's (the order the module doc gives).
    #[test]
    fn a_quiet_region_is_exact_and_enclosed() {
        let j = fake::Journal::default();
        let mut r = region(&j);
        r.enable().unwrap();
        assert_eq!(j.running.get(), 0b11);
        j.counters[0].set(100);
        j.counters[1].set(0xFFFF_FF00);
        j.sentinel.set(500);
        r.start().unwrap();
        j.counters[0].set(350);
        j.counters[1].set(0xFFFF_FFFF);
        let out = stop(&mut r);
        assert_eq!((out[0].value, out[1].value), (250, 0xFF));
        assert!(out.iter().all(|o| o.hazards.is_empty()), "{out:?}");
        assert_eq!(r.evidence().kernel_entries, Some(0));
        assert_eq!(
            j.take_log(),
            [
                "cpu",
                "read 2",
                "read 0",
                "read 1",
                "clear 0b11", // start
                "read 0",
                "read 1",
                "flags",
                "read 2",
                "cpu", // stop
            ]
        );
        r.disable().unwrap();
        assert_eq!(j.running.get(), 0);
    }

    /// The kernel ran between the edges (the sentinel moved by 251): every reading is
    /// KERNEL_ENTRY, the count is the evidence; a context switch is one of these, so
    /// there is no CONTEXT_SWITCH without getrusage. The next quiet region is clean.
    #[test]
    fn a_kernel_entry_flags_every_reading() {
        let j = fake::Journal::default();
        let mut r = region(&j);
        r.start().unwrap();
        j.sentinel.set(251);
        let out = stop(&mut r);
        assert!(
            out.iter().all(|o| o.hazards == Hazards::KERNEL_ENTRY),
            "{out:?}"
        );
        assert_eq!(r.evidence().kernel_entries, Some(251));
        assert_eq!(r.evidence().switches, None, "no getrusage with a sentinel");
        r.start().unwrap();
        let out = stop(&mut r);
        assert!(out.iter().all(|o| o.hazards.is_empty()), "{out:?}");
        assert_eq!(r.evidence().kernel_entries, Some(0));
    }

    /// The sentinel's 32-bit difference undoes its wrap: 0xFFFF_FFF0 → 0x10 is 0x20
    /// entries' worth of kernel instructions (pmu-core `CounterWidth::wrapping_delta`).
    #[test]
    fn the_sentinel_wraps() {
        let j = fake::Journal::default();
        let mut r = region(&j);
        j.sentinel.set(0xFFFF_FFF0);
        r.start().unwrap();
        j.sentinel.set(0x10);
        let out = stop(&mut r);
        assert!(out[0].hazards.contains(Hazards::KERNEL_ENTRY));
        assert_eq!(r.evidence().kernel_entries, Some(0x20));
    }

    /// Overflow per counter: counter 1's flag (bit 1, its `overflow_mask`) flags
    /// counter 1 only, with one wrap added (pmu-core `CounterMeter`); end < start
    /// without a flag (a wrap before the start's clear) flags it too.
    #[test]
    fn overflow_is_per_counter() {
        let j = fake::Journal::default();
        let mut r = region(&j);
        j.counters[1].set(0xFFFF_FFF0);
        r.start().unwrap();
        j.counters[1].set(0x10);
        j.flags.set(0b10);
        let out = stop(&mut r);
        assert_eq!(out[0].hazards, Hazards::empty());
        assert!(out[1].hazards.contains(Hazards::OVERFLOW), "{out:?}");
        assert_eq!(out[1].value, 0x20);

        j.counters[0].set(1000);
        r.start().unwrap();
        assert_eq!(j.flags.get(), 0, "the start clears the region's flags");
        j.counters[0].set(10);
        let out = stop(&mut r);
        assert!(out[0].hazards.contains(Hazards::OVERFLOW), "{out:?}");
        assert_eq!(out[1].hazards, Hazards::empty());
    }

    /// Another CPU at the stop than at the start is a migration, with both CPUs in
    /// the evidence (`sched_getcpu()` here: not from rseq).
    #[test]
    fn another_cpu_is_a_migration() {
        let j = fake::Journal::default();
        let mut r = region(&j);
        j.cpu.set(1);
        r.start().unwrap();
        j.cpu.set(3);
        let out = stop(&mut r);
        assert!(out
            .iter()
            .all(|o| o.hazards.contains(Hazards::CPU_MIGRATION)));
        let ev = r.evidence();
        assert_eq!(
            (ev.cpu_start, ev.cpu_end, ev.cpu_from_rseq),
            (Some(1), Some(3), false)
        );
    }

    /// A revoked grant is an error at either edge before any counter is read (a read
    /// would trap: SIGILL).
    #[test]
    fn a_revoked_grant_is_an_error_before_any_read() {
        let j = fake::Journal::default();
        let granted = Cell::new(true);
        let check = || granted.get();
        let mut r = region_granted_while(&j, &check);
        r.start().unwrap();
        j.take_log();
        granted.set(false);
        let mut out = [Reading::default(); 2];
        assert!(matches!(
            r.stop(&mut out),
            Err(Error::Access(crate::error::AccessError::Revoked))
        ));
        assert!(matches!(
            r.start(),
            Err(Error::Access(crate::error::AccessError::Revoked))
        ));
        assert_eq!(j.take_log(), Vec::<String>::new());
    }

    /// The region says how its sentinel counts, and names its events.
    #[test]
    fn says_what_it_is() {
        let j = fake::Journal::default();
        let r = region(&j);
        assert_eq!(
            Backend::sentinel(&r),
            Sentinel::Counting {
                event: "instructions".into(),
                how: "fake".into()
            }
        );
        assert_eq!(Backend::names(&r), ["cycles", "instructions"]);
    }

    /// A per-thread grant as the module gives it (kmod_enable_user_uapi.h): re-grants
    /// counted by the thread, a trap mark, counters that follow the thread or not.
    struct FakeThreadGrant<'t> {
        follow: bool,
        regrants: &'t Cell<u64>,
        trapped: &'t Cell<bool>,
        /// Re-grants the next grant check makes (perf took the grant before it).
        at_check: &'t Cell<u64>,
    }

    impl AccessCheck for FakeThreadGrant<'_> {
        const REGRANTS: bool = true;
        fn granted(&self) -> bool {
            self.regrants
                .set(self.regrants.get() + self.at_check.take());
            true
        }
        fn regrants_now(&self) -> u64 {
            self.regrants.get()
        }
        fn follows_thread(&self) -> bool {
            self.follow
        }
        fn region_start(&self) -> u64 {
            self.trapped.set(false);
            self.regrants.get()
        }
        fn region_end(&self, mark: u64) -> Result<u64> {
            if self.trapped.get() {
                return Err(crate::direct::grant::read_trapped(
                    crate::direct::grant::thread::Trap::RegrantRefused(libc::EBUSY),
                ));
            }
            Ok(self.regrants.get() - mark)
        }
    }

    fn thread_region<'j>(
        j: &'j fake::Journal,
        grant: FakeThreadGrant<'j>,
    ) -> DirectRegion<
        fake::Owner<'j>,
        FakeThreadGrant<'j>,
        fake::Read<'j>,
        Watching<fake::Read<'j>>,
        fake::Flags<'j>,
        2,
        fake::Cpu<'j>,
    > {
        DirectRegion::with_cpu(
            fake::Owner(j),
            grant,
            [fake::Read(j, 0), fake::Read(j, 1)],
            vec!["cycles".into(), "instructions".into()],
            Watching(fake::Read(j, 2)),
            Sentinel::Counting {
                event: "instructions".into(),
                how: "fake".into(),
            },
            fake::Flags(j),
            fake::Cpu(j),
        )
        .unwrap()
    }

    /// Under the per-thread grant with `follow`: a migration mixes no other thread's
    /// counts, so the readings carry no CPU_MIGRATION (the evidence keeps both CPUs);
    /// a re-grant at the start's check (before the reads) leaves it clean and the
    /// evidence counts it; one between the reads (the stop's check, the SIGILL
    /// handler) ran the library's instructions inside the region, counted:
    /// USER_ACCESS_REVOKED (on the Debian guests beside `perf record`, such regions
    /// counted 200168 for 200079); a read that trapped unrecovered makes the stop an
    /// error that says why.
    #[test]
    fn the_per_thread_grant_follows_regrants_and_traps() {
        let j = fake::Journal::default();
        let (regrants, trapped, at_check) = (Cell::new(7), Cell::new(true), Cell::new(0));
        let follow = FakeThreadGrant {
            follow: true,
            regrants: &regrants,
            trapped: &trapped,
            at_check: &at_check,
        };
        let mut r = thread_region(&j, follow);
        j.counters[0].set(100);
        at_check.set(1);
        r.start().unwrap();
        assert!(!trapped.get(), "the start forgets an earlier region's trap");
        j.cpu.set(2);
        j.counters[0].set(350);
        let mut out = [Reading::default(); 2];
        r.stop(&mut out).unwrap();
        assert_eq!(out[0].value, 250);
        assert!(out.iter().all(|o| o.hazards.is_empty()), "{out:?}");
        let ev = r.evidence();
        assert_eq!((ev.cpu_start, ev.cpu_end), (Some(0), Some(2)));
        assert_eq!(ev.regrants, Some(1));
        assert!(ev.counts_follow_thread);
        assert!(ev.migrated());
        assert_eq!(ev.thread_hazards(), Hazards::empty());

        // Re-granted between the reads: the value kept, flagged.
        r.start().unwrap();
        j.counters[0].set(600);
        regrants.set(regrants.get() + 2);
        r.stop(&mut out).unwrap();
        assert_eq!(out[0].value, 250);
        assert!(
            out.iter()
                .all(|o| o.hazards == Hazards::USER_ACCESS_REVOKED),
            "{out:?}"
        );
        assert_eq!(r.evidence().regrants, Some(2));
        // And at the stop's check (after the start's reads): flagged too.
        r.start().unwrap();
        at_check.set(1);
        r.stop(&mut out).unwrap();
        assert!(out
            .iter()
            .all(|o| o.hazards == Hazards::USER_ACCESS_REVOKED));

        // A kernel entry still is one.
        r.start().unwrap();
        j.sentinel.set(40);
        r.stop(&mut out).unwrap();
        assert!(out.iter().all(|o| o.hazards == Hazards::KERNEL_ENTRY));

        r.start().unwrap();
        trapped.set(true);
        let err = r.stop(&mut out).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Access(crate::error::AccessError::ReadTrapped { .. })
            ),
            "{err:?}"
        );
        let text = err.to_string();
        for needle in [
            "not counted: a counter read trapped under kmod-enable-user's per-thread grant",
            "the re-grant failed: ioctl(KMOD_EU_IOC_REGRANT): EBUSY",
        ] {
            assert!(text.contains(needle), "`{needle}`: {text}");
        }

        // Without `follow` the counters are the CPU's: a migration is a hazard.
        let stays = FakeThreadGrant {
            follow: false,
            regrants: &regrants,
            trapped: &trapped,
            at_check: &at_check,
        };
        let mut r = thread_region(&j, stays);
        r.start().unwrap();
        j.cpu.set(3);
        r.stop(&mut out).unwrap();
        assert!(out
            .iter()
            .all(|o| o.hazards.contains(Hazards::CPU_MIGRATION)));
        assert_eq!(r.evidence().regrants, Some(0));
        // Other grants count no re-grants.
        assert_eq!(region(&j).evidence().regrants, None);
    }
}
