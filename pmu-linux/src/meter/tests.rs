//! The front door on this machine: software events through perf (every Linux has
//! them), the software fallback, and the typed errors of misuse.

use pmu_core::GenericEvent;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use pmu_core::Hazards;

use super::*;

/// Software events are always read with read() (a software event is never on a
/// counter: include/linux/perf_event.h, perf_swevent_*), so their readings carry these
/// two flags by nature.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const READ_BY_SYSCALL: Hazards = Hazards::SYSCALL_FALLBACK.union(Hazards::NOT_SCHEDULED);

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn spin(iterations: u64) {
    (0..iterations).fold(0u64, |a, i| {
        std::hint::black_box(a.wrapping_mul(31).wrapping_add(i))
    });
}

/// perf's names (tools/perf/util/parse-events.c `event_symbols_hw`, aliases included)
/// become generic events, `r<hex>` raw codes, anything else is kept for the build.
#[test]
fn events_from_text() {
    assert!(matches!(
        "instructions".parse::<Event>(),
        Ok(Event::Generic(GenericEvent::Instructions))
    ));
    assert!(matches!(
        "cpu-cycles".parse::<Event>(),
        Ok(Event::Generic(GenericEvent::CpuCycles))
    ));
    assert_eq!(
        format!("{:?}", " r1b ".parse::<Event>()),
        format!("{:?}", Ok::<_, Error>(Event::Raw(0x1b)))
    );
    assert!(matches!(
        "r12xyz".parse::<Event>(),
        Err(Error::Event(crate::error::EventError::MalformedRaw { .. }))
    ));
    assert_eq!(
        format!("{:?}", "task-clock".parse::<Event>()),
        format!("{:?}", Ok::<_, Error>(Event::Named("task-clock".into())))
    );
    assert_eq!(
        format!("{:?}", "cpu/event=0x3c/".parse::<Event>()),
        format!(
            "{:?}",
            Ok::<_, Error>(Event::Named("cpu/event=0x3c/".into()))
        )
    );
    assert!(matches!(
        "".parse::<Event>(),
        Err(Error::Event(crate::error::EventError::Unknown { .. }))
    ));
    assert_eq!(Event::Raw(0x1b).name(), "r1b");
    assert_eq!(
        Event::from(GenericEvent::BranchMisses).name(),
        "branch-misses"
    );
}

/// Results go by handle, whatever the order the events were added in: around a 1 ms
/// sleep `context-switches` counts the sleep's switch (a few at most) and `task-clock`
/// the thread's time on a CPU in nanoseconds, which a system call and a switch out and
/// back cannot take under 100 ns on any machine (a swap of the two would fail one
/// bound or the other). No upper bound on the time: a loaded machine, or a VM whose
/// host steals its CPU, stretches it without limit.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[test]
fn results_by_handle() {
    let mut builder = Meter::builder();
    let switches = builder.add_named("context-switches").unwrap();
    let clock = builder.add_named("task-clock").unwrap();
    let mut meter = builder.build().unwrap();
    assert_eq!(meter.backend(), BackendKind::Perf);
    assert!(
        meter.why().starts_with("software events only"),
        "{}",
        meter.why()
    );
    let region = meter.start().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1));
    let counts = meter.stop(region).unwrap();
    let switched = counts.reading(switches).unwrap();
    assert!((1..100).contains(&switched.value), "{switched:?}");
    assert!(switched
        .hazards
        .contains(Hazards::CONTEXT_SWITCH | READ_BY_SYSCALL));
    assert!(matches!(
        counts.value(switches),
        Err(Error::Untrusted(crate::error::Untrusted::Hazardous { value, .. })) if value == switched.value
    ));
    let ns = counts.reading(clock).unwrap().value;
    assert!(ns >= 100, "task-clock {ns} ns around a sleep");
    let names: Vec<_> = meter
        .events()
        .map(|(h, n, c)| (h, n.to_owned(), c))
        .collect();
    assert_eq!(
        names,
        [
            (switches, "context-switches".to_owned(), true),
            (clock, "task-clock".to_owned(), true)
        ]
    );
}

/// `measure`: calibrated statistics of task-clock for a spin, by handle; strict
/// statistics refuse (every run is read by syscall), tolerating that gives a number.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[test]
fn measure_by_handle() {
    let mut builder = Meter::builder();
    let clock = builder.add(Event::Named("task-clock".into()));
    let mut meter = builder.build().unwrap();
    let config = MeasureConfig {
        warmup: 1,
        runs: 5,
        calibrate: true,
    };
    let (mut region, mut empty) = (|| spin(200_000), || {});
    let result = meter
        .measure_with(&config, &mut region, Some(&mut empty))
        .unwrap();
    assert_eq!(result.measurement().runs.len(), 5);
    assert!(matches!(
        result.min(clock),
        Err(Error::Untrusted(crate::error::Untrusted::NoCleanRun { runs: 5, hazards, .. })) if hazards.contains(READ_BY_SYSCALL)
    ));
    assert_eq!(result.runs_with_hazards(), 5);
    if let Ok(ns) = result.min_tolerating(clock, READ_BY_SYSCALL) {
        assert!(ns > 0, "a 200 000-iteration spin takes time: {ns} ns");
    }
}

/// The software backend, asked for: hardware events are not counted (an error that
/// says why, never a 0); `task-clock` and the time-stamp counter are added and counted.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[test]
fn software_backend_counts_no_hardware_event() {
    let mut builder = Meter::builder();
    let instructions = builder.add(GenericEvent::Instructions);
    let faults = builder.add_named("page-faults").unwrap();
    builder.backend(BackendKind::Software);
    let mut meter = builder.build().unwrap();
    assert_eq!(meter.backend(), BackendKind::Software);
    let tsc = meter.handle_of(crate::machine::timestamp::NAME).unwrap();
    let clock = meter.handle_of("task-clock").unwrap();
    let listed: Vec<_> = meter.events().map(|(_, n, c)| (n.to_owned(), c)).collect();
    assert_eq!(
        listed,
        [
            ("instructions".to_owned(), false),
            ("page-faults".to_owned(), true),
            ("task-clock".to_owned(), true),
            (crate::machine::timestamp::NAME.to_owned(), true)
        ]
    );
    let region = meter.start().unwrap();
    spin(100_000);
    let counts = meter.stop(region).unwrap();
    assert!(matches!(
        counts.reading(instructions),
        Err(Error::Untrusted(crate::error::Untrusted::NotCounted { ref event, .. })) if event == "instructions"
    ));
    assert!(counts.reading(tsc).unwrap().value > 0);
    assert!(counts.reading(clock).unwrap().value > 0);
    assert!(counts
        .reading(faults)
        .unwrap()
        .hazards
        .contains(READ_BY_SYSCALL));
    // Only a meter that programs its counters presets one: the kernel owns perf's
    // counters (and the software backend has none to program).
    assert!(matches!(
        meter.preset_before_wrap(faults, 1000),
        Err(Error::Unsupported(crate::error::Unsupported::Preset))
    ));
    assert!(matches!(
        meter.preset_before_wrap(instructions, 1000),
        Err(Error::Untrusted(crate::error::Untrusted::NotCounted { .. }))
    ));
}

/// A handle of another meter is a panic, as a key of another map is. (A stop without
/// a start does not compile: `stop` takes the `Region` that only `start` returns.)
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[test]
#[should_panic(expected = "an event handle of another meter")]
fn a_foreign_handle_panics() {
    let mut builder = Meter::builder();
    builder.add_named("task-clock").unwrap();
    let mut meter = builder.build().unwrap();
    let mut other = Meter::builder();
    let foreign = other.add_named("task-clock").unwrap();
    let region = meter.start().unwrap();
    let counts = meter.stop(region).unwrap();
    let _ = counts.reading(foreign);
}

/// No events: a group error.
#[test]
fn no_events_is_an_error() {
    assert!(matches!(
        Meter::builder().build(),
        Err(Error::Group(crate::error::GroupError::NoEvents))
    ));
}

/// A region that `measure` ended (it measures regions of its own on the same counters)
/// cannot be stopped again: a panic, as a stale key is.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[test]
#[should_panic(expected = "was ended by a measure since its start")]
fn a_region_ended_by_measure_panics() {
    let mut builder = Meter::builder();
    builder.add_named("task-clock").unwrap();
    let mut meter = builder.build().unwrap();
    let region = meter.start().unwrap();
    meter.measure(|| ()).unwrap();
    let _ = meter.stop(region);
}

/// Another meter's region: a panic.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[test]
#[should_panic(expected = "a region of another meter")]
fn a_region_of_another_meter_panics() {
    let build = || {
        let mut builder = Meter::builder();
        builder.add_named("task-clock").unwrap();
        builder.build().unwrap()
    };
    let (mut a, mut b) = (build(), build());
    let region = a.start().unwrap();
    let _ = b.start().unwrap();
    let _ = b.stop(region);
}

/// `measure_with` measures on the meter's backend by the names it counts, with a
/// baseline of the caller's or none (uncalibrated).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[test]
fn measure_with_keeps_the_backends_order() {
    let mut builder = Meter::builder();
    builder.add_named("task-clock").unwrap();
    let mut meter = builder.build().unwrap();
    assert_eq!(meter.counted(), ["task-clock"]);
    let config = MeasureConfig {
        warmup: 1,
        runs: 3,
        calibrate: true,
    };
    let measured = meter
        .measure_with(&config, &mut || spin(100_000), None)
        .unwrap();
    let m = measured.measurement();
    assert_eq!(m.runs.len(), 3);
    assert!(m.baseline.is_empty());
    assert!(m.runs[0].readings[0].value > 0);
}

/// 32-bit ARM: pmu-linux has no perf backend and no time-stamp counter reader there; the
/// meter's one backend is the ARM1176's direct one, which programs the PMU and so needs
/// `program_the_pmu` (SUNAVCR.V has no read-only form).
#[cfg(target_arch = "arm")]
#[test]
fn on_32_bit_arm_only_the_direct_backend() {
    let mut builder = Meter::builder();
    builder.add(GenericEvent::Instructions);
    assert!(matches!(
        builder.build().unwrap_err(),
        Error::Access(crate::error::AccessError::NeedsProgramming)
    ));
    builder.backend(BackendKind::Perf);
    assert!(matches!(
        builder.build().unwrap_err(),
        Error::Unsupported(crate::error::Unsupported::Perf)
    ));
    builder.backend(BackendKind::Software);
    assert!(matches!(
        builder.build().unwrap_err(),
        Error::Unsupported(crate::error::Unsupported::TimestampCounter)
    ));
}

/// A meter says whether its regions are watched by a kernel-entry sentinel: the
/// software backend has no hardware counter to count the kernel with (off, saying
/// so), and a meter built with `kernel_sentinel(false)` says it was switched off. (The
/// perf backend's sentinel counting: tests/tests/kernel_arm64.rs
/// `perf_kernel_entry_sentinel`, pmu-demo's `sentinel-meter` runs.)
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[test]
fn the_meter_says_whether_a_sentinel_watches() {
    let mut builder = Meter::builder();
    builder.add_named("page-faults").unwrap();
    builder.backend(BackendKind::Software);
    let meter = builder.build().unwrap();
    match meter.sentinel() {
        crate::sentinel::Sentinel::Off { why } => {
            assert!(why.contains("software backend"), "{why}")
        }
        other => panic!("software backend with a sentinel: {other}"),
    }
    builder.kernel_sentinel(false);
    let meter = builder.build().unwrap();
    assert_eq!(
        meter.sentinel(),
        &crate::sentinel::Sentinel::off(crate::sentinel::SWITCHED_OFF)
    );
}
