//! Scaling a multiplexed count read through the perf page, with current times.
//!
//! `pmu-guest multiplex-now [events] [iterations]`
//!
//! Opens one pinned `instructions` event (the reference: always on a counter) and
//! `events` more `instructions` events (default 12), each its own unpinned group, so
//! that there are more events than counters and the kernel rotates them
//! (kernel/events/core.c `perf_rotate_context`, every `perf_event_mux_interval_ms`).
//! After a busy loop it reads the reference and then every rotated event that is on a
//! counter at that moment, through its page, twice:
//!
//! - `now`: [`pmu_linux::perf::read_now`], times brought up to the read with the page's
//!   clock conversion (`cap_user_time`), as libperf's `perf_mmap__read_self` does;
//! - `page`: [`pmu_linux::perf::read`], the page times as of the event's last reschedule.
//!
//! and prints each estimate `value * enabled / running` against the reference count,
//! in parts per million. One line per event:
//!
//! ```text
//! event=3 on_counter=1 value=… enabled=… running=… times_now=1 estimate=… page_estimate=… reference=… error_ppm=… page_error_ppm=…
//! ```
//!
//! and `event=N on_counter=0` for an event that is rotated out at the read (its
//! page has `index` 0). The arm64 guest test (tests/tests/kernel_arm64.rs, `multiplex`)
//! checks the `now` estimates against the reference.

use std::process::ExitCode;

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn main(argv: &[String]) -> ExitCode {
    if let Err(e) = run(argv) {
        eprintln!("multiplex-now: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn run(argv: &[String]) -> Result<(), String> {
    use pmu_linux::perf;
    use pmu_linux::perf::{Options, Session};

    let mut args = argv.iter().skip(1).cloned();
    let parse = |arg: Option<String>, default: u64, what: &str| -> Result<u64, String> {
        arg.map_or(Ok(default), |a| {
            a.parse()
                .map_err(|_| format!("{what} must be a number, got {a:?}"))
        })
    };
    let events = parse(args.next(), 12, "events")?;
    let iterations = parse(args.next(), 20_000_000, "iterations")?;
    if !(1..=pmu_linux::Meter::MAX_EVENTS as u64).contains(&events) {
        return Err(format!(
            "events must be 1..={}, got {events}",
            pmu_linux::Meter::MAX_EVENTS
        ));
    }

    let reference = Session::open(&["instructions"], Options::default())
        .map_err(|e| format!("opening the reference event: {e}"))?;
    let names = vec!["instructions"; events as usize];
    let rotated = Session::open(&names, Options::default().grouped(false).pinned(false))
        .map_err(|e| format!("opening {events} rotated events: {e}"))?;
    reference.enable().map_err(|e| e.to_string())?;
    rotated.enable().map_err(|e| e.to_string())?;

    let mut x = 0u64;
    for i in 0..iterations {
        x = std::hint::black_box(x.wrapping_add(i));
    }

    for i in 0..rotated.len() {
        let page = rotated
            .page(i)
            .ok_or("the rotated events have no metadata page")?;
        let reference = perf::read(reference.page(0).ok_or("no reference page")?)
            .map_err(|e| format!("reading the pinned reference: {e}"))?
            .value;
        let (now, stale) = match (perf::read_now(page), perf::read(page)) {
            (Ok(now), Ok(stale)) => (now, stale),
            _ => {
                println!("event={i} on_counter=0");
                continue;
            }
        };
        let estimate = |value: u64, enabled: u64, running: u64| -> Option<u64> {
            (running != 0)
                .then(|| (u128::from(value) * u128::from(enabled) / u128::from(running)) as u64)
        };
        let ppm = |estimate: Option<u64>| -> String {
            estimate.map_or("none".to_string(), |e| {
                let error = (i128::from(e) - i128::from(reference)) * 1_000_000
                    / i128::from(reference.max(1));
                error.to_string()
            })
        };
        let now_estimate = estimate(now.value, now.time_enabled, now.time_running);
        let stale_estimate = estimate(stale.value, stale.time_enabled, stale.time_running);
        println!(
            "event={i} on_counter=1 value={} enabled={} running={} times_now={} estimate={} page_estimate={} reference={reference} error_ppm={} page_error_ppm={}",
            now.value,
            now.time_enabled,
            now.time_running,
            u8::from(now.times_now),
            now_estimate.map_or("none".into(), |e| e.to_string()),
            stale_estimate.map_or("none".into(), |e| e.to_string()),
            ppm(now_estimate),
            ppm(stale_estimate),
        );
    }
    std::hint::black_box(x);
    Ok(())
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn main(_: &[String]) -> ExitCode {
    eprintln!("multiplex-now: the perf backend exists on x86_64 and aarch64 only");
    ExitCode::FAILURE
}
