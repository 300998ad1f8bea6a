//! The shared shim through a fake flavour: no registers, a loading CPU with 6 event
//! counters and a PMU version set per test. Expected errnos: include/uapi/asm-generic
//! errno-base.h and errno.h; expected fields and sentences: the C contract in
//! kmod_enable_user_stock.h and the refusal sentences of this module; layout texts:
//! `pmu_armv8::user_enable::Layout::write_text` (event i on counter N-1-i).

use super::*;
use core::cell::Cell;
use core::ptr::{null, null_mut};

std::thread_local! {
    /// The fake loading CPU's PMU version.
    static VERSION: Cell<u8> = const { Cell::new(4) };
}

enum Fake {}

/// The fake per-CPU struct: the shared part, what the next `apply` returns, and how
/// often `restore` ran.
#[derive(Default)]
struct FakeCpu {
    grant: CpuGrant<u64>,
    outcome: Option<Refused<u64>>,
    restores: u32,
}

impl Flavour for Fake {
    type Word = u64;
    type Parameters = ();
    type ConfigTail = [u8; 3];
    type Cpu = FakeCpu;
    type LoadingCpu = u8;
    type Request = Layout;

    const EVENT_ABOVE_16_BITS: &'static CStr = c"fake: above 0xffff";

    unsafe fn loading_cpu() -> (u8, u8) {
        (6, VERSION.get())
    }

    fn check_user_access(bits: u32, el0_programming: bool) -> Result<(), UserAccessFault> {
        match (bits, el0_programming) {
            (0, false) => Err(UserAccessFault::Empty),
            (1, _) => Err(UserAccessFault::WriteAccessNeedsOptIn),
            (16.., _) => Err(UserAccessFault::UnknownBits),
            _ => Ok(()),
        }
    }

    fn check(
        counters: &u8,
        parameters: &Parameters<()>,
        events: ModuleEvents,
    ) -> Result<(Layout, [u8; 3]), Refusal> {
        Layout::new(*counters, events, parameters.cycle_counter)
            .map(|layout| (layout, [7, 7, 7]))
            .map_err(|_| Refusal::no_device(c"fake: too few counters"))
    }

    fn request(config: &Config<[u8; 3]>) -> Option<Layout> {
        Layout::new(
            config.event_counters,
            config.module_events()?,
            config.cycle_counter,
        )
        .ok()
    }

    fn grant(cpu: &mut FakeCpu) -> &mut CpuGrant<u64> {
        &mut cpu.grant
    }

    unsafe fn apply(cpu: &mut FakeCpu, request: Layout) -> Result<(), Refused<u64>> {
        if let Some(refused) = cpu.outcome {
            return Err(refused);
        }
        cpu.grant.owned = request.mask();
        cpu.grant.new_userenr = 0b1100;
        Ok(())
    }

    unsafe fn restore(cpu: &mut FakeCpu, request: &Layout) {
        cpu.restores += 1;
        cpu.grant.released = request.mask();
        cpu.grant.new_userenr = 0;
    }
}

fn parameters(user_access: u32) -> Parameters<()> {
    Parameters {
        user_access,
        el0_programming: false,
        cycle_counter: false,
        flavour: (),
    }
}

/// `configure` of the fake flavour: (return value, `why`, config, layout text).
fn configure_fake(
    user_access: u32,
    events: &CStr,
) -> (i32, &'static CStr, Config<[u8; 3]>, String) {
    let mut config = Config::<[u8; 3]>::default();
    let mut why: *const c_char = c"unset".as_ptr();
    let mut layout = [0x55 as c_char; 97];
    // SAFETY: valid pointers; the fake reads no register.
    let ret = unsafe {
        configure::<Fake>(
            &mut config,
            parameters(user_access),
            events.as_ptr(),
            layout.as_mut_ptr(),
            layout.len(),
            &mut why,
        )
    };
    // SAFETY: `configure` leaves a static sentence in `why`, and `layout` terminated or
    // untouched (then its first byte is 0x55 and the text below is not read).
    let why = unsafe { CStr::from_ptr(why) };
    let text = if layout[0] == 0x55 {
        String::from("(untouched)")
    } else {
        // SAFETY: NUL-terminated by `configure`.
        unsafe { CStr::from_ptr(layout.as_ptr()) }
            .to_str()
            .unwrap()
            .to_owned()
    };
    (ret, why, config, text)
}

/// Accepted: 0, `why` empty, the config filled from the parameters and the loading
/// CPU, the layout's text written: events 0x8 and 0x3 on counters 5 and 4 of 6.
#[test]
fn configure_fills_the_config_and_the_layout() {
    VERSION.set(4);
    let (ret, why, config, text) = configure_fake(0b1100, c"0x8,0x3");
    assert_eq!((ret, why), (0, c""));
    assert_eq!(text, "5=0x8 4=0x3");
    assert_eq!(config.user_access, 0b1100);
    assert_eq!(config.events, [8, 3, 0, 0, 0, 0]);
    assert_eq!((config.n_events, config.event_counters), (2, 6));
    assert_eq!((config.pmu_version, config.tail), (4, [7, 7, 7]));
    assert!(!config.cycle_counter && !config.el0_programming);
}

/// Refused: the errno and the sentence, the layout untouched, and of the config only
/// the PMU version written (the glue logs it with every refusal).
#[test]
fn configure_refuses_with_a_sentence() {
    VERSION.set(3);
    let cases: [(u32, &CStr, i32, &CStr); 8] = [
        (0, c"0x8", -22, c"user_access=0 grants nothing"),
        (1, c"0x8", -22, c"user_access may hold SW=2, CR=4, ER=8 only: write access (EN=1) is granted by el0_programming=1 alone"),
        (16, c"0x8", -22, c"user_access has bits outside SW=2|CR=4|ER=8"),
        (8, c"1,2,3,4,5,6,7", -22, c"events: at most 6 event numbers"),
        (8, c"0x10000", -22, c"fake: above 0xffff"),
        (8, c"0x8,8", -22, c"events: an event named twice"),
        (8, c"eight", -22, c"events: a comma-separated list of event numbers, decimal or 0x-hex, e.g. 0x8,0x3"),
        (8, c"123456789012345678901234567890123456789012", -22, c"events: longer than a list of 6 event numbers can be"),
    ];
    for (user_access, events, errno, sentence) in cases {
        let (ret, why, config, text) = configure_fake(user_access, events);
        assert_eq!((ret, why), (errno, sentence), "{user_access} {events:?}");
        assert_eq!(text, "(untouched)");
        assert_eq!(config.pmu_version, 3);
        assert_eq!((config.user_access, config.n_events), (0, 0));
    }
}

/// The order of the checks: `user_access` before `events`, the shared checks before
/// the flavour's (6 events fit 6 counters, but not with the cycle counter: that is the
/// flavour's refusal, reached only when everything before passed).
#[test]
fn configure_checks_in_order() {
    let (ret, why, ..) = configure_fake(0, c"123456789012345678901234567890123456789012");
    assert_eq!((ret, why), (-22, c"user_access=0 grants nothing"));
    let mut config = Config::<[u8; 3]>::default();
    let mut why: *const c_char = null();
    let mut too_many = parameters(8);
    too_many.cycle_counter = true;
    // SAFETY: valid pointers, no layout buffer.
    let ret = unsafe {
        configure::<Fake>(
            &mut config,
            too_many,
            c"1,2,3,4,5,6".as_ptr(),
            null_mut(),
            0,
            &mut why,
        )
    };
    assert_eq!(ret, -19);
    // SAFETY: a static sentence.
    assert_eq!(unsafe { CStr::from_ptr(why) }, c"fake: too few counters");
}

/// Null `config` or `why`: `-EINVAL`, nothing written. Null `events`: no events.
#[test]
fn configure_null_pointers() {
    let mut config = Config::<[u8; 3]>::default();
    let mut why: *const c_char = null();
    // SAFETY: null is allowed for each pointer; the fake reads no register.
    let refused = unsafe {
        [
            configure::<Fake>(null_mut(), parameters(8), null(), null_mut(), 0, &mut why),
            configure::<Fake>(
                &mut config,
                parameters(8),
                null(),
                null_mut(),
                0,
                null_mut(),
            ),
        ]
    };
    assert_eq!(refused, [-22, -22]);
    assert!(why.is_null());
    assert_eq!((config.user_access, config.pmu_version), (0, 0));
    VERSION.set(4);
    // SAFETY: as above.
    let ret =
        unsafe { configure::<Fake>(&mut config, parameters(8), null(), null_mut(), 0, &mut why) };
    assert_eq!(ret, 0);
    // SAFETY: a static sentence.
    assert_eq!(unsafe { CStr::from_ptr(why) }, c"");
    assert_eq!((config.user_access, config.n_events), (8, 0));
}

fn accepted_config() -> Config<[u8; 3]> {
    let (ret, _, config, _) = configure_fake(0b1100, c"0x8,0x3");
    assert_eq!(ret, 0);
    config
}

/// A grant: `error` 0, `applied` set, the flavour's record kept (owned: counters 5
/// and 4).
#[test]
fn apply_then_restore() {
    let config = accepted_config();
    let mut cpu = FakeCpu::default();
    cpu.grant.error = -16;
    // SAFETY: valid pointers; the fake touches no register.
    unsafe { apply::<Fake>(&mut cpu, &config) };
    assert_eq!((cpu.grant.error, cpu.grant.applied), (0, true));
    assert_eq!(cpu.grant.owned, 0b11_0000);
    // SAFETY: as above.
    unsafe { restore::<Fake>(&mut cpu, &config) };
    assert_eq!((cpu.restores, cpu.grant.applied), (1, false));
    assert_eq!((cpu.grant.released, cpu.grant.new_userenr), (0b11_0000, 0));
    // Nothing granted any more: a second restore does nothing.
    // SAFETY: as above.
    unsafe { restore::<Fake>(&mut cpu, &config) };
    assert_eq!(cpu.restores, 1);
}

/// Each refusal's `error` and `error_detail` (kmod_enable_user_stock.h: "the counter,
/// the event, or PMCR.N"), `busy_config` and the PMU version where the refusal names
/// them; `applied` stays as it was (a failed re-grant leaves the grant to restore).
#[test]
fn apply_refusals_map_to_errnos() {
    let config = accepted_config();
    let cases: [(Refused<u64>, i32, u32); 7] = [
        (Refused::NoUsablePmu { pmu_version: 1 }, -19, 0),
        (Refused::NoReadOnlyGrant { pmu_version: 2 }, -95, u32::MAX),
        (Refused::TooFewCounters { have: 2 }, -19, 2),
        (
            Refused::CounterInUse {
                counter: 5,
                config: 0x8000_0008,
            },
            -16,
            5,
        ),
        (Refused::EventNotImplemented { event: 0x3 }, -95, 3),
        (Refused::EventOutOfRange { event: 0x400 }, -22, 0x400),
        (Refused::Other, -22, 0),
    ];
    for applied_before in [false, true] {
        for &(refused, errno, detail) in &cases {
            let mut cpu = FakeCpu {
                outcome: Some(refused),
                ..Default::default()
            };
            cpu.grant.applied = applied_before;
            cpu.grant.pmu_version = 9;
            // SAFETY: valid pointers; the fake touches no register.
            unsafe { apply::<Fake>(&mut cpu, &config) };
            let g = cpu.grant;
            assert_eq!((g.error, g.error_detail), (errno, detail), "{refused:?}");
            assert_eq!(g.applied, applied_before, "{refused:?}");
            let version = match refused {
                Refused::NoUsablePmu { pmu_version } => pmu_version,
                Refused::NoReadOnlyGrant { pmu_version } => pmu_version,
                _ => 9,
            };
            assert_eq!(g.pmu_version, version, "{refused:?}");
            let busy = match refused {
                Refused::CounterInUse { config, .. } => config,
                _ => 0,
            };
            assert_eq!(g.busy_config, busy, "{refused:?}");
        }
    }
}

/// A config `configure` did not accept (an event twice): `-EINVAL`, no grant, and a
/// restore does nothing. Null pointers: nothing happens.
#[test]
fn apply_refuses_a_config_it_cannot_use() {
    let mut config = accepted_config();
    config.events[1] = 8;
    let mut cpu = FakeCpu::default();
    // SAFETY: valid pointers; the fake touches no register.
    unsafe { apply::<Fake>(&mut cpu, &config) };
    assert_eq!((cpu.grant.error, cpu.grant.applied), (-22, false));
    cpu.grant.applied = true;
    // SAFETY: as above.
    unsafe { restore::<Fake>(&mut cpu, &config) };
    assert_eq!((cpu.restores, cpu.grant.applied), (0, true));
    // SAFETY: null is allowed.
    unsafe {
        apply::<Fake>(null_mut(), &config);
        apply::<Fake>(&mut cpu, null());
        restore::<Fake>(null_mut(), &config);
        restore::<Fake>(&mut cpu, null());
    }
    assert_eq!((cpu.grant.error, cpu.restores), (-22, 0));
}
