//! Steps: one command each, run in order with progress and timing.
//!
//! Every step knows what it needs from the machine ([`Need`]): a cargo step's rustup
//! target and components follow from its arguments, another step names its programs.
//! Set-up ([`crate::host::setup`]) must provide each need (a unit test checks every plan), and a
//! step whose need is missing when it is reached fails with the command that installs it
//! instead of a compiler error.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::OnceLock;
use std::time::Instant;

use crate::engine::paths::workspace_root;

/// Something a step needs from the machine; set-up provides each one.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Need {
    /// A rustup target of the pinned toolchain (its prebuilt `core`/`std`).
    Target(String),
    /// A rustup component of the pinned toolchain (`rust-src` for `-Zbuild-std`).
    Component(String),
    /// A program on `PATH`.
    Program(String),
}

impl std::fmt::Display for Need {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Need::Target(t) => write!(f, "the rustup target {t}"),
            Need::Component(c) => write!(f, "the rustup component {c}"),
            Need::Program(p) => write!(f, "the program {p}"),
        }
    }
}

/// The pinned toolchain's sysroot (`rustc --print sysroot` in the workspace, where
/// rust-toolchain.toml applies), asked once.
fn sysroot() -> Option<&'static Path> {
    static SYSROOT: OnceLock<Option<PathBuf>> = OnceLock::new();
    SYSROOT
        .get_or_init(|| {
            let out = Command::new("rustc")
                .args(["--print", "sysroot"])
                .current_dir(workspace_root())
                .env("RUSTUP_TOOLCHAIN", crate::host::setup::TOOLCHAIN)
                .output()
                .ok()?;
            out.status
                .success()
                .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
        })
        .as_deref()
}

/// Whether `program` is an executable file on `PATH` (or a path to one).
pub fn on_path(program: &str) -> bool {
    if program.contains('/') {
        return Path::new(program).is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

impl Need {
    /// Whether this machine has it now.
    pub fn is_met(&self) -> bool {
        match self {
            Need::Program(p) => on_path(p),
            Need::Target(t) => {
                sysroot().is_some_and(|s| s.join("lib/rustlib").join(t).join("lib").is_dir())
            }
            Need::Component(c) => sysroot().is_some_and(|s| match c.as_str() {
                "rust-src" => s.join("lib/rustlib/src/rust/library").is_dir(),
                "clippy" => s.join("bin/cargo-clippy").is_file(),
                "rustfmt" => s.join("bin/rustfmt").is_file(),
                other => s.join("bin").join(other).is_file(),
            }),
        }
    }

    /// The command that installs it (what `cargo xtask setup` runs for it).
    pub fn install_hint(&self) -> String {
        let toolchain = crate::host::setup::TOOLCHAIN;
        if !crate::host::setup::provides(self) {
            return "set-up does not install it: add it to xtask/src/host/setup.rs (TARGETS, COMPONENTS or PROGRAMS and their packages)".to_string();
        }
        match self {
            Need::Target(t) => format!("rustup target add --toolchain {toolchain} {t}"),
            Need::Component(c) => format!("rustup component add --toolchain {toolchain} {c}"),
            Need::Program(p) => match crate::host::setup::package_of(p) {
                Some(package) => format!("apt-get install {package} (or `cargo xtask setup`)"),
                None => {
                    format!("{p} comes with the base system or the Rust toolchain: is PATH right?")
                }
            },
        }
    }
}

/// One command of a plan, or a function run in-process.
pub struct Step {
    what: String,
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    func: Option<fn() -> Result<(), String>>,
    needs: Vec<Need>,
    lane: Option<u8>,
}

impl Step {
    /// `program args…`, described as `what` in the progress line.
    pub fn new<I, S>(what: impl Into<String>, program: impl Into<OsString>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        Self {
            what: what.into(),
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
            func: None,
            needs: Vec::new(),
            lane: None,
        }
    }

    /// A step done by `func` inside xtask; its error is the failure message.
    pub fn func(what: impl Into<String>, func: fn() -> Result<(), String>) -> Self {
        Self {
            what: what.into(),
            program: OsString::new(),
            args: Vec::new(),
            env: Vec::new(),
            func: Some(func),
            needs: Vec::new(),
            lane: None,
        }
    }

    /// `cargo args…` with the cargo that runs xtask.
    pub fn cargo<I, S>(what: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        Self::new(what, cargo, args)
    }

    /// Adds an environment variable.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Declares programs the step runs that its command line does not show (a function
    /// step's tools, the QEMU a test boots).
    pub fn needs_programs(mut self, programs: &[&str]) -> Self {
        self.needs
            .extend(programs.iter().map(|p| Need::Program(p.to_string())));
        self
    }

    /// Runs the step in lane `lane` of its group: consecutive steps that have a lane form
    /// a group whose lanes run at the same time, each lane's steps in plan order (see
    /// [`Plan::run`]). Steps that write the same files go in the same lane.
    pub fn in_lane(mut self, lane: u8) -> Self {
        self.lane = Some(lane);
        self
    }

    /// Declares rustup targets the step builds for that its command line does not show
    /// (a function step's cargo builds).
    pub fn needs_targets(mut self, targets: &[&str]) -> Self {
        self.needs
            .extend(targets.iter().map(|t| Need::Target(t.to_string())));
        self
    }

    /// Everything the step needs: the declared needs, plus what its command line shows
    /// (a cargo step: `--target T` needs T's prebuilt library unless `-Zbuild-std` builds it
    /// from `rust-src`; `clippy` and `fmt` their components; a `*_RUNNER` its program;
    /// another program itself).
    pub fn needs(&self) -> Vec<Need> {
        let mut needs = self.needs.clone();
        let args: Vec<String> = self
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let program = self.program.to_string_lossy();
        let is_cargo = Path::new(program.as_ref())
            .file_name()
            .is_some_and(|n| n == "cargo");
        if is_cargo {
            match args.first().map(String::as_str) {
                Some("clippy") => needs.push(Need::Component("clippy".into())),
                Some("fmt") => needs.push(Need::Component("rustfmt".into())),
                _ => {}
            }
            let build_std = args.iter().any(|a| a.starts_with("-Zbuild-std"));
            if build_std {
                needs.push(Need::Component("rust-src".into()));
            } else if let Some(i) = args.iter().position(|a| a == "--target") {
                if let Some(target) = args.get(i + 1) {
                    needs.push(Need::Target(target.clone()));
                }
            }
        } else if self.func.is_none() {
            needs.push(Need::Program(program.into_owned()));
        }
        for (key, value) in &self.env {
            if key.to_string_lossy().ends_with("_RUNNER") {
                if let Some(runner) = value.to_string_lossy().split_whitespace().next() {
                    needs.push(Need::Program(runner.to_string()));
                }
            }
        }
        needs.sort();
        needs.dedup();
        needs
    }

    /// The step's description.
    #[cfg(test)]
    pub fn what(&self) -> &str {
        &self.what
    }

    /// The step's lane, if it runs in a group.
    #[cfg(test)]
    pub fn lane(&self) -> Option<u8> {
        self.lane
    }

    fn command_line(&self) -> String {
        let mut line = String::new();
        for (k, v) in &self.env {
            line += &format!("{}={} ", k.to_string_lossy(), v.to_string_lossy());
        }
        line += &self.program.to_string_lossy();
        for a in &self.args {
            line += " ";
            line += &a.to_string_lossy();
        }
        line
    }
}

/// Runs `command` with its output in the log file `target/logs/<log>.log`, printing one
/// line on stderr: `<what> … ok (1.2 s)`. On failure the error names the log and holds
/// its last lines: an install's many lines never reach stdout, which carries results.
pub fn run_logged(what: &str, log: &str, command: &mut Command) -> Result<(), String> {
    let dir = crate::engine::paths::work_dir().join("logs");
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join(format!("{log}.log"));
    let file = fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let err = file
        .try_clone()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    eprint!("    {what} … ");
    let t = Instant::now();
    let status = command
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .status();
    let secs = t.elapsed().as_secs_f64();
    let program = command.get_program().to_string_lossy().into_owned();
    match status {
        Ok(s) if s.success() => {
            eprintln!("ok ({secs:.1} s)");
            Ok(())
        }
        Ok(s) => {
            eprintln!("FAILED ({secs:.1} s)");
            let text = fs::read_to_string(&path).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(20)..].join("\n      ");
            let args: Vec<_> = command.get_args().map(|a| a.to_string_lossy()).collect();
            Err(format!(
                "`{program} {}` failed ({s}); its output: {}\n    last lines:\n      {tail}",
                args.join(" "),
                path.display()
            ))
        }
        Err(e) => {
            eprintln!("FAILED");
            Err(format!("cannot run {program}: {e}"))
        }
    }
}

/// Steps run in order; the first failure stops the plan. Consecutive steps with a lane
/// ([`Step::in_lane`]) form a group whose lanes run at the same time (see [`Plan::run`]).
pub struct Plan {
    name: &'static str,
    steps: Vec<Step>,
    /// The command-line words that build this plan (`test`): a lane runs one step as
    /// `xtask <words> --step K`.
    words: Vec<String>,
}

/// Runs `command` and returns its stdout, or why not: it could not start, or it exited
/// unsuccessfully (the command line, its status and its stderr).
pub fn stdout_of(command: &mut Command) -> Result<String, String> {
    let program = command.get_program().to_string_lossy().into_owned();
    let out = command
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if !out.status.success() {
        let args: Vec<_> = command.get_args().map(|a| a.to_string_lossy()).collect();
        return Err(format!(
            "`{program} {}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
impl Plan {
    /// An empty plan called `name`.
    pub fn new(name: &'static str) -> Self {
        Self {
            name,
            steps: Vec::new(),
            words: vec![name.to_string()],
        }
    }

    /// Appends `steps`.
    pub fn then(mut self, steps: Vec<Step>) -> Self {
        self.steps.extend(steps);
        self
    }

    /// Records the command-line words that build this plan, for the lanes' child runs.
    pub fn invoked_as(mut self, words: &[&str]) -> Self {
        self.words = words.iter().map(|w| w.to_string()).collect();
        self
    }

    /// The steps, in order.
    #[cfg(test)]
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The groups of the plan in order: a step alone, or consecutive laned steps with
    /// their lanes (each a list of step indices in plan order, lanes by number).
    fn stages(&self) -> Vec<Stage> {
        let mut stages = Vec::new();
        let mut i = 0;
        while i < self.steps.len() {
            if self.steps[i].lane.is_none() {
                stages.push(Stage::One(i));
                i += 1;
                continue;
            }
            let mut lanes: std::collections::BTreeMap<u8, Vec<usize>> = Default::default();
            while let Some(lane) = self.steps.get(i).and_then(|s| s.lane) {
                lanes.entry(lane).or_default().push(i);
                i += 1;
            }
            stages.push(Stage::Lanes(lanes.into_values().collect()));
        }
        stages
    }

    /// Runs every step, printing progress on stderr (stdout is for results); returns
    /// failure at the first failing step.
    ///
    /// A group of laned steps runs one thread per lane; each runs its steps one after
    /// the other, each as a child `xtask <words> --step K` whose stdout and stderr go
    /// to `target/logs/steps/`. When a step ends, its output is printed whole (stderr,
    /// with the usual `==> [K/N]` line and time, then stdout), so no two steps' lines
    /// mix. After a failure no lane starts another step; the group ends when the
    /// running ones have.
    pub fn run(self) -> ExitCode {
        let total = self.steps.len();
        let started = Instant::now();
        for stage in self.stages() {
            let ok = match stage {
                Stage::One(i) => self.run_step(i),
                Stage::Lanes(lanes) => self.run_lanes(&lanes),
            };
            if !ok {
                return ExitCode::FAILURE;
            }
        }
        eprintln!(
            "xtask {}: all {total} steps passed in {:.1} s",
            self.name,
            started.elapsed().as_secs_f64()
        );
        ExitCode::SUCCESS
    }

    /// Runs step `number` (1-based, as the progress lines count) alone: what a lane's
    /// child does, and a way to rerun one step of a plan whose earlier steps have run.
    pub fn run_only(self, number: usize) -> ExitCode {
        if number == 0 || number > self.steps.len() {
            eprintln!(
                "xtask {}: --step {number}: the plan has steps 1 to {}",
                self.name,
                self.steps.len()
            );
            return ExitCode::from(2);
        }
        if self.run_step(number - 1) {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    }

    /// Runs step `i` (0-based) in this process with its progress lines; whether it passed.
    fn run_step(&self, i: usize) -> bool {
        let total = self.steps.len();
        let step = &self.steps[i];
        eprintln!("==> [{}/{total}] {}", i + 1, step.what);
        let t = Instant::now();
        let missing: Vec<Need> = step.needs().into_iter().filter(|n| !n.is_met()).collect();
        if !missing.is_empty() {
            eprintln!(
                "xtask {}: step {}/{total} cannot run: {}: it needs what this machine lacks and set-up did not provide:",
                self.name,
                i + 1,
                step.what
            );
            for need in missing {
                eprintln!("    {need}: {}", need.install_hint());
            }
            return false;
        }
        if let Some(func) = step.func {
            return match func() {
                Ok(()) => {
                    eprintln!("    ok ({:.1} s)", t.elapsed().as_secs_f64());
                    true
                }
                Err(why) => {
                    eprintln!(
                        "xtask {}: step {}/{total} failed: {}\n    {why}",
                        self.name,
                        i + 1,
                        step.what
                    );
                    false
                }
            };
        }
        let status = Command::new(&step.program)
            .args(&step.args)
            .envs(step.env.iter().map(|(k, v)| (k, v)))
            .current_dir(workspace_root())
            .status();
        let secs = t.elapsed().as_secs_f64();
        match status {
            Ok(s) if s.success() => {
                eprintln!("    ok ({secs:.1} s)");
                true
            }
            Ok(s) => {
                eprintln!(
                    "xtask {}: step {}/{total} failed ({s}) after {secs:.1} s: {}\n    command: {}",
                    self.name,
                    i + 1,
                    step.what,
                    step.command_line()
                );
                false
            }
            Err(e) => {
                eprintln!(
                    "xtask {}: could not start step {}/{total} ({}): {e}\n    command: {}",
                    self.name,
                    i + 1,
                    step.what,
                    step.command_line()
                );
                false
            }
        }
    }

    /// Runs a group's lanes at the same time (see [`Plan::run`]); whether every step
    /// passed.
    fn run_lanes(&self, lanes: &[Vec<usize>]) -> bool {
        let exe = match std::env::current_exe() {
            Ok(exe) => exe,
            Err(e) => {
                eprintln!("xtask {}: cannot find xtask's own program: {e}", self.name);
                return false;
            }
        };
        let logs = crate::engine::paths::work_dir().join("logs/steps");
        if let Err(e) = fs::create_dir_all(&logs) {
            eprintln!("xtask {}: {}: {e}", self.name, logs.display());
            return false;
        }
        let list = |lane: &Vec<usize>| {
            lane.iter()
                .map(|i| (i + 1).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        eprintln!(
            "==> steps {} at once, in {} lanes ({}); each step's output follows when it ends (also in {})",
            lane_span(lanes),
            lanes.len(),
            lanes
                .iter()
                .enumerate()
                .map(|(n, lane)| format!("lane {}: {}", n + 1, list(lane)))
                .collect::<Vec<_>>()
                .join("; "),
            logs.display()
        );
        let outcome = self.lanes_with(lanes, &exe, &logs);
        if !outcome.not_run.is_empty() {
            let steps: Vec<String> = outcome.not_run.iter().map(|n| n.to_string()).collect();
            eprintln!(
                "xtask {}: after the failure, steps {} did not run",
                self.name,
                steps.join(", ")
            );
        }
        outcome.passed
    }

    /// [`Plan::run_lanes`] with the program a step's child runs (`exe <words> --step
    /// K`) and the directory of the children's output.
    fn lanes_with(&self, lanes: &[Vec<usize>], exe: &Path, logs: &Path) -> LanesOutcome {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Mutex;
        let total = self.steps.len();
        let failed = AtomicBool::new(false);
        let print = Mutex::new(());
        let not_run = Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for (n, lane) in lanes.iter().enumerate() {
                let (failed, print, not_run) = (&failed, &print, &not_run);
                scope.spawn(move || {
                    for &i in lane {
                        if failed.load(Ordering::SeqCst) {
                            not_run.lock().unwrap_or_else(|e| e.into_inner()).push(i + 1);
                            continue;
                        }
                        {
                            let _p = print.lock().unwrap_or_else(|e| e.into_inner());
                            eprintln!(
                                "--> [{}/{total}] started in lane {}: {}",
                                i + 1,
                                n + 1,
                                self.steps[i].what
                            );
                        }
                        let outcome = self.run_child(exe, logs, i);
                        let _p = print.lock().unwrap_or_else(|e| e.into_inner());
                        match outcome {
                            Ok(child) => {
                                child.print();
                                if !child.passed {
                                    eprintln!(
                                        "xtask {}: step {}/{total} failed in lane {} (its output is above; {})",
                                        self.name,
                                        i + 1,
                                        n + 1,
                                        child.stderr.display()
                                    );
                                    failed.store(true, Ordering::SeqCst);
                                }
                            }
                            Err(why) => {
                                eprintln!(
                                    "xtask {}: could not run step {}/{total} ({}): {why}",
                                    self.name,
                                    i + 1,
                                    self.steps[i].what
                                );
                                failed.store(true, Ordering::SeqCst);
                            }
                        }
                    }
                });
            }
        });
        let mut not_run = not_run.into_inner().unwrap_or_else(|e| e.into_inner());
        not_run.sort_unstable();
        LanesOutcome {
            passed: !failed.into_inner(),
            not_run,
        }
    }

    /// Step `i` as a child `xtask <words> --step i+1`, its output in `logs`.
    fn run_child(&self, exe: &Path, logs: &Path, i: usize) -> Result<ChildRun, String> {
        let stdout = logs.join(format!("{:02}.stdout", i + 1));
        let stderr = logs.join(format!("{:02}.stderr", i + 1));
        let open = |p: &Path| fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()));
        let status = Command::new(exe)
            .args(&self.words)
            .args(["--step", &(i + 1).to_string()])
            .current_dir(workspace_root())
            .stdin(Stdio::null())
            .stdout(open(&stdout)?)
            .stderr(open(&stderr)?)
            .status()
            .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
        Ok(ChildRun {
            passed: status.success(),
            stdout,
            stderr,
        })
    }
}

/// A part of a plan: one step, or a group of lanes of step indices.
enum Stage {
    One(usize),
    Lanes(Vec<Vec<usize>>),
}

/// "57–66": the first and last step number of a group.
fn lane_span(lanes: &[Vec<usize>]) -> String {
    let all = lanes.iter().flatten();
    let first = all.clone().min().map_or(0, |i| i + 1);
    let last = all.max().map_or(0, |i| i + 1);
    format!("{first}–{last}")
}

/// How a group of lanes ended: whether every step passed, and the steps (numbered from
/// 1) that did not start because another had failed.
struct LanesOutcome {
    passed: bool,
    not_run: Vec<usize>,
}

/// A lane's finished step: whether it passed and where its output is.
struct ChildRun {
    passed: bool,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl ChildRun {
    /// Its stderr (progress and time) on stderr, then its stdout on stdout.
    fn print(&self) {
        let err = fs::read(&self.stderr).unwrap_or_default();
        let out = fs::read(&self.stdout).unwrap_or_default();
        eprint!("{}", String::from_utf8_lossy(&err));
        print!("{}", String::from_utf8_lossy(&out));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// stdout on success; on failure the command line, the exit status and stderr;
    /// a program that does not exist says it could not run.
    #[test]
    fn stdout_of_a_command() {
        assert_eq!(
            stdout_of(Command::new("sh").args(["-c", "echo out; echo err >&2"])).unwrap(),
            "out\n"
        );
        assert_eq!(
            stdout_of(Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]))
                .unwrap_err(),
            "`sh -c echo out; echo err >&2; exit 3` failed (exit status: 3): err"
        );
        assert!(stdout_of(&mut Command::new("/nonexistent/program"))
            .unwrap_err()
            .starts_with("cannot run /nonexistent/program: "));
    }

    fn plain(what: &str) -> Step {
        Step::new(what, "true", [] as [&str; 0])
    }

    /// Consecutive laned steps form one group, lanes by number, steps in plan order;
    /// a step without a lane ends the group.
    #[test]
    fn laned_steps_form_groups() {
        let plan = Plan::new("t").then(vec![
            plain("a"),
            plain("b").in_lane(1),
            plain("c").in_lane(2),
            plain("d").in_lane(1),
            plain("e"),
            plain("f").in_lane(2),
        ]);
        let shape: Vec<String> = plan
            .stages()
            .iter()
            .map(|s| match s {
                Stage::One(i) => format!("{i}"),
                Stage::Lanes(l) => format!("{l:?}"),
            })
            .collect();
        assert_eq!(shape, ["0", "[[1, 3], [2]]", "4", "[[5]]"]);
    }

    /// A plan whose lanes' child is `sh -c SCRIPT sh --step K`: step K prints `out K`
    /// and `err K` and fails when K is `fail`.
    fn sh_plan(steps: usize, lanes: &[u8], fail: usize) -> (Plan, Vec<Vec<usize>>) {
        let script = format!("echo out $2; echo err $2 >&2; [ \"$2\" != {fail} ]");
        let mut plan = Plan::new("t").invoked_as(&["-c", &script, "sh"]);
        for (i, lane) in lanes.iter().enumerate().take(steps) {
            plan = plan.then(vec![plain(&format!("s{}", i + 1)).in_lane(*lane)]);
        }
        let Some(Stage::Lanes(l)) = plan.stages().into_iter().next() else {
            panic!("one group expected");
        };
        (plan, l)
    }

    fn logs_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-lanes-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Every step of both lanes runs as its own child, with its output in its own files.
    #[test]
    fn lanes_run_every_step_with_its_own_output() {
        let (plan, lanes) = sh_plan(3, &[1, 2, 1], 0);
        let logs = logs_dir("pass");
        let outcome = plan.lanes_with(&lanes, Path::new("sh"), &logs);
        assert!(outcome.passed);
        assert!(outcome.not_run.is_empty());
        for k in 1..=3 {
            let out = fs::read_to_string(logs.join(format!("{k:02}.stdout"))).unwrap();
            let err = fs::read_to_string(logs.join(format!("{k:02}.stderr"))).unwrap();
            assert_eq!(
                (out.as_str(), err.as_str()),
                (&*format!("out {k}\n"), &*format!("err {k}\n"))
            );
        }
        let _ = fs::remove_dir_all(&logs);
    }

    /// After a failure a lane starts no further step: lane 1 is steps 1 and 2, step 1
    /// fails, step 2 never runs (no output file) and is reported as not run.
    #[test]
    fn a_failure_stops_the_lane() {
        let (plan, lanes) = sh_plan(2, &[1, 1], 1);
        let logs = logs_dir("fail");
        let outcome = plan.lanes_with(&lanes, Path::new("sh"), &logs);
        assert!(!outcome.passed);
        assert_eq!(outcome.not_run, [2]);
        assert!(logs.join("01.stdout").is_file());
        assert!(!logs.join("02.stdout").exists());
        let _ = fs::remove_dir_all(&logs);
    }

    /// A failing step in one lane fails the group though the other lane's step passed.
    #[test]
    fn a_failure_in_either_lane_fails_the_group() {
        let (plan, lanes) = sh_plan(2, &[1, 2], 2);
        let logs = logs_dir("other");
        let outcome = plan.lanes_with(&lanes, Path::new("sh"), &logs);
        assert!(!outcome.passed);
        assert!(outcome.not_run.is_empty());
        assert_eq!(
            fs::read_to_string(logs.join("01.stdout")).unwrap(),
            "out 1\n"
        );
        let _ = fs::remove_dir_all(&logs);
    }
}
