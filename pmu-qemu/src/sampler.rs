//! `--profile PERIOD`: the in-guest sampler (pmu-qemu/guest/profile.rs), built for the
//! guest with the host's `rustc` and cached, and the profile's files written from what
//! it recorded (`pmu_qemu::profile`).
//!
//! The sampler is Rust source in this crate rather than a binary in it: pmu-qemu is
//! built for the host, and the guest runs aarch64 code. Users of pmu-qemu build their
//! programs for `aarch64-unknown-linux-musl` already, so their `rustc` has that
//! target's standard library and `rust-lld` (the linker the workspace's
//! .cargo/config.toml names for it), which is all the sampler needs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use pmu_qemu::profile::{self, Samples, Symbols};

use crate::debian;

/// The sampler's source.
const SOURCE: &str = include_str!("../guest/profile.rs");

/// Where the sampler lies in the guest.
pub const IN_GUEST: &str = "/pmu-qemu/profile";

/// The Rust target the guest runs.
const TARGET: &str = "aarch64-unknown-linux-musl";

/// The sampler for the guest, built by `rustc` (`$RUSTC`, else `rustc`) once per source
/// and compiler, in the cache.
pub fn build() -> Result<PathBuf, String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let version = Command::new(&rustc).arg("-vV").output().map_err(|e| {
        format!("--profile builds its sampler with rustc, which did not start: {e}")
    })?;
    let dir = debian::cache_dir().join("profile");
    let out = dir.join(format!(
        "profile-{}",
        debian::key(&[SOURCE.as_bytes(), &version.stdout])
    ));
    if out.is_file() {
        return Ok(out);
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let source = dir.join(format!("profile-{}.rs", std::process::id()));
    std::fs::write(&source, SOURCE).map_err(|e| format!("{}: {e}", source.display()))?;
    let partial = dir.join(format!("profile-{}.partial", std::process::id()));
    let built = Command::new(&rustc)
        .args(["--edition", "2021", "--crate-name", "pmu_qemu_profile"])
        .args([
            "--target",
            TARGET,
            "-C",
            "opt-level=2",
            "-C",
            "strip=symbols",
        ])
        .args(["-C", "linker=rust-lld", "-o"])
        .arg(&partial)
        .arg(&source)
        .output()
        .map_err(|e| format!("rustc: {e}"));
    let _ = std::fs::remove_file(&source);
    let built = built?;
    if !built.status.success() {
        let _ = std::fs::remove_file(&partial);
        return Err(format!(
            "--profile could not build its sampler for the guest with rustc (is the {TARGET} target installed? `rustup target add {TARGET}`):\n{}",
            String::from_utf8_lossy(&built.stderr).trim_end()
        ));
    }
    std::fs::rename(&partial, &out).map_err(|e| format!("{}: {e}", out.display()))?;
    // Samplers of older sources or compilers are not used again.
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if path != out && name.starts_with("profile-") && !name.contains('.') {
                let _ = std::fs::remove_file(path);
            }
        }
    }
    Ok(out)
}

fn write(path: &Path, data: &[u8]) -> Result<(), String> {
    std::fs::write(path, data).map_err(|e| format!("{}: {e}", path.display()))
}

/// The profile's files from the sampler's `text`, for `program` (its path in the
/// guest, which is its path here) and its ELF `binary`, into `dir`; a summary on
/// stderr.
pub fn report(
    text: &str,
    program: &Path,
    binary: &[u8],
    dir: &Path,
    baseline: Option<&Path>,
) -> Result<(), String> {
    let mut samples = Samples::parse(text)?;
    samples.complete().map_err(|e| format!("--profile: {e}"))?;
    let name = program.to_string_lossy();
    samples.keep_program(&name);
    let symbols =
        Symbols::from_elf(binary).map_err(|e| format!("cannot name {name}'s functions: {e}"))?;
    let bias = samples.bias(&name, &symbols);
    let (folded, deep): (BTreeMap<String, u64>, usize) = profile::fold(&samples, &symbols, bias);
    let mut folded_text = Vec::new();
    profile::write_folded(&folded, &mut folded_text).map_err(|e| e.to_string())?;
    let folded_text = String::from_utf8(folded_text).map_err(|e| e.to_string())?;

    // The baseline first: it may be the file this run replaces (DIR/PROGRAM.folded).
    let before = baseline
        .map(|base| {
            std::fs::read_to_string(base)
                .map_err(|e| format!("the baseline {}: {e}", base.display()))
        })
        .transpose()?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let stem = program
        .file_name()
        .map_or_else(|| "program".into(), |n| n.to_string_lossy().into_owned());
    let period = samples.period;
    let title = format!("{stem}: one sample every {period} user-level instructions");
    // The sampler's own file too, for a second look at the addresses.
    write(&dir.join(format!("{stem}.samples")), text.as_bytes())?;
    let folded_path = dir.join(format!("{stem}.folded"));
    write(&folded_path, folded_text.as_bytes())?;
    let mut svg = Vec::new();
    profile::flamegraph(&folded_text, &title, &mut svg)?;
    let svg_path = dir.join(format!("{stem}.svg"));
    write(&svg_path, &svg)?;
    let diff = match (before, baseline) {
        (Some(before), Some(base)) => {
            let mut svg = Vec::new();
            profile::differential(
                &before,
                &folded_text,
                &format!("{title}, against {}", base.display()),
                &mut svg,
            )?;
            let path = dir.join(format!("{stem}.diff.svg"));
            write(&path, &svg)?;
            Some(path)
        }
        _ => None,
    };

    let total: u64 = folded.values().sum();
    eprintln!(
        "pmu-qemu: profile of {stem}: {} samples, one every {period} user-level instructions \
         (cycles:u, one per instruction under -icount): {total} instructions attributed, each function's figure exact to \
         within {period}",
        samples.samples.len(),
    );
    let n = samples.samples.len();
    const FRAME_POINTERS: &str =
        "build with RUSTFLAGS=\"-C force-frame-pointers=yes\" for call stacks";
    eprintln!(
        "pmu-qemu: {}",
        if deep == n {
            "call stacks from the program's frame records (frame pointers) for every sample"
                .to_string()
        } else if deep == 0 {
            format!("LEAF-ONLY: each sample is named by its own function alone, since no sampled function kept a frame record (no frame pointers): {FRAME_POINTERS}")
        } else {
            format!("call stacks from frame records for {deep} of {n} samples; {} LEAF-ONLY (named by their own function alone: it keeps no frame record): {FRAME_POINTERS}", n - deep)
        }
    );
    eprintln!("    {:>14}  function (self)", "instructions");
    for (function, count) in profile::self_counts(&folded).iter().take(10) {
        eprintln!("    {count:>14}  {function}");
    }
    eprintln!(
        "pmu-qemu: wrote {}, {}{}",
        folded_path.display(),
        svg_path.display(),
        diff.as_ref()
            .map(|d| format!(", {}", d.display()))
            .unwrap_or_default()
    );
    Ok(())
}
