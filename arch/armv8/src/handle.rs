//! Counter handles at the hardware floor: a read is one `mrs` when the counter is known
//! at compile time, one computed branch into a table of `mrs` when it is chosen at run
//! time; every check happens once, when the handle is made.
//!
//! - [`EventCounterN<N>`]: `PMEVCNTR<N>_EL0` with N a constant; its
//!   `read` is `mrs xD, PMEVCNTR<N>_EL0` and nothing else (the
//!   register number is an `asm!` `const` operand, so it is written into the
//!   instruction; N > 30 does not compile).
//! - [`CycleCounterHandle`]: PMCCNTR_EL0, one `mrs`.
//! - [`CounterHandle`]: any counter chosen at run time (0..=30, 31 the cycle counter);
//!   its read is `asm::read_counter_in_table`: `adr; add; br; mrs; b`.
//!
//! Making a handle needs proof that EL0 may read the counter on this PE: a
//! [`ReadGrant`]. Under kmod-enable-user's read-only grant (PMUSERENR_EL0.ER | CR) that
//! is the module's layout ([`crate::granted::GrantedPmu`] over
//! `granted::El0Reads`): a counter the module does not run is refused here,
//! with the counters the grant does cover ([`HandleError::NotGranted`]), instead of
//! trapping at the read (PMUSERENR_EL0.ER opens every event counter below PMCR_EL0.N,
//! but only the module's are programmed and kept; a read of another one would be a
//! number nobody programmed, and one at or above PMCR_EL0.N is UNDEFINED). With
//! PMUSERENR_EL0.EN the proof is `El0Registers`: every counter below
//! PMCR_EL0.N and the cycle counter (the backend takes its counters from its own
//! allocation).
//!
//! A handle is neither `Send` nor `Sync`: the grant and the counters belong to one PE,
//! and the thread that made the handle is pinned there (the grants' contracts). The
//! kernel can still revoke the grant later (perf's `armv8pmu_start` rewrites
//! PMUSERENR_EL0, CPU hotplug resets it): a read then traps (SIGILL). Code that must
//! survive that reads PMUSERENR_EL0 first (readable at EL0 whatever its value), as the
//! direct regions of pmu-linux do.
//!
//! Source: Arm ARM (DDI 0487), PMUSERENR_EL0 (ER, CR, EN), `PMEVCNTR<n>_EL0` ("If
//! n >= PMCR_EL0.N … UNDEFINED").

use core::fmt;
use core::marker::PhantomData;

use crate::counter::{CounterId, EventCounter};

/// Proof that EL0 may read some counters on this PE.
///
/// # Safety
///
/// Every counter in [`ReadGrant::readable`] may be read at EL0 on the PE the calling
/// thread is pinned to, for as long as the value lives, unless the kernel revokes the
/// grant meanwhile (see the module docs): the grant was given on this PE, and every
/// event counter named is below PMCR_EL0.N.
pub unsafe trait ReadGrant {
    /// The readable counters as a [`CounterMask`].
    fn readable(&self) -> CounterMask;
}

/// A set of counters, one bit each as in PMCNTENSET_EL0 ([`CounterId::bit`]: n for
/// `PMEVCNTR<n>_EL0`, 31 for PMCCNTR_EL0). Displays as the register names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CounterMask(u32);

impl CounterMask {
    /// No counter.
    pub const EMPTY: Self = Self(0);

    /// The set of `bits` (bit n = counter n, bit 31 = the cycle counter).
    pub const fn from_bits(bits: u32) -> Self {
        Self(bits)
    }

    /// The bits.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// This set and `counter`.
    pub const fn with(self, counter: CounterId) -> Self {
        Self(self.0 | 1 << counter.bit())
    }

    /// Whether `counter` is in the set.
    pub const fn contains(self, counter: CounterId) -> bool {
        self.0 & (1 << counter.bit()) != 0
    }

    /// Event counters 0..n (n ≤ 31) and the cycle counter: what PMUSERENR_EL0.EN opens
    /// on a PMU with PMCR_EL0.N = n.
    pub const fn below(n: u8) -> Self {
        let events = if n >= 31 {
            (1u32 << 31) - 1
        } else {
            (1u32 << n) - 1
        };
        Self(events | 1 << 31)
    }
}

impl fmt::Display for CounterMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return f.write_str("no counter");
        }
        let mut first = true;
        for bit in 0..32u8 {
            if self.0 & (1 << bit) == 0 {
                continue;
            }
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            match EventCounter::new(bit) {
                Some(n) => n.fmt(f)?,
                None => f.write_str("PMCCNTR_EL0")?,
            }
        }
        Ok(())
    }
}

/// Why a handle was not made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HandleError {
    /// The grant does not cover the counter: under the read-only grant, ask the module
    /// for it (its `events` parameter) or use a counter of its layout.
    NotGranted {
        /// The counter asked for.
        counter: CounterId,
        /// What the grant covers.
        granted: CounterMask,
    },
    /// A counter number above 31 (0..=30 are `PMEVCNTR<n>_EL0`, 31 is PMCCNTR_EL0).
    NoSuchCounter {
        /// The number asked for.
        number: u32,
    },
}

impl core::error::Error for HandleError {}

impl fmt::Display for HandleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotGranted { counter, granted } => write!(
                f,
                "{counter} is not readable under this grant (it covers {granted}): use one \
                 of those (under the read-only grant, kmod-enable-user's `events` parameter \
                 chooses which counters it runs)"
            ),
            Self::NoSuchCounter { number } => write!(
                f,
                "counter {number} does not exist (0..=30 are PMEVCNTR<n>_EL0, 31 is PMCCNTR_EL0)"
            ),
        }
    }
}

fn check(grant: &impl ReadGrant, counter: CounterId) -> Result<(), HandleError> {
    let granted = grant.readable();
    if granted.contains(counter) {
        Ok(())
    } else {
        Err(HandleError::NotGranted { counter, granted })
    }
}

/// `PMEVCNTR<N>_EL0`, N known at compile time: the read is one `mrs`.
#[derive(Clone, Copy, Debug)]
pub struct EventCounterN<const N: u8> {
    _this_pe: PhantomData<*const ()>,
}

impl<const N: u8> EventCounterN<N> {
    /// The counter; a compile-time error for N > 30.
    pub const COUNTER: EventCounter = match EventCounter::new(N) {
        Some(n) => n,
        None => panic!("PMEVCNTR<N>_EL0 exists for N = 0..=30 only"),
    };

    /// The handle, if `grant` covers `PMEVCNTR<N>_EL0`.
    ///
    /// # Errors
    /// [`HandleError::NotGranted`], naming what the grant covers.
    pub fn new(grant: &impl ReadGrant) -> Result<Self, HandleError> {
        check(grant, CounterId::Event(Self::COUNTER))?;
        Ok(Self {
            _this_pe: PhantomData,
        })
    }

    /// `mrs xD, PMEVCNTR<N>_EL0`.
    #[cfg(target_arch = "aarch64")]
    #[inline(always)]
    pub fn read(&self) -> u64 {
        let value: u64;
        // SAFETY: `new` checked the grant for this counter on this PE (the handle
        // cannot leave the thread, which the grant's contract keeps pinned); `mrs`
        // only writes the output register. Not `nomem`: the read must stay where it is
        // among the measured code's memory accesses.
        unsafe {
            core::arch::asm!(
                "mrs {value}, pmevcntr{n}_el0",
                value = out(reg) value,
                n = const N,
                options(nostack, preserves_flags),
            );
        }
        value
    }
}

#[cfg(target_arch = "aarch64")]
impl<const N: u8> pmu_core::CounterRead for EventCounterN<N> {
    #[inline(always)]
    fn read(&self) -> u64 {
        EventCounterN::read(self)
    }
    #[inline(always)]
    fn overflow_mask(&self) -> u64 {
        CounterId::Event(Self::COUNTER).mask()
    }
}

/// PMCCNTR_EL0: the read is one `mrs`.
#[derive(Clone, Copy, Debug)]
pub struct CycleCounterHandle {
    _this_pe: PhantomData<*const ()>,
}

impl CycleCounterHandle {
    /// The handle, if `grant` covers PMCCNTR_EL0.
    ///
    /// # Errors
    /// [`HandleError::NotGranted`], naming what the grant covers.
    pub fn new(grant: &impl ReadGrant) -> Result<Self, HandleError> {
        check(grant, CounterId::Cycle)?;
        Ok(Self {
            _this_pe: PhantomData,
        })
    }

    /// `mrs xD, PMCCNTR_EL0`.
    #[cfg(target_arch = "aarch64")]
    #[inline(always)]
    pub fn read(&self) -> u64 {
        // SAFETY: `new` checked the grant for the cycle counter on this PE.
        unsafe { crate::asm::read_pmccntr_el0() }
    }
}

#[cfg(target_arch = "aarch64")]
impl pmu_core::CounterRead for CycleCounterHandle {
    #[inline(always)]
    fn read(&self) -> u64 {
        CycleCounterHandle::read(self)
    }
    #[inline(always)]
    fn overflow_mask(&self) -> u64 {
        CounterId::Cycle.mask()
    }
}

/// A counter chosen at run time: the read is one computed branch into a table of
/// `mrs` (`asm::read_counter_in_table`), no range test, no mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterHandle {
    /// [`CounterId::bit`]: 0..=31.
    number: u32,
    _this_pe: PhantomData<*const ()>,
}

impl CounterHandle {
    /// The handle for `counter`, if `grant` covers it.
    ///
    /// # Errors
    /// [`HandleError::NotGranted`], naming what the grant covers.
    pub fn new(grant: &impl ReadGrant, counter: CounterId) -> Result<Self, HandleError> {
        check(grant, counter)?;
        Ok(Self {
            number: counter.bit(),
            _this_pe: PhantomData,
        })
    }

    /// The handle for counter `number` in PMCNTENSET_EL0's numbering (0..=30 event
    /// counters, 31 the cycle counter), if it exists and `grant` covers it.
    ///
    /// # Errors
    /// [`HandleError::NoSuchCounter`] above 31; [`HandleError::NotGranted`].
    pub fn from_number(grant: &impl ReadGrant, number: u32) -> Result<Self, HandleError> {
        let counter = match u8::try_from(number).ok().map(EventCounter::new) {
            Some(Some(n)) => CounterId::Event(n),
            _ if number == 31 => CounterId::Cycle,
            _ => return Err(HandleError::NoSuchCounter { number }),
        };
        Self::new(grant, counter)
    }

    /// The counter's value: the whole register (64 bits on the cycle counter and on
    /// event counters with PMCR_EL0.LP and FEAT_PMUv3p5, else the low 32 bits set).
    #[cfg(target_arch = "aarch64")]
    #[inline(always)]
    pub fn read(&self) -> u64 {
        // SAFETY: `new` checked the grant for this counter on this PE; `number` is
        // `CounterId::bit` (0..=31), set only there: inside the table.
        unsafe { crate::asm::read_counter_in_table(self.number) }
    }
}

impl CounterHandle {
    /// The counter read.
    pub fn counter(&self) -> CounterId {
        match EventCounter::new(self.number as u8) {
            Some(n) => CounterId::Event(n),
            None => CounterId::Cycle,
        }
    }
}

#[cfg(target_arch = "aarch64")]
impl pmu_core::CounterRead for CounterHandle {
    #[inline(always)]
    fn read(&self) -> u64 {
        CounterHandle::read(self)
    }
    #[inline(always)]
    fn overflow_mask(&self) -> u64 {
        // `number` is `CounterId::bit`: the counter's bit in PMOVSSET_EL0.
        1 << self.number
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::granted::GrantedLayout;
    use std::string::ToString;

    /// A grant of the module's layout text (kmod-enable-user `parameters/layout`).
    struct Layout(GrantedLayout);

    // SAFETY: host tests only make handles; nothing here reads a register.
    unsafe impl ReadGrant for Layout {
        fn readable(&self) -> CounterMask {
            self.0.readable()
        }
    }

    fn layout(text: &str) -> Layout {
        Layout(GrantedLayout::parse(text).unwrap())
    }

    /// The module's default layout on QEMU's 6-counter PMU (`5=0x8 31=0x11`, with the
    /// sentinel on 4: tests/tests/kernel_arm64.rs): handles for those, an error naming
    /// them for any other, made at creation.
    #[test]
    fn the_read_only_grant_covers_the_layout_only() {
        let grant = layout("5=0x8 4=0x8:k 31=0x11");
        assert!(EventCounterN::<5>::new(&grant).is_ok());
        assert!(EventCounterN::<4>::new(&grant).is_ok(), "the sentinel");
        assert!(CycleCounterHandle::new(&grant).is_ok());
        let err = EventCounterN::<0>::new(&grant).unwrap_err();
        assert_eq!(
            err,
            HandleError::NotGranted {
                counter: CounterId::Event(EventCounter::new(0).unwrap()),
                granted: CounterMask::from_bits(1 << 4 | 1 << 5 | 1 << 31),
            }
        );
        assert_eq!(
            err.to_string(),
            "PMEVCNTR0_EL0 is not readable under this grant (it covers PMEVCNTR4_EL0, \
             PMEVCNTR5_EL0, PMCCNTR_EL0): use one of those (under the read-only grant, \
             kmod-enable-user's `events` parameter chooses which counters it runs)"
        );
        assert!(CounterHandle::from_number(&grant, 5).is_ok());
        assert!(matches!(
            CounterHandle::from_number(&grant, 3),
            Err(HandleError::NotGranted { .. })
        ));
        assert_eq!(
            CounterHandle::from_number(&grant, 32),
            Err(HandleError::NoSuchCounter { number: 32 })
        );
        let cycles_only = layout("31=0x11");
        assert!(matches!(
            EventCounterN::<5>::new(&cycles_only),
            Err(HandleError::NotGranted { .. })
        ));
        assert_eq!(
            layout("none").readable().to_string(),
            "no counter",
            "an unloaded module's layout"
        );
    }

    /// PMUSERENR_EL0.EN opens the event counters below PMCR_EL0.N and the cycle
    /// counter (Arm ARM PMUSERENR_EL0.EN; `PMEVCNTR<n>_EL0` is UNDEFINED for n ≥ N).
    #[test]
    fn en_covers_the_counters_below_n() {
        assert_eq!(CounterMask::below(6).bits(), 0b11_1111 | 1 << 31);
        assert_eq!(CounterMask::below(0).bits(), 1 << 31);
        assert_eq!(CounterMask::below(31).bits(), u32::MAX);
        assert!(!CounterMask::below(6).contains(CounterId::Event(EventCounter::new(6).unwrap())));
    }

    /// The run-time handle names the counter it reads, in PMCNTENSET_EL0's numbering.
    #[test]
    fn run_time_handles_name_their_counter() {
        let all = layout("0=0x8 30=0x8 31=0x11");
        let h = CounterHandle::from_number(&all, 30).unwrap();
        assert_eq!(h.counter().to_string(), "PMEVCNTR30_EL0");
        let c = CounterHandle::from_number(&all, 31).unwrap();
        assert_eq!(c.counter(), CounterId::Cycle);
        assert_eq!(EventCounterN::<0>::COUNTER, EventCounter::new(0).unwrap());
    }
}
