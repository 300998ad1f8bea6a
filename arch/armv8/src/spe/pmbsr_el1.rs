//! PMBSR_EL1, Profiling Buffer Status/syndrome Register: why the profiling unit stopped
//! (buffer full, a fault on a buffer write, ...). Decoded into [`BufferSyndrome`].
//!
//! Source: Arm ARM DDI 0487 M.a.a D24.7.5; Linux 6.12 `arch/arm64/tools/sysreg`
//! (`Sysreg PMBSR_EL1 3 0 9 10 3`: EC 31:26 BUF/FAULT_S1/FAULT_S2/FAULT_GPC/IMP_DEF, DL 19,
//! EA 18, S 17, COLL 16, MSS 15:0) and `arch/arm64/include/asm/sysreg.h`
//! (`PMBSR_EL1_BUF_BSC_FULL`); `arm_spe_pmu_buf_get_fault_act()` in
//! drivers/perf/arm_spe_pmu.c reads it the same way. MSS2 is from the Arm ARM only.

use tock_registers::{register_bitfields, LocalRegisterCopy};

register_bitfields! {u64,
    /// PMBSR_EL1 fields.
    // The macro generates `Register`, `SET`/`CLEAR` and `Value` items without docs.
    #[allow(missing_docs)]
    pub PMBSR_EL1 [
        /// Management event Specific Syndrome 2 (fault details with FEAT_THE, S1POE/S2POE,
        /// S1PIE/S2PIE; IMPLEMENTATION DEFINED for EC 0b011111).
        MSS2 OFFSET(32) NUMBITS(24) [],
        /// Event class: the top-level cause of the management event.
        EC OFFSET(26) NUMBITS(6) [
            /// Other buffer management event; MSS holds a buffer status code (BSC).
            Buffer = 0b000000,
            /// Granule Protection Check fault on a buffer write (FEAT_RME).
            GranuleProtectionCheckFault = 0b011110,
            /// Buffer management event for an IMPLEMENTATION DEFINED reason.
            ImplementationDefined = 0b011111,
            /// Stage 1 Data Abort on a buffer write; MSS holds a fault status code (FSC).
            Stage1DataAbort = 0b100100,
            /// Stage 2 Data Abort on a buffer write; MSS holds a fault status code (FSC).
            Stage2DataAbort = 0b100101,
        ],
        /// Partial record lost: PMBPTR_EL1 may not point after a complete record.
        DL OFFSET(19) NUMBITS(1) [],
        /// External abort asserted and detected by the profiling unit.
        EA OFFSET(18) NUMBITS(1) [],
        /// Service: a buffer management event for EL1 has been recorded (drives PMBIRQ).
        S OFFSET(17) NUMBITS(1) [],
        /// Collision detected: at least one sample was dropped because the previous one was
        /// still in flight.
        COLL OFFSET(16) NUMBITS(1) [],
        /// Management Event Specific Syndrome; bits \[5:0\] are BSC or FSC depending on EC.
        MSS OFFSET(0) NUMBITS(16) [],
    ]
}

/// A PMBSR_EL1 value.
pub type PmbsrEl1 = LocalRegisterCopy<u64, PMBSR_EL1::Register>;

/// Buffer status code, MSS\[5:0\] when EC is 0 (Arm ARM D24.7.5 BSC table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BufferStatus {
    /// 0b000000: collection not stopped, or access not allowed.
    NotStopped,
    /// 0b000001: the profiling buffer filled (`PMBSR_EL1_BUF_BSC_FULL`).
    Filled,
    /// 0b000100: the requested profiling buffer size was too large.
    SizeTooLarge,
    /// Any other code: reserved.
    Reserved(u8),
}

/// What a buffer management event was, from EC and MSS.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ManagementEvent {
    /// EC 0b000000, with the buffer status code.
    Buffer(BufferStatus),
    /// EC 0b100100: stage 1 Data Abort on a buffer write, with the fault status code
    /// (the ESR_ELx.DFSC encoding).
    Stage1DataAbort {
        /// MSS\[5:0\], fault status code.
        fsc: u8,
    },
    /// EC 0b100101: stage 2 Data Abort on a buffer write, with the fault status code.
    Stage2DataAbort {
        /// MSS\[5:0\], fault status code.
        fsc: u8,
    },
    /// EC 0b011110: Granule Protection Check fault on a buffer write (FEAT_RME).
    GranuleProtectionCheckFault,
    /// EC 0b011111: IMPLEMENTATION DEFINED reason, with the raw MSS.
    ImplementationDefined {
        /// MSS\[15:0\].
        mss: u16,
    },
    /// A reserved EC value.
    ReservedClass(u8),
}

/// A decoded PMBSR_EL1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BufferSyndrome {
    /// S: a management event was recorded (if 0, the rest describes no event).
    pub service: bool,
    /// DL: the last record may be partial; restarting may give an unparseable stream.
    pub data_lost: bool,
    /// EA: an External abort was detected.
    pub external_abort: bool,
    /// COLL: samples were lost to collisions; a longer interval helps.
    pub collision: bool,
    /// The event class and its syndrome.
    pub event: ManagementEvent,
}

/// Decodes a PMBSR_EL1 value. Total: reserved codes become `Reserved*` variants.
pub fn decode(value: PmbsrEl1) -> BufferSyndrome {
    // MSS is 16 bits and its status codes 6 bits, so the narrowings below lose nothing.
    let mss = value.read(PMBSR_EL1::MSS) as u16;
    let code = (mss & 0x3F) as u8;
    let event = match value.read(PMBSR_EL1::EC) as u8 {
        0b00_0000 => ManagementEvent::Buffer(match code {
            0b00_0000 => BufferStatus::NotStopped,
            0b00_0001 => BufferStatus::Filled,
            0b00_0100 => BufferStatus::SizeTooLarge,
            other => BufferStatus::Reserved(other),
        }),
        0b01_1110 => ManagementEvent::GranuleProtectionCheckFault,
        0b01_1111 => ManagementEvent::ImplementationDefined { mss },
        0b10_0100 => ManagementEvent::Stage1DataAbort { fsc: code },
        0b10_0101 => ManagementEvent::Stage2DataAbort { fsc: code },
        other => ManagementEvent::ReservedClass(other),
    };
    BufferSyndrome {
        service: value.is_set(PMBSR_EL1::S),
        data_lost: value.is_set(PMBSR_EL1::DL),
        external_abort: value.is_set(PMBSR_EL1::EA),
        collision: value.is_set(PMBSR_EL1::COLL),
        event,
    }
}

spe_register_access!(PmbsrEl1, read_pmbsr_el1, write_pmbsr_el1, "PMBSR_EL1");

#[cfg(test)]
mod tests {
    use super::*;

    /// Linux 6.12 arch/arm64/tools/sysreg: COLL 16, S 17, EA 18, DL 19, EC 31:26, MSS 15:0.
    #[test]
    fn field_positions() {
        assert_eq!(PMBSR_EL1::COLL.val(1).value, 1 << 16);
        assert_eq!(PMBSR_EL1::S.val(1).value, 1 << 17);
        assert_eq!(PMBSR_EL1::EA.val(1).value, 1 << 18);
        assert_eq!(PMBSR_EL1::DL.val(1).value, 1 << 19);
        assert_eq!(PMBSR_EL1::EC.val(0x3F).value, 0x3F << 26);
        assert_eq!(PMBSR_EL1::MSS.val(0xFFFF).value, 0xFFFF);
    }

    /// Linux `arm_spe_pmu_buf_get_fault_act()`: S set, EC = BUF, BSC = FULL (0x1) is the normal
    /// "buffer full" interrupt.
    #[test]
    fn buffer_full() {
        let raw = (1 << 17) | 0x1;
        let s = decode(PmbsrEl1::new(raw));
        assert!(s.service && !s.data_lost && !s.collision && !s.external_abort);
        assert_eq!(s.event, ManagementEvent::Buffer(BufferStatus::Filled));
    }

    /// Arm ARM D24.7.5: EC 0b100100 stage 1 abort with FSC 0b000111 (translation fault, level
    /// 3), plus DL and COLL; EC 0b100101 stage 2; GPC; IMPLEMENTATION DEFINED; reserved.
    #[test]
    fn fault_classes() {
        let s1 = decode(PmbsrEl1::new(
            (0b10_0100 << 26) | (1 << 19) | (1 << 17) | (1 << 16) | 0b00_0111,
        ));
        assert_eq!(
            s1.event,
            ManagementEvent::Stage1DataAbort { fsc: 0b00_0111 }
        );
        assert!(s1.data_lost && s1.collision && s1.service);
        assert_eq!(
            decode(PmbsrEl1::new(0b10_0101 << 26)).event,
            ManagementEvent::Stage2DataAbort { fsc: 0 }
        );
        assert_eq!(
            decode(PmbsrEl1::new(0b01_1110 << 26)).event,
            ManagementEvent::GranuleProtectionCheckFault
        );
        assert_eq!(
            decode(PmbsrEl1::new((0b01_1111 << 26) | 0xBEEF)).event,
            ManagementEvent::ImplementationDefined { mss: 0xBEEF }
        );
        assert_eq!(
            decode(PmbsrEl1::new(0b00_0001 << 26)).event,
            ManagementEvent::ReservedClass(1)
        );
        assert_eq!(
            decode(PmbsrEl1::new(0b00_0100)).event,
            ManagementEvent::Buffer(BufferStatus::SizeTooLarge)
        );
        assert_eq!(
            decode(PmbsrEl1::new(0b00_0010)).event,
            ManagementEvent::Buffer(BufferStatus::Reserved(2))
        );
    }

    /// Decoding is total: no value panics.
    #[test]
    fn decode_never_panics() {
        use proptest::prelude::*;
        proptest!(|(raw: u64)| {
            let s = decode(PmbsrEl1::new(raw));
            prop_assert_eq!(s.service, raw & (1 << 17) != 0);
        });
    }
}
