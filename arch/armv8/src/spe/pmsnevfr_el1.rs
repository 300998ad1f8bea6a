//! PMSNEVFR_EL1, Sampling Inverted Event Filter Register: with PMSFCR_EL1.FnE = 1, samples
//! that have *any* of these events are dropped. Present only with FEAT_SPE_FnE (FEAT_SPEv1p2,
//! PMSIDR_EL1.FnE = 1); the same bits as PMSEVFR_EL1 can work, see [`super::events`].
//!
//! Source: Arm ARM DDI 0487 M.a.a D24.7.17; Linux 6.12 `arch/arm64/tools/sysreg`
//! (`Sysreg PMSNEVFR_EL1 3 0 9 9 1`, `Field 63:0 E`).

use tock_registers::{register_bitfields, LocalRegisterCopy};

use super::events::SpeEvents;

register_bitfields! {u64,
    /// PMSNEVFR_EL1 fields.
    // The macro generates `Register`, `SET`/`CLEAR` and `Value` items without docs.
    #[allow(missing_docs)]
    pub PMSNEVFR_EL1 [
        /// E\[n\]: do not record samples with event n. Layout as [`SpeEvents`].
        E OFFSET(0) NUMBITS(64) [],
    ]
}

/// A PMSNEVFR_EL1 value.
pub type PmsnevfrEl1 = LocalRegisterCopy<u64, PMSNEVFR_EL1::Register>;

impl From<SpeEvents> for PmsnevfrEl1 {
    fn from(events: SpeEvents) -> Self {
        Self::new(events.bits())
    }
}

impl From<PmsnevfrEl1> for SpeEvents {
    fn from(value: PmsnevfrEl1) -> Self {
        SpeEvents::from_bits_retain(value.get())
    }
}

spe_register_access!(
    PmsnevfrEl1,
    read_pmsnevfr_el1,
    write_pmsnevfr_el1,
    "PMSNEVFR_EL1"
);
