//! The `pmu-demo` command line end to end, on this machine for real.
//!
//! Where the machine has hardware counters the perf backend is checked; where it has
//! none (a VM without vPMU, like our CI) the software fallback must say so and still
//! measure. Which case applies is read from the program's own JSON, and both branches
//! assert.

use std::process::{Command, Output};

use serde_json::Value;

fn demo(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pmu-demo"))
        .args(args)
        .output()
        .expect("pmu-demo runs")
}

fn json(args: &[&str]) -> Value {
    let out = demo(args);
    assert!(
        out.status.success(),
        "pmu-demo {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "pmu-demo {args:?}: not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

#[test]
fn list_reports_backends_and_countable_events() {
    let v = json(&["list", "--json"]);
    let backends = v["backends"].as_array().expect("backends");
    let perf = backends
        .iter()
        .find(|b| b["backend"] == "perf")
        .expect("perf backend listed");
    // Software events work on any Linux with perf events; that is what `usable` probes.
    assert_eq!(perf["usable"], true, "{perf}");
    let direct = backends
        .iter()
        .find(|b| b["backend"] == "direct")
        .expect("direct backend listed");
    if direct["usable"] == false {
        assert!(
            direct["reason"].as_str().is_some_and(|r| !r.is_empty()),
            "a reason is given: {direct}"
        );
    }
    let events = v["events"].as_array().expect("events");
    let task_clock = events
        .iter()
        .find(|e| e["name"] == "task-clock")
        .expect("task-clock probed");
    assert_eq!(task_clock["countable"], true);
    let cycles = events
        .iter()
        .find(|e| e["name"] == "cycles")
        .expect("cycles probed");
    if cycles["countable"] == false {
        // No hardware counters: the reason must say so, and the list must explain why.
        assert!(
            cycles["reason"]
                .as_str()
                .unwrap_or("")
                .contains("not supported"),
            "{cycles}"
        );
        assert!(
            !v["hardware_counters"].as_array().unwrap().is_empty(),
            "why no counters: {v}"
        );
    }
    // The reason names the machine's real state: no CPU PMU registered (this VM) is the
    // no-vPMU reason; a registered one refusing an event is "not implemented by this
    // PMU" (the arm64 guest, tests/tests/kernel_arm64.rs, checks that side).
    let core_pmu = v["pmus"].as_array().unwrap().iter().any(|p| {
        let name = p["name"].as_str().unwrap();
        name == "cpu" || name.starts_with("cpu_") || name.starts_with("armv")
    });
    for e in events.iter().filter(|e| e["countable"] == false) {
        let reason = e["reason"].as_str().unwrap();
        if reason.contains("not supported by this CPU") || reason.contains("not implemented") {
            assert_eq!(reason.contains("VM without vPMU?"), !core_pmu, "{e}");
            assert_eq!(
                reason.contains("not implemented by this PMU"),
                core_pmu,
                "{e}"
            );
        }
    }
}

/// The text `list` says a reason several events share once: the JSON's per-event
/// reasons, each without its event's name, appear once in the text, listed with every
/// event that has it. And the JSON lists the Arm cores (none off Arm), each with its
/// MIDR and CPUs.
#[test]
fn list_says_a_shared_reason_once() {
    let v = json(&["list", "--json"]);
    let out = demo(&["list"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let events = v["events"].as_array().expect("events");
    for e in events.iter().filter(|e| e["countable"] == false) {
        let name = e["name"].as_str().unwrap();
        let reason = e["reason"].as_str().unwrap();
        let shared = reason.replacen(&format!(" `{name}`"), "", 1);
        let sharing = events
            .iter()
            .filter(|o| {
                o["reason"].as_str().is_some_and(|r| {
                    r.replacen(&format!(" `{}`", o["name"].as_str().unwrap()), "", 1) == shared
                })
            })
            .count();
        let said = if sharing > 1 {
            shared
        } else {
            reason.to_owned()
        };
        assert_eq!(text.matches(said.as_str()).count(), 1, "{said}\n{text}");
    }
    for core in v["cores"].as_array().expect("cores") {
        assert!(
            core["midr"].as_str().is_some_and(|m| m.starts_with("0x")),
            "{core}"
        );
        assert!(
            core["cpus"].as_array().is_some_and(|c| !c.is_empty()),
            "{core}"
        );
    }
}

#[test]
fn measure_json_is_complete_and_honest() {
    let v = json(&[
        "measure",
        "--workload",
        "loop",
        "--units",
        "100000",
        "--runs",
        "4",
        "--warmup",
        "1",
        "--json",
    ]);
    let r = &v["results"][0];
    assert_eq!(r["workload"], "loop");
    assert_eq!(r["units"], 100_000);
    // sub + jnz per iteration (workloads.rs).
    assert_eq!(r["expected_instructions"], 200_000);
    assert_eq!(r["runs"].as_array().unwrap().len(), 4);
    let events = r["events"].as_array().unwrap();
    match v["backend"].as_str().unwrap() {
        "software" => {
            // No hardware counters here: said, and measured with what there is.
            let notes = v["notes"].as_array().unwrap();
            assert!(
                notes.iter().any(|n| n
                    .as_str()
                    .unwrap()
                    .contains("hardware events cannot be opened")),
                "{v}"
            );
            assert!(
                notes
                    .iter()
                    .any(|n| n.as_str().unwrap().contains("cargo xtask qemu aarch64")),
                "{v}"
            );
            assert_eq!(r["fast_read"], false);
            assert!(r["fallback_reason"].as_str().is_some());
            let task_clock = events.iter().find(|e| e["name"] == "task-clock").unwrap();
            // Every read of a software event is a read(): never counted as clean, so the
            // strict statistics are empty and the tolerated ones are labelled.
            assert_eq!(task_clock["clean_runs"], 0);
            assert!(task_clock["min"].is_null());
            let fallback = &task_clock["fallback"];
            assert!(
                fallback["tolerated"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|t| t == "syscall-fallback"),
                "{task_clock}"
            );
            if cfg!(target_arch = "x86_64") {
                let tsc = events
                    .iter()
                    .find(|e| e["name"] == "tsc")
                    .expect("TSC measured");
                if tsc["clean_runs"].as_u64().unwrap() > 0 {
                    assert!(tsc["min"].as_i64().unwrap() > 0, "{tsc}");
                }
            }
        }
        "perf" => {
            let ins = events
                .iter()
                .find(|e| e["name"] == "instructions")
                .expect("instructions");
            if let Some(min) = ins["min"].as_i64() {
                // User-mode INST_RETIRED of a two-instruction loop: the calibrated count is the
                // code's own (workloads.rs), to within 0.1% on real silicon.
                assert!((min - 200_000).abs() <= 200, "{ins}");
            }
        }
        other => panic!("unexpected backend {other}: {v}"),
    }
}

#[test]
fn hazards_are_forced_and_detected() {
    let v = json(&["hazards", "--json"]);
    let demos = v.as_array().unwrap();
    let find = |name: &str| {
        demos
            .iter()
            .find(|d| d["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing: {v}"))
    };
    let cs = find("context-switch");
    assert_eq!(cs["detected"], true, "{cs}");
    assert!(
        cs["voluntary_switches"].as_u64().unwrap() >= 1,
        "nanosleep is a voluntary switch: {cs}"
    );
    let mig = find("cpu-migration");
    if mig["skipped"].is_null() {
        assert_eq!(mig["detected"], true, "{mig}");
        assert_ne!(mig["cpu_start"], mig["cpu_end"], "{mig}");
    } else {
        let cpus = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        assert_eq!(
            cpus, 1,
            "migration skipped on a machine with {cpus} CPUs: {mig}"
        );
    }
    let overflow = find("overflow");
    assert!(
        overflow["detected"] == true || overflow["skipped"].is_string(),
        "{overflow}"
    );
}

#[test]
fn bad_input_is_a_clear_error() {
    let out = demo(&["measure", "--workload", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown workload `nope`: choose from loop")
    );
    // `--kernel`, the old name of `--workload`, still works (scripts use it).
    let out = demo(&["measure", "--kernel", "nope"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown workload `nope`"));
    let out = demo(&["measure", "--events", "cyclez", "--workload", "loop"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown event `cyclez`"));
    let out = demo(&["measure", "--runs", "0", "--workload", "loop"]);
    assert_eq!(out.status.code(), Some(2));
    let out = demo(&["measure", "--workload", "pointer-chase", "--bytes", "8"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("fewer than 2 pointers"));
}

#[test]
fn help_teaches() {
    let out = demo(&["--help"]);
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "perf_user_access",
        "kmod-enable-user",
        "Examples:",
        "cargo xtask qemu aarch64",
    ] {
        assert!(text.contains(needle), "--help lacks `{needle}`:\n{text}");
    }
}

/// The demo is the product: its commands are the user's, and the guest rigs
/// (`read-costs`, `hazard-stats`, `region-check`: tests/guest, the `pmu-guest` binary)
/// are not among them, listed or hidden.
#[test]
fn only_user_commands() {
    let out = demo(&["--help"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let commands: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        commands,
        ["list", "measure", "hazards", "bench", "spe", "stat", "help"],
        "{text}"
    );
    for rig in ["bench-guest", "hazard-stats", "region-check"] {
        let out = demo(&[rig]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "`pmu-demo {rig}` is not a command"
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("unrecognized subcommand"),
            "{rig}"
        );
    }
}

/// `pmu-demo list | head -1`: the reader closes the pipe early. The demo must end the way
/// C tools do, killed by SIGPIPE (POSIX: a write to a pipe without readers raises it),
/// never with a panic (Rust's default: SIGPIPE ignored, EPIPE, `println!` panics with
/// status 101). The pipe's read end is closed before the demo starts, so its first write
/// meets no reader: deterministic.
#[test]
fn a_closed_stdout_pipe_ends_the_demo_quietly() {
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;

    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe() writes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe()");
    // SAFETY: pipe() just returned these two open descriptors; each is owned once.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read_end);
    let out = Command::new(env!("CARGO_BIN_EXE_pmu-demo"))
        .arg("list")
        .stdout(Stdio::from(write_end))
        .stderr(Stdio::piped())
        .output()
        .expect("pmu-demo runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGPIPE),
        "{:?} {stderr}",
        out.status
    );
}

/// `--json` always prints one JSON object on stdout, an error object on failure: here
/// bad input (an unknown event, --multiplex with the direct backend), exit status 2.
#[test]
fn json_failures_are_json_objects() {
    for args in [
        &[
            "measure",
            "--events",
            "cyclez",
            "--workload",
            "loop",
            "--json",
        ][..],
        &["measure", "--multiplex", "--backend", "direct", "--json"][..],
    ] {
        let out = demo(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{args:?}: stdout is not JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        });
        let error = &v["error"];
        assert_eq!(error["kind"], "usage", "{v}");
        assert_eq!(error["status"], 2, "{v}");
        let message = error["message"].as_str().unwrap();
        // The same message as on stderr.
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(message),
            "{message}"
        );
    }
    let v: Value =
        serde_json::from_slice(&demo(&["measure", "--events", "cyclez", "--json"]).stdout).unwrap();
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown event `cyclez`"),
        "{v}"
    );
}

/// `--events` help shows a `<pmu>/event=…/` example for the machine it runs on: the
/// CPU PMU sysfs registers, else the architecture's usual name (x86: `cpu`, arm64:
/// `armv8_pmuv3_0`), never the other architecture's (pmu-demo `event_names::pmu_event_example`).
#[test]
fn events_help_fits_this_machine() {
    let (mine, other) = if cfg!(target_arch = "aarch64") {
        ("/event=0x08/", "cpu/event=0xc0/")
    } else if cfg!(target_arch = "arm") {
        ("armv6_1176/event=0x07/", "cpu/event=0xc0/")
    } else {
        ("/event=0xc0/", "armv8_pmuv3")
    };
    for command in ["measure", "hazards"] {
        let out = demo(&[command, "--help"]);
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find(|l| l.contains("Examples here:"))
            .unwrap_or_else(|| panic!("{command} --help has no example:\n{text}"));
        assert!(line.contains(mine), "{command}: {line}");
        assert!(!line.contains(other), "{command}: {line}");
    }
    let sysfs = std::path::Path::new("/sys/bus/event_source/devices");
    let registered = std::fs::read_dir(sysfs).is_ok_and(|d| {
        d.flatten().any(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name == "cpu" || name.starts_with("cpu_") || name.starts_with("armv")
        })
    });
    let text = String::from_utf8_lossy(&demo(&["measure", "--help"]).stdout).into_owned();
    assert_eq!(
        !text.contains("this machine registers no CPU PMU"),
        registered,
        "{text}"
    );
}

/// `--multiplex` opens every event on its own, unpinned, and reports per run and
/// event the times enabled and running (from read(), so never null) and the scaled
/// estimate. On this VM without vPMU it runs on the software fallback, whose events
/// never leave the CPU: enabled ≥ running, flagged multiplexed exactly when running
/// < enabled.
#[test]
fn multiplex_reports_times_per_run() {
    let v = json(&[
        "measure",
        "--multiplex",
        "--workload",
        "loop",
        "--units",
        "10000",
        "--runs",
        "3",
        "--warmup",
        "1",
        "--json",
    ]);
    assert_eq!(v["multiplexed_mode"], true, "{v}");
    let r = &v["results"][0];
    assert_eq!(r["complete"], true, "{r}");
    let names: Vec<&str> = r["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    for run in r["runs"].as_array().unwrap() {
        let times = run["multiplexing"].as_array().expect("per-event times");
        assert!(times.len() <= names.len() && !times.is_empty(), "{run}");
        for (t, name) in times.iter().zip(&names) {
            if *name == "tsc" {
                // The software fallback's time-stamp counter is no perf event: no times.
                assert!(t["time_enabled"].is_null(), "{t}");
                continue;
            }
            let enabled = t["time_enabled"].as_u64().expect("read() gives times");
            let running = t["time_running"].as_u64().unwrap();
            assert!(running <= enabled, "{t}");
            assert_eq!(t["multiplexed"], running < enabled, "{t}");
            if running > 0 {
                assert!(t["scaled"].as_u64().is_some(), "{t}");
            }
        }
    }
}

/// `pmu-demo stat` exits with the command's status as a POSIX shell reports it (XCU
/// 2.8.2): its own exit status, 128 + a killing signal, 127 not found, 126 not
/// executable; the report goes to stderr and leaves the command's stdout alone.
#[test]
fn stat_passes_the_command_status_on() {
    let out = demo(&["stat", "--", "sh", "-c", "echo out; exit 3"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "out\n");
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(
        report.contains("Counter stats for 'sh -c echo out; exit 3'"),
        "{report}"
    );
    assert!(report.contains("pmu-demo exits with 3"), "{report}");
    let killed = demo(&["stat", "--", "sh", "-c", "kill -9 $$"]);
    assert_eq!(killed.status.code(), Some(137), "{killed:?}");
    let missing = demo(&["stat", "--", "/nonexistent/command"]);
    assert_eq!(missing.status.code(), Some(127), "{missing:?}");
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("command not found"),
        "{missing:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("not-executable");
    std::fs::write(&text, "echo hi\n").unwrap();
    let denied = demo(&["stat", "--", text.to_str().unwrap()]);
    assert_eq!(denied.status.code(), Some(126), "{denied:?}");
    assert!(
        String::from_utf8_lossy(&denied.stderr).contains("cannot execute: Permission denied"),
        "{denied:?}"
    );
}

/// `--json -o FILE`: every event with a verdict and its runs, the end and the status;
/// where there are no hardware counters (this CI VM) the software events, said so.
#[test]
fn stat_json_names_every_event_and_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("stat.json");
    let out = demo(&[
        "stat",
        "--json",
        "--repeat",
        "2",
        "-o",
        file.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "(true) & wait",
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(v["end"]["how"], "exited");
    assert_eq!(v["exit_status"], 0);
    assert_eq!(v["repeat"], 2);
    let events = v["events"].as_array().unwrap();
    for e in events {
        assert_eq!(e["runs"].as_array().unwrap().len(), 2, "{e}");
        assert!(e["verdict"].as_str().is_some(), "{e}");
    }
    // Each event was run in its group, twice.
    assert_eq!(
        v["runs"].as_u64().unwrap(),
        2 * v["groups"].as_array().unwrap().len() as u64
    );
    match v["backend"].as_str().unwrap() {
        "software" => {
            assert!(v["notes"][0]
                .as_str()
                .unwrap()
                .contains("no hardware counters"));
            let clock = events.iter().find(|e| e["name"] == "task-clock").unwrap();
            // The shell and its child ran: nanoseconds of task time, counted.
            assert_eq!(clock["verdict"], "exact");
            assert!(clock["count"].as_u64().unwrap() > 0, "{clock}");
        }
        backend => {
            assert_eq!(backend, "perf");
            let names: Vec<&str> = events.iter().map(|e| e["name"].as_str().unwrap()).collect();
            assert_eq!(names, ["instructions:u", "cycles:u"]);
        }
    }
}

/// `-o -`: the report on stdout (after the command's own output), nothing on stderr.
#[test]
fn stat_report_to_stdout() {
    let out = demo(&["stat", "--json", "-o", "-", "--", "true"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(v["command"][0], "true");
    assert!(out.stderr.is_empty(), "{out:?}");
}

/// `pmu-demo stat --help` teaches: what is counted, children, the exit status, a
/// Raspberry Pi example.
#[test]
fn stat_help_teaches() {
    let out = demo(&["stat", "--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "every child process",
        "multiplexes",
        "--repeat",
        "128 + the signal",
        "127",
        "Raspberry Pi",
        "--backend direct",
    ] {
        assert!(help.contains(needle), "{needle}: {help}");
    }
}
