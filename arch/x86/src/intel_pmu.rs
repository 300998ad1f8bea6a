//! The ring-0 backend for Intel architectural performance monitoring.
//!
//! Programmable slots are the general-purpose counters IA32_PMCx with their
//! IA32_PERFEVTSELx; fixed slots are IA32_FIXED_CTRx, controlled by their nibble of
//! IA32_FIXED_CTR_CTRL. From version 2 on a counter counts only while its bit in
//! IA32_PERF_GLOBAL_CTRL is set too (SDM Vol. 3B, "Architectural Performance Monitoring
//! Version 2"), so:
//!
//! - `configure` writes the event select with EN = 0 (general-purpose), or the counter's
//!   control nibble with its global enable bit cleared first (fixed): configured, stopped;
//! - `enable` sets EN and then the global bit, `disable` clears both (general-purpose);
//!   for fixed counters the global bit alone starts and stops them;
//! - overflow flags are IA32_PERF_GLOBAL_STATUS bits, cleared by writing 1 to the same bit
//!   of IA32_PERF_GLOBAL_OVF_CTRL / _STATUS_RESET.
//!
//! Version 1 has no global registers: EN alone starts a counter, and there are no overflow
//! flags ([`Pmu::overflowed`] is then always `false`).

use pmu_core::{Capabilities, Error, EventEncoding, GenericEvent, Pmu, PrivilegeFilter, Slot};

use crate::access::{MsrAccess, RDPMC_FIXED};
use crate::cpuid::ArchPerfmon;
use crate::events::{fixed_counter_event, IntelEvent};
use crate::ia32_fixed_ctr_ctrl::{self, Ia32FixedCtrCtrl};
use crate::ia32_perf_global_ctrl::{fixed_bit, gp_bit};
use crate::ia32_perf_global_status::Ia32PerfGlobalStatus;
use crate::ia32_perfevtsel::{self, Ia32PerfEvtSel, IA32_PERFEVTSEL};
use crate::msr::{
    ia32_a_pmc, ia32_fixed_ctr, ia32_perfevtsel, ia32_pmc, IA32_FIXED_CTR_CTRL,
    IA32_PERF_GLOBAL_CTRL, IA32_PERF_GLOBAL_STATUS, IA32_PERF_GLOBAL_STATUS_RESET,
};

/// How the general-purpose counters take a new value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterWrites {
    /// Through IA32_PMCx: bits 31:0 are written and bit 31 is copied into the bits above.
    /// Values from 0 to 2^31 - 1, and the 2^31 values just below the wrap point (every
    /// `preset_before_wrap(d)` with d <= 2^31), are written exactly.
    Legacy32,
    /// Through IA32_A_PMCx (IA32_PERF_CAPABILITIES.FW_WRITE = 1): the full width.
    FullWidth,
}

/// Intel's core PMU driven directly at ring 0, over any [`MsrAccess`].
#[derive(Debug)]
pub struct IntelPmu<M: MsrAccess> {
    msrs: M,
    perfmon: ArchPerfmon,
    writes: CounterWrites,
}

impl<M: MsrAccess> IntelPmu<M> {
    /// The PMU that `perfmon` (CPUID leaf 0AH of the CPU `msrs` reaches) describes.
    ///
    /// `msrs` must belong to that CPU and own its PMU; with [`crate::Ring0Msrs`] that is
    /// the contract of its constructor, and [`IntelPmu::from_ring0`] passes the matching
    /// description.
    pub fn new(msrs: M, perfmon: ArchPerfmon, writes: CounterWrites) -> Self {
        Self {
            msrs,
            perfmon,
            writes,
        }
    }

    /// The register access underneath.
    pub fn msrs(&self) -> &M {
        &self.msrs
    }

    /// CPUID leaf 0AH of the CPU.
    pub fn perfmon(&self) -> &ArchPerfmon {
        &self.perfmon
    }

    /// How general-purpose counters are written.
    pub fn counter_writes(&self) -> CounterWrites {
        self.writes
    }

    /// IA32_PERF_GLOBAL_STATUS (overflow flags, CondChgd, CTR_Frz …), `None` before
    /// version 2.
    pub fn global_status(&self) -> Option<Ia32PerfGlobalStatus> {
        self.perfmon
            .has_global_controls()
            .then(|| Ia32PerfGlobalStatus::new(self.msrs.read(IA32_PERF_GLOBAL_STATUS)))
    }

    fn gp_index(&self, slot: Slot) -> Option<u8> {
        match slot {
            Slot::Programmable(n) if n < self.perfmon.usable_gp_counters() => Some(n),
            _ => None,
        }
    }

    fn fixed_index(&self, slot: Slot) -> Option<u8> {
        match slot {
            Slot::Fixed(n)
                if n < self.perfmon.usable_fixed_counters()
                    && self.perfmon.fixed_counter_supported(n) =>
            {
                Some(n)
            }
            _ => None,
        }
    }

    /// The bit of `slot` in the global control/status/reset registers, 0 if none.
    fn global_bit(&self, slot: Slot) -> u64 {
        if let Some(n) = self.gp_index(slot) {
            gp_bit(n)
        } else if let Some(n) = self.fixed_index(slot) {
            fixed_bit(n)
        } else {
            0
        }
    }

    fn update(&self, msr: u32, f: impl FnOnce(u64) -> u64) {
        let old = self.msrs.read(msr);
        let new = f(old);
        if new != old {
            self.msrs.write(msr, new);
        }
    }

    fn set_global(&self, bit: u64, on: bool) {
        if bit != 0 && self.perfmon.has_global_controls() {
            self.update(
                IA32_PERF_GLOBAL_CTRL,
                |v| if on { v | bit } else { v & !bit },
            );
        }
    }

    fn set_evtsel_enable(&self, n: u8, on: bool) {
        let en = IA32_PERFEVTSEL::EN.mask << IA32_PERFEVTSEL::EN.shift;
        self.update(ia32_perfevtsel(n), |v| if on { v | en } else { v & !en });
    }
}

#[cfg(target_arch = "x86_64")]
impl IntelPmu<crate::Ring0Msrs> {
    /// The PMU of the CPU `msrs` stands for, as CPUID described it when `msrs` was made;
    /// general-purpose counters are written full-width where the CPU allows it.
    ///
    /// # Errors
    /// [`crate::ProbeError::WrongVendor`] on an AMD CPU (use [`crate::AmdPmu`]).
    pub fn from_ring0(msrs: crate::Ring0Msrs) -> Result<Self, crate::ProbeError> {
        let info = msrs.info();
        match info.pmu {
            crate::cpuid::PmuDescription::Architectural { perfmon, .. } => {
                let writes = if msrs.full_width_writes() {
                    CounterWrites::FullWidth
                } else {
                    CounterWrites::Legacy32
                };
                Ok(Self::new(msrs, perfmon, writes))
            }
            crate::cpuid::PmuDescription::Amd(_) => Err(crate::ProbeError::WrongVendor {
                expected: crate::cpuid::Vendor::Intel,
                found: info.vendor,
            }),
        }
    }
}

impl<M: MsrAccess> Pmu for IntelPmu<M> {
    type Event = IntelEvent;

    fn capabilities(&self) -> Capabilities {
        let gp_width = self.perfmon.gp_width();
        Capabilities {
            programmable: u32::from(self.perfmon.usable_gp_counters()),
            programmable_width: gp_width,
            fixed: u32::from(self.perfmon.usable_fixed_counters()),
            fixed_width: self.perfmon.fixed_width().unwrap_or(gp_width),
        }
    }

    /// Architectural events per CPUID.0AH:EBX; any other (model-specific) code is taken on
    /// trust: CPUID does not enumerate those.
    fn is_implemented(&self, event: IntelEvent) -> bool {
        match event.architectural() {
            Some(arch) => self.perfmon.event_available(arch),
            None => true,
        }
    }

    /// Fixed 0 INST_RETIRED.ANY -> instructions, 1 CPU_CLK_UNHALTED.CORE -> cycles,
    /// 2 CPU_CLK_UNHALTED.REF_TSC -> ref-cycles; `None` for fixed 3 (TOPDOWN.SLOTS, no
    /// generic event) and for counters CPUID does not enumerate.
    fn fixed_event(&self, index: u8) -> Option<GenericEvent> {
        self.fixed_index(Slot::Fixed(index))
            .and_then(fixed_counter_event)
            .and_then(|(_, generic)| generic)
    }

    fn configure(
        &self,
        slot: Slot,
        event: IntelEvent,
        filter: PrivilegeFilter,
    ) -> Result<(), Error> {
        if let Some(n) = self.gp_index(slot) {
            let sel = ia32_perfevtsel::counting(event, filter)?;
            self.msrs.write(ia32_perfevtsel(n), sel.get());
            return Ok(());
        }
        let caps = self.capabilities();
        caps.check(slot)?;
        let Slot::Fixed(n) = slot else {
            // Programmable slots inside the capabilities were handled above.
            return Err(Error::CounterOutOfRange {
                slot,
                available: caps.programmable,
            });
        };
        let counts = self
            .fixed_event(n)
            .and_then(IntelEvent::from_generic)
            .is_some_and(|e| e == event);
        if !counts {
            return Err(Error::EventNotCountableOnSlot {
                slot,
                code: event.code(),
            });
        }
        let ctl = ia32_fixed_ctr_ctrl::counting(filter)?;
        // Stop it globally first so the new nibble does not start it.
        self.set_global(fixed_bit(n), false);
        let reg = Ia32FixedCtrCtrl::new(self.msrs.read(IA32_FIXED_CTR_CTRL));
        let new =
            ia32_fixed_ctr_ctrl::with_control(reg, n, ctl).ok_or(Error::CounterOutOfRange {
                slot,
                available: caps.fixed,
            })?;
        self.msrs.write(IA32_FIXED_CTR_CTRL, new.get());
        Ok(())
    }

    fn enable(&self, slot: Slot) {
        if let Some(n) = self.gp_index(slot) {
            self.set_evtsel_enable(n, true);
        }
        // The global bit last: the SDM advises IA32_PERF_GLOBAL_CTRL as the final step.
        self.set_global(self.global_bit(slot), true);
    }

    fn disable(&self, slot: Slot) {
        self.set_global(self.global_bit(slot), false);
        if let Some(n) = self.gp_index(slot) {
            self.set_evtsel_enable(n, false);
        }
    }

    #[inline(always)]
    fn read(&self, slot: Slot) -> u64 {
        match slot {
            Slot::Programmable(n) if n < self.perfmon.usable_gp_counters() => {
                self.msrs.rdpmc(u32::from(n))
            }
            Slot::Fixed(n) if self.fixed_index(slot).is_some() => {
                self.msrs.rdpmc(RDPMC_FIXED | u32::from(n))
            }
            _ => 0,
        }
    }

    /// Sets the counter. A general-purpose counter is stopped (EN = 0) around the write,
    /// as the SDM requires ("The event logic unit for a UMASK must be disabled by setting
    /// IA32_PERFEVTSELx[bit 22] = 0, before writing to IA32_PMCx"), then restarted if it
    /// was running. See [`CounterWrites`] for which values a legacy write keeps.
    fn write(&self, slot: Slot, value: u64) {
        if let Some(n) = self.gp_index(slot) {
            let sel = Ia32PerfEvtSel::new(self.msrs.read(ia32_perfevtsel(n)));
            let running = sel.is_set(IA32_PERFEVTSEL::EN);
            if running {
                self.set_evtsel_enable(n, false);
            }
            let msr = match self.writes {
                CounterWrites::Legacy32 => ia32_pmc(n),
                CounterWrites::FullWidth => ia32_a_pmc(n),
            };
            self.msrs
                .write(msr, self.perfmon.gp_width().truncate(value));
            if running {
                self.msrs.write(ia32_perfevtsel(n), sel.get());
            }
        } else if let Some(n) = self.fixed_index(slot) {
            let width = self.capabilities().fixed_width;
            self.msrs.write(ia32_fixed_ctr(n), width.truncate(value));
        }
    }

    #[inline(always)]
    fn overflowed(&self, slot: Slot) -> bool {
        let bit = self.global_bit(slot);
        bit != 0
            && self.perfmon.has_global_controls()
            && self.msrs.read(IA32_PERF_GLOBAL_STATUS) & bit != 0
    }

    fn clear_overflow(&self, slot: Slot) {
        let bit = self.global_bit(slot);
        if bit != 0 && self.perfmon.has_global_controls() {
            self.msrs.write(IA32_PERF_GLOBAL_STATUS_RESET, bit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeMsrs;
    use crate::ia32_perf_global_status::IA32_PERF_GLOBAL_STATUS as STATUS;
    use pmu_core::{CounterPool, CounterWidth, Event};

    /// Skylake client leaf 0AH (see `cpuid` tests): version 4, 4 GP counters of 48 bits,
    /// 3 fixed counters of 48 bits; `ebx` as given.
    fn skylake(ebx: u32) -> ArchPerfmon {
        ArchPerfmon::decode(0x0730_0404, ebx, 0, 0x603).unwrap()
    }

    fn pool_with(perfmon: ArchPerfmon, writes: CounterWrites) -> CounterPool<IntelPmu<FakeMsrs>> {
        CounterPool::new(IntelPmu::new(FakeMsrs::intel(&perfmon), perfmon, writes))
    }

    fn pool() -> CounterPool<IntelPmu<FakeMsrs>> {
        pool_with(skylake(0), CounterWrites::FullWidth)
    }

    fn msrs(pool: &CounterPool<IntelPmu<FakeMsrs>>) -> &FakeMsrs {
        pool.pmu().msrs()
    }

    /// Skylake's leaf 0AH gives 4 programmable and 3 fixed counters of 48 bits; fixed
    /// 0-2 count what SDM Vol. 3B's fixed-counter table says.
    #[test]
    fn capabilities_from_cpuid() {
        let pool = pool();
        let caps = pool.capabilities();
        assert_eq!((caps.programmable, caps.fixed), (4, 3));
        assert_eq!(
            (caps.programmable_width, caps.fixed_width),
            (CounterWidth::W48, CounterWidth::W48)
        );
        let pmu = pool.pmu();
        assert_eq!(pmu.fixed_event(0), Some(GenericEvent::Instructions));
        assert_eq!(pmu.fixed_event(1), Some(GenericEvent::CpuCycles));
        assert_eq!(pmu.fixed_event(2), Some(GenericEvent::RefCycles));
        assert_eq!(pmu.fixed_event(3), None);
    }

    /// Instructions go to fixed 0 (INST_RETIRED.ANY), cycles to fixed 1
    /// (CPU_CLK_UNHALTED.CORE), ref-cycles to fixed 2; a second instructions counter to a
    /// general-purpose counter with the architectural encoding C0H.
    #[test]
    fn generic_events_take_their_fixed_counters_first() {
        let pool = pool();
        let ins = pool
            .counter(GenericEvent::Instructions.into(), PrivilegeFilter::USER)
            .unwrap();
        let cyc = pool
            .counter(GenericEvent::CpuCycles.into(), PrivilegeFilter::KERNEL)
            .unwrap();
        let refc = pool
            .counter(GenericEvent::RefCycles.into(), PrivilegeFilter::ALL)
            .unwrap();
        assert_eq!(
            (ins.slot(), cyc.slot(), refc.slot()),
            (Slot::Fixed(0), Slot::Fixed(1), Slot::Fixed(2))
        );
        // Nibbles: fixed 0 Usr (2), fixed 1 OS (1), fixed 2 OS|Usr (3); no PMI, no AnyThread.
        assert_eq!(msrs(&pool).get(IA32_FIXED_CTR_CTRL), 0x312);
        let ins2 = pool
            .counter(GenericEvent::Instructions.into(), PrivilegeFilter::USER)
            .unwrap();
        assert_eq!(ins2.slot(), Slot::Programmable(0));
        assert_eq!(msrs(&pool).get(ia32_perfevtsel(0)), 0x1_00C0);
    }

    /// Configure writes the event select with EN clear; start sets EN, then the global bit
    /// (SDM: IA32_PERF_GLOBAL_CTRL last); stop clears both. Branch Misses Retired (C5H)
    /// user+kernel running is 0x4300C5.
    #[test]
    fn gp_counter_register_sequence() {
        let pool = pool();
        let c = pool
            .counter(GenericEvent::BranchMisses.into(), PrivilegeFilter::ALL)
            .unwrap();
        assert_eq!(c.slot(), Slot::Programmable(0));
        assert_eq!(msrs(&pool).get(ia32_perfevtsel(0)), 0x3_00C5);
        msrs(&pool).clear_log();
        c.start();
        assert!(msrs(&pool).writes().eq([
            (ia32_perfevtsel(0), 0x43_00C5),
            (IA32_PERF_GLOBAL_CTRL, gp_bit(0)),
        ]));
        msrs(&pool).clear_log();
        c.stop();
        assert!(msrs(&pool)
            .writes()
            .eq([(IA32_PERF_GLOBAL_CTRL, 0), (ia32_perfevtsel(0), 0x3_00C5),]));
        assert!(!msrs(&pool).capacity_exceeded());
    }

    /// Fixed counters start and stop through IA32_PERF_GLOBAL_CTRL bit 32 + n; their
    /// nibble is written once, the other counters' nibbles are kept.
    #[test]
    fn fixed_counter_nibbles_of_others_are_preserved() {
        let pool = pool();
        // Fixed 2 was configured earlier (by firmware or a previous user): OS|Usr|PMI.
        msrs(&pool).set(IA32_FIXED_CTR_CTRL, 0xB00);
        let cyc = pool
            .counter(GenericEvent::CpuCycles.into(), PrivilegeFilter::USER)
            .unwrap();
        assert_eq!(cyc.slot(), Slot::Fixed(1));
        assert_eq!(msrs(&pool).get(IA32_FIXED_CTR_CTRL), 0xB20);
        let ins = pool
            .counter(GenericEvent::Instructions.into(), PrivilegeFilter::KERNEL)
            .unwrap();
        assert_eq!(msrs(&pool).get(IA32_FIXED_CTR_CTRL), 0xB21);
        ins.start();
        cyc.start();
        assert_eq!(
            msrs(&pool).get(IA32_PERF_GLOBAL_CTRL),
            fixed_bit(0) | fixed_bit(1)
        );
        msrs(&pool).clear_log();
        drop(ins);
        assert_eq!(msrs(&pool).get(IA32_PERF_GLOBAL_CTRL), fixed_bit(1));
        // Dropping stops through the global bit and clears the flag; the nibble stays.
        assert_eq!(msrs(&pool).writes_to(IA32_FIXED_CTR_CTRL).count(), 0);
        assert_eq!(msrs(&pool).get(IA32_FIXED_CTR_CTRL), 0xB21);
    }

    /// CPUID.0AH:EAX\[15:8\] = 4 on Skylake with Hyper-Threading: a fifth general-purpose
    /// counter does not exist.
    #[test]
    fn more_counters_than_exist_is_no_free_counter() {
        let pool = pool();
        let branches = Event::Generic(GenericEvent::BranchInstructions);
        let held: [_; 4] =
            core::array::from_fn(|_| pool.counter(branches, PrivilegeFilter::ALL).unwrap());
        assert_eq!(held[3].slot(), Slot::Programmable(3));
        assert_eq!(
            pool.counter(branches, PrivilegeFilter::ALL).err(),
            Some(Error::NoFreeCounter { available: 4 })
        );
    }

    /// Slots past CPUID.0AH's counts (4 general-purpose, EDX\[4:0\] = 3 fixed) are typed
    /// errors, from the pool and from the Pmu alike.
    #[test]
    fn slots_past_cpuid_are_out_of_range() {
        let pool = pool();
        let ins = Event::Generic(GenericEvent::Instructions);
        assert_eq!(
            pool.counter_at(Slot::Programmable(4), ins, PrivilegeFilter::ALL)
                .err(),
            Some(Error::CounterOutOfRange {
                slot: Slot::Programmable(4),
                available: 4
            })
        );
        assert_eq!(
            pool.counter_at(Slot::Fixed(3), ins, PrivilegeFilter::ALL)
                .err(),
            Some(Error::CounterOutOfRange {
                slot: Slot::Fixed(3),
                available: 3
            })
        );
        // A fixed counter counts only its own event.
        assert_eq!(
            pool.counter_at(Slot::Fixed(1), ins, PrivilegeFilter::ALL)
                .err(),
            Some(Error::EventNotCountableOnSlot {
                slot: Slot::Fixed(1),
                code: 0xC0
            })
        );
        // The Pmu itself refuses too, without touching a register.
        let pmu = pool.pmu();
        let before = pmu.msrs().writes().count();
        assert_eq!(
            pmu.configure(
                Slot::Programmable(9),
                IntelEvent::new(0xC0, 0),
                PrivilegeFilter::ALL
            ),
            Err(Error::CounterOutOfRange {
                slot: Slot::Programmable(9),
                available: 4
            })
        );
        pmu.enable(Slot::Fixed(7));
        pmu.write(Slot::Programmable(8), 1);
        assert_eq!(pmu.read(Slot::Fixed(5)), 0);
        assert_eq!(pmu.msrs().writes().count(), before);
    }

    /// CPUID.0AH:EBX bit 6 set: "Branch mispredict retired event not available" (SDM Vol.
    /// 2A). Generic and raw requests for C5H are refused; model-specific raw codes, which
    /// CPUID does not enumerate, are allowed.
    #[test]
    fn unavailable_architectural_event_is_not_implemented() {
        let pool = pool_with(skylake(1 << 6), CounterWrites::FullWidth);
        assert_eq!(
            pool.counter(GenericEvent::BranchMisses.into(), PrivilegeFilter::ALL)
                .err(),
            Some(Error::EventNotImplemented { code: 0xC5 })
        );
        assert_eq!(
            pool.counter(Event::Raw(0xC5), PrivilegeFilter::ALL).err(),
            Some(Error::EventNotImplemented { code: 0xC5 })
        );
        assert!(pool
            .counter(Event::Raw(0x08D1), PrivilegeFilter::ALL)
            .is_ok());
        assert!(pool
            .counter(
                GenericEvent::BranchInstructions.into(),
                PrivilegeFilter::ALL
            )
            .is_ok());
        // Topdown slots lies past Skylake's vector length 7.
        assert!(!pool.pmu().is_implemented(IntelEvent::new(0xA4, 0x01)));
    }

    /// x86 filters by CPL only (USR/OS bits, SDM Vol. 3B): a filter with neither user nor
    /// kernel cannot count anything.
    #[test]
    fn hypervisor_only_filter_is_unsupported_and_frees_nothing() {
        let pool = pool();
        let hv = PrivilegeFilter {
            user: false,
            kernel: false,
            hypervisor: true,
        };
        for event in [GenericEvent::Instructions, GenericEvent::BranchMisses] {
            assert_eq!(
                pool.counter(event.into(), hv).err(),
                Some(Error::FilterUnsupported { filter: hv })
            );
        }
        // Both slots are still free.
        let c = pool
            .counter(GenericEvent::Instructions.into(), PrivilegeFilter::ALL)
            .unwrap();
        assert_eq!(c.slot(), Slot::Fixed(0));
    }

    /// Overflow flags are IA32_PERF_GLOBAL_STATUS bits n / 32 + n; clearing writes exactly
    /// that bit to IA32_PERF_GLOBAL_STATUS_RESET (390H) and leaves CondChgd alone.
    #[test]
    fn overflow_status_and_clear() {
        let pool = pool();
        let gp = pool
            .counter(GenericEvent::BranchMisses.into(), PrivilegeFilter::ALL)
            .unwrap();
        let cyc = pool
            .counter(GenericEvent::CpuCycles.into(), PrivilegeFilter::ALL)
            .unwrap();
        let status = gp_bit(0) | fixed_bit(1) | 1 << 63;
        msrs(&pool).set(IA32_PERF_GLOBAL_STATUS, status);
        assert!(gp.overflowed() && cyc.overflowed());
        let seen = pool.pmu().global_status().unwrap();
        assert!(seen.is_set(STATUS::Ovf_PMC0) && seen.is_set(STATUS::Ovf_FIXED_CTR1));
        assert!(seen.is_set(STATUS::CondChgd));
        msrs(&pool).clear_log();
        cyc.clear_overflow();
        assert!(msrs(&pool)
            .writes()
            .eq([(IA32_PERF_GLOBAL_STATUS_RESET, fixed_bit(1))]));
        assert!(gp.overflowed() && !cyc.overflowed());
        gp.clear_overflow();
        assert_eq!(msrs(&pool).get(IA32_PERF_GLOBAL_STATUS), 1 << 63);
    }

    /// SDM Vol. 3B: EN must be 0 while IA32_PMCx is written. A running counter is stopped,
    /// written through IA32_A_PMCx (full width) and restarted.
    #[test]
    fn writing_a_running_counter_stops_it_around_the_write() {
        let pool = pool();
        let c = pool
            .counter(Event::Raw(0x08D1), PrivilegeFilter::USER)
            .unwrap();
        c.start();
        msrs(&pool).clear_log();
        c.set(0x1234_5678_9ABC);
        assert!(msrs(&pool).writes().eq([
            (ia32_perfevtsel(0), 0x1_08D1),
            (ia32_a_pmc(0), 0x1234_5678_9ABC),
            (ia32_perfevtsel(0), 0x41_08D1),
        ]));
        assert_eq!(c.read(), 0x1234_5678_9ABC);
        // Stopped counters are written without touching the event select.
        c.stop();
        msrs(&pool).clear_log();
        c.reset();
        assert!(msrs(&pool).writes().eq([(ia32_a_pmc(0), 0)]));
    }

    /// Without FW_WRITE the legacy MSR is used; presets close to the wrap point survive its
    /// 32-bit sign extension (SDM Vol. 3B, "Full-Width Writes…").
    #[test]
    fn legacy_writes_keep_presets_before_the_wrap() {
        let pool = pool_with(skylake(0), CounterWrites::Legacy32);
        let c = pool
            .counter(GenericEvent::BranchMisses.into(), PrivilegeFilter::ALL)
            .unwrap();
        c.preset_before_wrap(16);
        assert_eq!(
            msrs(&pool).writes_to(ia32_pmc(0)).last(),
            Some(0xFFFF_FFFF_FFF0)
        );
        assert_eq!(c.read(), 0xFFFF_FFFF_FFF0);
        assert_eq!(msrs(&pool).writes_to(ia32_a_pmc(0)).count(), 0);
    }

    /// Reads go through RDPMC: general-purpose n is ECX = n, fixed n is ECX = 1 << 30 | n.
    #[test]
    fn reads_use_rdpmc_numbering() {
        let pool = pool();
        let cyc = pool
            .counter(GenericEvent::CpuCycles.into(), PrivilegeFilter::ALL)
            .unwrap();
        let br = pool
            .counter(
                GenericEvent::BranchInstructions.into(),
                PrivilegeFilter::ALL,
            )
            .unwrap();
        msrs(&pool).set(ia32_fixed_ctr(1), 1_000_000);
        msrs(&pool).set(ia32_pmc(0), 4242);
        assert_eq!((cyc.read(), br.read()), (1_000_000, 4242));
        assert_eq!(msrs(&pool).rdpmc(RDPMC_FIXED | 1), 1_000_000);
        // Fixed counters are written through IA32_FIXED_CTRn, truncated to their width.
        cyc.set(u64::MAX);
        assert_eq!(
            msrs(&pool).writes_to(ia32_fixed_ctr(1)).last(),
            Some(0xFFFF_FFFF_FFFF)
        );
    }

    /// Version 1 (no global registers, no fixed counters): EN alone starts a counter and
    /// there is no overflow flag to read or clear.
    #[test]
    fn version_1_uses_en_only() {
        let v1 = ArchPerfmon::decode(0x0728_0201, 0, 0, 0).unwrap();
        let pool = pool_with(v1, CounterWrites::Legacy32);
        assert_eq!(pool.capabilities().fixed, 0);
        let c = pool
            .counter(GenericEvent::CpuCycles.into(), PrivilegeFilter::ALL)
            .unwrap();
        assert_eq!(c.slot(), Slot::Programmable(0));
        c.start();
        assert_eq!(msrs(&pool).get(ia32_perfevtsel(0)), 0x43_003C);
        assert!(!c.overflowed());
        c.clear_overflow();
        for msr in [
            IA32_PERF_GLOBAL_CTRL,
            IA32_PERF_GLOBAL_STATUS_RESET,
            IA32_FIXED_CTR_CTRL,
        ] {
            assert_eq!(msrs(&pool).writes_to(msr).count(), 0, "{msr:#x}");
        }
    }

    /// A version-5 bit mask with a hole (ECX = 0b101: fixed 0 and 2, not 1): cycles fall
    /// back to a general-purpose counter.
    #[test]
    fn fixed_counter_holes_count_nothing() {
        let perfmon = ArchPerfmon::decode(0x0830_0805, 0, 0b101, 48 << 5).unwrap();
        let pool = pool_with(perfmon, CounterWrites::FullWidth);
        assert_eq!(pool.capabilities().fixed, 3);
        assert_eq!(pool.pmu().fixed_event(1), None);
        let cyc = pool
            .counter(GenericEvent::CpuCycles.into(), PrivilegeFilter::ALL)
            .unwrap();
        assert_eq!(cyc.slot(), Slot::Programmable(0));
        let ins = pool
            .counter(GenericEvent::Instructions.into(), PrivilegeFilter::ALL)
            .unwrap();
        assert_eq!(ins.slot(), Slot::Fixed(0));
    }
}
