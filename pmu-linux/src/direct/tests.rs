//! The direct backend against pmu-core's fake PMU and pmu-armv6's fake registers.

use pmu_core::fake::{FakeEvent, FakePmu};
use pmu_core::{Hazards, Slot};

use pmu_core::{Counter, CounterPool, CounterWidth, PrivilegeFilter};

use super::alloc::{allocate, OwnedCounters};
use super::probe::{classify, cpuinfo_midr, ARM1176_MIDR};
use super::region::{NoFlags, NoSentinel, OverflowFlags, Unchecked};
use super::*;
use crate::error::Error;
use crate::machine::sched::fake::FakeThread;
use crate::measure::{measure, measure_once, MeasureConfig};
use crate::sys::ChildEnd;

/// An illegal instruction in the probe child is the "not enabled" error, and the
/// test process lives on. (x86 `ud2`; the ARM probes execute their real register
/// read the same way.)
#[cfg(target_arch = "x86_64")]
#[test]
fn sigill_in_the_probe_becomes_the_error() {
    use super::probe::probe_with;
    use crate::error::DirectUnsupported;
    fn illegal() {
        // SAFETY: runs only in the forked probe child; UD2 raises #UD (SIGILL), which
        // ends the child: that is what is being tested.
        unsafe { core::arch::asm!("ud2", options(nostack)) };
    }
    let err = probe_with(illegal).unwrap_err();
    assert!(matches!(
        err,
        Error::Access(crate::error::AccessError::NotEnabled)
    ));
    assert_eq!(
        err.to_string(),
        "user access to the PMU is not enabled: load kmod-enable-user"
    );
    fn fine() {}
    assert!(matches!(probe_with(fine), Ok(())));
    // This machine has no direct backend at all.
    assert_eq!(
        format!("{:?}", probe()),
        format!(
            "{:?}",
            Err::<(), Error>(Error::Unsupported(crate::error::Unsupported::Direct {
                reason: DirectUnsupported::X86NeedsRing0
            }))
        )
    );
}

/// The same on 32-bit ARM (run by `cargo xtask armv6-demo` under `qemu-arm -cpu
/// arm1176`): a permanently undefined instruction (ARM ARM A3.16.5: 0xe7f000f0, not
/// one of Linux's BUG/breakpoint patterns 0xe7f001f0/1, which raise SIGTRAP) is the
/// "not enabled" error. The real probe's PMCR read either works (a Pi with
/// kmod-enable-user) or is that error (QEMU's ARM1176 c15 traps in User mode), and
/// never takes the test process down.
#[cfg(target_arch = "arm")]
#[test]
fn sigill_in_the_probe_becomes_the_error_on_arm() {
    use super::probe::probe_with;
    fn illegal() {
        // SAFETY: runs only in the forked probe child; the undefined instruction
        // raises SIGILL, which ends the child: that is what is being tested.
        unsafe { core::arch::asm!(".inst 0xe7f000f0", options(nostack)) };
    }
    assert!(matches!(
        probe_with(illegal),
        Err(Error::Access(crate::error::AccessError::NotEnabled))
    ));
    match probe() {
        Ok(()) | Err(Error::Access(crate::error::AccessError::NotEnabled)) => {}
        other => panic!("the ARM1176 probe ended {other:?}"),
    }
}

#[test]
fn other_child_ends_are_probe_failures() {
    assert_eq!(
        format!("{:?}", classify(ChildEnd::Signaled(libc::SIGSEGV))),
        format!(
            "{:?}",
            Err::<(), Error>(Error::Access(crate::error::AccessError::ProbeFailed {
                status: libc::SIGSEGV
            }))
        )
    );
    assert_eq!(
        format!("{:?}", classify(ChildEnd::Exited(3))),
        format!(
            "{:?}",
            Err::<(), Error>(Error::Access(crate::error::AccessError::ProbeFailed {
                status: 3 << 8
            }))
        )
    );
    assert!(matches!(classify(ChildEnd::Exited(0)), Ok(())));
    assert!(matches!(
        classify(ChildEnd::Signaled(libc::SIGILL)),
        Err(Error::Access(crate::error::AccessError::NotEnabled))
    ));
}

/// /proc/cpuinfo of a Raspberry Pi 1 (ARM1176JZF-S r0p7, MIDR 0x410fb767) as
/// arch/arm/kernel/setup.c prints it, of a Pi 2 (Cortex-A7, part 0xc07) and of x86.
#[test]
fn cpuinfo_tells_an_arm1176() {
    let pi1 = "processor\t: 0\nmodel name\t: ARMv6-compatible processor rev 7 (v6l)\n\
               BogoMIPS\t: 697.95\nFeatures\t: half thumb fastmult vfp edsp java tls\n\
               CPU implementer\t: 0x41\nCPU architecture: 7\nCPU variant\t: 0x0\n\
               CPU part\t: 0xb76\nCPU revision\t: 7\n\nHardware\t: BCM2835\n";
    assert_eq!(cpuinfo_midr(pi1), Some(ARM1176_MIDR));
    let pi2 = pi1.replace("0xb76", "0xc07");
    assert_eq!(cpuinfo_midr(&pi2), Some((0x41, 0xc07)));
    assert_eq!(
        cpuinfo_midr("processor\t: 0\nvendor_id\t: GenuineIntel\n"),
        None
    );
    let err = Error::Unsupported(crate::error::Unsupported::Direct {
        reason: crate::error::DirectUnsupported::NotArm1176 {
            implementer: 0x41,
            part: 0xc07,
        },
    });
    assert!(err.to_string().contains("part 0xc07"), "{err}");
    // The ARMv7 backend exists: the message must not call the ARM1176 the only one.
    assert!(
        err.to_string().contains("nor an ARMv7 or later core"),
        "{err}"
    );
}

fn fake_pmu() -> FakePmu {
    FakePmu::new(
        2,
        CounterWidth::W32,
        &[FakeEvent::INSTRUCTIONS, FakeEvent::CYCLES],
    )
    .unwrap()
}

/// A region built by hand over a pool's counters (what a program does that programs
/// the PMU itself): each counter read through its pool handle, bit i of the flags
/// counter i's overflow flag.
#[derive(Debug)]
struct PoolRead<'c, 'p>(&'c Counter<'p, FakePmu>, u32);

impl pmu_core::CounterRead for PoolRead<'_, '_> {
    fn read(&self) -> u64 {
        self.0.read()
    }
    fn overflow_mask(&self) -> u64 {
        1 << self.1
    }
}

/// The pool counters' overflow flags as one register.
#[derive(Debug)]
struct PoolFlags<'c, 'p>(&'c [Counter<'p, FakePmu>]);

impl OverflowFlags for PoolFlags<'_, '_> {
    const READABLE: bool = true;
    fn read(&self) -> u64 {
        self.0
            .iter()
            .enumerate()
            .fold(0, |a, (i, c)| a | u64::from(c.overflowed()) << i)
    }
    fn clear(&self, mask: u64) {
        for (i, c) in self.0.iter().enumerate() {
            if mask & 1 << i != 0 {
                c.clear_overflow();
            }
        }
    }
}

/// A region by hand over pmu-core's fake PMU and a scripted thread, without a sentinel:
/// exact counts with the read cost calibrated away, an overflow flagged with the
/// corrected value, a context switch flagged from the switch counts (getrusage's).
#[test]
fn a_region_by_hand_over_pool_counters() {
    let pool = CounterPool::new(fake_pmu());
    pool.pmu().set_read_cost(3);
    let counters = allocate(
        &pool,
        &["instructions", "cpu-cycles"],
        PrivilegeFilter::USER,
    )
    .unwrap();
    assert_eq!(counters[0].slot(), Slot::Programmable(0));
    let names = vec!["instructions".to_owned(), "cpu-cycles".to_owned()];
    let thread = FakeThread::default();
    let mut region = DirectRegion::with_cpu(
        &counters[..],
        Unchecked,
        [PoolRead(&counters[0], 0), PoolRead(&counters[1], 1)],
        names,
        NoSentinel,
        crate::sentinel::Sentinel::off("by hand"),
        PoolFlags(&counters[..]),
        &thread,
    )
    .unwrap();
    region.enable().unwrap();
    let config = MeasureConfig {
        warmup: 1,
        runs: 5,
        calibrate: true,
    };
    let m = measure(&mut region, &config, &mut || {
        pool.pmu().tick(FakeEvent::INSTRUCTIONS, 1000);
        pool.pmu().tick(FakeEvent::CYCLES, 2500);
    })
    .unwrap();
    // The scripted thread never switches: every run is clean.
    let ins = m.events[0].corrected.unwrap();
    assert_eq!(ins.min, Some(1000));
    assert_eq!(m.events[1].corrected.unwrap().min, Some(2500));
    for run in &m.runs {
        assert!(run.is_trusted(), "{run:?}");
        assert_eq!(
            run.evidence
                .switches
                .expect("a region without a sentinel takes the switch counts"),
            crate::machine::sched::SwitchCounts::default()
        );
    }

    // The region presets its own counter (what `Meter::preset_before_wrap` asks of
    // the direct backend).
    crate::backend::Backend::preset_before_wrap(&mut region, 0, 16).unwrap();
    let run = measure_once(&mut region, &mut || {
        pool.pmu().tick(FakeEvent::INSTRUCTIONS, 100)
    })
    .unwrap();
    // 100 events plus the fake read cost of 3 for each of the two reads in between
    // (this counter's own start read and the other counter's stop read).
    assert_eq!(run.readings[0].value, 106);
    assert!(run.readings[0].hazards.contains(Hazards::OVERFLOW));
    assert!(run.evidence.events()[0].overflowed);
    assert!(!run.readings[1].hazards.contains(Hazards::OVERFLOW));

    // The fake thread switched voluntarily inside the region (what getrusage(2)'s
    // ru_nvcsw + 1 shows on a real one).
    let run = measure_once(&mut region, &mut || thread.switch_voluntarily()).unwrap();
    assert_eq!(run.evidence.switches.expect("getrusage").voluntary, 1);
    assert!(run.hazards().contains(Hazards::CONTEXT_SWITCH));
    region.disable().unwrap();
}

#[test]
fn names_the_direct_backend_cannot_count() {
    let pool = CounterPool::new(fake_pmu());
    assert!(matches!(
        allocate(&pool, &["task-clock"], PrivilegeFilter::USER),
        Err(Error::Event(crate::error::EventError::NotDirect { .. }))
    ));
    assert!(matches!(
        allocate(&pool, &["cyclez"], PrivilegeFilter::USER),
        Err(Error::Event(crate::error::EventError::Unknown { .. }))
    ));
    assert!(matches!(
        allocate(&pool, &["cpu/event=1/"], PrivilegeFilter::USER),
        Err(Error::Event(crate::error::EventError::NotDirect { .. }))
    ));
    let counters = allocate(&pool, &["instructions"], PrivilegeFilter::USER).unwrap();
    let region = |names: Vec<String>| {
        DirectRegion::with_cpu(
            &counters[..],
            Unchecked,
            [PoolRead(&counters[0], 0)],
            names,
            NoSentinel,
            crate::sentinel::Sentinel::off("by hand"),
            NoFlags,
            FakeThread::default(),
        )
    };
    assert!(matches!(
        region(vec![]).unwrap_err(),
        Error::Pmu(crate::error::PmuError::Core(
            pmu_core::Error::ReadingsMismatch {
                expected: 1,
                got: 0
            }
        ))
    ));
    assert!(region(vec!["instructions".into()]).is_ok());
    let none: [PoolRead<'_, '_>; 0] = [];
    assert!(matches!(
        DirectRegion::with_cpu(
            &counters[..0],
            Unchecked,
            none,
            vec![],
            NoSentinel,
            crate::sentinel::Sentinel::off("by hand"),
            NoFlags,
            FakeThread::default(),
        )
        .unwrap_err(),
        Error::Group(crate::error::GroupError::NoEvents)
    ));
}

/// The ARM1176 driver of pmu-armv6 over its fake registers: the CCR is the cycle
/// counter, and it cannot filter by privilege (ARM1176JZF-S TRM 3.2.51).
#[test]
fn arm1176_counts_in_every_mode() {
    use pmu_armv6::fake::FakeRegisters;
    use pmu_armv6::{Arm1176Pmu, CycleDivider};
    let pool = CounterPool::new(Arm1176Pmu::with_registers(
        FakeRegisters::new(),
        CycleDivider::EveryCycle,
    ));
    assert!(matches!(
        allocate(&pool, &["cycles"], PrivilegeFilter::USER),
        Err(Error::Pmu(crate::error::PmuError::Core(
            pmu_core::Error::FilterUnsupported { .. }
        )))
    ));
    let counters = allocate(&pool, &["cycles"], PrivilegeFilter::ALL).unwrap();
    assert_eq!(counters[0].slot(), Slot::Fixed(0));
}

/// An ARM1176 pool over the fake registers (pmu-armv6 `fake`: TRM Table 3-136's
/// write-1-to-clear flags, 32-bit wrap raising the flag, PMCR.D's /64).
fn arm1176_pool(
    divider: pmu_armv6::CycleDivider,
) -> CounterPool<pmu_armv6::Arm1176Pmu<pmu_armv6::fake::FakeRegisters>> {
    CounterPool::new(pmu_armv6::Arm1176Pmu::with_registers(
        pmu_armv6::fake::FakeRegisters::new(),
        divider,
    ))
}

/// Event mapping of the direct ARM1176 backend, against two PMCR values built from the
/// ARM1176JZF-S TRM (3.2.51, Table 3-137): 0x00705707 (CR0 instructions = 0x07 in bits
/// 27:20, CR1 branches = 0x05 in bits 19:12) and 0x0000b707 (CR0 instruction cache
/// misses = 0x00, CR1 data cache misses = 0x0B). The low bits 0x707 are the resets and
/// flag clears a program writes along (actions, not state); what stays in PMCR is E and
/// the two event fields. `cycles` is the CCR.
#[test]
fn arm1176_event_mapping_matches_the_trm_pmcr_layout() {
    use pmu_armv6::pmcr::PMCR;
    use pmu_armv6::{CounterRegister, CycleDivider};
    const STATE: u32 = 0x0FFF_F009; // EvtCount0, EvtCount1, D, E
    let pool = arm1176_pool(CycleDivider::EveryCycle);
    let counters = allocate(
        &pool,
        &["cycles", "instructions", "branches"],
        PrivilegeFilter::ALL,
    )
    .unwrap();
    let slots: Vec<Slot> = counters.iter().map(Counter::slot).collect();
    assert_eq!(
        slots,
        [Slot::Fixed(0), Slot::Programmable(0), Slot::Programmable(1)]
    );
    counters.iter().for_each(Counter::start);
    let regs = pool.pmu().registers();
    assert_eq!(regs.state().get() & STATE, 0x0070_5707 & STATE);
    // Arbitrary counts: 452 cycles, 68 instructions, 12 branches.
    regs.tick(pmu_armv6::Arm1176Event::CycleCount, 452);
    regs.tick(pmu_armv6::Arm1176Event::InstructionExecuted, 68);
    regs.tick(pmu_armv6::Arm1176Event::BranchExecuted, 12);
    assert_eq!(
        counters.iter().map(Counter::read).collect::<Vec<_>>(),
        [452, 68, 12]
    );
    drop(counters);

    let pool = arm1176_pool(CycleDivider::EveryCycle);
    let counters = allocate(
        &pool,
        &["L1-icache-load-misses", "r0b"],
        PrivilegeFilter::ALL,
    )
    .unwrap();
    counters.iter().for_each(Counter::start);
    let state = pool.pmu().registers().state();
    assert_eq!(state.get() & STATE, 0x0000_b707 & STATE);
    assert!(state.is_set(PMCR::E));
    assert_eq!(
        pmu_armv6::pmcr::event(state, CounterRegister::Cr1),
        Ok(pmu_armv6::Arm1176Event::DataCacheMiss)
    );
    // 0x08 is reserved (TRM Table 3-137); a third programmable event has no counter.
    assert_eq!(
        format!(
            "{:?}",
            allocate(
                &arm1176_pool(CycleDivider::EveryCycle),
                &["r08"],
                PrivilegeFilter::ALL
            )
        ),
        format!(
            "{:?}",
            Err::<(), Error>(Error::Pmu(crate::error::PmuError::Core(
                pmu_core::Error::EventNotImplemented { code: 8 }
            )))
        )
    );
    assert_eq!(
        format!(
            "{:?}",
            allocate(
                &arm1176_pool(CycleDivider::EveryCycle),
                &["instructions", "branches", "branch-misses"],
                PrivilegeFilter::ALL
            )
        ),
        format!(
            "{:?}",
            Err::<(), Error>(Error::Pmu(crate::error::PmuError::Core(
                pmu_core::Error::NoFreeCounter { available: 2 }
            )))
        )
    );
}

// The ARMv7 backend's CPU test (direct::aarch32 uses these), on the host.
use crate::direct::probe::{cpuinfo_architecture, cpuinfo_is_armv7};

/// /proc/cpuinfo of a Raspberry Pi 2 (Cortex-A7 r0p5) under Raspberry Pi OS armhf, as
/// Linux's `c_show()` (arch/arm/kernel/setup.c, 6.12) prints it: "CPU architecture: 7".
const PI2: &str = "processor\t: 0\nmodel name\t: ARMv7 Processor rev 5 (v7l)\n\
    BogoMIPS\t: 38.40\nFeatures\t: half thumb fastmult vfp edsp neon vfpv3 tls vfpv4 \
    idiva idivt vfpd32 lpae evtstrm\nCPU implementer\t: 0x41\nCPU architecture: 7\n\
    CPU variant\t: 0x0\nCPU part\t: 0xc07\nCPU revision\t: 5\n";
/// A Raspberry Pi 1 (ARM1176JZF-S r0p7): "CPU architecture: 7" too, since
/// `__get_cpu_architecture()` finds VMSAv7 in its ID_MMFR0; the part tells it apart.
const PI1: &str = "processor\t: 0\nmodel name\t: ARMv6-compatible processor rev 7 (v6l)\n\
    CPU implementer\t: 0x41\nCPU architecture: 7\nCPU variant\t: 0x0\nCPU part\t: 0xb76\n";

#[test]
fn cpuinfo_tells_armv7_from_the_arm1176() {
    assert_eq!(cpuinfo_architecture(PI2), Some("7"));
    assert!(cpuinfo_is_armv7(PI2));
    assert_eq!(cpuinfo_architecture(PI1), Some("7"));
    assert!(!cpuinfo_is_armv7(PI1));
    // A Cortex-A15 (part 0xc0f), and an arm64 kernel's "CPU architecture: 8".
    assert!(cpuinfo_is_armv7(&PI2.replace("0xc07", "0xc0f")));
    assert!(!cpuinfo_is_armv7(
        &PI2.replace("architecture: 7", "architecture: 8")
    ));
    assert_eq!(cpuinfo_architecture("processor : 0\n"), None);
    assert!(!cpuinfo_is_armv7(""));
}

/// The backend's own sentinel goes on the counter allocated after the region's events
/// (`OwnedCounters::allocate_with_extra`); not asked for, it is off with the switched-off
/// reason; with no counter left, off with the allocation's reason (pmu-core's fake PMU
/// of 2 counters: two events leave none).
#[test]
fn the_own_sentinel_takes_the_counter_after_the_events() {
    use crate::direct::region::handles_and_own_sentinel;
    let inst = pmu_core::Event::Generic(pmu_core::GenericEvent::Instructions);
    let describe = |slot: Slot| Ok(("instructions".to_owned(), format!("on {slot:?}")));
    let open = |events: usize, asked: bool| {
        let placed = vec![(inst, None); events];
        let extra = if asked {
            vec![(inst, PrivilegeFilter::KERNEL)]
        } else {
            vec![]
        };
        let (counters, error) =
            OwnedCounters::allocate_with_extra(fake_pmu(), &placed, PrivilegeFilter::USER, &extra)
                .unwrap();
        handles_and_own_sentinel(&counters, events, asked, error, Ok, describe).unwrap()
    };

    let (handles, sentinel, state) = open(1, true);
    assert_eq!(handles, [Slot::Programmable(0)]);
    assert_eq!(sentinel, Some(Slot::Programmable(1)));
    assert_eq!(
        state,
        crate::sentinel::Sentinel::Counting {
            event: "instructions".into(),
            how: "on Programmable(1)".into()
        }
    );

    let (_, sentinel, state) = open(1, false);
    assert_eq!(sentinel, None);
    assert_eq!(
        state,
        crate::sentinel::Sentinel::off(crate::sentinel::SWITCHED_OFF)
    );

    let (handles, sentinel, state) = open(2, true);
    assert_eq!(handles.len(), 2);
    assert_eq!(sentinel, None);
    assert!(
        matches!(&state, crate::sentinel::Sentinel::Off { why } if why.starts_with("no counter left for it")),
        "{state}"
    );
}

/// Which cores have no read-only grant: Arm's ARMv7-A Cortex parts (Linux 6.12
/// arch/arm/include/asm/cputype.h: `ARM_CPU_PART_CORTEX_A7` 0x4100c070, `_A15`
/// 0x4100c0f0), whose PMUSERENR has EN alone (DDI 0406C C12); not the ARMv8 ones
/// (`_A53` 0x4100d030, `_A72` 0x4100d080; QEMU's `max` in AArch32 reports part 0xd07,
/// tests/tests/kernel_armv7.rs), and not other implementers' parts.
#[test]
fn armv7_cores_have_no_read_only_grant() {
    use super::probe::armv7_core_without_read_only_grant as without;
    assert_eq!(without((0x41, 0xc07)), Some("Cortex-A7"));
    assert_eq!(without((0x41, 0xc0f)), Some("Cortex-A15"));
    assert_eq!(without((0x41, 0xc09)), Some("Cortex-A9"));
    for armv8 in [0xd03, 0xd08, 0xd0b, 0xd07] {
        assert_eq!(without((0x41, armv8)), None, "{armv8:#x}");
    }
    assert_eq!(without((0x51, 0xc07)), None);
    assert_eq!(without((0x41, 0xb76)), None);
    let e = Error::Access(crate::error::AccessError::NoReadOnlyGrant {
        core: "Cortex-A7".into(),
    })
    .to_string();
    for needle in [
        // What the guests match for a CPU without access (tests/src/lib.rs NOT_ENABLED).
        "user access to the PMU is not enabled: load kmod-enable-user",
        "(Cortex-A7, ARMv7 PMU) has no read-only grant",
        "refuses its default load here",
        "el0_programming=1",
    ] {
        assert!(e.contains(needle), "`{needle}` missing: {e}");
    }
}

/// A read of the AArch32 read-only grant on pmu-armv7's fake register file: the path
/// `pmu_armv7::granted::read_path` gives the slot (PMSELR + PMXEVCNTR, or PMCCNTR), as
/// the ARMv7 backend's table reads it on the target.
#[derive(Debug)]
struct Aarch32Read<'r>(
    &'r pmu_armv7::fake::FakeRegisters,
    pmu_armv7::reader::ReadPath,
);

impl pmu_core::CounterRead for Aarch32Read<'_> {
    fn read(&self) -> u64 {
        use pmu_armv7::reader::ReadPath;
        use pmu_armv7::PmuRegisters;
        u64::from(match self.1 {
            ReadPath::Selected(n) | ReadPath::Pmevcntr(n) => self.0.pmxevcntr(n),
            ReadPath::Pmccntr => self.0.pmccntr(),
        })
    }
    fn overflow_mask(&self) -> u64 {
        u64::from(self.1.counter().mask())
    }
}

/// The ARMv7 backend's read-only region, off the target: kmod-enable-user's ARMv7
/// flavour `apply`s its default grant on a fake Cortex-A53 in AArch32 (ER, INST_RETIRED
/// on counter 5, CPU_CYCLES on counter 4: the `5=0x8 4=0x11` that
/// tests/tests/kernel_armv7.rs reads on QEMU's `max`); the region takes its slots from
/// the layout (`grant::place_in_layout`), its access check from PMUSERENR
/// (`ReadGrant`), no overflow flags. Exact counts; a wrap of the 32-bit event counter
/// counting cycles flagged as overflow (end < start) with the right value; the grant revoked between
/// two regions (PMUSERENR = 0, as a CPU power-down leaves it) an error, not a count.
#[test]
fn the_aarch32_read_only_grant_region() {
    use pmu_armv7::fake::FakeRegisters;
    use pmu_armv7::granted::{read_path, GrantedLayout, GrantedPmu, ReadGrant, RegisterReads};
    use pmu_armv7::user_enable::{
        apply, Layout, ModuleEvents, Request, UserAccess, UserAccessRegisters, DEFAULT_USER_ACCESS,
    };
    use pmu_armv8::EventNumber;

    let regs = FakeRegisters::cortex_a53_aarch32();
    let module = Layout::new(
        6,
        ModuleEvents::from_slice(&[EventNumber::INST_RETIRED.get()]).unwrap(),
        true,
    )
    .unwrap();
    let mut buf = [0u8; 64];
    let len = module.write_text(&mut buf);
    let text = std::str::from_utf8(&buf[..len]).unwrap().to_owned();
    assert_eq!(text, "5=0x8 4=0x11");
    let request = Request {
        user_access: UserAccess::new(DEFAULT_USER_ACCESS, false).unwrap(),
        layout: module,
    };
    apply(&regs, request, None, 0).unwrap();
    assert_eq!(regs.pmuserenr().get(), 0b1000);

    let layout = GrantedLayout::parse(&text).unwrap();
    let names = vec!["instructions".to_owned(), "cycles".to_owned()];
    let wanted = [
        pmu_core::Event::Generic(pmu_core::GenericEvent::Instructions),
        pmu_core::Event::Generic(pmu_core::GenericEvent::CpuCycles),
    ];
    let placed = grant::place_in_layout(&layout, &text, &wanted, &names).unwrap();
    let counters = OwnedCounters::allocate(
        GrantedPmu::new(layout, RegisterReads(&regs)),
        &placed,
        PrivilegeFilter::USER,
    )
    .unwrap();
    let slots: Vec<Slot> = counters.slots().collect();
    let handles = [
        Aarch32Read(&regs, read_path(&layout, slots[0]).unwrap()),
        Aarch32Read(&regs, read_path(&layout, slots[1]).unwrap()),
    ];
    assert_eq!(
        handles[0].1,
        pmu_armv7::reader::ReadPath::Selected(5),
        "INST_RETIRED is on event counter 5"
    );
    let grant = ReadGrant::for_layout(&layout);
    let granted = || grant.allows(regs.pmuserenr());
    let thread = FakeThread::default();
    let mut region = DirectRegion::with_cpu(
        counters,
        granted,
        handles,
        names,
        NoSentinel,
        crate::sentinel::Sentinel::off("the ARMv7 flavour runs none"),
        NoFlags,
        &thread,
    )
    .unwrap();
    region.enable().unwrap();
    let run = measure_once(&mut region, &mut || {
        regs.count(EventNumber::INST_RETIRED, 2000);
        regs.count(EventNumber::CPU_CYCLES, 3000);
    })
    .unwrap();
    assert_eq!(run.readings[0].value, 2000);
    assert_eq!(run.readings[1].value, 3000);
    assert!(run.is_trusted(), "{run:?}");

    // The 32-bit event counter counting cycles wraps inside the region: no flag to read
    // without EN, end < start flags it, and the 32-bit difference is the count.
    regs.count(EventNumber::CPU_CYCLES, u32::MAX - 3000 - 10);
    let run = measure_once(&mut region, &mut || {
        regs.count(EventNumber::CPU_CYCLES, 100);
    })
    .unwrap();
    assert_eq!(run.readings[1].value, 100);
    assert!(run.readings[1].hazards.contains(Hazards::OVERFLOW));
    assert!(!run.readings[0].hazards.contains(Hazards::OVERFLOW));

    // The grant gone: the region refuses instead of reading (a real read would trap).
    regs.set_user_enable(0);
    let revoked = measure_once(&mut region, &mut || {}).unwrap_err();
    assert!(
        matches!(revoked, Error::Access(crate::error::AccessError::Revoked)),
        "{revoked:?}"
    );
}

/// An EL0 read of counter `.1` on a fake PMUv3 CPU, by the Arm ARM rules the fake
/// applies (`FakeUserAccess::el0_value`: RAZ under UEN where PMUACR_EL1 does not open
/// the counter). A read the access check let through must not trap.
struct Armv8El0Read<'r>(&'r pmu_armv8::fake::FakeUserAccess, u8);

impl pmu_core::CounterRead for Armv8El0Read<'_> {
    fn read(&self) -> u64 {
        self.0
            .el0_value(self.1)
            .expect("a read the access check let through trapped")
    }
    fn overflow_mask(&self) -> u64 {
        1 << self.1
    }
}

impl pmu_armv8::granted::CounterReads for Armv8El0Read<'_> {
    fn event_counter(&self, counter: pmu_armv8::EventCounter) -> u64 {
        pmu_core::CounterRead::read(&Armv8El0Read(self.0, counter.index()))
    }
    fn cycle_counter(&self) -> u64 {
        pmu_core::CounterRead::read(&Armv8El0Read(self.0, 31))
    }
}

/// The ARMv8 backend's read-only region on a PMUv3p9 CPU next to Linux 6.13+'s perf,
/// off the target: kmod-enable-user's arm64 `apply` grants on a fake PMUv3p9 CPU (UEN |
/// TID | ER | CR, PMUACR_EL1 = its counters 5 and 4: the `5=0x8 4=0x11` layout for N =
/// 6), the region reads the counters as EL0 would and checks the grant with
/// `GrantedLayout::reads_granted` at both edges (what `PmuserenrRead` does on the
/// target). Exact counts under the module's grant; once perf's `armv8pmu_start()` hands
/// the CPU to a task with rdpmc events (Linux 7.3.4 `armv8pmu_enable_user_access()`:
/// PMUACR_EL1 = that task's counter 0, PMUSERENR_EL0 = UEN | ER | CR), the module's
/// counters read as 0 without a trap, and the region refuses instead of reporting 0
/// (the check before PMUv3p9, ER present, let it through).
#[test]
fn the_armv8_read_only_grant_on_pmuv3p9_says_why_instead_of_zero() {
    use pmu_armv8::fake::FakeUserAccess;
    use pmu_armv8::granted::{GrantedLayout, GrantedPmu};
    use pmu_armv8::user_enable::{
        apply, Layout, ModuleEvents, Request, UserAccess, DEFAULT_USER_ACCESS,
    };
    use pmu_armv8::EventNumber;

    // ID_AA64DFR0_EL1.PMUVer = 0b1001 (FEAT_PMUv3p9); PMCR_EL0 N = 6 (QEMU's
    // 0x41013000); PMCEID0_EL0 with 0x08 and 0x11.
    let cpu = FakeUserAccess::new(0x9 << 8, 0x4101_3000, 0x2_0101, 0);
    let module = Layout::new(
        6,
        ModuleEvents::from_slice(&[EventNumber::INST_RETIRED.get()]).unwrap(),
        true,
    )
    .unwrap();
    let mut buf = [0u8; 64];
    let len = module.write_text(&mut buf);
    let text = std::str::from_utf8(&buf[..len]).unwrap().to_owned();
    assert_eq!(text, "5=0x8 4=0x11");
    let request = Request {
        user_access: UserAccess::new(DEFAULT_USER_ACCESS, false).unwrap(),
        layout: module,
    };
    apply(&cpu, request, None, 0).unwrap();

    let layout = GrantedLayout::parse(&text).unwrap();
    let names = vec!["instructions".to_owned(), "cycles".to_owned()];
    let wanted = [
        pmu_core::Event::Generic(pmu_core::GenericEvent::Instructions),
        pmu_core::Event::Generic(pmu_core::GenericEvent::CpuCycles),
    ];
    let placed = grant::place_in_layout(&layout, &text, &wanted, &names).unwrap();
    let counters = OwnedCounters::allocate(
        GrantedPmu::new(layout, Armv8El0Read(&cpu, 0)),
        &placed,
        PrivilegeFilter::USER,
    )
    .unwrap();
    let handles = [Armv8El0Read(&cpu, 5), Armv8El0Read(&cpu, 4)];
    let granted = || layout.reads_granted(cpu.user_enable()).is_ok();
    let thread = FakeThread::default();
    let mut region = DirectRegion::with_cpu(
        counters,
        granted,
        handles,
        names,
        NoSentinel,
        crate::sentinel::Sentinel::off("the module runs none here"),
        NoFlags,
        &thread,
    )
    .unwrap();
    region.enable().unwrap();
    let count = |n: u8, by: u64| cpu.set_counter(n, cpu.counter(n) + by);
    let run = measure_once(&mut region, &mut || {
        count(5, 2000);
        count(4, 3000);
    })
    .unwrap();
    assert_eq!(run.readings[0].value, 2000);
    assert_eq!(run.readings[1].value, 3000);

    // perf's rdpmc task: PMUACR_EL1 = its counter 0, PMUSERENR_EL0 = UEN | ER | CR.
    cpu.preset_user_access(0b1_1100, 1);
    assert_eq!(cpu.el0_value(5), Some(0));
    let refused = measure_once(&mut region, &mut || count(5, 2000)).unwrap_err();
    assert!(
        matches!(refused, Error::Access(crate::error::AccessError::Revoked)),
        "{refused:?}"
    );
}
