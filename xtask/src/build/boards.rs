//! The bare-metal Raspberry Pi images (`qemu/raspi-aarch64`, …): the raw image a Pi's
//! firmware loads (`kernel8.img`) made from the linked ELF, booted on QEMU's model of
//! the board (`cargo xtask qemu raspi3b`, the suite's image step), and written with a
//! `config.txt` into a mounted boot partition (`cargo xtask sdcard BOARD DIR`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::engine::paths::target_dir;
use crate::engine::step::Step;

/// This module's commands in `cargo xtask help`.
pub const USAGE: &str = "    qemu <raspi3b|raspi4b|raspi2b|raspi0>
                      Build the bare-metal Raspberry Pi 3 / 4 image
                      (qemu/raspi-aarch64), Pi 2 image (qemu/raspi2b) or Pi
                      0/1 image (qemu/raspi0, ARMv6 through build-std), make
                      kernel8.img / kernel7.img / kernel.img from it and boot
                      that on QEMU's raspi3b / raspi4b / raspi2b / raspi0
                      under -icount; every
                      RESULT check must pass but the model's known gaps
                      (raspi3b: QEMU does not wire the PMU interrupt to the
                      local interrupt controller). docs/boards.md.
    sdcard <raspi0|raspi2b|raspi3b|raspi4b|raspi5> DIR
                      Build the board's kernel8.img and write it and a
                      config.txt into DIR, a mounted SD card boot partition
                      (an old config.txt is kept as config.txt.pmu-backup);
                      names the firmware files DIR still lacks.
";

/// One board's image.
pub struct BoardImage {
    /// `raspi3b`, …: the xtask argument, the QEMU machine (where there is one) and the
    /// test's name for it.
    pub name: &'static str,
    /// The cargo package and binary.
    package: &'static str,
    bin: &'static str,
    target: &'static str,
    /// The file the firmware loads (config.txt `kernel=`).
    pub kernel_file: &'static str,
    /// The QEMU program that has the board, if one does.
    qemu: Option<&'static str>,
    /// The environment variable the tests read the image's path from.
    pub env: &'static str,
    /// The config.txt lines for the board (docs/boards.md explains each).
    config: &'static [&'static str],
    /// The firmware files the boot partition needs besides the image (from the
    /// Raspberry Pi firmware repository's `boot/` folder).
    firmware: &'static [&'static str],
    /// Whether `core` is built from rust-src (ARMv6: rustup has no prebuilt one).
    build_std: bool,
}

/// The 64-bit boards' config.txt: the image is a raw AArch64 binary loaded at 0x8_0000.
/// The bare-metal ARMv6 target of the Pi 0/1 image: no prebuilt std in rustup, so `core`
/// is built from rust-src.
pub const ARMV6_TARGET: &str = "armv6-none-eabi";

const CONFIG_64: &[&str] = &[
    "# pmu bare-metal image (cargo xtask sdcard): docs/boards.md",
    "arm_64bit=1",
    "kernel=kernel8.img",
    "kernel_address=0x80000",
    "enable_uart=1",
    "dtoverlay=disable-bt",
    "uart_2ndstage=1",
    "init_uart_clock=48000000",
    "disable_commandline_tags=1",
];

/// Raspberry Pi 3 (BCM2837).
pub const RASPI3B: BoardImage = BoardImage {
    name: "raspi3b",
    package: "qemu-raspi-aarch64",
    bin: "raspi3b",
    target: "aarch64-unknown-none",
    kernel_file: "kernel8.img",
    qemu: Some(pmu_tests::QEMU_AARCH64),
    env: "PMU_IMAGE_RASPI3B",
    config: CONFIG_64,
    firmware: &["bootcode.bin", "start.elf", "fixup.dat"],
    build_std: false,
};

/// Raspberry Pi 4 (BCM2711).
pub const RASPI4B: BoardImage = BoardImage {
    name: "raspi4b",
    package: "qemu-raspi-aarch64",
    bin: "raspi4b",
    target: "aarch64-unknown-none",
    kernel_file: "kernel8.img",
    qemu: Some(pmu_tests::QEMU_AARCH64),
    env: "PMU_IMAGE_RASPI4B",
    config: CONFIG_64,
    firmware: &["start4.elf", "fixup4.dat"],
    build_std: false,
};

/// Raspberry Pi 2 (BCM2836): a 32-bit image at 0x1_0000.
pub const RASPI2B: BoardImage = BoardImage {
    name: "raspi2b",
    package: "qemu-raspi2b",
    bin: "raspi2b",
    target: "armv7a-none-eabi",
    kernel_file: "kernel7.img",
    qemu: Some(pmu_tests::QEMU_ARM),
    env: "PMU_IMAGE_RASPI2B",
    config: &[
        "# pmu bare-metal image (cargo xtask sdcard): docs/boards.md",
        "arm_64bit=0",
        "kernel=kernel7.img",
        "kernel_address=0x10000",
        "enable_uart=1",
        "uart_2ndstage=1",
        "init_uart_clock=48000000",
        "disable_commandline_tags=1",
    ],
    firmware: &["bootcode.bin", "start.elf", "fixup.dat"],
    build_std: false,
};

/// Raspberry Pi 5 (BCM2712): built, not emulated anywhere.
pub const RASPI5: BoardImage = BoardImage {
    name: "raspi5",
    package: "qemu-raspi-aarch64",
    bin: "raspi5",
    target: "aarch64-unknown-none",
    kernel_file: "kernel8.img",
    qemu: None,
    env: "PMU_IMAGE_RASPI5",
    config: &[
        "# pmu bare-metal image (cargo xtask sdcard): docs/boards.md",
        "arm_64bit=1",
        "kernel=kernel8.img",
        "kernel_address=0x80000",
        "enable_uart=1",
        "uart_2ndstage=1",
        "disable_commandline_tags=1",
    ],
    // The Pi 5 boots from its EEPROM: the boot partition needs no firmware file.
    firmware: &[],
    build_std: false,
};

/// Raspberry Pi Zero / 1 (BCM2835, ARM1176): a 32-bit ARMv6 image at 0x1_0000.
pub const RASPI0: BoardImage = BoardImage {
    name: "raspi0",
    package: "qemu-raspi0",
    bin: "raspi0",
    target: ARMV6_TARGET,
    kernel_file: "kernel.img",
    qemu: Some(pmu_tests::QEMU_ARM),
    env: "PMU_IMAGE_RASPI0",
    config: &[
        "# pmu bare-metal image (cargo xtask sdcard): docs/boards.md",
        "kernel=kernel.img",
        "kernel_address=0x10000",
        "enable_uart=1",
        "uart_2ndstage=1",
        "init_uart_clock=48000000",
        "disable_commandline_tags=1",
    ],
    firmware: &["bootcode.bin", "start.elf", "fixup.dat"],
    build_std: true,
};

/// Every board, in the order `cargo xtask sdcard` lists them.
pub const BOARDS: &[BoardImage] = &[RASPI0, RASPI2B, RASPI3B, RASPI4B, RASPI5];

/// The board called `name`.
pub fn board(name: &str) -> Option<&'static BoardImage> {
    BOARDS.iter().find(|b| b.name == name)
}

impl BoardImage {
    /// The linked ELF.
    pub fn elf(&self) -> PathBuf {
        if self.build_std {
            crate::engine::paths::bootstrap_target_dir()
        } else {
            target_dir()
        }
        .join(self.target)
        .join("release")
        .join(self.bin)
    }

    /// The raw image: `target/boards/<board>/<kernel file>`.
    pub fn image(&self) -> PathBuf {
        crate::engine::paths::work_dir()
            .join("boards")
            .join(self.name)
            .join(self.kernel_file)
    }

    /// `cargo build` of the ELF (ARMv6: `core` from rust-src, as the suite's other
    /// ARMv6 steps build it).
    pub fn build(&self) -> Step {
        let mut args = vec!["build", "--release"];
        if self.build_std {
            args.push("-Zbuild-std=core");
        }
        args.extend([
            "--target",
            self.target,
            "-p",
            self.package,
            "--bin",
            self.bin,
        ]);
        let step = Step::cargo(
            format!("build image {} ({}, {})", self.name, self.bin, self.target),
            args,
        );
        if self.build_std {
            step.bootstrap()
        } else {
            step
        }
    }

    /// The ELF made into the raw image; returns its path.
    pub fn make_image(&self) -> Result<PathBuf, String> {
        let elf = std::fs::read(self.elf())
            .map_err(|e| format!("{}: {e} (build it first)", self.elf().display()))?;
        let raw = elf_to_raw(&elf).map_err(|e| format!("{}: {e}", self.elf().display()))?;
        let out = self.image();
        if let Some(dir) = out.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        std::fs::write(&out, &raw).map_err(|e| format!("{}: {e}", out.display()))?;
        println!(
            "    {}: {} bytes from {}",
            out.display(),
            raw.len(),
            self.elf().display()
        );
        Ok(out)
    }

    /// The config.txt text.
    pub fn config_txt(&self) -> String {
        let mut text = self.config.join("\n");
        text.push('\n');
        text
    }
}

/// The step that makes `board`'s raw image (after its build step).
pub fn image_step(board: &'static BoardImage) -> Step {
    let f: fn() -> Result<(), String> = match board.name {
        "raspi0" => || RASPI0.make_image().map(drop),
        "raspi2b" => || RASPI2B.make_image().map(drop),
        "raspi3b" => || RASPI3B.make_image().map(drop),
        "raspi4b" => || RASPI4B.make_image().map(drop),
        "raspi5" => || RASPI5.make_image().map(drop),
        _ => || Err("no image step for this board".into()),
    };
    Step::func(
        format!(
            "{} from the ELF (raw, as the firmware loads it)",
            board.kernel_file
        ),
        f,
    )
}

/// The raw memory image of a little-endian ELF32 or ELF64 executable: its PT_LOAD
/// segments' file bytes placed at their physical addresses, from the lowest one
/// (what `objcopy -O binary` writes). The part of a segment beyond its file size
/// (.bss) is not written: the image's start-up code zeroes it.
pub fn elf_to_raw(elf: &[u8]) -> Result<Vec<u8>, String> {
    const PT_LOAD: u32 = 1;
    let u16_at = |at: usize| {
        elf.get(at..at + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .ok_or("truncated ELF")
    };
    let u32_at = |at: usize| {
        elf.get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or("truncated ELF")
    };
    let u64_at = |at: usize| {
        elf.get(at..at + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
            .ok_or("truncated ELF")
    };
    if elf.get(..4) != Some(b"\x7fELF") || elf.get(5) != Some(&1) {
        return Err("not a little-endian ELF file".into());
    }
    let wide = match elf.get(4) {
        Some(1) => false,
        Some(2) => true,
        _ => return Err("unknown ELF class".into()),
    };
    // (offset, file size, physical address) of each PT_LOAD with file contents.
    let mut segments = Vec::new();
    let (phoff, phentsize, phnum) = if wide {
        (u64_at(0x20)? as usize, u16_at(0x36)?, u16_at(0x38)?)
    } else {
        (u32_at(0x1c)? as usize, u16_at(0x2a)?, u16_at(0x2c)?)
    };
    for i in 0..usize::from(phnum) {
        let ph = phoff + i * usize::from(phentsize);
        if u32_at(ph)? != PT_LOAD {
            continue;
        }
        let (offset, paddr, filesz) = if wide {
            (u64_at(ph + 8)?, u64_at(ph + 24)?, u64_at(ph + 32)?)
        } else {
            (
                u64::from(u32_at(ph + 4)?),
                u64::from(u32_at(ph + 12)?),
                u64::from(u32_at(ph + 16)?),
            )
        };
        if filesz > 0 {
            segments.push((offset as usize, filesz as usize, paddr));
        }
    }
    let base = segments
        .iter()
        .map(|s| s.2)
        .min()
        .ok_or("no loadable segment")?;
    let end = segments
        .iter()
        .map(|s| s.2 + s.1 as u64)
        .max()
        .unwrap_or(base);
    let mut raw = vec![0u8; usize::try_from(end - base).map_err(|_| "image too large")?];
    for (offset, size, paddr) in segments {
        let bytes = elf
            .get(offset..offset + size)
            .ok_or("segment beyond the end of the file")?;
        let at = (paddr - base) as usize;
        raw[at..at + size].copy_from_slice(bytes);
    }
    Ok(raw)
}

/// Which RESULT checks fail on QEMU's model of a board because the model lacks what the
/// board has: `(board, scenario, why)`. Every other check must pass. (The Pi 0/1 image
/// fails nothing on QEMU: where c15 is a dummy it counts nothing and says so,
/// `counted=0`, without a `pass` field.)
pub const QEMU_GAPS: &[(&str, &str, &str)] = &[(
    "raspi3b",
    "irq",
    "QEMU 10's BCM2836/7 model connects each core's timers to the ARM local interrupt controller but not its PMU interrupt (hw/arm/bcm2836.c)",
)];

/// `cargo xtask qemu <board>`: build, make the raw image, boot it on QEMU's board and
/// check that every RESULT line passed but the model's known gaps.
pub fn boot(board: &'static BoardImage) -> ExitCode {
    let Some(program) = board.qemu else {
        eprintln!(
            "xtask qemu: no emulator runs the {} (docs/boards.md); `cargo xtask sdcard {} DIR` writes its SD card",
            board.name, board.name
        );
        return ExitCode::FAILURE;
    };
    let plan = crate::engine::step::Plan::new("qemu").then(vec![
        Step::func(
            "rustup targets installed",
            crate::host::setup::ensure_targets,
        ),
        Step::func("QEMU installed", crate::host::setup::ensure_qemu),
        board.build(),
        image_step(board),
    ]);
    if plan.run() != ExitCode::SUCCESS {
        return ExitCode::FAILURE;
    }
    let args = pmu_tests::raspi_image_args(board.name, &board.image());
    println!("==> {program} {}", args.join(" "));
    // A time limit, so a hung image fails instead of blocking (the images finish in
    // about a second).
    let limit = std::time::Duration::from_secs(300);
    let run = pmu_tests::run_qemu(program, &args, limit);
    let text = run.stdout;
    print!("{text}");
    if run.timed_out {
        eprintln!("xtask qemu: QEMU ran past {limit:?}: the image hung");
        return ExitCode::FAILURE;
    }
    match verdict(board.name, &text) {
        Ok(note) => {
            println!("xtask qemu: {note}");
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("xtask qemu: {why}");
            ExitCode::FAILURE
        }
    }
}

/// Whether a board's output passed: a summary, and every `pass=0` line one of the
/// model's known gaps ([`QEMU_GAPS`]).
pub fn verdict(board: &str, output: &str) -> Result<String, String> {
    let results = pmu_tests::parse_results(output);
    if !results.iter().any(|r| r.scenario == "summary") {
        return Err("no `RESULT summary` line: the image did not finish".into());
    }
    if output.contains("FATAL") {
        return Err("the image hit a FATAL error".into());
    }
    let mut gaps = Vec::new();
    for r in &results {
        if r.fields.get("pass").map(String::as_str) == Some("0") {
            match QEMU_GAPS
                .iter()
                .find(|(b, s, _)| *b == board && *s == r.scenario)
            {
                Some((_, _, why)) => {
                    gaps.push(format!("`{}` fails as expected: {why}", r.scenario))
                }
                None => return Err(format!("failed: {}", r.raw)),
            }
        }
    }
    let not_counted = results
        .iter()
        .filter(|r| r.fields.get("counted").map(String::as_str) == Some("0"))
        .count();
    let mut note = if gaps.is_empty() {
        "every scenario passed".to_string()
    } else {
        format!(
            "every scenario passed but the model's gaps: {}",
            gaps.join("; ")
        )
    };
    if not_counted > 0 {
        note += &format!(
            "; {not_counted} counting checks not counted (the PMU does not count here: see the probe line)"
        );
    }
    Ok(note)
}

/// `cargo xtask sdcard BOARD DIR`: builds the board's image and writes it and a
/// config.txt into DIR (a mounted boot partition). An existing config.txt that differs
/// is kept as `config.txt.pmu-backup` first. Says which firmware files DIR lacks.
pub fn sdcard(name: &str, dir: &str) -> ExitCode {
    let Some(board) = board(name) else {
        let names: Vec<&str> = BOARDS.iter().map(|b| b.name).collect();
        eprintln!(
            "xtask sdcard: unknown board `{name}` (one of {})",
            names.join(", ")
        );
        return ExitCode::from(2);
    };
    let plan =
        crate::engine::step::Plan::new("sdcard").then(vec![board.build(), image_step(board)]);
    if plan.run() != ExitCode::SUCCESS {
        return ExitCode::FAILURE;
    }
    match write_boot_files(board, &board.image(), Path::new(dir)) {
        Ok(report) => {
            for line in report {
                println!("    {line}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("xtask sdcard: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Writes `image` as the board's kernel file and its config.txt into `dir`; returns
/// what it did, line by line (the missing firmware files included).
pub fn write_boot_files(
    board: &BoardImage,
    image: &Path,
    dir: &Path,
) -> Result<Vec<String>, String> {
    if !dir.is_dir() {
        return Err(format!(
            "{} is not a directory (mount the SD card's boot partition and name its folder)",
            dir.display()
        ));
    }
    let mut report = Vec::new();
    let kernel = dir.join(board.kernel_file);
    std::fs::copy(image, &kernel).map_err(|e| format!("{}: {e}", kernel.display()))?;
    report.push(format!("wrote {}", kernel.display()));
    let config = dir.join("config.txt");
    let text = board.config_txt();
    if let Ok(old) = std::fs::read_to_string(&config) {
        if old != text {
            let backup = dir.join("config.txt.pmu-backup");
            std::fs::write(&backup, old).map_err(|e| format!("{}: {e}", backup.display()))?;
            report.push(format!("kept the old config.txt as {}", backup.display()));
        }
    }
    std::fs::write(&config, text).map_err(|e| format!("{}: {e}", config.display()))?;
    report.push(format!("wrote {}", config.display()));
    let missing: Vec<&str> = board
        .firmware
        .iter()
        .copied()
        .filter(|f| !dir.join(f).is_file())
        .collect();
    if !missing.is_empty() {
        report.push(format!(
            "missing firmware files: {} (copy them from the boot/ folder of github.com/raspberrypi/firmware: docs/boards.md)",
            missing.join(", ")
        ));
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ELF64 with two PT_LOAD segments (text at 0x8_0000, data at 0x8_0010,
    /// and a NOLOAD-like segment with no file bytes), laid out as the ELF spec (System V
    /// gABI, program header table) says.
    fn elf64(segments: &[(u64, &[u8])]) -> Vec<u8> {
        let phoff = 64u64;
        let mut data_off = phoff + 56 * segments.len() as u64;
        let mut out = vec![0u8; data_off as usize];
        out[..6].copy_from_slice(b"\x7fELF\x02\x01");
        out[0x20..0x28].copy_from_slice(&phoff.to_le_bytes());
        out[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        out[0x38..0x3a].copy_from_slice(&(segments.len() as u16).to_le_bytes());
        for (i, (paddr, bytes)) in segments.iter().enumerate() {
            let ph = (phoff as usize) + 56 * i;
            out[ph..ph + 4].copy_from_slice(&1u32.to_le_bytes());
            out[ph + 8..ph + 16].copy_from_slice(&data_off.to_le_bytes());
            out[ph + 24..ph + 32].copy_from_slice(&paddr.to_le_bytes());
            out[ph + 32..ph + 40].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
            data_off += bytes.len() as u64;
        }
        for (_, bytes) in segments {
            out.extend_from_slice(bytes);
        }
        out
    }

    #[test]
    fn raw_image_places_segments_at_their_addresses() {
        let elf = elf64(&[
            (0x8_0000, &[1, 2, 3, 4]),
            (0x8_0010, &[9, 9]),
            (0x9_0000, &[]),
        ]);
        let raw = elf_to_raw(&elf).unwrap();
        let mut want = vec![0u8; 0x12];
        want[..4].copy_from_slice(&[1, 2, 3, 4]);
        want[0x10..].copy_from_slice(&[9, 9]);
        assert_eq!(raw, want);
    }

    #[test]
    fn raw_image_refuses_what_is_not_an_elf() {
        assert!(elf_to_raw(b"MZ\x90\x00").is_err());
        assert!(
            elf_to_raw(&elf64(&[(0x8_0000, &[])])).is_err(),
            "no bytes to load"
        );
        let mut short = elf64(&[(0x8_0000, &[1, 2])]);
        short.truncate(short.len() - 1);
        assert!(elf_to_raw(&short).is_err(), "segment past the end");
    }

    #[test]
    fn boot_files_go_into_the_partition_with_a_backup_of_its_config() {
        let dir = std::env::temp_dir().join(format!("pmu-sdcard-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let image = dir.join("built.img");
        std::fs::write(&image, [0xAA; 16]).unwrap();
        std::fs::write(dir.join("config.txt"), "dtoverlay=vc4-kms-v3d\n").unwrap();
        std::fs::write(dir.join("start4.elf"), "").unwrap();
        let report = write_boot_files(&RASPI4B, &image, &dir).unwrap();
        assert_eq!(std::fs::read(dir.join("kernel8.img")).unwrap(), [0xAA; 16]);
        let config = std::fs::read_to_string(dir.join("config.txt")).unwrap();
        for line in ["arm_64bit=1", "kernel=kernel8.img", "enable_uart=1"] {
            assert!(
                config.lines().any(|l| l == line),
                "{line} missing:\n{config}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(dir.join("config.txt.pmu-backup")).unwrap(),
            "dtoverlay=vc4-kms-v3d\n"
        );
        // start4.elf is there, fixup4.dat is not: the report names it and only it.
        let missing = report.iter().find(|l| l.starts_with("missing")).unwrap();
        assert!(
            missing.contains("fixup4.dat") && !missing.contains("start4.elf"),
            "{missing}"
        );
        assert!(write_boot_files(&RASPI4B, &image, &dir.join("absent")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn verdict_accepts_only_the_models_known_gaps() {
        let ok = "RESULT exact k=1 pass=1\nRESULT summary pass=1 fail=0\n";
        assert!(verdict("raspi4b", ok).is_ok());
        let irq = "RESULT irq interrupts=0 pass=0\nRESULT summary pass=1 fail=1\n";
        assert!(verdict("raspi3b", irq).is_ok());
        assert!(
            verdict("raspi4b", irq).is_err(),
            "the Pi 4 model delivers it"
        );
        let other = "RESULT exact k=1 pass=0\nRESULT summary pass=0 fail=1\n";
        assert!(verdict("raspi3b", other).is_err());
        assert!(
            verdict("raspi3b", "RESULT exact k=1 pass=1\n").is_err(),
            "no summary"
        );
        let dummy = "RESULT exact k=1 status=c15-dummy all_zero=1 counted=0\nRESULT summary pass=1 fail=0 not_counted=1\n";
        assert!(verdict("raspi0", dummy)
            .unwrap()
            .contains("1 counting checks not counted"));
    }
}
