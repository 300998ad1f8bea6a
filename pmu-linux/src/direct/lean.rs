//! The ARMv8 direct region without system calls (`LeanRegion`; the verdict's pure part is
//! built and tested on every host).
//!
//! [`super::GenericDirectMeter`] watches the thread with `getrusage` and
//! `sched_getcpu()` at both edges: two system calls each, some 450 instructions a region
//! (`cargo xtask bench`). A lean region reads, at each edge, only registers and memory:
//!
//! | edge | what | how | instructions |
//! |---|---|---|---|
//! | start | the grant | `mrs PMUSERENR_EL0`, test, branch | 3 |
//! | start | the CPU | `cpu_id` of the thread's rseq area ([`crate::rseq`]) | 1–2 loads |
//! | start | the sentinel | `mrs PMEVCNTR<s>_EL0` (handle) | 1 (compile-time) or 5 (run-time) |
//! | start | the counters | `mrs` each | likewise |
//! | start | the overflow flags (EN) | `msr PMOVSCLR_EL0` of the counters' bits | 1 |
//! | stop | the grant | as at the start, *before* the reads (a revoked grant traps them) | 3 |
//! | stop | the counters, the flags, the sentinel, the CPU | `mrs` each, `mrs PMOVSSET_EL0`, one load | |
//!
//! The verdict, per counter: [`Hazards::OVERFLOW`] from its overflow flag or end < start
//! (pmu-core `CounterMeter` rule), [`Hazards::CPU_MIGRATION`] when the rseq CPU differs,
//! [`Hazards::KERNEL_ENTRY`] when the sentinel moved. A context switch is a kernel entry
//! (the scheduler runs at EL1), so the sentinel sees it too, and no `getrusage` is
//! needed: a lean region with a sentinel reports a switch as `KERNEL_ENTRY`, not as
//! `CONTEXT_SWITCH` ([`crate::region`]'s hazard table). Without a sentinel the region
//! does not pretend: it takes `getrusage` at both edges as before (switches, not the
//! other kernel entries) and `LeanRegion::sentinel` says why there is none. Without
//! an rseq area (a kernel without CONFIG_RSEQ) the CPU comes from `sched_getcpu()` and
//! the evidence says so ([`Evidence::cpu_from_rseq`] false).
//!
//! Under the read-only grant (ER | CR) EL0 cannot read the overflow flags (PMOVSSET_EL0
//! needs EN, `OverflowFlags`): overflow is judged from end < start on the 32-bit reads alone, exact for
//! regions below 2^32 events, as [`super::GenericDirectMeter`] does there.

use pmu_core::{CounterWidth, Hazards, Reading};

use crate::region::{direct_evidence, direct_readings, Evidence};
use crate::sched::ThreadStamp;

/// The sentinel's count over a region: its reads are 32 bits (the module's and the
/// backend's counters without PMCR_EL0.LP), so one wrap is undone by the 32-bit
/// difference.
#[inline(always)]
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
pub(crate) fn sentinel_delta(start: u64, end: u64) -> u64 {
    end.wrapping_sub(start) & u64::from(u32::MAX)
}

/// The readings of a lean region (into `out`, one per counter) from its edges:
/// `flags` is PMOVSSET_EL0 at the stop (0 without EN), `bits[i]` counter i's bit in it,
/// `kernel_entries` the sentinel's count (`None` without one).
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
    widths: &[CounterWidth],
    thread_start: ThreadStamp,
    thread_end: ThreadStamp,
    kernel_entries: Option<u64>,
    out: &mut [Reading],
) -> Result<usize, pmu_core::Error> {
    let mut overflowed = [false; crate::MAX_EVENTS];
    for (o, &bit) in overflowed.iter_mut().zip(bits) {
        *o = flags & bit != 0;
    }
    let n = direct_readings(
        start,
        end,
        &overflowed[..bits.len().min(crate::MAX_EVENTS)],
        widths,
        thread_start,
        thread_end,
        out,
    )?;
    if kernel_entries.is_some_and(|k| k > 0) {
        for reading in &mut out[..n] {
            reading.hazards |= Hazards::KERNEL_ENTRY;
        }
    }
    Ok(n)
}

/// The evidence of a lean region whose readings are `out`.
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
pub(crate) fn lean_evidence(
    thread_start: ThreadStamp,
    thread_end: ThreadStamp,
    kernel_entries: Option<u64>,
    out: &[Reading],
) -> Evidence {
    let mut evidence = direct_evidence(thread_start, thread_end, out);
    evidence.kernel_entries = kernel_entries;
    evidence
}

#[cfg(target_arch = "aarch64")]
pub use imp::{LeanRegion, OverflowFlags};

#[cfg(target_arch = "aarch64")]
mod imp {
    use pmu_armv8::handle::ReadCounter;
    use pmu_core::{CounterWidth, Reading, RegionMeter};

    use super::{lean_evidence, lean_readings, sentinel_delta};
    use crate::direct::{AccessCheck, CounterSet};
    use crate::error::{Error, Result};
    use crate::measure::Counters;
    use crate::region::Evidence;
    use crate::rseq::CpuId;
    use crate::sched::{thread_switches, ThreadStamp};
    use crate::Sentinel;

    /// Whether a region may read and clear the overflow flags: only with
    /// PMUSERENR_EL0.EN (PMOVSSET_EL0 and PMOVSCLR_EL0 are not among what ER and CR
    /// open, Arm ARM PMUSERENR_EL0).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct OverflowFlags {
        readable: bool,
    }

    impl OverflowFlags {
        /// Read-only grant: overflow from end < start only.
        pub const UNREADABLE: Self = Self { readable: false };

        /// EN, proved by the register file of a PMU taken from EL0
        /// ([`pmu_armv8::El0Registers`]): the flags are cleared at the start and read at
        /// the stop.
        pub fn with_en(_en: &pmu_armv8::El0Registers) -> Self {
            Self { readable: true }
        }

        /// Whether the region reads them.
        pub fn readable(self) -> bool {
            self.readable
        }
    }

    /// A direct region of `K` counters without system calls (see the module docs).
    ///
    /// `O` keeps the counters programmed (and enables, disables and releases them),
    /// `A` checks the grant, `H` reads a counter, `S` the sentinel.
    #[derive(Debug)]
    pub struct LeanRegion<
        O: CounterSet,
        A: AccessCheck,
        H: ReadCounter,
        S: ReadCounter,
        const K: usize,
    > {
        owner: O,
        access: A,
        counters: [H; K],
        sentinel: Option<S>,
        sentinel_state: Sentinel,
        flags: OverflowFlags,
        /// The counters' bits in PMOVSSET_EL0 / PMOVSCLR_EL0.
        bits: [u64; K],
        mask: u64,
        widths: [CounterWidth; K],
        names: Vec<String>,
        cpu: Option<CpuId>,
        start: [u64; K],
        end: [u64; K],
        sentinel_start: u64,
        sentinel_end: u64,
        thread_start: ThreadStamp,
        thread_end: ThreadStamp,
        overflow_flags: u64,
    }

    impl<O: CounterSet, A: AccessCheck, H: ReadCounter, S: ReadCounter, const K: usize>
        LeanRegion<O, A, H, S, K>
    {
        /// A region over `counters` (named `names`, their widths from `owner`, counter
        /// i of `counters` being counter i of `owner`), with `sentinel` when there is
        /// one (`sentinel_state` says how it counts, or why there is none).
        ///
        /// # Errors
        /// [`Error::NoEvents`] for K = 0; [`Error::TooManyEvents`]; a name count or an
        /// owner that differs from K ([`pmu_core::Error::ReadingsMismatch`]).
        pub fn new(
            owner: O,
            access: A,
            counters: [H; K],
            names: Vec<String>,
            sentinel: Option<S>,
            sentinel_state: Sentinel,
            flags: OverflowFlags,
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
            let widths = core::array::from_fn(|i| owner.width(i));
            let bits = core::array::from_fn(|i| counters[i].counter().mask());
            let mask = if flags.readable {
                bits.iter().fold(0, |a, b| a | b)
            } else {
                0
            };
            let sentinel_state = if sentinel.is_some() {
                sentinel_state
            } else {
                match sentinel_state {
                    Sentinel::Counting { .. } => {
                        Sentinel::off("no sentinel counter was given to the region")
                    }
                    off => off,
                }
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
                names,
                cpu: crate::rseq::ThreadCpu::this_thread()
                    .ok()
                    .map(|c| c.cpu_id()),
                start: [0; K],
                end: [0; K],
                sentinel_start: 0,
                sentinel_end: 0,
                thread_start: ThreadStamp::default(),
                thread_end: ThreadStamp::default(),
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

        /// The CPU (rseq, else `sched_getcpu()`), and the switch counts where no
        /// sentinel sees them.
        #[inline(always)]
        fn stamp(&self) -> Result<ThreadStamp> {
            let (cpu, cpu_from_rseq) = match self.cpu {
                Some(cpu) => (Some(cpu.current()), true),
                None => (crate::sched::current_cpu(), false),
            };
            let switches = if self.sentinel.is_some() {
                None
            } else {
                Some(thread_switches()?)
            };
            Ok(ThreadStamp {
                switches,
                cpu,
                cpu_from_rseq,
            })
        }

        fn kernel_entries(&self) -> Option<u64> {
            self.sentinel
                .as_ref()
                .map(|_| sentinel_delta(self.sentinel_start, self.sentinel_end))
        }
    }

    impl<O: CounterSet, A: AccessCheck, H: ReadCounter, S: ReadCounter, const K: usize> RegionMeter
        for LeanRegion<O, A, H, S, K>
    {
        type Error = Error;

        /// Grant, CPU (and switch counts without a sentinel), sentinel, counters, then
        /// the overflow flags cleared (after the reads: a wrap after the read is seen by
        /// its flag, one before the clear by end < start).
        #[inline(always)]
        fn start(&mut self) -> Result<()> {
            self.check_access()?;
            self.thread_start = self.stamp()?;
            if let Some(s) = &self.sentinel {
                self.sentinel_start = s.read();
            }
            for (v, c) in self.start.iter_mut().zip(&self.counters) {
                *v = c.read();
            }
            if self.flags.readable {
                // SAFETY: `readable` only from `with_en`, whose proof is a register file made
                // under EN on this PE (its contract pins the thread there); the write clears the flags of this
                // region's own counters only (write-one-to-clear).
                unsafe { pmu_armv8::asm::write_pmovsclr_el0(self.mask) };
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
            if self.flags.readable {
                // SAFETY: as in `start`: EN on this PE.
                self.overflow_flags = unsafe { pmu_armv8::asm::read_pmovsset_el0() };
            }
            if let Some(s) = &self.sentinel {
                self.sentinel_end = s.read();
            }
            self.thread_end = self.stamp()?;
            if out.len() < K {
                return Err(pmu_core::Error::ReadingsMismatch {
                    expected: K as u32,
                    got: out.len() as u32,
                }
                .into());
            }
            lean_readings(
                &self.start,
                &self.end,
                self.overflow_flags,
                &self.bits,
                &self.widths,
                self.thread_start,
                self.thread_end,
                self.kernel_entries(),
                &mut out[..K],
            )?;
            Ok(())
        }
    }

    impl<O: CounterSet, A: AccessCheck, H: ReadCounter, S: ReadCounter, const K: usize> Counters
        for LeanRegion<O, A, H, S, K>
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

        fn evidence(&self) -> Evidence {
            let mut out = [Reading::default(); crate::MAX_EVENTS];
            let entries = self.kernel_entries();
            match lean_readings(
                &self.start,
                &self.end,
                self.overflow_flags,
                &self.bits,
                &self.widths,
                self.thread_start,
                self.thread_end,
                entries,
                &mut out[..K],
            ) {
                Ok(n) => lean_evidence(self.thread_start, self.thread_end, entries, &out[..n]),
                Err(_) => Evidence::default(),
            }
        }
    }

    impl<O: CounterSet, A: AccessCheck, H: ReadCounter, S: ReadCounter, const K: usize> Drop
        for LeanRegion<O, A, H, S, K>
    {
        /// With the grant gone every register access traps, the release included: the
        /// counters are left as they are (the kernel owns the PMU again).
        fn drop(&mut self) {
            if !self.access.granted() {
                self.owner.leave_programmed();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::SwitchCounts;

    fn stamp(cpu: u32, switches: Option<u64>) -> ThreadStamp {
        ThreadStamp {
            switches: switches.map(|involuntary| SwitchCounts {
                voluntary: 0,
                involuntary,
            }),
            cpu: Some(cpu),
            cpu_from_rseq: true,
        }
    }

    /// The lean verdict (region.rs hazard table, direct column): a moved sentinel flags
    /// every counter KERNEL_ENTRY with its count as evidence; the flag bit of a counter
    /// (PMOVSSET_EL0 bit n, Arm ARM) flags that counter only; end < start is a wrap
    /// (pmu-core `CounterMeter` rule); a changed CPU is a migration.
    #[test]
    fn the_verdict_of_a_lean_region() {
        let w32 = CounterWidth::W32;
        let mut out = [Reading::default(); 2];
        // Quiet: sentinel still, no flag, same CPU.
        let n = lean_readings(
            &[100, 5],
            &[350, 9],
            0,
            &[1 << 5, 1 << 31],
            &[w32, CounterWidth::W64],
            stamp(0, None),
            stamp(0, None),
            Some(0),
            &mut out,
        )
        .unwrap();
        assert_eq!(n, 2);
        assert_eq!((out[0].value, out[0].hazards), (250, Hazards::empty()));
        assert_eq!((out[1].value, out[1].hazards), (4, Hazards::empty()));
        let ev = lean_evidence(stamp(0, None), stamp(0, None), Some(0), &out);
        assert_eq!(ev.kernel_entries, Some(0));
        assert_eq!(ev.switches, None);
        assert!(ev.cpu_from_rseq);

        // The kernel ran 251 instructions: both counters flagged.
        lean_readings(
            &[100, 5],
            &[350, 9],
            0,
            &[1 << 5, 1 << 31],
            &[w32, CounterWidth::W64],
            stamp(0, None),
            stamp(0, None),
            Some(251),
            &mut out,
        )
        .unwrap();
        assert!(out.iter().all(|r| r.hazards == Hazards::KERNEL_ENTRY));
        let ev = lean_evidence(stamp(0, None), stamp(0, None), Some(251), &out);
        assert_eq!(ev.thread_hazards(), Hazards::KERNEL_ENTRY);

        // Counter 5's flag: it wrapped once (2^32 + 10 − 0xFFFF_FFF0 = 26), the cycle
        // counter did not.
        lean_readings(
            &[0xFFFF_FFF0, 5],
            &[10, 9],
            1 << 5,
            &[1 << 5, 1 << 31],
            &[w32, CounterWidth::W64],
            stamp(0, None),
            stamp(0, None),
            Some(0),
            &mut out,
        )
        .unwrap();
        assert_eq!((out[0].value, out[0].hazards), (26, Hazards::OVERFLOW));
        assert_eq!(out[1].hazards, Hazards::empty());

        // Read-only grant (no flags): end < start is the wrap.
        lean_readings(
            &[0xFFFF_FFF0],
            &[10],
            0,
            &[1 << 5],
            &[w32],
            stamp(0, None),
            stamp(1, None),
            None,
            &mut out[..1],
        )
        .unwrap();
        assert_eq!(out[0].value, 26);
        assert_eq!(out[0].hazards, Hazards::OVERFLOW | Hazards::CPU_MIGRATION);

        // No sentinel: getrusage's switches are the evidence of a switch.
        lean_readings(
            &[1],
            &[2],
            0,
            &[1],
            &[w32],
            stamp(0, Some(3)),
            stamp(0, Some(4)),
            None,
            &mut out[..1],
        )
        .unwrap();
        assert_eq!(out[0].hazards, Hazards::CONTEXT_SWITCH);
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
