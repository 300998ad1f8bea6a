//! `pmu-demo list`.

use clap::Args as ClapArgs;
use pmu_linux::machine;
use pmu_linux::machine::Sysfs;
use serde::Serialize;

use crate::workloads::Workload;
use crate::Failure;

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Also list every event alias of every PMU (long on big machines).
    #[arg(long)]
    all_events: bool,
    /// One JSON object on stdout.
    #[arg(long)]
    json: bool,
}

/// The generic events probed one by one.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const COMMON: [&str; 10] = [
    "cycles",
    "instructions",
    "branches",
    "branch-misses",
    "cache-references",
    "cache-misses",
    "L1-dcache-load-misses",
    "task-clock",
    "context-switches",
    "cpu-migrations",
];

#[derive(Debug, Serialize)]
struct Output {
    backends: Vec<BackendOut>,
    user_read_policy: String,
    hardware_counters: Vec<String>,
    pmus: Vec<PmuOut>,
    events: Vec<EventOut>,
    /// 32-bit ARM: the ARM1176 events the direct backend counts (24 plus 0xFF).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    arm1176_events: Vec<Arm1176EventOut>,
    kernels: Vec<KernelOut>,
}

#[derive(Debug, Serialize)]
struct Arm1176EventOut {
    code: u8,
    name: String,
    raw: String,
    description: &'static str,
    counters: &'static str,
}

#[derive(Debug, Serialize)]
struct BackendOut {
    backend: String,
    usable: bool,
    reason: Option<String>,
    notes: Vec<String>,
}

#[derive(Debug, Serialize)]
struct PmuOut {
    name: String,
    perf_type: u32,
    formats: Vec<String>,
    events: usize,
    aliases: Vec<String>,
}

#[derive(Debug, Serialize)]
struct EventOut {
    name: String,
    countable: bool,
    reason: Option<String>,
}

#[derive(Debug, Serialize)]
struct KernelOut {
    name: &'static str,
    available: bool,
    reason: Option<&'static str>,
}

/// The common events, each opened alone through perf.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn probe_events(sysfs: &Sysfs) -> Vec<EventOut> {
    machine::probe_events(sysfs, &COMMON, pmu_linux::perf::Options::default())
        .into_iter()
        .map(|e| EventOut {
            name: e.name,
            countable: e.status.is_ok(),
            reason: e.status.err().map(|e| e.to_string()),
        })
        .collect()
}

/// No perf backend here (32-bit ARM): nothing to open; the backends section says why.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn probe_events(_: &Sysfs) -> Vec<EventOut> {
    Vec::new()
}

pub fn run(args: &Args) -> Result<(), Failure> {
    let sysfs = Sysfs::system();
    // The direct backend's status is taken before anything opens a perf event, and
    // checked again after the event probes (which can revoke kmod-enable-user's grant
    // on this CPU: `machine::backends`).
    let mut statuses = machine::backends();
    let pmus = machine::pmus(&sysfs)
        .unwrap_or_default()
        .into_iter()
        .map(|p| PmuOut {
            formats: p.formats.keys().cloned().collect(),
            events: p.events.len(),
            aliases: if args.all_events {
                p.events.keys().cloned().collect()
            } else {
                Vec::new()
            },
            name: p.name,
            perf_type: p.perf_type,
        })
        .collect();
    let events = probe_events(&sysfs);
    for status in &mut statuses {
        if let Some(note) = machine::grant_lost_since(status) {
            status.notes.push(note);
        }
    }
    let backends = statuses
        .into_iter()
        .map(|b| BackendOut {
            backend: b.backend.to_string(),
            usable: b.usable.is_ok(),
            reason: b.usable.err().map(|e| e.to_string()),
            notes: b.notes,
        })
        .collect();
    let arm1176_events = if cfg!(target_arch = "arm") {
        crate::event_names::arm1176_events()
            .into_iter()
            .map(|e| Arm1176EventOut {
                code: e.code,
                name: e.name,
                raw: e.raw,
                description: e.description,
                counters: e.counters,
            })
            .collect()
    } else {
        Vec::new()
    };
    let out = Output {
        backends,
        user_read_policy: if cfg!(target_arch = "arm") {
            // Linux has no user-read control on 32-bit ARM; the knobs it reports are for
            // perf, which this build does not have.
            "the direct backend reads each counter with one mrc once kmod-enable-user set \
             SUNAVCR.V (perf-based user reads do not exist on 32-bit ARM)"
                .to_owned()
        } else {
            machine::user_read_policy(&sysfs).to_string()
        },
        hardware_counters: machine::why_no_hardware_counters(&sysfs)
            .iter()
            .map(ToString::to_string)
            .collect(),
        pmus,
        events,
        arm1176_events,
        kernels: Workload::ALL
            .into_iter()
            .map(|k| KernelOut {
                name: k.name(),
                available: k.unavailable().is_none(),
                reason: k.unavailable(),
            })
            .collect(),
    };
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| Failure::new(e.to_string()))?
        );
        return Ok(());
    }
    println!("backends:");
    for b in &out.backends {
        match &b.reason {
            None => println!("  {:<7} usable", b.backend),
            Some(why) => println!("  {:<7} not usable: {why}", b.backend),
        }
        for n in &b.notes {
            println!("          {n}");
        }
    }
    println!("user-space counter reads: {}", out.user_read_policy);
    if !out.hardware_counters.is_empty() {
        println!("why there are no hardware counters here:");
        for w in &out.hardware_counters {
            println!("  - {w}");
        }
    }
    println!("PMUs (/sys/bus/event_source/devices):");
    for p in &out.pmus {
        println!(
            "  {:<20} type {:<3} {} events; format terms: {}",
            p.name,
            p.perf_type,
            p.events,
            p.formats.join(",")
        );
        for a in &p.aliases {
            println!("      {}/{a}/", p.name);
        }
    }
    if !out.events.is_empty() {
        println!("events (opened one by one):");
    }
    for e in &out.events {
        match &e.reason {
            None => println!("  {:<24} countable", e.name),
            Some(why) => println!("  {:<24} no: {why}", e.name),
        }
    }
    if !out.arm1176_events.is_empty() {
        println!(
            "ARM1176 events (direct backend; --events takes the name or rXX; TRM Table 3-137: \
             {} selectable plus 0xFF):",
            out.arm1176_events.len() - 1
        );
        for e in &out.arm1176_events {
            println!(
                "  {:#04x} {:<24} {:<40} {}",
                e.code, e.name, e.description, e.counters
            );
        }
    }
    println!("kernels:");
    for k in &out.kernels {
        match k.reason {
            None => println!("  {}", k.name),
            Some(why) => println!("  {} (unavailable: {why})", k.name),
        }
    }
    Ok(())
}
