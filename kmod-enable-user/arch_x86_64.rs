// SPDX-License-Identifier: GPL-2.0-only OR MIT

//! x86_64: perf's `rdpmc` policy; CR4.PCE per CPU only as a named, short-lived opt-in.
//!
//! Linux owns CR4.PCE. arch/x86/mm/tlb.c (Linux 6.12): `switch_mm_irqs_off()` calls
//! `cr4_update_pce_mm()` whenever a CPU switches to another address space, and that
//! sets or clears the bit from perf's rdpmc policy, the sysfs file
//! `/sys/bus/event_source/devices/<pmu>/rdpmc` of an x86 core PMU
//! (arch/x86/events/core.c, `set_attr_rdpmc()`: 0 never, 1 while the process has a
//! perf event mmapped, 2 always). So:
//!
//! - The policy is the lasting route and the default one: the module writes 2 to it and
//!   writes the old value back on unload. `rdpmc_policy=` may name the file of another
//!   PMU, but only a path of exactly that shape (`<pmu>`: one path component, not `.`
//!   or `..`) that lies on sysfs; anything else is refused with -EINVAL before it is
//!   opened for writing.
//! - Without a policy file (no x86 PMU driver: a VM without a virtual PMU) there is
//!   nothing lasting to enable: the module refuses with -ENODEV and says so.
//!   `cr4_pce_until_switch=1` sets CR4.PCE on every CPU instead, which the kernel
//!   clears at that CPU's next switch to another address space (with
//!   CONFIG_PERF_EVENTS; without it `cr4_update_pce_mm()` is empty and the bit stays
//!   until unload). The log says which.
//! - Errnos are ones user space knows: perf's -ENOTSUPP (524, kernel-internal: insmod
//!   would print "Unknown error 524") becomes -EOPNOTSUPP.

use super::*;
use core::arch::asm;
use core::ffi::CStr;
use core::sync::atomic::AtomicPtr;

/// CR4.PCE, bit 8 (SDM Vol. 3A, 2.5 "Control Registers").
const X86_CR4_PCE: u64 = 1 << 8;

/// The only directory whose files the module writes: perf's PMUs on the event_source
/// bus (Documentation/ABI/testing/sysfs-bus-event_source-devices-rdpmc).
const EVENT_SOURCE_DEVICES: &[u8] = b"/sys/bus/event_source/devices/";
/// The policy file's name inside a PMU's directory.
const RDPMC_FILE: &[u8] = b"/rdpmc";

/// Where perf's rdpmc policy lives by default: the core PMU is `cpu`, or `cpu_core` on
/// hybrid Intel parts (both files write the same policy).
const POLICY_FILES: [&CStr; 2] = [
    c"/sys/bus/event_source/devices/cpu/rdpmc",
    c"/sys/bus/event_source/devices/cpu_core/rdpmc",
];

static RDPMC_POLICY: param::Value<*mut c_char> = param::Value::new(core::ptr::null_mut());
static CR4_PCE_UNTIL_SWITCH: param::Value<bool> = param::Value::new(false);

#[link_section = "__param"]
#[used(compiler)]
static RDPMC_POLICY_PARAM: param::Param = param::describe(
    c"rdpmc_policy",
    &raw const bindings::param_ops_charp,
    RDPMC_POLICY.as_arg(),
);

#[link_section = "__param"]
#[used(compiler)]
static CR4_PCE_UNTIL_SWITCH_PARAM: param::Param = param::describe(
    c"cr4_pce_until_switch",
    &raw const bindings::param_ops_bool,
    CR4_PCE_UNTIL_SWITCH.as_arg(),
);

modinfo!(
    PARM_RDPMC_POLICY,
    "parm=rdpmc_policy:perf's rdpmc policy file, /sys/bus/event_source/devices/<pmu>/rdpmc only (on sysfs); set to 2 (always) and restored on unload. Default: .../cpu/rdpmc, then .../cpu_core/rdpmc"
);
modinfo!(PARMTYPE_RDPMC_POLICY, "parmtype=rdpmc_policy:charp");
modinfo!(
    PARM_CR4_PCE_UNTIL_SWITCH,
    "parm=cr4_pce_until_switch:Only where no perf rdpmc policy exists: set CR4.PCE on every CPU; the kernel clears it at each CPU's next switch to another process, so only the process running there keeps rdpmc. Default 0: refuse to load (-ENODEV)"
);
modinfo!(PARMTYPE_CR4_PCE_UNTIL_SWITCH, "parmtype=cr4_pce_until_switch:bool");

/// The policy file named by the `rdpmc_policy` parameter, if given.
fn given_policy_file() -> Option<&'static CStr> {
    let given = RDPMC_POLICY.get();
    // SAFETY: when set, the kernel's charp parser stored a NUL-terminated copy that
    // stays allocated until the module is freed, after `Drop`.
    (!given.is_null()).then(|| unsafe { CStr::from_ptr(given.cast()) })
}

/// Why an `rdpmc_policy` path is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
enum PathRefusal {
    /// Not under `/sys/bus/event_source/devices/`.
    OutsideEventSource,
    /// Under it, but not a PMU's `rdpmc` file.
    NotRdpmc,
    /// The PMU part is empty, `.`, `..` or more than one path component.
    BadPmuName,
}

impl PathRefusal {
    fn reason(self) -> &'static str {
        match self {
            Self::OutsideEventSource => "not under /sys/bus/event_source/devices/",
            Self::NotRdpmc => "not a PMU's rdpmc file (the name must end in /rdpmc)",
            Self::BadPmuName => {
                "the PMU name must be one path component, not empty, '.' or '..'"
            }
        }
    }
}

/// The PMU name of a policy path `/sys/bus/event_source/devices/<pmu>/rdpmc`, or why
/// the path is not of that shape.
fn policy_path_pmu(path: &[u8]) -> core::result::Result<&[u8], PathRefusal> {
    let rest = path
        .strip_prefix(EVENT_SOURCE_DEVICES)
        .ok_or(PathRefusal::OutsideEventSource)?;
    let pmu = rest.strip_suffix(RDPMC_FILE).ok_or(PathRefusal::NotRdpmc)?;
    if pmu.is_empty() || pmu == b"." || pmu == b".." || pmu.contains(&b'/') {
        return Err(PathRefusal::BadPmuName);
    }
    Ok(pmu)
}

/// An errno that user space has a message for. The kernel-internal ones (512 and up,
/// include/linux/errno.h) print as "Unknown error N": perf's -ENOTSUPP becomes
/// -EOPNOTSUPP, any other -EIO (the log line before it names the original).
fn user_visible(e: Error) -> Error {
    if e == ENOTSUPP {
        Error::from_errno(-(bindings::EOPNOTSUPP as c_int))
    } else if -e.to_errno() >= 512 {
        EIO
    } else {
        e
    }
}

/// Policy value "always": every process may execute rdpmc.
const ALWAYS: u8 = b'2';

fn read_cr4() -> u64 {
    let value: u64;
    // SAFETY: reading CR4 at CPL 0 has no side effect.
    unsafe { asm!("mov {}, cr4", out(reg) value, options(nomem, nostack)) };
    value
}

/// A file opened in the kernel, closed on drop.
pub(crate) struct KernelFile(*mut bindings::file);

impl KernelFile {
    fn open(path: &CStr, flags: u32) -> Result<Self> {
        // SAFETY: `path` is a NUL-terminated string; the call may sleep (we are in
        // process context: module init or exit).
        let file = unsafe { bindings::filp_open(path.as_ptr().cast::<c_char>(), flags as c_int, 0) };
        let value = file as isize;
        if (-(bindings::MAX_ERRNO as isize)..0).contains(&value) {
            return Err(Error::from_errno(value as c_int));
        }
        Ok(Self(file))
    }

    /// The magic number of the file system the file lies on (include/uapi/linux/magic.h).
    fn fs_magic(&self) -> u64 {
        // SAFETY: `self.0` is an open file: its inode, and the inode's super block,
        // stay alive at least as long as the file.
        unsafe { (*(*(*self.0).f_inode).i_sb).s_magic as u64 }
    }

    /// Whether both handles are the same file (the same inode).
    fn same_inode(&self, other: &KernelFile) -> bool {
        // SAFETY: both are open files; their inodes live at least as long.
        unsafe { (*self.0).f_inode == (*other.0).f_inode }
    }

    /// The first line of the file (up to 15 bytes).
    fn read_value(&self) -> Result<([u8; 16], usize)> {
        let mut buf = [0u8; 16];
        let mut pos: bindings::loff_t = 0;
        // SAFETY: `self.0` is an open file; `buf` is writable for 15 bytes.
        let n = unsafe { bindings::kernel_read(self.0, buf.as_mut_ptr().cast(), 15, &mut pos) };
        if n < 0 {
            return Err(Error::from_errno(n as c_int));
        }
        let n = buf[..n as usize].iter().position(|&b| b == b'\n').unwrap_or(n as usize);
        Ok((buf, n))
    }

    fn write_value(&self, value: &[u8]) -> Result {
        let mut pos: bindings::loff_t = 0;
        // SAFETY: `self.0` is an open file; `value` is readable for its length.
        let n = unsafe { bindings::kernel_write(self.0, value.as_ptr().cast(), value.len(), &mut pos) };
        if n < 0 {
            return Err(Error::from_errno(n as c_int));
        }
        Ok(())
    }
}

// SAFETY: a `struct file` is reference counted and may be used and closed from any
// process context; the module touches it only in init and exit, which never overlap.
unsafe impl Send for KernelFile {}
// SAFETY: as for `Send`; no method is called concurrently (init and exit only).
unsafe impl Sync for KernelFile {}

impl Drop for KernelFile {
    fn drop(&mut self) {
        // SAFETY: `self.0` was opened by `filp_open` and is closed once.
        unsafe { bindings::filp_close(self.0, core::ptr::null_mut()) };
    }
}

/// Opens perf's policy file `path` for writing, after proving it is one: the path has
/// the shape `/sys/bus/event_source/devices/<pmu>/rdpmc` (-EINVAL otherwise), and the
/// file lies on sysfs (-EINVAL otherwise; looked at through an `O_PATH` handle, which
/// opens nothing, so no device or FIFO is ever opened for writing). The writable file
/// must be the inode the `O_PATH` handle proved (a rename or mount in between is
/// refused), and it is kept open until unload, so the restore writes the same file
/// whatever the unloading process's mount namespace holds at that path. A missing file
/// is -ENOENT; the caller logs it (the default paths may be missing).
fn open_policy(path: &CStr) -> Result<KernelFile> {
    let pmu = match policy_path_pmu(path.to_bytes()) {
        Ok(pmu) => pmu,
        Err(refusal) => {
            pr_err!(
                "rdpmc_policy={path:?} refused: {}; only perf's rdpmc policy file /sys/bus/event_source/devices/<pmu>/rdpmc is written\n",
                refusal.reason()
            );
            return Err(EINVAL);
        }
    };
    let handle = KernelFile::open(path, bindings::O_PATH).inspect_err(|e| {
        if *e != ENOENT {
            pr_err!("cannot look up {path:?} ({e:?}): refusing to load\n");
        }
    })?;
    let magic = handle.fs_magic();
    if magic != u64::from(bindings::SYSFS_MAGIC) {
        pr_err!(
            "{path:?} refused: not a sysfs file (file system magic {magic:#x}, sysfs is {:#x}), so not perf's rdpmc policy of PMU '{}'\n",
            bindings::SYSFS_MAGIC,
            text(pmu)
        );
        return Err(EINVAL);
    }
    let file = KernelFile::open(path, bindings::O_RDWR).inspect_err(|e| {
        pr_err!("cannot open {path:?} for writing ({e:?}): refusing to load\n");
    })?;
    if !file.same_inode(&handle) {
        pr_err!("{path:?} changed while it was being opened (another inode): refusing to load\n");
        return Err(EINVAL);
    }
    Ok(file)
}

/// Switches the policy in `file` to "always", returning what was there.
fn switch_policy(path: &'static CStr, file: KernelFile) -> Result<Enabled> {
    let (old, old_len) = file.read_value().map_err(|e| {
        pr_err!("cannot read {path:?} ({e:?}): refusing to load\n");
        user_visible(e)
    })?;
    if let Err(e) = file.write_value(&[ALWAYS, b'\n']) {
        if e == ENOTSUPP {
            pr_err!(
                "perf refuses to change {path:?}: rdpmc is marked broken on this CPU (x86_pmu.attr_rdpmc_broken, arch/x86/events/core.c); refusing to load (-EOPNOTSUPP)\n"
            );
        } else {
            pr_err!("cannot write 2 to {path:?} ({e:?}): refusing to load\n");
        }
        return Err(user_visible(e));
    }
    pr_info!(
        "loaded: perf rdpmc policy {path:?} {} -> 2 (always): every process may execute rdpmc, on every CPU, now and after process switches\n",
        text(&old[..old_len])
    );
    pr_warn!("any process can now read the PMU counters (a timing side channel)\n");
    Ok(Enabled::Policy {
        path,
        file,
        old,
        old_len,
    })
}

/// One CPU's CR4.PCE before and after.
#[derive(Default, Clone, Copy)]
pub(crate) struct CpuState {
    applied: bool,
    old_pce: bool,
    found_pce: bool,
}

static SLOTS: AtomicPtr<percpu::Slot<CpuState>> = AtomicPtr::new(core::ptr::null_mut());

/// On the CPU, interrupts off: set CR4.PCE, remembering the previous value.
///
/// # Safety
///
/// `info` is a `*mut CpuState` valid for the call; run with interrupts disabled on the
/// CPU whose state it records (through [`percpu::run_on`]).
unsafe extern "C" fn set_pce(info: *mut c_void) {
    // SAFETY: `percpu::run_on` passes a `&mut CpuState` that outlives the call.
    let st = unsafe { &mut *info.cast::<CpuState>() };
    st.old_pce = read_cr4() & X86_CR4_PCE != 0;
    // SAFETY: interrupts are off (smp_call_function_single), as
    // `cr4_update_irqsoff()` requires; it keeps the kernel's per-CPU CR4 shadow in step.
    unsafe { bindings::cr4_update_irqsoff(X86_CR4_PCE as _, 0) };
    st.applied = true;
}

/// On the CPU, interrupts off: clear CR4.PCE again if it was clear before `set_pce`.
///
/// # Safety
///
/// As for [`set_pce`].
unsafe extern "C" fn restore_pce(info: *mut c_void) {
    // SAFETY: `percpu::run_on` passes a `&mut CpuState` that outlives the call.
    let st = unsafe { &mut *info.cast::<CpuState>() };
    st.found_pce = read_cr4() & X86_CR4_PCE != 0;
    if !st.old_pce {
        // SAFETY: as in `set_pce`.
        unsafe { bindings::cr4_update_irqsoff(0, X86_CR4_PCE as _) };
    }
    st.applied = false;
}

/// How long a CR4.PCE set by the module lasts on this kernel (arch/x86/mm/tlb.c,
/// Linux 6.12: `cr4_update_pce_mm()` is empty without CONFIG_PERF_EVENTS).
#[cfg(CONFIG_PERF_EVENTS)]
const PCE_LASTS: &str = "until this CPU switches to another process";
#[cfg(not(CONFIG_PERF_EVENTS))]
const PCE_LASTS: &str = "until unload: this kernel has no CONFIG_PERF_EVENTS, nothing clears it";

/// Hotplug startup: runs on `cpu` when it comes online, and on every online CPU when
/// the state is installed.
///
/// # Safety
///
/// Called by the CPU-hotplug core only, for `cpu`, while the state is installed.
unsafe extern "C" fn cpu_online(cpu: c_uint) -> c_int {
    // SAFETY: a hotplug callback of `cpu`, while the state (and so the slots) exists.
    let Some(st) = (unsafe { percpu::slot(&SLOTS, cpu) }) else {
        return 0;
    };
    *st = CpuState::default();
    if let Err(e) = percpu::run_on(cpu, set_pce, st) {
        pr_err!("cpu{cpu}: cannot run on the CPU ({e:?})\n");
        return e.to_errno();
    }
    pr_info!(
        "cpu{cpu}: CR4.PCE {} -> 1 (rdpmc allowed at CPL 3 {PCE_LASTS})\n",
        st.old_pce as u8
    );
    0
}

/// Hotplug teardown: runs on `cpu` when it goes offline, and on every online CPU when
/// the state is removed.
///
/// # Safety
///
/// As for [`cpu_online`].
unsafe extern "C" fn cpu_offline(cpu: c_uint) -> c_int {
    // SAFETY: a hotplug callback of `cpu`, while the state (and so the slots) exists.
    let Some(st) = (unsafe { percpu::slot(&SLOTS, cpu) }) else {
        return 0;
    };
    if !st.applied {
        return 0;
    }
    if let Err(e) = percpu::run_on(cpu, restore_pce, st) {
        pr_err!("cpu{cpu}: cannot run on the CPU to restore it ({e:?})\n");
        return 0;
    }
    let note = if st.found_pce { "" } else { " (the kernel had already cleared it)" };
    pr_info!(
        "cpu{cpu}: CR4.PCE {} -> {} restored{note}\n",
        st.found_pce as u8,
        (st.found_pce && st.old_pce) as u8
    );
    0
}

/// Sets CR4.PCE on every CPU (the `cr4_pce_until_switch=1` opt-in).
fn set_cr4_pce() -> Result<Enabled> {
    #[cfg(CONFIG_PERF_EVENTS)]
    pr_warn!(
        "cr4_pce_until_switch=1: setting CR4.PCE on every CPU; it lasts only until each CPU's next switch to another process (arch/x86/mm/tlb.c: switch_mm_irqs_off() -> cr4_update_pce_mm() clears it, there being no perf rdpmc policy): only the process running there keeps rdpmc, not a lasting grant\n"
    );
    #[cfg(not(CONFIG_PERF_EVENTS))]
    pr_warn!(
        "cr4_pce_until_switch=1: setting CR4.PCE on every CPU; this kernel has no CONFIG_PERF_EVENTS, so nothing clears it: every process may execute rdpmc until unload\n"
    );
    let slots = percpu::Slots::new(&SLOTS)?;
    let state = percpu::HotplugState::install(c"perf/kmod_enable_user:online", cpu_online, cpu_offline)
        .map_err(user_visible)?;
    pr_info!("loaded: CR4.PCE set on every online CPU (mode cr4_pce_until_switch)\n");
    Ok(Enabled::Cr4 {
        state: Some(state),
        _slots: slots,
    })
}

/// What `enable` changed.
pub(crate) enum Enabled {
    /// perf's policy file was switched from `old` to "2"; `file` is that file, open
    /// since the load.
    Policy {
        path: &'static CStr,
        file: KernelFile,
        old: [u8; 16],
        old_len: usize,
    },
    /// CR4.PCE set per CPU; removing the state restores each CPU.
    Cr4 {
        state: Option<percpu::HotplugState>,
        _slots: percpu::Slots<CpuState>,
    },
}

fn text(bytes: &[u8]) -> &str {
    core::str::from_utf8(bytes).unwrap_or("?")
}

pub(crate) fn enable() -> Result<Enabled> {
    let cr4 = CR4_PCE_UNTIL_SWITCH.get();
    if let Some(path) = given_policy_file() {
        if cr4 {
            pr_err!(
                "rdpmc_policy= and cr4_pce_until_switch=1 exclude each other (the policy is the lasting route, CR4.PCE the stand-in where there is none): refusing to load\n"
            );
            return Err(EINVAL);
        }
        // ENOENT would read "Unknown symbol in module" in kmod's insmod
        // (tools/insmod.c, `mod_strerror()`): a missing policy is "No such device".
        let file = open_policy(path).map_err(|e| {
            if e == ENOENT {
                pr_err!(
                    "{path:?} does not exist: no such PMU, or one without an rdpmc policy (only x86 core PMUs have one): refusing to load (-ENODEV)\n"
                );
                ENODEV
            } else {
                user_visible(e)
            }
        })?;
        return switch_policy(path, file);
    }
    for path in POLICY_FILES {
        let file = match open_policy(path) {
            Ok(file) => file,
            Err(e) if e == ENOENT => continue,
            Err(e) => return Err(user_visible(e)),
        };
        if cr4 {
            pr_err!(
                "cr4_pce_until_switch=1 refused: perf's rdpmc policy {path:?} exists and is the lasting route; load without it\n"
            );
            return Err(EINVAL);
        }
        return switch_policy(path, file);
    }
    if !cr4 {
        pr_err!(
            "no perf rdpmc policy here ({:?} absent: no x86 PMU driver, as in a VM without a virtual PMU): nothing lasting to enable, refusing to load (-ENODEV)\n",
            POLICY_FILES[0]
        );
        pr_err!(
            "cr4_pce_until_switch=1 would set CR4.PCE on every CPU instead; the kernel clears it at each CPU's next switch to another process, so only the process running there could execute rdpmc\n"
        );
        return Err(ENODEV);
    }
    set_cr4_pce()
}

impl Enabled {
    pub(crate) fn disable(&mut self) {
        match self {
            Enabled::Policy {
                path,
                file,
                old,
                old_len,
            } => {
                let len = *old_len;
                old[len] = b'\n';
                // Only a policy still at "2" is the module's to restore: a value written
                // since the load (an administrator's) is left as it is.
                match file.read_value() {
                    Ok((now, n)) if now[..n] != [ALWAYS] => {
                        pr_info!(
                            "unloaded: perf rdpmc policy {path:?} left at {} (changed since the load, which set 2; it was {})\n",
                            text(&now[..n]),
                            text(&old[..len])
                        );
                        return;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        pr_err!(
                            "unloaded, but could not read {path:?} ({e:?}) to restore it to {}: check it by hand\n",
                            text(&old[..len])
                        );
                        return;
                    }
                }
                let restored = file.write_value(&old[..=len]);
                let old = &old[..len];
                match restored {
                    Ok(()) => pr_info!(
                        "unloaded: perf rdpmc policy {path:?} 2 -> {} restored\n",
                        text(old)
                    ),
                    Err(e) => pr_err!(
                        "unloaded, but could not restore {path:?} to {} ({e:?}): write it by hand\n",
                        text(old)
                    ),
                }
            }
            Enabled::Cr4 { state, .. } => {
                drop(state.take());
                pr_info!("unloaded: every online CPU's previous CR4.PCE restored\n");
            }
        }
    }
}
