//! `cargo xtask bench [--json | --markdown] [--from-log FILE]`: what each read path costs,
//! in user-space instructions,
//! measured in the arm64 test kernel under `qemu-system-aarch64 -M virt -cpu max -smp 1
//! -icount shift=0,align=off,sleep=off`, where INST_RETIRED is exact and every run is
//! byte-for-byte repeatable.
//!
//! The guest (`scenario=bench` in tests/guest/arm64.sh) runs `pmu-guest read-costs`
//! (perf fast read, `read()` fallback, regions of 1, 2, 4, 6 counters, accuracy),
//! `libperf-bench` (xtask/bench/libperf_bench.c linked statically against libperf.a,
//! built here from linux-source-6.12's tools/lib/perf for aarch64 with -O2, and once
//! more as its Makefile builds it by default, -O0) and, after
//! loading kmod-enable-user, `pmu-guest read-costs --direct`. Each prints `RESULT bench
//! path=… per_op=…` and `RESULT accuracy path=… k=… error=…` lines; this file turns them
//! into a table (or JSON, or docs/bench.md) and fails unless every one of our paths is
//! exact.
//!
//! `--json` and `--markdown` print the result alone on stdout: everything else, the
//! steps' progress and the output of the programs they run included, goes to stderr
//! ([`crate::engine::stdout`]). `cargo xtask bench --markdown > docs/bench.md` regenerates the
//! bench's documentation (the method in `xtask/bench/bench.md.in`, the figures from the
//! run), so the numbers in the docs are the numbers the bench printed. `--from-log FILE`
//! renders a guest console kept from an earlier run (`target/bench/guest.log`) instead of
//! booting the guest again.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use pmu_tests::{QemuRun, QEMU_AARCH64};
use serde_json::{json, Map, Value};

use crate::build::kernel;
use crate::engine::paths::workspace_root;
use crate::engine::step::Step;
use crate::reports::guest_report::{self, Guest, GuestReport};

/// This module's commands in `cargo xtask help`.
pub const USAGE: &str = "    bench [--json | --markdown] [--from-log FILE]
                      Read-path costs in user-space instructions, measured in the
                      arm64 test kernel under qemu-system-aarch64 -M virt -cpu max
                      -smp 1 -icount shift=0,align=off,sleep=off (exact, repeatable):
                      our perf fast read, read() fallback, direct read, regions of
                      1/2/4/6 counters, against libperf (built from linux-source-6.12
                      tools/lib/perf with -O2, and as its Makefile builds it by
                      default, -O0); accuracy on blocks of K = 1…10000
                      instructions; the cost targets, met or missed. Fails unless
                      ours are exact. With --json one JSON object,
                      with --markdown docs/bench.md, alone on stdout (progress
                      goes to stderr); the JSON is also in
                      target/bench/bench.json, the guest's console in
                      target/bench/guest.log, which --from-log renders again
                      without booting the guest.
";

/// The libperf build flags the ratios refer to (docs/bench.md's reference: 144
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

/// QEMU's options that make INST_RETIRED exact and every run repeatable (docs/qemu.md).
const ICOUNT: &str = "-icount shift=0,align=off,sleep=off";

/// The block sizes of the accuracy check.
const BLOCKS: [u64; 5] = [1, 10, 100, 1000, 10000];

/// Our paths: their accuracy errors must all be 0.
const OURS: [&str; 4] = ["perf-fast", "perf-read", "direct", "direct-syscall-free"];

/// The cost targets set for the read paths (instructions per operation,
/// at most): reported with the table, met or missed; the bench fails only on accuracy.
const TARGETS: [(&str, &str, f64); 6] = [
    ("perf-fast", "perf fast read", 30.0),
    ("perf-region-1", "perf region of 1 counter", 80.0),
    (
        "perf-region-1-sentinel",
        "perf region of 1 counter + kernel-entry sentinel",
        90.0,
    ),
    (
        "direct-read-const",
        "direct read, counter known at compile time",
        4.0,
    ),
    (
        "direct-read-runtime",
        "direct read, counter chosen at run time",
        8.0,
    ),
    (
        "direct-region-syscall-free-1",
        "direct region, 1 counter (syscall-free, full verdict)",
        30.0,
    ),
];

/// The method part of docs/bench.md; `@COSTS@`, `@TARGETS@` and `@ACCURACY@` are
/// replaced by the figures of the run.
const MARKDOWN_TEMPLATE: &str = include_str!("../../bench/bench.md.in");

/// `cargo xtask bench [--json | --markdown] [--from-log FILE]`; `Err` is a usage error.
pub fn command(args: &[&str]) -> Result<ExitCode, String> {
    let usage = "`bench` takes `--json` or `--markdown` (one of them) and `--from-log FILE`";
    let args = guest_report::parse_args("bench", args, usage, |_, _| Ok(false))?;
    Ok(guest_report::run(&args, || {
        guest_report::prepare("bench", vec![libperf_step()])?;
        measure()
    }))
}

/// Builds libperf and the harnesses, the step the bench adds to the guest's plan.
fn libperf_step() -> Step {
    Step::func(
        "libperf for aarch64 (linux-source-6.12 tools/lib/perf, -O2 and the Makefile's default) and the static libperf-bench harnesses",
        || libperf_benches().map(|_| ()),
    )
}

/// The bench as the last step of `cargo xtask test` (its tools, kernel and module come
/// from earlier steps): the table, failing unless ours are exact.
pub fn test_step() -> Step {
    Step::func(
        "bench: read-path costs in instructions, arm64 kernel under QEMU -icount, vs libperf (exact or fail)",
        || guest_report::check(measure()),
    )
    .needs_programs(crate::build::initramfs::PROGRAMS)
}

/// Every [`LIBPERF_BUILDS`] harness: (guest file name, path here).
fn libperf_benches() -> Result<Vec<(&'static str, PathBuf)>, String> {
    LIBPERF_BUILDS
        .iter()
        .map(|build| Ok((build.binary, libperf_bench(build)?)))
        .collect()
}

fn build_dir() -> PathBuf {
    crate::engine::paths::command_dir("bench")
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
        SOURCE = crate::host::setup::SOURCE_PACKAGE
    );
    Ok(harness)
}

fn measure() -> Result<Report, String> {
    let harnesses = libperf_benches()?;
    guest_report::measure(&Guest {
        extra: &harnesses,
        cpus: 1,
        append: String::new(),
        limit: Duration::from_secs(600),
    })
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
    /// The QEMU that ran the guest, where the log recorded it.
    qemu_version: Option<String>,
    stderr: Vec<String>,
}

fn num(v: Option<&String>) -> Option<f64> {
    v.and_then(|s| s.parse().ok())
}

impl GuestReport for Report {
    const COMMAND: &'static str = "bench";

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
        let qemu_version = run
            .scenario("bench-host")
            .first()
            .and_then(|h| h.fields.get("qemu_version").cloned());
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
            qemu_version,
            stderr,
        })
    }

    /// What `cargo xtask bench` prints after its steps.
    fn table(&self) -> String {
        format!(
            "\nRead-path costs in user-space instructions ({}):\n\n{}\n{}\nAccuracy: error (measured − K) for a block of exactly K instructions:\n\n{}",
            self.setup_line(),
            self.costs(),
            self.targets_line(),
            self.accuracy_table()
        )
    }

    /// The report as one JSON value.
    fn json(&self) -> Value {
        // Whole instructions (see `from_run`), as JSON integers.
        let whole = |v: Option<f64>| v.map_or(Value::Null, |v| json!(v.round() as i64));
        let paths: Map<String, Value> = self
            .rows
            .iter()
            .map(|(path, row)| {
                (
                    path.clone(),
                    json!({
                        "per_op": whole(row.per_op),
                        "total": whole(row.total),
                        "extra": row.extra,
                    }),
                )
            })
            .collect();
        let accuracy: Vec<Value> = self
            .accuracy
            .iter()
            .map(|((path, k), (measured, error))| {
                json!({"path": path, "k": k, "measured": measured, "error": error})
            })
            .collect();
        let targets: Vec<Value> = self
            .targets()
            .iter()
            .map(|(path, _, target, measured)| {
                json!({
                    "path": path,
                    "at_most": whole(Some(*target)),
                    "per_op": whole(*measured),
                    "met": measured.is_some_and(|m| m <= *target),
                })
            })
            .collect();
        let failures = self.failures();
        json!({
            "kernel": self.kernel,
            "qemu": format!("-M virt -cpu max -smp 1 {ICOUNT}"),
            "qemu_version": self.qemu_version,
            "unit": "user-space instructions per operation",
            "libperf_cflags": LIBPERF_CFLAGS,
            "paths": paths,
            "accuracy": accuracy,
            "targets": targets,
            "exact": failures.is_empty(),
            "failures": failures,
        })
    }

    /// docs/bench.md: the method of [`MARKDOWN_TEMPLATE`] with this run's figures.
    fn markdown(&self) -> String {
        MARKDOWN_TEMPLATE
            .replace("@SETUP@", &self.setup_line())
            .replace("@COSTS@", self.costs().trim_end())
            .replace("@TARGETS@", self.targets_line().trim_end())
            .replace("@ACCURACY@", self.accuracy_table().trim_end())
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

impl Report {
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
                "direct read through a `pmu_core::Counter` handle (bound tests + table)".into(),
                self.per_op("direct-read"),
                lp_fast,
            ),
            (
                "direct read, counter known at compile time (`EventCounterN<1>`)".into(),
                self.per_op("direct-read-const"),
                lp_fast,
            ),
            (
                "direct read, counter chosen at run time (`CounterHandle`)".into(),
                self.per_op("direct-read-runtime"),
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
            "perf region, 1 counter + kernel-entry sentinel".into(),
            self.per_op("perf-region-1-sentinel"),
            lp_fast.map(|f| f * 2.0),
        ));
        v.push((
            "direct region, 1 counter (getrusage + sched_getcpu: `DirectRegion` without a sentinel)".into(),
            self.per_op("direct-region-1"),
            lp_fast.map(|f| f * 2.0),
        ));
        v.push((
            "direct region, 1 counter (syscall-free, full verdict: `DirectRegion`, compile-time handles)"
                .into(),
            self.per_op("direct-region-syscall-free-1"),
            lp_fast.map(|f| f * 2.0),
        ));
        v.push((
            "direct region, 1 counter (syscall-free, full verdict: `DirectRegion`, run-time handles, as `Meter` uses it)"
                .into(),
            self.per_op("direct-region-syscall-free-runtime-1"),
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

    /// The machine the figures come from: the guest kernel, the QEMU and its options.
    fn setup_line(&self) -> String {
        format!(
            "arm64 test kernel {}, {} (QEMU {}) -M virt -cpu max -smp 1 {ICOUNT}",
            self.kernel,
            QEMU_AARCH64,
            self.qemu_version
                .as_deref()
                .unwrap_or("version not recorded")
        )
    }

    /// The cost table (Markdown), and the line on where the regions' evidence came from.
    fn costs(&self) -> String {
        let mut s =
            String::from("| path | instructions per op | ratio to libperf |\n|---|---:|---:|\n");
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
                "Perf regions: {} hazard evidence, the thread's CPU from {} (docs/bench.md: what the rows contain).\n",
                field("evidence"),
                field("cpu")
            );
        }
        s
    }

    /// The cost targets, met or missed, as one line.
    fn targets_line(&self) -> String {
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
        format!("Targets: {}.\n", targets.join("; "))
    }

    /// The accuracy table (Markdown): error = measured − K per path and K.
    fn accuracy_table(&self) -> String {
        let mut s = String::from("| path |");
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

    /// Each target: path, label, the most instructions allowed, what was measured.
    fn targets(&self) -> Vec<(&'static str, &'static str, f64, Option<f64>)> {
        TARGETS
            .iter()
            .map(|&(path, label, target)| (path, label, target, self.per_op(path)))
            .collect()
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
        // The direct floor (figures of a guest run, read-costs `floor`).
        out += "RESULT bench path=direct-read-const per_op=2.000 single_min=3\n";
        out += "RESULT bench path=direct-read-runtime per_op=7.000 single_min=9\n";
        out += "RESULT bench path=direct-region-syscall-free-1 per_op=46.000 single_min=58 counters=1\n";
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
        // The targets (fast read ≤ 30, region of one counter ≤ 80): reported,
        // met or missed by the measured figure, or not measured.
        assert!(
            table.contains(
                "Targets: perf fast read ≤ 30: 20, met; perf region of 1 counter ≤ 80: not measured; perf region of 1 counter + kernel-entry sentinel ≤ 90: not measured; direct read, counter known at compile time ≤ 4: 2, met; direct read, counter chosen at run time ≤ 8: 7, met; direct region, 1 counter (syscall-free, full verdict) ≤ 30: 46, missed."
            ),
            "{table}"
        );
        // The JSON is read back by serde_json: whole instructions as integers, the
        // targets as objects, `exact` from the accuracy lines.
        let json: Value =
            serde_json::from_str(&serde_json::to_string_pretty(&report.json()).unwrap()).unwrap();
        assert_eq!(json["exact"], true);
        assert_eq!(json["failures"], json!([]));
        assert_eq!(json["paths"]["perf-fast"]["per_op"], 20);
        assert_eq!(json["paths"]["perf-read"]["total"], 900);
        assert_eq!(json["paths"]["libperf-fast"]["extra"]["fast"], "true");
        assert_eq!(
            json["targets"],
            json!([
                {"path": "perf-fast", "at_most": 30, "per_op": 20, "met": true},
                {"path": "perf-region-1", "at_most": 80, "per_op": null, "met": false},
                {"path": "perf-region-1-sentinel", "at_most": 90, "per_op": null, "met": false},
                {"path": "direct-read-const", "at_most": 4, "per_op": 2, "met": true},
                {"path": "direct-read-runtime", "at_most": 8, "per_op": 7, "met": true},
                {"path": "direct-region-syscall-free-1", "at_most": 30, "per_op": 46, "met": false},
            ])
        );
        assert_eq!(
            json["accuracy"].as_array().unwrap().len(),
            OURS.len() * BLOCKS.len()
        );
        assert_eq!(json["qemu_version"], Value::Null, "no bench-host line here");
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
                "Targets: perf fast read ≤ 30: 31, missed; perf region of 1 counter ≤ 80: 80, met; perf region of 1 counter + kernel-entry sentinel ≤ 90: not measured; direct read, counter known at compile time ≤ 4: 2, met; direct read, counter chosen at run time ≤ 8: 7, met; direct region, 1 counter (syscall-free, full verdict) ≤ 30: 46, missed."
            ),
            "{table}"
        );
        assert!(report.failures().is_empty(), "{:?}", report.failures());
    }

    /// A label that needs escaping in JSON (quotes, a backslash, a newline) comes back
    /// unchanged through serde_json, where hand-made JSON broke.
    #[test]
    fn json_escapes_what_it_must() {
        let out =
            "RESULT boot kernel=6.12\"x\nRESULT bench path=perf-fast per_op=20 note=a\\b\"c\n";
        let run = QemuRun {
            results: pmu_tests::parse_results(out),
            stdout: out.to_string(),
            code: Some(0),
            timed_out: false,
        };
        let report = Report::from_run(&run, Path::new("Image")).unwrap();
        let json: Value =
            serde_json::from_str(&serde_json::to_string_pretty(&report.json()).unwrap()).unwrap();
        assert_eq!(json["kernel"], "6.12\"x");
        assert_eq!(json["paths"]["perf-fast"]["extra"]["note"], "a\\b\"c");
        assert_eq!(json["exact"], false, "no accuracy lines: not exact");
        assert!(!json["failures"].as_array().unwrap().is_empty());
    }

    /// docs/bench.md is the output of `cargo xtask bench --markdown` for the current
    /// template: every fixed part of xtask/bench/bench.md.in appears in it, in order, and
    /// no placeholder is left. (The figures themselves come from the run that wrote it.)
    #[test]
    fn docs_bench_md_was_generated_from_this_template() {
        let doc = fs::read_to_string(workspace_root().join("docs/bench.md")).unwrap();
        let mut rest = doc.as_str();
        for part in MARKDOWN_TEMPLATE
            .split(['@'])
            .filter(|p| !["SETUP", "COSTS", "TARGETS", "ACCURACY"].contains(p))
        {
            let at = rest.find(part).unwrap_or_else(|| {
                panic!("docs/bench.md lacks, or has out of order, this part of the template:\n{part}\nregenerate it: cargo xtask bench --markdown > docs/bench.md")
            });
            rest = &rest[at + part.len()..];
        }
        assert!(!doc.contains("@COSTS@") && !doc.contains("@ACCURACY@"));
        assert!(doc.contains("| perf fast read, count only (mmap page + mrs: `read_count`) |"));
    }

    /// The Markdown fills every placeholder of the template with this report's figures.
    #[test]
    fn markdown_fills_the_template() {
        let out = "RESULT bench-host qemu_version=10.0.2\nRESULT boot kernel=6.12.118\nRESULT bench path=perf-fast per_op=25\nRESULT bench path=libperf-fast per_op=144\n";
        let run = QemuRun {
            results: pmu_tests::parse_results(out),
            stdout: out.to_string(),
            code: Some(0),
            timed_out: false,
        };
        let md = Report::from_run(&run, Path::new("Image"))
            .unwrap()
            .markdown();
        for placeholder in ["@SETUP@", "@COSTS@", "@TARGETS@", "@ACCURACY@"] {
            assert!(!md.contains(placeholder), "{placeholder} left in:\n{md}");
        }
        assert!(md.contains("Measured with: arm64 test kernel 6.12.118, qemu-system-aarch64 (QEMU 10.0.2) -M virt -cpu max -smp 1 -icount shift=0,align=off,sleep=off."), "{md}");
        assert!(
            md.contains(
                "| perf fast read, count only (mmap page + mrs: `read_count`) | 25 | 0.17 |"
            ),
            "{md}"
        );
        assert!(
            md.contains("Targets: perf fast read ≤ 30: 25, met;"),
            "{md}"
        );
        assert!(
            md.contains("| perf-fast | n/a | n/a | n/a | n/a | n/a |"),
            "{md}"
        );
    }
}
