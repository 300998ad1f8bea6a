//! A region over a pool's counters, for a program that programs the PMU itself (a
//! preset before a region, say) and still wants the library's verdicts: one function,
//! [`pool_region`], for every architecture; each PMU the constructors hand back under a
//! programming grant ([`PoolPmu`]: ARMv8 `El0Pmu`, ARMv7 `Pl0Pmu`, the ARM1176's
//! `Arm1176Pmu<Cp15>`) names its grant check, its counters' reads and its overflow
//! flags in its backend's file.

use pmu_core::{Counter, CounterRead, Slot};

use super::region::{AccessCheck, DirectRegion, NoSentinel, OverflowFlags};
use crate::error::Result;
use crate::machine::sched::Kernel;
use crate::sentinel::Sentinel;

/// The parts of a [`pool_region`] that differ by architecture: a PMU taken by one of
/// the direct backend's constructors, whose grant lets user mode program it. Public in
/// a private module: programs call [`pool_region`] with such a PMU, and cannot name or
/// implement the trait.
pub trait PoolPmu: pmu_core::Pmu + Sized {
    /// The grant's check at each edge.
    type Check: AccessCheck;
    /// One counter's read.
    type Read<'p>: CounterRead
    where
        Self: 'p;
    /// The overflow flags.
    type Flags: OverflowFlags;
    /// The check of the grant this PMU was taken under.
    fn grant_check(&self) -> Self::Check;
    /// The read of `slot`.
    ///
    /// # Errors
    /// [`pmu_core::Error::CounterOutOfRange`] for a slot this PMU lacks.
    fn counter_read(&self, slot: Slot) -> Result<Self::Read<'_>>;
    /// The overflow flags, accessible under the grant this PMU was taken under.
    fn overflow_flags(&self) -> Self::Flags;
}

/// A region built by hand over `counters`, a pool's counters on `pmu` (taken under a
/// programming grant: `armv8::take_armv8`, `aarch32::take_pl0`,
/// `arm1176::take_arm1176`), for a program that programs them itself: each counter
/// read with one instruction (one `mrs` or `mrc`; PMSELR + PMXEVCNTR on ARMv7 before
/// PMUv3), overflow from the PMU's flags (PMOVSSET_EL0, PMOVSR, PMCR bits 10:8), the
/// grant checked at both edges where user mode can read it (not on the ARM1176, whose
/// SUNAVCR is not readable there), no kernel-entry sentinel (switches from `getrusage`),
/// the CPU from `sched_getcpu()`; `names` names the counters, one each. On the ARM1176 a reading
/// is the counter's ticks (under PMCR.D the CCR ticks once per 64 cycles).
///
/// # Errors
/// [`crate::error::GroupError::NoEvents`] without names; a `counters` count other than
/// the names' ([`pmu_core::Error::ReadingsMismatch`]); [`pmu_core::Error::CounterOutOfRange`] for
/// a counter of another PMU.
#[allow(clippy::type_complexity)]
pub fn pool_region<'c, 'p, P: PoolPmu, const K: usize>(
    pmu: &'p P,
    counters: &'c [Counter<'p, P>],
    names: [&str; K],
) -> Result<
    DirectRegion<&'c [Counter<'p, P>], P::Check, P::Read<'p>, NoSentinel, P::Flags, K, Kernel>,
> {
    let reads = counters
        .iter()
        .map(|c| pmu.counter_read(c.slot()))
        .collect::<Result<Vec<_>>>()?;
    let given = reads.len();
    let reads: [P::Read<'p>; K] =
        reads
            .try_into()
            .map_err(|_| pmu_core::Error::ReadingsMismatch {
                expected: K as u32,
                got: given as u32,
            })?;
    DirectRegion::with_cpu(
        counters,
        pmu.grant_check(),
        reads,
        names.map(str::to_owned).to_vec(),
        NoSentinel,
        Sentinel::off("a region by hand over a pool's counters: none programmed"),
        pmu.overflow_flags(),
        Kernel,
    )
}
