//! `pmu-guest library-grant`: kmod-enable-user's per-thread grant as pmu-linux uses it
//! (module loaded with its defaults: `cpu_wide=N`, /dev/kmod_enable_user), for
//! tests/tests/debian_arm64.rs.
//!
//! On `--cpu`: the main thread opens a direct-backend meter (pmu-linux asks the module
//! for this thread's grant) and measures blocks of N and 2N `--iterations` of a
//! two-instruction loop (`subs`, `b.ne`: the two differ by exactly 2·N instructions,
//! Arm ARM INST_RETIRED counts each executed instruction once); then a sibling thread, which holds no grant, reads the module's
//! instruction counter with one `mrs` (PMSELR_EL0 + PMXEVCNTR_EL0): the read traps, and
//! the library's SIGILL handler, installed with the grant, steps over it (0, never a
//! count) and marks the thread instead of letting the kernel kill the process; then the
//! main thread measures again. Prints `RESULT library-grant step=… key=value …` lines.

use clap::Args as ClapArgs;

use crate::Failure;

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The CPU to measure on.
    #[arg(long, default_value_t = 0)]
    cpu: usize,
    /// Iterations of the two-instruction loop.
    #[arg(long, default_value_t = 1000)]
    iterations: u64,
    /// Also one region that runs its loop on this CPU, where the module runs no
    /// counters (loaded with `cpus=` leaving it out), between edges on `--cpu`: the
    /// region must be refused as short, and the next measurement exact.
    #[arg(long)]
    gap_cpu: Option<usize>,
}

pub fn run(args: &Args) -> Result<(), Failure> {
    imp::run(args)
}

#[cfg(target_arch = "aarch64")]
mod imp {
    use super::Args;
    use crate::{result, Failure};

    /// `iterations` iterations of a two-instruction loop (at least one).
    fn block(iterations: u64) {
        // SAFETY: a register-only loop; `max(1)` keeps the counter from wrapping past 0.
        unsafe {
            core::arch::asm!(
                "1: subs {n}, {n}, #1",
                "b.ne 1b",
                n = inout(reg) iterations.max(1) => _,
                options(nostack, nomem),
            );
        }
    }

    /// Pins the calling thread to `cpu`; whether it worked.
    fn pin_to(cpu: usize) -> bool {
        // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes inside it (cpu is
        // checked against its size first); sched_setaffinity(0) is this thread.
        unsafe {
            let mut set: libc::cpu_set_t = core::mem::zeroed();
            if cpu >= 8 * core::mem::size_of::<libc::cpu_set_t>() {
                return false;
            }
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &set) == 0
        }
    }

    /// The owner's measurement: the calibrated minimum of N and of 2N iterations
    /// (their difference is exactly 2·N instructions: the same code around the loop),
    /// the grant, the re-grants of the last region.
    fn owner(
        meter: &mut pmu_linux::Meter,
        inst: pmu_linux::EventHandle,
        n: u64,
        step: &str,
    ) -> Result<(), Failure> {
        // 2N computed outside the region: inside it would add its own instruction.
        let twice = 2 * n;
        let small = meter.measure(|| block(n))?.min(inst)?;
        let large = meter.measure(|| block(twice))?.min(inst)?;
        let regrants = meter.evidence().regrants;
        let grant = meter.choice().grant;
        let scope = match grant.map(|g| g.scope()) {
            Some(pmu_linux::choice::GrantScope::Thread { follow: true }) => "per-thread-follow",
            Some(pmu_linux::choice::GrantScope::Thread { follow: false }) => "per-thread",
            Some(_) => "cpu-wide",
            None => "none",
        };
        result!(
            "library-grant step={step} instructions={small} instructions_2n={large} delta={} \
             expected_delta={} scope={scope} regrants={}",
            large - small,
            twice,
            regrants.map_or_else(|| "none".to_owned(), |r| r.to_string())
        );
        Ok(())
    }

    pub fn run(args: &Args) -> Result<(), Failure> {
        let mut builder = pmu_linux::Meter::builder();
        let inst = builder.add(pmu_linux::GenericEvent::Instructions);
        builder
            .backend(pmu_linux::BackendKind::Direct)
            .cpu(args.cpu);
        let mut meter = builder.build()?;
        owner(&mut meter, inst, args.iterations, "owner-before")?;
        // The module's instruction counter: the one its layout gives INST_RETIRED.
        let (_, layout) = pmu_linux::direct::module_layout()?;
        let counter = layout
            .event_counters()
            .iter()
            .find(|&&(_, event)| event == 0x8)
            .map(|&(n, _)| n)
            .ok_or_else(|| Failure::new("the module's layout counts no INST_RETIRED (0x8)"))?;
        let cpu = args.cpu;
        let sibling = std::thread::spawn(move || {
            // On the owner's CPU: the owner is switched out, and with it its grant.
            let pinned = pin_to(cpu);
            let before = pmu_linux::direct::take_trap();
            let Some(n) = pmu_armv8::EventCounter::new(counter) else {
                return (pinned, before, None, 0);
            };
            // SAFETY: this thread holds no grant, so the read traps (EC 0x18); the
            // library's SIGILL handler is installed (the owner's grant installed it)
            // and steps over it, writing 0: what this rig checks. No memory is touched.
            let value = unsafe { pmu_armv8::asm::read_pmevcntr_el0(n) };
            (pinned, before, pmu_linux::direct::take_trap(), value)
        });
        let (pinned, before, trap, value) = sibling
            .join()
            .map_err(|_| Failure::new("the sibling thread panicked"))?;
        result!(
            "library-grant step=sibling pinned={} trap_before={} trap={} value={value}",
            u8::from(pinned),
            u8::from(before.is_some()),
            match trap {
                Some(t) => format!("{t:?}").replace(' ', "_"),
                None => "none".to_owned(),
            },
        );
        owner(&mut meter, inst, args.iterations, "owner-after")?;
        if let Some(gap_cpu) = args.gap_cpu {
            // Start on --cpu, run the loop on gap_cpu, stop on --cpu again: the
            // instructions on gap_cpu are in none of the thread's counters.
            let region = meter.start()?;
            let moved = pin_to(gap_cpu);
            block(args.iterations);
            let back = pin_to(cpu);
            let outcome = match meter.stop(region).and_then(|counts| counts.value(inst)) {
                Ok(value) => format!("counted={value}"),
                Err(e) => format!("error={}", e.to_string().replace(' ', "_")),
            };
            result!(
                "library-grant step=gap moved={} back={} {outcome}",
                u8::from(moved),
                u8::from(back)
            );
            owner(&mut meter, inst, args.iterations, "owner-after-gap")?;
        }
        Ok(())
    }
}

#[cfg(not(target_arch = "aarch64"))]
mod imp {
    use super::Args;
    use crate::Failure;

    pub fn run(_: &Args) -> Result<(), Failure> {
        Err(Failure::new(
            "library-grant: kmod-enable-user's per-thread grant is arm64's",
        ))
    }
}
