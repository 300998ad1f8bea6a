//! A fake register file implementing [`MsrAccess`], for host tests and examples.
//!
//! It remembers every MSR value, logs every write in order, and behaves like the hardware
//! where the backends depend on it:
//!
//! - Intel: a write to IA32_PMCx keeps bits 31:0 and sign-extends bit 31 to the counter
//!   width, a write to the alias IA32_A_PMCx keeps the full width (SDM Vol. 3B, "Full-Width
//!   Writes to Performance Counter Registers"); both are the same counter;
//! - writing 1s to IA32_PERF_GLOBAL_OVF_CTRL / _STATUS_RESET (Intel) or
//!   PerfCntrGlobalStatusClr (AMD) clears those bits of the status register; the status
//!   registers themselves are read-only;
//! - RDPMC reads general-purpose, fixed (ECX bit 30) or AMD core counters.
//!
//! Tests play the hardware's part with [`FakeMsrs::set`] (a counter advanced, an overflow
//! flag raised), which is not logged. Fixed capacity, no allocation: it works in `no_std`.

use core::cell::Cell;

use pmu_core::CounterWidth;

use crate::access::{MsrAccess, RDPMC_FIXED};
use crate::cpuid::{AmdCoreCounters, ArchPerfmon, MAX_FIXED_COUNTERS, MAX_GP_COUNTERS};
use crate::msr::{
    AmdCounterLayout, AMD_PERF_CNTR_GLOBAL_STATUS, AMD_PERF_CNTR_GLOBAL_STATUS_CLR, IA32_A_PMC0,
    IA32_FIXED_CTR0, IA32_PERF_GLOBAL_OVF_CTRL, IA32_PERF_GLOBAL_STATUS, IA32_PMC0,
};

/// Registers the fake holds.
pub const REGISTERS: usize = 64;
/// Writes the log holds.
pub const LOG_ENTRIES: usize = 128;

/// The CPU the fake imitates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FakeCpu {
    /// Intel architectural performance monitoring.
    Intel {
        /// Width of the general-purpose counters.
        gp_width: CounterWidth,
        /// Width of the fixed counters.
        fixed_width: CounterWidth,
    },
    /// AMD core counters.
    Amd(AmdCounterLayout),
}

/// The fake register file.
#[derive(Debug)]
pub struct FakeMsrs {
    cpu: FakeCpu,
    registers: [Cell<Option<(u32, u64)>>; REGISTERS],
    log: [Cell<(u32, u64)>; LOG_ENTRIES],
    logged: Cell<usize>,
    overflowed: Cell<bool>,
}

impl FakeMsrs {
    /// A register file imitating `cpu`, all registers 0.
    pub fn new(cpu: FakeCpu) -> Self {
        Self {
            cpu,
            registers: [const { Cell::new(None) }; REGISTERS],
            log: [const { Cell::new((0, 0)) }; LOG_ENTRIES],
            logged: Cell::new(0),
            overflowed: Cell::new(false),
        }
    }

    /// A register file for the Intel PMU `perfmon` describes.
    pub fn intel(perfmon: &ArchPerfmon) -> Self {
        Self::new(FakeCpu::Intel {
            gp_width: perfmon.gp_width(),
            fixed_width: perfmon.fixed_width().unwrap_or(perfmon.gp_width()),
        })
    }

    /// A register file for the AMD PMU `counters` describes.
    pub fn amd(counters: &AmdCoreCounters) -> Self {
        Self::new(FakeCpu::Amd(counters.layout()))
    }

    /// The value of `msr` (0 if never written), without logging.
    pub fn get(&self, msr: u32) -> u64 {
        let msr = self.canonical(msr);
        self.registers
            .iter()
            .find_map(|r| r.get().filter(|(m, _)| *m == msr).map(|(_, v)| v))
            .unwrap_or(0)
    }

    /// Sets `msr` to `value` as the hardware would (a counter advancing, a status bit
    /// rising), without logging and without write side effects.
    pub fn set(&self, msr: u32, value: u64) {
        let msr = self.canonical(msr);
        let slot = self
            .registers
            .iter()
            .find(|r| r.get().is_some_and(|(m, _)| m == msr))
            .or_else(|| self.registers.iter().find(|r| r.get().is_none()));
        match slot {
            Some(cell) => cell.set(Some((msr, value))),
            None => self.overflowed.set(true),
        }
    }

    /// The logged writes, oldest first.
    pub fn writes(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.log[..self.logged.get()].iter().map(Cell::get)
    }

    /// The values written to `msr`, oldest first.
    pub fn writes_to(&self, msr: u32) -> impl Iterator<Item = u64> + '_ {
        self.writes()
            .filter(move |(m, _)| *m == msr)
            .map(|(_, v)| v)
    }

    /// Forgets the logged writes (the registers keep their values).
    pub fn clear_log(&self) {
        self.logged.set(0);
    }

    /// Whether a register or a log entry did not fit (the test did more than the fake
    /// holds; its checks are then incomplete).
    pub fn capacity_exceeded(&self) -> bool {
        self.overflowed.get()
    }

    /// The register a write or read of `msr` really reaches (IA32_A_PMCx is IA32_PMCx).
    fn canonical(&self, msr: u32) -> u32 {
        match self.cpu {
            FakeCpu::Intel { .. }
                if msr >= IA32_A_PMC0 && msr < IA32_A_PMC0 + u32::from(MAX_GP_COUNTERS) =>
            {
                IA32_PMC0 + (msr - IA32_A_PMC0)
            }
            _ => msr,
        }
    }

    fn log_write(&self, msr: u32, value: u64) {
        let n = self.logged.get();
        match self.log.get(n) {
            Some(cell) => {
                cell.set((msr, value));
                self.logged.set(n + 1);
            }
            None => self.overflowed.set(true),
        }
    }
}

const fn in_block(msr: u32, first: u32, count: u8) -> bool {
    msr >= first && msr - first < count as u32
}

impl MsrAccess for FakeMsrs {
    fn read(&self, msr: u32) -> u64 {
        self.get(msr)
    }

    fn write(&self, msr: u32, value: u64) {
        self.log_write(msr, value);
        match self.cpu {
            FakeCpu::Intel {
                gp_width,
                fixed_width,
            } => {
                if in_block(msr, IA32_PMC0, MAX_GP_COUNTERS) {
                    // Legacy alias: bits 31:0, bit 31 copied upwards.
                    let extended = i64::from(value as u32 as i32) as u64;
                    self.set(msr, gp_width.truncate(extended));
                } else if in_block(msr, IA32_A_PMC0, MAX_GP_COUNTERS) {
                    self.set(msr, gp_width.truncate(value));
                } else if in_block(msr, IA32_FIXED_CTR0, MAX_FIXED_COUNTERS) {
                    self.set(msr, fixed_width.truncate(value));
                } else if msr == IA32_PERF_GLOBAL_OVF_CTRL {
                    self.set(
                        IA32_PERF_GLOBAL_STATUS,
                        self.get(IA32_PERF_GLOBAL_STATUS) & !value,
                    );
                } else if msr != IA32_PERF_GLOBAL_STATUS {
                    self.set(msr, value);
                }
            }
            FakeCpu::Amd(layout) => {
                let is_counter = (0..layout.counters()).any(|n| layout.perf_ctr(n) == msr);
                if is_counter {
                    self.set(msr, AmdCoreCounters::WIDTH.truncate(value));
                } else if msr == AMD_PERF_CNTR_GLOBAL_STATUS_CLR {
                    self.set(
                        AMD_PERF_CNTR_GLOBAL_STATUS,
                        self.get(AMD_PERF_CNTR_GLOBAL_STATUS) & !value,
                    );
                } else if msr != AMD_PERF_CNTR_GLOBAL_STATUS {
                    self.set(msr, value);
                }
            }
        }
    }

    fn rdpmc(&self, ecx: u32) -> u64 {
        match self.cpu {
            FakeCpu::Intel { .. } if ecx & RDPMC_FIXED != 0 => {
                self.get(IA32_FIXED_CTR0 + (ecx & !RDPMC_FIXED))
            }
            FakeCpu::Intel { .. } => self.get(IA32_PMC0 + ecx),
            FakeCpu::Amd(layout) => u8::try_from(ecx).map_or(0, |n| self.get(layout.perf_ctr(n))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msr::{ia32_a_pmc, ia32_pmc};

    fn skylake() -> FakeMsrs {
        FakeMsrs::intel(&ArchPerfmon::decode(0x0730_0404, 0, 0, 0x603).unwrap())
    }

    /// SDM Vol. 3B, "Full-Width Writes to Performance Counter Registers": IA32_PMCx takes
    /// bits 31:0 sign-extended, IA32_A_PMCx the whole 48 bits, both the same counter.
    #[test]
    fn legacy_and_full_width_counter_writes() {
        let msrs = skylake();
        msrs.write(ia32_pmc(0), 0x1234_8000_0000);
        assert_eq!(msrs.get(ia32_pmc(0)), 0xFFFF_8000_0000);
        msrs.write(ia32_pmc(0), 0x1234_7000_0000);
        assert_eq!(msrs.get(ia32_pmc(0)), 0x7000_0000);
        msrs.write(ia32_a_pmc(0), 0x1234_8000_0000);
        assert_eq!(msrs.get(ia32_pmc(0)), 0x1234_8000_0000);
        assert_eq!(msrs.read(ia32_a_pmc(0)), 0x1234_8000_0000);
        assert_eq!(msrs.rdpmc(0), 0x1234_8000_0000);
        assert_eq!(msrs.writes().count(), 3);
    }

    /// SDM Vol. 4: IA32_PERF_GLOBAL_STATUS is read-only; a 1 written to
    /// IA32_PERF_GLOBAL_OVF_CTRL clears the status bit at the same position.
    #[test]
    fn overflow_status_is_write_one_to_clear() {
        let msrs = skylake();
        msrs.set(IA32_PERF_GLOBAL_STATUS, 0b101 | 1 << 63);
        msrs.write(IA32_PERF_GLOBAL_STATUS, 0);
        assert_eq!(msrs.get(IA32_PERF_GLOBAL_STATUS), 0b101 | 1 << 63);
        msrs.write(IA32_PERF_GLOBAL_OVF_CTRL, 0b100);
        assert_eq!(msrs.get(IA32_PERF_GLOBAL_STATUS), 0b001 | 1 << 63);
    }

    /// STYLE.md 5: no panics on bad input, even in the fake.
    #[test]
    fn capacity_is_reported_not_a_panic() {
        let msrs = skylake();
        for i in 0..(LOG_ENTRIES as u32 + 1) {
            msrs.write(0x1000 + i % 8, u64::from(i));
        }
        assert!(msrs.capacity_exceeded());
        let full = skylake();
        for i in 0..(REGISTERS as u32 + 1) {
            full.set(0x2000 + i, 1);
        }
        assert!(full.capacity_exceeded());
    }
}
