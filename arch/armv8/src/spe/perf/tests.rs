//! Tests of the perf bridge. The bit positions are also checked against the installed kernel
//! source in `tests/spe_kernel_source.rs`.

use std::string::{String, ToString};

use proptest::prelude::*;

use super::*;
use crate::spe::capabilities::SpeCapabilities;
use crate::spe::config::{OperationTypes, SpeConfigBuilder};
use crate::spe::events::SpeEvents;
use crate::spe::version::SpeVersion;

/// FEAT_SPEv1p2 with FE/FT/FL/FnE, Interval 1024, 64-byte records, 12-bit counters.
fn v1p2() -> SpeCapabilities {
    SpeCapabilities::decode_raw(SpeVersion::V1p2, 0x2_6447, 0)
}

/// The same with 16-bit counters (CountSize 0b0011).
fn v1p2_wide() -> SpeCapabilities {
    SpeCapabilities::decode_raw(SpeVersion::V1p2, 0x3_6447, 0)
}

fn string(event: &PerfSpeEvent) -> String {
    event.event_string("arm_spe_0").to_string()
}

/// Linux 6.12 drivers/perf/arm_spe_pmu.c `ATTR_CFG_FLD_*`: the documented layout.
#[test]
fn documented_layout() {
    let f = PerfFormat::linux_6_12();
    let shown: std::vec::Vec<String> = f
        .iter()
        .map(|(field, place)| std::format!("{}={place}", field.name()))
        .collect();
    assert_eq!(
        shown,
        [
            "ts_enable=config:0",
            "pa_enable=config:1",
            "pct_enable=config:2",
            "jitter=config:16",
            "branch_filter=config:32",
            "load_filter=config:33",
            "store_filter=config:34",
            "event_filter=config1:0-63",
            "inv_event_filter=config3:0-63",
            "min_latency=config2:0-11",
        ]
    );
}

/// Format entries as Linux's `__GEN_PMU_FORMAT_ATTR` prints them ("config:0\n",
/// "config1:0-63\n"), and what is refused.
#[test]
fn parse_format_entries() {
    assert_eq!(
        FormatField::parse("config:0\n"),
        Some(FormatField {
            word: ConfigWord::Config,
            lo: 0,
            hi: 0
        })
    );
    assert_eq!(
        FormatField::parse("config3:0-63"),
        Some(FormatField {
            word: ConfigWord::Config3,
            lo: 0,
            hi: 63
        })
    );
    for bad in [
        "",
        "config",
        "config4:0",
        "config:64",
        "config:3-1",
        "config:0-3,8",
        "config:x",
    ] {
        assert_eq!(FormatField::parse(bad), None, "{bad:?}");
    }
    let from =
        PerfFormat::from_entries([("min_latency", "config2:0-15\n"), ("future", "zz")]).unwrap();
    assert_eq!(
        from.field(PerfField::MinLatency).map(|f| f.max_value()),
        Some(0xFFFF)
    );
    assert_eq!(from.field(PerfField::EventFilter), None);
    assert_eq!(
        PerfFormat::from_entries([("jitter", "config:")]),
        Err(SpeError::PerfFormatInvalid {
            field: PerfField::Jitter
        })
    );
}

/// The memory-latency analysis (loads, latency >= 120, LLC miss E[9] = 0x200) on FEAT_SPEv1p2:
/// the registers are valid, but Linux 6.12 refuses `event_filter=0x200` (PMSEVFR_EL1_RES0_V1P2
/// covers bit 9; drivers/perf/arm_spe_pmu.c `arm_spe_pmu_event_init()` returns EOPNOTSUPP).
/// The typed error says so; the post-filter form records all slow loads and leaves E[9] to the
/// decoder.
#[test]
fn llc_miss_filter_is_refused_by_linux_and_post_filtered() {
    let config = SpeConfigBuilder::new()
        .operation_types(OperationTypes::LOADS)
        .min_latency(120)
        .require_events(SpeEvents::LLC_MISS)
        .interval(4096)
        .timestamps(TimestampSource::Virtual)
        .exception_levels(ExceptionLevels::EL0)
        .build(&v1p2())
        .unwrap();
    assert_eq!(config.registers().pmsevfr, 0x200);
    let refused = perf_event(&config, &PerfFormat::linux_6_12()).unwrap_err();
    assert_eq!(
        refused,
        SpeError::PerfEventsRefused {
            field: PerfField::EventFilter,
            version: SpeVersion::V1p2,
            bits: 0x200
        }
    );
    let message = refused.to_string();
    assert!(message.contains("EOPNOTSUPP"), "{message}");
    assert!(message.contains("after decoding"), "{message}");
    let (event, post) = perf_event_with_post_filter(&config, &PerfFormat::linux_6_12()).unwrap();
    assert_eq!(event.attr().config, 1 | 1 << 33);
    assert_eq!(event.attr().config1, 0);
    assert_eq!(event.attr().config2, 120);
    assert_eq!(event.attr().sample_period, 4096);
    assert!(event.attr().exclude_kernel && !event.attr().exclude_user);
    assert_eq!(
        string(&event),
        "arm_spe_0/ts_enable=1,load_filter=1,min_latency=120,period=4096/u"
    );
    assert_eq!(
        post,
        PostFilter {
            required: SpeEvents::LLC_MISS,
            excluded: SpeEvents::empty()
        }
    );
    assert!(post.keeps(SpeEvents::LLC_MISS | SpeEvents::RETIRED));
    assert!(!post.keeps(SpeEvents::L1D_REFILL));
}

/// Per version, what Linux 6.12 lets through: E[3] (L1D refill) and E[5] (TLB walk) on every
/// version, E[11] from v1p1, E[6] from v1p2, never E[9], and the inverted filter follows the
/// same mask.
#[test]
fn linux_rules_per_version() {
    use SpeVersion::*;
    for (version, bit, accepted) in [
        (V1p0, 3, true),
        (V1p0, 5, true),
        (V1p0, 11, false),
        (V1p1, 11, true),
        (V1p1, 6, false),
        (V1p2, 6, true),
        (V1p2, 9, false),
        (V1p3, 9, false),
        (V1p4, 9, false),
        (V1p4, 20, false),
        (V1p5, 8, false),
    ] {
        assert_eq!(
            linux_6_12_pmsevfr_res0(version) & (1 << bit) == 0,
            accepted,
            "{version} E[{bit}]"
        );
    }
}

/// The branch-misprediction recipe, as meant (require E[7]) and as often written (exclude
/// E[7], needs `inv_event_filter`).
#[test]
fn branch_recipe_event_strings() {
    let meant = SpeConfigBuilder::new()
        .operation_types(OperationTypes::BRANCHES)
        .require_events(SpeEvents::MISPREDICTED)
        .interval(1024)
        .jitter(true)
        .build(&v1p2())
        .unwrap();
    let event = perf_event(&meant, &PerfFormat::linux_6_12()).unwrap();
    assert_eq!(
        string(&event),
        "arm_spe_0/jitter=1,branch_filter=1,event_filter=0x80,period=1024/"
    );
    assert_eq!(
        perf_event_with_post_filter(&meant, &PerfFormat::linux_6_12())
            .unwrap()
            .1,
        PostFilter::NONE
    );
    let written = SpeConfigBuilder::new()
        .operation_types(OperationTypes::BRANCHES)
        .exclude_events(SpeEvents::MISPREDICTED)
        .interval(1024)
        .build(&v1p2())
        .unwrap();
    let event = perf_event(&written, &PerfFormat::linux_6_12()).unwrap();
    assert_eq!(event.attr().config3, 0x80);
    assert_eq!(
        string(&event),
        "arm_spe_0/branch_filter=1,inv_event_filter=0x80,period=1024/"
    );
    // A kernel that hides inv_event_filter cannot take it.
    let mut no_fne = PerfFormat::empty();
    for (field, place) in PerfFormat::linux_6_12().iter() {
        if field != PerfField::InvEventFilter {
            no_fne.set(field, place);
        }
    }
    assert_eq!(
        perf_event(&written, &no_fne),
        Err(SpeError::PerfFieldUnavailable {
            field: PerfField::InvEventFilter
        })
    );
}

/// Linux 6.12's `min_latency` is config2:0-11 even for 16-bit counters: 0x1000 is valid for
/// the PE but not expressible through perf.
#[test]
fn min_latency_wider_than_perf_field() {
    let config = SpeConfigBuilder::new()
        .min_latency(0x1000)
        .interval(1024)
        .build(&v1p2_wide())
        .unwrap();
    assert_eq!(
        perf_event(&config, &PerfFormat::linux_6_12()),
        Err(SpeError::PerfFieldTooWide {
            field: PerfField::MinLatency,
            value: 0x1000,
            max: 0xFFF
        })
    );
    // A kernel publishing a 16-bit field takes it.
    let mut wide = PerfFormat::linux_6_12();
    wide.set(
        PerfField::MinLatency,
        FormatField::parse("config2:0-15").unwrap(),
    );
    assert_eq!(perf_event(&config, &wide).unwrap().attr().config2, 0x1000);
}

/// Context, physical addresses and physical timestamps carry warnings (arm_spe_pmu.c:
/// `get_spe_event_has_cx()`, `perf_allow_kernel()` for PA/PCT).
#[test]
fn privileged_and_unselectable_settings_warn() {
    let config = SpeConfigBuilder::new()
        .interval(1024)
        .context(true)
        .physical_addresses(true)
        .timestamps(TimestampSource::Physical)
        .build(&v1p2())
        .unwrap();
    let event = perf_event(&config, &PerfFormat::linux_6_12()).unwrap();
    let warnings: std::vec::Vec<_> = event.warnings().copied().collect();
    assert_eq!(
        warnings,
        [
            SpeWarning::PerfContextNotSelectable,
            SpeWarning::PerfNeedsKernelPermission {
                field: PerfField::PaEnable
            },
            SpeWarning::PerfNeedsKernelPermission {
                field: PerfField::PctEnable
            },
        ]
    );
    assert_eq!(
        string(&event),
        "arm_spe_0/ts_enable=1,pa_enable=1,pct_enable=1,period=1024/"
    );
}

/// A custom layout (as a future kernel might publish) moves the bits and the string follows.
#[test]
fn custom_layout_moves_bits() {
    let mut format = PerfFormat::linux_6_12();
    format.set(
        PerfField::LoadFilter,
        FormatField::parse("config:40").unwrap(),
    );
    let config = SpeConfigBuilder::new()
        .operation_types(OperationTypes::LOADS)
        .interval(1024)
        .build(&v1p2())
        .unwrap();
    let event = perf_event(&config, &format).unwrap();
    assert_eq!(event.attr().config, 1 << 40);
    assert_eq!(string(&event), "arm_spe_0/load_filter=1,period=1024/");
}

proptest! {
    /// For every valid configuration, what Linux programs for its perf event
    /// (`kernel_registers`, restating arm_spe_pmu.c) equals what we program directly, up to
    /// PMSCR_EL1.CX, which the kernel decides on its own.
    #[test]
    fn perf_event_programs_the_same_registers(
        types in prop::option::of(1u8..8),
        latency in prop::option::of(1u32..0x1000),
        required in prop::option::of(prop_oneof![Just(0x8u64), Just(0x200), Just(0x80), Just(0xAA)]),
        excluded in prop::option::of(prop_oneof![Just(0x40u64), Just(0x2), Just(0x800)]),
        interval in (4u32..0x100).prop_map(|i| i * 256),
        jitter: bool,
        ts in prop::option::of(prop_oneof![Just(TimestampSource::Virtual), Just(TimestampSource::Physical)]),
        pa: bool,
        cx: bool,
        els in 1u8..4,
    ) {
        let mut b = SpeConfigBuilder::new().interval(interval).jitter(jitter).physical_addresses(pa).context(cx);
        b.operation_types = types.map(OperationTypes::from_bits_retain);
        b.min_latency = latency;
        b.required_events = required.map(SpeEvents::from_bits_retain);
        b.excluded_events = excluded.map(SpeEvents::from_bits_retain);
        b.timestamps = ts;
        b.exception_levels = ExceptionLevels::from_bits_retain(els);
        let caps = v1p2();
        if let Ok(config) = b.build(&caps) {
            let format = PerfFormat::linux_6_12();
            let res0 = linux_6_12_pmsevfr_res0(caps.version);
            let (event, post) = perf_event_with_post_filter(&config, &format).unwrap();
            // Exactly the refused bits move to the post filter; the rest reach the kernel.
            prop_assert_eq!(post.required.bits(), config.registers().pmsevfr & res0);
            prop_assert_eq!(event.attr().config1 & res0, 0);
            prop_assert_eq!(event.attr().config3 & res0, 0);
            prop_assert_eq!(perf_event(&config, &format).is_ok(), post.is_empty());
            let kernel = kernel_registers(event.attr(), &format, true, cx, 1024);
            let mut expected = *config.registers();
            expected.pmsevfr &= !res0;
            if expected.pmsevfr == 0 {
                expected.pmsfcr &= !PMSFCR_EL1::FE::SET.value;
            }
            if let Some(n) = expected.pmsnevfr.as_mut() {
                *n &= !res0;
                if *n == 0 {
                    expected.pmsfcr &= !PMSFCR_EL1::FnE::SET.value;
                }
            }
            prop_assert_eq!(&kernel, &expected);
            // And the event string's terms round-trip through the format.
            for (field, value) in event.terms() {
                prop_assert_eq!(format.field(field).unwrap().extract(event.attr()), value);
            }
        }
    }
}
