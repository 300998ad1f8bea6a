//! Installing what the suite needs, idempotently.
//!
//! The pinned toolchain comes from rust-toolchain.toml (rustup installs it on first use);
//! its targets and components are added explicitly here because rustup does not add
//! missing ones to an already installed toolchain in every version.

use std::path::Path;
use std::process::Command;

use crate::engine::need::{Need, TOOLCHAIN};
use crate::engine::step::Step;

/// This module's commands in `cargo xtask help`.
pub const USAGE: &str =
    "    setup             Only install what the suite needs: rustup targets and
                      components (rust-toolchain.toml), QEMU and the kernel
                      build tools (apt), bindgen-cli (cargo install). Safe to
                      run again. Each install is one line on stderr with its
                      time; the tools' own output goes to target/logs/, named
                      when one fails. A step that needs a target, component or
                      program set-up did not provide stops with the command
                      that installs it.
    linux-source      Only fetch the Linux 7.3 source the host tests check the
                      SPE model and the module against (Debian 13 backports'
                      linux-source-7.3, into the cache; nothing installed).
";

/// The Debian package with the kernel source (its tarball: /usr/src/linux-source-6.12.tar.xz).
pub const SOURCE_PACKAGE: &str = "linux-source-6.12";

/// The Debian package with the static busybox.
pub const BUSYBOX_PACKAGE: &str = "busybox-static";

/// rustup targets the suite builds for.
pub const TARGETS: &[&str] = &[
    "aarch64-unknown-none",
    "x86_64-unknown-none",
    "aarch64-unknown-linux-musl",
    "x86_64-unknown-linux-musl",
    "armv7a-none-eabi",
];

/// Targets the suite builds only with `-Zbuild-std` (no prebuilt library from rustup:
/// the ARMv6 ones; or a kernel's code model: the stock module's soft-float object), which
/// need the `rust-src` component rather than a rustup target.
#[cfg(test)]
pub const BUILD_STD_TARGETS: &[&str] = &[
    "armv6-none-eabi",
    "arm-unknown-linux-gnueabi",
    "armv7-unknown-linux-gnueabi",
    "aarch64-unknown-none-softfloat",
];

/// rustup components the suite uses (rust-src: build-std for ARMv6).
pub const COMPONENTS: &[&str] = &["rust-src", "clippy", "rustfmt"];

/// The set-up steps.
pub fn steps() -> Vec<Step> {
    vec![
        Step::func(
            format!("rustup: targets for {TOOLCHAIN} ({})", TARGETS.join(", ")),
            ensure_targets,
        ),
        Step::func(
            format!(
                "rustup: components for {TOOLCHAIN} ({})",
                COMPONENTS.join(", ")
            ),
            ensure_components,
        ),
        Step::func(
            "QEMU (qemu-system-aarch64, qemu-system-arm, qemu-system-x86_64, qemu-aarch64-static, qemu-arm-static)",
            ensure_qemu,
        ),
        Step::func(
            format!(
                "ARMv6 Linux cross linker (apt: {})",
                ARMV6_PACKAGES.join(", ")
            ),
            ensure_armv6_packages,
        ),
    ]
}

/// `rustup <verb> add --toolchain TOOLCHAIN <missing…>` for the `wanted` needs this
/// machine lacks, its output in a log; one line on stderr.
fn rustup_add(verb: &str, wanted: Vec<Need>) -> Result<(), String> {
    let missing: Vec<String> = wanted
        .iter()
        .filter(|n| !n.is_met())
        .map(|n| match n {
            Need::Target(x) | Need::Component(x) | Need::Program(x) => x.clone(),
        })
        .collect();
    if missing.is_empty() {
        eprintln!("    all installed");
        return Ok(());
    }
    let mut command = Command::new("rustup");
    command
        .args([verb, "add", "--toolchain", TOOLCHAIN])
        .args(&missing);
    crate::engine::step::run_logged(
        &format!("rustup: adding {verb}s {}", missing.join(", ")),
        &format!("setup-rustup-{verb}"),
        &mut command,
    )?;
    match wanted.iter().find(|n| !n.is_met()) {
        Some(still) => Err(format!(
            "{still} is still missing after `rustup {verb} add`: {}",
            install_hint(still)
        )),
        None => Ok(()),
    }
}

/// Adds the missing [`TARGETS`].
pub fn ensure_targets() -> Result<(), String> {
    rustup_add(
        "target",
        TARGETS
            .iter()
            .map(|t| Need::Target(t.to_string()))
            .collect(),
    )
}

/// Adds the missing [`COMPONENTS`].
pub fn ensure_components() -> Result<(), String> {
    rustup_add(
        "component",
        COMPONENTS
            .iter()
            .map(|c| Need::Component(c.to_string()))
            .collect(),
    )
}

/// Programs the steps run, with the Debian package set-up installs them from
/// ([`QEMU_PACKAGES`], [`KERNEL_PACKAGES`], [`ARMV6_PACKAGES`]); bindgen is cargo-installed
/// into the cache by the kernel steps and called by path.
pub const PROGRAMS: &[(&str, &str)] = &[
    ("qemu-system-aarch64", "qemu-system-arm"),
    ("qemu-system-arm", "qemu-system-arm"),
    ("qemu-system-x86_64", "qemu-system-x86"),
    ("qemu-aarch64-static", "qemu-user-static"),
    ("qemu-arm-static", "qemu-user-static"),
    ("make", "make"),
    ("gcc", "gcc"),
    ("modinfo", "kmod"),
    ("busybox", BUSYBOX_PACKAGE),
    ("dtc", "device-tree-compiler"),
    ("pahole", "dwarves"),
    ("clang-14", "clang-14"),
    ("ld.lld-14", "lld-14"),
    // The guests' copies of the workspace's programs (xtask/src/build/initramfs.rs
    // `guest_copy`).
    ("llvm-strip-14", "llvm-14"),
    ("aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu"),
    ("arm-linux-gnueabi-gcc", "gcc-arm-linux-gnueabi"),
    // A dependency of gcc-arm-linux-gnueabi (binutils-arm-linux-gnueabi).
    ("arm-linux-gnueabi-readelf", "gcc-arm-linux-gnueabi"),
    // binutils, a dependency of gcc (the Debian runs follow perf's NEEDED entries with it).
    ("readelf", "gcc"),
    // binutils, as readelf: which glibc a Debian 13 build tool asks for (objdump -T).
    ("objdump", "gcc"),
    // `cargo xtask pmu-qemu-compare` (a measurement): Gungraun's and callgrind's rows.
    ("valgrind", "valgrind"),
];

/// Programs every Debian system has (its essential and required packages: sh, tar,
/// dpkg, apt) or that come with the Rust toolchain; set-up need not install them.
pub const BASE_PROGRAMS: &[&str] = &[
    "sh",
    "bash",
    "tar",
    "gzip",
    "dpkg-query",
    "dpkg-deb",
    "apt-get",
    "apt-cache",
    "cargo",
    "rustc",
    "rustup",
    "git",
    // libc-bin (Essential): this machine's glibc version.
    "getconf",
];

/// The Debian package set-up installs `program` from, if it does.
pub fn package_of(program: &str) -> Option<&'static str> {
    PROGRAMS
        .iter()
        .find(|(p, _)| *p == program)
        .map(|(_, package)| *package)
}

/// The command that installs `need` (what `cargo xtask setup` runs for it): the
/// engine's hint for a missing need ([`crate::engine::need::set_install_hint`]).
pub fn install_hint(need: &Need) -> String {
    if !provides(need) {
        return "set-up does not install it: add it to xtask/src/host/setup.rs (TARGETS, COMPONENTS or PROGRAMS and their packages)".to_string();
    }
    match need {
        Need::Target(t) => format!("rustup target add --toolchain {TOOLCHAIN} {t}"),
        Need::Component(c) => format!("rustup component add --toolchain {TOOLCHAIN} {c}"),
        Need::Program(p) => match package_of(p) {
            Some(package) => format!("apt-get install {package} (or `cargo xtask setup`)"),
            None => {
                format!("{p} comes with the base system or the Rust toolchain: is PATH right?")
            }
        },
    }
}

/// Whether set-up provides `need` (or the base system has it).
pub fn provides(need: &Need) -> bool {
    match need {
        Need::Target(t) => TARGETS.contains(&t.as_str()),
        Need::Component(c) => COMPONENTS.contains(&c.as_str()),
        Need::Program(p) => {
            BASE_PROGRAMS.contains(&p.as_str())
                || package_of(p).is_some_and(|package| {
                    QEMU_PACKAGES.contains(&package)
                        || KERNEL_PACKAGES.contains(&package)
                        || ARMV6_PACKAGES.contains(&package)
                        || COMPARE_PACKAGES.contains(&package)
                })
        }
    }
}

/// Debian packages the test kernels, kmod-enable-user and the initramfs need
/// (docs/qemu.md, "Test kernels"): the kernel source, the build tools, clang/LLVM
/// 14 (the x86_64 kernel is built with `LLVM=-14`; bindgen uses libclang), the arm64 cross
/// compiler and its static glibc, `modinfo` and the static busybox.
pub const KERNEL_PACKAGES: &[&str] = &[
    SOURCE_PACKAGE,
    "make",
    "gcc",
    "libc6-dev",
    "flex",
    "bison",
    "bc",
    "libelf-dev",
    "libssl-dev",
    "xz-utils",
    "cpio",
    "kmod",
    "clang-14",
    "lld-14",
    "llvm-14",
    "libclang-14-dev",
    "gcc-aarch64-linux-gnu",
    // kmod-enable-user/stock for ARMv6 kernels, and its object checks.
    "gcc-arm-linux-gnueabi",
    // pahole: Debian's kernels have CONFIG_DEBUG_INFO_BTF_MODULES, so building a module
    // against their headers generates its BTF (kmod-enable-user/stock, debian-arm64).
    "dwarves",
    // The cross glibc's static libraries: `cargo xtask bench` links its libperf harness
    // with -static.
    "libc6-dev-arm64-cross",
    BUSYBOX_PACKAGE,
    // dtc: the arm64 idle scenario adds PSCI idle states to QEMU's dumped device tree
    // (tests/src/lib.rs `arm64_idle_dtb`).
    "device-tree-compiler",
];

/// The set-up steps of the kernel side: apt packages, then the pinned bindgen-cli.
pub fn kernel_steps() -> Vec<Step> {
    vec![
        Step::func(
            format!(
                "kernel build tools (apt: {} …)",
                KERNEL_PACKAGES[..4].join(", ")
            ),
            ensure_kernel_packages,
        ),
        Step::func(
            format!(
                "bindgen-cli {} (cargo install --locked, cached)",
                crate::host::bindgen::BINDGEN_VERSION
            ),
            crate::host::bindgen::ensure_bindgen,
        ),
        linux_source_step(),
    ]
}

/// The step that puts the Linux 7.3 source tarball the host tests read in the cache
/// ([`ensure_linux_source_7_3`]).
pub fn linux_source_step() -> Step {
    let tree = pmu_linux_source::Tree::Linux7_3;
    Step::func(
        format!(
            "Linux {} source ({} from Debian's {}, cached)",
            tree.version(),
            tree.package(),
            tree.suite()
        ),
        ensure_linux_source_7_3,
    )
}

/// Fetches Debian 13 backports' `linux-source-7.3` through Debian 13's private apt state
/// and puts its tarball where the host tests look for it
/// (`pmu_linux_source::Tree::Linux7_3`: `<cache root>/linux-source/linux-source-7.3.tar.xz`,
/// with the package version beside it in `linux-source-7.3.version`); nothing is installed
/// on the host. Cached: fetched again only when the file is missing.
pub fn ensure_linux_source_7_3() -> Result<(), String> {
    let tree = pmu_linux_source::Tree::Linux7_3;
    let to = tree.default_tarball();
    let stamp = to.with_extension("").with_extension("version");
    if to.is_file() {
        let version = std::fs::read_to_string(&stamp).unwrap_or_default();
        println!(
            "    {} {} (cached): {}",
            tree.package(),
            version.trim(),
            to.display()
        );
        return Ok(());
    }
    let apt = crate::host::apt::debian(crate::host::apt::Release::Trixie)?;
    let package = apt.show(tree.package())?;
    let debs = apt.fetch(&[tree.package().to_string()])?;
    let deb = debs
        .first()
        .ok_or_else(|| format!("apt-get download {}: no .deb", tree.package()))?;
    let dir = to.parent().expect("the tarball path has a directory");
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let partial = to.with_extension(format!("partial{}", std::process::id()));
    let member = format!("./usr/src/{}.tar.xz", tree.package());
    println!("    {member} from {}", deb.display());
    pmu_qemu::apt::logged(
        &crate::host::apt::log_path(),
        Command::new("sh").arg("-c").arg(format!(
            "dpkg-deb --fsys-tarfile '{}' | tar -xO '{member}' > '{}'",
            deb.display(),
            partial.display()
        )),
    )?;
    std::fs::rename(&partial, &to).map_err(|e| format!("{}: {e}", to.display()))?;
    std::fs::write(&stamp, format!("{}\n", package.version))
        .map_err(|e| format!("{}: {e}", stamp.display()))?;
    println!(
        "    {} {}: {}",
        tree.package(),
        package.version,
        to.display()
    );
    Ok(())
}

/// Installs the missing [`KERNEL_PACKAGES`] with apt; prints what is installed.
pub fn ensure_kernel_packages() -> Result<(), String> {
    ensure_packages(
        KERNEL_PACKAGES,
        &format!("the test kernels need Debian's {} package", SOURCE_PACKAGE),
    )
}

/// Debian packages that link pmu-demo for ARMv6 Linux (`cargo xtask armv6-demo`): the
/// soft-float ARM cross gcc (the linker) and its glibc, whose static libraries are
/// ARMv5TE code the ARM1176 runs; binutils-arm-linux-gnueabi (a dependency of the gcc)
/// brings `arm-linux-gnueabi-readelf`, which the tests read the binary with.
pub const ARMV6_PACKAGES: &[&str] = &["gcc-arm-linux-gnueabi", "libc6-dev-armel-cross"];

/// Installs the missing [`ARMV6_PACKAGES`] with apt.
pub fn ensure_armv6_packages() -> Result<(), String> {
    ensure_packages(
        ARMV6_PACKAGES,
        "the ARMv6 pmu-demo needs the arm-linux-gnueabi cross toolchain",
    )
}

/// Debian packages `cargo xtask pmu-qemu-compare` needs (a measurement, not a step of
/// `test`, so set-up installs them only when it runs): Valgrind, whose callgrind
/// Gungraun's rows and the plain callgrind rows run.
pub const COMPARE_PACKAGES: &[&str] = &["valgrind"];

/// Installs the missing [`COMPARE_PACKAGES`] with apt.
pub fn ensure_compare_packages() -> Result<(), String> {
    ensure_packages(
        COMPARE_PACKAGES,
        "Gungraun and callgrind need Valgrind (Debian's valgrind package)",
    )
}

/// Installs the missing `packages` with apt (`why`: the message where there is no apt);
/// one line on stderr, apt's output in `target/logs/`.
pub fn ensure_packages(packages: &[&str], why: &str) -> Result<(), String> {
    let missing: Vec<&str> = packages
        .iter()
        .copied()
        .filter(|p| crate::host::apt::package_version(p).is_none())
        .collect();
    if missing.is_empty() {
        eprintln!("    all installed");
        return Ok(());
    }
    if !Path::new("/usr/bin/apt-get").exists() {
        return Err(format!(
            "{} missing and this is not a Debian-like system: {why}",
            missing.join(", ")
        ));
    }
    apt_install(&missing, &[])?;
    let still: Vec<&str> = missing
        .into_iter()
        .filter(|p| crate::host::apt::package_version(p).is_none())
        .collect();
    if still.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "still missing after apt-get install: {}",
            still.join(", ")
        ))
    }
}

/// `apt-get update` then `apt-get install -y --no-install-recommends <extra…> <packages…>`,
/// each one line on stderr with its time, the output in `target/logs/`.
fn apt_install(packages: &[&str], extra: &[&str]) -> Result<(), String> {
    crate::engine::step::run_logged(
        "apt: updating the package lists",
        "setup-apt-update",
        Command::new("apt-get")
            .args(["update", "-q"])
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )?;
    crate::engine::step::run_logged(
        &format!("apt: installing {}", packages.join(", ")),
        "setup-apt-install",
        Command::new("apt-get")
            .args(["install", "-y", "--no-install-recommends"])
            .args(extra)
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
}

/// QEMU programs the suite runs: the [`PROGRAMS`] that [`QEMU_PACKAGES`] provide
/// (qemu-system-aarch64 first: its version is the one printed).
fn qemu_programs() -> Vec<&'static str> {
    PROGRAMS
        .iter()
        .filter(|(_, package)| QEMU_PACKAGES.contains(package))
        .map(|(program, _)| *program)
        .collect()
}

/// Debian packages that provide them.
pub const QEMU_PACKAGES: &[&str] = &["qemu-system-arm", "qemu-system-x86", "qemu-user-static"];

fn qemu_version(program: &str) -> Option<String> {
    let out = Command::new(program).arg("--version").output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().next().map(str::to_string)
}

/// Installs QEMU when a program is missing.
///
/// On Debian 12 the image carries qemu-utils from bookworm-backports, which blocks
/// bookworm's own qemu-system 7.2 (docs/qemu.md, "Installing QEMU"), so the backports suite is added
/// and QEMU 10 installed from it. Elsewhere, the distribution's packages.
pub fn ensure_qemu() -> Result<(), String> {
    let programs = qemu_programs();
    let missing: Vec<&str> = programs
        .iter()
        .copied()
        .filter(|p| qemu_version(p).is_none())
        .collect();
    if missing.is_empty() {
        eprintln!("    {}", qemu_version(programs[0]).unwrap_or_default());
        return Ok(());
    }
    if !Path::new("/usr/bin/apt-get").exists() {
        return Err(format!(
            "{} not found and this is not a Debian-like system: install QEMU ≥ 7.2 (system emulators for aarch64 and x86_64) by hand",
            missing.join(", ")
        ));
    }
    let mut extra = Vec::new();
    if crate::host::apt::os_release_codename().as_deref() == Some("bookworm") {
        let sources = Path::new("/etc/apt/sources.list.d/pmu-bookworm-backports.sources");
        let already = std::fs::read_dir("/etc/apt/sources.list.d")
            .map(|dir| {
                dir.flatten().any(|e| {
                    std::fs::read_to_string(e.path()).is_ok_and(|t| {
                        t.lines().any(|l| {
                            !l.trim_start().starts_with('#') && l.contains("bookworm-backports")
                        })
                    })
                })
            })
            .unwrap_or(false);
        if !already {
            eprintln!(
                "    adding the bookworm-backports suite: {}",
                sources.display()
            );
            std::fs::write(
                sources,
                "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n",
            )
            .map_err(|e| format!("cannot write {} (run as root): {e}", sources.display()))?;
        }
        extra.extend(["-t", "bookworm-backports"]);
    }
    apt_install(QEMU_PACKAGES, &extra)?;
    for p in &programs {
        qemu_version(p).ok_or_else(|| format!("{p} still missing after the install"))?;
    }
    eprintln!("    {}", qemu_version(programs[0]).unwrap_or_default());
    Ok(())
}
