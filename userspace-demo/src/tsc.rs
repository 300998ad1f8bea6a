//! The time-stamp counter as a one-counter meter, for machines whose CPU exposes no
//! performance counters: RDTSC is available in every x86_64 VM (it counts reference
//! cycles at a constant rate, not core cycles).

use pmu_core::{Reading, RegionMeter};
use pmu_linux::region::Evidence;
use pmu_linux::sched::{current_cpu, thread_switches, SwitchCounts};

use pmu_linux::Counters;

/// Measures regions in TSC ticks, with context-switch and migration detection like the
/// other backends.
#[derive(Debug, Default)]
pub struct TscMeter {
    start: u64,
    switches: Option<SwitchCounts>,
    cpu: Option<u32>,
    last: Evidence,
}

impl TscMeter {
    /// Whether this machine has a usable TSC reader.
    pub fn available() -> bool {
        cfg!(target_arch = "x86_64")
    }
}

#[inline(always)]
fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        pmu_x86_tsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn pmu_x86_tsc() -> u64 {
    pmu_x86::asm::rdtsc_fenced()
}

impl RegionMeter for TscMeter {
    type Error = pmu_linux::Error;

    fn start(&mut self) -> Result<(), pmu_linux::Error> {
        self.switches = thread_switches().ok();
        self.cpu = current_cpu();
        self.start = ticks();
        Ok(())
    }

    fn stop(&mut self, out: &mut [Reading]) -> Result<(), pmu_linux::Error> {
        let end = ticks();
        let switches_after = thread_switches().ok();
        let cpu_after = current_cpu();
        let mut evidence = Evidence::default();
        evidence.cpu_start = self.cpu;
        evidence.cpu_end = cpu_after;
        if let (Some(a), Some(b)) = (self.switches, switches_after) {
            evidence.switches = Some(a.delta(b));
        }
        let hazards = evidence.thread_hazards();
        if let Some(slot) = out.first_mut() {
            *slot = Reading {
                value: end.wrapping_sub(self.start),
                hazards,
                ..Reading::default()
            };
        }
        self.last = evidence;
        Ok(())
    }
}

impl Counters for TscMeter {
    fn names(&self) -> Vec<String> {
        vec!["tsc".to_owned()]
    }
    fn enable(&mut self) -> Result<(), pmu_linux::Error> {
        Ok(())
    }
    fn disable(&mut self) -> Result<(), pmu_linux::Error> {
        Ok(())
    }
    fn evidence(&self) -> Evidence {
        self.last
    }
}
