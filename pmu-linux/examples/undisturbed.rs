//! Whether a kernel entry or a context switch inside a region changes a thread's
//! user-level count, shown with loops whose instructions are known.
//!
//! `undisturbed [K]` measures, with one [`pmu_linux::Meter`] of `instructions` and
//! `cpu-cycles`, regions of 0, K and 2 K iterations of four loops (aarch64; each
//! iteration four instructions, by construction of its `asm!` block):
//!
//! | loop | one iteration | what enters the kernel |
//! |---|---|---|
//! | `plain` | `add`, `add`, `subs`, `b.ne` | nothing (ticks aside) |
//! | `getpid` | `mov x8, #172`, `svc #0`, `subs`, `b.ne` | a system call per iteration |
//! | `faults` | `ldrb` from a page never touched, `add` 4096, `subs`, `b.ne` | a page fault per iteration |
//! | `yield` | `mov x8, #124`, `svc #0`, `subs`, `b.ne`, with a second thread spinning | `sched_yield`: a context switch per iteration on one CPU |
//!
//! and prints one line per loop and event:
//!
//! ```text
//! RESULT <loop> <event> k=<K> r0=<count> rk=<count> r2k=<count> hazards=<the 2K region's> value=<its Counts::value, or the refusal> switches=<its getrusage switches> kernel=<its kernel-entry sentinel count> exact=<Evidence::exact_emulation>
//! ```
//!
//! A count the kernel's work does not disturb has `rk - r0 == 4 K` and
//! `r2k - rk == 4 K` exactly, whatever the hazards. `cargo xtask pmu-qemu` runs it
//! under pmu-qemu and checks that.

use std::process::ExitCode;
#[cfg(target_arch = "aarch64")]
use std::sync::atomic::{AtomicBool, Ordering};

/// `__NR_getpid` and `__NR_sched_yield` on arm64 (include/uapi/asm-generic/unistd.h).
#[cfg(target_arch = "aarch64")]
const NR_GETPID: u64 = 172;
#[cfg(target_arch = "aarch64")]
const NR_SCHED_YIELD: u64 = 124;

#[cfg(target_arch = "aarch64")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loop {
    Plain,
    Getpid,
    Faults,
    Yield,
}

#[cfg(target_arch = "aarch64")]
impl Loop {
    const ALL: [Self; 4] = [Self::Plain, Self::Getpid, Self::Faults, Self::Yield];

    fn name(self) -> &'static str {
        match self {
            Self::Plain => "plain",
            Self::Getpid => "getpid",
            Self::Faults => "faults",
            Self::Yield => "yield",
        }
    }
}

/// `k` iterations of `which`; `pages` is the first of at least `k` fresh pages for
/// `faults`.
#[cfg(target_arch = "aarch64")]
#[inline(never)]
fn run(which: Loop, k: u64, pages: *const u8) {
    if k == 0 {
        return;
    }
    match which {
        // SAFETY: register arithmetic and a branch; no memory, no stack.
        Loop::Plain => unsafe {
            core::arch::asm!("2:", "add {t}, {t}, #1", "add {t}, {t}, #1", "subs {n}, {n}, #1", "b.ne 2b",
                n = inout(reg) k => _, t = out(reg) _, options(nomem, nostack))
        },
        // SAFETY: getpid takes no argument and touches no user memory; x0 (its result)
        // and x8 are declared clobbered.
        Loop::Getpid => unsafe {
            core::arch::asm!("2:", "mov x8, #{nr}", "svc #0", "subs {n}, {n}, #1", "b.ne 2b",
                nr = const NR_GETPID, n = inout(reg) k => _, out("x0") _, out("x8") _,
                options(nostack))
        },
        // SAFETY: `pages` points at `k` mapped, readable pages (the caller's
        // mapping), each read once; the byte read is discarded.
        Loop::Faults => unsafe {
            core::arch::asm!("2:", "ldrb {b:w}, [{p}]", "add {p}, {p}, #4096", "subs {n}, {n}, #1", "b.ne 2b",
                n = inout(reg) k => _, p = inout(reg) pages => _, b = out(reg) _,
                options(nostack, readonly))
        },
        // SAFETY: sched_yield takes no argument and touches no user memory; x0 and x8
        // are declared clobbered.
        Loop::Yield => unsafe {
            core::arch::asm!("2:", "mov x8, #{nr}", "svc #0", "subs {n}, {n}, #1", "b.ne 2b",
                nr = const NR_SCHED_YIELD, n = inout(reg) k => _, out("x0") _, out("x8") _,
                options(nostack))
        },
    }
}

/// `k` fresh anonymous pages, never touched (each first read faults).
#[cfg(target_arch = "aarch64")]
fn fresh_pages(k: u64) -> Result<*const u8, String> {
    let len = usize::try_from(k.max(1) * 4096).map_err(|e| e.to_string())?;
    // SAFETY: an anonymous private mapping at an address of the kernel's choice; the
    // result is checked against MAP_FAILED. The mapping is leaked: the process is short.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(format!(
            "mmap of {len} bytes: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(p.cast())
}

#[cfg(target_arch = "aarch64")]
fn measure(k: u64) -> Result<(), String> {
    use pmu_linux::GenericEvent;
    let mut builder = pmu_linux::Meter::builder();
    let events = [
        ("instructions", builder.add(GenericEvent::Instructions)),
        ("cpu-cycles", builder.add(GenericEvent::CpuCycles)),
    ];
    let mut meter = builder.build().map_err(|e| e.to_string())?;
    eprintln!("backend: {} ({})", meter.backend(), meter.why());
    eprintln!("{}", meter.sentinel());
    static SPIN: AtomicBool = AtomicBool::new(false);
    static STOP: AtomicBool = AtomicBool::new(false);
    let spinner = std::thread::spawn(|| {
        while !STOP.load(Ordering::Relaxed) {
            if !SPIN.load(Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            std::hint::spin_loop();
        }
    });
    for which in Loop::ALL {
        SPIN.store(which == Loop::Yield, Ordering::Relaxed);
        let mut counts = [[0u64; 3]; 2];
        let mut last = Vec::new();
        if which == Loop::Yield {
            // Let the spinner wake from its sleep and run.
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        for (slot, size) in [0, k, 2 * k].into_iter().enumerate() {
            let pages = fresh_pages(size)?;
            let region = meter.start().map_err(|e| e.to_string())?;
            run(which, size, pages);
            let got = meter.stop(region).map_err(|e| e.to_string())?;
            last.clear();
            for (i, (_, handle)) in events.iter().enumerate() {
                let reading = got.reading(*handle).map_err(|e| e.to_string())?;
                counts[i][slot] = reading.value;
                last.push((reading, got.value(*handle).map_err(|e| e.to_string())));
            }
        }
        // What happened in the 2K region, whatever the hazards say.
        let evidence = meter.evidence();
        let switches = evidence.switches.map_or(0, |s| s.total());
        let kernel = evidence.kernel_entries.unwrap_or(0);
        let exact = evidence.exact_emulation;
        for (i, (name, _)) in events.iter().enumerate() {
            let [r0, rk, r2k] = counts[i];
            let (reading, value) = &last[i];
            let value = match value {
                Ok(v) => v.to_string(),
                Err(e) => format!("refused ({e})"),
            };
            println!(
                "RESULT {} {name} k={k} r0={r0} rk={rk} r2k={r2k} hazards={} value={value} switches={switches} kernel={kernel} exact={exact}",
                which.name(),
                reading.hazards,
            );
        }
    }
    STOP.store(true, Ordering::Relaxed);
    spinner
        .join()
        .map_err(|_| "the spinning thread panicked".to_owned())?;
    Ok(())
}

#[cfg(not(target_arch = "aarch64"))]
fn measure(_k: u64) -> Result<(), String> {
    Err("the loops are written for aarch64".into())
}

fn main() -> ExitCode {
    let k = match std::env::args().nth(1).map(|a| a.parse::<u64>()) {
        None => 1000,
        Some(Ok(n)) if n >= 1 => n,
        Some(_) => {
            eprintln!("undisturbed: K is a whole number of at least 1");
            return ExitCode::from(2);
        }
    };
    match measure(k) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("undisturbed: {e}");
            ExitCode::FAILURE
        }
    }
}
