//! Every instruction this crate executes: the PMUv3 part here, the SPE part in [`spe`].
//!
//! One small function per system-register access (`mrs`/`msr`), plus the `isb`s that
//! make a write take effect where that matters, each with its reason. Everything else
//! in the crate works on register *values* and is tested on the host.
//!
//! `PMEVCNTR<n>_EL0` and `PMEVTYPER<n>_EL0` are reached by their numbered encodings: the
//! counter number is part of the instruction, so a macro generates one `mrs`/`msr` per
//! n = 0..=30 and the function dispatches on n with a `match`; the counter reads, which
//! sit inside measured regions, go through one computed branch into a table instead
//! (`read_counter`). Nothing goes through
//! PMSELR_EL0 + PMXEVCNTR_EL0, whose select-then-access pair an interrupt handler could
//! split (the race Linux's `PMEVN_SWITCH` avoids the same way).
//!
//! No access here is `nomem`: the compiler must not move a counter read or a control
//! write across the memory accesses of the code being measured.
//!
//! # Safety contract shared by every PMU register access here
//!
//! - The PE implements PMUv3: `ID_AA64DFR0_EL1.PMUVer` is neither 0 nor 0xF
//!   ([`crate::PmuVersion::is_pmuv3`]); otherwise the instruction is UNDEFINED.
//! - The access is permitted at the current Exception level: at EL1 (or higher) unless
//!   EL2/EL3 trap PMU accesses (MDCR_EL2.TPM/TPMCR, MDCR_EL3.TPM); at EL0 only what
//!   PMUSERENR_EL0 grants (EN: everything but PMUSERENR_EL0 and PMINTEN*_EL1; CR:
//!   PMCCNTR_EL0 reads; ER: event counter reads; SW: PMSWINC_EL0 writes). A denied
//!   access traps to EL1 with EC 0x18 (Linux: SIGILL).
//! - Event counter n must be below PMCR_EL0.N: higher numbered registers are
//!   UNDEFINED (QEMU: PMEVCNTR30_EL0 with N = 6).
//! - Writes change counting for whoever else uses the PMU: the caller owns it.
//!
//! Host builds see none of these functions: they exist only for
//! `target_arch = "aarch64"`.

pub mod spe;

#[cfg(target_arch = "aarch64")]
use core::arch::asm;

#[cfg(target_arch = "aarch64")]
use crate::counter::EventCounter;

/// Generates `unsafe fn`s reading one PMU system register each.
macro_rules! pmu_mrs {
    ($($(#[$doc:meta])* $fn_name:ident => $register:literal;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// The module's shared contract: PMUv3 implemented, access permitted at the
        /// current Exception level.
        #[cfg(target_arch = "aarch64")]
        #[inline(always)]
        pub unsafe fn $fn_name() -> u64 {
            let value: u64;
            // SAFETY: the caller upholds the module contract, so the register exists and
            // may be read here; `mrs` only writes the output register.
            unsafe {
                asm!(
                    concat!("mrs {value}, ", $register),
                    value = out(reg) value,
                    options(nostack, preserves_flags),
                );
            }
            value
        }
    )*};
}

/// Generates `unsafe fn`s writing one PMU system register each, with no barrier.
macro_rules! pmu_msr {
    ($($(#[$doc:meta])* $fn_name:ident => $register:literal;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// The module's shared contract: PMUv3 implemented, access permitted at the
        /// current Exception level, and the caller owns the PMU.
        #[cfg(target_arch = "aarch64")]
        #[inline(always)]
        pub unsafe fn $fn_name(value: u64) {
            // SAFETY: the caller upholds the module contract; `msr` changes PMU state
            // only, which the caller owns.
            unsafe {
                asm!(
                    concat!("msr ", $register, ", {value}"),
                    value = in(reg) value,
                    options(nostack, preserves_flags),
                );
            }
        }
    )*};
}

pmu_mrs! {
    /// Reads PMCR_EL0 (control: N, LC, LP, E, …).
    read_pmcr_el0 => "pmcr_el0";
    /// Reads PMCEID0_EL0 (common events 0x00..=0x1F and 0x4000..=0x401F implemented).
    read_pmceid0_el0 => "pmceid0_el0";
    /// Reads PMCEID1_EL0 (common events 0x20..=0x3F and 0x4020..=0x403F implemented).
    read_pmceid1_el0 => "pmceid1_el0";
    /// Reads PMCNTENSET_EL0 (which counters are enabled).
    read_pmcntenset_el0 => "pmcntenset_el0";
    /// Reads PMOVSSET_EL0 (overflow flags).
    read_pmovsset_el0 => "pmovsset_el0";
    /// Reads PMINTENSET_EL1 (which overflow interrupts are enabled). EL1 only.
    read_pmintenset_el1 => "pmintenset_el1";
    /// Reads PMSELR_EL0 (the counter PMXEV* registers select).
    read_pmselr_el0 => "pmselr_el0";
    /// Reads PMCCNTR_EL0, the cycle counter.
    read_pmccntr_el0 => "pmccntr_el0";
    /// Reads PMCCFILTR_EL0, the cycle counter's filter.
    read_pmccfiltr_el0 => "pmccfiltr_el0";
    /// Reads PMUSERENR_EL0 (what EL0 may access; readable at EL0 too).
    read_pmuserenr_el0 => "pmuserenr_el0";
    /// Reads PMUACR_EL1 (which counters EL0 may access under PMUSERENR_EL0.UEN). EL1
    /// only, and FEAT_PMUv3p9 only (UNDEFINED before): by its encoding, op0 3 op1 0
    /// CRn 9 CRm 14 op2 4 (Linux 7.3.4 arch/arm64/tools/sysreg), which assemblers
    /// without the name accept.
    read_pmuacr_el1 => "s3_0_c9_c14_4";
}

pmu_msr! {
    /// Writes PMOVSCLR_EL0: clears the overflow flags of the 1 bits, leaves the others.
    write_pmovsclr_el0 => "pmovsclr_el0";
    /// Writes PMOVSSET_EL0: sets the overflow flags of the 1 bits.
    write_pmovsset_el0 => "pmovsset_el0";
    /// Writes PMINTENSET_EL1: enables the overflow interrupt of the 1 bits. EL1 only.
    ///
    /// No `isb`: the interrupt is taken when it is taken; whoever needs it enabled
    /// before a given instruction passes a context synchronization event anyway (the
    /// `isb` of a later counter enable, or an exception return).
    write_pmintenset_el1 => "pmintenset_el1";
    /// Writes PMINTENCLR_EL1: disables the overflow interrupt of the 1 bits. EL1 only.
    write_pmintenclr_el1 => "pmintenclr_el1";
    /// Writes PMSELR_EL0 (this crate never needs it: see the module docs).
    write_pmselr_el0 => "pmselr_el0";
    /// Writes PMSWINC_EL0: increments the enabled SW_INCR counters of the 1 bits.
    write_pmswinc_el0 => "pmswinc_el0";
    /// Writes PMUACR_EL1 (see `read_pmuacr_el1`: EL1 and FEAT_PMUv3p9 only). No `isb`:
    /// the caller synchronizes before EL0 runs under the new value.
    write_pmuacr_el1 => "s3_0_c9_c14_4";
    /// Writes PMCCNTR_EL0, the cycle counter.
    ///
    /// No `isb`: later direct reads of the same register are ordered after the write.
    write_pmccntr_el0 => "pmccntr_el0";
    /// Writes PMCCFILTR_EL0, the cycle counter's filter.
    ///
    /// No `isb`: configure while the counter is disabled; the enable synchronizes.
    write_pmccfiltr_el0 => "pmccfiltr_el0";
}

/// Writes PMCR_EL0, then synchronizes.
///
/// # Safety
///
/// The module's shared contract: PMUv3 implemented, access permitted at the current
/// Exception level, and the caller owns the PMU (P and C zero every counter).
#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub unsafe fn write_pmcr_el0(value: u64) {
    // SAFETY: the caller upholds the module contract. The `isb` only synchronizes.
    unsafe {
        asm!(
            "msr pmcr_el0, {value}",
            // The effects of PMCR_EL0 on other state (E starting or stopping all
            // counters, P and C zeroing PMEVCNTR<n>_EL0 and PMCCNTR_EL0, LC/LP
            // changing the overflow width) are indirect: the Arm ARM guarantees later
            // instructions see them only after a context synchronization event, so
            // without it a counter read right after a reset could return the old value.
            "isb",
            value = in(reg) value,
            options(nostack, preserves_flags),
        );
    }
}

/// Writes PMCNTENSET_EL0 (enables the counters of the 1 bits), then synchronizes.
///
/// # Safety
///
/// The module's shared contract: PMUv3 implemented, access permitted at the current
/// Exception level, and the caller owns the PMU.
#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub unsafe fn write_pmcntenset_el0(value: u64) {
    // SAFETY: the caller upholds the module contract. The `isb` only synchronizes.
    unsafe {
        asm!(
            "msr pmcntenset_el0, {value}",
            // Counting is an indirect effect of the enable bit: without a context
            // synchronization event the counter may start only after some instructions
            // of the region the caller is about to measure have executed.
            "isb",
            value = in(reg) value,
            options(nostack, preserves_flags),
        );
    }
}

/// Writes PMCNTENCLR_EL0 (disables the counters of the 1 bits), then synchronizes.
///
/// # Safety
///
/// The module's shared contract: PMUv3 implemented, access permitted at the current
/// Exception level, and the caller owns the PMU.
#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub unsafe fn write_pmcntenclr_el0(value: u64) {
    // SAFETY: the caller upholds the module contract. The `isb` only synchronizes.
    unsafe {
        asm!(
            "msr pmcntenclr_el0, {value}",
            // Stopping is an indirect effect too: the `isb` keeps the instructions after
            // the stop from being counted.
            "isb",
            value = in(reg) value,
            options(nostack, preserves_flags),
        );
    }
}

/// Writes PMUSERENR_EL0: what EL0 may access from now on. EL1 or higher only.
///
/// No `isb`: EL0 is entered only by an exception return, which is itself a context
/// synchronization event, so EL0 always sees the new value.
///
/// # Safety
///
/// PMUv3 implemented; runs at EL1 or higher (writes at EL0 trap). Granting EL0 access
/// lets user space read (ER, CR), increment (SW) or reprogram (EN) the counters: the
/// caller decides that for the whole system (zero unused counters before granting it,
/// as Linux's `armv8pmu_enable_user_access` does).
#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub unsafe fn write_pmuserenr_el0(value: u64) {
    // SAFETY: the caller upholds the contract above; `msr` changes trap state only.
    unsafe {
        asm!(
            "msr pmuserenr_el0, {value}",
            value = in(reg) value,
            options(nostack, preserves_flags),
        );
    }
}

/// Generates the numbered `PMEVCNTR<n>_EL0` / `PMEVTYPER<n>_EL0` accessors: one
/// instruction per n, chosen by a `match` on n.
macro_rules! pmu_numbered {
    ($($n:literal)*) => {
        /// Writes `PMEVCNTR<n>_EL0` for `counter` = n.
        ///
        /// No `isb`: later direct reads of the same register are ordered after the
        /// write.
        ///
        /// # Safety
        ///
        /// The module's shared contract: PMUv3 implemented, access permitted at the
        /// current Exception level, n below PMCR_EL0.N, the caller owns the PMU.
        #[cfg(target_arch = "aarch64")]
        #[inline(always)]
        pub unsafe fn write_pmevcntr_el0(counter: EventCounter, value: u64) {
            // SAFETY: the caller upholds the module contract; `msr` changes PMU state
            // only, which the caller owns.
            unsafe {
                match counter.index() {
                    $(
                        $n => asm!(
                            concat!("msr pmevcntr", stringify!($n), "_el0, {value}"),
                            value = in(reg) value,
                            options(nostack, preserves_flags),
                        ),
                    )*
                    // `EventCounter` is always 0..=30: never taken.
                    _ => {}
                }
            }
        }

        /// Reads `PMEVCNTR<n>_EL0` for `counter` = n through a `match` (one `mrs` per
        /// n), not [`read_pmevcntr_el0`]'s computed branch: for code that must have
        /// no indirect branch (the stock kernel module: BTI kernels, and
        /// `-Cjump-tables=no`), where a few compares per read do not matter.
        ///
        /// # Safety
        ///
        /// The module's shared contract: PMUv3 implemented, access permitted at the
        /// current Exception level, n below PMCR_EL0.N.
        #[cfg(target_arch = "aarch64")]
        #[inline(always)]
        pub unsafe fn read_pmevcntr_el0_direct(counter: EventCounter) -> u64 {
            let value: u64;
            // SAFETY: the caller upholds the module contract, so PMEVCNTR<n>_EL0
            // exists and may be read; `mrs` only writes the output register.
            unsafe {
                match counter.index() {
                    $(
                        $n => asm!(
                            concat!("mrs {value}, pmevcntr", stringify!($n), "_el0"),
                            value = out(reg) value,
                            options(nostack, preserves_flags),
                        ),
                    )*
                    // `EventCounter` is always 0..=30: never taken.
                    _ => value = 0,
                }
            }
            value
        }

        /// Reads `PMEVTYPER<n>_EL0` for `counter` = n.
        ///
        /// # Safety
        ///
        /// The module's shared contract: PMUv3 implemented, access permitted at the
        /// current Exception level, n below PMCR_EL0.N.
        #[cfg(target_arch = "aarch64")]
        #[inline(always)]
        pub unsafe fn read_pmevtyper_el0(counter: EventCounter) -> u64 {
            let value: u64;
            // SAFETY: the caller upholds the module contract, so PMEVTYPER<n>_EL0
            // exists and may be read; `mrs` only writes the output register.
            unsafe {
                match counter.index() {
                    $(
                        $n => asm!(
                            concat!("mrs {value}, pmevtyper", stringify!($n), "_el0"),
                            value = out(reg) value,
                            options(nostack, preserves_flags),
                        ),
                    )*
                    // `EventCounter` is always 0..=30: never taken.
                    _ => value = 0,
                }
            }
            value
        }

        /// Writes `PMEVTYPER<n>_EL0` for `counter` = n.
        ///
        /// No `isb`: configure while the counter is disabled; the enable synchronizes.
        ///
        /// # Safety
        ///
        /// The module's shared contract: PMUv3 implemented, access permitted at the
        /// current Exception level, n below PMCR_EL0.N, the caller owns the PMU.
        #[cfg(target_arch = "aarch64")]
        #[inline(always)]
        pub unsafe fn write_pmevtyper_el0(counter: EventCounter, value: u64) {
            // SAFETY: the caller upholds the module contract; `msr` changes PMU state
            // only, which the caller owns.
            unsafe {
                match counter.index() {
                    $(
                        $n => asm!(
                            concat!("msr pmevtyper", stringify!($n), "_el0, {value}"),
                            value = in(reg) value,
                            options(nostack, preserves_flags),
                        ),
                    )*
                    // `EventCounter` is always 0..=30: never taken.
                    _ => {}
                }
            }
        }
    };
}

pmu_numbered!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30);

/// The `mrs` table: `adr; add; br` into 32 entries of `mrs; b` (entry k at 2f + 8k).
/// Expands to an `unsafe` operation: the counter must be ≤ 31.
#[cfg(target_arch = "aarch64")]
macro_rules! counter_table {
    ($counter:expr) => {{
        let value: u64;
        asm!(
            "adr {t}, 2f",
            "add {t}, {t}, {c}, lsl #3",
            "br {t}",
            "2:",
            "mrs {v}, pmevcntr0_el0", "b 3f",
            "mrs {v}, pmevcntr1_el0", "b 3f",
            "mrs {v}, pmevcntr2_el0", "b 3f",
            "mrs {v}, pmevcntr3_el0", "b 3f",
            "mrs {v}, pmevcntr4_el0", "b 3f",
            "mrs {v}, pmevcntr5_el0", "b 3f",
            "mrs {v}, pmevcntr6_el0", "b 3f",
            "mrs {v}, pmevcntr7_el0", "b 3f",
            "mrs {v}, pmevcntr8_el0", "b 3f",
            "mrs {v}, pmevcntr9_el0", "b 3f",
            "mrs {v}, pmevcntr10_el0", "b 3f",
            "mrs {v}, pmevcntr11_el0", "b 3f",
            "mrs {v}, pmevcntr12_el0", "b 3f",
            "mrs {v}, pmevcntr13_el0", "b 3f",
            "mrs {v}, pmevcntr14_el0", "b 3f",
            "mrs {v}, pmevcntr15_el0", "b 3f",
            "mrs {v}, pmevcntr16_el0", "b 3f",
            "mrs {v}, pmevcntr17_el0", "b 3f",
            "mrs {v}, pmevcntr18_el0", "b 3f",
            "mrs {v}, pmevcntr19_el0", "b 3f",
            "mrs {v}, pmevcntr20_el0", "b 3f",
            "mrs {v}, pmevcntr21_el0", "b 3f",
            "mrs {v}, pmevcntr22_el0", "b 3f",
            "mrs {v}, pmevcntr23_el0", "b 3f",
            "mrs {v}, pmevcntr24_el0", "b 3f",
            "mrs {v}, pmevcntr25_el0", "b 3f",
            "mrs {v}, pmevcntr26_el0", "b 3f",
            "mrs {v}, pmevcntr27_el0", "b 3f",
            "mrs {v}, pmevcntr28_el0", "b 3f",
            "mrs {v}, pmevcntr29_el0", "b 3f",
            "mrs {v}, pmevcntr30_el0", "b 3f",
            // The last entry falls through.
            "mrs {v}, pmccntr_el0",
            "3:",
            c = in(reg) u64::from($counter),
            t = out(reg) _,
            v = out(reg) value,
            options(nostack, preserves_flags),
        );
        value
    }};
}

/// Reads counter `counter` of the PMU's numbering: 0..=30 = `PMEVCNTR<n>_EL0`, 31 =
/// PMCCNTR_EL0 (the numbering of PMCNTENSET_EL0's bits, and of Linux's arm64 perf page:
/// drivers/perf/arm_pmuv3.c `armv8pmu_user_event_idx` publishes `hw.idx + 1`, the cycle
/// counter's `hw.idx` being 31); `None` above 31.
///
/// One computed branch into a table of 32 two-instruction entries (`mrs; b`): a
/// `match` over 32 registers compiles to a bounds check, a cycle-counter test and a
/// table of offsets, four instructions more on every read.
///
/// # Safety
///
/// The module's shared contract for the named counter: PMUv3 implemented, the read
/// permitted at the current Exception level (at EL0: PMUSERENR_EL0.ER for an event
/// counter, CR for the cycle counter, or EN), an event counter's n below PMCR_EL0.N.
#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub unsafe fn read_counter(counter: u32) -> Option<u64> {
    if counter > 31 {
        return None;
    }
    // SAFETY: the caller's contract; `counter` ≤ 31 keeps the branch inside the table.
    Some(unsafe { counter_table!(counter) })
}

/// [`read_counter`] of `counter & 31`, without the range test: for a number that an
/// earlier [`read_counter`] accepted (a region's stop reads the counter its start
/// did). The mask keeps the branch inside the table whatever `counter` is.
///
/// # Safety
///
/// As [`read_counter`], for `counter & 31`.
#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub unsafe fn read_counter_masked(counter: u32) -> u64 {
    // SAFETY: the caller's contract; the mask keeps the branch inside the table.
    unsafe { counter_table!(counter & 31) }
}

/// [`read_counter`] without the range test or the mask: for a counter number a handle
/// checked when it was made ([`crate::handle::CounterHandle`]).
///
/// # Safety
///
/// As [`read_counter`], and `counter` ≤ 31: a larger number branches past the table.
#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub unsafe fn read_counter_in_table(counter: u32) -> u64 {
    // SAFETY: the caller's contract keeps the branch inside the table.
    unsafe { counter_table!(counter) }
}

/// Reads `PMEVCNTR<n>_EL0` for `counter` = n (through [`read_counter`]'s table).
///
/// # Safety
///
/// The module's shared contract: PMUv3 implemented, access permitted at the current
/// Exception level, n below PMCR_EL0.N.
#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub unsafe fn read_pmevcntr_el0(counter: EventCounter) -> u64 {
    // SAFETY: the caller's contract; `EventCounter` is 0..=30, inside the table.
    unsafe { counter_table!(u32::from(counter.index()) & 31) }
}

/// Reads CNTVCT_EL0, the generic timer's virtual count (Arm ARM D11.1.2, "The virtual
/// counter"): a constant-rate clock, not a PMU register.
///
/// Not ordered with the instructions around it: an `isb` before and after brackets a
/// region (Arm ARM D11.2.2: reads of CNTVCT_EL0 can occur speculatively and out of
/// order relative to other instructions).
///
/// # Safety
///
/// The read is permitted at the current Exception level: at EL0 CNTKCTL_EL1.EL0VCTEN is
/// set (or the kernel emulates the trap: Linux 6.12 sets it in
/// drivers/clocksource/arm_arch_timer.c `arch_counter_set_user_access` for the vDSO, and
/// arch/arm64/kernel/traps.c `cntvct_read_handler` emulates the read where an erratum
/// makes it trap).
#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub unsafe fn read_cntvct_el0() -> u64 {
    let value: u64;
    // SAFETY: the caller's contract; `mrs` only writes the output register.
    unsafe { asm!("mrs {}, cntvct_el0", out(reg) value, options(nostack, preserves_flags)) };
    value
}

/// `isb`: a context synchronization event. Later instructions see the effects of earlier
/// system-register writes (callers say which write needs it, and why).
#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub fn isb() {
    // SAFETY: a barrier changes no state and is defined at every Exception level. Not
    // `nomem`: the compiler must not move memory accesses across it either.
    unsafe { asm!("isb", options(nostack, preserves_flags)) };
}

/// `mrs CurrentEL`: the Exception level this code runs at (0 to 3). A Linux kernel runs
/// at EL1, or at EL2 with VHE (`is_kernel_in_hyp_mode()`, arch/arm64/include/asm/virt.h).
///
/// # Safety
///
/// At EL1 or higher: CurrentEL is not accessible at EL0 (UNDEFINED there, Arm ARM
/// "CurrentEL").
#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub unsafe fn current_el() -> u8 {
    use aarch64_cpu::registers::{CurrentEL, Readable};
    CurrentEL.read(CurrentEL::EL) as u8
}
