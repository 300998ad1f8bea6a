//! PMSDSFR_EL1, Sampling Data Source Filter Register: with PMSFCR_EL1.FDS = 1, only samples
//! whose data source (the Data Source packet's value, IMPLEMENTATION DEFINED) has its bit set
//! here are recorded; data sources 0 to 63 have a bit, S\[n\] for source n. Present only with
//! FEAT_SPE_FDS (PMSIDR_EL1.FDS = 1).
//!
//! Linux 7.3 takes the complement from perf (`inv_data_src_filter`, so that the default 0
//! keeps every source): drivers/perf/arm_spe_pmu.c `arm_spe_event_to_pmsdsfr()`.
//!
//! Source: Arm ARM DDI 0487 M.a.a D24.7 (PMSDSFR_EL1); Linux 7.3 `arch/arm64/tools/sysreg`
//! (`Sysreg PMSDSFR_EL1 3 0 9 10 4`, `Field 63:0 S`).

use tock_registers::{register_bitfields, LocalRegisterCopy};

register_bitfields! {u64,
    /// PMSDSFR_EL1 fields.
    // The macro generates `Register`, `SET`/`CLEAR` and `Value` items without docs.
    #[allow(missing_docs)]
    pub PMSDSFR_EL1 [
        /// S\[n\]: with FDS, record samples whose data source is n.
        S OFFSET(0) NUMBITS(64) [],
    ]
}

/// A PMSDSFR_EL1 value.
pub type PmsdsfrEl1 = LocalRegisterCopy<u64, PMSDSFR_EL1::Register>;

spe_register_access!(
    PmsdsfrEl1,
    read_pmsdsfr_el1,
    write_pmsdsfr_el1,
    "PMSDSFR_EL1"
);
