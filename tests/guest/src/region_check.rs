//! `pmu-guest region-check`: the arm64 guest's check of the direct backend's
//! syscall-free region (pmu-linux `direct::DirectRegion`, what `Meter` measures with on
//! ARMv8) and of pmu-armv8's counter handles, for tests/tests/kernel_arm64.rs.
//!
//! With kmod-enable-user loaded (`sentinel=1` for the read-only grant; `el0_programming=1`
//! with `--program`), on `--cpu`, `--rounds` times each:
//!
//! - a quiet region (300 `nop`s): flagged only when the kernel really ran; each flagged
//!   one is checked against the CPU's column of /proc/interrupts read just before the
//!   start and just after the stop (`quiet_unexplained`: flagged while it did not move);
//! - a region around one `getpid` system call: must be flagged KERNEL_ENTRY with a
//!   sentinel count above 0 (`min_syscall_entries`);
//! - with `--program`: a region whose counter was preset 256 below its 32-bit wrap:
//!   must be flagged OVERFLOW;
//!
//! and once: a compile-time handle for a counter outside the grant is refused when it
//! is made (`handle_outside=refused`, with the error), one inside reads
//! (`handle_inside=ok`). Prints one line of `key=value` pairs.

use clap::Args as ClapArgs;

use crate::Failure;

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The CPU whose PMU the module granted.
    #[arg(long, default_value_t = 0)]
    cpu: usize,
    /// Rounds of each kind.
    #[arg(long, default_value_t = 1000)]
    rounds: u64,
    /// Let the backend program the PMU (module loaded with `el0_programming=1`): its own
    /// sentinel, and the overflow case.
    #[arg(long)]
    program: bool,
}

pub fn run(args: &Args) -> Result<(), Failure> {
    imp::run(args)
}

#[cfg(not(target_arch = "aarch64"))]
mod imp {
    use super::*;

    pub fn run(_: &Args) -> Result<(), Failure> {
        Err(Failure::new("region-check is for the arm64 guest"))
    }
}

#[cfg(target_arch = "aarch64")]
mod imp {
    use pmu_armv8::handle::{CounterHandle, EventCounterN, HandleError};
    use pmu_linux::pmu_core::Hazards;
    use pmu_linux::{BackendKind, Meter};

    use super::*;

    /// 300 instructions at EL0.
    #[inline(always)]
    fn quiet() {
        // SAFETY: nops only.
        unsafe {
            std::arch::asm!(
                ".rept 300",
                "nop",
                ".endr",
                options(nomem, nostack, preserves_flags)
            );
        }
    }

    /// `text` as one value of a `key=value` line: no blanks, no `=`.
    fn words(text: &str) -> String {
        text.replace(' ', "_").replace('=', ":")
    }

    /// Interrupts CPU `cpu` has taken: the sum of its column of /proc/interrupts.
    fn cpu_interrupts(cpu: usize) -> Result<u64, Failure> {
        let text = std::fs::read_to_string("/proc/interrupts")
            .map_err(|e| Failure::new(format!("/proc/interrupts: {e}")))?;
        Ok(text
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().nth(cpu + 1)?.parse::<u64>().ok())
            .sum())
    }

    /// The handle check: refused outside the grant, reads inside.
    fn handles(args: &Args) -> Result<String, Failure> {
        let describe = |outside: Result<(), HandleError>,
                        inside: Result<(u64, u64), HandleError>| {
            let outside = match outside {
                Ok(()) => "accepted".to_owned(),
                Err(e) => format!("refused outside_error={}", words(&e.to_string())),
            };
            let inside = match inside {
                Ok((a, b)) if b >= a => "ok".to_owned(),
                Ok((a, b)) => format!("went_back:{a}->{b}"),
                Err(e) => format!("refused:{}", words(&e.to_string())),
            };
            format!("handle_outside={outside} handle_inside={inside}")
        };
        if args.program {
            use pmu_armv8::{PmuOptions, PmuVersion};
            // SAFETY: the guest runs nothing else on this CPU's PMU while the check
            // runs (tests/guest/arm64.sh); the PMU is dropped before the meter takes it.
            let (_pin, pmu) = unsafe {
                pmu_linux::direct::armv8::take_armv8(args.cpu, PmuVersion::PmuV3, PmuOptions::new())
            }?;
            let regs = pmu.registers();
            // PMEVCNTR30_EL0 exists only with PMCR_EL0.N = 31 (QEMU's `max`: 6).
            let outside = CounterHandle::from_number(regs, 30).map(|_| ());
            let inside = EventCounterN::<0>::new(regs).map(|h| (h.read(), h.read()));
            Ok(describe(outside, inside))
        } else {
            let (_pin, pmu, _) = pmu_linux::direct::armv8::take_granted(args.cpu)?;
            let outside = EventCounterN::<0>::new(&pmu).map(|_| ());
            let first = pmu.layout().event_counters().first().map(|&(n, _)| n);
            let inside = CounterHandle::from_number(&pmu, first.map_or(32, u32::from))
                .map(|h| (h.read() & 0xFFFF_FFFF, h.read() & 0xFFFF_FFFF));
            Ok(describe(outside, inside))
        }
    }

    pub fn run(args: &Args) -> Result<(), Failure> {
        let handles = handles(args)?;
        let mut builder = Meter::builder();
        let inst = builder.add_named("instructions")?;
        builder.backend(BackendKind::Direct).cpu(args.cpu);
        if args.program {
            // SAFETY: as above: nothing else uses this CPU's PMU meanwhile, and the
            // thread's affinity is left alone.
            unsafe { builder.program_the_pmu() };
        }
        let mut meter = builder.build()?;
        let sentinel = meter.sentinel().is_counting();
        // A switch shows as KERNEL_ENTRY with a sentinel, as CONTEXT_SWITCH (getrusage)
        // without one.
        let kernel = Hazards::KERNEL_ENTRY | Hazards::CONTEXT_SWITCH | Hazards::CPU_MIGRATION;
        let region =
            |meter: &mut Meter, f: &mut dyn FnMut()| -> Result<(Hazards, Option<u64>), Failure> {
                let region = meter.start()?;
                f();
                let hazards = meter.stop(region)?.reading(inst)?.hazards;
                Ok((hazards, meter.evidence().kernel_entries))
            };
        for _ in 0..10 {
            region(&mut meter, &mut quiet)?;
            region(&mut meter, &mut || {
                // SAFETY: getpid has no arguments and no side effects.
                unsafe { libc::syscall(libc::SYS_getpid) };
            })?;
        }
        let (mut quiet_flagged, mut quiet_unexplained) = (0u64, 0u64);
        let (mut syscall_flagged, mut min_syscall) = (0u64, u64::MAX);
        let mut irqs_total = 0;
        for _ in 0..args.rounds {
            let before = cpu_interrupts(args.cpu)?;
            let (hazards, _) = region(&mut meter, &mut quiet)?;
            let after = cpu_interrupts(args.cpu)?;
            irqs_total += after - before;
            if hazards.intersects(kernel) {
                quiet_flagged += 1;
                if after == before {
                    quiet_unexplained += 1;
                }
            }
            let (hazards, entries) = region(&mut meter, &mut || {
                // SAFETY: as above.
                unsafe { libc::syscall(libc::SYS_getpid) };
            })?;
            if hazards.contains(Hazards::KERNEL_ENTRY) {
                syscall_flagged += 1;
            }
            min_syscall = min_syscall.min(entries.unwrap_or(0));
        }
        let mut overflow = String::new();
        if args.program {
            let mut flagged = 0;
            for _ in 0..args.rounds {
                // The meter's counter is the pool's first, PMEVCNTR0_EL0; its sentinel
                // the next one. 256 below the 32-bit wrap: the 300 nops wrap it.
                let counter = pmu_armv8::EventCounter::new(0)
                    .ok_or_else(|| Failure::new("no event counter 0"))?;
                // SAFETY: EN was granted on this CPU (`el0_programming=1`, the meter
                // probed it) and the thread is pinned there; the counter is the
                // meter's own, which this check owns.
                unsafe { pmu_armv8::asm::write_pmevcntr_el0(counter, 0xFFFF_FF00) };
                let (hazards, _) = region(&mut meter, &mut quiet)?;
                if hazards.contains(Hazards::OVERFLOW) {
                    flagged += 1;
                }
            }
            overflow = format!(" overflow_flagged={flagged}");
        }
        println!(
            "rounds={} sentinel={} quiet_flagged={quiet_flagged} \
             quiet_unexplained={quiet_unexplained} interrupts={irqs_total} \
             syscall_flagged={syscall_flagged} min_syscall_entries={}{overflow} {handles} \
             why={}",
            args.rounds,
            if sentinel { "counting" } else { "off" },
            if min_syscall == u64::MAX {
                0
            } else {
                min_syscall
            },
            words(&meter.sentinel().to_string()),
        );
        Ok(())
    }
}
