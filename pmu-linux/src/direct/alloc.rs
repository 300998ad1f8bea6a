//! Counters for event names: handles of a [`CounterPool`] (borrowed from it), or an
//! [`OwnedCounters`] set that owns its PMU.

use pmu_core::{Counter, CounterPool, CounterWidth, Event, Pmu, PrivilegeFilter, Slot};

use super::region::CounterSet;
use crate::error::{Error, Result};
use crate::machine::events;
use crate::MAX_EVENTS;

rig_pub! {
    /// Counters of a `CounterPool` for `names` (generic names or `r<hex>`, see
    /// [`crate::Event`]'s names), counting in `filter`'s levels, not yet started.
    ///
    /// # Errors
    /// Name errors; pmu-core's allocation errors (no free counter, event not implemented,
    /// filter unsupported: the ARM1176 only counts [`PrivilegeFilter::ALL`]).
    pub fn allocate<'p, P: Pmu>(
        pool: &'p CounterPool<P>,
        names: &[&str],
        filter: PrivilegeFilter,
    ) -> Result<Vec<Counter<'p, P>>> {
        if names.len() > MAX_EVENTS {
            return Err(Error::Group(crate::error::GroupError::TooMany {
                given: names.len(),
                max: MAX_EVENTS,
            }));
        }
        // The running core's names are looked up on the CPU this thread runs on now, once.
        let sysfs = crate::machine::sysfs::Sysfs::system();
        let cpu = crate::machine::sched::current_cpu();
        names
            .iter()
            .map(|name| {
                let event = events::direct_event_on(name, &sysfs, cpu)?;
                Ok(pool.counter(event, filter)?)
            })
            .collect()
    }
}

/// Counters programmed on a PMU this value owns: what [`allocate`] hands out, without
/// the borrow of a pool, so that a meter over them can live in a struct. Dropping it
/// stops every counter and clears its overflow flag, as dropping the handles does.
#[derive(Debug)]
pub struct OwnedCounters<P: Pmu> {
    pmu: P,
    slots: Vec<(Slot, CounterWidth)>,
    release_on_drop: bool,
}

impl<P: Pmu> OwnedCounters<P> {
    /// One counter per `(event, slot)`: on `slot` where given (the module's layout
    /// under the read-only grant), else where [`CounterPool::counter`] puts it;
    /// counting in `filter`'s levels, stopped.
    ///
    /// # Errors
    /// [`crate::error::GroupError::NoEvents`], [`crate::error::GroupError::TooMany`]; pmu-core's allocation errors.
    pub fn allocate(
        pmu: P,
        wanted: &[(Event, Option<Slot>)],
        filter: PrivilegeFilter,
    ) -> Result<Self> {
        if wanted.is_empty() {
            return Err(Error::Group(crate::error::GroupError::NoEvents));
        }
        if wanted.len() > MAX_EVENTS {
            return Err(Error::Group(crate::error::GroupError::TooMany {
                given: wanted.len(),
                max: MAX_EVENTS,
            }));
        }
        let mut slots = Vec::with_capacity(wanted.len());
        {
            // A pool over a borrow of the PMU checks and claims the slots (pmu-core's
            // allocation rules: fixed counters first, implemented events only).
            let pool = CounterPool::new(&pmu);
            let mut handles = Vec::with_capacity(wanted.len());
            for &(event, slot) in wanted {
                handles.push(match slot {
                    Some(slot) => pool.counter_at(slot, event, filter)?,
                    None => pool.counter(event, filter)?,
                });
            }
            for handle in handles {
                slots.push((handle.slot(), handle.width()));
                // The handle's drop would stop the counter it just programmed; this
                // set stops it in its own drop instead.
                std::mem::forget(handle);
            }
        }
        Ok(Self {
            pmu,
            slots,
            release_on_drop: true,
        })
    }

    /// As [`OwnedCounters::allocate`], then one more counter for `extra` (the first of
    /// its `(event, filter)` candidates that gets a counter: the backend's kernel-entry
    /// sentinel) after the others. An `extra` that gets none is not an error: the
    /// second value says why (the last candidate's error), and the set has only the
    /// `wanted` counters.
    ///
    /// # Errors
    /// As [`OwnedCounters::allocate`], for `wanted`.
    pub fn allocate_with_extra(
        pmu: P,
        wanted: &[(Event, Option<Slot>)],
        filter: PrivilegeFilter,
        extra: &[(Event, PrivilegeFilter)],
    ) -> Result<(Self, Option<Error>)> {
        if wanted.is_empty() {
            return Err(Error::Group(crate::error::GroupError::NoEvents));
        }
        if wanted.len() > MAX_EVENTS {
            return Err(Error::Group(crate::error::GroupError::TooMany {
                given: wanted.len(),
                max: MAX_EVENTS,
            }));
        }
        let mut slots = Vec::with_capacity(wanted.len() + 1);
        let mut extra_error = None;
        {
            let pool = CounterPool::new(&pmu);
            let mut handles = Vec::with_capacity(wanted.len() + 1);
            for &(event, slot) in wanted {
                handles.push(match slot {
                    Some(slot) => pool.counter_at(slot, event, filter)?,
                    None => pool.counter(event, filter)?,
                });
            }
            for &(event, extra_filter) in extra {
                match pool.counter(event, extra_filter) {
                    Ok(handle) => {
                        handles.push(handle);
                        extra_error = None;
                        break;
                    }
                    Err(e) => extra_error = Some(Error::from(e)),
                }
            }
            for handle in handles {
                slots.push((handle.slot(), handle.width()));
                // Stopped in this set's drop instead (see `allocate`).
                std::mem::forget(handle);
            }
        }
        Ok((
            Self {
                pmu,
                slots,
                release_on_drop: true,
            },
            extra_error,
        ))
    }

    /// The PMU underneath.
    pub fn pmu(&self) -> &P {
        &self.pmu
    }

    /// The slot of each counter, in allocation order.
    pub fn slots(&self) -> impl ExactSizeIterator<Item = Slot> + '_ {
        self.slots.iter().map(|&(slot, _)| slot)
    }
}

impl<P: Pmu> CounterSet for OwnedCounters<P> {
    fn len(&self) -> usize {
        self.slots.len()
    }
    fn width(&self, i: usize) -> CounterWidth {
        self.slots[i].1
    }
    fn start(&self, i: usize) {
        self.pmu.enable(self.slots[i].0)
    }
    fn stop(&self, i: usize) {
        self.pmu.disable(self.slots[i].0)
    }
    fn preset_before_wrap(&self, i: usize, distance: u64) {
        let (slot, width) = self.slots[i];
        self.pmu
            .write(slot, width.truncate(distance.wrapping_neg()))
    }
    fn leave_programmed(&mut self) {
        self.release_on_drop = false;
    }
}

impl<P: Pmu> Drop for OwnedCounters<P> {
    fn drop(&mut self) {
        if !self.release_on_drop {
            return;
        }
        for &(slot, _) in &self.slots {
            self.pmu.disable(slot);
            self.pmu.clear_overflow(slot);
        }
    }
}
