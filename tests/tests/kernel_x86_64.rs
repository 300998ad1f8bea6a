//! Kernel end-to-end runs on x86_64: the test kernel (Debian's linux-source-6.12, built
//! by `cargo xtask kernel x86_64`) with kmod-enable-user, `pce-probe` and `pmu-demo` in
//! its initramfs, booted in `qemu-system-x86_64` under TCG. TCG has no PMU, so there is
//! no x86 perf PMU driver and no `rdpmc` policy file: the module takes the CR4.PCE path,
//! which only the process that loaded it can observe (Linux re-derives CR4.PCE at every
//! switch to another process). `pce-probe` is that process: rdpmc from ring 3 gives #GP
//! (SIGSEGV, shell status 139) with CR4.PCE clear and #UD (SIGILL, 132) with it set.
//!
//! Run with `cargo xtask e2e x86_64` (or `cargo xtask test`).

use std::time::Duration;

use pmu_tests::{kernel_artefact, kernel_env, run_qemu, x86_64_kernel_args, QemuRun, QEMU_X86_64};

const LIMIT: Duration = Duration::from_secs(300);

/// Shell exit statuses of a process killed by a signal: 128 + signal number.
const SIGILL_STATUS: i128 = 128 + 4;
const SIGSEGV_STATUS: i128 = 128 + 11;

fn boot(smp: u32, scenario: &str) -> QemuRun {
    let kernel = kernel_artefact(kernel_env::X86_64_KERNEL);
    let initramfs = kernel_artefact(kernel_env::X86_64_INITRAMFS);
    let args = x86_64_kernel_args(&kernel, &initramfs, smp, scenario);
    let run = run_qemu(QEMU_X86_64, &args, LIMIT);
    assert!(!run.timed_out, "QEMU ran past {LIMIT:?}\n{}", run.stdout);
    run.assert_guest_finished();
    run
}

/// CR4.PCE proven inside one process; the "no perf rdpmc policy here" path reported;
/// every CPU restored on unload; the policy-file path on a stand-in file.
#[test]
fn cr4_pce_without_perf_rdpmc_policy() {
    let run = boot(2, "pce");
    let boot_line = &run.scenario("boot")[0];
    assert_eq!(boot_line.int("cpus"), 2, "{}", boot_line.raw);
    let policy = &run.scenario("policy")[0];
    assert_eq!(policy.get("file"), "absent", "{}", policy.raw);

    let probe = |mode: &str| run.find("pce_probe", "mode", mode).int("status");
    assert_eq!(
        probe("no-module"),
        SIGSEGV_STATUS,
        "#GP before\n{}",
        run.stdout
    );
    assert_eq!(
        probe("same-process"),
        SIGILL_STATUS,
        "#UD in the process that loaded the module\n{}",
        run.stdout
    );
    assert_eq!(
        run.find("pce_probe", "mode", "same-process").int("loaded"),
        1
    );
    assert_eq!(
        probe("next-process"),
        SIGSEGV_STATUS,
        "the kernel cleared CR4.PCE at the switch to the next process\n{}",
        run.stdout
    );
    assert_eq!(probe("unloaded"), SIGSEGV_STATUS, "{}", run.stdout);

    run.assert_klog("kmod_enable_user: no perf rdpmc policy here");
    run.assert_klog("which the kernel clears again at each CPU's next switch to another process");
    for c in 0..2 {
        run.assert_klog(&format!("kmod_enable_user: cpu{c}: CR4.PCE 0 -> 1"));
        // At unload each CPU is put back to clear; on a CPU that has run another
        // process since, the kernel had already cleared it, and the line says so.
        let restored = [
            format!("kmod_enable_user: cpu{c}: CR4.PCE 1 -> 0 restored"),
            format!(
                "kmod_enable_user: cpu{c}: CR4.PCE 0 -> 0 restored (the kernel had already cleared it)"
            ),
        ];
        assert!(
            restored.iter().any(|line| !run.klog(line).is_empty()),
            "no restore line for cpu{c}\n{}",
            run.stdout
        );
    }
    run.assert_klog("kmod_enable_user: loaded: CR4.PCE set on every online CPU");
    run.assert_klog("kmod_enable_user: unloaded: every online CPU's previous CR4.PCE restored");
    let unload = run.find("rmmod", "tag", "pce");
    assert_eq!(
        (unload.int("rc"), unload.int("loaded"), unload.int("states")),
        (0, 0, 0),
        "{}",
        unload.raw
    );

    // The policy path, on a stand-in file (rdpmc_policy=): 1 -> 2 -> 1.
    let load = run.find("insmod", "tag", "policy");
    assert_eq!(load.int("rc"), 0, "{}", load.raw);
    assert_eq!(run.find("policy_file", "when", "loaded").int("value"), 2);
    assert_eq!(run.find("policy_file", "when", "unloaded").int("value"), 1);
    run.assert_klog("kmod_enable_user: loaded: perf rdpmc policy \"/tmp/rdpmc\" 1 -> 2 (always)");
    run.assert_klog("kmod_enable_user: unloaded: perf rdpmc policy \"/tmp/rdpmc\" 2 -> 1 restored");

    let log = &run.scenario("kernel_log")[0];
    assert_eq!(log.int("trouble"), 0, "{}\n{}", log.raw, run.stdout);
}

/// 50 load/unload cycles on 4 CPUs and loading twice.
#[test]
fn load_unload_stress_on_four_cpus() {
    let run = boot(4, "stress");
    let boot_line = &run.scenario("boot")[0];
    assert_eq!(boot_line.int("cpus"), 4, "{}", boot_line.raw);
    // 50 cycles without a failure, nothing left loaded, no leak of the module.
    run.assert_stress_cycles(50);

    let second = run.find("insmod", "tag", "twice-second");
    assert_eq!(second.get("error"), "File_exists", "{}", second.raw);
    let unload = run.find("rmmod", "tag", "twice");
    assert_eq!(
        (unload.int("rc"), unload.int("states")),
        (0, 0),
        "{}",
        unload.raw
    );
    let log = &run.scenario("kernel_log")[0];
    assert_eq!(log.int("trouble"), 0, "{}\n{}", log.raw, run.stdout);
}
