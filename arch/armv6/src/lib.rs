//! The ARM1176 (ARMv6) performance monitor: Raspberry Pi 1 and Zero.
//!
//! The ARM1176JZF-S has three 32-bit counters and one control register, all in the
//! IMPLEMENTATION DEFINED CP15 space c15 (ARM1176JZF-S TRM, ARM DDI 0301H, 3.2.51-3.2.54):
//!
//! | register | module | what it is |
//! |---|---|---|
//! | PMCR | [`pmcr`] | enable, resets, CCR divider, interrupt enables, write-1-to-clear overflow flags, the two event fields |
//! | CCR | [`ccr`] | cycle counter |
//! | CR0, CR1 | [`cr0`], [`cr1`] | event counters |
//! | SUNAVCR | [`sunavcr`] | bit V opens the four to User mode (kmod-enable-user's stock flavour; [`user_enable`] sets it, checked) |
//!
//! The crate is layered the way the rest of the workspace is:
//!
//! - **values**: each register module defines its contents as a pure value
//!   (`tock-registers` [`LocalRegisterCopy`](tock_registers::LocalRegisterCopy) or a
//!   `#[repr(transparent)]` newtype) that host tests build and decode; [`event`] is the
//!   event table (24 events plus 0xFF) and its mapping to [`pmu_core::GenericEvent`];
//! - **access**: the `asm` module holds every `mrc`/`mcr`, and `Cp15` wraps them as a
//!   [`PmuRegisters`] implementation (both only for `target_arch = "arm"`);
//!   [`fake::FakeRegisters`] is a register file with the hardware's behaviour for host
//!   tests;
//! - **driver**: [`Arm1176Pmu`] implements [`pmu_core::Pmu`] over any [`PmuRegisters`]:
//!   CCR as fixed counter 0, CR0/CR1 as programmable counters 0/1. It stops single
//!   counters although PMCR.E is global, and never clears a pending overflow flag by
//!   accident (see the [`pmu`] module docs).
//!
//! [`reader`] holds the handles that read a counter with one `mrc` and nothing else.
//!
//! The ARM1176 has no privilege filter (everything counts in every mode) and, on the
//! Raspberry Pi, no overflow interrupt: overflows are seen through the flags.
//!
//! # Example
//!
//! ```
//! use pmu_armv6::{fake::FakeRegisters, Arm1176Event, Arm1176Pmu, CycleDivider};
//! use pmu_core::{CounterPool, GenericEvent, PrivilegeFilter, Slot};
//!
//! // On a Raspberry Pi: `unsafe { Arm1176Pmu::new(CycleDivider::EveryCycle) }`.
//! let pmu = Arm1176Pmu::with_registers(FakeRegisters::new(), CycleDivider::EveryCycle);
//! let pool = CounterPool::new(pmu);
//! let cycles = pool.counter(GenericEvent::CpuCycles.into(), PrivilegeFilter::ALL)?;
//! let instructions = pool.counter(GenericEvent::Instructions.into(), PrivilegeFilter::ALL)?;
//! assert_eq!(cycles.slot(), Slot::Fixed(0));
//! cycles.start();
//! instructions.start();
//! pool.pmu().registers().tick(Arm1176Event::InstructionExecuted, 68);
//! pool.pmu().registers().tick(Arm1176Event::CycleCount, 452);
//! assert_eq!((cycles.read(), instructions.read()), (452, 68));
//! # Ok::<(), pmu_core::Error>(())
//! ```
#![no_std]

#[cfg(test)]
extern crate std;

#[cfg(target_arch = "arm")]
pub mod asm;
pub mod ccr;
pub mod cp15;
pub mod cr0;
pub mod cr1;
pub mod event;
pub mod fake;
pub mod pmcr;
pub mod pmu;
pub mod reader;
pub mod sunavcr;
pub mod user_enable;

pub use ccr::{Ccr, CycleDivider};
#[cfg(target_arch = "arm")]
pub use cp15::{Cp15, PrivilegedCp15};
pub use cr0::Cr0;
pub use cr1::Cr1;
pub use event::Arm1176Event;
pub use pmcr::{CounterRegister, Pmcr};
pub use pmu::{Arm1176Pmu, PmuRegisters};
pub use sunavcr::Sunavcr;

/// The README (what crates.io shows), its example run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
