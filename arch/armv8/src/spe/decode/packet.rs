//! The packets of an SPE record and what their payload fields mean.
//!
//! Sources: Arm ARM DDI 0487 M.a.a D18.2 (Address packet: index 0 PC, 1 branch target, 2 data
//! virtual address, 3 data physical address, 4 previous branch target; Counter packet: index 0
//! total latency, 1 issue latency, 2 translation latency; Operation Type classes; Context
//! packet); the same encodings as `SPE_ADDR_PKT_*`, `SPE_CNT_PKT_*` and `SPE_OP_PKT_*` in Linux
//! perf's `arm-spe-pkt-decoder.h`.

use crate::spe::config::OperationTypes;
use crate::spe::events::SpeEvents;

/// One SPE packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Packet {
    /// Padding (`0x00`): no meaning, fills space.
    Padding,
    /// End of a record (`0x01`) without a timestamp.
    End,
    /// Alignment: the next packet starts at the next `alignment`-byte boundary.
    Alignment {
        /// The boundary in bytes (2, 4, 8 or 16).
        alignment: u8,
    },
    /// Timestamp, also ending a record.
    Timestamp(u64),
    /// An address (PC, branch target, data virtual or physical address).
    Address(AddressPacket),
    /// A counter (total, issue or translation latency).
    Counter(CounterPacket),
    /// CONTEXTIDR_EL1 or CONTEXTIDR_EL2.
    Context(ContextPacket),
    /// Operation type.
    OperationType(OperationTypePacket),
    /// Events of the sampled operation.
    Events(EventsPacket),
    /// Data source of a load.
    DataSource(DataSourcePacket),
}

impl Packet {
    /// A short name (`PAD`, `END`, `ALIGN`, `TS`, `ADDR`, `LAT`, `CONTEXT`, `OP-TYPE`,
    /// `EVENTS`, `DATA-SOURCE`).
    pub const fn name(&self) -> &'static str {
        match self {
            Self::Padding => "PAD",
            Self::End => "END",
            Self::Alignment { .. } => "ALIGN",
            Self::Timestamp(_) => "TS",
            Self::Address(_) => "ADDR",
            Self::Counter(_) => "LAT",
            Self::Context(_) => "CONTEXT",
            Self::OperationType(_) => "OP-TYPE",
            Self::Events(_) => "EVENTS",
            Self::DataSource(_) => "DATA-SOURCE",
        }
    }

    /// Whether this packet ends a record (End or Timestamp).
    pub const fn ends_record(&self) -> bool {
        matches!(self, Self::End | Self::Timestamp(_))
    }
}

/// What an Address packet's index says it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AddressKind {
    /// Index 0: virtual address of the sampled instruction (PC).
    InstructionVirtual,
    /// Index 1: branch target address.
    BranchTarget,
    /// Index 2: data access virtual address.
    DataVirtual,
    /// Index 3: data access physical address.
    DataPhysical,
    /// Index 4: previous branch target address (FEAT_SPE_PBT).
    PreviousBranchTarget,
    /// Any other index (reserved or IMPLEMENTATION DEFINED).
    Other(u8),
}

impl AddressKind {
    /// An instruction address (PC, branch target, previous branch target): its header
    /// bits \[63:56\] hold NS and EL ([`AddressPacket::non_secure`],
    /// [`AddressPacket::exception_level`]).
    pub const fn is_instruction(self) -> bool {
        matches!(
            self,
            Self::InstructionVirtual | Self::BranchTarget | Self::PreviousBranchTarget
        )
    }
}

/// An Address packet: a 5-bit index and a 64-bit payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AddressPacket {
    /// Header index (0..=31).
    pub index: u8,
    /// The raw 64-bit payload.
    pub payload: u64,
}

const ADDRESS_BITS: u64 = (1 << 56) - 1;

impl AddressPacket {
    pub(super) const fn new(index: u8, payload: u64) -> Self {
        Self { index, payload }
    }

    /// What the address is.
    pub const fn kind(&self) -> AddressKind {
        match self.index {
            0 => AddressKind::InstructionVirtual,
            1 => AddressKind::BranchTarget,
            2 => AddressKind::DataVirtual,
            3 => AddressKind::DataPhysical,
            4 => AddressKind::PreviousBranchTarget,
            other => AddressKind::Other(other),
        }
    }

    /// Address bits \[55:0\] (the whole address of instruction and physical kinds).
    pub const fn address_bits(&self) -> u64 {
        self.payload & ADDRESS_BITS
    }

    /// The address as a virtual address.
    ///
    /// - Instruction kinds (PC, branch target, previous branch target): bits \[55:0\]
    ///   sign-extended from bit 55, since bits \[63:56\] carry NS and EL, not address bits,
    ///   and bit 55 selects the TTBR0 (user) or TTBR1 (kernel) half of the address space.
    ///   Deliberately not perf's rule (`arm_spe_calc_ip()` in
    ///   tools/perf/util/arm-spe-decoder/arm-spe-decoder.c fills the top byte with 0xFF only
    ///   when NS = 1 and EL is 1 or 2): that rule leaves Secure-state kernel addresses
    ///   non-canonical and sign-extends nothing at EL0. The two agree on every Non-secure
    ///   address whose bit 55 matches its Exception level's half.
    /// - Data virtual address: bits \[63:56\] are the top-byte tag (Arm ARM D18.2 Address
    ///   packet; [`Self::tag`]), so they are cleared, and filled with 0xFF when bits \[55:52\]
    ///   are all ones (a TTBR1, kernel, address), exactly as perf's `arm_spe_calc_ip()`
    ///   does, so data addresses match kernel symbols as perf's do.
    /// - Physical and other kinds: the address bits \[55:0\].
    pub const fn virtual_address(&self) -> u64 {
        match self.kind() {
            AddressKind::InstructionVirtual
            | AddressKind::BranchTarget
            | AddressKind::PreviousBranchTarget => {
                let bits = self.address_bits();
                if bits & (1 << 55) != 0 {
                    bits | !ADDRESS_BITS
                } else {
                    bits
                }
            }
            AddressKind::DataVirtual => {
                let bits = self.address_bits();
                if (bits >> 52) & 0xF == 0xF {
                    bits | !ADDRESS_BITS
                } else {
                    bits
                }
            }
            _ => self.address_bits(),
        }
    }

    /// Data virtual address kind: the top-byte tag, bits \[63:56\] (the pointer's tag under
    /// TBI, e.g. an MTE tag in bits \[59:56\]).
    pub const fn tag(&self) -> u8 {
        (self.payload >> 56) as u8
    }

    /// Instruction kinds: the Exception level, bits \[62:61\].
    pub const fn exception_level(&self) -> u8 {
        ((self.payload >> 61) & 0b11) as u8
    }

    /// Instruction and physical kinds: NS, bit 63 (Non-secure).
    pub const fn non_secure(&self) -> bool {
        self.payload >> 63 != 0
    }

    /// Physical kind: CH, bit 62 (tag checked access).
    pub const fn checked(&self) -> bool {
        (self.payload >> 62) & 1 != 0
    }

    /// Physical kind: PAT, bits \[59:56\] (physical address tag).
    pub const fn physical_tag(&self) -> u8 {
        ((self.payload >> 56) & 0xF) as u8
    }

    /// Header bits \[63:56\] as this kind defines them, the others `None`: EL and NS for
    /// instruction addresses, the tag for data virtual addresses, NS, CH and PAT for
    /// physical ones (Arm ARM D18.2 Address packet).
    pub const fn attributes(&self) -> AddressAttributes {
        let kind = self.kind();
        let instruction = kind.is_instruction();
        let physical = matches!(kind, AddressKind::DataPhysical);
        AddressAttributes {
            exception_level: if instruction {
                Some(self.exception_level())
            } else {
                None
            },
            non_secure: if instruction || physical {
                Some(self.non_secure())
            } else {
                None
            },
            tag: if matches!(kind, AddressKind::DataVirtual) {
                Some(self.tag())
            } else {
                None
            },
            checked: if physical { Some(self.checked()) } else { None },
            physical_tag: if physical {
                Some(self.physical_tag())
            } else {
                None
            },
        }
    }
}

/// The header bits of an Address packet that its kind defines ([`AddressPacket::attributes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct AddressAttributes {
    /// Instruction kinds: EL, bits \[62:61\].
    pub exception_level: Option<u8>,
    /// Instruction and physical kinds: NS, bit 63.
    pub non_secure: Option<bool>,
    /// Data virtual address: the top-byte tag, bits \[63:56\].
    pub tag: Option<u8>,
    /// Physical kind: CH, bit 62 (tag checked access).
    pub checked: Option<bool>,
    /// Physical kind: PAT, bits \[59:56\].
    pub physical_tag: Option<u8>,
}

/// What a Counter packet's index says it counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CounterKind {
    /// Index 0: total latency, issue to complete (what PMSLATFR_EL1 filters on).
    TotalLatency,
    /// Index 1: issue latency, dispatch to issue.
    IssueLatency,
    /// Index 2: translation latency.
    TranslationLatency,
    /// Any other index.
    Other(u8),
}

/// A Counter packet: a 5-bit index and the counter value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CounterPacket {
    /// Header index (0..=31).
    pub index: u8,
    /// The counter value (saturated at the PMSIDR_EL1.CountSize width).
    pub value: u64,
}

impl CounterPacket {
    pub(super) const fn new(index: u8, value: u64) -> Self {
        Self { index, value }
    }

    /// What the counter counts.
    pub const fn kind(&self) -> CounterKind {
        match self.index {
            0 => CounterKind::TotalLatency,
            1 => CounterKind::IssueLatency,
            2 => CounterKind::TranslationLatency,
            other => CounterKind::Other(other),
        }
    }
}

/// A Context packet.
///
/// Serialized (feature `serde`) as `{register, value}`: the index as the register it names
/// ([`Self::register`]), a reserved one as `context index N (reserved)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ContextPacket {
    /// Header index: 0 CONTEXTIDR_EL1, 1 CONTEXTIDR_EL2, others reserved.
    #[cfg_attr(
        feature = "serde",
        serde(rename = "register", with = "crate::spe::serialize::context_register")
    )]
    pub index: u8,
    /// The context ID.
    pub value: u64,
}

impl ContextPacket {
    pub(super) const fn new(index: u8, value: u64) -> Self {
        Self { index, value }
    }

    /// The register the index names (Arm ARM D18.2 Context packet: CT 0 `CONTEXTIDR_EL1`,
    /// 1 `CONTEXTIDR_EL2`); `None` for a reserved index.
    pub const fn register(&self) -> Option<&'static str> {
        match self.index {
            0 => Some("CONTEXTIDR_EL1"),
            1 => Some("CONTEXTIDR_EL2"),
            _ => None,
        }
    }
}

/// The class of an Operation Type packet (header bits \[1:0\]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OperationClass {
    /// 0b00: other (including SVE operations that are not loads/stores).
    Other,
    /// 0b01: load, store or atomic.
    LoadStoreAtomic,
    /// 0b10: branch or exception return.
    BranchOrExceptionReturn,
    /// 0b11: reserved.
    Reserved,
}

impl OperationClass {
    /// The class in a word or two: `other`, `load/store/atomic`, `branch` (branch or
    /// exception return), `reserved`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Other => "other",
            Self::LoadStoreAtomic => "load/store/atomic",
            Self::BranchOrExceptionReturn => "branch",
            Self::Reserved => "reserved",
        }
    }
}

/// An Operation Type packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OperationTypePacket {
    /// Header bits \[1:0\].
    pub class_bits: u8,
    /// The payload (its meaning depends on the class).
    pub payload: u64,
}

impl OperationTypePacket {
    pub(super) const fn new(class_bits: u8, payload: u64) -> Self {
        Self {
            class_bits,
            payload,
        }
    }

    /// The class.
    pub const fn class(&self) -> OperationClass {
        match self.class_bits & 0b11 {
            0b00 => OperationClass::Other,
            0b01 => OperationClass::LoadStoreAtomic,
            0b10 => OperationClass::BranchOrExceptionReturn,
            _ => OperationClass::Reserved,
        }
    }

    /// Load/store class: whether payload bit 0 (ST) says store. For atomics and exclusives
    /// it gives the direction too (perf prints `LD AT` or `ST AT`).
    pub const fn is_store(&self) -> bool {
        self.payload & 1 != 0
    }

    /// The operation as the type filter sees it: loads and stores by payload bit 0 (ST), an
    /// atomic (subclass `0b000x_x1x` with AT, bit 2) as both, branches, or none.
    pub fn operation_types(&self) -> OperationTypes {
        match self.class() {
            OperationClass::LoadStoreAtomic => {
                if self.is_atomic() {
                    OperationTypes::LOADS | OperationTypes::STORES
                } else if self.is_store() {
                    OperationTypes::STORES
                } else {
                    OperationTypes::LOADS
                }
            }
            OperationClass::BranchOrExceptionReturn => OperationTypes::BRANCHES,
            _ => OperationTypes::empty(),
        }
    }

    /// Load/store class, atomic/exclusive/acquire-release subclass (payload
    /// `0b000x_xx1x`, perf `SPE_OP_PKT_IS_LDST_ATOMIC`) with AT (bit 2) set.
    pub const fn is_atomic(&self) -> bool {
        self.is_ldst_atomic_subclass() && self.payload & 0b100 != 0
    }

    const fn is_ldst_atomic_subclass(&self) -> bool {
        matches!(self.class(), OperationClass::LoadStoreAtomic)
            && self.payload & 0b1110_0010 == 0b10
    }

    /// The SVE effective vector length in bits, for an SVE load/store (payload
    /// `0bxxxx_1x0x`) or an SVE "other" operation (`0b0xxx_1xx0`): 32 << EVL (bits \[6:4\]),
    /// perf's `SPE_OP_PKG_SVE_EVL`.
    pub const fn sve_evlen(&self) -> Option<u32> {
        let sve = match self.class() {
            OperationClass::LoadStoreAtomic => self.payload & 0b1010 == 0b1000,
            OperationClass::Other => self.payload & 0b1000_1001 == 0b1000,
            _ => false,
        };
        if sve {
            Some(32 << ((self.payload >> 4) & 0b111))
        } else {
            None
        }
    }

    /// The sub-fields of the payload by the names perf prints, in perf's order
    /// (`arm_spe_pkt_desc_op_type()` in tools/perf/util/arm-spe-decoder/arm-spe-pkt-decoder.c;
    /// Arm ARM DDI 0487 D18.2 Operation Type packet): `SVE-OTHER`/`OTHER` with `FP`, `PRED`,
    /// `COND-SELECT`, `INSN-OTHER`; `LD`/`ST` with `AT`, `EXCL`, `AR`, the register subclass
    /// (`SIMD-FP`, `GP-REG`, `UNSPEC-REG`, `NV-SYSREG`, `MTE-TAG`, `MEMCPY`, `MEMSET`) and
    /// SVE's `PRED`, `SG`; `B` with `COND`, `IND`, `GCS`, `CR-BL`, `CR-RET`, `CR-NON-BL-RET`.
    /// The SVE vector length is [`Self::sve_evlen`]. The reserved class gives nothing.
    pub fn details(&self) -> OperationDetails {
        let v = self.payload;
        let mut d = OperationDetails::default();
        match self.class() {
            OperationClass::Other => {
                if self.sve_evlen().is_some() {
                    d.push("SVE-OTHER");
                    if v & 0b10 != 0 {
                        d.push("FP");
                    }
                    if v & 0b100 != 0 {
                        d.push("PRED");
                    }
                } else {
                    d.push("OTHER");
                    d.push(if v & 1 != 0 {
                        "COND-SELECT"
                    } else {
                        "INSN-OTHER"
                    });
                }
            }
            OperationClass::LoadStoreAtomic => {
                d.push(if self.is_store() { "ST" } else { "LD" });
                if self.is_ldst_atomic_subclass() {
                    for (bit, name) in [(2, "AT"), (3, "EXCL"), (4, "AR")] {
                        if v & (1 << bit) != 0 {
                            d.push(name);
                        }
                    }
                }
                let subclass = match (v & 0xFE, v & 0xFF) {
                    (0x04, _) => Some("SIMD-FP"),
                    (0x00, _) => Some("GP-REG"),
                    (0x10, _) => Some("UNSPEC-REG"),
                    (0x30, _) => Some("NV-SYSREG"),
                    (0x14, _) => Some("MTE-TAG"),
                    (0x20, _) => Some("MEMCPY"),
                    (_, 0x25) => Some("MEMSET"),
                    _ => None,
                };
                if let Some(name) = subclass {
                    d.push(name);
                }
                if self.sve_evlen().is_some() {
                    if v & 0b100 != 0 {
                        d.push("PRED");
                    }
                    if v & 0x80 != 0 {
                        d.push("SG");
                    }
                }
            }
            OperationClass::BranchOrExceptionReturn => {
                d.push("B");
                for (bit, name) in [(0, "COND"), (1, "IND"), (2, "GCS")] {
                    if v & (1 << bit) != 0 {
                        d.push(name);
                    }
                }
                match (v >> 3) & 0b11 {
                    1 => d.push("CR-BL"),
                    2 => d.push("CR-RET"),
                    3 => d.push("CR-NON-BL-RET"),
                    _ => {}
                }
            }
            OperationClass::Reserved => {}
        }
        d
    }
}

/// The named sub-fields of an Operation Type packet ([`OperationTypePacket::details`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct OperationDetails {
    names: [&'static str; 8],
    len: usize,
}

impl OperationDetails {
    fn push(&mut self, name: &'static str) {
        if let Some(slot) = self.names.get_mut(self.len) {
            *slot = name;
            self.len += 1;
        }
    }

    /// The names, in perf's order.
    pub fn names(&self) -> &[&'static str] {
        &self.names[..self.len]
    }
}

impl core::fmt::Display for OperationTypePacket {
    /// perf's text for the packet (`arm_spe_pkt_desc()`): the
    /// [`OperationTypePacket::details`] names with `EVLEN <bits>` for SVE operations, e.g.
    /// `ST AT EXCL GP-REG`, `LD EVLEN 256 PRED`, `SVE-OTHER EVLEN 128 FP`; the reserved class
    /// as perf's raw form `OP-TYPE 0x<payload> (3)`.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let details = self.details();
        let names = details.names();
        if matches!(self.class(), OperationClass::Reserved) {
            return write!(f, "OP-TYPE {:#x} ({})", self.payload, self.class_bits);
        }
        // perf prints EVLEN after the class word (other) or after the subclass (load/store).
        let evlen_after = match self.class() {
            OperationClass::Other => 1,
            _ => names
                .iter()
                .position(|n| *n == "PRED" || *n == "SG")
                .unwrap_or(names.len()),
        };
        for (i, name) in names.iter().enumerate() {
            if i == evlen_after {
                if let Some(evlen) = self.sve_evlen() {
                    write!(f, " EVLEN {evlen}")?;
                }
            }
            if i > 0 {
                f.write_str(" ")?;
            }
            f.write_str(name)?;
        }
        if evlen_after >= names.len() {
            if let Some(evlen) = self.sve_evlen() {
                write!(f, " EVLEN {evlen}")?;
            }
        }
        Ok(())
    }
}

/// An Events packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventsPacket {
    /// The events (all payload bits kept).
    pub events: SpeEvents,
    /// Payload size in bytes (1, 2, 4 or 8): events beyond it were not recorded.
    pub size: u8,
}

impl EventsPacket {
    pub(super) const fn new(value: u64, size: usize) -> Self {
        Self {
            events: SpeEvents::from_bits_retain(value),
            // Payload sizes are 1..=8.
            size: size as u8,
        }
    }
}

/// A Data Source packet (the encoding is IMPLEMENTATION DEFINED before FEAT_SPE_FDS).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DataSourcePacket {
    /// The source code.
    pub value: u64,
    /// Payload size in bytes (1, 2, 4 or 8).
    pub size: u8,
}

impl DataSourcePacket {
    pub(super) const fn new(value: u64, size: usize) -> Self {
        Self {
            value,
            // Payload sizes are 1..=8.
            size: size as u8,
        }
    }
}
