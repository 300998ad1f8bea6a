//! Host tests of the grant, against [`FakeUserAccess`]. Register layouts: Arm ARM
//! (DDI 0487) PMUSERENR_EL0, PMCR_EL0, PMEVTYPER<n>_EL0, PMCCFILTR_EL0, PMCNTENSET_EL0;
//! Linux 6.12 behaviour: drivers/perf/arm_pmuv3.c.

use super::*;
use crate::fake::{FakeUserAccess, UserAccessOp};
use std::vec::Vec;

/// ID_AA64DFR0_EL1 as QEMU `-cpu max` reports it: PMUVer = 6 (PMUv3p5)
/// (measured: the `probe` line of `cargo xtask qemu aarch64`).
const DFR0_PMUV3P5: u64 = 0x6 << 8;
/// PMCR_EL0 at reset on QEMU `-cpu max`: 0x41013000, N (bits 15:11) = 6.
const PMCR_QEMU: u64 = 0x4101_3000;
/// PMCEID0_EL0 of QEMU `-cpu max` under `-icount shift=0`: events 0x00 (SW_INCR), 0x08
/// (INST_RETIRED), 0x11 (CPU_CYCLES).
const PMCEID0_QEMU_ICOUNT: u64 = 0x2_0101;
/// INST_RETIRED (Arm ARM, common event 0x0008).
const INST_RETIRED: u16 = 0x08;
/// PMCR_EL0.E (bit 0) and LC (bit 6).
const PMCR_E: u64 = 1;
const PMCR_LC: u64 = 1 << 6;
/// What `armv8pmu_reset()` leaves after CPU_PM_EXIT (Linux 6.12, PMUv3p5: P | C | LC |
/// LP; P and C are actions and read as 0) with QEMU's N = 6.
const PMCR_AFTER_LINUX_RESET: u64 = (6 << 11) | PMCR_LC | (1 << 7);

fn qemu_cpu() -> FakeUserAccess {
    FakeUserAccess::new(DFR0_PMUV3P5, PMCR_QEMU, PMCEID0_QEMU_ICOUNT, 0)
}

fn events(text: &str) -> ModuleEvents {
    ModuleEvents::parse(text.as_bytes()).unwrap()
}

/// The default request of both module flavours: read-only (ER), INST_RETIRED on the
/// top event counter, CPU_CYCLES below it, for N = 6.
fn default_request() -> Request {
    Request {
        user_access: UserAccess::new(DEFAULT_USER_ACCESS, false).unwrap(),
        layout: Layout::new(6, events("0x8"), true).unwrap(),
    }
}

fn writes(regs: &FakeUserAccess) -> Vec<UserAccessOp> {
    regs.ops().filter(UserAccessOp::is_write).collect()
}

/// The parameter rules: `user_access` a subset of SW|CR|ER (default ER = 8: the
/// module's counters are event counters; CR would only open perf's PMCCNTR_EL0); EN
/// only through el0_programming.
#[test]
fn user_access_values_follow_the_module_parameter_rules() {
    assert_eq!(DEFAULT_USER_ACCESS, 8);
    assert_eq!(UserAccess::new(0, false), Err(UserAccessError::Empty));
    assert_eq!(
        UserAccess::new(16, false),
        Err(UserAccessError::UnknownBits { requested: 16 })
    );
    for bits in [1, 13, 15] {
        assert_eq!(
            UserAccess::new(bits, false),
            Err(UserAccessError::WriteAccessNeedsOptIn),
            "{bits}"
        );
        assert_eq!(
            UserAccess::new(bits, true),
            Err(UserAccessError::WriteAccessNeedsOptIn),
            "{bits}: EN comes from the opt-in alone"
        );
    }
    let rw = UserAccess::new(12, true).unwrap();
    assert_eq!((rw.bits(), rw.writes()), (13, true));
    assert_eq!(UserAccess::new(0, true).map(UserAccess::bits), Ok(1));
    assert!(!UserAccess::new(12, false).unwrap().writes());
    assert_eq!(grant_words(12), c"read-only");
    assert_eq!(grant_words(13), c"read and program (EN)");
    assert_eq!(grant_words(2), c"software increment only");
    assert_eq!(grant_words(0), c"nothing");
}

#[test]
fn events_parameter_parses_and_refuses_clearly() {
    assert_eq!(events("0x8,0x11").as_slice(), [0x8, 0x11]);
    assert_eq!(events("8,17\n").as_slice(), [8, 17]);
    assert_eq!(events("0XfFfF").as_slice(), [0xffff]);
    assert!(events("").is_empty());
    assert!(events("\n").is_empty());
    let parse = |t: &str| ModuleEvents::parse(t.as_bytes());
    assert_eq!(parse("1,2,3,4,5,6,7"), Err(EventsError::TooMany));
    assert_eq!(parse("0x8,x"), Err(EventsError::NotANumber { position: 1 }));
    assert_eq!(
        parse("0x8,,3"),
        Err(EventsError::NotANumber { position: 1 })
    );
    assert_eq!(parse("0x"), Err(EventsError::NotANumber { position: 0 }));
    assert_eq!(parse(" 8"), Err(EventsError::NotANumber { position: 0 }));
    assert_eq!(
        parse("0x10000"),
        Err(EventsError::OutOfRange { position: 0 })
    );
    assert_eq!(
        parse("123456789"),
        Err(EventsError::NotANumber { position: 0 })
    );
    assert_eq!(parse("8,0x8"), Err(EventsError::Duplicate { position: 1 }));
}

/// events[i] on counter N-1-i, CPU_CYCLES on the counter below them (never
/// PMCCNTR_EL0: perf's `armv8pmu_get_event_idx` puts every CPU_CYCLES event there first,
/// drivers/perf/arm_pmuv3.c 6.12); the text user space parses.
#[test]
fn layout_takes_the_top_counters_and_prints_them() {
    let layout = Layout::new(6, events("0x8,0x3"), true).unwrap();
    assert_eq!(
        layout.assignments().collect::<Vec<_>>(),
        [(5, 0x8), (4, 0x3), (3, 0x11)]
    );
    assert_eq!(layout.mask(), 0b11_1000);
    assert_eq!(layout.mask() & (1 << CYCLE_COUNTER), 0);
    let mut buf = [0u8; LAYOUT_TEXT_MAX];
    let n = layout.write_text(&mut buf);
    assert_eq!(&buf[..n], b"5=0x8 4=0x3 3=0x11");
    let none = Layout::new(6, ModuleEvents::none(), false).unwrap();
    assert!(none.is_empty());
    let n = none.write_text(&mut buf);
    assert_eq!(&buf[..n], b"none");
    let widest = Layout::new(
        30,
        events("0xffff,0xfffe,0xfffd,0xfffc,0xfffb,0xfffa"),
        true,
    )
    .unwrap();
    let n = widest.write_text(&mut buf);
    assert!(n <= LAYOUT_TEXT_MAX);
    assert_eq!(
        &buf[..n],
        b"29=0xffff 28=0xfffe 27=0xfffd 26=0xfffc 25=0xfffb 24=0xfffa 23=0x11"
    );
    // A short buffer is cut, never overrun.
    let mut short = [0u8; 4];
    assert_eq!(layout.write_text(&mut short), 4);
    assert_eq!(
        Layout::new(1, events("1,2"), false),
        Err(TooFewCounters { needed: 2, have: 1 })
    );
    assert_eq!(
        Layout::new(1, events("1"), true),
        Err(TooFewCounters { needed: 2, have: 1 })
    );
}

/// No PMUv3 (PMUVer 0, or 0xF = IMPLEMENTATION DEFINED; Arm ARM ID_AA64DFR0_EL1):
/// refused before any PMU register is read or written.
#[test]
fn without_pmuv3_nothing_is_touched() {
    for pmuver in [0x0, 0xF] {
        let regs = FakeUserAccess::new(pmuver << 8, PMCR_QEMU, PMCEID0_QEMU_ICOUNT, 0);
        let err = apply(&regs, default_request(), None, 0).unwrap_err();
        let ApplyError::NoPmuV3(NoPmuV3 { version }) = err else {
            panic!("{err:?}");
        };
        assert_eq!(version.pmuver(), pmuver as u8);
        assert_eq!(
            regs.ops().collect::<Vec<_>>(),
            [UserAccessOp::ReadIdAa64dfr0]
        );
    }
}

/// The default grant on a fresh QEMU CPU: only the layout's counters are written
/// (PMEVCNTR5 INST_RETIRED and PMEVCNTR4 CPU_CYCLES, both P | event: EL0 only, Arm ARM
/// PMEVTYPER<n>_EL0), their overflow flags and interrupt enables cleared first, an
/// `isb` between the filters and the enable (Linux's `armv8pmu_enable_counter` order),
/// PMCR_EL0.E set (no P/C, no LC: the cycle counter is perf's), then the read-only
/// grant ER = 0x8.
#[test]
fn default_grant_programs_the_layout_and_grants_read_only() {
    let regs = qemu_cpu();
    let applied = apply(&regs, default_request(), None, 0).unwrap();
    assert_eq!(applied.pmuver, 6);
    assert_eq!((applied.old_pmuserenr, applied.new_pmuserenr), (0, 0x8));
    assert_eq!(applied.owned, 0b11_0000);
    assert_eq!(applied.zeroed, 0b11_0000);
    assert_eq!(applied.kept, 0);
    assert!(applied.enabled_pmu);
    let expected = [
        UserAccessOp::ClearOverflowAndInterrupt(0b11_0000),
        UserAccessOp::WritePmevtyper(5, 0x8000_0008),
        UserAccessOp::WritePmevcntr(5, 0),
        UserAccessOp::WritePmevtyper(4, 0x8000_0011),
        UserAccessOp::WritePmevcntr(4, 0),
        UserAccessOp::Isb,
        UserAccessOp::WritePmcntenset(0b11_0000),
        UserAccessOp::WritePmcr(PMCR_QEMU | PMCR_E),
        UserAccessOp::WritePmuserenr(0x8),
        UserAccessOp::Isb,
    ];
    assert_eq!(writes(&regs), expected);
    assert_eq!(access_names(applied.new_pmuserenr), c"ER");
}

/// perf counts on PMEVCNTR0/1_EL0 and PMCCNTR_EL0 (a `perf stat -a`: cycles on the
/// cycle counter), and KVM holds PMEVCNTR2_EL0 disabled for a guest (nVHE hosts keep
/// `exclude_host` events disabled while the host runs, `kvm_pmu_counter_deferred`,
/// include/kvm/arm_pmu.h 6.12): all of them are in perf's used_mask, and not one of
/// them is written — not zeroed, not enabled, not reprogrammed. (The grant before
/// perf's bookkeeping zeroed every counter whose enable bit was clear: KVM's too.)
#[test]
fn counters_perf_holds_are_never_written() {
    let regs = qemu_cpu();
    regs.preset(0, PMCR_QEMU | PMCR_E, 0, 0);
    regs.preset_counter(0, 0x08, 123_456, true);
    regs.preset_counter(1, 0x11, 654_321, true);
    regs.preset_counter(2, 0x08, 555, false);
    regs.set_counter(31, 999);
    regs.preset(
        0,
        PMCR_QEMU | PMCR_E,
        regs.enabled_counters() | (1 << 31),
        0,
    );
    let perf_used = 0b111 | (1 << 31);
    let applied = apply(&regs, default_request(), None, perf_used).unwrap();
    assert_eq!(
        (
            regs.counter(0),
            regs.counter(1),
            regs.counter(2),
            regs.counter(31)
        ),
        (123_456, 654_321, 555, 999)
    );
    assert_eq!(applied.zeroed, 0b11_0000);
    assert!(!applied.enabled_pmu, "E was already on: perf's");
    for op in writes(&regs) {
        match op {
            UserAccessOp::WritePmevcntr(n, _) | UserAccessOp::WritePmevtyper(n, _) => {
                assert!(n == 4 || n == 5, "{op:?}")
            }
            UserAccessOp::WritePmcntenset(m)
            | UserAccessOp::WritePmcntenclr(m)
            | UserAccessOp::ClearOverflowAndInterrupt(m) => {
                assert_eq!(m & perf_used, 0, "{op:?}")
            }
            UserAccessOp::WritePmccntr(_) | UserAccessOp::WritePmccfiltr(_) => {
                panic!("{op:?}: the cycle counter is perf's")
            }
            _ => {}
        }
    }
    assert_eq!(regs.enabled_counters(), 0b11_0011 | (1 << 31));
}

/// perf holds the top event counter: no grant, nothing written, the counter named —
/// even when perf's event has exactly the module's configuration (an
/// `instructions:u` event is P | 0x8 = `event_config(8)`, drivers/perf/arm_pmuv3.c
/// `armv8pmu_set_event_filter`). The grant before perf's bookkeeping took such a
/// counter as its own ("kept").
#[test]
fn a_layout_counter_in_perf_used_mask_refuses_the_grant() {
    let regs = qemu_cpu();
    regs.preset_counter(5, 0x11, 7, true);
    let err = apply(&regs, default_request(), None, 1 << 5).unwrap_err();
    assert_eq!(
        err,
        ApplyError::CounterInUse {
            counter: 5,
            config: 0x11
        }
    );
    assert!(writes(&regs).is_empty());

    let regs = qemu_cpu();
    regs.preset_counter(5, 0x8000_0008, 7, true);
    let err = apply(&regs, default_request(), None, 1 << 5).unwrap_err();
    assert_eq!(
        err,
        ApplyError::CounterInUse {
            counter: 5,
            config: 0x8000_0008
        }
    );
    assert!(writes(&regs).is_empty());
    assert_eq!(regs.counter(5), 7);
}

/// An event the CPU does not implement (QEMU without icount has no INST_RETIRED:
/// PMCEID0 = 0x20001) would count nothing: refused, nothing written. A CPU with fewer
/// counters than the layout (N = 4) too.
#[test]
fn unimplemented_events_and_small_pmus_are_refused() {
    let regs = FakeUserAccess::new(DFR0_PMUV3P5, PMCR_QEMU, 0x2_0001, 0);
    assert_eq!(
        apply(&regs, default_request(), None, 0),
        Err(ApplyError::EventNotImplemented {
            event: INST_RETIRED
        })
    );
    assert!(writes(&regs).is_empty());
    let regs = FakeUserAccess::new(DFR0_PMUV3P5, 4 << 11, PMCEID0_QEMU_ICOUNT, 0);
    assert_eq!(
        apply(&regs, default_request(), None, 0),
        Err(ApplyError::TooFewCounters(TooFewCounters {
            needed: 6,
            have: 4
        }))
    );
    assert!(writes(&regs).is_empty());
}

/// perf's `armv8pmu_start()` wrote PMUSERENR_EL0 = 0 while the module's counters kept
/// counting: the re-grant leaves them running (not zeroed, not rewritten) and grants
/// again; the first apply's PMUSERENR_EL0 is kept.
#[test]
fn regrant_keeps_the_running_counters() {
    let regs = qemu_cpu();
    let first = apply(&regs, default_request(), None, 0).unwrap();
    regs.set_counter(5, 2000);
    regs.set_counter(4, 2500);
    regs.preset(0, regs.control(), regs.enabled_counters(), 0x8000_0000);
    regs.clear_ops();
    let again = apply(&regs, default_request(), Some(&first), 0).unwrap();
    assert_eq!(again.kept, 0b11_0000);
    assert_eq!((regs.counter(5), regs.counter(4)), (2000, 2500));
    assert_eq!(again.found_pmuserenr, 0);
    assert_eq!(again.old_pmuserenr, first.old_pmuserenr);
    assert!(again.enabled_pmu, "the first apply turned E on");
    assert_eq!(regs.user_enable(), 0x8);
    assert!(!writes(&regs).iter().any(|op| matches!(
        op,
        UserAccessOp::WritePmevtyper(..)
            | UserAccessOp::WritePmcntenset(_)
            | UserAccessOp::WritePmevcntr(..)
    )));
}

/// A counter of the layout that is enabled with the module's configuration but was
/// never the module's (`previous` is None: the first grant) is not "kept": it is
/// programmed again from zero. Only `previous.owned` says what is the module's.
#[test]
fn only_the_modules_own_counters_are_kept() {
    let regs = qemu_cpu();
    regs.preset_counter(5, 0x8000_0008, 1234, true);
    let applied = apply(&regs, default_request(), None, 0).unwrap();
    assert_eq!(applied.kept, 0);
    assert_eq!(regs.counter(5), 0);
    assert!(writes(&regs).contains(&UserAccessOp::WritePmcntenclr(1 << 5)));
}

/// After CPU_PM_EXIT arm_pmu resets the PMU (`armv8pmu_reset`: every counter disabled,
/// PMCR_EL0 = P | C | LC | LP without E) and a power-down cleared PMUSERENR_EL0
/// (`cpu_do_resume`): the re-grant programs and enables the layout again.
#[test]
fn regrant_after_cpu_pm_reset_programs_again() {
    let regs = qemu_cpu();
    let first = apply(&regs, default_request(), None, 0).unwrap();
    regs.preset(0, PMCR_AFTER_LINUX_RESET, 0, 0);
    regs.clear_ops();
    let again = apply(&regs, default_request(), Some(&first), 0).unwrap();
    assert_eq!(again.kept, 0);
    assert_eq!(regs.enabled_counters(), 0b11_0000);
    assert_eq!(regs.event_type(5), 0x8000_0008);
    assert_eq!(regs.event_type(4), 0x8000_0011);
    assert_eq!(regs.control() & PMCR_E, PMCR_E);
    assert_eq!(regs.user_enable(), 0x8);
}

/// Unload: the grant becomes 0 (`armv8pmu_disable_user_access`), then the module's
/// counters are disabled, their overflow flags and interrupt enables cleared (what
/// perf's own release does, `armv8pmu_disable_intens`), and zeroed. PMCR_EL0.E is left
/// to perf (its `armv8pmu_stop` clears it when its last event leaves).
#[test]
fn restore_releases_the_counters_and_revokes_first() {
    let regs = qemu_cpu();
    let request = default_request();
    let applied = apply(&regs, request, None, 0).unwrap();
    regs.set_counter(5, 77);
    regs.clear_ops();
    let restored = restore(&regs, &applied, &request.layout, 0);
    assert_eq!(
        restored,
        Restored {
            found_pmuserenr: 0x8,
            new_pmuserenr: 0,
            released: 0b11_0000,
            taken: 0,
        }
    );
    let w = writes(&regs);
    assert_eq!(
        &w[..4],
        [
            UserAccessOp::WritePmuserenr(0),
            UserAccessOp::Isb,
            UserAccessOp::WritePmcntenclr(0b11_0000),
            UserAccessOp::ClearOverflowAndInterrupt(0b11_0000),
        ]
    );
    assert_eq!((regs.counter(5), regs.enabled_counters()), (0, 0));
    assert!(!w.iter().any(|op| matches!(op, UserAccessOp::WritePmcr(_))));
}

/// perf's counter with exactly the module's configuration (an `instructions:u` or
/// `cycles:u` CPU-wide session) on a counter perf holds: the restore never disables or
/// zeroes it. The grant before perf's bookkeeping decided by configuration and zeroed
/// it, and perf's next read jumped by up to 2^31 (`armpmu_event_update`).
#[test]
fn restore_never_touches_a_counter_in_perf_used_mask() {
    let regs = qemu_cpu();
    let request = default_request();
    let applied = apply(&regs, request, None, 0).unwrap();
    // Counter 5 is in perf's used_mask now (the mask a stale bookkeeping would lose).
    regs.preset_counter(5, 0x8000_0008, 99, true);
    regs.preset_counter(0, 0x08, 42, true);
    // perf's `armv8pmu_start()` for a task without user-readable events wrote 0.
    regs.preset(0, regs.control(), regs.enabled_counters(), 0x8000_0000);
    regs.clear_ops();
    let restored = restore(&regs, &applied, &request.layout, 0b10_0001);
    assert_eq!(restored.found_pmuserenr, 0);
    assert_eq!(restored.new_pmuserenr, 0, "perf's value stays");
    assert_eq!(restored.taken, 1 << 5);
    assert_eq!(restored.released, 1 << 4);
    assert_eq!((regs.counter(5), regs.counter(0)), (99, 42));
    assert_eq!(regs.enabled_counters(), 0b10_0001);
    assert_eq!(regs.control() & PMCR_E, PMCR_E, "perf's counters still run");
}

/// The first apply found Linux's own read grant (ER|CR: a task with user-readable perf
/// events, `kernel.perf_user_access=1`): unloading still writes 0, never Linux's
/// lingering ER|CR (perf gives it back to its task at the next `armv8pmu_start`).
#[test]
fn restore_always_revokes_to_zero() {
    let regs = qemu_cpu();
    regs.preset(0xc, PMCR_QEMU, 0, 0);
    let request = Request {
        user_access: UserAccess::new(8, true).unwrap(),
        layout: Layout::new(6, events("0x8"), false).unwrap(),
    };
    let applied = apply(&regs, request, None, 0).unwrap();
    assert_eq!(applied.new_pmuserenr, 0x9);
    let restored = restore(&regs, &applied, &request.layout, 0);
    assert_eq!(restored.new_pmuserenr, 0);
    assert_eq!(regs.user_enable(), 0);
}

/// Every combination is named in the order EN, SW, CR, ER; bits above 3 (PMUv3p9
/// UEN, IR, TID) are not named.
#[test]
fn names_of_every_combination() {
    for bits in 0..16u64 {
        let mut expected = std::string::String::new();
        for (bit, name) in [(1, "EN"), (2, "SW"), (4, "CR"), (8, "ER")] {
            if bits & bit != 0 {
                if !expected.is_empty() {
                    expected.push('|');
                }
                expected.push_str(name);
            }
        }
        if expected.is_empty() {
            expected.push_str("none");
        }
        assert_eq!(access_names(bits).to_str().unwrap(), expected);
        assert_eq!(access_names(bits | 0x70), access_names(bits));
    }
}

/// The kernel-entry sentinel's filter (Arm ARM, `PMEVTYPER<n>_EL0`: P bit 31, U bit 30,
/// NSH bit 27): a kernel at EL1 counts with U = 1 alone (0x4000_0008 for INST_RETIRED);
/// a VHE kernel at EL2 with U = 1, P = 1 (no guest EL1) and NSH = 1 (0xC800_0008), the
/// filter drivers/perf/arm_pmuv3.c gives a kernel-only event there
/// (`armv8pmu_set_event_filter`: exclude_user → U, `ARMV8_PMU_INCLUDE_EL2` in hyp mode,
/// exclude_guest … → P).
#[test]
fn sentinel_counts_only_at_the_kernels_exception_level() {
    assert_eq!(Sentinel::new(INST_RETIRED, false).config(), 0x4000_0008);
    assert_eq!(Sentinel::new(INST_RETIRED, true).config(), 0xC800_0008);
}

/// The sentinel sits on the counter below the events and CPU_CYCLES, is printed with
/// `:k`, and needs a counter of its own.
#[test]
fn sentinel_takes_the_counter_below_the_events() {
    let layout = Layout::new(6, events("0x8,0x3"), true)
        .unwrap()
        .with_sentinel(Sentinel::new(INST_RETIRED, false))
        .unwrap();
    assert_eq!(layout.sentinel_counter(), Some(2));
    assert_eq!(
        layout.assignments().collect::<Vec<_>>(),
        [(5, 0x8), (4, 0x3), (3, 0x11), (2, 0x8)]
    );
    assert_eq!(layout.config_of(2, 0x8), 0x4000_0008);
    assert_eq!(layout.config_of(5, 0x8), 0x8000_0008);
    assert_eq!(layout.config_of(3, 0x11), 0x8000_0011);
    let mut buf = [0u8; LAYOUT_TEXT_MAX];
    let n = layout.write_text(&mut buf);
    assert_eq!(&buf[..n], b"5=0x8 4=0x3 3=0x11 2=0x8:k");
    assert_eq!(
        Layout::new(2, events("1,2"), false)
            .unwrap()
            .with_sentinel(Sentinel::new(INST_RETIRED, false)),
        Err(TooFewCounters { needed: 3, have: 2 })
    );
    let widest = Layout::new(
        30,
        events("0xffff,0xfffe,0xfffd,0xfffc,0xfffb,0xfffa"),
        true,
    )
    .unwrap()
    .with_sentinel(Sentinel::new(0xfff9, true))
    .unwrap();
    let n = widest.write_text(&mut buf);
    assert!(n <= LAYOUT_TEXT_MAX);
    assert_eq!(
        &buf[..n],
        b"29=0xffff 28=0xfffe 27=0xfffd 26=0xfffc 25=0xfffb 24=0xfffa 23=0x11 22=0xfff9:k"
    );
}

/// A grant with the sentinel programs PMEVTYPER3_EL0 = U | INST_RETIRED next to the
/// EL0 events on counters 5 and 4, enables all three in one write; a re-grant keeps
/// them running; restore releases all three; a sentinel event the CPU does not
/// implement refuses the grant (QEMU without icount: PMCEID0 = 0x20001).
#[test]
fn sentinel_is_programmed_kept_and_released_like_the_events() {
    let request = Request {
        layout: default_request()
            .layout
            .with_sentinel(Sentinel::new(INST_RETIRED, false))
            .unwrap(),
        ..default_request()
    };
    let regs = qemu_cpu();
    let applied = apply(&regs, request, None, 0).unwrap();
    assert_eq!(applied.owned, 0b11_1000);
    let w = writes(&regs);
    assert!(
        w.contains(&UserAccessOp::WritePmevtyper(3, 0x4000_0008)),
        "{w:?}"
    );
    assert!(w.contains(&UserAccessOp::WritePmcntenset(0b11_1000)));
    assert_eq!(regs.event_type(3), 0x4000_0008);

    let again = apply(&regs, request, Some(&applied), 0).unwrap();
    assert_eq!(again.kept, applied.owned);

    let restored = restore(&regs, &again, &request.layout, 0);
    assert_eq!(restored.released, applied.owned);
    assert_eq!(restored.taken, 0);

    let regs = FakeUserAccess::new(DFR0_PMUV3P5, PMCR_QEMU, 0x2_0001, 0);
    let no_events = Request {
        layout: Layout::new(6, ModuleEvents::none(), false)
            .unwrap()
            .with_sentinel(Sentinel::new(INST_RETIRED, false))
            .unwrap(),
        ..default_request()
    };
    assert_eq!(
        apply(&regs, no_events, None, 0),
        Err(ApplyError::EventNotImplemented {
            event: INST_RETIRED
        })
    );
    assert!(writes(&regs).is_empty());
}
