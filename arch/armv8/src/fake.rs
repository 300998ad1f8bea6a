//! A register file in memory that behaves like a PMUv3, for host tests and examples.
//!
//! [`FakeRegisters`] implements [`PmuRegisters`] and [`InterruptRegisters`] with the
//! architectural semantics the driver relies on: PMCR_EL0.N/IMP/IDCODE read-only, P and
//! C zeroing the counters, set/clear register pairs, write-one-to-clear overflow flags,
//! evtCount 10 bits wide before PMUv3p1, PMSWINC_EL0 incrementing SW_INCR counters.
//! [`FakeRegisters::count`] plays the role of the PE: enabled counters for that event
//! advance and overflow like QEMU's (docs/qemu.md): at 2^32 unless
//! PMCR_EL0.LP (event counters, FEAT_PMUv3p5) or LC (cycle counter) is set, and on
//! FEAT_PMUv3p5 a counter with LP = 0 keeps its bits above 31 (reads 0x1_0000_005d).
//! Privilege filters are stored but not applied (the fake has no Exception levels).
//!
//! Every write is recorded ([`FakeRegisters::writes`]), so tests can check that the
//! driver wrote exactly one bit and nothing else.

use core::cell::Cell;

use crate::counter::{CounterId, EventCounter};
use crate::events::EventNumber;
use crate::pmu::{InterruptRegisters, PmuRegisters};
use crate::registers::pmcr_el0::WRITABLE_MASK;
use crate::registers::PmuserenrEl0;
use crate::registers::{
    PMEVTYPERn_EL0, PmccfiltrEl0, Pmceid0El0, Pmceid1El0, PmcntenclrEl0, PmcntensetEl0, PmcrEl0,
    PmevtypernEl0, PmintenclrEl1, PmintensetEl1, PmovsclrEl0, PmovssetEl0, PmswincEl0, PMCR_EL0,
};
use crate::user_enable::UserAccessRegisters;
use crate::version::PmuVersion;

/// How many writes [`FakeRegisters`] records before it drops further ones.
pub const LOG_CAPACITY: usize = 64;

const LOW_32: u64 = 0xFFFF_FFFF;

/// One recorded register write: the register and the raw value written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegisterWrite {
    /// PMCR_EL0.
    Pmcr(u64),
    /// PMCNTENSET_EL0.
    Pmcntenset(u64),
    /// PMCNTENCLR_EL0.
    Pmcntenclr(u64),
    /// PMOVSCLR_EL0.
    Pmovsclr(u64),
    /// PMSWINC_EL0.
    Pmswinc(u64),
    /// `PMEVTYPER<n>_EL0`.
    Pmevtyper(EventCounter, u64),
    /// `PMEVCNTR<n>_EL0`.
    Pmevcntr(EventCounter, u64),
    /// PMCCFILTR_EL0.
    Pmccfiltr(u64),
    /// PMCCNTR_EL0.
    Pmccntr(u64),
    /// PMINTENSET_EL1.
    Pmintenset(u64),
    /// PMINTENCLR_EL1.
    Pmintenclr(u64),
}

/// A PMUv3 register file in memory. `!Sync`, like a real PMU that belongs to one CPU.
#[derive(Debug)]
pub struct FakeRegisters {
    version: PmuVersion,
    pmcr_read_only: u64,
    pmcr: Cell<u64>,
    pmceid0: u64,
    pmceid1: u64,
    enabled: Cell<u64>,
    interrupts: Cell<u64>,
    overflow: Cell<u64>,
    evtyper: [Cell<u64>; 31],
    evcntr: [Cell<u64>; 31],
    ccfiltr: Cell<u64>,
    ccntr: Cell<u64>,
    log: [Cell<Option<RegisterWrite>>; LOG_CAPACITY],
    logged: Cell<usize>,
}

impl FakeRegisters {
    /// A PMU of `version` whose PMCR_EL0 reads `pmcr_reset` after reset (N, IMP,
    /// IDCODE and the control bits) and whose PMCEID0/1_EL0 read `pmceid0`/`pmceid1`.
    pub fn new(version: PmuVersion, pmcr_reset: u64, pmceid0: u64, pmceid1: u64) -> Self {
        let mut read_only = PmcrEl0::new(0);
        let reset = PmcrEl0::new(pmcr_reset);
        read_only.write(
            PMCR_EL0::IMP.val(reset.read(PMCR_EL0::IMP))
                + PMCR_EL0::IDCODE.val(reset.read(PMCR_EL0::IDCODE))
                + PMCR_EL0::N.val(reset.read(PMCR_EL0::N)),
        );
        let fake = Self {
            version,
            pmcr_read_only: read_only.get(),
            pmcr: Cell::new(0),
            pmceid0,
            pmceid1,
            enabled: Cell::new(0),
            interrupts: Cell::new(0),
            overflow: Cell::new(0),
            evtyper: Default::default(),
            evcntr: Default::default(),
            ccfiltr: Cell::new(0),
            ccntr: Cell::new(0),
            log: [const { Cell::new(None) }; LOG_CAPACITY],
            logged: Cell::new(0),
        };
        fake.pmcr.set(fake.writable_pmcr_bits(pmcr_reset));
        fake
    }

    /// QEMU `-M virt -cpu max -icount shift=0` as measured (docs/qemu.md):
    /// PMUv3p5, PMCR_EL0 reset 0x41013000 (N = 6), PMCEID0_EL0 0x20101 (SW_INCR,
    /// INST_RETIRED, CPU_CYCLES), PMCEID1_EL0 0x10000018.
    pub fn qemu_max_icount() -> Self {
        Self::new(PmuVersion::PmuV3p5, 0x4101_3000, 0x0002_0101, 0x1000_0018)
    }

    /// The number of event counters (PMCR_EL0.N).
    pub fn event_counters(&self) -> u8 {
        PmcrEl0::new(self.pmcr_read_only).read(PMCR_EL0::N) as u8
    }

    /// The recorded writes, oldest first (at most [`LOG_CAPACITY`]).
    pub fn writes(&self) -> impl Iterator<Item = RegisterWrite> + '_ {
        self.log.iter().filter_map(Cell::get)
    }

    /// How many writes happened since the last [`FakeRegisters::clear_writes`],
    /// including those beyond [`LOG_CAPACITY`] that were not recorded.
    pub fn write_count(&self) -> usize {
        self.logged.get()
    }

    /// Forgets the recorded writes.
    pub fn clear_writes(&self) {
        for entry in &self.log {
            entry.set(None);
        }
        self.logged.set(0);
    }

    /// `count` events `event` happen: every counting counter for it advances (event
    /// counters configured for `event`, PMCCNTR_EL0 for CPU_CYCLES), wraps and sets its
    /// overflow flag like QEMU's.
    pub fn count(&self, event: EventNumber, count: u64) {
        if !self.globally_enabled() {
            return;
        }
        for n in 0..self.event_counters() {
            let Some(counter) = EventCounter::new(n) else {
                continue;
            };
            let evt = PmevtypernEl0::new(self.evtyper[usize::from(n)].get());
            if u64::from(event.get()) == evt.read(PMEVTYPERn_EL0::evtCount) {
                self.advance(CounterId::Event(counter), count);
            }
        }
        if event == EventNumber::CPU_CYCLES {
            self.advance(CounterId::Cycle, count);
        }
    }

    /// Sets overflow flags as the hardware would (not recorded as a driver write).
    pub fn raise_overflow(&self, mask: u64) {
        self.overflow
            .set(self.overflow.get() | (mask & self.implemented_mask()));
    }

    fn globally_enabled(&self) -> bool {
        PmcrEl0::new(self.pmcr.get()).is_set(PMCR_EL0::E)
    }

    fn implemented_mask(&self) -> u64 {
        ((1u64 << self.event_counters()) - 1) | CounterId::Cycle.mask()
    }

    fn writable_pmcr_bits(&self, value: u64) -> u64 {
        let mut mask = WRITABLE_MASK & !(PMCR_EL0::P::SET.value | PMCR_EL0::C::SET.value);
        if !self.version.has_long_event_counters() {
            mask &= !PMCR_EL0::LP::SET.value;
        }
        value & mask
    }

    fn exists(&self, counter: EventCounter) -> bool {
        counter.index() < self.event_counters()
    }

    fn record(&self, write: RegisterWrite) {
        let n = self.logged.get();
        if let Some(entry) = self.log.get(n) {
            entry.set(Some(write));
        }
        self.logged.set(n.saturating_add(1));
    }

    /// Advances one counter if it is enabled, with QEMU's overflow rules.
    fn advance(&self, id: CounterId, by: u64) {
        if self.enabled.get() & id.mask() == 0 {
            return;
        }
        let pmcr = PmcrEl0::new(self.pmcr.get());
        let (cell, overflow_at_64, keeps_high_bits) = match id {
            CounterId::Event(n) => (
                &self.evcntr[usize::from(n.index())],
                pmcr.is_set(PMCR_EL0::LP),
                self.version.has_long_event_counters(),
            ),
            CounterId::Cycle => (&self.ccntr, pmcr.is_set(PMCR_EL0::LC), true),
        };
        let old = cell.get();
        let (new, overflowed) = if overflow_at_64 {
            old.overflowing_add(by)
        } else {
            let wraps = (old & LOW_32) as u128 + by as u128 > LOW_32 as u128;
            let sum = old.wrapping_add(by);
            (if keeps_high_bits { sum } else { sum & LOW_32 }, wraps)
        };
        cell.set(new);
        if overflowed {
            self.overflow.set(self.overflow.get() | id.mask());
        }
    }
}

impl PmuRegisters for FakeRegisters {
    fn pmcr(&self) -> PmcrEl0 {
        PmcrEl0::new(self.pmcr_read_only | self.pmcr.get())
    }

    fn set_pmcr(&self, value: PmcrEl0) {
        self.record(RegisterWrite::Pmcr(value.get()));
        if value.is_set(PMCR_EL0::P) {
            for c in &self.evcntr {
                c.set(0);
            }
        }
        if value.is_set(PMCR_EL0::C) {
            self.ccntr.set(0);
        }
        self.pmcr.set(self.writable_pmcr_bits(value.get()));
    }

    fn pmceid0(&self) -> Pmceid0El0 {
        Pmceid0El0::new(self.pmceid0)
    }

    fn pmceid1(&self) -> Pmceid1El0 {
        Pmceid1El0::new(self.pmceid1)
    }

    fn pmcntenset(&self) -> PmcntensetEl0 {
        PmcntensetEl0::new(self.enabled.get())
    }

    fn set_pmcntenset(&self, value: PmcntensetEl0) {
        self.record(RegisterWrite::Pmcntenset(value.get()));
        self.enabled
            .set(self.enabled.get() | (value.get() & self.implemented_mask()));
    }

    fn set_pmcntenclr(&self, value: PmcntenclrEl0) {
        self.record(RegisterWrite::Pmcntenclr(value.get()));
        self.enabled.set(self.enabled.get() & !value.get());
    }

    fn pmovsset(&self) -> PmovssetEl0 {
        PmovssetEl0::new(self.overflow.get())
    }

    fn set_pmovsclr(&self, value: PmovsclrEl0) {
        self.record(RegisterWrite::Pmovsclr(value.get()));
        self.overflow.set(self.overflow.get() & !value.get());
    }

    fn set_pmswinc(&self, value: PmswincEl0) {
        self.record(RegisterWrite::Pmswinc(value.get()));
        if !self.globally_enabled() {
            return;
        }
        for n in 0..self.event_counters() {
            let Some(counter) = EventCounter::new(n) else {
                continue;
            };
            let evt = PmevtypernEl0::new(self.evtyper[usize::from(n)].get());
            let sw_incr = evt.read(PMEVTYPERn_EL0::evtCount) == 0;
            if value.get() & (1 << n) != 0 && sw_incr {
                self.advance(CounterId::Event(counter), 1);
            }
        }
    }

    fn pmevtyper(&self, counter: EventCounter) -> PmevtypernEl0 {
        if !self.exists(counter) {
            return PmevtypernEl0::new(0);
        }
        PmevtypernEl0::new(self.evtyper[usize::from(counter.index())].get())
    }

    fn set_pmevtyper(&self, counter: EventCounter, value: PmevtypernEl0) {
        self.record(RegisterWrite::Pmevtyper(counter, value.get()));
        if !self.exists(counter) {
            return;
        }
        let mut stored = value.get();
        if !self.version.has_16bit_event_numbers() {
            // evtCount[15:10] are RES0 in PMUv3 (FEAT_PMUv3p1 widened the field).
            stored &= !0xFC00;
        }
        self.evtyper[usize::from(counter.index())].set(stored);
    }

    fn pmevcntr(&self, counter: EventCounter) -> u64 {
        if !self.exists(counter) {
            return 0;
        }
        self.evcntr[usize::from(counter.index())].get()
    }

    fn set_pmevcntr(&self, counter: EventCounter, value: u64) {
        self.record(RegisterWrite::Pmevcntr(counter, value));
        if !self.exists(counter) {
            return;
        }
        let value = if self.version.has_long_event_counters() {
            value
        } else {
            value & LOW_32
        };
        self.evcntr[usize::from(counter.index())].set(value);
    }

    fn pmccfiltr(&self) -> PmccfiltrEl0 {
        PmccfiltrEl0::new(self.ccfiltr.get())
    }

    fn set_pmccfiltr(&self, value: PmccfiltrEl0) {
        self.record(RegisterWrite::Pmccfiltr(value.get()));
        self.ccfiltr.set(value.get());
    }

    fn pmccntr(&self) -> u64 {
        self.ccntr.get()
    }

    fn set_pmccntr(&self, value: u64) {
        self.record(RegisterWrite::Pmccntr(value));
        self.ccntr.set(value);
    }
}

impl InterruptRegisters for FakeRegisters {
    fn pmintenset(&self) -> PmintensetEl1 {
        PmintensetEl1::new(self.interrupts.get())
    }

    fn set_pmintenset(&self, value: PmintensetEl1) {
        self.record(RegisterWrite::Pmintenset(value.get()));
        self.interrupts
            .set(self.interrupts.get() | (value.get() & self.implemented_mask()));
    }

    fn set_pmintenclr(&self, value: PmintenclrEl1) {
        self.record(RegisterWrite::Pmintenclr(value.get()));
        self.interrupts.set(self.interrupts.get() & !value.get());
    }
}

/// One access [`FakeUserAccess`] saw, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserAccessOp {
    /// ID_AA64DFR0_EL1 read.
    ReadIdAa64dfr0,
    /// PMUSERENR_EL0 read.
    ReadPmuserenr,
    /// PMCR_EL0 read.
    ReadPmcr,
    /// PMCEID0_EL0 and PMCEID1_EL0 read.
    ReadPmceid,
    /// PMCNTENSET_EL0 read.
    ReadPmcntenset,
    /// PMCCFILTR_EL0 read.
    ReadPmccfiltr,
    /// `PMEVTYPER<n>_EL0` read.
    ReadPmevtyper(u8),
    /// PMUSERENR_EL0 write.
    WritePmuserenr(u64),
    /// PMUACR_EL1 read (FEAT_PMUv3p9).
    ReadPmuacr,
    /// PMUACR_EL1 write (FEAT_PMUv3p9).
    WritePmuacr(u64),
    /// PMCR_EL0 write (synchronizing).
    WritePmcr(u64),
    /// PMCNTENSET_EL0 write (synchronizing).
    WritePmcntenset(u64),
    /// PMCNTENCLR_EL0 write (synchronizing).
    WritePmcntenclr(u64),
    /// PMCCFILTR_EL0 write.
    WritePmccfiltr(u64),
    /// `PMEVTYPER<n>_EL0` write.
    WritePmevtyper(u8, u64),
    /// `PMEVCNTR<n>_EL0` write.
    WritePmevcntr(u8, u64),
    /// `PMEVCNTR<n>_EL0` read.
    ReadPmevcntr(u8),
    /// PMCCNTR_EL0 write.
    WritePmccntr(u64),
    /// PMINTENCLR_EL1 and PMOVSCLR_EL0 writes of the same mask.
    ClearOverflowAndInterrupt(u64),
    /// `isb`.
    Isb,
}

impl UserAccessOp {
    /// Whether this changes state (a write or a barrier), as opposed to a read.
    pub fn is_write(&self) -> bool {
        !matches!(
            self,
            Self::ReadIdAa64dfr0
                | Self::ReadPmuserenr
                | Self::ReadPmcr
                | Self::ReadPmceid
                | Self::ReadPmcntenset
                | Self::ReadPmccfiltr
                | Self::ReadPmevtyper(_)
                | Self::ReadPmevcntr(_)
                | Self::ReadPmuacr
        )
    }
}

/// How many accesses [`FakeUserAccess`] records.
pub const USER_ACCESS_LOG_CAPACITY: usize = 64;

/// The registers of [`crate::user_enable`] in memory, recording every access in order.
///
/// PMCR_EL0.P and C act like the hardware's (zero the counters, read as 0).
/// PMCNTENSET/PMCNTENCLR_EL0 are one enable set. Counters do not advance by themselves:
/// [`FakeUserAccess::set_counter`] plays the events.
#[derive(Debug)]
pub struct FakeUserAccess {
    id_aa64dfr0: u64,
    pmceid: (u64, u64),
    pmuserenr: Cell<u64>,
    pmuacr: Cell<u64>,
    pmcr: Cell<u64>,
    enabled: Cell<u64>,
    pmccfiltr: Cell<u64>,
    pmevtyper: [Cell<u64>; 31],
    /// PMEVCNTR0..30_EL0, then PMCCNTR_EL0 at index 31.
    counters: [Cell<u64>; 32],
    log: [Cell<Option<UserAccessOp>>; USER_ACCESS_LOG_CAPACITY],
    logged: Cell<usize>,
}

/// PMCR_EL0.P | PMCR_EL0.C: write-only actions (Arm ARM, PMCR_EL0).
const PMCR_RESETS: u64 = 0b110;

impl FakeUserAccess {
    /// A CPU whose ID_AA64DFR0_EL1 reads `id_aa64dfr0`, PMCR_EL0 `pmcr` (its N field
    /// says how many event counters there are), implementing the common events of
    /// `pmceid0`/`pmceid1`, every other PMU register 0.
    pub fn new(id_aa64dfr0: u64, pmcr: u64, pmceid0: u64, pmceid1: u64) -> Self {
        Self {
            id_aa64dfr0,
            pmceid: (pmceid0, pmceid1),
            pmuserenr: Cell::new(0),
            pmuacr: Cell::new(0),
            pmcr: Cell::new(pmcr & !PMCR_RESETS),
            enabled: Cell::new(0),
            pmccfiltr: Cell::new(0),
            pmevtyper: [const { Cell::new(0) }; 31],
            counters: [const { Cell::new(0) }; 32],
            log: [const { Cell::new(None) }; USER_ACCESS_LOG_CAPACITY],
            logged: Cell::new(0),
        }
    }

    /// Sets the registers as someone else (perf, firmware) left them; not recorded.
    pub fn preset(&self, pmuserenr: u64, pmcr: u64, pmcntenset: u64, pmccfiltr: u64) {
        self.pmuserenr.set(pmuserenr);
        self.pmcr.set(pmcr & !PMCR_RESETS);
        self.enabled.set(pmcntenset);
        self.pmccfiltr.set(pmccfiltr);
    }

    /// Programs event counter `n` as another owner would; not recorded.
    pub fn preset_counter(&self, n: u8, pmevtyper: u64, value: u64, enabled: bool) {
        self.pmevtyper[usize::from(n)].set(pmevtyper);
        self.counters[usize::from(n)].set(value);
        let bit = 1 << n;
        let set = self.enabled.get();
        self.enabled
            .set(if enabled { set | bit } else { set & !bit });
    }

    /// Sets counter `n` (31: the cycle counter), as counting would; not recorded.
    pub fn set_counter(&self, n: u8, value: u64) {
        self.counters[usize::from(n)].set(value);
    }

    /// Counter `n` (31: the cycle counter).
    pub fn counter(&self, n: u8) -> u64 {
        self.counters[usize::from(n)].get()
    }

    /// `PMEVTYPER<n>_EL0`, unrecorded.
    pub fn event_type(&self, n: u8) -> u64 {
        self.pmevtyper[usize::from(n)].get()
    }

    /// PMCNTENSET_EL0, unrecorded.
    pub fn enabled_counters(&self) -> u64 {
        self.enabled.get()
    }

    /// PMUSERENR_EL0, unrecorded.
    pub fn user_enable(&self) -> u64 {
        self.pmuserenr.get()
    }

    /// PMUACR_EL1, unrecorded.
    pub fn user_access_control(&self) -> u64 {
        self.pmuacr.get()
    }

    /// Sets PMUSERENR_EL0 and PMUACR_EL1 as another writer (perf) leaves them; not
    /// recorded. PMUACR_EL1 keeps only its defined bits (63:33 are RES0).
    pub fn preset_user_access(&self, pmuserenr: u64, pmuacr: u64) {
        self.pmuserenr.set(pmuserenr);
        self.pmuacr
            .set(pmuacr & crate::registers::pmuacr_el1::PMUACR_EL1_DEFINED);
    }

    /// What a read of counter `n` (31: the cycle counter) at EL0 does now: the Arm ARM
    /// rule of [`crate::registers::pmuacr_el1::el0_counter_read`] with this CPU's
    /// PMUVer, PMUSERENR_EL0 and PMUACR_EL1.
    pub fn el0_read(&self, n: u8) -> crate::registers::pmuacr_el1::El0CounterRead {
        let pmuv3p9 = crate::PmuVersion::from_id_aa64dfr0(self.id_aa64dfr0)
            .is_at_least(crate::PmuVersion::PmuV3p9);
        crate::registers::pmuacr_el1::el0_counter_read(
            self.pmuserenr.get(),
            self.pmuacr.get(),
            pmuv3p9,
            n,
        )
    }

    /// The value a read of counter `n` at EL0 returns now: the count, 0 where the read
    /// is RAZ, `None` where it traps ([`FakeUserAccess::el0_read`]).
    pub fn el0_value(&self, n: u8) -> Option<u64> {
        use crate::registers::pmuacr_el1::El0CounterRead;
        match self.el0_read(n) {
            El0CounterRead::Value => Some(self.counters[usize::from(n)].get()),
            El0CounterRead::ReadsAsZero => Some(0),
            El0CounterRead::Traps => None,
        }
    }

    /// PMCR_EL0, unrecorded.
    pub fn control(&self) -> u64 {
        self.pmcr.get()
    }

    /// The accesses since the last [`FakeUserAccess::clear_ops`], oldest first (at most
    /// [`USER_ACCESS_LOG_CAPACITY`]).
    pub fn ops(&self) -> impl Iterator<Item = UserAccessOp> + '_ {
        self.log.iter().filter_map(Cell::get)
    }

    /// Forgets the recorded accesses.
    pub fn clear_ops(&self) {
        for entry in &self.log {
            entry.set(None);
        }
        self.logged.set(0);
    }

    fn record(&self, op: UserAccessOp) {
        let n = self.logged.get();
        if let Some(entry) = self.log.get(n) {
            entry.set(Some(op));
        }
        self.logged.set(n + 1);
    }
}

impl UserAccessRegisters for FakeUserAccess {
    fn id_aa64dfr0(&self) -> u64 {
        self.record(UserAccessOp::ReadIdAa64dfr0);
        self.id_aa64dfr0
    }

    fn pmuserenr(&self) -> PmuserenrEl0 {
        self.record(UserAccessOp::ReadPmuserenr);
        PmuserenrEl0::new(self.pmuserenr.get())
    }

    fn set_pmuserenr(&self, value: PmuserenrEl0) {
        self.record(UserAccessOp::WritePmuserenr(value.get()));
        self.pmuserenr.set(value.get());
    }

    fn pmuacr(&self) -> u64 {
        self.record(UserAccessOp::ReadPmuacr);
        self.pmuacr.get()
    }

    fn set_pmuacr(&self, value: u64) {
        self.record(UserAccessOp::WritePmuacr(value));
        self.pmuacr
            .set(value & crate::registers::pmuacr_el1::PMUACR_EL1_DEFINED);
    }

    fn pmcr(&self) -> PmcrEl0 {
        self.record(UserAccessOp::ReadPmcr);
        PmcrEl0::new(self.pmcr.get())
    }

    fn set_pmcr(&self, value: PmcrEl0) {
        self.record(UserAccessOp::WritePmcr(value.get()));
        if value.get() & 0b010 != 0 {
            for c in &self.counters[..31] {
                c.set(0);
            }
        }
        if value.get() & 0b100 != 0 {
            self.counters[31].set(0);
        }
        self.pmcr.set(value.get() & !PMCR_RESETS);
    }

    fn implemented_events(&self) -> crate::events::ImplementedEvents {
        self.record(UserAccessOp::ReadPmceid);
        crate::events::ImplementedEvents::new(self.pmceid.0, self.pmceid.1)
    }

    fn pmcntenset(&self) -> PmcntensetEl0 {
        self.record(UserAccessOp::ReadPmcntenset);
        PmcntensetEl0::new(self.enabled.get())
    }

    fn set_pmcntenset(&self, value: PmcntensetEl0) {
        self.record(UserAccessOp::WritePmcntenset(value.get()));
        self.enabled.set(self.enabled.get() | value.get());
    }

    fn set_pmcntenclr(&self, value: PmcntenclrEl0) {
        self.record(UserAccessOp::WritePmcntenclr(value.get()));
        self.enabled.set(self.enabled.get() & !value.get());
    }

    fn pmccfiltr(&self) -> PmccfiltrEl0 {
        self.record(UserAccessOp::ReadPmccfiltr);
        PmccfiltrEl0::new(self.pmccfiltr.get())
    }

    fn set_pmccfiltr(&self, value: PmccfiltrEl0) {
        self.record(UserAccessOp::WritePmccfiltr(value.get()));
        self.pmccfiltr.set(value.get());
    }

    fn pmevtyper(&self, n: u8) -> u64 {
        self.record(UserAccessOp::ReadPmevtyper(n));
        self.pmevtyper[usize::from(n)].get()
    }

    fn set_pmevtyper(&self, n: u8, value: u64) {
        self.record(UserAccessOp::WritePmevtyper(n, value));
        self.pmevtyper[usize::from(n)].set(value);
    }

    fn pmevcntr(&self, n: u8) -> u64 {
        self.record(UserAccessOp::ReadPmevcntr(n));
        self.counters[usize::from(n)].get()
    }

    fn set_pmevcntr(&self, n: u8, value: u64) {
        self.record(UserAccessOp::WritePmevcntr(n, value));
        self.counters[usize::from(n)].set(value);
    }

    fn set_pmccntr(&self, value: u64) {
        self.record(UserAccessOp::WritePmccntr(value));
        self.counters[31].set(value);
    }

    fn clear_overflow_and_interrupt(&self, mask: u64) {
        self.record(UserAccessOp::ClearOverflowAndInterrupt(mask));
    }

    fn isb(&self) {
        self.record(UserAccessOp::Isb);
    }
}
