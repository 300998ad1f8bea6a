//! Prints what this machine offers and what each read path costs.
//!
//! `cargo run --release -p pmu-linux --example read_costs [event …]` (default: the
//! software events task-clock, context-switches, cpu-migrations, page-faults).

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn main() -> Result<(), pmu_linux::Error> {
    use pmu_linux::bench::{read_paths, BenchConfig, BenchResult};
    use pmu_linux::list::backends;
    use pmu_linux::{measure_once, Options, Session};

    for status in backends() {
        match &status.usable {
            Ok(()) => println!("backend {}: usable", status.backend),
            Err(e) => println!("backend {}: not usable: {e}", status.backend),
        }
        for note in &status.notes {
            println!("  {note}");
        }
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let names: Vec<&str> = if args.is_empty() {
        vec![
            "task-clock",
            "context-switches",
            "cpu-migrations",
            "page-faults",
        ]
    } else {
        args.iter().map(String::as_str).collect()
    };
    let mut session = Session::open(&names, Options::default())?;
    session.enable()?;
    let run = measure_once(&mut session, &mut || {
        std::hint::black_box((0..10_000u64).sum::<u64>());
    })?;
    for ((name, reading), event) in names.iter().zip(&run.readings).zip(run.evidence.events()) {
        println!(
            "{name:>20}: {:>10} read {:?} / {:?}, hazards {}",
            reading.value, event.start, event.end, reading.hazards
        );
    }
    let costs = read_paths(&mut session, BenchConfig::default());
    let show = |what: &str, r: &Result<BenchResult, pmu_linux::Error>| match r {
        Ok(r) => println!(
            "{what:>16}: min {:8.1} ns, median {:8.1} ns, TSC min {:?} median {:?} ({} ops)",
            r.ns_min, r.ns_median, r.ticks_min, r.ticks_median, r.operations
        ),
        Err(e) => println!("{what:>16}: {e}"),
    };
    show("fast read", &costs.fast);
    show("read() fallback", &costs.syscall);
    show("whole region", &costs.region);
    show("clock_gettime", &costs.clock);
    Ok(())
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn main() {}
