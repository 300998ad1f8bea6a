//! [`CommandCount`]: the events of a whole command, its threads and children included,
//! counted the way `perf stat -- CMD` counts them.

use std::ffi::{CString, OsStr, OsString};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::group::event_attr;
use super::options::Options;
use super::session::Session;
use crate::error::{Errno, Error, EventError, GroupError, Op, OpenError, Result};
use crate::machine::events::{self, EventKind, EventSpec};
use crate::machine::sysfs::Sysfs;
use crate::sys;

/// Which privilege levels an event counts at, from perf's modifiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Levels {
    user: bool,
    kernel: bool,
    hypervisor: bool,
}

/// One event of a [`CommandCount`]: the event and the levels it counts at.
#[derive(Clone, Debug, PartialEq, Eq)]
struct CountedEvent {
    /// The name as given, modifiers included.
    name: String,
    spec: EventSpec,
    levels: Levels,
}

/// Splits perf's modifiers off `name`: `instructions:u` → (`instructions`, u), the
/// text after a `<pmu>/terms/`'s closing slash → (`<pmu>/terms/`, …). `None` for no
/// modifiers (the library's defaults). Only `u`, `k` and `h` are understood (perf's
/// tools/perf/Documentation/perf-list.txt lists them with `G`, `H`, `p`, … which do not
/// apply to a command's counts).
fn split_modifiers(name: &str) -> Result<(&str, Option<Levels>)> {
    let name = name.trim();
    let (base, modifiers) = if let Some(slash) = name.rfind('/') {
        let (base, rest) = name.split_at(slash + 1);
        (base, rest.strip_prefix(':').unwrap_or(rest))
    } else if let Some((base, modifiers)) = name.split_once(':') {
        (base, modifiers)
    } else {
        (name, "")
    };
    if modifiers.is_empty() {
        return Ok((base, None));
    }
    let mut levels = Levels {
        user: false,
        kernel: false,
        hypervisor: false,
    };
    for c in modifiers.chars() {
        match c {
            'u' => levels.user = true,
            'k' => levels.kernel = true,
            'h' => levels.hypervisor = true,
            _ => {
                return Err(Error::Event(EventError::Unknown {
                    name: format!(
                        "{name} (modifier `{c}`: only u (user), k (kernel) and h \
                         (hypervisor) apply to a command's counts)"
                    ),
                }))
            }
        }
    }
    Ok((base, Some(levels)))
}

/// The events of a command, counted with its threads and children: built from event
/// names, then [`CommandCount::run`] as often as wanted.
///
/// The command is forked and held before its `exec` (the child waits on a pipe); every
/// event is opened on the child's pid with
///
/// - `inherit`: every thread and child process the command creates gets its own copy of
///   the event, and when one exits its count and times are added to the parent event
///   (Linux 6.12 kernel/events/core.c `perf_event_exit_task` → `sync_child_event`), so
///   a `read()` of the original event after the command ended is the total of all of
///   them (`perf_event_read_value` adds the children still alive);
/// - `enable_on_exec`: counting starts at the command's `exec` (core.c
///   `perf_event_enable_on_exec`), so the fork and the wait before it are not counted;
/// - `exclude_kernel` / `exclude_user` / `exclude_hv` as the event's perf modifiers say
///   (`instructions:u`, `cycles:k`, `cycles:uk`); without one, hardware events count
///   in user space only (perf_event_paranoid 2 suffices) and software events count
///   where they happen, in the kernel.
///
/// Each event is opened on its own and read on its own (`{ value, time_enabled,
/// time_running, id }`), as perf stat opens inherited events: a group read of
/// inherited events sums each child's group and fails with ECHILD when a child's group
/// no longer matches its parent's (core.c `__perf_read_group_add`), and inherited
/// events cannot be mapped (core.c `perf_mmap` refuses `inherit` on a per-task event),
/// so there is no one-instruction read either. Events on their own are unpinned: with
/// more events than counters the kernel multiplexes them, and `time_running <
/// time_enabled` says so; [`CommandCount::fits`] tells beforehand whether a set of
/// events fits on the counters together.
#[derive(Clone, Debug)]
pub struct CommandCount {
    events: Vec<CountedEvent>,
}

/// One event's total over a command run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventTotal {
    /// The event's name as given (modifiers included).
    pub name: String,
    /// The count: the command, its threads and its children. Raw: never scaled.
    pub value: u64,
    /// Nanoseconds the event was enabled, summed over every task it counted.
    pub time_enabled: u64,
    /// Nanoseconds it was on a counter, summed likewise: below `time_enabled` the
    /// kernel multiplexed it, and `value` is what it counted while it ran.
    pub time_running: u64,
}

/// How the command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandEnd {
    /// It exited with this status.
    Exited(i32),
    /// A signal ended it.
    Signaled(i32),
    /// It could not be executed: `execv` failed with this errno (ENOENT: no such file;
    /// EACCES, ENOEXEC, …: not executable), or no file of that name is on the `PATH`.
    NotExecuted(Errno),
}

/// One run of a command: how it ended, every event's total, the time it took.
#[derive(Clone, Debug, PartialEq)]
pub struct CommandRun {
    /// How the command ended.
    pub end: CommandEnd,
    /// Every event's total, in the order of [`CommandCount::names`] (empty when the
    /// command could not be executed).
    pub totals: Vec<EventTotal>,
    /// Wall-clock time from the release of the command to its end.
    pub elapsed: Duration,
    /// CPU time (user + system) of the command and of the children it waited for
    /// (`wait4`'s rusage).
    pub cpu_time: Duration,
}

impl CommandCount {
    /// The events `names` name (perf names, `r<hex>`, `<pmu>/terms/`, sysfs aliases,
    /// each with optional `:u`, `:k`, `:uk`, `:h` modifiers), resolved against the
    /// system's sysfs. Nothing is opened yet.
    ///
    /// # Errors
    /// The name errors a meter gives (`EventError`: unknown, misspelt, another core's
    /// event, …); [`EventError::Unknown`] for a modifier
    /// other than u, k, h; [`GroupError::NoEvents`].
    pub fn new(names: &[&str]) -> Result<Self> {
        Self::new_in(&Sysfs::system(), names)
    }

    /// As [`CommandCount::new`], with sysfs at `sysfs`.
    ///
    /// # Errors
    /// As [`CommandCount::new`].
    pub(crate) fn new_in(sysfs: &Sysfs, names: &[&str]) -> Result<Self> {
        if names.is_empty() {
            return Err(Error::Group(GroupError::NoEvents));
        }
        let events = names
            .iter()
            .map(|&name| {
                let (base, levels) = split_modifiers(name)?;
                let spec = events::resolve(base, sysfs)?;
                let software = spec.kind == EventKind::Software;
                let levels = levels.unwrap_or(Levels {
                    user: true,
                    kernel: software,
                    hypervisor: false,
                });
                Ok(CountedEvent {
                    name: name.trim().to_owned(),
                    spec,
                    levels,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { events })
    }

    /// The events' names as given, in order.
    pub fn names(&self) -> Vec<String> {
        self.events.iter().map(|e| e.name.clone()).collect()
    }

    /// The events at `indices` (in that order) as a count of their own: one group of a
    /// rotation. Indices past the end are left out.
    pub fn select(&self, indices: &[usize]) -> Self {
        Self {
            events: indices
                .iter()
                .filter_map(|&i| self.events.get(i).cloned())
                .collect(),
        }
    }

    /// Whether the events at `indices` fit on the hardware counters together now: one
    /// trial of them as a pinned group on the calling thread, opened and closed without
    /// counting. Software events take no counter.
    ///
    /// # Errors
    /// [`Error::Open`] when an event cannot be opened at all (with the kernel's
    /// reason); the trial's ioctl and read errors.
    pub fn fits(&self, indices: &[usize]) -> Result<bool> {
        let specs: Vec<EventSpec> = indices
            .iter()
            .filter_map(|&i| self.events.get(i))
            .map(|e| e.spec.clone())
            .collect();
        if specs.is_empty() {
            return Ok(true);
        }
        // Only the counters matter: software events need no kernel counting here
        // (perf_event_paranoid 2 refuses it to a user without CAP_PERFMON).
        let options = Options::default()
            .map_pages(false)
            .user_read(false)
            .software_counts_kernel(false)
            .kernel_sentinel(false);
        match Session::from_specs(specs, options).and_then(|s| s.check_fits()) {
            Ok(()) => Ok(true),
            Err(Error::Group(GroupError::DoesNotFit { .. })) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Runs `program` with `args` (`program` found on the `PATH` as a shell finds it
    /// when it has no `/`) and counts it, its threads and its children from its `exec`
    /// to its end. The command inherits this process's standard streams and
    /// environment. While it runs this process ignores SIGINT and SIGQUIT, as
    /// `system(3)` does: a Ctrl-C ends the command ([`CommandEnd::Signaled`]) and the
    /// counts are still read.
    ///
    /// # Errors
    /// [`Error::Open`] with the kernel's reason when an event cannot be opened on the
    /// command (the command is then killed before it runs); [`Error::Io`] with
    /// [`Op::Command`] when it cannot be started or waited for, [`Op::Read`] for a
    /// read. A command that cannot be executed is not an error:
    /// [`CommandEnd::NotExecuted`].
    pub fn run(&self, program: &OsStr, args: &[OsString]) -> Result<CommandRun> {
        let not_executed = |errno: Errno| CommandRun {
            end: CommandEnd::NotExecuted(errno),
            totals: Vec::new(),
            elapsed: Duration::ZERO,
            cpu_time: Duration::ZERO,
        };
        let path = match find_program(program, std::env::var_os("PATH").as_deref()) {
            Ok(path) => path,
            Err(errno) => return Ok(not_executed(errno)),
        };
        let c_string = |s: &OsStr| CString::new(s.as_bytes()).map_err(|_| Errno(libc::EINVAL));
        let (path, argv) = match (
            c_string(path.as_os_str()),
            std::iter::once(program)
                .chain(args.iter().map(OsString::as_os_str))
                .map(c_string)
                .collect::<std::result::Result<Vec<_>, _>>(),
        ) {
            (Ok(path), Ok(argv)) => (path, argv),
            (Err(errno), _) | (_, Err(errno)) => return Ok(not_executed(errno)),
        };
        let child = sys::HeldChild::spawn(&path, &argv)
            .map_err(|errno| Error::syscall(Op::Command, errno))?;
        let _interrupts = sys::IgnoreInterrupts::new();
        // Dropping `child` on an error kills it before it runs.
        let fds = self.open_on(child.pid())?;
        let started = Instant::now();
        let (pid, exec_error) = child
            .release()
            .map_err(|errno| Error::syscall(Op::Command, errno))?;
        let (end, usage) =
            sys::wait_with_rusage(pid).map_err(|errno| Error::syscall(Op::Command, errno))?;
        let elapsed = started.elapsed();
        if let Some(errno) = exec_error {
            return Ok(not_executed(errno));
        }
        let totals = self
            .events
            .iter()
            .zip(&fds)
            .map(|(event, fd)| read_total(&event.name, fd))
            .collect::<Result<Vec<_>>>()?;
        let time = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec.max(0) as u64)
                + Duration::from_micros(t.tv_usec.max(0) as u64)
        };
        Ok(CommandRun {
            end: match end {
                sys::ChildEnd::Exited(status) => CommandEnd::Exited(status),
                sys::ChildEnd::Signaled(signal) => CommandEnd::Signaled(signal),
            },
            totals,
            elapsed,
            cpu_time: time(usage.ru_utime) + time(usage.ru_stime),
        })
    }

    /// Opens every event on the held child `pid`: disabled, inherited, enabled by its
    /// exec.
    fn open_on(&self, pid: libc::pid_t) -> Result<Vec<OwnedFd>> {
        let paranoid = sys::perf_event_paranoid();
        self.events
            .iter()
            .map(|event| {
                let mut attr = event_attr(&event.spec, false);
                attr.set_disabled(1);
                attr.set_inherit(1);
                attr.set_enable_on_exec(1);
                attr.set_exclude_user(u64::from(!event.levels.user));
                attr.set_exclude_kernel(u64::from(!event.levels.kernel));
                attr.set_exclude_hv(u64::from(!event.levels.hypervisor));
                sys::perf::open_for(&mut attr, pid, None).map_err(|errno| Error::Open {
                    event: event.name.clone(),
                    cause: OpenError::from_errno(
                        errno,
                        paranoid,
                        event.levels.kernel,
                        event.spec.needs_cpu_pmu,
                        event.spec.needs_cpu_pmu && super::group::cpu_pmu_registered(),
                    ),
                })
            })
            .collect()
    }
}

/// One event's `{ value, time_enabled, time_running, id }`.
fn read_total(name: &str, fd: &OwnedFd) -> Result<EventTotal> {
    let mut buf = [0u64; 4];
    let got = sys::perf::read_u64s(fd.as_fd(), &mut buf)
        .map_err(|errno| Error::syscall(Op::Read, errno))?;
    if got < size_of_val(&buf) {
        return Err(Error::Group(GroupError::ShortRead {
            expected: size_of_val(&buf),
            got,
        }));
    }
    Ok(EventTotal {
        name: name.to_owned(),
        value: buf[0],
        time_enabled: buf[1],
        time_running: buf[2],
    })
}

/// Where `program` is, as a shell finds it (POSIX "Command Search and Execution"): a
/// name with a `/` as it is; else the first file of that name that is executable in
/// the `PATH`'s directories (an empty entry: the current directory). ENOENT when no
/// directory has one, EACCES when one has it but not executable.
fn find_program(program: &OsStr, path: Option<&OsStr>) -> std::result::Result<PathBuf, Errno> {
    if program.is_empty() {
        return Err(Errno(libc::ENOENT));
    }
    if program.as_bytes().contains(&b'/') {
        return Ok(PathBuf::from(program));
    }
    let mut found_not_executable = false;
    let path = path.unwrap_or(OsStr::new("/usr/local/bin:/usr/bin:/bin"));
    for dir in path.as_bytes().split(|&b| b == b':') {
        let dir = if dir.is_empty() {
            Path::new(".")
        } else {
            Path::new(OsStr::from_bytes(dir))
        };
        let candidate = dir.join(program);
        let Ok(meta) = std::fs::metadata(&candidate) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let Ok(c) = CString::new(candidate.as_os_str().as_bytes()) else {
            continue;
        };
        // SAFETY: `c` is a NUL-terminated path; access only reads it.
        if unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0 {
            return Ok(candidate);
        }
        found_not_executable = true;
    }
    Err(Errno(if found_not_executable {
        libc::EACCES
    } else {
        libc::ENOENT
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// perf's modifiers (tools/perf/Documentation/perf-list.txt, "EVENT MODIFIERS"):
    /// u user, k kernel, h hypervisor; after a `<pmu>/…/` they follow the slash.
    #[test]
    fn modifiers_split_off() {
        let u = Levels {
            user: true,
            kernel: false,
            hypervisor: false,
        };
        assert_eq!(
            split_modifiers("instructions:u").unwrap(),
            ("instructions", Some(u))
        );
        assert_eq!(
            split_modifiers("instructions").unwrap(),
            ("instructions", None)
        );
        assert_eq!(
            split_modifiers("cycles:uk").unwrap().1,
            Some(Levels {
                user: true,
                kernel: true,
                hypervisor: false
            })
        );
        assert_eq!(
            split_modifiers("armv8_pmuv3_0/event=0x08/u").unwrap(),
            ("armv8_pmuv3_0/event=0x08/", Some(u))
        );
        assert_eq!(
            split_modifiers("armv8_pmuv3_0/event=0x08/").unwrap(),
            ("armv8_pmuv3_0/event=0x08/", None)
        );
        let e = split_modifiers("cycles:p").unwrap_err().to_string();
        assert!(e.contains("modifier `p`"), "{e}");
    }

    /// Without a modifier a hardware event counts user space only, a software event in
    /// the kernel too (the library's defaults, perf::Options).
    #[test]
    fn default_levels_follow_the_event_kind() {
        let count = CommandCount::new_in(
            &Sysfs::at("/nonexistent"),
            &["instructions", "task-clock", "cycles:k"],
        )
        .unwrap();
        let levels: Vec<(bool, bool)> = count
            .events
            .iter()
            .map(|e| (e.levels.user, e.levels.kernel))
            .collect();
        assert_eq!(levels, [(true, false), (true, true), (false, true)]);
        assert_eq!(count.names(), ["instructions", "task-clock", "cycles:k"]);
        assert_eq!(
            count.select(&[2, 0, 9]).names(),
            ["cycles:k", "instructions"]
        );
    }

    /// POSIX XCU 2.9.1.1 "Command Search and Execution": the first executable file of
    /// that name in the PATH's directories; a name with a slash is used as is.
    #[test]
    fn programs_are_found_as_a_shell_finds_them() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "").unwrap();
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
        let tool = dir.path().join("tool");
        std::fs::write(&tool, "").unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.path().as_os_str();
        assert_eq!(find_program(OsStr::new("tool"), Some(path)), Ok(tool));
        assert_eq!(
            find_program(OsStr::new("missing"), Some(path)),
            Err(Errno(libc::ENOENT))
        );
        // Root may execute anything with an x bit anywhere; a 0644 file has none.
        assert_eq!(
            find_program(OsStr::new("plain"), Some(path)),
            Err(Errno(libc::EACCES))
        );
        assert_eq!(
            find_program(OsStr::new("./x/y"), Some(path)),
            Ok(PathBuf::from("./x/y"))
        );
        assert_eq!(
            find_program(OsStr::new(""), Some(path)),
            Err(Errno(libc::ENOENT))
        );
    }

    fn run_sh(script: &str) -> CommandRun {
        CommandCount::new(&["task-clock"])
            .unwrap()
            .run(OsStr::new("sh"), &["-c".into(), script.into()])
            .unwrap()
    }

    /// The shell's own convention (POSIX XCU 2.8.2 "Exit Status for Commands"): the
    /// status a command exits with, or the signal that ended it.
    #[test]
    fn run_passes_the_exit_status_and_the_signal_on() {
        let run = run_sh("exit 3");
        assert_eq!(run.end, CommandEnd::Exited(3));
        assert_eq!(run.totals.len(), 1);
        assert_eq!(run.totals[0].name, "task-clock");
        // task-clock counts nanoseconds the command ran (perf_event_open(2)): sh ran.
        assert!(run.totals[0].value > 0, "{run:?}");
        assert!(run.totals[0].time_enabled > 0, "{run:?}");
        assert_eq!(
            run_sh("kill -9 $$").end,
            CommandEnd::Signaled(libc::SIGKILL)
        );
    }

    /// A child's task-clock is folded into the parent's event when it exits (Linux
    /// 6.12 kernel/events/core.c `sync_child_event`): a script whose child burns CPU
    /// while the shell only waits counts the child's time.
    #[test]
    fn run_counts_the_children() {
        let run = run_sh("(i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done) & wait");
        assert_eq!(run.end, CommandEnd::Exited(0));
        // The loop takes milliseconds in any shell; the waiting shell alone well under
        // one.
        assert!(run.totals[0].value > 1_000_000, "{run:?}");
    }

    /// execve(2): ENOENT for no such file, ENOEXEC for a file that is neither an ELF
    /// nor a script.
    #[test]
    fn run_reports_a_command_that_cannot_be_executed() {
        use std::os::unix::fs::PermissionsExt;
        let count = CommandCount::new(&["task-clock"]).unwrap();
        let missing = count.run(OsStr::new("/nonexistent/command"), &[]).unwrap();
        assert_eq!(missing.end, CommandEnd::NotExecuted(Errno(libc::ENOENT)));
        assert!(missing.totals.is_empty());
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junk");
        std::fs::write(&junk, [0u8, 1, 2, 3]).unwrap();
        std::fs::set_permissions(&junk, std::fs::Permissions::from_mode(0o755)).unwrap();
        let run = count.run(junk.as_os_str(), &[]).unwrap();
        assert_eq!(run.end, CommandEnd::NotExecuted(Errno(libc::ENOEXEC)));
    }
}
