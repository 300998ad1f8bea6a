//! `pmu-demo spe decode FILE`: the records (and packets) of a raw SPE buffer.
//!
//! The decoding is `pmu_armv8::spe::decode` (Arm ARM DDI 0487 M.a.a D18.2, the packet
//! encodings of Linux perf's `arm-spe-pkt-decoder.h`): total, so any bytes give records and
//! per-offset errors, never a panic.

use std::io::Read;
use std::path::{Path, PathBuf};

use clap::Args as ClapArgs;
use pmu_armv8::spe::decode::{
    self, AddressKind, AddressPacket, CounterKind, DecodeError, OperationClass,
    OperationTypePacket, Packet, SampleRecord,
};
use pmu_armv8::spe::OperationTypes;
use serde::Serialize;

use super::names;
use crate::{Failure, EXIT_USAGE};

#[derive(ClapArgs, Debug)]
#[command(
    after_help = "Exit status: 0 every byte decoded; 1 some bytes are not SPE packets \
(each error is listed at its offset and decoding resumes at the next byte); 2 FILE is \
missing, unreadable, empty, or not hex with --hex."
)]
pub struct DecodeArgs {
    /// The buffer: raw bytes as SPE wrote them (start it at a 16-byte boundary of the
    /// buffer: Alignment packets count from there); `-` reads standard input.
    file: PathBuf,
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
}

#[derive(Debug, Serialize)]
struct Output {
    file: String,
    bytes: usize,
    records: Vec<RecordOut>,
    errors: Vec<ErrorOut>,
    /// Only with --packets.
    packets: Option<Vec<PacketOut>>,
}

#[derive(Debug, Serialize)]
struct ErrorOut {
    offset: usize,
    /// `Truncated` or `Invalid`.
    kind: &'static str,
    message: String,
}

#[derive(Debug, Serialize)]
struct PacketOut {
    offset: usize,
    len: usize,
    name: &'static str,
    detail: String,
    error: Option<ErrorOut>,
}

#[derive(Debug, Serialize)]
struct RecordOut {
    offset: usize,
    len: usize,
    packets: usize,
    pc: Option<AddressOut>,
    branch_target: Option<AddressOut>,
    previous_branch_target: Option<AddressOut>,
    data_virtual: Option<AddressOut>,
    data_physical: Option<AddressOut>,
    operation: Option<OperationOut>,
    events: Option<Vec<&'static str>>,
    events_mask: Option<String>,
    total_latency: Option<u64>,
    issue_latency: Option<u64>,
    translation_latency: Option<u64>,
    data_source: Option<u64>,
    context: Option<ContextOut>,
    timestamp: Option<u64>,
}

#[derive(Debug, Serialize)]
struct AddressOut {
    address: String,
    payload: String,
    /// Instruction addresses: the Exception level.
    el: Option<u8>,
    /// Instruction and physical addresses: Non-secure.
    ns: Option<bool>,
    /// Data virtual addresses: the top-byte tag, bits [63:56] of the payload.
    tag: Option<String>,
    /// Physical addresses: CH, bit 62 (tag-checked access).
    ch: Option<bool>,
    /// Physical addresses: PAT, bits [59:56] (physical address tag).
    pat: Option<u8>,
}

#[derive(Debug, Serialize)]
struct ContextOut {
    /// `CONTEXTIDR_EL1` (Context packet index 0) or `CONTEXTIDR_EL2` (index 1).
    register: String,
    value: u64,
}

/// The register a Context packet's index names (Arm ARM D18.2: CT 0 EL1, 1 EL2).
fn context_register(index: u8) -> String {
    match index {
        0 => "CONTEXTIDR_EL1".to_owned(),
        1 => "CONTEXTIDR_EL2".to_owned(),
        other => format!("context index {other} (reserved)"),
    }
}

#[derive(Debug, Serialize)]
struct OperationOut {
    class: &'static str,
    payload: String,
    /// What the type filter counts it as (PMSFCR_EL1.LD/ST/B).
    types: Vec<&'static str>,
    /// Load/store class: `load` or `store` (payload bit 0), atomics and exclusives included.
    direction: Option<&'static str>,
    /// The sub-fields by perf's names (`LD`, `AT`, `EXCL`, `AR`, `GP-REG`, `SIMD-FP`, `PRED`,
    /// `SG`, `B`, `COND`, `IND`, `GCS`, `CR-BL`, …).
    details: Vec<&'static str>,
    /// SVE operations: the effective vector length in bits.
    sve_evlen: Option<u32>,
    /// The whole packet as perf prints it (`LD AT GP-REG`).
    text: String,
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

fn error_out(e: &DecodeError) -> ErrorOut {
    ErrorOut {
        offset: e.offset(),
        kind: match e {
            DecodeError::Truncated { .. } => "Truncated",
            DecodeError::Invalid { .. } => "Invalid",
            DecodeError::ReservedOperationClass { .. } => "ReservedOperationClass",
            DecodeError::UnterminatedRecord { .. } => "UnterminatedRecord",
        },
        message: e.to_string(),
    }
}

fn address_out(a: &AddressPacket) -> AddressOut {
    let instruction = matches!(
        a.kind(),
        AddressKind::InstructionVirtual
            | AddressKind::BranchTarget
            | AddressKind::PreviousBranchTarget
    );
    let physical = a.kind() == AddressKind::DataPhysical;
    AddressOut {
        address: format!("{:#x}", a.virtual_address()),
        payload: format!("{:#x}", a.payload),
        el: instruction.then(|| a.exception_level()),
        ns: (instruction || physical).then(|| a.non_secure()),
        tag: (a.kind() == AddressKind::DataVirtual).then(|| format!("{:#04x}", a.tag())),
        ch: physical.then(|| a.checked()),
        pat: physical.then(|| a.physical_tag()),
    }
}

fn class_name(o: &OperationTypePacket) -> &'static str {
    match o.class() {
        OperationClass::Other => "other",
        OperationClass::LoadStoreAtomic => "load/store/atomic",
        OperationClass::BranchOrExceptionReturn => "branch",
        OperationClass::Reserved => "reserved",
    }
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

fn operation_out(o: &OperationTypePacket) -> OperationOut {
    OperationOut {
        class: class_name(o),
        payload: format!("{:#x}", o.payload),
        types: type_names(o.operation_types()),
        direction: (o.class() == OperationClass::LoadStoreAtomic).then_some(if o.is_store() {
            "store"
        } else {
            "load"
        }),
        details: o.details().names().to_vec(),
        sve_evlen: o.sve_evlen(),
        text: o.to_string(),
    }
}

fn record_out(r: &SampleRecord) -> RecordOut {
    RecordOut {
        offset: r.offset,
        len: r.len,
        packets: r.packets,
        pc: r.pc.as_ref().map(address_out),
        branch_target: r.branch_target.as_ref().map(address_out),
        previous_branch_target: r.previous_branch_target.as_ref().map(address_out),
        data_virtual: r.data_virtual.as_ref().map(address_out),
        data_physical: r.data_physical.as_ref().map(address_out),
        operation: r.operation.as_ref().map(operation_out),
        events: r.events.map(names::event_names),
        events_mask: r.events.map(|e| format!("{:#x}", e.bits())),
        total_latency: r.total_latency,
        issue_latency: r.issue_latency,
        translation_latency: r.translation_latency,
        data_source: r.data_source,
        context: r.context.map(|(index, value)| ContextOut {
            register: context_register(index),
            value,
        }),
        timestamp: r.timestamp,
    }
}

fn address_text(label: &str, a: &AddressOut) -> String {
    let mut s = format!("{label} {}", a.address);
    if let Some(el) = a.el {
        s.push_str(&format!(" EL{el}"));
    }
    if a.ns == Some(true) {
        s.push_str(" NS");
    }
    if let Some(tag) = a.tag.as_deref().filter(|t| *t != "0x00") {
        s.push_str(&format!(" tag {tag}"));
    }
    if a.ch == Some(true) {
        s.push_str(" CH");
    }
    if let Some(pat) = a.pat.filter(|&p| p != 0) {
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
            format!(
                "{} (payload {:#x})",
                address_text(&label, &address_out(a)),
                a.payload
            )
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
        Packet::Context(c) => format!("{} {}", context_register(c.index), c.value),
        Packet::OperationType(o) => format!("{} payload {:#x}: {o}", class_name(o), o.payload),
        Packet::Events(e) => format!(
            "{:#x} {} ({}-byte payload)",
            e.events.bits(),
            names::event_names(e.events).join(" "),
            e.size
        ),
        Packet::DataSource(d) => format!("{:#x} ({}-byte payload)", d.value, d.size),
    }
}

fn record_line(r: &RecordOut) -> String {
    let mut parts = Vec::new();
    if let Some(a) = &r.pc {
        parts.push(address_text("PC", a));
    }
    if let Some(o) = &r.operation {
        parts.push(o.text.clone());
    }
    if let Some(e) = &r.events {
        parts.push(format!("events {}", e.join(" ")));
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
        parts.push(format!("source {d:#x}"));
    }
    if let Some(c) = &r.context {
        parts.push(format!("{} {}", c.register, c.value));
    }
    if let Some(t) = r.timestamp {
        parts.push(format!("ts {t:#x}"));
    }
    format!(
        "record @{:#06x} ({} bytes, {} packets): {}",
        r.offset,
        r.len,
        r.packets,
        parts.join(" | ")
    )
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

    let mut records = Vec::new();
    let mut errors = Vec::new();
    // Records and errors in stream order, for the listing.
    let mut listing: Vec<Result<usize, usize>> = Vec::new();
    for item in decode::records(&bytes) {
        match item {
            Ok(r) => {
                listing.push(Ok(records.len()));
                records.push(record_out(&r));
            }
            Err(e) => {
                listing.push(Err(errors.len()));
                errors.push(error_out(&e));
            }
        }
    }
    let packets = args.packets.then(|| {
        decode::packets(&bytes)
            .map(|p| match p {
                Ok(p) => PacketOut {
                    offset: p.offset,
                    len: p.len,
                    name: p.packet.name(),
                    detail: packet_detail(&p.packet),
                    error: None,
                },
                Err(e) => PacketOut {
                    offset: e.offset(),
                    len: 1,
                    name: "ERROR",
                    detail: String::new(),
                    error: Some(error_out(&e)),
                },
            })
            .collect::<Vec<_>>()
    });
    let out = Output {
        file: args.file.display().to_string(),
        bytes: bytes.len(),
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
        if let Some(packets) = &out.packets {
            println!("packets:");
            for p in packets {
                match &p.error {
                    Some(e) => println!("  error @{:#06x}: {}", e.offset, e.message),
                    None => {
                        let line = format!(
                            "  @{:#06x} +{:<2} {:<11} {}",
                            p.offset, p.len, p.name, p.detail
                        );
                        println!("{}", line.trim_end());
                    }
                }
            }
            println!("records:");
        }
        for entry in &listing {
            match *entry {
                Ok(i) => println!("{}", record_line(&out.records[i])),
                Err(i) => {
                    let e = &out.errors[i];
                    println!("error @{:#06x}: {}", e.offset, e.message);
                }
            }
        }
        println!(
            "{} records, {} errors in {} bytes of {}",
            out.records.len(),
            out.errors.len(),
            out.bytes,
            out.file
        );
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
