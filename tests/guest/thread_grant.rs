//! `thread-grant`: the per-thread grant of the stock kmod-enable-user (/dev/kmod_enable_user,
//! kmod-enable-user/stock/kmod_enable_user_uapi.h) seen from user space, for the runs on
//! Debian's arm64 kernels (tests/guest/debian-arm64.sh, asserted by
//! tests/tests/debian_arm64.rs). Raw ioctls, `mrs` reads of `PMEVCNTR<COUNTER>_EL0`
//! (PMSELR_EL0 + PMXEVCNTR_EL0, which PMUSERENR_EL0.ER allows at EL0), and a SIGILL
//! handler that records a trapped read and skips the instruction (an EL0 PMU access
//! PMUSERENR_EL0 does not allow traps with EC 0x18, Arm ARM D13; Linux sends SIGILL), so
//! nothing is killed. Prints `RESULT thread-<what> key=value …` lines.
//!
//! ```text
//! thread-grant access GID          open as a non-member (uid/gid 1001), as a member of
//!                                  GID (uid 1001, supplementary group GID), as root
//! thread-grant exact C ITER        granted: the block of ITER two-instruction iterations
//!                                  between two reads; after close the thread traps
//! thread-grant trap C              while the granted thread reads on CPU 0, a sibling
//!                                  thread and a child process read on CPU 1 (trap)
//! thread-grant bad C               bad input: a clear errno each, nothing changed
//! thread-grant pingpong C ITER R   two granted threads on CPU 0 hand a byte back and forth
//!                                  R times, ITER iterations each turn
//! thread-grant migrate C ITER R    a granted thread's region of R turns, moved from CPU 0
//!                                  to CPU 1 after the first by the main thread
//! thread-grant regrant C           perf clears PMUSERENR_EL0 under the granted thread:
//!                                  it traps, REGRANT, it reads again, count intact
//! thread-grant cycles N            N open/GRANT/close cycles
//! thread-grant gap C ITER         with `cpus=0`: a granted thread reads on CPU 0, runs
//!                                  ITER iterations on CPU 1 (no module counters), comes
//!                                  back: its read traps, REGRANT says the counts were lost
//! thread-grant ends N C            N grants, each by a new thread or process, ended the
//!                                  three ways other than the thread's own close, in turn
//! thread-grant rmmod C             rmmod with the file open (refused), close, rmmod
//! thread-grant bench C ITER R granted|plain
//!                                  the ping-pong, both threads granted or neither (for
//!                                  `perf stat -e instructions:k,context-switches`)
//! ```
//!
//! The exact region (`region`): one `asm!` block, so every EL0 instruction in it is
//! known: between its two counter reads it retires 3 + R·(13 + 2·ITER) instructions
//! (listed at `region`), plus QEMU's constant for the read itself, which the program
//! measures with the same block on one thread whose pipe writes never block
//! (`known=`). Built by `cargo xtask` with rustc for aarch64-unknown-linux-musl
//! (static).

use std::arch::asm;
use std::cell::Cell;
use std::ffi::c_void;
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;

const DEVICE: &[u8] = b"/dev/kmod_enable_user\0";
/// _IOWR(0xB9, 0x00, struct kmod_eu_grant) and _IO(0xB9, 0x01): kmod_enable_user_uapi.h.
const IOC_GRANT: u64 = (3 << 30) | (24 << 16) | (0xB9 << 8);
const IOC_REGRANT: u64 = 0xB9 << 8 | 1;
/// A number the module does not define, and GRANT's number with another size.
const IOC_UNKNOWN: u64 = 0xB9 << 8 | 0x0F;
const IOC_GRANT_16: u64 = (3 << 30) | (16 << 16) | (0xB9 << 8);
/// KMOD_EU_GRANTED_FOLLOW.
const GRANTED_FOLLOW: u32 = 1;

const O_RDWR: i32 = 2;
const SIGILL: i32 = 4;
const SA_SIGINFO: i32 = 4;
/// The program counter in the arm64 `struct ucontext` (arch/arm64/include/uapi/asm/
/// ucontext.h and sigcontext.h): uc_flags 8, uc_link 8, uc_stack 24, uc_sigmask with
/// its padding to 128, then uc_mcontext (16-aligned, at 176): fault_address, regs[31],
/// sp, pc.
const UCONTEXT_PC: usize = 176 + 8 + 31 * 8 + 8;

#[repr(C)]
struct KmodEuGrant {
    size: u32,
    flags: u32,
    counters: u64,
    granted: u32,
    reserved: u32,
}

#[repr(C)]
struct SigAction {
    handler: usize,
    mask: [u64; 16],
    flags: i32,
    restorer: usize,
}

extern "C" {
    fn open(path: *const u8, flags: i32, ...) -> i32;
    fn close(fd: i32) -> i32;
    fn ioctl(fd: i32, request: u64, ...) -> i32;
    fn fork() -> i32;
    fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
    fn _exit(code: i32) -> !;
    fn setgid(gid: u32) -> i32;
    fn setuid(uid: u32) -> i32;
    fn setgroups(n: usize, groups: *const u32) -> i32;
    fn sigaction(sig: i32, act: *const SigAction, old: *mut SigAction) -> i32;
    fn pipe(fds: *mut i32) -> i32;
    fn sched_setaffinity(pid: i32, size: usize, mask: *const u64) -> i32;
    fn sched_getcpu() -> i32;
    fn gettid() -> i32;
}

thread_local! {
    static TRAPS: Cell<u64> = const { Cell::new(0) };
}

extern "C" fn on_sigill(_sig: i32, _info: *mut c_void, context: *mut c_void) {
    TRAPS.with(|t| t.set(t.get() + 1));
    // SAFETY: the kernel passes the interrupted context; its pc is the trapped PMU
    // access, a 4-byte A64 instruction: resume after it.
    unsafe {
        let pc = context.cast::<u8>().add(UCONTEXT_PC).cast::<u64>();
        *pc += 4;
    }
}

fn install_handler() {
    let action = SigAction {
        handler: on_sigill as *const () as usize,
        mask: [0; 16],
        flags: SA_SIGINFO,
        restorer: 0,
    };
    // SAFETY: a valid action; the handler only touches a thread-local counter and the
    // context the kernel hands it.
    unsafe { sigaction(SIGILL, &action, std::ptr::null_mut()) };
}

fn traps() -> u64 {
    TRAPS.with(Cell::get)
}

/// One read of event counter `counter`; `None` when it trapped.
fn read(counter: u64) -> Option<u64> {
    let before = traps();
    let value: u64;
    // SAFETY: PMU reads at EL0; one that PMUSERENR_EL0 does not allow traps, and the
    // handler skips it (then `value` is whatever the register held: not used).
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
    (traps() == before).then_some(value)
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn open_device() -> Result<i32, i32> {
    // SAFETY: a NUL-terminated path.
    let fd = unsafe { open(DEVICE.as_ptr(), O_RDWR) };
    if fd < 0 {
        Err(errno())
    } else {
        Ok(fd)
    }
}

/// GRANT with these fields; Ok(the struct as the module filled it) or the errno.
fn grant_raw(
    fd: i32,
    request: u64,
    size: u32,
    flags: u32,
    counters: u64,
) -> Result<KmodEuGrant, i32> {
    let mut g = KmodEuGrant {
        size,
        flags,
        counters,
        granted: 0,
        reserved: 0,
    };
    // SAFETY: `g` is 24 bytes, what the number says (or fewer for IOC_GRANT_16).
    let rc = unsafe { ioctl(fd, request, &mut g as *mut KmodEuGrant) };
    if rc < 0 {
        Err(errno())
    } else {
        Ok(g)
    }
}

fn grant(fd: i32) -> Result<KmodEuGrant, i32> {
    grant_raw(fd, IOC_GRANT, 24, 0, 0)
}

fn regrant(fd: i32) -> i32 {
    // SAFETY: REGRANT takes no argument.
    let rc = unsafe { ioctl(fd, IOC_REGRANT) };
    if rc < 0 {
        errno()
    } else {
        0
    }
}

fn pin(cpu: u32) {
    let mask: u64 = 1 << cpu;
    // SAFETY: one 64-bit mask word.
    unsafe { sched_setaffinity(0, 8, &mask) };
}

fn cpu() -> i32 {
    // SAFETY: no arguments.
    unsafe { sched_getcpu() }
}

/// Runs `f` in a forked child; its exit code.
fn in_child(f: impl FnOnce() -> i32) -> i32 {
    // SAFETY: the child only makes system calls and reads a counter before `_exit`.
    let pid = unsafe { fork() };
    if pid < 0 {
        // No child ran: not an exit code any child gives.
        return 255;
    }
    if pid == 0 {
        let code = f();
        // SAFETY: leaves the child without running the parent's destructors.
        unsafe { _exit(code) }
    }
    let mut status = 0;
    // SAFETY: our own child.
    unsafe { waitpid(pid, &mut status, 0) };
    if status & 0x7f == 0 {
        (status >> 8) & 0xff
    } else {
        128 + (status & 0x7f)
    }
}

fn counter_arg(args: &[String], i: usize) -> u64 {
    args.get(i).and_then(|s| s.parse().ok()).unwrap_or(u64::MAX)
}

/// (a) Who may open: exit code = errno of open (0: opened).
fn access(gid: u32) {
    let as_user = |groups: &[u32]| {
        in_child(|| {
            // SAFETY: plain credential system calls in the single-threaded child.
            unsafe {
                if setgroups(groups.len(), groups.as_ptr()) != 0
                    || setgid(1001) != 0
                    || setuid(1001) != 0
                {
                    return 99;
                }
            }
            match open_device() {
                Ok(_) => 0,
                Err(e) => e,
            }
        })
    };
    let nonmember = as_user(&[]);
    let member = as_user(&[gid]);
    let root = match open_device() {
        Ok(fd) => {
            // SAFETY: our fd.
            unsafe { close(fd) };
            0
        }
        Err(e) => e,
    };
    println!("RESULT thread-open group={gid} nonmember_errno={nonmember} member_errno={member} root_errno={root}");
}

/// (b) and (d): a granted thread reads the block exactly (CPU 1 offline: under icount
/// QEMU's INST_RETIRED is the count of every vCPU, docs/qemu.md); after close it traps.
fn exact(counter: u64, iterations: u64) {
    pin(0);
    let before_grant = read(counter).is_some();
    let fd = open_device().unwrap_or(-1);
    let g = grant(fd);
    let (granted_counters, follow) = match &g {
        Ok(g) => (g.counters, g.granted & GRANTED_FOLLOW != 0),
        Err(_) => (0, false),
    };
    let (delta, _) = block_between_reads(counter, iterations);
    // SAFETY: our fd.
    unsafe { close(fd) };
    let after_close = read(counter).is_some();
    println!(
        "RESULT thread-exact counter={counter} iterations={iterations} read_before_grant={} grant_errno={} counters=0x{granted_counters:x} follow={} delta={} read_after_close={}",
        u8::from(before_grant),
        g.as_ref().err().copied().unwrap_or(0),
        u8::from(follow),
        delta.map_or("trapped".to_string(), |d| d.to_string()),
        u8::from(after_close),
    );
}

/// Reads on this thread until `done`: (reads, traps).
fn spin(counter: u64, mut done: impl FnMut() -> bool) -> (u64, u64) {
    let (mut reads, mut trapped) = (0, 0);
    while !done() {
        match read(counter) {
            Some(_) => reads += 1,
            None => trapped += 1,
        }
    }
    (reads, trapped)
}

/// (c) and (d): while the granted thread runs on CPU 0 (reading in a loop), a sibling
/// thread and a child process read on CPU 1: both trap; after close the thread traps.
fn trap(counter: u64) {
    pin(0);
    let fd = open_device().unwrap_or(-1);
    let granted = grant(fd).is_ok();
    let done = Arc::new(AtomicBool::new(false));
    let sibling = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            pin(1);
            std::thread::sleep(std::time::Duration::from_millis(5));
            let trapped = read(counter).is_none();
            let on = cpu();
            done.store(true, Ordering::SeqCst);
            (trapped, on)
        })
    };
    let (reads_a, traps_a) = spin(counter, || done.load(Ordering::SeqCst));
    let (sibling_trapped, sibling_cpu) = sibling.join().unwrap_or((false, -1));
    // SAFETY: the child only pins itself, sleeps, reads and leaves with `_exit`.
    let pid = unsafe { fork() };
    if pid == 0 {
        pin(1);
        std::thread::sleep(std::time::Duration::from_millis(5));
        let code = if read(counter).is_none() { 0 } else { 1 };
        // SAFETY: the child's end.
        unsafe { _exit(code) }
    }
    let mut status = 0;
    // SAFETY: our child; WNOHANG = 1.
    let (reads_b, traps_b) = spin(counter, || unsafe { waitpid(pid, &mut status, 1) } == pid);
    let child_trapped = status == 0;
    // SAFETY: our fd.
    unsafe { close(fd) };
    let after_close = read(counter).is_some();
    println!(
        "RESULT thread-trap granted={} sibling_trapped={} sibling_cpu={sibling_cpu} child_trapped={} granted_reads={} granted_traps={} read_after_close={}",
        u8::from(granted),
        u8::from(sibling_trapped),
        u8::from(child_trapped),
        reads_a + reads_b,
        traps_a + traps_b,
        u8::from(after_close)
    );
}

/// A granted thread on CPU 0 waits in its region for the main thread, which moves it
/// to CPU 1 meanwhile: R turns, the first on CPU 0, the others on CPU 1. While it runs
/// at EL0 the other CPU has nothing to run (the main thread waits for its byte).
fn migrate(counter: u64, iterations: u64, rounds: u64) {
    pin(0);
    let known = known(counter, iterations, rounds);
    let (a_read, main_write) = new_pipe();
    let (main_read, a_write) = new_pipe();
    let tid = Arc::new(AtomicI32::new(0));
    let a = {
        let tid = Arc::clone(&tid);
        std::thread::spawn(move || {
            pin(0);
            let fd = open_device().unwrap_or(-1);
            let follow = grant(fd)
                .map(|g| g.granted & GRANTED_FOLLOW != 0)
                .unwrap_or(false);
            // SAFETY: no arguments.
            tid.store(unsafe { gettid() }, Ordering::SeqCst);
            let start = cpu();
            let delta = region(counter, iterations, rounds, a_write, a_read);
            let end = cpu();
            // SAFETY: our fd.
            unsafe { close(fd) };
            (delta, follow, start, end)
        })
    };
    pin(1);
    let mut byte = 0u8;
    for turn in 0..rounds {
        // SAFETY: one byte from A, one byte back.
        unsafe {
            read_fd(main_read, &mut byte);
        }
        if turn == 0 {
            let mask: u64 = 1 << 1;
            // SAFETY: one mask word, A's thread id (A waits in read(2) now).
            unsafe { sched_setaffinity(tid.load(Ordering::SeqCst), 8, &mask) };
        }
        // SAFETY: as above.
        unsafe {
            write_fd(main_write, &byte);
        }
    }
    let (delta, follow, start, end) = a.join().unwrap_or((None, false, -1, -1));
    let show = |d: Option<u64>| d.map_or("trapped".to_string(), |d| d.to_string());
    println!(
        "RESULT thread-migrate counter={counter} iterations={iterations} rounds={rounds} formula={} known={} delta={} follow={} cpus={start}-{end}",
        3 + rounds * (13 + 2 * iterations),
        show(known),
        show(delta),
        u8::from(follow)
    );
}

extern "C" {
    #[link_name = "read"]
    fn sys_read(fd: i32, buf: *mut u8, n: usize) -> isize;
    #[link_name = "write"]
    fn sys_write(fd: i32, buf: *const u8, n: usize) -> isize;
}

/// # Safety
/// `fd` is open for reading.
unsafe fn read_fd(fd: i32, byte: &mut u8) {
    // SAFETY: the caller's fd; one byte of room.
    unsafe { sys_read(fd, byte, 1) };
}

/// # Safety
/// `fd` is open for writing.
unsafe fn write_fd(fd: i32, byte: &u8) {
    // SAFETY: the caller's fd; one byte.
    unsafe { sys_write(fd, byte, 1) };
}

/// debian-block's block between two reads (the same loop as tests/guest/debian_block.rs):
/// the delta, or None when a read trapped.
fn block_between_reads(counter: u64, iterations: u64) -> (Option<u64>, u64) {
    let before: u64;
    let after: u64;
    let t0 = traps();
    // SAFETY: PMU reads at EL0 (a trap is skipped by the handler) around a
    // register-only loop.
    unsafe {
        asm!(
            "msr pmselr_el0, {c}",
            "isb",
            "mrs {b}, pmxevcntr_el0",
            "1: subs {n}, {n}, #1",
            "b.ne 1b",
            "mrs {a}, pmxevcntr_el0",
            c = in(reg) counter,
            b = out(reg) before,
            a = out(reg) after,
            n = inout(reg) iterations.max(1) => _,
            options(nostack),
        );
    }
    let trapped = traps() - t0;
    ((trapped == 0).then(|| after.wrapping_sub(before)), trapped)
}

/// The exact region: R turns of [ITER iterations, write one byte to `wfd`, read one
/// byte from `rfd`] between two reads of `counter`, in one asm block. Between the reads
/// it retires `mov` (1) + R·(`mov` 1 + 2·ITER + write 5 + read 5 + `subs; b.ne` 2) +
/// `msr; isb` (2) = 3 + R·(13 + 2·ITER) instructions. The delta, or None on a trap.
fn region(counter: u64, iterations: u64, rounds: u64, wfd: i32, rfd: i32) -> Option<u64> {
    let mut byte = 0u8;
    let before: u64;
    let after: u64;
    let t0 = traps();
    // SAFETY: PMU reads at EL0 (a trap is skipped by the handler), a register loop, and
    // write(2)/read(2) of one byte on the caller's pipe ends through `svc` (x8 = the
    // arm64 syscall number: 64 write, 63 read, include/uapi/asm-generic/unistd.h).
    unsafe {
        asm!(
            "msr pmselr_el0, {c}",
            "isb",
            "mrs {b}, pmxevcntr_el0",
            "mov {r}, {rounds}",
            "2: mov {n}, {iter}",
            "3: subs {n}, {n}, #1",
            "b.ne 3b",
            "mov x0, {wfd}",
            "mov x1, {buf}",
            "mov x2, #1",
            "mov x8, #64",
            "svc #0",
            "mov x0, {rfd}",
            "mov x1, {buf}",
            "mov x2, #1",
            "mov x8, #63",
            "svc #0",
            "subs {r}, {r}, #1",
            "b.ne 2b",
            "msr pmselr_el0, {c}",
            "isb",
            "mrs {a}, pmxevcntr_el0",
            c = in(reg) counter,
            rounds = in(reg) rounds.max(1),
            iter = in(reg) iterations.max(1),
            wfd = in(reg) i64::from(wfd),
            rfd = in(reg) i64::from(rfd),
            buf = in(reg) &mut byte as *mut u8,
            b = out(reg) before,
            a = out(reg) after,
            r = out(reg) _,
            n = out(reg) _,
            out("x0") _,
            out("x1") _,
            out("x2") _,
            out("x8") _,
            options(nostack),
        );
    }
    (traps() == t0).then(|| after.wrapping_sub(before))
}

fn new_pipe() -> (i32, i32) {
    let mut fds = [0i32; 2];
    // SAFETY: two ints.
    unsafe { pipe(fds.as_mut_ptr()) };
    (fds[0], fds[1])
}

/// The region's count with no other thread in it: one granted thread, writing to a
/// pipe it reads back (never blocks).
fn known(counter: u64, iterations: u64, rounds: u64) -> Option<u64> {
    let fd = open_device().ok()?;
    grant(fd).ok()?;
    let (r, w) = new_pipe();
    let d = region(counter, iterations, rounds, w, r);
    // SAFETY: our fds.
    unsafe {
        close(r);
        close(w);
        close(fd);
    }
    d
}

/// (e) Two threads hand a byte back and forth on CPU 0 (CPU 1 offline), both granted
/// (`granted`) or neither (the bench's baseline). Each opens the device either way; the
/// bench (`bench`) skips the single-thread reference run.
fn pingpong(counter: u64, iterations: u64, rounds: u64, granted: bool, bench: bool) {
    pin(0);
    let known = if granted && !bench {
        known(counter, iterations, rounds)
    } else {
        None
    };
    let formula = 3 + rounds * (13 + 2 * iterations);
    let (a_read, b_write) = new_pipe();
    let (b_read, a_write) = new_pipe();
    // Strict turns: B first waits for A's byte (outside its region), so each thread
    // blocks in every read(2) and every turn is one context switch each way; the main
    // thread's byte after A's last turn lets B's last read return.
    let player = move |rfd: i32, wfd: i32, first_waits: bool| {
        move || {
            pin(0);
            let fd = open_device().unwrap_or(-1);
            let follow = if granted {
                grant(fd)
                    .map(|g| g.granted & GRANTED_FOLLOW != 0)
                    .unwrap_or(false)
            } else {
                false
            };
            if first_waits {
                let mut byte = 0u8;
                // SAFETY: our pipe's read end.
                unsafe { read_fd(rfd, &mut byte) };
            }
            let delta = region(counter, iterations, rounds, wfd, rfd);
            // SAFETY: our fd.
            unsafe { close(fd) };
            (delta, follow)
        }
    };
    let b = std::thread::spawn(player(b_read, b_write, true));
    let a = std::thread::spawn(player(a_read, a_write, false));
    let ra = a.join().unwrap_or((None, false));
    // SAFETY: the pipe B reads from.
    unsafe { write_fd(a_write, &0) };
    let rb = b.join().unwrap_or((None, false));
    let show = |d: Option<u64>| d.map_or("trapped".to_string(), |d| d.to_string());
    println!(
        "RESULT {} counter={counter} iterations={iterations} rounds={rounds} granted={} formula={formula} known={} a={} a_follow={} b={} b_follow={}",
        if bench { "thread-bench-run" } else { "thread-pingpong" },
        u8::from(granted),
        show(known),
        show(ra.0),
        u8::from(ra.1),
        show(rb.0),
        u8::from(rb.1),
    );
}

/// (f) Bad input, each with its errno, and the thread's access unchanged after it.
fn bad(counter: u64) {
    pin(0);
    let fd = open_device().unwrap_or(-1);
    let layout_outside: u64 = 1; // counter 0: below the module's top counters
    let e = |r: Result<KmodEuGrant, i32>| r.err().unwrap_or(0);
    let mut line = String::from("RESULT thread-bad");
    let mut step = |name: &str, errno: i32, reads: bool| {
        line.push_str(&format!(
            " {name}={errno}/{}",
            if reads { "reads" } else { "traps" }
        ));
    };
    step("regrant_ungranted", regrant(fd), read(counter).is_some());
    step(
        "size16",
        e(grant_raw(fd, IOC_GRANT, 16, 0, 0)),
        read(counter).is_some(),
    );
    step(
        "ioc_size16",
        e(grant_raw(fd, IOC_GRANT_16, 24, 0, 0)),
        read(counter).is_some(),
    );
    step(
        "flags",
        e(grant_raw(fd, IOC_GRANT, 24, 2, 0)),
        read(counter).is_some(),
    );
    step(
        "outside_layout",
        e(grant_raw(fd, IOC_GRANT, 24, 0, layout_outside)),
        read(counter).is_some(),
    );
    // SAFETY: an ioctl the module does not define, no argument.
    let unknown = unsafe { ioctl(fd, IOC_UNKNOWN) };
    step(
        "unknown",
        if unknown < 0 { errno() } else { 0 },
        read(counter).is_some(),
    );
    let first = grant(fd);
    step("grant", e(first), read(counter).is_some());
    step("second", e(grant(fd)), read(counter).is_some());
    let other = open_device().unwrap_or(-1);
    step("other_file", e(grant(other)), read(counter).is_some());
    step(
        "regrant_other_file",
        regrant(other),
        read(counter).is_some(),
    );
    let child = in_child(|| {
        let errno = e(grant(fd));
        // The child's own read: it has no grant, whatever its parent's file says.
        let trapped = read(counter).is_none();
        if trapped {
            errno
        } else {
            100 + errno
        }
    });
    step("child", child, read(counter).is_some());
    // SAFETY: our fds.
    unsafe {
        close(other);
        close(fd);
    }
    step("closed", 0, read(counter).is_some());
    println!("{line}");
}

/// REGRANT after perf cleared PMUSERENR_EL0 while the granted thread ran on CPU 0:
/// `perf record -C 0` of the cycles (perf's PMCCNTR_EL0) every 100000 cycles, started
/// from CPU 1: each overflow interrupt on CPU 0 ends in armv8pmu_start, which writes
/// PMUSERENR_EL0 = 0 (armv8pmu_handle_irq, drivers/perf/arm_pmuv3.c 6.12).
fn regrant_after_perf(counter: u64) {
    pin(0);
    let fd = open_device().unwrap_or(-1);
    let granted = grant(fd).is_ok();
    let done = Arc::new(AtomicBool::new(false));
    let perf = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            pin(1);
            let status = Command::new("perf")
                .args([
                    "record",
                    "-C",
                    "0",
                    "-e",
                    "cycles",
                    "-c",
                    "100000",
                    "-o",
                    "/tmp/thread-grant.data",
                    "--",
                    "sleep",
                    "0.2",
                ])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
            done.store(true, Ordering::SeqCst);
            status.map(|s| s.code().unwrap_or(-1)).unwrap_or(-1)
        })
    };
    let mut last = None;
    let mut trapped_at = None;
    let mut regranted = None;
    let mut after = None;
    while !done.load(Ordering::SeqCst) {
        match read(counter) {
            Some(v) => last = Some(v),
            None => {
                trapped_at = Some(last.unwrap_or(0));
                regranted = Some(regrant(fd));
                after = read(counter);
                break;
            }
        }
    }
    let perf_status = perf.join().unwrap_or(-1);
    // SAFETY: our fd.
    unsafe { close(fd) };
    let show = |v: Option<u64>| v.map_or("none".to_string(), |v| v.to_string());
    println!(
        "RESULT thread-regrant granted={} perf_status={perf_status} trapped={} regrant_errno={} last_before={} first_after={} step={}",
        u8::from(granted),
        u8::from(trapped_at.is_some()),
        regranted.map_or("none".to_string(), |e| e.to_string()),
        show(trapped_at),
        show(after),
        match (trapped_at, after) {
            (Some(b), Some(a)) => a.wrapping_sub(b).to_string(),
            _ => "none".to_string(),
        }
    );
}

/// (h) N open/GRANT/close cycles.
fn cycles(n: u32) {
    let mut failed = 0;
    for _ in 0..n {
        match open_device() {
            Ok(fd) => {
                if grant(fd).is_err() {
                    failed += 1;
                }
                // SAFETY: our fd.
                unsafe { close(fd) };
            }
            Err(_) => failed += 1,
        }
    }
    println!("RESULT thread-cycles n={n} failed={failed}");
}

/// The module loaded with `cpus=0`: a granted thread reads on CPU 0, moves to CPU 1
/// (where the module runs no counters: its read traps there) and runs ITER iterations,
/// comes back to CPU 0. Its instructions on CPU 1 are in none of its counters, so the
/// module withholds the grant until the thread asks (kmod_enable_user_glue.c
/// `eu_sched_in`, `thread::missed`): the next read traps and REGRANT returns
/// KMOD_EU_REGRANT_LOST (1) instead of letting a short count through; a REGRANT when
/// nothing was missed returns 0; the block on CPU 0 is exact again.
fn gap(counter: u64, iterations: u64) {
    pin(0);
    let fd = open_device().unwrap_or(-1);
    let granted = grant(fd).is_ok();
    let start_read = read(counter).is_some();
    pin(1);
    let gap_cpu = cpu();
    let gap_read = read(counter).is_some();
    // SAFETY: a register-only loop; `max(1)` keeps the counter from wrapping past 0.
    unsafe {
        asm!(
            "1: subs {n}, {n}, #1",
            "b.ne 1b",
            n = inout(reg) iterations.max(1) => _,
            options(nostack, nomem),
        );
    }
    pin(0);
    let back_cpu = cpu();
    let end_trapped = read(counter).is_none();
    // SAFETY: REGRANT takes no argument.
    let rc_lost = unsafe { ioctl(fd, IOC_REGRANT) };
    let read_after = read(counter).is_some();
    let (delta, _) = block_between_reads(counter, iterations);
    // SAFETY: as above.
    let rc_held = unsafe { ioctl(fd, IOC_REGRANT) };
    // SAFETY: our fd.
    unsafe { close(fd) };
    println!(
        "RESULT thread-gap granted={} start_read={} gap_cpu={gap_cpu} gap_read={} back_cpu={back_cpu} end_trapped={} regrant_rc={rc_lost} read_after_regrant={} delta={} regrant_again_rc={rc_held}",
        u8::from(granted),
        u8::from(start_read),
        u8::from(gap_read),
        u8::from(end_trapped),
        u8::from(read_after),
        delta.map_or("trapped".to_string(), |d| d.to_string()),
    );
}

/// `n` grants that end without their thread's own close, in turn (kmod_enable_user_glue.c
/// `eu_release`): a new thread grants and exits, the main thread closes its file (the
/// dead thread's notifier unlinked inside stop_machine()); a new thread grants and
/// closes its file itself, then exits; a child process grants and exits with its file
/// open (released by the exiting task). Each grant takes a reference to its task: one
/// the module failed to drop would leave a task_struct behind per grant, which
/// kmemleak (the arm64 test kernel, tests/guest/arm64.sh `thread-leak`) reports once
/// the task is gone.
fn ends(n: u32, counter: u64) {
    let mut failed = 0;
    for i in 0..n {
        let ok = match i % 3 {
            0 => match open_device() {
                Ok(fd) => {
                    let granted = std::thread::spawn(move || grant(fd).is_ok())
                        .join()
                        .unwrap_or(false);
                    // SAFETY: our fd; its granted thread has exited.
                    let closed = unsafe { close(fd) } == 0;
                    granted && closed
                }
                Err(_) => false,
            },
            1 => std::thread::spawn(move || match open_device() {
                // SAFETY: our fd, closed once.
                Ok(fd) => grant(fd).is_ok() && unsafe { close(fd) } == 0,
                Err(_) => false,
            })
            .join()
            .unwrap_or(false),
            _ => {
                in_child(|| match open_device() {
                    Ok(fd) if grant(fd).is_ok() && read(counter).is_some() => 0,
                    _ => 1,
                }) == 0
            }
        };
        if !ok {
            failed += 1;
        }
    }
    println!("RESULT thread-ends n={n} failed={failed}");
}

/// The grant's end without its thread's close (kmod_enable_user_glue.c `eu_release`):
/// - `dead`: a granted thread exits with its file open, and another thread closes the
///   file afterwards (the module unlinks the dead thread's notifier inside
///   stop_machine());
/// - `live`: another thread closes the file while the granted thread is alive (unlinked
///   inside stop_machine() too): the granted thread's next read traps;
/// - `child`: a process exits granted, its file still open (released in the exiting
///   task itself).
///
/// The kernel log after these must hold no warning or oops (the script's `klog`).
fn exits(counter: u64) {
    let outcome = |ok: bool| u8::from(ok);
    let Ok(fd) = open_device() else {
        println!("RESULT thread-exit case=dead open=0");
        return;
    };
    let dead = std::thread::spawn(move || {
        let granted = grant(fd).is_ok();
        (granted, read(counter).is_some())
    })
    .join()
    .unwrap_or((false, false));
    // SAFETY: our fd; its granted thread has exited.
    let rc = unsafe { close(fd) };
    println!(
        "RESULT thread-exit case=dead granted={} read={} close_rc={rc}",
        outcome(dead.0),
        outcome(dead.1)
    );

    let Ok(fd) = open_device() else {
        println!("RESULT thread-exit case=live open=0");
        return;
    };
    // 0: starting, 1: granted and read, 2: the file is closed.
    let stage = Arc::new(AtomicI32::new(0));
    let seen = Arc::clone(&stage);
    let live = std::thread::spawn(move || {
        let granted = grant(fd).is_ok();
        let before = read(counter).is_some();
        seen.store(1, Ordering::SeqCst);
        while seen.load(Ordering::SeqCst) != 2 {
            std::thread::yield_now();
        }
        (granted, before, read(counter).is_none())
    });
    while stage.load(Ordering::SeqCst) != 1 {
        std::thread::yield_now();
    }
    // SAFETY: our fd; its granted thread is alive and waits for stage 2.
    let rc = unsafe { close(fd) };
    stage.store(2, Ordering::SeqCst);
    let live = live.join().unwrap_or((false, false, false));
    println!(
        "RESULT thread-exit case=live granted={} read_before={} trapped_after={} close_rc={rc}",
        outcome(live.0),
        outcome(live.1),
        outcome(live.2)
    );

    // Exit code 0: granted and read, then `_exit` with the file open.
    let child = in_child(|| match open_device() {
        Ok(fd) if grant(fd).is_ok() && read(counter).is_some() => 0,
        Ok(_) => 1,
        Err(_) => 2,
    });
    println!("RESULT thread-exit case=child status={child}");
}

/// (g) rmmod with a granted file open is refused; the thread still reads; after close
/// rmmod succeeds and a read traps.
fn rmmod(counter: u64) {
    pin(0);
    let fd = open_device().unwrap_or(-1);
    let granted = grant(fd).is_ok();
    let rmmod = || match Command::new("rmmod").arg("kmod_enable_user").output() {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stderr);
            let first = text.lines().next().unwrap_or("none");
            let message = first.rsplit(": ").next().unwrap_or(first).replace(' ', "_");
            (out.status.code().unwrap_or(-1), message)
        }
        Err(_) => (-1, "not_run".to_string()),
    };
    let (open_rc, open_message) = rmmod();
    let reads_open = read(counter).is_some();
    // SAFETY: our fd.
    unsafe { close(fd) };
    let (closed_rc, _) = rmmod();
    let reads_after = read(counter).is_some();
    println!(
        "RESULT thread-rmmod granted={} rmmod_open_rc={open_rc} rmmod_open_error={open_message} reads_while_open={} rmmod_closed_rc={closed_rc} reads_after_unload={}",
        u8::from(granted),
        u8::from(reads_open),
        u8::from(reads_after)
    );
}

fn main() -> ExitCode {
    install_handler();
    let args: Vec<String> = std::env::args().collect();
    let number = |i: usize| counter_arg(&args, i);
    match args.get(1).map(String::as_str) {
        Some("access") => access(number(2) as u32),
        Some("exact") => exact(number(2), number(3)),
        Some("trap") => trap(number(2)),
        Some("migrate") => migrate(number(2), number(3), number(4)),
        Some("bad") => bad(number(2)),
        Some("pingpong") => pingpong(number(2), number(3), number(4), true, false),
        Some("regrant") => regrant_after_perf(number(2)),
        Some("cycles") => cycles(number(2) as u32),
        Some("ends") => ends(number(2) as u32, number(3)),
        Some("gap") => gap(number(2), number(3)),
        Some("rmmod") => rmmod(number(2)),
        Some("exits") => exits(number(2)),
        Some("bench") => pingpong(
            number(2),
            number(3),
            number(4),
            args.get(5).map(String::as_str) == Some("granted"),
            true,
        ),
        _ => {
            eprintln!("usage: thread-grant access|exact|trap|bad|pingpong|migrate|regrant|cycles|ends|gap|rmmod|exits|bench …");
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}
