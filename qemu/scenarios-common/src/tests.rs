//! The shared scenarios on `pmu_core`'s fake PMU, whose counters advance only when a
//! test says so: blocks that tick it by K play the blocks of K instructions. The
//! expected lines follow from the ticks each test makes.

use std::boxed::Box;
use std::cell::{Cell, RefCell};
use std::string::String;

use pmu_core::fake::{FakeEvent, FakePmu};
use pmu_core::{CounterPool, CounterWidth, Slot};

use crate::console::{self, Console};
use crate::counting::exact_over;
use crate::{finish, overflow, Arch, Tally};

std::thread_local! {
    static OUT: RefCell<String> = const { RefCell::new(String::new()) };
    static FAKE: Cell<Option<&'static FakePmu>> = const { Cell::new(None) };
}

fn capture(b: u8) {
    OUT.with(|o| o.borrow_mut().push(char::from(b)));
}

static CAPTURE: Console = Console {
    write_byte: capture,
    crlf: false,
};

/// What this thread printed since the last call.
fn printed() -> String {
    OUT.with(|o| core::mem::take(&mut *o.borrow_mut()))
}

enum TestArch {}

impl Arch for TestArch {
    const EVENT_COUNTER_BITS: Option<u32> = Some(32);

    fn slot_name(slot: Slot) -> &'static str {
        match slot {
            Slot::Fixed(0) => "CYCLES",
            Slot::Programmable(0) => "EVENT0",
            _ => "other",
        }
    }

    fn exit(code: u32) -> ! {
        std::panic::panic_any(code)
    }

    fn command_line(_: &mut [u8]) -> Option<&str> {
        None
    }

    fn undefined_instruction() {
        unreachable!("no self-test here")
    }
}

/// A fake PMU with 4 event counters of 32 bits, counting instructions and cycles, that
/// the blocks below tick; every read costs `read_cost` of each.
fn fake_pool(read_cost: u64) -> CounterPool<&'static FakePmu> {
    console::set(&CAPTURE);
    let _ = printed();
    let pmu = FakePmu::new(
        4,
        CounterWidth::W32,
        &[FakeEvent::INSTRUCTIONS, FakeEvent::CYCLES],
    )
    .expect("4 counters fit");
    pmu.set_read_cost(read_cost);
    let pmu: &'static FakePmu = Box::leak(Box::new(pmu));
    FAKE.with(|f| f.set(Some(pmu)));
    CounterPool::new(pmu)
}

/// K instructions in K cycles, on this thread's fake PMU.
fn ticks<const K: u64>() {
    if let Some(pmu) = FAKE.with(Cell::get) {
        pmu.tick(FakeEvent::INSTRUCTIONS, K);
        pmu.tick(FakeEvent::CYCLES, K);
    }
}

#[test]
fn tally_counts_passes_and_failures() {
    let mut t = Tally::default();
    assert_eq!(t.check(true), 1);
    assert_eq!(t.check(false), 0);
    assert_eq!(t.check(true), 1);
    assert_eq!(t.counts(), (2, 1));
}

#[test]
fn exact_reports_k_for_blocks_of_k() {
    let pool = fake_pool(3);
    let mut t = Tally::default();
    exact_over::<TestArch, _>(
        &pool,
        &mut t,
        &[(1, ticks::<1>), (100, ticks::<100>)],
        ticks::<0>,
    );
    let out = printed();
    let lines: std::vec::Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    for (line, k) in lines.iter().zip([1, 100]) {
        assert!(
            line.starts_with(&std::format!(
                "RESULT exact k={k} inst={k} inst_median={k} cycles={k} cycles_median={k} clean=11/11 hazards=none overhead_inst="
            )),
            "{line}"
        );
        assert!(
            line.ends_with(" inst_slot=EVENT0 cycle_slot=CYCLES pass=1"),
            "{line}"
        );
    }
    assert_eq!(t.counts(), (2, 0));
}

#[test]
fn exact_fails_a_block_that_counts_one_short() {
    let pool = fake_pool(3);
    let mut t = Tally::default();
    exact_over::<TestArch, _>(&pool, &mut t, &[(10, ticks::<9>)], ticks::<0>);
    let out = printed();
    assert!(
        out.starts_with("RESULT exact k=10 inst=9 inst_median=9 "),
        "{out}"
    );
    assert!(out.ends_with(" pass=0\n"), "{out}");
    assert_eq!(t.counts(), (0, 1));
}

/// On the host the 100-instruction block is 100 `nop`s the fake does not see: each
/// window counts only the reads (70 > `OVERFLOW_DISTANCE`, so the preset counter wraps
/// inside the window), the wrap is flagged, and the scenario fails for the missing 100.
/// `raw_end` is the preset 2^32 - 64 plus the four reads of the wrapped run and the
/// next one: (2^32 - 64 + 4 * 70) mod 2^32 = 216.
#[test]
fn overflow_flags_the_wrap_and_fails_without_the_block() {
    let pool = fake_pool(70);
    let mut t = Tally::default();
    let width = overflow::<TestArch, _>(&pool, &mut t);
    assert_eq!(width, Some(CounterWidth::W32));
    let out = printed();
    assert_eq!(
        out,
        "RESULT overflow counter=EVENT0 width=32 preset=0xffffffc0 value=70 corrected=0 hazards=overflow next_run_value=70 next_run_hazards=none empty_window=70 raw_end=0xd8 pass=0\n"
    );
    assert_eq!(t.counts(), (0, 1));
}

#[test]
fn finish_prints_the_summary_and_exits_0_only_without_failures() {
    for (counts, code, last) in [
        ((2, 0), 0, "all 2 checks passed"),
        ((2, 1), 1, "1 of 3 checks FAILED"),
    ] {
        console::set(&CAPTURE);
        let _ = printed();
        let exit = std::panic::catch_unwind(|| finish::<TestArch>(|| counts));
        let exit = exit.expect_err("finish exits").downcast::<u32>();
        assert_eq!(exit.ok().map(|c| *c), Some(code));
        let (pass, fail) = counts;
        assert_eq!(
            printed(),
            std::format!("RESULT summary pass={pass} fail={fail}\n{last}\n")
        );
    }
}
