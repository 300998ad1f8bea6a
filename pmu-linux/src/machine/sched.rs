//! The thread's scheduling state that region hazards are derived from, and pinning.
//!
//! - [`thread_switches`]: `getrusage(RUSAGE_THREAD)` `ru_nvcsw`/`ru_nivcsw`, the
//!   kernel's count of voluntary and involuntary context switches of this thread
//!   (incremented in `__schedule` whenever the thread is switched out);
//! - [`current_cpu`], from `sched_getcpu`;
//! - [`pin_to`]: `sched_setaffinity` to one CPU, undone when the guard drops.

use std::marker::PhantomData;

use crate::error::{Error, Op, Result};
use crate::sys;
pub use crate::sys::SwitchCounts;

/// The calling thread's context-switch counts so far.
///
/// # Errors
/// [`Error::Io`] with [`Op::Rusage`].
pub fn thread_switches() -> Result<SwitchCounts> {
    sys::thread_switches().map_err(|errno| crate::error::Error::syscall(Op::Rusage, errno))
}

/// The CPU the calling thread runs on, `None` if the kernel cannot tell.
pub fn current_cpu() -> Option<u32> {
    sys::current_cpu()
}

/// The CPUs the calling thread may run on.
///
/// # Errors
/// [`Error::Io`] with [`Op::Affinity`].
pub fn allowed_cpus() -> Result<Vec<usize>> {
    sys::affinity().map_err(|errno| crate::error::Error::syscall(Op::Affinity, errno))
}

/// Restricts the calling thread to `cpus` (the kernel moves it at once if needed).
///
/// # Errors
/// [`Error::Io`] with [`Op::Affinity`].
pub fn set_allowed_cpus(cpus: &[usize]) -> Result<()> {
    sys::set_affinity(cpus).map_err(|errno| crate::error::Error::syscall(Op::Affinity, errno))
}

/// Pins the calling thread to `cpu` until the guard drops, which restores the CPUs
/// allowed before.
///
/// # Errors
/// [`crate::error::Unsupported::Cpu`] when `cpu` is not among the thread's allowed CPUs;
/// [`Error::Io`].
pub fn pin_to(cpu: usize) -> Result<PinGuard> {
    let previous = allowed_cpus()?;
    if !previous.contains(&cpu) {
        return Err(Error::Unsupported(crate::error::Unsupported::Cpu { cpu }));
    }
    set_allowed_cpus(&[cpu])?;
    Ok(PinGuard {
        previous,
        _this_thread: PhantomData,
    })
}

/// Keeps the thread on one CPU; restores the previous affinity when dropped.
///
/// Neither `Send` nor `Sync`: affinity belongs to the thread that set it.
#[derive(Debug)]
#[must_use = "the thread is unpinned when the guard drops"]
pub struct PinGuard {
    previous: Vec<usize>,
    _this_thread: PhantomData<*const ()>,
}

impl Drop for PinGuard {
    fn drop(&mut self) {
        // Best effort: the set was valid when read, and a failure leaves the thread
        // pinned, which is safe.
        let _ = sys::set_affinity(&self.previous);
    }
}

/// Where a region's thread evidence comes from: the calling thread's context-switch
/// counts and the CPU it runs on.
///
/// A region reads it outside its counter window, at both edges, and its verdict
/// (`CONTEXT_SWITCH`, `CPU_MIGRATION`) is derived from the two stamps. Production
/// regions use [`Kernel`]; the host tests give the regions a scripted source, so that
/// their verdicts depend on what the test says happened and not on the machine's load.
pub trait ThreadSource {
    /// Whether [`ThreadSource::cpu`] comes from the thread's rseq area (one load), which
    /// the evidence reports ([`crate::verdict::Evidence::cpu_from_rseq`]).
    const RSEQ: bool = false;
    /// The thread's context-switch counts so far.
    ///
    /// # Errors
    /// The source could not tell ([`Kernel`]: `getrusage` failed).
    fn switches(&self) -> Result<SwitchCounts>;
    /// The CPU the thread runs on, `None` if the source cannot tell.
    fn cpu(&self) -> Option<u32>;
}

/// The running kernel: `getrusage(RUSAGE_THREAD)` and `sched_getcpu()` of the calling
/// thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Kernel;

impl ThreadSource for Kernel {
    #[inline(always)]
    fn switches(&self) -> Result<SwitchCounts> {
        thread_switches()
    }
    #[inline(always)]
    fn cpu(&self) -> Option<u32> {
        current_cpu()
    }
}

impl<T: ThreadSource + ?Sized> ThreadSource for &T {
    const RSEQ: bool = T::RSEQ;
    #[inline(always)]
    fn switches(&self) -> Result<SwitchCounts> {
        (**self).switches()
    }
    #[inline(always)]
    fn cpu(&self) -> Option<u32> {
        (**self).cpu()
    }
}

/// The thread-level state taken outside a region, before the first and after the last
/// counter read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ThreadStamp {
    /// getrusage's switch counts; `None` where they were not taken (a perf region whose
    /// every read went through the pages: their `lock` sees every switch).
    pub(crate) switches: Option<SwitchCounts>,
    pub(crate) cpu: Option<u32>,
    /// `cpu` came from the rseq area, not `sched_getcpu()`.
    pub(crate) cpu_from_rseq: bool,
}

// The perf session's getrusage edges (64-bit only).
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
impl ThreadStamp {
    /// Switch counts, then the CPU (at a region's start).
    #[inline(always)]
    pub(crate) fn before(thread: &impl ThreadSource) -> Result<Self> {
        let switches = thread.switches()?;
        Ok(Self {
            switches: Some(switches),
            cpu: thread.cpu(),
            cpu_from_rseq: false,
        })
    }

    /// The CPU, then the switch counts (at a region's end).
    #[inline(always)]
    pub(crate) fn after(thread: &impl ThreadSource) -> Result<Self> {
        let cpu = thread.cpu();
        Ok(Self {
            switches: Some(thread.switches()?),
            cpu,
            cpu_from_rseq: false,
        })
    }
}

/// A scripted [`ThreadSource`] for the host tests: switch counts and the CPU are what
/// the test sets, never the machine's.
/// The CPU from the thread's rseq area (`cpu_id`, [`crate::machine::ThreadCpu`]; x86_64
/// and aarch64, the architectures whose rseq ABI this crate reads).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[derive(Clone, Copy, Debug)]
pub struct RseqCpu(crate::machine::rseq::CpuId);

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
impl RseqCpu {
    /// The calling thread's area (registered on first use).
    ///
    /// # Errors
    /// [`crate::Error::Io`] with [`crate::error::Op::Rseq`]: no area (ENOSYS: a kernel
    /// without CONFIG_RSEQ; EBUSY: one another library registered and this crate
    /// cannot find). Use [`Kernel`](crate::machine::Kernel) there.
    pub fn this_thread() -> Result<Self> {
        crate::machine::rseq::ThreadCpu::this_thread()
            .map(|c| Self(c.cpu_id()))
            .map_err(|errno| crate::error::Error::syscall(crate::error::Op::Rseq, errno))
    }
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
impl ThreadSource for RseqCpu {
    const RSEQ: bool = true;
    #[inline(always)]
    fn cpu(&self) -> Option<u32> {
        Some(self.0.current())
    }
    #[inline(always)]
    fn switches(&self) -> Result<SwitchCounts> {
        thread_switches()
    }
}

#[cfg(test)]
pub(crate) mod fake {
    use std::cell::Cell;

    use super::{SwitchCounts, ThreadSource};
    use crate::error::Result;

    /// Switch counts and a CPU that change only when the test says so. Shared by
    /// reference (`&FakeThread` is a source too), so a test can script a switch or a
    /// migration inside the region it measures.
    #[derive(Debug)]
    pub(crate) struct FakeThread {
        switches: Cell<SwitchCounts>,
        cpu: Cell<Option<u32>>,
    }

    impl Default for FakeThread {
        /// On CPU 0, no switch yet.
        fn default() -> Self {
            Self {
                switches: Cell::new(SwitchCounts::default()),
                cpu: Cell::new(Some(0)),
            }
        }
    }

    impl FakeThread {
        /// The thread gives up the CPU once (a sleep: `ru_nvcsw` + 1).
        pub(crate) fn switch_voluntarily(&self) {
            let mut s = self.switches.get();
            s.voluntary += 1;
            self.switches.set(s);
        }
        /// The scheduler takes the CPU away once (`ru_nivcsw` + 1).
        pub(crate) fn preempt(&self) {
            let mut s = self.switches.get();
            s.involuntary += 1;
            self.switches.set(s);
        }
        /// The thread moves to `cpu` (a migration is a switch out and in: + 1 involuntary).
        pub(crate) fn migrate_to(&self, cpu: u32) {
            self.preempt();
            self.cpu.set(Some(cpu));
        }
    }

    impl ThreadSource for FakeThread {
        fn switches(&self) -> Result<SwitchCounts> {
            Ok(self.switches.get())
        }
        fn cpu(&self) -> Option<u32> {
            self.cpu.get()
        }
    }
}

/// Where a syscall-free perf region takes the thread's CPU from: the rseq area (one load), or
/// `sched_getcpu()` where the thread has none (a kernel without CONFIG_RSEQ: one
/// `getcpu` system call on arm64, the vDSO on x86_64). Only the perf backend's
/// sessions have syscall-free regions (its architectures).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[derive(Clone, Copy, Debug)]
pub(crate) enum CpuSource {
    Rseq(crate::machine::rseq::ThreadCpu),
    SchedGetcpu,
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
impl CpuSource {
    /// The calling thread's best source.
    pub(crate) fn this_thread() -> Self {
        match crate::machine::rseq::ThreadCpu::this_thread() {
            Ok(cpu) => Self::Rseq(cpu),
            Err(_) => Self::SchedGetcpu,
        }
    }

    /// Only the CPU (a syscall-free perf region's edges: no switch counts).
    #[inline(always)]
    pub(crate) fn stamp(self) -> ThreadStamp {
        match self {
            Self::Rseq(cpu) => ThreadStamp {
                switches: None,
                cpu: Some(cpu.current()),
                cpu_from_rseq: true,
            },
            Self::SchedGetcpu => ThreadStamp {
                switches: None,
                cpu: current_cpu(),
                cpu_from_rseq: false,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// sched_setaffinity(2): a thread whose current CPU leaves its mask is migrated
    /// before the call returns.
    #[test]
    fn pinning_moves_the_thread_and_the_guard_restores() {
        let before = allowed_cpus().unwrap();
        let target = *before.last().unwrap();
        {
            let _guard = pin_to(target).unwrap();
            assert_eq!(allowed_cpus().unwrap(), [target]);
            assert_eq!(current_cpu(), Some(target as u32));
        }
        assert_eq!(allowed_cpus().unwrap(), before);
        assert!(matches!(
            pin_to(100_000).unwrap_err(),
            Error::Unsupported(crate::error::Unsupported::Cpu { cpu: 100_000 })
        ));
    }

    /// Setting the thread's own CPUs back changes nothing; a CPU beyond a `cpu_set_t`'s
    /// bits (CPU_SETSIZE, sched_setaffinity(2)) is EINVAL, as [`Op::Affinity`], before
    /// any system call. (pmu-demo's `hazards` moves its thread with these two.)
    #[test]
    fn allowed_cpus_round_trip_and_a_cpu_beyond_the_set() {
        let cpus = allowed_cpus().unwrap();
        set_allowed_cpus(&cpus).unwrap();
        assert_eq!(allowed_cpus().unwrap(), cpus);
        let beyond = set_allowed_cpus(&[libc::CPU_SETSIZE as usize]).unwrap_err();
        assert!(
            matches!(&beyond, Error::Io { op: Op::Affinity, source }
                if source.raw_os_error() == Some(libc::EINVAL)),
            "{beyond:?}"
        );
    }
}
