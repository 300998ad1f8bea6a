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
use crate::region::{evaluate_direct, Evidence};
use crate::sched::ThreadStamp;
use crate::sys::{self, ChildEnd};
use crate::MAX_EVENTS;

/// Runs `access` (one register access that traps without user access) in a forked
/// child and classifies the outcome.
///
/// # Errors
/// [`Error::UserAccessNotEnabled`] when the child died of SIGILL;
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
        ChildEnd::Signaled(libc::SIGILL) => Err(Error::UserAccessNotEnabled),
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
            start_thread: ThreadStamp::default(),
            end_thread: ThreadStamp::default(),
        })
    }

    fn check_access(&self) -> Result<()> {
        if self.access.granted() {
            Ok(())
        } else {
            Err(Error::UserAccessRevoked)
        }
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
        // The evidence is derived again on demand (`evidence`): not copied per region.
        evaluate_direct(
            &self.start[..n],
            &self.end[..n],
            &self.overflowed[..n],
            &self.widths[..n],
            self.start_thread,
            thread_end,
            &mut out[..n],
        )?;
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
        evaluate_direct(
            &self.start[..n],
            &self.end[..n],
            &self.overflowed[..n],
            &self.widths[..n],
            self.start_thread,
            self.end_thread,
            &mut [Reading::default(); MAX_EVENTS][..n],
        )
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

    use super::probe_with;
    use crate::error::Result;
    use crate::sched::{pin_to, PinGuard};

    /// The probe: one read of PMCR, which traps (SIGILL) in User mode unless SUNAVCR.V.
    pub(super) fn probe_access() {
        // SAFETY: runs only in the forked probe child: with SUNAVCR.V set the read is
        // permitted in User mode; otherwise it is an Undefined Instruction and the
        // kernel kills the child with SIGILL, which is the probe's answer.
        let pmcr = unsafe { pmu_armv6::asm::read_pmcr() };
        core::hint::black_box(pmcr);
    }

    /// Pins the thread to CPU 0 (the Pi 1 has one core), probes user access and takes
    /// the PMU over (pmu-armv6 `Arm1176Pmu::new`: all counters stopped, interrupts off).
    ///
    /// # Errors
    /// [`crate::Error::UserAccessNotEnabled`], [`crate::Error::NoSuchCpu`].
    ///
    /// # Safety
    /// The CPU is an ARM1176, and nothing else uses its PMU while the returned one
    /// lives (no perf hardware events, no second direct user).
    pub unsafe fn take_arm1176(divider: CycleDivider) -> Result<(PinGuard, Arm1176Pmu<Cp15>)> {
        let pin = pin_to(0)?;
        probe_with(probe_access)?;
        // SAFETY: the probe just showed User-mode access to c15 on this (pinned) CPU;
        // the caller promises an ARM1176 and exclusive use.
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
}
