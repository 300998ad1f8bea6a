//! What the read paths cost: one one-instruction read through the page, one group
//! `read()`, one whole region measurement (start + stop of an empty region), and the
//! clock used to time them.
//!
//! Each benchmark runs `batches` batches of `per_batch` operations and reports the
//! per-operation time of the fastest and of the median batch, in nanoseconds from
//! CLOCK_MONOTONIC (`std::time::Instant`, the vDSO `clock_gettime`) and, on x86_64, in
//! TSC ticks (`lfence; rdtsc; lfence`, pmu-x86 `rdtsc_fenced`). Batching makes the
//! clock's own cost negligible; the minimum is the cost without interference, the
//! median what a typical run sees.
//!
//! The perf read paths exist on x86_64 and aarch64 only; elsewhere `pmu-demo bench` says
//! so and the timing helpers go unused.
#![cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]

use std::hint::black_box;
use std::time::Instant;

use pmu_linux::Result;

/// How long to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BenchConfig {
    /// Batches timed separately.
    pub batches: u32,
    /// Operations per batch.
    pub per_batch: u32,
}

impl Default for BenchConfig {
    fn default() -> Self {
        Self {
            batches: 51,
            per_batch: 200,
        }
    }
}

/// The cost of one operation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BenchResult {
    /// Operations timed in all.
    pub operations: u64,
    /// Nanoseconds per operation in the fastest batch.
    pub ns_min: f64,
    /// Nanoseconds per operation in the median batch.
    pub ns_median: f64,
    /// TSC ticks per operation in the fastest batch (x86_64).
    pub ticks_min: Option<f64>,
    /// TSC ticks per operation in the median batch (x86_64).
    pub ticks_median: Option<f64>,
}

#[inline(always)]
fn ticks() -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    {
        Some(pmu_x86::asm::rdtsc_fenced())
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// Times `op` in batches.
///
/// # Errors
/// The first error of `op`.
pub fn batches(config: BenchConfig, mut op: impl FnMut() -> Result<()>) -> Result<BenchResult> {
    let batches = config.batches.max(1) as usize;
    let per_batch = config.per_batch.max(1);
    let mut ns = Vec::with_capacity(batches);
    let mut tsc = Vec::with_capacity(batches);
    for _ in 0..batches {
        let t0 = Instant::now();
        let c0 = ticks();
        for _ in 0..per_batch {
            op()?;
        }
        let c1 = ticks();
        let elapsed = t0.elapsed();
        ns.push(elapsed.as_nanos() as f64 / f64::from(per_batch));
        if let (Some(c0), Some(c1)) = (c0, c1) {
            tsc.push(c1.wrapping_sub(c0) as f64 / f64::from(per_batch));
        }
    }
    let stats = |mut v: Vec<f64>| -> Option<(f64, f64)> {
        v.sort_by(f64::total_cmp);
        Some((*v.first()?, v[(v.len() - 1) / 2]))
    };
    let (ns_min, ns_median) = stats(ns).unwrap_or_default();
    let ticks = stats(tsc);
    Ok(BenchResult {
        operations: batches as u64 * u64::from(per_batch),
        ns_min,
        ns_median,
        ticks_min: ticks.map(|t| t.0),
        ticks_median: ticks.map(|t| t.1),
    })
}

/// One read of event `event` through its metadata page (seqlock + one instruction).
///
/// # Errors
/// [`pmu_linux::error::Unsupported::FastRead`] with the reason when the page says the value must come from
/// `read()` (software event, no vPMU, user reads disabled).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn fast_read(
    session: &pmu_linux::perf::Session,
    event: usize,
    config: BenchConfig,
) -> Result<BenchResult> {
    session.read_fast(event).map_err(|reason| {
        pmu_linux::Error::Unsupported(pmu_linux::error::Unsupported::FastRead { reason })
    })?;
    batches(config, || {
        let read = session.read_fast(event).map_err(|reason| {
            pmu_linux::Error::Unsupported(pmu_linux::error::Unsupported::FastRead { reason })
        })?;
        black_box(read);
        Ok(())
    })
}

/// One group `read()` of all events.
///
/// # Errors
/// The read's.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn syscall_read(
    session: &pmu_linux::perf::Session,
    config: BenchConfig,
) -> Result<BenchResult> {
    batches(config, || {
        black_box(session.read_group()?);
        Ok(())
    })
}

/// One whole region: `start()` and `stop()` around nothing, with the thread state and
/// hazard evaluation included: what every measured run costs on top of its region.
///
/// # Errors
/// The backend's.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn region(counters: &mut pmu_linux::perf::Session, config: BenchConfig) -> Result<BenchResult> {
    use pmu_linux::pmu_core::RegionMeter;
    let mut out = [pmu_linux::Reading::default(); pmu_linux::Meter::MAX_EVENTS];
    batches(config, || {
        counters.start()?;
        counters.stop(&mut out)?;
        black_box(&out);
        Ok(())
    })
}

/// One `Instant::now()` (clock_gettime(CLOCK_MONOTONIC)), for comparison.
///
/// # Errors
/// None in practice.
pub fn clock(config: BenchConfig) -> Result<BenchResult> {
    batches(config, || {
        black_box(Instant::now());
        Ok(())
    })
}

/// All read-path costs of a session.
#[derive(Debug)]
pub struct ReadPathCosts {
    /// One one-instruction read of the first event, or why there is none.
    pub fast: Result<BenchResult>,
    /// One group `read()`.
    pub syscall: Result<BenchResult>,
    /// One empty region measurement (start + stop).
    pub region: Result<BenchResult>,
    /// One clock read.
    pub clock: Result<BenchResult>,
}

/// Measures every read path of `session`.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn read_paths(session: &mut pmu_linux::perf::Session, config: BenchConfig) -> ReadPathCosts {
    ReadPathCosts {
        fast: fast_read(session, 0, config),
        syscall: syscall_read(session, config),
        region: region(session, config),
        clock: clock(config),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmu_linux::Error;

    #[test]
    fn batches_report_min_and_median() {
        let mut calls = 0u64;
        let r = batches(
            BenchConfig {
                batches: 5,
                per_batch: 10,
            },
            || {
                calls += 1;
                Ok(())
            },
        )
        .unwrap();
        assert_eq!((calls, r.operations), (50, 50));
        assert!(r.ns_min <= r.ns_median);
        assert_eq!(r.ticks_min.is_some(), cfg!(target_arch = "x86_64"));
        let err = batches(BenchConfig::default(), || {
            Err(Error::Group(pmu_linux::error::GroupError::NoEvents))
        })
        .unwrap_err();
        assert!(matches!(
            err,
            Error::Group(pmu_linux::error::GroupError::NoEvents)
        ));
    }
}
