//! The perf backend's rules: a region's readings and evidence from its samples at both
//! edges (the hazard table's perf column, in the [module](super) doc), and the
//! kernel-entry sentinel's count.

use pmu_core::{Fallback, Hazards, Reading};

use super::evidence::{EventEvidence, Evidence, ReadPath, Sample};
use super::reason::FallbackReason;
use crate::machine::events::{SW_CONTEXT_SWITCHES, SW_CPU_MIGRATIONS};
use crate::machine::sched::ThreadStamp;
use crate::MAX_EVENTS;

/// Derives the readings of a perf region from its samples: `out[i]` for event `i`.
/// `software_ids[i]` is the event's software id, if it is one.
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
pub(crate) fn evaluate_perf(
    start: &[Sample],
    end: &[Sample],
    software_ids: &[Option<u64>],
    thread_start: ThreadStamp,
    thread_end: ThreadStamp,
    out: &mut [Reading],
) -> Evidence {
    let n = start.len().min(end.len()).min(out.len()).min(MAX_EVENTS);
    let mut evidence = Evidence::new(thread_start, thread_end, n);
    for i in 0..n {
        let (s, e) = (&start[i], &end[i]);
        let page_updated = matches!((s.lock, e.lock), (Some(a), Some(b)) if a != b);
        let access_revoked = s.path == ReadPath::Fast
            && e.path == ReadPath::Syscall(FallbackReason::Page(Fallback::NoUserAccess));
        evidence.page_updated |= page_updated;
        evidence.events[i] = EventEvidence {
            start: s.path,
            end: e.path,
            page_updated,
            overflowed: false,
            access_revoked,
        };
        let delta = e.value.wrapping_sub(s.value);
        let counted = match software_ids.get(i).copied().flatten() {
            Some(SW_CONTEXT_SWITCHES) => &mut evidence.counted_switches,
            Some(SW_CPU_MIGRATIONS) => &mut evidence.counted_migrations,
            _ => continue,
        };
        *counted = Some(counted.unwrap_or(0).max(delta));
    }
    let common = evidence.thread_hazards();
    for i in 0..n {
        let (s, e) = (&start[i], &end[i]);
        let mut hazards = common;
        for path in [s.path, e.path] {
            if let ReadPath::Syscall(reason) = path {
                hazards |= reason.hazards();
            }
        }
        if evidence.events[i].access_revoked {
            hazards |= Hazards::USER_ACCESS_REVOKED;
        }
        let enabled = e.time_enabled.wrapping_sub(s.time_enabled);
        let running = e.time_running.wrapping_sub(s.time_running);
        if enabled != running {
            hazards |= Hazards::MULTIPLEXED;
        }
        // Page times stand still between page updates: only read() gives the region's
        // own times at both edges.
        let times_known = matches!(
            (s.path, e.path),
            (ReadPath::Syscall(_), ReadPath::Syscall(_))
        );
        out[i] = Reading {
            value: e.value.wrapping_sub(s.value),
            hazards,
            time_enabled: times_known.then_some(enabled),
            time_running: times_known.then_some(running),
        };
    }
    evidence
}

/// The kernel-entry sentinel's count over a region from its samples at both edges
/// (both one-instruction reads through its page), or why it is unknown: a read that
/// was not one instruction at either edge ([`crate::sentinel::SentinelGap::NoRead`]), or page
/// times that advanced differently (multiplexed, [`crate::sentinel::SentinelGap::Multiplexed`]:
/// the page times change only when the kernel rewrites the page, as for the user's
/// events in [`evaluate_perf`]). Counts are 64-bit per thread (the kernel's `offset`
/// absorbs reschedules), so a rewritten page alone does not make the count unknown.
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
pub(crate) fn sentinel_count(
    start: &Sample,
    end: &Sample,
) -> Result<u64, crate::sentinel::SentinelGap> {
    for path in [start.path, end.path] {
        match path {
            ReadPath::Fast => {}
            ReadPath::Syscall(FallbackReason::Page(fallback)) => {
                return Err(crate::sentinel::SentinelGap::NoRead(fallback))
            }
            ReadPath::Syscall(FallbackReason::NoPage) | ReadPath::Direct => {
                return Err(crate::sentinel::SentinelGap::NoRead(Fallback::NoUserAccess))
            }
        }
    }
    let enabled = end.time_enabled.wrapping_sub(start.time_enabled);
    let running = end.time_running.wrapping_sub(start.time_running);
    if enabled != running {
        return Err(crate::sentinel::SentinelGap::Multiplexed);
    }
    Ok(end.value.wrapping_sub(start.value))
}

/// Puts the sentinel's verdict over a region into `evidence` and, when it counted,
/// [`Hazards::KERNEL_ENTRY`] on every reading of `out`; an unknown count leaves the
/// readings as they are (no claim either way) and says why in
/// [`Evidence::sentinel_gap`].
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
pub(crate) fn apply_sentinel(
    evidence: &mut Evidence,
    start: &Sample,
    end: &Sample,
    out: &mut [Reading],
) {
    match sentinel_count(start, end) {
        Ok(count) => {
            evidence.kernel_entries = Some(count);
            evidence.sentinel_gap = None;
            if count > 0 {
                flag_kernel_entry(out);
            }
        }
        Err(gap) => {
            evidence.kernel_entries = None;
            evidence.sentinel_gap = Some(gap);
        }
    }
}

/// Marks a region counted under exact emulation ([`Evidence::exact_emulation`]: the
/// session's events all qualify and every read at both edges passed at its first
/// try) and takes the hazards that change nothing there off every reading. Called
/// after [`evaluate_perf`] and [`apply_sentinel`], so the evidence keeps what the
/// detectors saw.
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
pub(crate) fn apply_exact_emulation(evidence: &mut Evidence, out: &mut [Reading]) {
    evidence.exact_emulation = true;
    for reading in out {
        reading.hazards -= super::evidence::UNDISTURBED_WHEN_EXACT;
    }
}

/// [`Hazards::KERNEL_ENTRY`] on every reading.
#[cold]
#[inline(never)]
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
pub(crate) fn flag_kernel_entry(out: &mut [Reading]) {
    for reading in out {
        reading.hazards |= Hazards::KERNEL_ENTRY;
    }
}

#[cfg(test)]
mod tests {
    use super::super::evidence::stamp;
    use super::*;
    use crate::sys::SwitchCounts;

    fn fast(value: u64, lock: u32, t: u64) -> Sample {
        Sample {
            value,
            time_enabled: t,
            time_running: t,
            lock: Some(lock),
            path: ReadPath::Fast,
        }
    }

    fn syscall(value: u64, lock: u32, enabled: u64, running: u64, fallback: Fallback) -> Sample {
        Sample {
            value,
            time_enabled: enabled,
            time_running: running,
            lock: Some(lock),
            path: ReadPath::Syscall(FallbackReason::Page(fallback)),
        }
    }

    /// A sentinel that moved flags the region, one that stood still or is absent does
    /// not: the rule of [`Hazards::KERNEL_ENTRY`] (the sentinel counts only at the
    /// kernel's level, so any count means the kernel ran).
    #[test]
    fn a_moved_sentinel_flags_kernel_entry() {
        let mut ev = Evidence::default();
        assert!(!ev.thread_hazards().contains(Hazards::KERNEL_ENTRY));
        ev.kernel_entries = Some(0);
        assert!(!ev.thread_hazards().contains(Hazards::KERNEL_ENTRY));
        ev.kernel_entries = Some(251);
        assert_eq!(ev.thread_hazards(), Hazards::KERNEL_ENTRY);
        assert!(ev.kernel_entered());
    }

    /// The perf sentinel's verdict from fake samples (the rules of [`apply_sentinel`]):
    /// a kernel-only counter that moved flags every reading and keeps the values; one
    /// that stood still gives `Some(0)` and no flag; a rewritten page with equal page
    /// times still gives the count (the kernel's 64-bit per-thread count, offset
    /// included); a read that was not one instruction, or page times that advanced
    /// differently (multiplexed), make the count unknown: `None`, the gap said, no
    /// claim on the readings.
    #[test]
    fn the_sentinel_verdict_from_its_samples() {
        let user = || {
            let mut out = [Reading::new(250), Reading::new(7)];
            let ev = evaluate_perf(
                &[fast(100, 4, 50), fast(3, 4, 50)],
                &[fast(350, 4, 50), fast(10, 4, 50)],
                &[None, None],
                stamp(0, 0, 0),
                stamp(0, 0, 0),
                &mut out,
            );
            (ev, out)
        };
        let (mut ev, mut out) = user();
        apply_sentinel(&mut ev, &fast(1000, 9, 50), &fast(1431, 9, 50), &mut out);
        assert_eq!(ev.kernel_entries, Some(431));
        assert_eq!(ev.sentinel_gap, None);
        for (reading, value) in out.iter().zip([250, 7]) {
            assert_eq!(reading.value, value, "the sentinel changed a user value");
            assert_eq!(reading.hazards, Hazards::KERNEL_ENTRY);
        }

        let (mut ev, mut out) = user();
        apply_sentinel(&mut ev, &fast(1000, 9, 50), &fast(1000, 9, 50), &mut out);
        assert_eq!((ev.kernel_entries, ev.sentinel_gap), (Some(0), None));
        assert_eq!(out, [Reading::new(250), Reading::new(7)]);

        let (mut ev, mut out) = user();
        apply_sentinel(&mut ev, &fast(1000, 9, 50), &fast(1800, 11, 90), &mut out);
        assert_eq!(ev.kernel_entries, Some(800));
        assert!(out.iter().all(|r| r.hazards == Hazards::KERNEL_ENTRY));

        let rotated_out = Sample {
            path: ReadPath::Syscall(FallbackReason::Page(Fallback::NotScheduled)),
            ..Sample::default()
        };
        let (mut ev, mut out) = user();
        apply_sentinel(&mut ev, &rotated_out, &fast(1000, 9, 50), &mut out);
        assert_eq!(ev.kernel_entries, None);
        assert_eq!(
            ev.sentinel_gap,
            Some(crate::sentinel::SentinelGap::NoRead(Fallback::NotScheduled))
        );
        assert!(!ev.thread_hazards().contains(Hazards::KERNEL_ENTRY));
        assert_eq!(out, [Reading::new(250), Reading::new(7)]);

        let (mut ev, mut out) = user();
        let multiplexed = Sample {
            time_running: 70,
            ..fast(1000, 11, 90)
        };
        apply_sentinel(&mut ev, &fast(1000, 9, 50), &multiplexed, &mut out);
        assert_eq!(
            (ev.kernel_entries, ev.sentinel_gap),
            (None, Some(crate::sentinel::SentinelGap::Multiplexed))
        );
        assert_eq!(out, [Reading::new(250), Reading::new(7)]);
    }

    /// Exact emulation (pmu-linux/src/machine/emulation.rs): a region switched out
    /// (a moved `lock`, getrusage's switches) with the kernel entered (the sentinel
    /// moved) keeps its values and its evidence, and loses exactly CONTEXT_SWITCH and
    /// KERNEL_ENTRY; what else it has (here a read() at the stop of an event off its
    /// counter: NOT_SCHEDULED, SYSCALL_FALLBACK) stays, and so does a migration.
    /// pmu-linux/examples/undisturbed.rs shows the values exact in the guest (`cargo
    /// xtask pmu-qemu`).
    #[test]
    fn exact_emulation_drops_switches_and_kernel_entries_only() {
        let mut out = [Reading::new(0), Reading::new(0)];
        let mut ev = evaluate_perf(
            &[fast(100, 4, 50), fast(3, 4, 50)],
            &[
                fast(350, 6, 90),
                syscall(10, 6, 90, 90, Fallback::NotScheduled),
            ],
            &[None, None],
            stamp(1, 2, 0),
            stamp(1, 5, 0),
            &mut out,
        );
        apply_sentinel(&mut ev, &fast(1000, 9, 50), &fast(1431, 9, 50), &mut out);
        assert!(out[0]
            .hazards
            .contains(Hazards::CONTEXT_SWITCH | Hazards::KERNEL_ENTRY));
        apply_exact_emulation(&mut ev, &mut out);
        assert!(ev.exact_emulation);
        assert_eq!(out[0], Reading::new(250));
        assert_eq!(
            (out[1].value, out[1].hazards),
            (7, Hazards::SYSCALL_FALLBACK | Hazards::NOT_SCHEDULED)
        );
        assert!(ev.context_switched() && ev.kernel_entered());
        assert_eq!(ev.kernel_entries, Some(431));
        assert_eq!(ev.thread_hazards(), Hazards::empty());
        // A migration is not among what exact emulation forgives (one CPU: it cannot
        // happen there, so one seen means the machine is not what it seemed).
        let mut out = [Reading::new(0)];
        let mut ev = evaluate_perf(
            &[fast(100, 4, 50)],
            &[fast(350, 6, 90)],
            &[None],
            stamp(1, 2, 0),
            stamp(1, 3, 1),
            &mut out,
        );
        apply_exact_emulation(&mut ev, &mut out);
        assert_eq!(ev.thread_hazards(), Hazards::CPU_MIGRATION);
    }

    #[test]
    fn a_quiet_fast_region_is_clean() {
        let mut out = [Reading::default(); 1];
        let ev = evaluate_perf(
            &[fast(100, 4, 50)],
            &[fast(350, 4, 50)],
            &[None],
            stamp(1, 2, 0),
            stamp(1, 2, 0),
            &mut out,
        );
        assert_eq!(out[0], Reading::new(250));
        assert!(!ev.context_switched() && !ev.migrated());
        assert_eq!(ev.events()[0].start, ReadPath::Fast);
    }

    /// The case that matters most: the thread was switched out and back, the value
    /// is still right (the kernel's offset absorbed it), getrusage is not consulted
    /// here (equal stamps), and the moved `lock` alone flags the region.
    #[test]
    fn a_moved_lock_alone_flags_a_context_switch() {
        let mut out = [Reading::default(); 1];
        let ev = evaluate_perf(
            &[fast(100, 4, 50)],
            &[fast(350, 6, 80)],
            &[None],
            stamp(1, 2, 0),
            stamp(1, 2, 0),
            &mut out,
        );
        assert_eq!(out[0].value, 250);
        assert_eq!(out[0].hazards, Hazards::CONTEXT_SWITCH);
        assert!(ev.page_updated && ev.events()[0].page_updated);
        assert_eq!(ev.switches.map(SwitchCounts::total), Some(0));
    }

    /// A syscall-free region's stamps (no getrusage, CPU from rseq): an unmoved lock and the
    /// same CPU are clean with `switches` None; a moved lock alone flags the switch;
    /// another CPU at the stop flags the migration.
    #[test]
    fn lean_stamps() {
        let lean = |cpu| ThreadStamp {
            switches: None,
            cpu: Some(cpu),
            cpu_from_rseq: true,
        };
        let mut out = [Reading::default(); 1];
        let ev = evaluate_perf(
            &[fast(100, 4, 50)],
            &[fast(350, 4, 50)],
            &[None],
            lean(1),
            lean(1),
            &mut out,
        );
        assert_eq!(out[0], Reading::new(250));
        assert_eq!((ev.switches, ev.cpu_from_rseq), (None, true));
        evaluate_perf(
            &[fast(100, 4, 50)],
            &[fast(350, 6, 50)],
            &[None],
            lean(1),
            lean(1),
            &mut out,
        );
        assert_eq!(out[0].hazards, Hazards::CONTEXT_SWITCH);
        let ev = evaluate_perf(
            &[fast(100, 4, 50)],
            &[fast(350, 8, 50)],
            &[None],
            lean(0),
            lean(1),
            &mut out,
        );
        assert_eq!(
            out[0].hazards,
            Hazards::CONTEXT_SWITCH | Hazards::CPU_MIGRATION
        );
        assert_eq!((ev.cpu_start, ev.cpu_end), (Some(0), Some(1)));
    }

    #[test]
    fn rusage_and_cpu_detectors() {
        let mut out = [Reading::default(); 1];
        let ev = evaluate_perf(
            &[fast(0, 2, 0)],
            &[fast(1, 2, 0)],
            &[None],
            stamp(1, 2, 0),
            stamp(1, 3, 1),
            &mut out,
        );
        assert_eq!(
            ev.switches,
            Some(SwitchCounts {
                voluntary: 0,
                involuntary: 1
            })
        );
        assert_eq!(
            out[0].hazards,
            Hazards::CONTEXT_SWITCH | Hazards::CPU_MIGRATION
        );
    }

    /// Software events through read(): index 0 → SYSCALL_FALLBACK | NOT_SCHEDULED on
    /// every event; a `context-switches` / `cpu-migrations` member that counted flags
    /// the whole region; read() times at both edges give the region's times.
    #[test]
    fn software_group_through_read() {
        let ns = Fallback::NotScheduled;
        let start = [
            syscall(1000, 2, 10, 10, ns),
            syscall(5, 2, 10, 10, ns),
            syscall(7, 2, 10, 10, ns),
        ];
        let end = [
            syscall(3000, 2, 30, 30, ns),
            syscall(6, 2, 30, 30, ns),
            syscall(8, 2, 30, 30, ns),
        ];
        let ids = [Some(1), Some(SW_CONTEXT_SWITCHES), Some(SW_CPU_MIGRATIONS)];
        let mut out = [Reading::default(); 3];
        let ev = evaluate_perf(&start, &end, &ids, stamp(0, 0, 1), stamp(0, 0, 1), &mut out);
        assert_eq!(
            (ev.counted_switches, ev.counted_migrations),
            (Some(1), Some(1))
        );
        let expected = Hazards::SYSCALL_FALLBACK
            | Hazards::NOT_SCHEDULED
            | Hazards::CONTEXT_SWITCH
            | Hazards::CPU_MIGRATION;
        for r in out {
            assert_eq!(r.hazards, expected);
            assert_eq!((r.time_enabled, r.time_running), (Some(20), Some(20)));
        }
        assert_eq!(out[0].value, 2000);
    }

    /// time_enabled and time_running advancing differently is multiplexing; the raw
    /// value is kept and the scaled one is there (perf's value * enabled / running).
    #[test]
    fn multiplexing() {
        let nu = Fallback::NoUserAccess;
        let mut out = [Reading::default(); 1];
        evaluate_perf(
            &[syscall(0, 2, 100, 100, nu)],
            &[syscall(500, 2, 300, 200, nu)],
            &[None],
            stamp(0, 0, 0),
            stamp(0, 0, 0),
            &mut out,
        );
        assert_eq!(
            out[0].hazards,
            Hazards::SYSCALL_FALLBACK | Hazards::MULTIPLEXED
        );
        assert_eq!((out[0].value, out[0].scaled()), (500, Some(1000)));
    }

    #[test]
    fn fast_then_no_user_access_is_revoked_access() {
        let mut out = [Reading::default(); 1];
        let ev = evaluate_perf(
            &[fast(0, 2, 5)],
            &[syscall(9, 2, 5, 5, Fallback::NoUserAccess)],
            &[None],
            stamp(0, 0, 0),
            stamp(0, 0, 0),
            &mut out,
        );
        assert!(ev.events()[0].access_revoked);
        assert_eq!(
            out[0].hazards,
            Hazards::USER_ACCESS_REVOKED | Hazards::SYSCALL_FALLBACK
        );
        assert_eq!(out[0].time_enabled, None, "page times are not region times");
    }
}
