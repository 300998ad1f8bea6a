//! One PMU access per function, run in User mode (PL0) under each PMUSERENR setting.
//!
//! Which bits allow which access: ARMv7-A/R ARM (DDI 0406C) C12 "PMUSERENR" (EN:
//! every PMU register but PMUSERENR writes and PMINTENSET/CLR) and, for PMUv3 in
//! AArch32, Arm ARM (DDI 0487) G8 "PMUSERENR" (ER: PMSELR and PMXEVCNTR reads, CR:
//! PMCCNTR reads, SW: PMSWINC writes). PMUSERENR itself is always readable at PL0.

use pmu_armv7::asm;

use crate::boot::pl0_exit;

/// Every PMUSERENR bit: an access with this mask is allowed whatever the setting.
pub const ALWAYS: u32 = u32::MAX;
/// EN.
pub const EN: u32 = 1;
/// SW.
pub const SW: u32 = 2;
/// CR.
pub const CR: u32 = 4;
/// ER.
pub const ER: u32 = 8;

/// One probe.
pub struct Probe {
    /// Its name in the RESULT line.
    pub name: &'static str,
    /// The PL0 code.
    pub entry: extern "C" fn(u32) -> !,
    /// The PMUSERENR bits any one of which allows it (0: none does).
    pub allowed_by: u32,
}

/// The PMUSERENR settings tried, by name.
pub const SETTINGS: [(&str, u32); 3] = [("none", 0), ("CR|ER", CR | ER), ("EN", EN)];

extern "C" fn pmuserenr_read(_: u32) -> ! {
    // SAFETY: PMUSERENR is readable at PL0 (DDI 0406C C12).
    pl0_exit(unsafe { asm::pmuserenr() })
}

extern "C" fn pmccntr_read(_: u32) -> ! {
    // SAFETY: allowed or trapped; the trap returns to `at_pl0`'s caller.
    pl0_exit(unsafe { asm::pmccntr() })
}

extern "C" fn pmxevcntr_read(_: u32) -> ! {
    // SAFETY: allowed or trapped, as above. Counter 0 exists (PMCR.N >= 1).
    unsafe { asm::set_pmselr(0) };
    // PMXEVCNTR must see the new PMSELR.
    asm::isb();
    // SAFETY: as above.
    pl0_exit(unsafe { asm::pmxevcntr() })
}

extern "C" fn pmswinc_write(_: u32) -> ! {
    // SAFETY: allowed or trapped; writing 0 increments nothing.
    unsafe { asm::set_pmswinc(0) };
    pl0_exit(1)
}

extern "C" fn pmcr_read(_: u32) -> ! {
    // SAFETY: allowed or trapped, as above.
    pl0_exit(unsafe { asm::pmcr() })
}

extern "C" fn pmintenset_read(_: u32) -> ! {
    // SAFETY: always UNDEFINED at PL0; the trap returns to `at_pl0`'s caller.
    pl0_exit(unsafe { asm::pmintenset() })
}

/// The probes.
pub const PROBES: [Probe; 6] = [
    Probe {
        name: "PMUSERENR.read",
        entry: pmuserenr_read,
        allowed_by: ALWAYS,
    },
    Probe {
        name: "PMCCNTR.read",
        entry: pmccntr_read,
        allowed_by: EN | CR,
    },
    Probe {
        name: "PMXEVCNTR.read",
        entry: pmxevcntr_read,
        allowed_by: EN | ER,
    },
    Probe {
        name: "PMSWINC.write",
        entry: pmswinc_write,
        allowed_by: EN | SW,
    },
    Probe {
        name: "PMCR.read",
        entry: pmcr_read,
        allowed_by: EN,
    },
    Probe {
        name: "PMINTENSET.read",
        entry: pmintenset_read,
        allowed_by: 0,
    },
];
