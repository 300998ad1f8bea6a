//! The initramfs of the end-to-end runs: busybox, the static `pmu-demo`, the module and
//! an `/init` script, packed as an uncompressed newc cpio (every kernel can unpack it).
//!
//! busybox is Debian's `busybox-static`: the host's package on x86_64, and on arm64 the
//! arm64 package fetched with `apt-get download` through a private apt state (its own
//! sources list, lists and cache under the cache root), so the host's apt configuration
//! is never changed. The `/init` script is `tests/guest/common.sh` followed by
//! `tests/guest/<arch>.sh`: it runs the scenario named by `scenario=` on the kernel
//! command line, prints `RESULT <scenario> key=value …` lines and powers off.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::build::kernel::Arch;
use crate::engine::paths::workspace_root;
use crate::host::apt::package_version;
use crate::host::setup::BUSYBOX_PACKAGE;

/// Where `/init` finds the module.
pub const MODULE_PATH: &str = "/lib/modules/kmod_enable_user.ko";

/// Where `/init` finds the stock-kernel flavour of the module (`flavour=stock` on the
/// kernel command line; arm64 only).
pub const STOCK_MODULE_PATH: &str = "/lib/modules/stock/kmod_enable_user.ko";

/// One entry of the archive, owning its path and data.
pub enum Entry {
    /// A directory (mode 0755).
    Dir(&'static str),
    /// A regular file.
    File {
        /// Path inside the archive, without a leading `/`.
        path: String,
        /// Permission bits.
        mode: u32,
        /// Contents.
        data: Vec<u8>,
    },
    /// A character device node.
    CharDev {
        /// Path inside the archive.
        path: &'static str,
        /// Device major number.
        major: u32,
        /// Device minor number.
        minor: u32,
    },
}

/// The archive of `entries`: newc ("070701"), owned by root, with fixed timestamps (the
/// same inputs give the same bytes), written by pmu-qemu's writer ([`pmu_qemu::cpio`]).
pub fn cpio(entries: &[Entry]) -> Result<Vec<u8>, String> {
    let members: Vec<pmu_qemu::cpio::Entry> = entries
        .iter()
        .map(|entry| match entry {
            Entry::Dir(path) => pmu_qemu::cpio::Entry::Dir(path.as_bytes()),
            Entry::File { path, mode, data } => pmu_qemu::cpio::Entry::File {
                path: path.as_bytes(),
                mode: *mode,
                data,
            },
            Entry::CharDev { path, major, minor } => pmu_qemu::cpio::Entry::CharDev {
                path: path.as_bytes(),
                major: *major,
                minor: *minor,
            },
        })
        .collect();
    pmu_qemu::cpio::archive(&members)
}

/// The static busybox binary for `arch`.
fn busybox(arch: Arch) -> Result<PathBuf, String> {
    match arch {
        Arch::X86_64 => {
            let path = PathBuf::from("/bin/busybox");
            if package_version(BUSYBOX_PACKAGE).is_none() || !path.is_file() {
                return Err(format!(
                    "{BUSYBOX_PACKAGE} is not installed: run `cargo xtask setup`"
                ));
            }
            Ok(path)
        }
        Arch::Arm64 => crate::host::apt::busybox("arm64"),
        // Debian's armel port is ARMv5TE code, which the ARM1176 (ARMv6) runs.
        Arch::Armv6 | Arch::Armv7 => crate::host::apt::busybox("armel"),
    }
}

/// Builds the static `pmu-demo` for `arch` (musl target; `.cargo/config.toml` links it
/// with rust-lld, no cross C toolchain needed) and returns its path.
pub(crate) fn pmu_demo(arch: Arch) -> Result<PathBuf, String> {
    if arch == Arch::Armv6 {
        // -Zbuild-std with glibc, checked static and ARMv6.
        return crate::build::arm32_demo::armv6();
    }
    if arch == Arch::Armv7 {
        // The same, for ARMv7.
        return crate::build::arm32_demo::armv7();
    }
    let target = arch.user_target();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let args = demo_build(arch);
    let mut cmd = Command::new(cargo);
    cmd.args(&args).current_dir(workspace_root());
    println!("    $ cargo {}", args.join(" "));
    let status = cmd.status().map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!("building pmu-demo for {target} failed ({status})"));
    }
    let path = crate::engine::paths::target_dir()
        .join(target)
        .join("release/pmu-demo");
    if !path.is_file() {
        return Err(format!("{} missing after the build", path.display()));
    }
    Ok(path)
}

/// `cargo` arguments that build the static `pmu-demo` for a musl `arch` (x86_64,
/// arm64).
fn demo_build(arch: Arch) -> Vec<&'static str> {
    vec![
        "build",
        "--release",
        "-p",
        "userspace-demo",
        "--target",
        arch.user_target(),
    ]
}

/// `cargo` arguments that build the [`ARM64_EXAMPLES`] and `pmu-guest` for `arch`, in
/// one run (arm64 only: the other guests run none).
fn examples_build(arch: Arch) -> Option<Vec<&'static str>> {
    if arch != Arch::Arm64 {
        return None;
    }
    let mut args = vec![
        "build",
        "--release",
        "-p",
        "pmu-linux",
        "-p",
        "pmu-criterion",
        "-p",
        "pmu-guest",
    ];
    for (_, example) in ARM64_EXAMPLES {
        args.extend(["--example", example]);
    }
    args.extend(["--bin", "pmu-guest", "--target", arch.user_target()]);
    Some(args)
}

/// The `cargo` runs that build the workspace's programs a musl `arch`'s guests run
/// (`pmu-demo`; on arm64 also the examples and `pmu-guest`), as the guests' own builds
/// run them. The test plan's build steps are these same runs, so a guest later finds
/// its programs built: built in one run with another set of packages, a crate's
/// features would differ (pmu-guest turns on pmu-linux's `rig`) and the guest's build
/// would compile them again.
pub(crate) fn guest_builds(arch: Arch) -> Vec<Vec<&'static str>> {
    let mut runs = vec![demo_build(arch)];
    runs.extend(examples_build(arch));
    runs
}

/// The programs the arm64 guest runs besides `pmu-demo`, static for the musl target like
/// it, by their name in `/bin`: pmu-linux's `count` and pmu-criterion's `bench` examples
/// (tests/guest/arm64.sh `scenario_examples`: what a user writes), and the guest rigs,
/// `pmu-guest` (tests/guest: `read-costs`, `hazard-stats`, `region-check`,
/// `sentinel-check`, `hybrid`, `multiplex-now`).
const ARM64_EXAMPLES: [(&str, &str); 2] = [("count", "count"), ("pmu-criterion-bench", "bench")];

/// `pmu-guest` for `arch` (built with the [`ARM64_EXAMPLES`]: one cargo run), for a
/// guest that runs its rigs besides the test kernels' (the Debian arm64 run's
/// `library-grant`).
pub(crate) fn pmu_guest(arch: Arch) -> Result<PathBuf, String> {
    examples(arch)?
        .into_iter()
        .find_map(|(name, path)| (name == "pmu-guest").then_some(path))
        .ok_or_else(|| format!("no pmu-guest for {arch:?}"))
}

/// Builds the [`ARM64_EXAMPLES`] and `pmu-guest` in one cargo run and returns their
/// paths, named as they go into `/bin` (none for the other architectures).
fn examples(arch: Arch) -> Result<Vec<(&'static str, PathBuf)>, String> {
    if arch != Arch::Arm64 {
        return Ok(Vec::new());
    }
    let release = arm64_examples_built(&[])?;
    ARM64_EXAMPLES
        .into_iter()
        .map(|(name, file)| (name, release.join("examples").join(file)))
        .chain([("pmu-guest", release.join("pmu-guest"))])
        .map(|(name, path)| {
            if path.is_file() {
                Ok((name, path))
            } else {
                Err(format!("{} missing after the build", path.display()))
            }
        })
        .collect()
}

/// Runs the arm64 guests' own build of the [`ARM64_EXAMPLES`] and `pmu-guest` (one cargo
/// run), with `extra` more examples of pmu-linux or pmu-criterion in it, and returns the
/// target's `release` folder. The extra examples change no crate's features (their
/// packages are in the run already), so the run compiles only them, where `cargo run -p
/// pmu-linux --example …` would compile pmu-linux once more with another feature set.
pub(crate) fn arm64_examples_built(extra: &[&'static str]) -> Result<PathBuf, String> {
    let arch = Arch::Arm64;
    let mut args = examples_build(arch).ok_or("the examples are built for arm64 only")?;
    for example in extra {
        args.extend(["--example", example]);
    }
    let target = arch.user_target();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    println!("    $ cargo {}", args.join(" "));
    let status = Command::new(cargo)
        .args(&args)
        .current_dir(workspace_root())
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!(
            "building the examples and pmu-guest for {target} failed ({status})"
        ));
    }
    Ok(crate::engine::paths::target_dir()
        .join(target)
        .join("release"))
}

/// Builds a guest probe (`tests/guest/<name with _>.rs`, one static program for `arch`):
/// x86_64 `pce-probe` (one process that loads the module and executes rdpmc), arm64
/// `el0-probe` (which PMU accesses the module's grant allows at EL0), `debian-block` (a
/// loop of known instruction count) and `kvm-pmu` (a minimal VMM whose KVM guest counts
/// on every vPMU counter; only in the Debian initramfs, run at EL2).
pub(crate) fn guest_probe(arch: Arch, name: &str) -> Result<PathBuf, String> {
    let source = workspace_root()
        .join("tests/guest")
        .join(format!("{}.rs", name.replace('-', "_")));
    let out_dir = crate::engine::paths::work_dir().join("initramfs");
    fs::create_dir_all(&out_dir).map_err(|e| e.to_string())?;
    let out = out_dir.join(name);
    // One build at a time: rustc names its intermediate objects in the output's
    // directory after the crate, so two builds at once (one per lane, or `xtask bench`
    // beside `xtask hazards`) delete each other's objects before the link.
    let _build = crate::engine::lock::exclusive(&out, &format!("the {name} build"))?;
    // Built beside and renamed: a step in the other lane may be packing the last one.
    let tmp = crate::engine::lock::temporary_beside(&out);
    let mut cmd = Command::new("rustc");
    cmd.env("RUSTUP_TOOLCHAIN", crate::engine::need::TOOLCHAIN)
        .args([
            "--edition",
            "2021",
            "-C",
            "opt-level=2",
            "-C",
            "panic=abort",
            "-C",
            "target-feature=+crt-static",
            "--target",
            arch.user_target(),
        ]);
    if arch == Arch::Arm64 {
        // As .cargo/config.toml: rustc's own lld links musl self-contained.
        cmd.args(["-C", "linker=rust-lld"]);
    }
    let status = cmd
        .arg("-o")
        .arg(&tmp)
        .arg(&source)
        .status()
        .map_err(|e| format!("cannot run rustc: {e}"))?;
    if !status.success() {
        let _ = fs::remove_file(&tmp);
        return Err(format!("building {} failed ({status})", source.display()));
    }
    fs::rename(&tmp, &out).map_err(|e| format!("{} -> {}: {e}", tmp.display(), out.display()))?;
    Ok(out)
}

pub fn read(path: &Path) -> Result<Vec<u8>, String> {
    fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The programs [`guest_copy`] runs (a step that packs an initramfs needs them).
pub const PROGRAMS: &[&str] = &["llvm-strip-14"];

/// A program this workspace built, as a guest gets it: a copy of `path` without its
/// DWARF sections (`llvm-strip-14 --strip-debug`; the symbol table stays, so a panic
/// or perf in the guest still names functions), written beside it as `<name>.guest`
/// and made again when the program is newer. The release profile keeps line tables
/// (`debug = 1`) for the host's use; in a guest they are only bytes every boot
/// unpacks: the arm64 initramfs is 143 MB with them and 26 MB without, and the arm64
/// test kernel reached its first `RESULT` line after 1.9-2.4 s with them and
/// 1.1 s without (measured 2026-12-07, `-smp 2`, `-icount`).
pub(crate) fn guest_copy(path: &Path) -> Result<PathBuf, String> {
    let mut name = path
        .file_name()
        .ok_or_else(|| format!("{}: not a file", path.display()))?
        .to_os_string();
    name.push(".guest");
    let out = path.with_file_name(&name);
    let modified = |p: &Path| fs::metadata(p).and_then(|m| m.modified()).ok();
    if let (Some(copy), Some(program)) = (modified(&out), modified(path)) {
        if copy >= program {
            return Ok(out);
        }
    }
    // Both lanes may pack the same program: each writes its own file, then renames.
    name.push(format!(".{}", std::process::id()));
    let tmp = path.with_file_name(&name);
    let status = Command::new("llvm-strip-14")
        .arg("--strip-debug")
        .arg("-o")
        .arg(&tmp)
        .arg(path)
        .status()
        .map_err(|e| format!("cannot run llvm-strip-14 (apt: llvm-14): {e}"))?;
    if !status.success() {
        let _ = fs::remove_file(&tmp);
        return Err(format!(
            "llvm-strip-14 --strip-debug {} failed ({status})",
            path.display()
        ));
    }
    fs::rename(&tmp, &out).map_err(|e| format!("{} -> {}: {e}", tmp.display(), out.display()))?;
    Ok(out)
}

/// The `/init` script for `arch`.
pub fn init_script(arch: Arch) -> Result<Vec<u8>, String> {
    let guest = workspace_root().join("tests/guest");
    let mut script = read(&guest.join("common.sh"))?;
    script.extend(read(&guest.join(format!("{}.sh", arch.name())))?);
    script.extend_from_slice(b"\nmain\n");
    Ok(script)
}

/// Where the initramfs of `arch` is written.
pub fn path(arch: Arch) -> PathBuf {
    crate::engine::paths::work_dir()
        .join("initramfs")
        .join(format!("{}.cpio", arch.name()))
}

/// Builds the initramfs of `arch` around the module's flavours: `rust` (Rust-for-Linux,
/// at [`MODULE_PATH`]) and `stock` (no CONFIG_RUST needed, at [`STOCK_MODULE_PATH`]),
/// each when given (the armv6 kernel takes only the stock one).
pub fn build(arch: Arch, rust: Option<&Path>, stock: Option<&Path>) -> Result<PathBuf, String> {
    build_with_modules(arch, rust, stock, &[], path(arch))
}

/// Builds the initramfs of `arch` around the module `ko`, with more executables
/// (`bin/<name>` from a path: `cargo xtask bench`'s libperf harness) and written to `out`.
pub fn build_with(
    arch: Arch,
    ko: &Path,
    extra: &[(&str, PathBuf)],
    out: PathBuf,
) -> Result<PathBuf, String> {
    build_with_modules(arch, Some(ko), None, extra, out)
}

/// The directories every guest's initramfs starts with, and `/dev/console` (5, 1: the
/// kernel opens it for init's stdio before devtmpfs is mounted; Documentation/
/// admin-guide/devices.txt).
pub fn skeleton() -> Vec<Entry> {
    vec![
        Entry::Dir("bin"),
        Entry::Dir("dev"),
        Entry::CharDev {
            path: "dev/console",
            major: 5,
            minor: 1,
        },
        Entry::Dir("lib"),
        Entry::Dir("lib/modules"),
        Entry::Dir("proc"),
        Entry::Dir("sys"),
        Entry::Dir("tmp"),
    ]
}

/// [`build_with`], plus the stock-kernel flavour of the module at [`STOCK_MODULE_PATH`].
pub fn build_with_modules(
    arch: Arch,
    rust: Option<&Path>,
    stock: Option<&Path>,
    extra: &[(&str, PathBuf)],
    out: PathBuf,
) -> Result<PathBuf, String> {
    let busybox = busybox(arch)?;
    let demo = pmu_demo(arch)?;
    let mut entries = skeleton();
    entries.extend([
        Entry::File {
            path: "init".into(),
            mode: 0o755,
            data: init_script(arch)?,
        },
        Entry::File {
            path: "lib/kmemleak.awk".into(),
            mode: 0o644,
            data: read(&workspace_root().join("tests/guest/kmemleak.awk"))?,
        },
        Entry::File {
            path: "bin/busybox".into(),
            mode: 0o755,
            data: read(&busybox)?,
        },
        Entry::File {
            path: "bin/pmu-demo".into(),
            mode: 0o755,
            data: read(&guest_copy(&demo)?)?,
        },
    ]);
    if let Some(ko) = rust {
        entries.push(Entry::File {
            path: MODULE_PATH.trim_start_matches('/').into(),
            mode: 0o644,
            data: read(ko)?,
        });
    }
    if let Some(stock) = stock {
        entries.push(Entry::Dir("lib/modules/stock"));
        entries.push(Entry::File {
            path: STOCK_MODULE_PATH.trim_start_matches('/').into(),
            mode: 0o644,
            data: read(stock)?,
        });
    }
    // debian-block (tests/guest/debian_block.rs): the static program of known
    // instruction count that `pmu-demo stat` counts in the arm64 guest too;
    // thread-grant (tests/guest/thread_grant.rs): the per-thread grant under kmemleak.
    let probes: &[&str] = match arch {
        Arch::X86_64 => &["pce-probe"],
        Arch::Arm64 => &["el0-probe", "debian-block", "thread-grant"],
        Arch::Armv6 | Arch::Armv7 => &[],
    };
    for &name in probes {
        entries.push(Entry::File {
            path: format!("bin/{name}"),
            mode: 0o755,
            data: read(&guest_copy(&guest_probe(arch, name)?)?)?,
        });
    }
    // The workspace's Rust programs go in as [`guest_copy`] makes them; the caller's
    // `extra` files as they are (the bench's libperf harnesses are gcc's static
    // programs, whose `.rela.plt` llvm-strip-14 refuses: "Link field value 35 in
    // section .rela.plt is not a symbol table").
    let programs = examples(arch)?
        .into_iter()
        .map(|(name, from)| Ok((name, guest_copy(&from)?)))
        .collect::<Result<Vec<_>, String>>()?;
    for (name, from) in programs.iter().chain(extra) {
        // A bare name is an executable in /bin; a path (`lib/modules/…`) goes there.
        entries.push(Entry::File {
            path: if name.contains('/') {
                (*name).to_string()
            } else {
                format!("bin/{name}")
            },
            mode: 0o755,
            data: read(from)?,
        });
    }
    let archive = cpio(&entries)?;
    if let Some(dir) = out.parent() {
        fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    // A QEMU of another step may be reading the previous archive.
    crate::engine::lock::write_atomically(&out, &archive)?;
    println!(
        "    initramfs: {} ({} KiB: busybox, pmu-demo{}{}{}, /init)",
        out.display(),
        archive.len() / 1024,
        if rust.is_some() {
            ", kmod_enable_user.ko"
        } else {
            ""
        },
        if stock.is_some() {
            ", stock/kmod_enable_user.ko"
        } else {
            ""
        },
        if arch == Arch::X86_64 {
            ", pce-probe"
        } else {
            ""
        }
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ELF section names of `path`, as `readelf -SW` lists them (`[Nr] Name …`;
    /// section 0, the null section, has none).
    fn section_names(path: &Path) -> Vec<String> {
        let text = crate::engine::step::stdout_of(
            std::process::Command::new("readelf").arg("-SW").arg(path),
        )
        .unwrap();
        text.lines()
            .filter_map(|l| l.trim_start().strip_prefix('['))
            .filter_map(|l| l.split_once(']'))
            .filter(|(nr, _)| nr.trim().parse::<u32>().is_ok_and(|n| n > 0))
            .filter_map(|(_, rest)| rest.split_whitespace().next().map(String::from))
            .collect()
    }

    /// This test's own program (a dev build: DWARF in `.debug_*` sections) as a guest
    /// gets it: no `.debug_*` section, the symbol table kept, the same `.text`; a
    /// second call finds the copy and leaves it as it is.
    #[test]
    fn guest_copy_drops_dwarf_and_keeps_symbols() {
        let dir = std::env::temp_dir().join(format!("xtask-guest-copy-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let program = dir.join("program");
        fs::copy(std::env::current_exe().unwrap(), &program).unwrap();
        let before = section_names(&program);
        assert!(before.iter().any(|n| n == ".debug_info"), "{before:?}");
        let copy = guest_copy(&program).unwrap();
        assert_eq!(copy, dir.join("program.guest"));
        let after = section_names(&copy);
        assert!(!after.iter().any(|n| n.starts_with(".debug_")), "{after:?}");
        for kept in [".text", ".symtab", ".strtab"] {
            assert!(after.iter().any(|n| n == kept), "{kept}: {after:?}");
        }
        let made = fs::metadata(&copy).unwrap().modified().unwrap();
        assert_eq!(guest_copy(&program).unwrap(), copy);
        assert_eq!(fs::metadata(&copy).unwrap().modified().unwrap(), made);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn cpio_newc_layout() {
        let archive = cpio(&[
            Entry::Dir("bin"),
            Entry::File {
                path: "init".into(),
                mode: 0o755,
                data: b"#!/bin/sh\n".to_vec(),
            },
        ])
        .unwrap();
        // Header: magic + 13 fields of 8 hex digits; name padded so data starts 4-aligned.
        assert!(archive.starts_with(b"070701"));
        assert_eq!(&archive[6..14], b"00000001", "ino");
        assert_eq!(&archive[14..22], b"000041ed", "mode: directory 0755");
        assert_eq!(&archive[110..114], b"bin\0");
        let file = &archive[116..];
        assert_eq!(&file[14..22], b"000081ed", "mode: regular file 0755");
        assert_eq!(&file[54..62], b"0000000a", "size");
        // 110-byte header + "init\0" = 115, padded to 116.
        let data_at = 116 + 116;
        assert_eq!(&archive[data_at..data_at + 10], b"#!/bin/sh\n");
        assert!(archive
            .windows(b"TRAILER!!!\0".len())
            .any(|w| w == b"TRAILER!!!\0"));
        assert!(archive.len().is_multiple_of(4));
    }

    #[test]
    fn init_scripts_exist_and_call_main() {
        for arch in [Arch::X86_64, Arch::Arm64] {
            let script = String::from_utf8(init_script(arch).expect("guest scripts")).unwrap();
            assert!(script.starts_with("#!/bin/busybox sh\n"), "{}", arch.name());
            assert!(script.ends_with("\nmain\n"));
        }
    }

    /// Runs the guests' kmemleak sorter (tests/guest/kmemleak.awk) under the host's
    /// busybox awk, the applet the guests run.
    fn sort_kmemleak(report: &str) -> String {
        use std::io::Write;
        let mut child = Command::new("busybox")
            .args(["awk", "-f"])
            .arg(workspace_root().join("tests/guest/kmemleak.awk"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("busybox (Debian's busybox-static; `cargo xtask test` installs it)");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(report.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout)
            .unwrap()
            .trim_end()
            .to_string()
    }

    /// Reports of the arm64 test kernel's kmemleak in the stress scenario
    /// (tests/guest/common.sh), copied from failed runs: `struct cred`s of the guest's
    /// shell, allocated by clone and by execve, unreferenced for one scan.
    const CRED_OF_CLONE: &str = r#"unreferenced object 0xfff00000085f8d80 (size 192):
  comm "init", pid 1, jiffies 4294895843
  hex dump (first 32 bytes):
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ................
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ................
  backtrace (crc 208ad03f):
    kmemleak_alloc+0x28/0x34
    slab_post_alloc_hook.constprop.0+0x94/0x9c
    slab_alloc_node.isra.0+0xb4/0xcc
    kmem_cache_alloc_noprof+0x14/0x1c
    prepare_creds+0x24/0x88
    copy_creds+0x54/0x8c
    copy_process+0x2e0/0x12f0
    kernel_clone+0x94/0x200
    __do_sys_clone+0x5c/0x74
    __arm64_sys_clone+0x18/0x20
    do_el0_svc+0xd8/0xe4
    el0_svc+0x18/0x44
    el0t_64_sync_handler+0x58/0x128
    el0t_64_sync+0x14c/0x150
"#;
    const CRED_OF_EXECVE: &str = r#"unreferenced object 0xfff00000085ce300 (size 192):
  comm "init", pid 173, jiffies 4294894092
  hex dump (first 32 bytes):
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ................
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ................
  backtrace (crc 583ff6e2):
    kmemleak_alloc+0x28/0x34
    slab_post_alloc_hook.constprop.0+0x94/0x9c
    slab_alloc_node.isra.0+0xb4/0xcc
    kmem_cache_alloc_noprof+0x14/0x1c
    prepare_creds+0x24/0x88
    prepare_exec_creds+0xc/0x30
    bprm_execve+0x3c/0x424
    do_execveat_common+0x1a0/0x1b8
    __arm64_sys_execve+0x30/0x40
    do_el0_svc+0xd8/0xe4
    el0_svc+0x18/0x44
    el0t_64_sync_handler+0x58/0x128
    el0t_64_sync+0x14c/0x150
"#;
    /// The shape of a module's leak in the 6.12 format (constructed: kmemleak prints
    /// the backtrace after rmmod, so the module's own frames are bare addresses; public
    /// reports of module leaks show the same shape).
    const MODULE_INIT: &str = r#"unreferenced object 0xfff0000008a1c000 (size 64):
  comm "insmod", pid 180, jiffies 4294895000
  hex dump (first 32 bytes):
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ................
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ................
  backtrace (crc 1c2d3e4f):
    kmemleak_alloc+0x28/0x34
    __kmalloc_cache_noprof+0x1c4/0x2a0
    0xffff80007a8a0058
    do_one_initcall+0x60/0x1d0
    do_init_module+0x54/0x1e4
    load_module+0x1a30/0x1d2c
    init_module_from_file+0x8c/0xcc
    __arm64_sys_finit_module+0x1f4/0x2f0
    el0_svc+0x18/0x44
"#;
    /// Allocated in a hotplug callback run by a CPU's hotplug thread (constructed).
    const HOTPLUG_CALLBACK: &str = r#"unreferenced object 0xfff0000008a1c100 (size 32):
  comm "cpuhp/2", pid 24, jiffies 4294895001
  hex dump (first 32 bytes):
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ................
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ................
  backtrace (crc 5a6b7c8d):
    kmemleak_alloc+0x28/0x34
    __kmalloc_noprof+0x1d8/0x2b8
    cpuhp_invoke_callback+0x118/0x470
    cpuhp_thread_fun+0xb0/0x1a4
    smpboot_thread_fn+0x1c4/0x230
    kthread+0xe4/0xf4
"#;

    #[test]
    fn kmemleak_sorter_tells_the_module_from_the_kernel() {
        assert_eq!(sort_kmemleak(""), "module=0 other=0");
        assert_eq!(sort_kmemleak(CRED_OF_CLONE), "module=0 other=1");
        assert_eq!(sort_kmemleak(CRED_OF_EXECVE), "module=0 other=1");
        assert_eq!(sort_kmemleak(MODULE_INIT), "module=1 other=0");
        assert_eq!(sort_kmemleak(HOTPLUG_CALLBACK), "module=1 other=0");
        // Only the backtrace counts: an address in the hex dump does not make an
        // object the module's.
        let dump = CRED_OF_CLONE.replacen(
            "    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ................",
            "    0xffff80007a8a0058",
            1,
        );
        assert_ne!(dump, CRED_OF_CLONE);
        assert_eq!(sort_kmemleak(&dump), "module=0 other=1");
        let all = [CRED_OF_CLONE, MODULE_INIT, CRED_OF_EXECVE, HOTPLUG_CALLBACK].concat();
        assert_eq!(sort_kmemleak(&all), "module=2 other=2");
    }
}
