//! The ARMv8 direct region without system calls (`DirectRegion`; its verdict is
//! [`crate::verdict`]'s direct rules, built and tested on every host).
//!
//! [`super::DirectMeter`] watches the thread with `getrusage` and `sched_getcpu()` at
//! both edges: two system calls each. This region reads, at each edge, only registers
//! and memory: the grant (`mrs PMUSERENR_EL0`, before the counter reads, which a revoked
//! grant would trap), the CPU (`cpu_id` of the thread's rseq area, [`crate::machine::ThreadCpu`]), the
//! sentinel and the counters (one `mrs` each; a run-time handle goes through a table),
//! and with EN the overflow flags (`PMOVSCLR_EL0` at the start, `PMOVSSET_EL0` at the
//! stop). The start packs the CPU and the sentinel into one tag stored with the
//! counters. A clean stop (same tag, no flag, end ≥ start for every counter) writes the
//! readings and nothing else; a stop with a hazard leaves for the slow path, out of line
//! (`#[cold]`), which stores the stop's tag and flags and derives the full verdict. A
//! clean stop stores neither: its tag is the start's and none of its counters' flags is
//! set, which is all the region's `evidence()` needs to rebuild the same evidence. The
//! end ≥ start test is needed beside the flag: a wrap between the start's read and its
//! clear sets a flag the clear then erases, and an empty hazard set promises no wrap.
//! What each edge costs in instructions is measured by `cargo xtask bench`
//! (docs/bench.md).
//!
//! The verdict, per counter: `OVERFLOW` from its overflow flag or end < start
//! (pmu-core `CounterMeter` rule), `CPU_MIGRATION` when the rseq CPU differs,
//! `KERNEL_ENTRY` when the sentinel moved: every exception taken to
//! the kernel retires kernel instructions, so any entry moves it (its 32-bit difference
//! would read 0 only after a multiple of 2^32 of them inside one region). A context
//! switch is a kernel entry (the scheduler runs at the kernel's level, EL1 or EL2 with
//! VHE), so the sentinel sees it too, and no `getrusage` is needed: a syscall-free region
//! with a sentinel reports a switch as `KERNEL_ENTRY`, not as `CONTEXT_SWITCH`
//! ([`crate::verdict`]'s hazard table). Without a sentinel the region does not pretend:
//! it takes `getrusage` at both edges (switches, not the other kernel
//! entries) and `DirectRegion::sentinel` says why there is none. Without an rseq area (a
//! kernel without CONFIG_RSEQ) the CPU comes from `sched_getcpu()` and the evidence
//! says so ([`crate::verdict::Evidence::cpu_from_rseq`] false).
//!
//! Under the read-only grant (ER | CR) EL0 cannot read the overflow flags (PMOVSSET_EL0
//! needs EN, `OverflowFlags`): overflow is judged from end < start on the 32-bit reads
//! alone, exact for regions below 2^32 events, as [`super::DirectMeter`] does
//! there.

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

#[cfg(target_arch = "aarch64")]
pub use imp::{
    granted_region, programmed_region, CpuSource, DirectRegion, Flags, Getcpu, NoFlags, NoSentinel,
    OverflowFlags, RseqCpu, SentinelRead, Watching,
};

#[cfg(target_arch = "aarch64")]
mod imp {
    use pmu_armv8::granted::{El0Reads, GrantedLayout, GrantedPmu};
    use pmu_armv8::handle::{CounterHandle, ReadCounter};
    use pmu_armv8::{CounterId, El0Pmu, EventCounter, EventNumber};
    use pmu_core::{CounterWidth, Reading, RegionMeter, Slot};

    use super::SENTINEL_FILTER;
    use crate::backend::Backend;
    use crate::direct::{AccessCheck, CounterSet, OwnedCounters};
    use crate::error::{Error, Result};
    use crate::rseq::CpuId;
    use crate::sched::thread_switches;
    use crate::sys::SwitchCounts;
    use crate::verdict::Evidence;
    use crate::verdict::{
        counter_readings, edge_evidence, edge_hazards, edge_tag, fast_verdict, sentinel_delta,
        tag_cpu,
    };
    use crate::Sentinel;

    /// `sched_getcpu()`, for threads without an rseq area: out of the regions' line
    /// (cold), so that the rseq load falls through.
    #[cold]
    #[inline(never)]
    fn sched_getcpu() -> Result<u32> {
        crate::sched::current_cpu().ok_or_else(|| {
            crate::error::Error::syscall(crate::error::Op::Getcpu, crate::error::Errno::last())
        })
    }

    /// The error of a revoked grant, out of the regions' line (cold): the compiler then
    /// lays the granted path straight.
    #[cold]
    #[inline(never)]
    fn revoked() -> Result<()> {
        Err(Error::Access(crate::error::AccessError::Revoked))
    }

    /// Where a region reads the thread's CPU: [`RseqCpu`] (one load) or [`Getcpu`] (a
    /// system call, for kernels without rseq). A type, as [`SentinelRead`]: a region
    /// with an rseq area has no test for one.
    pub trait CpuSource {
        /// Whether the CPU comes from the rseq area.
        const RSEQ: bool;
        /// The CPU the thread runs on.
        ///
        /// # Errors
        /// `sched_getcpu()`'s ([`Getcpu`] only).
        fn current(&self) -> Result<u32>;
    }

    /// The CPU from the thread's rseq area (`cpu_id`, [`crate::machine::ThreadCpu`]).
    #[derive(Clone, Copy, Debug)]
    pub struct RseqCpu(CpuId);

    impl RseqCpu {
        /// The calling thread's area (registered on first use).
        ///
        /// # Errors
        /// [`Error::Io`] with [`crate::error::Op::Rseq`]: no area (ENOSYS: a kernel
        /// without CONFIG_RSEQ; EBUSY: one another library registered and this crate
        /// cannot find). Use [`Getcpu`] there.
        pub fn this_thread() -> Result<Self> {
            crate::rseq::ThreadCpu::this_thread()
                .map(|c| Self(c.cpu_id()))
                .map_err(|errno| crate::error::Error::syscall(crate::error::Op::Rseq, errno))
        }
    }

    impl CpuSource for RseqCpu {
        const RSEQ: bool = true;
        #[inline(always)]
        fn current(&self) -> Result<u32> {
            Ok(self.0.current())
        }
    }

    /// The CPU from `sched_getcpu()` (threads without an rseq area).
    #[derive(Clone, Copy, Debug, Default)]
    pub struct Getcpu;

    impl CpuSource for Getcpu {
        const RSEQ: bool = false;
        #[inline(always)]
        fn current(&self) -> Result<u32> {
            sched_getcpu()
        }
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
    /// flags, `C` the CPU.
    #[derive(Debug)]
    pub struct DirectRegion<O, A, H, S, F, const K: usize, C = RseqCpu>
    where
        O: CounterSet,
        A: AccessCheck,
        H: ReadCounter,
        S: SentinelRead,
        F: OverflowFlags,
        C: CpuSource,
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
        cpu: C,
        start: [u64; K],
        /// The start's [`edge_tag`] (CPU and sentinel).
        start_tag: u64,
        /// The stop's counters, and whether it took the slow path.
        ends: Ends<K>,
        /// The stop's tag and PMOVSSET_EL0, stored by the slow path only (the fast
        /// path's are the start's tag and no flag of the region's counters).
        end_tag: u64,
        end_flags: u64,
        /// getrusage at both edges, regions without a sentinel only.
        switches_start: SwitchCounts,
        switches_end: SwitchCounts,
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

    impl<O, A, H, S, F, const K: usize> DirectRegion<O, A, H, S, F, K, RseqCpu>
    where
        O: CounterSet,
        A: AccessCheck,
        H: ReadCounter,
        S: SentinelRead,
        F: OverflowFlags,
    {
        /// [`DirectRegion::with_cpu`] reading the CPU from the thread's rseq area.
        ///
        /// # Errors
        /// [`RseqCpu::this_thread`]'s, and [`DirectRegion::with_cpu`]'s.
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

    impl<O, A, H, S, F, const K: usize, C> DirectRegion<O, A, H, S, F, K, C>
    where
        O: CounterSet,
        A: AccessCheck,
        H: ReadCounter,
        S: SentinelRead,
        F: OverflowFlags,
        C: CpuSource,
    {
        /// Starts the counters.
        ///
        /// # Errors
        /// [`crate::error::AccessError::Revoked`] when the grant went away.
        pub fn enable(&mut self) -> Result<()> {
            <Self as Backend>::enable(self)
        }

        /// Stops the counters.
        ///
        /// # Errors
        /// As [`Self::enable`].
        pub fn disable(&mut self) -> Result<()> {
            <Self as Backend>::disable(self)
        }

        /// What the last region's hazards were derived from.
        pub fn evidence(&self) -> Evidence {
            <Self as Backend>::evidence(self)
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
        pub fn with_cpu(
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
                revoked()
            }
        }

        /// The CPU: rseq's `cpu_id` (one load), or `sched_getcpu()`.
        #[inline(always)]
        fn cpu(&self) -> Result<u32> {
            self.cpu.current()
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
                self.counters.iter().fold(0, |a, c| a | c.counter().mask())
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
            let common = edge_hazards(
                tag_cpu(self.start_tag),
                tag_cpu(end_tag),
                self.switched(),
                self.kernel_entries(),
            );
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
    }

    impl<O, A, H, S, F, const K: usize, C> RegionMeter for DirectRegion<O, A, H, S, F, K, C>
    where
        O: CounterSet,
        A: AccessCheck,
        H: ReadCounter,
        S: SentinelRead,
        F: OverflowFlags,
        C: CpuSource,
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
                self.switches_end = thread_switches()?;
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
                    Ok(())
                }
                None => self.stop_slow(end, end_tag, flags, out),
            }
        }
    }

    impl<O, A, H, S, F, const K: usize, C> Backend for DirectRegion<O, A, H, S, F, K, C>
    where
        O: CounterSet,
        A: AccessCheck,
        H: ReadCounter,
        S: SentinelRead,
        F: OverflowFlags,
        C: CpuSource,
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

        fn evidence(&self) -> Evidence {
            let mut out = [Reading::default(); crate::MAX_EVENTS];
            let (end_tag, flags) = self.end_state();
            let common = edge_hazards(
                tag_cpu(self.start_tag),
                tag_cpu(end_tag),
                self.switched(),
                self.kernel_entries(),
            );
            match counter_readings(
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
            }
        }
    }

    impl<O, A, H, S, F, const K: usize, C> Drop for DirectRegion<O, A, H, S, F, K, C>
    where
        O: CounterSet,
        A: AccessCheck,
        H: ReadCounter,
        S: SentinelRead,
        F: OverflowFlags,
        C: CpuSource,
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
    #[allow(clippy::too_many_arguments)]
    fn boxed<O, A, S, F, C>(
        owner: O,
        access: A,
        handles: Vec<CounterHandle>,
        names: Vec<String>,
        sentinel: S,
        state: Sentinel,
        flags: F,
        cpu: C,
    ) -> Result<Box<dyn Backend>>
    where
        O: CounterSet + 'static,
        A: AccessCheck + 'static,
        S: SentinelRead + 'static,
        F: OverflowFlags + 'static,
        C: CpuSource + 'static,
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
                        Ok(Box::new(DirectRegion::<O, A, CounterHandle, S, F, $k, C>::with_cpu(
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
    ) -> Result<Box<dyn Backend>>
    where
        O: CounterSet + 'static,
        A: AccessCheck + 'static,
        F: OverflowFlags + 'static,
    {
        // The CPU source is a type too: the rseq area when the thread has one, else
        // sched_getcpu() (the evidence says which, `cpu_from_rseq`).
        match (sentinel, RseqCpu::this_thread().ok()) {
            (Some(h), Some(cpu)) => boxed(
                owner,
                access,
                handles,
                names,
                Watching(h),
                state,
                flags,
                cpu,
            ),
            (Some(h), None) => boxed(
                owner,
                access,
                handles,
                names,
                Watching(h),
                state,
                flags,
                Getcpu,
            ),
            (None, Some(cpu)) => {
                boxed(owner, access, handles, names, NoSentinel, state, flags, cpu)
            }
            (None, None) => boxed(
                owner, access, handles, names, NoSentinel, state, flags, Getcpu,
            ),
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

    /// A syscall-free region on the module's counters under its read-only grant, for `placed`
    /// (each on the layout slot that counts it), with the module's sentinel when it runs
    /// one (`sentinel=1`), else `getrusage` for switches and a [`Sentinel::Off`] saying
    /// so.
    ///
    /// # Errors
    /// pmu-core's allocation errors; [`crate::error::PmuError::CounterHandle`] (a slot the layout does
    /// not back: cannot happen for slots of this PMU).
    pub fn granted_region(
        pmu: GrantedPmu<El0Reads>,
        placed: &[(pmu_core::Event, Option<Slot>)],
        names: Vec<String>,
        watch: bool,
    ) -> Result<Box<dyn Backend>> {
        let layout = *pmu.layout();
        let access = super::super::armv8::PmuserenrRead::for_layout(&layout);
        let counters = OwnedCounters::allocate(pmu, placed, pmu_core::PrivilegeFilter::USER)?;
        let handles = counters
            .slots()
            .map(|slot| {
                let id = granted_counter(&layout, slot).ok_or(Error::Pmu(
                    crate::error::PmuError::Core(pmu_core::Error::CounterOutOfRange {
                        slot,
                        available: layout.event_counters().len() as u32,
                    }),
                ))?;
                CounterHandle::new(counters.pmu(), id).map_err(crate::Error::from)
            })
            .collect::<Result<Vec<_>>>()?;
        let (sentinel, state) = match layout.sentinel() {
            _ if !watch => (None, Sentinel::off(crate::sentinel::SWITCHED_OFF)),
            Some((n, event)) => {
                let handle = CounterHandle::from_number(counters.pmu(), u32::from(n))
                    .map_err(crate::Error::from)?;
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
        boxed_watched(counters, access, handles, names, sentinel, state, NoFlags)
    }

    /// A syscall-free region on counters the backend programs itself under EN (`pmu` from
    /// [`super::super::armv8::take_armv8`]), for `placed`, plus a sentinel on a free
    /// counter ([`SENTINEL_FILTER`]); with no free counter (or neither event), regions
    /// take `getrusage` for switches and a [`Sentinel::Off`] says why.
    ///
    /// # Errors
    /// pmu-core's allocation errors for `placed`.
    pub fn programmed_region(
        pmu: El0Pmu,
        placed: &[(pmu_core::Event, Option<Slot>)],
        names: Vec<String>,
        watch: bool,
    ) -> Result<Box<dyn Backend>> {
        use pmu_core::GenericEvent;
        let candidates: &[_] = if !watch {
            &[]
        } else {
            &[
                (
                    pmu_core::Event::Generic(GenericEvent::Instructions),
                    SENTINEL_FILTER,
                ),
                (
                    pmu_core::Event::Generic(GenericEvent::CpuCycles),
                    SENTINEL_FILTER,
                ),
            ]
        };
        let (counters, sentinel_error) = OwnedCounters::allocate_with_extra(
            pmu,
            placed,
            pmu_core::PrivilegeFilter::USER,
            candidates,
        )?;
        let pmu = counters.pmu();
        let id = |slot: Slot| {
            pmu.counter_id(slot)
                .ok_or(Error::Pmu(crate::error::PmuError::Core(
                    pmu_core::Error::CounterOutOfRange {
                        slot,
                        available: pmu_core::Pmu::capabilities(pmu).programmable,
                    },
                )))
        };
        let slots: Vec<Slot> = counters.slots().collect();
        let handles = slots[..placed.len()]
            .iter()
            .map(|&slot| CounterHandle::new(pmu.registers(), id(slot)?).map_err(crate::Error::from))
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
                    Some(CounterHandle::new(pmu.registers(), counter).map_err(crate::Error::from)?),
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
            None if !watch => (None, Sentinel::off(crate::sentinel::SWITCHED_OFF)),
            None => (
                None,
                Sentinel::off(format!(
                    "no counter left for it ({}): regions see context switches \
                     (getrusage) and migrations, not interrupts, system calls or faults",
                    sentinel_error.map_or_else(|| "no candidate".to_owned(), |e| e.to_string())
                )),
            ),
        };
        boxed_watched(
            counters,
            super::super::armv8::Pmuserenr,
            handles,
            names,
            sentinel,
            state,
            flags,
        )
    }
}

#[cfg(test)]
mod tests {
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
}
