//! `pmu-demo stat`'s arithmetic and words, apart from any counter: each event's verdict
//! over its runs, the derived figures, the rotation groups, the exit status, and the
//! report as text. Everything here is built from plain counts, so host tests feed it
//! fake ones.

use serde::Serialize;

/// One event's count in one run, as the backend read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunCount {
    /// The raw count, never scaled.
    pub value: u64,
    /// perf: nanoseconds enabled and on a counter (summed over the command's tasks).
    /// `None` for the direct backend, whose counters are on all the time.
    pub times: Option<(u64, u64)>,
    /// The direct backend: a hazard that makes the count meaningless (overflow, the
    /// user access revoked), named.
    pub lost: Option<String>,
}

/// How a command ended, whichever backend ran it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "how", rename_all = "kebab-case")]
pub enum End {
    /// It exited with this status.
    Exited {
        /// The status.
        code: i32,
    },
    /// A signal ended it.
    Signaled {
        /// The signal number.
        signal: i32,
    },
    /// It could not be executed (`execve` failed with this errno, or it is on no
    /// directory of the PATH).
    NotExecuted {
        /// The errno.
        errno: i32,
    },
}

impl End {
    /// The demo's exit status for this end, as a POSIX shell reports a command's
    /// (XCU 2.8.2 "Exit Status for Commands"): its own status; 128 + the signal that
    /// ended it (what bash and dash give `$?`); 127 when it was not found, 126 when
    /// found but not executable.
    pub fn exit_status(self) -> u8 {
        match self {
            End::Exited { code } => (code & 0xff) as u8,
            End::Signaled { signal } => 128u8.wrapping_add((signal & 0x7f) as u8),
            End::NotExecuted { errno } if errno == libc::ENOENT => 127,
            End::NotExecuted { .. } => 126,
        }
    }
}

/// What one event's count is worth, over all its runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// On a counter the whole time the command ran, in every run: the count.
    Exact,
    /// The kernel rotated it through the counters: the count is what it counted while
    /// on one, the estimate scales it by time enabled / time running.
    Multiplexed,
    /// Never on a counter, or its count was lost.
    NotCounted,
    /// The direct backend: everything the CPU counted in user space while the command
    /// ran, the command's and any other task's on that CPU.
    CpuWide,
}

impl Verdict {
    fn word(self) -> &'static str {
        match self {
            Verdict::Exact => "exact",
            Verdict::Multiplexed => "multiplexed",
            Verdict::NotCounted => "not counted",
            Verdict::CpuWide => "cpu-wide",
        }
    }
}

/// One event over all its runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EventStat {
    /// The name as given.
    pub name: String,
    /// The rotation group it was counted in (0 when every event ran together).
    pub group: usize,
    /// What the count is worth.
    pub verdict: Verdict,
    /// The count (smallest over the runs): `None` when multiplexed or not counted.
    pub count: Option<u64>,
    /// The largest count over the runs, when the runs disagreed.
    pub max: Option<u64>,
    /// Multiplexed: the count scaled by enabled / running (the mean over the runs), an
    /// estimate, never a count.
    pub estimate: Option<f64>,
    /// Multiplexed: the smallest share of its enabled time it was on a counter, in %.
    pub running_percent: Option<f64>,
    /// Every run's raw count, in order.
    pub runs: Vec<u64>,
    /// Every run counted the same (exact where runs repeat: QEMU's icount, a quiet
    /// board).
    pub agreed: bool,
    /// Why it was not counted.
    pub why: Option<String>,
}

/// `runs` of one event (at least one) judged together.
pub fn event_stat(name: &str, group: usize, runs: &[RunCount], cpu_wide: bool) -> EventStat {
    let values: Vec<u64> = runs.iter().map(|r| r.value).collect();
    let min = values.iter().copied().min();
    let max = values.iter().copied().max();
    let agreed = min == max;
    let mut stat = EventStat {
        name: name.to_owned(),
        group,
        verdict: if cpu_wide {
            Verdict::CpuWide
        } else {
            Verdict::Exact
        },
        count: min,
        max: if agreed { None } else { max },
        estimate: None,
        running_percent: None,
        runs: values,
        agreed,
        why: None,
    };
    if runs.is_empty() {
        stat.verdict = Verdict::NotCounted;
        stat.why = Some("not run".into());
        return stat;
    }
    if let Some(lost) = runs.iter().find_map(|r| r.lost.as_deref()) {
        stat.verdict = Verdict::NotCounted;
        stat.count = None;
        stat.max = None;
        stat.why = Some(format!("count lost: {lost}"));
        return stat;
    }
    let times: Vec<(u64, u64)> = runs.iter().filter_map(|r| r.times).collect();
    if times.is_empty() {
        return stat;
    }
    if times.iter().any(|&(_, running)| running == 0) {
        stat.verdict = Verdict::NotCounted;
        stat.count = None;
        stat.max = None;
        stat.why = Some(if times.iter().all(|&(enabled, _)| enabled == 0) {
            "never enabled: the command did not run".into()
        } else {
            "never on a counter (more events than counters, or the PMU cannot count it \
             together with the others)"
                .into()
        });
        return stat;
    }
    if times.iter().any(|&(enabled, running)| running < enabled) {
        stat.verdict = Verdict::Multiplexed;
        stat.count = None;
        stat.max = None;
        let scaled: Vec<f64> = runs
            .iter()
            .filter_map(|r| {
                let (enabled, running) = r.times?;
                Some(r.value as f64 * enabled as f64 / running as f64)
            })
            .collect();
        stat.estimate = Some(scaled.iter().sum::<f64>() / scaled.len() as f64);
        stat.running_percent = times
            .iter()
            .map(|&(enabled, running)| 100.0 * running as f64 / enabled as f64)
            .reduce(f64::min);
    }
    stat
}

/// A figure derived from two events.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Derived {
    /// What it is: `insn per cycle`, `branch-misses per branches`, `misses per 1000
    /// instructions`, …
    pub name: String,
    /// The value (a ratio, or per 1000 instructions).
    pub value: f64,
    /// The two events, numerator first.
    pub from: [String; 2],
    /// From a multiplexed event's estimate.
    pub estimate: bool,
    /// From two runs (different rotation groups): exact only where runs repeat.
    pub across_runs: bool,
}

/// A name without perf's modifiers and in lower case: `INSTRUCTIONS:u` → `instructions`.
fn plain(name: &str) -> String {
    let name = name.trim();
    let base = match name.rfind('/') {
        Some(slash) => &name[..=slash],
        None => name.split(':').next().unwrap_or(name),
    };
    base.to_ascii_lowercase()
}

/// Retired instructions, by the names `--events` takes for them.
const INSTRUCTIONS: &[&str] = &["instructions", "inst_retired"];
/// Cycles.
const CYCLES: &[&str] = &["cycles", "cpu-cycles", "cpu_cycles"];
/// (misses, accesses) pairs whose ratio is a miss ratio: perf's generic names and the
/// Arm common events (Arm ARM D17.11 "Common event numbers": a `_REFILL` event counts
/// the accesses of its base event that missed).
const MISS_PAIRS: &[(&str, &str)] = &[
    ("cache-misses", "cache-references"),
    ("branch-misses", "branches"),
    ("branch-misses", "branch-instructions"),
    ("l1-dcache-load-misses", "l1-dcache-loads"),
    ("l1-icache-load-misses", "l1-icache-loads"),
    ("llc-load-misses", "llc-loads"),
    ("dtlb-load-misses", "dtlb-loads"),
    ("itlb-load-misses", "itlb-loads"),
    ("l1d_cache_refill", "l1d_cache"),
    ("l1i_cache_refill", "l1i_cache"),
    ("l2d_cache_refill", "l2d_cache"),
    ("l3d_cache_refill", "l3d_cache"),
    ("l1d_tlb_refill", "l1d_tlb"),
    ("l1i_tlb_refill", "l1i_tlb"),
    ("br_mis_pred", "br_pred"),
    ("br_mis_pred_retired", "br_retired"),
];

/// The figures `events` allow: instructions per cycle, every miss ratio of a pair
/// above, and misses per 1000 instructions for every miss event; from counts, or from
/// estimates (flagged); none from an event not counted.
pub fn derived(events: &[EventStat]) -> Vec<Derived> {
    // An event named twice: its exact count before an estimate.
    let find = |names: &[&str]| {
        let mut named = events
            .iter()
            .filter(|e| names.contains(&plain(&e.name).as_str()));
        let first = named.clone().next();
        named
            .find(|e| matches!(e.verdict, Verdict::Exact | Verdict::CpuWide))
            .or(first)
    };
    let value = |e: &EventStat| match e.verdict {
        Verdict::NotCounted => None,
        Verdict::Multiplexed => e.estimate,
        Verdict::Exact | Verdict::CpuWide => e.count.map(|c| c as f64),
    };
    let figure = |name: String, a: &EventStat, b: &EventStat, scale: f64| {
        let (x, y) = (value(a)?, value(b)?);
        (y > 0.0).then(|| Derived {
            name,
            value: scale * x / y,
            from: [a.name.clone(), b.name.clone()],
            estimate: a.verdict == Verdict::Multiplexed || b.verdict == Verdict::Multiplexed,
            across_runs: a.group != b.group,
        })
    };
    let mut out = Vec::new();
    let instructions = find(INSTRUCTIONS);
    if let (Some(i), Some(c)) = (instructions, find(CYCLES)) {
        out.extend(figure("insn per cycle".into(), i, c, 1.0));
    }
    let mut misses: Vec<&EventStat> = Vec::new();
    for (miss, total) in MISS_PAIRS {
        if let (Some(m), Some(t)) = (find(&[miss]), find(&[total])) {
            out.extend(figure(format!("{} per {}", m.name, t.name), m, t, 1.0));
        }
        if let Some(m) = find(&[miss]) {
            if !misses.iter().any(|e| e.name == m.name) {
                misses.push(m);
            }
        }
    }
    if let Some(i) = instructions {
        for m in misses {
            out.extend(figure(
                format!("{} per 1000 instructions", m.name),
                m,
                i,
                1000.0,
            ));
        }
    }
    out
}

/// Groups of consecutive events, in order, each as large as `fits` allows (at least one
/// event), for `--repeat`'s rotation: `fits` says whether a set of events can be on the
/// counters together.
///
/// # Errors
/// `fits`' error.
pub fn rotation_groups<E>(
    n: usize,
    mut fits: impl FnMut(&[usize]) -> Result<bool, E>,
) -> Result<Vec<Vec<usize>>, E> {
    let mut groups = Vec::new();
    let mut start = 0;
    while start < n {
        let mut end = start + 1;
        while end < n {
            let candidate: Vec<usize> = (start..=end).collect();
            if !fits(&candidate)? {
                break;
            }
            end += 1;
        }
        groups.push((start..end).collect());
        start = end;
    }
    Ok(groups)
}

/// Everything `pmu-demo stat` reports.
#[derive(Clone, Debug, Serialize)]
pub struct StatReport {
    /// The command and its arguments.
    pub command: Vec<String>,
    /// perf or direct (or software: perf's software events where there are no
    /// hardware counters).
    pub backend: &'static str,
    /// What the counts include.
    pub scope: String,
    /// `--repeat`: runs per rotation group.
    pub repeat: usize,
    /// The rotation groups, by event name (one group when every event ran together).
    pub groups: Vec<Vec<String>>,
    /// Every event, in the order given.
    pub events: Vec<EventStat>,
    /// Figures derived from the counts.
    pub derived: Vec<Derived>,
    /// Wall-clock seconds per run (the mean).
    pub elapsed_s: f64,
    /// CPU seconds (user + system) of the command and its waited-for children per run
    /// (the mean).
    pub cpu_s: f64,
    /// The command's runs in all (groups × repeat).
    pub runs: usize,
    /// How the last run ended.
    pub end: End,
    /// The demo's exit status: the command's ([`End::exit_status`]).
    pub exit_status: u8,
    /// Anything the reader must know about these counts.
    pub notes: Vec<String>,
    /// The direct backend: per run, how many sub-regions its counts sum (the counters
    /// are read every 50 ms while the command runs); absent for perf.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sub_regions: Vec<u32>,
}

/// The unit of an event whose count is not a number of events: perf's clock events count
/// nanoseconds (Linux 6.12 kernel/events/core.c `task_clock_event_update`,
/// `cpu_clock_event_update`: `local_clock()` deltas).
fn unit(name: &str) -> Option<&'static str> {
    let base = name.split(':').next().unwrap_or(name);
    matches!(base, "task-clock" | "cpu-clock").then_some("ns")
}

/// The report as `perf stat` prints it: a line per event (count, name, verdict), the
/// derived figures, the times, the exit status, the notes.
pub fn human(r: &StatReport) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let runs = if r.repeat > 1 {
        format!(" ({} runs of each group)", r.repeat)
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "\n Counter stats for '{}'{runs}, {} backend:\n  {}\n",
        r.command.join(" "),
        r.backend,
        r.scope
    );
    let label = |name: &str| match unit(name) {
        Some(unit) => format!("{name} ({unit})"),
        None => name.to_owned(),
    };
    let width = r
        .events
        .iter()
        .map(|e| label(&e.name).len())
        .max()
        .unwrap_or(0);
    for e in &r.events {
        let group = if r.groups.len() > 1 {
            format!(" [group {}]", e.group)
        } else {
            String::new()
        };
        let (count, verdict) = match e.verdict {
            Verdict::Exact | Verdict::CpuWide => {
                let count = e.count.map_or("<not counted>".into(), |c| c.to_string());
                let mut verdict = e.verdict.word().to_owned();
                if let Some(max) = e.max {
                    let _ = write!(verdict, ", runs disagree: up to {max}");
                } else if e.runs.len() > 1 {
                    let _ = write!(verdict, ", {} runs agree", e.runs.len());
                }
                (count, verdict)
            }
            Verdict::Multiplexed => (
                "<multiplexed>".to_owned(),
                format!(
                    "multiplexed, ran {:.1}% of the time: estimate ~{:.0} (scaled, not a count)",
                    e.running_percent.unwrap_or(0.0),
                    e.estimate.unwrap_or(0.0)
                ),
            ),
            Verdict::NotCounted => (
                "<not counted>".to_owned(),
                format!("not counted: {}", e.why.as_deref().unwrap_or("?")),
            ),
        };
        let _ = writeln!(
            s,
            "  {count:>18}  {:<width$}  {verdict}{group}",
            label(&e.name)
        );
    }
    if !r.derived.is_empty() {
        s.push('\n');
        for d in &r.derived {
            let mut flags = Vec::new();
            if d.estimate {
                flags.push("from an estimate");
            }
            if d.across_runs {
                flags.push("across runs");
            }
            let flags = if flags.is_empty() {
                String::new()
            } else {
                format!("  ({})", flags.join(", "))
            };
            let _ = writeln!(s, "  {:>18.4}  {}{flags}", d.value, d.name);
        }
    }
    let _ = writeln!(s, "\n  {:>18.6}  seconds elapsed", r.elapsed_s);
    let _ = writeln!(
        s,
        "  {:>18.6}  seconds CPU (user + system, the command and its children)",
        r.cpu_s
    );
    let end = match r.end {
        End::Exited { code } => format!("exited with {code}"),
        End::Signaled { signal } => format!("killed by signal {signal}"),
        End::NotExecuted { errno } => format!("not executed (errno {errno})"),
    };
    let _ = writeln!(
        s,
        "\n  the command {end}: pmu-demo exits with {}",
        r.exit_status
    );
    for note in &r.notes {
        let _ = writeln!(s, "  note: {note}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact(value: u64) -> RunCount {
        RunCount {
            value,
            times: Some((1000, 1000)),
            lost: None,
        }
    }

    /// POSIX XCU 2.8.2: 127 not found, 126 not executable; bash and dash report a
    /// signal death as 128 + the signal.
    #[test]
    fn exit_status_is_the_shells() {
        assert_eq!(End::Exited { code: 3 }.exit_status(), 3);
        assert_eq!(End::Exited { code: 0 }.exit_status(), 0);
        assert_eq!(End::Signaled { signal: 9 }.exit_status(), 137);
        assert_eq!(End::Signaled { signal: 15 }.exit_status(), 143);
        assert_eq!(
            End::NotExecuted {
                errno: libc::ENOENT
            }
            .exit_status(),
            127
        );
        assert_eq!(
            End::NotExecuted {
                errno: libc::EACCES
            }
            .exit_status(),
            126
        );
        assert_eq!(
            End::NotExecuted {
                errno: libc::ENOEXEC
            }
            .exit_status(),
            126
        );
    }

    /// perf_event_open(2) "time_enabled and time_running": running < enabled means the
    /// event was multiplexed and value × enabled / running is the estimate perf prints;
    /// running 0, never counted.
    #[test]
    fn verdicts_follow_the_times() {
        let e = event_stat("instructions:u", 0, &[exact(500), exact(500)], false);
        assert_eq!(e.verdict, Verdict::Exact);
        assert_eq!((e.count, e.max, e.agreed), (Some(500), None, true));
        let varied = event_stat("cycles", 0, &[exact(500), exact(530)], false);
        assert_eq!(
            (varied.count, varied.max, varied.agreed),
            (Some(500), Some(530), false)
        );
        let half = RunCount {
            value: 400,
            times: Some((1000, 250)),
            lost: None,
        };
        let m = event_stat("branch-misses", 1, &[half], false);
        assert_eq!(m.verdict, Verdict::Multiplexed);
        assert_eq!(m.count, None);
        assert_eq!(m.estimate, Some(1600.0));
        assert_eq!(m.running_percent, Some(25.0));
        let never = RunCount {
            value: 0,
            times: Some((1000, 0)),
            lost: None,
        };
        let n = event_stat("cache-misses", 0, &[never], false);
        assert_eq!(n.verdict, Verdict::NotCounted);
        assert!(n.why.unwrap().contains("never on a counter"));
        let lost = RunCount {
            value: 7,
            times: None,
            lost: Some("overflow".into()),
        };
        let l = event_stat("instructions", 0, &[lost], true);
        assert_eq!(l.verdict, Verdict::NotCounted);
        assert_eq!(l.why.as_deref(), Some("count lost: overflow"));
        let wide = event_stat(
            "instructions",
            0,
            &[RunCount {
                value: 9,
                times: None,
                lost: None,
            }],
            true,
        );
        assert_eq!((wide.verdict, wide.count), (Verdict::CpuWide, Some(9)));
    }

    /// IPC = instructions / cycles; a miss ratio is misses / accesses (Arm ARM D17.11:
    /// L1D_CACHE_REFILL counts the L1D_CACHE accesses that missed); MPKI = misses ×
    /// 1000 / instructions.
    #[test]
    fn derived_figures_from_fake_counts() {
        let events = vec![
            event_stat("instructions:u", 0, &[exact(2000)], false),
            event_stat("cycles:u", 0, &[exact(1000)], false),
            event_stat("L1D_CACHE_REFILL", 1, &[exact(50)], false),
            event_stat("l1d_cache", 1, &[exact(500)], false),
            event_stat(
                "branch-misses",
                0,
                &[RunCount {
                    value: 5,
                    times: Some((100, 50)),
                    lost: None,
                }],
                false,
            ),
            event_stat(
                "branches",
                0,
                &[RunCount {
                    value: 0,
                    times: Some((100, 0)),
                    lost: None,
                }],
                false,
            ),
        ];
        let d = derived(&events);
        let get = |name: &str| d.iter().find(|f| f.name == name).cloned();
        let ipc = get("insn per cycle").unwrap();
        assert_eq!(ipc.value, 2.0);
        assert!(!ipc.estimate && !ipc.across_runs);
        let ratio = get("L1D_CACHE_REFILL per l1d_cache").unwrap();
        assert_eq!(ratio.value, 0.1);
        assert!(!ratio.across_runs);
        let mpki = get("L1D_CACHE_REFILL per 1000 instructions").unwrap();
        assert_eq!(mpki.value, 25.0);
        assert!(mpki.across_runs);
        // branches never counted: no ratio; branch-misses multiplexed: its MPKI is
        // from the estimate (5 × 100 / 50 = 10 → 5 per 1000 instructions).
        assert!(get("branch-misses per branches").is_none());
        // Named twice, multiplexed first: the exact one counts.
        let mut twice = vec![event_stat(
            "instructions",
            0,
            &[RunCount {
                value: 1,
                times: Some((100, 50)),
                lost: None,
            }],
            false,
        )];
        twice.extend(events.clone());
        assert_eq!(derived(&twice)[0].value, 2.0);
        assert!(!derived(&twice)[0].estimate);
        let b = get("branch-misses per 1000 instructions").unwrap();
        assert_eq!(b.value, 5.0);
        assert!(b.estimate);
    }

    /// Groups as large as the counters allow, in order: a fake PMU of 2 counters plus
    /// a dedicated cycle counter (Arm ARM D13: PMCCNTR_EL0 besides PMEVCNTR<n>).
    #[test]
    fn rotation_fills_each_group() {
        let names = ["cycles", "a", "b", "c", "d", "cycles2"];
        let fits = |set: &[usize]| -> Result<bool, ()> {
            let programmable = set.iter().filter(|&&i| names[i] != "cycles").count();
            Ok(programmable <= 2)
        };
        assert_eq!(
            rotation_groups(names.len(), fits).unwrap(),
            vec![vec![0, 1, 2], vec![3, 4], vec![5]]
        );
        assert_eq!(
            rotation_groups(3, |_: &[usize]| Ok::<_, ()>(true)).unwrap(),
            vec![vec![0, 1, 2]]
        );
        assert_eq!(
            rotation_groups(2, |_: &[usize]| Ok::<_, ()>(false)).unwrap(),
            vec![vec![0], vec![1]]
        );
        assert_eq!(
            rotation_groups(1, |_: &[usize]| Err("no")),
            Ok(vec![vec![0]])
        );
        assert_eq!(rotation_groups(2, |_: &[usize]| Err("no")), Err("no"));
    }

    /// The text a person reads: counts, verdicts, the estimate marked as such, the
    /// group of each event when rotated, the exit status.
    /// perf's clock events count nanoseconds (kernel/events/core.c, Linux 6.12:
    /// `task_clock_event_update` adds `local_clock()` deltas): the report says so, and
    /// leaves event counts without a unit.
    #[test]
    fn clock_events_are_labelled_in_nanoseconds() {
        assert_eq!(unit("task-clock"), Some("ns"));
        assert_eq!(unit("cpu-clock:u"), Some("ns"));
        assert_eq!(unit("instructions:u"), None);
        let events = vec![
            event_stat("task-clock", 0, &[exact(1_007_522)], false),
            event_stat("page-faults", 0, &[exact(101)], false),
        ];
        let report = StatReport {
            command: vec!["ls".into()],
            backend: "software",
            scope: "the command".into(),
            repeat: 1,
            groups: vec![vec!["task-clock".into(), "page-faults".into()]],
            derived: derived(&events),
            events,
            elapsed_s: 0.001,
            cpu_s: 0.001,
            runs: 1,
            end: End::Exited { code: 0 },
            exit_status: 0,
            notes: Vec::new(),
            sub_regions: Vec::new(),
        };
        let text = human(&report);
        assert!(text.contains("1007522  task-clock (ns)  exact"), "{text}");
        assert!(text.contains("    101  page-faults      exact"), "{text}");
    }

    #[test]
    fn human_output_from_fake_counts() {
        let events = vec![
            event_stat("instructions:u", 0, &[exact(2000), exact(2000)], false),
            event_stat("cycles:u", 1, &[exact(1000), exact(1100)], false),
            event_stat(
                "branch-misses",
                1,
                &[RunCount {
                    value: 10,
                    times: Some((100, 50)),
                    lost: None,
                }],
                false,
            ),
        ];
        let report = StatReport {
            command: vec!["./block".into(), "100".into()],
            backend: "perf",
            scope: "the command, its threads and children".into(),
            repeat: 2,
            groups: vec![vec!["instructions:u".into()], vec!["cycles:u".into()]],
            derived: derived(&events),
            events,
            elapsed_s: 0.5,
            cpu_s: 0.25,
            runs: 4,
            end: End::Signaled { signal: 9 },
            exit_status: 137,
            notes: vec!["a note".into()],
            sub_regions: Vec::new(),
        };
        let text = human(&report);
        assert!(
            text.contains("Counter stats for './block 100' (2 runs of each group), perf backend"),
            "{text}"
        );
        assert!(
            text.contains("2000  instructions:u  exact, 2 runs agree [group 0]"),
            "{text}"
        );
        assert!(
            text.contains("1000  cycles:u        exact, runs disagree: up to 1100 [group 1]"),
            "{text}"
        );
        assert!(
            text.contains(
                "<multiplexed>  branch-misses   multiplexed, ran 50.0% of the time: estimate ~20 (scaled, not a count)"
            ),
            "{text}"
        );
        assert!(
            text.contains("2.0000  insn per cycle  (across runs)"),
            "{text}"
        );
        assert!(
            text.contains("the command killed by signal 9: pmu-demo exits with 137"),
            "{text}"
        );
        assert!(text.contains("note: a note"), "{text}");
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["events"][2]["verdict"], "multiplexed");
        assert_eq!(json["events"][2]["count"], serde_json::Value::Null);
        assert_eq!(json["events"][2]["estimate"], 20.0);
        assert_eq!(json["end"]["how"], "signaled");
        assert_eq!(json["exit_status"], 137);
    }
}
