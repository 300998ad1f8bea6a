//! The direct backend: user space programs and reads the PMU itself, after the kernel
//! module `kmod-enable-user` opened the registers to user mode (ARMv8: PMUSERENR_EL0.EN;
//! ARM1176: SUNAVCR.V, seed 004).
//!
//! - [`probe`] tries one register access in a forked child first (the child inherits
//!   the CPU pinning): if user access is off, the instruction traps and the child dies
//!   of SIGILL, which becomes [`Error::UserAccessNotEnabled`] ("user access to the PMU is
//!   not enabled: load kmod-enable-user"), never a crash of the caller;
//! - the constructors (`take_armv8`, `take_arm1176`) pin the thread to one CPU (the
//!   registers and the enable bit are per CPU), probe, and hand back the
//!   architecture crate's driver (`El0Pmu`, `Arm1176Pmu<Cp15>`);
//! - [`allocate`] turns event names into counters of a `pmu_core::CounterPool`;
//! - [`DirectMeter`] measures regions on them: overflow from the overflow flags,
//!   context switches from `getrusage` switch counts taken outside the region,
//!   migration from `sched_getcpu` before and after, and (ARMv8) revocation of user
//!   access from PMUSERENR_EL0, which EL0 may always read, checked before every counter
//!   access so a revoked grant is an error instead of SIGILL.
//!
//! x86 has no direct backend: its counters are programmed with WRMSR, which needs ring
//! 0 ([`crate::error::DirectUnsupported::X86NeedsRing0`]); perf gives rdpmc there.

use pmu_core::{Counter, CounterPool, CounterWidth, Pmu, PrivilegeFilter, Reading, RegionMeter};

use crate::error::{Error, Op, Result};
use crate::events;
use crate::measure::Counters;
use crate::region::{direct_evidence, direct_readings, Evidence};
use crate::sched::ThreadStamp;
use crate::sys::{self, ChildEnd};
use crate::MAX_EVENTS;

#[cfg(all(target_arch = "arm", target_feature = "v7"))]
pub mod aarch32;

/// Runs `access` (one register access that traps without user access) in a forked
/// child and classifies the outcome.
///
/// # Errors
/// [`Error::UserAccessNotEnabled`] when the child died of SIGILL and the module is not
/// loaded, [`Error::ModuleGrantMissing`] when it is;
/// [`Error::ProbeFailed`] for any other abnormal end; [`Error::Syscall`] when the
/// child could not be started.
pub fn probe_with(access: fn()) -> Result<()> {
    let end = sys::run_in_child(access).map_err(|errno| Error::Syscall {
        op: Op::Probe,
        errno,
    })?;
    classify(end)
}

fn classify(end: ChildEnd) -> Result<()> {
    match end {
        ChildEnd::Exited(0) => Ok(()),
        // Not loaded, or loaded and its grant gone: the module's sysfs state tells.
        ChildEnd::Signaled(libc::SIGILL) => Err(Error::trapped()),
        ChildEnd::Signaled(signal) => Err(Error::ProbeFailed { status: signal }),
        ChildEnd::Exited(code) => Err(Error::ProbeFailed { status: code << 8 }),
    }
}

/// Whether user mode may program the PMU of the CPU this thread runs on (pin first:
/// the grant is per CPU).
///
/// # Errors
/// [`Error::UserAccessNotEnabled`]; [`Error::DirectUnsupported`] where there is no
/// direct backend; [`Error::ProbeFailed`].
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
        Err(Error::DirectUnsupported {
            reason: crate::error::DirectUnsupported::X86NeedsRing0,
        })
    }
    #[cfg(not(any(target_arch = "aarch64", target_arch = "arm", target_arch = "x86_64")))]
    {
        Err(Error::DirectUnsupported {
            reason: crate::error::DirectUnsupported::Architecture,
        })
    }
}

/// The ARM1176's `CPU implementer` and `CPU part` as Linux prints them in /proc/cpuinfo
/// (arch/arm/kernel/setup.c `c_show`: MIDR bits 31:24 and 15:4; ARM_CPU_PART_ARM1176 =
/// 0x4100b760 in arch/arm/include/asm/cputype.h).
pub const ARM1176_MIDR: (u32, u32) = (0x41, 0xb76);

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

/// Counters of a `CounterPool` for `names` (generic names or `r<hex>`, see
/// [`events::direct_event`]), counting in `filter`'s levels, not yet started.
///
/// # Errors
/// Name errors; pmu-core's allocation errors (no free counter, event not implemented,
/// filter unsupported: the ARM1176 only counts [`PrivilegeFilter::ALL`]).
pub fn allocate<'p, P: Pmu>(
    pool: &'p CounterPool<P>,
    names: &[&str],
    filter: PrivilegeFilter,
) -> Result<Vec<Counter<'p, P>>> {
    if names.len() > MAX_EVENTS {
        return Err(Error::TooManyEvents {
            given: names.len(),
            max: MAX_EVENTS,
        });
    }
    names
        .iter()
        .map(|name| Ok(pool.counter(events::direct_event(name)?, filter)?))
        .collect()
}

/// Where kmod-enable-user publishes the counters it runs for EL0 under its read-only
/// grant (`5=0x8 31=0x11`: counter=event, 31 the cycle counter).
pub const MODULE_LAYOUT: &str = "/sys/module/kmod_enable_user/parameters/layout";

/// Counters of a pool over the module's counters ([`pmu_armv8::granted::GrantedPmu`])
/// for `names`: each on the slot where the module counts that event, EL0 only.
///
/// # Errors
/// Name errors; [`Error::NotInModuleLayout`] for an event the module does not count.
#[cfg(target_arch = "aarch64")]
pub fn allocate_granted<'p, R: pmu_armv8::granted::CounterReads>(
    pool: &'p CounterPool<pmu_armv8::granted::GrantedPmu<R>>,
    names: &[&str],
    layout_text: &str,
) -> Result<Vec<Counter<'p, pmu_armv8::granted::GrantedPmu<R>>>> {
    use pmu_core::EventEncoding;
    if names.len() > MAX_EVENTS {
        return Err(Error::TooManyEvents {
            given: names.len(),
            max: MAX_EVENTS,
        });
    }
    names
        .iter()
        .map(|name| {
            let event = events::direct_event(name)?;
            let code = pmu_armv8::Armv8Event::encode(event)?;
            let slot =
                pool.pmu()
                    .layout()
                    .slot_of(code)
                    .ok_or_else(|| Error::NotInModuleLayout {
                        event: (*name).to_owned(),
                        layout: layout_text.trim().to_owned(),
                    })?;
            Ok(pool.counter_at(slot, event, PrivilegeFilter::USER)?)
        })
        .collect()
}

/// Measures regions on counters the library programmed itself.
#[derive(Debug)]
pub struct DirectMeter<'c, 'p, P: Pmu, A: AccessCheck = Unchecked> {
    counters: &'c [Counter<'p, P>],
    names: Vec<String>,
    widths: [CounterWidth; MAX_EVENTS],
    access: A,
    start: [u64; MAX_EVENTS],
    end: [u64; MAX_EVENTS],
    overflowed: [bool; MAX_EVENTS],
    /// Events per counter tick (1, or 64 for the ARM1176 CCR with PMCR.D).
    scales: [u64; MAX_EVENTS],
    start_thread: ThreadStamp,
    end_thread: ThreadStamp,
}

impl<'c, 'p, P: Pmu, A: AccessCheck> DirectMeter<'c, 'p, P, A> {
    /// A meter over `counters`, named `names`, checking user access with `access`.
    ///
    /// # Errors
    /// [`Error::NoEvents`], [`Error::TooManyEvents`], or a name count that differs
    /// from the counter count ([`pmu_core::Error::ReadingsMismatch`]).
    pub fn new(counters: &'c [Counter<'p, P>], names: Vec<String>, access: A) -> Result<Self> {
        if counters.is_empty() {
            return Err(Error::NoEvents);
        }
        if counters.len() > MAX_EVENTS {
            return Err(Error::TooManyEvents {
                given: counters.len(),
                max: MAX_EVENTS,
            });
        }
        if names.len() != counters.len() {
            return Err(pmu_core::Error::ReadingsMismatch {
                expected: counters.len() as u32,
                got: names.len() as u32,
            }
            .into());
        }
        let mut widths = [CounterWidth::W64; MAX_EVENTS];
        for (w, c) in widths.iter_mut().zip(counters) {
            *w = c.width();
        }
        Ok(Self {
            counters,
            names,
            widths,
            access,
            start: [0; MAX_EVENTS],
            end: [0; MAX_EVENTS],
            overflowed: [false; MAX_EVENTS],
            scales: [1; MAX_EVENTS],
            start_thread: ThreadStamp::default(),
            end_thread: ThreadStamp::default(),
        })
    }

    /// Counter `index` advances once per `events_per_tick` events (the ARM1176 CCR with
    /// the /64 divider, PMCR.D: 64 cycles a tick): its region values are reported in
    /// events, the tick delta multiplied by `events_per_tick`, so their resolution is
    /// `events_per_tick`. Overflow is judged on the ticks, where the counter wraps.
    ///
    /// # Errors
    /// [`Error::ScaleOutOfRange`] for an index without a counter or a factor of 0.
    pub fn scaled(mut self, index: usize, events_per_tick: u64) -> Result<Self> {
        if index >= self.counters.len() || events_per_tick == 0 {
            return Err(Error::ScaleOutOfRange {
                index,
                counters: self.counters.len(),
                events_per_tick,
            });
        }
        self.scales[index] = events_per_tick;
        Ok(self)
    }

    /// Events per tick of each counter (see [`DirectMeter::scaled`]).
    pub fn scales(&self) -> &[u64] {
        &self.scales[..self.counters.len()]
    }

    fn check_access(&self) -> Result<()> {
        if self.access.granted() {
            Ok(())
        } else {
            Err(Error::UserAccessRevoked)
        }
    }

    /// The readings of the last region (into `out`, one per counter), from what its
    /// edges kept; how many.
    fn readings(&self, out: &mut [Reading]) -> std::result::Result<usize, pmu_core::Error> {
        let n = out.len();
        direct_readings(
            &self.start[..n],
            &self.end[..n],
            &self.overflowed[..n],
            &self.widths[..n],
            self.start_thread,
            self.end_thread,
            out,
        )
    }

    /// The readings (into `out`) and evidence of the last region.
    fn evaluate(&self, out: &mut [Reading]) -> std::result::Result<Evidence, pmu_core::Error> {
        let n = self.readings(out)?;
        Ok(direct_evidence(
            self.start_thread,
            self.end_thread,
            &out[..n],
        ))
    }
}

impl<P: Pmu, A: AccessCheck> RegionMeter for DirectMeter<'_, '_, P, A> {
    type Error = Error;

    /// Checks access, takes switch counts and CPU, reads every counter, then clears the
    /// overflow flags (in this order every wrap after the read is seen: pmu-core
    /// `CounterMeter::start`).
    #[inline(always)]
    fn start(&mut self) -> Result<()> {
        self.check_access()?;
        self.start_thread = ThreadStamp::before()?;
        for (s, c) in self.start.iter_mut().zip(self.counters) {
            *s = c.read();
        }
        for c in self.counters {
            c.clear_overflow();
        }
        Ok(())
    }

    /// Checks access, reads every counter and its overflow flag, then CPU and switch
    /// counts.
    #[inline(always)]
    fn stop(&mut self, out: &mut [Reading]) -> Result<()> {
        self.check_access()?;
        for (e, c) in self.end.iter_mut().zip(self.counters) {
            *e = c.read();
        }
        for (o, c) in self.overflowed.iter_mut().zip(self.counters) {
            *o = c.overflowed();
        }
        let thread_end = ThreadStamp::after()?;
        let n = self.counters.len();
        if out.len() < n {
            return Err(pmu_core::Error::ReadingsMismatch {
                expected: n as u32,
                got: out.len() as u32,
            }
            .into());
        }
        self.end_thread = thread_end;
        // The readings only: the evidence is derived on demand (`evidence`).
        self.readings(&mut out[..n])?;
        for (reading, &scale) in out[..n].iter_mut().zip(&self.scales) {
            // A 32-bit tick delta (plus one wrap) times 64 cannot overflow u64; saturate
            // rather than wrap should a caller scale a 64-bit counter absurdly.
            reading.value = reading.value.saturating_mul(scale);
        }
        Ok(())
    }
}

impl<P: Pmu, A: AccessCheck> Counters for DirectMeter<'_, '_, P, A> {
    fn names(&self) -> Vec<String> {
        self.names.clone()
    }

    fn enable(&mut self) -> Result<()> {
        self.check_access()?;
        self.counters.iter().for_each(Counter::start);
        Ok(())
    }

    fn disable(&mut self) -> Result<()> {
        self.check_access()?;
        self.counters.iter().for_each(Counter::stop);
        Ok(())
    }

    fn evidence(&self) -> Evidence {
        let n = self.counters.len().min(MAX_EVENTS);
        self.evaluate(&mut [Reading::default(); MAX_EVENTS][..n])
            .unwrap_or_default()
    }
}

/// ARMv8 from EL0 after the module set PMUSERENR_EL0.EN.
#[cfg(target_arch = "aarch64")]
pub mod armv8 {
    use pmu_armv8::registers::PMUSERENR_EL0;
    use pmu_armv8::{El0Pmu, PmuOptions, PmuVersion};

    use super::{probe_with, AccessCheck};
    use crate::error::{Error, Result};
    use crate::sched::{pin_to, PinGuard};

    /// The probe: one read of PMCR_EL0, which traps (SIGILL) unless PMUSERENR_EL0.EN.
    pub(super) fn probe_access() {
        // SAFETY: runs only in the forked probe child. With EN set the read is
        // permitted; without it (or without PMUv3) it is UNDEFINED at EL0 and the
        // kernel kills the child with SIGILL, which is the answer the probe wants.
        let pmcr = unsafe { pmu_armv8::asm::read_pmcr_el0() };
        core::hint::black_box(pmcr);
    }

    /// PMUSERENR_EL0.EN, read from EL0 (always permitted, no trap): whether the grant
    /// is still there. Linux's `armv8pmu_start` rewrites PMUSERENR_EL0 whenever perf
    /// starts the PMU on this CPU, and CPU hotplug resets it.
    #[derive(Clone, Copy, Debug, Default)]
    pub struct Pmuserenr;

    impl AccessCheck for Pmuserenr {
        #[inline(always)]
        fn granted(&self) -> bool {
            // SAFETY: PMUSERENR_EL0 is readable at EL0 whatever its value (Arm ARM:
            // only writes are EL1-only); the read has no side effect.
            let value = unsafe { pmu_armv8::asm::read_pmuserenr_el0() };
            value & (PMUSERENR_EL0::EN.mask << PMUSERENR_EL0::EN.shift) != 0
        }
    }

    /// The probe of the read-only grant's cycle counter: one read of PMCCNTR_EL0, which
    /// traps (SIGILL) unless PMUSERENR_EL0.CR or EN.
    fn probe_cycle_read() {
        // SAFETY: runs only in the forked probe child; without the grant the read is
        // UNDEFINED at EL0 and the kernel kills the child with SIGILL, the probe's answer.
        let v = unsafe { pmu_armv8::asm::read_pmccntr_el0() };
        core::hint::black_box(v);
    }

    /// The probe of the read-only grant's event counters: one read of PMEVCNTR0_EL0
    /// (counter 0 exists on every PMUv3), which traps unless PMUSERENR_EL0.ER or EN.
    fn probe_event_read() {
        let Some(counter) = pmu_armv8::EventCounter::new(0) else {
            return;
        };
        // SAFETY: as in `probe_cycle_read`.
        let v = unsafe { pmu_armv8::asm::read_pmevcntr_el0(counter) };
        core::hint::black_box(v);
    }

    /// PMUSERENR_EL0 still grants the reads of a layout (ER for its event counters, CR
    /// for its cycle counter), read from EL0 without trapping: perf's
    /// `armv8pmu_start()` clears it, CPU hotplug and power-down reset it.
    #[derive(Clone, Copy, Debug)]
    pub struct PmuserenrRead {
        needed: u64,
    }

    impl PmuserenrRead {
        /// The check for `layout`.
        pub fn for_layout(layout: &pmu_armv8::granted::GrantedLayout) -> Self {
            let mut needed = 0;
            if !layout.event_counters().is_empty() {
                needed |= PMUSERENR_EL0::ER.mask << PMUSERENR_EL0::ER.shift;
            }
            if layout.cycle_counter() {
                needed |= PMUSERENR_EL0::CR.mask << PMUSERENR_EL0::CR.shift;
            }
            Self { needed }
        }
    }

    impl AccessCheck for PmuserenrRead {
        #[inline(always)]
        fn granted(&self) -> bool {
            // SAFETY: PMUSERENR_EL0 is readable at EL0 whatever its value.
            let value = unsafe { pmu_armv8::asm::read_pmuserenr_el0() };
            value & self.needed == self.needed
        }
    }

    /// Reads kmod-enable-user's layout ([`super::MODULE_LAYOUT`]): the text and its
    /// parsed form.
    ///
    /// # Errors
    /// [`Error::ModuleLayout`] when the file is missing (the module is not loaded, or is
    /// an older one) or not understood.
    pub fn module_layout() -> Result<(String, pmu_armv8::granted::GrantedLayout)> {
        let text =
            std::fs::read_to_string(super::MODULE_LAYOUT).map_err(|e| Error::ModuleLayout {
                reason: format!("{}: {e}", super::MODULE_LAYOUT),
            })?;
        let layout =
            pmu_armv8::granted::GrantedLayout::parse(&text).map_err(|e| Error::ModuleLayout {
                reason: format!("{}: {e}", super::MODULE_LAYOUT),
            })?;
        Ok((text.trim().to_owned(), layout))
    }

    /// Under kmod-enable-user's read-only grant: pins the thread to `cpu`, reads the
    /// module's layout, probes there that its counters are readable, and returns them as
    /// a PMU (reads only; see [`pmu_armv8::granted`]). Keep the guard alive as long as
    /// the PMU.
    ///
    /// # Errors
    /// [`Error::NoSuchCpu`]; [`Error::UserAccessNotEnabled`] without the module's layout;
    /// [`Error::ModuleGrantMissing`] (revoked by perf) without the grant on this CPU;
    /// [`Error::ModuleLayout`] for a layout not understood.
    pub fn take_granted(
        cpu: usize,
    ) -> Result<(
        PinGuard,
        pmu_armv8::granted::GrantedPmu<pmu_armv8::granted::El0Reads>,
        String,
    )> {
        let pin = pin_to(cpu)?;
        if !std::path::Path::new(super::MODULE_LAYOUT).exists() {
            // No module (or none with a read-only grant): nothing is readable.
            return Err(Error::UserAccessNotEnabled);
        }
        let (text, layout) = module_layout()?;
        // The module is loaded and has a layout: a read that traps on this CPU means the
        // grant went away here (perf's armv8pmu_start()), not that it was never given.
        let revoked = || Error::ModuleGrantMissing {
            cause: crate::GrantMissing::RevokedByPerf {
                regrant: std::path::Path::new(crate::error::MODULE_SYSFS)
                    .join("parameters/regrant")
                    .exists(),
            },
        };
        let trapped = |e: Error| match e {
            Error::UserAccessNotEnabled | Error::ModuleGrantMissing { .. } => revoked(),
            other => other,
        };
        if layout.cycle_counter() {
            probe_with(probe_cycle_read).map_err(trapped)?;
        }
        if !layout.event_counters().is_empty() {
            probe_with(probe_event_read).map_err(trapped)?;
        }
        if !PmuserenrRead::for_layout(&layout).granted() {
            return Err(revoked());
        }
        // SAFETY: the probes just read both kinds of counter on this (pinned) CPU; the
        // layout names only counters below PMCR_EL0.N (the module programmed them).
        let reads = unsafe { pmu_armv8::granted::El0Reads::new() };
        Ok((
            pin,
            pmu_armv8::granted::GrantedPmu::new(layout, reads),
            text,
        ))
    }

    /// Pins the thread to `cpu`, probes user access there, and takes the PMU over from
    /// EL0 (pmu-armv8 `El0Pmu::take`: all counters disabled, flags cleared, counters
    /// zeroed). Keep the guard alive as long as the PMU; drop the PMU first.
    ///
    /// `version` is what the PMU implements (EL0 cannot read ID_AA64DFR0_EL1):
    /// [`PmuVersion::PmuV3`] assumes only the baseline.
    ///
    /// # Errors
    /// [`Error::NoSuchCpu`], [`Error::UserAccessNotEnabled`], [`Error::Armv8Probe`].
    ///
    /// # Safety
    /// Nothing else uses the PMU of `cpu` while the returned PMU lives: no perf
    /// hardware events on that CPU (Linux reprograms the counters and clears
    /// PMUSERENR_EL0 when it starts them), no second direct user; the thread's affinity
    /// is not changed until the guard drops; `version` does not claim more than the
    /// CPU has.
    pub unsafe fn take_armv8(
        cpu: usize,
        version: PmuVersion,
        options: PmuOptions,
    ) -> Result<(PinGuard, El0Pmu)> {
        let pin = pin_to(cpu)?;
        probe_with(probe_access)?;
        // SAFETY: the probe just showed PMUSERENR_EL0.EN on this CPU, the thread is
        // pinned to it, and the caller promises exclusive use and an honest version.
        let pmu = unsafe { El0Pmu::take(version, options) }.map_err(Error::Armv8Probe)?;
        Ok((pin, pmu))
    }
}

/// ARM1176 (Raspberry Pi 1 / Zero) in User mode after the module set SUNAVCR.V.
#[cfg(target_arch = "arm")]
pub mod arm1176 {
    use pmu_armv6::{Arm1176Pmu, Cp15, CycleDivider};

    use super::{cpuinfo_midr, probe_with, ARM1176_MIDR};
    use crate::error::{DirectUnsupported, Error, Result};
    use crate::sched::{pin_to, PinGuard};

    /// The probe: one read of PMCR, which traps (SIGILL) in User mode unless SUNAVCR.V.
    pub(super) fn probe_access() {
        // SAFETY: runs only in the forked probe child: with SUNAVCR.V set the read is
        // permitted in User mode; otherwise it is an Undefined Instruction and the
        // kernel kills the child with SIGILL, which is the probe's answer.
        let pmcr = unsafe { pmu_armv6::asm::read_pmcr() };
        core::hint::black_box(pmcr);
    }

    /// Pins the thread to CPU 0 (the Pi 1 has one core), probes user access, checks
    /// that /proc/cpuinfo does not name another core, and takes the PMU over (pmu-armv6
    /// `Arm1176Pmu::new`: all counters stopped, interrupts off).
    ///
    /// # Errors
    /// [`crate::Error::UserAccessNotEnabled`], [`crate::Error::NoSuchCpu`],
    /// [`crate::Error::DirectUnsupported`] with [`DirectUnsupported::NotArm1176`].
    ///
    /// # Safety
    /// The CPU is an ARM1176 (checked where /proc/cpuinfo says), and nothing else uses
    /// its PMU while the returned one lives (no perf hardware events, no second direct
    /// user).
    pub unsafe fn take_arm1176(divider: CycleDivider) -> Result<(PinGuard, Arm1176Pmu<Cp15>)> {
        let pin = pin_to(0)?;
        probe_with(probe_access)?;
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        if let Some((implementer, part)) = cpuinfo_midr(&cpuinfo) {
            if (implementer, part) != ARM1176_MIDR {
                return Err(Error::DirectUnsupported {
                    reason: DirectUnsupported::NotArm1176 { implementer, part },
                });
            }
        }
        // SAFETY: the probe just showed User-mode access to c15 on this (pinned) CPU,
        // /proc/cpuinfo names no other core; the caller promises an ARM1176 and
        // exclusive use.
        let pmu = unsafe { Arm1176Pmu::new(divider) };
        Ok((pin, pmu))
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use pmu_core::fake::{FakeEvent, FakePmu};
    use pmu_core::{Hazards, Slot};

    use super::*;
    use crate::measure::{measure, measure_once, MeasureConfig};

    /// An illegal instruction in the probe child is the "not enabled" error, and the
    /// test process lives on. (x86 `ud2`; the ARM probes execute their real register
    /// read the same way.)
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn sigill_in_the_probe_becomes_the_error() {
        use crate::error::DirectUnsupported;
        fn illegal() {
            // SAFETY: runs only in the forked probe child; UD2 raises #UD (SIGILL), which
            // ends the child: that is what is being tested.
            unsafe { core::arch::asm!("ud2", options(nostack)) };
        }
        let err = probe_with(illegal).unwrap_err();
        assert_eq!(err, Error::UserAccessNotEnabled);
        assert_eq!(
            err.to_string(),
            "user access to the PMU is not enabled: load kmod-enable-user"
        );
        fn fine() {}
        assert_eq!(probe_with(fine), Ok(()));
        // This machine has no direct backend at all.
        assert_eq!(
            probe(),
            Err(Error::DirectUnsupported {
                reason: DirectUnsupported::X86NeedsRing0
            })
        );
    }

    /// The same on 32-bit ARM (run by `cargo xtask armv6-demo` under `qemu-arm -cpu
    /// arm1176`): a permanently undefined instruction (ARM ARM A3.16.5: 0xe7f000f0, not
    /// one of Linux's BUG/breakpoint patterns 0xe7f001f0/1, which raise SIGTRAP) is the
    /// "not enabled" error. The real probe's PMCR read either works (a Pi with
    /// kmod-enable-user) or is that error (QEMU's ARM1176 c15 traps in User mode), and
    /// never takes the test process down.
    #[cfg(target_arch = "arm")]
    #[test]
    fn sigill_in_the_probe_becomes_the_error_on_arm() {
        fn illegal() {
            // SAFETY: runs only in the forked probe child; the undefined instruction
            // raises SIGILL, which ends the child: that is what is being tested.
            unsafe { core::arch::asm!(".inst 0xe7f000f0", options(nostack)) };
        }
        assert_eq!(probe_with(illegal), Err(Error::UserAccessNotEnabled));
        match probe() {
            Ok(()) | Err(Error::UserAccessNotEnabled) => {}
            other => panic!("the ARM1176 probe ended {other:?}"),
        }
    }

    #[test]
    fn other_child_ends_are_probe_failures() {
        assert_eq!(
            classify(ChildEnd::Signaled(libc::SIGSEGV)),
            Err(Error::ProbeFailed {
                status: libc::SIGSEGV
            })
        );
        assert_eq!(
            classify(ChildEnd::Exited(3)),
            Err(Error::ProbeFailed { status: 3 << 8 })
        );
        assert_eq!(classify(ChildEnd::Exited(0)), Ok(()));
        assert_eq!(
            classify(ChildEnd::Signaled(libc::SIGILL)),
            Err(Error::UserAccessNotEnabled)
        );
    }

    /// /proc/cpuinfo of a Raspberry Pi 1 (ARM1176JZF-S r0p7, MIDR 0x410fb767) as
    /// arch/arm/kernel/setup.c prints it, of a Pi 2 (Cortex-A7, part 0xc07) and of x86.
    #[test]
    fn cpuinfo_tells_an_arm1176() {
        let pi1 = "processor\t: 0\nmodel name\t: ARMv6-compatible processor rev 7 (v6l)\n\
                   BogoMIPS\t: 697.95\nFeatures\t: half thumb fastmult vfp edsp java tls\n\
                   CPU implementer\t: 0x41\nCPU architecture: 7\nCPU variant\t: 0x0\n\
                   CPU part\t: 0xb76\nCPU revision\t: 7\n\nHardware\t: BCM2835\n";
        assert_eq!(cpuinfo_midr(pi1), Some(ARM1176_MIDR));
        let pi2 = pi1.replace("0xb76", "0xc07");
        assert_eq!(cpuinfo_midr(&pi2), Some((0x41, 0xc07)));
        assert_eq!(
            cpuinfo_midr("processor\t: 0\nvendor_id\t: GenuineIntel\n"),
            None
        );
        let err = Error::DirectUnsupported {
            reason: crate::error::DirectUnsupported::NotArm1176 {
                implementer: 0x41,
                part: 0xc07,
            },
        };
        assert!(err.to_string().contains("part 0xc07"), "{err}");
    }

    fn fake_pmu() -> FakePmu {
        FakePmu::new(
            2,
            CounterWidth::W32,
            &[FakeEvent::INSTRUCTIONS, FakeEvent::CYCLES],
        )
        .unwrap()
    }

    /// The direct meter over pmu-core's fake PMU: exact counts with the read cost
    /// calibrated away, an overflow flagged with the corrected value, a forced context
    /// switch flagged from getrusage.
    #[test]
    fn direct_meter_hazards() {
        let pool = CounterPool::new(fake_pmu());
        pool.pmu().set_read_cost(3);
        let counters = allocate(
            &pool,
            &["instructions", "cpu-cycles"],
            PrivilegeFilter::USER,
        )
        .unwrap();
        assert_eq!(counters[0].slot(), Slot::Programmable(0));
        let names = vec!["instructions".to_owned(), "cpu-cycles".to_owned()];
        let mut meter = DirectMeter::new(&counters, names, Unchecked).unwrap();
        meter.enable().unwrap();
        let config = MeasureConfig {
            warmup: 1,
            runs: 5,
            calibrate: true,
        };
        let m = measure(&mut meter, &config, &mut || {
            pool.pmu().tick(FakeEvent::INSTRUCTIONS, 1000);
            pool.pmu().tick(FakeEvent::CYCLES, 2500);
        })
        .unwrap();
        // Clean runs unless the scheduler preempted one (then flagged and excluded).
        let ins = m.events[0].corrected.unwrap();
        assert_eq!(ins.min, Some(1000));
        assert_eq!(m.events[1].corrected.unwrap().min, Some(2500));
        for run in &m.runs {
            assert_eq!(
                run.is_trusted(),
                run.evidence
                    .switches
                    .expect("direct regions take getrusage")
                    .total()
                    == 0
            );
        }

        counters[0].preset_before_wrap(16);
        let run = measure_once(&mut meter, &mut || {
            pool.pmu().tick(FakeEvent::INSTRUCTIONS, 100)
        })
        .unwrap();
        // 100 events plus the fake read cost of 3 for each of the two reads in between
        // (this counter's own start read and the other counter's stop read).
        assert_eq!(run.readings[0].value, 106);
        assert!(run.readings[0].hazards.contains(Hazards::OVERFLOW));
        assert!(run.evidence.events()[0].overflowed);

        let run = measure_once(&mut meter, &mut || {
            std::thread::sleep(std::time::Duration::from_millis(1))
        })
        .unwrap();
        assert!(run.evidence.switches.expect("getrusage").voluntary >= 1);
        assert!(run.hazards().contains(Hazards::CONTEXT_SWITCH));
        meter.disable().unwrap();
    }

    /// A revoked grant is an error before any counter is touched.
    #[test]
    fn revoked_access_is_an_error() {
        let pool = CounterPool::new(fake_pmu());
        let counters = allocate(&pool, &["instructions"], PrivilegeFilter::USER).unwrap();
        let granted = Cell::new(true);
        let mut meter =
            DirectMeter::new(&counters, vec!["instructions".into()], || granted.get()).unwrap();
        meter.enable().unwrap();
        meter.start().unwrap();
        granted.set(false);
        let mut out = [Reading::default(); 1];
        assert_eq!(meter.stop(&mut out), Err(Error::UserAccessRevoked));
        assert_eq!(meter.start(), Err(Error::UserAccessRevoked));
    }

    #[test]
    fn names_the_direct_backend_cannot_count() {
        let pool = CounterPool::new(fake_pmu());
        assert!(matches!(
            allocate(&pool, &["task-clock"], PrivilegeFilter::USER),
            Err(Error::NotDirectEvent { .. })
        ));
        assert!(matches!(
            allocate(&pool, &["cyclez"], PrivilegeFilter::USER),
            Err(Error::UnknownEvent { .. })
        ));
        assert!(matches!(
            allocate(&pool, &["cpu/event=1/"], PrivilegeFilter::USER),
            Err(Error::NotDirectEvent { .. })
        ));
        let counters = allocate(&pool, &["instructions"], PrivilegeFilter::USER).unwrap();
        assert_eq!(
            DirectMeter::new(&counters, vec![], Unchecked).unwrap_err(),
            Error::Core(pmu_core::Error::ReadingsMismatch {
                expected: 1,
                got: 0
            })
        );
        assert_eq!(
            DirectMeter::new(&counters[..0], vec![], Unchecked).unwrap_err(),
            Error::NoEvents
        );
    }

    /// The ARM1176 driver of pmu-armv6 over its fake registers, through the same meter:
    /// CCR as the cycle counter, 32-bit wrap with the flag (seed 004).
    #[test]
    fn arm1176_through_the_direct_meter() {
        use pmu_armv6::fake::FakeRegisters;
        use pmu_armv6::{Arm1176Event, Arm1176Pmu, CycleDivider};
        let pool = CounterPool::new(Arm1176Pmu::with_registers(
            FakeRegisters::new(),
            CycleDivider::EveryCycle,
        ));
        assert!(matches!(
            allocate(&pool, &["cycles"], PrivilegeFilter::USER),
            Err(Error::Core(pmu_core::Error::FilterUnsupported { .. }))
        ));
        let counters = allocate(&pool, &["cycles", "instructions"], PrivilegeFilter::ALL).unwrap();
        let mut meter = DirectMeter::new(
            &counters,
            vec!["cycles".into(), "instructions".into()],
            Unchecked,
        )
        .unwrap();
        meter.enable().unwrap();
        let run = measure_once(&mut meter, &mut || {
            pool.pmu().registers().tick(Arm1176Event::CycleCount, 452);
            pool.pmu()
                .registers()
                .tick(Arm1176Event::InstructionExecuted, 68);
        })
        .unwrap();
        assert_eq!((run.readings[0].value, run.readings[1].value), (452, 68));
    }

    /// An ARM1176 pool over the fake registers (pmu-armv6 `fake`: TRM Table 3-136's
    /// write-1-to-clear flags, 32-bit wrap raising the flag, PMCR.D's /64).
    fn arm1176_pool(
        divider: pmu_armv6::CycleDivider,
    ) -> CounterPool<pmu_armv6::Arm1176Pmu<pmu_armv6::fake::FakeRegisters>> {
        CounterPool::new(pmu_armv6::Arm1176Pmu::with_registers(
            pmu_armv6::fake::FakeRegisters::new(),
            divider,
        ))
    }

    /// Event mapping of the direct ARM1176 meter, against seed 004's two PMCR values:
    /// 0x00705707 (CR0 instructions = 0x07 in bits 27:20, CR1 branches = 0x05 in bits
    /// 19:12) and 0x0000b707 (CR0 instruction cache misses = 0x00, CR1 data cache misses
    /// = 0x0B). The low bits 0x707 are seed 004's resets and flag clears (actions, not
    /// state); what stays in PMCR is E and the two event fields. `cycles` is the CCR.
    #[test]
    fn arm1176_event_mapping_matches_seed_004() {
        use pmu_armv6::pmcr::PMCR;
        use pmu_armv6::{CounterRegister, CycleDivider};
        const STATE: u32 = 0x0FFF_F009; // EvtCount0, EvtCount1, D, E
        let pool = arm1176_pool(CycleDivider::EveryCycle);
        let counters = allocate(
            &pool,
            &["cycles", "instructions", "branches"],
            PrivilegeFilter::ALL,
        )
        .unwrap();
        let slots: Vec<Slot> = counters.iter().map(Counter::slot).collect();
        assert_eq!(
            slots,
            [Slot::Fixed(0), Slot::Programmable(0), Slot::Programmable(1)]
        );
        counters.iter().for_each(Counter::start);
        let regs = pool.pmu().registers();
        assert_eq!(regs.state().get() & STATE, 0x0070_5707 & STATE);
        // Seed 004's measurement: 452 cycles, 68 instructions, 12 branches.
        regs.tick(pmu_armv6::Arm1176Event::CycleCount, 452);
        regs.tick(pmu_armv6::Arm1176Event::InstructionExecuted, 68);
        regs.tick(pmu_armv6::Arm1176Event::BranchExecuted, 12);
        assert_eq!(
            counters.iter().map(Counter::read).collect::<Vec<_>>(),
            [452, 68, 12]
        );
        drop(counters);

        let pool = arm1176_pool(CycleDivider::EveryCycle);
        let counters = allocate(
            &pool,
            &["L1-icache-load-misses", "r0b"],
            PrivilegeFilter::ALL,
        )
        .unwrap();
        counters.iter().for_each(Counter::start);
        let state = pool.pmu().registers().state();
        assert_eq!(state.get() & STATE, 0x0000_b707 & STATE);
        assert!(state.is_set(PMCR::E));
        assert_eq!(
            pmu_armv6::pmcr::event(state, CounterRegister::Cr1),
            Ok(pmu_armv6::Arm1176Event::DataCacheMiss)
        );
        // 0x08 is reserved (TRM Table 3-137); a third programmable event has no counter.
        assert!(matches!(
            allocate(
                &arm1176_pool(CycleDivider::EveryCycle),
                &["r08"],
                PrivilegeFilter::ALL
            ),
            Err(Error::Core(pmu_core::Error::EventNotImplemented {
                code: 8
            }))
        ));
        assert!(matches!(
            allocate(
                &arm1176_pool(CycleDivider::EveryCycle),
                &["instructions", "branches", "branch-misses"],
                PrivilegeFilter::ALL
            ),
            Err(Error::Core(pmu_core::Error::NoFreeCounter { available: 2 }))
        ));
    }

    /// The PMCR overflow flags (bits 8 CR0, 9 CR1, 10 CCR: TRM 3.2.51, seed 004) become
    /// the region's OVERFLOW hazard, with the value corrected for the one wrap: never a
    /// silent wrong number. A flag left over from before the region is cleared at its
    /// start and does not taint it.
    #[test]
    fn arm1176_overflow_flag_is_a_hazard_of_the_region() {
        use pmu_armv6::{Arm1176Event, CounterRegister, CycleDivider};
        let pool = arm1176_pool(CycleDivider::EveryCycle);
        let counters = allocate(&pool, &["cycles", "instructions"], PrivilegeFilter::ALL).unwrap();
        let names = vec!["cycles".to_owned(), "instructions".to_owned()];
        let mut meter = DirectMeter::new(&counters, names, Unchecked).unwrap();
        meter.enable().unwrap();
        let regs = pool.pmu().registers();

        // A stale flag (an earlier wrap) is not this region's.
        regs.raise_overflow(CounterRegister::Cr0);
        let run = measure_once(&mut meter, &mut || {
            regs.tick(Arm1176Event::InstructionExecuted, 68)
        })
        .unwrap();
        assert_eq!(run.readings[1].value, 68);
        assert!(!run.readings[1].hazards.contains(Hazards::OVERFLOW));
        assert!(!run.evidence.events()[1].overflowed);

        // CR0 16 below its 32-bit wrap, 68 instructions: wraps, flag, corrected value.
        counters[1].preset_before_wrap(16);
        let run = measure_once(&mut meter, &mut || {
            regs.tick(Arm1176Event::InstructionExecuted, 68)
        })
        .unwrap();
        assert_eq!(run.readings[1].value, 68);
        assert!(run.readings[1].hazards.contains(Hazards::OVERFLOW));
        assert!(!run.readings[0].hazards.contains(Hazards::OVERFLOW));

        // A region of 2^32 + 452 cycles (about 6.1 s at 700 MHz, seed 004): the CCR
        // ends 452 above where it started, and only its flag (bit 10) tells the wrap.
        let run = measure_once(&mut meter, &mut || {
            regs.tick(Arm1176Event::CycleCount, (1 << 32) + 452)
        })
        .unwrap();
        assert_eq!(run.readings[0].value, (1 << 32) + 452);
        assert!(run.readings[0].hazards.contains(Hazards::OVERFLOW));
        assert!(run.evidence.events()[0].overflowed);
        assert!(!run.readings[1].hazards.contains(Hazards::OVERFLOW));
    }

    /// PMCR.D: the CCR counts every 64th cycle (TRM 3.2.51; seed 004: "Skalierungsfaktor
    /// 64", about 392 s instead of 6 s at 700 MHz). The meter reports cycles, the tick
    /// delta multiplied back by 64 (resolution 64 cycles); a 6.1 s region that wraps the
    /// undivided CCR does not wrap the divided one. Instruction counts are not scaled.
    #[test]
    fn arm1176_cycle_divider_is_multiplied_back() {
        use pmu_armv6::{Arm1176Event, CounterRegister, CycleDivider};
        let pool = arm1176_pool(CycleDivider::Every64thCycle);
        let counters = allocate(&pool, &["cycles", "instructions"], PrivilegeFilter::ALL).unwrap();
        let names = vec!["cycles".to_owned(), "instructions".to_owned()];
        let meter = DirectMeter::new(&counters, names.clone(), Unchecked).unwrap();
        let mut meter = meter
            .scaled(0, pool.pmu().cycle_divider().cycles_per_tick())
            .unwrap();
        assert_eq!(meter.scales(), [64, 1]);
        meter.enable().unwrap();
        let regs = pool.pmu().registers();
        let run = measure_once(&mut meter, &mut || {
            regs.tick(Arm1176Event::CycleCount, 452 * 64);
            regs.tick(Arm1176Event::InstructionExecuted, 68);
        })
        .unwrap();
        assert_eq!(
            (run.readings[0].value, run.readings[1].value),
            (452 * 64, 68)
        );
        assert_eq!(regs.count(CounterRegister::Ccr), 452);

        // 2^32 + 452 cycles: 2^26 + 7 ticks (the 4 left over wait for the next tick).
        let run = measure_once(&mut meter, &mut || {
            regs.tick(Arm1176Event::CycleCount, (1 << 32) + 452)
        })
        .unwrap();
        assert_eq!(run.readings[0].value, ((1 << 26) + 7) * 64);
        assert!(!run.readings[0].hazards.contains(Hazards::OVERFLOW));

        // Scaling a counter the meter lacks, or by 0, is refused.
        let meter = DirectMeter::new(&counters, names, Unchecked).unwrap();
        assert_eq!(
            meter.scaled(2, 64).unwrap_err(),
            Error::ScaleOutOfRange {
                index: 2,
                counters: 2,
                events_per_tick: 64
            }
        );
    }
}
