//! Hazards: everything that can make a counter value untrustworthy, and the
//! [`Reading`] that carries them with the value.

bitflags::bitflags! {
    /// Why a counter value may not mean what it seems to mean.
    ///
    /// An empty set means: the value was read by the fast path, the counter ran the whole
    /// time on one CPU for this thread alone, and it did not wrap.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct Hazards: u32 {
        /// The counter wrapped (overflow flag seen): the value is corrected with the wrap
        /// count the flags give, but more than one wrap cannot be told apart.
        const OVERFLOW = 1 << 0;
        /// The thread was switched out during the region: the value is right for the
        /// thread, but caches, TLBs and predictors were disturbed.
        const CONTEXT_SWITCH = 1 << 1;
        /// The thread ran on more than one CPU during the region.
        const CPU_MIGRATION = 1 << 2;
        /// The event was multiplexed: it counted only part of the time
        /// (time_running < time_enabled); the raw value is an undercount.
        const MULTIPLEXED = 1 << 3;
        /// The event was not on a hardware counter when read (perf page index 0).
        const NOT_SCHEDULED = 1 << 4;
        /// The value came from the `read()` system call, not the one-instruction path:
        /// the read itself costs hundreds of instructions inside the region boundaries.
        const SYSCALL_FALLBACK = 1 << 5;
        /// User access to the counters was revoked during the region (the kernel or a
        /// module reset PMUSERENR / CR4.PCE / SUNAVCR).
        const USER_ACCESS_REVOKED = 1 << 6;
        /// The kernel ran on this CPU during the region (an interrupt, a system call, a
        /// page fault, a preemption): a *sentinel* counter that counts only at the
        /// kernel's privilege level moved. The value may be right (perf counts per
        /// thread), but the kernel's work disturbed caches, TLBs, predictors and, for
        /// cycles, the time; a direct counter counting user and kernel includes it.
        const KERNEL_ENTRY = 1 << 7;
    }
}

impl Hazards {
    /// A short name per flag, in bit order, for human and machine output.
    pub const NAMES: [(Hazards, &'static str); 8] = [
        (Hazards::OVERFLOW, "overflow"),
        (Hazards::CONTEXT_SWITCH, "context-switch"),
        (Hazards::CPU_MIGRATION, "cpu-migration"),
        (Hazards::MULTIPLEXED, "multiplexed"),
        (Hazards::NOT_SCHEDULED, "not-scheduled"),
        (Hazards::SYSCALL_FALLBACK, "syscall-fallback"),
        (Hazards::USER_ACCESS_REVOKED, "user-access-revoked"),
        (Hazards::KERNEL_ENTRY, "kernel-entry"),
    ];
}

impl core::fmt::Display for Hazards {
    /// `none`, or the flag names joined with `,`.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.is_empty() {
            return f.write_str("none");
        }
        let mut first = true;
        for (flag, name) in Self::NAMES {
            if self.contains(flag) {
                if !first {
                    f.write_str(",")?;
                }
                f.write_str(name)?;
                first = false;
            }
        }
        Ok(())
    }
}

/// One counter value together with what may be wrong with it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reading {
    /// The count (a delta over a region, or an absolute value, as the producer says).
    pub value: u64,
    /// Why the value may not be trusted; empty when it can.
    pub hazards: Hazards,
    /// Nanoseconds the event was enabled, where known (perf).
    pub time_enabled: Option<u64>,
    /// Nanoseconds the event was on a counter, where known (perf).
    pub time_running: Option<u64>,
}

impl Reading {
    /// A reading without hazards or times.
    pub const fn new(value: u64) -> Self {
        Self {
            value,
            hazards: Hazards::empty(),
            time_enabled: None,
            time_running: None,
        }
    }

    /// True when no hazard is flagged.
    pub const fn is_clean(&self) -> bool {
        self.hazards.is_empty()
    }

    /// The value scaled by time_enabled / time_running (perf's multiplexing estimate).
    ///
    /// `None` when the times are unknown or the event never ran. Equal times give the
    /// raw value.
    pub fn scaled(&self) -> Option<u64> {
        let (enabled, running) = (self.time_enabled?, self.time_running?);
        if running == 0 {
            return None;
        }
        let scaled = u128::from(self.value) * u128::from(enabled) / u128::from(running);
        u64::try_from(scaled).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::format;

    #[test]
    fn display_lists_flags_in_bit_order() {
        assert_eq!(format!("{}", Hazards::empty()), "none");
        let h = Hazards::CPU_MIGRATION | Hazards::OVERFLOW;
        assert_eq!(format!("{h}"), "overflow,cpu-migration");
        assert_eq!(Hazards::NAMES.len(), Hazards::all().iter().count());
    }

    /// perf's scaling rule (tools/perf/util/stat.c, perf_counts_values__scale):
    /// value * enabled / running.
    #[test]
    fn scaling() {
        let mut r = Reading::new(1000);
        assert_eq!(r.scaled(), None);
        r.time_enabled = Some(300);
        r.time_running = Some(100);
        assert_eq!(r.scaled(), Some(3000));
        r.time_running = Some(0);
        assert_eq!(r.scaled(), None);
        r.time_running = Some(300);
        assert_eq!(r.scaled(), Some(1000));
    }
}
