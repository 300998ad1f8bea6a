//! Counts instructions on every core PMU of a heterogeneous machine (big.LITTLE) and
//! prints what it saw as `RESULT hybrid-<what> key=value …` lines, which the arm64
//! guest test (tests/tests/kernel_arm64.rs, `hybrid_*`) asserts on:
//!
//! - `hybrid-pmus`: the core PMUs and their CPUs ([`pmu_linux::perf::CoreTopology`]);
//! - `hybrid-open`: each PMU's `perf_event_attr` type and config;
//! - `hybrid-pinned` (one per PMU): the thread pinned to the PMU's first CPU, the
//!   calibrated count of `n` iterations of a two-instruction loop (`--units`, 1000 by
//!   default) and the split of one region between the PMUs;
//! - `hybrid-migrate` (per direction and run): a region that runs the loop on one
//!   cluster, moves the thread to the other (`sched_setaffinity`) and runs it again:
//!   its sum and split minus those of the same region with empty loops (the loop's
//!   instructions exactly), with the hazards;
//! - `hybrid-lost` (one per PMU): a new meter while a pinned group of the thread
//!   holds every counter of the last PMU: its group there cannot be scheduled;
//! - `hybrid-plain` (one per PMU): a plain `instructions` (no PMU type in it) on the
//!   PMU's first CPU, for comparison.
//!
//! `--tag NAME` names the lines `RESULT NAME-<what>`; `--only-pinned` stops after the
//! pinned regions.
//!
//! Run: `pmu-guest hybrid` (needs `kernel.perf_user_access=1`
//! on arm64 for the one-instruction reads; without it every region uses `read()`).

use std::process::ExitCode;

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn main(argv: &[String]) -> ExitCode {
    let arg = |name: &str| argv.iter().skip_while(|a| *a != name).nth(1).cloned();
    let units = arg("--units").and_then(|v| v.parse().ok()).unwrap_or(1000);
    let tag = arg("--tag").unwrap_or_else(|| "hybrid".to_owned());
    let only_pinned = argv.iter().any(|a| a == "--only-pinned");
    if let Err(e) = run::all(units, &tag, only_pinned) {
        crate::result!("{tag}-error message={}", e.to_string().replace(' ', "_"));
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn main(_: &[String]) -> ExitCode {
    eprintln!("hybrid: the perf backend exists on x86_64 and aarch64 only");
    ExitCode::FAILURE
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod run {
    use pmu_core::{Hazards, Reading, RegionMeter};
    use pmu_linux::measure::measure_with_baseline;
    use pmu_linux::measure::MeasureConfig;
    use pmu_linux::perf::{CoreTopology, HybridSession};
    use pmu_linux::perf::{Options, Session};
    use pmu_linux::{machine, Result};

    /// `n` iterations of a two-instruction loop, nothing at all for 0.
    #[inline(never)]
    fn spin(n: u64) {
        #[cfg(target_arch = "aarch64")]
        // SAFETY: register arithmetic and branches only.
        unsafe {
            std::arch::asm!(
                "cbz {n}, 3f",
                "2:",
                "subs {n}, {n}, #1",
                "b.ne 2b",
                "3:",
                n = inout(reg) n => _,
                options(nomem, nostack),
            );
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: register arithmetic and branches only.
        unsafe {
            std::arch::asm!(
                "test {n}, {n}",
                "jz 3f",
                "2:",
                "dec {n}",
                "jnz 2b",
                "3:",
                n = inout(reg) n => _,
                options(nomem, nostack),
            );
        }
    }

    fn looped(n: u64) -> impl FnMut() {
        move || spin(std::hint::black_box(n))
    }

    fn hazard_names(h: Hazards) -> String {
        let names: Vec<&str> = h.iter_names().map(|(name, _)| name).collect();
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join("|")
        }
    }

    /// One region: `n` iterations on this CPU, a move to `to`, `n` iterations there.
    #[inline(never)]
    fn migrating(meter: &mut HybridSession, n: u64, to: usize) -> Result<(Reading, Vec<u64>)> {
        let mut out = [Reading::default(); 1];
        meter.start()?;
        spin(std::hint::black_box(n));
        machine::set_allowed_cpus(&[to])?;
        spin(std::hint::black_box(n));
        meter.stop(&mut out)?;
        let split = meter.split(0).iter().map(|s| s.count).collect();
        Ok((out[0], split))
    }

    /// How each PMU's event was read at the last region's edges: `start>stop` per PMU.
    fn reads(meter: &HybridSession) -> String {
        meter
            .split(0)
            .iter()
            .map(|s| format!("{}>{}", s.start, s.stop))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// One region of `n` iterations on this CPU: the reading and the split.
    fn once(meter: &mut HybridSession, n: u64) -> Result<(Reading, Vec<u64>)> {
        let mut out = [Reading::default(); 1];
        meter.start()?;
        spin(std::hint::black_box(n));
        meter.stop(&mut out)?;
        Ok((out[0], meter.split(0).iter().map(|s| s.count).collect()))
    }

    fn list(values: &[u64]) -> String {
        values
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn all(units: u64, tag: &str, only_pinned: bool) -> Result<()> {
        let topology = CoreTopology::discover()?;
        let pmus = topology.pmus();
        crate::result!(
            "{tag}-pmus count={} names={} cpus={} types={} heterogeneous={}",
            pmus.len(),
            pmus.iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(","),
            pmus.iter()
                .map(|p| format!("{}-{}", p.cpus[0], p.cpus[p.cpus.len() - 1]))
                .collect::<Vec<_>>()
                .join(","),
            pmus.iter()
                .map(|p| p.perf_type.to_string())
                .collect::<Vec<_>>()
                .join(","),
            u8::from(topology.is_heterogeneous())
        );
        let mut meter = HybridSession::open(&["instructions"], Options::default())?;
        crate::result!(
            "{tag}-open groups={} page_reads={} uncovered={} types={} configs={}",
            meter.groups().len(),
            u8::from(meter.page_reads()),
            meter.uncovered().len(),
            meter
                .groups()
                .iter()
                .flat_map(|g| g.specs().map(|s| s.perf_type.to_string()))
                .collect::<Vec<_>>()
                .join(","),
            meter
                .groups()
                .iter()
                .flat_map(|g| g.specs().map(|s| format!("{:#x}", s.config[0])))
                .collect::<Vec<_>>()
                .join(",")
        );
        meter.enable()?;
        let config = MeasureConfig {
            warmup: 2,
            runs: 5,
            calibrate: true,
        };
        let home = machine::allowed_cpus()?;
        for (p, pmu) in pmus.iter().enumerate() {
            let cpu = pmu.cpus[0] as usize;
            let pin = machine::pin_to(cpu)?;
            let m = measure_with_baseline(&mut meter, &config, &mut looped(units), &mut looped(0))?;
            let event = &m.events[0];
            let corrected = event.corrected.as_ref();
            let (full, full_split) = once(&mut meter, units)?;
            let full_reads = reads(&meter);
            let (empty, empty_split) = once(&mut meter, 0)?;
            let own = full_split[p].wrapping_sub(empty_split[p]);
            let others: u64 = full_split
                .iter()
                .chain(&empty_split)
                .enumerate()
                .filter(|&(i, _)| i % pmus.len() != p)
                .map(|(_, v)| v)
                .sum();
            crate::result!(
                "{tag}-pinned cpu={cpu} pmu={} min={} median={} clean={} runs={} hazards={} own={own} others={others} region_hazards={} split={} reads={full_reads} tolerated_min={} raw={}",
                pmu.name,
                corrected.and_then(|c| c.min).map_or(-1, |v| v),
                corrected.and_then(|c| c.median).map_or(-1, |v| v),
                event.summary.clean,
                event.summary.runs,
                hazard_names(event.summary.hazards),
                hazard_names(full.hazards | empty.hazards),
                list(&full_split),
                m.tolerating(0, Hazards::SYSCALL_FALLBACK).min.map_or(-1, |v| v),
                list(&m.runs.iter().map(|r| r.readings[0].value).collect::<Vec<_>>()),
            );
            drop(pin);
        }
        if only_pinned {
            return meter.disable();
        }
        if pmus.len() >= 2 {
            let (first, last) = (&pmus[0], &pmus[pmus.len() - 1]);
            for (from, to) in [
                (first.cpus[0] as usize, last.cpus[0] as usize),
                (last.cpus[0] as usize, first.cpus[0] as usize),
            ] {
                for run in 0..3 {
                    // Not `pin_to`: the region itself changes the allowed CPUs.
                    machine::set_allowed_cpus(&[from])?;
                    let (full, full_split) = migrating(&mut meter, units, to)?;
                    let full_reads = reads(&meter);
                    machine::set_allowed_cpus(&[from])?;
                    let (empty, empty_split) = migrating(&mut meter, 0, to)?;
                    machine::set_allowed_cpus(&home)?;
                    let loops: Vec<u64> = full_split
                        .iter()
                        .zip(&empty_split)
                        .map(|(f, e)| f.wrapping_sub(*e))
                        .collect();
                    crate::result!(
                        "{tag}-migrate from={from} to={to} run={run} sum={} empty={} loops={} split={} loop_split={} hazards={} empty_hazards={} reads={full_reads}",
                        full.value,
                        empty.value,
                        full.value.wrapping_sub(empty.value),
                        list(&full_split),
                        list(&loops),
                        hazard_names(full.hazards),
                        hazard_names(empty.hazards),
                    );
                }
            }
        }
        meter.disable()?;
        // The last PMU's counters all taken by a pinned group of this thread opened
        // before (six event counters and the cycle counter of QEMU's PMUv3): a new
        // meter's group there cannot be scheduled, which must show as a hazard.
        if let (true, Some(last)) = (pmus.len() >= 2, pmus.last()) {
            let hog_names: Vec<String> = (0..6)
                .map(|_| format!("{}/event=0x8/", last.name))
                .chain([format!("{}/event=0x11/", last.name)])
                .collect();
            let hog_refs: Vec<&str> = hog_names.iter().map(String::as_str).collect();
            let hog = Session::open(&hog_refs, Options::default())?;
            hog.enable()?;
            let mut fresh = HybridSession::open(&["instructions"], Options::default())?;
            fresh.enable()?;
            for pmu in pmus {
                let cpu = pmu.cpus[0] as usize;
                let _pin = machine::pin_to(cpu)?;
                let m =
                    measure_with_baseline(&mut fresh, &config, &mut looped(units), &mut looped(0))?;
                let event = &m.events[0];
                let (one, _) = once(&mut fresh, units)?;
                crate::result!(
                    "{tag}-lost cpu={cpu} pmu={} clean={} runs={} min={} hazards={} value={} region_hazards={} reads={}",
                    pmu.name,
                    event.summary.clean,
                    event.summary.runs,
                    event.corrected.as_ref().and_then(|c| c.min).map_or(-1, |v| v),
                    hazard_names(event.summary.hazards),
                    one.value,
                    hazard_names(one.hazards),
                    reads(&fresh),
                );
            }
            fresh.disable()?;
            hog.disable()?;
        }
        // A plain `instructions` (no PMU type in it) goes to one PMU only, the kernel's
        // choice: on each PMU's first CPU, what a tool that ignores the topology sees.
        for pmu in pmus {
            let cpu = pmu.cpus[0] as usize;
            let _pin = machine::pin_to(cpu)?;
            let mut plain = Session::open(&["instructions"], Options::default())?;
            plain.enable()?;
            let m = measure_with_baseline(&mut plain, &config, &mut looped(units), &mut looped(0))?;
            let strict = &m.events[0];
            let tolerant = m.tolerating(0, Hazards::all());
            let raw: Vec<u64> = m.runs.iter().map(|r| r.readings[0].value).collect();
            crate::result!(
                "{tag}-plain cpu={cpu} pmu={} clean={} runs={} hazards={} tolerated_min={} raw={}",
                pmu.name,
                strict.summary.clean,
                strict.summary.runs,
                hazard_names(strict.summary.hazards),
                tolerant.min.map_or(-1, |v| v),
                list(&raw),
            );
        }
        machine::set_allowed_cpus(&home)?;
        Ok(())
    }
}
