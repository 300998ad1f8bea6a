//! `debian-block`: a block of user-space instructions whose count is known, for the runs
//! on Debian's own kernels (tests/guest/debian-arm64.sh), where the same block is
//! counted by Debian's `perf stat -e instructions:u` and by a direct counter read.
//!
//! ```text
//! debian-block ITERATIONS          ITERATIONS iterations of a two-instruction loop
//!                                  (`subs`, `b.ne`), nothing printed
//! debian-block ITERATIONS COUNTER  the same between two reads of PMEVCNTR<COUNTER>_EL0
//!                                  (PMSELR_EL0 + PMXEVCNTR_EL0, which PMUSERENR_EL0.ER
//!                                  allows at EL0): prints `before=… after=… delta=…`
//! debian-block ITERATIONS fork     forks: the child runs the block and exits, the
//!                                  parent runs it too and waits for the child
//! debian-block ITERATIONS threads  as `fork`, with a second thread that runs the block
//!                                  too (joined after the child is reaped)
//! ```
//!
//! The `fork` form is the command `pmu-demo stat` and `perf stat` count with a child:
//! inherited events count both processes, so the block is counted twice (three times
//! with `threads`).
//!
//! Both forms run the same instructions apart from the reads, so between two runs whose
//! ITERATIONS differ by D (and have as many digits: the argument parser then runs the
//! same instructions), every exact count of the whole program (perf) and every direct
//! delta differ by exactly 2·D: INST_RETIRED counts each architecturally executed
//! instruction once (Arm ARM DDI 0487, D13 "The Performance Monitors Extension", event
//! 0x08). A read that EL0 may not do traps (EC 0x18) and Linux sends SIGILL: exit
//! status 132 in the shell. Exit status 2: bad arguments. Built by `cargo xtask` with
//! rustc for aarch64-unknown-linux-musl (static).

use std::arch::asm;
use std::process::ExitCode;

/// `iterations` iterations of a two-instruction loop (at least one).
fn block(iterations: u64) {
    // SAFETY: a register-only loop; `max(1)` keeps the counter from wrapping past 0.
    unsafe {
        asm!(
            "1: subs {n}, {n}, #1",
            "b.ne 1b",
            n = inout(reg) iterations.max(1) => _,
            options(nostack),
        );
    }
}

/// PMEVCNTR<counter>_EL0 through the selector: what `pmu-linux`'s direct backend reads.
fn read(counter: u64) -> u64 {
    let value: u64;
    // SAFETY: PMSELR_EL0 and PMXEVCNTR_EL0 change no memory; without PMUSERENR_EL0.ER
    // (or EN) the access traps and the kernel ends the process with SIGILL. The ISB
    // makes the selector write visible to the following PMXEVCNTR_EL0 read (Arm ARM:
    // writes to System registers need a context synchronization event to be seen by
    // later System register reads).
    unsafe {
        asm!(
            "msr pmselr_el0, {c}",
            "isb",
            "mrs {v}, pmxevcntr_el0",
            c = in(reg) counter,
            v = out(reg) value,
            options(nostack),
        );
    }
    value
}

// The C library's calls (musl, linked statically): built by rustc alone, without the
// libc crate.
extern "C" {
    fn fork() -> i32;
    fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
    fn _exit(status: i32) -> !;
}

/// The block in a forked child and in this process, then the child reaped: exit status
/// 0 when the child exited 0, 1 otherwise.
fn forked(iterations: u64) -> ExitCode {
    // SAFETY: the child runs only the register loop and `_exit` (async-signal-safe,
    // whatever other threads this program has).
    let pid = unsafe { fork() };
    if pid == 0 {
        block(iterations);
        // SAFETY: ends the child at once, without the parent's buffered output.
        unsafe { _exit(0) };
    }
    block(iterations);
    if pid < 0 {
        return ExitCode::from(1);
    }
    let mut status = 0;
    // SAFETY: `status` is a valid int to write; `pid` is this process's child.
    let waited = unsafe { waitpid(pid, &mut status, 0) };
    // A normal exit with status 0 is the wait status 0 (Linux: the status in bits 8-15,
    // no signal in bits 0-6).
    if waited == pid && status == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parse = |s: &str| s.parse::<u64>().ok();
    match args.as_slice() {
        [n] => match parse(n) {
            Some(n) => {
                block(n);
                ExitCode::SUCCESS
            }
            None => ExitCode::from(2),
        },
        [n, fork] if fork == "fork" => match parse(n) {
            Some(n) => forked(n),
            None => ExitCode::from(2),
        },
        [n, threads] if threads == "threads" => match parse(n) {
            Some(n) => {
                let thread = std::thread::spawn(move || block(n));
                let forked = forked(n);
                match thread.join() {
                    Ok(()) => forked,
                    Err(_) => ExitCode::from(1),
                }
            }
            None => ExitCode::from(2),
        },
        [n, c] => match (parse(n), parse(c)) {
            (Some(n), Some(c)) if c < 31 => {
                let before = read(c);
                block(n);
                let after = read(c);
                // The counter may be 32 bits wide (PMUv3 before v3p5): the difference
                // modulo its width is printed by the caller's check, not here.
                println!(
                    "before={before} after={after} delta={}",
                    after.wrapping_sub(before)
                );
                ExitCode::SUCCESS
            }
            _ => ExitCode::from(2),
        },
        _ => {
            eprintln!("usage: debian-block ITERATIONS [COUNTER | fork | threads]");
            ExitCode::from(2)
        }
    }
}
