//! perf.data files built here from the documented layout (Linux 6.12
//! tools/perf/Documentation/perf.data-file-format.txt; struct layouts from
//! tools/lib/perf/include/perf/event.h and include/uapi/linux/perf_event.h), then truncated
//! and corrupted: the reader gives the documented fields or a typed error, never a panic.

use std::vec::Vec;

use proptest::prelude::*;

use super::*;
use crate::spe::decode::records;

/// Appends `value` in the byte order under test.
fn put(out: &mut Vec<u8>, value: u64, bytes: usize, big: bool) {
    let all = if big {
        value.to_be_bytes()
    } else {
        value.to_le_bytes()
    };
    if big {
        out.extend_from_slice(&all[8 - bytes..]);
    } else {
        out.extend_from_slice(&all[..bytes]);
    }
}

/// `struct perf_event_header` + body.
fn event(record_type: u32, body: &[u8], big: bool) -> Vec<u8> {
    let mut e = Vec::new();
    put(&mut e, record_type.into(), 4, big);
    put(&mut e, 0, 2, big); // misc
    put(&mut e, (8 + body.len()) as u64, 2, big);
    e.extend_from_slice(body);
    e
}

/// `PERF_RECORD_AUXTRACE` for `cpu` with its AUX data appended.
fn auxtrace(data: &[u8], aux_offset: u64, cpu: u32, big: bool) -> Vec<u8> {
    let mut body = Vec::new();
    put(&mut body, data.len() as u64, 8, big); // size
    put(&mut body, aux_offset, 8, big); // offset
    put(&mut body, 0x1234, 8, big); // reference
    put(&mut body, cpu.into(), 4, big); // idx (one mmap per CPU)
    put(&mut body, u32::MAX.into(), 4, big); // tid = -1
    put(&mut body, cpu.into(), 4, big); // cpu
    put(&mut body, 0, 4, big); // reserved__
    let mut e = event(PERF_RECORD_AUXTRACE, &body, big);
    e.extend_from_slice(data);
    e
}

/// `PERF_RECORD_AUXTRACE_INFO` of type ARM_SPE with priv[] = {PMU type, per-CPU mmaps}.
fn auxtrace_info(pmu_type: u64, big: bool) -> Vec<u8> {
    let mut body = Vec::new();
    put(&mut body, PERF_AUXTRACE_ARM_SPE.into(), 4, big);
    put(&mut body, 0, 4, big);
    put(&mut body, pmu_type, 8, big);
    put(&mut body, 1, 8, big);
    event(PERF_RECORD_AUXTRACE_INFO, &body, big)
}

/// A `struct perf_event_attr` of `PERF_ATTR_SIZE_VER8` (136 bytes) for the arm_spe PMU:
/// load_filter (config:33), min_latency 120 (config2), period 4096, exclude_kernel.
fn spe_attr(pmu_type: u32, big: bool) -> Vec<u8> {
    let mut a = Vec::new();
    put(&mut a, pmu_type.into(), 4, big); // type
    put(&mut a, 136, 4, big); // size
    put(&mut a, 1 << 33, 8, big); // config @8
    put(&mut a, 4096, 8, big); // sample_period @16
    put(&mut a, 0, 8, big); // sample_type @24
    put(&mut a, 0, 8, big); // read_format @32
    put(&mut a, 1 << 5, 8, big); // flags @40: exclude_kernel
    put(&mut a, 0, 8, big); // wakeup_events, bp_type @48
    put(&mut a, 0x200, 8, big); // config1 @56
    put(&mut a, 120, 8, big); // config2 @64
    a.resize(128, 0);
    put(&mut a, 0x80, 8, big); // config3 @128
    assert_eq!(a.len(), 136);
    a
}

/// The SPE bytes of two records (a load and a branch), as in the decoder tests.
fn spe_bytes() -> Vec<u8> {
    let mut b = crate::spe::decode::tests::load_record();
    b.push(0xB0);
    b.extend_from_slice(&0x8000_0000_0040_1000u64.to_le_bytes());
    b.extend_from_slice(&[0x4A, 0x01, 0x42, 0x82, 0x01]);
    b
}

/// A whole perf.data file: header, one attribute (+ its ids section), then the data section:
/// a COMM-like event, AUXTRACE_INFO, CPU 0's and CPU 2's AUX data, FINISHED_ROUND.
fn file(big: bool) -> Vec<u8> {
    let spe = spe_bytes();
    let mut data = Vec::new();
    data.extend(event(3, &[0u8; 24], big));
    data.extend(auxtrace_info(10, big));
    data.extend(auxtrace(&spe, 0, 0, big));
    data.extend(auxtrace(&spe[..43], 4096, 2, big));
    data.extend(event(68, &[], big));
    let attr = spe_attr(10, big);
    let attrs_offset = 104u64;
    let attr_size = attr.len() as u64 + 16;
    let data_offset = attrs_offset + attr_size;
    let mut f = Vec::new();
    let mut magic = *b"PERFILE2";
    if big {
        magic.reverse();
    }
    f.extend_from_slice(&magic);
    put(&mut f, 104, 8, big); // size
    put(&mut f, attr_size, 8, big); // attr_size
    put(&mut f, attrs_offset, 8, big); // attrs.offset
    put(&mut f, attr_size, 8, big); // attrs.size
    put(&mut f, data_offset, 8, big); // data.offset
    put(&mut f, data.len() as u64, 8, big); // data.size
    put(&mut f, 0, 8, big); // event_types.offset
    put(&mut f, 0, 8, big); // event_types.size
    f.extend_from_slice(&[0; 32]); // feature bits
    assert_eq!(f.len(), 104);
    f.extend(attr);
    put(&mut f, 0, 8, big); // ids.offset
    put(&mut f, 0, 8, big); // ids.size
    f.extend(data);
    f
}

fn chunks(p: &PerfData<'_>) -> Vec<(u32, u64, usize)> {
    p.events()
        .filter_map(|e| match e.unwrap() {
            PerfDataEvent::Auxtrace(c) => Some((c.cpu, c.aux_offset, c.data.len())),
            _ => None,
        })
        .collect()
}

#[test]
fn reads_the_documented_layout_in_both_byte_orders() {
    for big in [false, true] {
        let bytes = file(big);
        let p = PerfData::parse(&bytes).unwrap();
        assert_eq!(p.endian(), if big { Endian::Big } else { Endian::Little });
        assert!(!p.is_pipe());
        let attrs: Vec<_> = p.attrs().collect();
        assert_eq!(attrs.len(), 1);
        let a = attrs[0].unwrap();
        assert_eq!((a.pmu_type, a.size, a.offset), (10, 136, 104));
        assert_eq!(
            (a.config, a.config1, a.config2, a.config3),
            (1 << 33, 0x200, 120, 0x80)
        );
        assert_eq!(a.sample_period, 4096);
        assert!(a.exclude_kernel && !a.exclude_user);
        let events: Vec<_> = p.events().map(Result::unwrap).collect();
        assert_eq!(events.len(), 5);
        assert!(matches!(
            events[0],
            PerfDataEvent::Other { record_type: 3, .. }
        ));
        assert!(matches!(
            events[1],
            PerfDataEvent::AuxtraceInfo {
                auxtrace_type: PERF_AUXTRACE_ARM_SPE,
                spe_pmu_type: Some(10),
                ..
            }
        ));
        assert_eq!(chunks(&p), [(0, 0, 66), (2, 4096, 43)]);
        // The AUX bytes are the SPE records, byte for byte.
        let PerfDataEvent::Auxtrace(c) = events[2] else {
            panic!()
        };
        assert_eq!(c.data, &spe_bytes()[..]);
        assert_eq!((c.tid, c.idx, c.reference), (u32::MAX, 0, 0x1234));
        assert_eq!(records(c.data).filter(|r| r.is_ok()).count(), 2);
        assert!(matches!(
            events[4],
            PerfDataEvent::Other {
                record_type: 68,
                ..
            }
        ));
    }
}

/// Pipe mode: `struct perf_pipe_file_header {magic, size = 16}`, then the events.
#[test]
fn reads_pipe_mode() {
    let mut f = b"PERFILE2".to_vec();
    f.extend_from_slice(&16u64.to_le_bytes());
    // PERF_RECORD_HEADER_ATTR: the attribute, then its ids (one u64).
    let mut attr = spe_attr(11, false);
    attr.extend_from_slice(&42u64.to_le_bytes());
    f.extend(event(PERF_RECORD_HEADER_ATTR, &attr, false));
    f.extend(auxtrace_info(11, false));
    f.extend(auxtrace(&spe_bytes(), 0, 3, false));
    let p = PerfData::parse(&f).unwrap();
    assert!(p.is_pipe());
    assert_eq!(p.attrs().count(), 0);
    let PerfDataEvent::HeaderAttr(a) = p.events().next().unwrap().unwrap() else {
        panic!()
    };
    assert_eq!(
        (a.pmu_type, a.offset, a.config2, a.config3),
        (11, 24, 120, 0x80)
    );
    assert_eq!(chunks(&p), [(3, 0, 66)]);
}

/// Every truncation of a valid file: a typed error at parse time or while reading events,
/// and every AUX chunk returned lies inside the file.
#[test]
fn every_truncation_is_a_clear_error() {
    for big in [false, true] {
        let whole = file(big);
        for cut in 0..whole.len() {
            let bytes = &whole[..cut];
            match PerfData::parse(bytes) {
                Err(e) => {
                    assert!(!std::format!("{e}").is_empty());
                    if cut < 16 {
                        assert!(matches!(e, PerfDataError::TooShort { .. }), "{cut}: {e:?}");
                    }
                }
                Ok(p) => panic!("a {cut}-byte prefix parsed: {p:?}"),
            }
        }
    }
    // In pipe mode the cut is found in the events.
    let mut f = b"PERFILE2".to_vec();
    f.extend_from_slice(&16u64.to_le_bytes());
    f.extend(auxtrace(&spe_bytes(), 0, 0, false));
    assert_eq!(PerfData::parse(&f[..16]).unwrap().events().count(), 0);
    for cut in 17..f.len() {
        let p = PerfData::parse(&f[..cut]).unwrap();
        let last = p.events().last().unwrap();
        assert!(
            matches!(
                last,
                Err(PerfDataError::BadEventSize { .. } | PerfDataError::AuxDataPastEnd { .. })
            ),
            "{cut}: {last:?}"
        );
    }
}

/// Corrupt fields, each with its own error.
#[test]
fn corrupt_files() {
    let good = file(false);
    let data_offset = 104 + 136 + 16;
    let set = |at: usize, value: u64, bytes: usize| {
        let mut f = good.clone();
        f[at..at + bytes].copy_from_slice(&value.to_le_bytes()[..bytes]);
        f
    };
    assert!(matches!(
        PerfData::parse(b"PERFFILE\0\0\0\0\0\0\0\0"),
        Err(PerfDataError::BadMagic { .. })
    ));
    assert_eq!(
        PerfData::parse(&set(8, 99, 8)).unwrap_err(),
        PerfDataError::BadHeaderSize { size: 99 }
    );
    assert_eq!(
        PerfData::parse(&set(16, 8, 8)).unwrap_err(),
        PerfDataError::BadAttrSize { attr_size: 8 }
    );
    assert!(matches!(
        PerfData::parse(&set(40, u64::MAX - 3, 8)).unwrap_err(),
        PerfDataError::SectionOutsideFile {
            section: "data",
            ..
        }
    ));
    assert_eq!(
        PerfData::parse(&set(48, 0, 8)).unwrap_err(),
        PerfDataError::EmptyData
    );
    // An attribute claiming more bytes than its slot.
    let f = set(104 + 4, 4096, 4);
    let p = PerfData::parse(&f).unwrap();
    assert!(matches!(
        p.attrs().next(),
        Some(Err(PerfDataError::BadAttr { size: 4096, .. }))
    ));
    // An event of size 0 (would never advance) and one larger than the data.
    for size in [0u64, 4, 0xFFFF] {
        let f = set(data_offset + 6, size, 2);
        let p = PerfData::parse(&f).unwrap();
        let errors: Vec<_> = p.events().filter_map(Result::err).collect();
        assert!(
            matches!(errors[..], [PerfDataError::BadEventSize { offset, .. }] if offset == data_offset as u64),
            "{size}: {errors:?}"
        );
    }
    // An AUXTRACE announcing more AUX data than the file holds.
    let auxtrace_at = data_offset + 32 + 32;
    let f = set(auxtrace_at + 8, 1 << 40, 8);
    let p = PerfData::parse(&f).unwrap();
    let last = p.events().last().unwrap();
    assert!(
        matches!(last, Err(PerfDataError::AuxDataPastEnd { size, .. }) if size == 1 << 40),
        "{last:?}"
    );
    // An AUXTRACE event too short for its fields.
    let f = set(auxtrace_at + 6, 16, 2);
    let p = PerfData::parse(&f).unwrap();
    assert!(p.events().any(|e| e
        == Err(PerfDataError::ShortAuxtraceEvent {
            offset: auxtrace_at as u64,
            size: 16
        })));
}

proptest! {
    /// Random bytes, with and without a valid magic and header size: parsing and reading all
    /// attributes and events never panics, terminates, and every chunk lies in the input.
    #[test]
    fn random_bytes_never_panic(tail in prop::collection::vec(any::<u8>(), 0..600), mode in 0u8..3) {
        let mut bytes = std::vec::Vec::new();
        match mode {
            0 => {}
            1 => {
                bytes.extend_from_slice(b"PERFILE2");
                bytes.extend_from_slice(&16u64.to_le_bytes());
            }
            _ => {
                bytes.extend_from_slice(b"PERFILE2");
                bytes.extend_from_slice(&104u64.to_le_bytes());
            }
        }
        bytes.extend_from_slice(&tail);
        if let Ok(p) = PerfData::parse(&bytes) {
            prop_assert!(p.attrs().count() <= bytes.len());
            let mut n = 0;
            for e in p.events() {
                n += 1;
                prop_assert!(n <= bytes.len());
                if let Ok(PerfDataEvent::Auxtrace(c)) = e {
                    prop_assert!(c.data.len() <= bytes.len());
                }
            }
        }
    }

    /// Random byte changes to a valid file: the same guarantees.
    #[test]
    fn mutated_files_never_panic(changes in prop::collection::vec((any::<u16>(), any::<u8>()), 1..12), big: bool) {
        let mut bytes = file(big);
        for (at, value) in changes {
            let i = usize::from(at) % bytes.len();
            bytes[i] = value;
        }
        if let Ok(p) = PerfData::parse(&bytes) {
            let _ = p.attrs().count();
            let mut n = 0;
            for e in p.events() {
                n += 1;
                prop_assert!(n <= bytes.len());
                if let Ok(PerfDataEvent::Auxtrace(c)) = e {
                    let _ = records(c.data).count();
                }
            }
        }
    }
}
