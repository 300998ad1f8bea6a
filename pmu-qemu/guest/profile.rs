//! `profile PERIOD OUT PROGRAM [ARGS…]`: pmu-qemu's in-guest sampler (aarch64 Linux,
//! std only, so that pmu-qemu can build it with `rustc` alone: pmu-qemu/src/profile.rs).
//!
//! It opens a sampling perf event on itself, disabled until the next `exec`
//! (`enable_on_exec`) and inherited by the tasks it starts (`inherit`): the cycle
//! counter at user level (`cycles:u`, `exclude_kernel`), which under QEMU's
//! `-icount shift=0` counts one per instruction, one sample every PERIOD of them, each sample the interrupted address and the user-level call chain
//! (`PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN`; Linux's arm64
//! `perf_callchain_user` walks frame records through x29). A second, software "dummy"
//! event records where the program's file is mapped (`PERF_RECORD_MMAP`), so that the
//! host can turn the addresses of a position-independent program into its ELF's. Both
//! write to one ring buffer (include/uapi/linux/perf_event.h, `perf_event_mmap_page`),
//! drained until the program ends, into OUT as text lines:
//!
//! ```text
//! pmu-qemu-profile 1
//! period N
//! map PID ADDR LEN PGOFF FILE      (hexadecimal numbers)
//! sample PID IP IP…                (the chain, innermost first; context markers kept)
//! lost N                           (samples the kernel could not write)
//! throttled N                      (times the kernel stopped the event for a tick)
//! end STATUS
//! ```
//!
//! Cycles rather than `instructions:u` (INST_RETIRED): QEMU 10.0 delivers the cycle
//! counter's overflow interrupt at the instruction it is due, but an event counter's
//! only at the next access to the PMU's registers (measured: `two` of
//! pmu-qemu/examples, 15 000 008 user-level instructions, gave 1500 samples at period
//! 10 000 with cycles and 5 with instructions).
//!
//! It exits with the program's status (128 + N after signal N, as `sh` reports it).

use std::ffi::{c_void, OsString};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitCode};
use std::sync::atomic::{fence, Ordering};

extern "C" {
    fn syscall(number: i64, ...) -> i64;
    fn ioctl(fd: i32, request: u64, ...) -> i32;
    fn mmap(addr: *mut c_void, len: usize, prot: i32, flags: i32, fd: i32, off: i64)
        -> *mut c_void;
    fn poll(fds: *mut PollFd, n: u64, timeout_ms: i32) -> i32;
    fn personality(persona: u64) -> i32;
    fn sysconf(name: i32) -> i64;
}

#[repr(C)]
struct PollFd {
    fd: i32,
    events: i16,
    revents: i16,
}

/// arch/arm64 (asm-generic/unistd.h) `__NR_perf_event_open`.
#[cfg(target_arch = "aarch64")]
const SYS_PERF_EVENT_OPEN: i64 = 241;
/// arch/x86/entry/syscalls/syscall_64.tbl `perf_event_open`.
#[cfg(target_arch = "x86_64")]
const SYS_PERF_EVENT_OPEN: i64 = 298;

const PERF_TYPE_HARDWARE: u64 = 0;
const PERF_TYPE_SOFTWARE: u64 = 1;
const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
const PERF_COUNT_SW_DUMMY: u64 = 9;
const PERF_SAMPLE_IP: u64 = 1 << 0;
const PERF_SAMPLE_TID: u64 = 1 << 1;
const PERF_SAMPLE_CALLCHAIN: u64 = 1 << 5;
// perf_event_attr's flag bits (word 5).
const DISABLED: u64 = 1 << 0;
const INHERIT: u64 = 1 << 1;
const EXCLUDE_KERNEL: u64 = 1 << 5;
const EXCLUDE_HV: u64 = 1 << 6;
const MMAP: u64 = 1 << 8;
const ENABLE_ON_EXEC: u64 = 1 << 12;
const WATERMARK: u64 = 1 << 14;
const EXCLUDE_CALLCHAIN_KERNEL: u64 = 1 << 21;
const PERF_RECORD_MMAP: u32 = 1;
const PERF_RECORD_LOST: u32 = 2;
const PERF_RECORD_THROTTLE: u32 = 5;
const PERF_RECORD_SAMPLE: u32 = 9;
/// `_IO('$', 5)`.
const PERF_EVENT_IOC_SET_OUTPUT: u64 = 0x2405;
/// linux/personality.h.
const ADDR_NO_RANDOMIZE: u64 = 0x0040000;
/// musl's `_SC_PAGESIZE`.
const SC_PAGESIZE: i32 = 30;
/// Data pages of the ring buffer (a power of two): 4 MiB of 4 KiB pages.
const DATA_PAGES: usize = 1024;

/// `perf_event_attr`, PERF_ATTR_SIZE_VER5 (112 bytes) as 14 words: type and size,
/// config, sample_period, sample_type, read_format, the flag bits, then
/// wakeup_watermark (low half of word 6), the rest zero.
fn attr(kind: u64, config: u64, period: u64, sample_type: u64, flags: u64, wake: u32) -> [u64; 14] {
    let mut a = [0u64; 14];
    a[0] = kind | (112 << 32);
    a[1] = config;
    a[2] = period;
    a[3] = sample_type;
    a[5] = flags;
    a[6] = u64::from(wake);
    a
}

fn open(a: &[u64; 14]) -> Result<OwnedFd, String> {
    // SAFETY: perf_event_open(attr, pid 0 = this task, cpu 0, group -1, flags 0) reads
    // `a`'s 112 bytes (its size field says so) and returns a new descriptor or -1.
    let fd = unsafe { syscall(SYS_PERF_EVENT_OPEN, a.as_ptr(), 0i32, 0i32, -1i32, 0u64) };
    if fd < 0 {
        return Err(format!(
            "perf_event_open: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: a descriptor the kernel just returned, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

struct Ring {
    base: *mut u8,
    page: usize,
    size: usize,
}

impl Ring {
    fn head(&self) -> u64 {
        // SAFETY: data_head is at byte 1024 of the first (metadata) page, mapped.
        let head = unsafe { std::ptr::read_volatile(self.base.add(1024) as *const u64) };
        // The kernel writes the records before data_head: read them after it
        // (perf_event.h: "an rmb() after reading data_head").
        fence(Ordering::Acquire);
        head
    }

    fn set_tail(&self, tail: u64) {
        // Our reads of the records finish before the kernel may overwrite them
        // (perf_event.h: "an mb() before writing data_tail").
        fence(Ordering::SeqCst);
        // SAFETY: data_tail is at byte 1032 of the metadata page, mapped writable.
        unsafe { std::ptr::write_volatile(self.base.add(1032) as *mut u64, tail) };
    }

    fn byte(&self, at: u64) -> u8 {
        let i = (at as usize) & (self.size - 1);
        // SAFETY: the data area is `size` bytes after the metadata page.
        unsafe { std::ptr::read_volatile(self.base.add(self.page + i)) }
    }

    fn bytes(&self, at: u64, n: usize) -> Vec<u8> {
        (0..n as u64).map(|k| self.byte(at + k)).collect()
    }
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .map_or(0, |s| u64::from_le_bytes(s.try_into().unwrap_or([0; 8])))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |s| u32::from_le_bytes(s.try_into().unwrap_or([0; 4])))
}

/// Records that mean samples are missing.
#[derive(Default)]
struct Missing {
    lost: u64,
    throttled: u64,
}

/// Writes the records between the tail and the head to `out`; the missing samples add
/// up.
fn drain(
    ring: &Ring,
    tail: &mut u64,
    missing: &mut Missing,
    out: &mut impl Write,
) -> std::io::Result<()> {
    let head = ring.head();
    while *tail + 8 <= head {
        let header = ring.bytes(*tail, 8);
        let kind = u32_at(&header, 0);
        let size = usize::from(u16::from_le_bytes([header[6], header[7]]));
        if size < 8 {
            break;
        }
        let body = ring.bytes(*tail + 8, size - 8);
        match kind {
            PERF_RECORD_SAMPLE => {
                let ip = u64_at(&body, 0);
                let pid = u32_at(&body, 8);
                let nr = u64_at(&body, 16) as usize;
                write!(out, "sample {pid} {ip:x}")?;
                for k in 0..nr.min((body.len().saturating_sub(24)) / 8) {
                    write!(out, " {:x}", u64_at(&body, 24 + 8 * k))?;
                }
                writeln!(out)?;
            }
            PERF_RECORD_MMAP => {
                let name = &body[32.min(body.len())..];
                let end = name.iter().position(|&c| c == 0).unwrap_or(name.len());
                writeln!(
                    out,
                    "map {} {:x} {:x} {:x} {}",
                    u32_at(&body, 0),
                    u64_at(&body, 8),
                    u64_at(&body, 16),
                    u64_at(&body, 24),
                    String::from_utf8_lossy(&name[..end])
                )?;
            }
            PERF_RECORD_LOST => missing.lost += u64_at(&body, 8),
            PERF_RECORD_THROTTLE => missing.throttled += 1,
            _ => {}
        }
        *tail += size as u64;
    }
    ring.set_tail(*tail);
    Ok(())
}

fn profile(args: &[OsString]) -> Result<u8, String> {
    let [period, out, program, rest @ ..] = args else {
        return Err("usage: profile PERIOD OUT PROGRAM [ARGS…]".into());
    };
    let period: u64 = period
        .to_str()
        .and_then(|p| p.parse().ok())
        .filter(|&p| p > 0)
        .ok_or_else(|| format!("the period must be a positive whole number, not {period:?}"))?;
    // The kernel keeps an event from sampling more often than
    // kernel.perf_event_max_sample_rate per second, and lowers that rate when its
    // interrupts take more than perf_cpu_time_max_percent of the time
    // (kernel/events/core.c __perf_event_account_interrupt, perf_sample_event_took):
    // under -icount, a nanosecond is an instruction, so a period of 10 000
    // instructions is 100 000 samples a second and would be throttled. The rate first
    // (the kernel refuses it once the limit is off), then the limit off. Were either
    // refused, the THROTTLE records say so and the host refuses the figures.
    let _ = std::fs::write("/proc/sys/kernel/perf_event_max_sample_rate", "1000000000");
    let _ = std::fs::write("/proc/sys/kernel/perf_cpu_time_max_percent", "0");
    // SAFETY: sysconf reads a constant.
    let page = usize::try_from(unsafe { sysconf(SC_PAGESIZE) }).map_err(|_| "sysconf")?;
    let size = DATA_PAGES * page;
    let wake = u32::try_from(size / 2).map_err(|_| "ring size")?;
    let samples = open(&attr(
        PERF_TYPE_HARDWARE,
        PERF_COUNT_HW_CPU_CYCLES,
        period,
        PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN,
        DISABLED
            | INHERIT
            | EXCLUDE_KERNEL
            | EXCLUDE_HV
            | ENABLE_ON_EXEC
            | WATERMARK
            | EXCLUDE_CALLCHAIN_KERNEL,
        wake,
    ))?;
    let maps = open(&attr(
        PERF_TYPE_SOFTWARE,
        PERF_COUNT_SW_DUMMY,
        0,
        PERF_SAMPLE_IP | PERF_SAMPLE_TID,
        INHERIT | EXCLUDE_KERNEL | EXCLUDE_HV | MMAP,
        0,
    ))?;
    // SAFETY: a shared mapping of the event's metadata page and data area, as
    // perf_event_open(2) describes; the kernel checks the length.
    let base = unsafe {
        mmap(
            std::ptr::null_mut(),
            page + size,
            3, // PROT_READ | PROT_WRITE: writable, so that data_tail tells the kernel
            1, // MAP_SHARED
            samples.as_raw_fd(),
            0,
        )
    };
    if base as isize == -1 {
        return Err(format!(
            "mmap of the ring buffer: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: both descriptors are perf events on this task and CPU 0.
    if unsafe {
        ioctl(
            maps.as_raw_fd(),
            PERF_EVENT_IOC_SET_OUTPUT,
            samples.as_raw_fd(),
        )
    } != 0
    {
        return Err(format!(
            "PERF_EVENT_IOC_SET_OUTPUT: {}",
            std::io::Error::last_os_error()
        ));
    }
    let ring = Ring {
        base: base.cast(),
        page,
        size,
    };
    let file = File::create(out).map_err(|e| format!("{}: {e}", out.to_string_lossy()))?;
    let mut out_file = BufWriter::new(file);
    writeln!(out_file, "pmu-qemu-profile 1\nperiod {period}").map_err(|e| e.to_string())?;
    let mut command = Command::new(program);
    command.args(rest);
    // SAFETY: personality() is async-signal-safe; the same load address every run.
    unsafe {
        command.pre_exec(|| {
            personality(ADDR_NO_RANDOMIZE);
            Ok(())
        })
    };
    let mut child = command
        .spawn()
        .map_err(|e| format!("{}: {e}", program.to_string_lossy()))?;
    let (mut tail, mut missing) = (0u64, Missing::default());
    let status = loop {
        drain(&ring, &mut tail, &mut missing, &mut out_file).map_err(|e| e.to_string())?;
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        let mut fd = PollFd {
            fd: samples.as_raw_fd(),
            events: 1,
            revents: 0,
        };
        // SAFETY: one live pollfd.
        unsafe { poll(&mut fd, 1, 10) };
    };
    drain(&ring, &mut tail, &mut missing, &mut out_file).map_err(|e| e.to_string())?;
    let code = match (status.code(), status.signal()) {
        (Some(c), _) => c as u8,
        (None, Some(s)) => 128u8.wrapping_add(s as u8),
        _ => 125,
    };
    writeln!(
        out_file,
        "lost {}\nthrottled {}\nend {code}",
        missing.lost, missing.throttled
    )
    .map_err(|e| e.to_string())?;
    out_file
        .into_inner()
        .map_err(|e| e.to_string())?
        .sync_all()
        .map_err(|e| e.to_string())?;
    Ok(code)
}

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    match profile(&args) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("pmu-qemu profile: {e}");
            ExitCode::from(125)
        }
    }
}
