//! The checks of the static ARMv6 `pmu-demo` ([`crate::build::arm32_demo`]) under
//! `qemu-arm -cpu arm1176`.
//!
//! rustup has no prebuilt std for any ARMv6 Linux target, so std is built from rust-src
//! (`-Zbuild-std`, allowed on the pinned stable toolchain by `RUSTC_BOOTSTRAP=1`) for
//! `arm-unknown-linux-gnueabi` (ARMv6, ARM mode, soft float), linked by
//! `arm-linux-gnueabi-gcc` against glibc's static libraries (`.cargo/config.toml`:
//! `+crt-static`). The binary lands in the workspace target directory. The tests in
//! `tests/tests/armv6_demo.rs` get its path in [`DEMO_ENV`].

use std::process::Command;

use crate::engine::paths::workspace_root;
use crate::engine::step::Step;

/// This module's commands in `cargo xtask help`.
pub const USAGE: &str =
    "    armv6-demo        pmu-demo for ARMv6 Linux (Raspberry Pi 1 / Zero): the
                      unit tests of pmu-armv6 and pmu-linux for ARMv6, a static
                      build for arm-unknown-linux-gnueabi (build-std, the
                      arm-linux-gnueabi cross linker from apt), then its checks
                      under qemu-arm-static -cpu arm1176 (tests/tests/
                      armv6_demo.rs): ARMv6 and static per readelf; without
                      user access `measure --backend direct` exits 3 with the
                      `not enabled` message. Prints the binary's path.
";

/// The environment variable that names the static ARMv6 pmu-demo for the tests.
pub const DEMO_ENV: &str = "PMU_DEMO_ARMV6";

/// Builds the ARMv6 pmu-demo, then runs `tests/tests/armv6_demo.rs` on it under
/// `qemu-arm-static -cpu arm1176`.
pub fn build_and_check() -> Result<(), String> {
    let demo = crate::build::arm32_demo::armv6()?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    println!(
        "    $ {DEMO_ENV}={} cargo test -p {} --test armv6_demo",
        demo.display(),
        crate::build::images::E2E_CRATE
    );
    let status = Command::new(cargo)
        .args([
            "test",
            "-p",
            crate::build::images::E2E_CRATE,
            "--test",
            "armv6_demo",
        ])
        .env(DEMO_ENV, &demo)
        .current_dir(workspace_root())
        .status()
        .map_err(|e| format!("cannot run cargo test: {e}"))?;
    if status.success() {
        println!(
            "    ARMv6 pmu-demo for the Raspberry Pi 1 / Zero: {}",
            demo.display()
        );
        Ok(())
    } else {
        Err(format!("the ARMv6 pmu-demo checks failed ({status})"))
    }
}

/// The unit tests of pmu-armv6, pmu-linux and pmu-demo compiled for ARMv6 and run
/// under `qemu-arm-static -cpu arm1176`: the direct ARM1176 meter over the fake
/// registers, the probe's SIGILL path, the 32-bit libc calls and the ARM-mode kernels on
/// their real target. pmu-core stays on
/// the host and aarch64: it has no ARM-specific code, and its seqlock stress test
/// measures contention, which emulated 64-bit atomics (ARMv6 has no LDREXD) distort.
pub fn unit_tests_step() -> Step {
    Step::cargo(
        "unit tests for ARMv6 under qemu-arm -cpu arm1176 (pmu-armv6, pmu-linux, pmu-demo; build-std)",
        [
            "test",
            "--release",
            "-Zbuild-std=std,panic_unwind",
            "--target",
            crate::build::arm32_demo::ARMV6,
            "-p",
            "pmu-armv6",
            "-p",
            "pmu-linux",
            "-p",
            "userspace-demo",
            "--lib",
            "--bins",
        ],
    )
    .bootstrap()
    .env(
        "CARGO_TARGET_ARM_UNKNOWN_LINUX_GNUEABI_RUNNER",
        "qemu-arm-static -cpu arm1176",
    )
}

/// The step of `cargo xtask test` and `cargo xtask armv6-demo`.
pub fn step() -> Step {
    Step::func(
        "armv6 pmu-demo under qemu-arm -cpu arm1176 (static arm-unknown-linux-gnueabi build, build-std; tests/tests/armv6_demo.rs)",
        build_and_check,
    )
}
