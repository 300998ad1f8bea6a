//! `pmu-demo measure`.

use clap::Args as ClapArgs;
use pmu_linux::{measure, measure_with_baseline, Counters, MeasureConfig, Measurement};
use serde::Serialize;

use crate::kernels::{Kernel, Prepared};
use crate::report::{self, EventReport, RunReport};
use crate::{progress, BackendChoice, Failure, EXIT_USAGE};

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
    /// rHEX (r00c0), or PMU/event=…,umask=…/ from sysfs (cpu/event=0x3c/). The first
    /// leads the group.
    #[arg(long, value_delimiter = ',', default_value = "cycles,instructions")]
    events: Vec<String>,
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
    if args.cycle_divider != 1 && !cfg!(target_arch = "arm") {
        return Err(Failure {
            message: "--cycle-divider 64 is for the ARM1176's direct backend (32-bit ARM: \
                      Raspberry Pi 1 and Zero); this CPU's cycle counter has no divider"
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
    let mut notes = Vec::new();
    let mut out = match args.backend {
        BackendChoice::Direct => direct::run(args, &names, &kernels, &config)?,
        BackendChoice::Perf | BackendChoice::Auto => {
            perf(args, &names, &kernels, &config, &mut notes)?
        }
    };
    out.notes.splice(0..0, notes);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| Failure::new(e.to_string()))?
        );
    } else {
        print_human(&out);
    }
    Ok(())
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
) -> Result<Measurement, Failure> {
    let mut region = prepared.region(units);
    let result = if config.calibrate {
        let mut baseline = prepared.region(0);
        measure_with_baseline(counters, config, &mut region, &mut baseline)
    } else {
        measure(counters, config, &mut region)
    };
    Ok(result?)
}

fn kernel_report(kernel: Kernel, units: u64, m: &Measurement) -> KernelReport {
    let (events, runs) = report::events_and_runs(m);
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
    }
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn perf(
    args: &Args,
    names: &[&str],
    kernels: &[Kernel],
    config: &MeasureConfig,
    notes: &mut Vec<String>,
) -> Result<Output, Failure> {
    let options = pmu_linux::Options::default().exclude_kernel(!args.include_kernel);
    let _pin = match args.cpu {
        Some(cpu) => Some(pmu_linux::sched::pin_to(cpu)?),
        None => None,
    };
    match pmu_linux::Session::open(names, options) {
        Ok(mut session) => {
            session.enable()?;
            let results = run_kernels(&mut session, args, kernels, config)?;
            session.disable()?;
            Ok(Output {
                backend: "perf".into(),
                cycle_divider: None,
                notes: Vec::new(),
                runs: config.runs,
                warmup: config.warmup,
                calibrated: config.calibrate,
                results,
            })
        }
        Err(e) if args.backend == BackendChoice::Auto && no_hardware_counters(&e) => {
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
            software(args, kernels, config, options)
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
    notes: &mut Vec<String>,
) -> Result<Output, Failure> {
    let why = pmu_linux::Error::PerfUnsupported;
    if args.backend != BackendChoice::Auto {
        return Err(Failure {
            message: why.to_string(),
            status: EXIT_USAGE,
        });
    }
    notes.push(format!("perf backend: {why}"));
    progress(format_args!(
        "perf backend: {why}; trying the direct backend"
    ));
    direct::run(args, names, kernels, config)
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
) -> Result<Output, Failure> {
    let mut session = pmu_linux::Session::open(&SOFTWARE_EVENTS, options)?;
    session.enable()?;
    let mut results = run_kernels(&mut session, args, kernels, config)?;
    session.disable()?;
    if crate::tsc::TscMeter::available() {
        let mut tsc = crate::tsc::TscMeter::default();
        let tsc_results = run_kernels(&mut tsc, args, kernels, config)?;
        for (r, t) in results.iter_mut().zip(tsc_results) {
            r.events.extend(t.events);
            r.derived.tsc_ticks_per_unit = t.derived.tsc_ticks_per_unit;
            for (run, trun) in r.runs.iter_mut().zip(t.runs) {
                run.values.extend(trun.values);
            }
        }
    }
    Ok(Output {
        backend: "software".into(),
        cycle_divider: None,
        notes: Vec::new(),
        runs: config.runs,
        warmup: config.warmup,
        calibrated: config.calibrate,
        results,
    })
}

fn run_kernels(
    counters: &mut dyn Counters,
    args: &Args,
    kernels: &[Kernel],
    config: &MeasureConfig,
) -> Result<Vec<KernelReport>, Failure> {
    let mut results = Vec::new();
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
        let m = measure_kernel(counters, config, &prepared, units)?;
        results.push(kernel_report(kernel, units, &m));
    }
    Ok(results)
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
    fn measure<P: pmu_core::Pmu, A: pmu_linux::direct::AccessCheck>(
        pool: &pmu_core::CounterPool<P>,
        names: &[&str],
        filter: pmu_core::PrivilegeFilter,
        access: A,
        cycle_scale: Option<u64>,
        args: &Args,
        kernels: &[Kernel],
        config: &MeasureConfig,
    ) -> Result<Vec<KernelReport>, Failure> {
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
        meter.enable()?;
        let results = run_kernels(&mut meter, args, kernels, config)?;
        meter.disable()?;
        Ok(results)
    }

    #[cfg(target_arch = "aarch64")]
    pub fn run(
        args: &Args,
        names: &[&str],
        kernels: &[Kernel],
        config: &MeasureConfig,
    ) -> Result<Output, Failure> {
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
        let (_pin, pmu) = unsafe {
            pmu_linux::direct::armv8::take_armv8(cpu, PmuVersion::PmuV3, PmuOptions::new())
        }?;
        let pool = CounterPool::new(pmu);
        let results = measure(
            &pool,
            names,
            PrivilegeFilter::USER,
            Pmuserenr,
            None,
            args,
            kernels,
            config,
        )?;
        Ok(Output {
            backend: "direct".into(),
            cycle_divider: None,
            notes: vec![format!("direct access on CPU {cpu}, counting EL0 only")],
            runs: config.runs,
            warmup: config.warmup,
            calibrated: config.calibrate,
            results,
        })
    }

    /// ARM1176 (Raspberry Pi 1 / Zero) after kmod-enable-user set SUNAVCR.V: CCR for
    /// `cycles`, CR0/CR1 for two more events, every mode counted (no privilege filter).
    #[cfg(target_arch = "arm")]
    pub fn run(
        args: &Args,
        names: &[&str],
        kernels: &[Kernel],
        config: &MeasureConfig,
    ) -> Result<Output, Failure> {
        use pmu_armv6::CycleDivider;
        use pmu_core::{CounterPool, PrivilegeFilter};
        use pmu_linux::direct::arm1176;
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
        let results = measure(
            &pool,
            names,
            PrivilegeFilter::ALL,
            pmu_linux::Unchecked,
            Some(divider.cycles_per_tick()),
            args,
            kernels,
            config,
        )?;
        Ok(Output {
            backend: "direct".into(),
            cycle_divider: Some(divider.cycles_per_tick()),
            notes: vec![
                "direct access to the ARM1176 PMU on CPU 0 (SUNAVCR.V from kmod-enable-user)"
                    .into(),
                "the ARM1176 has no privilege filter: kernel and other processes' work inside \
                 a region is counted too (context switches are flagged)"
                    .into(),
            ],
            runs: config.runs,
            warmup: config.warmup,
            calibrated: config.calibrate,
            results,
        })
    }

    #[cfg(not(any(target_arch = "aarch64", target_arch = "arm")))]
    pub fn run(_: &Args, _: &[&str], _: &[Kernel], _: &MeasureConfig) -> Result<Output, Failure> {
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
