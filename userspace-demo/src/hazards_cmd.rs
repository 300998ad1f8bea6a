//! `pmu-demo hazards`: force each hazard inside a region and show that it is flagged.

use std::time::Duration;

use clap::Args as ClapArgs;
use pmu_linux::measure::{measure_once, RunRecord};
use pmu_linux::pmu_core::Hazards;
use serde::Serialize;

use crate::report::hazard_names;
use crate::{progress, Failure};

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

fn demo(name: &'static str, action: String, expected: Hazards, record: &RunRecord) -> Demo {
    let h = record.hazards();
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

/// The forced context switch: a 2 ms sleep inside one region that `measure_once`
/// measures (`measure_once` of pmu-linux on the demo's backend).
fn context_switch_demo(
    measure_once: impl FnOnce(&mut dyn FnMut()) -> pmu_linux::Result<RunRecord>,
) -> Result<Demo, Failure> {
    progress("context switch: sleeping 2 ms inside a region");
    let record = measure_once(&mut || std::thread::sleep(Duration::from_millis(2)))?;
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

/// The perf backend: a session on `--events` for the context switch, the migration and
/// the syscall fallback; the direct backend (where there is one) for the overflow.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn forced_hazards(args: &Args) -> Result<Vec<Demo>, Failure> {
    let names: Vec<&str> = args.events.iter().map(String::as_str).collect();
    let mut session = pmu_linux::perf::Session::open(&names, pmu_linux::perf::Options::default())?;
    session.enable()?;
    let mut demos = Vec::new();

    demos.push(context_switch_demo(|r| measure_once(&mut session, r))?);

    let cpus = pmu_linux::machine::allowed_cpus()?;
    if cpus.len() >= 2 {
        let (from, to) = (cpus[0], cpus[1]);
        progress(format_args!(
            "migration: pinned to CPU {from}, moving to CPU {to} inside a region"
        ));
        let pin = pmu_linux::machine::pin_to(from)?;
        let mut moved = Ok(());
        let record = measure_once(&mut session, &mut || {
            moved = pmu_linux::machine::set_allowed_cpus(&[to])
        })?;
        drop(pin);
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
    session.disable()?;

    demos.push(overflow_demo());

    // The reads above: software events have no counter register (page index 0), so every
    // value came from read() and says so.
    let fallback = measure_once(&mut session, &mut || {})?;
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
    use pmu_linux::direct::{allocate, arm1176};
    use pmu_linux::pmu_core::{CounterPool, PrivilegeFilter};
    #[cfg(target_feature = "v7")]
    if pmu_linux::direct::aarch32::is_armv7_cpu() {
        return forced_hazards_aarch32(_args);
    }
    // SAFETY: as in `measure --backend direct` on 32-bit ARM: the demo takes the
    // ARM1176's PMU over exclusively for the duration (documented in --help and the
    // README).
    let (_pin, pmu) = unsafe { arm1176::take_arm1176(pmu_armv6::CycleDivider::EveryCycle) }?;
    let pool = CounterPool::new(pmu);
    let names = ["cycles", "instructions"];
    let counters = allocate(&pool, &names, PrivilegeFilter::ALL)?;
    // The library's direct region over the demo's own counters: CCR and CR0 read with
    // one `mrc` each, overflow from PMCR's flags, switches from getrusage.
    let mut meter = pmu_linux::direct::pool_region(pool.pmu(), &counters[..], names)?;
    meter.enable()?;
    let mut demos = Vec::new();

    demos.push(context_switch_demo(|r| measure_once(&mut meter, r))?);
    demos.push(skipped(
        "cpu-migration",
        Hazards::CPU_MIGRATION,
        "the ARM1176 direct backend runs pinned to CPU 0 (the Pi 1 and Zero have one core)".into(),
    ));

    progress("overflow: instructions counter (CR0) preset 1000 below its 32-bit wrap");
    counters[1].preset_before_wrap(1000);
    let prepared = crate::workloads::Workload::Loop.prepare(0)?;
    let record = measure_once(&mut meter, &mut prepared.region(10_000))?;
    demos.push(demo(
        "overflow",
        "10 000 loop iterations on CR0 1000 below its 32-bit wrap (PMCR flag bit 8)".into(),
        Hazards::OVERFLOW,
        &record,
    ));
    meter.disable()?;
    Ok(demos)
}

/// ARMv7 and later under a 32-bit kernel: the direct backend (PMUSERENR.EN from
/// kmod-enable-user's ARMv7 flavour with `el0_programming=1`) counts cycles and
/// instructions, PL0 only, on the first allowed CPU, for the context switch, the
/// migration (to the second allowed CPU, whose PMU the module opened too) and the
/// overflow. The ARMv7 build only.
#[cfg(all(target_arch = "arm", target_feature = "v7"))]
fn forced_hazards_aarch32(_: &Args) -> Result<Vec<Demo>, Failure> {
    use pmu_linux::direct::{aarch32, allocate};
    use pmu_linux::pmu_core::{CounterPool, PrivilegeFilter};
    let cpus = pmu_linux::machine::allowed_cpus()?;
    let first = cpus.first().copied().unwrap_or(0);
    // SAFETY: as in `measure --backend direct`: the demo takes the PMU of the CPUs it
    // runs on over exclusively for the duration (documented in --help and the README).
    let (_pin, pmu) = unsafe { aarch32::take_pl0(first) }?;
    let pool = CounterPool::new(pmu);
    let names = ["cycles", "instructions"];
    let counters = allocate(&pool, &names, PrivilegeFilter::USER)?;
    // The library's direct region over the demo's own counters, without a sentinel (so
    // that a switch shows as one, from getrusage): overflow from PMOVSR.
    let mut meter = pmu_linux::direct::pool_region(pool.pmu(), &counters[..], names)?;
    meter.enable()?;
    let mut demos = Vec::new();

    demos.push(context_switch_demo(|r| measure_once(&mut meter, r))?);

    if cpus.len() >= 2 {
        let (from, to) = (first, cpus[1]);
        progress(format_args!(
            "migration: on CPU {from}, moving to CPU {to} inside a region"
        ));
        let mut moved = Ok(());
        let record = measure_once(&mut meter, &mut || {
            moved = pmu_linux::machine::set_allowed_cpus(&[to])
        })?;
        moved?;
        demos.push(demo(
            "cpu-migration",
            format!("sched_setaffinity CPU {from} -> CPU {to} inside the region"),
            Hazards::CPU_MIGRATION,
            &record,
        ));
        // Back to the CPU whose counters the demo programmed.
        pmu_linux::machine::set_allowed_cpus(&[from])?;
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
    counters[1].preset_before_wrap(100_000);
    let record = measure_once(&mut meter, &mut prepared.region(1_000_000))?;
    demos.push(demo(
        "overflow",
        "1 000 000 loop iterations on a counter 100 000 below its 32-bit wrap (PMOVSR)".into(),
        Hazards::OVERFLOW,
        &record,
    ));
    meter.disable()?;
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

/// Overflow needs a counter the demo can preset: the direct backend.
#[cfg(target_arch = "aarch64")]
fn overflow_demo() -> Demo {
    use pmu_armv8::{PmuOptions, PmuVersion};
    use pmu_linux::pmu_core::{CounterPool, GenericEvent, PrivilegeFilter};
    progress("overflow: direct backend, instructions counter preset 1000 below its wrap");
    // SAFETY: as in `measure --backend direct`: the demo takes CPU 0's PMU over
    // exclusively for the duration (documented in --help and the README).
    let taken =
        unsafe { pmu_linux::direct::armv8::take_armv8(0, PmuVersion::PmuV3, PmuOptions::new()) };
    let (_pin, pmu) = match taken {
        Ok(t) => t,
        Err(e) => {
            return skipped(
                "overflow",
                Hazards::OVERFLOW,
                format!("needs the direct backend: {e}"),
            )
        }
    };
    let pool = CounterPool::new(pmu);
    let counter = match pool.counter(GenericEvent::Instructions.into(), PrivilegeFilter::USER) {
        Ok(c) => c,
        Err(e) => return skipped("overflow", Hazards::OVERFLOW, e.to_string()),
    };
    let counters = [counter];
    // The library's direct region over the demo's own counter: overflow from
    // PMOVSSET_EL0, switches from getrusage.
    let meter = pmu_linux::direct::pool_region(pool.pmu(), &counters[..], ["instructions"]);
    let mut meter = match meter {
        Ok(m) => m,
        Err(e) => return skipped("overflow", Hazards::OVERFLOW, e.to_string()),
    };
    counters[0].preset_before_wrap(1000);
    if let Err(e) = meter.enable() {
        return skipped("overflow", Hazards::OVERFLOW, e.to_string());
    }
    let prepared = crate::workloads::Workload::Loop.prepare(0);
    let record = match prepared {
        Ok(p) => measure_once(&mut meter, &mut p.region(10_000)),
        Err(e) => return skipped("overflow", Hazards::OVERFLOW, e.to_string()),
    };
    match record {
        Ok(r) => demo(
            "overflow",
            "10 000 loop iterations on a counter 1000 below its 32-bit wrap".into(),
            Hazards::OVERFLOW,
            &r,
        ),
        Err(e) => skipped("overflow", Hazards::OVERFLOW, e.to_string()),
    }
}

#[cfg(target_arch = "x86_64")]
fn overflow_demo() -> Demo {
    let why = match pmu_linux::direct::probe() {
        Err(e) => format!("needs the direct backend (a counter the demo can preset): {e}"),
        Ok(()) => "the direct backend of this demo is built for aarch64 only".to_owned(),
    };
    skipped("overflow", Hazards::OVERFLOW, why)
}
