//! `pmu-demo stat`: count a command of the user's own, its threads and children, and
//! print the counts as `perf stat` does, each with its verdict.

mod figures;
mod sub_regions;

use std::ffi::OsString;
use std::time::Duration;

use clap::Args as ClapArgs;

use figures::{End, EventStat, RunCount, StatReport};

use crate::{Failure, EXIT_USAGE};

/// `pmu-demo stat --help`'s text (on the subcommand in main.rs: clap takes a
/// variant's own doc comment over the arguments struct's).
pub const LONG_ABOUT: &str =
    "Run a command and count its hardware events, the way `perf stat` does.

What is counted:
  perf    (the default on x86_64 and arm64) the command, every thread it starts and
          every child process, from its exec to its end: each event is opened on the
          command before it execs (inherited, enabled by the exec, so the demo's own
          fork and wait are not counted). Modifiers as in perf: instructions:u (user
          space), cycles:k (kernel), cycles:uk; without one a hardware event counts user
          space only. More events than counters: the kernel multiplexes them, and such
          an event is flagged with the share of time it ran and an estimate that is
          never printed as a count; --repeat counts each group of events that fits
          the counters exactly, in runs of its own.
  direct  (after loading kmod-enable-user; the only backend on 32-bit ARM: Raspberry
          Pi 1, Zero, and a 32-bit kernel on a Pi 2/3/4) counts the CPU, not the
          command: the demo and the command are pinned to one CPU (--cpu) and its
          counters read before, every 50 ms while it runs, and at its end; the
          counts are the sums. Anything else that ran in user space on that CPU
          meanwhile is counted too; the report compares the command's CPU time with
          the time it took and says when the CPU did other work. Between two reads
          only the demo runs on that CPU, so the command loses nothing (when another
          task ran there in between, the count is lost, never a number). The reads
          are what makes a long count right: these counters are 32 bits wide on many
          cores (every Raspberry Pi's event counters) and wrap every few seconds; a
          reading undoes one wrap, not two, so a read that came later than 107 ms
          after the one before (the time a 32-bit counter needs to count 2^32 events
          at 5 GHz and 8 events a cycle, assumed as the most any core does) makes
          the count lost: \"may have wrapped unseen\". Under the module's
          per-thread grant with follow=1 (its default on arm64 kernels with preempt
          notifiers) the counters follow the demo's own thread and cannot count the
          command: refused (status 3); load it with follow=0 or cpu_wide=1.

A Ctrl-C ends the command and the counts are still printed (pmu-demo ignores SIGINT
and SIGQUIT while the command runs, as system(3) does). The report goes to stderr (the
command keeps stdout), or to --output. pmu-demo exits
with the command's status: a signal death is 128 + the signal, a command not found 127,
one that cannot be executed 126, as in a shell. Its own errors (a bad event) are 2.";

/// `pmu-demo stat --help`'s examples.
pub const AFTER_HELP: &str = "Examples:
  pmu-demo stat -- ./my-program --its-flags
  pmu-demo stat -e instructions:u,cycles:u,branch-misses -- make -j4
  pmu-demo stat -e instructions:u --repeat 5 --json -o stat.json -- ./bench
  pmu-demo stat -e L1D_CACHE,L1D_CACHE_REFILL,L2D_CACHE,L2D_CACHE_REFILL,BR_MIS_PRED,BR_PRED,INST_RETIRED,CPU_CYCLES --repeat 3 -- ./my-program
Raspberry Pi (after `sudo insmod kmod_enable_user.ko`; on a 32-bit OS this is the only backend):
  pmu-demo stat --backend direct --cpu 2 -e instructions,cycles -- ./my-program";

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Events, comma-separated, with perf's modifiers (instructions:u, cycles:k): perf
    /// names, raw rHEX, PMU/event=…/ from /sys/bus/event_source/devices, or the core's
    /// own names as `pmu-demo list` shows them.
    #[arg(
        short = 'e',
        long,
        value_delimiter = ',',
        default_value = "instructions:u,cycles:u"
    )]
    events: Vec<String>,
    /// Counter backend: `auto` is perf (direct on 32-bit ARM), with perf's software
    /// events where there are no hardware counters; `direct` counts the whole CPU the
    /// command is pinned to.
    #[arg(long, value_enum, default_value = "auto")]
    backend: crate::BackendChoice,
    /// Run the command N times for each group of events that fits the counters
    /// together (the events rotate across runs), and say whether the runs agreed.
    #[arg(long, value_name = "N")]
    repeat: Option<usize>,
    /// The direct backend: the CPU to pin the command to (default: the one the demo
    /// starts on).
    #[arg(long)]
    cpu: Option<usize>,
    /// The report as one JSON object.
    #[arg(long)]
    json: bool,
    /// Write the report to this file instead of stderr (`-`: stdout, which the command
    /// shares).
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<std::path::PathBuf>,
    /// The command and its arguments (after `--`).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    command: Vec<OsString>,
}

/// What one backend measured: per event its runs (in event order), the ends, the times.
struct Measured {
    backend: &'static str,
    scope: String,
    names: Vec<String>,
    groups: Vec<Vec<usize>>,
    runs: Vec<Vec<RunCount>>,
    ends: Vec<End>,
    elapsed: Vec<Duration>,
    cpu: Vec<Duration>,
    cpu_wide: bool,
    notes: Vec<String>,
    /// The direct backend: per run, the sub-regions its counts sum.
    sub_regions: Vec<u32>,
}

impl Measured {
    /// Nothing counted yet: `names` in `groups`, counted by `backend` over `scope`.
    fn new(
        backend: &'static str,
        scope: String,
        names: Vec<String>,
        groups: Vec<Vec<usize>>,
        cpu_wide: bool,
    ) -> Self {
        Self {
            backend,
            scope,
            runs: vec![Vec::new(); names.len()],
            names,
            groups,
            ends: Vec::new(),
            elapsed: Vec::new(),
            cpu: Vec::new(),
            cpu_wide,
            notes: Vec::new(),
            sub_regions: Vec::new(),
        }
    }

    /// The command and its arguments, split.
    fn command(args: &Args) -> Result<(&std::ffi::OsString, &[std::ffi::OsString]), Failure> {
        args.command
            .split_first()
            .ok_or_else(|| usage("no command given"))
    }
}

/// Runs `pmu-demo stat`: the demo's exit status is the command's.
pub fn run(args: &Args) -> Result<u8, Failure> {
    if args.repeat == Some(0) {
        return Err(usage("--repeat 0: give at least 1 run"));
    }
    let backend = match args.backend {
        crate::BackendChoice::Auto if cfg!(target_arch = "arm") => crate::BackendChoice::Direct,
        other => other,
    };
    let measured = match backend {
        crate::BackendChoice::Direct => direct::measure(args)?,
        _ => perf_measure(args, backend == crate::BackendChoice::Auto)?,
    };
    let Measured {
        backend,
        scope,
        names,
        groups,
        runs,
        ends,
        elapsed,
        cpu,
        cpu_wide,
        mut notes,
        sub_regions,
    } = measured;
    let end = *ends
        .last()
        .ok_or_else(|| Failure::new("the command never ran"))?;
    if let End::NotExecuted { errno } = end {
        let why = std::io::Error::from_raw_os_error(errno).to_string();
        // "Permission denied (os error 13)": the words without the number.
        let why = why.split(" (os error").next().unwrap_or(&why).to_owned();
        let what = if errno == libc::ENOENT {
            "command not found".to_owned()
        } else {
            format!("cannot execute: {why}")
        };
        eprintln!(
            "pmu-demo: {}: {what} (exit status {})",
            args.command[0].to_string_lossy(),
            end.exit_status()
        );
        return Ok(end.exit_status());
    }
    if ends.iter().any(|e| *e != end) {
        notes.push(format!(
            "the runs ended differently ({}); the exit status is the last run's",
            ends.iter()
                .map(|e| e.exit_status().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let group_of = |i: usize| groups.iter().position(|g| g.contains(&i)).unwrap_or(0);
    let events: Vec<EventStat> = names
        .iter()
        .enumerate()
        .map(|(i, name)| figures::event_stat(name, group_of(i), &runs[i], cpu_wide))
        .collect();
    let mean =
        |d: &[Duration]| d.iter().map(Duration::as_secs_f64).sum::<f64>() / d.len().max(1) as f64;
    let (elapsed_s, cpu_s) = (mean(&elapsed), mean(&cpu));
    if cpu_wide && cpu_s < 0.9 * elapsed_s {
        notes.push(format!(
            "the command used the CPU {:.0}% of the time it took: for the rest the CPU idled \
             or ran other tasks, and what those ran in user space is in these counts",
            100.0 * cpu_s / elapsed_s.max(f64::MIN_POSITIVE)
        ));
    }
    let report = StatReport {
        command: args
            .command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        backend,
        scope,
        repeat: args.repeat.unwrap_or(1),
        groups: groups
            .iter()
            .map(|g| g.iter().map(|&i| names[i].clone()).collect())
            .collect(),
        derived: figures::derived(&events),
        events,
        elapsed_s,
        cpu_s,
        runs: ends.len(),
        end,
        exit_status: end.exit_status(),
        notes,
        sub_regions,
    };
    let text = if args.json {
        serde_json::to_string_pretty(&report).map_err(|e| Failure::new(e.to_string()))? + "\n"
    } else {
        figures::human(&report)
    };
    match &args.output {
        Some(path) if path.as_os_str() == "-" => print!("{text}"),
        Some(path) => std::fs::write(path, text)
            .map_err(|e| Failure::new(format!("writing {}: {e}", path.display())))?,
        None => eprint!("{text}"),
    }
    Ok(report.exit_status)
}

fn usage(message: impl Into<String>) -> Failure {
    Failure {
        message: message.into(),
        status: EXIT_USAGE,
    }
}

/// The perf backend: [`pmu_linux::perf::CommandCount`].
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn perf_measure(args: &Args, auto: bool) -> Result<Measured, Failure> {
    use pmu_linux::error::OpenError;
    use pmu_linux::perf::{CommandCount, CommandEnd};
    let given: Vec<&str> = args.events.iter().map(String::as_str).collect();
    let mut notes = Vec::new();
    let mut count = CommandCount::new(&given).map_err(|e| usage(Failure::from(e).message))?;
    let all: Vec<usize> = (0..given.len()).collect();
    let mut backend = "perf";
    let fits_all = match count.fits(&all) {
        Ok(fits) => fits,
        // No hardware counters at all (a VM without vPMU): perf's software events,
        // said so, and the command still runs.
        Err(pmu_linux::Error::Open {
            cause:
                OpenError::NotSupported {
                    needs_cpu_pmu: true,
                    cpu_pmu_present: false,
                    ..
                },
            ..
        }) if auto => {
            notes.push(
                "no hardware counters here (the kernel registers no CPU PMU: a VM without \
                 vPMU?): counted with perf's software events instead"
                    .to_owned(),
            );
            backend = "software";
            count =
                CommandCount::new(&crate::measure_cmd::SOFTWARE_EVENTS).map_err(Failure::from)?;
            true
        }
        Err(e) => return Err(usage(Failure::from(e).message)),
    };
    let names = count.names();
    let groups = match args.repeat {
        Some(_) => figures::rotation_groups(names.len(), |set| count.fits(set))
            .map_err(|e| usage(Failure::from(e).message))?,
        None => {
            if !fits_all {
                notes.push(
                    "more events than counters: the kernel multiplexes them (each is \
                     flagged with the share of time it ran); --repeat N counts each group \
                     that fits the counters exactly, in runs of its own"
                        .to_owned(),
                );
            }
            vec![(0..names.len()).collect()]
        }
    };
    let mut m = Measured::new(
        backend,
        "the command, its threads and children, from its exec to its end (perf events \
         inherited, enabled on exec)"
            .into(),
        names,
        groups,
        false,
    );
    m.notes = notes;
    let (program, rest) = Measured::command(args)?;
    for _ in 0..args.repeat.unwrap_or(1) {
        for group in &m.groups {
            let run = count
                .select(group)
                .run(program, rest)
                .map_err(Failure::from)?;
            let end = match run.end {
                CommandEnd::Exited(code) => End::Exited { code },
                CommandEnd::Signaled(signal) => End::Signaled { signal },
                CommandEnd::NotExecuted(errno) => End::NotExecuted { errno: errno.0 },
            };
            m.ends.push(end);
            if matches!(end, End::NotExecuted { .. }) {
                return Ok(m);
            }
            for (&i, total) in group.iter().zip(&run.totals) {
                m.runs[i].push(RunCount {
                    value: total.value,
                    times: Some((total.time_enabled, total.time_running)),
                    lost: None,
                });
            }
            m.elapsed.push(run.elapsed);
            m.cpu.push(run.cpu_time);
        }
    }
    Ok(m)
}

/// No perf backend in pmu-linux on 32-bit ARM.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn perf_measure(_args: &Args, _auto: bool) -> Result<Measured, Failure> {
    Err(usage(format!(
        "--backend perf: {} (use --backend direct)",
        pmu_linux::Error::Unsupported(pmu_linux::error::Unsupported::Perf)
    )))
}

mod direct {
    //! The direct backend: the CPU's counters around the command, pinned to that CPU.

    use std::time::Instant;

    use pmu_linux::pmu_core::CounterWidth;
    use pmu_linux::{BackendKind, EventHandle, Meter};

    use super::sub_regions::{self, Summed};
    use super::{figures, usage, End, Measured, RunCount};
    use crate::{Failure, EXIT_USAGE};

    /// Why the direct backend cannot count another process under `grant`: with
    /// kmod-enable-user's per-thread grant and `follow=1` (its default on arm64 kernels
    /// with preempt notifiers) the module's counters follow the demo's own thread (saved
    /// when it is switched out, written back when it is switched in), so what the
    /// command ran while the demo slept is erased at each switch-in: the sums would be the
    /// demo's own instructions, printed as the command's.
    pub(super) fn refusal(grant: Option<pmu_linux::choice::Grant>) -> Option<Failure> {
        let follows = grant.is_some_and(|g| g.scope().counts_follow_thread());
        follows.then(|| Failure {
            message: "--backend direct: kmod-enable-user's per-thread grant makes the \
                      module's counters follow the demo's own thread, so they cannot count \
                      the command (its instructions would be erased at each of the demo's \
                      switches); load the module with follow=0 (per-thread, the CPU's \
                      counters) or cpu_wide=1, or use the perf backend (--backend perf)"
                .into(),
            status: crate::EXIT_NOT_ENABLED,
        })
    }

    /// A meter of the direct backend on `cpu` with `names`, and their handles.
    fn meter(names: &[String], cpu: usize) -> Result<(Meter, Vec<EventHandle>), pmu_linux::Error> {
        let mut builder = Meter::builder();
        let handles = names
            .iter()
            .map(|name| builder.add_named(name))
            .collect::<Result<Vec<_>, _>>()?;
        builder.backend(BackendKind::Direct);
        builder.cpu(cpu);
        builder.kernel_sentinel(false);
        // SAFETY: the direct backend is documented (`pmu-demo stat --help`, README) as
        // taking the CPU's PMU over: no perf hardware events may run there meanwhile.
        unsafe { builder.program_the_pmu() };
        Ok((builder.build()?, handles))
    }

    /// A name for the direct backend: perf's `:u` dropped (it counts user space);
    /// other modifiers refused.
    fn direct_name(name: &str) -> Result<String, Failure> {
        match name.trim().rsplit_once(':') {
            Some((base, "u")) if !base.contains('/') => Ok(base.to_owned()),
            Some((_, modifiers)) if !name.contains('/') => Err(usage(format!(
                "{name}: the direct backend counts user space only (modifier `{modifiers}`)"
            ))),
            _ => Ok(name.trim().to_owned()),
        }
    }

    pub(super) fn measure(args: &super::Args) -> Result<Measured, Failure> {
        let names = args
            .events
            .iter()
            .map(|n| direct_name(n))
            .collect::<Result<Vec<_>, _>>()?;
        // SAFETY: sched_getcpu has no preconditions.
        let here = unsafe { libc::sched_getcpu() };
        let cpu = args.cpu.unwrap_or(usize::try_from(here).unwrap_or(0));
        let opened = |set: &[usize]| -> Result<bool, Failure> {
            let subset: Vec<String> = set.iter().map(|&i| names[i].clone()).collect();
            match meter(&subset, cpu) {
                Ok((meter, _)) => match refusal(meter.choice().grant) {
                    Some(refused) => Err(refused),
                    None => Ok(true),
                },
                Err(e) => {
                    let failure = Failure::from(e);
                    if failure.status == EXIT_USAGE {
                        Ok(false)
                    } else {
                        Err(failure)
                    }
                }
            }
        };
        let groups = match args.repeat {
            Some(_) => figures::rotation_groups(names.len(), opened)?,
            None => vec![(0..names.len()).collect()],
        };
        let mut m = Measured::new(
            "direct",
            format!(
                "CPU {cpu} in user space while the command ran there (the command and the \
                 demo pinned to it): the command, its threads and children, and anything \
                 else that ran on CPU {cpu}; read every {} ms and summed (between two \
                 reads only the demo runs on CPU {cpu}, so the command loses nothing)",
                sub_regions::POLL.as_millis()
            ),
            names,
            groups,
            true,
        );
        let (program, rest) = Measured::command(args)?;
        for _ in 0..args.repeat.unwrap_or(1) {
            for group in &m.groups {
                let subset: Vec<String> = group.iter().map(|&i| m.names[i].clone()).collect();
                let (mut meter, handles) = meter(&subset, cpu).map_err(|e| {
                    let too_many = matches!(
                        e,
                        pmu_linux::Error::Pmu(pmu_linux::error::PmuError::Core(
                            pmu_linux::pmu_core::Error::NoFreeCounter { .. }
                        ))
                    );
                    let mut failure = Failure::from(e);
                    if failure.status == 1 {
                        failure.status = EXIT_USAGE;
                    }
                    if too_many {
                        failure.message.push_str(
                            " (pmu-demo stat: --repeat N counts the events in groups that \
                             fit, a run of the command each)",
                        );
                    }
                    failure
                })?;
                if let Some(refused) = refusal(meter.choice().grant) {
                    return Err(refused);
                }
                let widths: Vec<CounterWidth> = handles
                    .iter()
                    .map(|&h| meter.counter_width(h).unwrap_or(CounterWidth::W32))
                    .collect();
                let mut sums = vec![Summed::default(); handles.len()];
                let mut sub_start = Instant::now();
                let mut region = meter.start().map_err(Failure::from)?;
                let started = Instant::now();
                // The child inherits the pinned thread's affinity (sched_setaffinity(2)).
                let child = std::process::Command::new(program).args(rest).spawn();
                let child = match child {
                    Ok(child) => child,
                    Err(e) => {
                        let _ = meter.stop(region);
                        m.ends.push(End::NotExecuted {
                            errno: e.raw_os_error().unwrap_or(libc::ENOENT),
                        });
                        return Ok(m);
                    }
                };
                let (end, cpu_time, elapsed) = {
                    let _interrupts = IgnoreInterrupts::new();
                    let ended = EndWatch::new(child.id());
                    loop {
                        let over = ended.wait(sub_regions::POLL)?;
                        let switches = if over { 0 } else { thread_switches() };
                        let counts = meter.stop(region).map_err(Failure::from)?;
                        let lasted = sub_start.elapsed();
                        for ((&handle, sum), &width) in handles.iter().zip(&mut sums).zip(&widths) {
                            let reading = counts.reading(handle).map_err(Failure::from)?;
                            sum.add(reading.value, reading.hazards, lasted, width);
                        }
                        if over {
                            break;
                        }
                        sub_start = Instant::now();
                        region = meter.start().map_err(Failure::from)?;
                        if thread_switches() != switches {
                            // Another task ran on the CPU between the two reads: the
                            // command may have been one of them.
                            for sum in &mut sums {
                                sum.lose(
                                    "the demo was preempted between two reads (the \
                                     command may have run uncounted)",
                                );
                            }
                        }
                    }
                    let elapsed = started.elapsed();
                    let (end, cpu_time) = wait(child.id())?;
                    (end, cpu_time, elapsed)
                };
                m.sub_regions
                    .push(sums.first().map_or(0, |sum| sum.sub_regions));
                for (sum, &i) in sums.into_iter().zip(group) {
                    m.runs[i].push(RunCount {
                        value: sum.value,
                        times: None,
                        lost: sum.lost,
                    });
                }
                m.ends.push(end);
                m.elapsed.push(elapsed);
                m.cpu.push(cpu_time);
            }
        }
        Ok(m)
    }

    /// SIGINT and SIGQUIT ignored while the command runs, as `system(3)` does: a Ctrl-C
    /// at the terminal ends the command (same process group) and the demo still reads
    /// and prints the counts. Set after the spawn, so the command keeps the demo's
    /// dispositions; restored on drop.
    struct IgnoreInterrupts {
        saved: [(libc::c_int, libc::sighandler_t); 2],
    }

    impl IgnoreInterrupts {
        fn new() -> Self {
            // SAFETY: SIG_IGN installs no handler code; the previous disposition is
            // returned for the restore.
            let ignore = |signal| (signal, unsafe { libc::signal(signal, libc::SIG_IGN) });
            Self {
                saved: [ignore(libc::SIGINT), ignore(libc::SIGQUIT)],
            }
        }
    }

    impl Drop for IgnoreInterrupts {
        fn drop(&mut self) {
            for &(signal, old) in &self.saved {
                if old != libc::SIG_ERR {
                    // SAFETY: puts back the disposition `signal` returned above.
                    unsafe { libc::signal(signal, old) };
                }
            }
        }
    }

    /// Sees the command's end while the demo reads the counters every period: a pidfd
    /// (pidfd_open(2), Linux 5.3) that poll(2) reports readable once the process has
    /// ended, so the last sub-region ends at once. On an older kernel (ENOSYS) the demo
    /// sleeps each period and asks waitid(2) with WNOHANG | WNOWAIT (the child stays
    /// for [`wait`]), and sees the end up to one period late: that much idle time or
    /// other tasks' work more in the counts and the elapsed time.
    struct EndWatch {
        pid: libc::pid_t,
        pidfd: Option<std::os::fd::OwnedFd>,
    }

    impl EndWatch {
        fn new(pid: u32) -> Self {
            let pid = libc::pid_t::try_from(pid).unwrap_or(libc::pid_t::MAX);
            // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
            let pidfd = std::os::fd::RawFd::try_from(fd)
                .ok()
                .filter(|&fd| fd >= 0)
                .map(|fd| {
                    use std::os::fd::FromRawFd;
                    // SAFETY: `fd` was just returned by pidfd_open and is owned by no
                    // one else.
                    unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }
                });
            Self { pid, pidfd }
        }

        /// Whether the command has ended, waiting up to `period` for it.
        fn wait(&self, period: std::time::Duration) -> Result<bool, Failure> {
            let ms = libc::c_int::try_from(period.as_millis()).unwrap_or(libc::c_int::MAX);
            let Some(pidfd) = &self.pidfd else {
                // SAFETY: poll with no descriptors only sleeps.
                unsafe { libc::poll(std::ptr::null_mut(), 0, ms) };
                // SAFETY: an all-zero siginfo_t is a valid value of the plain C struct.
                let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
                // SAFETY: `info` is valid to write; WNOWAIT leaves the child waitable.
                let rc = unsafe {
                    libc::waitid(
                        libc::P_PID,
                        self.pid as libc::id_t,
                        &mut info,
                        libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
                    )
                };
                if rc != 0 {
                    let e = std::io::Error::last_os_error();
                    if e.kind() == std::io::ErrorKind::Interrupted {
                        return Ok(false);
                    }
                    return Err(Failure::new(format!("waiting for the command: {e}")));
                }
                // SAFETY: waitid filled `info` (si_pid stays 0 while no child ended).
                return Ok(unsafe { info.si_pid() } != 0);
            };
            use std::os::fd::AsRawFd;
            let mut fds = libc::pollfd {
                fd: pidfd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            let rc = unsafe { libc::poll(&mut fds, 1, ms) };
            if rc < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    return Ok(false);
                }
                return Err(Failure::new(format!("waiting for the command: {e}")));
            }
            Ok(rc > 0)
        }
    }

    /// The demo thread's context switches so far, voluntary and not (getrusage(2),
    /// RUSAGE_THREAD): a change between one sub-region's stop and the next one's start
    /// means another task ran on the CPU in between.
    fn thread_switches() -> libc::c_long {
        // SAFETY: an all-zero rusage is a valid value of the plain C struct.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `usage` is valid to write.
        if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } != 0 {
            return -1;
        }
        usage.ru_nvcsw.wrapping_add(usage.ru_nivcsw)
    }

    /// Waits for `pid`: how it ended, and its CPU time with its waited-for children's.
    fn wait(pid: u32) -> Result<(End, std::time::Duration), Failure> {
        let pid = libc::pid_t::try_from(pid).map_err(|e| Failure::new(e.to_string()))?;
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value of the plain C struct.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        loop {
            // SAFETY: `status` and `usage` are valid to write; `pid` is our child.
            let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
            if rc == pid {
                break;
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(Failure::new(format!("waiting for the command: {e}")));
            }
        }
        let end = if libc::WIFSIGNALED(status) {
            End::Signaled {
                signal: libc::WTERMSIG(status),
            }
        } else {
            End::Exited {
                code: libc::WEXITSTATUS(status),
            }
        };
        let time = |t: libc::timeval| {
            std::time::Duration::from_secs(t.tv_sec.max(0) as u64)
                + std::time::Duration::from_micros(t.tv_usec.max(0) as u64)
        };
        Ok((end, time(usage.ru_utime) + time(usage.ru_stime)))
    }
}

#[cfg(test)]
mod tests {
    use pmu_linux::choice::{Grant, GrantScope};

    use super::direct::refusal;

    /// Under kmod-enable-user's per-thread grant with `follow=1` the module's counters are
    /// the demo thread's own (kmod-enable-user/stock/kmod_enable_user_uapi.h,
    /// KMOD_EU_GRANTED_FOLLOW): the direct backend cannot count the command, and says so
    /// instead of printing the demo's own count as the command's. With `follow=0` or the
    /// CPU-wide grant the counters are the CPU's, which the command runs on.
    #[test]
    fn the_direct_backend_refuses_counters_that_follow_the_demo() {
        let scoped = |scope| Some(Grant::ReadOnly { cpu: 0, scope });
        let refused =
            refusal(scoped(GrantScope::Thread { follow: true })).expect("follow=1 refused");
        assert_eq!(refused.status, crate::EXIT_NOT_ENABLED);
        assert!(refused.message.contains("follow=0"), "{}", refused.message);
        assert!(refusal(scoped(GrantScope::Thread { follow: false })).is_none());
        assert!(refusal(scoped(GrantScope::CpuWide)).is_none());
        assert!(refusal(None).is_none());
    }
}
