//! Boots the x86_64 image under QEMU TCG and checks its RESULT lines. Expected values
//! come from docs/qemu.md: TCG has no PMU (CPUID leaf 0xA all zero); rdpmc
//! from ring 3 raises #GP with CR4.PCE=0 and #UD with CR4.PCE=1; RDTSC is exact under
//! icount.

use std::time::Duration;

use pmu_tests::{image, run_qemu, x86_64_args, QemuRun, QEMU_X86_64, X86_64_SUCCESS};

const LIMIT: Duration = Duration::from_secs(120);

fn boot(extra: &[&str]) -> QemuRun {
    let mut args = x86_64_args(&image("PMU_IMAGE_X86_64"));
    args.extend(extra.iter().map(|s| s.to_string()));
    let run = run_qemu(QEMU_X86_64, &args, LIMIT);
    run.assert_finished_within(LIMIT);
    run
}

#[test]
fn tcg_reports_no_pmu_and_exact_tsc() {
    let run = boot(&[]);
    let out = &run.stdout;
    assert_eq!(
        run.code,
        Some(X86_64_SUCCESS),
        "image reported failure\n{out}"
    );
    let summary = &run.scenario("summary")[0];
    assert_eq!(summary.int("fail"), 0, "{out}");
    assert_eq!(summary.int("skipped"), 1, "{out}");

    // No architectural PMU under TCG, said honestly.
    let cpuid = &run.scenario("cpuid")[0];
    assert_eq!(cpuid.get("pmu"), "absent", "{}", cpuid.raw);
    assert_eq!(cpuid.int("version"), 0, "{}", cpuid.raw);
    assert_eq!(cpuid.int("leaf0a_eax"), 0, "{}", cpuid.raw);

    // RDTSC through the harness, calibrated: exactly K under icount.
    for k in [1, 10, 100, 1000, 10000] {
        let r = run.find("tsc", "k", &k.to_string());
        assert_eq!(r.get("status"), "pass", "{}", r.raw);
        assert_eq!((r.int("min"), r.int("median")), (k, k), "{}", r.raw);
        assert_eq!(r.get("hazards"), "none", "{}", r.raw);
    }

    // CR4.PCE from ring 3: #GP (13) when clear, #UD (6) when set (the check passed, TCG
    // has no counter).
    let pce0 = run.find("rdpmc_ring3", "pce", "0");
    assert_eq!(
        (pce0.get("outcome"), pce0.int("vector")),
        ("fault", 13),
        "{}",
        pce0.raw
    );
    let pce1 = run.find("rdpmc_ring3", "pce", "1");
    assert_eq!(
        (pce1.get("outcome"), pce1.int("vector")),
        ("fault", 6),
        "{}",
        pce1.raw
    );

    // No PERFEVTSEL0 to program: skipped, with the reason.
    let sel = &run.scenario("perfevtsel")[0];
    assert_eq!(sel.get("status"), "skipped", "{}", sel.raw);
    assert_eq!(sel.get("reason"), "no-architectural-pmu", "{}", sel.raw);
}

/// A failed scenario, a panic and an unexpected exception each give their own exit
/// status (qemu/x86_64/src/exit.rs: 35, 37, 37) and say why.
#[test]
fn failures_are_reported() {
    let fail = boot(&["-append", "selftest=fail"]);
    assert_eq!(fail.code, Some(35), "{}", fail.stdout);
    for (what, needle) in [("panic", "panic"), ("ud", "#UD"), ("pagefault", "#PF")] {
        let run = boot(&["-append", &format!("selftest={what}")]);
        assert_eq!(run.code, Some(37), "selftest={what}\n{}", run.stdout);
        assert!(
            run.stdout.contains(needle),
            "selftest={what}: no `{needle}`\n{}",
            run.stdout
        );
    }
}
