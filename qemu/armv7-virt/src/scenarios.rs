//! The scenarios. Each prints its RESULT lines and counts checks into a [`Tally`].

use pmu_armv7::registers::pmuserenr::Pmuserenr;
use pmu_armv7::user_enable::UserAccessRegisters;
use pmu_armv7::{asm, PerfMon, Pl1Pmu, PmuRegisters};
use pmu_core::harness::{Corrected, CounterMeter, Harness, RegionMeter, Run};
use pmu_core::{CounterPool, GenericEvent, Hazards, Pmu, PrivilegeFilter, Reading, Slot};

use crate::blocks;
use crate::boot::{at_pl0, Pl0Outcome};
use crate::pl0_probes::{PROBES, SETTINGS};
use crate::println;

/// Warm-up runs and measured runs of the exact-count scenario.
const WARMUP: u32 = 3;
const RUNS: usize = 11;

/// Passed and failed checks.
#[derive(Default)]
pub struct Tally {
    pass: u32,
    fail: u32,
}

impl Tally {
    /// Records one check; returns 1 or 0 for the RESULT line.
    fn check(&mut self, ok: bool) -> u8 {
        if ok {
            self.pass += 1;
        } else {
            self.fail += 1;
        }
        u8::from(ok)
    }
}

/// Runs every scenario; returns (passed, failed) checks.
pub fn run_all() -> (u32, u32) {
    let mut t = Tally::default();
    // SAFETY: this image runs alone at PL1 on one CPU; nothing else touches the PMU.
    let pmu = match unsafe { Pl1Pmu::take() } {
        Ok(pmu) => pmu,
        Err(e) => {
            println!("RESULT probe pmu=absent pass=0");
            println!("no usable PMU: {e}");
            return (0, 1);
        }
    };
    let perfmon = pmu.perfmon();
    let pool = CounterPool::new(pmu);
    probe(&pool, &mut t);
    exact(&pool, &mut t);
    overflow(&pool, &mut t);
    pl0_access(&pool, perfmon, &mut t);
    (t.pass, t.fail)
}

fn probe(pool: &CounterPool<Pl1Pmu>, t: &mut Tally) {
    let pmu = pool.pmu();
    let caps = pool.capabilities();
    // SAFETY: PL1 reads of identification registers.
    let (midr, dfr0) = unsafe { (midr(), asm::id_dfr0()) };
    let (pmceid0, pmceid1) = pmu.registers().pmceid().unwrap_or((0, 0));
    let ok = t.check(caps.programmable >= 1 && pmu.perfmon().has_filtering());
    println!(
        "RESULT probe midr={midr:#x} id_dfr0={dfr0:#x} perfmon={} pmcr={:#x} counters={} event_width={} cycle_width={} pmceid0={pmceid0:#x} pmceid1={pmceid1:#x} pass={ok}",
        pmu.perfmon().raw(),
        pmu.registers().pmcr().get(),
        caps.programmable,
        caps.programmable_width.bits(),
        caps.fixed_width.bits(),
    );
    println!(
        "  PMU {}: {} event counters + cycle counter; implemented common events:",
        pmu.perfmon(),
        caps.programmable
    );
    if let Some(events) = pmu.implemented_events() {
        for e in events.iter() {
            println!("    {:#06x} {}", e.get(), e.name().unwrap_or("?"));
        }
    }
}

/// MIDR (`c0, c0, 0`).
///
/// # Safety
/// PL1.
unsafe fn midr() -> u32 {
    let v: u32;
    // SAFETY: MIDR is readable at PL1 (the caller's contract).
    unsafe {
        core::arch::asm!("mrc p15, 0, {}, c0, c0, 0", out(reg) v, options(nomem, nostack, preserves_flags))
    };
    v
}

/// INST_RETIRED and the cycle counter over blocks of exactly K instructions, calibrated
/// against an empty block.
fn exact(pool: &CounterPool<Pl1Pmu>, t: &mut Tally) {
    let (ins, cyc) = match (
        pool.counter(GenericEvent::Instructions.into(), PrivilegeFilter::ALL),
        pool.counter(GenericEvent::CpuCycles.into(), PrivilegeFilter::ALL),
    ) {
        (Ok(i), Ok(c)) => (i, c),
        (Err(e), _) | (_, Err(e)) => {
            let ok = t.check(false);
            println!("RESULT exact error=counter-allocation pass={ok}");
            println!("  cannot allocate the counters: {e}");
            return;
        }
    };
    let (ins_slot, cyc_slot) = (ins.slot(), cyc.slot());
    ins.reset();
    cyc.reset();
    ins.start();
    cyc.start();
    let counters = [ins, cyc];
    let mut meter = CounterMeter::new(&counters);
    for (k, block) in blocks::EXACT {
        let (mut runs, mut empty) = ([Run::<2>::default(); RUNS], [Run::<2>::default(); RUNS]);
        let result = Harness::new(WARMUP).calibrated_against(
            &mut meter,
            block,
            blocks::EMPTY,
            &mut runs,
            &mut empty,
        );
        let [i, c] = match result {
            Ok(r) => r,
            Err(e) => {
                let ok = t.check(false);
                println!("RESULT exact k={k} error=measurement pass={ok}");
                println!("  measurement failed: {e}");
                continue;
            }
        };
        let exact = |x: &Corrected| {
            x.min == Some(k as i64) && x.median == Some(k as i64) && x.region.clean == RUNS
        };
        let ok = t.check(
            exact(&i) && exact(&c) && i.region.hazards.is_empty() && c.region.hazards.is_empty(),
        );
        println!(
            "RESULT exact k={k} inst={} inst_median={} cycles={} cycles_median={} clean={}/{} hazards={} overhead_inst={} overhead_cycles={} inst_slot={} cycle_slot={} pass={ok}",
            opt(i.min), opt(i.median), opt(c.min), opt(c.median),
            i.region.clean.min(c.region.clean), RUNS,
            i.region.hazards | c.region.hazards,
            opt_u(i.empty.min), opt_u(c.empty.min),
            slot_name(ins_slot), slot_name(cyc_slot),
        );
    }
}

/// How far below its 32-bit wrap point the overflow scenario presets the counter: more
/// than the instructions between the preset and the meter's start read, fewer than the
/// measured window (overhead + 100), so the wrap falls inside the region.
const OVERFLOW_DISTANCE: u64 = 64;

/// An event counter preset just below its 32-bit wrap point; a block of 100
/// instructions wraps it. The overflow flag (PMOVSR) must be seen, the run flagged, the
/// value right; a second run without a wrap must be clean.
fn overflow(pool: &CounterPool<Pl1Pmu>, t: &mut Tally) {
    let Ok(ins) = pool.counter(GenericEvent::Instructions.into(), PrivilegeFilter::ALL) else {
        let ok = t.check(false);
        println!("RESULT overflow error=counter-allocation pass={ok}");
        return;
    };
    let slot = ins.slot();
    let width = ins.width();
    ins.start();
    let counters = [ins];
    let mut meter = CounterMeter::new(&counters);
    let mut readings = [[Reading::default()]; 3];
    let mut measured = Ok(());
    for (i, out) in readings.iter_mut().enumerate() {
        let block = if i == 0 {
            blocks::EMPTY
        } else {
            blocks::nops::<100> as fn()
        };
        if i == 1 {
            counters[0].preset_before_wrap(OVERFLOW_DISTANCE);
        }
        measured = measured.and(window(&mut meter, block, out));
    }
    let raw_end = pool.pmu().read(slot);
    let [[empty], [wrapped], [after]] = readings;
    let expected = empty.value + 100;
    let ok = t.check(
        measured.is_ok()
            && width.bits() == 32
            && empty.hazards.is_empty()
            && wrapped.hazards == Hazards::OVERFLOW
            && wrapped.value == expected
            && after.hazards.is_empty()
            && after.value == expected,
    );
    println!(
        "RESULT overflow counter={} width={} preset={:#x} value={} corrected={} hazards={} next_run_value={} next_run_hazards={} empty_window={} raw_end={raw_end:#x} pass={ok}",
        slot_name(slot),
        width.bits(),
        width.truncate(OVERFLOW_DISTANCE.wrapping_neg()),
        wrapped.value,
        wrapped.value as i64 - empty.value as i64,
        wrapped.hazards,
        after.value,
        after.hazards,
        empty.value,
    );
}

/// One measured window around a block.
#[inline(never)]
fn window(
    meter: &mut CounterMeter<'_, '_, Pl1Pmu, 1>,
    block: fn(),
    out: &mut [Reading; 1],
) -> Result<(), pmu_core::Error> {
    meter.start()?;
    block();
    meter.stop(out)
}

/// Each PMUSERENR setting against each PL0 access: allowed or UNDEFINED. On PMUv2 only
/// EN exists (the read-back shows what the CPU kept), so CR|ER grants nothing there.
fn pl0_access(pool: &CounterPool<Pl1Pmu>, perfmon: PerfMon, t: &mut Tally) {
    let regs = pool.pmu().registers();
    for (name, bits) in SETTINGS {
        regs.set_pmuserenr(Pmuserenr::new(bits));
        // The new PMUSERENR must be in effect before the return to PL0.
        regs.isb();
        let kept = regs.pmuserenr().get();
        let effective = if perfmon.has_read_only_grant() {
            bits
        } else {
            bits & 1
        };
        let readback_ok = kept & 0xF == effective;
        for probe in &PROBES {
            let outcome = at_pl0(probe.entry, 0);
            let allowed = probe.allowed_by & effective != 0 || probe.allowed_by == u32::MAX;
            let ok = t.check(
                readback_ok
                    && match outcome {
                        Pl0Outcome::Returned(_) => allowed,
                        Pl0Outcome::Trapped(_) => !allowed,
                    },
            );
            let (outcome, at) = match outcome {
                Pl0Outcome::Returned(_) => ("ok", 0),
                Pl0Outcome::Trapped(a) => ("trap", a),
            };
            println!(
                "RESULT pl0_access pmuserenr={name} kept={kept:#x} access={} outcome={outcome} at={at:#x} expected={} pass={ok}",
                probe.name,
                if allowed { "ok" } else { "trap" },
            );
        }
    }
    regs.set_pmuserenr(Pmuserenr::new(0));
    // PL0 loses access before anything else runs.
    regs.isb();
}

fn opt(v: Option<i64>) -> i64 {
    v.unwrap_or(i64::MIN)
}

fn opt_u(v: Option<u64>) -> u64 {
    v.unwrap_or(u64::MAX)
}

fn slot_name(slot: Slot) -> &'static str {
    match slot {
        Slot::Fixed(0) => "PMCCNTR",
        Slot::Programmable(0) => "PMEVCNTR0",
        Slot::Programmable(1) => "PMEVCNTR1",
        Slot::Programmable(2) => "PMEVCNTR2",
        Slot::Programmable(3) => "PMEVCNTR3",
        Slot::Programmable(4) => "PMEVCNTR4",
        Slot::Programmable(5) => "PMEVCNTR5",
        _ => "other",
    }
}
