//! Applying a configuration to a register interface in the architecturally safe order, and the
//! profiling buffer around it.
//!
//! The sequences, with the rule behind each step:
//!
//! - **Filters** ([`program_filters`]): PMSCR_EL1 = 0 and `isb` first, because the filter
//!   registers may be changed only while sampling is disabled (Arm ARM D24.7.11/12/16: "the
//!   PE might ... if this register is written while profiling is enabled"). "Disabled" means
//!   PMSCR_EL1.E0SPE = E1SPE = 0 (E2SPE in PMSCR_EL2): PMSCR_EL1 has no `EN` bit, and
//!   writing 0 clears both. The buffer has its own enable, PMBLIMITR_EL1.E. Then
//!   PMSLATFR_EL1, PMSEVFR_EL1, PMSNEVFR_EL1 (only
//!   when it exists: otherwise it is UNDEFINED), PMSFCR_EL1, PMSIRR_EL1, `isb`, PMSICR_EL1 = 0.
//!   This is the order of Linux `arm_spe_pmu_start()` (drivers/perf/arm_spe_pmu.c).
//! - **Buffer** ([`setup_buffer`]): with sampling disabled, `psb csync` + `dsb nsh` drain what a
//!   previous session still had in flight, PMBLIMITR_EL1 = 0 and `isb` stop the buffer, PMBSR_EL1
//!   is read (a pending management event is returned to the caller) and cleared, then PMBPTR_EL1
//!   and PMBLIMITR_EL1 (with E = 1) are written and synchronized with `isb` (Linux
//!   `arm_spe_perf_aux_output_begin()` writes the pointer before the limit for the same reason:
//!   the buffer must never be enabled with a stale pointer).
//! - **Enable** ([`enable`]): `isb` so the profiling unit sees every filter and buffer write,
//!   PMSCR_EL1, `isb` so sampling is on for the code that follows.
//! - **Stop** ([`stop`]): PMSCR_EL1 = 0, `isb`, `psb csync`, `dsb nsh`, read PMBPTR_EL1 and
//!   PMBSR_EL1, PMBLIMITR_EL1 = 0, `isb` (Linux `arm_spe_pmu_disable_and_drain_local()`, Arm ARM
//!   D17.9).
//!
//! Everything goes through [`SpeRegisterFile`], so the host tests run the sequences against
//! [`super::fake::RecordingSpe`], which records each access and barrier; on aarch64,
//! `El1Spe` is the real register file. [`apply_if_present_with`] probes first and touches no
//! SPE register on a PE without SPE.

use super::capabilities::{probe_with, SpeCapabilities, SpeIdRegisters};
use super::config::{SpeConfig, SpeConfigBuilder};
use super::error::SpeError;
use super::pmblimitr_el1::encode_fill_mode_limit;
use super::pmbptr_el1::encode_pointer;
use super::pmbsr_el1::{decode, BufferStatus, BufferSyndrome, ManagementEvent, PmbsrEl1};
use super::register_set::SpeRegister;

/// A barrier the sequences need, as its own operation so a fake can record it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Barrier {
    /// `isb`: a context synchronization event; system register writes take effect for the
    /// profiling unit's indirect reads only after one (Arm ARM D17.9).
    Isb,
    /// `psb csync`: profiling data of this PE formatted and its buffer writes initiated.
    PsbCsync,
    /// `dsb nsh`: wait until those buffer writes complete.
    DsbNsh,
}

/// The SPE registers of one PE, and its barriers.
pub trait SpeRegisterFile {
    /// Writes `value` to `register`.
    ///
    /// # Safety
    ///
    /// The contract of the matching `asm::spe::write_*`: SPE implemented, EL1 owns the
    /// profiling buffer, PMSNEVFR_EL1 only with FEAT_SPE_FnE, and a buffer that is enabled
    /// points into memory reserved for the profiling unit.
    unsafe fn write(&mut self, register: SpeRegister, value: u64);

    /// Reads `register`.
    ///
    /// # Safety
    ///
    /// The contract of the matching `asm::spe::read_*`: SPE implemented and EL1 owns the
    /// profiling buffer.
    unsafe fn read(&mut self, register: SpeRegister) -> u64;

    /// Executes `barrier`.
    fn barrier(&mut self, barrier: Barrier);
}

/// Where the profiling unit writes records: `base` up to (not including) `limit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProfilingBuffer {
    base: u64,
    limit: u64,
}

impl ProfilingBuffer {
    /// A buffer of `size` bytes at virtual address `base`, checked against `caps`: `base`
    /// aligned to PMBIDR_EL1.Align, the end 4 KiB aligned (PMBLIMITR_EL1 has no bits \[11:0\]),
    /// room for at least one record of PMSIDR_EL1.MaxSize bytes, no wrap past the top.
    pub fn new(base: u64, size: u64, caps: &SpeCapabilities) -> Result<Self, SpeError> {
        let align = caps.buffer_align?;
        let max_record = u64::from(caps.max_record_size?);
        encode_pointer(base, align)?;
        let limit = base
            .checked_add(size)
            .ok_or(SpeError::BufferWrapsAround { base, size })?;
        encode_fill_mode_limit(limit)?;
        if size < max_record {
            return Err(SpeError::BufferTooSmall {
                size,
                min: max_record,
            });
        }
        Ok(Self { base, limit })
    }

    /// The first byte.
    pub const fn base(&self) -> u64 {
        self.base
    }

    /// The first byte after the buffer.
    pub const fn limit(&self) -> u64 {
        self.limit
    }
}

/// Disables sampling and synchronizes, so filter and buffer registers may change.
///
/// # Safety
///
/// [`SpeRegisterFile::write`]'s contract.
pub unsafe fn disable_sampling<R: SpeRegisterFile + ?Sized>(regs: &mut R) {
    // SAFETY: the caller upholds the register file's contract; 0 only disables sampling.
    unsafe { regs.write(SpeRegister::Pmscr, 0) };
    // isb: the sampler reads PMSCR_EL1 indirectly; until a context synchronization event it may
    // still sample with the old enables while the filters below change (Arm ARM D17.9).
    regs.barrier(Barrier::Isb);
}

/// Disables sampling, then writes the filters, the interval and a zero interval counter of
/// `config`. Sampling stays disabled: [`enable`] switches it on.
///
/// # Safety
///
/// [`SpeRegisterFile::write`]'s contract, and `config` was built for this PE's capabilities
/// (so PMSNEVFR_EL1 is written only where it exists).
pub unsafe fn program_filters<R: SpeRegisterFile + ?Sized>(regs: &mut R, config: &SpeConfig) {
    // SAFETY: forwarded caller contract.
    unsafe {
        disable_sampling(regs);
        write_filters(regs, config);
    }
}

/// The filter part of [`program_filters`], for callers that disabled sampling already.
///
/// # Safety
///
/// As [`program_filters`], and sampling is disabled and synchronized.
unsafe fn write_filters<R: SpeRegisterFile + ?Sized>(regs: &mut R, config: &SpeConfig) {
    let values = config.registers();
    // SAFETY: the caller upholds the register file's contract and disabled sampling; `config`
    // was validated for this PE, PMSNEVFR_EL1 is `Some` only when the PE has FEAT_SPE_FnE and
    // PMSDSFR_EL1 only when it has FEAT_SPE_FDS.
    unsafe {
        regs.write(SpeRegister::Pmslatfr, values.pmslatfr);
        regs.write(SpeRegister::Pmsevfr, values.pmsevfr);
        if let Some(pmsnevfr) = values.pmsnevfr {
            regs.write(SpeRegister::Pmsnevfr, pmsnevfr);
        }
        if let Some(pmsdsfr) = values.pmsdsfr {
            regs.write(SpeRegister::Pmsdsfr, pmsdsfr);
        }
        regs.write(SpeRegister::Pmsfcr, values.pmsfcr);
        regs.write(SpeRegister::Pmsirr, values.pmsirr);
    }
    // isb: PMSICR_EL1.COUNT reloads from PMSIRR_EL1 by an indirect read; make the new interval
    // visible before resetting the counter, as Linux arm_spe_pmu_start() does.
    regs.barrier(Barrier::Isb);
    // SAFETY: as above; Arm ARM D24.7.13: write 0 at the start of a sampling session.
    unsafe { regs.write(SpeRegister::Pmsicr, values.pmsicr) };
}

/// Points the profiling buffer at `buffer` (fill mode, enabled), after draining and stopping
/// the previous one. Returns the syndrome PMBSR_EL1 held before it was cleared, if it reported
/// a management event (S = 1), so a caller can tell the user what stopped the last session.
///
/// # Safety
///
/// [`SpeRegisterFile::write`]'s contract, sampling disabled ([`disable_sampling`]), and the
/// memory from `buffer.base()` to `buffer.limit()` is mapped writable at EL1 and reserved for
/// the profiling unit (no Rust object lives there) until [`stop`] returns.
pub unsafe fn setup_buffer<R: SpeRegisterFile + ?Sized>(
    regs: &mut R,
    buffer: &ProfilingBuffer,
) -> Option<BufferSyndrome> {
    // psb csync: format and initiate whatever a previous session still holds, so it lands in
    // the old buffer and not in the new one.
    regs.barrier(Barrier::PsbCsync);
    // dsb nsh: wait for those writes (this PE's own, so non-shareable suffices; Arm ARM
    // C6.2.318).
    regs.barrier(Barrier::DsbNsh);
    // SAFETY: the caller upholds the contract; E = 0 stops buffer writes.
    unsafe { regs.write(SpeRegister::Pmblimitr, 0) };
    // isb: the buffer disable must be in effect before the status is read and the pointer
    // moves (the profiling unit reads PMBLIMITR_EL1 indirectly).
    regs.barrier(Barrier::Isb);
    // SAFETY: as above; reading PMBSR_EL1 has no side effect.
    let status = PmbsrEl1::new(unsafe { regs.read(SpeRegister::Pmbsr) });
    let previous = decode(status);
    // SAFETY: as above; clearing S (and the syndrome) lets collection run in the new buffer.
    // Linux's PMBIRQ handler writes 0 the same way.
    unsafe { regs.write(SpeRegister::Pmbsr, 0) };
    // SAFETY: the caller reserved [base, limit) for the profiling unit; the pointer is written
    // before the limit enables the buffer, so the unit never sees E = 1 with a stale pointer.
    // `ProfilingBuffer::new` checked both encodings.
    unsafe {
        regs.write(SpeRegister::Pmbptr, buffer.base);
        regs.write(SpeRegister::Pmblimitr, buffer.limit | 1);
    }
    // isb: the profiling unit reads PMBPTR_EL1/PMBLIMITR_EL1 indirectly; synchronize before
    // sampling may be enabled.
    regs.barrier(Barrier::Isb);
    previous.service.then_some(previous)
}

/// Switches sampling on with `config`'s PMSCR_EL1.
///
/// # Safety
///
/// [`SpeRegisterFile::write`]'s contract; filters programmed and a buffer set up for this
/// session.
pub unsafe fn enable<R: SpeRegisterFile + ?Sized>(regs: &mut R, config: &SpeConfig) {
    // isb: every filter write must be in effect before sampling starts (Linux
    // arm_spe_pmu_start(): "isb(); write_sysreg_s(reg, SYS_PMSCR_EL1)").
    regs.barrier(Barrier::Isb);
    // SAFETY: the caller set up filters and buffer; this enables sampling into that buffer.
    unsafe { regs.write(SpeRegister::Pmscr, config.registers().pmscr) };
    // isb: make the enable take effect here, so the code after `enable` is sampled (on Linux
    // the exception return to the task plays this role).
    regs.barrier(Barrier::Isb);
}

/// Programs a whole session: disable sampling, set up the buffer, write the filters, enable.
/// Returns the stale syndrome [`setup_buffer`] found, if any.
///
/// # Safety
///
/// The contracts of [`setup_buffer`] and [`program_filters`].
pub unsafe fn start<R: SpeRegisterFile + ?Sized>(
    regs: &mut R,
    config: &SpeConfig,
    buffer: &ProfilingBuffer,
) -> Option<BufferSyndrome> {
    // SAFETY: forwarded caller contract; sampling is disabled before the buffer and the
    // filters change, and enabled only after both.
    unsafe {
        disable_sampling(regs);
        let previous = setup_buffer(regs, buffer);
        write_filters(regs, config);
        enable(regs, config);
        previous
    }
}

/// What a session left behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SessionEnd {
    /// PMBPTR_EL1 after draining: records lie between the buffer base and this address.
    pub write_pointer: u64,
    /// PMBSR_EL1 after draining.
    pub syndrome: BufferSyndrome,
}

impl SessionEnd {
    /// Bytes of records written into `buffer`.
    pub fn bytes_written(&self, buffer: &ProfilingBuffer) -> u64 {
        self.write_pointer
            .clamp(buffer.base, buffer.limit)
            .saturating_sub(buffer.base)
    }

    /// `Ok` when the session ended normally or with a full buffer; a fault, an external abort
    /// or an IMPLEMENTATION DEFINED event is [`SpeError::BufferManagementEvent`].
    pub fn check(&self) -> Result<(), SpeError> {
        check_syndrome(self.syndrome)
    }
}

/// Whether a PMBSR_EL1 syndrome is harmless (no event, or the buffer filled).
pub fn check_syndrome(syndrome: BufferSyndrome) -> Result<(), SpeError> {
    let benign = matches!(
        syndrome.event,
        ManagementEvent::Buffer(BufferStatus::NotStopped | BufferStatus::Filled)
    ) && !syndrome.external_abort;
    if !syndrome.service || benign {
        Ok(())
    } else {
        Err(SpeError::BufferManagementEvent { syndrome })
    }
}

/// Stops sampling and the buffer after draining every record to memory, and reports where the
/// records end. After it returns the buffer memory may be read.
///
/// # Safety
///
/// [`SpeRegisterFile::write`]'s contract.
pub unsafe fn stop<R: SpeRegisterFile + ?Sized>(regs: &mut R) -> SessionEnd {
    // SAFETY: the caller upholds the contract; 0 disables sampling.
    unsafe { regs.write(SpeRegister::Pmscr, 0) };
    // isb: sampling must be off before the drain, or a new sample could follow it (Arm ARM
    // D17.9; Linux arm_spe_pmu_disable_and_drain_local()).
    regs.barrier(Barrier::Isb);
    // psb csync: format every sample already taken and initiate its buffer writes.
    regs.barrier(Barrier::PsbCsync);
    // dsb nsh: wait for those writes; only then do PMBPTR_EL1 and the memory agree.
    regs.barrier(Barrier::DsbNsh);
    // SAFETY: as above; these reads have no side effects.
    let (write_pointer, status) = unsafe {
        (
            regs.read(SpeRegister::Pmbptr),
            regs.read(SpeRegister::Pmbsr),
        )
    };
    // SAFETY: as above; E = 0 stops the buffer.
    unsafe { regs.write(SpeRegister::Pmblimitr, 0) };
    // isb: the buffer disable takes effect before the caller reads or reuses the memory.
    regs.barrier(Barrier::Isb);
    SessionEnd {
        write_pointer,
        syndrome: decode(PmbsrEl1::new(status)),
    }
}

/// What [`apply_if_present_with`] set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AppliedSession {
    /// The capabilities the probe found.
    pub capabilities: SpeCapabilities,
    /// The configuration programmed (with its warnings).
    pub config: SpeConfig,
    /// The buffer programmed.
    pub buffer: ProfilingBuffer,
    /// A management event left over from an earlier session, if PMBSR_EL1 held one.
    pub previous_syndrome: Option<BufferSyndrome>,
}

/// Probes SPE through `regs` and, only if it is present and usable, validates `request` and a
/// `size`-byte buffer at `base` against it and starts sampling.
///
/// On a PE without SPE (QEMU) this returns [`SpeError::NotImplemented`] after reading only
/// `ID_AA64DFR0_EL1`: no SPE register is touched (they would be UNDEFINED). Any validation
/// error is returned before the first SPE write.
///
/// # Safety
///
/// Runs at EL1; `regs` is this PE's register file; the memory `base..base + size` is mapped
/// writable at EL1 and reserved for the profiling unit until [`stop`] returns.
pub unsafe fn apply_if_present_with<R: SpeIdRegisters + SpeRegisterFile + ?Sized>(
    regs: &mut R,
    request: &SpeConfigBuilder,
    base: u64,
    size: u64,
) -> Result<AppliedSession, SpeError> {
    let capabilities = probe_with(regs)?;
    let config = request.build(&capabilities)?;
    let buffer = ProfilingBuffer::new(base, size, &capabilities)?;
    // SAFETY: the probe found SPE with an EL1-owned buffer, the configuration was built for
    // these capabilities, and the caller reserved the buffer memory.
    let previous_syndrome = unsafe { start(regs, &config, &buffer) };
    Ok(AppliedSession {
        capabilities,
        config,
        buffer,
        previous_syndrome,
    })
}

/// The SPE registers of the PE the code runs on, at EL1.
#[cfg(target_arch = "aarch64")]
#[derive(Clone, Copy, Debug, Default)]
pub struct El1Spe;

#[cfg(target_arch = "aarch64")]
impl SpeIdRegisters for El1Spe {
    fn id_aa64dfr0_el1(&mut self) -> u64 {
        super::capabilities::CurrentPe.id_aa64dfr0_el1()
    }

    unsafe fn pmbidr_el1(&mut self) -> u64 {
        // SAFETY: forwarded trait contract (PMSVer != 0 was read from this PE).
        unsafe { super::capabilities::CurrentPe.pmbidr_el1() }
    }

    unsafe fn pmsidr_el1(&mut self) -> u64 {
        // SAFETY: forwarded trait contract (PMSVer != 0, PMBIDR_EL1.P == 0 on this PE).
        unsafe { super::capabilities::CurrentPe.pmsidr_el1() }
    }
}

#[cfg(target_arch = "aarch64")]
impl SpeRegisterFile for El1Spe {
    unsafe fn write(&mut self, register: SpeRegister, value: u64) {
        use crate::asm::spe as a;
        // SAFETY: the caller upholds the trait contract, which is the contract of these
        // accessors.
        unsafe {
            match register {
                SpeRegister::Pmscr => a::write_pmscr_el1(value),
                SpeRegister::Pmsfcr => a::write_pmsfcr_el1(value),
                SpeRegister::Pmsevfr => a::write_pmsevfr_el1(value),
                SpeRegister::Pmsnevfr => a::write_pmsnevfr_el1(value),
                SpeRegister::Pmsdsfr => a::write_pmsdsfr_el1(value),
                SpeRegister::Pmslatfr => a::write_pmslatfr_el1(value),
                SpeRegister::Pmsirr => a::write_pmsirr_el1(value),
                SpeRegister::Pmsicr => a::write_pmsicr_el1(value),
                SpeRegister::Pmbptr => a::write_pmbptr_el1(value),
                SpeRegister::Pmblimitr => a::write_pmblimitr_el1(value),
                SpeRegister::Pmbsr => a::write_pmbsr_el1(value),
            }
        }
    }

    unsafe fn read(&mut self, register: SpeRegister) -> u64 {
        use crate::asm::spe as a;
        // SAFETY: the caller upholds the trait contract, which is the contract of these
        // accessors.
        unsafe {
            match register {
                SpeRegister::Pmscr => a::read_pmscr_el1(),
                SpeRegister::Pmsfcr => a::read_pmsfcr_el1(),
                SpeRegister::Pmsevfr => a::read_pmsevfr_el1(),
                SpeRegister::Pmsnevfr => a::read_pmsnevfr_el1(),
                SpeRegister::Pmsdsfr => a::read_pmsdsfr_el1(),
                SpeRegister::Pmslatfr => a::read_pmslatfr_el1(),
                SpeRegister::Pmsirr => a::read_pmsirr_el1(),
                SpeRegister::Pmsicr => a::read_pmsicr_el1(),
                SpeRegister::Pmbptr => a::read_pmbptr_el1(),
                SpeRegister::Pmblimitr => a::read_pmblimitr_el1(),
                SpeRegister::Pmbsr => a::read_pmbsr_el1(),
            }
        }
    }

    fn barrier(&mut self, barrier: Barrier) {
        use aarch64_cpu::asm::barrier as b;
        // Each barrier's reason is given where the sequences above request it.
        match barrier {
            Barrier::Isb => b::isb(b::SY),
            Barrier::PsbCsync => crate::asm::spe::psb_csync(),
            Barrier::DsbNsh => b::dsb(b::NSH),
        }
    }
}

/// [`apply_if_present_with`] on the PE the code runs on: probes, and on a PE without SPE
/// returns [`SpeError::NotImplemented`] without touching any SPE register.
///
/// # Safety
///
/// Runs at EL1; the memory `base..base + size` is mapped writable at EL1 and reserved for the
/// profiling unit until [`stop`] returns (with [`El1Spe`]).
#[cfg(target_arch = "aarch64")]
pub unsafe fn apply_if_present(
    request: &SpeConfigBuilder,
    base: u64,
    size: u64,
) -> Result<AppliedSession, SpeError> {
    // SAFETY: forwarded caller contract; El1Spe is this PE's register file.
    unsafe { apply_if_present_with(&mut El1Spe, request, base, size) }
}

#[cfg(test)]
#[path = "program_tests.rs"]
mod tests;
