//! `cargo xtask bench [--json]`: what each read path costs, in user-space instructions,
//! measured in the arm64 test kernel under `qemu-system-aarch64 -M virt -cpu max -smp 1
//! -icount shift=0,align=off,sleep=off`, where INST_RETIRED is exact and every run is
//! byte-for-byte repeatable.
//!
//! The guest (`scenario=bench` in tests/guest/arm64.sh) runs `pmu-demo bench-guest`
//! (perf fast read, `read()` fallback, regions of 1, 2, 4, 6 counters, accuracy),
//! `libperf-bench` (xtask/bench/libperf_bench.c linked statically against libperf.a,
//! built here from linux-source-6.12's tools/lib/perf for aarch64 with -O2, and once
//! more as its Makefile builds it by default, -O0) and, after
//! loading kmod-enable-user, `pmu-demo bench-guest --direct`. Each prints `RESULT bench
//! path=… per_op=…` and `RESULT accuracy path=… k=… error=…` lines; this file turns them
//! into a table (or JSON) and fails unless every one of our paths is exact.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use pmu_tests::{arm64_kernel_args, run_qemu, QemuRun, QEMU_AARCH64};

use crate::kernel::{self, Arch};
use crate::step::{workspace_root, Plan, Step};

/// The libperf build flags the ratios refer to (the reference: 144
/// instructions per fast read at -O2, 523 at the Makefile's default -O0).
const LIBPERF_CFLAGS: &str = "-O2";

/// One build of libperf the bench measures, each linked into its own copy of the
/// harness (the harness itself always built with [`LIBPERF_CFLAGS`], so that only the
/// library's flags differ).
struct LibperfBuild {
    /// `EXTRA_CFLAGS` for tools/lib/perf's Makefile ("" = its default: `-g -Wall`, no
    /// `-O`, so -O0).
    extra_cflags: &'static str,
    /// How the table names it.
    label: &'static str,
    /// The harness's file name (in the build directory and in the guest's /bin).
    binary: &'static str,
    /// The prefix of its `RESULT bench path=…` rows and its `bench-run` tag.
    prefix: &'static str,
}

/// The -O2 build (the ratios' reference) and the Makefile's default one.
const LIBPERF_BUILDS: [LibperfBuild; 2] = [
    LibperfBuild {
        extra_cflags: LIBPERF_CFLAGS,
        label: LIBPERF_CFLAGS,
        binary: "libperf-bench",
        prefix: "libperf",
    },
    LibperfBuild {
        extra_cflags: "",
        label: "Makefile default: -O0",
        binary: "libperf-bench-default",
        prefix: "libperf-default",
    },
];

/// The block sizes of the accuracy check.
const BLOCKS: [u64; 5] = [1, 10, 100, 1000, 10000];

/// Our paths: their accuracy errors must all be 0.
const OURS: [&str; 3] = ["perf-fast", "perf-read", "direct"];

/// The cost targets of the issue that asked for this bench (instructions per operation,
/// at most): reported with the table, met or missed; the bench fails only on accuracy.
const TARGETS: [(&str, &str, f64); 2] = [
    ("perf-fast", "perf fast read", 30.0),
    ("perf-region-1", "perf region of 1 counter", 80.0),
];

/// `cargo xtask bench [--json]`.
pub fn run(json: bool) -> ExitCode {
    let prepare = Plan::new("bench")
        .then(crate::setup::steps())
        .then(crate::setup::kernel_steps())
        .then(vec![
            crate::e2e::kernel_step(Arch::Arm64),
            crate::e2e::module_step(Arch::Arm64),
            Step::func(
                "libperf for aarch64 (linux-source-6.12 tools/lib/perf, -O2 and the Makefile's default) and the static libperf-bench harnesses",
                libperf_step,
            ),
        ]);
    if prepare.run() != ExitCode::SUCCESS {
        return ExitCode::FAILURE;
    }
    match measure() {
        Ok(report) => {
            if json {
                let path = build_dir().join("bench.json");
                if let Err(e) = fs::write(&path, report.json() + "\n") {
                    eprintln!("xtask bench: {}: {e}", path.display());
                }
                println!("    JSON: {}", path.display());
                println!("{}", report.json());
            } else {
                print!("{}", report.table());
            }
            match report.failures() {
                failures if failures.is_empty() => ExitCode::SUCCESS,
                failures => {
                    for f in failures {
                        eprintln!("xtask bench: {f}");
                    }
                    ExitCode::FAILURE
                }
            }
        }
        Err(why) => {
            eprintln!("xtask bench: {why}");
            ExitCode::FAILURE
        }
    }
}

/// The bench as the last step of `cargo xtask test` (its tools, kernel and module come
/// from earlier steps): the table, failing unless ours are exact.
pub fn test_step() -> Step {
    Step::func(
        "bench: read-path costs in instructions, arm64 kernel under QEMU -icount, vs libperf (exact or fail)",
        || {
            let report = measure()?;
            print!("{}", report.table());
            match report.failures() {
                f if f.is_empty() => Ok(()),
                f => Err(f.join("\n    ")),
            }
        },
    )
}

fn libperf_step() -> Result<(), String> {
    libperf_benches().map(|_| ())
}

/// Every [`LIBPERF_BUILDS`] harness: (guest file name, path here).
fn libperf_benches() -> Result<Vec<(&'static str, PathBuf)>, String> {
    LIBPERF_BUILDS
        .iter()
        .map(|build| Ok((build.binary, libperf_bench(build)?)))
        .collect()
}

fn build_dir() -> PathBuf {
    crate::images::target_dir().join("bench")
}

/// Builds libperf.a as `build` says (O= build outside the read-only source tree) and
/// its harness.
fn libperf_bench(build: &LibperfBuild) -> Result<PathBuf, String> {
    let (tree, version) = kernel::source_tree()?;
    let lib = tree.join("tools/lib/perf");
    let out = build_dir().join(format!("libperf-{version}-{}", build.prefix));
    fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let cross = "aarch64-linux-gnu-";
    let gcc = format!("{cross}gcc");
    if Command::new(&gcc).arg("--version").output().is_err() {
        return Err(format!(
            "{gcc} is missing: apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross"
        ));
    }
    let mut o = out.display().to_string();
    o.push('/');
    // The Makefile starts from the environment's CFLAGS (`override CFLAGS :=
    // $(INCLUDES) $(CFLAGS)`): without them each build is exactly what its row says.
    let status = Command::new("make")
        .env_remove("CFLAGS")
        .arg("-C")
        .arg(&lib)
        .args([
            format!("O={o}"),
            "ARCH=arm64".into(),
            format!("CROSS_COMPILE={cross}"),
            format!("EXTRA_CFLAGS={}", build.extra_cflags),
            "-j2".into(),
            "-s".into(),
        ])
        .status()
        .map_err(|e| format!("cannot run make: {e}"))?;
    if !status.success() {
        return Err(format!(
            "building libperf in {} failed ({status})",
            lib.display()
        ));
    }
    let harness = build_dir().join(build.binary);
    let source = workspace_root().join("xtask/bench/libperf_bench.c");
    let status = Command::new(&gcc)
        .args([LIBPERF_CFLAGS, "-static", "-Wall", "-Werror", "-o"])
        .arg(&harness)
        .arg(format!("-I{}", lib.join("include").display()))
        .arg(format!("-I{}", tree.join("tools/include").display()))
        .arg(&source)
        .arg(out.join("libperf.a"))
        .arg(out.join("libapi.a"))
        .status()
        .map_err(|e| format!("cannot run {gcc}: {e}"))?;
    if !status.success() {
        return Err(format!("building {} failed ({status})", source.display()));
    }
    println!(
        "    {}: {} (libperf from {SOURCE} {version}, {})",
        build.binary,
        harness.display(),
        build.label,
        SOURCE = kernel::SOURCE_PACKAGE
    );
    Ok(harness)
}

fn measure() -> Result<Report, String> {
    let k = kernel::kernel(Arch::Arm64)?;
    let ko = kernel::module(Arch::Arm64)?;
    let harnesses = libperf_benches()?;
    let initramfs = crate::initramfs::build_with(
        Arch::Arm64,
        &ko,
        &harnesses,
        build_dir().join("arm64-bench.cpio"),
    )?;
    let args = arm64_kernel_args(&k.image(), &initramfs, "max", 1, "bench");
    println!("==> {QEMU_AARCH64} {}", args.join(" "));
    let run = run_qemu(QEMU_AARCH64, &args, Duration::from_secs(600));
    let log = build_dir().join("guest.log");
    fs::write(&log, &run.stdout).map_err(|e| format!("{}: {e}", log.display()))?;
    println!("    guest console: {}", log.display());
    if run.timed_out {
        return Err(format!("QEMU ran past 600 s\n{}", run.stdout));
    }
    if run.scenario("done").len() != 1 {
        return Err(format!("the guest did not finish\n{}", run.stdout));
    }
    Report::from_run(&run, &k.image())
}

/// One measured path.
#[derive(Clone, Debug, Default)]
struct Row {
    per_op: Option<f64>,
    total: Option<f64>,
    extra: BTreeMap<String, String>,
}

struct Report {
    rows: BTreeMap<String, Row>,
    /// (path, k) → (measured, error)
    accuracy: BTreeMap<(String, u64), (Option<i64>, Option<i64>)>,
    runs: BTreeMap<String, String>,
    kernel: String,
    stderr: Vec<String>,
}

fn num(v: Option<&String>) -> Option<f64> {
    v.and_then(|s| s.parse().ok())
}

impl Report {
    fn from_run(run: &QemuRun, image: &Path) -> Result<Self, String> {
        let mut rows = BTreeMap::new();
        for r in run.scenario("bench") {
            let path = r.get("path").to_string();
            let mut extra = r.fields.clone();
            extra.remove("path");
            rows.insert(
                path,
                Row {
                    // Means over N operations: whole numbers for every read under
                    // -icount; a region's mean moves by up to 0.01 between runs (a timer
                    // tick landing in a different iteration changes the user-space path
                    // of one hazard check), so figures are whole instructions.
                    per_op: num(extra.remove("per_op").as_ref()).map(f64::round),
                    total: num(extra.remove("total").as_ref()).map(f64::round),
                    extra: extra
                        .into_iter()
                        .filter(|(k, _)| k != "single_min")
                        .collect(),
                },
            );
        }
        let mut accuracy = BTreeMap::new();
        for r in run.scenario("accuracy") {
            let k = r.int("k") as u64;
            let parse = |key: &str| r.fields.get(key).and_then(|v| v.parse::<i64>().ok());
            accuracy.insert(
                (r.get("path").to_string(), k),
                (parse("measured"), parse("error")),
            );
        }
        let runs = run
            .scenario("bench-run")
            .iter()
            .map(|r| (r.get("tag").to_string(), r.get("status").to_string()))
            .collect();
        let kernel = run
            .scenario("boot")
            .first()
            .map(|b| b.get("kernel").to_string())
            .unwrap_or_default();
        let stderr = run
            .stdout
            .lines()
            .filter(|l| l.starts_with("STDERR "))
            .map(str::to_string)
            .collect();
        if rows.is_empty() {
            return Err(format!(
                "no RESULT bench lines from {}\n{}",
                image.display(),
                run.stdout
            ));
        }
        Ok(Self {
            rows,
            accuracy,
            runs,
            kernel,
            stderr,
        })
    }

    fn per_op(&self, path: &str) -> Option<f64> {
        self.rows.get(path).and_then(|r| r.per_op)
    }

    /// (label, our path, value, libperf reference for the ratio)
    fn lines(&self) -> Vec<(String, Option<f64>, Option<f64>)> {
        let lp_fast = self.per_op("libperf-fast");
        let lp_read = self.per_op("libperf-read");
        let lp_total = self.rows.get("libperf-read").and_then(|r| r.total);
        let mut v = vec![
            (
                "perf fast read, count only (mmap page + mrs: `read_count`)".to_string(),
                self.per_op("perf-fast"),
                lp_fast,
            ),
            (
                "perf fast read with page times and lock (`read_fast`)".to_string(),
                self.per_op("perf-fast-times"),
                lp_fast,
            ),
            (
                "perf read() fallback, user part".into(),
                self.per_op("perf-read"),
                lp_read,
            ),
            (
                "perf read() fallback, total (user + kernel)".into(),
                self.rows.get("perf-read").and_then(|r| r.total),
                lp_total,
            ),
            (
                "direct read (module loaded)".into(),
                self.per_op("direct-read"),
                lp_fast,
            ),
        ];
        for k in [1u32, 2, 4, 6] {
            v.push((
                format!("perf region, {k} counter(s) (start+stop+hazards)"),
                self.per_op(&format!("perf-region-{k}")),
                lp_fast.map(|f| f * f64::from(2 * k)),
            ));
        }
        v.push((
            "direct region, 1 counter (start+stop+hazards)".into(),
            self.per_op("direct-region-1"),
            lp_fast.map(|f| f * 2.0),
        ));
        for build in &LIBPERF_BUILDS {
            let (label, prefix) = (build.label, build.prefix);
            let read = format!("{prefix}-read");
            v.push((
                format!("libperf perf_evsel__read, mmap fast path ({label})"),
                self.per_op(&format!("{prefix}-fast")),
                lp_fast,
            ));
            v.push((
                format!("libperf perf_evsel__read, read(), user part ({label})"),
                self.per_op(&read),
                lp_read,
            ));
            v.push((
                format!("libperf perf_evsel__read, read(), total ({label})"),
                self.rows.get(&read).and_then(|r| r.total),
                lp_total,
            ));
        }
        v
    }

    fn table(&self) -> String {
        let mut s = String::new();
        s += &format!(
            "\nRead-path costs in user-space instructions (arm64 test kernel {}, qemu-system-aarch64 -M virt -cpu max -smp 1 -icount shift=0,align=off,sleep=off):\n\n",
            self.kernel
        );
        s += "| path | instructions per op | ratio to libperf |\n|---|---:|---:|\n";
        for (label, value, reference) in self.lines() {
            let v = value.map_or_else(|| "n/a".to_string(), |v| format!("{v:.0}"));
            let ratio = match (value, reference) {
                (Some(v), Some(r)) if r > 0.0 => format!("{:.2}", v / r),
                _ => "n/a".into(),
            };
            s += &format!("| {label} | {v} | {ratio} |\n");
        }
        s += "\nRegion ratios are to 2 × counters libperf fast reads (a start and a stop read per counter).\n";
        if let Some(region) = self.rows.get("perf-region-1") {
            let field = |k: &str| region.extra.get(k).map_or("?", String::as_str);
            s += &format!(
                "Perf regions: {} hazard evidence, the thread's CPU from {} (README: what a region contains).\n",
                field("evidence"),
                field("cpu")
            );
        }
        s += "\nTargets: ";
        let targets: Vec<String> = self
            .targets()
            .iter()
            .map(|(_, label, target, measured)| match measured {
                Some(m) => format!(
                    "{label} ≤ {target:.0}: {m:.0}, {}",
                    if *m <= *target { "met" } else { "missed" }
                ),
                None => format!("{label} ≤ {target:.0}: not measured"),
            })
            .collect();
        s += &targets.join("; ");
        s += ".\n";
        s += "\nAccuracy: error (measured − K) for a block of exactly K instructions:\n\n| path |";
        for k in BLOCKS {
            s += &format!(" K={k} |");
        }
        s += "\n|---|";
        for _ in BLOCKS {
            s += "---:|";
        }
        s += "\n";
        let libperf: Vec<String> = LIBPERF_BUILDS
            .iter()
            .flat_map(|b| [format!("{}-fast", b.prefix), format!("{}-read", b.prefix)])
            .collect();
        for path in OURS
            .iter()
            .copied()
            .chain(libperf.iter().map(String::as_str))
        {
            s += &format!("| {path} |");
            for k in BLOCKS {
                let e = self
                    .accuracy
                    .get(&(path.to_string(), k))
                    .and_then(|(_, e)| *e)
                    .map_or_else(|| "n/a".to_string(), |e| e.to_string());
                s += &format!(" {e} |");
            }
            s += "\n";
        }
        s
    }

    fn json(&self) -> String {
        let f = |v: Option<f64>| v.map_or_else(|| "null".to_string(), |v| format!("{v:.0}"));
        let mut paths = Vec::new();
        for (path, row) in &self.rows {
            let extra: Vec<String> = row
                .extra
                .iter()
                .map(|(k, v)| format!("\"{k}\": \"{v}\""))
                .collect();
            paths.push(format!(
                "    \"{path}\": {{\"per_op\": {}, \"total\": {}, \"extra\": {{{}}}}}",
                f(row.per_op),
                f(row.total),
                extra.join(", ")
            ));
        }
        let mut acc = Vec::new();
        for ((path, k), (measured, error)) in &self.accuracy {
            let o = |v: &Option<i64>| v.map_or_else(|| "null".to_string(), |v| v.to_string());
            acc.push(format!(
                "    {{\"path\": \"{path}\", \"k\": {k}, \"measured\": {}, \"error\": {}}}",
                o(measured),
                o(error)
            ));
        }
        let targets: Vec<String> = self
            .targets()
            .iter()
            .map(|(path, _, target, measured)| {
                format!(
                    "    {{\"path\": \"{path}\", \"at_most\": {target:.0}, \"per_op\": {}, \"met\": {}}}",
                    f(*measured),
                    measured.is_some_and(|m| m <= *target)
                )
            })
            .collect();
        let failures: Vec<String> = self
            .failures()
            .iter()
            .map(|f| format!("\"{}\"", f.replace('"', "'")))
            .collect();
        format!(
            "{{\n  \"kernel\": \"{}\",\n  \"qemu\": \"-M virt -cpu max -smp 1 -icount shift=0,align=off,sleep=off\",\n  \"unit\": \"user-space instructions per operation\",\n  \"libperf_cflags\": \"{LIBPERF_CFLAGS}\",\n  \"paths\": {{\n{}\n  }},\n  \"accuracy\": [\n{}\n  ],\n  \"targets\": [\n{}\n  ],\n  \"exact\": {},\n  \"failures\": [{}]\n}}",
            self.kernel,
            paths.join(",\n"),
            acc.join(",\n"),
            targets.join(",\n"),
            self.failures().is_empty(),
            failures.join(", ")
        )
    }

    /// Each target: path, label, the most instructions allowed, what was measured.
    fn targets(&self) -> Vec<(&'static str, &'static str, f64, Option<f64>)> {
        TARGETS
            .iter()
            .map(|&(path, label, target)| (path, label, target, self.per_op(path)))
            .collect()
    }

    /// Why the bench fails: one of ours not exact, or a guest run that failed.
    fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        let tags = ["perf", "direct"]
            .into_iter()
            .chain(LIBPERF_BUILDS.iter().map(|b| b.prefix));
        for tag in tags {
            match self.runs.get(tag).map(String::as_str) {
                Some("0") => {}
                Some(status) => out.push(format!(
                    "the guest's {tag} bench exited with status {status}: {}",
                    self.stderr
                        .iter()
                        .filter(|l| l.starts_with(&format!("STDERR {tag} ")))
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(" | ")
                )),
                None => out.push(format!("the guest's {tag} bench did not run")),
            }
        }
        for path in OURS {
            for k in BLOCKS {
                match self.accuracy.get(&(path.to_string(), k)) {
                    Some((_, Some(0))) => {}
                    Some((m, e)) => out.push(format!(
                        "{path} is not exact for K={k}: measured {m:?}, error {e:?}"
                    )),
                    None => out.push(format!("{path}: no accuracy result for K={k}")),
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_from_result_lines() {
        let mut out = String::from("RESULT boot scenario=bench arch=aarch64 kernel=6.12 cpus=1\n");
        out += "RESULT bench path=perf-fast per_op=20.000\nRESULT bench path=libperf-fast per_op=140.000 fast=true\n";
        out += "RESULT bench path=perf-fast-times per_op=28.000\n";
        out += "RESULT bench path=perf-read per_op=23.000 total=900.000\n";
        out += "RESULT bench path=libperf-default-fast per_op=520.000 fast=true\n";
        for tag in ["perf", "direct", "libperf", "libperf-default"] {
            out += &format!("RESULT bench-run tag={tag} status=0\n");
        }
        for path in OURS {
            for k in BLOCKS {
                out += &format!("RESULT accuracy path={path} k={k} measured={k} error=0\n");
            }
        }
        let run = QemuRun {
            results: pmu_tests::parse_results(&out),
            stdout: out.clone(),
            code: Some(0),
            timed_out: false,
        };
        let report = Report::from_run(&run, Path::new("Image")).unwrap();
        assert!(report.failures().is_empty(), "{:?}", report.failures());
        let table = report.table();
        assert!(
            table.contains(
                "| perf fast read, count only (mmap page + mrs: `read_count`) | 20 | 0.14 |"
            ),
            "{table}"
        );
        assert!(
            table.contains("| perf fast read with page times and lock (`read_fast`) | 28 | 0.20 |"),
            "{table}"
        );
        // The Makefile-default libperf build has rows of its own, its ratio to -O2's.
        assert!(
            table.contains(
                "| libperf perf_evsel__read, mmap fast path (Makefile default: -O0) | 520 | 3.71 |"
            ),
            "{table}"
        );
        assert!(report.json().contains("\"exact\": true"));
        // The targets (fast read ≤ 30, region of one counter ≤ 80): reported,
        // met or missed by the measured figure, or not measured.
        assert!(
            table.contains("Targets: perf fast read ≤ 30: 20, met; perf region of 1 counter ≤ 80: not measured."),
            "{table}"
        );
        let json = report.json();
        assert!(
            json.contains(
                "{\"path\": \"perf-fast\", \"at_most\": 30, \"per_op\": 20, \"met\": true}"
            ),
            "{json}"
        );
        assert!(
            json.contains(
                "{\"path\": \"perf-region-1\", \"at_most\": 80, \"per_op\": null, \"met\": false}"
            ),
            "{json}"
        );
        let missed = out.replace(
            "RESULT bench path=perf-fast per_op=20.000",
            "RESULT bench path=perf-fast per_op=31.000",
        ) + "RESULT bench path=perf-region-1 per_op=80.000\n";
        let run = QemuRun {
            results: pmu_tests::parse_results(&missed),
            stdout: missed,
            code: Some(0),
            timed_out: false,
        };
        let report = Report::from_run(&run, Path::new("Image")).unwrap();
        let table = report.table();
        assert!(
            table.contains(
                "Targets: perf fast read ≤ 30: 31, missed; perf region of 1 counter ≤ 80: 80, met."
            ),
            "{table}"
        );
        assert!(report.failures().is_empty(), "{:?}", report.failures());
    }
}
