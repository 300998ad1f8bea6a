//! The scratch crates of `cargo xtask pmu-qemu-compare`: one workload library built for
//! both instruction sets, Gungraun's benches (x86_64), a callgrind driver (x86_64, and
//! aarch64 for one uncounted call under pmu-qemu) and a pmu-criterion bench (aarch64).

/// Records per round of the JSON workload; the rounds scale it.
pub const RECORDS: u64 = 1000;

/// The number of small benchmarks in one binary (the issue's case (c)).
pub const SMALL: u64 = 50;

/// The scratch workspace's manifest.
pub const WORKSPACE: &str =
    "[workspace]\nmembers = [\"work\", \"gg\", \"pmu\"]\nresolver = \"2\"\n";

/// The linker for the aarch64 musl target, as docs/pmu-qemu.md's CI section sets it.
pub const CARGO_CONFIG: &str = "[target.aarch64-unknown-linux-musl]\nlinker = \"rust-lld\"\n";

/// The workload library's manifest (serde_json as this workspace locks it).
pub const WORK_MANIFEST: &str =
    "[package]\nname = \"cmp-work\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n\
[lib]\nbench = false\n\n[[bin]]\nname = \"driver\"\nbench = false\n\n\
[dependencies]\nserde_json = \"1\"\n";

/// The workloads: the same source for x86_64 and aarch64.
pub const WORK_LIB: &str = r##"//! The measured functions: `spin` (a two-instruction loop), `workload` (generate,
//! parse, sort and hash JSON) and `small` (50 small kernels, by index).

use std::fmt::Write as _;
use std::hash::{DefaultHasher, Hash, Hasher};

/// `iterations` iterations of a two-instruction loop.
#[inline(never)]
pub fn spin(iterations: u64) {
    #[cfg(target_arch = "aarch64")]
    // SAFETY: register arithmetic and a branch inside the block; no memory, no stack.
    unsafe {
        core::arch::asm!("2:", "subs {n}, {n}, #1", "b.ne 2b", n = inout(reg) iterations => _,
            options(nomem, nostack))
    };
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as above.
    unsafe {
        core::arch::asm!("2:", "dec {n}", "jnz 2b", n = inout(reg) iterations => _,
            options(nomem, nostack))
    };
}

/// A JSON array of `records` objects, generated from `seed` (a linear congruential
/// sequence: the same document every run).
fn document(seed: u64, records: u64) -> String {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut s = String::with_capacity(records as usize * 96);
    s.push('[');
    for i in 0..records {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        if i > 0 {
            s.push(',');
        }
        let _ = write!(
            s,
            r#"{{"id":{i},"name":"item-{:08x}","tags":["t{}","u{}"],"value":{},"ratio":{}.{:03}}}"#,
            x >> 32,
            x % 7,
            x % 13,
            x % 1_000_000,
            x % 100,
            (x >> 8) % 1000
        );
    }
    s.push(']');
    s
}

/// `rounds` rounds of: generate a document of RECORDS records, parse it with
/// serde_json, sort its values and names, hash them (SipHash with fixed keys).
#[inline(never)]
pub fn workload(rounds: u64, records: u64) -> u64 {
    let mut h = DefaultHasher::new();
    for round in 0..rounds {
        let doc = document(round, records);
        let parsed: serde_json::Value = serde_json::from_str(&doc).unwrap_or_default();
        let items = parsed.as_array().map(Vec::as_slice).unwrap_or_default();
        let mut values: Vec<u64> = items.iter().filter_map(|r| r["value"].as_u64()).collect();
        let mut names: Vec<&str> = items.iter().filter_map(|r| r["name"].as_str()).collect();
        values.sort_unstable();
        names.sort_unstable();
        values.hash(&mut h);
        names.hash(&mut h);
    }
    h.finish()
}

/// Small kernel `k`: 100 + 10 k rounds of a multiply-rotate-xor mix.
#[inline(never)]
pub fn small(k: u64) -> u64 {
    let mut x = k ^ 0x9e37_79b9_7f4a_7c15;
    for i in 0..100 + 10 * k {
        x = (x.wrapping_mul(0xff51_afd7_ed55_8ccd) ^ i).rotate_left(17);
    }
    x
}
"##;

/// The driver: one call of one function, for callgrind (`--toggle-collect`) and for one
/// uncounted call under pmu-qemu.
pub const DRIVER: &str = r#"//! `driver spin N` | `driver work ROUNDS RECORDS` | `driver small K`: one call.

use std::hint::black_box;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n = |i: usize| args.get(i).and_then(|a| a.parse::<u64>().ok());
    match (args.first().map(String::as_str), n(1), n(2)) {
        (Some("spin"), Some(n), _) => cmp_work::spin(black_box(n)),
        (Some("work"), Some(r), Some(k)) => println!("{}", cmp_work::workload(black_box(r), black_box(k))),
        (Some("small"), Some(k), _) => println!("{}", cmp_work::small(black_box(k))),
        _ => {
            eprintln!("usage: driver spin N | work ROUNDS RECORDS | small K");
            return ExitCode::from(2);
        }
    }
    // The process's context switches (Linux's /proc/PID/status), for a second look.
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        for l in status.lines().filter(|l| l.contains("ctxt_switches")) {
            eprintln!("driver: {l}");
        }
    }
    ExitCode::SUCCESS
}
"#;

/// Gungraun's crate: one bench target per case, so each is one binary run.
pub fn gg_manifest(benches: &[&str]) -> String {
    let mut s = String::from(
        "[package]\nname = \"cmp-gg\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n\
[dependencies]\ncmp-work = { path = \"../work\" }\n\n\
[dev-dependencies]\ngungraun = \"=0.20.0\"\n",
    );
    for b in benches {
        s += &format!("\n[[bench]]\nname = \"{b}\"\nharness = false\n");
    }
    s
}

/// A Gungraun bench of `function` over `cases` (`(id, argument expression)`), as
/// Gungraun's guide writes one (`#[library_benchmark]`, `#[bench::id(args)]`).
pub fn gg_bench(function: &str, call: &str, cases: &[(String, String)]) -> String {
    let attrs: String = cases
        .iter()
        .map(|(id, arg)| format!("#[bench::{id}({arg})]\n"))
        .collect();
    format!(
        "use gungraun::{{library_benchmark, library_benchmark_group, main}};\n\
use std::hint::black_box;\n\n\
#[library_benchmark]\n{attrs}fn bench_{function}(n: u64) -> u64 {{\n    {call}\n}}\n\n\
library_benchmark_group!(name = group; benchmarks = bench_{function});\n\
main!(library_benchmark_groups = group);\n"
    )
}

/// pmu-criterion's crate: one binary of every benchmark, chosen by its filter
/// (`pmu-bench`), and one counted call in a fresh process (`pmu-once`).
pub fn pmu_manifest(root: &std::path::Path) -> String {
    format!(
        "[package]\nname = \"cmp-pmu\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n\
[[bin]]\nname = \"pmu-bench\"\npath = \"src/main.rs\"\nbench = false\n\n\
[dependencies]\ncmp-work = {{ path = \"../work\" }}\npmu-criterion = {{ path = \"{}\" }}\npmu-linux = {{ path = \"{}\" }}\n",
        root.join("pmu-criterion").display(),
        root.join("pmu-linux").display()
    )
}

/// The pmu-criterion bench: `spin/100`, `spin/200`, `work/<rounds>` for each of
/// `rounds`, `small/0` … `small/49`, as pmu-criterion's README writes a `Bench`.
pub fn pmu_bench(rounds: &[u64]) -> String {
    let rounds: Vec<String> = rounds.iter().map(u64::to_string).collect();
    format!(
        "//! Every benchmark of the comparison; the filter picks a case.\n\
use std::hint::black_box;\n\n\
fn main() -> std::process::ExitCode {{\n\
    let mut bench = match pmu_criterion::Bench::instructions() {{\n\
        Ok(b) => b,\n\
        Err(e) => {{\n\
            eprintln!(\"{{e}}\");\n\
            return e.exit_code();\n\
        }}\n\
    }};\n\
    for n in [100u64, 200] {{\n\
        bench.with_input(\"spin\", &n, |&n| cmp_work::spin(black_box(n)));\n\
    }}\n\
    for r in [{}u64] {{\n\
        bench.with_input(\"work\", &r, |&r| cmp_work::workload(black_box(r), black_box({RECORDS})));\n\
    }}\n\
    for k in 0..{SMALL}u64 {{\n\
        bench.with_input(\"small\", &k, |&k| cmp_work::small(black_box(k)));\n\
    }}\n\
    bench.finish()\n\
}}\n",
        rounds.join("u64, ")
    )
}

/// One counted call of the JSON workload, the first in a fresh process (as callgrind
/// counts it): pmu-linux's `Meter`, a region around the call less an empty region.
pub const PMU_ONCE: &str = r#"//! `pmu-once ROUNDS RECORDS`: one call of the workload, counted.

use std::hint::black_box;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let [rounds, records] = args[..] else {
        eprintln!("usage: pmu-once ROUNDS RECORDS");
        return ExitCode::from(2);
    };
    match once(rounds, records) {
        Ok((count, empty)) => {
            println!("one call: {count} instructions (a region of one call, {}, less an empty one, {empty})", count + empty);
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("not measured: {e}");
            ExitCode::from(1)
        }
    }
}

fn once(rounds: u64, records: u64) -> Result<(u64, u64), pmu_linux::Error> {
    let mut builder = pmu_linux::Meter::builder();
    let instructions = builder.add(pmu_linux::GenericEvent::Instructions);
    let mut meter = builder.build()?;
    let region = meter.start()?;
    let empty = meter.stop(region)?.value(instructions)?;
    let region = meter.start()?;
    black_box(cmp_work::workload(black_box(rounds), black_box(records)));
    let full = meter.stop(region)?.value(instructions)?;
    Ok((full.saturating_sub(empty), empty))
}
"#;
