//! ARM1176 (Raspberry Pi 1 / Zero) in User mode after the module set SUNAVCR.V.
//!
//! The meter's backend is a [`super::DirectRegion`], as on ARMv8 and AArch32: each
//! counter read with one `mrc` (`Arm1176Read`), overflow from the PMCR flags (bits
//! 10:8, [`PmcrFlags`]), the CPU from `sched_getcpu()` and context switches from
//! `getrusage`. The ARM1176's counters have no privilege filter (ARM1176JZF-S TRM
//! 3.2.51), so there is no kernel-entry sentinel, and SUNAVCR cannot be read in User
//! mode, so the grant is not checked at the edges.
//!
//! What does not touch the registers (the reads' scaling and widths) builds on every
//! host and is tested there.

use pmu_armv6::{CounterRegister, CycleDivider};
use pmu_core::{CounterRead, CounterWidth, Pmu};

use super::alloc::OwnedCounters;
use super::region::CounterSet;
#[cfg(target_arch = "arm")]
use {
    super::probe::{cpuinfo_midr, probe_with, ARM1176_MIDR},
    super::region::{OverflowFlags, Unchecked},
    crate::backend::{Backend, How, Opened, Request},
    crate::error::{DirectUnsupported, Error, Result},
    crate::machine::sched::{pin_to, PinGuard},
    pmu_armv6::{Arm1176Pmu, Cp15},
};

/// The probe: one read of PMCR, which traps (SIGILL) in User mode unless SUNAVCR.V.
#[cfg(target_arch = "arm")]
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
/// [`crate::error::AccessError::NotEnabled`], [`crate::error::Unsupported::Cpu`],
/// [`crate::error::Unsupported::Direct`] with [`DirectUnsupported::NotArm1176`].
///
/// # Safety
/// The CPU is an ARM1176 (checked where /proc/cpuinfo says), and nothing else uses
/// its PMU while the returned one lives (no perf hardware events, no second direct
/// user).
#[cfg(target_arch = "arm")]
pub unsafe fn take_arm1176(divider: CycleDivider) -> Result<(PinGuard, Arm1176Pmu<Cp15>)> {
    let pin = pin_to(0)?;
    probe_with(probe_access)?;
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    if let Some((implementer, part)) = cpuinfo_midr(&cpuinfo) {
        if (implementer, part) != ARM1176_MIDR {
            return Err(Error::Unsupported(crate::error::Unsupported::Direct {
                reason: DirectUnsupported::NotArm1176 { implementer, part },
            }));
        }
    }
    // SAFETY: the probe just showed User-mode access to c15 on this (pinned) CPU,
    // /proc/cpuinfo names no other core; the caller promises an ARM1176 and
    // exclusive use.
    let pmu = unsafe { Arm1176Pmu::new(divider) };
    Ok((pin, pmu))
}

/// One ARM1176 counter read with one `mrc` (pmu-armv6 `CounterRegister::read_fn`), in
/// events: under PMCR.D the CCR ticks once per 64 cycles, and its read is the tick count
/// times 64, a cycle count with a resolution of 64 whose wrap is the 32-bit tick
/// count's, 38 bits ([`Arm1176Counters`] gives the region that width).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Arm1176Read {
    read: unsafe fn() -> u32,
    /// The counter's overflow flag in PMCR.
    mask: u64,
    /// log2 of the events per tick.
    shift: u32,
    // The registers are this CPU's, and the thread is pinned there.
    _this_cpu: core::marker::PhantomData<*const ()>,
}

impl Arm1176Read {
    /// The read of `register` through `read`, in events under `divider`.
    ///
    /// # Safety
    /// `read` reads `register` (`CounterRegister::read_fn`), and the read is permitted
    /// wherever the handle is used: User mode with SUNAVCR.V on the one CPU of a thread
    /// pinned there.
    pub(crate) unsafe fn new(
        register: CounterRegister,
        read: unsafe fn() -> u32,
        divider: CycleDivider,
    ) -> Self {
        let field = register.overflow_flag();
        Self {
            read,
            mask: u64::from(field.mask << field.shift),
            shift: events_per_tick(register, divider).trailing_zeros(),
            _this_cpu: core::marker::PhantomData,
        }
    }
}

impl CounterRead for Arm1176Read {
    #[inline(always)]
    fn read(&self) -> u64 {
        // SAFETY: `new`'s contract.
        u64::from(unsafe { (self.read)() }) << self.shift
    }
    #[inline(always)]
    fn overflow_mask(&self) -> u64 {
        self.mask
    }
}

/// Events per tick of `register`: 64 for the CCR under PMCR.D, else 1 (ARM1176JZF-S TRM
/// 3.2.51).
fn events_per_tick(register: CounterRegister, divider: CycleDivider) -> u64 {
    match register {
        CounterRegister::Ccr => divider.cycles_per_tick(),
        CounterRegister::Cr0 | CounterRegister::Cr1 => 1,
    }
}

/// The region's counters on the ARM1176: the set the library programmed, each counter
/// as wide as the values its [`Arm1176Read`] gives (the CCR under PMCR.D: 32 + 6 bits).
#[derive(Debug)]
pub(crate) struct Arm1176Counters<P: Pmu> {
    counters: OwnedCounters<P>,
    widths: Vec<CounterWidth>,
}

impl<P: Pmu> Arm1176Counters<P> {
    /// `counters` read in events under `divider`.
    pub(crate) fn new(counters: OwnedCounters<P>, divider: CycleDivider) -> Self {
        let widths = counters
            .slots()
            .enumerate()
            .map(|(i, slot)| {
                let ticks = CounterSet::width(&counters, i);
                match CounterRegister::from_slot(slot) {
                    Some(register) => {
                        let extra = events_per_tick(register, divider).trailing_zeros();
                        CounterWidth::new(ticks.bits() + extra).unwrap_or(CounterWidth::W64)
                    }
                    None => ticks,
                }
            })
            .collect();
        Self { counters, widths }
    }
}

impl<P: Pmu> CounterSet for Arm1176Counters<P> {
    fn len(&self) -> usize {
        self.widths.len()
    }
    fn width(&self, i: usize) -> CounterWidth {
        self.widths[i]
    }
    fn start(&self, i: usize) {
        self.counters.start(i)
    }
    fn stop(&self, i: usize) {
        self.counters.stop(i)
    }
    fn preset_before_wrap(&self, i: usize, distance: u64) {
        self.counters.preset_before_wrap(i, distance)
    }
    fn leave_programmed(&mut self) {
        self.counters.leave_programmed()
    }
}

/// PMCR's overflow flags (bits 10:8: CCR, CR1, CR0; write 1 to clear), read and cleared
/// from User mode under SUNAVCR.V. A clear is a read-modify-write of PMCR that keeps
/// everything else (pmu-armv6 `pmcr::clearing_flags`).
#[cfg(target_arch = "arm")]
#[derive(Debug)]
pub struct PmcrFlags {
    _this_cpu: core::marker::PhantomData<*const ()>,
}

#[cfg(target_arch = "arm")]
impl PmcrFlags {
    /// The flags, proved accessible by a PMU taken in User mode ([`take_arm1176`]:
    /// SUNAVCR.V, the thread pinned to CPU 0).
    pub fn new(_pmu: &Arm1176Pmu<Cp15>) -> Self {
        Self {
            _this_cpu: core::marker::PhantomData,
        }
    }
}

#[cfg(target_arch = "arm")]
impl OverflowFlags for PmcrFlags {
    const READABLE: bool = true;
    #[inline(always)]
    fn read(&self) -> u64 {
        // SAFETY: made only from a PMU taken under SUNAVCR.V on this CPU (`new`); the
        // read has no side effect.
        let pmcr = unsafe { pmu_armv6::asm::read_pmcr() };
        u64::from(pmcr.get() & pmu_armv6::pmcr::OVERFLOW_FLAGS)
    }
    #[inline(always)]
    fn clear(&self, mask: u64) {
        // SAFETY: as in `read`. The value written is the one just read with only the
        // flags of `mask` written as 1, no reset action and no interrupt enable
        // (`clearing_flags`): nothing else changes.
        unsafe {
            let pmcr = pmu_armv6::asm::read_pmcr();
            pmu_armv6::asm::write_pmcr(pmu_armv6::pmcr::clearing_flags(pmcr, mask as u32));
        }
    }
}

#[cfg(target_arch = "arm")]
impl super::pool::PoolPmu for Arm1176Pmu<Cp15> {
    type Check = Unchecked;
    type Read<'p> = pmu_armv6::reader::Reader<'p>;
    type Flags = PmcrFlags;
    fn grant_check(&self) -> Unchecked {
        Unchecked
    }
    fn counter_read(&self, slot: pmu_core::Slot) -> Result<pmu_armv6::reader::Reader<'_>> {
        self.reader(slot).map_err(Error::from)
    }
    fn overflow_flags(&self) -> PmcrFlags {
        PmcrFlags::new(self)
    }
}

/// The meter's ARM1176 direct backend: the library programs the counters itself under
/// SUNAVCR.V, in a [`super::DirectRegion`] (module doc); no kernel-entry sentinel.
///
/// # Errors
/// [`crate::error::AccessError::NeedsProgramming`] without `MeterBuilder::program_the_pmu` (SUNAVCR.V
/// is the ARM1176's only grant, and it programs); as [`take_arm1176`].
#[cfg(target_arch = "arm")]
pub(super) fn open(request: &Request) -> Result<Opened<Box<dyn Backend>>> {
    if !request.program {
        return Err(Error::Access(crate::error::AccessError::NeedsProgramming));
    }
    let wanted = request.direct_events()?;
    let divider = request.direct.divider;
    // SAFETY: `program_the_pmu`'s caller promised an ARM1176 and exclusive use.
    let (pin, pmu) = unsafe { take_arm1176(divider) }?;
    let placed: Vec<_> = wanted.into_iter().map(|e| (e, None)).collect();
    let counters = OwnedCounters::allocate(pmu, &placed, pmu_core::PrivilegeFilter::ALL)?;
    let handles = counters
        .slots()
        .map(|slot| {
            let register = pmu_armv6::reader::reader_register(slot)?;
            // SAFETY: the read function of that register; the PMU was taken under
            // SUNAVCR.V with the thread pinned to CPU 0 (`take_arm1176`), and the
            // handles live in the region with the PMU.
            Ok(unsafe { Arm1176Read::new(register, register.read_fn(), divider) })
        })
        .collect::<std::result::Result<Vec<_>, pmu_core::Error>>()?;
    let flags = PmcrFlags::new(counters.pmu());
    let why = if request.sentinel {
        "the ARM1176 counters have no privilege filter: every counter counts in every \
         mode (ARM1176JZF-S TRM 3.2.51, PMCR); kernel entries that end in a context \
         switch are seen through getrusage only"
    } else {
        crate::sentinel::SWITCHED_OFF
    };
    let region = super::region::boxed_region(
        Arm1176Counters::new(counters, divider),
        Unchecked,
        handles,
        request.names.clone(),
        None,
        crate::sentinel::Sentinel::off(why),
        flags,
    )?;
    Ok(Opened::direct(
        region,
        request.events.len(),
        How::Arm1176Programmed,
        pin,
    ))
}

#[cfg(test)]
mod tests {
    use core::cell::Cell;

    use pmu_armv6::fake::FakeRegisters;
    use pmu_armv6::Arm1176Pmu;
    use pmu_core::{Event, GenericEvent, PrivilegeFilter, Reading, RegionMeter, Slot};

    use super::*;
    use crate::direct::region::{DirectRegion, NoSentinel, OverflowFlags, Unchecked};
    use crate::machine::sched::fake::FakeThread;

    thread_local! {
        /// The fake CCR and CR0 the test reads go to, and the flags.
        static CCR: Cell<u32> = const { Cell::new(0) };
        static CR0: Cell<u32> = const { Cell::new(0) };
        static FLAGS: Cell<u64> = const { Cell::new(0) };
    }

    /// # Safety
    /// None needed: a fake.
    unsafe fn ccr() -> u32 {
        CCR.get()
    }
    /// # Safety
    /// None needed: a fake.
    unsafe fn cr0() -> u32 {
        CR0.get()
    }

    /// PMCR's flags as the fake holds them (write 1 to clear).
    #[derive(Debug)]
    struct Flags;
    impl OverflowFlags for Flags {
        const READABLE: bool = true;
        fn read(&self) -> u64 {
            FLAGS.get()
        }
        fn clear(&self, mask: u64) {
            FLAGS.set(FLAGS.get() & !mask);
        }
    }

    /// A region of the fake ARM1176's CCR and CR0.
    type TestRegion = DirectRegion<
        Arm1176Counters<Arm1176Pmu<FakeRegisters>>,
        Unchecked,
        Arm1176Read,
        NoSentinel,
        Flags,
        2,
        FakeThread,
    >;

    /// A CCR and CR0 region on the fake ARM1176, under `divider`.
    fn region(divider: CycleDivider) -> TestRegion {
        let pmu = Arm1176Pmu::with_registers(FakeRegisters::new(), divider);
        let placed = [
            (Event::Generic(GenericEvent::CpuCycles), None),
            (Event::Generic(GenericEvent::Instructions), None),
        ];
        let counters =
            crate::direct::alloc::OwnedCounters::allocate(pmu, &placed, PrivilegeFilter::ALL)
                .unwrap();
        let slots: Vec<Slot> = counters.slots().collect();
        assert_eq!(slots, [Slot::Fixed(0), Slot::Programmable(0)]);
        // SAFETY: fakes.
        let handles = unsafe {
            [
                Arm1176Read::new(CounterRegister::Ccr, ccr, divider),
                Arm1176Read::new(CounterRegister::Cr0, cr0, divider),
            ]
        };
        DirectRegion::with_cpu(
            Arm1176Counters::new(counters, divider),
            Unchecked,
            handles,
            vec!["cycles".into(), "instructions".into()],
            NoSentinel,
            crate::sentinel::Sentinel::off("no privilege filter"),
            Flags,
            FakeThread::default(),
        )
        .unwrap()
    }

    /// The handles' flags are PMCR bits 10 (CCR) and 8 (CR0), ARM1176JZF-S TRM 3.2.51;
    /// the widths are the registers' 32 bits, the CCR's 38 under PMCR.D.
    #[test]
    fn flags_and_widths() {
        let r = region(CycleDivider::EveryCycle);
        assert_eq!(
            (
                r.owner().width(0),
                r.owner().width(1),
                // SAFETY: a fake read.
                Arm1176Read::overflow_mask(&unsafe {
                    Arm1176Read::new(CounterRegister::Ccr, ccr, CycleDivider::EveryCycle)
                })
            ),
            (CounterWidth::W32, CounterWidth::W32, 1 << 10)
        );
        // SAFETY: a fake.
        let cr0_read =
            unsafe { Arm1176Read::new(CounterRegister::Cr0, cr0, CycleDivider::EveryCycle) };
        assert_eq!(cr0_read.overflow_mask(), 1 << 8);
        let r = region(CycleDivider::Every64thCycle);
        assert_eq!(r.owner().width(0).bits(), 38);
        assert_eq!(r.owner().width(1), CounterWidth::W32);
    }

    fn run(r: &mut TestRegion, ticks: (u32, u32), flags: u64) -> [Reading; 2] {
        r.start().unwrap();
        CCR.set(CCR.get().wrapping_add(ticks.0));
        CR0.set(CR0.get().wrapping_add(ticks.1));
        FLAGS.set(FLAGS.get() | flags);
        let mut out = [Reading::default(); 2];
        r.stop(&mut out).unwrap();
        out
    }

    /// PMCR.D: the CCR's 452 ticks are 452 × 64 cycles (TRM 3.2.51: it then wraps after
    /// about 392 s instead of 6 s at 700 MHz); a region of 2^32 + 452 cycles, 2^26 + 7
    /// ticks, does not wrap it. CR0 is not scaled.
    #[test]
    fn the_cycle_divider_is_multiplied_back() {
        let mut r = region(CycleDivider::Every64thCycle);
        CCR.set(0x1234);
        let out = run(&mut r, (452, 68), 0);
        assert_eq!((out[0].value, out[1].value), (452 * 64, 68));
        let out = run(&mut r, ((1 << 26) + 7, 0), 0);
        assert_eq!(out[0].value, ((1 << 26) + 7) * 64);
        assert!(out[0].hazards.is_empty(), "{out:?}");
    }

    /// The tick count's 32-bit wrap is the scaled read's 38-bit wrap: 16 ticks below
    /// it, 68 ticks on, with the CCR's flag (bit 10), is 68 × 64 cycles and OVERFLOW.
    /// Without the divider, CR0 16 below its wrap with its flag (bit 8): 68, OVERFLOW
    /// on CR0 only. A flag left over from before the region is cleared at its start.
    /// Wrap rule: pmu-core `CounterMeter` (the flag, or end < start, is one wrap).
    #[test]
    fn a_wrap_is_flagged_on_its_counter() {
        let mut r = region(CycleDivider::Every64thCycle);
        CCR.set(u32::MAX - 15);
        let out = run(&mut r, (68, 0), 1 << 10);
        assert_eq!(out[0].value, 68 * 64);
        assert!(out[0].hazards.contains(pmu_core::Hazards::OVERFLOW));
        assert!(out[1].hazards.is_empty());

        let mut r = region(CycleDivider::EveryCycle);
        FLAGS.set(1 << 8);
        let out = run(&mut r, (5, 3), 0);
        assert!(
            out.iter().all(|o| o.hazards.is_empty()),
            "stale flag: {out:?}"
        );
        CR0.set(u32::MAX - 15);
        let out = run(&mut r, (5, 68), 1 << 8);
        assert_eq!((out[0].value, out[1].value), (5, 68));
        assert!(out[1].hazards.contains(pmu_core::Hazards::OVERFLOW));
        assert!(!out[0].hazards.contains(pmu_core::Hazards::OVERFLOW));

        // A region of 2^32 + 452 cycles (about 6.1 s at the Raspberry Pi 1's 700 MHz):
        // the CCR ends 452 above where it started, and only its flag tells the wrap.
        let out = run(&mut r, (452, 0), 1 << 10);
        assert_eq!(out[0].value, (1 << 32) + 452);
        assert!(out[0].hazards.contains(pmu_core::Hazards::OVERFLOW));
    }
}
