//! Counter reads at the hardware floor: handles made once, with the bounds checked then,
//! that read a counter with as few instructions as the PMU allows.
//!
//! | counter | PMU | read | handle |
//! |---|---|---|---|
//! | PMCCNTR | all | one `mrc p15, 0, Rt, c9, c13, 0` | `CycleReader` |
//! | event counter N, N known at compile time | PMUv3 | one `mrc p15, 0, Rt, c14, c(8+N/8), N%8` (`PMEVCNTR<N>`) | `EventReader` |
//! | event counter n, chosen at run time | PMUv3 | one indirect call to that `mrc` | `Reader` |
//! | event counter n | PMUv1, PMUv2 | `mcr` PMSELR, `isb`, `mrc` PMXEVCNTR | `Reader` |
//!
//! ARMv7 PMUv1/PMUv2 have no per-counter encoding: an event counter is reached through
//! PMSELR.SEL and PMXEVCNTR, and the `isb` between the two is required because a write
//! to a CP15 register is only guaranteed to be seen by later instructions after a
//! context synchronization operation (ARMv7-A/R ARM, DDI 0406C, B3.15.5
//! "Synchronization of changes to system control registers"; Linux 6.12
//! drivers/perf/arm_v7_pmu.c `armv7_pmnc_select_counter` issues the same `isb`).
//! Without it the `mrc` may read the counter selected before. PMUv3 gives every event
//! counter its own encoding in AArch32 (Arm ARM, DDI 0487, G8 "`PMEVCNTR<n>`": `c14,
//! c8..c11`), which is why a handle uses it wherever the PMU is PMUv3.
//!
//! [`ReadPath::for_slot`] is the decision, a pure function the host tests check; the
//! handles (`target_arch = "arm"` only) are made from an [`Armv7Pmu`](crate::Armv7Pmu) over a register
//! file that reaches the hardware (`Cp15Access`: PL1, or PL0 after PMUSERENR.EN), and
//! borrow it, so they cannot outlive the access it stands for.
//!
//! A selected read is checked: PMSELR is read back after PMXEVCNTR, and the read is
//! repeated if another counter is selected by then ([`read_selected`]). On PMUv1/PMUv2 a
//! select and its read are two instructions apart, and whatever runs on this CPU in
//! between may select another counter and leave it selected: perf's ARMv7 driver does,
//! from its overflow interrupt and from the IPI of a `read()` of a counter on this CPU
//! (Linux 6.12 drivers/perf/arm_v7_pmu.c `armv7pmu_read_counter`, which calls
//! `armv7_pmnc_select_counter` and reads PMXEVCNTR, and never restores PMSELR), and so
//! does any other process of this CPU that reads its counters after a context switch.
//! Without the check, the read would return that other counter's value with nothing to
//! flag it.
//!
//! A handle reads the register and nothing else: the value is the same as
//! [`pmu_core::Pmu::read`] of that slot (the driver keeps no state of its own for a
//! counter), 32 bits wide.

use core::fmt;

use pmu_core::Slot;

use crate::registers::PerfMon;

/// How a counter is read: the instructions a handle executes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadPath {
    /// PMCCNTR: one `mrc`.
    Pmccntr,
    /// `PMEVCNTR<n>` (PMUv3): one `mrc`.
    Pmevcntr(u8),
    /// PMSELR = n, `isb`, PMXEVCNTR (PMUv1, PMUv2).
    Selected(u8),
}

/// Why a reader cannot be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReaderError {
    /// The PMU has no such counter: event counters are 0..PMCR.N, the cycle counter is
    /// `Slot::Fixed(0)`.
    OutOfRange {
        /// The slot asked for.
        slot: Slot,
        /// PMCR.N.
        event_counters: u8,
    },
    /// `PMEVCNTR<n>` exists on PMUv3 only; this PMU is older: use [`ReadPath::Selected`]
    /// (a run-time `Reader`).
    NeedsPmuV3 {
        /// What ID_DFR0.PerfMon says (or what the caller said at PL0).
        perfmon: PerfMon,
    },
}

impl fmt::Display for ReaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OutOfRange {
                slot,
                event_counters,
            } => write!(
                f,
                "no counter {slot:?} on this PMU: it has {event_counters} event counters \
                 (Slot::Programmable(0..{event_counters})) and the cycle counter (Slot::Fixed(0))"
            ),
            Self::NeedsPmuV3 { perfmon } => write!(
                f,
                "PMEVCNTR<n> needs PMUv3, this PMU is {perfmon}: read event counters \
                 through a run-time Reader (PMSELR + PMXEVCNTR)"
            ),
        }
    }
}

impl core::error::Error for ReaderError {}

impl ReadPath {
    /// The read path of `slot` on a PMU with `perfmon` and `event_counters` (PMCR.N)
    /// event counters.
    ///
    /// # Errors
    /// [`ReaderError::OutOfRange`] for a counter the PMU lacks.
    pub fn for_slot(perfmon: PerfMon, event_counters: u8, slot: Slot) -> Result<Self, ReaderError> {
        match slot {
            Slot::Fixed(0) => Ok(Self::Pmccntr),
            // PMCR.N is at most 31 and PMEVCNTR<n> exists for n = 0..=30.
            Slot::Programmable(n) if n < event_counters.min(31) => {
                Ok(if matches!(perfmon, PerfMon::PmuV3(_)) {
                    Self::Pmevcntr(n)
                } else {
                    Self::Selected(n)
                })
            }
            _ => Err(ReaderError::OutOfRange {
                slot,
                event_counters,
            }),
        }
    }
}

impl ReadPath {
    /// The counter this path reads (its bit in PMCNTENSET, PMOVSR: [`crate::CounterId::mask`]).
    pub const fn counter(self) -> crate::CounterId {
        match self {
            Self::Pmccntr => crate::CounterId::Cycle,
            Self::Pmevcntr(n) | Self::Selected(n) => crate::CounterId::Event(n),
        }
    }
}

/// The three accesses of a selected read (PMUv1/PMUv2), apart so that the check of
/// [`read_selected`] can be tested on the host.
pub trait SelectedAccess {
    /// Writes PMSELR.SEL = `n` and synchronizes (`isb`), so that PMXEVCNTR reads counter n.
    fn select(&self, n: u8);
    /// PMXEVCNTR: the counter PMSELR selects now.
    fn selected_value(&self) -> u32;
    /// PMSELR.SEL as it reads now.
    fn selection(&self) -> u8;
}

/// Event counter `n` through PMSELR and PMXEVCNTR, read again until PMSELR still selects
/// `n` after the read (module doc: an interrupt or another process may select another
/// counter between the select and the read).
///
/// If PMSELR still reads `n` after PMXEVCNTR was read, PMXEVCNTR read counter n: a
/// selection of another counter that was not undone before the read would still show,
/// and the only code that selects counter n is code that reads or programs counter n. The
/// loop repeats only when something ran on this CPU inside the two-instruction window
/// since the select, so it ends at the next quiet window.
pub fn read_selected(access: &impl SelectedAccess, n: u8) -> u32 {
    loop {
        access.select(n);
        let value = access.selected_value();
        if access.selection() == n {
            return value;
        }
    }
}

#[cfg(target_arch = "arm")]
impl ReadPath {
    /// The function that reads this path: one `mrc` (PMCCNTR, `PMEVCNTR<n>`) or the
    /// selected read, for a caller that keeps its own table (a [`Reader`] is the borrowed,
    /// safe form).
    ///
    /// Calling it is `unsafe`: the path must come from [`ReadPath::for_slot`] for this
    /// CPU's PMU (its version and PMCR.N), the access must be permitted (PL1, or PL0 with
    /// PMUSERENR.EN; at PL0 ER permits a selected read, CR a PMCCNTR read), and nothing
    /// may change PMSELR during a selected read but what [`read_selected`] detects.
    pub fn read_fn(self) -> unsafe fn() -> u32 {
        hw::read_fn(self)
    }
}

#[cfg(target_arch = "arm")]
pub(crate) use hw::Cp15Selected;
#[cfg(target_arch = "arm")]
pub use hw::{Cp15Access, CycleReader, EventReader, Reader};

#[cfg(target_arch = "arm")]
mod hw {
    use core::marker::PhantomData;

    use pmu_core::Slot;

    use super::{ReadPath, ReaderError};
    use crate::asm;
    use crate::pmu::{Armv7Pmu, PmuRegisters};
    use crate::CounterId;

    /// A register file that reaches this CPU's PMU registers with `mrc`/`mcr`.
    ///
    /// # Safety
    /// While a value lives, every counter read of the PMU it was made for is permitted
    /// on the CPU the thread runs on (PL1, or PL0 with PMUSERENR.EN), and nothing else
    /// changes PMSELR between a select and the access that follows it (the constructors
    /// of [`crate::Pl1Registers`] and [`crate::Pl0Registers`] demand exactly that).
    pub unsafe trait Cp15Access: PmuRegisters {}

    // SAFETY: `Pl1Registers::new` demands PL1, one CPU and exclusive ownership.
    unsafe impl Cp15Access for crate::Pl1Registers {}
    // SAFETY: `Pl0Registers::new` demands PMUSERENR.EN on every CPU the thread may run
    // on, a pinned thread and exclusive ownership, and checks EN.
    unsafe impl Cp15Access for crate::Pl0Registers {}

    /// PMCCNTR, read with one `mrc`.
    #[derive(Clone, Copy, Debug)]
    pub struct CycleReader<'p> {
        // Borrows the PMU (whose register file stands for the access) and, like it,
        // stays on this CPU.
        _pmu: PhantomData<&'p *const ()>,
    }

    impl CycleReader<'_> {
        /// PMCCNTR (its low 32 bits on PMUv3).
        #[inline(always)]
        pub fn read(&self) -> u32 {
            // SAFETY: made from an `Armv7Pmu<R: Cp15Access>` it borrows: PMCCNTR is
            // readable here.
            unsafe { asm::pmccntr() }
        }
    }

    impl pmu_core::CounterRead for CycleReader<'_> {
        #[inline(always)]
        fn read(&self) -> u64 {
            u64::from(CycleReader::read(self))
        }
        #[inline(always)]
        fn overflow_mask(&self) -> u64 {
            u64::from(CounterId::Cycle.mask())
        }
    }

    /// Event counter N of a PMUv3, read with one `mrc` of `PMEVCNTR<N>`.
    #[derive(Clone, Copy, Debug)]
    pub struct EventReader<'p, const N: u8> {
        _pmu: PhantomData<&'p *const ()>,
    }

    impl<const N: u8> EventReader<'_, N> {
        /// `PMEVCNTR<N>`.
        #[inline(always)]
        pub fn read(&self) -> u32 {
            // SAFETY: made by `Armv7Pmu::event_reader`, which checked PMUv3 and
            // N < PMCR.N, from a PMU whose register file grants the access.
            unsafe { asm::pmevcntr::<N>() }
        }
    }

    impl<const N: u8> pmu_core::CounterRead for EventReader<'_, N> {
        #[inline(always)]
        fn read(&self) -> u64 {
            u64::from(EventReader::read(self))
        }
        #[inline(always)]
        fn overflow_mask(&self) -> u64 {
            u64::from(CounterId::Event(N).mask())
        }
    }

    /// A counter chosen at run time: its read function was picked from a table when the
    /// handle was made, so a read is one indirect call (and then one `mrc`, or the
    /// selected path on PMUv1/PMUv2).
    #[derive(Clone, Copy, Debug)]
    pub struct Reader<'p> {
        read: unsafe fn() -> u32,
        path: ReadPath,
        _pmu: PhantomData<&'p *const ()>,
    }

    impl Reader<'_> {
        /// The counter's value.
        #[inline(always)]
        pub fn read(&self) -> u32 {
            // SAFETY: `read` was chosen by `ReadPath::for_slot` for this PMU (bounds and
            // PMU version checked) and the borrowed PMU grants the access.
            unsafe { (self.read)() }
        }

        /// How it reads.
        pub fn path(&self) -> ReadPath {
            self.path
        }
    }

    impl pmu_core::CounterRead for Reader<'_> {
        #[inline(always)]
        fn read(&self) -> u64 {
            u64::from(Reader::read(self))
        }
        #[inline(always)]
        fn overflow_mask(&self) -> u64 {
            u64::from(self.path.counter().mask())
        }
    }

    /// The cp15 accesses of a selected read. Made only where they are permitted.
    pub(crate) struct Cp15Selected(());

    impl Cp15Selected {
        /// # Safety
        /// PMSELR and PMXEVCNTR are accessible on this CPU (PL1, or PL0 with
        /// PMUSERENR.EN, or with .ER, which permits PMSELR writes and PMXEVCNTR reads:
        /// DDI 0487 G8 "PMUSERENR") while the value lives, and only counters below
        /// PMCR.N are selected through it.
        pub(crate) unsafe fn new() -> Self {
            Self(())
        }
    }

    impl super::SelectedAccess for Cp15Selected {
        #[inline(always)]
        fn select(&self, n: u8) {
            // SAFETY: `new`'s contract: PMSELR is writable here.
            unsafe { asm::set_pmselr(u32::from(n & 31)) };
            // PMXEVCNTR must see the new PMSELR (module doc: DDI 0406C B3.15.5).
            asm::isb();
        }
        #[inline(always)]
        fn selected_value(&self) -> u32 {
            // SAFETY: `new`'s contract; PMSELR selects an existing counter.
            unsafe { asm::pmxevcntr() }
        }
        #[inline(always)]
        fn selection(&self) -> u8 {
            // SAFETY: `new`'s contract: PMSELR is readable here. No `isb` before it: a
            // select by this thread was synchronized by `select`'s, and one by an
            // interrupt handler by the exception return (a context synchronization
            // event).
            (unsafe { asm::pmselr() } & 31) as u8
        }
    }

    /// Reads event counter N through PMSELR and PMXEVCNTR, checked ([`super::read_selected`]).
    ///
    /// # Safety
    /// N < PMCR.N; PMSELR and PMXEVCNTR are accessible.
    #[inline(always)]
    unsafe fn selected<const N: u8>() -> u32 {
        // SAFETY: forwarded to the caller.
        let access = unsafe { Cp15Selected::new() };
        super::read_selected(&access, N)
    }

    /// `PMEVCNTR<N>` as a plain `unsafe fn`, for the table.
    ///
    /// # Safety
    /// As [`asm::pmevcntr`].
    unsafe fn direct<const N: u8>() -> u32 {
        // SAFETY: forwarded to the caller.
        unsafe { asm::pmevcntr::<N>() }
    }

    /// PMCCNTR as a plain `unsafe fn`, for [`Reader`].
    ///
    /// # Safety
    /// As [`asm::pmccntr`].
    unsafe fn cycles() -> u32 {
        // SAFETY: forwarded to the caller.
        unsafe { asm::pmccntr() }
    }

    macro_rules! table {
        ($f:ident: $($n:literal)*) => { [$($f::<$n>,)*] };
    }

    /// `PMEVCNTR<n>` readers, n = 0..=30.
    const PMEVCNTR: [unsafe fn() -> u32; 31] = table!(direct: 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30);
    /// PMSELR + PMXEVCNTR readers, n = 0..=30.
    const SELECTED: [unsafe fn() -> u32; 31] = table!(selected: 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30);

    /// The table entry of `path` (n ≤ 30: `ReadPath::for_slot` never makes more).
    pub(super) fn read_fn(path: ReadPath) -> unsafe fn() -> u32 {
        match path {
            ReadPath::Pmccntr => cycles,
            ReadPath::Pmevcntr(n) => PMEVCNTR[usize::from(n.min(30))],
            ReadPath::Selected(n) => SELECTED[usize::from(n.min(30))],
        }
    }

    impl<R: Cp15Access> Armv7Pmu<R> {
        /// The cycle counter's reader.
        pub fn cycle_reader(&self) -> CycleReader<'_> {
            CycleReader { _pmu: PhantomData }
        }

        /// Event counter `N`'s one-instruction reader (PMUv3).
        ///
        /// # Errors
        /// [`ReaderError::NeedsPmuV3`] on PMUv1/PMUv2 (use [`Armv7Pmu::reader`]);
        /// [`ReaderError::OutOfRange`] when N ≥ PMCR.N.
        pub fn event_reader<const N: u8>(&self) -> Result<EventReader<'_, N>, ReaderError> {
            match ReadPath::for_slot(self.perfmon(), self.event_counters(), Slot::Programmable(N))?
            {
                ReadPath::Pmevcntr(_) => Ok(EventReader { _pmu: PhantomData }),
                _ => Err(ReaderError::NeedsPmuV3 {
                    perfmon: self.perfmon(),
                }),
            }
        }

        /// The reader of `slot`, chosen at run time: `PMEVCNTR<n>` on PMUv3, PMSELR +
        /// PMXEVCNTR before, PMCCNTR for `Slot::Fixed(0)`.
        ///
        /// # Errors
        /// [`ReaderError::OutOfRange`] for a counter this PMU lacks.
        pub fn reader(&self, slot: Slot) -> Result<Reader<'_>, ReaderError> {
            let path = ReadPath::for_slot(self.perfmon(), self.event_counters(), slot)?;
            Ok(Reader {
                read: read_fn(path),
                path,
                _pmu: PhantomData,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmu_armv8::PmuVersion;
    use std::string::ToString;

    /// A path's counter is the bit its handle's overflow flag has in PMOVSR: bit n for
    /// event counter n, bit 31 for PMCCNTR (DDI 0406C C12 "PMOVSR").
    #[test]
    fn a_paths_counter_names_its_flag() {
        assert_eq!(ReadPath::Pmccntr.counter().mask(), 1 << 31);
        assert_eq!(ReadPath::Selected(3).counter().mask(), 1 << 3);
        assert_eq!(ReadPath::Pmevcntr(30).counter().mask(), 1 << 30);
    }

    /// The decision of the handles. Counter numbering and PMCR.N: DDI 0406C C12 "PMCR"
    /// (N event counters, 0..N-1) and PMCCNTR as `Slot::Fixed(0)` (crate::pmu
    /// `CounterId`); `PMEVCNTR<n>` exists on PMUv3 only (DDI 0487 G8 "`PMEVCNTR<n>`"),
    /// so PMUv1/PMUv2 go through PMSELR.
    #[test]
    fn read_path_by_pmu_version_and_bounds() {
        let v2 = PerfMon::PmuV2;
        let v3 = PerfMon::PmuV3(PmuVersion::PmuV3);
        assert_eq!(
            ReadPath::for_slot(v2, 4, Slot::Fixed(0)),
            Ok(ReadPath::Pmccntr)
        );
        assert_eq!(
            ReadPath::for_slot(v3, 6, Slot::Fixed(0)),
            Ok(ReadPath::Pmccntr)
        );
        assert_eq!(
            ReadPath::for_slot(v2, 4, Slot::Programmable(3)),
            Ok(ReadPath::Selected(3))
        );
        assert_eq!(
            ReadPath::for_slot(PerfMon::PmuV1, 4, Slot::Programmable(0)),
            Ok(ReadPath::Selected(0))
        );
        assert_eq!(
            ReadPath::for_slot(v3, 6, Slot::Programmable(5)),
            Ok(ReadPath::Pmevcntr(5))
        );
        for (perfmon, n, slot) in [
            (v2, 4, Slot::Programmable(4)),
            (v3, 6, Slot::Programmable(6)),
            (v3, 0, Slot::Programmable(0)),
            (v3, 6, Slot::Fixed(1)),
            // PMCR.N reads at most 31, but PMEVCNTR<31> does not exist (31 is the cycle
            // counter's bit).
            (v3, 31, Slot::Programmable(31)),
        ] {
            assert_eq!(
                ReadPath::for_slot(perfmon, n, slot),
                Err(ReaderError::OutOfRange {
                    slot,
                    event_counters: n
                }),
                "{perfmon} N={n} {slot:?}"
            );
        }
        assert_eq!(
            ReadPath::for_slot(v3, 31, Slot::Programmable(30)),
            Ok(ReadPath::Pmevcntr(30))
        );
    }

    /// A PMU of four event counters whose PMSELR something else moves once, as perf's
    /// ARMv7 overflow interrupt or read IPI does (arm_v7_pmu.c `armv7pmu_read_counter`
    /// selects its own counter and leaves it selected).
    struct Interrupted {
        counters: [u32; 4],
        sel: core::cell::Cell<u8>,
        /// Before which PMXEVCNTR read (0 = the first) the "interrupt" selects counter 3.
        interrupt_before_read: Option<u32>,
        reads: core::cell::Cell<u32>,
    }

    impl SelectedAccess for Interrupted {
        fn select(&self, n: u8) {
            self.sel.set(n);
        }
        fn selected_value(&self) -> u32 {
            let read = self.reads.get();
            self.reads.set(read + 1);
            if self.interrupt_before_read == Some(read) {
                self.sel.set(3);
            }
            self.counters[usize::from(self.sel.get())]
        }
        fn selection(&self) -> u8 {
            self.sel.get()
        }
    }

    /// Finding: an interrupt between the select and the read makes PMXEVCNTR another
    /// counter's. The checked read returns counter 1's value (20), never counter 3's
    /// (40), and reads twice when interrupted once.
    #[test]
    fn a_selection_moved_between_select_and_read_is_read_again() {
        let pmu = |interrupt_before_read| Interrupted {
            counters: [10, 20, 30, 40],
            sel: core::cell::Cell::new(0),
            interrupt_before_read,
            reads: core::cell::Cell::new(0),
        };
        let quiet = pmu(None);
        assert_eq!(read_selected(&quiet, 1), 20);
        assert_eq!(quiet.reads.get(), 1);
        let interrupted = pmu(Some(0));
        assert_eq!(read_selected(&interrupted, 1), 20);
        assert_eq!(interrupted.reads.get(), 2);
        // Counter 3 itself, interrupted by a select of 3: one read suffices.
        let same = pmu(Some(0));
        assert_eq!(read_selected(&same, 3), 40);
        assert_eq!(same.reads.get(), 1);
    }

    #[test]
    fn errors_say_what_to_do() {
        let e = ReaderError::OutOfRange {
            slot: Slot::Programmable(4),
            event_counters: 4,
        };
        assert!(e.to_string().contains("has 4 event counters"), "{e}");
        let e = ReaderError::NeedsPmuV3 {
            perfmon: PerfMon::PmuV2,
        };
        assert!(e.to_string().contains("run-time Reader"), "{e}");
    }
}
