//! EL0 code that touches one PMU register each, to see which PMUSERENR_EL0 bit lets
//! it through. A trapped access is skipped by the exception handler and recorded.

use pmu_armv8::{asm, EventCounter};

use crate::boot::el0_exit;

/// One EL0 access.
pub struct Probe {
    /// The register, as the Arm ARM names it.
    pub name: &'static str,
    /// The EL0 code.
    pub entry: extern "C" fn(u64) -> !,
    /// Which PMUSERENR_EL0 bits allow it (Arm ARM, PMUSERENR_EL0 field descriptions:
    /// EN allows every access, CR reads of PMCCNTR_EL0, ER reads of the event
    /// counters, SW writes of PMSWINC_EL0; measured the same in QEMU,
    /// docs/qemu.md).
    pub allowed_by: u64,
}

/// PMUSERENR_EL0 bits, from pmu-armv8's register definition.
pub mod bits {
    use pmu_armv8::registers::pmuserenr_el0::PMUSERENR_EL0;
    /// EN: all EL0 accesses.
    pub const EN: u64 = PMUSERENR_EL0::EN::SET.value;
    /// SW: PMSWINC_EL0 writes.
    pub const SW: u64 = PMUSERENR_EL0::SW::SET.value;
    /// CR: PMCCNTR_EL0 reads.
    pub const CR: u64 = PMUSERENR_EL0::CR::SET.value;
    /// ER: event counter reads.
    pub const ER: u64 = PMUSERENR_EL0::ER::SET.value;
}

extern "C" fn read_pmccntr(_: u64) -> ! {
    // SAFETY: at EL0; a trap is expected and handled when PMUSERENR forbids it.
    let v = unsafe { asm::read_pmccntr_el0() };
    // SAFETY: runs under `at_el0`.
    unsafe { el0_exit(v) }
}

extern "C" fn read_pmevcntr0(_: u64) -> ! {
    let c = EventCounter::new(0).unwrap_or_else(|| unreachable_el0());
    // SAFETY: as in `read_pmccntr`.
    let v = unsafe { asm::read_pmevcntr_el0(c) };
    // SAFETY: runs under `at_el0`.
    unsafe { el0_exit(v) }
}

extern "C" fn write_pmswinc(_: u64) -> ! {
    // SAFETY: as in `read_pmccntr`; increments only SW_INCR counters, none is set up.
    unsafe { asm::write_pmswinc_el0(1) };
    // SAFETY: runs under `at_el0`.
    unsafe { el0_exit(0) }
}

extern "C" fn read_pmcr(_: u64) -> ! {
    // SAFETY: as in `read_pmccntr`.
    let v = unsafe { asm::read_pmcr_el0() };
    // SAFETY: runs under `at_el0`.
    unsafe { el0_exit(v) }
}

fn unreachable_el0() -> ! {
    // SAFETY: runs under `at_el0`; u64::MAX tells the EL1 side something was wrong.
    unsafe { el0_exit(u64::MAX) }
}

/// The probes, in report order.
pub const PROBES: [Probe; 4] = [
    Probe {
        name: "PMCCNTR_EL0",
        entry: read_pmccntr,
        allowed_by: bits::EN | bits::CR,
    },
    Probe {
        name: "PMEVCNTR0_EL0",
        entry: read_pmevcntr0,
        allowed_by: bits::EN | bits::ER,
    },
    Probe {
        name: "PMSWINC_EL0",
        entry: write_pmswinc,
        allowed_by: bits::EN | bits::SW,
    },
    Probe {
        name: "PMCR_EL0",
        entry: read_pmcr,
        allowed_by: bits::EN,
    },
];

/// The PMUSERENR_EL0 settings tried, with their names.
pub const SETTINGS: [(&str, u64); 5] = [
    ("none", 0),
    ("EN", bits::EN),
    ("SW", bits::SW),
    ("CR", bits::CR),
    ("ER", bits::ER),
];
