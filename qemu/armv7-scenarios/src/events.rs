//! The events the scenarios count, by name: from the running core's table in
//! `pmu_events` (picked by its MIDR), else the architecture's common events (a core the
//! crate has no table for, such as QEMU's Cortex-A15 or `-cpu max`), else `event 0x..`.

use core::fmt;

use pmu_core::{EventEncoding, GenericEvent, Pmu};
use pmu_events::{Core, Event, Family};

use crate::println;

/// An event number and what this core calls it.
#[derive(Clone, Copy)]
pub struct Named {
    /// The event number PMXEVTYPER (`PMEVTYPER<n>`) is programmed with.
    pub code: u64,
    /// Its entry, where a table names it.
    pub event: Option<&'static Event>,
}

impl Named {
    /// The name for a `key=value` field: the mnemonic, or `unnamed`.
    pub fn key(&self) -> &'static str {
        self.event.map_or("unnamed", |e| e.name)
    }
}

impl fmt::Display for Named {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.event {
            Some(e) => write!(f, "{:#04x} {}: {}", self.code, e.name, e.about),
            None => write!(f, "event {:#04x}", self.code),
        }
    }
}

/// The table for the core whose MIDR is `midr`, if `pmu_events` has one that numbers
/// its events as ARMv7's PMU does (ARMv7's PMUv2, or PMUv3 in AArch32).
pub fn core_table(midr: u32) -> Option<&'static Core> {
    pmu_events::for_midr(midr).filter(|c| matches!(c.family, Family::Armv7 | Family::PmuV3))
}

/// `code` as the core whose MIDR is `midr` names it ([`pmu_events::event_on`]: its
/// table, else the architecture's common events).
pub fn name(midr: u32, code: u64) -> Named {
    let event = u16::try_from(code)
        .ok()
        .and_then(|code| pmu_events::event_on(midr, Family::Armv7, code));
    Named { code, event }
}

/// `RESULT events …`: what each counted generic event is on this core.
pub fn print_counted<P: Pmu>(midr: u32, counted: &[(&str, GenericEvent)]) {
    let core = core_table(midr);
    crate::print!(
        "RESULT events core={} table={}",
        core.map_or("unknown", |c| c.name),
        if core.is_some() { "core" } else { "common" }
    );
    for (what, generic) in counted {
        match P::Event::from_generic(*generic) {
            Some(e) => {
                let named = name(midr, e.code());
                crate::print!(" {what}={} {what}_code={:#04x}", named.key(), named.code);
            }
            None => crate::print!(" {what}=unsupported"),
        }
    }
    println!();
    for (what, generic) in counted {
        if let Some(e) = P::Event::from_generic(*generic) {
            println!("  {what}: {}", name(midr, e.code()));
        }
    }
}
