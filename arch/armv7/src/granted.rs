//! The counters kmod-enable-user's ARMv7 flavour runs for PL0 under its read-only grant,
//! read without programming anything: PMUv3 seen from AArch32 (Cortex-A53/A72/A76 under
//! a 32-bit kernel: Raspberry Pi 3/4/5 with `kernel7l.img`), PMUSERENR = ER (ER | CR
//! for a layout with the cycle counter, `31=…`, as modules before perf's bookkeeping
//! published it).
//!
//! The module programs its counters for PL0 only and publishes where
//! (`/sys/module/kmod_enable_user/parameters/layout`, `5=0x8 4=0x11`: INST_RETIRED on
//! event counter 5, CPU_CYCLES on event counter 4), in the arm64 module's format:
//! [`GrantedLayout`] parses it and [`GrantedPmu`] maps it onto pmu-core slots, both
//! pmu-armv8's. This module adds what differs in AArch32: which PMUSERENR bits the reads
//! need ([`ReadGrant`]), how a slot is read ([`read_path`]), and the reads themselves
//! (`Pl0Reads` on the target, [`RegisterReads`] over any register file, the fake
//! included).
//!
//! What the grant permits at PL0 (Arm ARM DDI 0487, G8 "PMUSERENR, Performance Monitors
//! User Enable Register"): CR, reads of PMCCNTR; ER, reads of PMXEVCNTR and
//! `PMEVCNTR<n>` and reads *and writes* of PMSELR. Everything else (PMCR, PMCNTEN*,
//! PMOVSR, PMXEVTYPER, PMCCNTR and counter writes) stays UNDEFINED at PL0. So an event
//! counter n is read by selecting it (PMSELR.SEL = n), an `isb`, and PMXEVCNTR: a write
//! to a System register is only guaranteed to be seen by a later instruction after a
//! context synchronization event (DDI 0487 "Synchronization requirements for AArch32
//! System registers"; DDI 0406C B3.15.5), and without it the `mrc` may read the counter
//! selected before. The read is checked against a select by an interrupt in between
//! ([`crate::reader::read_selected`]). This is [`ReadPath::Selected`], the path the
//! PL0 driver reads under EN, chosen over `PMEVCNTR<n>` because PL0 cannot read
//! ID_DFR0: the module also publishes its layout under `el0_programming=1` on a PMUv2,
//! where EN permits these reads and `PMEVCNTR<n>` is UNDEFINED.
//!
//! Every read is 32 bits: PMXEVCNTR, and PMCCNTR's low half through `mrc` (the module
//! leaves PMCR.LC at 0). Without EN PL0 cannot read PMOVSR, so a reader sees no overflow
//! flag ([`GrantedPmu`]'s `overflowed` is always false): a difference of two reads is
//! exact below 2^32 events, one wrap shows as end < start, more are invisible.
//!
//! ARMv7's PMUv2 (Cortex-A7 on the Pi 2, Cortex-A15) has PMUSERENR.EN alone (DDI 0406C
//! C12 "PMUSERENR"): the read-only grant does not exist there, and the module refuses its
//! default load ([`crate::user_enable::ApplyError::NoReadOnlyGrant`]).

use pmu_core::{CounterWidth, Slot};

pub use pmu_armv8::granted::{CounterReads, GrantedLayout, GrantedPmu, LayoutError};
use pmu_armv8::EventCounter;

use crate::pmu::PmuRegisters;
use crate::reader::ReadPath;
use crate::registers::{Pmuserenr, PMUSERENR};

/// The PMUSERENR bits a layout's reads need: ER for its event counters (and a
/// sentinel), CR for the cycle counter. EN, the programming grant, includes both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadGrant {
    needed: u32,
}

impl ReadGrant {
    /// The bits `layout` needs.
    pub fn for_layout(layout: &GrantedLayout) -> Self {
        let mut needed = Pmuserenr::new(0);
        if !layout.event_counters().is_empty() || layout.sentinel().is_some() {
            needed.modify(PMUSERENR::ER::SET);
        }
        if layout.cycle_counter() {
            needed.modify(PMUSERENR::CR::SET);
        }
        Self {
            needed: needed.get(),
        }
    }

    /// The bits needed, as a PMUSERENR value (ER, CR or both).
    pub fn needed(self) -> Pmuserenr {
        Pmuserenr::new(self.needed)
    }

    /// Whether PMUSERENR value `value` permits every read of the layout at PL0.
    pub fn allows(self, value: Pmuserenr) -> bool {
        value.is_set(PMUSERENR::EN) || value.get() & self.needed == self.needed
    }
}

/// How `slot` of a [`GrantedPmu`] over `layout` is read: its i-th event counter through
/// PMSELR + PMXEVCNTR, the cycle counter with one `mrc`; `None` for a slot the layout
/// does not back.
pub fn read_path(layout: &GrantedLayout, slot: Slot) -> Option<ReadPath> {
    match slot {
        Slot::Programmable(i) => layout
            .event_counters()
            .get(usize::from(i))
            // PMXEVCNTR reaches event counters 0..=30 (SEL = 31 is the cycle counter's
            // filter); the parser accepts 31 only for the cycle counter.
            .filter(|&&(n, _)| n <= 30)
            .map(|&(n, _)| ReadPath::Selected(n)),
        Slot::Fixed(0) if layout.cycle_counter() => Some(ReadPath::Pmccntr),
        Slot::Fixed(_) => None,
    }
}

/// The layout's reads through a register file's PMSELR + PMXEVCNTR and PMCCNTR
/// ([`PmuRegisters::pmxevcntr`], [`PmuRegisters::pmccntr`]): the fake's on the host. All
/// 32 bits wide.
#[derive(Debug)]
pub struct RegisterReads<R>(pub R);

impl<R: PmuRegisters> CounterReads for RegisterReads<R> {
    const CYCLE_WIDTH: CounterWidth = CounterWidth::W32;

    fn event_counter(&self, counter: EventCounter) -> u64 {
        u64::from(self.0.pmxevcntr(counter.index()))
    }

    fn cycle_counter(&self) -> u64 {
        u64::from(self.0.pmccntr())
    }
}

#[cfg(target_arch = "arm")]
pub use hw::Pl0Reads;

#[cfg(target_arch = "arm")]
mod hw {
    use core::marker::PhantomData;

    use pmu_armv8::granted::CounterReads;
    use pmu_armv8::EventCounter;
    use pmu_core::CounterWidth;

    use crate::asm;
    use crate::reader::{read_selected, Cp15Selected};

    /// The module's counters read at PL0 under ER | CR (or EN): PMSELR + `isb` +
    /// PMXEVCNTR, checked, for an event counter; PMCCNTR's low 32 bits.
    #[derive(Debug)]
    pub struct Pl0Reads {
        _this_cpu: PhantomData<*const ()>,
    }

    impl Pl0Reads {
        /// Reads on this CPU.
        ///
        /// # Safety
        /// The kernel granted ER and CR (or EN) on this CPU (without it a read is
        /// UNDEFINED: SIGILL), the thread stays on this CPU while the value lives, and
        /// every counter read is one the layout names (below PMCR.N: the module
        /// programmed it).
        pub unsafe fn new() -> Self {
            Self {
                _this_cpu: PhantomData,
            }
        }
    }

    impl CounterReads for Pl0Reads {
        const CYCLE_WIDTH: CounterWidth = CounterWidth::W32;

        #[inline(always)]
        fn event_counter(&self, counter: EventCounter) -> u64 {
            // SAFETY: `new`'s contract: ER (PMSELR and PMXEVCNTR at PL0) on this CPU, a
            // counter of the layout.
            let access = unsafe { Cp15Selected::new() };
            u64::from(read_selected(&access, counter.index()))
        }

        #[inline(always)]
        fn cycle_counter(&self) -> u64 {
            // SAFETY: `new`'s contract: CR on this CPU.
            u64::from(unsafe { asm::pmccntr() })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeRegisters;
    use crate::registers::pmuserenr::read_only;
    use crate::user_enable::{
        apply, Layout, ModuleEvents, Request, UserAccess, UserAccessRegisters, DEFAULT_USER_ACCESS,
    };
    use pmu_armv8::EventNumber;
    use pmu_core::{CounterPool, Event, GenericEvent, Pmu, PrivilegeFilter};

    /// The module's layout text (`Layout::write_text`, what `parameters/layout` shows)
    /// for INST_RETIRED on a PMU of `n` event counters, with the cycle counter.
    fn module_layout(n: u8) -> (Layout, GrantedLayout) {
        let layout = Layout::new(
            n,
            ModuleEvents::from_slice(&[EventNumber::INST_RETIRED.get()]).unwrap(),
            true,
        )
        .unwrap();
        let mut text = [0u8; 64];
        let len = layout.write_text(&mut text);
        let text = core::str::from_utf8(&text[..len]).unwrap();
        // kmod-enable-user/README.md, ARMv7 flavour: INST_RETIRED on counter N-1,
        // CPU_CYCLES on counter N-2 (tests/tests/kernel_armv7.rs reads `5=0x8 4=0x11` on
        // QEMU's 6-counter `max`).
        assert_eq!(text, std::format!("{}=0x8 {}=0x11", n - 1, n - 2));
        (layout, GrantedLayout::parse(text).unwrap())
    }

    /// DDI 0487 G8 "PMUSERENR": ER permits the event counter reads (and PMSELR), CR the
    /// cycle counter's, EN both; the module's default grant (ER | CR, 0xc) covers its
    /// default layout, and a PMUSERENR of 0 (unloaded, or reset by a CPU power-down)
    /// covers nothing.
    #[test]
    fn the_grant_a_layout_needs() {
        let both = ReadGrant::for_layout(&GrantedLayout::parse("5=0x8 31=0x11").unwrap());
        assert_eq!(both.needed().get(), 0b1100);
        assert!(both.allows(read_only()));
        assert!(both.allows(Pmuserenr::new(1)));
        assert!(both.allows(Pmuserenr::new(0b1101)));
        assert!(!both.allows(Pmuserenr::new(0)));
        assert!(!both.allows(Pmuserenr::new(0b1000)));
        assert!(!both.allows(Pmuserenr::new(0b0100)));
        let events = ReadGrant::for_layout(&GrantedLayout::parse("5=0x8").unwrap());
        assert_eq!(events.needed().get(), 0b1000);
        assert!(events.allows(Pmuserenr::new(0b1000)));
        let cycles = ReadGrant::for_layout(&GrantedLayout::parse("31=0x11").unwrap());
        assert_eq!(cycles.needed().get(), 0b0100);
        assert!(!cycles.allows(Pmuserenr::new(0b1000)));
    }

    /// Slots map onto the layout's counters in layout order (pmu-armv8 `GrantedPmu`),
    /// each event counter through PMSELR + PMXEVCNTR, the cycle counter with one `mrc`.
    #[test]
    fn each_slot_reads_its_layout_counter() {
        let layout = GrantedLayout::parse("5=0x8 4=0x3 31=0x11").unwrap();
        assert_eq!(
            read_path(&layout, Slot::Programmable(0)),
            Some(ReadPath::Selected(5))
        );
        assert_eq!(
            read_path(&layout, Slot::Programmable(1)),
            Some(ReadPath::Selected(4))
        );
        assert_eq!(read_path(&layout, Slot::Programmable(2)), None);
        assert_eq!(read_path(&layout, Slot::Fixed(0)), Some(ReadPath::Pmccntr));
        assert_eq!(read_path(&layout, Slot::Fixed(1)), None);
        let no_cycles = GrantedLayout::parse("5=0x8").unwrap();
        assert_eq!(read_path(&no_cycles, Slot::Fixed(0)), None);
    }

    /// The module and the reader together on a fake Cortex-A53 in AArch32 (ID_DFR0
    /// 0x03010066, PMCR.N = 6: Cortex-A53 TRM): `apply` with the default request
    /// programs INST_RETIRED on counter 5 and CPU_CYCLES on counter 4 for PL0 and grants
    /// ER; the reader takes the counters from the layout the module publishes, counts
    /// what the fake counted, and writes no register. Its counters are 32 bits wide
    /// (PMXEVCNTR, DDI 0406C C12): a region across a wrap reads end < start, and the
    /// 32-bit difference is exact.
    #[test]
    fn the_reader_counts_what_the_module_programmed() {
        let regs = FakeRegisters::cortex_a53_aarch32();
        let (layout, granted) = module_layout(6);
        let request = Request {
            user_access: UserAccess::new(DEFAULT_USER_ACCESS, false).unwrap(),
            layout,
        };
        apply(&regs, request, None, 0).unwrap();
        assert!(ReadGrant::for_layout(&granted).allows(regs.pmuserenr()));
        let pmu = GrantedPmu::new(granted, RegisterReads(&regs));
        let caps = pmu.capabilities();
        assert_eq!(caps.programmable_width, CounterWidth::W32);
        assert_eq!(caps.fixed_width, CounterWidth::W32);
        let pool = CounterPool::new(&pmu);
        let inst = pmu_armv8::generic_event(GenericEvent::Instructions).unwrap();
        let slot = granted.slot_of(inst).unwrap();
        assert_eq!(slot, Slot::Programmable(0));
        let ins = pool
            .counter_at(
                slot,
                GenericEvent::Instructions.into(),
                PrivilegeFilter::USER,
            )
            .unwrap();
        let cpu_cycles = pmu_armv8::generic_event(GenericEvent::CpuCycles).unwrap();
        let cycles_slot = granted.slot_of(cpu_cycles).unwrap();
        assert_eq!(cycles_slot, Slot::Programmable(1));
        let cycles = pool
            .counter_at(
                cycles_slot,
                Event::Generic(GenericEvent::CpuCycles),
                PrivilegeFilter::USER,
            )
            .unwrap();
        assert_eq!(cycles.width(), CounterWidth::W32);
        let writes = regs.write_count();
        let (i0, c0) = (ins.read(), cycles.read());
        regs.count(EventNumber::INST_RETIRED, 2000);
        regs.count(EventNumber::CPU_CYCLES, 3000);
        assert_eq!(ins.read() - i0, 2000);
        assert_eq!(cycles.read() - c0, 3000);
        // Across the cycle counter's 32-bit wrap.
        regs.count(EventNumber::CPU_CYCLES, u32::MAX - 3000 - 10);
        let start = cycles.read();
        regs.count(EventNumber::CPU_CYCLES, 100);
        let end = cycles.read();
        assert!(end < start, "{start} {end}");
        assert_eq!(CounterWidth::W32.wrapping_delta(start, end), 100);
        assert_eq!(regs.write_count(), writes);
        // Only what the module programmed, at PL0 only; no overflow flag readable.
        assert!(pool
            .counter_at(
                Slot::Programmable(0),
                Event::Raw(0x3),
                PrivilegeFilter::USER
            )
            .is_err());
        assert!(!pmu.overflowed(cycles_slot));
    }
}
