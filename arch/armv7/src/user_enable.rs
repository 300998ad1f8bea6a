//! Granting PL0 access to the AArch32 PMU on one CPU, and taking it back: the per-CPU
//! work a kernel module for 32-bit ARM kernels runs (Raspberry Pi OS armhf on a Pi 2,
//! or on a Pi 3/4/5 with `kernel7.img` / `kernel7l.img`).
//!
//! The pure parts that mean the same in AArch32 — the `events` parameter
//! ([`ModuleEvents`]), where the module's counters go ([`Layout`]: event i on counter
//! N-1-i, then CPU_CYCLES on the event counter below them), the log words — and the
//! ownership rule itself ([`take_layout_counters`], [`release_layout_counters`],
//! [`perf_holds`]) are `pmu_armv8::user_enable`'s, reused: this module adds the AArch32
//! register interface ([`UserAccessRegisters`], and [`LayoutCounters`] over it), the
//! grant rules per PMU version, [`apply`] and [`restore`].
//!
//! # The grant, and why PMUv2 refuses by default
//!
//! 32-bit Linux never grants user access to the PMU (drivers/perf/arm_v7_pmu.c and the
//! 32-bit build of drivers/perf/arm_pmuv3.c, Linux 6.12 and 7.3, never write PMUSERENR),
//! so whatever the module grants is the only way in.
//!
//! - **PMUv3 seen from AArch32** (Cortex-A53/A72/A76 under a 32-bit kernel) has
//!   PMUSERENR.ER and CR: the default grant is ER, read-only, as on arm64 (CR would
//!   only open perf's cycle counter: the module never uses PMCCNTR). PL0 reads counters
//!   the module programs itself, filtered to PL0 (PMXEVTYPER.P = 1: not in PL1 modes;
//!   NSH = 0: not in Hyp mode).
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
//! The same mechanism as arm64: which counters are perf's is perf's own bookkeeping.
//! The kernel glue takes the layout's event counters out of the counters perf may
//! allocate (`struct arm_pmu`'s `cntr_mask`, or `num_events` before Linux 6.12) and
//! passes perf's per-CPU `used_mask` as PMCNTENSET bits. A layout counter perf holds is
//! [`ApplyError::CounterInUse`], nothing written; [`apply`] keeps only counters the
//! module programmed itself and never touches a counter outside its layout (no idle
//! counter is zeroed: a throttled perf event is idle and still perf's); [`restore`]
//! releases only the module's counters perf does not hold, and leaves PMCR.E to perf
//! (`armv7pmu_stop()` clears it when perf's last event leaves; the glue's keeper event
//! keeps perf's `used_mask` non-empty, so `armpmu_enable()` restarts the PMU after
//! every stop). CPU_CYCLES runs on an event counter, never on PMCCNTR, which perf's
//! `armv7pmu_get_event_idx` gives every cycles event first. PMUSERENR is restored to
//! 0, what 32-bit Linux holds (it never grants).
//!
//! Sources: ARMv7-A/R ARM (DDI 0406C) C12 "PMUSERENR", C12 "PMXEVTYPER",
//! C12 "PMCR", C12 "PMOVSR", C12 "PMINTENCLR"; Arm ARM (DDI 0487) G8 "PMUSERENR";
//! Linux 6.12 drivers/perf/arm_v7_pmu.c (`armv7pmu_get_event_idx` takes the cycle
//! counter for CPU_CYCLES, then event counters from `cntr_mask` lowest first;
//! `armv7pmu_stop` clears PMCR.E), drivers/perf/arm_pmu.c (`armpmu_enable` starts the
//! PMU only while `used_mask` is non-empty).

pub use pmu_armv8::user_enable::{
    access_names, grant_words, perf_holds, quiet_reserved_counters, release_layout_counters,
    take_layout_counters, EventsError, Layout, LayoutCounters, ModuleEvents, Released, Taken,
    TooFewCounters, CHAIN, CPU_CYCLES, CYCLE_COUNTER, MAX_MODULE_EVENTS,
};
use pmu_armv8::EventNumber;

use crate::pmu::{InterruptRegisters, PmuRegisters};
use crate::registers::{
    PerfMon, Pmcntenclr, Pmcntenset, Pmintenclr, Pmovsr, Pmuserenr, Pmxevtyper, PMCR, PMUSERENR,
};

/// The PMUSERENR bits a user may ask for: EN | SW | CR | ER.
pub const USER_ACCESS_BITS: u32 = 0xF;
/// PMUSERENR.EN.
pub const EN: u32 = 1;
/// The default request: ER, read-only (granted only where PMUv3 has it). CR is not in
/// it: the module never uses PMCCNTR (perf's), so CR would only expose perf's cycle
/// counter.
pub const DEFAULT_USER_ACCESS: u32 = 0b1000;

/// PMXEVTYPER/PMCCFILTR.P: not in PL1 modes. With U = 0 and NSH = 0, PL0 only.
const FILTER_PL0_ONLY: u32 = 1 << 31;

/// The register accesses [`apply`] and [`restore`] need on one CPU, beyond
/// [`PmuRegisters`] and [`InterruptRegisters`] (PMINTENCLR): ID_DFR0, PMUSERENR and the
/// barrier.
pub trait UserAccessRegisters: PmuRegisters + InterruptRegisters {
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
    /// A counter of the layout is in perf's `used_mask` on this CPU (`-EBUSY`).
    CounterInUse {
        /// The event counter.
        counter: u8,
        /// Its PMXEVTYPER, for the log.
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
    /// PMCNTENSET bits of the counters this apply (re)programmed from zero: the
    /// layout's counters that were not kept.
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

/// [`LayoutCounters`] over the AArch32 registers: PMXEVTYPER/PMXEVCNTR through PMSELR
/// (the layout's counters are event counters, below 31), PMOVSR write-one-to-clear.
struct Pl0Counters<'a, R>(&'a R);

impl<R: UserAccessRegisters> LayoutCounters for Pl0Counters<'_, R> {
    fn enabled(&self) -> u64 {
        u64::from(self.0.pmcntenset().get())
    }
    fn config(&self, counter: u8) -> u64 {
        u64::from(self.0.pmxevtyper(counter).get())
    }
    fn set_config(&self, counter: u8, config: u64) {
        // The module's configurations are `event_config`'s: 32 bits.
        self.0
            .set_pmxevtyper(counter, Pmxevtyper::new(config as u32));
    }
    fn zero(&self, counter: u8) {
        self.0.set_pmxevcntr(counter, 0);
    }
    fn disable(&self, mask: u64) {
        self.0.set_pmcntenclr(Pmcntenclr::new(mask as u32));
    }
    fn clear_overflow_and_interrupt(&self, mask: u64) {
        // What perf does for a counter it releases (`armv7_pmnc_disable_intens`: PMINTENCLR,
        // then PMOVSR write-one-to-clear; drivers/perf/arm_v7_pmu.c 6.12).
        self.0.set_pmintenclr(Pmintenclr::new(mask as u32));
        self.0.set_pmovsr(Pmovsr::new(mask as u32));
    }
    fn isb(&self) {
        self.0.isb();
    }
    fn enable(&self, mask: u64) {
        self.0.set_pmcntenset(Pmcntenset::new(mask as u32));
    }
}

/// Grants PL0 the access `request` names on this CPU, programming the layout's
/// counters. `previous` is the last apply's result on this CPU, for a re-grant;
/// `perf_used` is perf's `used_mask` of this CPU as PMCNTENSET bits (read by the kernel
/// glue on this CPU with interrupts off).
///
/// Checks first (nothing written when one fails): a PMUv2 or PMUv3; on PMUv2, the
/// write opt-in; N holds the layout; every event fits evtCount and, if common, is in
/// PMCEID0/1; no layout counter is in `perf_used`. Then the shared rule
/// ([`take_layout_counters`]: only the module's own counters kept, the others
/// disabled, overflow flag and interrupt enable cleared, programmed, zeroed, `isb`, one
/// PMCNTENSET write), PMCR.E set (P, C, LC left as they are), PMUSERENR written, `isb`.
///
/// # Errors
/// [`ApplyError`]: which check failed.
pub fn apply<R: UserAccessRegisters>(
    regs: &R,
    request: Request,
    previous: Option<&Applied>,
    perf_used: u32,
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
    for (_, event) in layout.assignments() {
        if event > max_event {
            return Err(ApplyError::EventOutOfRange { event });
        }
        if implemented.and_then(|i| i.contains(EventNumber::new(event))) == Some(false) {
            return Err(ApplyError::EventNotImplemented { event });
        }
    }
    if let Some(counter) = perf_holds(&layout, u64::from(perf_used)) {
        return Err(ApplyError::CounterInUse {
            counter,
            config: regs.pmxevtyper(counter).get(),
        });
    }
    let found_pmuserenr = regs.pmuserenr();
    let owned_before = previous.map_or(0, |p| u64::from(p.owned));
    let taken = take_layout_counters(&Pl0Counters(regs), &layout, owned_before);
    let mut new_pmcr = pmcr;
    if layout.mask() != 0 {
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
        // Layout counters are event counters, below 31: the masks fit PMCNTENSET.
        owned: layout.mask() as u32,
        zeroed: taken.started as u32,
        kept: taken.kept as u32,
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
    /// The module's counters disabled, their overflow flag and interrupt enable
    /// cleared, and zeroed.
    pub released: u32,
    /// The module's counters in perf's `used_mask` now: left exactly as they are.
    pub taken: u32,
}

/// Takes back what [`apply`] did on this CPU. `perf_used` as for [`apply`].
///
/// PMUSERENR first: to 0 (what 32-bit Linux holds) if it still holds the module's
/// grant, else left as found. Then the shared rule ([`release_layout_counters`]): each
/// of the module's counters perf does not hold is disabled, its overflow flag and
/// interrupt enable cleared, and zeroed. PMCR.E is left alone: it is perf's, and
/// `armv7pmu_stop()` clears it when perf's last event leaves.
pub fn restore<R: UserAccessRegisters>(
    regs: &R,
    applied: &Applied,
    layout: &Layout,
    perf_used: u32,
) -> Restored {
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
    let Released { released, taken } = release_layout_counters(
        &Pl0Counters(regs),
        layout,
        u64::from(applied.owned),
        u64::from(perf_used),
    );
    Restored {
        found_pmuserenr: found.get(),
        new_pmuserenr,
        released: released as u32,
        taken: taken as u32,
    }
}

/// [`quiet_reserved_counters`] over the AArch32 registers: PMCNTENCLR (with `disable`),
/// PMINTENCLR, PMOVSR (write-one-to-clear), `isb`. `reserved` holds event counters only
/// (below 31): the glue's counters taken out of perf's mask.
pub fn quiet_reserved<R: UserAccessRegisters>(regs: &R, reserved: u32, disable: bool) {
    quiet_reserved_counters(&Pl0Counters(regs), u64::from(reserved), disable);
}

/// Whether PMCR.E is set on this CPU: perf's `armv7pmu_start` sets it and
/// `armv7pmu_stop` clears it (drivers/perf/arm_v7_pmu.c, Linux 6.12; arm_pmuv3.c's
/// `armv8pmu_start`/`armv8pmu_stop` in its 32-bit build likewise). With it clear every
/// counter is frozen.
pub fn pmu_enabled<R: PmuRegisters>(regs: &R) -> bool {
    regs.pmcr().is_set(PMCR::E)
}

/// Takes the module's grant back on this CPU: PMUSERENR to 0 if it still holds
/// `granted` (the module's last grant; 0: none, nothing written), then an `isb` (revoked
/// before any PL0 instruction runs again). A value someone else wrote is left alone.
/// Returns whether PMUSERENR was written.
pub fn withdraw<R: UserAccessRegisters>(regs: &R, granted: u32) -> bool {
    if granted == 0 || regs.pmuserenr().get() != granted {
        return false;
    }
    regs.set_pmuserenr(Pmuserenr::new(0));
    regs.isb();
    true
}

/// Whether `value` lets PL0 write the PMU (EN).
pub fn grants_writes(value: Pmuserenr) -> bool {
    value.is_set(PMUSERENR::EN)
}

#[cfg(test)]
mod tests;
