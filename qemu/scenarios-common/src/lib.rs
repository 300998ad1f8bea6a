//! What the AArch64 and AArch32 bare-metal PMU scenarios share
//! (`qemu/armv8-scenarios`, `qemu/armv7-scenarios`): the scenarios that only need
//! `pmu_core`'s [`Pmu`](pmu_core::Pmu) trait ([`exact`], [`overflow`]), the blocks of
//! exactly K instructions they measure ([`blocks`]), the [`Tally`] of checks, the
//! console behind [`print!`] and [`println!`], and the end of a run ([`finish`]:
//! self-tests, `RESULT summary`, exit status).
//!
//! An architecture crate says what differs through [`Arch`]: its counters' register
//! names, the width of its event counters, and the semihosting calls that end the run
//! and read the command line. It keeps its own boot code, exception vectors, user-mode
//! switch and the scenarios that need its registers.
//!
//! The crate builds for the host too, where its tests run the scenarios on
//! [`pmu_core::fake::FakePmu`].
#![no_std]

pub mod blocks;
pub mod console;
mod counting;

pub use counting::{exact, overflow, OVERFLOW_DISTANCE};

#[cfg(test)]
extern crate std;

use pmu_core::Slot;

/// What the shared scenarios need to know of an architecture beyond its
/// [`Pmu`](pmu_core::Pmu).
pub trait Arch {
    /// The width, in bits, that every event counter of this architecture has, which the
    /// overflow scenario checks; `None` where it depends on the PMU and its options
    /// (ARMv8.5's PMCR_EL0.LP makes them 64 bits wide).
    const EVENT_COUNTER_BITS: Option<u32>;

    /// The register behind `slot`, as the architecture's manual names it.
    fn slot_name(slot: Slot) -> &'static str;

    /// Ends the run with exit status `code` (semihosting); without semihosting (a real
    /// board) says so and waits forever.
    fn exit(code: u32) -> !;

    /// The command line the emulator passes (semihosting `SYS_GET_CMDLINE`), or `None`.
    fn command_line(buf: &mut [u8]) -> Option<&str>;

    /// Executes an instruction that is UNDEFINED where the scenarios run, to exercise
    /// the fatal-exception path (`selftest=undef`).
    fn undefined_instruction();
}

/// Passed and failed checks.
#[derive(Default)]
pub struct Tally {
    pass: u32,
    fail: u32,
}

impl Tally {
    /// Records one check; returns 1 or 0 for the RESULT line.
    pub fn check(&mut self, ok: bool) -> u8 {
        if ok {
            self.pass += 1;
        } else {
            self.fail += 1;
        }
        u8::from(ok)
    }

    /// (passed, failed) checks so far.
    pub fn counts(&self) -> (u32, u32) {
        (self.pass, self.fail)
    }
}

/// The rest of a run once the image has printed its banner and `RESULT boot`: the
/// scenarios, or the self-test `-append selftest=…` names; then `RESULT summary
/// pass=<n> fail=<m>` and the exit status, 0 only when every check passed.
pub fn finish<A: Arch>(scenarios: impl FnOnce() -> (u32, u32)) -> ! {
    let mut buf = [0u8; 256];
    let selftest = A::command_line(&mut buf).and_then(|line| {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix("selftest="))
    });
    let (pass, fail) = match selftest {
        None => scenarios(),
        Some(what) => self_test::<A>(what),
    };
    println!("RESULT summary pass={pass} fail={fail}");
    if fail == 0 {
        println!("all {pass} checks passed");
        A::exit(0)
    } else {
        println!("{fail} of {} checks FAILED", pass + fail);
        A::exit(1)
    }
}

/// `-append selftest=…`: proves that each kind of failure is visible in the output and
/// the exit status (the tests boot these too).
fn self_test<A: Arch>(what: &str) -> (u32, u32) {
    println!("self-test: {what}");
    match what {
        "panic" => panic!("self-test panic"),
        "undef" => A::undefined_instruction(),
        "fail" => println!("RESULT selftest pass=0"),
        other => println!("unknown self-test `{other}` (panic, undef, fail)"),
    }
    (0, 1)
}

#[cfg(test)]
mod tests;
