//! Every system call of the crate, each behind a small safe function returning
//! [`Errno`] on failure.
//!
//! This is where the crate's `unsafe` for the operating system lives (the other
//! `unsafe` is the volatile view of the mmapped page in [`crate::perf::page`] and the
//! one-instruction counter reads in [`crate::perf::read`]). Callers turn an [`Errno`] into
//! the [`crate::Error`] that fits what they were doing.

use std::fs;
use std::mem::MaybeUninit;
use std::ptr::NonNull;

use crate::error::Errno;

/// The thread's context-switch counts from `getrusage(RUSAGE_THREAD)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SwitchCounts {
    /// `ru_nvcsw`: the thread gave up the CPU (blocked, slept, yielded).
    pub voluntary: u64,
    /// `ru_nivcsw`: the scheduler took the CPU away (time slice over, a higher-priority
    /// task woke up).
    pub involuntary: u64,
}

impl SwitchCounts {
    /// Switches from `self` to `later`, per kind.
    pub fn delta(self, later: Self) -> Self {
        Self {
            voluntary: later.voluntary.wrapping_sub(self.voluntary),
            involuntary: later.involuntary.wrapping_sub(self.involuntary),
        }
    }

    /// Both kinds together.
    pub fn total(self) -> u64 {
        self.voluntary.wrapping_add(self.involuntary)
    }
}

/// The calling thread's context-switch counts.
pub(crate) fn thread_switches() -> Result<SwitchCounts, Errno> {
    // Not zeroed first: that was 17 stores on every region edge, and a successful
    // getrusage writes the whole struct (kernel/sys.c copies a full `struct rusage`;
    // the C libraries pass it through or convert every field).
    let mut usage = MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: `usage` is a valid, writable rusage; RUSAGE_THREAD (Linux ≥ 2.6.26) reports
    // the calling thread only.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) };
    if rc != 0 {
        return Err(Errno::last());
    }
    // SAFETY: getrusage succeeded, so it filled the struct.
    let usage = unsafe { usage.assume_init() };
    Ok(SwitchCounts {
        voluntary: usage.ru_nvcsw as u64,
        involuntary: usage.ru_nivcsw as u64,
    })
}

/// The CPU the calling thread runs on now (`sched_getcpu`, the vDSO/`rseq` value where
/// the C library has it), `None` where the kernel cannot say.
pub(crate) fn current_cpu() -> Option<u32> {
    // SAFETY: sched_getcpu has no arguments and no preconditions.
    let cpu = unsafe { libc::sched_getcpu() };
    u32::try_from(cpu).ok()
}

/// The rseq signature: only checked by the kernel when it aborts a critical section,
/// which this crate never defines; the values of the kernel's rseq selftests
/// (tools/testing/selftests/rseq/rseq-*.h).
#[cfg(target_arch = "x86_64")]
const RSEQ_SIG: u32 = 0x5305_3053;
#[cfg(target_arch = "aarch64")]
const RSEQ_SIG: u32 = 0xd428_bc00;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const RSEQ_SIG: u32 = 0;

/// Registers `area` as the calling thread's rseq area (`rseq(area, 32, 0, sig)`).
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
pub(crate) fn rseq_register(area: NonNull<crate::machine::rseq::RseqArea>) -> Result<(), Errno> {
    // SAFETY: `area` is a 32-byte, 32-aligned `struct rseq` that is never freed (the
    // caller leaks it), as the kernel requires of a registered area; the kernel writes
    // only inside it.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_rseq,
            area.as_ptr(),
            crate::machine::rseq::RSEQ_AREA_SIZE,
            0,
            RSEQ_SIG,
        )
    };
    if rc != 0 {
        return Err(Errno::last());
    }
    Ok(())
}

/// glibc's rseq area of the calling thread: the thread pointer plus `__rseq_offset`
/// when `__rseq_size` is not 0 (glibc ≥ 2.35 exports both, sys/rseq.h); `None` where
/// glibc has no such exports or did not register (size 0).
#[cfg(all(
    target_env = "gnu",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
pub(crate) fn c_library_rseq_area() -> Option<NonNull<crate::machine::rseq::RseqArea>> {
    // SAFETY: dlsym with a NUL-terminated name only looks the symbol up.
    let offset = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_offset".as_ptr()) };
    // SAFETY: as above.
    let size = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_size".as_ptr()) };
    if offset.is_null() || size.is_null() {
        return None;
    }
    // SAFETY: glibc defines `const unsigned int __rseq_size` (sys/rseq.h).
    if unsafe { size.cast::<u32>().read() } == 0 {
        return None;
    }
    // SAFETY: glibc defines `const ptrdiff_t __rseq_offset` (sys/rseq.h).
    let offset = unsafe { offset.cast::<isize>().read() };
    NonNull::new(
        crate::asm::thread_pointer()
            .wrapping_byte_offset(offset)
            .cast::<crate::machine::rseq::RseqArea>(),
    )
}

/// glibc's rseq area: none outside glibc.
#[cfg(not(all(
    target_env = "gnu",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
pub(crate) fn c_library_rseq_area() -> Option<NonNull<crate::machine::rseq::RseqArea>> {
    None
}

/// The CPUs the calling thread may run on.
pub(crate) fn affinity() -> Result<Vec<usize>, Errno> {
    let mut set = MaybeUninit::<libc::cpu_set_t>::zeroed();
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), set.as_mut_ptr()) };
    if rc != 0 {
        return Err(Errno::last());
    }
    // SAFETY: the kernel filled the set (and it was zeroed before).
    let set = unsafe { set.assume_init() };
    Ok((0..cpu_set_capacity())
        // SAFETY: `cpu` is below CPU_SETSIZE, the bit count of `set`.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect())
}

/// Restricts the calling thread to `cpus`. The kernel migrates the thread at once if it
/// is on another CPU.
pub(crate) fn set_affinity(cpus: &[usize]) -> Result<(), Errno> {
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if cpu >= cpu_set_capacity() {
            return Err(Errno(libc::EINVAL));
        }
        // SAFETY: `cpu` is below CPU_SETSIZE (checked above).
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(Errno::last());
    }
    Ok(())
}

/// Bits in a `cpu_set_t`.
fn cpu_set_capacity() -> usize {
    8 * size_of::<libc::cpu_set_t>()
}

/// How a probe child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChildEnd {
    /// `_exit(code)`.
    Exited(i32),
    /// Killed by this signal.
    Signaled(i32),
}

/// Runs `probe` in a forked child and reports how the child ended: the way to try an
/// instruction that may trap (SIGILL) without risking this process.
///
/// The child inherits the thread's CPU affinity, so a probe of per-CPU state (the
/// PMU's user-enable bit) runs on the same CPU when the caller is pinned. In the child
/// only `probe` and async-signal-safe calls run (the parent may have other threads):
/// core dumps off, SIGILL back to its default action, stderr to /dev/null, `probe()`,
/// `_exit(0)`.
#[cfg_attr(
    not(any(target_arch = "aarch64", target_arch = "arm")),
    allow(dead_code)
)]
pub(crate) fn run_in_child(probe: fn()) -> Result<ChildEnd, Errno> {
    // SAFETY: fork has no memory-safety preconditions; the child below only makes
    // async-signal-safe calls before `_exit`, as POSIX requires after fork in a
    // multi-threaded process.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(Errno::last());
    }
    if pid == 0 {
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: in the child: setrlimit, signal, open and dup2 are async-signal-safe
        // system calls with valid arguments (a NUL-terminated path); `probe` is a plain
        // function the caller vouches for; _exit ends the child without running the
        // parent's atexit handlers or destructors.
        unsafe {
            libc::setrlimit(libc::RLIMIT_CORE, &no_core);
            libc::signal(libc::SIGILL, libc::SIG_DFL);
            // The child has nothing to say, but an emulator does: qemu-user reports the
            // trap the probe exists to cause ("qemu: uncaught target signal 4 (Illegal
            // instruction) - core dumped", although the core limit is 0) on the child's
            // stderr, which is the user's terminal. The wait status says it all.
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
            if null >= 0 {
                libc::dup2(null, libc::STDERR_FILENO);
            }
            probe();
            libc::_exit(0);
        }
    }
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid int to write; `pid` is our child.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc == pid {
            break;
        }
        if Errno::last().0 != libc::EINTR {
            return Err(Errno::last());
        }
    }
    if libc::WIFEXITED(status) {
        Ok(ChildEnd::Exited(libc::WEXITSTATUS(status)))
    } else if libc::WIFSIGNALED(status) {
        Ok(ChildEnd::Signaled(libc::WTERMSIG(status)))
    } else {
        Ok(ChildEnd::Exited(-1))
    }
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
/// A command forked and held before its `exec`: the child blocks reading a pipe until
/// [`HeldChild::release`], so that the parent can open events on its pid first (perf
/// stat's way: tools/perf/util/evlist.c `evlist__prepare_workload` in Linux 6.12).
///
/// Dropped without a release, the child is killed and reaped.
#[derive(Debug)]
pub(crate) struct HeldChild {
    pid: libc::pid_t,
    /// The write end of the pipe the child waits on.
    go: Option<std::os::fd::OwnedFd>,
    /// The read end of the close-on-exec pipe the child writes its `execv` errno to.
    exec_error: Option<std::os::fd::OwnedFd>,
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
/// A pipe, both ends close-on-exec: (read end, write end).
fn cloexec_pipe() -> Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd), Errno> {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(Errno::last());
    }
    // SAFETY: pipe2 just returned these two new descriptors; nothing else owns them.
    Ok(unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    })
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
impl HeldChild {
    /// Forks a child that waits for [`HeldChild::release`], then `execv`s `path` with
    /// `argv` (the environment is this process's). Between the fork and the exec the
    /// child only makes async-signal-safe calls (`close`, `read`, `signal`, `execv`,
    /// `write`, `_exit`), as POSIX requires after a fork in a multi-threaded process; everything
    /// it needs is built before the fork.
    pub(crate) fn spawn(path: &std::ffi::CStr, argv: &[std::ffi::CString]) -> Result<Self, Errno> {
        use std::os::fd::AsRawFd;
        let mut pointers: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
        pointers.push(std::ptr::null());
        let (go_read, go_write) = cloexec_pipe()?;
        let (error_read, error_write) = cloexec_pipe()?;
        // SAFETY: fork has no memory-safety preconditions; the child below makes only
        // async-signal-safe calls on memory prepared before the fork, then execs or
        // `_exit`s.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(Errno::last());
        }
        if pid == 0 {
            let mut byte = 0u8;
            // SAFETY: in the child: `close`, `read`, `signal`, `execv`, `write` and
            // `_exit` are async-signal-safe; the closed descriptor is this process's
            // copy, which nothing in the child uses (its `OwnedFd` is never dropped
            // here); `byte` is a valid one-byte buffer; `path` and `pointers`
            // (NUL-terminated strings, a null-terminated array) live in this copy of
            // the parent's memory until the exec replaces it.
            unsafe {
                // The child's copy of the write end: closed, so that the parent's end
                // of life (its copy closed) reads as end of file here.
                libc::close(go_write.as_raw_fd());
                let got = libc::read(go_read.as_raw_fd(), (&raw mut byte).cast(), 1);
                if got != 1 {
                    // The parent went away or gave up before the release.
                    libc::_exit(127);
                }
                // Rust's runtime ignores SIGPIPE; a command gets the default, as from
                // a shell.
                libc::signal(libc::SIGPIPE, libc::SIG_DFL);
                libc::execv(path.as_ptr(), pointers.as_ptr());
                let errno = Errno::last().0;
                let bytes = errno.to_ne_bytes();
                libc::write(error_write.as_raw_fd(), bytes.as_ptr().cast(), bytes.len());
                libc::_exit(127);
            }
        }
        drop(go_read);
        drop(error_write);
        Ok(Self {
            pid,
            go: Some(go_write),
            exec_error: Some(error_read),
        })
    }

    /// The child's pid.
    pub(crate) fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// Lets the child exec; `Ok(None)` once the exec succeeded, `Ok(Some(errno))` when it
    /// failed (the child then exits with 127). Either way the child is left to
    /// [`wait_with_rusage`].
    pub(crate) fn release(mut self) -> Result<(libc::pid_t, Option<Errno>), Errno> {
        use std::os::fd::AsRawFd;
        let go = self.go.take().ok_or(Errno(libc::EBADF))?;
        let exec_error = self.exec_error.take().ok_or(Errno(libc::EBADF))?;
        let byte = 1u8;
        // SAFETY: `go` is the open write end of the pipe; `byte` is one readable byte.
        let wrote = unsafe { libc::write(go.as_raw_fd(), (&raw const byte).cast(), 1) };
        if wrote != 1 {
            return Err(Errno::last());
        }
        drop(go);
        let mut bytes = [0u8; 4];
        // The exec closes the child's end (close-on-exec): 0 bytes then; 4 when the
        // exec failed and the child wrote its errno.
        let got = read_u8s(exec_error.as_raw_fd(), &mut bytes)?;
        let pid = self.pid;
        // Released: the caller waits for it from now on.
        self.pid = 0;
        Ok((pid, (got == 4).then(|| Errno(i32::from_ne_bytes(bytes)))))
    }
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
/// Reads up to `buf.len()` bytes until end of file.
fn read_u8s(fd: libc::c_int, buf: &mut [u8]) -> Result<usize, Errno> {
    let mut total = 0;
    while total < buf.len() {
        // SAFETY: the pointer and length describe the unfilled rest of `buf`.
        let n = unsafe { libc::read(fd, buf[total..].as_mut_ptr().cast(), buf.len() - total) };
        match usize::try_from(n) {
            Ok(0) => break,
            Ok(n) => total += n,
            Err(_) if Errno::last().0 == libc::EINTR => continue,
            Err(_) => return Err(Errno::last()),
        }
    }
    Ok(total)
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
impl Drop for HeldChild {
    fn drop(&mut self) {
        if self.pid > 0 {
            // SAFETY: `pid` is our child, not yet waited for: it still exists (a zombie
            // at worst), so the signal and the wait reach it and nothing else.
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
            }
            let _ = wait_with_rusage(self.pid);
        }
    }
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
/// SIGINT and SIGQUIT ignored in this process while it lives, as `system(3)` ignores
/// them while its command runs (POSIX XSH `system`): a Ctrl-C at the terminal reaches
/// the whole foreground process group, so it ends the command and leaves this process
/// to read the counts. Created after the fork, so the command keeps the dispositions
/// this process had; restored on drop.
pub(crate) struct IgnoreInterrupts {
    saved: [(libc::c_int, Option<libc::sigaction>); 2],
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
impl IgnoreInterrupts {
    pub(crate) fn new() -> Self {
        let ignore = |signal: libc::c_int| {
            // SAFETY: an all-zero sigaction is a valid value (no flags, empty mask) to
            // be filled in below.
            let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
            action.sa_sigaction = libc::SIG_IGN;
            // SAFETY: as above: the old action is written there by sigaction.
            let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: valid pointers to a sigaction each; SIG_IGN installs no handler
            // code.
            let rc = unsafe { libc::sigaction(signal, &action, &mut old) };
            (signal, (rc == 0).then_some(old))
        };
        Self {
            saved: [ignore(libc::SIGINT), ignore(libc::SIGQUIT)],
        }
    }
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
impl Drop for IgnoreInterrupts {
    fn drop(&mut self) {
        for (signal, old) in &self.saved {
            if let Some(old) = old {
                // SAFETY: restores the action sigaction returned for this signal.
                unsafe { libc::sigaction(*signal, old, std::ptr::null_mut()) };
            }
        }
    }
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
/// Waits for the child `pid`: how it ended, and the resources it and the children it
/// waited for used (`wait4`).
pub(crate) fn wait_with_rusage(pid: libc::pid_t) -> Result<(ChildEnd, libc::rusage), Errno> {
    let mut status = 0;
    let mut usage = MaybeUninit::<libc::rusage>::zeroed();
    loop {
        // SAFETY: `status` and `usage` are valid to write; `pid` is the caller's child.
        let rc = unsafe { libc::wait4(pid, &mut status, 0, usage.as_mut_ptr()) };
        if rc == pid {
            break;
        }
        if Errno::last().0 != libc::EINTR {
            return Err(Errno::last());
        }
    }
    // SAFETY: zeroed, then filled by a successful wait4: every field is initialized.
    let usage = unsafe { usage.assume_init() };
    let end = if libc::WIFEXITED(status) {
        ChildEnd::Exited(libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        ChildEnd::Signaled(libc::WTERMSIG(status))
    } else {
        ChildEnd::Exited(-1)
    };
    Ok((end, usage))
}

/// `kernel.perf_event_paranoid`, `None` when unreadable (no perf in this kernel).
pub fn perf_event_paranoid() -> Option<i32> {
    read_proc_int("/proc/sys/kernel/perf_event_paranoid")
}

/// arm64 `kernel.perf_user_access` (0: user-space counter reads off, 1: on), `None`
/// where the sysctl does not exist (not arm64, or a kernel before 5.17).
pub fn perf_user_access() -> Option<i32> {
    read_proc_int("/proc/sys/kernel/perf_user_access")
}

fn read_proc_int(path: &str) -> Option<i32> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// perf_event_open, the ioctls on its descriptors and the metadata-page mapping.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) mod perf {
    use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
    use std::ptr::NonNull;

    use perf_event_open_sys as pes;
    use pes::bindings::{perf_event_attr, perf_event_mmap_page};

    use crate::error::Errno;

    /// Opens one event for the calling thread on any CPU (pid 0, cpu -1), in `group`'s
    /// group or as a new leader, close-on-exec.
    pub(crate) fn open(
        attr: &mut perf_event_attr,
        group: Option<BorrowedFd<'_>>,
    ) -> Result<OwnedFd, Errno> {
        open_for(attr, 0, group)
    }

    /// Opens one event for the task `pid` (0: the calling thread) on any CPU, in
    /// `group`'s group or as a new leader, close-on-exec.
    pub(crate) fn open_for(
        attr: &mut perf_event_attr,
        pid: libc::pid_t,
        group: Option<BorrowedFd<'_>>,
    ) -> Result<OwnedFd, Errno> {
        let group_fd = group.map_or(-1, |fd| fd.as_raw_fd());
        // SAFETY: `attr` is a valid perf_event_attr whose `size` the caller set; the
        // kernel reads it (and may write `size` back on E2BIG). `group_fd` is -1 or an
        // open perf descriptor borrowed for the call; `pid` is a task id the kernel
        // checks.
        let fd = unsafe {
            pes::perf_event_open(
                attr,
                pid,
                -1,
                group_fd,
                libc::c_ulong::from(pes::bindings::PERF_FLAG_FD_CLOEXEC),
            )
        };
        if fd < 0 {
            return Err(Errno::last());
        }
        // SAFETY: the kernel just returned this new descriptor; nothing else owns it.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// `read(fd, buf)`: the number of bytes read.
    pub(crate) fn read_u64s(fd: BorrowedFd<'_>, buf: &mut [u64]) -> Result<usize, Errno> {
        loop {
            // SAFETY: `buf` is valid for writes of its byte length, which is what is passed.
            let n = unsafe {
                libc::read(
                    fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    std::mem::size_of_val(buf),
                )
            };
            match usize::try_from(n) {
                Ok(n) => return Ok(n),
                Err(_) if Errno::last().0 == libc::EINTR => continue,
                Err(_) => return Err(Errno::last()),
            }
        }
    }

    /// The group ioctls of perf_event_open(2).
    #[derive(Clone, Copy, Debug)]
    pub(crate) enum Ioctl {
        /// PERF_EVENT_IOC_ENABLE.
        Enable,
        /// PERF_EVENT_IOC_DISABLE.
        Disable,
        /// PERF_EVENT_IOC_RESET.
        Reset,
    }

    /// `ioctl(fd, op, PERF_IOC_FLAG_GROUP)`: applies `op` to the whole group of the
    /// leader `fd`.
    pub(crate) fn group_ioctl(fd: BorrowedFd<'_>, op: Ioctl) -> Result<(), Errno> {
        let flag = pes::bindings::PERF_IOC_FLAG_GROUP;
        // SAFETY: `fd` is an open perf descriptor; these ioctls take an integer flag.
        let rc = unsafe {
            match op {
                Ioctl::Enable => pes::ioctls::ENABLE(fd.as_raw_fd(), flag),
                Ioctl::Disable => pes::ioctls::DISABLE(fd.as_raw_fd(), flag),
                Ioctl::Reset => pes::ioctls::RESET(fd.as_raw_fd(), flag),
            }
        };
        if rc < 0 {
            return Err(Errno::last());
        }
        Ok(())
    }

    /// PERF_EVENT_IOC_ID: the id the group `read()` reports for this event.
    pub(crate) fn event_id(fd: BorrowedFd<'_>) -> Result<u64, Errno> {
        let mut id = 0u64;
        // SAFETY: `fd` is an open perf descriptor; `id` is a valid u64 to write.
        let rc = unsafe { pes::ioctls::ID(fd.as_raw_fd(), &mut id) };
        if rc < 0 {
            return Err(Errno::last());
        }
        Ok(id)
    }

    /// The first page of a perf event's mapping (the metadata page), read-only and
    /// without a ring buffer: `mmap(NULL, page_size, PROT_READ, MAP_SHARED, fd, 0)`.
    ///
    /// Unmapped on drop.
    #[derive(Debug)]
    pub(crate) struct Mapping {
        page: NonNull<perf_event_mmap_page>,
        len: usize,
    }

    impl Mapping {
        /// Maps the metadata page of `fd`.
        pub(crate) fn new(fd: BorrowedFd<'_>) -> Result<Self, Errno> {
            let len = page_size();
            // SAFETY: a fresh read-only shared mapping chosen by the kernel; it aliases
            // no Rust object. A perf fd accepts a mapping of 1 (+ 2^n) pages at offset 0.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ,
                    libc::MAP_SHARED,
                    fd.as_raw_fd(),
                    0,
                )
            };
            if ptr == libc::MAP_FAILED {
                return Err(Errno::last());
            }
            let page = NonNull::new(ptr.cast()).ok_or(Errno(libc::EFAULT))?;
            Ok(Self { page, len })
        }

        /// The page; valid for reads while `self` lives.
        pub(crate) fn page(&self) -> NonNull<perf_event_mmap_page> {
            self.page
        }
    }

    impl Drop for Mapping {
        fn drop(&mut self) {
            // SAFETY: exactly the region `new` mapped; no view outlives `self` (views
            // borrow it).
            unsafe {
                libc::munmap(self.page.as_ptr().cast(), self.len);
            }
        }
    }

    /// The system page size (the metadata page is one page).
    fn page_size() -> usize {
        // SAFETY: sysconf has no preconditions.
        let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        usize::try_from(size).unwrap_or(4096)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switch_counts_move_on_sleep() {
        let before = thread_switches().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1));
        let d = before.delta(thread_switches().unwrap());
        // nanosleep blocks: at least one voluntary switch (getrusage(2): ru_nvcsw).
        assert!(d.voluntary >= 1, "{d:?}");
        assert_eq!(d.total(), d.voluntary + d.involuntary);
    }

    #[test]
    fn affinity_round_trip() {
        let cpus = affinity().unwrap();
        assert!(!cpus.is_empty());
        set_affinity(&cpus).unwrap();
        assert_eq!(affinity().unwrap(), cpus);
        assert!(current_cpu().is_some_and(|c| cpus.contains(&(c as usize))));
        assert_eq!(set_affinity(&[1 << 20]), Err(Errno(libc::EINVAL)));
    }

    fn exits_7() {
        // SAFETY: runs in the probe child only; _exit ends it at once.
        unsafe { libc::_exit(7) }
    }

    #[test]
    fn child_exit_status_is_reported() {
        assert_eq!(run_in_child(exits_7), Ok(ChildEnd::Exited(7)));
        fn nothing() {}
        assert_eq!(run_in_child(nothing), Ok(ChildEnd::Exited(0)));
    }
}
