//! `pmu-demo spe`: Arm SPE sampling filters from the user's intent, and the decoder for
//! perf.data files and raw SPE buffers.
//!
//! `pmu-demo spe [intent flags] [capabilities]` (the default action) turns "loads with at least
//! 120 cycles latency that missed the last level cache, one in 4096" into the register values
//! (each field explained), the Linux `arm_spe` perf event, and every error and warning the
//! `pmu_armv8::spe` checks find for the given capabilities. `pmu-demo spe decode FILE` prints
//! the records of a perf.data file or a raw SPE buffer.
//!
//! Everything here is pure computation over `pmu_armv8::spe`, so it runs on any host; only the
//! capabilities "of this machine" come from the running kernel (its sysfs `arm_spe` PMU).

mod configure;
mod decode;
mod names;

use clap::{Args as ClapArgs, Subcommand};

use crate::Failure;

pub use configure::ConfigArgs;
pub use decode::DecodeArgs;

#[derive(ClapArgs, Debug)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Examples:
  pmu-demo spe --profile spev1p4-16bit --loads --min-latency 120 --event llc-miss --interval 4096
  pmu-demo spe --kernel 6.12 --profile spev1p4-16bit --loads --event llc-miss
  pmu-demo spe --kernel 7.3 --profile spev1p4-eft-fds --stores --simd --all-types --data-source 0,3
  pmu-demo spe --profile spev1p1-12bit --branches --event mispredicted
  pmu-demo spe --pmsidr 0x26447 --pmsver 3 --branches --exclude-event mispredicted --json
  pmu-demo spe decode perf.data --loads --min-latency 120 --event llc-miss
  pmu-demo spe decode spe-buffer.bin
  pmu-demo spe decode --hex record.hex --packets

Without a subcommand: state the intent, and where the capabilities come from (--profile,
--pmsidr/--pmsver, or else this machine's arm_spe PMU in sysfs). The output lists the
register values in programming order with every field explained, the perf event
(attr.config…config4 and the `perf record -e arm_spe_0/…/` string) under one kernel's
arm_spe rules, and each error (with what to change) or warning.

Kernels: --kernel 6.12 or 7.3 says whose drivers/perf/arm_spe_pmu.c rules the perf event
follows; without it, the running kernel's (uname release) where it is one of these, else the
newest (7.3); the output names the choice. Linux 7.3 adds the SIMD/floating-point type
filters and the type masks (--simd, --float, --all-types; FEAT_SPE_EFT), the data source
filter (--data-source; FEAT_SPE_FDS) and checks event filters against what the CPU's
PMSEVFR_EL1 keeps (sysfs caps/event_filter), so e.g. llc-miss reaches the kernel on
FEAT_SPEv1p4; Linux 6.12 refuses event bits by SPE version and has no EFT/FDS terms.

Exit status: 0 the configuration is valid (warnings allowed, and also when only the perf
event cannot express it: said under the perf event); 2 it has errors, the input is
malformed, or there are no capabilities to check against."
)]
pub struct Args {
    #[command(subcommand)]
    action: Option<Action>,
    #[command(flatten)]
    config: ConfigArgs,
}

#[derive(Subcommand, Debug)]
enum Action {
    /// Print the records (or packets) of a perf.data file from `perf record -e arm_spe_0//`
    /// (every CPU's AUX data) or of a raw SPE buffer, optionally filtered after the fact.
    Decode(DecodeArgs),
}

pub fn run(args: &Args) -> Result<(), Failure> {
    match &args.action {
        Some(Action::Decode(decode_args)) => decode::run(decode_args),
        None => configure::run(&args.config),
    }
}
