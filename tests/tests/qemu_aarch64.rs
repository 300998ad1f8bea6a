//! Boots the aarch64 image on three CPU models under QEMU icount and checks every
//! RESULT line. Expected values come from docs/qemu.md (what QEMU 10
//! emulates, measured) and the Arm ARM (PMUSERENR_EL0 access rules).

use std::time::Duration;

use pmu_tests::{aarch64_virt_args, image, run_qemu, QemuRun, AARCH64_SUCCESS, QEMU_AARCH64};

const LIMIT: Duration = Duration::from_secs(120);

fn boot(cpu: &str, extra: &[&str]) -> QemuRun {
    let mut args = aarch64_virt_args(&image("PMU_IMAGE_AARCH64_VIRT"), cpu);
    args.extend(extra.iter().map(|s| s.to_string()));
    let run = run_qemu(QEMU_AARCH64, &args, LIMIT);
    assert!(
        !run.timed_out,
        "QEMU ({cpu}) ran past {LIMIT:?}\n{}",
        run.stdout
    );
    run
}

/// Every check of one model: exact counts, overflow, interrupt, filters, EL0 access.
/// `core` is the pmu-events table its MIDR picks ("none" for `max`, whose MIDR
/// 0x000f0510, implementer 0, names no Arm part; measured on QEMU 10).
fn check_model(cpu: &str, core: &str, version: &str, raw_end_above_32_bits: bool) {
    let run = boot(cpu, &[]);
    let out = &run.stdout;
    assert_eq!(
        run.code,
        Some(AARCH64_SUCCESS),
        "{cpu}: image reported failure\n{out}"
    );
    let summary = run.find("summary", "fail", "0");
    assert_eq!(summary.int("pass"), 32, "{cpu}: number of checks\n{out}");
    assert!(!out.contains("FATAL"), "{cpu}\n{out}");

    // docs/qemu.md: PMUVer 6 (PMUv3p5) on max, 1 (PMUv3) on a72/a53; N=6 on all.
    let probe = &run.scenario("probe")[0];
    assert_eq!(probe.get("version"), version, "{cpu}: {}", probe.raw);
    // The image names events from the table pmu_events::for_midr picks: the Cortex-A53's
    // (part 0xD03) and Cortex-A72's (0xD08) by their TRMs, `max` by the common names.
    assert_eq!(probe.get("core"), core, "{cpu}: {}", probe.raw);
    assert!(out.contains("    0x0008 INST_RETIRED\n"), "{cpu}\n{out}");
    assert!(
        out.contains("exact and overflow count INST_RETIRED on an event counter and CPU_CYCLES on PMCCNTR_EL0"),
        "{cpu}\n{out}"
    );
    assert_eq!(probe.int("counters"), 6, "{cpu}: {}", probe.raw);
    assert_eq!(probe.int("event_width"), 32, "{cpu}: {}", probe.raw);
    assert_eq!(probe.int("cycle_width"), 64, "{cpu}: {}", probe.raw);

    // docs/qemu.md: PMSVer=0 everywhere; the probe must not touch SPE registers (an
    // access would be UNDEFINED and end in a FATAL exception, checked above).
    assert_eq!(run.scenario("spe")[0].get("present"), "0");
    assert!(out.contains("SPE not implemented (PMSVer=0)"), "{out}");
    // The SPE programming sequence probes first: the memory-latency filter ends in
    // "not implemented" without an SPE register access.
    assert_eq!(
        run.scenario("spe_config")[0].get("outcome"),
        "not-implemented",
        "{cpu}"
    );

    // Under -icount shift=0 INST_RETIRED and PMCCNTR are exact (docs/qemu.md): a block of
    // K instructions must measure K, min and median, every run clean.
    for k in [1, 10, 100, 1000, 10000] {
        let r = run.find("exact", "k", &k.to_string());
        for key in ["inst", "inst_median", "cycles", "cycles_median"] {
            assert_eq!(r.int(key), k, "{cpu}: {key} for K={k}: {}", r.raw);
        }
        assert_eq!(r.get("clean"), "11/11", "{cpu}: {}", r.raw);
        assert_eq!(r.get("hazards"), "none", "{cpu}: {}", r.raw);
        assert_eq!(r.get("cycle_slot"), "PMCCNTR_EL0", "{cpu}: {}", r.raw);
    }

    // Overflow: flagged, value corrected to the 100 instructions of the block, the next run
    // clean. PMUv3p5 with LP=0 reads the wrapped counter with bit 32 set (0x1_0000_00xx),
    // PMUv3 as 0x00xx (docs/qemu.md): the driver must mask to 32 bits either way.
    let o = &run.scenario("overflow")[0];
    assert_eq!(o.int("width"), 32, "{}", o.raw);
    assert_eq!(o.get("hazards"), "overflow", "{cpu}: {}", o.raw);
    assert_eq!(o.int("corrected"), 100, "{cpu}: {}", o.raw);
    assert_eq!(o.get("next_run_hazards"), "none", "{cpu}: {}", o.raw);
    assert_eq!(
        o.int("raw_end") >= 1 << 32,
        raw_end_above_32_bits,
        "{cpu}: {}",
        o.raw
    );

    // Overflow is a hazard in the overflow scenario and nowhere else.
    for r in &run.results {
        if r.scenario != "overflow" {
            if let Some(h) = r.fields.get("hazards") {
                assert!(
                    !h.contains("overflow"),
                    "{cpu}: overflow outside its scenario: {}",
                    r.raw
                );
            }
        }
    }

    // The cycle counter's overflow interrupt (PPI 23) arrives exactly once under icount
    // (docs/qemu.md), and the handler clears the flag.
    let irq = &run.scenario("irq")[0];
    assert_eq!(irq.int("interrupts"), 1, "{cpu}: {}", irq.raw);
    assert_eq!(irq.int("flag_after"), 0, "{cpu}: {}", irq.raw);

    // Privilege filters: the EL0-only counter sees the 100 EL0 instructions, the EL1-only
    // counter none of them.
    assert_eq!(run.find("filter", "mode", "el0-only").int("delta"), 100);
    assert_eq!(run.find("filter", "mode", "el1-only").int("delta"), 0);
    for mode in ["el0-only", "el1-only"] {
        assert_eq!(
            run.find("filter", "mode", mode).get("event"),
            "INST_RETIRED"
        );
    }

    // PMUSERENR_EL0 (Arm ARM field descriptions; docs/qemu.md): EN allows everything, CR
    // the cycle counter read, ER event counter reads, SW PMSWINC writes; otherwise the
    // access traps with EC 0x18.
    let table: [(&str, [bool; 4]); 5] = [
        ("none", [false, false, false, false]),
        ("EN", [true, true, true, true]),
        ("SW", [false, false, true, false]),
        ("CR", [true, false, false, false]),
        ("ER", [false, true, false, false]),
    ];
    let accesses = ["PMCCNTR_EL0", "PMEVCNTR0_EL0", "PMSWINC_EL0", "PMCR_EL0"];
    let lines = run.scenario("el0_access");
    assert_eq!(lines.len(), 20, "{cpu}\n{out}");
    for (setting, allowed) in table {
        for (access, ok) in accesses.iter().zip(allowed) {
            let r = lines
                .iter()
                .find(|r| r.get("pmuserenr") == setting && r.get("access") == *access)
                .unwrap_or_else(|| panic!("{cpu}: no line for {setting}/{access}\n{out}"));
            if ok {
                assert_eq!(r.get("outcome"), "ok", "{cpu}: {}", r.raw);
            } else {
                assert_eq!(
                    (r.get("outcome"), r.get("ec")),
                    ("trap", "0x18"),
                    "{cpu}: {}",
                    r.raw
                );
            }
        }
    }
}

#[test]
fn cpu_max_pmuv3p5() {
    check_model("max", "none", "PmuV3p5", true);
}

#[test]
fn cortex_a72_pmuv3() {
    check_model("cortex-a72", "Cortex-A72", "PmuV3", false);
}

#[test]
fn cortex_a53_pmuv3() {
    check_model("cortex-a53", "Cortex-A53", "PmuV3", false);
}

/// QEMU icount is deterministic: two boots print the same bytes.
#[test]
fn output_is_identical_across_runs() {
    let a = boot("max", &[]);
    let b = boot("max", &[]);
    assert_eq!(a.code, Some(AARCH64_SUCCESS));
    assert_eq!(a.stdout, b.stdout);
}

/// A failing check, a panic and an unexpected exception are each visible in the output
/// and the exit status (1: `finish` in qemu/scenarios-common/src/lib.rs; 2: the panic
/// handler in qemu/armv8-scenarios/src/lib.rs; 3: its exceptions.rs).
#[test]
fn failures_are_reported() {
    let fail = boot("max", &["-append", "selftest=fail"]);
    assert_eq!(fail.code, Some(1), "{}", fail.stdout);
    assert_eq!(fail.find("summary", "fail", "1").int("pass"), 0);
    let panic = boot("max", &["-append", "selftest=panic"]);
    assert_eq!(panic.code, Some(2), "{}", panic.stdout);
    assert!(
        panic.stdout.contains("FATAL panic: panicked at"),
        "{}",
        panic.stdout
    );
    let undef = boot("max", &["-append", "selftest=undef"]);
    assert_eq!(undef.code, Some(3), "{}", undef.stdout);
    assert!(
        undef.stdout.contains("FATAL unexpected exception"),
        "{}",
        undef.stdout
    );
    assert!(undef.stdout.contains("EC=0x0"), "{}", undef.stdout);
}
