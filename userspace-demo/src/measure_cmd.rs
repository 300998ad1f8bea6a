//! `pmu-demo measure`.

use clap::Args as ClapArgs;
use pmu_linux::measure::MeasureConfig;
use pmu_linux::measure::{Interrupted, Measurement};
use pmu_linux::{BackendKind, Meter, MeterBuilder};
use serde::Serialize;

use crate::report::{self, EventReport, RunReport};
use crate::workloads::{Prepared, Workload};
use crate::{progress, Failure, EXIT_NOT_ENABLED, EXIT_USAGE};

/// Events of the software fallback (what a VM without vPMU can count).
pub const SOFTWARE_EVENTS: [&str; 4] = [
    "task-clock",
    "context-switches",
    "cpu-migrations",
    "page-faults",
];

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Counter backend: `auto` uses perf when hardware events open and falls back to
    /// software events + TSC otherwise (32-bit ARM, which has no perf backend here: the
    /// direct one); `direct` needs kmod-enable-user (ARMv8, ARM1176).
    #[arg(long, value_enum, default_value = "auto")]
    backend: crate::BackendChoice,
    /// ARM1176 direct backend only: 64 sets PMCR.D, so the cycle counter (CCR) ticks
    /// every 64th cycle and wraps after about 392 s instead of 6 s at 700 MHz. Cycles
    /// are still reported in cycles (ticks × 64, resolution 64 cycles).
    #[arg(long, default_value_t = 1, value_parser = parse_cycle_divider)]
    cycle_divider: u64,
    /// Workloads to run (repeat or comma-separate): loop, fma-latency, fma-throughput,
    /// pointer-chase; default: every one this CPU can run.
    #[arg(long = "workload", alias = "kernel", value_delimiter = ',')]
    workloads: Vec<String>,
    /// Units of work per run: loop iterations, FMAs (rounded down to a multiple of 12)
    /// or loads. Default: 1 200 000 FMAs, 1 000 000 otherwise.
    #[arg(long)]
    units: Option<u64>,
    /// Pointer-chase buffer size in bytes (larger than the last-level cache gives DRAM
    /// latency).
    #[arg(long, default_value_t = 32 << 20)]
    bytes: usize,
    /// Events, comma-separated: perf names (cycles, instructions, branches,
    /// branch-misses, cache-references, cache-misses, L1-dcache-load-misses, …), raw
    /// rHEX, PMU/event=…,umask=…/ from /sys/bus/event_source/devices, or the running
    /// Arm core's own event names in any case (L1D_CACHE_REFILL, l2d_cache_wb: `pmu-demo
    /// list` shows them). The first leads the group.
    #[arg(long, value_delimiter = ',', default_value = "cycles,instructions")]
    events: Vec<String>,
    /// perf backend: open every event on its own and unpinned, so that the kernel
    /// rotates more events than there are counters through them. Each run then shows
    /// per event its time enabled and running and the scaled estimate
    /// (value x enabled / running), flagged `multiplexed` where running < enabled.
    /// Reads are read() calls (their times are the region's own).
    #[arg(long)]
    multiplex: bool,
    /// Measured runs (statistics over the clean ones).
    #[arg(long, default_value_t = 10)]
    runs: usize,
    /// Unrecorded warm-up runs before.
    #[arg(long, default_value_t = 3)]
    warmup: u32,
    /// Do not measure and subtract an empty region.
    #[arg(long)]
    no_calibrate: bool,
    /// Pin to this CPU for the measurement (direct mode: default the CPU it starts on).
    #[arg(long)]
    cpu: Option<usize>,
    /// Count in the kernel too (perf exclude_kernel = 0; needs perf_event_paranoid ≤ 1).
    #[arg(long)]
    include_kernel: bool,
    /// One JSON object on stdout instead of the tables.
    #[arg(long)]
    json: bool,
    /// Without the kernel-entry sentinel (by default a counter counting only in the
    /// kernel watches every region where the backend can have one, flagging regions
    /// the kernel entered `kernel-entry`).
    #[arg(long)]
    no_kernel_sentinel: bool,
}

/// Whether the meter's regions were watched by a kernel-entry sentinel.
#[derive(Debug, Clone, Serialize)]
struct SentinelReport {
    /// A sentinel counted at the kernel's level in every region.
    counting: bool,
    /// The meter's line: the event and how it is read, or why there is none.
    text: String,
}

/// One workload's result.
#[derive(Debug, Serialize)]
struct WorkloadReport {
    workload: &'static str,
    unit: &'static str,
    units: u64,
    /// Instructions the units retire beyond an empty run, from the workload's code.
    expected_instructions: u64,
    /// Every read was one instruction (rdpmc / mrs / direct).
    fast_read: bool,
    /// Why reads fell back to read(), if they did.
    fallback_reason: Option<String>,
    events: Vec<EventReport>,
    derived: Derived,
    runs: Vec<RunReport>,
    /// Every run was recorded (false: the measurement stopped on an error, these are
    /// the runs before it).
    complete: bool,
}

#[derive(Debug, Default, Serialize)]
struct Derived {
    ipc: Option<f64>,
    cpi: Option<f64>,
    cycles_per_unit: Option<f64>,
    units_per_cycle: Option<f64>,
    ns_per_unit: Option<f64>,
    tsc_ticks_per_unit: Option<f64>,
    /// Calibrated instructions == expected_instructions (None without an instruction
    /// count).
    instructions_exact: Option<bool>,
}

#[derive(Debug, Serialize)]
struct Output {
    /// perf, direct, or software (perf software events + TSC).
    backend: String,
    /// ARM1176 direct backend: cycles per CCR tick (1, or 64 with PMCR.D). The `cycles`
    /// values are already multiplied back to cycles; their resolution is this many.
    #[serde(skip_serializing_if = "Option::is_none")]
    cycle_divider: Option<u64>,
    /// What the demo found out about this machine on the way.
    notes: Vec<String>,
    runs: usize,
    warmup: u32,
    calibrated: bool,
    /// --multiplex: events opened one by one, unpinned.
    multiplexed_mode: bool,
    /// Whether regions were watched by a kernel-entry sentinel, once a backend was
    /// chosen.
    #[serde(skip_serializing_if = "Option::is_none")]
    sentinel: Option<SentinelReport>,
    /// The direct backend's kmod-enable-user grant; absent for the other backends.
    #[serde(skip_serializing_if = "Option::is_none")]
    grant: Option<crate::report::GrantReport>,
    results: Vec<WorkloadReport>,
    /// Why the measurement failed; the results above are what was measured before.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorReport>,
}

/// A failure as `--json` reports it.
#[derive(Debug, Serialize)]
struct ErrorReport {
    /// usage (bad input, exit status 2), not-enabled (no direct access, 3),
    /// interrupted (failed after some runs were recorded, 1) or failed (1).
    kind: &'static str,
    message: String,
    /// The exit status.
    status: u8,
}

/// What a measurement has found out so far: kept when it fails, so that the runs
/// recorded before the failure are still reported.
#[derive(Debug, Default)]
struct SoFar {
    /// perf, direct or software, once chosen.
    backend: Option<&'static str>,
    cycle_divider: Option<u64>,
    notes: Vec<String>,
    results: Vec<WorkloadReport>,
    sentinel: Option<SentinelReport>,
    grant: Option<crate::report::GrantReport>,
}

/// `--cycle-divider`: 1 or 64, the two settings of PMCR.D.
fn parse_cycle_divider(text: &str) -> Result<u64, String> {
    match text.trim() {
        "1" => Ok(1),
        "64" => Ok(64),
        other => Err(format!(
            "`{other}`: the ARM1176 cycle counter counts every cycle (1) or every 64th (64)"
        )),
    }
}

pub fn run(args: &Args) -> Result<(), Failure> {
    let mut sofar = SoFar::default();
    let outcome = measure_all(args, &mut sofar);
    let config_runs = args.runs;
    let failure = outcome.err();
    let error = failure.as_ref().map(|f| ErrorReport {
        kind: match f.status {
            EXIT_USAGE => "usage",
            EXIT_NOT_ENABLED => "not-enabled",
            _ if !sofar.results.is_empty() => "interrupted",
            _ => "failed",
        },
        message: f.message.clone(),
        status: f.status,
    });
    let out = Output {
        backend: sofar.backend.unwrap_or("none").into(),
        cycle_divider: sofar.cycle_divider,
        notes: sofar.notes,
        runs: config_runs,
        warmup: args.warmup,
        calibrated: !args.no_calibrate,
        multiplexed_mode: args.multiplex,
        sentinel: sofar.sentinel,
        grant: sofar.grant,
        results: sofar.results,
        error,
    };
    if args.json {
        // Always one JSON object on stdout: the results, with the error if there was
        // one; only the error when it came before any backend was chosen.
        let text = if out.error.is_some() && sofar.backend.is_none() {
            serde_json::to_string_pretty(&serde_json::json!({ "error": out.error }))
        } else {
            serde_json::to_string_pretty(&out)
        };
        println!("{}", text.map_err(|e| Failure::new(e.to_string()))?);
    } else if failure.is_none() || !out.results.is_empty() {
        print_human(&out);
    }
    match failure {
        Some(f) => Err(f),
        None => Ok(()),
    }
}

fn measure_all(args: &Args, sofar: &mut SoFar) -> Result<(), Failure> {
    if args.cycle_divider != 1 && !cfg!(target_arch = "arm") {
        return Err(Failure {
            message: "--cycle-divider 64 is for the ARM1176's direct backend (32-bit ARM: \
                      Raspberry Pi 1 and Zero); this CPU's cycle counter has no divider"
                .into(),
            status: EXIT_USAGE,
        });
    }
    if args.multiplex && args.backend == crate::BackendChoice::Direct {
        return Err(Failure {
            message: "--multiplex is for the perf backend (the kernel multiplexes perf \
                      events); the direct backend counts only what fits on the counters"
                .into(),
            status: EXIT_USAGE,
        });
    }
    let workloads = choose_workloads(&args.workloads)?;
    let config = MeasureConfig {
        warmup: args.warmup,
        runs: args.runs,
        calibrate: !args.no_calibrate,
    };
    if args.runs == 0 {
        return Err(Failure {
            message: "--runs must be at least 1".into(),
            status: EXIT_USAGE,
        });
    }
    let names: Vec<&str> = args.events.iter().map(String::as_str).collect();
    let mut meter = open_meter(args, &names, sofar)?;
    if args.backend == crate::BackendChoice::Perf && meter.backend() != BackendKind::Perf {
        return Err(Failure::new(format!(
            "--backend perf: the meter opened the {} backend ({})",
            meter.backend(),
            meter.why()
        )));
    }
    run_workloads(&mut meter, args, &workloads, &config, &mut sofar.results)
}

fn choose_workloads(names: &[String]) -> Result<Vec<Workload>, Failure> {
    if names.is_empty() || names.iter().any(|n| n == "all") {
        return Ok(Workload::ALL
            .into_iter()
            .filter(|k| k.unavailable().is_none())
            .collect());
    }
    names
        .iter()
        .map(|n| {
            Workload::from_name(n).ok_or_else(|| Failure {
                message: format!(
                    "unknown workload `{n}`: choose from {}",
                    Workload::ALL.map(Workload::name).join(", ")
                ),
                status: EXIT_USAGE,
            })
        })
        .collect()
}

fn default_units(workload: Workload) -> u64 {
    match workload {
        Workload::FmaLatency | Workload::FmaThroughput => 1_200_000,
        _ => 1_000_000,
    }
}

/// Measures `workload` on `meter`, the region and the empty baseline through the same
/// closure type so the calibration cancels exactly.
fn measure_workload(
    meter: &mut Meter,
    config: &MeasureConfig,
    prepared: &Prepared,
    units: u64,
) -> Result<Measurement, Box<Interrupted>> {
    let mut region = prepared.region(units);
    let mut baseline = prepared.region(0);
    let baseline: Option<&mut dyn FnMut()> = if config.calibrate {
        Some(&mut baseline)
    } else {
        None
    };
    meter
        .measure_with(config, &mut region, baseline)
        .map(|measured| measured.measurement().clone())
}

fn workload_report(
    workload: Workload,
    units: u64,
    m: &Measurement,
    multiplexed: bool,
    complete: bool,
) -> WorkloadReport {
    let (events, runs) = report::events_and_runs(m, multiplexed);
    let (fast_read, fallback_reason) = report::read_paths(m);
    let value = |name: &str| {
        events
            .iter()
            .find(|e| e.name == name)
            .and_then(|e| e.min.or(e.fallback.as_ref().and_then(|f| f.min)))
    };
    let instructions = value("instructions");
    let cycles = value("cycles").or_else(|| value("cpu-cycles"));
    let ratio = |a: Option<i64>, b: Option<i64>| match (a, b) {
        (Some(a), Some(b)) if b > 0 => Some(a as f64 / b as f64),
        _ => None,
    };
    let per_unit = |v: Option<i64>| v.filter(|_| units > 0).map(|v| v as f64 / units as f64);
    let expected = workload.instructions(units);
    let derived = Derived {
        ipc: ratio(instructions, cycles),
        cpi: ratio(cycles, instructions),
        cycles_per_unit: per_unit(cycles),
        units_per_cycle: ratio(Some(units as i64), cycles),
        ns_per_unit: per_unit(value("task-clock")),
        tsc_ticks_per_unit: per_unit(value("tsc")),
        instructions_exact: instructions.map(|i| i == expected as i64),
    };
    WorkloadReport {
        workload: workload.name(),
        unit: workload.unit(),
        units,
        expected_instructions: expected,
        fast_read,
        fallback_reason,
        events,
        derived,
        runs,
        complete,
    }
}

/// The meter for `names`: pmu-linux's [`Meter`] picks the backend (perf, the direct one
/// after kmod-enable-user, or software events and the time-stamp counter) and says why.
fn open_meter(args: &Args, names: &[&str], sofar: &mut SoFar) -> Result<Meter, Failure> {
    let usage = |e: pmu_linux::Error| {
        let failure = Failure::from(e);
        Failure {
            status: if failure.status == 1 {
                EXIT_USAGE
            } else {
                failure.status
            },
            ..failure
        }
    };
    // `choice`: the one backend asked for, or `None` for the best that works here.
    let builder = |events: &[&str], choice: Option<BackendKind>| -> Result<MeterBuilder, Failure> {
        let mut builder = Meter::builder();
        for name in events {
            builder.add_named(name).map_err(usage)?;
        }
        if let Some(kind) = choice {
            builder.backend(kind);
        }
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        {
            let mut options =
                pmu_linux::perf::Options::default().exclude_kernel(!args.include_kernel);
            if args.multiplex {
                // Each event its own unpinned group: the kernel rotates them through the
                // counters (perf stat's default). read() at both edges gives each event
                // the region's own time enabled and running; the pages' would stand still
                // between rotations.
                options = options.pinned(false).grouped(false).map_pages(false);
            }
            builder.perf_options(options);
        }
        if let Some(cpu) = args.cpu {
            builder.cpu(cpu);
        }
        builder.kernel_sentinel(!args.no_kernel_sentinel);
        #[cfg(target_arch = "arm")]
        builder.cycle_divider(if args.cycle_divider == 64 {
            pmu_armv6::CycleDivider::Every64thCycle
        } else {
            pmu_armv6::CycleDivider::EveryCycle
        });
        if choice == Some(BackendKind::Direct) || cfg!(target_arch = "arm") {
            // SAFETY: direct mode is documented (--help, README) as taking the PMU of the
            // CPU over exclusively: no perf hardware events may run there meanwhile. On
            // 32-bit ARM the direct backend is the ARM1176's (the ARMv6 build is for the
            // Raspberry Pi 1 / Zero; take_arm1176 refuses another core /proc/cpuinfo
            // names).
            unsafe { builder.program_the_pmu() };
        }
        Ok(builder)
    };
    if cfg!(target_arch = "arm") {
        if let Some(cpu) = args.cpu.filter(|&c| c != 0 && !crate::armv7_cpu()) {
            return Err(Failure {
                message: format!(
                    "--cpu {cpu}: the ARM1176 direct backend runs on CPU 0 (the Raspberry Pi 1 \
                     and Zero have one core)"
                ),
                status: EXIT_USAGE,
            });
        }
        if args.backend == crate::BackendChoice::Auto {
            // No perf backend in pmu-linux on 32-bit ARM: the meter goes to the direct
            // one; say so first.
            let why = pmu_linux::Error::Unsupported(pmu_linux::error::Unsupported::Perf);
            sofar.notes.push(format!("perf backend: {why}"));
            progress(format_args!(
                "perf backend: {why}; trying the direct backend"
            ));
        }
    }
    let choice = match args.backend {
        crate::BackendChoice::Auto => None,
        crate::BackendChoice::Perf => Some(BackendKind::Perf),
        crate::BackendChoice::Direct => Some(BackendKind::Direct),
    };
    let meter = builder(names, choice)?.build();
    let meter = match meter {
        Ok(meter) if meter.backend() == BackendKind::Software => {
            // Measure what there is: every software event the demo knows, and the
            // time-stamp counter.
            let notes = &mut sofar.notes;
            notes.push(format!("hardware events cannot be opened: {}", meter.why()));
            notes.push(
                "exact instruction and cycle counts of the same kind of workloads: `cargo \
                 xtask qemu aarch64` (QEMU, icount)"
                    .into(),
            );
            for n in notes.iter() {
                progress(n);
            }
            let mut events = SOFTWARE_EVENTS.to_vec();
            events.extend(names.iter().filter(|n| !SOFTWARE_EVENTS.contains(n)));
            let meter = builder(&events, Some(BackendKind::Software))?.build()?;
            sofar.notes.push(meter.why().to_owned());
            meter
        }
        Ok(meter) => {
            // Whether a region sees every kernel entry is printed once, from
            // `sofar.sentinel` below.
            sofar.notes.push(meter.why().to_owned());
            meter
        }
        Err(
            e @ (pmu_linux::Error::Access(pmu_linux::error::AccessError::NotEnabled)
            | pmu_linux::Error::Access(pmu_linux::error::AccessError::NoReadOnlyGrant {
                ..
            })
            | pmu_linux::Error::Access(pmu_linux::error::AccessError::GrantMissing { .. })
            | pmu_linux::Error::Access(pmu_linux::error::AccessError::ThreadGrant { .. })),
        ) => return Err(e.into()),
        Err(e) => return Err(usage(e)),
    };
    sofar.sentinel = Some(SentinelReport {
        counting: meter.sentinel().is_counting(),
        text: meter.sentinel().to_string(),
    });
    sofar.grant = meter.choice().grant.map(crate::report::GrantReport::new);
    sofar.backend = Some(match meter.backend() {
        BackendKind::Perf => "perf",
        BackendKind::Direct => "direct",
        _ => "software",
    });
    if args.multiplex {
        sofar.notes.push(
            "--multiplex: every event opened on its own, unpinned; the kernel rotates them \
             through the counters: runs where an event was off its counter are flagged \
             multiplexed, with time enabled/running and the scaled estimate"
                .into(),
        );
    }
    if cfg!(target_arch = "arm") && meter.backend() == BackendKind::Direct && !crate::armv7_cpu() {
        sofar.cycle_divider = Some(args.cycle_divider);
    }
    Ok(meter)
}

/// Measures every workload into `done`, one report each. When a measurement stops on an
/// error, the runs recorded before it are reported too (`complete: false`), and the
/// error says how far it got.
fn run_workloads(
    meter: &mut Meter,
    args: &Args,
    workloads: &[Workload],
    config: &MeasureConfig,
    done: &mut Vec<WorkloadReport>,
) -> Result<(), Failure> {
    for &workload in workloads {
        let units = workload.effective_units(args.units.unwrap_or_else(|| default_units(workload)));
        let prepared = workload.prepare(args.bytes)?;
        progress(format_args!(
            "{workload}: {units} {}s, {} warm-up + {} runs{} on {}",
            workload.unit(),
            config.warmup,
            config.runs,
            if config.calibrate {
                " (+ the same for an empty region)"
            } else {
                ""
            },
            meter.counted().join(",")
        ));
        match measure_workload(meter, config, &prepared, units) {
            Ok(m) => done.push(workload_report(workload, units, &m, args.multiplex, true)),
            Err(interrupted) => {
                let Interrupted { error, partial } = *interrupted;
                let recorded = partial.runs.len();
                if recorded > 0 || !partial.baseline.is_empty() {
                    done.push(workload_report(
                        workload,
                        units,
                        &partial,
                        args.multiplex,
                        false,
                    ));
                }
                let mut failure = Failure::from(error);
                let baseline = if config.calibrate {
                    format!(
                        " (and {} of {} empty-region runs)",
                        partial.baseline.len(),
                        config.runs
                    )
                } else {
                    String::new()
                };
                failure.message = format!(
                    "{workload}: stopped after {recorded} of {} runs{baseline}{}: {}",
                    config.runs,
                    if recorded > 0 {
                        "; the runs measured before are reported"
                    } else {
                        ""
                    },
                    failure.message
                );
                return Err(failure);
            }
        }
    }
    Ok(())
}

fn print_human(out: &Output) {
    for n in &out.notes {
        println!("note: {n}");
    }
    println!(
        "backend: {}; {} runs after {} warm-up{}",
        out.backend,
        out.runs,
        out.warmup,
        if out.calibrated {
            "; values have the empty region's cost subtracted"
        } else {
            ""
        }
    );
    if let Some(divider) = out.cycle_divider {
        println!("{}", cycle_divider_line(divider));
    }
    if let Some(grant) = &out.grant {
        println!("grant: {}", grant.text);
    }
    if let Some(sentinel) = &out.sentinel {
        println!("{}", sentinel.text);
    }
    for r in &out.results {
        println!();
        println!(
            "{}: {} {}s (code retires {} instructions beyond an empty run)",
            r.workload, r.units, r.unit, r.expected_instructions
        );
        match (&r.fallback_reason, r.fast_read) {
            (_, true) => println!("  reads: one instruction each"),
            (Some(why), false) => println!("  reads: read() system call ({why})"),
            (None, false) => println!("  reads: -"),
        }
        if !r.complete {
            println!(
                "  INCOMPLETE: the measurement stopped on an error after {} runs (below; the \
                 error follows on stderr)",
                r.runs.len()
            );
        }
        report::print_human(&r.events, &r.runs);
        let d = &r.derived;
        let mut line = Vec::new();
        if let Some(v) = d.ipc {
            line.push(format!("IPC {v:.3}"));
        }
        if let Some(v) = d.cpi {
            line.push(format!("CPI {v:.3}"));
        }
        if let Some(v) = d.cycles_per_unit {
            line.push(format!("{v:.3} cycles/{}", r.unit));
        }
        if let Some(v) = d.units_per_cycle {
            line.push(format!("{v:.3} {}s/cycle", r.unit));
        }
        if let Some(v) = d.ns_per_unit {
            line.push(format!("{v:.3} ns/{}", r.unit));
        }
        if let Some(v) = d.tsc_ticks_per_unit {
            line.push(format!("{v:.3} TSC ticks/{}", r.unit));
        }
        if let Some(exact) = d.instructions_exact {
            line.push(if exact {
                "instructions exact".to_owned()
            } else {
                "instructions differ from the code's count".to_owned()
            });
        }
        if !line.is_empty() {
            println!("  {}", line.join(", "));
        }
    }
}

/// How `measure` states the ARM1176 cycle divider in its human output.
fn cycle_divider_line(divider: u64) -> String {
    if divider == 1 {
        "cycle divider: 1 (the CCR counts every cycle; wraps after 2^32 cycles, about 6.1 s \
         at 700 MHz: flagged overflow)"
            .to_owned()
    } else {
        format!(
            "cycle divider: {divider} (PMCR.D: the CCR counts every {divider}th cycle; `cycles` \
             below are CCR ticks x {divider}, resolution {divider} cycles)"
        )
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    /// PMCR.D has two settings (ARM1176JZF-S TRM 3.2.51: every cycle, or every
    /// 64th): `--cycle-divider` takes exactly those, and the output says how the
    /// reported cycles relate to the CCR.
    #[test]
    fn cycle_divider_takes_the_two_pmcr_d_settings() {
        assert_eq!(parse_cycle_divider("1"), Ok(1));
        assert_eq!(parse_cycle_divider("64"), Ok(64));
        assert!(parse_cycle_divider("32").is_err());
        let parsed = Cli::try_parse_from(["measure", "--cycle-divider", "64"]).unwrap();
        assert_eq!(parsed.args.cycle_divider, 64);
        assert_eq!(
            Cli::try_parse_from(["measure"]).unwrap().args.cycle_divider,
            1
        );
        assert!(Cli::try_parse_from(["measure", "--cycle-divider", "0"]).is_err());
        assert!(cycle_divider_line(64).contains("CCR ticks x 64, resolution 64 cycles"));
        assert!(cycle_divider_line(1).contains("about 6.1 s at 700 MHz"));
    }

    /// Only the ARM1176 has a cycle divider: elsewhere asking for one is bad input
    /// (exit status 2), before anything is measured.
    #[cfg(not(target_arch = "arm"))]
    #[test]
    fn cycle_divider_elsewhere_is_a_usage_error() {
        let parsed = Cli::try_parse_from(["measure", "--cycle-divider", "64"]).unwrap();
        let failure = run(&parsed.args).unwrap_err();
        assert_eq!(failure.status, EXIT_USAGE);
        assert!(failure.message.contains("ARM1176"), "{}", failure.message);
    }
}
