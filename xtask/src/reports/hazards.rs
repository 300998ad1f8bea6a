//! `cargo xtask hazards [--json | --markdown] [--from-log FILE] [--injections N] [--quiet N]`:
//! injected-disturbance statistics. The arm64 test kernel boots under
//! `qemu-system-aarch64 -M virt -cpu max -smp 2 -icount shift=0,align=off,sleep=off`
//! (`scenario=hazards` in tests/guest/arm64.sh), where `pmu-guest hazard-stats` injects
//! each disturbance (a timer tick, `nanosleep`, a migration, a page fault, `getpid`, a
//! counter overflow) N times inside a measured region, for the perf backend and the
//! direct one, and measures quiet regions, checking every flag against evidence that the
//! kernel really ran. Each run prints `RESULT hazard-stats …` / `RESULT hazard-quiet …`
//! lines; this file turns them into a table (or JSON, or docs/hazards.md from
//! xtask/hazards/hazards.md.in) and fails on a missed injection, an injection its
//! evidence does not show, or an unexplained quiet flag.
//!
//! `--json` and `--markdown` print the result alone on stdout ([`crate::engine::stdout`]);
//! `--from-log FILE` renders a guest console kept by an earlier run
//! (target/hazards/guest.log). `--injections` and `--quiet` scale the guest's run down
//! for a quick look (the docs and the test step use the defaults: 1000 and 10 000).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use pmu_tests::{QemuRun, QEMU_AARCH64};
use serde_json::{json, Value};

use crate::engine::step::Step;
use crate::reports::guest_report::{self, Guest, GuestReport};

/// This module's commands in `cargo xtask help`.
pub const USAGE: &str =
    "    hazards [--json | --markdown] [--from-log FILE] [--injections N] [--quiet N]
                      Injected-disturbance statistics in the arm64 test kernel
                      under qemu-system-aarch64 -M virt -cpu max -smp 2 -icount
                      shift=0,align=off,sleep=off: a timer tick, nanosleep, a
                      migration, a page fault, getpid and a counter overflow,
                      each injected N times (default 1000) in a region, on the
                      perf and the direct backend; Q quiet regions (default
                      10 000) whose flags are checked against /proc/interrupts,
                      getrusage and the CPU. Fails on a missed injection or an
                      unexplained flag. --markdown writes docs/hazards.md's
                      text (docs/hazards.md explains every column); the guest's
                      console is in target/hazards/guest.log (--from-log).
";

/// QEMU's options (docs/qemu.md): `-icount` makes the cycle and instruction counters
/// exact, so the overflow regions always span several sampling periods and the timer
/// region's spin (on the virtual counter, which `-icount` ties to instructions) always
/// spans a tick.
const QEMU_OPTIONS: &str = "-M virt -cpu max -smp 2 -icount shift=0,align=off,sleep=off";

/// The guest's time limit.
const LIMIT: Duration = Duration::from_secs(900);

/// Every row the guest must print: (backend, disturbance).
const ROWS: [(&str, &str); 12] = [
    ("perf", "timer"),
    ("perf", "nanosleep"),
    ("perf", "migration"),
    ("perf", "fault"),
    ("perf", "getpid"),
    ("perf", "overflow"),
    ("direct", "timer"),
    ("direct", "nanosleep"),
    ("direct", "migration"),
    ("direct", "fault"),
    ("direct", "getpid"),
    ("direct-programmed", "overflow"),
];

/// The guest's runs of `pmu-guest hazard-stats`.
const RUNS: [&str; 3] = ["perf", "direct", "direct-programmed"];

/// The backends with quiet regions.
const QUIET: [&str; 2] = ["perf", "direct"];

/// The method part of docs/hazards.md; `@SETUP@`, `@INJECTED@`, `@QUIET@`, `@HOW@` and
/// `@VERDICT@` are replaced by the run's figures.
const MARKDOWN_TEMPLATE: &str = include_str!("../../hazards/hazards.md.in");

/// How much the guest injects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Scale {
    injections: u64,
    quiet: u64,
}

impl Default for Scale {
    fn default() -> Self {
        Self {
            injections: 1000,
            quiet: 10_000,
        }
    }
}

/// `cargo xtask hazards …`; `Err` is a usage error.
pub fn command(args: &[&str]) -> Result<ExitCode, String> {
    let mut scale = Scale::default();
    let usage = "`hazards` takes `--json` or `--markdown` (one of them), `--from-log FILE`, \
                 `--injections N`, `--quiet N`";
    let parsed = guest_report::parse_args("hazards", args, usage, |arg, rest| {
        let number = rest.next().and_then(|v| v.parse::<u64>().ok());
        match (arg, number) {
            ("--injections", Some(n)) if n > 0 => scale.injections = n,
            ("--injections", _) => {
                return Err("`hazards --injections` takes a number above 0".to_string())
            }
            ("--quiet", Some(n)) => scale.quiet = n,
            ("--quiet", None) => return Err("`hazards --quiet` takes a number".to_string()),
            _ => return Ok(false),
        }
        Ok(true)
    });
    let args = parsed?;
    Ok(guest_report::run(&args, || {
        guest_report::prepare("hazards", Vec::new())?;
        measure(scale)
    }))
}

/// `cargo xtask test`'s step (its kernel and module come from earlier steps): the
/// table, failing on a miss or an unexplained flag.
pub fn test_step() -> Step {
    Step::func(
        "hazards: each disturbance injected 1000 times per backend, 10 000 quiet regions, arm64 kernel under QEMU -smp 2 -icount (every injection flagged, every flag explained, or fail)",
        || guest_report::check(measure(Scale::default())),
    )
    .needs_programs(crate::build::initramfs::PROGRAMS)
}

fn measure(scale: Scale) -> Result<Report, String> {
    guest_report::measure(&Guest {
        extra: &[],
        cpus: 2,
        append: format!(
            " hazards_injections={} hazards_quiet={}",
            scale.injections, scale.quiet
        ),
        limit: LIMIT,
    })
}

/// One `RESULT hazard-stats` line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Row {
    regions: u64,
    injected: u64,
    flagged: u64,
    expected: u64,
    missed: u64,
    hazards: String,
    errors: u64,
    /// What moved outside the regions, by regions (`irq:<line>:n,switch:n,…`).
    evidence: String,
    skipped: Option<String>,
}

/// One `RESULT hazard-quiet` line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Quiet {
    regions: u64,
    flagged: u64,
    explained: u64,
    unexplained: u64,
    hazards: String,
    evidence: String,
    kernel_ran_unflagged: u64,
    unflagged_evidence: String,
}

#[derive(Debug)]
struct Report {
    rows: BTreeMap<(String, String), Row>,
    quiet: BTreeMap<String, Quiet>,
    /// tag → exit status of pmu-guest hazard-stats.
    runs: BTreeMap<String, String>,
    /// backend → the meter's description (backend, reads, sentinel).
    how: BTreeMap<String, String>,
    stderr: Vec<String>,
    kernel: String,
    qemu_version: Option<String>,
    guest_seconds: Option<String>,
}

impl GuestReport for Report {
    const COMMAND: &'static str = "hazards";

    fn from_run(run: &QemuRun, _source: &Path) -> Result<Self, String> {
        let n = |r: &pmu_tests::ResultLine, k: &str| {
            r.fields
                .get(k)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        let s = |r: &pmu_tests::ResultLine, k: &str| r.fields.get(k).cloned().unwrap_or_default();
        let mut rows = BTreeMap::new();
        for r in run.scenario("hazard-stats") {
            rows.insert(
                (s(r, "backend"), s(r, "disturbance")),
                Row {
                    regions: n(r, "regions"),
                    injected: n(r, "injected"),
                    flagged: n(r, "flagged"),
                    expected: n(r, "expected"),
                    missed: n(r, "missed"),
                    hazards: s(r, "hazards"),
                    errors: n(r, "errors"),
                    evidence: s(r, "evidence"),
                    skipped: r.fields.get("skipped").cloned(),
                },
            );
        }
        let quiet = run
            .scenario("hazard-quiet")
            .into_iter()
            .map(|r| {
                (
                    s(r, "backend"),
                    Quiet {
                        regions: n(r, "regions"),
                        flagged: n(r, "flagged"),
                        explained: n(r, "explained"),
                        unexplained: n(r, "unexplained"),
                        hazards: s(r, "hazards"),
                        evidence: s(r, "evidence"),
                        kernel_ran_unflagged: n(r, "kernel_ran_unflagged"),
                        unflagged_evidence: s(r, "unflagged_evidence"),
                    },
                )
            })
            .collect();
        let runs = run
            .scenario("hazards-run")
            .iter()
            .map(|r| (s(r, "tag"), s(r, "status")))
            .collect();
        let how = run
            .lines_with("HAZARDS-HOW")
            .into_iter()
            .filter_map(|l| l.split_once(' '))
            .map(|(tag, how)| (tag.to_owned(), how.to_owned()))
            .collect();
        let stderr = run
            .stdout
            .lines()
            .filter(|l| l.starts_with("STDERR "))
            .map(str::to_owned)
            .collect();
        let host = run.scenario("hazards-host");
        if rows.is_empty() {
            return Err(format!("no RESULT hazard-stats lines\n{}", run.stdout));
        }
        Ok(Self {
            rows,
            quiet,
            runs,
            how,
            stderr,
            kernel: run
                .scenario("boot")
                .first()
                .map(|b| b.get("kernel").to_owned())
                .unwrap_or_default(),
            qemu_version: host
                .first()
                .and_then(|h| h.fields.get("qemu_version").cloned()),
            guest_seconds: host
                .first()
                .and_then(|h| h.fields.get("guest_seconds").cloned()),
        })
    }

    fn table(&self) -> String {
        format!(
            "\nInjected disturbances ({}):\n\n{}\nQuiet regions:\n\n{}\nMeters:\n{}\n{}",
            self.setup_line(),
            self.injected_table(),
            self.quiet_table(),
            self.how_lines(),
            self.verdict()
        )
    }

    fn json(&self) -> Value {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|((backend, disturbance), r)| {
                json!({
                    "backend": backend, "disturbance": disturbance, "regions": r.regions,
                    "injected": r.injected, "flagged": r.flagged, "expected": r.expected,
                    "missed": r.missed, "hazards": r.hazards, "errors": r.errors,
                    "evidence": r.evidence,
                    "skipped": r.skipped,
                })
            })
            .collect();
        let quiet: Vec<Value> = self
            .quiet
            .iter()
            .map(|(backend, q)| {
                json!({
                    "backend": backend, "regions": q.regions, "flagged": q.flagged,
                    "hazards": q.hazards, "explained": q.explained, "evidence": q.evidence,
                    "unexplained": q.unexplained,
                    "kernel_ran_unflagged": q.kernel_ran_unflagged,
                    "unflagged_evidence": q.unflagged_evidence,
                })
            })
            .collect();
        let failures = self.failures();
        json!({
            "kernel": self.kernel,
            "qemu": QEMU_OPTIONS,
            "qemu_version": self.qemu_version,
            "guest_seconds": self.guest_seconds,
            "meters": self.how,
            "injected": rows,
            "quiet": quiet,
            "passed": failures.is_empty(),
            "failures": failures,
        })
    }

    fn markdown(&self) -> String {
        MARKDOWN_TEMPLATE
            .replace("@SETUP@", &self.setup_line())
            .replace("@INJECTED@", self.injected_table().trim_end())
            .replace("@QUIET@", self.quiet_table().trim_end())
            .replace("@HOW@", self.how_lines().trim_end())
            .replace("@VERDICT@", self.verdict().trim_end())
    }

    /// Why the run fails: a guest run that failed or is missing, a row missing, an
    /// injection missed or not shown by its evidence, a quiet flag unexplained.
    fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        for tag in RUNS {
            match self.runs.get(tag).map(String::as_str) {
                Some("0") => {}
                Some(status) => out.push(format!(
                    "pmu-guest hazard-stats ({tag}) exited with status {status}: {}",
                    self.stderr
                        .iter()
                        .filter(|l| l.starts_with(&format!("STDERR {tag} pmu-demo:")))
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(" | ")
                )),
                None => out.push(format!("pmu-guest hazard-stats ({tag}) did not run")),
            }
        }
        for (backend, disturbance) in ROWS {
            let Some(r) = self.rows.get(&(backend.to_owned(), disturbance.to_owned())) else {
                out.push(format!("{backend} {disturbance}: no result"));
                continue;
            };
            if let Some(why) = &r.skipped {
                out.push(format!("{backend} {disturbance}: skipped ({why})"));
                continue;
            }
            if r.missed > 0 {
                out.push(format!(
                    "{backend} {disturbance}: {} of {} injections not flagged",
                    r.missed, r.injected
                ));
            }
            if r.injected < r.regions {
                out.push(format!(
                    "{backend} {disturbance}: the evidence shows the injection in {} of {} regions only",
                    r.injected, r.regions
                ));
            }
            if r.errors > 0 {
                out.push(format!(
                    "{backend} {disturbance}: {} injections failed",
                    r.errors
                ));
            }
        }
        for backend in QUIET {
            match self.quiet.get(backend) {
                Some(q) if q.unexplained > 0 => out.push(format!(
                    "{backend}: {} of {} flagged quiet regions unexplained",
                    q.unexplained, q.flagged
                )),
                Some(_) => {}
                None => out.push(format!("{backend}: no quiet regions")),
            }
        }
        out
    }
}

impl Report {
    fn setup_line(&self) -> String {
        format!(
            "arm64 test kernel {}, {QEMU_AARCH64} (QEMU {}) {QEMU_OPTIONS}; guest time {} s",
            self.kernel,
            self.qemu_version
                .as_deref()
                .unwrap_or("version not recorded"),
            self.guest_seconds.as_deref().unwrap_or("not recorded"),
        )
    }

    /// The injection table (Markdown).
    fn injected_table(&self) -> String {
        let mut t = String::from(
            "| backend | disturbance | regions | injected | flagged | expected hazard | missed | hazards flagged (regions) |\n|---|---|---:|---:|---:|---:|---:|---|\n",
        );
        for (backend, disturbance) in ROWS {
            match self.rows.get(&(backend.to_owned(), disturbance.to_owned())) {
                Some(Row {
                    skipped: Some(why), ..
                }) => t += &format!("| {backend} | {disturbance} | skipped: {why} | | | | | |\n"),
                Some(r) => {
                    t += &format!(
                        "| {backend} | {disturbance} | {} | {} | {} | {} | {} | {} |\n",
                        r.regions,
                        r.injected,
                        r.flagged,
                        r.expected,
                        r.missed,
                        r.hazards.replace(',', ", ")
                    )
                }
                None => t += &format!("| {backend} | {disturbance} | not run | | | | | |\n"),
            }
        }
        t
    }

    /// The quiet-region table (Markdown).
    fn quiet_table(&self) -> String {
        let mut t = String::from(
            "| backend | regions | flagged | why (regions) | explained | by (regions) | unexplained | kernel ran, not flagged | by (regions) |\n|---|---:|---:|---|---:|---|---:|---:|---|\n",
        );
        for backend in QUIET {
            match self.quiet.get(backend) {
                Some(q) => {
                    t += &format!(
                        "| {backend} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                        q.regions,
                        q.flagged,
                        q.hazards.replace(',', ", "),
                        q.explained,
                        q.evidence.replace(',', ", "),
                        q.unexplained,
                        q.kernel_ran_unflagged,
                        q.unflagged_evidence.replace(',', ", "),
                    )
                }
                None => t += &format!("| {backend} | not run | | | | | | | |\n"),
            }
        }
        t
    }

    fn how_lines(&self) -> String {
        RUNS.iter()
            .map(|tag| {
                format!(
                    "- {tag}: {}\n",
                    self.how.get(*tag).map_or("not recorded", String::as_str)
                )
            })
            .collect()
    }

    fn verdict(&self) -> String {
        match self.failures() {
            f if f.is_empty() => "Every injection flagged, every quiet flag explained.\n".into(),
            f => format!(
                "This run FAILS ({} findings):\n\n{}",
                f.len(),
                f.iter().map(|l| format!("- {l}\n")).collect::<String>()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A console as the guest prints it (tests/guest/arm64.sh `scenario_hazards`,
    /// tests/guest/src/hazard_stats.rs), built here line by line.
    fn console(missed_getpid: u64, unexplained: u64) -> String {
        let mut s = String::from("RESULT hazards-host qemu_version=10.0.2 guest_seconds=42\nRESULT boot scenario=hazards arch=aarch64 kernel=6.12.118 cpus=2\n");
        for (backend, disturbance) in ROWS {
            let missed = if disturbance == "getpid" {
                missed_getpid
            } else {
                0
            };
            s += &format!(
                "RESULT hazard-stats backend={backend} disturbance={disturbance} regions=1000 injected=1000 flagged={} expected={} missed={missed} hazards=kernel-entry:{} errors=0\n",
                1000 - missed,
                1000 - missed,
                1000 - missed
            );
        }
        for backend in QUIET {
            s += &format!("RESULT hazard-quiet backend={backend} regions=10000 flagged=5 explained={} unexplained={unexplained} hazards=kernel-entry:5 evidence=irq:arch_timer:5 kernel_ran_unflagged=0 unflagged_evidence=none\n", 5 - unexplained);
        }
        for tag in RUNS {
            s += &format!("HAZARDS-HOW {tag} perf, one-instruction reads; kernel-entry sentinel\nRESULT hazards-run tag={tag} status=0\n");
        }
        s + "RESULT done scenario=hazards\n"
    }

    fn report(text: &str) -> Report {
        let run = QemuRun {
            results: pmu_tests::parse_results(text),
            stdout: text.to_owned(),
            code: Some(0),
            timed_out: false,
        };
        Report::from_run(&run, Path::new("guest.log")).unwrap()
    }

    #[test]
    fn passes_only_when_every_injection_is_flagged_and_every_flag_explained() {
        assert_eq!(report(&console(0, 0)).failures(), Vec::<String>::new());
        let missed = report(&console(3, 0)).failures();
        assert_eq!(
            missed,
            vec![
                "perf getpid: 3 of 1000 injections not flagged",
                "direct getpid: 3 of 1000 injections not flagged"
            ]
        );
        let unexplained = report(&console(0, 1)).failures();
        assert_eq!(unexplained.len(), 2, "{unexplained:?}");
        assert!(unexplained[0].starts_with("perf: 1 of 5 flagged quiet regions unexplained"));
    }

    #[test]
    fn a_missing_row_or_run_fails() {
        let text = console(0, 0).replace(
            "RESULT hazard-stats backend=perf disturbance=fault",
            "RESULT other backend=perf disturbance=fault",
        );
        assert_eq!(report(&text).failures(), vec!["perf fault: no result"]);
        let text = console(0, 0).replace("tag=direct status=0", "tag=direct status=1");
        assert_eq!(report(&text).failures().len(), 1);
    }

    #[test]
    fn docs_hazards_md_was_generated_from_this_template() {
        let docs =
            std::fs::read_to_string(crate::engine::paths::workspace_root().join("docs/hazards.md"))
                .expect("docs/hazards.md: `cargo xtask hazards --markdown > docs/hazards.md`");
        // Every fixed line of the template (those without a placeholder) is in the doc.
        for line in MARKDOWN_TEMPLATE.lines().filter(|l| !l.contains('@')) {
            assert!(
                docs.contains(line),
                "docs/hazards.md lacks the template's line {line:?}: regenerate it"
            );
        }
    }

    #[test]
    fn markdown_fills_the_template() {
        let md = report(&console(0, 0)).markdown();
        assert!(!md.contains('@'), "{md}");
        assert!(
            md.contains("| perf | getpid | 1000 | 1000 | 1000 | 1000 | 0 | kernel-entry:1000 |"),
            "{md}"
        );
        assert!(md.contains("Every injection flagged, every quiet flag explained."));
    }
}
