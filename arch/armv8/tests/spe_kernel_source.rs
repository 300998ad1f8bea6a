//! Checks this crate's SPE bit positions and its restatement of the `arm_spe` driver against
//! the Linux sources of both trees the workspace knows (`pmu_linux_source::Tree::Linux6_12`,
//! Debian's `linux-source-6.12`, and `Tree::Linux7_3`, Debian 13 backports'
//! `linux-source-7.3`), read at test time:
//!
//! - the perf format of the `arm_spe` PMU: every `GEN_PMU_FORMAT_ATTR(name)` of
//!   drivers/perf/arm_spe_pmu.c with its `ATTR_CFG_FLD_<name>_{CFG,LO,HI}` defines, rendered
//!   the way `__GEN_PMU_FORMAT_ATTR` renders the sysfs file, must equal the tree's
//!   `LinuxSpeDriver::rules().format` field for field;
//! - which fields the driver hides without a feature (`arm_spe_pmu_format_attr_is_visible()`)
//!   and which it refuses without one (`arm_spe_pmu_event_init()`), read from their `if`s and
//!   replayed against `perf::event_init` and `PerfField::needs`;
//! - the event filter rule (6.12's per-version masks, 7.3's probe) and the period floor;
//! - the register fields: every `Field`/`Enum` of the SPE registers in
//!   arch/arm64/tools/sysreg must appear in our field tables at the same bits (our tables may
//!   add fields of newer Arm ARM releases, but only where the tree has `Res0`).

use pmu_linux_source::{self as common, Tree};

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use pmu_armv8::spe::perf::{
    event_init, kernel_registers, DriverRules, EventFilterRes0, FieldNeeds, LinuxSpeDriver,
    PerfEventAttr, PerfField, PerfFormat, PerfTarget, PeriodFloor,
};
use pmu_armv8::spe::{SpeCapabilities, SpeRegister, SpeVersion};

/// The crate's rules for the release of `tree`.
fn driver_of(tree: Tree) -> LinuxSpeDriver {
    let driver = LinuxSpeDriver::parse(tree.version())
        .unwrap_or_else(|| panic!("no LinuxSpeDriver for Linux {}", tree.version()));
    assert_eq!(driver.version(), tree.version());
    driver
}

fn kernel_files(tree: Tree) -> (String, String) {
    let root = tree.extract(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        "spe-src",
        &["*/drivers/perf/arm_spe_pmu.c", "*/arch/arm64/tools/sysreg"],
    );
    let driver = fs::read_to_string(common::find(&root, "drivers/perf/arm_spe_pmu.c")).unwrap();
    let sysreg = fs::read_to_string(common::find(&root, "arch/arm64/tools/sysreg")).unwrap();
    (driver, sysreg)
}

/// `ATTR_CFG_FLD_<rest>` defines: `rest -> (value, comment)`.
fn attr_defines(driver: &str) -> BTreeMap<String, (String, String)> {
    let mut defines = BTreeMap::new();
    for line in driver.lines() {
        let mut words = line.split_whitespace();
        if words.next() != Some("#define") {
            continue;
        }
        let (Some(name), Some(value)) = (words.next(), words.next()) else {
            continue;
        };
        if let Some(rest) = name.strip_prefix("ATTR_CFG_FLD_") {
            let comment = line
                .split_once("/*")
                .map(|(_, c)| c.trim_end().trim_end_matches("*/").trim().to_string())
                .unwrap_or_default();
            defines.insert(rest.to_string(), (value.to_string(), comment));
        }
    }
    defines
}

/// `name -> "configN:lo[-hi]"` from the driver's defines, for the names it generates
/// format attributes for.
fn kernel_format_entries(driver: &str) -> BTreeMap<String, String> {
    let defines = attr_defines(driver);
    let mut entries = BTreeMap::new();
    for line in driver.lines() {
        let Some(rest) = line.trim().strip_prefix("GEN_PMU_FORMAT_ATTR(") else {
            continue;
        };
        let name = rest.trim_end_matches(';').trim_end_matches(')');
        let get = |suffix: &str| {
            defines
                .get(&format!("{name}_{suffix}"))
                .unwrap_or_else(|| panic!("ATTR_CFG_FLD_{name}_{suffix} not defined"))
                .0
                .clone()
        };
        let (cfg, lo, hi) = (get("CFG"), get("LO"), get("HI"));
        // include/linux/perf/arm_pmu.h: (lo) == (hi) ? #cfg ":" #lo "\n" : #cfg ":" #lo "-" #hi
        let text = if lo == hi {
            format!("{cfg}:{lo}\n")
        } else {
            format!("{cfg}:{lo}-{hi}")
        };
        entries.insert(name.to_string(), text);
    }
    entries
}

/// The tree's `GEN_PMU_FORMAT_ATTR`s, parsed, must be the tree's documented format.
#[test]
fn perf_format_matches_arm_spe_pmu_c() {
    for tree in Tree::ALL {
        let (driver, _) = kernel_files(tree);
        let entries = kernel_format_entries(&driver);
        let ours = driver_of(tree).rules().format;
        assert_eq!(
            entries.len(),
            ours.iter().count(),
            "Linux {}'s arm_spe_pmu.c generates {} format attributes: {entries:?}",
            tree.version(),
            entries.len()
        );
        for name in entries.keys() {
            assert!(
                PerfField::from_name(name).is_some(),
                "Linux {} has a format field `{name}` this crate does not know",
                tree.version()
            );
        }
        let kernel =
            PerfFormat::from_entries(entries.iter().map(|(n, t)| (n.as_str(), t.as_str())))
                .expect("kernel format entries parse");
        for field in PerfField::ALL {
            assert_eq!(
                kernel.field(field),
                ours.field(field),
                "Linux {} `{}`: kernel {:?}, ours {:?}",
                tree.version(),
                field.name(),
                entries.get(field.name()),
                ours.field(field).map(|f| f.to_string())
            );
        }
        assert_eq!(kernel, ours);
    }
    // The two documented layouts, by name, as the tests above found them.
    assert_eq!(
        LinuxSpeDriver::Linux6_12.rules().format,
        PerfFormat::linux_6_12()
    );
    assert_eq!(
        LinuxSpeDriver::Linux7_3.rules().format,
        PerfFormat::linux_7_3()
    );
}

/// The body of the C function whose definition starts with `signature`.
fn function_body<'a>(driver: &'a str, signature: &str) -> &'a str {
    let start = driver
        .find(signature)
        .unwrap_or_else(|| panic!("`{signature}` not in arm_spe_pmu.c"));
    &driver[start..start + driver[start..].find("\n}").unwrap()]
}

/// The `if (...)` conditions of `body` whose statement is `return <ret>;`, whitespace folded.
fn conditions_returning(body: &str, ret: &str) -> Vec<String> {
    let folded: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    let needle = format!("return {ret};");
    let mut out = Vec::new();
    let mut rest = folded.as_str();
    while let Some(at) = rest.find(&needle) {
        let before = &rest[..at];
        if let Some(cond) = before.rfind("if (") {
            out.push(before[cond..].to_string());
        }
        rest = &rest[at + needle.len()..];
    }
    out
}

/// Every `<prefix><identifier>` in `text`.
fn identifiers_after(text: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        let tail = &rest[at + prefix.len()..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        out.insert(tail[..end].to_string());
        rest = &tail[end..];
    }
    out
}

/// The capabilities a driver `SPE_PMU_FEAT_<name>` stands for, as what a PE lacking it has:
/// FEAT_SPEv1p2 with every filter (PMSIDR_EL1 FE 0, FT 1, FL 2, FnE 6, FDS 7, EFT 26;
/// Interval 1024, 64-byte records, 12-bit counters) minus that feature, and `FieldNeeds`.
fn without_feature(feature: &str) -> (SpeCapabilities, FieldNeeds) {
    let all = EVERY_FEATURE_PMSIDR;
    let (clear, needs) = match feature {
        "FILT_EVT" => (1 << 0, FieldNeeds::Nothing),
        "FILT_TYP" => (1 << 1, FieldNeeds::Nothing),
        "FILT_LAT" => (1 << 2, FieldNeeds::Nothing),
        "INV_FILT_EVT" => (1 << 6, FieldNeeds::InvertedEventFilter),
        "FDS" => (1 << 7, FieldNeeds::DataSourceFilter),
        "EFT" => (1 << 26, FieldNeeds::ExtendedTypeFilter),
        // __arm_spe_pmu_dev_probe(): `pmsver >= ID_AA64DFR0_EL1_PMSVer_V1P2` (checked below).
        "DISCARD" => {
            return (
                SpeCapabilities::decode_raw(SpeVersion::V1p1, all, 0),
                FieldNeeds::Version1p2,
            )
        }
        other => panic!("SPE_PMU_FEAT_{other}: a feature this test does not know"),
    };
    (
        SpeCapabilities::decode_raw(SpeVersion::V1p2, all & !clear, 0),
        needs,
    )
}

/// FEAT_SPEv1p2 with every feature the drivers test.
fn every_feature() -> SpeCapabilities {
    SpeCapabilities::decode_raw(SpeVersion::V1p2, EVERY_FEATURE_PMSIDR, 0)
}

/// PMSIDR_EL1 FE 0, FT 1, FL 2, FnE 6, FDS 7, EFT 26, Interval 1024 (0b0100 at 11:8), MaxSize
/// 64 bytes (0b0110 at 15:12), CountSize 12 bits (0b0010 at 19:16).
const EVERY_FEATURE_PMSIDR: u64 = 0b111 | 1 << 6 | 1 << 7 | 1 << 26 | 0x2_6400;

/// `arm_spe_pmu_format_attr_is_visible()`: each `if` that returns 0 names format attributes
/// and the feature whose absence hides them. Our `PerfField::needs` must say the same, for
/// every field of the tree's format, and `DriverRules::published_format` must hide exactly
/// those on a PE without the feature.
#[test]
fn hidden_fields_match_format_attr_is_visible() {
    for tree in Tree::ALL {
        let (driver, _) = kernel_files(tree);
        let rules = driver_of(tree).rules();
        let body = function_body(&driver, "arm_spe_pmu_format_attr_is_visible(");
        let mut gated: BTreeMap<String, String> = BTreeMap::new();
        for cond in conditions_returning(body, "0") {
            let features = identifiers_after(&cond, "SPE_PMU_FEAT_");
            assert_eq!(features.len(), 1, "Linux {}: {cond}", tree.version());
            let feature = features.into_iter().next().unwrap();
            for name in identifiers_after(&cond, "&format_attr_") {
                let name = name.trim_end_matches(".attr").to_string();
                gated.insert(name, feature.clone());
            }
        }
        assert!(gated.contains_key("inv_event_filter"), "{gated:?}");
        if tree == Tree::Linux7_3 {
            // __arm_spe_pmu_dev_probe() sets DISCARD from the version, not from PMSIDR_EL1.
            assert!(driver.contains("if (spe_pmu->pmsver >= ID_AA64DFR0_EL1_PMSVer_V1P2)\n\t\tspe_pmu->features |= SPE_PMU_FEAT_DISCARD;"));
        }
        for (field, _) in rules.format.iter() {
            let needs = match gated.get(field.name()) {
                Some(feature) => without_feature(feature).1,
                None => FieldNeeds::Nothing,
            };
            assert_eq!(
                field.needs(),
                needs,
                "Linux {} `{}`",
                tree.version(),
                field.name()
            );
            if let Some(feature) = gated.get(field.name()) {
                let (lacking, _) = without_feature(feature);
                assert_eq!(rules.published_format(&lacking).field(field), None);
                assert!(rules
                    .published_format(&every_feature())
                    .field(field)
                    .is_some());
            }
        }
    }
}

/// The attribute that makes the driver compute `what` (a PMSFCR_EL1 field name, or a format
/// field name): the format field whose `ATTR_CFG_FLD_*_CFG` comment names `PMSFCR_EL1.<what>`
/// (the type bits), or the field whose non-zero value sets the enable
/// (`arm_spe_event_to_pmsfcr()`: FE from `event_filter`, FnE from `inv_event_filter`, FL from
/// `min_latency`; FT from any type bit, `branch_filter` here), set to a value every rule and
/// version accepts (event 7, mispredicted, is filterable on every version).
fn attr_setting(
    rules: &DriverRules,
    defines: &BTreeMap<String, (String, String)>,
    what: &str,
) -> PerfEventAttr {
    let field = match what {
        "FE" => PerfField::EventFilter,
        "FnE" => PerfField::InvEventFilter,
        "FL" => PerfField::MinLatency,
        "FT" => PerfField::BranchFilter,
        name => {
            let by_comment = defines.iter().find_map(|(k, (_, comment))| {
                (comment == &format!("PMSFCR_EL1.{name}"))
                    .then(|| k.trim_end_matches("_CFG").to_string())
            });
            let name = by_comment.unwrap_or_else(|| name.to_string());
            PerfField::from_name(&name).unwrap_or_else(|| panic!("no field for `{what}`"))
        }
    };
    let place = rules.format.field(field).expect("the tree has the field");
    let value: u64 = if field.is_mask() { 0x80 } else { 1 };
    let mut attr = PerfEventAttr {
        sample_period: 4096,
        ..PerfEventAttr::default()
    };
    let word = match place.word.name() {
        "config" => &mut attr.config,
        "config1" => &mut attr.config1,
        "config2" => &mut attr.config2,
        "config3" => &mut attr.config3,
        _ => &mut attr.config4,
    };
    *word |= value << place.lo;
    attr
}

/// `arm_spe_pmu_event_init()`: each `if` that returns -EOPNOTSUPP on a missing
/// `SPE_PMU_FEAT_*` names what it tests (`PMSFCR_EL1_<bit>` of the computed PMSFCR_EL1, a
/// format field through `ATTR_CFG_GET_FLD`, or the data source filter through
/// `arm_spe_event_to_pmsdsfr()`). Replayed: an attribute setting each of them is refused by
/// our `event_init` on a PE without that feature and accepted on one with every feature.
#[test]
fn refusals_match_event_init() {
    for tree in Tree::ALL {
        let (driver, _) = kernel_files(tree);
        let rules = driver_of(tree).rules();
        let defines = attr_defines(&driver);
        let body = function_body(&driver, "static int arm_spe_pmu_event_init(");
        let mut replayed = 0;
        for cond in conditions_returning(body, "-EOPNOTSUPP") {
            let features = identifiers_after(&cond, "SPE_PMU_FEAT_");
            let Some(feature) = features.iter().next() else {
                continue;
            };
            let mut tested: Vec<String> = identifiers_after(&cond, "PMSFCR_EL1_")
                .into_iter()
                .collect();
            for field in identifiers_after(&cond, "ATTR_CFG_GET_FLD(&event->attr, ") {
                tested.push(field);
            }
            if cond.contains("arm_spe_event_to_pmsdsfr(event) != U64_MAX") {
                tested.push("inv_data_src_filter".to_string());
            }
            assert!(
                !tested.is_empty(),
                "Linux {}: nothing tested in {cond}",
                tree.version()
            );
            let (lacking, _) = without_feature(feature);
            for what in tested {
                let attr = attr_setting(&rules, &defines, &what);
                let on = |caps: &SpeCapabilities| {
                    event_init(&attr, &PerfTarget::new(rules.driver, caps))
                };
                assert!(
                    on(&lacking).is_err(),
                    "Linux {}: `{what}` without SPE_PMU_FEAT_{feature} must be refused",
                    tree.version()
                );
                assert_eq!(
                    on(&every_feature()),
                    Ok(()),
                    "Linux {}: `{what}`",
                    tree.version()
                );
                replayed += 1;
            }
        }
        let expected = match tree {
            // FE, FnE, FT, FL.
            Tree::Linux6_12 => 4,
            // And LDm, STm, Bm, SIMD, SIMDm, FP, FPm, discard, inv_data_src_filter.
            Tree::Linux7_3 => 13,
        };
        assert_eq!(replayed, expected, "Linux {}", tree.version());
    }
}

/// The event filter rule of each tree, read from the source: 6.12 has
/// `arm_spe_pmsevfr_res0()` (its masks are evaluated in `pmsevfr_res0_rule_matches_the_kernel`),
/// 7.3 writes all ones to PMSEVFR_EL1 at probe, keeps the complement of the read-back and
/// refuses both filters against it. And the period floor of `arm_spe_event_sanitise_period()`:
/// the PMU's minimum (6.12) or `FIELD_PREP(PMSIRR_EL1_INTERVAL_MASK, 1)` (7.3), 256 because
/// INTERVAL starts at bit 8 (sysreg `PMSIRR_EL1`, `Field 31:8 INTERVAL`).
#[test]
fn event_filter_rule_and_period_floor_match_the_source() {
    for tree in Tree::ALL {
        let (driver, sysreg) = kernel_files(tree);
        let rules = driver_of(tree).rules();
        let table = driver.contains("static u64 arm_spe_pmsevfr_res0(");
        let probed = driver.contains("write_sysreg_s(U64_MAX, SYS_PMSEVFR_EL1);")
            && driver.contains("spe_pmu->pmsevfr_res0 = ~read_sysreg_s(SYS_PMSEVFR_EL1);");
        let init = function_body(&driver, "static int arm_spe_pmu_event_init(");
        let expected = match (table, probed) {
            (true, false) => EventFilterRes0::PerVersionTable,
            (false, true) => {
                for filter in ["arm_spe_event_to_pmsevfr", "arm_spe_event_to_pmsnevfr"] {
                    assert!(init.contains(&format!("if ({filter}(event) & spe_pmu->pmsevfr_res0)")));
                }
                EventFilterRes0::ProbedReadBack
            }
            other => panic!("Linux {}: neither or both rules: {other:?}", tree.version()),
        };
        assert_eq!(
            rules.event_filter_res0,
            expected,
            "Linux {}",
            tree.version()
        );

        let sanitise = function_body(&driver, "static void arm_spe_event_sanitise_period(");
        let floor = if sanitise.contains("FIELD_PREP(PMSIRR_EL1_INTERVAL_MASK, 1)") {
            PeriodFloor::OneIntervalUnit
        } else {
            assert!(
                sanitise.contains("period = spe_pmu->min_period;"),
                "{sanitise}"
            );
            PeriodFloor::MinimumInterval
        };
        assert_eq!(rules.period_floor, floor, "Linux {}", tree.version());
        let (fields, _) = sysreg_block(&sysreg, "PMSIRR_EL1");
        let (_, _, lsb) = fields.iter().find(|(n, _, _)| n == "INTERVAL").unwrap();
        let attr = PerfEventAttr {
            sample_period: 1,
            ..PerfEventAttr::default()
        };
        let programmed = kernel_registers(&attr, &rules, true, false, false, 1024).pmsirr;
        match floor {
            PeriodFloor::OneIntervalUnit => assert_eq!(programmed, 1 << lsb),
            PeriodFloor::MinimumInterval => assert_eq!(programmed, 1024),
        }
    }
}

/// A named field of a sysreg block: (name, msb, lsb).
type SysregField = (String, u8, u8);

/// One register block of the sysreg file: its fields, and its Res0 ranges as (msb, lsb).
fn sysreg_block(sysreg: &str, register: &str) -> (Vec<SysregField>, Vec<(u8, u8)>) {
    let mut fields = Vec::new();
    let mut res0 = Vec::new();
    let mut inside = false;
    for line in sysreg.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["Sysreg", name, ..] => inside = *name == register,
            ["EndSysreg"] => inside = false,
            [kind @ ("Field" | "Enum" | "Res0" | "Res1"), bits, rest @ ..] if inside => {
                let (msb, lsb) = match bits.split_once(':') {
                    Some((m, l)) => (m.parse().unwrap(), l.parse().unwrap()),
                    None => {
                        let b = bits.parse().unwrap();
                        (b, b)
                    }
                };
                if *kind == "Res0" {
                    res0.push((msb, lsb));
                } else if let Some(name) = rest.first() {
                    fields.push((name.to_string(), msb, lsb));
                }
            }
            _ => {}
        }
    }
    assert!(!fields.is_empty(), "{register} not found in sysreg");
    (fields, res0)
}

#[test]
fn register_fields_match_sysreg() {
    for tree in Tree::ALL {
        let (_, sysreg) = kernel_files(tree);
        let mut registers = vec![
            SpeRegister::Pmscr,
            SpeRegister::Pmsfcr,
            SpeRegister::Pmslatfr,
            SpeRegister::Pmsirr,
            SpeRegister::Pmsicr,
            SpeRegister::Pmbptr,
            SpeRegister::Pmblimitr,
            SpeRegister::Pmbsr,
        ];
        if tree == Tree::Linux7_3 {
            // 6.12's sysreg has no PMSDSFR_EL1.
            registers.push(SpeRegister::Pmsdsfr);
        }
        let mut compared = 0;
        for register in registers {
            let (kernel, res0) = sysreg_block(&sysreg, register.name());
            let ours: Vec<_> = register.fields(0).collect();
            for (name, msb, lsb) in &kernel {
                let mine = ours
                    .iter()
                    .find(|f| f.name.eq_ignore_ascii_case(name))
                    .unwrap_or_else(|| {
                        panic!(
                            "Linux {}: {register}.{name} missing from our table",
                            tree.version()
                        )
                    });
                assert_eq!(
                    (mine.msb, mine.lsb),
                    (*msb, *lsb),
                    "Linux {}: {register}.{name}: ours {}:{}, sysreg {msb}:{lsb}",
                    tree.version(),
                    mine.msb,
                    mine.lsb
                );
                compared += 1;
            }
            for mine in &ours {
                if kernel
                    .iter()
                    .any(|(n, _, _)| mine.name.eq_ignore_ascii_case(n))
                {
                    continue;
                }
                // A field of a newer Arm ARM: the tree must have those bits as Res0.
                assert!(
                    res0.iter().any(|&(m, l)| l <= mine.lsb && mine.msb <= m),
                    "{register}.{} ({}:{}) is neither a Linux {} field nor in its Res0 ranges",
                    mine.name,
                    mine.msb,
                    mine.lsb,
                    tree.version()
                );
            }
        }
        assert!(
            compared >= 25,
            "Linux {}: only {compared} fields compared",
            tree.version()
        );
    }
}

/// Evaluates the C constant expressions of `PMSEVFR_EL1_RES0_*` in
/// arch/arm64/include/asm/sysreg.h: `GENMASK_ULL(h, l)`, `BIT_ULL(n)`, `|`, `&`, `~`,
/// parentheses and the names of other macros of `defines`.
struct MaskExpr<'a> {
    tokens: Vec<String>,
    pos: usize,
    defines: &'a BTreeMap<String, String>,
}

impl MaskExpr<'_> {
    fn tokenize(text: &str) -> Vec<String> {
        let mut tokens = Vec::new();
        let mut word = String::new();
        for c in text.chars() {
            if c.is_ascii_alphanumeric() || c == '_' {
                word.push(c);
                continue;
            }
            if !word.is_empty() {
                tokens.push(std::mem::take(&mut word));
            }
            if !c.is_whitespace() && c != '\\' {
                tokens.push(c.to_string());
            }
        }
        if !word.is_empty() {
            tokens.push(word);
        }
        tokens
    }

    fn eval(defines: &BTreeMap<String, String>, name: &str) -> u64 {
        let text = defines
            .get(name)
            .unwrap_or_else(|| panic!("{name} is not defined in asm/sysreg.h"));
        let mut e = MaskExpr {
            tokens: Self::tokenize(text),
            pos: 0,
            defines,
        };
        let value = e.or();
        assert_eq!(
            e.pos,
            e.tokens.len(),
            "{name}: unparsed tail {:?}",
            e.tokens
        );
        value
    }

    fn peek(&self) -> Option<&str> {
        self.tokens.get(self.pos).map(String::as_str)
    }

    fn take(&mut self) -> String {
        let t = self
            .tokens
            .get(self.pos)
            .cloned()
            .expect("expression ends early");
        self.pos += 1;
        t
    }

    fn expect(&mut self, what: &str) {
        let t = self.take();
        assert_eq!(t, what, "in {:?}", self.tokens);
    }

    fn or(&mut self) -> u64 {
        let mut v = self.and();
        while self.peek() == Some("|") {
            self.pos += 1;
            v |= self.and();
        }
        v
    }

    fn and(&mut self) -> u64 {
        let mut v = self.unary();
        while self.peek() == Some("&") {
            self.pos += 1;
            v &= self.unary();
        }
        v
    }

    fn number(&mut self) -> u64 {
        let t = self.take();
        t.trim_end_matches(['U', 'L'])
            .parse()
            .unwrap_or_else(|_| panic!("not a number: {t}"))
    }

    fn unary(&mut self) -> u64 {
        match self.take().as_str() {
            "~" => !self.unary(),
            "(" => {
                let v = self.or();
                self.expect(")");
                v
            }
            "GENMASK_ULL" => {
                self.expect("(");
                let h = self.number();
                self.expect(",");
                let l = self.number();
                self.expect(")");
                (u64::MAX << l) & (u64::MAX >> (63 - h))
            }
            "BIT_ULL" => {
                self.expect("(");
                let n = self.number();
                self.expect(")");
                1 << n
            }
            name => Self::eval(self.defines, name),
        }
    }
}

/// `#define NAME value` of a C file, with backslash continuations joined.
fn c_defines(source: &str) -> BTreeMap<String, String> {
    let joined = source.replace("\\\n", " ");
    let mut defines = BTreeMap::new();
    for line in joined.lines() {
        let Some(rest) = line.trim_start().strip_prefix("#define") else {
            continue;
        };
        let rest = rest.trim_start();
        let name_end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let (name, value) = rest.split_at(name_end);
        defines.insert(name.to_string(), value.trim().to_string());
    }
    defines
}

/// Linux 6.12's per-version rule for `event_filter`/`inv_event_filter`: the masks of
/// arch/arm64/include/asm/sysreg.h, evaluated from the kernel's own definitions, and the
/// version -> mask mapping of `arm_spe_pmsevfr_res0()` in drivers/perf/arm_spe_pmu.c, read
/// from its `case`/`default` lines, must equal `perf::linux_6_12_pmsevfr_res0()` for every
/// version.
#[test]
fn pmsevfr_res0_rule_matches_the_kernel() {
    use pmu_armv8::spe::perf::linux_6_12_pmsevfr_res0;
    use pmu_armv8::spe::SpeVersion;

    let root = Tree::Linux6_12.extract(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        "spe-res0",
        &[
            "*/drivers/perf/arm_spe_pmu.c",
            "*/arch/arm64/include/asm/sysreg.h",
        ],
    );
    let header =
        fs::read_to_string(common::find(&root, "arch/arm64/include/asm/sysreg.h")).unwrap();
    let driver = fs::read_to_string(common::find(&root, "drivers/perf/arm_spe_pmu.c")).unwrap();
    let defines = c_defines(&header);

    // The switch of arm_spe_pmsevfr_res0(): each `case ID_AA64DFR0_EL1_PMSVer_X:` (and
    // `default:`) up to its `return MASK;`.
    let start = driver
        .find("static u64 arm_spe_pmsevfr_res0(")
        .expect("arm_spe_pmsevfr_res0() in arm_spe_pmu.c");
    let body = &driver[start..start + driver[start..].find("\n}").unwrap()];
    let mut by_label: BTreeMap<String, u64> = BTreeMap::new();
    let mut pending: Vec<String> = Vec::new();
    for line in body.lines().map(str::trim) {
        if let Some(label) = line.strip_prefix("case ") {
            pending.push(label.trim_end_matches(':').to_string());
        } else if line == "default:" {
            pending.push("default".to_string());
        } else if let Some(mask) = line.strip_prefix("return ") {
            let value = MaskExpr::eval(&defines, mask.trim_end_matches(';'));
            for label in pending.drain(..) {
                by_label.insert(label, value);
            }
        }
    }
    let label = |name: &str| {
        *by_label
            .get(name)
            .unwrap_or_else(|| panic!("no `{name}` in arm_spe_pmsevfr_res0(): {by_label:?}"))
    };
    let kernel = [
        (SpeVersion::V1p0, label("ID_AA64DFR0_EL1_PMSVer_IMP")),
        (SpeVersion::V1p1, label("ID_AA64DFR0_EL1_PMSVer_V1P1")),
        (SpeVersion::V1p2, label("ID_AA64DFR0_EL1_PMSVer_V1P2")),
        (SpeVersion::V1p3, label("default")),
        (SpeVersion::V1p4, label("default")),
        (SpeVersion::V1p5, label("default")),
        (SpeVersion::Newer(9), label("default")),
    ];
    for (version, mask) in kernel {
        assert_eq!(
            linux_6_12_pmsevfr_res0(version),
            mask,
            "{version}: ours {:#x}, kernel {mask:#x}",
            linux_6_12_pmsevfr_res0(version)
        );
    }
    // The fact the perf bridge exists for: from v1p2 on, LLC miss (E[9]) stays refused.
    assert_ne!(label("default") & (1 << 9), 0);
}
