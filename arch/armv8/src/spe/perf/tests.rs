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

/// Linux 6.12 on `caps`, with the format it would publish there.
fn linux_6_12(caps: &SpeCapabilities) -> PerfTarget {
    PerfTarget::new(LinuxSpeDriver::Linux6_12, caps)
}

/// Linux 7.3 on `caps`, without a PMSEVFR_EL1 read-back.
fn linux_7_3(caps: &SpeCapabilities) -> PerfTarget {
    PerfTarget::new(LinuxSpeDriver::Linux7_3, caps)
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
        "config5:0",
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
    let refused = perf_event(&config, &linux_6_12(&v1p2())).unwrap_err();
    assert_eq!(
        refused,
        SpeError::PerfEventsRefused {
            field: PerfField::EventFilter,
            version: SpeVersion::V1p2,
            driver: LinuxSpeDriver::Linux6_12,
            bits: 0x200
        }
    );
    let message = refused.to_string();
    assert!(message.contains("EOPNOTSUPP"), "{message}");
    assert!(message.contains("after decoding"), "{message}");
    let (event, post) = perf_event_with_post_filter(&config, &linux_6_12(&v1p2())).unwrap();
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
    let event = perf_event(&meant, &linux_6_12(&v1p2())).unwrap();
    assert_eq!(
        string(&event),
        "arm_spe_0/jitter=1,branch_filter=1,event_filter=0x80,period=1024/"
    );
    assert_eq!(
        perf_event_with_post_filter(&meant, &linux_6_12(&v1p2()))
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
    let event = perf_event(&written, &linux_6_12(&v1p2())).unwrap();
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
        perf_event(&written, &linux_6_12(&v1p2()).with_format(no_fne)),
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
        perf_event(&config, &linux_6_12(&v1p2_wide())),
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
    assert_eq!(
        perf_event(&config, &linux_6_12(&v1p2_wide()).with_format(wide))
            .unwrap()
            .attr()
            .config2,
        0x1000
    );
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
    let event = perf_event(&config, &linux_6_12(&v1p2())).unwrap();
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
    let event = perf_event(&config, &linux_6_12(&v1p2()).with_format(format)).unwrap();
    assert_eq!(event.attr().config, 1 << 40);
    assert_eq!(string(&event), "arm_spe_0/load_filter=1,period=1024/");
}

/// Linux 7.3.4 drivers/perf/arm_spe_pmu.c `ATTR_CFG_FLD_*`, in `arm_spe_pmu_formats_attr[]`
/// order: 6.12's fields, the FEAT_SPE_EFT bits 36-42 of `config`, `discard` at 35 and
/// `inv_data_src_filter` in `config4`.
#[test]
fn documented_layout_7_3() {
    let shown: std::vec::Vec<String> = PerfFormat::linux_7_3()
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
            "branch_filter_mask=config:36",
            "load_filter=config:33",
            "load_filter_mask=config:37",
            "store_filter=config:34",
            "store_filter_mask=config:38",
            "simd_filter=config:39",
            "simd_filter_mask=config:40",
            "float_filter=config:41",
            "float_filter_mask=config:42",
            "event_filter=config1:0-63",
            "inv_event_filter=config3:0-63",
            "inv_data_src_filter=config4:0-63",
            "min_latency=config2:0-11",
            "discard=config:35",
        ]
    );
}

/// `7.3.4+deb13-arm64` (Debian 13 backports) and `6.12.57+deb13-arm64` (Debian 13) pick their
/// rules; a release this crate does not know (Debian 12's 6.1) picks none.
#[test]
fn releases_pick_their_rules() {
    use LinuxSpeDriver::*;
    for (release, driver) in [
        ("7.3.4+deb13-arm64", Some(Linux7_3)),
        ("6.12.57+deb13-arm64", Some(Linux6_12)),
        ("6.12.0-rc1", Some(Linux6_12)),
        ("6.12", Some(Linux6_12)),
        ("6.1.0-28-arm64", None),
        ("7.30.1", None),
        ("6.13.2", None),
        ("", None),
    ] {
        assert_eq!(LinuxSpeDriver::for_release(release), driver, "{release:?}");
    }
    assert_eq!(LinuxSpeDriver::parse("7.3"), Some(Linux7_3));
    assert_eq!(LinuxSpeDriver::parse("linux-6.12"), Some(Linux6_12));
    assert_eq!(LinuxSpeDriver::parse("7"), None);
    assert_eq!(LinuxSpeDriver::NEWEST, Linux7_3);
}

/// FEAT_SPEv1p2 with FE/FT/FL/FnE plus PMSIDR_EL1.EFT (bit 26) and FDS (bit 7).
fn v1p2_eft_fds() -> SpeCapabilities {
    SpeCapabilities::decode_raw(SpeVersion::V1p2, 0x2_6447 | 1 << 26 | 1 << 7, 0)
}

/// `arm_spe_pmu_format_attr_is_visible()`: 6.12 hides only `inv_event_filter` (no FnE);
/// 7.3 also hides `discard` before FEAT_SPEv1p2, the EFT fields without PMSIDR_EL1.EFT and
/// `inv_data_src_filter` without PMSIDR_EL1.FDS.
#[test]
fn published_format_follows_the_pe() {
    let v1p1 = SpeCapabilities::decode_raw(SpeVersion::V1p1, 0x2_6407, 0);
    let old = LinuxSpeDriver::Linux6_12.rules();
    let new = LinuxSpeDriver::Linux7_3.rules();
    assert_eq!(
        old.published_format(&v1p1),
        PerfFormat::linux_6_12().without(PerfField::InvEventFilter)
    );
    assert_eq!(
        old.published_format(&v1p2_eft_fds()),
        PerfFormat::linux_6_12()
    );
    let mut hidden = PerfFormat::linux_7_3()
        .without(PerfField::InvDataSrcFilter)
        .without(PerfField::InvEventFilter)
        .without(PerfField::Discard);
    for field in PerfField::EXTENDED_TYPE {
        hidden = hidden.without(field);
    }
    assert_eq!(new.published_format(&v1p1), hidden);
    assert_eq!(
        new.published_format(&v1p2())
            .field(PerfField::Discard)
            .map(|f| f.to_string()),
        Some("config:35".into())
    );
    assert_eq!(
        new.published_format(&v1p2_eft_fds()),
        PerfFormat::linux_7_3()
    );
}

/// The LLC-miss recipe under Linux 7.3: the event filter rule is the probe's read-back, so
/// E[9] is accepted where PMSEVFR_EL1 kept it (caps/event_filter 0xaea), refused with 7.3's
/// reason where nothing says so on FEAT_SPEv1p2 (filtering on E[9] is optional there), and
/// accepted on FEAT_SPEv1p4, where the Arm ARM makes it filterable.
#[test]
fn llc_miss_filter_under_linux_7_3() {
    let builder = SpeConfigBuilder::new()
        .operation_types(OperationTypes::LOADS)
        .min_latency(120)
        .require_events(SpeEvents::LLC_MISS)
        .interval(4096)
        .timestamps(TimestampSource::Virtual)
        .exception_levels(ExceptionLevels::EL0);
    let config = builder.build(&v1p2()).unwrap();
    let refused = perf_event(&config, &linux_7_3(&v1p2())).unwrap_err();
    assert_eq!(
        refused,
        SpeError::PerfEventsRefused {
            field: PerfField::EventFilter,
            version: SpeVersion::V1p2,
            driver: LinuxSpeDriver::Linux7_3,
            bits: 0x200
        }
    );
    assert!(
        refused.to_string().contains("caps/event_filter"),
        "{refused}"
    );
    let probed = linux_7_3(&v1p2()).with_event_filter_read_back(0xAEA);
    let event = perf_event(&config, &probed).unwrap();
    assert_eq!(
        string(&event),
        "arm_spe_0/ts_enable=1,load_filter=1,event_filter=0x200,min_latency=120,period=4096/u"
    );
    let v1p4 = SpeCapabilities::decode_raw(SpeVersion::V1p4, 0x2_6447, 0);
    let config = builder.build(&v1p4).unwrap();
    assert!(perf_event(&config, &linux_7_3(&v1p4)).is_ok());
    assert!(perf_event(&config, &linux_6_12(&v1p4)).is_err());
}

/// Linux 7.3 `arm_spe_pmu_event_init()` on attributes written by hand (as `perf record -e`
/// would pass them): EOPNOTSUPP for an EFT bit without PMSIDR_EL1.EFT, a non-zero
/// `inv_data_src_filter` without PMSIDR_EL1.FDS, `discard` before FEAT_SPEv1p2, and an event
/// bit outside the read-back; the same bits mean nothing to 6.12, which has no field there.
#[test]
fn event_init_per_release() {
    let attr = |config: u64, config1: u64, config4: u64| PerfEventAttr {
        config,
        config1,
        config4,
        sample_period: 4096,
        ..PerfEventAttr::default()
    };
    let v1p1 = SpeCapabilities::decode_raw(SpeVersion::V1p1, 0x2_6407, 0);
    let simd = attr(1 << 39, 0, 0);
    let branch_mask = attr(1 << 32 | 1 << 36, 0, 0);
    let data_source = attr(0, 0, !0x9);
    let discard = attr(1 << 35, 0, 0);
    for a in [simd, branch_mask] {
        assert_eq!(
            event_init(&a, &linux_7_3(&v1p2())),
            Err(SpeError::FilterNotImplemented {
                filter: SpeFilter::ExtendedType
            })
        );
        assert_eq!(event_init(&a, &linux_7_3(&v1p2_eft_fds())), Ok(()));
        assert_eq!(event_init(&a, &linux_6_12(&v1p2())), Ok(()));
    }
    assert_eq!(
        event_init(&data_source, &linux_7_3(&v1p2())),
        Err(SpeError::FilterNotImplemented {
            filter: SpeFilter::DataSource
        })
    );
    assert_eq!(
        event_init(&data_source, &linux_7_3(&v1p2_eft_fds())),
        Ok(())
    );
    assert_eq!(event_init(&data_source, &linux_6_12(&v1p2())), Ok(()));
    assert_eq!(
        event_init(&discard, &linux_7_3(&v1p1)),
        Err(SpeError::DiscardNotImplemented {
            version: SpeVersion::V1p1
        })
    );
    assert_eq!(event_init(&discard, &linux_7_3(&v1p2())), Ok(()));
    // FnE without PMSIDR_EL1.FnE: both releases refuse it.
    let inverted = PerfEventAttr {
        config3: 0x80,
        ..attr(0, 0, 0)
    };
    for target in [linux_6_12(&v1p1), linux_7_3(&v1p1)] {
        assert_eq!(
            event_init(&inverted, &target),
            Err(SpeError::FilterNotImplemented {
                filter: SpeFilter::InvertedEvent
            })
        );
    }
    // E[0] (exception generated) never reads back as 1 and is in every 6.12 mask.
    let e0 = attr(0, 1, 0);
    for target in [linux_6_12(&v1p2()), linux_7_3(&v1p2())] {
        assert!(matches!(
            event_init(&e0, &target),
            Err(SpeError::PerfEventsRefused { bits: 1, .. })
        ));
    }
}

/// What Linux 7.3 programs (`arm_spe_event_to_pmsfcr/pmsdsfr()`,
/// `arm_spe_event_sanitise_period()`): each EFT term on its PMSFCR_EL1 bit with FT, FDS with
/// PMSDSFR_EL1 = ~inv_data_src_filter (written only with FEAT_SPE_FDS), periods raised to 256
/// rather than to the minimum interval; and `discard` switches the buffer to discard mode.
#[test]
fn kernel_registers_of_linux_7_3() {
    let rules = LinuxSpeDriver::Linux7_3.rules();
    let attr = PerfEventAttr {
        // store_filter, store_filter_mask, simd_filter, simd_filter_mask, float_filter.
        config: 1 << 34 | 1 << 38 | 1 << 39 | 1 << 40 | 1 << 41,
        config4: 0xFFFF_FFFF_FFFF_FFF6,
        sample_period: 300,
        ..PerfEventAttr::default()
    };
    let r = kernel_registers(&attr, &rules, true, true, false, 1024);
    let expected_fcr = (PMSFCR_EL1::FT::SET
        + PMSFCR_EL1::FDS::SET
        + PMSFCR_EL1::ST::SET
        + PMSFCR_EL1::STm::SET
        + PMSFCR_EL1::SIMD::SET
        + PMSFCR_EL1::SIMDm::SET
        + PMSFCR_EL1::FP::SET)
        .value;
    assert_eq!(r.pmsfcr, expected_fcr);
    assert_eq!(r.pmsdsfr, Some(0x9));
    assert_eq!(r.pmsirr, 256);
    assert_eq!(
        kernel_registers(&attr, &rules, true, false, false, 1024).pmsdsfr,
        None
    );
    // 6.12 reads only store_filter there, and raises the period to the minimum interval.
    let old = kernel_registers(
        &attr,
        &LinuxSpeDriver::Linux6_12.rules(),
        true,
        true,
        false,
        1024,
    );
    assert_eq!(
        old.pmsfcr,
        (PMSFCR_EL1::FT::SET + PMSFCR_EL1::ST::SET).value
    );
    assert_eq!((old.pmsdsfr, old.pmsirr), (None, 1024));
    let discard = PerfEventAttr {
        config: 1 << 35,
        ..attr
    };
    assert!(kernel_discards(&discard, &rules));
    assert!(!kernel_discards(&attr, &rules));
    assert!(!kernel_discards(
        &discard,
        &LinuxSpeDriver::Linux6_12.rules()
    ));
}

/// The SIMD loads from a data source subset, on a PE with FEAT_SPE_EFT and FEAT_SPE_FDS:
/// Linux 7.3 expresses them (`load_filter`+`simd_filter` with their masks,
/// `inv_data_src_filter` = the complement of the kept sources, drivers/perf/arm_spe_pmu.c
/// `arm_spe_event_to_pmsfcr/pmsdsfr()`) and programs exactly our registers; Linux 6.12 has no
/// field for them.
#[test]
fn simd_loads_from_some_sources_need_linux_7_3() {
    let caps = v1p2_eft_fds();
    let config = SpeConfigBuilder::new()
        .operation_types(OperationTypes::LOADS | OperationTypes::SIMD)
        .all_types(true)
        .data_sources(0x9)
        .interval(1024)
        .build(&caps)
        .unwrap();
    let r = config.registers();
    let fcr = (PMSFCR_EL1::FT::SET
        + PMSFCR_EL1::FDS::SET
        + PMSFCR_EL1::LD::SET
        + PMSFCR_EL1::LDm::SET
        + PMSFCR_EL1::SIMD::SET
        + PMSFCR_EL1::SIMDm::SET)
        .value;
    assert_eq!((r.pmsfcr, r.pmsdsfr), (fcr, Some(0x9)));
    let target = linux_7_3(&caps);
    let event = perf_event(&config, &target).unwrap();
    assert_eq!(
        string(&event),
        "arm_spe_0/load_filter=1,load_filter_mask=1,simd_filter=1,simd_filter_mask=1,\
         inv_data_src_filter=0xfffffffffffffff6,period=1024/"
    );
    assert_eq!(event.attr().config4, !0x9);
    let kernel = kernel_registers(event.attr(), &target.rules, true, true, false, 1024);
    assert_eq!(&kernel, r);
    assert_eq!(
        perf_event(&config, &linux_6_12(&caps)),
        Err(SpeError::PerfFieldUnavailable {
            field: PerfField::LoadFilterMask
        })
    );
    // Without EFT or FDS the builder already refuses, naming the PMSIDR_EL1 field.
    for (bad, filter) in [
        (v1p2(), SpeFilter::ExtendedType),
        (
            SpeCapabilities::decode_raw(SpeVersion::V1p2, 0x2_6447 | 1 << 26, 0),
            SpeFilter::DataSource,
        ),
    ] {
        let err = SpeConfigBuilder::new()
            .operation_types(OperationTypes::LOADS | OperationTypes::SIMD)
            .all_types(true)
            .data_sources(0x9)
            .interval(1024)
            .build(&bad)
            .unwrap_err();
        assert_eq!(err, SpeError::FilterNotImplemented { filter });
    }
}

proptest! {
    /// For every valid configuration, what Linux programs for its perf event
    /// (`kernel_registers`, restating arm_spe_pmu.c) equals what we program directly, up to
    /// PMSCR_EL1.CX, which the kernel decides on its own.
    #[test]
    fn perf_event_programs_the_same_registers(
        types in prop::option::of(1u8..32),
        all_types: bool,
        data_sources in prop::option::of(1u64..0x1_0000),
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
        b.all_types = all_types;
        b.data_sources = data_sources;
        b.min_latency = latency;
        b.required_events = required.map(SpeEvents::from_bits_retain);
        b.excluded_events = excluded.map(SpeEvents::from_bits_retain);
        b.timestamps = ts;
        b.exception_levels = ExceptionLevels::from_bits_retain(els);
        let caps = v1p2_eft_fds();
        if let Ok(config) = b.build(&caps) {
          for driver in LinuxSpeDriver::ALL {
            let target = PerfTarget::new(driver, &caps);
            let format = target.format;
            let res0 = target.pmsevfr_res0;
            let extended = config.registers().pmsfcr
                & (PMSFCR_EL1::SIMD::SET + PMSFCR_EL1::FP::SET + PMSFCR_EL1::Bm::SET
                    + PMSFCR_EL1::LDm::SET + PMSFCR_EL1::STm::SET + PMSFCR_EL1::FDS::SET)
                    .value
                != 0;
            let (event, post) = match perf_event_with_post_filter(&config, &target) {
                Ok(done) => done,
                // 6.12 has no field for the EFT/FDS filters.
                Err(SpeError::PerfFieldUnavailable { .. })
                    if extended && driver == LinuxSpeDriver::Linux6_12 =>
                {
                    continue
                }
                Err(e) => return Err(TestCaseError::fail(std::format!("{driver}: {e}"))),
            };
            // Exactly the refused bits move to the post filter; the rest reach the kernel.
            prop_assert_eq!(post.required.bits(), config.registers().pmsevfr & res0);
            prop_assert_eq!(event.attr().config1 & res0, 0);
            prop_assert_eq!(event.attr().config3 & res0, 0);
            prop_assert_eq!(perf_event(&config, &target).is_ok(), post.is_empty());
            prop_assert_eq!(event_init(event.attr(), &target), Ok(()));
            let kernel = kernel_registers(event.attr(), &target.rules, true, true, cx, 1024);
            let mut expected = *config.registers();
            if driver == LinuxSpeDriver::Linux6_12 {
                // 6.12 never writes PMSDSFR_EL1 (and never sets FDS, so it has no effect).
                expected.pmsdsfr = None;
            }
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
}
