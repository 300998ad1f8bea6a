//! CP15 operands of the ARM1176 PMU registers, and the real register access.
//!
//! The five registers sit in the IMPLEMENTATION DEFINED CP15 space c15 (ARM1176JZF-S
//! TRM, sections 3.2.51-3.2.54 and page 3-132, and the accessors in Linux 6.12's
//! drivers/perf/arm_v6_pmu.c):
//!
//! | register | operands |
//! |---|---|
//! | SUNAVCR | `p15, 0, <Rt>, c15, c9, 0` |
//! | PMCR | `p15, 0, <Rt>, c15, c12, 0` |
//! | CCR | `p15, 0, <Rt>, c15, c12, 1` |
//! | CR0 | `p15, 0, <Rt>, c15, c12, 2` |
//! | CR1 | `p15, 0, <Rt>, c15, c12, 3` |
//!
//! The operand strings are written once, in the crate-private `cp15_operands!` macro,
//! and used both by the instructions of the `asm` module (ARM only) and by the `OPERANDS` constant of each register
//! module, which the host tests compare with the TRM and Linux.

/// The `mrc`/`mcr` operands (after the mnemonic) of a PMU register, as a literal for
/// `asm!` (`{0}` is the core register).
macro_rules! cp15_operands {
    (SUNAVCR) => {
        "p15, 0, {0}, c15, c9, 0"
    };
    (PMCR) => {
        "p15, 0, {0}, c15, c12, 0"
    };
    (CCR) => {
        "p15, 0, {0}, c15, c12, 1"
    };
    (CR0) => {
        "p15, 0, {0}, c15, c12, 2"
    };
    (CR1) => {
        "p15, 0, {0}, c15, c12, 3"
    };
}
pub(crate) use cp15_operands;

#[cfg(target_arch = "arm")]
pub use real::{Cp15, PrivilegedCp15};

#[cfg(target_arch = "arm")]
mod real {
    use core::marker::PhantomData;

    use crate::asm;
    use crate::pmcr::{CounterRegister, Pmcr};
    use crate::pmu::PmuRegisters;

    /// The ARM1176's own PMU registers, through `mrc`/`mcr` (see [`crate::asm`]).
    ///
    /// Neither `Send` nor `Sync`: the registers belong to the CPU the value was made on.
    #[derive(Debug)]
    pub struct Cp15 {
        _not_send_or_sync: PhantomData<*const ()>,
    }

    impl Cp15 {
        /// Access to the PMU registers of the current CPU.
        ///
        /// # Safety
        /// - The CPU is an ARM1176 (MIDR primary part number 0xB76): elsewhere c15 is
        ///   something else or undefined.
        /// - The code runs at PL1, or at PL0 with SUNAVCR.V set (kmod-enable-user's stock flavour sets it);
        ///   otherwise every access is an Undefined Instruction exception.
        /// - Nothing else (another `Cp15`, Linux perf, an interrupt handler) uses the
        ///   PMU while this value exists.
        pub unsafe fn new() -> Self {
            Self {
                _not_send_or_sync: PhantomData,
            }
        }
    }

    // SAFETY: `Cp15::new`'s contract makes every access below legal on this CPU, and the
    // type cannot leave the CPU (it is neither Send nor Sync).
    unsafe impl PmuRegisters for Cp15 {
        #[inline(always)]
        fn read_pmcr(&self) -> Pmcr {
            // SAFETY: access was established by `Cp15::new`'s contract.
            unsafe { asm::read_pmcr() }
        }

        #[inline(always)]
        unsafe fn write_pmcr(&self, value: Pmcr) {
            // SAFETY: access by `Cp15::new`'s contract; the interrupt-enable rule is
            // this method's own contract, passed on to the caller.
            unsafe { asm::write_pmcr(value) }
        }

        #[inline(always)]
        fn read_counter(&self, counter: CounterRegister) -> u32 {
            match counter {
                // SAFETY: access was established by `Cp15::new`'s contract.
                CounterRegister::Ccr => unsafe { asm::read_ccr() }.count(),
                // SAFETY: as above.
                CounterRegister::Cr0 => unsafe { asm::read_cr0() }.count(),
                // SAFETY: as above.
                CounterRegister::Cr1 => unsafe { asm::read_cr1() }.count(),
            }
        }

        #[inline(always)]
        fn write_counter(&self, counter: CounterRegister, value: u32) {
            match counter {
                // SAFETY: access by `Cp15::new`'s contract, and this `Cp15` owns the
                // PMU, so changing a count disturbs nobody else.
                CounterRegister::Ccr => unsafe { asm::write_ccr(crate::Ccr::new(value)) },
                // SAFETY: as above.
                CounterRegister::Cr0 => unsafe { asm::write_cr0(crate::Cr0::new(value)) },
                // SAFETY: as above.
                CounterRegister::Cr1 => unsafe { asm::write_cr1(crate::Cr1::new(value)) },
            }
        }
    }

    /// SUNAVCR of the current CPU, from a privileged mode: the register
    /// [`crate::user_enable`] writes.
    ///
    /// Neither `Send` nor `Sync`: the register belongs to the CPU the value was made on.
    #[derive(Debug)]
    pub struct PrivilegedCp15 {
        _not_send_or_sync: PhantomData<*const ()>,
    }

    impl PrivilegedCp15 {
        /// Access to SUNAVCR of the current CPU.
        ///
        /// # Safety
        /// - The CPU is an ARM1176 ([`crate::user_enable::is_arm1176`] of its MIDR):
        ///   elsewhere c15, c9 is something else or undefined.
        /// - The code runs in a privileged mode (PL1: a kernel module), stays on this CPU
        ///   while the value lives, and nothing else changes SUNAVCR meanwhile.
        /// - Whoever writes V = 1 through it decides for the whole system that User mode
        ///   may read and reprogram the PMU (the contract of [`crate::asm::write_sunavcr`]).
        pub unsafe fn new() -> Self {
            Self {
                _not_send_or_sync: PhantomData,
            }
        }
    }

    impl crate::user_enable::SunavcrRegister for PrivilegedCp15 {
        #[inline(always)]
        fn read_sunavcr(&self) -> crate::Sunavcr {
            // SAFETY: ARM1176 in a privileged mode, by `PrivilegedCp15::new`'s contract.
            unsafe { asm::read_sunavcr() }
        }

        #[inline(always)]
        fn write_sunavcr(&self, value: crate::Sunavcr) {
            // SAFETY: ARM1176 in a privileged mode, and the decision to share the PMU
            // with User mode taken by the caller of `PrivilegedCp15::new`.
            unsafe { asm::write_sunavcr(value) }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::string::String;

    /// The operands of a GCC-style accessor such as `"mrc   p15, 0, %0, c15, c12, 0"`,
    /// in the form `asm!` takes them.
    fn operands_of(gcc: &str) -> String {
        let (_mnemonic, operands) = gcc.split_once(' ').unwrap();
        operands.trim().replace("%0", "{0}")
    }

    /// The operands of the TRM (ARM1176JZF-S TRM page 3-132: SUNAVCR; sections
    /// 3.2.51-3.2.54: PMCR, CCR, CR0, CR1) as Linux 6.12 writes them
    /// (drivers/perf/arm_v6_pmu.c: armv6_pmcr_read, armv6pmu_read_counter).
    #[test]
    fn operands_match_the_trm_and_linux() {
        let cases = [
            (crate::sunavcr::OPERANDS, "mrc   p15, 0, %0, c15, c9, 0"),
            (crate::pmcr::OPERANDS, "mcr   p15, 0, %0, c15, c12, 0"),
            (crate::ccr::OPERANDS, "mrc   p15, 0, %0, c15, c12, 1"),
            (crate::cr0::OPERANDS, "mrc   p15, 0, %0, c15, c12, 2"),
            (crate::cr1::OPERANDS, "mrc   p15, 0, %0, c15, c12, 3"),
        ];
        for (ours, reference) in cases {
            assert_eq!(ours, operands_of(reference));
        }
    }
}
