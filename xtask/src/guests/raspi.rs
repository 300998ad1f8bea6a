//! Emulated Raspberry Pi boards (`cargo xtask raspi`): the test kernels with the boards'
//! own device trees, booted on QEMU's `raspi3b` (arm64) and `raspi0` / `raspi1ap`
//! (ARMv6, ARM1176) by tests/tests/raspi.rs.
//!
//! - `raspi3b`: the arm64 test kernel (its config has the BCM2835 family drivers) with
//!   `broadcom/bcm2837-rpi-3-b.dtb`, and the arm64 initramfs (both module flavours,
//!   the static aarch64 `pmu-demo`), under `-icount` for exact counts.
//! - `raspi0`, `raspi1ap`: the armv6 kernel (`bcm2835`, no Rust support in Linux 6.12
//!   for 32-bit ARM) with `bcm2835-rpi-zero.dtb` / `bcm2835-rpi-a-plus.dtb`, and an
//!   initramfs with Debian's armel busybox, the static ARMv6 `pmu-demo` and the
//!   stock-kernel module flavour built against that kernel.

use std::path::PathBuf;
use std::process::Command;

use crate::build::images::E2E_CRATE;
use crate::build::kernel::{self, Arch};
use crate::engine::paths::workspace_root;

/// This module's commands in `cargo xtask help`.
pub const USAGE: &str =
    "    raspi             The emulated Raspberry Pis (QEMU 10): raspi3b boots the
                      arm64 test kernel with bcm2837-rpi-3-b.dtb (icount: exact
                      counts), loads each module flavour and reads counters
                      directly; raspi0 and raspi1ap boot the armv6 (bcm2835)
                      kernel, where QEMU's ARM1176 c15 is a dummy: the stock
                      module must refuse with -EIO and the ARMv6 pmu-demo must
                      say \"not enabled\" (tests/tests/raspi.rs).
";

/// The device trees the boards boot with: (test variable, kernel, name).
const DTBS: [(&str, Arch, &str); 3] = [
    ("PMU_DTB_RASPI3B", Arch::Arm64, "bcm2837-rpi-3-b"),
    ("PMU_DTB_RASPI0", Arch::Armv6, "bcm2835-rpi-zero"),
    ("PMU_DTB_RASPI1AP", Arch::Armv6, "bcm2835-rpi-a-plus"),
];

/// Builds (or finds cached) every artefact of the board runs and returns the test
/// environment.
fn artefacts() -> Result<Vec<(&'static str, PathBuf)>, String> {
    let mut env = Vec::new();
    for arch in [Arch::Arm64, Arch::Armv6] {
        let k = kernel::kernel(arch)?;
        let initramfs = if arch == Arch::Arm64 {
            let rust = kernel::module(arch)?;
            let stock = crate::build::stock_module::arm64_test_kernel()?;
            crate::build::initramfs::build(arch, Some(&rust), Some(&stock))?
        } else {
            let stock = crate::build::stock_module::armv6(&k.dir)?;
            crate::build::initramfs::build(arch, None, Some(&stock))?
        };
        let [kernel_var, initramfs_var, _] = arch.env_names();
        env.push((kernel_var, k.image()));
        env.push((initramfs_var, initramfs));
        for (var, dtb_arch, name) in DTBS {
            if dtb_arch == arch {
                env.push((var, k.dtb(name)?));
            }
        }
    }
    Ok(env)
}

/// The board runs: artefacts, then `cargo test -p pmu-tests --test raspi`.
pub fn run() -> Result<(), String> {
    let env = artefacts()?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    for (var, path) in &env {
        println!("    {var}={}", path.display());
    }
    println!("    $ cargo test -p {E2E_CRATE} --test raspi");
    let mut cmd = Command::new(cargo);
    cmd.args([
        "test",
        "-p",
        E2E_CRATE,
        "--test",
        "raspi",
        "--",
        "--test-threads=2",
    ])
    .current_dir(workspace_root());
    for (var, path) in env {
        cmd.env(var, path);
    }
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run cargo test: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the Raspberry Pi board tests failed ({status})"))
    }
}
