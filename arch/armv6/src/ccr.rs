//! CCR, the ARM1176 Cycle Counter Register.
//!
//! Source: ARM1176JZF-S TRM section 3.2.52; accessed with
//! `mrc`/`mcr p15, 0, <Rt>, c15, c12, 1` ([`OPERANDS`]). A 32-bit up-counter of core
//! cycles, or of every 64th cycle when PMCR.D is set ([`CycleDivider`]). It runs
//! whenever PMCR.E is set: unlike CR0 and CR1 it has no event field to park it on.
//! At 700 MHz it wraps after about 6 s, or about 392 s with the divider
//! (2^32 / 700 MHz = 6.1 s; × 64 = 392.7 s).

use crate::pmcr::PMCR;

/// The `mrc`/`mcr` operands of the CCR (`{0}` is the core register).
pub const OPERANDS: &str = crate::cp15::cp15_operands!(CCR);

/// A CCR value: the low 32 bits of the cycle count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Ccr(u32);

impl Ccr {
    /// The register value `count`.
    pub const fn new(count: u32) -> Self {
        Self(count)
    }

    /// The raw count.
    pub const fn count(self) -> u32 {
        self.0
    }

    /// The count in processor cycles under `divider` (64 cycles a tick with PMCR.D).
    pub const fn cycles(self, divider: CycleDivider) -> u64 {
        self.0 as u64 * divider.cycles_per_tick()
    }
}

/// PMCR.D: whether the CCR counts every cycle or every 64th.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CycleDivider {
    /// Every cycle (PMCR.D = 0, the reset value).
    #[default]
    EveryCycle,
    /// Every 64th cycle (PMCR.D = 1): 64 times the range, 1/64 the resolution.
    Every64thCycle,
}

impl CycleDivider {
    /// Processor cycles per CCR increment: 1 or 64.
    pub const fn cycles_per_tick(self) -> u64 {
        match self {
            Self::EveryCycle => 1,
            Self::Every64thCycle => 64,
        }
    }

    /// The PMCR.D value.
    pub const fn pmcr_value(self) -> PMCR::D::Value {
        match self {
            Self::EveryCycle => PMCR::D::Value::EveryCycle,
            Self::Every64thCycle => PMCR::D::Value::Every64thCycle,
        }
    }

    /// The divider a PMCR.D value selects.
    pub const fn from_pmcr_value(value: PMCR::D::Value) -> Self {
        match value {
            PMCR::D::Value::EveryCycle => Self::EveryCycle,
            PMCR::D::Value::Every64thCycle => Self::Every64thCycle,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pmcr::Pmcr;

    /// TRM Table 3-136 (PMCR.D): with the factor 64 the 32-bit CCR lasts 2^32 × 64 /
    /// 700 MHz = 392.7 s at the Raspberry Pi 1's 700 MHz.
    #[test]
    fn divider_extends_the_range_64_times() {
        let wrap = Ccr::new(u32::MAX).cycles(CycleDivider::Every64thCycle) + 64;
        assert_eq!(wrap, 1 << 38); // TRM 3.2.51: "cycles between counter rollover = 2^38"
        assert_eq!(wrap / 700_000_000, 392);
        assert_eq!(Ccr::new(452).cycles(CycleDivider::EveryCycle), 452);
    }

    #[test]
    fn divider_is_pmcr_d() {
        for divider in [CycleDivider::EveryCycle, CycleDivider::Every64thCycle] {
            let mut pmcr = Pmcr::new(0);
            pmcr.modify(divider.pmcr_value().into());
            assert_eq!(pmcr.get(), (divider.cycles_per_tick() as u32 / 64) << 3);
            let back = pmcr
                .read_as_enum(PMCR::D)
                .map(CycleDivider::from_pmcr_value);
            assert_eq!(back, Some(divider));
        }
    }
}
