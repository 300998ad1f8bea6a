//! The AArch32 [`Pmu`]: generic over how the registers are reached.
//!
//! [`Armv7Pmu`] holds the driver logic (probe, counter numbering, event resolution
//! against PMCEID, filters, enable/overflow bits) and touches the hardware only through
//! [`PmuRegisters`]: `pl1::Pl1Registers` at PL1, `pl0::Pl0Registers` at PL0 after the
//! kernel set PMUSERENR.EN (both `target_arch = "arm"` only), and
//! [`crate::fake::FakeRegisters`] on the host.
//!
//! Probe and reset follow Linux 6.12 drivers/perf/arm_v7_pmu.c:
//! `armv7_read_num_pmnc_events` (N from PMCR), `armv7pmu_reset` (every counter and
//! overflow interrupt disabled, overflow flags cleared, PMCR = P | C) and
//! `armv7pmu_start` (PMCR.E). Every counter is 32 bits: the ARMv7 counters are, and on
//! PMUv3 the driver keeps PMCR.LC = 0 (the cycle counter overflows at 2^32; `mrc`
//! reads its low 32 bits).

use core::fmt;

use pmu_armv8::{Armv8Event, EventNumber, ImplementedEvents};
use pmu_core::{
    Capabilities, CounterWidth, Error, EventEncoding, GenericEvent, Pmu, PrivilegeFilter, Slot,
};

use crate::registers::counter_bits::CYCLE_COUNTER_BIT;
use crate::registers::pmselr::CYCLE_COUNTER_FILTER;
use crate::registers::pmxevtyper;
use crate::registers::{
    PerfMon, Pmccfiltr, Pmcntenclr, Pmcntenset, Pmcr, Pmintenclr, Pmintenset, Pmovsr, Pmswinc,
    Pmxevtyper, PMCR,
};

/// Access to the AArch32 PMU registers of one processor (all but PMINTEN* and
/// PMUSERENR).
///
/// The methods are safe: an implementation that reaches hardware makes its constructor
/// `unsafe` and states there what makes every access permitted (PL1, or PMUSERENR.EN at
/// PL0; exclusive ownership; a pinned CPU; no interrupt handler that changes PMSELR
/// between the select and the access). Counter numbers at or above PMCR.N are never
/// passed.
pub trait PmuRegisters {
    /// PMCR.
    fn pmcr(&self) -> Pmcr;
    /// Writes PMCR and synchronizes (`isb`).
    fn set_pmcr(&self, value: Pmcr);
    /// PMCEID0 and PMCEID1, `None` when not read: the cp15 register files read them on
    /// PMUv3 only. ARMv7 PMUv2 defines them too (DDI 0406C C12), but QEMU 10.0.2
    /// `-cpu cortex-a7`/`cortex-a15` leaves them UNDEFINED (an Undefined Instruction
    /// exception at PL1, measured with the qemu/armv7-virt image), so on PMUv2 every
    /// event evtCount can hold is taken as countable.
    fn pmceid(&self) -> Option<(u32, u32)>;
    /// PMCNTENSET.
    fn pmcntenset(&self) -> Pmcntenset;
    /// Writes PMCNTENSET and synchronizes.
    fn set_pmcntenset(&self, value: Pmcntenset);
    /// Writes PMCNTENCLR and synchronizes.
    fn set_pmcntenclr(&self, value: Pmcntenclr);
    /// PMOVSR.
    fn pmovsr(&self) -> Pmovsr;
    /// Writes PMOVSR: clears the flags of the 1 bits.
    fn set_pmovsr(&self, value: Pmovsr);
    /// Writes PMSWINC.
    fn set_pmswinc(&self, value: Pmswinc);
    /// PMXEVTYPER of counter `sel` (PMSELR = `sel`, `isb`, read); `sel` 31 reads
    /// PMCCFILTR.
    fn pmxevtyper(&self, sel: u8) -> Pmxevtyper;
    /// Writes PMXEVTYPER of counter `sel` (31: PMCCFILTR).
    fn set_pmxevtyper(&self, sel: u8, value: Pmxevtyper);
    /// PMXEVCNTR of event counter `n` (n < PMCR.N).
    fn pmxevcntr(&self, n: u8) -> u32;
    /// Writes PMXEVCNTR of event counter `n` (n < PMCR.N).
    fn set_pmxevcntr(&self, n: u8, value: u32);
    /// PMCCNTR (its low 32 bits).
    fn pmccntr(&self) -> u32;
    /// Writes PMCCNTR.
    fn set_pmccntr(&self, value: u32);
}

/// PMINTENSET / PMINTENCLR: PL1 only (UNDEFINED at PL0 whatever PMUSERENR says).
pub trait InterruptRegisters {
    /// PMINTENSET.
    fn pmintenset(&self) -> Pmintenset;
    /// Writes PMINTENSET.
    fn set_pmintenset(&self, value: Pmintenset);
    /// Writes PMINTENCLR.
    fn set_pmintenclr(&self, value: Pmintenclr);
}

impl<R: PmuRegisters + ?Sized> PmuRegisters for &R {
    fn pmcr(&self) -> Pmcr {
        (**self).pmcr()
    }
    fn set_pmcr(&self, value: Pmcr) {
        (**self).set_pmcr(value);
    }
    fn pmceid(&self) -> Option<(u32, u32)> {
        (**self).pmceid()
    }
    fn pmcntenset(&self) -> Pmcntenset {
        (**self).pmcntenset()
    }
    fn set_pmcntenset(&self, value: Pmcntenset) {
        (**self).set_pmcntenset(value);
    }
    fn set_pmcntenclr(&self, value: Pmcntenclr) {
        (**self).set_pmcntenclr(value);
    }
    fn pmovsr(&self) -> Pmovsr {
        (**self).pmovsr()
    }
    fn set_pmovsr(&self, value: Pmovsr) {
        (**self).set_pmovsr(value);
    }
    fn set_pmswinc(&self, value: Pmswinc) {
        (**self).set_pmswinc(value);
    }
    fn pmxevtyper(&self, sel: u8) -> Pmxevtyper {
        (**self).pmxevtyper(sel)
    }
    fn set_pmxevtyper(&self, sel: u8, value: Pmxevtyper) {
        (**self).set_pmxevtyper(sel, value);
    }
    fn pmxevcntr(&self, n: u8) -> u32 {
        (**self).pmxevcntr(n)
    }
    fn set_pmxevcntr(&self, n: u8, value: u32) {
        (**self).set_pmxevcntr(n, value);
    }
    fn pmccntr(&self) -> u32 {
        (**self).pmccntr()
    }
    fn set_pmccntr(&self, value: u32) {
        (**self).set_pmccntr(value);
    }
}

impl<R: InterruptRegisters + ?Sized> InterruptRegisters for &R {
    fn pmintenset(&self) -> Pmintenset {
        (**self).pmintenset()
    }
    fn set_pmintenset(&self, value: Pmintenset) {
        (**self).set_pmintenset(value);
    }
    fn set_pmintenclr(&self, value: Pmintenclr) {
        (**self).set_pmintenclr(value);
    }
}

/// Why the driver cannot take over the PMU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProbeError {
    /// ID_DFR0.PerfMon names no PMU this crate drives (0, 0xF or unknown).
    NoArchitectedPmu {
        /// What PerfMon says.
        perfmon: PerfMon,
    },
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoArchitectedPmu { perfmon } => write!(
                f,
                "this CPU has no ARM-architected PMU (ID_DFR0.PerfMon: {perfmon}): use a CPU \
                 model with one (QEMU: -cpu cortex-a7, cortex-a15)"
            ),
        }
    }
}

impl core::error::Error for ProbeError {}

/// One AArch32 counter: event counter n (bit n, `Slot::Programmable(n)`) or the cycle
/// counter PMCCNTR (bit 31, `Slot::Fixed(0)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CounterId {
    /// Event counter n (PMSELR.SEL = n), n < PMCR.N.
    Event(u8),
    /// PMCCNTR.
    Cycle,
}

impl CounterId {
    /// Its bit in PMCNTENSET/CLR, PMOVSR, PMINTENSET/CLR, PMSWINC.
    pub const fn mask(self) -> u32 {
        match self {
            Self::Event(n) => 1 << n,
            Self::Cycle => 1 << CYCLE_COUNTER_BIT,
        }
    }
}

/// The AArch32 PMU driver over register file `R`.
///
/// Owns the PMU from construction on; its slot operations are meant to be reached
/// through a [`pmu_core::CounterPool`].
#[derive(Debug)]
pub struct Armv7Pmu<R> {
    regs: R,
    perfmon: PerfMon,
    implemented: Option<ImplementedEvents>,
    event_counters: u8,
}

impl<R: PmuRegisters> Armv7Pmu<R> {
    /// Takes over the PMU behind `regs`, a processor whose ID_DFR0.PerfMon is `perfmon`
    /// (PL1 reads it with `asm::id_dfr0`; PL0 cannot and must be told): reads N and
    /// PMCEID, disables every counter, clears the overflow flags, zeroes all counters
    /// and sets PMCR = E (P and C written as 1 reset the counters; D, X, DP, LC = 0).
    ///
    /// # Errors
    /// [`ProbeError::NoArchitectedPmu`], before any register access.
    pub fn new(regs: R, perfmon: PerfMon) -> Result<Self, ProbeError> {
        if !perfmon.is_architected() {
            return Err(ProbeError::NoArchitectedPmu { perfmon });
        }
        let event_counters = regs.pmcr().read(PMCR::N).min(31) as u8;
        let implemented = regs
            .pmceid()
            .map(|(lo, hi)| ImplementedEvents::new(u64::from(lo), u64::from(hi)));
        let pmu = Self {
            regs,
            perfmon,
            implemented,
            event_counters,
        };
        let all = pmu.all_counters_mask();
        pmu.regs.set_pmcntenclr(Pmcntenclr::new(all));
        pmu.regs.set_pmovsr(Pmovsr::new(all));
        let mut pmcr = Pmcr::new(0);
        pmcr.write(PMCR::E::SET + PMCR::P::SET + PMCR::C::SET);
        pmu.regs.set_pmcr(pmcr);
        Ok(pmu)
    }

    /// What ID_DFR0.PerfMon said.
    pub fn perfmon(&self) -> PerfMon {
        self.perfmon
    }

    /// PMCR.N.
    pub fn event_counters(&self) -> u8 {
        self.event_counters
    }

    /// The common events PMCEID0/1 report (`None` where they are not read: PMUv1, PMUv2).
    pub fn implemented_events(&self) -> Option<ImplementedEvents> {
        self.implemented
    }

    /// The register file (for inspection; writing through it bypasses the driver).
    pub fn registers(&self) -> &R {
        &self.regs
    }

    /// The bits of every counter: 0..N and 31.
    pub fn all_counters_mask(&self) -> u32 {
        ((1u64 << self.event_counters) - 1) as u32 | CounterId::Cycle.mask()
    }

    /// The counter behind `slot`, if this PMU has it.
    pub fn counter_id(&self, slot: Slot) -> Option<CounterId> {
        match slot {
            Slot::Programmable(n) if n < self.event_counters => Some(CounterId::Event(n)),
            Slot::Fixed(0) => Some(CounterId::Cycle),
            _ => None,
        }
    }

    fn checked(&self, slot: Slot) -> Result<CounterId, Error> {
        self.counter_id(slot).ok_or(Error::CounterOutOfRange {
            slot,
            available: match slot {
                Slot::Programmable(_) => u32::from(self.event_counters),
                Slot::Fixed(_) => 1,
            },
        })
    }

    /// The largest event number PMXEVTYPER.evtCount holds here: 0xFF on PMUv1/PMUv2
    /// (DDI 0406C C12), 0x3FF on PMUv3, 0xFFFF from PMUv3p1.
    pub fn max_event_number(&self) -> u16 {
        match self.perfmon {
            PerfMon::PmuV3(v) if v.has_16bit_event_numbers() => u16::MAX,
            PerfMon::PmuV3(_) => EventNumber::MAX_PMUV3,
            _ => 0xFF,
        }
    }

    /// Whether this processor counts event `number`: a common event when PMCEID says
    /// so (every encodable one where PMCEID is not read), an IMPLEMENTATION
    /// DEFINED one whenever evtCount can hold it.
    pub fn counts(&self, number: EventNumber) -> bool {
        number.get() <= self.max_event_number()
            && self
                .implemented
                .and_then(|i| i.contains(number))
                .unwrap_or(true)
    }

    /// The event number `event` is programmed as here: its first choice this processor
    /// counts.
    pub fn resolve(&self, event: Armv8Event) -> Option<EventNumber> {
        event.candidates().find(|&n| self.counts(n))
    }

    /// Increments event counter `slot` through PMSWINC (counts only when enabled and
    /// programmed with SW_INCR, 0x00).
    ///
    /// # Errors
    /// [`Error::CounterOutOfRange`] for the cycle counter or a missing counter.
    pub fn software_increment(&self, slot: Slot) -> Result<(), Error> {
        match self.checked(slot)? {
            CounterId::Event(n) => {
                self.regs
                    .set_pmswinc(Pmswinc::new(CounterId::Event(n).mask()));
                Ok(())
            }
            CounterId::Cycle => Err(Error::CounterOutOfRange { slot, available: 0 }),
        }
    }

    fn filter_supported(&self, filter: PrivilegeFilter) -> bool {
        self.perfmon.has_filtering() || (filter.user && filter.kernel)
    }
}

impl<R: PmuRegisters + InterruptRegisters> Armv7Pmu<R> {
    /// Enables the overflow interrupt of `slot` (PMINTENSET, that bit only).
    ///
    /// # Errors
    /// [`Error::CounterOutOfRange`] for a counter this PMU lacks.
    pub fn enable_overflow_interrupt(&self, slot: Slot) -> Result<(), Error> {
        let id = self.checked(slot)?;
        self.regs.set_pmintenset(Pmintenset::new(id.mask()));
        Ok(())
    }

    /// Disables every overflow interrupt (PMINTENCLR = all ones, as
    /// `armv7pmu_reset` does).
    pub fn disable_all_overflow_interrupts(&self) {
        self.regs.set_pmintenclr(Pmintenclr::new(u32::MAX));
    }
}

impl<R: PmuRegisters> Pmu for Armv7Pmu<R> {
    type Event = Armv8Event;

    /// N 32-bit event counters and the 32-bit cycle counter.
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            programmable: u32::from(self.event_counters),
            programmable_width: CounterWidth::W32,
            fixed: 1,
            fixed_width: CounterWidth::W32,
        }
    }

    fn is_implemented(&self, event: Armv8Event) -> bool {
        self.resolve(event).is_some()
    }

    fn fixed_event(&self, index: u8) -> Option<GenericEvent> {
        (index == 0).then_some(GenericEvent::CpuCycles)
    }

    /// Programs PMXEVTYPER (evtCount, P, U, NSH) of the selected counter, or PMCCFILTR
    /// (PMSELR = 31) for the cycle counter. On PMUv1 only "everywhere" is encodable.
    fn configure(
        &self,
        slot: Slot,
        event: Armv8Event,
        filter: PrivilegeFilter,
    ) -> Result<(), Error> {
        let id = self.checked(slot)?;
        if !self.filter_supported(filter) {
            return Err(Error::FilterUnsupported { filter });
        }
        match id {
            CounterId::Cycle => {
                if event.preferred() != EventNumber::CPU_CYCLES {
                    return Err(Error::EventNotCountableOnSlot {
                        slot,
                        code: event.code(),
                    });
                }
                if self.perfmon.has_filtering() {
                    let value: Pmccfiltr = pmxevtyper::filter_bits(filter);
                    self.regs.set_pmxevtyper(CYCLE_COUNTER_FILTER as u8, value);
                }
            }
            CounterId::Event(n) => {
                let number = self
                    .resolve(event)
                    .ok_or(Error::EventNotImplemented { code: event.code() })?;
                let value = if self.perfmon.has_filtering() {
                    pmxevtyper::for_event(number, filter)
                } else {
                    // PMUv1: evtCount alone (the filter bits are UNK/SBZP there).
                    Pmxevtyper::new(u32::from(number.get()))
                };
                self.regs.set_pmxevtyper(n, value);
            }
        }
        Ok(())
    }

    /// Writes only the counter's bit to PMCNTENSET.
    fn enable(&self, slot: Slot) {
        if let Some(id) = self.counter_id(slot) {
            self.regs.set_pmcntenset(Pmcntenset::new(id.mask()));
        }
    }

    /// Writes only the counter's bit to PMCNTENCLR.
    fn disable(&self, slot: Slot) {
        if let Some(id) = self.counter_id(slot) {
            self.regs.set_pmcntenclr(Pmcntenclr::new(id.mask()));
        }
    }

    fn read(&self, slot: Slot) -> u64 {
        match self.counter_id(slot) {
            Some(CounterId::Event(n)) => u64::from(self.regs.pmxevcntr(n)),
            Some(CounterId::Cycle) => u64::from(self.regs.pmccntr()),
            None => 0,
        }
    }

    /// Writes the low 32 bits (the counters are 32 bits wide).
    fn write(&self, slot: Slot, value: u64) {
        match self.counter_id(slot) {
            Some(CounterId::Event(n)) => self.regs.set_pmxevcntr(n, value as u32),
            Some(CounterId::Cycle) => self.regs.set_pmccntr(value as u32),
            None => {}
        }
    }

    fn overflowed(&self, slot: Slot) -> bool {
        self.counter_id(slot)
            .is_some_and(|id| self.regs.pmovsr().get() & id.mask() != 0)
    }

    /// Writes only the counter's bit to PMOVSR (write-one-to-clear).
    fn clear_overflow(&self, slot: Slot) {
        if let Some(id) = self.counter_id(slot) {
            self.regs.set_pmovsr(Pmovsr::new(id.mask()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeRegisters;
    use pmu_core::CounterPool;

    /// Linux 6.12 drivers/perf/arm_v7_pmu.c `armv7pmu_reset` + `armv7pmu_start`:
    /// counters disabled, overflow flags cleared, PMCR = E after P | C; N from PMCR (4 on
    /// QEMU 10.0.2 cortex-a7, PMCR 0x41072000 before E, measured by qemu/armv7-virt).
    #[test]
    fn probe_and_reset_cortex_a7() {
        let regs = FakeRegisters::cortex_a7();
        regs.program_as_perf(0, 0x08, 9);
        let pmu = Armv7Pmu::new(&regs, PerfMon::PmuV2).unwrap();
        assert_eq!(pmu.event_counters(), 4);
        assert_eq!(pmu.all_counters_mask(), 0x8000_000F);
        assert_eq!(regs.pmcntenset().get(), 0);
        assert_eq!(regs.event_count(0), 0);
        assert_eq!(regs.pmcr().get() & 0x3F, 1);
        let caps = pmu.capabilities();
        assert_eq!(caps.programmable, 4);
        assert_eq!(caps.programmable_width, CounterWidth::W32);
        assert_eq!(caps.fixed_width, CounterWidth::W32);
    }

    /// ID_DFR0.PerfMon 0xF: no ARM-architected PMU (DDI 0406C B4.1); nothing touched.
    #[test]
    fn no_pmu_is_refused_before_any_access() {
        let regs = FakeRegisters::new(0x0F00_0000, 0, None);
        let perfmon = PerfMon::from_id_dfr0(0x0F00_0000);
        assert!(matches!(
            Armv7Pmu::new(&regs, perfmon),
            Err(ProbeError::NoArchitectedPmu { .. })
        ));
        assert_eq!(regs.write_count(), 0);
    }

    /// A 32-bit counter preset to 0xFFFF_FFF0 wraps after 0x10 events and sets its
    /// PMOVSR bit (DDI 0406C C12 "Counter overflow"); pmu-core's delta with one wrap
    /// gives the true count.
    #[test]
    fn overflow_flagged_and_corrected() {
        let regs = FakeRegisters::cortex_a7();
        let pmu = Armv7Pmu::new(&regs, PerfMon::PmuV2).unwrap();
        let pool = CounterPool::new(&pmu);
        let c = pool
            .counter(
                pmu_core::GenericEvent::Instructions.into(),
                PrivilegeFilter::ALL,
            )
            .unwrap();
        pmu.write(c.slot(), 0xFFFF_FFF0);
        c.start();
        regs.count(EventNumber::INST_RETIRED, 0x20);
        assert_eq!(c.read(), 0x10);
        assert!(pmu.overflowed(c.slot()));
        pmu.clear_overflow(c.slot());
        assert!(!pmu.overflowed(c.slot()));
        let width = pmu.capabilities().programmable_width;
        assert_eq!(width.wrapping_delta(0xFFFF_FFF0, 0x10), 0x20);
    }

    /// PMUv2 evtCount is 8 bits (DDI 0406C C12): 0x100 is not countable there, but
    /// is on PMUv3 (10 bits, DDI 0487 G8 "`PMEVTYPER<n>`"); PMCEID0 0x20101 says
    /// L1D_CACHE (0x04) is not implemented.
    #[test]
    fn events_checked() {
        let regs = FakeRegisters::cortex_a7();
        let v2 = Armv7Pmu::new(&regs, PerfMon::PmuV2).unwrap();
        assert!(!v2.counts(EventNumber::new(0x100)));
        assert!(v2.counts(EventNumber::new(0x04)));
        let regs = FakeRegisters::cortex_a53_aarch32();
        let pmu = Armv7Pmu::new(&regs, PerfMon::from_id_dfr0(0x0301_0066)).unwrap();
        assert!(pmu.counts(EventNumber::new(0x100)));
        assert!(!pmu.counts(EventNumber::new(0x04)));
        assert!(pmu.counts(EventNumber::INST_RETIRED));
        // IMPLEMENTATION DEFINED events (0x40..=0xFF in ARMv7, DDI 0406C C12) pass.
        assert!(pmu.counts(EventNumber::new(0x60)));
        assert!(matches!(
            pmu.configure(
                Slot::Programmable(0),
                Armv8Event::new(EventNumber::new(0x04)),
                PrivilegeFilter::ALL
            ),
            Err(Error::EventNotImplemented { code: 0x04 })
        ));
    }

    /// The cycle counter's filter goes to PMCCFILTR through PMSELR = 31 (Linux
    /// `armv7pmu_enable_event` writes the cycle counter's evtsel too when filtering).
    #[test]
    fn cycle_counter_filter_through_pmselr_31() {
        let regs = FakeRegisters::cortex_a7();
        let pmu = Armv7Pmu::new(&regs, PerfMon::PmuV2).unwrap();
        pmu.configure(
            Slot::Fixed(0),
            Armv8Event::new(EventNumber::CPU_CYCLES),
            PrivilegeFilter::USER,
        )
        .unwrap();
        assert_eq!(regs.event_type(31), 0x8000_0000);
        assert!(matches!(
            pmu.configure(
                Slot::Fixed(0),
                Armv8Event::new(EventNumber::INST_RETIRED),
                PrivilegeFilter::ALL
            ),
            Err(Error::EventNotCountableOnSlot { .. })
        ));
    }

    /// PMUv1 (Cortex-A8/A9) has no filter bits (DDI 0406C C12): user-only refused,
    /// everywhere accepted with evtCount alone.
    #[test]
    fn pmuv1_has_no_filters() {
        let regs = FakeRegisters::new(0x0100_0000, 0x4109_2000, None);
        let pmu = Armv7Pmu::new(&regs, PerfMon::PmuV1).unwrap();
        let ev = Armv8Event::new(EventNumber::INST_RETIRED);
        assert!(matches!(
            pmu.configure(Slot::Programmable(0), ev, PrivilegeFilter::USER),
            Err(Error::FilterUnsupported { .. })
        ));
        pmu.configure(Slot::Programmable(0), ev, PrivilegeFilter::ALL)
            .unwrap();
        assert_eq!(regs.event_type(0), 0x08);
    }

    /// Slots beyond PMCR.N (4 on cortex-a7) are refused, not accessed.
    #[test]
    fn counter_out_of_range() {
        let regs = FakeRegisters::cortex_a7();
        let pmu = Armv7Pmu::new(&regs, PerfMon::PmuV2).unwrap();
        assert!(matches!(
            pmu.configure(
                Slot::Programmable(4),
                Armv8Event::new(EventNumber::INST_RETIRED),
                PrivilegeFilter::ALL
            ),
            Err(Error::CounterOutOfRange { available: 4, .. })
        ));
        assert_eq!(pmu.read(Slot::Programmable(4)), 0);
    }

    /// PMSWINC increments an enabled SW_INCR counter (DDI 0406C C12).
    #[test]
    fn software_increment_and_interrupts() {
        let regs = FakeRegisters::cortex_a7();
        let pmu = Armv7Pmu::new(&regs, PerfMon::PmuV2).unwrap();
        pmu.configure(
            Slot::Programmable(1),
            Armv8Event::new(EventNumber::SW_INCR),
            PrivilegeFilter::ALL,
        )
        .unwrap();
        pmu.enable(Slot::Programmable(1));
        pmu.software_increment(Slot::Programmable(1)).unwrap();
        assert_eq!(pmu.read(Slot::Programmable(1)), 1);
        assert!(pmu.software_increment(Slot::Fixed(0)).is_err());
        pmu.enable_overflow_interrupt(Slot::Fixed(0)).unwrap();
        assert_eq!(regs.interrupts(), 1 << 31);
        pmu.disable_all_overflow_interrupts();
        assert_eq!(regs.interrupts(), 0);
    }
}
