//! `el0-probe`: the arm64 guest's proof of what kmod-enable-user grants EL0.
//!
//! ```text
//! el0-probe read N      read PMEVCNTR<N>_EL0 (through PMSELR_EL0/PMXEVCNTR_EL0, which
//!                       PMUSERENR_EL0.ER allows) before and after 10000 instructions
//! el0-probe cycles      read PMCCNTR_EL0 (CR) before and after the same block
//! el0-probe write-pmcr  read PMCR_EL0 and write the same value back (needs EN)
//! el0-probe write-type N  read PMEVTYPER<N>_EL0 through PMXEVTYPER_EL0 and write it
//!                       back (needs EN)
//! ```
//!
//! Prints `before=… after=… delta=…` for reads and `ok` for writes, exit status 0. An
//! access PMUSERENR_EL0 does not grant traps to EL1 (EC 0x18) and Linux kills the
//! process with SIGILL: exit status 132 in the shell. Writing back the value just read
//! changes nothing a perf user could notice. Source: Arm ARM (DDI 0487), PMUSERENR_EL0,
//! PMSELR_EL0, PMXEVCNTR_EL0, PMXEVTYPER_EL0. Built by `cargo xtask` with rustc for
//! aarch64-unknown-linux-musl (static).

use std::arch::asm;

/// 10000 instructions at EL0: 5000 iterations of a two-instruction loop.
fn block() {
    // SAFETY: a register-only loop.
    unsafe {
        asm!("1: subs {n}, {n}, #1", "b.ne 1b", n = inout(reg) 5000u64 => _, options(nostack));
    }
}

fn select(n: u64) {
    // SAFETY: PMSELR_EL0 is writable at EL0 with ER or EN; without them this traps
    // (SIGILL), which is what the probe reports.
    unsafe { asm!("msr pmselr_el0, {n}", "isb", n = in(reg) n, options(nostack)) };
}

fn read_selected() -> u64 {
    let v: u64;
    // SAFETY: as above, PMXEVCNTR_EL0 reads the selected event counter.
    unsafe { asm!("mrs {v}, pmxevcntr_el0", v = out(reg) v, options(nostack)) };
    v
}

fn read_cycles() -> u64 {
    let v: u64;
    // SAFETY: PMCCNTR_EL0 is readable at EL0 with CR or EN; else SIGILL (reported).
    unsafe { asm!("mrs {v}, pmccntr_el0", v = out(reg) v, options(nostack)) };
    v
}

fn report(before: u64, after: u64) {
    println!("before={before} after={after} delta={}", after.wrapping_sub(before));
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n = args.get(2).and_then(|a| a.parse::<u64>().ok()).unwrap_or(0);
    match args.get(1).map(String::as_str) {
        Some("read") => {
            select(n);
            let before = read_selected();
            block();
            let after = read_selected();
            report(before, after);
        }
        Some("cycles") => {
            let before = read_cycles();
            block();
            let after = read_cycles();
            report(before, after);
        }
        Some("write-pmcr") => {
            let v: u64;
            // SAFETY: needs EN: without it the read traps (SIGILL, reported); with it
            // the same value is written back.
            unsafe {
                asm!("mrs {v}, pmcr_el0", v = out(reg) v, options(nostack));
                asm!("msr pmcr_el0, {v}", "isb", v = in(reg) v, options(nostack));
            }
            println!("ok");
        }
        Some("write-type") => {
            select(n);
            let v: u64;
            // SAFETY: as for write-pmcr, on PMEVTYPER<n>_EL0 through PMXEVTYPER_EL0.
            unsafe {
                asm!("mrs {v}, pmxevtyper_el0", v = out(reg) v, options(nostack));
                asm!("msr pmxevtyper_el0, {v}", "isb", v = in(reg) v, options(nostack));
            }
            println!("ok");
        }
        _ => {
            eprintln!("usage: el0-probe read N | cycles | write-pmcr | write-type N");
            std::process::exit(2);
        }
    }
}
