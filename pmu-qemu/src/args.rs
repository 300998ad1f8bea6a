//! The command line: pmu-qemu's own options come first; the first other word is the
//! program, and every word after it is the program's, unchanged (so `--bench` or
//! `--help` after the program go to the program, as a cargo runner needs).

use std::ffi::OsString;
use std::path::PathBuf;

/// What to do.
#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    /// Print the help.
    Help,
    /// Print the version.
    Version,
    /// Fetch the kernel and build the initramfs (nothing run): a CI cache step.
    Prepare(Options),
    /// Run `program` with `args` in the guest.
    Run {
        /// The guest's settings.
        options: Options,
        /// The program, as given.
        program: PathBuf,
        /// Its arguments.
        args: Vec<OsString>,
    },
}

/// The guest's settings.
#[derive(Debug, PartialEq, Eq, Clone)]
pub struct Options {
    /// QEMU's `-cpu` model.
    pub cpu: String,
    /// Number of virtual CPUs.
    pub smp: u32,
    /// Guest memory in MiB.
    pub memory_mib: u32,
    /// Share the working directory with the guest (9p).
    pub share: bool,
    /// Ask apt for the newest kernel even when one is cached.
    pub update: bool,
    /// Copy the guest's console (kernel messages) to stderr.
    pub console: bool,
    /// Restore the booted guest saved in the cache instead of booting
    /// (`crate::snapshot`).
    pub snapshot: bool,
    /// Profile the program: one sample every this many user-level instructions
    /// (`crate::sampler`).
    pub profile: Option<u64>,
    /// Where the profile's files go.
    pub profile_dir: PathBuf,
    /// A folded-stacks file to draw a differential flamegraph against.
    pub profile_baseline: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            cpu: "max".into(),
            smp: 1,
            memory_mib: 1024,
            share: true,
            update: false,
            console: false,
            snapshot: true,
            profile: None,
            profile_dir: PathBuf::from("pmu-qemu-profile"),
            profile_baseline: None,
        }
    }
}

fn value<I: Iterator<Item = OsString>>(name: &str, it: &mut I) -> Result<String, String> {
    it.next()
        .and_then(|v| v.into_string().ok())
        .ok_or_else(|| format!("{name} needs a value"))
}

fn number(name: &str, text: &str, min: u32) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(n) if n >= min => Ok(n),
        _ => Err(format!(
            "{name} takes a whole number of at least {min}, not `{text}`"
        )),
    }
}

/// Parses the words after the program name.
pub fn parse(words: impl IntoIterator<Item = OsString>) -> Result<Command, String> {
    let mut it = words.into_iter();
    let mut options = Options::default();
    let mut prepare = false;
    while let Some(word) = it.next() {
        let Some(text) = word.to_str() else {
            return program(options, word, it);
        };
        match text {
            "-h" | "--help" => return Ok(Command::Help),
            "-V" | "--version" => return Ok(Command::Version),
            "--cpu" => options.cpu = value(text, &mut it)?,
            "--smp" => options.smp = number(text, &value(text, &mut it)?, 1)?,
            "--memory" => options.memory_mib = number(text, &value(text, &mut it)?, 128)?,
            "--no-share" => options.share = false,
            "--update" => options.update = true,
            "--console" => options.console = true,
            "--no-snapshot" => options.snapshot = false,
            "--profile" => {
                let period = value(text, &mut it)?;
                match period.parse::<u64>() {
                    Ok(n) if n >= 1 => options.profile = Some(n),
                    _ => {
                        return Err(format!(
                            "--profile takes a whole number of instructions of at least 1, not `{period}`"
                        ))
                    }
                }
            }
            "--profile-dir" => options.profile_dir = value(text, &mut it)?.into(),
            "--profile-baseline" => options.profile_baseline = Some(value(text, &mut it)?.into()),
            "--prepare" => prepare = true,
            "--" => {
                let Some(word) = it.next() else { break };
                return program(options, word, it);
            }
            t if t.starts_with('-') && t.len() > 1 => {
                return Err(format!(
                    "unknown option `{t}` (pmu-qemu's options come before the program; see --help)"
                ))
            }
            _ => return program(options, word, it),
        }
    }
    if prepare {
        Ok(Command::Prepare(options))
    } else {
        Err("no program to run (see --help)".into())
    }
}

fn program(
    options: Options,
    word: OsString,
    rest: impl Iterator<Item = OsString>,
) -> Result<Command, String> {
    Ok(Command::Run {
        options,
        program: PathBuf::from(word),
        args: rest.collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<OsString> {
        w.iter().map(OsString::from).collect()
    }

    fn run(w: &[&str]) -> (Options, PathBuf, Vec<OsString>) {
        match parse(words(w)).unwrap() {
            Command::Run {
                options,
                program,
                args,
            } => (options, program, args),
            other => panic!("{other:?}"),
        }
    }

    /// What cargo does with a runner: `<runner words…> <program> <cargo's args…>`.
    #[test]
    fn words_after_the_program_are_the_program_s() {
        let (o, p, a) = run(&["/t/deps/bench-1", "--bench", "--help", "-V", "--"]);
        assert_eq!(o, Options::default());
        assert_eq!(p, PathBuf::from("/t/deps/bench-1"));
        assert_eq!(a, words(&["--bench", "--help", "-V", "--"]));
    }

    #[test]
    fn options_before_the_program_set_the_guest() {
        let (o, p, a) = run(&[
            "--cpu",
            "cortex-a72",
            "--smp",
            "2",
            "--memory",
            "2048",
            "--no-share",
            "--",
            "-odd-name",
            "x",
        ]);
        assert_eq!(o.cpu, "cortex-a72");
        assert_eq!((o.smp, o.memory_mib, o.share), (2, 2048, false));
        assert_eq!(p, PathBuf::from("-odd-name"));
        assert_eq!(a, words(&["x"]));
    }

    #[test]
    fn profile_options_name_the_period_and_the_files() {
        let (o, p, _) = run(&[
            "--profile",
            "10000",
            "--profile-dir",
            "prof",
            "--profile-baseline",
            "old.folded",
            "prog",
        ]);
        assert_eq!(o.profile, Some(10_000));
        assert_eq!(o.profile_dir, PathBuf::from("prof"));
        assert_eq!(o.profile_baseline, Some(PathBuf::from("old.folded")));
        assert_eq!(p, PathBuf::from("prog"));
        assert!(parse(words(&["--profile", "0", "p"]))
            .unwrap_err()
            .contains("at least 1, not `0`"));
        assert!(parse(words(&["--profile", "1e4", "p"])).is_err());
    }

    #[test]
    fn mistakes_are_named() {
        assert!(parse(words(&[])).unwrap_err().contains("no program"));
        assert!(parse(words(&["--smp", "0", "p"]))
            .unwrap_err()
            .contains("at least 1"));
        assert!(parse(words(&["--frobnicate", "p"]))
            .unwrap_err()
            .contains("unknown option `--frobnicate`"));
        assert!(parse(words(&["--cpu"]))
            .unwrap_err()
            .contains("needs a value"));
        assert_eq!(parse(words(&["--help", "p"])), Ok(Command::Help));
        assert_eq!(
            parse(words(&["--prepare"])),
            Ok(Command::Prepare(Options::default()))
        );
    }
}
