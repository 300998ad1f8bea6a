//! Every PMUv3 core table against Linux's own event tables: perf's JSON under
//! tools/perf/pmu-events/arch/arm64 in Linux 6.12, read at test time from Debian's
//! `linux-source-6.12` tarball (`/usr/src/linux-source-6.12.tar.xz`, or
//! `$LINUX_SOURCE_TARBALL`). A missing tarball fails the test with the command that
//! installs it.
//!
//! Checked both ways, per core: every event Linux lists for the core is in our table under
//! the same name and number; every entry of ours whose name Linux knows (for the core, or
//! in its common-and-microarch.json and recommended.json) has Linux's number; and the
//! entries Linux's core file lacks are exactly the ones listed in [`NOT_IN_LINUX`], each
//! with the TRM table it comes from.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use pmu_events::{common, recommended, Core, Family, CORES};
use serde_json::Value;

/// Where the arm64 event tables sit in the source tree.
const ARM64: &str = "tools/perf/pmu-events/arch/arm64";

/// Each PMUv3 core of ours and the directory Linux's mapfile.csv names for its MIDR
/// (Linux 6.12 describes the Cortex-A72 together with the Cortex-A57).
const LINUX_DIRS: &[(&str, &str)] = &[
    ("Cortex-A53", "arm/cortex-a53"),
    ("Cortex-A72", "arm/cortex-a57-a72"),
    ("Cortex-A76", "arm/cortex-a76"),
    ("Neoverse-N1", "arm/neoverse-n1"),
];

/// Our entries that Linux's file for the core does not list, by core, with their source.
/// Linux leaves out CHAIN everywhere (perf chains counters itself, and its
/// common-and-microarch.json has no CHAIN), and lists for the Cortex-A53 only the events
/// beyond the common ones, which perf takes from sysfs (the kernel reads PMCEID0/1).
const NOT_IN_LINUX: &[(&str, &str, &[&str])] = &[
    (
        "Cortex-A53",
        "Cortex-A53 MPCore TRM (DDI 0500), 12.9, Table 12.28",
        &[
            "SW_INCR",
            "L1I_CACHE_REFILL",
            "L1I_TLB_REFILL",
            "L1D_CACHE_REFILL",
            "L1D_CACHE",
            "L1D_TLB_REFILL",
            "LD_RETIRED",
            "ST_RETIRED",
            "INST_RETIRED",
            "EXC_TAKEN",
            "EXC_RETURN",
            "CID_WRITE_RETIRED",
            "PC_WRITE_RETIRED",
            "BR_IMMED_RETIRED",
            "BR_RETURN_RETIRED",
            "UNALIGNED_LDST_RETIRED",
            "BR_MIS_PRED",
            "CPU_CYCLES",
            "BR_PRED",
            "MEM_ACCESS",
            "L1I_CACHE",
            "L1D_CACHE_WB",
            "L2D_CACHE",
            "L2D_CACHE_REFILL",
            "L2D_CACHE_WB",
            "BUS_ACCESS",
            "MEMORY_ERROR",
            "BUS_CYCLES",
            "CHAIN",
        ],
    ),
    (
        "Cortex-A72",
        "Cortex-A72 MPCore TRM (DDI 0488 / 100095), chapter 11, Table 11-24",
        &["CHAIN"],
    ),
    (
        "Cortex-A76",
        "Cortex-A76 Core TRM (100798), C2.3 \"PMU events\"",
        &["CHAIN"],
    ),
    (
        "Neoverse-N1",
        "Neoverse N1 Core TRM (100616), \"PMU events\"",
        &["CHAIN"],
    ),
];

/// The arm64 event tables' directory, extracted once per test binary (pmu-linux-source:
/// a missing tarball fails the test with the command that installs it).
fn linux_arm64_tables() -> PathBuf {
    static TABLES: OnceLock<PathBuf> = OnceLock::new();
    TABLES
        .get_or_init(|| {
            let root = pmu_linux_source::extract(
                Path::new(env!("CARGO_TARGET_TMPDIR")),
                "pmu-events-arm64",
                &[&format!("*/{ARM64}/*")],
            );
            pmu_linux_source::find(&root, ARM64)
        })
        .clone()
}

/// A JSON event file's entries.
fn json_entries(path: &Path) -> Vec<Value> {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    match serde_json::from_str(&text) {
        Ok(Value::Array(entries)) => entries,
        other => panic!("{}: not a JSON array: {other:?}", path.display()),
    }
}

/// A hex event code as perf writes it (`0x1B`).
fn code(value: &Value, path: &Path) -> u16 {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("{}: EventCode {value} is not a string", path.display()));
    u16::from_str_radix(text.trim_start_matches("0x").trim_start_matches("0X"), 16)
        .unwrap_or_else(|e| panic!("{}: EventCode {text}: {e}", path.display()))
}

/// Name → number of an architecture-wide file (common-and-microarch.json,
/// recommended.json).
fn standard_events(path: &Path) -> BTreeMap<String, u16> {
    json_entries(path)
        .iter()
        .map(|e| {
            let name = e["EventName"].as_str().expect("EventName").to_owned();
            (name, code(&e["EventCode"], path))
        })
        .collect()
}

/// Name → number of every event Linux lists for one core: ArchStdEvent entries resolved
/// through `standard`, EventCode/EventName entries as they are; metrics skipped.
fn core_events(dir: &Path, standard: &BTreeMap<String, u16>) -> BTreeMap<String, u16> {
    let mut events = BTreeMap::new();
    let mut files: Vec<_> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|f| f.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no JSON under {}", dir.display());
    for path in &files {
        for entry in json_entries(path) {
            let (name, number) = if let Some(std_name) = entry["ArchStdEvent"].as_str() {
                let number = match entry.get("EventCode") {
                    Some(c) => code(c, path),
                    None => *standard.get(std_name).unwrap_or_else(|| {
                        panic!(
                            "{}: ArchStdEvent {std_name} is in neither common file",
                            path.display()
                        )
                    }),
                };
                (std_name.to_owned(), number)
            } else if let (Some(name), Some(c)) =
                (entry["EventName"].as_str(), entry.get("EventCode"))
            {
                (name.to_owned(), code(c, path))
            } else {
                continue; // a metric (MetricExpr), not an event
            };
            if let Some(old) = events.insert(name.clone(), number) {
                assert_eq!(
                    old,
                    number,
                    "{}: {name} listed twice with two numbers",
                    dir.display()
                );
            }
        }
    }
    events
}

/// The MIDR → directory lines of mapfile.csv (`0x00000000410fd030,v1,arm/cortex-a53,core`).
fn mapfile(arm64: &Path) -> Vec<(u32, String)> {
    let path = arm64.join("mapfile.csv");
    let text = fs::read_to_string(&path).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && l.starts_with("0x"))
        .map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            assert!(fields.len() >= 3, "{}: short line {line}", path.display());
            let midr = u64::from_str_radix(&fields[0][2..], 16)
                .unwrap_or_else(|e| panic!("{}: {line}: {e}", path.display()));
            (midr as u32, fields[2].to_owned())
        })
        .collect()
}

fn pmuv3_cores() -> impl Iterator<Item = &'static Core> {
    CORES.iter().copied().filter(|c| c.family == Family::PmuV3)
}

/// Linux's mapfile.csv sends each of our PMUv3 cores' MIDR to the directory we compare
/// with, and we compare every PMUv3 core we have.
#[test]
fn linux_mapfile_names_our_cores() {
    let arm64 = linux_arm64_tables();
    let map = mapfile(&arm64);
    let mut compared = 0;
    for core in pmuv3_cores() {
        let expected = LINUX_DIRS
            .iter()
            .find(|(name, _)| *name == core.name)
            .unwrap_or_else(|| panic!("{}: add its Linux directory to LINUX_DIRS", core.name))
            .1;
        let lines: Vec<&(u32, String)> = map
            .iter()
            .filter(|(midr, _)| pmu_events::CoreId::from_midr(*midr) == core.id)
            .collect();
        let dirs: Vec<&str> = lines.iter().map(|(_, dir)| dir.as_str()).collect();
        assert_eq!(
            dirs,
            [expected],
            "{}: mapfile.csv lines for its MIDR",
            core.name
        );
        assert_eq!(
            pmu_events::for_midr(lines[0].0).map(|c| c.name),
            Some(core.name)
        );
        compared += 1;
    }
    assert_eq!(compared, LINUX_DIRS.len());
}

/// Each core's table against Linux's file for it, both ways (see the module doc).
#[test]
fn core_tables_match_linux() {
    let arm64 = linux_arm64_tables();
    let mut standard = standard_events(&arm64.join("common-and-microarch.json"));
    standard.extend(standard_events(&arm64.join("recommended.json")));
    let mut total = 0;
    for &(core_name, dir) in LINUX_DIRS {
        let core = pmuv3_cores()
            .find(|c| c.name == core_name)
            .unwrap_or_else(|| panic!("no {core_name} in CORES"));
        let linux = core_events(&arm64.join(dir), &standard);
        for (name, &number) in &linux {
            let ours = core.event(name).unwrap_or_else(|| {
                panic!("{core_name}: Linux's {dir} has {name} ({number:#x}), our table has not")
            });
            assert_eq!(ours.name, name, "{core_name}: spelling of {name}");
            assert_eq!(
                ours.code, number,
                "{core_name}: {name} is {number:#x} in Linux's {dir}"
            );
        }
        let mut known_elsewhere = 0;
        let mut lacking = BTreeSet::new();
        for event in core.events {
            if let Some(&number) = standard.get(event.name) {
                assert_eq!(
                    event.code, number,
                    "{core_name}: {} is {number:#x} in Linux",
                    event.name
                );
                known_elsewhere += 1;
            }
            if !linux.contains_key(event.name) {
                lacking.insert(event.name);
            }
        }
        let (_, source, listed) = NOT_IN_LINUX
            .iter()
            .find(|(name, _, _)| *name == core_name)
            .unwrap_or_else(|| panic!("{core_name}: no NOT_IN_LINUX entry"));
        let listed: BTreeSet<&str> = listed.iter().copied().collect();
        assert_eq!(
            lacking, listed,
            "{core_name}: the entries Linux's {dir} lacks are not the ones NOT_IN_LINUX lists ({source})"
        );
        println!(
            "{core_name}: {} Linux events compared (name and number), {} of our entries \
             checked against Linux's common files, {} not in Linux ({source})",
            linux.len(),
            known_elsewhere,
            lacking.len()
        );
        assert_eq!(
            linux.len() + lacking.len(),
            core.events.len(),
            "{core_name}"
        );
        assert!(
            linux.len() >= 25,
            "{core_name}: only {} Linux events",
            linux.len()
        );
        total += linux.len();
    }
    // Linux 6.12: 30 (A53) + 83 (A57/A72) + 106 (A76) + 109 (N1) events.
    assert_eq!(total, 328, "events compared with Linux 6.12");
}

/// common::ALL and recommended::ALL against common-and-microarch.json and
/// recommended.json: a name both know has one number, and every recommended event of
/// Linux's is ours.
#[test]
fn common_and_recommended_events_match_linux() {
    let arm64 = linux_arm64_tables();
    let microarch = standard_events(&arm64.join("common-and-microarch.json"));
    let linux_recommended = standard_events(&arm64.join("recommended.json"));
    let mut compared = 0;
    for (ours, linux, file) in [
        (common::ALL, &microarch, "common-and-microarch.json"),
        (recommended::ALL, &linux_recommended, "recommended.json"),
    ] {
        for event in ours {
            if let Some(&number) = linux.get(event.name) {
                assert_eq!(
                    event.code, number,
                    "{}: {number:#x} in Linux's {file}",
                    event.name
                );
                compared += 1;
            }
        }
        // Names are one number each across both sets of ours.
        for (name, &number) in linux.iter() {
            if let Some(e) = ours.iter().find(|e| e.code == number) {
                assert_eq!(e.name, name, "{number:#x}: Linux's {file} calls it {name}");
            }
        }
    }
    for name in linux_recommended.keys() {
        assert!(
            recommended::ALL.iter().any(|e| e.name == name),
            "Linux's recommended.json has {name}, recommended::ALL has not"
        );
    }
    println!("{compared} common and recommended events compared with Linux");
    // Linux 6.12: common-and-microarch.json names 80 of our common events (it lacks CHAIN,
    // L2I_CACHE, L2I_CACHE_REFILL, L3D_CACHE_WB, LL_CACHE, LL_CACHE_MISS, L2I_CACHE_LMISS);
    // recommended.json has 75 events.
    assert_eq!(compared, common::ALL.len() - 7 + 75);
}
