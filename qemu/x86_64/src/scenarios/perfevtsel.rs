//! Scenario `perfevtsel`: where an architectural PMU exists (CPUID.0AH version ≥ 1 with
//! a general-purpose counter: a real CPU, or a VM with a virtual PMU), program
//! IA32_PERFEVTSEL0 for INST_RETIRED.ANY_P (event C0H, umask 00H, USR | OS | EN =
//! 0x4300C0, SDM Vol. 3B "Pre-defined Architectural Performance Events") through
//! pmu-x86's ring-0 `IntelPmu`, and measure the same K-nop blocks as the `tsc` scenario
//! with RDPMC through pmu-core's harness. Everywhere else the line says it was skipped
//! and why: QEMU TCG has no PMU to program.

use pmu_core::harness::{Corrected, CounterMeter, Harness, Run};
use pmu_core::{Counter, CounterPool, GenericEvent, PrivilegeFilter, Slot};
use pmu_x86::{IntelPmu, MsrAccess, Ring0Msrs};

use super::cpuid::Platform;
use super::{Opt, Tally, Verdict};
use crate::{blocks, for_each_block, println};

/// Unrecorded runs before measuring.
const WARMUP: u32 = 3;
/// Recorded runs per region (and per empty region).
const RUNS: usize = 15;

/// Instructions retired in ring 0 and ring 3 (the image measures in ring 0).
const USER_AND_KERNEL: PrivilegeFilter = PrivilegeFilter {
    user: true,
    kernel: true,
    hypervisor: false,
};

type Instructions<'p> = Counter<'p, IntelPmu<Ring0Msrs>>;

fn measure<const K: usize>(tally: &mut Tally, counters: &[Instructions<'_>; 1]) {
    let mut meter = CounterMeter::new(counters);
    let (mut runs, mut empty) = ([Run::<1>::default(); RUNS], [Run::<1>::default(); RUNS]);
    let result =
        Harness::new(WARMUP).calibrated(&mut meter, blocks::nops::<K>, &mut runs, &mut empty);
    let [ins]: [Corrected; 1] = match result {
        Ok(c) => c,
        Err(e) => {
            tally.result(
                "perfevtsel",
                Verdict::Fail,
                format_args!("k={K} error=harness"),
            );
            println!("perfevtsel: K={K}: {e}");
            return;
        }
    };
    let k = K as i64;
    // Exact on a real CPU: retired instructions do not depend on timing. Hazards
    // (overflow) are reported, never averaged in.
    let exact = ins.min == Some(k) && ins.median == Some(k);
    tally.result(
        "perfevtsel",
        Verdict::from_check(exact),
        format_args!(
            "k={K} event=INST_RETIRED.ANY_P min={} median={} raw_min={} raw_median={} empty_min={} empty_median={} runs={} clean={} hazards={}",
            Opt(ins.min),
            Opt(ins.median),
            Opt(ins.region.min),
            Opt(ins.region.median),
            Opt(ins.empty.min),
            Opt(ins.empty.median),
            ins.region.runs,
            ins.region.clean,
            ins.region.hazards | ins.empty.hazards,
        ),
    );
    println!(
        "perfevtsel: K={K} nops: calibrated min {} median {} instructions retired",
        Opt(ins.min),
        Opt(ins.median)
    );
}

/// Runs the scenario.
pub fn run(tally: &mut Tally, platform: &Platform) {
    if platform.arch.is_none() {
        tally.result(
            "perfevtsel",
            Verdict::Skipped,
            format_args!("reason=no-architectural-pmu"),
        );
        if platform.amd_counters {
            println!(
                "perfevtsel: skipped: an AMD PMU (PERF_CTL/PERF_CTR MSRs), not Intel's architectural IA32_PERFEVTSEL0"
            );
        } else {
            println!(
                "perfevtsel: skipped: CPUID.0AH reports no architectural PMU with a general-purpose counter, so there is no IA32_PERFEVTSEL0 to program"
            );
        }
        return;
    }
    // SAFETY: the image runs in ring 0 for its whole life, on one CPU, and nothing else
    // programs the PMU.
    let pmu = match unsafe { Ring0Msrs::new() }.and_then(IntelPmu::from_ring0) {
        Ok(pmu) => pmu,
        Err(e) => {
            tally.result(
                "perfevtsel",
                Verdict::Fail,
                format_args!("reason=probe-failed"),
            );
            println!("perfevtsel: {e}");
            return;
        }
    };
    let pool = CounterPool::new(pmu);
    let counter = match pool.counter_at(
        Slot::Programmable(0),
        GenericEvent::Instructions.into(),
        USER_AND_KERNEL,
    ) {
        Ok(c) => c,
        Err(e) => {
            tally.result(
                "perfevtsel",
                Verdict::Fail,
                format_args!("reason=allocation-failed"),
            );
            println!("perfevtsel: counter 0: {e}");
            return;
        }
    };
    counter.start();
    let evtsel = pool.pmu().msrs().read(pmu_x86::msr::ia32_perfevtsel(0));
    println!("perfevtsel: IA32_PERFEVTSEL0 = {evtsel:#x} (expected 0x4300c0 with EN set)");
    let counters = [counter];
    for_each_block!(measure(tally, &counters));
    let refused = pool.pmu().msrs().refused();
    if refused != 0 {
        tally.result(
            "perfevtsel",
            Verdict::Fail,
            format_args!("reason=msr-access-refused count={refused}"),
        );
    }
}
