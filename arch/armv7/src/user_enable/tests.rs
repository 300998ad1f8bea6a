use super::*;
use crate::fake::FakeRegisters;

fn request(bits: u32, el0_programming: bool, events: &[u16], n: u8) -> Request {
    Request {
        user_access: UserAccess::new(bits, el0_programming).unwrap(),
        layout: Layout::with_cycle_counter_register(
            n,
            ModuleEvents::from_slice(events).unwrap(),
            true,
        )
        .unwrap(),
    }
}

/// DDI 0406C C12: ARMv7 PMUSERENR has EN alone, which grants writes. The
/// default read-only request must write nothing on a Cortex-A7 (PMUv2).
#[test]
fn pmuv2_refuses_the_default_and_writes_nothing() {
    let regs = FakeRegisters::cortex_a7();
    let err = apply(&regs, request(DEFAULT_USER_ACCESS, false, &[0x08], 4), None).unwrap_err();
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
/// C12), INST_RETIRED on counter N-1 = 3 filtered to PL0 (P = 1, Linux
/// `ARMV7_EXCLUDE_PL1`), cycles on PMCCFILTR with P = 1.
#[test]
fn pmuv2_with_opt_in_grants_en_and_programs_pl0_counters() {
    let regs = FakeRegisters::cortex_a7();
    let applied = apply(&regs, request(DEFAULT_USER_ACCESS, true, &[0x08], 4), None).unwrap();
    assert_eq!(applied.new_pmuserenr, 1);
    assert_eq!(regs.pmuserenr().get(), 1);
    assert_eq!(regs.event_type(3), 0x8000_0008);
    assert_eq!(regs.event_type(31), 0x8000_0000);
    assert_eq!(applied.owned, 1 << 3 | 1 << 31);
    assert_eq!(regs.pmcntenset().get(), 1 << 3 | 1 << 31);
    assert!(regs.pmcr().is_set(PMCR::E));
    assert!(applied.enabled_pmu);
    regs.count(EventNumber::INST_RETIRED, 2000);
    assert_eq!(regs.event_count(3), 2000);

    let layout = request(DEFAULT_USER_ACCESS, true, &[0x08], 4).layout;
    let restored = restore(&regs, &applied, &layout);
    assert_eq!(restored.new_pmuserenr, 0);
    assert_eq!(restored.released, 1 << 3 | 1 << 31);
    assert_eq!(regs.pmcntenset().get(), 0);
    assert_eq!(regs.event_count(3), 0);
    assert!(!regs.pmcr().is_set(PMCR::E));
}

/// DDI 0487 G8 "PMUSERENR": PMUv3 in AArch32 has ER | CR, the read-only grant
/// (Cortex-A53 TRM: ID_DFR0 0x03010066).
#[test]
fn pmuv3_in_aarch32_grants_read_only() {
    let regs = FakeRegisters::cortex_a53_aarch32();
    let applied = apply(&regs, request(DEFAULT_USER_ACCESS, false, &[0x08], 6), None).unwrap();
    assert_eq!(applied.new_pmuserenr, 0b1100);
    assert_eq!(regs.event_type(5), 0x8000_0008);
}

/// A counter perf enabled with another event (Linux `armv7pmu_get_event_idx` takes
/// counters from 0 upwards; with four events in use, counter 3 is perf's) stops the
/// grant with nothing written.
#[test]
fn perfs_counter_is_left_alone() {
    let regs = FakeRegisters::cortex_a7();
    regs.program_as_perf(3, 0x11, 77);
    let before = regs.write_count();
    let err = apply(&regs, request(0, true, &[0x08], 4), None).unwrap_err();
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

/// PMXEVTYPER.evtCount is 8 bits on PMUv2 (DDI 0406C C12): 0x100 cannot be
/// programmed; PMCEID0 bit 3 clear (0x20101) refuses L1D_CACHE_REFILL on PMUv3.
#[test]
fn events_checked_against_evtcount_and_pmceid() {
    let regs = FakeRegisters::cortex_a7();
    assert_eq!(
        apply(&regs, request(0, true, &[0x100], 4), None).unwrap_err(),
        ApplyError::EventOutOfRange { event: 0x100 }
    );
    let regs = FakeRegisters::cortex_a53_aarch32();
    assert_eq!(
        apply(&regs, request(DEFAULT_USER_ACCESS, false, &[0x03], 6), None).unwrap_err(),
        ApplyError::EventNotImplemented { event: 0x03 }
    );
    assert_eq!(regs.write_count(), 0);
}

/// A re-grant after perf left the module's counters running keeps them (same rule as
/// arm64), and restore leaves PMUSERENR alone when someone else rewrote it.
#[test]
fn regrant_keeps_running_counters_and_restore_respects_rewrites() {
    let regs = FakeRegisters::cortex_a7();
    let req = request(0, true, &[0x08], 4);
    let first = apply(&regs, req, None).unwrap();
    regs.count(EventNumber::INST_RETIRED, 5);
    let second = apply(&regs, req, Some(&first)).unwrap();
    assert_eq!(second.kept, first.owned);
    assert_eq!(regs.event_count(3), 5);
    assert!(second.enabled_pmu);
    regs.set_user_enable(0);
    let restored = restore(&regs, &second, &req.layout);
    assert_eq!(restored.found_pmuserenr, 0);
    assert_eq!(restored.new_pmuserenr, 0);
}

/// PerfMon 0 (no PMU) and 1 (PMUv1, no privilege filter: PL0-only counters impossible)
/// refuse.
#[test]
fn no_usable_pmu() {
    let regs = FakeRegisters::new(0x0101_0000, 0x4109_2000, None);
    assert_eq!(
        apply(&regs, request(0, true, &[], 4), None).unwrap_err(),
        ApplyError::NoUsablePmu {
            perfmon: PerfMon::PmuV1
        }
    );
    let regs = FakeRegisters::new(0, 0, None);
    assert!(matches!(
        apply(&regs, request(0, true, &[], 0), None),
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
