//! `cargo xtask pmu-qemu` (a step of `cargo xtask test`): the pmu-qemu runner used the
//! way a user uses it, as cargo's runner for `aarch64-unknown-linux-musl`.
//!
//! - its plumbing, from inside (pmu-qemu/examples/stdio.rs): arguments, environment,
//!   working directory (a file written in the guest appears here), stdin, stdout,
//!   stderr and the exit status;
//! - pmu-linux's `count` example at 1000 and 2000 iterations of a two-instruction loop:
//!   exactly 2000 instructions more, and 1000 again gives the first count;
//! - pmu-criterion's example bench three times: the estimates of each run.
//!
//! The guest (Debian's kernel, the initramfs) is pmu-qemu's own cache under the cache
//! root (`pmu-qemu/`), prepared by the first run.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::engine::paths::target_dir;
use crate::engine::paths::workspace_root;
use crate::engine::step::{run_logged, Step};

/// This module's commands in `cargo xtask help`.
pub const USAGE: &str = "    pmu-qemu          The cargo runner pmu-qemu as users run it
                      (CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUNNER): its
                      plumbing (arguments, environment, working directory, stdio,
                      exit status), pmu-linux's count example at 1000/2000
                      iterations (exactly 2000 instructions apart), pmu-criterion's
                      bench three times (the same estimates); docs/pmu-qemu.md.
";

const TARGET: &str = "aarch64-unknown-linux-musl";
const RUNNER_ENV: &str = "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUNNER";

/// The step.
pub fn test_step() -> Step {
    Step::func(
        "pmu-qemu: the cargo runner for aarch64-unknown-linux-musl (plumbing; the count example at 1000/2000 iterations; pmu-criterion's bench three times)",
        run,
    )
    .needs_programs(&[
        pmu_tests::QEMU_AARCH64,
        "apt-get",
        "apt-cache",
        "dpkg-deb",
        "tar",
    ])
    .needs_targets(&[TARGET])
}

/// What one run gave.
struct Ran {
    stdout: String,
    stderr: String,
    code: Option<i32>,
    secs: f64,
}

fn runner() -> PathBuf {
    target_dir().join("release/pmu-qemu")
}

fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// `command` with `stdin`, its output kept.
fn ran(command: &mut Command, stdin: &[u8]) -> Result<Ran, String> {
    let t = Instant::now();
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {:?}: {e}", command.get_program()))?;
    let mut input = child.stdin.take().ok_or("no stdin")?;
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || input.write_all(&data));
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let _ = writer.join();
    Ok(Ran {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code(),
        secs: t.elapsed().as_secs_f64(),
    })
}

/// `cargo run --release --target aarch64-unknown-linux-musl -p <package> --example
/// <example> -- <args>` with pmu-qemu as the runner.
fn cargo_run(package: &str, example: &str, args: &[&str]) -> Result<Ran, String> {
    let r = ran(
        cargo()
            .current_dir(workspace_root())
            .args(["run", "-q", "--release", "--target", TARGET, "-p", package])
            .args(["--example", example, "--"])
            .args(args)
            .env(RUNNER_ENV, runner())
            .env(
                "CRITERION_HOME",
                crate::engine::paths::work_dir().join("pmu-qemu-criterion"),
            ),
        b"",
    )?;
    if r.code != Some(0) {
        return Err(format!(
            "{package} --example {example} {} through pmu-qemu: exit {:?}\n{}{}",
            args.join(" "),
            r.code,
            r.stdout,
            r.stderr
        ));
    }
    Ok(r)
}

/// The `N instructions` line of the count example.
pub fn counted(stdout: &str) -> Option<u64> {
    stdout
        .lines()
        .find_map(|l| l.strip_suffix(" instructions")?.trim().parse().ok())
}

/// Criterion's `<bench>  time:   [a instructions b instructions c instructions]`.
pub fn estimate(stdout: &str, bench: &str) -> Option<[f64; 3]> {
    let line = stdout
        .lines()
        .find(|l| l.starts_with(bench) && l.contains("time:"))?;
    let inner = line.split_once('[')?.1.split_once(']')?.0;
    let numbers: Vec<f64> = inner
        .split_whitespace()
        .filter(|w| *w != "instructions")
        .map(|w| w.parse().ok())
        .collect::<Option<_>>()?;
    numbers.try_into().ok()
}

fn plumbing(root: &Path) -> Result<(), String> {
    let program = target_dir().join(format!("{TARGET}/release/examples/stdio"));
    let probe = crate::engine::paths::work_dir().join("pmu-qemu-probe.txt");
    let _ = std::fs::remove_file(&probe);
    let probe_rel = probe
        .strip_prefix(root)
        .map_err(|_| format!("{} is outside {}", probe.display(), root.display()))?;
    let write = format!("write={}:written in the guest", probe_rel.display());
    let stdin = b"hello, guest\n";
    let r = ran(
        Command::new(runner())
            .current_dir(root)
            .arg(&program)
            .args([
                "args",
                "two words",
                "it's $HOME",
                "cwd",
                "env=PMU_QEMU_PROBE",
            ])
            .args(["stdin", "stderr", &write, "exit=3"])
            .env("PMU_QEMU_PROBE", "a b"),
        stdin,
    )?;
    let sum: u64 = stdin.iter().map(|&b| u64::from(b)).sum();
    let mut expected: Vec<String> = vec![format!("arg <{}>", program.display())];
    for a in [
        "args",
        "two words",
        "it's $HOME",
        "cwd",
        "env=PMU_QEMU_PROBE",
    ] {
        expected.push(format!("arg <{a}>"));
    }
    for a in ["stdin", "stderr", &write, "exit=3"] {
        expected.push(format!("arg <{a}>"));
    }
    expected.push(format!("cwd {}", root.display()));
    expected.push("env PMU_QEMU_PROBE=<a b>".into());
    expected.push(format!("stdin {} {sum}", stdin.len()));
    let got: Vec<&str> = r.stdout.lines().collect();
    let written = std::fs::read_to_string(&probe).unwrap_or_default();
    let _ = std::fs::remove_file(&probe);
    if got != expected
        || r.stderr.trim() != "to stderr"
        || r.code != Some(3)
        || written != "written in the guest"
    {
        return Err(format!(
            "pmu-qemu's plumbing: expected stdout {expected:#?}, stderr `to stderr`, exit 3, {} holding `written in the guest`; got stdout {got:#?}, stderr {:?}, exit {:?}, file {written:?}",
            probe.display(),
            r.stderr,
            r.code
        ));
    }
    println!(
        "    plumbing: {} arguments, environment, working directory (9p, a file written there), stdin ({} bytes), stdout, stderr, exit 3: as given ({:.1} s)",
        expected.len() - 4,
        stdin.len(),
        r.secs
    );
    Ok(())
}

fn run() -> Result<(), String> {
    let root = workspace_root();
    run_logged(
        "cargo build --release -p pmu-qemu",
        "pmu-qemu-build",
        cargo()
            .current_dir(&root)
            .args(["build", "--release", "-p", "pmu-qemu"]),
    )?;
    for (package, example) in [
        ("pmu-qemu", "stdio"),
        ("pmu-linux", "count"),
        ("pmu-criterion", "bench"),
    ] {
        run_logged(
            &format!("cargo build --release --target {TARGET} -p {package} --example {example}"),
            &format!("pmu-qemu-{example}-build"),
            cargo().current_dir(&root).args([
                "build",
                "--release",
                "--target",
                TARGET,
                "-p",
                package,
                "--example",
                example,
            ]),
        )?;
    }
    // The first run prepares the guest (its progress lines go to stderr).
    let t = Instant::now();
    let first = ran(Command::new(runner()).arg("--prepare"), b"")?;
    if first.code != Some(0) {
        return Err(format!("pmu-qemu --prepare: {}", first.stderr));
    }
    eprint!("{}", first.stderr);
    println!("    pmu-qemu --prepare: {:.1} s", t.elapsed().as_secs_f64());

    plumbing(&root)?;

    // pmu-linux/examples/count.rs: a loop of two instructions (subs, b.ne) per
    // iteration; under -icount INST_RETIRED counts each executed instruction once (Arm
    // ARM D12.11, common event 0x08), so 1000 more iterations are exactly 2000 more.
    let mut counts = Vec::new();
    for n in ["1000", "2000", "1000"] {
        let r = cargo_run("pmu-linux", "count", &[n])?;
        let c =
            counted(&r.stdout).ok_or_else(|| format!("count {n}: no count in {:?}", r.stdout))?;
        if !r.stderr.contains(
            "backend: perf (the kernel lets this thread read every counter with one instruction",
        ) {
            return Err(format!(
                "count {n}: not the one-instruction perf reads: {}",
                r.stderr
            ));
        }
        println!("    count {n}: {c} instructions ({:.1} s)", r.secs);
        counts.push(c);
    }
    if counts[1] != counts[0] + 2000 || counts[2] != counts[0] {
        return Err(format!(
            "count 1000, 2000, 1000 gave {counts:?}: expected c, c + 2000, c"
        ));
    }

    // pmu-criterion/examples/bench.rs: spin 100 and spin 200 (2 × n instructions more
    // per iteration), three runs.
    let mut runs = Vec::new();
    for i in 1..=3 {
        let r = cargo_run("pmu-criterion", "bench", &["--bench"])?;
        let e100 = estimate(&r.stdout, "spin 100")
            .ok_or_else(|| format!("bench run {i}: no estimate for spin 100:\n{}", r.stdout))?;
        let e200 = estimate(&r.stdout, "spin 200")
            .ok_or_else(|| format!("bench run {i}: no estimate for spin 200:\n{}", r.stdout))?;
        // Criterion picks each run's iteration counts from wall-clock time (the guest's
        // virtual time) in its warm-up; the per-batch cost of a region's reads weighs in
        // its estimate when those counts are small, so they are shown with the figures.
        let iterations: Vec<&str> = r
            .stderr
            .lines()
            .chain(r.stdout.lines())
            .filter_map(|l| {
                l.split_once("Collecting ")?
                    .1
                    .rsplit_once('(')?
                    .1
                    .strip_suffix(')')
            })
            .collect();
        println!(
            "    bench run {i}: spin 100 {e100:?}, spin 200 {e200:?} instructions; criterion's samples: {} ({:.1} s)",
            iterations.join(", "),
            r.secs
        );
        runs.push((e100, e200));
    }
    check_bench(&runs)
}

/// The three runs' estimates (criterion's [lower, estimate, upper] per iteration).
fn check_bench(runs: &[([f64; 3], [f64; 3])]) -> Result<(), String> {
    let (first100, first200) = runs[0];
    for (e100, e200) in runs {
        if e100[1] != first100[1] || e200[1] != first200[1] {
            return Err(format!(
                "pmu-criterion's estimates differ between runs: {runs:?}"
            ));
        }
        if (e200[1] - e100[1] - 200.0).abs() > 1e-9 {
            return Err(format!(
                "spin 200 - spin 100 is {} instructions, not 200: {runs:?}",
                e200[1] - e100[1]
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as the count example and criterion 0.5 print them (seen through pmu-qemu).
    #[test]
    fn the_results_are_read_from_their_lines() {
        assert_eq!(counted("2003 instructions\n"), Some(2003));
        assert_eq!(counted("count: no\n"), None);
        let out = "spin 100                time:   [206.00 instructions 206.00 instructions 206.00 instructions]\n\
spin 200                time:   [406.00 instructions 406.10 instructions 406.13 instructions]\n";
        assert_eq!(estimate(out, "spin 100"), Some([206.0, 206.0, 206.0]));
        assert_eq!(estimate(out, "spin 200"), Some([406.0, 406.1, 406.13]));
        assert_eq!(estimate(out, "spin 300"), None);
    }

    #[test]
    fn the_bench_check_wants_the_same_estimates_200_apart() {
        let exact = ([206.0, 206.0, 206.0], [406.0, 406.0, 406.0]);
        assert!(check_bench(&[exact, exact, exact]).is_ok());
        let drift = ([206.0, 206.1, 206.1], [406.0, 406.0, 406.0]);
        assert!(check_bench(&[exact, drift, exact]).is_err());
    }
}
