//! Records: the packets of one sampled operation, up to and including the End or Timestamp
//! packet that closes it (Arm ARM D18.1: "a record ... ends with an End packet or a
//! Timestamp packet"). Padding and Alignment between records are skipped.

use super::packet::{
    AddressKind, AddressPacket, CounterKind, OperationClass, OperationTypePacket, Packet,
};
use super::{packets, DataSource, DataSourceEncoding, DecodeError, Packets};
use crate::spe::config::OperationTypes;
use crate::spe::events::SpeEvents;
use crate::spe::model::SampledOperation;

/// The fields of one record. A field is `None` when its packet was absent; a repeated packet
/// keeps the last value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct SampleRecord {
    /// Offset of the record's first packet.
    pub offset: usize,
    /// Bytes from `offset` to the end of the closing packet.
    pub len: usize,
    /// Packets in the record (Padding included).
    pub packets: usize,
    /// Address index 0: the sampled instruction.
    pub pc: Option<AddressPacket>,
    /// Address index 1: branch target.
    pub branch_target: Option<AddressPacket>,
    /// Address index 2: data virtual address.
    pub data_virtual: Option<AddressPacket>,
    /// Address index 3: data physical address.
    pub data_physical: Option<AddressPacket>,
    /// Address index 4: previous branch target.
    pub previous_branch_target: Option<AddressPacket>,
    /// Counter index 0: total latency.
    pub total_latency: Option<u64>,
    /// Counter index 1: issue latency.
    pub issue_latency: Option<u64>,
    /// Counter index 2: translation latency.
    pub translation_latency: Option<u64>,
    /// Events.
    pub events: Option<SpeEvents>,
    /// Operation type.
    pub operation: Option<OperationTypePacket>,
    /// Data source.
    pub data_source: Option<u64>,
    /// Context ID (CONTEXTIDR_EL1 or _EL2), with the Context packet's index.
    pub context: Option<(u8, u64)>,
    /// Timestamp, if the record ended with one.
    pub timestamp: Option<u64>,
}

impl SampleRecord {
    fn apply(&mut self, packet: &Packet) {
        match *packet {
            Packet::Address(a) => match a.kind() {
                AddressKind::InstructionVirtual => self.pc = Some(a),
                AddressKind::BranchTarget => self.branch_target = Some(a),
                AddressKind::DataVirtual => self.data_virtual = Some(a),
                AddressKind::DataPhysical => self.data_physical = Some(a),
                AddressKind::PreviousBranchTarget => self.previous_branch_target = Some(a),
                AddressKind::Other(_) => {}
            },
            Packet::Counter(c) => match c.kind() {
                CounterKind::TotalLatency => self.total_latency = Some(c.value),
                CounterKind::IssueLatency => self.issue_latency = Some(c.value),
                CounterKind::TranslationLatency => self.translation_latency = Some(c.value),
                CounterKind::Other(_) => {}
            },
            Packet::Events(e) => self.events = Some(e.events),
            Packet::OperationType(o) => self.operation = Some(o),
            Packet::DataSource(d) => self.data_source = Some(d.value),
            Packet::Context(c) => self.context = Some((c.index, c.value)),
            Packet::Timestamp(t) => self.timestamp = Some(t),
            Packet::Padding | Packet::End | Packet::Alignment { .. } => {}
        }
    }

    /// The data source decoded for the core `midr` names ([`DataSourceEncoding::for_midr`]):
    /// `None` without a Data Source packet, for a store, a core whose encoding is not known,
    /// or a value its encoding does not define.
    pub fn data_source_for(&self, midr: u32) -> Option<DataSource> {
        let is_store = self
            .operation
            .is_some_and(|o| o.class() == OperationClass::LoadStoreAtomic && o.is_store());
        DataSourceEncoding::for_midr(midr)?.decode(self.data_source?, is_store)
    }

    /// The record as an operation for [`crate::spe::model`]: types from the Operation Type
    /// packet, total latency (0 if absent, saturating to `u32`), events (none if absent), the
    /// Exception level of the PC packet (0 if absent) and the data source.
    pub fn sampled_operation(&self) -> SampledOperation {
        SampledOperation {
            types: self
                .operation
                .map_or(OperationTypes::empty(), |o| o.operation_types()),
            total_latency: self
                .total_latency
                .map_or(0, |l| u32::try_from(l).unwrap_or(u32::MAX)),
            events: self.events.unwrap_or(SpeEvents::empty()),
            exception_level: self.pc.map_or(0, |pc| pc.exception_level()),
            data_source: self.data_source,
        }
    }
}

/// Iterator over the records of a stream ([`records`]).
#[derive(Clone, Debug)]
pub struct Records<'a> {
    packets: Packets<'a>,
}

impl Iterator for Records<'_> {
    type Item = Result<SampleRecord, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut record: Option<SampleRecord> = None;
        for result in self.packets.by_ref() {
            let packet = match result {
                Ok(packet) => packet,
                // The partial record is dropped; the next call resumes after the bad byte.
                Err(e) => return Some(Err(e)),
            };
            if record.is_none()
                && matches!(packet.packet, Packet::Padding | Packet::Alignment { .. })
            {
                continue;
            }
            if let Packet::OperationType(o) = packet.packet {
                if o.class() == OperationClass::Reserved {
                    // perf's arm_spe_read_record() abandons the record here; the packet is
                    // consumed, so decoding resumes after it.
                    return Some(Err(DecodeError::ReservedOperationClass {
                        offset: packet.offset,
                    }));
                }
            }
            let r = record.get_or_insert(SampleRecord {
                offset: packet.offset,
                ..SampleRecord::default()
            });
            r.apply(&packet.packet);
            r.packets += 1;
            r.len = (packet.offset + packet.len).saturating_sub(r.offset);
            if packet.packet.ends_record() {
                return record.map(Ok);
            }
        }
        // The stream ended inside a record.
        record.map(|r| {
            Err(DecodeError::UnterminatedRecord {
                offset: r.offset,
                len: r.len,
            })
        })
    }
}

/// Decodes `stream` into records.
pub fn records(stream: &[u8]) -> Records<'_> {
    Records {
        packets: packets(stream),
    }
}
