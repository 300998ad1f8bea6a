//! A Ctrl-C while a counted command runs: the terminal sends SIGINT to the whole
//! foreground process group, so the command and the counting process both get it. The
//! counting process ignores it while the command runs (as POSIX XSH `system` does), so
//! it lives to read the counts. In a test binary of its own: the signal disposition is
//! the process's, shared by every test thread.

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[test]
fn sigint_while_the_command_runs_leaves_the_counter_alive() {
    use pmu_linux::perf::{CommandCount, CommandEnd};
    let count = CommandCount::new(&["task-clock"]).expect("task-clock resolves");
    // The shell sends SIGINT to its parent (this test process), as a terminal's Ctrl-C
    // would, and exits 5. Without the ignore, SIGINT's default action would end this
    // process here.
    let run = count
        .run(
            "sh".as_ref(),
            &["-c".into(), "kill -INT $PPID; exit 5".into()],
        )
        .expect("the command runs");
    assert_eq!(run.end, CommandEnd::Exited(5));
    assert_eq!(run.totals.len(), 1);
    // After the run the default action is back: a SIGINT now would end the process;
    // checked without sending one (sigaction(2) reads the current action).
    // SAFETY: a zeroed sigaction is valid for sigaction to overwrite.
    let mut now: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only reads the current one into `now`.
    let rc = unsafe { libc::sigaction(libc::SIGINT, std::ptr::null(), &mut now) };
    assert_eq!(rc, 0);
    assert_eq!(now.sa_sigaction, libc::SIG_DFL);
}
