//! x86 PMU: the instructions, the registers and a ring-0 backend for Intel and AMD core
//! performance counters.
//!
//! The crate is `no_std` and sits between [`pmu_core`] (which defines the [`pmu_core::Pmu`]
//! trait, counter widths and events) and the places that drive an x86 PMU directly: bare
//! metal images, kernels, and the Linux user-space code that only needs `rdpmc`.
//!
//! Layers, bottom up:
//!
//! - [`asm`] (x86-64 only): every instruction, one small function each: `rdpmc` and its
//!   LFENCE-bracketed variant, `rdtsc`/`rdtscp`, `rdmsr`/`wrmsr`, CR4 access;
//! - registers as pure values, one file per register named like the SDM
//!   ([`ia32_perfevtsel`], [`ia32_fixed_ctr_ctrl`], [`ia32_perf_global_ctrl`],
//!   [`ia32_perf_global_status`], [`ia32_perf_capabilities`], [`amd_perf_ctl`]) built with
//!   `tock-registers`, and their MSR numbers ([`msr`], from the `x86` crate where it has
//!   them);
//! - [`cpuid`]: CPUID leaf 0AH and the AMD leaves, decoded by pure functions the tests
//!   feed vectors to, and probed through `raw-cpuid`;
//! - events: the architectural events of leaf 0AH ([`events`]) and AMD's ([`amd_events`]);
//! - [`access`]: the [`MsrAccess`] trait the backends are written against, and
//!   [`Ring0Msrs`], its real implementation (unsafe to build: CPL 0), which refuses any
//!   MSR outside the PMU CPUID enumerated; [`fake`] is a register file for tests;
//! - the backends [`IntelPmu`] and [`AmdPmu`], implementations of [`pmu_core::Pmu`];
//! - [`cr4`]: CR4.PCE, which lets user space execute RDPMC.
//!
//! ```
//! use pmu_core::{CounterPool, GenericEvent, PrivilegeFilter, Slot};
//! use pmu_x86::{cpuid::ArchPerfmon, fake::FakeMsrs, CounterWrites, IntelPmu};
//!
//! // A Skylake-like PMU (CPUID.0AH EAX=0x07300404, EDX=0x603) over a fake register file;
//! // at ring 0 use `IntelPmu::from_ring0(unsafe { Ring0Msrs::new() }?)`.
//! let perfmon = ArchPerfmon::decode(0x0730_0404, 0, 0, 0x603)?;
//! let pmu = IntelPmu::new(FakeMsrs::intel(&perfmon), perfmon, CounterWrites::FullWidth);
//! let pool = CounterPool::new(pmu);
//! let instructions = pool.counter(GenericEvent::Instructions.into(), PrivilegeFilter::USER)?;
//! assert_eq!(instructions.slot(), Slot::Fixed(0));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![no_std]

#[cfg(test)]
extern crate std;

pub mod access;
pub mod amd_events;
pub mod amd_perf_ctl;
mod amd_pmu;
#[cfg(target_arch = "x86_64")]
pub mod asm;
pub mod cpuid;
pub mod cr4;
mod error;
pub mod events;
pub mod fake;
pub mod ia32_fixed_ctr_ctrl;
pub mod ia32_perf_capabilities;
pub mod ia32_perf_global_ctrl;
pub mod ia32_perf_global_status;
pub mod ia32_perfevtsel;
mod intel_pmu;
pub mod msr;

#[cfg(target_arch = "x86_64")]
pub use access::Ring0Msrs;
pub use access::{MsrAccess, PmuMsrSet};
pub use amd_events::AmdEvent;
pub use amd_pmu::AmdPmu;
pub use cpuid::{AmdCoreCounters, ArchPerfmon, CpuPmuInfo, PmuDescription, Vendor};
pub use error::ProbeError;
pub use events::{ArchEvent, IntelEvent};
pub use intel_pmu::{CounterWrites, IntelPmu};

/// The README (what crates.io shows), its example run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
