//! `cargo xtask pmu-qemu` (a step of `cargo xtask test`): the pmu-qemu runner used the
//! way a user uses it, as cargo's runner for `aarch64-unknown-linux-musl`.
//!
//! - its plumbing, from inside (pmu-qemu/examples/stdio.rs): arguments, environment,
//!   working directory (a file written in the guest appears here), stdin, stdout,
//!   stderr and the exit status;
//! - pmu-linux's `count` example at 1000 and 2000 iterations of a two-instruction loop:
//!   exactly 2000 instructions more, and 1000 again gives the first count, both in the
//!   guest restored from pmu-qemu's saved state and in a booted one (`--no-snapshot`);
//! - pmu-criterion's example bench (`spin/100`, `spin/200`) in one-shot exact mode twice,
//!   saving a baseline and then comparing with it: the same counts, 200 instructions
//!   apart; once in criterion's sampled mode (its estimates, 200 apart); and once
//!   deliberately slower (`BENCH_SPIN_EXTRA=5`) against the baseline with
//!   `--limit instructions=+1%`: exit 3, both benchmarks named with their old and new
//!   counts, the JSON summary saying the same;
//! - pmu-criterion/examples/plain.rs, the same loops written with criterion's own API
//!   (`criterion_group!`, `criterion_main!`, wall-clock time) and run with criterion's
//!   minimum options: its estimates, in the guest's virtual nanoseconds, within 5 % of
//!   the instructions per iteration criterion estimated through pmu-criterion;
//! - `pmu-qemu --profile 10000` of pmu-qemu/examples/two.rs (two functions whose
//!   instructions are known from its disassembly) twice: each function's figure within
//!   one period of its count, the call stack through `main` (frame pointers), the same
//!   folded stacks both times, and a differential flamegraph of the second against the
//!   first.
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
pub const USAGE: &str = "    pmu-qemu          The cargo runner pmu-qemu, started as cargo starts a
                      runner (`pmu-qemu PROGRAM ARGS`; `cargo bench` through
                      it is pmu-qemu-workflow's): its plumbing (arguments,
                      environment, working directory, stdio, exit status),
                      pmu-linux's count example at 1000/2000
                      iterations (exactly 2000 instructions apart; restored and
                      booted guests the same), pmu-criterion's
                      bench: one-shot exact twice (equal counts, a baseline saved
                      and met), sampled once, and the regression gate on a
                      slower variant (exit 3, each benchmark named);
                      a plain criterion bench (virtual ns within 5 % of
                      the instructions per iteration);
                      --profile of a two-function program twice (each
                      function within one period of its known count, the
                      same folded stacks); docs/pmu-qemu.md.
";

const TARGET: &str = "aarch64-unknown-linux-musl";

/// The step.
pub fn test_step() -> Step {
    Step::func(
        "pmu-qemu: the cargo runner for aarch64-unknown-linux-musl (plumbing; the count example at 1000/2000 iterations, restored and booted; pmu-criterion's bench: one-shot twice, sampled once, the regression gate on a slower variant; a plain criterion bench in virtual time; --profile of a two-function program twice)",
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
pub(crate) struct Ran {
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) code: Option<i32>,
    pub(crate) secs: f64,
}

fn runner() -> PathBuf {
    target_dir().join("release/pmu-qemu")
}

fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// `command` with `stdin`, its output kept.
pub(crate) fn ran(command: &mut Command, stdin: &[u8]) -> Result<Ran, String> {
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

/// Where the example bench keeps its baselines and summary (inside the working
/// directory, which pmu-qemu shares with the guest).
fn gate_home() -> PathBuf {
    crate::engine::paths::work_dir().join("pmu-qemu-gate")
}

/// An example built for the guest (`<target>/release/examples/<name>`).
fn example(name: &str) -> PathBuf {
    target_dir().join(format!("{TARGET}/release/examples/{name}"))
}

/// `pmu-qemu RUNNER_ARGS <example> ARGS` with `env` added, whatever its exit status:
/// what `cargo run --example <example> -- ARGS` runs with the runner `pmu-qemu
/// RUNNER_ARGS`, from the workspace root. Criterion's files and the gate's go to the
/// working directory, which pmu-qemu shares with the guest.
fn run_example(
    runner_args: &[&str],
    name: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Result<Ran, String> {
    ran(
        Command::new(runner())
            .args(runner_args)
            .arg(example(name))
            .args(args)
            .current_dir(workspace_root())
            .env(
                "CRITERION_HOME",
                crate::engine::paths::work_dir().join("pmu-qemu-criterion"),
            )
            .env("PMU_CRITERION_HOME", gate_home())
            .envs(env.iter().copied()),
        b"",
    )
}

/// As [`run_example`] with the plain runner, failing unless the program exits with 0.
fn run_example_ok(package: &str, name: &str, args: &[&str]) -> Result<Ran, String> {
    checked(package, name, args, run_example(&[], name, args, &[])?)
}

fn checked(package: &str, example: &str, args: &[&str], r: Ran) -> Result<Ran, String> {
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

/// One-shot exact mode's `<bench>   214 instructions (exact)`.
pub fn exact(stdout: &str, bench: &str) -> Option<u64> {
    stdout.lines().find_map(|l| {
        let rest = l.strip_prefix(bench)?.trim_start();
        let (count, unit) = rest.split_once(' ')?;
        unit.starts_with("instructions (exact)")
            .then(|| count.parse().ok())
            .flatten()
    })
}

/// From pmu-criterion's note `… differ (A then B instructions per call …`: B - A.
pub fn in_process_difference(stderr: &str) -> Option<i64> {
    let rest = stderr.split("in one process differ (").nth(1)?;
    let mut words = rest.split_whitespace();
    let a: i64 = words.next()?.parse().ok()?;
    (words.next()? == "then").then_some(())?;
    let b: i64 = words.next()?.parse().ok()?;
    Some(b - a)
}

/// Criterion's `<bench>  time:   [a instructions b instructions c instructions]`.
pub fn estimate(stdout: &str, bench: &str) -> Option<[f64; 3]> {
    estimate_in(stdout, bench, "instructions")
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
    // The examples of pmu-linux (`count`, `undisturbed`) and pmu-criterion (`bench`,
    // `plain`) come from the arm64 guests' own build, which the test plan ran before
    // this step: `cargo run -p pmu-linux --example count` (or `-p pmu-criterion`) would
    // compile pmu-linux once more for each, with another feature set, for the same
    // programs. They run through the runner as `cargo run` runs them ([`run_example`]);
    // `cargo bench` itself with pmu-qemu as the runner is the workflow check's
    // (docs/pmu-qemu.md, a user's repository).
    crate::build::initramfs::arm64_examples_built(&["undisturbed", "plain"])?;
    // pmu-qemu's own examples: `stdio` as it is, `two` with frame pointers in its own
    // functions only (`cargo rustc … --`: the flag reaches the example's crate alone, so
    // no other build is disturbed).
    for (subcommand, example, flags) in [
        ("build", "stdio", &[][..]),
        (
            "rustc",
            "two",
            &["--", "-C", "force-frame-pointers=yes"][..],
        ),
    ] {
        let mut args = vec![
            subcommand,
            "--release",
            "--target",
            TARGET,
            "-p",
            "pmu-qemu",
            "--example",
            example,
        ];
        args.extend(flags);
        run_logged(
            &format!("cargo {}", args.join(" ")),
            &format!("pmu-qemu-{example}-build"),
            cargo().current_dir(&root).args(&args),
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
    // The first three restore the booted guest saved in pmu-qemu's cache; the last
    // boots (`--no-snapshot`): the same machine, so the same count.
    for (n, how) in [
        ("1000", "restored"),
        ("2000", "restored"),
        ("1000", "restored"),
        ("1000", "booted"),
    ] {
        let runner_args: &[&str] = if how == "booted" {
            &["--no-snapshot"]
        } else {
            &[]
        };
        let r = checked(
            "pmu-linux",
            "count",
            &[n],
            run_example(runner_args, "count", &[n], &[])?,
        )?;
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
        println!("    count {n} ({how}): {c} instructions ({:.1} s)", r.secs);
        counts.push(c);
    }
    if counts[1] != counts[0] + 2000 || counts[2] != counts[0] || counts[3] != counts[0] {
        return Err(format!(
            "count 1000, 2000, 1000 (restored), 1000 (booted) gave {counts:?}: expected c, c + 2000, c, c"
        ));
    }

    undisturbed()?;

    // pmu-criterion/examples/bench.rs: spin/100 and spin/200 (2 × n instructions more
    // per call). One-shot exact mode (pmu-qemu sets PMU_QEMU_EXACT=1) twice: a baseline
    // saved, then met with no growth allowed.
    let _ = std::fs::remove_dir_all(gate_home());
    let mut runs = Vec::new();
    for (i, args) in [
        [
            "--bench",
            "--save-baseline",
            "xtask",
            "--limit",
            "instructions=+0",
        ],
        [
            "--bench",
            "--baseline",
            "xtask",
            "--limit",
            "instructions=+0",
        ],
    ]
    .iter()
    .enumerate()
    {
        let r = run_example_ok("pmu-criterion", "bench", args)?;
        let counts = one_shot_counts(&r.stdout).ok_or_else(|| {
            format!(
                "one-shot run {}: no exact counts:\n{}{}",
                i + 1,
                r.stdout,
                r.stderr
            )
        })?;
        println!(
            "    bench, one-shot exact, run {} ({}): spin/100 {}, spin/200 {} instructions ({:.1} s)",
            i + 1,
            args[1..3].join(" "),
            counts.0,
            counts.1,
            r.secs
        );
        runs.push(counts);
    }
    check_one_shot(&runs)?;

    // A routine whose calls differ (pmu-criterion/examples/bench.rs `history/100`: call
    // N spins 100 × N iterations of two instructions): counted in two fresh processes,
    // each its second call, 200 iterations, the same as `spin/200` but for the
    // closure's own instructions; twice, the same figure.
    let mut history = Vec::new();
    for i in 1..=2 {
        let r = run_example(
            &[],
            "bench",
            &["--bench", "history"],
            &[("BENCH_HISTORY", "1")],
        )?;
        let r = checked("pmu-criterion", "bench", &["--bench", "history"], r)?;
        let count = exact(&r.stdout, "history/100")
            .ok_or_else(|| format!("history run {i}: no exact count:\n{}{}", r.stdout, r.stderr))?;
        let said = "history/100: its second and third calls in one process differ";
        if !r.stderr.contains(said) || !r.stderr.contains("counted in two fresh processes") {
            return Err(format!(
                "history run {i}: the fresh processes not said:\n{}",
                r.stderr
            ));
        }
        let apart = in_process_difference(&r.stderr)
            .ok_or_else(|| format!("history run {i}: no in-process counts:\n{}", r.stderr))?;
        if apart != 200 {
            return Err(format!(
                "history run {i}: calls 2 and 3 differ by {apart} instructions, not 200 (100 more iterations of a 2-instruction loop)"
            ));
        }
        println!(
            "    bench, history/100 (calls 2 and 3 differ by {apart}): {count} instructions from two fresh processes, run {i} ({:.1} s)",
            r.secs
        );
        history.push(count);
    }
    if history[0] != history[1] || history[0].abs_diff(runs[0].1) > 16 {
        return Err(format!(
            "history/100 gave {history:?}: expected the same twice, near spin/200's {}",
            runs[0].1
        ));
    }

    // Criterion's sampling, as on a machine whose counts vary: its per-iteration
    // estimates (the slope of batches of growing size, which leaves out the loop set-up
    // that one call's count includes) are 200 instructions apart too.
    let r = run_example(
        &[],
        "bench",
        &["--bench"],
        &[("PMU_CRITERION_MODE", "sampled")],
    )?;
    let r = checked("pmu-criterion", "bench", &["--bench"], r)?;
    let e100 = estimate(&r.stdout, "spin/100")
        .ok_or_else(|| format!("sampled run: no estimate for spin/100:\n{}", r.stdout))?;
    let e200 = estimate(&r.stdout, "spin/200")
        .ok_or_else(|| format!("sampled run: no estimate for spin/200:\n{}", r.stdout))?;
    println!(
        "    bench, criterion's sampling: spin/100 {e100:?}, spin/200 {e200:?} instructions per iteration ({:.1} s)",
        r.secs
    );
    if (e200[1] - e100[1] - 200.0).abs() > 1e-9 {
        return Err(format!(
            "criterion's estimates: spin/200 - spin/100 is {} instructions, not 200",
            e200[1] - e100[1]
        ));
    }

    // Plain criterion (pmu-criterion/examples/plain.rs: criterion's own API and its
    // wall-clock measurement, the same loops) with criterion's own minimums on the
    // command line: it samples the guest's virtual time, in which one instruction is one
    // nanosecond under `-icount shift=0`, so its estimates are close to the
    // instructions per iteration just estimated, though not exact (the kernel's
    // instructions and idle jumps of the clock count too).
    let r = run_example_ok("pmu-criterion", "plain", &PLAIN_ARGS)?;
    let p100 = estimate_in(&r.stdout, "spin/100", "ns")
        .ok_or_else(|| format!("plain criterion: no estimate for spin/100:\n{}", r.stdout))?;
    let p200 = estimate_in(&r.stdout, "spin/200", "ns")
        .ok_or_else(|| format!("plain criterion: no estimate for spin/200:\n{}", r.stdout))?;
    check_plain([p100[1], p200[1]], [e100[1], e200[1]])?;
    println!(
        "    plain criterion ({}): spin/100 {p100:?}, spin/200 {p200:?} virtual ns per iteration, within {PLAIN_TOLERANCE_PERCENT} % of the instructions above ({:.1} s)",
        PLAIN_ARGS[1..].join(" "),
        r.secs
    );

    // The gate: 5 more iterations (10 instructions) in each benchmark, +1 % allowed:
    // spin/100 grows 4.7 %, spin/200 2.4 %; both regress, exit 3.
    let args = [
        "--bench",
        "--baseline",
        "xtask",
        "--limit",
        "instructions=+1%",
    ];
    let r = run_example(&[], "bench", &args, &[("BENCH_SPIN_EXTRA", "5")])?;
    let summary = std::fs::read_to_string(gate_home().join("summary/bench.json"))
        .map_err(|e| format!("the gate's summary: {e}"))?;
    check_gate(&runs[0], &r, &summary)?;
    println!(
        "    bench, gate (BENCH_SPIN_EXTRA=5, --limit instructions=+1%): exit {:?}, {} ({:.1} s)",
        r.code,
        r.stderr
            .lines()
            .filter(|l| l.contains("REGRESSED"))
            .collect::<Vec<_>>()
            .join("; "),
        r.secs
    );
    profile(&root)
}

/// The iterations of each loop of pmu-linux/examples/undisturbed.rs: enough for the
/// guest's 4 ms tick to switch the thread out inside the regions (one instruction is
/// one virtual ns; the `getpid` and `yield` regions run about 10^8 kernel
/// instructions).
const UNDISTURBED_K: u64 = 100_000;

/// pmu-linux/examples/undisturbed.rs, the machine's exactness rule shown: on pmu-qemu's
/// default machine (one vCPU) every region of a loop with a system call, a page fault
/// or a `sched_yield` per iteration is exact and trusted; with `--smp 2` the rule does
/// not apply and the same regions are refused.
fn undisturbed() -> Result<(), String> {
    let k = UNDISTURBED_K.to_string();
    for (how, runner_args) in [("one vCPU", &[][..]), ("--smp 2", &["--smp", "2"][..])] {
        let exact = runner_args.is_empty();
        let r = checked(
            "pmu-linux",
            "undisturbed",
            &[&k],
            run_example(runner_args, "undisturbed", &[&k], &[])?,
        )?;
        let lines = undisturbed_lines(&r.stdout)?;
        check_undisturbed(&lines, UNDISTURBED_K, exact)
            .map_err(|e| format!("undisturbed {k} ({how}): {e}\n{}{}", r.stdout, r.stderr))?;
        let refused = lines
            .iter()
            .filter(|l| l.value.starts_with("refused"))
            .count();
        let switches: u64 = lines.iter().map(|l| l.switches).max().unwrap_or(0);
        println!(
            "    undisturbed {k} ({how}): {} regions of 2K, exact={exact}, {refused} refused, up to {switches} switches in one ({:.1} s)",
            lines.len(),
            r.secs
        );
    }
    Ok(())
}

/// One `RESULT` line of pmu-linux/examples/undisturbed.rs.
#[derive(Debug, PartialEq)]
pub struct UndisturbedLine {
    loop_name: String,
    event: String,
    k: u64,
    r0: u64,
    rk: u64,
    r2k: u64,
    hazards: String,
    value: String,
    switches: u64,
    kernel: u64,
    exact: bool,
}

/// The `RESULT` lines of the example's stdout.
pub fn undisturbed_lines(stdout: &str) -> Result<Vec<UndisturbedLine>, String> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("RESULT "))
        .map(|l| {
            let (head, value_and_rest) = l
                .split_once(" value=")
                .ok_or_else(|| format!("no value= in {l:?}"))?;
            // The value may be a refusal with spaces; the fields after it are the last three.
            let mut tail: Vec<&str> = value_and_rest.rsplitn(4, ' ').collect();
            tail.reverse();
            let [value, switches, kernel, exact] = tail[..] else {
                return Err(format!("not four fields after value= in {l:?}"));
            };
            let mut words = head.split(' ');
            let (Some(loop_name), Some(event)) = (words.next(), words.next()) else {
                return Err(format!("no loop and event in {l:?}"));
            };
            let field = |word: Option<&str>, key: &str| -> Result<String, String> {
                word.and_then(|w| w.strip_prefix(key))
                    .and_then(|w| w.strip_prefix('='))
                    .map(str::to_owned)
                    .ok_or_else(|| format!("no {key}= in {l:?}"))
            };
            let number = |word: Option<&str>, key: &str| -> Result<u64, String> {
                field(word, key)?
                    .parse()
                    .map_err(|e| format!("{key} in {l:?}: {e}"))
            };
            Ok(UndisturbedLine {
                loop_name: loop_name.to_owned(),
                event: event.to_owned(),
                k: number(words.next(), "k")?,
                r0: number(words.next(), "r0")?,
                rk: number(words.next(), "rk")?,
                r2k: number(words.next(), "r2k")?,
                hazards: field(words.next(), "hazards")?,
                value: value.to_owned(),
                switches: number(Some(switches), "switches")?,
                kernel: number(Some(kernel), "kernel")?,
                exact: field(Some(exact), "exact")? == "true",
            })
        })
        .collect()
}

/// The example's loops are four instructions an iteration (its `asm!` blocks), so the
/// regions of K and 2K iterations, which run the same code, are exactly 4K apart where
/// the count is undisturbed. With `exact` (one vCPU): all four loops for both events,
/// every region of 2K exact, without hazards and its value given, the kernel entered in
/// the three loops that enter it and the thread switched out in at least one region.
/// Without: the rule off on every line, and some region refused.
pub fn check_undisturbed(lines: &[UndisturbedLine], k: u64, exact: bool) -> Result<(), String> {
    let loops = ["plain", "getpid", "faults", "yield"];
    for name in loops {
        for event in ["instructions", "cpu-cycles"] {
            if !lines
                .iter()
                .any(|l| l.loop_name == name && l.event == event)
            {
                return Err(format!("no line for {name} {event}"));
            }
        }
    }
    if lines.iter().any(|l| l.k != k) {
        return Err(format!("a line not of K = {k}"));
    }
    if !exact {
        if let Some(l) = lines.iter().find(|l| l.exact) {
            return Err(format!(
                "{} {}: exact emulation claimed",
                l.loop_name, l.event
            ));
        }
        if !lines.iter().any(|l| l.value.starts_with("refused")) {
            return Err("every region trusted where the rule does not apply".into());
        }
        return Ok(());
    }
    for l in lines {
        let what = format!("{} {}", l.loop_name, l.event);
        if !l.exact || l.hazards != "none" || l.value != l.r2k.to_string() {
            return Err(format!(
                "{what}: exact={}, hazards={}, value={}: not trusted as exact",
                l.exact, l.hazards, l.value
            ));
        }
        if l.r2k.checked_sub(l.rk) != Some(4 * k) || l.rk <= l.r0 {
            return Err(format!(
                "{what}: regions of 0, K, 2K counted {}, {}, {}: 2K - K is not 4K = {}",
                l.r0,
                l.rk,
                l.r2k,
                4 * k
            ));
        }
        if l.loop_name != "plain" && l.kernel == 0 {
            return Err(format!(
                "{what}: the kernel-entry sentinel saw no kernel entry"
            ));
        }
    }
    if lines.iter().all(|l| l.switches == 0) {
        return Err("no region was switched out: the switch case is not shown".into());
    }
    Ok(())
}

/// The sampling period of the profile check, in instructions.
const PERIOD: u64 = 10_000;

/// The instructions of pmu-qemu/examples/two.rs's `first` and `second`, from
/// `aarch64-linux-gnu-objdump -d` of its build (Rust 1.95, `-C
/// force-frame-pointers=yes`): `stp x29, x30`, `mov x29, sp`, then the loop (`subs`,
/// `b.ne`: 2 instructions; `subs`, `nop`, `b.ne`: 3) once per iteration (3 000 000
/// each: `two::FIRST`, `two::SECOND`), then `ldp x29, x30` and `ret`.
const TWO_COUNTS: [(&str, u64); 2] = [
    ("two::first", 2 * 3_000_000 + 4),
    ("two::second", 3 * 3_000_000 + 4),
];

/// `pmu-qemu --profile` of examples/two twice: the second run draws a differential
/// flamegraph against the first's folded stacks.
fn profile(root: &Path) -> Result<(), String> {
    let program = target_dir().join(format!("{TARGET}/release/examples/two"));
    let dir = crate::engine::paths::work_dir().join("pmu-qemu-profile");
    let _ = std::fs::remove_dir_all(&dir);
    let first_run = dir.join("two.run-1.folded");
    let mut folded = Vec::new();
    for run in 1..=2 {
        let mut command = Command::new(runner());
        command
            .current_dir(root)
            .args(["--profile", &PERIOD.to_string(), "--profile-dir"])
            .arg(&dir);
        if run == 2 {
            command.arg("--profile-baseline").arg(&first_run);
        }
        let r = ran(command.arg(&program), b"")?;
        if r.code != Some(0) {
            return Err(format!(
                "pmu-qemu --profile {PERIOD} two (run {run}): exit {:?}\n{}{}",
                r.code, r.stdout, r.stderr
            ));
        }
        let text = std::fs::read_to_string(dir.join("two.folded"))
            .map_err(|e| format!("run {run}'s two.folded: {e}"))?;
        let figures = check_profile(&text).map_err(|e| format!("run {run}: {e}\n{}", r.stderr))?;
        println!(
            "    profile of two, run {run} (--profile {PERIOD}): {} ({:.1} s)",
            figures
                .iter()
                .zip(TWO_COUNTS)
                .map(|(got, (name, known))| format!("{name} {got} (known {known})"))
                .collect::<Vec<_>>()
                .join(", "),
            r.secs
        );
        if run == 1 {
            std::fs::write(&first_run, &text)
                .map_err(|e| format!("{}: {e}", first_run.display()))?;
        }
        folded.push(text);
    }
    if folded[0] != folded[1] {
        return Err(format!(
            "two runs of the profile gave different folded stacks:\n{}\n---\n{}",
            folded[0], folded[1]
        ));
    }
    for svg in ["two.svg", "two.diff.svg"] {
        let text = std::fs::read_to_string(dir.join(svg)).map_err(|e| format!("{svg}: {e}"))?;
        if !text.contains("two::second") {
            return Err(format!("{svg} does not name two::second"));
        }
    }
    println!(
        "    profile of two: the same folded stacks on both runs ({} lines); two.svg and two.diff.svg in {}",
        folded[0].lines().count(),
        dir.display()
    );
    Ok(())
}

/// The figures of `first` and `second` (their own instructions: the stacks they end)
/// in folded stacks, each within one period of its known count and reached from
/// `two::main` (the call stack through the frame records).
fn check_profile(folded: &str) -> Result<Vec<u64>, String> {
    let mut figures = Vec::new();
    for (name, known) in TWO_COUNTS {
        let mut own = 0u64;
        let mut through_main = false;
        for line in folded.lines() {
            let (stack, count) = line
                .rsplit_once(' ')
                .ok_or_else(|| format!("not a folded line: {line}"))?;
            let count: u64 = count
                .parse()
                .map_err(|_| format!("not a folded line: {line}"))?;
            if stack == name || stack.ends_with(&format!(";{name}")) {
                own += count;
                through_main |= stack.ends_with(&format!("two::main;{name}"));
            }
        }
        if own.abs_diff(known) > PERIOD {
            return Err(format!(
                "{name}: {own} instructions in the profile, {known} in its disassembly: more than one period ({PERIOD}) apart\n{folded}"
            ));
        }
        if !through_main {
            return Err(format!(
                "{name}: no stack through two::main (frame pointers)\n{folded}"
            ));
        }
        figures.push(own);
    }
    Ok(figures)
}

/// Criterion's own options for the plain example: its minimums (`--sample-size` 10,
/// criterion 0.5's `assert!(num_size >= 10)`), 1 ms of warm-up and 10 ms of measurement
/// in the guest's virtual time (about 10^6 and 10^7 instructions).
const PLAIN_ARGS: [&str; 8] = [
    "--bench",
    "--warm-up-time",
    "0.001",
    "--measurement-time",
    "0.01",
    "--sample-size",
    "10",
    "--noplot",
];

/// How far plain criterion's virtual-time estimate may be from the instructions per
/// iteration: the kernel's share of the guest's clock (timer ticks, a preempting kernel
/// thread) and criterion's statistics over 10 samples.
const PLAIN_TOLERANCE_PERCENT: f64 = 5.0;

/// Criterion's `<bench>  time:   [a UNIT b UNIT c UNIT]`.
pub fn estimate_in(stdout: &str, bench: &str, unit: &str) -> Option<[f64; 3]> {
    let line = stdout
        .lines()
        .find(|l| l.starts_with(bench) && l.contains("time:"))?;
    let inner = line.split_once('[')?.1.split_once(']')?.0;
    let words: Vec<&str> = inner.split_whitespace().collect();
    if words.len() != 6 || words.iter().skip(1).step_by(2).any(|w| *w != unit) {
        return None;
    }
    let numbers: Vec<f64> = words
        .iter()
        .step_by(2)
        .map(|w| w.parse().ok())
        .collect::<Option<_>>()?;
    numbers.try_into().ok()
}

/// Plain criterion's point estimates (virtual ns) against the sampled instructions per
/// iteration of the same loops: each within [`PLAIN_TOLERANCE_PERCENT`].
fn check_plain(ns: [f64; 2], instructions: [f64; 2]) -> Result<(), String> {
    for (n, i) in ns.iter().zip(instructions) {
        if (n - i).abs() > i * PLAIN_TOLERANCE_PERCENT / 100.0 {
            return Err(format!(
                "plain criterion under pmu-qemu estimated {ns:?} virtual ns per iteration against {instructions:?} instructions: more than {PLAIN_TOLERANCE_PERCENT} % apart"
            ));
        }
    }
    Ok(())
}

/// The exact counts of spin/100 and spin/200 in one one-shot run.
fn one_shot_counts(stdout: &str) -> Option<(u64, u64)> {
    Some((exact(stdout, "spin/100")?, exact(stdout, "spin/200")?))
}

/// Two one-shot runs: the same counts, 2 × 100 instructions apart (the loop's two
/// instructions per iteration, Arm ARM D12.11: INST_RETIRED counts each once).
fn check_one_shot(runs: &[(u64, u64)]) -> Result<(), String> {
    let first = runs[0];
    if runs.iter().any(|r| *r != first) {
        return Err(format!(
            "one-shot exact counts differ between runs: {runs:?}"
        ));
    }
    if first.1.checked_sub(first.0) != Some(200) {
        return Err(format!(
            "one-shot: spin/200 - spin/100 is not 200 instructions: {first:?}"
        ));
    }
    Ok(())
}

/// The slower variant against the baseline `saved` (spin/100, spin/200): exit 3, each
/// benchmark named with its old and new count (10 more), the summary listing both.
fn check_gate(saved: &(u64, u64), r: &Ran, summary: &str) -> Result<(), String> {
    let wanted = [
        format!(
            "REGRESSED spin/100: {} → {} instructions",
            saved.0,
            saved.0 + 10
        ),
        format!(
            "REGRESSED spin/200: {} → {} instructions",
            saved.1,
            saved.1 + 10
        ),
    ];
    let missing: Vec<&String> = wanted
        .iter()
        .filter(|w| !r.stderr.contains(w.as_str()))
        .collect();
    let json: serde_json::Value =
        serde_json::from_str(summary).map_err(|e| format!("the gate's summary: {e}"))?;
    if r.code != Some(3)
        || !missing.is_empty()
        || json["regressed"] != serde_json::json!(["spin/100", "spin/200"])
        || json["exit_code"] != 3
    {
        return Err(format!(
            "the gate on a slower variant: expected exit 3 and {wanted:?}, and a summary regressing both; got exit {:?}, missing {missing:?}\n{}{}\nsummary: {summary}",
            r.code, r.stdout, r.stderr
        ));
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

    /// Plain criterion's lines under pmu-qemu (criterion 0.5's wall-clock units), and
    /// the check against the instructions per iteration.
    #[test]
    fn plain_criterion_is_read_in_its_unit_and_checked() {
        let out = "spin/100                time:   [206.01 ns 208.73 ns 215.45 ns]\n";
        assert_eq!(
            estimate_in(out, "spin/100", "ns"),
            Some([206.01, 208.73, 215.45])
        );
        assert_eq!(estimate(out, "spin/100"), None);
        assert_eq!(
            estimate_in(
                "spin/100  time:   [1.2 µs 1.3 µs 1.4 µs]\n",
                "spin/100",
                "ns"
            ),
            None
        );
        assert!(check_plain([208.7, 408.2], [206.0, 406.0]).is_ok());
        assert!(check_plain([228.0, 408.2], [206.0, 406.0]).is_err());
        assert!(check_plain([208.7, 380.0], [206.0, 406.0]).is_err());
    }

    /// Lines as pmu-criterion's one-shot exact mode prints them (seen through pmu-qemu).
    #[test]
    fn one_shot_counts_are_read_and_checked() {
        let out = "pmu-criterion: one-shot exact mode (…)\n\
spin/100                          214 instructions (exact)\n\
spin/200                          414 instructions (exact)   unchanged from baseline `xtask`\n";
        assert_eq!(one_shot_counts(out), Some((214, 414)));
        assert_eq!(
            exact("spin/100   not measured: two runs disagree", "spin/100"),
            None
        );
        assert!(check_one_shot(&[(214, 414), (214, 414)]).is_ok());
        assert!(check_one_shot(&[(214, 414), (214, 415)]).is_err());
        assert!(check_one_shot(&[(214, 415), (214, 415)]).is_err());
    }

    /// Folded stacks as `pmu-qemu --profile` writes them for examples/two.
    #[test]
    fn the_profile_check_wants_each_function_within_a_period_through_main() {
        let good = "libc_start_main_stage2;main;two::main;two::first 6000000\n\
libc_start_main_stage2;main;two::main;two::second 9000000\n";
        assert_eq!(check_profile(good), Ok(vec![6_000_000, 9_000_000]));
        // 20 000 short: two periods.
        let short = good.replace("9000000", "8980000");
        assert!(check_profile(&short)
            .unwrap_err()
            .contains("more than one period"));
        // Leaf-only stacks.
        let leaf = "two::first 6000000\ntwo::second 9000000\n";
        assert!(check_profile(leaf).unwrap_err().contains("two::main"));
        assert!(check_profile("two::first x\n").is_err());
    }

    /// The gate's output as pmu-criterion's `finish` writes it.
    #[test]
    fn the_gate_check_wants_exit_3_and_both_names() {
        let stderr = "pmu-criterion: REGRESSED spin/100: 214 → 224 instructions (+10, +4.67%) beyond instructions=+1%\n\
pmu-criterion: REGRESSED spin/200: 414 → 424 instructions (+10, +2.42%) beyond instructions=+1%\n";
        let summary = r#"{"regressed": ["spin/100", "spin/200"], "exit_code": 3}"#;
        let ran = |code, stderr: &str| Ran {
            stdout: String::new(),
            stderr: stderr.to_owned(),
            code: Some(code),
            secs: 0.0,
        };
        assert!(check_gate(&(214, 414), &ran(3, stderr), summary).is_ok());
        assert!(check_gate(&(214, 414), &ran(0, stderr), summary).is_err());
        assert!(check_gate(&(214, 404), &ran(3, stderr), summary).is_err());
        let one = r#"{"regressed": ["spin/100"], "exit_code": 3}"#;
        assert!(check_gate(&(214, 414), &ran(3, stderr), one).is_err());
    }

    /// pmu-criterion's note when it counts in fresh processes (its bench.rs `measure`).
    #[test]
    fn the_in_process_difference_is_read() {
        let note = "pmu-criterion: history/100: its second and third calls in one process differ (421 then 621 instructions per call (regions of 0 and 1 calls: 64 and 485, then 64 and 685)); counted in two fresh processes instead, each its second call: 421 both times\n";
        assert_eq!(in_process_difference(note), Some(200));
        assert_eq!(in_process_difference("pmu-criterion: 1 benchmarks"), None);
    }

    /// The example's lines as pmu-qemu printed them on this project's machine (K =
    /// 100000; one vCPU, then `--smp 2`), and the check's verdict on them and on copies
    /// broken one way each.
    #[test]
    fn undisturbed_regions_are_read_and_checked() {
        let exact = "\
RESULT plain instructions k=100000 r0=216 rk=400220 r2k=800220 hazards=none value=800220 switches=0 kernel=0 exact=true
RESULT plain cpu-cycles k=100000 r0=216 rk=400220 r2k=800220 hazards=none value=800220 switches=0 kernel=0 exact=true
RESULT getpid instructions k=100000 r0=216 rk=400220 r2k=800220 hazards=none value=800220 switches=88 kernel=88743115 exact=true
RESULT getpid cpu-cycles k=100000 r0=216 rk=400220 r2k=800220 hazards=none value=800220 switches=88 kernel=88743115 exact=true
RESULT faults instructions k=100000 r0=216 rk=400221 r2k=800221 hazards=none value=800221 switches=2 kernel=1853432 exact=true
RESULT faults cpu-cycles k=100000 r0=216 rk=400221 r2k=800221 hazards=none value=800221 switches=2 kernel=1853432 exact=true
RESULT yield instructions k=100000 r0=216 rk=400221 r2k=800221 hazards=none value=800221 switches=57 kernel=229473023 exact=true
RESULT yield cpu-cycles k=100000 r0=216 rk=400221 r2k=800221 hazards=none value=800221 switches=57 kernel=229473023 exact=true
";
        let lines = undisturbed_lines(exact).unwrap();
        assert_eq!(lines.len(), 8);
        assert_eq!(
            lines[2],
            UndisturbedLine {
                loop_name: "getpid".into(),
                event: "instructions".into(),
                k: 100_000,
                r0: 216,
                rk: 400_220,
                r2k: 800_220,
                hazards: "none".into(),
                value: "800220".into(),
                switches: 88,
                kernel: 88_743_115,
                exact: true,
            }
        );
        check_undisturbed(&lines, 100_000, true).unwrap();
        // Each way the rule could be wrong fails the check.
        for (from, to) in [
            ("r2k=800221 hazards=none value=800221 switches=57", "r2k=800305 hazards=none value=800305 switches=57"),
            ("hazards=none value=800220 switches=88 kernel=88743115 exact=true\nRESULT getpid cpu", "hazards=context-switch value=800220 switches=88 kernel=88743115 exact=true\nRESULT getpid cpu"),
            ("switches=2 kernel=1853432", "switches=2 kernel=0"),
            ("exact=true\nRESULT faults instructions", "exact=false\nRESULT faults instructions"),
        ] {
            let broken = exact.replacen(from, to, 1);
            assert_ne!(broken, exact, "{from}");
            assert!(check_undisturbed(&undisturbed_lines(&broken).unwrap(), 100_000, true).is_err(), "{to}");
        }
        let no_switch = exact
            .replace("switches=88", "switches=0")
            .replace("switches=2", "switches=0")
            .replace("switches=57", "switches=0");
        assert!(check_undisturbed(&undisturbed_lines(&no_switch).unwrap(), 100_000, true).is_err());
        let smp2 = "\
RESULT plain instructions k=100000 r0=126 rk=400130 r2k=800130 hazards=none value=800130 switches=0 kernel=0 exact=false
RESULT plain cpu-cycles k=100000 r0=121 rk=400125 r2k=800125 hazards=none value=800125 switches=0 kernel=0 exact=false
RESULT getpid instructions k=100000 r0=126 rk=400130 r2k=808038 hazards=kernel-entry value=refused (`instructions` read 808038, which cannot be trusted: kernel-entry) switches=0 kernel=89162668 exact=false
RESULT getpid cpu-cycles k=100000 r0=121 rk=400125 r2k=808033 hazards=kernel-entry value=refused (`cycles` read 808033, which cannot be trusted: kernel-entry) switches=0 kernel=89162668 exact=false
RESULT faults instructions k=100000 r0=126 rk=405903 r2k=800215 hazards=context-switch,kernel-entry value=refused (`instructions` read 800215, which cannot be trusted: context-switch,kernel-entry) switches=0 kernel=1223161 exact=false
RESULT faults cpu-cycles k=100000 r0=121 rk=405898 r2k=800217 hazards=context-switch,kernel-entry value=refused (`cycles` read 800217, which cannot be trusted: context-switch,kernel-entry) switches=0 kernel=1223161 exact=false
RESULT yield instructions k=100000 r0=126 rk=400131 r2k=803375 hazards=context-switch,kernel-entry value=refused (`instructions` read 803375, which cannot be trusted: context-switch,kernel-entry) switches=0 kernel=282555184 exact=false
RESULT yield cpu-cycles k=100000 r0=121 rk=400126 r2k=803377 hazards=context-switch,kernel-entry value=refused (`cycles` read 803377, which cannot be trusted: context-switch,kernel-entry) switches=0 kernel=282555184 exact=false
";
        let lines = undisturbed_lines(smp2).unwrap();
        assert_eq!(
            lines[2].value,
            "refused (`instructions` read 808038, which cannot be trusted: kernel-entry)"
        );
        check_undisturbed(&lines, 100_000, false).unwrap();
        assert!(check_undisturbed(&lines, 100_000, true).is_err());
        // The rule claimed on two vCPUs fails.
        let claimed = smp2.replacen("exact=false", "exact=true", 1);
        assert!(check_undisturbed(&undisturbed_lines(&claimed).unwrap(), 100_000, false).is_err());
    }
}
