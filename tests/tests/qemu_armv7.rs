//! Boots the AArch32 image (qemu/armv7-virt) on cortex-a7 and cortex-a15 under QEMU
//! icount and checks every RESULT line. Expected values: what QEMU 10.0.2 emulates,
//! measured with this image (qemu/armv7-virt/README.md); the access rules of the
//! ARMv7-A/R ARM (DDI 0406C) chapter C12, "PMUSERENR" (PMUv2: EN alone).

use std::time::Duration;

use pmu_tests::{armv7_virt_args, image, run_qemu, QemuRun, ARMV7_SUCCESS, QEMU_ARM};

const LIMIT: Duration = Duration::from_secs(120);

fn boot(cpu: &str) -> QemuRun {
    let args = armv7_virt_args(&image("PMU_IMAGE_ARMV7_VIRT"), cpu);
    let run = run_qemu(QEMU_ARM, &args, LIMIT);
    assert!(
        !run.timed_out,
        "QEMU ({cpu}) ran past {LIMIT:?}\n{}",
        run.stdout
    );
    run
}

/// `RESULT events`: the events the scenarios count, named from the core's table in
/// pmu-events when it has one (`table=core`), else from the common events
/// (`table=common`): INST_RETIRED (0x08) and CPU_CYCLES (0x11), the common event numbers
/// of the ARMv7 ARM (DDI 0406C, C12.8) and the Arm ARM (DDI 0487). Each is also printed
/// with the table's one-line meaning.
fn check_events(run: &QemuRun, core: &str, table: &str) {
    let e = &run.scenario("events")[0];
    assert_eq!((e.get("core"), e.get("table")), (core, table), "{}", e.raw);
    assert_eq!(
        (e.get("instructions"), e.int("instructions_code")),
        ("INST_RETIRED", 0x08),
        "{}",
        e.raw
    );
    assert_eq!(
        (e.get("cycles"), e.int("cycles_code")),
        ("CPU_CYCLES", 0x11),
        "{}",
        e.raw
    );
    for (what, event) in [
        ("instructions", pmu_events::common::INST_RETIRED),
        ("cycles", pmu_events::common::CPU_CYCLES),
    ] {
        let line = format!(
            "  {what}: {:#04x} {}: {}",
            event.code, event.name, event.about
        );
        assert!(
            run.stdout.lines().any(|l| l.trim_end_matches('\r') == line),
            "`{line}` missing\n{}",
            run.stdout
        );
    }
}

/// Every check of one model: probe, exact counts, overflow, PL0 access.
fn check_model(cpu: &str, midr: &str, counters: i128) {
    let run = boot(cpu);
    let out = &run.stdout;
    assert_eq!(
        run.code,
        Some(ARMV7_SUCCESS),
        "{cpu}: image reported failure\n{out}"
    );
    assert!(!out.contains("FATAL"), "{cpu}\n{out}");
    // 1 probe + 5 exact + 1 overflow + 3 readers + 1 reader cost + 1 filter + 3
    // settings x 6 accesses.
    let summary = run.find("summary", "fail", "0");
    assert_eq!(summary.int("pass"), 30, "{cpu}: number of checks\n{out}");
    // PMUv2: no PMEVCNTR<n>, event counters are read through PMSELR + isb + PMXEVCNTR.
    check_readers_and_filter(&run, cpu, "Selected(0)");

    // Measured: ID_DFR0 0x02000505 (PerfMon 2, PMUv2) on both; PMCR.N 4 on cortex-a7,
    // 6 on cortex-a15; 32-bit event and cycle counters (ARMv7 PMCCNTR is 32 bits).
    let probe = &run.scenario("probe")[0];
    assert_eq!(probe.get("midr"), midr, "{cpu}: {}", probe.raw);
    assert_eq!(probe.get("id_dfr0"), "0x2000505", "{cpu}: {}", probe.raw);
    assert_eq!(probe.int("perfmon"), 2, "{cpu}: {}", probe.raw);
    assert_eq!(probe.int("counters"), counters, "{cpu}: {}", probe.raw);
    assert_eq!(probe.int("event_width"), 32, "{cpu}: {}", probe.raw);
    assert_eq!(probe.int("cycle_width"), 32, "{cpu}: {}", probe.raw);
    // MIDR part 0xC07 is the Cortex-A7 (its TRM, "Main ID Register"), which pmu-events
    // has a table for; 0xC0F, the Cortex-A15, it has none: the common names stand in.
    match cpu {
        "cortex-a7" => check_events(&run, "Cortex-A7", "core"),
        _ => check_events(&run, "unknown", "common"),
    }

    // Under -icount shift=0 INST_RETIRED and PMCCNTR are exact: a block of K
    // instructions measures K, min and median, every run clean.
    for k in [1, 10, 100, 1000, 10000] {
        let r = run.find("exact", "k", &k.to_string());
        for key in ["inst", "inst_median", "cycles", "cycles_median"] {
            assert_eq!(r.int(key), k, "{cpu}: {key} for K={k}: {}", r.raw);
        }
        assert_eq!(r.get("clean"), "11/11", "{cpu}: {}", r.raw);
        assert_eq!(r.get("hazards"), "none", "{cpu}: {}", r.raw);
        assert_eq!(r.get("cycle_slot"), "PMCCNTR", "{cpu}: {}", r.raw);
    }

    // Overflow of a 32-bit counter: flagged (PMOVSR), corrected to the block's 100
    // instructions, the next run clean, the raw value below 2^32.
    let o = &run.scenario("overflow")[0];
    assert_eq!(o.int("width"), 32, "{}", o.raw);
    assert_eq!(o.get("preset"), "0xffffffc0", "{}", o.raw);
    assert_eq!(o.get("hazards"), "overflow", "{cpu}: {}", o.raw);
    assert_eq!(o.int("corrected"), 100, "{cpu}: {}", o.raw);
    assert_eq!(o.get("next_run_hazards"), "none", "{cpu}: {}", o.raw);
    assert!(o.int("raw_end") < 1 << 32, "{cpu}: {}", o.raw);

    // PL0 access (DDI 0406C C12 "PMUSERENR"): PMUv2 keeps EN alone, so CR|ER reads back
    // 0 and grants nothing; EN opens everything but PMINTENSET; PMUSERENR is always
    // readable.
    let access = run.scenario("pl0_access");
    assert_eq!(access.len(), 18, "{cpu}\n{out}");
    for line in access {
        let setting = line.get("pmuserenr");
        let what = line.get("access");
        let expected = match (setting, what) {
            (_, "PMUSERENR.read") => "ok",
            (_, "PMINTENSET.read") => "trap",
            ("EN", _) => "ok",
            _ => "trap",
        };
        assert_eq!(line.get("outcome"), expected, "{cpu}: {}", line.raw);
        let kept = if setting == "EN" { "0x1" } else { "0x0" };
        assert_eq!(line.get("kept"), kept, "{cpu}: {}", line.raw);
    }
}

/// The `pmu_armv7::reader` handles and the privilege filter a kernel-entry sentinel
/// needs, in one boot's RESULT lines.
fn check_readers_and_filter(run: &QemuRun, cpu: &str, path: &str) {
    // Under icount a block of K instructions is K, through a handle and through the
    // driver's Pmu::read alike (the image calibrates each against an empty block).
    for k in [1, 100, 10000] {
        let r = run.find("readers", "k", &k.to_string());
        assert_eq!(r.get("path"), path, "{cpu}: {}", r.raw);
        for key in [
            "handle_inst",
            "handle_cycles",
            "driver_inst",
            "driver_cycles",
        ] {
            assert_eq!(r.int(key), k, "{cpu}: {key} for K={k}: {}", r.raw);
        }
    }
    // Frozen counters read the same through every path; readers for counters the PMU
    // lacks are refused when made.
    let cost = &run.scenario("readers_cost")[0];
    assert_eq!(cost.get("frozen_equal"), "true", "{cpu}: {}", cost.raw);
    assert_eq!(
        cost.get("out_of_range_refused"),
        "true",
        "{cpu}: {}",
        cost.raw
    );
    // PMUv3 (DDI 0487 G8 "PMEVCNTR<n>"): two back-to-back reads of the compile-time
    // handle are one instruction apart (one `mrc`, seen in the image's disassembly).
    if path.starts_with("Pmevcntr") {
        assert_eq!(cost.int("floor_inst"), 1, "{cpu}: {}", cost.raw);
    }
    // The run-time reader is dearer than the floor and cheaper than the driver's read,
    // except for what a PL0 selected read pays and the PL1 driver (which owns PMSELR)
    // does not: PMSELR read back after PMXEVCNTR (pmu-armv7 `reader::read_selected`:
    // `mrc` PMSELR, `and`, `cmp`, `bne`, 4 instructions in the image's disassembly).
    let check = if path.starts_with("Selected") { 4 } else { 0 };
    assert!(
        cost.int("runtime_inst") < cost.int("driver_inst") + check,
        "{cpu}: {}",
        cost.raw
    );
    // DDI 0406C C12 "PMXEVTYPER" P/U (PMUv2 filtering; DDI 0487 G8 "PMEVTYPER<n>" on
    // PMUv3): INST_RETIRED with U set counts the 1000 PL1 instructions and none of the
    // 1000 at PL0; with P set the reverse. Exception entry and return to run the PL0
    // block are counted at PL1 (pl0_entry_kernel > 0): what makes the sentinel see a
    // kernel entry.
    let f = &run.scenario("filter")[0];
    assert_eq!(f.int("pl1_block_kernel"), 1000, "{cpu}: {}", f.raw);
    assert_eq!(f.int("pl1_block_user"), 0, "{cpu}: {}", f.raw);
    assert_eq!(f.int("pl0_block_kernel"), 0, "{cpu}: {}", f.raw);
    assert_eq!(f.int("pl0_block_user"), 1000, "{cpu}: {}", f.raw);
    assert!(f.int("pl0_entry_kernel") > 0, "{cpu}: {}", f.raw);
}

/// QEMU 10.0.2 `qemu-system-arm -cpu max`: a Cortex-A15 base with AArch32 PMUv3
/// (ID_DFR0.PerfMon 6, measured with this image: `RESULT probe … perfmon=6`). Event
/// counters read through `PMEVCNTR<n>`; PMUSERENR keeps CR and ER there (the image
/// checks the PL0 accesses against `PerfMon::has_read_only_grant`).
#[test]
fn max_pmuv3_in_aarch32() {
    let cpu = "max";
    let run = boot(cpu);
    let out = &run.stdout;
    assert_eq!(
        run.code,
        Some(ARMV7_SUCCESS),
        "{cpu}: image reported failure\n{out}"
    );
    let summary = run.find("summary", "fail", "0");
    assert_eq!(summary.int("pass"), 30, "{cpu}: number of checks\n{out}");
    let probe = &run.scenario("probe")[0];
    assert_eq!(probe.int("perfmon"), 6, "{cpu}: {}", probe.raw);
    check_readers_and_filter(&run, cpu, "Pmevcntr(0)");
    // MIDR 0x411FD070 (part 0xD07) has no table in pmu-events: the common events name
    // what it counts and the events its PMCEID0/1 report (measured: 0x00, 0x08, 0x11,
    // 0x23, 0x24, 0x3C).
    check_events(&run, "unknown", "common");
    for event in [
        pmu_events::common::SW_INCR,
        pmu_events::common::STALL_FRONTEND,
        pmu_events::common::STALL,
    ] {
        let line = format!("    {:#04x} {}: {}", event.code, event.name, event.about);
        assert!(
            out.lines().any(|l| l.trim_end_matches('\r') == line),
            "`{line}` missing\n{out}"
        );
    }
}

#[test]
fn cortex_a7_pmuv2() {
    check_model("cortex-a7", "0x410fc075", 4);
}

#[test]
fn cortex_a15_pmuv2() {
    check_model("cortex-a15", "0x414fc0f0", 6);
}

/// A failing check, a panic and an unexpected exception are each visible in the output
/// and the exit status (1: `finish` in qemu/scenarios-common/src/lib.rs; 2: the panic
/// handler in qemu/armv7-scenarios/src/lib.rs; 3: its boot.rs).
#[test]
fn failures_are_reported() {
    let boot_with = |what: &str| {
        let mut args = armv7_virt_args(&image("PMU_IMAGE_ARMV7_VIRT"), "cortex-a7");
        args.extend(["-append".to_string(), format!("selftest={what}")]);
        run_qemu(QEMU_ARM, &args, LIMIT)
    };
    let fail = boot_with("fail");
    assert_eq!(fail.code, Some(1), "{}", fail.stdout);
    assert_eq!(fail.find("summary", "fail", "1").int("pass"), 0);
    let panic = boot_with("panic");
    assert_eq!(panic.code, Some(2), "{}", panic.stdout);
    assert!(
        panic.stdout.contains("FATAL panic: panicked at"),
        "{}",
        panic.stdout
    );
    let undef = boot_with("undef");
    assert_eq!(undef.code, Some(3), "{}", undef.stdout);
    assert!(
        undef
            .stdout
            .contains("FATAL exception: undefined instruction at PL1"),
        "{}",
        undef.stdout
    );
}
