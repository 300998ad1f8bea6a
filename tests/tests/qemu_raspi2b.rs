//! Boots the bare-metal Raspberry Pi 2 image (`kernel7.img`, qemu/raspi2b) on QEMU 10's
//! `raspi2b` (BCM2836, 4 x Cortex-A7) under icount and checks every RESULT line: the
//! scenarios of the armv7-virt image (pmu-scenarios-armv7), with the values
//! qemu_armv7.rs expects of `-cpu cortex-a7` (MIDR 0x410fc075, PMUv2, PMCR.N = 4:
//! target/arm/cpu32.c, docs/qemu.md), exact under `-icount shift=0`. Also boots the
//! armv7-virt image in HYP mode (`virtualization=on`), the mode the Pi 2's firmware
//! starts a kernel in, to prove the shared HYP -> SVC hand-over.

use std::time::Duration;

use pmu_tests::{
    aarch64_virt_args, image, raspi_image_args, run_qemu, run_qemu_until, QemuRun, QEMU_ARM,
};

const LIMIT: Duration = Duration::from_secs(120);

fn boot(args: Vec<String>) -> QemuRun {
    let run = run_qemu(QEMU_ARM, &args, LIMIT);
    run.assert_finished_within(LIMIT);
    run
}

fn raspi2b(extra: &[&str]) -> QemuRun {
    let mut args = raspi_image_args("raspi2b", &image("PMU_IMAGE_RASPI2B"));
    args.extend(extra.iter().map(|s| s.to_string()));
    boot(args)
}

/// The Cortex-A7 PMUv2 checks, as on `virt -cpu cortex-a7`.
fn check_cortex_a7(run: &QemuRun) {
    let out = &run.stdout;
    assert!(!out.contains("FATAL"), "{out}");
    let probe = &run.scenario("probe")[0];
    assert_eq!(probe.int("midr"), 0x410f_c075, "{}", probe.raw);
    // Part 0xC07: the Cortex-A7's table in pmu-events names what the scenarios count
    // (INST_RETIRED 0x08 and CPU_CYCLES 0x11, ARMv7 ARM C12.8), with its meanings.
    let events = &run.scenario("events")[0];
    assert_eq!(
        (
            events.get("core"),
            events.get("table"),
            events.get("instructions"),
            events.int("instructions_code"),
            events.get("cycles"),
            events.int("cycles_code")
        ),
        (
            "Cortex-A7",
            "core",
            "INST_RETIRED",
            0x08,
            "CPU_CYCLES",
            0x11
        ),
        "{}",
        events.raw
    );
    let inst = pmu_events::CORTEX_A7
        .event("INST_RETIRED")
        .expect("the Cortex-A7 counts INST_RETIRED");
    let line = format!("  instructions: 0x08 INST_RETIRED: {}", inst.about);
    assert!(
        out.lines().any(|l| l.trim_end_matches('\r') == line),
        "`{line}` missing\n{out}"
    );
    assert_eq!(probe.int("perfmon"), 2, "{}", probe.raw);
    assert_eq!(probe.int("counters"), 4, "{}", probe.raw);
    assert_eq!(
        (probe.int("event_width"), probe.int("cycle_width")),
        (32, 32),
        "{}",
        probe.raw
    );
    for k in [1, 10, 100, 1000, 10000] {
        let r = run.find("exact", "k", &k.to_string());
        for key in ["inst", "inst_median", "cycles", "cycles_median"] {
            assert_eq!(r.int(key), k, "{key} for K={k}: {}", r.raw);
        }
        assert_eq!(r.get("clean"), "11/11", "{}", r.raw);
        assert_eq!(r.get("hazards"), "none", "{}", r.raw);
    }
    let o = &run.scenario("overflow")[0];
    assert_eq!(o.get("hazards"), "overflow", "{}", o.raw);
    assert_eq!(o.int("corrected"), 100, "{}", o.raw);
    assert_eq!(o.get("next_run_hazards"), "none", "{}", o.raw);
    for k in [1, 100, 10000] {
        let r = run.find("readers", "k", &k.to_string());
        assert_eq!(r.get("path"), "Selected(0)", "{}", r.raw);
        for key in [
            "handle_inst",
            "handle_cycles",
            "driver_inst",
            "driver_cycles",
        ] {
            assert_eq!(r.int(key), k, "{}", r.raw);
        }
    }
    let f = &run.scenario("filter")[0];
    assert_eq!(
        (
            f.int("pl1_block_kernel"),
            f.int("pl1_block_user"),
            f.int("pl0_block_kernel"),
            f.int("pl0_block_user")
        ),
        (1000, 0, 0, 1000),
        "{}",
        f.raw
    );
    // PMUv2 keeps EN alone (CR|ER reads back 0, grants nothing); EN opens every access
    // but PMINTENSET (DDI 0406C C12 PMUSERENR).
    let access = run.scenario("pl0_access");
    assert_eq!(access.len(), 18, "{out}");
    for r in &access {
        assert_eq!(r.int("pass"), 1, "{}", r.raw);
        let kept = if r.get("pmuserenr") == "EN" { 1 } else { 0 };
        assert_eq!(r.int("kept"), kept, "{}", r.raw);
    }
    assert_eq!(run.find("summary", "fail", "0").int("pass"), 30, "{out}");
    assert_eq!(run.code, Some(0), "{out}");
}

/// The Pi 2 model: QEMU starts the raw kernel7.img at 0x1_0000 in SVC mode (its
/// raspi2b boot is a Secure one: hw/arm/raspi.c); the other three cores were released
/// from their mailboxes into `wfi`; every check passes, exactly.
#[test]
fn raspi2b_kernel7_img() {
    let run = raspi2b(&[]);
    let b = &run.scenario("boot")[0];
    assert_eq!(b.get("board"), "raspi2b", "{}", b.raw);
    assert_eq!(
        (b.get("entry_mode"), b.get("mode")),
        ("svc", "svc"),
        "{}",
        b.raw
    );
    assert_eq!(b.get("secondaries"), "mailbox-to-wfi", "{}", b.raw);
    check_cortex_a7(&run);
}

/// HYP -> SVC: the armv7-virt image (same `_start`, pmu-scenarios-armv7) on a virt
/// machine with the Virtualization Extensions enters in HYP mode, hands over to SVC and
/// passes every check: what the Pi 2's firmware does to kernel7.img.
#[test]
fn hyp_entry_hands_over_to_svc() {
    let mut args = aarch64_virt_args(&image("PMU_IMAGE_ARMV7_VIRT"), "cortex-a7");
    let at = args.iter().position(|a| a == "virt").expect("-M virt");
    args[at] = "virt,virtualization=on".into();
    let run = boot(args);
    let b = &run.scenario("boot")[0];
    assert_eq!(
        (b.get("entry_mode"), b.get("mode")),
        ("hyp", "svc"),
        "{}",
        b.raw
    );
    check_cortex_a7(&run);
}

/// Without semihosting (a real board) the image prints the same lines, says it halted
/// and waits: its SVC vector answers the semihosting calls.
#[test]
fn raspi2b_without_semihosting_prints_and_halts() {
    let mut args = raspi_image_args("raspi2b", &image("PMU_IMAGE_RASPI2B"));
    let at = args
        .iter()
        .position(|a| a == "-semihosting-config")
        .expect("the board's command line has semihosting");
    args.drain(at..at + 2);
    let run = run_qemu_until(QEMU_ARM, &args, LIMIT, "halted (power the board off)");
    assert!(!run.timed_out, "{}", run.stdout);
    assert!(!run.stdout.contains("FATAL"), "{}", run.stdout);
    assert_eq!(run.find("summary", "fail", "0").int("pass"), 30);
}

/// An UNDEFINED instruction at PL1 after the boot is FATAL with exit status 3.
#[test]
fn raspi2b_failures_are_reported() {
    let undef = raspi2b(&["-append", "selftest=undef"]);
    assert_eq!(undef.code, Some(3), "{}", undef.stdout);
    assert!(undef.stdout.contains("FATAL exception"), "{}", undef.stdout);
}
