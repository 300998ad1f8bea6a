//! `pmu-demo spe` end to end: the binary, run with the usual SPE recipes, the error
//! cases, a fake sysfs tree, and `spe decode` on hand-built and fuzzer-made buffers.
//!
//! Sources of the expected values:
//! - the usual SPE recipes (the `pmu_armv8::spe` walkthrough): memory-latency analysis FL=1 MINLAT=120, FT=1
//!   LD=1, FE=1; branch-misprediction analysis FT=1 B=1 on E[7]. Their event values are
//!   often written wrong (the `pmu_armv8::spe` walkthrough, "Common mistake"; Arm ARM D24.7.11): 0x08 is E[3] L1D
//!   refill, LLC miss is E[9] = 0x200; and the branch recipe is often written with E[7] in
//!   PMSNEVFR_EL1 (FnE), which drops the mispredicted branches: the intent is FE with
//!   PMSEVFR_EL1 = 0x80.
//! - Arm ARM DDI 0487 M.a.a D24.7.8 (PMSCR_EL1: E0SPE 0, E1SPE 1, PA 4, TS 5, PCT 7:6),
//!   D24.7.12 (PMSFCR_EL1: FE 0, FT 1, FL 2, FnE 3, B 16, LD 17, ST 18), D24.7.14 (PMSIDR_EL1),
//!   D24.7.15 (PMSIRR_EL1), D24.7.16 (PMSLATFR_EL1), D24.7.11 (PMSEVFR_EL1: E[9] optional
//!   before FEAT_SPEv1p4), D18.2 (record packets).
//! - Linux 6.12 drivers/perf/arm_spe_pmu.c: the `arm_spe` format (`load_filter` config:33,
//!   `branch_filter` config:32, `event_filter` config1:0-63, `min_latency` config2:0-11,
//!   `inv_event_filter` config3:0-63, `ts_enable` config:0, `pa_enable` config:1,
//!   `pct_enable` config:2) and the sysfs `caps/` files.
//! - Linux 7.3.4 drivers/perf/arm_spe_pmu.c: `store_filter_mask` config:38, `simd_filter`
//!   config:39, `simd_filter_mask` config:40, `inv_data_src_filter` config4:0-63 (the
//!   complement of PMSDSFR_EL1), `caps/event_filter` ("0x%llx\n": the PMSEVFR_EL1 bits that
//!   read 1 after the probe wrote all ones; event filters outside it are refused).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pmu_armv8::spe::perf::{
    event_init, ConfigWord, LinuxSpeDriver, PerfEventAttr, PerfField, PerfFormat, PerfTarget,
};
use pmu_armv8::spe::{SpeCapabilities, SpeVersion};
use serde_json::Value;

fn demo(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pmu-demo"))
        .args(args)
        .output()
        .expect("pmu-demo runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `pmu-demo spe ARGS --json`, checks the exit status, and parses stdout.
fn spe_json(args: &[&str], status: i32) -> Value {
    let mut all = vec!["spe"];
    all.extend_from_slice(args);
    all.push("--json");
    let out = demo(&all);
    assert_eq!(
        out.status.code(),
        Some(status),
        "pmu-demo {all:?}: stdout {} stderr {}",
        text(&out.stdout),
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("pmu-demo {all:?}: not JSON ({e}): {}", text(&out.stdout)))
}

/// The value of register `name` in the JSON output.
fn register(v: &Value, name: &str) -> u64 {
    v["registers"]
        .as_array()
        .expect("registers")
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("{name} in {v}"))["value"]
        .as_u64()
        .unwrap()
}

/// The value of field `field` of register `name`.
fn field(v: &Value, name: &str, field: &str) -> u64 {
    let reg = v["registers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap();
    reg["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == field)
        .unwrap_or_else(|| panic!("{name}.{field} in {reg}"))["value"]
        .as_u64()
        .unwrap()
}

fn kinds(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|d| d["kind"].as_str().unwrap().to_owned())
        .collect()
}

/// A scratch directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("pmu-demo-spe-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.0.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("UTF-8 temp path")
}

/// The memory-latency recipe, corrected (LLC miss is E[9] = 0x200, not 0x08), on a
/// FEAT_SPEv1p4 profile where filtering on E[9] is architected: no warning; PMSFCR_EL1 =
/// FE|FT|FL|LD = 0x20007, PMSEVFR_EL1 = 0x200, MINLAT = 120, PMSIRR_EL1 = 4096; the perf event
/// as arm_spe_pmu.c lays it out.
#[test]
fn memory_latency_on_spev1p4() {
    let args = [
        "--kernel",
        "6.12",
        "--profile",
        "spev1p4-16bit",
        "--loads",
        "--min-latency",
        "120",
        "--event",
        "llc-miss",
        "--interval",
        "4096",
    ];
    let v = spe_json(&args, 0);
    assert_eq!(v["ok"], true);
    assert_eq!(v["errors"].as_array().unwrap().len(), 0);
    assert_eq!(v["warnings"].as_array().unwrap().len(), 0, "{v}");
    assert_eq!(register(&v, "PMSFCR_EL1"), 0x2_0007);
    for (f, want) in [
        ("FE", 1),
        ("FT", 1),
        ("FL", 1),
        ("FnE", 0),
        ("B", 0),
        ("LD", 1),
        ("ST", 0),
    ] {
        assert_eq!(field(&v, "PMSFCR_EL1", f), want, "PMSFCR_EL1.{f}");
    }
    assert_eq!(register(&v, "PMSEVFR_EL1"), 0x200);
    assert_eq!(field(&v, "PMSEVFR_EL1", "LLC_MISS"), 1);
    assert_eq!(register(&v, "PMSLATFR_EL1"), 120);
    assert_eq!(field(&v, "PMSLATFR_EL1", "MINLAT"), 120);
    assert_eq!(register(&v, "PMSIRR_EL1"), 0x1000);
    assert_eq!(
        register(&v, "PMSCR_EL1"),
        0b11,
        "E0SPE|E1SPE, as perf without u/k"
    );
    // Programming order (Arm ARM D17.9; program.rs): filters, interval, counter, PMSCR last.
    let order: Vec<&str> = v["registers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        order,
        [
            "PMSLATFR_EL1",
            "PMSEVFR_EL1",
            "PMSNEVFR_EL1",
            "PMSFCR_EL1",
            "PMSIRR_EL1",
            "PMSICR_EL1",
            "PMSCR_EL1"
        ]
    );
    // Linux 6.12 refuses event_filter bit 9 on every version (arm_spe_pmsevfr_res0() keeps
    // PMSEVFR_EL1_RES0_V1P2 for v1p2 and later): no exact perf event, a typed error, and the
    // broader event plus the decode-time filter instead.
    let perf = &v["perf"];
    assert_eq!(
        (&perf["kernel"], &perf["kernel_choice"]),
        (&Value::from("6.12"), &Value::from("option"))
    );
    assert_eq!(perf["format_source"], "linux-6.12");
    assert!(perf["attr"].is_null() && perf["event"].is_null(), "{perf}");
    assert_eq!(perf["error"]["kind"], "PerfEventsRefused");
    assert!(perf["error"]["message"]
        .as_str()
        .unwrap()
        .contains("EOPNOTSUPP"));
    let instead = &perf["instead"];
    assert_eq!(
        instead["event"],
        "arm_spe_0/load_filter=1,min_latency=120,period=4096/"
    );
    assert_eq!(instead["post_required_mask"], "0x200");
    assert_eq!(instead["post_excluded_mask"], "0x0");
    assert_eq!(
        instead["decode_command"],
        "pmu-demo spe decode perf.data --loads --min-latency 120 --event 0x200"
    );

    // The human output says the same.
    let mut all = vec!["spe"];
    all.extend_from_slice(&args);
    let out = demo(&all);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    for needle in [
        "PMSFCR_EL1    = 0x0000000000020007",
        "PMSEVFR_EL1   = 0x0000000000000200",
        "MINLAT       = 120 (0x78)",
        "LLC_MISS     = 1",
        "not a vendor-published register dump",
        "perf cannot express `event_filter` bits 0x200 on FEAT_SPEv1p4",
        "perf record -e arm_spe_0/load_filter=1,min_latency=120,period=4096/ -- <command>",
        "pmu-demo spe decode perf.data --loads --min-latency 120 --event 0x200",
        "under Linux 6.12's arm_spe rules (--kernel 6.12)",
        "documented Linux 6.12",
    ] {
        assert!(s.contains(needle), "`{needle}` in:\n{s}");
    }
}

/// The same request on a FEAT_SPEv1p1 profile (PMSIDR_EL1 0x26407): the registers
/// are identical, but E[9] is only optionally filterable before FEAT_SPEv1p4 (Arm ARM
/// D24.7.11), so a warning says to probe it; still exit 0.
#[test]
fn memory_latency_on_spev1p1_warns() {
    let v = spe_json(
        &[
            "--profile",
            "spev1p1-12bit",
            "--loads",
            "--min-latency",
            "120",
            "--event",
            "llc-miss",
        ],
        0,
    );
    assert_eq!(register(&v, "PMSFCR_EL1"), 0x2_0007);
    assert_eq!(register(&v, "PMSEVFR_EL1"), 0x200);
    assert_eq!(kinds(&v["warnings"]), ["OptionallyFilterableEvents"]);
    assert!(v["warnings"][0]["message"]
        .as_str()
        .unwrap()
        .contains("0x200"));
    // No PMSNEVFR_EL1 without FnE: the register is UNDEFINED there and never written.
    assert!(!v["registers"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["name"] == "PMSNEVFR_EL1"));
    // Default interval: the profile's minimum (PMSIDR_EL1.Interval 0b0100 = 1024).
    assert_eq!(register(&v, "PMSIRR_EL1"), 1024);
    assert_eq!(v["perf"]["error"]["kind"], "PerfEventsRefused");
    assert_eq!(
        v["perf"]["instead"]["event"],
        "arm_spe_0/load_filter=1,min_latency=120,period=1024/"
    );
}

/// The branch-misprediction recipe with its intent (Arm ARM D24.7.11: E[7] is
/// "mispredicted"): FT=1 B=1 and FE with PMSEVFR_EL1 = E[7] = 0x80 -> PMSFCR_EL1 0x10003.
#[test]
fn branch_misprediction_corrected() {
    let v = spe_json(
        &[
            "--profile",
            "spev1p1-12bit",
            "--branches",
            "--event",
            "mispredicted",
        ],
        0,
    );
    assert_eq!(register(&v, "PMSFCR_EL1"), 0x1_0003);
    assert_eq!(register(&v, "PMSEVFR_EL1"), 0x80);
    assert_eq!(field(&v, "PMSEVFR_EL1", "MISPREDICTED"), 1);
    assert_eq!(register(&v, "PMSLATFR_EL1"), 0);
    assert_eq!(v["warnings"].as_array().unwrap().len(), 0, "{v}");
    assert_eq!(
        v["perf"]["attr"]["config"], "0x100000000",
        "branch_filter = config:32"
    );
    assert_eq!(
        v["perf"]["event"],
        "arm_spe_0/branch_filter=1,event_filter=0x80,period=1024/"
    );
}

/// The branch recipe as often written (FnE=1, PMSNEVFR_EL1.E[7]=1) on a profile with FnE: it
/// builds, and shows what it really does: PMSFCR_EL1 = FT|FnE|B = 0x1000A, PMSNEVFR_EL1 =
/// 0x80, PMSEVFR_EL1 = 0: it drops the mispredicted branches and keeps the rest.
#[test]
fn literal_branch_recipe_excludes_mispredictions() {
    let v = spe_json(
        &[
            "--profile",
            "spev1p2-fne",
            "--branches",
            "--exclude-event",
            "E[7]",
        ],
        0,
    );
    assert_eq!(register(&v, "PMSFCR_EL1"), 0x1_000A);
    assert_eq!(register(&v, "PMSNEVFR_EL1"), 0x80);
    assert_eq!(register(&v, "PMSEVFR_EL1"), 0);
    assert_eq!(
        v["perf"]["event"],
        "arm_spe_0/branch_filter=1,inv_event_filter=0x80,period=1024/"
    );
}

/// --exclude-event needs PMSIDR_EL1.FnE (FEAT_SPEv1p2): on spev1p1-12bit it is an error that
/// says what to do, exit 2, and no register is printed.
#[test]
fn exclude_event_without_fne_is_an_error() {
    let args = [
        "spe",
        "--profile",
        "spev1p1-12bit",
        "--branches",
        "--exclude-event",
        "mispredicted",
    ];
    let out = demo(&args);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("no inverted event filter (PMSIDR_EL1.FnE = 0; it needs FEAT_SPEv1p2)"),
        "{err}"
    );
    assert!(!text(&out.stdout).contains("PMSFCR_EL1    ="));
    let v = spe_json(&args[1..], 2);
    assert_eq!(v["ok"], false);
    assert_eq!(kinds(&v["errors"]), ["FilterNotImplemented"]);
    assert!(v["registers"].is_null() && v["perf"].is_null());
}

/// MINLAT 5000 does not fit 12-bit counters (PMSIDR_EL1.CountSize 0b0010, max 4095).
#[test]
fn min_latency_too_large_for_12_bit_counters() {
    let out = demo(&["spe", "--profile", "spev1p1-12bit", "--min-latency", "5000"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("minimum latency 5000 does not fit")
            && text(&out.stderr).contains("at most 4095"),
        "{}",
        text(&out.stderr)
    );
    let v = spe_json(&["--profile", "spev1p1-12bit", "--min-latency", "5000"], 2);
    assert_eq!(kinds(&v["errors"]), ["MinLatencyTooLarge"]);
}

/// On 16-bit counters 5000 is valid for the registers, but Linux 6.12's `min_latency` is
/// config2:0-11: the perf part says it cannot be expressed, the registers stand (exit 0).
#[test]
fn min_latency_valid_for_registers_but_not_for_perf() {
    let v = spe_json(&["--profile", "spev1p4-16bit", "--min-latency", "5000"], 0);
    assert_eq!(register(&v, "PMSLATFR_EL1"), 5000);
    assert_eq!(register(&v, "PMSFCR_EL1"), 0b100, "FL only");
    assert_eq!(v["perf"]["error"]["kind"], "PerfFieldTooWide");
    assert!(v["perf"]["event"].is_null());
}

/// An interval under PMSIDR_EL1.Interval's minimum (1024 on spev1p1-12bit) is an error; one
/// that is not a multiple of 256 is another (PMSIRR_EL1.INTERVAL holds bits [31:8]).
#[test]
fn interval_below_minimum_is_an_error() {
    let out = demo(&["spe", "--profile", "spev1p1-12bit", "--interval", "512"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("below this PE's minimum of 1024"),
        "{}",
        text(&out.stderr)
    );
    let v = spe_json(&["--profile", "spev1p1-12bit", "--interval", "512"], 2);
    assert_eq!(kinds(&v["errors"]), ["IntervalBelowMinimum"]);
    let v = spe_json(&["--profile", "spev1p4-16bit", "--interval", "1000"], 2);
    assert_eq!(kinds(&v["errors"]), ["InvalidInterval"]);
}

/// No capabilities given and no arm_spe PMU: exit 2 with the hint. Checked against an empty
/// sysfs directory (always), and against this machine's sysfs with both outcomes asserted.
#[test]
fn no_capabilities_gives_the_hint() {
    let scratch = Scratch::new("nosysfs");
    let out = demo(&["spe", "--loads", "--sysfs-devices", path_str(&scratch.0)]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("this machine has no SPE") && err.contains("--pmsidr/--pmsver or --profile"),
        "{err}"
    );

    let has_spe = std::fs::read_dir("/sys/bus/event_source/devices")
        .map(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("arm_spe"))
        })
        .unwrap_or(false);
    let out = demo(&["spe", "--loads", "--json"]);
    if has_spe {
        assert!(out.status.success(), "{}", text(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["capabilities"]["source"], "sysfs");
    } else {
        assert_eq!(out.status.code(), Some(2));
        assert!(text(&out.stderr).contains("this machine has no SPE"));
    }
}

/// Capabilities and format from a sysfs tree shaped like Linux 6.12's (arm_spe_pmu.c: format
/// files `configN:lo[-hi]`, caps as decimal, no `inv_event_filter` without FnE): the PMU name
/// and the kernel's format are used; without FnE, --exclude-event is refused.
#[test]
fn capabilities_from_a_sysfs_tree() {
    let scratch = Scratch::new("sysfs");
    let pmu = "arm_spe_1";
    scratch.write(&format!("{pmu}/type"), b"11\n");
    for (name, entry) in [
        ("ts_enable", "config:0"),
        ("pa_enable", "config:1"),
        ("pct_enable", "config:2"),
        ("jitter", "config:16"),
        ("branch_filter", "config:32"),
        ("load_filter", "config:33"),
        ("store_filter", "config:34"),
        ("event_filter", "config1:0-63"),
        ("min_latency", "config2:0-11"),
    ] {
        scratch.write(
            &format!("{pmu}/format/{name}"),
            format!("{entry}\n").as_bytes(),
        );
    }
    scratch.write(&format!("{pmu}/caps/min_interval"), b"1024\n");
    scratch.write(&format!("{pmu}/caps/count_size"), b"12\n");
    scratch.write(&format!("{pmu}/caps/arch_inst"), b"0\n");
    scratch.write(&format!("{pmu}/caps/ernd"), b"1\n");
    let dir = path_str(&scratch.0);

    let v = spe_json(
        &[
            "--sysfs-devices",
            dir,
            "--stores",
            "--min-latency",
            "80",
            "--event",
            "tlb-walk",
            "--jitter",
        ],
        0,
    );
    assert_eq!(v["capabilities"]["source"], "sysfs");
    assert_eq!(v["capabilities"]["min_interval"], 1024);
    assert_eq!(v["capabilities"]["counter_bits"], 12);
    assert_eq!(v["capabilities"]["extended_random"], true);
    // The store recipe with its 0x20 read correctly: E[5] TLB walk (Arm ARM D24.7.11).
    assert_eq!(register(&v, "PMSFCR_EL1"), 0x4_0007, "FE|FT|FL|ST");
    assert_eq!(register(&v, "PMSEVFR_EL1"), 0x20);
    assert_eq!(register(&v, "PMSIRR_EL1"), 0x401, "1024 | RND");
    assert_eq!(v["perf"]["format_source"], "sysfs");
    assert_eq!(
        v["perf"]["event"],
        "arm_spe_1/jitter=1,store_filter=1,event_filter=0x20,min_latency=80,period=1024/"
    );
    let v = spe_json(&["--sysfs-devices", dir, "--exclude-event", "retired"], 2);
    assert_eq!(kinds(&v["errors"]), ["FilterNotImplemented"]);
    let out = demo(&["spe", "--sysfs-devices", dir, "--pmu", "arm_spe_7"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("found: arm_spe_1"));
}

/// Exception levels and record contents (PMSCR_EL1, Arm ARM D24.7.8): --el0 alone is perf's
/// `u`; physical timestamps and addresses set TS, PCT=0b01, PA and need kernel-profiling
/// permission in perf.
#[test]
fn exception_levels_and_record_contents() {
    let v = spe_json(&["--profile", "spev1p2-fne", "--el0"], 0);
    assert_eq!(register(&v, "PMSCR_EL1"), 0b01);
    assert_eq!(v["perf"]["attr"]["exclude_kernel"], true);
    assert!(v["perf"]["event"].as_str().unwrap().ends_with("/u"));

    let v = spe_json(
        &[
            "--profile",
            "spev1p2-fne",
            "--timestamps",
            "physical",
            "--physical-addresses",
        ],
        0,
    );
    // E0SPE|E1SPE|PA|TS|PCT=0b01.
    assert_eq!(
        register(&v, "PMSCR_EL1"),
        0b11 | 1 << 4 | 1 << 5 | 0b01 << 6
    );
    assert_eq!(
        v["perf"]["attr"]["config"], "0x7",
        "ts_enable|pa_enable|pct_enable"
    );
    assert_eq!(
        kinds(&v["perf"]["warnings"]),
        ["PerfNeedsKernelPermission", "PerfNeedsKernelPermission"]
    );
    let v = spe_json(&["--profile", "spev1p2-fne", "--timestamps"], 0);
    assert_eq!(
        register(&v, "PMSCR_EL1"),
        0b11 | 1 << 5,
        "virtual counter: PCT=0"
    );
}

/// Unknown event names are refused by the parser with the list of names; raw spellings work.
#[test]
fn event_spellings_on_the_command_line() {
    let out = demo(&["spe", "--profile", "spev1p1-12bit", "--event", "l2-miss"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("unknown SPE event `l2-miss`") && err.contains("llc-miss"),
        "{err}"
    );
    let v = spe_json(
        &[
            "--profile",
            "spev1p4-16bit",
            "--loads",
            "--event",
            "9,l1d-refill",
            "--event",
            "0x20",
        ],
        0,
    );
    assert_eq!(register(&v, "PMSEVFR_EL1"), 0x228);
    // Bit 0 (generated exception) is RAZ/WI in PMSEVFR_EL1 at every version.
    let v = spe_json(&["--profile", "spev1p4-16bit", "--event", "0x1"], 2);
    assert_eq!(kinds(&v["errors"]), ["EventsNotFilterable"]);
}

/// A load record and a branch record built per the packet format (Arm ARM D18.2; headers as
/// perf's arm-spe-pkt-decoder.h), then a byte that is no header and a truncated Address
/// packet.
fn hand_built_buffer() -> Vec<u8> {
    let mut b = Vec::new();
    // Address index 0 (PC), NS=1 EL0, 0x4005d8.
    b.push(0xB0);
    b.extend_from_slice(&0x8000_0000_0040_05D8u64.to_le_bytes());
    // Operation Type class 0b01 (load/store), payload 0: a load.
    b.extend_from_slice(&[0x49, 0x00]);
    // Events, 2 bytes: RETIRED|L1D_ACCESS|L1D_REFILL|LLC_ACCESS|LLC_MISS = 0x30e.
    b.extend_from_slice(&[0x52, 0x0E, 0x03]);
    // Counter 0 (total latency) 150, counter 1 (issue) 7.
    b.extend_from_slice(&[0x98, 150, 0, 0x99, 7, 0]);
    // Address index 2 (data VA).
    b.push(0xB2);
    b.extend_from_slice(&0x0000_FFFF_8000_1000u64.to_le_bytes());
    // Context, CT=0: CONTEXTIDR_EL1 = 42.
    b.extend_from_slice(&[0x64, 42, 0, 0, 0]);
    // Timestamp, ends the record.
    b.push(0x71);
    b.extend_from_slice(&0x1234_5678_9ABCu64.to_le_bytes());
    // Branch record: PC, Operation Type class 0b10 (branch), Events RETIRED|MISPREDICTED,
    // Address index 1 (target), End.
    b.push(0xB0);
    b.extend_from_slice(&0x8000_0000_0040_1000u64.to_le_bytes());
    b.extend_from_slice(&[0x4A, 0x01, 0x42, 0x82]);
    b.push(0xB1);
    b.extend_from_slice(&0x8000_0000_0040_1040u64.to_le_bytes());
    b.push(0x01);
    // 0xFF is no Format 0 header; then an Address header with 2 of its 8 payload bytes.
    b.extend_from_slice(&[0xFF, 0xB0, 0x00, 0x00]);
    b
}

#[test]
fn decode_prints_the_records() {
    let scratch = Scratch::new("decode");
    let buffer = hand_built_buffer();
    let file = scratch.write("spe.bin", &buffer);
    let out = demo(&["spe", "decode", path_str(&file)]);
    // Decode errors: exit 1, after the records.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(
        lines[0],
        "record @0x0000 (43 bytes, 8 packets): PC 0x4005d8 EL0 NS | LD GP-REG | events RETIRED \
         L1D_ACCESS L1D_REFILL LLC_ACCESS LLC_MISS | latency total 150 issue 7 | VA \
         0xffff80001000 | CONTEXTIDR_EL1 42 | ts 0x123456789abc"
    );
    assert_eq!(
        lines[1],
        "record @0x002b (23 bytes, 5 packets): PC 0x401000 EL0 NS | B COND | events RETIRED \
         MISPREDICTED | target 0x401040 EL0 NS"
    );
    assert!(lines[2].starts_with("error @0x0042: byte 0xff at offset 66 is not an SPE packet"));
    assert!(lines[3].starts_with("error @0x0043: SPE packet at offset 67 needs 9 bytes"));
    assert_eq!(
        lines[4],
        format!("2 records, 2 errors in 70 bytes of {}", file.display())
    );
    assert!(text(&out.stderr).contains("2 decode errors"));

    // --packets lists every packet too.
    let out = demo(&["spe", "decode", "--packets", path_str(&file)]);
    let s = text(&out.stdout);
    assert!(
        s.contains("@0x0009 +2  OP-TYPE     load/store/atomic payload 0x0: LD GP-REG"),
        "{s}"
    );
    assert!(s.contains("@0x0022 +9  TS          0x123456789abc"), "{s}");

    // JSON: one object with the same content.
    let out = demo(&["spe", "decode", "--json", path_str(&file)]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["bytes"], 70);
    let r = &v["records"][0];
    assert_eq!(r["pc"]["address"], "0x4005d8");
    assert_eq!(r["pc"]["el"], 0);
    assert_eq!(r["operation"]["types"][0], "load");
    assert_eq!(r["operation"]["direction"], "load");
    assert_eq!(
        r["operation"]["details"],
        serde_json::json!(["LD", "GP-REG"])
    );
    assert_eq!(r["events_mask"], "0x30e");
    assert_eq!(r["total_latency"], 150);
    assert_eq!(r["context"]["register"], "CONTEXTIDR_EL1");
    assert_eq!(r["timestamp"], 0x1234_5678_9ABCu64);
    assert_eq!(
        v["records"][1]["events"],
        serde_json::json!(["RETIRED", "MISPREDICTED"])
    );
    assert_eq!(v["records"][1]["branch_target"]["address"], "0x401040");
    let errors: Vec<(u64, &str)> = v["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["offset"].as_u64().unwrap(), e["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(errors, [(66, "Invalid"), (67, "Truncated")]);

    // The clean part alone decodes with exit 0.
    let clean = scratch.write("clean.bin", &buffer[..66]);
    let out = demo(&["spe", "decode", path_str(&clean)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).ends_with(&format!(
        "2 records, 0 errors in 66 bytes of {}\n",
        clean.display()
    )));

    // The same bytes as hex text.
    let hex: String = buffer[..66].iter().map(|b| format!("{b:02x} ")).collect();
    let hex_file = scratch.write("clean.hex", format!("# hand-built\n{hex}\n").as_bytes());
    let out = demo(&["spe", "decode", "--hex", "--json", path_str(&hex_file)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let h: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(h["records"], v["records"]);
}

/// A store-atomic (STADD: Operation Type class 0b01, payload 0b111 = ST|AT|atomic subclass)
/// with a tagged kernel data address and a tag-checked physical address: the direction,
/// the sub-fields as perf names them (arm-spe-pkt-decoder.c `arm_spe_pkt_desc_op_type()`),
/// the data address with its tag stripped and top byte filled as perf's `arm_spe_calc_ip()`
/// does, and the PA packet's CH and PAT (Arm ARM D18.2 Address packet).
#[test]
fn decode_names_the_sub_fields() {
    let scratch = Scratch::new("decode-subfields");
    let mut b = vec![0xB0];
    b.extend_from_slice(&0xA0FF_8000_0010_0000u64.to_le_bytes());
    b.extend_from_slice(&[0x49, 0x07]);
    b.push(0xB2);
    b.extend_from_slice(&0xF4FF_0000_1234_5678u64.to_le_bytes());
    b.push(0xB3);
    b.extend_from_slice(&0xC300_0000_8765_4000u64.to_le_bytes());
    b.push(0x01);
    let file = scratch.write("atomic.bin", &b);
    let out = demo(&["spe", "decode", "--json", path_str(&file)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &v["records"][0];
    assert_eq!(r["operation"]["direction"], "store");
    assert_eq!(r["operation"]["details"], serde_json::json!(["ST", "AT"]));
    assert_eq!(r["operation"]["text"], "ST AT");
    assert_eq!(r["data_virtual"]["address"], "0xffff000012345678");
    assert_eq!(r["data_virtual"]["tag"], "0xf4");
    assert_eq!(r["data_physical"]["address"], "0x87654000");
    assert_eq!(r["data_physical"]["ch"], true);
    assert_eq!(r["data_physical"]["pat"], 3);
    let out = demo(&["spe", "decode", path_str(&file)]);
    let s = text(&out.stdout);
    assert!(
        s.contains("ST AT | VA 0xffff000012345678 tag 0xf4 | PA 0x87654000 NS CH PAT 0x3"),
        "{s}"
    );
}

/// What Linux 7.3's perf decodes and 6.12's did not (Arm ARM DDI 0487 D18.2 encodings, as
/// `arm-spe-pkt-decoder.h` of Linux 7.3 names them): a kernel branch with Operation Type
/// payload 0x15 (COND, GCS bit 2, CR 0b10: return), Events E[1] E[6] E[19] (retired, not
/// taken, L2D access) and the previous branch target (Address index 4, NS 1, EL1); then an
/// SVE/SME register store (payload 0xAD: EVL 0b010 = 128 bits, PRED, SG) and an SME
/// operation (class 0b00, payload 0x8A: ETS 128 bits, FP).
#[test]
fn decode_names_the_linux_7_3_fields() {
    let scratch = Scratch::new("decode-7-3");
    let mut b = vec![0xB0];
    b.extend_from_slice(&0xA0FF_8000_1234_5678u64.to_le_bytes());
    b.extend_from_slice(&[0x4A, 0x15, 0x62, 0x42, 0x00, 0x08, 0x00, 0xB4]);
    b.extend_from_slice(&0xA0FF_8000_1234_0000u64.to_le_bytes());
    b.extend_from_slice(&[0x01, 0x49, 0xAD, 0x01, 0x48, 0x8A, 0x01]);
    // An "other" operation of no allocated subclass (payload 0x30): perf 7.3 prints nothing.
    b.extend_from_slice(&[0x48, 0x30, 0x01]);
    let file = scratch.write("new-fields.bin", &b);
    let out = demo(&["spe", "decode", "--json", path_str(&file)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &v["records"][0];
    assert_eq!(r["operation"]["text"], "B COND GCS CR-RET");
    assert_eq!(
        r["operation"]["branch"],
        serde_json::json!({"conditional": true, "indirect": false,
                           "guarded_control_stack": true, "call_return": "return"})
    );
    assert_eq!(r["operation"]["subclass"], Value::Null);
    assert_eq!(
        r["events"],
        serde_json::json!(["RETIRED", "NOT_TAKEN", "L2D_ACCESS"])
    );
    assert_eq!(r["previous_branch_target"]["address"], "0xffff800012340000");
    assert_eq!(r["previous_branch_target"]["el"], 1);
    let store = &v["records"][1]["operation"];
    assert_eq!(store["text"], "ST SVE-SME-REG EVLEN 128 PRED SG");
    assert_eq!(store["subclass"]["kind"], "sve_sme_register");
    assert_eq!(store["subclass"]["gather_scatter"], true);
    let sme = &v["records"][2]["operation"];
    assert_eq!(sme["text"], "SME-OTHER ETS 128 FP");
    assert_eq!(sme["sme_ets"], 128);
    assert_eq!(sme["subclass"]["kind"], "sme");
    let unallocated = &v["records"][3]["operation"];
    assert_eq!(unallocated["text"], "");
    assert_eq!(unallocated["subclass"]["kind"], "unallocated");
    let out = demo(&["spe", "decode", path_str(&file)]);
    let s = text(&out.stdout);
    assert!(
        s.contains(
            "B COND GCS CR-RET | events RETIRED NOT_TAKEN L2D_ACCESS | previous target \
             0xffff800012340000 EL1 NS"
        ),
        "{s}"
    );
    assert!(
        s.contains("(3 bytes, 2 packets): other (unallocated subclass)\n"),
        "{s}"
    );
}

/// `--midr` decodes the IMPLEMENTATION DEFINED Data Source of loads by the core's encoding
/// (Linux 7.3 tools/perf/util/arm-spe-decoder/arm-spe-decoder.h: common 0x8 L2, 0xE DRAM;
/// HiSilicon HIP12 17 L2 HITM; MIDRs from tools/arch/arm64/include/asm/cputype.h:
/// Neoverse-N1 0x41/0xD0C, HIP12 0x48/0xD06): a load with source 0x8, a store with a
/// source (never decoded), a load with source 0x11.
#[test]
fn decode_data_source_by_midr() {
    let scratch = Scratch::new("decode-midr");
    let mut b = vec![0x49, 0x00, 0x43, 0x08, 0x01, 0x49, 0x01, 0x43, 0x0E, 0x01];
    b.extend_from_slice(&[0x49, 0x00, 0x43, 0x11, 0x01]);
    let file = scratch.write("sources.bin", &b);
    let decoded = |midr: Option<&str>| -> Vec<Value> {
        let mut args = vec!["decode", path_str(&file)];
        if let Some(m) = midr {
            args.extend(["--midr", m]);
        }
        let v = spe_json(&args, 0);
        v["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["data_source_decoded"].clone())
            .collect()
    };
    let null = Value::Null;
    let level = |l: &str, modified: bool| serde_json::json!({"level": l, "modified": modified});
    assert_eq!(decoded(None), [null.clone(), null.clone(), null.clone()]);
    assert_eq!(
        decoded(Some("0x410fd0c0")),
        [level("l2", false), null.clone(), null.clone()]
    );
    // HIP12: 0x8 is its local memory (ARM_SPE_HISI_HIP_LOCAL_MEM), 0x11 its L2 HITM.
    assert_eq!(
        decoded(Some("0x480fd060")),
        [level("dram", false), null.clone(), level("l2", true)]
    );
    // A core whose encoding is not known (Cortex-A53) decodes nothing.
    assert_eq!(
        decoded(Some("0x410fd034")),
        [null.clone(), null.clone(), null]
    );
    let out = demo(&["spe", "decode", "--midr", "0x410fd0c0", path_str(&file)]);
    assert!(
        text(&out.stdout).contains("LD GP-REG | source 0x8 (L2)\n"),
        "{}",
        text(&out.stdout)
    );
    let out = demo(&["spe", "decode", "--midr", "0x1_0000_0000", path_str(&file)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("wider than MIDR_EL1"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn decode_missing_or_empty_file_is_a_clear_error() {
    let scratch = Scratch::new("decode-empty");
    let missing = scratch.0.join("missing.bin");
    let out = demo(&["spe", "decode", path_str(&missing)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("cannot read"),
        "{}",
        text(&out.stderr)
    );
    let empty = scratch.write("empty.bin", b"");
    let out = demo(&["spe", "decode", path_str(&empty)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("is empty"),
        "{}",
        text(&out.stderr)
    );
    let bad = scratch.write("bad.hex", b"b0 0g");
    let out = demo(&["spe", "decode", "--hex", path_str(&bad)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("not a hex digit"),
        "{}",
        text(&out.stderr)
    );
}

/// Every input of the committed fuzz corpus (arch/armv8/tests/data/spe_decode_fuzz_corpus.hex,
/// minimized from 16.2 M fuzzer executions), and all of them as one stream, decode without a
/// panic: exit 0 or 1, valid JSON, and each error carries an offset inside the input.
#[test]
fn decode_never_panics_on_the_fuzz_corpus() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../arch/armv8/tests/data/spe_decode_fuzz_corpus.hex");
    let text_corpus = std::fs::read_to_string(&corpus).expect("corpus committed");
    let inputs: Vec<Vec<u8>> = text_corpus
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            (0..l.trim().len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&l.trim()[i..i + 2], 16).unwrap())
                .collect()
        })
        .collect();
    assert!(inputs.len() > 300, "{} inputs", inputs.len());
    let scratch = Scratch::new("corpus");
    let mut all = Vec::new();
    for (n, input) in inputs.iter().enumerate() {
        all.extend_from_slice(input);
        let file = scratch.write(&format!("{n}.bin"), input);
        let out = demo(&["spe", "decode", "--json", "--packets", path_str(&file)]);
        let code = out.status.code();
        assert!(
            matches!(code, Some(0 | 1)),
            "input {n} {input:02x?}: {code:?} {}",
            text(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("input {n}: not JSON ({e})"));
        assert_eq!(code == Some(1), !v["errors"].as_array().unwrap().is_empty());
        for e in v["errors"].as_array().unwrap() {
            assert!(
                e["offset"].as_u64().unwrap() < input.len() as u64,
                "input {n}: {e}"
            );
        }
    }
    let file = scratch.write("all.bin", &all);
    let out = demo(&["spe", "decode", "--packets", path_str(&file)]);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        text(&out.stderr)
    );
    assert!(!text(&out.stderr).contains("panicked"));
}

/// `spe --help` names the example profiles and labels them honestly.
#[test]
fn help_lists_the_profiles() {
    let out = demo(&["spe", "--help"]);
    assert!(out.status.success());
    let s = text(&out.stdout);
    for needle in [
        "spev1p1-12bit",
        "spev1p2-fne",
        "spev1p4-16bit",
        "spev1p4-eft-fds",
        "not a\n          vendor-published",
        "--kernel <VERSION>",
        "Default: the running kernel's (uname release)",
        "--simd",
        "--all-types",
        "--data-source <N>",
    ] {
        let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
        let needle_flat = needle.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains(&needle_flat), "`{needle}` in {s}");
    }
}

/// The `text` code blocks of a Markdown file that show a `$ pmu-demo spe` command line
/// (not `decode`), as (command arguments, the block's other lines).
fn documented_spe_commands(markdown: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<String>> = None;
    for line in markdown.lines() {
        if line.starts_with("```") {
            if let Some(lines) = current.take() {
                if let Some(cmd) = lines
                    .first()
                    .and_then(|l| l.strip_prefix("$ pmu-demo spe "))
                    .filter(|c| !c.starts_with("decode"))
                {
                    let args = cmd.split_whitespace().map(str::to_owned).collect();
                    blocks.push((args, lines[1..].to_vec()));
                }
            } else {
                current = Some(Vec::new());
            }
            continue;
        }
        if let Some(lines) = current.as_mut() {
            lines.push(line.to_owned());
        }
    }
    blocks
}

/// The terms of a `perf record -e arm_spe_N/terms/` line as a `perf_event_attr`, placed by
/// `format` (an unknown term fails the test).
fn perf_line_attr(line: &str, format: &PerfFormat) -> PerfEventAttr {
    let event = line
        .split_whitespace()
        .find(|w| w.starts_with("arm_spe"))
        .unwrap_or_else(|| panic!("no arm_spe event in `{line}`"));
    let terms = event.split('/').nth(1).unwrap_or("");
    let mut attr = PerfEventAttr::default();
    for term in terms.split(',').filter(|t| !t.is_empty()) {
        let (name, value) = term.split_once('=').unwrap_or((term, "1"));
        let value = match value.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).unwrap(),
            None => value.parse().unwrap(),
        };
        if name == "period" {
            attr.sample_period = value;
            continue;
        }
        let field = PerfField::from_name(name).unwrap_or_else(|| panic!("`{name}` in `{line}`"));
        let place = format
            .field(field)
            .unwrap_or_else(|| panic!("`{name}` is no term of this kernel: `{line}`"));
        let word = match place.word {
            ConfigWord::Config => &mut attr.config,
            ConfigWord::Config1 => &mut attr.config1,
            ConfigWord::Config2 => &mut attr.config2,
            ConfigWord::Config3 => &mut attr.config3,
            _ => &mut attr.config4,
        };
        *word |= value << place.lo;
    }
    attr
}

/// `(event_filter, inv_event_filter)` of a `perf record -e arm_spe_N/terms/` line.
fn perf_line_masks(line: &str) -> (u64, u64) {
    let attr = perf_line_attr(line, &PerfFormat::linux_7_3());
    (attr.config1, attr.config3)
}

/// Every SPE example of README.md and the `pmu_armv8::spe` walkthrough: each `$ pmu-demo spe …`
/// block names its kernel (`--kernel`, so the output does not depend on the machine the docs
/// are checked on) and is run; each perf command the block shows is one the program prints,
/// and each is accepted by that kernel's driver for the block's capabilities
/// (`pmu_armv8::spe::perf::event_init`, the restatement of `arm_spe_pmu_event_init()` checked
/// against the 6.12 and 7.3 sources in arch/armv8/tests/spe_kernel_source.rs); a perf line
/// outside a block is held to both kernels on the most limited PE (FEAT_SPE with FE/FT/FL).
#[test]
fn documented_spe_examples_are_accepted_by_linux() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut checked_commands = 0;
    let mut checked_perf_lines = 0;
    for doc in ["README.md", "arch/armv8/src/spe/walkthrough.md"] {
        let markdown =
            std::fs::read_to_string(root.join(doc)).unwrap_or_else(|e| panic!("{doc}: {e}"));
        let mut versioned_lines = Vec::new();
        for (args, shown) in documented_spe_commands(&markdown) {
            let mut all: Vec<&str> = vec!["spe"];
            all.extend(args.iter().map(String::as_str));
            assert!(
                all.contains(&"--kernel"),
                "{doc}: `pmu-demo {}` names no --kernel",
                all.join(" ")
            );
            let out = demo(&all);
            let printed = text(&out.stdout);
            assert!(
                out.status.code() == Some(0),
                "{doc}: `pmu-demo {}` fails: {}{}",
                all.join(" "),
                printed,
                text(&out.stderr)
            );
            all.push("--json");
            let v: Value = serde_json::from_slice(&demo(&all).stdout).unwrap();
            let caps = &v["capabilities"];
            let pmsver = caps["pmsver"].as_u64().unwrap() as u8;
            let version = SpeVersion::from_pmsver(pmsver).unwrap();
            let pmsidr = u64::from_str_radix(
                caps["pmsidr"].as_str().unwrap().trim_start_matches("0x"),
                16,
            )
            .unwrap();
            let caps = SpeCapabilities::decode_raw(version, pmsidr, 0);
            let driver = LinuxSpeDriver::parse(v["perf"]["kernel"].as_str().unwrap()).unwrap();
            let target = PerfTarget::new(driver, &caps);
            for line in shown.iter().filter(|l| l.contains("perf record -e")) {
                assert!(
                    printed.lines().any(|p| p.trim() == line.trim()),
                    "{doc}: `{}` is not what `pmu-demo {}` prints:\n{printed}",
                    line.trim(),
                    all.join(" ")
                );
                versioned_lines.push(line.trim().to_owned());
                let attr = perf_line_attr(line, &target.format);
                assert_eq!(
                    event_init(&attr, &target),
                    Ok(()),
                    "{doc}: {driver} refuses `{}` on {version}",
                    line.trim()
                );
                checked_perf_lines += 1;
            }
            checked_commands += 1;
        }
        for line in markdown
            .lines()
            .filter(|l| l.contains("perf record -e arm_spe"))
        {
            if versioned_lines.iter().any(|v| line.contains(v.as_str())) {
                continue;
            }
            let caps = SpeCapabilities::decode_raw(SpeVersion::V1p0, 0x2_6407, 0);
            for driver in LinuxSpeDriver::ALL {
                let target = PerfTarget::new(driver, &caps);
                let attr = perf_line_attr(line, &target.format);
                assert_eq!(
                    event_init(&attr, &target),
                    Ok(()),
                    "{doc}: {driver} refuses `{}` on FEAT_SPE",
                    line.trim()
                );
            }
            checked_perf_lines += 1;
        }
    }
    assert!(checked_commands >= 2, "{checked_commands} commands");
    assert!(checked_perf_lines >= 2, "{checked_perf_lines} perf lines");
}

/// The check above can fail: the old README example (`event_filter=0x200` on FEAT_SPEv1p4) is
/// refused by the same rule.
#[test]
fn refused_example_is_detected() {
    use pmu_armv8::spe::perf::linux_6_12_pmsevfr_res0;
    let line = "  perf record -e arm_spe_0/load_filter=1,event_filter=0x200,min_latency=120,period=4096/ -- <command>";
    let (event, _) = perf_line_masks(line);
    assert_eq!(event, 0x200);
    assert_ne!(event & linux_6_12_pmsevfr_res0(SpeVersion::V1p4), 0);
    let v1p4 = SpeCapabilities::decode_raw(SpeVersion::V1p4, 0x3_6077, 0);
    let old = PerfTarget::new(LinuxSpeDriver::Linux6_12, &v1p4);
    assert!(event_init(&perf_line_attr(line, &old.format), &old).is_err());
    // Linux 7.3 takes it on FEAT_SPEv1p4 (E[9] architected there), not on FEAT_SPE.
    let new = PerfTarget::new(LinuxSpeDriver::Linux7_3, &v1p4);
    assert_eq!(event_init(&perf_line_attr(line, &new.format), &new), Ok(()));
    let v1p0 = SpeCapabilities::decode_raw(SpeVersion::V1p0, 0x2_6407, 0);
    let new = PerfTarget::new(LinuxSpeDriver::Linux7_3, &v1p0);
    assert!(event_init(&perf_line_attr(line, &new.format), &new).is_err());
}

/// The memory-latency recipe under Linux 7.3 on FEAT_SPEv1p4: the probe keeps E[9] (the Arm
/// ARM makes it filterable there), so perf expresses the whole filter and nothing is left
/// for decoding.
#[test]
fn memory_latency_on_spev1p4_under_linux_7_3() {
    let v = spe_json(
        &[
            "--kernel",
            "7.3",
            "--profile",
            "spev1p4-16bit",
            "--loads",
            "--min-latency",
            "120",
            "--event",
            "llc-miss",
            "--interval",
            "4096",
        ],
        0,
    );
    let perf = &v["perf"];
    assert_eq!(perf["kernel"], "7.3");
    assert_eq!(perf["format_source"], "linux-7.3");
    assert!(
        perf["error"].is_null() && perf["instead"].is_null(),
        "{perf}"
    );
    assert_eq!(
        perf["event"],
        "arm_spe_0/load_filter=1,event_filter=0x200,min_latency=120,period=4096/"
    );
}

/// The FEAT_SPE_EFT and FEAT_SPE_FDS intents: SIMD stores (--stores --simd --all-types: ST,
/// SIMD and their masks, Arm ARM D24.7.12) from data sources 0 and 3 (PMSDSFR_EL1 = 0x9). On a
/// CPU with both and under Linux 7.3, the terms `store_filter_mask`, `simd_filter`,
/// `simd_filter_mask` and `inv_data_src_filter` = !0x9; under 6.12 the registers stand but
/// perf has no term, and the hint names the release that has it; on a CPU without EFT the
/// intent is an error naming PMSIDR_EL1.EFT.
#[test]
fn simd_and_data_source_intents() {
    let intent = [
        "--profile",
        "spev1p4-eft-fds",
        "--stores",
        "--simd",
        "--all-types",
        "--data-source",
        "0,3",
        "--interval",
        "4096",
    ];
    let mut args = vec!["--kernel", "7.3"];
    args.extend_from_slice(&intent);
    let v = spe_json(&args, 0);
    for (f, want) in [
        ("FT", 1),
        ("FDS", 1),
        ("ST", 1),
        ("STm", 1),
        ("SIMD", 1),
        ("SIMDm", 1),
        ("LD", 0),
    ] {
        assert_eq!(field(&v, "PMSFCR_EL1", f), want, "PMSFCR_EL1.{f}");
    }
    assert_eq!(register(&v, "PMSDSFR_EL1"), 0x9);
    assert_eq!(
        v["perf"]["event"],
        "arm_spe_0/store_filter=1,store_filter_mask=1,simd_filter=1,simd_filter_mask=1,\
         inv_data_src_filter=0xfffffffffffffff6,period=4096/"
    );
    assert_eq!(v["perf"]["attr"]["config4"], "0xfffffffffffffff6");

    let mut args = vec!["--kernel", "6.12"];
    args.extend_from_slice(&intent);
    let v = spe_json(&args, 0);
    assert_eq!(v["perf"]["error"]["kind"], "PerfFieldUnavailable");
    let hint = v["perf"]["hint"].as_str().unwrap();
    assert!(hint.contains("came with Linux 7.3"), "{hint}");

    let v = spe_json(
        &[
            "--kernel",
            "7.3",
            "--profile",
            "spev1p4-16bit",
            "--stores",
            "--simd",
        ],
        2,
    );
    assert_eq!(kinds(&v["errors"]), ["FilterNotImplemented"]);
    let message = v["errors"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("PMSIDR_EL1.EFT") || message.contains("FEAT_SPE_EFT"),
        "{message}"
    );
}

/// Without --kernel the rules follow the running kernel's release
/// (/proc/sys/kernel/osrelease) where it is 6.12 or 7.3, else the newest known (7.3); the
/// output says which and why.
#[test]
fn kernel_defaults_to_the_running_one() {
    let v = spe_json(&["--profile", "spev1p2-fne", "--branches"], 0);
    let perf = &v["perf"];
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|r| r.trim().to_owned())
        .unwrap_or_default();
    match LinuxSpeDriver::for_release(&release) {
        Some(driver) => {
            assert_eq!(perf["kernel_choice"], "running");
            assert_eq!(perf["kernel"], driver.version());
            assert!(perf["kernel_detail"].as_str().unwrap().contains(&release));
        }
        None => {
            assert_eq!(perf["kernel_choice"], "newest");
            assert_eq!(perf["kernel"], LinuxSpeDriver::NEWEST.version());
        }
    }
    let out = demo(&["spe", "--kernel", "5.10", "--branches"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("6.12, 7.3"),
        "{}",
        text(&out.stderr)
    );
}

/// A sysfs tree shaped like Linux 7.3's on a FEAT_SPEv1p2 CPU with FnE (inv_event_filter and
/// discard shown, no EFT/FDS term) whose probe kept E[9] (`caps/event_filter` 0xaea): under
/// --kernel 7.3 the LLC-miss filter reaches the kernel; under 6.12's table it is refused.
#[test]
fn sysfs_event_filter_read_back_under_linux_7_3() {
    let scratch = Scratch::new("sysfs73");
    let pmu = "arm_spe_0";
    scratch.write(&format!("{pmu}/type"), b"11\n");
    for (name, entry) in [
        ("load_filter", "config:33"),
        ("event_filter", "config1:0-63"),
        ("inv_event_filter", "config3:0-63"),
        ("min_latency", "config2:0-11"),
        ("discard", "config:35"),
    ] {
        scratch.write(
            &format!("{pmu}/format/{name}"),
            format!("{entry}\n").as_bytes(),
        );
    }
    scratch.write(&format!("{pmu}/caps/min_interval"), b"1024\n");
    scratch.write(&format!("{pmu}/caps/count_size"), b"12\n");
    scratch.write(&format!("{pmu}/caps/event_filter"), b"0xaea\n");
    let dir = path_str(&scratch.0);
    let args = |kernel| {
        [
            "--kernel",
            kernel,
            "--sysfs-devices",
            dir,
            "--loads",
            "--event",
            "llc-miss",
        ]
    };
    let v = spe_json(&args("7.3"), 0);
    assert_eq!(
        v["capabilities"]["pmsver"], 3,
        "discard implies FEAT_SPEv1p2"
    );
    assert_eq!(
        v["perf"]["event"],
        "arm_spe_0/load_filter=1,event_filter=0x200,period=1024/"
    );
    let v = spe_json(&args("6.12"), 0);
    assert_eq!(v["perf"]["error"]["kind"], "PerfEventsRefused");
}

// ---- perf.data: files built here from Linux 6.12
// tools/perf/Documentation/perf.data-file-format.txt (struct perf_header, perf_file_section,
// perf_file_attr), tools/lib/perf/include/perf/event.h (struct perf_record_auxtrace{,_info})
// and tools/perf/util/arm-spe.h (priv[ARM_SPE_PMU_TYPE]); little-endian, as arm64 writes.

fn perf_event(record_type: u32, body: &[u8]) -> Vec<u8> {
    let mut e = record_type.to_le_bytes().to_vec();
    e.extend_from_slice(&0u16.to_le_bytes());
    e.extend_from_slice(&u16::try_from(8 + body.len()).unwrap().to_le_bytes());
    e.extend_from_slice(body);
    e
}

/// PERF_RECORD_AUXTRACE (71) for `cpu`, followed by its AUX bytes.
fn perf_auxtrace(data: &[u8], cpu: u32) -> Vec<u8> {
    let mut body = Vec::new();
    for v in [data.len() as u64, 0, 7] {
        body.extend_from_slice(&v.to_le_bytes()); // size, offset, reference
    }
    for v in [cpu, u32::MAX, cpu, 0] {
        body.extend_from_slice(&v.to_le_bytes()); // idx, tid, cpu, reserved
    }
    let mut e = perf_event(71, &body);
    e.extend_from_slice(data);
    e
}

/// One SPE record: PC at EL0, an Operation Type, Events, total latency, data VA, End.
fn spe_record(class: u8, payload: u8, events: u16, latency: u16, va: u64) -> Vec<u8> {
    let mut r = vec![0xB0];
    r.extend_from_slice(&0x8000_0000_0040_0000u64.to_le_bytes());
    r.extend_from_slice(&[0x48 | class, payload, 0x52]);
    r.extend_from_slice(&events.to_le_bytes());
    r.push(0x98);
    r.extend_from_slice(&latency.to_le_bytes());
    r.push(0xB2);
    r.extend_from_slice(&va.to_le_bytes());
    r.push(0x01);
    r
}

/// A perf.data file as `perf record -e arm_spe_0/load_filter=1,min_latency=120,period=4096/u`
/// would write it on a PE whose arm_spe PMU has type 10: CPU 0 saw a slow load that missed
/// the LLC (E[9]), a slow load that hit, and a branch; CPU 3 a fast load that missed.
fn perf_data_file(auxtrace_type: u32) -> Vec<u8> {
    let cpu0: Vec<u8> = [
        spe_record(1, 0x00, 0x0302, 150, 0x0000_AAAA_0000_1000),
        spe_record(1, 0x00, 0x0002, 200, 0xF3FF_8000_0000_2000),
        spe_record(2, 0x01, 0x0082, 3, 0),
    ]
    .concat();
    let cpu3 = spe_record(1, 0x00, 0x0302, 90, 0x0000_AAAA_0000_3000);
    let mut info = auxtrace_type.to_le_bytes().to_vec();
    info.extend_from_slice(&0u32.to_le_bytes());
    info.extend_from_slice(&10u64.to_le_bytes()); // priv[ARM_SPE_PMU_TYPE]
    info.extend_from_slice(&1u64.to_le_bytes()); // priv[ARM_SPE_PER_CPU_MMAPS]
    let data = [
        perf_event(3, &[0; 16]), // PERF_RECORD_COMM-like: skipped
        perf_event(70, &info),
        perf_auxtrace(&cpu0, 0),
        perf_auxtrace(&cpu3, 3),
        perf_event(68, &[]), // PERF_RECORD_FINISHED_ROUND
    ]
    .concat();
    // struct perf_event_attr, PERF_ATTR_SIZE_VER8 (136 bytes).
    let mut attr = vec![0u8; 136];
    attr[0..4].copy_from_slice(&10u32.to_le_bytes()); // type
    attr[4..8].copy_from_slice(&136u32.to_le_bytes()); // size
    attr[8..16].copy_from_slice(&(1u64 << 33).to_le_bytes()); // config: load_filter
    attr[16..24].copy_from_slice(&4096u64.to_le_bytes()); // sample_period
    attr[40..48].copy_from_slice(&(1u64 << 5).to_le_bytes()); // exclude_kernel
    attr[64..72].copy_from_slice(&120u64.to_le_bytes()); // config2: min_latency
    let attr_size = 136 + 16;
    let mut f = b"PERFILE2".to_vec();
    for v in [
        104,
        attr_size,
        104,
        attr_size,
        104 + attr_size,
        data.len() as u64,
        0,
        0,
    ] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    f.extend_from_slice(&[0; 32]);
    f.extend_from_slice(&attr);
    f.extend_from_slice(&[0; 16]); // ids section
    f.extend_from_slice(&data);
    f
}

#[test]
fn decode_reads_perf_data_per_cpu() {
    let scratch = Scratch::new("perf-data");
    let file = scratch.write("perf.data", &perf_data_file(4));
    let out = demo(&["spe", "decode", "--json", path_str(&file)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["format"], "perf.data");
    let p = &v["perf_data"];
    assert_eq!(p["spe_pmu_type"], 10);
    assert_eq!(
        p["recording"]["terms"],
        "load_filter=1,min_latency=120,period=4096"
    );
    assert_eq!(p["recording"]["exclude_kernel"], true);
    let chunks: Vec<(u64, u64)> = p["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["cpu"].as_u64().unwrap(), c["bytes"].as_u64().unwrap()))
        .collect();
    assert_eq!(chunks, [(0, 3 * 27), (3, 27)]);
    let records = v["records"].as_array().unwrap();
    let cpus: Vec<u64> = records.iter().map(|r| r["cpu"].as_u64().unwrap()).collect();
    assert_eq!(cpus, [0, 0, 0, 3]);
    assert_eq!(records[0]["total_latency"], 150);
    // The tagged kernel address of the second load, as perf resolves it.
    assert_eq!(records[1]["data_virtual"]["address"], "0xffff800000002000");
    assert_eq!(records[3]["offset"], 0, "offsets count from the chunk");

    let out = demo(&["spe", "decode", path_str(&file)]);
    let s = text(&out.stdout);
    assert!(s.contains("perf.data (little-endian): 2 AUXTRACE chunks (cpu 0: 1 chunks, 81 bytes; cpu 3: 1 chunks, 27 bytes)"), "{s}");
    assert!(s.contains("recorded with arm_spe PMU type 10: load_filter=1,min_latency=120,period=4096 (modifier u: EL0 only)"), "{s}");
    assert!(s.contains("cpu 3 record @0x0000"), "{s}");
}

/// What the kernel cannot filter (LLC miss, refused by Linux 6.12's arm_spe_pmsevfr_res0()),
/// filtered after the fact with the command `pmu-demo spe` prints for it: of the four
/// records only CPU 0's first (load, 150 cycles, E[9]) passes; the branch fails the type,
/// the 200-cycle load the event, CPU 3's load the latency.
#[test]
fn decode_post_filters_what_the_kernel_cannot() {
    let v = spe_json(
        &[
            "--kernel",
            "6.12",
            "--profile",
            "spev1p4-16bit",
            "--loads",
            "--min-latency",
            "120",
            "--event",
            "llc-miss",
        ],
        0,
    );
    let command = v["perf"]["instead"]["decode_command"]
        .as_str()
        .unwrap()
        .to_owned();
    let scratch = Scratch::new("post-filter");
    let file = scratch.write("perf.data", &perf_data_file(4));
    let mut args: Vec<&str> = command.split_whitespace().skip(1).collect();
    assert_eq!(args[..2], ["spe", "decode"]);
    let at = args.iter().position(|a| *a == "perf.data").unwrap();
    args[at] = path_str(&file);
    args.push("--json");
    let out = demo(&args);
    assert!(out.status.success(), "{command}: {}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["filtered_out"], 3);
    let records = v["records"].as_array().unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(
        (
            records[0]["cpu"].as_u64(),
            records[0]["total_latency"].as_u64()
        ),
        (Some(0), Some(150))
    );
    assert_eq!(
        v["filter"],
        "types load, total latency >= 120, with all of LLC_MISS (E[9])"
    );
    // An unfilterable event (E[0]) is refused with the model's reason.
    let out = demo(&["spe", "decode", path_str(&file), "--event", "0x1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("cannot be applied"),
        "{}",
        text(&out.stderr)
    );
}

/// Every truncation of the file and a set of corruptions: exit 1 (decoded what came before)
/// or 2 (nothing to decode) with a message, never a panic (exit 101) or a signal.
#[test]
fn decode_truncated_and_corrupt_perf_data() {
    let scratch = Scratch::new("perf-data-bad");
    let good = perf_data_file(4);
    for cut in 1..good.len() {
        let file = scratch.write("cut.data", &good[..cut]);
        let out = demo(&["spe", "decode", path_str(&file)]);
        let code = out.status.code();
        assert!(
            matches!(code, Some(1) | Some(2)),
            "cut at {cut}: exit {code:?}, stderr {}",
            text(&out.stderr)
        );
        assert!(!out.stderr.is_empty(), "cut at {cut}: no message");
    }
    let data_at = 104 + 152;
    let corrupt = |at: usize, bytes: &[u8]| {
        let mut f = good.clone();
        f[at..at + bytes.len()].copy_from_slice(bytes);
        f
    };
    // Size 0 in the first event header: nothing before it to decode.
    let f = scratch.write("size0.data", &corrupt(data_at + 6, &[0, 0]));
    let out = demo(&["spe", "decode", path_str(&f)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("has size 0"),
        "{}",
        text(&out.stderr)
    );
    // CPU 3's chunk announces 1 TiB: CPU 0's records are decoded, then the error (exit 1).
    let cpu3_at = data_at + 24 + 32 + 48 + 81;
    let f = scratch.write(
        "huge.data",
        &corrupt(cpu3_at + 8, &(1u64 << 40).to_le_bytes()),
    );
    let out = demo(&["spe", "decode", path_str(&f)]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("stops early"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout).matches("cpu 0 record").count(), 3);
    // An Intel PT recording is not SPE; a data section size of 0 is an unfinished file.
    let f = scratch.write("pt.data", &perf_data_file(1));
    let out = demo(&["spe", "decode", path_str(&f)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("not Arm SPE"),
        "{}",
        text(&out.stderr)
    );
    let f = scratch.write("empty.data", &corrupt(48, &0u64.to_le_bytes()));
    let out = demo(&["spe", "decode", path_str(&f)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("properly terminated"),
        "{}",
        text(&out.stderr)
    );
    // --raw decodes the same bytes as an SPE buffer: garbage, reported as errors.
    let f = scratch.write("good.data", &good);
    let out = demo(&["spe", "decode", "--raw", path_str(&f)]);
    assert_eq!(out.status.code(), Some(1));
}

/// The SPE walkthrough (arch/armv8/src/spe/walkthrough.md, the `pmu_armv8::spe` module
/// docs) names and corrects the common mistakes: each is stated with its correction
/// (Arm ARM D24.2.80 PMSVer is bits [35:32]; D24.7.8 PMSCR_EL1 has E0SPE/E1SPE and no EN;
/// D24.7.14 PMSIDR_EL1 is read-only; D18.2.6 event bits; D18.2 Operation Type EXCL vs AT).
#[test]
fn spe_doc_corrects_the_common_mistakes() {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../arch/armv8/src/spe/walkthrough.md"),
    )
    .expect("arch/armv8/src/spe/walkthrough.md");
    for (mistake, correction) in [
        ("tbz x0, #32", "ubfx x1, x0, #32, #4"),
        ("PMSCR_EL1 has no EN", "PMBLIMITR_EL1.E"),
        ("PMSIDR_EL1", "It is read-only"),
        ("0x08 is bit 3, **L1D refill**", "`0x200`"),
        ("LDXR/STXR", "EXCL (bit 3), not AT (bit 2)"),
        (
            "Neoverse-N1 and Cortex-A76 are FEAT_SPE, PMSVer 1",
            "--pmsver 1",
        ),
    ] {
        assert!(
            doc.contains(mistake),
            "the SPE walkthrough lacks `{mistake}`"
        );
        assert!(
            doc.contains(correction),
            "the SPE walkthrough lacks `{correction}`"
        );
    }
    // Every correction names its public source.
    assert!(doc.contains("Arm ARM"));
}
