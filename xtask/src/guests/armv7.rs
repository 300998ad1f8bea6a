//! The armv7 guest runs: the emulated Raspberry Pi 2 and the Cortex-A15 virt board boot
//! the armv7 test kernel with the static ARMv7 `pmu-demo` ([`crate::build::arm32_demo`])
//! and the stock module's ARMv7 flavour in their initramfs.

use std::path::PathBuf;
use std::process::Command;

use crate::engine::paths::workspace_root;

/// This module's commands in `cargo xtask help`.
pub const USAGE: &str = "    e2e <raspi2b|armv7>
                      The armv7 kernel with the ARMv7 module flavour and the
                      static ARMv7 pmu-demo (armv7-unknown-linux-gnueabi,
                      build-std): raspi2b (4 x Cortex-A7, bcm2836-rpi-2-b.dtb)
                      or virt -cpu cortex-a15 -smp 2 (and -cpu max: PMUv3 in
                      AArch32; and pmu=off), under
                      icount: PMUv2's default refused, el0_programming=1
                      granted, exact counts on every CPU, hazards, unload, the
                      wrong flavour refused on the other CPU kind
                      (tests/tests/kernel_armv7.rs).
";

/// The variable that names the Raspberry Pi 2 device tree for tests/tests/kernel_armv7.rs.
pub const RASPI2B_DTB_ENV: &str = "PMU_DTB_RASPI2B";
/// The variable that names the armv6 initramfs whose module is the ARMv7 flavour.
pub const WRONG_FLAVOUR_INITRAMFS_ENV: &str = "PMU_INITRAMFS_ARMV6_WITH_ARMV7_FLAVOUR";

/// Every artefact of the armv7 runs, as (variable, path): the armv7 kernel and its
/// Raspberry Pi 2 device tree; its initramfs with the ARMv7 flavour (the stock module)
/// and the ARMv6 flavour built against the same kernel; the armv6 kernel and an armv6
/// initramfs whose stock module is the ARMv7 flavour (the wrong flavour on an ARM1176).
fn artefacts() -> Result<Vec<(&'static str, PathBuf)>, String> {
    use crate::build::kernel::{kernel, Arch};
    let v7 = kernel(Arch::Armv7)?;
    let v6 = kernel(Arch::Armv6)?;
    let stock = crate::build::stock_module::armv7(&v7.dir)?;
    let (armv6_on_v7, armv7_on_v6) = crate::build::stock_module::wrong_flavour()?;
    let initramfs = crate::build::initramfs::build_with_modules(
        Arch::Armv7,
        None,
        Some(&stock),
        &[("lib/modules/kmod_enable_user_armv6.ko", armv6_on_v7)],
        crate::build::initramfs::path(Arch::Armv7),
    )?;
    let wrong = crate::build::initramfs::build_with_modules(
        Arch::Armv6,
        None,
        Some(&armv7_on_v6),
        &[],
        crate::engine::paths::work_dir().join("initramfs/armv6-with-armv7-flavour.cpio"),
    )?;
    let [k7, i7, _] = Arch::Armv7.env_names();
    let [k6, _, _] = Arch::Armv6.env_names();
    Ok(vec![
        (k7, v7.image()),
        (i7, initramfs),
        (RASPI2B_DTB_ENV, v7.dtb("bcm2836-rpi-2-b")?),
        (k6, v6.image()),
        (WRONG_FLAVOUR_INITRAMFS_ENV, wrong),
        ("PMU_DTB_RASPI0", v6.dtb("bcm2835-rpi-zero")?),
    ])
}

/// `cargo xtask e2e raspi2b` / `armv7`: the artefacts, then
/// `cargo test -p pmu-tests --test kernel_armv7 <filter>` (`raspi2b`: the Raspberry Pi 2
/// and the wrong flavour on a Pi Zero; `virt`: the Cortex-A15 virt board; none: all).
pub fn run(filter: Option<&str>) -> Result<(), String> {
    let env = artefacts()?;
    for (var, path) in &env {
        println!("    {var}={}", path.display());
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut args = vec![
        "test",
        "-p",
        crate::build::images::E2E_CRATE,
        "--test",
        "kernel_armv7",
    ];
    args.push("--");
    if let Some(f) = filter {
        args.push(f);
    }
    args.push("--test-threads=2");
    println!("    $ cargo {}", args.join(" "));
    let mut cmd = Command::new(cargo);
    cmd.args(&args).current_dir(workspace_root());
    for (var, path) in env {
        cmd.env(var, path);
    }
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run cargo test: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the armv7 end-to-end tests failed ({status})"))
    }
}

fn run_raspi2b() -> Result<(), String> {
    run(Some("raspi"))
}

fn run_virt() -> Result<(), String> {
    run(Some("virt"))
}

/// The step of `cargo xtask e2e raspi2b` (and of `cargo xtask test`).
pub fn raspi2b_step() -> crate::engine::step::Step {
    crate::engine::step::Step::func(
        "emulated Raspberry Pi 2 (raspi2b, 4 x Cortex-A7; armv7 kernel + DTB, ARMv7 module flavour, ARMv7 pmu-demo) and the ARMv7 flavour refused on raspi0 (tests/tests/kernel_armv7.rs)",
        run_raspi2b,
    )
    .needs_programs(crate::build::initramfs::PROGRAMS)
}

/// The step of `cargo xtask e2e armv7` (and of `cargo xtask test`).
pub fn virt_step() -> crate::engine::step::Step {
    crate::engine::step::Step::func(
        "armv7 kernel on virt: -cpu cortex-a15 -smp 2 (ARMv7 module flavour, hotplug, ARMv7 pmu-demo), -cpu max (PMUv3 in AArch32: read-only default) and cortex-a15,pmu=off (tests/tests/kernel_armv7.rs)",
        run_virt,
    )
    .needs_programs(crate::build::initramfs::PROGRAMS)
}
