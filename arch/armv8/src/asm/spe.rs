//! Every SPE instruction this crate executes: `mrs`/`msr` of the SPE system registers, the
//! `psb csync` profiling barrier, and the stop-and-drain sequence built from them.
//!
//! The registers are named by their encodings (`S3_0_C9_C9_4` for PMSFCR_EL1, ...) because the
//! assembler accepts the Arm ARM names only with the `spe` target feature (and PMSNEVFR_EL1
//! only with `spe-eef`); the encodings are the `Sysreg` lines of Linux 6.12
//! `arch/arm64/tools/sysreg` (op0 op1 CRn CRm op2), also in the "Accessing" part of each
//! register in Arm ARM DDI 0487 M.a.a D24.7. `psb csync` is `hint #17` (Arm ARM C6.2.318,
//! PSB: HINT with CRm=0b0010, op2=0b001), which executes as a NOP on PEs without SPE.
//!
//! # Safety contract shared by every SPE register access here
//!
//! - The PE implements SPE (`ID_AA64DFR0_EL1.PMSVer != 0`): otherwise the instruction is
//!   UNDEFINED (QEMU: exception class 0). Check with [`crate::spe::SpeVersion::from_id_aa64dfr0`]
//!   or `crate::spe::probe` first.
//! - The code runs at EL1 or higher; at EL0 every SPE register is UNDEFINED.
//! - Apart from `PMBIDR_EL1`, EL1 must own the profiling buffer (`PMBIDR_EL1.P == 0`);
//!   otherwise the access traps to EL3 (MDCR_EL3.NSPB) or EL2 (MDCR_EL2.E2PB/TPMS), which
//!   firmware may not handle.
//!
//! Host builds see none of these functions: they exist only for `target_arch = "aarch64"`.

/// Generates an `unsafe fn` that reads one SPE system register.
macro_rules! spe_mrs {
    ($fn_name:ident, $encoding:literal, $name:literal, $extra_safety:literal) => {
        #[doc = concat!("Reads ", $name, " (`", $encoding, "`).")]
        ///
        /// # Safety
        ///
        /// The module's shared contract: SPE implemented, EL1 or higher.
        #[doc = $extra_safety]
        #[cfg(target_arch = "aarch64")]
        #[inline]
        pub unsafe fn $fn_name() -> u64 {
            let value: u64;
            // SAFETY: the caller guarantees the register exists and is accessible at the
            // current Exception level. No `nomem`: PMBPTR_EL1/PMBSR_EL1 describe memory the
            // profiling unit wrote, so buffer reads must not move above the register read.
            unsafe {
                core::arch::asm!(
                    concat!("mrs {value}, ", $encoding),
                    value = out(reg) value,
                    options(nostack, preserves_flags),
                );
            }
            value
        }
    };
}

/// Generates an `unsafe fn` that writes one SPE system register.
macro_rules! spe_msr {
    ($fn_name:ident, $encoding:literal, $name:literal, $extra_safety:literal) => {
        #[doc = concat!("Writes ", $name, " (`", $encoding, "`).")]
        ///
        /// The write is not synchronized: profiling sees it only after a Context
        /// synchronization event (`isb`), Arm ARM D17.9.
        ///
        /// # Safety
        ///
        /// The module's shared contract: SPE implemented, EL1 owns the profiling buffer.
        #[doc = $extra_safety]
        #[cfg(target_arch = "aarch64")]
        #[inline]
        pub unsafe fn $fn_name(value: u64) {
            // SAFETY: the caller guarantees the register exists, EL1 may write it and the value
            // keeps the profiling unit's memory writes inside memory reserved for it. No `nomem`:
            // the write can start or stop hardware writes to memory, so the compiler must not
            // move memory accesses across it.
            unsafe {
                core::arch::asm!(
                    concat!("msr ", $encoding, ", {value}"),
                    value = in(reg) value,
                    options(nostack, preserves_flags),
                );
            }
        }
    };
}

spe_mrs!(read_pmscr_el1, "S3_0_C9_C9_0", "PMSCR_EL1", "");
spe_msr!(
    write_pmscr_el1,
    "S3_0_C9_C9_0",
    "PMSCR_EL1",
    "Before setting E0SPE/E1SPE, PMBPTR_EL1/PMBLIMITR_EL1 must describe memory reserved for the \
     profiling unit (see `write_pmblimitr_el1`)."
);
spe_mrs!(
    read_pmsnevfr_el1,
    "S3_0_C9_C9_1",
    "PMSNEVFR_EL1",
    "PMSNEVFR_EL1 exists only with FEAT_SPE_FnE (PMSIDR_EL1.FnE = 1); otherwise it is UNDEFINED."
);
spe_msr!(
    write_pmsnevfr_el1,
    "S3_0_C9_C9_1",
    "PMSNEVFR_EL1",
    "PMSNEVFR_EL1 exists only with FEAT_SPE_FnE (PMSIDR_EL1.FnE = 1); otherwise it is UNDEFINED. \
     Change it only while sampling is disabled."
);
spe_mrs!(read_pmsicr_el1, "S3_0_C9_C9_2", "PMSICR_EL1", "");
spe_msr!(
    write_pmsicr_el1,
    "S3_0_C9_C9_2",
    "PMSICR_EL1",
    "Write 0 before a new sampling session; otherwise only a value read back from it \
     (context switch), Arm ARM D24.7.13."
);
spe_mrs!(read_pmsirr_el1, "S3_0_C9_C9_3", "PMSIRR_EL1", "");
spe_msr!(write_pmsirr_el1, "S3_0_C9_C9_3", "PMSIRR_EL1", "");
spe_mrs!(read_pmsfcr_el1, "S3_0_C9_C9_4", "PMSFCR_EL1", "");
spe_msr!(
    write_pmsfcr_el1,
    "S3_0_C9_C9_4",
    "PMSFCR_EL1",
    "Change it only while sampling is disabled (PMSCR_EL1.E0SPE = E1SPE = 0)."
);
spe_mrs!(read_pmsevfr_el1, "S3_0_C9_C9_5", "PMSEVFR_EL1", "");
spe_msr!(
    write_pmsevfr_el1,
    "S3_0_C9_C9_5",
    "PMSEVFR_EL1",
    "Change it only while sampling is disabled (PMSCR_EL1.E0SPE = E1SPE = 0)."
);
spe_mrs!(read_pmslatfr_el1, "S3_0_C9_C9_6", "PMSLATFR_EL1", "");
spe_msr!(
    write_pmslatfr_el1,
    "S3_0_C9_C9_6",
    "PMSLATFR_EL1",
    "Change it only while sampling is disabled (PMSCR_EL1.E0SPE = E1SPE = 0)."
);
spe_mrs!(
    read_pmsidr_el1,
    "S3_0_C9_C9_7",
    "PMSIDR_EL1",
    "Read it only after PMBIDR_EL1.P read as 0: PMSIDR_EL1 is subject to the MDCR_EL3.NSPB \
     trap, PMBIDR_EL1 is not (Arm ARM D24.7.1, D24.7.14)."
);
spe_mrs!(read_pmblimitr_el1, "S3_0_C9_C10_0", "PMBLIMITR_EL1", "");
spe_msr!(
    write_pmblimitr_el1,
    "S3_0_C9_C10_0",
    "PMBLIMITR_EL1",
    "With E = 1 and fill mode, the profiling unit writes records through the EL1 translation \
     regime to every byte from PMBPTR_EL1 up to LIMIT: that range must be mapped, writable and \
     reserved for it (no Rust object may live there) until the buffer is disabled and drained \
     with `disable_and_drain`."
);
spe_mrs!(read_pmbptr_el1, "S3_0_C9_C10_1", "PMBPTR_EL1", "");
spe_msr!(
    write_pmbptr_el1,
    "S3_0_C9_C10_1",
    "PMBPTR_EL1",
    "The pointer must lie in the buffer reserved for the profiling unit, aligned to \
     PMBIDR_EL1.Align; see `write_pmblimitr_el1`."
);
spe_mrs!(read_pmbsr_el1, "S3_0_C9_C10_3", "PMBSR_EL1", "");
spe_msr!(
    write_pmbsr_el1,
    "S3_0_C9_C10_3",
    "PMBSR_EL1",
    "Clearing S (writing 0) restarts collection after a management event: PMBPTR_EL1 must point \
     into the reserved buffer again first."
);
spe_mrs!(
    read_pmsdsfr_el1,
    "S3_0_C9_C10_4",
    "PMSDSFR_EL1",
    "PMSDSFR_EL1 exists only with FEAT_SPE_FDS (PMSIDR_EL1.FDS = 1); otherwise it is UNDEFINED. \
     Its encoding is Linux 7.3's `Sysreg PMSDSFR_EL1 3 0 9 10 4` (6.12 has no line for it)."
);
spe_msr!(
    write_pmsdsfr_el1,
    "S3_0_C9_C10_4",
    "PMSDSFR_EL1",
    "PMSDSFR_EL1 exists only with FEAT_SPE_FDS (PMSIDR_EL1.FDS = 1); otherwise it is UNDEFINED. \
     Change it only while sampling is disabled."
);
spe_mrs!(
    read_pmbidr_el1,
    "S3_0_C9_C10_7",
    "PMBIDR_EL1",
    "This is the one SPE register EL1 may read without owning the buffer (no MDCR_EL3.NSPB \
     trap, Arm ARM D24.7.1), which is why probing starts with it."
);

/// `PSB CSYNC`: profiling synchronization barrier.
///
/// Makes all profiling data of this PE formatted and its buffer writes initiated; a following
/// `dsb nsh` waits for those writes to complete (Arm ARM C6.2.318, D17.9). Safe: it only
/// orders the profiling unit's own writes, and executes as a NOP without SPE.
#[cfg(target_arch = "aarch64")]
#[inline]
pub fn psb_csync() {
    // SAFETY: `hint #17` is PSB CSYNC, or a NOP where SPE is absent; it touches no register or
    // memory the program can observe, and may execute at any Exception level.
    unsafe { core::arch::asm!("hint #17", options(nostack, preserves_flags)) };
}

/// Stops sampling and the profiling buffer, and waits until every record is in memory: the
/// point after which the buffer memory may be read or reused.
///
/// The order follows Arm ARM D17.9 (and Linux `arm_spe_pmu_disable_and_drain_local()`):
/// disable sampling, synchronize, flush the profiling unit, complete its writes, then disable
/// the buffer.
///
/// # Safety
///
/// The module's shared contract: SPE implemented, EL1 owns the profiling buffer.
#[cfg(target_arch = "aarch64")]
pub unsafe fn disable_and_drain() {
    use aarch64_cpu::asm::barrier;

    // SAFETY: the caller guarantees SPE is implemented and EL1 owns the buffer; writing 0 only
    // turns sampling off.
    unsafe { write_pmscr_el1(0) };
    // isb: the sampler reads PMSCR_EL1 indirectly; without a Context synchronization event it
    // may keep sampling with the old enables (Arm ARM D17.9, RPVRNK).
    barrier::isb(barrier::SY);
    // psb csync: format every sample already taken and initiate its buffer writes.
    psb_csync();
    // dsb nsh: wait for those writes to complete; they are this PE's own, so the
    // non-shareable domain is enough (Arm ARM C6.2.318: "A following DSB instruction completes
    // when the writes to the profiling buffer have completed").
    barrier::dsb(barrier::NSH);
    // SAFETY: as above; E = 0 discards any further output and stops buffer writes.
    unsafe { write_pmblimitr_el1(0) };
    // isb: make the buffer disable visible to the profiling unit before the caller touches the
    // buffer memory.
    barrier::isb(barrier::SY);
}
