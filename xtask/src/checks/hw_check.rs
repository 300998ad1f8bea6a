//! `cargo xtask hw-check`: the real-hardware check, for an x86_64 machine with a PMU
//! (bare metal, or a VM with a vPMU). It builds `pmu-demo` and `pmu-guest` and reports:
//!
//! 1. that the perf backend's rdpmc path is taken, not the `read()` fallback;
//! 2. what one read costs, rdpmc vs `read()`, in TSC ticks (`pmu-demo bench`, timed
//!    with `lfence; rdtsc`) and in core cycles (`pmu-guest read-costs --measuring
//!    cycles`: a second, independent `cycles` event around N reads);
//! 3. exact instruction counts of known blocks after calibration (the `loop` kernel,
//!    1 … 10000 iterations, 2 instructions each);
//! 4. the FMA latency (cycles per dependent `vfmadd231ps ymm`) and throughput (FMAs per
//!    cycle) of this CPU (Zen 2: latency 5, reciprocal throughput 0.5 in Agner Fog's instruction
//!    tables, so 5.000 cycles per FMA and 2.000 FMAs per cycle).
//!
//! Without hardware counters (a VM without vPMU, like this project's CI machines) it
//! fails at once with "no hardware counters" and why.

use std::path::PathBuf;
use std::process::{Command, ExitCode};

use serde_json::Value;

use crate::engine::paths::workspace_root;
use crate::engine::step::{stdout_of, Plan, Step};

/// This module's commands in `cargo xtask help`.
pub const USAGE: &str =
    "    hw-check          Real-hardware check (x86_64 with a PMU): builds pmu-demo,
                      requires the rdpmc path, reports rdpmc vs read() cycles per read
                      (TSC and cycle counter), exact instruction counts after
                      calibration, FMA latency/throughput. Fails clearly without
                      hardware counters.
";

fn demo() -> PathBuf {
    crate::engine::paths::target_dir().join("release/pmu-demo")
}

/// The host's `pmu-guest` (the read-cost rig, tests/guest).
fn guest() -> PathBuf {
    crate::engine::paths::target_dir().join("release/pmu-guest")
}

/// `pmu-demo args… --json`, parsed.
fn demo_json(args: &[&str]) -> Result<Value, String> {
    let out = stdout_of(
        Command::new(demo())
            .args(args)
            .arg("--json")
            .current_dir(workspace_root()),
    )?;
    serde_json::from_str(&out).map_err(|e| format!("`pmu-demo {}`: bad JSON: {e}", args.join(" ")))
}

/// `v` at `path` (object keys): an error naming the path if pmu-demo's JSON lacks it
/// (a renamed field must stop the check, not print `null`).
fn field<'a>(v: &'a Value, path: &[&str]) -> Result<&'a Value, String> {
    path.iter().try_fold(v, |v, key| {
        v.get(key)
            .ok_or_else(|| format!("pmu-demo's JSON has no `{}`: {v}", path.join(".")))
    })
}

/// The number at `path`; an error if it is missing or null (nothing was measured).
fn number(v: &Value, path: &[&str]) -> Result<f64, String> {
    let n = field(v, path)?;
    n.as_f64()
        .ok_or_else(|| format!("`{}` is {n}, not a number", path.join(".")))
}

/// The instructions line of one `loop` result: (exact, what to print).
fn loop_line(units: u64, r: &Value) -> Result<(bool, String), String> {
    let exact = field(r, &["derived", "instructions_exact"])?
        .as_bool()
        .ok_or_else(|| format!("no instruction count for loop × {units}: {r}"))?;
    let inst = field(r, &["events"])?
        .as_array()
        .and_then(|e| e.iter().find(|e| e["name"] == "instructions"))
        .ok_or_else(|| format!("no `instructions` event for loop × {units}: {r}"))?;
    Ok((
        exact,
        format!(
            "instructions, loop × {units}: measured {}, expected {} → {}",
            field(inst, &["min"])?,
            field(r, &["expected_instructions"])?,
            if exact { "exact" } else { "NOT EXACT" }
        ),
    ))
}

/// The FMA line from the `fma-latency` and `fma-throughput` results.
fn fma_line(latency: &Value, throughput: &Value) -> Result<String, String> {
    Ok(format!(
        "FMA (vfmadd231ps ymm): latency {:.3} cycles per FMA, throughput {:.3} FMAs per cycle (Zen 2 per Agner Fog's instruction tables: 5 and 2)",
        number(latency, &["derived", "cycles_per_unit"])?,
        number(throughput, &["derived", "units_per_cycle"])?
    ))
}

/// The only `results[0]` of a `measure --json`.
fn measure(kernel: &str, units: u64, events: &str) -> Result<Value, String> {
    let units = units.to_string();
    let v = demo_json(&[
        "measure",
        "--backend",
        "perf",
        "--kernel",
        kernel,
        "--units",
        &units,
        "--events",
        events,
    ])?;
    field(&v, &["results"])?
        .get(0)
        .cloned()
        .ok_or_else(|| format!("`pmu-demo measure --kernel {kernel}` gave no result: {v}"))
}

/// Why this machine has no hardware counters, if it has none.
fn no_counters() -> Option<String> {
    if !cfg!(target_arch = "x86_64") {
        return Some(format!(
            "hw-check is the x86_64 check; this is {}",
            std::env::consts::ARCH
        ));
    }
    if !std::path::Path::new("/sys/bus/event_source/devices/cpu").exists()
        && !std::path::Path::new("/sys/bus/event_source/devices/cpu_core").exists()
    {
        return Some(
            "no hardware counters: /sys/bus/event_source/devices/cpu is missing (no PMU driver: a VM without vPMU?)"
                .into(),
        );
    }
    match measure("loop", 1000, "instructions,cycles") {
        Err(e) => Some(format!("no hardware counters: {e}")),
        Ok(r) => match field(&r, &["fast_read"]).map(|f| f.as_bool()) {
            Ok(Some(true)) => None,
            Ok(_) => Some(format!(
                "no hardware counters readable with rdpmc: the perf backend fell back to read() ({})",
                r.get("fallback_reason").unwrap_or(&Value::Null)
            )),
            Err(e) => Some(e),
        },
    }
}

fn check() -> Result<(), String> {
    if let Some(why) = no_counters() {
        return Err(why);
    }
    println!("rdpmc path: taken (pmu-demo measure --backend perf: fast_read = true)");

    let bench = demo_json(&["bench", "--events", "cycles"])?;
    println!("cost of one read, TSC ticks (min / median over batches):");
    let rows = field(&bench, &["rows"])?
        .as_array()
        .ok_or_else(|| format!("`pmu-demo bench`: `rows` is not a list: {bench}"))?;
    for row in rows {
        println!(
            "  {:<40} {} / {}{}",
            field(row, &["path"])?.as_str().unwrap_or("?"),
            field(row, &["tsc_ticks_min"])?,
            field(row, &["tsc_ticks_median"])?,
            match row.get("unavailable") {
                Some(Value::String(why)) => format!(" ({why})"),
                _ => String::new(),
            }
        );
    }
    // In core cycles: a second, independent `cycles` event (its own group, read with
    // rdpmc) around N and 2N reads, minus an empty loop (pmu-guest read-costs).
    let out = stdout_of(Command::new(guest()).args(["read-costs", "--measuring", "cycles"]))?;
    let results = pmu_tests::parse_results(&out);
    println!("cost of one read, core cycles (cycle counter, mean over 1000):");
    for r in results.iter().filter(|r| r.scenario == "bench") {
        println!(
            "  {:<16} {} cycles",
            r.get("path"),
            r.fields.get("per_op").map_or("?", String::as_str)
        );
    }

    let mut exact = true;
    for units in [1u64, 10, 100, 1000, 10000] {
        let (ok, line) = loop_line(units, &measure("loop", units, "instructions")?)?;
        exact &= ok;
        println!("{line}");
    }

    let lat = measure("fma-latency", 100_000, "cycles,instructions")?;
    let thr = measure("fma-throughput", 100_000, "cycles,instructions")?;
    println!("{}", fma_line(&lat, &thr)?);
    if exact {
        Ok(())
    } else {
        Err("instruction counts of known blocks are not exact after calibration".into())
    }
}

/// `cargo xtask hw-check`.
pub fn run() -> ExitCode {
    Plan::new("hw-check")
        .then(vec![
            Step::cargo(
                "build pmu-demo and pmu-guest (host, release)",
                [
                    "build",
                    "--release",
                    "-p",
                    "userspace-demo",
                    "-p",
                    "pmu-guest",
                ],
            ),
            Step::func(
                "hardware counters: rdpmc path, read costs, exact counts, FMA",
                check,
            ),
        ])
        .run()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A `measure --json` result of the `loop` kernel, shaped as pmu-demo's
    /// `KernelReport` serializes (userspace-demo/src/measure_cmd.rs); the arm64 guest
    /// tests assert on the same fields of real output.
    fn loop_result(measured: i64, exact: bool) -> Value {
        json!({
            "kernel": "loop",
            "expected_instructions": 2000,
            "fast_read": true,
            "fallback_reason": null,
            "events": [{"name": "cycles", "min": 1010}, {"name": "instructions", "min": measured}],
            "derived": {"instructions_exact": exact, "cycles_per_unit": 1.01, "units_per_cycle": 0.99},
        })
    }

    #[test]
    fn loop_lines_say_exact_or_not() {
        assert_eq!(
            loop_line(1000, &loop_result(2000, true)).unwrap(),
            (
                true,
                "instructions, loop × 1000: measured 2000, expected 2000 → exact".to_string()
            )
        );
        assert_eq!(
            loop_line(1000, &loop_result(2003, false)).unwrap(),
            (
                false,
                "instructions, loop × 1000: measured 2003, expected 2000 → NOT EXACT".to_string()
            )
        );
    }

    /// A missing field or a null where a number is needed stops the check with the
    /// field's name: never a `null` printed as a result.
    #[test]
    fn missing_or_null_fields_are_errors() {
        let mut r = loop_result(2000, true);
        r["derived"]["instructions_exact"] = Value::Null;
        assert!(loop_line(10, &r)
            .unwrap_err()
            .contains("no instruction count for loop × 10"));
        r["derived"]
            .as_object_mut()
            .unwrap()
            .remove("instructions_exact");
        assert!(loop_line(10, &r)
            .unwrap_err()
            .contains("has no `derived.instructions_exact`"));
        let mut lat = loop_result(0, true);
        lat["derived"]["cycles_per_unit"] = Value::Null;
        assert_eq!(
            fma_line(&lat, &loop_result(0, true)).unwrap_err(),
            "`derived.cycles_per_unit` is null, not a number"
        );
    }

    /// Zen 2's figures (Agner Fog's instruction tables), as pmu-demo derives them, print with three decimals.
    #[test]
    fn fma_line_prints_both_figures() {
        let lat = json!({"derived": {"cycles_per_unit": 5.0}});
        let thr = json!({"derived": {"units_per_cycle": 2.0}});
        assert_eq!(
            fma_line(&lat, &thr).unwrap(),
            "FMA (vfmadd231ps ymm): latency 5.000 cycles per FMA, throughput 2.000 FMAs per cycle (Zen 2 per Agner Fog's instruction tables: 5 and 2)"
        );
    }
}
