//! The AArch32 PMU registers (cp15 c9, and ID_DFR0) as values.
//!
//! One file per register or tight group, field names as the ARMv7-A/R ARM (DDI 0406C)
//! chapter C12 and the Arm ARM (DDI 0487) chapter G8 spell them. PMCEID0/1 need no
//! type of their own: [`pmu_armv8::ImplementedEvents`] decodes them (the AArch32
//! registers are the low 32 bits of PMCEID0/1_EL0: events 0x00..=0x1F and
//! 0x20..=0x3F). PMCCNTR, PMXEVCNTR and `PMEVCNTR<n>` are plain counts.

pub mod counter_bits;
pub mod id_dfr0;
pub mod pmcr;
pub mod pmselr;
pub mod pmuserenr;
pub mod pmxevtyper;

pub use counter_bits::{
    Pmcntenclr, Pmcntenset, Pmintenclr, Pmintenset, Pmovsr, Pmswinc, COUNTER_BITS,
};
pub use id_dfr0::PerfMon;
pub use pmcr::{Pmcr, PMCR};
pub use pmselr::{Pmselr, PMSELR};
pub use pmuserenr::{Pmuserenr, PMUSERENR};
pub use pmxevtyper::{Pmccfiltr, Pmxevtyper, PMXEVTYPER};
