//! The direct backend's rules (the hazard table's direct column, in the
//! [module](super) doc): per counter, the wrap rule (its overflow flag, or end <
//! start: pmu-core `CounterMeter`); per region, the CPU and switch detectors and the
//! kernel-entry sentinel's count; and for the syscall-free region, the one-word edge
//! tag its stop compares and the fast path that takes only clean regions.

use pmu_core::{CounterWidth, Hazards, Reading};

use super::evidence::{shared_hazards, EventEvidence, Evidence, ReadPath};
use crate::machine::sched::ThreadStamp;
use crate::sys::SwitchCounts;

/// The kernel-entry sentinel's count over a region from its reads at both edges, of a
/// counter `width` wide: the difference modulo 2^width undoes one wrap; with the
/// counter's overflow flag set and end ≥ start it wrapped once more, 2^width added
/// (more than that cannot be told apart, as for the counters). A flag read after the
/// value may see a wrap that came after the read: the count is then 2^width too high,
/// but the wrap needs the kernel to run on this CPU, so the hazard stays true.
#[inline(always)]
pub(crate) fn sentinel_entries(width: CounterWidth, start: u64, end: u64, overflowed: bool) -> u64 {
    let delta = width.wrapping_delta(start, end);
    if overflowed && width.truncate(end) >= width.truncate(start) {
        delta.saturating_add(1 << width.bits().min(63))
    } else {
        delta
    }
}

/// The sentinel's count over a syscall-free region: its reads are 32 bits (the
/// module's and the backend's counters without PMCR_EL0.LP) and no flag is read, so
/// one wrap is undone by the 32-bit difference ([`sentinel_entries`]).
#[inline(always)]
pub(crate) fn sentinel_delta(start: u64, end: u64) -> u64 {
    sentinel_entries(CounterWidth::W32, start, end, false)
}

/// One word for a region edge's CPU and sentinel: the CPU in bits 63:32, the
/// sentinel's low 32 bits (all of its count the region uses, [`sentinel_delta`]) in
/// bits 31:0. Two edges' tags are equal exactly when the CPU is the same and the
/// sentinel did not move (modulo 2^32): the stop's fast path compares them in one
/// instruction.
#[inline(always)]
pub(crate) fn edge_tag(cpu: u32, sentinel: u64) -> u64 {
    (u64::from(cpu) << 32) | (sentinel & u64::from(u32::MAX))
}

/// The CPU of an [`edge_tag`].
#[inline(always)]
pub(crate) fn tag_cpu(tag: u64) -> u32 {
    (tag >> 32) as u32
}

/// The stop's fast path: `Some` of the readings' values when the region is clean
/// (same CPU and sentinel still, `tag_start == tag_end`; none of `flag_mask` set in
/// `flags`; every counter's masked end at or above its masked start), `None` when any
/// of them says a hazard (then the full verdict, [`edge_hazards`] and
/// [`counter_readings`], decides). A clean region's readings are exactly what
/// [`counter_readings`] gives for it (no hazard, `end − start`); the fast path only skips
/// building the verdict.
#[inline(always)]
pub(crate) fn fast_verdict<const K: usize>(
    tag_start: u64,
    tag_end: u64,
    flags: u64,
    flag_mask: u64,
    start: &[u64; K],
    end: &[u64; K],
    masks: &[u64; K],
) -> Option<[u64; K]> {
    let mut wrapped = false;
    let values = core::array::from_fn(|i| {
        let (s, e) = (start[i] & masks[i], end[i] & masks[i]);
        wrapped |= e < s;
        e.wrapping_sub(s)
    });
    // The tests combined without short-circuit (`|`, not `||`): the compiler may fold
    // them into conditional compares and one branch; the hazards are rare, the branch
    // predicted.
    if (flags & flag_mask != 0) | (tag_start != tag_end) | wrapped {
        None
    } else {
        Some(values)
    }
}

/// The hazards every counter of a syscall-free region shares: [`Hazards::CPU_MIGRATION`] when
/// the edges' CPUs differ (both are always known: a region whose `sched_getcpu()`
/// fails is an error), [`Hazards::CONTEXT_SWITCH`] when getrusage saw one (regions
/// without a sentinel), [`Hazards::KERNEL_ENTRY`] when the sentinel moved. The same
/// rules as [`Evidence::thread_hazards`] on [`edge_evidence`].
#[inline(always)]
pub(crate) fn edge_hazards(
    cpu_start: u32,
    cpu_end: u32,
    switched: bool,
    kernel_entries: u64,
) -> Hazards {
    shared_hazards(cpu_start != cpu_end, switched, kernel_entries != 0)
}

/// The readings of a direct region (into `out`, one per counter): counter i read
/// `start[i]` and `end[i]`, is `widths[i]` wide, and `flagged(i)` says whether its
/// overflow flag was set at the stop (always false where EL0 cannot read the flags:
/// the read-only grant, AArch32 at PL0); `common` is the region's shared hazards
/// ([`edge_hazards`]). A counter wrapped when its flag says so (it
/// wrapped after the start cleared the flag) or when its end is below its start (it
/// wrapped between the start's read and the clear, or at all where there are no
/// flags); more than one wrap cannot be told apart. Returns how many readings.
///
/// # Errors
/// [`pmu_core::Error::DeltaOverflow`] (a wrapped 64-bit counter, impossible in
/// practice).
#[inline(always)]
pub(crate) fn counter_readings(
    start: &[u64],
    end: &[u64],
    flagged: impl Fn(usize) -> bool,
    widths: &[CounterWidth],
    common: Hazards,
    out: &mut [Reading],
) -> Result<usize, pmu_core::Error> {
    let n = start
        .len()
        .min(end.len())
        .min(widths.len())
        .min(out.len())
        .min(crate::MAX_EVENTS);
    for i in 0..n {
        let (s, e) = (widths[i].truncate(start[i]), widths[i].truncate(end[i]));
        let (value, hazards) = if flagged(i) || e < s {
            (widths[i].accumulate(s, e, 1)?, common | Hazards::OVERFLOW)
        } else {
            (e - s, common)
        };
        out[i] = Reading {
            value,
            hazards,
            time_enabled: None,
            time_running: None,
        };
    }
    Ok(n)
}

/// The evidence of a syscall-free region whose readings are `out`.
pub(crate) fn edge_evidence(
    cpu: (u32, u32),
    cpu_from_rseq: bool,
    switches: Option<(SwitchCounts, SwitchCounts)>,
    kernel_entries: Option<u64>,
    out: &[Reading],
) -> Evidence {
    let stamp = |cpu: u32, switches: Option<SwitchCounts>| ThreadStamp {
        switches,
        cpu: Some(cpu),
        cpu_from_rseq,
    };
    let mut evidence = direct_evidence(
        stamp(cpu.0, switches.map(|s| s.0)),
        stamp(cpu.1, switches.map(|s| s.1)),
        out,
    );
    evidence.kernel_entries = kernel_entries;
    evidence
}

/// The evidence of a direct region whose readings [`counter_readings`] wrote into `out`
/// (one per counter; the overflow flags come from them).
pub(crate) fn direct_evidence(
    thread_start: ThreadStamp,
    thread_end: ThreadStamp,
    out: &[Reading],
) -> Evidence {
    let mut evidence = Evidence::new(thread_start, thread_end, out.len());
    for (event, reading) in evidence.events.iter_mut().zip(out) {
        *event = EventEvidence {
            start: ReadPath::Direct,
            end: ReadPath::Direct,
            overflowed: reading.hazards.contains(Hazards::OVERFLOW),
            ..EventEvidence::default()
        };
    }
    evidence
}

#[cfg(test)]
mod tests {
    use super::super::evidence::stamp;
    use super::*;

    const W32: u64 = u32::MAX as u64;

    /// Counter i's flag in `flags` (PMOVSSET_EL0 at the stop), its bit `bits[i]`.
    fn flagged(flags: u64, bits: &[u64]) -> impl Fn(usize) -> bool + '_ {
        move |i| flags & bits[i] != 0
    }

    /// Direct counters: 32-bit wrap with the flag (ARM1176JZF-S TRM 3.2.51; PMUv3 32-bit).
    #[test]
    fn direct_overflow_and_switch() {
        let w = [pmu_core::CounterWidth::W32, pmu_core::CounterWidth::W64];
        let mut out = [Reading::default(); 2];
        let n = counter_readings(
            &[0xFFFF_FFF0, 10],
            &[0x5d, 20],
            |i| [true, false][i],
            &w,
            Evidence::new(stamp(3, 0, 0), stamp(3, 0, 0), 0).thread_hazards(),
            &mut out,
        )
        .unwrap();
        assert_eq!(n, 2);
        let ev = direct_evidence(stamp(3, 0, 0), stamp(3, 0, 0), &out[..n]);
        assert_eq!(
            out[0],
            Reading {
                value: 0x6d,
                hazards: Hazards::OVERFLOW,
                time_enabled: None,
                time_running: None
            }
        );
        assert_eq!(out[1], Reading::new(10));
        assert!(ev.events()[0].overflowed);
        assert!(!ev.events()[1].overflowed);
        let n = counter_readings(
            &[0],
            &[5],
            |i| [false][i],
            &w[..1],
            Evidence::new(stamp(3, 0, 0), stamp(4, 0, 0), 0).thread_hazards(),
            &mut out,
        )
        .unwrap();
        let ev = direct_evidence(stamp(3, 0, 0), stamp(4, 0, 0), &out[..n]);
        assert_eq!(out[0].hazards, Hazards::CONTEXT_SWITCH);
        assert_eq!(ev.events()[0].start, ReadPath::Direct);
    }

    /// The syscall-free verdict (the hazard table of the verdict module, direct column): a moved sentinel flags
    /// every counter KERNEL_ENTRY with its count as evidence; the flag bit of a counter
    /// (PMOVSSET_EL0 bit n, Arm ARM) flags that counter only; end < start is a wrap
    /// (pmu-core `CounterMeter` rule); a changed CPU is a migration; without a sentinel,
    /// getrusage's switches are the switch evidence.
    #[test]
    fn the_verdict_of_a_syscall_free_region() {
        let widths = [CounterWidth::W32, CounterWidth::W64];
        let bits = [1 << 5, 1 << 31];
        let mut out = [Reading::default(); 2];
        // Quiet: sentinel still, no flag, same CPU.
        let quiet = edge_hazards(0, 0, false, 0);
        assert_eq!(quiet, Hazards::empty());
        let n = counter_readings(
            &[100, 5],
            &[350, 9],
            flagged(0, &bits),
            &widths,
            quiet,
            &mut out,
        )
        .unwrap();
        assert_eq!(n, 2);
        assert_eq!((out[0].value, out[0].hazards), (250, Hazards::empty()));
        assert_eq!((out[1].value, out[1].hazards), (4, Hazards::empty()));
        let ev = edge_evidence((0, 0), true, None, Some(0), &out);
        assert_eq!(ev.kernel_entries, Some(0));
        assert_eq!(ev.switches, None);
        assert!(ev.cpu_from_rseq);
        assert_eq!(ev.thread_hazards(), quiet);

        // The kernel ran 251 instructions: both counters flagged, as the evidence says.
        let entered = edge_hazards(0, 0, false, 251);
        counter_readings(
            &[100, 5],
            &[350, 9],
            flagged(0, &bits),
            &widths,
            entered,
            &mut out,
        )
        .unwrap();
        assert!(out.iter().all(|r| r.hazards == Hazards::KERNEL_ENTRY));
        let ev = edge_evidence((0, 0), true, None, Some(251), &out);
        assert_eq!(ev.thread_hazards(), entered);

        // Counter 5's flag: it wrapped once (2^32 + 10 − 0xFFFF_FFF0 = 26), the cycle
        // counter did not.
        counter_readings(
            &[0xFFFF_FFF0, 5],
            &[10, 9],
            flagged(1 << 5, &bits),
            &widths,
            quiet,
            &mut out,
        )
        .unwrap();
        assert_eq!((out[0].value, out[0].hazards), (26, Hazards::OVERFLOW));
        assert_eq!(out[1].hazards, Hazards::empty());
        assert!(edge_evidence((0, 0), true, None, Some(0), &out).events()[0].overflowed);

        // Read-only grant (no flags): end < start is the wrap; the high bits of a
        // 32-bit read are ignored; CPU 0 → 1 is a migration.
        let moved = edge_hazards(0, 1, false, 0);
        counter_readings(
            &[0xFFFF_FFF0],
            &[0x7_0000_000A],
            flagged(0, &bits[..1]),
            &widths[..1],
            moved,
            &mut out[..1],
        )
        .unwrap();
        assert_eq!(out[0].value, 26);
        assert_eq!(out[0].hazards, Hazards::OVERFLOW | Hazards::CPU_MIGRATION);
        assert_eq!(
            edge_evidence((0, 1), false, None, None, &out[..1]).thread_hazards(),
            Hazards::CPU_MIGRATION
        );

        // No sentinel: getrusage's switches are the evidence of a switch.
        let switched = edge_hazards(0, 0, true, 0);
        assert_eq!(switched, Hazards::CONTEXT_SWITCH);
        let a = SwitchCounts {
            voluntary: 1,
            involuntary: 3,
        };
        let b = SwitchCounts {
            voluntary: 1,
            involuntary: 4,
        };
        let ev = edge_evidence((0, 0), true, Some((a, b)), None, &out[..1]);
        assert_eq!(ev.thread_hazards(), Hazards::CONTEXT_SWITCH);
        assert_eq!(ev.kernel_entries, None);
    }

    /// The stop's fast path (`fast_verdict`) takes only clean regions, and gives them the
    /// readings the full verdict gives: a moved sentinel (the kernel ran, module docs),
    /// a CPU change, the region's overflow flag (PMOVSSET_EL0 bit n, Arm ARM) and
    /// end < start (a wrap between the start's read and its clear) each send the stop
    /// to the slow path, which flags them.
    #[test]
    fn the_fast_path_takes_only_clean_regions() {
        let masks = [W32, u64::MAX];
        let bits = [1 << 5, 1 << 31];
        let widths = [CounterWidth::W32, CounterWidth::W64];
        let mask = bits[0] | bits[1];
        let (start, end) = ([100, 5], [350, 9]);
        // Sentinel 7 at both edges on CPU 3; its high bits (a 64-bit read) are not part
        // of the test, which is on its 32-bit count.
        let tag = edge_tag(3, 7);
        assert_eq!(tag_cpu(tag), 3);
        assert_eq!(edge_tag(3, 0x5_0000_0007), tag);
        // Clean: the values are counter_readings' for the quiet verdict; another
        // counter's flag (bit 0: not the region's) does not count.
        let fast = fast_verdict(tag, tag, 1, mask, &start, &end, &masks).unwrap();
        let mut slow = [Reading::default(); 2];
        let quiet = edge_hazards(3, 3, false, sentinel_delta(tag, tag));
        counter_readings(&start, &end, flagged(1, &bits), &widths, quiet, &mut slow).unwrap();
        assert_eq!(fast, [250, 4]);
        assert_eq!(fast.map(Reading::new), slow);
        // The evidence the region rebuilds for a fast stop (the start's tag, no flag)
        // is the slow path's for the same state.
        let rebuilt = edge_evidence((3, tag_cpu(tag)), true, None, Some(0), &slow);
        assert_eq!(rebuilt, edge_evidence((3, 3), true, None, Some(0), &slow));
        assert_eq!(rebuilt.thread_hazards(), Hazards::empty());

        // Each hazard alone sends the stop to the slow path, where it is flagged.
        let moved = edge_tag(3, 8);
        let migrated = edge_tag(4, 7);
        assert_eq!(
            fast_verdict(tag, moved, 0, mask, &start, &end, &masks),
            None
        );
        assert_eq!(
            edge_hazards(3, 3, false, sentinel_delta(tag, moved)),
            Hazards::KERNEL_ENTRY
        );
        assert_eq!(
            fast_verdict(tag, migrated, 0, mask, &start, &end, &masks),
            None
        );
        assert_eq!(
            edge_hazards(3, tag_cpu(migrated), false, 0),
            Hazards::CPU_MIGRATION
        );
        assert_eq!(
            fast_verdict(tag, tag, 1 << 5, mask, &start, &end, &masks),
            None
        );
        counter_readings(
            &start,
            &end,
            flagged(1 << 5, &bits),
            &widths,
            quiet,
            &mut slow,
        )
        .unwrap();
        // Counter 5 wrapped once after the clear: 2^32 + 250.
        assert_eq!(
            (slow[0].value, slow[0].hazards),
            ((1 << 32) + 250, Hazards::OVERFLOW)
        );
        // A wrap before the clear: no flag, end < start (2^32 + 10 − 0xFFFF_FFF0 = 26).
        let (wrap_start, wrap_end) = ([0xFFFF_FFF0, 5], [10, 9]);
        assert_eq!(
            fast_verdict(tag, tag, 0, mask, &wrap_start, &wrap_end, &masks),
            None
        );
        counter_readings(
            &wrap_start,
            &wrap_end,
            flagged(0, &bits),
            &widths,
            quiet,
            &mut slow,
        )
        .unwrap();
        assert_eq!((slow[0].value, slow[0].hazards), (26, Hazards::OVERFLOW));
        // The high bits of a 32-bit counter's read are not a wrap.
        assert_eq!(
            fast_verdict(tag, tag, 0, mask, &[0x1_0000_0064, 5], &end, &masks),
            Some([250, 4])
        );
    }

    /// The sentinel is read as 32 bits (kmod-enable-user's and the backend's counters
    /// without PMCR_EL0.LP): one wrap is undone, the high bits ignored.
    #[test]
    fn the_sentinel_count_survives_one_wrap() {
        assert_eq!(sentinel_delta(0xFFFF_FFFE, 0x3), 5);
        assert_eq!(sentinel_delta(0x1_0000_0005, 0x2_0000_0007), 2);
        assert_eq!(sentinel_delta(7, 7), 0);
    }
}
