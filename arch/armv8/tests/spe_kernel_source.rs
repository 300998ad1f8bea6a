//! Checks this crate's SPE bit positions against the Linux 6.12 source in the installed
//! `linux-source-6.12` tarball, read at test time:
//!
//! - the perf format of the `arm_spe` PMU: every `GEN_PMU_FORMAT_ATTR(name)` of
//!   drivers/perf/arm_spe_pmu.c with its `ATTR_CFG_FLD_<name>_{CFG,LO,HI}` defines, rendered
//!   the way `__GEN_PMU_FORMAT_ATTR` renders the sysfs file, must equal
//!   `PerfFormat::linux_6_12()` field for field;
//! - the register fields: every `Field`/`Enum` of the SPE registers in
//!   arch/arm64/tools/sysreg must appear in our field tables at the same bits (our tables may
//!   add fields of newer Arm ARM releases, but only where 6.12 has `Res0`).

use pmu_linux_source as common;

use std::collections::BTreeMap;
use std::fs;

use pmu_armv8::spe::perf::{PerfField, PerfFormat};
use pmu_armv8::spe::SpeRegister;

fn kernel_files() -> (String, String) {
    let root = common::extract(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")),
        "spe-src",
        &["*/drivers/perf/arm_spe_pmu.c", "*/arch/arm64/tools/sysreg"],
    );
    let driver = fs::read_to_string(common::find(&root, "drivers/perf/arm_spe_pmu.c")).unwrap();
    let sysreg = fs::read_to_string(common::find(&root, "arch/arm64/tools/sysreg")).unwrap();
    (driver, sysreg)
}

/// `name -> "configN:lo[-hi]"` from the driver's defines, for the names it generates
/// format attributes for.
fn kernel_format_entries(driver: &str) -> BTreeMap<String, String> {
    let mut defines: BTreeMap<String, String> = BTreeMap::new();
    for line in driver.lines() {
        let mut words = line.split_whitespace();
        if words.next() != Some("#define") {
            continue;
        }
        let (Some(name), Some(value)) = (words.next(), words.next()) else {
            continue;
        };
        if let Some(rest) = name.strip_prefix("ATTR_CFG_FLD_") {
            defines.insert(rest.to_string(), value.to_string());
        }
    }
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

#[test]
fn perf_format_matches_arm_spe_pmu_c() {
    let (driver, _) = kernel_files();
    let entries = kernel_format_entries(&driver);
    assert_eq!(
        entries.len(),
        10,
        "arm_spe_pmu.c generates {} format attributes: {entries:?}",
        entries.len()
    );
    for name in entries.keys() {
        assert!(
            PerfField::from_name(name).is_some(),
            "the kernel has a format field `{name}` this crate does not know"
        );
    }
    let kernel = PerfFormat::from_entries(entries.iter().map(|(n, t)| (n.as_str(), t.as_str())))
        .expect("kernel format entries parse");
    let ours = PerfFormat::linux_6_12();
    for field in PerfField::ALL {
        assert_eq!(
            kernel.field(field),
            ours.field(field),
            "`{}`: kernel {:?}, ours {:?}",
            field.name(),
            entries.get(field.name()),
            ours.field(field).map(|f| f.to_string())
        );
    }
    assert_eq!(kernel, ours);
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
    let (_, sysreg) = kernel_files();
    let registers = [
        SpeRegister::Pmscr,
        SpeRegister::Pmsfcr,
        SpeRegister::Pmslatfr,
        SpeRegister::Pmsirr,
        SpeRegister::Pmsicr,
        SpeRegister::Pmbptr,
        SpeRegister::Pmblimitr,
        SpeRegister::Pmbsr,
    ];
    let mut compared = 0;
    for register in registers {
        let (kernel, res0) = sysreg_block(&sysreg, register.name());
        let ours: Vec<_> = register.fields(0).collect();
        for (name, msb, lsb) in &kernel {
            let mine = ours
                .iter()
                .find(|f| f.name.eq_ignore_ascii_case(name))
                .unwrap_or_else(|| panic!("{register}.{name} missing from our table"));
            assert_eq!(
                (mine.msb, mine.lsb),
                (*msb, *lsb),
                "{register}.{name}: ours {}:{}, sysreg {msb}:{lsb}",
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
            // A field of a newer Arm ARM: 6.12 must have those bits as Res0.
            assert!(
                res0.iter().any(|&(m, l)| l <= mine.lsb && mine.msb <= m),
                "{register}.{} ({}:{}) is neither a 6.12 field nor in a 6.12 Res0 range",
                mine.name,
                mine.msb,
                mine.lsb
            );
        }
    }
    assert!(compared >= 25, "only {compared} fields compared");
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

    let root = common::extract(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")),
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
