//! The static ARMv6 `pmu-demo` (Raspberry Pi 1 / Zero) under `qemu-arm-static -cpu
//! arm1176`: the binary really is ARMv6 and static, and without user access to the PMU
//! (QEMU's ARM1176 c15 traps in User mode, like a Pi without kmod-enable-user) the
//! demo says so clearly, exit status 3, instead of crashing.
//!
//! Run with `cargo xtask armv6-demo` (or `cargo xtask test`), which builds the binary
//! and passes its path in `PMU_DEMO_ARMV6`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pmu_tests::armv6::{demo, CPU, QEMU_ARM};
use serde_json::Value;

/// userspace-demo's message for `pmu_linux::Error::UserAccessNotEnabled`, and its exit
/// status `EXIT_NOT_ENABLED`.
const NOT_ENABLED: &str =
    "pmu-demo: user access to the PMU is not enabled: load kmod-enable-user\n";
const EXIT_NOT_ENABLED: i32 = 3;

/// A fresh, empty directory to run in: a core file (QEMU writes the guest's as
/// `qemu_pmu-demo_*.core` into the working directory) would appear there.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pmu-armv6-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creating a scratch directory");
    dir
}

/// `pmu-demo args…` as an ARM1176 in user-mode QEMU, in an empty directory with core
/// dumps allowed (so a crash would leave a core file); asserts that none was written and
/// that the demo ended by exiting, not by a signal.
fn run(name: &str, args: &[&str]) -> Output {
    let dir = scratch(name);
    let out = Command::new("sh")
        .args(["-c", "ulimit -c unlimited 2>/dev/null; exec \"$@\"", "sh"])
        .args([QEMU_ARM, "-cpu", CPU])
        .arg(demo())
        .args(args)
        .current_dir(&dir)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot start {QEMU_ARM}: {e} — `cargo xtask setup` installs qemu-user-static")
        });
    let left: Vec<_> = std::fs::read_dir(&dir)
        .expect("listing the scratch directory")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(
        left.is_empty(),
        "pmu-demo {args:?} left {left:?} (a core dump?)\n{}",
        show(&out)
    );
    assert!(
        out.status.code().is_some(),
        "pmu-demo {args:?} was killed by a signal: {}\n{}",
        out.status,
        show(&out)
    );
    let _ = std::fs::remove_dir_all(&dir);
    out
}

fn show(out: &Output) -> String {
    format!(
        "status {}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `arm-linux-gnueabi-readelf` (binutils-arm-linux-gnueabi, which the cross gcc that
/// links the demo depends on) on `file`.
fn readelf(flag: &str, file: &Path) -> String {
    let out = Command::new("arm-linux-gnueabi-readelf")
        .args([flag, "-W"])
        .arg(file)
        .output()
        .expect("arm-linux-gnueabi-readelf (apt: binutils-arm-linux-gnueabi, installed with gcc-arm-linux-gnueabi by `cargo xtask setup`)");
    assert!(
        out.status.success(),
        "readelf {flag} {}: {}",
        file.display(),
        show(&out)
    );
    stdout(&out)
}

/// What makes a binary fit a Raspberry Pi 1 / Zero with any root file system: 32-bit
/// ARM, EABI5, architecture v6 (or v6KZ, the ARM1176's) in the ARM build attributes,
/// and no program interpreter or dynamic section (static). `Err` says what is wrong.
fn armv6_static(file: &Path) -> Result<(), String> {
    let header = readelf("-h", file);
    let field = |name: &str| {
        header
            .lines()
            .find_map(|l| l.trim().strip_prefix(name).map(|v| v.trim().to_owned()))
            .unwrap_or_default()
    };
    if field("Class:") != "ELF32" || field("Machine:") != "ARM" {
        return Err(format!(
            "not 32-bit ARM: class {}, machine {}",
            field("Class:"),
            field("Machine:")
        ));
    }
    // ARM IHI 0045 (ARM ELF addenda): Tag_CPU_arch 6 = v6, 9 = v6K, 7 = v6KZ; v7 and
    // later would use instructions the ARM1176 lacks.
    let attributes = readelf("-A", file);
    let arch = attributes.lines().find_map(|l| {
        l.trim()
            .strip_prefix("Tag_CPU_arch:")
            .map(|v| v.trim().to_owned())
    });
    match arch.as_deref() {
        Some("v6" | "v6KZ" | "v6K") => {}
        other => return Err(format!("Tag_CPU_arch is {other:?}, not v6/v6KZ")),
    }
    let segments = readelf("-l", file);
    if segments.contains("INTERP") {
        return Err("dynamically linked: it has an INTERP segment".into());
    }
    let dynamic = readelf("-d", file);
    if !dynamic.contains("There is no dynamic section") {
        return Err(format!("it has a dynamic section:\n{dynamic}"));
    }
    Ok(())
}

/// readelf: ARMv6, static. The same check refuses an ARMv7 object (gcc's
/// `-march=armv7-a` output) and a dynamic binary, so it can fail.
#[test]
fn the_binary_is_static_armv6() {
    let bin = demo();
    armv6_static(&bin).unwrap_or_else(|why| panic!("{}: {why}", bin.display()));
    let attributes = readelf("-A", &bin);
    assert!(attributes.contains("Tag_ARM_ISA_use: Yes"), "{attributes}");

    let dir = scratch("controls");
    let source = dir.join("main.c");
    std::fs::write(&source, "int main(void) { return 0; }\n").unwrap();
    let build = |out: &str, flags: &[&str]| {
        let path = dir.join(out);
        let status = Command::new("arm-linux-gnueabi-gcc")
            .args(flags)
            .arg(&source)
            .arg("-o")
            .arg(&path)
            .status()
            .expect("arm-linux-gnueabi-gcc (apt: gcc-arm-linux-gnueabi)");
        assert!(status.success(), "arm-linux-gnueabi-gcc {flags:?}");
        path
    };
    let v7 = build("v7", &["-static", "-march=armv7-a", "-marm"]);
    assert!(armv6_static(&v7).unwrap_err().contains("v7"));
    let dynamic = build("dynamic", &["-march=armv6", "-marm"]);
    assert!(armv6_static(&dynamic)
        .unwrap_err()
        .contains("dynamically linked"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `measure --backend direct` without user access: the probe's PMCR read traps
/// (SIGILL in a child), and the demo exits 3 with exactly the "not enabled" message
/// (pmu-linux `Error::UserAccessNotEnabled`) and nothing else, no crash, no core file.
#[test]
fn direct_without_user_access_is_not_enabled() {
    let out = run(
        "direct",
        &[
            "measure",
            "--backend",
            "direct",
            "--kernel",
            "loop",
            "--events",
            "cycles,instructions",
        ],
    );
    assert_eq!(out.status.code(), Some(EXIT_NOT_ENABLED), "{}", show(&out));
    assert_eq!(stderr(&out), NOT_ENABLED, "{}", show(&out));
    assert_eq!(stdout(&out), "", "{}", show(&out));
    // The /64 divider does not change that.
    let out = run(
        "divider",
        &["measure", "--backend", "direct", "--cycle-divider", "64"],
    );
    assert_eq!(out.status.code(), Some(EXIT_NOT_ENABLED), "{}", show(&out));
    assert_eq!(stderr(&out), NOT_ENABLED, "{}", show(&out));
}

/// `measure` (auto): 32-bit ARM has no perf backend here, so the demo says so on stderr
/// and tries the direct one, which is not enabled: exit 3, the last line the same
/// message.
#[test]
fn auto_says_no_perf_then_not_enabled() {
    let out = run("auto", &["measure"]);
    assert_eq!(out.status.code(), Some(EXIT_NOT_ENABLED), "{}", show(&out));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{}", show(&out));
    assert!(
        lines[0].starts_with(
            "... perf backend: the perf backend needs the perf-event-open-sys bindings"
        ) && lines[0].ends_with("; trying the direct backend"),
        "{}",
        show(&out)
    );
    assert_eq!(format!("{}\n", lines[1]), NOT_ENABLED);
    assert_eq!(stdout(&out), "");
    // --backend perf on its own: a usage error (2) naming the reason.
    let out = run("perf", &["measure", "--backend", "perf"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(
        stderr(&out).contains("64-bit architectures only"),
        "{}",
        show(&out)
    );
}

/// `hazards` needs the direct backend on 32-bit ARM: not enabled, exit 3.
#[test]
fn hazards_without_user_access_is_not_enabled() {
    let out = run("hazards", &["hazards"]);
    assert_eq!(out.status.code(), Some(EXIT_NOT_ENABLED), "{}", show(&out));
    assert_eq!(stderr(&out), NOT_ENABLED, "{}", show(&out));
}

/// `list`: both backends with their reasons, and the ARM1176 event table (TRM Table
/// 3-137: 24 selectable events plus 0xFF; not the "21" some write-ups count),
/// instructions = 0x07 and cycles = 0xFF as in Linux's armv6_perf_map
/// (drivers/perf/arm_v6_pmu.c).
#[test]
fn list_shows_backends_and_the_arm1176_events() {
    let out = run("list", &["list"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let text = stdout(&out);
    assert!(
        text.contains(
            "direct  not usable: user access to the PMU is not enabled: load kmod-enable-user"
        ),
        "{text}"
    );
    assert!(
        text.contains("perf    not usable: the perf backend needs"),
        "{text}"
    );
    assert!(text.contains("24 selectable plus 0xFF"), "{text}");
    assert!(
        text.contains(
            "user-space counter reads: the direct backend reads each counter with one mrc"
        ),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("0x07 instructions ")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("0xff cycles ")),
        "{text}"
    );
    // list never programs the PMU, and its probe's trap stays in the child.
    assert_eq!(stderr(&out), "", "{}", show(&out));

    let out = run("list-json", &["list", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let json: Value = serde_json::from_slice(&out.stdout).expect("list --json is JSON");
    let events = json["arm1176_events"].as_array().expect("arm1176_events");
    assert_eq!(events.len(), 25);
    let codes: Vec<u64> = events.iter().map(|e| e["code"].as_u64().unwrap()).collect();
    assert!(
        !codes.contains(&0x08) && !codes.contains(&0x0e),
        "reserved codes listed: {codes:?}"
    );
    let direct = json["backends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["backend"] == "direct")
        .expect("the direct backend is listed");
    assert_eq!(direct["usable"], false);
}

/// `--help` and `measure --help` run and document the ARMv6 specifics; a bad divider is
/// a usage error (2).
#[test]
fn help_works() {
    let out = run("help", &["--help"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(stdout(&out).contains("ARM1176"), "{}", show(&out));
    let out = run("measure-help", &["measure", "--help"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(stdout(&out).contains("--cycle-divider"), "{}", show(&out));
    let out = run("bad-divider", &["measure", "--cycle-divider", "32"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(stderr(&out).contains("every 64th (64)"), "{}", show(&out));
}
