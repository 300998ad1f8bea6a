//! `el0-probe`: the arm64 guest's proof of what kmod-enable-user grants EL0.
//!
//! ```text
//! el0-probe read N      read PMEVCNTR<N>_EL0 (through PMSELR_EL0/PMXEVCNTR_EL0, which
//!                       PMUSERENR_EL0.ER allows) before and after 10000 instructions
//! el0-probe cycles      read PMCCNTR_EL0 (CR) before and after the same block
//! el0-probe write-pmcr  read PMCR_EL0 and write the same value back (needs EN)
//! el0-probe write-type N  read PMEVTYPER<N>_EL0 through PMXEVTYPER_EL0 and write it
//!                       back (needs EN)
//! el0-probe cpu-wide CPU N  count instructions on CPU (every level) with a CPU-wide
//!                       perf event, read it N times 1 ms apart: reads=… max_step=…
//! el0-probe perf-stat CPUS READS EVENTS  what `perf stat -a -e EVENTS` holds: one
//!                       CPU-wide perf event per event and CPU (CPUS `0,1`; EVENTS
//!                       `cycles`, `instructions`, `cycles:u`, `instructions:u`,
//!                       comma-separated), read READS times 1 ms apart; creates
//!                       /tmp/perf-stat.open once they are open, stops early when
//!                       /tmp/perf-stat.stop exists: reads=… max_step=… backwards=…
//!                       totals=…
//! el0-probe kernel-entry N ROUNDS  the module's kernel-entry sentinel on counter N
//!                       (`sentinel=1`): ROUNDS times, its difference across 10000 EL0
//!                       instructions (quiet) and across one getpid system call:
//!                       rounds=… quiet_flagged=… syscall_flagged=… min_syscall=…
//! ```
//!
//! `cpu-wide` is what a `perf stat -a` or the NMI watchdog looks like to the PMU: a
//! CPU-wide event stays on its counter across context switches, so anything that resets
//! the counters under it (PMCR_EL0.P) makes perf's next read jump by about 2^32 or 2^64
//! (drivers/perf/arm_pmu.c `armpmu_event_update`: the new raw value minus the previous
//! one, masked). `max_step` is the largest increase between two reads.
//!
//! Prints `before=… after=… delta=…` for reads and `ok` for writes, exit status 0. A
//! read takes the block [`BLOCKS`] times and `delta` is the smallest difference (the
//! counter's first and last values are `before` and `after`): under `-icount` QEMU's
//! instruction count is the whole machine's, so with several vCPUs one block can
//! include instructions another vCPU retired meanwhile (docs/qemu.md, "Several
//! vCPUs": a CPU-wide count read around 10000 EL0 instructions once gave 12184); the
//! smallest is the block's own. A counter that does not count reads 0 every time. An
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

/// How many times a read takes the block (see the module doc).
const BLOCKS: usize = 5;

/// The block [`BLOCKS`] times between reads of `read`: the first and last values and
/// the smallest difference.
fn report(mut read: impl FnMut() -> u64) {
    let first = read();
    let (mut last, mut delta) = (first, u64::MAX);
    for _ in 0..BLOCKS {
        let before = read();
        block();
        last = read();
        delta = delta.min(last.wrapping_sub(before));
    }
    println!("before={first} after={last} delta={delta}");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n = args.get(2).and_then(|a| a.parse::<u64>().ok()).unwrap_or(0);
    match args.get(1).map(String::as_str) {
        Some("read") => {
            select(n);
            report(read_selected);
        }
        Some("cycles") => report(read_cycles),
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
        Some("cpu-wide") => {
            let reads = args.get(3).and_then(|a| a.parse::<u32>().ok()).unwrap_or(1000);
            cpu_wide(n as i64, reads);
        }
        Some("perf-stat") => {
            let cpus = args.get(2).cloned().unwrap_or_default();
            let reads = args.get(3).and_then(|a| a.parse::<u32>().ok()).unwrap_or(1000);
            let events = args.get(4).cloned().unwrap_or_default();
            perf_stat(&cpus, reads, &events);
        }
        Some("kernel-entry") => {
            let rounds = args.get(3).and_then(|a| a.parse::<u32>().ok()).unwrap_or(1000);
            kernel_entry(n, rounds);
        }
        _ => {
            eprintln!("usage: el0-probe read N | cycles | write-pmcr | write-type N | cpu-wide CPU N | perf-stat CPUS READS EVENTS | kernel-entry N ROUNDS");
            std::process::exit(2);
        }
    }
}

/// perf_event_open(2), read(2) and getpid(2) on aarch64 (include/uapi/asm-generic/unistd.h).
const SYS_PERF_EVENT_OPEN: u64 = 241;
const SYS_READ: u64 = 63;
const SYS_GETPID: u64 = 172;

/// The selected counter after every earlier instruction has completed (`isb`: the
/// Arm ARM's Performance Monitors chapter leaves a counter read unordered otherwise),
/// as 32 bits (the read-only grant reads event counters as 32 bits).
fn read_selected_synchronized() -> u64 {
    // SAFETY: a barrier.
    unsafe { asm!("isb", options(nostack)) };
    read_selected() & 0xffff_ffff
}

/// The kernel-entry sentinel: counter `n` counts only at the kernel's level, so it
/// must stand still across EL0 code unless an interrupt came in, and move across every
/// system call.
fn kernel_entry(n: u64, rounds: u32) {
    select(n);
    let (mut quiet_flagged, mut syscall_flagged, mut min_syscall) = (0u32, 0u32, u64::MAX);
    for _ in 0..rounds {
        let before = read_selected_synchronized();
        block();
        let after = read_selected_synchronized();
        if after.wrapping_sub(before) & 0xffff_ffff != 0 {
            quiet_flagged += 1;
        }
        let before = read_selected_synchronized();
        syscall5(SYS_GETPID, [0; 5]);
        let after = read_selected_synchronized();
        let delta = after.wrapping_sub(before) & 0xffff_ffff;
        if delta != 0 {
            syscall_flagged += 1;
        }
        min_syscall = min_syscall.min(delta);
    }
    println!("rounds={rounds} quiet_flagged={quiet_flagged} syscall_flagged={syscall_flagged} min_syscall={min_syscall}");
}

fn syscall5(nr: u64, a: [u64; 5]) -> i64 {
    let ret: i64;
    // SAFETY: a Linux system call; the arguments are what the call expects (checked by
    // the callers), and the kernel clobbers nothing but x0.
    unsafe {
        asm!("svc #0", in("x8") nr, inlateout("x0") a[0] as i64 => ret, in("x1") a[1],
             in("x2") a[2], in("x3") a[3], in("x4") a[4], options(nostack));
    }
    ret
}

/// A CPU-wide, always-on INST_RETIRED counter on `cpu`, read `reads` times.
fn cpu_wide(cpu: i64, reads: u32) {
    // struct perf_event_attr, PERF_ATTR_SIZE_VER0 (64 bytes; include/uapi/linux/
    // perf_event.h): type PERF_TYPE_HARDWARE (0) at 0, size at 4, config
    // PERF_COUNT_HW_INSTRUCTIONS (1) at 8, flags at 40 all 0 (enabled, every level).
    let mut attr = [0u8; 64];
    attr[4..8].copy_from_slice(&64u32.to_ne_bytes());
    attr[8..16].copy_from_slice(&1u64.to_ne_bytes());
    let fd = syscall5(
        SYS_PERF_EVENT_OPEN,
        [attr.as_ptr() as u64, (-1i64) as u64, cpu as u64, (-1i64) as u64, 0],
    );
    if fd < 0 {
        eprintln!("perf_event_open: errno {}", -fd);
        std::process::exit(1);
    }
    let read = || {
        let mut value = 0u64;
        let n = syscall5(SYS_READ, [fd as u64, &mut value as *mut u64 as u64, 8, 0, 0]);
        if n != 8 {
            eprintln!("read: {n}");
            std::process::exit(1);
        }
        value
    };
    let mut last = read();
    let mut max_step = 0u64;
    let mut backwards = 0u32;
    for _ in 0..reads {
        std::thread::sleep(std::time::Duration::from_millis(1));
        let now = read();
        if now < last {
            backwards += 1;
        }
        max_step = max_step.max(now.wrapping_sub(last));
        last = now;
    }
    println!("reads={reads} max_step={max_step} backwards={backwards} total={last}");
}

/// `perf stat -a`'s events on `cpus`, read `reads` times (see the module doc).
///
/// perf_event_attr (PERF_ATTR_SIZE_VER0, include/uapi/linux/perf_event.h): type
/// PERF_TYPE_HARDWARE (0), config PERF_COUNT_HW_CPU_CYCLES (0) or
/// PERF_COUNT_HW_INSTRUCTIONS (1); the flags word at offset 40 has exclude_kernel
/// (bit 5) and exclude_hv (bit 6) for `:u`, what perf's tool sets for that modifier.
/// On arm64 perf places a cycles event on PMCCNTR_EL0 first
/// (drivers/perf/arm_pmuv3.c `armv8pmu_get_event_idx`).
fn perf_stat(cpus: &str, reads: u32, events: &str) {
    let mut fds = Vec::new();
    for cpu in cpus.split(',').filter_map(|c| c.parse::<i64>().ok()) {
        for event in events.split(',') {
            let (name, user) = match event.strip_suffix(":u") {
                Some(name) => (name, true),
                None => (event, false),
            };
            let config: u64 = match name {
                "cycles" => 0,
                "instructions" => 1,
                _ => {
                    eprintln!("perf-stat: unknown event {event}");
                    std::process::exit(2);
                }
            };
            let mut attr = [0u8; 64];
            attr[4..8].copy_from_slice(&64u32.to_ne_bytes());
            attr[8..16].copy_from_slice(&config.to_ne_bytes());
            let flags: u64 = if user { (1 << 5) | (1 << 6) } else { 0 };
            attr[40..48].copy_from_slice(&flags.to_ne_bytes());
            let fd = syscall5(
                SYS_PERF_EVENT_OPEN,
                [attr.as_ptr() as u64, (-1i64) as u64, cpu as u64, (-1i64) as u64, 0],
            );
            if fd < 0 {
                eprintln!("perf_event_open {event} cpu{cpu}: errno {}", -fd);
                std::process::exit(1);
            }
            fds.push(fd);
        }
    }
    let read = |fd: i64| {
        let mut value = 0u64;
        let n = syscall5(SYS_READ, [fd as u64, &mut value as *mut u64 as u64, 8, 0, 0]);
        if n != 8 {
            eprintln!("read: {n}");
            std::process::exit(1);
        }
        value
    };
    let mut last: Vec<u64> = fds.iter().map(|&fd| read(fd)).collect();
    if std::fs::write("/tmp/perf-stat.open", b"1").is_err() {
        eprintln!("perf-stat: cannot create /tmp/perf-stat.open");
        std::process::exit(1);
    }
    let (mut max_step, mut backwards, mut done) = (0u64, 0u32, 0u32);
    while done < reads && std::fs::metadata("/tmp/perf-stat.stop").is_err() {
        std::thread::sleep(std::time::Duration::from_millis(1));
        for (fd, last) in fds.iter().zip(last.iter_mut()) {
            let now = read(*fd);
            if now < *last {
                backwards += 1;
            }
            max_step = max_step.max(now.wrapping_sub(*last));
            *last = now;
        }
        done += 1;
    }
    let totals: Vec<String> = last.iter().map(u64::to_string).collect();
    println!(
        "reads={done} max_step={max_step} backwards={backwards} totals={}",
        totals.join(",")
    );
}
