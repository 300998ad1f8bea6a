//! Decoder tests on hand-built packets. Header bytes are from the table in the module
//! documentation (Arm ARM D18.2; perf `arm-spe-pkt-decoder.h` `SPE_HEADER0_*`); the same
//! inputs are decoded by perf's own decoder in `tests/spe_decoder_vs_perf.rs`.

use std::vec::Vec;

use proptest::prelude::*;

use super::*;
use crate::spe::config::OperationTypes;
use crate::spe::events::SpeEvents;

fn all(stream: &[u8]) -> Vec<Result<DecodedPacket, DecodeError>> {
    packets(stream).collect()
}

fn ok(stream: &[u8]) -> Vec<(usize, usize, Packet)> {
    packets(stream)
        .map(|p| {
            let p = p.expect("valid stream");
            (p.offset, p.len, p.packet)
        })
        .collect()
}

/// A load record laid out as the Arm ARM D18.2 describes it: PC (EL0, NS), Operation Type (load),
/// Events (retired, L1D access/refill, LLC miss), total and issue latency, data VA and PA,
/// Context, Timestamp.
pub(crate) fn load_record() -> Vec<u8> {
    let mut r = Vec::new();
    // Address index 0 (PC): header 0xB0, NS=1, EL=0, address 0x4005d8.
    r.push(0xB0);
    r.extend_from_slice(&(0x8000_0000_0040_05D8u64).to_le_bytes());
    // Operation Type, class 1 (load/store), payload 0 (GP register load).
    r.extend_from_slice(&[0x49, 0x00]);
    // Events, SZ=01 (2 bytes): RETIRED | L1D_ACCESS | L1D_REFILL | LLC_ACCESS | LLC_MISS.
    r.extend_from_slice(&[0x52, 0x0E, 0x03]);
    // Counter index 0 (total latency) = 150, index 1 (issue) = 7.
    r.extend_from_slice(&[0x98, 150, 0, 0x99, 7, 0]);
    // Address index 2 (data VA) and 3 (data PA, NS=1).
    r.push(0xB2);
    r.extend_from_slice(&(0x0000_FFFF_8000_1000u64).to_le_bytes());
    r.push(0xB3);
    r.extend_from_slice(&(0x8000_0000_8000_1000u64).to_le_bytes());
    // Context, index 1 (header 0x65: CONTEXTIDR_EL2) = 42.
    r.extend_from_slice(&[0x65, 42, 0, 0, 0]);
    // Timestamp.
    r.push(0x71);
    r.extend_from_slice(&(0x1234_5678_9ABCu64).to_le_bytes());
    r
}

#[test]
fn decodes_a_load_record() {
    let stream = load_record();
    let packets = ok(&stream);
    assert_eq!(packets.len(), 9);
    let Packet::Address(pc) = packets[0].2 else {
        panic!()
    };
    assert_eq!(pc.kind(), AddressKind::InstructionVirtual);
    assert_eq!(pc.virtual_address(), 0x4005D8);
    assert!(pc.non_secure());
    assert_eq!(pc.exception_level(), 0);
    assert_eq!(packets[1].2.name(), "OP-TYPE");
    let Packet::Events(ev) = packets[2].2 else {
        panic!()
    };
    assert_eq!(ev.size, 2);
    assert_eq!(
        ev.events,
        SpeEvents::RETIRED
            | SpeEvents::L1D_ACCESS
            | SpeEvents::L1D_REFILL
            | SpeEvents::LLC_ACCESS
            | SpeEvents::LLC_MISS
    );
    assert_eq!(
        packets[3].2,
        Packet::Counter(CounterPacket {
            index: 0,
            value: 150
        })
    );
    assert_eq!(packets[8].2, Packet::Timestamp(0x1234_5678_9ABC));
    // Offsets and lengths tile the stream.
    let mut at = 0;
    for (offset, len, _) in &packets {
        assert_eq!(*offset, at);
        at += len;
    }
    assert_eq!(at, stream.len());

    let records: Vec<_> = records(&stream).collect();
    assert_eq!(records.len(), 1);
    let r = records[0].unwrap();
    assert_eq!((r.offset, r.len, r.packets), (0, stream.len(), 9));
    assert_eq!(r.total_latency, Some(150));
    assert_eq!(r.issue_latency, Some(7));
    assert_eq!(r.context, Some((1, 42)));
    assert_eq!(r.data_physical.unwrap().address_bits(), 0x8000_1000);
    assert_eq!(r.timestamp, Some(0x1234_5678_9ABC));
    let op = r.sampled_operation();
    assert_eq!(op.types, OperationTypes::LOADS);
    assert_eq!(op.total_latency, 150);
}

/// A kernel branch record closed by End: PC at EL1 with bit 55 set (sign-extends to
/// 0xffff...), Operation Type class 2 (conditional branch), Events retired+mispredicted,
/// branch target, End.
#[test]
fn decodes_a_branch_record_with_end() {
    let mut s = Vec::new();
    s.push(0xB0);
    s.extend_from_slice(&(0xA0FF_8000_1234_5678u64).to_le_bytes());
    s.extend_from_slice(&[0x4A, 0x01, 0x42, 0x82, 0xB1]);
    s.extend_from_slice(&(0x20FF_8000_1234_0000u64).to_le_bytes());
    s.extend_from_slice(&[0x01, 0x00, 0x00]);
    let r = records(&s).next().unwrap().unwrap();
    let pc = r.pc.unwrap();
    assert_eq!(pc.exception_level(), 1);
    assert_eq!(pc.virtual_address(), 0xFFFF_8000_1234_5678);
    assert_eq!(
        r.operation.unwrap().class(),
        OperationClass::BranchOrExceptionReturn
    );
    assert_eq!(r.events, Some(SpeEvents::RETIRED | SpeEvents::MISPREDICTED));
    assert_eq!(
        r.branch_target.unwrap().virtual_address(),
        0xFFFF_8000_1234_0000
    );
    assert_eq!(r.timestamp, None);
    assert_eq!(r.sampled_operation().types, OperationTypes::BRANCHES);
    assert_eq!(r.sampled_operation().exception_level, 1);
    // The trailing padding yields no record.
    assert_eq!(records(&s).count(), 1);
}

/// Extended headers: `0x20|II` then an Address/Counter header; index = II:III (perf
/// `SPE_HDR_EXTENDED_INDEX`).
#[test]
fn extended_headers() {
    let mut s = std::vec![0x23, 0xB5];
    s.extend_from_slice(&u64::MAX.to_le_bytes());
    s.extend_from_slice(&[0x21, 0x9F, 0x34, 0x12]);
    let p = ok(&s);
    assert_eq!(p[0].1, 10);
    assert_eq!(
        p[0].2,
        Packet::Address(AddressPacket {
            index: 0b11_101,
            payload: u64::MAX
        })
    );
    assert_eq!(
        p[1].2,
        Packet::Counter(CounterPacket {
            index: 0b01_111,
            value: 0x1234
        })
    );
    // An extended prefix followed by something else is invalid; decoding resumes.
    let bad = all(&[0x20, 0x42, 0x01]);
    assert_eq!(
        bad[0],
        Err(DecodeError::Invalid {
            offset: 0,
            header: 0x42
        })
    );
    assert!(matches!(bad[1], Ok(DecodedPacket { offset: 1, .. })));
}

/// Alignment (`0x20|AA`, `0x00`): skips to the next 2^(AA+1) boundary from the stream start,
/// as perf measures it from the buffer address.
#[test]
fn alignment_packets() {
    // At offset 0 with AA=0b11: a 16-byte alignment, skips 16 bytes.
    let mut s = std::vec![0x23, 0x00];
    s.resize(16, 0xEE);
    s.push(0x01);
    let p = ok(&s);
    assert_eq!(p[0], (0, 16, Packet::Alignment { alignment: 16 }));
    assert_eq!(p[1], (16, 1, Packet::End));
    // At offset 3 with AA=0b01 (4 bytes): skips to offset 4, i.e. 1 byte.
    let s = [0x01, 0x01, 0x01, 0x21, 0x00, 0x00, 0x00, 0x00];
    let p = ok(&s);
    assert_eq!(p[3], (3, 1, Packet::Alignment { alignment: 4 }));
    assert_eq!(p[4], (4, 1, Packet::Padding));
    // Fewer bytes left than the alignment: truncated (perf: ARM_SPE_NEED_MORE_BYTES).
    assert_eq!(
        all(&[0x22, 0x00, 0x00])[0],
        Err(DecodeError::Truncated {
            offset: 0,
            needed: 8
        })
    );
}

/// Payload sizes from SZ (bits [5:4]): Events and Data Source in 1, 2, 4, 8 bytes.
#[test]
fn payload_sizes() {
    let s = [
        0x42, 0xFF, // Events SZ=0
        0x62, 1, 2, 3, 4, // Events SZ=2
        0x73, 1, 2, 3, 4, 5, 6, 7, 8, // Data Source SZ=3
    ];
    let p = ok(&s);
    assert_eq!(
        p[0].2,
        Packet::Events(EventsPacket {
            events: SpeEvents::from_bits_retain(0xFF),
            size: 1
        })
    );
    assert_eq!(p[1].1, 5);
    assert_eq!(
        p[2].2,
        Packet::DataSource(DataSourcePacket {
            value: 0x0807_0605_0403_0201,
            size: 8
        })
    );
}

/// Truncated payloads and invalid headers are errors that name the offset, then decoding
/// resumes one byte later (perf's arm_spe_get_next_packet()).
#[test]
fn errors_and_resynchronization() {
    assert_eq!(
        all(&[0x71, 1, 2])[0],
        Err(DecodeError::Truncated {
            offset: 0,
            needed: 9
        })
    );
    let r = all(&[0x02, 0x01]);
    assert_eq!(
        r[0],
        Err(DecodeError::Invalid {
            offset: 0,
            header: 0x02
        })
    );
    assert_eq!(
        r[1],
        Ok(DecodedPacket {
            offset: 1,
            len: 1,
            packet: Packet::End
        })
    );
    assert_eq!(
        all(&[0x20])[0],
        Err(DecodeError::Truncated {
            offset: 0,
            needed: 2
        })
    );
    assert!(records(&[0xB0, 0, 0]).next().unwrap().is_err());
    assert_eq!(packets(&[]).count(), 0);
}

/// Every one of the 256 first bytes is classified exactly as the header table says.
#[test]
fn every_header_byte() {
    for h in 0..=255u8 {
        let mut s = std::vec![h, 0x98];
        s.resize(32, 0);
        let got = decode_packet(&s, 0);
        let expect_ok = h == 0x00
            || h == 0x01
            || h == 0x71
            || h & 0xCF == 0x42
            || h & 0xCF == 0x43
            || h & 0xFC == 0x64
            || h & 0xFC == 0x48
            || h & 0xFC == 0x20
            || h & 0xF8 == 0xB0
            || h & 0xF8 == 0x98;
        assert_eq!(got.is_ok(), expect_ok, "header {h:#04x}: {got:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    /// No input panics; packets tile the stream (each starts where the previous ended, or one
    /// byte after an error); records are consistent with packets.
    #[test]
    fn never_panics_and_tiles(stream in prop::collection::vec(any::<u8>(), 0..256)) {
        let mut at = 0;
        for p in packets(&stream) {
            match p {
                Ok(p) => {
                    prop_assert_eq!(p.offset, at);
                    prop_assert!(p.len >= 1 && p.offset + p.len <= stream.len());
                    at += p.len;
                }
                Err(e) => {
                    prop_assert_eq!(e.offset(), at);
                    at += 1;
                }
            }
        }
        prop_assert!(at >= stream.len());
        for r in records(&stream).flatten() {
            prop_assert!(r.offset + r.len <= stream.len());
            let _ = r.sampled_operation();
        }
    }

    /// Streams built from valid packets decode without error and back to the same bytes.
    #[test]
    fn valid_streams_round_trip(choices in prop::collection::vec((0u8..9, any::<u64>(), 0u8..32), 0..40)) {
        let mut stream = Vec::new();
        for (kind, payload, index) in choices {
            let bytes = payload.to_le_bytes();
            match kind {
                0 => stream.push(0x00),
                1 => stream.push(0x01),
                2 => { stream.push(0x71); stream.extend_from_slice(&bytes); }
                3 => { stream.push(0x42 | (index & 0x30)); stream.extend_from_slice(&bytes[..1 << ((index >> 4) & 3)]); }
                4 => { stream.push(0x64 | (index & 3)); stream.extend_from_slice(&bytes[..4]); }
                5 => { stream.push(0x48 | (index & 3)); stream.push(bytes[0]); }
                6 => {
                    if index > 7 { stream.push(0x20 | (index >> 3)); }
                    stream.push(0xB0 | (index & 7));
                    stream.extend_from_slice(&bytes);
                }
                7 => {
                    if index > 7 { stream.push(0x20 | (index >> 3)); }
                    stream.push(0x98 | (index & 7));
                    stream.extend_from_slice(&bytes[..2]);
                }
                _ => { stream.push(0x43 | (index & 0x30)); stream.extend_from_slice(&bytes[..1 << ((index >> 4) & 3)]); }
            }
        }
        let decoded: Result<Vec<_>, _> = packets(&stream).collect();
        let decoded = decoded.expect("valid packets");
        let total: usize = decoded.iter().map(|p| p.len).sum();
        prop_assert_eq!(total, stream.len());
    }
}

fn address(index: u8, payload: u64) -> AddressPacket {
    let mut stream = std::vec![0xB0 | index];
    stream.extend_from_slice(&payload.to_le_bytes());
    match decode_packet(&stream, 0).unwrap().packet {
        Packet::Address(a) => a,
        other => panic!("{other:?}"),
    }
}

/// Data virtual addresses (Arm ARM D18.2 Address packet, index 2: bits [63:56] are the
/// top-byte tag): the tag is stripped, and bits [63:56] become 0xFF when bits [55:52] are
/// all ones, as perf's `arm_spe_calc_ip()` does (arm-spe-decoder.c, Linux 6.12).
#[test]
fn data_virtual_address_drops_the_tag() {
    // A tagged kernel pointer (tag 0xF2) and a tagged user pointer (MTE tag 0xB).
    let kernel = address(2, 0xF2FF_8000_1234_5678);
    assert_eq!(kernel.virtual_address(), 0xFFFF_8000_1234_5678);
    assert_eq!(kernel.tag(), 0xF2);
    let user = address(2, 0x0B00_FFFF_8000_1000);
    assert_eq!(user.virtual_address(), 0x0000_FFFF_8000_1000);
    assert_eq!(user.tag(), 0x0B);
    // Bit 55 set but [55:52] not all ones: perf leaves the top byte zero, so do we.
    assert_eq!(
        address(2, 0xFF80_0000_0000_1000).virtual_address(),
        0x0080_0000_0000_1000
    );
    // Instruction addresses sign-extend from bit 55 (NS/EL live in [63:56]).
    assert_eq!(
        address(0, 0xA0FF_8000_1234_5678).virtual_address(),
        0xFFFF_8000_1234_5678
    );
    // Physical: CH (62) and PAT ([59:56]) are not address bits.
    let pa = address(3, 0xC500_0000_8000_1000);
    assert_eq!(pa.virtual_address(), 0x8000_1000);
    assert!(pa.checked() && pa.non_secure());
    assert_eq!(pa.physical_tag(), 5);
}

/// Which header bits each address kind defines (Arm ARM D18.2 Address packet: NS and EL
/// for instruction addresses, the tag for data virtual addresses, NS, CH and PAT for
/// physical ones; none for other indexes).
#[test]
fn address_attributes_by_kind() {
    // NS=1, EL=1 in the header byte 0xA0 (bit 63 NS, bits [62:61] EL).
    for index in [0, 1, 4] {
        let a = address(index, 0xA0FF_8000_1234_5678).attributes();
        assert_eq!(
            a,
            AddressAttributes {
                exception_level: Some(1),
                non_secure: Some(true),
                ..AddressAttributes::default()
            },
            "index {index}"
        );
    }
    assert_eq!(
        address(2, 0xF2FF_8000_1234_5678).attributes(),
        AddressAttributes {
            tag: Some(0xF2),
            ..AddressAttributes::default()
        }
    );
    assert_eq!(
        address(3, 0xC500_0000_8000_1000).attributes(),
        AddressAttributes {
            non_secure: Some(true),
            checked: Some(true),
            physical_tag: Some(5),
            ..AddressAttributes::default()
        }
    );
    assert_eq!(
        address(7, u64::MAX).attributes(),
        AddressAttributes::default()
    );
}

pub(crate) fn op(class: u8, payload: u8) -> OperationTypePacket {
    match decode_packet(&[0x48 | class, payload], 0).unwrap().packet {
        Packet::OperationType(o) => o,
        other => panic!("{other:?}"),
    }
}

/// Operation Type sub-fields by Linux 7.3 perf's names (arm-spe-pkt-decoder.h
/// `SPE_OP_PKT_*`, `arm_spe_pkt_desc_op_type()`; the encodings of Arm ARM DDI 0487 D18.2
/// Operation Type packet); `tests/spe_decoder_vs_perf.rs` compares every payload of every
/// class with the text of perf 7.3 and, mapped, 6.12.
#[test]
fn operation_type_details() {
    for (class, payload, text) in [
        (1, 0x00, "LD GP-REG"),
        (1, 0x01, "ST GP-REG"),
        // Atomics keep their direction: LDADD is a load-atomic, STADD a store-atomic.
        (1, 0x06, "LD AT"),
        (1, 0x07, "ST AT"),
        // LDXR/STXR are exclusives (EXCL), not atomics; STLXR adds acquire/release.
        (1, 0x0A, "LD EXCL"),
        (1, 0x1B, "ST EXCL AR"),
        (1, 0x12, "LD AR"),
        (1, 0x04, "LD SIMD-FP"),
        (1, 0x2C, "LD SVE-SME-REG EVLEN 128 PRED"),
        (1, 0xAD, "ST SVE-SME-REG EVLEN 128 PRED SG"),
        (1, 0x25, "ST MEMSET"),
        (1, 0x21, "ST MEMCPY"),
        (1, 0x10, "LD UNSPEC-REG"),
        (1, 0x31, "ST NV-SYSREG"),
        (1, 0x14, "LD MTE-TAG"),
        // GCSSTR (a common GCS store, COMM) and a GCS access of a call (no COMM).
        (1, 0x45, "ST GCS COMM"),
        (1, 0x41, "ST GCS"),
        (1, 0x80, "LD"),
        (0, 0x00, "OTHER INSN-OTHER"),
        (0, 0x01, "OTHER COND-SELECT"),
        (0, 0x07, "OTHER ASE FP COND-SELECT"),
        (0, 0x3A, "SVE-OTHER EVLEN 256 FP"),
        // SME: ETS = 128 << 0b011_1 (bits [6:4] 0b011, bit 2 set) = 128 << 7.
        (0, 0xBE, "SME-OTHER ETS 16384 FP"),
        (0, 0x88, "SME-OTHER ETS 128"),
        (0, 0x10, ""),
        (2, 0x18, "B CR-NON-BL-RET"),
        (2, 0x00, "B"),
        (2, 0x01, "B COND"),
        (2, 0x0A, "B IND CR-BL"),
        (2, 0x14, "B GCS CR-RET"),
        (3, 0x05, "OP-TYPE 0x5 (3)"),
    ] {
        assert_eq!(
            std::format!("{}", op(class, payload)),
            text,
            "class {class} payload {payload:#x}"
        );
    }
    assert!(op(1, 0x07).is_store() && op(1, 0x07).is_atomic());
    assert!(!op(1, 0x06).is_store() && op(1, 0x06).is_atomic());
    assert!(!op(1, 0x0A).is_atomic());
    assert_eq!(op(1, 0x2C).sve_evlen(), Some(128));
    assert_eq!(op(1, 0x00).sve_evlen(), None);
    assert_eq!(op(0, 0xBE).sme_ets(), Some(16384));
    assert_eq!(op(0, 0x3A).sme_ets(), None);
}

/// The typed subclasses and flags (Arm ARM DDI 0487 D18.2 Operation Type packet payloads).
#[test]
fn operation_type_subclasses() {
    assert_eq!(
        op(1, 0x1E).load_store_subclass(),
        Some(LoadStoreSubclass::Extended {
            atomic: true,
            exclusive: true,
            acquire_release: true
        })
    );
    assert_eq!(
        op(1, 0xAD).load_store_subclass(),
        Some(LoadStoreSubclass::SveSmeRegister {
            effective_vector_length: 128,
            predicated: true,
            gather_scatter: true
        })
    );
    assert_eq!(
        op(1, 0x44).load_store_subclass(),
        Some(LoadStoreSubclass::GuardedControlStack { common: true })
    );
    assert_eq!(
        op(1, 0x80).load_store_subclass(),
        Some(LoadStoreSubclass::Unallocated)
    );
    assert_eq!(op(0, 0x00).load_store_subclass(), None);
    assert_eq!(
        op(0, 0x06).other_subclass(),
        Some(OtherSubclass::Other {
            advanced_simd: true,
            floating_point: true,
            conditional: false
        })
    );
    assert_eq!(
        op(0, 0x8A).other_subclass(),
        Some(OtherSubclass::Sme {
            effective_tile_size: 128,
            floating_point: true
        })
    );
    assert_eq!(
        op(0, 0x11).other_subclass(),
        Some(OtherSubclass::Unallocated)
    );
    assert_eq!(
        op(2, 0x0F).branch(),
        Some(BranchFlags {
            conditional: true,
            indirect: true,
            guarded_control_stack: true,
            call_return: CallReturn::BranchWithLink
        })
    );
    assert_eq!(
        op(2, 0x10).branch().unwrap().call_return,
        CallReturn::Return
    );
    assert_eq!(op(1, 0x10).branch(), None);
}

/// Events as Linux 7.3 perf prints them (`arm_spe_pkt_desc_event()`): architected names,
/// the Neoverse-N1 name of E[12] only for an N1 MIDR (0x410FD0C0, part 0xD0C), the rest as
/// IMPDEF bit numbers.
#[test]
fn events_description() {
    let ev = |bits: u64| EventsPacket {
        events: SpeEvents::from_bits_retain(bits),
        size: 8,
    };
    let text = |bits, midr| std::format!("{}", ev(bits).describe(midr));
    assert_eq!(text(0x2_0042, 0), "EV RETIRED NOT-TAKEN SVE-PARTIAL-PRED");
    assert_eq!(
        text(0xF9_1000, 0),
        "EV TXN L2D-ACCESS L2D-MISS HITM LFB SNOOPED IMPDEF:12"
    );
    assert_eq!(text(0x1000, 0x410F_D0C0), "EV LATE-PREFETCH");
    assert_eq!(
        text((1 << 63) | (3 << 13), 0x410F_D0C0),
        "EV IMPDEF:13,14,63"
    );
    assert_eq!(text(0, 0), "EV");
}

/// A reserved Operation Type class drops its record, as perf does; a record without End or
/// Timestamp at the end of the data is its own error.
#[test]
fn record_errors() {
    let mut stream = std::vec![0xB0];
    stream.extend_from_slice(&0x8000_0000_0040_05D8u64.to_le_bytes());
    stream.extend_from_slice(&[0x4B, 0x00, 0x98, 1, 0, 0x01, 0x49, 0x00]);
    let got: Vec<_> = records(&stream).collect();
    assert_eq!(
        got[0],
        Err(DecodeError::ReservedOperationClass { offset: 9 })
    );
    // The counter after the reserved packet starts the next record.
    let second = got[1].unwrap();
    assert_eq!((second.offset, second.total_latency), (11, Some(1)));
    assert_eq!(
        got[2],
        Err(DecodeError::UnterminatedRecord { offset: 15, len: 2 })
    );
    assert_eq!(got.len(), 3);
}

/// The register a Context packet names by its index (Arm ARM D18.2 Context packet: CT 0
/// CONTEXTIDR_EL1, 1 CONTEXTIDR_EL2, the others reserved).
#[test]
fn context_registers() {
    let context = |index| ContextPacket { index, value: 7 }.register();
    assert_eq!(context(0), Some("CONTEXTIDR_EL1"));
    assert_eq!(context(1), Some("CONTEXTIDR_EL2"));
    assert_eq!(context(2), None);
    assert_eq!(context(3), None);
}

/// A record's data source by the writing core's MIDR (Linux 7.3 perf arm-spe-decoder.h
/// `ARM_SPE_COMMON_DS_DRAM` 0xE, `ARM_SPE_HISI_HIP_L3_HITM` 3; MIDRs: Neoverse-N1
/// 0x410FD0C0, HiSilicon HIP12 0x480FD060): loads only, known cores only.
#[test]
fn data_source_by_midr() {
    let record = |op_payload: u8, source: u8| {
        records(&[0x49, op_payload, 0x43, source, 0x01])
            .next()
            .unwrap()
            .unwrap()
    };
    let dram = DataSource {
        level: DataSourceLevel::Dram,
        modified: false,
    };
    assert_eq!(record(0x00, 0x0E).data_source_for(0x410F_D0C0), Some(dram));
    assert_eq!(record(0x01, 0x0E).data_source_for(0x410F_D0C0), None);
    assert_eq!(record(0x00, 0x0E).data_source_for(0x410F_D034), None);
    assert_eq!(
        record(0x00, 0x03).data_source_for(0x480F_D060),
        Some(DataSource {
            level: DataSourceLevel::L3,
            modified: true
        })
    );
    assert_eq!(
        DataSourceEncoding::for_midr(0xC00F_AC40),
        Some(DataSourceEncoding::AmpereOne)
    );
}
