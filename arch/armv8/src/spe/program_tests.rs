//! The programming sequences against the recording fake: exact order, values and barriers,
//! no forbidden sequence, and the no-SPE path that touches nothing.

use std::vec::Vec;

use super::*;
use crate::spe::config::{OperationTypes, TimestampSource};
use crate::spe::events::SpeEvents;
use crate::spe::fake::{RecordingSpe, SpeAccess, Violation};
use crate::spe::version::SpeVersion;

/// ID_AA64DFR0_EL1 with PMSVer = 3 (FEAT_SPEv1p2, bits [35:32]).
const DFR0_V1P2: u64 = 3 << 32;
/// PMSIDR_EL1: FE, FT, FL, FnE, Interval 1024, MaxSize 64 B, 12-bit counters.
const PMSIDR_V1P2: u64 = 0x2_6447;
/// PMBIDR_EL1: Align 0b0110 (64 bytes), P = 0.
const PMBIDR_ALIGN64: u64 = 6;

fn pe() -> RecordingSpe {
    RecordingSpe::new(DFR0_V1P2, PMBIDR_ALIGN64, PMSIDR_V1P2)
}

fn caps() -> SpeCapabilities {
    SpeCapabilities::decode_raw(SpeVersion::V1p2, PMSIDR_V1P2, PMBIDR_ALIGN64)
}

/// The memory-latency recipe (LLC miss, Arm ARM D24.7.11), with timestamps.
fn memory_latency() -> SpeConfig {
    SpeConfigBuilder::new()
        .operation_types(OperationTypes::LOADS)
        .min_latency(120)
        .require_events(SpeEvents::LLC_MISS)
        .interval(4096)
        .timestamps(TimestampSource::Physical)
        .exception_levels(crate::spe::config::ExceptionLevels::EL0)
        .build(&caps())
        .unwrap()
}

const BASE: u64 = 0x4000_0000;
const SIZE: u64 = 0x10_0000;

fn log(pe: &RecordingSpe) -> Vec<SpeAccess> {
    pe.log().copied().collect()
}

/// The whole sequence, access by access: PMSCR_EL1 = 0 and isb before anything else; drain,
/// stop the buffer, read and clear PMBSR_EL1, pointer before limit, isb; then PMSLATFR,
/// PMSEVFR, PMSNEVFR, PMSFCR, PMSIRR, isb, PMSICR (Linux arm_spe_pmu_start()), isb, PMSCR_EL1,
/// isb. Values: the memory-latency recipe with LLC miss (0x200).
#[test]
fn start_sequence_exact() {
    use super::Barrier::{DsbNsh, Isb, PsbCsync};
    use SpeAccess::{Barrier as Sync, Read, Write};
    use SpeRegister::*;
    let mut pe = pe();
    let config = memory_latency();
    let buffer = ProfilingBuffer::new(BASE, SIZE, &caps()).unwrap();
    // SAFETY: the fake has no real buffer; nothing is written to memory.
    let previous = unsafe { start(&mut pe, &config, &buffer) };
    assert_eq!(previous, None);
    assert_eq!(
        log(&pe),
        [
            Write(Pmscr, 0),
            Sync(Isb),
            Sync(PsbCsync),
            Sync(DsbNsh),
            Write(Pmblimitr, 0),
            Sync(Isb),
            Read(Pmbsr, 0),
            Write(Pmbsr, 0),
            Write(Pmbptr, BASE),
            Write(Pmblimitr, (BASE + SIZE) | 1),
            Sync(Isb),
            Write(Pmslatfr, 120),
            Write(Pmsevfr, 0x200),
            Write(Pmsnevfr, 0),
            Write(Pmsfcr, 0x2_0007),
            Write(Pmsirr, 4096),
            Sync(Isb),
            Write(Pmsicr, 0),
            Sync(Isb),
            Write(Pmscr, 0b0110_0001),
            Sync(Isb),
        ]
    );
    assert_eq!(pe.violations().count(), 0);
}

/// Stop: disable, isb, psb csync, dsb nsh, read pointer and status, disable the buffer, isb
/// (Linux arm_spe_pmu_disable_and_drain_local()).
#[test]
fn stop_sequence_exact() {
    use super::Barrier::{DsbNsh, Isb, PsbCsync};
    use SpeAccess::{Barrier as Sync, Read, Write};
    use SpeRegister::*;
    let mut pe = pe();
    let buffer = ProfilingBuffer::new(BASE, SIZE, &caps()).unwrap();
    // SAFETY: fake register file.
    unsafe { start(&mut pe, &memory_latency(), &buffer) };
    // The profiling unit wrote 0x240 bytes.
    pe.set(Pmbptr, BASE + 0x240);
    pe.clear_log();
    // SAFETY: fake register file.
    let end = unsafe { stop(&mut pe) };
    assert_eq!(
        log(&pe),
        [
            Write(Pmscr, 0),
            Sync(Isb),
            Sync(PsbCsync),
            Sync(DsbNsh),
            Read(Pmbptr, BASE + 0x240),
            Read(Pmbsr, 0),
            Write(Pmblimitr, 0),
            Sync(Isb),
        ]
    );
    assert_eq!(end.bytes_written(&buffer), 0x240);
    assert_eq!(end.check(), Ok(()));
    assert_eq!(pe.violations().count(), 0);
}

/// Without FEAT_SPE_FnE, PMSNEVFR_EL1 is UNDEFINED and never written.
#[test]
fn no_pmsnevfr_without_fne() {
    let pmsidr = PMSIDR_V1P2 & !(1 << 6);
    let mut pe = RecordingSpe::new(2 << 32, 0, pmsidr);
    let caps = SpeCapabilities::decode_raw(SpeVersion::V1p1, pmsidr, 0);
    let config = SpeConfigBuilder::new().build(&caps).unwrap();
    // SAFETY: fake register file.
    unsafe { program_filters(&mut pe, &config) };
    assert!(pe.writes().all(|(r, _)| r != SpeRegister::Pmsnevfr));
    assert_eq!(pe.violations().count(), 0);
}

/// PMSDSFR_EL1 (FEAT_SPE_FDS, PMSIDR_EL1.FDS bit 7) is written with the other filters while
/// sampling is off, here before PMSFCR_EL1 (Linux 7.3 arm_spe_pmu_start() writes it just
/// after PMSFCR_EL1; either order is synchronized by the same isb); without FDS it is
/// UNDEFINED and never written.
#[test]
fn pmsdsfr_only_with_fds() {
    let pmsidr = PMSIDR_V1P2 | 1 << 7;
    let mut with_fds = RecordingSpe::new(DFR0_V1P2, 0, pmsidr);
    let fds_caps = SpeCapabilities::decode_raw(SpeVersion::V1p2, pmsidr, 0);
    let config = SpeConfigBuilder::new()
        .data_sources(0x9)
        .build(&fds_caps)
        .unwrap();
    // SAFETY: fake register file.
    unsafe { program_filters(&mut with_fds, &config) };
    let writes: Vec<_> = with_fds.writes().collect();
    let at = |r| writes.iter().position(|&(w, _)| w == r).unwrap();
    assert!(writes.contains(&(SpeRegister::Pmsdsfr, 0x9)));
    assert!(at(SpeRegister::Pmsdsfr) < at(SpeRegister::Pmsfcr));
    assert_eq!(with_fds.violations().count(), 0);

    // The v1p2 PE of the other tests has no FDS.
    let mut without = pe();
    let config = SpeConfigBuilder::new().build(&caps()).unwrap();
    // SAFETY: fake register file.
    unsafe { program_filters(&mut without, &config) };
    assert!(without.writes().all(|(r, _)| r != SpeRegister::Pmsdsfr));
    assert_eq!(without.violations().count(), 0);
}

/// QEMU `-cpu max` (PMSVer = 0): `apply_if_present_with` returns NotImplemented after reading
/// only ID_AA64DFR0_EL1; no SPE register is touched. This is the path the aarch64 QEMU image
/// exercises with `apply_if_present`.
#[test]
fn no_spe_touches_nothing() {
    let mut pe = RecordingSpe::qemu_max();
    let request = SpeConfigBuilder::new().interval(4096);
    // SAFETY: fake register file.
    let result = unsafe { apply_if_present_with(&mut pe, &request, BASE, SIZE) };
    assert_eq!(result, Err(SpeError::NotImplemented));
    assert_eq!(log(&pe), [SpeAccess::IdRead("ID_AA64DFR0_EL1")]);
    assert_eq!(pe.violations().count(), 0);
}

/// A buffer owned by a higher EL, an invalid request or an invalid buffer: the error comes
/// back before the first SPE write.
#[test]
fn errors_before_any_write() {
    let owned = RecordingSpe::new(DFR0_V1P2, 1 << 4, PMSIDR_V1P2);
    let bad_request = SpeConfigBuilder::new().interval(256);
    let good = SpeConfigBuilder::new();
    let cases: [(RecordingSpe, SpeConfigBuilder, u64, SpeError); 3] = [
        (owned, good, BASE, SpeError::BufferOwnedByHigherEl),
        (
            pe(),
            bad_request,
            BASE,
            SpeError::IntervalBelowMinimum {
                value: 256,
                min: 1024,
            },
        ),
        (
            pe(),
            good,
            BASE + 0x20,
            SpeError::MisalignedPointer {
                address: BASE + 0x20,
                align: 64,
            },
        ),
    ];
    for (mut pe, request, base, want) in cases {
        // SAFETY: fake register file.
        let result = unsafe { apply_if_present_with(&mut pe, &request, base, SIZE) };
        assert_eq!(result, Err(want));
        assert_eq!(pe.writes().count(), 0, "{want:?}");
    }
}

/// A successful apply returns what it programmed.
#[test]
fn apply_when_present() {
    let mut pe = pe();
    let request = SpeConfigBuilder::new().require_events(SpeEvents::LLC_MISS);
    // SAFETY: fake register file.
    let applied = unsafe { apply_if_present_with(&mut pe, &request, BASE, SIZE) }.unwrap();
    assert_eq!(applied.capabilities.version, SpeVersion::V1p2);
    assert_eq!(applied.config.registers().pmsevfr, 0x200);
    assert_eq!(applied.config.warnings().count(), 1);
    assert_eq!(pe.value(SpeRegister::Pmscr), 0b11);
    assert_eq!(pe.violations().count(), 0);
}

/// The fake catches the mistakes the sequences avoid, so the tests above can fail: a filter
/// write while sampling is on, enabling without an isb, the UNDEFINED PMSNEVFR_EL1.
#[test]
fn fake_detects_violations() {
    let mut pe = RecordingSpe::new(2 << 32, 0, PMSIDR_V1P2 & !(1 << 6));
    // SAFETY: fake register file; the sequence is wrong on purpose.
    unsafe {
        pe.write(SpeRegister::Pmscr, 1);
        pe.barrier(Barrier::Isb);
        pe.write(SpeRegister::Pmsfcr, 1);
        pe.write(SpeRegister::Pmsnevfr, 1);
        pe.write(SpeRegister::Pmscr, 1);
    }
    let v: Vec<_> = pe.violations().copied().collect();
    assert_eq!(
        v,
        [
            Violation::WriteWhileSampling(SpeRegister::Pmsfcr),
            Violation::Undefined(SpeRegister::Pmsnevfr),
            Violation::WriteWhileSampling(SpeRegister::Pmsnevfr),
            Violation::EnabledBeforeIsb,
        ]
    );
    // Writing the filters right after PMSCR_EL1 = 0 but before the isb is also caught.
    let mut pe = self::pe();
    // SAFETY: fake register file; wrong on purpose.
    unsafe {
        pe.write(SpeRegister::Pmscr, 1);
        pe.barrier(Barrier::Isb);
        pe.write(SpeRegister::Pmscr, 0);
        pe.write(SpeRegister::Pmslatfr, 5);
    }
    assert_eq!(
        pe.violations().copied().collect::<Vec<_>>(),
        [Violation::WriteWhileSampling(SpeRegister::Pmslatfr)]
    );
}

/// Reprogramming while a session runs disables sampling first (the fake would flag it).
#[test]
fn reprogramming_a_running_session() {
    let mut pe = pe();
    let buffer = ProfilingBuffer::new(BASE, SIZE, &caps()).unwrap();
    let other = SpeConfigBuilder::new()
        .operation_types(OperationTypes::BRANCHES)
        .exclude_events(SpeEvents::MISPREDICTED)
        .build(&caps())
        .unwrap();
    // SAFETY: fake register file.
    unsafe {
        start(&mut pe, &memory_latency(), &buffer);
        program_filters(&mut pe, &other);
        enable(&mut pe, &other);
    }
    assert_eq!(pe.violations().count(), 0);
    assert_eq!(pe.value(SpeRegister::Pmsnevfr), 0x80);
    assert_eq!(pe.value(SpeRegister::Pmsfcr), 0x1_000A);
}

/// A management event left in PMBSR_EL1 is returned by the setup and cleared; a fault
/// reported at stop is an error (Arm ARM D24.7.5; Linux arm_spe_pmu_buf_get_fault_act()).
#[test]
fn buffer_status_checks() {
    let mut pe = pe();
    // S = 1, EC = stage 1 data abort, FSC = translation fault level 3.
    let fault = (1 << 17) | (0b10_0100 << 26) | 0b00_0111;
    pe.set(SpeRegister::Pmbsr, fault);
    let buffer = ProfilingBuffer::new(BASE, SIZE, &caps()).unwrap();
    // SAFETY: fake register file.
    let previous = unsafe { start(&mut pe, &memory_latency(), &buffer) }.unwrap();
    assert_eq!(
        previous.event,
        crate::spe::pmbsr_el1::ManagementEvent::Stage1DataAbort { fsc: 0b111 }
    );
    assert_eq!(pe.value(SpeRegister::Pmbsr), 0);
    pe.set(SpeRegister::Pmbsr, fault);
    // SAFETY: fake register file.
    let end = unsafe { stop(&mut pe) };
    assert!(matches!(
        end.check(),
        Err(SpeError::BufferManagementEvent { .. })
    ));
    // Buffer full (S, EC = 0, BSC = 1) is the normal end of a fill-mode session.
    pe.set(SpeRegister::Pmbsr, (1 << 17) | 1);
    // SAFETY: fake register file.
    assert_eq!(unsafe { stop(&mut pe) }.check(), Ok(()));
}

/// Buffer validation: PMBIDR_EL1.Align for the base, 4 KiB for the limit (PMBLIMITR_EL1 has
/// no bits [11:0]), at least one PMSIDR_EL1.MaxSize record, no wrap.
#[test]
fn buffer_validation() {
    let caps = caps();
    assert!(ProfilingBuffer::new(BASE, 4096, &caps).is_ok());
    assert_eq!(
        ProfilingBuffer::new(BASE + 8, 4096 - 8, &caps),
        Err(SpeError::MisalignedPointer {
            address: BASE + 8,
            align: 64
        })
    );
    assert_eq!(
        ProfilingBuffer::new(BASE, 4000, &caps),
        Err(SpeError::MisalignedLimit {
            address: BASE + 4000
        })
    );
    assert_eq!(
        ProfilingBuffer::new(BASE + 4096 - 64, 64 + 4096, &caps).map(|b| b.limit()),
        Ok(BASE + 8192)
    );
    assert_eq!(
        ProfilingBuffer::new(BASE + 4096 - 64, 32, &caps),
        Err(SpeError::MisalignedLimit {
            address: BASE + 4096 - 32
        })
    );
    assert_eq!(
        ProfilingBuffer::new(BASE + 4096 - 64, 0, &caps),
        Err(SpeError::MisalignedLimit {
            address: BASE + 4096 - 64
        })
    );
    assert_eq!(
        ProfilingBuffer::new(0xFFFF_FFFF_FFFF_F000, 0x2000, &caps),
        Err(SpeError::BufferWrapsAround {
            base: 0xFFFF_FFFF_FFFF_F000,
            size: 0x2000
        })
    );
    let align1 = SpeCapabilities::decode_raw(SpeVersion::V1p2, PMSIDR_V1P2, 0);
    assert_eq!(
        ProfilingBuffer::new(BASE + 4096 - 16, 16, &align1),
        Err(SpeError::BufferTooSmall { size: 16, min: 64 })
    );
}
