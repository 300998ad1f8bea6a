//! EL0 blocks of exactly K instructions (the EL1 ones are
//! [`pmu_scenarios_common::blocks`]).

use pmu_scenarios_common::blocks::nops;

/// EL0 code: K `nop`s, then back to EL1.
pub extern "C" fn el0_nops<const K: usize>(_: u64) -> ! {
    nops::<K>();
    // SAFETY: runs at EL0 under `boot::at_el0`, which `el0_exit` returns to.
    unsafe { crate::boot::el0_exit(0) }
}
