//! Scenario `tsc`: blocks of K `nop`s measured with RDTSC through pmu-core's harness.
//!
//! The meter reads the TSC with an LFENCE on both sides (pmu-x86's `rdtsc_fenced`,
//! SDM Vol. 2B, RDTSC). Under QEMU TCG with `-icount shift=0` the TSC follows the
//! virtual clock, which advances one nanosecond per instruction, so the calibrated
//! values are instruction counts of the block; without icount it follows the host
//! clock. The lines report what was measured; `exact=yes` only when every calibrated
//! statistic equals K.

use pmu_core::harness::{Corrected, Harness, RegionMeter, Run};
use pmu_core::{Error, Hazards, Reading};

use super::{Opt, Tally, Verdict};
use crate::{blocks, for_each_block, println};

/// Unrecorded runs before measuring.
const WARMUP: u32 = 3;
/// Recorded runs per region (and per empty region).
const RUNS: usize = 15;

/// A [`RegionMeter`] over the time-stamp counter.
#[derive(Clone, Copy, Debug, Default)]
pub struct TscMeter {
    start: u64,
}

impl RegionMeter for TscMeter {
    type Error = Error;

    #[inline(always)]
    fn start(&mut self) -> Result<(), Error> {
        self.start = pmu_x86::asm::rdtsc_fenced();
        Ok(())
    }

    #[inline(always)]
    fn stop(&mut self, out: &mut [Reading]) -> Result<(), Error> {
        let end = pmu_x86::asm::rdtsc_fenced();
        let [reading] = out else {
            return Err(Error::ReadingsMismatch {
                expected: 1,
                got: out.len().min(u32::MAX as usize) as u32,
            });
        };
        // The TSC is 64 bits and does not wrap in practice; going backwards means it was
        // written (or the read was reordered): keep the run out of the statistics.
        *reading = Reading {
            value: end.wrapping_sub(self.start),
            hazards: if end < self.start {
                Hazards::OVERFLOW
            } else {
                Hazards::empty()
            },
            ..Reading::default()
        };
        Ok(())
    }
}

/// Median of the K = 1 block, kept to check the largest block costs more.
struct Scaling {
    smallest: Option<i64>,
    largest: Option<i64>,
}

fn measure<const K: usize>(tally: &mut Tally, scaling: &mut Scaling) {
    let mut meter = TscMeter::default();
    let (mut runs, mut empty) = ([Run::<1>::default(); RUNS], [Run::<1>::default(); RUNS]);
    let result =
        Harness::new(WARMUP).calibrated(&mut meter, blocks::nops::<K>, &mut runs, &mut empty);
    let [tsc]: [Corrected; 1] = match result {
        Ok(c) => c,
        Err(e) => {
            tally.result("tsc", Verdict::Fail, format_args!("k={K} error=harness"));
            println!("tsc: K={K}: {e}");
            return;
        }
    };
    if K == blocks::SIZES[0] {
        scaling.smallest = tsc.median;
    }
    if K == blocks::SIZES[blocks::SIZES.len() - 1] {
        scaling.largest = tsc.median;
    }
    let all_clean = tsc.region.clean == RUNS && tsc.empty.clean == RUNS;
    let k = K as i64;
    let exact = tsc.min == Some(k) && tsc.median == Some(k);
    tally.result(
        "tsc",
        Verdict::from_check(all_clean && tsc.min.is_some() && tsc.median.is_some()),
        format_args!(
            "k={K} min={} median={} raw_min={} raw_median={} raw_max={} empty_min={} empty_median={} runs={} clean={} hazards={} exact={}",
            Opt(tsc.min),
            Opt(tsc.median),
            Opt(tsc.region.min),
            Opt(tsc.region.median),
            Opt(tsc.region.max),
            Opt(tsc.empty.min),
            Opt(tsc.empty.median),
            tsc.region.runs,
            tsc.region.clean,
            tsc.region.hazards | tsc.empty.hazards,
            if exact { "yes" } else { "no" },
        ),
    );
    println!(
        "tsc: K={K} nops: calibrated min {} median {} TSC ticks (empty region: min {} median {})",
        Opt(tsc.min),
        Opt(tsc.median),
        Opt(tsc.empty.min),
        Opt(tsc.empty.median),
    );
}

/// Runs the scenario: one line per block size, then a line checking that the TSC
/// measures the region (the largest block costs more than the smallest).
pub fn run(tally: &mut Tally) {
    let mut scaling = Scaling {
        smallest: None,
        largest: None,
    };
    for_each_block!(measure(tally, &mut scaling));
    let grows = matches!((scaling.smallest, scaling.largest), (Some(s), Some(l)) if l > s);
    tally.result(
        "tsc_scaling",
        Verdict::from_check(grows),
        format_args!(
            "k_small={} median_small={} k_large={} median_large={}",
            blocks::SIZES[0],
            Opt(scaling.smallest),
            blocks::SIZES[blocks::SIZES.len() - 1],
            Opt(scaling.largest),
        ),
    );
    println!("tsc: the TSC delta grows with the block: {grows}");
}
