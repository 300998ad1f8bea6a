//! Boots the bare-metal Raspberry Pi Zero / 1 image (`kernel.img`, qemu/raspi0) on QEMU
//! 10's `raspi0` and `raspi1ap` (BCM2835, ARM1176JZF-S) and checks what it says of the
//! ARM1176 PMU there. QEMU's ARM1176 implements CP15 c15 as a dummy that reads 0 and
//! ignores writes at PL1 (docs/qemu.md "ARMv6", measured): the probe must say
//! `c15=dummy` with every read-back 0, and the counting scenarios must print no count,
//! only `status=c15-dummy all_zero=1 counted=0`. MIDR part 0xB76 is the ARM1176
//! (ARM1176JZF-S TRM 3.2.2).

use std::time::Duration;

use pmu_tests::{image, raspi_image_args, run_qemu, run_qemu_until, QemuRun, QEMU_ARM};

const LIMIT: Duration = Duration::from_secs(120);

fn boot(machine: &str, extra: &[&str]) -> QemuRun {
    let mut args = raspi_image_args(machine, &image("PMU_IMAGE_RASPI0"));
    args.extend(extra.iter().map(|s| s.to_string()));
    let run = run_qemu(QEMU_ARM, &args, LIMIT);
    assert!(
        !run.timed_out,
        "QEMU ({machine}) ran past {LIMIT:?}\n{}",
        run.stdout
    );
    run
}

fn check_dummy_c15(machine: &str) {
    let run = boot(machine, &[]);
    let out = &run.stdout;
    assert!(!out.contains("FATAL"), "{machine}\n{out}");
    let b = &run.scenario("boot")[0];
    assert_eq!(b.get("entry_mode"), "svc", "{}", b.raw);
    let p = &run.scenario("probe")[0];
    assert_eq!(p.int("part"), 0xb76, "{machine}: {}", p.raw);
    assert_eq!(p.get("c15"), "dummy", "{machine}: {}", p.raw);
    for key in ["pmcr", "ccr", "cr0", "cr1", "read_pmcr", "read_cr0"] {
        assert_eq!(p.int(key), 0, "{machine}: {key}: {}", p.raw);
    }
    assert_eq!(p.int("wrote_cr0"), 0x1234_5678, "{}", p.raw);
    assert_eq!(p.int("pass"), 1, "{}", p.raw);
    // The Main ID Register picks the ARM1176's table in pmu-events, which names what CR0
    // and the CCR count: 0x07 INSTR_EXEC and 0xFF CPU_CYCLES (ARM1176JZF-S TRM Table
    // 3-137; the names of Linux 6.12's enum armv6_perf_types), with its meanings. Names
    // need no counting: QEMU's dummy c15 prints them too.
    let e = &run.scenario("events")[0];
    assert_eq!(
        (
            e.get("core"),
            e.get("instructions"),
            e.int("instructions_code"),
            e.get("cycles"),
            e.int("cycles_code")
        ),
        ("ARM1176JZF-S", "INSTR_EXEC", 0x07, "CPU_CYCLES", 0xff),
        "{machine}: {}",
        e.raw
    );
    let line = format!(
        "  instructions (CR0): 0x07 INSTR_EXEC: {}",
        pmu_events::arm1176::INSTR_EXEC.about
    );
    assert!(
        out.lines().any(|l| l.trim_end_matches('\r') == line),
        "{machine}: `{line}` missing\n{out}"
    );
    // Five exact blocks and the overflow run went through the driver and the harness
    // without a fault, and every reading was 0: no count is printed.
    let counting: Vec<_> = run
        .results
        .iter()
        .filter(|r| r.scenario == "exact" || r.scenario == "overflow")
        .collect();
    assert_eq!(counting.len(), 6, "{out}");
    for r in counting {
        assert_eq!(
            (r.get("status"), r.int("all_zero"), r.int("counted")),
            ("c15-dummy", 1, 0),
            "{}",
            r.raw
        );
        assert!(
            !r.fields.contains_key("inst"),
            "a count was printed: {}",
            r.raw
        );
    }
    let s = run.find("summary", "fail", "0");
    assert_eq!((s.int("pass"), s.int("not_counted")), (1, 6), "{}", s.raw);
    assert_eq!(run.code, Some(0), "{out}");
}

/// Raspberry Pi Zero (QEMU `raspi0`).
#[test]
fn raspi0_kernel_img_sees_the_c15_dummy() {
    check_dummy_c15("raspi0");
}

/// Raspberry Pi 1 Model A+ (QEMU `raspi1ap`): the same SoC and image.
#[test]
fn raspi1ap_kernel_img_sees_the_c15_dummy() {
    check_dummy_c15("raspi1ap");
}

/// An UNDEFINED instruction is FATAL with exit status 3; without semihosting (a real
/// board) the image still prints its summary and halts.
#[test]
fn raspi0_failures_and_no_semihosting() {
    let undef = boot("raspi0", &["-append", "selftest=undef"]);
    assert_eq!(undef.code, Some(3), "{}", undef.stdout);
    assert!(
        undef
            .stdout
            .contains("FATAL exception: undefined instruction"),
        "{}",
        undef.stdout
    );
    let mut args = raspi_image_args("raspi0", &image("PMU_IMAGE_RASPI0"));
    let at = args
        .iter()
        .position(|a| a == "-semihosting-config")
        .expect("the board's command line has semihosting");
    args.drain(at..at + 2);
    let run = run_qemu_until(QEMU_ARM, &args, LIMIT, "halted (power the board off)");
    assert!(!run.timed_out, "{}", run.stdout);
    assert_eq!(run.find("summary", "fail", "0").int("not_counted"), 6);
}
