//! The per-thread grant: this thread's file of /dev/kmod_enable_user, its GRANT, the
//! re-grant after perf cleared PMUSERENR_EL0, and the SIGILL handler that repairs a
//! read perf's interrupt made trap.
//!
//! The state the handler reads is thread-local and const-initialised (`Cell`s of plain
//! integers: no lazy initialisation, no destructor, no allocation), so the handler
//! only loads and stores it. One file serves every meter of a thread (the module
//! grants a thread once: a second GRANT is EBUSY); the last [`ThreadGrant`] of the
//! thread closes it, which ends the grant.

use std::cell::Cell;
use std::marker::PhantomData;

use super::uapi::{self, GrantCall, KmodEuGrant};

thread_local! {
    /// The thread's file of the device, -1 without one.
    static GRANT_FD: Cell<i32> = const { Cell::new(-1) };
    /// How many [`ThreadGrant`]s of this thread share the file.
    static GRANT_USERS: Cell<u32> = const { Cell::new(0) };
    /// The GRANT's `granted` bits.
    static GRANTED: Cell<u32> = const { Cell::new(0) };
    /// Re-grants since the thread's grant began (the handler's and the edges').
    static REGRANTS: Cell<u64> = const { Cell::new(0) };
    /// A read that trapped unrecovered since the region began: a [`Trap`] code,
    /// 0 for none.
    static TRAPPED: Cell<u32> = const { Cell::new(0) };
    /// The errno of the REGRANT that failed, where one did.
    static TRAPPED_ERRNO: Cell<i32> = const { Cell::new(0) };
}

/// A call on the device that failed: which, and its errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refused {
    /// The call.
    pub call: GrantCall,
    /// Its errno.
    pub errno: i32,
}

/// A read that trapped and was not repaired, as the handler marked it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Trap {
    /// The thread holds no grant.
    NoGrant,
    /// REGRANT failed with this errno.
    RegrantRefused(i32),
    /// REGRANT succeeded and PMUSERENR_EL0 still did not open the read.
    RegrantIneffective,
    /// The read trapped because the thread had run where the module's counters did
    /// not count for it; REGRANT put the grant back (`KMOD_EU_REGRANT_LOST`) and the
    /// read was made, but a count across that gap is short.
    CountsLost,
}

impl Trap {
    // The handler's marks (aarch64); `from_code` reads any unknown code as NO_GRANT.
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    const NO_GRANT: u32 = 1;
    const REFUSED: u32 = 2;
    const INEFFECTIVE: u32 = 3;
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    const LOST: u32 = 4;

    fn from_code(code: u32, errno: i32) -> Self {
        match code {
            Self::REFUSED => Self::RegrantRefused(errno),
            Self::INEFFECTIVE => Self::RegrantIneffective,
            Self::LOST => Self::CountsLost,
            _ => Self::NoGrant,
        }
    }
}

/// What a REGRANT answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Regrant {
    /// Granted again; the counters counted for the thread throughout.
    Kept,
    /// Granted again; the thread's counts across a gap are short
    /// (`KMOD_EU_REGRANT_LOST`).
    Lost,
    /// Refused with this errno.
    Refused(i32),
}

/// This thread's share of its per-thread grant. Not `Send`: the grant is the thread's.
#[derive(Debug)]
pub struct ThreadGrant {
    granted: u32,
    _this_thread: PhantomData<*const ()>,
}

impl ThreadGrant {
    /// Asks the module for the calling thread's grant through `device` (opened here
    /// unless the thread already holds one, which is then shared). Installs the
    /// SIGILL handler (once per process, aarch64).
    ///
    /// # Errors
    /// The call that failed and its errno.
    pub fn acquire(device: &std::path::Path) -> Result<Self, Refused> {
        if GRANT_USERS.get() > 0 {
            GRANT_USERS.set(GRANT_USERS.get() + 1);
            return Ok(Self {
                granted: GRANTED.get(),
                _this_thread: PhantomData,
            });
        }
        let path =
            std::ffi::CString::new(device.as_os_str().as_encoded_bytes()).map_err(|_| Refused {
                call: GrantCall::Open,
                errno: libc::EINVAL,
            })?;
        // SAFETY: `path` is NUL-terminated and outlives the call.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(Refused {
                call: GrantCall::Open,
                errno: last_errno(),
            });
        }
        let mut request = KmodEuGrant::every_counter();
        // SAFETY: `fd` is the device just opened; GRANT reads and writes one
        // `struct kmod_eu_grant`, which `request` is (repr(C), the header's layout:
        // the parity test).
        let rc = unsafe { libc::ioctl(fd, uapi::IOC_GRANT as _, &mut request as *mut KmodEuGrant) };
        if rc != 0 {
            let errno = last_errno();
            // SAFETY: our own descriptor, closed once.
            unsafe { libc::close(fd) };
            return Err(Refused {
                call: GrantCall::Grant,
                errno,
            });
        }
        GRANT_FD.set(fd);
        GRANT_USERS.set(1);
        GRANTED.set(request.granted);
        REGRANTS.set(0);
        handler::install();
        Ok(Self {
            granted: request.granted,
            _this_thread: PhantomData,
        })
    }

    /// Whether the module's counters follow the thread (`KMOD_EU_GRANTED_FOLLOW`).
    pub fn follows(&self) -> bool {
        self.granted & uapi::GRANTED_FOLLOW != 0
    }

    /// Whether the grant includes programming access (`KMOD_EU_GRANTED_PROGRAM`).
    pub fn programs(&self) -> bool {
        self.granted & uapi::GRANTED_PROGRAM != 0
    }

    /// Asks the module to put this thread's grant back on this CPU (after perf cleared
    /// PMUSERENR_EL0), counting it. `Ok(true)`: the counters counted for the thread
    /// throughout; `Ok(false)`: granted again, but the thread had run where they did
    /// not count for it, so a count across that gap is short.
    ///
    /// # Errors
    /// REGRANT's errno.
    pub fn regrant(&self) -> Result<bool, Refused> {
        match regrant_raw() {
            Regrant::Kept => Ok(true),
            Regrant::Lost => Ok(false),
            Regrant::Refused(errno) => Err(Refused {
                call: GrantCall::Regrant,
                errno,
            }),
        }
    }

    /// Marks the region under way as short ([`Trap::CountsLost`]) unless it already
    /// has a mark: for a REGRANT at a region's end that answered `Ok(false)`.
    pub fn mark_lost(&self) {
        if TRAPPED.get() == 0 {
            TRAPPED.set(Trap::LOST);
        }
    }

    /// Forgets a [`Trap::CountsLost`] mark (a region's start: the gap its re-grant
    /// reported came before the region's reads); any other mark stays.
    #[inline(always)]
    pub fn forget_lost(&self) {
        if TRAPPED.get() == Trap::LOST {
            TRAPPED.set(0);
        }
    }

    /// The start of a region, before its grant check and its reads: forgets an
    /// earlier region's trap and returns the thread's re-grants so far.
    #[inline(always)]
    pub fn region_start(&self) -> u64 {
        TRAPPED.set(0);
        REGRANTS.get()
    }

    /// The thread's re-grants so far (the handler's and the edges').
    #[inline(always)]
    pub fn regrants(&self) -> u64 {
        REGRANTS.get()
    }

    /// The end of a region begun when the thread had `start` re-grants: how many
    /// re-grants came since.
    ///
    /// # Errors
    /// The [`Trap`] of a read that trapped unrecovered (the handler wrote 0 in its
    /// place): the region is not counted.
    #[inline(always)]
    pub fn region_end(&self, start: u64) -> Result<u64, Trap> {
        match TRAPPED.get() {
            0 => Ok(REGRANTS.get().wrapping_sub(start)),
            code => Err(Trap::from_code(code, TRAPPED_ERRNO.get())),
        }
    }
}

impl Drop for ThreadGrant {
    fn drop(&mut self) {
        let users = GRANT_USERS.get().saturating_sub(1);
        GRANT_USERS.set(users);
        if users == 0 {
            let fd = GRANT_FD.replace(-1);
            if fd >= 0 {
                // SAFETY: the thread's own descriptor of the device, closed once (the
                // last share): the module ends the grant.
                unsafe { libc::close(fd) };
            }
        }
    }
}

rig_pub! {
    /// Whether a PMU read of this thread trapped unrecovered since the last call (or the
    /// last region's start), and why; clears the mark. For a program that reads the
    /// counters by hand while the library's SIGILL handler is installed: such a read gave
    /// 0, not a count.
    pub fn take_trap() -> Option<Trap> {
        match TRAPPED.replace(0) {
            0 => None,
            code => Some(Trap::from_code(code, TRAPPED_ERRNO.get())),
        }
    }
}

/// REGRANT on the thread's file, counted when granted (ENOENT without a file).
/// Async-signal-safe: one ioctl and thread-local `Cell`s.
#[inline]
fn regrant_raw() -> Regrant {
    let fd = GRANT_FD.get();
    if fd < 0 {
        return Regrant::Refused(libc::ENOENT);
    }
    // SAFETY: `fd` is the thread's open file of the device; REGRANT takes no argument.
    let rc = unsafe { libc::ioctl(fd, uapi::IOC_REGRANT as _) };
    if rc < 0 {
        return Regrant::Refused(last_errno());
    }
    REGRANTS.set(REGRANTS.get().wrapping_add(1));
    if rc == uapi::REGRANT_LOST {
        Regrant::Lost
    } else {
        Regrant::Kept
    }
}

/// The errno of the last failed libc call on this thread.
fn last_errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// The SIGILL handler (aarch64: the only architecture whose per-thread grant perf
/// revokes under a running thread). Its rules are the crate doc's "SIGILL" section.
#[cfg(target_arch = "aarch64")]
mod handler {
    use core::sync::atomic::{AtomicI32, Ordering};
    use std::sync::{Once, OnceLock};

    use crate::direct::grant::mrs::{decode_pmu_mrs, PMUSERENR_EN};
    use crate::direct::grant::thread::{
        regrant_raw, Regrant, Trap, GRANTED, GRANT_FD, TRAPPED, TRAPPED_ERRNO,
    };
    use crate::direct::grant::uapi;

    /// The action SIGILL had before ours: any SIGILL that is not ours goes there.
    static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();
    /// The process that installed the handler: a child after fork(2) holds no grant
    /// and its SIGILL goes to the previous action.
    static OWNER: AtomicI32 = AtomicI32::new(0);
    static INSTALL: Once = Once::new();

    pub(super) fn install() {
        INSTALL.call_once(|| {
            // SAFETY: sigaction with a null new action only reads the current one
            // into `old`, a valid, zeroed struct.
            let mut old: libc::sigaction = unsafe { core::mem::zeroed() };
            // SAFETY: as above.
            if unsafe { libc::sigaction(libc::SIGILL, core::ptr::null(), &mut old) } != 0 {
                return;
            }
            let _ = PREVIOUS.set(old);
            // SAFETY: getpid has no preconditions.
            OWNER.store(unsafe { libc::getpid() }, Ordering::Relaxed);
            // SAFETY: a zeroed sigaction is a valid start; the fields are set below.
            let mut new: libc::sigaction = unsafe { core::mem::zeroed() };
            let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                on_sigill;
            new.sa_sigaction = handler as *const () as usize;
            new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            // SAFETY: `new.sa_mask` is a valid sigset_t to initialise.
            unsafe { libc::sigemptyset(&mut new.sa_mask) };
            // SAFETY: `new` is a complete action whose handler has the SA_SIGINFO
            // signature; the old action is already kept.
            unsafe { libc::sigaction(libc::SIGILL, &new, core::ptr::null_mut()) };
        });
    }

    /// A SIGILL that is not ours goes to the action before ours: a handler of the
    /// program's is called with the same arguments (and ours stays installed); the
    /// default action (or SIG_IGN, which Linux overrides for a trap) is put back, and
    /// returning re-executes the instruction, which raises SIGILL again under it.
    fn pass_on(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
        let Some(previous) = PREVIOUS.get() else {
            return;
        };
        let action = previous.sa_sigaction;
        if action == libc::SIG_DFL || action == libc::SIG_IGN {
            // SAFETY: `previous` is the action sigaction gave us; sigaction is
            // async-signal-safe.
            unsafe { libc::sigaction(libc::SIGILL, previous, core::ptr::null_mut()) };
        } else if previous.sa_flags & libc::SA_SIGINFO != 0 {
            // SAFETY: with SA_SIGINFO the program installed a three-argument handler
            // at this address (sigaction(2)); it gets what the kernel gave us.
            let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                unsafe { core::mem::transmute(action) };
            handler(signal, info, context);
        } else {
            // SAFETY: without SA_SIGINFO the program installed a one-argument handler.
            let handler: extern "C" fn(libc::c_int) = unsafe { core::mem::transmute(action) };
            handler(signal);
        }
    }

    extern "C" fn on_sigill(
        signal: libc::c_int,
        info: *mut libc::siginfo_t,
        context: *mut libc::c_void,
    ) {
        // SAFETY: __errno_location gives this thread's errno, saved and restored
        // around the ioctl so that the interrupted code sees its own.
        let errno_slot = unsafe { libc::__errno_location() };
        // SAFETY: as above.
        let saved_errno = unsafe { *errno_slot };
        // SAFETY: getpid is async-signal-safe.
        if unsafe { libc::getpid() } != OWNER.load(Ordering::Relaxed) || context.is_null() {
            return pass_on(signal, info, context);
        }
        // SAFETY: with SA_SIGINFO the kernel passes the interrupted context as a
        // ucontext_t (sigaction(2)), valid for the handler's duration.
        let uc = unsafe { &mut *(context as *mut libc::ucontext_t) };
        let pc = uc.uc_mcontext.pc;
        if pc % 4 != 0 {
            return pass_on(signal, info, context);
        }
        // SAFETY: SIGILL's pc is the address of the instruction that was fetched
        // and found undefined: mapped and readable (the process's text; an
        // execute-only mapping would not reach here readable, see the crate doc).
        let insn = unsafe { core::ptr::read_volatile(pc as *const u32) };
        let Some(read) = decode_pmu_mrs(insn) else {
            return pass_on(signal, info, context);
        };
        // The read grant repairs what ER and CR allow; the programming grant (EN) any
        // access of a PMU register.
        let needed = read.permitted_by();
        let programs = GRANTED.get() & uapi::GRANTED_PROGRAM != 0;
        if needed == PMUSERENR_EN && !programs {
            return pass_on(signal, info, context);
        }
        let cause = if GRANT_FD.get() < 0 {
            Trap::NO_GRANT
        } else {
            match regrant_raw() {
                regrant @ (Regrant::Kept | Regrant::Lost) => {
                    // SAFETY: PMUSERENR_EL0 is readable at EL0 whatever it holds.
                    let now = unsafe { pmu_armv8::asm::read_pmuserenr_el0() };
                    if now & needed != 0 {
                        if regrant == Regrant::Lost && TRAPPED.get() == 0 {
                            // The read is made, and the region says its count is short.
                            TRAPPED.set(Trap::LOST);
                        }
                        // SAFETY: restores this thread's errno (above).
                        unsafe { *errno_slot = saved_errno };
                        // Return: the read runs again, granted.
                        return;
                    }
                    Trap::INEFFECTIVE
                }
                Regrant::Refused(errno) => {
                    TRAPPED_ERRNO.set(errno);
                    Trap::REFUSED
                }
            }
        };
        TRAPPED.set(cause);
        if read.rt < 31 && !read.write {
            uc.uc_mcontext.regs[usize::from(read.rt)] = 0;
        }
        uc.uc_mcontext.pc = pc + 4;
        // SAFETY: restores this thread's errno (above).
        unsafe { *errno_slot = saved_errno };
    }
}

/// No per-thread grant is revoked under a running thread here: nothing to install.
#[cfg(not(target_arch = "aarch64"))]
mod handler {
    pub(super) fn install() {}
}

#[cfg(all(test, target_arch = "aarch64"))]
mod tests {
    use crate::direct::grant::thread::*;

    /// A PMU counter read of a thread without the grant, where EL0 may not read it
    /// (the Arm ARM's EC 0x18 trap; qemu-user delivers it as SIGILL, as Linux does):
    /// the handler steps over it, writes 0 and marks the thread; with a file that
    /// refuses REGRANT (/dev/null: ENOTTY, as a module of another version would) it is
    /// marked with that refusal; errno survives the handler; another undefined
    /// instruction (`udf`, in a forked child) goes to the previous action and kills
    /// the child with SIGILL. Runs under qemu-user:
    /// `CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUNNER=qemu-aarch64 cargo test -p
    /// pmu-linux --lib --target aarch64-unknown-linux-musl`.
    #[test]
    fn the_handler_flags_a_counter_read_and_passes_on_the_rest() {
        handler::install();
        assert_eq!(GRANT_FD.get(), -1);
        assert_eq!(take_trap(), None);
        // SAFETY: traps without the grant; the handler steps over it.
        let value = unsafe { pmu_armv8::asm::read_pmccntr_el0() };
        assert_eq!((value, take_trap()), (0, Some(Trap::NoGrant)));
        assert_eq!(take_trap(), None, "take_trap clears the mark");

        // SAFETY: a NUL-terminated path; the descriptor is closed below.
        let null = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
        assert!(null >= 0);
        GRANT_FD.set(null);
        // SAFETY: this thread's errno, set to see that the handler keeps it.
        unsafe { *libc::__errno_location() = libc::EDOM };
        // SAFETY: as above; the handler's REGRANT on /dev/null fails with ENOTTY.
        let value = unsafe { pmu_armv8::asm::read_pmccntr_el0() };
        // SAFETY: this thread's errno.
        let errno = unsafe { *libc::__errno_location() };
        GRANT_FD.set(-1);
        // SAFETY: our descriptor, closed once.
        unsafe { libc::close(null) };
        assert_eq!(
            (value, take_trap(), errno),
            (0, Some(Trap::RegrantRefused(libc::ENOTTY)), libc::EDOM)
        );
        // SAFETY: the child runs one undefined instruction (`udf`, SIGILL) with the
        // handler inherited, then _exit; the parent reaps it.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            // SAFETY: as above; _exit runs nothing of the parent's.
            unsafe {
                core::arch::asm!("udf #0");
                libc::_exit(0);
            }
        }
        let mut status = 0;
        // SAFETY: `pid` is our child; `status` a valid int.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(
            libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGILL,
            "{status:#x}"
        );
    }
}
