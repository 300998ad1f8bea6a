//! The 32-bit ARMv7 side end to end: the armv7 multi-platform test kernel (Debian's
//! linux-source-6.12, tinyconfig + xtask/kernel/armv7.config, no CONFIG_RUST) with the
//! ARMv7 flavour of kmod-enable-user's stock module (kmod-enable-user/stock, built with
//! FLAVOUR=armv7: C glue + pmu-armv7) and the static ARMv7 `pmu-demo`, booted on
//!
//! - QEMU `-M raspi2b`: the Raspberry Pi 2 Model B, four Cortex-A7 (PMUv2, PMCR.N = 4
//!   in QEMU 10.0.2), the board's own device tree `bcm2836-rpi-2-b.dtb`, which has an
//!   `arm,cortex-a7-pmu` node: perf's ARMv7 driver owns the PMU, as on a real Pi 2;
//! - QEMU `-M virt -cpu cortex-a15 -smp 2` (PMUv2, PMCR.N = 6), PSCI: CPU hotplug;
//!   and `-cpu cortex-a15,pmu=off` for a CPU without a PMU;
//! - QEMU `-M raspi0` with the armv6 kernel and the ARMv7 flavour: the wrong flavour for
//!   an ARM1176.
//!
//! All under `-icount shift=0,align=off,sleep=off`, where QEMU's INST_RETIRED is exact
//! (the armv7-virt bare-metal image measures it: tests/tests/qemu_armv7.rs).
//! The guest's /init is tests/guest/common.sh + armv7.sh (armv6.sh for raspi0).
//!
//! Run with `cargo xtask e2e raspi2b`, `cargo xtask e2e armv7` (or `cargo xtask test`),
//! which build the artefacts and pass their paths in the variables below.

use std::time::Duration;

use pmu_tests::guest::demo;
use pmu_tests::{
    arm64_kernel_args, kernel_artefact, kernel_env, raspi_args, run_qemu, QemuRun, QEMU_ARM,
};
use serde_json::Value;

/// Boot + scenario: four Cortex-A7s under icount, 10 load/unload cycles with kmemleak.
const LIMIT: Duration = Duration::from_secs(500);

/// The armv7 kernel (`zImage`), its initramfs, and the Raspberry Pi 2 device tree.
const ARMV7_KERNEL: &str = "PMU_KERNEL_ARMV7";
const ARMV7_INITRAMFS: &str = "PMU_INITRAMFS_ARMV7";
const RASPI2B_DTB: &str = "PMU_DTB_RASPI2B";
/// The armv6 initramfs whose stock module is the ARMv7 flavour.
const ARMV6_WITH_ARMV7_FLAVOUR: &str = "PMU_INITRAMFS_ARMV6_WITH_ARMV7_FLAVOUR";

/// What a board is, for the assertions.
struct Board {
    /// CPUs the kernel brings up.
    cpus: i128,
    /// /proc/cpuinfo "CPU part": MIDR bits 15:4 (Cortex-A7 MPCore TRM 4.3.1: 0xC07;
    /// Cortex-A15 TRM 4.3.1: 0xC0F).
    part: &'static str,
    /// PMCR.N in QEMU 10.0.2 (measured by the armv7-virt image: 4 on cortex-a7, 6 on
    /// cortex-a15).
    event_counters: u32,
    /// Whether the device tree has a PMU node that perf's ARMv7 driver probes.
    perf_pmu: i128,
    /// Whether CPU 1 can go offline (PSCI CPU_OFF on virt; the BCM2836's SMP operations
    /// have no cpu_die: arch/arm/mach-bcm/platsmp.c, Linux 6.12).
    hotplug: bool,
}

fn run(program: &str, args: &[String]) -> QemuRun {
    let run = run_qemu(program, args, LIMIT);
    run.assert_finished_within(LIMIT);
    run.assert_guest_finished();
    let module = &run.scenario("module")[0];
    assert_eq!(module.get("flavour"), "stock", "{}", module.raw);
    assert_eq!(module.int("stock_marker"), 1, "{}", module.raw);
    assert_eq!(
        run.scenario("kernel_log")[0].int("trouble"),
        0,
        "kernel log trouble\n{}",
        run.stdout
    );
    run
}

fn virt_args(cpu: &str, smp: u32, scenario: &str) -> Vec<String> {
    let mut args = arm64_kernel_args(
        &kernel_artefact(ARMV7_KERNEL),
        &kernel_artefact(ARMV7_INITRAMFS),
        cpu,
        smp,
        scenario,
    );
    let append = args
        .iter_mut()
        .skip_while(|a| a.as_str() != "-append")
        .nth(1)
        .expect("the virt arguments have -append");
    *append = format!("{append} flavour=stock");
    args
}

/// The direct backend measured the `loop` kernel's 1000 iterations of `subs; bne`:
/// exactly 2000 PL0 instructions (min and median; the max may include what another vCPU
/// executed, QEMU's INST_RETIRED being the global icount: see tests/tests/raspi.rs).
fn assert_exact(run: &QemuRun, tag: &str) {
    let d = demo(run, tag);
    let json = d.assert_direct_loop_exact(run, tag);
    let inst = d.event(run, "instructions");
    assert!(
        inst["max"].as_i64().is_some_and(|m| m >= 2000),
        "{tag}: {json}"
    );
    let notes = json["notes"].to_string();
    assert!(notes.contains("PMUSERENR.EN"), "{tag}: {notes}");
    // The AArch32 direct region's kernel-entry sentinel (pmu-linux direct::aarch32
    // `SENTINEL`): INST_RETIRED at PL1 only on a counter the events leave free.
    // The quiet runs above still give exact minima: it does not flag every region.
    // pmu-demo reports it once, as `sentinel` (not among the notes).
    let sentinel = &json["sentinel"];
    assert_eq!(sentinel["counting"], true, "{tag}: {json}");
    assert!(
        sentinel["text"].as_str().is_some_and(|t| t
            .contains("kernel-entry sentinel: instructions at the kernel's level (event counter")),
        "{tag}: {json}"
    );
    assert!(!notes.contains("kernel-entry sentinel"), "{tag}: {notes}");
}

/// Under the module's default read-only grant (PMUSERENR = ER, the layout
/// `5=0x8 4=0x11`) on CPU `cpu`: the ARMv7 backend reads the module's counters without
/// programming anything (pmu-linux direct::aarch32 `open_read_only_grant`), and the
/// 1000-iteration loop counts exactly 2000 PL0 instructions (min and median), as under
/// `el0_programming=1` ([`assert_exact`]).
fn assert_exact_read_only(run: &QemuRun, tag: &str, cpu: u32) {
    let d = demo(run, tag);
    let json = d.assert_direct_loop_exact(run, tag);
    // CPU_CYCLES (event counter 4, 4=0x11 in the layout) moves too: QEMU's PMUv3 counts
    // a cycle per instruction under icount, at least the loop's.
    let cycles = d.event(run, "cycles");
    assert!(
        cycles["min"].as_i64().is_some_and(|m| m >= 2000),
        "{tag}: {json}"
    );
    // pmu-linux backend.rs `How::Armv7ModuleLayout`.
    let notes = json["notes"].to_string();
    assert!(
        notes.contains(&format!(
            "grant: read-only (PMUSERENR ER or ER|CR, no EN) from kmod-enable-user's ARMv7 flavour on CPU {cpu}: the counters the module runs (5=0x8 4=0x11), PL0 only, nothing programmed"
        )),
        "{tag}: {notes}"
    );
    // The ARMv7 flavour runs no sentinel, and PL0 cannot program one without EN.
    let sentinel = &json["sentinel"];
    assert_eq!(sentinel["counting"], false, "{tag}: {json}");
    assert!(
        sentinel["text"]
            .as_str()
            .is_some_and(|t| t.contains("kmod-enable-user's ARMv7 flavour runs none")),
        "{tag}: {json}"
    );
}

/// The direct backend took `inst_retired`, the Cortex-A7's own name (any case) for
/// INST_RETIRED, 0x08 (Cortex-A7 MPCore TRM DDI 0464, chapter 11; ARMv7 ARM DDI 0406C
/// C12.8), beside its number `r8`: both exact. The Cortex-A15 (part 0xC0F) has no table
/// in pmu-events: refused as bad input (exit status 2) with its MIDR and the `r<hex>`
/// way.
fn assert_named_event(run: &QemuRun, b: &Board) {
    let d = demo(run, "named-direct");
    if b.part == "0xc07" {
        let json = d.json(run);
        assert_eq!(json["backend"], "direct", "{json}");
        for name in ["instructions", "inst_retired", "r8"] {
            let e = d.event(run, name);
            assert_eq!(
                (&e["min"], &e["median"]),
                (&2000.into(), &2000.into()),
                "{name}: {json}"
            );
        }
    } else {
        assert_eq!(d.status, 2, "{}\n{}", d.raw, d.stderr);
        assert!(
            d.stderr.contains("`inst_retired` is an event of the")
                && d.stderr.contains(&format!("part {})", b.part))
                && d.stderr.contains("r<hex>"),
            "{}",
            d.stderr
        );
    }
}

/// Long regions (tests/guest/armv7.sh `sentinel_demo`: 40 M PL0 instructions, at least
/// 40 ms of virtual time, CONFIG_HZ=100): the timer interrupts each run, and the
/// sentinel (INST_RETIRED with PMXEVTYPER.U set: DDI 0406C C12 "PMXEVTYPER") flags every
/// run with the kernel-entry hazard; no other detector of the direct backend sees an
/// interrupt that does not end in a context switch.
fn assert_sentinel_flags_long_regions(run: &QemuRun, tag: &str) {
    let d = demo(run, tag);
    let json = d.json(run);
    let runs = d.result(run)["runs"]
        .as_array()
        .unwrap_or_else(|| panic!("{tag}: no runs: {json}"));
    assert_eq!(runs.len(), 3, "{tag}: {json}");
    for r in runs {
        let hazards = r["hazards"].to_string();
        assert!(hazards.contains("kernel-entry"), "{tag}: {r}\n{json}");
    }
}

/// The board scenario (tests/guest/armv7.sh `scenario_board`).
fn board_scenario(run: &QemuRun, b: &Board) {
    let boot = &run.scenario("boot")[0];
    assert_eq!(boot.get("arch"), "armv7l", "{}", boot.raw);
    assert_eq!(boot.int("cpus"), b.cpus, "{}", boot.raw);
    let cpu = &run.scenario("cpu")[0];
    assert_eq!(cpu.get("part"), b.part, "{}", cpu.raw);
    assert_eq!(cpu.get("architecture"), "7", "{}", cpu.raw);
    assert_eq!(cpu.int("perf_pmu"), b.perf_pmu, "{}", cpu.raw);

    // Off before the module.
    demo(run, "before-cpu0").assert_not_enabled(run);

    // The default request (read-only, ER) does not exist on PMUv2: refused with the
    // reason (kmod-enable-user/README.md, ARMv7).
    let default = run.find("insmod", "tag", "default");
    assert_eq!(
        (default.int("loaded"), default.get("error")),
        (0, "Operation_not_supported"),
        "{}",
        default.raw
    );
    run.assert_klog("kmod_enable_user: PMUv2 (ID_DFR0.PerfMon=2: Cortex-A7, Cortex-A15) has no read-only grant, PMUSERENR.EN alone lets user space program every counter and count in PL1: load with el0_programming=1 to accept that (ID_DFR0.PerfMon=0x2): refusing to load");
    // Bad parameters: -EINVAL with the rule.
    let bad = run.find("insmod", "tag", "bad-user-access");
    assert_eq!(
        (bad.int("loaded"), bad.get("error")),
        (0, "Invalid_argument"),
        "{}",
        bad.raw
    );
    run.assert_klog("kmod_enable_user: user_access may hold SW=2, CR=4, ER=8 only: write access (EN=1) is granted by el0_programming=1 alone (ID_DFR0.PerfMon=0x2): refusing to load");
    let bad = run.find("insmod", "tag", "bad-events");
    assert_eq!(
        (bad.int("loaded"), bad.get("error")),
        (0, "Invalid_argument"),
        "{}",
        bad.raw
    );
    run.assert_klog("kmod_enable_user: events: an event number above PMXEVTYPER.evtCount (0xff on PMUv2, 0x3ff on PMUv3) (ID_DFR0.PerfMon=0x2): refusing to load");

    // With the write opt-in: EN on every CPU, INST_RETIRED on the highest counter (N-1)
    // and CPU_CYCLES on the one below, PL0 only; nothing else written. Where perf's ARMv7
    // driver probed (raspi2b), the module's keeper event holds counter 0 (perf's
    // `armv7pmu_get_event_idx` takes the lowest counter of `cntr_mask`, Linux 6.12), and
    // the layout's two counters are out of perf's reach.
    let load = run.find("insmod", "tag", "programming");
    assert_eq!((load.int("rc"), load.int("loaded")), (0, 1), "{}", load.raw);
    let n = b.event_counters;
    let top = n - 1;
    let layout = format!("{top}=0x8 {}=0x11", top - 1);
    let perf_holds: u32 = if b.perf_pmu == 1 { 0x1 } else { 0x0 };
    run.assert_klog(&format!(
        "kmod_enable_user: loaded: PMUSERENR = EN (read and program (EN)) on every online CPU and on CPUs that come online later (ID_DFR0.PerfMon=0x2, {n} event counters); counting for PL0 only: {layout}"
    ));
    run.assert_klog(
        "kmod_enable_user: el0_programming=1: every process may now program the PMU: count at PL1",
    );
    if b.perf_pmu == 1 {
        run.assert_klog(&format!(
            "kmod_enable_user: left to perf: PMCCNTR and event counters below {}",
            n - 2
        ));
    } else {
        run.assert_klog("kmod_enable_user: no perf driver (arm_pmu) for these CPUs: perf holds no counter and can get none, nothing is reserved, no keeper event");
    }
    let started = (1u32 << top) | (1 << (top - 1));
    for c in 0..b.cpus {
        run.assert_klog(&format!(
            "kmod_enable_user: cpu{c}: PMUSERENR 0x0 -> 0x1 (EN: read and program (EN)) [online]; counters for PL0: {layout}, started {started:#x}, kept running 0x0; perf holds {perf_holds:#x}"
        ));
    }
    let text = &run.scenario("layout")[0];
    assert_eq!(text.get("text"), layout.replace(' ', "_"), "{}", text.raw);

    // Exact counts on every CPU.
    for c in 0..b.cpus {
        assert_exact(run, &format!("loaded-cpu{c}"));
    }

    assert_named_event(run, b);

    assert_sentinel_flags_long_regions(run, "sentinel-long");

    // The hazards pmu-demo forces, each flagged.
    let hazards = demo(run, "hazards");
    assert_eq!(hazards.status, 0, "{}\n{}", hazards.raw, run.stdout);
    let list = hazards
        .json
        .as_ref()
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("no hazards JSON\n{}", run.stdout));
    for name in ["context-switch", "cpu-migration", "overflow"] {
        let d = list
            .iter()
            .find(|d| d["name"] == name)
            .unwrap_or_else(|| panic!("no `{name}` demo: {list:?}"));
        assert_eq!(d["detected"], true, "{name}: {d}");
        assert_eq!(d["skipped"], Value::Null, "{name}: {d}");
    }

    // `regrant` after pmu-demo took the PMUs over: the module's counters programmed and
    // started again on every CPU (the grant itself was still there).
    let regrant = &run.scenario("regrant")[0];
    assert_eq!(regrant.int("rc"), 0, "{}", regrant.raw);
    for c in 0..b.cpus {
        run.assert_klog(&format!(
            "kmod_enable_user: cpu{c}: PMUSERENR 0x1 -> 0x1 (EN: read and program (EN)) [regrant]; counters for PL0: {layout}, started {started:#x}, kept running 0x0"
        ));
    }

    // CPU hotplug.
    let hotplug = &run.scenario("hotplug")[0];
    assert_eq!(
        hotplug.int("offlined"),
        i128::from(b.hotplug),
        "{}",
        hotplug.raw
    );
    // A CPU that cannot go offline has no `online` file in sysfs (Linux 6.12
    // drivers/base/cpu.c sets `offline_disabled` from arch/arm's
    // `platform_can_hotplug_cpu()`; drivers/base/core.c then creates no `online`).
    let online = if b.hotplug { "1" } else { "absent" };
    assert_eq!(hotplug.get("online"), online, "{}", hotplug.raw);
    if b.hotplug {
        // Offline: revoked and the (regranted) counters released (counted below); online
        // again: granted again, the counters programmed again.
        let grants = run.klog(
            "kmod_enable_user: cpu1: PMUSERENR 0x0 -> 0x1 (EN: read and program (EN)) [online]",
        );
        // At the load, when CPU 1 came back, and at the final load of the script.
        assert_eq!(grants.len(), 3, "{}", run.stdout);
        assert_exact(run, "replugged-cpu1");
    }

    // Unload: every CPU's grant revoked, access off again.
    let unload = run.find("rmmod", "tag", "default");
    assert_eq!(
        (unload.int("rc"), unload.int("loaded"), unload.int("states")),
        (0, 0, 0),
        "{}",
        unload.raw
    );
    // Every restore line of the script, per CPU: the module releases (disables, clears
    // the overflow flags and interrupt enables of, and zeroes) its own counters unless
    // perf's `used_mask` holds them, whatever PL0 wrote into them under EN: at the
    // unload and at the script's last unload, and on virt CPU 1 also at its offline
    // (pmu-demo took its PMU over after it came back; those counters are the module's
    // all the same, and perf holds none of them).
    for c in 0..b.cpus {
        let offlined = b.hotplug && c == 1;
        let released = |mask: u32| {
            run.klog(&format!(
                "kmod_enable_user: cpu{c}: PMUSERENR 0x1 -> 0x0 (none); counters released {mask:#x}, left to perf 0x0"
            ))
            .len()
        };
        assert_eq!(
            released(started),
            2 + usize::from(offlined),
            "cpu{c}\n{}",
            run.stdout
        );
        assert_eq!(released(0), 0, "cpu{c}\n{}", run.stdout);
    }
    run.assert_klog("kmod_enable_user: unloaded: PL0 access revoked");
    demo(run, "after-cpu0").assert_not_enabled(run);

    // The ARMv6 flavour on this ARMv7 CPU: refused before any ARM1176 instruction.
    let other = run.find("insmod", "tag", "other-flavour");
    assert_eq!(
        (other.int("loaded"), other.get("error")),
        (0, "No_such_device"),
        "{}",
        other.raw
    );
    run.assert_klog(&format!(
        "part {}; SUNAVCR exists only there): this is the ARMv6 flavour; an ARMv7 or later CPU (Raspberry Pi 2/3/4/5 on a 32-bit kernel) takes the ARMv7 flavour (make FLAVOUR=armv7): refusing to load",
        b.part
    ));

    // Load/unload cycles: no failure, no state, no leak; loading twice refused.
    run.assert_stress_cycles(10);
    let first = run.find("insmod", "tag", "twice-first");
    assert_eq!(first.int("rc"), 0, "{}", first.raw);
    let second = run.find("insmod", "tag", "twice-second");
    assert_ne!(second.int("rc"), 0, "{}", second.raw);
    let twice = run.find("rmmod", "tag", "twice");
    assert_eq!(
        (twice.int("rc"), twice.int("states")),
        (0, 0),
        "{}",
        twice.raw
    );
}

/// Raspberry Pi 2 Model B (QEMU `raspi2b`): four Cortex-A7, perf's PMU driver probed.
#[test]
fn raspi2b_armv7_flavour_grants_exact_counts_and_restores() {
    let args = raspi_args(
        "raspi2b",
        &kernel_artefact(ARMV7_KERNEL),
        &kernel_artefact(RASPI2B_DTB),
        &kernel_artefact(ARMV7_INITRAMFS),
        "board",
        "stock",
        true,
    );
    let run = run(QEMU_ARM, &args);
    let model = &run.scenario("cpu")[0];
    assert!(
        model.get("board").starts_with("Raspberry_Pi_2_Model_B"),
        "{}",
        model.raw
    );
    board_scenario(
        &run,
        &Board {
            cpus: 4,
            part: "0xc07",
            event_counters: 4,
            perf_pmu: 1,
            hotplug: false,
        },
    );
}

/// Raspberry Pi Zero (QEMU `raspi0`, ARM1176) with the ARMv7 flavour built against the
/// armv6 kernel: refused at load, before any ARMv7 instruction, with the reason.
#[test]
fn raspi0_refuses_the_armv7_flavour() {
    let args = raspi_args(
        "raspi0",
        &kernel_artefact(kernel_env::ARMV6_KERNEL),
        &kernel_artefact(kernel_env::RASPI0_DTB),
        &kernel_artefact(ARMV6_WITH_ARMV7_FLAVOUR),
        "raspi",
        "stock",
        false,
    );
    let run = run(QEMU_ARM, &args);
    let load = run.find("insmod", "tag", "default");
    assert_eq!(
        (load.int("loaded"), load.get("error")),
        (0, "No_such_device"),
        "{}",
        load.raw
    );
    // QEMU's arm1176: MIDR 0x410fb767 (ARM1176JZF-S r0p7).
    run.assert_klog("kmod_enable_user: not an ARMv7 or later CPU (MIDR 0x410fb767): this is the ARMv7 flavour; an ARM1176 (Raspberry Pi 1 / Zero) takes the ARMv6 flavour (make FLAVOUR=armv6): refusing to load");
    demo(&run, "after").assert_not_enabled(&run);
}

/// `-M virt -cpu cortex-a15 -smp 2`: PSCI lets CPU 1 go offline and come back.
#[test]
fn virt_cortex_a15_armv7_flavour_grants_exact_counts_hotplug_and_restores() {
    let run = run(QEMU_ARM, &virt_args("cortex-a15", 2, "board"));
    board_scenario(
        &run,
        &Board {
            cpus: 2,
            part: "0xc0f",
            event_counters: 6,
            perf_pmu: 0,
            hotplug: true,
        },
    );
}

/// `-cpu cortex-a15,pmu=off`: QEMU clears ID_DFR0.PerfMon; the module refuses with
/// -ENODEV and says why.
#[test]
fn virt_cortex_a15_without_pmu_refuses() {
    let run = run(QEMU_ARM, &virt_args("cortex-a15,pmu=off", 1, "nopmu"));
    let load = run.find("insmod", "tag", "nopmu");
    assert_eq!(
        (load.int("loaded"), load.get("error")),
        (0, "No_such_device"),
        "{}",
        load.raw
    );
    run.assert_klog("kmod_enable_user: no ARM-architected PMU on this CPU (ID_DFR0.PerfMon is 0 or 0xF) (ID_DFR0.PerfMon=0x0): refusing to load");
}

/// `pmu-demo stat --backend direct` under the read-only grant (no overflow flags at PL0,
/// the event counters read as 32 bits) of `pmu-demo measure
/// --kernel loop --units U --runs 2`: the loop is 2 PL0 instructions an iteration
/// (`subs; bne`, exact under icount shift=0: tests/tests/qemu_armv7.rs), so U = 2^31 - 1
/// counts 4 × (2^31 - 1 - 1000) = 8 589 930 588 more than U = 1000: over 2^33, two
/// wraps of a 32-bit counter at least, which one region could not tell (its reading
/// would be the count modulo 2^32). At shift=0 (one instruction a nanosecond of virtual
/// time) that is 8.6 s, read in 50 ms sub-regions and summed (userspace-demo
/// stat_cmd/sub_regions.rs). The slack is the demo's own user-space instructions at
/// each read (about 6000 measured here, 10 000 allowed); a count wrapped unseen is
/// 2^32 off, a lost sub-region 5 × 10^7.
fn assert_stat_sums_sub_regions(run: &QemuRun) {
    let stat = |tag: &str| {
        let d = demo(run, tag);
        let json = d
            .json
            .clone()
            .unwrap_or_else(|| panic!("no JSON for {}: {}\n{}", d.raw, d.stderr, run.stdout));
        assert_eq!(d.status, 0, "{tag}: {json}");
        assert_eq!(json["backend"], "direct", "{tag}: {json}");
        let count = |name: &str| {
            let e = json["events"]
                .as_array()
                .and_then(|events| events.iter().find(|e| e["name"] == name))
                .unwrap_or_else(|| panic!("{tag}: no {name} in {json}"));
            assert_eq!(e["verdict"], "cpu-wide", "{tag}: {e}");
            e["count"]
                .as_u64()
                .unwrap_or_else(|| panic!("{tag}: no count for {name}: {e}"))
        };
        let reads = json["sub_regions"][0].as_u64().unwrap_or(0);
        (count("instructions"), count("cycles"), reads, json.clone())
    };
    let (short, _, short_reads, _) = stat("stat-short");
    let (long, cycles, reads, json) = stat("stat-wrap");
    println!(
        "stat-short: {short} instructions in {short_reads} sub-regions; \
         stat-wrap: {long} instructions, {cycles} cycles in {reads} sub-regions"
    );
    let loop_instructions: u64 = 4 * (2_147_483_647 - 1000);
    assert!(short_reads >= 1, "{short_reads} sub-regions");
    // 8.6 s in sub-regions of 50 ms and the demo's wake-up.
    assert!(reads >= 100, "{reads} sub-regions: {json}");
    let extra = long
        .checked_sub(short)
        .and_then(|d| d.checked_sub(loop_instructions));
    assert!(
        extra.is_some_and(|x| x <= 100_000 + 10_000 * reads),
        "stat-wrap {long} - stat-short {short} = {} instead of {loop_instructions} and the \
         demo's reads: {json}",
        i128::from(long) - i128::from(short)
    );
    // CPU_CYCLES at PL0 (the layout's 4=0x11): one cycle per instruction under icount
    // shift=0 (the instructions-per-cycle check of tests/tests/debian_arm64.rs).
    assert!(cycles >= loop_instructions, "{cycles} cycles: {json}");
}

/// `-M virt -cpu max -smp 2`: qemu-system-arm's `max` is an ARMv8 CPU in AArch32 (MIDR
/// part 0xd07) with PMUv3p5 (ID_DFR0.PerfMon = 6), the PMU a Pi 3/4 has under a 32-bit
/// kernel: the default load grants read-only access (ER) on both CPUs, and pmu-demo's
/// ARMv7 backend reads the module's counters there exactly, without programming; an
/// event outside the layout is refused with the parameter that adds it; with
/// `el0_programming=1` it programs its own counters and counts exactly.
#[test]
fn virt_max_pmuv3_in_aarch32_read_only_default() {
    let run = run(QEMU_ARM, &virt_args("max", 2, "pmuv3"));
    let cpu = &run.scenario("cpu")[0];
    assert_eq!(cpu.get("part"), "0xd07", "{}", cpu.raw);
    let load = run.find("insmod", "tag", "default");
    assert_eq!((load.int("rc"), load.int("loaded")), (0, 1), "{}", load.raw);
    run.assert_klog("kmod_enable_user: loaded: PMUSERENR = ER (read-only) on every online CPU and on CPUs that come online later (ID_DFR0.PerfMon=0x6, 6 event counters); counting for PL0 only: 5=0x8 4=0x11");
    // QEMU's virt board gives a 32-bit CPU no PMU node: no arm_pmu, so perf holds
    // nothing and the module has no keeper there.
    for c in 0..2 {
        run.assert_klog(&format!(
            "kmod_enable_user: cpu{c}: PMUSERENR 0x0 -> 0x8 (ER: read-only) [online]; counters for PL0: 5=0x8 4=0x11, started 0x30, kept running 0x0; perf holds 0x0"
        ));
    }
    let text = &run.scenario("layout")[0];
    assert_eq!(text.get("text"), "5=0x8_4=0x11", "{}", text.raw);
    assert_exact_read_only(&run, "readonly-cpu0", 0);
    assert_exact_read_only(&run, "readonly-cpu1", 1);
    // L1D_CACHE_REFILL (0x03) is not in the layout: refused before any measurement,
    // naming the layout and the `events=` that adds it (pmu-linux error.rs
    // `AccessError::NotInModuleLayout`); pmu-demo's exit status 2 for a request it
    // cannot count.
    let missing = demo(&run, "readonly-missing");
    assert_eq!(missing.status, 2, "{}\n{}", missing.raw, run.stdout);
    assert!(
        missing.stderr.contains(
            "r3: kmod-enable-user's read-only grant counts only its own events (parameters/layout: 5=0x8 4=0x11); reload it with events=0x8,0x3 to count it too"
        ),
        "{}",
        missing.stderr
    );
    assert_stat_sums_sub_regions(&run);
    let unload = run.find("rmmod", "tag", "default");
    assert_eq!(
        (unload.int("rc"), unload.int("states")),
        (0, 0),
        "{}",
        unload.raw
    );
    let load = run.find("insmod", "tag", "programming");
    assert_eq!((load.int("rc"), load.int("loaded")), (0, 1), "{}", load.raw);
    run.assert_klog(
        "kmod_enable_user: cpu1: PMUSERENR 0x0 -> 0x9 (EN|ER: read and program (EN)) [online]",
    );
    assert_exact(&run, "loaded-cpu1");
    let unload = run.find("rmmod", "tag", "programming");
    assert_eq!(
        (unload.int("rc"), unload.int("states")),
        (0, 0),
        "{}",
        unload.raw
    );
}
