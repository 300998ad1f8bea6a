//! The PMU from EL1 (or higher): bare metal, a kernel, a hypervisor.
//!
//! [`El1Registers`] reaches every PMUv3 register through [`crate::asm`];
//! [`El1Pmu::take`] probes ID_AA64DFR0_EL1 and takes the PMU over. The kernel-module
//! helpers [`set_user_access`] / [`user_access`] set and read PMUSERENR_EL0 as a typed
//! value without owning the PMU. Only built for `target_arch = "aarch64"`.

use core::marker::PhantomData;

use aarch64_cpu::registers::ID_AA64DFR0_EL1;
use tock_registers::interfaces::Readable;

use crate::asm;
use crate::counter::EventCounter;
use crate::pmu::{Armv8Pmu, InterruptRegisters, PmuOptions, PmuRegisters, ProbeError};
use crate::registers::{
    PmccfiltrEl0, Pmceid0El0, Pmceid1El0, PmcntenclrEl0, PmcntensetEl0, PmcrEl0, PmevtypernEl0,
    PmintenclrEl1, PmintensetEl1, PmovsclrEl0, PmovssetEl0, PmswincEl0, PmuserenrEl0, PMCR_EL0,
};
use crate::version::PmuVersion;

/// The PMU version of this PE, from ID_AA64DFR0_EL1.PMUVer.
///
/// Needs EL1 or higher for the real value: at EL0 Linux emulates the read but hides
/// PMUVer (reads 0).
pub fn pmu_version() -> PmuVersion {
    PmuVersion::from_id_aa64dfr0(ID_AA64DFR0_EL1.get())
}

/// The PMUv3 registers accessed from EL1 (or higher).
///
/// `!Send` and `!Sync`: the registers belong to the PE the value was created on.
#[derive(Debug)]
pub struct El1Registers {
    event_counters: u8,
    _this_cpu: PhantomData<*const ()>,
}

impl El1Registers {
    /// Access to this PE's PMU registers.
    ///
    /// # Safety
    ///
    /// - The PE implements PMUv3 ([`pmu_version`]`().is_pmuv3()`).
    /// - The code runs at EL1 or higher, and no higher Exception level traps PMU
    ///   accesses (MDCR_EL2.TPM/TPMCR, MDCR_EL3.TPM clear, as after reset on QEMU).
    /// - The caller owns the PMU while the value lives: nothing else (Linux perf,
    ///   another driver, a hypervisor) programs it.
    /// - The thread stays on this PE while the value lives (pinned, or interrupts
    ///   off / no scheduler).
    pub unsafe fn new() -> Self {
        // SAFETY: the caller guarantees PMUv3 at EL1 without traps.
        let pmcr = PmcrEl0::new(unsafe { asm::read_pmcr_el0() });
        Self {
            event_counters: pmcr.read(PMCR_EL0::N).min(31) as u8,
            _this_cpu: PhantomData,
        }
    }
}

sysreg_pmu_registers!(El1Registers);

impl InterruptRegisters for El1Registers {
    fn pmintenset(&self) -> PmintensetEl1 {
        // SAFETY: as for `PmuRegisters`: EL1, owned PMU.
        PmintensetEl1::new(unsafe { asm::read_pmintenset_el1() })
    }

    fn set_pmintenset(&self, value: PmintensetEl1) {
        // SAFETY: as for `PmuRegisters`: EL1, owned PMU.
        unsafe { asm::write_pmintenset_el1(value.get()) }
    }

    fn set_pmintenclr(&self, value: PmintenclrEl1) {
        // SAFETY: as for `PmuRegisters`: EL1, owned PMU.
        unsafe { asm::write_pmintenclr_el1(value.get()) }
    }
}

/// The PMU driven from EL1.
pub type El1Pmu = Armv8Pmu<El1Registers>;

impl Armv8Pmu<El1Registers> {
    /// Probes ID_AA64DFR0_EL1 and takes the PMU over: every counter and overflow
    /// interrupt disabled, flags cleared, counters zeroed, PMCR_EL0 = E | LC (| LP).
    ///
    /// # Errors
    /// [`ProbeError::NoPmuV3`] before any PMU register is touched;
    /// [`ProbeError::LongCountersUnsupported`].
    ///
    /// # Safety
    ///
    /// Runs at EL1 or higher without PMU traps from EL2/EL3, owns the PMU while the
    /// value lives, and stays on this PE (the conditions of [`El1Registers::new`],
    /// except that PMUv3 is checked here).
    pub unsafe fn take(options: PmuOptions) -> Result<Self, ProbeError> {
        let version = pmu_version();
        if !version.is_pmuv3() {
            return Err(ProbeError::NoPmuV3 { version });
        }
        // SAFETY: PMUv3 was just checked; the rest is the caller's contract.
        let regs = unsafe { El1Registers::new() };
        let pmu = Self::new(regs, version, options)?;
        pmu.disable_all_overflow_interrupts();
        Ok(pmu)
    }
}

/// Sets PMUSERENR_EL0: what EL0 may access on this PE from now on.
///
/// For a kernel module that grants (or revokes) user-space counter access; see
/// [`crate::registers::pmuserenr_el0`]. Linux rewrites this register in
/// `armv8pmu_start()` whenever perf uses the PMU, and CPU hotplug resets it.
///
/// # Safety
///
/// PMUv3 implemented; runs at EL1 or higher. The caller decides for the whole system
/// that EL0 may see (ER, CR), increment (SW) or reprogram (EN) the counters; zero the
/// counters that hold other contexts' counts first.
pub unsafe fn set_user_access(value: PmuserenrEl0) {
    // SAFETY: the caller's contract is exactly that of `write_pmuserenr_el0`.
    unsafe { asm::write_pmuserenr_el0(value.get()) }
}

/// PMUSERENR_EL0 of this PE.
///
/// # Safety
///
/// PMUv3 implemented (readable from EL0 and EL1 then).
pub unsafe fn user_access() -> PmuserenrEl0 {
    // SAFETY: PMUv3 implemented is the caller's contract; the read is allowed at EL0
    // and EL1.
    PmuserenrEl0::new(unsafe { asm::read_pmuserenr_el0() })
}

/// The registers of [`crate::user_enable`] on this PE, from EL1: what a kernel module
/// needs to grant EL0 access to the PMU.
///
/// Every PMU register access is guarded by the PMUVer read at construction: on a PE
/// without PMUv3 the reads return 0 and the writes do nothing (the instructions would be
/// UNDEFINED there), so the type is safe to use once made. `!Send` and `!Sync`: the
/// registers belong to the PE the value was made on.
#[derive(Debug)]
pub struct El1UserAccess {
    id_aa64dfr0: u64,
    pmuv3: bool,
    /// FEAT_PMUv3p9: PMUACR_EL1 exists (UNDEFINED before).
    pmuv3p9: bool,
    _this_cpu: PhantomData<*const ()>,
}

impl El1UserAccess {
    /// This PE's registers.
    ///
    /// # Safety
    ///
    /// - Runs at EL1 or higher, and no higher Exception level traps PMU accesses
    ///   (MDCR_EL2.TPM/TPMCR, MDCR_EL3.TPM clear).
    /// - Stays on this PE while the value lives, with nothing else on this PE changing
    ///   PMUSERENR_EL0, PMCR_EL0, PMCNTEN*_EL0 or PMCCFILTR_EL0 meanwhile (interrupts
    ///   off: a CPU-hotplug callback through `smp_call_function_single()`).
    /// - The caller decides for the whole system that EL0 may use the PMU (the
    ///   contract of [`set_user_access`]).
    pub unsafe fn new() -> Self {
        let id_aa64dfr0 = ID_AA64DFR0_EL1.get();
        let version = PmuVersion::from_id_aa64dfr0(id_aa64dfr0);
        Self {
            id_aa64dfr0,
            pmuv3: version.is_pmuv3(),
            pmuv3p9: version.is_at_least(PmuVersion::PmuV3p9),
            _this_cpu: PhantomData,
        }
    }
}

// SAFETY (for every `unsafe` block below): `El1UserAccess::new`'s contract gives EL1
// without traps on a pinned PE whose PMU user-access state the caller owns, and each
// access happens only when PMUv3 was found (`self.pmuv3`), so every instruction is
// defined.
impl crate::user_enable::UserAccessRegisters for El1UserAccess {
    fn id_aa64dfr0(&self) -> u64 {
        self.id_aa64dfr0
    }

    fn pmuserenr(&self) -> PmuserenrEl0 {
        if !self.pmuv3 {
            return PmuserenrEl0::new(0);
        }
        // SAFETY: see above.
        PmuserenrEl0::new(unsafe { asm::read_pmuserenr_el0() })
    }

    fn set_pmuserenr(&self, value: PmuserenrEl0) {
        if self.pmuv3 {
            // SAFETY: see above.
            unsafe { asm::write_pmuserenr_el0(value.get()) }
        }
    }

    fn pmcr(&self) -> PmcrEl0 {
        if !self.pmuv3 {
            return PmcrEl0::new(0);
        }
        // SAFETY: see above.
        PmcrEl0::new(unsafe { asm::read_pmcr_el0() })
    }

    fn pmuacr(&self) -> u64 {
        if !self.pmuv3p9 {
            return 0;
        }
        // SAFETY: see above; PMUACR_EL1 exists with FEAT_PMUv3p9 (`self.pmuv3p9`).
        unsafe { asm::read_pmuacr_el1() }
    }

    fn set_pmuacr(&self, value: u64) {
        if self.pmuv3p9 {
            // SAFETY: see above; PMUACR_EL1 exists with FEAT_PMUv3p9, and it changes
            // only what EL0 may read while the caller's UEN grant stands.
            unsafe { asm::write_pmuacr_el1(value) }
        }
    }

    fn set_pmcr(&self, value: PmcrEl0) {
        if self.pmuv3 {
            // SAFETY: see above. `write_pmcr_el0` synchronizes, as the trait requires.
            unsafe { asm::write_pmcr_el0(value.get()) }
        }
    }

    fn pmcntenset(&self) -> PmcntensetEl0 {
        if !self.pmuv3 {
            return PmcntensetEl0::new(0);
        }
        // SAFETY: see above.
        PmcntensetEl0::new(unsafe { asm::read_pmcntenset_el0() })
    }

    fn set_pmcntenset(&self, value: PmcntensetEl0) {
        if self.pmuv3 {
            // SAFETY: see above. `write_pmcntenset_el0` synchronizes.
            unsafe { asm::write_pmcntenset_el0(value.get()) }
        }
    }

    fn set_pmcntenclr(&self, value: PmcntenclrEl0) {
        if self.pmuv3 {
            // SAFETY: see above. `write_pmcntenclr_el0` synchronizes.
            unsafe { asm::write_pmcntenclr_el0(value.get()) }
        }
    }

    fn pmccfiltr(&self) -> PmccfiltrEl0 {
        if !self.pmuv3 {
            return PmccfiltrEl0::new(0);
        }
        // SAFETY: see above.
        PmccfiltrEl0::new(unsafe { asm::read_pmccfiltr_el0() })
    }

    fn set_pmccfiltr(&self, value: PmccfiltrEl0) {
        if self.pmuv3 {
            // SAFETY: see above.
            unsafe { asm::write_pmccfiltr_el0(value.get()) }
        }
    }

    fn implemented_events(&self) -> crate::events::ImplementedEvents {
        if !self.pmuv3 {
            return crate::events::ImplementedEvents::new(0, 0);
        }
        // SAFETY: see above.
        let (pmceid0, pmceid1) = unsafe { (asm::read_pmceid0_el0(), asm::read_pmceid1_el0()) };
        crate::events::ImplementedEvents::new(pmceid0, pmceid1)
    }

    fn pmevtyper(&self, n: u8) -> u64 {
        match (self.pmuv3, EventCounter::new(n)) {
            // SAFETY: see above; `n` below PMCR_EL0.N is the trait's contract.
            (true, Some(counter)) => unsafe { asm::read_pmevtyper_el0(counter) },
            _ => 0,
        }
    }

    fn set_pmevtyper(&self, n: u8, value: u64) {
        if let (true, Some(counter)) = (self.pmuv3, EventCounter::new(n)) {
            // SAFETY: see above; `n` below PMCR_EL0.N is the trait's contract.
            unsafe { asm::write_pmevtyper_el0(counter, value) }
        }
    }

    fn pmevcntr(&self, n: u8) -> u64 {
        match (self.pmuv3, EventCounter::new(n)) {
            // SAFETY: see above; `n` below PMCR_EL0.N is the trait's contract.
            (true, Some(counter)) => unsafe { asm::read_pmevcntr_el0_direct(counter) },
            _ => 0,
        }
    }

    fn set_pmevcntr(&self, n: u8, value: u64) {
        if let (true, Some(counter)) = (self.pmuv3, EventCounter::new(n)) {
            // SAFETY: see above; `n` below PMCR_EL0.N is the trait's contract.
            unsafe { asm::write_pmevcntr_el0(counter, value) }
        }
    }

    fn set_pmccntr(&self, value: u64) {
        if self.pmuv3 {
            // SAFETY: see above.
            unsafe { asm::write_pmccntr_el0(value) }
        }
    }

    fn clear_overflow_and_interrupt(&self, mask: u64) {
        if self.pmuv3 {
            // SAFETY: see above; PMINTENCLR_EL1 and PMOVSCLR_EL0 only clear the bits of
            // `mask`, the module's own counters.
            unsafe {
                asm::write_pmintenclr_el1(mask);
                asm::write_pmovsclr_el0(mask);
            }
        }
    }

    fn isb(&self) {
        asm::isb();
    }
}
