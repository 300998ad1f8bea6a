//! The PMUv3 system registers as values.
//!
//! One file per register (or set/clear pair), named as in the Arm ARM (DDI 0487,
//! "Performance Monitors registers"), with `register_bitfields!` fields spelled as the
//! spec spells them. Each register has a [`LocalRegisterCopy`] alias (`PmcrEl0`, …):
//! a plain value host tests can build and decode. Reading and writing the hardware is
//! in [`crate::asm`] (and the register files of `el1` / `el0` built on it).
//!
//! The counters themselves (`PMEVCNTR<n>_EL0`, PMCCNTR_EL0) have no fields: they are
//! plain `u64` counts. `PMEVTYPER<n>_EL0` and `PMEVCNTR<n>_EL0` exist for n = 0..=30 and are
//! reached by their numbered encodings, never through PMSELR_EL0.
//!
//! [`LocalRegisterCopy`]: tock_registers::LocalRegisterCopy

pub mod pmccfiltr_el0;
pub mod pmceid_el0;
pub mod pmcntenset_el0;
pub mod pmcr_el0;
pub mod pmevtypern_el0;
pub mod pmintenset_el1;
pub mod pmovsset_el0;
pub mod pmselr_el0;
pub mod pmswinc_el0;
pub mod pmuacr_el1;
pub mod pmuserenr_el0;

pub use pmccfiltr_el0::{PmccfiltrEl0, PMCCFILTR_EL0};
pub use pmceid_el0::{Pmceid0El0, Pmceid1El0, PMCEID0_EL0, PMCEID1_EL0};
pub use pmcntenset_el0::{PmcntenclrEl0, PmcntensetEl0, PMCNTENCLR_EL0, PMCNTENSET_EL0};
pub use pmcr_el0::{PmcrEl0, PMCR_EL0};
pub use pmevtypern_el0::{PMEVTYPERn_EL0, PmevtypernEl0};
pub use pmintenset_el1::{PmintenclrEl1, PmintensetEl1, PMINTENCLR_EL1, PMINTENSET_EL1};
pub use pmovsset_el0::{PmovsclrEl0, PmovssetEl0, PMOVSCLR_EL0, PMOVSSET_EL0};
pub use pmselr_el0::{PmselrEl0, PMSELR_EL0};
pub use pmswinc_el0::{PmswincEl0, PMSWINC_EL0};
pub use pmuacr_el1::{PmuacrEl1, PMUACR_EL1};
pub use pmuserenr_el0::{PmuserenrEl0, PMUSERENR_EL0};
