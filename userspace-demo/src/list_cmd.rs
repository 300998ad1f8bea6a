//! `pmu-demo list`.

use clap::Args as ClapArgs;
use pmu_linux::machine;
use pmu_linux::machine::Sysfs;
use pmu_linux::survey::Survey;
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

/// The generic events probed one by one (where there is perf: not on 32-bit ARM).
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
    /// Each kind of Arm core (by MIDR) and its own events, where pmu-events has its
    /// table; empty off Arm.
    cores: Vec<CoreOut>,
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
struct CoreOut {
    /// The core's name; `None`: no table for this MIDR.
    name: Option<&'static str>,
    midr: String,
    cpus: Vec<u32>,
    /// `cpus` as the kernel prints a CPU list (`0-3`), for the text.
    #[serde(skip)]
    cpu_list: String,
    /// Whether it is the ARM1176, whose events the text shows in their own table
    /// (`arm1176_events`, with the names `--events` takes for them).
    #[serde(skip)]
    arm1176: bool,
    events: Vec<CoreEventOut>,
}

#[derive(Debug, Serialize)]
struct CoreEventOut {
    name: &'static str,
    code: u16,
    about: &'static str,
    placement: &'static str,
}

/// Where an event counts, in words.
fn placement(p: pmu_events::Placement) -> &'static str {
    match p {
        pmu_events::Placement::OddCounter => "odd counters only",
        _ => "any counter",
    }
}

/// The cores of `cores`, each with its table's events.
fn cores_out(cores: &machine::Cores) -> Vec<CoreOut> {
    cores
        .kinds()
        .iter()
        .map(|kind| CoreOut {
            name: kind.table.map(|t| t.name),
            midr: format!("{:#010x}", kind.midr),
            cpus: kind.cpus.clone(),
            cpu_list: kind.cpu_list(),
            arm1176: kind
                .table
                .is_some_and(|t| t.family == pmu_events::Family::Arm1176),
            events: kind
                .table
                .map(|t| t.events)
                .unwrap_or_default()
                .iter()
                .map(|e| CoreEventOut {
                    name: e.name,
                    code: e.code,
                    about: e.about,
                    placement: placement(e.placement),
                })
                .collect(),
        })
        .collect()
}

/// The not-countable events grouped by their reason, in first-seen order: a reason
/// several events share is said once. Each event's name in its reason (`cannot open
/// `cycles`: …`) is left out so that the same cause reads the same.
fn shared_reasons(events: &[EventOut]) -> Vec<(Vec<&str>, String)> {
    let mut groups: Vec<(Vec<&str>, String)> = Vec::new();
    for e in events {
        let Some(why) = &e.reason else { continue };
        let why = why.replacen(&format!(" `{}`", e.name), "", 1);
        match groups.iter_mut().find(|(_, w)| *w == why) {
            Some((names, _)) => names.push(&e.name),
            None => groups.push((vec![&e.name], why)),
        }
    }
    groups
}

#[derive(Debug, Serialize)]
struct BackendOut {
    backend: String,
    usable: bool,
    reason: Option<String>,
    notes: Vec<String>,
    /// The direct backend's kmod-enable-user grant, where it is usable.
    #[serde(skip_serializing_if = "Option::is_none")]
    grant: Option<crate::report::GrantReport>,
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

pub fn run(args: &Args) -> Result<(), Failure> {
    let sysfs = Sysfs::system();
    let survey = Survey::take(&sysfs, &COMMON);
    let pmus = survey
        .pmus
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
    let events = survey
        .events
        .into_iter()
        .map(|e| EventOut {
            name: e.name,
            countable: e.status.is_ok(),
            reason: e.status.err().map(|e| e.to_string()),
        })
        .collect();
    let backends = survey
        .backends
        .into_iter()
        .map(|b| BackendOut {
            backend: b.backend.to_string(),
            usable: b.usable.is_ok(),
            reason: b.usable.err().map(|e| e.to_string()),
            notes: b.notes,
            grant: b.grant.map(crate::report::GrantReport::new),
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
            survey.user_reads.to_string()
        },
        hardware_counters: survey.no_hardware.iter().map(ToString::to_string).collect(),
        pmus,
        events,
        cores: cores_out(&sysfs.cores()),
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
        if let Some(grant) = &b.grant {
            println!("          grant: {}", grant.text);
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
    for e in out.events.iter().filter(|e| e.reason.is_none()) {
        println!("  {:<24} countable", e.name);
    }
    for (names, why) in shared_reasons(&out.events) {
        match names.as_slice() {
            [one] => println!("  {one:<24} no: {why}"),
            _ => println!("  not countable: {}\n    why: {why}", names.join(", ")),
        }
    }
    for core in &out.cores {
        let cpus = &core.cpu_list;
        match core.name {
            Some(name) => println!(
                "{name} (MIDR {}) on CPUs {cpus}: {} events; --events takes their names, in any case:",
                core.midr,
                core.events.len()
            ),
            None => println!(
                "core with MIDR {} on CPUs {cpus}: no event table for it here; give its events \
                 by number from its manual, r<hex>",
                core.midr
            ),
        }
        if core.arm1176 && !out.arm1176_events.is_empty() {
            println!("  (the ARM1176 events table below)");
            continue;
        }
        for e in &core.events {
            println!(
                "  {:#06x} {:<28} {}{}",
                e.code,
                e.name,
                e.about,
                if e.placement == "any counter" {
                    String::new()
                } else {
                    format!(" ({})", e.placement)
                }
            );
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

#[cfg(test)]
mod tests {
    use super::*;

    fn event(name: &str, reason: Option<&str>) -> EventOut {
        EventOut {
            name: name.to_owned(),
            countable: reason.is_none(),
            reason: reason.map(str::to_owned),
        }
    }

    /// On a VM without a PMU every hardware event fails for the same cause (the text of
    /// `Survey::take` there, each naming its event): said once, for all of them; a
    /// different cause stays apart.
    #[test]
    fn a_shared_reason_is_said_once() {
        let why = |n: &str| format!("cannot open `{n}`: not supported by this CPU (ENOENT)");
        let events = [
            event("cycles", Some(&why("cycles"))),
            event("task-clock", None),
            event("instructions", Some(&why("instructions"))),
            event("L1-dcache-load-misses", Some(&why("L1-dcache-load-misses"))),
            event("branches", Some("cannot open `branches`: not implemented")),
        ];
        let groups = shared_reasons(&events);
        assert_eq!(
            groups,
            [
                (
                    vec!["cycles", "instructions", "L1-dcache-load-misses"],
                    "cannot open: not supported by this CPU (ENOENT)".to_owned()
                ),
                (vec!["branches"], "cannot open: not implemented".to_owned()),
            ]
        );
    }

    /// A Raspberry Pi 3 (four Cortex-A53, MIDR 0x410FD034: Cortex-A53 TRM DDI 0500
    /// 4.3.1) lists the Cortex-A53's events with their numbers (L1D_CACHE_REFILL 0x03,
    /// CHAIN 0x1E on odd counters only: TRM Table 12.28); a core without a table
    /// (QEMU's `-cpu max`, MIDR 0x000F0510) is listed with no events.
    #[test]
    fn cores_are_listed_with_their_events() {
        let dir = tempfile::tempdir().unwrap();
        for (cpu, midr) in [(0, 0x410F_D034u32), (1, 0x410F_D034), (2, 0x000F_0510)] {
            let regs = dir.path().join(format!("cpu{cpu}/regs/identification"));
            std::fs::create_dir_all(&regs).unwrap();
            std::fs::write(regs.join("midr_el1"), format!("0x{midr:016x}\n")).unwrap();
        }
        let cores = cores_out(&machine::Cores::at(dir.path(), dir.path().join("none")));
        assert_eq!(cores.len(), 2);
        let a53 = &cores[0];
        assert_eq!(
            (a53.name, a53.midr.as_str(), a53.cpu_list.as_str()),
            (Some("Cortex-A53"), "0x410fd034", "0-1")
        );
        let refill = a53
            .events
            .iter()
            .find(|e| e.name == "L1D_CACHE_REFILL")
            .unwrap();
        assert_eq!((refill.code, refill.placement), (0x03, "any counter"));
        let chain = a53.events.iter().find(|e| e.name == "CHAIN").unwrap();
        assert_eq!((chain.code, chain.placement), (0x1E, "odd counters only"));
        assert_eq!(
            (cores[1].name, cores[1].midr.as_str(), cores[1].events.len()),
            (None, "0x000f0510", 0)
        );
        assert!(!a53.arm1176);
        // A Raspberry Pi 1 (ARM1176JZF-S, MIDR 0x410FB767: its TRM, DDI 0301, 3.2.1)
        // through /proc/cpuinfo: its events go to the ARM1176 table of the text.
        let cpuinfo = dir.path().join("cpuinfo");
        std::fs::write(
            &cpuinfo,
            "processor\t: 0\nCPU implementer\t: 0x41\nCPU architecture: 7\n\
             CPU variant\t: 0x0\nCPU part\t: 0xb76\nCPU revision\t: 7\n",
        )
        .unwrap();
        let pi1 = cores_out(&machine::Cores::at(dir.path().join("none"), &cpuinfo));
        assert_eq!((pi1[0].midr.as_str(), pi1[0].arm1176), ("0x410fb767", true));
    }
}
