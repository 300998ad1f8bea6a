//! A [`criterion`] measurement backed by [`pmu_linux::Meter`]: instructions or cycles
//! per iteration, read with one instruction at each end of a batch where the machine
//! allows it, instead of wall-clock time.
//!
//! ```no_run
//! use criterion::Criterion;
//! use pmu_criterion::PmuMeasurement;
//!
//! # fn work() -> u64 { 0 }
//! let instructions = PmuMeasurement::instructions().expect("a meter");
//! eprintln!("{}", instructions.describe());
//! let mut c = Criterion::default()
//!     .with_measurement(instructions.clone())
//!     .configure_from_args();
//! c.bench_function("work", |b| {
//!     b.iter_custom(|iters| instructions.iter_clean(iters, || work()))
//! });
//! c.final_summary();
//! eprintln!("{}", instructions.report());
//! ```
//!
//! - **Hazards dropped and counted.** [`PmuMeasurement::iter_clean`] (for
//!   `Bencher::iter_custom`) measures a batch again when its region had a hazard (a
//!   context switch, a migration, an overflow, a `read()` fallback: [`Hazards`]), up to
//!   [`RETRIES`] times, and counts every batch it dropped ([`PmuMeasurement::report`]).
//!   Criterion's own `Bencher::iter` goes through [`criterion::measurement::Measurement`]'s
//!   `start`/`end`, which cannot measure again: there a batch with hazards is kept, and
//!   counted as kept.
//! - **Honest fallback.** Where the machine has no hardware counters (a VM without
//!   vPMU), the meter's software backend counts no hardware event: the measurement then
//!   counts time-stamp-counter ticks ([`pmu_linux::machine`]) and says so in its unit
//!   (`ticks`) and in [`PmuMeasurement::describe`]; it never reports ticks as
//!   instructions.
//! - Criterion fits a line through batches of growing size, so the fixed cost of the two
//!   reads around each batch drops out of the per-iteration estimate.
//!
//! [`Bench`] is a harness over the measurement: criterion's sampling where counts vary,
//! and where they are exact (pmu-qemu's guest) **one-shot exact mode**: each benchmark
//! counted once after one warm-up call and checked by a second count, with baselines,
//! limits, a failing exit status on a regression and a JSON summary ([`gate`]).

mod bench;
pub mod gate;

pub use bench::{choose_mode, parse_args, Args, Bench, BenchError, Mode, EXACT_ENV, MODE_ENV};

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::Throughput;
use pmu_linux::{BackendKind, Error, Event, EventHandle, GenericEvent, Hazards, Meter, Region};

/// How many times [`PmuMeasurement::iter_clean`] measures a batch before it keeps one
/// with hazards (and counts it as kept).
pub const RETRIES: u32 = 10;

/// A criterion measurement that counts one event per batch. Cheap to clone: the clones
/// share the meter and the counts of dropped batches (keep one to call
/// [`PmuMeasurement::iter_clean`] and [`PmuMeasurement::report`] with, and give one to
/// criterion).
#[derive(Clone)]
pub struct PmuMeasurement {
    shared: Rc<Shared>,
}

struct Shared {
    meter: RefCell<Meter>,
    handle: EventHandle,
    /// What is counted (`instructions`, `cycles`, `tsc`, …).
    counted: String,
    /// Why a time-stamp counter stands in for the event asked for.
    fallback: Option<String>,
    formatter: Units,
    dropped: Cell<u64>,
    kept_with_hazards: Cell<u64>,
    hazards_seen: Cell<Hazards>,
}

impl PmuMeasurement {
    /// Retired instructions per iteration.
    ///
    /// # Errors
    /// As [`PmuMeasurement::new`].
    pub fn instructions() -> Result<Self, Error> {
        Self::new(GenericEvent::Instructions)
    }

    /// CPU cycles per iteration.
    ///
    /// # Errors
    /// As [`PmuMeasurement::new`].
    pub fn cycles() -> Result<Self, Error> {
        Self::new(GenericEvent::CpuCycles)
    }

    /// `event` per iteration, on the meter's best backend; the time-stamp counter where
    /// that backend does not count `event` (no hardware counters).
    ///
    /// # Errors
    /// The meter's build errors ([`pmu_linux::MeterBuilder::build`]).
    pub fn new(event: impl Into<Event>) -> Result<Self, Error> {
        let event = event.into();
        let mut builder = Meter::builder();
        let asked = builder.add(event.clone());
        // No kernel-entry sentinel: criterion's batches run for milliseconds, so nearly
        // every one takes a timer interrupt, which the sentinel flags (KERNEL_ENTRY) and
        // no retry avoids (the arm64 guest: 18 of 202 batches kept after RETRIES). A
        // meter with one can still be passed to `from_meter`.
        builder.kernel_sentinel(false);
        Self::from_meter(builder.build()?, asked, &event.name())
    }

    /// A measurement over a meter built elsewhere, counting `handle`'s event (`name`).
    ///
    /// # Errors
    /// [`pmu_linux::error::Untrusted::NotCounted`] where the meter counts neither the
    /// event nor the time-stamp counter.
    ///
    /// # Panics
    /// For a handle of another meter.
    pub fn from_meter(meter: Meter, handle: EventHandle, name: &str) -> Result<Self, Error> {
        let counted = meter
            .events()
            .find(|(h, _, _)| *h == handle)
            .expect("an event handle of another meter")
            .2;
        let (handle, counted, fallback) = if counted {
            (handle, name.to_owned(), None)
        } else {
            let stand_in = pmu_linux::machine::NAME;
            let tsc = meter.handle_of(stand_in).ok_or_else(|| {
                Error::Untrusted(pmu_linux::error::Untrusted::NotCounted {
                    event: name.to_owned(),
                    backend: meter.backend().to_string(),
                    why: meter.why().to_owned(),
                })
            })?;
            (
                tsc,
                stand_in.to_owned(),
                Some(format!(
                    "`{name}` is not counted here ({} backend: {}): counting time-stamp \
                     counter ticks instead",
                    meter.backend(),
                    meter.why()
                )),
            )
        };
        let formatter = Units::for_event(&counted, fallback.is_some());
        Ok(Self {
            shared: Rc::new(Shared {
                meter: RefCell::new(meter),
                handle,
                counted,
                fallback,
                formatter,
                dropped: Cell::new(0),
                kept_with_hazards: Cell::new(0),
                hazards_seen: Cell::new(Hazards::empty()),
            }),
        })
    }

    /// What is counted, on which backend and why; the fallback's reason where the
    /// time-stamp counter stands in.
    pub fn describe(&self) -> String {
        let s = &self.shared;
        let meter = s.meter.borrow();
        match &s.fallback {
            Some(why) => format!("pmu-criterion: {why}"),
            None => format!(
                "pmu-criterion: counting {} on the {} backend ({})",
                s.counted,
                meter.backend(),
                meter.why()
            ),
        }
    }

    /// The backend the meter uses.
    pub fn backend(&self) -> BackendKind {
        self.shared.meter.borrow().backend()
    }

    /// Whether the time-stamp counter stands in for the event asked for.
    pub fn is_fallback(&self) -> bool {
        self.shared.fallback.is_some()
    }

    /// Batches measured again because their region had hazards.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.get()
    }

    /// Batches kept although their region had hazards (criterion's `iter`, or
    /// [`RETRIES`] hazardous regions in a row).
    pub fn kept_with_hazards(&self) -> u64 {
        self.shared.kept_with_hazards.get()
    }

    /// One line on the dropped and kept batches and the hazards seen.
    pub fn report(&self) -> String {
        format!(
            "pmu-criterion: {} batches dropped for hazards and measured again, {} kept with \
             hazards; hazards seen: {}",
            self.dropped(),
            self.kept_with_hazards(),
            self.shared.hazards_seen.get()
        )
    }

    /// Measures `iters` calls of `routine` as one region, again when the region had a
    /// hazard (up to [`RETRIES`] times): for `Bencher::iter_custom`.
    ///
    /// # Panics
    /// When the meter cannot read (its backend failed: the direct backend's grant
    /// revoked, a perf group that lost its counters): criterion has no way to take an
    /// error, and a number that was not read is never returned.
    pub fn iter_clean<O>(&self, iters: u64, mut routine: impl FnMut() -> O) -> u64 {
        let s = &self.shared;
        let mut last = 0;
        for _ in 0..RETRIES {
            let reading = self
                .region(iters, &mut routine)
                .unwrap_or_else(|e| panic!("pmu-criterion: {e}"));
            if reading.hazards.is_empty() {
                return reading.value;
            }
            s.hazards_seen.set(s.hazards_seen.get() | reading.hazards);
            s.dropped.set(s.dropped.get() + 1);
            last = reading.value;
        }
        // Every try had hazards: keep the last, and say so in the report.
        s.dropped.set(s.dropped.get() - 1);
        s.kept_with_hazards.set(s.kept_with_hazards.get() + 1);
        last
    }

    /// The count of `calls` calls of `routine` in a region without hazards, measured
    /// again (up to [`RETRIES`] times) when a region had one: one-shot exact mode's read
    /// ([`Bench`]). Never a count from a region with hazards.
    ///
    /// # Errors
    /// The meter's, or [`RETRIES`] regions in a row with hazards.
    pub fn count_clean<O>(
        &self,
        calls: u64,
        mut routine: impl FnMut() -> O,
    ) -> Result<u64, String> {
        let s = &self.shared;
        let mut seen = Hazards::empty();
        for _ in 0..RETRIES {
            let reading = self
                .region(calls, &mut routine)
                .map_err(|e| e.to_string())?;
            if reading.hazards.is_empty() {
                return Ok(reading.value);
            }
            seen |= reading.hazards;
            s.hazards_seen.set(s.hazards_seen.get() | reading.hazards);
            s.dropped.set(s.dropped.get() + 1);
        }
        Err(format!(
            "{RETRIES} regions in a row had hazards ({seen}): no clean count"
        ))
    }

    /// One region around `iters` calls of `routine`. Not inlined, so that one-shot
    /// mode's regions of 0 and 1 calls run the same instructions around the calls: their
    /// difference is one call's count, plus what the compiler hoisted out of the loop
    /// (run once where there is a call; criterion's slope over batches leaves it out).
    #[inline(never)]
    fn region<O>(
        &self,
        iters: u64,
        routine: &mut impl FnMut() -> O,
    ) -> Result<pmu_linux::Reading, String> {
        let s = &self.shared;
        let mut meter = s.meter.borrow_mut();
        let region = meter
            .start()
            .map_err(|e| format!("the meter cannot start a region: {e}"))?;
        for _ in 0..iters {
            std::hint::black_box(routine());
        }
        let counts = meter
            .stop(region)
            .map_err(|e| format!("the meter cannot read: {e}"))?;
        counts.reading(s.handle).map_err(|e| e.to_string())
    }
}

impl Measurement for PmuMeasurement {
    type Intermediate = Region;
    type Value = u64;

    /// # Panics
    /// As [`PmuMeasurement::iter_clean`].
    fn start(&self) -> Region {
        self.shared
            .meter
            .borrow_mut()
            .start()
            .unwrap_or_else(|e| panic!("pmu-criterion: the meter cannot start a region: {e}"))
    }

    /// # Panics
    /// As [`PmuMeasurement::iter_clean`].
    fn end(&self, region: Region) -> u64 {
        let s = &self.shared;
        let mut meter = s.meter.borrow_mut();
        let counts = meter
            .stop(region)
            .unwrap_or_else(|e| panic!("pmu-criterion: the meter cannot read: {e}"));
        let reading = counts
            .reading(s.handle)
            .unwrap_or_else(|e| panic!("pmu-criterion: {e}"));
        if !reading.hazards.is_empty() {
            s.hazards_seen.set(s.hazards_seen.get() | reading.hazards);
            s.kept_with_hazards.set(s.kept_with_hazards.get() + 1);
        }
        reading.value
    }

    fn add(&self, v1: &u64, v2: &u64) -> u64 {
        v1.saturating_add(*v2)
    }

    fn zero(&self) -> u64 {
        0
    }

    fn to_f64(&self, value: &u64) -> f64 {
        *value as f64
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        &self.shared.formatter
    }
}

/// The units of a count: the event's name, never scaled (a count is a count).
struct Units {
    unit: &'static str,
    bytes: &'static str,
    elements: &'static str,
}

impl Units {
    fn for_event(name: &str, fallback: bool) -> Self {
        let (unit, bytes, elements) = match name {
            _ if fallback => ("ticks", "B/tick", "elem/tick"),
            "instructions" => ("instructions", "B/instruction", "elem/instruction"),
            "cycles" | "cpu-cycles" => ("cycles", "B/cycle", "elem/cycle"),
            _ => ("events", "B/event", "elem/event"),
        };
        Self {
            unit,
            bytes,
            elements,
        }
    }
}

impl ValueFormatter for Units {
    fn scale_values(&self, _typical: f64, _values: &mut [f64]) -> &'static str {
        self.unit
    }

    fn scale_throughputs(
        &self,
        _typical: f64,
        throughput: &Throughput,
        values: &mut [f64],
    ) -> &'static str {
        let (per_iteration, unit) = match *throughput {
            Throughput::Bytes(n) | Throughput::BytesDecimal(n) => (n, self.bytes),
            Throughput::Elements(n) => (n, self.elements),
        };
        for v in values.iter_mut() {
            // Values are never NaN (criterion's contract); a zero count gives infinity,
            // which is what n units in 0 events is.
            *v = per_iteration as f64 / *v;
        }
        unit
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        self.unit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On this machine: where the meter's backend counts instructions, the
    /// measurement counts them; where it does not (a VM without vPMU: the software
    /// backend), the time-stamp counter stands in, and the unit and the description say
    /// so. Either way a batch of 10 000 iterations counts something, clean or dropped.
    #[test]
    fn counts_instructions_or_says_what_stands_in() {
        let m = PmuMeasurement::instructions().unwrap();
        let software = m.backend() == BackendKind::Software;
        assert_eq!(m.is_fallback(), software);
        let unit = m.formatter().scale_values(1.0, &mut []);
        if software {
            assert_eq!(unit, "ticks");
            assert!(m.describe().contains("`instructions` is not counted here"));
        } else {
            assert_eq!(unit, "instructions");
        }
        let value = m.iter_clean(10_000, || std::hint::black_box(1u64) + 1);
        assert!(value > 0);
        assert!(m.report().contains("batches dropped"));
        // Criterion's own path: start/end.
        let region = m.start();
        std::hint::black_box((0..1000u64).sum::<u64>());
        assert!(m.end(region) > 0);
        assert_eq!(m.add(&2, &3), 5);
        assert_eq!(m.to_f64(&7), 7.0);
    }

    /// Throughput is the units per counted event: 64 bytes in 16 instructions is 4
    /// bytes per instruction.
    #[test]
    fn throughput_per_event() {
        let units = Units::for_event("instructions", false);
        let mut values = [16.0];
        assert_eq!(
            units.scale_throughputs(16.0, &Throughput::Bytes(64), &mut values),
            "B/instruction"
        );
        assert_eq!(values, [4.0]);
        let mut values = [8.0];
        assert_eq!(
            Units::for_event("instructions", true).scale_throughputs(
                8.0,
                &Throughput::Elements(2),
                &mut values
            ),
            "elem/tick"
        );
        assert_eq!(values, [0.25]);
    }
}
