//! Installing what the suite needs, idempotently.
//!
//! The pinned toolchain comes from rust-toolchain.toml (rustup installs it on first use);
//! its targets and components are added explicitly here because rustup does not add
//! missing ones to an already installed toolchain in every version.

use std::path::Path;
use std::process::Command;

use crate::step::Step;

/// The channel pinned in rust-toolchain.toml.
pub const TOOLCHAIN: &str = "1.95.0";

/// rustup targets the suite builds for.
pub const TARGETS: &[&str] = &[
    "aarch64-unknown-none",
    "x86_64-unknown-none",
    "aarch64-unknown-linux-musl",
    "x86_64-unknown-linux-musl",
    "armv7a-none-eabi",
];

/// rustup components the suite uses (rust-src: build-std for ARMv6).
pub const COMPONENTS: &[&str] = &["rust-src", "clippy", "rustfmt"];

/// The set-up steps.
pub fn steps() -> Vec<Step> {
    let mut targets = vec!["target", "add", "--toolchain", TOOLCHAIN];
    targets.extend_from_slice(TARGETS);
    let mut components = vec!["component", "add", "--toolchain", TOOLCHAIN];
    components.extend_from_slice(COMPONENTS);
    vec![
        Step::new(
            format!("rustup: targets for {TOOLCHAIN} ({})", TARGETS.join(", ")),
            "rustup",
            targets,
        ),
        Step::new(
            format!(
                "rustup: components for {TOOLCHAIN} ({})",
                COMPONENTS.join(", ")
            ),
            "rustup",
            components,
        ),
        Step::func(
            "QEMU (qemu-system-aarch64, qemu-system-x86_64, qemu-aarch64-static, qemu-arm-static)",
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

/// Debian packages the test kernels, kmod-enable-user and the initramfs need
/// (docs/qemu.md, "Test kernels"): the kernel source, the build tools, clang/LLVM
/// 14 (the x86_64 kernel is built with `LLVM=-14`; bindgen uses libclang), the arm64 cross
/// compiler and its static glibc, `modinfo` and the static busybox.
pub const KERNEL_PACKAGES: &[&str] = &[
    crate::kernel::SOURCE_PACKAGE,
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
    crate::initramfs::BUSYBOX_PACKAGE,
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
                crate::kernel::BINDGEN_VERSION
            ),
            crate::kernel::ensure_bindgen,
        ),
    ]
}

/// Installs the missing [`KERNEL_PACKAGES`] with apt; prints what is installed.
pub fn ensure_kernel_packages() -> Result<(), String> {
    ensure_packages(
        KERNEL_PACKAGES,
        &format!(
            "the test kernels need Debian's {} package",
            crate::kernel::SOURCE_PACKAGE
        ),
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

/// Installs the missing `packages` with apt (`why`: the message where there is no apt);
/// prints what is installed.
pub fn ensure_packages(packages: &[&str], why: &str) -> Result<(), String> {
    let mut missing = Vec::new();
    let mut installed = Vec::new();
    for package in packages {
        match crate::kernel::package_version(package) {
            Some(version) => installed.push(format!("{package} {version}")),
            None => missing.push(*package),
        }
    }
    if !installed.is_empty() {
        println!("    installed: {}", installed.join(", "));
    }
    if missing.is_empty() {
        return Ok(());
    }
    println!("    missing: {} — installing with apt", missing.join(", "));
    if !Path::new("/usr/bin/apt-get").exists() {
        return Err(format!(
            "{} missing and this is not a Debian-like system: {why}",
            missing.join(", ")
        ));
    }
    let mut install = vec!["install", "-y", "--no-install-recommends"];
    install.extend_from_slice(&missing);
    run("apt-get", &["update", "-q"])?;
    run("apt-get", &install)?;
    let still: Vec<&str> = missing
        .into_iter()
        .filter(|p| crate::kernel::package_version(p).is_none())
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

/// QEMU programs the suite runs.
pub const QEMU_PROGRAMS: &[&str] = &[
    "qemu-system-aarch64",
    "qemu-system-x86_64",
    "qemu-aarch64-static",
    "qemu-arm-static",
];

/// Debian packages that provide them.
const QEMU_PACKAGES: &[&str] = &["qemu-system-arm", "qemu-system-x86", "qemu-user-static"];

fn qemu_version(program: &str) -> Option<String> {
    let out = Command::new(program).arg("--version").output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().next().map(str::to_string)
}

fn os_codename() -> String {
    std::fs::read_to_string("/etc/os-release")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("VERSION_CODENAME=")
                .map(|v| v.trim_matches('"').to_string())
        })
        .unwrap_or_default()
}

fn run(program: &str, args: &[&str]) -> Result<(), String> {
    println!("    $ {program} {}", args.join(" "));
    let status = Command::new(program)
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdin(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{program} {}` failed ({status})", args.join(" ")))
    }
}

/// Installs QEMU when a program is missing.
///
/// On Debian 12 the image carries qemu-utils from bookworm-backports, which blocks
/// bookworm's own qemu-system 7.2 (docs/qemu.md, "Installing QEMU"), so the backports suite is added
/// and QEMU 10 installed from it. Elsewhere, the distribution's packages.
pub fn ensure_qemu() -> Result<(), String> {
    let missing: Vec<&str> = QEMU_PROGRAMS
        .iter()
        .copied()
        .filter(|p| qemu_version(p).is_none())
        .collect();
    if missing.is_empty() {
        for p in QEMU_PROGRAMS {
            println!("    {p}: {}", qemu_version(p).unwrap_or_default());
        }
        return Ok(());
    }
    println!("    missing: {} — installing with apt", missing.join(", "));
    if !Path::new("/usr/bin/apt-get").exists() {
        return Err(format!(
            "{} not found and this is not a Debian-like system: install QEMU ≥ 7.2 (system emulators for aarch64 and x86_64) by hand",
            missing.join(", ")
        ));
    }
    let mut install = vec!["install", "-y", "--no-install-recommends"];
    if os_codename() == "bookworm" {
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
            println!(
                "    adding the bookworm-backports suite: {}",
                sources.display()
            );
            std::fs::write(
                sources,
                "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n",
            )
            .map_err(|e| format!("cannot write {} (run as root): {e}", sources.display()))?;
        }
        install.extend(["-t", "bookworm-backports"]);
    }
    install.extend_from_slice(QEMU_PACKAGES);
    run("apt-get", &["update", "-q"])?;
    run("apt-get", &install)?;
    for p in QEMU_PROGRAMS {
        let v = qemu_version(p).ok_or_else(|| format!("{p} still missing after the install"))?;
        println!("    {p}: {v}");
    }
    Ok(())
}
