//! Lanes: consecutive steps of a plan that have a lane ([`crate::engine::step::Step::in_lane`]) form a group
//! whose lanes run at the same time, one thread per lane, each step as a child
//! `xtask <words> --step K` with its output in its own files, printed whole when it
//! ends (see [`Plan::run`]).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::engine::paths::workspace_root;
use crate::engine::step::Plan;

/// The lane of `cargo xtask test`'s guest group ([`crate::engine::step::Step::in_lane`]) for
/// what builds on the arm64 test kernel: its modules, the arm64 runs, the emulated
/// Raspberry Pis (which pack the arm64 initramfs again and build the armv6 stock
/// module), the bench and the hazard statistics, the pmu-qemu runner and its workflow
/// (aarch64 too, with a cache of their own), and, to even the lanes, Debian 13's arm64
/// run. In a CI-like run of 592ea80 (2026-12-07) this lane held 512 s of steps and the
/// other 465 s, with the x86_64 kernel's module and run (25 s) here; they went to the
/// other lane.
pub const ARM64_LANE: u8 = 1;

/// The other lane: the x86_64 kernel's module and run, the armv7 kernel's runs and
/// Debian's other kernels (one private apt state). What both lanes write is guarded
/// anyway ([`crate::engine::lock`]); the split keeps those waits rare and the lanes
/// about even.
pub const OTHER_LANE: u8 = 2;

/// The checks lane: the lints, the host tests, the packaging check and the unit tests
/// under qemu-user, which need no kernel and no guest. They ran one after the other
/// before the guests, at 1.62 cores busy on average (compiles whose front end is serial);
/// beside the guest lanes their work fills what the guests leave idle. Their cargo steps
/// build in their own target directory ([`crate::engine::paths::checks_target_dir`]).
pub const CHECKS_LANE: u8 = 3;

impl Plan {
    /// Runs a group's lanes at the same time (see [`Plan::run`]); whether every step
    /// passed.
    pub(super) fn run_lanes(&self, lanes: &[Vec<usize>]) -> bool {
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
    use crate::engine::step::{Stage, Step};

    fn plain(what: &str) -> Step {
        Step::new(what, "true", [] as [&str; 0])
    }

    /// A plan whose lanes' child is `sh -c SCRIPT sh --step K`: step K prints `out K`
    /// and `err K` and fails when K is `fail`, half a second after it started (so that
    /// the other lane's first step has started by then, even on a loaded machine).
    fn sh_plan(steps: usize, lanes: &[u8], fail: usize) -> (Plan, Vec<Vec<usize>>) {
        let script = format!(
            "echo out $2; echo err $2 >&2; [ \"$2\" != {fail} ] || {{ sleep 0.5; false; }}"
        );
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
