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

use crate::error::{Error, Result};
use crate::measure::Counters;
use crate::region::Evidence;
use crate::sched::{current_cpu, thread_switches, SwitchCounts};

/// The name the meter gives its one reading: `tsc` on x86_64, `cntvct` on aarch64.
pub const NAME: &str = if cfg!(target_arch = "aarch64") {
    "cntvct"
} else {
    "tsc"
};

/// Measures regions in time-stamp ticks ([`NAME`]).
#[derive(Debug, Default)]
pub struct TimestampMeter {
    start: u64,
    switches: Option<SwitchCounts>,
    cpu: Option<u32>,
    last: Evidence,
}

impl TimestampMeter {
    /// A meter, or [`Error::NoTimestampCounter`] where this library has no reader.
    ///
    /// # Errors
    /// [`Error::NoTimestampCounter`] on architectures other than x86_64 and aarch64.
    pub fn new() -> Result<Self> {
        if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
            Ok(Self::default())
        } else {
            Err(Error::NoTimestampCounter)
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

impl RegionMeter for TimestampMeter {
    type Error = Error;

    fn start(&mut self) -> Result<()> {
        self.switches = thread_switches().ok();
        self.cpu = current_cpu();
        self.start = ticks();
        Ok(())
    }

    fn stop(&mut self, out: &mut [Reading]) -> Result<()> {
        let end = ticks();
        let switches_after = thread_switches().ok();
        let cpu_after = current_cpu();
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

impl Counters for TimestampMeter {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 32-bit ARM has no reader here: an error, never a 0.
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    #[test]
    fn no_reader_is_an_error() {
        assert_eq!(
            TimestampMeter::new().unwrap_err(),
            Error::NoTimestampCounter
        );
    }

    /// A region that sleeps 2 ms: the ticks advance, and the sleep (a voluntary switch,
    /// counted by getrusage) is flagged CONTEXT_SWITCH; a short spin right after
    /// advances too.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn ticks_advance_and_switches_are_flagged() {
        let mut meter = TimestampMeter::new().unwrap();
        use pmu_core::Hazards;
        let run = crate::measure::measure_once(&mut meter, &mut || {
            std::thread::sleep(std::time::Duration::from_millis(2))
        })
        .unwrap();
        assert!(run.readings[0].value > 0);
        assert!(run.readings[0].hazards.contains(Hazards::CONTEXT_SWITCH));
        assert!(run.evidence.switches.unwrap().voluntary >= 1);
        let mut out = [];
        meter.start().unwrap();
        assert!(meter.stop(&mut out).is_err(), "no room for the reading");
    }
}
