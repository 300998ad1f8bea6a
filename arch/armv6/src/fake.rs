//! A fake ARM1176 PMU register file, for host tests and examples.
//!
//! It behaves like TRM Table 3-136 says the hardware does, including the parts that
//! make read-modify-writes dangerous:
//!
//! - the overflow flags are write-1-to-clear;
//! - P and C reset counters when written as 1, and *read as 1* (the TRM says
//!   Unpredictable; 1 is the worst case), so code that writes back what it read resets
//!   the counters in tests too;
//! - counters count only while PMCR.E is set, CR0/CR1 only their selected event, the
//!   CCR every cycle or every 64th (PMCR.D), and a wrap sets the counter's flag.
//!
//! It also keeps a log of what was written: how many PMCR writes, and every flag or
//! reset bit ever written as 1.

use core::cell::Cell;

use crate::event::Arm1176Event;
use crate::pmcr::{self, CounterRegister, Pmcr, PMCR};
use crate::pmu::PmuRegisters;

/// The fake registers. Start from [`FakeRegisters::new`] (the reset state: all zero).
#[derive(Debug, Default)]
pub struct FakeRegisters {
    pmcr: Cell<u32>,
    counters: [Cell<u32>; 3],
    cycles_toward_tick: Cell<u64>,
    pmcr_writes: Cell<u32>,
    flags_written: Cell<u32>,
    resets_written: Cell<u32>,
}

impl FakeRegisters {
    /// Registers in their reset state: PMCR, CCR, CR0, CR1 all 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets PMCR's state directly, as another agent may have left it (P and C are
    /// dropped: they are actions, not state). Not logged as a write.
    pub fn set_state(&self, value: u32) {
        self.pmcr.set(value & !pmcr::RESET_ACTIONS);
    }

    /// PMCR's real state (what a read shows, with P and C as 0).
    pub fn state(&self) -> Pmcr {
        Pmcr::new(self.pmcr.get())
    }

    /// Sets `counter`'s value directly. Not logged as a write.
    pub fn set_count(&self, counter: CounterRegister, value: u32) {
        self.counters[counter as usize].set(value);
    }

    /// `counter`'s value.
    pub fn count(&self, counter: CounterRegister) -> u32 {
        self.counters[counter as usize].get()
    }

    /// Raises `counter`'s overflow flag, as a wrap does.
    pub fn raise_overflow(&self, counter: CounterRegister) {
        let flag = counter.overflow_flag();
        self.pmcr.set(self.pmcr.get() | (flag.mask << flag.shift));
    }

    /// `count` occurrences of `event` (for [`Arm1176Event::CycleCount`]: `count`
    /// cycles). While PMCR.E is set, CR0/CR1 advance if they select `event`, and the
    /// CCR advances on cycles (one tick per 64 with PMCR.D). A wrap sets the flag.
    pub fn tick(&self, event: Arm1176Event, count: u64) {
        let state = self.state();
        if !state.is_set(PMCR::E) {
            return;
        }
        for counter in [CounterRegister::Cr0, CounterRegister::Cr1] {
            if pmcr::event(state, counter) == Ok(event) {
                self.advance(counter, count);
            }
        }
        if event == Arm1176Event::CycleCount {
            let ticks = if state.is_set(PMCR::D) {
                let cycles = self.cycles_toward_tick.get() + count;
                self.cycles_toward_tick.set(cycles % 64);
                cycles / 64
            } else {
                count
            };
            self.advance(CounterRegister::Ccr, ticks);
        }
    }

    fn advance(&self, counter: CounterRegister, count: u64) {
        let cell = &self.counters[counter as usize];
        let total = u64::from(cell.get()) + count;
        if total > u64::from(u32::MAX) {
            self.raise_overflow(counter);
        }
        // Modulo 2^32, like the 32-bit register.
        cell.set(total as u32);
    }

    /// How many times PMCR was written.
    pub fn pmcr_writes(&self) -> u32 {
        self.pmcr_writes.get()
    }

    /// Every overflow flag bit (PMCR bits 10:8) ever written as 1.
    pub fn flags_written_as_one(&self) -> u32 {
        self.flags_written.get()
    }

    /// Every reset action bit (P, C) ever written as 1.
    pub fn resets_written_as_one(&self) -> u32 {
        self.resets_written.get()
    }

    /// Forgets the write log.
    pub fn clear_write_log(&self) {
        self.pmcr_writes.set(0);
        self.flags_written.set(0);
        self.resets_written.set(0);
    }
}

// SAFETY: the fake only touches its own cells; every method may be called at any time.
unsafe impl PmuRegisters for FakeRegisters {
    fn read_pmcr(&self) -> Pmcr {
        Pmcr::new(self.pmcr.get() | pmcr::RESET_ACTIONS)
    }

    unsafe fn write_pmcr(&self, value: Pmcr) {
        let value = value.get();
        self.pmcr_writes.set(self.pmcr_writes.get() + 1);
        self.flags_written
            .set(self.flags_written.get() | (value & pmcr::OVERFLOW_FLAGS));
        self.resets_written
            .set(self.resets_written.get() | (value & pmcr::RESET_ACTIONS));

        let still_pending = self.pmcr.get() & pmcr::OVERFLOW_FLAGS & !value;
        let state = value & !(pmcr::OVERFLOW_FLAGS | pmcr::RESET_ACTIONS);
        self.pmcr.set(state | still_pending);
        let written = Pmcr::new(value);
        if written.is_set(PMCR::P) {
            self.set_count(CounterRegister::Cr0, 0);
            self.set_count(CounterRegister::Cr1, 0);
        }
        if written.is_set(PMCR::C) {
            self.set_count(CounterRegister::Ccr, 0);
        }
    }

    fn read_counter(&self, counter: CounterRegister) -> u32 {
        self.count(counter)
    }

    fn write_counter(&self, counter: CounterRegister, value: u32) {
        self.set_count(counter, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// TRM Table 3-136: writing 1 clears a flag, writing 0 leaves it; P and
    /// C reset on write. The fake must show exactly that, or the driver tests prove
    /// nothing.
    #[test]
    fn fake_models_write_one_to_clear_and_resets() {
        let regs = FakeRegisters::new();
        for counter in CounterRegister::ALL {
            regs.raise_overflow(counter);
            regs.set_count(counter, 77);
        }
        // SAFETY: fake registers; no interrupt enables.
        unsafe { regs.write_pmcr(Pmcr::new(0x100)) }; // clear CR0's flag only
        assert_eq!(regs.state().get() & pmcr::OVERFLOW_FLAGS, 0x600);
        // SAFETY: as above.
        unsafe { regs.write_pmcr(Pmcr::new(0x0000_0002)) }; // P
        assert_eq!(regs.count(CounterRegister::Cr0), 0);
        assert_eq!(regs.count(CounterRegister::Cr1), 0);
        assert_eq!(regs.count(CounterRegister::Ccr), 77);
        // SAFETY: as above.
        unsafe { regs.write_pmcr(Pmcr::new(0x0000_0004)) }; // C
        assert_eq!(regs.count(CounterRegister::Ccr), 0);
        assert_eq!(regs.state().get() & pmcr::OVERFLOW_FLAGS, 0x600);
        // P and C read as 1, the worst case of "Unpredictable".
        assert_eq!(regs.read_pmcr().get() & pmcr::RESET_ACTIONS, 0x6);
        assert_eq!(regs.pmcr_writes(), 3);
        assert_eq!(regs.flags_written_as_one(), 0x100);
        assert_eq!(regs.resets_written_as_one(), 0x6);
    }

    /// TRM Tables 3-136/3-137: write 0x00705707, then CR0 counts instructions and CR1
    /// branches, the CCR cycles; counting wraps at 32 bits and raises the flag.
    #[test]
    fn fake_counts_like_the_trm_configuration() {
        let regs = FakeRegisters::new();
        regs.set_count(CounterRegister::Cr0, 5);
        // SAFETY: fake registers; no interrupt enables.
        unsafe { regs.write_pmcr(Pmcr::new(0x0070_5707)) };
        assert_eq!(regs.count(CounterRegister::Cr0), 0);
        regs.tick(Arm1176Event::InstructionExecuted, 68);
        regs.tick(Arm1176Event::BranchExecuted, 12);
        regs.tick(Arm1176Event::CycleCount, 452);
        regs.tick(Arm1176Event::DataCacheMiss, 3);
        assert_eq!(regs.count(CounterRegister::Cr0), 68);
        assert_eq!(regs.count(CounterRegister::Cr1), 12);
        assert_eq!(regs.count(CounterRegister::Ccr), 452);
        regs.set_count(CounterRegister::Ccr, u32::MAX);
        regs.tick(Arm1176Event::CycleCount, 2);
        assert_eq!(regs.count(CounterRegister::Ccr), 1);
        assert!(regs.state().is_set(PMCR::CCR));
        assert!(!regs.state().is_set(PMCR::CR0));
    }
}

/// SUNAVCR in memory, for [`crate::user_enable`]'s tests: either the ARM1176's (keeps V,
/// bits 31:1 read as 0) or a dummy that always reads one value and ignores writes (QEMU's
/// ARM1176 c15, which reads 0 at PL1: docs/qemu.md).
#[derive(Debug)]
pub struct FakeSunavcr {
    value: Cell<u32>,
    dummy: bool,
    writes: [Cell<Option<u32>>; 3],
    written: Cell<usize>,
}

impl FakeSunavcr {
    /// A real ARM1176's SUNAVCR at reset (0).
    pub fn arm1176() -> Self {
        Self {
            value: Cell::new(0),
            dummy: false,
            writes: Default::default(),
            written: Cell::new(0),
        }
    }

    /// A dummy register that reads `value` whatever is written.
    pub fn reads_as(value: u32) -> Self {
        Self {
            value: Cell::new(value),
            dummy: true,
            ..Self::arm1176()
        }
    }

    /// Sets the value directly (as firmware or another module left it); not logged.
    pub fn preset(&self, value: u32) {
        self.value.set(value & 1);
    }

    /// The current value.
    pub fn value(&self) -> u32 {
        self.value.get()
    }

    /// The first three values written, in order.
    pub fn writes(&self) -> [Option<u32>; 3] {
        [0, 1, 2].map(|i| self.writes[i].get())
    }
}

impl crate::user_enable::SunavcrRegister for FakeSunavcr {
    fn read_sunavcr(&self) -> crate::Sunavcr {
        crate::Sunavcr::new(self.value.get())
    }

    fn write_sunavcr(&self, value: crate::Sunavcr) {
        let n = self.written.get();
        if let Some(slot) = self.writes.get(n) {
            slot.set(Some(value.get()));
        }
        self.written.set(n + 1);
        if !self.dummy {
            // Bits 31:1 are UNP/SBZ (ARM1176JZF-S TRM 3-132): only V is kept.
            self.value.set(value.get() & 1);
        }
    }
}
