//! The stock-kernel flavour of kmod-enable-user (`kmod-enable-user/stock/`): C glue plus
//! the register logic of pmu-armv8 / pmu-armv6 as one no_std Rust object, for kernels
//! built without CONFIG_RUST.
//!
//! [`build`] runs the flavour's own Makefile (which builds and checks the Rust object,
//! then runs Kbuild) against any kernel build directory, in a copy of the sources under
//! `target/kmod-enable-user/stock-<name>/`, with warnings as errors, and checks the
//! `.ko` it returns (ELF machine, name, license). On top of it:
//!
//! - [`arm64_test_kernel`]: against the workspace's arm64 test kernel (which has
//!   CONFIG_RUST, so both flavours run in the same guest);
//! - against the headers of Debian's own arm64 kernels, Debian 12's 6.1 and 6.12,
//!   Debian 13's 6.12 and trixie-backports' 7.3 (no kernel Rust to build against: the
//!   point of this flavour), fetched through each release's private apt state (the
//!   headers, the common headers and the amd64 `linux-kbuild` whose host tools must run
//!   here): `debian_arm64` in xtask/src/guests/modules.rs;
//! - [`armv6`]: against an ARMv6 (ARM1176, `ARCH=arm`) kernel build directory;
//! - [`armv7`]: the ARMv7 flavour (`FLAVOUR=armv7`) against a 32-bit ARM kernel build
//!   directory; [`wrong_flavour`] builds each 32-bit flavour against the other's test
//!   kernel, for the tests that prove a CPU of the other kind refuses it at load.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::build::kernel::{kbuild, Arch};
use crate::engine::paths::workspace_root;

/// The flavour's sources, copied into the build directory (Kbuild builds in place).
pub const SOURCES: &[&str] = &[
    "Kbuild",
    "features.mk",
    "Makefile",
    "check-object.sh",
    "kmod_enable_user_glue.c",
    "kmod_enable_user_stock.h",
    "kmod_enable_user_perf.c",
    "kmod_enable_user_perf.h",
    "kmod_enable_user_owners.c",
    "kmod_enable_user_owners.h",
    "kmod_enable_user_uapi.h",
];

/// What the module is called, in both flavours (they are alternatives).
pub const MODULE_NAME: &str = "kmod_enable_user";

/// `make` variables of an ARMv6 kernel (the Raspberry Pi 1 / Zero, `bcm2835`).
pub fn armv6_make_vars() -> Vec<String> {
    vec!["ARCH=arm".into(), "CROSS_COMPILE=arm-linux-gnueabi-".into()]
}

/// `make` variables of an ARMv7 kernel (the Raspberry Pi 2, and Pi 3/4/5 on a 32-bit
/// kernel): the ARMv7 flavour.
pub fn armv7_make_vars() -> Vec<String> {
    vec![
        "ARCH=arm".into(),
        "CROSS_COMPILE=arm-linux-gnueabi-".into(),
        "FLAVOUR=armv7".into(),
    ]
}

/// The directory the stock module is built in for `name` (arm64, debian-arm64, armv6).
pub fn build_dir(name: &str) -> PathBuf {
    crate::engine::paths::work_dir()
        .join("kmod-enable-user")
        .join(format!("stock-{name}"))
}

/// The cargo target directory the Rust object for `name` is built in: one per build
/// directory, since the flags follow the kernel's configuration (branch protection) and
/// cargo would otherwise rebuild `core` whenever they change between two kernels. It
/// sits in the cargo target directory ([`crate::engine::paths::target_dir`]), which
/// `cargo xtask test` keeps outside the clone: the `-Zbuild-std` `core` of each
/// configuration is then built once per machine, not once per run (cargo still
/// rebuilds the crate itself from the clone's sources).
fn rust_target_dir(name: &str) -> PathBuf {
    crate::engine::paths::target_dir()
        .join("kmod-enable-user-stock")
        .join(name)
}

/// The `make` variables with which kmod-enable-user/Makefile (the Rust-for-Linux
/// flavour) builds the stock flavour's Rust object for arm64: the stock sources copied
/// into [`build_dir`]`(name)` (`STOCK_DIR`), the crate, and its cargo target directory.
pub fn rust_object_vars(name: &str) -> Result<Vec<String>, String> {
    let dir = build_dir(name);
    let src = workspace_root().join("kmod-enable-user/stock");
    crate::build::kernel::copy_changed(&src, SOURCES, &dir)?;
    Ok(vec![
        format!("STOCK_DIR={}", dir.display()),
        format!("RUST_MANIFEST={}", src.join("rust/Cargo.toml").display()),
        format!("RUST_TARGET_DIR={}", rust_target_dir(name).display()),
    ])
}

/// The ELF machine `make_vars` build for (`readelf -h` wording).
fn expected_machine(make_vars: &[String]) -> Result<&'static str, String> {
    match make_vars.iter().find_map(|v| v.strip_prefix("ARCH=")) {
        Some("arm64") => Ok("AArch64"),
        Some("arm") => Ok("ARM"),
        other => Err(format!(
            "kmod-enable-user/stock builds for ARCH=arm64 or ARCH=arm, not {other:?}"
        )),
    }
}

/// Builds kmod_enable_user.ko (stock flavour) against the kernel build directory `kdir`
/// with the kernel's `make_vars` (`ARCH=…`, `CROSS_COMPILE=…`), in
/// [`build_dir`]`(name)`. Any warning is an error. Checks the result (ELF machine,
/// module name, license) and returns the `.ko`.
pub fn build(kdir: &Path, make_vars: &[String], name: &str) -> Result<PathBuf, String> {
    build_with_tools(kdir, make_vars, name, &[])
}

/// [`build`] with the directories `tools` first in make's PATH: a kernel's own compiler
/// (Debian's headers name theirs, `aarch64-linux-gnu-gcc-14`, and Kbuild finds it there).
pub fn build_with_tools(
    kdir: &Path,
    make_vars: &[String],
    name: &str,
    tools: &[PathBuf],
) -> Result<PathBuf, String> {
    let machine = expected_machine(make_vars)?;
    let dir = build_dir(name);
    let src = workspace_root().join("kmod-enable-user/stock");
    let started = std::time::Instant::now();
    kbuild(
        &src,
        SOURCES,
        &dir,
        kdir,
        make_vars,
        &[
            format!("RUST_MANIFEST={}", src.join("rust/Cargo.toml").display()),
            format!("RUST_TARGET_DIR={}", rust_target_dir(name).display()),
        ],
        tools,
        "the stock module",
        &[
            "kmod_enable_user_glue.o",
            "kmod_enable_user.o",
            "kmod_enable_user.ko",
        ],
    )?;
    let ko = dir.join(format!("{MODULE_NAME}.ko"));
    if !ko.is_file() {
        return Err(format!("{} missing after the build", ko.display()));
    }
    println!(
        "    built in {:.1} s: {}",
        started.elapsed().as_secs_f64(),
        ko.display()
    );
    let got = elf_machine(&ko)?;
    if got != machine {
        return Err(format!(
            "{}: ELF machine {got}, expected {machine}",
            ko.display()
        ));
    }
    for (field, want) in [("name", MODULE_NAME), ("license", "Dual MIT/GPL")] {
        let value = modinfo(&ko, field)?;
        if value != want {
            return Err(format!(
                "{}: modinfo {field} = {value:?}, expected {want:?}",
                ko.display()
            ));
        }
    }
    if machine == "AArch64" {
        let parms = modinfo(&ko, "parmtype")?;
        for want in ["user_access:uint", "cycle_counter:bool"] {
            if !parms.lines().any(|l| l == want) {
                return Err(format!(
                    "{}: parameter {want} missing ({parms:?})",
                    ko.display()
                ));
            }
        }
    }
    println!("    {}: ELF machine {got}", ko.display());
    for line in run_output("modinfo", &[&ko.display().to_string()])?.lines() {
        println!("      {line}");
    }
    Ok(ko)
}

/// `readelf -h`'s "Machine:" of `path` ("AArch64", "ARM", …).
pub fn elf_machine(path: &Path) -> Result<String, String> {
    let text = run_output("readelf", &["-h", &path.display().to_string()])?;
    text.lines()
        .find_map(|l| l.trim().strip_prefix("Machine:"))
        .map(|m| m.trim().to_string())
        .ok_or_else(|| format!("readelf -h {}: no Machine line", path.display()))
}

/// `modinfo -F field` of `ko` (several values: one per line).
pub fn modinfo(ko: &Path, field: &str) -> Result<String, String> {
    Ok(
        run_output("modinfo", &["-F", field, &ko.display().to_string()])?
            .trim_end()
            .to_string(),
    )
}

fn run_output(program: &str, args: &[&str]) -> Result<String, String> {
    crate::engine::step::stdout_of(Command::new(program).args(args))
}

/// The stock module against the workspace's arm64 test kernel (cached).
pub fn arm64_test_kernel() -> Result<PathBuf, String> {
    let kernel = crate::build::kernel::kernel(Arch::Arm64)?;
    build(&kernel.dir, &Arch::Arm64.make_vars(), "arm64")
}

/// The stock module against an ARMv6 kernel build directory `kdir` (`ARCH=arm`).
pub fn armv6(kdir: &Path) -> Result<PathBuf, String> {
    build(kdir, &armv6_make_vars(), "armv6")
}

/// The ARMv7 flavour against a 32-bit ARM kernel build directory `kdir`.
pub fn armv7(kdir: &Path) -> Result<PathBuf, String> {
    build(kdir, &armv7_make_vars(), "armv7")
}

/// The 32-bit flavours built against the other flavour's test kernel: (the ARMv6
/// flavour for the armv7 kernel, the ARMv7 flavour for the armv6 kernel). Loaded on a
/// Cortex-A7 and an ARM1176 respectively, each must refuse with its reason.
pub fn wrong_flavour() -> Result<(PathBuf, PathBuf), String> {
    let v7 = crate::build::kernel::kernel(Arch::Armv7)?;
    let v6 = crate::build::kernel::kernel(Arch::Armv6)?;
    let mut armv6_vars = armv6_make_vars();
    armv6_vars.push("FLAVOUR=armv6".into());
    let armv6_on_v7 = build(&v7.dir, &armv6_vars, "armv6-on-armv7-kernel")?;
    let armv7_on_v6 = build(&v6.dir, &armv7_make_vars(), "armv7-on-armv6-kernel")?;
    Ok((armv6_on_v7, armv7_on_v6))
}

/// Makes every symlink under `dir` that points to an absolute path (`/usr/…`, as
/// installed by dpkg) point into the extraction `root` instead.
pub(crate) fn relink_absolute(dir: &Path, root: &Path) -> Result<(), String> {
    for entry in fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
    {
        let path = entry.path();
        let meta = fs::symlink_metadata(&path).map_err(|e| e.to_string())?;
        if meta.file_type().is_symlink() {
            let target = fs::read_link(&path).map_err(|e| e.to_string())?;
            if let Ok(inside) = target.strip_prefix("/") {
                let fixed = root.join(inside);
                fs::remove_file(&path).map_err(|e| e.to_string())?;
                std::os::unix::fs::symlink(&fixed, &path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
            }
        } else if meta.is_dir() {
            relink_absolute(&path, root)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::kernel::{is_warning, make_env};

    #[test]
    fn make_vars_select_the_elf_machine() {
        assert_eq!(expected_machine(&Arch::Arm64.make_vars()), Ok("AArch64"));
        assert_eq!(expected_machine(&armv6_make_vars()), Ok("ARM"));
        assert!(expected_machine(&Arch::X86_64.make_vars()).is_err());
    }

    /// GCC's and modpost's spellings ("warning:", "WARNING: modpost: …") count;
    /// rustc's `-Dwarnings` in an echoed command line does not.
    #[test]
    fn warnings_are_recognised() {
        assert!(is_warning("glue.c:3:1: warning: unused variable 'x'"));
        assert!(is_warning("WARNING: modpost: missing MODULE_DESCRIPTION()"));
        assert!(!is_warning(
            "RUSTFLAGS=\"-Cforce-unwind-tables=no -Dwarnings\" cargo build"
        ));
    }

    /// check-object.sh must fail on an object that uses FP registers, leaves a symbol
    /// undefined and exports nothing the glue needs: compiled here from C with the
    /// cross compilers (a double multiply uses d0/d1 on AArch64 and VFP d6/d7 on ARM
    /// with -mfpu=vfp, the AAPCS/AAPCS64 FP registers).
    #[test]
    fn check_object_rejects_fp_undefined_and_missing_exports() {
        let dir = std::env::temp_dir().join(format!("pmu-check-object-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let source = "extern double g(double);\ndouble f(double x) { return g(x) * 2.5; }\n";
        let script = workspace_root().join("kmod-enable-user/stock/check-object.sh");
        for (arch, gcc, flags) in [
            ("arm64", "aarch64-linux-gnu-gcc", &["-O2"][..]),
            (
                "arm",
                "arm-linux-gnueabi-gcc",
                &["-O2", "-mfloat-abi=softfp", "-mfpu=vfp"][..],
            ),
        ] {
            let obj = gcc_object(&dir, gcc, flags, &format!("bad-{arch}"), source);
            let out = Command::new("sh")
                .arg(&script)
                .arg(arch)
                .arg(&obj)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stderr);
            assert!(
                !out.status.success(),
                "{arch}: check-object.sh passed a bad object"
            );
            assert!(text.contains("exports missing"), "{arch}: {text}");
            assert!(
                text.contains("allow-list") && text.contains(": g"),
                "{arch}: {text}"
            );
            assert!(text.contains("FP/SIMD registers used"), "{arch}: {text}");
        }
        let _ = fs::remove_dir_all(&dir);
    }

    /// A kernel configuration with only what kmod-enable-user/stock/Makefile and
    /// check-object.sh read: arm64 with BTI and pointer authentication for the kernel
    /// (the strictest case: neither the workspace's test kernel nor Debian 12's arm64
    /// kernel, which has CONFIG_ARM64_PTR_AUTH_KERNEL=y but no CONFIG_ARM64_BTI_KERNEL,
    /// exercises the BTI check), 32-bit ARM plain.
    fn stand_in_config(arch: &str) -> &'static str {
        match arch {
            "arm64" => {
                "CONFIG_ARM64=y\nCONFIG_ARM64_PTR_AUTH_KERNEL=y\nCONFIG_ARM64_BTI_KERNEL=y\n"
            }
            "armv7" => "CONFIG_ARM=y\nCONFIG_CPU_V7=y\n",
            "armv7-thumb2" => "CONFIG_ARM=y\nCONFIG_CPU_V7=y\nCONFIG_THUMB2_KERNEL=y\n",
            _ => "CONFIG_ARM=y\nCONFIG_CPU_V6=y\n",
        }
    }

    /// check-object.sh on `obj` for `arch` with the kernel configuration `config`: its
    /// exit status and stderr.
    fn check_object(arch: &str, obj: &Path, config: Option<&Path>) -> (bool, String) {
        let script = workspace_root().join("kmod-enable-user/stock/check-object.sh");
        let mut cmd = Command::new("sh");
        cmd.arg(&script).arg(arch).arg(obj);
        if let Some(config) = config {
            cmd.arg(config);
        }
        let out = cmd.output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Compiles `source` with `gcc` and `flags` into `dir/name.o`.
    fn gcc_object(dir: &Path, gcc: &str, flags: &[&str], name: &str, source: &str) -> PathBuf {
        let c = dir.join(format!("{name}.c"));
        fs::write(&c, source).unwrap();
        let obj = dir.join(format!("{name}.o"));
        let status = Command::new(gcc)
            .args(flags)
            .arg("-c")
            .arg(&c)
            .arg("-o")
            .arg(&obj)
            .status()
            .unwrap_or_else(|e| panic!("{gcc}: {e} (cargo xtask setup installs it)"));
        assert!(status.success(), "{gcc} {flags:?} {name}.c");
        obj
    }

    /// What the kernel would trip over, each built on purpose with gcc, each rejected:
    ///
    /// - arm64 without BTI (`-mbranch-protection=none`) for a kernel with
    ///   CONFIG_ARM64_BTI_KERNEL=y: a global function and a static one whose address is
    ///   stored (an indirect call target) without `bti c`, no BTI property note;
    /// - a jump table (a dense switch with `--param case-values-threshold=1`: `br xN`);
    /// - x18 named (the shadow call stack register);
    /// - a TLS relocation (`__thread`: R_AARCH64_TLSLE_*, which apply_relocate_add() in
    ///   arch/arm64/kernel/module.c does not handle), and on 32-bit ARM GOT and TLS ones
    ///   (`-fPIC`: R_ARM_GOT_BREL, R_ARM_TLS_GD32, not in arch/arm/kernel/module.c).
    ///
    /// The same C with `-mbranch-protection=bti` and no jump tables has every landing
    /// pad: the BTI check then passes (it is not a check that always fails).
    #[test]
    fn check_object_rejects_missing_bti_x18_jump_tables_and_unhandled_relocations() {
        let dir = std::env::temp_dir().join(format!("pmu-check-object-bti-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let config = dir.join("bti.config");
        fs::write(&config, stand_in_config("arm64")).unwrap();
        let source = "\
__thread int per_thread;
static int twice(int x) { return 2 * x; }
int (*volatile hook)(int) = twice;
int pick(int k, int x)
{
\tswitch (k) {
\tcase 0: return x + 11; case 1: return x * 3; case 2: return x - 7; case 3: return x ^ 5;
\tcase 4: return x << 2; case 5: return x | 9; case 6: return x & 3; case 7: return -x;
\tdefault: return 0;
\t}
}
int use_x18(int x) { __asm__ volatile(\"add x18, x18, #1\"); return x + per_thread; }
";
        let gcc = "aarch64-linux-gnu-gcc";
        let common = ["-O2", "-fno-asynchronous-unwind-tables"];
        let bad = gcc_object(
            &dir,
            gcc,
            &[
                &common[..],
                &[
                    "-mbranch-protection=none",
                    "--param",
                    "case-values-threshold=1",
                ],
            ]
            .concat(),
            "no-bti",
            source,
        );
        let (ok, text) = check_object("arm64", &bad, Some(&config));
        assert!(!ok, "check-object.sh passed an object without BTI:\n{text}");
        for want in [
            "no BTI in the GNU property note",
            "functions without a BTI landing pad",
            "  pick (global): starts with",
            "  twice (address taken in .rela.data.rel.local): starts with",
            "computed branches (jump tables",
            "x18 used",
            "add\tx18, x18",
            "relocations the module loader does not apply (arch/arm64/kernel/module.c)",
            "R_AARCH64_TLSLE_ADD_TPREL_HI12",
        ] {
            assert!(text.contains(want), "{want:?} missing:\n{text}");
        }
        // Without the kernel's BTI the same object is not judged on landing pads.
        let (_, text) = check_object("arm64", &bad, None);
        assert!(!text.contains("BTI landing pad"), "{text}");

        let padded = gcc_object(
            &dir,
            gcc,
            &[
                &common[..],
                &["-mbranch-protection=bti", "-fno-jump-tables"],
            ]
            .concat(),
            "bti",
            source,
        );
        let (ok, text) = check_object("arm64", &padded, Some(&config));
        assert!(!ok, "x18 and TLS are still there:\n{text}");
        assert!(!text.contains("landing pad"), "{text}");
        assert!(!text.contains("GNU property note"), "{text}");
        assert!(!text.contains("computed branches"), "{text}");

        let bad32 = gcc_object(
            &dir,
            "arm-linux-gnueabi-gcc",
            &["-O2", "-fPIC"],
            "got-tls",
            "extern int shared_counter;\n__thread int per_thread;\nint get(void) { return shared_counter + per_thread; }\n",
        );
        let (ok, text) = check_object("arm", &bad32, None);
        assert!(!ok, "{text}");
        for want in [
            "relocations the module loader does not apply (arch/arm/kernel/module.c)",
            "R_ARM_GOT_BREL in .rel.text (shared_counter)",
            "R_ARM_TLS_GD32 in .rel.text (per_thread)",
        ] {
            assert!(text.contains(want), "{want:?} missing:\n{text}");
        }
        let _ = fs::remove_dir_all(&dir);
    }

    /// Without the kernel's .config the Makefile stops at once, naming the file, instead
    /// of building the object without the kernel's branch protection.
    #[test]
    fn makefile_requires_the_kernel_config() {
        let dir = std::env::temp_dir().join(format!("pmu-stock-noconfig-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        for f in SOURCES {
            fs::copy(
                workspace_root().join("kmod-enable-user/stock").join(f),
                dir.join(f),
            )
            .unwrap();
        }
        let mut cmd = Command::new("make");
        cmd.arg("-C")
            .arg(&dir)
            .arg("ARCH=arm64")
            .arg("KDIR=/nonexistent-kernel")
            .arg("kmod_enable_user_rust.o_shipped");
        make_env(&mut cmd);
        let out = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{text}");
        assert!(
            text.contains("/nonexistent-kernel/.config not found: KDIR=/nonexistent-kernel must be a configured kernel build directory"),
            "{text}"
        );
        // Nothing was built.
        assert!(!dir.join("kmod_enable_user_rust.o_shipped").exists());
        let _ = fs::remove_dir_all(&dir);
    }

    /// The Rust object for both kernels' targets, built by the Makefile's own rule (no
    /// kernel needed: a stand-in .config), passes check-object.sh: ELF machine, every
    /// function the glue declares in kmod_enable_user_stock.h exported, no undefined
    /// symbol but the kernel's exported memory functions (not even the panic function:
    /// no panic path survived), no FP/SIMD register, only relocations the module loader
    /// applies; arm64: no x18, no jump table, and BTI landing pads where the kernel's
    /// CONFIG_ARM64_BTI_KERNEL needs them.
    #[test]
    fn rust_objects_pass_their_checks() {
        let header = fs::read_to_string(
            workspace_root().join("kmod-enable-user/stock/kmod_enable_user_stock.h"),
        )
        .unwrap();
        // (ARCH, FLAVOUR, stand-in configuration, ELF machine, exported prefix): the
        // ARMv7 flavour for an ARM-mode kernel and for a Thumb-2 one.
        for (arch, flavour, kernel, machine, prefix) in [
            ("arm64", "arm64", "arm64", "AArch64", "kmod_eu_arm64_"),
            ("arm", "armv6", "armv6", "ARM", "kmod_eu_armv6_"),
            ("arm", "armv7", "armv7", "ARM", "kmod_eu_armv7_"),
            ("arm", "armv7", "armv7-thumb2", "ARM", "kmod_eu_armv7_"),
        ] {
            let name = format!("object-test-{kernel}");
            let dir = build_dir(&name);
            fs::create_dir_all(&dir).unwrap();
            let config = dir.join("stand-in.config");
            fs::write(&config, stand_in_config(kernel)).unwrap();
            for f in SOURCES {
                fs::copy(
                    workspace_root().join("kmod-enable-user/stock").join(f),
                    dir.join(f),
                )
                .unwrap();
            }
            let mut cmd = Command::new("make");
            cmd.arg("-C")
                .arg(&dir)
                .arg(format!("ARCH={arch}"))
                .arg(format!("FLAVOUR={flavour}"))
                .arg(format!(
                    "RUST_MANIFEST={}",
                    workspace_root()
                        .join("kmod-enable-user/stock/rust/Cargo.toml")
                        .display()
                ))
                .arg(format!(
                    "RUST_TARGET_DIR={}",
                    rust_target_dir(&name).display()
                ))
                // No kernel build directory: a stand-in .config with what the
                // Makefile reads from it (arm64: BTI and pointer authentication for the
                // kernel), so the object carries the landing pads and check-object.sh
                // looks for them.
                .arg("KDIR=/nonexistent")
                .arg(format!("KERNEL_CONFIG={}", config.display()))
                .arg("kmod_enable_user_rust.o_shipped");
            make_env(&mut cmd);
            let out = cmd.output().unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(out.status.success(), "{arch}:\n{text}");
            assert!(text.contains(&format!("ELF machine {machine}")), "{text}");
            // No panic path survived: the panic function is not imported (the kernel's
            // exported memory functions may be).
            assert!(text.contains("check-object: undefined symbols: "), "{text}");
            assert!(!text.contains("kmod_enable_user_rust_panic ("), "{text}");
            assert!(!text.contains("outside the allow-list"), "{text}");
            assert!(text.contains("FP/SIMD registers: none"), "{text}");
            assert!(
                text.contains("(all applied by the module loader)"),
                "{text}"
            );
            if arch == "arm64" {
                for line in [
                    "x18: never used",
                    "computed branches: none (no jump tables)",
                    "GNU property note: BTI",
                    "BTI landing pads: every global or address-taken function starts with one",
                ] {
                    assert!(text.contains(line), "{arch}: {line:?} missing:\n{text}");
                }
            } else {
                assert!(text.contains("relocation sections: REL only"), "{text}");
                let set = if kernel.ends_with("thumb2") {
                    "Thumb"
                } else {
                    "ARM"
                };
                assert!(
                    text.contains(&format!("instruction set: {set}, as the kernel's")),
                    "{kernel}: {text}"
                );
            }
            let obj = dir.join("kmod_enable_user_rust.o_shipped");
            assert_eq!(elf_machine(&obj).unwrap(), machine);
            // Every Rust function the header declares is defined by the object.
            let defined =
                run_output("nm", &["-g", "--defined-only", &obj.display().to_string()]).unwrap();
            let declared: Vec<&str> = header
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|w| w.starts_with(prefix))
                .collect();
            assert!(declared.len() >= 4, "{declared:?}");
            for f in declared {
                assert!(
                    defined.lines().any(|l| l.ends_with(&format!(" T {f}"))),
                    "{arch}: {f} not exported:\n{defined}"
                );
            }
        }
    }
}
