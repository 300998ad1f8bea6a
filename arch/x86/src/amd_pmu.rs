//! The ring-0 backend for AMD core performance counters.
//!
//! Programmable slots are the core counters PERF_CTRn with their PERF_CTLn (legacy or
//! extended layout, [`crate::msr::AmdCounterLayout`]); AMD has no fixed counters. EN in
//! PERF_CTLn starts a counter. With PerfMonV2 (Zen 4 on) a counter also needs its bit in
//! PerfCntrGlobalCtl, and overflow flags are PerfCntrGlobalStatus bits cleared through
//! PerfCntrGlobalStatusClr (APM Vol. 2, "Performance Monitoring Version 2"; Linux
//! `amd_pmu_v2_enable_all`).
//!
//! Without PerfMonV2 the hardware keeps no overflow flag: [`Pmu::overflowed`] is then
//! always `false`, and a wrap can only be detected from the values (at most one wrap per
//! 2^48 events).

use pmu_core::{Capabilities, Error, GenericEvent, Pmu, PrivilegeFilter, Slot};

use crate::access::MsrAccess;
use crate::amd_events::AmdEvent;
use crate::amd_perf_ctl::{self, AMD_PERF_CTL};
use crate::cpuid::AmdCoreCounters;
use crate::msr::{
    AMD_PERF_CNTR_GLOBAL_CTL, AMD_PERF_CNTR_GLOBAL_STATUS, AMD_PERF_CNTR_GLOBAL_STATUS_CLR,
};

/// AMD's core PMU driven directly at ring 0, over any [`MsrAccess`].
#[derive(Debug)]
pub struct AmdPmu<M: MsrAccess> {
    msrs: M,
    counters: AmdCoreCounters,
}

impl<M: MsrAccess> AmdPmu<M> {
    /// The PMU `counters` (CPUID of the CPU `msrs` reaches) describes. `msrs` must belong
    /// to that CPU and own its PMU (see [`crate::Ring0Msrs::new`]).
    pub fn new(msrs: M, counters: AmdCoreCounters) -> Self {
        Self { msrs, counters }
    }

    /// The register access underneath.
    pub fn msrs(&self) -> &M {
        &self.msrs
    }

    /// What CPUID said about the counters.
    pub fn counters(&self) -> &AmdCoreCounters {
        &self.counters
    }

    fn index(&self, slot: Slot) -> Option<u8> {
        match slot {
            Slot::Programmable(n) if n < self.counters.counters() => Some(n),
            _ => None,
        }
    }

    fn update(&self, msr: u32, f: impl FnOnce(u64) -> u64) {
        let old = self.msrs.read(msr);
        let new = f(old);
        if new != old {
            self.msrs.write(msr, new);
        }
    }

    fn set_enable(&self, n: u8, on: bool) {
        let en = AMD_PERF_CTL::EN.mask << AMD_PERF_CTL::EN.shift;
        let ctl = self.counters.layout().perf_ctl(n);
        self.update(ctl, |v| if on { v | en } else { v & !en });
    }

    fn set_global(&self, n: u8, on: bool) {
        if self.counters.perfmon_v2() {
            let bit = 1u64 << n;
            self.update(AMD_PERF_CNTR_GLOBAL_CTL, |v| {
                if on {
                    v | bit
                } else {
                    v & !bit
                }
            });
        }
    }
}

#[cfg(target_arch = "x86_64")]
impl AmdPmu<crate::Ring0Msrs> {
    /// The PMU of the CPU `msrs` stands for.
    ///
    /// # Errors
    /// [`crate::ProbeError::WrongVendor`] on a CPU with Intel architectural performance
    /// monitoring (use [`crate::IntelPmu`]).
    pub fn from_ring0(msrs: crate::Ring0Msrs) -> Result<Self, crate::ProbeError> {
        let info = msrs.info();
        match info.pmu {
            crate::cpuid::PmuDescription::Amd(counters) => Ok(Self::new(msrs, counters)),
            crate::cpuid::PmuDescription::Architectural { .. } => {
                Err(crate::ProbeError::WrongVendor {
                    expected: crate::cpuid::Vendor::Amd,
                    found: info.vendor,
                })
            }
        }
    }
}

impl<M: MsrAccess> Pmu for AmdPmu<M> {
    type Event = AmdEvent;

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            programmable: u32::from(self.counters.counters()),
            programmable_width: AmdCoreCounters::WIDTH,
            fixed: 0,
            fixed_width: AmdCoreCounters::WIDTH,
        }
    }

    /// AMD enumerates no events: every encodable one is taken on trust.
    fn is_implemented(&self, _event: AmdEvent) -> bool {
        true
    }

    fn fixed_event(&self, _index: u8) -> Option<GenericEvent> {
        None
    }

    fn configure(&self, slot: Slot, event: AmdEvent, filter: PrivilegeFilter) -> Result<(), Error> {
        let Some(n) = self.index(slot) else {
            return Err(Error::CounterOutOfRange {
                slot,
                available: match slot {
                    Slot::Programmable(_) => u32::from(self.counters.counters()),
                    Slot::Fixed(_) => 0,
                },
            });
        };
        let ctl = amd_perf_ctl::counting(event, filter)?;
        self.set_global(n, false);
        self.msrs
            .write(self.counters.layout().perf_ctl(n), ctl.get());
        Ok(())
    }

    fn enable(&self, slot: Slot) {
        if let Some(n) = self.index(slot) {
            self.set_enable(n, true);
            self.set_global(n, true);
        }
    }

    fn disable(&self, slot: Slot) {
        if let Some(n) = self.index(slot) {
            self.set_global(n, false);
            self.set_enable(n, false);
        }
    }

    #[inline(always)]
    fn read(&self, slot: Slot) -> u64 {
        self.index(slot)
            .map_or(0, |n| self.msrs.rdpmc(u32::from(n)))
    }

    fn write(&self, slot: Slot, value: u64) {
        if let Some(n) = self.index(slot) {
            let ctr = self.counters.layout().perf_ctr(n);
            self.msrs.write(ctr, AmdCoreCounters::WIDTH.truncate(value));
        }
    }

    #[inline(always)]
    fn overflowed(&self, slot: Slot) -> bool {
        match self.index(slot) {
            Some(n) if self.counters.perfmon_v2() => {
                self.msrs.read(AMD_PERF_CNTR_GLOBAL_STATUS) & (1 << n) != 0
            }
            _ => false,
        }
    }

    fn clear_overflow(&self, slot: Slot) {
        if let Some(n) = self.index(slot) {
            if self.counters.perfmon_v2() {
                self.msrs.write(AMD_PERF_CNTR_GLOBAL_STATUS_CLR, 1 << n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeMsrs;
    use crate::msr::AmdCounterLayout;
    use pmu_core::{CounterPool, Event};

    fn pool(ext_ecx: u32, v2: Option<(u32, u32)>) -> CounterPool<AmdPmu<FakeMsrs>> {
        let counters = AmdCoreCounters::decode(ext_ecx, v2);
        CounterPool::new(AmdPmu::new(FakeMsrs::amd(&counters), counters))
    }

    /// PerfCtrExtCore (Zen): cycles (PMCx076) user-only on PERF_CTL0 at C001_0200h is
    /// 0x10076; start sets EN (bit 22); reads are RDPMC 0 = PERF_CTR0 at C001_0201h.
    #[test]
    fn extended_layout_register_values() {
        let pool = pool(1 << 23, None);
        let caps = pool.capabilities();
        assert_eq!((caps.programmable, caps.fixed), (6, 0));
        let c = pool
            .counter(GenericEvent::CpuCycles.into(), PrivilegeFilter::USER)
            .unwrap();
        assert_eq!(c.slot(), Slot::Programmable(0));
        let msrs = pool.pmu().msrs();
        assert_eq!(msrs.get(0xC001_0200), 0x1_0076);
        c.start();
        assert_eq!(msrs.get(0xC001_0200), 0x41_0076);
        msrs.set(0xC001_0201, 777);
        assert_eq!(c.read(), 777);
        c.set(u64::MAX);
        assert_eq!(msrs.get(0xC001_0201), 0xFFFF_FFFF_FFFF);
        assert!(!c.overflowed(), "no PerfMonV2: no overflow flag");
        drop(c);
        assert_eq!(msrs.get(0xC001_0200), 0x1_0076);
        assert_eq!(msrs.writes_to(AMD_PERF_CNTR_GLOBAL_CTL).count(), 0);
    }

    /// Legacy layout: four counters at C001_0000h/C001_0004h; no fixed counters at all.
    #[test]
    fn legacy_layout_and_errors() {
        let pool = pool(0, None);
        let ins = Event::Generic(GenericEvent::Instructions);
        let held: [_; 4] =
            core::array::from_fn(|_| pool.counter(ins, PrivilegeFilter::ALL).unwrap());
        assert_eq!(held[3].slot(), Slot::Programmable(3));
        assert_eq!(
            pool.pmu().msrs().get(AmdCounterLayout::Legacy.perf_ctl(3)),
            0x3_00C0
        );
        assert_eq!(
            pool.counter(ins, PrivilegeFilter::ALL).err(),
            Some(Error::NoFreeCounter { available: 4 })
        );
        assert_eq!(
            pool.counter_at(Slot::Fixed(0), ins, PrivilegeFilter::ALL)
                .err(),
            Some(Error::CounterOutOfRange {
                slot: Slot::Fixed(0),
                available: 0
            })
        );
        assert_eq!(
            pool.counter(GenericEvent::RefCycles.into(), PrivilegeFilter::ALL)
                .err(),
            Some(Error::EventNotEncodable {
                event: GenericEvent::RefCycles
            })
        );
        assert_eq!(
            pool.pmu().configure(
                Slot::Fixed(0),
                AmdEvent::RETIRED_INSTRUCTIONS,
                PrivilegeFilter::ALL
            ),
            Err(Error::CounterOutOfRange {
                slot: Slot::Fixed(0),
                available: 0
            })
        );
    }

    /// PerfMonV2: PerfCntrGlobalCtl bit n gates counter n; PerfCntrGlobalStatus bit n is
    /// its overflow flag, cleared through PerfCntrGlobalStatusClr (Linux amd_pmu_v2_*).
    #[test]
    fn perfmon_v2_global_registers() {
        let pool = pool(1 << 23, Some((1, 6)));
        let a = pool
            .counter(GenericEvent::BranchMisses.into(), PrivilegeFilter::ALL)
            .unwrap();
        let b = pool
            .counter(
                GenericEvent::BranchInstructions.into(),
                PrivilegeFilter::ALL,
            )
            .unwrap();
        let msrs = pool.pmu().msrs();
        a.start();
        b.start();
        assert_eq!(msrs.get(AMD_PERF_CNTR_GLOBAL_CTL), 0b11);
        b.stop();
        assert_eq!(msrs.get(AMD_PERF_CNTR_GLOBAL_CTL), 0b01);
        msrs.set(AMD_PERF_CNTR_GLOBAL_STATUS, 0b11);
        assert!(a.overflowed() && b.overflowed());
        msrs.clear_log();
        a.clear_overflow();
        assert!(msrs.writes().eq([(AMD_PERF_CNTR_GLOBAL_STATUS_CLR, 0b01)]));
        assert!(!a.overflowed() && b.overflowed());
    }
}
