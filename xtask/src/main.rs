//! `cargo xtask`: the one build orchestrator of the PMU workspace.
//!
//! Every command installs what it needs first (idempotently) and prints what it is
//! doing, so a fresh machine needs nothing but this repository and rustup.
//! `cargo xtask test` is the README's test command and what CI runs.

mod build;
mod checks;
mod engine;
mod guests;
mod host;
#[cfg(test)]
mod layers;
mod reports;

use std::process::ExitCode;

use build::boards::ARMV6_TARGET;
use build::{arm32_demo, boards, images, kernel};
use checks::{
    demo, fresh_check, hw_check, package, pmu_qemu, pmu_qemu_compare, pmu_qemu_workflow, surface,
};
use engine::shared_target;
use engine::step::{Plan, Step};
use guests::{armv6, armv7, debian, e2e, modules};
use host::setup;
use reports::{bench, hazards};

/// The head of `cargo xtask help`; each command's lines follow from its module.
const HEAD: &str = "\
cargo xtask — build orchestrator of the PMU workspace

USAGE:
    cargo xtask <COMMAND> [ARGS]

COMMANDS:
";

/// `test`'s lines in the help (its plan is [`plan`]'s).
const TEST_USAGE: &str =
    "    test              The whole suite (what CI runs): set-up; the cross-builds
                      (no_std crates, the static programs the guests run, ARMv6
                      through build-std); the bare-metal images booted in QEMU
                      with their RESULT lines asserted (tests/); the four test
                      kernels (x86_64, arm64, armv6, armv7; cached). Then three
                      lanes at once, each step's output printed when it ends:
                      the guests in two (the module, the stock-kernel module for
                      the arm64 test kernel, Debian's arm64 headers, armv6 and
                      armv7, the end-to-end runs in QEMU (arm64: both module
                      flavours), the emulated Raspberry Pis (raspi, e2e raspi2b,
                      below), the armv7 virt board (e2e armv7), Debian's own
                      kernels (e2e debian-arm64, debian-armhf: Debian 12;
                      debian13-arm64, debian13-armhf: Debian 13, and its
                      backports' 7.3 on arm64), the pmu-qemu cargo runner and
                      its CI workflow, the bench and the hazard statistics
                      (below)); the checks in the third (formatting, clippy and
                      rustdoc with -D warnings on the host and every target, the
                      host tests, the library crates packaged and built as
                      crates.io would, the unit tests under qemu-aarch64 and
                      qemu-arm -cpu arm1176, the ARMv6 pmu-demo).
                      Cargo builds in <cache>/cargo-target/<toolchain> (outside
                      the clone: a fresh clone rebuilds the workspace's crates,
                      not their dependencies nor the build-std sysroots; the
                      checks in its checks/; one run at a time, a second builds
                      in target/).
";

/// The help's lines of the other plans built here (`lint`, `cross`) and of `help`.
const MORE_USAGE: &str =
    "    lint              rustfmt --check, clippy and rustdoc (the host and every
                      cross target), all with warnings as errors.
    cross             Only the cross-builds: no_std crates, the static pmu-demo
                      for the QEMU guests, and the aarch64 unit tests under
                      qemu-aarch64 (the ARMv6 pmu-demo: armv6-demo).
    help              This text.
";

/// The end of `cargo xtask help`.
const TAIL: &str = "
Every step prints `==> [i/n] what` on stderr before it runs and its time
after; the first failing step stops the run with its command line and exit
status. `cargo xtask test --step K` (or any command above that runs steps)
runs step K alone, for rerunning one that failed once the steps before it
have run. The QEMU guest steps of `test` run in two lanes at once (most
guests keep one core busy), beside a third lane of checks (lints, host
tests): each step's output is printed whole when it ends and kept in
target/logs/steps/.
`cargo test` alone runs the fast host tests only.

The images print one `RESULT <scenario> key=value …` line per result and a
summary; their exit status is 0 only when every scenario passed.
";

/// `cargo xtask help`: the head, each command's usage from the module that runs it,
/// the tail.
fn help() -> String {
    [
        HEAD,
        demo::USAGE,
        TEST_USAGE,
        kernel::USAGE,
        modules::USAGE,
        guests::raspi::USAGE,
        e2e::USAGE,
        armv7::USAGE,
        debian::run::USAGE,
        pmu_qemu::USAGE,
        pmu_qemu_workflow::USAGE,
        pmu_qemu_compare::USAGE,
        bench::USAGE,
        hazards::USAGE,
        armv6::USAGE,
        hw_check::USAGE,
        images::USAGE,
        boards::USAGE,
        setup::USAGE,
        fresh_check::USAGE,
        surface::USAGE,
        MORE_USAGE,
        TAIL,
    ]
    .concat()
}

fn main() -> ExitCode {
    engine::need::set_install_hint(setup::install_hint);
    let args: Vec<String> = std::env::args().skip(1).collect();
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    // `<plan> --step K`: only step K of the plan (a lane's child; rerunning one step).
    let (words, only) = match words.as_slice() {
        [plan @ .., "--step", k] if !plan.is_empty() => match k.parse::<usize>() {
            Ok(k) => (plan.to_vec(), Some(k)),
            Err(_) => return usage(&format!("--step takes a step number, not `{k}`")),
        },
        _ => (words, None),
    };
    // The suite's cargo builds go outside the clone (dependencies reused by every
    // fresh clone); the directory stays locked until the run ends. A lane's child
    // finds CARGO_TARGET_DIR set by its parent and keeps it.
    let _shared_target = (words == ["test"]).then(shared_target::enter).flatten();
    if let Some(plan) = plan(&words) {
        let plan = plan.invoked_as(&words);
        return match only {
            Some(k) => plan.run_only(k),
            None => plan.run(),
        };
    }
    if only.is_some() {
        return usage(&format!(
            "--step goes with a command that is a plan of steps (test, lint, e2e …), not `{}`",
            words.join(" ")
        ));
    }
    match words.as_slice() {
        ["kernel", _] => usage("`kernel` takes `x86_64`, `arm64`, `armv6` or `armv7`"),
        ["module", _] => usage("`module` takes `x86_64` or `arm64`"),
        ["e2e", _] => usage(
            "`e2e` takes `x86_64`, `arm64`, `raspi2b`, `armv7`, `debian-arm64`, `debian-armhf`, `debian13-arm64` or `debian13-armhf`",
        ),
        ["module-stock", rest @ ..] => modules::command(rest),
        ["demo"] => demo::run(),
        ["fresh-check", rest @ ..] => fresh_check::command(rest),
        ["bench", rest @ ..] => bench::command(rest).unwrap_or_else(|why| usage(&why)),
        ["hazards", rest @ ..] => hazards::command(rest).unwrap_or_else(|why| usage(&why)),
        ["pmu-qemu-compare", rest @ ..] => {
            pmu_qemu_compare::command(rest).unwrap_or_else(|why| usage(&why))
        }
        ["hw-check"] => hw_check::run(),
        ["surface"] => surface::run(None),
        ["surface", file] => surface::run(Some(file)),
        ["qemu", "aarch64"] => images::boot_aarch64("max"),
        ["qemu", "aarch64", cpu] => images::boot_aarch64(cpu),
        ["qemu", "armv7"] => images::boot_armv7("cortex-a15"),
        ["qemu", "armv7", cpu] => images::boot_armv7(cpu),
        ["qemu", "x86_64"] => images::boot_x86_64(),
        ["qemu", name] if boards::board(name).is_some() => {
            boards::boot(boards::board(name).expect("checked in the guard"))
        }
        ["qemu", ..] => usage(
            "`qemu` takes `aarch64 [CPU]`, `armv7 [CPU]`, `x86_64`, `raspi0`, `raspi2b`, `raspi3b` or `raspi4b`",
        ),
        ["sdcard", board, dir] => boards::sdcard(board, dir),
        [] | ["help" | "--help" | "-h"] => {
            print!("{}", help());
            ExitCode::SUCCESS
        }
        _ => usage(&format!("unknown command `{}`", args.join(" "))),
    }
}

/// The commands that are a plan of steps (their needs are checked against set-up by a
/// unit test), or `None`.
fn plan(words: &[&str]) -> Option<Plan> {
    let plan = match words {
        // The kernel tools come first: the host tests read linux-source-6.12 too (the SPE
        // bit positions and perf's SPE decoder are checked against it).
        // What the guests need is built first (their programs, the bare-metal images,
        // the kernels); then the guests run in two lanes, beside a third that checks
        // the rest (lints, host tests, packaging, qemu-user unit tests).
        ["test"] => Plan::new("test")
            .then(setup::steps())
            .then(setup::kernel_steps())
            .then(cross_steps())
            .then(images::test_steps())
            .then(e2e::test_steps())
            .then(vec![
                pmu_qemu::test_step().in_lane(crate::engine::lanes::ARM64_LANE),
                pmu_qemu_workflow::step().in_lane(crate::engine::lanes::ARM64_LANE),
                bench::test_step().in_lane(crate::engine::lanes::ARM64_LANE),
                hazards::test_step().in_lane(crate::engine::lanes::ARM64_LANE),
            ])
            .then(checks_lane()),
        ["pmu-qemu"] => Plan::new("pmu-qemu")
            .then(setup::steps())
            .then(vec![pmu_qemu::test_step()]),
        ["pmu-qemu-workflow"] => Plan::new("pmu-qemu-workflow")
            .then(setup::steps())
            .then(vec![pmu_qemu_workflow::step()]),
        ["kernel", arch] => Plan::new("kernel")
            .then(setup::kernel_steps())
            .then(vec![modules::kernel_step(kernel::Arch::parse(arch)?)]),
        ["module", arch] => {
            let arch = kernel::Arch::parse(arch)?;
            Plan::new("module")
                .then(setup::kernel_steps())
                .then(vec![modules::kernel_step(arch), modules::module_step(arch)])
        }
        ["e2e", "raspi2b"] => Plan::new("e2e")
            .then(setup::steps())
            .then(setup::kernel_steps())
            .then(vec![
                modules::kernel_step(kernel::Arch::Armv7),
                modules::kernel_step(kernel::Arch::Armv6),
                armv7::raspi2b_step(),
            ]),
        ["e2e", "armv7"] => Plan::new("e2e")
            .then(setup::steps())
            .then(setup::kernel_steps())
            .then(vec![
                modules::kernel_step(kernel::Arch::Armv7),
                modules::kernel_step(kernel::Arch::Armv6),
                armv7::virt_step(),
            ]),
        ["e2e", name] if debian::run::run_named(name).is_some() => Plan::new("e2e")
            .then(setup::steps())
            .then(setup::kernel_steps())
            .then(vec![debian::run::step(debian::run::run_named(name)?)]),
        ["e2e", arch] => {
            let arch = kernel::Arch::parse(arch)?;
            Plan::new("e2e")
                .then(setup::steps())
                .then(setup::kernel_steps())
                .then(vec![
                    modules::kernel_step(arch),
                    modules::module_step(arch),
                    e2e::e2e_step(arch),
                ])
        }
        ["raspi"] => Plan::new("raspi")
            .then(setup::steps())
            .then(setup::kernel_steps())
            .then(vec![
                modules::kernel_step(kernel::Arch::Arm64),
                modules::kernel_step(kernel::Arch::Armv6),
                modules::module_step(kernel::Arch::Arm64),
                e2e::e2e_step(kernel::Arch::Armv6),
            ]),
        ["armv6-demo"] => Plan::new("armv6-demo")
            .then(setup::steps())
            .then(vec![armv6::unit_tests_step(), armv6::step()]),
        ["setup"] => Plan::new("setup")
            .then(setup::steps())
            .then(setup::kernel_steps()),
        ["linux-source"] => Plan::new("linux-source").then(vec![setup::linux_source_step()]),
        ["lint"] => Plan::new("lint").then(setup::steps()).then(lint_steps()),
        ["cross"] => Plan::new("cross")
            .then(setup::steps())
            .then(cross_steps())
            .then(vec![aarch64_user_tests(), armv6::unit_tests_step()]),
        _ => return None,
    };
    Some(plan)
}

fn usage(why: &str) -> ExitCode {
    eprintln!("xtask: {why}\n\n{}", help());
    ExitCode::from(2)
}

/// Static Linux targets, with the crates that must build (and lint) for each: the
/// pmu-demo binaries that go into the QEMU guests' initramfs.
const LINUX_MUSL: &[(&str, &[&str])] = &[
    (
        "aarch64-unknown-linux-musl",
        &["pmu-core", "pmu-linux", "userspace-demo", "pmu-guest"],
    ),
    (
        "x86_64-unknown-linux-musl",
        &["pmu-core", "pmu-linux", "userspace-demo", "pmu-guest"],
    ),
];

/// Crates that only build for bare metal: excluded from host steps.
const IMAGES: &[&str] = &[
    "pmu-scenarios-armv8",
    "qemu-aarch64-virt",
    "qemu-raspi-aarch64",
    "pmu-scenarios-armv7",
    "qemu-armv7-virt",
    "qemu-raspi2b",
    "qemu-raspi0",
    "qemu-x86_64",
    "kmod-enable-user-stock",
];

/// The stock-kernel module's Rust object, for the kernels' targets (build-std: rust-src).
const STOCK_MODULE_TARGETS: &[&str] = &[
    "aarch64-unknown-none-softfloat",
    ARMV6_TARGET,
    "armv7a-none-eabi",
];

/// Bare-metal targets, with the crates that must build (and lint) for each.
const BARE_METAL: &[(&str, &[&str])] = &[
    (
        "aarch64-unknown-none",
        &[
            "pmu-core",
            "pmu-events",
            "pmu-armv8",
            "pmu-scenarios-common",
            "pmu-scenarios-armv8",
            "qemu-aarch64-virt",
            "pmu-raspi-board",
            "qemu-raspi-aarch64",
        ],
    ),
    (
        "armv7a-none-eabi",
        &[
            "pmu-core",
            "pmu-events",
            "pmu-armv7",
            "pmu-scenarios-common",
            "pmu-scenarios-armv7",
            "qemu-armv7-virt",
            "pmu-raspi-board",
            "qemu-raspi2b",
        ],
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
        // The workspace steps build pmu-linux with pmu-guest's feature `rig`; pmu-linux
        // alone has its default features, the surface programs see.
        Step::cargo(
            "clippy pmu-linux (default features, without `rig`), host, all targets, -D warnings",
            [
                "clippy",
                "-p",
                "pmu-linux",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ],
        ),
        Step::cargo(
            "rustdoc pmu-linux (default features, without `rig`), host, -D warnings",
            ["doc", "--no-deps", "-p", "pmu-linux"],
        )
        .env("RUSTDOCFLAGS", "-D warnings"),
    ];
    for (target, crates) in BARE_METAL {
        steps.push(target_step(
            "clippy",
            target,
            crates,
            &["--", "-D", "warnings"],
        ));
    }
    for (target, crates) in LINUX_MUSL {
        steps.push(target_step(
            "clippy",
            target,
            crates,
            &["--all-targets", "--", "-D", "warnings"],
        ));
    }
    // As on the host: pmu-linux alone, without pmu-guest's `rig` (arm64: every backend).
    steps.push(target_step(
        "clippy",
        "aarch64-unknown-linux-musl",
        &["pmu-linux"],
        &["--all-targets", "--", "-D", "warnings"],
    ));
    // pmu-armv8's `serde` feature without the standard library: the host build above
    // has it only with std (pmu-demo's), the bare-metal one above not at all.
    steps.push(Step::cargo(
        "clippy aarch64-unknown-none (pmu-armv8 with feature serde, no_std)",
        [
            "clippy",
            "--release",
            "--target",
            "aarch64-unknown-none",
            "-p",
            "pmu-armv8",
            "--features",
            "serde",
            "--",
            "-D",
            "warnings",
        ],
    ));
    steps.push(armv6("clippy"));
    steps.push(armv6_linux_clippy());
    steps.push(armv7_linux_clippy());
    steps.extend(cross_rustdoc_steps());
    // A target directory of their own, as the module's Makefile uses: cargo caches
    // `rustc --print cfg` per target directory whatever RUSTC_BOOTSTRAP says, and the
    // ARMv7 flavour's dependencies hang on `target_feature = "v7"`, which rustc prints
    // only with it (an earlier step without it, the armv7a-none-eabi image's clippy,
    // would leave a cache that picks the ARMv6 flavour's dependencies).
    let kmod_target_dir = crate::engine::paths::target_dir().join("kmod-enable-user/clippy");
    for target in STOCK_MODULE_TARGETS {
        steps.push(
            Step::cargo(
                format!("clippy {target} (kmod-enable-user-stock; build-std)"),
                [
                    "clippy".to_string(),
                    "--release".into(),
                    "-Zbuild-std=core".into(),
                    "--target".into(),
                    target.to_string(),
                    "--target-dir".into(),
                    kmod_target_dir.display().to_string(),
                    "-p".into(),
                    "kmod-enable-user-stock".into(),
                    "--".into(),
                    "-D".into(),
                    "warnings".into(),
                ],
            )
            .env("RUSTC_BOOTSTRAP", "1"),
        );
    }
    steps
}

/// clippy of the crates in the ARMv6 pmu-demo, for 32-bit ARM Linux (their
/// `cfg(target_arch = "arm")` code: the ARM1176 direct backend), tests included (hence
/// panic_unwind: the test harness needs it), with std from rust-src.
/// rustdoc of every cross target's crates, warnings as errors: each target's own `cfg`
/// (pmu-linux's direct backend per architecture, the bare-metal images, the stock
/// module's Rust object) documents code the host never compiles, and a broken link
/// in it shows only there.
fn cross_rustdoc_steps() -> Vec<Step> {
    let doc = |target: &str, crates: &[&str], extra: &[&str]| {
        let mut args = vec!["doc".to_string(), "--no-deps".into()];
        args.extend(extra.iter().map(|s| s.to_string()));
        args.extend(["--target".into(), target.to_string()]);
        args.extend(packages(crates));
        Step::cargo(
            format!("rustdoc {target} ({}), -D warnings", crates.join(", ")),
            args,
        )
        .env("RUSTDOCFLAGS", "-D warnings")
    };
    let mut steps: Vec<Step> = BARE_METAL
        .iter()
        .chain(LINUX_MUSL)
        .map(|(target, crates)| doc(target, crates, &[]))
        .collect();
    steps.push(armv6("doc").env("RUSTDOCFLAGS", "-D warnings"));
    for (target, crates) in [
        (arm32_demo::ARMV6, ARMV6_LINUX_CRATES),
        (arm32_demo::ARMV7, ARMV7_LINUX_CRATES),
    ] {
        steps.push(doc(target, &crates, &["-Zbuild-std=std,panic_unwind"]).bootstrap());
    }
    // In the stock module's own target directory, as its clippy (below).
    let kmod_target_dir = crate::engine::paths::target_dir().join("kmod-enable-user/clippy");
    let kmod_target_dir = kmod_target_dir.display().to_string();
    for target in STOCK_MODULE_TARGETS {
        steps.push(
            doc(
                target,
                &["kmod-enable-user-stock"],
                &["-Zbuild-std=core", "--target-dir", &kmod_target_dir],
            )
            .env("RUSTC_BOOTSTRAP", "1"),
        );
    }
    steps
}

/// The crates of the ARMv6 pmu-demo.
const ARMV6_LINUX_CRATES: [&str; 4] = ["pmu-core", "pmu-armv6", "pmu-linux", "userspace-demo"];

/// The crates of the ARMv7 pmu-demo.
const ARMV7_LINUX_CRATES: [&str; 4] = ["pmu-core", "pmu-armv7", "pmu-linux", "userspace-demo"];

fn armv6_linux_clippy() -> Step {
    let crates = ARMV6_LINUX_CRATES;
    let mut args = vec![
        "clippy".to_string(),
        "--release".into(),
        "--all-targets".into(),
        "-Zbuild-std=std,panic_unwind".into(),
        "--target".into(),
        arm32_demo::ARMV6.into(),
    ];
    args.extend(packages(&crates));
    args.extend(["--", "-D", "warnings"].map(String::from));
    Step::cargo(
        format!(
            "clippy {} ({}; build-std), -D warnings",
            arm32_demo::ARMV6,
            crates.join(", ")
        ),
        args,
    )
    .bootstrap()
}

/// clippy of the crates in the ARMv7 pmu-demo (pmu-linux's `direct::aarch32`, built for
/// `target_feature = "v7"` only), tests included, with std from rust-src.
fn armv7_linux_clippy() -> Step {
    let crates = ARMV7_LINUX_CRATES;
    let mut args = vec![
        "clippy".to_string(),
        "--release".into(),
        "--all-targets".into(),
        "-Zbuild-std=std,panic_unwind".into(),
        "--target".into(),
        arm32_demo::ARMV7.into(),
    ];
    args.extend(packages(&crates));
    args.extend(["--", "-D", "warnings"].map(String::from));
    Step::cargo(
        format!(
            "clippy {} ({}; build-std), -D warnings",
            arm32_demo::ARMV7,
            crates.join(", ")
        ),
        args,
    )
    .bootstrap()
}

/// `cargo <verb> --release --target <target> -p <crate>… <extra>…`.
fn target_step(verb: &str, target: &str, crates: &[&str], extra: &[&str]) -> Step {
    let mut args = vec![
        verb.to_string(),
        "--release".into(),
        "--target".into(),
        target.to_string(),
    ];
    args.extend(packages(crates));
    args.extend(extra.iter().map(|s| s.to_string()));
    Step::cargo(format!("{verb} {target} ({})", crates.join(", ")), args)
}

/// The host tests, except the QEMU-driven ones (they need the images: see images.rs).
fn host_tests() -> Step {
    let mut args = vec!["test".to_string()];
    args.extend(host_workspace());
    args.extend(["--exclude".to_string(), images::E2E_CRATE.to_string()]);
    Step::cargo("host tests (cargo test, every host crate)", args)
}

/// The host tests of the stock module's Rust object (its shared grant shim against a
/// fake flavour): the crate builds for bare metal, so the workspace's host steps leave
/// it out, and its test targets build with std.
fn stock_object_tests() -> Step {
    Step::cargo(
        "host tests of the stock module's Rust object (cargo test -p kmod-enable-user-stock)",
        ["test", "-p", "kmod-enable-user-stock"],
    )
}

/// The cross builds: the bare-metal crates, the static Linux programs as the guests
/// build them, and the ARMv6 crates.
fn cross_steps() -> Vec<Step> {
    let mut steps = Vec::new();
    for (target, crates) in BARE_METAL {
        steps.push(target_step("build", target, crates, &[]));
    }
    for arch in [kernel::Arch::Arm64, kernel::Arch::X86_64] {
        steps.extend(musl_build_steps(arch));
    }
    steps.push(armv6("build"));
    steps
}

/// The test plan's checks lane ([`crate::engine::lanes::CHECKS_LANE`]): the lints, the
/// host tests, the packaging check, the unit tests under qemu-user and the ARMv6
/// pmu-demo, none of which needs a kernel or a guest; its cargo steps build in
/// [`crate::engine::paths::checks_target_dir`].
fn checks_lane() -> Vec<Step> {
    let dir = crate::engine::paths::checks_target_dir();
    let mut steps = lint_steps();
    steps.extend([host_tests(), stock_object_tests()]);
    steps.extend(package::steps());
    steps.extend([
        aarch64_user_tests(),
        armv6::unit_tests_step(),
        armv6::step(),
    ]);
    steps
        .into_iter()
        .map(|s| s.builds_in(&dir).in_lane(crate::engine::lanes::CHECKS_LANE))
        .collect()
}

/// The static Linux builds for `arch`: the cargo runs its guests make
/// ([`build::initramfs::guest_builds`], so that the end-to-end steps find their programs
/// built), then one of the [`LINUX_MUSL`] crates those runs do not name.
fn musl_build_steps(arch: kernel::Arch) -> Vec<Step> {
    let target = arch.user_target();
    let crates_of = |args: &[&'static str]| -> Vec<&'static str> {
        args.windows(2)
            .filter(|w| w[0] == "-p")
            .map(|w| w[1])
            .collect()
    };
    let mut named = Vec::new();
    let mut steps = Vec::new();
    for args in build::initramfs::guest_builds(arch) {
        let crates = crates_of(&args);
        steps.push(Step::cargo(
            format!("build {target} ({}) as its guests do", crates.join(", ")),
            args,
        ));
        named.extend(crates);
    }
    let rest: Vec<&str> = LINUX_MUSL
        .iter()
        .filter(|(t, _)| *t == target)
        .flat_map(|(_, crates)| crates.iter().copied())
        .filter(|c| !named.contains(c))
        .collect();
    if !rest.is_empty() {
        steps.push(target_step("build", target, &rest, &[]));
    }
    steps
}

/// The unit tests of pmu-core and pmu-linux compiled for aarch64 and run under
/// qemu-aarch64 (user mode): the arm64 page reader, perf-index mapping and fast-read
/// code on their real target. qemu-user has no perf_event_open (ENOSYS), so the tests
/// that open perf events (the session's `perf::tests::` and `perf::kernel_member::`, the
/// command counts' `perf::command::tests::run_`, the listing's `machine::tests::`,
/// `meter::`) run on the host and in the arm64 kernel guest instead.
///
/// In the test profile, as the host's unit tests: with debug assertions and overflow
/// checks, and compiled in less than half the time of a release build (which pays thin
/// LTO on pmu-linux for tests that run in about a second either way).
fn aarch64_user_tests() -> Step {
    Step::cargo(
        "unit tests for aarch64 under qemu-aarch64 (pmu-core, pmu-linux; perf syscalls excluded: ENOSYS in qemu-user)",
        [
            "test",
            "--target",
            "aarch64-unknown-linux-musl",
            "-p",
            "pmu-core",
            "-p",
            "pmu-linux",
            "--lib",
            "--",
            "--skip",
            "perf::tests::",
            "--skip",
            "perf::kernel_member::",
            "--skip",
            "perf::command::tests::run_",
            "--skip",
            "machine::tests::",
            "--skip",
            "meter::",
        ],
    )
    .env("CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUNNER", "qemu-aarch64-static -cpu max")
}

/// `cargo <verb>` of pmu-armv6 and the Pi 0/1 image for ARMv6, building `core` from
/// rust-src on the pinned stable toolchain (RUSTC_BOOTSTRAP allows -Zbuild-std there).
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
        "-p".into(),
        "pmu-events".into(),
        "-p".into(),
        "pmu-raspi-board".into(),
        "-p".into(),
        "qemu-raspi0".into(),
    ];
    if verb == "clippy" {
        args.extend(["--".into(), "-D".into(), "warnings".into()]);
    }
    Step::cargo(
        format!(
            "{verb} {ARMV6_TARGET} (pmu-core, pmu-events, pmu-armv6, pmu-raspi-board, qemu-raspi0; build-std)"
        ),
        args,
    )
    .bootstrap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::step::Need;
    use std::path::PathBuf;

    /// Every command that is a plan, with the arguments the README and the help name.
    const PLANS: &[&[&str]] = &[
        &["test"],
        &["setup"],
        &["linux-source"],
        &["lint"],
        &["cross"],
        &["armv6-demo"],
        &["raspi"],
        &["kernel", "x86_64"],
        &["kernel", "arm64"],
        &["kernel", "armv6"],
        &["kernel", "armv7"],
        &["module", "x86_64"],
        &["module", "arm64"],
        &["e2e", "x86_64"],
        &["e2e", "arm64"],
        &["e2e", "raspi2b"],
        &["e2e", "armv7"],
        &["e2e", "debian-arm64"],
        &["e2e", "debian-armhf"],
        &["e2e", "debian13-arm64"],
        &["e2e", "debian13-armhf"],
        &["pmu-qemu"],
    ];

    /// The test plan's lanes are one group at its end, and every kernel step precedes it:
    /// the lanes only read the kernel cache, never build a kernel (a build uses both cores
    /// and writes the cache). Two lanes of guests (bench and hazard statistics the last of
    /// the arm64 one) and the checks lane, whose cargo steps build in their own target
    /// directory (a bootstrap step keeps its own, the packaging check the clone's).
    #[test]
    fn the_guest_lanes_end_the_test_plan_after_every_kernel() {
        use crate::engine::lanes::{ARM64_LANE, CHECKS_LANE, OTHER_LANE};
        let plan = plan(&["test"]).unwrap();
        let steps = plan.steps();
        let first = steps
            .iter()
            .position(|s| s.lane().is_some())
            .expect("the test plan has lanes");
        assert!(steps[first..].iter().all(|s| s.lane().is_some()));
        let lanes: std::collections::BTreeSet<u8> =
            steps[first..].iter().filter_map(|s| s.lane()).collect();
        assert_eq!(
            lanes,
            [ARM64_LANE, OTHER_LANE, CHECKS_LANE].into_iter().collect()
        );
        assert_eq!(
            steps[..first]
                .iter()
                .filter(|s| s.what().starts_with("test kernel "))
                .count(),
            4
        );
        assert!(steps[first..]
            .iter()
            .all(|s| !s.what().starts_with("test kernel ")));
        let arm64_last = steps
            .iter()
            .rfind(|s| s.lane() == Some(ARM64_LANE))
            .unwrap();
        assert!(arm64_last.what().starts_with("hazards"));
        let checks: Vec<&Step> = steps
            .iter()
            .filter(|s| s.lane() == Some(CHECKS_LANE))
            .collect();
        assert!(checks[0].what().starts_with("rustfmt"));
        assert!(checks.iter().any(|s| s.what().starts_with("host tests")));
        let dir = crate::engine::paths::checks_target_dir();
        let kmod = crate::engine::paths::target_dir().join("kmod-enable-user/clippy");
        for step in checks {
            let target = step.named_target_dir();
            if step.is_func() {
                assert_eq!(target, None, "{}", step.what());
            } else if step.env_value("RUSTC_BOOTSTRAP").is_some() {
                assert!(
                    target == Some(crate::engine::paths::bootstrap_target_dir().into())
                        || target == Some(kmod.clone().into()),
                    "{}: {target:?}",
                    step.what()
                );
            } else if step.what().contains("packaged") {
                assert_eq!(
                    target,
                    Some(crate::engine::paths::work_dir().into()),
                    "{}",
                    step.what()
                );
            } else {
                assert_eq!(target, Some(dir.clone().into()), "{}", step.what());
            }
        }
    }

    /// The cargo runs that build the guests' programs are steps of the test plan before
    /// any guest step, with the same arguments and environment: the guests find their
    /// programs built (a run with other packages would build them with other features,
    /// and each guest step would compile them again).
    #[test]
    fn the_guests_programs_are_built_before_the_guests_as_the_guests_build_them() {
        let plan = plan(&["test"]).unwrap();
        let steps = plan.steps();
        let first_guest = steps
            .iter()
            .position(|s| s.lane().is_some())
            .expect("the test plan has lanes");
        for arch in [kernel::Arch::Arm64, kernel::Arch::X86_64] {
            let runs = build::initramfs::guest_builds(arch);
            assert!(!runs.is_empty());
            for run in runs {
                let at = steps[..first_guest]
                    .iter()
                    .position(|s| {
                        s.args()
                            .iter()
                            .map(|a| a.to_str().unwrap())
                            .eq(run.iter().copied())
                    })
                    .unwrap_or_else(|| panic!("no step runs cargo {}", run.join(" ")));
                assert!(steps[at].what().contains(arch.user_target()));
            }
        }
    }

    /// What each step of each plan needs (its rustup target, components, programs),
    /// set-up provides: the suite never reaches a step that fails on a missing target.
    #[test]
    fn every_need_of_every_plan_is_provided_by_setup() {
        let mut unprovided = Vec::new();
        for words in PLANS {
            let plan = plan(words).unwrap_or_else(|| panic!("{words:?} is not a plan"));
            for step in plan.steps() {
                for need in step.needs() {
                    if !setup::provides(&need) {
                        unprovided.push(format!("{words:?} step {:?}: {need}", step.what()));
                    }
                }
            }
        }
        assert!(
            unprovided.is_empty(),
            "set-up does not provide: {unprovided:#?}"
        );
    }

    /// The derivation the check above stands on: a cargo step for a target needs that
    /// target unless it builds `core`/`std` from rust-src; clippy needs its component; a
    /// runner its program.
    #[test]
    fn needs_follow_from_the_command_line() {
        let plain = Step::cargo("x", ["build", "--release", "--target", "armv7a-none-eabi"]);
        assert_eq!(plain.needs(), vec![Need::Target("armv7a-none-eabi".into())]);
        let std = Step::cargo(
            "x",
            ["clippy", "-Zbuild-std=core", "--target", "armv6-none-eabi"],
        );
        assert_eq!(
            std.needs(),
            vec![
                Need::Component("clippy".into()),
                Need::Component("rust-src".into())
            ]
        );
        let runner = Step::cargo("x", ["test"]).env(
            "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUNNER",
            "qemu-aarch64-static -cpu max",
        );
        assert_eq!(
            runner.needs(),
            vec![Need::Program("qemu-aarch64-static".into())]
        );
        assert_eq!(
            Step::new("x", "dtc", ["-v"]).needs(),
            vec![Need::Program("dtc".into())]
        );
        assert!(!setup::provides(&Need::Target(
            "riscv64gc-unknown-none-elf".into()
        )));
        assert!(!setup::provides(&Need::Program("some-tool".into())));
    }

    /// The string literals in `text` that follow `prefix` (up to the closing quote).
    fn literals_after<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
        text.match_indices(prefix)
            .filter_map(|(i, _)| {
                let rest = &text[i + prefix.len()..];
                rest.find('"').map(|end| &rest[..end])
            })
            .collect()
    }

    fn sources() -> Vec<(PathBuf, String)> {
        let root = engine::paths::workspace_root();
        let mut files = Vec::new();
        let mut dirs: Vec<PathBuf> = ["xtask/src", "pmu-qemu/src", "tests/src", "tests/tests"]
            .iter()
            .map(|d| root.join(d))
            .collect();
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir)
                .expect("a source directory")
                .flatten()
            {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).expect("readable source");
                    files.push((path, text));
                }
            }
        }
        assert!(files.len() > 40, "the sources were found");
        files
    }

    /// Function steps and the QEMU-driven tests run programs their command lines do not
    /// show: every program named in a `Command::new("…")` or a `QEMU_*` constant of xtask
    /// and tests/ (and of pmu-qemu, whose apt and cpio xtask runs) is one that set-up
    /// installs or the base system has.
    #[test]
    fn every_program_the_steps_run_is_provided_by_setup() {
        let mut unprovided = Vec::new();
        for (path, text) in sources() {
            let mut programs = literals_after(&text, "Command::new(\"");
            programs.extend(literals_after(&text, "pub const QEMU_AARCH64: &str = \""));
            programs.extend(literals_after(&text, "pub const QEMU_ARM: &str = \""));
            programs.extend(literals_after(&text, "pub const QEMU_X86_64: &str = \""));
            for program in programs {
                let name = program
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._+-".contains(c));
                if !name || program.is_empty() {
                    continue; // a path (`stdout_of`'s test of a missing one), or prose
                }
                if !setup::provides(&Need::Program(program.to_string())) {
                    unprovided.push(format!("{}: {program}", path.display()));
                }
            }
        }
        assert!(
            unprovided.is_empty(),
            "set-up does not provide: {unprovided:#?}"
        );
    }

    /// Function steps build for targets their command lines do not show either: every
    /// target triple named in xtask, pmu-qemu and tests/ is a rustup target set-up adds,
    /// or one built from rust-src (`-Zbuild-std`), which needs only that component.
    #[test]
    fn every_target_named_is_provided_by_setup() {
        let mut unprovided = Vec::new();
        for (path, text) in sources() {
            for literal in text.split('"').skip(1).step_by(2) {
                let parts: Vec<&str> = literal.split('-').collect();
                let triple = parts.len() >= 3
                    && [
                        "aarch64",
                        "x86_64",
                        "arm",
                        "armv6",
                        "armv7",
                        "armv7a",
                        "thumbv7em",
                    ]
                    .contains(&parts[0])
                    && ["none", "unknown"].contains(&parts[1])
                    && literal
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_".contains(c));
                if triple
                    && !setup::TARGETS.contains(&literal)
                    && !setup::BUILD_STD_TARGETS.contains(&literal)
                {
                    unprovided.push(format!("{}: {literal}", path.display()));
                }
            }
        }
        assert!(
            unprovided.is_empty(),
            "neither a set-up target nor a build-std one: {unprovided:#?}"
        );
    }
}
