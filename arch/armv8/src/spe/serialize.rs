//! `serde::Serialize` for the SPE types a tool prints: capabilities, a configuration request,
//! register values with their fields, perf event attributes, perf.data chunks, decoded
//! records and decode errors (feature `serde`; no_std, no allocation).
//!
//! The shape is made for JSON readers, whatever the serializer:
//! - register words, config words, payloads and event masks are hex strings (`"0x26407"`).
//!   A JSON number cannot hold every `u64` in most readers (JavaScript's is a double, exact
//!   to 2^53), and a hex string shows the bits as the Arm ARM and `perf` print them;
//! - counts, latencies, offsets and small fields are numbers;
//! - an event set is two keys: the names of its bits in bit order (as
//!   [`SpeRegister::fields`] names them, `E[12]` for an unnamed bit) and the whole mask;
//! - an absent optional value is `null` (the key is always there);
//! - names are the library's own: register names (`PMSFCR_EL1`), field names as the Arm ARM
//!   spells them, packet sub-fields as perf prints them, errors and warnings as
//!   `{kind, message}` with the variant's name.
//!
//! Where every key is one field, the type derives `Serialize` next to its definition, with
//! field attributes naming the helpers here (`with = "crate::spe::serialize::hex"`,
//! `rename`): [`PerfEventAttr`](super::perf::PerfEventAttr),
//! [`PerfFileAttr`](super::perf_data::PerfFileAttr),
//! [`AuxtraceChunk`](super::perf_data::AuxtraceChunk),
//! [`FieldInfo`](super::register_set::FieldInfo) and [`ContextPacket`]; their fields are
//! declared in the order of their keys. The rest keep a short hand impl below, each saying
//! which key a derive cannot produce: a key computed from another field or from several
//! (`pmsver`, an event set's `*_mask`, a packet's decoded address), or keys that are no
//! field at all (an error's `kind` and `message`). A derive could add such keys only through
//! `#[serde(flatten)]`, and serde implements flatten with a serializer that needs its
//! `alloc` feature (`FlatMapSerializer`), which this no_std crate does without.
//!
//! ```
//! use pmu_armv8::spe::{SpeCapabilities, SpeConfigBuilder, SpeEvents, SpeVersion};
//!
//! let caps = SpeCapabilities::decode_raw(SpeVersion::V1p4, 0x3_6077, 0);
//! let config = SpeConfigBuilder::new()
//!     .require_events(SpeEvents::LLC_MISS)
//!     .build(&caps)
//!     .unwrap();
//! let json = serde_json::to_value(config.registers()).unwrap();
//! assert_eq!(json[1]["name"], "PMSEVFR_EL1");
//! assert_eq!(json[1]["hex"], "0x200");
//! assert_eq!(json[1]["fields"][0]["name"], "LLC_MISS");
//! ```

use core::fmt;

use serde::ser::{Serialize, SerializeStruct, Serializer};

use super::capabilities::SpeCapabilities;
use super::config::{ExceptionLevels, OperationTypes, SpeConfigBuilder, TimestampSource};
use super::decode::{
    AddressPacket, ContextPacket, DecodeError, OperationClass, OperationTypePacket, SampleRecord,
};
use super::error::{SpeError, SpeWarning};
use super::events::SpeEvents;
use super::register_set::{SpeRegister, SpeRegisterValues};

// ---- helpers: `#[serde(with = "crate::spe::serialize::…")]` modules for the derived impls,
// and value forms for the hand impls ----

/// A `u64` as `0x…`: register and config words, payloads, masks.
pub(crate) mod hex {
    use serde::Serializer;

    /// `value` as `0x…`.
    pub(crate) fn serialize<S: Serializer>(value: &u64, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&format_args!("{value:#x}"))
    }
}

/// [`hex`] for the hand impls.
struct Hex(u64);

impl Serialize for Hex {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        hex::serialize(&self.0, serializer)
    }
}

/// perf's `tid`, a `u32` holding -1 for "no thread" (`u32::MAX`), signed as perf prints it.
pub(crate) mod perf_tid {
    use serde::Serializer;

    /// `tid` as an `i32`.
    pub(crate) fn serialize<S: Serializer>(tid: &u32, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_i64(i64::from(*tid as i32))
    }
}

/// A byte slice as its length.
pub(crate) mod byte_count {
    use serde::{Serialize, Serializer};

    /// `data.len()`.
    pub(crate) fn serialize<S: Serializer>(data: &&[u8], serializer: S) -> Result<S::Ok, S::Error> {
        data.len().serialize(serializer)
    }
}

/// A Context packet's index as the register it names
/// ([`ContextPacket::register`](super::ContextPacket::register)), a reserved one as
/// `context index N (reserved)`.
pub(crate) mod context_register {
    use serde::Serializer;

    use crate::spe::decode::ContextPacket;

    /// The register `index` names.
    pub(crate) fn serialize<S: Serializer>(index: &u8, serializer: S) -> Result<S::Ok, S::Error> {
        let packet = ContextPacket {
            index: *index,
            value: 0,
        };
        match packet.register() {
            Some(name) => serializer.serialize_str(name),
            None => serializer.collect_str(&format_args!("context index {index} (reserved)")),
        }
    }
}

/// A tag byte as `0x..`, two digits.
struct TagHex(u8);

impl Serialize for TagHex {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&format_args!("{:#04x}", self.0))
    }
}

/// A value as its `Display` text.
struct Text<T>(T);

impl<T: fmt::Display> Serialize for Text<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

/// The names of an event set's bits, low bits first: the fields PMSEVFR_EL1 would show
/// for it ([`SpeRegister::fields`]).
struct EventNames(SpeEvents);

impl Serialize for EventNames {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(SpeRegister::Pmsevfr.fields(self.0.bits()).map(|f| f.name))
    }
}

/// The names of the flags in `set` that `names` spells, in its order.
struct FlagNames<T: 'static, const N: usize>(T, &'static [(T, &'static str); N]);

impl<T: bitflags::Flags + Copy, const N: usize> Serialize for FlagNames<T, N> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Self(set, names) = self;
        serializer.collect_seq(
            names
                .iter()
                .filter(|(flag, _)| set.contains(*flag))
                .map(|(_, name)| name),
        )
    }
}

const REQUEST_TYPES: &[(OperationTypes, &str); 5] = &[
    (OperationTypes::LOADS, "loads"),
    (OperationTypes::STORES, "stores"),
    (OperationTypes::BRANCHES, "branches"),
    (OperationTypes::SIMD, "simd"),
    (OperationTypes::FLOAT, "float"),
];
const PACKET_TYPES: &[(OperationTypes, &str); 3] = &[
    (OperationTypes::LOADS, "load"),
    (OperationTypes::STORES, "store"),
    (OperationTypes::BRANCHES, "branch"),
];
const LEVELS: &[(ExceptionLevels, &str); 2] =
    &[(ExceptionLevels::EL0, "el0"), (ExceptionLevels::EL1, "el1")];

// ---- hand impls: types with a key that is no single field ----

/// `{version, pmsver, pmsidr, pmbidr, <every capability>}`: the decoded fields by their
/// Rust names, a reserved code as `null`, the raw registers as hex. By hand: `pmsver` is
/// computed from `version`, a second key from one field.
impl Serialize for SpeCapabilities {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("SpeCapabilities", 21)?;
        s.serialize_field("version", &Text(self.version))?;
        s.serialize_field("pmsver", &self.version.pmsver())?;
        s.serialize_field("pmsidr", &Hex(self.pmsidr))?;
        s.serialize_field("pmbidr", &Hex(self.pmbidr))?;
        s.serialize_field("filter_by_event", &self.filter_by_event)?;
        s.serialize_field("filter_by_type", &self.filter_by_type)?;
        s.serialize_field("filter_by_latency", &self.filter_by_latency)?;
        s.serialize_field("inverted_event_filter", &self.inverted_event_filter)?;
        s.serialize_field("data_source_filter", &self.data_source_filter)?;
        s.serialize_field("extended_type_filter", &self.extended_type_filter)?;
        s.serialize_field("extended_random", &self.extended_random)?;
        s.serialize_field(
            "architectural_instructions",
            &self.architectural_instructions,
        )?;
        s.serialize_field("loaded_data_source", &self.loaded_data_source)?;
        s.serialize_field("previous_branch_target", &self.previous_branch_target)?;
        s.serialize_field("min_interval", &self.min_interval.ok())?;
        s.serialize_field("counter_bits", &self.counter_size.ok().map(|c| c.bits()))?;
        s.serialize_field("max_record_size", &self.max_record_size.ok())?;
        s.serialize_field("record_format", &self.record_format)?;
        s.serialize_field("buffer_align", &self.buffer_align.ok())?;
        s.serialize_field("buffer_owned_by_higher_el", &self.buffer_owned_by_higher_el)?;
        s.serialize_field("hardware_flag_updates", &self.hardware_flag_updates)?;
        s.end()
    }
}

/// The request as asked: `operation_types` `["loads", "stores", "branches", "simd",
/// "float"]` (`null`: every type) with `all_types`, event sets as names plus mask,
/// `data_sources` as a hex mask (`null`: no filter), `timestamps` `"virtual"`/`"physical"`,
/// `exception_levels` `["el0", "el1"]`. By hand: each event set is two keys
/// (`required_events` and `required_mask`).
impl Serialize for SpeConfigBuilder {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("SpeConfigBuilder", 14)?;
        s.serialize_field(
            "operation_types",
            &self.operation_types.map(|t| FlagNames(t, REQUEST_TYPES)),
        )?;
        s.serialize_field("all_types", &self.all_types)?;
        s.serialize_field("data_sources", &self.data_sources.map(Hex))?;
        s.serialize_field("min_latency", &self.min_latency)?;
        s.serialize_field("required_events", &self.required_events.map(EventNames))?;
        s.serialize_field(
            "required_mask",
            &self.required_events.map(|e| Hex(e.bits())),
        )?;
        s.serialize_field("excluded_events", &self.excluded_events.map(EventNames))?;
        s.serialize_field(
            "excluded_mask",
            &self.excluded_events.map(|e| Hex(e.bits())),
        )?;
        s.serialize_field("interval", &self.interval)?;
        s.serialize_field("jitter", &self.jitter)?;
        s.serialize_field(
            "timestamps",
            &self.timestamps.map(|t| match t {
                TimestampSource::Virtual => "virtual",
                TimestampSource::Physical => "physical",
            }),
        )?;
        s.serialize_field("physical_addresses", &self.physical_addresses)?;
        s.serialize_field("context", &self.context)?;
        s.serialize_field(
            "exception_levels",
            &FlagNames(self.exception_levels, LEVELS),
        )?;
        s.end()
    }
}

/// The registers in programming order ([`SpeRegisterValues::in_programming_order`]), each
/// `{name, value, hex, fields}`. By hand: a list built from the struct, with `hex` and
/// `fields` computed from each value.
impl Serialize for SpeRegisterValues {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(
            self.in_programming_order()
                .map(|(register, value)| RegisterValue { register, value }),
        )
    }
}

struct RegisterValue {
    register: SpeRegister,
    value: u64,
}

impl Serialize for RegisterValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("RegisterValue", 4)?;
        s.serialize_field("name", self.register.name())?;
        s.serialize_field("value", &self.value)?;
        s.serialize_field("hex", &Hex(self.value))?;
        s.serialize_field("fields", &Fields(self))?;
        s.end()
    }
}

struct Fields<'a>(&'a RegisterValue);

impl Serialize for Fields<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.register.fields(self.0.value))
    }
}

/// `{kind, message}`: [`SpeError::kind`], the variant's name, and the `Display` text. By
/// hand: neither key is a field.
impl Serialize for SpeError {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        kind_and_message(serializer, "SpeError", self.kind(), self)
    }
}

/// `{kind, message}`: [`SpeWarning::kind`], the variant's name, and the `Display` text. By
/// hand: neither key is a field.
impl Serialize for SpeWarning {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        kind_and_message(serializer, "SpeWarning", self.kind(), self)
    }
}

/// The `{kind, message}` of an error or a warning.
fn kind_and_message<S: Serializer>(
    serializer: S,
    name: &'static str,
    kind: &'static str,
    message: &dyn fmt::Display,
) -> Result<S::Ok, S::Error> {
    let mut s = serializer.serialize_struct(name, 2)?;
    s.serialize_field("kind", kind)?;
    s.serialize_field("message", &Text(message))?;
    s.end()
}

/// `{offset, kind, message}`: `kind` is the variant's name, `message` its `Display`. By
/// hand: every variant has an `offset` but their other fields differ, and `kind` and
/// `message` are no field.
impl Serialize for DecodeError {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("DecodeError", 3)?;
        s.serialize_field("offset", &self.offset())?;
        s.serialize_field(
            "kind",
            match self {
                Self::Truncated { .. } => "Truncated",
                Self::Invalid { .. } => "Invalid",
                Self::ReservedOperationClass { .. } => "ReservedOperationClass",
                Self::UnterminatedRecord { .. } => "UnterminatedRecord",
            },
        )?;
        s.serialize_field("message", &Text(self))?;
        s.end()
    }
}

/// `{address, payload, el, ns, tag, ch, pat}`: the address as
/// [`AddressPacket::virtual_address`] gives it and the raw payload, in hex; then the header
/// bits of [`AddressPacket::attributes`], `null` where the kind does not define them: `el`
/// and `ns` for instruction addresses, `tag` (hex) for data virtual addresses, `ns`, `ch`
/// and `pat` for physical ones. By hand: every key but `payload` is decoded from the index
/// and the payload together.
impl Serialize for AddressPacket {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let a = self.attributes();
        let mut s = serializer.serialize_struct("AddressPacket", 7)?;
        s.serialize_field("address", &Hex(self.virtual_address()))?;
        s.serialize_field("payload", &Hex(self.payload))?;
        s.serialize_field("el", &a.exception_level)?;
        s.serialize_field("ns", &a.non_secure)?;
        s.serialize_field("tag", &a.tag.map(TagHex))?;
        s.serialize_field("ch", &a.checked)?;
        s.serialize_field("pat", &a.physical_tag)?;
        s.end()
    }
}

/// `{class, payload, types, direction, details, sve_evlen, text, sme_ets, subclass,
/// branch}`: `class` is [`OperationClass::name`]; `types` what the type filter counts it as
/// (`load`, `store`, `branch`); `direction` `load`/`store` for the load/store class;
/// `details` the sub-fields by perf's names; `text` the packet as perf prints it;
/// `sme_ets` [`OperationTypePacket::sme_ets`]; `subclass` the typed
/// [`OperationTypePacket::other_subclass`] or [`OperationTypePacket::load_store_subclass`]
/// (`{kind, …}`), `branch` the [`OperationTypePacket::branch`] flags, each `null` for the
/// other classes. By hand: every key but `payload` is decoded from the class and the
/// payload together.
impl Serialize for OperationTypePacket {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("OperationTypePacket", 10)?;
        s.serialize_field("class", self.class().name())?;
        s.serialize_field("payload", &Hex(self.payload))?;
        s.serialize_field("types", &FlagNames(self.operation_types(), PACKET_TYPES))?;
        s.serialize_field(
            "direction",
            &(self.class() == OperationClass::LoadStoreAtomic).then_some(if self.is_store() {
                "store"
            } else {
                "load"
            }),
        )?;
        s.serialize_field("details", self.details().names())?;
        s.serialize_field("sve_evlen", &self.sve_evlen())?;
        s.serialize_field("text", &Text(self))?;
        s.serialize_field("sme_ets", &self.sme_ets())?;
        match (self.other_subclass(), self.load_store_subclass()) {
            (Some(other), _) => s.serialize_field("subclass", &other)?,
            (None, Some(load_store)) => s.serialize_field("subclass", &load_store)?,
            (None, None) => s.serialize_field("subclass", &None::<()>)?,
        }
        s.serialize_field("branch", &self.branch())?;
        s.end()
    }
}

/// `{offset, len, packets, pc, branch_target, previous_branch_target, data_virtual,
/// data_physical, operation, events, events_mask, total_latency, issue_latency,
/// translation_latency, data_source, context, timestamp}`: every field, `null` when its
/// packet was absent; `context` is a [`ContextPacket`]. By hand: the event set is two keys
/// (`events` and `events_mask`).
impl Serialize for SampleRecord {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("SampleRecord", 17)?;
        s.serialize_field("offset", &self.offset)?;
        s.serialize_field("len", &self.len)?;
        s.serialize_field("packets", &self.packets)?;
        s.serialize_field("pc", &self.pc)?;
        s.serialize_field("branch_target", &self.branch_target)?;
        s.serialize_field("previous_branch_target", &self.previous_branch_target)?;
        s.serialize_field("data_virtual", &self.data_virtual)?;
        s.serialize_field("data_physical", &self.data_physical)?;
        s.serialize_field("operation", &self.operation)?;
        s.serialize_field("events", &self.events.map(EventNames))?;
        s.serialize_field("events_mask", &self.events.map(|e| Hex(e.bits())))?;
        s.serialize_field("total_latency", &self.total_latency)?;
        s.serialize_field("issue_latency", &self.issue_latency)?;
        s.serialize_field("translation_latency", &self.translation_latency)?;
        s.serialize_field("data_source", &self.data_source)?;
        s.serialize_field(
            "context",
            &self
                .context
                .map(|(index, value)| ContextPacket { index, value }),
        )?;
        s.serialize_field("timestamp", &self.timestamp)?;
        s.end()
    }
}

#[cfg(test)]
mod tests {
    use std::format;
    use std::string::ToString;
    use std::vec::Vec;

    use serde_json::{json, to_value};

    use super::*;
    use crate::spe::decode::{records, tests::load_record};
    use crate::spe::perf::PerfEventAttr;
    use crate::spe::perf_data::{AuxtraceChunk, PerfFileAttr};
    use crate::spe::version::SpeVersion;

    /// The load record of the decoder's tests (Arm ARM DDI 0487 M.a.a D18.2 packet layout):
    /// every key, addresses with the header bits of their kind, the event set as names plus
    /// mask, the Context packet's register by its index (CT 1: CONTEXTIDR_EL2).
    #[test]
    fn a_decoded_record() {
        let stream = load_record();
        let record = records(&stream).next().unwrap().unwrap();
        assert_eq!(
            to_value(record).unwrap(),
            json!({
                "offset": 0, "len": stream.len(), "packets": 9,
                "pc": {"address": "0x4005d8", "payload": "0x80000000004005d8", "el": 0,
                       "ns": true, "tag": null, "ch": null, "pat": null},
                "branch_target": null,
                "previous_branch_target": null,
                "data_virtual": {"address": "0xffff80001000", "payload": "0xffff80001000",
                                 "el": null, "ns": null, "tag": "0x00", "ch": null,
                                 "pat": null},
                "data_physical": {"address": "0x80001000", "payload": "0x8000000080001000",
                                  "el": null, "ns": true, "tag": null, "ch": false,
                                  "pat": 0},
                "operation": {"class": "load/store/atomic", "payload": "0x0",
                              "types": ["load"], "direction": "load",
                              "details": ["LD", "GP-REG"], "sve_evlen": null,
                              "text": "LD GP-REG", "sme_ets": null,
                              "subclass": {"kind": "general_purpose_register"},
                              "branch": null},
                "events": ["RETIRED", "L1D_ACCESS", "L1D_REFILL", "LLC_ACCESS", "LLC_MISS"],
                "events_mask": "0x30e",
                "total_latency": 150, "issue_latency": 7, "translation_latency": null,
                "data_source": null,
                "context": {"register": "CONTEXTIDR_EL2", "value": 42},
                "timestamp": 0x1234_5678_9ABC_u64,
            })
        );
    }

    /// A decode error: its offset, its variant, its message.
    /// The typed Operation Type keys (Arm ARM DDI 0487 D18.2 payloads): an SVE/SME register
    /// store with PRED and SG (`0xAD`: EVL 0b010 = 128 bits), a common GCS load (`0x44`), an
    /// SME operation with FP (`0x8A`: ETS 0 = 128 bits) and a conditional GCS return (`0x15`).
    #[test]
    fn operation_subclasses_and_branch_flags() {
        use crate::spe::decode::tests::op;
        let v = to_value(op(1, 0xAD)).unwrap();
        assert_eq!(v["text"], "ST SVE-SME-REG EVLEN 128 PRED SG");
        assert_eq!(
            v["subclass"],
            json!({"kind": "sve_sme_register", "effective_vector_length": 128,
                   "predicated": true, "gather_scatter": true})
        );
        assert_eq!((&v["branch"], &v["sme_ets"]), (&json!(null), &json!(null)));
        let v = to_value(op(1, 0x44)).unwrap();
        assert_eq!(
            v["subclass"],
            json!({"kind": "guarded_control_stack", "common": true})
        );
        let v = to_value(op(0, 0x8A)).unwrap();
        assert_eq!(
            v["subclass"],
            json!({"kind": "sme", "effective_tile_size": 128, "floating_point": true})
        );
        assert_eq!(v["sme_ets"], 128);
        let v = to_value(op(2, 0x15)).unwrap();
        assert_eq!(v["subclass"], json!(null));
        assert_eq!(
            v["branch"],
            json!({"conditional": true, "indirect": false, "guarded_control_stack": true,
                   "call_return": "return"})
        );
    }

    #[test]
    fn a_decode_error() {
        let error = DecodeError::Invalid {
            offset: 3,
            header: 0x48,
        };
        let json = to_value(error).unwrap();
        assert_eq!(json["offset"], 3);
        assert_eq!(json["kind"], "Invalid");
        assert_eq!(json["message"], error.to_string());
    }

    /// The FEAT_SPEv1p4 capabilities of PMSIDR_EL1 0x36077 (fields of Arm ARM D24.7.14: FE,
    /// FT, FL, LDS, ERnd, FnE; Interval 0 = 256; MaxSize 6 = 64 bytes; CountSize 3 = 16
    /// bits), a request for loads of at least 120 cycles that missed the LLC (E[9]), and
    /// the registers it programs.
    #[test]
    fn capabilities_request_and_registers() {
        let caps = SpeCapabilities::decode_raw(SpeVersion::V1p4, 0x3_6077, 0);
        let caps_json = to_value(caps).unwrap();
        assert_eq!(caps_json["version"], "FEAT_SPEv1p4");
        assert_eq!(caps_json["pmsver"], 5);
        assert_eq!(caps_json["pmsidr"], "0x36077");
        assert_eq!(caps_json["pmbidr"], "0x0");
        for key in [
            "filter_by_event",
            "filter_by_type",
            "filter_by_latency",
            "inverted_event_filter",
            "loaded_data_source",
            "extended_random",
        ] {
            assert_eq!(caps_json[key], true, "{key}");
        }
        assert_eq!(caps_json["architectural_instructions"], false);
        assert_eq!(caps_json["min_interval"], 256);
        assert_eq!(caps_json["max_record_size"], 64);
        assert_eq!(caps_json["counter_bits"], 16);

        let request = SpeConfigBuilder::new()
            .operation_types(OperationTypes::LOADS)
            .min_latency(120)
            .require_events(SpeEvents::LLC_MISS)
            .exception_levels(ExceptionLevels::EL0);
        assert_eq!(
            to_value(request).unwrap(),
            json!({
                "operation_types": ["loads"], "all_types": false, "data_sources": null,
                "min_latency": 120, "required_events": ["LLC_MISS"], "required_mask": "0x200",
                "excluded_events": null, "excluded_mask": null,
                "interval": null, "jitter": false, "timestamps": null,
                "physical_addresses": false, "context": false,
                "exception_levels": ["el0"],
            })
        );

        let config = request.build(&caps).unwrap();
        let registers = to_value(config.registers()).unwrap();
        let names: Vec<&str> = registers
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        // The programming order, PMSCR_EL1 last (`SpeRegisterValues::in_programming_order`).
        assert_eq!(
            names,
            [
                "PMSLATFR_EL1",
                "PMSEVFR_EL1",
                "PMSNEVFR_EL1",
                "PMSFCR_EL1",
                "PMSIRR_EL1",
                "PMSICR_EL1",
                "PMSCR_EL1"
            ]
        );
        for (r, (_, value)) in registers
            .as_array()
            .unwrap()
            .iter()
            .zip(config.registers().in_programming_order())
        {
            assert_eq!(r["value"], value);
            assert_eq!(r["hex"], format!("{value:#x}"));
        }
        assert_eq!(
            registers[1]["fields"],
            json!([{"name": "LLC_MISS", "msb": 9, "lsb": 9, "value": 1,
                    "description": crate::spe::register_set::EVENT_NAMES[9].1,
                    "meaning": null}])
        );
        // PMSLATFR_EL1.MINLAT is the latency asked for.
        assert_eq!(registers[0]["fields"][0]["name"], "MINLAT");
        assert_eq!(registers[0]["fields"][0]["value"], 120);
    }

    /// Errors and warnings: the variant's name (what `Debug` starts with) and the message.
    #[test]
    fn errors_and_warnings() {
        let error = SpeError::MinLatencyTooLarge {
            value: 5000,
            max: 4095,
        };
        let json = to_value(error).unwrap();
        assert_eq!(json["kind"], "MinLatencyTooLarge");
        assert!(format!("{error:?}").starts_with("MinLatencyTooLarge"));
        assert_eq!(json["message"], error.to_string());
        assert_eq!(
            to_value(SpeError::NotImplemented).unwrap()["kind"],
            "NotImplemented"
        );
        let warning = SpeWarning::TypeFilterWithoutTypes;
        assert_eq!(to_value(warning).unwrap()["kind"], "TypeFilterWithoutTypes");
        assert_eq!(to_value(warning).unwrap()["message"], warning.to_string());
    }

    /// perf's attribute words as hex; a per-CPU chunk's `tid` (u32::MAX in the file, perf's
    /// -1) as -1, its data as a byte count.
    #[test]
    fn perf_attributes_and_chunks() {
        let attr = PerfEventAttr {
            config: 0x1_0000_0001,
            config1: 0x200,
            config2: 120,
            config3: 0,
            config4: 0,
            sample_period: 4096,
            exclude_user: false,
            exclude_kernel: true,
        };
        assert_eq!(
            to_value(attr).unwrap(),
            json!({"config": "0x100000001", "config1": "0x200", "config2": "0x78",
                   "config3": "0x0", "config4": "0x0", "sample_period": 4096, "exclude_user": false,
                   "exclude_kernel": true})
        );
        let chunk = AuxtraceChunk {
            file_offset: 0x1000,
            aux_offset: 64,
            reference: 7,
            idx: 1,
            tid: u32::MAX,
            cpu: 1,
            data: &[0; 5],
        };
        assert_eq!(
            to_value(chunk).unwrap(),
            json!({"cpu": 1, "idx": 1, "tid": -1, "file_offset": 4096, "aux_offset": 64,
                   "reference": 7, "bytes": 5})
        );
    }

    /// The derived impls write keys in field order, and readers of pmu-demo's output see
    /// that order, so the fields of `PerfFileAttr` and `AuxtraceChunk` are declared in the
    /// order their JSON had when it was written by hand: pinned here as text. The attribute
    /// is `perf record -e arm_spe_0/load_filter=1,min_latency=120/u` on a PMU of type 10
    /// (Linux 6.12 arm_spe_pmu.c format: load_filter config:33, min_latency config2:0-11;
    /// PERF_ATTR_SIZE_VER8 is 136 bytes); a reserved Context index (Arm ARM D18.2: CT 2) is
    /// named as such.
    #[test]
    fn derived_shapes_keep_their_key_order() {
        let attr = PerfFileAttr {
            pmu_type: 10,
            config: 1 << 33,
            config1: 0,
            config2: 120,
            config3: 0,
            config4: 0,
            sample_period: 4096,
            exclude_user: false,
            exclude_kernel: true,
            offset: 104,
            size: 136,
        };
        assert_eq!(
            serde_json::to_string(&attr).unwrap(),
            r#"{"pmu_type":10,"config":"0x200000000","config1":"0x0","config2":"0x78","#
                .to_string()
                + r#""config3":"0x0","config4":"0x0","sample_period":4096,"#
                + r#""exclude_user":false,"#
                + r#""exclude_kernel":true,"offset":104,"size":136}"#
        );
        let chunk = AuxtraceChunk {
            cpu: 3,
            idx: 3,
            tid: 1234,
            file_offset: 0x1000,
            aux_offset: 64,
            reference: 7,
            data: &[0; 27],
        };
        assert_eq!(
            serde_json::to_string(&chunk).unwrap(),
            r#"{"cpu":3,"idx":3,"tid":1234,"file_offset":4096,"aux_offset":64,"reference":7,"#
                .to_string()
                + r#""bytes":27}"#
        );
        assert_eq!(
            serde_json::to_string(&ContextPacket { index: 2, value: 9 }).unwrap(),
            r#"{"register":"context index 2 (reserved)","value":9}"#
        );
    }
}
