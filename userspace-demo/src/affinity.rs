//! The CPUs this thread may run on, and moving it: what `hazards` does to force a
//! migration inside a region (sched_getaffinity(2), sched_setaffinity(2)). A meter
//! pins its own thread ([`pmu_linux::MeterBuilder::cpu`]); moving the thread away
//! from under it is the demo's doing, not the library's.
// The ARMv6 build runs on one CPU (the ARM1176): nothing to move there.
#![cfg_attr(all(target_arch = "arm", not(target_feature = "v7")), allow(dead_code))]

use std::io;

use pmu_linux::error::Op;

/// An affinity call's error as pmu-linux states it ([`Op::Affinity`]).
fn failed(source: io::Error) -> pmu_linux::Error {
    pmu_linux::Error::Io {
        op: Op::Affinity,
        source,
    }
}

/// The CPUs the calling thread may run on, ascending.
///
/// # Errors
/// sched_getaffinity's, as [`Op::Affinity`].
pub fn allowed_cpus() -> pmu_linux::Result<Vec<usize>> {
    // SAFETY: an all-zero cpu_set_t is a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a cpu_set_t of the size passed; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    if rc != 0 {
        return Err(failed(io::Error::last_os_error()));
    }
    Ok((0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` is below CPU_SETSIZE, the set's size in CPUs.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect())
}

/// Restricts the calling thread to `cpus` (the kernel moves it at once if needed).
///
/// # Errors
/// sched_setaffinity's (EINVAL for a set with no CPU this thread may use); EINVAL for
/// a CPU number beyond CPU_SETSIZE; both as [`Op::Affinity`].
pub fn set_allowed_cpus(cpus: &[usize]) -> pmu_linux::Result<()> {
    // SAFETY: an all-zero cpu_set_t is a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(failed(io::Error::from_raw_os_error(libc::EINVAL)));
        }
        // SAFETY: `cpu` is below CPU_SETSIZE (checked above).
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: `set` is a cpu_set_t of the size passed; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(failed(io::Error::last_os_error()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The thread may run on at least the CPU it runs on now (sched_getcpu(3)), and
    /// setting the same set back changes nothing; a CPU beyond CPU_SETSIZE is EINVAL.
    #[test]
    fn reads_and_sets_this_threads_cpus() {
        let cpus = allowed_cpus().unwrap();
        // SAFETY: sched_getcpu has no preconditions.
        let here = unsafe { libc::sched_getcpu() };
        assert!(cpus.contains(&(here as usize)), "{here} not in {cpus:?}");
        set_allowed_cpus(&cpus).unwrap();
        assert_eq!(allowed_cpus().unwrap(), cpus);
        let beyond = set_allowed_cpus(&[libc::CPU_SETSIZE as usize]).unwrap_err();
        assert!(
            matches!(&beyond, pmu_linux::Error::Io { op: Op::Affinity, source }
                if source.raw_os_error() == Some(libc::EINVAL)),
            "{beyond:?}"
        );
    }
}
