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

mod common;

use std::collections::BTreeMap;
use std::fs;

use pmu_armv8::spe::perf::{PerfField, PerfFormat};
use pmu_armv8::spe::SpeRegister;

fn kernel_files() -> (String, String) {
    let root = common::extract(
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
