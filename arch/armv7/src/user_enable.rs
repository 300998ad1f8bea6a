//! Granting PL0 access to the AArch32 PMU on one CPU, and taking it back: the per-CPU
//! work a kernel module for 32-bit ARM kernels runs (Raspberry Pi OS armhf on a Pi 2,
//! or on a Pi 3/4/5 with `kernel7.img` / `kernel7l.img`).
//!
//! The pure parts that mean the same in AArch32 — the `events` parameter
//! ([`ModuleEvents`]), where the module's counters go ([`Layout`]: event i on counter
//! N-1-i, the cycle counter as bit 31), the log words — are `pmu_armv8::user_enable`'s,
//! reused. This module adds the AArch32 register interface
//! ([`UserAccessRegisters`]), the grant rules per PMU version, [`apply`] and
//! [`restore`].
//!
//! # The grant, and why PMUv2 refuses by default
//!
//! 32-bit Linux never grants user access to the PMU (drivers/perf/arm_v7_pmu.c,
//! 6.12, never writes PMUSERENR), so whatever the module grants is the only way in.
//!
//! - **PMUv3 seen from AArch32** (Cortex-A53/A72/A76 under a 32-bit kernel) has
//!   PMUSERENR.ER and CR: the default grant is ER | CR, read-only, as on arm64. PL0
//!   reads counters the module programs itself, filtered to PL0 (PMXEVTYPER.P = 1: not
//!   in PL1 modes; NSH = 0: not in Hyp mode).
//! - **ARMv7 PMUv2** (Cortex-A7 on the Pi 2, Cortex-A15) has PMUSERENR.EN alone (DDI
//!   0406C C12). EN lets PL0 *write* every PMU register but PMUSERENR and
//!   PMINTEN*: program counters to count in PL1 (a side channel into the kernel), stop
//!   or reset perf's counters, clear their overflow flags. No read-only grant exists,
//!   so [`apply`] refuses ([`ApplyError::NoReadOnlyGrant`]) unless the user gave the
//!   explicit write opt-in `el0_programming=1` (the parameter keeps the arm64 name).
//!   With it, the module still programs its counters and PL0 should only read them;
//!   the hardware cannot enforce that.
//!
//! # Next to perf
//!
//! As on arm64: [`apply`] never resets an enabled counter (no PMCR.P/C), zeroes only
//! idle counters, refuses ([`ApplyError::CounterInUse`]) when a layout counter counts
//! something the module did not program, and [`restore`] releases only counters that
//! still count what the module programmed. PMUSERENR is restored to 0, what 32-bit
//! Linux holds (it never grants).
//!
//! Sources: ARMv7-A/R ARM (DDI 0406C) C12 "PMUSERENR", C12 "PMXEVTYPER",
//! C12 "PMCR"; Arm ARM (DDI 0487) G8 "PMUSERENR", "PMCCFILTR"; Linux 6.12
//! drivers/perf/arm_v7_pmu.c (`armv7pmu_get_event_idx` allocates counters from
//! the lowest up, so the top of the counter space is reached last).

pub use pmu_armv8::user_enable::{
    access_names, grant_words, EventsError, Layout, ModuleEvents, TooFewCounters, CYCLE_COUNTER,
    MAX_MODULE_EVENTS,
};
use pmu_armv8::EventNumber;

use crate::pmu::PmuRegisters;
use crate::registers::pmselr::CYCLE_COUNTER_FILTER;
use crate::registers::{
    PerfMon, Pmccfiltr, Pmcntenclr, Pmcntenset, Pmuserenr, Pmxevtyper, PMCR, PMUSERENR, PMXEVTYPER,
};

/// The PMUSERENR bits a user may ask for: EN | SW | CR | ER.
pub const USER_ACCESS_BITS: u32 = 0xF;
/// PMUSERENR.EN.
pub const EN: u32 = 1;
/// The default request: ER | CR, read-only (granted only where PMUv3 has it).
pub const DEFAULT_USER_ACCESS: u32 = 0b1100;

/// PMXEVTYPER/PMCCFILTR.P: not in PL1 modes. With U = 0 and NSH = 0, PL0 only.
const FILTER_PL0_ONLY: u32 = 1 << 31;

/// The register accesses [`apply`] and [`restore`] need on one CPU, beyond
/// [`PmuRegisters`]: ID_DFR0, PMUSERENR and the barrier.
pub trait UserAccessRegisters: PmuRegisters {
    /// ID_DFR0 (PerfMon, bits 27:24).
    fn id_dfr0(&self) -> u32;
    /// PMUSERENR.
    fn pmuserenr(&self) -> Pmuserenr;
    /// Writes PMUSERENR (no barrier).
    fn set_pmuserenr(&self, value: Pmuserenr);
    /// A context synchronization event (`isb`).
    fn isb(&self);
}

/// A checked `user_access` request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserAccess(u32);

/// Why a `user_access` value was refused (`-EINVAL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UserAccessError {
    /// 0 grants nothing.
    Empty,
    /// A bit outside EN=1 | SW=2 | CR=4 | ER=8.
    UnknownBits {
        /// The value asked for.
        requested: u32,
    },
    /// EN asked for through `user_access`: write access only through
    /// `el0_programming=1`.
    WriteAccessNeedsOptIn,
}

impl UserAccess {
    /// Checks the module parameters: `bits` a subset of SW | CR | ER; EN only through
    /// `el0_programming`, which adds it.
    ///
    /// # Errors
    /// [`UserAccessError`] says which rule is broken.
    pub const fn new(bits: u32, el0_programming: bool) -> Result<Self, UserAccessError> {
        if bits & !USER_ACCESS_BITS != 0 {
            Err(UserAccessError::UnknownBits { requested: bits })
        } else if bits & EN != 0 {
            Err(UserAccessError::WriteAccessNeedsOptIn)
        } else if bits == 0 && !el0_programming {
            Err(UserAccessError::Empty)
        } else if el0_programming {
            Ok(Self(bits | EN))
        } else {
            Ok(Self(bits))
        }
    }

    /// The raw bits asked for.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Whether PL0 may program the PMU (EN).
    pub const fn writes(self) -> bool {
        self.0 & EN != 0
    }

    /// The PMUSERENR value to write on a CPU with `perfmon`: the bits asked for on
    /// PMUv3; EN alone on PMUv2 (bits 31:1 are UNK/SBZP there, and EN includes reads).
    pub fn pmuserenr_for(self, perfmon: PerfMon) -> Pmuserenr {
        if perfmon.has_read_only_grant() {
            Pmuserenr::new(self.0)
        } else {
            Pmuserenr::new(self.0 & EN)
        }
    }
}

/// What to do on each CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// The PMUSERENR bits to grant.
    pub user_access: UserAccess,
    /// The counters to program for PL0.
    pub layout: Layout,
}

/// Why [`apply`] gave no grant on this CPU. Nothing was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApplyError {
    /// No PMUv2 or PMUv3 (PMUv1 cannot filter to PL0; 0/0xF: no PMU) (`-ENODEV`).
    NoUsablePmu {
        /// ID_DFR0.PerfMon.
        perfmon: PerfMon,
    },
    /// PMUv2 has PMUSERENR.EN only: a grant is write access, and `el0_programming=1`
    /// was not given (`-EOPNOTSUPP` in the module: no read-only grant on this PMU).
    /// Load with `el0_programming=1` to accept that PL0 can program (and stop) every
    /// counter and count in PL1.
    NoReadOnlyGrant {
        /// ID_DFR0.PerfMon.
        perfmon: PerfMon,
    },
    /// This CPU has fewer event counters than the layout (`-ENODEV`).
    TooFewCounters(TooFewCounters),
    /// An event of the layout does not fit PMXEVTYPER.evtCount here (8 bits on PMUv2,
    /// 10 on PMUv3) (`-EINVAL`).
    EventOutOfRange {
        /// The event number.
        event: u16,
    },
    /// An event of the layout is a common event PMCEID0/1 says is not implemented
    /// (`-EOPNOTSUPP`).
    EventNotImplemented {
        /// The event number.
        event: u16,
    },
    /// A counter of the layout is enabled and counts something the module did not
    /// program: perf uses it (`-EBUSY`).
    CounterInUse {
        /// The counter ([`CYCLE_COUNTER`] for the cycle counter).
        counter: u8,
        /// Its PMXEVTYPER (PMCCFILTR for the cycle counter).
        config: u32,
    },
}

/// What [`apply`] found and wrote on one CPU (raw values, for a C struct).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// ID_DFR0.PerfMon.
    pub perfmon: u8,
    /// PMUSERENR found by this apply.
    pub found_pmuserenr: u32,
    /// PMUSERENR written.
    pub new_pmuserenr: u32,
    /// PMCNTENSET bits of the module's counters.
    pub owned: u32,
    /// PMCNTENSET bits of the counters zeroed (every idle one).
    pub zeroed: u32,
    /// PMCNTENSET bits of the module's counters found still counting (re-grant).
    pub kept: u32,
    /// Whether the module turned PMCR.E on.
    pub enabled_pmu: bool,
}

/// The PMXEVTYPER the module writes for `event`: counted in PL0 only.
pub const fn event_config(event: u16) -> u32 {
    FILTER_PL0_ONLY | event as u32
}

/// PMCCFILTR for "count cycles in PL0 only" (P = 1, U = 0, NSH = 0).
pub fn pmccfiltr_pl0_only() -> Pmccfiltr {
    let mut value = Pmccfiltr::new(0);
    value.write(PMXEVTYPER::P::SET);
    value
}

fn sel_of(counter: u8) -> u8 {
    if counter == CYCLE_COUNTER {
        CYCLE_COUNTER_FILTER as u8
    } else {
        counter
    }
}

fn expected_config(counter: u8, event: u16) -> u32 {
    if counter == CYCLE_COUNTER {
        pmccfiltr_pl0_only().get()
    } else {
        event_config(event)
    }
}

/// Grants PL0 the access `request` names on this CPU, programming the layout's
/// counters. `previous` is the last apply's result on this CPU, for a re-grant.
///
/// Checks first (nothing written when one fails): a PMUv2 or PMUv3; on PMUv2, the
/// write opt-in; N holds the layout; every event fits evtCount and, if common, is in
/// PMCEID0/1; every enabled layout counter counts exactly what the module programs.
/// Then: idle counters zeroed, the layout's idle counters programmed and enabled in
/// one PMCNTENSET write, PMCR.E set (P, C, LC left 0), PMUSERENR written, `isb`.
///
/// # Errors
/// [`ApplyError`]: which check failed.
pub fn apply<R: UserAccessRegisters>(
    regs: &R,
    request: Request,
    previous: Option<&Applied>,
) -> Result<Applied, ApplyError> {
    let perfmon = PerfMon::from_id_dfr0(regs.id_dfr0());
    if !perfmon.has_filtering() {
        return Err(ApplyError::NoUsablePmu { perfmon });
    }
    if !perfmon.has_read_only_grant() && !request.user_access.writes() {
        return Err(ApplyError::NoReadOnlyGrant { perfmon });
    }
    let layout = request.layout;
    let pmcr = regs.pmcr();
    let have = pmcr.read(PMCR::N) as u8;
    if have < layout.event_counters() {
        return Err(ApplyError::TooFewCounters(TooFewCounters {
            needed: layout.event_counters(),
            have,
        }));
    }
    let max_event: u16 = match perfmon {
        PerfMon::PmuV3(v) if v.has_16bit_event_numbers() => u16::MAX,
        PerfMon::PmuV3(_) => EventNumber::MAX_PMUV3,
        _ => 0xFF,
    };
    let implemented = regs
        .pmceid()
        .map(|(lo, hi)| pmu_armv8::ImplementedEvents::new(u64::from(lo), u64::from(hi)));
    for &event in layout.events().as_slice() {
        if event > max_event {
            return Err(ApplyError::EventOutOfRange { event });
        }
        if implemented.and_then(|i| i.contains(EventNumber::new(event))) == Some(false) {
            return Err(ApplyError::EventNotImplemented { event });
        }
    }
    let found_pmuserenr = regs.pmuserenr();
    let enabled = regs.pmcntenset().get();
    let mut kept = 0u32;
    for (counter, event) in layout.assignments() {
        let bit = 1u32 << counter;
        if enabled & bit == 0 {
            continue;
        }
        let config = regs.pmxevtyper(sel_of(counter)).get();
        if config != expected_config(counter, event) {
            return Err(ApplyError::CounterInUse { counter, config });
        }
        kept |= bit;
    }

    // Zero every idle counter: the next owner, PL0 included, starts from 0.
    let mut zeroed = 0u32;
    for n in 0..have {
        if enabled & (1 << n) == 0 {
            regs.set_pmxevcntr(n, 0);
            zeroed |= 1 << n;
        }
    }
    let cycle_bit = 1u32 << CYCLE_COUNTER;
    if enabled & cycle_bit == 0 {
        regs.set_pmccntr(0);
        zeroed |= cycle_bit;
    }
    let mask = layout.mask() as u32;
    let start = mask & !kept;
    for (counter, event) in layout.assignments() {
        if start & (1 << counter) != 0 {
            regs.set_pmxevtyper(
                sel_of(counter),
                Pmxevtyper::new(expected_config(counter, event)),
            );
        }
    }
    if start != 0 {
        regs.set_pmcntenset(Pmcntenset::new(start));
    }
    let mut new_pmcr = pmcr;
    if mask != 0 {
        new_pmcr.modify(PMCR::E::SET);
    }
    // P and C stay 0: they would reset perf's counters too. LC stays as found.
    new_pmcr.modify(PMCR::P::CLEAR + PMCR::C::CLEAR);
    let enabled_pmu = !pmcr.is_set(PMCR::E) && new_pmcr.is_set(PMCR::E);
    if new_pmcr.get() != pmcr.get() {
        // Synchronizes: the counters run before PL0 gets access.
        regs.set_pmcr(new_pmcr);
    }
    let new_pmuserenr = request.user_access.pmuserenr_for(perfmon);
    regs.set_pmuserenr(new_pmuserenr);
    // The exception return to PL0 synchronizes too; the barrier makes the grant
    // complete before the caller reports it.
    regs.isb();
    Ok(Applied {
        perfmon: perfmon.raw(),
        found_pmuserenr: found_pmuserenr.get(),
        new_pmuserenr: new_pmuserenr.get(),
        owned: mask,
        zeroed,
        kept,
        enabled_pmu: enabled_pmu || previous.is_some_and(|p| p.enabled_pmu),
    })
}

/// What [`restore`] found and did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Restored {
    /// PMUSERENR just before.
    pub found_pmuserenr: u32,
    /// PMUSERENR written (0), or `found_pmuserenr` when someone else rewrote it.
    pub new_pmuserenr: u32,
    /// The module's counters disabled and zeroed.
    pub released: u32,
    /// The module's counters that count something else now: left alone.
    pub taken: u32,
}

/// Takes back what [`apply`] did on this CPU: PMUSERENR to 0 (what 32-bit Linux
/// holds) if it still holds the module's grant, then each of the module's counters that
/// still counts what the module programmed is disabled and zeroed; PMCR.E back off only
/// when the module turned it on and nothing else is enabled.
pub fn restore<R: UserAccessRegisters>(regs: &R, applied: &Applied, layout: &Layout) -> Restored {
    let found = regs.pmuserenr();
    let new_pmuserenr = if found.get() == applied.new_pmuserenr {
        regs.set_pmuserenr(Pmuserenr::new(0));
        // Revoke before anything else changes: no PL0 instruction may run with access
        // to counters that are being released.
        regs.isb();
        0
    } else {
        found.get()
    };
    let enabled = regs.pmcntenset().get();
    let mut released = 0u32;
    let mut taken = 0u32;
    for (counter, event) in layout.assignments() {
        let bit = 1u32 << counter;
        if applied.owned & bit == 0 || enabled & bit == 0 {
            continue;
        }
        if regs.pmxevtyper(sel_of(counter)).get() == expected_config(counter, event) {
            released |= bit;
        } else {
            taken |= bit;
        }
    }
    if released != 0 {
        regs.set_pmcntenclr(Pmcntenclr::new(released));
        for (counter, _) in layout.assignments() {
            if released & (1 << counter) == 0 {
                continue;
            }
            if counter == CYCLE_COUNTER {
                regs.set_pmccntr(0);
            } else {
                regs.set_pmxevcntr(counter, 0);
            }
        }
    }
    if applied.enabled_pmu && enabled & !released == 0 {
        let mut pmcr = regs.pmcr();
        if pmcr.is_set(PMCR::E) {
            pmcr.modify(PMCR::E::CLEAR + PMCR::P::CLEAR + PMCR::C::CLEAR);
            regs.set_pmcr(pmcr);
        }
    }
    Restored {
        found_pmuserenr: found.get(),
        new_pmuserenr,
        released,
        taken,
    }
}

/// Whether `value` lets PL0 write the PMU (EN).
pub fn grants_writes(value: Pmuserenr) -> bool {
    value.is_set(PMUSERENR::EN)
}

#[cfg(test)]
mod tests;
