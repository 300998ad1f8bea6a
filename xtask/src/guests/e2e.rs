//! Kernel end-to-end runs: the cached test kernel, kmod-enable-user built against it and
//! the initramfs, booted in QEMU (TCG) by the tests in `tests/tests/kernel_<arch>.rs`,
//! which read the artefacts' paths from `PMU_KERNEL_<ARCH>`, `PMU_INITRAMFS_<ARCH>` and
//! `PMU_MODULE_<ARCH>`.

use std::process::Command;

use crate::build::images::E2E_CRATE;
use crate::build::kernel::{self, Arch};
use crate::engine::paths::workspace_root;
use crate::engine::step::Step;

/// This module's commands in `cargo xtask help`.
pub const USAGE: &str = "    e2e <x86_64|arm64>
                      Kernel, module, initramfs (busybox-static, static pmu-demo,
                      the module), then boot them in QEMU TCG and assert on the
                      guest's RESULT lines (tests/tests/kernel_<arch>.rs).
";

/// Kernel (cached), module and initramfs of `arch`, then its end-to-end tests.
pub fn run(arch: Arch) -> Result<(), String> {
    let kernel = kernel::kernel(arch)?;
    let ko = kernel::module(arch)?;
    // arm64: the stock-kernel flavour too; the same scenarios run once per flavour.
    let stock = match arch {
        Arch::Arm64 => Some(crate::build::stock_module::arm64_test_kernel()?),
        Arch::X86_64 | Arch::Armv6 | Arch::Armv7 => None,
    };
    let initramfs = crate::build::initramfs::build(arch, Some(&ko), stock.as_deref())?;
    let [k, i, m] = arch.env_names();
    let test = format!("kernel_{}", arch.name());
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    println!(
        "    $ {k}={} {i}={} cargo test -p {E2E_CRATE} --test {test}",
        kernel.image().display(),
        initramfs.display()
    );
    // PMU_E2E_FILTER: run only the tests whose names contain it (cargo test's filter).
    let filter = std::env::var("PMU_E2E_FILTER").ok();
    if let Some(filter) = &filter {
        println!("    (PMU_E2E_FILTER: only tests matching {filter:?})");
    }
    let status = Command::new(cargo)
        .args([
            "test",
            "-p",
            E2E_CRATE,
            "--test",
            &test,
            "--",
            "--test-threads=2",
        ])
        .args(filter)
        .env(k, kernel.image())
        .env(i, &initramfs)
        .env(m, &ko)
        .current_dir(workspace_root())
        .status()
        .map_err(|e| format!("cannot run cargo test: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "the {} end-to-end tests failed ({status})",
            arch.name()
        ))
    }
}

fn e2e_x86_64() -> Result<(), String> {
    run(Arch::X86_64)
}

fn e2e_arm64() -> Result<(), String> {
    run(Arch::Arm64)
}

/// The step that builds the initramfs of `arch` and runs its end-to-end tests (armv6:
/// the emulated Raspberry Pis, arm64's Pi 3 included).
pub fn e2e_step(arch: Arch) -> Step {
    let what = if arch == Arch::Armv6 {
        "emulated Raspberry Pis: raspi3b (arm64 kernel + DTB, both module flavours), raspi0 and raspi1ap (armv6 kernel, stock module, ARMv6 pmu-demo) (tests/tests/raspi.rs)".to_string()
    } else {
        format!(
            "kernel end-to-end tests, {} (initramfs, QEMU TCG, tests/tests/kernel_{}.rs)",
            arch.name(),
            arch.name()
        )
    };
    let step = match arch {
        Arch::X86_64 => Step::func(what, e2e_x86_64),
        Arch::Arm64 => Step::func(what, e2e_arm64),
        Arch::Armv6 => Step::func(what, crate::guests::raspi::run),
        Arch::Armv7 => crate::guests::armv7::virt_step(),
    };
    step.needs_programs(match arch {
        Arch::X86_64 => &[pmu_tests::QEMU_X86_64],
        // The idle scenario compiles a device tree with dtc (tests/src/lib.rs).
        Arch::Arm64 => &[pmu_tests::QEMU_AARCH64, "dtc"],
        // raspi3b (arm64) next to raspi0 and raspi1ap.
        Arch::Armv6 => &[pmu_tests::QEMU_AARCH64, pmu_tests::QEMU_ARM],
        Arch::Armv7 => &[pmu_tests::QEMU_ARM],
    })
    .needs_programs(crate::build::initramfs::PROGRAMS)
}

/// The kernel part of `cargo xtask test` (its tools are installed at the start of the
/// plan): the four kernels, one after the other (each `make` uses both cores), then in
/// two lanes at once the modules, the runs, the emulated Raspberry Pis and Debian's
/// kernels. Most guests run under `-icount`, where TCG uses one host thread.
pub fn test_steps() -> Vec<Step> {
    let mut steps = Vec::new();
    for arch in [Arch::X86_64, Arch::Arm64, Arch::Armv6, Arch::Armv7] {
        steps.push(crate::guests::modules::kernel_step(arch));
    }
    steps.push(
        crate::guests::modules::module_step(Arch::X86_64).in_lane(crate::engine::lanes::OTHER_LANE),
    );
    steps.push(
        crate::guests::modules::module_step(Arch::Arm64).in_lane(crate::engine::lanes::ARM64_LANE),
    );
    steps.extend(crate::guests::modules::stock_module_steps());
    steps.push(e2e_step(Arch::X86_64).in_lane(crate::engine::lanes::OTHER_LANE));
    steps.push(e2e_step(Arch::Arm64).in_lane(crate::engine::lanes::ARM64_LANE));
    steps.push(e2e_step(Arch::Armv6).in_lane(crate::engine::lanes::ARM64_LANE));
    steps.push(crate::guests::armv7::raspi2b_step().in_lane(crate::engine::lanes::OTHER_LANE));
    steps.push(crate::guests::armv7::virt_step().in_lane(crate::engine::lanes::OTHER_LANE));
    for run in crate::guests::debian::run::RUNS {
        steps.push(crate::guests::debian::run::step(run).in_lane(run.lane()));
    }
    steps
}
