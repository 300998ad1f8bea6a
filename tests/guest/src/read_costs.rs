//! `pmu-guest read-costs`: what each read path costs in user-space
//! instructions, for `cargo xtask bench` in the arm64 QEMU guest (`-icount`, where
//! INST_RETIRED is exact and every run is repeatable).
//!
//! Method: a second, independent INST_RETIRED counter (the *measuring* counter: a perf
//! event of its own group read through its page, or a direct counter) is read around
//! N and 2N repetitions of the path under test, and around N and 2N repetitions of an
//! empty loop, each loop run 5 times and its fewest instructions kept. Instructions per
//! operation = ((c(2N) − c(N)) − (e(2N) − e(N))) / N: the fixed cost of the two
//! measuring reads and the loop's own instructions cancel.
//!
//! Accuracy: a block of exactly K `nop`s (K = 1 … 10000) measured by each path with
//! the library's calibrated measurement (region minus empty region); the error must be
//! 0. Output: one `RESULT bench …` / `RESULT accuracy …` line each.

use clap::Args as ClapArgs;

use crate::Failure;

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Measure the direct backend (kmod-enable-user loaded) instead of perf.
    #[arg(long)]
    direct: bool,
    /// Repetitions N (the loops run N and 2N times).
    #[arg(long, default_value_t = 1000)]
    n: u64,
    /// The measuring event (perf paths): `instructions` (user space only), or `cycles`
    /// for core cycles per operation (`cargo xtask hw-check` on real hardware).
    #[arg(long, default_value = "instructions")]
    measuring: String,
}

pub fn run(args: &Args) -> Result<(), Failure> {
    imp::run(args)
}

#[cfg(not(any(target_arch = "aarch64", target_arch = "x86_64")))]
mod imp {
    use super::*;

    pub fn run(_: &Args) -> Result<(), Failure> {
        Err(Failure::new("read-costs needs x86_64 or aarch64"))
    }
}

#[cfg(any(target_arch = "aarch64", target_arch = "x86_64"))]
mod imp {
    use std::hint::black_box;

    use pmu_linux::measure::MeasureConfig;
    use pmu_linux::measure::{measure, Measurement};
    use pmu_linux::perf::{Options, Session};
    use pmu_linux::pmu_core::{Hazards, RegionMeter};

    use super::*;

    /// Exactly `K` instructions (a closure body of K `nop`s; its `ret` is in the
    /// empty region too).
    #[inline(always)]
    fn block<const K: usize>() {
        // SAFETY: nops only.
        unsafe {
            std::arch::asm!(".rept {k}", "nop", ".endr", k = const K, options(nomem, nostack, preserves_flags));
        }
    }

    /// pmu-linux's `measure` on one backend: the rigs measure several kinds of backend.
    type Measure<'a> =
        dyn FnMut(&MeasureConfig, &mut dyn FnMut()) -> pmu_linux::Result<Measurement> + 'a;

    /// Block `K` measured by `counters` (the closure's body is K nops and its `ret`, the
    /// empty region's is the `ret` alone).
    fn accuracy_k<const K: usize>(path: &str, counters: &mut Measure<'_>, tolerated: Hazards) {
        let config = MeasureConfig {
            warmup: 2,
            runs: 5,
            calibrate: true,
        };
        let k = K as i64;
        match counters(&config, &mut || block::<K>()) {
            Ok(m) => match m.tolerating(0, tolerated).min {
                Some(got) => crate::result!(
                    "accuracy path={path} k={k} measured={got} error={}",
                    got - k
                ),
                None => crate::result!("accuracy path={path} k={k} measured=none error=none"),
            },
            Err(e) => crate::result!(
                "accuracy path={path} k={k} measured=none error=none why={}",
                e.to_string().replace(' ', "_")
            ),
        }
    }

    /// Keeps a page read's outcome as a caller would take it: the value (for the count,
    /// one store, as the libperf harness's `sink = value`) or the reason, not the whole
    /// `Result` (whose tag and unused error fields would be stored too, harness cost
    /// counted as the read's). The group `read()`'s large result stays whole (moving it
    /// out would copy it).
    #[inline(always)]
    fn consume<T, E>(outcome: Result<T, E>) {
        match outcome {
            Ok(value) => {
                black_box(value);
            }
            Err(reason) => {
                black_box(reason);
            }
        }
    }

    /// Measuring-counter difference around `n` repetitions of `op`.
    ///
    /// The loop counts down with an opaque `sub`, so that the compiler gives the loop
    /// of every `op` (and the empty one) the same control, `sub` + `cbnz`; with a plain
    /// `for` it chose an up-count with `add; cmp; b.ne` around some bodies and `subs;
    /// b.ne` around the empty one, an instruction of loop control counted as the
    /// operation's. `op` comes by one `&mut`: through `&mut &mut F` it stayed an
    /// out-of-line call, counted as the operation's too.
    #[inline(never)]
    fn count<M: Fn() -> u64, F: FnMut()>(measuring: &M, n: u64, op: &mut F) -> u64 {
        let mut left = black_box(n);
        let a = measuring();
        while left != 0 {
            op();
            left = opaque_decrement(left);
        }
        let b = measuring();
        b.wrapping_sub(a)
    }

    /// `left - 1`, which the compiler cannot see through.
    #[inline(always)]
    fn opaque_decrement(mut left: u64) -> u64 {
        // SAFETY: register arithmetic only.
        unsafe {
            #[cfg(target_arch = "aarch64")]
            std::arch::asm!("sub {0}, {0}, #1", inout(reg) left, options(nomem, nostack, preserves_flags));
            #[cfg(target_arch = "x86_64")]
            std::arch::asm!("sub {0}, 1", inout(reg) left, options(nomem, nostack));
        }
        left
    }

    /// Single operations measured, the fewest instructions of any.
    const SINGLES: u32 = 64;

    /// Runs of each N and 2N loop, the fewest instructions of each kept: a timer
    /// interrupt inside one region can make the kernel rewrite a page and send that
    /// region down the moved path (about 1000 instructions more in that run, seen in
    /// one of five runs of the 4- and 6-counter regions), which a single run would
    /// spread over the N operations as a fraction.
    const RUNS: u32 = 5;

    /// The fewest instructions of [`RUNS`] runs of [`count`].
    fn count_min<M: Fn() -> u64, F: FnMut()>(measuring: &M, n: u64, op: &mut F) -> u64 {
        (0..RUNS)
            .map(|_| count(measuring, n, op))
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Instructions per `op` (see the module): the minimum over single operations minus
    /// the minimum over empty ones (deterministic even where the measuring counter also
    /// counts the kernel, whose interrupts land in some operations: the `total` of
    /// `read()`), and the mean over N operations, loop and measuring reads subtracted,
    /// each loop the fewest of [`RUNS`] runs (the figure reported for user-only
    /// counts).
    fn per_op<M: Fn() -> u64, F: FnMut()>(measuring: &M, n: u64, mut op: F) -> (f64, f64) {
        // Warm up (page faults, first-touch).
        let mut empty = || black_box(());
        count(measuring, 8, &mut op);
        count(measuring, 8, &mut empty);
        let mut one = u64::MAX;
        let mut none = u64::MAX;
        for _ in 0..SINGLES {
            one = one.min(count(measuring, 1, &mut op));
            none = none.min(count(measuring, 1, &mut empty));
        }
        let c1 = count_min(measuring, n, &mut op);
        let c2 = count_min(measuring, 2 * n, &mut op);
        let e1 = count_min(measuring, n, &mut empty);
        let e2 = count_min(measuring, 2 * n, &mut empty);
        let op_cost = c2 as i128 - c1 as i128;
        let empty = e2 as i128 - e1 as i128;
        (
            one as f64 - none as f64,
            (op_cost - empty) as f64 / n as f64,
        )
    }

    fn bench_line(path: &str, (min, mean): (f64, f64), extra: &str) {
        crate::result!("bench path={path} per_op={mean:.3} single_min={min:.0}{extra}");
    }

    fn accuracy(path: &str, counters: &mut Measure<'_>, tolerated: Hazards) {
        accuracy_k::<1>(path, counters, tolerated);
        accuracy_k::<10>(path, counters, tolerated);
        accuracy_k::<100>(path, counters, tolerated);
        accuracy_k::<1000>(path, counters, tolerated);
        accuracy_k::<10000>(path, counters, tolerated);
    }

    fn measuring_perf(event: &str, exclude_kernel: bool) -> Result<Session, Failure> {
        let s = Session::open(&[event], Options::default().exclude_kernel(exclude_kernel))?;
        s.enable()?;
        // The measuring counter must be read through its page.
        s.read_fast(0)
            .map_err(|r| Failure::new(format!("the measuring counter has no fast read: {r}")))?;
        Ok(s)
    }

    fn read_measuring(s: &Session) -> u64 {
        s.read_fast(0).map(|r| r.value).unwrap_or(0)
    }

    /// The perf group of the measured paths: `k` counters (instructions, cycles, then
    /// more instructions), page reads as `options` say.
    fn measured(k: usize, options: Options) -> Result<Session, Failure> {
        let names: Vec<&str> = (0..k)
            .map(|i| if i == 1 { "cycles" } else { "instructions" })
            .collect();
        let s = Session::open(&names, options)?;
        s.enable()?;
        Ok(s)
    }

    /// The perf region of one counter with the kernel-entry sentinel
    /// (`Options::kernel_sentinel`): one more page read at each edge. Its line says
    /// whether the sentinel was there (`sentinel=counting`), else why not.
    fn perf_region_with_sentinel(
        n: u64,
        m: &impl Fn() -> u64,
        out: &mut [pmu_linux::pmu_core::Reading],
    ) {
        match measured(1, Options::default().kernel_sentinel(true)) {
            Ok(mut s) => {
                let mut failed = false;
                let cost = per_op(m, n, || {
                    failed |= s.start().is_err();
                    failed |= s.stop(out).is_err();
                    black_box(&*out);
                });
                let sentinel = match s.sentinel() {
                    pmu_linux::verdict::Sentinel::Off { why } => {
                        format!("off why={}", why.replace(' ', "_"))
                    }
                    _ => "counting".to_owned(),
                };
                bench_line(
                    "perf-region-1-sentinel",
                    cost,
                    &format!(
                        " counters=1 failed={failed} syscall_free={} sentinel={sentinel}",
                        s.syscall_free()
                    ),
                );
            }
            Err(e) => crate::result!(
                "bench path=perf-region-1-sentinel per_op=none why={}",
                e.message.replace(' ', "_")
            ),
        }
    }

    fn perf(n: u64, measuring: &str) -> Result<(), Failure> {
        let user = measuring_perf(measuring, true)?;
        let m = || read_measuring(&user);

        let fast = measured(1, Options::default())?;
        fast.read_fast(0).map_err(|r| {
            Failure::new(format!(
                "the perf fast path is not available ({r}) (arm64: sysctl kernel.perf_user_access=1)"
            ))
        })?;
        // The count alone (Session::read_count), then the full page read with the times
        // and the lock (Session::read_fast), whose times tell multiplexing.
        bench_line(
            "perf-fast",
            per_op(&m, n, || consume(fast.read_count(0))),
            "",
        );
        bench_line(
            "perf-fast-times",
            per_op(&m, n, || consume(fast.read_fast(0))),
            "",
        );

        let user_part = per_op(&m, n, || {
            let _ = black_box(fast.read_group());
        });
        let total = match measuring_perf(measuring, false) {
            Ok(all) => {
                let ma = || read_measuring(&all);
                let (t, _) = per_op(&ma, n, || {
                    let _ = black_box(fast.read_group());
                });
                format!(" total={t:.0}")
            }
            Err(e) => format!(" total=none why={}", e.message.replace(' ', "_")),
        };
        bench_line("perf-read", user_part, &total);

        // Only the measuring counter stays open: a group of 6 takes the cycle counter and
        // 5 of the 6 event counters of `-cpu max` (PMCR_EL0.N = 6).
        drop(fast);
        let mut out = [pmu_linux::pmu_core::Reading::default(); pmu_linux::Meter::MAX_EVENTS];
        for k in [1usize, 2, 4, 6] {
            match measured(k, Options::default()) {
                Ok(mut s) => {
                    let mut failed = false;
                    let cost = per_op(&m, n, || {
                        failed |= s.start().is_err();
                        failed |= s.stop(&mut out).is_err();
                        black_box(&out);
                    });
                    let fast_all = (0..k).all(|i| s.read_fast(i).is_ok());
                    // Which hazard evidence the regions took, and where their CPU
                    // number came from (the bench table says so).
                    let evidence = if s.syscall_free() {
                        "syscall-free"
                    } else {
                        "getrusage"
                    };
                    let cpu = if s.cpu_from_rseq() {
                        "rseq"
                    } else {
                        "sched_getcpu"
                    };
                    bench_line(
                        &format!("perf-region-{k}"),
                        cost,
                        &format!(
                            " counters={k} failed={failed} fast={fast_all} evidence={evidence} cpu={cpu}"
                        ),
                    );
                }
                Err(e) => crate::result!(
                    "bench path=perf-region-{k} per_op=none why={}",
                    e.message.replace(' ', "_")
                ),
            }
        }

        perf_region_with_sentinel(n, &m, &mut out);

        let mut fast = measured(1, Options::default())?;
        accuracy(
            "perf-fast",
            &mut |c, r| measure(&mut fast, c, r),
            Hazards::empty(),
        );
        drop(fast);
        let mut slow = measured(1, Options::default().user_read(false))?;
        accuracy(
            "perf-read",
            &mut |c, r| measure(&mut slow, c, r),
            Hazards::SYSCALL_FALLBACK | Hazards::NOT_SCHEDULED,
        );
        Ok(())
    }

    #[cfg(not(target_arch = "aarch64"))]
    fn direct(_: u64) -> Result<(), Failure> {
        Err(Failure::new(
            "the direct backend is measured on aarch64 only",
        ))
    }

    #[cfg(target_arch = "aarch64")]
    fn direct(n: u64) -> Result<(), Failure> {
        use pmu_armv8::{PmuOptions, PmuVersion};
        use pmu_linux::direct::allocate;
        use pmu_linux::pmu_core::{CounterPool, PrivilegeFilter};
        let cpu = pmu_linux::machine::current_cpu().map_or(0, |c| c as usize);
        // SAFETY: the bench guest runs nothing else on the PMU: no perf hardware event
        // is open while this runs.
        let (_pin, pmu) = unsafe {
            pmu_linux::direct::armv8::take_armv8(cpu, PmuVersion::PmuV3, PmuOptions::new())
        }?;
        let pool = CounterPool::new(pmu);
        {
            // Counter 0 measures, counter 1 is the measured one.
            let counters = allocate(
                &pool,
                &["instructions", "instructions"],
                PrivilegeFilter::USER,
            )?;
            for c in &counters {
                c.reset();
                c.start();
            }
            let m = || counters[0].read();
            bench_line(
                "direct-read",
                per_op(&m, n, || {
                    black_box(counters[1].read());
                }),
                "",
            );
            let mut out = [pmu_linux::pmu_core::Reading::default(); pmu_linux::Meter::MAX_EVENTS];
            // The direct region without a sentinel: getrusage and sched_getcpu() at
            // both edges.
            let mut meter =
                pmu_linux::direct::pool_region(pool.pmu(), &counters[1..], ["instructions"])?;
            let mut failed = false;
            let cost = per_op(&m, n, || {
                failed |= meter.start().is_err();
                failed |= meter.stop(&mut out).is_err();
                black_box(&out);
            });
            bench_line(
                "direct-region-1",
                cost,
                &format!(" counters=1 failed={failed}"),
            );
            for c in &counters {
                c.stop();
            }
        }
        floor(&pool, n)?;
        let counters = allocate(&pool, &["instructions"], PrivilegeFilter::USER)?;
        counters[0].reset();
        let mut meter =
            pmu_linux::direct::pool_region(pool.pmu(), &counters[..], ["instructions"])?;
        meter.enable()?;
        accuracy(
            "direct",
            &mut |c, r| measure(&mut meter, c, r),
            Hazards::empty(),
        );
        meter.disable()?;
        Ok(())
    }

    /// The direct path at the hardware floor (pmu-armv8 `handle`, pmu-linux
    /// `direct::DirectRegion`): counter 0 measures, counter 1 is the measured one, counter
    /// 2 the kernel-entry sentinel (INST_RETIRED at EL1 and EL2 only), all from the
    /// pool's allocation under EN.
    #[cfg(target_arch = "aarch64")]
    fn floor(
        pool: &pmu_linux::pmu_core::CounterPool<pmu_armv8::El0Pmu>,
        n: u64,
    ) -> Result<(), Failure> {
        use pmu_armv8::handle::{CounterHandle, EventCounterN};
        use pmu_linux::direct::armv8::{Flags, Pmuserenr};
        use pmu_linux::direct::{allocate, DirectRegion, Watching};
        use pmu_linux::pmu_core::{PrivilegeFilter, Slot};
        let counters = allocate(
            pool,
            &["instructions", "instructions"],
            PrivilegeFilter::USER,
        )?;
        let sentinel = pool
            .counter(
                pmu_linux::pmu_core::GenericEvent::Instructions.into(),
                pmu_linux::direct::SENTINEL_FILTER,
            )
            .map_err(pmu_linux::Error::from)?;
        // The compile-time handles below name counters 1 and 2: the pool must have put
        // them there (first free counters, in order).
        let placed = [counters[1].slot(), sentinel.slot()];
        if placed != [Slot::Programmable(1), Slot::Programmable(2)] {
            return Err(Failure::new(format!(
                "the floor bench expects PMEVCNTR1_EL0 and PMEVCNTR2_EL0, got {placed:?}"
            )));
        }
        for c in counters.iter().chain([&sentinel]) {
            c.reset();
            c.start();
        }
        let grant = pool.pmu().registers();
        let handle_error = |e: pmu_armv8::handle::HandleError| Failure::new(e.to_string());
        let fixed = EventCounterN::<1>::new(grant).map_err(handle_error)?;
        let chosen = CounterHandle::from_number(grant, black_box(1)).map_err(handle_error)?;
        let m = || counters[0].read();
        bench_line(
            "direct-read-const",
            per_op(&m, n, || {
                black_box(fixed.read());
            }),
            "",
        );
        bench_line(
            "direct-read-runtime",
            per_op(&m, n, || {
                black_box(chosen.read());
            }),
            "",
        );

        let mut out = [pmu_linux::pmu_core::Reading::default(); pmu_linux::Meter::MAX_EVENTS];
        let sentinel_state = pmu_linux::verdict::Sentinel::Counting {
            event: "instructions".into(),
            how: "PMEVCNTR2_EL0, EL1 and EL2 only".into(),
        };
        {
            let mut region = DirectRegion::new(
                &counters[1..2],
                Pmuserenr,
                [fixed],
                vec!["instructions".into()],
                Watching(EventCounterN::<2>::new(grant).map_err(handle_error)?),
                sentinel_state.clone(),
                Flags::with_en(grant),
            )?;
            let mut failed = false;
            let cost = per_op(&m, n, || {
                failed |= region.start().is_err();
                failed |= region.stop(&mut out).is_err();
                black_box(&out);
            });
            let cpu = if region.evidence().cpu_from_rseq {
                "rseq"
            } else {
                "sched_getcpu"
            };
            bench_line(
                "direct-region-syscall-free-1",
                cost,
                &format!(" counters=1 failed={failed} handles=compile-time sentinel=yes cpu={cpu}"),
            );
            accuracy(
                "direct-syscall-free",
                &mut |c, r| measure(&mut region, c, r),
                Hazards::empty(),
            );
        }
        {
            let mut region = DirectRegion::new(
                &counters[1..2],
                Pmuserenr,
                [chosen],
                vec!["instructions".into()],
                Watching(CounterHandle::from_number(grant, black_box(2)).map_err(handle_error)?),
                sentinel_state,
                Flags::with_en(grant),
            )?;
            let mut failed = false;
            let cost = per_op(&m, n, || {
                failed |= region.start().is_err();
                failed |= region.stop(&mut out).is_err();
                black_box(&out);
            });
            bench_line(
                "direct-region-syscall-free-runtime-1",
                cost,
                &format!(" counters=1 failed={failed} handles=run-time sentinel=yes"),
            );
        }
        for c in counters.iter().chain([&sentinel]) {
            c.stop();
        }
        Ok(())
    }

    pub fn run(args: &Args) -> Result<(), Failure> {
        let n = args.n.max(1);
        if args.direct {
            direct(n)
        } else {
            perf(n, &args.measuring)
        }
    }
}
