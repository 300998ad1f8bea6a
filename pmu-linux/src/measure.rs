//! Measuring a region the way a user asks for it: warm-up, N runs, statistics over the
//! runs that can be trusted, the cost of an empty region subtracted, and per run the
//! hazards with the evidence behind them.
//!
//! Every backend (the perf `Session`, the direct meters, the time-stamp counter)
//! implements one crate-private trait, so the same functions serve them all. The loop is pmu-core's [`Harness`]: the region and
//! the empty baseline run inside the same never-inlined function, so the reads around
//! them are the same machine code and cancel exactly. The defaults: 3 warm-ups, then the
//! minimum and median of 10 runs.

use pmu_core::{Corrected, Harness, Hazards, Reading, RegionMeter, Run, Summary};

pub(crate) use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::verdict::Evidence;
use crate::MAX_EVENTS;

/// How to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MeasureConfig {
    /// Unrecorded runs first (caches, predictors, page faults).
    pub warmup: u32,
    /// Recorded runs.
    pub runs: usize,
    /// Also measure an empty region the same way and subtract it.
    pub calibrate: bool,
}

impl Default for MeasureConfig {
    /// 3 warm-ups, 10 runs; calibrated.
    fn default() -> Self {
        Self {
            warmup: 3,
            runs: 10,
            calibrate: true,
        }
    }
}

/// One recorded run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunRecord {
    /// One reading per event.
    pub readings: Vec<Reading>,
    /// What the hazards were derived from.
    pub evidence: Evidence,
}

impl RunRecord {
    /// The hazards of all events together.
    pub fn hazards(&self) -> Hazards {
        self.readings
            .iter()
            .fold(Hazards::empty(), |h, r| h | r.hazards)
    }

    /// True when no event has a hazard: the run can be trusted.
    pub fn is_trusted(&self) -> bool {
        self.hazards().is_empty()
    }
}

/// One event's statistics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventResult {
    /// The event.
    pub name: String,
    /// Over the clean runs of the region.
    pub summary: Summary,
    /// With the empty region's statistics subtracted (when calibrated).
    pub corrected: Option<Corrected>,
}

/// The result of [`crate::Meter::measure_with`] (and [`crate::Meter::measure`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Measurement {
    /// Per event.
    pub events: Vec<EventResult>,
    /// The recorded runs of the region.
    pub runs: Vec<RunRecord>,
    /// The recorded runs of the empty region (when calibrated).
    pub baseline: Vec<RunRecord>,
}

impl Measurement {
    /// How many region runs had no hazard at all.
    pub(crate) fn trusted_runs(&self) -> usize {
        self.runs.iter().filter(|r| r.is_trusted()).count()
    }

    /// Event `event`'s statistics over the runs whose hazards are all in `tolerated`
    /// (e.g. [`Hazards::SYSCALL_FALLBACK`] | [`Hazards::NOT_SCHEDULED`] where every read
    /// is a `read()`, as for software events or on a VM without vPMU), with the
    /// baseline's, likewise filtered, subtracted when there is one. The strict
    /// statistics, which count only hazard-free runs, are in [`Measurement::events`].
    pub fn tolerating(&self, event: usize, tolerated: Hazards) -> Corrected {
        let summarize = |records: &[RunRecord]| {
            let runs: Vec<Run<1>> = records
                .iter()
                .map(|r| {
                    let mut reading = r.readings.get(event).copied().unwrap_or_default();
                    reading.hazards &= !tolerated;
                    Run {
                        readings: [reading],
                    }
                })
                .collect();
            Summary::of(&runs, 0)
        };
        Corrected::new(summarize(&self.runs), summarize(&self.baseline))
    }
}

/// Records the evidence of every stop.
struct Recorder<'a> {
    inner: &'a mut dyn Backend,
    log: Vec<Evidence>,
}

impl RegionMeter for Recorder<'_> {
    type Error = Error;

    #[inline(always)]
    fn start(&mut self) -> Result<()> {
        self.inner.start()
    }

    #[inline(always)]
    fn stop(&mut self, out: &mut [Reading]) -> Result<()> {
        self.inner.stop(out)?;
        self.log.push(self.inner.evidence());
        Ok(())
    }
}

rig_pub! {
    /// Measures `region`: `config.warmup` unrecorded runs, then `config.runs` recorded
    /// ones; with `config.calibrate`, an empty region is measured the same way first and
    /// subtracted. The counters must be enabled.
    ///
    /// # Errors
    /// [`crate::error::PmuError::Core`] for zero runs; the backend's read errors.
    pub fn measure(
        counters: &mut dyn Backend,
        config: &MeasureConfig,
        region: &mut dyn FnMut(),
    ) -> Result<Measurement> {
        let mut nothing = || {};
        let baseline: &mut dyn FnMut() = &mut nothing;
        run(
            counters,
            config,
            region,
            config.calibrate.then_some(baseline),
        )
    }
}

rig_pub! {
    /// Like [`measure`], calibrated against `baseline`: `region` and `baseline` should be
    /// two values of one closure type (e.g. made by one function with different arguments)
    /// that differ only in the work they do, so that they compile to the same machine code
    /// and the baseline cancels the call exactly (pmu-core `Harness::calibrated_against`).
    ///
    /// # Errors
    /// As [`measure`].
    pub fn measure_with_baseline(
        counters: &mut dyn Backend,
        config: &MeasureConfig,
        region: &mut dyn FnMut(),
        baseline: &mut dyn FnMut(),
    ) -> Result<Measurement> {
        run(counters, config, region, Some(baseline))
    }
}

rig_pub! {
    /// One region, once: `start`, `region`, `stop`.
    ///
    /// # Errors
    /// The backend's read errors.
    pub fn measure_once(counters: &mut dyn Backend, region: &mut dyn FnMut()) -> Result<RunRecord> {
        let n = counters.names().len();
        let mut readings = [Reading::default(); MAX_EVENTS];
        counters.start()?;
        region();
        counters.stop(&mut readings)?;
        Ok(RunRecord {
            readings: readings[..n].to_vec(),
            evidence: counters.evidence(),
        })
    }
}

/// A measurement that stopped on an error (a read failed: the pinned group lost its
/// counters to another perf user, the direct grant was revoked, …), with every run
/// recorded before it.
#[derive(Debug)]
pub struct Interrupted {
    /// What stopped it.
    pub error: Error,
    /// The runs completed before the error (region and baseline), with statistics
    /// over those alone; no runs when it stopped during the warm-up.
    pub partial: Measurement,
}

/// Like [`measure_with_baseline`] (`baseline` given) or [`measure`] (`None`, then
/// uncalibrated), but on an error keeps what was measured: every run completed before
/// it, in [`Interrupted::partial`].
///
/// # Errors
/// [`Interrupted`] (boxed: it carries every run) with the backend's error and the
/// partial measurement.
pub(crate) fn measure_keeping_partial<'r>(
    counters: &mut dyn Backend,
    config: &MeasureConfig,
    region: &'r mut dyn FnMut(),
    baseline: Option<&'r mut dyn FnMut()>,
) -> std::result::Result<Measurement, Box<Interrupted>> {
    run_keeping(counters, config, region, baseline)
}

fn run<'r>(
    counters: &mut dyn Backend,
    config: &MeasureConfig,
    region: &'r mut dyn FnMut(),
    baseline: Option<&'r mut dyn FnMut()>,
) -> Result<Measurement> {
    run_keeping(counters, config, region, baseline).map_err(|i| i.error)
}

fn run_keeping<'r>(
    counters: &mut dyn Backend,
    config: &MeasureConfig,
    region: &'r mut dyn FnMut(),
    baseline: Option<&'r mut dyn FnMut()>,
) -> std::result::Result<Measurement, Box<Interrupted>> {
    let names = counters.names();
    let n = names.len();
    let calibrating = baseline.is_some();
    let mut runs = vec![Run::<MAX_EVENTS>::default(); config.runs];
    let mut empty = vec![Run::<MAX_EVENTS>::default(); if calibrating { config.runs } else { 0 }];
    let per_phase = config.warmup as usize + config.runs;
    let mut recorder = Recorder {
        inner: counters,
        log: Vec::with_capacity(2 * per_phase),
    };
    let harness = Harness::new(config.warmup);
    let outcome = match baseline {
        Some(baseline) => harness
            .calibrated_against(&mut recorder, region, baseline, &mut runs, &mut empty)
            .map(drop),
        None => harness.run(&mut recorder, region, &mut runs),
    };
    let log = recorder.log;
    // Every successful stop is in the log, warm-ups included, phase after phase
    // (baseline first when calibrating): the runs recorded are the stops past each
    // phase's warm-up, at most `config.runs` per phase.
    let recorded = |phase: usize| {
        log.len()
            .saturating_sub(phase * per_phase + config.warmup as usize)
            .min(config.runs)
    };
    let (done_empty, done_runs) = if calibrating {
        (recorded(0), recorded(1))
    } else {
        (0, recorded(0))
    };
    let records = |runs: &[Run<MAX_EVENTS>], phase: usize| -> Vec<RunRecord> {
        let first = phase * per_phase + config.warmup as usize;
        runs.iter()
            .enumerate()
            .map(|(i, run)| RunRecord {
                readings: run.readings[..n].to_vec(),
                evidence: log.get(first + i).copied().unwrap_or_default(),
            })
            .collect()
    };
    let (runs, empty) = (&runs[..done_runs], &empty[..done_empty]);
    let (baseline_records, region_records) = if calibrating {
        (records(empty, 0), records(runs, 1))
    } else {
        (Vec::new(), records(runs, 0))
    };
    // The same statistics the harness computes (pmu-core `Harness::calibrated_against`),
    // over the runs that completed.
    let events = names
        .into_iter()
        .enumerate()
        .map(|(c, name)| EventResult {
            name,
            summary: Summary::of(runs, c),
            corrected: calibrating
                .then(|| Corrected::new(Summary::of(runs, c), Summary::of(empty, c))),
        })
        .collect();
    let measurement = Measurement {
        events,
        runs: region_records,
        baseline: baseline_records,
    };
    match outcome {
        Ok(()) => Ok(measurement),
        Err(error) => Err(Box::new(Interrupted {
            error,
            partial: measurement,
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts every stop: the n-th successful one reads `n`; the stop after `fail_after`
    /// successful ones fails the way a pinned group that lost its counters does (a
    /// 0-byte read, perf_event_open(2)).
    struct FailingAfter {
        stops: usize,
        fail_after: usize,
    }

    impl RegionMeter for FailingAfter {
        type Error = Error;
        fn start(&mut self) -> Result<()> {
            Ok(())
        }
        fn stop(&mut self, out: &mut [Reading]) -> Result<()> {
            if self.stops == self.fail_after {
                return Err(Error::Group(crate::error::GroupError::ShortRead {
                    expected: 40,
                    got: 0,
                }));
            }
            self.stops += 1;
            out[0] = Reading::new(self.stops as u64);
            Ok(())
        }
    }

    impl Backend for FailingAfter {
        fn names(&self) -> Vec<String> {
            vec!["instructions".into()]
        }
        fn enable(&mut self) -> Result<()> {
            Ok(())
        }
        fn disable(&mut self) -> Result<()> {
            Ok(())
        }
        fn evidence(&self) -> Evidence {
            Evidence::default()
        }
        fn sentinel(&self) -> crate::sentinel::Sentinel {
            crate::sentinel::Sentinel::off("a fake")
        }
    }

    const CONFIG: MeasureConfig = MeasureConfig {
        warmup: 2,
        runs: 5,
        calibrate: true,
    };

    /// Calibrated: 2 warm-ups + 5 baseline runs (stops 1..=7), 2 warm-ups + 5 region
    /// runs (stops 8..=14). Failing after 11 stops keeps the 5 baseline runs and the
    /// region runs of stops 10 and 11, with statistics over those two alone.
    #[test]
    fn an_interrupted_measurement_keeps_the_runs_before_the_error() {
        let mut meter = FailingAfter {
            stops: 0,
            fail_after: 11,
        };
        let mut nothing = || {};
        let mut also_nothing = || {};
        let i = measure_keeping_partial(&mut meter, &CONFIG, &mut nothing, Some(&mut also_nothing))
            .unwrap_err();
        assert!(matches!(
            i.error,
            Error::Group(crate::error::GroupError::ShortRead {
                expected: 40,
                got: 0
            })
        ));
        let values = |records: &[RunRecord]| -> Vec<u64> {
            records.iter().map(|r| r.readings[0].value).collect()
        };
        assert_eq!(values(&i.partial.baseline), [3, 4, 5, 6, 7]);
        assert_eq!(values(&i.partial.runs), [10, 11]);
        let event = &i.partial.events[0];
        assert_eq!((event.summary.runs, event.summary.min), (2, Some(10)));
        // min(region) - min(baseline) = 10 - 3.
        assert_eq!(event.corrected.unwrap().min, Some(7));
    }

    /// A failure in the warm-up keeps nothing; a failure-free run keeps everything, as
    /// `measure` does.
    #[test]
    fn partial_edges() {
        let mut nothing = || {};
        let mut meter = FailingAfter {
            stops: 0,
            fail_after: 1,
        };
        let i = measure_keeping_partial(&mut meter, &CONFIG, &mut nothing, None).unwrap_err();
        assert!(i.partial.runs.is_empty() && i.partial.baseline.is_empty());
        assert_eq!(i.partial.events[0].summary.runs, 0);
        let mut meter = FailingAfter {
            stops: 0,
            fail_after: usize::MAX,
        };
        let m = measure_keeping_partial(&mut meter, &CONFIG, &mut nothing, None).unwrap();
        assert_eq!(m.runs.len(), 5);
        assert!(m.baseline.is_empty() && m.events[0].corrected.is_none());
        let mut meter = FailingAfter {
            stops: 0,
            fail_after: usize::MAX,
        };
        assert_eq!(
            measure(&mut meter, &CONFIG, &mut nothing)
                .unwrap()
                .baseline
                .len(),
            5
        );
    }
}
