//! kmod-enable-user's state, as the kernel publishes it in sysfs: whether it is loaded,
//! what its parameters grant, and so why a probe trapped (kernel/params.c publishes a
//! module's parameters as `/sys/module/<name>/parameters/<param>`).

use std::fmt;
use std::path::Path;

use pmu_armv8::granted::GrantedLayout;

use crate::error::{AccessError, Error};

pub(crate) mod mrs;
pub(crate) mod thread;
pub(crate) mod uapi;

use uapi::GrantCall;

/// Why user mode traps on this CPU although kmod-enable-user is loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GrantMissing {
    /// arm64, loaded with programming access: perf's use of the PMU revoked the grant
    /// on this CPU. Linux 6.12 drivers/perf/arm_pmuv3.c `armv8pmu_start()` writes
    /// PMUSERENR_EL0 = 0 whenever perf starts the PMU for a task that has no
    /// user-readable events, and nothing sets it again.
    RevokedByPerf {
        /// The module has the root-only `regrant` parameter
        /// (`/sys/module/kmod_enable_user/parameters/regrant`).
        regrant: bool,
    },
    /// The module's parameters grant less than programming the counters from user
    /// mode (PMUSERENR_EL0.EN), which the direct backend needs.
    NoProgrammingAccess {
        /// The parameter as sysfs shows it (`user_access=0x4`, `el0_programming=N`).
        parameter: String,
    },
    /// arm64 on a PMUv3p9 CPU, loaded with its read-only grant: PMUSERENR_EL0 holds
    /// perf's per-counter grant (UEN without the module's TID mark), which Linux 6.13+
    /// `armv8pmu_enable_user_access()` (drivers/perf/arm_pmuv3.c) writes for a task with
    /// user-readable (rdpmc) perf events, with PMUACR_EL1 = that task's counters. The
    /// module's counters read as 0 there (Arm ARM, PMUACR_EL1: RAZ/WI), so no count is
    /// taken.
    PerfPerCounterGrant {
        /// The module has the root-only `regrant` parameter.
        regrant: bool,
    },
    /// Loaded, and still User mode traps on this CPU (32-bit ARM: SUNAVCR.V is 0).
    Trapped,
    /// AArch32, loaded with its read-only grant (a layout), and the counter reads trap
    /// on this CPU: PMUSERENR lost ER or CR there. 32-bit Linux's ARMv7 perf driver
    /// never writes it, but since Linux 6.4 a 32-bit kernel can build
    /// drivers/perf/arm_pmuv3.c (`ARM_PMUV3`), whose `armv8pmu_start()` clears it as
    /// on arm64; a CPU power-down also resets it.
    ReadsRevoked {
        /// The module has the root-only `regrant` parameter.
        regrant: bool,
    },
}

/// Why the module refused a call: one variant per errno its header documents, each
/// saying what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ThreadGrantRefused {
    /// open: EACCES. Not in the module's `group=` and without CAP_PERFMON.
    NotInGroup {
        /// The module's `group=` parameter (a gid), where sysfs shows one.
        group: Option<String>,
    },
    /// GRANT: EINVAL. The module did not understand the request (its size, a flag or
    /// a counter outside its layout): this library and the module disagree.
    RequestNotUnderstood,
    /// GRANT: EBUSY. The calling thread already holds a grant (through this file or
    /// another).
    AlreadyGranted,
    /// GRANT: EPERM. The file was opened by another process (a child after fork(2)
    /// using its parent's file).
    OpenedByAnotherProcess,
    /// REGRANT: ENOENT. The calling thread holds no grant through this file.
    NoGrant,
    /// REGRANT: EBUSY. This CPU has no module counters now (perf holds a counter of the
    /// layout here, or `cpus=` leaves this CPU out).
    NoCountersOnThisCpu,
    /// ENOTTY. The module does not know the request: another version of the module.
    UnknownRequest,
    /// Any other errno (not documented by the module).
    Other {
        /// The call.
        call: GrantCall,
        /// The errno.
        errno: crate::error::Errno,
    },
}

impl ThreadGrantRefused {
    /// The refusal `errno` of `call` means; `group` is the module's `group=` parameter
    /// (for EACCES's advice).
    pub(crate) fn from_errno(call: GrantCall, errno: i32, group: Option<String>) -> Self {
        match (call, errno) {
            (GrantCall::Open, libc::EACCES) => Self::NotInGroup { group },
            (GrantCall::Grant, libc::EINVAL) => Self::RequestNotUnderstood,
            (GrantCall::Grant, libc::EBUSY) => Self::AlreadyGranted,
            (GrantCall::Grant, libc::EPERM) => Self::OpenedByAnotherProcess,
            (GrantCall::Regrant, libc::ENOENT) => Self::NoGrant,
            (GrantCall::Regrant, libc::EBUSY) => Self::NoCountersOnThisCpu,
            (GrantCall::Grant | GrantCall::Regrant, libc::ENOTTY) => Self::UnknownRequest,
            _ => Self::Other {
                call,
                errno: crate::error::Errno(errno),
            },
        }
    }
}

impl fmt::Display for ThreadGrantRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotInGroup { group } => {
                f.write_str(
                    "open(/dev/kmod_enable_user): EACCES: not in the module's group= and \
                     without CAP_PERFMON: ask the administrator ",
                )?;
                match group {
                    Some(gid) if gid != "-1" && !gid.is_empty() => write!(
                        f,
                        "to add this user to group {gid} (the module's group=), or to grant \
                         CAP_PERFMON"
                    )?,
                    _ => f.write_str(
                        "to load the module with group=<a gid this user is in> (it names none), \
                         or to grant CAP_PERFMON",
                    )?,
                }
                f.write_str("; or use the perf backend")
            }
            Self::RequestNotUnderstood => f.write_str(
                "ioctl(KMOD_EU_IOC_GRANT): EINVAL: the module did not understand this library's \
                 request (its size, flags or counters): the library and the module are from \
                 different versions; rebuild one against the other",
            ),
            Self::AlreadyGranted => f.write_str(
                "ioctl(KMOD_EU_IOC_GRANT): EBUSY: this thread already holds a grant through \
                 another file of /dev/kmod_enable_user (one grant per thread): measure with \
                 the meter that holds it, or drop that one first",
            ),
            Self::OpenedByAnotherProcess => f.write_str(
                "ioctl(KMOD_EU_IOC_GRANT): EPERM: the file was opened by another process (a \
                 child after fork(2) using its parent's file): the child opens the device \
                 itself",
            ),
            Self::NoGrant => f.write_str(
                "ioctl(KMOD_EU_IOC_REGRANT): ENOENT: this thread holds no grant through this \
                 file (the meter was opened on another thread: measure on the thread that \
                 opened it)",
            ),
            Self::NoCountersOnThisCpu => f.write_str(
                "ioctl(KMOD_EU_IOC_REGRANT): EBUSY: this CPU has no module counters now (perf \
                 holds a counter of the module's layout here, or the module's cpus= leaves \
                 this CPU out): keep perf's hardware events off this CPU, or use the perf \
                 backend",
            ),
            Self::UnknownRequest => f.write_str(
                "ENOTTY: the module does not know this request: it is another version than \
                 this library's; rebuild one against the other",
            ),
            Self::Other { call, errno } => write!(f, "{call}: {errno}"),
        }
    }
}

/// Why a counter read trapped under the per-thread grant and was not repaired: the
/// region is not counted.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TrapCause {
    /// The thread holds no per-thread grant (a meter opened on another thread, or a
    /// thread that never asked).
    NoGrant,
    /// The module refused the re-grant.
    RegrantRefused(ThreadGrantRefused),
    /// The module re-granted and PMUSERENR_EL0 still did not open the read.
    RegrantIneffective,
    /// The thread had run where the module's counters did not count for it; the
    /// module re-granted, and the region's count is short.
    CountsLost,
}

impl From<thread::Trap> for TrapCause {
    fn from(trap: thread::Trap) -> Self {
        match trap {
            thread::Trap::RegrantRefused(errno) => Self::RegrantRefused(
                ThreadGrantRefused::from_errno(GrantCall::Regrant, errno, None),
            ),
            thread::Trap::RegrantIneffective => Self::RegrantIneffective,
            thread::Trap::CountsLost => Self::CountsLost,
            _ => Self::NoGrant,
        }
    }
}

impl fmt::Display for TrapCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoGrant => f.write_str(
                "this thread holds no per-thread grant of kmod-enable-user (measure on the \
                 thread that opened the meter)",
            ),
            Self::RegrantRefused(why) => write!(f, "the re-grant failed: {why}"),
            Self::RegrantIneffective => f.write_str(
                "the module re-granted and PMUSERENR_EL0 still did not open the read (perf \
                 cleared it again at once)",
            ),
            Self::CountsLost => f.write_str(
                "the thread ran where kmod-enable-user's counters did not count for it (a \
                 CPU that `cpus=` leaves out, one where perf holds a counter of the \
                 module's layout, or perf had stopped the PMU): the region's count is short",
            ),
        }
    }
}

rig_pub! {
    /// Whether a PMU read of this thread trapped unrecovered since the last call (or the
    /// last region's start), and why; clears the mark. For a program that reads the
    /// counters by hand while the library's SIGILL handler is installed: such a read gave
    /// 0, not a count.
    pub fn take_trap() -> Option<TrapCause> {
        thread::take_trap().map(TrapCause::from)
    }
}

/// The error of the module's refusal `refused`; an open's EACCES names the module's
/// `group=` ([`group_parameter`]).
pub fn thread_grant_refused(refused: thread::Refused) -> Error {
    let group = (refused.call == GrantCall::Open && refused.errno == libc::EACCES)
        .then(group_parameter)
        .flatten();
    AccessError::ThreadGrant {
        refused: ThreadGrantRefused::from_errno(refused.call, refused.errno, group),
    }
    .into()
}

/// The error of a region whose read trapped unrecovered.
#[cold]
pub fn read_trapped(trap: thread::Trap) -> Error {
    AccessError::ReadTrapped { cause: trap.into() }.into()
}

/// This thread's per-thread grant (shared with the thread's other meters), asked of
/// the module's device ([`uapi::DEVICE`]).
///
/// # Errors
/// [`AccessError::ThreadGrant`] with the module's refusal.
pub fn grant_this_thread() -> Result<thread::ThreadGrant, Error> {
    thread::ThreadGrant::acquire(Path::new(uapi::DEVICE)).map_err(thread_grant_refused)
}

/// Where the module publishes itself once loaded.
pub const MODULE_SYSFS: &str = "/sys/module/kmod_enable_user";

/// Where kmod-enable-user publishes the counters it runs for EL0 under its read-only
/// grant (`5=0x8 31=0x11`: counter=event, 31 the cycle counter).
pub const MODULE_LAYOUT: &str = "/sys/module/kmod_enable_user/parameters/layout";

/// The error of a probe that trapped, from the module's state under `module`
/// ([`MODULE_SYSFS`]): [`AccessError::NotEnabled`] when it is not loaded,
/// [`AccessError::GrantMissing`] with what its parameters say when it is.
pub fn trapped_with_module_at(module: &Path) -> Error {
    if !module.is_dir() {
        return AccessError::NotEnabled.into();
    }
    let parameter = |name: &str| {
        std::fs::read_to_string(module.join("parameters").join(name))
            .ok()
            .map(|s| s.trim().to_owned())
    };
    // The module's write opt-in (`el0_programming`); a module older than it had EN
    // as bit 0 of `user_access`.
    let opt_in = parameter("el0_programming");
    if let Some(value) = opt_in.as_ref().filter(|v| *v == "N" || *v == "0") {
        return missing(GrantMissing::NoProgrammingAccess {
            parameter: format!("el0_programming={value}"),
        });
    }
    if let Some(value) = parameter("user_access").filter(|_| opt_in.is_none()) {
        let bits = value.strip_prefix("0x").map_or_else(
            || value.parse::<u64>().ok(),
            |h| u64::from_str_radix(h, 16).ok(),
        );
        if bits.is_some_and(|b| b & 1 == 0) {
            return missing(GrantMissing::NoProgrammingAccess {
                parameter: format!("user_access={value}"),
            });
        }
    }
    let cause = if cfg!(target_arch = "aarch64") {
        GrantMissing::RevokedByPerf {
            regrant: module.join("parameters/regrant").exists(),
        }
    } else {
        GrantMissing::Trapped
    };
    missing(cause)
}

/// Whether the module under `module` ([`MODULE_SYSFS`]) is loaded in per-thread mode:
/// its `cpu_wide` parameter reads N (kernel/params.c prints a bool parameter as Y or N)
/// and its device (`device`, [`uapi::DEVICE`]) exists. An older module has no
/// `cpu_wide`: CPU-wide.
pub fn per_thread_at(module: &Path, device: &Path) -> bool {
    let cpu_wide = std::fs::read_to_string(module.join("parameters/cpu_wide"));
    matches!(cpu_wide.as_deref().map(str::trim), Ok("N" | "0")) && device.exists()
}

/// [`per_thread_at`] for this system's module and device.
pub fn per_thread() -> bool {
    per_thread_at(Path::new(MODULE_SYSFS), Path::new(uapi::DEVICE))
}

/// The module's `group=` parameter (a gid, or what sysfs shows), for the advice of a
/// refused open.
pub fn group_parameter() -> Option<String> {
    std::fs::read_to_string(Path::new(MODULE_SYSFS).join("parameters/group"))
        .ok()
        .map(|s| s.trim().to_owned())
}

/// [`trapped_with_module_at`] for this system's [`MODULE_SYSFS`].
pub fn trapped() -> Error {
    trapped_with_module_at(Path::new(MODULE_SYSFS))
}

/// Whether the module publishes a layout: it is loaded with its read-only grant.
pub(crate) fn has_layout() -> bool {
    Path::new(MODULE_LAYOUT).exists()
}

/// Reads kmod-enable-user's layout (/sys/module/kmod_enable_user/parameters/layout): the text and its
/// parsed form.
///
/// # Errors
/// [`crate::error::AccessError::ModuleLayout`] when the file is missing (the module is not loaded, or is
/// an older one) or not understood.
pub fn module_layout() -> Result<(String, GrantedLayout), Error> {
    let text = std::fs::read_to_string(MODULE_LAYOUT).map_err(|e| {
        Error::Access(AccessError::ModuleLayout {
            reason: format!("{}: {e}", MODULE_LAYOUT),
        })
    })?;
    let layout = GrantedLayout::parse(&text).map_err(|e| {
        Error::Access(AccessError::ModuleLayout {
            reason: format!("{}: {e}", MODULE_LAYOUT),
        })
    })?;
    Ok((text.trim().to_owned(), layout))
}

/// The error of a read that trapped on this CPU although the module is loaded with a
/// layout: perf took the grant away here (arm64 `armv8pmu_start()`), with whether the
/// module can give it back (`regrant`).
#[cfg(target_arch = "aarch64")]
pub(crate) fn revoked_by_perf() -> Error {
    missing(GrantMissing::RevokedByPerf {
        regrant: Path::new(MODULE_SYSFS).join("parameters/regrant").exists(),
    })
}

/// The error for the module's reads found not granted on this CPU (pmu-armv8
/// `GrantedLayout::reads_granted`): revoked by perf ([`revoked_by_perf`]), or perf's
/// per-counter grant in their place ([`GrantMissing::PerfPerCounterGrant`]).
#[cfg(target_arch = "aarch64")]
pub(crate) fn reads_not_granted(why: pmu_armv8::granted::ReadsNotGranted) -> Error {
    match why {
        pmu_armv8::granted::ReadsNotGranted::PerfPerCounterGrant => {
            missing(GrantMissing::PerfPerCounterGrant {
                regrant: Path::new(MODULE_SYSFS).join("parameters/regrant").exists(),
            })
        }
        _ => revoked_by_perf(),
    }
}

/// The AArch32 form of [`revoked_by_perf`]: the layout's reads trap on this CPU
/// ([`GrantMissing::ReadsRevoked`]). The ARMv7 backend's only: the ARMv6 build has none.
#[cfg(all(target_arch = "arm", target_feature = "v7"))]
pub(crate) fn reads_revoked() -> Error {
    missing(GrantMissing::ReadsRevoked {
        regrant: Path::new(MODULE_SYSFS).join("parameters/regrant").exists(),
    })
}

/// CPU_CYCLES, which the module counts with its `cycle_counter` parameter, not through
/// `events` (kmod-enable-user/README.md).
const CPU_CYCLES: u16 = 0x11;

/// The module parameter that would make `layout` count event `code` too: the layout's
/// events with `code` added (`events=0x8,0x3`; CPU_CYCLES, which `cycle_counter=1`
/// adds, left out), or `cycle_counter=1` for CPU_CYCLES itself.
pub fn parameter_adding(layout: &GrantedLayout, code: u16) -> String {
    if code == CPU_CYCLES {
        return "cycle_counter=1".into();
    }
    let events: Vec<String> = layout
        .event_counters()
        .iter()
        .map(|&(_, event)| event)
        .filter(|&event| event != CPU_CYCLES)
        .chain(core::iter::once(code))
        .map(|event| format!("{event:#x}"))
        .collect();
    format!("events={}", events.join(","))
}

/// Each of `wanted` (asked for as `names`) on the slot of `layout` that counts it
/// (pmu-armv8 `GrantedLayout::slot_of`); `text` is the layout as the module states it.
///
/// # Errors
/// [`AccessError::NotInModuleLayout`] for the first event the layout lacks, with the
/// parameter that would add it ([`parameter_adding`]); an event with no PMUv3 encoding
/// (pmu-core's error).
pub fn place_in_layout(
    layout: &GrantedLayout,
    text: &str,
    wanted: &[pmu_core::Event],
    names: &[String],
) -> Result<Vec<(pmu_core::Event, Option<pmu_core::Slot>)>, Error> {
    use pmu_core::EventEncoding;
    wanted
        .iter()
        .zip(names)
        .map(|(&event, asked)| {
            let code = pmu_armv8::Armv8Event::encode(event).map_err(crate::Error::from)?;
            let slot = layout.slot_of(code).ok_or_else(|| {
                Error::Access(AccessError::NotInModuleLayout {
                    event: asked.clone(),
                    layout: text.to_owned(),
                    parameter: parameter_adding(layout, code.preferred().get()),
                })
            })?;
            Ok((event, Some(slot)))
        })
        .collect()
}

/// [`AccessError::GrantMissing`] for `cause`.
fn missing(cause: GrantMissing) -> Error {
    AccessError::GrantMissing { cause }.into()
}

impl fmt::Display for GrantMissing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::RevokedByPerf { regrant } => {
                f.write_str(
                    "perf's use of the PMU revoked the module's grant on this CPU (Linux's \
                     armv8pmu_start(), drivers/perf/arm_pmuv3.c, writes PMUSERENR_EL0 = 0 when \
                     perf starts the PMU for a task without user-readable events); ",
                )?;
                if *regrant {
                    f.write_str(
                        "grant it again with `echo 1 > /sys/module/kmod_enable_user/parameters/regrant` \
                         (as root: every online CPU)",
                    )?;
                } else {
                    f.write_str(
                        "grant it again by reloading the module (`rmmod kmod_enable_user`, then \
                         insmod; this version has no \
                         /sys/module/kmod_enable_user/parameters/regrant, which newer ones re-grant \
                         with `echo 1 >` as root)",
                    )?;
                }
                f.write_str(if *regrant {
                    ", or reload the module, or use the perf backend"
                } else {
                    ", or use the perf backend"
                })
            }
            Self::NoProgrammingAccess { parameter } => write!(
                f,
                "it was loaded with {parameter}, which does not let user mode program the \
                 counters ({en}), and the direct backend programs them: reload it with \
                 programming access, or use the perf backend",
                en = if cfg!(target_arch = "arm") {
                    "PMUSERENR.EN"
                } else {
                    "PMUSERENR_EL0.EN"
                }
            ),
            Self::PerfPerCounterGrant { regrant } => {
                f.write_str(
                    "PMUSERENR_EL0 holds perf's per-counter grant on this CPU (UEN without the \
                     module's TID mark: Linux 6.13+ armv8pmu_enable_user_access(), \
                     drivers/perf/arm_pmuv3.c, on a PMUv3p9 CPU, for a task with rdpmc perf \
                     events), and its PMUACR_EL1 does not open the module's counters: they \
                     would read as 0; close this task's rdpmc perf events (another task's end \
                     at its switch), then ",
                )?;
                f.write_str(if *regrant {
                    "grant it again with `echo 1 > /sys/module/kmod_enable_user/parameters/regrant` \
                     (as root: every online CPU), or use the perf backend"
                } else {
                    "reload the module (`rmmod kmod_enable_user`, then insmod), or use the perf \
                     backend"
                })
            }
            Self::Trapped => f.write_str(
                "user mode still traps on this CPU: reload the module, and check its kernel log",
            ),
            Self::ReadsRevoked { regrant } => {
                f.write_str(
                    "its read-only grant is gone on this CPU (PMUSERENR lost ER or CR: \
                     perf's drivers/perf/arm_pmuv3.c, which 32-bit kernels build since Linux \
                     6.4 with ARM_PMUV3, clears it in armv8pmu_start() when perf starts the \
                     PMU, and a CPU power-down resets it); ",
                )?;
                f.write_str(if *regrant {
                    "grant it again with `echo 1 > /sys/module/kmod_enable_user/parameters/regrant` \
                     (as root: every online CPU), or reload the module, and keep perf's hardware \
                     events off this CPU"
                } else {
                    "reload the module (`rmmod kmod_enable_user`, then insmod), and keep perf's \
                     hardware events off this CPU"
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmu_core::{Event, GenericEvent, Slot};

    /// An event the layout lacks is refused naming the layout and the parameter that
    /// would add it. Layouts as the modules write them: the ARMv7 flavour's default on
    /// QEMU's 6-counter `max` (`5=0x8 31=0x11`, tests/tests/kernel_armv7.rs), the arm64
    /// one's with cycles on an event counter (`5=0x8 4=0x11`, kmod-enable-user/README.md);
    /// event numbers from the Arm ARM (DDI 0487) common events: 0x03 L1D_CACHE_REFILL,
    /// 0x08 INST_RETIRED, 0x11 CPU_CYCLES.
    #[test]
    fn events_go_on_the_layout_slot_or_the_error_names_the_parameter() {
        let armv7 = GrantedLayout::parse("5=0x8 31=0x11").unwrap();
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let placed = place_in_layout(
            &armv7,
            "5=0x8 31=0x11",
            &[
                Event::Generic(GenericEvent::Instructions),
                Event::Generic(GenericEvent::CpuCycles),
            ],
            &names(&["instructions", "cycles"]),
        )
        .unwrap();
        assert_eq!(
            placed,
            [
                (
                    Event::Generic(GenericEvent::Instructions),
                    Some(Slot::Programmable(0))
                ),
                (
                    Event::Generic(GenericEvent::CpuCycles),
                    Some(Slot::Fixed(0))
                ),
            ]
        );
        let refused = place_in_layout(
            &armv7,
            "5=0x8 31=0x11",
            &[Event::Generic(GenericEvent::Instructions), Event::Raw(0x3)],
            &names(&["instructions", "r3"]),
        )
        .unwrap_err();
        match &refused {
            Error::Access(AccessError::NotInModuleLayout {
                event,
                layout,
                parameter,
            }) => {
                assert_eq!(event, "r3");
                assert_eq!(layout, "5=0x8 31=0x11");
                assert_eq!(parameter, "events=0x8,0x3");
            }
            other => panic!("{other:?}"),
        }
        let text = refused.to_string();
        for needle in [
            "r3: kmod-enable-user's read-only grant counts only its own events",
            "(parameters/layout: 5=0x8 31=0x11)",
            "reload it with events=0x8,0x3 to count it too",
            "el0_programming=1",
        ] {
            assert!(text.contains(needle), "`{needle}` missing: {text}");
        }
        // Without the cycle counter: cycle_counter=1 adds it; the arm64 layout's cycles
        // counter is not one of the `events`.
        let no_cycles = GrantedLayout::parse("5=0x8").unwrap();
        assert_eq!(parameter_adding(&no_cycles, 0x11), "cycle_counter=1");
        let arm64 = GrantedLayout::parse("5=0x8 4=0x11").unwrap();
        assert_eq!(parameter_adding(&arm64, 0x3), "events=0x8,0x3");
        assert_eq!(
            parameter_adding(&GrantedLayout::parse("none").unwrap(), 0x8),
            "events=0x8"
        );
    }

    /// The AArch32 read-only grant lost on a CPU says what clears it and the way back.
    #[test]
    fn revoked_reads_say_the_way_back() {
        let with = missing(GrantMissing::ReadsRevoked { regrant: true }).to_string();
        for needle in [
            "although kmod-enable-user is loaded",
            "its read-only grant is gone on this CPU (PMUSERENR lost ER or CR",
            "ARM_PMUV3",
            "`echo 1 > /sys/module/kmod_enable_user/parameters/regrant`",
        ] {
            assert!(with.contains(needle), "`{needle}` missing: {with}");
        }
        let without = missing(GrantMissing::ReadsRevoked { regrant: false }).to_string();
        assert!(without.contains("rmmod kmod_enable_user"), "{without}");
    }

    /// perf's per-counter grant (Linux 6.13+ on PMUv3p9, drivers/perf/arm_pmuv3.c
    /// `armv8pmu_enable_user_access()`) in place of the module's says so, why no count is
    /// taken (the reads would give 0) and the way back.
    #[test]
    fn perfs_per_counter_grant_says_why_and_the_way_back() {
        let with = missing(GrantMissing::PerfPerCounterGrant { regrant: true }).to_string();
        for needle in [
            "although kmod-enable-user is loaded",
            "perf's per-counter grant on this CPU (UEN without the module's TID mark",
            "armv8pmu_enable_user_access()",
            "they would read as 0",
            "`echo 1 > /sys/module/kmod_enable_user/parameters/regrant`",
            "or use the perf backend",
        ] {
            assert!(with.contains(needle), "`{needle}` missing: {with}");
        }
        let without = missing(GrantMissing::PerfPerCounterGrant { regrant: false }).to_string();
        assert!(without.contains("rmmod kmod_enable_user"), "{without}");
    }

    /// A trapped probe names what happened, from the module's sysfs directory (a fake
    /// one here: /sys/module/<name>/parameters/<param> is how the kernel publishes a
    /// module's parameters, kernel/params.c).
    #[test]
    fn trapped_probe_reads_the_module_state() {
        let dir = tempfile::tempdir().unwrap();
        let module = dir.path().join("kmod_enable_user");
        assert!(matches!(
            trapped_with_module_at(&module),
            Error::Access(AccessError::NotEnabled)
        ));
        std::fs::create_dir_all(module.join("parameters")).unwrap();
        std::fs::write(module.join("parameters/user_access"), "13\n").unwrap();
        let loaded = trapped_with_module_at(&module);
        if cfg!(target_arch = "aarch64") {
            assert!(matches!(
                loaded,
                Error::Access(AccessError::GrantMissing {
                    cause: GrantMissing::RevokedByPerf { regrant: false }
                })
            ));
            let text = loaded.to_string();
            for needle in [
                "although kmod-enable-user is loaded",
                "perf's use of the PMU revoked the module's grant on this CPU",
                "/sys/module/kmod_enable_user/parameters/regrant",
                "rmmod kmod_enable_user",
                "or use the perf backend",
            ] {
                assert!(text.contains(needle), "`{needle}` missing: {text}");
            }
            std::fs::write(module.join("parameters/regrant"), "").unwrap();
            let text = trapped_with_module_at(&module).to_string();
            assert!(
                text.contains("`echo 1 > /sys/module/kmod_enable_user/parameters/regrant`")
                    && text.contains("or reload the module, or use the perf backend"),
                "{text}"
            );
        } else {
            assert!(matches!(
                loaded,
                Error::Access(AccessError::GrantMissing {
                    cause: GrantMissing::Trapped
                })
            ));
        }
        // CR only (4): no EN, the direct backend cannot program the counters.
        std::fs::write(module.join("parameters/user_access"), "4\n").unwrap();
        let cr_only = trapped_with_module_at(&module);
        match cr_only {
            Error::Access(AccessError::GrantMissing {
                cause: GrantMissing::NoProgrammingAccess { parameter },
            }) => assert_eq!(parameter, "user_access=4"),
            other => panic!("{other:?}"),
        }
        std::fs::write(module.join("parameters/el0_programming"), "N\n").unwrap();
        assert!(trapped_with_module_at(&module)
            .to_string()
            .contains("loaded with el0_programming=N"));
    }

    /// Every errno kmod_enable_user_uapi.h documents (uapi's table, which its own
    /// test checks against the header) has its own typed refusal, which names it and
    /// says what to do.
    #[test]
    fn every_documented_errno_is_typed() {
        use uapi::DOCUMENTED_ERRNOS;
        for &(call, errno, name) in DOCUMENTED_ERRNOS {
            let refused = ThreadGrantRefused::from_errno(call, errno, Some("1001".into()));
            assert!(
                !matches!(refused, ThreadGrantRefused::Other { .. }),
                "{call:?} {name}"
            );
            assert!(refused.to_string().contains(name), "{refused}");
        }
        // An errno the header does not document is said as it is.
        let other = ThreadGrantRefused::from_errno(GrantCall::Open, libc::ENOENT, None);
        assert_eq!(
            other.to_string(),
            format!(
                "open(/dev/kmod_enable_user): {}",
                crate::error::Errno(libc::ENOENT)
            )
        );
    }

    /// EACCES names the module's group (or its absence) and the way to the grant;
    /// REGRANT's EBUSY names perf.
    #[test]
    fn refusals_say_what_to_do() {
        let with_group =
            ThreadGrantRefused::from_errno(GrantCall::Open, libc::EACCES, Some("1001".into()))
                .to_string();
        for needle in [
            "not in the module's group= and without CAP_PERFMON: ask the administrator",
            "to add this user to group 1001",
            "or use the perf backend",
        ] {
            assert!(with_group.contains(needle), "`{needle}`: {with_group}");
        }
        let without =
            ThreadGrantRefused::from_errno(GrantCall::Open, libc::EACCES, None).to_string();
        assert!(without.contains("group=<a gid this user is in> (it names none)"));
        let busy = ThreadGrantRefused::from_errno(GrantCall::Regrant, libc::EBUSY, None);
        assert_eq!(busy, ThreadGrantRefused::NoCountersOnThisCpu);
        assert!(busy
            .to_string()
            .contains("perf holds a counter of the module's layout"));
        assert_eq!(
            ThreadGrantRefused::from_errno(GrantCall::Grant, libc::EBUSY, None),
            ThreadGrantRefused::AlreadyGranted
        );
    }

    /// Per-thread mode is the module's `cpu_wide` reading N (kernel/params.c prints a
    /// bool parameter as Y or N) with its device present; a module without the
    /// parameter, `cpu_wide=Y`, or no device is CPU-wide.
    #[test]
    fn per_thread_mode_is_read_from_sysfs_and_the_device() {
        let dir = tempfile::tempdir().unwrap();
        let module = dir.path().join("kmod_enable_user");
        let device = dir.path().join("kmod_enable_user.dev");
        std::fs::create_dir_all(module.join("parameters")).unwrap();
        assert!(
            !per_thread_at(&module, &device),
            "no cpu_wide: an older module"
        );
        std::fs::write(module.join("parameters/cpu_wide"), "N\n").unwrap();
        assert!(!per_thread_at(&module, &device), "no device");
        std::fs::write(&device, "").unwrap();
        assert!(per_thread_at(&module, &device));
        std::fs::write(module.join("parameters/cpu_wide"), "Y\n").unwrap();
        assert!(!per_thread_at(&module, &device));
    }
}
