//! The bare-metal images: build, boot, and the QEMU-driven tests.

use std::path::PathBuf;
use std::process::{Command, ExitCode};

use crate::engine::paths::target_dir;
use crate::engine::step::Step;

/// This module's commands in `cargo xtask help`.
pub const USAGE: &str = "    qemu aarch64 [CPU]
                      Build the aarch64 image and boot it in qemu-system-aarch64
                      -M virt with exact instruction counting (-icount), on CPU
                      model CPU (default max; also cortex-a72, cortex-a53, …).
    qemu armv7 [CPU]  Build the AArch32 image (qemu/armv7-virt) and boot it in
                      qemu-system-arm -M virt with -icount, on CPU model CPU
                      (default cortex-a15; also cortex-a7).
    qemu x86_64       Build the x86_64 image and boot it in qemu-system-x86_64
                      (TCG).
";

/// The crate whose tests boot the images.
pub const E2E_CRATE: &str = "pmu-tests";

struct Image {
    package: &'static str,
    target: &'static str,
    env: &'static str,
    /// The exit status QEMU ends with when every scenario passed.
    success: i32,
}

const AARCH64: Image = Image {
    package: "qemu-aarch64-virt",
    target: "aarch64-unknown-none",
    env: "PMU_IMAGE_AARCH64_VIRT",
    success: pmu_tests::AARCH64_SUCCESS,
};

const ARMV7: Image = Image {
    package: "qemu-armv7-virt",
    target: "armv7a-none-eabi",
    env: "PMU_IMAGE_ARMV7_VIRT",
    success: pmu_tests::ARMV7_SUCCESS,
};

const X86_64: Image = Image {
    package: "qemu-x86_64",
    target: "x86_64-unknown-none",
    env: "PMU_IMAGE_X86_64",
    success: pmu_tests::X86_64_SUCCESS,
};

impl Image {
    fn path(&self) -> PathBuf {
        target_dir()
            .join(self.target)
            .join("release")
            .join(self.package)
    }

    fn build(&self) -> Step {
        Step::cargo(
            format!("build image {} ({})", self.package, self.target),
            [
                "build",
                "--release",
                "--target",
                self.target,
                "-p",
                self.package,
            ],
        )
    }
}

/// Build the images, then run the tests that boot them.
pub fn test_steps() -> Vec<Step> {
    use crate::build::boards::{image_step, RASPI0, RASPI2B, RASPI3B, RASPI4B, RASPI5};
    vec![
        AARCH64.build(),
        ARMV7.build(),
        X86_64.build(),
        RASPI0.build(),
        image_step(&RASPI0),
        RASPI2B.build(),
        image_step(&RASPI2B),
        RASPI3B.build(),
        image_step(&RASPI3B),
        RASPI4B.build(),
        image_step(&RASPI4B),
        // Built (and its kernel8.img made) though no emulator runs it.
        RASPI5.build(),
        image_step(&RASPI5),
        Step::cargo(
            "QEMU end-to-end tests (tests/: aarch64 on max, cortex-a72, cortex-a53; armv7 on cortex-a7, cortex-a15; x86_64 TCG; kernel8.img on raspi3b, raspi4b; kernel7.img on raspi2b; kernel.img on raspi0, raspi1ap)",
            [
                "test",
                "-p",
                E2E_CRATE,
                "--lib",
                "--test",
                "qemu_aarch64",
                "--test",
                "qemu_armv7",
                "--test",
                "qemu_x86_64",
                "--test",
                "qemu_raspi_aarch64",
                "--test",
                "qemu_raspi2b",
                "--test",
                "qemu_raspi0",
                "--",
                "--test-threads=2",
            ],
        )
        .env(AARCH64.env, AARCH64.path())
        .env(ARMV7.env, ARMV7.path())
        .env(X86_64.env, X86_64.path())
        .env(RASPI0.env, RASPI0.image())
        .env(RASPI2B.env, RASPI2B.image())
        .env(RASPI3B.env, RASPI3B.image())
        .env(RASPI4B.env, RASPI4B.image())
        .needs_programs(&[
            pmu_tests::QEMU_AARCH64,
            pmu_tests::QEMU_ARM,
            pmu_tests::QEMU_X86_64,
        ]),
    ]
}

fn build_then_boot(image: &Image, program: &str, args: Vec<String>) -> ExitCode {
    let build = crate::engine::step::Plan::new("qemu").then(vec![
        Step::func(
            "rustup targets installed",
            crate::host::setup::ensure_targets,
        ),
        Step::func("QEMU installed", crate::host::setup::ensure_qemu),
        image.build(),
    ]);
    if build.run() != ExitCode::SUCCESS {
        return ExitCode::FAILURE;
    }
    println!("==> {program} {}", args.join(" "));
    match Command::new(program).args(&args).status() {
        Ok(status) if status.code() == Some(image.success) => {
            println!(
                "xtask qemu: every scenario passed (QEMU exit status {})",
                image.success
            );
            ExitCode::SUCCESS
        }
        Ok(status) => {
            eprintln!("xtask qemu: the image reported failure ({status}); see the FATAL/RESULT lines above");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("xtask qemu: cannot start {program}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `cargo xtask qemu aarch64 [CPU]`.
pub fn boot_aarch64(cpu: &str) -> ExitCode {
    build_then_boot(
        &AARCH64,
        pmu_tests::QEMU_AARCH64,
        pmu_tests::aarch64_virt_args(&AARCH64.path(), cpu),
    )
}

/// `cargo xtask qemu armv7 [CPU]` (cortex-a15 by default, or cortex-a7).
pub fn boot_armv7(cpu: &str) -> ExitCode {
    build_then_boot(
        &ARMV7,
        pmu_tests::QEMU_ARM,
        pmu_tests::armv7_virt_args(&ARMV7.path(), cpu),
    )
}

/// `cargo xtask qemu x86_64`.
pub fn boot_x86_64() -> ExitCode {
    build_then_boot(
        &X86_64,
        pmu_tests::QEMU_X86_64,
        pmu_tests::x86_64_args(&X86_64.path()),
    )
}
