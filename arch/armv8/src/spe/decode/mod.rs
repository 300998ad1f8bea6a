//! A decoder for the SPE record stream the profiling unit writes into its buffer: packets
//! ([`packets`], [`decode_packet`]) and records built from them ([`records`]).
//!
//! `no_std`, allocation-free, and total: every input, however malformed, decodes to packets
//! and [`DecodeError`]s without panicking (fuzzed; see `fuzz/`).
//!
//! # Packet format
//!
//! Arm ARM DDI 0487 M.a.a D18.2 ("Statistical Profiling Extension sample record
//! specification"); the header encodings are also those of Linux perf's
//! `tools/perf/util/arm-spe-decoder/arm-spe-pkt-decoder.h`, against which
//! `tests/spe_decoder_vs_perf.rs` differential-tests this decoder.
//!
//! | header | packet | payload |
//! |---|---|---|
//! | `0b0000_0000` | Padding | none |
//! | `0b0000_0001` | End (of record) | none |
//! | `0b0111_0001` | Timestamp | 8 bytes |
//! | `0b01SZ_0010` | Events | 2^SZ bytes |
//! | `0b01SZ_0011` | Data Source | 2^SZ bytes |
//! | `0b0110_01CT` | Context (CT: 0 CONTEXTIDR_EL1, 1 CONTEXTIDR_EL2) | 4 bytes |
//! | `0b0100_10CC` | Operation Type (CC: class) | 1 byte |
//! | `0b1011_0III` | Address (III: index) | 8 bytes |
//! | `0b1001_1III` | Counter (III: index) | 2 bytes |
//! | `0b0010_00II` then an Address/Counter header | the same, index `II:III` | as above |
//! | `0b0010_00AA 0b0000_0000` | Alignment: skip to the next 2^(AA+1)-byte boundary | none |
//!
//! SZ (header bits \[5:4\]) gives the payload size of every packet that has one (the fixed
//! sizes above are the SZ values those headers carry); payloads are little-endian.
//!
//! The Alignment packet is decoded as perf decodes it (the boundary from bits \[3:0\] of the
//! first header byte, of which the extended prefix leaves \[1:0\]); its boundary is relative
//! to the start of the buffer, as in perf, which measures it from the (page-aligned) buffer
//! address: pass the whole buffer, starting at a 16-byte boundary, to [`packets`]. Like perf,
//! a decode error skips one byte and resumes.

mod data_source;
mod packet;
mod record;

pub use data_source::{DataSource, DataSourceEncoding, DataSourceLevel, DATA_SOURCE_CORES};
pub use packet::{
    AddressAttributes, AddressKind, AddressPacket, BranchFlags, CallReturn, ContextPacket,
    CounterKind, CounterPacket, DataSourcePacket, EventsDescription, EventsPacket,
    LoadStoreSubclass, OperationClass, OperationDetails, OperationTypePacket, OtherSubclass,
    Packet,
};
pub use record::{records, Records, SampleRecord};

/// One packet and where it sits in the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DecodedPacket {
    /// Offset of the first header byte from the start of the stream.
    pub offset: usize,
    /// Bytes the packet occupies (headers and payload; for Alignment, the bytes skipped).
    pub len: usize,
    /// The packet.
    pub packet: Packet,
}

/// Why the bytes at an offset are not a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DecodeError {
    /// The stream ends inside the packet: `needed` bytes from `offset` would complete it.
    Truncated {
        /// Where the packet starts.
        offset: usize,
        /// How many bytes it needs from `offset`.
        needed: usize,
    },
    /// The header (or the second byte of an extended header) is no packet of Format 0.
    Invalid {
        /// Where the packet starts.
        offset: usize,
        /// The offending header byte (for an extended header, its second byte).
        header: u8,
    },
    /// Records only: an Operation Type packet of the reserved class 0b11. The record it
    /// belongs to is dropped and decoding resumes after the packet, as perf's
    /// `arm_spe_read_record()` does ("Get packet error!").
    ReservedOperationClass {
        /// Where the Operation Type packet starts.
        offset: usize,
    },
    /// Records only: the stream ends after `len` bytes of a record that has no End or
    /// Timestamp packet (perf drops such a tail silently).
    UnterminatedRecord {
        /// Where the record starts.
        offset: usize,
        /// Its bytes up to the end of the stream.
        len: usize,
    },
}

impl DecodeError {
    /// Where the undecodable packet starts.
    pub const fn offset(&self) -> usize {
        match *self {
            Self::Truncated { offset, .. }
            | Self::Invalid { offset, .. }
            | Self::ReservedOperationClass { offset }
            | Self::UnterminatedRecord { offset, .. } => offset,
        }
    }
}

impl core::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            Self::Truncated { offset, needed } => write!(
                f,
                "SPE packet at offset {offset} needs {needed} bytes but the data ends first: \
                 the buffer was cut mid-record (PMBSR_EL1.DL, or a copy that stopped early)"
            ),
            Self::Invalid { offset, header } => write!(
                f,
                "byte {header:#04x} at offset {offset} is not an SPE packet header: the stream \
                 is corrupt or not SPE data (decoding resumes at the next byte)"
            ),
            Self::ReservedOperationClass { offset } => write!(
                f,
                "the Operation Type packet at offset {offset} has the reserved class 0b11: its \
                 record is dropped, as perf drops it (decoding resumes after the packet)"
            ),
            Self::UnterminatedRecord { offset, len } => write!(
                f,
                "the record at offset {offset} ({len} bytes) has no End or Timestamp packet \
                 before the data ends: the buffer was cut mid-record"
            ),
        }
    }
}

impl core::error::Error for DecodeError {}

/// Header masks and values (Arm ARM D18.2; perf `SPE_HEADER0_*`).
mod header {
    pub const PADDING: u8 = 0x00;
    pub const END: u8 = 0x01;
    pub const TIMESTAMP: u8 = 0x71;
    /// `0b11xx_1111`: Events and Data Source, SZ in bits \[5:4\].
    pub const EVENTS_MASK: u8 = 0xCF;
    pub const EVENTS: u8 = 0x42;
    pub const DATA_SOURCE: u8 = 0x43;
    /// `0b1111_1100`: Context, Operation Type, and the extended-header prefix.
    pub const SHORT_INDEX2_MASK: u8 = 0xFC;
    pub const CONTEXT: u8 = 0x64;
    pub const OPERATION_TYPE: u8 = 0x48;
    pub const EXTENDED: u8 = 0x20;
    /// `0b1111_1000`: Address and Counter, index in bits \[2:0\].
    pub const SHORT_INDEX3_MASK: u8 = 0xF8;
    pub const ADDRESS: u8 = 0xB0;
    pub const COUNTER: u8 = 0x98;
    /// Second byte of an extended header that makes it an Alignment packet.
    pub const ALIGNMENT: u8 = 0x00;
}

/// Payload size from header bits \[5:4\] (SZ): 1, 2, 4 or 8 bytes.
const fn payload_size(header: u8) -> usize {
    1 << ((header >> 4) & 0b11)
}

/// Little-endian `size` bytes of `bytes` from `at`, if they are all there.
fn read_le(bytes: &[u8], at: usize, size: usize) -> Option<u64> {
    let end = at.checked_add(size)?;
    let field = bytes.get(at..end)?;
    Some(
        field
            .iter()
            .rev()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)),
    )
}

/// Decodes the packet at `offset` of `stream` (the whole buffer: Alignment packets align
/// relative to its start).
pub fn decode_packet(stream: &[u8], offset: usize) -> Result<DecodedPacket, DecodeError> {
    let rest = stream.get(offset..).unwrap_or(&[]);
    let Some(&h0) = rest.first() else {
        return Err(DecodeError::Truncated { offset, needed: 1 });
    };
    let done = |len: usize, packet: Packet| {
        Ok(DecodedPacket {
            offset,
            len,
            packet,
        })
    };
    // A packet with `headers` header bytes and a payload sized by `size_header`'s SZ bits.
    let with_payload = |headers: usize, size_header: u8| {
        let size = payload_size(size_header);
        let needed = headers + size;
        match read_le(rest, headers, size) {
            Some(value) => Ok((needed, value, size)),
            None => Err(DecodeError::Truncated { offset, needed }),
        }
    };

    if h0 == header::PADDING {
        return done(1, Packet::Padding);
    }
    if h0 == header::END {
        return done(1, Packet::End);
    }
    if h0 == header::TIMESTAMP {
        let (len, value, _) = with_payload(1, h0)?;
        return done(len, Packet::Timestamp(value));
    }
    match h0 & header::EVENTS_MASK {
        header::EVENTS => {
            let (len, value, size) = with_payload(1, h0)?;
            return done(len, Packet::Events(EventsPacket::new(value, size)));
        }
        header::DATA_SOURCE => {
            let (len, value, size) = with_payload(1, h0)?;
            return done(len, Packet::DataSource(DataSourcePacket::new(value, size)));
        }
        _ => {}
    }
    match h0 & header::SHORT_INDEX2_MASK {
        header::CONTEXT => {
            let (len, value, _) = with_payload(1, h0)?;
            return done(len, Packet::Context(ContextPacket::new(h0 & 0b11, value)));
        }
        header::OPERATION_TYPE => {
            let (len, value, _) = with_payload(1, h0)?;
            return done(
                len,
                Packet::OperationType(OperationTypePacket::new(h0 & 0b11, value)),
            );
        }
        _ => {}
    }
    let (headers, h, index_high) = if h0 & header::SHORT_INDEX2_MASK == header::EXTENDED {
        let Some(&h1) = rest.get(1) else {
            return Err(DecodeError::Truncated { offset, needed: 2 });
        };
        if h1 == header::ALIGNMENT {
            // Bits [3:0] of the first byte give log2(alignment) - 1; the extended prefix leaves
            // only [1:0] free, so 2, 4, 8 or 16 bytes (perf reads the same bits).
            let alignment = 1usize << ((h0 & 0xF) + 1);
            if rest.len() < alignment {
                return Err(DecodeError::Truncated {
                    offset,
                    needed: alignment,
                });
            }
            let len = alignment - (offset & (alignment - 1));
            // `len` is between 1 and 16, so it fits.
            return done(
                len,
                Packet::Alignment {
                    alignment: alignment as u8,
                },
            );
        }
        (2, h1, (h0 & 0b11) << 3)
    } else {
        (1, h0, 0)
    };
    let index = index_high | (h & 0b111);
    match h & header::SHORT_INDEX3_MASK {
        header::ADDRESS => {
            let (len, value, _) = with_payload(headers, h)?;
            done(len, Packet::Address(AddressPacket::new(index, value)))
        }
        header::COUNTER => {
            let (len, value, _) = with_payload(headers, h)?;
            done(len, Packet::Counter(CounterPacket::new(index, value)))
        }
        _ => Err(DecodeError::Invalid { offset, header: h }),
    }
}

/// Iterator over the packets of a stream ([`packets`]).
#[derive(Clone, Debug)]
pub struct Packets<'a> {
    stream: &'a [u8],
    offset: usize,
}

impl<'a> Packets<'a> {
    /// The offset of the next packet.
    pub const fn offset(&self) -> usize {
        self.offset
    }

    /// The stream being decoded.
    pub const fn stream(&self) -> &'a [u8] {
        self.stream
    }
}

impl Iterator for Packets<'_> {
    type Item = Result<DecodedPacket, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.offset >= self.stream.len() {
            return None;
        }
        let result = decode_packet(self.stream, self.offset);
        self.offset += match &result {
            // Every packet is at least one byte long, so decoding always advances.
            Ok(p) => p.len.max(1),
            // As perf's arm_spe_get_next_packet(): skip one byte and try again.
            Err(_) => 1,
        };
        Some(result)
    }
}

/// Decodes every packet of `stream` in order; an undecodable byte yields one error and decoding
/// resumes at the next byte.
pub fn packets(stream: &[u8]) -> Packets<'_> {
    Packets { stream, offset: 0 }
}

#[cfg(test)]
pub(crate) mod tests;
