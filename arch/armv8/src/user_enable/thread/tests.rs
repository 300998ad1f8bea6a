//! Host tests of the per-thread grant against [`FakeUserAccess`]. Register layouts:
//! Arm ARM (DDI 0487) PMUSERENR_EL0 (ER = bit 3, UEN = bit 4, TID = bit 6), PMUACR_EL1;
//! what perf writes: drivers/perf/arm_pmuv3.c 6.12 (`armv8pmu_disable_user_access()`
//! writes 0).

use super::super::{apply, Layout, ModuleEvents, Request, UserAccess, DEFAULT_USER_ACCESS};
use super::*;
use crate::fake::FakeUserAccess;

/// ID_AA64DFR0_EL1.PMUVer = 6 (PMUv3p5), QEMU `-cpu max`; 9 = PMUv3p9.
const DFR0_PMUV3P5: u64 = 0x6 << 8;
const DFR0_PMUV3P9: u64 = 0x9 << 8;
/// PMCR_EL0 at reset on QEMU `-cpu max`: N (bits 15:11) = 6.
const PMCR_QEMU: u64 = 0x4101_3000;
/// PMCEID0_EL0: SW_INCR, INST_RETIRED, CPU_CYCLES.
const PMCEID0: u64 = 0x2_0101;
/// PMUSERENR_EL0.ER.
const ER: u64 = 8;
/// The default layout on N = 6: INST_RETIRED on counter 5, CPU_CYCLES on counter 4.
const LAYOUT_MASK: u64 = 0b11_0000;

fn cpu(dfr0: u64) -> FakeUserAccess {
    FakeUserAccess::new(dfr0, PMCR_QEMU, PMCEID0, 0)
}

fn access() -> UserAccess {
    UserAccess::new(DEFAULT_USER_ACCESS, false).unwrap()
}

fn request() -> Request {
    Request {
        user_access: access(),
        layout: Layout::new(6, ModuleEvents::parse(b"0x8").unwrap(), true).unwrap(),
    }
}

/// Per-thread mode: after the load's apply, EL0 traps on the module's counters until a
/// granted thread is switched in; its switch-out closes them again.
#[test]
fn only_the_switched_in_thread_reads() {
    let regs = cpu(DFR0_PMUV3P5);
    let applied = apply(&regs, request(), None, 0).unwrap();
    assert_eq!(applied.owned, LAYOUT_MASK);
    assert_eq!(withhold(&regs, &applied), 0);
    assert_eq!(regs.user_enable(), 0);
    assert_eq!(regs.el0_value(5), None);
    let mut grant = ThreadGrant::new(LAYOUT_MASK);
    switch_in(&regs, &mut grant, access(), true);
    assert_eq!(regs.user_enable(), ER);
    regs.set_counter(5, 1234);
    assert_eq!(regs.el0_value(5), Some(1234));
    switch_out(&regs, &mut grant, true);
    assert_eq!(regs.user_enable(), 0);
    assert_eq!(regs.el0_value(5), None);
    assert!(!grant.on_cpu);
}

/// follow: the thread's counts go with it. Thread A counts 100 on CPU 0, thread B
/// (another granted thread) runs there and counts 7, A comes back on CPU 1, whose
/// counter stood at 5000: A reads its own 100 there, and B its own 7 later.
#[test]
fn counters_follow_the_thread_across_switches_and_cpus() {
    let cpu0 = cpu(DFR0_PMUV3P5);
    let cpu1 = cpu(DFR0_PMUV3P5);
    for regs in [&cpu0, &cpu1] {
        let applied = apply(regs, request(), None, 0).unwrap();
        withhold(regs, &applied);
    }
    let mut a = ThreadGrant::new(LAYOUT_MASK);
    let mut b = ThreadGrant::new(LAYOUT_MASK);
    switch_in(&cpu0, &mut a, access(), true);
    cpu0.set_counter(5, 100);
    switch_out(&cpu0, &mut a, true);
    switch_in(&cpu0, &mut b, access(), true);
    cpu0.set_counter(5, cpu0.counter(5) + 7);
    switch_out(&cpu0, &mut b, true);
    cpu1.set_counter(5, 5000);
    switch_in(&cpu1, &mut a, access(), true);
    assert_eq!(cpu1.el0_value(5), Some(100));
    switch_out(&cpu1, &mut a, true);
    switch_in(&cpu0, &mut b, access(), true);
    assert_eq!(cpu0.el0_value(5), Some(107));
    assert_eq!(b.values[5], 107);
}

/// follow=0: nothing is saved or written back; the thread reads the CPU's counter.
#[test]
fn without_follow_the_counters_stay_the_cpus() {
    let regs = cpu(DFR0_PMUV3P5);
    let mut grant = ThreadGrant::new(LAYOUT_MASK);
    switch_in(&regs, &mut grant, access(), false);
    regs.set_counter(5, 10);
    switch_out(&regs, &mut grant, false);
    regs.set_counter(5, 99);
    switch_in(&regs, &mut grant, access(), false);
    assert_eq!(regs.el0_value(5), Some(99));
    assert!(!grant.saved);
}

/// perf's `armv8pmu_start()` writes PMUSERENR_EL0 = 0 while the thread runs: the
/// switch-out leaves perf's value, and REGRANT puts the grant back with the counters
/// untouched.
#[test]
fn regrant_after_perf_cleared_the_grant() {
    let regs = cpu(DFR0_PMUV3P5);
    let mut grant = ThreadGrant::new(LAYOUT_MASK);
    switch_in(&regs, &mut grant, access(), true);
    regs.set_counter(5, 42);
    assert_eq!(regrant(&regs, &mut grant, access()), Regranted::Held);
    regs.preset_user_access(0, 0);
    assert_eq!(regs.el0_value(5), None);
    assert_eq!(regrant(&regs, &mut grant, access()), Regranted::Restored);
    assert_eq!(regs.el0_value(5), Some(42));
    regs.preset_user_access(0, 0);
    switch_out(&regs, &mut grant, true);
    assert_eq!(regs.user_enable(), 0);
    assert_eq!(grant.values[5], 42);
}

/// A value perf wrote while the thread ran (its own rdpmc grant) stays at switch-out.
#[test]
fn switch_out_leaves_what_perf_wrote() {
    let regs = cpu(DFR0_PMUV3P5);
    let mut grant = ThreadGrant::new(LAYOUT_MASK);
    switch_in(&regs, &mut grant, access(), false);
    regs.preset_user_access(0xc, 0);
    switch_out(&regs, &mut grant, false);
    assert_eq!(regs.user_enable(), 0xc);
}

/// PMUv3p9: the thread's grant is scoped (UEN | TID | ER | CR, PMUACR_EL1 = its
/// counters); the switch-out puts both registers back.
#[test]
fn pmuv3p9_grant_is_scoped_to_the_threads_counters() {
    let regs = cpu(DFR0_PMUV3P9);
    let applied = apply(&regs, request(), None, 0).unwrap();
    assert_eq!(withhold(&regs, &applied), 0);
    assert_eq!((regs.user_enable(), regs.user_access_control()), (0, 0));
    let mut grant = ThreadGrant::new(1 << 5);
    switch_in(&regs, &mut grant, access(), true);
    assert_eq!(regs.user_enable(), UEN | (1 << 6) | ER | 4);
    assert_eq!(regs.user_access_control(), 1 << 5);
    regs.set_counter(4, 3);
    assert_eq!(regs.el0_value(4), Some(0));
    switch_out(&regs, &mut grant, true);
    assert_eq!((regs.user_enable(), regs.user_access_control()), (0, 0));
}

/// `cpus=` leaves CPU 1 out (or perf holds a layout counter there): thread A counts 100
/// on CPU 0, runs on CPU 1 (its instructions there in no counter of its), and comes
/// back to CPU 0. Without the mark a follow switch-in would write back 100 and a read
/// would give a short count without a sign: instead A gets no grant until it asks, and
/// REGRANT says the counts were lost. From then on it counts again.
#[test]
fn counts_missed_elsewhere_are_reported_not_written_back() {
    let regs = cpu(DFR0_PMUV3P5);
    let applied = apply(&regs, request(), None, 0).unwrap();
    withhold(&regs, &applied);
    let mut a = ThreadGrant::new(LAYOUT_MASK);
    switch_in(&regs, &mut a, access(), true);
    regs.set_counter(5, 100);
    switch_out(&regs, &mut a, true);
    // On CPU 1: the glue finds no module counters there.
    missed(&mut a);
    regs.set_counter(5, 5000);
    switch_in(&regs, &mut a, access(), true);
    assert_eq!(regs.user_enable(), 0, "no grant after a gap");
    assert_eq!(regs.el0_value(5), None);
    assert_eq!(regs.counter(5), 5000, "nothing written back");
    // A switch-out without a grant on the CPU changes nothing.
    switch_out(&regs, &mut a, true);
    assert!(a.lost && !a.saved);
    switch_in(&regs, &mut a, access(), true);
    assert_eq!(regrant(&regs, &mut a, access()), Regranted::Lost);
    assert_eq!(regs.el0_value(5), Some(5000));
    assert!(!a.lost);
    regs.set_counter(5, 5007);
    switch_out(&regs, &mut a, true);
    assert_eq!((a.saved, a.values[5]), (true, 5007));
    switch_in(&regs, &mut a, access(), true);
    assert_eq!(regs.el0_value(5), Some(5007));
    assert_eq!(regrant(&regs, &mut a, access()), Regranted::Held);
}
