//! ARMv8 PMUv3 and the Statistical Profiling Extension (SPE).
//!
//! How the crate is built, from the bottom:
//!
//! - [`registers`]: every PMUv3 system register as a value (`register_bitfields!`
//!   from `tock-registers`, one file per register as in `aarch64-cpu`), with pure
//!   converters such as [`registers::pmevtypern_el0::for_event`];
//! - [`asm`]: every instruction the crate executes (`mrs`/`msr`/`isb`), `unsafe fn`s
//!   that exist only on `target_arch = "aarch64"`;
//! - [`version`] (PMUVer from ID_AA64DFR0_EL1), [`events`] (common event numbers,
//!   the generic-event map, PMCEID decoding) and [`counter`] (register bits, slots and
//!   the perf mmap-page index of each counter): pure, host-tested;
//! - [`pmu`]: [`Armv8Pmu`], the `pmu_core::Pmu` implementation, generic over a
//!   [`PmuRegisters`] register file; `el1` and `el0` (aarch64 only) provide the real register files
//!   (EL1, and EL0 after the kernel set PMUSERENR_EL0.EN), [`fake`] the in-memory one the
//!   host tests drive;
//! - [`handle`]: counter handles at the floor (one `mrs` per read for a counter known at
//!   compile time, a table dispatch for one chosen at run time), made only with proof
//!   of access ([`handle::ReadGrant`]);
//! - [`spe`]: SPE registers, capabilities and filter configuration;
//! - [`user_enable`]: the per-CPU grant and restore of EL0 access that both flavours of
//!   the kernel module kmod-enable-user run (`el1::El1UserAccess` is its real register
//!   file, [`fake::FakeUserAccess`] the host one).
//!
//! ```
//! use pmu_armv8::fake::FakeRegisters;
//! use pmu_armv8::{Armv8Pmu, EventNumber, PmuOptions};
//! use pmu_core::{CounterPool, GenericEvent, PrivilegeFilter, Slot};
//!
//! let regs = FakeRegisters::qemu_max_icount();
//! let pmu = Armv8Pmu::new(&regs, pmu_armv8::PmuVersion::PmuV3p5, PmuOptions::new()).unwrap();
//! let pool = CounterPool::new(pmu);
//! let ins = pool.counter(GenericEvent::Instructions.into(), PrivilegeFilter::USER).unwrap();
//! assert_eq!(ins.slot(), Slot::Programmable(0));
//! ins.start();
//! regs.count(EventNumber::INST_RETIRED, 1000);
//! assert_eq!(ins.read(), 1000);
//! ```
//!
//! On the target, `unsafe { El1Pmu::take(PmuOptions::new()) }` replaces the first two
//! lines.
#![no_std]

#[cfg(test)]
extern crate std;

pub mod asm;
#[cfg(target_arch = "aarch64")]
#[macro_use]
mod sysreg_access;
pub mod counter;
#[cfg(target_arch = "aarch64")]
pub mod el0;
#[cfg(target_arch = "aarch64")]
pub mod el1;
pub mod events;
pub mod fake;
pub mod granted;
pub mod handle;
pub mod pmu;
pub mod registers;
pub mod spe;
pub mod user_enable;
pub mod version;

pub use counter::{counter_for_perf_index, CounterId, EventCounter};
#[cfg(target_arch = "aarch64")]
pub use el0::{El0Pmu, El0Registers};
#[cfg(target_arch = "aarch64")]
pub use el1::{El1Pmu, El1Registers, El1UserAccess};
pub use events::{generic_event, Armv8Event, EventNumber, ImplementedEvents};
pub use pmu::{
    Armv8Pmu, EventCounterWidth, InterruptRegisters, PmuOptions, PmuRegisters, ProbeError,
};
pub use version::PmuVersion;

/// The README (what crates.io shows), its example run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
