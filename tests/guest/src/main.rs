//! `pmu-guest`: the experiments the QEMU end-to-end runs execute inside their guests,
//! apart from the product (`pmu-demo` holds only what users run). Each subcommand
//! prints its findings as `RESULT <scenario> key=value …` lines through [`result!`];
//! the host side (tests/tests/kernel_*.rs, `cargo xtask bench`, `cargo xtask hazards`)
//! parses them.
//!
//! - `read-costs`: what each read path costs in instructions (`cargo xtask bench`);
//! - `hazard-stats`: injected disturbances and how many were flagged (`cargo xtask
//!   hazards`);
//! - `region-check`: the direct backend's syscall-free region and counter handles;
//! - `sentinel-check`: the perf backend's kernel-entry sentinel;
//! - `hybrid`: every core PMU of a heterogeneous machine;
//! - `multiplex-now`: multiplexed events read through their pages;
//! - `library-grant`: pmu-linux under kmod-enable-user's per-thread grant: the granted thread's exact
//!   count, a sibling thread without the grant flagged instead of killed.

mod hazard_stats;
mod hybrid;
mod library_grant;
mod multiplex_now;
mod read_costs;
mod region_check;
mod sentinel_check;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The one writer of `RESULT` lines: `result!("scenario key={} …", value)` prints
/// `RESULT scenario key=… …` on stdout, one line, flushed with the line (stdout to a
/// pipe is line-buffered by `println!`'s lock only per call: one call per line keeps
/// a line whole).
#[macro_export]
macro_rules! result {
    ($($arg:tt)*) => {
        ::std::println!("RESULT {}", ::std::format_args!($($arg)*))
    };
}

#[derive(Parser, Debug)]
#[command(
    name = "pmu-guest",
    about = "The guest rigs of the QEMU end-to-end runs (RESULT lines for the host's tests)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Read-path costs in instructions (`cargo xtask bench`; `--measuring cycles` on
    /// real hardware: `cargo xtask hw-check`).
    ReadCosts(read_costs::Args),
    /// Injected-disturbance statistics (`cargo xtask hazards`).
    HazardStats(hazard_stats::Args),
    /// The direct backend's syscall-free region and counter handles.
    RegionCheck(region_check::Args),
    /// The perf backend's kernel-entry sentinel: `sentinel-check getpid|fault|quiet|compare
    /// N [as-nobody]`.
    SentinelCheck(Passed),
    /// Every core PMU of a heterogeneous machine: `hybrid [--units N] [--tag NAME]
    /// [--only-pinned]`.
    Hybrid(Passed),
    /// Multiplexed events read through their pages: `multiplex-now [EVENTS [ITERATIONS]]`.
    MultiplexNow(Passed),
    /// kmod-enable-user's per-thread grant: the owner's exact count, a sibling thread
    /// without the grant flagged, not killed.
    LibraryGrant(library_grant::Args),
}

/// The arguments of a subcommand that parses its own.
#[derive(clap::Args, Debug)]
struct Passed {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

impl Passed {
    /// `name` then the arguments, as the subcommand's `argv`.
    fn argv(self, name: &str) -> Vec<String> {
        std::iter::once(name.to_owned()).chain(self.args).collect()
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::ReadCosts(args) => read_costs::run(&args),
        Command::HazardStats(args) => hazard_stats::run(&args),
        Command::RegionCheck(args) => region_check::run(&args),
        Command::SentinelCheck(p) => return sentinel_check::main(&p.argv("sentinel-check")),
        Command::Hybrid(p) => return hybrid::main(&p.argv("hybrid")),
        Command::MultiplexNow(p) => return multiplex_now::main(&p.argv("multiplex-now")),
        Command::LibraryGrant(args) => library_grant::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("pmu-guest: {}", failure.message);
            ExitCode::from(failure.status)
        }
    }
}

/// Exit status when direct user access to the PMU is not enabled (the kernel module is
/// not loaded), as `pmu-demo`'s.
const EXIT_NOT_ENABLED: u8 = 3;

/// A failure: what to print and the exit status.
#[derive(Debug)]
pub struct Failure {
    /// The message.
    pub message: String,
    /// The exit status.
    pub status: u8,
}

impl From<pmu_linux::Error> for Failure {
    fn from(e: pmu_linux::Error) -> Self {
        use pmu_linux::Error as E;
        let status = match e {
            E::Access(pmu_linux::error::AccessError::NotEnabled)
            | E::Access(pmu_linux::error::AccessError::GrantMissing { .. }) => EXIT_NOT_ENABLED,
            _ => 1,
        };
        Failure {
            message: e.to_string(),
            status,
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

/// Progress for anything slow, on stderr (stdout carries the RESULT lines).
pub fn progress(line: impl std::fmt::Display) {
    eprintln!("... {line}");
}

/// The names of the hazards in `h`, in `Hazards::NAMES` order.
pub fn hazard_names(h: pmu_core::Hazards) -> Vec<&'static str> {
    pmu_core::Hazards::NAMES
        .iter()
        .filter(|(flag, _)| h.contains(*flag))
        .map(|(_, name)| *name)
        .collect()
}
