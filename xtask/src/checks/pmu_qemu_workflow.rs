//! `cargo xtask pmu-qemu-workflow`: the GitHub Actions workflow of docs/pmu-qemu.md
//! (section `## CI`) run as a user's repository runs it, so that the workflow users copy
//! cannot drift from what is tested.
//!
//! In a scratch directory outside this repository: a new user crate (its own
//! Cargo.toml depending on pmu-criterion by path, a bench written with
//! `pmu_criterion::Bench`, the docs' `.cargo/config.toml`), a git repository with a
//! base commit and two heads (one whose benchmark does twice the work, one that changes
//! only its README); then, for each head, the workflow's steps in order, read from the
//! docs' YAML block ([`super::workflow_yaml`]): `run:` scripts through bash as GitHub
//! runs them (`bash -e`), `${{ … }}` replaced by [`expressions`], and what only makes
//! sense on GitHub mapped to its local equivalent ([`Local`], listed in the output).
//! It asserts that the base's step saves a baseline holding the counts it printed, that
//! the gate exits 3 on the slower head naming each benchmark with its old and new
//! counts and 0 on the unchanged one, that the steps after a failure are skipped unless
//! `if: always()`, and that the uploaded JSON summary exists and says the same.
//!
//! Cheap on the host: pmu-qemu's guest cache is the one every run uses (what
//! actions/cache restores on GitHub), and the builds (`cargo install` of pmu-qemu, the
//! user's benches) go to one target directory kept between runs
//! (`<target>/pmu-qemu-workflow`), so a rerun compiles only the user's crate.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use super::pmu_qemu::{exact, ran, Ran};
use super::workflow_yaml::{fenced_block, glob_matches, read_workflow, substitute, Workflow};
use crate::engine::need::{on_path, TOOLCHAIN};
use crate::engine::paths::{target_dir, workspace_root};
use crate::engine::step::{stdout_of, Step};

/// This module's commands in `cargo xtask help`.
pub const USAGE: &str =
    "    pmu-qemu-workflow The GitHub Actions workflow of docs/pmu-qemu.md (## CI)
                      run as a user's repository runs it: a new crate with a
                      pmu-criterion bench in a scratch git repository (a base,
                      a slower head, an unchanged head), pmu-qemu installed
                      from here, then the workflow's own steps in order
                      (GitHub-only ones mapped and listed): the baseline
                      saved, the gate exiting 3 on the slower head with each
                      benchmark's old and new counts and 0 on the unchanged
                      one, the uploaded JSON summary read.
";

const DOCS: &str = "docs/pmu-qemu.md";
const SECTION: &str = "## CI";
const TARGET: &str = "aarch64-unknown-linux-musl";

/// The workflow's install line, which names the public repository; here the same
/// install comes from this clone.
const INSTALL_LINE: &str =
    "cargo install --locked --git https://github.com/pmu-workspace/pmu pmu-qemu";

/// pmu-qemu's cache on a GitHub runner (no `PMU_CACHE_DIR`, no `XDG_CACHE_HOME`:
/// pmu-qemu/src/debian.rs), which the workflow's actions/cache step must keep.
const GUEST_CACHE: &str = "~/.cache/pmu-workspace/pmu-qemu";

/// The user's benchmarks: `checksum` at two inputs.
const BENCHMARKS: [&str; 2] = ["checksum/100", "checksum/1000"];

/// The step.
pub fn step() -> Step {
    Step::func(
        "pmu-qemu-workflow: docs/pmu-qemu.md's GitHub Actions workflow in a new user repository (a slower head: exit 3 naming old and new counts; an unchanged head: exit 0; the JSON summary)",
        run,
    )
    .needs_programs(&[
        pmu_tests::QEMU_AARCH64,
        "git",
        "bash",
        "apt-get",
        "dpkg-deb",
        "tar",
    ])
    .needs_targets(&[TARGET])
}

/// What a workflow step is here.
#[derive(Debug, PartialEq)]
pub enum Local {
    /// actions/checkout: a clone of the user's repository, at the head.
    Checkout,
    /// actions/cache of pmu-qemu's guest: pmu-qemu's cache on this machine, as it is.
    Cache,
    /// actions/upload-artifact of `path`: the files it matches, each read as JSON.
    Upload(String),
    /// A bash script, its lines mapped by [`map_run_line`].
    Run(String),
}

/// The local meaning of each step of `workflow`, or why one has none (an action not
/// known here, an input that would make it differ from its local equivalent, an
/// unsupported `if:`), before anything is built.
pub fn local_steps(workflow: &Workflow) -> Result<Vec<Local>, String> {
    workflow
        .steps
        .iter()
        .map(|step| {
            match step.condition.as_deref() {
                None | Some("always()") => {}
                Some(other) => {
                    return Err(format!(
                        "`{}`: `if: {other}` is not run here (only `always()`)",
                        step.label()
                    ))
                }
            }
            if let Some(script) = &step.run {
                for line in script.lines() {
                    map_run_line(line)?;
                }
                return Ok(Local::Run(script.clone()));
            }
            let uses = step.uses.as_deref().unwrap_or_default();
            let action = uses.split('@').next().unwrap_or_default();
            match action {
                // The base commit must be in the clone: GitHub fetches one commit
                // unless told otherwise (actions/checkout's README, `fetch-depth`).
                "actions/checkout" if step.input("fetch-depth") == Some("0") => Ok(Local::Checkout),
                "actions/checkout" => Err(format!(
                    "`{}`: without `fetch-depth: 0` GitHub's clone lacks the base commit",
                    step.label()
                )),
                "actions/cache" if step.input("path") == Some(GUEST_CACHE) => Ok(Local::Cache),
                "actions/cache" => Err(format!(
                    "`{}`: the cached path must be pmu-qemu's cache on the runner, {GUEST_CACHE}",
                    step.label()
                )),
                "actions/upload-artifact" => step
                    .input("path")
                    .map(|p| Local::Upload(p.to_owned()))
                    .ok_or_else(|| format!("`{}`: no `path`", step.label())),
                _ => Err(format!(
                    "`{}`: the action `{uses}` has no local equivalent here",
                    step.label()
                )),
            }
        })
        .collect()
}

/// One line of a `run:` script here: `Ok(None)` runs it as written; `Ok(Some(..))`
/// is what replaces a line that only makes sense on GitHub.
#[derive(Debug, PartialEq)]
pub enum Mapped {
    /// `sudo apt-get install` of QEMU and the keyring: not run; checked to be there.
    HostPackages,
    /// The install from the public repository: from this clone instead.
    InstallFromClone,
}

/// How the line `line` of a `run:` script runs here.
pub fn map_run_line(line: &str) -> Result<Option<Mapped>, String> {
    let line = line.trim();
    if line.starts_with("sudo ") {
        return if line.starts_with("sudo apt-get update && sudo apt-get install -y ")
            && line.contains(" qemu-system-arm")
            && line.contains(" debian-archive-keyring")
        {
            Ok(Some(Mapped::HostPackages))
        } else {
            Err(format!(
                "`{line}`: a sudo line is not run here, and only the install of qemu-system-arm and debian-archive-keyring is known"
            ))
        };
    }
    if line == INSTALL_LINE {
        return Ok(Some(Mapped::InstallFromClone));
    }
    if line.contains("pmu-workspace/pmu") {
        return Err(format!(
            "`{line}` names the public repository, which this check cannot reach"
        ));
    }
    Ok(None)
}

/// The values of the workflow's `${{ … }}` expressions here, on a pull request from
/// `head` to `base` (GitHub's "Contexts" reference: `github.event` is the
/// pull_request event's payload, `runner.os` is `Linux` on ubuntu-latest).
pub fn expressions(base: &str, head: &str) -> Vec<(&'static str, String)> {
    vec![
        ("github.event.pull_request.base.sha", base.to_owned()),
        ("github.event.pull_request.head.sha", head.to_owned()),
        ("runner.os", "Linux".to_owned()),
    ]
}

/// The scratch places of one check.
struct Places {
    /// The clone this check runs from.
    root: PathBuf,
    /// The user's repository (the `origin` of every checkout).
    origin: PathBuf,
    /// Where `cargo install` puts pmu-qemu (`<root>/bin` goes first on PATH).
    install_root: PathBuf,
    /// The target directory of every cargo command of the steps, kept between runs.
    build_dir: PathBuf,
}

/// A step's result.
struct StepResult {
    label: String,
    ran: Option<Ran>,
    failed: bool,
    skipped: bool,
    /// For an upload: the files it matched (relative to the checkout), read.
    uploaded: Vec<(String, serde_json::Value)>,
}

fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    stdout_of(
        Command::new("git")
            .current_dir(dir)
            .args(["-c", "user.name=pmu-qemu-workflow"])
            .args(["-c", "user.email=pmu-qemu-workflow@localhost"])
            .args([
                "-c",
                "commit.gpgsign=false",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args),
    )
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The user's library: the code under test. `passes` loops over the input: 1 at the
/// base, 2 at the slower head (twice the instructions of the loop).
fn library(passes: u32) -> String {
    format!(
        "//! The code under test.\n\n\
/// The wrapping sum of `i * i` for `i` below `n`, {passes} time(s) over.\n\
#[inline(never)]\n\
pub fn checksum(n: u64) -> u64 {{\n\
    let mut sum = 0u64;\n\
    for _ in 0..{passes} {{\n\
        for i in 0..n {{\n\
            // black_box: the loop runs, rather than a closed form of it.\n\
            sum = sum.wrapping_add(std::hint::black_box(i).wrapping_mul(i));\n\
        }}\n\
    }}\n\
    sum\n\
}}\n"
    )
}

/// The bench, as pmu-criterion's README writes one.
const BENCH: &str = "//! The user's benchmark, through pmu-criterion's harness.\n\
fn main() -> std::process::ExitCode {\n\
    let mut bench = match pmu_criterion::Bench::instructions() {\n\
        Ok(b) => b,\n\
        Err(e) => {\n\
            eprintln!(\"{e}\");\n\
            return e.exit_code();\n\
        }\n\
    };\n\
    for n in [100u64, 1000] {\n\
        bench.with_input(\"checksum\", &n, |&n| user_bench::checksum(std::hint::black_box(n)));\n\
    }\n\
    bench.finish()\n\
}\n";

/// The user's Cargo.toml: pmu-criterion by path (it is not on crates.io yet), the
/// library out of `cargo bench` (docs/pmu-qemu.md: libtest rejects the gate's
/// arguments), the bench without libtest's harness.
fn manifest(root: &Path) -> String {
    format!(
        "[package]\nname = \"user-bench\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n\
[lib]\nbench = false\n\n\
[dev-dependencies]\npmu-criterion = {{ path = \"{}\" }}\n\n\
[[bench]]\nname = \"work\"\nharness = false\n",
        root.join("pmu-criterion").display()
    )
}

/// The commits of the user's repository.
struct Commits {
    base: String,
    slower: String,
    unchanged: String,
}

/// The user's repository at `places.origin`: a base commit, a slower head on branch
/// `slower`, a head that changes only the README on branch `readme`.
fn user_repository(places: &Places, config: &str) -> Result<Commits, String> {
    let o = &places.origin;
    write(&o.join("Cargo.toml"), &manifest(&places.root))?;
    write(&o.join(".gitignore"), "/target\n")?;
    write(&o.join(".cargo/config.toml"), config)?;
    write(&o.join("src/lib.rs"), &library(1))?;
    write(&o.join("benches/work.rs"), BENCH)?;
    write(&o.join("README.md"), "# user-bench\n")?;
    // The user's lock file: this workspace's, trimmed by cargo to what the crate uses,
    // so the dependencies are the versions tested here.
    fs::copy(places.root.join("Cargo.lock"), o.join("Cargo.lock"))
        .map_err(|e| format!("Cargo.lock: {e}"))?;
    stdout_of(
        cargo_in(o, places)
            .args(["metadata", "--format-version", "1"])
            .stdout(std::process::Stdio::null()),
    )?;
    git(o, &["init", "-q"])?;
    git(o, &["add", "-A"])?;
    git(o, &["commit", "-q", "-m", "base"])?;
    let base = git(o, &["rev-parse", "HEAD"])?.trim().to_owned();
    git(o, &["checkout", "-q", "-b", "slower"])?;
    write(&o.join("src/lib.rs"), &library(2))?;
    git(o, &["commit", "-q", "-am", "checksum: two passes"])?;
    let slower = git(o, &["rev-parse", "HEAD"])?.trim().to_owned();
    git(o, &["checkout", "-q", "-b", "readme", &base])?;
    write(&o.join("README.md"), "# user-bench\n\nA checksum.\n")?;
    git(o, &["commit", "-q", "-am", "README: what it is"])?;
    let unchanged = git(o, &["rev-parse", "HEAD"])?.trim().to_owned();
    git(o, &["checkout", "-q", "main"])?;
    Ok(Commits {
        base,
        slower,
        unchanged,
    })
}

/// The environment every command of a step gets: the install root's bin first on PATH
/// (as ~/.cargo/bin on a runner), the pinned toolchain (the runner's stable: rustup),
/// the kept target directory, and none of the settings the caller's environment might
/// hold that would change what the workflow does.
fn step_env(command: &mut Command, places: &Places) {
    for key in [
        "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUNNER",
        "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER",
        "CARGO_BUILD_TARGET",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_INSTALL_ROOT",
        "CARGO_MANIFEST_DIR",
        "PMU_CRITERION_HOME",
        "PMU_CRITERION_MODE",
        "PMU_QEMU_EXACT",
        "CRITERION_HOME",
    ] {
        command.env_remove(key);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![places.install_root.join("bin")];
    dirs.extend(std::env::split_paths(&path));
    command
        .env("PATH", std::env::join_paths(dirs).unwrap_or(path))
        .env("RUSTUP_TOOLCHAIN", TOOLCHAIN)
        .env("CARGO_TARGET_DIR", &places.build_dir)
        .env("CI", "true");
}

fn cargo_in(dir: &Path, places: &Places) -> Command {
    let mut command = Command::new("cargo");
    command.current_dir(dir);
    step_env(&mut command, places);
    command
}

/// `script` with its lines mapped ([`map_run_line`]); the host check for
/// [`Mapped::HostPackages`] done here.
fn local_script(script: &str, places: &Places, notes: &mut Vec<String>) -> Result<String, String> {
    let mut out = String::new();
    for line in script.lines() {
        match map_run_line(line)? {
            None => {
                out += line;
                out += "\n";
            }
            Some(Mapped::HostPackages) => {
                let keyring = Path::new("/usr/share/keyrings/debian-archive-keyring.gpg");
                if !on_path(pmu_tests::QEMU_AARCH64) || !keyring.is_file() {
                    return Err(format!(
                        "`{}` is not run here, and {} or {} is missing",
                        line.trim(),
                        pmu_tests::QEMU_AARCH64,
                        keyring.display()
                    ));
                }
                notes.push(format!(
                    "`{}` not run (it needs root): {} and {} are here",
                    line.trim(),
                    pmu_tests::QEMU_AARCH64,
                    keyring.display()
                ));
            }
            Some(Mapped::InstallFromClone) => {
                let local = format!(
                    "cargo install --locked --path {} --root {}",
                    places.root.join("pmu-qemu").display(),
                    places.install_root.display()
                );
                notes.push(format!("`{}` → `{local}`", line.trim()));
                out += &local;
                out += "\n";
            }
        }
    }
    Ok(out)
}

/// Files under `dir` (relative paths, `/`-separated), `.git` left out.
fn files_under(dir: &Path, prefix: &str, out: &mut Vec<String>) {
    let Ok(read) = fs::read_dir(dir) else { return };
    for entry in read.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        match entry.file_type() {
            Ok(t) if t.is_dir() && name != ".git" => files_under(&entry.path(), &rel, out),
            Ok(t) if t.is_file() => out.push(rel),
            _ => {}
        }
    }
}

/// The workflow's steps in order for a pull request from `head` to `base`, in a new
/// checkout at `checkout`. A failed step fails the job: the later steps are skipped
/// unless `if: always()`, as on GitHub.
fn run_workflow(
    workflow: &Workflow,
    locals: &[Local],
    places: &Places,
    checkout: &Path,
    base: &str,
    head: &str,
) -> Result<Vec<StepResult>, String> {
    let values = expressions(base, head);
    let mut results = Vec::new();
    let mut job_failed = false;
    for (i, (step, local)) in workflow.steps.iter().zip(locals).enumerate() {
        let label = step.label();
        let number = format!("{}/{}", i + 1, workflow.steps.len());
        let mut result = StepResult {
            label: label.clone(),
            ran: None,
            failed: false,
            skipped: false,
            uploaded: Vec::new(),
        };
        if job_failed && step.condition.as_deref() != Some("always()") {
            println!("      step {number} `{label}`: skipped (an earlier step failed)");
            result.skipped = true;
            results.push(result);
            continue;
        }
        for (_, value) in &step.with {
            substitute(value, &values)?;
        }
        match local {
            Local::Checkout => {
                let t = Instant::now();
                let parent = checkout.parent().unwrap_or(checkout);
                let (o, c) = (places.origin.display(), checkout.display());
                git(parent, &["clone", "-q", &o.to_string(), &c.to_string()])?;
                git(checkout, &["checkout", "-q", head])?;
                println!(
                    "      step {number} `{label}` (GitHub's action) → git clone {o} {c}, head {} checked out ({:.1} s)",
                    &head[..7],
                    t.elapsed().as_secs_f64()
                );
            }
            Local::Cache => println!(
                "      step {number} `{label}` (GitHub's action) → pmu-qemu's cache on this machine, kept as it is ({GUEST_CACHE} on the runner)"
            ),
            Local::Upload(pattern) => {
                let mut files = Vec::new();
                files_under(checkout, "", &mut files);
                files.retain(|f| glob_matches(pattern, f));
                files.sort();
                for file in &files {
                    let text = fs::read_to_string(checkout.join(file))
                        .map_err(|e| format!("{file}: {e}"))?;
                    let json = serde_json::from_str(&text)
                        .map_err(|e| format!("the uploaded {file} is not JSON: {e}"))?;
                    result.uploaded.push((file.clone(), json));
                }
                println!(
                    "      step {number} `{label}` (GitHub's action) → the files `{pattern}` matches, each read as JSON: {}",
                    if files.is_empty() { "none".to_owned() } else { files.join(", ") }
                );
            }
            Local::Run(script) => {
                let script = substitute(script, &values)?;
                let mut notes = Vec::new();
                let script = local_script(&script, places, &mut notes)?;
                let mut command = Command::new("bash");
                command
                    .current_dir(checkout)
                    .args(["--noprofile", "--norc", "-e", "-c", &script]);
                step_env(&mut command, places);
                for (k, v) in workflow.env.iter().chain(&step.env) {
                    command.env(k, substitute(v, &values)?);
                }
                let r = ran(&mut command, b"")?;
                let note = if notes.is_empty() {
                    String::new()
                } else {
                    format!(" [here: {}]", notes.join("; "))
                };
                println!(
                    "      step {number} `{label}`{note}: exit {} ({:.1} s)",
                    r.code.map_or("by a signal".to_owned(), |c| c.to_string()),
                    r.secs
                );
                if r.code != Some(0) {
                    result.failed = true;
                    job_failed = true;
                }
                result.ran = Some(r);
            }
        }
        results.push(result);
    }
    Ok(results)
}

/// The word after `flag` in `script`.
fn word_after<'a>(script: &'a str, flag: &str) -> Option<&'a str> {
    let mut words = script.split_whitespace();
    words.find(|w| *w == flag)?;
    words.next()
}

/// The exact counts of [`BENCHMARKS`] in one run's stdout.
fn counts(stdout: &str) -> Option<Vec<u64>> {
    BENCHMARKS.iter().map(|b| exact(stdout, b)).collect()
}

/// The checks of one run of the workflow: the base step saved a baseline holding the
/// counts it printed; the gate exited 3 with every benchmark named old → new (`slower`)
/// or 0 with the same counts; the upload ran and its summary says the same.
fn check_run(
    workflow: &Workflow,
    results: &[StepResult],
    checkout: &Path,
    slower: bool,
) -> Result<String, String> {
    let find = |flag: &str| {
        workflow
            .steps
            .iter()
            .position(|s| s.run.as_deref().is_some_and(|r| r.contains(flag)))
            .ok_or_else(|| format!("no step runs `{flag}`"))
    };
    let (base_at, gate_at) = (find("--save-baseline ")?, find("--baseline ")?);
    let name = word_after(
        workflow.steps[base_at].run.as_deref().unwrap_or(""),
        "--save-baseline",
    )
    .unwrap_or_default();
    let step_output = |at: usize| -> Result<&Ran, String> {
        results[at]
            .ran
            .as_ref()
            .ok_or_else(|| format!("`{}` did not run", results[at].label))
    };
    for r in &results[..gate_at] {
        if r.failed || r.skipped {
            let out = r
                .ran
                .as_ref()
                .map_or(String::new(), |r| format!("{}{}", r.stdout, r.stderr));
            return Err(format!("`{}` failed before the gate:\n{out}", r.label));
        }
    }
    let base = step_output(base_at)?;
    let old = counts(&base.stdout).ok_or_else(|| {
        format!(
            "the base's step printed no exact counts for {BENCHMARKS:?}:\n{}{}",
            base.stdout, base.stderr
        )
    })?;
    let saved = checkout.join(format!("target/pmu-criterion/baselines/{name}/work.json"));
    let json: serde_json::Value = fs::read_to_string(&saved)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
        .map_err(|e| format!("the baseline {}: {e}", saved.display()))?;
    for (id, count) in BENCHMARKS.iter().zip(&old) {
        let in_file = json["benchmarks"]
            .as_array()
            .and_then(|b| b.iter().find(|b| b["id"] == *id))
            .and_then(|b| b["count"].as_u64());
        if in_file != Some(*count) {
            return Err(format!(
                "the baseline {} holds {in_file:?} for {id}, the base printed {count}",
                saved.display()
            ));
        }
    }
    let gate = step_output(gate_at)?;
    let new = counts(&gate.stdout).ok_or_else(|| {
        format!(
            "the gate printed no exact counts:\n{}{}",
            gate.stdout, gate.stderr
        )
    })?;
    let named: Vec<String> = BENCHMARKS
        .iter()
        .zip(old.iter().zip(&new))
        .map(|(id, (o, n))| format!("REGRESSED {id}: {o} → {n} instructions"))
        .collect();
    let (want_code, want_regressed) = if slower {
        (3, BENCHMARKS.to_vec())
    } else {
        (0, Vec::new())
    };
    let gate_ok = if slower {
        new.iter().zip(&old).all(|(n, o)| n > o)
            && named.iter().all(|line| gate.stderr.contains(line.as_str()))
    } else {
        new == old && !gate.stderr.contains("REGRESSED")
    };
    if gate.code != Some(want_code) || !gate_ok {
        return Err(format!(
            "the gate: expected exit {want_code} and {}; got exit {:?}, counts {old:?} → {new:?}\n{}{}",
            if slower { format!("{named:?}") } else { "the same counts".to_owned() },
            gate.code,
            gate.stdout,
            gate.stderr
        ));
    }
    let upload = results
        .iter()
        .zip(&workflow.steps)
        .find(|(_, s)| {
            s.uses
                .as_deref()
                .is_some_and(|u| u.starts_with("actions/upload-artifact@"))
        })
        .map(|(r, _)| r)
        .ok_or("no actions/upload-artifact step")?;
    let wanted = "target/pmu-criterion/summary/work.json";
    let summary = upload
        .uploaded
        .iter()
        .find(|(f, _)| f == wanted)
        .map(|(_, j)| j)
        .ok_or_else(|| {
            format!(
                "the upload (skipped: {}) did not take {wanted}",
                upload.skipped
            )
        })?;
    if summary["exit_code"] != want_code
        || summary["regressed"] != serde_json::json!(want_regressed)
        || summary["baseline"] != name
    {
        return Err(format!(
            "the summary {wanted}: expected exit_code {want_code}, regressed {want_regressed:?}, baseline {name}; got {summary}"
        ));
    }
    Ok(format!(
        "base {old:?}, head {new:?} instructions; gate exit {want_code}{}; {wanted} uploaded and read",
        if slower { format!(", {}", named.join(", ")) } else { String::new() }
    ))
}

fn run() -> Result<(), String> {
    let t = Instant::now();
    let root = workspace_root();
    let docs = fs::read_to_string(root.join(DOCS)).map_err(|e| format!("{DOCS}: {e}"))?;
    let yaml = fenced_block(&docs, SECTION, "yaml").map_err(|e| format!("{DOCS}: {e}"))?;
    let config = fenced_block(&docs, SECTION, "toml").map_err(|e| format!("{DOCS}: {e}"))?;
    let workflow = read_workflow(&yaml).map_err(|e| format!("{DOCS}, the workflow: {e}"))?;
    let locals = local_steps(&workflow).map_err(|e| format!("{DOCS}, the workflow: {e}"))?;
    println!(
        "    {DOCS} `{SECTION}`: a workflow of {} steps and a .cargo/config.toml; here the pinned toolchain {TOOLCHAIN} stands in for the runner's stable",
        workflow.steps.len()
    );
    let scratch = std::env::temp_dir().join(format!("pmu-qemu-workflow-{}", std::process::id()));
    let _ = fs::remove_dir_all(&scratch);
    let places = Places {
        root,
        origin: scratch.join("user-bench"),
        install_root: scratch.join("cargo-home"),
        build_dir: target_dir().join("pmu-qemu-workflow"),
    };
    let commits = user_repository(&places, &config)?;
    println!(
        "    the user's repository {}: base {}, slower head {} (checksum: two passes), unchanged head {} (README only)",
        places.origin.display(),
        &commits.base[..7],
        &commits.slower[..7],
        &commits.unchanged[..7]
    );
    for (what, head, slower) in [
        ("slower", &commits.slower, true),
        ("unchanged", &commits.unchanged, false),
    ] {
        let t = Instant::now();
        println!("    the workflow on a pull request with the {what} head:");
        let checkout = scratch.join(format!("checkout-{what}"));
        let results = run_workflow(&workflow, &locals, &places, &checkout, &commits.base, head)?;
        let verdict = check_run(&workflow, &results, &checkout, slower).map_err(|e| {
            format!(
                "the {what} head: {e}\n(the scratch directory is kept: {})",
                scratch.display()
            )
        })?;
        println!(
            "    {what} head: {verdict}; the job {} ({:.1} s)",
            if results.iter().any(|r| r.failed) {
                "failed, as it should"
            } else {
                "passed"
            },
            t.elapsed().as_secs_f64()
        );
    }
    let _ = fs::remove_dir_all(&scratch);
    println!(
        "    the workflow: {:.1} s in all (builds in {})",
        t.elapsed().as_secs_f64(),
        places.build_dir.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOCS_TEXT: &str = include_str!("../../../docs/pmu-qemu.md");

    /// docs/pmu-qemu.md's workflow: every step has a local meaning, with the mapped
    /// lines the ones that only make sense on GitHub.
    #[test]
    fn every_step_of_the_docs_workflow_has_a_local_meaning() {
        let yaml = fenced_block(DOCS_TEXT, SECTION, "yaml").unwrap();
        let workflow = read_workflow(&yaml).unwrap();
        let locals = local_steps(&workflow).unwrap();
        assert_eq!(locals[0], Local::Checkout);
        assert!(locals.contains(&Local::Cache));
        assert!(matches!(locals.last(), Some(Local::Upload(_))));
        let mapped: Vec<Mapped> = workflow
            .steps
            .iter()
            .filter_map(|s| s.run.as_deref())
            .flat_map(str::lines)
            .filter_map(|l| map_run_line(l).unwrap())
            .collect();
        assert_eq!(mapped, [Mapped::HostPackages, Mapped::InstallFromClone]);
        let values = expressions("b", "h");
        for step in &workflow.steps {
            for text in step.run.iter().chain(step.with.iter().map(|(_, v)| v)) {
                substitute(text, &values).unwrap();
            }
        }
    }

    #[test]
    fn steps_without_a_local_meaning_are_refused() {
        let refused = |yaml: &str| local_steps(&read_workflow(yaml).unwrap()).unwrap_err();
        let step = |s: &str| format!("jobs:\n  j:\n    steps:\n      - {s}\n");
        assert!(refused(&step("uses: actions/checkout@v4")).contains("fetch-depth"));
        assert!(refused(&step(
            "uses: actions/cache@v4\n        with:\n          path: ~/x"
        ))
        .contains(GUEST_CACHE));
        assert!(refused(&step("uses: someone/else@v1")).contains("no local equivalent"));
        assert!(refused(&step("run: sudo rm -rf /")).contains("sudo"));
        assert!(refused(&step("run: x\n        if: failure()")).contains("always()"));
        assert!(refused(&step(
            "run: cargo install --git https://github.com/pmu-workspace/pmu pmu-qemu"
        ))
        .contains("public repository"));
    }

    /// A run of the docs' workflow as `run_workflow` records it, with the lines
    /// pmu-criterion's one-shot mode and gate print (its `finish`), and the baseline
    /// file it writes (`{"schema": 1, …, "benchmarks": [{"id", "metric", "count"}]}`).
    fn fake_run(dir: &Path, gate_code: i32, new: [u64; 2]) -> (Workflow, Vec<StepResult>) {
        let yaml = fenced_block(DOCS_TEXT, SECTION, "yaml").unwrap();
        let workflow = read_workflow(&yaml).unwrap();
        let baseline = dir.join("target/pmu-criterion/baselines/base/work.json");
        fs::create_dir_all(baseline.parent().unwrap()).unwrap();
        fs::write(
            &baseline,
            r#"{"schema": 1, "name": "base", "binary": "work", "benchmarks": [
                {"id": "checksum/100", "metric": "instructions", "count": 619},
                {"id": "checksum/1000", "metric": "instructions", "count": 6019}]}"#,
        )
        .unwrap();
        let printed = |c: [u64; 2]| {
            format!(
                "checksum/100    {} instructions (exact)\nchecksum/1000   {} instructions (exact)\n",
                c[0], c[1]
            )
        };
        let regressed: Vec<&str> = if gate_code == 3 {
            BENCHMARKS.to_vec()
        } else {
            vec![]
        };
        let results = workflow
            .steps
            .iter()
            .map(|step| {
                let run = step.run.as_deref().unwrap_or("");
                let (code, stdout, stderr) = if run.contains("--save-baseline") {
                    (0, printed([619, 6019]), String::new())
                } else if run.contains("--baseline ") {
                    let stderr = format!(
                        "pmu-criterion: REGRESSED checksum/100: 619 → {} instructions (+602, +97.25%) beyond instructions=+1%\n\
pmu-criterion: REGRESSED checksum/1000: 6019 → {} instructions (+6002, +99.72%) beyond instructions=+1%\n",
                        new[0], new[1]
                    );
                    (gate_code, printed(new), if gate_code == 3 { stderr } else { String::new() })
                } else {
                    (0, String::new(), String::new())
                };
                let upload = step.uses.as_deref().is_some_and(|u| u.starts_with("actions/upload-artifact@"));
                StepResult {
                    label: step.label(),
                    ran: step.run.is_some().then_some(Ran { stdout, stderr, code: Some(code), secs: 0.0 }),
                    failed: code != 0,
                    skipped: false,
                    uploaded: if upload {
                        vec![(
                            "target/pmu-criterion/summary/work.json".to_owned(),
                            serde_json::json!({"baseline": "base", "exit_code": gate_code, "regressed": regressed}),
                        )]
                    } else {
                        vec![]
                    },
                }
            })
            .collect();
        (workflow, results)
    }

    #[test]
    fn a_run_is_checked_against_the_baseline_the_gate_and_the_summary() {
        let dir =
            std::env::temp_dir().join(format!("pmu-qemu-workflow-test-{}", std::process::id()));
        let (w, r) = fake_run(&dir, 3, [1221, 12021]);
        let verdict = check_run(&w, &r, &dir, true).unwrap();
        assert!(
            verdict.contains("REGRESSED checksum/1000: 6019 → 12021 instructions"),
            "{verdict}"
        );
        // The slower head passing the gate, or the unchanged one failing it.
        assert!(check_run(&w, &fake_run(&dir, 0, [1221, 12021]).1, &dir, true).is_err());
        assert!(check_run(&w, &fake_run(&dir, 3, [1221, 12021]).1, &dir, false).is_err());
        assert!(check_run(&w, &fake_run(&dir, 0, [619, 6019]).1, &dir, false).is_ok());
        // The summary not uploaded.
        let (w, mut r) = fake_run(&dir, 3, [1221, 12021]);
        r.last_mut().unwrap().uploaded.clear();
        assert!(check_run(&w, &r, &dir, true)
            .unwrap_err()
            .contains("did not take"));
        // A baseline that does not hold what the base printed.
        let (w, r) = fake_run(&dir, 3, [1221, 12021]);
        let file = dir.join("target/pmu-criterion/baselines/base/work.json");
        fs::write(
            &file,
            fs::read_to_string(&file).unwrap().replace("619", "620"),
        )
        .unwrap();
        assert!(check_run(&w, &r, &dir, true).unwrap_err().contains("holds"));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_gate_checks_read_words_and_counts() {
        assert_eq!(
            word_after("cargo bench -- --save-baseline base\n", "--save-baseline"),
            Some("base")
        );
        assert_eq!(word_after("cargo bench", "--save-baseline"), None);
        let out =
            "checksum/100    812 instructions (exact)\nchecksum/1000   8012 instructions (exact)\n";
        assert_eq!(counts(out), Some(vec![812, 8012]));
        assert_eq!(counts("checksum/100    812 instructions (exact)\n"), None);
    }
}
