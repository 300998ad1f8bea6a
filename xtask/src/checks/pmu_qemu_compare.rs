//! `cargo xtask pmu-qemu-compare [--runs N] [--sizes 7,8,9]`: pmu-qemu against Gungraun
//! and plain callgrind on the same Rust source, as a measurement (not a test: it is not
//! a step of `cargo xtask test`), printed as the markdown table docs/pmu-qemu.md takes.
//!
//! In scratch crates under `target/pmu-qemu-compare/` ([`sources`]): a workload library
//! (`spin`, a JSON workload of generate/parse/sort/hash rounds, 50 small kernels), built
//! for x86_64 (Gungraun 0.20's benches, one binary per case; a driver that callgrind
//! runs once per function call) and for aarch64-unknown-linux-musl (a pmu-criterion
//! `Bench` of every benchmark, one-shot exact under pmu-qemu; the driver again, for one
//! uncounted call). Cases: (a) `spin` 100/200; (b) the JSON workload at about 10^7,
//! 10^8, 10^9 (x86_64) instructions; (c) 50 small benchmarks in one binary; and the
//! fixed cost of one pmu-qemu binary with no benchmark selected. Each row is run N
//! times (default 3), every tool's binary started directly (not through cargo), with
//! the 1-minute load average read at the start and end of the row's runs.
//!
//! Gungraun's runner is installed once into the cache
//! (`cargo install --locked --version 0.20.0 --root <cache>/tools/gungraun-runner-0.20.0
//! gungraun-runner`), Valgrind from Debian (`apt-get install valgrind`) where missing.

mod sources;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use super::pmu_qemu::{ran, Ran};
use crate::engine::paths::{cache_root, target_dir, work_dir, workspace_root};
use crate::engine::step::run_logged;

/// This module's commands in `cargo xtask help`.
pub const USAGE: &str = "    pmu-qemu-compare [--runs N] [--sizes 7,8,9]
                      A measurement, not a test: pmu-qemu (pmu-criterion's
                      one-shot exact mode) against Gungraun 0.20 and plain
                      callgrind on the same Rust source (x86_64 under Valgrind,
                      aarch64 under pmu-qemu): spin 100/200, a JSON
                      generate/parse/sort/hash workload at about 10^7, 10^8,
                      10^9 instructions (--sizes: the powers of ten), 50 small
                      benchmarks in one binary; wall time (min/median/max of
                      N runs, default 3), whether every run gave the same
                      figure, the figure, the load average; a markdown table
                      on stdout.
";

const TARGET: &str = "aarch64-unknown-linux-musl";
const GUNGRAUN: &str = "0.20.0";

/// Rounds of the JSON workload (1000 records each) for about 10^e x86_64 instructions:
/// one round is about 11.5 million (callgrind's figure for `driver work 1 1000`, Rust
/// 1.95), so the figures land at 1.2 × 10^7, 1.7 × 10^8, 1.7 × 10^9 (1.7 × 10^10).
fn rounds_for(e: u32) -> u64 {
    match e {
        7 => 1,
        8 => 15,
        9 => 145,
        10 => 1450,
        _ => 10u64.pow(e.saturating_sub(7)),
    }
}

/// The command line.
pub fn command(args: &[&str]) -> Result<ExitCode, String> {
    let mut runs = 3usize;
    let mut sizes = vec![7u32, 8, 9];
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match *a {
            "--runs" => {
                runs = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&n| n >= 1)
                    .ok_or("--runs takes a number of runs, at least 1")?;
            }
            "--sizes" => {
                sizes = it
                    .next()
                    .map(|v| {
                        v.split(',')
                            .map(str::parse)
                            .collect::<Result<Vec<u32>, _>>()
                    })
                    .and_then(Result::ok)
                    .filter(|s| !s.is_empty() && s.iter().all(|e| (6..=10).contains(e)))
                    .ok_or("--sizes takes powers of ten from 6 to 10, comma-separated (7,8,9)")?;
            }
            other => return Err(format!("pmu-qemu-compare: unknown argument `{other}`")),
        }
    }
    match measure(runs, &sizes) {
        Ok(table) => {
            print!("{table}");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("pmu-qemu-compare: {e}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// One run of one row: its wall time and figure.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Seconds, the whole run (every process of it).
    pub secs: f64,
    /// The figure, as printed in the table; `None` where the run gives none.
    pub figure: Option<String>,
    /// Why the run gave no figure where it should have (the tool's own words).
    pub failed: Option<String>,
}

/// A row of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The case: `(a) spin 100 / 200` …
    pub case: String,
    /// The tool and how it ran.
    pub tool: String,
    /// Every run.
    pub samples: Vec<Sample>,
    /// The 1-minute load average at the start and at the end of the runs.
    pub load: (f64, f64),
}

/// The 1-minute load average (`/proc/loadavg`'s first field).
fn load_average() -> f64 {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// The min, median and max of `secs` (sorted copy; the median of an even count is the
/// lower middle one, a time that was measured).
pub fn spread(secs: &[f64]) -> Option<(f64, f64, f64)> {
    let mut s = secs.to_vec();
    s.sort_by(f64::total_cmp);
    Some((*s.first()?, s[(s.len() - 1) / 2], *s.last()?))
}

/// The "same figure every run?" cell: `yes, N of N`, or the figures that differed; for
/// refused runs, whether every run was refused in the same words.
pub fn repeatability(samples: &[Sample]) -> String {
    let refusals: Vec<&str> = samples.iter().filter_map(|s| s.failed.as_deref()).collect();
    if !refusals.is_empty() {
        // The refusal quotes the untrusted reading: whether even that repeated.
        return if refusals.len() == samples.len() && refusals.iter().all(|r| *r == refusals[0]) {
            format!(
                "refused in {} of {}, in the same words",
                refusals.len(),
                samples.len()
            )
        } else {
            format!(
                "**no**: refused in {} of {}, not in the same words",
                refusals.len(),
                samples.len()
            )
        };
    }
    let figures: Vec<&str> = samples.iter().filter_map(|s| s.figure.as_deref()).collect();
    if figures.is_empty() {
        return "(no figure)".into();
    }
    if figures.iter().all(|f| *f == figures[0]) && figures.len() == samples.len() {
        format!("yes, {} of {}", figures.len(), samples.len())
    } else {
        format!("**no**: {}", figures.join(" · "))
    }
}

/// The markdown table of `rows`.
pub fn table(rows: &[Row]) -> String {
    let mut s = String::from(
        "| case | tool | figure | same every run? | wall time per run, min / median / max | load average, start → end |\n\
|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let secs: Vec<f64> = r.samples.iter().map(|s| s.secs).collect();
        let wall = match spread(&secs) {
            Some((lo, mid, hi)) => format!("{lo:.2} / {mid:.2} / {hi:.2} s ({} runs)", secs.len()),
            None => "-".into(),
        };
        let failed: Vec<&Sample> = r.samples.iter().filter(|s| s.failed.is_some()).collect();
        let figure = match failed.first().and_then(|s| s.failed.as_deref()) {
            Some(why) => format!(
                "**not measured** in {} of {} runs: {why}",
                failed.len(),
                r.samples.len()
            ),
            None => r
                .samples
                .first()
                .and_then(|s| s.figure.clone())
                .unwrap_or_else(|| "-".into()),
        };
        s += &format!(
            "| {} | {} | {} | {} | {} | {:.2} → {:.2} |\n",
            r.case,
            r.tool,
            figure,
            repeatability(&r.samples),
            wall,
            r.load.0,
            r.load.1
        );
    }
    s
}

/// `text` without ANSI colour escapes (`ESC [ … m`).
fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Callgrind's `Collected : N` (its total of the collected event, `Ir`), from stderr.
pub fn callgrind_collected(stderr: &str) -> Option<u64> {
    stderr.lines().find_map(|l| {
        let (_, rest) = l.split_once("Collected :")?;
        rest.trim().parse().ok()
    })
}

/// Gungraun's `Instructions:` figures, in the order printed (one per benchmark: the
/// number before the `|` that separates it from the previous run's).
pub fn gungraun_instructions(stdout: &str) -> Vec<u64> {
    plain(stdout)
        .lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix("Instructions:")?;
            rest.trim_start()
                .split(|c: char| c == '|' || c.is_whitespace())
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

/// pmu-criterion's one-shot lines `<id>   <count> instructions (exact)`, in order.
pub fn pmu_exact(stdout: &str) -> Vec<(String, u64)> {
    stdout
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let id = w.next()?;
            let count = w.next()?.parse().ok()?;
            (w.next()? == "instructions" && w.next()? == "(exact)").then(|| (id.to_owned(), count))
        })
        .collect()
}

/// A row's figure from one run's counts: each count when there are three or fewer,
/// else how many, their sum, the first and the last.
pub fn figure(counts: &[u64], unit: &str) -> Option<String> {
    match counts {
        [first, .., last] if counts.len() > 3 => Some(format!(
            "{} benchmarks, Σ {} {unit} (first {first}, last {last})",
            counts.len(),
            counts.iter().sum::<u64>()
        )),
        [] => None,
        _ => Some(format!(
            "{} {unit}",
            counts
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(" / ")
        )),
    }
}

/// The places of one measurement.
struct Places {
    /// The scratch workspace.
    dir: PathBuf,
    /// Its cargo target directory, kept between runs.
    build: PathBuf,
    /// pmu-qemu, built from this workspace.
    runner: PathBuf,
    /// gungraun-runner, installed into the cache.
    gungraun_runner: PathBuf,
}

fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    // Unchanged files keep their times, so cargo rebuilds nothing on a rerun.
    if fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The Gungraun bench targets: `(name, source)`.
fn gg_benches(sizes: &[u32]) -> Vec<(String, String)> {
    let spin = sources::gg_bench(
        "spin",
        "cmp_work::spin(black_box(n)); n",
        &[
            ("spin_100".into(), "100".into()),
            ("spin_200".into(), "200".into()),
        ],
    );
    let mut out = vec![("spin".to_owned(), spin)];
    for &e in sizes {
        let r = rounds_for(e);
        out.push((
            format!("work{e}"),
            sources::gg_bench(
                "work",
                &format!(
                    "cmp_work::workload(black_box(n), black_box({}))",
                    sources::RECORDS
                ),
                &[(format!("rounds_{r}"), r.to_string())],
            ),
        ));
    }
    let small: Vec<(String, String)> = (0..sources::SMALL)
        .map(|k| (format!("small_{k:02}"), k.to_string()))
        .collect();
    out.push((
        "small".into(),
        sources::gg_bench("small", "cmp_work::small(black_box(n))", &small),
    ));
    out
}

/// Writes the scratch crates (the directory is kept between runs: files an earlier
/// version wrote and this one does not are removed first).
fn write_sources(places: &Places, sizes: &[u32]) -> Result<(), String> {
    let d = &places.dir;
    let gone = d.join("pmu/src/lib.rs");
    match std::fs::remove_file(&gone) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(format!("{}: {e}", gone.display()))
        }
        _ => {}
    }
    write(&d.join("Cargo.toml"), sources::WORKSPACE)?;
    write(&d.join(".cargo/config.toml"), sources::CARGO_CONFIG)?;
    write(&d.join("work/Cargo.toml"), sources::WORK_MANIFEST)?;
    write(&d.join("work/src/lib.rs"), sources::WORK_LIB)?;
    write(&d.join("work/src/bin/driver.rs"), sources::DRIVER)?;
    let benches = gg_benches(sizes);
    let names: Vec<&str> = benches.iter().map(|(n, _)| n.as_str()).collect();
    write(&d.join("gg/Cargo.toml"), &sources::gg_manifest(&names))?;
    write(&d.join("gg/src/lib.rs"), "//! Gungraun's benches only.\n")?;
    for (name, text) in &benches {
        write(&d.join(format!("gg/benches/{name}.rs")), text)?;
    }
    write(
        &d.join("pmu/Cargo.toml"),
        &sources::pmu_manifest(&workspace_root()),
    )?;
    write(&d.join("pmu/src/bin/pmu-once.rs"), sources::PMU_ONCE)?;
    let rounds: Vec<u64> = sizes.iter().map(|&e| rounds_for(e)).collect();
    write(&d.join("pmu/src/main.rs"), &sources::pmu_bench(&rounds))?;
    Ok(())
}

/// The scratch workspace's cargo, with the pinned toolchain and the kept target
/// directory, and no runner or flags from the caller's environment.
fn scratch_cargo(places: &Places) -> Command {
    let mut c = cargo();
    c.current_dir(&places.dir)
        .env("CARGO_TARGET_DIR", &places.build)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUNNER");
    c
}

/// Executables a cargo build made, by target name (`--message-format=json`'s
/// `compiler-artifact` messages).
fn executables(
    places: &Places,
    what: &str,
    args: &[&str],
) -> Result<Vec<(String, PathBuf)>, String> {
    let log = work_dir()
        .join("logs")
        .join(format!("pmu-qemu-compare-{what}.log"));
    eprint!("    cargo {} … ", args.join(" "));
    let t = Instant::now();
    let r = ran(
        scratch_cargo(places)
            .args(args)
            .arg("--message-format=json-render-diagnostics"),
        b"",
    )?;
    let _ = fs::create_dir_all(work_dir().join("logs"));
    let _ = fs::write(&log, format!("{}\n{}", r.stdout, r.stderr));
    if r.code != Some(0) {
        eprintln!("FAILED");
        return Err(format!(
            "cargo {}: exit {:?}; its output: {}\n{}",
            args.join(" "),
            r.code,
            log.display(),
            r.stderr
        ));
    }
    eprintln!("ok ({:.1} s)", t.elapsed().as_secs_f64());
    let mut out = Vec::new();
    for line in r.stdout.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if let (Some(name), Some(exe)) = (v["target"]["name"].as_str(), v["executable"].as_str()) {
            out.push((name.to_owned(), PathBuf::from(exe)));
        }
    }
    Ok(out)
}

fn find(exes: &[(String, PathBuf)], name: &str) -> Result<PathBuf, String> {
    exes.iter()
        .find(|(n, _)| n == name)
        .map(|(_, p)| p.clone())
        .ok_or_else(|| format!("cargo built no executable `{name}`"))
}

/// gungraun-runner 0.20.0, installed into the cache once.
fn gungraun_runner() -> Result<PathBuf, String> {
    let root = cache_root().join(format!("tools/gungraun-runner-{GUNGRAUN}"));
    let bin = root.join("bin/gungraun-runner");
    if !bin.is_file() {
        run_logged(
            &format!(
                "cargo install --locked --version {GUNGRAUN} --root {} gungraun-runner",
                root.display()
            ),
            "pmu-qemu-compare-gungraun-runner",
            cargo()
                .args(["install", "--locked", "--version", GUNGRAUN, "--root"])
                .arg(&root)
                .arg("gungraun-runner"),
        )?;
    }
    Ok(bin)
}

/// Runs `one` `runs` times as the row `case`/`tool`, printing each run on stderr.
fn row(
    case: &str,
    tool: &str,
    runs: usize,
    mut one: impl FnMut() -> Result<Sample, String>,
) -> Result<Row, String> {
    let start = load_average();
    let mut samples = Vec::new();
    for i in 1..=runs {
        let s = one().map_err(|e| format!("{case}, {tool}, run {i}: {e}"))?;
        eprintln!(
            "    {case} · {tool} · run {i}: {:.2} s, {}",
            s.secs,
            s.figure.as_deref().unwrap_or("(no figure)")
        );
        samples.push(s);
    }
    Ok(Row {
        case: case.into(),
        tool: tool.into(),
        samples,
        load: (start, load_average()),
    })
}

/// PATH with the directory of `program` first.
fn path_with(program: &Path) -> std::ffi::OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = program
        .parent()
        .map(Path::to_path_buf)
        .into_iter()
        .collect();
    dirs.extend(std::env::split_paths(&path));
    std::env::join_paths(dirs).unwrap_or(path)
}

/// `command`, failing unless it exits with 0.
fn ok(command: &mut Command) -> Result<Ran, String> {
    let r = ran(command, b"")?;
    if r.code != Some(0) {
        return Err(format!(
            "{:?} exited {:?}\n{}{}",
            command.get_program(),
            r.code,
            r.stdout,
            r.stderr
        ));
    }
    Ok(r)
}

/// A Gungraun bench binary run directly (`<bench> --bench`, as cargo runs it), its
/// `Instructions:` figures.
fn gungraun(places: &Places, bench: &Path, expected: usize) -> Result<Sample, String> {
    let r = ok(Command::new(bench)
        .current_dir(places.dir.join("gg"))
        .arg("--bench")
        // Gungraun's bench looks for `gungraun-runner` on PATH (GUNGRAUN_RUNNER is read
        // when the bench is compiled, not when it runs).
        .env("PATH", path_with(&places.gungraun_runner))
        .env("CARGO_TARGET_DIR", &places.build)
        .env("GUNGRAUN_COLOR", "never"))?;
    let counts = gungraun_instructions(&r.stdout);
    if counts.len() != expected {
        return Err(format!(
            "{expected} Gungraun figures expected, {} found:\n{}{}",
            counts.len(),
            r.stdout,
            r.stderr
        ));
    }
    Ok(Sample {
        secs: r.secs,
        figure: figure(&counts, "instructions"),
        failed: None,
    })
}

/// One callgrind process per call of `driver`, `--toggle-collect` on `function`.
fn callgrind(
    places: &Places,
    driver: &Path,
    function: &str,
    calls: &[Vec<String>],
) -> Result<Sample, String> {
    let t = Instant::now();
    let out = places.build.join("callgrind.out");
    let mut counts = Vec::new();
    for args in calls {
        let r = ok(Command::new("valgrind")
            .arg("--tool=callgrind")
            .arg(format!("--callgrind-out-file={}", out.display()))
            .arg(format!("--toggle-collect={function}"))
            .arg(driver)
            .args(args))?;
        counts.push(
            callgrind_collected(&r.stderr)
                .ok_or_else(|| format!("no `Collected :` line from callgrind:\n{}", r.stderr))?,
        );
    }
    Ok(Sample {
        secs: t.elapsed().as_secs_f64(),
        figure: figure(&counts, "Ir"),
        failed: None,
    })
}

/// The pmu-criterion bench under pmu-qemu, one-shot exact (pmu-qemu sets
/// `PMU_QEMU_EXACT=1`), with `filter` and `env`. A run whose benchmarks pmu-criterion
/// did not count (exit 1, `not measured: …`) is a sample with its reason, not an error.
fn pmu(
    places: &Places,
    bench: &Path,
    filter: &[&str],
    env: &[(&str, &str)],
    expected: usize,
) -> Result<Sample, String> {
    let r = ran(
        Command::new(&places.runner)
            .current_dir(places.dir.join("pmu"))
            .arg(bench)
            .arg("--bench")
            .args(filter)
            .envs(env.iter().copied()),
        b"",
    )?;
    let not_measured = r.stdout.lines().find_map(|l| {
        l.split_once("not measured: ")
            .map(|(_, why)| why.trim().to_owned())
    });
    if r.code == Some(1) {
        if let Some(why) = not_measured {
            return Ok(Sample {
                secs: r.secs,
                figure: None,
                failed: Some(format!("pmu-criterion: \"{why}\"")),
            });
        }
    }
    let counts: Vec<u64> = pmu_exact(&r.stdout).into_iter().map(|(_, c)| c).collect();
    if r.code != Some(0) || counts.len() != expected {
        return Err(format!(
            "exit {:?}, {expected} exact counts expected, {} found:\n{}{}",
            r.code,
            counts.len(),
            r.stdout,
            r.stderr
        ));
    }
    // Where pmu-criterion counted in fresh processes (the calls differed), the figure
    // says so.
    let fresh = r.stderr.contains("counted in two fresh processes");
    Ok(Sample {
        secs: r.secs,
        figure: figure(&counts, "instructions").map(|f| {
            if fresh {
                format!("{f}, from two fresh processes")
            } else {
                f
            }
        }),
        failed: None,
    })
}

/// `pmu-once` under pmu-qemu: one counted call in a fresh process (`one call: N
/// instructions`), or its `not measured: …`.
fn once(
    places: &Places,
    program: &Path,
    words: &[String],
    env: &[(&str, &str)],
) -> Result<Sample, String> {
    let r = ran(
        Command::new(&places.runner)
            .current_dir(places.dir.join("pmu"))
            .arg(program)
            .args(words)
            .envs(env.iter().copied()),
        b"",
    )?;
    let count = r.stdout.lines().find_map(|l| {
        l.strip_prefix("one call: ")?
            .split_whitespace()
            .next()?
            .parse::<u64>()
            .ok()
    });
    let not_measured = r
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("not measured: "));
    match (r.code, count, not_measured) {
        (Some(0), Some(c), _) => Ok(Sample {
            secs: r.secs,
            figure: figure(&[c], "instructions"),
            failed: None,
        }),
        (Some(1), _, Some(why)) => Ok(Sample {
            secs: r.secs,
            figure: None,
            failed: Some(format!("pmu-linux: \"{}\"", why.trim())),
        }),
        _ => Err(format!("exit {:?}:\n{}{}", r.code, r.stdout, r.stderr)),
    }
}

/// Builds everything, runs every row, returns the table with its heading lines.
fn measure(runs: usize, sizes: &[u32]) -> Result<String, String> {
    crate::host::setup::ensure_compare_packages()?;
    let root = workspace_root();
    run_logged(
        "cargo build --release -p pmu-qemu",
        "pmu-qemu-compare-runner",
        cargo()
            .current_dir(&root)
            .args(["build", "--release", "-p", "pmu-qemu"]),
    )?;
    let places = Places {
        dir: work_dir().join("pmu-qemu-compare"),
        build: target_dir().join("pmu-qemu-compare"),
        runner: target_dir().join("release/pmu-qemu"),
        gungraun_runner: gungraun_runner()?,
    };
    write_sources(&places, sizes)?;
    let x86 = executables(
        &places,
        "x86_64",
        &["build", "--release", "-p", "cmp-work", "--bin", "driver"],
    )?;
    let driver = find(&x86, "driver")?;
    let gg = executables(&places, "gungraun", &["bench", "--no-run", "-p", "cmp-gg"])?;
    let arm = executables(
        &places,
        "aarch64",
        &[
            "build",
            "--release",
            "--target",
            TARGET,
            "-p",
            "cmp-pmu",
            "-p",
            "cmp-work",
        ],
    )?;
    let pmu_bench = find(&arm, "pmu-bench")?;
    let pmu_once = find(&arm, "pmu-once")?;
    let prepare = ran(Command::new(&places.runner).arg("--prepare"), b"")?;
    if prepare.code != Some(0) {
        return Err(format!("pmu-qemu --prepare: {}", prepare.stderr));
    }
    let valgrind = crate::engine::step::first_line("valgrind", &["--version"])?;
    let qemu = crate::engine::step::first_line(pmu_tests::QEMU_AARCH64, &["--version"])?;

    let mut rows = Vec::new();
    // (a) spin 100 / 200.
    let a = "(a) `spin` 100 / 200";
    let gg_spin = find(&gg, "spin")?;
    rows.push(row(a, "Gungraun (x86_64)", runs, || {
        gungraun(&places, &gg_spin, 2)
    })?);
    let spin_calls = vec![
        vec!["spin".into(), "100".into()],
        vec!["spin".into(), "200".into()],
    ];
    rows.push(row(a, "callgrind, 2 processes (x86_64)", runs, || {
        callgrind(&places, &driver, "cmp_work::spin", &spin_calls)
    })?);
    rows.push(row(
        a,
        "pmu-qemu + pmu-criterion one-shot (aarch64)",
        runs,
        || pmu(&places, &pmu_bench, &["spin/"], &[], 2),
    )?);
    // (b) the JSON workload.
    for &e in sizes {
        let r = rounds_for(e);
        let b = format!("(b) JSON ×{r} rounds (~10^{e})");
        let gg_work = find(&gg, &format!("work{e}"))?;
        rows.push(row(&b, "Gungraun (x86_64)", runs, || {
            gungraun(&places, &gg_work, 1)
        })?);
        let call = vec![vec![
            "work".into(),
            r.to_string(),
            sources::RECORDS.to_string(),
        ]];
        rows.push(row(&b, "callgrind (x86_64)", runs, || {
            callgrind(&places, &driver, "cmp_work::workload", &call)
        })?);
        let id = format!("work/{r}");
        let words = [r.to_string(), sources::RECORDS.to_string()];
        rows.push(row(
            &b,
            "pmu-qemu, one counted call (pmu-linux `Meter`; aarch64)",
            runs,
            || once(&places, &pmu_once, &words, &[]),
        )?);
        // One-shot mode: a warm-up call and two pairs of regions (3 calls); where the
        // second and third calls differ, two fresh processes of 2 calls each (7).
        rows.push(row(
            &b,
            "pmu-qemu + pmu-criterion one-shot (aarch64; 3 calls, 7 where calls differ)",
            runs,
            || pmu(&places, &pmu_bench, &["--exact", &id], &[], 1),
        )?);
    }
    // (c) 50 small benchmarks.
    let c = format!("(c) {} small benchmarks, one binary", sources::SMALL);
    let gg_small = find(&gg, "small")?;
    rows.push(row(
        &c,
        "Gungraun (x86_64; Valgrind per benchmark)",
        runs,
        || gungraun(&places, &gg_small, sources::SMALL as usize),
    )?);
    let small_calls: Vec<Vec<String>> = (0..sources::SMALL)
        .map(|k| vec!["small".into(), k.to_string()])
        .collect();
    rows.push(row(&c, "callgrind, 50 processes (x86_64)", runs, || {
        callgrind(&places, &driver, "cmp_work::small", &small_calls)
    })?);
    rows.push(row(
        &c,
        "pmu-qemu + pmu-criterion one-shot (aarch64; one guest)",
        runs,
        || {
            pmu(
                &places,
                &pmu_bench,
                &["small/"],
                &[],
                sources::SMALL as usize,
            )
        },
    )?);
    // The fixed cost: the same binary with no benchmark selected.
    rows.push(row(
        "fixed cost per binary",
        "pmu-qemu + pmu-criterion, no benchmark selected",
        runs,
        || {
            pmu(&places, &pmu_bench, &["--exact", "none"], &[], 0)
                .map(|s| Sample { figure: None, ..s })
        },
    )?);

    Ok(format!(
        "Measured by `cargo xtask pmu-qemu-compare --runs {runs} --sizes {}` ({valgrind}; {qemu}; Gungraun {GUNGRAUN}; Rust {}), {} CPUs:\n\n{}",
        sizes.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
        crate::engine::need::TOOLCHAIN,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        table(&rows)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Callgrind 3.19's closing lines (`valgrind --tool=callgrind … 2>&1`).
    #[test]
    fn callgrind_totals_are_read() {
        let err =
            "==12== Events    : Ir\n==12== Collected : 201\n==12==\n==12== I   refs:      201\n";
        assert_eq!(callgrind_collected(err), Some(201));
        assert_eq!(callgrind_collected("==12== I   refs: 5\n"), None);
    }

    /// Gungraun's per-benchmark lines (its `Instructions:` metric, then `|` and the
    /// previous run's figure or `N/A`), coloured or not.
    #[test]
    fn gungraun_figures_are_read() {
        let out = "spin::group::bench_spin spin_100:100\n  Instructions:                         208|N/A                  (*********)\n\
spin::group::bench_spin spin_200:200\n  \u{1b}[1mInstructions:\u{1b}[0m              408|408                  (No change)\n";
        assert_eq!(gungraun_instructions(out), vec![208, 408]);
        assert!(gungraun_instructions("Instructions: N/A\n").is_empty());
    }

    /// pmu-criterion's one-shot lines.
    #[test]
    fn one_shot_lines_are_read() {
        let out = "pmu-criterion: one-shot exact mode (…)\nspin/100                          214 instructions (exact)\n\
spin/200                          414 instructions (exact)   unchanged from baseline `x`\nspin/300   not measured\n";
        assert_eq!(
            pmu_exact(out),
            vec![("spin/100".into(), 214), ("spin/200".into(), 414)]
        );
    }

    /// The cells: figures, repeatability, spread.
    #[test]
    fn the_table_says_what_repeated() {
        assert_eq!(figure(&[208, 408], "Ir").as_deref(), Some("208 / 408 Ir"));
        assert_eq!(
            figure(&[1, 2, 3, 4], "Ir").as_deref(),
            Some("4 benchmarks, Σ 10 Ir (first 1, last 4)")
        );
        assert_eq!(figure(&[], "Ir"), None);
        assert_eq!(spread(&[3.0, 1.0, 2.0, 9.0]), Some((1.0, 2.0, 9.0)));
        assert_eq!(spread(&[]), None);
        let s = |secs, f: &str| Sample {
            secs,
            figure: Some(f.into()),
            failed: None,
        };
        assert_eq!(repeatability(&[s(1.0, "5"), s(2.0, "5")]), "yes, 2 of 2");
        assert_eq!(repeatability(&[s(1.0, "5"), s(2.0, "6")]), "**no**: 5 · 6");
        let rows = [Row {
            case: "(a)".into(),
            tool: "t".into(),
            samples: vec![s(1.0, "5"), s(3.0, "5"), s(2.0, "5")],
            load: (1.0, 2.5),
        }];
        let t = table(&rows);
        let refused = Sample {
            secs: 4.0,
            figure: None,
            failed: Some("pmu-linux: \"kernel-entry\"".into()),
        };
        let mut mixed = rows[0].clone();
        mixed.samples[1] = refused;
        let m = table(&[mixed]);
        assert!(
            m.contains("| **not measured** in 1 of 3 runs: pmu-linux: \"kernel-entry\" | **no**: refused in 1 of 3, not in the same words | 1.00 / 2.00 / 4.00 s (3 runs) |"),
            "{m}"
        );
        let refused = |secs, why: &str| Sample {
            secs,
            figure: None,
            failed: Some(why.into()),
        };
        assert_eq!(
            repeatability(&[refused(1.0, "read 5"), refused(2.0, "read 5")]),
            "refused in 2 of 2, in the same words"
        );
        assert_eq!(
            repeatability(&[refused(1.0, "read 5"), refused(2.0, "read 6")]),
            "**no**: refused in 2 of 2, not in the same words"
        );
        assert!(
            t.ends_with(
                "| (a) | t | 5 | yes, 3 of 3 | 1.00 / 2.00 / 3.00 s (3 runs) | 1.00 → 2.50 |\n"
            ),
            "{t}"
        );
    }
}
