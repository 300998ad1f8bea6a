//! Tests of the configuration builder: one test per error case of [`SpeError`], the warnings, the
//! register values of the usual recipes (with the event bits of Arm ARM D24.7.11), and a property
//! test that no input panics.

use std::string::ToString;
use std::vec::Vec;

use proptest::prelude::*;

use super::*;
use crate::spe::pmsidr_el1::PMSIDR_EL1;

/// PMSIDR_EL1 of a FEAT_SPEv1p2 PE with every filter (FE, FT, FL, FnE), Interval 0b0100 (1024),
/// MaxSize 0b0110 (64 B), CountSize 0b0010 (12-bit): Arm ARM D24.7.14 field values.
const PMSIDR_V1P2: u64 = 0x2_6447;

fn caps(version: SpeVersion, pmsidr: u64) -> SpeCapabilities {
    SpeCapabilities::decode_raw(version, pmsidr, 0)
}

fn v1p2() -> SpeCapabilities {
    caps(SpeVersion::V1p2, PMSIDR_V1P2)
}

fn errors(builder: &SpeConfigBuilder, caps: &SpeCapabilities) -> Vec<SpeError> {
    builder.check(caps).errors().copied().collect()
}

fn warnings(builder: &SpeConfigBuilder, caps: &SpeCapabilities) -> Vec<SpeWarning> {
    builder.check(caps).warnings().copied().collect()
}

fn base() -> SpeConfigBuilder {
    SpeConfigBuilder::new().interval(4096)
}

/// Defaults: no filter, the PE's minimum interval, EL0 and EL1 (Linux: E0SPE/E1SPE unless
/// excluded), PMSICR_EL1 = 0 (Arm ARM D24.7.13).
#[test]
fn defaults() {
    let config = SpeConfigBuilder::new().build(&v1p2()).unwrap();
    let r = config.registers();
    assert_eq!(r.pmsfcr, 0);
    assert_eq!(r.pmscr, 0b11);
    assert_eq!(r.pmsirr, 1024);
    assert_eq!(config.interval(), 1024);
    assert_eq!(r.pmsnevfr, Some(0));
    assert_eq!((r.pmsevfr, r.pmslatfr, r.pmsicr), (0, 0, 0));
    assert_eq!(config.warnings().count(), 0);
    // No PMSNEVFR_EL1 without FEAT_SPE_FnE: the register is UNDEFINED there.
    let v1p1 = caps(SpeVersion::V1p1, PMSIDR_V1P2 & !(1 << 6));
    assert_eq!(
        SpeConfigBuilder::new()
            .build(&v1p1)
            .unwrap()
            .registers()
            .pmsnevfr,
        None
    );
}

/// PMSCR_EL1 bits (Linux 6.12 arch/arm64/tools/sysreg: E0SPE 0, E1SPE 1, CX 3, PA 4, TS 5, PCT 7:6) for each record
/// content; PCT = 0b01 for physical timestamps as Linux's `pct_enable`.
#[test]
fn record_contents_and_levels() {
    let r = *base()
        .timestamps(TimestampSource::Physical)
        .physical_addresses(true)
        .context(true)
        .exception_levels(ExceptionLevels::EL1)
        .jitter(true)
        .build(&v1p2())
        .unwrap()
        .registers();
    assert_eq!(r.pmscr, 0b0111_1010);
    assert_eq!(r.pmsirr, 0x1001);
    let r = *base()
        .timestamps(TimestampSource::Virtual)
        .exception_levels(ExceptionLevels::EL0)
        .build(&v1p2())
        .unwrap()
        .registers();
    assert_eq!(r.pmscr, 0b0010_0001);
}

/// The three usual recipes (memory latency, branch misprediction, store bottleneck), with
/// the event bits of Arm ARM D24.7.11 (0x08 is L1D refill, LLC miss is 0x200; 0x20 is TLB
/// walk; the `spe` module docs, "Common mistake") and the branch example's intent
/// (record mispredictions) expressed as FE with E[7].
#[test]
fn recipe_registers() {
    let memory = base()
        .operation_types(OperationTypes::LOADS)
        .min_latency(120)
        .require_events(SpeEvents::LLC_MISS)
        .build(&v1p2())
        .unwrap();
    let r = memory.registers();
    assert_eq!((r.pmsfcr, r.pmsevfr, r.pmslatfr), (0x2_0007, 0x200, 120));
    let branch = base()
        .operation_types(OperationTypes::BRANCHES)
        .require_events(SpeEvents::MISPREDICTED)
        .build(&v1p2())
        .unwrap();
    let r = branch.registers();
    assert_eq!((r.pmsfcr, r.pmsevfr), (0x1_0003, 0x80));
    let store = base()
        .operation_types(OperationTypes::STORES)
        .min_latency(80)
        .require_events(SpeEvents::TLB_WALK)
        .build(&v1p2())
        .unwrap();
    let r = store.registers();
    assert_eq!((r.pmsfcr, r.pmsevfr, r.pmslatfr), (0x4_0007, 0x20, 80));
}

// ---- one test per error case ----

/// "event filter enabled with an empty mask" (Arm ARM D24.7.12: FE=1 with PMSEVFR_EL1=0 is
/// CONSTRAINED UNPREDICTABLE), for both filters.
#[test]
fn error_empty_event_filter() {
    assert_eq!(
        base().require_events(SpeEvents::empty()).build(&v1p2()),
        Err(SpeError::EmptyEventFilter {
            filter: EventFilterKind::Required
        })
    );
    assert_eq!(
        base().exclude_events(SpeEvents::empty()).build(&v1p2()),
        Err(SpeError::EmptyEventFilter {
            filter: EventFilterKind::Excluded
        })
    );
}

/// "the same event required and excluded" (Arm ARM D24.7.17, PMSNEVFR_EL1: CONSTRAINED
/// UNPREDICTABLE).
#[test]
fn error_event_required_and_excluded() {
    assert_eq!(
        base()
            .require_events(SpeEvents::L1D_REFILL | SpeEvents::MISPREDICTED)
            .exclude_events(SpeEvents::MISPREDICTED | SpeEvents::TLB_WALK)
            .build(&v1p2()),
        Err(SpeError::EventRequiredAndExcluded { bits: 0x80 })
    );
}

/// "FnE without PMSIDR.FnE".
#[test]
fn error_inverted_filter_not_implemented() {
    let no_fne = caps(SpeVersion::V1p2, PMSIDR_V1P2 & !(1 << 6));
    assert_eq!(
        base().exclude_events(SpeEvents::RETIRED).build(&no_fne),
        Err(SpeError::FilterNotImplemented {
            filter: SpeFilter::InvertedEvent
        })
    );
}

/// "an event bit that this PMSVer cannot filter": NOT_TAKEN before FEAT_SPEv1p2, L2D_MISS
/// before v1p4, generated exception never (Arm ARM D24.7.11), in either register.
#[test]
fn error_event_not_filterable_at_version() {
    let v1p1 = caps(SpeVersion::V1p1, 0x2_6407);
    assert_eq!(
        base().require_events(SpeEvents::NOT_TAKEN).build(&v1p1),
        Err(SpeError::EventsNotFilterable {
            version: SpeVersion::V1p1,
            bits: 0x40
        })
    );
    assert_eq!(
        base()
            .require_events(SpeEvents::L2D_MISS | SpeEvents::L1D_REFILL)
            .build(&v1p2()),
        Err(SpeError::EventsNotFilterable {
            version: SpeVersion::V1p2,
            bits: 1 << 20
        })
    );
    assert_eq!(
        base()
            .exclude_events(SpeEvents::EXCEPTION_GENERATED)
            .build(&v1p2()),
        Err(SpeError::EventsNotFilterable {
            version: SpeVersion::V1p2,
            bits: 1
        })
    );
    let v1p4 = caps(SpeVersion::V1p4, PMSIDR_V1P2);
    assert!(base()
        .require_events(SpeEvents::L2D_MISS)
        .build(&v1p4)
        .is_ok());
}

/// "latency wider than COUNTSIZE allows (12-bit counters: MINLAT[15:12] must be 0)", Arm
/// ARM D24.7.16 and D24.7.14 (PMSIDR_EL1.COUNTSIZE).
#[test]
fn error_min_latency_too_wide() {
    assert_eq!(
        base().min_latency(0x1000).build(&v1p2()),
        Err(SpeError::MinLatencyTooLarge {
            value: 0x1000,
            max: 0xFFF
        })
    );
    assert!(base().min_latency(0xFFF).build(&v1p2()).is_ok());
    let wide = caps(SpeVersion::V1p2, PMSIDR_V1P2 | (1 << 16)); // CountSize 0b0011
    assert!(base().min_latency(0xFFFF).build(&wide).is_ok());
    assert_eq!(
        base().min_latency(0x1_0000).build(&wide),
        Err(SpeError::MinLatencyTooLarge {
            value: 0x1_0000,
            max: 0xFFFF
        })
    );
}

/// "interval below the implementation's minimum" (PMSIDR_EL1.Interval 0b0100 = 1024), and
/// intervals PMSIRR_EL1.INTERVAL cannot hold (Arm ARM D24.7.15).
#[test]
fn error_interval() {
    assert_eq!(
        SpeConfigBuilder::new().interval(768).build(&v1p2()),
        Err(SpeError::IntervalBelowMinimum {
            value: 768,
            min: 1024
        })
    );
    assert_eq!(
        SpeConfigBuilder::new().interval(4100).build(&v1p2()),
        Err(SpeError::InvalidInterval { value: 4100 })
    );
    assert_eq!(
        errors(&SpeConfigBuilder::new().interval(0), &v1p2()),
        [
            SpeError::InvalidInterval { value: 0 },
            SpeError::IntervalBelowMinimum {
                value: 0,
                min: 1024
            }
        ]
    );
    assert!(SpeConfigBuilder::new()
        .interval(1024)
        .build(&v1p2())
        .is_ok());
}

/// "a type filter with no type selected" (Arm ARM D24.7.12: FT=1 with ST=LD=B=0 is CONSTRAINED
/// UNPREDICTABLE, cores differ).
#[test]
fn error_type_filter_without_types() {
    assert_eq!(
        base()
            .operation_types(OperationTypes::empty())
            .build(&v1p2()),
        Err(SpeError::NoOperationTypeSelected)
    );
}

/// "a filter the implementation lacks (PMSIDR FE/FT/FL)".
#[test]
fn error_filters_not_implemented() {
    let cases = [
        (
            PMSIDR_EL1::FE::SET.value,
            base().require_events(SpeEvents::RETIRED),
            SpeFilter::Event,
        ),
        (
            PMSIDR_EL1::FT::SET.value,
            base().operation_types(OperationTypes::LOADS),
            SpeFilter::Type,
        ),
        (
            PMSIDR_EL1::FL::SET.value,
            base().min_latency(100),
            SpeFilter::Latency,
        ),
    ];
    for (bit, builder, filter) in cases {
        let lacking = caps(SpeVersion::V1p2, PMSIDR_V1P2 & !bit);
        assert_eq!(
            builder.build(&lacking),
            Err(SpeError::FilterNotImplemented { filter })
        );
        assert!(builder.build(&v1p2()).is_ok());
    }
}

/// Sampling at no Exception level would never sample.
#[test]
fn error_no_exception_level() {
    assert_eq!(
        base()
            .exception_levels(ExceptionLevels::empty())
            .build(&v1p2()),
        Err(SpeError::NoExceptionLevelSelected)
    );
}

/// Capabilities that cannot be used (reserved CountSize, a buffer owned by EL2/EL3) stop the
/// build before anything is derived from them.
#[test]
fn error_unusable_capabilities() {
    let reserved = caps(SpeVersion::V1p2, PMSIDR_V1P2 & !(0xF << 16));
    assert!(matches!(
        base().min_latency(10).build(&reserved),
        Err(SpeError::ReservedField { .. })
    ));
    let owned = SpeCapabilities::decode_raw(SpeVersion::V1p2, PMSIDR_V1P2, 1 << 4);
    assert_eq!(base().build(&owned), Err(SpeError::BufferOwnedByHigherEl));
}

/// `check` lists every problem at once, in a stable order, for a front end.
#[test]
fn check_lists_all_errors() {
    let v1p1_no_filters = caps(SpeVersion::V1p1, 0x2_6400);
    let builder = SpeConfigBuilder::new()
        .operation_types(OperationTypes::empty())
        .require_events(SpeEvents::NOT_TAKEN)
        .exclude_events(SpeEvents::NOT_TAKEN)
        .min_latency(0x1000)
        .interval(300)
        .exception_levels(ExceptionLevels::empty());
    let d = builder.check(&v1p1_no_filters);
    assert!(!d.is_ok());
    assert_eq!(
        d.errors().copied().collect::<Vec<_>>(),
        [
            SpeError::NoExceptionLevelSelected,
            SpeError::NoOperationTypeSelected,
            SpeError::FilterNotImplemented {
                filter: SpeFilter::Type
            },
            SpeError::FilterNotImplemented {
                filter: SpeFilter::Event
            },
            SpeError::EventsNotFilterable {
                version: SpeVersion::V1p1,
                bits: 0x40
            },
            SpeError::FilterNotImplemented {
                filter: SpeFilter::InvertedEvent
            },
            SpeError::EventsNotFilterable {
                version: SpeVersion::V1p1,
                bits: 0x40
            },
            SpeError::EventRequiredAndExcluded { bits: 0x40 },
            SpeError::FilterNotImplemented {
                filter: SpeFilter::Latency
            },
            SpeError::MinLatencyTooLarge {
                value: 0x1000,
                max: 0xFFF
            },
            SpeError::InvalidInterval { value: 300 },
            SpeError::IntervalBelowMinimum {
                value: 300,
                min: 1024
            },
        ]
    );
}

/// Every error says what to change: its message has a cause, a colon, and a remedy (STYLE.md
/// "typed errors with what-to-change messages").
#[test]
fn error_messages_say_what_to_change() {
    let all = [
        SpeError::EmptyEventFilter {
            filter: EventFilterKind::Required,
        },
        SpeError::EventRequiredAndExcluded { bits: 0x80 },
        SpeError::FilterNotImplemented {
            filter: SpeFilter::InvertedEvent,
        },
        SpeError::FilterNotImplemented {
            filter: SpeFilter::Latency,
        },
        SpeError::EventsNotFilterable {
            version: SpeVersion::V1p0,
            bits: 0x40,
        },
        SpeError::MinLatencyTooLarge {
            value: 0x1000,
            max: 0xFFF,
        },
        SpeError::IntervalBelowMinimum {
            value: 256,
            min: 1024,
        },
        SpeError::InvalidInterval { value: 300 },
        SpeError::NoOperationTypeSelected,
        SpeError::NoExceptionLevelSelected,
        SpeError::BufferTooSmall { size: 16, min: 64 },
        SpeError::BufferWrapsAround {
            base: u64::MAX,
            size: 2,
        },
    ];
    for e in all {
        let text = e.to_string();
        let (cause, remedy) = text.split_once(": ").expect(&text);
        assert!(cause.len() > 10 && remedy.len() > 10, "{text}");
    }
    assert!(SpeError::FilterNotImplemented {
        filter: SpeFilter::InvertedEvent
    }
    .to_string()
    .contains("PMSIDR_EL1.FnE"));
    // The product states the architecture's reason, in the architecture's words.
    let message = SpeError::NoOperationTypeSelected.to_string();
    assert!(message.contains("CONSTRAINED UNPREDICTABLE"), "{message}");
    assert!(message.contains("the Arm ARM"), "{message}");
}

// ---- warnings ----

/// LLC miss (E[9]) is only optionally filterable before FEAT_SPEv1p4 (Arm ARM D24.7.11), the
/// memory-latency recipe's filter therefore warns on v1p2 and not on v1p4.
#[test]
fn warning_optional_event() {
    let b = base().require_events(SpeEvents::LLC_MISS);
    assert_eq!(
        warnings(&b, &v1p2()),
        [SpeWarning::OptionallyFilterableEvents {
            filter: EventFilterKind::Required,
            version: SpeVersion::V1p2,
            bits: 0x200
        }]
    );
    assert!(warnings(&b, &caps(SpeVersion::V1p4, PMSIDR_V1P2)).is_empty());
}

/// A zero minimum latency filters nothing: FL stays off (as Linux sets FL only for a non-zero
/// `min_latency`) and a warning says so.
#[test]
fn warning_zero_latency() {
    let config = base().min_latency(0).build(&v1p2()).unwrap();
    assert_eq!(config.registers().pmsfcr, 0);
    assert_eq!(
        config.warnings().copied().collect::<Vec<_>>(),
        [SpeWarning::ZeroMinimumLatency]
    );
}

/// Requiring a branch-only event on loads, or a data-cache event on branches, can never match.
#[test]
fn warning_required_events_never_occur() {
    assert_eq!(
        warnings(
            &base()
                .operation_types(OperationTypes::LOADS)
                .require_events(SpeEvents::MISPREDICTED | SpeEvents::RETIRED),
            &v1p2()
        ),
        [SpeWarning::RequiredEventsNeverOccur {
            events: SpeEvents::MISPREDICTED,
            types: OperationTypes::LOADS
        }]
    );
    assert_eq!(
        warnings(
            &base()
                .operation_types(OperationTypes::BRANCHES)
                .require_events(SpeEvents::L1D_REFILL),
            &v1p2()
        ),
        [SpeWarning::RequiredEventsNeverOccur {
            events: SpeEvents::L1D_REFILL,
            types: OperationTypes::BRANCHES
        }]
    );
    assert!(warnings(
        &base()
            .operation_types(OperationTypes::BRANCHES | OperationTypes::LOADS)
            .require_events(SpeEvents::MISPREDICTED),
        &v1p2()
    )
    .is_empty());
}

/// Raw register review: "FT=1 but ST=LD=B=0" is a warning there (the register
/// accepts it; cores differ), as are bits without their enable; FE with an empty mask and an
/// overlap of the two masks are errors.
#[test]
fn check_raw_registers() {
    let ok = SpeRegisterValues {
        pmscr: 1,
        pmsirr: 0x1000,
        pmsnevfr: Some(0),
        pmsdsfr: None,
        ..SpeRegisterValues::default()
    };
    let review = |values: SpeRegisterValues| {
        let d = check_registers(&values, &v1p2());
        (
            d.errors().copied().collect::<Vec<_>>(),
            d.warnings().copied().collect::<Vec<_>>(),
        )
    };
    assert_eq!(review(ok), (std::vec![], std::vec![]));
    assert_eq!(
        review(SpeRegisterValues { pmsfcr: 0b10, ..ok }),
        (std::vec![], std::vec![SpeWarning::TypeFilterWithoutTypes])
    );
    assert_eq!(
        review(SpeRegisterValues {
            pmsfcr: 1 << 17,
            pmsevfr: 2,
            pmslatfr: 5,
            ..ok
        }),
        (
            std::vec![],
            std::vec![
                SpeWarning::EventMaskWithoutEnable {
                    filter: EventFilterKind::Required
                },
                SpeWarning::TypesWithoutTypeFilter,
                SpeWarning::LatencyWithoutLatencyFilter
            ]
        )
    );
    assert_eq!(
        review(SpeRegisterValues { pmsfcr: 1, ..ok }).0,
        [SpeError::EmptyEventFilter {
            filter: EventFilterKind::Required
        }]
    );
    assert_eq!(
        review(SpeRegisterValues {
            pmsfcr: 0b1001,
            pmsevfr: 0x82,
            pmsnevfr: Some(0x80),
            ..ok
        })
        .0,
        [SpeError::EventRequiredAndExcluded { bits: 0x80 }]
    );
    assert_eq!(
        review(SpeRegisterValues {
            pmsfcr: 0b100,
            pmslatfr: 0x1000,
            ..ok
        })
        .0,
        [SpeError::MinLatencyTooLarge {
            value: 0x1000,
            max: 0xFFF
        }]
    );
    assert_eq!(
        review(SpeRegisterValues { pmsirr: 0, ..ok }).0,
        [SpeError::InvalidInterval { value: 0 }]
    );
}

fn any_caps() -> impl Strategy<Value = SpeCapabilities> {
    (0u8..16, any::<u64>(), any::<u64>(), prop::bool::ANY).prop_map(
        |(ver, pmsidr, pmbidr, sane)| {
            let version = SpeVersion::from_pmsver(ver.max(1)).expect("non-zero");
            // Half of the cases get a valid PMSIDR_EL1 so that builds can succeed.
            // (FE..FnE, FDS 7 and EFT 26 random.)
            let pmsidr = if sane {
                (pmsidr & (0xFF | 1 << 26)) | 0x2_6400
            } else {
                pmsidr
            };
            SpeCapabilities::decode_raw(version, pmsidr, if sane { 0 } else { pmbidr })
        },
    )
}

fn any_builder() -> impl Strategy<Value = SpeConfigBuilder> {
    (
        (
            prop::option::of(0u8..32),
            prop::option::of(any::<u32>()),
            prop::option::of(any::<u64>()),
            prop::option::of(any::<u64>()),
            any::<bool>(),
            prop::option::of(prop_oneof![Just(0u64), any::<u64>()]),
        ),
        (
            prop::option::of(prop_oneof![any::<u32>(), (0u32..64).prop_map(|i| i * 256)]),
            any::<bool>(),
            0u8..3,
            any::<bool>(),
            any::<bool>(),
            0u8..4,
        ),
    )
        .prop_map(
            |((types, lat, req, exc, all, sources), (interval, jitter, ts, pa, cx, els))| {
                SpeConfigBuilder {
                    operation_types: types.map(OperationTypes::from_bits_retain),
                    all_types: all,
                    data_sources: sources,
                    min_latency: lat,
                    required_events: req.map(SpeEvents::from_bits_retain),
                    excluded_events: exc.map(SpeEvents::from_bits_retain),
                    interval,
                    jitter,
                    timestamps: match ts {
                        0 => None,
                        1 => Some(TimestampSource::Virtual),
                        _ => Some(TimestampSource::Physical),
                    },
                    physical_addresses: pa,
                    context: cx,
                    exception_levels: ExceptionLevels::from_bits_retain(els),
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// A malformed builder input never panics; `build` succeeds exactly when `check` finds no
    /// error, returns `check`'s first error otherwise, and what it builds passes the raw
    /// register review without errors.
    #[test]
    fn builder_never_panics(builder in any_builder(), caps in any_caps()) {
        let d = builder.check(&caps);
        match builder.build(&caps) {
            Ok(config) => {
                prop_assert!(d.is_ok());
                let review = check_registers(config.registers(), &caps);
                prop_assert!(review.is_ok(), "{:?}", review);
                prop_assert!(config.interval() >= 256);
            }
            Err(e) => prop_assert_eq!(Some(&e), d.errors().next()),
        }
        for e in d.errors() {
            prop_assert!(!e.to_string().is_empty());
        }
        for w in d.warnings() {
            prop_assert!(!w.to_string().is_empty());
        }
    }
}
