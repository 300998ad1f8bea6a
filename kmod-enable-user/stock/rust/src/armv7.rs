//! ARMv7 / AArch32: the grant of `pmu_armv7::user_enable` (PMUSERENR), for the ARMv7
//! flavour's callbacks (CPU hotplug, CPU PM, `regrant`) and load-time checks. The C
//! functions are [`crate::grant`]'s, as on arm64, with the AArch32 rules below: PMUv1
//! cannot filter to PL0, PMUv2 has no read-only grant. Ownership is arm64's: CPU_CYCLES
//! on one of the module's event counters, perf's `used_mask` beside the grant.

use core::ffi::{c_char, CStr};

use pmu_armv7::user_enable::{
    self, Applied, ApplyError, Layout, ModuleEvents, Request, UserAccess, UserAccessError,
    UserAccessRegisters,
};
use pmu_armv7::{PerfMon, Pl1Registers, PmuRegisters};

use crate::ffi::Refusal;
use crate::grant::{self, Config, CpuGrant, Flavour, Parameters, Refused, UserAccessFault};

/// The ARMv7 flavour of [`crate::grant`].
#[derive(Debug)]
pub enum Armv7 {}

/// What the ARMv7 config adds after the PMU version: padding.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Reserved {
    /// Zero.
    pub reserved: [u8; 3],
}

/// The module-wide settings, checked once at load by [`kmod_eu_armv7_configure`]
/// (C: `struct kmod_eu_v7_config`; `pmu_version` is its `perfmon`).
pub type KmodEuV7Config = Config<Reserved>;

const _: () = assert!(core::mem::size_of::<KmodEuV7Config>() == 24);

/// One CPU's state (C: `struct kmod_eu_v7_cpu`; `pmu_version` is its `perfmon`, and its
/// `reserved` byte the grant's padding): AArch32 registers are 32 bits.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct KmodEuV7Cpu {
    /// C's fields from `found_userenr` to `reserved`.
    pub grant: CpuGrant<u32>,
    /// Input of apply and restore, set by the glue on this CPU with interrupts off
    /// just before: perf's `used_mask` of this CPU as PMCNTENSET bits.
    pub perf_used: u32,
}

// The C declaration has the same size and offsets (checked there with static_assert too).
const _: () = assert!(core::mem::size_of::<KmodEuV7Cpu>() == 48);
const _: () = assert!(core::mem::offset_of!(KmodEuV7Cpu, grant.applied) == 40);
const _: () = assert!(core::mem::offset_of!(KmodEuV7Cpu, perf_used) == 44);

impl KmodEuV7Cpu {
    fn applied(&self) -> Applied {
        let g = &self.grant;
        Applied {
            perfmon: g.pmu_version,
            found_pmuserenr: g.found_userenr,
            new_pmuserenr: g.new_userenr,
            owned: g.owned,
            zeroed: g.zeroed,
            kept: g.kept,
            enabled_pmu: g.enabled_pmu,
        }
    }
}

/// The loading CPU: its registers (which `configure` only reads) and ID_DFR0.PerfMon.
#[derive(Debug)]
pub struct LoadingCpu {
    regs: Pl1Registers,
    perfmon: PerfMon,
}

impl Flavour for Armv7 {
    type Word = u32;
    type Parameters = ();
    type ConfigTail = Reserved;
    type Cpu = KmodEuV7Cpu;
    type LoadingCpu = LoadingCpu;
    type Request = Request;

    const EVENT_ABOVE_16_BITS: &'static CStr = c"events: an event number above 0xffff";

    unsafe fn loading_cpu() -> (LoadingCpu, u8) {
        // SAFETY: PL1 with preemption off (the caller's contract); only ID_DFR0 and, with
        // a PMU, PMCR are read here: nothing is written.
        let regs = unsafe { Pl1Registers::new() };
        let perfmon = PerfMon::from_id_dfr0(regs.id_dfr0());
        (LoadingCpu { regs, perfmon }, perfmon.raw())
    }

    fn check_user_access(bits: u32, el0_programming: bool) -> Result<(), UserAccessFault> {
        UserAccess::new(bits, el0_programming)
            .map(drop)
            .map_err(|e| match e {
                UserAccessError::Empty => UserAccessFault::Empty,
                UserAccessError::WriteAccessNeedsOptIn => UserAccessFault::WriteAccessNeedsOptIn,
                _ => UserAccessFault::UnknownBits,
            })
    }

    fn check(
        cpu: &LoadingCpu,
        parameters: &Parameters<()>,
        parsed: ModuleEvents,
    ) -> Result<(Layout, Reserved), Refusal> {
        match cpu.perfmon {
            PerfMon::PmuV2 | PerfMon::PmuV3(_) => {}
            PerfMon::PmuV1 => {
                return Err(Refusal::no_device(
                    c"PMUv1 (ID_DFR0.PerfMon=1) cannot restrict counting to PL0 (no PMXEVTYPER privilege filter)",
                ))
            }
            _ => {
                return Err(Refusal::no_device(
                    c"no ARM-architected PMU on this CPU (ID_DFR0.PerfMon is 0 or 0xF)",
                ))
            }
        }
        let read_only = cpu.perfmon.has_read_only_grant();
        if !read_only && !parameters.el0_programming {
            return Err(Refusal::not_supported(
                c"PMUv2 (ID_DFR0.PerfMon=2: Cortex-A7, Cortex-A15) has no read-only grant, PMUSERENR.EN alone lets user space program every counter and count in PL1: load with el0_programming=1 to accept that",
            ));
        }
        if parsed.is_empty() && !parameters.cycle_counter && !parameters.el0_programming {
            return Err(Refusal::invalid(
                c"events is empty and cycle_counter=0: the grant would only expose perf's counters",
            ));
        }
        if parsed.as_slice().contains(&user_enable::CHAIN) {
            return Err(Refusal::invalid(
                c"events: 0x1e (CHAIN) only pairs two counters and counts nothing alone",
            ));
        }
        if parameters.cycle_counter && parsed.as_slice().contains(&user_enable::CPU_CYCLES) {
            return Err(Refusal::invalid(
                c"events: 0x11 (CPU_CYCLES) is already counted by cycle_counter=1",
            ));
        }
        // PMXEVTYPER.evtCount: 8 bits on PMUv2, 10 on PMUv3 (DDI 0406C C12 "PMXEVTYPER").
        let max_event: u16 = if read_only { 0x3FF } else { 0xFF };
        if parsed.as_slice().iter().any(|&e| e > max_event) {
            return Err(Refusal::invalid(
                c"events: an event number above PMXEVTYPER.evtCount (0xff on PMUv2, 0x3ff on PMUv3)",
            ));
        }
        // PMCR.N, bits 15:11 (DDI 0406C C12 "PMCR").
        let n = ((cpu.regs.pmcr().get() >> 11) & 0x1f) as u8;
        // CPU_CYCLES on an event counter below the events, as on arm64: PMCCNTR is perf's.
        let layout = Layout::new(n, parsed, parameters.cycle_counter).map_err(|_| {
            Refusal::no_device(c"events: more events than this CPU has event counters (PMCR.N)")
        })?;
        Ok((layout, Reserved::default()))
    }

    fn request(config: &KmodEuV7Config) -> Option<Request> {
        Some(Request {
            user_access: UserAccess::new(config.user_access, config.el0_programming).ok()?,
            layout: Layout::new(
                config.event_counters,
                config.module_events()?,
                config.cycle_counter,
            )
            .ok()?,
        })
    }

    fn grant(cpu: &mut KmodEuV7Cpu) -> &mut CpuGrant<u32> {
        &mut cpu.grant
    }

    unsafe fn apply(cpu: &mut KmodEuV7Cpu, request: Request) -> Result<(), Refused<u32>> {
        // SAFETY: PL1, interrupts off on this CPU; perf's counters are never reset or
        // reprogrammed by `apply` (it refuses a counter perf holds and writes no counter
        // outside the layout): `new`'s contract.
        let regs = unsafe { Pl1Registers::new() };
        let previous = cpu.grant.applied.then(|| cpu.applied());
        let applied = user_enable::apply(&regs, request, previous.as_ref(), cpu.perf_used)
            .map_err(|e| match e {
                ApplyError::NoUsablePmu { perfmon } => Refused::NoUsablePmu {
                    pmu_version: perfmon.raw(),
                },
                ApplyError::NoReadOnlyGrant { perfmon } => Refused::NoReadOnlyGrant {
                    pmu_version: perfmon.raw(),
                },
                ApplyError::TooFewCounters(t) => Refused::TooFewCounters { have: t.have },
                ApplyError::CounterInUse { counter, config } => {
                    Refused::CounterInUse { counter, config }
                }
                ApplyError::EventNotImplemented { event } => Refused::EventNotImplemented { event },
                ApplyError::EventOutOfRange { event } => Refused::EventOutOfRange { event },
                _ => Refused::Other,
            })?;
        let g = &mut cpu.grant;
        g.pmu_version = applied.perfmon;
        g.found_userenr = applied.found_pmuserenr;
        g.new_userenr = applied.new_pmuserenr;
        g.owned = applied.owned;
        g.zeroed = applied.zeroed;
        g.kept = applied.kept;
        g.enabled_pmu = applied.enabled_pmu;
        Ok(())
    }

    unsafe fn restore(cpu: &mut KmodEuV7Cpu, request: &Request) {
        // SAFETY: as in `apply`; restoring takes access away again.
        let regs = unsafe { Pl1Registers::new() };
        let restored = user_enable::restore(&regs, &cpu.applied(), &request.layout, cpu.perf_used);
        let g = &mut cpu.grant;
        g.found_userenr = restored.found_pmuserenr;
        g.new_userenr = restored.new_pmuserenr;
        g.released = restored.released;
        g.taken = restored.taken;
    }
}

/// Checks the parameters against the loading CPU and fills `cfg` and `layout` (as
/// the arm64 `kmod_eu_arm64_configure`). Returns 0, or a negative errno with `*why`
/// a static sentence: `-EINVAL` (a parameter), `-ENODEV` (no PMUv2/PMUv3, too few
/// counters), `-EOPNOTSUPP` (PMUv2, which has no read-only grant, without
/// `el0_programming=1`).
///
/// # Safety
///
/// At PL1 on an ARMv7 CPU (the glue checked ID_MMFR0) with preemption disabled;
/// `cfg` and `why` valid for writes, `events` a NUL-terminated string or null,
/// `layout` valid for `layout_size` bytes of writes.
#[no_mangle]
pub unsafe extern "C" fn kmod_eu_armv7_configure(
    cfg: *mut KmodEuV7Config,
    user_access: u32,
    el0_programming: bool,
    events: *const c_char,
    cycle_counter: bool,
    layout: *mut c_char,
    layout_size: usize,
    why: *mut *const c_char,
) -> i32 {
    let parameters = Parameters {
        user_access,
        el0_programming,
        cycle_counter,
        flavour: (),
    };
    // SAFETY: the caller's contract is `grant::configure`'s.
    unsafe { grant::configure::<Armv7>(cfg, parameters, events, layout, layout_size, why) }
}

/// On the CPU, interrupts off: [`user_enable::apply`] of `cfg`'s request (a
/// re-grant when `st.applied`). `st.applied` and `st.error` say how it went.
///
/// # Safety
///
/// `st` and `cfg` valid (or null: nothing happens), `cfg` accepted by
/// [`kmod_eu_armv7_configure`]; PL1 with interrupts disabled on the CPU `st`
/// describes, an ARMv7 CPU; the caller has decided that PL0 may use the PMU.
#[no_mangle]
pub unsafe extern "C" fn kmod_eu_armv7_apply(st: *mut KmodEuV7Cpu, cfg: *const KmodEuV7Config) {
    // SAFETY: the caller's contract is `grant::apply`'s.
    unsafe { grant::apply::<Armv7>(st, cfg) }
}

/// On the CPU, interrupts off: [`user_enable::restore`] of what
/// [`kmod_eu_armv7_apply`] recorded; clears `st.applied`. Nothing happens unless
/// `st.applied`.
///
/// # Safety
///
/// As for [`kmod_eu_armv7_apply`], with `st` filled by it on this CPU.
#[no_mangle]
pub unsafe extern "C" fn kmod_eu_armv7_restore(st: *mut KmodEuV7Cpu, cfg: *const KmodEuV7Config) {
    // SAFETY: the caller's contract is `grant::restore`'s.
    unsafe { grant::restore::<Armv7>(st, cfg) }
}

/// "EN", "CR|ER" and so on for PMUSERENR `bits` (the same bit positions as
/// PMUSERENR_EL0): a static NUL-terminated string.
#[no_mangle]
pub extern "C" fn kmod_eu_armv7_access_names(bits: u32) -> *const c_char {
    user_enable::access_names(u64::from(bits)).as_ptr()
}

/// What PL0 may do with PMUSERENR `bits`, in words: a static NUL-terminated string.
#[no_mangle]
pub extern "C" fn kmod_eu_armv7_grant_words(bits: u32) -> *const c_char {
    user_enable::grant_words(u64::from(bits)).as_ptr()
}

/// On the CPU, interrupts off: [`user_enable::quiet_reserved`] of the event counters
/// `reserved` (taken out of perf's counter mask, none perf holds now): PMINTENCLR and
/// PMOVSR, with `disable` PMCNTENCLR, then `isb`.
///
/// # Safety
///
/// PL1 with interrupts disabled on an ARMv7 CPU with a PMUv2/PMUv3 (the glue checked
/// ID_MMFR0; the caller found perf's arm_pmu there); no counter of `reserved` is perf's.
#[no_mangle]
pub unsafe extern "C" fn kmod_eu_armv7_quiet(reserved: u32, disable: bool) {
    // SAFETY: the caller's contract: PL1, interrupts off, and the counters written are
    // not perf's (perf gave them up: they are outside its counter mask).
    let regs = unsafe { Pl1Registers::new() };
    user_enable::quiet_reserved(&regs, reserved, disable);
}

/// On the CPU, interrupts off: whether PMCR.E is set ([`user_enable::pmu_enabled`]).
///
/// # Safety
///
/// PL1 with interrupts disabled on an ARMv7 CPU with a PMUv2/PMUv3.
#[no_mangle]
pub unsafe extern "C" fn kmod_eu_armv7_pmu_enabled() -> bool {
    // SAFETY: the caller's contract; PMCR is only read.
    let regs = unsafe { Pl1Registers::new() };
    user_enable::pmu_enabled(&regs)
}

/// On the CPU, interrupts off: PMUSERENR to 0 if it still holds the module's grant
/// `granted` ([`user_enable::withdraw`]; 0 writes nothing).
///
/// # Safety
///
/// PL1 with interrupts disabled on an ARMv7 CPU with a PMUv2/PMUv3.
#[no_mangle]
pub unsafe extern "C" fn kmod_eu_armv7_withdraw(granted: u32) {
    // SAFETY: the caller's contract; only the module's own grant is taken back.
    let regs = unsafe { Pl1Registers::new() };
    user_enable::withdraw(&regs, granted);
}
