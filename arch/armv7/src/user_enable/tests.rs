use super::*;
use crate::fake::{FakeOp, FakeRegisters};

fn request(bits: u32, el0_programming: bool, events: &[u16], n: u8) -> Request {
    Request {
        user_access: UserAccess::new(bits, el0_programming).unwrap(),
        layout: Layout::new(n, ModuleEvents::from_slice(events).unwrap(), true).unwrap(),
    }
}

/// DDI 0406C C12: ARMv7 PMUSERENR has EN alone, which grants writes. The
/// default read-only request must write nothing on a Cortex-A7 (PMUv2).
#[test]
fn pmuv2_refuses_the_default_and_writes_nothing() {
    let regs = FakeRegisters::cortex_a7();
    let err = apply(
        &regs,
        request(DEFAULT_USER_ACCESS, false, &[0x08], 4),
        None,
        0,
    )
    .unwrap_err();
    assert_eq!(
        err,
        ApplyError::NoReadOnlyGrant {
            perfmon: PerfMon::PmuV2
        }
    );
    assert_eq!(regs.write_count(), 0);
    assert_eq!(regs.pmuserenr().get(), 0);
}

/// With `el0_programming=1` a Cortex-A7 gets EN only (bits 31:1 UNK/SBZP, DDI 0406C
/// C12), INST_RETIRED on counter N-1 = 3 and CPU_CYCLES (0x11) on counter N-2 = 2, both
/// filtered to PL0 (P = 1, Linux `ARMV7_EXCLUDE_PL1`). PMCCNTR is perf's
/// (`armv7pmu_get_event_idx` gives it every cycles event first): never written.
#[test]
fn pmuv2_with_opt_in_grants_en_and_counts_cycles_on_an_event_counter() {
    let regs = FakeRegisters::cortex_a7();
    let req = request(DEFAULT_USER_ACCESS, true, &[0x08], 4);
    let applied = apply(&regs, req, None, 0).unwrap();
    assert_eq!(applied.new_pmuserenr, 1);
    assert_eq!(regs.pmuserenr().get(), 1);
    assert_eq!(regs.event_type(3), 0x8000_0008);
    assert_eq!(regs.event_type(2), 0x8000_0011);
    assert_eq!(applied.owned, 1 << 3 | 1 << 2);
    assert_eq!(regs.pmcntenset().get(), 1 << 3 | 1 << 2);
    assert!(regs.pmcr().is_set(PMCR::E));
    assert!(applied.enabled_pmu);
    assert!(
        regs.ops()
            .all(|op| !matches!(op, FakeOp::Pmccntr(_) | FakeOp::Pmxevtyper(31, _))),
        "{:?}",
        regs.ops().collect::<std::vec::Vec<_>>()
    );
    regs.count(EventNumber::INST_RETIRED, 2000);
    regs.count(EventNumber::CPU_CYCLES, 3000);
    assert_eq!(regs.event_count(3), 2000);
    assert_eq!(regs.event_count(2), 3000);

    let restored = restore(&regs, &applied, &req.layout, 0);
    assert_eq!(restored.new_pmuserenr, 0);
    assert_eq!(restored.released, 1 << 3 | 1 << 2);
    assert_eq!(regs.pmcntenset().get(), 0);
    assert_eq!(regs.event_count(3), 0);
    assert_eq!(regs.event_count(2), 0);
}

/// DDI 0487 G8 "PMUSERENR": PMUv3 in AArch32 has ER | CR; the default is ER alone,
/// read-only (Cortex-A53 TRM: ID_DFR0 0x03010066).
#[test]
fn pmuv3_in_aarch32_grants_read_only() {
    let regs = FakeRegisters::cortex_a53_aarch32();
    let applied = apply(
        &regs,
        request(DEFAULT_USER_ACCESS, false, &[0x08], 6),
        None,
        0,
    )
    .unwrap();
    assert_eq!(applied.new_pmuserenr, 0b1000);
    assert_eq!(regs.event_type(5), 0x8000_0008);
    assert_eq!(regs.event_type(4), 0x8000_0011);
}

/// A layout counter in perf's `used_mask` (Linux `armv7pmu_get_event_idx` records every
/// counter it hands out there) stops the grant with nothing written, whatever it counts.
#[test]
fn a_layout_counter_in_perf_used_mask_refuses_the_grant() {
    let regs = FakeRegisters::cortex_a7();
    regs.program_as_perf(3, 0x11, 77);
    let before = regs.write_count();
    let err = apply(&regs, request(0, true, &[0x08], 4), None, 1 << 3).unwrap_err();
    assert_eq!(
        err,
        ApplyError::CounterInUse {
            counter: 3,
            config: 0x11
        }
    );
    assert_eq!(regs.write_count(), before);
    assert_eq!(regs.event_count(3), 77);
}

/// Finding: perf's `cycles:u` has the module's filter (P = 1, Linux `ARMV7_EXCLUDE_PL1`
/// for `exclude_kernel`), so a counter configured exactly as the module would is not
/// proof that it is the module's. Equal configuration on a counter perf holds is
/// refused, not "kept" (the old rule kept it, and released = zeroed it at rmmod).
#[test]
fn equal_configuration_in_perfs_hands_is_not_kept() {
    let regs = FakeRegisters::cortex_a7();
    regs.program_as_perf(2, 0x8000_0011, 1234);
    let err = apply(&regs, request(0, true, &[0x08], 4), None, 1 << 2).unwrap_err();
    assert!(matches!(err, ApplyError::CounterInUse { counter: 2, .. }));
    assert_eq!(regs.event_count(2), 1234);
}

/// Only the module's own counters are kept: an enabled counter with the module's
/// configuration that the module did not program (no previous grant) is programmed
/// again from zero, not adopted (the old rule adopted it by configuration).
#[test]
fn only_the_modules_own_counters_are_kept() {
    let regs = FakeRegisters::cortex_a7();
    regs.program_as_perf(3, 0x8000_0008, 55);
    let applied = apply(&regs, request(0, true, &[0x08], 4), None, 0).unwrap();
    assert_eq!(applied.kept, 0);
    assert_eq!(applied.zeroed, 1 << 3 | 1 << 2);
    assert_eq!(regs.event_count(3), 0);
}

/// A throttled perf event is disabled but still perf's (`used_mask`): the apply never
/// writes it (the old rule zeroed every idle counter), nor any counter outside the
/// layout.
#[test]
fn counters_perf_holds_are_never_written() {
    let regs = FakeRegisters::cortex_a7();
    regs.throttled_as_perf(0, 0x8000_0008, 4242);
    regs.program_as_perf(1, 0x8000_0003, 99);
    let applied = apply(&regs, request(0, true, &[0x08], 4), None, 0b11).unwrap();
    assert_eq!(regs.event_count(0), 4242);
    assert_eq!(regs.event_count(1), 99);
    assert_eq!(regs.event_type(0), 0x8000_0008);
    assert_eq!(regs.pmcntenset().get() & 0b11, 0b10);
    for op in regs.ops() {
        match op {
            FakeOp::Pmxevtyper(n, _) | FakeOp::Pmxevcntr(n, _) => assert!(n >= 2, "{op:?}"),
            FakeOp::Pmcntenset(m)
            | FakeOp::Pmcntenclr(m)
            | FakeOp::Pmovsr(m)
            | FakeOp::Pmintenclr(m) => assert_eq!(m & 0b11, 0, "{op:?}"),
            _ => {}
        }
    }
    let restored = restore(&regs, &applied, &request(0, true, &[0x08], 4).layout, 0b11);
    assert_eq!(restored.released, 0b1100);
    assert_eq!(regs.event_count(0), 4242);
    assert_eq!(regs.event_count(1), 99);
}

/// The order of Linux's `armv7pmu_enable_event` and arm64's: the counter is stopped,
/// its overflow flag and interrupt enable cleared (PMINTENCLR, PMOVSR
/// write-one-to-clear: DDI 0406C C12), its type written and the counter zeroed, then an
/// `isb` before PMCNTENSET (without it the counter may start with the old filter), and
/// PMUSERENR last.
#[test]
fn apply_clears_overflow_and_interrupt_then_isb_before_enable() {
    let regs = FakeRegisters::cortex_a7();
    regs.set_overflow_and_interrupt(0b1100, 0b1100);
    let applied = apply(&regs, request(0, true, &[0x08], 4), None, 0).unwrap();
    assert_eq!(regs.pmovsr().get() & 0b1100, 0);
    assert_eq!(regs.interrupts() & 0b1100, 0);
    let ops: std::vec::Vec<FakeOp> = regs.ops().collect();
    let clear = ops.iter().position(|&o| o == FakeOp::Pmintenclr(0b1100));
    let ovs = ops.iter().position(|&o| o == FakeOp::Pmovsr(0b1100));
    let last_type = ops
        .iter()
        .rposition(|o| matches!(o, FakeOp::Pmxevtyper(..) | FakeOp::Pmxevcntr(..)));
    let enable = ops.iter().position(|&o| o == FakeOp::Pmcntenset(0b1100));
    let user = ops.iter().position(|&o| o == FakeOp::Pmuserenr(1));
    let (clear, ovs, last_type, enable, user) = (
        clear.unwrap(),
        ovs.unwrap(),
        last_type.unwrap(),
        enable.unwrap(),
        user.unwrap(),
    );
    assert!(clear < last_type && ovs < last_type, "{ops:?}");
    assert_eq!(ops[enable - 1], FakeOp::Isb, "{ops:?}");
    assert!(last_type < enable && enable < user, "{ops:?}");
    assert_eq!(applied.owned, 0b1100);
}

/// Restore clears the overflow flags and interrupt enables of what it releases, and
/// leaves PMCR.E set: PMCR.E is perf's (`armv7pmu_stop` clears it when its last event
/// leaves), and clearing it would stop perf's counters (the old restore cleared it).
#[test]
fn restore_clears_overflow_and_leaves_pmcr_e_to_perf() {
    let regs = FakeRegisters::cortex_a7();
    let req = request(0, true, &[0x08], 4);
    let applied = apply(&regs, req, None, 0).unwrap();
    assert!(applied.enabled_pmu);
    regs.set_overflow_and_interrupt(0b1100, 0b1100);
    regs.clear_ops();
    let restored = restore(&regs, &applied, &req.layout, 0);
    assert_eq!(restored.released, 0b1100);
    assert_eq!(regs.pmovsr().get() & 0b1100, 0);
    assert_eq!(regs.interrupts() & 0b1100, 0);
    assert!(regs.pmcr().is_set(PMCR::E));
    assert!(
        regs.ops().all(|op| !matches!(op, FakeOp::Pmcr(_))),
        "{:?}",
        regs.ops().collect::<std::vec::Vec<_>>()
    );
}

/// A counter perf took over since the grant (it is in `used_mask` now) is left exactly
/// as it is at restore, even with the module's own configuration (perf's `cycles:u`:
/// CPU_CYCLES with `ARMV7_EXCLUDE_PL1`); the other is released.
#[test]
fn restore_never_touches_a_counter_in_perf_used_mask() {
    let regs = FakeRegisters::cortex_a7();
    let req = request(0, true, &[0x08], 4);
    let applied = apply(&regs, req, None, 0).unwrap();
    regs.program_as_perf(2, 0x8000_0011, 500);
    regs.clear_ops();
    let restored = restore(&regs, &applied, &req.layout, 1 << 2);
    assert_eq!(restored.taken, 1 << 2);
    assert_eq!(restored.released, 1 << 3);
    assert_eq!(regs.event_count(2), 500);
    assert_eq!(regs.pmcntenset().get() & (1 << 2), 1 << 2);
}

/// PMXEVTYPER.evtCount is 8 bits on PMUv2 (DDI 0406C C12): 0x100 cannot be
/// programmed; PMCEID0 bit 3 clear (0x20101) refuses L1D_CACHE_REFILL on PMUv3.
#[test]
fn events_checked_against_evtcount_and_pmceid() {
    let regs = FakeRegisters::cortex_a7();
    assert_eq!(
        apply(&regs, request(0, true, &[0x100], 4), None, 0).unwrap_err(),
        ApplyError::EventOutOfRange { event: 0x100 }
    );
    let regs = FakeRegisters::cortex_a53_aarch32();
    assert_eq!(
        apply(
            &regs,
            request(DEFAULT_USER_ACCESS, false, &[0x03], 6),
            None,
            0
        )
        .unwrap_err(),
        ApplyError::EventNotImplemented { event: 0x03 }
    );
    assert_eq!(regs.write_count(), 0);
}

/// A re-grant keeps the module's own counters running (same rule as arm64), and restore
/// leaves PMUSERENR alone when someone else rewrote it.
#[test]
fn regrant_keeps_running_counters_and_restore_respects_rewrites() {
    let regs = FakeRegisters::cortex_a7();
    let req = request(0, true, &[0x08], 4);
    let first = apply(&regs, req, None, 0).unwrap();
    regs.count(EventNumber::INST_RETIRED, 5);
    let second = apply(&regs, req, Some(&first), 0).unwrap();
    assert_eq!(second.kept, first.owned);
    assert_eq!(regs.event_count(3), 5);
    assert!(second.enabled_pmu);
    regs.set_user_enable(0);
    let restored = restore(&regs, &second, &req.layout, 0);
    assert_eq!(restored.found_pmuserenr, 0);
    assert_eq!(restored.new_pmuserenr, 0);
}

/// PerfMon 0 (no PMU) and 1 (PMUv1, no privilege filter: PL0-only counters impossible)
/// refuse.
#[test]
fn no_usable_pmu() {
    let regs = FakeRegisters::new(0x0101_0000, 0x4109_2000, None);
    assert_eq!(
        apply(&regs, request(0, true, &[], 4), None, 0).unwrap_err(),
        ApplyError::NoUsablePmu {
            perfmon: PerfMon::PmuV1
        }
    );
    let regs = FakeRegisters::new(0, 0, None);
    assert!(matches!(
        apply(&regs, request(0, true, &[], 1), None, 0),
        Err(ApplyError::NoUsablePmu { .. })
    ));
}

/// The same parameter rules as the arm64 module: EN only through the opt-in.
#[test]
fn parameters() {
    assert_eq!(UserAccess::new(0, false), Err(UserAccessError::Empty));
    assert_eq!(
        UserAccess::new(1, true),
        Err(UserAccessError::WriteAccessNeedsOptIn)
    );
    assert_eq!(
        UserAccess::new(0x10, false),
        Err(UserAccessError::UnknownBits { requested: 0x10 })
    );
    assert_eq!(UserAccess::new(0, true).unwrap().bits(), 1);
    assert_eq!(
        UserAccess::new(12, true)
            .unwrap()
            .pmuserenr_for(PerfMon::PmuV2)
            .get(),
        1
    );
}

/// The counters taken out of perf's mask lose their overflow flags and interrupt
/// enables (PMINTENCLR, PMOVSR write-one-to-clear: DDI 0406C C12), with `disable` their
/// enables too (PMCNTENCLR), then an `isb`; nothing else is written (Linux 6.12
/// `armv7pmu_reset` walks `cntr_mask` only, so perf never clears them).
#[test]
fn quiet_reserved_clears_only_the_reserved_counters_then_isb() {
    let regs = FakeRegisters::cortex_a7();
    regs.set_overflow_and_interrupt(0b1111, 0b1111);
    regs.set_pmcntenset(Pmcntenset::new(0b1111));
    regs.clear_ops();
    quiet_reserved(&regs, 0b1100, true);
    let ops: std::vec::Vec<FakeOp> = regs.ops().collect();
    assert_eq!(
        ops,
        [
            FakeOp::Pmcntenclr(0b1100),
            FakeOp::Pmintenclr(0b1100),
            FakeOp::Pmovsr(0b1100),
            FakeOp::Isb
        ],
        "{ops:?}"
    );
    assert_eq!(regs.pmcntenset().get(), 0b0011);
    assert_eq!(regs.pmovsr().get(), 0b0011);
    assert_eq!(regs.interrupts(), 0b0011);
    // Under a grant the module's running counters stay enabled.
    regs.set_overflow_and_interrupt(0b1100, 0b1100);
    regs.set_pmcntenset(Pmcntenset::new(0b1100));
    regs.clear_ops();
    quiet_reserved(&regs, 0b1100, false);
    assert_eq!(regs.pmcntenset().get(), 0b1111);
    assert!(regs.ops().all(|op| !matches!(op, FakeOp::Pmcntenclr(_))));
    regs.clear_ops();
    quiet_reserved(&regs, 0, true);
    assert_eq!(regs.ops().count(), 0);
}

/// The grant is taken back only while PMUSERENR still holds it (a value someone else
/// wrote stays, as in `restore`), with the `isb` right after the write (as `restore`
/// orders it: no PL0 instruction runs with the old grant). PMCR.E (bit 0, DDI 0406C C12
/// "PMCR") is read as it is: the fake Cortex-A7 starts with it clear (PMCR 0x41072000).
#[test]
fn withdraw_only_the_modules_own_grant() {
    let regs = FakeRegisters::cortex_a7();
    regs.set_user_enable(1);
    assert!(!withdraw(&regs, 0));
    assert!(!withdraw(&regs, 0b1000));
    assert_eq!(regs.pmuserenr().get(), 1);
    regs.clear_ops();
    assert!(withdraw(&regs, 1));
    assert_eq!(regs.pmuserenr().get(), 0);
    let ops: std::vec::Vec<FakeOp> = regs.ops().collect();
    assert_eq!(ops, [FakeOp::Pmuserenr(0), FakeOp::Isb], "{ops:?}");
    assert!(!pmu_enabled(&regs));
    regs.set_pmcr(crate::registers::Pmcr::new(regs.pmcr().get() | 1));
    assert!(pmu_enabled(&regs));
}
