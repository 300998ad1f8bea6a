//! Steps: one command each, run in order with progress and timing.
//!
//! Every step knows what it needs from the machine ([`Need`]): a cargo step's rustup
//! target and components follow from its arguments, another step names its programs.
//! Set-up ([`crate::setup`]) must provide each need (a unit test checks every plan), and a
//! step whose need is missing when it is reached fails with the command that installs it
//! instead of a compiler error.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::OnceLock;
use std::time::Instant;

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
                .env("RUSTUP_TOOLCHAIN", crate::setup::TOOLCHAIN)
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
        let toolchain = crate::setup::TOOLCHAIN;
        if !crate::setup::provides(self) {
            return "set-up does not install it: add it to xtask/src/setup.rs (TARGETS, COMPONENTS or PROGRAMS and their packages)".to_string();
        }
        match self {
            Need::Target(t) => format!("rustup target add --toolchain {toolchain} {t}"),
            Need::Component(c) => format!("rustup component add --toolchain {toolchain} {c}"),
            Need::Program(p) => match crate::setup::package_of(p) {
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
    let dir = crate::images::work_dir().join("logs");
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

/// Steps run in order; the first failure stops the plan.
pub struct Plan {
    name: &'static str,
    steps: Vec<Step>,
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

/// The workspace root (xtask lives one level below it).
pub fn workspace_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}

impl Plan {
    /// An empty plan called `name`.
    pub fn new(name: &'static str) -> Self {
        Self {
            name,
            steps: Vec::new(),
        }
    }

    /// Appends `steps`.
    pub fn then(mut self, steps: Vec<Step>) -> Self {
        self.steps.extend(steps);
        self
    }

    /// The steps, in order.
    #[cfg(test)]
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// Runs every step, printing progress on stderr (stdout is for results); returns
    /// failure at the first failing step.
    pub fn run(self) -> ExitCode {
        let total = self.steps.len();
        let started = Instant::now();
        let root = workspace_root();
        for (i, step) in self.steps.iter().enumerate() {
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
                return ExitCode::FAILURE;
            }
            if let Some(func) = step.func {
                match func() {
                    Ok(()) => {
                        eprintln!("    ok ({:.1} s)", t.elapsed().as_secs_f64());
                        continue;
                    }
                    Err(why) => {
                        eprintln!(
                            "xtask {}: step {}/{total} failed: {}\n    {why}",
                            self.name,
                            i + 1,
                            step.what
                        );
                        return ExitCode::FAILURE;
                    }
                }
            }
            let status = Command::new(&step.program)
                .args(&step.args)
                .envs(step.env.iter().map(|(k, v)| (k, v)))
                .current_dir(&root)
                .status();
            let secs = t.elapsed().as_secs_f64();
            match status {
                Ok(s) if s.success() => eprintln!("    ok ({secs:.1} s)"),
                Ok(s) => {
                    eprintln!(
                        "xtask {}: step {}/{total} failed ({s}) after {secs:.1} s: {}\n    command: {}",
                        self.name,
                        i + 1,
                        step.what,
                        step.command_line()
                    );
                    return ExitCode::FAILURE;
                }
                Err(e) => {
                    eprintln!(
                        "xtask {}: could not start step {}/{total} ({}): {e}\n    command: {}",
                        self.name,
                        i + 1,
                        step.what,
                        step.command_line()
                    );
                    return ExitCode::FAILURE;
                }
            }
        }
        eprintln!(
            "xtask {}: all {total} steps passed in {:.1} s",
            self.name,
            started.elapsed().as_secs_f64()
        );
        ExitCode::SUCCESS
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
}
