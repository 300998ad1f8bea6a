//! `pmu-demo`: measure code regions with hardware performance counters from Linux user
//! space, and say for every run whether the number can be trusted.
//!
//! Subcommands: `list` (backends, PMUs, events, and why what is missing is missing),
//! `measure` (built-in workloads with chosen events, warm-up + N runs, min/median,
//! IPC/CPI, per-run hazards, `--json`), `hazards` (forces a context switch, a migration
//! and, in direct mode, an overflow, and shows each flagged), `bench` (what each read
//! path costs), `spe` (Arm SPE sampling filters from intent, checked against capabilities,
//! as registers and a perf event; `spe decode` for raw SPE buffers), `stat` (a command of
//! the user's own, its threads and children, counted like `perf stat`).

mod bench_cmd;
mod event_names;
mod hazards_cmd;
mod list_cmd;
mod measure_cmd;
mod report;
mod spe_cmd;
mod stat_cmd;
mod timing;
mod workloads;

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

/// Exit status when direct user access to the PMU is not enabled (the kernel module is
/// not loaded): scripts tell it apart from other failures.
pub const EXIT_NOT_ENABLED: u8 = 3;
/// Exit status for bad command-line input or an event that cannot be opened.
pub const EXIT_USAGE: u8 = 2;

#[derive(Parser, Debug)]
#[command(
    name = "pmu-demo",
    version,
    about = "Count hardware events of a code region precisely, and flag every run that cannot be trusted",
    long_about = "Count hardware events of a code region precisely, and flag every run that cannot be trusted.

Two ways to reach the counters:
  perf    perf_event_open + the metadata page: one-instruction reads (rdpmc on x86_64,
          mrs PMEVCNTR<n>_EL0 on arm64) where the kernel allows them, read() otherwise
          (flagged syscall-fallback). arm64 needs `sysctl kernel.perf_user_access=1`.
  direct  after loading kmod-enable-user (ARMv8, ARM1176): the demo programs and reads
          the counters itself. The ARMv6 build (Raspberry Pi 1 / Zero) has only this
          one; its --cycle-divider 64 makes the cycle counter wrap after ~392 s, not ~6 s.

Every run of a region carries its hazards: overflow, context-switch, cpu-migration,
multiplexed, not-scheduled, syscall-fallback, user-access-revoked. Statistics (min,
median) are taken over clean runs only; runs with hazards are listed, never mixed in.

A machine without hardware counters (a VM without vPMU, like many CI machines) still
runs: the demo says why there are none, measures with software events and the TSC,
and points to the exact measurement in QEMU (`cargo xtask qemu aarch64`).",
    after_help = "Examples:
  pmu-demo list
  pmu-demo measure --workload fma-latency --events cycles,instructions
  pmu-demo measure --workload loop --units 1000 --json
  pmu-demo measure --backend direct --workload loop --units 1000 --events instructions,cycles
  pmu-demo hazards
  pmu-demo bench
  pmu-demo spe --profile spev1p4-16bit --loads --min-latency 120 --event llc-miss --interval 4096
  pmu-demo spe decode spe-buffer.bin
  pmu-demo stat -e instructions:u,cycles:u -- ./my-program"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Backends available here and why not the others, PMUs and their events.
    List(list_cmd::Args),
    /// Measure built-in workloads: warm-up + N runs, min/median, IPC/CPI, hazards per run.
    Measure(measure_cmd::Args),
    /// Force a context switch, a migration and (direct mode) an overflow inside a region,
    /// and show each one flagged.
    Hazards(hazards_cmd::Args),
    /// What one fast read, one read() fallback and one whole region measurement cost.
    Bench(bench_cmd::Args),
    /// Arm SPE: sampling-filter registers and the perf event from what you want to sample,
    /// checked against an implementation's capabilities; `spe decode FILE` for raw buffers.
    Spe(spe_cmd::Args),
    /// Run a command and count it, its threads and children, like `perf stat`; exits
    /// with the command's status.
    #[command(long_about = stat_cmd::LONG_ABOUT, after_help = stat_cmd::AFTER_HELP)]
    Stat(stat_cmd::Args),
}

/// Which counter backend to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackendChoice {
    /// perf where hardware events open, else the software fallback; on 32-bit ARM
    /// (no perf backend here) the direct one.
    Auto,
    /// perf_event_open.
    Perf,
    /// Direct register access after kmod-enable-user.
    Direct,
}

/// Gives SIGPIPE back its default action, as C command-line tools have it: then
/// `pmu-demo list | head` ends quietly when `head` closes the pipe. Rust's runtime
/// ignores SIGPIPE, so the write fails with EPIPE instead, and `println!` panics on that
/// (exit status 101 and a panic message).
fn default_sigpipe() {
    // SAFETY: runs first in `main`, before any other thread exists; SIG_DFL installs no
    // handler code, and nothing in this program relies on SIGPIPE being ignored (it
    // opens no sockets).
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// The part of `--events` help that depends on the machine: a `<pmu>/event=…/` and a
/// raw example for its CPU PMU (the name sysfs registers, `armv8_pmuv3_0`, `cpu`, …;
/// retired instructions in its encoding).
pub fn events_example() -> String {
    let example = event_names::pmu_event_example(&pmu_linux::machine::Sysfs::system());
    let pmu_event = if example.registered {
        format!("{} (retired instructions)", example.event)
    } else {
        format!(
            "{} (retired instructions, where the kernel registers that PMU; this machine \
             registers no CPU PMU)",
            example.event
        )
    };
    format!(
        "Examples here: {pmu_event}, or raw {}; `pmu-demo list` shows the PMUs and what \
         this machine counts.",
        example.raw
    )
}

/// The command line, with the help that depends on the machine filled in at run time.
fn command() -> clap::Command {
    use clap::CommandFactory;
    let with_example = |arg: clap::Arg| {
        let base = arg.get_help().map(ToString::to_string).unwrap_or_default();
        // clap drops the doc comment's final period.
        arg.help(format!("{base}. {}", events_example()))
    };
    Cli::command()
        .mut_subcommand("measure", |c| c.mut_arg("events", with_example))
        .mut_subcommand("hazards", |c| c.mut_arg("events", with_example))
}

fn main() -> ExitCode {
    default_sigpipe();
    let cli = {
        use clap::FromArgMatches;
        Cli::from_arg_matches(&command().get_matches()).unwrap_or_else(|e| e.exit())
    };
    let result = match cli.command {
        Command::List(args) => list_cmd::run(&args),
        Command::Measure(args) => measure_cmd::run(&args),
        Command::Hazards(args) => hazards_cmd::run(&args),
        Command::Bench(args) => bench_cmd::run(&args),
        Command::Spe(args) => spe_cmd::run(&args),
        Command::Stat(args) => match stat_cmd::run(&args) {
            Ok(status) => return ExitCode::from(status),
            Err(failure) => Err(failure),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("pmu-demo: {}", failure.message);
            ExitCode::from(failure.status)
        }
    }
}

/// A failure: what to print and the exit status.
#[derive(Debug)]
pub struct Failure {
    /// The message, saying what to do.
    pub message: String,
    /// The exit status.
    pub status: u8,
}

/// Whether the demo runs on an ARMv7 or later CPU under a 32-bit kernel (its ARMv7 build:
/// pmu-linux's direct backend is then the ARMv7 one, one per CPU, no cycle divider),
/// not an ARM1176: the first core's MIDR as Linux lists it
/// ([`pmu_linux::machine::Cores`]), ARM1176 by implementer and part number
/// (`pmu_armv6::user_enable::is_arm1176`). A machine whose cores are not listed (no
/// MIDR in /proc/cpuinfo) counts as an ARM1176, as the library's choice does.
pub(crate) fn armv7_cpu() -> bool {
    #[cfg(all(target_arch = "arm", target_feature = "v7"))]
    {
        pmu_linux::machine::Sysfs::system()
            .cores()
            .kinds()
            .first()
            .is_some_and(|core| !pmu_armv6::user_enable::is_arm1176(core.midr))
    }
    #[cfg(not(all(target_arch = "arm", target_feature = "v7")))]
    {
        false
    }
}

impl From<pmu_linux::Error> for Failure {
    fn from(e: pmu_linux::Error) -> Self {
        use pmu_linux::pmu_core::Error as Core;
        use pmu_linux::Error as E;
        let status = match e {
            E::Access(pmu_linux::error::AccessError::NotEnabled)
            | E::Access(pmu_linux::error::AccessError::NoReadOnlyGrant { .. })
            | E::Access(pmu_linux::error::AccessError::GrantMissing { .. })
            | E::Access(pmu_linux::error::AccessError::ThreadGrant { .. }) => EXIT_NOT_ENABLED,
            // Asking for more than the counters hold is bad input, found before any work.
            E::Group(pmu_linux::error::GroupError::DoesNotFit { .. })
            | E::Pmu(pmu_linux::error::PmuError::Core(
                Core::NoFreeCounter { .. }
                | Core::EventNotImplemented { .. }
                | Core::EventNotEncodable { .. }
                | Core::RawEventOutOfRange { .. },
            )) => EXIT_USAGE,
            _ => 1,
        };
        Failure {
            message: format!("{e}{}", cli_hint(&e)),
            status,
        }
    }
}

/// What this program's command line offers for `e`, after the library's message (which
/// speaks of backends and options, not of flags).
fn cli_hint(e: &pmu_linux::Error) -> &'static str {
    use pmu_linux::error::GrantMissing;
    use pmu_linux::Error as E;
    match e {
        E::Access(pmu_linux::error::AccessError::Revoked)
        | E::Access(pmu_linux::error::AccessError::ReadTrapped { .. })
        | E::Access(pmu_linux::error::AccessError::ThreadGrant { .. })
        | E::Access(pmu_linux::error::AccessError::GrantMissing {
            cause:
                GrantMissing::RevokedByPerf { .. }
                | GrantMissing::PerfPerCounterGrant { .. }
                | GrantMissing::NoProgrammingAccess { .. },
        }) => " (pmu-demo: --backend perf)",
        E::Group(pmu_linux::error::GroupError::DoesNotFit { .. }) => {
            " (pmu-demo: measure --multiplex)"
        }
        _ => "",
    }
}

impl From<workloads::WorkloadError> for Failure {
    fn from(e: workloads::WorkloadError) -> Self {
        Failure {
            message: e.to_string(),
            status: EXIT_USAGE,
        }
    }
}

impl Failure {
    /// A failure with status 1.
    pub fn new(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            status: 1,
        }
    }
}

/// Progress for anything slow, on stderr so `--json` output stays clean.
pub fn progress(line: impl std::fmt::Display) {
    eprintln!("... {line}");
}

#[cfg(test)]
mod tests {
    use pmu_linux::error::GrantMissing;
    use pmu_linux::Error;

    use super::Failure;

    /// The library's messages name backends, not flags; the demo adds the flag that
    /// does what the message advises.
    #[test]
    fn failures_add_the_demo_flag() {
        let revoked = Failure::from(Error::Access(pmu_linux::error::AccessError::GrantMissing {
            cause: GrantMissing::RevokedByPerf { regrant: true },
        }));
        assert!(
            revoked
                .message
                .ends_with("or use the perf backend (pmu-demo: --backend perf)"),
            "{}",
            revoked.message
        );
        assert_eq!(revoked.status, super::EXIT_NOT_ENABLED);
        let crowded = Failure::from(Error::Group(pmu_linux::error::GroupError::DoesNotFit {
            events: 8,
            fit: 7,
        }));
        assert!(
            crowded.message.ends_with("(pmu-demo: measure --multiplex)"),
            "{}",
            crowded.message
        );
        let plain = Failure::from(Error::Group(pmu_linux::error::GroupError::NoEvents));
        assert_eq!(plain.message, "no events given");
    }
}
