//! Steps: one command each, run in order with progress and timing.
//!
//! Every step knows what it needs from the machine ([`Need`]); a step whose need is
//! missing when it is reached fails with the command that installs it instead of a
//! compiler error. Consecutive steps with a lane run at the same time
//! ([`crate::engine::lanes`]).

use std::ffi::OsString;
use std::fs;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

pub use crate::engine::need::Need;
use crate::engine::paths::workspace_root;

/// One command of a plan, or a function run in-process.
pub struct Step {
    pub(super) what: String,
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

    /// A cargo step that needs `RUSTC_BOOTSTRAP=1` (`-Zbuild-std`): set, and its own
    /// target directory ([`crate::engine::paths::bootstrap_target_dir`]).
    pub fn bootstrap(self) -> Self {
        self.env("RUSTC_BOOTSTRAP", "1").env(
            "CARGO_TARGET_DIR",
            crate::engine::paths::bootstrap_target_dir(),
        )
    }

    /// Runs a cargo step in target directory `dir` unless it names one of its own (a
    /// bootstrap step's, the clone's `target/`); a function step is left as it is (its
    /// cargo runs read [`crate::engine::paths::target_dir`]).
    pub fn builds_in(self, dir: &Path) -> Self {
        if self.func.is_some() || self.named_target_dir().is_some() {
            self
        } else {
            self.env("CARGO_TARGET_DIR", dir)
        }
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

    /// Its command line's arguments (after the program).
    #[cfg(test)]
    pub fn args(&self) -> &[OsString] {
        &self.args
    }

    /// The step's lane, if it runs in a group.
    #[cfg(test)]
    pub fn lane(&self) -> Option<u8> {
        self.lane
    }

    /// The value the step gives environment variable `key`, if it sets it.
    #[cfg(test)]
    pub fn env_value(&self, key: &str) -> Option<OsString> {
        self.env
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }

    /// The cargo target directory the step names: its `--target-dir` argument (which
    /// wins over the environment), else its `CARGO_TARGET_DIR`.
    pub fn named_target_dir(&self) -> Option<OsString> {
        let arg = self
            .args
            .windows(2)
            .find(|w| w[0] == "--target-dir")
            .map(|w| w[1].clone());
        arg.or_else(|| {
            self.env
                .iter()
                .rev()
                .find(|(k, _)| k == "CARGO_TARGET_DIR")
                .map(|(_, v)| v.clone())
        })
    }

    /// Whether the step is a function run inside xtask.
    #[cfg(test)]
    pub fn is_func(&self) -> bool {
        self.func.is_some()
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
    pub(super) name: &'static str,
    pub(super) steps: Vec<Step>,
    /// The command-line words that build this plan (`test`): a lane runs one step as
    /// `xtask <words> --step K`.
    pub(super) words: Vec<String>,
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
/// First line of `program args` (stdout, with the pinned toolchain), or why it failed.
pub fn first_line(program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Result<String, String> {
    Ok(stdout_of(
        Command::new(program)
            .args(args)
            .env("RUSTUP_TOOLCHAIN", crate::engine::need::TOOLCHAIN),
    )?
    .lines()
    .next()
    .unwrap_or_default()
    .to_string())
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
    pub(super) fn stages(&self) -> Vec<Stage> {
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
    pub(super) fn run_step(&self, i: usize) -> bool {
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
}

/// A part of a plan: one step, or a group of lanes of step indices.
pub(super) enum Stage {
    One(usize),
    Lanes(Vec<Vec<usize>>),
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

    /// `builds_in` gives a cargo step the directory, and leaves one that names its own
    /// (by `--target-dir` or `CARGO_TARGET_DIR`) and a function step as they are.
    #[test]
    fn builds_in_respects_a_named_directory() {
        let dir = Path::new("/checks");
        let plain = Step::cargo("a", ["build"]).builds_in(dir);
        assert_eq!(plain.named_target_dir(), Some("/checks".into()));
        let env = Step::cargo("b", ["build"])
            .env("CARGO_TARGET_DIR", "/own")
            .builds_in(dir);
        assert_eq!(env.named_target_dir(), Some("/own".into()));
        let arg = Step::cargo("c", ["doc", "--target-dir", "/arg"]).builds_in(dir);
        assert_eq!(arg.named_target_dir(), Some("/arg".into()));
        assert_eq!(arg.env_value("CARGO_TARGET_DIR"), None);
        let func = Step::func("d", || Ok(())).builds_in(dir);
        assert_eq!(func.named_target_dir(), None);
    }
}
