//! `pmu-demo hazards`: force each hazard inside a region and show that it is flagged.

use std::time::Duration;

use clap::Args as ClapArgs;
use pmu_linux::pmu_core::Hazards;
use pmu_linux::verdict::Evidence;
use pmu_linux::{BackendKind, Meter};
use serde::Serialize;

use crate::report::hazard_names;
use crate::{progress, Failure};
// The ARMv6 build (one CPU, the ARM1176) moves no thread.
#[cfg(not(all(target_arch = "arm", not(target_feature = "v7"))))]
use pmu_linux::machine::{allowed_cpus, set_allowed_cpus};

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Events of the perf session (software events work everywhere). 32-bit ARM has no
    /// perf backend: there the direct one counts cycles and instructions.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "context-switches,cpu-migrations,task-clock"
    )]
    events: Vec<String>,
    /// One JSON object on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Serialize)]
struct Demo {
    /// What was forced.
    name: &'static str,
    /// What the region did.
    action: String,
    /// The hazard that must be flagged.
    expected: &'static str,
    /// What the run was flagged with.
    hazards: Vec<&'static str>,
    /// Expected hazard flagged.
    detected: bool,
    /// Why the demonstration could not run, if it could not.
    skipped: Option<String>,
    /// getrusage's counts; null where the region did without (every read through
    /// the pages, whose locks see every switch).
    voluntary_switches: Option<u64>,
    involuntary_switches: Option<u64>,
    cpu_start: Option<u32>,
    cpu_end: Option<u32>,
    /// The CPUs came from the thread's rseq area (else sched_getcpu).
    cpu_from_rseq: bool,
    /// Some event's page `lock` moved.
    page_updated: bool,
}

/// One region measured on a meter: the hazards of its readings, and what they were
/// derived from.
struct Run {
    hazards: Hazards,
    evidence: Evidence,
}

/// Measures `region` once on `meter`: `start`, `region`, `stop`, the hazards of every
/// event the meter counts, and the region's evidence.
fn measure_once(meter: &mut Meter, region: &mut dyn FnMut()) -> pmu_linux::Result<Run> {
    let counted: Vec<_> = meter
        .events()
        .filter(|&(_, _, counted)| counted)
        .map(|(handle, _, _)| handle)
        .collect();
    let started = meter.start()?;
    region();
    let counts = meter.stop(started)?;
    let mut hazards = Hazards::empty();
    for handle in counted {
        hazards |= counts.reading(handle)?.hazards;
    }
    Ok(Run {
        hazards,
        evidence: meter.evidence(),
    })
}

fn demo(name: &'static str, action: String, expected: Hazards, record: &Run) -> Demo {
    let h = record.hazards;
    Demo {
        name,
        action,
        expected: hazard_names(expected).first().copied().unwrap_or(""),
        hazards: hazard_names(h),
        detected: h.contains(expected),
        skipped: None,
        voluntary_switches: record.evidence.switches.map(|s| s.voluntary),
        involuntary_switches: record.evidence.switches.map(|s| s.involuntary),
        cpu_start: record.evidence.cpu_start,
        cpu_end: record.evidence.cpu_end,
        cpu_from_rseq: record.evidence.cpu_from_rseq,
        page_updated: record.evidence.page_updated,
    }
}

fn skipped(name: &'static str, expected: Hazards, why: String) -> Demo {
    Demo {
        name,
        action: String::new(),
        expected: hazard_names(expected).first().copied().unwrap_or(""),
        hazards: Vec::new(),
        detected: false,
        skipped: Some(why),
        voluntary_switches: None,
        involuntary_switches: None,
        cpu_start: None,
        cpu_end: None,
        cpu_from_rseq: false,
        page_updated: false,
    }
}

/// The forced context switch: a 2 ms sleep inside one region of `meter`.
fn context_switch_demo(meter: &mut Meter) -> Result<Demo, Failure> {
    progress("context switch: sleeping 2 ms inside a region");
    let record = measure_once(meter, &mut || std::thread::sleep(Duration::from_millis(2)))?;
    Ok(demo(
        "context-switch",
        "nanosleep(2 ms) inside the region".into(),
        Hazards::CONTEXT_SWITCH,
        &record,
    ))
}

pub fn run(args: &Args) -> Result<(), Failure> {
    let demos = forced_hazards(args)?;
    report(args, &demos)
}

/// A meter on `names` alone, without a kernel-entry sentinel (so that a switch shows
/// as one, and no counter goes to it): the perf backend with its default options, or
/// the direct backend programming the PMU of `cpu` itself.
fn meter(names: &[&str], kind: BackendKind, cpu: Option<usize>) -> pmu_linux::Result<Meter> {
    let mut builder = Meter::builder();
    for name in names {
        builder.add_named(name)?;
    }
    builder.backend(kind).kernel_sentinel(false);
    if let Some(cpu) = cpu {
        builder.cpu(cpu);
    }
    if kind == BackendKind::Direct {
        // SAFETY: the demo takes the PMU of the CPU it runs on over exclusively for the
        // duration, as `measure --backend direct` does (documented in --help and the
        // README).
        unsafe { builder.program_the_pmu() };
    }
    builder.build()
}

/// The perf backend: a meter on `--events` for the context switch, the migration and
/// the syscall fallback; the direct backend (where there is one) for the overflow.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn forced_hazards(args: &Args) -> Result<Vec<Demo>, Failure> {
    let names: Vec<&str> = args.events.iter().map(String::as_str).collect();
    let mut meter = meter(&names, BackendKind::Perf, None)?;
    let mut demos = Vec::new();

    demos.push(context_switch_demo(&mut meter)?);

    let cpus = allowed_cpus()?;
    if cpus.len() >= 2 {
        let (from, to) = (cpus[0], cpus[1]);
        progress(format_args!(
            "migration: pinned to CPU {from}, moving to CPU {to} inside a region"
        ));
        set_allowed_cpus(&[from])?;
        let mut moved = Ok(());
        let record = measure_once(&mut meter, &mut || moved = set_allowed_cpus(&[to]));
        // Back to every CPU allowed before, whatever happened.
        set_allowed_cpus(&cpus)?;
        let record = record?;
        moved?;
        demos.push(demo(
            "cpu-migration",
            format!("sched_setaffinity CPU {from} -> CPU {to} inside the region"),
            Hazards::CPU_MIGRATION,
            &record,
        ));
    } else {
        demos.push(skipped(
            "cpu-migration",
            Hazards::CPU_MIGRATION,
            format!("this thread may run on {} CPU only", cpus.len()),
        ));
    }

    // The reads of an empty region: software events have no counter register (page
    // index 0), so every value comes from read() and says so. Measured before the
    // overflow's direct backend takes the PMU, and the meter closed before it (perf's
    // hardware events, where asked for, would revoke the module's grant on arm64).
    let fallback = measure_once(&mut meter, &mut || {})?;
    drop(meter);
    demos.push(overflow_demo());

    let mut d = demo(
        "syscall-fallback",
        "an empty region on software events".into(),
        Hazards::SYSCALL_FALLBACK,
        &fallback,
    );
    if !names.iter().all(|n| {
        matches!(
            *n,
            "task-clock" | "context-switches" | "cpu-migrations" | "page-faults" | "cpu-clock"
        )
    }) {
        d.action += " (hardware events here may be read by one instruction: then not flagged)";
    }
    demos.push(d);
    Ok(demos)
}

/// 32-bit ARM has only the direct backend (ARM1176): cycles and instructions on CCR and
/// CR0 for the context switch and the overflow; one CPU, so no migration. Without
/// kmod-enable-user this is the "not enabled" error (exit status 3).
#[cfg(target_arch = "arm")]
fn forced_hazards(_args: &Args) -> Result<Vec<Demo>, Failure> {
    #[cfg(target_feature = "v7")]
    if crate::armv7_cpu() {
        return forced_hazards_armv7();
    }
    // The ARM1176's CCR and CR0 read with one `mrc` each, overflow from PMCR's flags,
    // switches from getrusage (its counters have no privilege filter: no sentinel).
    let mut meter = meter(&["cycles", "instructions"], BackendKind::Direct, None)?;
    let instructions = meter.handle_of("instructions").ok_or_else(no_handle)?;
    let mut demos = Vec::new();

    demos.push(context_switch_demo(&mut meter)?);
    demos.push(skipped(
        "cpu-migration",
        Hazards::CPU_MIGRATION,
        "the ARM1176 direct backend runs pinned to CPU 0 (the Pi 1 and Zero have one core)".into(),
    ));

    progress("overflow: instructions counter (CR0) preset 1000 below its 32-bit wrap");
    meter.preset_before_wrap(instructions, 1000)?;
    let prepared = crate::workloads::Workload::Loop.prepare(0)?;
    let record = measure_once(&mut meter, &mut prepared.region(10_000))?;
    demos.push(demo(
        "overflow",
        "10 000 loop iterations on CR0 1000 below its 32-bit wrap (PMCR flag bit 8)".into(),
        Hazards::OVERFLOW,
        &record,
    ));
    Ok(demos)
}

/// The meter has a handle for every event it was built with.
#[cfg(target_arch = "arm")]
fn no_handle() -> Failure {
    Failure::new("the meter lost its `instructions` event")
}

/// ARMv7 and later under a 32-bit kernel: the direct backend (PMUSERENR.EN from
/// kmod-enable-user's ARMv7 flavour with `el0_programming=1`) counts cycles and
/// instructions, PL0 only, on the first allowed CPU, for the context switch, the
/// migration (to the second allowed CPU, whose PMU the module opened too) and the
/// overflow. The ARMv7 build only.
#[cfg(all(target_arch = "arm", target_feature = "v7"))]
fn forced_hazards_armv7() -> Result<Vec<Demo>, Failure> {
    let cpus = allowed_cpus()?;
    let first = cpus.first().copied().unwrap_or(0);
    // Overflow from PMOVSR; no sentinel, so that a switch shows as one (getrusage).
    let mut meter = meter(
        &["cycles", "instructions"],
        BackendKind::Direct,
        Some(first),
    )?;
    let instructions = meter.handle_of("instructions").ok_or_else(no_handle)?;
    let mut demos = Vec::new();

    demos.push(context_switch_demo(&mut meter)?);

    if cpus.len() >= 2 {
        let (from, to) = (first, cpus[1]);
        progress(format_args!(
            "migration: on CPU {from}, moving to CPU {to} inside a region"
        ));
        let mut moved = Ok(());
        let record = measure_once(&mut meter, &mut || moved = set_allowed_cpus(&[to]));
        // Back to the CPU whose counters the meter programmed.
        set_allowed_cpus(&[from])?;
        let record = record?;
        moved?;
        demos.push(demo(
            "cpu-migration",
            format!("sched_setaffinity CPU {from} -> CPU {to} inside the region"),
            Hazards::CPU_MIGRATION,
            &record,
        ));
    } else {
        demos.push(skipped(
            "cpu-migration",
            Hazards::CPU_MIGRATION,
            format!("this thread may run on {} CPU only", cpus.len()),
        ));
    }

    progress("overflow: instructions counter preset 100 000 below its 32-bit wrap");
    let prepared = crate::workloads::Workload::Loop.prepare(0)?;
    // The counter runs from here on: the distance leaves room for what executes before
    // the region starts (glibc's getrusage and sched_getcpu wrappers, the meter's own
    // reads), so that the wrap falls inside the region.
    meter.preset_before_wrap(instructions, 100_000)?;
    let record = measure_once(&mut meter, &mut prepared.region(1_000_000))?;
    demos.push(demo(
        "overflow",
        "1 000 000 loop iterations on a counter 100 000 below its 32-bit wrap (PMOVSR)".into(),
        Hazards::OVERFLOW,
        &record,
    ));
    Ok(demos)
}

fn report(args: &Args, demos: &[Demo]) -> Result<(), Failure> {
    let missed: Vec<&Demo> = demos
        .iter()
        .filter(|d| d.skipped.is_none() && !d.detected && d.name != "syscall-fallback")
        .collect();
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&demos).map_err(|e| Failure::new(e.to_string()))?
        );
    } else {
        for d in demos {
            match &d.skipped {
                Some(why) => println!("{:<17} skipped: {why}", d.name),
                None => println!(
                    "{:<17} {}: flagged {} ({}; switches {}; page lock moved: {}; cpu {:?} -> {:?} from {})",
                    d.name,
                    if d.detected { "DETECTED" } else { "NOT detected" },
                    if d.hazards.is_empty() { "nothing".to_owned() } else { d.hazards.join(",") },
                    d.action,
                    match (d.voluntary_switches, d.involuntary_switches) {
                        (Some(v), Some(i)) => format!("{v} voluntary, {i} involuntary"),
                        _ => "not counted (getrusage not needed)".to_owned(),
                    },
                    d.page_updated,
                    d.cpu_start,
                    d.cpu_end,
                    if d.cpu_from_rseq { "rseq" } else { "sched_getcpu" },
                ),
            }
        }
    }
    if missed.is_empty() {
        Ok(())
    } else {
        Err(Failure::new(format!(
            "forced hazards not flagged: {}",
            missed.iter().map(|d| d.name).collect::<Vec<_>>().join(", ")
        )))
    }
}

/// Overflow needs a counter the demo can preset: the direct backend, programming CPU
/// 0's PMU (a meter elsewhere says why it cannot).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn overflow_demo() -> Demo {
    let skip = |why: String| skipped("overflow", Hazards::OVERFLOW, why);
    if cfg!(target_arch = "aarch64") {
        progress("overflow: direct backend, instructions counter preset 1000 below its wrap");
    }
    // Overflow from PMOVSSET_EL0, switches from getrusage.
    let cpu = cfg!(target_arch = "aarch64").then_some(0);
    let mut meter = match meter(&["instructions"], BackendKind::Direct, cpu) {
        Ok(meter) => meter,
        Err(e) if cfg!(target_arch = "aarch64") => {
            return skip(format!("needs the direct backend: {e}"))
        }
        Err(e) => {
            return skip(format!(
                "needs the direct backend (a counter the demo can preset): {e}"
            ))
        }
    };
    let Some(instructions) = meter.handle_of("instructions") else {
        return skip("the meter lost its `instructions` event".into());
    };
    if let Err(e) = meter.preset_before_wrap(instructions, 1000) {
        return skip(format!("needs the direct backend: {e}"));
    }
    let record = match crate::workloads::Workload::Loop.prepare(0) {
        Ok(p) => measure_once(&mut meter, &mut p.region(10_000)),
        Err(e) => return skip(e.to_string()),
    };
    match record {
        Ok(r) => demo(
            "overflow",
            "10 000 loop iterations on a counter 1000 below its 32-bit wrap".into(),
            Hazards::OVERFLOW,
            &r,
        ),
        Err(e) => skip(e.to_string()),
    }
}
