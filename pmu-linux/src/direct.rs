//! The direct backend: user space programs and reads the PMU itself, after the kernel
//! module `kmod-enable-user` opened the registers to user mode (ARMv8: PMUSERENR_EL0.EN,
//! or its read-only grant; AArch32: PMUSERENR.EN; ARM1176: SUNAVCR.V, ARM1176JZF-S TRM
//! 3.2.50).
//!
//! - [`probe`] tries one register access in a forked child first (the child inherits
//!   the CPU pinning): if user access is off, the instruction traps and the child dies
//!   of SIGILL, which becomes [`crate::error::AccessError::NotEnabled`] ("user access to the PMU is
//!   not enabled: load kmod-enable-user"), never a crash of the caller;
//! - the constructors (`take_armv8`, `take_pl0`, `take_arm1176`) pin the thread to one
//!   CPU (the registers and the enable bit are per CPU), probe, and hand back the
//!   architecture crate's driver (`El0Pmu`, `Pl0Pmu`, `Arm1176Pmu<Cp15>`);
//! - [`allocate`] turns event names into counters of a `pmu_core::CounterPool`
//!   ([`OwnedCounters`]: the same, owning the PMU);
//! - [`DirectRegion`] measures regions on them, one type for every architecture
//!   ([`region`]'s table: the counters' reads, the grant check, the sentinel, the
//!   overflow flags and the CPU are its type parameters): at each edge it reads the
//!   grant first (PMUSERENR_EL0 and PMUSERENR are readable in user mode whatever they
//!   hold, so a revoked grant is an error instead of SIGILL), the CPU, the kernel-entry
//!   sentinel and the counters, and judges overflow from the flags (or end < start),
//!   migration from the CPU, kernel entries (switches included) from the sentinel;
//!   without a sentinel (the ARM1176, or no counter left for one), switches from
//!   `getrusage` at both edges. The meter's backends are such regions; a program that
//!   programs the PMU itself builds one by hand over its pool's counters.
//!
//! x86 has no direct backend: its counters are programmed with WRMSR, which needs ring
//! 0 ([`crate::error::DirectUnsupported::X86NeedsRing0`]); perf gives rdpmc there.

use crate::error::{Error, Op, Result};
use crate::meter::choose::Opened;
use crate::meter::MeterBuilder;
use crate::sys::{self, ChildEnd};

mod alloc;
pub mod grant;
pub mod region;

#[cfg(any(target_arch = "arm", test))]
pub mod arm1176;
#[cfg(target_arch = "aarch64")]
pub mod armv8;
#[cfg(test)]
mod tests;

pub use alloc::{allocate, OwnedCounters, MODULE_LAYOUT};
#[cfg(target_arch = "aarch64")]
pub use armv8::{granted_region, pool_region, programmed_region};
#[cfg(target_arch = "aarch64")]
pub use region::Flags;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub use region::RseqCpu;
pub use region::{
    CounterSet, DefaultCpu, DirectRegion, NoFlags, NoSentinel, OverflowFlags, SentinelRead,
    Watching, SENTINEL_FILTER,
};

#[cfg(all(target_arch = "arm", target_feature = "v7"))]
pub mod aarch32;

/// Whether the direct backend has a read-only grant here (ARMv8: PMUSERENR_EL0.ER or
/// ER|CR without EN), which the meter's ladder tries where perf cannot read.
pub(crate) const READ_ONLY_GRANT: bool = cfg!(target_arch = "aarch64");

/// The meter's direct-backend settings.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Settings {
    /// The ARM1176's cycle counter divider (`MeterBuilder::cycle_divider`).
    #[cfg(target_arch = "arm")]
    pub(crate) divider: pmu_armv6::CycleDivider,
}

/// The direct backend for `builder`'s events: programming the PMU where allowed and
/// asked for, else the module's read-only grant (ARMv8); ARMv7 or the ARM1176 on
/// 32-bit ARM.
///
/// # Errors
/// The architecture's open errors; [`crate::error::Unsupported::Direct`] on x86.
pub(crate) fn open(builder: &MeterBuilder) -> Result<Opened> {
    // Nothing to set outside the ARM1176.
    #[cfg(not(target_arch = "arm"))]
    let Settings {} = builder.direct;
    #[cfg(target_arch = "aarch64")]
    {
        armv8::open(builder)
    }
    #[cfg(target_arch = "arm")]
    {
        #[cfg(target_feature = "v7")]
        if aarch32::is_armv7_cpu() {
            return aarch32::open(builder);
        }
        arm1176::open(builder)
    }
    #[cfg(not(any(target_arch = "aarch64", target_arch = "arm")))]
    {
        let _ = builder;
        probe()?;
        Err(Error::Unsupported(crate::error::Unsupported::Direct {
            reason: crate::error::DirectUnsupported::Architecture,
        }))
    }
}

/// The module's read-only grant ([`READ_ONLY_GRANT`]).
///
/// # Errors
/// As [`open`].
pub(crate) fn open_read_only_grant(builder: &MeterBuilder) -> Result<Opened> {
    #[cfg(target_arch = "aarch64")]
    {
        armv8::open_granted(builder)
    }
    #[cfg(not(target_arch = "aarch64"))]
    {
        let _ = builder;
        probe()?;
        Err(Error::Unsupported(crate::error::Unsupported::Direct {
            reason: crate::error::DirectUnsupported::Architecture,
        }))
    }
}

/// A direct backend's region over the user's `events`, under `grant`, pinned.
#[cfg(any(target_arch = "aarch64", target_arch = "arm"))]
fn opened(
    meter: Box<dyn crate::backend::Backend>,
    events: usize,
    grant: crate::meter::Grant,
    account: String,
    pin: crate::sched::PinGuard,
) -> Opened {
    Opened {
        names: meter.names(),
        inner: crate::meter::Inner::Other(meter),
        slots: (0..events).map(Some).collect(),
        kind: crate::meter::BackendKind::Direct,
        reads: crate::meter::Reads::OneInstruction,
        grant: Some(grant),
        account,
        pin: Some(pin),
    }
}

/// The CPU the direct backend uses: the one given, else the one the thread is on
/// (the ARM1176's is CPU 0: the Raspberry Pi 1 and Zero have one core).
#[cfg(any(
    target_arch = "aarch64",
    all(target_arch = "arm", target_feature = "v7")
))]
fn cpu_of(builder: &MeterBuilder) -> usize {
    builder
        .cpu
        .or_else(|| crate::sched::current_cpu().map(|c| c as usize))
        .unwrap_or(0)
}

/// The direct events, checked before anything is taken.
#[cfg(any(target_arch = "aarch64", target_arch = "arm"))]
fn events_of(builder: &MeterBuilder) -> Result<Vec<pmu_core::Event>> {
    builder
        .events
        .iter()
        .map(crate::meter::Event::direct)
        .collect()
}

/// Runs `access` (one register access that traps without user access) in a forked
/// child and classifies the outcome.
///
/// # Errors
/// [`crate::error::AccessError::NotEnabled`] when the child died of SIGILL and the module is not
/// loaded, [`crate::error::AccessError::GrantMissing`] when it is;
/// [`crate::error::AccessError::ProbeFailed`] for any other abnormal end; [`Error::Io`] when the
/// child could not be started.
pub fn probe_with(access: fn()) -> Result<()> {
    let end = sys::run_in_child(access)
        .map_err(|errno| crate::error::Error::syscall(Op::Probe, errno))?;
    classify(end)
}

fn classify(end: ChildEnd) -> Result<()> {
    match end {
        ChildEnd::Exited(0) => Ok(()),
        // Not loaded, or loaded and its grant gone: the module's sysfs state tells.
        ChildEnd::Signaled(libc::SIGILL) => Err(grant::trapped()),
        ChildEnd::Signaled(signal) => Err(Error::Access(crate::error::AccessError::ProbeFailed {
            status: signal,
        })),
        ChildEnd::Exited(code) => Err(Error::Access(crate::error::AccessError::ProbeFailed {
            status: code << 8,
        })),
    }
}

/// Whether user mode may program the PMU of the CPU this thread runs on (pin first:
/// the grant is per CPU).
///
/// # Errors
/// [`crate::error::AccessError::NotEnabled`]; [`crate::error::Unsupported::Direct`] where there is no
/// direct backend; [`crate::error::AccessError::ProbeFailed`].
pub fn probe() -> Result<()> {
    #[cfg(target_arch = "aarch64")]
    {
        probe_with(armv8::probe_access)
    }
    #[cfg(target_arch = "arm")]
    {
        probe_with(arm1176::probe_access)
    }
    #[cfg(target_arch = "x86_64")]
    {
        Err(Error::Unsupported(crate::error::Unsupported::Direct {
            reason: crate::error::DirectUnsupported::X86NeedsRing0,
        }))
    }
    #[cfg(not(any(target_arch = "aarch64", target_arch = "arm", target_arch = "x86_64")))]
    {
        Err(Error::Unsupported(crate::error::Unsupported::Direct {
            reason: crate::error::DirectUnsupported::Architecture,
        }))
    }
}

/// The ARM1176's `CPU implementer` and `CPU part` as Linux prints them in /proc/cpuinfo
/// (arch/arm/kernel/setup.c `c_show`: MIDR bits 31:24 and 15:4; ARM_CPU_PART_ARM1176 =
/// 0x4100b760 in arch/arm/include/asm/cputype.h).
pub const ARM1176_MIDR: (u32, u32) = (0x41, 0xb76);

/// The "CPU architecture" value of the first CPU in /proc/cpuinfo text ("7", "6TEJ",
/// "8" on arm64 kernels), `None` when the line is missing.
pub fn cpuinfo_architecture(cpuinfo: &str) -> Option<&str> {
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "CPU architecture").then(|| value.trim())
    })
}

/// Whether /proc/cpuinfo text names an ARMv7 or later CPU: "CPU architecture: 7" (32-bit
/// Linux prints 7 for every ARMv7 and ARMv8 core) and a "CPU part" other than the
/// ARM1176's, which Linux reports as 7 as well (its ID_MMFR0.VMSA is 3).
pub fn cpuinfo_is_armv7(cpuinfo: &str) -> bool {
    cpuinfo_architecture(cpuinfo).is_some_and(|arch| arch == "7")
        && cpuinfo_midr(cpuinfo).is_some_and(|midr| midr != ARM1176_MIDR)
}

/// The first CPU's `(CPU implementer, CPU part)` in /proc/cpuinfo text, `None` when the
/// lines are missing (another architecture's format, or an emulator that hides them).
pub fn cpuinfo_midr(cpuinfo: &str) -> Option<(u32, u32)> {
    let field = |name: &str| {
        cpuinfo.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            if key.trim() != name {
                return None;
            }
            let value = value.trim();
            u32::from_str_radix(value.strip_prefix("0x").unwrap_or(value), 16).ok()
        })
    };
    Some((field("CPU implementer")?, field("CPU part")?))
}

/// Says whether user access to the PMU is still granted, without trapping.
pub trait AccessCheck {
    /// True while user mode may access the counters.
    fn granted(&self) -> bool;
}

/// No check possible (ARM1176: SUNAVCR is not readable in User mode) or needed (fake
/// PMUs).
#[derive(Clone, Copy, Debug, Default)]
pub struct Unchecked;

impl AccessCheck for Unchecked {
    fn granted(&self) -> bool {
        true
    }
}

impl<F: Fn() -> bool> AccessCheck for F {
    fn granted(&self) -> bool {
        self()
    }
}
