//! Checks the perf backend's kernel-entry sentinel ([`pmu_linux::perf::Options::kernel_sentinel`])
//! on this machine: the arm64 guest runs it (tests/guest/arm64.sh `scenario_sentinel`,
//! asserted by tests/tests/kernel_arm64.rs).
//!
//! `sentinel-check MODE N` opens a session of `instructions` with the sentinel, runs N
//! regions and prints one line of `key=value` (no spaces in values):
//!
//! - `getpid`: each region makes one `getpid` system call;
//! - `fault`: each region writes to a page of a fresh anonymous mapping, first touch;
//! - `quiet`: each region runs a short loop; around each region (outside it) the
//!   CPU's interrupt count (its column of /proc/interrupts) and the thread's
//!   context switches are read, so that every flagged region can be explained;
//! - `compare`: the user's `instructions` over the same loop with and without the
//!   sentinel (the smallest of N regions each, less the smallest of N empty regions,
//!   as a Meter calibrates): the sentinel must not change them.
//!
//! Every mode prints `sentinel=counting|off`, and with `off` its reason in `why=`.
//! With `as-nobody` after N it first drops root for uid 65534 (a user without
//! CAP_PERFMON).
//! Exit status 0 when the regions were measured (whatever the verdicts: the test
//! judges them), 1 on an error.

use std::process::ExitCode;

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn main(argv: &[String]) -> ExitCode {
    imp::main(argv)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn main(_: &[String]) -> ExitCode {
    eprintln!("sentinel-check: the perf backend exists on x86_64 and aarch64 only");
    ExitCode::FAILURE
}

/// The check, where there is a perf backend.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod imp {
    use std::process::ExitCode;

    use pmu_linux::perf::{Options, Session};
    use pmu_linux::pmu_core::RegionMeter;
    use pmu_linux::{Hazards, Reading};

    pub fn main(args: &[String]) -> ExitCode {
        let (Some(mode), Some(n)) = (
            args.get(1),
            args.get(2).and_then(|n| n.parse::<usize>().ok()),
        ) else {
            eprintln!("usage: sentinel-check getpid|fault|quiet|compare N [as-nobody]");
            return ExitCode::from(2);
        };
        let user = if args.get(3).is_some_and(|a| a == "as-nobody") {
            if let Err(e) = become_nobody() {
                eprintln!("sentinel-check: cannot drop root: {e}");
                return ExitCode::FAILURE;
            }
            "nobody"
        } else {
            "self"
        };
        match run(mode, n) {
            Ok(line) => {
                // SAFETY: getuid has no arguments and cannot fail.
                let uid = unsafe { libc::getuid() };
                println!("{line} user={user} uid={uid}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("sentinel-check: {e}");
                ExitCode::FAILURE
            }
        }
    }

    fn open(sentinel: bool) -> Result<Session, pmu_linux::Error> {
        let session = Session::open(
            &["instructions"],
            Options::default().kernel_sentinel(sentinel),
        )?;
        session.reset()?;
        session.enable()?;
        Ok(session)
    }

    /// Drops root for uid and gid 65534 (`nobody`), no supplementary groups, no
    /// capabilities left (setuid from root to another uid clears them all).
    fn become_nobody() -> std::io::Result<()> {
        let check = |rc: libc::c_int| {
            if rc == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        };
        // SAFETY: plain system calls on this process's credentials.
        unsafe {
            check(libc::setgroups(0, std::ptr::null()))?;
            check(libc::setgid(65534))?;
            check(libc::setuid(65534))?;
        }
        Ok(())
    }

    /// `sentinel=…` and, when off, `why=…` (spaces as `_`).
    fn describe(session: &Session) -> String {
        match session.sentinel() {
            pmu_linux::verdict::Sentinel::Counting { event, .. } => {
                format!("sentinel=counting event={event}")
            }
            pmu_linux::verdict::Sentinel::Off { why } => {
                format!("sentinel=off why={}", why.replace(' ', "_"))
            }
            other => format!(
                "sentinel=other text={}",
                other.to_string().replace(' ', "_")
            ),
        }
    }

    /// What N regions were flagged with.
    #[derive(Default)]
    struct Tally {
        regions: usize,
        flagged: usize,
        unknown: usize,
        min_entries: Option<u64>,
        max_entries: u64,
        counted_min: Option<u64>,
        /// quiet: flagged regions whose CPU took an interrupt meanwhile, or the thread
        /// was switched out; neither.
        by_interrupt: usize,
        by_switch: usize,
        by_fault: usize,
        unexplained: usize,
        /// The first unexplained region's number and sentinel count.
        first_unexplained: Option<(usize, u64)>,
    }

    impl Tally {
        fn add(&mut self, session: &Session, reading: Reading) -> bool {
            let evidence = session.evidence();
            self.regions += 1;
            self.counted_min = Some(
                self.counted_min
                    .map_or(reading.value, |m| m.min(reading.value)),
            );
            let flagged = reading.hazards.contains(Hazards::KERNEL_ENTRY);
            if flagged != evidence.kernel_entries.is_some_and(|k| k > 0) {
                eprintln!("reading and evidence disagree: {reading:?} {evidence:?}");
            }
            match evidence.kernel_entries {
                Some(k) => {
                    self.min_entries = Some(self.min_entries.map_or(k, |m| m.min(k)));
                    self.max_entries = self.max_entries.max(k);
                }
                None => self.unknown += 1,
            }
            self.flagged += usize::from(flagged);
            flagged
        }

        fn line(&self) -> String {
            format!(
                "regions={} flagged={} unknown={} min_entries={} max_entries={} min_count={} \
             by_interrupt={} by_switch={} by_fault={} unexplained={} first_unexplained={}",
                self.regions,
                self.flagged,
                self.unknown,
                self.min_entries.map_or(-1, |m| m as i128),
                self.max_entries,
                self.counted_min.map_or(-1, |m| m as i128),
                self.by_interrupt,
                self.by_switch,
                self.by_fault,
                self.unexplained,
                self.first_unexplained
                    .map_or_else(|| "none".to_owned(), |(i, k)| format!("{i}:{k}"))
            )
        }
    }

    fn run(mode: &str, n: usize) -> Result<String, pmu_linux::Error> {
        match mode {
            "getpid" => {
                let mut session = open(true)?;
                let mut tally = Tally::default();
                let mut out = [Reading::default(); 1];
                for _ in 0..n {
                    session.start()?;
                    // SAFETY: getpid has no arguments and cannot fail.
                    std::hint::black_box(unsafe { libc::syscall(libc::SYS_getpid) });
                    session.stop(&mut out)?;
                    tally.add(&session, out[0]);
                }
                Ok(format!(
                    "mode=getpid {} {}",
                    describe(&session),
                    tally.line()
                ))
            }
            "fault" => {
                let mut session = open(true)?;
                let page = 4096usize;
                let len = n * page;
                // SAFETY: a fresh private anonymous mapping; checked for failure below.
                let base = unsafe {
                    libc::mmap(
                        std::ptr::null_mut(),
                        len,
                        libc::PROT_READ | libc::PROT_WRITE,
                        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                        -1,
                        0,
                    )
                };
                if base == libc::MAP_FAILED {
                    return Err(pmu_linux::Error::Io {
                        op: pmu_linux::error::Op::Mmap,
                        source: std::io::Error::last_os_error(),
                    });
                }
                let mut tally = Tally::default();
                let mut out = [Reading::default(); 1];
                for i in 0..n {
                    session.start()?;
                    // SAFETY: page i of the mapping of n pages made above, untouched before.
                    unsafe { std::ptr::write_volatile(base.cast::<u8>().add(i * page), 1) };
                    session.stop(&mut out)?;
                    tally.add(&session, out[0]);
                }
                // SAFETY: the mapping made above, no longer used.
                unsafe { libc::munmap(base, len) };
                Ok(format!(
                    "mode=fault {} {}",
                    describe(&session),
                    tally.line()
                ))
            }
            "quiet" => {
                let mut session = open(true)?;
                let cpu = pmu_linux::machine::current_cpu().unwrap_or(0);
                let mut tally = Tally::default();
                let mut out = [Reading::default(); 1];
                for i in 0..n {
                    let irq_before = cpu_interrupts(cpu);
                    let faults_before = thread_faults();
                    session.start()?;
                    spin(200);
                    session.stop(&mut out)?;
                    let faults_after = thread_faults();
                    let irq_after = cpu_interrupts(cpu);
                    if tally.add(&session, out[0]) {
                        let evidence = session.evidence();
                        if irq_after != irq_before {
                            tally.by_interrupt += 1;
                        } else if evidence.context_switched() {
                            tally.by_switch += 1;
                        } else if faults_after != faults_before {
                            tally.by_fault += 1;
                        } else {
                            tally.unexplained += 1;
                            if tally.first_unexplained.is_none() {
                                tally.first_unexplained =
                                    Some((i, evidence.kernel_entries.unwrap_or(0)));
                            }
                        }
                    }
                }
                Ok(format!(
                    "mode=quiet cpu={cpu} {} {}",
                    describe(&session),
                    tally.line()
                ))
            }
            "compare" => {
                let mut lines = Vec::new();
                let mut names = Vec::new();
                for sentinel in [false, true] {
                    let mut session = open(sentinel)?;
                    names.push(
                        session
                            .specs()
                            .map(|s| s.name.as_str())
                            .collect::<Vec<_>>()
                            .join(","),
                    );
                    let mut out = [Reading::default(); 1];
                    // The smallest count of regions no detector flagged besides the
                    // sentinel (its own flags are what differs), of the loop and of an
                    // empty region: the loop's count is their difference, as a Meter
                    // calibrates it. The raw counts also hold the edges' own user-space
                    // instructions, which differ with the sentinel (its reads are out of
                    // line): both raw minimums are printed too.
                    let mut min = [None::<u64>; 2];
                    for (slot, iterations) in [(0, 1000), (1, 0)] {
                        for _ in 0..n {
                            session.start()?;
                            spin(iterations);
                            session.stop(&mut out)?;
                            if (out[0].hazards - Hazards::KERNEL_ENTRY).is_empty() {
                                min[slot] =
                                    Some(min[slot].map_or(out[0].value, |m| m.min(out[0].value)));
                            }
                        }
                    }
                    let tag = if sentinel { "with" } else { "without" };
                    let [Some(looped), Some(empty)] = min else {
                        lines.push(format!("{tag}=-1"));
                        continue;
                    };
                    lines.push(format!(
                        "{tag}={} {tag}_raw={looped} {tag}_empty={empty}",
                        looped as i128 - empty as i128
                    ));
                    if sentinel {
                        lines.push(describe(&session));
                    }
                }
                Ok(format!(
                    "mode=compare {} names_equal={}",
                    lines.join(" "),
                    u8::from(names[0] == names[1])
                ))
            }
            other => Err(pmu_linux::Error::Event(
                pmu_linux::error::EventError::Unknown {
                    name: format!("mode {other}"),
                },
            )),
        }
    }

    /// A loop of `iterations` iterations; no memory, no system call.
    #[inline(never)]
    fn spin(iterations: u64) -> u64 {
        (0..iterations).fold(0u64, |a, i| {
            std::hint::black_box(a.wrapping_mul(31).wrapping_add(i))
        })
    }

    /// The thread's page faults, minor + major (getrusage(RUSAGE_THREAD)): a region's first
    /// execution of a code page, or first touch of a data page, faults.
    fn thread_faults() -> u64 {
        // SAFETY: an all-zero rusage is a valid value; getrusage writes it whole.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `usage` is a valid, writable rusage.
        if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } != 0 {
            return u64::MAX;
        }
        (usage.ru_minflt + usage.ru_majflt) as u64
    }

    /// The interrupts CPU `cpu` has taken: the sum of its column of /proc/interrupts.
    fn cpu_interrupts(cpu: u32) -> u64 {
        let text = std::fs::read_to_string("/proc/interrupts").unwrap_or_default();
        text.lines()
            .skip(1)
            .filter_map(|line| {
                line.split_whitespace()
                    .nth(cpu as usize + 1)?
                    .parse::<u64>()
                    .ok()
            })
            .sum()
    }
}
