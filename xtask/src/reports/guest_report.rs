//! What `cargo xtask bench` and `cargo xtask hazards` share: boot the arm64 test kernel
//! under QEMU with the command's guest scenario, keep the guest's console, build the
//! command's report from its `RESULT` lines (or from a console kept by an earlier run,
//! `--from-log`), and print it as a table, JSON or the command's docs page, with the
//! result alone on stdout for the last two ([`crate::engine::stdout`]).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::slice::Iter;
use std::time::{Duration, Instant};

use pmu_tests::{arm64_kernel_args, run_qemu, QemuRun, QEMU_AARCH64};
use serde_json::Value;

use crate::build::kernel::{self, Arch};
use crate::engine::stdout::Output;
use crate::engine::step::{Plan, Step};

/// A report built from one guest console.
pub trait GuestReport: Sized {
    /// The xtask command, which is also the guest's scenario (`scenario=` on the kernel
    /// command line of tests/guest/arm64.sh) and the name of its work directory.
    const COMMAND: &'static str;
    /// The report of a guest run that finished; `source` names where the lines came from
    /// (the kernel image, or the console file), for messages.
    fn from_run(run: &QemuRun, source: &Path) -> Result<Self, String>;
    /// The tables, for people.
    fn table(&self) -> String;
    /// The whole report as JSON.
    fn json(&self) -> Value;
    /// The command's docs page (the method from its template, the figures from the run).
    fn markdown(&self) -> String;
    /// Why the command fails; empty when it passes.
    fn failures(&self) -> Vec<String>;
}

/// The options every reporting command takes.
#[derive(Debug, PartialEq, Eq)]
pub struct Args {
    /// `--json`, `--markdown`, or neither (the tables).
    pub output: Output,
    /// `--from-log FILE`: render this console instead of booting the guest.
    pub from_log: Option<PathBuf>,
}

/// Parses `--json` or `--markdown` (one of them) and `--from-log FILE`. Every other
/// argument goes to `more` with the rest of the list, which says whether it took it
/// (`Err`: a usage error); an argument nobody takes is the usage error `usage`. A usage
/// error is the message main prints above the help (exit status 2).
pub fn parse_args<'a>(
    command: &str,
    args: &'a [&'a str],
    usage: &str,
    mut more: impl FnMut(&str, &mut Iter<'a, &'a str>) -> Result<bool, String>,
) -> Result<Args, String> {
    let mut parsed = Args {
        output: Output::Table,
        from_log: None,
    };
    let mut rest = args.iter();
    while let Some(&arg) = rest.next() {
        match arg {
            "--json" if parsed.output == Output::Table => parsed.output = Output::Json,
            "--markdown" if parsed.output == Output::Table => parsed.output = Output::Markdown,
            "--from-log" if parsed.from_log.is_none() => match rest.next() {
                Some(file) => parsed.from_log = Some(PathBuf::from(file)),
                None => {
                    return Err(format!(
                        "`{command} --from-log` takes the file of a guest console"
                    ))
                }
            },
            _ => {
                if !more(arg, &mut rest)? {
                    return Err(usage.to_string());
                }
            }
        }
    }
    Ok(parsed)
}

/// The command: the report of `measure` (or of the console `--from-log` names) printed
/// as `args` say. The JSON of a fresh run is also kept as `<command>.json` beside its
/// console.
pub fn run<R: GuestReport>(args: &Args, measure: impl FnOnce() -> Result<R, String>) -> ExitCode {
    let command = R::COMMAND;
    // The result alone on stdout: from here on, stdout is stderr.
    let Ok(mut result_out) = crate::engine::stdout::result_sink(command, args.output) else {
        return ExitCode::FAILURE;
    };
    let report = match &args.from_log {
        Some(log) => report_from_log(log),
        None => measure(),
    };
    let report: R = match report {
        Ok(report) => report,
        Err(why) => {
            eprintln!("xtask {command}: {why}");
            return ExitCode::FAILURE;
        }
    };
    let text = match args.output {
        Output::Table => report.table(),
        Output::Json => match serde_json::to_string_pretty(&report.json()) {
            Ok(text) => {
                let text = text + "\n";
                if args.from_log.is_none() {
                    let path =
                        crate::engine::paths::command_dir(command).join(format!("{command}.json"));
                    match fs::write(&path, &text) {
                        Ok(()) => eprintln!("    JSON: {}", path.display()),
                        Err(e) => eprintln!("xtask {command}: {}: {e}", path.display()),
                    }
                }
                text
            }
            Err(e) => {
                eprintln!("xtask {command}: cannot write the report as JSON: {e}");
                return ExitCode::FAILURE;
            }
        },
        Output::Markdown => report.markdown(),
    };
    crate::engine::stdout::finish(command, &mut result_out, &text, &report.failures())
}
/// A report from a guest console kept by an earlier run.
fn report_from_log<R: GuestReport>(log: &Path) -> Result<R, String> {
    let stdout = fs::read_to_string(log).map_err(|e| format!("{}: {e}", log.display()))?;
    // Progress, printed like the steps' (on stdout): with --json or --markdown it reaches
    // stderr through the diversion, which tests/bench_output.rs checks.
    println!("    report from {}", log.display());
    let run = QemuRun {
        results: pmu_tests::parse_results(&stdout),
        stdout,
        code: Some(0),
        timed_out: false,
    };
    if run.scenario("done").len() != 1 {
        return Err(format!("{}: the guest did not finish", log.display()));
    }
    R::from_run(&run, log)
}

/// Runs the plan that builds what the guest needs: the set-up, the arm64 test kernel and
/// kmod-enable-user, then `more`.
pub fn prepare(command: &'static str, more: Vec<Step>) -> Result<(), String> {
    let plan = Plan::new(command)
        .then(crate::host::setup::steps())
        .then(crate::host::setup::kernel_steps())
        .then(vec![
            crate::guests::modules::kernel_step(Arch::Arm64),
            crate::guests::modules::module_step(Arch::Arm64),
        ])
        .then(more);
    if plan.run() == ExitCode::SUCCESS {
        Ok(())
    } else {
        Err("a step failed (above)".into())
    }
}

/// The body of a command's `cargo xtask test` step: the tables on stdout, and an error
/// listing why the report fails.
pub fn check<R: GuestReport>(report: Result<R, String>) -> Result<(), String> {
    let report = report?;
    print!("{}", report.table());
    match report.failures() {
        f if f.is_empty() => Ok(()),
        f => Err(f.join("\n    ")),
    }
}

/// How a command boots its guest.
pub struct Guest<'a> {
    /// Programs added to the initramfs (`(name, path)`), beside pmu-demo and pmu-guest.
    pub extra: &'a [(&'a str, PathBuf)],
    /// `-smp`.
    pub cpus: u32,
    /// Appended to the kernel command line (` key=value`…), for the guest scenario.
    pub append: String,
    /// How long the guest may run.
    pub limit: Duration,
}

/// Boots the arm64 test kernel (with kmod-enable-user) under `qemu-system-aarch64 -cpu
/// max` in the command's scenario, and builds the report from its console. The console
/// is kept as `guest.log` in [`crate::engine::paths::command_dir`], with a first line `RESULT <command>-host
/// qemu_version=… guest_seconds=…` (the QEMU that measured, and how long the guest ran)
/// that `--from-log` reads back.
pub fn measure<R: GuestReport>(guest: &Guest<'_>) -> Result<R, String> {
    let command = R::COMMAND;
    let k = kernel::kernel(Arch::Arm64)?;
    let ko = kernel::module(Arch::Arm64)?;
    let dir = crate::engine::paths::command_dir(command);
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let initramfs = crate::build::initramfs::build_with(
        Arch::Arm64,
        &ko,
        guest.extra,
        dir.join(format!("arm64-{command}.cpio")),
    )?;
    let mut args = arm64_kernel_args(&k.image(), &initramfs, "max", guest.cpus, command);
    if let Some(append) = args.last_mut() {
        append.push_str(&guest.append);
    }
    println!("==> {QEMU_AARCH64} {}", args.join(" "));
    let started = Instant::now();
    let mut run = run_qemu(QEMU_AARCH64, &args, guest.limit);
    let seconds = started.elapsed().as_secs();
    let version = crate::engine::step::stdout_of(Command::new(QEMU_AARCH64).arg("--version"))?;
    let version = qemu_version(&version).unwrap_or("unknown");
    run.stdout = format!(
        "RESULT {command}-host qemu_version={version} guest_seconds={seconds}\n{}",
        run.stdout
    );
    run.results = pmu_tests::parse_results(&run.stdout);
    let log = dir.join("guest.log");
    fs::write(&log, &run.stdout).map_err(|e| format!("{}: {e}", log.display()))?;
    println!("    guest console: {} ({seconds} s)", log.display());
    if run.timed_out {
        return Err(format!(
            "QEMU ran past {} s\n{}",
            guest.limit.as_secs(),
            run.stdout
        ));
    }
    if run.scenario("done").len() != 1 {
        return Err(format!("the guest did not finish\n{}", run.stdout));
    }
    R::from_run(&run, &k.image())
}

/// The version in `qemu-system-aarch64 --version`'s first line ("QEMU emulator version
/// 10.0.2 (Debian 1:10.0.2+ds-1~bpo12+1)").
fn qemu_version(output: &str) -> Option<&str> {
    output
        .lines()
        .next()?
        .strip_prefix("QEMU emulator version ")?
        .split_whitespace()
        .next()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The banner of Debian's bookworm-backports QEMU 10.0.2 (`qemu-system-aarch64
    /// --version`), and what is not a banner.
    #[test]
    fn qemu_version_from_its_banner() {
        assert_eq!(
            qemu_version("QEMU emulator version 10.0.2 (Debian 1:10.0.2+ds-1~bpo12+1)\nCopyright (c) 2003-2025 Fabrice Bellard and the QEMU Project developers\n"),
            Some("10.0.2")
        );
        assert_eq!(qemu_version("qemu-system-aarch64: unknown option\n"), None);
    }

    /// The shared options, one of the two formats, and what a command adds; anything
    /// else is a usage error.
    #[test]
    fn arguments() {
        let none = |_: &str, _: &mut Iter<'_, &str>| Ok(false);
        assert_eq!(
            parse_args("bench", &["--json", "--from-log", "x.log"], "", none),
            Ok(Args {
                output: Output::Json,
                from_log: Some(PathBuf::from("x.log"))
            })
        );
        assert_eq!(
            parse_args("bench", &[], "", none),
            Ok(Args {
                output: Output::Table,
                from_log: None
            })
        );
        for bad in [
            &["--json", "--markdown"][..],
            &["--from-log", "a", "--from-log", "b"],
            &["--nope"],
        ] {
            assert_eq!(
                parse_args("bench", bad, "usage", none),
                Err("usage".to_string()),
                "{bad:?}"
            );
        }
        assert_eq!(
            parse_args("bench", &["--from-log"], "usage", none),
            Err("`bench --from-log` takes the file of a guest console".to_string())
        );
        let mut quiet = None;
        let parsed = parse_args(
            "hazards",
            &["--quiet", "5", "--markdown"],
            "",
            |arg, rest| {
                if arg == "--quiet" {
                    quiet = rest.next().and_then(|v| v.parse::<u64>().ok());
                    return Ok(true);
                }
                Ok(false)
            },
        );
        assert_eq!(parsed.map(|a| a.output), Ok(Output::Markdown));
        assert_eq!(quiet, Some(5));
    }
}
