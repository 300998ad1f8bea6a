//! Checks the perf side that the PMUv3p9 tests of `user_enable` play (src/user_enable/
//! pmuv3p9_tests.rs) against the Linux 7.3 source in Debian's `linux-source-7.3` tarball,
//! read at test time, and this crate's register bits against it:
//!
//! - drivers/perf/arm_pmuv3.c `armv8pmu_enable_user_access()`: on PMUv3p9 PMUACR_EL1 =
//!   the used counters with user read (`write_pmuacr(mask)`), PMUSERENR_EL0 = ER | UEN,
//!   plus CR unless `avoid_pmccntr`; `armv8pmu_disable_user_access()`: PMUSERENR_EL0 = 0,
//!   PMUACR_EL1 not written; `armv8pmu_start()` chooses between them on
//!   `sysctl_perf_user_access && nr_user`. Nothing in the driver sets PMUSERENR_EL0.TID,
//!   the module's mark;
//! - include/linux/perf/arm_pmuv3.h `ARMV8_PMU_USERENR_*` and arch/arm64/tools/sysreg
//!   `PMUACR_EL1` (encoding and fields) against `registers::{pmuserenr_el0, pmuacr_el1}`;
//!   arch/arm64/include/asm/arm_pmuv3.h `is_pmuv3p9()` against `PmuVersion::PmuV3p9`.

use std::fs;
use std::path::Path;

use pmu_armv8::registers::{PMUACR_EL1, PMUSERENR_EL0};
use pmu_armv8::PmuVersion;
use pmu_linux_source::{find, Tree};

struct Sources {
    driver: String,
    header: String,
    asm_header: String,
    sysreg: String,
}

fn sources() -> Sources {
    let root = Tree::Linux7_3.extract(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        "pmuv3p9-src",
        &[
            "*/drivers/perf/arm_pmuv3.c",
            "*/include/linux/perf/arm_pmuv3.h",
            "*/arch/arm64/include/asm/arm_pmuv3.h",
            "*/arch/arm64/tools/sysreg",
        ],
    );
    let read = |p: &str| fs::read_to_string(find(&root, p)).unwrap();
    Sources {
        driver: read("drivers/perf/arm_pmuv3.c"),
        header: read("include/linux/perf/arm_pmuv3.h"),
        asm_header: read("arch/arm64/include/asm/arm_pmuv3.h"),
        sysreg: read("arch/arm64/tools/sysreg"),
    }
}

/// The body of the C function `name` (from its `static … name(` line to the first line
/// that is a lone `}`), with runs of whitespace collapsed to one space.
fn body(source: &str, name: &str) -> String {
    let start = source
        .lines()
        .position(|l| l.starts_with("static") && l.contains(&format!(" {name}(")))
        .unwrap_or_else(|| panic!("{name} not found"));
    let lines: Vec<&str> = source.lines().skip(start).collect();
    let end = lines.iter().position(|l| *l == "}").unwrap();
    lines[..=end]
        .join("\n")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn contains_in_order(text: &str, needles: &[&str]) {
    let mut at = 0;
    for needle in needles {
        let found = text[at..]
            .find(needle)
            .unwrap_or_else(|| panic!("`{needle}` missing (after byte {at}) in: {text}"));
        at += found + needle.len();
    }
}

#[test]
fn perfs_user_access_sequences_are_the_ones_the_tests_play() {
    let s = sources();
    let enable = body(&s.driver, "armv8pmu_enable_user_access");
    contains_in_order(
        &enable,
        &[
            "u64 userenr = ARMV8_PMU_USERENR_ER | ARMV8_PMU_USERENR_UEN;",
            "if (is_pmuv3p9(cpu_pmu->pmuver)) {",
            "for_each_set_bit(i, cpuc->used_mask, ARMPMU_MAX_HWEVENTS) {",
            "if (armv8pmu_event_has_user_read(cpuc->events[i])) mask |= BIT(i);",
            "write_pmuacr(mask);",
            "} else {",
            "if (!cpu_pmu->avoid_pmccntr) userenr |= ARMV8_PMU_USERENR_CR;",
            "update_pmuserenr(userenr);",
        ],
    );
    let disable = body(&s.driver, "armv8pmu_disable_user_access");
    assert!(disable.contains("update_pmuserenr(0);"), "{disable}");
    assert!(!disable.contains("pmuacr"), "{disable}");
    let start = body(&s.driver, "armv8pmu_start");
    contains_in_order(
        &start,
        &[
            "if (sysctl_perf_user_access && nr_user) armv8pmu_enable_user_access(cpu_pmu);",
            "else armv8pmu_disable_user_access();",
        ],
    );
    // TID is the module's mark: perf never writes it.
    assert!(!s.driver.contains("USERENR_TID"));
    assert!(!s.header.contains("USERENR_TID"));
}

#[test]
fn register_bits_match_linux_7_3() {
    let s = sources();
    for (define, field) in [
        (
            "ARMV8_PMU_USERENR_EN\t(1 << 0)",
            PMUSERENR_EL0::EN::SET.value,
        ),
        (
            "ARMV8_PMU_USERENR_SW\t(1 << 1)",
            PMUSERENR_EL0::SW::SET.value,
        ),
        (
            "ARMV8_PMU_USERENR_CR\t(1 << 2)",
            PMUSERENR_EL0::CR::SET.value,
        ),
        (
            "ARMV8_PMU_USERENR_ER\t(1 << 3)",
            PMUSERENR_EL0::ER::SET.value,
        ),
        (
            "ARMV8_PMU_USERENR_UEN\t(1 << 4)",
            PMUSERENR_EL0::UEN::SET.value,
        ),
    ] {
        assert!(s.header.contains(&format!("#define {define}")), "{define}");
        let shift: u32 = define
            .rsplit("<< ")
            .next()
            .unwrap()
            .trim_end_matches(')')
            .parse()
            .unwrap();
        assert_eq!(field, 1 << shift, "{define}");
    }
    let acr = s
        .sysreg
        .split("Sysreg\tPMUACR_EL1\t")
        .nth(1)
        .and_then(|rest| rest.split("EndSysreg").next())
        .expect("PMUACR_EL1 in arch/arm64/tools/sysreg");
    assert!(acr.starts_with("3\t0\t9\t14\t4"), "{acr}");
    for line in [
        "Res0\t63:33",
        "Field\t32\tF0",
        "Field\t31\tC",
        "Field\t30:0\tP",
    ] {
        assert!(acr.contains(line), "{line}: {acr}");
    }
    // The fields at those bits.
    assert_eq!(PMUACR_EL1::F0::SET.value, 1 << 32);
    assert_eq!(PMUACR_EL1::C::SET.value, 1 << 31);
    assert_eq!(PMUACR_EL1::P.mask << PMUACR_EL1::P.shift, (1 << 31) - 1);
    assert!(s
        .asm_header
        .contains("return pmuver >= ID_AA64DFR0_EL1_PMUVer_V3P9;"));
    let v3p9 = s
        .sysreg
        .lines()
        .find(|l| l.contains("V3P9"))
        .expect("PMUVer V3P9 in sysreg");
    assert!(v3p9.contains("0b1001"), "{v3p9}");
    assert_eq!(PmuVersion::PmuV3p9.pmuver(), 0b1001);
}
