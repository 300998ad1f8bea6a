//! PMCR, the ARM1176 Performance Monitor Control Register.
//!
//! Source: ARM1176JZF-S TRM (ARM DDI 0301H) section 3.2.51, Table 3-136; the bit
//! numbers agree with Linux's `ARMV6_PMCR_*` (drivers/perf/arm_v6_pmu.c in Linux 6.12).
//! Accessed with `mrc`/`mcr p15, 0, <Rt>, c15, c12, 0` ([`OPERANDS`]).
//!
//! One register controls all three counters, and it mixes three kinds of bits:
//!
//! - plain read/write state: E, D, the interrupt enables, X, the two event fields;
//! - write-1-to-clear overflow flags (CR0, CR1, CCR): writing back a value just read
//!   clears every pending flag;
//! - reset actions (P, C): writing 1 zeroes counters, and reads are Unpredictable, so a
//!   value read back may hold a 1 there.
//!
//! So a read-modify-write must start from [`for_write_back`], which zeroes the flags and
//! the reset actions; the caller then sets exactly the flag it means to clear.

use pmu_core::{Error, Slot};
use tock_registers::fields::Field;
use tock_registers::LocalRegisterCopy;

use crate::event::Arm1176Event;

/// The `mrc`/`mcr` operands of PMCR (`{0}` is the core register).
pub const OPERANDS: &str = crate::cp15::cp15_operands!(PMCR);

// tock-registers generates `Register`, `SET` and `CLEAR` without docs; the fields
// themselves carry the TRM's description.
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! {u32,
        /// The fields of PMCR, named as in ARM1176JZF-S TRM Table 3-136.
        pub PMCR [
            /// EvtCount0, bits \[27:20\]: the event Count Register 0 counts (Table 3-137).
            EvtCount0 OFFSET(20) NUMBITS(8) [],
            /// EvtCount1, bits \[19:12\]: the event Count Register 1 counts (Table 3-137).
            EvtCount1 OFFSET(12) NUMBITS(8) [],
            /// X, bit \[11\]: export the events to the event bus for an external monitor
            /// such as the ETM (0 = off, the reset value). Must stay 0 for a counter parked on
            /// ETMEXTOUT\[0\] to stand still (Linux's comment in arm_v6_pmu.c).
            X OFFSET(11) NUMBITS(1) [],
            /// CCR, bit \[10\]: Cycle Counter Register overflow flag. Reads 1 after an
            /// overflow; writing 1 clears it, writing 0 leaves it.
            CCR OFFSET(10) NUMBITS(1) [],
            /// CR1, bit \[9\]: Count Register 1 overflow flag (write 1 to clear).
            CR1 OFFSET(9) NUMBITS(1) [],
            /// CR0, bit \[8\]: Count Register 0 overflow flag (write 1 to clear).
            CR0 OFFSET(8) NUMBITS(1) [],
            /// ECC, bit \[6\]: interrupt on a Cycle Counter Register overflow. The Raspberry
            /// Pi's ARM11 has no such interrupt wired (Linux 6.12 arch/arm/boot/dts/broadcom/bcm2835.dtsi: its `arm,arm1176-pmu` node has no `interrupts`).
            ECC OFFSET(6) NUMBITS(1) [],
            /// EC1, bit \[5\]: interrupt on a Count Register 1 overflow.
            EC1 OFFSET(5) NUMBITS(1) [],
            /// EC0, bit \[4\]: interrupt on a Count Register 0 overflow.
            EC0 OFFSET(4) NUMBITS(1) [],
            /// D, bit \[3\]: cycle count divider.
            D OFFSET(3) NUMBITS(1) [
                /// The CCR counts every cycle (reset value).
                EveryCycle = 0,
                /// The CCR counts every 64th cycle.
                Every64thCycle = 1
            ],
            /// C, bit \[2\]: writing 1 resets the Cycle Counter Register to 0. Reads are
            /// Unpredictable.
            C OFFSET(2) NUMBITS(1) [],
            /// P, bit \[1\]: writing 1 resets Count Registers 0 and 1 to 0. Reads are
            /// Unpredictable.
            P OFFSET(1) NUMBITS(1) [],
            /// E, bit \[0\]: enable all three counters (0 = all stopped, the reset value).
            E OFFSET(0) NUMBITS(1) []
        ]
    }
}
pub use fields::PMCR;

/// A PMCR value.
pub type Pmcr = LocalRegisterCopy<u32, PMCR::Register>;

/// A PMCR field.
pub type PmcrField = Field<u32, PMCR::Register>;

const fn bits(field: PmcrField) -> u32 {
    field.mask << field.shift
}

/// The three overflow flags, bits \[10:8\] (write 1 to clear).
pub const OVERFLOW_FLAGS: u32 = bits(PMCR::CR0) | bits(PMCR::CR1) | bits(PMCR::CCR);

/// The reset actions P and C (act on write, Unpredictable on read).
pub const RESET_ACTIONS: u32 = bits(PMCR::P) | bits(PMCR::C);

/// The three interrupt enables, bits \[6:4\].
pub const INTERRUPT_ENABLES: u32 = bits(PMCR::EC0) | bits(PMCR::EC1) | bits(PMCR::ECC);

/// Bits \[31:28\] and \[7\]: no field (UNP/SBZP).
pub const RESERVED: u32 = !(bits(PMCR::EvtCount0)
    | bits(PMCR::EvtCount1)
    | bits(PMCR::X)
    | OVERFLOW_FLAGS
    | INTERRUPT_ENABLES
    | bits(PMCR::D)
    | RESET_ACTIONS
    | bits(PMCR::E));

/// The value to start a read-modify-write from: `read` with the overflow flags and the
/// reset actions zeroed (and the reserved bits, which should be zero), so writing it
/// back clears no pending flag and resets no counter.
pub fn for_write_back(read: Pmcr) -> Pmcr {
    Pmcr::new(read.get() & !(OVERFLOW_FLAGS | RESET_ACTIONS | RESERVED))
}

/// The PMCR value that clears the overflow flags of `flags` (any of bits 10:8) and
/// changes nothing else, from `read`, the value PMCR reads now: [`for_write_back`] with
/// the flags of `flags` written as 1 (write-1-to-clear) and the interrupt enables
/// cleared (user-space code never enables the overflow interrupt).
pub fn clearing_flags(read: Pmcr, flags: u32) -> Pmcr {
    Pmcr::new(for_write_back(read).get() & !INTERRUPT_ENABLES | flags & OVERFLOW_FLAGS)
}

/// The event `counter` is set to count in `pmcr` (always 0xFF for the CCR).
///
/// # Errors
/// [`Error::EventNotImplemented`] when the field holds a reserved number.
pub fn event(pmcr: Pmcr, counter: CounterRegister) -> Result<Arm1176Event, Error> {
    match counter.event_field() {
        // The field is 8 bits wide, so the cast loses nothing.
        Some(field) => Arm1176Event::try_from(pmcr.read(field) as u8),
        None => Ok(Arm1176Event::CycleCount),
    }
}

/// One of the three counters PMCR controls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CounterRegister {
    /// The Cycle Counter Register: counts cycles (or every 64th with PMCR.D).
    Ccr,
    /// Count Register 0: counts the event in PMCR.EvtCount0.
    Cr0,
    /// Count Register 1: counts the event in PMCR.EvtCount1.
    Cr1,
}

impl CounterRegister {
    /// All three, CCR first.
    pub const ALL: [Self; 3] = [Self::Ccr, Self::Cr0, Self::Cr1];

    /// The register's name in the TRM.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Ccr => "CCR",
            Self::Cr0 => "CR0",
            Self::Cr1 => "CR1",
        }
    }

    /// Its overflow flag in PMCR.
    pub const fn overflow_flag(self) -> PmcrField {
        match self {
            Self::Ccr => PMCR::CCR,
            Self::Cr0 => PMCR::CR0,
            Self::Cr1 => PMCR::CR1,
        }
    }

    /// Its interrupt enable in PMCR.
    pub const fn interrupt_enable(self) -> PmcrField {
        match self {
            Self::Ccr => PMCR::ECC,
            Self::Cr0 => PMCR::EC0,
            Self::Cr1 => PMCR::EC1,
        }
    }

    /// Its event field in PMCR; `None` for the CCR, which only counts cycles.
    pub const fn event_field(self) -> Option<PmcrField> {
        match self {
            Self::Ccr => None,
            Self::Cr0 => Some(PMCR::EvtCount0),
            Self::Cr1 => Some(PMCR::EvtCount1),
        }
    }

    /// The [`Slot`] the [`crate::Arm1176Pmu`] gives it: CCR is fixed counter 0, CR0
    /// and CR1 are programmable counters 0 and 1.
    pub const fn slot(self) -> Slot {
        match self {
            Self::Ccr => Slot::Fixed(0),
            Self::Cr0 => Slot::Programmable(0),
            Self::Cr1 => Slot::Programmable(1),
        }
    }

    /// The counter behind `slot`, `None` for a slot the ARM1176 does not have.
    pub const fn from_slot(slot: Slot) -> Option<Self> {
        match slot {
            Slot::Fixed(0) => Some(Self::Ccr),
            Slot::Programmable(0) => Some(Self::Cr0),
            Slot::Programmable(1) => Some(Self::Cr1),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Clearing CR0's flag (bit 8) from 0x00705707 | all three flags | ECC (TRM 3.2.51,
    /// Table 3-136): E, the event fields and D stay; the CR0 flag is written 1, the
    /// other two 0 (left pending); the reset actions (bits 2, 1) and the interrupt
    /// enable are written 0; nothing outside bits 10:8 of `flags` is written as a flag.
    #[test]
    fn clearing_one_flag_leaves_the_rest() {
        let read = Pmcr::new(0x0070_5709 | OVERFLOW_FLAGS | bits(PMCR::ECC));
        let written = clearing_flags(read, bits(PMCR::CR0) | 1 << 31 | 1 << 2);
        assert_eq!(written.get(), 0x0070_5009 | bits(PMCR::CR0));
        assert!(written.is_set(PMCR::E));
        assert!(!written.is_set(PMCR::ECC));
        assert!(!written.is_set(PMCR::CR1) && !written.is_set(PMCR::CCR));
    }

    /// TRM Tables 3-136 and 3-137: CR0 counting instructions (0x07 in EvtCount0, bits
    /// 27:20), CR1 branches (0x05 in EvtCount1, bits 19:12), the counters reset, the
    /// overflow flags cleared and E set is 0x00705707, the usual first Raspberry Pi 1
    /// configuration.
    #[test]
    fn instructions_and_branches_configuration() {
        let mut pmcr = Pmcr::new(0);
        pmcr.modify(
            PMCR::EvtCount0.val(Arm1176Event::InstructionExecuted.code().into())
                + PMCR::EvtCount1.val(Arm1176Event::BranchExecuted.code().into())
                + PMCR::CCR::SET
                + PMCR::CR1::SET
                + PMCR::CR0::SET
                + PMCR::C::SET
                + PMCR::P::SET
                + PMCR::E::SET,
        );
        assert_eq!(pmcr.get(), 0x0070_5707);

        let decoded = Pmcr::new(0x0070_5707);
        assert_eq!(
            event(decoded, CounterRegister::Cr0),
            Ok(Arm1176Event::InstructionExecuted)
        );
        assert_eq!(
            event(decoded, CounterRegister::Cr1),
            Ok(Arm1176Event::BranchExecuted)
        );
        assert_eq!(
            event(decoded, CounterRegister::Ccr),
            Ok(Arm1176Event::CycleCount)
        );
        for counter in CounterRegister::ALL {
            assert!(
                decoded.is_set(counter.overflow_flag()),
                "{}",
                counter.name()
            );
            assert!(!decoded.is_set(counter.interrupt_enable()));
        }
        assert!(decoded.is_set(PMCR::E));
        assert!(decoded.is_set(PMCR::P));
        assert!(decoded.is_set(PMCR::C));
        assert_eq!(
            decoded.read_as_enum(PMCR::D),
            Some(PMCR::D::Value::EveryCycle)
        );
        assert!(!decoded.is_set(PMCR::X));
        assert_eq!(decoded.get() & RESERVED, 0);
    }

    /// TRM Tables 3-136 and 3-137: CR0 counting instruction cache misses (0x00), CR1
    /// data cache misses (0x0B), reset, flags cleared and E set is 0x0000B707.
    #[test]
    fn icache_and_dcache_misses_configuration() {
        let mut pmcr = Pmcr::new(0);
        pmcr.modify(
            PMCR::EvtCount0.val(Arm1176Event::InstructionCacheMiss.code().into())
                + PMCR::EvtCount1.val(Arm1176Event::DataCacheMiss.code().into())
                + PMCR::CCR::SET
                + PMCR::CR1::SET
                + PMCR::CR0::SET
                + PMCR::C::SET
                + PMCR::P::SET
                + PMCR::E::SET,
        );
        assert_eq!(pmcr.get(), 0x0000_b707);

        let decoded = Pmcr::new(0x0000_b707);
        assert_eq!(
            event(decoded, CounterRegister::Cr0),
            Ok(Arm1176Event::InstructionCacheMiss)
        );
        assert_eq!(
            event(decoded, CounterRegister::Cr1),
            Ok(Arm1176Event::DataCacheMiss)
        );
        assert_eq!(decoded.read(PMCR::EvtCount1), 0x0B);
        assert_eq!(decoded.get() & OVERFLOW_FLAGS, 0x700);
        assert_eq!(decoded.get() & RESET_ACTIONS, 0x6);
    }

    /// Bit positions of Linux's `ARMV6_PMCR_*` defines (drivers/perf/arm_v6_pmu.c).
    #[test]
    fn linux_bit_positions() {
        assert_eq!(bits(PMCR::E), 1 << 0); // ENABLE
        assert_eq!(bits(PMCR::P), 1 << 1); // CTR01_RESET
        assert_eq!(bits(PMCR::C), 1 << 2); // CCOUNT_RESET
        assert_eq!(bits(PMCR::D), 1 << 3); // CCOUNT_DIV
        assert_eq!(bits(PMCR::EC0), 1 << 4); // COUNT0_IEN
        assert_eq!(bits(PMCR::EC1), 1 << 5); // COUNT1_IEN
        assert_eq!(bits(PMCR::ECC), 1 << 6); // CCOUNT_IEN
        assert_eq!(bits(PMCR::CR0), 1 << 8); // COUNT0_OVERFLOW
        assert_eq!(bits(PMCR::CR1), 1 << 9); // COUNT1_OVERFLOW
        assert_eq!(bits(PMCR::CCR), 1 << 10); // CCOUNT_OVERFLOW
        assert_eq!(bits(PMCR::EvtCount0), 0xFF << 20); // EVT_COUNT0_MASK
        assert_eq!(bits(PMCR::EvtCount1), 0xFF << 12); // EVT_COUNT1_MASK
        assert_eq!(OVERFLOW_FLAGS, 0x700); // OVERFLOWED_MASK
        assert_eq!(RESERVED, 0xF000_0080);
    }

    /// The write-1-to-clear rule (TRM Table 3-136: a flag is cleared by writing 1 to it, not 0):
    /// writing back a value with pending flags, P or C would clear or reset; the
    /// write-back base keeps everything else.
    #[test]
    fn write_back_base_clears_only_action_bits() {
        let read = Pmcr::new(0x0070_5779 | RESET_ACTIONS | OVERFLOW_FLAGS);
        let base = for_write_back(read);
        assert_eq!(base.get() & (OVERFLOW_FLAGS | RESET_ACTIONS), 0);
        assert_eq!(
            base.get(),
            read.get() & !(OVERFLOW_FLAGS | RESET_ACTIONS | RESERVED)
        );
        assert!(base.is_set(PMCR::E));
        assert!(base.is_set(PMCR::D));
        assert_eq!(base.read(PMCR::EvtCount0), 0x07);
    }

    /// A reserved number in an event field decodes to a typed error (TRM Table 3-137).
    #[test]
    fn reserved_event_field_is_an_error() {
        let mut pmcr = Pmcr::new(0);
        pmcr.modify(PMCR::EvtCount0.val(0x08) + PMCR::EvtCount1.val(0x0E));
        assert_eq!(
            event(pmcr, CounterRegister::Cr0),
            Err(Error::EventNotImplemented { code: 0x08 })
        );
        assert_eq!(
            event(pmcr, CounterRegister::Cr1),
            Err(Error::EventNotImplemented { code: 0x0E })
        );
    }

    #[test]
    fn slots_round_trip() {
        for counter in CounterRegister::ALL {
            assert_eq!(CounterRegister::from_slot(counter.slot()), Some(counter));
        }
        assert_eq!(CounterRegister::from_slot(Slot::Fixed(1)), None);
        assert_eq!(CounterRegister::from_slot(Slot::Programmable(2)), None);
    }
}
