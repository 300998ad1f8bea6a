//! The ARM1176 `Pmu` over the fake register file: overflow flags, event programming,
//! stopping single counters, and `pmu_core::CounterPool` on top.

use pmu_armv6::fake::FakeRegisters;
use pmu_armv6::pmcr::{self, PMCR};
use pmu_armv6::{Arm1176Event, Arm1176Pmu, CounterRegister, CycleDivider, PmuRegisters};
use pmu_core::{CounterPool, CounterWidth, Error, Event, GenericEvent, Pmu, PrivilegeFilter, Slot};
use proptest::prelude::*;

const CCR: Slot = Slot::Fixed(0);
const CR0: Slot = Slot::Programmable(0);
const CR1: Slot = Slot::Programmable(1);

fn pmu() -> Arm1176Pmu<FakeRegisters> {
    Arm1176Pmu::with_registers(FakeRegisters::new(), CycleDivider::EveryCycle)
}

fn flag(counter: CounterRegister) -> u32 {
    let field = counter.overflow_flag();
    field.mask << field.shift
}

/// TRM Table 3-136 (flags are write-1-to-clear, so a read-modify-write of PMCR clears
/// pending overflow flags): with CR1's flag pending, enabling and
/// reprogramming CR0 (and everything else short of clearing CR1) never writes 1 there.
#[test]
fn reprogramming_one_counter_keeps_another_counters_pending_flag() {
    let pmu = pmu();
    let regs = pmu.registers();
    pmu.configure(CR1, Arm1176Event::DataCacheMiss, PrivilegeFilter::ALL)
        .unwrap();
    pmu.enable(CR1);
    regs.set_count(CounterRegister::Cr1, u32::MAX);
    regs.tick(Arm1176Event::DataCacheMiss, 1); // CR1 wraps: its flag is pending
    assert!(regs.state().is_set(PMCR::CR1));
    regs.clear_write_log();

    pmu.configure(CR0, Arm1176Event::InstructionExecuted, PrivilegeFilter::ALL)
        .unwrap();
    pmu.enable(CR0);
    pmu.configure(CR0, Arm1176Event::BranchExecuted, PrivilegeFilter::ALL)
        .unwrap();
    pmu.enable(CR0);
    pmu.enable(CCR);
    pmu.write(CR0, 5);
    pmu.disable(CCR);
    pmu.set_cycle_divider(CycleDivider::Every64thCycle);
    pmu.clear_overflow(CR0);
    pmu.clear_overflow(CCR);
    pmu.disable(CR0);

    assert!(regs.pmcr_writes() > 5);
    assert_eq!(regs.flags_written_as_one() & flag(CounterRegister::Cr1), 0);
    assert!(regs.state().is_set(PMCR::CR1), "CR1's flag was cleared");
    assert!(pmu.overflowed(CR1));
    // Nor did any write-back reset a counter (P and C read as 1 in the fake).
    assert_eq!(regs.resets_written_as_one(), 0);
}

/// Same rule with all three flags pending and counters running: each RMW writes no 1
/// to any flag it was not asked to clear.
#[test]
fn clear_overflow_clears_only_that_flag() {
    let pmu = pmu();
    let regs = pmu.registers();
    for slot in [CCR, CR0, CR1] {
        pmu.enable(slot);
    }
    for counter in CounterRegister::ALL {
        regs.raise_overflow(counter);
    }
    regs.clear_write_log();

    pmu.clear_overflow(CR0);
    assert_eq!(regs.flags_written_as_one(), flag(CounterRegister::Cr0));
    assert!(!pmu.overflowed(CR0));
    assert!(pmu.overflowed(CR1));
    assert!(pmu.overflowed(CCR));

    pmu.clear_overflow(CCR);
    assert_eq!(
        regs.flags_written_as_one(),
        flag(CounterRegister::Cr0) | flag(CounterRegister::Ccr)
    );
    assert!(!pmu.overflowed(CCR));
    assert!(pmu.overflowed(CR1));
    assert_eq!(
        regs.state().get() & pmcr::OVERFLOW_FLAGS,
        flag(CounterRegister::Cr1)
    );
}

/// The usual first configuration (TRM Tables 3-136/3-137: 0x00705707) through the
/// driver: CR0 = instructions (0x07), CR1 = branches (0x05), running. PMCR then holds
/// its event fields and E; its P, C and flag bits are actions the driver does not need.
#[test]
fn driver_programs_instruction_and_branch_event_fields() {
    let pmu = pmu();
    pmu.configure(CR0, Arm1176Event::InstructionExecuted, PrivilegeFilter::ALL)
        .unwrap();
    pmu.configure(CR1, Arm1176Event::BranchExecuted, PrivilegeFilter::ALL)
        .unwrap();
    pmu.enable(CR0);
    pmu.enable(CR1);
    let fields = (0xFF << 20) | (0xFF << 12) | 1;
    assert_eq!(pmu.registers().state().get() & fields, 0x0070_5707 & fields);
    assert_eq!(pmu.registers().state().get() & pmcr::INTERRUPT_ENABLES, 0);
}

/// Linux's scheme (drivers/perf/arm_v6_pmu.c, armv6pmu_disable_event): a stopped CR0/CR1
/// is parked on 0x20 (ETMEXTOUT[0]); PMCR.E goes off when nothing runs.
#[test]
fn stopped_counters_are_parked_on_etmextout0() {
    let pmu = pmu();
    let regs = pmu.registers();
    let parked = u32::from(Arm1176Event::PARKED.code());
    assert_eq!(parked, 0x20);
    assert_eq!(regs.state().read(PMCR::EvtCount0), parked);
    assert_eq!(regs.state().read(PMCR::EvtCount1), parked);
    assert!(!regs.state().is_set(PMCR::E));

    pmu.configure(CR1, Arm1176Event::DataCacheMiss, PrivilegeFilter::ALL)
        .unwrap();
    assert_eq!(
        regs.state().read(PMCR::EvtCount1),
        parked,
        "configure leaves it stopped"
    );
    pmu.enable(CR1);
    assert_eq!(regs.state().read(PMCR::EvtCount1), 0x0B);
    assert!(regs.state().is_set(PMCR::E));
    assert!(pmu.is_running(CR1));
    pmu.disable(CR1);
    assert_eq!(regs.state().read(PMCR::EvtCount1), parked);
    assert!(!regs.state().is_set(PMCR::E));
    assert_eq!(pmu.configured_event(CR1), Some(Arm1176Event::DataCacheMiss));
}

/// Stopping one counter leaves the others counting, and a stopped counter keeps its
/// value even though the CCR free-runs under PMCR.E and an ETM could move a parked
/// counter (the Pmu contract: "its value is kept").
#[test]
fn stopped_counter_keeps_value_while_others_run() {
    let pmu = pmu();
    let regs = pmu.registers();
    pmu.configure(CR0, Arm1176Event::InstructionExecuted, PrivilegeFilter::ALL)
        .unwrap();
    pmu.enable(CR0);
    pmu.enable(CCR);
    regs.tick(Arm1176Event::InstructionExecuted, 10);
    regs.tick(Arm1176Event::CycleCount, 100);
    pmu.disable(CCR);
    regs.tick(Arm1176Event::CycleCount, 1000); // the hardware CCR runs on
    regs.tick(Arm1176Event::InstructionExecuted, 5);
    assert_eq!(pmu.read(CCR), 100);
    assert_eq!(pmu.read(CR0), 15);
    pmu.enable(CCR);
    assert_eq!(pmu.read(CCR), 100);
    regs.tick(Arm1176Event::CycleCount, 1);
    assert_eq!(pmu.read(CCR), 101);

    pmu.disable(CR0);
    regs.tick(Arm1176Event::EtmExtOut0, 7); // an ETM asserting ETMEXTOUT[0]
    regs.tick(Arm1176Event::InstructionExecuted, 5);
    assert_eq!(pmu.read(CR0), 15);
    pmu.enable(CR0);
    regs.tick(Arm1176Event::InstructionExecuted, 1);
    assert_eq!(pmu.read(CR0), 16);
}

/// A wrap of the free-running CCR while it is stopped is not an overflow of the
/// stopped counter: the flag raised meanwhile is cleared on start, one that was
/// pending before the stop is kept.
#[test]
fn overflow_while_stopped_is_not_reported() {
    let pmu = pmu();
    let regs = pmu.registers();
    pmu.enable(CR0);
    pmu.enable(CCR);
    pmu.disable(CCR);
    regs.set_count(CounterRegister::Ccr, u32::MAX - 1);
    regs.tick(Arm1176Event::CycleCount, 10);
    assert!(regs.state().is_set(PMCR::CCR));
    assert!(!pmu.overflowed(CCR));
    pmu.enable(CCR);
    assert!(!pmu.overflowed(CCR));
    assert!(!regs.state().is_set(PMCR::CCR));

    // A real overflow, then a stop: kept.
    pmu.write(CCR, u32::MAX.into());
    regs.tick(Arm1176Event::CycleCount, 1);
    assert!(pmu.overflowed(CCR));
    pmu.disable(CCR);
    assert!(pmu.overflowed(CCR));
    pmu.enable(CCR);
    assert!(pmu.overflowed(CCR));
}

/// PMCR.D (TRM Table 3-136: the cycle count divider, one increment per 64 cycles): the CCR counts every 64th cycle.
#[test]
fn cycle_divider_sets_pmcr_d() {
    let pmu = Arm1176Pmu::with_registers(FakeRegisters::new(), CycleDivider::Every64thCycle);
    assert!(pmu.registers().state().is_set(PMCR::D));
    pmu.enable(CCR);
    pmu.registers().tick(Arm1176Event::CycleCount, 640 + 63);
    assert_eq!(pmu.read(CCR), 10);
    pmu.set_cycle_divider(CycleDivider::EveryCycle);
    assert!(!pmu.registers().state().is_set(PMCR::D));
    assert_eq!(pmu.cycle_divider(), CycleDivider::EveryCycle);
}

/// Taking over a PMU someone left running with interrupts and export on: everything
/// stops, interrupts and export go off, the pending flags stay.
#[test]
fn takeover_stops_and_quiets_but_keeps_flags() {
    let regs = FakeRegisters::new();
    regs.set_state(0x0070_5f71); // E, EC0-ECC, flags, X, instructions/branches
    regs.set_count(CounterRegister::Cr0, 42);
    let pmu = Arm1176Pmu::with_registers(regs, CycleDivider::EveryCycle);
    let state = pmu.registers().state();
    assert!(!state.is_set(PMCR::E));
    assert!(!state.is_set(PMCR::X));
    assert_eq!(state.get() & pmcr::INTERRUPT_ENABLES, 0);
    assert_eq!(state.get() & pmcr::OVERFLOW_FLAGS, 0x700);
    assert_eq!(pmu.registers().flags_written_as_one(), 0);
    assert_eq!(pmu.read(CR0), 42);
    assert!(pmu.overflowed(CR0));
}

/// The ARM1176 has no privilege filter (TRM: the counters count in every mode).
#[test]
fn filters_other_than_all_are_rejected() {
    let pmu = pmu();
    for filter in [PrivilegeFilter::USER, PrivilegeFilter::KERNEL] {
        assert_eq!(
            pmu.configure(CR0, Arm1176Event::InstructionExecuted, filter),
            Err(Error::FilterUnsupported { filter })
        );
    }
    assert_eq!(
        pmu.configure(CCR, Arm1176Event::InstructionExecuted, PrivilegeFilter::ALL),
        Err(Error::EventNotCountableOnSlot {
            slot: CCR,
            code: 0x07
        })
    );
    assert_eq!(
        pmu.configure(
            Slot::Programmable(2),
            Arm1176Event::CycleCount,
            PrivilegeFilter::ALL
        ),
        Err(Error::CounterOutOfRange {
            slot: Slot::Programmable(2),
            available: 2
        })
    );
    assert_eq!(
        pmu.configure(
            Slot::Fixed(1),
            Arm1176Event::CycleCount,
            PrivilegeFilter::ALL
        ),
        Err(Error::CounterOutOfRange {
            slot: Slot::Fixed(1),
            available: 1
        })
    );
    // Slots the ARM1176 lacks are ignored by the infallible operations.
    pmu.enable(Slot::Programmable(9));
    assert_eq!(pmu.read(Slot::Fixed(3)), 0);
    assert!(!pmu.overflowed(Slot::Programmable(2)));
}

/// Capabilities as the TRM describes them: CR0/CR1 and CCR, all 32 bits.
#[test]
fn capabilities() {
    let caps = pmu().capabilities();
    assert_eq!(caps.programmable, 2);
    assert_eq!(caps.fixed, 1);
    assert_eq!(caps.programmable_width, CounterWidth::W32);
    assert_eq!(caps.fixed_width, CounterWidth::W32);
    assert_eq!(pmu().fixed_event(0), Some(GenericEvent::CpuCycles));
    assert_eq!(pmu().fixed_event(1), None);
}

/// `pmu_core::CounterPool` over the fake backend: cycles go to the CCR, two events fill
/// CR0/CR1, a third is `NoFreeCounter`; filters, reserved and oversized raw events are
/// typed errors (TRM Table 3-137; Linux maps cycles to the CCR in
/// armv6pmu_get_event_idx).
#[test]
fn counter_pool_over_fake_registers() {
    let pool = CounterPool::new(pmu());
    let all = PrivilegeFilter::ALL;

    let cycles = pool.counter(GenericEvent::CpuCycles.into(), all).unwrap();
    assert_eq!(cycles.slot(), CCR);
    assert_eq!(cycles.width(), CounterWidth::W32);
    let instructions = pool
        .counter(GenericEvent::Instructions.into(), all)
        .unwrap();
    assert_eq!(instructions.slot(), CR0);
    let misses = pool.counter(Event::Raw(0x0B), all).unwrap();
    assert_eq!(misses.slot(), CR1);
    assert_eq!(
        pool.counter(GenericEvent::BranchInstructions.into(), all)
            .err(),
        Some(Error::NoFreeCounter { available: 2 })
    );
    assert_eq!(
        pool.counter(GenericEvent::CpuCycles.into(), all).err(),
        Some(Error::NoFreeCounter { available: 2 }),
        "CCR taken, no programmable counter left"
    );

    cycles.start();
    instructions.start();
    misses.start();
    let regs = pool.pmu().registers();
    regs.tick(Arm1176Event::CycleCount, 452);
    regs.tick(Arm1176Event::InstructionExecuted, 68);
    regs.tick(Arm1176Event::DataCacheMiss, 3);
    assert_eq!(cycles.read(), 452);
    assert_eq!(instructions.read(), 68);
    assert_eq!(misses.read(), 3);

    // Overflow through the handle.
    instructions.preset_before_wrap(2);
    regs.tick(Arm1176Event::InstructionExecuted, 3);
    assert!(instructions.overflowed());
    assert!(!misses.overflowed());
    instructions.clear_overflow();
    assert!(!instructions.overflowed());

    // Dropping frees the slot and parks the counter.
    drop(misses);
    assert_eq!(
        regs.state().read(PMCR::EvtCount1),
        u32::from(Arm1176Event::PARKED.code())
    );
    let user = pool.counter(GenericEvent::BranchMisses.into(), PrivilegeFilter::USER);
    assert_eq!(
        user.err(),
        Some(Error::FilterUnsupported {
            filter: PrivilegeFilter::USER
        })
    );
    for (raw, error) in [
        (0x08, Error::EventNotImplemented { code: 0x08 }),
        (0x0E, Error::EventNotImplemented { code: 0x0E }),
        (0x13, Error::EventNotImplemented { code: 0x13 }),
        (
            0x100,
            Error::RawEventOutOfRange {
                raw: 0x100,
                max: 0xFF,
            },
        ),
    ] {
        assert_eq!(
            pool.counter(Event::Raw(raw), all).err(),
            Some(error),
            "{raw:#x}"
        );
    }
    assert_eq!(
        pool.counter(GenericEvent::CacheMisses.into(), all).err(),
        Some(Error::EventNotEncodable {
            event: GenericEvent::CacheMisses
        })
    );
    let branches = pool
        .counter(GenericEvent::BranchMisses.into(), all)
        .unwrap();
    assert_eq!(branches.slot(), CR1);
    assert_eq!(
        pool.pmu().configured_event(CR1),
        Some(Arm1176Event::BranchMispredicted)
    );
    // The CCR counts only cycles: a raw event on it is refused.
    drop(cycles);
    assert_eq!(
        pool.counter_at(CCR, Event::Raw(0x07), all).err(),
        Some(Error::EventNotCountableOnSlot {
            slot: CCR,
            code: 0x07
        })
    );
}

/// One operation of the property test below.
#[derive(Clone, Debug)]
enum Op {
    Configure(Slot, Arm1176Event),
    Enable(Slot),
    Disable(Slot),
    Write(Slot, u64),
    Read(Slot),
    ClearOverflow(Slot),
    Divider(bool),
    Tick(Arm1176Event, u64),
}

fn slot() -> impl Strategy<Value = Slot> {
    prop_oneof![Just(CCR), Just(CR0), Just(CR1)]
}

fn event() -> impl Strategy<Value = Arm1176Event> {
    proptest::sample::select(&Arm1176Event::ALL[..])
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (slot(), event()).prop_map(|(s, e)| Op::Configure(s, e)),
        slot().prop_map(Op::Enable),
        slot().prop_map(Op::Disable),
        (slot(), any::<u64>()).prop_map(|(s, v)| Op::Write(s, v)),
        slot().prop_map(Op::Read),
        slot().prop_map(Op::ClearOverflow),
        any::<bool>().prop_map(Op::Divider),
        (event(), 0u64..1000).prop_map(|(e, n)| Op::Tick(e, n)),
    ]
}

proptest! {
    /// The write-1-to-clear rule of PMCR (TRM Table 3-136) as a property: whatever sequence of operations runs, no
    /// PMCR write sets a flag bit except `clear_overflow` of that very counter (or the
    /// start of a counter whose flag was raised only while it was stopped), and no
    /// write sets P or C.
    #[test]
    fn no_stray_flag_clears(ops in proptest::collection::vec(op(), 1..40)) {
        let pmu = pmu();
        let regs = pmu.registers();
        for slot in [CCR, CR0, CR1] {
            pmu.enable(slot);
        }
        for counter in CounterRegister::ALL {
            regs.raise_overflow(counter);
        }
        // Every flag is pending and reported; it may only go away by its own clear.
        let mut cleared = [false; 3];
        for op in ops {
            regs.clear_write_log();
            match op {
                Op::Configure(s, e) => {
                    // Errors (an event on the CCR) are fine; the point is the flags.
                    let _ = pmu.configure(s, e, PrivilegeFilter::ALL);
                }
                Op::Enable(s) => pmu.enable(s),
                Op::Disable(s) => pmu.disable(s),
                Op::Write(s, v) => pmu.write(s, v),
                Op::Read(s) => {
                    let _ = pmu.read(s);
                }
                Op::ClearOverflow(s) => {
                    pmu.clear_overflow(s);
                    let counter = CounterRegister::from_slot(s).unwrap();
                    cleared[counter as usize] = true;
                    prop_assert_eq!(regs.flags_written_as_one(), flag(counter));
                }
                Op::Divider(on) => pmu.set_cycle_divider(if on {
                    CycleDivider::Every64thCycle
                } else {
                    CycleDivider::EveryCycle
                }),
                Op::Tick(e, n) => regs.tick(e, n),
            }
            prop_assert_eq!(regs.resets_written_as_one(), 0);
            prop_assert_eq!(regs.read_pmcr().get() & pmcr::INTERRUPT_ENABLES, 0);
            for counter in CounterRegister::ALL {
                if !cleared[counter as usize] {
                    prop_assert!(pmu.overflowed(counter.slot()), "{} lost its flag", counter.name());
                    prop_assert_eq!(regs.flags_written_as_one() & flag(counter), 0);
                }
            }
        }
    }
}
