//! Counter reads at the hardware floor: handles for CCR, CR0 and CR1 that read with one
//! `mrc` and nothing else.
//!
//! The three counters are separate CP15 registers (c15, c12, 1/2/3: ARM1176JZF-S TRM,
//! ARM DDI 0301H, 3.2.52-3.2.54), so each has its own instruction and a handle needs no
//! selection step. [`pmu_core::Pmu::read`] of an [`Arm1176Pmu`](crate::Arm1176Pmu) costs more: it decodes
//! the slot, looks at the driver's state (a stopped counter reports the value kept when
//! it stopped, see [`crate::pmu`]) and then branches to the register's `mrc`.
//!
//! | handle | read | made by |
//! |---|---|---|
//! | `CcrReader` | `mrc p15, 0, Rt, c15, c12, 1` | `Arm1176Pmu::ccr_reader` |
//! | `Cr0Reader` | `mrc p15, 0, Rt, c15, c12, 2` | `Arm1176Pmu::cr0_reader` |
//! | `Cr1Reader` | `mrc p15, 0, Rt, c15, c12, 3` | `Arm1176Pmu::cr1_reader` |
//! | `Reader` (chosen at run time) | one indirect call to one of the above | `Arm1176Pmu::reader`, [`reader_register`] checks the slot |
//!
//! # What a handle reads
//!
//! The register as it is. While the counter runs (the case a measured region is in)
//! that is exactly what `Pmu::read` reports. While it is stopped, `Pmu::read` reports
//! the value the driver kept when it stopped, and the register may differ from it: the
//! CCR keeps counting under PMCR.E while CR0 or CR1 runs, and a parked CR0/CR1 could be
//! moved by an ETM. Read a stopped counter through the driver.
//!
//! # Measured
//!
//! rustc 1.95.0, `--release --target armv6-none-eabi -Zbuild-std=core --emit asm`, a
//! function around each read: `pmu.cr0_reader().read()` is `mrc p15, #0, r0, c15, c12,
//! #2` alone (plus the frame-pointer `push`/`mov`/`pop` of the wrapper function); two
//! `ccr_reader().read()`s back to back are two adjacent `mrc`s; a run-time `Reader` is
//! `ldr` of the function pointer and a tail call; `Pmu::read(Slot::Programmable(0))`
//! adds `ldrb`, `cmp` and a conditional return of the kept value before its `mrc`. QEMU
//! cannot check the values: its ARM1176 model reads c15 as 0 (docs/qemu.md).
//!
//! The handles exist only for the real registers (`Arm1176Pmu<Cp15>`, `target_arch =
//! "arm"`) and borrow the PMU, so they cannot outlive the access its `Cp15` stands for
//! (PL1, or User mode with SUNAVCR.V).

use pmu_core::{Error, Slot};

use crate::pmcr::CounterRegister;

/// The register behind `slot`: [`Slot::Fixed`]`(0)` is the CCR, [`Slot::Programmable`]
/// `(0)` and `(1)` are CR0 and CR1.
///
/// # Errors
/// [`Error::CounterOutOfRange`] for a slot the ARM1176 lacks.
pub fn reader_register(slot: Slot) -> Result<CounterRegister, Error> {
    CounterRegister::from_slot(slot).ok_or(Error::CounterOutOfRange {
        slot,
        available: match slot {
            Slot::Programmable(_) => 2,
            Slot::Fixed(_) => 1,
        },
    })
}

#[cfg(target_arch = "arm")]
pub use hw::{CcrReader, Cr0Reader, Cr1Reader, Reader};

#[cfg(target_arch = "arm")]
mod hw {
    use core::marker::PhantomData;

    use pmu_core::{Error, Slot};

    use super::reader_register;
    use crate::asm;
    use crate::pmcr::CounterRegister;
    use crate::{Arm1176Pmu, Cp15};

    /// The register's overflow flag in PMCR as a mask (bits 10:8: CCR, CR1, CR0).
    const fn flag_mask(register: CounterRegister) -> u64 {
        let field = register.overflow_flag();
        (field.mask << field.shift) as u64
    }

    macro_rules! fixed_reader {
        ($(#[$doc:meta])* $name:ident, $read:ident, $register:expr) => {
            $(#[$doc])*
            #[derive(Clone, Copy, Debug)]
            pub struct $name<'p> {
                // Borrows the PMU (its `Cp15` stands for the access) and, like it, stays
                // on this CPU.
                _pmu: PhantomData<&'p *const ()>,
            }

            impl $name<'_> {
                /// The register's value (see the module doc for a stopped counter).
                #[inline(always)]
                pub fn read(&self) -> u32 {
                    // SAFETY: made from an `Arm1176Pmu<Cp15>` it borrows, whose `Cp15`
                    // contract makes the register accessible here.
                    unsafe { asm::$read() }.count()
                }
            }

            impl pmu_core::CounterRead for $name<'_> {
                #[inline(always)]
                fn read(&self) -> u64 {
                    u64::from($name::read(self))
                }
                #[inline(always)]
                fn overflow_mask(&self) -> u64 {
                    flag_mask($register)
                }
            }
        };
    }

    fixed_reader!(
        /// The CCR, read with one `mrc`.
        CcrReader,
        read_ccr,
        CounterRegister::Ccr
    );
    fixed_reader!(
        /// CR0, read with one `mrc`.
        Cr0Reader,
        read_cr0,
        CounterRegister::Cr0
    );
    fixed_reader!(
        /// CR1, read with one `mrc`.
        Cr1Reader,
        read_cr1,
        CounterRegister::Cr1
    );

    /// A counter chosen at run time: its read function was picked when the handle was
    /// made, so a read is one indirect call to one `mrc`.
    #[derive(Clone, Copy, Debug)]
    pub struct Reader<'p> {
        read: unsafe fn() -> u32,
        register: CounterRegister,
        _pmu: PhantomData<&'p *const ()>,
    }

    impl Reader<'_> {
        /// The register's value (see the module doc for a stopped counter).
        #[inline(always)]
        pub fn read(&self) -> u32 {
            // SAFETY: `read` is one of the three functions below, chosen for an
            // existing register, and the borrowed PMU's `Cp15` grants the access.
            unsafe { (self.read)() }
        }

        /// Which register it reads.
        pub fn register(&self) -> CounterRegister {
            self.register
        }
    }

    impl pmu_core::CounterRead for Reader<'_> {
        #[inline(always)]
        fn read(&self) -> u64 {
            u64::from(Reader::read(self))
        }
        #[inline(always)]
        fn overflow_mask(&self) -> u64 {
            flag_mask(self.register)
        }
    }

    /// The flags of `CounterRead::overflow_mask`: PMCR bits 8 (CR0), 9 (CR1) and 10 (CCR),
    /// ARM1176JZF-S TRM 3.2.51. (Run under `qemu-arm -cpu arm1176` by `cargo xtask test`.)
    #[cfg(test)]
    #[test]
    fn overflow_masks_are_the_pmcr_flags() {
        assert_eq!(flag_mask(CounterRegister::Cr0), 1 << 8);
        assert_eq!(flag_mask(CounterRegister::Cr1), 1 << 9);
        assert_eq!(flag_mask(CounterRegister::Ccr), 1 << 10);
    }

    impl CounterRegister {
        /// The function that reads this register with one `mrc`, for a caller that
        /// keeps its own table (a [`Reader`] is the borrowed, safe form).
        ///
        /// Calling it is `unsafe`: the access must be permitted (PL1, or User mode with
        /// SUNAVCR.V).
        pub fn read_fn(self) -> unsafe fn() -> u32 {
            match self {
                Self::Ccr => ccr,
                Self::Cr0 => cr0,
                Self::Cr1 => cr1,
            }
        }
    }

    /// # Safety
    /// As [`asm::read_ccr`].
    unsafe fn ccr() -> u32 {
        // SAFETY: forwarded to the caller.
        unsafe { asm::read_ccr() }.count()
    }

    /// # Safety
    /// As [`asm::read_cr0`].
    unsafe fn cr0() -> u32 {
        // SAFETY: forwarded to the caller.
        unsafe { asm::read_cr0() }.count()
    }

    /// # Safety
    /// As [`asm::read_cr1`].
    unsafe fn cr1() -> u32 {
        // SAFETY: forwarded to the caller.
        unsafe { asm::read_cr1() }.count()
    }

    impl Arm1176Pmu<Cp15> {
        /// The CCR's reader.
        pub fn ccr_reader(&self) -> CcrReader<'_> {
            CcrReader { _pmu: PhantomData }
        }

        /// CR0's reader.
        pub fn cr0_reader(&self) -> Cr0Reader<'_> {
            Cr0Reader { _pmu: PhantomData }
        }

        /// CR1's reader.
        pub fn cr1_reader(&self) -> Cr1Reader<'_> {
            Cr1Reader { _pmu: PhantomData }
        }

        /// The reader of `slot`, chosen at run time.
        ///
        /// # Errors
        /// [`Error::CounterOutOfRange`] for a slot the ARM1176 lacks.
        pub fn reader(&self, slot: Slot) -> Result<Reader<'_>, Error> {
            let register = reader_register(slot)?;
            Ok(Reader {
                read: register.read_fn(),
                register,
                _pmu: PhantomData,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slots of [`crate::Arm1176Pmu`] (crate docs: CCR as fixed counter 0, CR0/CR1
    /// as programmable 0/1; ARM1176JZF-S TRM 3.2.51: three counters), and the error a
    /// reader for any other slot gets when it is made.
    #[test]
    fn slots_and_bounds() {
        assert_eq!(reader_register(Slot::Fixed(0)), Ok(CounterRegister::Ccr));
        assert_eq!(
            reader_register(Slot::Programmable(0)),
            Ok(CounterRegister::Cr0)
        );
        assert_eq!(
            reader_register(Slot::Programmable(1)),
            Ok(CounterRegister::Cr1)
        );
        assert_eq!(
            reader_register(Slot::Programmable(2)),
            Err(Error::CounterOutOfRange {
                slot: Slot::Programmable(2),
                available: 2
            })
        );
        assert_eq!(
            reader_register(Slot::Fixed(1)),
            Err(Error::CounterOutOfRange {
                slot: Slot::Fixed(1),
                available: 1
            })
        );
    }
}
