//! The ARMv8 direct region without system calls (`LeanRegion`; the verdict's pure part is
//! built and tested on every host).
//!
//! [`super::GenericDirectMeter`] watches the thread with `getrusage` and
//! `sched_getcpu()` at both edges: two system calls each, some 450 instructions a region
//! (`cargo xtask bench`). A lean region reads, at each edge, only registers and memory:
//!
//! | edge | what | how | instructions (compile-time handles, `cargo xtask bench`) |
//! |---|---|---|---|
//! | start | the grant | `mrs PMUSERENR_EL0`, test-and-branch | 2 |
//! | start | the CPU | `cpu_id` of the thread's rseq area ([`crate::rseq`]): pointer, test, load, store | 4 |
//! | start | the sentinel, the counters | `mrs` and a store each (a run-time handle: 5 more, the table) | 2 each |
//! | start | the overflow flags (EN) | the counters' mask, `msr PMOVSCLR_EL0` | 2 |
//! | stop | the grant | as at the start, *before* the reads (a revoked grant traps them) | 2 |
//! | stop | the counters, the flags (EN), the sentinel | `mrs` and a store each | 2 each |
//! | stop | the CPU | the rseq `cpu_id` | 3 |
//! | stop | the verdict | loads of the start state, compares and selects | 18 |
//! | stop | the readings | four stores each | 4 each |
//!
//! One counter: 12 + 33 = 45 instructions (46 measured with the harness's store), 65 (66)
//! with run-time handles; the `getrusage` region costs about 455.
//!
//! The verdict, per counter: [`Hazards::OVERFLOW`] from its overflow flag or end < start
//! (pmu-core `CounterMeter` rule), [`Hazards::CPU_MIGRATION`] when the rseq CPU differs,
//! [`Hazards::KERNEL_ENTRY`] when the sentinel moved: every exception taken to the kernel
//! retires kernel instructions, so any entry moves it (its 32-bit difference would read 0
//! only after a multiple of 2^32 of them inside one region). A context switch is a kernel
//! entry (the scheduler runs at the kernel's level, EL1 or EL2 with VHE), so the sentinel sees it too, and no `getrusage` is
//! needed: a lean region with a sentinel reports a switch as `KERNEL_ENTRY`, not as
//! `CONTEXT_SWITCH` ([`crate::region`]'s hazard table). Without a sentinel the region
//! does not pretend: it takes `getrusage` at both edges as before (switches, not the
//! other kernel entries) and `LeanRegion::sentinel` says why there is none. Without
//! an rseq area (a kernel without CONFIG_RSEQ) the CPU comes from `sched_getcpu()` and
//! the evidence says so ([`Evidence::cpu_from_rseq`] false).
//!
//! Under the read-only grant (ER | CR) EL0 cannot read the overflow flags (PMOVSSET_EL0
//! needs EN, `OverflowFlags`): overflow is judged from end < start on the 32-bit reads
//! alone, exact for regions below 2^32 events, as [`super::GenericDirectMeter`] does
//! there.

use pmu_core::{CounterWidth, Hazards, Reading};

use crate::region::{direct_evidence, Evidence};
use crate::sched::ThreadStamp;
use crate::sys::SwitchCounts;

/// The sentinel the backend programs under EN: INST_RETIRED (CPU_CYCLES where that
/// is not implemented) counted at EL1 and EL2 only: `PMEVTYPER<n>_EL0`.U = 1 (not
/// EL0), P = 0 (EL1), NSH = 1 (EL2). EL2 is included because a VHE kernel runs at
/// EL2 and EL0 cannot read which level the kernel uses (CurrentEL is UNDEFINED at
/// EL0); Linux counts a kernel event on a VHE host the same way (drivers/perf/
/// arm_pmuv3.c `armv8pmu_set_event_filter`, 6.12: with the kernel at EL2, counting
/// the kernel sets the EL2 bit). Field meanings: Arm ARM (DDI 0487),
/// `PMEVTYPER<n>_EL0` (P, U, NSH).
pub const SENTINEL_FILTER: pmu_core::PrivilegeFilter = pmu_core::PrivilegeFilter {
    user: false,
    kernel: true,
    hypervisor: true,
};

/// The sentinel's count over a region: its reads are 32 bits (the module's and the
/// backend's counters without PMCR_EL0.LP), so one wrap is undone by the 32-bit
/// difference.
#[inline(always)]
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
pub(crate) fn sentinel_delta(start: u64, end: u64) -> u64 {
    end.wrapping_sub(start) & u64::from(u32::MAX)
}

/// The hazards every counter of a lean region shares: [`Hazards::CPU_MIGRATION`] when
/// the edges' CPUs differ (both are always known: a region whose `sched_getcpu()`
/// fails is an error), [`Hazards::CONTEXT_SWITCH`] when getrusage saw one (regions
/// without a sentinel), [`Hazards::KERNEL_ENTRY`] when the sentinel moved. The same
/// rules as [`Evidence::thread_hazards`] on [`lean_evidence`].
#[inline(always)]
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
pub(crate) fn lean_hazards(
    cpu_start: u32,
    cpu_end: u32,
    switched: bool,
    kernel_entries: u64,
) -> Hazards {
    let mut common = Hazards::empty();
    if cpu_start != cpu_end {
        common |= Hazards::CPU_MIGRATION;
    }
    if switched {
        common |= Hazards::CONTEXT_SWITCH;
    }
    if kernel_entries != 0 {
        common |= Hazards::KERNEL_ENTRY;
    }
    common
}

/// The readings of a lean region (into `out`, one per counter): `masks[i]` keeps
/// counter i's width (`widths[i]`), `flags` is PMOVSSET_EL0 at the stop (0 without
/// EN), `bits[i]` counter i's bit in it, `common` the region's [`lean_hazards`]. Returns
/// how many.
///
/// # Errors
/// [`pmu_core::Error::DeltaOverflow`] (a wrapped 64-bit counter, impossible in
/// practice).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
pub(crate) fn lean_readings(
    start: &[u64],
    end: &[u64],
    flags: u64,
    bits: &[u64],
    masks: &[u64],
    widths: &[CounterWidth],
    common: Hazards,
    out: &mut [Reading],
) -> Result<usize, pmu_core::Error> {
    let n = start
        .len()
        .min(end.len())
        .min(bits.len())
        .min(masks.len())
        .min(widths.len())
        .min(out.len());
    for i in 0..n {
        let (s, e) = (start[i] & masks[i], end[i] & masks[i]);
        // The flag says the counter wrapped after the start cleared it; end < start
        // says it wrapped between the start read and the clear (or, without flags,
        // at all). More than one wrap cannot be told apart.
        let wrapped = flags & bits[i] != 0 || e < s;
        let (value, hazards) = if wrapped {
            (widths[i].accumulate(s, e, 1)?, common | Hazards::OVERFLOW)
        } else {
            (e - s, common)
        };
        out[i] = Reading {
            value,
            hazards,
            time_enabled: None,
            time_running: None,
        };
    }
    Ok(n)
}

/// The evidence of a lean region whose readings are `out`.
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
pub(crate) fn lean_evidence(
    cpu: (u32, u32),
    cpu_from_rseq: bool,
    switches: Option<(SwitchCounts, SwitchCounts)>,
    kernel_entries: Option<u64>,
    out: &[Reading],
) -> Evidence {
    let stamp = |cpu: u32, switches: Option<SwitchCounts>| ThreadStamp {
        switches,
        cpu: Some(cpu),
        cpu_from_rseq,
    };
    let mut evidence = direct_evidence(
        stamp(cpu.0, switches.map(|s| s.0)),
        stamp(cpu.1, switches.map(|s| s.1)),
        out,
    );
    evidence.kernel_entries = kernel_entries;
    evidence
}

#[cfg(target_arch = "aarch64")]
pub use imp::{
    lean_granted, lean_programmed, Flags, LeanRegion, NoFlags, NoSentinel, OverflowFlags,
    SentinelRead, Watching,
};

#[cfg(target_arch = "aarch64")]
mod imp {
    use pmu_armv8::granted::{El0Reads, GrantedLayout, GrantedPmu};
    use pmu_armv8::handle::{CounterHandle, ReadCounter};
    use pmu_armv8::{CounterId, El0Pmu, EventCounter, EventNumber};
    use pmu_core::{CounterWidth, Reading, RegionMeter, Slot};

    use super::{lean_evidence, lean_hazards, lean_readings, sentinel_delta, SENTINEL_FILTER};
    use crate::direct::{AccessCheck, CounterSet, OwnedCounters};
    use crate::error::{Error, Result};
    use crate::measure::Counters;
    use crate::region::Evidence;
    use crate::rseq::CpuId;
    use crate::sched::thread_switches;
    use crate::sys::SwitchCounts;
    use crate::Sentinel;

    /// `sched_getcpu()`, for threads without an rseq area: out of the regions' line
    /// (cold), so that the rseq load falls through.
    #[cold]
    #[inline(never)]
    fn sched_getcpu() -> Result<u32> {
        crate::sched::current_cpu().ok_or_else(|| Error::Syscall {
            op: crate::error::Op::Getcpu,
            errno: crate::error::Errno::last(),
        })
    }

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
    pub struct Watching<H: ReadCounter>(pub H);

    impl<H: ReadCounter> SentinelRead for Watching<H> {
        const PRESENT: bool = true;
        #[inline(always)]
        fn read(&self) -> u64 {
            self.0.read()
        }
    }

    /// Whether a region may read and clear the overflow flags: only with
    /// PMUSERENR_EL0.EN (PMOVSSET_EL0 and PMOVSCLR_EL0 are not among what ER and CR
    /// open, Arm ARM PMUSERENR_EL0). A type, as [`SentinelRead`].
    pub trait OverflowFlags {
        /// Whether the flags are read.
        const READABLE: bool;
        /// PMOVSSET_EL0 (0 when not readable).
        fn read(&self) -> u64;
        /// Clears the flags of `mask` (nothing when not readable).
        fn clear(&self, mask: u64);
    }

    /// Read-only grant: overflow from end < start only.
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

    /// EN: the flags are cleared at the start and read at the stop.
    #[derive(Debug)]
    pub struct Flags {
        _this_pe: core::marker::PhantomData<*const ()>,
    }

    impl Flags {
        /// The flags, proved accessible by the register file of a PMU taken from EL0
        /// ([`pmu_armv8::El0Registers`]: EN on this PE, the thread pinned there).
        pub fn with_en(_en: &pmu_armv8::El0Registers) -> Self {
            Self {
                _this_pe: core::marker::PhantomData,
            }
        }
    }

    impl OverflowFlags for Flags {
        const READABLE: bool = true;
        #[inline(always)]
        fn read(&self) -> u64 {
            // SAFETY: made only by `with_en`, whose proof is a register file made under
            // EN on this PE (its contract pins the thread there; `Flags` cannot leave
            // it); `mrs` has no side effect.
            unsafe { pmu_armv8::asm::read_pmovsset_el0() }
        }
        #[inline(always)]
        fn clear(&self, mask: u64) {
            // SAFETY: as in `read`; the write clears the flags of `mask` only
            // (write-one-to-clear), the region's own counters.
            unsafe { pmu_armv8::asm::write_pmovsclr_el0(mask) }
        }
    }

    /// A direct region of `K` counters without system calls (see the module docs).
    ///
    /// `O` keeps the counters programmed (and enables, disables and releases them),
    /// `A` checks the grant, `H` reads a counter, `S` the sentinel, `F` the overflow
    /// flags.
    #[derive(Debug)]
    pub struct LeanRegion<O, A, H, S, F, const K: usize>
    where
        O: CounterSet,
        A: AccessCheck,
        H: ReadCounter,
        S: SentinelRead,
        F: OverflowFlags,
    {
        owner: O,
        access: A,
        counters: [H; K],
        sentinel: S,
        sentinel_state: Sentinel,
        flags: F,
        /// The counters' bits in PMOVSSET_EL0 / PMOVSCLR_EL0.
        bits: [u64; K],
        mask: u64,
        widths: [CounterWidth; K],
        /// `widths[i]` as a mask of the low bits.
        masks: [u64; K],
        names: Vec<String>,
        cpu: Option<CpuId>,
        start: [u64; K],
        end: [u64; K],
        sentinel_start: u64,
        sentinel_end: u64,
        cpu_start: u32,
        cpu_end: u32,
        /// getrusage at both edges, regions without a sentinel only.
        switches_start: SwitchCounts,
        switches_end: SwitchCounts,
        overflow_flags: u64,
    }

    impl<O, A, H, S, F, const K: usize> LeanRegion<O, A, H, S, F, K>
    where
        O: CounterSet,
        A: AccessCheck,
        H: ReadCounter,
        S: SentinelRead,
        F: OverflowFlags,
    {
        /// A region over `counters` (named `names`, counter i of `counters` being
        /// counter i of `owner`, whose widths they have), watched by `sentinel`;
        /// `sentinel_state` says how the sentinel counts, or why there is none.
        ///
        /// # Errors
        /// [`Error::NoEvents`] for K = 0; [`Error::TooManyEvents`]; a name count or an
        /// owner that differs from K ([`pmu_core::Error::ReadingsMismatch`]); a
        /// `sentinel_state` that contradicts `S` ([`Error::SentinelMismatch`]).
        pub fn new(
            owner: O,
            access: A,
            counters: [H; K],
            names: Vec<String>,
            sentinel: S,
            sentinel_state: Sentinel,
            flags: F,
        ) -> Result<Self> {
            if K == 0 {
                return Err(Error::NoEvents);
            }
            if K > crate::MAX_EVENTS {
                return Err(Error::TooManyEvents {
                    given: K,
                    max: crate::MAX_EVENTS,
                });
            }
            if names.len() != K || owner.len() < K {
                return Err(pmu_core::Error::ReadingsMismatch {
                    expected: K as u32,
                    got: names.len().min(owner.len()) as u32,
                }
                .into());
            }
            if sentinel_state.is_counting() != S::PRESENT {
                return Err(Error::SentinelMismatch {
                    said: sentinel_state.to_string(),
                });
            }
            let widths: [CounterWidth; K] = core::array::from_fn(|i| owner.width(i));
            let masks = core::array::from_fn(|i| widths[i].truncate(u64::MAX));
            let bits = core::array::from_fn(|i| counters[i].counter().mask());
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
                cpu: crate::rseq::ThreadCpu::this_thread()
                    .ok()
                    .map(|c| c.cpu_id()),
                start: [0; K],
                end: [0; K],
                sentinel_start: 0,
                sentinel_end: 0,
                cpu_start: 0,
                cpu_end: 0,
                switches_start: SwitchCounts::default(),
                switches_end: SwitchCounts::default(),
                overflow_flags: 0,
            })
        }

        /// Whether the region has a sentinel, how it counts, or why there is none.
        pub fn sentinel(&self) -> &Sentinel {
            &self.sentinel_state
        }

        /// The counters underneath.
        pub fn owner(&self) -> &O {
            &self.owner
        }

        #[inline(always)]
        fn check_access(&self) -> Result<()> {
            if self.access.granted() {
                Ok(())
            } else {
                Err(Error::UserAccessRevoked)
            }
        }

        /// The CPU: rseq's `cpu_id` (one load), else `sched_getcpu()`.
        #[inline(always)]
        fn cpu(&self) -> Result<u32> {
            match self.cpu {
                Some(cpu) => Ok(cpu.current()),
                None => sched_getcpu(),
            }
        }

        #[inline(always)]
        fn kernel_entries(&self) -> u64 {
            if S::PRESENT {
                sentinel_delta(self.sentinel_start, self.sentinel_end)
            } else {
                0
            }
        }

        #[inline(always)]
        fn switched(&self) -> bool {
            !S::PRESENT && self.switches_start.delta(self.switches_end).total() > 0
        }
    }

    impl<O, A, H, S, F, const K: usize> RegionMeter for LeanRegion<O, A, H, S, F, K>
    where
        O: CounterSet,
        A: AccessCheck,
        H: ReadCounter,
        S: SentinelRead,
        F: OverflowFlags,
    {
        type Error = Error;

        /// Grant, CPU (and switch counts without a sentinel), sentinel, counters, then
        /// the overflow flags cleared (after the reads: a wrap after the read is seen by
        /// its flag, one before the clear by end < start).
        #[inline(always)]
        fn start(&mut self) -> Result<()> {
            self.check_access()?;
            if !S::PRESENT {
                self.switches_start = thread_switches()?;
            }
            self.cpu_start = self.cpu()?;
            if S::PRESENT {
                self.sentinel_start = self.sentinel.read();
            }
            for (v, c) in self.start.iter_mut().zip(&self.counters) {
                *v = c.read();
            }
            if F::READABLE {
                self.flags.clear(self.mask);
            }
            Ok(())
        }

        /// Grant (before any counter read: a revoked grant would trap them), counters,
        /// overflow flags, sentinel, CPU (and switch counts without a sentinel); then the
        /// readings.
        #[inline(always)]
        fn stop(&mut self, out: &mut [Reading]) -> Result<()> {
            self.check_access()?;
            for (v, c) in self.end.iter_mut().zip(&self.counters) {
                *v = c.read();
            }
            let flags = if F::READABLE { self.flags.read() } else { 0 };
            self.overflow_flags = flags;
            if S::PRESENT {
                self.sentinel_end = self.sentinel.read();
            }
            self.cpu_end = self.cpu()?;
            if !S::PRESENT {
                self.switches_end = thread_switches()?;
            }
            if out.len() < K {
                return Err(pmu_core::Error::ReadingsMismatch {
                    expected: K as u32,
                    got: out.len() as u32,
                }
                .into());
            }
            let common = lean_hazards(
                self.cpu_start,
                self.cpu_end,
                self.switched(),
                self.kernel_entries(),
            );
            lean_readings(
                &self.start,
                &self.end,
                flags,
                &self.bits,
                &self.masks,
                &self.widths,
                common,
                &mut out[..K],
            )?;
            Ok(())
        }
    }

    impl<O, A, H, S, F, const K: usize> Counters for LeanRegion<O, A, H, S, F, K>
    where
        O: CounterSet,
        A: AccessCheck,
        H: ReadCounter,
        S: SentinelRead,
        F: OverflowFlags,
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

        fn sentinel(&self) -> Option<Sentinel> {
            Some(self.sentinel_state.clone())
        }

        fn evidence(&self) -> Evidence {
            let mut out = [Reading::default(); crate::MAX_EVENTS];
            let common = lean_hazards(
                self.cpu_start,
                self.cpu_end,
                self.switched(),
                self.kernel_entries(),
            );
            match lean_readings(
                &self.start,
                &self.end,
                self.overflow_flags,
                &self.bits,
                &self.masks,
                &self.widths,
                common,
                &mut out[..K],
            ) {
                Ok(n) => lean_evidence(
                    (self.cpu_start, self.cpu_end),
                    self.cpu.is_some(),
                    (!S::PRESENT).then_some((self.switches_start, self.switches_end)),
                    S::PRESENT.then(|| self.kernel_entries()),
                    &out[..n],
                ),
                Err(_) => Evidence::default(),
            }
        }
    }

    impl<O, A, H, S, F, const K: usize> Drop for LeanRegion<O, A, H, S, F, K>
    where
        O: CounterSet,
        A: AccessCheck,
        H: ReadCounter,
        S: SentinelRead,
        F: OverflowFlags,
    {
        /// With the grant gone every register access traps, the release included: the
        /// counters are left as they are (the kernel owns the PMU again).
        fn drop(&mut self) {
            if !self.access.granted() {
                self.owner.leave_programmed();
            }
        }
    }

    /// A [`LeanRegion`] of `handles.len()` counters (K chosen here from the count),
    /// boxed for the meter.
    #[allow(clippy::too_many_arguments)]
    fn boxed<O, A, S, F>(
        owner: O,
        access: A,
        handles: Vec<CounterHandle>,
        names: Vec<String>,
        sentinel: S,
        state: Sentinel,
        flags: F,
    ) -> Result<Box<dyn Counters>>
    where
        O: CounterSet + 'static,
        A: AccessCheck + 'static,
        S: SentinelRead + 'static,
        F: OverflowFlags + 'static,
    {
        const _: () = assert!(crate::MAX_EVENTS == 16, "extend the list below");
        macro_rules! by_len {
            ($($k:literal)*) => {
                match handles.len() {
                    $($k => {
                        let given = handles.len();
                        let counters: [CounterHandle; $k] =
                            handles.try_into().map_err(|_| pmu_core::Error::ReadingsMismatch {
                                expected: $k,
                                got: given as u32,
                            })?;
                        Ok(Box::new(LeanRegion::<O, A, CounterHandle, S, F, $k>::new(
                            owner, access, counters, names, sentinel, state, flags,
                        )?))
                    })*
                    0 => Err(Error::NoEvents),
                    given => Err(Error::TooManyEvents { given, max: crate::MAX_EVENTS }),
                }
            };
        }
        by_len!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)
    }

    /// [`boxed`] with the sentinel `sentinel` says is there, or none.
    #[allow(clippy::too_many_arguments)]
    fn boxed_watched<O, A, F>(
        owner: O,
        access: A,
        handles: Vec<CounterHandle>,
        names: Vec<String>,
        sentinel: Option<CounterHandle>,
        state: Sentinel,
        flags: F,
    ) -> Result<Box<dyn Counters>>
    where
        O: CounterSet + 'static,
        A: AccessCheck + 'static,
        F: OverflowFlags + 'static,
    {
        match sentinel {
            Some(h) => boxed(owner, access, handles, names, Watching(h), state, flags),
            None => boxed(owner, access, handles, names, NoSentinel, state, flags),
        }
    }

    /// The layout counter behind a [`GrantedPmu`] slot (its i-th event counter, or the
    /// cycle counter).
    fn granted_counter(layout: &GrantedLayout, slot: Slot) -> Option<CounterId> {
        match slot {
            Slot::Programmable(i) => layout
                .event_counters()
                .get(usize::from(i))
                .and_then(|&(n, _)| EventCounter::new(n))
                .map(CounterId::Event),
            Slot::Fixed(0) if layout.cycle_counter() => Some(CounterId::Cycle),
            Slot::Fixed(_) => None,
        }
    }

    /// The name of a sentinel's event number.
    fn event_name(event: u16) -> String {
        match EventNumber::new(event) {
            EventNumber::INST_RETIRED => "instructions".into(),
            EventNumber::CPU_CYCLES => "cycles".into(),
            _ => format!("r{event:x}"),
        }
    }

    /// A lean region on the module's counters under its read-only grant, for `placed`
    /// (each on the layout slot that counts it), with the module's sentinel when it runs
    /// one (`sentinel=1`), else `getrusage` for switches and a [`Sentinel::Off`] saying
    /// so.
    ///
    /// # Errors
    /// pmu-core's allocation errors; [`Error::CounterHandle`] (a slot the layout does
    /// not back: cannot happen for slots of this PMU).
    pub fn lean_granted(
        pmu: GrantedPmu<El0Reads>,
        placed: &[(pmu_core::Event, Option<Slot>)],
        names: Vec<String>,
    ) -> Result<(Box<dyn Counters>, Sentinel)> {
        let layout = *pmu.layout();
        let access = super::super::armv8::PmuserenrRead::for_layout(&layout);
        let counters = OwnedCounters::allocate(pmu, placed, pmu_core::PrivilegeFilter::USER)?;
        let handles = counters
            .slots()
            .map(|slot| {
                let id = granted_counter(&layout, slot).ok_or(Error::Core(
                    pmu_core::Error::CounterOutOfRange {
                        slot,
                        available: layout.event_counters().len() as u32,
                    },
                ))?;
                CounterHandle::new(counters.pmu(), id).map_err(Error::CounterHandle)
            })
            .collect::<Result<Vec<_>>>()?;
        let (sentinel, state) = match layout.sentinel() {
            Some((n, event)) => {
                let handle = CounterHandle::from_number(counters.pmu(), u32::from(n))
                    .map_err(Error::CounterHandle)?;
                (
                    Some(handle),
                    Sentinel::Counting {
                        event: event_name(event),
                        how: format!(
                            "kmod-enable-user's sentinel=1 counter PMEVCNTR{n}_EL0, the \
                             kernel's level only (EL1, or EL2 with VHE), read with one instruction at both edges; a context \
                             switch shows as a kernel entry"
                        ),
                    },
                )
            }
            None => (
                None,
                Sentinel::off(
                    "kmod-enable-user runs none (load it with sentinel=1): regions see \
                     context switches (getrusage) and migrations, not interrupts, system \
                     calls or faults",
                ),
            ),
        };
        let region = boxed_watched(
            counters,
            access,
            handles,
            names,
            sentinel,
            state.clone(),
            NoFlags,
        )?;
        Ok((region, state))
    }

    /// A lean region on counters the backend programs itself under EN (`pmu` from
    /// [`super::super::armv8::take_armv8`]), for `placed`, plus a sentinel on a free
    /// counter ([`SENTINEL_FILTER`]); with no free counter (or neither event), regions
    /// take `getrusage` for switches and a [`Sentinel::Off`] says why.
    ///
    /// # Errors
    /// pmu-core's allocation errors for `placed`.
    pub fn lean_programmed(
        pmu: El0Pmu,
        placed: &[(pmu_core::Event, Option<Slot>)],
        names: Vec<String>,
    ) -> Result<(Box<dyn Counters>, Sentinel)> {
        use pmu_core::GenericEvent;
        let candidates = [
            (
                pmu_core::Event::Generic(GenericEvent::Instructions),
                SENTINEL_FILTER,
            ),
            (
                pmu_core::Event::Generic(GenericEvent::CpuCycles),
                SENTINEL_FILTER,
            ),
        ];
        let (counters, sentinel_error) = OwnedCounters::allocate_with_extra(
            pmu,
            placed,
            pmu_core::PrivilegeFilter::USER,
            &candidates,
        )?;
        let pmu = counters.pmu();
        let id = |slot: Slot| {
            pmu.counter_id(slot)
                .ok_or(Error::Core(pmu_core::Error::CounterOutOfRange {
                    slot,
                    available: pmu_core::Pmu::capabilities(pmu).programmable,
                }))
        };
        let slots: Vec<Slot> = counters.slots().collect();
        let handles = slots[..placed.len()]
            .iter()
            .map(|&slot| {
                CounterHandle::new(pmu.registers(), id(slot)?).map_err(Error::CounterHandle)
            })
            .collect::<Result<Vec<_>>>()?;
        let flags = Flags::with_en(pmu.registers());
        let (sentinel, state) = match slots.get(placed.len()) {
            Some(&slot) => {
                let counter = id(slot)?;
                // The event is whichever candidate got the counter: read it back from
                // PMEVTYPER<n>_EL0 (evtCount, bits 15:0) rather than guess.
                let event = match counter {
                    CounterId::Event(n) => {
                        // SAFETY: EN on this PE (`El0Pmu`'s contract), n below PMCR_EL0.N
                        // (the pool allocated it).
                        let typer = unsafe { pmu_armv8::asm::read_pmevtyper_el0(n) };
                        event_name((typer & 0xFFFF) as u16)
                    }
                    CounterId::Cycle => "cycles".into(),
                };
                (
                    Some(
                        CounterHandle::new(pmu.registers(), counter)
                            .map_err(Error::CounterHandle)?,
                    ),
                    Sentinel::Counting {
                        event,
                        how: format!(
                            "programmed by this library on {counter} with PMEVTYPER.U=1 \
                             P=0 NSH=1 (EL1 and EL2, not EL0), read with one instruction at \
                             both edges; a context switch shows as a kernel entry"
                        ),
                    },
                )
            }
            None => (
                None,
                Sentinel::off(format!(
                    "no counter left for it ({}): regions see context switches \
                     (getrusage) and migrations, not interrupts, system calls or faults",
                    sentinel_error.map_or_else(|| "no candidate".to_owned(), |e| e.to_string())
                )),
            ),
        };
        let region = boxed_watched(
            counters,
            super::super::armv8::Pmuserenr,
            handles,
            names,
            sentinel,
            state.clone(),
            flags,
        )?;
        Ok((region, state))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W32: u64 = u32::MAX as u64;

    /// The lean verdict (region.rs hazard table, direct column): a moved sentinel flags
    /// every counter KERNEL_ENTRY with its count as evidence; the flag bit of a counter
    /// (PMOVSSET_EL0 bit n, Arm ARM) flags that counter only; end < start is a wrap
    /// (pmu-core `CounterMeter` rule); a changed CPU is a migration; without a sentinel,
    /// getrusage's switches are the switch evidence.
    #[test]
    fn the_verdict_of_a_lean_region() {
        let widths = [CounterWidth::W32, CounterWidth::W64];
        let masks = [W32, u64::MAX];
        let bits = [1 << 5, 1 << 31];
        let mut out = [Reading::default(); 2];
        // Quiet: sentinel still, no flag, same CPU.
        let quiet = lean_hazards(0, 0, false, 0);
        assert_eq!(quiet, Hazards::empty());
        let n = lean_readings(
            &[100, 5],
            &[350, 9],
            0,
            &bits,
            &masks,
            &widths,
            quiet,
            &mut out,
        )
        .unwrap();
        assert_eq!(n, 2);
        assert_eq!((out[0].value, out[0].hazards), (250, Hazards::empty()));
        assert_eq!((out[1].value, out[1].hazards), (4, Hazards::empty()));
        let ev = lean_evidence((0, 0), true, None, Some(0), &out);
        assert_eq!(ev.kernel_entries, Some(0));
        assert_eq!(ev.switches, None);
        assert!(ev.cpu_from_rseq);
        assert_eq!(ev.thread_hazards(), quiet);

        // The kernel ran 251 instructions: both counters flagged, as the evidence says.
        let entered = lean_hazards(0, 0, false, 251);
        lean_readings(
            &[100, 5],
            &[350, 9],
            0,
            &bits,
            &masks,
            &widths,
            entered,
            &mut out,
        )
        .unwrap();
        assert!(out.iter().all(|r| r.hazards == Hazards::KERNEL_ENTRY));
        let ev = lean_evidence((0, 0), true, None, Some(251), &out);
        assert_eq!(ev.thread_hazards(), entered);

        // Counter 5's flag: it wrapped once (2^32 + 10 − 0xFFFF_FFF0 = 26), the cycle
        // counter did not.
        lean_readings(
            &[0xFFFF_FFF0, 5],
            &[10, 9],
            1 << 5,
            &bits,
            &masks,
            &widths,
            quiet,
            &mut out,
        )
        .unwrap();
        assert_eq!((out[0].value, out[0].hazards), (26, Hazards::OVERFLOW));
        assert_eq!(out[1].hazards, Hazards::empty());
        assert!(lean_evidence((0, 0), true, None, Some(0), &out).events()[0].overflowed);

        // Read-only grant (no flags): end < start is the wrap; the high bits of a
        // 32-bit read are ignored; CPU 0 → 1 is a migration.
        let moved = lean_hazards(0, 1, false, 0);
        lean_readings(
            &[0xFFFF_FFF0],
            &[0x7_0000_000A],
            0,
            &bits[..1],
            &masks[..1],
            &widths[..1],
            moved,
            &mut out[..1],
        )
        .unwrap();
        assert_eq!(out[0].value, 26);
        assert_eq!(out[0].hazards, Hazards::OVERFLOW | Hazards::CPU_MIGRATION);
        assert_eq!(
            lean_evidence((0, 1), false, None, None, &out[..1]).thread_hazards(),
            Hazards::CPU_MIGRATION
        );

        // No sentinel: getrusage's switches are the evidence of a switch.
        let switched = lean_hazards(0, 0, true, 0);
        assert_eq!(switched, Hazards::CONTEXT_SWITCH);
        let a = SwitchCounts {
            voluntary: 1,
            involuntary: 3,
        };
        let b = SwitchCounts {
            voluntary: 1,
            involuntary: 4,
        };
        let ev = lean_evidence((0, 0), true, Some((a, b)), None, &out[..1]);
        assert_eq!(ev.thread_hazards(), Hazards::CONTEXT_SWITCH);
        assert_eq!(ev.kernel_entries, None);
    }

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
        let (set, why) = super::super::OwnedCounters::allocate_with_extra(
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
        let (set, why) = super::super::OwnedCounters::allocate_with_extra(
            pmu,
            &six,
            PrivilegeFilter::USER,
            &sentinel,
        )
        .unwrap();
        assert_eq!(set.slots().count(), 6);
        assert!(why.is_some(), "no counter is left for the sentinel");
    }

    /// The sentinel is read as 32 bits (kmod-enable-user's and the backend's counters
    /// without PMCR_EL0.LP): one wrap is undone, the high bits ignored.
    #[test]
    fn the_sentinel_count_survives_one_wrap() {
        assert_eq!(sentinel_delta(0xFFFF_FFFE, 0x3), 5);
        assert_eq!(sentinel_delta(0x1_0000_0005, 0x2_0000_0007), 2);
        assert_eq!(sentinel_delta(7, 7), 0);
    }
}
