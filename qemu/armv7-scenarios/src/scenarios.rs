//! The AArch32 scenarios. Each prints its RESULT lines and counts checks into a
//! [`Tally`]; `exact` and `overflow` are the shared ones of `pmu_scenarios_common`.

use pmu_armv7::registers::pmuserenr::Pmuserenr;
use pmu_armv7::user_enable::UserAccessRegisters;
use pmu_armv7::{asm, PerfMon, Pl1Pmu, PmuRegisters};
use pmu_core::{CounterPool, GenericEvent, PrivilegeFilter, Slot};
use pmu_scenarios_common::blocks;
use pmu_scenarios_common::{exact, overflow, Arch, Tally};

use crate::boot::{at_pl0, pl0_exit, Pl0Outcome};
use crate::events;
use crate::pl0_probes::{PROBES, SETTINGS};
use crate::{println, Armv7};

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
    exact::<Armv7, _>(&pool, &mut t);
    overflow::<Armv7, _>(&pool, &mut t);
    readers(&pool, &mut t);
    privilege_filter(&pool, &mut t);
    pl0_access(&pool, perfmon, &mut t);
    t.counts()
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
    if let Some(implemented) = pmu.implemented_events() {
        for e in implemented.iter() {
            println!("    {}", events::name(midr, u64::from(e.get())));
        }
    }
    // What the scenarios below count: instructions (exact, overflow, readers, filter)
    // and cycles (exact, readers).
    events::print_counted::<Pl1Pmu>(
        midr,
        &[
            ("instructions", GenericEvent::Instructions),
            ("cycles", GenericEvent::CpuCycles),
        ],
    );
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

/// The handles of `pmu_armv7::reader` against the driver's `Pmu::read`: the same
/// values, blocks of K instructions measured exactly through either, and what a read
/// costs (back-to-back reads of the instruction counter: the instructions between the
/// two samples, i.e. one read's own instructions).
fn readers(pool: &CounterPool<Pl1Pmu>, t: &mut Tally) {
    let pmu = pool.pmu();
    let (ins, cyc) = match (
        pool.counter(GenericEvent::Instructions.into(), PrivilegeFilter::ALL),
        pool.counter(GenericEvent::CpuCycles.into(), PrivilegeFilter::ALL),
    ) {
        (Ok(i), Ok(c)) => (i, c),
        _ => {
            let ok = t.check(false);
            println!("RESULT readers error=counter-allocation pass={ok}");
            return;
        }
    };
    let (Ok(ins_reader), Ok(cyc_reader)) = (pmu.reader(ins.slot()), pmu.reader(cyc.slot())) else {
        let ok = t.check(false);
        println!(
            "RESULT readers error=reader-refused slot={} pass={ok}",
            slot_name(ins.slot())
        );
        return;
    };
    let cycle_reader = pmu.cycle_reader();
    ins.start();
    cyc.start();

    // Blocks of K instructions, calibrated against the empty block, through the
    // run-time reader, the compile-time cycle reader and the driver.
    let handle_ins = || u64::from(ins_reader.read());
    let handle_cyc = || u64::from(cycle_reader.read());
    let driver_ins = || ins.read();
    let driver_cyc = || cyc.read();
    for (k, block) in [blocks::EXACT[0], blocks::EXACT[2], blocks::EXACT[4]] {
        let mut got = [0u64; 4];
        for (g, read) in got.iter_mut().zip([
            &handle_ins as &dyn Fn() -> u64,
            &handle_cyc,
            &driver_ins,
            &driver_cyc,
        ]) {
            // Warm up once, then measure.
            let _ = read_window(read, block);
            let _ = read_window(read, blocks::EMPTY);
            *g = read_window(read, block).wrapping_sub(read_window(read, blocks::EMPTY));
        }
        // Instructions through the handle and the driver must be K; the cycle readings
        // are K only under QEMU's icount (the QEMU tests assert them), so they are
        // printed, not judged here.
        let ok = t.check(got[0] == k && got[2] == k);
        println!(
            "RESULT readers k={k} path={:?} handle_inst={} handle_cycles={} driver_inst={} driver_cycles={} pass={ok}",
            ins_reader.path(), got[0], got[1], got[2], got[3],
        );
    }

    // The cost of one read: two reads back to back, the instruction counter's delta.
    let (a, b) = (ins_reader.read(), ins_reader.read());
    let runtime = b.wrapping_sub(a);
    let (a, b) = (ins.read(), ins.read());
    let driver = b.wrapping_sub(a) as u32;
    let (floor, expected) = match pmu.event_reader::<0>() {
        Ok(r) => {
            let (a, b) = (r.read(), r.read());
            (b.wrapping_sub(a), 1)
        }
        // PMUv1/PMUv2: no PMEVCNTR<n>; the run-time reader's path is the floor there.
        Err(pmu_armv7::reader::ReaderError::NeedsPmuV3 { .. }) => (runtime, u32::MAX),
        Err(_) => (u32::MAX, 0),
    };
    let floor_ok = match pmu.event_reader::<0>() {
        Ok(_) => floor == expected,
        Err(_) => !matches!(pmu.perfmon(), PerfMon::PmuV3(_)),
    };

    // Frozen counters: every path reads the same register value.
    ins.stop();
    cyc.stop();
    let same = u64::from(ins_reader.read()) == ins.read()
        && u64::from(cyc_reader.read()) == cyc.read()
        && u64::from(cycle_reader.read()) == cyc.read()
        && pmu
            .event_reader::<0>()
            .map_or(true, |r| u64::from(r.read()) == ins.read());
    // Bounds are checked when a reader is made.
    let n = pmu.event_counters();
    let refused = pmu.reader(Slot::Programmable(n)).is_err() && pmu.reader(Slot::Fixed(1)).is_err();
    let ok = t.check(floor_ok && same && refused);
    println!(
        "RESULT readers_cost path={:?} floor_inst={floor} runtime_inst={runtime} driver_inst={driver} frozen_equal={same} out_of_range_refused={refused} pass={ok}",
        ins_reader.path(),
    );
}

/// The privilege filter a kernel-entry sentinel rests on: INST_RETIRED counted at PL1
/// only and at PL0 only, around K instructions at PL1 and K instructions at PL0 (each
/// calibrated against K = 0). The PL1-only counter must see exactly the PL1 block and
/// nothing of the PL0 one, the PL0-only counter the reverse.
fn privilege_filter(pool: &CounterPool<Pl1Pmu>, t: &mut Tally) {
    let (kernel, user) = match (
        pool.counter(GenericEvent::Instructions.into(), PrivilegeFilter::KERNEL),
        pool.counter(GenericEvent::Instructions.into(), PrivilegeFilter::USER),
    ) {
        (Ok(k), Ok(u)) => (k, u),
        (Err(e), _) | (_, Err(e)) => {
            let ok = t.check(false);
            println!("RESULT filter error=counter-allocation pass={ok}");
            println!("  {e}");
            return;
        }
    };
    kernel.start();
    user.start();
    let pair = [kernel, user];
    let pl1 = |block: fn()| filter_window(&pair, block, None);
    let pl0 = |entry: extern "C" fn(u32) -> !| filter_window(&pair, blocks::EMPTY, Some(entry));
    const K: u64 = 1000;
    // Warm up, then measure.
    let _ = (pl1(blocks::nops::<1000>), pl0(pl0_nops::<1000>));
    let (pl1_k, pl1_0) = (pl1(blocks::nops::<1000>), pl1(blocks::EMPTY));
    let (pl0_k, pl0_0) = (pl0(pl0_nops::<1000>), pl0(pl0_nops::<0>));
    let pl1_block = (pl1_k.0.wrapping_sub(pl1_0.0), pl1_k.1.wrapping_sub(pl1_0.1));
    let pl0_block = (pl0_k.0.wrapping_sub(pl0_0.0), pl0_k.1.wrapping_sub(pl0_0.1));
    let ok = t.check(
        pl1_block == (K, 0) && pl0_block == (0, K) && pl1_0.1 == 0 && pl0_0.1 > 0 && pl0_0.0 > 0,
    );
    println!(
        "RESULT filter k={K} pl1_block_kernel={} pl1_block_user={} pl0_block_kernel={} pl0_block_user={} pl0_entry_kernel={} pl0_entry_user={} pass={ok}",
        pl1_block.0, pl1_block.1, pl0_block.0, pl0_block.1, pl0_0.0, pl0_0.1,
    );
}

/// One counter's delta around `block`: one function for every block, so the code around
/// the block is the same in each window and cancels in the calibration.
#[inline(never)]
fn read_window(read: &dyn Fn() -> u64, block: fn()) -> u64 {
    let a = read();
    block();
    read().wrapping_sub(a) & 0xFFFF_FFFF
}

/// Both counters' deltas around `block` at PL1, then `entry` at PL0 if given.
#[inline(never)]
fn filter_window(
    pair: &[pmu_core::Counter<'_, Pl1Pmu>; 2],
    block: fn(),
    entry: Option<extern "C" fn(u32) -> !>,
) -> (u64, u64) {
    let (k0, u0) = (pair[0].read(), pair[1].read());
    block();
    if let Some(entry) = entry {
        let _ = at_pl0(entry, 0);
    }
    let (k1, u1) = (pair[0].read(), pair[1].read());
    (
        k1.wrapping_sub(k0) & 0xFFFF_FFFF,
        u1.wrapping_sub(u0) & 0xFFFF_FFFF,
    )
}

/// K `nop`s at PL0, then back to PL1.
extern "C" fn pl0_nops<const K: usize>(_: u32) -> ! {
    // SAFETY: `nop`s touch no state.
    unsafe {
        core::arch::asm!(".rept {k}", "nop", ".endr", k = const K, options(nomem, nostack, preserves_flags))
    }
    pl0_exit(0)
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

fn slot_name(slot: Slot) -> &'static str {
    Armv7::slot_name(slot)
}
