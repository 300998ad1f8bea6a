//! `pmu-demo spe decode FILE`: the records (and packets) of a raw SPE buffer, or of every
//! CPU's AUX data in a `perf.data` file (`pmu_armv8::spe::perf_data`), optionally kept only
//! when they pass a filter (the hardware filter model, `pmu_armv8::spe::model`, applied
//! after the fact: what the kernel could not filter).
//!
//! The decoding is `pmu_armv8::spe::decode` (Arm ARM DDI 0487 M.a.a D18.2, the packet
//! encodings of Linux perf's `arm-spe-pkt-decoder.h`): total, so any bytes give records and
//! per-offset errors, never a panic.

use std::io::Read;
use std::path::{Path, PathBuf};

use clap::Args as ClapArgs;
use pmu_armv8::spe::decode::{
    self, AddressKind, AddressPacket, ContextPacket, CounterKind, DataSource, DecodeError,
    OperationTypePacket, Packet, SampleRecord,
};
use pmu_armv8::spe::model::{FilterDecision, SampledOperation};
use pmu_armv8::spe::perf::LinuxSpeDriver;
use pmu_armv8::spe::perf_data::{
    AuxtraceChunk, Endian, PerfData, PerfDataEvent, PerfFileAttr, PERF_AUXTRACE_ARM_SPE,
};
use pmu_armv8::spe::{
    ExceptionLevels, OperationTypes, SpeCapabilities, SpeConfig, SpeConfigBuilder, SpeEvents,
    SpeVersion,
};
use serde::Serialize;

use super::names;
use crate::{Failure, EXIT_USAGE};

#[derive(ClapArgs, Debug)]
#[command(
    after_help = "FILE is a perf.data file (recognized by its PERFILE2 magic: every \
PERF_RECORD_AUXTRACE chunk is decoded, per CPU) or a raw SPE buffer.

Filter options keep only the records the hardware filter would have kept with those \
settings (PMSFCR_EL1 FT/LD/ST/B, FL with PMSLATFR_EL1, FE with PMSEVFR_EL1, FnE with \
PMSNEVFR_EL1): use them for what the kernel refuses to filter, e.g.
  pmu-demo spe decode perf.data --loads --min-latency 120 --event llc-miss

Exit status: 0 every byte decoded; 1 some bytes are not SPE packets (each error is listed \
at its offset and decoding resumes at the next byte), or the perf.data file is truncated \
or corrupt after some data (what came before is decoded); 2 FILE is missing, unreadable, \
empty, not hex with --hex, not a perf.data file with SPE data, or a filter option is \
invalid."
)]
pub struct DecodeArgs {
    /// The input: a perf.data file from `perf record -e arm_spe_0/…/`, or a raw buffer as
    /// SPE wrote it (start it at a 16-byte boundary of the buffer: Alignment packets count
    /// from there); `-` reads standard input.
    file: PathBuf,
    /// Treat FILE as a raw SPE buffer even if it starts with the perf.data magic.
    #[arg(long)]
    raw: bool,
    /// Keep only loads (operations classed as the filter model classes them:
    /// `OperationTypePacket::operation_types`).
    #[arg(long)]
    loads: bool,
    /// Keep only stores (atomics included).
    #[arg(long)]
    stores: bool,
    /// Keep only branches.
    #[arg(long)]
    branches: bool,
    /// Keep only records whose total latency is at least N cycles.
    #[arg(long, value_name = "N")]
    min_latency: Option<u32>,
    /// Keep only records with ALL of these events (names, bit numbers or hex masks, as for
    /// `pmu-demo spe --event`).
    #[arg(long = "event", value_name = "EVENT", value_delimiter = ',', value_parser = names::parse_event)]
    events: Vec<SpeEvents>,
    /// Drop records with ANY of these events.
    #[arg(long = "exclude-event", value_name = "EVENT", value_delimiter = ',', value_parser = names::parse_event)]
    exclude_events: Vec<SpeEvents>,
    /// FILE is hex text instead of raw bytes: hex digits in pairs, whitespace and `0x`
    /// prefixes ignored, `#` starts a comment.
    #[arg(long)]
    hex: bool,
    /// Also list every packet with its offset.
    #[arg(long)]
    packets: bool,
    /// One JSON object on stdout.
    #[arg(long)]
    json: bool,
    /// MIDR_EL1 of the CPU that wrote the records (hex; on that machine
    /// /sys/devices/system/cpu/cpuN/regs/identification/midr_el1): decodes the Data Source
    /// values of loads, whose encoding is the core's own, for the cores Linux 7.3's perf
    /// knows (Neoverse N1/N2/V1/V2/V3, Cortex-A715/A720/A725/A78C/X1/X3/X4/X925, AmpereOne,
    /// HiSilicon HIP12).
    #[arg(long, value_name = "HEX", value_parser = parse_midr)]
    midr: Option<u32>,
}

fn parse_midr(text: &str) -> Result<u32, String> {
    let value = super::configure::parse_hex(text)?;
    u32::try_from(value).map_err(|_| format!("`{text}` is wider than MIDR_EL1's 32 bits"))
}

// ---- JSON shape: the library's `serde` shapes (`pmu_armv8::spe::serialize`) inside the
// command's own envelope ----

#[derive(Debug, Serialize)]
struct Output<'a> {
    file: String,
    /// `raw` or `perf.data`.
    format: &'static str,
    /// SPE bytes decoded (for perf.data: the AUX data of every chunk).
    bytes: usize,
    /// perf.data only: where the SPE data came from.
    perf_data: Option<PerfDataOut<'a>>,
    /// The post-hoc filter, when one was given.
    filter: Option<String>,
    /// Records the filter dropped.
    filtered_out: usize,
    records: Vec<RecordOut>,
    errors: Vec<ErrorOut>,
    /// Only with --packets.
    packets: Option<Vec<PacketOut>>,
}

#[derive(Debug, Serialize)]
struct PerfDataOut<'a> {
    endian: &'static str,
    pipe: bool,
    /// `priv[ARM_SPE_PMU_TYPE]` of PERF_RECORD_AUXTRACE_INFO.
    spe_pmu_type: Option<u64>,
    /// The arm_spe event the recording used (the attribute whose type is the SPE PMU's).
    recording: Option<RecordingOut>,
    /// One entry per PERF_RECORD_AUXTRACE (without its data).
    chunks: Vec<AuxtraceChunk<'a>>,
    /// A truncated or corrupt file: what stopped the reading (the chunks before it decode).
    file_error: Option<String>,
}

#[derive(Debug, Serialize)]
struct RecordingOut {
    #[serde(flatten)]
    attr: PerfFileAttr,
    /// The event as perf terms, in the documented Linux 6.12 layout.
    terms: String,
}

#[derive(Debug, Serialize)]
struct ErrorOut {
    /// perf.data: the chunk's CPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    cpu: Option<u32>,
    #[serde(flatten)]
    error: DecodeError,
}

#[derive(Debug, Serialize)]
struct PacketOut {
    /// perf.data: the chunk's CPU (offsets count from the chunk's first byte).
    #[serde(skip_serializing_if = "Option::is_none")]
    cpu: Option<u32>,
    offset: usize,
    len: usize,
    name: &'static str,
    detail: String,
    error: Option<ErrorOut>,
}

#[derive(Debug, Serialize)]
struct RecordOut {
    /// perf.data: the CPU whose SPE wrote it (offsets count from its chunk's first byte).
    #[serde(skip_serializing_if = "Option::is_none")]
    cpu: Option<u32>,
    #[serde(flatten)]
    record: SampleRecord,
    /// The data source decoded for `--midr`'s core (null without it, for a store, or for a
    /// value or core whose encoding is not known).
    data_source_decoded: Option<DataSource>,
}

/// The register a Context packet names, or its reserved index.
fn context_register(c: ContextPacket) -> String {
    c.register().map_or_else(
        || format!("context index {} (reserved)", c.index),
        str::to_owned,
    )
}

fn usage(message: String) -> Failure {
    Failure {
        message,
        status: EXIT_USAGE,
    }
}

fn read_input(path: &Path) -> Result<Vec<u8>, Failure> {
    if path == Path::new("-") {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| usage(format!("cannot read standard input: {e}")))?;
        return Ok(bytes);
    }
    std::fs::read(path).map_err(|e| {
        usage(format!(
            "cannot read {}: {e}: give the path of a raw SPE buffer (or hex text with --hex)",
            path.display()
        ))
    })
}

/// Hex text to bytes: pairs of hex digits; whitespace, `0x` prefixes and `#` comments
/// ignored.
fn parse_hex_text(text: &[u8]) -> Result<Vec<u8>, String> {
    let text = String::from_utf8_lossy(text);
    let mut digits = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or_default();
        for token in line.split_whitespace() {
            let token = token
                .strip_prefix("0x")
                .or_else(|| token.strip_prefix("0X"))
                .unwrap_or(token);
            for c in token.chars() {
                let d = c.to_digit(16).ok_or_else(|| {
                    format!("line {}: `{c}` is not a hex digit (in `{token}`)", n + 1)
                })?;
                // A hex digit is below 16.
                digits.push(d as u8);
            }
        }
    }
    if digits.len() % 2 != 0 {
        return Err(format!(
            "{} hex digits: bytes need pairs of digits",
            digits.len()
        ));
    }
    Ok(digits.chunks(2).map(|p| (p[0] << 4) | p[1]).collect())
}

fn type_names(types: OperationTypes) -> Vec<&'static str> {
    match (
        types.contains(OperationTypes::LOADS),
        types.contains(OperationTypes::STORES),
        types.contains(OperationTypes::BRANCHES),
    ) {
        (true, true, _) => vec!["load", "store"],
        (true, false, _) => vec!["load"],
        (false, true, _) => vec!["store"],
        (false, false, true) => vec!["branch"],
        (false, false, false) => vec![],
    }
}

/// `PC 0x… EL0 NS`: the address with the header bits that apply to its kind, as the JSON
/// gives them.
fn address_text(label: &str, a: &AddressPacket) -> String {
    let mut s = format!("{label} {:#x}", a.virtual_address());
    let at = a.attributes();
    if let Some(el) = at.exception_level {
        s.push_str(&format!(" EL{el}"));
    }
    if at.non_secure == Some(true) {
        s.push_str(" NS");
    }
    if let Some(tag) = at.tag.filter(|&t| t != 0) {
        s.push_str(&format!(" tag {tag:#04x}"));
    }
    if at.checked == Some(true) {
        s.push_str(" CH");
    }
    if let Some(pat) = at.physical_tag.filter(|&p| p != 0) {
        s.push_str(&format!(" PAT {pat:#x}"));
    }
    s
}

/// What one packet says, in a few words.
fn packet_detail(p: &Packet) -> String {
    match p {
        Packet::Padding | Packet::End => String::new(),
        Packet::Alignment { alignment } => format!("to the next {alignment}-byte boundary"),
        Packet::Timestamp(t) => format!("{t:#x}"),
        Packet::Address(a) => {
            let label = match a.kind() {
                AddressKind::InstructionVirtual => "PC".to_owned(),
                AddressKind::BranchTarget => "branch target".to_owned(),
                AddressKind::DataVirtual => "data VA".to_owned(),
                AddressKind::DataPhysical => "data PA".to_owned(),
                AddressKind::PreviousBranchTarget => "previous branch target".to_owned(),
                AddressKind::Other(i) => format!("index {i}"),
            };
            format!("{} (payload {:#x})", address_text(&label, a), a.payload)
        }
        Packet::Counter(c) => {
            let label = match c.kind() {
                CounterKind::TotalLatency => "total latency".to_owned(),
                CounterKind::IssueLatency => "issue latency".to_owned(),
                CounterKind::TranslationLatency => "translation latency".to_owned(),
                CounterKind::Other(i) => format!("counter {i}"),
            };
            format!("{label} {}", c.value)
        }
        Packet::Context(c) => format!("{} {}", context_register(*c), c.value),
        Packet::OperationType(o) => format!(
            "{} payload {:#x}: {}",
            o.class().name(),
            o.payload,
            operation_text(o)
        ),
        Packet::Events(e) => format!(
            "{:#x} {} ({}-byte payload)",
            e.events.bits(),
            names::event_names(e.events).join(" "),
            e.size
        ),
        Packet::DataSource(d) => format!("{:#x} ({}-byte payload)", d.value, d.size),
    }
}

/// The Operation Type as perf prints it; where perf prints nothing (an "other" operation
/// of no allocated subclass, Linux 7.3 `arm_spe_pkt_desc_op_type()`), what it is instead.
fn operation_text(o: &OperationTypePacket) -> String {
    let text = o.to_string();
    if text.is_empty() {
        format!("{} (unallocated subclass)", o.class().name())
    } else {
        text
    }
}

fn record_line(out: &RecordOut) -> String {
    let r = &out.record;
    let mut parts = Vec::new();
    if let Some(a) = &r.pc {
        parts.push(address_text("PC", a));
    }
    if let Some(o) = &r.operation {
        parts.push(operation_text(o));
    }
    if let Some(e) = r.events {
        parts.push(format!("events {}", names::event_names(e).join(" ")));
    }
    let latencies: Vec<String> = [
        ("total", r.total_latency),
        ("issue", r.issue_latency),
        ("translation", r.translation_latency),
    ]
    .into_iter()
    .filter_map(|(name, v)| v.map(|v| format!("{name} {v}")))
    .collect();
    if !latencies.is_empty() {
        parts.push(format!("latency {}", latencies.join(" ")));
    }
    for (label, a) in [
        ("target", &r.branch_target),
        ("previous target", &r.previous_branch_target),
        ("VA", &r.data_virtual),
        ("PA", &r.data_physical),
    ] {
        if let Some(a) = a {
            parts.push(address_text(label, a));
        }
    }
    if let Some(d) = r.data_source {
        match out.data_source_decoded {
            Some(s) => parts.push(format!(
                "source {d:#x} ({}{})",
                s.level.name(),
                if s.modified { ", modified" } else { "" }
            )),
            None => parts.push(format!("source {d:#x}")),
        }
    }
    if let Some((index, value)) = r.context {
        parts.push(format!(
            "{} {value}",
            context_register(ContextPacket { index, value })
        ));
    }
    if let Some(t) = r.timestamp {
        parts.push(format!("ts {t:#x}"));
    }
    let cpu = out.cpu.map(|c| format!("cpu {c} ")).unwrap_or_default();
    format!(
        "{cpu}record @{:#06x} ({} bytes, {} packets): {}",
        r.offset,
        r.len,
        r.packets,
        parts.join(" | ")
    )
}

/// One stream of SPE bytes: the whole raw input, or one AUXTRACE chunk.
struct Stream<'a> {
    cpu: Option<u32>,
    data: &'a [u8],
}

/// The post-hoc filter: the options as an SPE configuration for a PE with every filter and
/// 16-bit counters (FEAT_SPEv1p4, PMSIDR_EL1 0x36047: FE FT FL FnE, MaxSize 64,
/// CountSize 16 bits), decided per record by the library's filter model. `None` without
/// filter options.
fn post_filter(args: &DecodeArgs) -> Result<Option<(SpeConfig, String)>, Failure> {
    let mut types = OperationTypes::empty();
    for (on, t) in [
        (args.loads, OperationTypes::LOADS),
        (args.stores, OperationTypes::STORES),
        (args.branches, OperationTypes::BRANCHES),
    ] {
        if on {
            types |= t;
        }
    }
    let required = args
        .events
        .iter()
        .fold(SpeEvents::empty(), |acc, &e| acc | e);
    let excluded = args
        .exclude_events
        .iter()
        .fold(SpeEvents::empty(), |acc, &e| acc | e);
    if types.is_empty() && args.min_latency.is_none() && required.is_empty() && excluded.is_empty()
    {
        return Ok(None);
    }
    let mut builder = SpeConfigBuilder::new().exception_levels(ExceptionLevels::EL0);
    let mut text = Vec::new();
    if !types.is_empty() {
        builder = builder.operation_types(types);
        text.push(format!("types {}", type_names(types).join("+")));
    }
    if let Some(latency) = args.min_latency {
        builder = builder.min_latency(latency);
        text.push(format!("total latency >= {latency}"));
    }
    if !required.is_empty() {
        builder = builder.require_events(required);
        text.push(format!(
            "with all of {}",
            names::event_list(required).join(" ")
        ));
    }
    if !excluded.is_empty() {
        builder = builder.exclude_events(excluded);
        text.push(format!(
            "with none of {}",
            names::event_list(excluded).join(" ")
        ));
    }
    let caps = SpeCapabilities::decode_raw(SpeVersion::V1p4, 0x3_6047, 0);
    let config = builder.build(&caps).map_err(|e| {
        usage(format!(
            "the filter options cannot be applied: {e} (the filter keeps what the hardware \
             filter would, so it follows the same rules)"
        ))
    })?;
    Ok(Some((config, text.join(", "))))
}

/// Whether `config`'s filter keeps `record`. The Exception level is not filtered on here
/// (perf's `u`/`k` did that when recording; EL2 records of a VHE host kernel count as EL1).
fn keeps(config: &SpeConfig, record: &SampleRecord) -> bool {
    let op = SampledOperation {
        exception_level: 0,
        ..record.sampled_operation()
    };
    config.decide(&op) == FilterDecision::Recorded
}

fn perf_data_magic(bytes: &[u8]) -> bool {
    bytes.starts_with(b"PERFILE2") || bytes.starts_with(b"2ELIFREP")
}

fn recording_out(a: &PerfFileAttr) -> RecordingOut {
    // The newest documented layout: it keeps every older release's fields where they were,
    // and the terms only it has are 0 in an older recording.
    let format = LinuxSpeDriver::NEWEST.rules().format;
    let attr = a.attr();
    let mut terms: Vec<String> = format
        .iter()
        .map(|(field, place)| (field, place.extract(&attr)))
        .filter(|&(_, v)| v != 0)
        .map(|(field, v)| {
            if field.is_mask() {
                format!("{}={v:#x}", field.name())
            } else {
                format!("{}={v}", field.name())
            }
        })
        .collect();
    terms.push(format!("period={}", a.sample_period));
    RecordingOut {
        attr: *a,
        terms: terms.join(","),
    }
}

/// Reads a perf.data file: its SPE chunks, and what it says about the recording. A file
/// that cannot be read at all, or holds no SPE data, is a usage failure (exit 2).
fn read_perf_data<'a>(
    bytes: &'a [u8],
    file: &Path,
) -> Result<(Vec<Stream<'a>>, PerfDataOut<'a>), Failure> {
    let name = file.display();
    let data = PerfData::parse(bytes)
        .map_err(|e| usage(format!("{name} is not a readable perf.data file: {e}")))?;
    let mut streams = Vec::new();
    let mut out = PerfDataOut {
        endian: match data.endian() {
            Endian::Little => "little",
            Endian::Big => "big",
        },
        pipe: data.is_pipe(),
        spe_pmu_type: None,
        recording: None,
        chunks: Vec::new(),
        file_error: None,
    };
    let mut other_auxtrace_type = None;
    let mut header_attrs = Vec::new();
    for event in data.events() {
        match event {
            Ok(PerfDataEvent::HeaderAttr(attr)) => header_attrs.push(attr),
            Ok(PerfDataEvent::AuxtraceInfo {
                auxtrace_type,
                spe_pmu_type,
                ..
            }) => {
                if auxtrace_type == PERF_AUXTRACE_ARM_SPE {
                    out.spe_pmu_type = spe_pmu_type;
                } else {
                    other_auxtrace_type = Some(auxtrace_type);
                }
            }
            Ok(PerfDataEvent::Auxtrace(chunk)) => {
                out.chunks.push(chunk);
                streams.push(Stream {
                    cpu: Some(chunk.cpu),
                    data: chunk.data,
                });
            }
            Ok(_) => {}
            Err(e) => out.file_error = Some(e.to_string()),
        }
    }
    if let (Some(t), None) = (other_auxtrace_type, out.spe_pmu_type) {
        return Err(usage(format!(
            "{name} holds AUX area data of type {t} (enum auxtrace_type: 1 Intel PT, 2 Intel \
             BTS, 3 CoreSight ETM, 5 s390 CPU-MF, 6 HiSilicon PTT), not Arm SPE (4)"
        )));
    }
    if streams.is_empty() {
        let why = out
            .file_error
            .as_deref()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        return Err(usage(format!(
            "{name} holds no SPE data (no PERF_RECORD_AUXTRACE){why}: record it with \
             `perf record -e arm_spe_0/…/ -- <command>`"
        )));
    }
    if let Some(pmu_type) = out.spe_pmu_type {
        out.recording = data
            .attrs()
            .flatten()
            .chain(header_attrs)
            .find(|a| u64::from(a.pmu_type) == pmu_type)
            .map(|a| recording_out(&a));
    }
    Ok((streams, out))
}

pub fn run(args: &DecodeArgs) -> Result<(), Failure> {
    let raw = read_input(&args.file)?;
    let bytes = if args.hex {
        parse_hex_text(&raw).map_err(|e| {
            usage(format!(
                "{} is not hex text: {e} (drop --hex for a raw binary buffer)",
                args.file.display()
            ))
        })?
    } else {
        raw
    };
    if bytes.is_empty() {
        return Err(usage(format!(
            "{} is empty: nothing to decode (an SPE buffer holds records of packets, each \
             closed by an End (0x01) or Timestamp (0x71) packet)",
            args.file.display()
        )));
    }
    let filter = post_filter(args)?;

    let (streams, perf_data) = if !args.raw && perf_data_magic(&bytes) {
        let (streams, out) = read_perf_data(&bytes, &args.file)?;
        (streams, Some(out))
    } else {
        (
            vec![Stream {
                cpu: None,
                data: &bytes,
            }],
            None,
        )
    };

    let mut records = Vec::new();
    let mut errors = Vec::new();
    let mut filtered_out = 0;
    let mut packets = args.packets.then(Vec::new);
    // Records and errors in stream order, for the listing.
    let mut listing: Vec<Result<usize, usize>> = Vec::new();
    for stream in &streams {
        for item in decode::records(stream.data) {
            match item {
                Ok(r) => {
                    if filter.as_ref().is_some_and(|(c, _)| !keeps(c, &r)) {
                        filtered_out += 1;
                        continue;
                    }
                    listing.push(Ok(records.len()));
                    records.push(RecordOut {
                        cpu: stream.cpu,
                        data_source_decoded: args.midr.and_then(|m| r.data_source_for(m)),
                        record: r,
                    });
                }
                Err(e) => {
                    listing.push(Err(errors.len()));
                    errors.push(ErrorOut {
                        cpu: stream.cpu,
                        error: e,
                    });
                }
            }
        }
        if let Some(list) = packets.as_mut() {
            list.extend(decode::packets(stream.data).map(|p| match p {
                Ok(p) => PacketOut {
                    cpu: stream.cpu,
                    offset: p.offset,
                    len: p.len,
                    name: p.packet.name(),
                    detail: packet_detail(&p.packet),
                    error: None,
                },
                Err(e) => PacketOut {
                    cpu: stream.cpu,
                    offset: e.offset(),
                    len: 1,
                    name: "ERROR",
                    detail: String::new(),
                    error: Some(ErrorOut {
                        cpu: None,
                        error: e,
                    }),
                },
            }));
        }
    }
    let out = Output {
        file: args.file.display().to_string(),
        format: if perf_data.is_some() {
            "perf.data"
        } else {
            "raw"
        },
        bytes: streams.iter().map(|s| s.data.len()).sum(),
        perf_data,
        filter: filter.as_ref().map(|(_, text)| text.clone()),
        filtered_out,
        records,
        errors,
        packets,
    };

    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| Failure::new(e.to_string()))?
        );
    } else {
        print_human(&out, &listing);
    }
    let file_error = out.perf_data.as_ref().and_then(|p| p.file_error.clone());
    if let Some(e) = file_error {
        return Err(Failure {
            message: format!(
                "{} stops early: {e}; the {} records before it are listed",
                out.file,
                out.records.len()
            ),
            status: 1,
        });
    }
    if out.errors.is_empty() {
        Ok(())
    } else {
        Err(Failure {
            message: format!(
                "{} decode errors in {}: those bytes are not SPE packets (each is listed with \
                 its offset; decoding resumed after it)",
                out.errors.len(),
                out.file
            ),
            status: 1,
        })
    }
}

fn print_human(out: &Output, listing: &[Result<usize, usize>]) {
    if let Some(p) = &out.perf_data {
        let mut per_cpu: std::collections::BTreeMap<u32, (usize, usize)> = Default::default();
        for c in &p.chunks {
            let e = per_cpu.entry(c.cpu).or_default();
            e.0 += 1;
            e.1 += c.data.len();
        }
        let cpus: Vec<String> = per_cpu
            .iter()
            .map(|(cpu, (n, b))| format!("cpu {cpu}: {n} chunks, {b} bytes"))
            .collect();
        println!(
            "perf.data ({}-endian{}): {} AUXTRACE chunks ({})",
            p.endian,
            if p.pipe { ", pipe mode" } else { "" },
            p.chunks.len(),
            cpus.join("; ")
        );
        if let Some(r) = &p.recording {
            println!(
                "recorded with arm_spe PMU type {}: {}{}",
                r.attr.pmu_type,
                r.terms,
                match (r.attr.exclude_user, r.attr.exclude_kernel) {
                    (false, true) => " (modifier u: EL0 only)",
                    (true, false) => " (modifier k: EL1 only)",
                    _ => "",
                }
            );
        }
    }
    if let Some(f) = &out.filter {
        println!("filter: {f}");
    }
    if let Some(packets) = &out.packets {
        println!("packets:");
        for p in packets {
            let cpu = p.cpu.map(|c| format!("cpu {c} ")).unwrap_or_default();
            match &p.error {
                Some(e) => println!("  {cpu}error @{:#06x}: {}", e.error.offset(), e.error),
                None => {
                    let line = format!(
                        "  {cpu}@{:#06x} +{:<2} {:<11} {}",
                        p.offset, p.len, p.name, p.detail
                    );
                    println!("{}", line.trim_end());
                }
            }
        }
        println!("records:");
    }
    for entry in listing {
        match *entry {
            Ok(i) => println!("{}", record_line(&out.records[i])),
            Err(i) => {
                let e = &out.errors[i];
                let cpu = e.cpu.map(|c| format!("cpu {c} ")).unwrap_or_default();
                println!("{cpu}error @{:#06x}: {}", e.error.offset(), e.error);
            }
        }
    }
    if let Some(e) = out.perf_data.as_ref().and_then(|p| p.file_error.as_ref()) {
        println!("perf.data error: {e}");
    }
    let filtered = if out.filter.is_some() {
        format!(" ({} filtered out)", out.filtered_out)
    } else {
        String::new()
    };
    println!(
        "{} records{filtered}, {} errors in {} bytes of {}",
        out.records.len(),
        out.errors.len(),
        out.bytes,
        out.file
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_text() {
        assert_eq!(
            parse_hex_text(b"# c\nb0 0x01\n02 # x\n"),
            Ok(vec![0xB0, 0x01, 0x02])
        );
        assert_eq!(parse_hex_text(b"0123"), Ok(vec![0x01, 0x23]));
        assert!(parse_hex_text(b"012").unwrap_err().contains("pairs"));
        assert!(parse_hex_text(b"0g").unwrap_err().contains("line 1"));
    }
}
