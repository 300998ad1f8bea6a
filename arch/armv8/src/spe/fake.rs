//! A recording SPE register file for host tests and examples: it implements
//! [`SpeIdRegisters`] and [`SpeRegisterFile`], logs every access and barrier in order
//! ([`RecordingSpe::log`]), and flags the sequences the architecture forbids
//! ([`RecordingSpe::violations`]) instead of trusting the code under test to avoid them:
//!
//! - any SPE register access on a PE without SPE (PMSVer = 0: UNDEFINED), or PMSNEVFR_EL1
//!   without FEAT_SPE_FnE;
//! - a filter, interval or buffer register written while sampling is enabled, or enabled
//!   without a following `isb` (Arm ARM D24.7.11/12/16: change filters only while sampling is
//!   disabled; a PMSCR_EL1 write takes effect for the profiling unit at the next context
//!   synchronization event, D17.9);
//! - sampling enabled while a filter or buffer write is not yet synchronized by an `isb`;
//! - the buffer enabled (PMBLIMITR_EL1.E = 1) with PMBPTR_EL1 outside `[base, limit)`.

use super::capabilities::SpeIdRegisters;
use super::program::{Barrier, SpeRegisterFile};
use super::register_set::SpeRegister;

/// How many accesses [`RecordingSpe`] records before it drops further ones.
pub const LOG_CAPACITY: usize = 64;

/// One recorded operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpeAccess {
    /// An ID register read: `ID_AA64DFR0_EL1`, `PMBIDR_EL1` or `PMSIDR_EL1`.
    IdRead(&'static str),
    /// A read of an SPE register, and the value returned.
    Read(SpeRegister, u64),
    /// A write of an SPE register.
    Write(SpeRegister, u64),
    /// A barrier.
    Barrier(Barrier),
}

/// A sequence the architecture forbids, found by [`RecordingSpe`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Violation {
    /// An SPE register was accessed on a PE without SPE, or PMSNEVFR_EL1 without FnE.
    Undefined(SpeRegister),
    /// An SPE ID register (`PMBIDR_EL1`, `PMSIDR_EL1`) was read on a PE without SPE.
    UndefinedId(&'static str),
    /// A filter/interval/buffer register was written while sampling was (or might still be)
    /// enabled.
    WriteWhileSampling(SpeRegister),
    /// Sampling was enabled while a register write was not yet synchronized.
    EnabledBeforeIsb,
    /// The buffer was enabled with the write pointer outside it.
    PointerOutsideBuffer,
    /// More than [`LOG_CAPACITY`] accesses: the log is incomplete.
    LogOverflow,
}

/// An in-memory SPE register file. Construct with [`RecordingSpe::new`] from the ID register
/// values it should report.
#[derive(Clone, Debug)]
pub struct RecordingSpe {
    id_aa64dfr0: u64,
    pmbidr: u64,
    pmsidr: u64,
    values: [u64; 11],
    log: [Option<SpeAccess>; LOG_CAPACITY],
    log_len: usize,
    violations: [Option<Violation>; 8],
    violations_len: usize,
    /// Sampling as the profiling unit sees it (PMSCR_EL1 at the last `isb`).
    sampling_in_effect: bool,
    /// A write the profiling unit has not yet synchronized.
    unsynchronized_write: bool,
}

const fn slot(register: SpeRegister) -> usize {
    match register {
        SpeRegister::Pmscr => 0,
        SpeRegister::Pmsfcr => 1,
        SpeRegister::Pmsevfr => 2,
        SpeRegister::Pmsnevfr => 3,
        SpeRegister::Pmslatfr => 4,
        SpeRegister::Pmsirr => 5,
        SpeRegister::Pmsicr => 6,
        SpeRegister::Pmbptr => 7,
        SpeRegister::Pmblimitr => 8,
        SpeRegister::Pmbsr => 9,
        SpeRegister::Pmsdsfr => 10,
    }
}

impl RecordingSpe {
    /// A PE reporting these ID register values; every other register starts at 0.
    pub const fn new(id_aa64dfr0: u64, pmbidr: u64, pmsidr: u64) -> Self {
        Self {
            id_aa64dfr0,
            pmbidr,
            pmsidr,
            values: [0; 11],
            log: [None; LOG_CAPACITY],
            log_len: 0,
            violations: [None; 8],
            violations_len: 0,
            sampling_in_effect: false,
            unsynchronized_write: false,
        }
    }

    /// QEMU 10.0 `-M virt -cpu max`: ID_AA64DFR0_EL1 = 0x10305609, PMSVer = 0, no SPE
    /// (docs/qemu.md).
    pub const fn qemu_max() -> Self {
        Self::new(0x1030_5609, 0, 0)
    }

    /// Sets a register's current value (a PMBSR_EL1 left over from an earlier session, ...).
    pub fn set(&mut self, register: SpeRegister, value: u64) {
        self.values[slot(register)] = value;
    }

    /// A register's current value.
    pub fn value(&self, register: SpeRegister) -> u64 {
        self.values[slot(register)]
    }

    /// Every recorded access, in order.
    pub fn log(&self) -> impl Iterator<Item = &SpeAccess> {
        self.log.iter().flatten()
    }

    /// Only the SPE register writes, in order.
    pub fn writes(&self) -> impl Iterator<Item = (SpeRegister, u64)> + '_ {
        self.log().filter_map(|a| match *a {
            SpeAccess::Write(register, value) => Some((register, value)),
            _ => None,
        })
    }

    /// Every forbidden sequence seen.
    pub fn violations(&self) -> impl Iterator<Item = &Violation> {
        self.violations.iter().flatten()
    }

    /// Forgets the log and the violations (register values stay).
    pub fn clear_log(&mut self) {
        self.log = [None; LOG_CAPACITY];
        self.log_len = 0;
        self.violations = [None; 8];
        self.violations_len = 0;
    }

    fn record(&mut self, access: SpeAccess) {
        if let Some(entry) = self.log.get_mut(self.log_len) {
            *entry = Some(access);
            self.log_len += 1;
        } else {
            self.violate(Violation::LogOverflow);
        }
    }

    fn violate(&mut self, violation: Violation) {
        if self.violations().any(|v| *v == violation) {
            return;
        }
        if let Some(entry) = self.violations.get_mut(self.violations_len) {
            *entry = Some(violation);
            self.violations_len += 1;
        }
    }

    fn has_spe(&self) -> bool {
        (self.id_aa64dfr0 >> 32) & 0xF != 0
    }

    fn has_fne(&self) -> bool {
        self.pmsidr & (1 << 6) != 0
    }

    fn has_fds(&self) -> bool {
        self.pmsidr & (1 << 7) != 0
    }

    fn check_defined(&mut self, register: SpeRegister) {
        if !self.has_spe()
            || (register == SpeRegister::Pmsnevfr && !self.has_fne())
            || (register == SpeRegister::Pmsdsfr && !self.has_fds())
        {
            self.violate(Violation::Undefined(register));
        }
    }
}

impl SpeIdRegisters for RecordingSpe {
    fn id_aa64dfr0_el1(&mut self) -> u64 {
        self.record(SpeAccess::IdRead("ID_AA64DFR0_EL1"));
        self.id_aa64dfr0
    }

    unsafe fn pmbidr_el1(&mut self) -> u64 {
        self.record(SpeAccess::IdRead("PMBIDR_EL1"));
        if !self.has_spe() {
            self.violate(Violation::UndefinedId("PMBIDR_EL1"));
        }
        self.pmbidr
    }

    unsafe fn pmsidr_el1(&mut self) -> u64 {
        self.record(SpeAccess::IdRead("PMSIDR_EL1"));
        if !self.has_spe() {
            self.violate(Violation::UndefinedId("PMSIDR_EL1"));
        }
        self.pmsidr
    }
}

impl SpeRegisterFile for RecordingSpe {
    unsafe fn write(&mut self, register: SpeRegister, value: u64) {
        self.record(SpeAccess::Write(register, value));
        self.check_defined(register);
        let enabled_now = self.value(SpeRegister::Pmscr) & 0b11 != 0;
        match register {
            SpeRegister::Pmscr => {
                if value & 0b11 != 0 && self.unsynchronized_write {
                    self.violate(Violation::EnabledBeforeIsb);
                }
            }
            SpeRegister::Pmbsr => {}
            other => {
                if enabled_now || self.sampling_in_effect {
                    self.violate(Violation::WriteWhileSampling(other));
                }
                self.unsynchronized_write = true;
            }
        }
        if register == SpeRegister::Pmblimitr && value & 1 == 1 {
            let pointer = self.value(SpeRegister::Pmbptr);
            let limit = value & !0xFFF;
            if pointer >= limit {
                self.violate(Violation::PointerOutsideBuffer);
            }
        }
        self.set(register, value);
    }

    unsafe fn read(&mut self, register: SpeRegister) -> u64 {
        self.check_defined(register);
        let value = self.value(register);
        self.record(SpeAccess::Read(register, value));
        value
    }

    fn barrier(&mut self, barrier: Barrier) {
        self.record(SpeAccess::Barrier(barrier));
        if barrier == Barrier::Isb {
            self.sampling_in_effect = self.value(SpeRegister::Pmscr) & 0b11 != 0;
            self.unsynchronized_write = false;
        }
    }
}
