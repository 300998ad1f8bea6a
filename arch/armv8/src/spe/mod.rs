//! The Statistical Profiling Extension (SPE): its system registers as values, the capabilities
//! of this PE's SPE, and the probe that finds them.
//!
//! SPE samples one operation every N (PMSIRR_EL1), filters the sample (PMSFCR_EL1 with
//! PMSEVFR_EL1, PMSNEVFR_EL1, PMSLATFR_EL1) and writes a record to a memory buffer
//! (PMBPTR_EL1 up to PMBLIMITR_EL1), raising a management event in PMBSR_EL1 when it stops.
//! PMSCR_EL1 switches sampling on per Exception level; PMSIDR_EL1 and PMBIDR_EL1 describe the
//! implementation.
//!
//! Layout, as in `aarch64-cpu`: one file per register, named like the Arm ARM, each with a
//! `register_bitfields!` definition whose fields carry the spec's names, a value type
//! (`LocalRegisterCopy`, e.g. [`PmsfcrEl1`]) that host tests build and decode, pure encoders
//! that return typed errors, and — on aarch64 only — `unsafe fn read()`/`write()`. The
//! instructions themselves live in [`crate::asm::spe`].
//!
//! Start with `probe` (aarch64 only) or [`probe_with`]: it checks `ID_AA64DFR0_EL1.PMSVer` before
//! any SPE register is touched, since on a PE without SPE (QEMU) they are UNDEFINED.
//!
//! On top of the registers:
//! - [`config`]: [`SpeConfigBuilder`] states what to sample; validated against
//!   [`SpeCapabilities`] it becomes an [`SpeConfig`] (register values plus [`SpeWarning`]s) or
//!   a typed [`SpeError`] that says what to change; [`check_registers`] reviews raw values;
//! - [`register_set`]: the register values as a set, each field explained ([`FieldInfo`]) for
//!   front ends and JSON;
//! - [`program`]: the programming sequences (filters, buffer, enable, stop) against a
//!   [`SpeRegisterFile`], with every barrier the architecture asks for, and
//!   [`apply_if_present_with`] (`apply_if_present` on aarch64), which probes first and
//!   returns [`SpeError::NotImplemented`] without touching SPE where there is none; [`fake`]
//!   is the recording register file the host tests use;
//! - [`model`]: whether the hardware records a given operation under given registers;
//! - [`perf`]: the configuration as a Linux `arm_spe` perf event and event string, under
//!   the rules of Linux 6.12 or 7.3 ([`perf::LinuxSpeDriver`]; filters perf refuses become a
//!   [`perf::PostFilter`]), and what the driver accepts and programs for a perf event;
//! - [`decode`]: the record packet stream decoder, checked against perf's own;
//! - [`perf_data`]: the reader for the `perf.data` files `perf record` writes;
//! - `serialize` (feature `serde`): `serde::Serialize` for what a tool prints of all the
//!   above, in one documented shape.
//!
//! The walkthrough below goes through it in order, with the common mistakes (testing one bit
//! of PMSVer, a PMSCR_EL1 "EN" bit, writing PMSIDR_EL1, PMSEVFR_EL1 = 0x08 for an LLC miss,
//! exclusives taken for atomics).
//!
//! Sources: Arm ARM DDI 0487 M.a.a, D24.7 (SPE registers), D24.2.80 (ID_AA64DFR0_EL1), D18.2.6
//! (Events packet), D17.9 (synchronization), C6.2.318 (PSB); Linux 6.12 and 7.3
//! `arch/arm64/tools/sysreg` and `drivers/perf/arm_spe_pmu.c`.
//!
#![doc = include_str!("walkthrough.md")]

/// Generates the typed `read`/`write` of one register from its `asm::spe` accessors.
macro_rules! spe_register_access {
    ($value:ty, $read:ident, $write:ident, $name:literal) => {
        spe_register_read!($value, $read, $name);

        #[doc = concat!("Writes ", $name, ".")]
        ///
        /// # Safety
        ///
        #[doc = concat!("The contract of `asm::spe::", stringify!($write), "`.")]
        #[cfg(target_arch = "aarch64")]
        #[inline]
        pub unsafe fn write(value: $value) {
            // SAFETY: the caller upholds the contract of the raw accessor.
            unsafe { crate::asm::spe::$write(value.get()) }
        }
    };
}

/// Generates the typed `read` of one register from its `asm::spe` accessor.
macro_rules! spe_register_read {
    ($value:ty, $read:ident, $name:literal) => {
        #[doc = concat!("Reads ", $name, ".")]
        ///
        /// # Safety
        ///
        #[doc = concat!("The contract of `asm::spe::", stringify!($read), "`.")]
        #[cfg(target_arch = "aarch64")]
        #[inline]
        pub unsafe fn read() -> $value {
            // SAFETY: the caller upholds the contract of the raw accessor.
            <$value>::new(unsafe { crate::asm::spe::$read() })
        }
    };
}

pub mod capabilities;
pub mod config;
pub mod decode;
pub mod error;
pub mod events;
pub mod fake;
pub mod model;
pub mod perf;
pub mod perf_data;
pub mod pmbidr_el1;
pub mod pmblimitr_el1;
pub mod pmbptr_el1;
pub mod pmbsr_el1;
pub mod pmscr_el1;
pub mod pmsdsfr_el1;
pub mod pmsevfr_el1;
pub mod pmsfcr_el1;
pub mod pmsicr_el1;
pub mod pmsidr_el1;
pub mod pmsirr_el1;
pub mod pmslatfr_el1;
pub mod pmsnevfr_el1;
pub mod program;
pub mod register_set;
#[cfg(feature = "serde")]
pub mod serialize;
pub mod version;

#[cfg(target_arch = "aarch64")]
pub use capabilities::{probe, CurrentPe};
pub use capabilities::{probe_with, SpeCapabilities, SpeIdRegisters};
pub use config::{
    check_registers, Diagnostics, ExceptionLevels, OperationTypes, SpeConfig, SpeConfigBuilder,
    TimestampSource,
};
pub use error::{EventFilterKind, IdRegisterField, SpeError, SpeFilter, SpeWarning};
pub use events::{check_event_filter, classify_event_filter, EventFilterSupport, SpeEvents};
pub use pmbidr_el1::{PmbidrEl1, PMBIDR_EL1};
pub use pmblimitr_el1::{PmblimitrEl1, PMBLIMITR_EL1};
pub use pmbptr_el1::{PmbptrEl1, PMBPTR_EL1};
pub use pmbsr_el1::{BufferStatus, BufferSyndrome, ManagementEvent, PmbsrEl1, PMBSR_EL1};
pub use pmscr_el1::{PmscrEl1, PMSCR_EL1};
pub use pmsdsfr_el1::{PmsdsfrEl1, PMSDSFR_EL1};
pub use pmsevfr_el1::{PmsevfrEl1, PMSEVFR_EL1};
pub use pmsfcr_el1::{PmsfcrEl1, PMSFCR_EL1};
pub use pmsicr_el1::{PmsicrEl1, PMSICR_EL1};
pub use pmsidr_el1::{CounterSize, PmsidrEl1, PMSIDR_EL1};
pub use pmsirr_el1::{PmsirrEl1, PMSIRR_EL1};
pub use pmslatfr_el1::{PmslatfrEl1, PMSLATFR_EL1};
pub use pmsnevfr_el1::{PmsnevfrEl1, PMSNEVFR_EL1};
#[cfg(target_arch = "aarch64")]
pub use program::{apply_if_present, El1Spe};
pub use program::{
    apply_if_present_with, AppliedSession, Barrier, ProfilingBuffer, SessionEnd, SpeRegisterFile,
};
pub use register_set::{FieldInfo, SpeRegister, SpeRegisterValues};
pub use version::SpeVersion;
