//! `pmu-demo bench`: what the read paths cost here.
//!
//! It times the perf backend's read paths, so on 32-bit ARM (no perf backend) it only
//! says why it cannot run.
#![cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code, unused_imports)
)]

use crate::timing::{self as bench, BenchConfig, BenchResult};
use clap::Args as ClapArgs;
use serde::Serialize;

use crate::{progress, Failure};

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Events of the session whose reads are timed (the first is read by the fast path).
    #[arg(long, value_delimiter = ',', default_value = "instructions")]
    events: Vec<String>,
    /// Batches (statistics over their per-operation times).
    #[arg(long, default_value_t = 21)]
    batches: u32,
    /// Operations per batch.
    #[arg(long, default_value_t = 1000)]
    per_batch: u32,
    /// One JSON object on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Serialize)]
struct Row {
    path: &'static str,
    ns_min: Option<f64>,
    ns_median: Option<f64>,
    tsc_ticks_min: Option<f64>,
    tsc_ticks_median: Option<f64>,
    unavailable: Option<String>,
}

#[derive(Debug, Serialize)]
struct Output {
    events: Vec<String>,
    note: Option<String>,
    rows: Vec<Row>,
}

fn row(path: &'static str, r: pmu_linux::Result<BenchResult>) -> Row {
    match r {
        Ok(b) => Row {
            path,
            ns_min: Some(b.ns_min),
            ns_median: Some(b.ns_median),
            tsc_ticks_min: b.ticks_min,
            tsc_ticks_median: b.ticks_median,
            unavailable: None,
        },
        Err(e) => Row {
            path,
            ns_min: None,
            ns_median: None,
            tsc_ticks_min: None,
            tsc_ticks_median: None,
            unavailable: Some(e.to_string()),
        },
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn run(_: &Args) -> Result<(), Failure> {
    Err(Failure::new(format!(
        "pmu-demo bench times the perf read paths: {}",
        pmu_linux::Error::Unsupported(pmu_linux::error::Unsupported::Perf)
    )))
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn run(args: &Args) -> Result<(), Failure> {
    let config = BenchConfig {
        batches: args.batches,
        per_batch: args.per_batch,
    };
    let mut names: Vec<&str> = args.events.iter().map(String::as_str).collect();
    let mut note = None;
    let mut session =
        match pmu_linux::perf::Session::open(&names, pmu_linux::perf::Options::default()) {
            Ok(s) => s,
            Err(e) => {
                note = Some(format!(
                "{e}; timing the software event task-clock instead (its reads are read() calls)"
            ));
                progress(note.as_deref().unwrap_or_default());
                names = vec!["task-clock"];
                pmu_linux::perf::Session::open(&names, pmu_linux::perf::Options::default())?
            }
        };
    session.enable()?;
    progress(format_args!(
        "timing {} batches of {} operations per path",
        config.batches, config.per_batch
    ));
    let costs = bench::read_paths(&mut session, config);
    session.disable()?;
    let out = Output {
        events: names.iter().map(|s| (*s).to_owned()).collect(),
        note,
        rows: vec![
            row("fast read (one instruction)", costs.fast),
            row("read() fallback", costs.syscall),
            row("region (start + stop + hazard checks)", costs.region),
            row("clock_gettime", costs.clock),
        ],
    };
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| Failure::new(e.to_string()))?
        );
        return Ok(());
    }
    if let Some(n) = &out.note {
        println!("note: {n}");
    }
    println!(
        "{:<40} {:>10} {:>10} {:>12} {:>12}",
        "path", "ns min", "ns median", "ticks min", "ticks median"
    );
    for r in &out.rows {
        match &r.unavailable {
            Some(why) => println!("{:<40} unavailable: {why}", r.path),
            None => {
                let f = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}"));
                println!(
                    "{:<40} {:>10} {:>10} {:>12} {:>12}",
                    r.path,
                    f(r.ns_min),
                    f(r.ns_median),
                    f(r.tsc_ticks_min),
                    f(r.tsc_ticks_median)
                );
            }
        }
    }
    Ok(())
}
