//! The region-measurement harness.
//!
//! Measuring a short region well takes more than two reads (nanoBench, perf-counter):
//! warm-up runs to fill caches and predictors, many measured runs, robust statistics
//! (min and median), and subtracting what the reads themselves cost, measured on an
//! empty region the same way. And a run in which anything went wrong (overflow, a
//! context switch, …) must be kept out of the statistics and reported, not averaged in.
//!
//! The harness is generic over a [`RegionMeter`] (what reads the counters around the
//! region) and needs no allocation: the caller provides the storage for the runs.
//!
//! ```
//! use pmu_core::fake::{FakeEvent, FakePmu};
//! use pmu_core::harness::{CounterMeter, Harness, Run};
//! use pmu_core::{CounterPool, CounterWidth, GenericEvent, PrivilegeFilter};
//!
//! let pmu = FakePmu::new(2, CounterWidth::W32, &[FakeEvent::INSTRUCTIONS]).unwrap();
//! pmu.set_read_cost(3); // every counter read "executes" 3 instructions
//! let pool = CounterPool::new(pmu);
//! let ins = pool.counter(GenericEvent::Instructions.into(), PrivilegeFilter::ALL).unwrap();
//! ins.start();
//! let counters = [ins];
//! let mut meter = CounterMeter::new(&counters);
//! let (mut runs, mut empty) = ([Run::<1>::default(); 15], [Run::<1>::default(); 15]);
//! let [instructions] = Harness::new(2)
//!     .calibrated(&mut meter, || pool.pmu().tick(FakeEvent::INSTRUCTIONS, 1000), &mut runs, &mut empty)
//!     .unwrap();
//! assert_eq!(instructions.min, Some(1000)); // the 3-instruction read cost is calibrated away
//! assert_eq!(instructions.region.clean, 15);
//! ```

use crate::hazards::{Hazards, Reading};
use crate::pmu::{Counter, Pmu};
use crate::Error;

/// Reads counters around a region.
pub trait RegionMeter {
    /// What can go wrong while reading.
    type Error: From<Error>;

    /// Takes the start values, right before the region.
    fn start(&mut self) -> Result<(), Self::Error>;

    /// Takes the end values right after the region and writes one [`Reading`] per
    /// counter (the delta and its hazards) into `out`.
    fn stop(&mut self, out: &mut [Reading]) -> Result<(), Self::Error>;
}

/// The readings of one run, one per counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run<const C: usize> {
    /// One reading per counter, in the meter's order.
    pub readings: [Reading; C],
}

impl<const C: usize> Default for Run<C> {
    fn default() -> Self {
        Self {
            readings: [Reading::default(); C],
        }
    }
}

impl<const C: usize> Run<C> {
    /// All hazards of this run, over every counter.
    pub fn hazards(&self) -> Hazards {
        self.readings
            .iter()
            .fold(Hazards::empty(), |acc, r| acc | r.hazards)
    }
}

/// Statistics of one counter over the clean runs of a measurement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Runs measured.
    pub runs: usize,
    /// Runs without hazards on this counter: the statistics are over these only.
    pub clean: usize,
    /// The hazards of the other runs, combined.
    pub hazards: Hazards,
    /// Smallest clean value.
    pub min: Option<u64>,
    /// Median of the clean values (the lower one for an even count: always a value
    /// that was measured).
    pub median: Option<u64>,
    /// Largest clean value.
    pub max: Option<u64>,
}

impl Summary {
    /// Statistics of counter `counter` over `runs`.
    pub fn of<const C: usize>(runs: &[Run<C>], counter: usize) -> Self {
        let values = || {
            runs.iter()
                .filter_map(move |r| r.readings.get(counter))
                .filter(|r| r.is_clean())
                .map(|r| r.value)
        };
        let hazards = runs
            .iter()
            .filter_map(|r| r.readings.get(counter))
            .fold(Hazards::empty(), |acc, r| acc | r.hazards);
        let clean = values().count();
        // The lower median: the value with exactly (clean-1)/2 values strictly below it
        // among equal-or-smaller ones. O(n^2) without allocation; n is a run count.
        let rank = clean.saturating_sub(1) / 2;
        let median = values().find(|&v| {
            let below = values().filter(|&x| x < v).count();
            let at_or_below = values().filter(|&x| x <= v).count();
            below <= rank && rank < at_or_below
        });
        Self {
            runs: runs.len(),
            clean,
            hazards,
            min: values().min(),
            median,
            max: values().max(),
        }
    }
}

/// A counter's statistics with the cost of an empty region subtracted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Corrected {
    /// The region's own statistics.
    pub region: Summary,
    /// The empty region's statistics: the measurement overhead.
    pub empty: Summary,
    /// `region.min - empty.min`; negative values are reported as measured (noise
    /// larger than the region), never clamped.
    pub min: Option<i64>,
    /// `region.median - empty.median`.
    pub median: Option<i64>,
}

impl Corrected {
    /// Subtracts `empty` from `region`, statistic by statistic.
    pub fn new(region: Summary, empty: Summary) -> Self {
        let sub = |a: Option<u64>, b: Option<u64>| {
            Some((a? as i128 - b? as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64)
        };
        Self {
            region,
            empty,
            min: sub(region.min, empty.min),
            median: sub(region.median, empty.median),
        }
    }
}

/// Runs regions: `warmup` unrecorded runs, then one recorded run per storage slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Harness {
    /// Runs done before measuring, not recorded.
    pub warmup: u32,
}

impl Harness {
    /// A harness with `warmup` warm-up runs.
    pub const fn new(warmup: u32) -> Self {
        Self { warmup }
    }

    /// Measures `region` once per element of `runs`, after the warm-up runs.
    ///
    /// Never inlined: the region (and the baseline of
    /// [`Harness::calibrated_against`], of the same type) then run inside one and the
    /// same machine code, so the instructions around them are identical. Inlined
    /// twice, the two copies may be compiled differently (register allocation,
    /// spills) and the difference would leak into the result.
    ///
    /// # Errors
    /// [`Error::NoRuns`] for empty storage; the meter's errors.
    #[inline(never)]
    pub fn run<M: RegionMeter, const C: usize>(
        &self,
        meter: &mut M,
        mut region: impl FnMut(),
        runs: &mut [Run<C>],
    ) -> Result<(), M::Error> {
        if runs.is_empty() {
            return Err(Error::NoRuns.into());
        }
        let mut scratch = Run::<C>::default();
        for _ in 0..self.warmup {
            meter.start()?;
            region();
            meter.stop(&mut scratch.readings)?;
        }
        for run in runs.iter_mut() {
            meter.start()?;
            region();
            meter.stop(&mut run.readings)?;
        }
        Ok(())
    }

    /// Measures an empty region into `empty`, then `region` into `runs`, and returns per
    /// counter the statistics with the empty region's subtracted.
    ///
    /// The empty region is `|| {}`, which compiles to nothing: right when `region` is
    /// inlined too. When the region is a call (a function pointer), use
    /// [`Harness::calibrated_against`] with an empty function of the same type, so the
    /// call itself is part of the subtracted overhead.
    ///
    /// # Errors
    /// As [`Harness::run`].
    pub fn calibrated<M: RegionMeter, const C: usize>(
        &self,
        meter: &mut M,
        region: impl FnMut(),
        runs: &mut [Run<C>],
        empty: &mut [Run<C>],
    ) -> Result<[Corrected; C], M::Error> {
        self.run(meter, || {}, empty)?;
        self.run(meter, region, runs)?;
        Ok(corrected(runs, empty))
    }

    /// Like [`Harness::calibrated`], with the overhead measured on `baseline`, a region of
    /// the same type as `region` that does no work (e.g. both `fn()` pointers, one to a
    /// function of K instructions and one to an empty function). The same machine code
    /// then surrounds both, so the difference is exactly the region's own work.
    ///
    /// # Errors
    /// As [`Harness::run`].
    pub fn calibrated_against<M: RegionMeter, F: FnMut(), const C: usize>(
        &self,
        meter: &mut M,
        region: F,
        baseline: F,
        runs: &mut [Run<C>],
        empty: &mut [Run<C>],
    ) -> Result<[Corrected; C], M::Error> {
        self.run(meter, baseline, empty)?;
        self.run(meter, region, runs)?;
        Ok(corrected(runs, empty))
    }
}

fn corrected<const C: usize>(runs: &[Run<C>], empty: &[Run<C>]) -> [Corrected; C] {
    core::array::from_fn(|c| Corrected::new(Summary::of(runs, c), Summary::of(empty, c)))
}

/// A [`RegionMeter`] over allocated counters of a [`Pmu`]: reads each counter around
/// the region with one read, computes wrap-safe deltas and flags
/// [`Hazards::OVERFLOW`] from the overflow flags.
#[derive(Debug)]
pub struct CounterMeter<'a, 'p, P: Pmu, const C: usize> {
    counters: &'a [Counter<'p, P>; C],
    start: [u64; C],
}

impl<'a, 'p, P: Pmu, const C: usize> CounterMeter<'a, 'p, P, C> {
    /// A meter over `counters` (they must already be started).
    pub fn new(counters: &'a [Counter<'p, P>; C]) -> Self {
        Self {
            counters,
            start: [0; C],
        }
    }
}

impl<P: Pmu, const C: usize> RegionMeter for CounterMeter<'_, '_, P, C> {
    type Error = Error;

    /// Reads the start values, then clears the overflow flags.
    ///
    /// In this order every wrap after the start read is seen: one before the clear
    /// leaves `end < start`, one after it sets the flag. (Clearing first would let a
    /// wrap between the clear and the read raise the flag for events that happened
    /// before the region.)
    #[inline(always)]
    fn start(&mut self) -> Result<(), Error> {
        for (c, s) in self.counters.iter().zip(self.start.iter_mut()) {
            *s = c.read();
        }
        for c in self.counters {
            c.clear_overflow();
        }
        Ok(())
    }

    #[inline(always)]
    fn stop(&mut self, out: &mut [Reading]) -> Result<(), Error> {
        let mut end = [0u64; C];
        for (c, e) in self.counters.iter().zip(end.iter_mut()) {
            *e = c.read();
        }
        if out.len() != C {
            return Err(Error::ReadingsMismatch {
                expected: C as u32,
                got: out.len().min(u32::MAX as usize) as u32,
            });
        }
        for (i, c) in self.counters.iter().enumerate() {
            let (start, end) = (self.start[i], end[i]);
            // The flag says the counter wrapped after `start` cleared it; end < start
            // says it wrapped (between the start read and the clear, or with the flag
            // cleared by someone else). More than one wrap cannot be told apart.
            let wrapped = c.overflowed() || end < start;
            let value = c.width().accumulate(start, end, u64::from(wrapped))?;
            out[i] = Reading {
                value,
                hazards: if wrapped {
                    Hazards::OVERFLOW
                } else {
                    Hazards::empty()
                },
                time_enabled: None,
                time_running: None,
            };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::{FakeEvent, FakePmu};
    use crate::{CounterPool, CounterWidth, GenericEvent, PrivilegeFilter};

    fn reading(value: u64, hazards: Hazards) -> Run<1> {
        Run {
            readings: [Reading {
                value,
                hazards,
                ..Reading::default()
            }],
        }
    }

    #[test]
    fn summary_excludes_and_reports_hazard_runs() {
        let runs = [
            reading(10, Hazards::empty()),
            reading(3, Hazards::CONTEXT_SWITCH),
            reading(12, Hazards::empty()),
            reading(11, Hazards::empty()),
            reading(99, Hazards::OVERFLOW),
            reading(12, Hazards::empty()),
        ];
        let s = Summary::of(&runs, 0);
        assert_eq!(s.runs, 6);
        assert_eq!(s.clean, 4);
        assert_eq!(s.hazards, Hazards::CONTEXT_SWITCH | Hazards::OVERFLOW);
        assert_eq!(s.min, Some(10));
        assert_eq!(s.max, Some(12));
        // Sorted clean values 10, 11, 12, 12: lower median 11.
        assert_eq!(s.median, Some(11));
    }

    #[test]
    fn median_with_duplicates_and_odd_counts() {
        let runs: [Run<1>; 5] = [7, 7, 7, 1, 9].map(|v| reading(v, Hazards::empty()));
        assert_eq!(Summary::of(&runs, 0).median, Some(7));
        let runs: [Run<1>; 3] = [5, 1, 3].map(|v| reading(v, Hazards::empty()));
        assert_eq!(Summary::of(&runs, 0).median, Some(3));
        let all_bad = [reading(1, Hazards::MULTIPLEXED)];
        let s = Summary::of(&all_bad, 0);
        assert_eq!((s.clean, s.min, s.median), (0, None, None));
        // A counter index the runs do not have gives an empty summary, not a panic.
        assert_eq!(Summary::of(&all_bad, 5).clean, 0);
    }

    #[test]
    fn empty_storage_is_an_error() {
        let pmu = FakePmu::new(1, CounterWidth::W32, &[FakeEvent::INSTRUCTIONS]).unwrap();
        let pool = CounterPool::new(pmu);
        let c = [pool
            .counter(GenericEvent::Instructions.into(), PrivilegeFilter::ALL)
            .unwrap()];
        let mut meter = CounterMeter::new(&c);
        let mut runs: [Run<1>; 0] = [];
        assert_eq!(
            Harness::new(0).run(&mut meter, || {}, &mut runs),
            Err(Error::NoRuns)
        );
        let mut wrong = [Reading::default(); 2];
        meter.start().unwrap();
        assert_eq!(
            meter.stop(&mut wrong),
            Err(Error::ReadingsMismatch {
                expected: 1,
                got: 2
            })
        );
    }

    /// Two counters, a read cost of 3 events per read (like the K+3 of QEMU icount,
    /// docs/qemu.md): calibration gives exactly K for every K.
    #[test]
    fn calibration_subtracts_read_cost_exactly() {
        let pmu = FakePmu::new(
            2,
            CounterWidth::W32,
            &[FakeEvent::INSTRUCTIONS, FakeEvent::CYCLES],
        )
        .unwrap();
        pmu.set_read_cost(3);
        let pool = CounterPool::new(pmu);
        let ins = pool
            .counter(GenericEvent::Instructions.into(), PrivilegeFilter::ALL)
            .unwrap();
        let cyc = pool
            .counter(GenericEvent::CpuCycles.into(), PrivilegeFilter::ALL)
            .unwrap();
        ins.start();
        cyc.start();
        let counters = [ins, cyc];
        for k in [1u64, 10, 100, 1000, 10000] {
            let mut meter = CounterMeter::new(&counters);
            let (mut runs, mut empty) = ([Run::<2>::default(); 9], [Run::<2>::default(); 9]);
            let region = || {
                pool.pmu().tick(FakeEvent::INSTRUCTIONS, k);
                pool.pmu().tick(FakeEvent::CYCLES, 2 * k);
            };
            let [i, c] = Harness::new(3)
                .calibrated(&mut meter, region, &mut runs, &mut empty)
                .unwrap();
            assert_eq!(
                (i.min, i.median),
                (Some(k as i64), Some(k as i64)),
                "instructions, K={k}"
            );
            assert_eq!(
                (c.min, c.median),
                (Some(2 * k as i64), Some(2 * k as i64)),
                "cycles, K={k}"
            );
            assert!(
                i.empty.min.unwrap() > 0,
                "the empty region must cost something here"
            );
            assert_eq!(i.region.clean, 9);
        }
    }

    /// Regions as function pointers: the call is part of both the region and the
    /// baseline, so it cancels exactly.
    #[test]
    fn calibrated_against_a_baseline_of_the_same_type() {
        use core::cell::Cell;
        std::thread_local!(static PMU: Cell<Option<&'static FakePmu>> = const { Cell::new(None) });
        let pmu: &'static FakePmu = std::boxed::Box::leak(std::boxed::Box::new(
            FakePmu::new(1, CounterWidth::W32, &[FakeEvent::INSTRUCTIONS]).unwrap(),
        ));
        PMU.with(|p| p.set(Some(pmu)));
        fn call(k: u64) {
            PMU.with(|p| p.get().unwrap().tick(FakeEvent::INSTRUCTIONS, 2 + k));
            // 2: call + return
        }
        fn region() {
            call(77);
        }
        fn baseline() {
            call(0);
        }
        let pool = CounterPool::new(pmu);
        let ins = pool
            .counter(GenericEvent::Instructions.into(), PrivilegeFilter::ALL)
            .unwrap();
        ins.start();
        let counters = [ins];
        let mut meter = CounterMeter::new(&counters);
        let (mut runs, mut empty) = ([Run::<1>::default(); 5], [Run::<1>::default(); 5]);
        let [c] = Harness::new(1)
            .calibrated_against(
                &mut meter,
                region as fn(),
                baseline as fn(),
                &mut runs,
                &mut empty,
            )
            .unwrap();
        assert_eq!(c.min, Some(77));
        assert_eq!(c.empty.min, Some(2));
    }

    /// A counter preset 16 below the 32-bit wrap point and a region of 100 events: the
    /// overflow flag is seen, the run is flagged, and the value is still right.
    #[test]
    fn overflow_is_flagged_with_the_corrected_value() {
        let pmu = FakePmu::new(1, CounterWidth::W32, &[FakeEvent::INSTRUCTIONS]).unwrap();
        let pool = CounterPool::new(pmu);
        let ins = pool
            .counter(GenericEvent::Instructions.into(), PrivilegeFilter::ALL)
            .unwrap();
        ins.preset_before_wrap(16);
        ins.start();
        let counters = [ins];
        let mut meter = CounterMeter::new(&counters);
        let mut runs = [Run::<1>::default(); 2];
        Harness::new(0)
            .run(
                &mut meter,
                || pool.pmu().tick(FakeEvent::INSTRUCTIONS, 100),
                &mut runs,
            )
            .unwrap();
        assert_eq!(runs[0].readings[0].value, 100);
        assert_eq!(runs[0].hazards(), Hazards::OVERFLOW);
        // The second run starts after the wrap: clean.
        assert_eq!(runs[1].readings[0], Reading::new(100));
        let s = Summary::of(&runs, 0);
        assert_eq!(
            (s.clean, s.hazards, s.min),
            (1, Hazards::OVERFLOW, Some(100))
        );
    }
}
