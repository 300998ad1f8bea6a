//! `cargo xtask`: the one build orchestrator of the PMU workspace.
//!
//! Every command installs what it needs first (idempotently) and prints what it is
//! doing, so a fresh machine needs nothing but this repository and rustup.
//! `cargo xtask test` is the README's test command and what CI runs.

mod images;
mod setup;
mod step;

use std::process::ExitCode;

use step::{Plan, Step};

const HELP: &str = "\
cargo xtask — build orchestrator of the PMU workspace

USAGE:
    cargo xtask <COMMAND> [ARGS]

COMMANDS:
    test              The whole suite (what CI runs): set-up, formatting, clippy
                      with -D warnings on the host and on every bare-metal target,
                      the host tests, the no_std cross-builds (aarch64, x86_64,
                      ARMv6 through build-std), then the bare-metal images booted
                      in QEMU with their RESULT lines asserted (tests/).
    qemu aarch64 [CPU]
                      Build the aarch64 image and boot it in qemu-system-aarch64
                      -M virt with exact instruction counting (-icount), on CPU
                      model CPU (default max; also cortex-a72, cortex-a53, …).
    qemu x86_64       Build the x86_64 image and boot it in qemu-system-x86_64
                      (TCG).
    setup             Only install what the suite needs: rustup targets and
                      components (rust-toolchain.toml), and QEMU (apt). Safe to
                      run again.
    lint              rustfmt --check, clippy (host and bare-metal targets) and
                      rustdoc, all with warnings as errors.
    cross             Only the no_std cross-builds.
    help              This text.

Every step prints `==> [i/n] what` before it runs and its time after; the
first failing step stops the run with its command line and exit status.
`cargo test` alone runs the fast host tests only.

The images print one `RESULT <scenario> key=value …` line per result and a
summary; their exit status is 0 only when every scenario passed.
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let plan = match words.as_slice() {
        ["test"] => Plan::new("test")
            .then(setup::steps())
            .then(lint_steps())
            .then(vec![host_tests()])
            .then(cross_steps())
            .then(images::test_steps()),
        ["qemu", "aarch64"] => return images::boot_aarch64("max"),
        ["qemu", "aarch64", cpu] => return images::boot_aarch64(cpu),
        ["qemu", "x86_64"] => return images::boot_x86_64(),
        ["qemu", ..] => return usage("`qemu` takes `aarch64 [CPU]` or `x86_64`"),
        ["setup"] => Plan::new("setup").then(setup::steps()),
        ["lint"] => Plan::new("lint").then(setup::steps()).then(lint_steps()),
        ["cross"] => Plan::new("cross").then(setup::steps()).then(cross_steps()),
        [] | ["help" | "--help" | "-h"] => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        _ => return usage(&format!("unknown command `{}`", args.join(" "))),
    };
    plan.run()
}

fn usage(why: &str) -> ExitCode {
    eprintln!("xtask: {why}\n\n{HELP}");
    ExitCode::from(2)
}

/// The ARMv6 target: no prebuilt std in rustup, so `core` is built from rust-src.
pub const ARMV6_TARGET: &str = "armv6-none-eabi";

/// Crates that only build for bare metal: excluded from host steps.
const IMAGES: &[&str] = &["qemu-aarch64-virt", "qemu-x86_64"];

/// Bare-metal targets, with the crates that must build (and lint) for each.
const BARE_METAL: &[(&str, &[&str])] = &[
    (
        "aarch64-unknown-none",
        &["pmu-core", "pmu-armv8", "qemu-aarch64-virt"],
    ),
    (
        "x86_64-unknown-none",
        &["pmu-core", "pmu-x86", "qemu-x86_64"],
    ),
];

fn packages(crates: &[&str]) -> Vec<String> {
    crates
        .iter()
        .flat_map(|c| ["-p".to_string(), c.to_string()])
        .collect()
}

fn host_workspace() -> Vec<String> {
    let mut args = vec!["--workspace".to_string()];
    for image in IMAGES {
        args.extend(["--exclude".to_string(), image.to_string()]);
    }
    args
}

fn lint_steps() -> Vec<Step> {
    let mut clippy = vec!["clippy".to_string()];
    clippy.extend(host_workspace());
    clippy.extend(["--all-targets", "--", "-D", "warnings"].map(String::from));
    let mut doc = vec!["doc".to_string(), "--no-deps".into()];
    doc.extend(host_workspace());
    let mut steps = vec![
        Step::cargo(
            "rustfmt --check (whole workspace)",
            ["fmt", "--all", "--check"],
        ),
        Step::cargo("clippy, host, all targets, -D warnings", clippy),
        Step::cargo("rustdoc, host crates, -D warnings", doc).env("RUSTDOCFLAGS", "-D warnings"),
    ];
    for (target, crates) in BARE_METAL {
        let mut args = vec![
            "clippy".to_string(),
            "--release".into(),
            "--target".into(),
            target.to_string(),
        ];
        args.extend(packages(crates));
        args.extend(["--".into(), "-D".into(), "warnings".into()]);
        steps.push(Step::cargo(
            format!("clippy, {target} ({})", crates.join(", ")),
            args,
        ));
    }
    steps.push(armv6("clippy"));
    steps
}

/// The host tests, except the QEMU-driven ones (they need the images: see images.rs).
fn host_tests() -> Step {
    let mut args = vec!["test".to_string()];
    args.extend(host_workspace());
    args.extend(["--exclude".to_string(), images::E2E_CRATE.to_string()]);
    Step::cargo("host tests (cargo test, every host crate)", args)
}

fn cross_steps() -> Vec<Step> {
    let mut steps = Vec::new();
    for (target, crates) in BARE_METAL {
        let mut args = vec![
            "build".to_string(),
            "--release".into(),
            "--target".into(),
            target.to_string(),
        ];
        args.extend(packages(crates));
        steps.push(Step::cargo(
            format!("build {target} ({})", crates.join(", ")),
            args,
        ));
    }
    steps.push(armv6("build"));
    steps
}

/// `cargo <verb>` of pmu-armv6 for ARMv6, building `core` from rust-src on the pinned
/// stable toolchain (RUSTC_BOOTSTRAP allows -Zbuild-std there).
fn armv6(verb: &str) -> Step {
    let mut args = vec![
        verb.to_string(),
        "--release".into(),
        "-Zbuild-std=core".into(),
        "--target".into(),
        ARMV6_TARGET.into(),
        "-p".into(),
        "pmu-armv6".into(),
        "-p".into(),
        "pmu-core".into(),
    ];
    if verb == "clippy" {
        args.extend(["--".into(), "-D".into(), "warnings".into()]);
    }
    Step::cargo(
        format!("{verb} {ARMV6_TARGET} (pmu-core, pmu-armv6; build-std)"),
        args,
    )
    .env("RUSTC_BOOTSTRAP", "1")
}
