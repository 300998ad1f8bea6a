//! Differential test: this crate's SPE decoder against Linux perf's own, from two source
//! trees (`pmu_linux_source::Tree`): Debian 12's `linux-source-6.12` and Debian 13
//! backports' `linux-source-7.3`, each compiled at test time from its own files into small
//! harnesses (the C harnesses and the stub headers below are ours; perf's files are
//! extracted, never committed): packet by packet against
//! `tools/perf/util/arm-spe-decoder/arm-spe-pkt-decoder.c`, and record by record against
//! `arm-spe-decoder.c` (`arm_spe_decode()`, the `struct arm_spe_record` perf turns into
//! samples: events, operation flags, total latency, PC, branch target, previous branch
//! target (7.3), data VA and PA, context, data source, timestamp, and where each record and
//! each error ends).
//!
//! Both sides print one canonical line per packet: offset, length, perf's packet type name,
//! index and payload, for Address packets the fields perf's macros extract (address bits
//! \[55:0\], EL, NS, CH, PAT), for Operation Type packets perf's `arm_spe_pkt_desc()` text
//! (the sub-field names: `LD AT`, `B COND IND`, `SVE-OTHER EVLEN 256 FP`, …) and, for 7.3,
//! that of Events packets (`EV RETIRED L2D-ACCESS IMPDEF:48`, with the MIDR 7.3's packet
//! decoder takes: no MIDR, and Neoverse-N1's, whose E\[12\] it names); an undecodable byte
//! prints `ERR` and both skip one byte, as perf's `arm_spe_get_next_packet()` does. Perf's
//! `arm_spe_get_packet()` merges a Padding (or Alignment) packet with the zero bytes after
//! it, up to 16, for display; the Rust side applies the same merge when printing. perf
//! reports a lone extended-header byte at the end as a bad packet and we as truncated: both
//! print `ERR`.
//!
//! Our decoder follows 7.3. Where 6.12's perf printed less for the same bytes, the 6.12
//! comparison maps our values to what 6.12 printed, and says so:
//! - Operation Type text (`op_desc_6_12`): 6.12 printed `OTHER COND-SELECT`/`INSN-OTHER` for
//!   every non-SVE "other" operation (7.3: `SME-OTHER ETS n`, `OTHER ASE FP …`, or nothing
//!   for an unallocated subclass), no `SVE-SME-REG` before `EVLEN`, and `LD`/`ST` alone for a
//!   GCS access (7.3: `GCS COMM`);
//! - Events text: compared for 7.3 only (6.12 named fewer bits and no IMPDEF ones);
//! - records: 6.12's `type` is its ten-flag `enum arm_spe_sample_type`
//!   (`perf_sample_type_6_12`), 7.3's the Events payload itself; 6.12's `op` has the class,
//!   LD/ST and SVE flags (`perf_op_6_12`), 7.3's every subclass and flag (`perf_op_7_3`);
//!   7.3 adds `prev_br_tgt`. 6.12 ORs repeated Events packets where 7.3 (and we) keep the
//!   last: such records are compared by boundary only for 6.12.
//!
//! The corpus: hand-built records and packets (every header byte, every extended header,
//! alignment at every offset, every Operation Type payload of every class, every truncation
//! of three full records, one record per field 6.12 did not decode (`new_field_records`), a
//! long multi-record stream), deterministic pseudo-random streams, and the fuzzer-generated
//! inputs in `tests/data/spe_decode_fuzz_corpus.hex` (minimized from `cargo fuzz run
//! decode`), plus `fuzz/corpus/decode` when a local fuzzing run left one.

use pmu_linux_source::{self as common, Tree};

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use pmu_armv8::spe::decode::{
    decode_packet, records, CallReturn, DecodeError, LoadStoreSubclass, OperationClass,
    OperationTypePacket, OtherSubclass, Packet, SampleRecord,
};
use pmu_armv8::spe::SpeEvents;

/// The C side: reads `[u32 length][bytes]...` from the file named by argv[1], decodes each
/// case from a page-aligned buffer (perf measures Alignment packets from the buffer address,
/// and its AUX buffer is page aligned) and prints the canonical lines.
const HARNESS_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include "arm-spe-pkt-decoder.h"

int main(int argc, char **argv)
{
	FILE *f;
	unsigned char *data;
	long size;
	size_t off = 0;
	unsigned n = 0;
	unsigned long long midr;

	if (argc != 3 || !(f = fopen(argv[1], "rb")))
		return 2;
	midr = strtoull(argv[2], NULL, 16);
	(void)midr;
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fseek(f, 0, SEEK_SET);
	data = malloc(size + 1);
	if (fread(data, 1, size, f) != (size_t)size)
		return 3;
	fclose(f);
	while (off + 4 <= (size_t)size) {
		uint32_t len;
		unsigned char *buf;
		size_t pos = 0;

		memcpy(&len, data + off, 4);
		off += 4;
		buf = aligned_alloc(4096, ((len + 4095) / 4096 + 1) * 4096);
		memcpy(buf, data + off, len);
		off += len;
		printf("CASE %u\n", n++);
		while (pos < len) {
			struct arm_spe_pkt pkt;
#ifdef SPE_TREE_7_3
			int ret = arm_spe_get_packet(buf + pos, len - pos, &pkt, midr);
#else
			int ret = arm_spe_get_packet(buf + pos, len - pos, &pkt);
#endif

			if (ret <= 0) {
				printf("%zu ERR\n", pos);
				pos += 1;
				continue;
			}
			printf("%zu %d %s %u %llx", pos, ret, arm_spe_pkt_name(pkt.type),
			       (unsigned)pkt.index, (unsigned long long)pkt.payload);
			if (pkt.type == ARM_SPE_ADDRESS)
				printf(" addr=%llx el=%llu ns=%llu ch=%llu pat=%llx",
				       (unsigned long long)SPE_ADDR_PKT_ADDR_GET_BYTES_0_6(pkt.payload),
				       (unsigned long long)SPE_ADDR_PKT_GET_EL(pkt.payload),
				       (unsigned long long)SPE_ADDR_PKT_GET_NS(pkt.payload),
				       (unsigned long long)SPE_ADDR_PKT_GET_CH(pkt.payload),
				       (unsigned long long)SPE_ADDR_PKT_GET_PAT(pkt.payload));
			if (pkt.type == ARM_SPE_OP_TYPE
#ifdef SPE_TREE_7_3
			    || pkt.type == ARM_SPE_EVENTS
#endif
			    ) {
				/* Zeroed: 7.3 writes nothing for an unallocated "other"
				 * subclass, and perf's own arm_spe_dump() then prints an
				 * uninitialized buffer. */
				char desc[ARM_SPE_PKT_DESC_MAX] = "";

				arm_spe_pkt_desc(&pkt, desc, sizeof(desc));
				printf(" desc=%s", desc);
			}
			printf("\n");
			pos += ret;
		}
		free(buf);
	}
	printf("END %u\n", n);
	return 0;
}
"#;

/// Minimal stand-ins for the kernel-tools headers perf's decoder includes.
const STUB_HEADERS: &[(&str, &str)] = &[
    (
        "linux/bitops.h",
        "#pragma once\n#include <linux/kernel.h>\n#define BIT(nr) (1UL << (nr))\n#define BIT_ULL(nr) (1ULL << (nr))\n\
         #define GENMASK_ULL(h, l) (((~0ULL) << (l)) & (~0ULL >> (63 - (h))))\n\
         #define GENMASK(h, l) GENMASK_ULL(h, l)\n",
    ),
    (
        "linux/kernel.h",
        "#pragma once\n#include <stdint.h>\ntypedef uint64_t u64;\ntypedef uint32_t u32;\n\
         typedef uint16_t u16;\ntypedef uint8_t u8;\n",
    ),
    (
        "linux/bitfield.h",
        "#pragma once\n#include <linux/bitops.h>\n\
         #define FIELD_GET(mask, reg) (((reg) & (mask)) >> __builtin_ctzll(mask))\n",
    ),
    (
        "linux/unaligned.h",
        "#pragma once\n#include <stdint.h>\n#include <string.h>\n\
         static inline uint16_t get_unaligned_le16(const void *p) { uint16_t v; memcpy(&v, p, 2); return v; }\n\
         static inline uint32_t get_unaligned_le32(const void *p) { uint32_t v; memcpy(&v, p, 4); return v; }\n\
         static inline uint64_t get_unaligned_le64(const void *p) { uint64_t v; memcpy(&v, p, 8); return v; }\n",
    ),
];

/// The record-level C side: perf's `arm_spe_decode()` (arm-spe-decoder.c) over each case,
/// fed by a `get_trace` callback that hands over the whole (page-aligned) buffer once, as
/// perf's `arm_spe_get_trace()` hands over an AUX buffer. One line per `arm_spe_decode()`
/// call: `REC <end offset> <fields of struct arm_spe_record>` for a record, `ERR <end
/// offset>` for an error (perf drops the partial record and goes on, as `arm_spe_run_decoder()`
/// does); the end of the data ends the case.
const RECORD_HARNESS_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include "arm-spe-decoder.h"

struct feed { const unsigned char *buf; size_t len; int given; };

static int get_trace(struct arm_spe_buffer *b, void *data)
{
	struct feed *f = data;

	if (f->given) {
		b->len = 0;
		return 0;
	}
	f->given = 1;
	b->buf = f->buf;
	b->len = f->len;
	return 0;
}

int main(int argc, char **argv)
{
	FILE *f;
	unsigned char *data;
	long size;
	size_t off = 0;
	unsigned n = 0;
	unsigned long long midr;

	if (argc != 3 || !(f = fopen(argv[1], "rb")))
		return 2;
	midr = strtoull(argv[2], NULL, 16);
	(void)midr;
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fseek(f, 0, SEEK_SET);
	data = malloc(size + 1);
	if (fread(data, 1, size, f) != (size_t)size)
		return 3;
	fclose(f);
	while (off + 4 <= (size_t)size) {
		uint32_t len;
		unsigned char *buf;
		struct feed feed;
		struct arm_spe_params params;
		struct arm_spe_decoder *d;

		memcpy(&len, data + off, 4);
		off += 4;
		buf = aligned_alloc(4096, ((len + 4095) / 4096 + 1) * 4096);
		memcpy(buf, data + off, len);
		off += len;
		printf("CASE %u\n", n++);
		feed.buf = buf;
		feed.len = len;
		feed.given = 0;
		params.get_trace = get_trace;
		params.data = &feed;
		d = arm_spe_decoder_new(&params);
#ifdef SPE_TREE_7_3
		d->midr = midr;
#endif
		for (;;) {
			int ret = arm_spe_decode(d);
			size_t end = (size_t)(d->buf - buf);
			const struct arm_spe_record *r = &d->record;

			if (ret == 0)
				break;
			if (ret < 0) {
				printf("ERR %zu\n", end);
				continue;
			}
#ifdef SPE_TREE_7_3
			printf("REC %zu type=%llx op=%x lat=%u from=%llx to=%llx prev=%llx ts=%llx va=%llx pa=%llx ctx=%llx src=%x\n",
			       end, (unsigned long long)r->type, (unsigned)r->op, (unsigned)r->latency,
			       (unsigned long long)(r->from_ip & 0x00ffffffffffffffULL),
			       (unsigned long long)(r->to_ip & 0x00ffffffffffffffULL),
			       (unsigned long long)(r->prev_br_tgt & 0x00ffffffffffffffULL),
#else
			printf("REC %zu type=%x op=%x lat=%u from=%llx to=%llx ts=%llx va=%llx pa=%llx ctx=%llx src=%x\n",
			       end, (unsigned)r->type, (unsigned)r->op, (unsigned)r->latency,
			       (unsigned long long)(r->from_ip & 0x00ffffffffffffffULL),
			       (unsigned long long)(r->to_ip & 0x00ffffffffffffffULL),
#endif
			       (unsigned long long)r->timestamp,
			       (unsigned long long)r->virt_addr,
			       (unsigned long long)r->phys_addr,
			       (unsigned long long)r->context_id, (unsigned)r->source);
		}
		arm_spe_decoder_free(d);
		free(buf);
	}
	printf("END %u\n", n);
	return 0;
}
"#;

/// Stand-ins for the perf-internal headers arm-spe-decoder.c includes (`../auxtrace.h` and
/// friends resolve against `stub-include/quote/..`).
const RECORD_STUB_HEADERS: &[(&str, &str)] = &[
    ("quote/.keep", ""),
    ("auxtrace.h", "#pragma once\n"),
    ("util.h", "#pragma once\n"),
    (
        "debug.h",
        "#pragma once\n#define pr_debug(...) do { } while (0)\n\
         #define pr_err(...) do { } while (0)\n#define pr_warning(...) do { } while (0)\n",
    ),
    ("linux/compiler.h", "#pragma once\n"),
    (
        "linux/zalloc.h",
        "#pragma once\n#include <stdlib.h>\n\
         static inline void *zalloc(size_t n) { return calloc(1, n); }\n",
    ),
];

/// More stand-ins for Linux 7.3's packet decoder, which includes `<linux/bitmap.h>` and
/// `"../../arm64/include/asm/cputype.h"` (tools/arch/arm64/include/asm/cputype.h, for the
/// MIDR matching of its event names). Ours: the one MIDR it names, and the match perf's
/// `is_midr_in_range_list()` makes for `MIDR_ALL_VERSIONS` (implementer, architecture and
/// part number: MIDR_EL1 bits \[31:24\], \[19:16\], \[15:4\], Arm ARM D23.2).
const STUB_HEADERS_7_3: &[(&str, &str)] = &[
    ("linux/bitmap.h", "#pragma once\n"),
    // Reached from the `-I <stubs>/deep/er` directory through the `../../` of the include.
    ("deep/er/.keep", ""),
    (
        "arm64/include/asm/cputype.h",
        "#pragma once\n#include <stdbool.h>\n\
         #define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))\n\
         struct midr_range { u32 model; };\n\
         #define MIDR_NEOVERSE_N1 ((0x41u << 24) | (0xfu << 16) | (0xd0cu << 4))\n\
         #define MIDR_ALL_VERSIONS(m) { .model = (m) }\n\
         static inline bool is_midr_in_range_list(u64 midr, const struct midr_range *r)\n\
         { for (; r->model; r++) if ((midr & 0xff0ffff0u) == r->model) return true; return false; }\n",
    ),
];

/// The Neoverse-N1 MIDR (implementer 0x41, part 0xD0C, r0p0 architecture 0xF), whose
/// IMPLEMENTATION DEFINED event E\[12\] Linux 7.3's perf names; 0 is "no MIDR known".
const MIDR_NEOVERSE_N1: u32 = 0x410F_D0C0;

/// The harness binaries, built once per tree and kind per test process (the tests run in
/// parallel threads and would otherwise extract and compile into the same paths at once);
/// cached next to the extracted sources across runs.
static HARNESSES: std::sync::Mutex<Vec<((Tree, &'static str), PathBuf)>> =
    std::sync::Mutex::new(Vec::new());

fn cached(tree: Tree, kind: &'static str, build: impl FnOnce() -> PathBuf) -> PathBuf {
    let mut built = HARNESSES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, path)) = built.iter().find(|(key, _)| *key == (tree, kind)) {
        return path.clone();
    }
    let path = build();
    built.push(((tree, kind), path.clone()));
    path
}

/// perf's packet decoder (arm-spe-pkt-decoder.c) of `tree` in a harness.
fn perf_harness(tree: Tree) -> PathBuf {
    cached(tree, "packet", || {
        build_harness(tree, "packet", HARNESS_C, &["arm-spe-pkt-decoder.c"], &[])
    })
}

/// perf's record decoder (arm-spe-decoder.c on top of arm-spe-pkt-decoder.c) of `tree` in
/// a harness.
fn perf_record_harness(tree: Tree) -> PathBuf {
    cached(tree, "record", || {
        build_harness(
            tree,
            "record",
            RECORD_HARNESS_C,
            &["arm-spe-pkt-decoder.c", "arm-spe-decoder.c"],
            RECORD_STUB_HEADERS,
        )
    })
}

/// Runs a harness over `cases` (each written as a little-endian u32 length and its bytes)
/// with `midr` as its MIDR argument. Every call writes its own input file: the tests run
/// in parallel in one process, and two of them once shared a file name, so one read the
/// other's case.
fn run_harness(harness: &Path, cases: &[Vec<u8>], midr: u32) -> Output {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "spe-harness-input-{}-{}.bin",
        std::process::id(),
        CALLS.fetch_add(1, Ordering::Relaxed)
    ));
    let mut input = Vec::new();
    for case in cases {
        input.extend_from_slice(&u32::try_from(case.len()).unwrap().to_le_bytes());
        input.extend_from_slice(case);
    }
    fs::write(&path, &input).unwrap();
    let output = Command::new(harness)
        .arg(&path)
        .arg(format!("{midr:x}"))
        .output()
        .unwrap();
    let _ = fs::remove_file(&path);
    output
}

fn build_harness(
    tree: Tree,
    name: &str,
    harness_c: &str,
    sources: &[&str],
    extra_stubs: &[(&str, &str)],
) -> PathBuf {
    let root = tree.extract(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")),
        "spe-decoder",
        &["*/tools/perf/util/arm-spe-decoder/arm-spe-*"],
    );
    let source_dir = common::find(&root, "tools/perf/util/arm-spe-decoder");
    let tree_stubs: &[(&str, &str)] = match tree {
        Tree::Linux6_12 => &[],
        Tree::Linux7_3 => STUB_HEADERS_7_3,
    };
    // Keyed by the harness and stub text, so a changed harness is rebuilt.
    let key = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        harness_c.hash(&mut h);
        STUB_HEADERS.hash(&mut h);
        extra_stubs.hash(&mut h);
        tree_stubs.hash(&mut h);
        h.finish()
    };
    let binary = root.join(format!("spe-{name}-harness-{key:016x}"));
    if binary.exists() {
        return binary;
    }
    let stubs = root.join(format!("stub-include-{key:016x}"));
    for (file, text) in STUB_HEADERS.iter().chain(extra_stubs).chain(tree_stubs) {
        let path = stubs.join(file);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    let harness = root.join(format!("{name}-harness-{key:016x}.c"));
    fs::write(&harness, harness_c).unwrap();
    let staging = root.join(format!("spe-{name}-harness.{}", std::process::id()));
    let mut cc = Command::new("cc");
    cc.args(["-std=gnu11", "-O1", "-w"])
        .arg("-I")
        .arg(&stubs)
        .arg("-I")
        .arg(stubs.join("quote"));
    if tree == Tree::Linux7_3 {
        cc.arg("-DSPE_TREE_7_3")
            .arg("-I")
            .arg(stubs.join("deep/er"));
    }
    let output = cc
        .arg("-I")
        .arg(&source_dir)
        .arg("-o")
        .arg(&staging)
        .arg(&harness)
        .args(sources.iter().map(|s| source_dir.join(s)))
        .output()
        .expect("run cc (gcc): install build-essential");
    assert!(
        output.status.success(),
        "compiling Linux {}'s perf SPE decoder ({sources:?}) failed:\n{}",
        tree.version(),
        String::from_utf8_lossy(&output.stderr)
    );
    fs::rename(&staging, &binary).unwrap();
    binary
}

/// Perf's view of a packet: type name, index, payload (`struct arm_spe_pkt`).
fn perf_fields(packet: &Packet) -> (&'static str, u64, u64) {
    match *packet {
        Packet::Padding | Packet::Alignment { .. } => ("PAD", 0, 0),
        Packet::End => ("END", 0, 0),
        Packet::Timestamp(t) => ("TS", 0, t),
        Packet::Address(a) => ("ADDR", a.index.into(), a.payload),
        Packet::Counter(c) => ("LAT", c.index.into(), c.value),
        Packet::Context(c) => ("CONTEXT", c.index.into(), c.value),
        Packet::OperationType(o) => ("OP-TYPE", o.class_bits.into(), o.payload),
        Packet::Events(e) => ("EVENTS", e.size.into(), e.events.bits()),
        Packet::DataSource(d) => ("DATA-SOURCE", 0, d.value),
    }
}

/// Linux 6.12's text for an Operation Type packet, from ours (Linux 7.3's): 6.12 printed
/// `OTHER COND-SELECT` or `OTHER INSN-OTHER` (by payload bit 0) for every "other" operation
/// that is not SVE (7.3: `SME-OTHER ETS n [FP]`, `OTHER [ASE] [FP] …`, or nothing for an
/// unallocated subclass), had no `SVE-SME-REG` word before `EVLEN`, and printed only
/// `LD`/`ST` for a GCS access (7.3: `GCS [COMM]`). Branches and the other load/store
/// subclasses print alike.
fn op_desc_6_12(o: &OperationTypePacket) -> String {
    let text = o.to_string();
    match (o.other_subclass(), o.load_store_subclass()) {
        (Some(OtherSubclass::Sve { .. }), _) => text,
        (Some(_), _) => format!(
            "OTHER {}",
            if o.payload & 1 != 0 {
                "COND-SELECT"
            } else {
                "INSN-OTHER"
            }
        ),
        (_, Some(LoadStoreSubclass::SveSmeRegister { .. })) => text.replace(" SVE-SME-REG", ""),
        (_, Some(LoadStoreSubclass::GuardedControlStack { .. })) => {
            (if o.is_store() { "ST" } else { "LD" }).to_string()
        }
        _ => text,
    }
}

/// Our decoder's canonical lines for one case, as `tree`'s perf prints them (`midr`: the
/// MIDR 7.3's perf is given; 6.12's takes none).
fn ours(tree: Tree, midr: u32, stream: &[u8], out: &mut String) {
    let mut pos = 0;
    while pos < stream.len() {
        match decode_packet(stream, pos) {
            Ok(p) => {
                let (name, index, payload) = perf_fields(&p.packet);
                let mut len = p.len;
                if name == "PAD" {
                    // arm_spe_get_packet(): merge following zero bytes, up to 16 in all.
                    while len < 16 && pos + len < stream.len() && stream[pos + len] == 0 {
                        len += 1;
                    }
                }
                write!(out, "{pos} {len} {name} {index} {payload:x}").unwrap();
                if let Packet::Address(a) = p.packet {
                    write!(
                        out,
                        " addr={:x} el={} ns={} ch={} pat={:x}",
                        a.address_bits(),
                        a.exception_level(),
                        u8::from(a.non_secure()),
                        u8::from(a.checked()),
                        a.physical_tag()
                    )
                    .unwrap();
                }
                if let Packet::OperationType(o) = p.packet {
                    // perf's arm_spe_pkt_desc() text: the sub-field names.
                    match tree {
                        Tree::Linux6_12 => write!(out, " desc={}", op_desc_6_12(&o)).unwrap(),
                        Tree::Linux7_3 => write!(out, " desc={o}").unwrap(),
                    }
                }
                if let (Packet::Events(e), Tree::Linux7_3) = (p.packet, tree) {
                    // 7.3 only: 6.12's event text is not compared (it named fewer bits).
                    write!(out, " desc={}", e.describe(midr)).unwrap();
                }
                out.push('\n');
                pos += len;
            }
            Err(_) => {
                writeln!(out, "{pos} ERR").unwrap();
                pos += 1;
            }
        }
    }
}

/// Linux 6.12 perf's `enum arm_spe_sample_type` bits (arm-spe-decoder.h) for our events
/// (7.3's `record.type` is the Events payload itself).
fn perf_sample_type_6_12(events: SpeEvents) -> u32 {
    [
        (SpeEvents::L1D_ACCESS, 1 << 0),
        (SpeEvents::L1D_REFILL, 1 << 1),
        (SpeEvents::LLC_ACCESS, 1 << 2),
        (SpeEvents::LLC_MISS, 1 << 3),
        (SpeEvents::TLB_ACCESS, 1 << 4),
        (SpeEvents::TLB_WALK, 1 << 5),
        (SpeEvents::MISPREDICTED, 1 << 6),
        (SpeEvents::REMOTE_ACCESS, 1 << 7),
        (SpeEvents::PARTIAL_PREDICATE, 1 << 8),
        (SpeEvents::EMPTY_PREDICATE, 1 << 9),
    ]
    .into_iter()
    .filter(|(e, _)| events.contains(*e))
    .fold(0, |acc, (_, bit)| acc | bit)
}

/// Linux 6.12 perf's `enum arm_spe_op_type` bits (arm-spe-decoder.h, set in
/// `arm_spe_read_record()`) for our record's operation: the class, load or store, SVE.
fn perf_op_6_12(record: &SampleRecord) -> u32 {
    let Some(o) = record.operation else { return 0 };
    match o.class() {
        OperationClass::Other => 1 | if o.sve_evlen().is_some() { 1 << 16 } else { 0 },
        OperationClass::LoadStoreAtomic => {
            (1 << 1)
                | if o.is_store() { 1 << 17 } else { 1 << 16 }
                | if o.sve_evlen().is_some() { 1 << 25 } else { 0 }
        }
        OperationClass::BranchOrExceptionReturn => 1 << 2,
        OperationClass::Reserved => unreachable!("a reserved class is a record error"),
    }
}

/// Linux 7.3 perf's `enum arm_spe_op_type`, `arm_spe_2nd_op_ldst` and
/// `arm_spe_2nd_op_branch` bits (arm-spe-decoder.h, set in `arm_spe_read_record()`) from our
/// typed subclasses and flags.
fn perf_op_7_3(record: &SampleRecord) -> u32 {
    const GP_REG: u32 = 1 << 8;
    const UNSPEC_REG: u32 = 1 << 9;
    const NV_SYSREG: u32 = 1 << 10;
    const SIMD_FP: u32 = 1 << 11;
    const SVE: u32 = 1 << 12;
    const MTE_TAG: u32 = 1 << 13;
    const MEMCPY: u32 = 1 << 14;
    const MEMSET: u32 = 1 << 15;
    const GCS: u32 = 1 << 16;
    const SME: u32 = 1 << 17;
    const ASE: u32 = 1 << 18;
    const LD: u32 = 1 << 20;
    const ST: u32 = 1 << 21;
    const ATOMIC: u32 = 1 << 22;
    const EXCL: u32 = 1 << 23;
    const AR: u32 = 1 << 24;
    const DP: u32 = 1 << 25;
    const PRED: u32 = 1 << 26;
    const SG: u32 = 1 << 27;
    const COMM: u32 = 1 << 28;
    const FP: u32 = 1 << 29;
    const COND: u32 = 1 << 30;
    let flag = |on: bool, bit: u32| if on { bit } else { 0 };
    let Some(o) = record.operation else { return 0 };
    if let Some(sub) = o.other_subclass() {
        return 1 | match sub {
            OtherSubclass::Sve {
                floating_point,
                predicated,
                ..
            } => SVE | DP | flag(floating_point, FP) | flag(predicated, PRED),
            OtherSubclass::Sme { floating_point, .. } => SME | flag(floating_point, FP),
            OtherSubclass::Other {
                advanced_simd,
                floating_point,
                conditional,
            } => flag(advanced_simd, ASE) | flag(floating_point, FP) | flag(conditional, COND),
            OtherSubclass::Unallocated => 0,
        };
    }
    if let Some(sub) = o.load_store_subclass() {
        return (1 << 1)
            | if o.is_store() { ST } else { LD }
            | match sub {
                LoadStoreSubclass::GeneralPurposeRegister => GP_REG,
                LoadStoreSubclass::SimdFp => SIMD_FP,
                LoadStoreSubclass::UnspecifiedRegister => UNSPEC_REG,
                LoadStoreSubclass::NestedVirtualizationSysreg => NV_SYSREG,
                LoadStoreSubclass::MteTag => MTE_TAG,
                LoadStoreSubclass::Extended {
                    atomic,
                    exclusive,
                    acquire_release,
                } => flag(acquire_release, AR) | flag(exclusive, EXCL) | flag(atomic, ATOMIC),
                LoadStoreSubclass::SveSmeRegister {
                    predicated,
                    gather_scatter,
                    ..
                } => SVE | flag(predicated, PRED) | flag(gather_scatter, SG),
                LoadStoreSubclass::MemoryCopy => MEMCPY,
                LoadStoreSubclass::MemorySet => MEMSET,
                LoadStoreSubclass::GuardedControlStack { common } => GCS | flag(common, COMM),
                LoadStoreSubclass::Unallocated => 0,
            };
    }
    if let Some(b) = o.branch() {
        return (1 << 2)
            | flag(b.conditional, 1 << 8)
            | flag(b.indirect, 1 << 9)
            | flag(b.guarded_control_stack, 1 << 10)
            | match b.call_return {
                CallReturn::Neither => 0,
                CallReturn::BranchWithLink => 1 << 11,
                CallReturn::Return => 1 << 12,
                CallReturn::NonBranchWithLinkOrReturn => 1 << 13,
            };
    }
    unreachable!("a reserved class is a record error")
}

/// Whether the record holds more than one Operation Type packet, or (6.12) Events packet.
/// perf ORs the flags of repeated packets (7.3 keeps the last Events payload, as we do); we
/// keep the last packet (the Arm ARM has one of each per record), so for such records only
/// the boundaries are compared.
fn has_repeated_flag_packets(tree: Tree, stream: &[u8], record: &SampleRecord) -> bool {
    let (mut events, mut ops, mut at) = (0, 0, record.offset);
    while at < record.offset + record.len {
        let p = decode_packet(stream, at).expect("a record's packets decode");
        match p.packet {
            Packet::Events(_) => events += 1,
            Packet::OperationType(_) => ops += 1,
            _ => {}
        }
        at += p.len.max(1);
    }
    (events > 1 && tree == Tree::Linux6_12) || ops > 1
}

/// Our record decoder's lines for one case, in the record harness's format. PC and branch
/// target are compared on bits [55:0]: we sign-extend from bit 55 where perf fills the top
/// byte from NS and EL (documented on `AddressPacket::virtual_address`); the data virtual
/// address is compared whole, as both strip the tag the same way. For 6.12 the events and
/// the operation are mapped to its coarser bits (`perf_sample_type_6_12`, `perf_op_6_12`);
/// 7.3 adds the previous branch target (compared like the PC).
fn our_records(tree: Tree, stream: &[u8], out: &mut String) {
    const LOW56: u64 = (1 << 56) - 1;
    for item in records(stream) {
        match item {
            Ok(r) => {
                let end = r.offset + r.len;
                if has_repeated_flag_packets(tree, stream, &r) {
                    writeln!(out, "REC {end} *").unwrap();
                    continue;
                }
                let events = r.events.unwrap_or(SpeEvents::empty());
                let (events, op, prev) = match tree {
                    Tree::Linux6_12 => (
                        u64::from(perf_sample_type_6_12(events)),
                        perf_op_6_12(&r),
                        String::new(),
                    ),
                    Tree::Linux7_3 => (
                        events.bits(),
                        perf_op_7_3(&r),
                        format!(
                            " prev={:x}",
                            r.previous_branch_target
                                .map_or(0, |a| a.virtual_address() & LOW56)
                        ),
                    ),
                };
                writeln!(
                    out,
                    "REC {end} type={:x} op={:x} lat={} from={:x} to={:x}{prev} ts={:x} va={:x} pa={:x} ctx={:x} src={:x}",
                    events,
                    op,
                    r.total_latency.unwrap_or(0),
                    r.pc.map_or(0, |a| a.virtual_address() & LOW56),
                    r.branch_target.map_or(0, |a| a.virtual_address() & LOW56),
                    r.timestamp.unwrap_or(0),
                    r.data_virtual.map_or(0, |a| a.virtual_address()),
                    r.data_physical.map_or(0, |a| a.address_bits()),
                    r.context.map_or(u64::MAX, |(_, v)| v),
                    r.data_source.unwrap_or(0) & 0xFFFF,
                )
                .unwrap();
            }
            // perf skips one byte past a bad packet.
            Err(DecodeError::Truncated { offset, .. } | DecodeError::Invalid { offset, .. }) => {
                writeln!(out, "ERR {}", offset + 1).unwrap()
            }
            // perf consumes the 2-byte Operation Type packet, then abandons the record.
            Err(DecodeError::ReservedOperationClass { offset }) => {
                writeln!(out, "ERR {}", offset + 2).unwrap()
            }
            // perf drops an unterminated tail silently.
            Err(DecodeError::UnterminatedRecord { .. }) => {}
        }
    }
}

/// Whether perf's lines for a case match ours, where our `REC <end> *` matches any record
/// line ending at the same offset.
fn records_match(perf: &str, ours: &str) -> bool {
    let (p, o): (Vec<&str>, Vec<&str>) = (perf.lines().collect(), ours.lines().collect());
    p.len() == o.len()
        && p.iter().zip(&o).all(|(p, o)| match o.strip_suffix(" *") {
            Some(prefix) => p.starts_with(prefix) && p[prefix.len()..].starts_with(' '),
            None => p == o,
        })
}

/// Runs `tree`'s record harness over `cases` and compares each case's lines with ours.
fn run_records(tree: Tree, cases: &[Vec<u8>], label: &str) -> (usize, usize) {
    let harness = perf_record_harness(tree);
    let label = format!("{}/{label}", tree.version());
    let output = run_harness(&harness, cases, 0);
    assert!(
        output.status.success(),
        "perf record harness failed: {output:?}"
    );
    let perf = String::from_utf8(output.stdout).unwrap();
    assert!(
        perf.ends_with(&format!("END {}\n", cases.len())),
        "perf record harness output is cut: {}",
        &perf[perf.len().saturating_sub(300)..]
    );
    let per_case: Vec<&str> = perf
        .trim_end_matches(&format!("END {}\n", cases.len()))
        .split("CASE ")
        .skip(1)
        .map(|c| c.split_once('\n').map_or("", |(_, rest)| rest))
        .collect();
    assert_eq!(per_case.len(), cases.len());
    let (mut compared, mut boundary_only) = (0, 0);
    for (i, (case, perf_lines)) in cases.iter().zip(&per_case).enumerate() {
        let mut mine = String::new();
        our_records(tree, case, &mut mine);
        if !records_match(perf_lines, &mine) {
            let bytes: String = case.iter().map(|b| format!("{b:02x}")).collect();
            panic!("{label} case {i} ({bytes}) differs:\nperf:\n{perf_lines}ours:\n{mine}");
        }
        compared += mine
            .lines()
            .filter(|l| l.starts_with("REC") && !l.ends_with('*'))
            .count();
        boundary_only += mine.lines().filter(|l| l.ends_with('*')).count();
    }
    eprintln!(
        "{label}: {} cases, {compared} records compared field by field, {boundary_only} by \
         boundary only, identical to perf's arm_spe_decode()",
        cases.len()
    );
    (compared, boundary_only)
}

/// A record of random packets, at most one of each kind (as the Arm ARM lays records out),
/// in random order, closed by End or Timestamp, after random padding or alignment.
fn random_record(rng: &mut Rng, out: &mut Vec<u8>) {
    for _ in 0..rng.below(3) {
        if rng.below(2) == 0 {
            out.push(0x00);
        } else {
            out.extend_from_slice(&[0x20 | rng.below(4) as u8, 0x00]);
        }
    }
    let mut kinds: Vec<u64> = (0..10).filter(|_| rng.below(3) != 0).collect();
    // Shuffle (Fisher-Yates).
    for i in (1..kinds.len()).rev() {
        kinds.swap(i, rng.below(i as u64 + 1) as usize);
    }
    for kind in kinds {
        let payload = match rng.below(4) {
            // Kernel-looking, tagged kernel, user, and random payloads.
            0 => 0xFFFF_8000_0000_0000 | rng.below(1 << 40),
            1 => (rng.below(256) << 56) | 0x00FF_8000_0000_0000 | rng.below(1 << 40),
            2 => rng.below(1 << 48),
            _ => rng.next(),
        };
        let bytes = payload.to_le_bytes();
        match kind {
            0..=4 => {
                // Address index 0..4 (PC, target, VA, PA, PBT); PC/target with NS and EL.
                out.push(0xB0 | kind as u8);
                out.extend_from_slice(&bytes);
            }
            5 => {
                let sz = rng.below(4) as u8;
                out.push(0x42 | sz << 4);
                out.extend_from_slice(&bytes[..1 << sz]);
            }
            6 => out.extend_from_slice(&[0x48 | rng.below(3) as u8, bytes[0]]),
            7 => {
                out.push(0x98 | rng.below(3) as u8);
                out.extend_from_slice(&bytes[..2]);
            }
            8 => {
                out.push(0x64 | rng.below(2) as u8);
                out.extend_from_slice(&bytes[..4]);
            }
            _ => {
                let sz = rng.below(4) as u8;
                out.push(0x43 | sz << 4);
                out.extend_from_slice(&bytes[..1 << sz]);
            }
        }
    }
    if rng.below(2) == 0 {
        out.push(0x01);
    } else {
        out.push(0x71);
        out.extend_from_slice(&rng.next().to_le_bytes());
    }
}

fn random_record_streams() -> Vec<Vec<u8>> {
    let mut rng = Rng(0x5EC0_4D00);
    (0..2000)
        .map(|i| {
            let mut s = Vec::new();
            for _ in 0..1 + rng.below(8) {
                random_record(&mut rng, &mut s);
                // Now and then a stray byte or a cut, to test resynchronization.
                if i % 4 == 0 && rng.below(3) == 0 {
                    s.push(rng.next() as u8);
                }
            }
            if i % 5 == 0 {
                s.truncate(rng.below(s.len() as u64 + 1) as usize);
            }
            s
        })
        .collect()
}

/// A small deterministic generator (xorshift64*), so the corpus is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One valid packet of a random kind.
fn random_packet(rng: &mut Rng, out: &mut Vec<u8>) {
    let payload = rng.next().to_le_bytes();
    let index = rng.below(32) as u8;
    let sz = rng.below(4) as u8;
    match rng.below(11) {
        0 => out.push(0x00),
        1 => out.push(0x01),
        2 => {
            out.push(0x71);
            out.extend_from_slice(&payload);
        }
        3 => {
            out.push(0x42 | sz << 4);
            out.extend_from_slice(&payload[..1 << sz]);
        }
        4 => {
            out.push(0x43 | sz << 4);
            out.extend_from_slice(&payload[..1 << sz]);
        }
        5 => {
            out.push(0x64 | (index & 3));
            out.extend_from_slice(&payload[..4]);
        }
        6 => {
            out.extend_from_slice(&[0x48 | (index & 3), payload[0]]);
        }
        7 | 8 => {
            if index > 7 {
                out.push(0x20 | index >> 3);
            }
            out.push(0xB0 | (index & 7));
            out.extend_from_slice(&payload);
        }
        9 => {
            if index > 7 {
                out.push(0x20 | index >> 3);
            }
            out.push(0x98 | (index & 7));
            out.extend_from_slice(&payload[..2]);
        }
        _ => out.extend_from_slice(&[0x20 | (index & 3), 0x00]),
    }
}

/// A load record (PC at EL0, op type, events, latencies, VA, PA, context, timestamp).
fn load_record() -> Vec<u8> {
    let mut r = vec![0xB0];
    r.extend_from_slice(&0x8000_0000_0040_05D8u64.to_le_bytes());
    r.extend_from_slice(&[0x49, 0x00, 0x52, 0x0E, 0x03, 0x98, 150, 0, 0x99, 7, 0, 0xB2]);
    r.extend_from_slice(&0x0000_FFFF_8000_1000u64.to_le_bytes());
    r.push(0xB3);
    r.extend_from_slice(&0xC500_0000_8000_1000u64.to_le_bytes());
    r.extend_from_slice(&[0x65, 42, 0, 0, 0, 0x71]);
    r.extend_from_slice(&0x1234_5678_9ABCu64.to_le_bytes());
    r
}

/// A kernel branch record closed by End.
fn branch_record() -> Vec<u8> {
    let mut s = vec![0xB0];
    s.extend_from_slice(&0xA0FF_8000_1234_5678u64.to_le_bytes());
    s.extend_from_slice(&[0x4A, 0x01, 0x42, 0x82, 0xB1]);
    s.extend_from_slice(&0x20FF_8000_1234_0000u64.to_le_bytes());
    s.extend_from_slice(&[0x22, 0x00, 0x01]);
    s
}

/// A kernel branch record with what Linux 7.3's perf decodes and 6.12's did not (Arm ARM
/// DDI 0487 D18.2): Operation Type `0x15` (B COND, GCS bit 2, CR 0b10 return), Events
/// E\[1\] retired, E\[6\] not taken, E\[19\] L2D access (4-byte payload), and the
/// previous branch target (Address index 4, NS 1, EL1), closed by End.
fn gcs_branch_record() -> Vec<u8> {
    let mut s = vec![0xB0];
    s.extend_from_slice(&0xA0FF_8000_1234_5678u64.to_le_bytes());
    s.extend_from_slice(&[0x4A, 0x15, 0x62, 0x42, 0x00, 0x08, 0x00, 0xB1]);
    s.extend_from_slice(&0x20FF_8000_1234_0100u64.to_le_bytes());
    s.push(0xB4);
    s.extend_from_slice(&0xA0FF_8000_1234_0000u64.to_le_bytes());
    s.push(0x01);
    s
}

/// A user GCS store (`GCSSTR`: load/store subclass `0b0100_0x0x`, COMM bit 2, ST bit 0:
/// payload `0x45`) with its data address, closed by End.
fn gcs_store_record() -> Vec<u8> {
    let mut s = vec![0xB0];
    s.extend_from_slice(&0x8000_0000_0040_1000u64.to_le_bytes());
    s.extend_from_slice(&[0x49, 0x45, 0xB2]);
    s.extend_from_slice(&0x0000_FFFF_F000_0FF8u64.to_le_bytes());
    s.push(0x01);
    s
}

/// One record per new field (Arm ARM DDI 0487 D18.2 encodings): every load/store subclass,
/// every "other" subclass, every branch flag and CR value, the FEAT_SPEv1p4 and FEAT_SPE_SME
/// events with IMPLEMENTATION DEFINED bits (E\[12\], which perf names on Neoverse-N1,
/// E\[48\], E\[63\]) in an 8-byte Events packet, and the previous branch target in both
/// header forms (short `0xB4`, extended `0x20 0xB4`).
fn new_field_records() -> Vec<Vec<u8>> {
    let pc = |el_ns: u8| {
        let mut r = vec![0xB0];
        r.extend_from_slice(&(u64::from(el_ns) << 56 | 0x0000_0000_0040_2000).to_le_bytes());
        r
    };
    let mut records = vec![gcs_branch_record(), gcs_store_record()];
    let operations: &[(u8, u8)] = &[
        (0x49, 0x11), // ST UNSPEC-REG
        (0x49, 0x30), // LD NV-SYSREG
        (0x49, 0x05), // ST SIMD-FP
        (0x49, 0x14), // LD MTE-TAG
        (0x49, 0x1F), // ST AT EXCL AR
        (0x49, 0xAD), // ST SVE-SME-REG EVLEN 128 PRED SG
        (0x49, 0x7C), // LD SVE-SME-REG EVLEN 4096 PRED
        (0x49, 0x21), // ST MEMCPY
        (0x49, 0x25), // ST MEMSET
        (0x49, 0x40), // LD GCS
        (0x49, 0x82), // unallocated load/store subclass
        (0x48, 0x07), // OTHER ASE FP COND-SELECT
        (0x48, 0x3E), // SVE-OTHER EVLEN 256 FP PRED
        (0x48, 0xFE), // SME-OTHER ETS 4194304 FP (128 << 0b111_1)
        (0x48, 0x30), // unallocated "other" subclass
        (0x4A, 0x0A), // B IND CR-BL
        (0x4A, 0x18), // B CR-NON-BL-RET
        (0x4A, 0x1F), // B COND IND GCS CR-NON-BL-RET
    ];
    for &(header, payload) in operations {
        let mut r = pc(0x80);
        r.extend_from_slice(&[header, payload, 0x01]);
        records.push(r);
    }
    // E[16] TXN, E[20..25], E[12], E[48], E[63] in an 8-byte Events packet, 7.3's raw type.
    let mut r = pc(0x80);
    r.push(0x72);
    r.extend_from_slice(&(0x03F1_1000u64 | 1 << 48 | 1 << 63).to_le_bytes());
    r.push(0x01);
    records.push(r);
    // The previous branch target through the extended header (index 0b00_100).
    let mut r = pc(0xC0);
    r.extend_from_slice(&[0x4A, 0x00, 0x20, 0xB4]);
    r.extend_from_slice(&0xC000_0000_0040_1F00u64.to_le_bytes());
    r.push(0x01);
    records.push(r);
    records
}

fn hand_built() -> Vec<Vec<u8>> {
    let mut cases = Vec::new();
    let tail: Vec<u8> = (1..=16).collect();
    for h in 0..=255u8 {
        for keep in [0, 1, 2, 4, 8, 16] {
            let mut c = vec![h];
            c.extend_from_slice(&tail[..keep]);
            cases.push(c);
        }
    }
    for h0 in 0x20..=0x23u8 {
        for h1 in 0..=255u8 {
            let mut c = vec![h0, h1];
            c.extend_from_slice(&tail[..10]);
            cases.push(c);
        }
    }
    for prefix in 0..=17 {
        for aa in 0..4u8 {
            for after in [0usize, 1, 3, 15, 20] {
                let mut c = vec![0x01; prefix];
                c.extend_from_slice(&[0x20 | aa, 0x00]);
                c.extend(std::iter::repeat_n(0x01, after));
                cases.push(c);
            }
        }
    }
    // Every Operation Type payload of every class: the sub-field names perf prints.
    for class in 0..4u8 {
        for payload in 0..=255u8 {
            cases.push(vec![0x48 | class, payload]);
        }
    }
    for record in [load_record(), branch_record(), gcs_branch_record()] {
        for cut in 0..=record.len() {
            cases.push(record[..cut].to_vec());
        }
        cases.push(record);
    }
    let new_fields = new_field_records();
    cases.push(new_fields.concat());
    cases.extend(new_fields);
    let mut rng = Rng(0x5EED_0003);
    let mut long = Vec::new();
    for _ in 0..200 {
        long.extend(if rng.below(2) == 0 {
            load_record()
        } else {
            branch_record()
        });
        for _ in 0..rng.below(3) {
            random_packet(&mut rng, &mut long);
        }
    }
    cases.push(long);
    cases
}

fn random_streams() -> Vec<Vec<u8>> {
    let mut rng = Rng(0xD1FF_0003);
    let headers = [
        0x00, 0x01, 0x71, 0x42, 0x52, 0x62, 0x72, 0x43, 0x64, 0x65, 0x48, 0x49, 0x4A, 0x20, 0x23,
        0xB0, 0xB3, 0x98, 0x9A,
    ];
    (0..3000)
        .map(|i| {
            let len = rng.below(200) as usize;
            let mut s = Vec::with_capacity(len);
            if i % 2 == 0 {
                while s.len() < len {
                    random_packet(&mut rng, &mut s);
                    if rng.below(8) == 0 {
                        s.push(rng.next() as u8);
                    }
                }
            } else {
                for _ in 0..len {
                    s.push(if rng.below(2) == 0 {
                        headers[rng.below(headers.len() as u64) as usize]
                    } else {
                        rng.next() as u8
                    });
                }
            }
            s
        })
        .collect()
}

fn parse_hex(line: &str) -> Vec<u8> {
    (0..line.len() / 2)
        .map(|i| u8::from_str_radix(&line[2 * i..2 * i + 2], 16).expect("hex corpus"))
        .collect()
}

fn fuzz_corpus() -> Vec<Vec<u8>> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let committed = manifest.join("tests/data/spe_decode_fuzz_corpus.hex");
    let text =
        fs::read_to_string(&committed).unwrap_or_else(|e| panic!("{}: {e}", committed.display()));
    let mut cases: Vec<Vec<u8>> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| parse_hex(l.trim()))
        .collect();
    if let Ok(dir) = fs::read_dir(manifest.join("fuzz/corpus/decode")) {
        for entry in dir.flatten() {
            cases.push(fs::read(entry.path()).unwrap());
        }
    }
    cases
}

/// Runs `tree`'s packet harness over `cases` (perf given `midr`) and compares its lines with
/// ours; returns the number of packet and error lines.
fn run(tree: Tree, midr: u32, cases: &[Vec<u8>], label: &str) -> usize {
    let harness = perf_harness(tree);
    let label = format!("{}/{label}", tree.version());
    let mut expected = String::new();
    for (n, case) in cases.iter().enumerate() {
        writeln!(expected, "CASE {n}").unwrap();
        ours(tree, midr, case, &mut expected);
    }
    writeln!(expected, "END {}", cases.len()).unwrap();
    let output = run_harness(&harness, cases, midr);
    assert!(output.status.success(), "perf harness failed: {output:?}");
    let perf = String::from_utf8(output.stdout).unwrap();
    if perf != expected {
        // Report the first differing case with its bytes.
        let split =
            |s: &str| -> Vec<String> { s.split("CASE ").skip(1).map(str::to_string).collect() };
        let (p, o) = (split(&perf), split(&expected));
        for (i, (a, b)) in p.iter().zip(o.iter()).enumerate() {
            if a != b {
                let bytes: String = cases[i].iter().map(|b| format!("{b:02x}")).collect();
                panic!("{label} case {i} ({bytes}) differs:\nperf:\n{a}\nours:\n{b}");
            }
        }
        panic!(
            "{label}: outputs differ in length ({} vs {} cases)",
            p.len(),
            o.len()
        );
    }
    let packets = perf
        .lines()
        .filter(|l| !l.starts_with("CASE") && !l.starts_with("END"))
        .count();
    eprintln!(
        "{label} (MIDR {midr:#x}): {} cases, {packets} packet/error lines, identical to perf",
        cases.len()
    );
    packets
}

/// The hand-built corpus against both trees; for 7.3 twice, with no MIDR and with
/// Neoverse-N1's (whose E\[12\] perf names).
#[test]
fn hand_built_corpus_matches_perf_6_12() {
    let cases = hand_built();
    assert!(cases.len() > 2500);
    run(Tree::Linux6_12, 0, &cases, "hand-built");
}

#[test]
fn hand_built_corpus_matches_perf_7_3() {
    let cases = hand_built();
    run(Tree::Linux7_3, 0, &cases, "hand-built");
    run(Tree::Linux7_3, MIDR_NEOVERSE_N1, &cases, "hand-built");
}

#[test]
fn random_streams_match_perf_6_12() {
    run(Tree::Linux6_12, 0, &random_streams(), "random");
}

#[test]
fn random_streams_match_perf_7_3() {
    run(Tree::Linux7_3, 0, &random_streams(), "random");
}

#[test]
fn fuzzer_corpus_matches_perf_6_12() {
    let cases = fuzz_corpus();
    assert!(cases.len() >= 100, "only {} fuzzer inputs", cases.len());
    run(Tree::Linux6_12, 0, &cases, "fuzzer");
}

#[test]
fn fuzzer_corpus_matches_perf_7_3() {
    run(Tree::Linux7_3, MIDR_NEOVERSE_N1, &fuzz_corpus(), "fuzzer");
}

/// Records, field by field, against `tree`'s perf `arm_spe_decode()`: hand-built, random
/// records (at most one packet of each kind, tagged and kernel addresses, every operation
/// class but the reserved one), random byte streams and the fuzzer corpus.
fn records_match_perf(tree: Tree) {
    let (hand, _) = run_records(tree, &hand_built(), "records/hand-built");
    assert!(hand >= 300, "only {hand} hand-built records compared");
    let (random, _) = run_records(tree, &random_record_streams(), "records/random-records");
    assert!(random >= 5000, "only {random} random records compared");
    run_records(tree, &random_streams(), "records/random-bytes");
    run_records(tree, &fuzz_corpus(), "records/fuzzer");
}

#[test]
fn records_match_perf_6_12() {
    records_match_perf(Tree::Linux6_12);
}

#[test]
fn records_match_perf_7_3() {
    records_match_perf(Tree::Linux7_3);
}

/// One case through `tree`'s record harness: perf's lines.
fn perf_records_of(tree: Tree, case: &[u8]) -> String {
    let harness = perf_record_harness(tree);
    let output = run_harness(&harness, &[case.to_vec()], 0);
    assert!(
        output.status.success(),
        "perf record harness failed: {output:?}"
    );
    let perf = String::from_utf8(output.stdout).unwrap();
    perf.strip_prefix("CASE 0\n")
        .and_then(|p| p.strip_suffix("END 1\n"))
        .unwrap()
        .to_string()
}

/// The record comparison can fail: a changed latency or a tag left in a data address is
/// caught, and perf's own view of the hand-built load record is what the Arm ARM says.
#[test]
fn record_comparison_detects_a_difference() {
    let case = load_record();
    let mut mine = String::new();
    our_records(Tree::Linux6_12, &case, &mut mine);
    let perf_case = perf_records_of(Tree::Linux6_12, &case);
    assert!(
        records_match(&perf_case, &mine),
        "perf:\n{perf_case}ours:\n{mine}"
    );
    // Total latency 150, data VA, PA without CH/PAT, CONTEXTIDR 42: LDST|LD.
    assert!(perf_case.contains(" op=10002 lat=150 "), "{perf_case}");
    assert!(
        perf_case.contains(" va=ffff80001000 pa=80001000 ctx=2a "),
        "{perf_case}"
    );
    assert!(!records_match(
        &perf_case,
        &mine.replace("lat=150", "lat=151")
    ));
    // A data address that kept its tag byte would differ.
    let mut tagged = case.clone();
    tagged[28] = 0xF3; // top byte of the data VA payload (after 0xB2 at offset 20)
    let mut mine_tagged = String::new();
    our_records(Tree::Linux6_12, &tagged, &mut mine_tagged);
    assert!(mine_tagged.contains(" va=ffff80001000 "), "{mine_tagged}");
}

/// Linux 7.3's view of the records that carry what 6.12 did not decode (hand-built from the
/// Arm ARM DDI 0487 D18.2 encodings, `new_field_records`): the previous branch target, the
/// raw event bits (E\[6\] NOT-TAKEN, E\[19\] L2D access), a GCS store with COMM, and
/// the values perf 7.3 gives them match ours and what the encodings say.
#[test]
fn records_7_3_carry_the_new_fields() {
    let case = gcs_branch_record();
    let mut mine = String::new();
    our_records(Tree::Linux7_3, &case, &mut mine);
    let perf = perf_records_of(Tree::Linux7_3, &case);
    assert!(records_match(&perf, &mine), "perf:\n{perf}ours:\n{mine}");
    // B COND GCS CR-RET: BRANCH_ERET | BR_COND | BR_GCS | BR_CR_RET.
    assert!(perf.contains(" op=1504 "), "{perf}");
    // Events: RETIRED, NOT-TAKEN, L2D-ACCESS kept raw.
    assert!(perf.contains(" type=80042 "), "{perf}");
    // PBT with NS=1 EL=1: the low 56 bits.
    assert!(perf.contains(" prev=ff800012340000 "), "{perf}");
    assert!(!records_match(&perf, &mine.replace(" prev=", " prev=1")));
    // 6.12 knew neither the PBT nor the raw events: NOT-TAKEN and L2D are dropped.
    let old = perf_records_of(Tree::Linux6_12, &case);
    assert!(old.contains(" type=0 op=4 "), "{old}");
    let store = gcs_store_record();
    let perf = perf_records_of(Tree::Linux7_3, &store);
    // ST GCS COMM: LDST | ST | GCS | COMM.
    assert!(
        perf.contains(&format!(" op={:x} ", 2 | 1 << 21 | 1 << 16 | 1 << 28)),
        "{perf}"
    );
}

/// One case through `tree`'s packet harness (perf given `midr`): perf's lines.
fn perf_packets_of(tree: Tree, midr: u32, case: &[u8]) -> String {
    let harness = perf_harness(tree);
    let output = run_harness(&harness, &[case.to_vec()], midr);
    assert!(output.status.success(), "perf harness failed: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// Where the two perf versions print the same bytes differently (the new-field records):
/// 7.3 names the subclasses, the SME tile size and the new events, and on a Neoverse-N1
/// MIDR the IMPLEMENTATION DEFINED E\[12\]; 6.12 printed the coarser text
/// `op_desc_6_12` maps ours to. Each expected text is read off the Arm ARM encoding in
/// `new_field_records`.
#[test]
fn packet_texts_differ_between_trees_as_mapped() {
    let stream = new_field_records().concat();
    let new = perf_packets_of(Tree::Linux7_3, MIDR_NEOVERSE_N1, &stream);
    let generic = perf_packets_of(Tree::Linux7_3, 0, &stream);
    let old = perf_packets_of(Tree::Linux6_12, 0, &stream);
    for text in [
        "desc=ST GCS COMM\n",
        "desc=ST SVE-SME-REG EVLEN 128 PRED SG\n",
        "desc=SME-OTHER ETS 4194304 FP\n",
        "desc=OTHER ASE FP COND-SELECT\n",
        "desc=B COND GCS CR-RET\n",
        "desc=EV TXN L2D-MISS HITM LFB SNOOPED STREAMING-SVE SMCU LATE-PREFETCH IMPDEF:48,63\n",
        "desc=EV RETIRED NOT-TAKEN L2D-ACCESS\n",
        // An unallocated "other" subclass: 7.3 prints nothing.
        "OP-TYPE 0 30 desc=\n",
    ] {
        assert!(new.contains(text), "7.3 lacks {text:?}:\n{new}");
    }
    assert!(
        generic.contains("SMCU IMPDEF:12,48,63\n"),
        "7.3 without a MIDR names E[12] IMPDEF:\n{generic}"
    );
    for text in [
        "desc=ST\n",
        "desc=ST EVLEN 128 PRED SG\n",
        "desc=OTHER INSN-OTHER\n",
        "desc=OTHER COND-SELECT\n",
    ] {
        assert!(old.contains(text), "6.12 lacks {text:?}:\n{old}");
    }
    assert!(
        !old.contains("desc=EV"),
        "6.12's event text is not printed:\n{old}"
    );
}

/// The harness can fail: a deliberately wrong Rust line is caught (guards against a harness
/// that prints nothing, or a comparison that always passes).
#[test]
fn comparison_detects_a_difference() {
    for tree in Tree::ALL {
        let harness = perf_harness(tree);
        let case = load_record();
        let output = run_harness(&harness, std::slice::from_ref(&case), 0);
        assert!(output.status.success(), "perf harness failed: {output:?}");
        let perf = String::from_utf8(output.stdout).unwrap();
        let mut mine = String::from("CASE 0\n");
        ours(tree, 0, &case, &mut mine);
        mine.push_str("END 1\n");
        assert_eq!(perf, mine);
        assert!(
            perf.contains("0 9 ADDR 0 80000000004005d8 addr=4005d8 el=0 ns=1"),
            "{perf}"
        );
        assert!(
            perf.contains(" ADDR 3 c500000080001000 addr=80001000 el=2 ns=1 ch=1 pat=5"),
            "{perf}"
        );
        assert!(perf.contains(" OP-TYPE 1 0 desc=LD GP-REG\n"), "{perf}");
        assert_ne!(perf, mine.replace("LAT 0 96", "LAT 0 97"));
    }
}

/// The Data Source encodings by MIDR (`DataSourceEncoding`) are Linux 7.3 perf's: the cores
/// of `common_ds_encoding_cpus`, `ampereone_ds_encoding_cpus` and `hisi_hip_ds_encoding_cpus`
/// (tools/perf/util/arm-spe.c, MIDRs resolved through tools/arch/arm64/include/asm/cputype.h)
/// and no others; every value of `enum arm_spe_common_data_source`,
/// `arm_spe_hisi_hip_data_source` (arm-spe-decoder.h) decodes to the level its name says,
/// AmpereOne's values to the common level `arm_spe__synth_data_source_ampereone()` converts
/// them to, and the values no enum names decode to nothing.
#[test]
fn data_source_encodings_follow_perf_7_3() {
    use pmu_armv8::spe::decode::{
        DataSource, DataSourceEncoding, DataSourceLevel, DATA_SOURCE_CORES,
    };
    let root = Tree::Linux7_3.extract(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        "spe-data-source",
        &[
            "*/tools/perf/util/arm-spe.c",
            "*/tools/perf/util/arm-spe-decoder/arm-spe-decoder.h",
            "*/tools/arch/arm64/include/asm/cputype.h",
        ],
    );
    let read = |suffix: &str| fs::read_to_string(common::find(&root, suffix)).unwrap();
    let arm_spe_c = read("tools/perf/util/arm-spe.c");
    let decoder_h = read("tools/perf/util/arm-spe-decoder/arm-spe-decoder.h");
    let cputype = read("tools/arch/arm64/include/asm/cputype.h");
    // `#define NAME VALUE` of cputype.h.
    let define = |name: &str| -> String {
        cputype
            .lines()
            .find_map(|l| {
                let mut w = l.split_whitespace();
                (w.next() == Some("#define") && w.next() == Some(name))
                    .then(|| w.collect::<Vec<_>>().join(" "))
            })
            .unwrap_or_else(|| panic!("cputype.h has no {name}"))
    };
    let hex = |s: &str| u32::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    let midr_of = |name: &str| -> u32 {
        let model = define(name);
        let args = model
            .strip_prefix("MIDR_CPU_MODEL(")
            .and_then(|m| m.strip_suffix(')'))
            .unwrap_or_else(|| panic!("{name} is {model}"));
        let (imp, part) = args.split_once(',').unwrap();
        (hex(&define(imp.trim())) << 24) | (0xF << 16) | (hex(&define(part.trim())) << 4)
    };
    let block = |text: &str, start: &str| -> String {
        let at = text
            .find(start)
            .unwrap_or_else(|| panic!("no {start:?} in Linux 7.3"));
        text[at..at + text[at..].find("};").unwrap()].to_string()
    };
    let mut cores = 0;
    for (list, encoding) in [
        ("common_ds_encoding_cpus", DataSourceEncoding::ArmCommon),
        ("ampereone_ds_encoding_cpus", DataSourceEncoding::AmpereOne),
        (
            "hisi_hip_ds_encoding_cpus",
            DataSourceEncoding::HisiliconHip,
        ),
    ] {
        let text = block(&arm_spe_c, &format!("midr_range {list}[]"));
        for name in text.split("MIDR_ALL_VERSIONS(").skip(1) {
            let name = &name[..name.find(')').unwrap()];
            assert_eq!(
                DataSourceEncoding::for_midr(midr_of(name)),
                Some(encoding),
                "{name} ({:#x}) of {list}",
                midr_of(name)
            );
            cores += 1;
        }
    }
    assert_eq!(cores, DATA_SOURCE_CORES.len(), "cores perf does not list");
    // `NAME = value,` lines of an enum of arm-spe-decoder.h.
    let values = |enum_name: &str| -> Vec<(String, u64)> {
        block(&decoder_h, &format!("enum {enum_name} {{"))
            .lines()
            .filter_map(|l| {
                let (name, value) = l.split_once('=')?;
                let value = value.trim().trim_end_matches(',');
                let value = match value.strip_prefix("0x") {
                    Some(h) => u64::from_str_radix(h, 16).ok()?,
                    None => value.parse().ok()?,
                };
                Some((name.trim().to_string(), value))
            })
            .collect()
    };
    let load = |encoding: DataSourceEncoding, value| encoding.decode(value, false);
    let level = |l, modified| Some(DataSource { level: l, modified });
    let common_level = |name: &str| match name.strip_prefix("ARM_SPE_COMMON_DS_").unwrap() {
        "L1D" => DataSourceLevel::L1d,
        "L2" => DataSourceLevel::L2,
        "PEER_CORE" => DataSourceLevel::PeerCore,
        "LOCAL_CLUSTER" => DataSourceLevel::LocalCluster,
        "SYS_CACHE" => DataSourceLevel::SystemCache,
        "PEER_CLUSTER" => DataSourceLevel::PeerCluster,
        "REMOTE" => DataSourceLevel::Remote,
        "DRAM" => DataSourceLevel::Dram,
        other => panic!("a common data source this test does not know: {other}"),
    };
    let common = values("arm_spe_common_data_source");
    assert_eq!(common.len(), 8, "{common:?}");
    for (name, value) in &common {
        assert_eq!(
            load(DataSourceEncoding::ArmCommon, *value),
            level(common_level(name), false),
            "{name}"
        );
    }
    // AmpereOne: perf converts each value to a common one.
    let ampere = block(&arm_spe_c, "arm_spe__synth_data_source_ampereone(const");
    let ampere_values = values("arm_spe_ampereone_data_source");
    assert_eq!(ampere_values.len(), 6, "{ampere_values:?}");
    for (name, value) in &ampere_values {
        let case = &ampere[ampere.find(&format!("case {name}:")).unwrap()..];
        let target = case.split("common_record.source = ").nth(1).unwrap();
        let target = &target[..target.find(';').unwrap()];
        assert_eq!(
            load(DataSourceEncoding::AmpereOne, *value),
            level(common_level(target), false),
            "{name} -> {target}"
        );
    }
    let hisi = values("arm_spe_hisi_hip_data_source");
    assert_eq!(hisi.len(), 14, "{hisi:?}");
    let hisi_synth = block(&arm_spe_c, "arm_spe__synth_data_source_hisi_hip(const");
    for (name, value) in &hisi {
        assert!(hisi_synth.contains(&format!("case {name}:")), "{name}");
        let short = name.strip_prefix("ARM_SPE_HISI_HIP_").unwrap();
        let (short, modified) = match short.strip_suffix("_HITM") {
            Some(s) => (s, true),
            None => (short, false),
        };
        let l = match short {
            "PEER_CPU" => DataSourceLevel::PeerCore,
            "L3" => DataSourceLevel::L3,
            "PEER_CLUSTER" => DataSourceLevel::PeerCluster,
            "REMOTE_SOCKET" => DataSourceLevel::Remote,
            "LOCAL_MEM" => DataSourceLevel::Dram,
            "REMOTE_MEM" => DataSourceLevel::RemoteDram,
            "NC_DEV" => DataSourceLevel::Device,
            "L2" => DataSourceLevel::L2,
            "L1" => DataSourceLevel::L1d,
            other => panic!("a HiSilicon data source this test does not know: {other}"),
        };
        assert_eq!(
            load(DataSourceEncoding::HisiliconHip, *value),
            level(l, modified),
            "{name}"
        );
    }
    // Values no enum names, and stores (perf: "no data ... for stores"), decode to nothing.
    for (encoding, named) in [
        (DataSourceEncoding::ArmCommon, &common),
        (DataSourceEncoding::AmpereOne, &ampere_values),
        (DataSourceEncoding::HisiliconHip, &hisi),
    ] {
        for value in 0..64 {
            if !named.iter().any(|(_, v)| *v == value) {
                assert_eq!(load(encoding, value), None, "{encoding:?} {value:#x}");
            }
            assert_eq!(encoding.decode(value, true), None);
        }
    }
}
