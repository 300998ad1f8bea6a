//! CR1, the ARM1176 Count Register 1.
//!
//! Source: ARM1176JZF-S TRM section 3.2.54; accessed with
//! `mrc`/`mcr p15, 0, <Rt>, c15, c12, 3` ([`OPERANDS`]). A 32-bit up-counter of the
//! event in PMCR.EvtCount1 (Table 3-137), reset to 0 by PMCR.P together with CR0.

/// The `mrc`/`mcr` operands of CR1 (`{0}` is the core register).
pub const OPERANDS: &str = crate::cp15::cp15_operands!(CR1);

/// A CR1 value: the low 32 bits of the event count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Cr1(u32);

impl Cr1 {
    /// The register value `count`.
    pub const fn new(count: u32) -> Self {
        Self(count)
    }

    /// The raw count.
    pub const fn count(self) -> u32 {
        self.0
    }
}
