//! An in-memory AArch32 PMU for host tests: the register file the tests drive instead
//! of cp15.
//!
//! It keeps the architectural state (PMCR, enables, overflow flags, PMSELR-selected
//! types and counts, PMUSERENR, ID_DFR0), models the effects a driver relies on (PMCR.P
//! and C zero the counters and read as 0; SET/CLR registers act on their 1 bits;
//! PMOVSR is write-one-to-clear; N caps the event counters) and counts events on demand
//! ([`FakeRegisters::count`]), wrapping at 2^32 and setting the overflow flag as DDI
//! 0406C C12 "Counter overflow" describes.

use core::cell::Cell;

use pmu_armv8::EventNumber;

use crate::pmu::{InterruptRegisters, PmuRegisters};
use crate::registers::{
    Pmcntenclr, Pmcntenset, Pmcr, Pmintenclr, Pmintenset, Pmovsr, Pmswinc, Pmuserenr, Pmxevtyper,
    PMCR, PMXEVTYPER,
};
use crate::user_enable::UserAccessRegisters;

/// One register write (or barrier) [`FakeRegisters`] saw, in order: what a test of the
/// order of a driver's writes reads ([`FakeRegisters::ops`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FakeOp {
    /// PMCR written.
    Pmcr(u32),
    /// PMCNTENSET written.
    Pmcntenset(u32),
    /// PMCNTENCLR written.
    Pmcntenclr(u32),
    /// PMOVSR written (write-one-to-clear).
    Pmovsr(u32),
    /// PMINTENSET written.
    Pmintenset(u32),
    /// PMINTENCLR written.
    Pmintenclr(u32),
    /// PMXEVTYPER of the selected counter (31: PMCCFILTR) written.
    Pmxevtyper(u8, u32),
    /// PMXEVCNTR of the selected counter written.
    Pmxevcntr(u8, u32),
    /// PMCCNTR written.
    Pmccntr(u32),
    /// PMSWINC written.
    Pmswinc(u32),
    /// PMUSERENR written.
    Pmuserenr(u32),
    /// An `isb`.
    Isb,
}

/// How many operations [`FakeRegisters`] records before it drops further ones.
pub const FAKE_OPS: usize = 64;

/// The fake register file of one processor.
#[derive(Debug)]
pub struct FakeRegisters {
    id_dfr0: u32,
    pmcr: Cell<u32>,
    pmceid: Option<(u32, u32)>,
    enabled: Cell<u32>,
    overflow: Cell<u32>,
    inten: Cell<u32>,
    pmuserenr: Cell<u32>,
    /// Index 31 is PMCCFILTR.
    types: [Cell<u32>; 32],
    counts: [Cell<u32>; 31],
    cycles: Cell<u32>,
    writes: Cell<u32>,
    ops: [Cell<Option<FakeOp>>; FAKE_OPS],
}

impl FakeRegisters {
    /// A processor with ID_DFR0 `id_dfr0`, PMCR (reset) `pmcr` and PMCEID0/1 `pmceid`.
    pub fn new(id_dfr0: u32, pmcr: u32, pmceid: Option<(u32, u32)>) -> Self {
        Self {
            id_dfr0,
            pmcr: Cell::new(pmcr),
            pmceid,
            enabled: Cell::new(0),
            overflow: Cell::new(0),
            inten: Cell::new(0),
            pmuserenr: Cell::new(0),
            types: Default::default(),
            counts: Default::default(),
            cycles: Cell::new(0),
            writes: Cell::new(0),
            ops: [const { Cell::new(None) }; FAKE_OPS],
        }
    }

    /// A Cortex-A7 as the PL1 register file sees it (QEMU 10.0.2 `-cpu cortex-a7`, as the
    /// qemu/armv7-virt image's probe prints it): ID_DFR0 0x02000505 (PMUv2), PMCR
    /// 0x41072000 (N = 4), no PMCEID (not read on PMUv2, see `PmuRegisters::pmceid`).
    pub fn cortex_a7() -> Self {
        Self::new(0x0200_0505, 0x4107_2000, None)
    }

    /// A PMUv3 CPU in AArch32 (Cortex-A53 TRM: ID_DFR0 0x03010066, PMCR.N = 6), with
    /// PMCEID0 = 0x20101: SW_INCR, INST_RETIRED and CPU_CYCLES only, the set QEMU's PMUv3
    /// CPUs report under `-icount` (the aarch64-virt image's probe).
    pub fn cortex_a53_aarch32() -> Self {
        Self::new(0x0301_0066, 0x4103_3000, Some((0x0002_0101, 0)))
    }

    /// Sets PMUSERENR (as another agent would).
    pub fn set_user_enable(&self, value: u32) {
        self.pmuserenr.set(value);
    }

    /// How many register writes the file has seen.
    pub fn write_count(&self) -> u32 {
        self.writes.get()
    }

    /// Marks counter `sel` enabled with type `value` and count `count`, as perf would
    /// leave it (31: the cycle counter).
    pub fn program_as_perf(&self, sel: u8, value: u32, count: u32) {
        self.types[usize::from(sel & 31)].set(value);
        if sel == 31 {
            self.cycles.set(count);
        } else if let Some(c) = self.counts.get(usize::from(sel)) {
            c.set(count);
        }
        self.enabled.set(self.enabled.get() | 1 << sel);
    }

    /// The count of event counter `n`, whatever the driver did.
    pub fn event_count(&self, n: u8) -> u32 {
        self.counts[usize::from(n)].get()
    }

    /// The raw PMXEVTYPER of `sel`.
    pub fn event_type(&self, sel: u8) -> u32 {
        self.types[usize::from(sel & 31)].get()
    }

    fn n(&self) -> u8 {
        Pmcr::new(self.pmcr.get()).read(PMCR::N) as u8
    }

    fn wrote(&self) {
        self.writes.set(self.writes.get() + 1);
    }

    fn record(&self, op: FakeOp) {
        if let Some(slot) = self.ops.iter().find(|slot| slot.get().is_none()) {
            slot.set(Some(op));
        }
    }

    /// The writes and barriers since creation or the last [`Self::clear_ops`], oldest
    /// first (at most [`FAKE_OPS`]).
    pub fn ops(&self) -> impl Iterator<Item = FakeOp> + '_ {
        self.ops.iter().map_while(Cell::get)
    }

    /// Forgets the recorded operations.
    pub fn clear_ops(&self) {
        self.ops.iter().for_each(|slot| slot.set(None));
    }

    /// Leaves event counter `n` as perf leaves a throttled event's: type `value` and
    /// count `count` kept, the counter disabled (`armpmu_stop` → `armv7pmu_disable_event`,
    /// drivers/perf/arm_v7_pmu.c 6.12), still in perf's `used_mask`.
    pub fn throttled_as_perf(&self, n: u8, value: u32, count: u32) {
        self.types[usize::from(n & 31)].set(value);
        if let Some(c) = self.counts.get(usize::from(n)) {
            c.set(count);
        }
        self.enabled.set(self.enabled.get() & !(1 << n));
    }

    /// Sets overflow flags (as counters wrapping would) and interrupt enables (as a
    /// previous owner left them).
    pub fn set_overflow_and_interrupt(&self, overflow: u32, inten: u32) {
        self.overflow.set(self.overflow.get() | overflow);
        self.inten.set(self.inten.get() | inten);
    }

    /// The count of the cycle counter, whatever the driver did.
    pub fn cycle_count(&self) -> u32 {
        self.cycles.get()
    }

    /// `amount` occurrences of `event` (in a mode every filter counts, PL0): every
    /// enabled event counter programmed with it counts, wrapping at 2^32 and setting
    /// its PMOVSR bit; `CPU_CYCLES` also advances an enabled PMCCNTR. Nothing counts
    /// while PMCR.E is 0.
    pub fn count(&self, event: EventNumber, amount: u32) {
        if !Pmcr::new(self.pmcr.get()).is_set(PMCR::E) {
            return;
        }
        let enabled = self.enabled.get();
        for n in 0..self.n() {
            let ty = Pmxevtyper::new(self.types[usize::from(n)].get());
            let counts_pl0 = !ty.is_set(PMXEVTYPER::U);
            if enabled & 1 << n != 0
                && counts_pl0
                && ty.read(PMXEVTYPER::evtCount) == u32::from(event.get())
            {
                let c = &self.counts[usize::from(n)];
                let (v, wrapped) = c.get().overflowing_add(amount);
                c.set(v);
                if wrapped {
                    self.overflow.set(self.overflow.get() | 1 << n);
                }
            }
        }
        if event == EventNumber::CPU_CYCLES && enabled & 1 << 31 != 0 {
            let (v, wrapped) = self.cycles.get().overflowing_add(amount);
            self.cycles.set(v);
            if wrapped {
                self.overflow.set(self.overflow.get() | 1 << 31);
            }
        }
    }

    /// PMINTENSET as written.
    pub fn interrupts(&self) -> u32 {
        self.inten.get()
    }
}

impl PmuRegisters for FakeRegisters {
    fn pmcr(&self) -> Pmcr {
        Pmcr::new(self.pmcr.get())
    }
    fn set_pmcr(&self, value: Pmcr) {
        self.wrote();
        self.record(FakeOp::Pmcr(value.get()));
        if value.is_set(PMCR::P) {
            self.counts.iter().for_each(|c| c.set(0));
        }
        if value.is_set(PMCR::C) {
            self.cycles.set(0);
        }
        // P and C read as 0; N, IDCODE and IMP are read-only.
        let keep = self.pmcr.get() & !0x3F;
        self.pmcr.set(keep | value.get() & 0x39);
    }
    fn pmceid(&self) -> Option<(u32, u32)> {
        self.pmceid
    }
    fn pmcntenset(&self) -> Pmcntenset {
        Pmcntenset::new(self.enabled.get())
    }
    fn set_pmcntenset(&self, value: Pmcntenset) {
        self.wrote();
        self.record(FakeOp::Pmcntenset(value.get()));
        self.enabled.set(self.enabled.get() | value.get());
    }
    fn set_pmcntenclr(&self, value: Pmcntenclr) {
        self.wrote();
        self.record(FakeOp::Pmcntenclr(value.get()));
        self.enabled.set(self.enabled.get() & !value.get());
    }
    fn pmovsr(&self) -> Pmovsr {
        Pmovsr::new(self.overflow.get())
    }
    fn set_pmovsr(&self, value: Pmovsr) {
        self.wrote();
        self.record(FakeOp::Pmovsr(value.get()));
        self.overflow.set(self.overflow.get() & !value.get());
    }
    fn set_pmswinc(&self, value: Pmswinc) {
        self.wrote();
        self.record(FakeOp::Pmswinc(value.get()));
        for n in 0..self.n() {
            let ty = Pmxevtyper::new(self.types[usize::from(n)].get());
            if value.get() & 1 << n != 0
                && self.enabled.get() & 1 << n != 0
                && ty.read(PMXEVTYPER::evtCount) == 0
            {
                let c = &self.counts[usize::from(n)];
                c.set(c.get().wrapping_add(1));
            }
        }
    }
    fn pmxevtyper(&self, sel: u8) -> Pmxevtyper {
        Pmxevtyper::new(self.types[usize::from(sel & 31)].get())
    }
    fn set_pmxevtyper(&self, sel: u8, value: Pmxevtyper) {
        self.wrote();
        self.record(FakeOp::Pmxevtyper(sel, value.get()));
        self.types[usize::from(sel & 31)].set(value.get());
    }
    fn pmxevcntr(&self, n: u8) -> u32 {
        self.counts.get(usize::from(n)).map_or(0, Cell::get)
    }
    fn set_pmxevcntr(&self, n: u8, value: u32) {
        self.wrote();
        self.record(FakeOp::Pmxevcntr(n, value));
        if let Some(c) = self.counts.get(usize::from(n)) {
            c.set(value);
        }
    }
    fn pmccntr(&self) -> u32 {
        self.cycles.get()
    }
    fn set_pmccntr(&self, value: u32) {
        self.wrote();
        self.record(FakeOp::Pmccntr(value));
        self.cycles.set(value);
    }
}

impl InterruptRegisters for FakeRegisters {
    fn pmintenset(&self) -> Pmintenset {
        Pmintenset::new(self.inten.get())
    }
    fn set_pmintenset(&self, value: Pmintenset) {
        self.wrote();
        self.record(FakeOp::Pmintenset(value.get()));
        self.inten.set(self.inten.get() | value.get());
    }
    fn set_pmintenclr(&self, value: Pmintenclr) {
        self.wrote();
        self.record(FakeOp::Pmintenclr(value.get()));
        self.inten.set(self.inten.get() & !value.get());
    }
}

impl UserAccessRegisters for FakeRegisters {
    fn id_dfr0(&self) -> u32 {
        self.id_dfr0
    }
    fn pmuserenr(&self) -> Pmuserenr {
        Pmuserenr::new(self.pmuserenr.get())
    }
    fn set_pmuserenr(&self, value: Pmuserenr) {
        self.wrote();
        self.record(FakeOp::Pmuserenr(value.get()));
        self.pmuserenr.set(value.get());
    }
    fn isb(&self) {
        self.record(FakeOp::Isb);
    }
}
