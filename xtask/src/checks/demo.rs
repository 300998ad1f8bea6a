//! `cargo xtask demo`: the README's "run" command. Builds `pmu-demo`, shows what this
//! machine offers, measures the built-in kernels and demonstrates hazard detection;
//! where the CPU exposes no hardware counters (a VM without vPMU), it also boots the
//! bare-metal aarch64 image in QEMU, where instruction and cycle counts are exact.

use std::path::Path;
use std::process::{Command, ExitCode};

use crate::engine::step::{Plan, Step};

/// This module's commands in `cargo xtask help`.
pub const USAGE: &str =
    "    demo              The demo (README's run command): build pmu-demo, list what
                      this machine offers, measure the built-in kernels, show
                      hazard detection; where the CPU has no hardware counters,
                      also boot the aarch64 image in QEMU for exact counts.
";

/// Whether the running kernel registered a CPU PMU (what perf hardware events need).
fn has_cpu_pmu() -> bool {
    std::fs::read_dir("/sys/bus/event_source/devices")
        .map(|dir| {
            dir.flatten().any(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name == "cpu" || name.starts_with("cpu_") || name.starts_with("armv")
            })
        })
        .unwrap_or(false)
}

fn run_demo(binary: &Path, args: &[&str]) -> bool {
    println!("\n==> pmu-demo {}", args.join(" "));
    match Command::new(binary).args(args).status() {
        Ok(s) if s.success() => true,
        Ok(s) => {
            eprintln!("xtask demo: `pmu-demo {}` failed ({s})", args.join(" "));
            false
        }
        Err(e) => {
            eprintln!("xtask demo: cannot run {}: {e}", binary.display());
            false
        }
    }
}

/// Runs the demo.
pub fn run() -> ExitCode {
    let build = Plan::new("demo")
        .then(crate::host::setup::steps())
        .then(vec![Step::cargo(
            "build pmu-demo (release)",
            ["build", "--release", "-p", "userspace-demo"],
        )]);
    if build.run() != ExitCode::SUCCESS {
        return ExitCode::FAILURE;
    }
    let binary = crate::engine::paths::target_dir().join("release/pmu-demo");
    let mut ok = run_demo(&binary, &["list"]);
    ok &= run_demo(&binary, &["measure"]);
    ok &= run_demo(&binary, &["hazards"]);
    if !has_cpu_pmu() {
        println!(
            "\n==> this CPU exposes no hardware counters (no CPU PMU in /sys/bus/event_source/devices):\n    \
             the same kind of measurement with exact counts, in QEMU (aarch64, -icount)"
        );
        ok &= crate::build::images::boot_aarch64("max") == ExitCode::SUCCESS;
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
