//! Test kernels and the module built against them.
//!
//! A kernel is Debian's `linux-source-6.12` built with `make tinyconfig` plus the fragment
//! in `xtask/kernel/<arch>.config`, by the pinned rustc and a pinned `bindgen-cli`. It is
//! built once and cached outside the clone, in
//! `$PMU_CACHE_DIR` or `${XDG_CACHE_HOME:-$HOME/.cache}/pmu-workspace`:
//!
//! ```text
//! tools/bindgen-cli-<version>/bin/bindgen      cargo install --locked
//! src/<package version>/linux-source-6.12/     the extracted source (read-only use: O= builds)
//! kernel/<arch>-<key>/                         the build; `.pmu-complete` when done
//! ```
//!
//! `<key>` hashes everything the result depends on: the source package version, the
//! fragment, `rustc -vV`, the bindgen and C compiler versions, and [`RECIPE`]. Change any
//! and a new build directory is made; the old one stays until removed by hand.

use std::fmt::Write as _;
use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::engine::need::TOOLCHAIN;
use crate::engine::paths::{cache_root, workspace_root};
use crate::host::bindgen::{ensure_bindgen, BINDGEN_VERSION};
use crate::host::setup::SOURCE_PACKAGE;

/// This module's commands in `cargo xtask help`.
pub const USAGE: &str = "    kernel <x86_64|arm64|armv6|armv7>
                      Build the test kernel (Debian's linux-source-6.12,
                      tinyconfig + xtask/kernel/<arch>.config, pinned rustc and
                      bindgen-cli) once; cached outside the clone in
                      ${XDG_CACHE_HOME:-~/.cache}/pmu-workspace (or
                      $PMU_CACHE_DIR), keyed by everything it depends on.
";

/// Where the kernel source package puts the tarball.
const SOURCE_TARBALL: &str = "/usr/src/linux-source-6.12.tar.xz";
const SOURCE_TOP: &str = "linux-source-6.12";

/// Version of the build recipe below: bump it when the commands change, so that cached
/// kernels built the old way are not reused.
const RECIPE: u32 = 2;

/// Name of the stamp file written when a build directory is complete.
const COMPLETE: &str = ".pmu-complete";

/// A test-kernel architecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    /// x86_64, built with clang/LLVM 14 (`LLVM=-14`).
    X86_64,
    /// arm64, cross-built with Debian's aarch64-linux-gnu-gcc.
    Arm64,
    /// 32-bit ARMv6 (the ARM1176 of the Raspberry Pi 1 and Zero), cross-built with
    /// Debian's arm-linux-gnueabi-gcc. Linux 6.12 has no Rust support for 32-bit ARM:
    /// this kernel has no CONFIG_RUST and takes only the stock-kernel module flavour.
    Armv6,
    /// 32-bit ARMv7 multi-platform (the Cortex-A7 of the Raspberry Pi 2, QEMU `-M raspi2b`;
    /// Cortex-A15 on `-M virt`), cross-built with the same arm-linux-gnueabi-gcc; no
    /// CONFIG_RUST either: the stock-kernel module flavour.
    Armv7,
}

impl Arch {
    /// `x86_64` or `arm64` (`aarch64` is accepted too).
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "x86_64" => Some(Self::X86_64),
            "arm64" | "aarch64" => Some(Self::Arm64),
            "armv6" => Some(Self::Armv6),
            "armv7" => Some(Self::Armv7),
            _ => None,
        }
    }

    /// The kernel's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Self::X86_64 => "x86_64",
            Self::Arm64 => "arm64",
            Self::Armv6 => "armv6",
            Self::Armv7 => "armv7",
        }
    }

    /// The Rust target of the static user-space programs for its initramfs (musl where
    /// rustup ships it; ARMv6 has only the `-Zbuild-std` glibc target).
    pub fn user_target(self) -> &'static str {
        match self {
            Self::X86_64 => "x86_64-unknown-linux-musl",
            Self::Arm64 => "aarch64-unknown-linux-musl",
            Self::Armv6 => "arm-unknown-linux-gnueabi",
            Self::Armv7 => "armv7-unknown-linux-gnueabi",
        }
    }

    /// The environment variables that name this architecture's kernel, initramfs and
    /// module for the tests (`tests/tests/kernel_<arch>.rs`).
    pub fn env_names(self) -> [&'static str; 3] {
        match self {
            Arch::X86_64 => [
                "PMU_KERNEL_X86_64",
                "PMU_INITRAMFS_X86_64",
                "PMU_MODULE_X86_64",
            ],
            Arch::Arm64 => [
                "PMU_KERNEL_ARM64",
                "PMU_INITRAMFS_ARM64",
                "PMU_MODULE_ARM64",
            ],
            Arch::Armv6 => [
                "PMU_KERNEL_ARMV6",
                "PMU_INITRAMFS_ARMV6",
                "PMU_MODULE_ARMV6",
            ],
            Arch::Armv7 => [
                "PMU_KERNEL_ARMV7",
                "PMU_INITRAMFS_ARMV7",
                "PMU_MODULE_ARMV7",
            ],
        }
    }

    /// Whether the kernel is built with CONFIG_RUST (and so takes the Rust-for-Linux
    /// module).
    pub fn has_rust(self) -> bool {
        !matches!(self, Self::Armv6 | Self::Armv7)
    }

    /// `make` variables that select the architecture and the compiler; the module must be
    /// built with the same ones.
    pub fn make_vars(self) -> Vec<String> {
        match self {
            Self::X86_64 => vec!["ARCH=x86_64".into(), "LLVM=-14".into()],
            Self::Arm64 => vec![
                "ARCH=arm64".into(),
                "CROSS_COMPILE=aarch64-linux-gnu-".into(),
            ],
            Self::Armv6 | Self::Armv7 => {
                vec!["ARCH=arm".into(), "CROSS_COMPILE=arm-linux-gnueabi-".into()]
            }
        }
    }

    /// The C compiler the kernel is built with (its version is part of the cache key).
    pub fn c_compiler(self) -> &'static str {
        match self {
            Self::X86_64 => "clang-14",
            Self::Arm64 => "aarch64-linux-gnu-gcc",
            Self::Armv6 | Self::Armv7 => "arm-linux-gnueabi-gcc",
        }
    }

    /// The boot image target and where it lands in the build directory.
    fn image(self) -> (&'static str, &'static str) {
        match self {
            Self::X86_64 => ("bzImage", "arch/x86/boot/bzImage"),
            Self::Arm64 => ("Image", "arch/arm64/boot/Image"),
            Self::Armv6 | Self::Armv7 => ("zImage", "arch/arm/boot/zImage"),
        }
    }

    /// Where `make dtbs` puts the Broadcom (Raspberry Pi) device trees; x86 has none.
    fn dts_dir(self) -> Option<&'static str> {
        match self {
            Self::X86_64 => None,
            Self::Arm64 => Some("arch/arm64/boot/dts/broadcom"),
            Self::Armv6 | Self::Armv7 => Some("arch/arm/boot/dts/broadcom"),
        }
    }

    /// The config fragment kept in the repository.
    pub fn fragment(self) -> PathBuf {
        workspace_root()
            .join("xtask/kernel")
            .join(format!("{}.config", self.name()))
    }
}

/// A built (cached) kernel.
pub struct Kernel {
    /// Its architecture.
    pub arch: Arch,
    /// The build directory (`O=`), usable as `KDIR` for out-of-tree modules.
    pub dir: PathBuf,
}

impl Kernel {
    /// The boot image QEMU loads (`bzImage` or `Image`).
    pub fn image(&self) -> PathBuf {
        self.dir.join(self.arch.image().1)
    }

    /// A Raspberry Pi device tree built with the kernel (`name` without `.dtb`, e.g.
    /// `bcm2837-rpi-3-b`).
    ///
    /// # Errors
    /// The architecture has no device trees, or the kernel's config did not build it.
    pub fn dtb(&self, name: &str) -> Result<PathBuf, String> {
        let dir = self
            .arch
            .dts_dir()
            .ok_or_else(|| format!("{} kernels have no device trees", self.arch.name()))?;
        let path = self.dir.join(dir).join(format!("{name}.dtb"));
        if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "{} missing: not built by this kernel's `make dtbs`",
                path.display()
            ))
        }
    }
}
pub(crate) fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._+-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The extracted kernel source, extracting it on first use.
pub fn source_tree() -> Result<(PathBuf, String), String> {
    let version = crate::host::apt::package_version(SOURCE_PACKAGE).ok_or_else(|| {
        format!("{SOURCE_PACKAGE} is not installed: run `cargo xtask setup` (apt-get install {SOURCE_PACKAGE})")
    })?;
    let dir = cache_root().join("src").join(sanitize(&version));
    let tree = dir.join(SOURCE_TOP);
    if dir.join(COMPLETE).is_file() {
        return Ok((tree, version));
    }
    let partial = cache_root()
        .join("src")
        .join(format!("{}.partial", sanitize(&version)));
    let _ = fs::remove_dir_all(&partial);
    fs::create_dir_all(&partial).map_err(|e| format!("{}: {e}", partial.display()))?;
    println!(
        "    extracting {SOURCE_TARBALL} ({SOURCE_PACKAGE} {version}) into {}",
        dir.display()
    );
    let t = Instant::now();
    let status = Command::new("tar")
        .arg("-xf")
        .arg(SOURCE_TARBALL)
        .arg("-C")
        .arg(&partial)
        .status()
        .map_err(|e| format!("cannot run tar: {e}"))?;
    if !status.success() {
        return Err(format!("extracting {SOURCE_TARBALL} failed ({status})"));
    }
    let _ = fs::remove_dir_all(&dir);
    fs::rename(&partial, &dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    fs::write(dir.join(COMPLETE), &version).map_err(|e| format!("{}: {e}", dir.display()))?;
    println!("    extracted in {:.0} s", t.elapsed().as_secs_f64());
    Ok((tree, version))
}

/// 64-bit FNV-1a: a stable, dependency-free hash for the cache key.
fn fnv1a(data: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in data {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// The environment every kernel and module `make` runs with: the pinned bindgen first on
/// PATH, the pinned rustc, fixed build stamps (reproducible images), no inherited make
/// flags, and none of the package variables cargo sets for xtask (clippy-driver would
/// take xtask's `rust-version` for the module's MSRV).
pub fn make_env(cmd: &mut Command) {
    make_env_with(cmd, &[]);
}

/// [`make_env`] with the directories `tools` first in PATH (a kernel's own compiler,
/// where this machine has none of that name: xtask/src/guests/debian/toolchain.rs).
pub fn make_env_with(cmd: &mut Command, tools: &[PathBuf]) {
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if [
            "CARGO_PKG_",
            "CARGO_MANIFEST_",
            "CARGO_CRATE_",
            "CARGO_BIN_",
            "CARGO_PRIMARY_",
        ]
        .iter()
        .any(|prefix| key.starts_with(prefix))
        {
            cmd.env_remove(key.as_ref());
        }
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = tools.to_vec();
    paths.push(crate::host::bindgen::dir());
    paths.extend(std::env::split_paths(&path));
    cmd.env("PATH", std::env::join_paths(paths).unwrap_or(path))
        .env("RUSTUP_TOOLCHAIN", TOOLCHAIN)
        .env("KBUILD_BUILD_TIMESTAMP", "1970-01-01")
        .env("KBUILD_BUILD_USER", "pmu")
        .env("KBUILD_BUILD_HOST", "xtask")
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS");
}

/// The cache key of `arch`'s kernel: every input as text, and its hash.
fn cache_key(arch: Arch, source_version: &str) -> Result<(String, String), String> {
    let fragment = fs::read_to_string(arch.fragment())
        .map_err(|e| format!("{}: {e}", arch.fragment().display()))?;
    let rustc = Command::new("rustc")
        .arg("-vV")
        .env("RUSTUP_TOOLCHAIN", TOOLCHAIN)
        .output()
        .map_err(|e| format!("cannot run rustc: {e}"))?;
    let mut key = String::new();
    let _ = writeln!(key, "recipe {RECIPE}");
    let _ = writeln!(key, "arch {}", arch.name());
    let _ = writeln!(key, "make {}", arch.make_vars().join(" "));
    let _ = writeln!(key, "source {SOURCE_PACKAGE} {source_version}");
    let _ = writeln!(
        key,
        "{}",
        crate::engine::step::first_line(
            crate::host::bindgen::dir().join("bindgen"),
            &["--version"]
        )?
    );
    let _ = writeln!(
        key,
        "cc {}",
        crate::engine::step::first_line(arch.c_compiler(), &["--version"])?
    );
    key += &String::from_utf8_lossy(&rustc.stdout);
    let _ = writeln!(key, "fragment:\n{fragment}");
    let hash = format!("{:016x}", fnv1a(key.as_bytes()));
    Ok((key, hash))
}

/// The last non-empty line of a (growing) log file.
fn last_line(log: &Path) -> String {
    let Ok(mut f) = fs::File::open(log) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(2048)));
    let mut tail = String::new();
    let _ = f.read_to_string(&mut tail);
    tail.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The last `n` lines of a log file.
pub fn tail(log: &Path, n: usize) -> String {
    let text = fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Runs `cmd` with its output appended to `log`, printing a progress line every 20 s.
fn run_logged(what: &str, mut cmd: Command, log: &Path) -> Result<(), String> {
    let t = Instant::now();
    println!("    {what} …");
    let out = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| format!("{}: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start {what}: {e}"))?;
    let mut next_report = Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if t.elapsed() >= next_report {
            println!(
                "      {:>4.0} s  {}",
                t.elapsed().as_secs_f64(),
                last_line(log)
            );
            next_report += Duration::from_secs(20);
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    if status.success() {
        println!("    {what}: done in {:.0} s", t.elapsed().as_secs_f64());
        Ok(())
    } else {
        Err(format!(
            "{what} failed ({status}) after {:.0} s; last lines of {}:\n{}",
            t.elapsed().as_secs_f64(),
            log.display(),
            tail(log, 40)
        ))
    }
}

fn make(source: &Path, dir: &Path, arch: Arch, targets: &[&str]) -> Command {
    let mut cmd = Command::new("make");
    cmd.arg("-C")
        .arg(source)
        .arg(format!("O={}", dir.display()));
    cmd.args(arch.make_vars()).args(targets);
    make_env(&mut cmd);
    cmd
}

/// Checks that every line of the fragment made it into `.config` (a symbol whose
/// dependencies are missing is silently dropped by Kconfig).
fn check_config(arch: Arch, dir: &Path) -> Result<(), String> {
    let config = fs::read_to_string(dir.join(".config")).map_err(|e| e.to_string())?;
    let fragment = fs::read_to_string(arch.fragment()).map_err(|e| e.to_string())?;
    let mut missing = Vec::new();
    for line in fragment.lines().map(str::trim) {
        let is_setting = line.starts_with("CONFIG_")
            || (line.starts_with("# CONFIG_") && line.ends_with(" is not set"));
        if !is_setting {
            continue;
        }
        let wanted = line;
        let present = config.lines().any(|l| l == wanted)
            || (wanted.starts_with('#')
                && !config.lines().any(|l| {
                    let symbol = &wanted[2..wanted.len() - " is not set".len()];
                    l.starts_with(&format!("{symbol}="))
                }));
        if !present {
            missing.push(wanted.to_string());
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the fragment {} did not apply (missing dependencies?): {}",
            arch.fragment().display(),
            missing.join(", ")
        ))
    }
}

/// The kernel for `arch`: from the cache, or built now (minutes) and cached.
pub fn kernel(arch: Arch) -> Result<Kernel, String> {
    let want = format!("bindgen {BINDGEN_VERSION}");
    if crate::engine::step::first_line(crate::host::bindgen::dir().join("bindgen"), &["--version"])
        .ok()
        .as_deref()
        != Some(&want)
    {
        ensure_bindgen()?;
    }
    let (source, version) = source_tree()?;
    let (key, hash) = cache_key(arch, &version)?;
    let dir = cache_root()
        .join("kernel")
        .join(format!("{}-{hash}", arch.name()));
    let kernel = Kernel { arch, dir };
    fs::create_dir_all(cache_root().join("kernel")).map_err(|e| e.to_string())?;
    // One build per key at a time: a second `cargo xtask` (another checkout, a test run)
    // waits here for the first to finish, then finds the result complete.
    let lock_path = cache_root()
        .join("kernel")
        .join(format!("{}-{hash}.lock", arch.name()));
    let lock = fs::File::create(&lock_path).map_err(|e| format!("{}: {e}", lock_path.display()))?;
    if lock.try_lock().is_err() {
        println!(
            "    waiting for another build of this kernel (lock {})",
            lock_path.display()
        );
        lock.lock()
            .map_err(|e| format!("{}: {e}", lock_path.display()))?;
    }
    if kernel.dir.join(COMPLETE).is_file() && kernel.image().is_file() {
        println!(
            "    cached: {} ({SOURCE_PACKAGE} {version}, key {hash})",
            kernel.image().display()
        );
        return Ok(kernel);
    }
    let dir = &kernel.dir;
    fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    fs::write(dir.join("cache-key.txt"), &key).map_err(|e| e.to_string())?;
    let log = dir.join("build.log");
    let _ = fs::remove_file(&log);
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    println!(
        "    building {} kernel in {} (key {hash}, -j{jobs}); log: {}",
        arch.name(),
        dir.display(),
        log.display()
    );
    let started = Instant::now();
    run_logged(
        "make tinyconfig",
        make(&source, dir, arch, &["tinyconfig"]),
        &log,
    )?;
    let mut merge = Command::new(source.join("scripts/kconfig/merge_config.sh"));
    // It writes its temporary files into the current directory: the build directory,
    // never the (shared, clean) source tree.
    merge
        .current_dir(dir)
        .arg("-m")
        .arg("-O")
        .arg(dir)
        .arg(dir.join(".config"))
        .arg(arch.fragment());
    make_env(&mut merge);
    for var in arch.make_vars() {
        if let Some((k, v)) = var.split_once('=') {
            merge.env(k, v);
        }
    }
    run_logged("merge the config fragment", merge, &log)?;
    run_logged(
        "make olddefconfig",
        make(&source, dir, arch, &["olddefconfig"]),
        &log,
    )?;
    check_config(arch, dir)?;
    if arch.has_rust() {
        run_logged(
            "make rustavailable",
            make(&source, dir, arch, &["rustavailable"]),
            &log,
        )?;
    }
    let jobs_arg = format!("-j{jobs}");
    let (image, _) = arch.image();
    let mut targets = vec![jobs_arg.as_str(), image, "modules"];
    if arch.dts_dir().is_some() {
        targets.push("dtbs");
    }
    run_logged(
        &format!("make {}", targets.join(" ")),
        make(&source, dir, arch, &targets),
        &log,
    )?;
    if !kernel.image().is_file() {
        return Err(format!(
            "{} missing after the build",
            kernel.image().display()
        ));
    }
    fs::write(dir.join(COMPLETE), &key).map_err(|e| e.to_string())?;
    println!(
        "    {} kernel built in {:.1} min: {}",
        arch.name(),
        started.elapsed().as_secs_f64() / 60.0,
        kernel.image().display()
    );
    Ok(kernel)
}

/// The module's sources, copied into the build directory (Kbuild builds in place).
const MODULE_FILES: &[&str] = &[
    "Kbuild",
    "Makefile",
    "kmod_enable_user_main.rs",
    "param.rs",
    "percpu.rs",
    "arch_arm64.rs",
    "arch_x86_64.rs",
    "arch_other.rs",
];

/// The directory the module is built in for `arch`.
fn module_dir(arch: Arch) -> PathBuf {
    crate::engine::paths::work_dir()
        .join("kmod-enable-user")
        .join(arch.name())
}

/// Builds kmod-enable-user against `arch`'s test kernel (`make KDIR=…`, the kernel's
/// compiler settings, the kernel's clippy lints); any warning is an error. Returns the
/// `.ko`.
pub fn module(arch: Arch) -> Result<PathBuf, String> {
    if !arch.has_rust() {
        return Err(format!(
            "Linux 6.12 has no Rust support for 32-bit ARM: the {} kernel takes the stock-kernel flavour of kmod-enable-user",
            arch.name()
        ));
    }
    let kernel = kernel(arch)?;
    let dir = module_dir(arch);
    // CLIPPY=1: rustc runs as clippy-driver with the kernel's lint set (SAFETY comments on
    // every unsafe block, …), so lint warnings fail the build too.
    let mut extra = vec!["CLIPPY=1".to_string()];
    if arch == Arch::Arm64 {
        // The grant logic is the stock flavour's Rust object (kmod-enable-user/Makefile
        // builds it through stock/Makefile in a build directory of its own).
        extra.extend(crate::build::stock_module::rust_object_vars("rfl-arm64")?);
    }
    kbuild(
        &workspace_root().join("kmod-enable-user"),
        MODULE_FILES,
        &dir,
        &kernel.dir,
        &arch.make_vars(),
        &extra,
        &[],
        "the module",
        &[
            "kmod_enable_user_main.o",
            "kmod_enable_user.o",
            "kmod_enable_user.ko",
        ],
    )?;
    let ko = dir.join("kmod_enable_user.ko");
    if !ko.is_file() {
        return Err(format!("{} missing after the build", ko.display()));
    }
    if let Ok(info) = Command::new("modinfo").arg(&ko).output() {
        for line in String::from_utf8_lossy(&info.stdout).lines() {
            println!("      {line}");
        }
    }
    Ok(ko)
}

/// Whether a line of build output is a warning (compiler, Kbuild, modpost, rustc, cargo;
/// not `-Dwarnings` in an echoed command line).
pub fn is_warning(line: &str) -> bool {
    line.to_ascii_lowercase().contains("warning:")
}

/// Copies `files` from `src` into `dir` (created), each only when its content changed, so
/// that make's timestamps stay meaningful.
pub fn copy_changed(src: &Path, files: &[&str], dir: &Path) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for f in files {
        let from = src.join(f);
        let to = dir.join(f);
        let new = fs::read(&from).map_err(|e| format!("{}: {e}", from.display()))?;
        if fs::read(&to).ok().as_deref() != Some(&new[..]) {
            fs::write(&to, &new).map_err(|e| format!("{}: {e}", to.display()))?;
        }
    }
    Ok(())
}

/// An out-of-tree Kbuild module: copies `files` from `src` into `dir` (only on change, so
/// that make's timestamps stay meaningful), runs `make -C dir KDIR=kdir make_vars extra`
/// (`tools` first in its PATH) and prints its output (less cargo's `Compiling` lines). A failure or any warning is
/// an error, and `outputs` (in `dir`) are removed then, so that the next run builds (and
/// warns) again instead of finding them up to date. Holds `dir`'s lock
/// ([`crate::engine::lock::exclusive`]) while it builds.
#[allow(clippy::too_many_arguments)]
pub fn kbuild(
    src: &Path,
    files: &[&str],
    dir: &Path,
    kdir: &Path,
    make_vars: &[String],
    extra: &[String],
    tools: &[PathBuf],
    what: &str,
    outputs: &[&str],
) -> Result<(), String> {
    // Two steps of `cargo xtask test`'s lanes may build the same module at once.
    let _lock = crate::engine::lock::exclusive(dir, "a build of the same module")?;
    copy_changed(src, files, dir)?;
    let mut cmd = Command::new("make");
    cmd.arg("-C")
        .arg(dir)
        .arg(format!("KDIR={}", kdir.display()))
        .args(make_vars)
        .args(extra);
    make_env_with(&mut cmd, tools);
    println!(
        "    $ make -C {} KDIR={} {} {}",
        dir.display(),
        kdir.display(),
        make_vars.join(" "),
        extra.join(" ")
    );
    let out = cmd.output().map_err(|e| format!("cannot run make: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for line in text
        .lines()
        .filter(|l| !l.trim_start().starts_with("Compiling "))
    {
        println!("      {line}");
    }
    let failure = if out.status.success() {
        text.lines()
            .find(|l| is_warning(l))
            .map(|w| format!("{what} built with warnings (they are errors here): {w}"))
    } else {
        Some(format!("building {what} failed ({})", out.status))
    };
    match failure {
        Some(why) => {
            for f in outputs {
                let _ = fs::remove_file(dir.join(f));
            }
            Err(why)
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_reference_vectors() {
        // FNV-1a 64 test vectors from the reference implementation (isthe.com/chongo).
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn arch_names_round_trip() {
        for arch in [Arch::X86_64, Arch::Arm64, Arch::Armv6, Arch::Armv7] {
            assert_eq!(Arch::parse(arch.name()), Some(arch));
            assert!(arch.fragment().is_file(), "{}", arch.fragment().display());
        }
        assert_eq!(Arch::parse("aarch64"), Some(Arch::Arm64));
        assert_eq!(Arch::parse("riscv64"), None);
    }

    #[test]
    fn sanitized_versions_are_path_safe() {
        assert_eq!(sanitize("6.12.118-1~deb12u1"), "6.12.118-1_deb12u1");
        assert_eq!(sanitize("1:2.0"), "1_2.0");
    }
}
