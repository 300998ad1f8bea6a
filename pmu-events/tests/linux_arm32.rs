//! The 32-bit Raspberry Pi cores' tables against Linux's own event maps, read at test time
//! from Debian's `linux-source-6.12` (`/usr/src/linux-source-6.12.tar.xz`, or
//! `$LINUX_SOURCE_TARBALL`):
//!
//! - drivers/perf/arm_v6_pmu.c, `enum armv6_perf_types`: every code Linux names is an
//!   ARM1176 event of ours under Linux's name (0x20, Linux's `NOP`, excepted: see
//!   [`arm1176_agrees_with_armv6_perf_types`]);
//! - drivers/perf/arm_v7_pmu.c: every `ARMV7_PERFCTR_*` architectural number is the common
//!   event of ours that the define stands for, and every code of `armv7_a7_perf_map` and
//!   `armv7_a7_perf_cache_map` is a Cortex-A7 event of ours under that name.
//!
//! A missing tarball fails these tests with the command that installs it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use pmu_events::arm1176::ARM1176;
use pmu_events::common;
use pmu_events::CORTEX_A7;

/// The two files these tests read, as tar wildcards.
const SOURCES: [&str; 2] = ["*/drivers/perf/arm_v6_pmu.c", "*/drivers/perf/arm_v7_pmu.c"];

/// The text of `drivers/perf/<file>` from the Linux 6.12 source tarball, extracted once
/// into the test target directory (pmu-linux-source: a missing tarball fails the test
/// with the command that installs it).
fn linux_file(file: &str) -> String {
    let root = pmu_linux_source::extract(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        "pmu-events-arm32",
        &SOURCES,
    );
    let path = pmu_linux_source::find(&root, &format!("drivers/perf/{file}"));
    fs::read_to_string(&path).expect("read the extracted source")
}

/// A C integer literal (`0x1D`, `0xFF`, `7`).
fn c_number(literal: &str) -> u16 {
    let literal = literal.trim().trim_end_matches(',');
    let parsed = match literal
        .strip_prefix("0x")
        .or_else(|| literal.strip_prefix("0X"))
    {
        Some(hex) => u16::from_str_radix(hex, 16),
        None => literal.parse(),
    };
    parsed.unwrap_or_else(|e| panic!("`{literal}` is not a C number: {e}"))
}

/// Every `<prefix>NAME = value` (enum) or `#define <prefix>NAME value` line of `source`,
/// as NAME → value.
fn named_codes(source: &str, prefix: &str) -> BTreeMap<String, u16> {
    let mut codes = BTreeMap::new();
    for line in source.lines() {
        let line = line.trim();
        let line = line.strip_prefix("#define").map_or(line, str::trim_start);
        let Some(rest) = line.strip_prefix(prefix) else {
            continue;
        };
        let (name, value) = match rest.split_once('=') {
            Some((name, value)) => (name.trim(), value),
            None => match rest.split_once(char::is_whitespace) {
                Some((name, value)) => (name, value),
                None => continue,
            },
        };
        let value = value.trim();
        if value.is_empty() {
            continue;
        }
        let previous = codes.insert(name.to_owned(), c_number(value));
        assert_eq!(previous, None, "{prefix}{name} defined twice");
    }
    codes
}

/// The right-hand sides (`= NAME`) of the initializer `static const unsigned <table>…{…};`.
fn map_entries<'s>(source: &'s str, table: &str) -> Vec<&'s str> {
    let head = format!("static const unsigned {table}[");
    let start = source
        .find(&head)
        .unwrap_or_else(|| panic!("`{table}` is not in arm_v7_pmu.c"));
    let body = &source[start..];
    let body = &body[..body.find("};").expect("the table's closing brace")];
    body.lines()
        .filter_map(|line| line.split_once('=').map(|(_, rhs)| rhs))
        .map(|rhs| rhs.trim().trim_end_matches(',').trim())
        .filter(|rhs| !rhs.is_empty() && !rhs.starts_with('{'))
        .collect()
}

/// Linux's names for the ARMv7 architectural events (drivers/perf/arm_v7_pmu.c,
/// `ARMV7_PERFCTR_*` without the prefix) and the mnemonic the ARMv7 ARM (DDI 0406C,
/// C12.8 "Event numbers and mnemonics") and this crate give the same event.
const ARMV7_NAMES: [(&str, &str); 30] = [
    ("PMNC_SW_INCR", "SW_INCR"),
    ("L1_ICACHE_REFILL", "L1I_CACHE_REFILL"),
    ("ITLB_REFILL", "L1I_TLB_REFILL"),
    ("L1_DCACHE_REFILL", "L1D_CACHE_REFILL"),
    ("L1_DCACHE_ACCESS", "L1D_CACHE"),
    ("DTLB_REFILL", "L1D_TLB_REFILL"),
    ("MEM_READ", "LD_RETIRED"),
    ("MEM_WRITE", "ST_RETIRED"),
    ("INSTR_EXECUTED", "INST_RETIRED"),
    ("EXC_TAKEN", "EXC_TAKEN"),
    ("EXC_EXECUTED", "EXC_RETURN"),
    ("CID_WRITE", "CID_WRITE_RETIRED"),
    ("PC_WRITE", "PC_WRITE_RETIRED"),
    ("PC_IMM_BRANCH", "BR_IMMED_RETIRED"),
    ("PC_PROC_RETURN", "BR_RETURN_RETIRED"),
    ("MEM_UNALIGNED_ACCESS", "UNALIGNED_LDST_RETIRED"),
    ("PC_BRANCH_MIS_PRED", "BR_MIS_PRED"),
    ("CLOCK_CYCLES", "CPU_CYCLES"),
    ("PC_BRANCH_PRED", "BR_PRED"),
    ("MEM_ACCESS", "MEM_ACCESS"),
    ("L1_ICACHE_ACCESS", "L1I_CACHE"),
    ("L1_DCACHE_WB", "L1D_CACHE_WB"),
    ("L2_CACHE_ACCESS", "L2D_CACHE"),
    ("L2_CACHE_REFILL", "L2D_CACHE_REFILL"),
    ("L2_CACHE_WB", "L2D_CACHE_WB"),
    ("BUS_ACCESS", "BUS_ACCESS"),
    ("MEM_ERROR", "MEMORY_ERROR"),
    ("INSTR_SPEC", "INST_SPEC"),
    ("TTBR_WRITE", "TTBR_WRITE_RETIRED"),
    ("BUS_CYCLES", "BUS_CYCLES"),
];

/// `ARMV7_PERFCTR_CPU_CYCLES` (0xFF) is no event number: it is Linux's token for the
/// dedicated cycle counter PMCCNTR, which armv7pmu_get_event_idx places it on. The test
/// checks that use in the source rather than trusting this comment.
const ARMV7_CYCLE_COUNTER_TOKEN: &str = "CPU_CYCLES";

/// Every name in Linux 6.12's `enum armv6_perf_types` is the ARM1176 event of ours with
/// that code and that name. One exception, checked against Linux's own words:
/// `ARMV6_PERFCTR_NOP` (0x20) is where Linux parks a stopped counter; its header comment
/// says it counts "the ETMEXTOUT[0] signal (0x20)", the TRM's event 0x20, which this
/// crate names ETMEXTOUT0. The events Linux does not name are exactly the TRM's
/// 0x21-0x26 (the other ETM and return-stack events).
#[test]
fn arm1176_agrees_with_armv6_perf_types() {
    let source = linux_file("arm_v6_pmu.c");
    let linux = named_codes(&source, "ARMV6_PERFCTR_");
    let mut compared = 0;
    let mut named = BTreeSet::new();
    for (name, &code) in &linux {
        let ours = ARM1176
            .event_by_code(code)
            .unwrap_or_else(|| panic!("ARMV6_PERFCTR_{name} = {code:#x} is not in our table"));
        named.insert(code);
        if name == "NOP" {
            assert!(
                source.contains("count the ETMEXTOUT[0] signal (0x20)"),
                "arm_v6_pmu.c no longer says its NOP is ETMEXTOUT[0]"
            );
            assert_eq!((code, ours.name), (0x20, "ETMEXTOUT0"));
        } else {
            assert_eq!(ours.name, name, "ARMV6_PERFCTR_{name} = {code:#x}");
        }
        compared += 1;
    }
    // Linux 6.12 names 19: 0x00-0x07, 0x09-0x0D, 0x0F-0x12, 0xFF and NOP (0x20).
    assert_eq!(compared, 19, "ARMV6_PERFCTR_* entries compared: {linux:?}");
    let unnamed: Vec<u16> = ARM1176
        .events
        .iter()
        .map(|e| e.code)
        .filter(|code| !named.contains(code))
        .collect();
    assert_eq!(unnamed, [0x21, 0x22, 0x23, 0x24, 0x25, 0x26]);

    // The generic and cache maps use only those names (Linux's armv6_perf_map and
    // armv6_perf_cache_map), so every code perf programs on an ARM1176 is in our table.
    let mut mapped = 0;
    for table in ["armv6_perf_map", "armv6_perf_cache_map"] {
        for entry in map_entries(&source, table) {
            let name = entry
                .strip_prefix("ARMV6_PERFCTR_")
                .unwrap_or_else(|| panic!("{table} maps to `{entry}`"));
            assert!(linux.contains_key(name), "{table}: {entry}");
            mapped += 1;
        }
    }
    assert!(mapped >= 12, "only {mapped} map entries read");
    println!(
        "arm_v6_pmu.c: {compared} ARMV6_PERFCTR_* codes and names compared, {mapped} map \
         entries resolved; ours without a Linux name: {unnamed:x?}"
    );
}

/// Every `ARMV7_PERFCTR_*` architectural number of Linux 6.12 is, in our common table,
/// the event the define stands for; and every code the Cortex-A7 maps
/// (`armv7_a7_perf_map`, `armv7_a7_perf_cache_map`) program is a Cortex-A7 event of ours
/// under that name. 0xFF (`ARMV7_PERFCTR_CPU_CYCLES`) is the cycle counter, not an
/// event: the source must use it that way.
#[test]
fn cortex_a7_agrees_with_arm_v7_pmu() {
    let source = linux_file("arm_v7_pmu.c");
    let linux = named_codes(&source, "ARMV7_PERFCTR_");
    let ours: BTreeMap<&str, &str> = ARMV7_NAMES.into_iter().collect();

    let mut architectural = 0;
    for (name, &code) in &linux {
        if name == ARMV7_CYCLE_COUNTER_TOKEN {
            assert_eq!(code, 0xFF);
            assert!(
                source.contains("if (evtype == ARMV7_PERFCTR_CPU_CYCLES)"),
                "arm_v7_pmu.c no longer routes ARMV7_PERFCTR_CPU_CYCLES to the cycle counter"
            );
            continue;
        }
        let mnemonic = ours
            .get(name.as_str())
            .unwrap_or_else(|| panic!("ARMV7_PERFCTR_{name} = {code:#x} has no name here"));
        let common = common::ALL
            .iter()
            .find(|e| e.name == *mnemonic)
            .unwrap_or_else(|| panic!("{mnemonic} is not a common event"));
        assert_eq!(common.code, code, "ARMV7_PERFCTR_{name} is {mnemonic}");
        if let Some(a7) = CORTEX_A7.event_by_code(code) {
            assert_eq!(a7, common, "Cortex-A7 {code:#x}");
        }
        architectural += 1;
    }
    // 0x00-0x1D: 30 architectural defines, every one of ARMV7_NAMES.
    assert_eq!(architectural, ARMV7_NAMES.len(), "{linux:?}");

    let mut codes = BTreeSet::new();
    for table in ["armv7_a7_perf_map", "armv7_a7_perf_cache_map"] {
        for entry in map_entries(&source, table) {
            let name = entry
                .strip_prefix("ARMV7_PERFCTR_")
                .unwrap_or_else(|| panic!("{table} maps to `{entry}`"));
            let code = *linux
                .get(name)
                .unwrap_or_else(|| panic!("{table}: {entry} is not defined"));
            if name == ARMV7_CYCLE_COUNTER_TOKEN {
                continue;
            }
            let event = CORTEX_A7
                .event_by_code(code)
                .unwrap_or_else(|| panic!("{table}: {entry} ({code:#x}) is not a Cortex-A7 event"));
            assert_eq!(event.name, ours[name], "{table}: {entry}");
            codes.insert(code);
        }
    }
    // cycles aside: instructions, cache references/misses, branches, branch misses and
    // bus cycles; L1D, L1I, LL (the L2), DTLB, ITLB and BPU: 13 distinct codes.
    assert_eq!(codes.len(), 13, "{codes:x?}");
    println!(
        "arm_v7_pmu.c: {architectural} ARMV7_PERFCTR_* architectural numbers compared, \
         {} distinct Cortex-A7 map codes found in our table",
        codes.len()
    );
}
