//! The CPU the calling thread runs on for the cost of one load: the `cpu_id` field of
//! the thread's rseq area (restartable sequences, Linux ≥ 4.18; include/uapi/linux/
//! rseq.h).
//!
//! Once a thread has registered an area with the `rseq` system call, the kernel
//! rewrites its `cpu_id` before the thread returns to user space after it was
//! preempted or migrated (kernel/rseq.c `__rseq_handle_notify_resume`, armed by
//! `rseq_migrate` and `rseq_preempt` in the scheduler): whenever the thread executes,
//! `cpu_id` is the CPU it executes on. A region reads it at its start and at its stop
//! instead of calling `sched_getcpu()` twice.
//!
//! Which area: one thread may register one. glibc ≥ 2.35 registers its own for every
//! thread and exports where it lies (`__rseq_offset` from the thread pointer,
//! `__rseq_size`); then that one is read. musl registers none: then this module
//! registers one per thread, on first use, and never frees it (32 bytes per thread that
//! measures: the kernel writes it until the thread exits, and no destructor order
//! could unregister it safely before every region of the thread is done).
//! Where neither works (a kernel without rseq, qemu-user: `ENOSYS`; another library's
//! area without glibc's exports: `EBUSY`), [`ThreadCpu::this_thread`] says why and the
//! caller uses `sched_getcpu()`.

use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr::NonNull;

use crate::error::Errno;
use crate::sys;

/// `struct rseq` as Linux 4.18 defined it (the 32-byte original size every kernel
/// with rseq accepts), aligned as the ABI requires.
#[repr(C, align(32))]
#[derive(Debug, Default)]
pub(crate) struct RseqArea {
    cpu_id_start: u32,
    cpu_id: u32,
    rseq_cs: u64,
    flags: u32,
    _padding: [u32; 3],
}

/// The size passed to `rseq` (`ORIG_RSEQ_SIZE` in kernel/rseq.c).
pub(crate) const RSEQ_AREA_SIZE: u32 = 32;

/// Byte offset of `cpu_id` in `struct rseq`.
const CPU_ID_OFFSET: usize = 4;

/// Who registered the area a [`ThreadCpu`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RseqOwner {
    /// The C library (glibc ≥ 2.35: `__rseq_offset`, `__rseq_size`).
    CLibrary,
    /// This module (musl, or glibc with `glibc.pthread.rseq=0`).
    ThisLibrary,
}

/// The calling thread's rseq `cpu_id`.
///
/// Neither `Send` nor `Sync`: the area is the registering thread's, and only that
/// thread may read it (include/uapi/linux/rseq.h).
#[derive(Clone, Copy, Debug)]
pub struct ThreadCpu {
    cpu_id: NonNull<u32>,
    // Read by the tests, which check whose area the thread uses.
    #[cfg_attr(not(test), allow(dead_code))]
    owner: RseqOwner,
    _this_thread: PhantomData<*const ()>,
}

/// [`ThreadCpu::current`] without the owner: `Option<CpuId>` is one pointer. (For the
/// perf sessions' syscall-free regions: x86_64 and aarch64.)
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[derive(Clone, Copy, Debug)]
pub(crate) struct CpuId {
    cpu_id: NonNull<u32>,
    _this_thread: PhantomData<*const ()>,
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
impl CpuId {
    /// As [`ThreadCpu::current`].
    #[inline(always)]
    pub(crate) fn current(self) -> u32 {
        // SAFETY: as in `ThreadCpu::current`: made only from a `ThreadCpu` of this
        // thread (neither type can leave it), whose area outlives the thread.
        unsafe { self.cpu_id.read_volatile() }
    }
}

thread_local! {
    /// The outcome of the first [`ThreadCpu::this_thread`] on this thread.
    static THIS_THREAD: Cell<Option<Result<ThreadCpu, Errno>>> = const { Cell::new(None) };
}

impl ThreadCpu {
    /// The calling thread's area: glibc's if glibc registered one, else one registered
    /// now (once per thread).
    ///
    /// # Errors
    /// The `rseq` system call's error: `ENOSYS` (no rseq in this kernel or emulator),
    /// `EBUSY` (another library registered an area this module cannot find).
    pub fn this_thread() -> Result<Self, Errno> {
        THIS_THREAD.with(|cached| {
            if let Some(outcome) = cached.get() {
                return outcome;
            }
            let outcome = Self::find_or_register();
            cached.set(Some(outcome));
            outcome
        })
    }

    fn find_or_register() -> Result<Self, Errno> {
        if let Some(area) = sys::c_library_rseq_area() {
            // SAFETY: glibc's area of this thread, registered for the thread's whole
            // life; `cpu_id` is an aligned u32 inside it.
            let cpu = unsafe { area.byte_add(CPU_ID_OFFSET).cast::<u32>() };
            let this = Self {
                cpu_id: cpu,
                owner: RseqOwner::CLibrary,
                _this_thread: PhantomData,
            };
            // RSEQ_CPU_ID_UNINITIALIZED (-1) or _REGISTRATION_FAILED (-2): glibc did
            // not register (tunable off, or the kernel refused); try our own.
            if this.registered() {
                return Ok(this);
            }
        }
        // Never freed: see the module documentation.
        let area = NonNull::from(Box::leak(Box::new(RseqArea::default())));
        sys::rseq_register(area)?;
        // SAFETY: `cpu_id` lies inside the leaked, live area.
        let cpu = unsafe { area.byte_add(CPU_ID_OFFSET).cast::<u32>() };
        Ok(Self {
            cpu_id: cpu,
            owner: RseqOwner::ThisLibrary,
            _this_thread: PhantomData,
        })
    }

    /// The CPU the thread runs on: one load.
    #[inline(always)]
    pub fn current(self) -> u32 {
        // SAFETY: the area stays registered and allocated for the thread's life
        // (glibc's until thread exit, ours forever), and `self` cannot leave the thread.
        // Volatile: the kernel writes it behind the compiler's back (single-copy atomic
        // 32-bit store, rseq.h).
        unsafe { self.cpu_id.read_volatile() }
    }

    /// The `cpu_id` reader alone (a pointer: a syscall-free region tests it for presence with
    /// one compare).
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    pub(crate) fn cpu_id(self) -> CpuId {
        CpuId {
            cpu_id: self.cpu_id,
            _this_thread: PhantomData,
        }
    }

    /// Who registered the area.
    #[cfg(test)]
    pub(crate) fn owner(self) -> RseqOwner {
        self.owner
    }

    /// Whether the kernel filled `cpu_id` (the special values are ≥ 2^31).
    fn registered(self) -> bool {
        self.current() < 1 << 31
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::sched::{allowed_cpus, current_cpu, pin_to, set_allowed_cpus};

    /// The rseq area the crate reads, or why there is none: only a missing rseq
    /// (ENOSYS: qemu-user, a kernel built without CONFIG_RSEQ) is acceptable.
    fn thread_cpu() -> Option<ThreadCpu> {
        match ThreadCpu::this_thread() {
            Ok(cpu) => Some(cpu),
            Err(errno) => {
                assert_eq!(errno.0, libc::ENOSYS, "rseq exists but was not usable");
                None
            }
        }
    }

    /// include/uapi/linux/rseq.h: `struct rseq` is 32 bytes (ORIG_RSEQ_SIZE) with
    /// `cpu_id` at byte 4, aligned to 32.
    #[test]
    fn area_layout() {
        assert_eq!(size_of::<RseqArea>(), RSEQ_AREA_SIZE as usize);
        assert_eq!(align_of::<RseqArea>(), 32);
        assert_eq!(std::mem::offset_of!(RseqArea, cpu_id), CPU_ID_OFFSET);
    }

    /// On every CPU the thread may use, rseq's cpu_id and sched_getcpu() agree; moving
    /// the thread (sched_setaffinity migrates it before returning) flips cpu_id.
    #[test]
    fn rseq_cpu_agrees_with_sched_getcpu_and_follows_a_migration() {
        let Some(cpu) = thread_cpu() else { return };
        let cpus = allowed_cpus().unwrap();
        for &c in &cpus {
            let _pin = pin_to(c).unwrap();
            assert_eq!(cpu.current(), c as u32, "rseq on CPU {c}");
            assert_eq!(current_cpu(), Some(c as u32));
        }
        assert!(
            cpus.len() >= 2,
            "the migration check needs two CPUs: {cpus:?}"
        );
        let pin = pin_to(cpus[0]).unwrap();
        let before = cpu.current();
        set_allowed_cpus(&[cpus[1]]).unwrap();
        let after = cpu.current();
        drop(pin);
        assert_eq!((before, after), (cpus[0] as u32, cpus[1] as u32));
    }

    /// Every thread gets its own area (the kernel allows one per thread), cached after
    /// the first call; glibc's is used where glibc registered one.
    #[test]
    fn one_area_per_thread() {
        let Some(main) = thread_cpu() else { return };
        assert_eq!(ThreadCpu::this_thread().unwrap().cpu_id, main.cpu_id);
        let other = std::thread::spawn(|| {
            let cpu = ThreadCpu::this_thread().unwrap();
            (cpu.cpu_id.as_ptr() as usize, cpu.owner(), cpu.current())
        })
        .join()
        .unwrap();
        assert_ne!(other.0, main.cpu_id.as_ptr() as usize);
        assert_eq!(other.1, main.owner());
        assert!(other.2 < 1 << 31);
        if sys::c_library_rseq_area().is_some() {
            assert_eq!(main.owner(), RseqOwner::CLibrary, "glibc registered one");
        } else {
            assert_eq!(main.owner(), RseqOwner::ThisLibrary, "no C library area");
        }
    }
}
