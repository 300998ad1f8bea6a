//! `pmu-demo measure`.

use clap::Args as ClapArgs;
use pmu_linux::{measure_keeping_partial, Counters, Interrupted, MeasureConfig, Measurement};
use serde::Serialize;

use crate::kernels::{Kernel, Prepared};
use crate::report::{self, EventReport, RunReport};
use crate::{progress, BackendChoice, Failure, EXIT_NOT_ENABLED, EXIT_USAGE};

/// Events of the software fallback (what a VM without vPMU can count).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
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
    backend: BackendChoice,
    /// ARM1176 direct backend only: 64 sets PMCR.D, so the cycle counter (CCR) ticks
    /// every 64th cycle and wraps after about 392 s instead of 6 s at 700 MHz. Cycles
    /// are still reported in cycles (ticks × 64, resolution 64 cycles).
    #[arg(long, default_value_t = 1, value_parser = parse_cycle_divider)]
    cycle_divider: u64,
    /// Kernels to run (repeat or comma-separate): loop, fma-latency, fma-throughput,
    /// pointer-chase; default: every one this CPU can run.
    #[arg(long = "kernel", value_delimiter = ',')]
    kernels: Vec<String>,
    /// Units of work per run: loop iterations, FMAs (rounded down to a multiple of 12)
    /// or loads. Default: 1 200 000 FMAs (seed 001), 1 000 000 otherwise.
    #[arg(long)]
    units: Option<u64>,
    /// Pointer-chase buffer size in bytes (larger than the last-level cache gives DRAM
    /// latency).
    #[arg(long, default_value_t = 32 << 20)]
    bytes: usize,
    /// Events, comma-separated: perf names (cycles, instructions, branches,
    /// branch-misses, cache-references, cache-misses, L1-dcache-load-misses, …), raw
    /// rHEX, or PMU/event=…,umask=…/ from /sys/bus/event_source/devices. The first
    /// leads the group.
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
}

/// One kernel's result.
#[derive(Debug, Serialize)]
struct KernelReport {
    kernel: &'static str,
    unit: &'static str,
    units: u64,
    /// Instructions the units retire beyond an empty run, from the kernel's code.
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
    results: Vec<KernelReport>,
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
    results: Vec<KernelReport>,
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
    if args.multiplex && args.backend == BackendChoice::Direct {
        return Err(Failure {
            message: "--multiplex is for the perf backend (the kernel multiplexes perf \
                      events); the direct backend counts only what fits on the counters"
                .into(),
            status: EXIT_USAGE,
        });
    }
    let kernels = choose_kernels(&args.kernels)?;
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
    match args.backend {
        BackendChoice::Direct => direct::run(args, &names, &kernels, &config, sofar),
        BackendChoice::Perf | BackendChoice::Auto => perf(args, &names, &kernels, &config, sofar),
    }
}

fn choose_kernels(names: &[String]) -> Result<Vec<Kernel>, Failure> {
    if names.is_empty() || names.iter().any(|n| n == "all") {
        return Ok(Kernel::ALL
            .into_iter()
            .filter(|k| k.unavailable().is_none())
            .collect());
    }
    names
        .iter()
        .map(|n| {
            Kernel::from_name(n).ok_or_else(|| Failure {
                message: format!(
                    "unknown kernel `{n}`: choose from {}",
                    Kernel::ALL.map(Kernel::name).join(", ")
                ),
                status: EXIT_USAGE,
            })
        })
        .collect()
}

fn default_units(kernel: Kernel) -> u64 {
    match kernel {
        Kernel::FmaLatency | Kernel::FmaThroughput => 1_200_000,
        _ => 1_000_000,
    }
}

/// Measures `kernel` on `counters`, the region and the empty baseline through the same
/// closure type so the calibration cancels exactly.
fn measure_kernel(
    counters: &mut dyn Counters,
    config: &MeasureConfig,
    prepared: &Prepared,
    units: u64,
) -> Result<Measurement, Box<Interrupted>> {
    let mut region = prepared.region(units);
    if config.calibrate {
        let mut baseline = prepared.region(0);
        measure_keeping_partial(counters, config, &mut region, Some(&mut baseline))
    } else {
        measure_keeping_partial(counters, config, &mut region, None)
    }
}

fn kernel_report(
    kernel: Kernel,
    units: u64,
    m: &Measurement,
    multiplexed: bool,
    complete: bool,
) -> KernelReport {
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
    let expected = kernel.instructions(units);
    let derived = Derived {
        ipc: ratio(instructions, cycles),
        cpi: ratio(cycles, instructions),
        cycles_per_unit: per_unit(cycles),
        units_per_cycle: ratio(Some(units as i64), cycles),
        ns_per_unit: per_unit(value("task-clock")),
        tsc_ticks_per_unit: per_unit(value("tsc")),
        instructions_exact: instructions.map(|i| i == expected as i64),
    };
    KernelReport {
        kernel: kernel.name(),
        unit: kernel.unit(),
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

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn perf(
    args: &Args,
    names: &[&str],
    kernels: &[Kernel],
    config: &MeasureConfig,
    sofar: &mut SoFar,
) -> Result<(), Failure> {
    let mut options = pmu_linux::Options::default().exclude_kernel(!args.include_kernel);
    if args.multiplex {
        // Each event its own unpinned group: the kernel rotates them through the
        // counters (perf stat's default). read() at both edges gives each event the
        // region's own time enabled and running; the pages' would stand still between
        // rotations.
        options = options.pinned(false).grouped(false).map_pages(false);
    }
    let _pin = match args.cpu {
        Some(cpu) => Some(pmu_linux::sched::pin_to(cpu)?),
        None => None,
    };
    match pmu_linux::Session::open(names, options) {
        Ok(mut session) => {
            // Before any work and before the progress line: the group must fit on the
            // counters (a pinned group that does not fails only at its first read).
            session.check_fits()?;
            sofar.backend = Some("perf");
            if args.multiplex {
                sofar.notes.push(
                    "--multiplex: every event opened on its own, unpinned; the kernel rotates \
                     them through the counters: runs where an event was off its counter are \
                     flagged multiplexed, with time enabled/running and the scaled estimate"
                        .into(),
                );
            }
            session.enable()?;
            run_kernels(&mut session, args, kernels, config, &mut sofar.results)?;
            session.disable()?;
            Ok(())
        }
        Err(e) if args.backend == BackendChoice::Auto && no_hardware_counters(&e) => {
            let notes = &mut sofar.notes;
            notes.push(format!("hardware events cannot be opened: {e}"));
            notes.extend(pmu_linux::list::why_no_hardware_counters(
                &pmu_linux::Sysfs::system(),
            ));
            notes.push(format!(
                "measuring with what is available instead: perf software events ({}) and the TSC",
                SOFTWARE_EVENTS.join(", ")
            ));
            notes.push("exact instruction and cycle counts of the same kind of kernels: `cargo xtask qemu aarch64` (QEMU, icount)".into());
            for n in notes.iter() {
                progress(n);
            }
            software(args, kernels, config, options, sofar)
        }
        Err(e) => Err(Failure {
            message: e.to_string(),
            status: EXIT_USAGE,
        }),
    }
}

/// 32-bit ARM: pmu-linux has no perf backend there (no perf-event-open-sys bindings, and
/// Linux offers ARMv6 no user-space counter reads anyway), so `auto` goes to the direct
/// backend, and says so on stderr first.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn perf(
    args: &Args,
    names: &[&str],
    kernels: &[Kernel],
    config: &MeasureConfig,
    sofar: &mut SoFar,
) -> Result<(), Failure> {
    let why = pmu_linux::Error::PerfUnsupported;
    if args.backend != BackendChoice::Auto {
        return Err(Failure {
            message: why.to_string(),
            status: EXIT_USAGE,
        });
    }
    sofar.notes.push(format!("perf backend: {why}"));
    progress(format_args!(
        "perf backend: {why}; trying the direct backend"
    ));
    direct::run(args, names, kernels, config, sofar)
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn no_hardware_counters(e: &pmu_linux::Error) -> bool {
    matches!(
        e,
        pmu_linux::Error::Open {
            cause: pmu_linux::OpenError::NotSupported {
                needs_cpu_pmu: true,
                cpu_pmu_present: false,
                ..
            },
            ..
        }
    )
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn software(
    args: &Args,
    kernels: &[Kernel],
    config: &MeasureConfig,
    options: pmu_linux::Options,
    sofar: &mut SoFar,
) -> Result<(), Failure> {
    let mut session = pmu_linux::Session::open(&SOFTWARE_EVENTS, options)?;
    sofar.backend = Some("software");
    session.enable()?;
    run_kernels(&mut session, args, kernels, config, &mut sofar.results)?;
    session.disable()?;
    if crate::tsc::TscMeter::available() {
        let mut tsc = crate::tsc::TscMeter::default();
        let mut tsc_results = Vec::new();
        run_kernels(&mut tsc, args, kernels, config, &mut tsc_results)?;
        for (r, t) in sofar.results.iter_mut().zip(tsc_results) {
            r.events.extend(t.events);
            r.derived.tsc_ticks_per_unit = t.derived.tsc_ticks_per_unit;
            for (run, trun) in r.runs.iter_mut().zip(t.runs) {
                run.values.extend(trun.values);
            }
        }
    }
    Ok(())
}

/// Measures every kernel into `done`, one report each. When a measurement stops on an
/// error, the runs recorded before it are reported too (`complete: false`), and the
/// error says how far it got.
fn run_kernels(
    counters: &mut dyn Counters,
    args: &Args,
    kernels: &[Kernel],
    config: &MeasureConfig,
    done: &mut Vec<KernelReport>,
) -> Result<(), Failure> {
    for &kernel in kernels {
        let units = kernel.effective_units(args.units.unwrap_or_else(|| default_units(kernel)));
        let prepared = kernel.prepare(args.bytes)?;
        progress(format_args!(
            "{kernel}: {units} {}s, {} warm-up + {} runs{} on {}",
            kernel.unit(),
            config.warmup,
            config.runs,
            if config.calibrate {
                " (+ the same for an empty region)"
            } else {
                ""
            },
            counters.names().join(",")
        ));
        match measure_kernel(counters, config, &prepared, units) {
            Ok(m) => done.push(kernel_report(kernel, units, &m, args.multiplex, true)),
            Err(interrupted) => {
                let Interrupted { error, partial } = *interrupted;
                let recorded = partial.runs.len();
                if recorded > 0 || !partial.baseline.is_empty() {
                    done.push(kernel_report(
                        kernel,
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
                    "{kernel}: stopped after {recorded} of {} runs{baseline}{}: {}",
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
    for r in &out.results {
        println!();
        println!(
            "{}: {} {}s (code retires {} instructions beyond an empty run)",
            r.kernel, r.units, r.unit, r.expected_instructions
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

mod direct {
    use super::*;

    /// Counters for `names` from `pool` (counting in `filter`'s levels), zeroed, a
    /// meter over them (its cycle counter, `Slot::Fixed(0)`, scaled by `cycle_scale`
    /// when given), then the kernels measured between enable and disable.
    #[cfg(any(target_arch = "aarch64", target_arch = "arm"))]
    #[allow(clippy::too_many_arguments)]
    fn measure<P: pmu_core::Pmu, A: pmu_linux::direct::AccessCheck + Copy>(
        pool: &pmu_core::CounterPool<P>,
        names: &[&str],
        filter: pmu_core::PrivilegeFilter,
        access: A,
        cycle_scale: Option<u64>,
        args: &Args,
        kernels: &[Kernel],
        config: &MeasureConfig,
        sofar: &mut SoFar,
    ) -> Result<(), Failure> {
        let counters = pmu_linux::direct::allocate(pool, names, filter)?;
        for c in &counters {
            c.reset();
        }
        let mut meter = pmu_linux::DirectMeter::new(
            &counters,
            names.iter().map(|s| (*s).to_owned()).collect(),
            access,
        )?;
        if let Some(scale) = cycle_scale {
            for (i, c) in counters.iter().enumerate() {
                if c.slot() == pmu_core::Slot::Fixed(0) {
                    meter = meter.scaled(i, scale)?;
                }
            }
        }
        sofar.backend = Some("direct");
        meter.enable()?;
        if let Err(failure) = run_kernels(&mut meter, args, kernels, config, &mut sofar.results) {
            if !access.granted() {
                // The grant is gone (perf started the PMU on this CPU, or the module was
                // unloaded): from here every PMU register access traps (SIGILL), the
                // counters' release in their drop included, and the kernel owns and
                // reprograms this CPU's PMU anyway. Leave them as they are, so that the
                // runs measured before are still reported.
                drop(meter);
                std::mem::forget(counters);
            }
            return Err(failure);
        }
        meter.disable()?;
        Ok(())
    }

    #[cfg(target_arch = "aarch64")]
    pub fn run(
        args: &Args,
        names: &[&str],
        kernels: &[Kernel],
        config: &MeasureConfig,
        sofar: &mut SoFar,
    ) -> Result<(), Failure> {
        use pmu_armv8::{PmuOptions, PmuVersion};
        use pmu_core::{CounterPool, PrivilegeFilter};
        use pmu_linux::direct::armv8::Pmuserenr;
        // The CPU the demo runs on (taskset picks it), unless --cpu says otherwise.
        let cpu = args
            .cpu
            .or_else(|| pmu_linux::sched::current_cpu().map(|c| c as usize))
            .unwrap_or(0);
        // SAFETY: direct mode is documented (--help, README) as taking the PMU of the CPU
        // over exclusively: no perf hardware events may run there meanwhile. EL0 cannot
        // read PMUVer, so only the PMUv3 baseline is assumed.
        let taken = unsafe {
            pmu_linux::direct::armv8::take_armv8(cpu, PmuVersion::PmuV3, PmuOptions::new())
        };
        sofar
            .notes
            .push(format!("direct access on CPU {cpu}, counting EL0 only"));
        match taken {
            Ok((_pin, pmu)) => {
                let pool = CounterPool::new(pmu);
                sofar.notes.push(
                    "grant: read and program (EN): the demo programs the counters itself".into(),
                );
                measure(
                    &pool,
                    names,
                    PrivilegeFilter::USER,
                    Pmuserenr,
                    None,
                    args,
                    kernels,
                    config,
                    sofar,
                )
            }
            // The module is loaded without EN: its read-only grant, on the counters it
            // runs (a read probe that traps there means perf revoked the grant).
            Err(pmu_linux::Error::ModuleGrantMissing {
                cause: pmu_linux::GrantMissing::NoProgrammingAccess { .. },
            }) => {
                let (_pin, pmu, layout) = pmu_linux::direct::armv8::take_granted(cpu)?;
                let access = pmu_linux::direct::armv8::PmuserenrRead::for_layout(pmu.layout());
                let pool = CounterPool::new(pmu);
                let counters = pmu_linux::direct::allocate_granted(&pool, names, &layout)?;
                let mut meter = pmu_linux::DirectMeter::new(
                    &counters,
                    names.iter().map(|s| (*s).to_owned()).collect(),
                    access,
                )?;
                sofar.notes.push(format!(
                    "grant: read-only (ER|CR): the module's counters {layout}, event counters \
                     read as 32 bits (no overflow flags without EN: a region must count fewer \
                     than 2^32 events)"
                ));
                sofar.backend = Some("direct");
                meter.enable()?;
                run_kernels(&mut meter, args, kernels, config, &mut sofar.results)?;
                meter.disable()?;
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// ARMv7 and later under a 32-bit kernel (Raspberry Pi 2/3/4/5) after
    /// kmod-enable-user's ARMv7 flavour set PMUSERENR.EN (`el0_programming=1`): the demo
    /// programs the counters itself, PL0 only (pmu-linux `direct::aarch32`; the ARMv7
    /// build only).
    #[cfg(all(target_arch = "arm", target_feature = "v7"))]
    fn run_aarch32(
        args: &Args,
        names: &[&str],
        kernels: &[Kernel],
        config: &MeasureConfig,
        sofar: &mut SoFar,
    ) -> Result<(), Failure> {
        use pmu_linux::direct::aarch32;
        let cpu = args
            .cpu
            .or_else(|| pmu_linux::sched::current_cpu().map(|c| c as usize))
            .unwrap_or(0);
        // SAFETY: direct mode is documented (--help, README) as taking the PMU of the CPU
        // over exclusively: no perf hardware events may run there meanwhile.
        let (_pin, pmu) = unsafe { aarch32::take_pl0(cpu) }?;
        let pool = pmu_core::CounterPool::new(pmu);
        sofar.notes.extend([
            format!("direct access on CPU {cpu} (ARMv7 PMU, PMUSERENR.EN), counting PL0 only"),
            "grant: read and program (EN): the demo programs the counters itself".into(),
        ]);
        measure(
            &pool,
            names,
            pmu_core::PrivilegeFilter::USER,
            aarch32::PmuserenrEn,
            None,
            args,
            kernels,
            config,
            sofar,
        )
    }

    /// ARM1176 (Raspberry Pi 1 / Zero) after kmod-enable-user set SUNAVCR.V: CCR for
    /// `cycles`, CR0/CR1 for two more events, every mode counted (no privilege filter).
    /// In the ARMv7 build, an ARMv7 or later CPU goes to `run_aarch32`.
    #[cfg(target_arch = "arm")]
    pub fn run(
        args: &Args,
        names: &[&str],
        kernels: &[Kernel],
        config: &MeasureConfig,
        sofar: &mut SoFar,
    ) -> Result<(), Failure> {
        use pmu_armv6::CycleDivider;
        use pmu_core::{CounterPool, PrivilegeFilter};
        use pmu_linux::direct::arm1176;
        #[cfg(target_feature = "v7")]
        if pmu_linux::direct::aarch32::is_armv7_cpu() {
            return run_aarch32(args, names, kernels, config, sofar);
        }
        if let Some(cpu) = args.cpu.filter(|&c| c != 0) {
            return Err(Failure {
                message: format!(
                    "--cpu {cpu}: the ARM1176 direct backend runs on CPU 0 (the Raspberry Pi 1 \
                     and Zero have one core)"
                ),
                status: crate::EXIT_USAGE,
            });
        }
        let divider = if args.cycle_divider == 64 {
            CycleDivider::Every64thCycle
        } else {
            CycleDivider::EveryCycle
        };
        // SAFETY: direct mode is documented (--help, README) as taking the PMU over
        // exclusively: no perf hardware events meanwhile. The CPU is an ARM1176:
        // take_arm1176 refuses a core /proc/cpuinfo names otherwise, and the README
        // gives the ARMv6 build for the Raspberry Pi 1 / Zero only.
        let (_pin, pmu) = unsafe { arm1176::take_arm1176(divider) }?;
        let pool = CounterPool::new(pmu);
        // The CCR (Slot::Fixed(0)) counts every 64th cycle with the divider: its ticks
        // are reported in cycles.
        sofar.cycle_divider = Some(divider.cycles_per_tick());
        sofar.notes.extend([
            "direct access to the ARM1176 PMU on CPU 0 (SUNAVCR.V from kmod-enable-user)".into(),
            "the ARM1176 has no privilege filter: kernel and other processes' work inside \
             a region is counted too (context switches are flagged)"
                .into(),
        ]);
        measure(
            &pool,
            names,
            PrivilegeFilter::ALL,
            pmu_linux::Unchecked,
            Some(divider.cycles_per_tick()),
            args,
            kernels,
            config,
            sofar,
        )
    }

    #[cfg(not(any(target_arch = "aarch64", target_arch = "arm")))]
    pub fn run(
        _: &Args,
        _: &[&str],
        _: &[Kernel],
        _: &MeasureConfig,
        _: &mut SoFar,
    ) -> Result<(), Failure> {
        Err(pmu_linux::direct::probe()
            .err()
            .map(Failure::from)
            .unwrap_or_else(|| {
                Failure::new(
                    "the direct backend is built for aarch64 and 32-bit ARM only in this demo",
                )
            }))
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

    /// PMCR.D has two settings (ARM1176 TRM 3.2.51; seed 004: every cycle, or every
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
