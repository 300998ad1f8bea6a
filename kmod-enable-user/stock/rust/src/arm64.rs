//! arm64: the grant of `pmu_armv8::user_enable`, for the module's callbacks (CPU
//! hotplug, CPU PM, the `regrant` parameter) and its load-time checks. The C functions
//! are [`crate::grant`]'s, with the PMUv3 rules below: the kernel-entry sentinel,
//! CHAIN and CPU_CYCLES refused as events, and perf's `used_mask` beside the grant.

use core::ffi::{c_char, CStr};

use pmu_armv8::user_enable::{
    self, thread, Applied, ApplyError, Layout, ModuleEvents, Request, Sentinel, UserAccess,
    UserAccessError, UserAccessRegisters,
};
use pmu_armv8::{El1UserAccess, EventNumber, PmuVersion};

use crate::ffi::Refusal;
use crate::grant::{self, Config, CpuGrant, Flavour, Parameters, Refused, UserAccessFault};

/// The arm64 flavour of [`crate::grant`].
#[derive(Debug)]
pub enum Arm64 {}

/// What the arm64 config adds after the PMU version.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct SentinelConfig {
    /// The `sentinel` parameter: run the kernel-entry sentinel.
    pub sentinel: bool,
    /// The sentinel's event: INST_RETIRED, or CPU_CYCLES where the CPU does not
    /// implement INST_RETIRED.
    pub sentinel_event: u8,
    /// The kernel runs at EL2 (VHE): the sentinel counts there.
    pub kernel_at_el2: bool,
}

/// The module-wide settings, checked once at load by [`kmod_eu_arm64_configure`]
/// (C: `struct kmod_eu_config`; `pmu_version` is its `pmuver`).
pub type KmodEuConfig = Config<SentinelConfig>;

const _: () = assert!(core::mem::size_of::<KmodEuConfig>() == 24);

/// One CPU's state (C: `struct kmod_eu_cpu`): filled by [`kmod_eu_arm64_apply`]
/// and [`kmod_eu_arm64_restore`], for the log and the next call.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct KmodEuCpu {
    /// PMUSERENR_EL0 before the first grant on this CPU.
    pub old_userenr: u64,
    /// C's fields from `found_userenr` to `pmuver`; C's `reserved[5]` is its padding.
    pub grant: CpuGrant<u64>,
    /// Input of apply and restore, set by the glue on this CPU with interrupts off
    /// just before: perf's `used_mask` of this CPU as PMCNTENSET_EL0 bits.
    pub perf_used: u64,
    /// PMUv3p9: PMUACR_EL1 written with UEN (0: not written).
    pub new_acr: u64,
    /// The grant beside the module's, which restore puts back on a PMUv3p9 CPU.
    pub outside_userenr: u64,
    /// Its PMUACR_EL1.
    pub outside_acr: u64,
}

// The C declaration has the same size and offsets (checked there with static_assert too).
const _: () = assert!(core::mem::size_of::<KmodEuCpu>() == 120);
const _: () = assert!(core::mem::offset_of!(KmodEuCpu, grant.applied) == 80);
const _: () = assert!(core::mem::offset_of!(KmodEuCpu, grant.pmu_version) == 82);
const _: () = assert!(core::mem::offset_of!(KmodEuCpu, perf_used) == 88);

impl KmodEuCpu {
    fn applied(&self) -> Applied {
        let g = &self.grant;
        Applied {
            pmuver: g.pmu_version,
            old_pmuserenr: self.old_userenr,
            found_pmuserenr: g.found_userenr,
            new_pmuserenr: g.new_userenr,
            owned: g.owned,
            zeroed: g.zeroed,
            kept: g.kept,
            enabled_pmu: g.enabled_pmu,
            new_pmuacr: self.new_acr,
            outside_pmuserenr: self.outside_userenr,
            outside_pmuacr: self.outside_acr,
        }
    }
}

/// The loading CPU: its registers (which `configure` only reads) and PMU version.
#[derive(Debug)]
pub struct LoadingCpu {
    regs: El1UserAccess,
    version: PmuVersion,
}

impl Flavour for Arm64 {
    type Word = u64;
    /// The `sentinel` parameter.
    type Parameters = bool;
    type ConfigTail = SentinelConfig;
    type Cpu = KmodEuCpu;
    type LoadingCpu = LoadingCpu;
    type Request = Request;

    const EVENT_ABOVE_16_BITS: &'static CStr =
        c"events: an event number above 0xffff (PMEVTYPER<n>_EL0.evtCount has 16 bits)";

    unsafe fn loading_cpu() -> (LoadingCpu, u8) {
        // SAFETY: EL1 with preemption off (the caller's contract); only ID_AA64DFR0_EL1
        // and, with PMUv3, PMCR_EL0 and PMCEID0_EL0 are read: nothing is written.
        let regs = unsafe { El1UserAccess::new() };
        let version = PmuVersion::from_id_aa64dfr0(regs.id_aa64dfr0());
        (LoadingCpu { regs, version }, version.pmuver())
    }

    fn check_user_access(bits: u32, el0_programming: bool) -> Result<(), UserAccessFault> {
        UserAccess::new(u64::from(bits), el0_programming)
            .map(drop)
            .map_err(|e| match e {
                UserAccessError::Empty => UserAccessFault::Empty,
                UserAccessError::WriteAccessNeedsOptIn => UserAccessFault::WriteAccessNeedsOptIn,
                _ => UserAccessFault::UnknownBits,
            })
    }

    fn check(
        cpu: &LoadingCpu,
        parameters: &Parameters<bool>,
        parsed: ModuleEvents,
    ) -> Result<(Layout, SentinelConfig), Refusal> {
        let &Parameters {
            cycle_counter,
            flavour: sentinel,
            el0_programming,
            ..
        } = parameters;
        let events = parsed.as_slice();
        if !cpu.version.is_pmuv3() {
            return Err(Refusal::no_device(
                c"no PMUv3 on this CPU (ID_AA64DFR0_EL1.PMUVer)",
            ));
        }
        if parsed.is_empty() && !cycle_counter && !sentinel && !el0_programming {
            return Err(Refusal::invalid(
                c"events is empty, cycle_counter=0 and sentinel=0: the grant would only expose perf's counters",
            ));
        }
        if events.contains(&user_enable::CHAIN) {
            return Err(Refusal::invalid(
                c"events: 0x1e (CHAIN) only pairs two counters and counts nothing alone",
            ));
        }
        if cycle_counter && events.contains(&user_enable::CPU_CYCLES) {
            return Err(Refusal::invalid(
                c"events: 0x11 (CPU_CYCLES) is already counted by cycle_counter=1",
            ));
        }
        // PMEVTYPER<n>_EL0.evtCount is 10 bits wide in PMUv3 for ARMv8.0 (PMUVer 0b0001)
        // and 16 bits from PMUv3 for ARMv8.1 (Arm ARM, PMEVTYPER<n>_EL0): a wider number
        // would write RES0 bits and count another event.
        if cpu.version.pmuver() == 1 && events.iter().any(|&e| e > 0x3ff) {
            return Err(Refusal::invalid(
                c"events: an event number above 0x3ff (PMUv3 for ARMv8.0: evtCount has 10 bits)",
            ));
        }
        // PMCR_EL0.N, bits 15:11 (Arm ARM, PMCR_EL0).
        let n = ((cpu.regs.pmcr().get() >> 11) & 0x1f) as u8;
        let Ok(layout) = Layout::new(n, parsed, cycle_counter) else {
            return Err(Refusal::no_device(
                c"events: more events than this CPU has event counters (PMCR_EL0.N)",
            ));
        };
        // The sentinel's event: INST_RETIRED where implemented (PMCEID0_EL0), else
        // CPU_CYCLES, which every PMUv3 implements (Arm ARM, "Common event numbers").
        // Which Exception level the kernel runs at: CurrentEL (2 with VHE).
        let inst_retired = cpu
            .regs
            .implemented_events()
            .contains(EventNumber::INST_RETIRED);
        let sentinel_event: u8 = if inst_retired == Some(false) {
            0x11
        } else {
            0x08
        };
        // SAFETY: at EL1 or EL2, where CurrentEL is readable: `cpu.regs` exists, so
        // `El1UserAccess::new`'s contract (EL1) held.
        let kernel_at_el2 = unsafe { pmu_armv8::asm::current_el() } == 2;
        let layout = if sentinel {
            layout
                .with_sentinel(Sentinel::new(u16::from(sentinel_event), kernel_at_el2))
                .map_err(|_| {
                    Refusal::no_device(
                        c"sentinel: the events and the sentinel need more event counters than this CPU has (PMCR_EL0.N)",
                    )
                })?
        } else {
            layout
        };
        let tail = SentinelConfig {
            sentinel,
            sentinel_event,
            kernel_at_el2,
        };
        Ok((layout, tail))
    }

    fn request(config: &KmodEuConfig) -> Option<Request> {
        let tail = &config.tail;
        let layout = Layout::new(
            config.event_counters,
            config.module_events()?,
            config.cycle_counter,
        )
        .ok()?;
        let layout = if tail.sentinel {
            let sentinel = Sentinel::new(u16::from(tail.sentinel_event), tail.kernel_at_el2);
            layout.with_sentinel(sentinel).ok()?
        } else {
            layout
        };
        Some(Request {
            user_access: UserAccess::new(u64::from(config.user_access), config.el0_programming)
                .ok()?,
            layout,
        })
    }

    fn grant(cpu: &mut KmodEuCpu) -> &mut CpuGrant<u64> {
        &mut cpu.grant
    }

    unsafe fn apply(cpu: &mut KmodEuCpu, request: Request) -> Result<(), Refused<u64>> {
        // SAFETY: EL1, interrupts off on this CPU, and the decision to grant EL0 access
        // taken by the caller: `El1UserAccess::new`'s contract.
        let regs = unsafe { El1UserAccess::new() };
        let previous = cpu.grant.applied.then(|| cpu.applied());
        let applied = user_enable::apply(&regs, request, previous.as_ref(), cpu.perf_used)
            .map_err(|e| match e {
                ApplyError::NoPmuV3(no) => Refused::NoUsablePmu {
                    pmu_version: no.version.pmuver(),
                },
                ApplyError::TooFewCounters(t) => Refused::TooFewCounters { have: t.have },
                ApplyError::CounterInUse { counter, config } => {
                    Refused::CounterInUse { counter, config }
                }
                ApplyError::EventNotImplemented { event } => Refused::EventNotImplemented { event },
                _ => Refused::Other,
            })?;
        cpu.old_userenr = applied.old_pmuserenr;
        cpu.new_acr = applied.new_pmuacr;
        cpu.outside_userenr = applied.outside_pmuserenr;
        cpu.outside_acr = applied.outside_pmuacr;
        let g = &mut cpu.grant;
        g.pmu_version = applied.pmuver;
        g.found_userenr = applied.found_pmuserenr;
        g.new_userenr = applied.new_pmuserenr;
        g.owned = applied.owned;
        g.zeroed = applied.zeroed;
        g.kept = applied.kept;
        g.enabled_pmu = applied.enabled_pmu;
        Ok(())
    }

    unsafe fn restore(cpu: &mut KmodEuCpu, request: &Request) {
        // SAFETY: as in `apply`; restoring takes access away again.
        let regs = unsafe { El1UserAccess::new() };
        let restored = user_enable::restore(&regs, &cpu.applied(), &request.layout, cpu.perf_used);
        let g = &mut cpu.grant;
        g.found_userenr = restored.found_pmuserenr;
        g.new_userenr = restored.new_pmuserenr;
        g.released = restored.released;
        g.taken = restored.taken;
    }
}

/// Checks the parameters and fills `cfg` and `layout` (the `layout` parameter's text,
/// with `sentinel` the kernel-entry sentinel below the events, `:k`;
/// NUL-terminated, at most `layout_size` bytes with the NUL) on the CPU it runs on.
/// Returns 0, or a negative errno with `*why` a static sentence saying which rule was
/// broken: `-EINVAL` (a parameter), `-ENODEV` (no PMUv3, or too few counters).
///
/// # Safety
///
/// At EL1 with preemption disabled (ID_AA64DFR0_EL1 and PMCR_EL0 are read on one
/// CPU); `cfg` and `why` valid for writes, `events` a NUL-terminated string or null,
/// `layout` valid for `layout_size` bytes of writes.
#[no_mangle]
pub unsafe extern "C" fn kmod_eu_arm64_configure(
    cfg: *mut KmodEuConfig,
    user_access: u32,
    el0_programming: bool,
    events: *const c_char,
    cycle_counter: bool,
    sentinel: bool,
    layout: *mut c_char,
    layout_size: usize,
    why: *mut *const c_char,
) -> i32 {
    let parameters = Parameters {
        user_access,
        el0_programming,
        cycle_counter,
        flavour: sentinel,
    };
    // SAFETY: the caller's contract is `grant::configure`'s.
    unsafe { grant::configure::<Arm64>(cfg, parameters, events, layout, layout_size, why) }
}

/// On the CPU, interrupts off: [`user_enable::apply`] of `cfg`'s request, a
/// re-grant when `st.grant.applied` (after CPU PM, perf, or on request). Fills `st`:
/// `applied` and `error` say how it went.
///
/// # Safety
///
/// `st` and `cfg` are valid (or null: nothing happens), `cfg` accepted by
/// [`kmod_eu_arm64_configure`]; runs at EL1 with interrupts disabled on the CPU `st`
/// describes, and the caller has decided that EL0 may use the PMU.
#[no_mangle]
pub unsafe extern "C" fn kmod_eu_arm64_apply(st: *mut KmodEuCpu, cfg: *const KmodEuConfig) {
    // SAFETY: the caller's contract is `grant::apply`'s.
    unsafe { grant::apply::<Arm64>(st, cfg) }
}

/// On the CPU, interrupts off: [`user_enable::restore`] of what
/// [`kmod_eu_arm64_apply`] recorded in `st`; clears `applied`. Nothing happens
/// unless `applied`.
///
/// # Safety
///
/// As for [`kmod_eu_arm64_apply`], with `st` filled by it on this CPU.
#[no_mangle]
pub unsafe extern "C" fn kmod_eu_arm64_restore(st: *mut KmodEuCpu, cfg: *const KmodEuConfig) {
    // SAFETY: the caller's contract is `grant::restore`'s.
    unsafe { grant::restore::<Arm64>(st, cfg) }
}

/// "CR|ER" and so on for PMUSERENR_EL0 `bits` ("none" without any of the four):
/// a static NUL-terminated string.
#[no_mangle]
pub extern "C" fn kmod_eu_arm64_access_names(bits: u64) -> *const c_char {
    user_enable::access_names(bits).as_ptr()
}

/// What EL0 may do with PMUSERENR_EL0 `bits` ("read-only", "read and program
/// (EN)", …): a static NUL-terminated string.
#[no_mangle]
pub extern "C" fn kmod_eu_arm64_grant_words(bits: u64) -> *const c_char {
    user_enable::grant_words(bits).as_ptr()
}

/// One granted thread (C: `struct kmod_eu_thread`): [`thread::ThreadGrant`].
pub type KmodEuThread = thread::ThreadGrant;

// The C declaration has the same size and offsets (checked there with static_assert too).
const _: () = assert!(core::mem::size_of::<KmodEuThread>() == 296);
const _: () = assert!(core::mem::offset_of!(KmodEuThread, values) == 40);
const _: () = assert!(core::mem::offset_of!(KmodEuThread, on_cpu) == 288);
const _: () = assert!(core::mem::offset_of!(KmodEuThread, lost) == 290);

/// The grant's bits (`user_access`, EN with `el0_programming`), as checked at load.
fn thread_access(cfg: &KmodEuConfig) -> Option<UserAccess> {
    UserAccess::new(u64::from(cfg.user_access), cfg.el0_programming).ok()
}

/// Per-thread mode, after [`kmod_eu_arm64_apply`] succeeded on this CPU:
/// [`thread::withhold`]: PMUSERENR_EL0 gets back what apply found beside the grant.
/// Returns PMUSERENR_EL0 as left.
///
/// # Safety
///
/// As for [`kmod_eu_arm64_apply`], with `st` filled by it on this CPU.
#[no_mangle]
pub unsafe extern "C" fn kmod_eu_arm64_withhold(st: *const KmodEuCpu) -> u64 {
    // SAFETY: valid or null by the caller's contract.
    let Some(st) = (unsafe { st.as_ref() }) else {
        return 0;
    };
    if !st.grant.applied {
        return 0;
    }
    // SAFETY: EL1, interrupts off on this CPU, which the module programmed:
    // `El1UserAccess::new`'s contract; withholding takes access away.
    let regs = unsafe { El1UserAccess::new() };
    thread::withhold(&regs, &st.applied())
}

/// A granted thread is switched in on this CPU: [`thread::switch_in`].
///
/// # Safety
///
/// `t` and `cfg` valid (or null: nothing happens), `cfg` accepted by
/// [`kmod_eu_arm64_configure`]; at EL1 with interrupts off, on a CPU whose grant
/// [`kmod_eu_arm64_apply`] installed (so the module's counters run there), in the
/// context switch to the thread `t` belongs to.
#[no_mangle]
pub unsafe extern "C" fn kmod_eu_arm64_thread_in(
    t: *mut KmodEuThread,
    cfg: *const KmodEuConfig,
    follow: bool,
) {
    // SAFETY: valid or null by the caller's contract.
    let (Some(t), Some(cfg)) = (unsafe { t.as_mut() }, unsafe { cfg.as_ref() }) else {
        return;
    };
    let Some(access) = thread_access(cfg) else {
        return;
    };
    // SAFETY: EL1, interrupts off, the module's grant decided for this thread: the
    // contract of `El1UserAccess::new`.
    let regs = unsafe { El1UserAccess::new() };
    thread::switch_in(&regs, t, access, follow);
}

/// A granted thread is switched out (or gives its grant up) on this CPU:
/// [`thread::switch_out`].
///
/// # Safety
///
/// `t` valid (or null: nothing happens); at EL1 with interrupts off, on the CPU the
/// thread was switched in on.
#[no_mangle]
pub unsafe extern "C" fn kmod_eu_arm64_thread_out(t: *mut KmodEuThread, follow: bool) {
    // SAFETY: valid or null by the caller's contract.
    let Some(t) = (unsafe { t.as_mut() }) else {
        return;
    };
    if !t.on_cpu {
        return;
    }
    // SAFETY: EL1, interrupts off, on the CPU `t`'s grant is on: `El1UserAccess::new`'s
    // contract; the switch-out takes access away.
    let regs = unsafe { El1UserAccess::new() };
    thread::switch_out(&regs, t, follow);
}

/// The thread ran where the module's counters did not count for it (switched in on a
/// CPU without them, or perf stopped the PMU under it): [`thread::missed`].
///
/// # Safety
///
/// `t` valid (or null: nothing happens), not used concurrently (the glue calls this
/// from the thread's own context switch, like [`kmod_eu_arm64_thread_in`]).
#[no_mangle]
pub unsafe extern "C" fn kmod_eu_arm64_thread_missed(t: *mut KmodEuThread) {
    // SAFETY: valid or null by the caller's contract.
    if let Some(t) = unsafe { t.as_mut() } {
        thread::missed(t);
    }
}

/// The running granted thread asks for its grant back: [`thread::regrant`]. Returns 0
/// when PMUSERENR_EL0 still held it, 1 when it was put back, 2 when the thread's counts
/// had been missed since its last grant (`KMOD_EU_REGRANT_LOST` for user space).
///
/// # Safety
///
/// As for [`kmod_eu_arm64_thread_in`], called by the thread `t` belongs to.
#[no_mangle]
pub unsafe extern "C" fn kmod_eu_arm64_thread_regrant(
    t: *mut KmodEuThread,
    cfg: *const KmodEuConfig,
) -> i32 {
    // SAFETY: valid or null by the caller's contract.
    let (Some(t), Some(cfg)) = (unsafe { t.as_mut() }, unsafe { cfg.as_ref() }) else {
        return 0;
    };
    let Some(access) = thread_access(cfg) else {
        return 0;
    };
    // SAFETY: as in `kmod_eu_arm64_thread_in`.
    let regs = unsafe { El1UserAccess::new() };
    match thread::regrant(&regs, t, access) {
        thread::Regranted::Held => 0,
        thread::Regranted::Restored => 1,
        thread::Regranted::Lost => 2,
    }
}
