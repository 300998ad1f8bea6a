//! The ARM1176 [`Pmu`]: CCR as fixed counter 0, CR0 and CR1 as programmable counters.
//!
//! [`Arm1176Pmu`] is written against [`PmuRegisters`], so the same logic runs on the
//! real registers (`Cp15`, ARM only) and on [`crate::fake::FakeRegisters`] in
//! host tests.
//!
//! # Stopping one counter when only all three can stop
//!
//! PMCR.E starts and stops all three counters at once, and the CCR cannot be pointed
//! at another event. The scheme, after Linux (drivers/perf/arm_v6_pmu.c) but exact:
//!
//! - a stopped CR0/CR1 is *parked*: its event field is set to 0x20 (ETMEXTOUT\[0\],
//!   Linux's `ARMV6_PERFCTR_NOP`), which does not move while no ETM drives that signal,
//!   and PMCR.X (export to the ETM) is kept 0;
//! - the value and overflow flag of a stopped counter are kept aside when it stops, and
//!   are what [`Pmu::read`] and [`Pmu::overflowed`] report while it is stopped. On
//!   start the kept value is written back, and an overflow flag that was raised while it
//!   was stopped is cleared. So a stopped counter is exact even though the CCR keeps
//!   running under PMCR.E and an ETM could move a parked counter;
//! - PMCR.E is set while at least one counter runs and cleared when none does;
//! - every start or stop first clears PMCR.E ("freeze"), edits, and then writes the
//!   final PMCR: nothing counts while the kept values are exchanged, so no event and no
//!   wrap is lost or invented in between.
//!
//! # Overflow flags
//!
//! The flags are write-1-to-clear, and P and C reset counters when written as 1 (and
//! read as Unpredictable). Every PMCR write here starts from
//! [`pmcr::for_write_back`], which zeroes all of them, and
//! sets only the one flag it means to clear. A pending flag of one counter therefore
//! survives anything done to the others. The interrupt enables are kept 0: the
//! Raspberry Pi's ARM11 has no PMU interrupt wired (Linux 6.12 arch/arm/boot/dts/broadcom/bcm2835.dtsi: its `arm,arm1176-pmu` node has no `interrupts`),
//! and this driver has no handler.
//!
//! # Privilege levels
//!
//! The ARM1176 counts in every mode; it has no privilege filter. [`Pmu::configure`]
//! accepts only [`PrivilegeFilter::ALL`] and answers anything else with
//! [`Error::FilterUnsupported`].

use core::cell::Cell;

use pmu_core::{Capabilities, CounterWidth, Error, GenericEvent, Pmu, PrivilegeFilter, Slot};

use crate::ccr::CycleDivider;
use crate::event::Arm1176Event;
use crate::pmcr::{self, CounterRegister, Pmcr, PMCR};

/// Access to PMCR, CCR, CR0 and CR1 of one ARM1176.
///
/// # Safety
/// An implementation guarantees that its safe methods may be called at any time on the
/// CPU that holds the value: for the real registers, that the CPU is an ARM1176, the
/// code runs at PL1 (or PL0 with SUNAVCR.V set) and the PMU is owned by this value.
pub unsafe trait PmuRegisters {
    /// Reads PMCR (P and C Unpredictable).
    fn read_pmcr(&self) -> Pmcr;

    /// Writes PMCR: 1 in a flag clears it, 1 in P or C resets counters.
    ///
    /// # Safety
    /// `value` sets no interrupt enable (EC0, EC1, ECC) unless a handler for the PMU
    /// interrupt is installed that clears the overflow flags.
    unsafe fn write_pmcr(&self, value: Pmcr);

    /// Reads a counter.
    fn read_counter(&self, counter: CounterRegister) -> u32;

    /// Writes a counter.
    fn write_counter(&self, counter: CounterRegister, value: u32);
}

/// What the driver keeps per counter.
#[derive(Clone, Copy, Debug)]
struct CounterState {
    /// Counting (not parked).
    running: bool,
    /// The configured event (always 0xFF for the CCR).
    event: Arm1176Event,
    /// The value to report while stopped, and to restore on start.
    kept_value: u32,
    /// The overflow flag to report while stopped.
    kept_overflow: bool,
}

/// The ARM1176 PMU: three 32-bit counters, CCR as [`Slot::Fixed`]`(0)` counting
/// cycles, CR0 and CR1 as [`Slot::Programmable`]`(0)` and `(1)`.
///
/// Not `Sync`: a PMU belongs to one CPU. See the [module docs](self) for how single
/// counters are stopped and how overflow flags are kept safe.
#[derive(Debug)]
pub struct Arm1176Pmu<R: PmuRegisters> {
    registers: R,
    divider: Cell<CycleDivider>,
    counters: [Cell<CounterState>; 3],
}

#[cfg(target_arch = "arm")]
impl Arm1176Pmu<crate::Cp15> {
    /// Takes over the PMU of the current CPU (see [`Arm1176Pmu::with_registers`]).
    ///
    /// # Safety
    /// - The CPU is an ARM1176 (Raspberry Pi 1 / Zero: BCM2835).
    /// - The code runs at PL1, or at PL0 with SUNAVCR.V set (kmod-enable-user's stock flavour).
    /// - It stays on this CPU, and nothing else uses the PMU while the value lives:
    ///   not Linux perf, not another `Arm1176Pmu`, not an interrupt handler.
    pub unsafe fn new(divider: CycleDivider) -> Self {
        // SAFETY: the caller's contract is exactly `Cp15::new`'s.
        let registers = unsafe { crate::Cp15::new() };
        Self::with_registers(registers, divider)
    }
}

impl<R: PmuRegisters> Arm1176Pmu<R> {
    /// Takes over the PMU behind `registers`: stops all counters (PMCR.E = 0), parks
    /// CR0 and CR1, disables the overflow interrupts and the export to the ETM, and
    /// sets the CCR divider. Pending overflow flags and the counts are left as they are
    /// (a [`pmu_core::CounterPool`] clears a counter's flag when it hands it out).
    pub fn with_registers(registers: R, divider: CycleDivider) -> Self {
        let mut value = pmcr::for_write_back(registers.read_pmcr());
        value.modify(
            PMCR::E::CLEAR
                + PMCR::EC0::CLEAR
                + PMCR::EC1::CLEAR
                + PMCR::ECC::CLEAR
                + PMCR::X::CLEAR
                + divider.pmcr_value().into()
                + PMCR::EvtCount0.val(Arm1176Event::PARKED.code().into())
                + PMCR::EvtCount1.val(Arm1176Event::PARKED.code().into()),
        );
        // SAFETY: all interrupt enables were just cleared.
        unsafe { registers.write_pmcr(value) };
        let flags = registers.read_pmcr();
        let counters = CounterRegister::ALL.map(|counter| {
            Cell::new(CounterState {
                running: false,
                event: match counter {
                    CounterRegister::Ccr => Arm1176Event::CycleCount,
                    _ => Arm1176Event::PARKED,
                },
                kept_value: registers.read_counter(counter),
                kept_overflow: flags.is_set(counter.overflow_flag()),
            })
        });
        Self {
            registers,
            divider: Cell::new(divider),
            counters,
        }
    }

    /// The registers underneath (the fake ones, in tests).
    pub fn registers(&self) -> &R {
        &self.registers
    }

    /// Gives the registers back. The PMU is left as it is.
    pub fn into_registers(self) -> R {
        self.registers
    }

    /// The CCR divider in use.
    pub fn cycle_divider(&self) -> CycleDivider {
        self.divider.get()
    }

    /// Sets the CCR divider (PMCR.D). Takes effect at once, also for a running CCR,
    /// whose count then mixes both rates: set it while the CCR is stopped.
    pub fn set_cycle_divider(&self, divider: CycleDivider) {
        let mut value = self.write_back_base();
        value.modify(divider.pmcr_value().into());
        self.write_pmcr(value);
        self.divider.set(divider);
    }

    /// The event `slot` is configured for, `None` for a slot the ARM1176 lacks.
    pub fn configured_event(&self, slot: Slot) -> Option<Arm1176Event> {
        CounterRegister::from_slot(slot).map(|counter| self.state(counter).event)
    }

    /// Whether `slot` is counting.
    pub fn is_running(&self, slot: Slot) -> bool {
        CounterRegister::from_slot(slot).is_some_and(|counter| self.state(counter).running)
    }

    fn cell(&self, counter: CounterRegister) -> &Cell<CounterState> {
        &self.counters[counter as usize]
    }

    fn state(&self, counter: CounterRegister) -> CounterState {
        self.cell(counter).get()
    }

    fn any_running(&self) -> bool {
        self.counters.iter().any(|c| c.get().running)
    }

    /// PMCR as read, minus everything a write would act on, minus interrupt enables.
    fn write_back_base(&self) -> Pmcr {
        let mut value = pmcr::for_write_back(self.registers.read_pmcr());
        value.modify(PMCR::EC0::CLEAR + PMCR::EC1::CLEAR + PMCR::ECC::CLEAR);
        value
    }

    /// The one place PMCR is written.
    fn write_pmcr(&self, value: Pmcr) {
        let mut value = value;
        // Enforced here for every write, whatever the caller built.
        value.modify(PMCR::EC0::CLEAR + PMCR::EC1::CLEAR + PMCR::ECC::CLEAR);
        // SAFETY: the interrupt enables were cleared on the line above.
        unsafe { self.registers.write_pmcr(value) };
    }

    /// Stops all counting and returns the base for the final write.
    fn freeze(&self) -> Pmcr {
        let base = self.write_back_base();
        if base.is_set(PMCR::E) {
            let mut frozen = base;
            frozen.modify(PMCR::E::CLEAR);
            self.write_pmcr(frozen);
        }
        base
    }

    fn start(&self, counter: CounterRegister) {
        let state = self.state(counter);
        if state.running {
            return;
        }
        let mut value = self.freeze();
        // Nothing counts now: the flag and the value can be exchanged exactly.
        let raised_while_stopped =
            self.registers.read_pmcr().is_set(counter.overflow_flag()) && !state.kept_overflow;
        self.registers.write_counter(counter, state.kept_value);
        if let Some(field) = counter.event_field() {
            value.modify(field.val(state.event.code().into()));
        }
        if raised_while_stopped {
            // The flag was set by a parked CR0/CR1 or the free-running CCR, not by
            // counting: write 1 to clear this flag and no other.
            value.modify(counter.overflow_flag().val(1));
        }
        value.modify(PMCR::E::SET);
        self.cell(counter).set(CounterState {
            running: true,
            ..state
        });
        self.write_pmcr(value);
    }

    fn stop(&self, counter: CounterRegister) {
        let state = self.state(counter);
        if !state.running {
            return;
        }
        let mut value = self.freeze();
        let kept_value = self.registers.read_counter(counter);
        let kept_overflow = self.registers.read_pmcr().is_set(counter.overflow_flag());
        self.cell(counter).set(CounterState {
            running: false,
            kept_value,
            kept_overflow,
            ..state
        });
        if let Some(field) = counter.event_field() {
            value.modify(field.val(Arm1176Event::PARKED.code().into()));
        }
        if !self.any_running() {
            value.modify(PMCR::E::CLEAR);
        }
        self.write_pmcr(value);
    }
}

impl<R: PmuRegisters> Pmu for Arm1176Pmu<R> {
    type Event = Arm1176Event;

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            programmable: 2,
            programmable_width: CounterWidth::W32,
            fixed: 1,
            fixed_width: CounterWidth::W32,
        }
    }

    /// Always `true`: an [`Arm1176Event`] is an implemented event by construction
    /// (reserved numbers are rejected by
    /// [`EventEncoding::from_raw`](pmu_core::EventEncoding::from_raw)).
    fn is_implemented(&self, _event: Arm1176Event) -> bool {
        true
    }

    /// The CCR counts cycles. With [`CycleDivider::Every64thCycle`] it counts them in
    /// units of 64 (see [`Arm1176Pmu::cycle_divider`]).
    fn fixed_event(&self, index: u8) -> Option<GenericEvent> {
        (index == 0).then_some(GenericEvent::CpuCycles)
    }

    /// Stops `slot` (if it runs) and sets its event; [`Pmu::enable`] programs it.
    ///
    /// # Errors
    /// [`Error::CounterOutOfRange`] for a slot the ARM1176 lacks,
    /// [`Error::EventNotCountableOnSlot`] for the CCR and an event other than 0xFF,
    /// [`Error::FilterUnsupported`] for any filter but [`PrivilegeFilter::ALL`].
    fn configure(
        &self,
        slot: Slot,
        event: Arm1176Event,
        filter: PrivilegeFilter,
    ) -> Result<(), Error> {
        let Some(counter) = CounterRegister::from_slot(slot) else {
            let available = match slot {
                Slot::Programmable(_) => 2,
                Slot::Fixed(_) => 1,
            };
            return Err(Error::CounterOutOfRange { slot, available });
        };
        if counter == CounterRegister::Ccr && event != Arm1176Event::CycleCount {
            return Err(Error::EventNotCountableOnSlot {
                slot,
                code: event.code().into(),
            });
        }
        if filter != PrivilegeFilter::ALL {
            return Err(Error::FilterUnsupported { filter });
        }
        self.stop(counter);
        let state = self.state(counter);
        self.cell(counter).set(CounterState { event, ..state });
        Ok(())
    }

    /// Starts `slot`; a slot the ARM1176 lacks is ignored.
    fn enable(&self, slot: Slot) {
        if let Some(counter) = CounterRegister::from_slot(slot) {
            self.start(counter);
        }
    }

    /// Stops `slot`, keeping its value; a slot the ARM1176 lacks is ignored.
    fn disable(&self, slot: Slot) {
        if let Some(counter) = CounterRegister::from_slot(slot) {
            self.stop(counter);
        }
    }

    /// One `mrc` while the counter runs; the kept value while it is stopped. 0 for a
    /// slot the ARM1176 lacks.
    #[inline(always)]
    fn read(&self, slot: Slot) -> u64 {
        let Some(counter) = CounterRegister::from_slot(slot) else {
            return 0;
        };
        let state = self.state(counter);
        if state.running {
            self.registers.read_counter(counter).into()
        } else {
            state.kept_value.into()
        }
    }

    /// Sets the low 32 bits of `value`; a slot the ARM1176 lacks is ignored.
    fn write(&self, slot: Slot, value: u64) {
        let Some(counter) = CounterRegister::from_slot(slot) else {
            return;
        };
        // The counters are 32 bits wide: the truncation is the hardware's.
        let value = value as u32;
        let state = self.state(counter);
        if state.running {
            self.registers.write_counter(counter, value);
        }
        self.cell(counter).set(CounterState {
            kept_value: value,
            ..state
        });
    }

    /// The PMCR flag while the counter runs; the kept flag while it is stopped.
    #[inline(always)]
    fn overflowed(&self, slot: Slot) -> bool {
        let Some(counter) = CounterRegister::from_slot(slot) else {
            return false;
        };
        let state = self.state(counter);
        if state.running {
            self.registers.read_pmcr().is_set(counter.overflow_flag())
        } else {
            state.kept_overflow
        }
    }

    /// Writes 1 to `slot`'s flag and 0 to the other two; a slot the ARM1176 lacks is
    /// ignored.
    fn clear_overflow(&self, slot: Slot) {
        let Some(counter) = CounterRegister::from_slot(slot) else {
            return;
        };
        let mut value = self.write_back_base();
        value.modify(counter.overflow_flag().val(1));
        let state = self.state(counter);
        self.cell(counter).set(CounterState {
            kept_overflow: false,
            ..state
        });
        self.write_pmcr(value);
    }
}
