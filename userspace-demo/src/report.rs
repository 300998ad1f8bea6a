//! Turning a `pmu_linux::measure::Measurement` into what people and machines read.

use pmu_linux::measure::Measurement;
use pmu_linux::pmu_core::{Corrected, Hazards};
use pmu_linux::verdict::ReadPath;
use serde::Serialize;

/// Hazards that every read of a `read()`-only event carries: tolerated (and said so)
/// when no run is free of them, as for software events or on a VM without vPMU.
pub const FALLBACK_ONLY: Hazards = Hazards::SYSCALL_FALLBACK.union(Hazards::NOT_SCHEDULED);

/// The names of the flags of `h`.
pub fn hazard_names(h: Hazards) -> Vec<&'static str> {
    Hazards::NAMES
        .iter()
        .filter(|(flag, _)| h.contains(*flag))
        .map(|(_, name)| *name)
        .collect()
}

/// One event's result.
#[derive(Debug, Serialize)]
pub struct EventReport {
    /// The event name.
    pub name: String,
    /// Smallest value over the clean runs (calibrated when the baseline ran).
    pub min: Option<i64>,
    /// Median over the clean runs (calibrated likewise).
    pub median: Option<i64>,
    /// Largest value over the clean runs (calibrated like `min`: minus `overhead`), so
    /// that min, median and max are in the same units.
    pub max: Option<i64>,
    /// Runs without any hazard on this event.
    pub clean_runs: usize,
    /// Runs measured.
    pub runs: usize,
    /// Hazards of the runs left out of the statistics.
    pub hazards: Vec<&'static str>,
    /// What the calibration subtracted (min of the empty region), when calibrated.
    pub overhead: Option<u64>,
    /// When no run was clean only because every read was a read() fallback: the same
    /// statistics over the runs whose only hazards are those, and their names.
    pub fallback: Option<FallbackStats>,
}

/// Statistics tolerating the read() fallback.
#[derive(Debug, Serialize)]
pub struct FallbackStats {
    /// The hazards tolerated.
    pub tolerated: Vec<&'static str>,
    /// Min, calibrated.
    pub min: Option<i64>,
    /// Median, calibrated.
    pub median: Option<i64>,
    /// Runs that qualified.
    pub runs: usize,
}

/// The kmod-enable-user grant the direct backend works under (pmu-linux `Grant`).
#[derive(Debug, Clone, Serialize)]
pub struct GrantReport {
    /// "read-only" or "program".
    pub access: &'static str,
    /// "per-thread" or "cpu-wide".
    pub scope: &'static str,
    /// Per-thread: whether the module's counters follow the thread (null when
    /// CPU-wide).
    pub follow: Option<bool>,
    /// The CPU the meter is pinned to.
    pub cpu: usize,
    /// The grant in words.
    pub text: String,
}

impl GrantReport {
    pub fn new(grant: pmu_linux::choice::Grant) -> Self {
        let (access, cpu) = match grant {
            pmu_linux::choice::Grant::Program { cpu, .. } => ("program", cpu),
            pmu_linux::choice::Grant::ReadOnly { cpu, .. } => ("read-only", cpu),
            _ => ("other", 0),
        };
        let (scope, follow) = match grant.scope() {
            pmu_linux::choice::GrantScope::Thread { follow } => ("per-thread", Some(follow)),
            _ => ("cpu-wide", None),
        };
        Self {
            access,
            scope,
            follow,
            cpu,
            text: grant.to_string(),
        }
    }
}

/// One recorded run.
#[derive(Debug, Serialize)]
pub struct RunReport {
    /// 0-based.
    pub index: usize,
    /// Raw (uncalibrated) value per event.
    pub values: Vec<u64>,
    /// Hazards of the run (all events).
    pub hazards: Vec<&'static str>,
    /// Voluntary context switches (getrusage) during the run; null where getrusage was
    /// not consulted (a perf run read entirely through the pages: their locks see
    /// every switch).
    pub voluntary_switches: Option<u64>,
    /// Involuntary context switches during the run (null likewise).
    pub involuntary_switches: Option<u64>,
    /// CPU at the start.
    pub cpu_start: Option<u32>,
    /// CPU at the end.
    pub cpu_end: Option<u32>,
    /// Both CPUs came from the thread's rseq area (else sched_getcpu).
    pub cpu_from_rseq: bool,
    /// Some event's perf page was rewritten by the kernel during the run.
    pub page_updated: bool,
    /// `measure --multiplex`: per event, how long it was enabled and on a counter
    /// during the run, and the scaled estimate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multiplexing: Option<Vec<EventTimes>>,
    /// Under kmod-enable-user's per-thread grant: how many times perf took the grant
    /// away during the run and the library put it back (the values stay exact); absent
    /// under every other grant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regrants: Option<u64>,
}

/// One event's times in one run (from the `read()`s at its edges).
#[derive(Debug, Serialize)]
pub struct EventTimes {
    /// Nanoseconds the event was enabled during the run (null when a page read, whose
    /// times stand still between the kernel's updates, was at an edge).
    pub time_enabled: Option<u64>,
    /// Nanoseconds it was on a counter.
    pub time_running: Option<u64>,
    /// The raw value x time_enabled / time_running: perf's estimate of what it would
    /// have counted all along (null when it never ran, or the times are unknown).
    pub scaled: Option<u64>,
    /// running < enabled: the value is an undercount; only the estimate covers the run.
    pub multiplexed: bool,
}

/// Per-event and per-run reports of `m`; with `times`, every run also says per event
/// its times enabled and running and the scaled estimate.
pub fn events_and_runs(m: &Measurement, times: bool) -> (Vec<EventReport>, Vec<RunReport>) {
    let events = m
        .events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let (min, median, overhead) = match e.corrected {
                Some(c) => (c.min, c.median, c.empty.min),
                None => (
                    e.summary.min.map(|v| v as i64),
                    e.summary.median.map(|v| v as i64),
                    None,
                ),
            };
            let max = e
                .summary
                .max
                .map(|v| v as i64 - overhead.unwrap_or(0) as i64);
            let fallback = (e.summary.clean == 0)
                .then(|| tolerated(m, i))
                .filter(|f| f.runs > 0);
            EventReport {
                name: e.name.clone(),
                min,
                median,
                max,
                clean_runs: e.summary.clean,
                runs: e.summary.runs,
                hazards: hazard_names(e.summary.hazards),
                overhead,
                fallback,
            }
        })
        .collect();
    let runs = m
        .runs
        .iter()
        .enumerate()
        .map(|(index, r)| RunReport {
            index,
            values: r.readings.iter().map(|x| x.value).collect(),
            hazards: hazard_names(r.hazards()),
            voluntary_switches: r.evidence.switches.map(|s| s.voluntary),
            involuntary_switches: r.evidence.switches.map(|s| s.involuntary),
            cpu_start: r.evidence.cpu_start,
            cpu_end: r.evidence.cpu_end,
            cpu_from_rseq: r.evidence.cpu_from_rseq,
            page_updated: r.evidence.page_updated,
            multiplexing: times.then(|| {
                r.readings
                    .iter()
                    .map(|x| EventTimes {
                        time_enabled: x.time_enabled,
                        time_running: x.time_running,
                        scaled: x.scaled(),
                        multiplexed: x.hazards.contains(Hazards::MULTIPLEXED),
                    })
                    .collect()
            }),
            regrants: r.evidence.regrants,
        })
        .collect();
    (events, runs)
}

fn tolerated(m: &Measurement, event: usize) -> FallbackStats {
    let c: Corrected = m.tolerating(event, FALLBACK_ONLY);
    let calibrated = !m.baseline.is_empty();
    FallbackStats {
        tolerated: hazard_names(FALLBACK_ONLY),
        min: if calibrated {
            c.min
        } else {
            c.region.min.map(|v| v as i64)
        },
        median: if calibrated {
            c.median
        } else {
            c.region.median.map(|v| v as i64)
        },
        runs: c.region.clean,
    }
}

/// Whether every read of the measurement was a one-instruction read, and if not the
/// first fallback reason seen.
pub fn read_paths(m: &Measurement) -> (bool, Option<String>) {
    let mut reason = None;
    let mut all_fast = true;
    for run in m.runs.iter().chain(&m.baseline) {
        for e in run.evidence.events() {
            for path in [e.start, e.end] {
                if let ReadPath::Syscall(why) = path {
                    all_fast = false;
                    reason.get_or_insert_with(|| why.to_string());
                }
            }
        }
    }
    (all_fast && !m.runs.is_empty(), reason)
}

/// Prints the event table and the runs with hazards (with `--multiplex`, every run's
/// per-event times and scaled estimates).
pub fn print_human(events: &[EventReport], runs: &[RunReport]) {
    println!(
        "  {:<26} {:>14} {:>14} {:>8}  hazards of the other runs",
        "event", "min", "median", "clean"
    );
    for e in events {
        let show = |v: Option<i64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
        println!(
            "  {:<26} {:>14} {:>14} {:>8}  {}",
            e.name,
            show(e.min),
            show(e.median),
            format!("{}/{}", e.clean_runs, e.runs),
            if e.hazards.is_empty() {
                "none".to_owned()
            } else {
                e.hazards.join(",")
            }
        );
        if let Some(f) = &e.fallback {
            println!(
                "  {:<26} {:>14} {:>14} {:>8}  (tolerating {}: every read was a read() system call)",
                "",
                show(f.min),
                show(f.median),
                format!("{}/{}", f.runs, e.runs),
                f.tolerated.join(",")
            );
        }
    }
    let flagged: Vec<&RunReport> = runs
        .iter()
        .filter(|r| {
            r.hazards
                .iter()
                .any(|h| !hazard_names(FALLBACK_ONLY).contains(h))
        })
        .collect();
    for r in flagged {
        let switches = match (r.voluntary_switches, r.involuntary_switches) {
            (Some(v), Some(i)) => format!("switches {v} voluntary, {i} involuntary"),
            _ => "switches not counted".to_owned(),
        };
        println!(
            "  run {}: {} ({switches}; cpu {:?} -> {:?}{})",
            r.index,
            r.hazards.join(","),
            r.cpu_start,
            r.cpu_end,
            if r.page_updated {
                "; perf page rewritten"
            } else {
                ""
            }
        );
    }
    let regranted: Vec<String> = runs
        .iter()
        .filter_map(|r| {
            r.regrants
                .filter(|&n| n > 0)
                .map(|n| format!("run {}: {n}", r.index))
        })
        .collect();
    if !regranted.is_empty() {
        println!(
            "  re-granted after perf revoked the grant (values exact: the counters were \
             untouched): {}",
            regranted.join(", ")
        );
    }
    let show = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
    for r in runs {
        let Some(times) = &r.multiplexing else {
            continue;
        };
        println!("  run {} (raw values; times in ns):", r.index);
        for ((event, t), value) in events.iter().zip(times).zip(&r.values) {
            println!(
                "    {:<24} {:>14} enabled {:>10} running {:>10} scaled {:>14}{}",
                event.name,
                value,
                show(t.time_enabled),
                show(t.time_running),
                show(t.scaled),
                if t.multiplexed { "  multiplexed" } else { "" }
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--json`'s `grant` (measure, and each backend of list) says the grant's access,
    /// scope and whether the counters follow the thread, from pmu-linux's typed
    /// `Grant` (kmod_enable_user_uapi.h's GRANT with `KMOD_EU_GRANTED_FOLLOW`), and its
    /// words.
    #[test]
    fn the_grant_in_json() {
        let thread = GrantReport::new(pmu_linux::choice::Grant::ReadOnly {
            cpu: 1,
            scope: pmu_linux::choice::GrantScope::Thread { follow: true },
        });
        assert_eq!(
            serde_json::to_value(&thread).unwrap(),
            serde_json::json!({
                "access": "read-only",
                "scope": "per-thread",
                "follow": true,
                "cpu": 1,
                "text": "read-only, per-thread, counters follow the thread, CPU 1",
            })
        );
        let cpu_wide = GrantReport::new(pmu_linux::choice::Grant::Program {
            cpu: 0,
            scope: pmu_linux::choice::GrantScope::CpuWide,
        });
        assert_eq!(
            serde_json::to_value(&cpu_wide).unwrap(),
            serde_json::json!({
                "access": "program",
                "scope": "cpu-wide",
                "follow": null,
                "cpu": 0,
                "text": "read and program, CPU-wide, CPU 0",
            })
        );
    }
}
