//! A reader for the `perf.data` files `perf record -e arm_spe_0/…/` writes: the header, the
//! event attributes, and the `PERF_RECORD_AUXTRACE` records of the data section with the AUX
//! bytes (the SPE buffer contents) that follow each of them, per CPU.
//!
//! `no_std`, allocation-free and total: the file is a byte slice, every offset and size in it
//! is checked against the slice before use, and a truncated or corrupt file gives a
//! [`PerfDataError`] that says where and what, never a panic (fuzzed in `fuzz/`, and
//! property-tested on random bytes).
//!
//! Format: Linux 6.12 `tools/perf/Documentation/perf.data-file-format.txt` and
//! `tools/lib/perf/include/perf/event.h`:
//!
//! - `struct perf_header`: `magic` "PERFILE2" (byte-swapped when the file is of the other
//!   endianness), `size` (104), `attr_size`, the `attrs`, `data` and `event_types` sections
//!   (`{u64 offset, u64 size}`) and 256 feature bits. Pipe mode (`perf record -o -`) has only
//!   `magic` and `size` (16), and the events follow at once.
//! - `attrs`: `attrs.size / attr_size` entries, each a `struct perf_event_attr` (its own
//!   `size` field, 0 meaning the 64-byte first version) followed by a `{offset, size}` of
//!   its sample ids (perf's `read_attr()` in tools/perf/util/header.c).
//! - `data`: events, each starting with `struct perf_event_header {u32 type; u16 misc; u16
//!   size;}`. `PERF_RECORD_AUXTRACE_INFO` (70) carries the AUX area type (4 =
//!   `PERF_AUXTRACE_ARM_SPE`, tools/perf/util/auxtrace.h) and for SPE `priv[0]` = the
//!   `arm_spe` PMU type (tools/perf/util/arm-spe.h). `PERF_RECORD_AUXTRACE` (71) is
//!   `{header; u64 size, offset, reference; u32 idx, tid, cpu, reserved}` and is followed by
//!   `size` bytes of AUX data that `header.size` does not count.

use core::fmt;

/// `PERF_RECORD_HEADER_ATTR` (pipe mode: the attributes travel as events).
pub const PERF_RECORD_HEADER_ATTR: u32 = 64;
/// `PERF_RECORD_AUXTRACE_INFO`.
pub const PERF_RECORD_AUXTRACE_INFO: u32 = 70;
/// `PERF_RECORD_AUXTRACE`.
pub const PERF_RECORD_AUXTRACE: u32 = 71;
/// `PERF_RECORD_COMPRESSED` (zstd frames of other records, `perf record -z`).
pub const PERF_RECORD_COMPRESSED: u32 = 81;
/// `PERF_AUXTRACE_ARM_SPE` in `enum auxtrace_type`.
pub const PERF_AUXTRACE_ARM_SPE: u32 = 4;

/// The magic as it reads in a file of the reader's own byte order.
const MAGIC: [u8; 8] = *b"PERFILE2";
/// `sizeof(struct perf_header)` of the current format.
const FILE_HEADER_SIZE: u64 = 104;
/// `sizeof(struct perf_pipe_file_header)`.
const PIPE_HEADER_SIZE: u64 = 16;
/// `PERF_ATTR_SIZE_VER0`.
const ATTR_SIZE_VER0: u32 = 64;
/// `sizeof(struct perf_event_header)`.
const EVENT_HEADER_SIZE: usize = 8;
/// `sizeof(struct perf_record_auxtrace)`.
const AUXTRACE_SIZE: usize = 48;

/// Why a perf.data file cannot be read. Offsets are from the start of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PerfDataError {
    /// Fewer bytes than the 16 a perf.data file starts with.
    TooShort {
        /// The file's length.
        len: usize,
    },
    /// The first 8 bytes are not "PERFILE2" in either byte order.
    BadMagic {
        /// The first 8 bytes.
        found: [u8; 8],
    },
    /// `perf_header.size` is neither 104 (a file) nor 16 (pipe mode), or the file is shorter
    /// than it.
    BadHeaderSize {
        /// The header's size field.
        size: u64,
    },
    /// A section of the header points outside the file.
    SectionOutsideFile {
        /// `attrs`, `data`.
        section: &'static str,
        /// The section's offset.
        offset: u64,
        /// The section's size.
        size: u64,
        /// The file's length.
        file_len: usize,
    },
    /// `attr_size` is 0 or too small for the attribute it holds, with attributes present.
    BadAttrSize {
        /// The header's `attr_size`.
        attr_size: u64,
    },
    /// An attribute's own `size` field is below the first version's 64 bytes or larger than
    /// its slot (`attr_size` - 16).
    BadAttr {
        /// Where the attribute starts.
        offset: u64,
        /// Its `size` field.
        size: u32,
    },
    /// The data section is empty in a non-pipe file: `perf record` did not finish writing it.
    EmptyData,
    /// An event header whose `size` is below 8 (the header itself) or larger than what is
    /// left of the data section.
    BadEventSize {
        /// Where the event starts.
        offset: u64,
        /// Its `size` field.
        size: u16,
        /// Bytes left in the data section from `offset`.
        available: u64,
    },
    /// A `PERF_RECORD_AUXTRACE` (or `_INFO`) event shorter than its fixed fields.
    ShortAuxtraceEvent {
        /// Where the event starts.
        offset: u64,
        /// Its `size` field.
        size: u16,
    },
    /// The AUX data a `PERF_RECORD_AUXTRACE` announces runs past the data section.
    AuxDataPastEnd {
        /// Where the AUXTRACE event starts.
        offset: u64,
        /// The announced AUX size.
        size: u64,
        /// Bytes left in the data section after the event.
        available: u64,
    },
}

impl fmt::Display for PerfDataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::TooShort { len } => write!(
                f,
                "the file has {len} bytes, fewer than a perf.data header: is it a perf.data \
                 file, and did `perf record` finish writing it?"
            ),
            Self::BadMagic { found } => write!(
                f,
                "the file starts with {found:02x?}, not the perf.data magic \"PERFILE2\": it is \
                 not a perf.data file (a raw SPE buffer has no header: decode it as such)"
            ),
            Self::BadHeaderSize { size } => write!(
                f,
                "the perf.data header size is {size}, not 104 (file) or 16 (pipe), or the file \
                 ends inside it: the file is corrupt or from an unknown perf version"
            ),
            Self::SectionOutsideFile {
                section,
                offset,
                size,
                file_len,
            } => write!(
                f,
                "the perf.data {section} section ({size} bytes at offset {offset}) lies outside \
                 the {file_len}-byte file: the file is truncated or corrupt"
            ),
            Self::BadAttrSize { attr_size } => write!(
                f,
                "the perf.data attr_size is {attr_size}, too small for an event attribute: \
                 was `perf record` properly terminated?"
            ),
            Self::BadAttr { offset, size } => write!(
                f,
                "the event attribute at offset {offset} says it has {size} bytes, fewer than \
                 the first version's 64 or more than its slot: the file is corrupt"
            ),
            Self::EmptyData => f.write_str(
                "the perf.data data section is empty: was `perf record` properly terminated \
                 (stopped with Ctrl-C or the end of the command, not killed)?",
            ),
            Self::BadEventSize {
                offset,
                size,
                available,
            } => write!(
                f,
                "the event at offset {offset} has size {size}, but an event needs at least 8 \
                 bytes and only {available} are left in the data section: the file is \
                 truncated or corrupt from here on"
            ),
            Self::ShortAuxtraceEvent { offset, size } => write!(
                f,
                "the AUXTRACE event at offset {offset} has only {size} bytes, fewer than its \
                 fixed fields: the file is corrupt"
            ),
            Self::AuxDataPastEnd {
                offset,
                size,
                available,
            } => write!(
                f,
                "the AUXTRACE event at offset {offset} announces {size} bytes of AUX data but \
                 only {available} follow: the file is truncated (decode what came before)"
            ),
        }
    }
}

impl core::error::Error for PerfDataError {}

/// The byte order of a perf.data file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Endian {
    /// Little-endian (every arm64 Linux distribution).
    Little,
    /// Big-endian.
    Big,
}

impl Endian {
    fn u16(self, b: [u8; 2]) -> u16 {
        match self {
            Self::Little => u16::from_le_bytes(b),
            Self::Big => u16::from_be_bytes(b),
        }
    }
    fn u32(self, b: [u8; 4]) -> u32 {
        match self {
            Self::Little => u32::from_le_bytes(b),
            Self::Big => u32::from_be_bytes(b),
        }
    }
    fn u64(self, b: [u8; 8]) -> u64 {
        match self {
            Self::Little => u64::from_le_bytes(b),
            Self::Big => u64::from_be_bytes(b),
        }
    }
}

/// Reads fixed-size fields from a slice; `None` past its end.
#[derive(Clone, Copy)]
struct Reader<'a> {
    bytes: &'a [u8],
    endian: Endian,
}

impl<'a> Reader<'a> {
    fn array<const N: usize>(&self, at: usize) -> Option<[u8; N]> {
        let end = at.checked_add(N)?;
        self.bytes.get(at..end)?.try_into().ok()
    }
    fn u16(&self, at: usize) -> Option<u16> {
        self.array(at).map(|b| self.endian.u16(b))
    }
    fn u32(&self, at: usize) -> Option<u32> {
        self.array(at).map(|b| self.endian.u32(b))
    }
    fn u64(&self, at: usize) -> Option<u64> {
        self.array(at).map(|b| self.endian.u64(b))
    }
    fn slice(&self, at: u64, len: u64) -> Option<&'a [u8]> {
        let at = usize::try_from(at).ok()?;
        let end = at.checked_add(usize::try_from(len).ok()?)?;
        self.bytes.get(at..end)
    }
}

/// The parts of one `struct perf_event_attr` an SPE recording is explained by.
///
/// Serialized (feature `serde`) as its fields in this order: the PMU type,
/// [`PerfEventAttr`](crate::spe::perf::PerfEventAttr)'s keys (config words in hex), then
/// where the attribute sits in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PerfFileAttr {
    /// `attr.type`: for SPE, the `arm_spe` PMU's type number.
    pub pmu_type: u32,
    /// `attr.config`.
    #[cfg_attr(feature = "serde", serde(with = "crate::spe::serialize::hex"))]
    pub config: u64,
    /// `attr.config1` (0 when the attribute is too old to have it).
    #[cfg_attr(feature = "serde", serde(with = "crate::spe::serialize::hex"))]
    pub config1: u64,
    /// `attr.config2`.
    #[cfg_attr(feature = "serde", serde(with = "crate::spe::serialize::hex"))]
    pub config2: u64,
    /// `attr.config3` (Linux 6.3 and later; 0 before).
    #[cfg_attr(feature = "serde", serde(with = "crate::spe::serialize::hex"))]
    pub config3: u64,
    /// `attr.config4` (Linux 7.3's `PERF_ATTR_SIZE_VER9`, include/uapi/linux/perf_event.h;
    /// 0 before).
    #[cfg_attr(feature = "serde", serde(with = "crate::spe::serialize::hex"))]
    pub config4: u64,
    /// `attr.sample_period` (or `sample_freq` when `freq` is set).
    pub sample_period: u64,
    /// `attr.exclude_user`.
    pub exclude_user: bool,
    /// `attr.exclude_kernel`.
    pub exclude_kernel: bool,
    /// Offset of the attribute in the file.
    pub offset: u64,
    /// `attr.size` (64 when the file says 0, the first version).
    pub size: u32,
}

impl PerfFileAttr {
    /// The parts the `arm_spe` PMU reads, to decode with a [`crate::spe::perf::PerfFormat`].
    pub const fn attr(&self) -> crate::spe::perf::PerfEventAttr {
        crate::spe::perf::PerfEventAttr {
            config: self.config,
            config1: self.config1,
            config2: self.config2,
            config3: self.config3,
            config4: self.config4,
            sample_period: self.sample_period,
            exclude_user: self.exclude_user,
            exclude_kernel: self.exclude_kernel,
        }
    }
}

/// One `PERF_RECORD_AUXTRACE` event with its AUX data: a piece of one CPU's SPE buffer.
///
/// Serialized (feature `serde`) as its fields in this order, without the data: `tid` signed
/// as perf prints it (-1 for a per-CPU recording), the data as its length (`bytes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct AuxtraceChunk<'a> {
    /// `cpu`: the CPU whose SPE wrote it.
    pub cpu: u32,
    /// `idx`: the AUX mmap this came from (one per CPU with per-CPU mmaps).
    pub idx: u32,
    /// `tid`: the thread (`u32::MAX`, i.e. -1, for per-CPU recording).
    #[cfg_attr(feature = "serde", serde(with = "crate::spe::serialize::perf_tid"))]
    pub tid: u32,
    /// Offset of the AUXTRACE event in the file.
    pub file_offset: u64,
    /// Where the data sat in the AUX buffer (`offset`).
    pub aux_offset: u64,
    /// `reference` (a timestamp or counter perf uses to order chunks).
    pub reference: u64,
    /// The AUX bytes: SPE records, to give to [`crate::spe::decode::records`].
    #[cfg_attr(
        feature = "serde",
        serde(rename = "bytes", with = "crate::spe::serialize::byte_count")
    )]
    pub data: &'a [u8],
}

/// An event of the data section.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PerfDataEvent<'a> {
    /// `PERF_RECORD_AUXTRACE_INFO`: which AUX area format the recording holds.
    AuxtraceInfo {
        /// Offset of the event in the file.
        offset: u64,
        /// `enum auxtrace_type` ([`PERF_AUXTRACE_ARM_SPE`] for SPE).
        auxtrace_type: u32,
        /// For SPE: `priv[ARM_SPE_PMU_TYPE]`, the `arm_spe` PMU's type number.
        spe_pmu_type: Option<u64>,
    },
    /// `PERF_RECORD_AUXTRACE` with its data.
    Auxtrace(AuxtraceChunk<'a>),
    /// `PERF_RECORD_HEADER_ATTR` (pipe mode): an event attribute, as the header's `attrs`
    /// section holds them in a file.
    HeaderAttr(PerfFileAttr),
    /// Any other event (samples, mmaps, comm, …), skipped.
    Other {
        /// Offset of the event in the file.
        offset: u64,
        /// `header.type`.
        record_type: u32,
    },
}

/// A parsed perf.data file: the header's sections, checked against the file.
#[derive(Clone, Copy, Debug)]
pub struct PerfData<'a> {
    reader: Reader<'a>,
    pipe: bool,
    attr_size: u64,
    attrs: (u64, u64),
    data: (u64, u64),
}

impl<'a> PerfData<'a> {
    /// Reads the header of `bytes` and checks that its sections lie inside the file.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, PerfDataError> {
        let Some(magic) = bytes.get(..8) else {
            return Err(PerfDataError::TooShort { len: bytes.len() });
        };
        let mut swapped = MAGIC;
        swapped.reverse();
        // The magic is written as a u64 in the file's byte order: as bytes it reads
        // "PERFILE2" on little-endian files and reversed on big-endian ones.
        let endian = if magic == MAGIC {
            Endian::Little
        } else if magic == swapped {
            Endian::Big
        } else {
            let mut found = [0; 8];
            found.copy_from_slice(magic);
            return Err(PerfDataError::BadMagic { found });
        };
        let reader = Reader { bytes, endian };
        let Some(size) = reader.u64(8) else {
            return Err(PerfDataError::TooShort { len: bytes.len() });
        };
        let fits = usize::try_from(size).is_ok_and(|s| s <= bytes.len());
        if size == PIPE_HEADER_SIZE && fits {
            return Ok(Self {
                reader,
                pipe: true,
                attr_size: 0,
                attrs: (0, 0),
                data: (PIPE_HEADER_SIZE, bytes.len() as u64 - PIPE_HEADER_SIZE),
            });
        }
        if size != FILE_HEADER_SIZE || !fits {
            return Err(PerfDataError::BadHeaderSize { size });
        }
        // The header is 104 bytes and in the file, so these reads succeed.
        let field = |at| reader.u64(at).unwrap_or(0);
        let attr_size = field(16);
        let section = |name, at| {
            let (offset, size) = (field(at), field(at + 8));
            match reader.slice(offset, size) {
                Some(_) => Ok((offset, size)),
                None => Err(PerfDataError::SectionOutsideFile {
                    section: name,
                    offset,
                    size,
                    file_len: bytes.len(),
                }),
            }
        };
        let attrs = section("attrs", 24)?;
        let data = section("data", 40)?;
        if attrs.1 != 0 && attr_size < u64::from(ATTR_SIZE_VER0) + 16 {
            return Err(PerfDataError::BadAttrSize { attr_size });
        }
        if data.1 == 0 {
            return Err(PerfDataError::EmptyData);
        }
        Ok(Self {
            reader,
            pipe: false,
            attr_size,
            attrs,
            data,
        })
    }

    /// The file's byte order.
    pub const fn endian(&self) -> Endian {
        self.reader.endian
    }

    /// Whether the file is in pipe mode (no header sections: `perf record -o -`).
    pub const fn is_pipe(&self) -> bool {
        self.pipe
    }

    /// The data section as (offset, size).
    pub const fn data_section(&self) -> (u64, u64) {
        self.data
    }

    /// The event attributes of the `attrs` section (none in pipe mode, where they travel as
    /// [`PerfDataEvent::HeaderAttr`] events).
    pub fn attrs(&self) -> Attrs<'a> {
        Attrs {
            reader: self.reader,
            next: self.attrs.0,
            end: self.attrs.0.saturating_add(self.attrs.1),
            stride: self.attr_size,
        }
    }

    /// The events of the data section, in file order. After an error the iterator ends.
    pub fn events(&self) -> Events<'a> {
        Events {
            reader: self.reader,
            next: self.data.0,
            end: self.data.0.saturating_add(self.data.1),
            failed: false,
        }
    }
}

/// Iterator over the event attributes ([`PerfData::attrs`]).
#[derive(Clone, Debug)]
pub struct Attrs<'a> {
    reader: Reader<'a>,
    next: u64,
    end: u64,
    stride: u64,
}

impl fmt::Debug for Reader<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Reader({} bytes, {:?})", self.bytes.len(), self.endian)
    }
}

impl Iterator for Attrs<'_> {
    type Item = Result<PerfFileAttr, PerfDataError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.stride == 0 || self.next.saturating_add(self.stride) > self.end {
            return None;
        }
        let offset = self.next;
        self.next += self.stride;
        // The whole slot lies inside the attrs section, which lies inside the file.
        let result = parse_attr(self.reader, offset, self.stride - 16);
        if result.is_err() {
            self.next = self.end;
        }
        Some(result)
    }
}

/// The attribute at `offset`, which has `room` bytes of the file for itself (checked by the
/// caller).
fn parse_attr(r: Reader<'_>, offset: u64, room: u64) -> Result<PerfFileAttr, PerfDataError> {
    let bad = |size| PerfDataError::BadAttr { offset, size };
    let at = usize::try_from(offset).map_err(|_| bad(0))?;
    let raw_size = r.u32(at + 4).ok_or(bad(0))?;
    let size = if raw_size == 0 {
        ATTR_SIZE_VER0
    } else {
        raw_size
    };
    if u64::from(size) > room || size < ATTR_SIZE_VER0 {
        return Err(bad(raw_size));
    }
    let word = |field: usize| {
        if field + 8 <= size as usize {
            r.u64(at + field).unwrap_or(0)
        } else {
            0
        }
    };
    let flags = word(40);
    Ok(PerfFileAttr {
        offset,
        pmu_type: r.u32(at).ok_or(bad(raw_size))?,
        size,
        config: word(8),
        sample_period: word(16),
        config1: word(56),
        config2: word(64),
        config3: word(128),
        config4: word(136),
        exclude_user: flags & (1 << 4) != 0,
        exclude_kernel: flags & (1 << 5) != 0,
    })
}

/// Iterator over the data section's events ([`PerfData::events`]).
#[derive(Clone, Debug)]
pub struct Events<'a> {
    reader: Reader<'a>,
    next: u64,
    end: u64,
    failed: bool,
}

impl<'a> Events<'a> {
    fn fail(&mut self, e: PerfDataError) -> Option<Result<PerfDataEvent<'a>, PerfDataError>> {
        self.failed = true;
        Some(Err(e))
    }
}

impl<'a> Iterator for Events<'a> {
    type Item = Result<PerfDataEvent<'a>, PerfDataError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.next >= self.end {
            return None;
        }
        let offset = self.next;
        let available = self.end - offset;
        let r = self.reader;
        // `offset` < `end` <= file length, so it fits a usize.
        let at = usize::try_from(offset).ok()?;
        let header = (available >= EVENT_HEADER_SIZE as u64)
            .then(|| Some((r.u32(at)?, r.u16(at + 6)?)))
            .flatten();
        let Some((record_type, size)) = header else {
            return self.fail(PerfDataError::BadEventSize {
                offset,
                size: 0,
                available,
            });
        };
        if usize::from(size) < EVENT_HEADER_SIZE || u64::from(size) > available {
            return self.fail(PerfDataError::BadEventSize {
                offset,
                size,
                available,
            });
        }
        self.next = offset + u64::from(size);
        match record_type {
            PERF_RECORD_AUXTRACE_INFO => {
                if usize::from(size) < 16 {
                    return self.fail(PerfDataError::ShortAuxtraceEvent { offset, size });
                }
                let auxtrace_type = r.u32(at + 8)?;
                let spe_pmu_type = (auxtrace_type == PERF_AUXTRACE_ARM_SPE
                    && usize::from(size) >= 24)
                    .then(|| r.u64(at + 16))
                    .flatten();
                Some(Ok(PerfDataEvent::AuxtraceInfo {
                    offset,
                    auxtrace_type,
                    spe_pmu_type,
                }))
            }
            PERF_RECORD_AUXTRACE => {
                if usize::from(size) < AUXTRACE_SIZE {
                    return self.fail(PerfDataError::ShortAuxtraceEvent { offset, size });
                }
                let aux_size = r.u64(at + 8)?;
                let after = self.end - self.next;
                let Some(data) = (aux_size <= after)
                    .then(|| r.slice(self.next, aux_size))
                    .flatten()
                else {
                    return self.fail(PerfDataError::AuxDataPastEnd {
                        offset,
                        size: aux_size,
                        available: after,
                    });
                };
                self.next += aux_size;
                Some(Ok(PerfDataEvent::Auxtrace(AuxtraceChunk {
                    file_offset: offset,
                    aux_offset: r.u64(at + 16)?,
                    reference: r.u64(at + 24)?,
                    idx: r.u32(at + 32)?,
                    tid: r.u32(at + 36)?,
                    cpu: r.u32(at + 40)?,
                    data,
                })))
            }
            PERF_RECORD_HEADER_ATTR => {
                match parse_attr(r, offset + EVENT_HEADER_SIZE as u64, u64::from(size) - 8) {
                    Ok(attr) => Some(Ok(PerfDataEvent::HeaderAttr(attr))),
                    Err(e) => self.fail(e),
                }
            }
            _ => Some(Ok(PerfDataEvent::Other {
                offset,
                record_type,
            })),
        }
    }
}

#[cfg(test)]
mod tests;
