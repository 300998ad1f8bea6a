//! Steps: one command each, run in order with progress and timing.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::Instant;

/// One command of a plan, or a function run in-process.
pub struct Step {
    what: String,
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    func: Option<fn() -> Result<(), String>>,
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

    /// Runs every step, printing progress on stderr (stdout is for results); returns
    /// failure at the first failing step.
    pub fn run(self) -> ExitCode {
        let total = self.steps.len();
        let started = Instant::now();
        let root = workspace_root();
        for (i, step) in self.steps.iter().enumerate() {
            eprintln!("==> [{}/{total}] {}", i + 1, step.what);
            let t = Instant::now();
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
