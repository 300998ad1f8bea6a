//! The scenarios the image runs, in order, and their tally.
//!
//! Each scenario prints machine-readable lines
//! `RESULT <scenario> status=<pass|fail|skipped> key=value …` (one per case; only
//! `key=value` words after the scenario, as `tests/` parses them) and a human line per
//! case, prefixed with the scenario's name. The run ends with
//! `RESULT summary pass=<n> fail=<m> skipped=<s>`, counted over the RESULT lines.

pub mod cpuid;
pub mod perfevtsel;
pub mod rdpmc;
pub mod tsc;

use core::fmt;

/// How one case ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It did what this platform should do.
    Pass,
    /// It did not.
    Fail,
    /// It cannot run here (the reason is on the line).
    Skipped,
}

impl Verdict {
    /// `Pass` when `ok`, else `Fail`.
    pub const fn from_check(ok: bool) -> Self {
        if ok {
            Self::Pass
        } else {
            Self::Fail
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Pass => "pass",
            Self::Fail => "fail",
            Self::Skipped => "skipped",
        })
    }
}

/// Verdicts counted over the run.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tally {
    /// Cases that passed.
    pub pass: u32,
    /// Cases that failed.
    pub fail: u32,
    /// Cases skipped.
    pub skipped: u32,
}

impl Tally {
    /// Prints `RESULT <scenario> status=<verdict> <details>` and counts the verdict.
    pub fn result(&mut self, scenario: &str, verdict: Verdict, details: fmt::Arguments<'_>) {
        crate::println!("RESULT {scenario} status={verdict} {details}");
        match verdict {
            Verdict::Pass => self.pass += 1,
            Verdict::Fail => self.fail += 1,
            Verdict::Skipped => self.skipped += 1,
        }
    }

    /// Prints the summary line.
    pub fn summary(&self) {
        crate::println!(
            "RESULT summary pass={} fail={} skipped={}",
            self.pass,
            self.fail,
            self.skipped
        );
    }
}

/// `value` as `key=value` text, or `-` when there is none.
pub struct Opt<T>(pub Option<T>);

impl<T: fmt::Display> fmt::Display for Opt<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(v) => v.fmt(f),
            None => f.write_str("-"),
        }
    }
}
