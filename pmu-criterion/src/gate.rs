//! The regression gate of one-shot exact mode ([`crate::Bench`]): limits per metric,
//! baselines kept as JSON files, each benchmark's verdict, and the JSON summary a CI step
//! reads.
//!
//! Pure values and file formats: the harness measures, this module judges. Where the
//! files live and how they are keyed: [`Store`].

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The version of the baseline and summary files' layout ([`Baseline::schema`],
/// [`Summary::schema`]); a file of another version is refused, never misread.
pub const SCHEMA: u32 = 1;

/// The exit status of a run with a regression (and no error): as Gungraun's ("exit with
/// error code 3", its regressions guide), so a CI step can tell it from a failure.
pub const EXIT_REGRESSED: u8 = 3;
/// The exit status of a run that could not measure or compare (two runs disagreed, a
/// baseline is missing, a file could not be written).
pub const EXIT_ERROR: u8 = 1;
/// The exit status of a run whose arguments were wrong.
pub const EXIT_USAGE: u8 = 2;

/// How much a count may grow before it is a regression.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Threshold {
    /// At most this many percent of the baseline's count (`+1%`, `+0.5%`).
    Relative(f64),
    /// At most this many counts (`+500`).
    Absolute(u64),
}

/// A limit on one metric: `instructions=+1%` or `instructions=+500`. Several limits on
/// one metric must all hold.
#[derive(Clone, Debug, PartialEq)]
pub struct Limit {
    /// The metric it applies to (`instructions`, `cycles`: the event's name).
    pub metric: String,
    /// The growth allowed.
    pub threshold: Threshold,
}

/// Why a limit could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LimitError {
    /// No `=` between the metric and the growth allowed.
    NoEquals(String),
    /// Nothing, or something other than letters, digits, `-` and `_`, before the `=`.
    BadMetric(String),
    /// A `-`: a limit is the growth allowed, and a negative one would fail an unchanged
    /// benchmark.
    Negative(String),
    /// The growth is not a number (a percentage, or a whole count).
    NotANumber(String),
}

impl fmt::Display for LimitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let form = "a limit is METRIC=+N% (relative) or METRIC=+N (absolute), e.g. \
                    `instructions=+1%` or `instructions=+500`";
        match self {
            Self::NoEquals(s) => write!(f, "`{s}`: no `=`; {form}"),
            Self::BadMetric(s) => write!(
                f,
                "`{s}`: the metric before `=` must be an event name (letters, digits, `-`, `_`); {form}"
            ),
            Self::Negative(s) => write!(
                f,
                "`{s}`: a limit is the growth allowed, and a negative one would fail an unchanged benchmark; {form}"
            ),
            Self::NotANumber(s) => write!(
                f,
                "`{s}`: the growth is not a number (a percentage, or a whole count); {form}"
            ),
        }
    }
}

impl std::error::Error for LimitError {}

impl FromStr for Limit {
    type Err = LimitError;

    fn from_str(s: &str) -> Result<Self, LimitError> {
        let (metric, growth) = s
            .split_once('=')
            .ok_or_else(|| LimitError::NoEquals(s.to_owned()))?;
        let metric = metric.trim();
        if metric.is_empty()
            || !metric
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(LimitError::BadMetric(s.to_owned()));
        }
        let growth = growth.trim();
        if growth.starts_with('-') {
            return Err(LimitError::Negative(s.to_owned()));
        }
        let growth = growth.strip_prefix('+').unwrap_or(growth);
        let not_a_number = || LimitError::NotANumber(s.to_owned());
        let threshold = match growth.strip_suffix('%') {
            Some(percent) => {
                // Digits and one point only: Rust's float syntax also takes `inf`, `NaN`
                // and exponents, which a limit has no use for.
                let plain = !percent.is_empty()
                    && percent.bytes().all(|b| b.is_ascii_digit() || b == b'.')
                    && percent.bytes().filter(|&b| b == b'.').count() <= 1
                    && percent != ".";
                let value: f64 = plain
                    .then(|| percent.parse().ok())
                    .flatten()
                    .ok_or_else(not_a_number)?;
                Threshold::Relative(value)
            }
            None => {
                if growth.is_empty() || !growth.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(not_a_number());
                }
                Threshold::Absolute(growth.parse().map_err(|_| not_a_number())?)
            }
        };
        Ok(Self {
            metric: metric.to_owned(),
            threshold,
        })
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.threshold {
            Threshold::Relative(p) => write!(f, "{}=+{p}%", self.metric),
            Threshold::Absolute(n) => write!(f, "{}=+{n}", self.metric),
        }
    }
}

impl Limit {
    /// Whether `new` exceeds this limit over `old`. A count that did not grow never does;
    /// growth from 0 exceeds every relative limit (no percentage of 0 allows any).
    pub fn exceeded(&self, old: u64, new: u64) -> bool {
        let Some(growth) = new.checked_sub(old).filter(|&g| g > 0) else {
            return false;
        };
        match self.threshold {
            Threshold::Absolute(n) => growth > n,
            Threshold::Relative(_) if old == 0 => true,
            // Exact in integers for whole percentages; f64 for fractions, whose rounding
            // is far below one count for any count under 2^52.
            Threshold::Relative(p) => growth as f64 * 100.0 > p * old as f64,
        }
    }
}

/// One benchmark's verdict against the baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// No baseline was asked for.
    Measured,
    /// The baseline has no count of this benchmark and metric: nothing to compare.
    New,
    /// The same count as the baseline.
    Unchanged,
    /// Fewer than the baseline: passes.
    Improved,
    /// More than the baseline, within every limit: passes.
    Increased,
    /// More than the baseline, beyond a limit: fails the run.
    Regressed,
    /// Not measured: the reason is the entry's `error`.
    Error,
}

/// `new` against the baseline's `old` (if any) under the `limits` on `metric`: the
/// status and the limits exceeded. Without a limit on the metric, any growth is a
/// regression: exact counts have no noise to allow for.
pub fn judge(metric: &str, old: Option<u64>, new: u64, limits: &[Limit]) -> (Status, Vec<String>) {
    let Some(old) = old else {
        return (Status::New, Vec::new());
    };
    if new == old {
        return (Status::Unchanged, Vec::new());
    }
    if new < old {
        return (Status::Improved, Vec::new());
    }
    let mine: Vec<&Limit> = limits.iter().filter(|l| l.metric == metric).collect();
    let exceeded: Vec<String> = if mine.is_empty() {
        vec![format!("{metric}=+0 (no --limit on {metric}: any growth)")]
    } else {
        mine.iter()
            .filter(|l| l.exceeded(old, new))
            .map(|l| l.to_string())
            .collect()
    };
    if exceeded.is_empty() {
        (Status::Increased, exceeded)
    } else {
        (Status::Regressed, exceeded)
    }
}

/// A saved baseline: one benchmark binary's counts under one name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// [`SCHEMA`].
    pub schema: u32,
    /// The baseline's name (`--save-baseline NAME`).
    pub name: String,
    /// The benchmark binary's name, cargo's hash suffix removed.
    pub binary: String,
    /// The counts.
    pub benchmarks: Vec<BaselineEntry>,
}

/// One benchmark's count in a [`Baseline`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BaselineEntry {
    /// The benchmark's id (`spin/100`).
    pub id: String,
    /// What was counted (`instructions`).
    pub metric: String,
    /// The exact count per call.
    pub count: u64,
}

impl Baseline {
    /// The count of `id` in `metric`, if saved.
    pub fn count(&self, id: &str, metric: &str) -> Option<u64> {
        self.benchmarks
            .iter()
            .find(|e| e.id == id && e.metric == metric)
            .map(|e| e.count)
    }
}

/// The JSON summary of one run of one benchmark binary in one-shot exact mode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// [`SCHEMA`].
    pub schema: u32,
    /// The benchmark binary's name, cargo's hash suffix removed.
    pub binary: String,
    /// Always `exact` (sampled runs write no summary).
    pub mode: String,
    /// What was counted, and how (the measurement's description).
    pub counted: String,
    /// The baseline compared against (`--baseline NAME`), if any.
    pub baseline: Option<String>,
    /// The baseline saved (`--save-baseline NAME`), if any.
    pub saved_baseline: Option<String>,
    /// The limits given, as written back (`instructions=+1%`).
    pub limits: Vec<String>,
    /// Each benchmark run, in order.
    pub benchmarks: Vec<BenchmarkSummary>,
    /// The ids of the regressed benchmarks.
    pub regressed: Vec<String>,
    /// Errors, one line each (benchmarks not measured, baselines not read or written).
    pub errors: Vec<String>,
    /// Whether the run passes: no error, no regression.
    pub passed: bool,
    /// The binary's exit status: 0, [`EXIT_ERROR`] or [`EXIT_REGRESSED`].
    pub exit_code: u8,
}

/// One benchmark in a [`Summary`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkSummary {
    /// The benchmark's id (`spin/100`).
    pub id: String,
    /// What was counted (`instructions`).
    pub metric: String,
    /// The exact count per call; absent when not measured.
    pub count: Option<u64>,
    /// The baseline's count, when there is one.
    pub baseline: Option<u64>,
    /// `count - baseline`.
    pub change: Option<i64>,
    /// `100 × change / baseline` (absent where the baseline is 0).
    pub change_percent: Option<f64>,
    /// The verdict.
    pub status: Status,
    /// The limits exceeded (regressions only).
    pub exceeded: Vec<String>,
    /// Why it was not measured (status `error`).
    pub error: Option<String>,
}

impl BenchmarkSummary {
    /// A measured benchmark's entry, judged against `old` where a baseline was asked
    /// for (`compared`).
    pub fn measured(
        id: &str,
        metric: &str,
        count: u64,
        compared: bool,
        old: Option<u64>,
        limits: &[Limit],
    ) -> Self {
        let (status, exceeded) = if compared {
            judge(metric, old, count, limits)
        } else {
            (Status::Measured, Vec::new())
        };
        let change = old.map(|o| i128::from(count) - i128::from(o));
        Self {
            id: id.to_owned(),
            metric: metric.to_owned(),
            count: Some(count),
            baseline: old,
            change: change.map(|c| c.clamp(i64::MIN.into(), i64::MAX.into()) as i64),
            change_percent: old
                .filter(|&o| o > 0)
                .zip(change)
                .map(|(o, c)| c as f64 * 100.0 / o as f64),
            status,
            exceeded,
            error: None,
        }
    }

    /// An entry for a benchmark that could not be measured.
    pub fn failed(id: &str, metric: &str, error: String) -> Self {
        Self {
            id: id.to_owned(),
            metric: metric.to_owned(),
            count: None,
            baseline: None,
            change: None,
            change_percent: None,
            status: Status::Error,
            exceeded: Vec::new(),
            error: Some(error),
        }
    }

    /// `206 → 226 instructions (+20, +9.71%)`, for the verdict lines.
    pub fn change_text(&self) -> String {
        let (Some(new), Some(old), Some(change)) = (self.count, self.baseline, self.change) else {
            return String::new();
        };
        let percent = self
            .change_percent
            .map(|p| format!(", {p:+.2}%"))
            .unwrap_or_default();
        format!("{old} → {new} {} ({change:+}{percent})", self.metric)
    }
}

impl Summary {
    /// The summary of `benchmarks` plus the run's own `errors`: the regressed ids, the
    /// errors, and the exit status (errors win over regressions).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        binary: &str,
        counted: &str,
        baseline: Option<&str>,
        saved_baseline: Option<&str>,
        limits: &[Limit],
        benchmarks: Vec<BenchmarkSummary>,
        mut errors: Vec<String>,
    ) -> Self {
        let regressed: Vec<String> = benchmarks
            .iter()
            .filter(|b| b.status == Status::Regressed)
            .map(|b| b.id.clone())
            .collect();
        let failed = benchmarks.iter().filter_map(|b| {
            b.error
                .as_ref()
                .map(|e| format!("{}: not measured: {e}", b.id))
        });
        let mut all: Vec<String> = failed.collect();
        all.append(&mut errors);
        let exit_code = if !all.is_empty() {
            EXIT_ERROR
        } else if !regressed.is_empty() {
            EXIT_REGRESSED
        } else {
            0
        };
        Self {
            schema: SCHEMA,
            binary: binary.to_owned(),
            mode: "exact".to_owned(),
            counted: counted.to_owned(),
            baseline: baseline.map(str::to_owned),
            saved_baseline: saved_baseline.map(str::to_owned),
            limits: limits.iter().map(Limit::to_string).collect(),
            benchmarks,
            regressed,
            errors: all,
            passed: exit_code == 0,
            exit_code,
        }
    }
}

/// Where baselines and summaries live: `$PMU_CRITERION_HOME` if set, else
/// `target/pmu-criterion` in the working directory (cargo runs a benchmark in its
/// package's directory, and pmu-qemu shares exactly that directory with the guest).
///
/// - a baseline: `<dir>/baselines/<NAME>/<binary>.json` ([`Baseline`]), keyed by the
///   baseline's name and the benchmark binary's name (cargo's `-<hash>` suffix removed),
///   holding each benchmark's id, metric and count;
/// - the summary of the last run of a binary: `<dir>/summary/<binary>.json`
///   ([`Summary`]).
#[derive(Clone, Debug)]
pub struct Store {
    /// The directory.
    pub dir: PathBuf,
}

/// The environment variable that moves the [`Store`].
pub const HOME_ENV: &str = "PMU_CRITERION_HOME";

/// Why a baseline could not be read or written.
#[derive(Debug)]
#[non_exhaustive]
pub enum StoreError {
    /// A baseline name that is not a plain file name.
    BadName(String),
    /// No saved baseline of that name for this binary.
    Missing {
        /// The baseline's name.
        name: String,
        /// Where it was looked for.
        path: PathBuf,
    },
    /// A file that could not be read, parsed or written.
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        why: String,
    },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadName(n) => write!(
                f,
                "`{n}` is not a baseline name: letters, digits, `.`, `-` and `_`, not starting with `.`"
            ),
            Self::Missing { name, path } => write!(
                f,
                "no baseline `{name}` for this binary ({} does not exist: save one with --save-baseline {name})",
                path.display()
            ),
            Self::File { path, why } => write!(f, "{}: {why}", path.display()),
        }
    }
}

impl std::error::Error for StoreError {}

/// Whether `name` is usable as one path component on every file system cargo runs on.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
}

/// A benchmark binary's name from its path: the file name less cargo's `-<16 hex
/// digits>` suffix (`target/release/deps/spin-0123456789abcdef` → `spin`).
pub fn binary_name(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "bench".to_owned());
    match name.rsplit_once('-') {
        Some((stem, hash))
            if !stem.is_empty()
                && hash.len() == 16
                && hash.bytes().all(|b| b.is_ascii_hexdigit()) =>
        {
            stem.to_owned()
        }
        _ => name,
    }
}

impl Store {
    /// The store the environment names ([`HOME_ENV`], else `target/pmu-criterion`).
    pub fn from_env() -> Self {
        let dir = std::env::var_os(HOME_ENV)
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("target/pmu-criterion"));
        Self { dir }
    }

    /// Where baseline `name` of `binary` lies.
    ///
    /// # Errors
    /// [`StoreError::BadName`] for a name that is not a plain file name.
    pub fn baseline_path(&self, name: &str, binary: &str) -> Result<PathBuf, StoreError> {
        if !valid_name(name) {
            return Err(StoreError::BadName(name.to_owned()));
        }
        Ok(self
            .dir
            .join("baselines")
            .join(name)
            .join(format!("{binary}.json")))
    }

    /// Where the summary of `binary`'s last run lies.
    pub fn summary_path(&self, binary: &str) -> PathBuf {
        self.dir.join("summary").join(format!("{binary}.json"))
    }

    /// Baseline `name` of `binary`.
    ///
    /// # Errors
    /// A bad name, a missing file, a file that is not a baseline of [`SCHEMA`].
    pub fn load(&self, name: &str, binary: &str) -> Result<Baseline, StoreError> {
        let path = self.baseline_path(name, binary)?;
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::Missing {
                    name: name.to_owned(),
                    path,
                })
            }
            Err(e) => {
                return Err(StoreError::File {
                    path,
                    why: e.to_string(),
                })
            }
        };
        let baseline: Baseline = serde_json::from_str(&text).map_err(|e| StoreError::File {
            path: path.clone(),
            why: format!("not a pmu-criterion baseline: {e}"),
        })?;
        if baseline.schema != SCHEMA {
            return Err(StoreError::File {
                path,
                why: format!(
                    "a baseline of schema {}, this pmu-criterion reads {SCHEMA}: save it again",
                    baseline.schema
                ),
            });
        }
        Ok(baseline)
    }

    /// Writes `baseline` (replacing the binary's earlier one of that name).
    ///
    /// # Errors
    /// A bad name, a file that could not be written.
    pub fn save(&self, baseline: &Baseline) -> Result<PathBuf, StoreError> {
        let path = self.baseline_path(&baseline.name, &baseline.binary)?;
        write_json(&path, baseline)?;
        Ok(path)
    }

    /// Writes `summary` to [`Store::summary_path`].
    ///
    /// # Errors
    /// A file that could not be written.
    pub fn save_summary(&self, summary: &Summary) -> Result<PathBuf, StoreError> {
        let path = self.summary_path(&summary.binary);
        write_json(&path, summary)?;
        Ok(path)
    }
}

/// `value` as pretty JSON at `path`, through a temporary file renamed over it, so that a
/// reader never sees half a file.
fn write_json(path: &Path, value: &impl Serialize) -> Result<(), StoreError> {
    let file_error = |why: String| StoreError::File {
        path: path.to_owned(),
        why,
    };
    let text = serde_json::to_string_pretty(value).map_err(|e| file_error(e.to_string()))?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| file_error(e.to_string()))?;
    }
    let temporary = path.with_extension("json.partial");
    std::fs::write(&temporary, text + "\n").map_err(|e| file_error(e.to_string()))?;
    std::fs::rename(&temporary, path).map_err(|e| file_error(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(s: &str) -> Limit {
        s.parse().unwrap()
    }

    /// The forms the docs give (`--limit instructions=+1%`, `instructions=+500`) and
    /// their neighbours.
    #[test]
    fn limits_are_parsed() {
        assert_eq!(
            limit("instructions=+1%"),
            Limit {
                metric: "instructions".into(),
                threshold: Threshold::Relative(1.0)
            }
        );
        assert_eq!(
            limit("instructions=+500").threshold,
            Threshold::Absolute(500)
        );
        assert_eq!(limit("cycles=0.5%").threshold, Threshold::Relative(0.5));
        assert_eq!(limit("cpu-cycles=+0").threshold, Threshold::Absolute(0));
        assert_eq!(limit("instructions=+1%").to_string(), "instructions=+1%");
        assert_eq!(limit("instructions=500").to_string(), "instructions=+500");
    }

    /// Each mistake has its own error, and the message shows the form wanted.
    #[test]
    fn bad_limits_say_what_is_wrong() {
        let err = |s: &str| s.parse::<Limit>().unwrap_err();
        assert_eq!(
            err("instructions"),
            LimitError::NoEquals("instructions".into())
        );
        assert_eq!(err("=+1%"), LimitError::BadMetric("=+1%".into()));
        assert_eq!(
            err("in structions=1%"),
            LimitError::BadMetric("in structions=1%".into())
        );
        assert_eq!(
            err("instructions=-1%"),
            LimitError::Negative("instructions=-1%".into())
        );
        for bad in [
            "instructions=",
            "instructions=+",
            "instructions=%",
            "instructions=+1.5",
            "instructions=one%",
            "instructions=inf%",
            "instructions=NaN%",
            "instructions=1e3%",
            "instructions=1.2.3%",
            "instructions=.%",
            "instructions=+1%%",
            "instructions=99999999999999999999999",
        ] {
            assert_eq!(err(bad), LimitError::NotANumber(bad.into()), "{bad}");
        }
        let text = err("instructions=-1%").to_string();
        assert!(
            text.contains("instructions=+1%") && text.contains("negative"),
            "{text}"
        );
    }

    /// 206 → 208 is +0.97 %: within +1 %, beyond +1 (absolute); 206 → 209 is +1.46 %.
    #[test]
    fn limits_judge_growth_only() {
        assert!(!limit("instructions=+1%").exceeded(206, 208));
        assert!(limit("instructions=+1%").exceeded(206, 209));
        assert!(limit("instructions=+1").exceeded(206, 208));
        assert!(!limit("instructions=+2").exceeded(206, 208));
        // Exactly at the limit passes: 100 → 101 is +1 %.
        assert!(!limit("instructions=+1%").exceeded(100, 101));
        assert!(!limit("instructions=+0").exceeded(206, 100));
        assert!(limit("instructions=+1000%").exceeded(0, 1));
        assert!(!limit("instructions=+0%").exceeded(0, 0));
    }

    #[test]
    fn verdicts() {
        let limits = [limit("instructions=+1%"), limit("instructions=+500")];
        assert_eq!(judge("instructions", None, 5, &limits).0, Status::New);
        assert_eq!(
            judge("instructions", Some(5), 5, &limits).0,
            Status::Unchanged
        );
        assert_eq!(
            judge("instructions", Some(6), 5, &limits).0,
            Status::Improved
        );
        // 1000 → 1005: +0.5 %, +5: within both.
        assert_eq!(
            judge("instructions", Some(1000), 1005, &limits).0,
            Status::Increased
        );
        // 100000 → 100600: +0.6 % but +600: the absolute limit fails it.
        assert_eq!(
            judge("instructions", Some(100_000), 100_600, &limits),
            (Status::Regressed, vec!["instructions=+500".to_owned()])
        );
        // No limit on cycles: any growth regresses; a limit on another metric does not
        // apply.
        let (status, exceeded) = judge("cycles", Some(10), 11, &limits);
        assert_eq!(status, Status::Regressed);
        assert!(exceeded[0].contains("no --limit on cycles"));
    }

    #[test]
    fn binary_names_lose_cargo_s_hash() {
        assert_eq!(
            binary_name(Path::new("target/release/deps/spin-0123456789abcdef")),
            "spin"
        );
        assert_eq!(binary_name(Path::new("/t/examples/bench")), "bench");
        assert_eq!(binary_name(Path::new("my-bench-x")), "my-bench-x");
        assert!(valid_name("main") && valid_name("pr-12_b.2"));
        assert!(!valid_name("") && !valid_name("..") && !valid_name("a/b") && !valid_name(".x"));
    }

    /// A summary's exit status: errors win over regressions; improvements pass.
    #[test]
    fn summaries_pass_improvements_and_fail_regressions() {
        let limits = [limit("instructions=+1%")];
        let improved =
            BenchmarkSummary::measured("a", "instructions", 200, true, Some(206), &limits);
        assert_eq!(improved.change, Some(-6));
        let s = Summary::new(
            "b",
            "x",
            Some("main"),
            None,
            &limits,
            vec![improved.clone()],
            vec![],
        );
        assert!(s.passed && s.exit_code == 0 && s.regressed.is_empty());
        let regressed =
            BenchmarkSummary::measured("c", "instructions", 226, true, Some(206), &limits);
        assert_eq!(
            regressed.change_text(),
            "206 → 226 instructions (+20, +9.71%)"
        );
        let s = Summary::new(
            "b",
            "x",
            Some("main"),
            None,
            &limits,
            vec![improved.clone(), regressed.clone()],
            vec![],
        );
        assert_eq!(
            (s.exit_code, s.regressed.clone()),
            (EXIT_REGRESSED, vec!["c".to_owned()])
        );
        let failed = BenchmarkSummary::failed("d", "instructions", "two runs disagree".into());
        let s = Summary::new("b", "x", None, None, &[], vec![regressed, failed], vec![]);
        assert_eq!(s.exit_code, EXIT_ERROR);
        assert_eq!(
            s.errors,
            vec!["d: not measured: two runs disagree".to_owned()]
        );
    }

    #[test]
    fn baselines_round_trip_and_are_keyed_by_name_and_binary() {
        let dir = std::env::temp_dir().join(format!("pmu-criterion-store-{}", std::process::id()));
        let store = Store { dir: dir.clone() };
        let baseline = Baseline {
            schema: SCHEMA,
            name: "main".into(),
            binary: "spin".into(),
            benchmarks: vec![BaselineEntry {
                id: "spin/100".into(),
                metric: "instructions".into(),
                count: 206,
            }],
        };
        let path = store.save(&baseline).unwrap();
        assert_eq!(path, dir.join("baselines/main/spin.json"));
        let loaded = store.load("main", "spin").unwrap();
        assert_eq!(loaded.count("spin/100", "instructions"), Some(206));
        assert_eq!(loaded.count("spin/100", "cycles"), None);
        assert!(matches!(
            store.load("main", "other"),
            Err(StoreError::Missing { .. })
        ));
        assert!(matches!(
            store.load("../x", "spin"),
            Err(StoreError::BadName(_))
        ));
        std::fs::write(&path, "{\"schema\": 2}").unwrap();
        assert!(store
            .load("main", "spin")
            .unwrap_err()
            .to_string()
            .contains("not a pmu-criterion baseline"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
