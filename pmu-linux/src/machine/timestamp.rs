//! The CPU's constant-rate time-stamp counter as a one-counter meter: for machines whose
//! CPU exposes no performance counters (a VM without vPMU) it still times a region, in
//! ticks, with context-switch and migration detection like the other backends.
//!
//! x86_64: RDTSC between two LFENCEs (SDM Vol. 2B, RDTSC: "LFENCE; RDTSC" waits for the
//! earlier instructions, "RDTSC; LFENCE" keeps the later ones from starting first): the
//! TSC counts reference cycles at a constant rate, not core cycles. aarch64: CNTVCT_EL0
//! between two `isb`s (the generic timer's virtual count, Arm ARM D11.1.2), whose rate
//! is CNTFRQ_EL0 (often 24 MHz to 1 GHz: far coarser than the core clock).

use pmu_core::{Reading, RegionMeter};

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::machine::sched::{Kernel, SwitchCounts, ThreadSource};
use crate::verdict::Evidence;

/// The name the meter gives its one reading: `tsc` on x86_64, `cntvct` on aarch64.
pub const NAME: &str = if cfg!(target_arch = "aarch64") {
    "cntvct"
} else {
    "tsc"
};

/// Where a [`TimestampMeter`] reads its ticks: the CPU's [`TimestampCounter`] in
/// production, a scripted clock in the host tests.
pub trait TickSource {
    /// The current tick count.
    fn ticks(&self) -> u64;
}

/// The CPU's time-stamp counter ([`ticks`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct TimestampCounter;

impl TickSource for TimestampCounter {
    #[inline(always)]
    fn ticks(&self) -> u64 {
        ticks()
    }
}

/// Measures regions in time-stamp ticks ([`NAME`]); the ticks come from `K`, the
/// thread's switch counts and CPU from `T`.
#[derive(Debug, Default)]
pub struct TimestampMeter<T: ThreadSource = Kernel, K: TickSource = TimestampCounter> {
    thread: T,
    clock: K,
    start: u64,
    switches: Option<SwitchCounts>,
    cpu: Option<u32>,
    last: Evidence,
}

impl TimestampMeter {
    /// A meter, or [`crate::error::Unsupported::TimestampCounter`] where this library has no reader.
    ///
    /// # Errors
    /// [`crate::error::Unsupported::TimestampCounter`] on architectures other than x86_64 and aarch64.
    pub fn new() -> Result<Self> {
        if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
            Ok(Self::default())
        } else {
            Err(Error::Unsupported(
                crate::error::Unsupported::TimestampCounter,
            ))
        }
    }
}

#[cfg(test)]
impl<T: ThreadSource, K: TickSource> TimestampMeter<T, K> {
    /// A meter reading `clock`, with the thread's evidence from `thread`.
    pub fn with_sources(thread: T, clock: K) -> Self {
        Self {
            thread,
            clock,
            start: 0,
            switches: None,
            cpu: None,
            last: Evidence::default(),
        }
    }
}

/// The time-stamp counter, ordered with the instructions around it.
#[inline(always)]
pub fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        pmu_x86::asm::rdtsc_fenced()
    }
    #[cfg(target_arch = "aarch64")]
    {
        // Before the read: the instructions before it have completed.
        pmu_armv8::asm::isb();
        // SAFETY: Linux gives EL0 CNTVCT_EL0 reads (CNTKCTL_EL1.EL0VCTEN, set for the vDSO
        // in drivers/clocksource/arm_arch_timer.c) or emulates them where an erratum traps
        // (arch/arm64/kernel/traps.c `cntvct_read_handler`).
        let value = unsafe { pmu_armv8::asm::read_cntvct_el0() };
        // After the read: no later instruction starts before it.
        pmu_armv8::asm::isb();
        value
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        0
    }
}

impl<T: ThreadSource, K: TickSource> RegionMeter for TimestampMeter<T, K> {
    type Error = Error;

    fn start(&mut self) -> Result<()> {
        self.switches = self.thread.switches().ok();
        self.cpu = self.thread.cpu();
        self.start = self.clock.ticks();
        Ok(())
    }

    fn stop(&mut self, out: &mut [Reading]) -> Result<()> {
        let end = self.clock.ticks();
        let switches_after = self.thread.switches().ok();
        let cpu_after = self.thread.cpu();
        let mut evidence = Evidence::default();
        evidence.cpu_start = self.cpu;
        evidence.cpu_end = cpu_after;
        if let (Some(a), Some(b)) = (self.switches, switches_after) {
            evidence.switches = Some(a.delta(b));
        }
        let Some(slot) = out.first_mut() else {
            return Err(pmu_core::Error::ReadingsMismatch {
                expected: 1,
                got: 0,
            }
            .into());
        };
        *slot = Reading {
            value: end.wrapping_sub(self.start),
            hazards: evidence.thread_hazards(),
            ..Reading::default()
        };
        self.last = evidence;
        Ok(())
    }
}

impl<T: ThreadSource, K: TickSource> Backend for TimestampMeter<T, K> {
    fn names(&self) -> Vec<String> {
        vec![NAME.to_owned()]
    }
    fn enable(&mut self) -> Result<()> {
        Ok(())
    }
    fn disable(&mut self) -> Result<()> {
        Ok(())
    }
    fn evidence(&self) -> Evidence {
        self.last
    }
    fn sentinel(&self) -> crate::sentinel::Sentinel {
        crate::sentinel::Sentinel::off(crate::sentinel::NO_HARDWARE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 32-bit ARM has no reader here: an error, never a 0.
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    #[test]
    fn no_reader_is_an_error() {
        assert!(matches!(
            TimestampMeter::new().unwrap_err(),
            Error::Unsupported(crate::error::Unsupported::TimestampCounter)
        ));
    }

    /// A clock that advances by a fixed step at each read, as the test says.
    #[derive(Debug)]
    struct SteppingClock {
        now: std::cell::Cell<u64>,
        step: u64,
    }

    impl TickSource for SteppingClock {
        fn ticks(&self) -> u64 {
            let t = self.now.get();
            self.now.set(t + self.step);
            t
        }
    }

    /// A region in which the (scripted) thread slept: the ticks are the clock's
    /// difference, the voluntary switch is flagged CONTEXT_SWITCH; the next region, with
    /// nothing happening, is clean; a migration is flagged CPU_MIGRATION. Expected
    /// values: the verdict rules of `Evidence::thread_hazards` (getrusage(2) ru_nvcsw /
    /// ru_nivcsw, sched_getcpu(3)).
    #[test]
    fn ticks_and_the_threads_evidence() {
        use crate::machine::sched::fake::FakeThread;
        use pmu_core::Hazards;
        let thread = FakeThread::default();
        let clock = SteppingClock {
            now: std::cell::Cell::new(1_000),
            step: 250,
        };
        let mut meter = TimestampMeter::with_sources(&thread, clock);
        let run =
            crate::measure::measure_once(&mut meter, &mut || thread.switch_voluntarily()).unwrap();
        assert_eq!(run.readings[0].value, 250);
        assert_eq!(run.readings[0].hazards, Hazards::CONTEXT_SWITCH);
        assert_eq!(run.evidence.switches.unwrap().voluntary, 1);

        let run = crate::measure::measure_once(&mut meter, &mut || {}).unwrap();
        assert_eq!(run.readings[0].value, 250);
        assert!(run.readings[0].hazards.is_empty(), "{run:?}");

        let run = crate::measure::measure_once(&mut meter, &mut || thread.migrate_to(1)).unwrap();
        assert!(run.readings[0]
            .hazards
            .contains(Hazards::CPU_MIGRATION | Hazards::CONTEXT_SWITCH));
        assert_eq!(
            (run.evidence.cpu_start, run.evidence.cpu_end),
            (Some(0), Some(1))
        );

        let mut out = [];
        meter.start().unwrap();
        assert!(meter.stop(&mut out).is_err(), "no room for the reading");
    }
}
