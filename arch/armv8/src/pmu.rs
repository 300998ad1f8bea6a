//! The PMUv3 [`Pmu`]: generic over how the registers are reached.
//!
//! [`Armv8Pmu`] holds the whole driver logic (probe, counter numbering, event
//! resolution against PMCEID, filters, enable/overflow bits) and touches the hardware
//! only through [`PmuRegisters`]. Three register files implement it: the EL1 one
//! (`el1::El1Registers`), the EL0 one (`el0::El0Registers`, after the
//! kernel set PMUSERENR_EL0.EN) and the host-side fake ([`crate::fake::FakeRegisters`])
//! the tests run against. The overflow interrupt enables (PMINTEN*_EL1) are a separate
//! trait, [`InterruptRegisters`], which the EL0 file does not implement: EL0 code cannot
//! even name an access that would trap.
//!
//! Probe and reset follow Linux's `__armv8pmu_probe_pmu` and `armv8pmu_reset`
//! (drivers/perf/arm_pmuv3.c): N from PMCR_EL0, PMCEID0/1 for the event list, every
//! counter disabled, PMCR_EL0 = P | C | LC (| LP), and E set (Linux sets E in
//! `armv8pmu_start`).

use core::fmt;

use pmu_core::{
    Capabilities, CounterWidth, Error, EventEncoding, GenericEvent, Pmu, PrivilegeFilter, Slot,
};

use crate::counter::{CounterId, EventCounter};
use crate::events::{Armv8Event, EventNumber, ImplementedEvents};
use crate::registers::{
    pmccfiltr_el0, pmevtypern_el0, PmccfiltrEl0, Pmceid0El0, Pmceid1El0, PmcntenclrEl0,
    PmcntensetEl0, PmcrEl0, PmevtypernEl0, PmintenclrEl1, PmintensetEl1, PmovsclrEl0, PmovssetEl0,
    PmswincEl0, PMCR_EL0,
};
use crate::version::PmuVersion;

/// Access to the PMUv3 registers of one PE (everything but PMINTEN*_EL1 and
/// PMUSERENR_EL0).
///
/// The methods are safe: an implementation that reaches hardware must make its
/// constructor `unsafe` and state there what makes every access below permitted (the
/// Exception level, PMUSERENR_EL0, exclusive ownership, a pinned CPU). Implementations
/// must ignore event counters at or above PMCR_EL0.N (reads give 0) instead of
/// accessing them, since those registers are UNDEFINED.
pub trait PmuRegisters {
    /// PMCR_EL0.
    fn pmcr(&self) -> PmcrEl0;
    /// Writes PMCR_EL0 and synchronizes (its effects on the counters are indirect).
    fn set_pmcr(&self, value: PmcrEl0);
    /// PMCEID0_EL0.
    fn pmceid0(&self) -> Pmceid0El0;
    /// PMCEID1_EL0.
    fn pmceid1(&self) -> Pmceid1El0;
    /// PMCNTENSET_EL0 (the enabled counters).
    fn pmcntenset(&self) -> PmcntensetEl0;
    /// Writes PMCNTENSET_EL0: enables the counters of the 1 bits.
    fn set_pmcntenset(&self, value: PmcntensetEl0);
    /// Writes PMCNTENCLR_EL0: disables the counters of the 1 bits.
    fn set_pmcntenclr(&self, value: PmcntenclrEl0);
    /// PMOVSSET_EL0 (the overflow flags).
    fn pmovsset(&self) -> PmovssetEl0;
    /// Writes PMOVSCLR_EL0: clears the overflow flags of the 1 bits.
    fn set_pmovsclr(&self, value: PmovsclrEl0);
    /// Writes PMSWINC_EL0: increments the SW_INCR counters of the 1 bits.
    fn set_pmswinc(&self, value: PmswincEl0);
    /// `PMEVTYPER<n>_EL0`.
    fn pmevtyper(&self, counter: EventCounter) -> PmevtypernEl0;
    /// Writes `PMEVTYPER<n>_EL0`.
    fn set_pmevtyper(&self, counter: EventCounter, value: PmevtypernEl0);
    /// `PMEVCNTR<n>_EL0`.
    fn pmevcntr(&self, counter: EventCounter) -> u64;
    /// Writes `PMEVCNTR<n>_EL0`.
    fn set_pmevcntr(&self, counter: EventCounter, value: u64);
    /// PMCCFILTR_EL0.
    fn pmccfiltr(&self) -> PmccfiltrEl0;
    /// Writes PMCCFILTR_EL0.
    fn set_pmccfiltr(&self, value: PmccfiltrEl0);
    /// PMCCNTR_EL0.
    fn pmccntr(&self) -> u64;
    /// Writes PMCCNTR_EL0.
    fn set_pmccntr(&self, value: u64);
}

/// Access to the overflow interrupt enables PMINTENSET_EL1 / PMINTENCLR_EL1: EL1 and
/// higher only (EL0 accesses are UNDEFINED whatever PMUSERENR_EL0 says).
pub trait InterruptRegisters {
    /// PMINTENSET_EL1 (the enabled overflow interrupts).
    fn pmintenset(&self) -> PmintensetEl1;
    /// Writes PMINTENSET_EL1: enables the overflow interrupts of the 1 bits.
    fn set_pmintenset(&self, value: PmintensetEl1);
    /// Writes PMINTENCLR_EL1: disables the overflow interrupts of the 1 bits.
    fn set_pmintenclr(&self, value: PmintenclrEl1);
}

impl<R: PmuRegisters + ?Sized> PmuRegisters for &R {
    fn pmcr(&self) -> PmcrEl0 {
        (**self).pmcr()
    }
    fn set_pmcr(&self, value: PmcrEl0) {
        (**self).set_pmcr(value);
    }
    fn pmceid0(&self) -> Pmceid0El0 {
        (**self).pmceid0()
    }
    fn pmceid1(&self) -> Pmceid1El0 {
        (**self).pmceid1()
    }
    fn pmcntenset(&self) -> PmcntensetEl0 {
        (**self).pmcntenset()
    }
    fn set_pmcntenset(&self, value: PmcntensetEl0) {
        (**self).set_pmcntenset(value);
    }
    fn set_pmcntenclr(&self, value: PmcntenclrEl0) {
        (**self).set_pmcntenclr(value);
    }
    fn pmovsset(&self) -> PmovssetEl0 {
        (**self).pmovsset()
    }
    fn set_pmovsclr(&self, value: PmovsclrEl0) {
        (**self).set_pmovsclr(value);
    }
    fn set_pmswinc(&self, value: PmswincEl0) {
        (**self).set_pmswinc(value);
    }
    fn pmevtyper(&self, counter: EventCounter) -> PmevtypernEl0 {
        (**self).pmevtyper(counter)
    }
    fn set_pmevtyper(&self, counter: EventCounter, value: PmevtypernEl0) {
        (**self).set_pmevtyper(counter, value);
    }
    fn pmevcntr(&self, counter: EventCounter) -> u64 {
        (**self).pmevcntr(counter)
    }
    fn set_pmevcntr(&self, counter: EventCounter, value: u64) {
        (**self).set_pmevcntr(counter, value);
    }
    fn pmccfiltr(&self) -> PmccfiltrEl0 {
        (**self).pmccfiltr()
    }
    fn set_pmccfiltr(&self, value: PmccfiltrEl0) {
        (**self).set_pmccfiltr(value);
    }
    fn pmccntr(&self) -> u64 {
        (**self).pmccntr()
    }
    fn set_pmccntr(&self, value: u64) {
        (**self).set_pmccntr(value);
    }
}

impl<R: InterruptRegisters + ?Sized> InterruptRegisters for &R {
    fn pmintenset(&self) -> PmintensetEl1 {
        (**self).pmintenset()
    }
    fn set_pmintenset(&self, value: PmintensetEl1) {
        (**self).set_pmintenset(value);
    }
    fn set_pmintenclr(&self, value: PmintenclrEl1) {
        (**self).set_pmintenclr(value);
    }
}

/// How wide the driver makes the event counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum EventCounterWidth {
    /// 32 bits, PMCR_EL0.LP = 0: overflow (flag, interrupt) at 2^32 on every PMUv3.
    ///
    /// On FEAT_PMUv3p5 the registers still hold 64 bits and keep counting past 2^32:
    /// QEMU `-cpu max` reads 0x1_0000_005d from a counter preset to 0xFFFF_FFF0 that
    /// wrapped (docs/qemu.md). The capabilities say 32 bits, so
    /// [`pmu_core::Counter::read`] and the deltas mask the value to 0x5d, as on a
    /// Cortex-A53.
    #[default]
    Bits32,
    /// 64 bits, PMCR_EL0.LP = 1. Requires FEAT_PMUv3p5, else probing fails with
    /// [`ProbeError::LongCountersUnsupported`].
    Bits64,
    /// 64 bits where FEAT_PMUv3p5 allows it, else 32 (what Linux does:
    /// `armv8pmu_reset` sets LP whenever `armv8pmu_has_long_event`).
    Widest,
}

/// Choices made when the driver takes over the PMU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct PmuOptions {
    /// Width of the event counters (the cycle counter is always 64 bits, PMCR_EL0.LC).
    pub event_counter_width: EventCounterWidth,
}

impl PmuOptions {
    /// The defaults: 32-bit event counters.
    pub const fn new() -> Self {
        Self {
            event_counter_width: EventCounterWidth::Bits32,
        }
    }

    /// These options with event counters of `width`.
    pub const fn with_event_counter_width(mut self, width: EventCounterWidth) -> Self {
        self.event_counter_width = width;
        self
    }
}

/// Why the driver cannot take over the PMU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProbeError {
    /// ID_AA64DFR0_EL1.PMUVer says there is no architected PMUv3 (0 or
    /// IMPLEMENTATION DEFINED).
    NoPmuV3 {
        /// What PMUVer says.
        version: PmuVersion,
    },
    /// 64-bit event counters were asked for, but they need FEAT_PMUv3p5.
    LongCountersUnsupported {
        /// What PMUVer says.
        version: PmuVersion,
    },
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoPmuV3 { version } => write!(
                f,
                "this CPU has no PMUv3 (ID_AA64DFR0_EL1.PMUVer: {version}): \
                 use a CPU model with a PMU (QEMU: -cpu max, cortex-a53, …)"
            ),
            Self::LongCountersUnsupported { version } => write!(
                f,
                "64-bit event counters need PMUv3p5, this CPU has {version}: \
                 use 32-bit counters (EventCounterWidth::Bits32 or Widest)"
            ),
        }
    }
}

impl core::error::Error for ProbeError {}

/// The PMUv3 driver over register file `R`.
///
/// Owns the PMU from construction on; the slot operations of [`Pmu`] are meant to be
/// reached through a [`pmu_core::CounterPool`]. `Slot::Programmable(n)` is
/// `PMEVCNTR<n>_EL0` (n < PMCR_EL0.N), `Slot::Fixed(0)` is PMCCNTR_EL0, which counts
/// [`GenericEvent::CpuCycles`] only.
#[derive(Debug)]
pub struct Armv8Pmu<R> {
    regs: R,
    version: PmuVersion,
    implemented: ImplementedEvents,
    event_counters: u8,
    caps: Capabilities,
}

impl<R: PmuRegisters> Armv8Pmu<R> {
    /// Takes over the PMU behind `regs`, a PE with PMU `version`: reads N and PMCEID,
    /// disables every counter, clears the overflow flags, zeroes all counters and sets
    /// PMCR_EL0 to E | LC (| LP for 64-bit event counters).
    ///
    /// The counters then count nothing until a counter is configured and enabled.
    /// D (cycle divider), X (event export) and DP are cleared.
    ///
    /// # Errors
    /// [`ProbeError::NoPmuV3`] when `version` is not a PMUv3 (nothing is accessed);
    /// [`ProbeError::LongCountersUnsupported`] for [`EventCounterWidth::Bits64`] before
    /// PMUv3p5.
    pub fn new(regs: R, version: PmuVersion, options: PmuOptions) -> Result<Self, ProbeError> {
        if !version.is_pmuv3() {
            return Err(ProbeError::NoPmuV3 { version });
        }
        let long = match options.event_counter_width {
            EventCounterWidth::Bits32 => false,
            EventCounterWidth::Bits64 if version.has_long_event_counters() => true,
            EventCounterWidth::Bits64 => {
                return Err(ProbeError::LongCountersUnsupported { version })
            }
            EventCounterWidth::Widest => version.has_long_event_counters(),
        };
        // N is 5 bits, at most 31.
        let event_counters = regs.pmcr().read(PMCR_EL0::N).min(31) as u8;
        let implemented = ImplementedEvents::from_registers(regs.pmceid0(), regs.pmceid1());
        let pmu = Self {
            regs,
            version,
            implemented,
            event_counters,
            caps: Capabilities {
                programmable: u32::from(event_counters),
                programmable_width: if long {
                    CounterWidth::W64
                } else {
                    CounterWidth::W32
                },
                fixed: 1,
                fixed_width: CounterWidth::W64,
            },
        };
        let all = pmu.all_counters_mask();
        pmu.regs.set_pmcntenclr(PmcntenclrEl0::new(all));
        pmu.regs.set_pmovsclr(PmovsclrEl0::new(all));
        let mut pmcr = PmcrEl0::new(0);
        pmcr.write(
            PMCR_EL0::E::SET
                + PMCR_EL0::P::SET
                + PMCR_EL0::C::SET
                + PMCR_EL0::LC::SET
                + PMCR_EL0::LP.val(u64::from(long)),
        );
        pmu.regs.set_pmcr(pmcr);
        Ok(pmu)
    }

    /// The PMU version it was built for.
    pub fn version(&self) -> PmuVersion {
        self.version
    }

    /// The common events PMCEID0/1_EL0 report.
    pub fn implemented_events(&self) -> ImplementedEvents {
        self.implemented
    }

    /// The register file (for inspection; writing through it bypasses the driver).
    pub fn registers(&self) -> &R {
        &self.regs
    }

    /// Gives the register file back; the PMU keeps its current programming.
    pub fn into_registers(self) -> R {
        self.regs
    }

    /// The bits of every counter this PMU has: bits 0..N and 31 (PMCCNTR_EL0).
    pub fn all_counters_mask(&self) -> u64 {
        let events = (1u64 << self.event_counters) - 1;
        events | CounterId::Cycle.mask()
    }

    /// The counter behind `slot` if this PMU has it (event counter n < PMCR_EL0.N, or
    /// the cycle counter).
    pub fn counter_id(&self, slot: Slot) -> Option<CounterId> {
        match CounterId::from_slot(slot)? {
            CounterId::Event(n) if n.index() >= self.event_counters => None,
            id => Some(id),
        }
    }

    fn checked(&self, slot: Slot) -> Result<CounterId, Error> {
        self.counter_id(slot).ok_or(Error::CounterOutOfRange {
            slot,
            available: match slot {
                Slot::Programmable(_) => self.caps.programmable,
                Slot::Fixed(_) => self.caps.fixed,
            },
        })
    }

    /// Whether this PE counts event `number`: a common event when PMCEID says so, an
    /// IMPLEMENTATION DEFINED one always (PMCEID cannot tell; see the core's TRM),
    /// except numbers above 0x3FF before PMUv3p1, where evtCount has 10 bits.
    pub fn counts(&self, number: EventNumber) -> bool {
        if number.get() > EventNumber::MAX_PMUV3 && !self.version.has_16bit_event_numbers() {
            return false;
        }
        self.implemented.contains(number).unwrap_or(true)
    }

    /// The event number `event` is programmed as on this PE: its first choice this PE
    /// counts, `None` if it counts none.
    pub fn resolve(&self, event: Armv8Event) -> Option<EventNumber> {
        event.candidates().find(|&n| self.counts(n))
    }

    /// Increments `slot` by one through PMSWINC_EL0 (counts only if it is enabled and
    /// configured for [`EventNumber::SW_INCR`]).
    ///
    /// # Errors
    /// [`Error::CounterOutOfRange`] for the cycle counter or a counter this PMU lacks.
    pub fn software_increment(&self, slot: Slot) -> Result<(), Error> {
        match self.checked(slot)? {
            CounterId::Event(n) => {
                self.regs
                    .set_pmswinc(PmswincEl0::new(CounterId::Event(n).mask()));
                Ok(())
            }
            CounterId::Cycle => Err(Error::CounterOutOfRange { slot, available: 0 }),
        }
    }
}

impl<R: PmuRegisters + InterruptRegisters> Armv8Pmu<R> {
    /// Enables the overflow interrupt of `slot` (PMINTENSET_EL1 bit n, bit 31 for the
    /// cycle counter), writing only that bit.
    ///
    /// Delivery also needs the interrupt controller (QEMU `virt`: GIC PPI 23) and
    /// PSTATE.I unmasked: that is the caller's setup.
    ///
    /// # Errors
    /// [`Error::CounterOutOfRange`] for a counter this PMU lacks.
    pub fn enable_overflow_interrupt(&self, slot: Slot) -> Result<(), Error> {
        let id = self.checked(slot)?;
        self.regs.set_pmintenset(PmintensetEl1::new(id.mask()));
        Ok(())
    }

    /// Disables the overflow interrupt of `slot`, writing only its PMINTENCLR_EL1 bit.
    ///
    /// # Errors
    /// [`Error::CounterOutOfRange`] for a counter this PMU lacks.
    pub fn disable_overflow_interrupt(&self, slot: Slot) -> Result<(), Error> {
        let id = self.checked(slot)?;
        self.regs.set_pmintenclr(PmintenclrEl1::new(id.mask()));
        Ok(())
    }

    /// Whether the overflow interrupt of `slot` is enabled (`false` for a counter this
    /// PMU lacks).
    pub fn overflow_interrupt_enabled(&self, slot: Slot) -> bool {
        self.counter_id(slot)
            .is_some_and(|id| self.regs.pmintenset().get() & id.mask() != 0)
    }

    /// Disables the overflow interrupts of every counter (their enables are UNKNOWN
    /// after reset; Linux `armv8pmu_reset` clears them the same way).
    pub fn disable_all_overflow_interrupts(&self) {
        self.regs
            .set_pmintenclr(PmintenclrEl1::new(self.all_counters_mask()));
    }
}

impl<R: PmuRegisters> Pmu for Armv8Pmu<R> {
    type Event = Armv8Event;

    fn capabilities(&self) -> Capabilities {
        self.caps
    }

    fn is_implemented(&self, event: Armv8Event) -> bool {
        self.resolve(event).is_some()
    }

    fn fixed_event(&self, index: u8) -> Option<GenericEvent> {
        (index == 0).then_some(GenericEvent::CpuCycles)
    }

    /// Programs `PMEVTYPER<n>_EL0` (evtCount and P/U/NSH) or PMCCFILTR_EL0 (P/U/NSH).
    ///
    /// `kernel` is EL1, `user` EL0, `hypervisor` EL2; P and U are *exclusion* bits,
    /// NSH an inclusion bit (Linux `armv8pmu_set_event_filter`). Every combination is
    /// encodable.
    fn configure(
        &self,
        slot: Slot,
        event: Armv8Event,
        filter: PrivilegeFilter,
    ) -> Result<(), Error> {
        match self.checked(slot)? {
            CounterId::Cycle => {
                if event.preferred() != EventNumber::CPU_CYCLES {
                    return Err(Error::EventNotCountableOnSlot {
                        slot,
                        code: event.code(),
                    });
                }
                self.regs.set_pmccfiltr(pmccfiltr_el0::for_filter(filter));
            }
            CounterId::Event(n) => {
                let number = self
                    .resolve(event)
                    .ok_or(Error::EventNotImplemented { code: event.code() })?;
                self.regs
                    .set_pmevtyper(n, pmevtypern_el0::for_event(number, filter));
            }
        }
        Ok(())
    }

    /// Writes only the counter's bit to PMCNTENSET_EL0.
    fn enable(&self, slot: Slot) {
        if let Some(id) = self.counter_id(slot) {
            self.regs.set_pmcntenset(PmcntensetEl0::new(id.mask()));
        }
    }

    /// Writes only the counter's bit to PMCNTENCLR_EL0.
    fn disable(&self, slot: Slot) {
        if let Some(id) = self.counter_id(slot) {
            self.regs.set_pmcntenclr(PmcntenclrEl0::new(id.mask()));
        }
    }

    fn read(&self, slot: Slot) -> u64 {
        match self.counter_id(slot) {
            Some(CounterId::Event(n)) => self.regs.pmevcntr(n),
            Some(CounterId::Cycle) => self.regs.pmccntr(),
            None => 0,
        }
    }

    fn write(&self, slot: Slot, value: u64) {
        match self.counter_id(slot) {
            Some(CounterId::Event(n)) => self.regs.set_pmevcntr(n, value),
            Some(CounterId::Cycle) => self.regs.set_pmccntr(value),
            None => {}
        }
    }

    fn overflowed(&self, slot: Slot) -> bool {
        self.counter_id(slot)
            .is_some_and(|id| self.regs.pmovsset().get() & id.mask() != 0)
    }

    /// Writes only the counter's bit to PMOVSCLR_EL0 (write-one-to-clear: the other
    /// flags are untouched, no read-modify-write).
    fn clear_overflow(&self, slot: Slot) {
        if let Some(id) = self.counter_id(slot) {
            self.regs.set_pmovsclr(PmovsclrEl0::new(id.mask()));
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec::Vec;

    use pmu_core::{CounterPool, Event};

    use super::*;
    use crate::fake::{FakeRegisters, RegisterWrite};
    use crate::registers::PMCCFILTR_EL0;

    const ALL_QEMU_COUNTERS: u64 = 0x8000_003F;

    fn qemu_max(regs: &FakeRegisters) -> Armv8Pmu<&FakeRegisters> {
        Armv8Pmu::new(regs, PmuVersion::PmuV3p5, PmuOptions::new()).unwrap()
    }

    fn writes(regs: &FakeRegisters) -> Vec<RegisterWrite> {
        regs.writes().collect()
    }

    fn event(number: u16) -> Event {
        Event::Raw(u64::from(number))
    }

    /// Probe of QEMU `-cpu max` (PMCR_EL0 reset 0x41013000, N = 6;
    /// docs/qemu.md) and the reset sequence of Linux `armv8pmu_reset`:
    /// counters disabled, then PMCR_EL0 = P | C | LC, plus E and the overflow flags
    /// cleared.
    #[test]
    fn probe_and_reset_qemu_max() {
        let regs = FakeRegisters::qemu_max_icount();
        let pmu = qemu_max(&regs);
        assert_eq!(
            pmu.capabilities(),
            Capabilities {
                programmable: 6,
                programmable_width: CounterWidth::W32,
                fixed: 1,
                fixed_width: CounterWidth::W64,
            }
        );
        assert_eq!(pmu.all_counters_mask(), ALL_QEMU_COUNTERS);
        assert_eq!(
            writes(&regs),
            [
                RegisterWrite::Pmcntenclr(ALL_QEMU_COUNTERS),
                RegisterWrite::Pmovsclr(ALL_QEMU_COUNTERS),
                // E | P | C | LC
                RegisterWrite::Pmcr(0b0100_0111),
            ]
        );
        // N, IMP and IDCODE kept, E and LC set, P and C read as 0.
        assert_eq!(regs.pmcr().get(), 0x4101_3041);
        assert_eq!(
            pmu.implemented_events().iter().collect::<Vec<_>>(),
            [
                EventNumber::SW_INCR,
                EventNumber::INST_RETIRED,
                EventNumber::CPU_CYCLES,
                EventNumber::STALL_FRONTEND,
                EventNumber::STALL_BACKEND,
                EventNumber::STALL,
            ]
        );
    }

    /// LP only with FEAT_PMUv3p5 (Linux `armv8pmu_has_long_event` / `is_pmuv3p5`).
    #[test]
    fn event_counter_width_options() {
        let regs = FakeRegisters::qemu_max_icount();
        let long = PmuOptions::new().with_event_counter_width(EventCounterWidth::Bits64);
        let pmu = Armv8Pmu::new(&regs, PmuVersion::PmuV3p5, long).unwrap();
        assert_eq!(pmu.capabilities().programmable_width, CounterWidth::W64);
        assert!(regs.pmcr().is_set(PMCR_EL0::LP));

        let widest = PmuOptions::new().with_event_counter_width(EventCounterWidth::Widest);
        let regs = FakeRegisters::qemu_max_icount();
        let pmu = Armv8Pmu::new(&regs, PmuVersion::PmuV3p5, widest).unwrap();
        assert_eq!(pmu.capabilities().programmable_width, CounterWidth::W64);

        // QEMU cortex-a53/a72: PMUv3, N = 6 (PMCR IMP/IDCODE not measured, left 0).
        let a53 = FakeRegisters::new(PmuVersion::PmuV3, 0x3000, 0x20001, 0);
        assert_eq!(
            Armv8Pmu::new(&a53, PmuVersion::PmuV3, long).err(),
            Some(ProbeError::LongCountersUnsupported {
                version: PmuVersion::PmuV3
            })
        );
        let pmu = Armv8Pmu::new(&a53, PmuVersion::PmuV3, widest).unwrap();
        assert_eq!(pmu.capabilities().programmable_width, CounterWidth::W32);
        assert!(!a53.pmcr().is_set(PMCR_EL0::LP));
    }

    #[test]
    fn no_pmuv3_is_refused_before_any_access() {
        let regs = FakeRegisters::qemu_max_icount();
        for version in [
            PmuVersion::NotImplemented,
            PmuVersion::ImplementationDefined,
        ] {
            assert_eq!(
                Armv8Pmu::new(&regs, version, PmuOptions::new()).err(),
                Some(ProbeError::NoPmuV3 { version })
            );
        }
        assert_eq!(regs.write_count(), 0);
    }

    /// Cycles go to PMCCNTR_EL0 first, like Linux's `armv8pmu_get_event_idx`
    /// ("Always prefer to place a cycle counter into the cycle counter").
    #[test]
    fn cycles_use_the_cycle_counter() {
        let regs = FakeRegisters::qemu_max_icount();
        let pool = CounterPool::new(qemu_max(&regs));
        regs.clear_writes();
        let cycles = pool
            .counter(GenericEvent::CpuCycles.into(), PrivilegeFilter::USER)
            .unwrap();
        assert_eq!(cycles.slot(), Slot::Fixed(0));
        assert_eq!(cycles.width(), CounterWidth::W64);
        assert_eq!(
            writes(&regs),
            [
                RegisterWrite::Pmcntenclr(1 << 31),
                RegisterWrite::Pmccfiltr(1 << 31),
                RegisterWrite::Pmovsclr(1 << 31),
            ]
        );
        assert!(regs.pmccfiltr().is_set(PMCCFILTR_EL0::P));
        // The second cycles counter is an event counter counting CPU_CYCLES.
        let more = pool
            .counter(GenericEvent::CpuCycles.into(), PrivilegeFilter::ALL)
            .unwrap();
        assert_eq!(more.slot(), Slot::Programmable(0));
        let zero = EventCounter::new(0).unwrap();
        assert_eq!(regs.pmevtyper(zero).get(), 0x0800_0011);
        // A raw event never goes to the cycle counter.
        assert_eq!(
            pool.counter_at(Slot::Fixed(0), event(0x11), PrivilegeFilter::ALL)
                .err(),
            Some(Error::CounterBusy {
                slot: Slot::Fixed(0)
            })
        );
    }

    /// N = 6 on QEMU `-cpu max`: six event counters, the seventh request fails, and
    /// slot 6 (PMEVCNTR6_EL0, UNDEFINED there) is out of range.
    #[test]
    fn six_event_counters() {
        let regs = FakeRegisters::qemu_max_icount();
        let pool = CounterPool::new(qemu_max(&regs));
        let ins = Event::Generic(GenericEvent::Instructions);
        let held: Vec<_> = (0..6)
            .map(|_| pool.counter(ins, PrivilegeFilter::ALL).unwrap())
            .collect();
        let slots: Vec<_> = held.iter().map(|c| c.slot()).collect();
        assert_eq!(slots, (0..6).map(Slot::Programmable).collect::<Vec<_>>());
        assert_eq!(
            pool.counter(ins, PrivilegeFilter::ALL).err(),
            Some(Error::NoFreeCounter { available: 6 })
        );
        for n in [6, 30, 31, 255] {
            assert_eq!(
                pool.counter_at(Slot::Programmable(n), ins, PrivilegeFilter::ALL)
                    .err(),
                Some(Error::CounterOutOfRange {
                    slot: Slot::Programmable(n),
                    available: 6
                })
            );
        }
        assert_eq!(
            pool.counter_at(
                Slot::Fixed(1),
                GenericEvent::CpuCycles.into(),
                PrivilegeFilter::ALL
            )
            .err(),
            Some(Error::CounterOutOfRange {
                slot: Slot::Fixed(1),
                available: 1
            })
        );
        // Direct calls with a bad slot do nothing and never panic.
        let pmu = pool.pmu();
        regs.clear_writes();
        pmu.enable(Slot::Programmable(6));
        pmu.write(Slot::Programmable(40), 1);
        pmu.clear_overflow(Slot::Fixed(3));
        assert_eq!(pmu.read(Slot::Programmable(6)), 0);
        assert!(!pmu.overflowed(Slot::Programmable(6)));
        assert_eq!(regs.write_count(), 0);
        assert_eq!(
            pmu.configure(
                Slot::Programmable(6),
                Armv8Event::new(EventNumber::INST_RETIRED),
                PrivilegeFilter::ALL
            ),
            Err(Error::CounterOutOfRange {
                slot: Slot::Programmable(6),
                available: 6
            })
        );
    }

    /// PMCEID decides (QEMU icount: only SW_INCR, INST_RETIRED, CPU_CYCLES of
    /// 0x00..=0x1F); IMPLEMENTATION DEFINED numbers pass; evtCount is 16 bits.
    #[test]
    fn events_checked_against_pmceid() {
        let regs = FakeRegisters::qemu_max_icount();
        let pool = CounterPool::new(qemu_max(&regs));
        let cases = [
            (event(0x12), Error::EventNotImplemented { code: 0x12 }),
            (
                GenericEvent::BranchInstructions.into(),
                Error::EventNotImplemented { code: 0x21 },
            ),
            (
                GenericEvent::L1dRefill.into(),
                Error::EventNotImplemented { code: 0x03 },
            ),
            (
                GenericEvent::RefCycles.into(),
                Error::EventNotEncodable {
                    event: GenericEvent::RefCycles,
                },
            ),
            (
                Event::Raw(0x1_0000),
                Error::RawEventOutOfRange {
                    raw: 0x1_0000,
                    max: 0xFFFF,
                },
            ),
            (event(0x4000), Error::EventNotImplemented { code: 0x4000 }),
        ];
        for (e, err) in cases {
            assert_eq!(pool.counter(e, PrivilegeFilter::ALL).err(), Some(err));
        }
        // Cortex-A53's IMPLEMENTATION DEFINED PREF_LINEFILL (0xC2, arm_pmuv3.c):
        // PMCEID cannot say, so it is allowed.
        let c = pool.counter(event(0xC2), PrivilegeFilter::ALL).unwrap();
        assert_eq!(
            regs.pmevtyper(EventCounter::new(0).unwrap())
                .read(crate::registers::PMEVTYPERn_EL0::evtCount),
            0xC2
        );
        drop(c);
        // Before PMUv3p1 evtCount has 10 bits: 0x400 cannot be counted.
        let a53 = FakeRegisters::new(PmuVersion::PmuV3, 0x3000, 0x20001, 0);
        let old =
            CounterPool::new(Armv8Pmu::new(&a53, PmuVersion::PmuV3, PmuOptions::new()).unwrap());
        assert_eq!(
            old.counter(event(0x400), PrivilegeFilter::ALL).err(),
            Some(Error::EventNotImplemented { code: 0x400 })
        );
        assert!(old.counter(event(0x3FF), PrivilegeFilter::ALL).is_ok());
    }

    /// `branches` is BR_RETIRED when implemented, else PC_WRITE_RETIRED
    /// (drivers/perf/arm_pmuv3.c `__armv8_pmuv3_map_event_id`).
    #[test]
    fn branch_instructions_fall_back_like_linux() {
        let zero = EventCounter::new(0).unwrap();
        let pc_write_only = FakeRegisters::new(PmuVersion::PmuV3p5, 0x4101_3000, 1 << 0x0C, 0);
        let pool = CounterPool::new(qemu_max(&pc_write_only));
        let _b = pool
            .counter(
                GenericEvent::BranchInstructions.into(),
                PrivilegeFilter::ALL,
            )
            .unwrap();
        assert_eq!(pc_write_only.pmevtyper(zero).get() & 0xFFFF, 0x0C);

        let both = FakeRegisters::new(PmuVersion::PmuV3p5, 0x4101_3000, 1 << 0x0C, 1 << 1);
        let pool = CounterPool::new(qemu_max(&both));
        let _b = pool
            .counter(
                GenericEvent::BranchInstructions.into(),
                PrivilegeFilter::ALL,
            )
            .unwrap();
        assert_eq!(both.pmevtyper(zero).get() & 0xFFFF, 0x21);
    }

    /// P and U are exclusion bits (Linux `ARMV8_PMU_EXCLUDE_EL1` = bit 31,
    /// `ARMV8_PMU_EXCLUDE_EL0` = bit 30): user-only sets P, kernel-only sets U.
    #[test]
    fn privilege_filters() {
        let regs = FakeRegisters::qemu_max_icount();
        let pool = CounterPool::new(qemu_max(&regs));
        let ins = Event::Generic(GenericEvent::Instructions);
        let user = pool.counter(ins, PrivilegeFilter::USER).unwrap();
        let kernel = pool.counter(ins, PrivilegeFilter::KERNEL).unwrap();
        let all = pool.counter(ins, PrivilegeFilter::ALL).unwrap();
        let typer = |c: &pmu_core::Counter<'_, _>| match c.slot() {
            Slot::Programmable(n) => regs.pmevtyper(EventCounter::new(n).unwrap()).get(),
            Slot::Fixed(_) => regs.pmccfiltr().get(),
        };
        assert_eq!(typer(&user), 0x8000_0008);
        assert_eq!(typer(&kernel), 0x4000_0008);
        assert_eq!(typer(&all), 0x0800_0008);
    }

    /// Enabling one counter writes only its PMCNTENSET_EL0 bit; disabling only its
    /// PMCNTENCLR_EL0 bit (set/clear registers need no read-modify-write).
    #[test]
    fn enable_and_disable_write_one_bit() {
        let regs = FakeRegisters::qemu_max_icount();
        let pool = CounterPool::new(qemu_max(&regs));
        let ins = Event::Generic(GenericEvent::Instructions);
        let _a = pool.counter(ins, PrivilegeFilter::ALL).unwrap();
        let _b = pool.counter(ins, PrivilegeFilter::ALL).unwrap();
        let c = pool.counter(ins, PrivilegeFilter::ALL).unwrap();
        let cycles = pool
            .counter(GenericEvent::CpuCycles.into(), PrivilegeFilter::ALL)
            .unwrap();
        regs.clear_writes();
        c.start();
        assert_eq!(writes(&regs), [RegisterWrite::Pmcntenset(1 << 2)]);
        regs.clear_writes();
        cycles.start();
        assert_eq!(writes(&regs), [RegisterWrite::Pmcntenset(1 << 31)]);
        assert_eq!(regs.pmcntenset().get(), 1 << 31 | 1 << 2);
        regs.clear_writes();
        c.stop();
        assert_eq!(writes(&regs), [RegisterWrite::Pmcntenclr(1 << 2)]);
        assert_eq!(regs.pmcntenset().get(), 1 << 31);
    }

    /// Clearing one overflow flag writes only its PMOVSCLR_EL0 bit and leaves the
    /// other flags set (write-one-to-clear).
    #[test]
    fn clear_overflow_writes_one_bit() {
        let regs = FakeRegisters::qemu_max_icount();
        let pool = CounterPool::new(qemu_max(&regs));
        let ins = Event::Generic(GenericEvent::Instructions);
        let held: Vec<_> = (0..3)
            .map(|_| pool.counter(ins, PrivilegeFilter::ALL).unwrap())
            .collect();
        let cycles = pool
            .counter(GenericEvent::CpuCycles.into(), PrivilegeFilter::ALL)
            .unwrap();
        regs.raise_overflow(1 << 0 | 1 << 2 | 1 << 31);
        assert!(held[2].overflowed() && held[0].overflowed() && cycles.overflowed());
        assert!(!held[1].overflowed());
        regs.clear_writes();
        held[2].clear_overflow();
        assert_eq!(writes(&regs), [RegisterWrite::Pmovsclr(1 << 2)]);
        assert!(!held[2].overflowed());
        assert!(held[0].overflowed() && cycles.overflowed());
        assert_eq!(regs.pmovsset().get(), 1 << 0 | 1 << 31);
    }

    /// QEMU `-cpu max` (PMUv3p5, LP = 0): PMEVCNTR0 preset to 0xFFFF_FFF0, 0x6d events
    /// later reads 0x1_0000_005d with PMOVSSET bit 0 set (docs/qemu.md).
    /// The 32-bit width masks it to 0x5d, what a Cortex-A53 reads.
    #[test]
    fn qemu_long_storage_with_lp_clear_is_masked() {
        let regs = FakeRegisters::qemu_max_icount();
        let pool = CounterPool::new(qemu_max(&regs));
        let ins = pool
            .counter(GenericEvent::Instructions.into(), PrivilegeFilter::ALL)
            .unwrap();
        ins.preset_before_wrap(16);
        assert_eq!(ins.read(), 0xFFFF_FFF0);
        ins.start();
        regs.count(EventNumber::INST_RETIRED, 0x6d);
        assert_eq!(pool.pmu().read(ins.slot()), 0x1_0000_005d);
        assert_eq!(ins.read(), 0x5d);
        assert!(ins.overflowed());
        assert_eq!(ins.width().wrapping_delta(0xFFFF_FFF0, ins.read()), 0x6d);
    }

    /// With LC = 1 the cycle counter overflows at 2^64 (docs/qemu.md: "PMCCNTR with
    /// LC=1 wraps at 64 bits"), flag in bit 31.
    #[test]
    fn cycle_counter_is_64_bit() {
        let regs = FakeRegisters::qemu_max_icount();
        let pool = CounterPool::new(qemu_max(&regs));
        let cycles = pool
            .counter(GenericEvent::CpuCycles.into(), PrivilegeFilter::ALL)
            .unwrap();
        cycles.set(0xFFFF_FFF0);
        cycles.start();
        regs.count(EventNumber::CPU_CYCLES, 0x20);
        assert_eq!(cycles.read(), 0x1_0000_0010);
        assert!(!cycles.overflowed());
        cycles.preset_before_wrap(8);
        regs.count(EventNumber::CPU_CYCLES, 10);
        assert_eq!(cycles.read(), 2);
        assert!(cycles.overflowed());
        assert_eq!(regs.pmovsset().get(), 1 << 31);
    }

    /// SW_INCR through PMSWINC_EL0 (QEMU implements it exactly).
    #[test]
    fn software_increment() {
        let regs = FakeRegisters::qemu_max_icount();
        let pool = CounterPool::new(qemu_max(&regs));
        let _other = pool
            .counter(GenericEvent::Instructions.into(), PrivilegeFilter::ALL)
            .unwrap();
        let sw = pool
            .counter(Event::Raw(0x00), PrivilegeFilter::ALL)
            .unwrap();
        assert_eq!(sw.slot(), Slot::Programmable(1));
        sw.start();
        regs.clear_writes();
        for _ in 0..3 {
            pool.pmu().software_increment(sw.slot()).unwrap();
        }
        assert_eq!(writes(&regs), [RegisterWrite::Pmswinc(1 << 1); 3]);
        assert_eq!(sw.read(), 3);
        assert_eq!(
            pool.pmu().software_increment(Slot::Fixed(0)),
            Err(Error::CounterOutOfRange {
                slot: Slot::Fixed(0),
                available: 0
            })
        );
        assert!(pool
            .pmu()
            .software_increment(Slot::Programmable(6))
            .is_err());
    }

    /// The cycle counter's overflow interrupt is PMINTENSET_EL1 bit 31 (Linux
    /// `ARMV8_PMU_CYCLE_IDX`), written alone.
    #[test]
    fn cycle_overflow_interrupt() {
        let regs = FakeRegisters::qemu_max_icount();
        let pmu = qemu_max(&regs);
        regs.clear_writes();
        pmu.disable_all_overflow_interrupts();
        assert_eq!(
            writes(&regs),
            [RegisterWrite::Pmintenclr(ALL_QEMU_COUNTERS)]
        );
        regs.clear_writes();
        pmu.enable_overflow_interrupt(Slot::Fixed(0)).unwrap();
        assert_eq!(writes(&regs), [RegisterWrite::Pmintenset(1 << 31)]);
        assert!(pmu.overflow_interrupt_enabled(Slot::Fixed(0)));
        assert!(!pmu.overflow_interrupt_enabled(Slot::Programmable(0)));
        regs.clear_writes();
        pmu.disable_overflow_interrupt(Slot::Fixed(0)).unwrap();
        assert_eq!(writes(&regs), [RegisterWrite::Pmintenclr(1 << 31)]);
        assert_eq!(
            pmu.enable_overflow_interrupt(Slot::Programmable(6)),
            Err(Error::CounterOutOfRange {
                slot: Slot::Programmable(6),
                available: 6
            })
        );
    }

    /// Dropping a handle disables its counter and clears its flag, nothing else.
    #[test]
    fn drop_disables_one_counter() {
        let regs = FakeRegisters::qemu_max_icount();
        let pool = CounterPool::new(qemu_max(&regs));
        let keep = pool
            .counter(GenericEvent::CpuCycles.into(), PrivilegeFilter::ALL)
            .unwrap();
        keep.start();
        let ins = pool
            .counter(GenericEvent::Instructions.into(), PrivilegeFilter::ALL)
            .unwrap();
        ins.start();
        regs.clear_writes();
        drop(ins);
        assert_eq!(
            writes(&regs),
            [
                RegisterWrite::Pmcntenclr(1 << 0),
                RegisterWrite::Pmovsclr(1 << 0)
            ]
        );
        assert_eq!(regs.pmcntenset().get(), 1 << 31);
    }
}
