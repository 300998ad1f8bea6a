//! Scenarios `rdpmc_ring0` and `rdpmc_ring3`: RDPMC with ECX = 0 (general-purpose
//! counter 0) from ring 0, and from ring 3 with CR4.PCE clear and set.
//!
//! SDM Vol. 2B, RDPMC: "#GP(0) if the current privilege level is not 0 and the PCE flag
//! in the CR4 register is clear", and #GP(0) for an ECX naming no counter. So from ring
//! 3 with PCE clear the CPU must raise #GP before looking at the counter; with PCE set
//! it reads the counter (a PMU with counter 0) or faults for another reason. QEMU TCG
//! implements the privilege check but no counters: it raises #UD once the check passes,
//! in ring 0 and in ring 3 with PCE set (docs/qemu.md). The change from
//! #GP to something else is what proves the bit works.

use super::cpuid::Platform;
use super::{Tally, Verdict};
use crate::println;
use crate::traps::{self, Fault};

/// Ring-0 probe: RDPMC with ECX = `ecx`.
extern "C" fn rdpmc_ring0(ecx: u64) -> u64 {
    // SAFETY: runs in ring 0 under `run_ring0`; RDPMC changes no state, and when ECX names
    // no counter the #GP (or TCG's #UD) comes back as the probe's result.
    unsafe { pmu_x86::asm::rdpmc(ecx as u32) }
}

/// Ring-3 probe: RDPMC with ECX = `ecx`, the value handed back through `int 0x80`.
extern "C" fn rdpmc_ring3(ecx: u64) -> ! {
    // SAFETY: runs in ring 3 under `run_ring3`: without CR4.PCE or without the counter
    // the CPU raises #GP (#UD under TCG) before changing any state, and the fault comes
    // back to ring 0 as the probe's result: measuring that is the point.
    let value = unsafe { pmu_x86::asm::rdpmc(ecx as u32) };
    traps::return_to_ring0(value)
}

/// Sets or clears CR4.PCE and returns what CR4.PCE reads afterwards.
fn set_pce(enabled: bool) -> bool {
    // SAFETY: the image runs in ring 0 with interrupts off on one CPU: nothing else
    // changes CR4 concurrently. CR4.PCE only decides whether ring 3 may use RDPMC.
    unsafe {
        pmu_x86::cr4::set_user_rdpmc(enabled);
        pmu_x86::cr4::user_rdpmc_enabled()
    }
}

/// `outcome=value value=…` or `outcome=fault vector=… exception=… error_code=… cpl=…`.
struct Outcome(Result<u64, Fault>);

impl core::fmt::Display for Outcome {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            Ok(v) => write!(f, "outcome=value value={v:#x}"),
            Err(fault) => write!(
                f,
                "outcome=fault vector={} exception={} error_code={:#x} cpl={}",
                fault.vector,
                fault.mnemonic(),
                fault.error_code,
                fault.cpl
            ),
        }
    }
}

/// Human-readable outcome.
fn describe(outcome: &Result<u64, Fault>) -> impl core::fmt::Display + '_ {
    struct Human<'a>(&'a Result<u64, Fault>);
    impl core::fmt::Display for Human<'_> {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            match self.0 {
                Ok(v) => write!(f, "read {v:#x}"),
                Err(fault) => write!(
                    f,
                    "raised {} (vector {}, error code {:#x}) at rip {:#x}",
                    fault.mnemonic(),
                    fault.vector,
                    fault.error_code,
                    fault.rip
                ),
            }
        }
    }
    Human(outcome)
}

/// Runs both scenarios; leaves CR4.PCE clear.
pub fn run(tally: &mut Tally, platform: &Platform) {
    let counter0 = platform.counter0;

    // Ring 0: a value where counter 0 exists, a fault where it does not.
    // SAFETY: the probe owns nothing and changes no state.
    let ring0 = unsafe { traps::run_ring0(rdpmc_ring0, 0) };
    let ring0_ok = match ring0 {
        Ok(_) => counter0,
        Err(fault) => !counter0 && fault.cpl == 0,
    };
    tally.result(
        "rdpmc_ring0",
        Verdict::from_check(ring0_ok),
        format_args!("ecx=0 counter0={} {}", u8::from(counter0), Outcome(ring0)),
    );
    println!(
        "rdpmc_ring0: rdpmc(0) in ring 0 {}{}",
        describe(&ring0),
        if counter0 {
            ""
        } else {
            " (no counter 0 exists)"
        }
    );

    // Ring 3, CR4.PCE clear: #GP(0), always.
    let pce_read = set_pce(false);
    let denied = traps::run_ring3(rdpmc_ring3, 0);
    let denied_ok = !pce_read
        && matches!(denied, Err(f) if f.vector == traps::GENERAL_PROTECTION && f.cpl == 3 && f.error_code == 0);
    tally.result(
        "rdpmc_ring3",
        Verdict::from_check(denied_ok),
        format_args!(
            "pce=0 cr4_pce={} ecx=0 {} expected=#GP",
            u8::from(pce_read),
            Outcome(denied)
        ),
    );
    println!(
        "rdpmc_ring3: CR4.PCE=0: rdpmc(0) in ring 3 {}",
        describe(&denied)
    );

    // Ring 3, CR4.PCE set: the privilege check passes.
    let pce_read = set_pce(true);
    let allowed = traps::run_ring3(rdpmc_ring3, 0);
    set_pce(false);
    let effect_seen = match (&denied, &allowed) {
        (Err(d), Err(a)) => d.vector != a.vector,
        (Err(_), Ok(_)) => true,
        _ => false,
    };
    let (verdict, expected) = match (counter0, allowed) {
        (true, Ok(_)) => (Verdict::Pass, "value"),
        (true, Err(_)) => (Verdict::Fail, "value"),
        (false, Err(f)) if f.cpl == 3 && effect_seen => (Verdict::Pass, "fault-other-than-pce0"),
        // Without counter 0 and with the same fault as with PCE clear (a real CPU without
        // a virtual PMU raises #GP for the missing counter): the bit's effect is hidden.
        (false, Err(f)) if f.cpl == 3 => (Verdict::Skipped, "fault-other-than-pce0"),
        (false, _) => (Verdict::Fail, "fault-other-than-pce0"),
    };
    let verdict = if pce_read { verdict } else { Verdict::Fail };
    tally.result(
        "rdpmc_ring3",
        verdict,
        format_args!(
            "pce=1 cr4_pce={} ecx=0 {} expected={expected} pce_effect={}",
            u8::from(pce_read),
            Outcome(allowed),
            if effect_seen {
                "observed"
            } else {
                "unobservable"
            }
        ),
    );
    println!(
        "rdpmc_ring3: CR4.PCE=1: rdpmc(0) in ring 3 {}{}",
        describe(&allowed),
        match (counter0, &allowed) {
            (false, Err(f)) if f.vector == traps::INVALID_OPCODE =>
                ": the PCE check passed, and the CPU (QEMU TCG) implements no counter",
            (false, Err(_)) if !effect_seen =>
                ": the same fault as with PCE clear: without counter 0 the bit's effect cannot be seen",
            _ => "",
        }
    );
}
