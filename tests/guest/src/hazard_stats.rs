//! `pmu-guest hazard-stats` (the guest of `cargo xtask hazards` runs it): inject
//! each disturbance many times inside a measured region and count how many regions the
//! meter flagged; then measure many quiet regions and check every flag against evidence,
//! read outside the region, that the kernel really ran.
//!
//! Output: one `RESULT hazard-stats …` line per backend and disturbance, one
//! `RESULT hazard-quiet …` line per backend (fields documented in docs/hazards.md,
//! which xtask/hazards/hazards.md.in generates from these lines). Exit status 1 when an
//! injected disturbance went unflagged or a quiet flag is unexplained.

use std::collections::BTreeMap;

use clap::{Args as ClapArgs, ValueEnum};

use crate::Failure;

/// The meter the regions go through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StatsBackend {
    /// `pmu_linux::Meter` on perf (`kernel.perf_user_access=1` for one-instruction reads).
    Perf,
    /// `pmu_linux::Meter` on kmod-enable-user's read-only grant (the module's counters).
    Direct,
    /// The direct backend programming the PMU itself (module `el0_programming=1`): the
    /// only one whose counter can be preset near its wrap (the overflow injection).
    DirectProgrammed,
}

/// What is injected inside a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Disturbance {
    /// A spin on the virtual counter for longer than one scheduler tick.
    Timer,
    /// `nanosleep(100 µs)`: the thread sleeps, another task (idle) runs.
    Nanosleep,
    /// `sched_setaffinity` to the other CPU.
    Migration,
    /// A write to a page dropped with `MADV_DONTNEED` before the region (minor fault).
    Fault,
    /// The `getpid` system call (through `syscall(2)`: no C-library cache).
    Getpid,
    /// A counter overflow: perf, a sampling event's overflow interrupt; the direct
    /// backend (`direct-programmed`), a counter preset 10 000 below its 32-bit wrap.
    Overflow,
}

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Which meter the regions go through.
    #[arg(long, value_enum)]
    backend: StatsBackend,
    /// Regions per disturbance.
    #[arg(long, default_value_t = 1000)]
    injections: u64,
    /// Quiet regions (nothing injected).
    #[arg(long, default_value_t = 10_000)]
    quiet: u64,
    /// The disturbances to inject (default: every one this backend can).
    #[arg(long, value_enum, value_delimiter = ',')]
    only: Vec<Disturbance>,
}

#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
/// `/proc/interrupts`, one CPU's column: every line's count, by the line's name
/// (its last word: `arch_timer`, `arm-pmu`, `IPI0`'s description …).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Interrupts {
    by_line: BTreeMap<String, u64>,
}

#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
impl Interrupts {
    /// CPU `cpu`'s column of `text` (the format of `show_interrupts()`, Linux 6.12
    /// kernel/irq/proc.c and arch/arm64/kernel/smp.c `arch_show_interrupts()`: a
    /// header of `CPUn` names, then `label: count per CPU, description`).
    pub fn parse(text: &str, cpu: usize) -> Option<Self> {
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next()?.split_whitespace().collect();
        let column = header.iter().position(|h| *h == format!("CPU{cpu}"))?;
        let mut by_line = BTreeMap::new();
        for line in lines {
            let Some((label, rest)) = line.split_once(':') else {
                continue;
            };
            let words: Vec<&str> = rest.split_whitespace().collect();
            let Some(count) = words.get(column).and_then(|w| w.parse::<u64>().ok()) else {
                // `Err:` and `Mis:` have one number only.
                continue;
            };
            // A device interrupt by its action's name (the last word), an
            // architecture one (`IPI0`) by its label.
            let label = label.trim();
            let name = match words.last() {
                Some(last) if label.parse::<u32>().is_ok() => (*last).to_owned(),
                _ => label.to_owned(),
            };
            *by_line.entry(name).or_insert(0) += count;
        }
        Some(Self { by_line })
    }

    fn read(cpu: usize) -> Result<Self, Failure> {
        let text = std::fs::read_to_string("/proc/interrupts")
            .map_err(|e| Failure::new(format!("/proc/interrupts: {e}")))?;
        Self::parse(&text, cpu)
            .ok_or_else(|| Failure::new(format!("/proc/interrupts has no CPU{cpu} column")))
    }

    /// The lines that moved from `self` to `later`, with by how much.
    pub fn moved(&self, later: &Self) -> BTreeMap<String, u64> {
        later
            .by_line
            .iter()
            .filter_map(|(name, &n)| {
                let before = self.by_line.get(name).copied().unwrap_or(0);
                (n > before).then(|| (name.clone(), n - before))
            })
            .collect()
    }
}

#[cfg(not(target_arch = "aarch64"))]
pub fn run(_: &Args) -> Result<(), Failure> {
    Err(Failure::new(
        "hazard-stats runs in the arm64 guest of `cargo xtask hazards` only",
    ))
}

#[cfg(target_arch = "aarch64")]
pub fn run(args: &Args) -> Result<(), Failure> {
    imp::run(args)
}

#[cfg(target_arch = "aarch64")]
mod imp {
    use std::collections::BTreeMap;
    use std::hint::black_box;

    use pmu_linux::pmu_core::Hazards;
    use pmu_linux::pmu_core::RegionMeter;
    use pmu_linux::{BackendKind, Meter};

    use super::{Args, Disturbance, Interrupts, StatsBackend};
    use crate::hazard_names;
    use crate::{progress, Failure};

    /// The test kernel's tick: CONFIG_HZ=250 with CONFIG_HZ_PERIODIC (tinyconfig's
    /// choices, which xtask/kernel/arm64.config leaves alone: see the built kernel's
    /// .config), so a tick every 4 ms on every online CPU. The timer row checks it:
    /// a region counts as injected only where this CPU's `arch_timer` line moved.
    const TICK_NS: u64 = 4_000_000;
    /// The timer region spins this long: one tick plus 10 %, so that at least one tick
    /// lands inside whatever its phase.
    const TIMER_SPIN_NS: u64 = TICK_NS + TICK_NS / 10;
    /// Loop iterations between two reads of the virtual counter in the timer region:
    /// a few thousand instructions, a few microseconds of virtual time under
    /// `-icount shift=0` (one nanosecond per instruction), far below a tick.
    const TIMER_CHUNK: u64 = 1000;

    /// What the kernel did for this thread, read outside a region: the evidence a flag
    /// is checked against.
    #[derive(Clone, Debug)]
    struct Outside {
        cpu: usize,
        interrupts: Interrupts,
        /// getrusage(RUSAGE_THREAD): voluntary + involuntary switches, minor faults,
        /// major faults.
        switches: u64,
        faults: u64,
    }

    /// Which edge of a region a reading of [`Outside`] is for.
    #[derive(Clone, Copy)]
    enum Edge {
        Before,
        After,
    }

    impl Outside {
        /// The evidence at one edge. `getrusage` is read next to the region and
        /// `/proc/interrupts` farther out (before it at the start, after it at the end):
        /// reading that file can fault in the rig's own buffers. Read outside it, those
        /// faults were every fault of the quiet rows' "kernel ran, not flagged" column:
        /// a run that also read `getrusage` right after `stop()` found none up to there.
        fn read(edge: Edge) -> Result<Self, Failure> {
            let cpu = pmu_linux::machine::current_cpu()
                .ok_or_else(|| Failure::new("sched_getcpu failed"))? as usize;
            let (interrupts, (switches, faults)) = match edge {
                Edge::Before => {
                    let interrupts = Interrupts::read(cpu)?;
                    (interrupts, Self::usage()?)
                }
                Edge::After => {
                    let usage = Self::usage()?;
                    (Interrupts::read(cpu)?, usage)
                }
            };
            Ok(Self {
                cpu,
                interrupts,
                switches,
                faults,
            })
        }

        /// getrusage(RUSAGE_THREAD): (voluntary + involuntary switches, minor + major
        /// faults).
        fn usage() -> Result<(u64, u64), Failure> {
            let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
            // SAFETY: getrusage writes one `struct rusage` to the pointer, which points
            // to one.
            let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) };
            if rc != 0 {
                return Err(Failure::new(format!(
                    "getrusage: {}",
                    std::io::Error::last_os_error()
                )));
            }
            // SAFETY: zero-initialised, and getrusage succeeded.
            let usage = unsafe { usage.assume_init() };
            Ok((
                (usage.ru_nvcsw + usage.ru_nivcsw) as u64,
                (usage.ru_minflt + usage.ru_majflt) as u64,
            ))
        }

        /// Why the kernel ran between `self` and `later` (both on `self.cpu`'s column of
        /// /proc/interrupts, and the CPU at each edge): empty when nothing moved.
        fn kernel_ran(&self, later: &Self) -> Vec<String> {
            let mut why: Vec<String> = self
                .interrupts
                .moved(&later.interrupts)
                .into_keys()
                .map(|line| format!("irq:{line}"))
                .collect();
            if later.switches > self.switches {
                why.push("switch".into());
            }
            if later.faults > self.faults {
                why.push("fault".into());
            }
            if later.cpu != self.cpu {
                why.push("cpu".into());
            }
            why
        }
    }

    /// `CNTVCT_EL0` and `CNTFRQ_EL0`: Linux lets EL0 read the virtual counter (the vDSO's
    /// clock; `CNTKCTL_EL1.EL0VCTEN`, arch/arm64/kernel/... arch_timer setup).
    fn virtual_count() -> u64 {
        let v: u64;
        // SAFETY: reads a register EL0 may read under Linux; no memory is touched. The
        // isb orders the read after the instructions before it (Arm ARM D12.2.2: reads
        // of the counter may be speculated).
        unsafe { core::arch::asm!("isb", "mrs {}, cntvct_el0", out(reg) v, options(nostack)) };
        v
    }

    fn counter_frequency() -> u64 {
        let f: u64;
        // SAFETY: as `virtual_count`; CNTFRQ_EL0 is readable at EL0 whenever the
        // counter is.
        unsafe { core::arch::asm!("mrs {}, cntfrq_el0", out(reg) f, options(nomem, nostack)) };
        f
    }

    /// The hazard each injection must raise.
    fn expected(d: Disturbance, backend: StatsBackend) -> Hazards {
        match d {
            Disturbance::Timer | Disturbance::Fault | Disturbance::Getpid => Hazards::KERNEL_ENTRY,
            Disturbance::Nanosleep => Hazards::CONTEXT_SWITCH,
            Disturbance::Migration => Hazards::CPU_MIGRATION,
            Disturbance::Overflow if backend == StatsBackend::DirectProgrammed => Hazards::OVERFLOW,
            // perf keeps 64-bit counts: the overflow interrupt of a sampling event is
            // a kernel entry.
            Disturbance::Overflow => Hazards::KERNEL_ENTRY,
        }
    }

    fn name(d: Disturbance) -> &'static str {
        match d {
            Disturbance::Timer => "timer",
            Disturbance::Nanosleep => "nanosleep",
            Disturbance::Migration => "migration",
            Disturbance::Fault => "fault",
            Disturbance::Getpid => "getpid",
            Disturbance::Overflow => "overflow",
        }
    }

    /// One row: per disturbance.
    #[derive(Default)]
    struct Tally {
        regions: u64,
        injected: u64,
        flagged: u64,
        expected: u64,
        /// Flagged, counted by hazard name.
        hazards: BTreeMap<&'static str, u64>,
        /// Injected and not flagged at all.
        missed: u64,
        /// What moved outside the regions (see `Outside::kernel_ran`), by regions.
        evidence: BTreeMap<String, u64>,
        errors: u64,
    }

    impl Tally {
        fn count(&mut self, injected: bool, got: Hazards, want: Hazards) {
            self.regions += 1;
            if !injected {
                return;
            }
            self.injected += 1;
            if got.is_empty() {
                self.missed += 1;
            } else {
                self.flagged += 1;
                for n in hazard_names(got) {
                    *self.hazards.entry(n).or_insert(0) += 1;
                }
            }
            if got.contains(want) {
                self.expected += 1;
            }
        }
    }

    fn names(map: &BTreeMap<impl AsRef<str>, u64>) -> String {
        if map.is_empty() {
            return "none".into();
        }
        map.iter()
            .map(|(k, v)| format!("{}:{v}", k.as_ref()))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Stops `region`: the union of its readings' hazards.
    fn region_hazards(
        meter: &mut Meter,
        region: pmu_linux::Region,
        handles: &[pmu_linux::EventHandle],
    ) -> Result<Hazards, Failure> {
        let counts = meter.stop(region)?;
        let mut h = Hazards::empty();
        for &handle in handles {
            h |= counts.reading(handle)?.hazards;
        }
        Ok(h)
    }

    /// A fresh anonymous page for each fault region: mapped before the region, first
    /// written inside it (the kernel fills it on that write's fault), unmapped after.
    /// (A fresh mapping rather than `MADV_DONTNEED`: the test kernel has no
    /// CONFIG_ADVISE_SYSCALLS.)
    struct FreshPage {
        page: *mut u8,
        len: usize,
    }

    impl FreshPage {
        fn map() -> Result<Self, Failure> {
            // SAFETY: sysconf has no memory effects.
            let len = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
            // SAFETY: a fresh private anonymous mapping; no existing memory is touched.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                return Err(Failure::new(format!(
                    "mmap: {}",
                    std::io::Error::last_os_error()
                )));
            }
            Ok(Self {
                page: p.cast(),
                len,
            })
        }

        fn touch(&self) {
            // SAFETY: the page is mapped read-write for the life of `self`.
            unsafe { self.page.write_volatile(1) };
        }
    }

    impl Drop for FreshPage {
        fn drop(&mut self) {
            // SAFETY: our own mapping, no reference into it outlives `self`.
            unsafe { libc::munmap(self.page.cast(), self.len) };
        }
    }

    /// A sampling event of `period` user-space CPU cycles on this thread: its overflow
    /// interrupt lands inside a region longer than `period` cycles. Opened with perf's
    /// raw interface: the library has no sampling events (it counts regions).
    struct SamplingEvent {
        fd: libc::c_int,
    }

    impl SamplingEvent {
        fn open(period: u64) -> Result<Self, Failure> {
            use perf_event_open_sys::bindings::{
                perf_event_attr, PERF_COUNT_HW_CPU_CYCLES, PERF_TYPE_HARDWARE,
            };
            let mut attr = perf_event_attr {
                type_: PERF_TYPE_HARDWARE,
                size: std::mem::size_of::<perf_event_attr>() as u32,
                config: u64::from(PERF_COUNT_HW_CPU_CYCLES),
                ..Default::default()
            };
            attr.__bindgen_anon_1.sample_period = period;
            attr.set_exclude_kernel(1);
            attr.set_exclude_hv(1);
            // SAFETY: attr is a valid, fully initialised perf_event_attr of its size.
            let fd = unsafe { perf_event_open_sys::perf_event_open(&mut attr, 0, -1, -1, 0) };
            if fd < 0 {
                return Err(Failure::new(format!(
                    "perf_event_open(cycles, sample_period={period}): {}",
                    std::io::Error::last_os_error()
                )));
            }
            Ok(Self { fd })
        }
    }

    impl Drop for SamplingEvent {
        fn drop(&mut self) {
            // SAFETY: our own descriptor, closed once.
            unsafe { libc::close(self.fd) };
        }
    }

    /// Cycles of the sampling event's period, and the loop iterations of the overflow
    /// region (two instructions each, one cycle each under `-icount shift=0`: several
    /// periods per region).
    const SAMPLE_PERIOD: u64 = 10_000;
    const OVERFLOW_LOOP: u64 = 20_000;

    fn spin_loop(units: u64) {
        let mut left = black_box(units);
        while left > 0 {
            left = black_box(left - 1);
        }
    }

    pub fn run(args: &Args) -> Result<(), Failure> {
        let all = [
            Disturbance::Timer,
            Disturbance::Nanosleep,
            Disturbance::Migration,
            Disturbance::Fault,
            Disturbance::Getpid,
            Disturbance::Overflow,
        ];
        let wanted: Vec<Disturbance> = if args.only.is_empty() {
            all.to_vec()
        } else {
            args.only.clone()
        };
        let backend = args.backend;
        let tag = match backend {
            StatsBackend::Perf => "perf",
            StatsBackend::Direct => "direct",
            StatsBackend::DirectProgrammed => "direct-programmed",
        };
        let cpus = pmu_linux::machine::allowed_cpus()?;
        let (home, other) = match cpus.as_slice() {
            [a, b, ..] => (*a, Some(*b)),
            [a] => (*a, None),
            [] => return Err(Failure::new("no allowed CPU")),
        };
        let mut failures = Vec::new();
        let mut unflagged = Vec::new();

        if backend == StatsBackend::DirectProgrammed {
            // Only the overflow: the preset needs the counter itself, below the meter.
            if wanted.contains(&Disturbance::Overflow) {
                let t = direct_overflow(home, args.injections)?;
                println!(
                    "HAZARDS-HOW {tag} module el0_programming=1: pmu_linux::direct::DirectRegion (no sentinel) on an \
                     instructions counter this program programs (EL0 only) and presets \
                     {OVERFLOW_DISTANCE} below its 32-bit wrap before each region"
                );
                print_row(tag, Disturbance::Overflow, &t);
                if t.missed > 0 {
                    failures.push(format!(
                        "{tag} overflow: {} of {} missed",
                        t.missed, t.injected
                    ));
                }
            }
            return finish(failures, unflagged);
        }

        let mut builder = Meter::builder();
        let mut handles = vec![builder.add(pmu_linux::GenericEvent::Instructions)];
        // perf: instructions only, so that the cycle counter (PMCCNTR_EL0) stays free for
        // the overflow row's sampling `cycles` event: QEMU raises the cycle counter's
        // overflow interrupt at the overflow under -icount, an event counter's only at
        // the next PMU register access (docs/qemu.md), which would be the region's
        // stop. The direct backend reads the module's counters: both.
        if backend != StatsBackend::Perf {
            handles.push(builder.add(pmu_linux::GenericEvent::CpuCycles));
        }
        builder.cpu(home).backend(match backend {
            StatsBackend::Perf => BackendKind::Perf,
            _ => BackendKind::Direct,
        });
        let mut meter = builder.build()?;
        // The meter's reason, and its sentinel where the reason does not already say it.
        let sentinel = meter.sentinel().to_string();
        let how = if meter.why().contains(&sentinel) {
            meter.why().to_owned()
        } else {
            format!("{}; {sentinel}", meter.why())
        };
        // The meter's description (spaces and all) on a line of its own.
        println!("HAZARDS-HOW {tag} {how}");
        let freq = counter_frequency();
        let spin_ticks = TIMER_SPIN_NS * freq / 1_000_000_000;

        for d in wanted {
            let want = expected(d, backend);
            let mut t = Tally::default();
            if d == Disturbance::Migration && other.is_none() {
                crate::result!("hazard-stats backend={tag} disturbance=migration skipped=one_cpu");
                failures.push(format!(
                    "{tag} migration: this thread may run on one CPU only"
                ));
                continue;
            }
            let sampling = match d {
                Disturbance::Overflow if backend == StatsBackend::Perf => {
                    Some(SamplingEvent::open(SAMPLE_PERIOD)?)
                }
                Disturbance::Overflow => {
                    crate::result!(
                        "hazard-stats backend={tag} disturbance=overflow skipped=read_only_grant"
                    );
                    continue;
                }
                _ => None,
            };
            progress(format_args!(
                "hazard-stats {tag}: {} × {}",
                args.injections,
                name(d)
            ));
            for _ in 0..args.injections {
                let page = match d {
                    Disturbance::Fault => Some(FreshPage::map()?),
                    _ => None,
                };
                let before = Outside::read(Edge::Before)?;
                let region = meter.start()?;
                match d {
                    Disturbance::Timer => {
                        // The counter is read once per TIMER_CHUNK loop iterations,
                        // not back to back: under -icount every CNTVCT_EL0 read ends
                        // QEMU's translation block, and a loop of nothing but reads
                        // made the two timer rows 100 s of the guest's 132 s (wall
                        // time, the console's lines stamped on the host). The region
                        // still spans at least TIMER_SPIN_NS of virtual time.
                        let t0 = virtual_count();
                        while virtual_count().wrapping_sub(t0) < spin_ticks {
                            spin_loop(TIMER_CHUNK);
                        }
                    }
                    Disturbance::Nanosleep => {
                        let ts = libc::timespec {
                            tv_sec: 0,
                            tv_nsec: 100_000,
                        };
                        // SAFETY: ts is valid; no remainder wanted.
                        unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
                    }
                    Disturbance::Migration => {
                        let to = other.unwrap_or(home);
                        if pmu_linux::machine::set_allowed_cpus(&[to]).is_err() {
                            t.errors += 1;
                        }
                    }
                    Disturbance::Fault => {
                        if let Some(page) = &page {
                            page.touch();
                        }
                    }
                    Disturbance::Getpid => {
                        // SAFETY: getpid takes no arguments and cannot fail.
                        black_box(unsafe { libc::syscall(libc::SYS_getpid) });
                    }
                    Disturbance::Overflow => spin_loop(OVERFLOW_LOOP),
                }
                let got = region_hazards(&mut meter, region, &handles)?;
                let after = Outside::read(Edge::After)?;
                let moved = before.interrupts.moved(&after.interrupts);
                let injected = match d {
                    Disturbance::Timer => moved.contains_key("arch_timer"),
                    Disturbance::Nanosleep => after.switches > before.switches,
                    Disturbance::Migration => after.cpu != before.cpu,
                    Disturbance::Fault => after.faults > before.faults,
                    // The system call ran: it has no failure to check.
                    Disturbance::Getpid => true,
                    Disturbance::Overflow => moved.contains_key("arm-pmu"),
                };
                t.count(injected, got, want);
                for why in before.kernel_ran(&after) {
                    *t.evidence.entry(why).or_insert(0) += 1;
                }
                if d == Disturbance::Migration {
                    pmu_linux::machine::set_allowed_cpus(&[home])?;
                }
            }
            drop(sampling);
            print_row(tag, d, &t);
            if t.missed > 0 {
                failures.push(format!(
                    "{tag} {}: {} of {} injected missed",
                    name(d),
                    t.missed,
                    t.injected
                ));
            }
            if t.injected < t.regions {
                failures.push(format!(
                    "{tag} {}: only {} of {} regions show the injection in its evidence",
                    name(d),
                    t.injected,
                    t.regions
                ));
            }
        }

        if args.quiet > 0 {
            let q = quiet(&mut meter, &handles, args.quiet)?;
            crate::result!(
                "hazard-quiet backend={tag} regions={} flagged={} explained={} unexplained={} hazards={} evidence={} kernel_ran_unflagged={} unflagged_evidence={}",
                args.quiet,
                q.flagged,
                q.explained,
                q.unexplained,
                names(&q.hazards),
                names(&q.evidence),
                q.kernel_ran_unflagged,
                names(&q.unflagged_evidence),
            );
            if q.unexplained > 0 {
                failures.push(format!("{tag} quiet: {} flags unexplained", q.unexplained));
            }
            if q.kernel_ran_unflagged > 0 {
                unflagged.push(format!(
                    "{tag} quiet: {} regions with kernel evidence in their window were not flagged",
                    q.kernel_ran_unflagged
                ));
            }
        }
        finish(failures, unflagged)
    }

    fn print_row(tag: &str, d: Disturbance, t: &Tally) {
        crate::result!(
            "hazard-stats backend={tag} disturbance={} regions={} injected={} flagged={} expected={} missed={} hazards={} errors={} evidence={}",
            name(d),
            t.regions,
            t.injected,
            t.flagged,
            t.expected,
            t.missed,
            names(&t.hazards),
            t.errors,
            names(&t.evidence),
        );
    }

    fn finish(failures: Vec<String>, notes: Vec<String>) -> Result<(), Failure> {
        for n in &notes {
            progress(n);
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(Failure::new(failures.join("; ")))
        }
    }

    #[derive(Default)]
    struct Quiet {
        flagged: u64,
        explained: u64,
        unexplained: u64,
        hazards: BTreeMap<&'static str, u64>,
        evidence: BTreeMap<String, u64>,
        kernel_ran_unflagged: u64,
        unflagged_evidence: BTreeMap<String, u64>,
    }

    /// `n` regions of 100 loop iterations, nothing injected: every flag is checked
    /// against what moved outside (interrupts of this CPU, switches, faults, the CPU).
    fn quiet(
        meter: &mut Meter,
        handles: &[pmu_linux::EventHandle],
        n: u64,
    ) -> Result<Quiet, Failure> {
        progress(format_args!("hazard-stats: {n} quiet regions"));
        let mut q = Quiet::default();
        for _ in 0..n {
            let before = Outside::read(Edge::Before)?;
            let region = meter.start()?;
            spin_loop(100);
            let got = region_hazards(meter, region, handles)?;
            let after = Outside::read(Edge::After)?;
            let why = before.kernel_ran(&after);
            if got.is_empty() {
                if !why.is_empty() {
                    q.kernel_ran_unflagged += 1;
                    for w in why {
                        *q.unflagged_evidence.entry(w).or_insert(0) += 1;
                    }
                }
                continue;
            }
            q.flagged += 1;
            for h in hazard_names(got) {
                *q.hazards.entry(h).or_insert(0) += 1;
            }
            if why.is_empty() {
                q.unexplained += 1;
            } else {
                q.explained += 1;
                for w in why {
                    *q.evidence.entry(w).or_insert(0) += 1;
                }
            }
        }
        Ok(q)
    }

    /// How far below its wrap the direct overflow's counter is preset: room for what
    /// runs between the preset and the start's read of the counter (a run with a
    /// distance of 1000 found the counter past its wrap there in 52 regions of 1000; the
    /// five it printed read 52 each).
    const OVERFLOW_DISTANCE: u64 = 10_000;

    /// The overflow on the direct backend: an instructions counter this program
    /// programs (module `el0_programming=1`), preset [`OVERFLOW_DISTANCE`] below its
    /// 32-bit wrap before each region of twice as many loop iterations.
    fn direct_overflow(cpu: usize, n: u64) -> Result<Tally, Failure> {
        use pmu_armv8::{PmuOptions, PmuVersion};
        use pmu_linux::pmu_core::{CounterPool, GenericEvent, PrivilegeFilter};
        progress(format_args!(
            "hazard-stats direct-programmed: {n} × overflow"
        ));
        // SAFETY: the guest scenario runs nothing else on this CPU's PMU meanwhile (no
        // perf hardware event is open; this is the only direct user), and the thread
        // stays on `cpu` (the guard pins it).
        let (_pin, pmu) = unsafe {
            pmu_linux::direct::armv8::take_armv8(cpu, PmuVersion::PmuV3, PmuOptions::new())
        }?;
        let pool = CounterPool::new(pmu);
        let counter = pool
            .counter(GenericEvent::Instructions.into(), PrivilegeFilter::USER)
            .map_err(|e| Failure::new(format!("no instructions counter: {e}")))?;
        let counters = [counter];
        // The library's direct region over this program's counter, without a
        // sentinel: overflow from PMOVSSET_EL0, switches from getrusage.
        let mut meter =
            pmu_linux::direct::pool_region(pool.pmu(), &counters[..], ["instructions"])?;
        meter.enable()?;
        let mut out = [pmu_linux::Reading::default(); pmu_linux::Meter::MAX_EVENTS];
        let mut t = Tally::default();
        for _ in 0..n {
            counters[0].preset_before_wrap(OVERFLOW_DISTANCE);
            meter.start()?;
            // The evidence that the wrap is still ahead (inside the region): the counter
            // just after the start, in the top half of its 32 bits. Read inside the
            // region; what it costs (a few instructions) is far below what is left.
            let at_start = counters[0].read() & u64::from(u32::MAX);
            spin_loop(2 * OVERFLOW_DISTANCE);
            meter.stop(&mut out)?;
            let ahead = at_start >= 1 << 31;
            if ahead && out[0].hazards.is_empty() && t.missed < 5 {
                progress(format_args!(
                    "overflow missed: counter {at_start:#x} after the start, region value {}",
                    out[0].value
                ));
            }
            if !ahead && t.regions - t.injected < 5 {
                progress(format_args!(
                    "overflow not injected: the counter wrapped before the region started \
                     ({at_start:#x} after the start)"
                ));
            }
            t.count(ahead, out[0].hazards, Hazards::OVERFLOW);
        }
        meter.disable()?;
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::Interrupts;

    /// The shape of Linux 6.12's /proc/interrupts on arm64 (kernel/irq/proc.c
    /// `show_interrupts`, arch/arm64/kernel/smp.c `arch_show_interrupts`), two CPUs.
    const TWO_CPUS: &str = "           CPU0       CPU1       \n 10:       1043        997     GICv3  27 Level     arch_timer\n 12:          3          0     GICv3  23 Level     arm-pmu\nIPI0:        12         30       Rescheduling interrupts\nErr:          0\n";

    #[test]
    fn one_cpu_column_by_line() {
        let cpu1 = Interrupts::parse(TWO_CPUS, 1).unwrap();
        let mut later = TWO_CPUS.replace("997", "998");
        later = later.replace("        30 ", "        31 ");
        let moved = cpu1.moved(&Interrupts::parse(&later, 1).unwrap());
        assert_eq!(
            moved.into_iter().collect::<Vec<_>>(),
            vec![("IPI0".to_owned(), 1), ("arch_timer".to_owned(), 1)]
        );
        // CPU0's column did not move.
        let cpu0 = Interrupts::parse(TWO_CPUS, 0).unwrap();
        assert!(cpu0
            .moved(&Interrupts::parse(&later, 0).unwrap())
            .is_empty());
        assert!(Interrupts::parse(TWO_CPUS, 2).is_none());
    }
}
