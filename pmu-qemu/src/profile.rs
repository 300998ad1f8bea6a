//! Where the instructions went: the host half of `pmu-qemu --profile PERIOD`.
//!
//! In the guest, pmu-qemu's sampler (pmu-qemu/guest/profile.rs) runs the program with a
//! perf event that takes a sample every PERIOD user-level instructions (`cycles:u`,
//! which under `-icount shift=0` counts one per instruction, with `sample_period`): the interrupted address and the call chain the
//! kernel read from the program's frame records. Under `-icount` the counter's overflow
//! interrupt comes at the same instruction on every run, so the samples are the same on
//! every run. This module reads the sampler's file ([`Samples::parse`]), names each
//! address by the ELF symbol that contains it ([`Symbols`]), writes folded stacks
//! (`main;work;leaf COUNT`, the format of inferno and of Brendan Gregg's FlameGraph)
//! with each stack's samples × PERIOD as its count ([`fold`], [`write_folded`]), and
//! draws flamegraphs and differential flamegraphs with inferno ([`flamegraph`],
//! [`differential`]).
//!
//! A function's figure is the number of samples that landed in it times the period: a
//! function that retired C instructions gets ⌊C/PERIOD⌋ or ⌈C/PERIOD⌉ samples when the
//! samples fall every PERIOD instructions, so its figure is within PERIOD of C.

use std::collections::BTreeMap;
use std::io::Write;

use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};

/// `PERF_CONTEXT_MAX` (include/uapi/linux/perf_event.h): call-chain entries at or above
/// it (as u64, that is -4095 and up) are context markers such as `PERF_CONTEXT_USER`,
/// not addresses.
const PERF_CONTEXT_MAX: u64 = -4095i64 as u64;

/// The sampler's file, read.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Samples {
    /// Instructions per sample.
    pub period: u64,
    /// Executable mappings of the program's processes: (pid, address, length, file
    /// offset, file name).
    pub maps: Vec<Mapping>,
    /// Each sample's process and call chain, innermost first: the sampled address, then
    /// the return addresses the kernel found (context markers removed).
    pub samples: Vec<(u32, Vec<u64>)>,
    /// Samples the kernel could not write to the ring buffer.
    pub lost: u64,
    /// Times the kernel throttled the event (stopped it until its next tick).
    pub throttled: u64,
    /// The program's exit status, when the sampler saw it end.
    pub status: Option<u8>,
}

/// An executable mapping of a file (`PERF_RECORD_MMAP`).
#[derive(Debug, PartialEq, Eq, Clone)]
pub struct Mapping {
    /// The process.
    pub pid: u32,
    /// Where it starts in the process.
    pub address: u64,
    /// Its length in bytes.
    pub length: u64,
    /// The file offset it starts at.
    pub offset: u64,
    /// The mapped file's path.
    pub file: String,
}

fn hex(word: &str, line: usize) -> Result<u64, String> {
    u64::from_str_radix(word, 16)
        .map_err(|_| format!("the sampler's line {line}: `{word}` is not a hexadecimal number"))
}

impl Samples {
    /// Reads the sampler's text (its format is in pmu-qemu/guest/profile.rs).
    pub fn parse(text: &str) -> Result<Samples, String> {
        let mut lines = text.lines();
        if lines.next() != Some("pmu-qemu-profile 1") {
            return Err("not a pmu-qemu sampler's file (no `pmu-qemu-profile 1` line)".into());
        }
        let mut s = Samples::default();
        for (i, line) in lines.enumerate() {
            let n = i + 2;
            let mut words = line.split(' ');
            let bad = || format!("the sampler's line {n} is malformed: `{line}`");
            match words.next() {
                Some("period") => {
                    s.period = words
                        .next()
                        .and_then(|w| w.parse().ok())
                        .filter(|&p| p > 0)
                        .ok_or_else(bad)?
                }
                Some("map") => {
                    let mut f = || words.next().ok_or_else(bad);
                    let pid = f()?.parse().map_err(|_| bad())?;
                    let (address, length, offset) = (hex(f()?, n)?, hex(f()?, n)?, hex(f()?, n)?);
                    let file = line.splitn(6, ' ').nth(5).ok_or_else(bad)?.to_string();
                    s.maps.push(Mapping {
                        pid,
                        address,
                        length,
                        offset,
                        file,
                    });
                }
                Some("sample") => {
                    let pid = words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?;
                    let ip = hex(words.next().ok_or_else(bad)?, n)?;
                    // The call chain starts with the sampled address again (Linux's
                    // perf_callchain_user stores regs->pc first); without one, the
                    // address alone.
                    let mut chain = Vec::new();
                    for w in words {
                        let a = hex(w, n)?;
                        if a < PERF_CONTEXT_MAX {
                            chain.push(a);
                        }
                    }
                    if chain.first() != Some(&ip) {
                        chain = vec![ip];
                    }
                    s.samples.push((pid, chain));
                }
                Some("lost") => {
                    s.lost = words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?
                }
                Some("throttled") => {
                    s.throttled = words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?
                }
                Some("end") => {
                    s.status = Some(words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?)
                }
                _ => return Err(bad()),
            }
        }
        if s.period == 0 {
            return Err("the sampler's file names no period".into());
        }
        Ok(s)
    }

    /// `Ok` when no sample is missing: the sampler finished its file (its `end` line)
    /// and the kernel neither lost a sample nor throttled the event. Otherwise no
    /// figure can be trusted.
    pub fn complete(&self) -> Result<(), String> {
        if self.status.is_none() {
            return Err("the guest's sampler did not finish its file (no `end` line), so samples may be missing".into());
        }
        if self.lost > 0 || self.throttled > 0 {
            return Err(format!(
                "the guest's kernel dropped samples ({} lost for want of ring-buffer space, the event throttled {} times), so no figure would be exact: try a larger period",
                self.lost, self.throttled
            ));
        }
        Ok(())
    }

    /// Leaves out the samples of processes that ran another program: those that mapped
    /// an executable file other than `file` (the program) and never `file`. The
    /// program's own processes, forked ones included (they map nothing new), stay.
    pub fn keep_program(&mut self, file: &str) {
        let mapped = |pid: u32, f: &dyn Fn(&str) -> bool| {
            self.maps.iter().any(|m| m.pid == pid && f(&m.file))
        };
        let others: Vec<u32> = self
            .maps
            .iter()
            .map(|m| m.pid)
            .filter(|&pid| {
                mapped(pid, &|f| f != file && !f.starts_with('[')) && !mapped(pid, &|f| f == file)
            })
            .collect();
        self.samples.retain(|(pid, _)| !others.contains(pid));
    }

    /// How far the program's addresses in the samples lie from its ELF's addresses:
    /// zero for a program linked at a fixed address (`ET_EXEC`, what Rust's
    /// `aarch64-unknown-linux-musl` builds), the load address for a position-independent
    /// one, read from the mapping of `file` whose offset is an executable segment's.
    pub fn bias(&self, file: &str, symbols: &Symbols) -> u64 {
        self.maps
            .iter()
            .filter(|m| m.file == file)
            .find_map(|m| {
                symbols
                    .code
                    .iter()
                    .find(|seg| seg.offset & !0xfff == m.offset)
                    .map(|seg| m.address.wrapping_sub(seg.address & !0xfff))
            })
            .unwrap_or(0)
    }
}

/// An executable segment: its address, file offset and bytes.
#[derive(Debug)]
struct Code {
    address: u64,
    offset: u64,
    bytes: Vec<u8>,
}

/// A function: its addresses, its name, and where its frame record is in place.
#[derive(Debug)]
struct Function {
    start: u64,
    end: u64,
    name: String,
    /// The address after the prologue's `add x29, sp, #N` (from there on x29 points to
    /// this function's frame record), when one of its first eight instructions is that.
    framed_from: Option<u64>,
}

/// A program's functions, from its ELF symbol table.
#[derive(Debug)]
pub struct Symbols {
    /// Sorted by start.
    functions: Vec<Function>,
    code: Vec<Code>,
}

/// `add x29, sp, #imm{, lsl #12}` (`mov x29, sp` is `#0`): a frame record's pointer set
/// up (Arm ARM C6.2, ADD (immediate): sf 1, op 0, S 0, `100010`, sh, imm12, Rn = 31,
/// Rd = 29; the AAPCS64's frame records).
fn sets_frame_pointer(insn: u32) -> bool {
    insn & 0xff80_03ff == 0x9100_03fd
}

/// `ldp x29, x30, [Xn…]` in any addressing form (Arm ARM C6.2, LDP: opc 10, `101`,
/// V 0, L 1, Rt2 = 30, Rt = 29): the frame record taken back in an epilogue.
fn restores_frame_pointer(insn: u32) -> bool {
    insn & 0xfe40_7c1f == 0xa840_781d
}

/// Whether `insn` is a call: BL, BLR, or a pointer-authenticating BLRAA/BLRAB(Z)
/// (Arm ARM C6.2: BL `100101 imm26`; BLR `1101011 0001 11111 0000 00 Rn 00000`; BLRAA,
/// BLRAAZ, BLRAB, BLRABZ differ from BLR in bits 24 and 11-10).
fn is_call(insn: u32) -> bool {
    insn & 0xfc00_0000 == 0x9400_0000
        || insn & 0xffff_fc1f == 0xd63f_0000
        || insn & 0xfeff_f800 == 0xd63f_0800
}

impl Symbols {
    /// Reads the function symbols and executable segments of an aarch64 ELF program.
    pub fn from_elf(data: &[u8]) -> Result<Symbols, String> {
        let file = object::read::elf::ElfFile64::<object::Endianness>::parse(data)
            .map_err(|e| format!("not a 64-bit ELF file: {e}"))?;
        let code: Vec<Code> = file
            .segments()
            .filter(|s| {
                matches!(s.flags(), object::SegmentFlags::Elf { p_flags, .. } if p_flags.contains(object::elf::PF_X))
            })
            .filter_map(|s| {
                Some(Code {
                    address: s.address(),
                    offset: s.file_range().0,
                    bytes: s.data().ok()?.to_vec(),
                })
            })
            .collect();
        let mut functions: Vec<Function> = file
            .symbols()
            .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0)
            .filter_map(|s| {
                let name = s.name().ok()?;
                Some(Function {
                    start: s.address(),
                    end: s.address() + s.size(),
                    // `;` separates frames in folded stacks.
                    name: format!("{:#}", rustc_demangle::demangle(name)).replace(';', ":"),
                    framed_from: None,
                })
            })
            .collect();
        if functions.is_empty() {
            return Err(
                "it has no function symbols (stripped?): build it with symbols (`strip = false`, the default of cargo's release profile)".into(),
            );
        }
        functions.sort_by_key(|f| (f.start, f.end));
        functions.dedup_by_key(|f| f.start);
        let mut symbols = Symbols { functions, code };
        for i in 0..symbols.functions.len() {
            let (start, end) = (symbols.functions[i].start, symbols.functions[i].end);
            symbols.functions[i].framed_from = (start..end.min(start + 32))
                .step_by(4)
                .find(|&a| symbols.insn(a).is_some_and(sets_frame_pointer))
                .map(|a| a + 4);
        }
        Ok(symbols)
    }

    fn function(&self, address: u64) -> Option<&Function> {
        let i = self.functions.partition_point(|f| f.start <= address);
        let f = self.functions.get(i.checked_sub(1)?)?;
        (address < f.end).then_some(f)
    }

    /// The function containing `address` (an ELF address).
    pub fn name(&self, address: u64) -> Option<&str> {
        self.function(address).map(|f| f.name.as_str())
    }

    /// The instruction at `address`, when it is in an executable segment.
    fn insn(&self, address: u64) -> Option<u32> {
        let c = self
            .code
            .iter()
            .find(|c| c.address <= address && address < c.address + c.bytes.len() as u64)?;
        let at = usize::try_from(address - c.address).ok()?;
        Some(u32::from_le_bytes(
            c.bytes.get(at..at + 4)?.try_into().ok()?,
        ))
    }

    /// Whether `address` is a return address: it follows a call instruction.
    fn returns_to(&self, address: u64) -> bool {
        address
            .checked_sub(4)
            .and_then(|a| self.insn(a))
            .is_some_and(is_call)
    }

    /// Whether x29 points to the frame record of the function at `pc` when it is the
    /// interrupted instruction: past its prologue's frame set-up, before any
    /// `ldp x29, x30` that takes the record back (an early epilogue before `pc` cuts
    /// the stack too: a stack left short, never a wrong one).
    fn frame_in_place(&self, pc: u64) -> bool {
        let Some(f) = self.function(pc) else {
            return false;
        };
        let Some(from) = f.framed_from else {
            return false;
        };
        pc >= from
            && !(from..pc)
                .step_by(4)
                .any(|a| self.insn(a).is_some_and(restores_frame_pointer))
    }

    /// Whether the function containing `address` keeps a frame record.
    fn keeps_frame(&self, address: u64) -> bool {
        self.function(address)
            .is_some_and(|f| f.framed_from.is_some())
    }
}

/// A sample's frames (innermost first) and whether the chain went past the sampled
/// function: the call chain the kernel read from the frame records, as far as it can
/// be trusted: past the sampled function only when x29 held its frame record, past
/// each caller only when it keeps one, and only through return addresses (each
/// follows a call instruction). Otherwise the sampled function alone (leaf-only).
fn frames<'a>(chain: &[u64], symbols: &'a Symbols, bias: u64) -> (Vec<&'a str>, bool) {
    let pc = chain[0].wrapping_sub(bias);
    let mut frames = vec![symbols.name(pc).unwrap_or("[unknown]")];
    if !symbols.frame_in_place(pc) {
        return (frames, false);
    }
    for &address in &chain[1..] {
        let address = address.wrapping_sub(bias);
        if !symbols.returns_to(address) {
            break;
        }
        let Some(name) = symbols.name(address) else {
            break;
        };
        frames.push(name);
        if !symbols.keeps_frame(address) {
            break;
        }
    }
    let deep = frames.len() > 1;
    (frames, deep)
}

/// Folded stacks: each stack (outermost first, `;`-separated) with its samples ×
/// period, the samples' addresses less `bias`; and how many samples had a stack deeper
/// than their own function. An address outside every function is `[unknown]`.
pub fn fold(samples: &Samples, symbols: &Symbols, bias: u64) -> (BTreeMap<String, u64>, usize) {
    let mut folded = BTreeMap::new();
    let mut deep = 0;
    for (_, chain) in &samples.samples {
        let (mut f, went) = frames(chain, symbols, bias);
        deep += usize::from(went);
        f.reverse();
        *folded.entry(f.join(";")).or_insert(0) += samples.period;
    }
    (folded, deep)
}

/// Each function's own instructions (the samples whose innermost frame it is × period),
/// largest first.
pub fn self_counts(folded: &BTreeMap<String, u64>) -> Vec<(String, u64)> {
    let mut own: BTreeMap<&str, u64> = BTreeMap::new();
    for (stack, count) in folded {
        let leaf = stack.rsplit(';').next().unwrap_or(stack);
        *own.entry(leaf).or_insert(0) += count;
    }
    let mut v: Vec<(String, u64)> = own.into_iter().map(|(k, c)| (k.to_string(), c)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}

/// Writes folded stacks, one `stack count` line each, in the stacks' order.
pub fn write_folded(folded: &BTreeMap<String, u64>, out: &mut impl Write) -> std::io::Result<()> {
    for (stack, count) in folded {
        writeln!(out, "{stack} {count}")?;
    }
    Ok(())
}

fn options(title: &str) -> inferno::flamegraph::Options<'static> {
    let mut o = inferno::flamegraph::Options::default();
    o.title = title.to_string();
    o.count_name = "instructions".into();
    // Colours from the names, not a random generator: the same profile, the same SVG.
    o.deterministic = true;
    o
}

/// An SVG flamegraph of folded stacks (inferno).
pub fn flamegraph(folded: &str, title: &str, out: &mut impl Write) -> Result<(), String> {
    inferno::flamegraph::from_lines(&mut options(title), folded.lines(), out)
        .map_err(|e| format!("inferno: {e}"))
}

/// A differential flamegraph (inferno's `differential` then `flamegraph`): the stacks
/// of `after` with the change from `before` in colour (red grew, blue shrank).
pub fn differential(
    before: &str,
    after: &str,
    title: &str,
    out: &mut impl Write,
) -> Result<(), String> {
    let mut both = Vec::new();
    inferno::differential::from_readers(
        inferno::differential::Options::default(),
        before.as_bytes(),
        after.as_bytes(),
        &mut both,
    )
    .map_err(|e| format!("inferno: {e}"))?;
    let both = String::from_utf8(both).map_err(|e| e.to_string())?;
    flamegraph(&both, title, out)
}

#[cfg(test)]
mod tests;
