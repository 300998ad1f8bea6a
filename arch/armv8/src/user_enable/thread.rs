//! The per-thread grant: EL0 access to the module's counters only while a granted
//! thread runs, and (with `follow`) the counters' values carried with that thread.
//!
//! The kernel glue calls these from the thread's context switches (preempt notifiers:
//! [`switch_in`] after perf's own sched-in work, [`switch_out`] after perf's sched-out
//! work), on the CPU, with interrupts off. The CPU-wide [`super::apply`] still
//! programs the counters at load; in per-thread mode [`withhold`] then takes the
//! CPU-wide grant straight back, so that between granted threads PMUSERENR_EL0 holds
//! only what others (perf) put there.
//!
//! No `isb` here: every path from these functions to EL0 code ends in an exception
//! return (the switch returns to the thread through `ERET`, Arm ARM D1.4 "Exception
//! return" is a context synchronization event), which makes the PMUSERENR_EL0,
//! PMUACR_EL1 and `PMEVCNTR<n>_EL0` writes visible to EL0 reads.

use super::{scoped_grant, write_scoped_pair, UserAccess, UserAccessRegisters, UEN};
use crate::registers::PmuserenrEl0;
use crate::version::PmuVersion;

/// One granted thread's state, kept by the glue for as long as the grant lasts
/// (C: `struct kmod_eu_thread`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadGrant {
    /// The counters granted (PMCNTENSET_EL0 bits): the ones that follow the thread.
    pub counters: u64,
    /// PMUSERENR_EL0 found at the last switch-in: what the switch-out puts back.
    pub saved_pmuserenr: u64,
    /// PMUACR_EL1 found then (a PMUv3p9 scoped grant; 0 otherwise).
    pub saved_pmuacr: u64,
    /// PMUSERENR_EL0 written at the last switch-in.
    pub granted_pmuserenr: u64,
    /// PMUACR_EL1 written then (0: not written).
    pub granted_pmuacr: u64,
    /// The counters' values at the last switch-out, by counter number.
    pub values: [u64; 31],
    /// The grant is on the CPU the thread runs on (switched in there).
    pub on_cpu: bool,
    /// `values` holds what the counters had at the last switch-out.
    pub saved: bool,
    /// The thread ran where the module's counters did not count for it ([`missed`]):
    /// no grant at switch-in until the thread asks again ([`regrant`], which says so).
    pub lost: bool,
    /// Padding (C: `reserved[5]`).
    pub reserved: [u8; 5],
}

impl ThreadGrant {
    /// A grant of `counters`, not yet on any CPU.
    pub const fn new(counters: u64) -> Self {
        Self {
            counters,
            saved_pmuserenr: 0,
            saved_pmuacr: 0,
            granted_pmuserenr: 0,
            granted_pmuacr: 0,
            values: [0; 31],
            on_cpu: false,
            saved: false,
            lost: false,
            reserved: [0; 5],
        }
    }
}

/// Whether the grant is scoped with UEN and PMUACR_EL1 on this CPU: PMUv3p9 without EN
/// (as in [`super::apply`]).
fn scoped<R: UserAccessRegisters>(regs: &R, access: UserAccess) -> bool {
    PmuVersion::from_id_aa64dfr0(regs.id_aa64dfr0()).is_at_least(PmuVersion::PmuV3p9)
        && !access.writes()
}

/// Grants with what PMUSERENR_EL0 (and PMUACR_EL1) hold now as the grant beside the
/// module's: saved for [`switch_out`].
fn grant_here<R: UserAccessRegisters>(regs: &R, grant: &mut ThreadGrant, access: UserAccess) {
    let found = regs.pmuserenr().get();
    let scoped = scoped(regs, access);
    let found_acr = if scoped { regs.pmuacr() } else { 0 };
    let (new, acr) = if scoped {
        scoped_grant(access, grant.counters, found, found_acr)
    } else {
        (found | access.bits(), None)
    };
    if let Some(acr) = acr {
        // Before UEN: PMUACR_EL1 names the counters the new PMUSERENR_EL0 opens.
        regs.set_pmuacr(acr);
    }
    regs.set_pmuserenr(PmuserenrEl0::new(new));
    grant.saved_pmuserenr = found;
    grant.saved_pmuacr = found_acr;
    grant.granted_pmuserenr = new;
    grant.granted_pmuacr = acr.unwrap_or(0);
    grant.on_cpu = true;
}

/// The thread is switched in on this CPU (which runs the module's counters): with
/// `follow`, its counters get back the values the last [`switch_out`] saved; then
/// PMUSERENR_EL0 = what it holds | the grant (on PMUv3p9 without EN: the scoped grant
/// of [`super::apply`] over the thread's counters). What it held is kept for the
/// switch-out. A thread whose counts were [`missed`] gets no grant: its next read
/// traps, and its [`regrant`] learns why.
pub fn switch_in<R: UserAccessRegisters>(
    regs: &R,
    grant: &mut ThreadGrant,
    access: UserAccess,
    follow: bool,
) {
    if grant.lost {
        return;
    }
    if follow && grant.saved {
        let values = &grant.values;
        for_each_counter(grant.counters, |n| {
            if let Some(&value) = values.get(usize::from(n)) {
                regs.set_pmevcntr(n, value);
            }
        });
    }
    grant_here(regs, grant, access);
}

/// The thread is switched out: with `follow`, its counters' values are saved; then
/// PMUSERENR_EL0 (and PMUACR_EL1) get back what the switch-in found, when they still
/// hold the grant; a value perf wrote meanwhile (its `armv8pmu_start()`) stays. Nothing
/// happens unless the grant is on this CPU.
pub fn switch_out<R: UserAccessRegisters>(regs: &R, grant: &mut ThreadGrant, follow: bool) {
    if !grant.on_cpu {
        return;
    }
    if follow {
        let values = &mut grant.values;
        for_each_counter(grant.counters, |n| {
            if let Some(value) = values.get_mut(usize::from(n)) {
                *value = regs.pmevcntr(n);
            }
        });
        grant.saved = true;
    }
    let found = regs.pmuserenr().get();
    if found == grant.granted_pmuserenr {
        if grant.granted_pmuacr != 0 {
            write_scoped_pair(regs, grant.saved_pmuserenr, grant.saved_pmuacr);
        } else {
            regs.set_pmuserenr(PmuserenrEl0::new(grant.saved_pmuserenr));
        }
    }
    grant.on_cpu = false;
}

/// The thread ran where the module's counters did not count for it: it was switched in
/// on a CPU without them (one that `cpus=` leaves out, where perf holds a layout
/// counter), or perf stopped the PMU under it (PMCR_EL0.E clear: the keeper evicted).
/// The glue calls this instead of [`switch_in`] there, or after [`switch_out`] when it
/// finds the PMU stopped. The instructions it ran there are in no counter: with
/// `follow` the next switch-in would write back values short of them, and a region
/// read across the gap would be short without a sign. So the thread gets no grant
/// anywhere until it asks again: its next read traps and [`regrant`] answers
/// [`Regranted::Lost`], which user space reports as a region not counted.
pub fn missed(grant: &mut ThreadGrant) {
    grant.lost = true;
    grant.saved = false;
}

/// What [`regrant`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Regranted {
    /// PMUSERENR_EL0 still held the grant: nothing written.
    Held,
    /// Someone (perf) had rewritten it: the grant is back, over what was found.
    Restored,
    /// The thread's counts were [`missed`] since its last grant: the grant is back
    /// from here on, and whatever the thread counted across the gap is short.
    Lost,
}

/// The thread, running on this CPU, asks for its grant back after perf rewrote
/// PMUSERENR_EL0 (`armv8pmu_start()` writes 0 on every overflow interrupt and
/// multiplexing rotation, drivers/perf/arm_pmuv3.c 6.12), or after its counts were
/// [`missed`]. The counters are not touched. What perf wrote becomes what the
/// switch-out puts back. The caller has checked that this CPU runs the module's
/// counters.
pub fn regrant<R: UserAccessRegisters>(
    regs: &R,
    grant: &mut ThreadGrant,
    access: UserAccess,
) -> Regranted {
    if grant.lost {
        grant.lost = false;
        grant_here(regs, grant, access);
        return Regranted::Lost;
    }
    if grant.on_cpu {
        let found = regs.pmuserenr().get();
        let acr_held = grant.granted_pmuacr == 0 || regs.pmuacr() == grant.granted_pmuacr;
        if found == grant.granted_pmuserenr && acr_held {
            return Regranted::Held;
        }
    }
    grant_here(regs, grant, access);
    Regranted::Restored
}

/// Per-thread mode, right after [`super::apply`] on this CPU: PMUSERENR_EL0 (and
/// PMUACR_EL1) get back the grant apply found beside the module's
/// (`applied.outside_*`), when they still hold what apply wrote. The counters keep
/// running; only a granted thread's [`switch_in`] opens them to EL0. Returns
/// PMUSERENR_EL0 as left.
pub fn withhold<R: UserAccessRegisters>(regs: &R, applied: &super::Applied) -> u64 {
    let found = regs.pmuserenr().get();
    if found != applied.new_pmuserenr {
        return found;
    }
    let outside = applied.outside_pmuserenr;
    if applied.new_pmuserenr & UEN != 0 {
        write_scoped_pair(regs, outside, applied.outside_pmuacr);
    } else {
        regs.set_pmuserenr(PmuserenrEl0::new(outside));
    }
    // As in `restore`: the CPU-wide grant is withdrawn before the glue
    // reports it, not only at the next exception return.
    regs.isb();
    outside
}

/// Calls `f` with each event counter number in `mask` (bits 0..=30).
fn for_each_counter(mask: u64, mut f: impl FnMut(u8)) {
    let mut rest = mask & 0x7fff_ffff;
    while rest != 0 {
        let n = rest.trailing_zeros() as u8;
        f(n);
        rest &= rest - 1;
    }
}

#[cfg(test)]
mod tests;
