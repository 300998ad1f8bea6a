//! Debian's own armhf kernels: Debian 12's `linux-image-armmp` and
//! `linux-image-armmp-lpae` (6.1, the second with LPAE page tables, as on
//! Cortex-A7/A15/A17 machines) and Debian 13's `linux-image-armmp` (6.12), under `qemu-system-arm -M virt -cpu cortex-a15 -smp 2
//! -icount shift=0,align=off,sleep=off`, booted from Debian's packages, with the ARMv7
//! flavour of the stock kmod-enable-user built against each kernel's own headers, the
//! static ARMv7 pmu-demo and the kernel's own Debian perf for armhf
//! (`linux-perf:armhf`). The guest's /init is tests/guest/common.sh + debian-armhf.sh.
//!
//! Run with `cargo xtask e2e debian-armhf` (Debian 12) and `cargo xtask e2e
//! debian13-armhf` (Debian 13), or `cargo xtask test`: they fetch the
//! packages through apt (cached), build the module and the initramfs and pass their
//! paths in the `PMU_DEBIAN_<row>_*` variables (tests/src/lib.rs `debian`).
//!
//! Expected values: the Cortex-A15's PMU is PMUv2 (ID_DFR0.PerfMon = 2, MIDR part
//! 0xc0f: Cortex-A15 TRM r4p0, 4.3.1 and 11.1); PMUv2 has no read-only user access
//! (PMUSERENR.EN alone: Arm ARM DDI 0406C, B4.1.158), so the default load is refused
//! and `el0_programming=1` grants; under icount QEMU counts INST_RETIRED exactly, so
//! pmu-demo's loop of 1000 `subs; bne` iterations is 2000 PL0 instructions (the same
//! measurement as tests/tests/kernel_armv7.rs on the workspace's armv7 kernel).

use std::time::Duration;

use pmu_tests::debian::Kernel;
use pmu_tests::guest::{assert_perf_wide_no_jump, demo};
use pmu_tests::{arm32_pmu_dtb, run_qemu, QemuRun, QEMU_ARM};

const LIMIT: Duration = Duration::from_secs(300);

/// The rows of the release × kernel table this file boots (xtask/src/guests/debian/run.rs
/// `ROWS`) and the step that sets each one's variables.
const DEBIAN_12_ARMMP: (&str, &str) = ("ARMHF_12_ARMMP", "debian-armhf");
const DEBIAN_12_ARMMP_LPAE: (&str, &str) = ("ARMHF_12_ARMMP_LPAE", "debian-armhf");
const DEBIAN_13_ARMMP: (&str, &str) = ("ARMHF_13_ARMMP", "debian13-armhf");
const DEBIAN_13_BPO_ARMMP: (&str, &str) = ("ARMHF_13_BPO", "debian13-armhf");

/// The machine: QEMU's `virt` with two Cortex-A15s (what a device tree dump takes too).
const MACHINE: [&str; 12] = [
    "-M",
    "virt",
    "-cpu",
    "cortex-a15",
    "-smp",
    "2",
    "-m",
    "512M",
    "-nographic",
    "-nic",
    "none",
    "-no-reboot",
];

/// Boots the row's kernel with `scenario`; with `pmu`, on a device tree with a PMU node
/// (`arm,cortex-a15-pmu`: [`arm32_pmu_dtb`]), so that perf's ARMv7 driver probes.
fn boot((id, step): (&str, &str), scenario: &str, pmu: bool) -> (QemuRun, Kernel) {
    let kernel = Kernel::from_env(id, step);
    let machine: Vec<String> = MACHINE.iter().map(|s| s.to_string()).collect();
    let mut args = machine.clone();
    if pmu {
        args.push("-dtb".into());
        args.push(
            arm32_pmu_dtb(&machine, "debian-armhf-virt", "arm,cortex-a15-pmu")
                .display()
                .to_string(),
        );
    }
    let rest: Vec<String> = [
        "-monitor",
        "none",
        "-icount",
        "shift=0,align=off,sleep=off",
        "-kernel",
        &kernel.image,
        "-initrd",
        &kernel.initramfs,
        "-append",
        // maxcpus=1: CPU 1 is brought up by the guest script's first command
        // (tests/guest/debian-armhf.sh `main`), not at boot. Debian's armmp kernel
        // (CONFIG_STRICT_KERNEL_RWX=y) runs stop_machine twice at the end of boot
        // (Linux 6.12 arch/arm/mm/init.c: free_initmem -> fix_kernmem_perms,
        // mark_rodata_ro); under icount QEMU runs the vCPUs round-robin, and a vCPU
        // spinning in multi_cpu_stop keeps the other waiting for its whole time slice.
        // With two CPUs at boot, even with rodata=off (which skips the second), /init
        // started after 27 s of the host's time, and some boots logged `soft lockup`
        // or `rcu_sched kthread starved` (docs/debian.md); with one CPU, stop_machine
        // waits for no other. The module loads after CPU 1 is online, as on any
        // two-CPU machine.
        &format!("console=ttyAMA0 loglevel=3 panic=-1 maxcpus=1 scenario={scenario} flavour=stock"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(rest);
    let run = run_qemu(QEMU_ARM, &args, LIMIT);
    run.assert_finished_within(LIMIT);
    run.assert_guest_finished();
    // maxcpus=1 above: CPU 1 came online from the guest script, before the scenario.
    let cpu1 = &run.scenario("cpu1")[0];
    assert_eq!(
        (cpu1.int("online_rc"), cpu1.get("online")),
        (0, "0-1"),
        "{}\n{}",
        cpu1.raw,
        run.stdout
    );
    (run, kernel)
}

/// pmu-demo's direct backend on the loop of 1000 iterations: min = median = 2000.
fn assert_exact(run: &QemuRun, tag: &str) {
    demo(run, tag).assert_direct_loop_exact(run, tag);
}

/// Debian 12's `linux-image-armmp` (6.1).
#[test]
fn debian_armmp_kernel_on_cortex_a15() {
    armhf_scenario(DEBIAN_12_ARMMP);
}

/// Debian 12's `linux-image-armmp-lpae` (6.1).
#[test]
fn debian_armmp_lpae_kernel_on_cortex_a15() {
    armhf_scenario(DEBIAN_12_ARMMP_LPAE);
}

/// Debian 13's `linux-image-armmp` (6.12).
#[test]
fn debian13_armmp_kernel_on_cortex_a15() {
    armhf_scenario(DEBIAN_13_ARMMP);
}

/// The newest armhf Linux deb.debian.org serves: trixie-backports' 7.2.11 armmp (its
/// 7.3.4, which the index lists, answers 404: docs/debian.md), with Debian 13's perf.
#[test]
fn debian13_backports_armmp_kernel_on_cortex_a15() {
    armhf_scenario(DEBIAN_13_BPO_ARMMP);
}

/// The `armhf` scenario (tests/guest/debian-armhf.sh) on one of Debian's armhf kernels,
/// its own perf beside it: the module built against that kernel's headers is the one
/// `uname -r` picks.
fn armhf_scenario(row: (&str, &str)) {
    let (run, kernel) = boot(row, "armhf", false);
    let release = kernel.release.clone();
    let boot = &run.scenario("boot")[0];
    assert_eq!(boot.get("kernel"), release, "{}", boot.raw);
    assert_eq!(boot.get("arch"), "armv7l", "{}", boot.raw);
    assert_eq!(boot.int("cpus"), 2, "{}", boot.raw);
    let module = &run.scenario("module")[0];
    assert_eq!(
        module.get("path"),
        format!("/lib/modules/kmod_enable_user-{release}.ko"),
        "{}",
        module.raw
    );
    assert_eq!(module.int("stock_marker"), 1, "{}", module.raw);
    let cpu = &run.scenario("cpu")[0];
    assert_eq!(cpu.get("part"), "0xc0f", "{}", cpu.raw);
    assert_eq!(cpu.get("architecture"), "7", "{}", cpu.raw);
    // QEMU's virt board describes no PMU in the device tree it gives a 32-bit CPU, so
    // perf's ARMv7 driver (CONFIG_HW_PERF_EVENTS=y in Debian's armmp config) probes
    // nothing: measured 0, as on the workspace's armv7 kernel (tests/tests/kernel_armv7.rs).
    assert_eq!(cpu.int("perf_pmu"), 0, "{}", cpu.raw);
    // Debian's own perf for armhf runs there (its loader and shared libraries came with
    // it) and says so: with no CPU PMU registered, perf_event_open of a hardware event
    // fails and `perf stat` prints `<not supported>` for it (tools/perf/util/stat-display.c
    // `print_counter_aggrdata`), exit status 0. Why no PMU: docs/debian.md.
    let perf = &run.scenario("perf")[0];
    assert_eq!(
        perf.get("version"),
        kernel.perf_version_line(),
        "{}\n{}",
        perf.raw,
        run.stdout
    );
    assert_eq!(
        (perf.int("status"), perf.get("count")),
        (0, "not_supported"),
        "{}\n{}",
        perf.raw,
        run.stdout
    );

    demo(&run, "before-cpu0").assert_not_enabled(&run);
    // The per-thread default needs CONFIG_PREEMPT_NOTIFIERS, which Debian's armmp
    // kernels lack (their config has no such line): refused with its reason
    // (kmod_enable_user_glue.c `eu_refuse_per_thread`); the loads below pass cpu_wide=1.
    let per_thread = run.find("insmod", "tag", "per-thread");
    assert_eq!(
        (per_thread.int("loaded"), per_thread.get("error")),
        (0, "Operation_not_supported"),
        "{}\n{}",
        per_thread.raw,
        run.stdout
    );
    run.assert_klog(
        "load with cpu_wide=1 to let every process read the counters CPU-wide: refusing to load",
    );
    let default = run.find("insmod", "tag", "default");
    assert_eq!(
        (default.int("loaded"), default.get("error")),
        (0, "Operation_not_supported"),
        "{}\n{}",
        default.raw,
        run.stdout
    );
    run.assert_klog("has no read-only grant");
    let load = run.find("insmod", "tag", "programming");
    assert_eq!(
        (load.int("rc"), load.int("loaded")),
        (0, 1),
        "{}\n{}",
        load.raw,
        run.stdout
    );
    run.assert_klog("kmod_enable_user: loaded: PMUSERENR = EN");
    // No arm_pmu on this device tree: nothing of perf's beside the module
    // (kmod_enable_user_owners.c: no PMU takes the probe event).
    run.assert_klog("kmod_enable_user: no perf driver (arm_pmu) for these CPUs: perf holds no counter and can get none, nothing is reserved, no keeper event");
    assert_exact(&run, "loaded-cpu0");
    assert_exact(&run, "loaded-cpu1");
    // pmu-demo stat on 32-bit ARM: the direct backend (pmu-linux has no perf backend
    // there) counts CPU 0 around `sh -c 'exit 3'` and exits with the command's 3 (a
    // shell's convention, POSIX XCU 2.8.2).
    let stat = demo(&run, "stat-armhf");
    assert_eq!(stat.status, 3, "{}\n{}", stat.raw, stat.stderr);
    let json = stat
        .json
        .as_ref()
        .unwrap_or_else(|| panic!("no JSON: {}", stat.stderr));
    assert_eq!(json["backend"], "direct", "{json}");
    assert_eq!(json["end"]["how"], "exited", "{json}");
    assert_eq!(json["exit_status"], 3, "{json}");
    for e in json["events"].as_array().expect("events") {
        assert_eq!(e["verdict"], "cpu-wide", "{e}");
        // The shell ran: its instructions and cycles at PL0 are counted.
        assert!(e["count"].as_u64().is_some_and(|c| c > 1000), "{e}");
    }
    let hotplug = &run.scenario("hotplug")[0];
    assert_eq!(
        (
            hotplug.int("offline_rc"),
            hotplug.int("online_rc"),
            hotplug.int("online")
        ),
        (0, 0, 1),
        "{}",
        hotplug.raw
    );
    assert_exact(&run, "replugged-cpu1");
    let unload = run.find("rmmod", "tag", "programming");
    assert_eq!(
        (unload.int("rc"), unload.int("loaded"), unload.int("states")),
        (0, 0, 0),
        "{}",
        unload.raw
    );
    demo(&run, "after-cpu0").assert_not_enabled(&run);
    let log = &run.scenario("kernel_log")[0];
    assert_eq!(log.int("trouble"), 0, "{}\n{}", log.raw, run.stdout);
}

/// Debian 12's armmp kernel (6.1: perf's `num_events` and its index numbering,
/// ARMV7_IDX_TO_COUNTER) with perf's ARMv7 driver probed ([`arm32_pmu_dtb`]):
/// `perf stat -a -e cycles:u,instructions:u -I 100` across insmod, CPU 1 offline/online
/// and rmmod shows no jump ([`assert_perf_wide_no_jump`]); the module took its two
/// counters out of perf's (5 and 4 of the Cortex-A15's six: `num_events` 7 -> 5) and
/// its keeper one more; after a perf session of its own on CPU 0, pmu-demo's direct reads
/// count exactly. Before all that, a load beside a stopped task-bound `perf stat` is
/// refused (perf promised its event a counter).
#[test]
fn debian_armmp_kernel_beside_perfs_armv7_driver() {
    let (run, kernel) = boot(DEBIAN_12_ARMMP, "armhf_perf", true);
    let boot = &run.scenario("boot")[0];
    assert_eq!(boot.get("kernel"), kernel.release, "{}", boot.raw);
    let cpu = &run.scenario("cpu")[0];
    // arm_v7_pmu.c registers `armv7_cortex_a15` for the node: one PMU in sysfs.
    assert_eq!(cpu.int("perf_pmu"), 1, "{}\n{}", cpu.raw, run.stdout);
    // perf counts now: a number, not `<not supported>`.
    let perf = &run.scenario("perf")[0];
    assert_eq!(perf.int("status"), 0, "{}\n{}", perf.raw, run.stdout);
    assert!(
        perf.get("count").parse::<u64>().is_ok_and(|c| c > 0),
        "{}\n{}",
        perf.raw,
        run.stdout
    );
    // A task-bound perf stat, its command stopped: perf promised its event a counter
    // though none is in use (kmod_enable_user_owners.c walks perf's task contexts). The
    // load is refused (EBUSY as insmod prints it) before anything changes, and perf
    // counts the command once it runs. (The ARMv7 flavour before the walk read only
    // used_mask, empty here, and loaded.)
    let started = &run.scenario("pinned-started")[0];
    assert!(started.int("waited") < 600, "{}", started.raw);
    assert_eq!(started.int("stopped"), 1, "{}", started.raw);
    let refused = run.find("insmod", "tag", "pinned");
    assert_ne!(refused.int("rc"), 0, "{}\n{}", refused.raw, run.stdout);
    assert_eq!(
        (refused.int("loaded"), refused.get("error")),
        (0, "Device_or_resource_busy"),
        "{}",
        refused.raw
    );
    assert!(
        run.klog("perf has promised counters of PMU armv7_cortex_a15")
            .iter()
            .any(|l| l.contains("1 task-bound events in 1 tasks")
                && l.contains("nothing was changed")),
        "{}",
        run.stdout
    );
    let pinned = &run.scenario("pinned-perf")[0];
    assert_eq!(
        (pinned.int("status"), pinned.int("counted")),
        (0, 1),
        "{}\n{}",
        pinned.raw,
        run.stdout
    );
    let load = run.find("insmod", "tag", "wide");
    assert_eq!(
        (load.int("rc"), load.int("loaded")),
        (0, 1),
        "{}\n{}",
        load.raw,
        run.stdout
    );
    run.assert_klog("kmod_enable_user: left to perf: PMCCNTR and event counters below 4 (the layout's are taken out of perf's counter mask), minus one counter per CPU for the module's keeper event");
    let layout = &run.scenario("wide-layout")[0];
    assert_eq!(layout.get("text"), "5=0x8,4=0x11", "{}", layout.raw);
    let hotplug = &run.scenario("wide-hotplug")[0];
    assert_eq!(
        (hotplug.int("offline_rc"), hotplug.int("online_rc")),
        (0, 0),
        "{}",
        hotplug.raw
    );
    let unload = run.find("rmmod", "tag", "wide");
    assert_eq!(
        (unload.int("rc"), unload.int("states")),
        (0, 0),
        "{}",
        unload.raw
    );
    for line in run.klog("perf holds") {
        println!("{line}");
    }
    assert_perf_wide_no_jump(&run);
    let session = &run.scenario("perf-session")[0];
    assert_eq!(
        (session.int("status"), session.int("counted")),
        (0, 2),
        "{}\n{}",
        session.raw,
        run.stdout
    );
    assert_exact(&run, "session-after-cpu0");
    let unload = run.find("rmmod", "tag", "session");
    assert_eq!(unload.int("rc"), 0, "{}", unload.raw);
    let log = &run.scenario("kernel_log")[0];
    assert_eq!(log.int("trouble"), 0, "{}\n{}", log.raw, run.stdout);
}
