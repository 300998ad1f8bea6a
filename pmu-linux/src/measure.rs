//! Measuring a region the way a user asks for it: warm-up, N runs, statistics over the
//! runs that can be trusted, the cost of an empty region subtracted, and per run the
//! hazards with the evidence behind them.
//!
//! Both backends implement [`Counters`] (pmu-core's [`RegionMeter`] plus names and
//! enable/disable), so the same functions serve the perf [`crate::Session`] and the
//! direct [`crate::DirectMeter`]. The loop is pmu-core's [`Harness`]: the region and
//! the empty baseline run inside the same never-inlined function, so the reads around
//! them are the same machine code and cancel exactly (seed 001 measures FMA latency
//! with 3 warm-ups and the minimum of 10 runs; those are the defaults here).

use pmu_core::{Corrected, Harness, Hazards, Reading, RegionMeter, Run, Summary};

use crate::error::{Error, Result};
use crate::region::Evidence;
use crate::MAX_EVENTS;

/// A set of counters that measures regions: one of the two backends.
pub trait Counters: RegionMeter<Error = Error> {
    /// The events, in reading order.
    fn names(&self) -> Vec<String>;
    /// Starts counting.
    ///
    /// # Errors
    /// The backend's.
    fn enable(&mut self) -> Result<()>;
    /// Stops counting.
    ///
    /// # Errors
    /// The backend's.
    fn disable(&mut self) -> Result<()>;
    /// What the last [`RegionMeter::stop`] saw.
    fn evidence(&self) -> Evidence;
}

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
    /// Seed 001's choice: 3 warm-ups, 10 runs; calibrated.
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

/// The result of [`measure`].
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
    pub fn trusted_runs(&self) -> usize {
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
    inner: &'a mut dyn Counters,
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

/// Measures `region`: `config.warmup` unrecorded runs, then `config.runs` recorded
/// ones; with `config.calibrate`, an empty region is measured the same way first and
/// subtracted. The counters must be enabled.
///
/// # Errors
/// [`Error::Core`] for zero runs; the backend's read errors.
pub fn measure(
    counters: &mut dyn Counters,
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

/// Like [`measure`] for a region that is a function call, calibrated against
/// `baseline`, a function of the same type that does no work: the call and return
/// are then part of both and cancel (pmu-core `Harness::calibrated_against`).
///
/// # Errors
/// As [`measure`].
pub fn measure_against(
    counters: &mut dyn Counters,
    config: &MeasureConfig,
    region: fn(),
    baseline: fn(),
) -> Result<Measurement> {
    let (mut region, mut baseline) = (region, baseline);
    run(counters, config, &mut region, Some(&mut baseline))
}

/// Like [`measure_against`] for closures: `region` and `baseline` should be two values
/// of one closure type (e.g. made by one function with different arguments) so that
/// they compile to the same machine code and the baseline cancels the call exactly.
///
/// # Errors
/// As [`measure`].
pub fn measure_with_baseline(
    counters: &mut dyn Counters,
    config: &MeasureConfig,
    region: &mut dyn FnMut(),
    baseline: &mut dyn FnMut(),
) -> Result<Measurement> {
    run(counters, config, region, Some(baseline))
}

/// One region, once: `start`, `region`, `stop`.
///
/// # Errors
/// The backend's read errors.
pub fn measure_once(counters: &mut dyn Counters, region: &mut dyn FnMut()) -> Result<RunRecord> {
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

fn run<'r>(
    counters: &mut dyn Counters,
    config: &MeasureConfig,
    region: &'r mut dyn FnMut(),
    baseline: Option<&'r mut dyn FnMut()>,
) -> Result<Measurement> {
    let names = counters.names();
    let n = names.len();
    let mut runs = vec![Run::<MAX_EVENTS>::default(); config.runs];
    let mut empty =
        vec![Run::<MAX_EVENTS>::default(); if baseline.is_some() { config.runs } else { 0 }];
    let per_phase = config.warmup as usize + config.runs;
    let mut recorder = Recorder {
        inner: counters,
        log: Vec::with_capacity(2 * per_phase),
    };
    let harness = Harness::new(config.warmup);
    let corrected = match baseline {
        Some(baseline) => Some(harness.calibrated_against(
            &mut recorder,
            region,
            baseline,
            &mut runs,
            &mut empty,
        )?),
        None => {
            harness.run(&mut recorder, region, &mut runs)?;
            None
        }
    };
    let log = recorder.log;
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
    let (baseline_records, region_records) = if corrected.is_some() {
        (records(&empty, 0), records(&runs, 1))
    } else {
        (Vec::new(), records(&runs, 0))
    };
    let events = names
        .into_iter()
        .enumerate()
        .map(|(c, name)| EventResult {
            name,
            summary: Summary::of(&runs, c),
            corrected: corrected.as_ref().map(|all| all[c]),
        })
        .collect();
    Ok(Measurement {
        events,
        runs: region_records,
        baseline: baseline_records,
    })
}
