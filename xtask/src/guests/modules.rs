//! The kernel and module steps of the plans (a test kernel, kmod-enable-user and the
//! stock module built against it, or against Debian's headers), and
//! `cargo xtask module-stock`.

use std::path::{Path, PathBuf};

use crate::build::kernel::{self, Arch};
use crate::build::stock_module;
use crate::engine::step::Step;

/// This module's commands in `cargo xtask help`.
pub const USAGE: &str = "    module <x86_64|arm64>
                      Build kmod-enable-user against that kernel (make KDIR=…),
                      warnings are errors; prints its modinfo.
    module-stock <arm64|debian-arm64|armv6 [KDIR]|armv7 [KDIR]>
                      The stock-kernel flavour of kmod-enable-user (no
                      CONFIG_RUST: C glue + pmu-armv8/pmu-armv6 as one no_std
                      object, checked with nm/objdump): against the arm64 test
                      kernel, against the headers of Debian's own arm64
                      kernels, Debian 12's default 6.1 and opt-in 6.12, Debian
                      13's 6.12 and trixie-backports' 7.3 (fetched through each
                      release's private apt state; asserts no CONFIG_RUST,
                      prints vermagic), or against the armv6 test kernel (or an
                      ARMv6 kernel build directory KDIR), or its ARMv7 flavour
                      (FLAVOUR=armv7, pmu-armv7) against the armv7 test kernel
                      (or a 32-bit ARMv7 kernel build directory KDIR).
";

fn kernel_x86_64() -> Result<(), String> {
    kernel::kernel(Arch::X86_64).map(|_| ())
}

fn kernel_arm64() -> Result<(), String> {
    kernel::kernel(Arch::Arm64).map(|_| ())
}

fn kernel_armv6() -> Result<(), String> {
    kernel::kernel(Arch::Armv6).map(|_| ())
}

fn kernel_armv7() -> Result<(), String> {
    kernel::kernel(Arch::Armv7).map(|_| ())
}

fn module_x86_64() -> Result<(), String> {
    kernel::module(Arch::X86_64).map(|_| ())
}

fn module_arm64() -> Result<(), String> {
    kernel::module(Arch::Arm64).map(|_| ())
}

/// Fails with the reason: no Rust-for-Linux on 32-bit ARM.
fn module_armv6() -> Result<(), String> {
    kernel::module(Arch::Armv6).map(|_| ())
}

/// The step that builds (or takes from the cache) the kernel of `arch`.
pub fn kernel_step(arch: Arch) -> Step {
    let what = format!(
        "test kernel {} ({} + xtask/kernel/{}.config; cached)",
        arch.name(),
        crate::host::setup::SOURCE_PACKAGE,
        arch.name()
    );
    let step = match arch {
        Arch::X86_64 => Step::func(what, kernel_x86_64),
        Arch::Arm64 => Step::func(what, kernel_arm64),
        Arch::Armv6 => Step::func(what, kernel_armv6),
        Arch::Armv7 => Step::func(what, kernel_armv7),
    };
    step.needs_programs(&["make", "gcc", arch.c_compiler()])
}

/// The step that builds kmod-enable-user against the kernel of `arch`.
pub fn module_step(arch: Arch) -> Step {
    let what = format!(
        "kmod-enable-user for the {} test kernel (no warnings)",
        arch.name()
    );
    match arch {
        Arch::X86_64 => Step::func(what, module_x86_64),
        Arch::Arm64 => Step::func(what, module_arm64),
        Arch::Armv6 => Step::func(what, module_armv6),
        // The stock flavour (FLAVOUR=armv7) is built by the board step.
        Arch::Armv7 => Step::func(what, module_armv6),
    }
}

/// Builds the stock module against the headers of every arm64 kernel of the Debian runs
/// (xtask/src/guests/debian/run.rs `ROWS`: Debian 12's default 6.1 and opt-in 6.12,
/// Debian 13's 6.12 and trixie-backports' 7.3), each fetched through its release's
/// private apt state (xtask/src/host/apt.rs), and proves what it is for: the kernel has
/// no CONFIG_RUST=y (Rust-for-Linux cannot be built there), the module's vermagic names
/// the kernel, the `.ko` is AArch64. A build for one of them does not load on another
/// (module_layout's CRC, `struct module`'s size), hence one each.
pub fn debian_arm64() -> Result<Vec<PathBuf>, String> {
    use crate::guests::debian::run::{Guest, ROWS};
    let mut built = Vec::new();
    for release in [
        crate::host::apt::Release::Trixie,
        crate::host::apt::Release::Bookworm,
    ] {
        let state = crate::host::apt::debian(release)?;
        for row in ROWS
            .iter()
            .filter(|r| r.release == release && r.guest == Guest::Arm64)
        {
            let backports = row.suite.map(|suite| state.with_default_release(suite));
            let apt = backports.as_ref().unwrap_or(&state);
            let kernel =
                crate::guests::debian::kernels::kernel(apt, row.image, "arm64", row.flavour)?;
            built.push(crate::guests::debian::module::stock_module(
                &kernel,
                &Arch::Arm64.make_vars(),
            )?);
        }
    }
    Ok(built)
}

fn arm64_test_kernel_step() -> Result<(), String> {
    stock_module::arm64_test_kernel().map(|_| ())
}

fn debian_arm64_step() -> Result<(), String> {
    debian_arm64().map(|_| ())
}

/// `cargo xtask module-stock <args>`.
pub fn command(args: &[&str]) -> std::process::ExitCode {
    use crate::engine::step::Plan;
    use std::process::ExitCode;
    let direct = |result: Result<(), String>| match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    };
    match args {
        ["arm64"] => Plan::new("module-stock")
            .then(crate::host::setup::kernel_steps())
            .then(vec![
                kernel_step(Arch::Arm64),
                Step::func(ARM64_STEP, arm64_test_kernel_step),
            ])
            .run(),
        ["debian-arm64"] => Plan::new("module-stock")
            .then(crate::host::setup::kernel_steps())
            .then(vec![Step::func(DEBIAN_STEP, debian_arm64_step)])
            .run(),
        ["armv6"] => Plan::new("module-stock")
            .then(crate::host::setup::kernel_steps())
            .then(vec![
                kernel_step(Arch::Armv6),
                Step::func(ARMV6_STEP, armv6_test_kernel_step),
            ])
            .run(),
        ["armv6", kdir] => direct(stock_module::armv6(Path::new(kdir)).map(|_| ())),
        ["armv7"] => Plan::new("module-stock")
            .then(crate::host::setup::kernel_steps())
            .then(vec![
                kernel_step(Arch::Armv7),
                Step::func(ARMV7_STEP, armv7_test_kernel_step),
            ])
            .run(),
        ["armv7", kdir] => direct(stock_module::armv7(Path::new(kdir)).map(|_| ())),
        _ => {
            eprintln!(
                "xtask: `module-stock` takes `arm64`, `debian-arm64`, `armv6 [KDIR]` or `armv7 [KDIR]` (see `cargo xtask help`)"
            );
            ExitCode::from(2)
        }
    }
}

const ARMV6_STEP: &str = "kmod-enable-user/stock for the armv6 test kernel (bcm2835, no CONFIG_RUST; checked; no warnings)";

fn armv6_test_kernel_step() -> Result<(), String> {
    stock_module::armv6(&crate::build::kernel::kernel(Arch::Armv6)?.dir).map(|_| ())
}

const ARMV7_STEP: &str = "kmod-enable-user/stock, ARMv7 flavour, for the armv7 test kernel (multi-v7, no CONFIG_RUST; checked; no warnings)";

fn armv7_test_kernel_step() -> Result<(), String> {
    stock_module::armv7(&crate::build::kernel::kernel(Arch::Armv7)?.dir).map(|_| ())
}

const ARM64_STEP: &str = "kmod-enable-user/stock for the arm64 test kernel (C glue + no_std Rust object, checked; no warnings)";
const DEBIAN_STEP: &str =
    "kmod-enable-user/stock against Debian's arm64 headers: Debian 12's default 6.1 and opt-in 6.12, Debian 13's 6.12, trixie-backports' 7.3 (no CONFIG_RUST)";

/// The steps of `cargo xtask test` (after the kernel steps): the stock module against
/// the arm64 test kernel, Debian's arm64 headers, the armv6 and the armv7 test kernels,
/// each in the lane of the runs that use it ([`crate::engine::lanes::ARM64_LANE`]).
pub fn stock_module_steps() -> Vec<Step> {
    use crate::engine::lanes::{ARM64_LANE, OTHER_LANE};
    vec![
        Step::func(ARM64_STEP, arm64_test_kernel_step).in_lane(ARM64_LANE),
        Step::func(DEBIAN_STEP, debian_arm64_step).in_lane(OTHER_LANE),
        // The emulated Raspberry Pi 0/1 (ARM64_LANE) boot this one.
        Step::func(ARMV6_STEP, armv6_test_kernel_step).in_lane(ARM64_LANE),
        Step::func(ARMV7_STEP, armv7_test_kernel_step).in_lane(OTHER_LANE),
    ]
}
