//! Kernel end-to-end runs on x86_64: the test kernel (Debian's linux-source-6.12, built
//! by `cargo xtask kernel x86_64`) with kmod-enable-user, `pce-probe` and `pmu-demo` in
//! its initramfs, booted in `qemu-system-x86_64` under TCG. TCG has no PMU, so there is
//! no x86 perf PMU driver and no `rdpmc` policy file: the module refuses to load unless
//! asked for CR4.PCE by name (`cr4_pce_until_switch=1`), a bit that only the process that
//! loaded it can observe (Linux re-derives CR4.PCE at every switch to another process).
//! `pce-probe` is that process: rdpmc from ring 3 gives #GP (SIGSEGV, shell status 139)
//! with CR4.PCE clear and #UD (SIGILL, 132) with it set. The policy route itself (writing
//! 2 to perf's file) needs an x86 PMU driver and is not reachable here; what is tested is
//! that `rdpmc_policy=` refuses every file but perf's.
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
    run.assert_finished_within(LIMIT);
    run.assert_guest_finished();
    run
}

/// What the guest's insmod (Debian's busybox-static) reports for a refused load: the errno
/// as its exit status and strerror's text, as `load` in tests/guest/common.sh records them
/// (spaces as `_`). Numbers from include/uapi/asm-generic/errno-base.h. A kernel-internal
/// errno such as ENOTSUPP (524, include/linux/errno.h) would read `Unknown_error_524`.
const ENODEV: (i128, &str) = (19, "No_such_device");
const EINVAL: (i128, &str) = (22, "Invalid_argument");

/// Without perf's rdpmc policy the module refuses to load (ENODEV, with the reason and the
/// opt-in in the log); `cr4_pce_until_switch=1` sets CR4.PCE, proven inside one process
/// (#UD instead of #GP) and gone in the next one, as its log line says; every CPU restored
/// on unload.
#[test]
fn no_policy_refuses_and_cr4_pce_is_an_opt_in() {
    let run = boot(2, "pce");
    let boot_line = &run.scenario("boot")[0];
    assert_eq!(boot_line.int("cpus"), 2, "{}", boot_line.raw);
    let policy = &run.scenario("policy")[0];
    assert_eq!(policy.get("file"), "absent", "{}", policy.raw);

    let default = run.find("insmod", "tag", "default");
    assert_eq!(
        (
            default.int("rc"),
            default.get("error"),
            default.int("loaded")
        ),
        (ENODEV.0, ENODEV.1, 0),
        "{}",
        default.raw
    );
    run.assert_klog("kmod_enable_user: no perf rdpmc policy here (\"/sys/bus/event_source/devices/cpu/rdpmc\" absent: no x86 PMU driver");
    run.assert_klog("refusing to load (-ENODEV)");
    run.assert_klog("kmod_enable_user: cr4_pce_until_switch=1 would set CR4.PCE on every CPU instead; the kernel clears it at each CPU's next switch to another process");

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

    // The log says how long the bit lasts (this kernel has CONFIG_PERF_EVENTS=y,
    // xtask/kernel/x86_64.config: arch/x86/mm/tlb.c clears it at the next mm switch).
    run.assert_klog("kmod_enable_user: cr4_pce_until_switch=1: setting CR4.PCE on every CPU; it lasts only until each CPU's next switch to another process");
    for c in 0..2 {
        run.assert_klog(&format!(
            "kmod_enable_user: cpu{c}: CR4.PCE 0 -> 1 (rdpmc allowed at CPL 3 until this CPU switches to another process)"
        ));
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
    run.assert_klog(
        "kmod_enable_user: loaded: CR4.PCE set on every online CPU (mode cr4_pce_until_switch)",
    );
    run.assert_klog("kmod_enable_user: unloaded: every online CPU's previous CR4.PCE restored");
    let unload = run.find("rmmod", "tag", "pce");
    assert_eq!(
        (unload.int("rc"), unload.int("loaded"), unload.int("states")),
        (0, 0, 0),
        "{}",
        unload.raw
    );

    let log = &run.scenario("kernel_log")[0];
    assert_eq!(log.int("trouble"), 0, "{}\n{}", log.raw, run.stdout);
}

/// `rdpmc_policy=` writes nothing but perf's policy file: every path outside
/// `/sys/bus/event_source/devices/<pmu>/rdpmc` is refused with EINVAL and a reason (the
/// files stay as they were), a PMU without the file with ENODEV, and a file of the right
/// name on another file system (a tmpfs mounted over the directory) with EINVAL.
#[test]
fn rdpmc_policy_only_names_perfs_sysfs_file() {
    let run = boot(1, "policy_path");
    // Each load is followed by its kernel log (tests/guest/x86_64.sh); busybox's insmod
    // retries a failed finit_module(2) with init_module(2), so each refusal is logged
    // once per attempt: at least once is asserted.
    let refused = |tag: &str, (errno, message): (i128, &str), why: &str| {
        let load = run.find("insmod", "tag", tag);
        assert_eq!(
            (load.int("rc"), load.get("error"), load.int("loaded")),
            (errno, message, 0),
            "{}\n{}",
            load.raw,
            run.stdout
        );
        let own_log: Vec<&str> = run
            .stdout
            .lines()
            .map(|l| l.trim_end_matches('\r'))
            .skip_while(|l| *l != load.raw)
            .skip(1)
            .take_while(|l| !l.starts_with("RESULT "))
            .filter_map(|l| l.strip_prefix("KLOG kmod_enable_user: "))
            // The kernel's own line at the first load (kernel/module/main.c).
            .filter(|l| *l != "loading out-of-tree module taints kernel.")
            .collect();
        assert!(
            !own_log.is_empty() && own_log.iter().all(|l| l.contains(why)),
            "{tag}: expected `{why}` in {own_log:#?}\n{}",
            run.stdout
        );
    };

    refused(
        "passwd",
        EINVAL,
        "rdpmc_policy=\"/etc/passwd\" refused: not under /sys/bus/event_source/devices/; only perf's rdpmc policy file /sys/bus/event_source/devices/<pmu>/rdpmc is written",
    );
    refused(
        "stand-in",
        EINVAL,
        "rdpmc_policy=\"/tmp/rdpmc\" refused: not under /sys/bus/event_source/devices/",
    );
    refused(
        "traversal",
        EINVAL,
        "rdpmc_policy=\"/sys/bus/event_source/devices/cpu/../../../../../tmp/rdpmc\" refused: the PMU name must be one path component",
    );
    refused(
        "dotdot",
        EINVAL,
        "rdpmc_policy=\"/sys/bus/event_source/devices/../rdpmc\" refused: the PMU name must be one path component, not empty, '.' or '..'",
    );
    refused(
        "empty-pmu",
        EINVAL,
        "rdpmc_policy=\"/sys/bus/event_source/devices//rdpmc\" refused: the PMU name must be one path component",
    );
    refused(
        "not-rdpmc",
        EINVAL,
        "rdpmc_policy=\"/sys/bus/event_source/devices/software/type\" refused: not a PMU's rdpmc file",
    );
    refused(
        "no-file",
        ENODEV,
        "\"/sys/bus/event_source/devices/software/rdpmc\" does not exist: no such PMU, or one without an rdpmc policy",
    );
    refused(
        "both",
        EINVAL,
        "rdpmc_policy= and cr4_pce_until_switch=1 exclude each other",
    );

    // Right path, wrong file system: by default, given, and with the CR4 opt-in (which
    // never takes over while a policy file is there). SYSFS_MAGIC is 0x62656572
    // (include/uapi/linux/magic.h); the tmpfs's own magic (TMPFS_MAGIC, or RAMFS_MAGIC
    // in a kernel without CONFIG_SHMEM) is not asserted.
    for tag in ["fake-default", "fake-given", "fake-cr4"] {
        refused(
            tag,
            EINVAL,
            "\"/sys/bus/event_source/devices/cpu/rdpmc\" refused: not a sysfs file (file system magic 0x",
        );
    }
    run.assert_klog(", sysfs is 0x62656572), so not perf's rdpmc policy of PMU 'cpu'");
    assert_eq!(run.find("policy_file", "when", "fake").int("value"), 1);

    let files = &run.scenario("files")[0];
    assert_eq!(
        (
            files.int("passwd_same"),
            files.int("stand_in_same"),
            files.int("stand_in"),
            files.int("loaded")
        ),
        (1, 1, 1, 0),
        "{}",
        files.raw
    );
    assert!(
        run.klog("loaded:").is_empty(),
        "nothing may load\n{}",
        run.stdout
    );
    let log = &run.scenario("kernel_log")[0];
    assert_eq!(log.int("trouble"), 0, "{}\n{}", log.raw, run.stdout);
}

/// 50 load/unload cycles on 4 CPUs and loading twice (with the CR4.PCE opt-in: without a
/// policy file that is the only way the module loads here).
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
