//! `pmu-qemu PROGRAM [ARGS…]`: runs a static aarch64 Linux program inside an emulated
//! arm64 machine where the performance counters count exactly, and behaves like the
//! program: its arguments, environment, working directory, stdin, stdout, stderr and
//! exit status are the program's. Meant as a cargo runner
//! (`CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUNNER=pmu-qemu`); `--help` says more.
//!
//! The machine: `qemu-system-aarch64 -M virt -icount shift=0,align=off,sleep=off` with
//! Debian 12's arm64 kernel and a busybox initramfs ([`debian`]), the kernel's
//! `perf_user_access` on ([`guest`]), stdio over virtio-serial ports and the working
//! directory over 9p ([`qemu`]); `--profile` samples it there ([`sampler`]).

mod args;
mod debian;
mod elf;
mod guest;
mod qemu;
mod sampler;
mod snapshot;

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use args::{Command, Options};
use pmu_qemu::cpio;

/// The exit status of pmu-qemu's own failures (the guest could not be prepared or did
/// not report the program's status), as `env` and `nohup` use 125-127 for theirs.
const RUNNER_FAILED: u8 = 125;

const HELP: &str = "\
pmu-qemu — run a static aarch64 Linux program in an emulated arm64 machine whose
performance counters count exactly (QEMU -icount), as if it ran here

USAGE:
    pmu-qemu [OPTIONS] PROGRAM [ARGS…]
    pmu-qemu --prepare

As a cargo runner (.cargo/config.toml, or the environment):
    [target.aarch64-unknown-linux-musl]
    runner = \"pmu-qemu\"
    linker = \"rust-lld\"    # rustc's own; the host's cc cannot link this target
    CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUNNER=pmu-qemu \\
    CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=rust-lld \\
        cargo bench --target aarch64-unknown-linux-musl

The program sees its arguments, the environment (less PATH, which is /bin there, and
LD_*), the working directory (shared read-write over 9p at the same path), stdin,
stdout and stderr; pmu-qemu exits with its status (128+N after signal N). With one
vCPU it also sees PMU_QEMU_EXACT=1: its counts are exact (pmu-criterion then counts
each benchmark once instead of sampling). The guest
runs Debian 12's arm64 kernel with kernel.perf_user_access=1, so perf events (and
pmu-linux's Meter) read the counters with one instruction; instructions and cycles
count every instruction exactly, and cycles are instructions, not time.

The first run fetches Debian's kernel and busybox with apt (private apt state; the
host's apt is untouched) and builds an initramfs, cached in $PMU_CACHE_DIR/pmu-qemu or
~/.cache/pmu-workspace/pmu-qemu; later runs restore the
booted guest saved there (--no-snapshot boots instead).

OPTIONS (before PROGRAM; everything after PROGRAM is the program's):
    --prepare         Fetch and build the guest and save it booted, run nothing
                      (a CI cache step)
    --update          Ask apt for Debian's newest kernel even when one is cached
    --cpu MODEL       QEMU -cpu model (default max: PMUv3 with 64-bit counters;
                      cortex-a72, cortex-a53: PMUv3 with 32-bit event counters)
    --smp N           Virtual CPUs (default 1: under -icount QEMU's instruction count
                      is the machine's, so with more vCPUs a measured region can
                      include instructions another vCPU retired meanwhile; and QEMU
                      runs them all in one host thread, so more add no speed)
    --memory MIB      Guest memory (default 1024)
    --no-share        Do not share the working directory (the program starts in an
                      empty directory of the same path)
    --console         Copy the guest's kernel console to stderr
    --no-snapshot     Boot the kernel for this run instead of restoring the booted
                      guest saved in the cache (saved by the first run, per QEMU
                      version, kernel, initramfs, --cpu, --smp, --memory, --console)
    --profile N       Profile the program: a sample every N of its user-level
                      instructions (cycles:u, one per instruction under -icount)
                      with its call chain, at the same instructions on every run,
                      named by the program's ELF symbols here. Writes
                      DIR/PROGRAM.folded (folded stacks, samples x N instructions
                      each: a function's figure is exact to within N),
                      DIR/PROGRAM.svg (a flamegraph) and DIR/PROGRAM.samples (the
                      raw addresses), and prints each function's own instructions.
                      Call stacks need frame pointers (RUSTFLAGS=\"-C
                      force-frame-pointers=yes\"); a sample without them is its
                      function alone (leaf-only), as the output says. Needs the
                      share, one vCPU, and the host's rustc with the
                      aarch64-unknown-linux-musl target (to build the sampler once)
    --profile-dir DIR Where --profile writes (default pmu-qemu-profile)
    --profile-baseline FILE
                      Also draw DIR/PROGRAM.diff.svg, a differential flamegraph of
                      this profile against FILE (an earlier PROGRAM.folded)
    -h, --help        This help
    -V, --version     pmu-qemu's version

NEEDS: qemu-system-aarch64 (Debian/Ubuntu: sudo apt-get install qemu-system-arm),
apt-get, dpkg-deb and debian-archive-keyring for the first run.
";

fn main() -> ExitCode {
    let command = match args::parse(std::env::args_os().skip(1)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pmu-qemu: {e}");
            return ExitCode::from(2);
        }
    };
    let result = match command {
        Command::Help => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Command::Version => {
            println!("pmu-qemu {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Command::Prepare(options) => debian::prepare(options.update).and_then(|guest| {
            if options.snapshot {
                snapshot::ensure(&guest, &options)?;
            }
            Ok(0)
        }),
        Command::Run {
            options,
            program,
            args,
        } => run(&options, &program, &args),
    };
    match result {
        Ok(status) => ExitCode::from(status),
        Err(e) => {
            eprintln!("pmu-qemu: {e}");
            ExitCode::from(RUNNER_FAILED)
        }
    }
}

/// The program's environment: the host's, with [`EXACT_ENV`] set to `1` where the
/// guest's instruction counts are exact (one vCPU: with several, QEMU's icount count is
/// the machine's, so a region could include another vCPU's instructions: docs/qemu.md,
/// "Several vCPUs") and removed otherwise, so that the host's value never speaks for
/// the guest.
fn guest_env(
    host: impl Iterator<Item = (OsString, OsString)>,
    smp: u32,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = host.filter(|(k, _)| k != EXACT_ENV).collect();
    if smp == 1 {
        env.push((EXACT_ENV.into(), "1".into()));
    }
    env
}

/// Set to `1` in the program's environment where its instruction counts are exact:
/// pmu-criterion then measures each benchmark once (its one-shot exact mode).
const EXACT_ENV: &str = "PMU_QEMU_EXACT";

/// A file removed when dropped: the sampler's file in the user's working directory
/// goes, whatever becomes of the run.
struct Removed(PathBuf);

impl Drop for Removed {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `path` relative to the guest's `/`, as the cpio archive names it.
fn in_archive(path: &Path) -> &[u8] {
    let b = path.as_os_str().as_bytes();
    b.strip_prefix(b"/").unwrap_or(b)
}

fn run(options: &Options, program: &Path, args: &[OsString]) -> Result<u8, String> {
    if !qemu::on_path(qemu::QEMU) {
        return Err(format!(
            "{} is not installed (Debian, Ubuntu: `sudo apt-get install qemu-system-arm`)",
            qemu::QEMU
        ));
    }
    let binary = std::fs::read(program)
        .map_err(|e| format!("cannot read the program {}: {e}", program.display()))?;
    elf::check_program(&binary)
        .map_err(|why| format!("cannot run {} in the guest: {why}", program.display()))?;
    let program =
        std::fs::canonicalize(program).map_err(|e| format!("{}: {e}", program.display()))?;
    let cwd = std::env::current_dir().map_err(|e| format!("the working directory: {e}"))?;
    // The sampler writes its file into the share, which the host reads after the run.
    let profile = match options.profile {
        Some(period) => {
            if options.smp != 1 {
                return Err("--profile needs one vCPU (its counts are exact there only)".into());
            }
            if !options.share || cwd == Path::new("/") {
                return Err("--profile needs the working directory shared (not --no-share, not /): the guest writes its samples there".into());
            }
            let sampler =
                std::fs::read(sampler::build()?).map_err(|e| format!("pmu-qemu's sampler: {e}"))?;
            let file = Removed(cwd.join(format!(".pmu-qemu-profile-{}.txt", std::process::id())));
            Some((period, sampler, file))
        }
        None => None,
    };
    let guest = debian::prepare(options.update)?;

    // The share is the working directory at its own path; the program is always in the
    // run's archive (memory): at its own path, or bound over it when inside the share.
    let share: Option<PathBuf> = (options.share && cwd != Path::new("/")).then(|| cwd.clone());
    let from_share = share.as_ref().is_some_and(|s| program.starts_with(s));
    let env = guest_env(std::env::vars_os(), options.smp);
    let program_path = in_archive(&program);
    let copy: &[u8] = if from_share {
        b"pmu-qemu/program"
    } else {
        program_path
    };
    let period_text = profile
        .as_ref()
        .map(|(period, _, _)| period.to_string())
        .unwrap_or_default();
    let wrapper: Vec<&[u8]> = match &profile {
        Some((_, _, file)) => vec![
            sampler::IN_GUEST.as_bytes(),
            period_text.as_bytes(),
            file.0.as_os_str().as_bytes(),
        ],
        None => Vec::new(),
    };
    let script = guest::run_script(
        cwd.as_os_str().as_bytes(),
        env.iter().map(|(k, v)| (k.as_os_str(), v.as_os_str())),
        &wrapper,
        program.as_os_str().as_bytes(),
        args.iter().map(OsString::as_os_str),
        from_share.then_some(b"/pmu-qemu/program".as_slice()),
    );
    let share_text = share
        .as_ref()
        .map(|s| s.as_os_str().as_bytes().to_vec())
        .unwrap_or_default();
    let mut entries = vec![cpio::Entry::File {
        path: guest::RUN_SCRIPT.as_bytes(),
        mode: 0o644,
        data: &script,
    }];
    if let Some((_, sampler, _)) = &profile {
        entries.push(cpio::Entry::File {
            path: in_archive(Path::new(sampler::IN_GUEST)),
            mode: 0o755,
            data: sampler,
        });
    }
    if share.is_some() {
        entries.push(cpio::Entry::File {
            path: b"pmu-qemu/share",
            mode: 0o644,
            data: &share_text,
        });
    }
    let run_dir = qemu::RunDir::new()?;
    // A saved machine where there is one (the first run saves it); else a boot. Either
    // way the counts are the same: the restored machine is the booted one, its
    // instruction count and clock included (snapshot.rs).
    let saved = if options.snapshot {
        match snapshot::ensure(&guest, options) {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("pmu-qemu: booting, since no saved guest could be made: {e}");
                None
            }
        }
    } else {
        None
    };
    let program_dir = program.parent().unwrap_or(Path::new("/"));
    let program_name = program.file_name().unwrap_or_default().as_bytes();
    let fetch_from = if from_share {
        program.as_os_str().as_bytes().to_vec()
    } else {
        [b"/pmu-qemu/progdir/".as_slice(), program_name].concat()
    };
    let fresh_initrd = run_dir.0.join("initrd.cpio");
    let (payload, boot, share_dir) = match &saved {
        Some(s) => {
            // The restored guest copies the program from the share where it lies there,
            // else from its directory, shared read-only (guest::INIT).
            entries.push(cpio::Entry::File {
                path: b"pmu-qemu/fetch",
                mode: 0o644,
                data: &fetch_from,
            });
            entries.push(cpio::Entry::File {
                path: b"pmu-qemu/fetch-to",
                mode: 0o644,
                data: copy,
            });
            if !from_share {
                entries.push(cpio::Entry::File {
                    path: b"pmu-qemu/fetch-dir",
                    mode: 0o644,
                    data: b"",
                });
            }
            // Last: the guest takes the archive as whole only when this is there.
            entries.push(cpio::Entry::File {
                path: b"pmu-qemu/whole",
                mode: 0o644,
                data: b"",
            });
            (
                Some(cpio::archive(&entries)?),
                qemu::Boot::Restore {
                    ram: &s.ram,
                    program_dir,
                },
                Some(share.clone().unwrap_or_else(|| s.empty_share.clone())),
            )
        }
        None => {
            entries.extend(cpio::parents(copy).into_iter().map(cpio::Entry::Dir));
            entries.push(cpio::Entry::File {
                path: copy,
                mode: 0o755,
                data: &binary,
            });
            let archive = cpio::archive(&entries)?;
            let mut image = std::fs::read(&guest.initramfs)
                .map_err(|e| format!("{}: {e}", guest.initramfs.display()))?;
            image.extend(archive);
            std::fs::write(&fresh_initrd, &image)
                .map_err(|e| format!("{}: {e}", fresh_initrd.display()))?;
            (
                None,
                qemu::Boot::Fresh {
                    kernel: &guest.kernel,
                    initrd: &fresh_initrd,
                },
                share.clone(),
            )
        }
    };

    let line = qemu::command_line(options, &run_dir.0, share_dir.as_deref(), boot);
    let monitor = saved.as_ref().map(|s| qemu::restore_commands(&s.state));
    let outcome = qemu::run(
        std::ffi::OsStr::new(qemu::QEMU),
        &line,
        &run_dir.0,
        options.console,
        payload,
        monitor,
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    )?;
    match guest::parse_status(&outcome.status) {
        Some(status) => match &profile {
            Some((_, _, file)) => {
                let text = std::fs::read_to_string(&file.0).map_err(|e| {
                    format!("--profile: the guest's samples {}: {e}", file.0.display())
                })?;
                sampler::report(
                    &text,
                    &program,
                    &binary,
                    &options.profile_dir,
                    options.profile_baseline.as_deref(),
                )?;
                Ok(status.code)
            }
            None => Ok(status.code),
        },
        None => {
            let console = String::from_utf8_lossy(&outcome.console);
            let lines: Vec<&str> = console.lines().collect();
            let tail = lines[lines.len().saturating_sub(25)..].join("\n    ");
            Err(format!(
                "the guest ended without the program's exit status ({} {}).\n  QEMU: {}\n  the guest's console (last lines):\n    {tail}",
                qemu::QEMU,
                outcome.qemu,
                outcome.qemu_log.trim()
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One vCPU: PMU_QEMU_EXACT=1, whatever the host said; two: none at all.
    #[test]
    fn the_exact_variable_speaks_for_the_guest_only() {
        let host = || {
            vec![
                (OsString::from("HOME"), OsString::from("/root")),
                (OsString::from(EXACT_ENV), OsString::from("0")),
            ]
            .into_iter()
        };
        let one = guest_env(host(), 1);
        assert_eq!(
            one,
            vec![
                ("HOME".into(), "/root".into()),
                (EXACT_ENV.into(), "1".into())
            ]
        );
        assert_eq!(guest_env(host(), 2), vec![("HOME".into(), "/root".into())]);
    }
}
