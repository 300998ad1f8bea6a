//! `pmu-demo` for 32-bit ARM Linux, static: ARMv6 (Raspberry Pi 1 / Zero: ARM1176) and
//! ARMv7 (Raspberry Pi 2, and Pi 3/4/5 under a 32-bit OS).
//!
//! rustup has no prebuilt std for these targets here, so std is built from rust-src
//! (`-Zbuild-std`, allowed on the pinned stable toolchain by `RUSTC_BOOTSTRAP=1`), linked
//! by `arm-linux-gnueabi-gcc` against glibc's static armel libraries
//! (`.cargo/config.toml`: `+crt-static`). [`ARMV6`] is ARMv6, ARM mode, soft float;
//! [`ARMV7`] is ARMv7 code (the cp15 c9 PMU, `isb`) with the soft-float calling
//! convention. A static binary carries its float ABI inside itself: the ARMv7 one runs on
//! an armhf OS (Raspberry Pi OS) as well, without the armhf cross toolchain. The binaries
//! land in the workspace target directory; the guests' initramfs puts them in `/bin`.

use std::path::PathBuf;
use std::process::Command;

use crate::engine::paths::workspace_root;

/// The ARMv6 Rust target: ARMv6 (`+v6`), ARM mode, EABI, soft float, glibc.
pub const ARMV6: &str = "arm-unknown-linux-gnueabi";

/// The ARMv7 Rust target: ARMv7-A, EABI, soft-float calling convention, glibc.
pub const ARMV7: &str = "armv7-unknown-linux-gnueabi";

/// Builds the static ARMv6 `pmu-demo` (installing the cross linker first when it is
/// missing) and returns its path: `target/arm-unknown-linux-gnueabi/release/pmu-demo`.
///
/// # Errors
/// The apt install or the build failed, or the result is not a static 32-bit ARM
/// executable (an inherited `RUSTFLAGS` would override the config's `+crt-static`:
/// it is removed for this build, and the result is checked anyway).
pub fn armv6() -> Result<PathBuf, String> {
    build(ARMV6, "ARMv6")
}

/// Builds the static ARMv7 `pmu-demo` with the same cross linker and static armel glibc
/// as [`armv6`] and returns its path: `target/armv7-unknown-linux-gnueabi/release/pmu-demo`.
///
/// # Errors
/// As for [`armv6`].
pub fn armv7() -> Result<PathBuf, String> {
    build(ARMV7, "ARMv7")
}

/// `RUSTC_BOOTSTRAP=1 cargo build --release -Zbuild-std=std,panic_abort --target TARGET -p
/// userspace-demo`, then the check that the result is static 32-bit ARM.
fn build(target: &str, label: &str) -> Result<PathBuf, String> {
    crate::host::setup::ensure_armv6_packages()?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let args = [
        "build",
        "--release",
        "-Zbuild-std=std,panic_abort",
        "--target",
        target,
        "-p",
        "userspace-demo",
    ];
    println!("    $ RUSTC_BOOTSTRAP=1 cargo {}", args.join(" "));
    let started = std::time::Instant::now();
    let status = Command::new(cargo)
        .args(args)
        .env("RUSTC_BOOTSTRAP", "1")
        .env(
            "CARGO_TARGET_DIR",
            crate::engine::paths::bootstrap_target_dir(),
        )
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .current_dir(workspace_root())
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!("building pmu-demo for {target} failed ({status})"));
    }
    let path = crate::engine::paths::bootstrap_target_dir()
        .join(target)
        .join("release/pmu-demo");
    let bytes = std::fs::read(&path)
        .map_err(|e| format!("{} missing after the build: {e}", path.display()))?;
    check_static_arm32(&bytes).map_err(|why| format!("{}: {why}", path.display()))?;
    println!(
        "    {label} pmu-demo: {} ({} KiB, static, built in {:.1} s)",
        path.display(),
        bytes.len() / 1024,
        started.elapsed().as_secs_f64()
    );
    Ok(path)
}

/// Whether `elf` is a 32-bit little-endian ARM executable without a program
/// interpreter (statically linked). The architecture version (v6) is in the
/// `.ARM.attributes` section, which the tests read with readelf.
fn check_static_arm32(elf: &[u8]) -> Result<(), String> {
    const EM_ARM: u16 = 40;
    const PT_INTERP: u32 = 3;
    let u16_at = |at: usize| {
        elf.get(at..at + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    let u32_at = |at: usize| {
        elf.get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    // ELF32 header: EI_CLASS 1 (32-bit), EI_DATA 1 (little endian), e_machine at 0x12.
    if elf.get(..6) != Some(&[0x7f, b'E', b'L', b'F', 1, 1][..]) {
        return Err("not a 32-bit little-endian ELF file".into());
    }
    if u16_at(0x12) != Some(EM_ARM) {
        return Err(format!("e_machine {:?} is not ARM (40)", u16_at(0x12)));
    }
    let (Some(phoff), Some(phentsize), Some(phnum)) = (u32_at(0x1c), u16_at(0x2a), u16_at(0x2c))
    else {
        return Err("truncated ELF header".into());
    };
    for i in 0..usize::from(phnum) {
        let at = phoff as usize + i * usize::from(phentsize);
        match u32_at(at) {
            Some(PT_INTERP) => {
                return Err("dynamically linked (it has a PT_INTERP program header)".into())
            }
            Some(_) => {}
            None => return Err("truncated program headers".into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ELF check against hand-made headers (ELF spec: e_ident, e_machine 40 = EM_ARM,
    /// program header type 3 = PT_INTERP): a static ARM file passes, an interpreter, a
    /// 64-bit class and another machine each fail.
    #[test]
    fn elf_check_tells_static_arm32() {
        let mut elf = vec![0u8; 0x34 + 2 * 32];
        elf[..6].copy_from_slice(&[0x7f, b'E', b'L', b'F', 1, 1]);
        elf[0x12..0x14].copy_from_slice(&40u16.to_le_bytes());
        elf[0x1c..0x20].copy_from_slice(&0x34u32.to_le_bytes());
        elf[0x2a..0x2c].copy_from_slice(&32u16.to_le_bytes());
        elf[0x2c..0x2e].copy_from_slice(&2u16.to_le_bytes());
        elf[0x34..0x38].copy_from_slice(&1u32.to_le_bytes()); // PT_LOAD
        assert_eq!(check_static_arm32(&elf), Ok(()));
        let mut dynamic = elf.clone();
        dynamic[0x54..0x58].copy_from_slice(&3u32.to_le_bytes());
        assert!(check_static_arm32(&dynamic)
            .unwrap_err()
            .contains("PT_INTERP"));
        let mut wide = elf.clone();
        wide[4] = 2;
        assert!(check_static_arm32(&wide).is_err());
        let mut x86 = elf;
        x86[0x12..0x14].copy_from_slice(&3u16.to_le_bytes());
        assert!(check_static_arm32(&x86).unwrap_err().contains("not ARM"));
    }
}
