//! The AArch32 PMU: ARMv7 PMUv1/PMUv2 (Cortex-A7 on the Raspberry Pi 2, Cortex-A15) and
//! PMUv3 seen from AArch32 (Cortex-A53/A72/A76 on a Pi 3/4/5 running a 32-bit kernel).
//!
//! How the crate is built, from the bottom:
//!
//! - [`registers`]: the cp15 c9 registers (PMCR, PMCNTENSET/CLR, PMOVSR, PMSWINC,
//!   PMSELR, PMXEVTYPER/PMCCFILTR, PMUSERENR, PMINTENSET/CLR) and ID_DFR0.PerfMon as
//!   values (`tock-registers`), field names as DDI 0406C chapter C12 spells them;
//! - `asm`: every `mrc`/`mcr p15` and `isb`, `unsafe fn`s on `target_arch = "arm"`
//!   only;
//! - event numbers, the generic-event map and PMCEID decoding are `pmu_armv8`'s
//!   ([`pmu_armv8::EventNumber`], [`pmu_armv8::generic_event`],
//!   [`pmu_armv8::ImplementedEvents`]): the common events 0x00..=0x3F mean the same in
//!   ARMv7 PMUv2 and PMUv3 (DDI 0406C C12 "Event numbers", DDI 0487 D17);
//! - [`pmu`]: [`Armv7Pmu`], the `pmu_core::Pmu` implementation over a
//!   [`PmuRegisters`] file: `pl1` (PL1) and `pl0` (PL0 after PMUSERENR.EN) on the
//!   target, [`fake`] on the host;
//! - [`granted`]: the reads of the counters the module runs for PL0 under its
//!   read-only grant (PMUv3: PMUSERENR.ER | CR), nothing programmed;
//! - [`user_enable`]: the per-CPU grant and restore of PL0 access a 32-bit kernel module
//!   runs. PMUv2 has no read-only grant (PMUSERENR.EN only): there it refuses unless
//!   the explicit write opt-in `el0_programming=1` is given.
//!
//! The driver reaches counters through PMSELR + PMXEVTYPER/PMXEVCNTR, which both PMUv2
//! and PMUv3 have. [`reader`] holds the handles that read at the floor: PMCCNTR with
//! one `mrc`, and on PMUv3 event counter N with one `mrc` of its own encoding
//! (`PMEVCNTR<N>`, `c14, c8..c11`); on PMUv1/PMUv2 PMSELR + `isb` + PMXEVCNTR. Every
//! counter is 32 bits (PMCR.LC stays 0).
//!
//! ```
//! use pmu_armv7::fake::FakeRegisters;
//! use pmu_armv7::{Armv7Pmu, PerfMon};
//! use pmu_armv8::EventNumber;
//! use pmu_core::{CounterPool, GenericEvent, PrivilegeFilter, Slot};
//!
//! let regs = FakeRegisters::cortex_a7();
//! let pmu = Armv7Pmu::new(&regs, PerfMon::PmuV2).unwrap();
//! let pool = CounterPool::new(pmu);
//! let ins = pool.counter(GenericEvent::Instructions.into(), PrivilegeFilter::USER).unwrap();
//! assert_eq!(ins.slot(), Slot::Programmable(0));
//! ins.start();
//! regs.count(EventNumber::INST_RETIRED, 1000);
//! assert_eq!(ins.read(), 1000);
//! ```
#![no_std]

#[cfg(test)]
extern crate std;

pub mod asm;
pub mod fake;
pub mod granted;
#[cfg(target_arch = "arm")]
pub mod pl0;
#[cfg(target_arch = "arm")]
pub mod pl1;
pub mod pmu;
pub mod reader;
pub mod registers;
pub mod user_enable;

#[cfg(target_arch = "arm")]
pub use pl0::{Pl0Pmu, Pl0Registers};
#[cfg(target_arch = "arm")]
pub use pl1::{Pl1Pmu, Pl1Registers};
pub use pmu::{Armv7Pmu, CounterId, InterruptRegisters, PmuRegisters, ProbeError};
pub use registers::PerfMon;
