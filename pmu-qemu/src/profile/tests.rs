//! The profile's host half on a small aarch64 ELF program built here, byte by byte, as
//! the System V gABI lays one out (ELF header, one PT_LOAD program header, `.text`,
//! `.symtab`, `.strtab`, `.shstrtab`); its instructions are encoded as the Arm ARM
//! (C6.2) gives them and as `aarch64-linux-gnu-objdump -d` prints them for
//! pmu-qemu/examples/two.rs (`stp x29, x30, [sp, #-16]!` = a9bf7bfd, `mov x29, sp` =
//! 910003fd, `ldp x29, x30, [sp], #16` = a8c17bfd, `ret` = d65f03c0).

use super::*;

const STP: u32 = 0xa9bf_7bfd;
const MOV_FP: u32 = 0x9100_03fd;
const LDP: u32 = 0xa8c1_7bfd;
const RET: u32 = 0xd65f_03c0;
const NOP: u32 = 0xd503_201f;
const SUBS: u32 = 0xf100_0400; // subs x0, x0, #1
const TEXT: u64 = 0x40_1000;

/// `bl` from `at` to `to` (imm26 = the distance in instructions).
fn bl(at: u64, to: u64) -> u32 {
    0x9400_0000 | ((to.wrapping_sub(at) / 4) as u32 & 0x03ff_ffff)
}

/// `b.ne` from `at` back to `to`.
fn b_ne(at: u64, to: u64) -> u32 {
    0x5400_0001 | (((to.wrapping_sub(at) as i64 / 4) as u32 & 0x7_ffff) << 5)
}

/// The program: (name, offset in .text, instructions), laid out at `TEXT`.
/// - `demo::main` (0x00): frame record, calls `first` (0x08) and `second` (0x0c);
/// - `demo::first` (0x20): frame record, a loop at 0x28-0x2c;
/// - `demo::second` (0x40): no frame record, a loop at 0x40-0x48;
/// - `odd;name` (0x60): a `;` in a symbol name.
fn functions() -> Vec<(&'static str, u64, Vec<u32>)> {
    vec![
        (
            "_ZN4demo4main17h0123456789abcdefE",
            0x00,
            vec![
                STP,
                MOV_FP,
                bl(TEXT + 0x08, TEXT + 0x20),
                bl(TEXT + 0x0c, TEXT + 0x40),
                LDP,
                RET,
            ],
        ),
        (
            "_ZN4demo5first17h0123456789abcdefE",
            0x20,
            vec![STP, MOV_FP, SUBS, b_ne(TEXT + 0x2c, TEXT + 0x28), LDP, RET],
        ),
        (
            "_ZN4demo6second17h0123456789abcdefE",
            0x40,
            vec![SUBS, NOP, b_ne(TEXT + 0x48, TEXT + 0x40), RET],
        ),
        ("odd;name", 0x60, vec![NOP, RET]),
    ]
}

/// (name, type, flags, addr, offset, size, link, info, entsize).
type SectionHeader = (u32, u32, u64, u64, usize, usize, u32, u32, u64);

fn put(b: &mut [u8], at: usize, v: &[u8]) {
    b[at..at + v.len()].copy_from_slice(v);
}

/// The ELF file of [`functions`].
fn program() -> Vec<u8> {
    let mut code = vec![0u8; 0x70];
    for (_, at, insns) in functions() {
        for (k, i) in insns.iter().enumerate() {
            put(&mut code, at as usize + 4 * k, &i.to_le_bytes());
        }
    }
    let mut strtab = vec![0u8];
    let mut symtab = vec![0u8; 24]; // the null symbol
    for (name, at, insns) in functions() {
        let mut sym = [0u8; 24];
        put(&mut sym, 0, &(strtab.len() as u32).to_le_bytes()); // st_name
        sym[4] = (1 << 4) | 2; // STB_GLOBAL, STT_FUNC
        put(&mut sym, 6, &1u16.to_le_bytes()); // st_shndx: .text
        put(&mut sym, 8, &(TEXT + at).to_le_bytes());
        put(&mut sym, 16, &(4 * insns.len() as u64).to_le_bytes());
        symtab.extend_from_slice(&sym);
        strtab.extend_from_slice(name.as_bytes());
        strtab.push(0);
    }
    let shstrtab = b"\0.text\0.symtab\0.strtab\0.shstrtab\0";
    let mut b = vec![0u8; 0x1000];
    b.extend_from_slice(&code);
    let symtab_at = b.len();
    b.extend_from_slice(&symtab);
    let strtab_at = b.len();
    b.extend_from_slice(&strtab);
    let shstrtab_at = b.len();
    b.extend_from_slice(shstrtab);
    while !b.len().is_multiple_of(8) {
        b.push(0);
    }
    let shoff = b.len();
    let sections: [SectionHeader; 5] = [
        (0, 0, 0, 0, 0, 0, 0, 0, 0),
        (1, 1, 6, TEXT, 0x1000, code.len(), 0, 0, 0),
        (7, 2, 0, 0, symtab_at, symtab.len(), 3, 1, 24),
        (15, 3, 0, 0, strtab_at, strtab.len(), 0, 0, 0),
        (23, 3, 0, 0, shstrtab_at, shstrtab.len(), 0, 0, 0),
    ];
    for (name, kind, flags, addr, offset, size, link, info, entsize) in sections {
        let mut h = [0u8; 64];
        put(&mut h, 0, &name.to_le_bytes());
        put(&mut h, 4, &kind.to_le_bytes());
        put(&mut h, 8, &flags.to_le_bytes());
        put(&mut h, 16, &addr.to_le_bytes());
        put(&mut h, 24, &(offset as u64).to_le_bytes());
        put(&mut h, 32, &(size as u64).to_le_bytes());
        put(&mut h, 40, &link.to_le_bytes());
        put(&mut h, 44, &info.to_le_bytes());
        put(&mut h, 48, &8u64.to_le_bytes());
        put(&mut h, 56, &entsize.to_le_bytes());
        b.extend_from_slice(&h);
    }
    put(&mut b, 0, b"\x7fELF\x02\x01\x01");
    put(&mut b, 16, &2u16.to_le_bytes()); // ET_EXEC
    put(&mut b, 18, &183u16.to_le_bytes()); // EM_AARCH64
    put(&mut b, 20, &1u32.to_le_bytes());
    put(&mut b, 24, &TEXT.to_le_bytes()); // e_entry
    put(&mut b, 32, &64u64.to_le_bytes()); // e_phoff
    put(&mut b, 40, &(shoff as u64).to_le_bytes());
    put(&mut b, 52, &64u16.to_le_bytes()); // e_ehsize
    put(&mut b, 54, &56u16.to_le_bytes());
    put(&mut b, 56, &1u16.to_le_bytes()); // e_phnum
    put(&mut b, 58, &64u16.to_le_bytes());
    put(&mut b, 60, &5u16.to_le_bytes()); // e_shnum
    put(&mut b, 62, &4u16.to_le_bytes()); // e_shstrndx
                                          // PT_LOAD, R+X, the code at file offset 0x1000 and address TEXT.
    let mut ph = [0u8; 56];
    put(&mut ph, 0, &1u32.to_le_bytes());
    put(&mut ph, 4, &5u32.to_le_bytes());
    put(&mut ph, 8, &0x1000u64.to_le_bytes());
    put(&mut ph, 16, &TEXT.to_le_bytes());
    put(&mut ph, 24, &TEXT.to_le_bytes());
    put(&mut ph, 32, &(code.len() as u64).to_le_bytes());
    put(&mut ph, 40, &(code.len() as u64).to_le_bytes());
    put(&mut ph, 48, &0x1000u64.to_le_bytes());
    put(&mut b, 64, &ph);
    b
}

fn symbols() -> Symbols {
    Symbols::from_elf(&program()).unwrap()
}

/// The sampler's file for `samples` (each a chain of offsets from `TEXT` plus `bias`,
/// written as the sampler writes them: the address, then PERF_CONTEXT_USER and the
/// chain, which repeats the address), every 1000 instructions.
fn sampler_file(samples: &[&[u64]], bias: u64) -> String {
    let mut t = format!(
        "pmu-qemu-profile 1\nperiod 1000\nmap 7 {:x} 1000 1000 /w/demo\nmap 7 fffff7fff000 1000 0 [vdso]\n",
        TEXT + bias
    );
    for chain in samples {
        let chain: Vec<String> = chain
            .iter()
            .map(|a| format!("{:x}", TEXT + bias + a))
            .collect();
        t += &format!(
            "sample 7 {} fffffffffffffe00 {}\n",
            chain[0],
            chain.join(" ")
        );
    }
    t + "lost 0\nthrottled 0\nend 0\n"
}

fn folded_of(samples: &[&[u64]]) -> (BTreeMap<String, u64>, usize) {
    let s = Samples::parse(&sampler_file(samples, 0)).unwrap();
    fold(&s, &symbols(), 0)
}

#[test]
fn the_call_instructions_are_known() {
    // From `aarch64-linux-gnu-objdump -d` of examples/two: `bl` 94000008, `blr x0`
    // d63f0000, `blraaz x8` d63f091f; not calls: `ret` d65f03c0, `br x16` d61f0200.
    for call in [0x9400_0008, 0xd63f_0000, 0xd63f_091f, bl(0x100, 0x40)] {
        assert!(is_call(call), "{call:08x}");
    }
    for other in [RET, 0xd61f_0200, NOP, STP, LDP] {
        assert!(!is_call(other), "{other:08x}");
    }
    // `add x29, sp, #0x10` (main's prologue in examples/two) = 910043fd.
    assert!(sets_frame_pointer(MOV_FP) && sets_frame_pointer(0x9100_43fd));
    assert!(!sets_frame_pointer(0x9100_03ff)); // mov sp, sp
                                               // `ldp x29, x30, [sp, #16]` = a9417bfd.
    assert!(restores_frame_pointer(LDP) && restores_frame_pointer(0xa941_7bfd));
    assert!(!restores_frame_pointer(0xa8c1_07e0)); // ldp x0, x1, [sp], #16
}

#[test]
fn functions_are_named_by_their_symbols_demangled() {
    let s = symbols();
    assert_eq!(s.name(TEXT + 0x28), Some("demo::first"));
    assert_eq!(s.name(TEXT), Some("demo::main"));
    assert_eq!(s.name(TEXT + 0x4c), Some("demo::second"));
    // Past `second`'s four instructions, before `odd;name`: no function.
    assert_eq!(s.name(TEXT + 0x50), None);
    // `;` separates frames in folded stacks.
    assert_eq!(s.name(TEXT + 0x60), Some("odd:name"));
}

#[test]
fn a_stack_goes_through_frame_records_and_return_addresses_only() {
    // In first's loop, called from main (return address 0x0c follows `bl first`);
    // 0x234 is no return address: the stack stops there.
    let (f, deep) = folded_of(&[&[0x28, 0x0c, 0x234]]);
    assert_eq!(f, BTreeMap::from([("demo::main;demo::first".into(), 1000)]));
    assert_eq!(deep, 1);
    // 0x14 (after `ldp`) follows no call.
    let (f, _) = folded_of(&[&[0x2c, 0x14]]);
    assert_eq!(f, BTreeMap::from([("demo::first".into(), 1000)]));
}

#[test]
fn without_a_frame_record_in_place_a_sample_is_leaf_only() {
    // `second` keeps no frame record; `first` at 0x24 has not set x29 yet, and at 0x34
    // (`ret`) has taken it back: x29 is the caller's, whose caller the chain would name
    // next, skipping one.
    let (f, deep) = folded_of(&[&[0x44, 0x10], &[0x24, 0x0c], &[0x34, 0x0c]]);
    assert_eq!(
        f,
        BTreeMap::from([("demo::first".into(), 2000), ("demo::second".into(), 1000)])
    );
    assert_eq!(deep, 0);
}

#[test]
fn an_address_outside_every_function_is_unknown() {
    let (f, _) = folded_of(&[&[0x54]]);
    assert_eq!(f, BTreeMap::from([("[unknown]".into(), 1000)]));
}

/// A position-independent program mapped at 0xaaaa_0000_0000 more than its ELF says:
/// the mapping of its file's executable segment gives the difference.
#[test]
fn a_position_independent_program_s_addresses_are_moved_back() {
    let bias = 0xaaaa_0000_0000;
    let s = Samples::parse(&sampler_file(&[&[0x28, 0x0c]], bias)).unwrap();
    let symbols = symbols();
    assert_eq!(s.bias("/w/demo", &symbols), bias);
    assert_eq!(s.bias("/other", &symbols), 0);
    let (f, _) = fold(&s, &symbols, bias);
    assert_eq!(f, BTreeMap::from([("demo::main;demo::first".into(), 1000)]));
}

/// Counts are samples × period; lines are `stack count`, in the stacks' order.
#[test]
fn folded_stacks_are_written_one_line_each_scaled_by_the_period() {
    let (f, _) = folded_of(&[&[0x28, 0x0c], &[0x2c, 0x0c], &[0x44], &[0x28, 0x0c]]);
    let mut out = Vec::new();
    write_folded(&f, &mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "demo::main;demo::first 3000\ndemo::second 1000\n"
    );
    assert_eq!(
        self_counts(&f),
        vec![("demo::first".into(), 3000), ("demo::second".into(), 1000)]
    );
}

#[test]
fn the_sampler_s_file_is_read_and_its_mistakes_named() {
    let s = Samples::parse(&sampler_file(&[&[0x28, 0x0c]], 0)).unwrap();
    assert_eq!(s.period, 1000);
    // PERF_CONTEXT_USER dropped; the chain starts with the sampled address once.
    assert_eq!(s.samples, vec![(7, vec![TEXT + 0x28, TEXT + 0x0c])]);
    assert_eq!((s.lost, s.throttled, s.status), (0, 0, Some(0)));
    assert_eq!(s.maps[1].file, "[vdso]");
    // A sample without a chain: its address.
    let s = Samples::parse("pmu-qemu-profile 1\nperiod 5\nsample 1 abc\n").unwrap();
    assert_eq!(s.samples, vec![(1, vec![0xabc])]);
    assert!(Samples::parse("period 5\n")
        .unwrap_err()
        .contains("not a pmu-qemu"));
    assert!(Samples::parse("pmu-qemu-profile 1\nsample 1 xyz\n")
        .unwrap_err()
        .contains("`xyz` is not a hexadecimal number"));
    assert!(Samples::parse("pmu-qemu-profile 1\n")
        .unwrap_err()
        .contains("no period"));
    assert!(Samples::parse("pmu-qemu-profile 1\nperiod 0\n")
        .unwrap_err()
        .contains("line 2 is malformed"));
}

/// A file without its `end` line, or with lost or throttled samples, gives no figures.
#[test]
fn missing_samples_are_refused() {
    let whole = sampler_file(&[&[0x28]], 0);
    assert_eq!(Samples::parse(&whole).unwrap().complete(), Ok(()));
    let cut = whole.replace("end 0\n", "");
    assert!(Samples::parse(&cut)
        .unwrap()
        .complete()
        .unwrap_err()
        .contains("no `end` line"));
    for (what, with) in [("lost 0", "lost 3"), ("throttled 0", "throttled 1")] {
        let e = Samples::parse(&whole.replace(what, with))
            .unwrap()
            .complete()
            .unwrap_err();
        assert!(e.contains("dropped samples"), "{e}");
    }
}

/// A program that forked (9: no mapping of its own) and started another program (8):
/// the samples of the program and of its fork are kept, the other program's not.
#[test]
fn samples_of_other_programs_are_left_out() {
    let text = "pmu-qemu-profile 1\nperiod 10\nmap 7 401000 1000 1000 /w/demo\nmap 7 fffff7fff000 1000 0 [vdso]\nmap 8 401000 1000 1000 /bin/busybox\nmap 8 fffff7fff000 1000 0 [vdso]\nsample 7 401028\nsample 8 401028\nsample 9 40102c\n";
    let mut s = Samples::parse(text).unwrap();
    s.keep_program("/w/demo");
    assert_eq!(
        s.samples,
        vec![(7, vec![TEXT + 0x28]), (9, vec![TEXT + 0x2c])]
    );
}

#[test]
fn a_stripped_program_is_refused_by_name() {
    let mut b = program();
    // No symbol table: e_shnum 0.
    put(&mut b, 60, &0u16.to_le_bytes());
    assert!(Symbols::from_elf(&b)
        .unwrap_err()
        .contains("no function symbols"));
    assert!(Symbols::from_elf(b"#!/bin/sh\n").is_err());
}

/// inferno's SVG names the functions, counts in instructions, and is the same twice
/// (colours from the names, not random).
#[test]
fn flamegraphs_are_drawn_by_inferno_the_same_every_time() {
    let folded = "demo::main;demo::first 3000\ndemo::second 1000\n";
    let draw = || {
        let mut svg = Vec::new();
        flamegraph(folded, "demo", &mut svg).unwrap();
        String::from_utf8(svg).unwrap()
    };
    let svg = draw();
    assert!(svg.starts_with("<?xml"), "{}", &svg[..100]);
    assert!(svg.contains("demo::first") && svg.contains("demo::second"));
    assert!(svg.contains("3,000 instructions"), "counts in instructions");
    assert_eq!(svg, draw());

    let mut diff = Vec::new();
    differential(
        "demo::main;demo::first 1000\ndemo::second 1000\n",
        folded,
        "demo vs before",
        &mut diff,
    )
    .unwrap();
    let diff = String::from_utf8(diff).unwrap();
    // inferno's differential tooltips: the change in percent of the total.
    assert!(
        diff.contains("demo::first") && diff.contains("+50.00%"),
        "{diff}"
    );
}
