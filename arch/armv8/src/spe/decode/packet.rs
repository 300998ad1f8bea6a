//! The packets of an SPE record and what their payload fields mean.
//!
//! Sources: Arm ARM DDI 0487 M.a.a D18.2 (Address packet: index 0 PC, 1 branch target, 2 data
//! virtual address, 3 data physical address, 4 previous branch target; Counter packet: index 0
//! total latency, 1 issue latency, 2 translation latency; Operation Type classes; Context
//! packet); the same encodings as `SPE_ADDR_PKT_*`, `SPE_CNT_PKT_*` and `SPE_OP_PKT_*` in Linux
//! perf's `arm-spe-pkt-decoder.h`.

use crate::spe::config::OperationTypes;
use crate::spe::events::SpeEvents;
use pmu_events::CoreId;

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

    /// Load/store class, extended (atomic/exclusive/acquire-release) subclass (payload
    /// `0b000x_xx1x`, perf 6.12 `SPE_OP_PKT_IS_LDST_ATOMIC`, 7.3
    /// `SPE_OP_PKT_LDST_SUBCLASS_EXTENDED`) with AT (bit 2) set.
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

    /// The SME effective vector length or tile size in bits, for an SME "other" operation
    /// (payload `0b1xxx_1xx0`): 128 << ETS, ETS being payload bits \[6:4\] and \[2\] read as
    /// one 4-bit number (Linux 7.3 perf's `SPE_OP_PKG_SME_ETS`).
    pub const fn sme_ets(&self) -> Option<u32> {
        match self.other_subclass() {
            Some(OtherSubclass::Sme {
                effective_tile_size,
                ..
            }) => Some(effective_tile_size),
            _ => None,
        }
    }

    /// The subclass of an "other" operation (class 0b00), `None` for the other classes.
    pub const fn other_subclass(&self) -> Option<OtherSubclass> {
        if !matches!(self.class(), OperationClass::Other) {
            return None;
        }
        let v = self.payload;
        let floating_point = v & 0b10 != 0;
        Some(if v & 0b1000_1001 == 0b1000 {
            OtherSubclass::Sve {
                effective_vector_length: 32 << ((v >> 4) & 0b111),
                floating_point,
                predicated: v & 0b100 != 0,
            }
        } else if v & 0b1000_1001 == 0b1000_1000 {
            OtherSubclass::Sme {
                effective_tile_size: 128 << ((((v >> 4) & 0b111) << 1) | ((v >> 2) & 1)),
                floating_point,
            }
        } else if v & 0b1111_1000 == 0 {
            OtherSubclass::Other {
                advanced_simd: v & 0b100 != 0,
                floating_point,
                conditional: v & 1 != 0,
            }
        } else {
            OtherSubclass::Unallocated
        })
    }

    /// The subclass of a load/store/atomic operation (class 0b01), `None` for the other
    /// classes. The direction is [`Self::is_store`].
    pub const fn load_store_subclass(&self) -> Option<LoadStoreSubclass> {
        if !matches!(self.class(), OperationClass::LoadStoreAtomic) {
            return None;
        }
        let v = self.payload;
        // The encodings are disjoint (each fixes bits the others fix differently), so the
        // order of the tests does not matter; it is Linux 7.3 perf's printing order.
        Some(if v & 0b1110_0010 == 0b10 {
            LoadStoreSubclass::Extended {
                atomic: v & 0b100 != 0,
                exclusive: v & 0b1000 != 0,
                acquire_release: v & 0b1_0000 != 0,
            }
        } else if v & 0xFE == 0x04 {
            LoadStoreSubclass::SimdFp
        } else if v & 0xFE == 0x00 {
            LoadStoreSubclass::GeneralPurposeRegister
        } else if v & 0xFE == 0x10 {
            LoadStoreSubclass::UnspecifiedRegister
        } else if v & 0xFE == 0x30 {
            LoadStoreSubclass::NestedVirtualizationSysreg
        } else if v & 0xFE == 0x14 {
            LoadStoreSubclass::MteTag
        } else if v & 0xFE == 0x20 {
            LoadStoreSubclass::MemoryCopy
        } else if v & 0xFF == 0x25 {
            LoadStoreSubclass::MemorySet
        } else if v & 0b1010 == 0b1000 {
            LoadStoreSubclass::SveSmeRegister {
                effective_vector_length: 32 << ((v >> 4) & 0b111),
                predicated: v & 0b100 != 0,
                gather_scatter: v & 0x80 != 0,
            }
        } else if v & 0b1111_1010 == 0x40 {
            LoadStoreSubclass::GuardedControlStack {
                common: v & 0b100 != 0,
            }
        } else {
            LoadStoreSubclass::Unallocated
        })
    }

    /// The flags of a branch or exception return (class 0b10), `None` for the other classes.
    pub const fn branch(&self) -> Option<BranchFlags> {
        if !matches!(self.class(), OperationClass::BranchOrExceptionReturn) {
            return None;
        }
        let v = self.payload;
        Some(BranchFlags {
            conditional: v & 1 != 0,
            indirect: v & 0b10 != 0,
            guarded_control_stack: v & 0b100 != 0,
            call_return: match (v >> 3) & 0b11 {
                0 => CallReturn::Neither,
                1 => CallReturn::BranchWithLink,
                2 => CallReturn::Return,
                _ => CallReturn::NonBranchWithLinkOrReturn,
            },
        })
    }

    /// The sub-fields of the payload by the names Linux 7.3 perf prints, in its order
    /// (`arm_spe_pkt_desc_op_type()` in tools/perf/util/arm-spe-decoder/arm-spe-pkt-decoder.c;
    /// Arm ARM DDI 0487 D18.2 Operation Type packet), from [`Self::other_subclass`],
    /// [`Self::load_store_subclass`] and [`Self::branch`]: `SVE-OTHER` with `FP`, `PRED`;
    /// `SME-OTHER` with `FP`; `OTHER` with `ASE`, `FP` and `COND-SELECT` or `INSN-OTHER`
    /// (nothing for an unallocated "other" subclass); `LD`/`ST` with `AT`, `EXCL`, `AR`, or
    /// the subclass (`SIMD-FP`, `GP-REG`, `UNSPEC-REG`, `NV-SYSREG`, `MTE-TAG`, `MEMCPY`,
    /// `MEMSET`, `SVE-SME-REG` with `PRED`, `SG`, `GCS` with `COMM`); `B` with `COND`, `IND`,
    /// `GCS`, `CR-BL`, `CR-RET`, `CR-NON-BL-RET`. The SVE vector length is
    /// [`Self::sve_evlen`], the SME tile size [`Self::sme_ets`]. The reserved class gives
    /// nothing.
    ///
    /// Linux 6.12's perf printed less: `OTHER COND-SELECT`/`INSN-OTHER` for every non-SVE
    /// "other" operation, no `SVE-SME-REG` word, and only `LD`/`ST` for GCS accesses.
    pub fn details(&self) -> OperationDetails {
        let mut d = OperationDetails::default();
        match self.class() {
            OperationClass::Other => match self.other_subclass() {
                Some(OtherSubclass::Sve {
                    floating_point,
                    predicated,
                    ..
                }) => {
                    d.push("SVE-OTHER");
                    d.push_if(floating_point, "FP");
                    d.push_if(predicated, "PRED");
                }
                Some(OtherSubclass::Sme { floating_point, .. }) => {
                    d.push("SME-OTHER");
                    d.push_if(floating_point, "FP");
                }
                Some(OtherSubclass::Other {
                    advanced_simd,
                    floating_point,
                    conditional,
                }) => {
                    d.push("OTHER");
                    d.push_if(advanced_simd, "ASE");
                    d.push_if(floating_point, "FP");
                    d.push(if conditional {
                        "COND-SELECT"
                    } else {
                        "INSN-OTHER"
                    });
                }
                Some(OtherSubclass::Unallocated) | None => {}
            },
            OperationClass::LoadStoreAtomic => {
                d.push(if self.is_store() { "ST" } else { "LD" });
                match self.load_store_subclass() {
                    Some(LoadStoreSubclass::Extended {
                        atomic,
                        exclusive,
                        acquire_release,
                    }) => {
                        d.push_if(atomic, "AT");
                        d.push_if(exclusive, "EXCL");
                        d.push_if(acquire_release, "AR");
                    }
                    Some(LoadStoreSubclass::SveSmeRegister {
                        predicated,
                        gather_scatter,
                        ..
                    }) => {
                        d.push("SVE-SME-REG");
                        d.push_if(predicated, "PRED");
                        d.push_if(gather_scatter, "SG");
                    }
                    Some(LoadStoreSubclass::GuardedControlStack { common }) => {
                        d.push("GCS");
                        d.push_if(common, "COMM");
                    }
                    Some(s) => {
                        if let Some(name) = s.name() {
                            d.push(name);
                        }
                    }
                    None => {}
                }
            }
            OperationClass::BranchOrExceptionReturn => {
                d.push("B");
                if let Some(b) = self.branch() {
                    d.push_if(b.conditional, "COND");
                    d.push_if(b.indirect, "IND");
                    d.push_if(b.guarded_control_stack, "GCS");
                    if let Some(name) = b.call_return.name() {
                        d.push(name);
                    }
                }
            }
            OperationClass::Reserved => {}
        }
        d
    }
}

/// The subclass of an "other" operation (Arm ARM DDI 0487 D18.2 Operation Type packet,
/// class 0b00; Linux 7.3 perf `SPE_OP_PKT_OTHER_SUBCLASS_*`). Serialized (feature `serde`)
/// as `{kind, <fields>}`, the kind in snake case (`{"kind": "sme", "effective_tile_size":
/// 512, "floating_point": true}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(tag = "kind", rename_all = "snake_case")
)]
pub enum OtherSubclass {
    /// `0b0000_0xxx`: any other operation: ASE (bit 2) an Advanced SIMD operation, FP
    /// (bit 1) floating point, COND (bit 0) a conditional select.
    Other {
        /// ASE: Advanced SIMD.
        advanced_simd: bool,
        /// FP: floating point.
        floating_point: bool,
        /// COND: conditional select or compare.
        conditional: bool,
    },
    /// `0b0xxx_1xx0`: an SVE data-processing operation.
    Sve {
        /// EVL: the effective vector length in bits (32 << payload bits \[6:4\]).
        effective_vector_length: u32,
        /// FP (bit 1): floating point.
        floating_point: bool,
        /// PRED (bit 2): predicated.
        predicated: bool,
    },
    /// `0b1xxx_1xx0`: an SME data-processing operation (FEAT_SPE_SME).
    Sme {
        /// ETS: the effective vector length or tile size in bits (128 << payload bits
        /// \[6:4\]:\[2\]).
        effective_tile_size: u32,
        /// FP (bit 1): floating point.
        floating_point: bool,
    },
    /// An encoding none of the above.
    Unallocated,
}

/// The subclass of a load/store/atomic operation (Arm ARM DDI 0487 D18.2 Operation Type
/// packet, class 0b01; Linux 7.3 perf `SPE_OP_PKT_LDST_SUBCLASS_*`). Bit 0 (ST) is the
/// direction in every subclass ([`OperationTypePacket::is_store`]). Serialized (feature
/// `serde`) as `{kind, <fields>}`, the kind in snake case (`{"kind": "memory_copy"}`,
/// `{"kind": "guarded_control_stack", "common": true}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(tag = "kind", rename_all = "snake_case")
)]
pub enum LoadStoreSubclass {
    /// `0b0000_000x`: general-purpose register load or store (`GP-REG`).
    GeneralPurposeRegister,
    /// `0b0000_010x`: SIMD&FP register load or store (`SIMD-FP`).
    SimdFp,
    /// `0b0001_000x`: load or store of an unspecified register (`UNSPEC-REG`).
    UnspecifiedRegister,
    /// `0b0011_000x`: a System register access turned into memory by FEAT_NV2 (`NV-SYSREG`).
    NestedVirtualizationSysreg,
    /// `0b0001_010x`: MTE allocation tag load or store (`MTE-TAG`).
    MteTag,
    /// `0b000x_xx1x`: extended: atomic, exclusive and load-acquire/store-release accesses.
    Extended {
        /// AT (bit 2): atomic.
        atomic: bool,
        /// EXCL (bit 3): exclusive.
        exclusive: bool,
        /// AR (bit 4): acquire/release.
        acquire_release: bool,
    },
    /// `0bxxxx_1x0x`: SVE or SME register load or store (`SVE-SME-REG`).
    SveSmeRegister {
        /// EVL: the effective vector length in bits (32 << payload bits \[6:4\]).
        effective_vector_length: u32,
        /// PRED (bit 2): predicated.
        predicated: bool,
        /// SG (bit 7): gather or scatter.
        gather_scatter: bool,
    },
    /// `0b0010_000x`: memory copy (FEAT_MOPS `CPY*`, `MEMCPY`).
    MemoryCopy,
    /// `0b0010_0101`: memory set (FEAT_MOPS `SET*`, a store, `MEMSET`).
    MemorySet,
    /// `0b0100_0x0x`: Guarded Control Stack access (FEAT_GCS, `GCS`).
    GuardedControlStack {
        /// COMM (bit 2): a common GCS access (perf's `COMM`), as opposed to the GCS
        /// accesses of procedure calls and returns.
        common: bool,
    },
    /// An encoding none of the above.
    Unallocated,
}

impl LoadStoreSubclass {
    /// The word perf prints for the subclass, `None` for extended and unallocated (the
    /// extended flags are [`OperationTypePacket::details`]' `AT`, `EXCL`, `AR`).
    pub const fn name(self) -> Option<&'static str> {
        match self {
            Self::GeneralPurposeRegister => Some("GP-REG"),
            Self::SimdFp => Some("SIMD-FP"),
            Self::UnspecifiedRegister => Some("UNSPEC-REG"),
            Self::NestedVirtualizationSysreg => Some("NV-SYSREG"),
            Self::MteTag => Some("MTE-TAG"),
            Self::SveSmeRegister { .. } => Some("SVE-SME-REG"),
            Self::MemoryCopy => Some("MEMCPY"),
            Self::MemorySet => Some("MEMSET"),
            Self::GuardedControlStack { .. } => Some("GCS"),
            Self::Extended { .. } | Self::Unallocated => None,
        }
    }
}

/// The flags of a branch or exception return (Arm ARM DDI 0487 D18.2 Operation Type
/// packet, class 0b10; perf `SPE_OP_PKT_COND`, `_INDIRECT_BRANCH`, `_GCS`, `_CR_*`).
/// Serialized (feature `serde`) field by field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct BranchFlags {
    /// COND (bit 0): conditional.
    pub conditional: bool,
    /// IND (bit 1): indirect.
    pub indirect: bool,
    /// GCS (bit 2): the branch pushed to or popped from the Guarded Control Stack.
    pub guarded_control_stack: bool,
    /// CR (bits \[4:3\]): call or return.
    pub call_return: CallReturn,
}

/// The CR field of a branch's Operation Type payload (bits \[4:3\]). Serialized (feature
/// `serde`) in snake case (`"branch_with_link"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "snake_case")
)]
pub enum CallReturn {
    /// 0b00: neither (or not recorded).
    Neither,
    /// 0b01: a branch with link, a procedure call (perf `CR-BL`).
    BranchWithLink,
    /// 0b10: a procedure return (perf `CR-RET`).
    Return,
    /// 0b11: a call or return that is neither a branch with link nor a return instruction
    /// (perf `CR-NON-BL-RET`).
    NonBranchWithLinkOrReturn,
}

impl CallReturn {
    /// perf's word, `None` for [`Self::Neither`].
    pub const fn name(self) -> Option<&'static str> {
        match self {
            Self::Neither => None,
            Self::BranchWithLink => Some("CR-BL"),
            Self::Return => Some("CR-RET"),
            Self::NonBranchWithLinkOrReturn => Some("CR-NON-BL-RET"),
        }
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

    fn push_if(&mut self, condition: bool, name: &'static str) {
        if condition {
            self.push(name);
        }
    }

    /// The names, in perf's order.
    pub fn names(&self) -> &[&'static str] {
        &self.names[..self.len]
    }
}

impl core::fmt::Display for OperationTypePacket {
    /// Linux 7.3 perf's text for the packet (`arm_spe_pkt_desc()`): the
    /// [`OperationTypePacket::details`] names with `EVLEN <bits>` after `SVE-OTHER` and
    /// `SVE-SME-REG`, `ETS <bits>` after `SME-OTHER`, e.g. `ST AT EXCL`,
    /// `LD SVE-SME-REG EVLEN 256 PRED`, `SVE-OTHER EVLEN 128 FP`, `SME-OTHER ETS 512 FP`;
    /// an unallocated "other" subclass as the empty text (as perf); the reserved class as
    /// perf's raw form `OP-TYPE 0x<payload> (3)`.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if matches!(self.class(), OperationClass::Reserved) {
            return write!(f, "OP-TYPE {:#x} ({})", self.payload, self.class_bits);
        }
        for (i, name) in self.details().names().iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            f.write_str(name)?;
            match (*name, self.sve_evlen(), self.sme_ets()) {
                ("SVE-OTHER" | "SVE-SME-REG", Some(evlen), _) => write!(f, " EVLEN {evlen}")?,
                ("SME-OTHER", _, Some(ets)) => write!(f, " ETS {ets}")?,
                _ => {}
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

    /// Linux 7.3 perf's text for the packet (`arm_spe_pkt_desc_event()`): `EV`, then the
    /// architected events by perf's names in bit order, then the IMPLEMENTATION DEFINED
    /// events the core `midr` names (Neoverse-N1: E\[12\] `LATE-PREFETCH`, perf's
    /// `n1_event_strings`), then any other set bits as `IMPDEF:<bit>,<bit>`. perf takes the
    /// MIDR of the CPU that wrote the buffer (its `ARM_SPE_CPU_MIDR` metadata); pass 0 when
    /// unknown. Linux 6.12's perf printed neither E\[16\], E\[19..25\] nor unnamed bits.
    pub const fn describe(&self, midr: u32) -> EventsDescription {
        EventsDescription {
            events: self.events,
            core: CoreId::from_midr(midr),
        }
    }
}

/// perf's names for the architected events (Arm ARM DDI 0487 D18.2 Events packet;
/// Linux 7.3 perf `common_ev_strings`), in bit order.
const PERF_EVENT_NAMES: [(SpeEvents, &str); 22] = [
    (SpeEvents::EXCEPTION_GENERATED, "EXCEPTION-GEN"),
    (SpeEvents::RETIRED, "RETIRED"),
    (SpeEvents::L1D_ACCESS, "L1D-ACCESS"),
    (SpeEvents::L1D_REFILL, "L1D-REFILL"),
    (SpeEvents::TLB_ACCESS, "TLB-ACCESS"),
    (SpeEvents::TLB_WALK, "TLB-REFILL"),
    (SpeEvents::NOT_TAKEN, "NOT-TAKEN"),
    (SpeEvents::MISPREDICTED, "MISPRED"),
    (SpeEvents::LLC_ACCESS, "LLC-ACCESS"),
    (SpeEvents::LLC_MISS, "LLC-REFILL"),
    (SpeEvents::REMOTE_ACCESS, "REMOTE-ACCESS"),
    (SpeEvents::MISALIGNED, "ALIGNMENT"),
    (SpeEvents::TRANSACTIONAL, "TXN"),
    (SpeEvents::PARTIAL_PREDICATE, "SVE-PARTIAL-PRED"),
    (SpeEvents::EMPTY_PREDICATE, "SVE-EMPTY-PRED"),
    (SpeEvents::L2D_ACCESS, "L2D-ACCESS"),
    (SpeEvents::L2D_MISS, "L2D-MISS"),
    (SpeEvents::CACHE_DATA_MODIFIED, "HITM"),
    (SpeEvents::RECENTLY_FETCHED, "LFB"),
    (SpeEvents::DATA_SNOOPED, "SNOOPED"),
    (SpeEvents::STREAMING_SVE_MODE, "STREAMING-SVE"),
    (SpeEvents::SMCU, "SMCU"),
];

/// IMPLEMENTATION DEFINED events a core's documentation names, as perf prints them.
const NEOVERSE_N1_EVENT_NAMES: [(SpeEvents, &str); 1] =
    [(SpeEvents::from_bits_retain(1 << 12), "LATE-PREFETCH")];

/// An Events packet as perf prints it for one core ([`EventsPacket::describe`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventsDescription {
    events: SpeEvents,
    core: CoreId,
}

impl core::fmt::Display for EventsDescription {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("EV")?;
        let mut rest = self.events.bits();
        let core_names: &[(SpeEvents, &str)] = if self.core == pmu_events::NEOVERSE_N1.id {
            &NEOVERSE_N1_EVENT_NAMES
        } else {
            &[]
        };
        for (event, name) in PERF_EVENT_NAMES.iter().chain(core_names) {
            if rest & event.bits() != 0 {
                write!(f, " {name}")?;
                rest &= !event.bits();
            }
        }
        if rest != 0 {
            f.write_str(" IMPDEF:")?;
            let mut first = true;
            while rest != 0 {
                if !first {
                    f.write_str(",")?;
                }
                first = false;
                write!(f, "{}", rest.trailing_zeros())?;
                rest &= rest - 1;
            }
        }
        Ok(())
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
