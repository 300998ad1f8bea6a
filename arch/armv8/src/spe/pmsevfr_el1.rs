//! PMSEVFR_EL1, Sampling Event Filter Register: with PMSFCR_EL1.FE = 1, only samples that have
//! *all* of these events are recorded. Which bits can work depends on the SPE version, see
//! [`super::events`].
//!
//! Source: Arm ARM DDI 0487 M.a.a D24.7.11; Linux 6.12 `arch/arm64/tools/sysreg`
//! (`Sysreg PMSEVFR_EL1 3 0 9 9 5`, `Field 63:0 E`).

use tock_registers::{register_bitfields, LocalRegisterCopy};

use super::events::SpeEvents;

register_bitfields! {u64,
    /// PMSEVFR_EL1 fields.
    // The macro generates `Register`, `SET`/`CLEAR` and `Value` items without docs.
    #[allow(missing_docs)]
    pub PMSEVFR_EL1 [
        /// E\[n\]: record only samples with event n. Layout as [`SpeEvents`].
        E OFFSET(0) NUMBITS(64) [],
    ]
}

/// A PMSEVFR_EL1 value.
pub type PmsevfrEl1 = LocalRegisterCopy<u64, PMSEVFR_EL1::Register>;

impl From<SpeEvents> for PmsevfrEl1 {
    fn from(events: SpeEvents) -> Self {
        Self::new(events.bits())
    }
}

impl From<PmsevfrEl1> for SpeEvents {
    fn from(value: PmsevfrEl1) -> Self {
        SpeEvents::from_bits_retain(value.get())
    }
}

spe_register_access!(
    PmsevfrEl1,
    read_pmsevfr_el1,
    write_pmsevfr_el1,
    "PMSEVFR_EL1"
);
