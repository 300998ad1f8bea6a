//! `cargo xtask e2e debian-arm64` and `debian-armhf`: Debian's kernels booted with the
//! stock module and pmu-demo, and their steps.

use std::path::Path;
use std::process::Command;

use super::initramfs::initramfs;
use super::kernels::{kernel, ARM64_METAPACKAGES};
use super::module::{guest_module_path, stock_module};
use super::perf::perf;

/// This module's commands in `cargo xtask help`.
pub const USAGE: &str = "    e2e <debian-arm64|debian-armhf>
                      Debian 12's own kernels from Debian's packages (apt, private
                      state, cached in the cache root): arm64: the default 6.1 and
                      6.12 on virt -cpu max -smp 2 and once at EL2 (VHE), the stock
                      module built against each kernel's headers, Debian's perf
                      (linux-perf:arm64 and its libraries), pmu-demo: exact counts,
                      perf stat -e instructions:u = the direct read, perf stat -a
                      across insmod/hotplug/idle/rmmod without a jump, direct reads
                      after a perf_user_access session; armhf: the armmp kernel on
                      virt -cpu cortex-a15 with the ARMv7 flavour and the ARMv7
                      pmu-demo (tests/tests/debian_<arch>.rs, docs/debian.md).
";

/// Runs `cargo test -p pmu-tests --test <test>` with `env` set.
fn cargo_test(test: &str, env: &[(String, String)]) -> Result<(), String> {
    for (k, v) in env {
        eprintln!("    {k}={v}");
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut args = vec![
        "test".to_string(),
        "-p".into(),
        crate::build::images::E2E_CRATE.into(),
        "--test".into(),
        test.into(),
        "--".into(),
        "--test-threads=2".into(),
    ];
    // PMU_E2E_FILTER: only the tests whose names contain it (cargo test's filter).
    if let Ok(filter) = std::env::var("PMU_E2E_FILTER") {
        args.push(filter);
    }
    eprintln!("    $ cargo {}", args.join(" "));
    let status = Command::new(cargo)
        .args(&args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(crate::engine::paths::workspace_root())
        .status()
        .map_err(|e| format!("cannot run cargo test: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the {test} end-to-end tests failed ({status})"))
    }
}

/// The environment variables tests/tests/debian_arm64.rs reads.
pub mod arm64_env {
    /// Debian 12's default arm64 kernel image (`linux-image-arm64`: 6.1).
    pub const KERNEL_DEFAULT: &str = "PMU_DEBIAN_ARM64_KERNEL_DEFAULT";
    /// Its release (`uname -r`).
    pub const RELEASE_DEFAULT: &str = "PMU_DEBIAN_ARM64_RELEASE_DEFAULT";
    /// The opt-in 6.12 arm64 kernel image (`linux-image-6.12-arm64`).
    pub const KERNEL_612: &str = "PMU_DEBIAN_ARM64_KERNEL_612";
    /// Its release.
    pub const RELEASE_612: &str = "PMU_DEBIAN_ARM64_RELEASE_612";
    /// The initramfs (both modules, perf, pmu-demo, el0-probe).
    pub const INITRAMFS: &str = "PMU_DEBIAN_ARM64_INITRAMFS";
    /// The version of Debian's perf in it.
    pub const PERF_VERSION: &str = "PMU_DEBIAN_PERF_VERSION";
}

/// The environment variables tests/tests/debian_armhf.rs reads.
pub mod armhf_env {
    /// Debian 12's armmp kernel image (`linux-image-armmp`, a zImage).
    pub const KERNEL: &str = "PMU_DEBIAN_ARMHF_KERNEL";
    /// Its release (`uname -r`).
    pub const RELEASE: &str = "PMU_DEBIAN_ARMHF_RELEASE";
    /// Debian 12's armmp-lpae kernel image (`linux-image-armmp-lpae`: LPAE page tables,
    /// for Cortex-A7/A15/A17 machines with more than 4 GiB).
    pub const KERNEL_LPAE: &str = "PMU_DEBIAN_ARMHF_KERNEL_LPAE";
    /// Its release.
    pub const RELEASE_LPAE: &str = "PMU_DEBIAN_ARMHF_RELEASE_LPAE";
    /// The initramfs (the ARMv7 stock module, the ARMv7 pmu-demo, Debian's perf).
    pub const INITRAMFS: &str = "PMU_DEBIAN_ARMHF_INITRAMFS";
    /// The version of Debian's perf in it.
    pub const PERF_VERSION: &str = "PMU_DEBIAN_ARMHF_PERF_VERSION";
}

/// `cargo xtask e2e debian-arm64`: Debian 12's default (6.1) and 6.12 arm64 kernels, the
/// stock module built against each one's headers, Debian's perf, pmu-demo and el0-probe
/// in one initramfs; then tests/tests/debian_arm64.rs boots them.
pub fn run_arm64() -> Result<(), String> {
    use crate::build::kernel::Arch;
    let started = std::time::Instant::now();
    let apt = crate::host::apt::debian(crate::host::apt::Release::Bookworm)?;
    let [default, newer] = ARM64_METAPACKAGES.map(|meta| kernel(&apt, meta, "arm64", "arm64"));
    let (default, newer) = (default?, newer?);
    if default.release == newer.release {
        return Err(format!(
            "linux-image-arm64 and linux-image-6.12-arm64 are the same kernel {}",
            default.release
        ));
    }
    let mut files = Vec::new();
    for k in [&default, &newer] {
        let ko = stock_module(k, &Arch::Arm64.make_vars())?;
        files.push((guest_module_path(&k.release), ko));
    }
    // Debian 12's only perf is 6.1's: the default kernel's version.
    let perf = perf(&apt, "arm64", &default.version)?;
    files.extend(perf.files.iter().cloned());
    files.push((
        "bin/pmu-demo".into(),
        crate::build::initramfs::pmu_demo(Arch::Arm64)?,
    ));
    files.push((
        "bin/el0-probe".into(),
        crate::build::initramfs::guest_probe(Arch::Arm64, "el0-probe")?,
    ));
    files.push((
        "bin/debian-block".into(),
        crate::build::initramfs::guest_probe(Arch::Arm64, "debian-block")?,
    ));
    let busybox = crate::host::apt::busybox("arm64")?;
    let initramfs = initramfs("debian-arm64", &busybox, &[perf.libdir], &files)?;
    eprintln!(
        "    artefacts ready in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let path = |p: &Path| p.display().to_string();
    cargo_test(
        "debian_arm64",
        &[
            (arm64_env::KERNEL_DEFAULT.into(), path(&default.image)),
            (arm64_env::RELEASE_DEFAULT.into(), default.release.clone()),
            (arm64_env::KERNEL_612.into(), path(&newer.image)),
            (arm64_env::RELEASE_612.into(), newer.release.clone()),
            (arm64_env::INITRAMFS.into(), path(&initramfs)),
            (arm64_env::PERF_VERSION.into(), perf.version.clone()),
        ],
    )
}

/// `cargo xtask e2e debian-armhf`: Debian 12's two armhf kernels (armmp, armmp-lpae),
/// the ARMv7 flavour of the stock module built against each one's headers, the static
/// ARMv7 pmu-demo; then tests/tests/debian_armhf.rs boots them on `-M virt -cpu
/// cortex-a15`.
pub fn run_armhf() -> Result<(), String> {
    let started = std::time::Instant::now();
    let apt = crate::host::apt::debian(crate::host::apt::Release::Bookworm)?;
    let armmp = kernel(&apt, "linux-image-armmp", "armhf", "armmp")?;
    let lpae = kernel(&apt, "linux-image-armmp-lpae", "armhf", "armmp-lpae")?;
    let mut files = vec![("bin/pmu-demo".into(), crate::build::arm32_demo::armv7()?)];
    for k in [&armmp, &lpae] {
        let ko = stock_module(k, &crate::build::stock_module::armv7_make_vars())?;
        files.push((guest_module_path(&k.release), ko));
    }
    // Debian's perf for armhf (hard-float, dynamically linked: its loader and libraries
    // go in beside it): the armmp kernel's own version.
    let perf = perf(&apt, "armhf", &armmp.version)?;
    files.extend(perf.files.iter().cloned());
    // Debian's armel busybox (ARMv5TE, EABI soft-float) runs on an armhf system.
    let busybox = crate::host::apt::busybox("armel")?;
    let initramfs = initramfs("debian-armhf", &busybox, &[perf.libdir], &files)?;
    eprintln!(
        "    artefacts ready in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    cargo_test(
        "debian_armhf",
        &[
            (armhf_env::KERNEL.into(), armmp.image.display().to_string()),
            (armhf_env::RELEASE.into(), armmp.release.clone()),
            (
                armhf_env::KERNEL_LPAE.into(),
                lpae.image.display().to_string(),
            ),
            (armhf_env::RELEASE_LPAE.into(), lpae.release.clone()),
            (armhf_env::INITRAMFS.into(), initramfs.display().to_string()),
            (armhf_env::PERF_VERSION.into(), perf.version.clone()),
        ],
    )
}

/// The step of `cargo xtask e2e debian-arm64` (and of `cargo xtask test`).
pub fn arm64_step() -> crate::engine::step::Step {
    crate::engine::step::Step::func(
        "Debian 12's own arm64 kernels (linux-image-arm64: 6.1, linux-image-6.12-arm64) with the stock module built against their headers, Debian's perf, pmu-demo (apt, cached; tests/tests/debian_arm64.rs)",
        run_arm64,
    )
    .needs_programs(&[
        "apt-get",
        "apt-cache",
        "dpkg-deb",
        "tar",
        "readelf",
        "make",
        "gcc",
        "aarch64-linux-gnu-gcc",
        "modinfo",
        // The idle device tree (tests/src/lib.rs `arm64_idle_dtb`).
        "dtc",
        pmu_tests::QEMU_AARCH64,
    ])
}

/// The step of `cargo xtask e2e debian-armhf` (and of `cargo xtask test`).
pub fn armhf_step() -> crate::engine::step::Step {
    crate::engine::step::Step::func(
        "Debian 12's own armhf kernels (linux-image-armmp, linux-image-armmp-lpae) on virt -cpu cortex-a15 with the ARMv7 stock module built against their headers, the ARMv7 pmu-demo, Debian's armhf perf (apt, cached; tests/tests/debian_armhf.rs)",
        run_armhf,
    )
    .needs_programs(&[
        "apt-get",
        "apt-cache",
        "dpkg-deb",
        "tar",
        "make",
        "gcc",
        "arm-linux-gnueabi-gcc",
        "modinfo",
        "readelf",
        pmu_tests::QEMU_ARM,
    ])
}
