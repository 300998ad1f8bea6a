//! `cargo xtask fresh-check`: the README's two commands as a new machine runs them.
//!
//! A fresh clone of the committed HEAD at a new path, the pinned toolchain's non-host
//! rustup targets removed, an empty project cache (`PMU_CACHE_DIR`) and an empty cargo
//! home (`CARGO_HOME`: no registry, no unpacked crates); then `cargo xtask demo`, `cargo
//! xtask test`, and `cargo xtask test` once more (the cached rerun: in a second fresh
//! clone, its `target/` empty, with the caches the first run filled, as CI reruns it),
//! each with CI=true and no standard input, as CI runs them. Every step's time is parsed from the runs' progress
//! lines and reported as a table; the demo's stdout is checked to hold no package manager
//! output (set-up writes that to logs).

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::engine::paths::workspace_root;
use crate::engine::step::stdout_of;

/// This module's commands in `cargo xtask help`.
pub const USAGE: &str = "    fresh-check [--no-rerun] [--keep-targets] [--dir DIR]
                      The README's two commands as a new machine runs them: a
                      fresh clone of HEAD at a new path (default
                      /tmp/pmu-fresh-<time>), the pinned toolchain's non-host
                      rustup targets REMOVED (set-up adds them back), empty
                      PMU_CACHE_DIR and CARGO_HOME; then `demo`, `test` and
                      `test` again (the cached rerun), with CI=true and no
                      stdin. Prints a table of every step's time per run
                      (docs/fresh-machine.md) and fails if a run fails or the
                      demo's stdout holds package-manager output.
";

const OPTIONS: &str = "usage: cargo xtask fresh-check [--no-rerun] [--keep-targets] [--dir DIR]
       cargo xtask fresh-check --report DIR   (the table again, from DIR/logs)

  --no-rerun       skip the cached rerun of `cargo xtask test` (in a second fresh clone,
                   with the caches the first run filled, as CI reruns it)
  --keep-targets   do not remove the non-host rustup targets first
  --dir DIR        where the clone, its caches and logs go (default /tmp/pmu-fresh-<time>;
                   must not exist yet)";

/// Lines of package-manager output that must never reach the demo's stdout.
const PACKAGE_MANAGER_LINES: &[&str] = &[
    "Unpacking ",
    "Setting up ",
    "Selecting previously unselected",
    "Preparing to unpack",
    "Get:",
    "Hit:",
    "Reading package lists",
    "info: downloading component",
    "info: installing component",
];

/// One step of a run, as its progress lines said.
#[derive(Debug, PartialEq)]
pub struct StepTime {
    /// The step's description (`==> [i/n] what`).
    pub what: String,
    /// Its time in seconds (`ok (x s)`), or `None` where it did not finish.
    pub secs: Option<f64>,
}

/// Steps and times from a run's stderr (see `step::Plan::run`), in plan order: the
/// steps of a group of lanes print their lines (`==> [i/n] what` … `ok (x s)`) as one
/// block when they end, so blocks come in the order the steps finished.
pub fn parse_steps(log: &str) -> Vec<StepTime> {
    let mut steps: Vec<(usize, StepTime)> = Vec::new();
    for line in log.lines() {
        if let Some(rest) = line.strip_prefix("==> [") {
            if let Some((number, what)) = rest.split_once("] ") {
                let number = number
                    .split_once('/')
                    .and_then(|(i, _)| i.parse().ok())
                    .unwrap_or(usize::MAX);
                steps.push((
                    number,
                    StepTime {
                        what: what.to_string(),
                        secs: None,
                    },
                ));
            }
        } else if let Some(rest) = line.strip_prefix("    ok (") {
            if let (Some((_, last)), Some(secs)) = (
                steps.last_mut(),
                rest.strip_suffix(" s)").and_then(|s| s.parse().ok()),
            ) {
                if last.secs.is_none() {
                    last.secs = Some(secs);
                }
            }
        }
    }
    // Stable: lines without a number keep their place among themselves.
    steps.sort_by_key(|(number, _)| *number);
    steps.into_iter().map(|(_, step)| step).collect()
}

/// Lines of `stdout` that look like package-manager output.
pub fn package_manager_lines(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter(|l| {
            let l = l.trim_start();
            PACKAGE_MANAGER_LINES.iter().any(|p| l.starts_with(p))
        })
        .collect()
}

struct Run {
    name: &'static str,
    secs: f64,
    ok: bool,
    steps: Vec<StepTime>,
}

/// Runs `cargo xtask <args>` in `clone` with `env`, stdout to `<logs>/<name>.stdout`,
/// stderr to `<logs>/<name>.stderr` and, for the progress lines, to our stderr.
fn run_xtask(
    name: &'static str,
    args: &[&str],
    clone: &Path,
    env: &[(&str, PathBuf)],
    logs: &Path,
) -> Result<Run, String> {
    let out_path = logs.join(format!("{name}.stdout"));
    let err_path = logs.join(format!("{name}.stderr"));
    let out = fs::File::create(&out_path).map_err(|e| format!("{}: {e}", out_path.display()))?;
    let mut err =
        fs::File::create(&err_path).map_err(|e| format!("{}: {e}", err_path.display()))?;
    eprintln!(
        "fresh-check: {name}: cargo xtask {} (stdout {}, stderr {})",
        args.join(" "),
        out_path.display(),
        err_path.display()
    );
    let started = Instant::now();
    // `cargo` from PATH (rustup's proxy) with none of our toolchain variables, as a
    // newcomer types it: the clone's rust-toolchain.toml picks the toolchain, and the
    // proxy passes it on (RUSTUP_TOOLCHAIN) to every rustc below. Without the proxy a
    // dependency's own rust-toolchain file decides for that crate (the x86 crate ships
    // one naming nightly: seen).
    let mut child = Command::new("cargo")
        .arg("xtask")
        .args(args)
        .current_dir(clone)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("CI", "true")
        .env_remove("CARGO")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("RUSTUP_TOOLCHAIN_SOURCE")
        .env_remove("RUSTC")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run cargo xtask: {e}"))?;
    let mut text = String::new();
    if let Some(stderr) = child.stderr.take() {
        for line in BufReader::new(stderr).lines() {
            let line = line.map_err(|e| format!("reading the run's stderr: {e}"))?;
            let _ = writeln!(err, "{line}");
            if line.starts_with("==> [") || line.starts_with("xtask ") {
                eprintln!("  {name}: {line}");
            }
            text.push_str(&line);
            text.push('\n');
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("waiting for cargo xtask: {e}"))?;
    let secs = started.elapsed().as_secs_f64();
    eprintln!("fresh-check: {name}: {status} after {secs:.0} s");
    Ok(Run {
        name,
        secs,
        ok: status.success(),
        steps: parse_steps(&text),
    })
}

/// A run read back from its stderr log: the steps, and its plans' closing lines (`xtask
/// NAME: all N steps passed in T s`) for its time (the plans' own, without what ran
/// between them, such as the demo's pmu-demo commands) and its verdict.
fn run_from_log(name: &'static str, log: &str) -> Run {
    let plans: Vec<f64> = log
        .lines()
        .filter_map(|l| {
            l.strip_prefix("xtask ")
                .and_then(|l| l.split_once(" steps passed in "))
                .and_then(|(_, t)| t.strip_suffix(" s"))
                .and_then(|t| t.parse::<f64>().ok())
        })
        .collect();
    let failed = log
        .lines()
        .any(|l| l.starts_with("xtask ") && l.contains(" failed"));
    Run {
        name,
        secs: plans.iter().fold(0.0, |total, secs| total + secs),
        ok: !plans.is_empty() && !failed,
        steps: parse_steps(log),
    }
}

/// The report of a check in `dir`, from the logs it kept.
fn report_from_logs(dir: &Path) -> Result<String, String> {
    let logs = dir.join("logs");
    let head = fs::read_to_string(logs.join("report.md"))
        .ok()
        .and_then(|r| r.split_whitespace().nth(3).map(str::to_string))
        .unwrap_or_else(|| "?".into());
    let mut runs = Vec::new();
    for name in ["demo", "test", "rerun"] {
        if let Ok(text) = fs::read_to_string(logs.join(format!("{name}.stderr"))) {
            runs.push(run_from_log(name, &text));
        }
    }
    if runs.is_empty() {
        return Err(format!("no run logs in {}", logs.display()));
    }
    Ok(format!(
        "{}\n(Read back from {}: a run's time is its plans' own.)\n",
        report(&runs, &head),
        logs.display()
    ))
}

fn host_triple() -> Result<String, String> {
    let text = stdout_of(
        Command::new("rustc")
            .arg("-vV")
            .current_dir(workspace_root()),
    )?;
    text.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_string)
        .ok_or_else(|| "rustc -vV printed no host line".to_string())
}

fn remove_non_host_targets() -> Result<(), String> {
    let toolchain = crate::engine::need::TOOLCHAIN;
    let host = host_triple()?;
    let installed = stdout_of(Command::new("rustup").args([
        "target",
        "list",
        "--installed",
        "--toolchain",
        toolchain,
    ]))?;
    let others: Vec<&str> = installed
        .lines()
        .map(str::trim)
        .filter(|t| !t.is_empty() && *t != host)
        .collect();
    if others.is_empty() {
        eprintln!("fresh-check: no non-host rustup targets installed");
        return Ok(());
    }
    eprintln!(
        "fresh-check: removing the rustup targets {} from {toolchain} (set-up must add them back)",
        others.join(", ")
    );
    stdout_of(
        Command::new("rustup")
            .args(["target", "remove", "--toolchain", toolchain])
            .args(&others),
    )?;
    Ok(())
}

fn unix_time() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The report: one table row per step, a column per run; totals; the kernels' share.
fn report(runs: &[Run], head: &str) -> String {
    let mut text = format!(
        "Fresh-machine check of {head} (`cargo xtask fresh-check`): {}\n\n",
        runs.iter()
            .map(|r| format!(
                "{} {} in {:.0} s",
                r.name,
                if r.ok { "passed" } else { "FAILED" },
                r.secs
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for run in runs {
        let kernels: f64 = run
            .steps
            .iter()
            .filter(|s| s.what.starts_with("test kernel"))
            .filter_map(|s| s.secs)
            // fold from +0.0: `sum` of no f64 is -0.0, printed "-0".
            .fold(0.0, |total, secs| total + secs);
        text += &format!(
            "- {}: {} steps, {:.0} s in all, {kernels:.0} s of them building test kernels\n",
            run.name,
            run.steps.len(),
            run.secs
        );
    }
    // One table per plan: a run joins the table before it when it ran the same steps
    // (the cached rerun beside the fresh test run); the demo has a table of its own.
    let mut tables: Vec<Vec<&Run>> = Vec::new();
    for run in runs {
        let names = |r: &Run| r.steps.iter().map(|s| s.what.clone()).collect::<Vec<_>>();
        match tables.last_mut() {
            Some(table) if names(table[0]) == names(run) => table.push(run),
            _ => tables.push(vec![run]),
        }
    }
    for table in tables {
        text += "\n| step |";
        for run in &table {
            text += &format!(" {} (s) |", run.name);
        }
        text += "\n|---|";
        text += &"---:|".repeat(table.len());
        text += "\n";
        for (i, step) in table[0].steps.iter().enumerate() {
            let what: String = step.what.chars().take(90).collect();
            text += &format!("| {} |", what.replace('|', "/"));
            for run in &table {
                let cell = match run.steps.get(i).and_then(|s| s.secs) {
                    Some(s) => format!("{s:.1}"),
                    None => "failed".to_string(),
                };
                text += &format!(" {cell} |");
            }
            text += "\n";
        }
    }
    text
}

/// `cargo xtask fresh-check …`.
pub fn command(args: &[&str]) -> ExitCode {
    let mut rerun = true;
    let mut keep_targets = false;
    let mut dir = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match *arg {
            "--no-rerun" => rerun = false,
            "-h" | "--help" => {
                println!(
                    "cargo xtask fresh-check: the README's two commands as a new machine runs \
                     them (a fresh clone of HEAD, the non-host rustup targets removed, an \
                     empty cache and cargo home), with each step's time.\n\n{OPTIONS}"
                );
                return ExitCode::SUCCESS;
            }
            "--report" => {
                let Some(dir) = rest.next() else {
                    eprintln!("xtask fresh-check: --report needs the check's directory\n{OPTIONS}");
                    return ExitCode::from(2);
                };
                return match report_from_logs(Path::new(dir)) {
                    Ok(text) => {
                        print!("{text}");
                        ExitCode::SUCCESS
                    }
                    Err(why) => {
                        eprintln!("xtask fresh-check: {why}");
                        ExitCode::FAILURE
                    }
                };
            }
            "--keep-targets" => keep_targets = true,
            "--dir" => match rest.next() {
                Some(d) => dir = Some(PathBuf::from(d)),
                None => {
                    eprintln!("xtask fresh-check: --dir needs a directory\n{OPTIONS}");
                    return ExitCode::from(2);
                }
            },
            _ => {
                eprintln!("xtask fresh-check: unknown argument `{arg}`\n{OPTIONS}");
                return ExitCode::from(2);
            }
        }
    }
    match run(rerun, keep_targets, dir) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(why) => {
            eprintln!("xtask fresh-check: {why}");
            ExitCode::FAILURE
        }
    }
}

fn run(rerun: bool, keep_targets: bool, dir: Option<PathBuf>) -> Result<bool, String> {
    let root = workspace_root();
    let dir = dir.unwrap_or_else(|| PathBuf::from(format!("/tmp/pmu-fresh-{}", unix_time())));
    if dir.exists() {
        return Err(format!(
            "{} exists: a fresh check needs a new path",
            dir.display()
        ));
    }
    let status = stdout_of(
        Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(["status", "--porcelain"]),
    )?;
    if !status.trim().is_empty() {
        eprintln!("fresh-check: the work tree has uncommitted changes; they are not in the check (it clones HEAD)");
    }
    let head =
        stdout_of(
            Command::new("git")
                .arg("-C")
                .arg(&root)
                .args(["rev-parse", "--short", "HEAD"]),
        )?;
    let head = head.trim().to_string();
    let clone = dir.join("clone");
    let logs = dir.join("logs");
    fs::create_dir_all(&logs).map_err(|e| format!("{}: {e}", logs.display()))?;
    eprintln!(
        "fresh-check: cloning {} ({head}) into {}",
        root.display(),
        clone.display()
    );
    stdout_of(
        Command::new("git")
            .arg("clone")
            .arg("--quiet")
            .arg(&root)
            .arg(&clone),
    )?;
    if !keep_targets {
        remove_non_host_targets()?;
    }
    let env = [
        ("PMU_CACHE_DIR", dir.join("pmu-cache")),
        ("CARGO_HOME", dir.join("cargo-home")),
    ];
    eprintln!(
        "fresh-check: empty caches: PMU_CACHE_DIR={} CARGO_HOME={}",
        env[0].1.display(),
        env[1].1.display()
    );
    let mut runs = Vec::new();
    let demo = run_xtask("demo", &["demo"], &clone, &env, &logs)?;
    let demo_stdout = fs::read_to_string(logs.join("demo.stdout")).unwrap_or_default();
    let noise = package_manager_lines(&demo_stdout);
    let mut ok = demo.ok;
    if !noise.is_empty() {
        eprintln!(
            "fresh-check: the demo's stdout holds {} lines of package-manager output, e.g. {:?}",
            noise.len(),
            noise[0]
        );
        ok = false;
    }
    let path = logs.join("report.md");
    // The report is rewritten after each run, so a check stopped early keeps its figures.
    let write_report = |runs: &[Run]| {
        fs::write(&path, report(runs, &head)).map_err(|e| format!("{}: {e}", path.display()))
    };
    runs.push(demo);
    write_report(&runs)?;
    let test = run_xtask("test", &["test"], &clone, &env, &logs)?;
    ok &= test.ok;
    let test_ok = test.ok;
    runs.push(test);
    write_report(&runs)?;
    if rerun && test_ok {
        // CI clones afresh for every run: only what lies outside the clone (the caches)
        // carries over, so the rerun gets a clone of its own with an empty `target/`.
        let clone2 = dir.join("clone-rerun");
        // Cloned from the first clone: the same commit, whatever HEAD is by now.
        eprintln!(
            "fresh-check: cloning {} ({head}) into {} for the cached rerun",
            clone.display(),
            clone2.display()
        );
        stdout_of(
            Command::new("git")
                .arg("clone")
                .arg("--quiet")
                .arg(&clone)
                .arg(&clone2),
        )?;
        let again = run_xtask("rerun", &["test"], &clone2, &env, &logs)?;
        ok &= again.ok;
        runs.push(again);
        write_report(&runs)?;
    }
    print!("{}", report(&runs, &head));
    eprintln!("fresh-check: report in {}", path.display());
    Ok(ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The progress lines `step::Plan::run` prints, read back.
    #[test]
    fn steps_and_times_from_progress_lines() {
        let log = "==> [1/3] rustup: targets\n    all installed\n    ok (0.2 s)\n\
                   ==> [2/3] test kernel arm64 (cached)\n    ok (151.0 s)\n\
                   ==> [3/3] host tests\nxtask test: step 3/3 failed (exit status: 101)\n";
        assert_eq!(
            parse_steps(log),
            vec![
                StepTime {
                    what: "rustup: targets".into(),
                    secs: Some(0.2)
                },
                StepTime {
                    what: "test kernel arm64 (cached)".into(),
                    secs: Some(151.0)
                },
                StepTime {
                    what: "host tests".into(),
                    secs: None
                },
            ]
        );
    }

    /// Two lanes' blocks, in the order their steps ended (5 before 4), come back in plan
    /// order with their own times; the group's own line and the start lines are not
    /// steps.
    #[test]
    fn lane_blocks_are_read_back_in_plan_order() {
        let log = "==> steps 4–5 at once, in 2 lanes (lane 1: 4; lane 2: 5); …\n\
                   --> [4/5] started in lane 1: hazards\n\
                   --> [5/5] started in lane 2: bench\n\
                   ==> [5/5] bench\n    ok (33.8 s)\n\
                   ==> [4/5] hazards\n    ok (145.3 s)\n";
        let steps = parse_steps(log);
        let got: Vec<(&str, Option<f64>)> =
            steps.iter().map(|s| (s.what.as_str(), s.secs)).collect();
        assert_eq!(got, [("hazards", Some(145.3)), ("bench", Some(33.8))]);
    }

    /// The demo and the test run ran different steps: each gets its own table, with a
    /// step's time on its own row; a rerun of the same plan joins the test's table.
    #[test]
    fn report_aligns_steps_by_plan() {
        let step = |what: &str, secs| StepTime {
            what: what.into(),
            secs: Some(secs),
        };
        let runs = [
            Run {
                name: "demo",
                secs: 5.0,
                ok: true,
                steps: vec![step("build pmu-demo", 4.0)],
            },
            Run {
                name: "test",
                secs: 9.0,
                ok: true,
                steps: vec![step("rustfmt", 1.0), step("test kernel arm64", 8.0)],
            },
            Run {
                name: "rerun",
                secs: 2.0,
                ok: true,
                steps: vec![step("rustfmt", 0.5), step("test kernel arm64", 0.2)],
            },
        ];
        let text = report(&runs, "abc1234");
        assert!(
            text.contains("| step | demo (s) |\n|---|---:|\n| build pmu-demo | 4.0 |\n"),
            "{text}"
        );
        assert!(text.contains("| step | test (s) | rerun (s) |\n|---|---:|---:|\n| rustfmt | 1.0 | 0.5 |\n| test kernel arm64 | 8.0 | 0.2 |\n"), "{text}");
        assert!(
            text.contains("- demo: 1 steps, 5 s in all, 0 s of them building test kernels"),
            "{text}"
        );
        assert!(
            text.contains("- test: 2 steps, 9 s in all, 8 s of them building test kernels"),
            "{text}"
        );
    }

    /// apt's and rustup's progress lines, as they printed into the demo's stdout before
    /// set-up logged them; results and set-up's own summary lines are not flagged.
    #[test]
    fn package_manager_output_is_recognised() {
        let stdout = "Selecting previously unselected package qemu-user.\n\
                      Unpacking qemu-user (1:10.0.2+ds-2) ...\nSetting up cpio (2.13) ...\n\
                      instructions 1003 1003 5/5 none\n    apt: installing cpio … ok (1.0 s)\n";
        assert_eq!(package_manager_lines(stdout).len(), 3);
        assert!(package_manager_lines("instructions 1003 1003 5/5 none\n").is_empty());
    }
}
