//! The examples as a user runs them, on this machine: built with the cargo that runs
//! the test (a filtered `cargo test --test examples` builds no examples itself; after a
//! whole-crate `cargo test` this build finds them fresh), then run from
//! target/<profile>/examples/.

use std::path::PathBuf;
use std::process::Command;

/// target/<profile>/examples/<name>, where `cargo test` put it.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let profile = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps/<test>");
    let path = profile.join("examples").join(name);
    {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut build = Command::new(cargo);
        build.args(["build", "-p", "pmu-linux", "--example", name]);
        if profile.file_name().is_some_and(|p| p == "release") {
            build.arg("--release");
        }
        let status = build.status().expect("cargo runs");
        assert!(status.success(), "building example {name}: {status}");
    }
    assert!(path.is_file(), "{} was not built", path.display());
    path
}

/// Whether the kernel registers a CPU PMU (sysfs `cpu`, `cpu_core`, `armv8_pmuv3_0` …:
/// pmu_linux::machine::Pmu::is_core), and user space may read its counters.
fn has_cpu_pmu() -> bool {
    pmu_linux::machine::Sysfs::system()
        .pmus()
        .is_ok_and(|pmus| pmus.iter().any(|p| p.is_core()))
}

/// `count`: with a CPU PMU, a count on stdout and status 0; without one (this project's
/// x86 VM: no vPMU), the backend it fell back to and why on stderr, the refusal to give
/// an instruction count, status 1, nothing on stdout.
#[test]
fn count_says_what_it_counted_or_why_not() {
    let out = Command::new(example("count")).arg("1000").output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    if has_cpu_pmu() {
        assert!(out.status.success(), "{stderr}");
        let count: i64 = stdout
            .strip_suffix(" instructions\n")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("stdout: {stdout:?}"));
        // 1000 iterations of a two-instruction loop.
        assert!(count >= 2000, "{stdout}");
    } else {
        assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
        assert_eq!(stdout, "");
        assert!(
            stderr.starts_with("backend: software (no hardware counters ("),
            "{stderr}"
        );
        assert!(
            stderr.contains("): counting task-clock, tsc instead)\n"),
            "{stderr}"
        );
        assert!(
            stderr.contains(
                "count: `instructions` is not counted: the meter uses the software backend"
            ),
            "{stderr}"
        );
    }
}

/// A bad argument is refused with status 2 before anything is opened.
#[test]
fn count_refuses_a_bad_argument() {
    let out = Command::new(example("count")).arg("0").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least 1"));
}
