//! The hybrid backend's rule: one event's reading over a region as the sum of its
//! counts on every core PMU, with the hazards each PMU's edges and the thread's CPU
//! and switches show (the list in `perf::HybridSession`'s documentation).

use std::fmt;

use pmu_core::mmap_page::{UserPage, MAX_RETRIES};
use pmu_core::Hazards;

use super::evidence::shared_hazards;

/// One PMU's event at one region edge.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct EdgeSample {
    /// The count then (0 when [`EdgeRead::Lost`]).
    pub value: u64,
    /// The page's `lock`, for page reads.
    pub lock: Option<u32>,
    /// How it was read.
    pub read: EdgeRead,
}

/// What a region saw besides the events' samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct EdgeFacts {
    /// The CPU before the first read, and whether a core PMU covers it.
    pub cpu_start: Option<u32>,
    /// The CPU after the last read (`None` when not looked up: a quiet region).
    pub cpu_end: Option<u32>,
    /// The thread's context switches from before the first read to after the last,
    /// where they were counted (regions read with `read()`).
    pub switches: Option<u64>,
    /// The thread was seen on a CPU no core PMU covers, or moved while such CPUs
    /// exist.
    pub maybe_uncounted: bool,
}

/// The reading of one event over a region: the sum over the PMUs of `end - start`
/// (wrapping: perf's counts are 64-bit), with the hazards the hybrid backend's documentation lists (`perf::HybridSession`).
/// `edges` holds one (start, end) pair per PMU.
pub(crate) fn sum_reading(
    edges: impl IntoIterator<Item = (EdgeSample, EdgeSample)>,
    facts: &EdgeFacts,
) -> pmu_core::Reading {
    let mut reading = pmu_core::Reading::new(0);
    let mut moved = false;
    for (s, e) in edges {
        reading.value = reading.value.wrapping_add(e.value.wrapping_sub(s.value));
        if matches!((s.lock, e.lock), (Some(a), Some(b)) if a != b) {
            moved = true;
        }
        for read in [s.read, e.read] {
            match read {
                EdgeRead::Syscall => reading.hazards |= Hazards::SYSCALL_FALLBACK,
                EdgeRead::Lost => reading.hazards |= Hazards::NOT_SCHEDULED,
                EdgeRead::Counter | EdgeRead::PageOffset => {}
            }
        }
    }
    let switched = moved || facts.switches.is_some_and(|n| n > 0);
    let migrated = matches!((facts.cpu_start, facts.cpu_end), (Some(a), Some(b)) if a != b);
    reading.hazards |= shared_hazards(migrated, switched, false);
    if facts.maybe_uncounted {
        reading.hazards |= Hazards::NOT_SCHEDULED;
    }
    reading
}

/// What one read of a page saw, without touching a counter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PageState {
    /// `lock`, the same before and after the loads.
    pub lock: u32,
    /// `index`: 0 when the event is on no counter of this CPU.
    pub index: u32,
    /// `offset`: the count itself when `index` is 0.
    pub offset: i64,
}

/// `lock`, `index` and `offset` of `page`, consistent under its seqlock (an odd or
/// moving `lock` is retried, at most [`MAX_RETRIES`] times: `None` after that).
#[inline(always)]
pub(crate) fn page_state<P: UserPage + ?Sized>(page: &P) -> Option<PageState> {
    for _ in 0..MAX_RETRIES {
        let lock = page.lock();
        page.order_loads();
        let index = page.index();
        let offset = page.offset();
        page.order_loads();
        if lock & 1 == 0 && page.lock() == lock {
            return Some(PageState {
                lock,
                index,
                offset,
            });
        }
    }
    None
}

/// How one PMU's event was read at one region edge.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum EdgeRead {
    /// Through its page with one counter read: it was on a counter of this CPU.
    #[default]
    Counter,
    /// From its page's `offset`: it was on no counter of this CPU (the thread was on
    /// another PMU's CPU), so it was not counting.
    PageOffset,
    /// With `read()`.
    Syscall,
    /// Its pinned group had lost its counters (`read()` returned 0 bytes): no value.
    Lost,
}

impl fmt::Display for EdgeRead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Counter => "counter",
            Self::PageOffset => "page-offset",
            Self::Syscall => "read",
            Self::Lost => "lost",
        })
    }
}

/// One PMU's part of a region's count of one event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PmuShare {
    /// The PMU.
    pub pmu: String,
    /// Its count over the region.
    pub count: u64,
    /// How its event was read at the start.
    pub start: EdgeRead,
    /// How its event was read at the stop.
    pub stop: EdgeRead,
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    fn sample(value: u64, lock: u32, read: EdgeRead) -> EdgeSample {
        EdgeSample {
            value,
            lock: Some(lock),
            read,
        }
    }

    #[test]
    fn a_quiet_region_on_one_cluster() {
        // Thread on the a53 cluster: its event on a counter, the a72's page at its
        // offset; no lock moved.
        let start = [
            sample(100, 4, EdgeRead::Counter),
            sample(77, 10, EdgeRead::PageOffset),
        ];
        let end = [
            sample(2100, 4, EdgeRead::Counter),
            sample(77, 10, EdgeRead::PageOffset),
        ];
        let facts = EdgeFacts {
            cpu_start: Some(0),
            ..EdgeFacts::default()
        };
        let reading = sum_reading(start.into_iter().zip(end), &facts);
        assert_eq!((reading.value, reading.hazards), (2000, Hazards::empty()));
        assert_eq!((reading.time_enabled, reading.time_running), (None, None));
    }

    #[test]
    fn a_migration_between_clusters_is_counted_in_full() {
        // 1000 on the a53 cluster, then 1000 on the a72 one: both pages rewritten
        // (armpmu_del on one, armpmu_add on the other).
        let start = [
            sample(100, 4, EdgeRead::Counter),
            sample(77, 10, EdgeRead::PageOffset),
        ];
        let end = [
            sample(1100, 6, EdgeRead::PageOffset),
            sample(1077, 12, EdgeRead::Counter),
        ];
        let facts = EdgeFacts {
            cpu_start: Some(1),
            cpu_end: Some(2),
            ..EdgeFacts::default()
        };
        let reading = sum_reading(start.into_iter().zip(end), &facts);
        assert_eq!(reading.value, 2000);
        assert_eq!(
            reading.hazards,
            Hazards::CONTEXT_SWITCH | Hazards::CPU_MIGRATION
        );
        assert!(!reading.hazards.contains(Hazards::NOT_SCHEDULED));
    }

    #[test]
    fn lost_counters_and_uncovered_cpus_are_hazards() {
        let start = [
            EdgeSample {
                value: 5,
                lock: None,
                read: EdgeRead::Syscall,
            },
            EdgeSample {
                value: 9,
                lock: None,
                read: EdgeRead::Syscall,
            },
        ];
        let mut end = start;
        end[0].value = 1005;
        end[1] = EdgeSample {
            value: 0,
            lock: None,
            read: EdgeRead::Lost,
        };
        let facts = EdgeFacts {
            cpu_start: Some(2),
            cpu_end: Some(2),
            switches: Some(0),
            maybe_uncounted: false,
        };
        let reading = sum_reading(start.into_iter().zip(end), &facts);
        assert!(reading
            .hazards
            .contains(Hazards::NOT_SCHEDULED | Hazards::SYSCALL_FALLBACK));
        let quiet_syscall = sum_reading(start.into_iter().zip(start), &facts);
        assert_eq!(quiet_syscall.hazards, Hazards::SYSCALL_FALLBACK);
        let uncovered = EdgeFacts {
            maybe_uncounted: true,
            switches: Some(1),
            ..facts
        };
        assert_eq!(
            sum_reading(start.into_iter().zip(start), &uncovered).hazards,
            Hazards::SYSCALL_FALLBACK | Hazards::NOT_SCHEDULED | Hazards::CONTEXT_SWITCH
        );
    }

    #[test]
    fn counts_wrap_as_64_bit_values() {
        let start = [sample(u64::MAX - 9, 2, EdgeRead::Counter)];
        let end = [sample(10, 2, EdgeRead::Counter)];
        assert_eq!(
            sum_reading(start.into_iter().zip(end), &EdgeFacts::default()).value,
            20
        );
    }

    /// A page another writer may be in the middle of updating.
    struct FakePage {
        lock: Cell<u32>,
        index: u32,
        offset: i64,
        /// Lock values handed out by the first loads (a writer at work).
        script: Cell<&'static [u32]>,
    }

    impl UserPage for FakePage {
        fn lock(&self) -> u32 {
            match self.script.get().split_first() {
                Some((&first, rest)) => {
                    self.script.set(rest);
                    first
                }
                None => self.lock.get(),
            }
        }
        fn index(&self) -> u32 {
            self.index
        }
        fn offset(&self) -> i64 {
            self.offset
        }
        fn pmc_width(&self) -> u16 {
            32
        }
        fn cap_user_rdpmc(&self) -> bool {
            true
        }
        fn time_enabled(&self) -> u64 {
            0
        }
        fn time_running(&self) -> u64 {
            0
        }
    }

    #[test]
    fn page_state_is_consistent() {
        // include/uapi/linux/perf_event.h: retry while `lock` is odd or moved.
        let page = FakePage {
            lock: Cell::new(8),
            index: 0,
            offset: 2054,
            script: Cell::new(&[5, 6, 7, 6, 8]),
        };
        // 5: odd; 6 then 7: moved; 6 then 8: moved; then 8, 8.
        assert_eq!(
            page_state(&page),
            Some(PageState {
                lock: 8,
                index: 0,
                offset: 2054
            })
        );
        let stuck = FakePage {
            lock: Cell::new(3),
            index: 1,
            offset: 0,
            script: Cell::new(&[]),
        };
        assert_eq!(page_state(&stuck), None);
    }
}
