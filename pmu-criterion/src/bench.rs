//! [`Bench`]: a benchmark harness that runs criterion where counts vary and measures
//! each benchmark once, exactly, where they do not (one-shot exact mode), with a
//! regression gate ([`crate::gate`]).
//!
//! Where counts are exact (pmu-qemu's guest: QEMU's `-icount` with one vCPU, whose
//! runner sets [`EXACT_ENV`]), criterion's wall-clock warm-up and samples, spent in the
//! guest's virtual time, only cost time: one call gives the same count every time. In
//! one-shot exact mode a benchmark is called once to warm up, then counted in a region
//! of 0 calls and one of 1 call, twice; the figure is the difference (the reads' own
//! cost and the region's fixed instructions cancel), and the second pair must equal the
//! first. Where they differ because the routine itself ran other instructions on its
//! third call than on its second (a heap in another state, a cache filled by the
//! previous call), the benchmark is counted again in two fresh processes of this
//! program, each calling it once to warm up and counting its second call, as Valgrind's
//! tools count a fresh process: those two must agree, else the benchmark is an error
//! naming every count.

#[cfg(test)]
use std::cell::RefCell;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use criterion::{BenchmarkId, Criterion};
use pmu_linux::{Event, GenericEvent};

use crate::gate::{
    self, Baseline, BaselineEntry, BenchmarkSummary, Limit, Status, Store, StoreError, Summary,
};
use crate::PmuMeasurement;

/// Set to `1` by pmu-qemu in its guest when counts there are exact (`-icount`, one
/// vCPU); one-shot exact mode follows it.
pub const EXACT_ENV: &str = "PMU_QEMU_EXACT";
/// `exact` or `sampled`: overrides [`EXACT_ENV`] (one-shot exact mode on request, or
/// criterion's sampling under pmu-qemu).
pub const MODE_ENV: &str = "PMU_CRITERION_MODE";

/// Set by one-shot exact mode for the fresh processes it starts (this program, with the
/// same arguments): the id of the one benchmark such a process counts. Not for users.
pub const FRESH_ENV: &str = "PMU_CRITERION_FRESH";

/// The line a fresh process prints with its counts of regions of 0 and 1 calls.
const FRESH_LINE: &str = "pmu-criterion-fresh";

/// Why a [`Bench`] could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum BenchError {
    /// The arguments or the mode's environment variable are wrong.
    Usage(String),
    /// No meter ([`PmuMeasurement::new`]'s error).
    Meter(pmu_linux::Error),
    /// One-shot exact mode was asked for where the event is not counted.
    NotCounted(String),
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Usage(why) => write!(f, "pmu-criterion: {why}"),
            Self::Meter(e) => write!(f, "pmu-criterion: no meter: {e}"),
            Self::NotCounted(why) => write!(
                f,
                "pmu-criterion: one-shot exact mode needs the event counted, and here it is not: {why}"
            ),
        }
    }
}

impl std::error::Error for BenchError {}

impl BenchError {
    /// The exit status for it: [`gate::EXIT_USAGE`] for usage, [`gate::EXIT_ERROR`]
    /// otherwise.
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(match self {
            Self::Usage(_) => gate::EXIT_USAGE,
            _ => gate::EXIT_ERROR,
        })
    }
}

/// Which way a [`Bench`] measures, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// One call per benchmark, exactly: the reason (`--one-shot`, [`MODE_ENV`],
    /// [`EXACT_ENV`]).
    Exact(String),
    /// Criterion's sampling.
    Sampled,
}

/// The mode for these arguments and environment values (of [`MODE_ENV`] and
/// [`EXACT_ENV`]): `--one-shot`, else [`MODE_ENV`], else [`EXACT_ENV`]` = 1`.
///
/// # Errors
/// A [`MODE_ENV`] other than `exact` or `sampled`.
pub fn choose_mode(
    args: &[String],
    mode_env: Option<&str>,
    exact_env: Option<&str>,
) -> Result<Mode, BenchError> {
    if args.iter().any(|a| a == "--one-shot") {
        return Ok(Mode::Exact("asked for: --one-shot".into()));
    }
    match mode_env {
        Some("exact") => return Ok(Mode::Exact(format!("asked for: {MODE_ENV}=exact"))),
        Some("sampled") => return Ok(Mode::Sampled),
        Some(other) => {
            return Err(BenchError::Usage(format!(
                "{MODE_ENV}={other}: `exact` or `sampled`"
            )))
        }
        None => {}
    }
    if exact_env == Some("1") {
        return Ok(Mode::Exact(format!(
            "{EXACT_ENV}=1: pmu-qemu's guest, -icount with one vCPU"
        )));
    }
    Ok(Mode::Sampled)
}

/// The arguments one-shot exact mode reads (cargo's and criterion's usual ones).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Args {
    /// `--bench` (cargo bench): measure. Without it (cargo test), each benchmark runs
    /// once, unmeasured, as criterion does.
    pub bench: bool,
    /// `--test`: run each once even with `--bench`.
    pub test: bool,
    /// `--list`: name the benchmarks.
    pub list: bool,
    /// Only ids containing it (equal to it with `--exact`).
    pub filter: Option<String>,
    /// `--exact`: the filter is the whole id.
    pub exact_filter: bool,
    /// `--save-baseline NAME`.
    pub save_baseline: Option<String>,
    /// `--baseline NAME`.
    pub baseline: Option<String>,
    /// `--limit METRIC=+N%|+N`, each.
    pub limits: Vec<Limit>,
    /// Criterion's sampling and presentation options, accepted and not used.
    pub ignored: Vec<String>,
}

/// Criterion's options that have no meaning in one-shot exact mode: flags, then options
/// with a value.
const IGNORED_FLAGS: &[&str] = &[
    "--noplot",
    "-n",
    "--nocapture",
    "--show-output",
    "--quiet",
    "--verbose",
    "-v",
    "--quick",
];
const IGNORED_WITH_VALUE: &[&str] = &[
    "--sample-size",
    "--warm-up-time",
    "--measurement-time",
    "--nresamples",
    "--noise-threshold",
    "--confidence-level",
    "--significance-level",
    "--color",
    "-c",
    "--format",
    "--output-format",
    "--plotting-backend",
];
/// Criterion's options one-shot exact mode cannot honour.
const UNSUPPORTED: &[&str] = &[
    "--load-baseline",
    "--discard-baseline",
    "--baseline-lenient",
    "--profile-time",
    "--ignored",
];

/// `args` (without the program's name) in one-shot exact mode.
///
/// # Errors
/// Unknown or unsupported options, missing values, bad limits or baseline names.
pub fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut out = Args::default();
    let mut it = args.iter();
    while let Some(word) = it.next() {
        let (name, inline) = match word.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_owned())),
            _ => (word.as_str(), None),
        };
        let mut value = |what: &str| {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| format!("{name} needs {what}"))
        };
        match name {
            "--bench" => out.bench = true,
            "--test" => out.test = true,
            "--list" => out.list = true,
            "--exact" => out.exact_filter = true,
            "--one-shot" => {}
            "--save-baseline" | "-s" => out.save_baseline = Some(baseline_name(value("a name")?)?),
            "--baseline" | "-b" => out.baseline = Some(baseline_name(value("a name")?)?),
            "--limit" => {
                let spec = value("METRIC=+N% or METRIC=+N")?;
                out.limits
                    .push(spec.parse().map_err(|e| format!("--limit {e}"))?);
            }
            _ if IGNORED_FLAGS.contains(&name) => out.ignored.push(word.clone()),
            _ if IGNORED_WITH_VALUE.contains(&name) => {
                let v = value("a value")?;
                out.ignored.push(format!("{name} {v}"));
            }
            _ if UNSUPPORTED.contains(&name) => {
                return Err(format!(
                    "{name} is criterion's, and one-shot exact mode does not support it (PMU_CRITERION_MODE=sampled runs criterion)"
                ))
            }
            _ if name.starts_with('-') => {
                return Err(format!(
                    "unknown option {word}; one-shot exact mode takes [FILTER] [--exact] [--save-baseline NAME] [--baseline NAME] [--limit METRIC=+N%|+N]... [--list] [--test]"
                ))
            }
            _ if out.filter.is_none() => out.filter = Some(word.clone()),
            _ => return Err(format!("a second filter `{word}`: one filter only")),
        }
    }
    Ok(out)
}

fn baseline_name(name: String) -> Result<String, String> {
    if gate::valid_name(&name) {
        Ok(name)
    } else {
        Err(StoreError::BadName(name).to_string())
    }
}

/// What counts in one-shot exact mode: the measurement, or (in tests) a script.
enum Counter {
    Meter(PmuMeasurement),
    #[cfg(test)]
    Script {
        metric: String,
        counts: RefCell<std::collections::VecDeque<Result<u64, String>>>,
    },
}

impl Counter {
    fn metric(&self) -> String {
        match self {
            Self::Meter(m) => m.shared.counted.clone(),
            #[cfg(test)]
            Self::Script { metric, .. } => metric.clone(),
        }
    }

    fn describe(&self) -> String {
        match self {
            Self::Meter(m) => m.describe(),
            #[cfg(test)]
            Self::Script { metric, .. } => format!("a script of {metric}"),
        }
    }

    fn count<O>(&self, calls: u64, routine: &mut impl FnMut() -> O) -> Result<u64, String> {
        match self {
            Self::Meter(m) => m.count_clean(calls, routine),
            #[cfg(test)]
            Self::Script { counts, .. } => {
                for _ in 0..calls {
                    std::hint::black_box(routine());
                }
                counts
                    .borrow_mut()
                    .pop_front()
                    .unwrap_or_else(|| Err("the script ran out".into()))
            }
        }
    }
}

/// Where one-shot exact mode counts a benchmark in fresh processes: this program, or
/// (in tests) a script.
enum Fresh {
    Process {
        program: PathBuf,
        args: Vec<String>,
    },
    #[cfg(test)]
    Script(RefCell<std::collections::VecDeque<Result<(u64, u64), String>>>),
}

impl Fresh {
    /// The counts of regions of 0 and 1 calls of benchmark `id` in a fresh process.
    fn count(&self, id: &str) -> Result<(u64, u64), String> {
        match self {
            Self::Process { program, args } => {
                let out = Command::new(program)
                    .args(args)
                    .env(FRESH_ENV, id)
                    .stdin(Stdio::null())
                    .output()
                    .map_err(|e| format!("a fresh process ({}): {e}", program.display()))?;
                let stdout = String::from_utf8_lossy(&out.stdout);
                let counts = stdout.lines().find_map(|l| {
                    let mut words = l.strip_prefix(FRESH_LINE)?.split_whitespace();
                    Some((words.next()?.parse().ok()?, words.next()?.parse().ok()?))
                });
                match counts {
                    Some(counts) if out.status.success() => Ok(counts),
                    _ => Err(format!(
                        "a fresh process counted nothing ({}): {}",
                        out.status,
                        String::from_utf8_lossy(&out.stderr).trim()
                    )),
                }
            }
            #[cfg(test)]
            Self::Script(counts) => counts
                .borrow_mut()
                .pop_front()
                .unwrap_or_else(|| Err("no fresh process in this test".into())),
        }
    }
}

/// One-shot exact mode's state.
struct OneShot {
    counter: Counter,
    fresh: Fresh,
    /// In a fresh process: the one benchmark to count, and whether it was.
    child: Option<(String, bool)>,
    args: Args,
    binary: String,
    store: Store,
    baseline: Option<Baseline>,
    results: Vec<BenchmarkSummary>,
    errors: Vec<String>,
    out: Box<dyn Write>,
    err: Box<dyn Write>,
}

enum Inner {
    Exact(Box<OneShot>),
    Sampled {
        criterion: Box<Criterion<PmuMeasurement>>,
        measurement: PmuMeasurement,
    },
}

/// A benchmark harness over a [`PmuMeasurement`]: criterion's sampling where counts
/// vary, one exact call per benchmark where they do not ([`choose_mode`]), and in that
/// mode baselines, limits and a JSON summary ([`crate::gate`]).
///
/// ```no_run
/// use std::hint::black_box;
/// # fn work(n: u64) -> u64 { n }
/// fn main() -> std::process::ExitCode {
///     let mut bench = match pmu_criterion::Bench::instructions() {
///         Ok(b) => b,
///         Err(e) => {
///             eprintln!("{e}");
///             return e.exit_code();
///         }
///     };
///     for n in [100u64, 200] {
///         bench.with_input("work", &n, |&n| work(black_box(n)));
///     }
///     bench.finish()
/// }
/// ```
pub struct Bench {
    inner: Inner,
}

impl Bench {
    /// Retired instructions, with the arguments and environment of this process.
    ///
    /// # Errors
    /// As [`Bench::with_criterion`], and the meter's.
    pub fn instructions() -> Result<Self, BenchError> {
        Self::new(GenericEvent::Instructions)
    }

    /// `event`, with the arguments and environment of this process.
    ///
    /// # Errors
    /// As [`Bench::with_criterion`], and the meter's.
    pub fn new(event: impl Into<Event>) -> Result<Self, BenchError> {
        let m = PmuMeasurement::new(event).map_err(BenchError::Meter)?;
        Self::with_criterion(m, Criterion::default())
    }

    /// Over `measurement`, with `criterion`'s configuration (warm-up, measurement time,
    /// sample size) where criterion samples; the arguments and environment of this
    /// process choose the mode ([`choose_mode`]).
    ///
    /// # Errors
    /// Bad arguments, one-shot exact mode where the event is not counted (the
    /// time-stamp counter stands in), `--limit` where criterion samples.
    pub fn with_criterion(
        measurement: PmuMeasurement,
        criterion: Criterion,
    ) -> Result<Self, BenchError> {
        let mut words = std::env::args_os().map(|a| a.to_string_lossy().into_owned());
        let program = words.next().unwrap_or_default();
        let args: Vec<String> = words.collect();
        let mode_env = std::env::var(MODE_ENV).ok();
        let exact_env = std::env::var(EXACT_ENV).ok();
        let child = std::env::var(FRESH_ENV).ok();
        let mode = match &child {
            Some(id) => Mode::Exact(format!("a fresh process counting {id}")),
            None => choose_mode(&args, mode_env.as_deref(), exact_env.as_deref())?,
        };
        match mode {
            Mode::Exact(why) => {
                if measurement.is_fallback() {
                    return Err(BenchError::NotCounted(measurement.describe()));
                }
                let fresh = Fresh::Process {
                    program: std::env::current_exe().unwrap_or_else(|_| PathBuf::from(&program)),
                    args: args.clone(),
                };
                let args = parse_args(&args).map_err(BenchError::Usage)?;
                let one_shot = OneShot::new(
                    Counter::Meter(measurement),
                    fresh,
                    child,
                    args,
                    gate::binary_name(Path::new(&program)),
                    Store::from_env(),
                    Box::new(std::io::stdout()),
                    Box::new(std::io::stderr()),
                    &why,
                );
                Ok(Self {
                    inner: Inner::Exact(Box::new(one_shot)),
                })
            }
            Mode::Sampled => {
                if let Some(a) = args.iter().find(|a| a.starts_with("--limit")) {
                    return Err(BenchError::Usage(format!(
                        "{a}: limits need one-shot exact mode (pmu-qemu's guest, --one-shot or {MODE_ENV}=exact); criterion's sampled estimates have no gate"
                    )));
                }
                eprintln!("{}", measurement.describe());
                let criterion = criterion
                    .with_measurement(measurement.clone())
                    .configure_from_args();
                Ok(Self {
                    inner: Inner::Sampled {
                        criterion: Box::new(criterion),
                        measurement,
                    },
                })
            }
        }
    }

    /// Whether this run is in one-shot exact mode.
    pub fn is_exact(&self) -> bool {
        matches!(self.inner, Inner::Exact(_))
    }

    /// Benchmarks `routine` under `id`.
    pub fn function<O>(&mut self, id: &str, mut routine: impl FnMut() -> O) -> &mut Self {
        match &mut self.inner {
            Inner::Exact(one) => one.run(id, routine),
            Inner::Sampled {
                criterion,
                measurement,
            } => {
                criterion.bench_function(id, |b| {
                    b.iter_custom(|iters| measurement.iter_clean(iters, &mut routine))
                });
            }
        }
        self
    }

    /// Benchmarks `routine` on `input` under `name/input` (criterion's
    /// `BenchmarkId::new(name, input)`).
    pub fn with_input<I: fmt::Display, O>(
        &mut self,
        name: &str,
        input: &I,
        mut routine: impl FnMut(&I) -> O,
    ) -> &mut Self {
        match &mut self.inner {
            Inner::Exact(one) => one.run(&format!("{name}/{input}"), || routine(input)),
            Inner::Sampled {
                criterion,
                measurement,
            } => {
                criterion.bench_with_input(BenchmarkId::new(name, input), input, |b, i| {
                    b.iter_custom(|iters| measurement.iter_clean(iters, || routine(i)))
                });
            }
        }
        self
    }

    /// Ends the run: criterion's summary where it sampled; in one-shot exact mode the
    /// baseline saved, the verdicts, the JSON summary, and the exit status (0, 3 for a
    /// regression, 1 for an error: [`crate::gate`]).
    pub fn finish(self) -> ExitCode {
        match self.inner {
            Inner::Exact(one) => ExitCode::from(one.finish()),
            Inner::Sampled {
                criterion,
                measurement,
            } => {
                criterion.final_summary();
                eprintln!("{}", measurement.report());
                ExitCode::SUCCESS
            }
        }
    }
}

impl OneShot {
    #[allow(clippy::too_many_arguments)]
    fn new(
        counter: Counter,
        fresh: Fresh,
        child: Option<String>,
        args: Args,
        binary: String,
        store: Store,
        mut out: Box<dyn Write>,
        mut err: Box<dyn Write>,
        why: &str,
    ) -> Self {
        let mut errors = Vec::new();
        let measuring = args.bench && !args.test && !args.list && child.is_none();
        if measuring {
            let _ = writeln!(
                out,
                "pmu-criterion: one-shot exact mode ({why}): each benchmark is called once to warm up, then counted in regions of 0 and 1 calls, twice; the figure is one call's count, and the two must agree (where the routine's second and third calls differ, it is counted in two fresh processes instead, which must agree)"
            );
            let _ = writeln!(err, "{}", counter.describe());
            if !args.ignored.is_empty() {
                let _ = writeln!(
                    err,
                    "pmu-criterion: not used in one-shot exact mode: {}",
                    args.ignored.join(", ")
                );
            }
        }
        let baseline = match (&args.baseline, measuring) {
            (Some(name), true) => match store.load(name, &binary) {
                Ok(b) => Some(b),
                Err(e) => {
                    errors.push(e.to_string());
                    None
                }
            },
            _ => None,
        };
        if measuring {
            let metric = counter.metric();
            for l in args.limits.iter().filter(|l| l.metric != metric) {
                let _ = writeln!(
                    err,
                    "pmu-criterion: --limit {l}: this binary counts {metric}, not {}",
                    l.metric
                );
            }
        }
        Self {
            counter,
            fresh,
            child: child.map(|id| (id, false)),
            args,
            binary,
            store,
            baseline,
            results: Vec::new(),
            errors,
            out,
            err,
        }
    }

    fn selected(&self, id: &str) -> bool {
        match &self.args.filter {
            None => true,
            Some(f) if self.args.exact_filter => id == f,
            Some(f) => id.contains(f.as_str()),
        }
    }

    fn run<O>(&mut self, id: &str, mut routine: impl FnMut() -> O) {
        if let Some((target, done)) = &mut self.child {
            // A fresh process: this benchmark alone, one warm-up call and one pair.
            if id == target.as_str() && !*done {
                *done = true;
                std::hint::black_box(routine());
                let counts = self
                    .counter
                    .count(0, &mut routine)
                    .and_then(|none| Ok((none, self.counter.count(1, &mut routine)?)));
                match counts {
                    Ok((none, one)) => {
                        let _ = writeln!(self.out, "{FRESH_LINE} {none} {one}");
                    }
                    Err(e) => {
                        let _ = writeln!(self.err, "pmu-criterion: {id}: {e}");
                    }
                }
            }
            return;
        }
        if !self.selected(id) {
            return;
        }
        if self.args.list {
            let _ = writeln!(self.out, "{id}: benchmark");
            return;
        }
        if !self.args.bench || self.args.test {
            // As criterion's test mode: once, to see that it runs.
            std::hint::black_box(routine());
            let _ = writeln!(self.out, "Testing {id}\nSuccess");
            return;
        }
        let metric = self.counter.metric();
        if self.results.iter().any(|r| r.id == id) {
            // A baseline keeps one count per id: a second would be compared with the
            // first's.
            let entry =
                BenchmarkSummary::failed(id, &metric, "a second benchmark with this id".into());
            let _ = writeln!(self.out, "{}", line(&entry, None));
            self.results.push(entry);
            return;
        }
        let entry = match self.measure(id, &mut routine) {
            Ok(count) => {
                let old = self.baseline.as_ref().and_then(|b| b.count(id, &metric));
                BenchmarkSummary::measured(
                    id,
                    &metric,
                    count,
                    self.args.baseline.is_some(),
                    old,
                    &self.args.limits,
                )
            }
            Err(why) => BenchmarkSummary::failed(id, &metric, why),
        };
        let _ = writeln!(self.out, "{}", line(&entry, self.args.baseline.as_deref()));
        self.results.push(entry);
    }

    /// One warm-up call, then regions of 0 and 1 calls, twice: one call's count; where
    /// the two differ, the same in two fresh processes, which must agree.
    fn measure<O>(&mut self, id: &str, routine: &mut impl FnMut() -> O) -> Result<u64, String> {
        std::hint::black_box(routine());
        let mut pair = || -> Result<(u64, u64), String> {
            Ok((
                self.counter.count(0, routine)?,
                self.counter.count(1, routine)?,
            ))
        };
        let first = pair()?;
        let second = pair()?;
        let one_call = |(none, one): (u64, u64)| {
            one.checked_sub(none).ok_or_else(|| {
                format!("a region of 1 call counted {one}, fewer than one of 0 calls ({none})")
            })
        };
        let (a, b) = (one_call(first)?, one_call(second)?);
        if first == second {
            return Ok(a);
        }
        let metric = self.counter.metric();
        let in_process = format!(
            "{a} then {b} {metric} per call (regions of 0 and 1 calls: {} and {}, then {} and {})",
            first.0, first.1, second.0, second.1
        );
        // The routine may have run other instructions on its third call than on its
        // second: each fresh process counts its second call, from the same state.
        let fresh = (|| -> Result<(u64, u64), String> {
            let (x, y) = (self.fresh.count(id)?, self.fresh.count(id)?);
            if x != y {
                return Err(format!(
                    "two fresh processes disagree too: {} then {} (regions of 0 and 1 calls: {} and {}, then {} and {})",
                    one_call(x)?,
                    one_call(y)?,
                    x.0,
                    x.1,
                    y.0,
                    y.1
                ));
            }
            Ok(x)
        })();
        match fresh {
            Ok(counts) => {
                let count = one_call(counts)?;
                let _ = writeln!(
                    self.err,
                    "pmu-criterion: {id}: its second and third calls in one process differ ({in_process}); counted in two fresh processes instead, each its second call: {count} both times"
                );
                Ok(count)
            }
            Err(why) => Err(format!(
                "two runs disagree: {in_process}; {why}: these counts are not exact here"
            )),
        }
    }

    /// The verdicts, the baseline, the summary; the exit status.
    fn finish(mut self) -> u8 {
        if let Some((id, done)) = &self.child {
            if !done {
                let _ = writeln!(
                    self.err,
                    "pmu-criterion: a fresh process found no benchmark `{id}`"
                );
                return gate::EXIT_ERROR;
            }
            return 0;
        }
        if !self.args.bench || self.args.test || self.args.list {
            return 0;
        }
        let mut errors = std::mem::take(&mut self.errors);
        if let Some(name) = &self.args.save_baseline {
            let failed = self.results.iter().any(|r| r.count.is_none());
            if failed || !errors.is_empty() {
                errors.push(format!(
                    "baseline `{name}` not saved: not every benchmark was measured"
                ));
            } else {
                let baseline = Baseline {
                    schema: gate::SCHEMA,
                    name: name.clone(),
                    binary: self.binary.clone(),
                    benchmarks: self
                        .results
                        .iter()
                        .filter_map(|r| {
                            Some(BaselineEntry {
                                id: r.id.clone(),
                                metric: r.metric.clone(),
                                count: r.count?,
                            })
                        })
                        .collect(),
                };
                match self.store.save(&baseline) {
                    Ok(path) => {
                        let _ = writeln!(
                            self.err,
                            "pmu-criterion: baseline `{name}` saved: {}",
                            path.display()
                        );
                    }
                    Err(e) => errors.push(format!("baseline `{name}` not saved: {e}")),
                }
            }
        }
        let summary = Summary::new(
            &self.binary,
            &self.counter.describe(),
            self.args.baseline.as_deref(),
            self.args.save_baseline.as_deref(),
            &self.args.limits,
            std::mem::take(&mut self.results),
            errors,
        );
        let mut summary = summary;
        if let Err(e) = self.store.save_summary(&summary) {
            summary.errors.push(format!("the summary: {e}"));
            summary.exit_code = gate::EXIT_ERROR;
            summary.passed = false;
        } else {
            let _ = writeln!(
                self.err,
                "pmu-criterion: summary: {}",
                self.store.summary_path(&summary.binary).display()
            );
        }
        for b in summary
            .benchmarks
            .iter()
            .filter(|b| b.status == Status::Regressed)
        {
            let _ = writeln!(
                self.err,
                "pmu-criterion: REGRESSED {}: {} beyond {}",
                b.id,
                b.change_text(),
                b.exceeded.join(", ")
            );
        }
        for e in &summary.errors {
            let _ = writeln!(self.err, "pmu-criterion: error: {e}");
        }
        let _ = writeln!(
            self.err,
            "pmu-criterion: {} benchmarks, {} regressed, {} errors: {}",
            summary.benchmarks.len(),
            summary.regressed.len(),
            summary.errors.len(),
            match summary.exit_code {
                0 => "passed".to_owned(),
                c => format!("failed (exit {c})"),
            }
        );
        summary.exit_code
    }
}

/// A benchmark's result line: `spin/100   206 instructions (exact)`, with the baseline's
/// count and the verdict where there is one.
fn line(entry: &BenchmarkSummary, baseline: Option<&str>) -> String {
    let Some(count) = entry.count else {
        return format!(
            "{:<24} not measured: {}",
            entry.id,
            entry.error.as_deref().unwrap_or("")
        );
    };
    let head = format!("{:<24} {count:>12} {} (exact)", entry.id, entry.metric);
    let Some(name) = baseline else {
        return head;
    };
    let verdict = match entry.status {
        Status::New => format!("no count in baseline `{name}`"),
        Status::Unchanged => format!("unchanged from baseline `{name}`"),
        Status::Improved => format!("improved on baseline `{name}`: {}", entry.change_text()),
        Status::Increased => format!(
            "within the limits of baseline `{name}`: {}",
            entry.change_text()
        ),
        Status::Regressed => format!(
            "REGRESSED from baseline `{name}`: {} beyond {}",
            entry.change_text(),
            entry.exceeded.join(", ")
        ),
        Status::Measured | Status::Error => String::new(),
    };
    format!("{head}   {verdict}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    /// A writer the test can read back.
    #[derive(Clone, Default)]
    struct Captured(Rc<RefCell<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Captured {
        fn text(&self) -> String {
            String::from_utf8_lossy(&self.0.borrow()).into_owned()
        }
    }

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    fn scratch(name: &str) -> Store {
        let dir = std::env::temp_dir().join(format!("pmu-criterion-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Store { dir }
    }

    /// A one-shot run of `args` over scripted counts: (exit status, stdout, stderr).
    fn one_shot(
        store: &Store,
        args: &str,
        counts: &[u64],
        benches: &[&str],
    ) -> (u8, String, String) {
        one_shot_fresh(store, args, counts, &[], benches)
    }

    /// As [`one_shot`], with the counts of the fresh processes' regions of 0 and 1
    /// calls.
    fn one_shot_fresh(
        store: &Store,
        args: &str,
        counts: &[u64],
        fresh: &[(u64, u64)],
        benches: &[&str],
    ) -> (u8, String, String) {
        let (out, err) = (Captured::default(), Captured::default());
        let mut one = OneShot::new(
            Counter::Script {
                metric: "instructions".into(),
                counts: RefCell::new(counts.iter().map(|&c| Ok(c)).collect()),
            },
            Fresh::Script(RefCell::new(fresh.iter().map(|&c| Ok(c)).collect())),
            None,
            parse_args(&words(args)).unwrap(),
            "spin".into(),
            store.clone(),
            Box::new(out.clone()),
            Box::new(err.clone()),
            "a test",
        );
        let mut calls = 0;
        for id in benches {
            one.run(id, || calls += 1);
        }
        let code = one.finish();
        (code, out.text(), err.text())
    }

    #[test]
    fn the_mode_follows_the_flag_then_the_variables() {
        let none: &[String] = &[];
        assert_eq!(choose_mode(none, None, None).unwrap(), Mode::Sampled);
        assert!(matches!(
            choose_mode(none, None, Some("1")).unwrap(),
            Mode::Exact(_)
        ));
        assert_eq!(
            choose_mode(none, Some("sampled"), Some("1")).unwrap(),
            Mode::Sampled
        );
        assert!(matches!(
            choose_mode(none, Some("exact"), None).unwrap(),
            Mode::Exact(_)
        ));
        assert!(matches!(
            choose_mode(&words("--bench --one-shot"), Some("sampled"), None).unwrap(),
            Mode::Exact(_)
        ));
        assert!(choose_mode(none, Some("fast"), None).is_err());
    }

    #[test]
    fn arguments_are_read_and_mistakes_named() {
        let a = parse_args(&words(
            "--bench spin --save-baseline=main --baseline old --limit instructions=+1% --limit instructions=+500 --noplot --sample-size 10",
        ))
        .unwrap();
        assert!(a.bench && !a.test && !a.list);
        assert_eq!(a.filter.as_deref(), Some("spin"));
        assert_eq!(
            (a.save_baseline.as_deref(), a.baseline.as_deref()),
            (Some("main"), Some("old"))
        );
        assert_eq!(a.limits.len(), 2);
        assert_eq!(
            a.ignored,
            vec!["--noplot".to_owned(), "--sample-size 10".to_owned()]
        );
        let err = |s: &str| parse_args(&words(s)).unwrap_err();
        assert!(err("--limit instructions").contains("no `=`"));
        assert!(err("--limit").contains("--limit needs"));
        assert!(err("--baseline ../up").contains("not a baseline name"));
        assert!(err("--frobnicate").contains("unknown option --frobnicate"));
        assert!(err("--load-baseline x").contains("does not support"));
        assert!(err("a b").contains("one filter only"));
    }

    /// Regions of 0 and 1 calls: 30 and 236 twice is 206 per call (pmu-criterion's
    /// `spin 100` in the guest: 206.00 from criterion's fit).
    #[test]
    fn one_call_s_count_is_the_difference_and_the_second_run_must_agree() {
        let store = scratch("agree");
        let (code, out, err) = one_shot(&store, "--bench", &[30, 236, 30, 236], &["spin/100"]);
        assert_eq!(code, 0, "{out}{err}");
        assert!(
            out.contains("spin/100") && out.contains(" 206 instructions (exact)"),
            "{out}"
        );
        let summary: Summary =
            serde_json::from_str(&std::fs::read_to_string(store.summary_path("spin")).unwrap())
                .unwrap();
        assert_eq!(summary.benchmarks[0].count, Some(206));
        assert_eq!(summary.benchmarks[0].status, Status::Measured);
        // 206 then 207, and two fresh processes 206 then 208: an error naming every
        // count, and no figure printed.
        let (code, out, err) = one_shot_fresh(
            &store,
            "--bench",
            &[30, 236, 30, 237],
            &[(30, 236), (30, 238)],
            &["spin/100"],
        );
        assert_eq!(code, gate::EXIT_ERROR);
        assert!(
            out.contains("two runs disagree: 206 then 207 instructions per call")
                && out.contains("two fresh processes disagree too: 206 then 208"),
            "{out}"
        );
        assert!(!out.contains("(exact)"), "{out}");
        assert!(err.contains("spin/100: not measured"), "{err}");
        // A fresh process that counted nothing is an error too.
        let (code, out, _) = one_shot(&store, "--bench", &[30, 236, 30, 237], &["spin/100"]);
        assert_eq!(code, gate::EXIT_ERROR);
        assert!(out.contains("no fresh process in this test"), "{out}");
        // Second and third calls 206 and 406 apart (a routine that runs longer each
        // time), two fresh processes 206 both: the fresh figure, said on stderr.
        let (code, out, err) = one_shot_fresh(
            &store,
            "--bench",
            &[30, 236, 30, 436],
            &[(30, 236), (30, 236)],
            &["spin/100"],
        );
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.contains(" 206 instructions (exact)"), "{out}");
        assert!(
            err.contains(
                "spin/100: its second and third calls in one process differ (206 then 406"
            ) && err.contains(
                "counted in two fresh processes instead, each its second call: 206 both times"
            ),
            "{err}"
        );
        std::fs::remove_dir_all(&store.dir).unwrap();
    }

    /// A fresh process (FRESH_ENV set by its parent) counts the one benchmark named,
    /// after one warm-up call, prints its pair on the line the parent reads, and
    /// nothing else; naming a benchmark it does not have is an error.
    #[test]
    fn a_fresh_process_counts_its_one_benchmark() {
        let store = scratch("fresh");
        let fresh = |child: &str| {
            let (out, err) = (Captured::default(), Captured::default());
            let mut one = OneShot::new(
                Counter::Script {
                    metric: "instructions".into(),
                    counts: RefCell::new([Ok(30), Ok(436)].into_iter().collect()),
                },
                Fresh::Script(RefCell::default()),
                Some(child.into()),
                parse_args(&words("--bench")).unwrap(),
                "spin".into(),
                store.clone(),
                Box::new(out.clone()),
                Box::new(err.clone()),
                "a test",
            );
            let mut calls = [0, 0];
            one.run("spin/100", || calls[0] += 1);
            one.run("spin/200", || calls[1] += 1);
            (one.finish(), out.text(), err.text(), calls)
        };
        let (code, out, err, calls) = fresh("spin/200");
        assert_eq!(
            (code, out.as_str(), err.as_str()),
            (0, "pmu-criterion-fresh 30 436\n", "")
        );
        // One warm-up call and the region of one call; the other benchmark not called.
        assert_eq!(calls, [0, 2]);
        let (code, _, err, calls) = fresh("spin/300");
        assert_eq!((code, calls), (gate::EXIT_ERROR, [0, 0]));
        assert!(err.contains("no benchmark `spin/300`"), "{err}");
        assert!(!store.dir.exists(), "a fresh process wrote files");
    }

    /// Save at 206/406, then 216/406 with +1 %: spin/100 regresses (exit 3, named with
    /// both counts), spin/200 is unchanged; 200/400 passes as an improvement; the
    /// summary says the same.
    #[test]
    fn the_gate_fails_a_regression_by_name_and_passes_an_improvement() {
        let store = scratch("gate");
        let benches = ["spin/100", "spin/200"];
        let (code, _, err) = one_shot(
            &store,
            "--bench --save-baseline main",
            &[30, 236, 30, 236, 30, 436, 30, 436],
            &benches,
        );
        assert_eq!(code, 0, "{err}");
        assert!(store.dir.join("baselines/main/spin.json").exists());

        let (code, out, err) = one_shot(
            &store,
            "--bench --baseline main --limit instructions=+1%",
            &[30, 246, 30, 246, 30, 436, 30, 436],
            &benches,
        );
        assert_eq!(code, gate::EXIT_REGRESSED, "{out}{err}");
        assert!(
            err.contains(
                "REGRESSED spin/100: 206 → 216 instructions (+10, +4.85%) beyond instructions=+1%"
            ),
            "{err}"
        );
        assert!(!err.contains("REGRESSED spin/200"), "{err}");
        assert!(out.contains("unchanged from baseline `main`"), "{out}");
        let summary: Summary =
            serde_json::from_str(&std::fs::read_to_string(store.summary_path("spin")).unwrap())
                .unwrap();
        assert_eq!(summary.regressed, vec!["spin/100".to_owned()]);
        assert_eq!((summary.passed, summary.exit_code), (false, 3));
        assert_eq!(summary.benchmarks[0].baseline, Some(206));
        assert_eq!(summary.benchmarks[0].change, Some(10));

        let (code, out, err) = one_shot(
            &store,
            "--bench --baseline main --limit instructions=+1%",
            &[30, 230, 30, 230, 30, 430, 30, 430],
            &benches,
        );
        assert_eq!(code, 0, "{out}{err}");
        assert!(
            out.contains("improved on baseline `main`: 206 → 200"),
            "{out}"
        );

        // The same id twice is an error: a baseline keeps one count per id.
        let (code, out, _) = one_shot(
            &store,
            "--bench",
            &[30, 236, 30, 236],
            &["spin/100", "spin/100"],
        );
        assert_eq!(code, gate::EXIT_ERROR);
        assert!(out.contains("a second benchmark with this id"), "{out}");

        // A baseline that was never saved is an error, not a pass.
        let (code, _, err) = one_shot(
            &store,
            "--bench --baseline nope",
            &[30, 236, 30, 236],
            &["spin/100"],
        );
        assert_eq!(code, gate::EXIT_ERROR);
        assert!(err.contains("no baseline `nope`"), "{err}");
        std::fs::remove_dir_all(&store.dir).unwrap();
    }

    /// Without `--bench` (cargo test) each benchmark runs once and nothing is counted;
    /// filters and `--list` as criterion's.
    #[test]
    fn test_mode_list_and_filters() {
        let store = scratch("modes");
        let (code, out, _) = one_shot(&store, "", &[], &["spin/100"]);
        assert_eq!((code, out.as_str()), (0, "Testing spin/100\nSuccess\n"));
        let (_, out, _) = one_shot(&store, "--bench --list", &[], &["spin/100", "spin/200"]);
        assert_eq!(out, "spin/100: benchmark\nspin/200: benchmark\n");
        let (_, out, _) = one_shot(&store, "--list 200", &[], &["spin/100", "spin/200"]);
        assert_eq!(out, "spin/200: benchmark\n");
        let (_, out, _) = one_shot(&store, "--list --exact spin", &[], &["spin/100", "spin"]);
        assert_eq!(out, "spin: benchmark\n");
        assert!(!store.dir.exists());
    }
}
