//! The per-CPU grant of PMUSERENR (arm64's PMUSERENR_EL0, AArch32's PMUSERENR) as the C
//! glue drives it, once for both flavours that have it: `configure` at load, then
//! `apply` and `restore` on each CPU. The flavour ([`Flavour`], implemented by
//! `crate::arm64` and `crate::armv7`) brings its registers and rules; this module
//! owns everything the C side sees: the shared head of the C structs ([`Config`],
//! [`CpuGrant`]), the order of the checks, the refusal sentences and the errno of each
//! refusal.
//!
//! The events, the layout and its text are `pmu_armv8::user_enable`'s on both
//! ([`ModuleEvents`], [`Layout`]: pmu-armv7 reuses them).

use core::ffi::{c_char, CStr};

use pmu_armv8::user_enable::{EventsError, Layout, ModuleEvents, MAX_MODULE_EVENTS};

use crate::ffi::{self, Refusal, EBUSY, EINVAL, ENODEV, EOPNOTSUPP};

/// The longest `events` text: 6 items of `0xffff` and 5 commas.
pub const EVENTS_TEXT_MAX: usize = 6 * 6 + 5;

/// `error_detail` of an `-EOPNOTSUPP` that names no event (C: `KMOD_EU_NO_EVENT`).
pub const NO_EVENT: u32 = u32::MAX;

/// The module-wide settings, checked once at load by [`configure`] and read by every
/// per-CPU call: the C config's fields up to the PMU version, then the flavour's `tail`
/// (C: `struct kmod_eu_config`, `struct kmod_eu_v7_config`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Config<T> {
    /// The `user_access` parameter.
    pub user_access: u32,
    /// The events the module programs, `n_events` of them.
    pub events: [u16; MAX_MODULE_EVENTS],
    /// How many of `events`.
    pub n_events: u8,
    /// PMCR_EL0.N (PMCR.N) of the loading CPU: the layout's counters are counted from it.
    pub event_counters: u8,
    /// The `cycle_counter` parameter.
    pub cycle_counter: bool,
    /// The `el0_programming` parameter.
    pub el0_programming: bool,
    /// The loading CPU's PMU version (C: `pmuver`, ID_AA64DFR0_EL1.PMUVer; `perfmon`,
    /// ID_DFR0.PerfMon).
    pub pmu_version: u8,
    /// What the flavour adds.
    pub tail: T,
}

impl<T> Config<T> {
    /// The events of a config [`configure`] accepted; `None` for any other.
    pub fn module_events(&self) -> Option<ModuleEvents> {
        let n = usize::from(self.n_events).min(MAX_MODULE_EVENTS);
        ModuleEvents::from_slice(self.events.get(..n)?).ok()
    }
}

/// One CPU's grant: the C per-CPU struct's fields from `found_userenr` to the PMU
/// version, `W` the width of the flavour's registers (u64 on AArch64, u32 on AArch32).
/// The C struct's trailing padding byte(s) are this struct's.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuGrant<W> {
    /// PMUSERENR found by the last apply or restore.
    pub found_userenr: W,
    /// PMUSERENR written by the last apply or restore.
    pub new_userenr: W,
    /// PMCNTENSET bits of the module's counters.
    pub owned: W,
    /// The module's counters the last apply programmed from zero.
    pub zeroed: W,
    /// The module's counters the last apply found still running and kept.
    pub kept: W,
    /// Counters the restore disabled and zeroed.
    pub released: W,
    /// The module's counters the restore left alone: perf holds them (arm64: perf's
    /// `used_mask`) or they count something else (AArch32).
    pub taken: W,
    /// With `-EBUSY`: the configuration register of the counter in use.
    pub busy_config: W,
    /// 0, or the negative errno of the last apply: `-ENODEV` (no usable PMU, too few
    /// counters), `-EBUSY` (a layout counter in use), `-EOPNOTSUPP` (an event not
    /// implemented; AArch32 PMUv2 without `el0_programming`), `-EINVAL` (an event out of
    /// range).
    pub error: i32,
    /// With `-EBUSY` the counter ([`pmu_armv8::user_enable::CYCLE_COUNTER`]: the cycle
    /// counter), with `-EOPNOTSUPP` and `-EINVAL` the event ([`NO_EVENT`]: none), with
    /// `-ENODEV` PMCR.N of this CPU (0: no usable PMU).
    pub error_detail: u32,
    /// Whether the grant is in place (and must be restored).
    pub applied: bool,
    /// Whether the module turned PMCR.E on.
    pub enabled_pmu: bool,
    /// This CPU's PMU version (as [`Config::pmu_version`]).
    pub pmu_version: u8,
}

/// Why the flavour's `apply` gave no grant on this CPU, for the glue's log: [`apply`]
/// turns it into `error` and `error_detail`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused<W> {
    /// No PMU the grant works with (`-ENODEV`, detail 0).
    NoUsablePmu {
        /// This CPU's PMU version.
        pmu_version: u8,
    },
    /// No read-only grant on this PMU and no `el0_programming` (`-EOPNOTSUPP`, detail
    /// [`NO_EVENT`]).
    NoReadOnlyGrant {
        /// This CPU's PMU version.
        pmu_version: u8,
    },
    /// Fewer event counters than the layout (`-ENODEV`, detail PMCR.N).
    TooFewCounters {
        /// PMCR.N of this CPU.
        have: u8,
    },
    /// A layout counter counts for someone else (`-EBUSY`, detail the counter).
    CounterInUse {
        /// The counter.
        counter: u8,
        /// Its configuration register.
        config: W,
    },
    /// A common event this CPU does not implement (`-EOPNOTSUPP`, detail the event).
    EventNotImplemented {
        /// The event number.
        event: u16,
    },
    /// An event wider than this PMU's event field (`-EINVAL`, detail the event).
    EventOutOfRange {
        /// The event number.
        event: u16,
    },
    /// Anything else (`-EINVAL`, detail 0).
    Other,
}

/// Why a `user_access` value was refused: the cases of both flavours' `UserAccessError`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserAccessFault {
    /// 0 grants nothing.
    Empty,
    /// EN asked for through `user_access` instead of `el0_programming=1`.
    WriteAccessNeedsOptIn,
    /// A bit outside SW | CR | ER.
    UnknownBits,
}

/// The parameters [`configure`] checks; `F` what the flavour takes besides.
#[derive(Clone, Copy, Debug)]
pub struct Parameters<F> {
    /// The `user_access` parameter.
    pub user_access: u32,
    /// The `el0_programming` parameter.
    pub el0_programming: bool,
    /// The `cycle_counter` parameter.
    pub cycle_counter: bool,
    /// The flavour's own parameters.
    pub flavour: F,
}

/// One flavour of the grant: its C structs, its registers and its rules.
pub trait Flavour {
    /// The width of the PMU registers (u64 on AArch64, u32 on AArch32).
    type Word: Copy;
    /// The parameters `configure` takes besides the shared ones.
    type Parameters: Copy;
    /// The config's fields after the PMU version.
    type ConfigTail: Copy;
    /// The C per-CPU struct.
    type Cpu;
    /// The loading CPU, as `configure` reads it.
    type LoadingCpu;
    /// What `apply` and `restore` do on each CPU.
    type Request;

    /// The sentence for an event number above 0xffff.
    const EVENT_ABOVE_16_BITS: &'static CStr;

    /// Reads the loading CPU's PMU version and what [`Flavour::check`] needs; writes
    /// nothing.
    ///
    /// # Safety
    ///
    /// The contract of the flavour's `configure`: privileged, preemption disabled.
    unsafe fn loading_cpu() -> (Self::LoadingCpu, u8);

    /// Checks `user_access` with `el0_programming`.
    ///
    /// # Errors
    /// Which rule it breaks.
    fn check_user_access(user_access: u32, el0_programming: bool) -> Result<(), UserAccessFault>;

    /// The flavour's rules for the parsed `events` on the loading CPU, after the shared
    /// ones: the layout and the config's tail.
    ///
    /// # Errors
    /// The first rule broken.
    fn check(
        cpu: &Self::LoadingCpu,
        parameters: &Parameters<Self::Parameters>,
        events: ModuleEvents,
    ) -> Result<(Layout, Self::ConfigTail), Refusal>;

    /// The request of a config [`configure`] accepted; `None` for any other.
    fn request(config: &Config<Self::ConfigTail>) -> Option<Self::Request>;

    /// The shared part of the C per-CPU struct.
    fn grant(cpu: &mut Self::Cpu) -> &mut CpuGrant<Self::Word>;

    /// Grants `request` on this CPU (a re-grant when `grant(cpu).applied`) and records
    /// what it found and wrote in `cpu`, all but `error` and `applied`.
    ///
    /// # Errors
    /// Why there is no grant; then nothing was written to the registers.
    ///
    /// # Safety
    ///
    /// The contract of the flavour's `apply`: privileged, interrupts off, on the CPU
    /// `cpu` describes, the decision to grant taken.
    unsafe fn apply(cpu: &mut Self::Cpu, request: Self::Request)
        -> Result<(), Refused<Self::Word>>;

    /// Takes back on this CPU what [`Flavour::apply`] recorded in `cpu` and records
    /// what it found and did, all but `applied`.
    ///
    /// # Safety
    ///
    /// As for [`Flavour::apply`], with `cpu` filled by it on this CPU.
    unsafe fn restore(cpu: &mut Self::Cpu, request: &Self::Request);
}

/// `configure` of the flavour `F`: checks the parameters and `events` (a
/// NUL-terminated list, or null for none) on the CPU it runs on, fills `config` and
/// writes the layout's text into `layout` (NUL-terminated, at most `layout_size` bytes
/// with the NUL). Returns 0, or a negative errno with `*why` a static sentence saying
/// which rule was broken (`""` on success). `config` keeps the CPU's PMU version even
/// when refused, for the glue's log line.
///
/// # Safety
///
/// The contract of [`Flavour::loading_cpu`]; `config` and `why` valid for writes (or
/// null: `-EINVAL`), `events` a NUL-terminated string or null, `layout` null or valid
/// for `layout_size` bytes of writes.
pub unsafe fn configure<F: Flavour>(
    config: *mut Config<F::ConfigTail>,
    parameters: Parameters<F::Parameters>,
    events: *const c_char,
    layout: *mut c_char,
    layout_size: usize,
    why: *mut *const c_char,
) -> i32 {
    // SAFETY: valid pointers or null, by the caller's contract.
    let (Some(config), Some(why)) = (unsafe { config.as_mut() }, unsafe { why.as_mut() }) else {
        return -EINVAL;
    };
    *why = c"".as_ptr();
    // SAFETY: the caller's contract is `checked`'s.
    match unsafe { checked::<F>(config, parameters, events) } {
        Ok(checked) => {
            // SAFETY: null or valid for `layout_size` bytes, by the caller's contract.
            unsafe { ffi::write_c_text(layout, layout_size, |out| checked.write_text(out)) };
            0
        }
        Err(refusal) => {
            *why = refusal.why.as_ptr();
            refusal.errno
        }
    }
}

/// The checks of [`configure`], in the order the refusals are reported.
///
/// # Safety
///
/// As for [`configure`].
unsafe fn checked<F: Flavour>(
    config: &mut Config<F::ConfigTail>,
    parameters: Parameters<F::Parameters>,
    events: *const c_char,
) -> Result<Layout, Refusal> {
    // The version first, so that every refusal's log line names the CPU's real one.
    // SAFETY: the caller's contract is `loading_cpu`'s.
    let (cpu, pmu_version) = unsafe { F::loading_cpu() };
    config.pmu_version = pmu_version;
    F::check_user_access(parameters.user_access, parameters.el0_programming)
        .map_err(user_access_refusal)?;
    // SAFETY: `events` is null or a NUL-terminated string (the caller's contract).
    let text = unsafe { ffi::c_bytes(events, EVENTS_TEXT_MAX) }.ok_or(Refusal::invalid(
        c"events: longer than a list of 6 event numbers can be",
    ))?;
    let parsed = ModuleEvents::parse(text).map_err(events_refusal::<F>)?;
    let (layout, tail) = F::check(&cpu, &parameters, parsed)?;
    *config = Config {
        user_access: parameters.user_access,
        events: [0; MAX_MODULE_EVENTS],
        n_events: parsed.len() as u8,
        event_counters: layout.event_counters(),
        cycle_counter: parameters.cycle_counter,
        el0_programming: parameters.el0_programming,
        pmu_version,
        tail,
    };
    for (slot, &event) in config.events.iter_mut().zip(parsed.as_slice()) {
        *slot = event;
    }
    Ok(layout)
}

fn user_access_refusal(fault: UserAccessFault) -> Refusal {
    Refusal::invalid(match fault {
        UserAccessFault::Empty => c"user_access=0 grants nothing",
        UserAccessFault::WriteAccessNeedsOptIn => {
            c"user_access may hold SW=2, CR=4, ER=8 only: write access (EN=1) is granted by el0_programming=1 alone"
        }
        UserAccessFault::UnknownBits => c"user_access has bits outside SW=2|CR=4|ER=8",
    })
}

fn events_refusal<F: Flavour>(error: EventsError) -> Refusal {
    Refusal::invalid(match error {
        EventsError::TooMany => c"events: at most 6 event numbers",
        EventsError::OutOfRange { .. } => F::EVENT_ABOVE_16_BITS,
        EventsError::Duplicate { .. } => c"events: an event named twice",
        _ => c"events: a comma-separated list of event numbers, decimal or 0x-hex, e.g. 0x8,0x3",
    })
}

/// `apply` of the flavour `F`: grants `config`'s request on this CPU (a re-grant when
/// `cpu`'s grant is applied). `applied` and `error` say how it went; a refusal leaves
/// `applied` as it was.
///
/// # Safety
///
/// `cpu` and `config` valid (or null: nothing happens), `config` accepted by
/// [`configure`]; the contract of [`Flavour::apply`].
pub unsafe fn apply<F: Flavour>(cpu: *mut F::Cpu, config: *const Config<F::ConfigTail>) {
    // SAFETY: valid or null, by the caller's contract.
    let (Some(cpu), Some(config)) = (unsafe { cpu.as_mut() }, unsafe { config.as_ref() }) else {
        return;
    };
    let Some(request) = F::request(config) else {
        F::grant(cpu).error = -EINVAL;
        return;
    };
    // SAFETY: the caller's contract is `F::apply`'s.
    let result = unsafe { F::apply(cpu, request) };
    let grant = F::grant(cpu);
    match result {
        Ok(()) => {
            grant.error = 0;
            grant.applied = true;
        }
        Err(refused) => {
            (grant.error, grant.error_detail) = match refused {
                Refused::NoUsablePmu { pmu_version } => {
                    grant.pmu_version = pmu_version;
                    (-ENODEV, 0)
                }
                Refused::NoReadOnlyGrant { pmu_version } => {
                    grant.pmu_version = pmu_version;
                    (-EOPNOTSUPP, NO_EVENT)
                }
                Refused::TooFewCounters { have } => (-ENODEV, u32::from(have)),
                Refused::CounterInUse { counter, config } => {
                    grant.busy_config = config;
                    (-EBUSY, u32::from(counter))
                }
                Refused::EventNotImplemented { event } => (-EOPNOTSUPP, u32::from(event)),
                Refused::EventOutOfRange { event } => (-EINVAL, u32::from(event)),
                Refused::Other => (-EINVAL, 0),
            };
        }
    }
}

/// `restore` of the flavour `F`: takes back what [`apply`] granted on this CPU and
/// clears `applied`. Nothing happens unless `applied`.
///
/// # Safety
///
/// As for [`apply`], with `cpu` filled by it on this CPU.
pub unsafe fn restore<F: Flavour>(cpu: *mut F::Cpu, config: *const Config<F::ConfigTail>) {
    // SAFETY: valid or null, by the caller's contract.
    let (Some(cpu), Some(config)) = (unsafe { cpu.as_mut() }, unsafe { config.as_ref() }) else {
        return;
    };
    if !F::grant(cpu).applied {
        return;
    }
    let Some(request) = F::request(config) else {
        return;
    };
    // SAFETY: the caller's contract is `F::restore`'s.
    unsafe { F::restore(cpu, &request) };
    F::grant(cpu).applied = false;
}

#[cfg(test)]
mod tests;
