//! Helpers for the end-to-end tests: run QEMU with a time limit and parse the
//! `RESULT <scenario> key=value …` lines the images print.
//!
//! The images are built by `cargo xtask test`, which passes their paths in the
//! `PMU_IMAGE_AARCH64_VIRT` and `PMU_IMAGE_X86_64` environment variables. A missing image
//! or a missing QEMU is a test failure with a message saying how to get it, never a
//! skip.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Owned copies of `words`.
fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|s| s.to_string()).collect()
}

/// What both kernel command lines end with: CPUs, kernel, initramfs, and the kernel
/// command line with the console and the guest's `scenario=…`.
fn kernel_tail(
    smp: u32,
    kernel: &std::path::Path,
    initramfs: &std::path::Path,
    console: &str,
    scenario: &str,
) -> Vec<String> {
    vec![
        "-smp".into(),
        smp.to_string(),
        "-kernel".into(),
        kernel.display().to_string(),
        "-initrd".into(),
        initramfs.display().to_string(),
        "-append".into(),
        format!("console={console} loglevel=3 scenario={scenario}"),
    ]
}

/// The QEMU command line for the aarch64 image on CPU model `cpu` (`max`, `cortex-a72`,
/// `cortex-a53`, …): `-icount shift=0,align=off,sleep=off` makes INST_RETIRED and the
/// cycle counter exact (docs/qemu.md), semihosting carries the exit code.
pub fn aarch64_virt_args(image: &std::path::Path, cpu: &str) -> Vec<String> {
    [
        "-M",
        "virt",
        "-cpu",
        cpu,
        "-m",
        "128M",
        "-smp",
        "1",
        "-nographic",
        "-nic",
        "none",
        "-monitor",
        "none",
        "-semihosting-config",
        "enable=on,target=native",
        "-icount",
        "shift=0,align=off,sleep=off",
        "-kernel",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([image.display().to_string()])
    .collect()
}

/// The QEMU program for the aarch64 image.
pub const QEMU_AARCH64: &str = "qemu-system-aarch64";

/// The QEMU command line for a bare-metal Raspberry Pi image (`kernel8.img`, …) on
/// QEMU's model of the board (`raspi3b`, `raspi4b`, …), loaded the way the board's
/// firmware loads it: a raw `-kernel` image (hw/arm/boot.c puts a 64-bit one at
/// 0x8_0000 and starts the boot core at EL2, the others in the spin table; a 32-bit one
/// at 0x1_0000, the other cores polling their mailboxes). The model's
/// four cores stay (the board has four; the image parks the other three), exact
/// counting (`-icount shift=0,align=off,sleep=off`), semihosting for the exit status.
pub fn raspi_image_args(machine: &str, image: &std::path::Path) -> Vec<String> {
    let mut args = strings(&[
        "-M",
        machine,
        "-nographic",
        "-monitor",
        "none",
        "-semihosting-config",
        "enable=on,target=native",
        "-icount",
        "shift=0,align=off,sleep=off",
        "-kernel",
    ]);
    args.push(image.display().to_string());
    args
}

/// The QEMU command line for the x86_64 image under TCG (no KVM: it cannot boot a
/// kernel on our CI machines, and TCG's missing PMU is what the image reports).
pub fn x86_64_args(image: &std::path::Path) -> Vec<String> {
    [
        "-accel",
        "tcg",
        "-M",
        "q35",
        "-cpu",
        "max",
        "-m",
        "128M",
        "-display",
        "none",
        "-serial",
        "stdio",
        "-monitor",
        "none",
        "-no-reboot",
        "-device",
        "isa-debug-exit,iobase=0xf4,iosize=0x04",
        "-icount",
        "shift=0,align=off,sleep=off",
        "-kernel",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([image.display().to_string()])
    .collect()
}

/// The QEMU program for the x86_64 image.
pub const QEMU_X86_64: &str = "qemu-system-x86_64";

/// QEMU for 32-bit ARM boards (the ARMv6 Raspberry Pis) and the armv7-virt image.
pub const QEMU_ARM: &str = "qemu-system-arm";

/// The qemu-system-arm arguments that boot the armv7-virt image on CPU model `cpu`
/// (cortex-a7 or cortex-a15) with exact instruction counting.
pub fn armv7_virt_args(image: &std::path::Path, cpu: &str) -> Vec<String> {
    // The same machine line as aarch64's, on qemu-system-arm.
    aarch64_virt_args(image, cpu)
}

/// Exit status of the armv7-virt image when every scenario passed (semihosting
/// SYS_EXIT_EXTENDED code 0). 1: a check failed; 2: panic; 3: unexpected exception.
pub const ARMV7_SUCCESS: i32 = 0;

/// Where the kernel end-to-end runs get their artefacts: `cargo xtask e2e <arch>` (and
/// `cargo xtask test`) build them and set these variables.
pub mod kernel_env {
    /// The arm64 test kernel (`Image`).
    pub const ARM64_KERNEL: &str = "PMU_KERNEL_ARM64";
    /// The arm64 initramfs (newc cpio).
    pub const ARM64_INITRAMFS: &str = "PMU_INITRAMFS_ARM64";
    /// The x86_64 test kernel (`bzImage`).
    pub const X86_64_KERNEL: &str = "PMU_KERNEL_X86_64";
    /// The x86_64 initramfs (newc cpio).
    pub const X86_64_INITRAMFS: &str = "PMU_INITRAMFS_X86_64";
    /// The armv6 (ARM1176, bcm2835) test kernel (`zImage`).
    pub const ARMV6_KERNEL: &str = "PMU_KERNEL_ARMV6";
    /// The armv6 initramfs (newc cpio).
    pub const ARMV6_INITRAMFS: &str = "PMU_INITRAMFS_ARMV6";
    /// The Raspberry Pi 3 Model B device tree, built with the arm64 kernel.
    pub const RASPI3B_DTB: &str = "PMU_DTB_RASPI3B";
    /// The Raspberry Pi Zero device tree, built with the armv6 kernel.
    pub const RASPI0_DTB: &str = "PMU_DTB_RASPI0";
    /// The Raspberry Pi 1 Model A+ device tree, built with the armv6 kernel.
    pub const RASPI1AP_DTB: &str = "PMU_DTB_RASPI1AP";
}

/// One of Debian's kernels as `cargo xtask e2e debian-<arch>` and `debian13-<arch>` hand
/// it to tests/tests/debian_arm64.rs and debian_armhf.rs: one row of the release ×
/// kernel table (xtask/src/guests/debian/run.rs `ROWS`), in the variables
/// `PMU_DEBIAN_<ID>_KERNEL`, `_RELEASE`, `_INITRAMFS` and `_PERF_VERSION`.
pub mod debian {
    /// A kernel image, its release, the initramfs made for it (its module, its perf) and
    /// the version of that perf.
    #[derive(Clone, Debug)]
    pub struct Kernel {
        /// The kernel image QEMU boots.
        pub image: String,
        /// Its `uname -r`.
        pub release: String,
        /// The initramfs.
        pub initramfs: String,
        /// The Debian version of the `linux-perf` in it (`6.1.192-3`).
        pub perf_version: String,
    }

    impl Kernel {
        /// The row `id` (`ARM64_13_7_3`), set by `cargo xtask e2e <step>`; a missing
        /// variable or file fails the test, naming the step that sets it.
        pub fn from_env(id: &str, step: &str) -> Self {
            let var = |what: &str| {
                let name = format!("PMU_DEBIAN_{id}_{what}");
                std::env::var(&name).unwrap_or_else(|_| {
                    panic!("{name} is not set: run these tests with `cargo xtask e2e {step}`")
                })
            };
            let file = |what: &str| {
                let path = var(what);
                assert!(
                    std::path::Path::new(&path).is_file(),
                    "PMU_DEBIAN_{id}_{what}={path} does not exist: run `cargo xtask e2e {step}`"
                );
                path
            };
            Kernel {
                image: file("KERNEL"),
                release: var("RELEASE"),
                initramfs: file("INITRAMFS"),
                perf_version: var("PERF_VERSION"),
            }
        }

        /// The first line of `perf --version` with spaces as `_`, as the guests report
        /// it: `perf_version_6.1.192` for linux-perf 6.1.192-3 (Debian's perf prints the
        /// upstream version, without Debian's revision).
        pub fn perf_version_line(&self) -> String {
            let upstream = self
                .perf_version
                .split('-')
                .next()
                .unwrap_or(&self.perf_version);
            format!("perf_version_{upstream}")
        }
    }
}

/// The static ARMv6 `pmu-demo` (Raspberry Pi 1 / Zero) and how to run it in user-mode
/// QEMU as an ARM1176.
pub mod armv6 {
    use std::path::PathBuf;

    /// Where `cargo xtask armv6-demo` (and `cargo xtask test`) put the binary's path.
    pub const DEMO_ENV: &str = "PMU_DEMO_ARMV6";

    /// User-mode QEMU for 32-bit ARM (Debian's qemu-user-static).
    pub const QEMU_ARM: &str = "qemu-arm-static";

    /// The CPU model: the Raspberry Pi 1's core. Its c15 PMU is a dummy readable only at
    /// PL1, so from user mode every PMU access raises SIGILL, as on a Pi without
    /// kmod-enable-user.
    pub const CPU: &str = "arm1176";

    /// The binary from [`DEMO_ENV`]; a missing one fails the test, saying how to build it.
    pub fn demo() -> PathBuf {
        super::artefact(
            DEMO_ENV,
            "`cargo xtask armv6-demo` or `cargo xtask test` (they build the static ARMv6 pmu-demo and set it)",
            "`cargo xtask armv6-demo`",
        )
    }
}

/// The path in `var`, set by `cargo xtask e2e <arch>`; a missing one fails the test.
pub fn kernel_artefact(var: &str) -> PathBuf {
    artefact(
        var,
        "`cargo xtask e2e <arch>` or `cargo xtask test` (they build the kernel, the module and the initramfs and set it)",
        "`cargo xtask e2e <arch>`",
    )
}

/// QEMU for the arm64 test kernel: `-M virt` on CPU model `cpu` with `smp` CPUs, exact
/// counting (`-icount shift=0,align=off,sleep=off`), the initramfs, and `scenario=…`
/// passed to the guest's /init. Console messages below `loglevel=3` stay in the kernel
/// log, which the guest prints itself (`KLOG` lines).
pub fn arm64_kernel_args(
    kernel: &std::path::Path,
    initramfs: &std::path::Path,
    cpu: &str,
    smp: u32,
    scenario: &str,
) -> Vec<String> {
    let mut args = strings(&[
        "-M",
        "virt",
        "-cpu",
        cpu,
        // 512 MiB: pmu-demo's 60 000-run sessions (scenario_grant) keep every run's
        // record, which outgrew 256 MiB (the OOM killer ended the run, status 137).
        "-m",
        "512M",
        "-nographic",
        "-nic",
        "none",
        "-monitor",
        "none",
        "-no-reboot",
        "-icount",
        "shift=0,align=off,sleep=off",
    ]);
    args.extend(kernel_tail(smp, kernel, initramfs, "ttyAMA0", scenario));
    args
}

/// The PSCI idle state the arm64 idle scenario gives every CPU: a power-down state
/// (`arm,psci-suspend-param` 0x10000: StateType = 1, state id 0, the original PSCI
/// power_state format; PSCI spec DEN0022, 5.4.2), so Linux's cpuidle-psci enters it
/// between cpu_pm_enter() and cpu_pm_exit() (drivers/cpuidle/cpuidle-psci.c,
/// include/linux/cpuidle.h `CPU_PM_CPU_IDLE_ENTER_PARAM`). QEMU implements CPU_SUSPEND as
/// WFI and returns (target/arm/psci.c); the CPU PM notifiers run all the same, and with
/// them arm_pmu's CPU_PM_EXIT reset of the PMU.
pub const IDLE_STATES_DTS: &str = "\tidle-states {\n\t\tentry-method = \"psci\";\n\t\tcpu_sleep: cpu-sleep {\n\t\t\tcompatible = \"arm,idle-state\";\n\t\t\tarm,psci-suspend-param = <0x10000>;\n\t\t\tentry-latency-us = <10>;\n\t\t\texit-latency-us = <10>;\n\t\t\tmin-residency-us = <20>;\n\t\t};\n\t};\n";

/// `dts` (QEMU's device tree as `dtc -O dts` prints it) with [`IDLE_STATES_DTS`] under
/// `/cpus` and `cpu-idle-states` in every `cpu@N` node; `None` when the text has no
/// `cpus` node or no CPU.
pub fn add_idle_states(dts: &str) -> Option<String> {
    let mut out = String::with_capacity(dts.len() + 512);
    let mut in_cpus = false;
    let mut cpus = 0;
    let mut added = false;
    for line in dts.lines() {
        let trimmed = line.trim();
        // The node's properties come before its subnodes: the idle states go last,
        // before the `cpus` node closes.
        if in_cpus && line.starts_with("\t};") {
            out.push_str(IDLE_STATES_DTS);
            added = true;
            in_cpus = false;
        }
        out.push_str(line);
        out.push('\n');
        if trimmed == "cpus {" {
            in_cpus = true;
        } else if in_cpus && trimmed.starts_with("cpu@") && trimmed.ends_with('{') {
            out.push_str("\t\t\tcpu-idle-states = <&cpu_sleep>;\n");
            cpus += 1;
        }
    }
    (added && cpus > 0).then_some(out)
}

/// QEMU's `-M virt` device tree for `args` (the same machine, CPU and `-smp`), with PSCI
/// idle states added ([`add_idle_states`]), compiled with `dtc` into `target/`; the
/// path, for `-dtb`. Panics with the failing step (a test helper).
pub fn arm64_idle_dtb(args: &[String], name: &str) -> PathBuf {
    patched_dtb(QEMU_AARCH64, args, &format!("{name}-idle"), |dts| {
        add_idle_states(dts).unwrap_or_else(|| panic!("QEMU's device tree has no cpus/cpu@N nodes"))
    })
}

/// QEMU's device tree for `args` run by `qemu` (`-machine dumpdtb=`), as `dtc -O dts`
/// prints it, rewritten by `patch` and compiled again into `target/dtb/<name>.dtb`; the
/// path, for `-dtb`. Panics with the failing step (a test helper).
pub fn patched_dtb(
    qemu: &str,
    args: &[String],
    name: &str,
    patch: impl FnOnce(&str) -> String,
) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/dtb");
    std::fs::create_dir_all(&dir).unwrap();
    let raw = dir.join(format!("{name}-qemu.dtb"));
    let patched = dir.join(format!("{name}.dtb"));
    let mut dump: Vec<String> = args.to_vec();
    dump.push("-machine".into());
    dump.push(format!("dumpdtb={}", raw.display()));
    let out = Command::new(qemu).args(&dump).output().unwrap();
    assert!(out.status.success() && raw.is_file(), "dumpdtb: {out:?}");
    let dts = Command::new("dtc")
        .args(["-q", "-I", "dtb", "-O", "dts"])
        .arg(&raw)
        .output()
        .unwrap_or_else(|e| {
            panic!("dtc (Debian's device-tree-compiler; `cargo xtask setup` installs it): {e}")
        });
    assert!(dts.status.success(), "dtc -O dts: {dts:?}");
    let text = patch(&String::from_utf8_lossy(&dts.stdout));
    let src = dir.join(format!("{name}.dts"));
    std::fs::write(&src, text).unwrap();
    let dtb = Command::new("dtc")
        .args(["-q", "-I", "dts", "-O", "dtb", "-o"])
        .arg(&patched)
        .arg(&src)
        .output()
        .unwrap();
    assert!(dtb.status.success(), "dtc -O dtb: {dtb:?}");
    patched
}

/// `dts` (QEMU `virt`'s device tree for a 32-bit CPU, as `dtc -O dts` prints it) with its
/// empty `pmu` node given `compatible` and the PMU's interrupt: QEMU's virt board wires
/// every CPU's PMU overflow output to PPI 7 (hw/arm/virt.c `VIRTUAL_PMU_IRQ`, connected
/// for every CPU in `create_gic`) but describes the PMU only for AArch64 CPUs
/// (`fdt_add_pmu_nodes` adds `arm,armv8-pmuv3` and the interrupt under
/// `ARM_FEATURE_AARCH64` alone). The interrupt's flags (the PPI's CPU mask and level
/// trigger) are copied from the `timer` node's first interrupt, which QEMU builds the
/// same way. Linux's arm_pmu then probes the ARMv7 driver for `arm,cortex-a15-pmu`
/// (drivers/perf/arm_v7_pmu.c `armv7_pmu_of_device_ids`). `None` without an empty `pmu`
/// node or a `timer` node with interrupts.
pub fn add_arm32_pmu(dts: &str, compatible: &str) -> Option<String> {
    let mut in_timer = false;
    let mut flags = None;
    for line in dts.lines() {
        let trimmed = line.trim();
        if trimmed == "timer {" {
            in_timer = true;
        } else if in_timer && trimmed.starts_with("interrupts = <") {
            // `<0x01 0x0d 0x304 ...>`: type, number, flags of each interrupt.
            flags = trimmed
                .trim_start_matches("interrupts = <")
                .split_whitespace()
                .nth(2)
                .map(str::to_owned);
            break;
        }
    }
    let flags = flags?;
    let node = format!(
        "\tpmu {{\n\t\tinterrupts = <0x01 0x07 {flags}>;\n\t\tcompatible = \"{compatible}\";\n\t}};"
    );
    let empty = "\tpmu {\n\t};";
    dts.contains(empty).then(|| dts.replacen(empty, &node, 1))
}

/// QEMU `virt`'s device tree for `args` (a 32-bit CPU, `qemu-system-arm`) with a PMU
/// node ([`add_arm32_pmu`]), compiled into `target/dtb/<name>-pmu.dtb`.
pub fn arm32_pmu_dtb(args: &[String], name: &str, compatible: &str) -> PathBuf {
    patched_dtb(QEMU_ARM, args, &format!("{name}-pmu"), |dts| {
        add_arm32_pmu(dts, compatible)
            .unwrap_or_else(|| panic!("QEMU's device tree has no empty pmu node or no timer"))
    })
}

/// The SPIs the two PMU nodes of [`add_big_little_pmus`] take, one per CPU: QEMU `virt`
/// wires nothing to them (hw/arm/virt.c uses SPIs below 176), so they never fire. A PMU
/// node with one SPI per CPU and `interrupt-affinity` is how Linux learns which CPUs a
/// PMU covers (6.12 drivers/perf/arm_pmu_platform.c `pmu_parse_irqs`); the one PPI of
/// QEMU's own node would cover every CPU.
pub const BIG_LITTLE_FIRST_SPI: u32 = 200;

/// `dts` (QEMU `virt`'s device tree as `dtc -O dts` prints it) with its `pmu` node
/// replaced by two, as a big.LITTLE board declares them: `arm,cortex-a53-pmu` over the
/// first half of the CPUs and `arm,cortex-a72-pmu` over the rest, each with one SPI
/// per CPU and `interrupt-affinity` (Documentation/devicetree/bindings/arm/pmu.yaml).
/// Linux then registers `armv8_cortex_a53` and `armv8_cortex_a72` (drivers/perf/
/// arm_pmuv3.c), each counting on its CPUs only. `None` without a `pmu` node or with
/// fewer than two CPUs.
pub fn add_big_little_pmus(dts: &str) -> Option<String> {
    // Every cpu@N's phandle, in N order.
    let mut phandles = Vec::new();
    let mut in_cpu = false;
    for line in dts.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("cpu@") && trimmed.ends_with('{') {
            in_cpu = true;
        } else if in_cpu && trimmed.starts_with("phandle = <") {
            phandles.push(
                trimmed
                    .trim_start_matches("phandle = <")
                    .trim_end_matches(">;")
                    .to_owned(),
            );
            in_cpu = false;
        } else if in_cpu && trimmed == "};" {
            return None;
        }
    }
    if phandles.len() < 2 {
        return None;
    }
    let (little, big) = phandles.split_at(phandles.len() / 2);
    let node = |name: &str, compatible: &str, cpus: &[String], first_spi: u32| {
        let irqs: Vec<String> = (0..cpus.len() as u32)
            .map(|i| format!("0x00 {:#x} 0x04", first_spi + i))
            .collect();
        format!(
            "\t{name} {{\n\t\tcompatible = \"{compatible}\";\n\t\tinterrupts = <{}>;\n\t\tinterrupt-affinity = <{}>;\n\t}};\n",
            irqs.join(" "),
            cpus.join(" ")
        )
    };
    let nodes = node(
        "pmu-little",
        "arm,cortex-a53-pmu",
        little,
        BIG_LITTLE_FIRST_SPI,
    ) + &node(
        "pmu-big",
        "arm,cortex-a72-pmu",
        big,
        BIG_LITTLE_FIRST_SPI + little.len() as u32,
    );
    let mut out = String::with_capacity(dts.len() + nodes.len());
    let mut in_pmu = false;
    let mut replaced = false;
    for line in dts.lines() {
        if line == "\tpmu {" {
            in_pmu = true;
            continue;
        }
        if in_pmu {
            if line == "\t};" {
                in_pmu = false;
                out.push_str(&nodes);
                replaced = true;
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    replaced.then_some(out)
}

/// QEMU `virt`'s device tree for `args`, dumped (`-machine dumpdtb=`) and rewritten by
/// [`add_big_little_pmus`], compiled into `target/dtb/<name>-big-little.dtb`.
pub fn arm64_big_little_dtb(args: &[String], name: &str) -> PathBuf {
    patched_dtb(QEMU_AARCH64, args, &format!("{name}-big-little"), |dts| {
        add_big_little_pmus(dts)
            .unwrap_or_else(|| panic!("QEMU's device tree has no pmu node or fewer than 2 CPUs"))
    })
}

/// QEMU for an emulated Raspberry Pi board (`raspi3b`, `raspi0`, `raspi1ap`): the board's
/// own device tree `dtb`, its RAM size and CPUs (QEMU fixes both per board), the PL011
/// UART (`ttyAMA0`) on stdio. The boards have no PSCI: the kernel's power-off goes
/// through the BCM2835 watchdog, which QEMU turns into a reset that `-no-reboot` ends.
/// `icount` adds `-icount shift=0,align=off,sleep=off` (exact counting, arm64 only);
/// `flavour` (`rust` or `stock`) picks the module file the guest loads.
pub fn raspi_args(
    board: &str,
    kernel: &std::path::Path,
    dtb: &std::path::Path,
    initramfs: &std::path::Path,
    scenario: &str,
    flavour: &str,
    icount: bool,
) -> Vec<String> {
    let mut args = strings(&[
        "-M",
        board,
        "-nographic",
        "-monitor",
        "none",
        "-no-reboot",
        "-dtb",
    ]);
    args.push(dtb.display().to_string());
    if icount {
        args.extend(strings(&["-icount", "shift=0,align=off,sleep=off"]));
    }
    args.extend(strings(&["-kernel"]));
    args.push(kernel.display().to_string());
    args.extend(strings(&["-initrd"]));
    args.push(initramfs.display().to_string());
    args.extend(strings(&["-append"]));
    args.push(format!(
        "console=ttyAMA0 loglevel=3 rdinit=/init scenario={scenario} flavour={flavour}"
    ));
    args
}

/// QEMU for the x86_64 test kernel under TCG (q35, `-cpu max`, `smp` CPUs).
///
/// One TCG thread for all vCPUs (`thread=single`, round-robin), not QEMU's default
/// multi-threaded TCG for x86 on an x86 host: on a loaded 2-core machine, QEMU
/// 10.0.2's multi-threaded TCG failed 2 of 218 boots of this kernel (one hung with
/// the LAPIC timer of the idle vCPUs no longer firing: RCU "timer wakeup didn't
/// happen", every vCPU halted with interrupts on; one aborted in QEMU's
/// `iotlb_to_section` assertion), the single-threaded one none of 120 boots, in
/// about the same time (docs/qemu.md, "x86_64 under TCG").
pub fn x86_64_kernel_args(
    kernel: &std::path::Path,
    initramfs: &std::path::Path,
    smp: u32,
    scenario: &str,
) -> Vec<String> {
    let mut args = strings(&[
        "-accel",
        "tcg,thread=single",
        "-M",
        "q35",
        "-cpu",
        "max",
        "-m",
        "256M",
        "-display",
        "none",
        "-serial",
        "stdio",
        "-monitor",
        "none",
        "-no-reboot",
    ]);
    args.extend(kernel_tail(smp, kernel, initramfs, "ttyS0", scenario));
    args
}

/// Exit status of the aarch64 image when every scenario passed (semihosting SYS_EXIT
/// code 0). 1: a scenario failed; 2: panic; 3: unexpected exception.
pub const AARCH64_SUCCESS: i32 = 0;

/// Exit status of the x86_64 image when every scenario passed or was skipped:
/// isa-debug-exit turns the written 0x10 into (0x10 << 1) | 1 = 33. 35: a scenario
/// failed; 37: panic or unexpected exception (qemu/x86_64/src/exit.rs).
pub const X86_64_SUCCESS: i32 = 33;

/// One `RESULT` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResultLine {
    /// The scenario (second word).
    pub scenario: String,
    /// The `key=value` pairs.
    pub fields: BTreeMap<String, String>,
    /// The line as printed.
    pub raw: String,
}

impl ResultLine {
    /// The value of `key`, panicking with the line when it is absent (a test failure).
    pub fn get(&self, key: &str) -> &str {
        self.fields
            .get(key)
            .unwrap_or_else(|| panic!("`{key}` missing in: {}", self.raw))
    }

    /// `key` parsed as an integer (decimal, or hex with 0x).
    pub fn int(&self, key: &str) -> i128 {
        let v = self.get(key);
        let parsed = match v.strip_prefix("0x") {
            Some(hex) => i128::from_str_radix(hex, 16),
            None => v.parse(),
        };
        parsed.unwrap_or_else(|_| panic!("`{key}={v}` is not an integer in: {}", self.raw))
    }
}

/// Every `RESULT` line of `output`, in order.
pub fn parse_results(output: &str) -> Vec<ResultLine> {
    output
        .lines()
        .filter_map(|line| {
            let line = line.trim_end_matches('\r');
            let rest = line.strip_prefix("RESULT ")?;
            let mut words = rest.split_whitespace();
            let scenario = words.next()?.to_string();
            let fields = words
                .filter_map(|w| w.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            Some(ResultLine {
                scenario,
                fields,
                raw: line.to_string(),
            })
        })
        .collect()
}

/// What a QEMU run gave.
#[derive(Debug)]
pub struct QemuRun {
    /// Console output.
    pub stdout: String,
    /// Exit status code (None when killed by a signal or the time limit).
    pub code: Option<i32>,
    /// Whether the time limit killed it.
    pub timed_out: bool,
    /// The RESULT lines.
    pub results: Vec<ResultLine>,
}

impl QemuRun {
    /// Panics if the time limit `limit` ended the run, with what the guest printed: its
    /// last lines, or that it printed nothing (a hang before the guest's first line: the
    /// kernels boot with `loglevel=3`, so only emergency messages reach the console).
    #[track_caller]
    pub fn assert_finished_within(&self, limit: Duration) {
        if !self.timed_out {
            return;
        }
        let lines: Vec<&str> = self.stdout.lines().collect();
        let tail = lines[lines.len().saturating_sub(60)..].join("\n");
        if tail.trim().is_empty() {
            panic!(
                "QEMU ran past {limit:?} (a hang guard, far above a normal run) and the guest printed nothing: it hung before its first line"
            );
        }
        panic!(
            "QEMU ran past {limit:?} (a hang guard, far above a normal run); the guest printed {} lines, the last {}:\n{tail}",
            lines.len(),
            lines.len().min(60)
        );
    }

    /// The stress scenario's `cycles` line (tests/guest/common.sh `stress_cycles`):
    /// `n` load/unload cycles without a load or unload failure, the module not loaded
    /// and no hotplug state left at the end, and no leak of the module.
    pub fn assert_stress_cycles(&self, n: i128) -> &ResultLine {
        let cycles = self.scenario("cycles")[0];
        assert_eq!(cycles.int("n"), n, "{}", cycles.raw);
        assert_eq!(
            (
                cycles.int("load_failures"),
                cycles.int("unload_failures"),
                cycles.int("loaded"),
                cycles.int("states")
            ),
            (0, 0, 0, 0),
            "{}",
            cycles.raw
        );
        self.assert_no_module_leak(cycles);
        cycles
    }

    /// The stress scenario's leak verdict (its `cycles` line): kmemleak
    /// (CONFIG_DEBUG_KMEMLEAK) finds no object allocated
    /// through module load/unload or hotplug paths (tests/guest/kmemleak.awk) after the
    /// cycles (a leaked per-CPU array or hotplug state would be one per cycle). Objects
    /// of the kernel's own (kmemleak's false positives: 9 of 220 stress runs here,
    /// the creds of a fork or execve in flight) are tolerated, but not one per cycle:
    /// a module leak whose backtrace the sorter missed would be at least that many.
    pub fn assert_no_module_leak(&self, cycles: &ResultLine) {
        let report = self.lines_with("KMEMLEAK").join("\n");
        assert_eq!(
            cycles.int("kmemleak_module"),
            0,
            "kmemleak found leaks of the module\n{report}"
        );
        assert!(
            cycles.int("kmemleak_other") < cycles.int("n"),
            "{}\n{report}",
            cycles.raw
        );
    }

    /// The RESULT lines of `scenario`.
    pub fn scenario(&self, scenario: &str) -> Vec<&ResultLine> {
        self.results
            .iter()
            .filter(|r| r.scenario == scenario)
            .collect()
    }

    /// The lines of the guest that start with `prefix ` (`KLOG`, `STDERR <tag>`, …),
    /// without the prefix.
    pub fn lines_with(&self, prefix: &str) -> Vec<&str> {
        let prefix = format!("{prefix} ");
        self.stdout
            .lines()
            .map(|l| l.trim_end_matches('\r'))
            .filter_map(|l| l.strip_prefix(prefix.as_str()))
            .collect()
    }

    /// The kernel log lines (`KLOG` prefix removed) that contain `text`.
    pub fn klog(&self, text: &str) -> Vec<&str> {
        self.lines_with("KLOG")
            .into_iter()
            .filter(|l| l.contains(text))
            .collect()
    }

    /// Fails the test unless some kernel log line contains `text`.
    pub fn assert_klog(&self, text: &str) {
        assert!(
            !self.klog(text).is_empty(),
            "no kernel log line with `{text}`\n{}",
            self.stdout
        );
    }

    /// Fails the test unless CPU 1 of a two-CPU guest was offline while the guest's
    /// `during` result was taken (`offline_rc=0 online=0`) and back online for its
    /// `after` result (`online_rc=0 online=0-1`): what a whole-program instruction count
    /// on CPU 0 needs under icount, where QEMU's INST_RETIRED is the instruction count of
    /// every vCPU (docs/qemu.md).
    #[track_caller]
    pub fn assert_cpu1_offline_between(&self, during: &str, after: &str) {
        let cpus = &self.scenario(during)[0];
        assert_eq!(
            (cpus.int("offline_rc"), cpus.get("online")),
            (0, "0"),
            "{}",
            cpus.raw
        );
        let back = &self.scenario(after)[0];
        assert_eq!(
            (back.int("online_rc"), back.get("online")),
            (0, "0-1"),
            "{}",
            back.raw
        );
    }

    /// Fails the test unless the guest's script ran to its end (`RESULT done`).
    pub fn assert_guest_finished(&self) {
        assert_eq!(
            self.scenario("done").len(),
            1,
            "the guest did not finish its script\n{}",
            self.stdout
        );
    }

    /// The one RESULT line of `scenario` whose `key` is `value`.
    pub fn find(&self, scenario: &str, key: &str, value: &str) -> &ResultLine {
        let found: Vec<_> = self
            .scenario(scenario)
            .into_iter()
            .filter(|r| r.fields.get(key).map(String::as_str) == Some(value))
            .collect();
        match found.as_slice() {
            [one] => one,
            _ => panic!(
                "expected one `RESULT {scenario} … {key}={value}` line, found {}\n--- output ---\n{}",
                found.len(),
                self.stdout
            ),
        }
    }
}

/// The image path from `var`, which `cargo xtask test` sets.
pub fn image(var: &str) -> PathBuf {
    artefact(
        var,
        "`cargo xtask test` (it builds the images and sets it)",
        "`cargo xtask test`",
    )
}

/// The file named by the environment variable `var`, which the xtask command `set_by`
/// sets; a missing variable or file fails the test, saying to run `rebuild`. Never a
/// skip.
fn artefact(var: &str, set_by: &str, rebuild: &str) -> PathBuf {
    let path = std::env::var_os(var)
        .unwrap_or_else(|| panic!("{var} is not set: run these tests with {set_by}"));
    let path = PathBuf::from(path);
    assert!(
        path.is_file(),
        "{var}={} does not exist: run {rebuild}",
        path.display()
    );
    path
}

/// Runs `program args` with a time limit, capturing stdout (stderr is inherited).
pub fn run_qemu(program: &str, args: &[String], limit: Duration) -> QemuRun {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot start {program}: {e} — `cargo xtask test` installs QEMU (apt, bookworm-backports)")
        });
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout.read_to_end(&mut buf);
        buf
    });
    let start = Instant::now();
    let (code, timed_out) = loop {
        if let Some(status) = child.try_wait().expect("waiting for QEMU") {
            break (status.code(), false);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break (None, true);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = String::from_utf8_lossy(&reader.join().expect("reader thread")).into_owned();
    let results = parse_results(&stdout);
    QemuRun {
        stdout,
        code,
        timed_out,
        results,
    }
}

/// Like [`run_qemu`], but ends QEMU as soon as its output contains `marker` (for an
/// image that, as on a real board, waits forever once it is done). `timed_out` is
/// false when the marker ended the run.
pub fn run_qemu_until(program: &str, args: &[String], limit: Duration, marker: &str) -> QemuRun {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot start {program}: {e} — `cargo xtask test` installs QEMU (apt, bookworm-backports)")
        });
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let start = Instant::now();
    let mut bytes = Vec::new();
    let (code, timed_out) = loop {
        while let Ok(chunk) = rx.try_recv() {
            bytes.extend_from_slice(&chunk);
        }
        if String::from_utf8_lossy(&bytes).contains(marker) {
            let _ = child.kill();
            let _ = child.wait();
            break (None, false);
        }
        if let Some(status) = child.try_wait().expect("waiting for QEMU") {
            while let Ok(chunk) = rx.recv_timeout(Duration::from_millis(200)) {
                bytes.extend_from_slice(&chunk);
            }
            break (status.code(), false);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break (None, true);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = String::from_utf8_lossy(&bytes).into_owned();
    let results = parse_results(&stdout);
    QemuRun {
        stdout,
        code,
        timed_out,
        results,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_little_pmu_nodes() {
        // The shape of QEMU 10.0 `virt`'s dump (`-smp 4`, `dtc -O dts`), shortened.
        let dts = "/ {\n\tinterrupt-parent = <0x8005>;\n\n\tpmu {\n\t\tinterrupts = <0x01 0x07 0xf04>;\n\t\tcompatible = \"arm,armv8-pmuv3\";\n\t};\n\n\tcpus {\n\t\tcpu@0 {\n\t\t\tphandle = <0x8004>;\n\t\t\treg = <0x00>;\n\t\t};\n\n\t\tcpu@1 {\n\t\t\tphandle = <0x8003>;\n\t\t};\n\n\t\tcpu@2 {\n\t\t\tphandle = <0x8002>;\n\t\t};\n\n\t\tcpu@3 {\n\t\t\tphandle = <0x8001>;\n\t\t};\n\t};\n};\n";
        let out = add_big_little_pmus(dts).unwrap();
        assert!(
            !out.contains("arm,armv8-pmuv3") && !out.contains("0xf04"),
            "{out}"
        );
        assert!(out.contains("\tpmu-little {\n\t\tcompatible = \"arm,cortex-a53-pmu\";\n\t\tinterrupts = <0x00 0xc8 0x04 0x00 0xc9 0x04>;\n\t\tinterrupt-affinity = <0x8004 0x8003>;\n\t};\n"), "{out}");
        assert!(out.contains("\tpmu-big {\n\t\tcompatible = \"arm,cortex-a72-pmu\";\n\t\tinterrupts = <0x00 0xca 0x04 0x00 0xcb 0x04>;\n\t\tinterrupt-affinity = <0x8002 0x8001>;\n\t};\n"), "{out}");
        assert!(out.contains("\tcpus {"));
        assert_eq!(
            add_big_little_pmus(&dts.replace("\tpmu {", "\tpmux {")),
            None
        );
    }

    #[test]
    fn arm32_pmu_node() {
        // The shape of QEMU 10.0 `qemu-system-arm -M virt -cpu cortex-a15 -smp 2`'s dump
        // (`dtc -O dts`), shortened: an empty pmu node, the timer's four PPIs.
        let dts = "/ {\n\tpmu {\n\t};\n\n\ttimer {\n\t\tinterrupts = <0x01 0x0d 0x304 0x01 0x0e 0x304 0x01 0x0b 0x304 0x01 0x0a 0x304>;\n\t\talways-on;\n\t};\n};\n";
        let out = add_arm32_pmu(dts, "arm,cortex-a15-pmu").unwrap();
        assert!(out.contains("\tpmu {\n\t\tinterrupts = <0x01 0x07 0x304>;\n\t\tcompatible = \"arm,cortex-a15-pmu\";\n\t};\n"), "{out}");
        assert_eq!(add_arm32_pmu(&out, "arm,cortex-a15-pmu"), None);
        assert_eq!(
            add_arm32_pmu(&dts.replace("timer {", "clock {"), "arm,cortex-a15-pmu"),
            None
        );
    }

    #[test]
    fn parses_result_lines() {
        let out = "boot\nRESULT exact model=max k=100 inst=100 hazards=none\r\nnoise RESULT x\nRESULT summary pass=3 fail=0\n";
        let r = parse_results(out);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].scenario, "exact");
        assert_eq!(r[0].int("k"), 100);
        assert_eq!(r[0].get("hazards"), "none");
        assert_eq!(r[1].int("fail"), 0);
    }
}

/// The `pmu-demo` runs of a guest script (`demo TAG …` in tests/guest/common.sh): its
/// `RESULT demo tag=TAG … status=N`, `JSON TAG {…}` and `STDERR TAG …` lines.
pub mod guest {
    use serde_json::Value;

    use crate::QemuRun;

    /// `thread-grant exact C ITER` for 10000 and 20000 iterations (tests/guest/
    /// thread_grant.rs): the read traps before the grant and after close, GRANT succeeds
    /// with the counters following the thread, and the block between the two reads is 2
    /// instructions per iteration (`subs`, `b.ne`: Arm ARM INST_RETIRED counts each
    /// executed instruction once, exact under -icount) plus the read's own few: the two
    /// differ by exactly 20000.
    pub fn assert_thread_grant_exact(run: &QemuRun) {
        let exact = |iter: i128| {
            let line = run.find("thread-exact", "iterations", &iter.to_string());
            assert_eq!(
                (
                    line.int("read_before_grant"),
                    line.int("grant_errno"),
                    line.int("follow"),
                    line.int("read_after_close")
                ),
                (0, 0, 1, 0),
                "{}",
                line.raw
            );
            let delta = line.int("delta");
            assert!((2 * iter..2 * iter + 50).contains(&delta), "{}", line.raw);
            delta
        };
        assert_eq!(exact(20_000) - exact(10_000), 20_000);
    }

    /// `perf stat -a -e cycles:u,instructions:u -I 100 -x,` (PERFSTAT lines:
    /// `time,count,unit,event,…`) across insmod, CPU offline/online, idle and rmmod: every
    /// interval of both events counted (no `<not counted>`), none above 10^9 (a jump is at
    /// least 2^31: perf adds `(new - prev) & max_period` per read, so a counter zeroed or
    /// reset under it reads as a step near its period, drivers/perf/arm_pmu.c
    /// `armpmu_event_update`), and over the whole session as many cycles as instructions
    /// within 1% + 1000: under icount shift=0 each instruction takes one cycle (docs/qemu.md;
    /// perf prints "1.00 insn per cycle"), so a cycle count that stops (a frozen or taken
    /// cycle counter) or jumps while the instructions go on is caught. (The two events
    /// start and stop a few hundred instructions apart.) Not interval by interval: perf
    /// reads the two events one after the other at each interval's end, and whatever the
    /// other CPUs run between those reads (how long depends on the guest's scheduling, not
    /// on the counters) lands in one interval's instructions and the next one's cycles:
    /// 2.4% apart in one 0.1 s interval of Debian's arm64 6.12 in one of four runs, and
    /// equal over the session. Sums cancel that skew; a counter that stopped or jumped
    /// does not. The session ends with the run's `wide-perf` line: SIGINT's status.
    pub fn assert_perf_wide_no_jump(run: &QemuRun) {
        let lines = run.lines_with("PERFSTAT");
        let mut per_event = std::collections::BTreeMap::<String, Vec<i128>>::new();
        let mut per_time = std::collections::BTreeMap::<String, Vec<(String, i128)>>::new();
        for line in &lines {
            let fields: Vec<&str> = line.split(',').collect();
            if fields.len() < 4 || fields[0].trim().parse::<f64>().is_err() {
                continue; // perf's comment header
            }
            let count = fields[1].trim().parse::<i128>().unwrap_or_else(|_| {
                panic!(
                    "perf stat -a: an interval not counted: {line}\n{}",
                    run.stdout
                )
            });
            assert!(
                count <= 1_000_000_000,
                "perf stat -a jumped: {line}\n{}",
                lines.join("\n")
            );
            per_event
                .entry(fields[3].to_string())
                .or_default()
                .push(count);
            per_time
                .entry(fields[0].trim().to_string())
                .or_default()
                .push((fields[3].to_string(), count));
        }
        let (mut cycles, mut inst) = (0i128, 0i128);
        for counts in per_time.values() {
            let get = |event: &str| counts.iter().find(|(e, _)| e == event).map(|(_, c)| *c);
            if let (Some(c), Some(i)) = (get("cycles:u"), get("instructions:u")) {
                cycles += c;
                inst += i;
            }
        }
        assert!(
            (cycles - inst).abs() <= inst / 100 + 1000,
            "perf stat -a over the session: cycles:u {cycles}, instructions:u {inst} (one cycle per instruction under icount)\n{}",
            lines.join("\n")
        );
        for (event, counts) in &per_event {
            println!(
                "perf stat -a {event}: {} intervals, largest {}",
                counts.len(),
                counts.iter().max().unwrap_or(&0)
            );
        }
        for event in ["cycles:u", "instructions:u"] {
            let counts = per_event.get(event).map(Vec::len).unwrap_or(0);
            assert!(
                counts >= 10,
                "{event}: {counts} intervals\n{}",
                lines.join("\n")
            );
        }
        let perf = &run.scenario("wide-perf")[0];
        // Ended by SIGINT, as at a terminal: perf stat prints its last interval and exits
        // with the signal's status (130 = 128 + SIGINT in the shell; measured with Debian's
        // perf 6.1.192); anything else is a crash or an error.
        assert_eq!(perf.int("status"), 130, "{}", perf.raw);
    }

    /// What pmu-demo prints on stderr when direct access is not enabled (its exit
    /// status 3: userspace-demo's main.rs).
    pub const NOT_ENABLED: &str = "user access to the PMU is not enabled: load kmod-enable-user";

    /// The pmu-demo run `tag`: its exit status, JSON output (if any) and stderr.
    pub struct Demo {
        /// Exit status (a signal would show as 128 + n through the shell).
        pub status: i128,
        /// `--json` output, when it parsed.
        pub json: Option<Value>,
        /// stderr, one line per `STDERR` line.
        pub stderr: String,
        /// The `RESULT demo` line, for messages.
        pub raw: String,
    }

    /// The run `tag` of `run`; fails the test unless exactly one `RESULT demo` line has
    /// that tag.
    pub fn demo(run: &QemuRun, tag: &str) -> Demo {
        let line = run.find("demo", "tag", tag);
        let json_line = run
            .lines_with("JSON")
            .into_iter()
            .find_map(|l| l.strip_prefix(&format!("{tag} ")).map(str::to_string))
            .unwrap_or_default();
        Demo {
            status: line.int("status"),
            json: serde_json::from_str(json_line.trim()).ok(),
            stderr: run.lines_with(&format!("STDERR {tag}")).join("\n"),
            raw: line.raw.clone(),
        }
    }

    impl Demo {
        /// Exit status 3 and the one-line reason on stderr; no crash.
        pub fn assert_not_enabled(&self, run: &QemuRun) {
            assert_eq!(self.status, 3, "{}\n{}", self.raw, run.stdout);
            assert!(
                self.stderr.contains(NOT_ENABLED),
                "`{NOT_ENABLED}` missing from pmu-demo's stderr: {}\n{}",
                self.stderr,
                run.stdout
            );
        }

        /// The whole JSON object (`backend`, `notes`, `results`, …); the run must have
        /// succeeded.
        pub fn json(&self, run: &QemuRun) -> &Value {
            assert_eq!(self.status, 0, "{}\n{}", self.raw, run.stdout);
            self.json
                .as_ref()
                .unwrap_or_else(|| panic!("no JSON for {}\n{}", self.raw, run.stdout))
        }

        /// The result of the one workload measured (`loop`): `expected_instructions`,
        /// `fast_read`, `fallback_reason`, `events`, …
        pub fn result(&self, run: &QemuRun) -> &Value {
            let json = self.json(run);
            let result = &json["results"][0];
            assert_eq!(result["workload"], "loop", "{json}");
            result
        }

        /// The direct backend measured the `loop` workload's 1000 iterations of
        /// `subs; bne` (userspace-demo workloads.rs) as exactly 2000 instructions, min and
        /// median (the max may hold what another vCPU ran: QEMU's INST_RETIRED is the
        /// global icount, docs/qemu.md). Returns the whole JSON for further checks.
        pub fn assert_direct_loop_exact<'a>(&'a self, run: &QemuRun, tag: &str) -> &'a Value {
            let json = self.json(run);
            assert_eq!(json["backend"], "direct", "{tag}: {json}");
            assert_eq!(
                self.result(run)["expected_instructions"],
                2000,
                "{tag}: {json}"
            );
            let inst = self.event(run, "instructions");
            assert_eq!(inst["min"], 2000, "{tag}: {json}");
            assert_eq!(inst["median"], 2000, "{tag}: {json}");
            json
        }

        /// The event `name` of that result (`min`, `median`, `max`, `clean_runs`, …).
        pub fn event<'a>(&'a self, run: &QemuRun, name: &str) -> &'a Value {
            self.result(run)["events"]
                .as_array()
                .and_then(|events| events.iter().find(|e| e["name"] == name))
                .unwrap_or_else(|| panic!("no event `{name}` in {}\n{}", self.raw, run.stdout))
        }
    }
}
