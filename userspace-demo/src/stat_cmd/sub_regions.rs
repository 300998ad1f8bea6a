//! The direct backend's count of a long command as a sum of short sub-regions.
//!
//! A direct counter is 32 bits wide on many cores (ARM1176 and ARMv7 counters; PMUv3
//! event counters without FEAT_PMUv3p5's long counters, Cortex-A53/A72; PMCCNTR read
//! from AArch32 under the module's read-only grant) and wraps every 2^32 events, ~2.9 s
//! of cycles at 1.5 GHz. A region's reading undoes one wrap exactly (the overflow flag,
//! or end < start: pmu-core `CounterWidth::accumulate`), but not two, and where EL0
//! cannot read the flags (the read-only grant) not even one with end ≥ start. So the
//! demo ends a region and starts the next every [`POLL`] while the command runs, adds
//! the readings, and trusts a sub-region only while it was too short for any counter
//! to count 2^width events: [`trusted_for`].

use std::time::Duration;

use pmu_linux::pmu_core::CounterWidth;
use pmu_linux::Hazards;

/// How often the demo ends a sub-region while the command runs (it wakes at once
/// when the command ends).
pub const POLL: Duration = Duration::from_millis(50);

/// The clock rate assumed as the highest any core the direct backend runs on reaches:
/// 5 GHz. An assumption, stated in `pmu-demo stat --help` and the README: the Arm cores
/// the backend reads run well below it (the Raspberry Pi's from 0.7 GHz on the Pi 1 to
/// 2.4 GHz on the Pi 5; Neoverse-N1 servers about 3 GHz).
pub const MAX_CLOCK_HZ: u64 = 5_000_000_000;

/// The most events one counter is assumed to count in one cycle: 8, the issue
/// pipelines of the widest core in the event tables (Cortex-A76, and Neoverse-N1 built
/// on it: 4 instructions decoded a cycle and 8 pipelines they issue to, branch, two
/// integer, multi-cycle integer, two FP/ASIMD and two load/store, Cortex-A76 Software
/// Optimization Guide, 2.1 "Pipeline overview"); Cortex-A53 issues two a cycle,
/// Cortex-A72 decodes three. Cycle counters count one a cycle. An assumption: a core
/// that counts more events a cycle on one counter shortens [`trusted_for`] in
/// proportion.
pub const MAX_EVENTS_PER_CYCLE: u64 = 8;

/// How long a sub-region may last and still be trusted, for a counter `width` wide:
/// the time to count 2^width events at [`MAX_CLOCK_HZ`] × [`MAX_EVENTS_PER_CYCLE`].
/// From a start just below the top the first wrap comes at once, and the second,
/// which a reading with the overflow flag cannot tell from the first alone, needs
/// 2^width more events; without flags (the read-only grant) a reading, the
/// difference modulo 2^width, is right exactly while fewer than 2^width events were
/// counted. 32 bits: 107.4 ms (2^32 / 4·10^10 per second), twice [`POLL`]; 64 bits:
/// centuries.
pub fn trusted_for(width: CounterWidth) -> Duration {
    let events = 1u128 << width.bits();
    let per_second = u128::from(MAX_CLOCK_HZ) * u128::from(MAX_EVENTS_PER_CYCLE);
    let nanos = events * 1_000_000_000 / per_second;
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

/// One event's count over one run: the sum of its sub-regions' readings, or why the
/// count is lost (then never a number).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summed {
    /// The sum of the readings so far (meaningless once `lost`).
    pub value: u64,
    /// Why the count is lost: the first reason seen.
    pub lost: Option<String>,
    /// How many sub-regions were added.
    pub sub_regions: u32,
}

impl Summed {
    /// Adds one sub-region: `value` is its reading (one wrap already undone by the
    /// direct backend's reading rule), `hazards` the reading's, `lasted` the time from
    /// before its start's read to after its stop's, `width` the counter's.
    pub fn add(&mut self, value: u64, hazards: Hazards, lasted: Duration, width: CounterWidth) {
        self.sub_regions = self.sub_regions.saturating_add(1);
        if self.lost.is_some() {
            return;
        }
        let why = if hazards.contains(Hazards::USER_ACCESS_REVOKED) {
            Some("user access revoked".to_owned())
        } else if hazards.contains(Hazards::CPU_MIGRATION) {
            Some("the demo left its CPU".to_owned())
        } else if lasted >= trusted_for(width) {
            Some(format!(
                "may have wrapped unseen (the demo did not run for {} ms)",
                lasted.as_millis()
            ))
        } else {
            None
        };
        self.lost = why.or_else(|| match self.value.checked_add(value) {
            Some(sum) => {
                self.value = sum;
                None
            }
            None => Some("the sum does not fit in 64 bits".to_owned()),
        });
    }

    /// Marks the count lost: something outside the readings (the demo preempted
    /// between one sub-region's stop and the next one's start, when the command may
    /// have run uncounted) makes it meaningless. The first reason stays.
    pub fn lose(&mut self, why: impl Into<String>) {
        self.lost.get_or_insert_with(|| why.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reading of one sub-region of a `width`-bit counter read `start` and `end`,
    /// as pmu-linux's direct reading rule gives it (verdict/direct.rs
    /// `counter_readings`: one wrap undone when end < start, with pmu-core
    /// `CounterWidth::accumulate`), and its hazards.
    fn reading(width: CounterWidth, start: u64, end: u64) -> (u64, Hazards) {
        let wrapped = width.truncate(end) < width.truncate(start);
        let value = width
            .accumulate(start, end, u64::from(wrapped))
            .expect("one wrap of a 32-bit counter fits");
        let hazards = if wrapped {
            Hazards::OVERFLOW
        } else {
            Hazards::empty()
        };
        (value, hazards)
    }

    /// 32 bits at 5 GHz × 8 a cycle: 2^32 / (4·10^10 /s) = 107 374 182 ns; 64 bits
    /// saturate rather than overflow.
    #[test]
    fn the_bound_per_width() {
        assert_eq!(
            trusted_for(CounterWidth::W32),
            Duration::from_nanos(107_374_182)
        );
        assert!(trusted_for(CounterWidth::W32) > 2 * POLL);
        assert_eq!(
            trusted_for(CounterWidth::W48),
            Duration::from_nanos((1u64 << 48) / 40)
        );
        assert!(trusted_for(CounterWidth::W64) > Duration::from_secs(400_000_000));
        let one = CounterWidth::new(1).expect("1 bit is a width");
        assert_eq!(trusted_for(one), Duration::ZERO);
    }

    /// `pmu-demo stat --help` states the bound the code uses, and the period.
    #[test]
    fn the_help_states_the_bound() {
        let help = super::super::LONG_ABOUT;
        let bound = format!("{} ms", trusted_for(CounterWidth::W32).as_millis());
        assert!(help.contains(&bound), "{bound} not in the help");
        let period = format!("every {} ms", POLL.as_millis());
        assert!(help.contains(&period), "{period} not in the help");
    }

    /// A 32-bit counter that counts 3·10^9 events per sub-region (more than 2^31,
    /// less than 2^32) through five sub-regions wraps in most of them; each reading
    /// undoes its wrap and the sum is exactly 1.5·10^10, three and a half times 2^32,
    /// where one region around all five would read 1.5·10^10 mod 2^32.
    #[test]
    fn a_wrap_per_sub_region_sums_exactly() {
        let w = CounterWidth::W32;
        let step = 3_000_000_000u64;
        let mut counter = 0xFFFF_0000u64; // the value the counter held at the start
        let mut sum = Summed::default();
        let mut wraps = 0;
        for _ in 0..5 {
            let start = w.truncate(counter);
            counter += step;
            let end = w.truncate(counter);
            let (value, hazards) = reading(w, start, end);
            wraps += u32::from(hazards.contains(Hazards::OVERFLOW));
            sum.add(value, hazards, Duration::from_millis(50), w);
        }
        assert!(wraps >= 3, "{wraps} wraps");
        assert_eq!(sum.lost, None);
        assert_eq!(sum.value, 5 * step);
        assert_eq!(sum.sub_regions, 5);
        assert_ne!(
            w.wrapping_delta(0xFFFF_0000, counter),
            5 * step,
            "one region could not have told"
        );
    }

    /// A sub-region of 200 ms on a 32-bit counter (the demo not scheduled in time) is
    /// beyond 107 ms: the count is lost with the reason and the time, never a number;
    /// the same time on a 64-bit counter is fine.
    #[test]
    fn a_too_long_sub_region_loses_the_count() {
        let mut sum = Summed::default();
        sum.add(10, Hazards::empty(), POLL, CounterWidth::W32);
        sum.add(
            20,
            Hazards::empty(),
            Duration::from_millis(200),
            CounterWidth::W32,
        );
        sum.add(30, Hazards::empty(), POLL, CounterWidth::W32);
        assert_eq!(
            sum.lost.as_deref(),
            Some("may have wrapped unseen (the demo did not run for 200 ms)")
        );
        assert_eq!(sum.sub_regions, 3);
        let mut wide = Summed::default();
        wide.add(
            20,
            Hazards::empty(),
            Duration::from_millis(200),
            CounterWidth::W64,
        );
        assert_eq!((wide.value, wide.lost), (20, None));
        // Exactly at the bound is not below it.
        let mut edge = Summed::default();
        edge.add(
            1,
            Hazards::empty(),
            trusted_for(CounterWidth::W32),
            CounterWidth::W32,
        );
        assert!(edge.lost.is_some());
    }

    /// The hazards that lose a count keep their reasons and the first one stays; the
    /// demo's own sleeps (switches, kernel entries) and one wrap do not lose it.
    #[test]
    fn hazards_and_first_reason() {
        let w = CounterWidth::W32;
        let mut sum = Summed::default();
        sum.add(5, Hazards::CONTEXT_SWITCH | Hazards::KERNEL_ENTRY, POLL, w);
        sum.add(5, Hazards::OVERFLOW, POLL, w);
        assert_eq!((sum.value, sum.lost.as_deref()), (10, None));
        sum.add(5, Hazards::CPU_MIGRATION, POLL, w);
        sum.add(5, Hazards::USER_ACCESS_REVOKED, POLL, w);
        sum.lose("later");
        assert_eq!(sum.lost.as_deref(), Some("the demo left its CPU"));
        let mut revoked = Summed::default();
        revoked.add(
            5,
            Hazards::USER_ACCESS_REVOKED | Hazards::CPU_MIGRATION,
            POLL,
            w,
        );
        assert_eq!(revoked.lost.as_deref(), Some("user access revoked"));
        let mut preempted = Summed::default();
        preempted.add(5, Hazards::empty(), POLL, w);
        preempted.lose("preempted");
        preempted.add(5, Hazards::empty(), POLL, w);
        assert_eq!(preempted.lost.as_deref(), Some("preempted"));
    }

    /// Odd input does not panic: a sum past 64 bits is lost with the reason, a zero
    /// duration and zero readings are fine, the widest duration is beyond any bound.
    #[test]
    fn odd_input_does_not_panic() {
        let w = CounterWidth::W64;
        let mut sum = Summed::default();
        sum.add(u64::MAX, Hazards::empty(), Duration::ZERO, w);
        sum.add(1, Hazards::empty(), Duration::ZERO, w);
        assert_eq!(sum.lost.as_deref(), Some("the sum does not fit in 64 bits"));
        let mut zero = Summed::default();
        zero.add(0, Hazards::all(), Duration::ZERO, CounterWidth::W32);
        assert!(zero.lost.is_some());
        let mut forever = Summed::default();
        forever.add(0, Hazards::empty(), Duration::MAX, w);
        assert!(forever.lost.is_some());
        let mut none = Summed::default();
        none.add(0, Hazards::empty(), Duration::ZERO, CounterWidth::W32);
        assert_eq!((none.value, none.lost, none.sub_regions), (0, None, 1));
    }
}
